"""Rubric releases on real files: drafts, evidence, gates, promote/rollback, tampering, and tasks
that name a rubric, judged over real HTTP against the scripted server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from oracle import Oracle, OracleConfig
from oracle.errors import TaskValidationError
from oracle.rubrics import (Gate, RubricError, RubricEvidenceTooSmall, RubricGateFailed, RubricStore, RubricTampered,
                            read_evidence)
from tests.plugins.scripted_server import chat_reply

DRAFT = """\
description: Helpfulness of short answers
criteria:
  - criterion: Answers the question asked
    weight: 2
  - Cites a source
judge_prompt: |
  HOUSE RUBRIC v1. Scale $scale_min to $scale_max.
  $task_block
  $criteria_list
  $response_block
  Reply with: $reply_example
pass_threshold: 0.6
"""

GATES = [Gate(metric="agreement", op=">=", value=0.8), Gate(metric="n", op=">=", value=100)]


def oracle_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "oracle", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def evidence_file(path: Path, rubric_hash: str, answered: int | None = 25, **metrics: float) -> Path:
    """A calibration file (version 2 shape) whose evidence names a rubric hash, metrics and how many
    items were answered (None: a file that records no count)."""
    ev: dict = {"rubric_hash": rubric_hash, "metrics": metrics}
    if answered is not None:
        ev["item_outcomes"] = {"answered": answered, "failed": 3}
    path.write_text(json.dumps({"version": 2, "evaluator": "decision_judge", "models": {}, "evidence": ev}))
    return path


def compare_dir(path: Path, rubric: str, rubric_hash: str, answered: int | None = 25, **metrics: float) -> Path:
    path.mkdir()
    arm = {"arm": "routed", "agreement_ci95": [0.1, 0.9], **{k: v for k, v in metrics.items() if k != "n"}}
    if answered is not None:
        arm["answered_items"] = answered
    if "n" in metrics:
        arm.update(n=metrics["n"], decided=metrics["n"])
    (path / "summary.json").write_text(json.dumps({"schema_version": "1", "rubric_hashes": {rubric: rubric_hash},
                                                   "arms": ["llm_judge", "routed"],
                                                   "results": [{"arm": "llm_judge", "agreement": 0.99}, arm]}))
    return path


@pytest.fixture()
def store(tmp_path: Path) -> RubricStore:
    s = RubricStore(tmp_path / "rubrics", gates=GATES)
    s.new("helpful")
    s.draft_path("helpful").write_text(DRAFT)
    return s


def test_content_hash_ignores_formatting_and_follows_meaning(store: RubricStore):
    before = store.draft("helpful").content_hash()
    reformatted = json.dumps(json.loads(json.dumps(store.draft("helpful").model_dump(mode="json"))), indent=7)
    store.draft_path("helpful").write_text(reformatted)
    assert store.draft("helpful").content_hash() == before
    store.draft_path("helpful").write_text(DRAFT.replace("weight: 2", "weight: 3"))
    assert store.draft("helpful").content_hash() != before


def test_release_needs_evidence_for_this_exact_draft(store: RubricStore, tmp_path: Path):
    stale = evidence_file(tmp_path / "cal.json", "0" * 64, agreement=0.9, n=150)
    with pytest.raises(RubricError, match="rubric hash 000000000000"):
        store.release("helpful", read_evidence(stale))
    assert store.versions("helpful") == []


def test_gate_failure_names_the_metric_and_force_records_it(store: RubricStore, tmp_path: Path):
    digest = store.draft("helpful").content_hash()
    weak = compare_dir(tmp_path / "cmp", "helpful", digest, agreement=0.7, n=150, kappa=0.4)
    with pytest.raises(RubricGateFailed) as info:
        store.release("helpful", read_evidence(weak))
    assert [g.metric for g in info.value.failing] == ["agreement"]
    assert "agreement = 0.7 (gate: agreement >= 0.8)" in str(info.value)
    assert store.versions("helpful") == []

    rel = store.release("helpful", read_evidence(weak), force=True)
    assert rel.forced and rel.evidence.status == "fail" and rel.version == 1
    assert {g.metric: g.passed for g in rel.evidence.gates} == {"agreement": False, "n": True}
    assert store.resolve("helpful@1")[1].evidence_status == "forced"


def test_missing_metric_fails_its_gate(store: RubricStore, tmp_path: Path):
    digest = store.draft("helpful").content_hash()
    with pytest.raises(RubricGateFailed, match="n missing"):
        store.release("helpful", read_evidence(evidence_file(tmp_path / "c.json", digest, agreement=0.95)))


def test_promote_and_rollback_only_move_the_pointer(store: RubricStore, tmp_path: Path):
    digest = store.draft("helpful").content_hash()
    store.release("helpful", read_evidence(evidence_file(tmp_path / "a.json", digest, agreement=0.9, n=120)))
    store.draft_path("helpful").write_text(DRAFT.replace("Cites a source", "Cites a primary source"))
    digest2 = store.draft("helpful").content_hash()
    store.release("helpful", read_evidence(evidence_file(tmp_path / "b.json", digest2, agreement=0.85, n=130)))
    files = {p.name: p.read_bytes() for p in store.root.joinpath("helpful").glob("v*.json")}
    assert store.current("helpful") is None
    store.promote("helpful", 1)
    store.promote("helpful", 2)
    assert store.current("helpful") == 2
    assert store.rollback("helpful") == 1
    assert store.rollback("helpful") is None
    with pytest.raises(RubricError, match="nothing to roll back"):
        store.rollback("helpful")
    assert {p.name: p.read_bytes() for p in store.root.joinpath("helpful").glob("v*.json")} == files
    assert "Cites a primary source" in store.diff("helpful@1", "helpful@2")
    assert "-- criterion: Cites a source" in store.diff("helpful@1", "helpful@2")


def test_a_changed_release_file_is_refused(store: RubricStore, tmp_path: Path):
    digest = store.draft("helpful").content_hash()
    store.release("helpful", read_evidence(evidence_file(tmp_path / "a.json", digest, agreement=0.9, n=120)))
    store.promote("helpful", 1)
    path = store.root / "helpful" / "v1.json"
    path.write_text(path.read_text().replace('"weight": 2.0', '"weight": 9.0'))
    with pytest.raises(RubricTampered, match="changed after release"):
        store.load("helpful", 1)
    with pytest.raises(RubricTampered):
        store.promote("helpful", 1)


def test_a_malformed_index_is_refused_not_a_crash(store: RubricStore, tmp_path: Path):
    digest = store.draft("helpful").content_hash()
    store.release("helpful", read_evidence(evidence_file(tmp_path / "a.json", digest, agreement=0.9, n=120)))
    (store.root / "helpful" / "index.json").write_text('{"current": 1, "versions": []}')
    with pytest.raises(RubricTampered, match="not a rubric index"):
        store.load("helpful", 1)


def test_template_with_unknown_variable_is_refused_before_any_call(tmp_path: Path):
    s = RubricStore(tmp_path / "r")
    s.new("bad")
    s.draft_path("bad").write_text("criteria: [x]\n"
                                   "judge_prompt: '$response_block $criteria_list $reply_example $secret'\n")
    with pytest.raises(RubricError, match=r"unknown variable\(s\) \$secret"):
        s.draft("bad")
    s.draft_path("bad").write_text("criteria: [x]\njudge_prompt: 'Rate $response_block'\n")
    with pytest.raises(RubricError, match=r"missing required variable\(s\) \$criteria_list, \$reply_example"):
        s.draft("bad")


def _judge_config(server, rubric_dir: Path) -> OracleConfig:
    return OracleConfig(providers={"judge": server.provider_settings()},
                        llm_judge={"logprobs": False, "mode": "pointwise"}, rubrics={"dir": str(rubric_dir)})


def test_task_naming_a_release_is_judged_with_it_and_the_result_names_it(store: RubricStore, tmp_path: Path,
                                                                         scripted_server):
    digest = store.draft("helpful").content_hash()
    store.release("helpful", read_evidence(evidence_file(tmp_path / "a.json", digest, agreement=0.9, n=120)))
    store.promote("helpful", 1)
    cfg = _judge_config(scripted_server, store.root)
    scripted_server.push(chat_reply(json.dumps({"criteria": {
        "c1": {"rationale": "yes", "score": 9}, "c2": {"rationale": "some", "score": 6}}})))
    task = {"task": {"id": "q", "prompt": "Why is the sky blue?", "rubric": "helpful", "evaluator": "llm_judge"},
            "trajectories": [{"id": "a", "answer": "Rayleigh scattering (Strutt 1871)."}]}
    res = Oracle(cfg).evaluate(task)
    assert res.rubric is not None
    assert (res.rubric.name, res.rubric.version, res.rubric.content_hash, res.rubric.evidence_status) == (
        "helpful", 1, digest, "pass")
    body = scripted_server.requests[0].json
    user = [m["content"] for m in body["messages"] if m["role"] == "user"][0]
    assert user.startswith("HOUSE RUBRIC v1. Scale 1 to 10.")
    assert "Answers the question asked" in user and "$" not in user
    prov = res.result.provenance
    assert "pointwise_user_task" in prov.prompt_templates and "pointwise_user_v1" not in prov.prompt_templates
    # the rubric's pass threshold is applied through the config this evaluation ran with
    assert prov.config_hash != cfg.hash()
    assert res.result.candidates[0].passed is True


def test_task_with_rubric_and_inline_criteria_or_a_tampered_rubric_is_bad_input(store: RubricStore, tmp_path: Path,
                                                                                 scripted_server):
    cfg = _judge_config(scripted_server, store.root)
    both = {"task": {"id": "q", "prompt": "p", "rubric": "helpful", "criteria": ["x"]},
            "trajectories": [{"id": "a", "answer": "b"}]}
    with pytest.raises(TaskValidationError, match="rubric"):
        Oracle(cfg).evaluate(both)
    digest = store.draft("helpful").content_hash()
    store.release("helpful", read_evidence(evidence_file(tmp_path / "a.json", digest, agreement=0.9, n=120)))
    store.promote("helpful", 1)
    (store.root / "helpful" / "v1.json").write_text("{}")
    named = {"task": {"id": "q", "prompt": "p", "rubric": "helpful"}, "trajectories": [{"id": "a", "answer": "b"}]}
    with pytest.raises(TaskValidationError, match="task.rubric: .*changed after release"):
        Oracle(cfg).evaluate(named)
    assert scripted_server.requests == []


@pytest.mark.slow
def test_cli_round_trip_with_exit_codes(tmp_path: Path):
    cfg = tmp_path / "oracle.yaml"
    cfg.write_text("rubrics:\n  dir: rubrics\n  gates:\n    - {metric: agreement, op: '>=', value: 0.8}\n")
    run = lambda *a: oracle_cli("--config", str(cfg), *a, cwd=tmp_path)  # noqa: E731
    assert run("rubric", "new", "helpful").returncode == 0
    (tmp_path / "rubrics" / "helpful" / "draft.yaml").write_text(DRAFT)
    digest = run("rubric", "hash", "helpful").stdout.strip()
    assert len(digest) == 64
    weak = compare_dir(tmp_path / "weak", "helpful", digest, agreement=0.5, n=200)
    refused = run("rubric", "release", "helpful", "--evidence", str(weak))
    assert refused.returncode == 3 and "agreement = 0.5 (gate: agreement >= 0.8)" in refused.stderr
    good = compare_dir(tmp_path / "good", "helpful", digest, agreement=0.92, n=200)
    assert run("rubric", "release", "helpful", "--evidence", str(good)).returncode == 0
    assert run("rubric", "promote", "helpful", "1").returncode == 0
    listed = json.loads(run("rubric", "list", "--json").stdout)
    assert listed == {"current": 1, "draft": True, "name": "helpful", "versions": [1]}
    shown = json.loads(run("rubric", "show", "helpful").stdout)
    assert shown["evidence"]["metrics"]["agreement"] == 0.92 and shown["evidence"]["status"] == "pass"
    (tmp_path / "rubrics" / "helpful" / "v1.json").write_text(json.dumps(shown).replace("0.92", "0.99"))
    tampered = run("rubric", "show", "helpful")
    assert tampered.returncode == 2 and "changed after release" in tampered.stderr
    missing = run("rubric", "release", "nosuch", "--evidence", str(good))
    assert missing.returncode == 2 and "no draft" in missing.stderr


def test_compare_records_the_rubric_hash_and_its_directory_releases_the_draft(store: RubricStore, tmp_path: Path):
    """oracle compare applies a task's rubric before any arm runs and names the content hash it ran
    with in summary.json; that directory is evidence for exactly that draft."""
    from oracle import compare

    cfg = OracleConfig(rubrics={"dir": str(store.root)})
    items = [{"task": {"id": f"q{i}", "prompt": "Why is the sky blue?", "rubric": "helpful@draft",
                       "reference": "Rayleigh scattering of sunlight"},
              "trajectories": [{"id": "a", "answer": "Rayleigh scattering of sunlight by air"},
                               {"id": "b", "answer": "Because the sea reflects it"}],
              "label": {"best": ["a"]}} for i in range(3)]
    labelled = tmp_path / "l.jsonl"
    labelled.write_text("".join(json.dumps(i) + "\n" for i in items))
    result = compare(labelled, tmp_path / "cmp", arms=["baseline"], config=cfg, report=False)
    digest = store.draft("helpful").content_hash()
    summary = json.loads((tmp_path / "cmp" / "summary.json").read_text())
    assert summary["rubric_hashes"] == {"helpful@draft": digest}
    assert result.summary.results[0].agreement == 1.0
    assert summary["results"][0]["answered_items"] == 3
    store.gates = []
    with pytest.raises(RubricEvidenceTooSmall,
                       match=r"has 3 answered item\(s\), fewer than rubrics.min_evidence_items \(20\)"):
        store.release("helpful", read_evidence(tmp_path / "cmp", arm="baseline", rubric="helpful"), force=True)
    store.min_evidence_items = 3
    rel = store.release("helpful", read_evidence(tmp_path / "cmp", arm="baseline", rubric="helpful"))
    assert rel.evidence.kind == "compare" and rel.evidence.metrics["agreement"] == 1.0
    # an edited draft is not what that run measured
    store.draft_path("helpful").write_text(DRAFT.replace("weight: 2", "weight: 5"))
    with pytest.raises(RubricError, match="was produced with rubric hash"):
        store.release("helpful", read_evidence(tmp_path / "cmp", arm="baseline", rubric="helpful"))


def test_compare_with_an_unknown_rubric_is_bad_input_before_anything_runs(tmp_path: Path):
    from oracle import compare

    cfg = OracleConfig(rubrics={"dir": str(tmp_path / "none")})
    labelled = tmp_path / "l.jsonl"
    labelled.write_text(json.dumps({"task": {"id": "q", "prompt": "p", "rubric": "nosuch"},
                                    "trajectories": [{"id": "a", "answer": "x"}],
                                    "label": {"passed": {"a": True}}}) + "\n")
    with pytest.raises(TaskValidationError, match="task.rubric"):
        compare(labelled, tmp_path / "cmp", arms=["baseline"], config=cfg, report=False)
    assert not (tmp_path / "cmp" / "runs.jsonl").exists()


@pytest.mark.slow
def test_evidence_with_no_or_too_few_answered_items_is_refused_naming_the_count(tmp_path: Path):
    """Issue 29: a comparison where every routed run failed (agreement null) used to release as
    "evidence pass"; the count comes from the evidence's own summary, and --force does not pass it."""
    cfg = tmp_path / "oracle.yaml"
    cfg.write_text("rubrics:\n  dir: rubrics\n")
    run = lambda *a: oracle_cli("--config", str(cfg), *a, cwd=tmp_path)  # noqa: E731
    assert run("rubric", "new", "helpful").returncode == 0
    (tmp_path / "rubrics" / "helpful" / "draft.yaml").write_text(DRAFT)
    digest = run("rubric", "hash", "helpful").stdout.strip()
    all_failed = compare_dir(tmp_path / "failed", "helpful", digest, answered=0, agreement=None, n=30)
    for extra in ((), ("--force",)):
        refused = run("rubric", "release", "helpful", "--evidence", str(all_failed), *extra)
        assert refused.returncode == 3, refused.stderr
        assert "has no answered item" in refused.stderr
    few = evidence_file(tmp_path / "few.json", digest, answered=19, agreement=0.9)
    refused = run("rubric", "release", "helpful", "--evidence", str(few))
    assert refused.returncode == 3
    assert "has 19 answered item(s), fewer than rubrics.min_evidence_items (20)" in refused.stderr
    uncounted = evidence_file(tmp_path / "old.json", digest, answered=None, agreement=0.9)
    refused = run("rubric", "release", "helpful", "--evidence", str(uncounted))
    assert refused.returncode == 3 and "records no count of answered items" in refused.stderr
    assert run("rubric", "list", "--json").stdout.count('"versions": []') == 1
    enough = evidence_file(tmp_path / "ok.json", digest, answered=20, agreement=0.9)
    done = run("rubric", "release", "helpful", "--evidence", str(enough))
    assert done.returncode == 0 and "released helpful v1" in done.stdout and "(20 answered items)" in done.stdout
    cfg.write_text("rubrics:\n  dir: rubrics\n  min_evidence_items: 5\n")
    (tmp_path / "rubrics" / "helpful" / "draft.yaml").write_text(DRAFT.replace("weight: 2", "weight: 4"))
    digest = run("rubric", "hash", "helpful").stdout.strip()
    small = evidence_file(tmp_path / "small.json", digest, answered=5, agreement=0.9)
    assert run("rubric", "release", "helpful", "--evidence", str(small)).returncode == 0


@pytest.mark.slow
def test_releasing_an_unchanged_draft_makes_no_new_version(tmp_path: Path):
    """Issue 29: the same content released twice made v2 with v1's hash."""
    cfg = tmp_path / "oracle.yaml"
    cfg.write_text("rubrics:\n  dir: rubrics\n")
    run = lambda *a: oracle_cli("--config", str(cfg), *a, cwd=tmp_path)  # noqa: E731
    assert run("rubric", "new", "helpful").returncode == 0
    draft = tmp_path / "rubrics" / "helpful" / "draft.yaml"
    draft.write_text(DRAFT)
    digest = run("rubric", "hash", "helpful").stdout.strip()
    evidence = evidence_file(tmp_path / "ok.json", digest, answered=40, agreement=0.9)
    assert run("rubric", "release", "helpful", "--evidence", str(evidence)).returncode == 0
    draft.write_text("# reformatted, same meaning\n" + DRAFT)
    again = run("rubric", "release", "helpful", "--evidence", str(evidence))
    assert again.returncode == 0, again.stderr
    assert "helpful: unchanged, still v1" in again.stdout
    assert json.loads(run("rubric", "list", "--json").stdout)["versions"] == [1]
    assert not (tmp_path / "rubrics" / "helpful" / "v2.json").exists()
    store = RubricStore(tmp_path / "rubrics")
    assert store.release("helpful", read_evidence(evidence)).version == 1  # the library says the same
    draft.write_text(DRAFT.replace("weight: 2", "weight: 3"))
    digest = run("rubric", "hash", "helpful").stdout.strip()
    changed = run("rubric", "release", "helpful", "--evidence",
                  str(evidence_file(tmp_path / "ok2.json", digest, answered=40, agreement=0.9)))
    assert changed.returncode == 0 and "released helpful v2" in changed.stdout
