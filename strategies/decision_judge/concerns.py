"""The decision judge's concerns: its own flags, stated once as typed values for escalation.

Why here and not in escalation: only the judge knows where in its ``details`` a refusal or an
unsure question is written; escalation reads the typed ``Concern``\\ s this module builds
(oracle/results/concerns.py) and never the details.
"""

from __future__ import annotations

from typing import Any, Literal

from oracle.results.concerns import (Concern, DecisionAbstention, DecisionLowConfidence, DecisionOrderFlip,
                             DecisionRefusal, LowConfidenceEvidence, NoCandidatePassed, NonePassedEvidence,
                             OrderFlipEvidence, PanelDisagreement, PanelEvidence, QuestionsEvidence,
                             RefusalEvidence, Unparsed)
from oracle.results.result import CandidateResult, Status


def _flagged(candidates: list[CandidateResult], key: str) -> list[str]:
    return [c.id for c in candidates if c.details.get(key)]


def _questions(candidates: list[CandidateResult], ids: list[str], key: str) -> dict[str, list[str]]:
    by_id = {c.id: c for c in candidates}
    return {cid: list(by_id[cid].details.get(key) or []) if cid in by_id else [] for cid in ids}


def _first_confidence(candidate: CandidateResult, questions: list[str]) -> float | None:
    """The confidence of the candidate's first unsure question, where questions carry one."""
    for q in candidate.details.get("questions") or []:
        if isinstance(q, dict) and q.get("question_id") in questions:
            value = q.get("confidence")
            return float(value) if isinstance(value, (int, float)) else None
    return None


def decision_concerns(candidates: list[CandidateResult], extra: dict[str, Any],
                      flags: dict[str, bool]) -> list[Concern]:
    """Refusal, abstention, order flip, low confidence (exact ties included) and unparsed answers."""
    ids = [c.id for c in candidates]
    by_id = {c.id: c for c in candidates}
    out: list[Concern] = []
    if flags["refused"]:
        refused = _flagged(candidates, "refused") or ids
        reasons = [str(r) for r in extra.get("refusals") or [] if r] or [
            str(r) for cid in refused for r in (by_id[cid].details.get("refusal_reasons") or {}).values() if r]
        out.append(DecisionRefusal(
            candidates=refused, message=f"the decision model refused to answer for {', '.join(refused)}",
            evidence=RefusalEvidence(questions=_questions(candidates, refused, "refused_questions"),
                                     reasons=reasons)))
    if flags["abstained"]:
        abstained = _flagged(candidates, "abstained") or [c.id for c in candidates if c.status == Status.abstained]
        out.append(DecisionAbstention(
            candidates=abstained, message=f"the decision model abstained on {', '.join(abstained)}",
            evidence=QuestionsEvidence(questions=_questions(candidates, abstained, "abstained_questions"))))
    if flags["order_flip"]:
        winners = [w for w in extra.get("winners_by_order") or [] if w]
        distinct = list(dict.fromkeys(winners))
        pair = distinct[:2] if len(distinct) >= 2 else ids[:2]
        out.append(DecisionOrderFlip(
            candidates=pair, message=f"the best candidate changed with the order: {' vs '.join(pair)}",
            evidence=OrderFlipEvidence(winners_by_order=winners, probabilities=extra.get("probabilities"))))
    low = _flagged(candidates, "low_confidence")
    if flags["low_confidence"] and low:
        questions = _questions(candidates, low, "low_confidence_questions")
        out.append(DecisionLowConfidence(
            candidates=low, message=f"the decision model was unsure about {', '.join(low)}",
            evidence=LowConfidenceEvidence(
                questions=questions, confidence={cid: _first_confidence(by_id[cid], questions[cid]) for cid in low})))
    unparsed = [c.id for c in candidates if c.status == Status.unparsed]
    if unparsed:
        out.append(Unparsed(candidates=unparsed,
                            message=f"the decision model's answer could not be read for {', '.join(unparsed)}"))
    return out


def _first_failure(candidate: CandidateResult, threshold: float) -> str:
    """The first criterion below the threshold, or the mean question score that fell short."""
    for row in candidate.details.get("criteria") or []:
        if isinstance(row, dict) and row.get("met") is False:
            return f"criterion {row.get('criterion')!r}: P(yes) {row.get('probability'):.2f} < {threshold:g}"
    return f"score {candidate.score:.3f} < {threshold:g}" if candidate.score is not None else "failed"


def none_passed_concern(candidates: list[CandidateResult], mode: str | None,
                        threshold: float) -> NoCandidatePassed | None:
    """Every candidate with a verdict failed: say so, with each one's first failure, so a close
    pair of failures is never presented as two good answers a person must choose between."""
    judged = [c for c in candidates if c.passed is not None]
    failed_on: Literal["criteria", "questions"]
    if mode == "criteria":
        failed_on = "criteria"
    elif mode == "questions":
        failed_on = "questions"
    else:
        return None
    if not judged or any(c.passed for c in judged):
        return None
    return NoCandidatePassed(
        candidates=[c.id for c in judged],
        message=f"no candidate passed the decision judge's {failed_on}",
        evidence=NonePassedEvidence(mode=failed_on,
                                    first_failures={c.id: _first_failure(c, threshold) for c in judged}))


def _answers(panel: dict[str, Any], qid: str) -> str:
    """Each member's label on one question ("model-a: yes, model-c: no"; "-": it did not answer)."""
    members = (panel.get("questions") or {}).get(qid, {}).get("members") or {}
    return ", ".join(f"{m}: {row.get('label') if row.get('status') == 'answered' else '-'}"
                     for m, row in members.items())


def _spreads(panel: dict[str, Any]) -> dict[str, float]:
    questions = panel.get("questions") or {}
    return {qid: float(questions[qid]["spread"]) for qid in panel.get("disagreed_questions") or []
            if isinstance(questions.get(qid, {}).get("spread"), (int, float))}


def panel_concern(candidates: list[CandidateResult], extra: dict[str, Any],
                  threshold: float) -> PanelDisagreement | None:
    """The members split on some answer (spread past ``panel_disagreement``, or different labels):
    per candidate the questions with their spread, and the members' labels in the message. A
    comparison is one question about every candidate: its split is the members' different picks,
    reported as the pair (``winners``: each member's pick, per order)."""
    split = {c.id: c.details["panel"] for c in candidates
             if isinstance(c.details.get("panel"), dict) and c.details["panel"].get("disagreement")}
    found = extra.get("panel")
    orders: dict[str, Any] = found if isinstance(found, dict) else {}
    compared = {order: p for order, p in orders.items() if isinstance(p, dict) and p.get("disagreement")}
    if not split and not compared:
        return None
    if compared:
        winners: dict[str, dict[str, str | None]] = {}
        picks: list[str] = []
        for order, p in compared.items():
            for qid, q in (p.get("questions") or {}).items():
                row = {m: (r.get("label") if r.get("status") == "answered" else None)
                       for m, r in (q.get("members") or {}).items()}
                winners[f"{qid} ({order})"] = row
                picks.extend(v for v in row.values() if v is not None)
        ids = list(dict.fromkeys(picks)) or [c.id for c in candidates]
        first = next(iter(compared.values()))
        pair = [(ids[0], ids[1])] if len(ids) >= 2 else []
        said = "; ".join(f"{k}: " + ", ".join(f"{m}: {w or '-'}" for m, w in row.items()) for k, row in winners.items())
        return PanelDisagreement(
            candidates=ids, message=f"the judge panel split: the best candidate ({said})",
            evidence=PanelEvidence(members=list(first.get("members") or []), threshold=threshold,
                                   spreads={}, pairs=pair, winners=winners))
    members = list(next(iter(split.values())).get("members") or [])
    parts = []
    for cid, p in split.items():
        spreads = _spreads(p)
        parts.append(f"{cid} on " + ", ".join(
            f"{qid} ({_answers(p, qid)}" + (f"; spread {spreads[qid]:.2f}" if qid in spreads else "") + ")"
            for qid in p.get("disagreed_questions") or []))
    return PanelDisagreement(
        candidates=list(split), message="the judge panel split: " + "; ".join(parts),
        evidence=PanelEvidence(members=members, threshold=threshold,
                               spreads={cid: _spreads(p) for cid, p in split.items()}))
