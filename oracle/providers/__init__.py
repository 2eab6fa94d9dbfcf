"""Model access: thin httpx clients for chat and native decision endpoints, sync and async.

Build clients from a ``ProviderSettings`` (``oracle.config.model``)::

    client = make_async_chat_client(config.providers.judge, prices=config.providers.prices)
    reply = await client.complete(ChatRequest(messages=[...], logprobs=True, top_logprobs=5))
    await client.aclose()

    deciders = make_async_decision_client(config.providers.decision)   # kind decisions / systemone
    reply = await deciders.decide(DecisionRequest(state=..., questions=[...]))
    reply.answers["q1"].probabilities            # keyed by question id; refusals have refused=True

Sync twins: ``make_chat_client(...).complete(req)`` and ``make_decision_client(...).decide(req)``,
closed with ``close()``. On the async clients the methods have the same names (``complete``,
``decide``) and are awaited; close with ``await aclose()`` (or ``async with``).

Every call has a per-attempt timeout and an optional overall deadline, retries 429/5xx/connection
errors/unreadable bodies with jittered exponential backoff honouring Retry-After, and is limited
to ``settings.concurrency`` in flight per client. Failures raise ``oracle.errors.ProviderError``
subclasses (``ProviderTimeout``, ``RateLimited``, ``ProviderHTTPError``, ``ResponseParseError``;
a connection that keeps failing raises ``ProviderError`` itself, and one refused at a loopback
address, where nothing listens, ``EndpointUnreachable`` at once, without retries) carrying ``attempts``, ``status``
and a body excerpt; nothing else escapes. ``client.capabilities`` says what the endpoint supports
(logprobs, seed, structured output, native decisions), narrowed by what its replies taught: a
server that ignores ``logprobs`` answers without them once, the reply stands (never retried) and the
client stops asking. Replies carry usage, ``cost_usd`` (``oracle.providers.prices``; None when no price is
known) and ``provenance``. API keys come from ``api_key_env``/``api_key`` and are never logged,
cached or traced.

Public modules: this package, ``clients``, ``pool`` (``ProviderPool``), ``types``, the wire formats
``openai_chat``, ``anthropic`` and ``decisions``, ``prices``, and ``budget`` (``Budget``: a ceiling on
requests and USD, checked before each request); the ``_`` modules (HTTP transport,
retries, the response cache, body reading, the shared client core) are private.

Names are imported on first use (module ``__getattr__``): the provider pool an ``Oracle`` holds
(``oracle.providers.pool``) is importable without httpx, which loads with the first client.
"""

import typing as _typing
from importlib import import_module as _import_module

__all__ = [
    "AsyncChatClient", "AsyncDecisionClient", "ChatClient", "DecisionClient",
    "make_async_chat_client", "make_async_decision_client", "make_chat_client", "make_decision_client",
    "LOCAL_MODEL_ALIAS",
    "Capabilities", "ChatMessage", "ChatReply", "ChatRequest", "DecisionAnswer", "DecisionQuestion",
    "DecisionReply", "DecisionRequest", "Provenance", "TokenLogprob", "Usage",
]

_WHERE = {name: "oracle.providers.clients" for name in __all__[:8]}
_WHERE["LOCAL_MODEL_ALIAS"] = "oracle.providers.openai_chat"
_WHERE.update({name: "oracle.providers.types" for name in __all__[9:]})

if _typing.TYPE_CHECKING:
    from oracle.providers.clients import (AsyncChatClient, AsyncDecisionClient, ChatClient, DecisionClient,
                                          make_async_chat_client, make_async_decision_client,
                                          make_chat_client, make_decision_client)
    from oracle.providers.openai_chat import LOCAL_MODEL_ALIAS
    from oracle.providers.types import (Capabilities, ChatMessage, ChatReply, ChatRequest, DecisionAnswer,
                                        DecisionQuestion, DecisionReply, DecisionRequest, Provenance,
                                        TokenLogprob, Usage)


def __getattr__(name: str) -> _typing.Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'oracle.providers' has no attribute {name!r}")
    value = getattr(_import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
