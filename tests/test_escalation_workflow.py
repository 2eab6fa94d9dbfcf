"""Issue 29, "escalation workflow as documented": the commands a user types, in the order the docs
show them, as real subprocesses in a fresh directory, with the real sandbox for the code task.

docs/examples/escalate.yaml: two candidates fail the same test, so the verifier cannot separate
them and files a request (``inseparable_candidates``) whose id is a content hash.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ESCALATE = ROOT / "docs" / "examples" / "escalate.yaml"
ESC = "esc-62d178e73e3d5c2a"
DEFAULT_STORE = Path(".oracle") / "escalations.sqlite"

pytestmark = pytest.mark.sandbox


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    return subprocess.run([sys.executable, "-m", "oracle", *args], capture_output=True, text=True, cwd=cwd,
                          env={**base, "NO_COLOR": "1", **(env or {})}, timeout=300)


def listed(run: subprocess.CompletedProcess) -> list[str]:
    return re.findall(r"^(esc-[0-9a-f]+)\s", run.stdout, re.MULTILINE)


# -- one store resolution for every command ----------------------------------------------------

@pytest.mark.slow
def test_evaluate_files_in_the_default_store_and_list_reads_it(tmp_path):
    ran = cli("evaluate", str(ESCALATE), "-q", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert (tmp_path / DEFAULT_STORE).is_file()
    assert f"stored in {DEFAULT_STORE}: answer it with `oracle escalations answer {ESC} --choice OPTION`" in ran.stdout
    assert listed(cli("escalations", "list", cwd=tmp_path)) == [ESC]


@pytest.mark.slow
def test_a_run_that_raises_no_request_leaves_no_store_behind(tmp_path):
    ran = cli("evaluate", str(ROOT / "docs" / "examples" / "add.yaml"), "-q", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert not (tmp_path / ".oracle").exists()


@pytest.mark.slow
def test_oracle_store_reaches_every_command(tmp_path):
    env = {"ORACLE_STORE": "team.sqlite"}
    assert cli("evaluate", str(ESCALATE), "-q", cwd=tmp_path, env=env).returncode == 0
    assert (tmp_path / "team.sqlite").is_file() and not (tmp_path / ".oracle").exists()
    assert listed(cli("escalations", "list", cwd=tmp_path, env=env)) == [ESC]
    answered = cli("escalations", "answer", ESC, "--choice", "none", cwd=tmp_path, env=env)
    assert answered.returncode == 0 and "`oracle resume esc-62d178e73e3d5c2a --store team.sqlite`" in answered.stdout
    assert cli("resume", ESC, "--json", cwd=tmp_path, env=env).returncode == 0


@pytest.mark.slow
def test_the_configs_store_path_is_used_when_no_option_or_variable_names_one(tmp_path):
    (tmp_path / "oracle.yaml").write_text("escalation:\n  store_path: review/queue.sqlite\n")
    assert cli("--config", "oracle.yaml", "evaluate", str(ESCALATE), "-q", cwd=tmp_path).returncode == 0
    assert (tmp_path / "review" / "queue.sqlite").is_file()
    assert listed(cli("--config", "oracle.yaml", "escalations", "list", cwd=tmp_path)) == [ESC]
    # the order: --store, then ORACLE_STORE, then the config
    env = {"ORACLE_STORE": "env.sqlite"}
    cli("--config", "oracle.yaml", "evaluate", str(ESCALATE), "-q", cwd=tmp_path, env=env)
    cli("--config", "oracle.yaml", "evaluate", str(ESCALATE), "-q", "--store", "flag.sqlite", cwd=tmp_path, env=env)
    assert (tmp_path / "env.sqlite").is_file() and (tmp_path / "flag.sqlite").is_file()


@pytest.mark.slow
def test_every_hint_names_the_store_and_runs_as_printed(tmp_path):
    """`evaluate --store esc.sqlite` then the commands it prints, copied as they are."""
    ran = cli("evaluate", str(ESCALATE), "--store", "esc.sqlite", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    answer_cmd, resume_cmd = re.findall(r"`(oracle [^`]+)`", ran.stdout.splitlines()[-2])
    assert answer_cmd == f"oracle escalations answer {ESC} --choice OPTION --store esc.sqlite"
    assert resume_cmd == f"oracle resume {ESC} --store esc.sqlite"
    answered = cli(*shlex.split(answer_cmd.replace("OPTION", "bitmask"))[1:], cwd=tmp_path)
    assert answered.returncode == 0, answered.stderr
    assert f"apply it with `oracle resume {ESC} --store esc.sqlite`" in answered.stdout
    resumed = cli(*shlex.split(resume_cmd)[1:], cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert not (tmp_path / ".oracle").exists()  # nothing went to the default store
    # a resume of a request nobody answered yet says which command answers it, with the store
    cli("evaluate", str(ROOT / "docs" / "examples" / "escalate.yaml"), "--store", "other.sqlite", cwd=tmp_path)
    early = cli("resume", ESC, "--store", "other.sqlite", cwd=tmp_path)
    assert early.returncode == 2 and f"`oracle escalations answer {ESC} --store other.sqlite`" in early.stderr


@pytest.mark.slow
def test_no_store_prints_the_request_and_says_how_to_file_it(tmp_path):
    ran = cli("evaluate", str(ESCALATE), "--no-store", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert f"ESCALATION [inseparable_candidates] {ESC}: No candidate of task 'is-even'" in ran.stdout
    assert "options: ['bitmask', 'modulo', 'none']" in ran.stdout
    assert "not stored (--no-store)" in ran.stdout and f"file it in {DEFAULT_STORE}" in ran.stdout
    assert not (tmp_path / ".oracle").exists()
    as_json = cli("evaluate", str(ESCALATE), "--no-store", "--json", cwd=tmp_path)
    assert json.loads(as_json.stdout)["escalation"]["id"] == ESC and "not stored (--no-store)" in as_json.stderr
    assert cli("escalations", "list", cwd=tmp_path).stderr.startswith("no escalations")


# -- resume in text mode ---------------------------------------------------------------------

@pytest.mark.slow
def test_resume_shows_the_answer_what_it_changed_and_the_new_verdict(tmp_path):
    assert cli("evaluate", str(ESCALATE), "--store", "esc.sqlite", cwd=tmp_path).returncode == 0
    assert cli("escalations", "answer", ESC, "--choice", "bitmask", "--by", "alice", "--store", "esc.sqlite",
               cwd=tmp_path).returncode == 0
    resumed = cli("resume", ESC, "--store", "esc.sqlite", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    out = resumed.stdout
    assert f"answer to {ESC} (inseparable_candidates) by alice: choice 'bitmask'" in out
    assert "changed: human verdict: 'bitmask' is best" in out
    assert "before: status ok, best: - (verifier)" in out
    assert "after:  status escalated, best: bitmask (verifier)" in out
    assert "best: bitmask" in out and "ESCALATION [" not in out  # not the first banner again
    assert f"answered [inseparable_candidates] {ESC}: 'bitmask'" in out


# -- a reviewer's note on a code task ------------------------------------------------------------

@pytest.mark.slow
def test_a_note_on_a_code_task_reaches_no_code_and_honest_bodies_still_run(tmp_path):
    assert cli("evaluate", str(ESCALATE), "--store", "esc.sqlite", cwd=tmp_path).returncode == 0
    note = "Negative even numbers must return True too."
    assert cli("escalations", "answer", ESC, note, "--store", "esc.sqlite", cwd=tmp_path).returncode == 0
    resumed = cli("resume", ESC, "--store", "esc.sqlite", "--json", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    final = json.loads(resumed.stdout)
    assert "no code found" not in resumed.stdout
    scores = {c["id"]: c["score"] for c in final["result"]["candidates"]}
    assert scores == pytest.approx({"modulo": 2 / 3, "bitmask": 2 / 3})  # what they scored before the note
    outcomes = [t["outcome"] for c in final["result"]["candidates"] for t in c["details"]["tests"]]
    assert outcomes.count("pass") == 4 and outcomes.count("fail") == 2
    answer = next(h for h in final["history"] if h["kind"] == "human_answer")
    assert answer["text"] == note and "the prompt is unchanged" in answer["applied"][0]
    # the stored task of the follow-up keeps the prompt as written, the note beside it
    from oracle.escalation.store import EscalationStore
    from oracle.tasks.files import load_tasks

    with EscalationStore(tmp_path / "esc.sqlite") as store:
        entry = store.get(ESC)
    assert entry.item.task.prompt == load_tasks(ESCALATE)[0].task.prompt


def test_the_judges_read_a_reviewers_note_beside_the_prompt():
    from oracle.strategies.decision_judge.requests import visible_state
    from oracle.strategies.llm_judge.prompts import pointwise_messages, rubric
    from oracle.tasks.questions import QuestionInputs
    from oracle.tasks.task import Task, Trajectory

    task = Task(id="t", prompt="Is the refund due?", criteria=["The reply is correct."],
                metadata={"human_answers": [{"escalation_id": "esc-1", "text": "The order shipped late.",
                                             "question": "When did it ship?"}]})
    candidate = Trajectory(id="a", answer="Yes.")
    assert task.clarifications() == ["The order shipped late. (a reviewer's answer to: When did it ship?)"]
    state = visible_state(task, candidate, QuestionInputs())
    assert state["prompt"] == "Is the refund due?" and state["clarifications"] == task.clarifications()
    user = pointwise_messages(task, candidate, rubric(task), scale_min=1, scale_max=5)[-1].content
    assert "The order shipped late." in user and "Is the refund due?" in user
    assert visible_state(task, candidate, QuestionInputs(task=["reference"])) == {"response": "Yes."}


@pytest.mark.slow
def test_batch_says_where_its_requests_went_with_the_store(tmp_path):
    from oracle.tasks.files import load_tasks

    line = load_tasks(ESCALATE)[0].model_dump(mode="json")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(line) + "\n")
    ran = cli("batch", str(tasks), "-o", "rows.jsonl", "--store", "esc.sqlite", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    (hint,) = re.findall(r"`(oracle escalations list[^`]*)`", ran.stderr)
    assert hint == "oracle escalations list --store esc.sqlite" and "filed in esc.sqlite" in ran.stderr
    assert listed(cli(*shlex.split(hint)[1:], cwd=tmp_path)) == [ESC]


def test_the_store_rule_in_order():
    from oracle.config.model import OracleConfig
    from oracle.escalation._location import DEFAULT_STORE_PATH, resolve_store_path, store_flag

    plain = OracleConfig()
    configured = OracleConfig(escalation={"store_path": "cfg.sqlite"})
    assert resolve_store_path(None, plain, {}) == DEFAULT_STORE_PATH == ".oracle/escalations.sqlite"
    assert resolve_store_path(None, configured, {}) == "cfg.sqlite"
    assert resolve_store_path(None, configured, {"ORACLE_STORE": "env.sqlite"}) == "env.sqlite"
    assert resolve_store_path("flag.sqlite", configured, {"ORACLE_STORE": "env.sqlite"}) == "flag.sqlite"
    assert resolve_store_path(None, plain, {"ORACLE_STORE": "  "}) == DEFAULT_STORE_PATH  # blank: unset
    assert store_flag(DEFAULT_STORE_PATH) == "" and store_flag("my store.sqlite") == " --store 'my store.sqlite'"
