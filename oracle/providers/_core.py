"""What every client does around the wire, written once: prepare, cache, account, build provenance.

A client is a wire format (pure: build body, parse reply) plus this core plus a sync or async
driver from ``_http.py``. The core never touches the network; it turns a request into the bytes
to send and a parsed reply into the typed reply with usage, cost and provenance.

Capabilities are learned from replies, once per client (one endpoint and model; a provider pool
shares one client per endpoint among every evaluation it serves). An OpenAI-compatible server that
answers a request for logprobs without them has said it does not offer them: the reply is kept (it
is a valid answer, and not retried: asking again gets the same answer), ``capabilities.logprobs``
turns False, and later requests on this client no longer ask (``sampling_applied`` says so).
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from typing import Any, Callable, Protocol, cast

import httpx
from pydantic import ValidationError

from oracle._internal.log import get_logger

from oracle.config.model import Price, ProviderSettings
from oracle.errors import ResponseParseError
from oracle.providers.prices import endpoint_cost_usd
from oracle.providers._cache import ResponseCache, cache_key
from oracle.providers._http import Delivered, Flow, call_flow
from oracle.providers._retry import RetryPolicy
from oracle.providers.types import Capabilities, EndpointKind, Provenance, Usage

_REQUEST_ID_HEADERS = ("x-request-id", "request-id", "openai-request-id", "x-amzn-requestid")
log = get_logger("oracle.providers")


class WireFormat(Protocol):
    """A pure translator between the internal request/reply models and one endpoint's JSON."""

    @property
    def endpoint_kind(self) -> str: ...
    @property
    def reply_type(self) -> type[Any]: ...

    def url(self) -> str: ...
    def headers(self, api_key: str | None) -> dict[str, str]: ...
    def capabilities(self) -> Capabilities: ...
    def build_body(self, req: Any) -> dict[str, Any]: ...
    def sampling(self, req: Any) -> tuple[dict[str, Any], dict[str, Any]]: ...
    def parse(self, data: Any, req: Any) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Prepared:
    """One request ready to send; ``key`` addresses the response cache."""

    url: str
    body: dict[str, Any]
    content: bytes
    headers: dict[str, str]
    key: str
    sent: Any
    """The request as sent: the caller's, less what this endpoint is known not to offer."""


def bearer_headers(settings: ProviderSettings, api_key: str | None) -> dict[str, str]:
    """JSON content type, the configured extra headers, and a bearer token when a key is set."""
    headers = {"content-type": "application/json", **settings.headers}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    return headers


def as_hit(reply: Any) -> Any:
    """``reply`` as the cache hands it out: the same reply, ``provenance.cached`` True."""
    return reply.model_copy(update={"provenance": reply.provenance.model_copy(update={"cached": True})})


class ClientCore:
    """Settings, wire format, cache and accounting shared by a sync and an async client."""

    def __init__(self, settings: ProviderSettings, wire: WireFormat, *, prices: dict[str, Price] | None,
                 clock: Callable[[], float] = time.monotonic, rng: random.Random | None = None) -> None:
        self.settings = settings
        self.wire = wire
        self.prices = prices
        self.clock = clock
        self.rng = rng or random.Random()
        self.policy = RetryPolicy(settings.max_retries, settings.backoff_base_s, settings.backoff_max_s)
        self._declared: Capabilities = wire.capabilities()
        self.capabilities: Capabilities = self._declared
        """What the endpoint supports: the wire format's declaration, narrowed by what replies taught."""
        self.cache = ResponseCache(settings.cache_path) if settings.cache_path else None

    def learn_no_logprobs(self) -> None:
        """The server answered a request for logprobs without them: stop asking (once per client)."""
        if not self.capabilities.logprobs:
            return
        self.capabilities = self.capabilities.model_copy(update={"logprobs": False, "max_top_logprobs": 0})
        log.info("capability_learned", capability="logprobs", supported=False,
                 endpoint=self.wire.endpoint_kind, base_url=self.settings.base_url, model=self.settings.model)

    def adapt(self, req: Any) -> Any:
        """The request to send: logprobs are not asked of an endpoint known not to return them."""
        if getattr(req, "logprobs", False) and not self.capabilities.logprobs and self._declared.logprobs:
            return req.model_copy(update={"logprobs": False, "top_logprobs": None})
        return req

    def prepare(self, req: Any) -> Prepared:
        sent = self.adapt(req)
        body = self.wire.build_body(sent)
        url = self.wire.url()
        # The key is read from the environment per call, so a rotated key needs no rebuild; it lives
        # only in this header dict, which is never logged, cached or put into provenance.
        headers = self.wire.headers(self.settings.resolved_api_key())
        content = json.dumps(body, ensure_ascii=False).encode("utf-8")
        key = cache_key(self.wire.endpoint_kind, url, body, getattr(req, "cache_salt", None))
        return Prepared(url, body, content, headers, key, sent)

    def cached(self, prepared: Prepared) -> Any | None:
        """The stored reply, whole (text, usage, logprobs, the cost first paid), marked ``cached``.

        An entry that no longer reads as this reply type (another version wrote it) is a miss: the
        call is made and its reply replaces the entry."""
        if self.cache is None:
            return None
        hit = self.cache.get(prepared.key)
        if hit is None:
            return None
        try:
            reply = self.wire.reply_type.model_validate_json(hit)
        except ValidationError as exc:
            log.warning("cache_entry_unreadable", path=str(self.cache.path), endpoint=self.wire.endpoint_kind,
                        error=str(exc).splitlines()[0])
            return None
        return as_hit(reply)

    def flow(self, prepared: Prepared) -> Flow:
        def parse(response: httpx.Response) -> dict[str, Any]:
            try:
                data = response.json()
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise ResponseParseError(f"reply is not valid JSON: {exc}") from None
            return self.wire.parse(data, prepared.sent)

        return call_flow(parse, policy=self.policy, timeout_s=self.settings.timeout_s,
                         deadline_s=self.settings.deadline_s, clock=self.clock, rng=self.rng,
                         label={"endpoint": self.wire.endpoint_kind, "base_url": self.settings.base_url,
                                "model": self.settings.model})

    def finish(self, req: Any, prepared: Prepared, delivered: Delivered) -> Any:
        """The typed reply; latency counts from the first send, so queueing for a slot is excluded."""
        fields = dict(delivered.value)
        model_answered = fields.pop("model_answered", None)
        body_request_id = fields.pop("request_id", None)
        logprobs_missing = bool(fields.pop("logprobs_missing", False))
        headers = delivered.response.headers
        request_id = next((headers[h] for h in _REQUEST_ID_HEADERS if h in headers), None) or body_request_id
        requested = self.wire.sampling(req)[0]
        applied = self.wire.sampling(prepared.sent)[1]
        if logprobs_missing:
            self.learn_no_logprobs()
            applied = {k: v for k, v in applied.items() if k != "top_logprobs"}
        if requested.get("logprobs") and (logprobs_missing or not applied.get("logprobs")):
            applied["logprobs"] = False                 # asked, and not given (this time or before)
        provenance = Provenance(
            endpoint_kind=cast(EndpointKind, self.wire.endpoint_kind), base_url=self.settings.base_url,
            model_requested=self.settings.model,
            model_answered=model_answered if isinstance(model_answered, str) else None,
            request_id=str(request_id) if request_id is not None else None,
            latency_ms=round((self.clock() - (delivered.sent_at or self.clock())) * 1000, 3),
            attempts=delivered.attempts,
            sampling_requested=requested, sampling_applied=applied)
        usage: Usage = fields["usage"]
        cost = None
        for model in dict.fromkeys((self.settings.model, provenance.model_answered)):  # requested, then answered
            cost = endpoint_cost_usd(self.settings, model, usage.input_tokens, usage.output_tokens, self.prices)
            if cost is not None:
                break
        reply = self.wire.reply_type(**fields, cost_usd=cost, provenance=provenance)
        if self.cache is not None:
            self.cache.put(prepared.key, self.wire.endpoint_kind, reply.model_dump_json())
        return reply

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()
