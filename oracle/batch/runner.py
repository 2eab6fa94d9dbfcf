"""``run_batch``: resume bookkeeping, engine choice, progress, summary. The CLI is a thin layer on it."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Literal, TextIO

from oracle._internal.safe_files import write_atomic
from oracle._internal.log import get_logger

from oracle.batch.halt import Halt
from oracle.batch.lock import OutputLock
from oracle.batch.output import RowWriter, compact, scan_output
from oracle.batch.progress import BarFactory, Progress
from oracle.batch.rows import DEFAULT_TASK_TIMEOUT_S
from oracle.batch.source import InputEntry, count_entries, iter_entries
from oracle.batch.summary import summarize
from oracle.config.model import OracleConfig
from oracle.errors import TaskValidationError
from oracle.providers.budget import Budget, check_prices
from oracle.tasks.files import check_input_file

log = get_logger("oracle.batch")


@dataclass
class BatchReport:
    total: int
    """Input lines (= rows the output must hold)."""
    resumed: int
    """Rows found from an earlier run and not redone."""
    computed: int
    elapsed_s: float
    summary: dict[str, Any]
    nodes: dict[str, int] = field(default_factory=dict)
    """Ray engine: rows computed per Ray node id (empty for the local engine)."""
    stopped: str | None = None
    """Why the run stopped before every line had its row: the model endpoint on this machine is
    not running (the error's message, with the hint that says how to start it); None otherwise."""
    recomputed: int = 0
    """Rows of another config that this run was asked to recompute (``recompute``)."""
    rerun_skipped: int = 0
    """Lines whose earlier rows were ``skipped`` (a budget ran out) and that this run computed again."""
    budget: dict[str, Any] | None = None
    """The run's budget: its limits, the requests sent, the cost charged, the requests refused."""


def _todo(entries: Iterator[InputEntry], done: Counter[str]) -> Iterator[InputEntry]:
    """Skip entries whose key an earlier run finished (a multiset: duplicate lines each count)."""
    for entry in entries:
        if done[entry.key] > 0:
            done[entry.key] -= 1
            continue
        yield entry


def run_batch(input_path: str | Path, output_path: str | Path, *, config: OracleConfig | None = None,
              concurrency: int = 16, engine: Literal["local", "ray"] = "local", ray_address: str | None = None,
              store_path: str | None = None, timeout_s: float | None = DEFAULT_TASK_TIMEOUT_S,
              progress_stream: TextIO | None = None, progress_interval_s: float = 5.0,
              progress_tty: bool | None = None, progress_bar: BarFactory | None = None,
              learn_history: bool = True, recompute: bool = False, budget: Budget | None = None) -> BatchReport:
    """Evaluate every line of ``input_path`` into ``output_path``; safe to rerun after a crash.

    With a store and ``learn_history``, routing reads prior hardness from the store's outcome log
    through one snapshot frozen at the start (every route's trace names it) and each row's outcome
    is logged there for later runs (oracle.routing._history).

    Holds an exclusive lock on the output for the whole run (``OutputLocked`` when another run
    has it). ``timeout_s`` bounds each line, parsing included; None turns the bound off.
    Progress goes to ``progress_stream`` (default stderr): a live bar when it is a terminal and a
    ``progress_bar`` is given (the CLI passes rich's), else ``batch_progress`` log records.

    Rows record the config hash they were computed under. An output holding rows of another config
    is refused before anything changes (``ConfigChanged``, naming both hashes) unless
    ``recompute``: then those lines are computed again and each old row is replaced once its new
    one is written. When the model endpoint on this machine turns out not to be running, the run
    stops at the first line that needed it (oracle/batch/halt.py): ``BatchReport.stopped`` says
    why, and a rerun computes the lines left.

    ``budget``: one ``Budget`` for every model request of this run (oracle/providers/budget.py); a
    line whose request it cannot admit gets a ``skipped`` row (reason ``budget``), and a rerun
    (with a larger budget, or none) computes exactly those lines. The local engine only: on Ray
    every worker process would hold its own count.
    """
    config = config or OracleConfig.load()
    if budget is not None and engine == "ray":
        raise TaskValidationError("--max-calls/--max-cost-usd: a budget needs the local engine (each Ray worker "
                                  "would count its own requests); drop --engine ray or the budget",
                                  field="--engine")
    check_prices(config, budget)
    check_input_file(input_path)
    if Path(output_path).is_dir():
        raise TaskValidationError(f"is a directory, not an output file: {output_path}", field="--output")
    with OutputLock(output_path, input_path=input_path):
        return _run_locked(input_path, output_path, config=config, concurrency=concurrency, engine=engine,
                           ray_address=ray_address, store_path=store_path, timeout_s=timeout_s,
                           progress_stream=progress_stream, progress_interval_s=progress_interval_s,
                           progress_tty=progress_tty, progress_bar=progress_bar, learn_history=learn_history,
                           recompute=recompute, budget=budget)


def _run_locked(input_path: str | Path, output_path: str | Path, *, config: OracleConfig, concurrency: int,
                engine: Literal["local", "ray"], ray_address: str | None, store_path: str | None,
                timeout_s: float | None, progress_stream: TextIO | None, progress_interval_s: float,
                progress_tty: bool | None, progress_bar: BarFactory | None, learn_history: bool,
                recompute: bool, budget: Budget | None = None) -> BatchReport:
    started = time.perf_counter()
    limits = config.limits
    total = count_entries(input_path, limits)
    found = scan_output(output_path, config_hash=config.hash(), recompute=recompute)
    done = found.done
    resumed = sum(done.values())
    recomputed = sum(found.stale.values())
    progress = Progress(total, skipped=resumed, stream=progress_stream, interval_s=progress_interval_s,
                        tty=progress_tty, bar=progress_bar)
    log.info("batch_start", input=str(input_path), output=str(output_path), total=total, resumed=resumed,
             engine=engine, concurrency=concurrency)
    writer = RowWriter(output_path)
    entries = _todo(iter_entries(input_path, limits), done)
    nodes: dict[str, int] = {}
    halt = Halt()
    try:
        if engine == "ray":
            from oracle.batch.ray_engine import run_ray

            from oracle.escalation.store import EscalationStore

            through = frozen_history_seq(output_path, store_path, resumed) if learn_history else None
            nodes = run_ray(entries, config.model_dump_json(), store_path, writer, concurrency=concurrency,
                            on_row=progress.update, address=ray_address, source=str(input_path),
                            timeout_s=timeout_s, history_through=through, halt=halt)
        else:
            from oracle.batch.local import run_local
            from oracle.escalation.store import EscalationStore
            from oracle._oracle import Oracle

            through = frozen_history_seq(output_path, store_path, resumed) if learn_history else None
            store = EscalationStore(store_path) if store_path else None
            try:
                oracle = Oracle(config, store=store, learn_history=learn_history and store is not None,
                                history_through=through, budget=budget)
                asyncio.run(run_local(entries, oracle, writer, concurrency=concurrency,
                                      on_row=progress.update, timeout_s=timeout_s, limits=limits,
                                      halt=halt))
            finally:
                if store is not None:
                    store.close()
    finally:
        writer.close()
        progress.close()
    if recompute or found.skipped:
        compact(output_path, config.hash())
    report = BatchReport(total=total, resumed=resumed, computed=writer.rows,
                         elapsed_s=time.perf_counter() - started, summary=summarize(output_path), nodes=nodes,
                         stopped=halt.reason, recomputed=recomputed, rerun_skipped=sum(found.skipped.values()),
                         budget=budget.as_dict() if budget is not None else None)
    log.info("batch_done", rows=report.summary["rows"], total=total, computed=writer.rows,
             elapsed_s=round(report.elapsed_s, 3), **({"nodes": nodes} if nodes else {}))
    return report


def frozen_history_seq(output_path: str | Path, store_path: str | None, resumed: int) -> int | None:
    """The outcome-log position routing reads history through, the same for the whole batch.

    A batch freezes the snapshot when it first starts and records its position beside the output
    (``OUTPUT.history.json``); a resumed batch reads that position back, so rows computed after a
    kill route exactly as they would have in an uninterrupted run, even though the interrupted part
    has since logged outcomes of its own."""
    if not store_path:
        return None
    from oracle.escalation.store import EscalationStore

    out = Path(output_path)
    marker = out.with_name(out.name + ".history.json")
    if resumed and marker.exists():
        try:
            return int(json.loads(marker.read_text(encoding="utf-8"))["through_seq"])
        except (ValueError, KeyError, TypeError, OSError):
            log.warning("history_marker_unreadable", path=str(marker))
    with EscalationStore(store_path) as history_store:
        through = history_store.last_outcome_seq()
    write_atomic(marker, json.dumps({"through_seq": through, "store": str(store_path)}) + "\n")
    return int(through)
