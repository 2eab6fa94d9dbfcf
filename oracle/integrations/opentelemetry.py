"""OpenTelemetry tracing of evaluations, scoped to a block of code (extra ``otel``).

    from oracle.integrations.opentelemetry import use_tracer_provider
    with use_tracer_provider(provider):     # evaluations in this block trace to ``provider``
        Oracle().evaluate(task)
    with use_tracer_provider(None):         # and here not at all
        ...

Without it, evaluations trace to the global tracer provider once the application sets one
(``opentelemetry.trace.set_tracer_provider``); this scopes one to a context instead (tests, or one
Oracle among several) without touching the global one. The spans and events are listed in the
README ("OpenTelemetry tracing"). Importing this module imports no OpenTelemetry: the tracing code is
private (``oracle._telemetry``) and this is its one public handle.
"""

from oracle._telemetry import use_tracer_provider

__all__ = ["use_tracer_provider"]
