"""The one price source: what a model call cost in USD, or None when nobody knows.

Prices come from pydantic's ``genai-prices`` package, from the data bundled with the installed
version only: its updater (``UpdatePrices``) is never started, so a cost never depends on the
network or on the day a run happened to download a table, and an upgrade of the package is the
one way prices change. The config's ``providers.prices`` (per model name: input and output USD per
million tokens) overrides the library, and is the way to price a model it does not know. A model
neither knows costs ``None``, never 0; so does a call whose token counts are unknown.

Every provider client prices its replies here (``endpoint_cost_usd``), so both judges' ledgers, the
batch summaries and ``oracle compare`` read one figure per call. For a cost outside a client::

    from oracle.providers.prices import cost_usd
    cost_usd("openai", "gpt-4o-mini", 1200, 300)          # float, from the bundled price table
    cost_usd(None, "gpt-4o-mini", 1200, 300)              # provider found from the model name
    cost_usd("openai", "my-model", 1200, 300, overrides={"my-model": Price(...)})

Which provider's price list an endpoint's call is read from: ``ProviderSettings.price_provider``
when set (a genai-prices provider id: "openai", "anthropic", "openrouter", "groq", ...); else the
provider whose API the base URL names (api.openai.com, api.anthropic.com, openrouter.ai, ...);
else the model name alone (a proxy passing hosted models through). A server on this machine is
self-hosted as far as we can tell: it has no price unless ``providers.prices`` names the model.

The library loads its table (about half a second) on the first priced call, never at import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from oracle.config.model import Price, ProviderSettings

__all__ = ["cost_usd", "endpoint_cost_usd", "library_cost_usd"]


def cost_usd(provider: str | None, model: str | None, input_tokens: int | None, output_tokens: int | None,
             *, overrides: Mapping[str, Price] | None = None, api_url: str | None = None) -> float | None:
    """USD for one call of ``model`` with these token counts; None when unknown (never 0).

    ``provider``: a genai-prices provider id, or None to find it from ``api_url`` (a provider's API
    base URL) and then from the model name. ``overrides`` (model name -> ``Price``) win over the
    library.
    """
    if model is None or input_tokens is None or output_tokens is None:
        return None
    override = (overrides or {}).get(model)
    if override is not None:
        return (input_tokens * override.input_per_mtok + output_tokens * override.output_per_mtok) / 1e6
    if provider is not None:
        return library_cost_usd(model, input_tokens, output_tokens, provider_id=provider)
    if api_url is not None:
        found = library_cost_usd(model, input_tokens, output_tokens, provider_api_url=api_url)
        if found is not None:
            return found
    return library_cost_usd(model, input_tokens, output_tokens)


def endpoint_cost_usd(settings: ProviderSettings, model: str | None, input_tokens: int | None,
                      output_tokens: int | None, overrides: Mapping[str, Price] | None) -> float | None:
    """The cost of one call to the endpoint ``settings`` describes (see the module docstring)."""
    from oracle.config.model import is_loopback

    if model is None or input_tokens is None or output_tokens is None:
        return None
    if model not in (overrides or {}) and settings.price_provider is None and is_loopback(settings.base_url):
        return None                                   # self-hosted: no list price applies
    return cost_usd(settings.price_provider, model, input_tokens, output_tokens, overrides=overrides,
                    api_url=settings.base_url)


def library_cost_usd(model: str, input_tokens: int, output_tokens: int, **where: Any) -> float | None:
    """genai-prices' own figure from its bundled data (``where``: ``provider_id`` or
    ``provider_api_url``, or nothing to match the model name); None when it has no price."""
    from genai_prices import Usage, calc_price

    try:
        price = calc_price(Usage(input_tokens=input_tokens, output_tokens=output_tokens), model, **where)
    except (LookupError, ValueError):
        return None
    return float(price.total_price)
