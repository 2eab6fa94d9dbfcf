"""The LLM judge's concerns, built once from its own results as typed values for escalation.

Why here: only the judge knows which of its details say "these two flipped with the seats
swapped" or "these verdicts form a cycle"; escalation reads the typed concerns
(oracle/results/concerns.py), never the details.
"""

from __future__ import annotations

from typing import Any

from oracle.results.concerns import (Concern, CyclesEvidence, OrderInconsistent, PairsEvidence, PreferenceCycle,
                             ScoresEvidence, TiedBest, Unparsed, UnparsedEvidence)
from oracle.results.result import CandidateResult, Status
from oracle.strategies._judging.faults import unjudged_concern


def _pairs(values: list[list[str]] | None) -> list[tuple[str, str]]:
    return [(str(p[0]), str(p[1])) for p in values or []]


def judge_concerns(details: dict[str, Any], candidates: list[CandidateResult]) -> list[Concern]:
    """Order-inconsistent pairs, preference cycles, unparsed pairs or candidates, candidates or pairs
    whose calls failed on their input, a tied best."""
    out: list[Concern] = []
    flipped = _pairs(details.get("order_inconsistent_pairs"))
    if flipped:
        ids = list(dict.fromkeys(c for p in flipped for c in p))
        out.append(OrderInconsistent(
            candidates=ids, evidence=PairsEvidence(pairs=flipped),
            message=f"{len(flipped)} pair(s) judged differently with the seats swapped: "
                    + ", ".join(f"{a}/{b}" for a, b in flipped)))
    cycles = [[str(c) for c in cycle] for cycle in details.get("cycles") or [] if cycle]
    if cycles:
        out.append(PreferenceCycle(
            candidates=list(dict.fromkeys(c for cycle in cycles for c in cycle)),
            evidence=CyclesEvidence(cycles=cycles),
            message="pairwise verdicts form a cycle: " + "; ".join(" > ".join([*c, c[0]]) for c in cycles)))
    unparsed_pairs = _pairs(details.get("unparsed_pairs"))
    unparsed = [str(c) for c in details.get("unparsed_candidates") or []]
    if unparsed_pairs or unparsed:
        ids = list(dict.fromkeys([*unparsed, *(c for p in unparsed_pairs for c in p)]))
        out.append(Unparsed(candidates=ids, evidence=UnparsedEvidence(pairs=unparsed_pairs),
                            message=f"the judge's reply could not be read for {', '.join(ids)}"))
    failed_pairs = _pairs(details.get("failed_pairs"))
    errors = {c.id: c.details["error"] for c in candidates
              if c.status == Status.failed and isinstance(c.details.get("error"), dict)}
    unjudged = unjudged_concern(errors, failed_pairs)
    if unjudged is not None:
        out.append(unjudged)
    tied = [str(c) for c in details.get("tied_best") or []]
    if tied:
        scores = {c.id: c.score for c in candidates if c.id in tied}
        out.append(TiedBest(candidates=tied, evidence=ScoresEvidence(scores=scores),
                            message=f"tied for best: {', '.join(tied)}"))
    return out
