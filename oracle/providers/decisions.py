"""Native decision endpoints, both wire formats, behind the one internal Decision* model.

No public spec was at hand when this was written; the shapes follow the publicly documented style
of each family (typed questions answered with a probability per option) and are pinned here.

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
"""

from __future__ import annotations

import math
from typing import Any

from oracle._canonical import canonical_json
from oracle.config import ProviderSettings
from oracle.errors import ResponseParseError
from oracle.providers._core import bearer_headers
from oracle.providers.types import (Capabilities, DecisionAnswer, DecisionQuestion, DecisionReply,
                                    DecisionRequest, Usage)

SUM_TOLERANCE = 0.02
"""Probabilities off 1 by more than this are a broken reply, not rounding."""

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
        if q.type == "likelihood":
            p = _probability(raw.get("noul" if expected == "noul" else "probability"), q.id)
            return DecisionAnswer(question_id=q.id, probabilities={"yes": p, "no": 1.0 - p},
                                  confidence=_optional_probability(raw.get("confidence"), q.id))
        labels = list(q.options or {}) if q.type == "choice" else list(q.levels or [])
        probs = self._distribution(q, raw, labels)
        return DecisionAnswer(question_id=q.id, probabilities=_checked(probs, labels, q.id),
                              confidence=_optional_probability(raw.get("confidence"), q.id))

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
        return {"model": self.settings.model, "state": req.state, "questions": questions}

    def parse(self, data: Any, req: DecisionRequest) -> dict[str, Any]:
        if not isinstance(data, dict) or not isinstance(data.get("answers"), dict):
            raise ResponseParseError("systemone reply has no answers object")
        return _reply_fields(data, self._answers(data["answers"], req))

    def _distribution(self, q: DecisionQuestion, raw: dict[str, Any], labels: list[str]) -> dict[str, float]:
        probs = raw.get("probabilities")
        if not isinstance(probs, dict):
            raise ResponseParseError(f"answer to {q.id!r} has no probabilities object")
        if q.type == "choice":
            return {str(k): _probability(v, q.id) for k, v in probs.items()}
        out = {}
        for index, value in probs.items():  # score: keyed by level index as a string
            try:
                label = labels[int(index)]
            except (ValueError, IndexError):
                raise ResponseParseError(f"answer to {q.id!r}: level index {index!r} out of range") from None
            out[label] = _probability(value, q.id)
        return out


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
        return {"model": self.settings.model, "input": text, "questions": questions}

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


def _optional_probability(value: Any, qid: str) -> float | None:
    return None if value is None else _probability(value, qid)


def _checked(probs: dict[str, float], labels: list[str], qid: str) -> dict[str, float]:
    unknown = sorted(set(probs) - set(labels))
    if unknown:
        raise ResponseParseError(f"answer to {qid!r}: unknown labels {unknown}")
    total = sum(probs.values())
    if abs(total - 1.0) > SUM_TOLERANCE:
        raise ResponseParseError(f"answer to {qid!r}: probabilities sum to {total:.3f}, not 1")
    return {label: probs.get(label, 0.0) / total for label in labels}
