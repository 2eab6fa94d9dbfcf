"""Run a comparison: every arm on every item, crash-safe, resumable, then the summary and report.

Crash safety is the batch runner's: each record is appended to ``DIR/runs.jsonl`` and fsynced
(oracle/batch/output.py), an exclusive lock on that file keeps a second run out (exit 2 naming the
holder), and on a rerun a partial last line is cut and records already written are skipped, so
``kill -9`` then the same command gives the same summary with no duplicate runs. The summary is
computed from the records alone (oracle/comparison/summary.py).

A run whose model endpoint on this machine is not running stops the comparison
(oracle/batch/halt.py): its record is not written (a rerun computes it), no further run starts, and
``EndpointUnreachable`` is raised with the hint once the runs in flight are done.

Concurrency: at most ``concurrency`` runs in flight; each provider's own limit
(``providers.*.concurrency``) still applies, because every evaluator on the loop shares one client
per endpoint; the verifier bounds its sandbox runs with ``verifier.workers``.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence, TextIO

from oracle.comparison._arms import (ArmRunner, Shown, arm_kinds, baseline_record, label_in_options, options_shown,
                                     reorder)
from oracle.comparison._labels import LabelledItem
from oracle.comparison._plan import Unit, check_manifest, manifest, plan_units
from oracle.comparison.records import RunRecord, run_key
from oracle.comparison.summary import CompareSummary, build_summary
from oracle.config.model import OracleConfig

if TYPE_CHECKING:
    from oracle.batch.progress import BarFactory


@dataclass(frozen=True)
class RunSettings:
    arms: tuple[str, ...]
    repeats: int
    orders: tuple[str, ...]
    seed: int
    timeout_s: float | None
    concurrency: int


@dataclass
class RunOutcome:
    records: list[RunRecord]
    computed: int
    resumed: int
    elapsed_s: float
    cached_calls: int = 0
    """Model calls of the runs done now that the response cache answered (no request sent)."""


CACHE_DIR = "cache"
"""The response cache's directory inside a comparison's output directory (the default cache)."""


def run_config(config: OracleConfig, out_dir: Path, *, cache: str | Path | bool | None,
               seed: int) -> tuple[OracleConfig, Path | None]:
    """The config a comparison runs under, and its response cache file (None: no cache).

    The LLM judge's placement seed is the comparison's ``seed``. ``cache``: True (the default)
    caches in ``OUT/cache/`` for every provider section that sets no ``cache_path`` of its own; a
    directory caches there for every section (shared between runs: a fresh run into a new folder
    given the same cache sends no request already answered); False or None turns every cache off.
    The file is opened once here, so an unusable cache stops the run before any model call. None
    of this changes ``config_hash``'s cache part (the hash leaves ``cache_path`` out)."""
    from oracle.errors import TaskValidationError
    from oracle.providers._cache import CACHE_FILE, check_cache, config_with_cache

    if config.llm_judge.seed != seed:
        config = config.model_copy(update={"llm_judge": config.llm_judge.model_copy(update={"seed": seed})})
    if cache is None or cache is False:
        return config_with_cache(config, None, override=True), None
    directory = out_dir / CACHE_DIR if cache is True else Path(cache)
    if directory.exists() and not directory.is_dir():
        raise TaskValidationError(f"--cache: not a directory: {directory}", field="--cache")
    path = directory / CACHE_FILE
    check_cache(path)
    return config_with_cache(config, path, override=cache is not True), path


def _new_run_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


class _Executor:
    """Turns units into records; knows the records written so far (``routed`` reuses them)."""

    def __init__(self, config: OracleConfig, settings: RunSettings, known: dict[str, RunRecord], pool: Any,
                 overlays: dict[str, dict[str, dict[str, Any]]] | None = None) -> None:
        from oracle.routing._chain import PolicyChain

        self.config = config
        self.settings = settings
        self.known = known
        self.runner = ArmRunner(config, pool, overlays)
        self.chain = PolicyChain(config)
        self.run_id = _new_run_id()

    def _base(self, unit: Unit, shown: Shown) -> dict[str, Any]:
        return {"key": unit.key, "run_id": self.run_id, "arm": unit.arm, "item_id": unit.item.id,
                "repeat": unit.repeat, "order": unit.order, "options_shown": options_shown(shown),
                "label_in_options": label_in_options(unit.item, shown)}

    def _late(self, record: RunRecord) -> RunRecord:
        limit = self.settings.timeout_s
        if limit is not None and record.latency_ms is not None and record.latency_ms > limit * 1000:
            record = record.model_copy(update={"within_timeout": False})
        return record

    async def run(self, unit: Unit) -> RunRecord:
        shown = reorder(unit.item, unit.order)
        base = self._base(unit, shown)
        if unit.arm == "routed":
            return self._late(await self._routed(unit, shown, base))
        kinds, reason = arm_kinds(unit.arm, unit.item, self.config)
        if reason is not None:
            return RunRecord(**base, status="n/a", reason=reason,
                             evaluator=None if unit.arm == "baseline" else unit.arm)
        if unit.arm == "baseline":
            return baseline_record(base, unit.item, shown, kinds)
        return self._late(await self.runner.run(base, unit.arm, unit.item, shown, kinds))

    async def _routed(self, unit: Unit, shown: Shown, base: dict[str, Any]) -> RunRecord:
        route = self.chain.route(shown.task, shown.trajectories)
        fields: dict[str, Any] = {"route_confidence": round(route.confidence, 6), "evaluator": route.evaluator}
        if route.evaluator is None:
            return RunRecord(**base, **fields, status="failed", kinds=unit.item.label.kinds(),
                             error={"type": "NoFeasibleEvaluator", "message": "the router found no feasible evaluator"})
        reuse_key = run_key(route.evaluator, unit.item.id, unit.repeat, unit.order)
        done = self.known.get(reuse_key)
        if done is not None:
            data = done.model_dump()
            data.update(base, **fields, reused_from=reuse_key)
            return RunRecord(**data)
        kinds, reason = arm_kinds(route.evaluator, unit.item, self.config)
        if reason is not None:
            return RunRecord(**base, **fields, status="n/a", reason=f"routed to {route.evaluator}: {reason}")
        record = await self.runner.run(base, route.evaluator, unit.item, shown, kinds)
        return record.model_copy(update={**fields, "arm": "routed"})


async def run_units(items: Sequence[LabelledItem], out_dir: Path, *, config: OracleConfig, settings: RunSettings,
                    progress_stream: TextIO | None = None, progress_tty: bool | None = None,
                    progress_interval_s: float = 5.0, progress_bar: BarFactory | None = None,
                    overlays: dict[str, dict[str, dict[str, Any]]] | None = None,
                    budget: Any = None) -> RunOutcome:
    """Run every unit not yet in ``out_dir/runs.jsonl``; returns all records of this comparison.

    ``budget``: one ``Budget`` for every model request of this run; a run it stops is recorded
    ``skipped`` and does not count as done: a rerun (with a larger budget) computes it again, and the
    new record replaces it."""
    from oracle.batch.halt import Halt
    from oracle.batch.output import RowWriter, iter_rows, prepare_output
    from oracle.batch.progress import Progress
    from oracle.providers.pool import ProviderPool

    started = time.perf_counter()
    runs_path = out_dir / "runs.jsonl"
    check_manifest(out_dir, manifest(items, arms=settings.arms, repeats=settings.repeats, orders=settings.orders,
                                     seed=settings.seed, config_hash=config.hash()))
    prepare_output(runs_path)  # cut a partial last line, drop repeated keys
    known: dict[str, RunRecord] = {}
    if runs_path.exists():
        for row in iter_rows(runs_path):
            if row is not None:
                known.setdefault(row["key"], RunRecord.model_validate(row))
    units = plan_units(items, settings.arms, settings.repeats, settings.orders)
    wanted = {u.key for u in units}
    todo = [u for u in units if u.key not in known or known[u.key].status == "skipped"]
    resumed = len(units) - len(todo)
    progress = Progress(len(units), skipped=resumed, stream=progress_stream, interval_s=progress_interval_s,
                        tty=progress_tty, label="compare", bar=progress_bar)
    pool = ProviderPool(budget=budget)
    executor = _Executor(config, settings, known, pool, overlays)
    writer = RowWriter(runs_path)
    write_lock = asyncio.Lock()
    slots = asyncio.Semaphore(max(1, settings.concurrency))
    halt = Halt()
    hits = [0]

    async def one(unit: Unit) -> None:
        async with slots:
            if halt.stopped:  # the model endpoint is down: start nothing more
                return
            try:
                record = await executor.run(unit)
            except Exception as exc:  # noqa: BLE001 - every unit gets a record, whatever happens
                record = RunRecord(key=unit.key, run_id=executor.run_id, arm=unit.arm, item_id=unit.item.id,
                                   repeat=unit.repeat, order=unit.order, status="failed",  # type: ignore[arg-type]
                                   error={"type": type(exc).__name__, "message": str(exc) or type(exc).__name__})
        if not halt.keep({"error": record.error}):
            return
        async with write_lock:
            await asyncio.to_thread(writer.write, [record.model_dump(mode="json")])
            known[record.key] = record
            if record.reused_from is None:
                hits[0] += record.cached_calls
        progress.update({"status": record.status})

    try:
        for phase in ([u for u in todo if u.arm != "routed"], [u for u in todo if u.arm == "routed"]):
            await asyncio.gather(*(one(u) for u in phase))
    finally:
        writer.close()
        progress.close()
        await pool.aclose()
    if halt.stopped:
        raise halt.error()
    records = [known[k] for k in sorted(wanted) if k in known]
    return RunOutcome(records=records, computed=len(todo), resumed=resumed,
                      elapsed_s=round(time.perf_counter() - started, 3), cached_calls=hits[0])


def summarize_runs(records: Sequence[RunRecord], items: Sequence[LabelledItem], *, settings: RunSettings,
                   config: OracleConfig, source: str | None, dropped_reserved: int,
                   elapsed_s: float, label_source: str = "gold") -> CompareSummary:
    return build_summary(records, items, arms=settings.arms, repeats=settings.repeats, orders=settings.orders,
                         seed=settings.seed, timeout_s=settings.timeout_s, config_hash=config.hash(), source=source,
                         dropped_reserved=dropped_reserved, timings={"elapsed_s": elapsed_s},
                         label_source=label_source)
