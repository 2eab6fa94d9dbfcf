"""Budgets: a ceiling on the model requests and the cost of one run, checked before every request.

Why: a judge's spend was reported after the fact and never bounded; a batch of ten thousand rows
against a paid model is one typo away from a large bill. A ``Budget(max_cost_usd, max_calls)`` is
shared by every client of one run (a ``ProviderPool`` owns it; ``using(budget)`` scopes one to a
block, e.g. one evaluation or one ``oracle serve`` request), and both apply when both are set.

The rules, in one place:

- Every HTTP request asks first: each attempt of a call, retries included (a retry is a request).
  One more request must fit ``max_calls``, and its estimated cost must fit what is left of
  ``max_cost_usd`` after what was spent and what requests in flight hold. Otherwise the request is
  not sent and the call raises ``BudgetExhausted``. Reserve-then-settle under one lock: requests in
  flight together can never overshoot together.
- The estimate is an upper bound, so a cost budget is never exceeded: input tokens = the request
  body's UTF-8 bytes (a token of a byte-level tokenizer covers at least one byte of the text, and
  the body holds the prompt plus JSON's own overhead, more than a chat template adds; no
  tokenizer: each model has its own, and tiktoken fetches its tables from the network on first
  use), output tokens = the request's ``max_tokens`` (a decision request: 16 per question), priced
  by the one price table (oracle/providers/prices.py). The price of that guarantee: a run may stop
  with up to the estimate's surplus of its budget unspent.
- Settled after the reply: charged its actual cost (not the estimate); 0 when the server answered
  with an error status or no connection was made; the estimate when the cost cannot be known (a
  timeout, an unreadable 2xx, a cancelled request: the provider may have billed it).
- A cache hit never reaches the budget: the response cache is read before it is asked (the ledger
  reports the hit's original cost apart).
- A cost budget over a model whose price is unknown is refused before any call
  (``check_prices``, naming the model and the config field); at request time such a request is
  refused too.

An evaluation whose call hit the budget ends ``skipped`` with reason ``budget`` (the Oracle sees it
through ``watch()``), keeping the calls and cost it spent: never a verdict from half its calls.
"""

from __future__ import annotations

import math
import threading
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Literal, Mapping, Sequence

from oracle.errors import ConfigError, OracleError

if TYPE_CHECKING:
    from oracle.config.model import OracleConfig, Price, ProviderSettings

__all__ = ["Budget", "BudgetExhausted", "check_prices", "estimate_tokens", "using", "watch"]

BYTES_PER_TOKEN = 1
"""Bytes of the request body per estimated input token: 1 is the upper bound (see above)."""
DECISION_TOKENS_PER_QUESTION = 16
SKIP_REASON = "budget"
"""The ``reason`` of a result not run (or not run to the end) because the budget was spent."""


class BudgetExhausted(OracleError):
    """A request was not sent: it would have exceeded ``max_calls`` or ``max_cost_usd``.

    Not a ``ProviderError``: nothing failed at the provider, and a judge must not treat it as one
    candidate's fault and carry on with the others."""

    def __init__(self, message: str, *, limit: Literal["max_calls", "max_cost_usd"]) -> None:
        self.limit = limit
        super().__init__(message)


class Budget:
    """Limits on model requests (``max_calls``) and USD (``max_cost_usd``) for one run; None: no limit.

    Live: ``calls`` (requests sent), ``spent_usd`` (settled cost), ``refused`` (requests not sent)
    count up as the run goes. Thread-safe; share one object between the clients of a run."""

    def __init__(self, max_cost_usd: float | None = None, max_calls: int | None = None) -> None:
        if max_cost_usd is not None and (isinstance(max_cost_usd, bool) or not isinstance(max_cost_usd, (int, float))
                                         or not math.isfinite(max_cost_usd) or max_cost_usd < 0):
            raise ConfigError(f"max_cost_usd: must be a finite number of USD, 0 or more (got {max_cost_usd!r})")
        if max_calls is not None and (isinstance(max_calls, bool) or not isinstance(max_calls, int) or max_calls < 0):
            raise ConfigError(f"max_calls: must be a whole number of requests, 0 or more (got {max_calls!r})")
        self.max_cost_usd = None if max_cost_usd is None else float(max_cost_usd)
        self.max_calls = max_calls
        self.calls = 0
        self.spent_usd = 0.0
        self.refused = 0
        self._held_usd = 0.0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (f"Budget(max_cost_usd={self.max_cost_usd!r}, max_calls={self.max_calls!r}; "
                f"calls={self.calls}, spent_usd={self.spent_usd:.6g})")

    @property
    def limits_cost(self) -> bool:
        return self.max_cost_usd is not None

    def as_dict(self) -> dict[str, Any]:
        """The limits and what was used (for a report or a response)."""
        with self._lock:
            return {"max_cost_usd": self.max_cost_usd, "max_calls": self.max_calls, "calls": self.calls,
                    "cost_usd": round(self.spent_usd, 9), "refused": self.refused}

    def reserve(self, estimate_usd: float | None, model: str | None) -> _Hold:
        """Admit one request (its call counted, its estimate held) or raise ``BudgetExhausted``."""
        with self._lock:
            if self.max_calls is not None and self.calls + 1 > self.max_calls:
                self.refused += 1
                raise BudgetExhausted(f"budget: max_calls={self.max_calls} reached ({self.calls} requests sent); "
                                      "the next request was not sent", limit="max_calls")
            held = 0.0
            if self.max_cost_usd is not None:
                if estimate_usd is None:
                    self.refused += 1
                    raise BudgetExhausted(f"budget: the price of model {model!r} is unknown, so a request to it "
                                          f"cannot be held to max_cost_usd={self.max_cost_usd:g}; give it a "
                                          "price in providers.prices", limit="max_cost_usd")
                if self.spent_usd + self._held_usd + estimate_usd > self.max_cost_usd:
                    self.refused += 1
                    raise BudgetExhausted(
                        f"budget: max_cost_usd={self.max_cost_usd:g} would be exceeded (spent "
                        f"{self.spent_usd:.6g}, in flight {self._held_usd:.6g}, this request estimated "
                        f"{estimate_usd:.6g} USD for {model}); the request was not sent", limit="max_cost_usd")
                held = estimate_usd
            self.calls += 1
            self._held_usd += held
            return _Hold(self, held)

    def _settle(self, hold: _Hold, cost_usd: float | None, sent: bool) -> None:
        with self._lock:
            self._held_usd = max(0.0, self._held_usd - hold.held)
            if not sent:
                self.calls -= 1
                return
            self.spent_usd += hold.held if cost_usd is None else cost_usd


@dataclass
class _Hold:
    """One admitted request's claim on a budget, until it is settled (once)."""

    budget: Budget
    held: float
    done: bool = False

    def settle(self, cost_usd: float | None, *, sent: bool = True) -> None:
        """Charge ``cost_usd`` (None: the estimate held); ``sent=False`` gives the request back."""
        if not self.done:
            self.done = True
            self.budget._settle(self, cost_usd, sent)


_SCOPED: ContextVar[tuple[Budget, ...]] = ContextVar("oracle_budgets", default=())
_WATCH: ContextVar[Watch | None] = ContextVar("oracle_budget_watch", default=None)


class Watch:
    """What the requests of one block did with the budgets: refusals (``trips``), requests sent
    (``calls``) and their charged cost (``cost_usd``; None once one charge is unknown). A refused
    call never reaches a judge's ledger, nor do sibling calls cancelled in flight; these counts do."""

    def __init__(self) -> None:
        self.trips: list[BudgetExhausted] = []
        self.calls = 0
        self.cost_usd: float | None = 0.0

    def charge(self, cost_usd: float | None) -> None:
        self.cost_usd = None if (cost_usd is None or self.cost_usd is None) else self.cost_usd + cost_usd


@contextmanager
def using(budget: Budget | None) -> Iterator[Budget | None]:
    """Apply ``budget`` to every request made in this block (and the tasks it starts), on top of
    any budget already in force."""
    if budget is None:
        yield None
        return
    token = _SCOPED.set((*_SCOPED.get(), budget))
    try:
        yield budget
    finally:
        _SCOPED.reset(token)


@contextmanager
def watch() -> Iterator[Watch]:
    """Watch the requests made in this block (the tasks it starts share the ``Watch``): how the
    Oracle knows an evaluation hit its budget, whatever the evaluator did with the error."""
    seen = Watch()
    token = _WATCH.set(seen)
    try:
        yield seen
    finally:
        _WATCH.reset(token)


def in_force(own: Budget | None) -> tuple[Budget, ...]:
    """The budgets a request must fit: the client's pool's, then the scoped ones (no repeats)."""
    scoped = _SCOPED.get()
    if own is None:
        return scoped
    return scoped if own in scoped else (own, *scoped)


def estimate_tokens(content: bytes, request: Any) -> tuple[int, int]:
    """(input, output) tokens a request may use at most: body bytes, and ``max_tokens`` (see above)."""
    questions = getattr(request, "questions", None)
    out = getattr(request, "max_tokens", None)
    if not isinstance(out, int):
        out = DECISION_TOKENS_PER_QUESTION * len(questions or ()) or DECISION_TOKENS_PER_QUESTION
    return -(-len(content) // BYTES_PER_TOKEN), out


class Meter:
    """One logical call's dealings with the budgets in force: each attempt is admitted first, and
    what it held is settled when its outcome is known (see the module docstring)."""

    def __init__(self, budgets: Sequence[Budget], estimate_usd: float | None, model: str | None) -> None:
        self.budgets = tuple(budgets)
        self.estimate_usd = estimate_usd
        self.model = model
        self._holds: list[_Hold] = []
        self._watch = _WATCH.get()

    def before_send(self) -> None:
        """Admit the next attempt, or raise ``BudgetExhausted`` (nothing sent, nothing held)."""
        if not self.budgets:
            return
        self._settle(None)  # an earlier attempt still open (a timeout, an unreadable 2xx): its estimate
        holds: list[_Hold] = []
        try:
            for budget in self.budgets:
                holds.append(budget.reserve(self.estimate_usd, self.model))
        except BudgetExhausted as exc:
            for hold in holds:
                hold.settle(None, sent=False)
            if self._watch is not None:
                self._watch.trips.append(exc)
            raise
        self._holds = holds
        if self._watch is not None:
            self._watch.calls += 1

    def not_billed(self) -> None:
        """The attempt got an error status, or never connected: it costs nothing (it still counted)."""
        self._settle(0.0)

    def charged(self, reply: Any) -> Any:
        """The call's reply: the open attempt is charged its actual cost (the estimate when unknown)."""
        self._settle(getattr(reply, "cost_usd", None))
        return reply

    def _settle(self, cost_usd: float | None) -> None:
        holds, self._holds = self._holds, []
        if holds and self._watch is not None:
            self._watch.charge(cost_usd if cost_usd is not None else self.estimate_usd)
        for hold in holds:
            hold.settle(cost_usd)

    def __enter__(self) -> Meter:
        return self

    def __exit__(self, *exc: object) -> None:
        self._settle(None)  # raised or cancelled with an attempt open: it may have been billed


def meter_for(own: Budget | None, settings: ProviderSettings, prices: Mapping[str, Price] | None,
              content: bytes, request: Any) -> Meter:
    """The meter of one call to the endpoint ``settings`` (no budget in force: a meter that admits all)."""
    budgets = in_force(own)
    if not budgets:
        return Meter((), None, settings.model)
    estimate = None
    if any(b.limits_cost for b in budgets):
        from oracle.providers.prices import endpoint_cost_usd

        tokens_in, tokens_out = estimate_tokens(content, request)
        estimate = endpoint_cost_usd(settings, settings.model, tokens_in, tokens_out, prices)
    return Meter(budgets, estimate, settings.model)


def check_prices(config: OracleConfig, budget: Budget | None) -> None:
    """Refuse a cost budget, before any call, when a model it would pay for has no known price.

    Checked: ``providers.judge``, ``providers.decision`` when set, and each member of
    ``llm_judge.panel`` and ``decision_judge.panel`` (a ``providers.endpoints`` entry is checked
    through the members that name it). ``ConfigError`` names the model and the field."""
    if budget is None or not budget.limits_cost:
        return
    from oracle.providers.prices import endpoint_cost_usd

    providers = config.providers
    used: list[tuple[str, ProviderSettings]] = [("providers.judge", providers.judge)]
    if providers.decision is not None:
        used.append(("providers.decision", providers.decision))
    for section, panel in (("llm_judge", config.llm_judge.panel), ("decision_judge", config.decision_judge.panel)):
        for n, member in enumerate(panel):
            where = f"providers.{member.provider}" if member.provider else "base_url"
            used.append((f"{section}.panel.{n} ({where})", member.settings(providers)))
    for field, settings in used:
        if endpoint_cost_usd(settings, settings.model, 1000, 1000, providers.prices) is None:
            model = settings.model or "(the server's default model)"
            raise ConfigError(
                f"{field}.model: the price of {model!r} at {settings.base_url} is unknown, so max_cost_usd="
                f"{budget.max_cost_usd:g} cannot be held; give it a price in providers.prices "
                f"({model}: {{input_per_mtok: ..., output_per_mtok: ...}}; 0 for a self-hosted model) "
                "or use --max-calls")
