"""pending -> new process -> answer -> resume -> final verdict, across real process restarts.

Every step is a separate ``python -m oracle`` subprocess sharing one real SQLite file; the model
endpoint is the scripted wire-protocol server running in the test process.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from oracle.config.model import OracleConfig
from oracle.escalation.store import EscalationStore
from oracle.escalation.human import CallbackHuman, ConsoleHuman, HumanAnswer
from oracle._oracle import Oracle
from oracle.results.result import Status
from tests.data.tasks import question_task
from tests.plugins.scripted_server import decision_handler

ROOT = Path(__file__).resolve().parent.parent


def _handler():
    """Refuse questions about the task whose prompt says so; answer the rest (billing likely)."""
    refuse = decision_handler(refuse={"team": "not allowed to read payment data"})
    answer = decision_handler(probabilities={"team": {"billing": 0.9, "technical": 0.1}})
    return lambda req: refuse(req) if b"REFUSE-ME" in req.body else answer(req)


def _config(server, tmp: Path) -> Path:
    path = tmp / "oracle.yaml"
    path.write_text(json.dumps({
        "providers": {"judge": {"base_url": server.base_url, "max_retries": 0, "timeout_s": 5},
                      "decision": {"kind": "decisions", "base_url": server.base_url, "max_retries": 0,
                                   "timeout_s": 5}},
        "escalation": {"store_path": str(tmp / "escalations.sqlite")}}))
    return path


def _cli(config: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for k in ("ORACLE_BASE_URL", "ORACLE_DECISION_URL", "ORACLE_MODEL", "ORACLE_API_KEY"):
        env.pop(k, None)
    proc = subprocess.run([sys.executable, "-m", "oracle", "--config", str(config), *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.mark.slow
def test_pending_answer_resume_across_processes(scripted_server, tmp_path):
    scripted_server.set_handler(_handler())
    config = _config(scripted_server, tmp_path)
    tasks = tmp_path / "tasks.jsonl"
    forced = question_task(id="needs-tests", evaluator="verifier")       # verifier infeasible: no tests
    refused = question_task(id="refused", prompt="REFUSE-ME: customer was charged twice.")
    tasks.write_text(json.dumps(forced) + "\n" + json.dumps(refused) + "\n")

    # process 1: the batch files two blocking requests and leaves both rows pending
    _cli(config, "batch", str(tasks), "-o", str(tmp_path / "out.jsonl"))
    rows = {r["task_id"]: r for r in map(json.loads, (tmp_path / "out.jsonl").read_text().splitlines())}
    assert rows["needs-tests"]["status"] == "pending" and rows["refused"]["status"] == "pending"
    assert rows["needs-tests"]["escalation"]["reason"] == "no_feasible_evaluator"
    assert rows["refused"]["escalation"]["reason"] == "decision_refusal"

    # process 2: a reviewer lists them
    listed = {e["task_id"]: e for e in map(json.loads, _cli(config, "escalations", "list", "--json")
                                             .stdout.splitlines())}
    assert {e["state"] for e in listed.values()} == {"pending"}
    forced_id, refused_id = listed["needs-tests"]["id"], listed["refused"]["id"]
    assert "decision_judge" in listed["needs-tests"]["options"]
    assert "not allowed to read payment data" in listed["refused"]["question"]

    # processes 3, 4: answers (a prefix of the id is enough)
    _cli(config, "escalations", "answer", forced_id, "--choice", "decision_judge", "--by", "alice")
    _cli(config, "escalations", "answer", refused_id[:12], "Billing is right: a double charge.",
         "--choice", "pass")
    shown = json.loads(_cli(config, "escalations", "show", forced_id, "--json").stdout)
    assert shown["state"] == "answered" and shown["answer"]["choice"] == "decision_judge"

    # processes 5, 6: resume applies each answer, re-routes and re-evaluates
    final = json.loads(_cli(config, "resume", forced_id, "--json").stdout)
    assert final["status"] == "escalated"
    assert final["route"]["evaluator"] == "decision_judge" and final["route"]["override"] is True
    assert final["result"]["status"] == "ok" and final["result"]["candidates"][0]["passed"] is True
    kinds = [h["kind"] for h in final["history"]]
    assert kinds == ["evaluation", "human_answer", "evaluation"]
    assert final["history"][0]["result"]["status"] == "failed"           # the first evaluation, kept
    assert final["history"][1]["choice"] == "decision_judge" and final["history"][1]["answered_by"] == "alice"
    assert final["history"][2]["summary"]["evaluator"] == "decision_judge"

    final2 = json.loads(_cli(config, "resume", refused_id, "--json").stdout)
    assert final2["status"] == "escalated"
    cand = final2["result"]["candidates"][0]
    assert cand["passed"] is True and cand["details"]["evaluator_passed"] is None
    assert final2["result"]["details"]["human_verdict"]["passed"] is True
    assert final2["result"]["details"]["refused"] is True                # the evaluator still refused
    assert "Billing is right" in final2["history"][1]["text"]

    # process 7: both resolved, and the final result is stored
    states = {e["id"]: e["state"] for e in map(json.loads, _cli(config, "escalations", "list", "--json")
                                               .stdout.splitlines())}
    assert states == {forced_id: "resolved", refused_id: "resolved"}
    with EscalationStore(tmp_path / "escalations.sqlite") as store:
        assert store.get(forced_id).final_result.status == Status.escalated


def test_human_oracle_answers_at_once(scripted_server, tmp_path):
    scripted_server.set_handler(_handler())
    config = OracleConfig.model_validate(json.loads(_config(scripted_server, tmp_path).read_text()))
    out = io.StringIO()
    human = ConsoleHuman(stdin=io.StringIO("1\n"), stdout=out)   # option 1 = first feasible evaluator
    with EscalationStore(tmp_path / "s.sqlite") as store:
        res = Oracle(config, human=human, store=store).evaluate(question_task(id="now", evaluator="verifier"))
        assert "needs-tests" not in out.getvalue() and "'now'" in out.getvalue()
        assert res.status == Status.escalated and res.route.override
        assert res.route.evaluator == "decision_judge"
        [entry] = store.list("resolved")                          # the answer is on record too
        assert entry.answer.choice == "decision_judge" and entry.final_result.status == Status.escalated


async def test_async_human_that_declines_leaves_it_pending(scripted_server, tmp_path):
    scripted_server.set_handler(_handler())
    config = OracleConfig.model_validate(json.loads(_config(scripted_server, tmp_path).read_text()))
    asked = []

    class Later:
        async def aask(self, request):
            asked.append(request.reason)
            return None

    with EscalationStore(tmp_path / "s.sqlite") as store:
        res = await Oracle(config, human=Later(), store=store).aevaluate(
            question_task(id="later", prompt="REFUSE-ME please"))
        assert asked == ["decision_refusal"] and res.status == Status.pending
        assert store.count("pending") == 1
        with pytest.raises(ValueError, match="choice"):
            store.answer(res.escalation.id, HumanAnswer(choice="maybe"))


def test_free_text_answer_becomes_a_note_the_judge_reads(scripted_server, tmp_path):
    scripted_server.set_handler(_handler())
    config = OracleConfig.model_validate(json.loads(_config(scripted_server, tmp_path).read_text()))
    human = CallbackHuman(lambda req: "The customer is on the enterprise plan.")
    res = Oracle(config, human=human).evaluate(question_task(id="text", prompt="REFUSE-ME again"))
    assert res.history[1]["applied"] == ["answer text added to task.metadata.human_answers (the judges read it "
                                         "beside the prompt; the prompt is unchanged)"]
    sent = [r.body.decode() for r in scripted_server.requests]
    assert any("enterprise plan" in body for body in sent)        # the evaluator saw the new fact
