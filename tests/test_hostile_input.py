"""Hostile and careless input: every malformed file is bad input (exit 2 naming the field), fast.

The CLI runs as a real subprocess; the library is driven directly. Classes of input are tested,
not single samples: a corpus of malformed files (tests/data/malformed.py) and a property-based
fuzz of task loading plus routing (tests/test_fuzz_task_loading.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from oracle.errors import OracleError, TaskValidationError
from oracle.tasks._limits import InputLimits
from oracle._oracle import Oracle
from oracle.tasks.task import Criterion, Task, TaskInput, Trajectory
from oracle.tasks.files import load_tasks
from tests.data.malformed import corpus
from tests.data.tasks import code_task, open_task

ROOT = Path(__file__).resolve().parent.parent
CORPUS = corpus()


def _oracle_cli(*args: str, timeout: float = 60) -> tuple[subprocess.CompletedProcess, float]:
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "oracle", *args], capture_output=True, text=True,
                         cwd=ROOT, timeout=timeout)
    return out, time.perf_counter() - start


def _write(tmp_path: Path, name: str) -> Path:
    suffix, data, _ = CORPUS[name]
    path = tmp_path / f"{name}{suffix}"
    path.write_bytes(data)
    return path


# --- the library: one error type, naming the field ---------------------------------------------

@pytest.mark.parametrize("name", sorted(CORPUS))
def test_every_malformed_file_is_a_task_validation_error(tmp_path, name):
    path = _write(tmp_path, name)
    fragment = CORPUS[name][2]
    start = time.perf_counter()
    with pytest.raises(TaskValidationError) as info:
        load_tasks(path)
    assert time.perf_counter() - start < 5
    if fragment:
        assert fragment in str(info.value), str(info.value)


def test_library_construction_raises_our_error_naming_the_field():
    with pytest.raises(TaskValidationError, match=r"task\.criteria\[0\]\.weight"):
        Task(id="t", prompt="p", criteria=[{"criterion": "a", "weight": float("inf")}])
    with pytest.raises(TaskValidationError, match=r"task\.criteria: at least one criterion weight"):
        Task(id="t", prompt="p", criteria=[Criterion(criterion="a", weight=0)])
    with pytest.raises(TaskValidationError, match=r"steps\[0\]\.type"):
        Trajectory(id="a", steps=[{"type": "telepathy"}])
    with pytest.raises(TaskValidationError, match=r"trajectories\[0\]\.messages\[0\]\.tool_calls"):
        TaskInput.model_validate({"task": {"id": "t", "prompt": "p"},
                                  "trajectories": [{"messages": [{"role": "assistant", "tool_calls": 5}]}]})
    with pytest.raises(TaskValidationError, match="task.id"):
        TaskInput.model_validate_json('{"task": {"prompt": "p"}, "trajectories": [{"id": "a"}]}')
    assert issubclass(TaskValidationError, OracleError)


@pytest.mark.parametrize("args", [
    ({"task": {"id": "t", "prompt": "p"}, "trajectories": "abc"},),
    ({"task": {"id": "t", "prompt": "p"}, "trajectories": [{"id": "a", "messages": {"role": "user"}}]},),
    ({"task": 5, "trajectories": [{"id": "a"}]},),
    ({"id": "t", "prompt": "p"}, 17),
    ({"id": "t", "prompt": "p"}, "not a list"),
    (42, [{"id": "a"}]),
    (["task"], None),
])
def test_oracle_route_rejects_wrong_types_with_our_error(args):
    with pytest.raises(TaskValidationError):
        Oracle().route(*args)


def test_message_lists_still_convert():
    item = TaskInput.model_validate({"task": {"id": "t", "prompt": "p"}, "trajectories": [
        [{"role": "user", "content": "hi"},
         {"role": "assistant", "content": None, "tool_calls": [
             {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": {"q": 1}}}]},
         {"role": "tool", "name": "lookup", "content": [{"type": "text", "text": "found"}]},
         {"role": "assistant", "content": "done", "refusal": None}],
        {"id": "named", "messages": [{"role": "assistant", "content": "x"}], "metadata": {"k": 1}}]})
    first, second = item.trajectories
    assert first.id == "t0" and first.answer == "done"
    assert [s.type for s in first.steps] == ["message", "tool_call", "tool_result", "message"]
    assert first.steps[1].tool == "lookup" and first.steps[1].content == '{"q": 1}'
    assert first.steps[2].content == "found"
    assert second.id == "named" and second.metadata == {"k": 1}


def test_expected_values_and_metadata_may_hold_nan_and_inf():
    data = code_task()
    data["task"]["tests"][0]["expected"] = float("inf")
    data["task"]["metadata"] = {"x": float("nan")}
    item = TaskInput.model_validate(data)
    assert item.task.tests[0].expected == float("inf")
    Oracle().route(item)


def test_limits_are_configurable(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(open_task()))
    with pytest.raises(TaskValidationError, match="limits.max_file_bytes"):
        load_tasks(path, limits=InputLimits(max_file_bytes=100))
    with pytest.raises(TaskValidationError, match="at most 1 per task"):
        load_tasks(path, limits=InputLimits(max_trajectories=1))
    deep = open_task(metadata={"a": {"b": {"c": {"d": 1}}}})
    path.write_text(json.dumps(deep))
    with pytest.raises(TaskValidationError, match=r"task\.metadata\.a\.b.*nested deeper than 5"):
        load_tasks(path, limits=InputLimits(max_depth=5))
    assert load_tasks(path)  # the default depth (64) is far above that


@pytest.mark.slow
def test_hundred_thousand_trajectories_rejected_fast_and_linear_when_allowed():
    data = {"task": {"id": "t", "prompt": "p"},
            "trajectories": [{"id": f"c{i}", "answer": "x"} for i in range(100_000)]}
    start = time.perf_counter()
    with pytest.raises(TaskValidationError, match="at most 10000"):
        TaskInput.model_validate(data)
    assert time.perf_counter() - start < 10  # refused before any candidate is validated (ms unloaded)
    # With the limit raised, the duplicate-id check is linear. Unloaded, validating and routing
    # 100,000 candidates takes about a second; the bound leaves room for a busy machine while a
    # quadratic check (10^10 comparisons) would take hours.
    data["trajectories"][-1]["id"] = "c0"
    start = time.perf_counter()
    with pytest.raises(TaskValidationError, match=r"duplicate trajectory ids \['c0'\]"):
        TaskInput.model_validate(data, context={"limits": InputLimits(max_trajectories=100_000)})
    data["trajectories"][-1]["id"] = "last"
    item = TaskInput.model_validate(data, context={"limits": InputLimits(max_trajectories=100_000)})
    Oracle().route(item)
    assert time.perf_counter() - start < 20  # two validations of 100,000 candidates and one route


def test_yaml_python_tags_are_never_executed(tmp_path):
    marker = tmp_path / "pwned"
    for tag in ("!!python/object/apply:os.system", "!!python/object/new:os.system"):
        path = tmp_path / "evil.yaml"
        path.write_text(f"task: {tag} ['touch {marker}']\ntrajectories: [{{id: a}}]\n")
        with pytest.raises(TaskValidationError, match="invalid YAML"):
            load_tasks(path)
        out, _ = _oracle_cli("route", str(path))
        assert out.returncode == 2
    assert not marker.exists()


# --- the CLI: a soak over the whole corpus ------------------------------------------------------

@pytest.mark.slow
def test_cli_soak_every_malformed_file_exits_2_within_10s(tmp_path):
    """Every file of the corpus, plus a directory and a missing file: exit 2, a message, < 10 s."""
    paths = [_write(tmp_path, name) for name in sorted(CORPUS)]
    directory = tmp_path / "dir.json"
    directory.mkdir()
    paths += [directory, tmp_path / "missing.json"]

    def run(path: Path) -> tuple[Path, subprocess.CompletedProcess, float]:
        out, took = _oracle_cli("route", str(path), "--json", timeout=30)
        return path, out, took

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(run, paths))
    for path, out, took in results:
        name = path.stem
        assert out.returncode == 2, (name, out.returncode, out.stderr[-500:])
        assert took < 10, (name, took)
        assert out.stderr.startswith("error: ") and "internal error" not in out.stderr, (name, out.stderr)
        fragment = CORPUS.get(name, (None, None, None))[2]
        if fragment:
            assert fragment in out.stderr, (name, out.stderr[:500])
        assert out.stdout == ""


# --- values that used to become NaN scores or hangs --------------------------------------------

@pytest.mark.slow
def test_reference_regex_cannot_hang_the_oracle():
    from oracle.tasks.testspec import ReferenceCheck
    from oracle.strategies.verifier.reference import check_answer

    check = ReferenceCheck(mode="regex")
    hostile = "a" * 5000 + "!"
    start = time.perf_counter()
    for pattern in (r"([a-z]+ ?)+", r"(a|aa)+", r"(a*)*b", r"(\w+\s?)*$"):
        assert check_answer(hostile, pattern, check).passed is False
    assert time.perf_counter() - start < 0.5                   # linear time (RE2)
    assert check_answer("hello world", r"([a-z]+ ?)+", check).passed is True
    assert check_answer("line one\nline two", r"line.*two", check).passed is True   # DOTALL kept
    start = time.perf_counter()   # a construct RE2 lacks: bounded in a child process
    verdict = check_answer("a" * 40 + "!", r"(?=a)([a-z]+ ?)+", check)
    assert verdict.passed is False and "longer than" in verdict.message
    assert time.perf_counter() - start < 6
    assert check_answer("abab", r"(ab)\1", check).passed is True


def test_non_finite_config_values_are_bad_input(tmp_path):
    from oracle.config.model import OracleConfig
    from oracle.errors import ConfigError

    for section, key in (("providers", None), ("decision_judge", "timeout_s"),
                         ("decision_judge", "pass_threshold"), ("routing", "threshold"),
                         ("verifier", "float_tolerance")):
        if key is None:
            text = "providers:\n  judge:\n    timeout_s: .inf\n"
        else:
            text = f"{section}:\n  {key}: .nan\n"
        path = tmp_path / "c.yaml"
        path.write_text(text)
        with pytest.raises(ConfigError, match="finite|greater|less"):
            OracleConfig.load(path)


def test_huge_criterion_weights_are_normalised_safely():
    from oracle.providers.types import DecisionAnswer
    from oracle.strategies.decision_judge.requests import criterion_questions
    from oracle.strategies.decision_judge.scoring import criteria_verdict, read_answer

    criteria = [Criterion(criterion="a", weight=1e9), Criterion(criterion="b", weight=1e9),
                Criterion(criterion="c", weight=1e-9)]
    verdicts = [read_answer(q, DecisionAnswer(question_id=q.id, probabilities={"yes": 0.9, "no": 0.1},
                                              probability_source="native"), coverage_floor=0.5)
                for q in criterion_questions(criteria)]
    verdict = criteria_verdict(criteria, verdicts, 0.5)
    assert verdict.passed is True and verdict.score == pytest.approx(0.9)


@pytest.mark.slow
def test_malformed_config_and_history_files_exit_2(tmp_path):
    good = tmp_path / "task.json"
    good.write_text(json.dumps(open_task()))
    bad = {"binary.yaml": b"\xff\xfe\x00\x01", "deep.yaml": b"a: " + b"[" * 5000 + b"]" * 5000,
           "laughs.yaml": CORPUS["billion_laughs"][1], "nan.yaml": b"routing:\n  threshold: .nan\n",
           "python.yaml": b"routing: !!python/object/apply:os.system ['true']\n"}
    for name, data in bad.items():
        path = tmp_path / name
        path.write_bytes(data)
        out, _ = _oracle_cli("--config", str(path), "route", str(good))
        assert out.returncode == 2 and str(path) in out.stderr, (name, out.stderr)
    (tmp_path / "dir.yaml").mkdir()
    out, _ = _oracle_cli("--config", str(tmp_path / "dir.yaml"), "config", "show")
    assert out.returncode == 2 and "is a directory" in out.stderr
    for name, data in {"h1.jsonl": b"\xff\xfe", "h2.jsonl": b"[1, 2]\n", "h3.jsonl": b'{"task_id": "x"\n'}.items():
        path = tmp_path / name
        path.write_bytes(data)
        out, _ = _oracle_cli("route", str(good), "--history", str(path))
        assert out.returncode == 2 and "line 1" in out.stderr and "history" in out.stderr, (name, out.stderr)
