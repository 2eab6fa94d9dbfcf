"""Small pieces of the batch: progress output, summary statistics, resume keys."""

from __future__ import annotations

import io
import json

from oracle.batch.progress import Progress
from oracle.batch.source import iter_entries, parse_entry
from oracle.batch.summary import summarize
from oracle.cli.progress_bar import rich_bar
from oracle.cli.render import batch_summary_blocks, plain_text
from tests.data.tasks import question_task


def test_progress_draws_a_bar_on_a_terminal():
    out = io.StringIO()
    p = Progress(4, skipped=1, stream=out, tty=True, bar=rich_bar())
    p._last = -1e9
    p.update({"status": "failed"})
    p.close()
    text = out.getvalue()
    assert "━" in text and "2/4" in text and "failed=1" in text and text.rstrip("\x1b[?25h").endswith("\n")


def test_summary_per_evaluator(tmp_path):
    rows = [{"key": f"k{i}", "line": i, "evaluator": "verifier", "valid": True, "status": "ok",
             "passed": i % 2 == 0, "escalation": None, "cost_usd": 0.0, "calls": 1, "latency_ms": float(i)}
            for i in range(1, 21)]
    rows.append({"key": "x", "line": 21, "evaluator": "llm_judge", "valid": True, "status": "failed",
                 "passed": None, "escalation": {"id": "e", "reason": "r", "blocking": True},
                 "cost_usd": None, "calls": 2, "latency_ms": 5.0})
    rows.append({"key": "y", "line": 22, "evaluator": None, "valid": False, "status": "failed", "passed": None,
                 "escalation": None, "cost_usd": None, "calls": 0, "latency_ms": None})
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    s = summarize(path)
    v = s["evaluators"]["verifier"]
    assert v["count"] == 20 and v["pass_rate"] == 0.5 and v["failures"] == 0
    assert v["latency_p50_ms"] == 10.5 and abs(v["latency_p95_ms"] - 19.05) < 1e-9
    lj = s["evaluators"]["llm_judge"]
    assert lj["failures"] == 1 and lj["escalations"] == 1 and lj["cost_unknown"] == 1
    assert s["evaluators"]["(invalid input)"]["count"] == 1
    table = plain_text(batch_summary_blocks(s))
    assert "(+1 unknown)" in table and "50.0% of 20" in table


def test_keys_follow_content_and_repeats(tmp_path):
    a = json.dumps(question_task(id="same"))
    b = json.dumps(question_task(id="same", prompt="another prompt"))
    path = tmp_path / "t.jsonl"
    path.write_text(f"{a}\n\n{a}\n{b}\nnot json\n")
    entries = list(iter_entries(path))
    assert [e.line for e in entries] == [1, 3, 4, 5]
    assert entries[1].key == entries[0].key + "#1"                   # a repeat gets its own key
    assert entries[2].key != entries[0].key                          # changed content, new key
    assert entries[3].raw == b"not json\n" and entries[3].key not in {e.key for e in entries[:3]}
    assert parse_entry(entries[0]).task_id == "same" and parse_entry(entries[3]).error is not None
