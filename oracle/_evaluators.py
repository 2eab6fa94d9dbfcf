"""The evaluators an Oracle can run, by name: the three built-ins, those registered in code with
``register_evaluator``, and third-party ones from the ``oracle_router.evaluators`` entry points.

They are assembled here, in the Oracle's layer, rather than registered by the evaluators as a side
effect of importing them: ``oracle.strategies`` defines evaluators and knows no registry, so the
protocol, this table and the built-ins import each other in one direction only. The built-ins are
imported directly (a rename fails here and in mypy, never silently) and only when an evaluator is
asked for, so routing pays nothing for them; the entry points are scanned only for a name neither
a built-in nor a registration has.
"""

from __future__ import annotations

from typing import Any, Callable

from oracle._internal.moved import renamed
from oracle.errors import PluginError
from oracle.strategies.protocol import EvaluationContext, Evaluator, needs_providers
from oracle.tasks.task import EVALUATORS

__all__ = ["EvaluatorFactory", "evaluator_factory", "register_evaluator", "registered_evaluators",
           # the old ``oracle.strategy`` module's names (that path now imports this module)
           "EvaluationContext", "Evaluator", "needs_providers"]

EvaluatorFactory = Callable[[], Evaluator]
"""Makes an evaluator; it takes no settings (each evaluation's context carries the config)."""

_REGISTERED: dict[str, EvaluatorFactory] = {}


def register_evaluator(name: str) -> Callable[[EvaluatorFactory], EvaluatorFactory]:
    """Register a factory ``() -> Evaluator`` under ``name`` (a decorator), for
    ``Oracle.run_evaluator(item, route, name)``.

    A built-in's name is refused (``PluginError``): the built-ins are what routing picks, and a
    result names the evaluator that produced it. Registering a name again replaces the factory (a
    module reloaded in a notebook re-registers its evaluator)."""
    if not isinstance(name, str) or not name.strip():
        raise PluginError(f"register_evaluator: the name must be a non-empty string, got {name!r}",
                          plugin=str(name))
    if name in EVALUATORS:
        raise PluginError(f"register_evaluator: {name!r} is a built-in evaluator's name", plugin=name)

    def deco(factory: EvaluatorFactory) -> EvaluatorFactory:
        if not callable(factory):
            raise PluginError(f"register_evaluator({name!r}): {factory!r} is not a factory () -> Evaluator",
                              plugin=name)
        _REGISTERED[name] = factory
        return factory

    return deco


def evaluator_factory(name: str) -> EvaluatorFactory | None:
    """The factory for ``name``: a built-in, a registered one, or else an installed plugin's
    (a plugin that fails to load or clashes with a name raises ``PluginError``); None when no
    evaluator has this name."""
    builtin = _builtins().get(name)
    if builtin is not None:
        return builtin
    if name in _REGISTERED:
        return _REGISTERED[name]
    return _plugins().get(name)


def registered_evaluators() -> list[str]:
    """Every evaluator name: the built-ins, the registered ones and the installed plugins."""
    return sorted({*EVALUATORS, *_REGISTERED, *_plugins()})


def _builtins() -> dict[str, EvaluatorFactory]:
    from oracle.strategies.decision_judge.strategy import DecisionJudge
    from oracle.strategies.llm_judge.strategy import LLMJudge
    from oracle.strategies.verifier.strategy import VerifierStrategy

    return {"decision_judge": DecisionJudge, "llm_judge": LLMJudge, "verifier": VerifierStrategy}


def _plugins() -> dict[str, EvaluatorFactory]:
    from oracle._internal.plugins import EVALUATORS as GROUP
    from oracle._internal.plugins import clash, load_group

    found = load_group(GROUP)
    for name, factory in found.items():
        if name in EVALUATORS:
            raise clash(GROUP, name, "evaluator")
        if name in _REGISTERED:
            raise PluginError(f"{GROUP} plugin {name!r}: an evaluator registered in code (register_evaluator) "
                              "already has this name", plugin=name)
        if not callable(factory):
            raise PluginError(f"{GROUP} plugin {name!r}: {factory!r} is not a factory () -> Evaluator",
                              plugin=name)
    return found


_OLD_NAMES = {"Strategy": "Evaluator", "StrategyFactory": "EvaluatorFactory",
              "register_strategy": "register_evaluator", "strategy_factory": "evaluator_factory",
              "registered_strategies": "registered_evaluators"}
"""The registry's names before the evaluators had one word (``oracle.strategy`` had them all)."""


def __getattr__(name: str) -> Any:
    new = _OLD_NAMES.get(name)
    if new is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    public = {"Evaluator": "oracle.Evaluator", "register_evaluator": "oracle.register_evaluator"}
    renamed(name, public.get(new, new))
    return globals()[new]
