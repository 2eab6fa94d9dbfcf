"""The Oracle facade: route a task, run only the chosen evaluator, check for escalation.

The Oracle keeps no history: each call returns its own trace. Strategies are built once per
evaluator kind and reused. ``aevaluate`` is the real implementation; ``evaluate`` is a thin sync
runner over it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, Iterable, Mapping

import structlog

from oracle.config import OracleConfig
from oracle.errors import TaskValidationError
from oracle.escalation import check_result, check_route
from oracle.providers._loop_clients import close_loop_clients
from oracle.result import EvaluationResult, OracleResult, Status
from oracle.route import Route
from oracle.router import PolicyChain
from oracle.strategy import EvaluationContext, Strategy, strategy_factory
from oracle.task import Task, TaskInput, Trajectory

log = structlog.get_logger("oracle")


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
                 history: Mapping[str, float] | None = None, human: Any = None,
                 store: Any = None) -> None:
        """``human``: a HumanOracle (sync ``ask`` or async ``aask``) asked at once when a request
        fires; ``store``: an EscalationStore where unanswered requests wait (blocking ones make
        the result ``pending``). Both optional; without them a request is only attached."""
        self.config = config or OracleConfig.load()
        self.human = human
        self.store = store
        self.chain = PolicyChain(self.config)
        self.history = history
        self._strategies: dict[str, Strategy] = {}
        self._lock = threading.Lock()

    def route(self, task: Task | TaskInput | Mapping[str, Any],
              trajectories: Iterable[Any] | None = None) -> Route:
        """Pick the evaluator for a task; pure and deterministic (timings aside)."""
        item = as_task_input(task, trajectories)
        return self.chain.route(item.task, item.trajectories, history=self.history)

    def strategy(self, kind: str) -> Strategy | None:
        with self._lock:
            if kind not in self._strategies:
                factory = strategy_factory(kind)
                if factory is None:
                    return None
                self._strategies[kind] = factory(self.config)
            return self._strategies[kind]

    async def run_strategy(self, item: TaskInput, route: Route, kind: str,
                           extra: Mapping[str, Any] | None = None) -> EvaluationResult:
        """Run one evaluator; any exception it leaks becomes a failed result, never a crash."""
        start = time.perf_counter()
        try:
            strategy = self.strategy(kind)
        except Exception as exc:  # noqa: BLE001 - a strategy that cannot be built is a failure row
            return EvaluationResult.failure(kind, exc)  # type: ignore[arg-type]
        if strategy is None:
            return EvaluationResult.failure(
                kind, f"evaluator {kind!r} is not available in this build", error_type="EvaluatorUnavailable")  # type: ignore[arg-type]
        ctx = EvaluationContext(task=item.task, trajectories=tuple(item.trajectories),
                                config=self.config, route=route, extra=dict(extra or {}))
        try:
            result = await strategy.evaluate(ctx)
        except Exception as exc:  # noqa: BLE001 - contract: evaluate never raises out of the Oracle
            log.warning("strategy_raised", evaluator=kind, task_id=item.task.id, error=repr(exc))
            result = EvaluationResult.failure(kind, exc)  # type: ignore[arg-type]
        if not result.latency_ms:
            result.latency_ms = round((time.perf_counter() - start) * 1000, 3)
        prov = result.provenance
        prov.config_hash = prov.config_hash or self.chain.config_hash
        prov.strategy = prov.strategy or {"name": kind, "version": getattr(strategy, "version", None)}
        return result

    async def aevaluate(self, task: Task | TaskInput | Mapping[str, Any],
                        trajectories: Iterable[Any] | None = None) -> OracleResult:
        """Route, evaluate with the chosen evaluator only, and attach any escalation request.

        With a human or a store, the request is answered at once (and the answer applied, status
        ``escalated``) or filed (status ``pending`` when it blocks the verdict)."""
        item = as_task_input(task, trajectories)
        res = await self.evaluate_once(item)
        if res.escalation is None or (self.human is None and self.store is None):
            return res
        from oracle.resume import settle

        return await settle(self, item, res, human=self.human, store=self.store)

    async def evaluate_once(self, item: TaskInput) -> OracleResult:
        """One route + evaluation + escalation check, with no human in the loop."""
        route = self.chain.route(item.task, item.trajectories, history=self.history)
        esc_cfg = self.config.escalation
        escalation = check_route(item.task, route, esc_cfg) if esc_cfg.enabled else None
        if route.evaluator is None:
            return OracleResult(task_id=item.task.id, status=Status.failed, route=route, result=None,
                                escalation=escalation)
        result = await self.run_strategy(item, route, route.evaluator)
        if escalation is None and esc_cfg.enabled:
            escalation = check_result(item.task, route, result, esc_cfg,
                                      [t.id for t in item.trajectories])
        return OracleResult(task_id=item.task.id, status=result.status, route=route, result=result,
                            escalation=escalation)

    def evaluate(self, task: Task | TaskInput | Mapping[str, Any],
                 trajectories: Iterable[Any] | None = None) -> OracleResult:
        """Synchronous runner over ``aevaluate`` (safe to call inside a running event loop)."""

        async def once() -> OracleResult:
            try:
                return await self.aevaluate(task, trajectories)
            finally:
                await close_loop_clients()  # this private loop ends here; so do its connections

        return run_sync(once())


def run_sync(coro: Any) -> Any:
    """Run a coroutine to completion from sync code, even when a loop is already running."""
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
