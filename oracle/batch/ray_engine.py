"""The Ray engine (optional extra ``[ray]``): the same rows, computed on a Ray cluster.

The driver reads the input, ships chunks of raw task lines to remote workers (each runs the local
asyncio evaluation on its chunk with the same config) and writes rows as chunks come back, through
the same crash-safe writer, so output and resume behave exactly as with the local engine. Each
chunk comes back with the id of the node that computed it, so a run can show where its rows were
made (``BatchReport.nodes``). A repository task's bundle travels with its chunk: each distinct
bundle once through the object store, landed in a worker's repository cache when the worker does not
have that file (oracle/batch/bundles.py).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from oracle.batch.halt import Halt
from oracle.batch.output import RowWriter
from oracle.batch.source import InputEntry, entry_to_wire

_ORACLES: dict[str, Any] = {}


def _evaluate_chunk(config_json: str, store_path: str | None, chunk: list[tuple[int, str, bytes, int, str]],
                    concurrency: int, timeout_s: float | None,
                    history_through: int | None = None,
                    bundles: dict[str, tuple[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Runs in a Ray worker: rebuild the entries (their bundles landed here, see bundles.py), parse
    and evaluate them concurrently, return rows."""
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
    entries = [entry_from_wire(values) for values in chunk]
    if bundles:
        import ray

        from oracle.batch.bundles import landed_entries
        from oracle.repo.base import default_root

        cache = oracle.config.verifier.repo_cache or default_root()
        entries = landed_entries(entries, bundles, cache, ray.get)

    async def run() -> list[dict[str, Any]]:
        slots = asyncio.Semaphore(concurrency)

        async def one(entry: Any) -> dict[str, Any]:
            async with slots:
                return await evaluate_entry(oracle, entry, timeout_s, oracle.config.limits)

        return list(await asyncio.gather(*(one(e) for e in entries)))

    return asyncio.run(run())


def _evaluate_chunk_on_node(*args: Any) -> tuple[str, list[dict[str, Any]]]:
    """The remote task: the chunk's rows and the id of the Ray node that computed them."""
    import ray

    return ray.get_runtime_context().get_node_id(), _evaluate_chunk(*args)


def run_ray(entries: Iterable[InputEntry], config_json: str, store_path: str | None, writer: RowWriter, *,
            concurrency: int, on_row: Callable[[dict[str, Any]], None], address: str | None = None,
            chunk_size: int = 16, source: str | None = None, timeout_s: float | None = None,
            history_through: int | None = None, halt: Halt | None = None) -> dict[str, int]:
    """Evaluate every entry on the cluster; returns the rows computed per Ray node id.

    ``history_through``: the driver's history snapshot (its last outcome seq), rebuilt exactly by
    every worker; None: workers do not learn from history. Connects to ``address`` when Ray is not
    connected yet, and then disconnects at the end, so a later run can name another cluster; a
    connection the caller made is used as it is and left open. ``halt``: rows whose model endpoint
    was down are not written, and no chunk is submitted after the first (oracle/batch/halt.py)."""
    try:
        import ray
    except ImportError:  # pragma: no cover - depends on the extra
        raise RuntimeError("the ray engine needs the optional extra: pip install 'oracle-router[ray]'") from None
    connected_here = not ray.is_initialized()
    if connected_here:
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    try:
        return _submit_all(ray, entries, config_json, store_path, writer, concurrency=concurrency,
                           on_row=on_row, chunk_size=chunk_size, timeout_s=timeout_s,
                           history_through=history_through, halt=halt or Halt())
    finally:
        if connected_here:
            ray.shutdown()


def _submit_all(ray: Any, entries: Iterable[InputEntry], config_json: str, store_path: str | None,
                writer: RowWriter, *, concurrency: int, on_row: Callable[[dict[str, Any]], None],
                chunk_size: int, timeout_s: float | None, history_through: int | None,
                halt: Halt) -> dict[str, int]:
    from oracle.batch.bundles import Shipper

    remote = ray.remote(_evaluate_chunk_on_node)
    shipper = Shipper(ray.put)
    bundles: dict[str, tuple[str, Any]] = {}
    max_chunks = max(2, concurrency // chunk_size + 1)
    in_flight: list[Any] = []
    chunk: list[tuple[int, str, bytes, int, str]] = []
    nodes: dict[str, int] = {}

    def drain(block_until: int) -> None:
        nonlocal in_flight
        while len(in_flight) > block_until:
            ready, in_flight = ray.wait(in_flight, num_returns=1)
            for ref in ready:
                node, rows = ray.get(ref)
                rows = [r for r in rows if halt.keep(r)]
                writer.write(rows)
                nodes[node] = nodes.get(node, 0) + len(rows)
                for r in rows:
                    on_row(r)

    def submit() -> None:
        nonlocal chunk, bundles
        if chunk:
            in_flight.append(remote.remote(config_json, store_path, chunk, chunk_size, timeout_s, history_through,
                                           bundles))
            chunk, bundles = [], {}
            drain(max_chunks)

    for entry in entries:  # raw lines travel; workers parse them within the task timeout
        if halt.stopped:
            chunk = []
            break
        chunk.append(entry_to_wire(entry))
        shipped = shipper.ship(entry)  # the bundle's bytes once, its object with every chunk that needs it
        if shipped is not None:
            bundles[shipped[0]] = shipped[1]
        if len(chunk) >= chunk_size:
            submit()
    submit()
    drain(0)
    return nodes
