"""Scores, pass rule and ranking of verifier candidates.

score = weighted share of the scored tests
passed (equal shares when every weight is 0); passed = every scored test passed. Scored: every
outcome but a ``broken`` test (the task's fault, scored for nobody) and a ``neutral`` skip (skipped
the same way on the reference solution; broken.py decides both). Only ``pass`` and ``xpassed`` count
as passed: a skip, an xfail, an error never do. A candidate with a test that has no verdict through
our fault (``our_fault``) is unscored (score and passed None): we cannot say, and a 0 would charge
it with our failure; so is one with an ``undecided`` test (neither its fault nor the test's can be
shown), and one left with no scored test. Candidates are ranked by score, then by passing
everything; equal candidates are a tie, reported as such in ``ties`` and broken by input order, so
the same input always ranks the same.
"""

from __future__ import annotations

from typing import Sequence

from oracle.results.result import CandidateResult
from oracle.strategies.verifier.harness import TestOutcome


PASSED = frozenset({"pass", "xpassed"})


def scored(outcomes: Sequence[TestOutcome]) -> list[TestOutcome]:
    """The outcomes a score is computed over: not broken, not a neutral skip."""
    return [o for o in outcomes if o.outcome != "broken" and not o.neutral]


def score_tests(outcomes: Sequence[TestOutcome]) -> tuple[float | None, bool | None]:
    if not outcomes:
        return 0.0, False
    if any(o.our_fault or o.undecided for o in outcomes):
        return None, None
    counted = scored(outcomes)
    if not counted:
        return None, None
    total = sum(o.weight for o in counted)
    if total > 0:
        score = sum(o.weight for o in counted if o.outcome in PASSED) / total
    else:
        score = sum(o.outcome in PASSED for o in counted) / len(counted)
    return score, all(o.outcome in PASSED for o in counted)


def passing_best(best: list[str], candidates: Sequence[CandidateResult]) -> list[str]:
    """``best`` only when it passed: a verifier never names a best among candidates that all failed."""
    passed = {c.id for c in candidates if c.passed}
    return [b for b in best if b in passed]


def rank(candidates: Sequence[CandidateResult]) -> tuple[list[str], list[str], list[list[str]]]:
    """(best ids, ranking, tied groups); unscored candidates are left out of all three."""
    indexed = [(i, c) for i, c in enumerate(candidates) if c.score is not None]
    key = lambda ic: (-round(ic[1].score or 0.0, 9), not bool(ic[1].passed), ic[0])  # noqa: E731
    ordered = sorted(indexed, key=key)
    groups: list[list[str]] = []
    last = None
    for i, c in ordered:
        k = key((i, c))[:2]
        if k != last:
            groups.append([])
            last = k
        groups[-1].append(c.id)
    ranking = [c.id for _, c in ordered]
    best = groups[0] if groups else []
    return best, ranking, [g for g in groups if len(g) > 1]
