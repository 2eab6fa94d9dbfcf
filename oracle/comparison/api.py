"""``oracle.compare`` / ``oracle.acompare``: the library face of a research comparison.

    from oracle import compare
    result = compare("labelled.jsonl", "out/", arms=["decision_judge", "llm_judge"], repeats=3,
                     both_orders=True, limit=40)
    result.summary.results[0].agreement, result.summary_path, result.report_path

The CLI (``oracle compare``) is a thin layer over this. Bad input (labels, arms, settings) raises
``TaskValidationError`` naming the field before any model call or code execution.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence, TextIO

from oracle._internal.safe_files import write_atomic
from oracle.comparison._labels import LabelledItem, load_labelled
from oracle.comparison._plan import ORDERS_BOTH, ORDERS_ONE, limit_items, select_items
from oracle.comparison.records import ARMS, RunRecord
from oracle.comparison._runner import RunSettings, run_config, run_units, summarize_runs
from oracle.comparison.summary import LABEL_SOURCES, CompareSummary
from oracle.config.model import OracleConfig
from oracle.providers.budget import Budget, check_prices
from oracle.errors import TaskValidationError

if TYPE_CHECKING:
    from oracle.batch.progress import BarFactory

DEFAULT_ARMS = ARMS
DEFAULT_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class CompareResult:
    """What a comparison produced: the summary, its records and where the files are."""

    summary: CompareSummary
    records: list[RunRecord]
    out_dir: Path
    runs_path: Path
    summary_path: Path
    report_path: Path | None
    """None when the report could not be written (``report_error`` says why)."""
    report_error: str | None
    computed: int
    """Runs done by this call."""
    resumed: int
    """Runs found in ``runs.jsonl`` from an earlier, interrupted call and not redone."""
    cached_calls: int = 0
    """Model calls of this call's runs that the response cache answered (no request sent)."""
    cache_path: Path | None = None
    """The response cache file the runs used (None: no cache)."""


def check_settings(arms: Sequence[str], repeats: int, limit: int | None, timeout_s: float | None,
                   concurrency: int) -> tuple[str, ...]:
    """The arms as a tuple; bad settings raise naming the option."""
    arms = tuple(dict.fromkeys(a.strip() for a in arms if a.strip()))
    unknown = [a for a in arms if a not in ARMS]
    if unknown or not arms:
        raise TaskValidationError(f"--arms: unknown arm(s) {unknown or '(none given)'}; choose from {', '.join(ARMS)}",
                                  field="--arms")
    if repeats < 1:
        raise TaskValidationError("--repeats: must be at least 1", field="--repeats")
    if limit is not None and limit < 1:
        raise TaskValidationError("--limit: must be at least 1", field="--limit")
    if timeout_s is not None and not timeout_s > 0:
        raise TaskValidationError("--timeout-s: must be above 0", field="--timeout-s")
    if concurrency < 1:
        raise TaskValidationError("--concurrency: must be at least 1", field="--concurrency")
    return arms


def _write_json_atomic(path: Path, data: object) -> None:
    write_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


async def acompare(labelled: str | Path | Sequence[LabelledItem], out_dir: str | Path, *,
                   arms: Sequence[str] = DEFAULT_ARMS, repeats: int = 1, both_orders: bool = False,
                   limit: int | None = None, select: Sequence[str] | None = None, seed: int | None = None,
                   timeout_s: float | None = DEFAULT_TIMEOUT_S, concurrency: int = 4,
                   cache: str | Path | bool | None = True,
                   config: OracleConfig | None = None, report: bool = True, source: str | None = None,
                   dropped_reserved: int = 0, progress_stream: TextIO | None = None,
                   progress_tty: bool | None = None, progress_bar: BarFactory | None = None,
                   budget: Budget | None = None, labels: str = "gold") -> CompareResult:
    """Run the comparison into ``out_dir`` (resuming what an earlier call left there).

    ``seed`` (default: the config's ``llm_judge.seed``) fixes every random choice, the LLM judge's
    placement included. ``cache``: True caches model replies in ``out_dir/cache/``, a directory
    caches there (shared between runs), False turns caching off (see ``_runner.run_config``).
    ``budget``: a ``Budget`` for every model request of this call (a cost budget over a model
    with no known price is refused before anything runs); runs it stops are ``skipped`` and a
    rerun computes them.
    ``labels="verifier"``: the verifier's pass/fail per candidate is the label the other arms are
    scored against (oracle/comparison/_verifier_labels.py); the verifier arm is added to ``arms``
    when missing (it produces the labels) and left out of the ranking. Which labels score the arms
    changes no run, so it is not part of the manifest: the same runs can be scored both ways."""
    from oracle.batch.lock import OutputLock

    arms_t = check_settings(arms, repeats, limit, timeout_s, concurrency)
    if labels not in LABEL_SOURCES:
        raise TaskValidationError(f"--labels: {labels!r} is not one of {', '.join(LABEL_SOURCES)}", field="--labels")
    if labels == "verifier" and "verifier" not in arms_t:
        arms_t = ("verifier", *arms_t)
    config = config or OracleConfig.load()
    seed = config.llm_judge.seed if seed is None else seed
    check_prices(config, budget)
    if isinstance(labelled, (str, Path)):
        source = source or str(labelled)
        items = load_labelled(labelled)
    else:
        items = list(labelled)
    items = limit_items(select_items(items, select), limit, seed)
    if not items:
        raise TaskValidationError("--select: no item matches", field="--select")
    from oracle.comparison._rubrics import apply_rubrics

    items, overlays, rubric_hashes = apply_rubrics(items, config)  # bad rubric: exit 2, nothing run
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise TaskValidationError(f"-o: not a directory: {out}", field="-o")
    out.mkdir(parents=True, exist_ok=True)
    config, cache_path = run_config(config, out, cache=cache, seed=seed)
    settings = RunSettings(arms=arms_t, repeats=repeats, orders=ORDERS_BOTH if both_orders else ORDERS_ONE,
                           seed=seed, timeout_s=timeout_s, concurrency=concurrency)
    runs_path = out / "runs.jsonl"
    with OutputLock(runs_path, input_path=source):
        outcome = await run_units(items, out, config=config, settings=settings, progress_stream=progress_stream,
                                  progress_tty=progress_tty, progress_bar=progress_bar, overlays=overlays,
                                  budget=budget)
        summary = summarize_runs(outcome.records, items, settings=settings, config=config, source=source,
                                 dropped_reserved=dropped_reserved, elapsed_s=outcome.elapsed_s,
                                 label_source=labels)
        if rubric_hashes:
            summary = summary.model_copy(update={"rubric_hashes": dict(sorted(rubric_hashes.items()))})
        summary_path = out / "summary.json"
        _write_json_atomic(summary_path, summary.model_dump(mode="json"))
        report_path: Path | None = None
        report_error: str | None = None
        if report:
            from oracle.comparison._report import write_report

            try:
                report_path = write_report(summary, outcome.records, out / "report.html")
            except ImportError as exc:
                report_error = f"{exc}"
    return CompareResult(summary=summary, records=outcome.records, out_dir=out, runs_path=runs_path,
                         summary_path=summary_path, report_path=report_path, report_error=report_error,
                         computed=outcome.computed, resumed=outcome.resumed, cached_calls=outcome.cached_calls,
                         cache_path=cache_path)


def compare(labelled: str | Path | Sequence[LabelledItem], out_dir: str | Path, **options: object) -> CompareResult:
    """Synchronous runner over ``acompare`` (safe inside a running event loop)."""
    from oracle._oracle import run_sync

    return run_sync(acompare(labelled, out_dir, **options))  # type: ignore[arg-type]
