"""Candidates run with the dependencies the task needs (issue 27): ``environment`` on the task and in
the config, the environment cache, interpreters the sandbox cannot use, ``oracle env build``.

Real pip, real wheels (built here from a tiny source tree, installed with the user's own pip
configuration set offline: PIP_NO_INDEX + PIP_FIND_LINKS), real sandbox runs. One test, marked
slow, installs numpy from the package index the machine's pip is configured with.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from oracle.config.model import OracleConfig
from oracle.errors import EnvironmentBuildError, TaskValidationError
from oracle.results.result import Status
from oracle.sandbox import envbuild, interpreters
from oracle.sandbox.envcache import MANIFEST, SITE, EnvironmentCache, content_hash, environment_key
from oracle.strategies.protocol import EvaluationContext
from oracle.strategies.verifier.strategy import VerifierStrategy
from oracle.tasks.environment import Environment
from oracle.tasks.task import Task, Trajectory
from tests.env_support import build_wheel, offline_pip, remove, world_readable_dir

pytestmark = pytest.mark.sandbox
SYSTEM_PYTHON = "/usr/bin/python3.11"
PROBE_SOURCE = 'VALUE = "from-wheel-0.1"\n\ndef double(x):\n    return 2 * x\n'
USER_PIP = {k: os.environ.get(k) for k in ("PIP_NO_INDEX", "PIP_FIND_LINKS")}
"""The user's own pip settings, before the offline wheelhouse below replaces them."""
USES_PROBE = Trajectory(id="uses", code="import envprobe\n\ndef f():\n    return envprobe.VALUE\n")


@pytest.fixture(scope="module")
def wheelhouse():
    house = world_readable_dir("oracle-wheels-")
    build_wheel(house, "envprobe", "0.1", PROBE_SOURCE)
    build_wheel(house, "envprobe", "0.2", 'VALUE = "from-wheel-0.2"\n')
    build_wheel(house, "envextra", "1.0", "NAME = 'extra'\n")
    with offline_pip(house):
        yield house
    remove(house)


@pytest.fixture(scope="module")
def cache_root(wheelhouse):
    root = world_readable_dir("oracle-envcache-")
    yield root
    remove(root)


@pytest.fixture(scope="module")
def strategy():
    s = VerifierStrategy()
    yield s
    s.close()


def config(cache_root: Path, **verifier) -> OracleConfig:
    return OracleConfig(verifier={"timeout_s": 10, "environment_cache": str(cache_root), **verifier})


async def run(strategy, task: Task, *trajectories: Trajectory, cfg: OracleConfig):
    return await strategy.evaluate(EvaluationContext(task=task, trajectories=trajectories, config=cfg))


def probe_task(environment=None, **extra) -> Task:
    return Task(id="needs-envprobe", prompt="Return envprobe.VALUE.", entry_point="f", environment=environment,
                tests=[{"kind": "call", "call": "f()", "expected": "from-wheel-0.1", "name": "value"},
                       {"kind": "assert", "name": "test side imports it too",
                        "code": "import envprobe\nassert envprobe.double(21) == 42\nassert f() == envprobe.VALUE"}],
                **extra)


# -- the model ---------------------------------------------------------------------------------
@pytest.mark.parametrize("env, field, words", [
    ({"requirements": ["--index-url https://evil.example/simple"]}, "task.environment.requirements",
     "is a pip option, not a requirement"),
    ({"requirements": ["-r /etc/passwd"]}, "task.environment.requirements", "pip option"),
    ({"requirements": ["numpy >= = 2"]}, "task.environment.requirements", "not a valid requirement"),
    ({"python": "python3"}, "task.environment.python", "neither an interpreter path"),
    ({"python": "venv/bin/python"}, "task.environment.python", "must be absolute"),
    ({"node_modules": "node_modules"}, "task.environment.node_modules", "absolute path"),
    ({}, "task.environment", "at least one of python, requirements, node_modules"),
    ({"requirement": ["numpy"]}, "task.environment.requirement", ""),
])
def test_a_bad_environment_is_refused_at_load_naming_the_field(env, field, words):
    with pytest.raises(TaskValidationError) as info:
        Task(id="t", prompt="p", environment=env)
    assert f"{field}:" in str(info.value) or str(info.value).startswith(field), str(info.value)
    assert words in str(info.value)


def test_the_config_takes_an_environment_and_names_its_field():
    from oracle.errors import ConfigError

    cfg = OracleConfig(verifier={"environment": {"requirements": ["NumPy>=2"]}})
    assert cfg.verifier.environment == Environment(requirements=("NumPy>=2",))
    with pytest.raises((ConfigError, ValueError), match=r"verifier\.environment\.python"):
        OracleConfig.model_validate({"verifier": {"environment": {"python": "py3"}}})


def test_requirements_spelled_differently_are_one_environment():
    a = Environment(requirements=["NumPy >= 2", "Requests[Socks,security]==2.31"])
    b = Environment(requirements=["requests[security,socks]==2.31", "numpy>=2", "numpy>=2"])
    assert a.normalized_requirements() == b.normalized_requirements() == \
        ["numpy>=2", "requests[security,socks]==2.31"]
    info = interpreters.describe(SYSTEM_PYTHON)
    assert environment_key(a.normalized_requirements(), info) == environment_key(b.normalized_requirements(), info)
    assert environment_key(["numpy>=2"], info) != environment_key(["numpy>=2.1"], info)


def test_a_task_without_an_environment_keeps_its_content_hash():
    """Batch rows and escalation ids are keyed by the hash: adding the field must not move them."""
    plain = Task(id="t", prompt="p")
    assert plain.content_hash() == Task.model_validate({"id": "t", "prompt": "p"}).content_hash()
    from oracle._internal.canonical import sha256_json

    dumped = plain.model_dump(mode="json")
    # each left out while unset (module: at its default)
    for later_field in ("environment", "solution", "module", "repository", "test_patch"):
        dumped.pop(later_field)
    assert plain.content_hash() == sha256_json(dumped)
    assert Task(id="t", prompt="p", environment={"requirements": ["x"]}).content_hash() != plain.content_hash()


# -- the cache -----------------------------------------------------------------------------------
@pytest.mark.slow
def test_an_environment_is_built_once_and_reused_read_only(cache_root):
    cache = EnvironmentCache(cache_root)
    info = interpreters.describe(SYSTEM_PYTHON)
    first = cache.ensure(["envprobe==0.1"], info, envbuild.install)
    again = cache.ensure(["envprobe==0.1"], info, envbuild.install)
    assert not first.reused and again.reused
    assert first.key == again.key and first.content_hash == again.content_hash
    assert first.installed == ("envprobe==0.1",)
    assert again.seconds < 0.05 * first.seconds
    site = Path(first.site_packages)
    assert (site / "envprobe" / "__init__.py").read_text() == PROBE_SOURCE
    assert content_hash(site) == json.loads((Path(first.path) / MANIFEST).read_text())["content_hash"]
    for path in [Path(first.path), *Path(first.path).rglob("*")]:  # the sandbox user can read all of it
        mode = path.stat().st_mode
        assert mode & 0o004, path
        assert not mode & 0o022, path  # and nobody but the owner writes it
    assert not list(cache_root.glob(".build-*"))
    other = cache.ensure(["envprobe==0.2"], info, envbuild.install)
    assert other.key != first.key and other.content_hash != first.content_hash


@pytest.mark.slow
def test_a_failed_build_publishes_nothing_and_says_what_pip_said(cache_root):
    cache = EnvironmentCache(cache_root)
    info = interpreters.describe(SYSTEM_PYTHON)
    with pytest.raises(EnvironmentBuildError, match=r"No matching distribution found for envprobe==9\.9"):
        cache.ensure(["envprobe==9.9"], info, envbuild.install)
    key = environment_key(["envprobe==9.9"], info)
    assert not (cache_root / key).exists() and not list(cache_root.glob(f".build-{key}-*"))


def test_leftovers_of_a_crashed_build_are_removed_by_the_next_builder(cache_root):
    cache = EnvironmentCache(cache_root)
    info = interpreters.describe(SYSTEM_PYTHON)
    key = environment_key(["envextra==1.0"], info)
    stale = cache_root / f".build-{key}-crashed"
    (stale / SITE / "half").mkdir(parents=True)
    built = cache.ensure(["envextra==1.0"], info, envbuild.install)
    assert not stale.exists() and not built.reused


@pytest.mark.slow
def test_concurrent_builders_of_one_environment_share_one_build(wheelhouse):
    """Two processes (`oracle env build`) and two threads ask for one new environment at once."""
    root = world_readable_dir("oracle-envcache-race-")
    try:
        task = root / "task.json"
        task.write_text(json.dumps({"task": probe_task({"requirements": ["envprobe==0.1", "envextra"]})
                                   .model_dump(mode="json"), "trajectories": [USES_PROBE.model_dump()]}))
        cfg = root / "config.yaml"
        cfg.write_text(f"verifier:\n  environment_cache: {root}\n")
        command = [sys.executable, "-m", "oracle", "--config", str(cfg), "env", "build", "--json", str(task)]
        procs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(2)]
        info = interpreters.describe(SYSTEM_PYTHON)
        got = []
        threads = [threading.Thread(target=lambda: got.append(EnvironmentCache(root).ensure(
            ["envextra", "envprobe==0.1"], info, envbuild.install))) for _ in range(2)]
        for t in threads:
            t.start()
        outs = [p.communicate(timeout=300) for p in procs]
        for t in threads:
            t.join(300)
        assert [p.returncode for p in procs] == [0, 0], outs
        rows = [json.loads(out) for out, _ in outs]
        statuses = sorted([r["status"] for r in rows] + ["reused" if g.reused else "built" for g in got])
        assert statuses == ["built", "reused", "reused", "reused"], statuses
        assert len({r["key"] for r in rows} | {g.key for g in got}) == 1
        assert len({r["content_hash"] for r in rows} | {g.content_hash for g in got}) == 1
        entries = [p for p in root.iterdir() if not p.name.startswith(".") and p.is_dir()]
        assert len(entries) == 1 and not list(root.glob(".build-*"))
    finally:
        remove(root)


# -- evaluations ---------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["nsjail", "bubblewrap", "landlock"])
async def test_the_environment_is_read_only_and_every_candidate_sees_it_pristine(cache_root, backend):
    from oracle.sandbox import probe

    if backend not in probe().available:
        pytest.skip(f"{backend} is not available here: {probe().missing.get(backend)}")
    writer = Trajectory(id="writer", code=(
        "import envprobe, os\n"
        "def attempt():\n"
        "    done = []\n"
        "    for path in (envprobe.__file__, os.path.join(os.path.dirname(envprobe.__file__), 'planted.py')):\n"
        "        try:\n"
        "            with open(path, 'a') as fh:\n"
        "                fh.write('VALUE = \"tampered\"\\n')\n"
        "            done.append('wrote ' + path)\n"
        "        except OSError as exc:\n"
        "            done.append(type(exc).__name__)\n"
        "    return done\n"
        "def f():\n"
        "    attempt()\n"
        "    return envprobe.VALUE\n"))
    task = Task(id="ro", prompt="p", entry_point="f", environment={"requirements": ["envprobe==0.1"]}, tests=[
        {"kind": "assert", "name": "writes fail", "code": "assert not any(x.startswith('wrote') for x in attempt())"},
        {"kind": "call", "call": "f()", "expected": "from-wheel-0.1", "name": "value"}])
    s = VerifierStrategy()
    try:
        result = await run(s, task, writer, USES_PROBE, cfg=config(cache_root, backend=backend))
    finally:
        s.close()
    assert result.status is Status.ok, result.error
    assert [t["outcome"] for t in result.candidate("writer").details["tests"]] == ["pass", "pass"], \
        result.candidate("writer").details
    assert result.candidate("uses").details["tests"][1]["outcome"] == "pass"
    site = Path(result.provenance.execution.environment["path"]) / SITE
    assert not (site / "envprobe" / "planted.py").exists()
    assert content_hash(site) == result.provenance.execution.environment["content_hash"]


async def test_a_build_failure_is_a_task_error_never_a_candidate_zero(cache_root, strategy):
    result = await run(strategy, probe_task({"requirements": ["envprobe==7.7"]}), USES_PROBE,
                       cfg=config(cache_root))
    assert result.status is Status.failed
    assert result.error.type == "EnvironmentBuildError"
    assert "No matching distribution found for envprobe==7.7" in result.error.message
    assert all(c.score is None for c in result.candidates)
    assert [c.kind for c in result.concerns] == ["task_unrunnable"]


async def test_an_interpreter_version_is_looked_up_and_one_missing_is_refused(cache_root, strategy):
    version = ".".join(interpreters.describe(SYSTEM_PYTHON).version.split(".")[:2])
    ok = await run(strategy, probe_task({"python": version, "requirements": ["envprobe==0.1"]}), USES_PROBE,
                   cfg=config(cache_root))
    assert ok.candidate("uses").passed is True, ok.error
    assert ok.provenance.execution.environment["python_version"].startswith(version + ".")
    missing = await run(strategy, probe_task({"python": "3.99", "requirements": ["envprobe==0.1"]}), USES_PROBE,
                        cfg=config(cache_root))
    assert missing.status is Status.failed and missing.error.type == "InterpreterUnusable"
    assert "task.environment.python: no Python 3.99 the sandbox user can run" in missing.error.message


@pytest.mark.slow
async def test_a_venv_the_sandbox_user_can_read_runs_with_its_packages(wheelhouse, cache_root, strategy):
    """``environment.python`` names a venv the user prepared (its own pip installed the package)."""
    top = world_readable_dir("oracle-venv-")
    try:
        subprocess.run([SYSTEM_PYTHON, "-m", "venv", str(top / "venv")], check=True, timeout=300)
        subprocess.run([str(top / "venv/bin/python"), "-m", "pip", "install", "-q", "envprobe==0.1"], check=True,
                       timeout=300)
        result = await run(strategy, probe_task({"python": str(top / "venv/bin/python")}), USES_PROBE,
                           cfg=config(cache_root))
        assert result.candidate("uses").passed is True, (result.error, result.candidates)
        assert result.provenance.execution.interpreters["python"] == str(top / "venv/bin/python")
    finally:
        remove(top)


async def test_an_interpreter_without_pip_gets_its_environment_from_the_verifiers_pip(cache_root, strategy):
    top = world_readable_dir("oracle-nopip-")
    try:
        subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--without-pip", str(top / "venv")], check=True, timeout=120)
        python = str(top / "venv/bin/python")
        assert envbuild.pip_command(["x"], interpreters.describe(python), top / "t")[:3] == \
            [sys.executable, "-m", "pip"]
        result = await run(strategy, probe_task({"python": python, "requirements": ["envprobe==0.1"]}), USES_PROBE,
                           cfg=config(cache_root))
        assert result.candidate("uses").passed is True, (result.error, result.candidates)
    finally:
        remove(top)


def test_sandbox_check_names_the_interpreter_and_the_configured_environment(cache_root, capsys):
    from oracle.cli.main import main

    cfg_file = cache_root / "check.yaml"
    cfg_file.write_text(f"verifier:\n  environment_cache: {cache_root}\n  environment:\n"
                        f"    requirements: [envprobe==0.1]\n")
    EnvironmentCache(cache_root).ensure(["envprobe==0.1"], interpreters.describe(SYSTEM_PYTHON), envbuild.install)
    capsys.readouterr()
    assert main(["--config", str(cfg_file), "sandbox", "check"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["interpreters"]["python"].startswith("/")
    assert report["environment"]["ready"] is True and report["environment"]["installed"] == ["envprobe==0.1"]
    cfg_file.write_text(f"verifier:\n  environment_cache: {cache_root}\n  environment:\n"
                        f"    requirements: [envprobe==0.2, envextra]\n")
    assert main(["--config", str(cfg_file), "sandbox", "check"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["environment"]["ready"] is False and "oracle env build" in report["environment"]["error"]


def test_oracle_env_build_prints_what_it_built_and_reused(cache_root, capsys, tmp_path):
    from oracle.cli.main import main

    tasks = tmp_path / "tasks.jsonl"
    rows = [{"task": probe_task({"requirements": ["envprobe==0.1", "envextra==1.0"]}).model_dump(mode="json"),
             "trajectories": [USES_PROBE.model_dump()]},
            {"task": {**probe_task({"requirements": ["envextra==1.0", "EnvProbe==0.1"]}).model_dump(mode="json"),
                      "id": "same-env"}, "trajectories": [USES_PROBE.model_dump()]},
            {"task": {"id": "plain", "prompt": "p"}, "trajectories": [{"id": "a", "answer": "x"}]}]
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text(f"verifier:\n  environment_cache: {cache_root}\n")
    capsys.readouterr()
    assert main(["--config", str(cfg_file), "env", "build", str(tasks)]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert len(lines) == 1, out  # two spellings of one environment: one line
    assert lines[0].startswith(("built ", "reused ")) and "envextra==1.0, envprobe==0.1" in lines[0]
    assert "1 environment(s) for 2 task(s); 1 task(s) name none; 0 failed" in err
    assert main(["--config", str(cfg_file), "env", "build", "--json", str(tasks)]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["status"] == "reused" and row["tasks"] == ["needs-envprobe", "same-env"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"task": probe_task({"requirements": ["envprobe==8.8"]}).model_dump(mode="json"),
                               "trajectories": [USES_PROBE.model_dump()]}))
    assert main(["--config", str(cfg_file), "env", "build", str(bad)]) == 3
    assert "No matching distribution found for envprobe==8.8" in capsys.readouterr().out


async def test_javascript_candidates_find_a_node_modules_directory(cache_root, strategy):
    import shutil

    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    top = world_readable_dir("oracle-node-")
    try:
        package = top / "node_modules" / "padkit"
        package.mkdir(parents=True)
        (package / "package.json").write_text('{"name": "padkit", "version": "1.0.0", "main": "index.js"}')
        (package / "index.js").write_text("module.exports = (s, n) => s.padStart(n, '*');\n")
        for p in [top, *top.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
        code = "const pad = require('padkit');\nfunction f(s) { return pad(s, 4); }\n"
        task = Task(id="js", prompt="p", language="javascript", entry_point="f",
                    environment={"node_modules": str(top / "node_modules")},
                    tests=[{"kind": "call", "call": "f('ab')", "expected": "**ab"}])
        result = await run(strategy, task, Trajectory(id="js", code=code), cfg=config(cache_root))
        assert result.candidate("js").passed is True, (result.error, result.candidates)
        assert result.provenance.execution.environment["node_modules"] == str(top / "node_modules")
        plain = Task(**{**task.model_dump(), "environment": None})
        without = await run(strategy, plain, Trajectory(id="js", code=code), cfg=config(cache_root))
        assert without.candidate("js").passed is False
        assert "padkit" in without.candidate("js").details["summary"]
    finally:
        remove(top)


NUMPY_PYTEST = """
import numpy as np
from solution import unit, count


def test_unit():
    assert np.allclose(unit(np.array([3.0, 4.0])), [0.6, 0.8])


def test_count():
    got = count(np.array([[0, 1], [2, 0]], dtype=np.int32)[:, ::-1])
    assert type(got) is np.int64 and got == 2
"""


@pytest.mark.slow
async def test_numpy_from_the_package_index(strategy, monkeypatch):
    """The one test that installs from the index the machine's pip is configured with."""
    for name, value in USER_PIP.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    root = world_readable_dir("oracle-envcache-numpy-")
    try:
        task = Task(id="np", prompt="Sum with numpy.", entry_point="total", environment={"requirements": ["numpy>=2"]},
                    tests=[{"kind": "call", "call": "total([1, 2, 3.5])", "expected": 6.5},
                           {"kind": "assert", "code": "import numpy\nassert numpy.__version__.startswith('2')"},
                           {"kind": "pytest", "name": "arrays", "code": NUMPY_PYTEST}])
        code = ("import numpy as np\n\ndef total(xs):\n    return float(np.asarray(xs).sum())\n\n"
                "def unit(v):\n    return v / np.linalg.norm(v)\n\n"
                "def count(a):\n    return (a != 0).sum()\n")
        wrong = code.replace("v / np.linalg.norm(v)", "v[::-1] / np.linalg.norm(v)")
        result = await run(strategy, task, Trajectory(id="np", code=code), Trajectory(id="wrong", code=wrong),
                           cfg=config(root, timeout_s=30))
        assert result.status is Status.ok, result.error
        assert result.candidate("np").passed is True, result.candidate("np").details
        assert any(d.startswith("numpy==2") for d in result.provenance.execution.environment["installed"])
        # Arrays cross both ways in a pytest test (and a numpy scalar back): the wrong candidate fails
        # with pytest's own account of the comparison, the honest one passes, nothing is broken.
        tests = {t["name"]: t for t in result.candidate("wrong").details["tests"]}
        assert tests["arrays::test_unit"]["outcome"] == "fail", tests
        assert "allclose" in tests["arrays::test_unit"]["message"], tests["arrays::test_unit"]
        assert tests["arrays::test_count"]["outcome"] == "pass" and result.broken_tests == []
    finally:
        remove(root)


def test_pool_reuse_is_keyed_by_the_environment(cache_root):
    """Pools outlive tasks: one made for an environment is never handed a task without it."""
    from oracle.strategies.verifier import environments

    cfg = config(cache_root).verifier
    plain = environments.prepare(None, "default", cfg, SYSTEM_PYTHON)
    with_env = environments.prepare(Environment(requirements=["envprobe==0.1"]), "task.environment", cfg,
                                    SYSTEM_PYTHON)
    assert plain.key != with_env.key and not plain.sys_path
    site = with_env.sys_path[0]
    assert os.path.isdir(site) and any(site.startswith(m + "/") for m in with_env.mounts)


async def test_uv_builds_the_same_environment_when_preferred(wheelhouse, strategy, monkeypatch):
    """``environment_installer: uv`` (uv's own configuration: UV_NO_INDEX, UV_FIND_LINKS)."""
    if envbuild.find_uv() is None:
        pytest.skip("uv is not installed (it is in the dev extra)")
    monkeypatch.setenv("UV_NO_INDEX", "1")
    monkeypatch.setenv("UV_FIND_LINKS", str(wheelhouse))
    root = world_readable_dir("oracle-envcache-uv-")
    try:
        result = await run(strategy, probe_task({"requirements": ["envprobe==0.1"]}), USES_PROBE,
                           cfg=config(root, environment_installer="uv"))
        assert result.candidate("uses").passed is True, (result.error, result.candidates)
        env = result.provenance.execution.environment
        manifest = json.loads((Path(env["path"]) / MANIFEST).read_text())
        assert manifest["installer"] == "uv" and env["installed"] == ["envprobe==0.1"]
        assert list(Path(env["path"], SITE, "envprobe").glob("__pycache__/*.pyc"))  # compiled, like pip's
        failed = await run(strategy, probe_task({"requirements": ["envprobe==6.6"]}), USES_PROBE,
                           cfg=config(root, environment_installer="uv"))
        assert failed.status is Status.failed and failed.error.type == "EnvironmentBuildError"
        assert failed.error.message.startswith("uv could not install envprobe==6.6")
    finally:
        remove(root)


async def test_one_strategy_keeps_a_pool_per_environment(cache_root, strategy):
    """Pools outlive tasks: the environment's pool is never handed a task that names none, and back."""
    with_env = probe_task({"requirements": ["envprobe==0.1"]})
    first = await run(strategy, with_env, USES_PROBE, cfg=config(cache_root))
    plain = await run(strategy, probe_task(), USES_PROBE, cfg=config(cache_root))
    again = await run(strategy, with_env, USES_PROBE, cfg=config(cache_root))
    assert first.candidate("uses").passed is True and again.candidate("uses").passed is True
    assert plain.candidate("uses").passed is False
    assert "No module named 'envprobe'" in plain.candidate("uses").details["summary"]
    assert again.provenance.execution.environment["reused"] is True


async def test_oracle_check_runs_the_reference_in_the_tasks_environment(cache_root, strategy):
    """``oracle check`` builds the same pool as ``evaluate``: a test that imports the environment's
    package passes on the reference instead of reading as broken (it once ignored task.environment)."""
    from oracle.strategies.verifier.check import check_tests

    task = probe_task({"requirements": ["envprobe==0.1"]}, solution=USES_PROBE.code)
    report = await check_tests(strategy, task, config(cache_root))
    assert report.error is None and report.ok, report.as_dict()
    assert [row["outcome"] for row in report.tests] == ["pass", "pass"]
    bare = await check_tests(strategy, probe_task(None, solution=USES_PROBE.code), config(cache_root))
    assert not bare.ok and "No module named 'envprobe'" in (bare.error or ""), bare.as_dict()  # without it
