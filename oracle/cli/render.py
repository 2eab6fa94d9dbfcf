"""Tables and summaries for people, through rich: in colour on a terminal, plain text elsewhere.

The one renderer of the CLI's human-readable output (``route``, ``evaluate``, ``resume``,
``batch``, ``compare``, ``routes summary``, ``escalations list``, ``check``). The library hands over data (a
route, a result, a summary, table cells); this module lays it out as a list of blocks (lines and
tables) and ``show`` prints them. On a terminal rich draws them in colour at the terminal's width,
letting the free-text columns wrap. When stdout is not a terminal, or ``NO_COLOR`` is set, the same
lines and columns come out as plain ASCII: no colour, no wrapping, no trailing spaces, so a script
or a test reads one layout whatever screen it was started from.
"""

from __future__ import annotations

import io
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence, TextIO, Union

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:  # annotations only: `oracle route` should not build the result models
    from oracle.comparison.summary import CompareSummary
    from oracle.strategies.verifier.check import TestsCheck
    from oracle.escalation.store import StoredEscalation
    from oracle.results.result import Escalation, OracleResult
    from oracle.routing.route import Route
    from oracle.routing._summary import RouteSummary

PLAIN_BOX = box.Box("    \n    \n -- \n    \n    \n -- \n    \n    \n", ascii=True)
"""rich's SIMPLE box in ASCII: a rule under the header and one above the footer, nothing else."""
PLAIN_WIDTH = 10_000
"""Plain output is laid out at this width, wider than any line it holds: it never wraps."""
WHY_CHARS = 140
"""``oracle check``'s message column is cut here (the evidence is in ``--json``). A candidate's
``why`` is never cut: it wraps on a terminal and stays whole on one line in plain output."""


@dataclass(frozen=True)
class Col:
    """A column: its header, whether it holds numbers (right-aligned) or free text (wraps on a
    terminal; every other column keeps its cells on one line), and its footer cell."""

    header: str
    numeric: bool = False
    text: bool = False
    footer: str = ""


@dataclass(frozen=True)
class Grid:
    """A table as data; ``show`` builds the rich table for the output it goes to."""

    columns: Sequence[Col]
    rows: Sequence[Sequence[str | Text]]
    footer: bool = False


Block = Union[Text, Grid]
BLANK = Text("")
"""An empty line between blocks."""


def plain_output(stream: TextIO) -> bool:
    """Plain text when ``stream`` is not a terminal or ``NO_COLOR`` is set (no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return True
    # Under a live progress bar sharing the screen, stdout is rich's proxy (it draws what is
    # written above the bar); the terminal is the file behind it.
    stream = getattr(stream, "rich_proxied_file", stream)
    isatty = getattr(stream, "isatty", None)
    try:
        return not (callable(isatty) and isatty())
    except ValueError:  # a closed stream
        return True


def _table(grid: Grid, plain: bool) -> Table:
    table = Table(box=PLAIN_BOX if plain else box.SIMPLE, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0),
                  show_footer=grid.footer, header_style="" if plain else "bold",
                  footer_style="" if plain else "bold")
    for col in grid.columns:
        table.add_column(col.header, footer=col.footer, justify="right" if col.numeric else "left",
                         no_wrap=plain or not col.text, overflow="fold")
    for row in grid.rows:
        table.add_row(*row)
    return table


def _console(stream: TextIO, plain: bool) -> Console:
    if plain:
        return Console(file=stream, width=PLAIN_WIDTH, color_system=None, force_terminal=False,
                       highlight=False, markup=False, emoji=False, legacy_windows=False)
    return Console(file=stream, highlight=False, markup=False, emoji=False)


def plain_text(blocks: Iterable[Block]) -> str:
    """The blocks as plain text: what a pipe or a file receives."""
    buf = io.StringIO()
    console = _console(buf, plain=True)
    for block in blocks:
        console.print(_table(block, True) if isinstance(block, Grid) else block)
    return "\n".join(line.rstrip() for line in buf.getvalue().splitlines())


def show(blocks: Sequence[Block], stream: TextIO | None = None) -> None:
    """Print ``blocks`` on ``stream`` (default: stdout as it is now, so text printed under a live
    progress bar is drawn above it), in colour or plain (``plain_output``)."""
    stream = stream or sys.stdout
    if plain_output(stream):
        stream.write(plain_text(blocks) + "\n")
        return
    console = _console(stream, plain=False)
    for block in blocks:
        console.print(_table(block, False) if isinstance(block, Grid) else block)


def _line(*parts: str | tuple[str, str]) -> Text:
    """A line from plain strings and (text, style) pairs."""
    text = Text()
    for part in parts:
        if isinstance(part, tuple):
            text.append(*part)
        else:
            text.append(part)
    return text


# -- route and result ------------------------------------------------------------------------------

def route_blocks(route: Route, task_id: str, *, verbose: bool = False) -> list[Block]:
    """The route and its trace: every vote with its weight and spread, the totals; the policies
    that abstained are counted under the table, listed in it only with ``verbose`` (``-v``): they
    gave no vote, and most tasks leave most policies silent."""
    blocks: list[Block] = [_line(f"task {task_id}: -> ", (route.evaluator or "NONE", "bold"),
                                 f"  confidence {route.confidence:.3f}",
                                 ("  [override]", "cyan") if route.override else "",
                                 ("  [LOW CONFIDENCE]", "bold yellow") if route.low_confidence else "")]
    if route.fallback:
        blocks.append(_line((f"fallback: {route.fallback}", "yellow")))
    rows: list[Sequence[str | Text]] = [
        [v.policy, f"{v.weight:g}", f"{v.scores['verifier']:.2f}", f"{v.scores['decision_judge']:.2f}",
         f"{v.scores['llm_judge']:.2f}", v.reason] for v in route.votes]
    if verbose:
        rows += [[Text(name, style="dim"), "-", "-", "-", "-", Text("abstained", style="dim")]
                 for name in route.abstained]
    totals = route.totals
    blocks.append(Grid([Col("policy", footer="TOTAL"), Col("weight", numeric=True),
                        Col("verifier", numeric=True, footer=f"{totals['verifier']:.2f}"),
                        Col("decision", numeric=True, footer=f"{totals['decision_judge']:.2f}"),
                        Col("llm_judge", numeric=True, footer=f"{totals['llm_judge']:.2f}"),
                        Col("reason", text=True)], rows, footer=True))
    if route.abstained and not verbose:
        n = len(route.abstained)
        blocks.append(_line((f"{n} {'policy' if n == 1 else 'policies'} abstained (-v lists them)", "dim")))
    gates = [f"{g.evaluator}: {g.reason}" for g in route.gates if not g.feasible]
    if gates:
        blocks.append(_line("infeasible: " + "; ".join(gates)))
    blocks.append(_line((f"config {route.config_hash}  schema {route.schema_version}  {route.elapsed_us:.0f} us",
                         "dim")))
    return blocks


def why(details: Mapping[str, Any]) -> str:
    """A one-line reason per candidate: the evaluator's summary or message (a reference check's
    says what was compared), else its answers or criteria."""
    if details.get("summary"):
        return str(details["summary"])
    if details.get("message"):
        return str(details["message"])
    if isinstance(details.get("questions"), list):
        return "  ".join(f"{q.get('question_id')}={q.get('selected')} ({q.get('confidence') or 0:.2f})"
                         for q in details["questions"] if isinstance(q, dict))
    criteria = details.get("criteria")
    rows = list(criteria.values()) if isinstance(criteria, dict) else criteria
    if isinstance(rows, list):
        parts = []
        for c in rows:
            if not isinstance(c, dict):
                continue
            value = c.get("score", c.get("probability"))
            shown = "-" if value is None else (f"{value:.2f}" if isinstance(value, float) else str(value))
            parts.append(f"{str(c.get('criterion', '?'))[:28]}: {shown}")
        return "  ".join(parts)
    return ""


def cost_text(result: Any) -> str:
    """A result's cost, the one way costs print (oracle/results/_cost.py)."""
    from oracle.results._cost import result_cost_text

    return result_cost_text(result)


def _verdict(passed: bool | None) -> str | Text:
    if passed is None:
        return "-"
    return Text("PASS", style="green") if passed else Text("FAIL", style="bold red")


def _status(value: str) -> Text:
    return Text(value, style="green" if value == "ok" else "yellow" if value in ("pending", "escalated", "skipped")
                else "red")


def result_blocks(res: OracleResult, *, show_route: bool = True, verbose: bool = False) -> list[Block]:
    """The result for people; ``show_route=False`` (``oracle evaluate --no-route``) replaces the
    routing table with one line naming the evaluator, for reading many verdicts at once."""
    route = res.route
    blocks: list[Block] = (route_blocks(route, res.task_id, verbose=verbose) if show_route
                           else [_line(f"task {res.task_id}: ", (route.evaluator or "NONE", "bold"),
                                       f" (route confidence {route.confidence:.3f})")])
    status = _line("status: ")
    status.append_text(_status(res.status.value))
    r = res.result
    if r is not None and r.reason:
        status.append(f" (reason: {r.reason}: not run to the end, no verdict)", style="yellow")
    run = r.provenance.execution if r is not None else None
    if run is not None and run.integrity:
        sandbox = f", {run.backend} sandbox ({run.isolation_level})" if run.backend else ""
        status.append(f"  integrity: {run.integrity}{sandbox}")
    blocks.append(status)
    if r is not None:
        if r.error:
            style = "yellow" if res.status.value == "skipped" else "red"
            label = "why" if style == "yellow" else "error"
            blocks.append(_line((f"{label}: {r.error.type}: {r.error.message}", style)))
        for b in r.broken_tests:  # the task's fault: scored for no candidate
            blocks.append(_line(("broken test ", "yellow"), (b.test, "bold"), f": {b.reason}"))
        rows: list[Sequence[str | Text]] = [
            [
                c.id,
                "-" if c.score is None else f"{c.score:.3f}",
                _verdict(c.passed),
                _status(c.status.value),
                why(c.details),
            ]
            for c in r.candidates
        ]
        if rows:
            blocks.append(Grid([Col("candidate"), Col("score", numeric=True), Col("passed"), Col("status"),
                                Col("why", text=True)], rows))
        cost = cost_text(r)
        blocks.append(_line(f"best: {', '.join(r.best) or '-'}  ranking: {' > '.join(r.ranking) or '-'}  "
                            f"calls {r.calls}  cost {cost}  {r.latency_ms:.0f} ms"))
    if res.escalation and res.escalation.answer is not None:
        e = res.escalation
        blocks.append(_line((f"answered [{e.reason}]", "green"), f" {e.id}: {e.answer!r}"))
    elif res.escalation:
        e = res.escalation
        blocks.append(_line((f"ESCALATION [{e.reason}{', blocking' if e.blocking else ''}]", "bold yellow"),
                            f" {e.id}: {e.question}" + (f"  options: {e.options}" if e.options else "")))
    return blocks


# -- oracle check ----------------------------------------------------------------------------------

def _outcome(row: Mapping[str, Any]) -> Text:
    word = str(row["outcome"])
    style = "bold red" if row.get("broken") else "green" if word in ("pass", "passed", "xpassed") else \
        "dim" if word in ("unverified", "not_run") else "yellow"
    return Text(word + (" (broken)" if row.get("broken") and word != "broken" else ""), style=style)


def check_blocks(report: TestsCheck) -> list[Block]:
    """``oracle check``: each test's outcome on the reference solution, then the broken ones."""
    on = (
        report.subject
        or ("task.solution" + (" (cached)" if report.cached else "") if report.solution else None)
        or "an empty program (no task.solution: only what is broken whatever the candidate shows)"
    )
    blocks: list[Block] = [_line(f"task {report.task_id}: the tests on ", (on, "bold"))]
    if report.error:
        blocks.append(_line((f"error: {report.error}", "red")))
        return blocks
    if report.tests:
        blocks.append(
            Grid(
                [Col("test"), Col("kind"), Col("outcome"), Col("ms", numeric=True), Col("message", text=True)],
                [
                    [r["test"], r["kind"], _outcome(r), f"{r['duration_ms']:.0f}", str(r["message"])[:WHY_CHARS]]
                    for r in report.tests
                ],
            )
        )
    else:
        blocks.append(_line("no tests"))
    n = len(report.broken_tests)
    blocks.append(_line((f"{n} broken test(s)", "bold red") if n else ("no broken test", "green"),
                        f" of {len(report.tests)}"))
    return blocks


def _verdict_text(status: str, best: Sequence[str], evaluator: str | None) -> str:
    return f"status {status}, best: {', '.join(best) or '-'} ({evaluator or 'no evaluator'})"


def resume_blocks(final: OracleResult) -> list[Block]:
    """``oracle resume``: the person's answer, what it changed in the task or the verdict, the
    verdict before it and the one after it, then the new result (the route in one line)."""
    history = final.history
    answer = next((h for h in reversed(history) if h.get("kind") == "human_answer"), None)
    if answer is None:  # not a resumed result: show it as any result
        return result_blocks(final)
    at = history.index(answer)
    first = next((h.get("result") for h in reversed(history[:at])
                  if h.get("kind") == "evaluation" and isinstance(h.get("result"), dict)), None) or {}
    given = []
    if answer.get("choice") is not None:
        given.append(f"choice {answer['choice']!r}")
    if answer.get("text"):
        given.append(f"text {answer['text']!r}")
    who = f" by {answer['answered_by']}" if answer.get("answered_by") else ""
    changed = answer.get("applied") or []
    inner = first.get("result")
    first_result: dict[str, Any] = inner if isinstance(inner, dict) else {}
    r = final.result
    blocks: list[Block] = [
        _line(("answer", "bold"), f" to {answer.get('escalation_id')} ({answer.get('reason')}){who}: "
              + ("; ".join(given) or "(empty)")),
        _line(("changed", "bold"), ": " + ("; ".join(str(c) for c in changed) or "nothing")),
        _line(("before", "bold"), ": " + _verdict_text(str(first.get("status", "?")), first_result.get("best") or [],
                                                        (first.get("route") or {}).get("evaluator"))),
        _line(("after", "bold"), ":  " + _verdict_text(final.status.value, r.best if r else [], final.route.evaluator)),
        BLANK]
    return blocks + result_blocks(final, show_route=False)


def escalation_hint(esc: Escalation | None, store_path: str, *, not_stored: str | None = None) -> str | None:
    """What to do with a request that is still open: where it is filed and the commands that answer
    and apply it (with ``--store`` when the store is not the default), or, when it was not filed
    (``not_stored`` says why), that it was not and how to file it. None for no request or an
    answered one."""
    if esc is None or esc.answer is not None:
        return None
    from oracle.escalation._location import store_flag

    if not_stored is not None:
        return (f"not stored ({not_stored}): this request is printed only; run again without {not_stored} to "
                f"file it in {store_path} (then `oracle escalations answer`), or with --human console to "
                "answer it now")
    flag = store_flag(store_path)
    choice = " --choice OPTION" if esc.options else ' "your answer"'
    return (f"stored in {store_path}: answer it with `oracle escalations answer {esc.id}{choice}{flag}`, "
            f"then apply it with `oracle resume {esc.id}{flag}`")


# -- batch summary ---------------------------------------------------------------------------------

def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def batch_summary_blocks(summary: Mapping[str, Any]) -> list[Block]:
    """Per evaluator: rows, pass rate (of the rows with a verdict), failures, escalations, cost
    (rows whose cost is unknown counted apart, never as 0), latency p50/p95 (oracle.batch.summary)."""
    from oracle.results._cost import cost_text as cost_text_of

    rows = []
    for name, s in summary["evaluators"].items():
        cost = cost_text_of(s["cost_usd"], model_calls=s.get("model_calls"), digits=4) + (
            f" (+{s['cost_unknown']} unknown)" if s["cost_unknown"] else "")
        rows.append([name, str(s["count"]),
                     "-" if s["pass_rate"] is None else f"{s['pass_rate']:.1%} of {s['judged']}",
                     str(s["failures"]), str(s.get("skipped", 0)), str(s["escalations"]), cost,
                     _fmt(s["latency_p50_ms"], ".1f"), _fmt(s["latency_p95_ms"], ".1f")])
    columns = [Col("evaluator"), *(Col(h, numeric=True) for h in ("count", "pass rate", "failures", "skipped",
                                                                  "escalations", "cost", "p50 ms", "p95 ms"))]
    return [Grid(columns, rows), _line(f"{summary['rows']} rows")]


# -- comparison ------------------------------------------------------------------------------------

def _num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def comparison_blocks(summary: CompareSummary) -> list[Block]:
    """One row per arm (oracle.comparison._table), then the routing figures and what was n/a."""
    from oracle.comparison._table import COLUMNS, row

    blocks: list[Block] = [
        _line(f"{summary.items} items, repeats={summary.repeats}, orders={','.join(summary.orders)}, "
              f"seed={summary.seed}"),
        Grid([Col(COLUMNS[0]), *(Col(name, numeric=True) for name in COLUMNS[1:])], [row(a) for a in summary.results])]
    if summary.labels is not None:  # --labels verifier
        info = summary.labels
        blocks.insert(1, _line(f"labels from execution (label_source: verifier): {info.items_labelled} items labelled, "
                               f"{info.items_excluded} excluded; tests vs gold {_num(info.gold_agreement)} over "
                               f"{info.gold_units} candidates; the verifier is not ranked"))
    gap = summary.routing_gap
    if gap is not None:
        blocks.append(_line(f"routing (item-macro over {gap.items} items): routed {_num(gap.routed)}, best single "
                            f"arm {gap.best_single_arm} {_num(gap.best_single_arm_agreement)}, per-item best "
                            f"{_num(gap.per_item_best)}"))
    for a in summary.results:
        if a.routing_accuracy is not None:
            blocks.append(_line(f"routing accuracy: {a.routing_accuracy:.3f} over {a.routing_labelled} labelled "
                                f"items (routes: {', '.join(f'{k} {v}' for k, v in a.routes.items())})"))
    for a in summary.results:
        for reason, count in a.not_applicable_reasons.items():
            blocks.append(_line(f"n/a {a.arm} x{count}: {reason}"))
    for a in summary.results:
        blocks.extend(failure_lines(a.arm, a.failed, a.failure_reasons))
    if any(a.cost_per_100_items_usd is None and a.runs for a in summary.results):
        blocks.append(_line("$/100 items unknown: a price is unknown (providers.prices), so the cost is unknown, "
                            "not 0"))
    return blocks


FAILURE_LINES = 3
"""Distinct failure reasons shown per arm; the rest are counted (all of them are in summary.json)."""


def failure_lines(arm: str, failed: int, reasons: Mapping[str, int]) -> list[Block]:
    """What an arm's failed runs said: each reason with its count, the first failure's first."""
    if not failed:
        return []
    shown = list(reasons.items())[:FAILURE_LINES]
    lines: list[Block] = [_line((f"failed {arm} x{count}: ", "red"), reason) for reason, count in shown]
    rest = sum(reasons.values()) - sum(count for _, count in shown)
    if rest:
        lines.append(_line(f"failed {arm} x{rest}: other reasons (summary.json: failure_reasons)"))
    if not shown:  # a summary written before reasons were kept
        lines.append(_line(f"failed {arm} x{failed}: see runs.jsonl for the errors"))
    return lines


# -- routes summary --------------------------------------------------------------------------------

def _pct(rate: float | None) -> str:
    return "-" if rate is None else f"{100 * rate:.1f}%"


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _group_rate(summary: RouteSummary, evaluator: str, rate: str) -> float | None:
    """A traced figure of one evaluator; None when only untraced rows name it."""
    group = summary.by_evaluator.get(evaluator)
    return getattr(group, rate) if group is not None else None


def route_summary_blocks(summary: RouteSummary) -> list[Block]:
    """What the router did over a results file (oracle.routing._summary)."""
    from oracle.routing._summary import CONFIDENCE_BINS

    s = summary
    blank = BLANK
    blocks: list[Block] = [
        _line(f"rows: {s.rows}  routed: {s.routed}  unrouted (invalid input or crash): {s.unrouted}"
              + (f"  without trace (evaluate -q: evaluator only): {s.untraced}" if s.untraced else "")),
        _line(f"fallback: {s.fallbacks} ({_pct(s.fallback_rate)})  override: {s.overrides} ({_pct(s.override_rate)})  "
              f"low confidence: {s.low_confidence} ({_pct(s.low_confidence_rate)})  "
              f"escalated: {s.escalated} ({_pct(s.escalation_rate)})"), blank,
        Grid([Col("evaluator"), Col("rows", numeric=True), Col("share", numeric=True), Col("low conf", numeric=True),
              Col("escalated", numeric=True)],
             [[k, str(v), _pct(_share(v, s.routed + s.untraced)), _pct(_group_rate(s, k, "low_confidence_rate")),
               _pct(_group_rate(s, k, "escalation_rate"))] for k, v in s.evaluators.items()]), blank]
    peak = max(1, max(s.confidence_histogram))
    blocks += [Grid([Col("confidence"), Col("rows", numeric=True), Col("")],
                    [[f"{i / CONFIDENCE_BINS:.1f}-{(i + 1) / CONFIDENCE_BINS:.1f}", str(n),
                      Text("#" * round(40 * n / peak), style="cyan")]
                     for i, n in enumerate(s.confidence_histogram)]), blank]
    blocks.append(Grid([Col("policy"), Col("votes", numeric=True), Col("agreed", numeric=True),
                        Col("agreement", numeric=True), Col("abstained", numeric=True)],
                       [[k, str(p.votes), str(p.agreed), _pct(p.agreement), str(p.abstained)]
                        for k, p in s.policies.items()]))
    if s.by_escalation_reason:
        blocks += [blank, Grid([Col("escalation reason"), Col("rows", numeric=True), Col("low conf", numeric=True)],
                               [[k, str(g.rows), _pct(g.low_confidence_rate)]
                                for k, g in s.by_escalation_reason.items()])]
    if s.history_snapshots:
        blocks += [blank, *(_line(f"history snapshot {h[:16]}: {n} rows") for h, n in s.history_snapshots.items())]
    return blocks


# -- escalations -----------------------------------------------------------------------------------

def escalation_list_blocks(entries: Sequence[StoredEscalation]) -> list[Block]:
    """One row per stored request: id, state, reason, whether it blocks the verdict, task."""
    return [Grid([Col("id"), Col("state"), Col("reason"), Col("request"), Col("task", text=True)],
                 [[e.id, e.state, e.request.reason, "blocking" if e.request.blocking else "advisory", e.task_id]
                  for e in entries])]
