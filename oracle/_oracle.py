"""The Oracle facade: route a task, run only the chosen evaluator, check for escalation.

The Oracle keeps no history: each call returns its own trace. Evaluators are built once per name
(oracle/_evaluators.py: the built-ins, registered ones, plugins) and reused; they hold no settings
(each evaluation's context carries the config).
``aevaluate`` is the real implementation; ``evaluate`` is a thin sync runner over it.

The Oracle owns its model connections (a ``ProviderPool``). Inside ``async with Oracle(...)`` (or
until ``await oracle.aclose()``) evaluations share that pool and keep connections warm; a call made
outside it opens a pool for that call and closes it before returning, so nothing leaks whichever
event loop the caller uses.
"""

from __future__ import annotations

import threading
import time
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, AsyncIterator, Iterable, Mapping

from oracle._internal.log import get_logger

from oracle import _telemetry as telemetry
from oracle._internal.moved import renamed
from oracle.config.model import OracleConfig
from oracle.errors import ConfigError, PluginError, TaskValidationError
from oracle.providers import budget as budgets
from oracle.providers.budget import Budget
from oracle.providers.pool import ProviderPool
from oracle.routing.route import Route
from oracle.routing._chain import PolicyChain
from oracle.tasks.task import Task, TaskInput, Trajectory

# What only an evaluation needs (the result models, the escalation checks, the evaluators, asyncio)
# is imported by the methods that evaluate: `Oracle().route(...)` loads none of it.
if TYPE_CHECKING:
    from oracle.escalation.human import AsyncHumanOracle, HumanOracle
    from oracle.escalation.store import EscalationStore
    from oracle.results.result import EvaluationResult, OracleResult
    from oracle.strategies.protocol import EvaluationContext, Evaluator

log = get_logger("oracle")


def as_task_input(task: Task | TaskInput | Mapping[str, Any],
                  trajectories: Iterable[Trajectory | Mapping[str, Any] | list] | None = None) -> TaskInput:
    """Accept a TaskInput, a Task plus trajectories, or plain dicts; validate once.

    Anything else is bad input: ``TaskValidationError`` naming the field, never a ``TypeError``.
    """
    if isinstance(task, TaskInput):
        return task
    if isinstance(task, Mapping) and "task" in task and trajectories is None:
        return TaskInput.model_validate(dict(task))
    if not isinstance(task, (Task, Mapping)):
        raise TaskValidationError(f"task: expected a Task, a TaskInput or a mapping, got {type(task).__name__}",
                                  field="task")
    if trajectories is not None and (isinstance(trajectories, (str, bytes, Mapping))
                                     or not isinstance(trajectories, Iterable)):
        raise TaskValidationError("trajectories: expected a list of trajectories or message lists, "
                                  f"got {type(trajectories).__name__}", field="trajectories")
    trajs = [t.model_dump() if isinstance(t, Trajectory) else t for t in (trajectories or [])]
    task_data = task.model_dump() if isinstance(task, Task) else task
    return TaskInput.model_validate({"task": task_data, "trajectories": trajs})


class Oracle:
    """Routes and evaluates tasks under one configuration."""

    def __init__(self, config: OracleConfig | None = None, *,
                 history: Mapping[str, float] | None = None,
                 human: HumanOracle | AsyncHumanOracle | None = None, store: EscalationStore | None = None,
                 providers: ProviderPool | None = None, learn_history: bool = False,
                 history_through: int | None = None, budget: Budget | None = None) -> None:
        """``human``: a ``HumanOracle`` (sync ``ask``) or ``AsyncHumanOracle`` (``aask``) asked at
        once when a request fires; ``store``: an ``EscalationStore`` where unanswered requests wait
        (blocking ones make the result ``pending``). Both optional; without them a request is only
        attached.
        ``providers``: the pool this Oracle owns (default: a new one); it closes it in ``aclose``.
        ``learn_history``: read prior hardness from ``store``'s outcome log, through a snapshot
        frozen now (``history_through``: rebuild the snapshot up to that seq), and log every
        finished evaluation there (oracle.routing._history).
        ``budget``: one ``Budget`` for every model request this Oracle makes (its pool's; a cost
        budget over a model with no known price is refused here, ``ConfigError``); ``evaluate``
        and ``aevaluate`` also take a budget of their own for one evaluation."""
        self.config = config or OracleConfig.load()
        budgets.check_prices(self.config, budget)
        self.human = human
        self.store = store
        self.chain = PolicyChain(self.config)
        self.history = history
        self.learning = None
        if learn_history:
            if store is None:
                raise ConfigError("learn_history: needs a store (the escalation store holds the outcome log)")
            from oracle.routing._history import HistoryLearning

            self.learning = HistoryLearning(store, through_seq=history_through)
        self.providers = providers or ProviderPool()
        if budget is not None:
            self.providers.budget = budget
        self._evaluators: dict[str, Evaluator] = {}
        self._lock = threading.Lock()
        self._held = 0

    async def __aenter__(self) -> "Oracle":
        self._held += 1
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._held -= 1
        if self._held == 0:
            await self.aclose()

    async def aclose(self) -> None:
        """Close this Oracle's model connections (they reopen on the next evaluation)."""
        await self.providers.aclose()

    @asynccontextmanager
    async def _lease(self, providers: ProviderPool | None = None) -> AsyncIterator[ProviderPool]:
        """The pool for one call: the caller's, the Oracle's own while it is held open, or a pool
        for this call alone (closed on the way out)."""
        if providers is not None:
            yield providers
        elif self._held:
            yield self.providers
        else:
            async with ProviderPool(transport=self.providers.transport, budget=self.providers.budget) as pool:
                yield pool

    def route(self, task: Task | TaskInput | Mapping[str, Any],
              trajectories: Iterable[Any] | None = None) -> Route:
        """Pick the evaluator for a task; pure and deterministic (timings aside)."""
        item = as_task_input(task, trajectories)
        given = item.task
        if item.task.rubric is not None:
            item = self._rubric(item).item
        return self._route(given, item)

    def _route(self, task: Task, item: TaskInput) -> Route:
        """Route ``item`` with the prior hardness of ``task`` (the task as given, before a rubric
        fills it in), stamped with the history snapshot it read."""
        if self.learning is None:
            return self.chain.route(item.task, item.trajectories, history=self.history)
        history = self.learning.prior(task, self.history)
        return self.learning.stamp(self.chain.route(item.task, item.trajectories, history=history))

    def _rubric(self, item: TaskInput) -> Any:
        """The task with its named rubric applied (criteria, questions, judge settings).

        Resolved at each evaluation, so ``NAME`` follows the current release and the result names
        the version used; ``NAME@N`` pins one. A rubric that cannot be used is bad input."""
        from oracle.rubrics.apply import resolve_rubric
        from oracle.rubrics.errors import RubricError
        from oracle.rubrics.store import RubricStore

        try:
            return resolve_rubric(item, RubricStore(self.config.rubrics.dir))
        except RubricError as exc:
            raise TaskValidationError(f"task.rubric: {exc}", field="task.rubric") from None

    def evaluator(self, name: str) -> Evaluator | None:
        """The evaluator called ``name`` (built once, then reused), or None when none has the name.

        Raises ``PluginError`` for a plugin that fails to load or makes something that is not an
        ``Evaluator``; ``run_evaluator`` turns that into a failed result."""
        from oracle._evaluators import evaluator_factory
        from oracle.strategies.protocol import Evaluator

        with self._lock:
            if name not in self._evaluators:
                factory = evaluator_factory(name)
                if factory is None:
                    return None
                made = factory()
                if not isinstance(made, Evaluator):
                    raise PluginError(f"evaluator {name!r}: its factory made {type(made).__name__}, which is "
                                      "not an Evaluator (name, version, spec(config), async evaluate(ctx))",
                                      plugin=name)
                self._evaluators[name] = made
            return self._evaluators[name]

    async def run_evaluator(self, item: TaskInput, route: Route | None, name: str,
                            extra: Mapping[str, Any] | None = None, *,
                            providers: ProviderPool | None = None,
                            config: OracleConfig | None = None) -> EvaluationResult:
        """Run the evaluator called ``name`` (a built-in, a registered one or a plugin's) on ``item``.

        Never raises on the evaluator's account: an unknown name, an evaluator that cannot be built
        and any exception it leaks give a failed result, whose ``evaluator`` is ``name`` as given.
        ``config``: this evaluation's settings when they differ from the Oracle's (a rubric's
        thresholds); evaluators read settings only from their context."""
        async with self._lease(providers) as pool:
            return await self._run_evaluator(item, route, name, extra, pool, config or self.config)

    async def _run_evaluator(self, item: TaskInput, route: Route | None, name: str,
                             extra: Mapping[str, Any] | None, providers: ProviderPool,
                             config: OracleConfig) -> EvaluationResult:
        from oracle.results.result import EvaluationResult
        from oracle.strategies.protocol import EvaluationContext

        start = time.perf_counter()
        try:
            evaluator = self.evaluator(name)
        except Exception as exc:  # noqa: BLE001 - an evaluator that cannot be built is a failure row
            return EvaluationResult.failure(name, exc)
        if evaluator is None:
            return EvaluationResult.failure(
                name, f"no evaluator is called {name!r} (built-in, registered or installed as a plugin)",
                error_type="EvaluatorUnavailable")
        ctx = EvaluationContext(task=item.task, trajectories=tuple(item.trajectories),
                                config=config, route=route, extra=dict(extra or {}),
                                providers=providers)
        with telemetry.evaluator_span(name) as span:  # a no-op unless a tracer provider is configured
            with budgets.watch() as seen:
                try:
                    result = await evaluator.evaluate(ctx)
                except Exception as exc:  # noqa: BLE001 - contract: evaluate never raises out of the Oracle
                    log.warning("evaluator_raised", evaluator=name, task_id=item.task.id, error=repr(exc))
                    result = EvaluationResult.failure(name, exc)
            if seen.trips:  # a request was refused by the budget: never a verdict from part of the calls
                result = result.skipped(budgets.SKIP_REASON, seen.trips[0], calls=seen.calls, cost_usd=seen.cost_usd)
            return span.finish(completed(result, evaluator, ctx, name=name,
                                         latency_ms=(time.perf_counter() - start) * 1000))

    def strategy(self, kind: str) -> Evaluator | None:
        """Deprecated name of ``evaluator``."""
        renamed("Oracle.strategy", "Oracle.evaluator")
        return self.evaluator(kind)

    async def run_strategy(self, item: TaskInput, route: Route | None, kind: str,
                           extra: Mapping[str, Any] | None = None, *,
                           providers: ProviderPool | None = None,
                           config: OracleConfig | None = None) -> EvaluationResult:
        """Deprecated name of ``run_evaluator``."""
        renamed("Oracle.run_strategy", "Oracle.run_evaluator")
        return await self.run_evaluator(item, route, kind, extra, providers=providers, config=config)

    async def aevaluate(self, task: Task | TaskInput | Mapping[str, Any],
                        trajectories: Iterable[Any] | None = None, *, budget: Budget | None = None) -> OracleResult:
        """Route, evaluate with the chosen evaluator only, and attach any escalation request.

        With a human or a store, the request is answered at once (and the answer applied, status
        ``escalated``) or filed (status ``pending`` when it blocks the verdict). ``budget``: a
        ``Budget`` for this evaluation (on top of the Oracle's); a request it cannot admit is not
        sent and the result is ``skipped`` with reason ``budget``."""
        item = as_task_input(task, trajectories)
        budgets.check_prices(self.config, budget)
        async with self._lease() as pool:
            with budgets.using(budget):
                return await self._evaluate_item(item, pool)

    async def _evaluate_item(self, item: TaskInput, pool: ProviderPool) -> OracleResult:
        with telemetry.evaluation_span(item) as span:  # a no-op unless a tracer provider is configured
            return span.finish(await self._settled(item, pool))  # type: ignore[no-any-return]

    async def _settled(self, item: TaskInput, pool: ProviderPool) -> OracleResult:
        res = await self.evaluate_once(item, providers=pool)
        if res.escalation is not None and (self.human is not None or self.store is not None):
            import functools

            from oracle.escalation.resume import settle

            res = await settle(functools.partial(self.evaluate_once, providers=pool), item, res,
                               human=self.human, store=self.store)
        if self.learning is not None and res.status.value != "skipped":  # not run: says nothing of hardness
            import asyncio

            await asyncio.to_thread(self.learning.record, item.task, res)
        return res

    async def evaluate_once(self, item: TaskInput, *, providers: ProviderPool | None = None) -> OracleResult:
        """One route + evaluation + escalation check, with no human in the loop."""
        from oracle.escalation._triggers import check_result, check_route
        from oracle.results.result import OracleResult, Status

        rubric, config, given = None, self.config, item.task
        if item.task.rubric is not None:
            resolved = self._rubric(item)
            from oracle.rubrics.apply import config_with

            item, rubric, config = resolved.item, resolved.ref, config_with(self.config, resolved.overlay)
        with telemetry.route_span() as span:
            route = span.finish(self._route(given, item))
        esc_cfg = self.config.escalation
        escalation = check_route(item.task, route, esc_cfg) if esc_cfg.enabled else None
        if route.evaluator is None:
            return OracleResult(task_id=item.task.id, status=Status.failed, route=route, result=None,
                                escalation=escalation)
        result = await self.run_evaluator(item, route, route.evaluator, providers=providers, config=config)
        if result.status == Status.skipped:  # not run: nothing to ask a person about yet
            escalation = None
        elif escalation is None and esc_cfg.enabled:
            escalation = check_result(item.task, route, result, esc_cfg,
                                      [t.id for t in item.trajectories])
        return OracleResult(task_id=item.task.id, status=result.status, route=route, result=result,
                            escalation=escalation, rubric=rubric)

    def evaluate(self, task: Task | TaskInput | Mapping[str, Any],
                 trajectories: Iterable[Any] | None = None, *, budget: Budget | None = None) -> OracleResult:
        """Synchronous runner over ``aevaluate`` (safe to call inside a running event loop).

        It runs on a private event loop, so it opens a pool for this call and closes it before the
        loop ends, even while the Oracle is held open by ``async with`` elsewhere. ``budget``: as
        in ``aevaluate``."""

        item = as_task_input(task, trajectories)
        budgets.check_prices(self.config, budget)

        async def once() -> OracleResult:
            async with ProviderPool(transport=self.providers.transport, budget=self.providers.budget) as pool:
                with budgets.using(budget):
                    return await self._evaluate_item(item, pool)

        return run_sync(once())  # type: ignore[no-any-return]


def completed(result: EvaluationResult, evaluator: Evaluator, ctx: EvaluationContext, *, name: str,
              latency_ms: float) -> EvaluationResult:
    """The evaluator's result with what it left empty filled in, as a new object.

    An evaluator fills latency and provenance itself (from its context); the Oracle never edits the
    object an evaluator returned, so one that keeps it (a cache, a log) sees what it made. The
    result is named after the evaluator it came from: ``name``, as it was asked for.
    """
    prov = result.provenance
    prov_update: dict[str, Any] = {}
    if not prov.config_hash:
        prov_update["config_hash"] = ctx.config.hash()
    if not prov.evaluator:
        prov_update["evaluator"] = {"name": getattr(evaluator, "name", name),
                                    "version": getattr(evaluator, "version", None)}
    update: dict[str, Any] = {}
    if result.evaluator != name:
        update["evaluator"] = name
    if prov_update:
        update["provenance"] = prov.model_copy(update=prov_update)
    if not result.latency_ms:
        update["latency_ms"] = round(latency_ms, 3)
    return result.model_copy(update=update) if update else result


def run_sync(coro: Any) -> Any:
    """Run a coroutine to completion from sync code, even when a loop is already running."""
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def runner() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # noqa: BLE001
            box["error"] = exc

    thread = threading.Thread(target=runner, name="oracle-sync-runner")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]
