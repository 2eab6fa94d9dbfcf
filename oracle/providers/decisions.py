"""Native decision endpoints, both wire formats, behind the one internal Decision* model.

System One is pinned to the numbered conformance spec of ``jevcompat`` (spec 0.1, ``jevcompat
spec``); tests/test_decision_conformance.py runs this client against its reference server, clean
and with every fault it can inject. The Decisions format follows its family's documented style.

Client: we keep our own httpx client (oracle/providers/_core.py) rather than the official SDK
(``typesafe-sdk``). Every provider then shares the same retries with backoff and Retry-After, the
per-call timeout and overall deadline, the reply-size limit, the concurrency limit, the response
cache and the call ledger, and a server's reply is validated by the checks below (which turn a
self-contradictory reply into a ``ResponseParseError`` naming what is wrong) instead of by an SDK's
models we do not control; the SDK would also be one more runtime dependency for two JSON shapes.

System One, ``POST {base}/systemone`` (questions keyed by id)::

    request  {"model": m, "state": <text or JSON object>,
              "questions": {"q1": {"type": "noul", "instructions": "..."},
                            "q2": {"type": "choice", "instructions": "...",
                                   "criteria": {"a": "description", "b": "description"}},
                            "q3": {"type": "score", "instructions": "...",
                                   "criteria": ["poor", "fair", "good"]}}}
    reply    {"id": "...", "model": "...", "usage": {"input_tokens": n, "output_tokens": n},
              "answers": {"q1": {"type": "noul", "noul": 0.83},
                          "q2": {"type": "choice", "choice": "a", "confidence": 0.6,
                                 "probabilities": {"a": 0.8, "b": 0.2}},
                          "q3": {"type": "score", "score": 1.7, "confidence": 0.5,
                                 "legend": {"0": "poor", "1": "fair", "2": "good"},
                                 "probabilities": {"0": 0.1, "1": 0.1, "2": 0.8}},
                          "q4": {"type": "refusal", "refusal": "why not"}}}

Decisions, ``POST {base}/decisions`` (questions and answers are lists carrying a ``name``)::

    request  {"model": m, "input": <text; a JSON state is sent as canonical JSON text>,
              "questions": [{"name": "q1", "type": "predicate", "instructions": "..."},
                            {"name": "q2", "type": "choice", "instructions": "...",
                             "choices": [{"value": "a", "description": "..."}, ...]},
                            {"name": "q3", "type": "score", "instructions": "...",
                             "levels": [{"label": "poor"}, {"label": "fair"}, {"label": "good"}]}]}
    reply    {"id": "...", "model": "...", "usage": {...},
              "answers": [{"type": "predicate", "name": "q1", "probability": 0.83},
                          {"type": "choice", "name": "q2", "choice": "a", "confidence": 0.6,
                           "probabilities": [{"value": "a", "probability": 0.8}, ...]},
                          {"type": "score", "name": "q3", "score": 1.7, "confidence": 0.5,
                           "probabilities": [{"value": 0, "label": "poor", "probability": 0.1}, ...]},
                          {"type": "refusal", "name": "q4", "refusal": "why not"}]}

Internally a likelihood question (noul / predicate) answers ``{"yes": p, "no": 1 - p}``, a choice
answers per option label, a score per level name. A refusal is a first-class answer
(``refused=True``), never a guessed distribution. An answer missing for a question asked, an
unknown label, or probabilities that do not sum to about 1 raise ``ResponseParseError``.

A System One reply is also checked for what would silently change a verdict or betray a server
that misunderstood the request (spec §4): an answer for a question not asked, a NaN or Infinity
anywhere, probability keys that are not exactly the option names (or ``"0".."n-1"`` for a score),
a ``choice`` that is not the most probable option, a ``legend`` that does not map ``"0".."n-1"`` to
the levels asked, a ``score`` that is not the expectation of its probabilities, a confidence
outside [0, 1]. Fields the verdict does not use may be absent (``legend``, ``confidence``, ``usage``).

Confidence: servers disagree on what ``confidence`` means (top probability, top-two margin,
1 - normalised entropy, undisclosed), so ``DecisionAnswer.confidence`` is always our own, from the
probabilities, by the formula spec §4.5 pins (``reference_confidence``); the server's value is kept
beside it as ``DecisionAnswer.server_confidence``.
"""

from __future__ import annotations

import math
import unicodedata
from typing import Any, Literal, Sequence

from oracle._internal.canonical import canonical_json
from oracle.config.model import ProviderSettings
from oracle.errors import ResponseParseError
from oracle.providers._core import bearer_headers
from oracle.providers.types import (Capabilities, DecisionAnswer, DecisionQuestion, DecisionReply,
                                    DecisionRequest, Usage)

SUM_TOLERANCE = 0.02
"""Decisions format: probabilities off 1 by more than this are a broken reply, not rounding."""
SYSTEMONE_SUM_TOLERANCE = 0.05
"""System One (spec §5): |sum - 1| may reach this, or the rounding the reply shows, whichever is larger."""
ARGMAX_TOLERANCE = 0.005
"""System One: ``choice`` may be an option this much less probable than the top one (rounding)."""
SCORE_TOLERANCE = 0.02
"""System One: ``score`` may be this far from the expectation (plus the reply's rounding)."""


def reference_confidence(kind: Literal["likelihood", "choice", "score"], probabilities: Sequence[float]) -> float:
    """Our confidence in an answer, from its probabilities alone (System One spec §4.5).

    choice (and likelihood, as a two-option choice): how far the top probability is above uniform,
    ``(max p - 1/n) / (1 - 1/n)``: 0 for a uniform answer, 1 for a certain one.
    score (probabilities in level order): one minus the expected distance from the most probable
    level, relative to that of a uniform distribution around the middle level,
    ``max(0, 1 - sum_i p_i |i - mode| / (sum_i |i - (n-1)/2| / n))``.
    The spec pins no confidence for noul; the two-option choice formula gives ``|2p - 1|``.
    """
    probs = [float(p) for p in probabilities]
    n = len(probs)
    if n <= 1:
        return 1.0
    if kind == "score":
        mode = max(range(n), key=probs.__getitem__)
        spread = sum(p * abs(i - mode) for i, p in enumerate(probs))
        uniform_spread = sum(abs(i - (n - 1) / 2) for i in range(n)) / n
        value = 1.0 - spread / uniform_spread
    else:
        value = (max(probs) - 1.0 / n) / (1.0 - 1.0 / n)
    return min(1.0, max(0.0, value))

def _with_model(settings: ProviderSettings, body: dict[str, Any]) -> dict[str, Any]:
    """The body with the configured model first; without one the server uses its default."""
    return body if settings.model is None else {"model": settings.model, **body}


_WIRE_TYPES = {"systemone": {"likelihood": "noul", "choice": "choice", "score": "score"},
               "decisions": {"likelihood": "predicate", "choice": "choice", "score": "score"}}


class _DecisionFormat:
    endpoint_kind = "decisions"
    reply_type = DecisionReply
    _path = "/decisions"

    def __init__(self, settings: ProviderSettings) -> None:
        self.settings = settings

    def url(self) -> str:
        base = self.settings.base_url.rstrip("/")
        return base if base.endswith(self._path) else base + self._path

    def headers(self, api_key: str | None) -> dict[str, str]:
        return bearer_headers(self.settings, api_key)

    def capabilities(self) -> Capabilities:
        return Capabilities(logprobs=False, max_top_logprobs=0, seed=False, structured_output="none",
                            native_decisions=True)

    def sampling(self, req: DecisionRequest) -> tuple[dict[str, Any], dict[str, Any]]:
        return {}, {}

    def _answers(self, raw: dict[str, Any], req: DecisionRequest) -> dict[str, DecisionAnswer]:
        answers = {}
        for q in req.questions:
            if q.id not in raw:
                raise ResponseParseError(f"decision reply has no answer for question {q.id!r}")
            answers[q.id] = self._answer(q, raw[q.id])
        return answers

    def _answer(self, q: DecisionQuestion, raw: Any) -> DecisionAnswer:
        if not isinstance(raw, dict):
            raise ResponseParseError(f"answer to {q.id!r} is not an object")
        wire_type = raw.get("type")
        if wire_type == "refusal" or "refusal" in raw and wire_type is None:
            return DecisionAnswer(question_id=q.id, refused=True, refusal_reason=str(raw.get("refusal") or ""))
        expected = _WIRE_TYPES[self.endpoint_kind][q.type]
        if wire_type != expected:
            raise ResponseParseError(f"answer to {q.id!r} has type {wire_type!r}, expected {expected!r}")
        server_confidence = _optional_probability(raw.get("confidence"), q.id, what="confidence")
        if q.type == "likelihood":
            p = _probability(raw.get("noul" if expected == "noul" else "probability"), q.id)
            return DecisionAnswer(question_id=q.id, probabilities={"yes": p, "no": 1.0 - p},
                                  confidence=reference_confidence("likelihood", [p, 1.0 - p]),
                                  server_confidence=server_confidence)
        labels = list(q.options or {}) if q.type == "choice" else list(q.levels or [])
        probs = _checked(self._distribution(q, raw, labels), labels, q.id, self._sum_tolerance)
        return DecisionAnswer(question_id=q.id, probabilities=probs,
                              confidence=reference_confidence(q.type, [probs[label] for label in labels]),
                              server_confidence=server_confidence)

    _sum_tolerance = SUM_TOLERANCE

    def _distribution(self, q: DecisionQuestion, raw: dict[str, Any], labels: list[str]) -> dict[str, float]:
        raise NotImplementedError


class SystemOneFormat(_DecisionFormat):
    """``POST /systemone``: ``state`` plus questions keyed by id (noul, choice, score)."""

    endpoint_kind = "systemone"
    _path = "/systemone"

    def build_body(self, req: DecisionRequest) -> dict[str, Any]:
        questions: dict[str, Any] = {}
        for q in req.questions:
            item: dict[str, Any] = {"type": _WIRE_TYPES["systemone"][q.type], "instructions": q.instructions}
            if q.type == "choice":
                item["criteria"] = dict(q.options or {})
            elif q.type == "score":
                item["criteria"] = list(q.levels or [])
            questions[q.id] = item
        return _with_model(self.settings, {"state": req.state, "questions": questions})

    _sum_tolerance = SYSTEMONE_SUM_TOLERANCE

    def parse(self, data: Any, req: DecisionRequest) -> dict[str, Any]:
        if not isinstance(data, dict) or not isinstance(data.get("answers"), dict):
            raise ResponseParseError("systemone reply has no answers object")
        where = _non_finite(data, "reply")
        if where:
            raise ResponseParseError(f"systemone reply has a NaN or Infinity at {where} (not JSON; spec: "
                                     "response.finite)")
        asked = {q.id for q in req.questions}
        extra = [k for k in data["answers"] if k not in asked]
        if extra:
            raise ResponseParseError(f"systemone reply answers questions that were not asked: {extra[:5]}")
        return _reply_fields(data, self._answers(data["answers"], req))

    def _distribution(self, q: DecisionQuestion, raw: dict[str, Any], labels: list[str]) -> dict[str, float]:
        probs = raw.get("probabilities")
        if not isinstance(probs, dict):
            raise ResponseParseError(f"answer to {q.id!r} has no probabilities object")
        values = {str(k): _probability(v, q.id) for k, v in probs.items()}
        if q.type == "choice":
            _same_keys(q.id, "probability keys", labels, list(values), "the options asked")
            _check_sum(q.id, list(values.values()))
            _check_choice(q.id, raw, values)
            return values
        # score: keyed by level index as a string, "0".."n-1"; legend maps the same keys to the levels
        keys = [str(i) for i in range(len(labels))]
        _same_keys(q.id, "score probability keys", keys, list(values), "the level indices")
        _check_legend(q.id, raw, keys, labels)
        ordered = [values[k] for k in keys]
        _check_sum(q.id, ordered)
        _check_score(q.id, raw, ordered)
        return {labels[i]: p for i, p in enumerate(ordered)}


class DecisionsFormat(_DecisionFormat):
    """``POST /decisions``: ``input`` plus a list of named questions (predicate, choice, score)."""

    endpoint_kind = "decisions"
    _path = "/decisions"

    def build_body(self, req: DecisionRequest) -> dict[str, Any]:
        questions = []
        for q in req.questions:
            item: dict[str, Any] = {"name": q.id, "type": _WIRE_TYPES["decisions"][q.type],
                                    "instructions": q.instructions}
            if q.type == "choice":
                item["choices"] = [{"value": k, "description": v} for k, v in (q.options or {}).items()]
            elif q.type == "score":
                item["levels"] = [{"label": level} for level in (q.levels or [])]
            questions.append(item)
        text = req.state if isinstance(req.state, str) else canonical_json(req.state)
        return _with_model(self.settings, {"input": text, "questions": questions})

    def parse(self, data: Any, req: DecisionRequest) -> dict[str, Any]:
        if not isinstance(data, dict) or not isinstance(data.get("answers"), list):
            raise ResponseParseError("decisions reply has no answers list")
        by_name: dict[str, Any] = {}
        for item in data["answers"]:
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                raise ResponseParseError("decisions reply has an answer without a name")
            by_name[item["name"]] = item
        return _reply_fields(data, self._answers(by_name, req))

    def _distribution(self, q: DecisionQuestion, raw: dict[str, Any], labels: list[str]) -> dict[str, float]:
        probs = raw.get("probabilities")
        if not isinstance(probs, list):
            raise ResponseParseError(f"answer to {q.id!r} has no probabilities list")
        out = {}
        for entry in probs:
            if not isinstance(entry, dict):
                raise ResponseParseError(f"answer to {q.id!r}: probability entry is not an object")
            if q.type == "choice":
                label = str(entry.get("value"))
            else:
                index = entry.get("value")
                if not isinstance(index, int) or not 0 <= index < len(labels):
                    raise ResponseParseError(f"answer to {q.id!r}: level index {index!r} out of range")
                label = labels[index]
            out[label] = _probability(entry.get("probability"), q.id)
        return out


def _reply_fields(data: dict[str, Any], answers: dict[str, DecisionAnswer]) -> dict[str, Any]:
    return {"answers": answers,
            "usage": Usage.read(data.get("usage"), "input_tokens", "output_tokens"),
            "model_answered": data.get("model"), "request_id": data.get("id")}


def _probability(value: Any, qid: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0.0 <= float(value) <= 1.0:
        raise ResponseParseError(f"answer to {qid!r}: {value!r} is not a probability")
    return float(value)


def _optional_probability(value: Any, qid: str, what: str = "probability") -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0.0 <= float(value) <= 1.0:
        raise ResponseParseError(f"answer to {qid!r}: {what} {value!r} is not in [0, 1]")
    return float(value)


def _checked(probs: dict[str, float], labels: list[str], qid: str,
             tolerance: float = SUM_TOLERANCE) -> dict[str, float]:
    unknown = sorted(set(probs) - set(labels))
    if unknown:
        raise ResponseParseError(f"answer to {qid!r}: unknown labels {unknown}")
    total = sum(probs.values())
    if abs(total - 1.0) > tolerance:
        raise ResponseParseError(f"answer to {qid!r}: probabilities sum to {total:.3f}, not 1")
    return {label: probs.get(label, 0.0) / total for label in labels}


# ---------------------------------------------------------------- System One reply checks (spec §4)

def _rounding(values: Sequence[float]) -> float:
    """Half a unit of the coarsest decimal place (2..6) at which every value is exact; 0 if none."""
    for digits in range(2, 7):
        if all(abs(v - round(v, digits)) < 1e-7 for v in values):
            return 0.5 / 10 ** digits
    return 0.0


def _check_sum(qid: str, values: list[float]) -> None:
    r = _rounding(values)
    total = sum(values)
    over = max(SYSTEMONE_SUM_TOLERANCE, sum(1 for v in values if v > 0) * r)
    under = max(SYSTEMONE_SUM_TOLERANCE, len(values) * r)
    if total - 1.0 > over + 1e-9 or 1.0 - total > under + 1e-9:
        raise ResponseParseError(f"answer to {qid!r}: probabilities sum to {total:.3f}, not 1 "
                                 f"(spec: distribution)")


def _same_keys(qid: str, what: str, expected: list[str], got: list[str], meaning: str) -> None:
    missing = [k for k in expected if k not in got]
    unexpected = [k for k in got if k not in expected]
    if not missing and not unexpected:
        return
    hint = ""
    if unexpected:
        if {unicodedata.normalize("NFC", k) for k in unexpected} <= {unicodedata.normalize("NFC", k) for k in expected}:
            hint = "; the server changed the Unicode normalisation of the names"
        elif {k.casefold() for k in unexpected} <= {k.casefold() for k in expected}:
            hint = "; the server changed the letter case of the names"
        elif all(k.isdigit() for k in got) and sorted(got, key=int) == [str(i + 1) for i in range(len(got))]:
            hint = "; they are 1-based"
    raise ResponseParseError(f"answer to {qid!r}: {what} are not exactly {meaning}: missing {missing[:3]}, "
                             f"unexpected {unexpected[:3]}{hint}")


def _check_choice(qid: str, raw: dict[str, Any], probs: dict[str, float]) -> None:
    if "choice" not in raw:
        return
    choice = raw["choice"]
    if not isinstance(choice, str) or choice not in probs:
        raise ResponseParseError(f"answer to {qid!r}: choice {choice!r} is not one of the options")
    best = max(probs, key=probs.__getitem__)
    if probs[best] - probs[choice] > ARGMAX_TOLERANCE + _rounding(list(probs.values())):
        raise ResponseParseError(f"answer to {qid!r}: choice {choice!r} (p={probs[choice]:.3f}) is not the most "
                                 f"probable option {best!r} (p={probs[best]:.3f}) (spec: choice.argmax)")


def _check_legend(qid: str, raw: dict[str, Any], keys: list[str], levels: list[str]) -> None:
    if "legend" not in raw:
        return
    legend = raw["legend"]
    if not isinstance(legend, dict):
        raise ResponseParseError(f"answer to {qid!r}: legend is not an object")
    _same_keys(qid, "legend keys", keys, [str(k) for k in legend], "the level indices")
    for key in keys:
        if legend[key] != levels[int(key)]:
            raise ResponseParseError(f"answer to {qid!r}: legend[{key!r}] is {legend[key]!r}, but level {key} "
                                     f"asked was {levels[int(key)]!r}")


def _check_score(qid: str, raw: dict[str, Any], ordered: list[float]) -> None:
    if "score" not in raw:
        return
    score = raw["score"]
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        raise ResponseParseError(f"answer to {qid!r}: score {score!r} is not a number")
    n = len(ordered)
    expected = sum(i * p for i, p in enumerate(ordered))
    tolerance = SCORE_TOLERANCE + _rounding(ordered) * (1 + n * (n - 1) / 2)
    if abs(float(score) - expected) > tolerance + 1e-9:
        raise ResponseParseError(f"answer to {qid!r}: score {score!r} is not the expectation {expected:.3f} of its "
                                 f"probabilities (spec: score.expectation)")


def _non_finite(value: Any, path: str) -> str | None:
    """The path of the first NaN or Infinity in a parsed JSON value, or None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else path
    if isinstance(value, dict):
        for key, item in value.items():
            found = _non_finite(item, f"{path}.{key}")
            if found:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = _non_finite(item, f"{path}[{index}]")
            if found:
                return found
    return None
