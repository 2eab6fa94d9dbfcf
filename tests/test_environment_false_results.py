"""Issue 27's third false result, as it was met: a candidate that imports a package scored
``0.000 FAIL ... ModuleNotFoundError`` (candidates ran with the standard library only, and a task
had no way to name its dependencies), and ``verifier.python_executable`` pointing at a venv the
sandbox user cannot read printed "language 'python' is not supported on this machine" while
``oracle sandbox check`` showed ``"python": null``.

Only names that existed before environments did are imported here, so that on the commit before
(c0700e1) these tests fail on their assertions, not on an import.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from oracle.config.model import OracleConfig
from oracle.results.result import Status
from oracle.strategies.protocol import EvaluationContext
from oracle.strategies.verifier.strategy import VerifierStrategy
from oracle.tasks.task import Task, Trajectory
from tests.env_support import build_wheel, offline_pip, remove, world_readable_dir

pytestmark = pytest.mark.sandbox
SYSTEM_PYTHON = "/usr/bin/python3.11"
USES = Trajectory(id="uses", code="import sluglib\n\ndef slug(text):\n    return sluglib.slugify(text)\n")


@pytest.fixture(scope="module")
def offline_wheel():
    house = world_readable_dir("oracle-wheels-fr-")
    build_wheel(house, "sluglib", "1.0",
                "def slugify(text):\n    return '-'.join(text.lower().split())\n")
    cache = world_readable_dir("oracle-envcache-fr-")
    with offline_pip(house):
        yield cache
    remove(house)
    remove(cache)


async def evaluate(task, *trajectories, **verifier):
    strategy = VerifierStrategy()
    try:
        return await strategy.evaluate(EvaluationContext(task=task, trajectories=trajectories, config=OracleConfig(
            verifier={"timeout_s": 10, **verifier})))
    finally:
        strategy.close()


def slug_task(**extra) -> Task:
    return Task(id="slug", prompt="Slugify with sluglib.", entry_point="slug",
                tests=[{"kind": "call", "call": "slug('Hello World')", "expected": "hello-world"}], **extra)


@pytest.mark.slow
async def test_a_candidate_importing_its_dependency_passes_when_the_task_names_it(offline_wheel):
    task = slug_task(environment={"requirements": ["sluglib==1.0"]})
    result = await evaluate(task, USES, environment_cache=str(offline_wheel))
    assert result.status is Status.ok, result.error
    assert result.candidate("uses").passed is True, result.candidate("uses").details
    record = result.provenance.execution.environment
    assert record["installed"] == ["sluglib==1.0"] and len(record["content_hash"]) == 64
    version = subprocess.run([SYSTEM_PYTHON, "-c", "import platform; print(platform.python_version())"],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert record["python_version"] == version and record["python"] == SYSTEM_PYTHON
    assert result.provenance.execution.backend_version

    plain = await evaluate(slug_task(), USES, environment_cache=str(offline_wheel))
    assert plain.candidate("uses").passed is False  # without it, the import fails as before
    assert "ModuleNotFoundError" in plain.candidate("uses").details["summary"]
    assert "sluglib is not installed" in plain.details["environment_hint"]
    assert "task.environment.requirements" in plain.details["environment_hint"]

    from_config = await evaluate(slug_task(), USES, environment_cache=str(offline_wheel),
                                 environment={"requirements": ["sluglib==1.0"]})
    assert from_config.candidate("uses").passed is True
    assert from_config.provenance.execution.environment["source"] == "verifier.environment"


async def test_an_unreadable_venv_is_refused_with_the_reason_and_the_fix(capsys):
    from oracle.sandbox.slots import can_drop_privileges

    if not can_drop_privileges():
        pytest.skip("the sandbox keeps this user's uid here: every directory it can read, the sandbox can")
    top = world_readable_dir("oracle-private-")
    try:
        home = top / "home"
        home.mkdir()
        home.chmod(0o700)
        subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--without-pip", str(home / ".venv")], check=True, timeout=120)
        python = str(home / ".venv" / "bin" / "python")
        reason = f"the sandbox user cannot read {home}: mode 700"
        result = await evaluate(slug_task(), USES, python_executable=python)
        assert result.status is Status.failed
        assert result.error.type == "InterpreterUnusable", result.error
        assert f"verifier.python_executable: {reason}" in result.error.message
        assert "oracle env build" in result.error.message and "move the venv" in result.error.message
        assert "not supported on this machine" not in result.error.message
        assert all(c.score is None for c in result.candidates)
        as_task = await evaluate(slug_task(environment={"python": python}), USES)
        assert f"task.environment.python: {reason}" in as_task.error.message

        from oracle.cli.main import main

        cfg = top / "config.yaml"
        cfg.write_text(f"verifier:\n  python_executable: {python}\n")
        capsys.readouterr()
        code = main(["--config", str(cfg), "sandbox", "check"])
        captured = capsys.readouterr()
        report = json.loads(captured.out)
        assert report["interpreters"]["python"] == (f"unusable: verifier.python_executable: {reason}; build the "
                                                    "environment with `oracle env build` (environment.requirements) "
                                                    "or move the venv where other users can read it")
        assert code == 2 and reason in captured.err
    finally:
        remove(top)
