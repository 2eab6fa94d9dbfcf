"""``oracle compare`` against the embedded local model (llama.cpp + SmolLM2) on real shared data.

SmolLM2-135M judges near chance: these tests check that every figure is produced and accounted
for (each run has a verdict or is counted as abstained / unparsed / failed), never what the small
model scores. The verifier's agreement on code items with execution labels is a real figure and
must come with its bootstrap interval.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oracle.cli.main import main
from oracle.comparison.api import compare
from oracle.comparison._importers import import_suite
from oracle.config.model import OracleConfig

pytestmark = [pytest.mark.local_model, pytest.mark.sandbox, pytest.mark.slow, pytest.mark.timeout(1800)]
LLM_MAX_TOKENS = 160
"""The rubric reply is a short JSON object; a cap keeps a rambling small model from running on."""


def _config_data(local_model) -> dict:
    return {"providers": {"judge": local_model.provider_settings().model_dump(mode="json")},
            "llm_judge": {"max_tokens": LLM_MAX_TOKENS}}


def _accounted(arm: dict) -> None:
    """Every run is either decided or counted under abstained / unparsed / failed / n/a."""
    assert arm["runs"] >= arm["abstained"] + arm["unparsed"] + arm["failed"]
    if arm["decided"] == 0:
        assert arm["agreement"] is None and arm["agreement_ci95"] is None
    else:
        assert 0.0 <= arm["agreement"] <= 1.0 and arm["agreement_ci95"] is not None


def test_every_arm_on_code_and_yes_no_items_writes_all_files(local_model, shared_data, tmp_path):
    suite = shared_data("suite/dev_suite.jsonl")
    items, dropped = import_suite(suite, suite.parent.parent)
    assert dropped == 0
    picked = ([i for i in items if i.id.startswith("code-verify/humaneval-codellama13b/")][:1]
              + [i for i in items if i.id.startswith("decision/halueval-general/")][:2])
    config = OracleConfig.model_validate(_config_data(local_model))
    result = compare(picked, tmp_path / "out", config=config, concurrency=1)
    for name in ("runs.jsonl", "summary.json", "report.html", "manifest.json"):
        assert (tmp_path / "out" / name).is_file(), name
    summary = json.loads(result.summary_path.read_text())
    assert summary["schema_version"] == "1" and summary["items"] == 3
    arms = {a["arm"]: a for a in summary["results"]}
    assert set(arms) == {"verifier", "decision_judge", "llm_judge", "routed", "baseline"}
    verifier = arms["verifier"]
    assert verifier["n"] == 1 and verifier["not_applicable"] == 2
    assert verifier["agreement"] == 1.0 and verifier["agreement_ci95"] == [1.0, 1.0]
    for arm in arms.values():
        _accounted(arm)
    records = [json.loads(line) for line in result.runs_path.read_text().splitlines()]
    for judge in ("decision_judge", "llm_judge"):
        if any(r["arm"] == judge and r["models_answered"] for r in records):
            assert arms[judge]["cost_usd"] is None  # the local model has no price: unknown, not 0
        assert arms[judge]["models"] in ([], ["smollm2-135m-instruct"])
    assert len(records) == 3 * 5
    llm = [r for r in records if r["arm"] == "llm_judge" and r["status"] != "n/a"]
    assert all(r["model_requested"] == local_model.model and r["provider_fallback"] == "none" for r in llm)
    answered = [r for r in llm if r["sampling_requested"]]  # a call that timed out has no reply to record
    assert all(r["sampling_requested"]["temperature"] == 0.0 for r in answered)
    assert all(r["error"] is not None for r in llm if not r["sampling_requested"] and r["calls"])
    routed = arms["routed"]
    assert routed["routing_labelled"] == 3 and routed["routing_accuracy"] is not None
    assert "<svg" in (tmp_path / "out" / "report.html").read_text()


def test_halueval_decision_vs_llm_judge_is_one_command(local_model, shared_data, tmp_path, capsys):
    """The HaluEval comparison of docs/comparisons.md, at CI size (4 items, 2 repeats, both option orders)."""
    data = shared_data("suite/reserved_keys.json").parent.parent
    cfg = tmp_path / "local.yaml"
    cfg.write_text(json.dumps(_config_data(local_model)))
    out = tmp_path / "halueval"
    code = main(["--config", str(cfg), "compare", "--import", "halueval", "--data", str(data), "--limit", "4",
                 "--arms", "decision_judge,llm_judge,baseline", "--repeats", "2", "--both-orders",
                 "--concurrency", "1", "-o", str(out)])
    printed = capsys.readouterr().out
    assert code == 0
    assert "decision_judge" in printed and "llm_judge" in printed and "agreement [95% CI]" in printed
    summary = json.loads((out / "summary.json").read_text())
    assert summary["items"] == 4 and summary["label_kinds"] == {"answers": 4, "evaluator": 4}
    for arm in summary["results"]:
        _accounted(arm)
        assert arm["repeat_items"] == 4 and arm["order_items"] == 4 and arm["runs"] == 16
    baseline = next(a for a in summary["results"] if a["arm"] == "baseline")
    assert baseline["order_flipped"] == 4 and baseline["agreement"] == 0.5  # first option: balanced labels
    assert Path(out / "report.html").is_file()
