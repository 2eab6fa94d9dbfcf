"""Issue 29, "the no-model path": what a user sees when no model server is running.

Real components throughout: a closed loopback port (a socket bound, its port read, the socket
closed), the CLI as a subprocess, the scripted HTTP server for an endpoint that answers, and an
installed environment without llama-cpp-python (a site directory holding every installed package
but that one) for the missing optional extra.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from oracle.config.model import ProviderSettings
from oracle import errors
from oracle.errors import ProviderError
from oracle.providers import ChatMessage, ChatRequest, make_async_chat_client
from tests.plugins.scripted_server import status_reply

ROOT = Path(__file__).resolve().parent.parent
REQ = ChatRequest(messages=[ChatMessage(role="user", content="Say ok.")], max_tokens=4)
HINT = "oracle model serve"


def closed_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on: bound, read, closed (the kernel refuses connections to it)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def judge_task(task_id: str, prompt: str) -> dict:
    return {"task": {"id": task_id, "prompt": prompt, "evaluator": "llm_judge"},
            "trajectories": [{"id": "a", "answer": "Because of physics."}]}


def code_line(task_id: str = "add") -> dict:
    return {"task": {"id": task_id, "prompt": "def add(a, b):\n    \"\"\"Return a + b.\"\"\"\n", "entry_point": "add",
                     "tests": [{"kind": "call", "call": "add(2, 3)", "expected": 5}]},
            "trajectories": [{"id": "good", "answer": "    return a + b\n"}]}


THREE = [judge_task("sky", "Explain why the sky is blue."), judge_task("sea", "Explain why the sea is salty."),
         judge_task("leaf", "Explain why leaves are green.")]


def write_jsonl(path: Path, items: list[dict]) -> Path:
    path.write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
    return path


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None,
        timeout: float = 300) -> subprocess.CompletedProcess:
    """``oracle ARGS`` as a user runs it, with no ORACLE_* variable from the caller's environment."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    return subprocess.run([sys.executable, "-m", "oracle", *args], capture_output=True, text=True, cwd=cwd,
                          env={**base, **(env or {})}, timeout=timeout)


def down(port: int) -> dict[str, str]:
    return {"ORACLE_BASE_URL": f"http://127.0.0.1:{port}/v1"}


# -- the provider: a refused loopback connection is not transient ---------------------------------

async def test_a_refused_loopback_connection_fails_at_once_with_the_hint():
    settings = ProviderSettings(base_url=f"http://127.0.0.1:{closed_port()}/v1", max_retries=4,
                                backoff_base_s=0.5)
    client = make_async_chat_client(settings)
    start = time.perf_counter()
    try:
        with pytest.raises(errors.EndpointUnreachable) as info:
            await asyncio.wait_for(client.complete(REQ), timeout=30)
    finally:
        await client.aclose()
    elapsed = time.perf_counter() - start
    assert info.value.attempts == 1 and "(after 1 attempt)" in str(info.value)
    assert HINT in str(info.value) and "ORACLE_BASE_URL" in str(info.value)
    assert elapsed < 1.0, elapsed  # four retries would have slept at least 0.25+0.5+1+2 s


async def test_localhost_by_name_is_loopback_too():
    settings = ProviderSettings(base_url=f"http://localhost:{closed_port()}/v1", max_retries=3)
    client = make_async_chat_client(settings)
    try:
        with pytest.raises(errors.EndpointUnreachable) as info:
            await asyncio.wait_for(client.complete(REQ), timeout=30)
    finally:
        await client.aclose()
    assert info.value.attempts == 1


def _own_address() -> str | None:
    """This machine's address on a non-loopback interface, if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("198.51.100.1", 9))  # TEST-NET-2: no packet is sent by a UDP connect
        except OSError:
            return None
        address = probe.getsockname()[0]
    return None if address.startswith("127.") else address


async def test_a_refusal_from_another_host_is_still_retried():
    """Only loopback is known to be down for good: a remote refusal (a restarting server, a load
    balancer) keeps its retries, and its error is the plain ProviderError."""
    address = _own_address()
    if address is None:
        pytest.skip("no non-loopback interface to connect to")
    settings = ProviderSettings(base_url=f"http://{address}:{closed_port(address)}/v1", model="m",
                                max_retries=2, backoff_base_s=0.01, backoff_max_s=0.02)
    client = make_async_chat_client(settings)
    try:
        with pytest.raises(ProviderError) as info:
            await asyncio.wait_for(client.complete(REQ), timeout=30)
    finally:
        await client.aclose()
    assert not isinstance(info.value, errors.EndpointUnreachable) and info.value.attempts == 3


# -- evaluate: three judge tasks with nothing listening ----------------------------------------

def test_evaluate_three_tasks_with_the_server_down_fails_each_at_once_and_exits_3(tmp_path):
    tasks = write_jsonl(tmp_path / "three.jsonl", THREE)
    start = time.perf_counter()
    run = cli("evaluate", str(tasks), "--json", "--no-store", cwd=tmp_path, env=down(closed_port()))
    elapsed = time.perf_counter() - start
    rows = [json.loads(line) for line in run.stdout.splitlines()]
    assert [r["status"] for r in rows] == ["failed"] * 3, run.stderr
    for r in rows:
        assert r["error"]["type"] == r["result"]["result"]["error"]["type"] == "EndpointUnreachable"
        assert "(after 1 attempt)" in r["error"]["message"] and HINT in r["error"]["message"]
    assert run.returncode == 3 and "3 of 3 task(s) failed" in run.stderr
    # On c0700e1 each task retried 5 times (17 s for this file); the floor of those sleeps alone
    # is 3 x 3.75 s. What is left is the interpreter starting.
    assert elapsed < 10, elapsed


@pytest.mark.slow
def test_a_failed_task_exits_3_unless_allow_failures_and_help_says_so(tmp_path):
    task = tmp_path / "sky.json"
    task.write_text(json.dumps(THREE[0]))
    env = down(closed_port())
    failed = cli("evaluate", str(task), "--no-store", cwd=tmp_path, env=env)
    assert failed.returncode == 3 and "status: failed" in failed.stdout
    allowed = cli("evaluate", str(task), "--no-store", "--allow-failures", cwd=tmp_path, env=env)
    assert allowed.returncode == 0, allowed.stderr
    ok = cli("evaluate", str(write_jsonl(tmp_path / "add.jsonl", [code_line()])), "--no-store", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    both = cli("evaluate", str(task), "--strict", "--allow-failures", cwd=tmp_path, env=env)
    assert both.returncode == 2 and "not allowed with" in both.stderr
    shown = cli("evaluate", "--help", cwd=tmp_path)
    text = " ".join(shown.stdout.split())
    assert "--allow-failures" in text and "3 when a task failed" in text


# -- batch, compare, calibrate: one check per run, then stop -----------------------------------

@pytest.mark.slow
def test_batch_stops_at_the_first_row_that_needs_the_down_endpoint_and_resumes_later(tmp_path):
    from tests.plugins.scripted_server import ScriptedServer

    tasks = write_jsonl(tmp_path / "mixed.jsonl", [code_line(), *THREE])
    out = tmp_path / "rows.jsonl"
    port = closed_port()
    start = time.perf_counter()
    run = cli("batch", str(tasks), "-o", str(out), "--no-store", "--concurrency", "1", cwd=tmp_path, env=down(port))
    elapsed = time.perf_counter() - start
    assert run.returncode == 2, run.stderr
    assert "the run stopped" in run.stderr and HINT in run.stderr and "3 of 4 input lines have no row yet" in run.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["task_id"] for r in rows] == ["add"] and rows[0]["status"] == "ok"  # no failed row was written
    assert elapsed < 30, elapsed
    # once a server answers at the judge's URL, the same command computes the rest
    with ScriptedServer(port=port):
        again = cli("batch", str(tasks), "-o", str(out), "--no-store", "--concurrency", "1", cwd=tmp_path,
                    env=down(port))
    assert again.returncode == 0, again.stderr
    assert "4 input lines, 1 resumed, 3 computed" in again.stdout
    assert sorted(json.loads(line)["task_id"] for line in out.read_text().splitlines()) == ["add", "leaf", "sea", "sky"]


@pytest.mark.slow
def test_a_batch_that_needs_no_model_call_does_not_check_the_endpoint(tmp_path, scripted_server):
    """Resumed rows and cache hits need no model: a down endpoint does not stop those runs."""
    cache = tmp_path / "responses.sqlite"
    config = tmp_path / "oracle.yaml"
    config.write_text(json.dumps({"providers": {"judge": scripted_server.provider_settings(
        cache_path=str(cache)).model_dump(mode="json")}}))
    tasks = write_jsonl(tmp_path / "three.jsonl", THREE)
    first = cli("--config", str(config), "batch", str(tasks), "-o", str(tmp_path / "a.jsonl"), "--no-store",
                cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    scripted_server.stop()  # the same URL, now refused: only the cache can answer
    calls = len(scripted_server.requests)
    resumed = cli("--config", str(config), "batch", str(tasks), "-o", str(tmp_path / "a.jsonl"), "--no-store",
                  cwd=tmp_path)
    assert resumed.returncode == 0 and "3 resumed, 0 computed" in resumed.stdout, resumed.stderr
    cached = cli("--config", str(config), "batch", str(tasks), "-o", str(tmp_path / "b.jsonl"), "--no-store",
                 cwd=tmp_path)
    assert cached.returncode == 0 and "0 resumed, 3 computed" in cached.stdout, cached.stderr
    statuses = [json.loads(line)["status"] for line in (tmp_path / "b.jsonl").read_text().splitlines()]
    assert statuses == [json.loads(line)["status"] for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert "failed" not in statuses and len(scripted_server.requests) == calls


def _labelled(task: dict, label: dict) -> dict:
    return {**task, "label": label}


@pytest.mark.slow
def test_compare_stops_with_the_hint_and_keeps_the_runs_that_needed_no_model(tmp_path):
    items = write_jsonl(tmp_path / "labelled.jsonl", [
        _labelled(code_line("c1"), {"passed": {"good": True}, "evaluator": "verifier"}),
        _labelled(judge_task("j1", "Explain why the sky is blue."), {"passed": {"a": True}})])
    out = tmp_path / "cmp"
    start = time.perf_counter()
    run = cli("compare", str(items), "-o", str(out), "--arms", "verifier,llm_judge,baseline", "--no-report",
              cwd=tmp_path, env=down(closed_port()))
    elapsed = time.perf_counter() - start
    assert run.returncode == 2, run.stderr
    assert "the comparison stopped" in run.stderr and HINT in run.stderr
    records = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert records and all(r["arm"] in ("verifier", "baseline") for r in records)
    assert not any((r.get("error") or {}).get("type") == "EndpointUnreachable" for r in records)
    assert not (out / "summary.json").exists() and elapsed < 30


@pytest.mark.slow
def test_calibrate_stops_with_the_hint_and_writes_nothing(tmp_path):
    out = tmp_path / "calibration.json"
    start = time.perf_counter()
    run = cli("calibrate", str(ROOT / "docs/examples/yesno.jsonl"), "--evaluator", "decision_judge", "-o", str(out),
              "--review-rate", "0.1", cwd=tmp_path, env=down(closed_port()))
    elapsed = time.perf_counter() - start
    assert run.returncode == 2 and HINT in run.stderr and "nothing was written" in run.stderr, run.stderr
    assert not out.exists() and elapsed < 15, elapsed


# -- what failed, and why ---------------------------------------------------------------------------

def _failing_server(scripted_server) -> dict[str, str]:
    scripted_server.set_handler(lambda request: status_reply(404, message="The model `gpt-9` does not exist"))
    return {"ORACLE_BASE_URL": scripted_server.base_url, "ORACLE_MODEL": "gpt-9",
            "ORACLE_PROVIDERS__JUDGE__MAX_RETRIES": "0"}


@pytest.mark.slow
def test_calibrate_says_what_failed_and_how_often(tmp_path, scripted_server):
    run = cli("calibrate", str(ROOT / "docs/examples/yesno.jsonl"), "--evaluator", "decision_judge",
              "-o", str(tmp_path / "c.json"), cwd=tmp_path, env=_failing_server(scripted_server))
    assert run.returncode == 2, run.stderr
    message = " ".join(run.stderr.split())
    assert "8 items: 8 failed (first error, 8 times: ProviderHTTPError: HTTP 404" in message, message
    assert "The model `gpt-9` does not exist" in message


@pytest.mark.slow
def test_calibrate_accounts_for_items_dropped_as_reserved(tmp_path):
    """Every item reserved by the shared data: the message says they were dropped, and how many."""
    data = tmp_path / "data"
    (data / "suite").mkdir(parents=True)
    (data / "suite" / "reserved_keys.json").write_text(json.dumps(
        {"keys": [], "humaneval_task_ids": ["HumanEval/1", "HumanEval/2", "HumanEval/3"]}))
    lines = []
    for n in (1, 2, 3):
        line = json.loads((ROOT / "docs/examples/yesno.jsonl").read_text().splitlines()[n - 1])
        line["task"]["id"] = f"code-verify/humaneval/HumanEval/{n}"
        lines.append(line)
    items = write_jsonl(tmp_path / "reserved.jsonl", lines)
    run = cli("calibrate", str(items), "--evaluator", "decision_judge", "-o", str(tmp_path / "c.json"),
              "--data", str(data), cwd=tmp_path, env=down(closed_port()))
    assert run.returncode == 2, run.stderr
    assert "no labelled point was answered (3 items: 3 dropped as reserved)" in run.stderr, run.stderr


@pytest.mark.slow
def test_compare_says_what_failed_and_how_often(tmp_path, scripted_server):
    items = write_jsonl(tmp_path / "labelled.jsonl", [
        _labelled(judge_task(f"j{n}", f"Explain thing {n}."), {"passed": {"a": True}}) for n in (1, 2)])
    run = cli("compare", str(items), "-o", str(tmp_path / "cmp"), "--arms", "llm_judge", "--no-report",
              cwd=tmp_path, env=_failing_server(scripted_server))
    assert run.returncode == 0, run.stderr
    assert "0/0/2" in run.stdout
    line = next(line for line in run.stdout.splitlines() if line.startswith("failed llm_judge"))
    assert line.startswith("failed llm_judge x2: ProviderHTTPError: HTTP 404") and "gpt-9" in line
    summary = json.loads((tmp_path / "cmp" / "summary.json").read_text())
    (reason, count), = summary["results"][0]["failure_reasons"].items()
    assert count == 2 and reason.startswith("ProviderHTTPError: HTTP 404")


# -- the optional extra and the example script -------------------------------------------------

@pytest.fixture(scope="module")
def without_llama(tmp_path_factory) -> list[str]:
    """A Python command line that sees every installed package except llama-cpp-python: a site
    directory of links to each entry of this interpreter's site directories but that one. The code
    to run is the command's next argument (``[*without_llama, CODE, *ARGS]``)."""
    farm = tmp_path_factory.mktemp("site-without-llama")
    for directory in [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]:
        for entry in Path(directory).iterdir():
            target = farm / entry.name
            if not entry.name.lower().startswith("llama_cpp") and not (target.exists() or target.is_symlink()):
                target.symlink_to(entry)
    return [sys.executable, "-S", "-c", f"import site, sys; site.addsitedir({str(farm)!r}); exec(sys.argv[1])"]


def _run_without_llama(command: list[str], code: str, *args: str, cwd: Path,
                       env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    return subprocess.run([*command, code, *args], capture_output=True, text=True, cwd=cwd,
                          env={**base, **(env or {})}, timeout=120)


def test_model_serve_without_the_extra_exits_2_with_the_pip_command(without_llama, tmp_path):
    run = _run_without_llama(without_llama, "from oracle.cli.main import main; sys.exit(main(['model', 'serve']))",
                             cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert "pip install 'llama-cpp-python[server]" in run.stderr and "internal error" not in run.stderr


EXAMPLES = sorted((ROOT / "examples").glob("*/run.py"))


@pytest.mark.slow
@pytest.mark.parametrize("script", EXAMPLES, ids=[p.parent.name for p in EXAMPLES])
def test_every_example_script_ends_with_a_message_not_a_traceback(script, without_llama, tmp_path):
    run_script = "import runpy; sys.argv = sys.argv[2:]; runpy.run_path(sys.argv[0], run_name='__main__')"
    # with nothing serving the judge and no llama-cpp-python to start one
    no_llama = _run_without_llama(without_llama, run_script, str(script), cwd=tmp_path, env=down(closed_port()))
    # a task file that does not exist
    no_file = subprocess.run([sys.executable, str(script), "--tasks", str(tmp_path / "missing.yaml")],
                             capture_output=True, text=True, cwd=tmp_path, timeout=120)
    for run in (no_llama, no_file):
        assert "Traceback" not in run.stderr, run.stderr
        assert run.returncode == 2 and run.stderr.strip().splitlines()[-1].startswith("error: "), run.stderr
    assert "pip install 'llama-cpp-python[server]" in no_llama.stderr
    assert "missing.yaml" in no_file.stderr
