"""Readable tables for people: the route trace and an evaluation result (plain text, no deps)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: `oracle route` should not build the result models
    from oracle.results.result import OracleResult
    from oracle.routing.route import Route


def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def render_route(route: Route, task_id: str) -> str:
    head = (f"task {task_id}: -> {route.evaluator or 'NONE'}  confidence {route.confidence:.3f}"
            + ("  [override]" if route.override else "")
            + ("  [LOW CONFIDENCE]" if route.low_confidence else ""))
    parts = [head]
    if route.fallback:
        parts.append(f"fallback: {route.fallback}")
    rows = [[v.policy, f"{v.weight:g}", f"{v.scores['verifier']:.2f}", f"{v.scores['decision_judge']:.2f}",
             f"{v.scores['llm_judge']:.2f}", v.reason] for v in route.votes]
    rows += [[name, "-", "-", "-", "-", "abstained"] for name in route.abstained]
    rows.append(["TOTAL", "", f"{route.totals['verifier']:.2f}", f"{route.totals['decision_judge']:.2f}",
                 f"{route.totals['llm_judge']:.2f}", ""])
    parts.append(_table(rows, ["policy", "weight", "verifier", "decision", "llm_judge", "reason"]))
    gates = [f"{g.evaluator}: {g.reason}" for g in route.gates if not g.feasible]
    if gates:
        parts.append("infeasible: " + "; ".join(gates))
    parts.append(f"config {route.config_hash}  schema {route.schema_version}  {route.elapsed_us:.0f} us")
    return "\n".join(parts)


def _why(details: dict) -> str:
    """A one-line reason per candidate: the evaluator's summary, else its answers or criteria."""
    if details.get("summary"):
        return str(details["summary"])
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


def render_result(res: OracleResult, *, show_route: bool = True) -> str:
    """The result for people; ``show_route=False`` (``oracle evaluate --no-route``) replaces the
    routing table with one line naming the evaluator, for reading many verdicts at once."""
    route = res.route
    head = (render_route(route, res.task_id) if show_route
            else f"task {res.task_id}: {route.evaluator or 'NONE'} (route confidence {route.confidence:.3f})")
    parts = [head, f"status: {res.status.value}"]
    r = res.result
    run = r.provenance.execution if r is not None else None
    if run is not None and run.integrity:
        sandbox = f", {run.backend} sandbox ({run.isolation_level})" if run.backend else ""
        parts[-1] += f"  integrity: {run.integrity}{sandbox}"
    if r is not None:
        if r.error:
            parts.append(f"error: {r.error.type}: {r.error.message}")
        rows = [[c.id, "-" if c.score is None else f"{c.score:.3f}",
                 "-" if c.passed is None else ("PASS" if c.passed else "FAIL"), c.status.value,
                 _why(c.details)[:140]] for c in r.candidates]
        if rows:
            parts.append(_table(rows, ["candidate", "score", "passed", "status", "why"]))
        cost = "unknown" if r.cost_usd is None else f"${r.cost_usd:.6f}"
        parts.append(f"best: {', '.join(r.best) or '-'}  ranking: {' > '.join(r.ranking) or '-'}  "
                     f"calls {r.calls}  cost {cost}  {r.latency_ms:.0f} ms")
    if res.escalation:
        e = res.escalation
        parts.append(f"ESCALATION [{e.reason}{', blocking' if e.blocking else ''}] {e.id}: {e.question}"
                     + (f"  options: {e.options}" if e.options else ""))
    return "\n".join(parts)
