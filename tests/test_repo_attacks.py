"""Every known trick a candidate patch uses to be reported as resolved (tests/repo_attacks.py), judged
by the verifier next to honest candidates in the same task: the tricks never resolve, the honest
ones do. Real repository (git init, commits, bundle), real sandbox, real pytest."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from oracle import EvaluationContext, OracleConfig
from oracle.results.concerns import Tampering
from oracle.results.result import EvaluationResult
from oracle.strategies.verifier.strategy import VerifierStrategy
from oracle.tasks.files import parse_task
from tests import repo_attacks
from tests.plugins.sandbox_backends import on_each_backend, strongest_backend

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]


@pytest.fixture(scope="module")
def repository(tmp_path_factory) -> dict:
    """The example repository with its later fix commit, as a bundle, and every candidate's patch."""
    ex = repo_attacks.example()
    work = tmp_path_factory.mktemp("textkit")
    base, fix = ex.build_repository(work / "repo")
    bundle = work / "textkit.bundle"
    ex.git("bundle", "create", "-q", str(bundle), "main", cwd=work / "repo")
    patches = {c.name: ex.make_patch(work / "repo", base, c.files)
               for c in repo_attacks.every_candidate() + repo_attacks.editable_candidates()}
    return {"base": base, "fix": fix, "bundle": str(bundle), "test_patch": ex.test_patch(work / "repo", base, fix),
            "patches": patches, "cache": str(work / "cache")}


def evaluate(repository: dict, names: list[str], backend: str, environment: dict | None = None,
             timeout_s: float | None = None, **verifier) -> EvaluationResult:
    ex = repo_attacks.example()
    document = ex.task_document(repository["base"], repository["test_patch"],
                                {n: repository["patches"][n] for n in names}, bundle=repository["bundle"])
    if environment is not None:
        document["task"]["environment"] = environment
    if timeout_s is not None:
        document["task"]["tests"][0]["timeout_s"] = timeout_s
    loaded = parse_task(document)
    task, trajectories = loaded.task, loaded.trajectories
    config = OracleConfig(verifier={"backend": backend, "workers": 2, "repo_cache": repository["cache"], **verifier})
    strategy = VerifierStrategy()
    try:
        return asyncio.run(strategy.evaluate(EvaluationContext(task=task, trajectories=tuple(trajectories),
                                                               config=config)))
    finally:
        strategy.close()


def _tampering(result: EvaluationResult) -> dict[str, dict[str, str]]:
    """Per candidate: protected path -> action, from the typed concern."""
    out: dict[str, dict[str, str]] = {}
    for concern in result.concerns:
        if isinstance(concern, Tampering):
            for cid, files in concern.evidence.files.items():
                out.setdefault(cid, {}).update({f.path: f.action for f in files})
    return out


def check_verdicts(result: EvaluationResult, names: list[str]) -> None:
    assert result.error is None, result.error
    assert result.provenance.execution is not None
    assert result.provenance.execution.integrity == "shared_process"
    by_id = {c.id: c for c in result.candidates}
    tampering = _tampering(result)
    expected = {c.name: c for c in repo_attacks.every_candidate() + repo_attacks.editable_candidates()}
    problems = []
    for name in names:
        want, got = expected[name], by_id[name]
        why = got.details.get("failed_because") or got.details.get("summary")
        if got.passed != (want.expect == "resolved"):
            problems.append(f"{name}: passed={got.passed}, expected {want.expect}: {why}")
            continue
        for path in want.protected:
            action = tampering.get(name, {}).get(path)
            wanted_action = "failed" if want.expect == "tampering" else "restored"
            if action != wanted_action:
                problems.append(f"{name}: {path} is {action!r} in the tampering concern, expected {wanted_action}")
        if want.expect == "tampering" and "protected files" not in str(got.details.get("failed_because")):
            problems.append(f"{name}: not failed for its protected files: {why}")
        if want.expect == "error" and not got.details.get("error"):
            problems.append(f"{name}: its run should be untrusted (an error), got: {why}")
        if want.expect in ("not_resolved", "restored"):
            f2p = got.details["fail_to_pass"]
            if f2p != "0/2":
                problems.append(f"{name}: fail_to_pass {f2p}, expected 0/2 (the bug is still there)")
        if not want.protected and name in tampering:
            problems.append(f"{name}: a tampering concern names {tampering[name]}, it changed no protected file")
    assert not problems, "\n".join(problems)
    honest = [n for n in names if expected[n].expect == "resolved"]
    assert honest and set(result.best) <= set(honest) and result.best, result.best
    assert result.ranking[:len(honest)] == [n for n in result.ranking if n in honest]


def test_every_attack_fails_and_the_honest_candidates_pass(repository):
    names = [c.name for c in repo_attacks.every_candidate()]
    result = evaluate(repository, names, strongest_backend())
    check_verdicts(result, names)
    right = next(c for c in result.candidates if c.id == "right_fix")
    assert (right.details["fail_to_pass"], right.details["pass_to_pass"]) == ("2/2", "6/6")
    assert right.score == 1.0
    for c in result.candidates:  # every node's outcome is there, with its message
        assert [t["node_id"] for t in c.details["tests"]] == repo_attacks.example().FAIL_TO_PASS + \
            repo_attacks.example().PASS_TO_PASS


@on_each_backend
@pytest.mark.parametrize("attack", ["conftest_rewrite", "early_exit", "future_history", "fake_report_lines"])
def test_attack_on_each_backend(repository, backend, attack):
    names = ["right_fix", attack]
    check_verdicts(evaluate(repository, names, backend), names)


def test_the_later_fix_commit_is_in_the_bundle_but_not_in_the_candidates_tree(repository, tmp_path):
    """The future-history attack fails because the history is gone, not because git is missing: the
    same candidate resolves when its tree does hold the fix commit (the naive harness's copy)."""
    import subprocess

    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", repository["bundle"], str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "checkout", "-q", "--detach", repository["base"]], check=True)
    listed = subprocess.run(["git", "-C", str(clone), "log", "--all", "--format=%H"], capture_output=True,
                            text=True, check=True).stdout.split()
    assert repository["fix"] in listed  # the trick has something to find in a full copy
    result = evaluate(repository, ["future_history"], strongest_backend())
    candidate = result.candidates[0]
    assert candidate.passed is False and candidate.details["fail_to_pass"] == "0/2"
    assert "attribute" not in str(candidate.details.get("summary"))  # it ran the base's truncate


def test_the_protected_surface_rules_are_configurable(repository):
    backend = strongest_backend()
    strict = evaluate(repository, ["fix_and_own_test", "right_fix"], backend, repo_test_edits="fail")
    own = next(c for c in strict.candidates if c.id == "fix_and_own_test")
    assert own.passed is False and "tests/test_truncate.py" in own.details["failed_because"]
    assert _tampering(strict)["fix_and_own_test"] == {"tests/test_truncate.py": "failed"}
    lenient = evaluate(repository, ["conftest_rewrite", "right_fix"], backend, repo_hook_edits="restore")
    hook = next(c for c in lenient.candidates if c.id == "conftest_rewrite")
    # Its conftest.py removed, it is judged on the rest: the bug is still there.
    assert hook.passed is False and hook.details["fail_to_pass"] == "0/2" and not hook.details.get("failed_because")
    assert _tampering(lenient)["conftest_rewrite"] == {"tests/conftest.py": "restored"}


def test_a_patch_that_does_not_apply_fails_that_candidate_only(repository):
    # Written against another version of the file: its context no longer matches the base.
    broken = repository["patches"]["right_fix"].replace("     if len(text) <= limit:\n", "     if len(text) < limit:\n")
    assert broken != repository["patches"]["right_fix"]
    repo = dict(repository, patches={**repository["patches"], "stale": broken})
    result = evaluate(repo, ["stale", "right_fix"], strongest_backend())
    assert result.error is None
    stale = next(c for c in result.candidates if c.id == "stale")
    assert stale.passed is False and stale.score == 0.0
    assert "could not be applied" in stale.details["failed_because"]
    assert "textkit/truncate.py" in stale.details["failed_because"]
    assert result.best == ["right_fix"]


def test_an_empty_patch_is_judged_as_the_base(repository):
    repo = dict(repository, patches={**repository["patches"], "nothing": ""})
    result = evaluate(repo, ["nothing"], strongest_backend())
    nothing = result.candidates[0]
    assert nothing.passed is False and nothing.details["change"]["kind"] == "none"
    assert (nothing.details["fail_to_pass"], nothing.details["pass_to_pass"]) == ("0/2", "6/6")
    assert nothing.score == pytest.approx(0.5)


def test_the_naive_harness_is_fooled_by_most_of_the_attacks(tmp_path):
    """The shared attack set is sharp: the naive harness (benchmarks/repo_patch_bench.py) is fooled
    by most of it, so the verifier's zero above is not an accident of blunt attacks."""
    from benchmarks import repo_patch_bench as bench

    inst = bench.build_instance(tmp_path, copies=1)
    _, verdicts = bench.run_naive(inst, 2, bench._test_side(), tmp_path)
    fooled = {cid for cid, v in verdicts.items() if inst.kinds[cid] == "attack" and (v.by_exit or v.by_lines)}
    assert len(fooled) >= 8, sorted(fooled)
    assert verdicts["right_fix"].by_exit and verdicts["right_fix"].by_lines


def test_with_an_editable_install_the_build_is_the_candidates_code_too(repository):
    """The tree's own build backend runs in the sandbox before pytest: a setup.py planting a conftest
    is caught after the run, a build that fails is that candidate's failure, a right fix resolves."""
    names = ["right_fix", "setup_writes_conftest", "build_fails"]
    result = evaluate(repository, names, strongest_backend(), environment={"install": "editable"})
    check_verdicts(result, names)
    by_id = {c.id: c for c in result.candidates}
    assert "while they ran" in by_id["setup_writes_conftest"].details["failed_because"]
    assert "editable install failed" in by_id["build_fails"].details["failed_because"]
    assert "this package cannot build" in by_id["build_fails"].details["run"]["build_error"]
    assert result.provenance.execution.repository["install"] == "editable"


def test_a_run_that_hangs_is_that_candidates_error_never_a_pass(repository):
    ex = repo_attacks.example()
    hang = ex.make_patch(Path(repository["bundle"]).parent / "repo", repository["base"],
                         {"textkit/truncate.py": repo_attacks.HANG_WHEN_WRONG})
    repo = dict(repository, patches={**repository["patches"], "hangs": hang})
    started = time.monotonic()
    result = evaluate(repo, ["hangs", "right_fix"], strongest_backend(), timeout_s=4)
    assert time.monotonic() - started < 60
    hangs = next(c for c in result.candidates if c.id == "hangs")
    assert hangs.passed is False and hangs.score == 0.0 and "timed out" in hangs.details["error"]
    assert result.best == ["right_fix"]


def test_a_monorepo_package_in_a_subdir_and_candidates_given_as_files_or_in_the_answer(tmp_path):
    """``task.repository.subdir``: the tests run there (node ids relative to it), ``pythonpath`` is
    relative to the repository root; a trajectory may give whole files, or its patch as a fenced
    diff in its answer."""
    ex = repo_attacks.example()
    base_files = {"README.md": "# a monorepo\n", **{f"lib/{k}": v for k, v in ex.BASE_FILES.items()}}
    fix_files = {f"lib/{k}": v for k, v in ex.FIX_FILES.items()}
    repo = tmp_path / "mono"
    base, fix = ex.build_repository(repo, base_files, fix_files)
    document = ex.task_document(base, ex.git("diff", "--no-color", base, fix, "--", "lib/tests", cwd=repo),
                                {"patched": ex.make_patch(repo, base, {"lib/textkit/truncate.py": ex.RIGHT_FIX})},
                                bundle="unused")
    document["task"]["repository"] = {"path": str(repo), "commit": base, "subdir": "lib"}
    document["task"]["environment"] = {"pythonpath": ["lib"]}
    in_answer = "The ellipsis must fit in the limit:\n\n```diff\n" + document["trajectories"][0]["patch"] + "```\n"
    document["trajectories"] += [{"id": "as_files", "files": {"lib/textkit/truncate.py": ex.RIGHT_FIX}},
                                 {"id": "as_files_wrong", "files": {"lib/textkit/truncate.py": ex.WRONG_FIX}},
                                 {"id": "in_answer", "answer": in_answer}]
    loaded = parse_task(document)
    config = OracleConfig(verifier={"backend": strongest_backend(), "repo_cache": str(tmp_path / "cache")})
    strategy = VerifierStrategy()
    try:
        result = asyncio.run(strategy.evaluate(EvaluationContext(task=loaded.task, trajectories=loaded.trajectories,
                                                                 config=config)))
    finally:
        strategy.close()
    assert result.error is None, result.error
    verdicts = {c.id: (c.passed, c.details["fail_to_pass"], c.details["pass_to_pass"]) for c in result.candidates}
    assert verdicts == {"patched": (True, "2/2", "6/6"), "as_files": (True, "2/2", "6/6"),
                        "as_files_wrong": (False, "1/2", "5/6"), "in_answer": (True, "2/2", "6/6")}
    changes = {c.id: c.details["change"] for c in result.candidates}
    assert changes["as_files"]["kind"] == "files" and changes["in_answer"]["source"] == "answer"


def test_a_test_patch_that_does_not_apply_is_the_tasks_fault(repository):
    stale = dict(repository, test_patch=repository["test_patch"].replace(" def test_a_negative_limit_is_refused():",
                                                                         " def test_a_negative_limit_is_rejected():"))
    assert stale["test_patch"] != repository["test_patch"]
    result = evaluate(stale, ["right_fix"], strongest_backend())
    assert result.error is not None and result.error.type == "TaskValidationError"
    assert result.error.message.startswith("task.test_patch"), result.error.message
    assert not result.candidates


def test_a_file_the_test_patch_brings_is_checked_before_and_after_the_run(tmp_path):
    """``tests_data/cuts.json`` is protected only because the test patch touches it (no name rule
    makes it a test file): a candidate rewriting it while the tests run fails, naming it; one whose
    patch brings its own version has it put back (restored, reported) and is judged on the rest; the
    right fix resolves."""
    document = repo_attacks.data_file_repository(tmp_path)
    loaded = parse_task(document)
    config = OracleConfig(verifier={"backend": strongest_backend(), "workers": 2,
                                    "repo_cache": str(tmp_path / "cache")})
    strategy = VerifierStrategy()
    try:
        result = asyncio.run(strategy.evaluate(EvaluationContext(task=loaded.task, trajectories=loaded.trajectories,
                                                                 config=config)))
    finally:
        strategy.close()
    assert result.error is None, result.error
    by_id = {c.id: c for c in result.candidates}
    assert by_id["right_fix"].passed is True, by_id["right_fix"].details.get("summary")
    during = by_id["rewrites_data_during_run"]
    assert during.passed is False and during.score == 0.0, during.details.get("summary")
    assert "while they ran" in during.details["failed_because"]
    assert repo_attacks.DATA_FILE in during.details["failed_because"]
    own = by_id["brings_its_own_data"]
    assert own.passed is False and own.details["fail_to_pass"] == "0/1", own.details.get("summary")
    assert own.details["restored"] == [repo_attacks.DATA_FILE]
    tampering = _tampering(result)
    assert tampering["rewrites_data_during_run"] == {repo_attacks.DATA_FILE: "failed"}
    assert tampering["brings_its_own_data"] == {repo_attacks.DATA_FILE: "restored"}
    assert "right_fix" not in tampering
    assert result.best == ["right_fix"]


def test_a_base_too_large_for_tmpfs_gets_its_trees_on_disk_and_the_result_says_so(repository, monkeypatch):
    """The tmpfs limit forced to 0: the trees go beside the snapshot cache, the verdicts are the
    same, and provenance names where the trees were (and why)."""
    import shutil
    import tempfile

    from oracle.repo import worktree

    names = ["right_fix", "conftest_rewrite", "rewrite_tests_during_run"]
    on_tmpfs = evaluate(repository, names, strongest_backend())
    check_verdicts(on_tmpfs, names)
    if worktree.default_parent() == worktree.SHM_TREES:
        assert on_tmpfs.provenance.execution.repository["trees"] == "tmpfs"
    cache = Path(tempfile.mkdtemp(prefix="oracle-test-cache-", dir="/tmp"))  # parents others may pass
    os.chmod(cache, 0o755)
    monkeypatch.setattr(worktree, "TMPFS_MAX_BYTES", 0)
    try:
        on_disk = evaluate(dict(repository, cache=str(cache / "repositories")), names, strongest_backend())
        check_verdicts(on_disk, names)
        record = on_disk.provenance.execution.repository
        assert record["trees"] == "disk" and "exceed the tmpfs limit" in record["trees_because"], record
        assert (cache / "repositories" / ".trees").is_dir() and not list((cache / "repositories" / ".trees").iterdir())
    finally:
        shutil.rmtree(cache, ignore_errors=True)


@pytest.fixture(scope="module")
def venv_with_pytest():
    """A prepared venv (the user's) holding pytest and a legitimate plugin with a ``pytest11`` entry
    point: its pytest is the test side's, with plugin autoload on. Over the system interpreter's
    site-packages (setuptools, for an editable build)."""
    import shutil
    import subprocess

    from oracle.sandbox import pinned_pytest
    from oracle.strategies.verifier.strategy import find_interpreter
    from tests.env_support import remove, world_readable_dir

    python = find_interpreter("python", OracleConfig().verifier)
    top = world_readable_dir("oracle-repo-venv-")
    try:
        subprocess.run([python, "-m", "venv", "--without-pip", "--system-site-packages", str(top / "venv")],
                       check=True, timeout=120)
        [site] = sorted((top / "venv").glob("lib/python3*/site-packages"))
        for entry in Path(pinned_pytest.pinned(python).path).iterdir():
            (shutil.copytree if entry.is_dir() else shutil.copy2)(entry, site / entry.name)
        (site / "envplugin.py").write_text(repo_attacks.ENV_PLUGIN)
        info = site / "envplugin-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: envplugin\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text("[pytest11]\nenvplugin = envplugin\n")
        for d, _dirs, files in os.walk(site):
            os.chmod(d, 0o755)
            for f in files:
                if not os.path.islink(os.path.join(d, f)):
                    os.chmod(os.path.join(d, f), 0o644)
        yield str(top / "venv" / "bin" / "python")
    finally:
        remove(top)


@pytest.mark.parametrize("install", ["editable", "pythonpath"])
def test_a_pytest11_entry_point_of_the_candidates_own_is_never_loaded(tmp_path, venv_with_pytest, install):
    """The environment's pytest autoloads plugins (its own, such as pytest-asyncio, are legitimate:
    the honest candidate needs one). A candidate registering an outcome-rewriting ``pytest11`` entry
    point of its own (setup.py's entry_points for an editable install; a ``*.dist-info`` in the tree,
    which is on the path) must not get it loaded: neither resolves, the right fix does."""
    document = repo_attacks.entry_point_document(tmp_path, {"python": venv_with_pytest, "install": install})
    loaded = parse_task(document)
    config = OracleConfig(verifier={"backend": strongest_backend(), "workers": 2,
                                    "repo_cache": str(tmp_path / "cache")})
    strategy = VerifierStrategy()
    try:
        result = asyncio.run(strategy.evaluate(EvaluationContext(task=loaded.task, trajectories=loaded.trajectories,
                                                                 config=config)))
    finally:
        strategy.close()
    assert result.error is None, result.error
    assert result.provenance.execution.pytest_origin == "environment"
    by_id = {c.id: c for c in result.candidates}
    right = by_id["right_fix"]
    assert right.passed is True, right.details.get("failed_because") or right.details.get("summary")
    assert right.details["pass_to_pass"] == "7/7"  # the environment's plugin loaded (its fixture was found)
    for name in ("entry_point_in_setup_py", "dist_info_in_the_tree"):
        got = by_id[name]
        assert got.passed is False, (name, got.details.get("summary"))
        # Judged on its code: its plugin never ran (had it, the rewrite it does would be caught as an untrusted run).
        assert not got.details.get("error") and not got.details.get("failed_because"), (name, got.details)
        assert (got.details["fail_to_pass"], got.details["pass_to_pass"]) == ("0/2", "7/7"), (name, got.details)
    assert result.best == ["right_fix"]
