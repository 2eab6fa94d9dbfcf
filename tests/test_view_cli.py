"""``oracle view`` before and around serving: bad input refused naming the path (exit 2, nothing served),
the token rule of ``oracle serve`` beyond loopback, and answers only through that rule (real sockets)."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from oracle.escalation.store import EscalationStore
from oracle.results.result import Escalation, OracleResult, Status
from oracle.routing.route import Route
from oracle.tasks.task import TaskInput

ROOT = Path(__file__).resolve().parent.parent


def view(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "oracle", "view", *args, "--no-open"], cwd=cwd, capture_output=True,
                          text=True, timeout=60, env={**os.environ, **(env or {})})


@pytest.mark.parametrize("content, message", [
    (None, "no such file or directory"),
    ("[tool.x]\n", "line 1: not JSON"),
    ('{"a": 1}\n', "line 1: not an oracle result"),
    ('{"task_id": "t", "status": "ok", "result": null}\n{"b": 2}\n', "line 2: not an oracle result"),
    ("", "empty file"),
])
def test_bad_input_is_an_error_naming_the_path_before_serving(tmp_path, content, message):
    path = tmp_path / "results.jsonl"
    if content is not None:
        path.write_text(content)
    proc = view(str(path), "--port", "0", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""  # no URL: nothing was served
    assert proc.stderr.startswith(f"error: {path}") and message in proc.stderr, proc.stderr


@pytest.mark.slow
def test_a_directory_that_is_not_a_compare_folder_and_a_store_that_is_not_one(tmp_path):
    proc = view(str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 2 and "not a compare folder" in proc.stderr
    fake = tmp_path / "other.sqlite"
    with sqlite3.connect(fake) as db:
        db.execute("CREATE TABLE escalations (id TEXT)")
    proc = view(str(fake), cwd=tmp_path)
    assert proc.returncode == 2 and str(fake) in proc.stderr and "not an oracle escalation store" in proc.stderr
    with sqlite3.connect(fake) as db:  # left as it was: no table of the store's was created in it
        assert db.execute("SELECT name FROM sqlite_master").fetchall() == [("escalations",)]
    proc = view("--store", str(tmp_path / "missing.sqlite"), cwd=tmp_path)
    assert proc.returncode == 2 and "missing.sqlite: no such file" in proc.stderr


def test_a_task_file_alone_is_not_results(tmp_path):
    proc = view(str(ROOT / "examples/n_plus_one/task.json"), cwd=tmp_path)
    assert proc.returncode == 2 and "holds tasks, not results" in proc.stderr


def _store_with_one_request(path: Path) -> str:
    item = TaskInput.model_validate({"task": {"id": "t1", "prompt": "Which is right?"},
                                     "trajectories": [{"id": "a", "answer": "x"}, {"id": "b", "answer": "y"}]})
    route = Route(evaluator="llm_judge", confidence=0.4, totals={"llm_judge": 1.0}, votes=[], gates=[],
                  threshold=0.45, signals={}, config_hash="h", low_confidence=True)
    request = Escalation(id="esc-0123456789abcdef", reason="low_route_confidence", question="Which answer is right?",
                         options=["a", "b"])
    with EscalationStore(path) as store:
        store.put(request, item, OracleResult(task_id="t1", status=Status.pending, route=route, escalation=request))
    return request.id


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_beyond_loopback_needs_a_token_and_answers_need_it(tmp_path):
    store = tmp_path / "esc.sqlite"
    esc_id = _store_with_one_request(store)
    proc = view(str(store), "--host", "0.0.0.0", cwd=tmp_path, env={"ORACLE_SERVE_TOKEN": ""})
    assert proc.returncode == 2 and "not a loopback address: set a bearer token" in proc.stderr
    token = tmp_path / "token"
    token.write_text("s3cret-token-of-enough-length\n")
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "oracle", "view", str(store), "--host", "0.0.0.0", "--port",
                               str(port), "--token-file", str(token), "--no-open"], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        assert url == f"http://0.0.0.0:{port}/", url
        base = f"http://127.0.0.1:{port}"
        with urllib.request.urlopen(base + "/api/rows") as reply:  # reading needs no token
            assert json.load(reply)["rows"][0]["task_id"] == "t1"

        def post(headers: dict[str, str]) -> tuple[int, dict]:
            req = urllib.request.Request(f"{base}/api/escalations/{esc_id}/answer", method="POST",
                                         data=json.dumps({"choice": "b", "text": "b is right"}).encode(),
                                         headers={"content-type": "application/json", **headers})
            try:
                with urllib.request.urlopen(req) as reply:
                    return reply.status, json.load(reply)
            except urllib.error.HTTPError as err:
                return err.code, json.loads(err.read())

        assert post({})[0] == 401
        assert post({"authorization": "Bearer wrong-token-of-enough-length"})[0] == 401
        assert post({"authorization": "Bearer s3cret-token-of-enough-length", "origin": "http://evil.example"})[0] \
            == 403
        status, body = post({"authorization": "Bearer s3cret-token-of-enough-length"})
        assert status == 200 and body["state"] == "answered"
        status, body = post({"authorization": "Bearer s3cret-token-of-enough-length"})
        assert status == 409 and "already answered" in body["message"]  # the first answer wins
    finally:
        server.terminate()
        server.wait(timeout=20)
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT state, choice FROM escalations").fetchall() == [("answered", "b")]


HOSTILE = ('</pre><script>fetch("/api/escalations/x/answer",{method:"POST"})</script>'
           '<img src=x onerror="document.title=1">')


@pytest.mark.slow
def test_a_hostile_candidate_is_shown_as_text_never_run(tmp_path):
    """A candidate's answer (or id, or the prompt) that carries markup must reach the reviewer's
    page as text: a script there could answer the candidate's own escalation from the same origin."""
    store = tmp_path / "esc.sqlite"
    item = TaskInput.model_validate({"task": {"id": "t-hostile", "prompt": "Pick one. " + HOSTILE},
                                     "trajectories": [{"id": "a", "answer": HOSTILE, "code": HOSTILE},
                                                      {"id": "b", "answer": "plain"}]})
    route = Route(evaluator="llm_judge", confidence=0.4, totals={"llm_judge": 1.0}, votes=[], gates=[],
                  threshold=0.45, signals={"hostile": HOSTILE}, config_hash="h", low_confidence=True)
    request = Escalation(id="esc-00000000000000aa", reason="low_route_confidence", question="Which? " + HOSTILE,
                         options=["a", "b"])
    with EscalationStore(store) as s:
        s.put(request, item, OracleResult(task_id="t-hostile", status=Status.pending, route=route, escalation=request))
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "oracle", "view", str(store), "--port", str(port), "--no-open"],
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        base = server.stdout.readline().strip().rstrip("/")
        with urllib.request.urlopen(base + "/api/rows") as reply:
            key = json.load(reply)["rows"][0]["key"]
        with urllib.request.urlopen(f"{base}/task/{key}") as reply:
            page = reply.read().decode()
        with urllib.request.urlopen(base + "/") as reply:
            page += reply.read().decode()
    finally:
        server.terminate()
        server.wait(timeout=20)
    assert "&lt;script&gt;fetch(" in page                      # shown, as text
    assert "<script>fetch(" not in page and "<img src=x" not in page and 'onerror="document' not in page
    export = tmp_path / "out.html"
    proc = view(str(store), "--export", str(export), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = export.read_text()
    assert "<script>fetch(" not in text and "<img src=x" not in text and "</pre><script" not in text
