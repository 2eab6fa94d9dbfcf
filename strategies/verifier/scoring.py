"""Scores, pass rule and ranking of verifier candidates.

score = weighted share of tests passed (equal shares when every weight is 0); passed = every test
passed. A candidate with a test that has no verdict through our fault (``our_fault``) is unscored
(score and passed None): we cannot say, and a 0 would charge it with our failure. Candidates are ranked by score, then
by passing everything; equal candidates are a tie,
reported as such in ``ties`` and broken by input order, so the same input always ranks the same.
"""

from __future__ import annotations

from typing import Sequence

from oracle.results.result import CandidateResult
from oracle.strategies.verifier.harness import TestOutcome


def score_tests(outcomes: Sequence[TestOutcome]) -> tuple[float | None, bool | None]:
    if not outcomes:
        return 0.0, False
    if any(o.our_fault for o in outcomes):
        return None, None
    total = sum(o.weight for o in outcomes)
    if total > 0:
        score = sum(o.weight for o in outcomes if o.outcome == "pass") / total
    else:
        score = sum(o.outcome == "pass" for o in outcomes) / len(outcomes)
    return score, all(o.outcome == "pass" for o in outcomes)


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
