"""``oracle import swebench``: SWE-bench-style rows and predictions -> repository task files.

Real git repositories made here (git init, commits, ``git bundle create``), the real command run as a
subprocess (``python -m oracle import swebench ...``), its output read back with the task loader.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from oracle.tasks.files import load_tasks

ROOT = Path(__file__).resolve().parent.parent
GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
BUGGY = "def page_count(n, size):\n    return n // size\n"
FIXED = "def page_count(n, size):\n    return (n + size - 1) // size\n"
TESTS = "from pager import page_count\n\n\ndef test_full_pages():\n    assert page_count(10, 5) == 2\n"
NEW_TEST = "\n\ndef test_last_partial_page():\n    assert page_count(11, 5) == 3\n"


def git(cwd, *args) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True,
                          text=True).stdout


def make_repository(path: Path) -> dict[str, str]:
    """A tiny library with a bug and its tests; the base commit, a later commit (the fix, as future
    history), the gold patch and the test patch as git writes them."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "pager.py").write_text(BUGGY)
    (path / "tests").mkdir()
    (path / "tests" / "test_pager.py").write_text(TESTS)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "base")
    base = git(path, "rev-parse", "HEAD").strip()
    (path / "pager.py").write_text(FIXED)
    gold = git(path, "diff")
    git(path, "checkout", "-q", "--", ".")
    (path / "tests" / "test_pager.py").write_text(TESTS + NEW_TEST)
    test_patch = git(path, "diff")
    git(path, "checkout", "-q", "--", ".")
    (path / "README").write_text("later\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "a later commit")
    return {"base": base, "gold": gold, "test_patch": test_patch}


@pytest.fixture(scope="module")
def repos(tmp_path_factory):
    """``DIR/acme__pager.bundle`` (a bundle) and ``DIR/acme/ledger`` (a clone)."""
    root = tmp_path_factory.mktemp("swe")
    work = root / "work"
    pager = make_repository(work / "pager")
    ledger = make_repository(work / "ledger")
    repos = root / "repos"
    repos.mkdir()
    git(work / "pager", "bundle", "create", str(repos / "acme__pager.bundle"), "--all")
    git(root, "clone", "-q", str(work / "ledger"), str(repos / "acme" / "ledger"))
    return {"dir": repos, "pager": pager, "ledger": ledger, "root": root}


def rows(repos) -> list[dict]:
    pager, ledger = repos["pager"], repos["ledger"]
    return [
        {"instance_id": "acme__pager-1", "repo": "acme/pager", "base_commit": pager["base"], "patch": pager["gold"],
         "test_patch": pager["test_patch"], "problem_statement": "page_count drops the last partial page",
         "FAIL_TO_PASS": json.dumps(["tests/test_pager.py::test_last_partial_page"]),  # as the published dataset
         "PASS_TO_PASS": json.dumps(["tests/test_pager.py::test_full_pages"]), "version": "1.0"},
        {"instance_id": "acme__ledger-7", "repo": "acme/ledger", "base_commit": ledger["base"].upper(),
         "patch": ledger["gold"], "test_patch": ledger["test_patch"],
         "FAIL_TO_PASS": ["tests/test_pager.py::test_last_partial_page"], "PASS_TO_PASS": []},
    ]


def predictions(repos) -> list[dict]:
    return [
        {"instance_id": "acme__pager-1", "model_name_or_path": "model-a", "model_patch": repos["pager"]["gold"]},
        {"instance_id": "acme__pager-1", "model_name_or_path": "model-b", "model_patch": None},
        {"instance_id": "acme__ledger-7", "model_name_or_path": "model-a", "model_patch": "diff --git a/x b/x\n"},
    ]


def write_jsonl(path: Path, items: list[dict]) -> Path:
    path.write_text("".join(json.dumps(i) + "\n" for i in items))
    return path


def oracle_import(*args, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "oracle", "import", "swebench", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_rows_and_predictions_become_tasks_with_one_candidate_per_model(repos, tmp_path):
    dataset = write_jsonl(tmp_path / "dataset.jsonl", rows(repos))
    preds = write_jsonl(tmp_path / "preds.jsonl", predictions(repos))
    out = tmp_path / "tasks.jsonl"
    run = oracle_import(dataset, preds, "--repos", repos["dir"], "-o", out)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "" and f"wrote 2 task(s) with 3 candidate(s) to {out}" in run.stderr
    pager, ledger = load_tasks(out)
    task = pager.task
    assert task.id == "acme__pager-1" and task.prompt == "page_count drops the last partial page"
    assert task.repository.bundle == str(repos["dir"] / "acme__pager.bundle") and task.repository.path is None
    assert task.repository.commit == repos["pager"]["base"]
    assert task.test_patch == repos["pager"]["test_patch"]
    test = task.tests[0]
    assert test.kind == "repo_tests" and test.command is None
    assert test.fail_to_pass == ["tests/test_pager.py::test_last_partial_page"]
    assert test.pass_to_pass == ["tests/test_pager.py::test_full_pages"]
    assert task.metadata["swebench"] == {"instance_id": "acme__pager-1", "repo": "acme/pager",
                                         "gold_patch": repos["pager"]["gold"], "version": "1.0"}
    assert task.solution is None  # the gold patch is no code for code tests
    assert [(t.id, t.patch) for t in pager.trajectories] == [("model-a", repos["pager"]["gold"]), ("model-b", "")]
    assert ledger.task.repository.path == str(repos["dir"] / "acme" / "ledger")
    assert ledger.task.repository.commit == repos["ledger"]["base"]  # lower-cased
    assert [t.id for t in ledger.trajectories] == ["model-a"]


def test_the_imported_base_commit_and_patches_apply_with_git(repos, tmp_path):
    """What the task holds is what git takes: the bundle has the base commit, and the gold patch and
    then the test patch apply to it."""
    dataset = write_jsonl(tmp_path / "dataset.jsonl", rows(repos)[:1])
    out = tmp_path / "tasks.jsonl"
    assert oracle_import(dataset, "--repos", repos["dir"], "-o", out).returncode == 0
    task = load_tasks(out)[0].task
    tree = tmp_path / "tree"
    git(tmp_path, "clone", "-q", task.repository.bundle, str(tree))
    git(tree, "checkout", "-q", task.repository.commit)
    for name, patch in (("gold", load_tasks(out)[0].trajectories[0].patch), ("tests", task.test_patch)):
        (tmp_path / f"{name}.patch").write_text(patch)
        git(tree, "apply", str(tmp_path / f"{name}.patch"))
    assert (tree / "pager.py").read_text() == FIXED
    assert "test_last_partial_page" in (tree / "tests" / "test_pager.py").read_text()


def test_without_predictions_the_gold_patch_is_the_one_candidate_on_stdout(repos, tmp_path):
    dataset = write_jsonl(tmp_path / "dataset.jsonl", rows(repos))
    run = oracle_import(dataset, "--repos", repos["dir"])
    assert run.returncode == 0, run.stderr
    docs = [json.loads(line) for line in run.stdout.splitlines()]
    assert [d["task"]["id"] for d in docs] == ["acme__pager-1", "acme__ledger-7"]
    assert [[t["id"] for t in d["trajectories"]] for d in docs] == [["gold"], ["gold"]]
    assert docs[1]["trajectories"][0]["patch"] == repos["ledger"]["gold"]
    assert docs[1]["task"]["prompt"] == "Resolve acme__ledger-7 in the repository acme/ledger."


@pytest.mark.parametrize("shape", ["list", "object"])
def test_predictions_as_a_json_list_or_object_and_gold_beside_them(repos, tmp_path, shape):
    dataset = write_jsonl(tmp_path / "dataset.jsonl", rows(repos))
    preds = predictions(repos)
    if shape == "object":  # SWE-bench's older form: instance id -> prediction (one model each)
        preds = {p["instance_id"]: {k: v for k, v in p.items() if k != "instance_id"} for p in preds[1:]}
    (tmp_path / "preds.json").write_text(json.dumps(preds))
    out = tmp_path / "tasks.jsonl"
    run = oracle_import(dataset, tmp_path / "preds.json", "--repos", repos["dir"], "-o", out, "--gold")
    assert run.returncode == 0, run.stderr
    ids = {item.task.id: [t.id for t in item.trajectories] for item in load_tasks(out)}
    if shape == "list":
        assert ids == {"acme__pager-1": ["model-a", "model-b", "gold"], "acme__ledger-7": ["model-a", "gold"]}
    else:
        assert ids == {"acme__pager-1": ["model-b", "gold"], "acme__ledger-7": ["model-a", "gold"]}


def test_instances_no_prediction_names_are_left_out_and_said(repos, tmp_path):
    dataset = write_jsonl(tmp_path / "dataset.jsonl", rows(repos))
    preds = write_jsonl(tmp_path / "preds.jsonl", predictions(repos)[2:])
    out = tmp_path / "tasks.jsonl"
    run = oracle_import(dataset, preds, "--repos", repos["dir"], "-o", out)
    assert run.returncode == 0, run.stderr
    assert [i.task.id for i in load_tasks(out)] == ["acme__ledger-7"]
    assert "left out 1 instance(s) no prediction names: acme__pager-1" in run.stderr


def test_relative_paths_load_from_any_working_directory(repos, tmp_path):
    """With --relative-paths the file names the bundle beside it; the loader resolves it against the
    file's directory, wherever the command runs (oracle route here, from /)."""
    dataset = write_jsonl(tmp_path / "dataset.jsonl", rows(repos)[:1])
    out_dir = repos["root"] / "out"
    out_dir.mkdir(exist_ok=True)
    out = out_dir / "tasks.jsonl"
    assert oracle_import(dataset, "--repos", repos["dir"], "-o", out, "--relative-paths").returncode == 0
    written = json.loads(out.read_text())
    assert written["task"]["repository"]["bundle"] == "../repos/acme__pager.bundle"
    assert load_tasks(out)[0].task.repository.bundle == str(repos["dir"] / "acme__pager.bundle")
    route = subprocess.run([sys.executable, "-m", "oracle", "route", str(out), "--json"], cwd="/",
                           capture_output=True, text=True, timeout=120)
    assert route.returncode == 0, route.stderr
    trace = json.loads(route.stdout)["route"]
    assert trace["evaluator"] == "verifier" and trace["signals"]["has_repository"] is True


# -- bad input: exit 2, the row and the field named ---------------------------------------------------
def failing(repos, tmp_path, dataset_rows, preds=None, *extra):
    dataset = write_jsonl(tmp_path / "dataset.jsonl", dataset_rows)
    args = [dataset] + ([write_jsonl(tmp_path / "preds.jsonl", preds)] if preds is not None else [])
    out = tmp_path / "tasks.jsonl"
    run = oracle_import(*args, "--repos", repos["dir"], "-o", out, *extra)
    assert run.returncode == 2, run.stdout + run.stderr
    assert not out.exists()  # nothing written
    return run.stderr


def test_a_missing_repository_names_the_instance_and_every_path_tried(repos, tmp_path):
    row = {**rows(repos)[0], "instance_id": "other__thing-3", "repo": "other/thing"}
    err = failing(repos, tmp_path, [rows(repos)[1], row])
    d = repos["dir"]
    assert "dataset.jsonl:line 2 (other__thing-3): repo: no clone or bundle of other/thing" in err
    for tried in (d / "other__thing", d / "other" / "thing", d / "other__thing.bundle"):
        assert f"{tried} (missing)" in err


@pytest.mark.parametrize("name", ["instance_id", "repo", "base_commit", "patch", "test_patch", "FAIL_TO_PASS",
                                  "PASS_TO_PASS"])
def test_a_row_missing_a_field_names_the_row_and_the_field(repos, tmp_path, name):
    row = {k: v for k, v in rows(repos)[0].items() if k != name}
    err = failing(repos, tmp_path, [rows(repos)[1], row])
    assert "dataset.jsonl:line 2" in err and f"{name}: missing" in err, err


@pytest.mark.parametrize("change, words", [
    ({"base_commit": "main"}, "(acme__pager-1): task.repository.commit: 'main' is not a commit id"),
    ({"FAIL_TO_PASS": "not json"}, "FAIL_TO_PASS: a string that is not a JSON list"),
    ({"PASS_TO_PASS": [1, 2]}, "PASS_TO_PASS: expected a list of test ids"),
    ({"FAIL_TO_PASS": [], "PASS_TO_PASS": []}, "task.tests[0].fail_to_pass: a repo_tests test needs at least one"),
    ({"PASS_TO_PASS": ["tests/test_pager.py::test_last_partial_page"]}, "task.tests[0].pass_to_pass: "),
    ({"repo": "../etc"}, "repo: '../etc' is not owner/name"),
    ({"patch": None}, "patch: expected text, got NoneType"),
])
def test_a_bad_value_names_the_row_and_the_field(repos, tmp_path, change, words):
    err = failing(repos, tmp_path, [{**rows(repos)[0], **change}])
    assert "dataset.jsonl:line 1" in err and words in err, err


@pytest.mark.slow
def test_bad_predictions_are_named(repos, tmp_path):
    unknown = {"instance_id": "nobody-1", "model_name_or_path": "m", "model_patch": ""}
    assert "preds.jsonl:line 1 (nobody-1): instance_id: no row of the dataset" in failing(
        repos, tmp_path, rows(repos), [unknown])
    twice = predictions(repos)[:1] * 2
    assert "preds.jsonl:line 2 (acme__pager-1): model_name_or_path: 'model-a' predicted acme__pager-1 already" in \
        failing(repos, tmp_path, rows(repos), twice)
    no_patch = [{"instance_id": "acme__pager-1", "model_name_or_path": "m"}]
    assert "model_patch: missing" in failing(repos, tmp_path, rows(repos), no_patch)
    gold_model = [{"instance_id": "acme__pager-1", "model_name_or_path": "gold", "model_patch": ""}]
    assert "a model is named 'gold'" in failing(repos, tmp_path, rows(repos), gold_model, "--gold")


@pytest.mark.slow
def test_duplicate_instances_and_bad_files_are_named(repos, tmp_path):
    assert "dataset.jsonl:line 2 (acme__pager-1): instance_id: given already at" in failing(
        repos, tmp_path, rows(repos)[:1] * 2)
    (tmp_path / "broken.jsonl").write_text('{"instance_id": \n')
    run = oracle_import(tmp_path / "broken.jsonl", "--repos", repos["dir"])
    assert run.returncode == 2 and "broken.jsonl:line 1: invalid JSON" in run.stderr
    run = oracle_import(tmp_path / "absent.jsonl", "--repos", repos["dir"])
    assert run.returncode == 2 and "no such file" in run.stderr
    run = oracle_import(tmp_path / "broken.jsonl", "--repos", tmp_path / "nowhere")
    assert run.returncode == 2 and "--repos: " in run.stderr
