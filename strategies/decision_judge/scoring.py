"""From answer probabilities to verdicts: the pass rule, weighting and normalization live here.

Why in code and not in a prompt: a threshold or a weighting written into a prompt is applied by the
model however it likes, differently on each call; here it is one line that a test pins. Why the most
likely option sets the score instead of the raw probability: a probability of 0.71 one run and 0.69
the next must not move the score, only a different winning option may. Abstention and refusal
leave ``score=None``: an unanswered question is not a medium answer.

Beside our normalized score each answer reports the decision formats' own reading of it, so a
result can be compared with what a System One client would show: ``raw_scale`` is "categorical"
for yes/no and choice questions and the level-index range ``[0, n-1]`` for a score question;
``raw_score`` is the format's answer field: the probability of yes (``noul``), the chosen option
(``choice``), or the expected level index (``score``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Sequence

from oracle.providers.decisions import reference_confidence
from oracle.providers.types import DecisionAnswer
from oracle.tasks.questions import MAX_SCORE, MIN_SCORE, Question
from oracle.tasks.task import Criterion
from oracle.strategies.decision_judge.readout import UnreadableAnswer

_TIE = 1e-12


def normalize_score(value: float) -> float:
    """1..5 -> 0..1 (1 -> 0, 3 -> 0.5, 5 -> 1)."""
    return (value - MIN_SCORE) / (MAX_SCORE - MIN_SCORE)


@dataclass
class AnswerVerdict:
    """One answered question, with everything needed to audit it."""

    question_id: str
    type: str
    option_order: list[str]
    """Labels in the order they were asked (the order matters for position bias)."""
    probabilities: dict[str, float]
    probability_source: str
    selected: str | None = None
    score: float | None = None
    """Normalized 0..1 from the selected option's 1..5 score; None when abstained or refused."""
    option_score: float | None = None
    """The selected option's score on 1..5 (the question's ``scores``, or the even spread)."""
    raw_scale: Literal["categorical"] | tuple[int, int] = "categorical"
    """As the decision formats define it: categorical (yes/no, choice) or the level indices 0..n-1."""
    raw_score: float | str | None = None
    """As the decision formats define it: P(yes), the chosen option, or the expected level index
    (abstain level included, as asked); None when refused."""
    expected_score: float | None = None
    """score questions: probability-weighted mean of the level scores (1..5), for reference only."""
    confidence: float | None = None
    low_confidence: bool = False
    low_confidence_reasons: list[str] = field(default_factory=list)
    abstained: bool = False
    refused: bool = False
    refusal_reason: str | None = None
    covered_mass: float | None = None
    tie: bool = False
    """The two most likely options had exactly the same probability (always low confidence)."""

    def to_details(self) -> dict[str, Any]:
        return asdict(self)


def _probabilities(question: Question, answer: DecisionAnswer) -> dict[str, float]:
    labels = question.labels()
    unknown = sorted(set(answer.probabilities) - set(labels))
    if unknown:
        raise UnreadableAnswer(question.id, str(answer.probabilities),
                               f"probabilities for unknown labels {unknown}; expected {labels}")
    raw = {label: float(answer.probabilities.get(label, 0.0)) for label in labels}
    if any(p < 0 for p in raw.values()):
        raise UnreadableAnswer(question.id, str(answer.probabilities), "negative probability")
    total = sum(raw.values())
    if total <= 0:
        raise UnreadableAnswer(question.id, str(answer.probabilities), "no probability mass on any label")
    return {label: p / total for label, p in raw.items()}


def read_answer(question: Question, answer: DecisionAnswer, *, coverage_floor: float) -> AnswerVerdict:
    """Interpret one answer: selected option, normalized score, confidence flags, abstention.

    Why the coverage floor is binding: a readout renormalizes the labels' share of the model's
    probability, so a model that put 99.99 % on "I" and crumbs on "Yes" reads as P(yes) = 1.0.
    Below ``coverage_floor`` there is no answer to read: ``UnreadableAnswer`` (the candidate is
    ``unparsed``, the covered mass recorded), never a verdict. Why an exact tie is always low
    confidence: the pick between two equally likely options is the option order, not the model;
    the score and the pass rule stay as computed, and a human is asked.
    """
    raw_scale: Literal["categorical"] | tuple[int, int] = (
        (0, len(question.labels()) - 1) if question.type == "score" else "categorical")

    def verdict_with(**fields: Any) -> AnswerVerdict:
        return AnswerVerdict(question_id=question.id, type=question.type, option_order=question.labels(),
                             probability_source=answer.probability_source, covered_mass=answer.covered_mass,
                             raw_scale=raw_scale, **fields)

    if answer.refused:
        return verdict_with(probabilities=dict(answer.probabilities), refused=True,
                            refusal_reason=answer.refusal_reason or "refused")
    if answer.covered_mass is not None and answer.covered_mass < coverage_floor:
        raise UnreadableAnswer(question.id, str(answer.probabilities),
                               f"the option labels got {answer.covered_mass:.4g} of the probability mass, "
                               f"below decision_judge.coverage_floor={coverage_floor:g}",
                               covered_mass=answer.covered_mass)
    probs = _probabilities(question, answer)
    ranked = sorted(probs.values(), reverse=True)
    best = ranked[0]
    tie = len(ranked) > 1 and ranked[1] >= best - _TIE
    selected = next(label for label in question.labels() if probs[label] >= best - _TIE)
    # Every backend reports the reference formula's value; an answer built without one (a caller's
    # own DecisionAnswer) gets the same formula here, never the top probability.
    confidence = answer.confidence if answer.confidence is not None else reference_confidence(
        question.type, [probs[label] for label in question.labels()])
    reasons = []
    if question.min_confidence is not None and confidence < question.min_confidence:
        reasons.append("below_min_confidence")
    if tie:
        reasons.append("tie")
    verdict = verdict_with(probabilities=probs, selected=selected, confidence=confidence,
                           low_confidence=bool(reasons), low_confidence_reasons=reasons, tie=tie,
                           raw_score=_format_answer(question, probs, selected))
    score_map = question.score_map()
    if question.type == "score":
        verdict.expected_score = sum(probs[k] * v for k, v in score_map.items()) / max(
            sum(probs[k] for k in score_map), _TIE)
    if selected == question.abstain_option:
        verdict.abstained = True
        return verdict
    verdict.option_score = score_map[selected]
    verdict.score = normalize_score(score_map[selected])
    return verdict


def _format_answer(question: Question, probs: dict[str, float], selected: str) -> float | str:
    """What a decision format's own answer field would hold for these probabilities."""
    if question.type == "likelihood":
        return probs["yes"]
    if question.type == "choice":
        return selected
    return sum(i * probs[label] for i, label in enumerate(question.labels()))


def question_mode_score(verdicts: Sequence[AnswerVerdict], pass_threshold: float
                        ) -> tuple[float | None, bool | None]:
    """Mean normalized score over the answered questions; passed iff it reaches the threshold.

    Abstained and refused questions are left out; when none is left the candidate is not scored.
    """
    scores = [v.score for v in verdicts if v.score is not None]
    if not scores:
        return None, None
    score = sum(scores) / len(scores)
    return score, score >= pass_threshold


@dataclass
class CriteriaVerdict:
    passed: bool | None
    score: float | None
    criteria: list[dict[str, Any]]


def criteria_verdict(criteria: Sequence[Criterion], verdicts: Sequence[AnswerVerdict],
                     pass_threshold: float) -> CriteriaVerdict:
    """passed iff every criterion's P(yes) reaches the threshold; score = weighted mean of P(yes).

    Weight 0 keeps a criterion in the pass rule and out of the score. A refused criterion leaves
    the pass rule undecidable, so the candidate gets neither score nor verdict.
    """
    rows: list[dict[str, Any]] = []
    for c, v in zip(criteria, verdicts, strict=True):
        p_yes = None if v.refused else v.probabilities["yes"]
        rows.append({"criterion": c.criterion, "weight": c.weight, "probability": p_yes,
                     "met": None if p_yes is None else p_yes >= pass_threshold,
                     "question_id": v.question_id, "probability_source": v.probability_source,
                     "covered_mass": v.covered_mass, "refused": v.refused,
                     "refusal_reason": v.refusal_reason, "low_confidence": v.low_confidence})
    if any(r["probability"] is None for r in rows):
        return CriteriaVerdict(None, None, rows)
    # Weights are relative: scale by the largest first, so no sum of them can overflow to inf.
    top = max(r["weight"] for r in rows)
    weighted = [(r["weight"] / top, r["probability"]) for r in rows if r["weight"] > 0]
    score = sum(w * p for w, p in weighted) / sum(w for w, _ in weighted)
    return CriteriaVerdict(all(r["met"] for r in rows), score, rows)


@dataclass
class ComparisonVerdict:
    probabilities: dict[str, float]
    """Candidate id -> P(best), averaged over both orders."""
    per_order: list[dict[str, float]]
    winners: list[str | None]
    order_flip: bool
    ranking: list[str]
    best: list[str]
    confidence: float


def merge_orders(forward: AnswerVerdict, backward: AnswerVerdict) -> ComparisonVerdict:
    """Average P(best) per candidate id over the two orders; a different winner is an order flip.

    Confidence is the weaker of the two orders' support for the final winner, so a flip (one order
    preferring someone else) lowers it.
    """
    ids = forward.option_order
    avg = {cid: (forward.probabilities[cid] + backward.probabilities[cid]) / 2 for cid in ids}
    ranking = sorted(ids, key=lambda cid: (-avg[cid], ids.index(cid)))
    top = avg[ranking[0]]
    best = [cid for cid in ranking if avg[cid] >= top - _TIE]
    winner = ranking[0]
    confidence = min(forward.probabilities[winner], backward.probabilities[winner])
    return ComparisonVerdict(probabilities=avg, per_order=[forward.probabilities, backward.probabilities],
                             winners=[forward.selected, backward.selected],
                             order_flip=forward.selected != backward.selected,
                             ranking=ranking, best=best, confidence=confidence)
