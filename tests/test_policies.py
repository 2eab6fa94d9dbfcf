"""Each policy family: when it votes, for what, and when it abstains."""

from __future__ import annotations

import pytest

from oracle.routing.signals import extract
from oracle.tasks.files import parse_task
from oracle.policies import registered_policies
from tests.data.tasks import code_task, open_task, question_task


def sig(data):
    item = parse_task(data)
    return extract(item.task, item.trajectories)


def policy(name, weight=1.0):
    return registered_policies()[name](weight=weight)


def top(vote):
    return max(vote.scores, key=vote.scores.get)


def test_registry_lists_every_family():
    assert set(registered_policies()) == {"execution_evidence", "reference_answer", "closed_question",
                                          "open_ended_judgment", "pairwise_preference", "cue_balance",
                                          "difficulty", "tool_use", "claim_check"}


def test_the_families_register_nothing_and_import_the_package_never():
    """The package assembles the built-ins; a family importing it back would be a cycle (every
    import counts, inside functions too)."""
    import ast
    from pathlib import Path

    import oracle.policies as package

    families = sorted(p for p in Path(package.__file__).parent.glob("*.py") if not p.name.startswith("_"))
    assert [p.stem for p in families] == ["cues", "difficulty", "evidence", "judgment", "questions"]
    for path in families:
        tree = ast.parse(path.read_text())
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
            a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert "oracle.policies" not in imported, path.name
        assert not [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id.startswith("register")], path.name
    # and every class a family defines is a built-in under its own name
    for name, cls in registered_policies().items():
        assert cls.name == name and cls.__module__.startswith("oracle.policies.")


def test_register_policy_adds_one_in_code(monkeypatch):
    from oracle.policies import _REGISTRY, register_policy
    from oracle.policies._base import BasePolicy

    monkeypatch.setattr("oracle.policies._REGISTRY", dict(_REGISTRY))

    @register_policy("always_verifier")
    class AlwaysVerifier(BasePolicy):
        name = "always_verifier"

        def vote(self, signals):
            return None

    assert registered_policies()["always_verifier"] is AlwaysVerifier
    assert "difficulty" in registered_policies()


def test_votes_sum_to_one_and_carry_reads():
    for data in (code_task(), question_task(), open_task(criteria=["Is it polite?"])):
        s = sig(data)
        for name in registered_policies():
            vote = policy(name).vote(s)
            if vote is not None:
                assert sum(vote.scores.values()) == pytest.approx(1.0)
                assert vote.reason and vote.reads


def test_execution_evidence():
    p = policy("execution_evidence")
    assert top(p.vote(sig(code_task()))) == "verifier"
    untestable = code_task()
    untestable["task"].pop("tests")
    assert top(p.vote(sig(untestable))) == "llm_judge"
    assert p.vote(sig(open_task())) is None
    with_output = open_task()
    with_output["trajectories"][0]["output"] = "OK"
    assert top(p.vote(sig(with_output))) == "verifier"


def test_reference_answer():
    p = policy("reference_answer")
    assert p.vote(sig(open_task())) is None
    assert top(p.vote(sig(open_task(reference="Paris")))) == "verifier"
    assert top(p.vote(sig(open_task(reference="A long model answer. " * 30)))) == "llm_judge"


def test_closed_question():
    p = policy("closed_question")
    assert top(p.vote(sig(question_task()))) == "decision_judge"
    assert top(p.vote(sig(open_task(criteria=["Does it mention the dog?"])))) == "decision_judge"
    assert top(p.vote(sig(open_task(criteria=["Warmth", "Persuasiveness"])))) == "llm_judge"
    assert p.vote(sig(open_task())) is None


def test_open_ended_and_pairwise():
    j = policy("open_ended_judgment")
    assert top(j.vote(sig(open_task()))) == "llm_judge"
    assert j.vote(sig(open_task(prompt="2+2"))) is None
    pw = policy("pairwise_preference")
    assert top(pw.vote(sig(open_task()))) == "llm_judge"
    assert pw.vote(sig(code_task())) is None
    assert pw.vote(sig(question_task())) is None


def test_cue_balance_and_difficulty():
    c = policy("cue_balance")
    assert top(c.vote(sig(code_task()))) == "verifier"
    assert top(c.vote(sig(open_task()))) == "llm_judge"
    assert c.vote(sig(open_task(prompt="zzz qqq"))) is None
    d = policy("difficulty")
    assert d.vote(sig(open_task())) is None
    assert top(d.vote(sig(open_task(difficulty="hard")))) == "llm_judge"
    assert d.vote(sig(open_task(difficulty="easy"))).scores["llm_judge"] < 0.3


# ---- golden votes, one file per policy@version ---------------------------------------------------
#
# tests/golden/policies/<name>@<version>.json holds a policy's votes on the fixed signals below,
# together with the settings it voted with. The votes are recomputed from the file's own signals and
# settings, so a changed default number (a config change, visible in the config hash) does not touch
# them, and a changed vote logic does: it fails here until the policy's ``version`` is bumped and the
# new version's file is written with ORACLE_REGEN_GOLDEN=1. A missing file fails; the flag never
# rewrites a version's existing votes.

import json  # noqa: E402
import os  # noqa: E402
from pathlib import Path  # noqa: E402

from oracle.routing.signals import Signals  # noqa: E402

GOLDEN_POLICIES = Path(__file__).parent / "golden" / "policies"
REGEN_FLAG = "ORACLE_REGEN_GOLDEN"

BASE_SIGNALS = {
    "has_reference": False,
    "reference_chars": 0,
    "has_answer_key": False,
    "has_tests": False,
    "tests_runnable": False,
    "n_tests": 0,
    "language": None,
    "has_code": False,
    "code_share": 0.0,
    "has_execution_output": False,
    "n_candidates": 1,
    "n_questions": 0,
    "n_criteria": 0,
    "yes_no_criteria_share": 0.0,
    "has_closed_question": False,
    "difficulty": None,
    "verifiable_cue_density": 0.0,
    "judgment_cue_density": 0.0,
    "asks_graded_scale": False,
    "asks_rationale": False,
    "prompt_chars": 100,
    "mean_answer_chars": 50.0,
    "prior_hardness": None,
    "evaluator_override": None,
    "has_context": False,
    "has_tool_steps": False,
    "has_trajectory_tests": False,
    "has_repository": False,
    "claim_check_requested": False,
    "asks_claim_check": False,
    "claim_checkable": False,
}
"""Neutral values of every signal. A golden document written before a signal existed is read with
that signal at its neutral value here (the policy could not have read it)."""
CODE = {"has_code": True, "code_share": 1.0, "language": "python"}
CASES = {
    "nothing": {},
    "runnable_tests": {"has_tests": True, "tests_runnable": True, "n_tests": 3, **CODE},
    "unrunnable_tests": {"has_tests": True, "n_tests": 1, "language": "cobol"},
    "execution_output": {"has_execution_output": True, "n_candidates": 2},
    "untested_code": {**CODE, "n_candidates": 2},
    "short_reference": {"has_reference": True, "reference_chars": 5, "has_answer_key": True},
    "long_reference": {"has_reference": True, "reference_chars": 800},
    "short_reference_with_code": {"has_reference": True, "reference_chars": 5, **CODE},
    "question": {"n_questions": 2, "has_closed_question": True},
    "all_yes_no": {"n_criteria": 2, "yes_no_criteria_share": 1.0, "has_closed_question": True},
    "half_yes_no": {"n_criteria": 2, "yes_no_criteria_share": 0.5},
    "open_criteria": {"n_criteria": 3, "yes_no_criteria_share": 0.0},
    "graded_scale": {"asks_graded_scale": True},
    "scale_and_rationale": {"asks_graded_scale": True, "asks_rationale": True},
    "judgment_vocabulary": {"judgment_cue_density": 0.05, "verifiable_cue_density": 0.01},
    "checkable_vocabulary": {"verifiable_cue_density": 0.06, "judgment_cue_density": 0.0},
    "faint_vocabulary": {"verifiable_cue_density": 0.002, "judgment_cue_density": 0.002},
    "three_free_text": {"n_candidates": 3},
    "three_with_answer_key": {"n_candidates": 3, "has_reference": True, "reference_chars": 11, "has_answer_key": True},
    "three_with_long_reference": {"n_candidates": 3, "has_reference": True, "reference_chars": 800},
    "three_with_tests": {"n_candidates": 3, "has_tests": True, "n_tests": 1},
    "hard": {"difficulty": "hard"},
    "easy": {"difficulty": "easy"},
    "historically_hard": {"prior_hardness": 0.8, "difficulty": "easy"},
    "historically_easy": {"prior_hardness": 0.2, "difficulty": "medium"},
    "agent_run": {"has_tool_steps": True, "n_candidates": 3},
    "expected_tool_calls": {"has_tool_steps": True, "has_trajectory_tests": True, "has_tests": True, "n_tests": 1,
                            "tests_runnable": True, "language": "python"},
    "claim_requested": {"claim_check_requested": True, "has_reference": True, "reference_chars": 400,
                        "claim_checkable": True},
    "claim_asked_with_context": {"asks_claim_check": True, "has_context": True, "claim_checkable": True},
    "claim_asked_without_evidence": {"asks_claim_check": True},
    "repository_patch": {"has_repository": True, "has_tests": True, "tests_runnable": True, "n_tests": 1,
                         "language": "python", "n_candidates": 4},
    "repository_in_another_language": {"has_repository": True, "has_tests": True, "n_tests": 1, "language": "rust"},
    "repository_patch_with_open_criteria": {"has_repository": True, "has_tests": True, "tests_runnable": True,
                                            "n_tests": 1, "language": "python", "n_criteria": 2},
    "hard_with_tests": {"difficulty": "hard", "has_tests": True, "tests_runnable": True, "n_tests": 2, **CODE},
    "historically_hard_short_reference": {"prior_hardness": 0.9, "has_reference": True, "reference_chars": 12,
                                          "has_answer_key": True},
    "historically_hard_long_reference": {"prior_hardness": 0.9, "has_reference": True, "reference_chars": 900},
    "historically_hard_question": {"prior_hardness": 0.6, "n_questions": 1, "has_closed_question": True},
    "historically_hard_claim": {"prior_hardness": 0.6, "has_context": True, "claim_check_requested": True,
                                "claim_checkable": True},
}


def _votes(cls, settings, cases):
    p = cls(cls.settings_type.model_validate(settings))
    out = {}
    for case, overrides in cases.items():
        vote = p.vote(Signals(**{**BASE_SIGNALS, **overrides}))
        out[case] = None if vote is None else {"scores": vote.scores, "reason": vote.reason, "reads": list(vote.reads)}
    return out


def _document(cls) -> dict:
    settings = cls.settings_type().model_dump(mode="json")
    return {"policy": cls.name, "version": cls.version, "settings": settings,
            "base_signals": BASE_SIGNALS, "cases": CASES, "votes": _votes(cls, settings, CASES)}


def _changed_votes(cls, stored: dict) -> list[str]:
    """Cases of a stored golden document on which ``cls`` now votes differently."""
    cases = {c: {**BASE_SIGNALS, **stored["base_signals"], **o} for c, o in stored["cases"].items()}
    again = _votes(cls, stored["settings"], cases)
    return sorted(c for c in stored["votes"] if again[c] != stored["votes"][c])


@pytest.mark.parametrize("name", sorted(registered_policies()))
def test_golden_votes_per_policy_version(name):
    cls = registered_policies()[name]
    path = GOLDEN_POLICIES / f"{name}@{cls.version}.json"
    if path.exists():
        changed = _changed_votes(cls, json.loads(path.read_text()))
        assert not changed, (f"{name}@{cls.version} votes differently on {changed}: "
                             f"bump {cls.__name__}.version and write the new golden file with {REGEN_FLAG}=1")
    if os.environ.get(REGEN_FLAG) == "1":
        GOLDEN_POLICIES.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(_document(cls), indent=1, sort_keys=True) + "\n")
    assert path.exists(), f"golden file {path} is missing; write it with {REGEN_FLAG}=1 and review it"
    assert json.loads(path.read_text()) == json.loads(json.dumps(_document(cls))), (
        f"{path} does not hold this version's votes on today's inputs and defaults; rewrite it with {REGEN_FLAG}=1 "
        "(votes on the stored inputs are unchanged, so no version bump is needed)")


def test_a_changed_vote_without_a_version_bump_fails():
    """The golden check catches a vote change under the same version (here: easy tasks now lean to the judge)."""
    cls = registered_policies()["difficulty"]
    stored = json.loads((GOLDEN_POLICIES / f"difficulty@{cls.version}.json").read_text())
    assert _changed_votes(cls, stored) == []

    class Changed(cls):
        def vote(self, s):
            if s.difficulty == "easy" and s.prior_hardness is None:
                return self._vote("stated difficulty: easy", "hard")
            return super().vote(s)

    assert _changed_votes(Changed, stored) == ["easy"]
