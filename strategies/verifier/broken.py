"""Which tests are broken (the task's fault), and what a skip means, decided over every candidate's
runs and the reference solution's. Pure: outcomes in, adjusted outcomes out.

The unit is one scored outcome: a test, or one case of a suite (``harness.flatten``), keyed by its
node id or name. A run that produced no cases for a suite (it failed as a whole) stands for every
case seen in the other runs. Per unit:

- with the reference solution's outcome: ``fail``/``error``/``broken`` there makes the unit broken
  ("fails on the reference solution"); a skip or xfail there makes the same outcome neutral for a
  candidate (not scored); a pass there leaves the candidates' outcomes as they are (a skip is then
  never a pass). A reference run that timed out or had no verdict through our fault says nothing;
- without one: the unit is broken when it is ``broken`` in some run and every other run says
  nothing about it either (the run ended before the test's code ran, timed out, or had no verdict
  through our fault). Once any run got past the point where the test broke, the test is not broken:
  its ``broken`` runs count as ``error`` for those candidates, so no candidate can have a test
  excluded by what its own run shows. A ``broken`` found after the candidate could have steered the
  test there (``after_answers``: a value the test could not hand it, met after the candidate's answers
  or a read of a plain value it exported) shows nothing alone, however many runs agree (several
  candidates of one author can agree): when every run that says anything is such a ``broken``, the
  unit is ``undecided`` for each of them (unscored, never passed, never a 0), reported in
  ``broken_tests`` with what would decide it (a reference solution). A unit that every run skipped
  (or xfailed) was not run: broken, unless some candidate's run gave it a verdict (then a skip is never a pass);
- a broken unit is ``broken`` for every candidate, with the reason, and scored for nobody; it is
  reported once in ``broken_tests``. Outcomes of runs that changed their worker (``tampering``) or
  had no verdict through our fault are kept as they are: they carry their own consequences.

Only ``pass`` and ``xpassed`` ever count as passed (scoring.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from oracle.strategies.verifier.harness import TestOutcome

NO_VERDICT = frozenset({"skipped", "xfailed"})
"""Outcomes of a test that ran no check on the candidate."""
SILENT = frozenset({"timeout"})
"""Outcomes that say nothing about whether the test itself is broken."""


@dataclass(frozen=True)
class BrokenTest:
    """One broken unit: its name (a test's, or a suite case's) and why."""

    test: str
    reason: str
    index: int
    """The test's position in ``task.tests``."""


@dataclass
class Decision:
    """The adjusted outcomes of every candidate, per test index (flattened), and the broken units."""

    outcomes: dict[str, dict[int, list[TestOutcome]]] = field(default_factory=dict)
    broken: list[BrokenTest] = field(default_factory=list)
    units: int = 0
    """How many units there are over all tests (broken ones included)."""

    def flat(self, cid: str) -> list[TestOutcome]:
        """One candidate's outcomes in test order."""
        per_test = self.outcomes.get(cid, {})
        return [o for i in sorted(per_test) for o in per_test[i]]

    @property
    def all_broken(self) -> bool:
        return self.units > 0 and len(self.broken) == self.units


def unit_key(outcome: TestOutcome) -> str:
    return outcome.node_id or outcome.name


def _expand(outcome: TestOutcome, keys: Sequence[str], shapes: Mapping[str, TestOutcome]) -> dict[str, TestOutcome]:
    """A run's outcome per unit key: its cases, or (a run with no cases) itself under every key."""
    if outcome.cases:
        return {unit_key(o): o for o in outcome.cases}
    return {key: dataclasses.replace(outcome, name=shapes[key].name, node_id=shapes[key].node_id,
                                     weight=shapes[key].weight) for key in keys}


def _keep(outcome: TestOutcome) -> bool:
    """Outcomes never rewritten: they carry a consequence of their own (unscored, tampering)."""
    return outcome.our_fault or bool(outcome.tampering)


def _says_nothing(outcome: TestOutcome) -> bool:
    return outcome.before_test or outcome.outcome in SILENT or outcome.our_fault or bool(outcome.tampering)


def _reference_verdict(ref: TestOutcome | None) -> str | None:
    """The reference's word on a unit: 'valid', 'broken: <reason>', 'neutral', or None (nothing)."""
    if ref is None or ref.our_fault or ref.tampering or ref.before_test or ref.outcome in SILENT:
        return None
    if ref.outcome in ("pass", "xpassed"):
        return "valid"
    if ref.outcome in NO_VERDICT:
        return "neutral"
    if ref.outcome == "broken":
        return f"broken: {ref.message}"
    verb = "fails" if ref.outcome == "fail" else "errors"
    return f"broken: {verb} on the reference solution: {ref.message}"


def _no_reference_reason(runs: Mapping[str, TestOutcome]) -> str | None:
    """Why a unit is broken judging by the candidates' runs alone, or None."""
    broken = [o for o in runs.values() if o.outcome == "broken"]
    if broken and all(o.outcome == "broken" or _says_nothing(o) for o in runs.values()):
        shown = [o for o in broken if not o.after_answers]
        if not shown:
            return None  # every one may have been steered there: undecided (_undecided), never excluded
        return shown[0].message
    told = [o for o in runs.values() if not _says_nothing(o)]
    if told and all(o.outcome in NO_VERDICT for o in told):
        words = sorted({o.outcome for o in told})
        return (f"was not run: {' or '.join(words)} for every candidate, and no reference solution shows that is "
                f"expected ({told[0].message})")
    return None


def _undecided(runs: Mapping[str, TestOutcome]) -> str | None:
    """Why a unit can be judged for no candidate: every run that says anything met a value the test
    could not hand over, each after the candidate could have steered it there; or None."""
    broken = [o for o in runs.values() if o.outcome == "broken"]
    if broken and all(o.after_answers for o in broken) and all(
            o.outcome == "broken" or _says_nothing(o) for o in runs.values()):
        return (f"undecided: {broken[0].message}; met after the candidate's answers in every run, so whether "
                "the test or the candidate led there cannot be told without a reference solution "
                "(task.solution), which would decide it; or hand over plain data")
    return None


def decide(runs: Mapping[str, Mapping[int, TestOutcome]],
           reference: Mapping[int, TestOutcome] | None = None) -> Decision:
    """Adjust every candidate's outcomes (``runs``: candidate id -> test index -> its run's outcome,
    one entry for every test, also those that did not run) by the rules of the module docstring."""
    decision = Decision(outcomes={cid: {} for cid in runs})
    indices = sorted({i for per in runs.values() for i in per} | set(reference or {}))
    for i in indices:
        seen = [per[i] for per in runs.values() if i in per]
        ref_run = (reference or {}).get(i)
        shapes: dict[str, TestOutcome] = {}
        for outcome in ([ref_run] if ref_run is not None else []) + seen:
            if outcome.cases:
                for case in outcome.cases:
                    shapes.setdefault(unit_key(case), case)
        if not shapes:  # no run has cases: the test itself is the one unit
            first = ref_run if ref_run is not None else seen[0]
            shapes[unit_key(first)] = first
        keys = list(shapes)
        expanded = {cid: _expand(per[i], keys, shapes) for cid, per in runs.items() if i in per}
        ref_units = _expand(ref_run, keys, shapes) if ref_run is not None else {}
        for key in keys:
            decision.units += 1
            unit_runs = {cid: units[key] for cid, units in expanded.items() if key in units}
            verdict = _reference_verdict(ref_units.get(key))
            reason = verdict[len("broken: "):] if verdict and verdict.startswith("broken: ") else \
                _no_reference_reason(unit_runs) if verdict is None else None
            undecided = _undecided(unit_runs) if verdict is None and reason is None else None
            if reason is not None or undecided is not None:
                decision.broken.append(BrokenTest(test=shapes[key].name, reason=reason or str(undecided), index=i))
            for cid, units in expanded.items():
                own = units.get(key)
                if own is None:
                    own = dataclasses.replace(shapes[key], outcome="error", cases=(), before_test=False,
                                              message="not run in this candidate's run (it ran in others')",
                                              our_fault=False, tampering=(), reruns=(), neutral=False)
                if _keep(own):
                    pass
                elif reason is not None:
                    own = dataclasses.replace(own, outcome="broken", message=reason, neutral=False)
                elif undecided is not None and own.outcome == "broken":
                    own = dataclasses.replace(own, outcome="error", message=undecided, undecided=True)
                elif own.outcome == "broken" and own.after_answers:
                    own = dataclasses.replace(own, outcome="error", message=(
                        f"{own.message} (after this candidate could have led the test there, while another run "
                        "or the reference solution got past it)"))
                elif own.outcome == "broken":
                    own = dataclasses.replace(own, outcome="error",
                                              message=f"broken in this candidate's run only: {own.message}")
                elif verdict == "neutral" and own.outcome == ref_units[key].outcome:
                    own = dataclasses.replace(own, neutral=True)
                decision.outcomes[cid].setdefault(i, []).append(own)
    return decision
