"""Reading judge replies: a strict JSON parse, and logprob readouts over the verdict tokens.

Strict means the reply is one JSON object (one ```json fence around it is tolerated), every
criterion id is present, every score is a JSON integer inside the scale, and a pairwise winner is
"A" or "B". Anything else raises ``ParseProblem`` with a message the repair request quotes back to
the model. There is no fallback value: a reply that cannot be read stays unread (``unparsed``),
because a made-up midpoint would look like an honest "medium" verdict.

The logprob readout is an expectation over the score tokens at the position where the model wrote
its score (or its A/B verdict), from the top alternatives the endpoint returned, renormalized over
the alternatives that are valid verdicts; the covered mass is recorded so a reader can see how much
of the distribution the readout rests on.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from oracle.providers.types import TokenLogprob

_FENCE_RE = re.compile(r"```(?:json)?[ \t]*\n?(.*?)\n?[ \t]*```", re.DOTALL)
_SCORE_RE = re.compile(r'(?<!\\)"score"\s*:\s*(\d+)')
_WINNER_RE = re.compile(r'(?<!\\)"winner"\s*:\s*"')


class ParseProblem(ValueError):
    """A reply that does not match the requested JSON form; the message says what is wrong."""


@dataclass(frozen=True)
class CriterionScore:
    id: str
    score: int
    rationale: str


def load_json_object(text: str) -> dict[str, Any]:
    """The reply as a JSON object, or ``ParseProblem``."""
    body = text.strip()
    fenced = _FENCE_RE.fullmatch(body)
    if fenced:
        body = fenced.group(1).strip()
    if not body:
        raise ParseProblem("the reply is empty")
    try:
        obj = json.loads(body)
    except json.JSONDecodeError as exc:
        raise ParseProblem(f"it is not valid JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(obj, dict):
        raise ParseProblem("it must be a JSON object")
    return obj


def _rationale(entry: dict[str, Any], where: str) -> str:
    rationale = entry.get("rationale", "")
    if not isinstance(rationale, str):
        raise ParseProblem(f'{where}"rationale" must be a string')
    return rationale


def parse_pointwise(text: str, ids: Sequence[str], scale_min: int, scale_max: int) -> dict[str, CriterionScore]:
    """Scores per criterion id, in the order the reply lists them."""
    obj = load_json_object(text)
    criteria = obj.get("criteria")
    if not isinstance(criteria, dict):
        raise ParseProblem('it needs a "criteria" object keyed by criterion id')
    missing = [i for i in ids if i not in criteria]
    unknown = [k for k in criteria if k not in ids]
    if missing or unknown:
        raise ParseProblem(f"criterion ids must be exactly {list(ids)}"
                           + (f"; missing {missing}" if missing else "") + (f"; unknown {unknown}" if unknown else ""))
    out: dict[str, CriterionScore] = {}
    for cid, entry in criteria.items():
        if not isinstance(entry, dict):
            raise ParseProblem(f'criteria.{cid} must be an object with "rationale" and "score"')
        score = entry.get("score")
        if isinstance(score, bool) or not isinstance(score, int):
            raise ParseProblem(f"criteria.{cid}.score must be an integer from {scale_min} to {scale_max}, "
                               f"got {score!r}")
        if not scale_min <= score <= scale_max:
            raise ParseProblem(f"criteria.{cid}.score {score} is outside {scale_min}..{scale_max}")
        out[cid] = CriterionScore(cid, score, _rationale(entry, f"criteria.{cid}."))
    return out


def parse_pairwise(text: str) -> tuple[str, str]:
    """(seat, rationale) where seat is "A" or "B"."""
    obj = load_json_object(text)
    winner = obj.get("winner")
    if not isinstance(winner, str) or winner.strip().upper() not in ("A", "B"):
        raise ParseProblem(f'"winner" must be "A" or "B", got {winner!r}')
    return winner.strip().upper(), _rationale(obj, "")


def parse_own_answer(text: str) -> str:
    """Commit-first grading: the judge's own answer, a non-empty string."""
    obj = load_json_object(text)
    answer = obj.get("answer")
    if not isinstance(answer, str) or not answer.strip():
        raise ParseProblem(f'"answer" must be a non-empty string, got {answer!r}')
    return answer.strip()


# ---------------------------------------------------------------- logprob readouts


@dataclass(frozen=True)
class Readout:
    """A distribution over verdict values read from token logprobs."""

    distribution: dict[str, float] = field(default_factory=dict)
    """Value -> renormalized probability."""
    covered_mass: float = 0.0
    """Probability mass of the valid alternatives before renormalization."""
    ambiguous_mass: float = 0.0
    """Mass on tokens that start several values (e.g. "1" of "10") and could not be split."""
    reason: str | None = None
    """Why there is no readout (None when there is one)."""

    @property
    def available(self) -> bool:
        return self.reason is None

    def as_dict(self) -> dict[str, Any]:
        return {"distribution": self.distribution, "covered_mass": self.covered_mass,
                "ambiguous_mass": self.ambiguous_mass, "reason": self.reason}


def _token_at(text: str, logprobs: Sequence[TokenLogprob], offset: int) -> tuple[int, int] | None:
    """(token index, token start) of the token covering ``offset``; None when tokens and text differ."""
    if "".join(t.token for t in logprobs) != text:
        return None
    start = 0
    for i, t in enumerate(logprobs):
        if start <= offset < start + len(t.token):
            return i, start
        start += len(t.token)
    return None


def _alternatives(position: TokenLogprob) -> dict[str, float]:
    alts = {tok: math.exp(lp) for tok, lp in position.top.items()}
    alts.setdefault(position.token, math.exp(position.logprob))
    return alts


def score_readout(text: str, logprobs: Sequence[TokenLogprob] | None, offset: int, chosen: int,
                  scale_min: int, scale_max: int) -> Readout:
    """Distribution over the integer scale at the score written at ``offset``."""
    if not logprobs:
        return Readout(reason="no_logprobs")
    located = _token_at(text, logprobs, offset)
    if located is None:
        return Readout(reason="tokens_do_not_match_text")
    index, start = located
    prefix = logprobs[index].token[: offset - start]
    scale = {str(v) for v in range(scale_min, scale_max + 1)}
    dist: dict[str, float] = {}
    ambiguous = 0.0
    for alt, p in _alternatives(logprobs[index]).items():
        if not alt.startswith(prefix):
            continue
        digits = re.match(r"\d*", alt[len(prefix):]).group(0)  # type: ignore[union-attr]  # \d* always matches
        if not digits:
            continue
        longer = any(s != digits and s.startswith(digits) for s in scale)
        whole_token = len(prefix) + len(digits) == len(alt)
        if longer and whole_token:
            # "1" may be 1 or the start of 10: split with the next position if the model took it.
            if alt == logprobs[index].token and index + 1 < len(logprobs):
                for nxt, q in _alternatives(logprobs[index + 1]).items():
                    more = re.match(r"\d*", nxt).group(0)  # type: ignore[union-attr]  # \d* always matches
                    value = digits + more
                    if value in scale:
                        dist[value] = dist.get(value, 0.0) + p * q
            else:
                ambiguous += p
        elif digits in scale:
            dist[digits] = dist.get(digits, 0.0) + p
    covered = sum(dist.values())
    if covered <= 0 or str(chosen) not in scale:
        return Readout(ambiguous_mass=ambiguous, reason="no_score_tokens_in_top")
    return Readout({k: v / covered for k, v in sorted(dist.items(), key=lambda kv: int(kv[0]))},
                   covered, ambiguous)


def expected_value(readout: Readout) -> float | None:
    if not readout.available:
        return None
    return sum(int(k) * p for k, p in readout.distribution.items())


def pointwise_readouts(text: str, logprobs: Sequence[TokenLogprob] | None, scores: dict[str, CriterionScore],
                       scale_min: int, scale_max: int) -> dict[str, Readout]:
    """One readout per criterion, matching the k-th written score to the k-th parsed criterion."""
    matches = list(_SCORE_RE.finditer(text))
    if len(matches) != len(scores) or any(int(m.group(1)) != s.score for m, s in zip(matches, scores.values())):
        return {cid: Readout(reason="score_positions_ambiguous") for cid in scores}
    return {cid: score_readout(text, logprobs, m.start(1), s.score, scale_min, scale_max)
            for m, (cid, s) in zip(matches, scores.items())}


def seat_readout(text: str, logprobs: Sequence[TokenLogprob] | None) -> Readout:
    """P(A) and P(B) at the winner letter, renormalized over the two."""
    if not logprobs:
        return Readout(reason="no_logprobs")
    matches = list(_WINNER_RE.finditer(text))
    if len(matches) != 1:
        return Readout(reason="winner_position_ambiguous")
    offset = matches[0].end()
    located = _token_at(text, logprobs, offset)
    if located is None:
        return Readout(reason="tokens_do_not_match_text")
    index, start = located
    prefix = logprobs[index].token[: offset - start]
    dist = {"A": 0.0, "B": 0.0}
    for alt, p in _alternatives(logprobs[index]).items():
        rest = alt[len(prefix):] if alt.startswith(prefix) else ""
        if rest[:1] in dist and not rest[1:2].isalnum():
            dist[rest[:1]] += p
    covered = dist["A"] + dist["B"]
    if covered <= 0:
        return Readout(reason="no_seat_tokens_in_top")
    return Readout({k: v / covered for k, v in dist.items()}, covered)
