"""The LLM judge's concerns, built once from its own results as typed values for escalation.

Why here: only the judge knows which of its details say "these two flipped with the seats
swapped" or "these verdicts form a cycle"; escalation reads the typed concerns
(oracle/results/concerns.py), never the details.
"""

from __future__ import annotations

from typing import Any

from oracle.results.concerns import (Concern, CyclesEvidence, OrderInconsistent, PairsEvidence, PanelDisagreement,
                                     PanelEvidence, PreferenceCycle, ScoresEvidence, TiedBest, Unparsed,
                                     UnparsedEvidence)
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
    split = panel_concern(details.get("panel"))
    if split is not None:
        out.append(split)
    tied = [str(c) for c in details.get("tied_best") or []]
    if tied:
        scores = {c.id: c.score for c in candidates if c.id in tied}
        out.append(TiedBest(candidates=tied, evidence=ScoresEvidence(scores=scores),
                            message=f"tied for best: {', '.join(tied)}"))
    return out


def panel_concern(panel: dict[str, Any] | None) -> PanelDisagreement | None:
    """The members of the panel split beyond ``panel_disagreement`` on a criterion, or named
    different winners of a pair (strategies/llm_judge/panel_report.py)."""
    if not panel or not (panel.get("split_criteria") or panel.get("split_pairs")):
        return None
    spreads = {cid: {crit: panel["agreement"][cid][crit]["spread"] for crit in crits}
               for cid, crits in panel["split_criteria"].items()}
    pairs = _pairs(panel.get("split_pairs"))
    winners = {f"{p['a']}/{p['b']}": {label: m["winner"] for label, m in p["members"].items()}
               for p in panel.get("pairs") or [] if not p["agree"]}
    ids = list(dict.fromkeys([*spreads, *(c for p in pairs for c in p)]))
    what = [f"{cid} on {', '.join(f'{crit} (spread {gap:.2f})' for crit, gap in crits.items())}"
            for cid, crits in spreads.items()]
    for a, b in pairs:
        picks = ", ".join(f"{label}={winner or 'tie'}" for label, winner in winners[f"{a}/{b}"].items())
        what.append(f"{a}/{b} (winners: {picks})")
    return PanelDisagreement(
        candidates=ids, evidence=PanelEvidence(members=list(panel["members"]), threshold=panel["threshold"],
                                               spreads=spreads, pairs=pairs, winners=winners),
        message="the judge panel split: " + "; ".join(what))
