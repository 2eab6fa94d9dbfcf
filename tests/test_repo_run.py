"""Repository test runs in the real sandbox (oracle/sandbox/repo_run.py): honest outcomes, per node,
on every backend; the tree mount; the editable install; pythonpath; a custom command's JUnit report.
The forgery attempts are in tests/test_repo_run_attacks.py."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import pytest

from tests.plugins.sandbox_backends import on_each_backend
from tests.repo_run_support import ADD, BUGGY, FIXED, TESTS, ZERO, calc_repo, make_tree, python, run, trees_root

pytestmark = pytest.mark.sandbox
__all__ = ["trees_root"]


@on_each_backend
def test_honest_run_gives_each_node_its_outcome_and_pytests_message(backend, trees_root):
    result = run(backend, make_tree(trees_root, calc_repo(BUGGY)), [ADD, ZERO])
    assert result.problem is None and result.report_complete
    assert result.outcomes[ADD].outcome == "failed"
    assert "assert 0 == 4" in result.outcomes[ADD].message
    assert "tests/test_calc.py:5" in result.outcomes[ADD].message
    assert result.outcomes[ZERO].outcome == "passed"
    assert result.exit_code == 1 and result.integrity == "shared_process" and result.report_source == "plugin"
    assert result.pytest_version and result.backend == backend


@on_each_backend
def test_fixed_candidate_passes_and_exit_status_agrees(backend, trees_root):
    result = run(backend, make_tree(trees_root, calc_repo(FIXED)), [ADD, ZERO])
    assert result.problem is None and result.report_complete and result.exit_code == 0
    assert {o.outcome for o in result.outcomes.values()} == {"passed"}


@on_each_backend
def test_tree_is_writable_by_replacement_only_and_the_base_is_never_written(backend, trees_root):
    probe = ("import os\n\n\ndef test_write():\n"
             "    try:\n        open('calc/__init__.py', 'a').write('x = 1\\n')\n"
             "    except PermissionError:\n        pass\n"
             "    else:\n        raise AssertionError('a shared file was writable in place')\n"
             "    with open('calc/new.py', 'w') as fh:\n        fh.write('def add(a, b):\\n    return a + b\\n')\n"
             "    os.replace('calc/new.py', 'calc/__init__.py')\n"
             "    assert os.getcwd().endswith(('/repo',)) or os.path.isdir('calc')\n")
    tree = make_tree(trees_root, calc_repo(BUGGY, **{"tests/test_write.py": probe}))
    result = run(backend, tree, ["tests/test_write.py::test_write"])
    assert result.outcomes["tests/test_write.py::test_write"].outcome == "passed", result
    assert (Path(str(tree) + ".base") / "calc/__init__.py").read_text() == BUGGY  # the base is untouched
    assert (tree / "calc/__init__.py").read_text().endswith("a + b\n")  # the tree's entry was replaced
    assert os.stat(tree).st_uid == os.getuid()  # its directories are ours again after the run


@on_each_backend
def test_run_cannot_read_other_trees_or_the_hosts_tmp(backend, trees_root):
    other = make_tree(trees_root, calc_repo(FIXED, **{"secret.txt": "other-run-secret"}), name="other")
    fd, marker = tempfile.mkstemp(prefix="oracle-host-secret-")
    os.write(fd, b"host-tmp-secret")
    os.close(fd)
    os.chmod(marker, 0o644)  # even world-readable: not in the run's view
    probe = ("def _read(path):\n    try:\n        return open(path).read()\n"
             "    except OSError:\n        return None\n\n\n"
             f"def test_isolated():\n    assert _read({str(other / 'secret.txt')!r}) is None\n"
             f"    assert _read({marker!r}) is None\n")
    try:
        result = run(backend, make_tree(trees_root, calc_repo(FIXED, **{"tests/test_iso.py": probe})),
                     ["tests/test_iso.py::test_isolated"])
    finally:
        os.unlink(marker)
    assert result.problem is None
    assert result.outcomes["tests/test_iso.py::test_isolated"].outcome == "passed", result.outcomes


SRC_LAYOUT = {"src/calc/__init__.py": FIXED, "tests/test_calc.py": TESTS,
              "pyproject.toml": ("[build-system]\nrequires = ['setuptools>=64']\n"
                                 "build-backend = 'setuptools.build_meta'\n\n"
                                 "[project]\nname = 'calc'\nversion = '0.1'\n\n"
                                 "[tool.setuptools.packages.find]\nwhere = ['src']\n")}


@on_each_backend
def test_editable_install_runs_the_trees_build_backend_in_the_sandbox(backend, trees_root):
    tree = make_tree(trees_root, SRC_LAYOUT)
    without = run(backend, tree, [ADD])  # src layout, root on the path: calc is not importable
    assert without.outcomes[ADD].outcome == "error" and "calc" in without.outcomes[ADD].message
    result = run(backend, make_tree(trees_root, SRC_LAYOUT), [ADD, ZERO], install="editable")
    assert result.problem is None and result.build_error is None, result
    assert {o.outcome for o in result.outcomes.values()} == {"passed"}
    assert result.build_seconds is not None


@on_each_backend
def test_failed_editable_build_is_the_candidates_failure_with_the_builds_tail(backend, trees_root):
    files = {**SRC_LAYOUT, "setup.py": "raise RuntimeError('candidate build is broken')\n"}
    result = run(backend, make_tree(trees_root, files), [ADD], install="editable")
    assert result.problem is None
    assert "candidate build is broken" in (result.build_error or "")
    assert result.outcomes[ADD].outcome == "error" and "editable install failed" in result.outcomes[ADD].message


def test_pythonpath_puts_the_named_dirs_on_the_path(trees_root):
    from tests.plugins.sandbox_backends import strongest_backend

    result = run(strongest_backend(), make_tree(trees_root, SRC_LAYOUT), [ADD], pythonpath=["src"])
    assert result.outcomes[ADD].outcome == "passed", result


RUNNER = '''import sys
import tests.test_calc as m  # the script's directory, the tree root, is on the path
from xml.sax.saxutils import quoteattr
cases, bad = [], 0
for name in ("test_add", "test_zero"):
    try:
        getattr(m, name)()
        cases.append('<testcase classname="tests.test_calc" name="%s"/>' % name)
    except AssertionError as exc:
        bad += 1
        cases.append('<testcase classname="tests.test_calc" name="%s"><failure message=%s/></testcase>'
                     % (name, quoteattr(repr(exc))))
open("report.xml", "w").write("<testsuites><testsuite>%s</testsuite></testsuites>" % "".join(cases))
sys.exit(1 if bad else 0)
'''


def _junit_run(backend, trees_root, files, **kw):
    return run(backend, make_tree(trees_root, files), [ADD, ZERO], command=[python(), "run_tests.py"],
               junit_xml="report.xml", **kw)


@on_each_backend
def test_custom_command_is_judged_from_its_junit_report(backend, trees_root):
    result = _junit_run(backend, trees_root, calc_repo(BUGGY, **{"run_tests.py": RUNNER}))
    assert result.report_source == "junit" and result.problem is None
    assert result.outcomes[ADD].outcome == "failed" and result.outcomes[ZERO].outcome == "passed"
    fixed = _junit_run(backend, trees_root, calc_repo(FIXED, **{"run_tests.py": RUNNER}))
    assert fixed.problem is None and {o.outcome for o in fixed.outcomes.values()} == {"passed"}


def test_custom_command_planted_report_is_removed_before_the_run(trees_root):
    from tests.plugins.sandbox_backends import strongest_backend

    planted = ('<testsuites><testsuite><testcase classname="tests.test_calc" name="test_add"/>'
               '<testcase classname="tests.test_calc" name="test_zero"/></testsuite></testsuites>')
    result = _junit_run(strongest_backend(), trees_root,
                        calc_repo(BUGGY, **{"run_tests.py": "import sys\nsys.exit(0)\n", "report.xml": planted}))
    assert result.problem and "was not written" in result.problem
    assert result.outcomes[ADD].outcome != "passed"


def test_custom_command_report_with_an_entity_is_refused(trees_root):
    from tests.plugins.sandbox_backends import strongest_backend

    bomb = ('open("report.xml", "w").write(\'<?xml version="1.0"?><!DOCTYPE t [<!ENTITY a "aaaa">]>'
            '<testsuites><testcase classname="tests.test_calc" name="test_add"/>'
            '<testcase classname="tests.test_calc" name="test_zero"/></testsuites>\')\n')
    result = _junit_run(strongest_backend(), trees_root, calc_repo(FIXED, **{"run_tests.py": bomb}))
    assert result.problem and "DTD or an entity" in result.problem
    assert all(o.outcome != "passed" for o in result.outcomes.values())


def test_custom_command_exit_status_must_agree_with_its_report(trees_root):
    from tests.plugins.sandbox_backends import strongest_backend

    lying = RUNNER.replace("sys.exit(1 if bad else 0)", "sys.exit(0)")
    result = _junit_run(strongest_backend(), trees_root, calc_repo(BUGGY, **{"run_tests.py": lying}))
    assert result.problem and "exited 0" in result.problem
    assert result.outcomes[ZERO].outcome == "error"  # nothing an untrusted report says passed stays passed


def test_bad_arguments_name_the_argument(trees_root):
    tree = make_tree(trees_root, calc_repo())
    for kw, field in [({"node_ids": []}, "node_ids"), ({"node_ids": ["a\nb"]}, "node_ids"),
                      ({"node_ids": [ADD, ADD]}, "node_ids"),
                      ({"node_ids": [ADD], "install": "wheel"}, "install"),
                      ({"node_ids": [ADD], "pythonpath": ["../up"]}, "pythonpath"),
                      ({"node_ids": [ADD], "command": ["make", "test"]}, "junit_xml")]:
        node_ids = kw.pop("node_ids")
        with pytest.raises(ValueError, match=field):
            run("landlock", tree, node_ids, **kw)


@on_each_backend
def test_overhead_against_plain_pytest_is_small(backend, trees_root):
    """Not a benchmark (benchmarks/ has those): a guard that the run costs about a sandboxed start."""
    started = time.monotonic()
    result = run(backend, make_tree(trees_root, calc_repo(FIXED)), [ADD, ZERO])
    assert result.problem is None
    assert time.monotonic() - started < 20


@on_each_backend
def test_candidate_that_breaks_collection_errors_its_tests_and_the_rest_still_run(backend, trees_root):
    other = "def test_other():\n    assert True\n"
    tree = make_tree(trees_root, calc_repo("def add(a, b)\n    return a + b\n", **{"tests/test_other.py": other}))
    result = run(backend, tree, [ADD, ZERO, "tests/test_other.py::test_other"])
    assert result.problem is None, result.problem
    assert result.outcomes[ADD].outcome == "error" and "collecting failed" in result.outcomes[ADD].message
    assert "SyntaxError" in result.outcomes[ADD].message or "invalid syntax" in result.outcomes[ADD].message
    assert result.outcomes["tests/test_other.py::test_other"].outcome == "passed"


def test_unknown_node_id_is_a_problem_naming_it(trees_root):
    from tests.plugins.sandbox_backends import strongest_backend

    result = run(strongest_backend(), make_tree(trees_root, calc_repo(FIXED)), [ADD, "tests/test_calc.py::test_gone"])
    assert result.problem and "not run" in result.problem and "test_gone" in result.problem
    assert result.outcomes["tests/test_calc.py::test_gone"].outcome == "not_run"
    assert result.outcomes[ADD].outcome != "passed"  # nothing of an incomplete report stays passed


def test_parametrized_and_class_node_ids_cover_their_items(trees_root):
    from tests.plugins.sandbox_backends import strongest_backend

    params = ("import pytest\nfrom calc import add\n\n\n@pytest.mark.parametrize('a', [0, 1])\n"
              "def test_p(a):\n    assert add(a, a) == 0\n\n\nclass TestC:\n    def test_m(self):\n"
              "        assert add(0, 0) == 0\n")
    tree = make_tree(trees_root, calc_repo(BUGGY, **{"tests/test_p.py": params}))
    ids = ["tests/test_p.py::test_p", "tests/test_p.py::test_p[0]", "tests/test_p.py::TestC"]
    result = run(strongest_backend(), tree, ids)
    assert result.problem is None, result.problem
    assert result.outcomes["tests/test_p.py::test_p"].outcome == "passed"  # a - a == 0 for both
    assert result.outcomes["tests/test_p.py::test_p[0]"].outcome == "passed"
    assert result.outcomes["tests/test_p.py::TestC"].outcome == "passed"
    fixed = run(strongest_backend(), make_tree(trees_root, calc_repo(FIXED, **{"tests/test_p.py": params})), ids)
    assert fixed.outcomes["tests/test_p.py::test_p"].outcome == "failed"  # 1 + 1 != 0
    assert "test_p[1]" in fixed.outcomes["tests/test_p.py::test_p"].message
    assert fixed.outcomes["tests/test_p.py::test_p[0]"].outcome == "passed"


@on_each_backend
def test_links_the_run_plants_are_never_followed_by_the_host(backend, trees_root):
    victim = make_tree(trees_root, calc_repo(FIXED), name="victim")
    owner = os.stat(victim / "calc").st_uid
    plant = (f"import os\n\n\ndef test_plant():\n    os.symlink({str(victim / 'calc')!r}, 'calc_link')\n"
             f"    os.symlink({str(victim)!r}, 'tests/victim')\n")
    tree = make_tree(trees_root, calc_repo(FIXED, **{"tests/test_plant.py": plant}))
    result = run(backend, tree, ["tests/test_plant.py::test_plant"])
    assert result.outcomes["tests/test_plant.py::test_plant"].outcome == "passed", result.outcomes
    assert os.path.islink(tree / "calc_link")
    assert os.stat(victim / "calc").st_uid == owner and os.stat(victim).st_uid == owner


def test_the_runs_uid_cannot_change_the_trees_git(trees_root):
    from tests.plugins.sandbox_backends import strongest_backend

    probe = ("import os\n\n\ndef test_git():\n"
             "    for act in (lambda: open('.git/HEAD', 'w'), lambda: open('.git/new', 'w'),\n"
             "                lambda: os.rename('.git/HEAD', '.git/HEAD2')):\n"
             "        try:\n            act()\n        except PermissionError:\n            continue\n"
             "        raise AssertionError('the run changed .git')\n")
    files = calc_repo(FIXED, **{".git/HEAD": "ref: refs/heads/main\n", "tests/test_git.py": probe})
    tree = make_tree(trees_root, files)
    result = run(strongest_backend(), tree, ["tests/test_git.py::test_git"])
    assert result.outcomes["tests/test_git.py::test_git"].outcome == "passed", result.outcomes
    assert (tree / ".git/HEAD").read_text() == "ref: refs/heads/main\n"


@on_each_backend
def test_environment_mounts_and_sys_path_reach_the_test_process(backend, trees_root):
    """A task environment's directory (read-only, on sys.path) and, when it holds pytest, its pytest."""
    from oracle.sandbox import pinned_pytest

    env_dir = Path(tempfile.mkdtemp(dir=trees_root, prefix="env-"))
    (env_dir / "helperlib.py").write_text("TWO = 2\n")
    os.chmod(env_dir, 0o755)
    os.chmod(env_dir / "helperlib.py", 0o644)
    probe = ("import helperlib\nfrom calc import add\n\n\ndef test_env():\n"
             "    assert add(helperlib.TWO, helperlib.TWO) == 4\n")
    tree = make_tree(trees_root, calc_repo(FIXED, **{"tests/test_env.py": probe}))
    result = run(backend, tree, ["tests/test_env.py::test_env"], env_mounts=[str(env_dir)], sys_path=[str(env_dir)])
    assert result.outcomes["tests/test_env.py::test_env"].outcome == "passed", result
    # The environment brings pytest (here: a copy on its sys.path): that one runs, not the pinned copy.
    copy = pinned_pytest.pinned(python()).path
    assert pinned_pytest.source(python(), [copy]).origin == "environment"
    result = run(backend, make_tree(trees_root, calc_repo(FIXED)), [ADD], env_mounts=[copy], sys_path=[copy])
    assert result.outcomes[ADD].outcome == "passed" and result.problem is None, result


@on_each_backend
def test_subdir_runs_the_tests_there_with_pythonpath_from_the_root(backend, trees_root):
    files = {f"packages/calc/{k}": v for k, v in calc_repo(BUGGY).items()}
    files["packages/calc/tests/test_where.py"] = ("import os\n\n\ndef test_where():\n"
                                                  "    assert os.getcwd().endswith('/packages/calc')\n")
    tree = make_tree(trees_root, files)
    result = run(backend, tree, [ADD, ZERO, "tests/test_where.py::test_where"], subdir="packages/calc",
                 pythonpath=["packages/calc"])
    assert result.problem is None, result
    assert result.outcomes[ADD].outcome == "failed" and result.outcomes[ZERO].outcome == "passed"
    assert result.outcomes["tests/test_where.py::test_where"].outcome == "passed"
    junit_files = {**files, "packages/calc/run_tests.py": RUNNER}
    result = run(backend, make_tree(trees_root, junit_files), [ADD, ZERO], subdir="packages/calc",
                 command=[python(), "run_tests.py"], junit_xml="report.xml")
    assert result.problem is None and result.outcomes[ADD].outcome == "failed", result


def test_subdir_that_is_missing_or_a_link_is_a_problem(trees_root):
    from tests.plugins.sandbox_backends import strongest_backend

    tree = make_tree(trees_root, calc_repo(FIXED))
    os.symlink(str(tree / "calc"), tree / "linked")
    for sub in ("nowhere", "linked"):
        result = run(strongest_backend(), tree, [ADD], subdir=sub)
        assert result.problem and "subdir" in result.problem and result.outcomes[ADD].outcome == "error"
    with pytest.raises(ValueError, match="subdir"):
        run(strongest_backend(), tree, [ADD], subdir="../up")


@pytest.mark.slow
@on_each_backend
def test_concurrent_runs_keep_their_own_trees_and_reports(backend, trees_root):
    """Two candidates at once (two workers): each run's outcomes are its own tree's."""
    import asyncio

    from oracle.sandbox import Sandbox
    from oracle.sandbox.repo_run import run_repo_tests

    sandbox = Sandbox(backend=backend)
    trees = [make_tree(trees_root, calc_repo(code)) for code in (BUGGY, FIXED, BUGGY, FIXED)]

    async def both():
        return await asyncio.gather(*(run_repo_tests(sandbox, t, node_ids=[ADD, ZERO], command=None, junit_xml=None,
                                                     python=python(), timeout_s=60) for t in trees))

    results = asyncio.run(both())
    assert [r.outcomes[ADD].outcome for r in results] == ["failed", "passed", "failed", "passed"]
    assert all(r.problem is None and r.outcomes[ZERO].outcome == "passed" for r in results)


def test_editable_install_reaches_a_tests_subprocess(trees_root):
    from tests.plugins.sandbox_backends import strongest_backend

    probe = ("import subprocess, sys\n\n\ndef test_child():\n"
             "    out = subprocess.run([sys.executable, '-c', 'import calc; print(calc.add(2, 2))'],\n"
             "                         capture_output=True, text=True)\n"
             "    assert out.stdout.strip() == '4', out.stderr\n")
    tree = make_tree(trees_root, {**SRC_LAYOUT, "tests/test_child.py": probe})
    result = run(strongest_backend(), tree, ["tests/test_child.py::test_child"], install="editable")
    assert result.outcomes["tests/test_child.py::test_child"].outcome == "passed", result


@on_each_backend
def test_run_request_env_adds_variables_but_never_replaces_the_sandboxs_own(backend):
    import asyncio

    from oracle.sandbox import RunRequest, Sandbox

    code = "import os; print(os.environ.get('EXTRA'), os.environ['PATH'], os.environ['HOME'])"
    out = asyncio.run(Sandbox(backend=backend).run(RunRequest(
        command=[python(), "-c", code], env={"EXTRA": "yes", "PATH": "/evil", "HOME": "/root"})))
    extra, path, home = out.stdout.decode().split()
    assert extra == "yes" and path == "/usr/local/bin:/usr/bin:/bin" and home != "/root"
