"""``oracle routes summary``: figures computed from real route traces, both row shapes, the CLI
(real subprocess) on a real batch output, and bad input named."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from oracle.batch import run_batch
from oracle.config.model import OracleConfig
from oracle.cli.render import plain_text, route_summary_blocks
from oracle.routing._summary import summarize_routes
from oracle.routing._chain import PolicyChain
from oracle.routing.route import route_adapter
from oracle.tasks.task import TaskInput
from tests.data.tasks import code_task, open_task, question_task

ROOT = Path(__file__).resolve().parent.parent
CHAIN = PolicyChain(OracleConfig())


def routed(data):
    item = TaskInput.model_validate(data)
    return route_adapter().dump_python(CHAIN.route(item.task, item.trajectories), mode="json")


def test_figures_from_real_traces_in_both_row_shapes():
    routes = [routed(code_task()), routed(question_task()), routed(open_task()), routed(open_task(id="o2")),
              routed(code_task(evaluator="llm_judge")),
              routed({"task": {"id": "n", "prompt": "p", "evaluator": "verifier"}, "trajectories": [{"id": "a"}]})]
    escalations = [None, None, {"reason": "low_decision_confidence"}, None, None, {"reason": "no_feasible_evaluator"}]
    rows = []
    for i, (route, esc) in enumerate(zip(routes, escalations)):
        if i % 2:  # `oracle evaluate --json` shape
            rows.append({"task_id": f"t{i}", "status": "ok", "route": route, "escalation": esc})
        else:  # `oracle batch` shape: the trace under result
            rows.append({"line": i + 1, "task_id": f"t{i}", "status": "ok", "escalation": esc,
                         "result": {"status": "ok", "route": route, "escalation": esc}})
    rows.append({"line": 99, "task_id": None, "status": "failed", "valid": False, "result": None, "escalation": None})
    s = summarize_routes(rows)
    assert (s.rows, s.routed, s.unrouted) == (7, 6, 1)
    chosen = [r["evaluator"] or "(none)" for r in routes]
    assert s.evaluators == {k: chosen.count(k) for k in sorted(set(chosen))}
    assert s.evaluators["(none)"] == 1 and s.evaluators["llm_judge"] >= 3
    assert sum(s.confidence_histogram) == 6
    for r in routes:
        assert s.confidence_histogram[min(9, int(r["confidence"] * 10))] >= 1
    assert s.overrides == 2 and s.override_rate == round(2 / 6, 6)
    assert s.fallbacks == sum(r["fallback"] is not None for r in routes)
    assert s.escalated == 2 and s.by_escalation_reason["no_feasible_evaluator"].rows == 1
    assert s.by_evaluator["(none)"].escalation_rate == 1.0
    # Agreement recomputed by hand from the votes.
    for name, stats in s.policies.items():
        votes = [(v, r["evaluator"]) for r in routes for v in r["votes"] if v["policy"] == name]
        agreed = sum(1 for v, ev in votes if ev is not None and v["scores"][ev] == max(v["scores"].values()))
        assert (stats.votes, stats.agreed) == (len(votes), agreed)
        assert stats.abstained == sum(name in r["abstained"] for r in routes)
    assert any(p.agreement is not None and p.agreement < 1 for p in s.policies.values())  # the override disagrees
    text = plain_text(route_summary_blocks(s))
    assert "rows: 7  routed: 6  unrouted" in text and "no_feasible_evaluator" in text


@pytest.mark.slow
def test_cli_on_a_batch_output_plain_and_json(tmp_path):
    tasks = [{"task": {"id": "capital", "prompt": "Capital of France?", "reference": "Paris"},
              "trajectories": [{"id": "a", "answer": "Paris"}]},
             {"task": {"id": "nothing", "prompt": "Fine?", "evaluator": "verifier"}, "trajectories": [{"id": "a"}]},
             {"task": {"id": "bad", "prompt": 3}}]
    src = tmp_path / "tasks.jsonl"
    src.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    run_batch(src, tmp_path / "rows.jsonl", config=OracleConfig(), store_path=str(tmp_path / "store.db"),
              progress_tty=False)
    cmd = [sys.executable, "-m", "oracle", "routes", "summary", str(tmp_path / "rows.jsonl")]
    plain = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert plain.returncode == 0, plain.stderr
    assert "rows: 3  routed: 2  unrouted (invalid input or crash): 1" in plain.stdout
    assert "history snapshot" in plain.stdout  # the batch learned from its store
    as_json = subprocess.run(cmd + ["--json"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    data = json.loads(as_json.stdout)
    assert data["evaluators"] == {"(none)": 1, "verifier": 1}
    assert data["by_escalation_reason"]["no_feasible_evaluator"]["rows"] == 1
    assert data["override_rate"] == 0.5 and sum(data["confidence_histogram"]) == 2


@pytest.mark.slow
def test_cli_names_bad_input(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(code_task()) + "\n")
    done = subprocess.run([sys.executable, "-m", "oracle", "routes", "summary", str(tasks)],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 2 and "line 1" in done.stderr and "result row" in done.stderr
    broken = tmp_path / "rows.jsonl"
    broken.write_text('{"status": "ok"}\n{"status": \n')
    done = subprocess.run([sys.executable, "-m", "oracle", "routes", "summary", str(broken)],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 2 and "line 2" in done.stderr
    done = subprocess.run([sys.executable, "-m", "oracle", "routes", "summary", str(tmp_path / "none.jsonl")],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 2 and "no such file" in done.stderr
