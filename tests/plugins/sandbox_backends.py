"""Which sandbox backend a test runs on, decided when the test runs, never when it is collected.

Probing the backends starts processes (``true`` in nsjail and in bubblewrap), so a module that
listed the available ones at import made collecting the suite spawn them, and its test ids depend
on the machine. Instead a test is parametrized over every containment backend's name and asks for
the ``backend`` fixture::

    @on_each_backend
    def test_x(backend): ...              # test_x[nsjail], test_x[bubblewrap], test_x[landlock]

    def test_y():
        run(strongest_backend(), ...)     # the strongest containment backend this machine has

A backend this machine lacks is skipped with the prober's reason, except under ``CI=true`` for a
backend CI installs (nsjail from the ``sandbox`` extra, bubblewrap from apt): there it fails, since
CI must never hide a sandbox that did not run. Landlock comes with the kernel, not with CI's
installs, so a kernel without it skips its runs even in CI.
"""

from __future__ import annotations

import pytest

from tests.profiles import in_ci

CONTAINMENT_BACKENDS = ("nsjail", "bubblewrap", "landlock")
"""Strongest first; rlimits alone is not containment (it is refused by default)."""
NAMESPACE_BACKENDS = ("nsjail", "bubblewrap")
CI_INSTALLS = frozenset({"nsjail", "bubblewrap"})


def _missing(name: str, why: str) -> None:
    if in_ci() and name in CI_INSTALLS:
        pytest.fail(f"sandbox backend {name} is required in CI but unavailable: {why}")
    pytest.skip(f"sandbox backend {name} unavailable here: {why}")


def use_backend(name: str) -> str:
    """``name`` if this machine can run it; else skip, or fail in CI (see the module docstring)."""
    from oracle.sandbox import probe

    if name not in CONTAINMENT_BACKENDS:
        raise ValueError(f"use_backend: {name!r} is not one of {CONTAINMENT_BACKENDS}")
    layers = probe()
    if name not in layers.available:
        _missing(name, layers.missing.get(name, "not found"))
    return name


def strongest_backend() -> str:
    """The strongest containment backend available here; with none, skip (fail in CI)."""
    from oracle.sandbox import probe

    layers = probe()
    for name in CONTAINMENT_BACKENDS:
        if name in layers.available:
            return name
    if in_ci():
        pytest.fail(f"no containment backend in CI: {layers.missing}")
    pytest.skip(f"no containment backend here: {layers.missing}")


@pytest.fixture(scope="module")
def backend(request) -> str:
    """The backend named by the test's indirect parametrization (``on_each_backend``), once checked.

    Module scope: a Hypothesis test may take it (a function-scoped fixture would not be reset
    between examples, which Hypothesis refuses), and the check is the same for the whole module.
    """
    name = getattr(request, "param", None)
    if name is None:
        raise pytest.UsageError("the backend fixture needs a name: decorate the test with @on_each_backend "
                                "(or parametrize 'backend' with indirect=True)")
    return use_backend(name)


on_each_backend = pytest.mark.parametrize("backend", CONTAINMENT_BACKENDS, indirect=True)
on_each_namespace_backend = pytest.mark.parametrize("backend", NAMESPACE_BACKENDS, indirect=True)
