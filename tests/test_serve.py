"""``oracle serve`` over real sockets: a uvicorn server in a subprocess, called with httpx.

Models are the scripted wire-protocol server (tests/plugins/scripted_server.py) over TCP, so an
evaluation that reaches the LLM judge makes real HTTP calls; the other tasks are checked against
a reference answer (no model, no sandbox) to keep the file fast.
"""

from __future__ import annotations

import dataclasses
import json
import socket
import time
from pathlib import Path

import httpx
import pytest

from tests.data.tasks import code_task, open_task
from tests.plugins.scripted_server import ScriptedServer, auto_reply
from tests.serve_support import dumps, judge_config, need_serve_extra, reference_task, serve

pytestmark = pytest.mark.slow
need_serve_extra()


@pytest.fixture(scope="module")
def models():
    server = ScriptedServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def api(models, tmp_path_factory):
    """One server with default limits for the tests that do not need special settings."""
    tmp = tmp_path_factory.mktemp("serve")
    with serve(tmp, config=judge_config(models.base_url)) as served:
        with httpx.Client(base_url=served.base_url, timeout=60) as client:
            yield client


def _poll(client: httpx.Client, url: str, *, until: str = "running", timeout_s: float = 60) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        data = client.get(url).json()
        if data["state"] != until or time.monotonic() > deadline:
            return data
        time.sleep(0.1)


# -- the endpoints -----------------------------------------------------------------------------

def test_health_version_and_route(api):
    assert api.get("/v1/health").json()["status"] == "ok"
    version = api.get("/v1/version").json()
    from importlib.metadata import version as installed

    assert version["version"] == installed("oracle-router") and version["config_hash"]
    route = api.post("/v1/route", content=dumps(reference_task())).json()
    assert route["evaluator"] == "verifier" and route["config_hash"] == version["config_hash"]


def test_evaluate_waits_for_the_verdict(api):
    reply = api.post("/v1/evaluate", content=dumps(reference_task()))
    assert reply.status_code == 200
    job = reply.json()
    assert job["state"] == "done" and job["result"]["status"] == "ok"
    assert job["result"]["result"]["best"] == ["good"]
    assert api.get(f"/v1/jobs/{job['job_id']}").json()["result"] == job["result"]


def test_evaluate_submit_then_poll_through_the_llm_judge(api, models):
    before = len(models.requests)
    reply = api.post("/v1/evaluate", params={"wait": "false"}, content=dumps(open_task(evaluator="llm_judge")))
    assert reply.status_code == 202 and reply.json()["state"] == "running"
    job = _poll(api, f"/v1/jobs/{reply.json()['job_id']}")
    assert job["state"] == "done", job
    assert job["result"]["route"]["evaluator"] == "llm_judge"
    assert len(models.requests) > before  # the judge really called the model server over HTTP
    assert api.get("/v1/jobs/" + "0" * 32).status_code == 404


@pytest.mark.parametrize("body, field", [
    ({"task": {"id": "t", "prompt": "p", "tests": [{"kind": "unit"}]}, "trajectories": [{"id": "a", "answer": "x"}]},
     "task.tests[0]"),
    ({"task": {"id": "t", "prompt": "p", "evaluatr": "verifier"}, "trajectories": [{"id": "a", "answer": "x"}]},
     "task.evaluatr"),
    ({"task": {"id": "t", "prompt": "p"}}, "trajectories"),
    ([1, 2], "(root)"),
])
def test_task_errors_are_422_naming_the_field(api, body, field):
    for path in ("/v1/route", "/v1/evaluate"):
        reply = api.post(path, content=dumps(body))
        assert reply.status_code == 422, reply.text
        assert reply.json()["error"] == "task_validation" and reply.json()["field"] == field, reply.json()


def test_task_file_limits_apply_to_request_bodies(api):
    dup = b'{"task": {"id": "t", "id": "u", "prompt": "p"}, "trajectories": []}'
    reply = api.post("/v1/route", content=dup)
    assert reply.status_code == 422 and "duplicate key 'id'" in reply.json()["message"]
    deep = reference_task()
    deep["task"]["metadata"] = {"x": json.loads("[" * 100 + "]" * 100)}
    reply = api.post("/v1/route", content=dumps(deep))
    assert reply.status_code == 422 and "max_depth" in reply.json()["message"], reply.json()
    huge = b'{"task": {"id": "t", "prompt": "p", "metadata": {"n": ' + b"9" * 5000 + b'}}, "trajectories": []}'
    assert api.post("/v1/route", content=huge).status_code == 422
    assert api.post("/v1/route", content=b"\xff\xfe").json()["field"] == "(body)"
    assert api.post("/v1/route", content=b"").json()["field"] == "(body)"


def test_in_process_is_refused_unless_the_server_allows_it(api, tmp_path):
    task = code_task(execution="in_process")
    reply = api.post("/v1/evaluate", content=dumps(task))
    assert reply.status_code == 422 and reply.json()["field"] == "task.execution"
    batch = api.post("/v1/batches", content=(json.dumps(reference_task()) + "\n" + json.dumps(task) + "\n").encode())
    assert batch.status_code == 422 and "line 2" in batch.json()["field"]
    # Allowed by the server, the verifier's own opt-in (config) still decides: off by default.
    with serve(tmp_path, "--allow-in-process") as served:
        job = httpx.post(served.base_url + "/v1/evaluate", content=dumps(task), timeout=60).json()
    assert job["state"] == "done" and job["result"]["result"]["status"] == "failed"  # (pending: escalated)
    assert "verifier.allow_in_process" in job["result"]["result"]["error"]["message"]


# -- batches -----------------------------------------------------------------------------------

def test_batch_submit_status_results(api):
    lines = [json.dumps(reference_task("b1")), "{not json", json.dumps(reference_task("b2"))]
    reply = api.post("/v1/batches", content=("\n".join(lines) + "\n").encode(),
                     headers={"content-type": "application/x-ndjson"})
    assert reply.status_code == 202 and reply.json()["total"] == 3
    status = _poll(api, f"/v1/batches/{reply.json()['batch_id']}")
    assert status["state"] == "done" and status["rows"] == 3, status
    assert status["summary"]["rows"] == 3
    results = api.get(f"/v1/batches/{status['batch_id']}/results")
    assert results.headers["content-type"].startswith("application/x-ndjson")
    rows = sorted((json.loads(line) for line in results.text.splitlines()), key=lambda r: r["line"])
    assert [r["line"] for r in rows] == [1, 2, 3]
    assert rows[0]["status"] == "ok" and rows[1]["valid"] is False and "invalid JSON" in json.dumps(rows[1])
    assert api.get("/v1/batches/" + "0" * 32).status_code == 404
    assert api.post("/v1/batches", content=b"\n\n").status_code == 422


# -- escalations -------------------------------------------------------------------------------

def test_escalations_list_show_answer_resume(api):
    job = api.post("/v1/evaluate", content=dumps(open_task(id="esc-task", evaluator="verifier"))).json()
    assert job["result"]["status"] == "pending", job
    esc_id = job["result"]["escalation"]["id"]
    listed = api.get("/v1/escalations", params={"state": "pending"}).json()
    assert esc_id in [e["id"] for e in listed]
    shown = api.get(f"/v1/escalations/{esc_id}").json()
    assert shown["state"] == "pending" and shown["item"]["task"]["id"] == "esc-task"
    early = api.post(f"/v1/escalations/{esc_id}/resume")
    assert early.status_code == 409 and early.json()["error"] == "not_answered"
    assert api.post(f"/v1/escalations/{esc_id}/answer", json={"choice": "no such option"}).status_code == 422
    answered = api.post(f"/v1/escalations/{esc_id}/answer", json={"choice": "llm_judge", "answered_by": "t"})
    assert answered.status_code == 200 and answered.json()["state"] == "answered"
    again = api.post(f"/v1/escalations/{esc_id}/answer", json={"choice": "llm_judge"})
    assert again.status_code == 409 and again.json()["error"] == "already_answered"
    final = api.post(f"/v1/escalations/{esc_id}/resume")
    assert final.status_code == 200, final.text
    assert final.json()["route"]["evaluator"] == "llm_judge"
    assert api.get(f"/v1/escalations/{esc_id}").json()["state"] == "resolved"
    assert api.get("/v1/escalations/esc-00000000000").status_code == 404
    assert api.post("/v1/escalations/esc-00000000000/answer", json={"text": "x"}).status_code == 404
    bad = api.post(f"/v1/escalations/{esc_id}/answer", json={"text": "x", "unknown": 1})
    assert bad.status_code == 422 and bad.json()["field"] == "unknown"


# -- limits and security ------------------------------------------------------------------------

def test_body_limit_413_by_declared_length_and_while_streaming(tmp_path):
    with serve(tmp_path, "--max-body-mib", "0.01") as served:  # 10 KiB
        big = b'{"task": {"id": "t", "prompt": "' + b"x" * 20_000 + b'"}, "trajectories": []}'
        reply = httpx.post(served.base_url + "/v1/route", content=big)
        assert reply.status_code == 413 and reply.json()["error"] == "too_large"
        # Chunked, no Content-Length: the answer comes while the body is still being sent; the
        # last chunk is never sent, so a server reading the whole body first would hang here.
        host, port = served.base_url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(b"POST /v1/route HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                         b"Content-Type: application/json\r\n\r\n")
            chunk = b"x" * 4096
            for _ in range(4):  # 16 KiB > 10 KiB
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            head = sock.recv(4096)
        assert head.startswith(b"HTTP/1.1 413"), head[:200]
        ok = httpx.post(served.base_url + "/v1/route", content=dumps(reference_task()))
        assert ok.status_code == 200


def test_timeout_504_names_the_job_and_concurrency_503(tmp_path):
    slow = ScriptedServer().start()
    slow.set_handler(lambda request: dataclasses.replace(auto_reply(request), delay_s=6.0))
    try:
        with serve(tmp_path, "--request-timeout", "4", "--concurrency", "1",
                   config=judge_config(slow.base_url)) as served:
            with httpx.Client(base_url=served.base_url, timeout=30) as client:
                import threading

                first: dict = {}
                t = threading.Thread(target=lambda: first.update(reply=client.post(
                    "/v1/evaluate", content=dumps(open_task(evaluator="llm_judge")))))
                t.start()
                deadline = time.monotonic() + 10
                while client.get("/v1/health").json()["requests_in_flight"] < 1 and time.monotonic() < deadline:
                    time.sleep(0.05)
                busy = client.get("/v1/version")
                assert busy.status_code == 503 and busy.headers["retry-after"] == "1"
                assert busy.json()["error"] == "busy"
                t.join()
                reply = first["reply"]
                assert reply.status_code == 504 and reply.json()["error"] == "timeout", reply.text
                job = _poll(client, f"/v1/jobs/{reply.json()['job_id']}", timeout_s=60)
                assert job["state"] == "done" and job["result"]["route"]["evaluator"] == "llm_judge"
    finally:
        slow.stop()


def test_a_public_bind_needs_a_token(tmp_path):
    import subprocess
    import sys

    env = {k: v for k, v in __import__("os").environ.items() if k != "ORACLE_SERVE_TOKEN"}
    out = subprocess.run([sys.executable, "-m", "oracle", "serve", "--host", "0.0.0.0", "--port", "0"],
                         capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert out.returncode == 2 and "--host 0.0.0.0" in out.stderr and "ORACLE_SERVE_TOKEN" in out.stderr
    short = subprocess.run([sys.executable, "-m", "oracle", "serve", "--host", "0.0.0.0", "--port", "0"],
                           capture_output=True, text=True, timeout=60, env={**env, "ORACLE_SERVE_TOKEN": "abc"},
                           cwd=tmp_path)
    assert short.returncode == 2 and "at least 16 characters" in short.stderr


def test_bearer_token_from_env_and_file(tmp_path):
    token = "s3cret-token-for-tests-0123456789"
    with serve(tmp_path, "--host", "0.0.0.0", env={"ORACLE_SERVE_TOKEN": token}) as served:
        url = served.base_url.replace("0.0.0.0", "127.0.0.1")
        assert httpx.get(url + "/v1/health").status_code == 200  # monitors need no token
        missing = httpx.get(url + "/v1/version")
        assert missing.status_code == 401 and missing.headers["www-authenticate"].startswith("Bearer")
        for wrong in ("Bearer " + token[:-1] + "x", "Bearer " + token + "x", "Basic " + token, token):
            assert httpx.get(url + "/v1/version", headers={"Authorization": wrong}).status_code == 401
        ok = httpx.get(url + "/v1/version", headers={"Authorization": f"Bearer {token}"})
        assert ok.status_code == 200
        # The token is checked before the body is read: a large unauthenticated body is never taken in.
        assert httpx.post(url + "/v1/route", content=b"x" * (20 * 1024 * 1024)).status_code == 401
    token_file = tmp_path / "token"
    token_file.write_text(token + "\n")
    with serve(tmp_path, "--token-file", str(token_file)) as served:
        assert httpx.get(served.base_url + "/v1/version").status_code == 401
        assert httpx.get(served.base_url + "/v1/version", headers={"Authorization": f"Bearer {token}"}
                         ).status_code == 200


def test_bad_server_options_exit_2(tmp_path):
    import subprocess
    import sys

    for args, needle in ((["--concurrency", "0"], "--concurrency"),
                         (["--token-file", str(tmp_path / "absent")], "--token-file")):
        out = subprocess.run([sys.executable, "-m", "oracle", "serve", "--port", "0", *args], capture_output=True,
                             text=True, timeout=60, cwd=tmp_path)
        assert out.returncode == 2 and needle in out.stderr, out.stderr


# -- the OpenAPI document ------------------------------------------------------------------------

def test_openapi_served_equals_the_committed_file(api):
    from oracle.serve.openapi_doc import COMMITTED

    served = api.get("/openapi.json").json()
    committed = json.loads(Path(COMMITTED).read_text(encoding="utf-8"))
    assert served == committed, ("oracle/serve/openapi.json is out of date: regenerate it with "
                                 "`oracle serve --openapi > oracle/serve/openapi.json` and review the diff")
    assert {"/v1/route", "/v1/evaluate", "/v1/jobs/{job_id}", "/v1/batches", "/v1/batches/{batch_id}",
            "/v1/batches/{batch_id}/results", "/v1/escalations", "/v1/escalations/{esc_id}",
            "/v1/escalations/{esc_id}/answer", "/v1/escalations/{esc_id}/resume", "/v1/health",
            "/v1/version"} <= set(served["paths"])


def test_openapi_printed_by_the_cli_is_the_committed_file(tmp_path):
    import subprocess
    import sys

    from oracle.serve.openapi_doc import COMMITTED

    out = subprocess.run([sys.executable, "-m", "oracle", "serve", "--openapi"], capture_output=True, text=True,
                         timeout=60, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout == Path(COMMITTED).read_text(encoding="utf-8")


def test_an_unreadable_answer_body_is_422_not_400(api):
    """Found by the schema fuzzer: a body that is not UTF-8 got FastAPI's undocumented 400."""
    reply = api.post("/v1/escalations/esc-00000000000/answer", content=b"\xc3\x28\x0b",
                     headers={"content-type": "application/json"})
    assert reply.status_code == 422 and reply.json()["field"] == "(body)"
