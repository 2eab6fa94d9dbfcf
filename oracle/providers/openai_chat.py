"""OpenAI-compatible chat completions (OpenAI, vLLM, llama.cpp, Ollama /v1, OpenRouter, LiteLLM).

Pure translation, no I/O: ``ChatRequest`` -> JSON body for ``POST {base_url}/chat/completions``, and
the reply JSON -> the fields of a ``ChatReply``. Many compatible servers ignore ``logprobs``: a reply
without them is still a reply, flagged ``logprobs_missing`` for the client core to learn from. Structured output is sent
in the dialect the
settings name (see ``ProviderSettings.structured_output``): the OpenAI ``json_schema`` form, or
llama-cpp-python's ``{"type": "json_object", "schema": ...}``, which is the only form its server
accepts and the one the embedded local model needs.
"""

from __future__ import annotations

from typing import Any

from oracle.config.model import LOCAL_MODEL_ALIAS, ProviderSettings
from oracle.errors import ResponseParseError
from oracle.providers._core import bearer_headers
from oracle.providers.types import Capabilities, ChatRequest, ChatReply, TokenLogprob, Usage

MAX_TOP_LOGPROBS = 20


def structured_dialect(settings: ProviderSettings) -> str:
    """Resolve ``structured_output='auto'``: llama-cpp-python form for the embedded model."""
    if settings.structured_output != "auto":
        return settings.structured_output
    return "json_object_schema" if settings.model == LOCAL_MODEL_ALIAS else "json_schema"


class OpenAIChatFormat:
    """Wire format of ``/chat/completions``."""

    endpoint_kind = "openai_chat"
    reply_type = ChatReply

    def __init__(self, settings: ProviderSettings) -> None:
        self.settings = settings
        self.dialect = structured_dialect(settings)

    def url(self) -> str:
        return self.settings.base_url.rstrip("/") + "/chat/completions"

    def headers(self, api_key: str | None) -> dict[str, str]:
        return bearer_headers(self.settings, api_key)

    def capabilities(self) -> Capabilities:
        return Capabilities(logprobs=True, max_top_logprobs=MAX_TOP_LOGPROBS, seed=True,
                            structured_output="none" if self.dialect == "none" else "json_schema",
                            native_decisions=False)

    def build_body(self, req: ChatRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.settings.model,
            "messages": [m.model_dump() for m in req.messages],
            "temperature": req.temperature,
            "max_tokens": req.max_tokens,
        }
        if req.seed is not None:
            body["seed"] = req.seed
        if req.logprobs:
            body["logprobs"] = True
            if req.top_logprobs is not None:
                body["top_logprobs"] = min(req.top_logprobs, MAX_TOP_LOGPROBS)
        if req.stop:
            body["stop"] = list(req.stop)
        if req.json_schema is not None and self.dialect != "none":
            if self.dialect == "json_object_schema":
                body["response_format"] = {"type": "json_object", "schema": req.json_schema}
            else:
                body["response_format"] = {"type": "json_schema", "json_schema": {
                    "name": "reply", "schema": req.json_schema, "strict": True}}
        return body

    def sampling(self, req: ChatRequest) -> tuple[dict[str, Any], dict[str, Any]]:
        """(requested, applied): what the caller asked for and what this endpoint is sent."""
        requested = requested_sampling(req)
        applied = dict(requested)
        if "top_logprobs" in applied:
            applied["top_logprobs"] = min(applied["top_logprobs"], MAX_TOP_LOGPROBS)
        if "json_schema" in applied and self.dialect == "none":
            applied["json_schema"] = False
        return requested, applied

    def parse(self, data: Any, req: ChatRequest) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise ResponseParseError(f"chat reply is not a JSON object: {type(data).__name__}")
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise ResponseParseError("chat reply has no choices")
        choice = choices[0]
        message = choice.get("message")
        if not isinstance(message, dict):
            raise ResponseParseError("chat reply choice has no message")
        text = message.get("content")
        if text is None:
            text = ""
        if not isinstance(text, str):
            raise ResponseParseError("chat reply message content is not a string")
        logprobs = _parse_logprobs(choice.get("logprobs")) if req.logprobs else None
        return {
            "text": text,
            "logprobs": logprobs,
            # Asked for and not sent: the server's answer about a capability, not a broken reply
            # (retrying gets the same answer). The client core learns it; the reply stands.
            "logprobs_missing": bool(req.logprobs) and logprobs is None,
            "finish_reason": choice.get("finish_reason"),
            "usage": Usage.read(data.get("usage"), "prompt_tokens", "completion_tokens"),
            "model_answered": data.get("model"),
            "request_id": data.get("id"),
        }


def requested_sampling(req: ChatRequest) -> dict[str, Any]:
    requested: dict[str, Any] = {"temperature": req.temperature, "max_tokens": req.max_tokens}
    if req.seed is not None:
        requested["seed"] = req.seed
    if req.logprobs:
        requested["logprobs"] = True
        if req.top_logprobs is not None:
            requested["top_logprobs"] = req.top_logprobs
    if req.json_schema is not None:
        requested["json_schema"] = True
    return requested


def _parse_logprobs(raw: Any) -> list[TokenLogprob] | None:
    """OpenAI ``logprobs.content``: one entry per generated token with its top alternatives."""
    if not isinstance(raw, dict) or not isinstance(raw.get("content"), list):
        return None
    out = []
    for item in raw["content"]:
        top = {str(t["token"]): float(t["logprob"]) for t in (item.get("top_logprobs") or [])}
        out.append(TokenLogprob(token=str(item["token"]), logprob=float(item["logprob"]), top=top))
    return out
