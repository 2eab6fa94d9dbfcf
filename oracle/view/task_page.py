"""A task's page: prompt, candidates, tests, judge scores, pairwise orders, trace, provenance, escalation.

Each part reads the result as written (the row schema's ``result``: an OracleResult in JSON) and
shows what is there: a verifier result has tests, a judge's has criteria or pairs; nothing is
invented for a part the evaluator did not produce. Everything from the files is escaped.
"""

from __future__ import annotations

import html
import json
from typing import Any

from oracle.view import candidates, trace
from oracle.view.catalog import Entry

esc = html.escape


def _num(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return esc(str(value))


def _prompt(entry: Entry) -> str:
    task = (entry.item or {}).get("task") or {}
    prompt = task.get("prompt")
    body = (f'<pre class="prompt">{esc(str(prompt))}</pre>' if prompt is not None
            else '<p class="muted">The task input is not in the files given.</p>')
    crit = task.get("criteria") or []
    extra = ""
    if crit:
        items = "".join(f"<li>{esc(str(c.get('criterion') if isinstance(c, dict) else c))}</li>" for c in crit)
        extra = f"<h3>Criteria</h3><ul>{items}</ul>"
    return f'<section id="prompt"><h2>Prompt</h2>{body}{extra}</section>'


def _tests(evaluation: dict[str, Any]) -> str:
    rows = []
    for cand in evaluation.get("candidates") or []:
        for test in (cand.get("details") or {}).get("tests") or []:
            if not isinstance(test, dict):
                continue
            outcome = str(test.get("outcome"))
            rows.append(f'<tr class="outcome-{esc(outcome)}"><td>{esc(str(cand.get("id")))}</td>'
                        f'<td>{esc(str(test.get("name")))}</td><td>{esc(str(test.get("kind") or ""))}</td>'
                        f'<td class="oc">{esc(outcome)}</td><td>{esc(str(test.get("message") or ""))}</td>'
                        f'<td>{_num(test.get("duration_ms"))}</td>'
                        f'<td>{esc(str(test.get("integrity") or ""))}</td></tr>')
    broken = "".join(f"<li>{esc(str(b.get('test')))}: {esc(str(b.get('reason')))}</li>"
                     for b in evaluation.get("broken_tests") or [] if isinstance(b, dict))
    if not rows and not broken:
        return ""
    table = ('<table id="tests"><thead><tr><th>candidate</th><th>test</th><th>kind</th><th>outcome</th>'
             f'<th>message</th><th>ms</th><th>integrity</th></tr></thead><tbody>{"".join(rows)}</tbody></table>')
    return (f'<section id="tests-section"><h2>Tests</h2>{table}'
            f'{f"<h3>Broken tests (the task is at fault)</h3><ul>{broken}</ul>" if broken else ""}</section>')


def _criteria(evaluation: dict[str, Any]) -> str:
    """Per-criterion scores (LLM judge, pointwise) and per-question answers (decision judge)."""
    rows = []
    for cand in evaluation.get("candidates") or []:
        details = cand.get("details") or {}
        for cid, c in (details.get("criteria") or {}).items():
            if isinstance(c, dict):
                normalized = c.get("normalized")
                width = 0 if normalized is None else 100 * max(0.0, min(1.0, float(normalized)))
                why = "; ".join(str(r) for r in c.get("rationales") or [])
                rows.append(f'<tr><td>{esc(str(cand.get("id")))}</td><td>{esc(str(c.get("criterion") or cid))}</td>'
                            f'<td>{_num(c.get("score"))}</td><td><span class="bar score" style="width:{width:.0f}px">'
                            f'</span> {_num(normalized)}</td><td>{_num(c.get("weight"))}</td><td>{esc(why)}</td></tr>')
        for q in details.get("questions") or []:
            if isinstance(q, dict):
                probs = q.get("probabilities") or {}
                shown = ", ".join(f"{k} {v:.2f}" for k, v in sorted(probs.items(), key=lambda kv: -kv[1])) if probs \
                    else str(q.get("reason") or "")
                answer = q.get("selected") if not q.get("unparsed") else "unparsed"
                rows.append(f'<tr><td>{esc(str(cand.get("id")))}</td><td>{esc(str(q.get("question_id")))}</td>'
                            f'<td>{esc(str(answer))}</td><td>{_num(q.get("confidence"))}</td>'
                            f'<td>{esc(str(q.get("probability_source") or ""))}</td><td>{esc(shown)}</td></tr>')
    if not rows:
        return ""
    return ('<section id="criteria"><h2>Judge scores</h2><table id="criteria-table"><thead><tr><th>candidate</th>'
            '<th>criterion / question</th><th>score / answer</th><th>normalized / confidence</th>'
            f'<th>weight / source</th><th>rationale / probabilities</th></tr></thead><tbody>{"".join(rows)}'
            '</tbody></table></section>')


def _pairs(evaluation: dict[str, Any]) -> str:
    """Pairwise comparisons in both orders; a pair whose orders disagree is marked as a flip."""
    pairs = [p for p in (evaluation.get("details") or {}).get("pairs") or [] if isinstance(p, dict)]
    if not pairs:
        return ""
    blocks = []
    for p in pairs:
        a, b = str(p.get("a")), str(p.get("b"))
        flip = bool(p.get("order_inconsistent"))
        orders = []
        for o in p.get("orders") or []:
            if not isinstance(o, dict):
                continue
            seat = o.get("winner_seat")
            winner = o.get("seat_a") if seat == "A" else o.get("seat_b") if seat == "B" else None
            dist = (o.get("readout") or {}).get("distribution") or {}
            orders.append(f'<tr><td>A={esc(str(o.get("seat_a")))}, B={esc(str(o.get("seat_b")))}</td>'
                          f'<td>{esc(str(seat))} ({esc(str(winner))})</td>'
                          f'<td>{esc(", ".join(f"{k} {v:.2f}" for k, v in dist.items()))}</td>'
                          f'<td>{esc(str(o.get("rationale") or ""))}</td></tr>')
        mark = ('<span class="badge flip">order flip: the winner changed with the order (a tie)</span>' if flip
                else '<span class="badge">orders agree</span>')
        blocks.append(f'<div class="pair{" flipped" if flip else ""}"><h3>{esc(a)} vs {esc(b)} {mark}</h3>'
                      f'<p>winner: {esc(str(p.get("winner")))}; P({esc(a)} wins) = {_num(p.get("p_a"))}</p>'
                      '<table><thead><tr><th>order (seats)</th><th>winner seat</th><th>readout</th><th>evidence'
                      f'</th></tr></thead><tbody>{"".join(orders)}</tbody></table></div>')
    return f'<section id="pairs"><h2>Pairwise, both orders</h2>{"".join(blocks)}</section>'


def _provenance(evaluation: dict[str, Any]) -> str:
    prov = evaluation.get("provenance") or {}
    calls = [c for c in prov.get("calls") or [] if isinstance(c, dict)]
    execution = prov.get("execution") or {}
    facts = [("evaluator", json.dumps(prov.get("evaluator"))), ("calls", evaluation.get("calls")),
             ("cost_usd", evaluation.get("cost_usd")), ("latency_ms", evaluation.get("latency_ms")),
             ("model requested", prov.get("model_requested")), ("config hash", prov.get("config_hash")),
             ("integrity", execution.get("integrity")), ("sandbox", execution.get("backend")),
             ("isolation", execution.get("isolation_level"))]
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{_num(v)}</td></tr>" for k, v in facts if v is not None)
    call_rows = "".join(
        f'<tr><td>{esc(str(c.get("member") or ""))}</td><td>{esc(str(c.get("model_requested")))}</td>'
        f'<td>{esc(str(c.get("model_answered")))}</td><td>{esc(str(c.get("probability_source")))}</td>'
        f'<td>{_num(c.get("input_tokens"))}/{_num(c.get("output_tokens"))}</td><td>{_num(c.get("cost_usd"))}</td>'
        f'<td>{_num(c.get("latency_ms"))}</td><td>{"yes" if c.get("cached") else "no"}</td></tr>' for c in calls)
    table = ("" if not calls else
             '<table id="calls"><thead><tr><th>member</th><th>model asked</th><th>model answered</th>'
             '<th>probability source</th><th>tokens in/out</th><th>cost</th><th>ms</th><th>cached</th></tr>'
             f'</thead><tbody>{call_rows}</tbody></table>')
    return f'<section id="provenance"><h2>Provenance</h2><table class="facts">{rows}</table>{table}</section>'


def _escalation(entry: Entry, *, answerable: bool) -> str:
    esc_ = entry.escalation
    if not esc_:
        return ""
    stored = entry.stored or {}
    options = list(esc_.get("options") or stored.get("options") or [])
    state = stored.get("state") or ("answered" if esc_.get("answer") else "pending")
    answer = stored.get("answer")
    given = (f'<p id="answer-given">answer: choice={esc(repr((answer or {}).get("choice")))} '
             f'text={esc(repr((answer or {}).get("text")))} by {esc(str((answer or {}).get("answered_by")))}</p>'
             if answer else "")
    form = ""
    if answerable and stored:
        opts = "".join(f'<option value="{esc(o)}">{esc(o)}</option>' for o in options)
        choice = (f'<label>choice <select name="choice"><option value="">(none)</option>{opts}</select></label>'
                  if options else "")
        form = (f'<form id="answer-form" data-id="{esc(str(esc_.get("id")))}">{choice}'
                '<label>answer <textarea name="text" rows="2"></textarea></label>'
                '<label>by <input name="by"></label><label><input type="checkbox" name="replace"> replace an '
                'existing answer</label><label class="token">token (when bound beyond loopback) '
                '<input name="token" type="password" autocomplete="off"></label>'
                '<button type="submit">answer</button><output id="answer-status"></output></form>')
    elif answerable:
        form = '<p class="muted">Not in the escalation store given (--store): answer it with the CLI.</p>'
    evidence = json.dumps(esc_.get("evidence") or {}, indent=1, sort_keys=True, default=str)[:20_000]
    return (f'<section id="escalation"><h2>Escalation</h2><p><b>{esc(str(esc_.get("reason")))}</b>'
            f'{" (blocks the verdict)" if esc_.get("blocking") else " (advisory)"}; state <span id="esc-state">'
            f'{esc(state)}</span>; id <code>{esc(str(esc_.get("id")))}</code></p>'
            f'<p class="question">{esc(str(esc_.get("question") or stored.get("question") or ""))}</p>'
            f'{"<ol>" + "".join(f"<li>{esc(o)}</li>" for o in options) + "</ol>" if options else ""}'
            f'{given}{form}<details><summary>evidence</summary><pre>{esc(evidence)}</pre></details></section>')


def render(entry: Entry, *, answerable: bool) -> str:
    """The page body of one task (no frame): every part the result has."""
    row = entry.row
    evaluation = entry.evaluation or {}
    result = entry.result or {}
    error = row.get("error") or evaluation.get("error")
    head = (f'<h1>{esc(str(row.get("task_id")))}</h1><p class="summary">status <b class="status">'
            f'{esc(str(row.get("status")))}</b> · evaluator <b>{esc(str(row.get("evaluator")))}</b> · best '
            f'{esc(", ".join(row.get("best") or []) or "none")} · score {_num(row.get("score"))} · '
            f'<span class="muted">{esc(entry.source)}</span></p>')
    if error:
        head += f'<p class="error">{esc(str(error.get("type")))}: {esc(str(error.get("message")))}</p>'
    if evaluation.get("explanation"):
        head += f'<p>{esc(str(evaluation["explanation"]))}</p>'
    parts = [head, _prompt(entry), candidates.section(entry.item, evaluation), _tests(evaluation),
             _criteria(evaluation), _pairs(evaluation), trace.section(result.get("route")),
             _provenance(evaluation) if evaluation else "", _escalation(entry, answerable=answerable)]
    return f'<article class="task" data-key="{esc(entry.key)}">{"".join(parts)}</article>'
