"""The Ray engine (optional extra ``[ray]``): the same rows, computed on a Ray cluster.

The driver reads the input, ships chunks of raw task lines to remote workers (each runs the local
asyncio evaluation on its chunk with the same config) and writes rows as chunks come back, through
the same crash-safe writer, so output and resume behave exactly as with the local engine.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from oracle.batch.output import RowWriter
from oracle.batch.source import InputEntry, entry_to_wire

_ORACLES: dict[str, Any] = {}


def _evaluate_chunk(config_json: str, store_path: str | None, chunk: list[tuple[int, str, bytes, int, str]],
                    concurrency: int, timeout_s: float | None, history_through: int | None = None) -> list[dict[str, Any]]:
    """Runs in a Ray worker: rebuild the entries, parse and evaluate them concurrently, return rows."""
    import asyncio

    from oracle.batch.rows import evaluate_entry
    from oracle.batch.source import entry_from_wire
    from oracle.config.model import OracleConfig
    from oracle.escalation.store import EscalationStore
    from oracle._oracle import Oracle

    key = f"{config_json}|{store_path}|{history_through}"
    if key not in _ORACLES:
        store = EscalationStore(store_path) if store_path else None
        _ORACLES[key] = Oracle(OracleConfig.model_validate_json(config_json), store=store,
                               learn_history=store is not None and history_through is not None,
                               history_through=history_through)
    oracle = _ORACLES[key]

    async def run() -> list[dict[str, Any]]:
        slots = asyncio.Semaphore(concurrency)

        async def one(values: tuple[int, str, bytes, int, str]) -> dict[str, Any]:
            async with slots:
                return await evaluate_entry(oracle, entry_from_wire(values), timeout_s, oracle.config.limits)

        return list(await asyncio.gather(*(one(c) for c in chunk)))

    return asyncio.run(run())


def run_ray(entries: Iterable[InputEntry], config_json: str, store_path: str | None, writer: RowWriter, *,
            concurrency: int, on_row: Callable[[dict[str, Any]], None], address: str | None = None,
            chunk_size: int = 16, source: str | None = None, timeout_s: float | None = None,
            history_through: int | None = None) -> None:
    """``history_through``: the driver's history snapshot (its last outcome seq), rebuilt exactly by
    every worker; None: workers do not learn from history."""
    try:
        import ray
    except ImportError:  # pragma: no cover - depends on the extra
        raise RuntimeError("the ray engine needs the optional extra: pip install 'oracle-router[ray]'") from None
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    remote = ray.remote(_evaluate_chunk)
    max_chunks = max(2, concurrency // chunk_size + 1)
    in_flight: list[Any] = []
    chunk: list[tuple[int, str, bytes, int, str]] = []

    def drain(block_until: int) -> None:
        nonlocal in_flight
        while len(in_flight) > block_until:
            ready, in_flight = ray.wait(in_flight, num_returns=1)
            for ref in ready:
                rows = ray.get(ref)
                writer.write(rows)
                for r in rows:
                    on_row(r)

    def submit() -> None:
        nonlocal chunk
        if chunk:
            in_flight.append(remote.remote(config_json, store_path, chunk, chunk_size, timeout_s, history_through))
            chunk = []
            drain(max_chunks)

    for entry in entries:  # raw lines travel; workers parse them within the task timeout
        chunk.append(entry_to_wire(entry))
        if len(chunk) >= chunk_size:
            submit()
    submit()
    drain(0)
