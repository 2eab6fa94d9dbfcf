"""Evaluation jobs and batch runs the server keeps track of, in memory, bounded.

A job is an ``asyncio`` task on the server's loop; a batch is ``run_batch`` in a worker thread,
writing its rows to a file under the work directory (so its rows survive a crash of the request
that submitted it, and a rerun of the same file resumes). Ids are random 128-bit hex strings: a
caller can only poll what it was told about. Running work is bounded (``Full`` -> 503) and only the
newest ``keep`` finished jobs are remembered.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Literal

from oracle._internal.log import get_logger

log = get_logger("oracle.serve")

JobState = Literal["running", "done", "failed"]


class Full(Exception):
    """As many jobs (or batches) run as the server allows."""


@dataclass
class Job:
    id: str
    created_at: float
    state: JobState = "running"
    finished_at: float | None = None
    result: dict[str, Any] | None = None
    error: str | None = None
    task: asyncio.Task[None] | None = field(default=None, repr=False)


class JobRegistry:
    """Evaluation jobs: at most ``max_running`` at once, the newest ``keep`` finished ones kept."""

    def __init__(self, *, max_running: int, keep: int) -> None:
        self.max_running, self.keep = max_running, keep
        self._jobs: OrderedDict[str, Job] = OrderedDict()

    @property
    def running(self) -> int:
        return sum(1 for j in self._jobs.values() if j.state == "running")

    def submit(self, work: Callable[[], Awaitable[dict[str, Any]]]) -> Job:
        """Start ``work`` (returns the result as JSON data) as a job; ``Full`` when at the limit."""
        if self.running >= self.max_running:
            raise Full(f"{self.max_running} evaluation jobs already running")
        job = Job(id=secrets.token_hex(16), created_at=time.time())
        self._jobs[job.id] = job
        job.task = asyncio.get_running_loop().create_task(self._run(job, work))
        self._forget_old()
        return job

    async def _run(self, job: Job, work: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        try:
            job.result = await work()
            job.state = "done"
        except asyncio.CancelledError:
            job.state, job.error = "failed", "cancelled: the server is shutting down"
            raise
        except Exception as exc:  # noqa: BLE001 - a job's failure is reported to its poller, not raised
            log.warning("serve_job_failed", job_id=job.id, error=repr(exc))
            job.state, job.error = "failed", f"{type(exc).__name__}: {exc}"
        finally:
            job.finished_at = time.time()

    def get(self, job_id: str) -> Job | None:
        return self._jobs.get(job_id)

    def _forget_old(self) -> None:
        finished = [k for k, j in self._jobs.items() if j.state != "running"]
        for key in finished[:max(0, len(finished) - self.keep)]:
            del self._jobs[key]

    async def aclose(self) -> None:
        tasks = [j.task for j in self._jobs.values() if j.task is not None and not j.task.done()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


@dataclass
class Batch:
    id: str
    created_at: float
    input_path: Path
    output_path: Path
    total: int
    state: JobState = "running"
    finished_at: float | None = None
    summary: dict[str, Any] | None = None
    error: str | None = None
    task: asyncio.Task[None] | None = field(default=None, repr=False)

    def rows_written(self) -> int:
        """Rows in the output so far (each row is one line, flushed as it is written)."""
        try:
            with self.output_path.open("rb") as fh:
                return sum(1 for line in fh if line.endswith(b"\n"))
        except FileNotFoundError:
            return 0


class BatchRegistry:
    """Batch runs under ``work_dir``: at most ``max_running`` at once."""

    def __init__(self, work_dir: Path, *, max_running: int, keep: int) -> None:
        self.work_dir, self.max_running, self.keep = work_dir, max_running, keep
        self._batches: OrderedDict[str, Batch] = OrderedDict()

    @property
    def running(self) -> int:
        return sum(1 for b in self._batches.values() if b.state == "running")

    def submit(self, body: bytes, total: int, run: Callable[[Batch], dict[str, Any]]) -> Batch:
        """Write ``body`` (JSONL) to a fresh directory and start ``run(batch)`` in a worker thread."""
        if self.running >= self.max_running:
            raise Full(f"{self.max_running} batches already running")
        batch_id = secrets.token_hex(16)
        folder = self.work_dir / batch_id
        folder.mkdir(parents=True)
        batch = Batch(id=batch_id, created_at=time.time(), input_path=folder / "tasks.jsonl",
                      output_path=folder / "rows.jsonl", total=total)
        batch.input_path.write_bytes(body)
        self._batches[batch_id] = batch
        batch.task = asyncio.get_running_loop().create_task(self._run(batch, run))
        finished = [k for k, b in self._batches.items() if b.state != "running"]
        for key in finished[:max(0, len(finished) - self.keep)]:
            del self._batches[key]
        return batch

    async def _run(self, batch: Batch, run: Callable[[Batch], dict[str, Any]]) -> None:
        try:
            batch.summary = await asyncio.to_thread(run, batch)
            batch.state = "done"
        except Exception as exc:  # noqa: BLE001 - reported to the poller; rows so far stay on disk
            log.warning("serve_batch_failed", batch_id=batch.id, error=repr(exc))
            batch.state, batch.error = "failed", f"{type(exc).__name__}: {exc}"
        finally:
            batch.finished_at = time.time()

    def get(self, batch_id: str) -> Batch | None:
        return self._batches.get(batch_id)

    async def wait(self) -> None:
        """Let running batches finish (their threads cannot be interrupted midway)."""
        tasks = [b.task for b in self._batches.values() if b.task is not None and not b.task.done()]
        await asyncio.gather(*tasks, return_exceptions=True)
