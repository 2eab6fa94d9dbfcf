"""The local engine: one asyncio loop, at most ``concurrency`` tasks in flight.

Input is pulled lazily and the queue to the writer is bounded, so memory stays flat whatever the
file size. Rows are written in completion order; each carries its input line number. Lines are
parsed inside their task, not in this loop, so a slow line delays only itself. A row whose model
endpoint turned out not to be running stops the feeding and is not written (oracle/batch/halt.py).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Callable, Iterable

from oracle.batch.halt import Halt
from oracle.batch.output import RowWriter
from oracle.batch.rows import evaluate_entry
from oracle.batch.source import InputEntry
from oracle.tasks._limits import InputLimits

if TYPE_CHECKING:
    from oracle._oracle import Oracle


async def run_local(entries: Iterable[InputEntry], oracle: Oracle, writer: RowWriter, *, concurrency: int,
                    on_row: Callable[[dict[str, Any]], None], timeout_s: float | None = None,
                    limits: InputLimits | None = None, halt: Halt | None = None) -> None:
    halt = halt or Halt()
    queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue(maxsize=max(16, concurrency * 4))
    slots = asyncio.Semaphore(concurrency)

    async def write_loop() -> None:
        stop = False
        while not stop:
            batch = [await queue.get()]
            while not queue.empty():
                batch.append(queue.get_nowait())
            stop = batch[-1] is None
            rows = [r for r in batch if r is not None]
            await asyncio.to_thread(writer.write, rows)
            for r in rows:
                on_row(r)

    async def put(row: dict[str, Any]) -> None:
        """Queue a row; give up if the writer died (its error is raised at the end)."""
        while not writer_task.done():
            try:
                await asyncio.wait_for(queue.put(row), 1.0)
                return
            except asyncio.TimeoutError:
                continue

    async def one(entry: InputEntry) -> None:
        try:
            row = await evaluate_entry(oracle, entry, timeout_s, limits)
            if halt.keep(row):
                await put(row)
        finally:
            slots.release()

    writer_task = asyncio.create_task(write_loop())
    running: set[asyncio.Task[None]] = set()
    # The Oracle is held open for the whole batch: its provider pool keeps connections warm across
    # tasks and is closed when the batch ends (leaving the `async with`).
    async with oracle:
        try:
            for entry in entries:  # every line, valid or not, is parsed inside its own time budget
                await slots.acquire()
                if halt.stopped:  # the model endpoint is down: start nothing more
                    slots.release()
                    break
                task = asyncio.create_task(one(entry))
                running.add(task)
                task.add_done_callback(running.discard)
                if writer_task.done():
                    break  # the writer died (disk full...): stop feeding, surface its error below
            if running:
                await asyncio.gather(*running)
        finally:
            if not writer_task.done():
                await queue.put(None)
            await writer_task
