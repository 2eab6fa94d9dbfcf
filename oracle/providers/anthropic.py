"""Anthropic Messages (``POST {base_url}/messages``): pure translation, no I/O.

The Messages API has no logprobs, no seed and no JSON-schema response format; the capability
record says so, and ``sampling_applied`` in the provenance drops them, so an evaluator can see that a
seed it asked for was not honoured instead of assuming reproducibility. System messages are
joined into the top-level ``system`` field, as the API requires.
"""

from __future__ import annotations

from typing import Any

from oracle.config.model import ProviderSettings
from oracle.errors import ResponseParseError
from oracle.providers.openai_chat import requested_sampling
from oracle.providers.types import Capabilities, ChatReply, ChatRequest, Usage

ANTHROPIC_VERSION = "2023-06-01"


class AnthropicMessagesFormat:
    """Wire format of ``/v1/messages``."""

    endpoint_kind = "anthropic_messages"
    reply_type = ChatReply

    def __init__(self, settings: ProviderSettings) -> None:
        self.settings = settings

    def url(self) -> str:
        return self.settings.base_url.rstrip("/") + "/messages"

    def headers(self, api_key: str | None) -> dict[str, str]:
        headers = {"content-type": "application/json", "anthropic-version": ANTHROPIC_VERSION,
                   **self.settings.headers}
        if api_key:
            headers["x-api-key"] = api_key
        return headers

    def capabilities(self) -> Capabilities:
        return Capabilities(logprobs=False, max_top_logprobs=0, seed=False, structured_output="none",
                            native_decisions=False)

    def build_body(self, req: ChatRequest) -> dict[str, Any]:
        system = "\n\n".join(m.content for m in req.messages if m.role == "system")
        body: dict[str, Any] = {
            "model": self.settings.model,
            "max_tokens": req.max_tokens,
            "temperature": req.temperature,
            "messages": [{"role": m.role, "content": m.content}
                         for m in req.messages if m.role != "system"],
        }
        if system:
            body["system"] = system
        if req.stop:
            body["stop_sequences"] = list(req.stop)
        return body

    def sampling(self, req: ChatRequest) -> tuple[dict[str, Any], dict[str, Any]]:
        requested = requested_sampling(req)
        applied = {k: v for k, v in requested.items() if k not in ("seed", "logprobs", "top_logprobs")}
        if "json_schema" in applied:
            applied["json_schema"] = False
        return requested, applied

    def parse(self, data: Any, req: ChatRequest) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise ResponseParseError(f"messages reply is not a JSON object: {type(data).__name__}")
        content = data.get("content")
        if not isinstance(content, list):
            raise ResponseParseError("messages reply has no content list")
        text = "".join(str(block.get("text", "")) for block in content
                       if isinstance(block, dict) and block.get("type") == "text")
        return {
            "text": text,
            "logprobs": None,
            "finish_reason": data.get("stop_reason"),
            "usage": Usage.read(data.get("usage"), "input_tokens", "output_tokens"),
            "model_answered": data.get("model"),
            "request_id": data.get("id"),
        }
