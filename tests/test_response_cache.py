"""The response cache is right for repeats: salted keys, whole replies on a hit, shared files, and
comparisons that rerun from it for free.

Everything goes over real HTTP to the scripted OpenAI-compatible / System One server
(tests/plugins/scripted_server.py), and requests are counted where they arrive: at the server.
The ``oracle compare`` runs are real CLI subprocesses (one is killed with SIGKILL mid-run).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from itertools import count
from pathlib import Path

import pytest

from oracle.comparison._arms import ArmRunner, reorder
from oracle.comparison._labels import parse_lines
from oracle.comparison.api import compare
from oracle.config.model import OracleConfig
from oracle.errors import ConfigError
from oracle.providers import ChatMessage, ChatRequest, make_async_chat_client, make_chat_client
from oracle.providers._cache import CACHE_FILE, ResponseCache, cache_key
from oracle.providers.pool import ProviderPool
from oracle.results.ledger import CallLedger
from tests.plugins.oracle_logs import captured_logs
from tests.plugins.scripted_server import RecordedRequest, Reply, ScriptedServer, chat_reply

ROOT = Path(__file__).resolve().parent.parent
TIMING_KEYS = {"latency_ms", "call_latency_ms", "timings"}
PRICES = {"scripted-model": {"input_per_mtok": 1.0, "output_per_mtok": 2.0},
          "scripted-decider": {"input_per_mtok": 3.0, "output_per_mtok": 3.0}}
RIGHT = "ANSWER-RIGHT"


def without_timings(value):
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def request(text: str = "judge this", **fields) -> ChatRequest:
    return ChatRequest(messages=[ChatMessage(role="user", content=text)], **fields)


def entries(path: Path) -> int:
    cache = ResponseCache(path)
    try:
        return len(cache)
    finally:
        cache.close()


# ---------------------------------------------------------------- the key


PINNED = "662f4fa4b20a08a98a3e5fbbd1bad749cd3a3f9d93e266170e80a31280a94ffd"
"""The key main's cache_key (before salts) gave for the request below."""


def test_an_unsalted_key_is_the_key_caches_were_written_under():
    """No salt, an empty one, or one holding only defaults (repeat 0, no seed): today's key, so
    caches written before salts existed stay valid. The literal is sha256 over the canonical
    {"endpoint_kind", "url", "body"} object, the format main wrote before this change."""
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": 0.7}
    old = cache_key("openai_chat", "http://127.0.0.1:1/v1/chat/completions", body)
    assert old == PINNED
    for salt in (None, {}, {"repeat": 0}, {"repeat": 0, "run_repeat": 0, "seed": 0}, {"seed": None}):
        assert cache_key("openai_chat", "http://127.0.0.1:1/v1/chat/completions", body, salt) == PINNED
    salted = {cache_key("openai_chat", "http://127.0.0.1:1/v1/chat/completions", body, s)
              for s in ({"repeat": 1}, {"repeat": 2}, {"run_repeat": 1}, {"seed": 7}, {"repeat": 1, "seed": 7})}
    assert len(salted) == 5 and PINNED not in salted


def test_the_salt_is_never_sent(scripted_server, tmp_path):
    settings = scripted_server.provider_settings(cache_path=str(tmp_path / CACHE_FILE))
    with make_chat_client(settings) as client:
        client.complete(request(cache_salt={"repeat": 3, "seed": 11}))
        client.complete(request())
    first, plain = (r.json for r in scripted_server.requests)
    assert first == plain and "cache_salt" not in json.dumps(first) and "repeat" not in json.dumps(first)


# ---------------------------------------------------------------- repeats and hits


def sampling_server(server: ScriptedServer) -> None:
    """Every request gets another answer (a sampling model at temperature > 0) and reports usage."""
    n = count(1)

    def handle(req: RecordedRequest) -> Reply:
        i = next(n)
        lp = [(f"s{i}", -0.1 * i, {f"s{i}": -0.1 * i, "other": -2.0})] if (req.json or {}).get("logprobs") else None
        return chat_reply(f"sample {i}", prompt_tokens=100 + i, completion_tokens=10 + i, logprobs=lp,
                          request_id=f"req-{i}")

    server.set_handler(handle)


async def test_k_salted_repeats_are_k_entries_and_a_rerun_returns_each_whole(scripted_server, tmp_path):
    sampling_server(scripted_server)
    path = tmp_path / "cache" / CACHE_FILE
    settings = scripted_server.provider_settings(cache_path=str(path))
    prices = {k: v for k, v in OracleConfig.model_validate({"providers": {"prices": PRICES}}).providers.prices.items()}
    reqs = [request(temperature=0.7, logprobs=True, top_logprobs=2, cache_salt={"repeat": i}) for i in range(3)]
    async with make_async_chat_client(settings, prices=prices) as client:
        first = [await client.complete(r) for r in reqs]
    assert len(scripted_server.requests) == 3 and entries(path) == 3
    print(f"MEASURED k=3 salted repeats at temperature 0.7: {entries(path)} cache entries")
    assert len({r.text for r in first}) == 3 and not any(r.provenance.cached for r in first)
    assert all(r.cost_usd and r.cost_usd > 0 for r in first)

    async with make_async_chat_client(settings, prices=prices) as rerun:  # a new process would do the same
        again = [await rerun.complete(r) for r in reqs]
    assert len(scripted_server.requests) == 3  # nothing sent
    for old, new in zip(first, again):
        assert new.provenance.cached and new.text == old.text and new.logprobs == old.logprobs
        assert new.usage == old.usage and new.cost_usd == old.cost_usd and new.finish_reason == old.finish_reason
        assert new.provenance.request_id == old.provenance.request_id
    ledger = CallLedger()
    for reply in again:
        ledger.add(reply, source="verbalized")
    assert ledger.cost_usd() == 0.0 and ledger.cached_calls == 3 and ledger.requests == 0
    assert ledger.cached_cost_usd() == pytest.approx(sum(r.cost_usd for r in first))
    assert ledger.tokens().input == sum(r.usage.input_tokens for r in first)


async def test_identical_requests_in_flight_share_one_call_only_with_a_cache(tmp_path):
    """Two identical requests at once: with a cache one is sent and both get its answer (so a
    rerun from the cache returns what the first run saw); without a cache both are sent."""
    with ScriptedServer(latency_s=0.2) as server:
        sampling_server(server)
        cached = server.provider_settings(cache_path=str(tmp_path / CACHE_FILE))
        async with make_async_chat_client(cached) as client:
            replies = await asyncio.gather(*(client.complete(request(temperature=0.7)) for _ in range(3)))
        assert len(server.requests) == 1 and len({r.text for r in replies}) == 1
        assert sorted(r.provenance.cached for r in replies) == [False, True, True]
        async with make_async_chat_client(server.provider_settings()) as plain:
            replies = await asyncio.gather(*(plain.complete(request(temperature=0.7)) for _ in range(3)))
        assert len(server.requests) == 4 and len({r.text for r in replies}) == 3


def test_only_parsed_replies_are_stored_and_an_unreadable_entry_is_a_miss(scripted_server, tmp_path):
    path = tmp_path / CACHE_FILE
    settings = scripted_server.provider_settings(cache_path=str(path), max_retries=0)
    scripted_server.push(Reply(body=b"<html>not json</html>"))
    with make_chat_client(settings) as client:
        with pytest.raises(Exception):
            client.complete(request())
    assert entries(path) == 0
    with make_chat_client(settings) as client:
        assert client.complete(request()).text == "ok"
    db = sqlite3.connect(path)
    db.execute("UPDATE responses SET reply_json = '{\"text\": 1}'")  # as another version might have left it
    db.commit()
    db.close()
    with captured_logs() as logs, make_chat_client(settings) as client:
        reply = client.complete(request())
    assert not reply.provenance.cached and len(scripted_server.requests) == 3
    assert [e["event"] for e in logs] == ["cache_entry_unreadable"] and str(path) in repr(logs[0])
    with make_chat_client(settings) as client:
        assert client.complete(request()).provenance.cached  # the fresh reply replaced the entry


# ---------------------------------------------------------------- the file


def test_a_file_that_is_no_cache_is_refused_naming_its_path(scripted_server, tmp_path):
    bad = tmp_path / "junk" / CACHE_FILE
    bad.parent.mkdir()
    bad.write_bytes(b"this is not a SQLite database, just text someone left here\n" * 20)
    with pytest.raises(ConfigError) as info:
        make_chat_client(scripted_server.provider_settings(cache_path=str(bad)))
    assert str(bad) in str(info.value) and "--no-cache" in str(info.value)
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x")
    with pytest.raises(ConfigError) as info:
        ResponseCache(blocked / CACHE_FILE)
    assert str(blocked / CACHE_FILE) in str(info.value)
    assert scripted_server.requests == []


WRITER = """
import sys
from oracle.config.model import ProviderSettings
from oracle.providers import ChatMessage, ChatRequest, make_chat_client
url, path, start = sys.argv[1], sys.argv[2], int(sys.argv[3])
settings = ProviderSettings(base_url=url, model="scripted-model", cache_path=path, max_retries=0)
with make_chat_client(settings) as client:
    for i in range(start, start + 60):
        client.complete(ChatRequest(messages=[ChatMessage(role="user", content=f"q{i}")], cache_salt={"repeat": i % 3}))
print("done")
"""


def test_two_processes_share_one_cache_file(scripted_server, tmp_path):
    path = tmp_path / "shared" / CACHE_FILE
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, scripted_server.base_url, str(path), str(start)],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for start in (0, 30)]  # 30 requests in common, written by both at about the same time
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1][-800:] for o in outs]
    assert entries(path) == 90
    assert 90 <= len(scripted_server.requests) <= 120


# ---------------------------------------------------------------- config_hash


def test_turning_the_cache_on_or_off_never_changes_config_hash(scripted_server, tmp_path):
    from oracle.providers._cache import config_with_cache

    base = {"judge": scripted_server.provider_settings().model_dump(mode="json"),
            "decision": scripted_server.provider_settings(kind="systemone").model_dump(mode="json"),
            "endpoints": {"second": scripted_server.provider_settings(model="other").model_dump(mode="json")}}
    plain = OracleConfig.model_validate({"providers": base})
    hashes = {plain.hash()}
    for section in ("judge", "decision"):
        data = json.loads(json.dumps(base))
        data[section]["cache_path"] = str(tmp_path / section / CACHE_FILE)
        hashes.add(OracleConfig.model_validate({"providers": data}).hash())
    data = json.loads(json.dumps(base))
    data["endpoints"]["second"]["cache_path"] = str(tmp_path / "e" / CACHE_FILE)
    hashes.add(OracleConfig.model_validate({"providers": data}).hash())
    everywhere = config_with_cache(plain, tmp_path / CACHE_FILE, override=True)
    assert {everywhere.providers.judge.cache_path, everywhere.providers.decision.cache_path,
            everywhere.providers.endpoints["second"].cache_path} == {str(tmp_path / CACHE_FILE)}
    hashes.add(everywhere.hash())
    hashes.add(config_with_cache(everywhere, None, override=True).hash())
    assert len(hashes) == 1
    changed = OracleConfig.model_validate({"providers": {**base, "judge": {**base["judge"], "model": "x"}}})
    assert changed.hash() not in hashes  # the hash still sees what matters


def test_a_default_cache_fills_in_only_where_the_config_sets_none(tmp_path):
    from oracle.providers._cache import config_with_cache

    own = str(tmp_path / "mine.sqlite")
    config = OracleConfig.model_validate({"providers": {"judge": {"cache_path": own},
                                                        "decision": {"kind": "systemone"}}})
    filled = config_with_cache(config, tmp_path / "run" / CACHE_FILE, override=False)
    assert filled.providers.judge.cache_path == own
    assert filled.providers.decision.cache_path == str(tmp_path / "run" / CACHE_FILE)
    assert config_with_cache(config, None, override=True).providers.judge.cache_path is None


# ---------------------------------------------------------------- comparisons


def judge_server(server: ScriptedServer) -> None:
    """A deterministic judge: the LLM judge scores an answer containing RIGHT 9/10, else 2/10; the
    System One decider says P(yes) 0.9 for such a candidate, else 0.2."""

    def handle(req: RecordedRequest) -> Reply:
        body = req.json or {}
        if req.path.endswith("/chat/completions"):
            text = " ".join(m["content"] for m in body["messages"])
            score = 9 if RIGHT in text else 2
            return chat_reply(json.dumps({"criteria": {"c1": {"rationale": "checked", "score": score}}}),
                              prompt_tokens=120, completion_tokens=12)
        if req.path.endswith("/systemone"):
            p = 0.9 if RIGHT in json.dumps(body.get("state")) else 0.2
            return Reply(json={"id": "dec", "model": "scripted-decider",
                               "usage": {"input_tokens": 40, "output_tokens": 1},
                               "answers": {q: {"type": "noul", "noul": p} for q in body["questions"]}})
        return Reply(status=404, json={"error": "no route"})

    server.set_handler(handle)


def labelled_lines(n: int = 5) -> list[str]:
    lines = []
    for i in range(n):
        ok = i % 2 == 0
        lines.append(json.dumps({"task": {"id": f"item-{i}", "prompt": f"What is {i} + {i}?", "criteria": ["Correct"]},
                                 "trajectories": [{"id": "a", "answer": f"{RIGHT if ok else 'wrong'}: {2 * i}"}],
                                 "label": {"passed": {"a": ok}}}))
    lines.append(json.dumps({"task": {"id": "pair", "prompt": "Name a prime.", "criteria": ["Correct"]},
                             "trajectories": [{"id": "x", "answer": f"{RIGHT}: 7"}, {"id": "y", "answer": "wrong: 8"}],
                             "label": {"best": ["x"], "passed": {"x": True, "y": False}}}))
    return lines


def config_data(server: ScriptedServer) -> dict:
    return {"providers": {"judge": server.provider_settings(timeout_s=10).model_dump(mode="json"),
                          "decision": server.provider_settings(kind="systemone", model="jev-latest",
                                                               timeout_s=10).model_dump(mode="json"),
                          "prices": {**PRICES, "jev-latest": PRICES["scripted-decider"]}},
            "llm_judge": {"logprobs": False, "temperature": 0.7}}


def compare_files(server: ScriptedServer, tmp_path: Path) -> tuple[Path, Path]:
    labelled = tmp_path / "labelled.jsonl"
    labelled.write_text("\n".join(labelled_lines()) + "\n")
    config = tmp_path / "oracle.yaml"
    config.write_text(json.dumps(config_data(server)))  # JSON is YAML
    return labelled, config


def compare_cli(labelled: Path, config: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "oracle", "--config", str(config), "compare", str(labelled), "-o", str(out),
            "--arms", "llm_judge,decision_judge", "--both-orders", "--no-report", *extra]


def run(cmd: list[str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.slow
def test_a_fresh_compare_given_the_same_cache_sends_nothing_and_summarizes_the_same(scripted_server, tmp_path):
    judge_server(scripted_server)
    labelled, config = compare_files(scripted_server, tmp_path)
    first = run(compare_cli(labelled, config, tmp_path / "one"))
    assert first.returncode == 0, first.stderr
    sent = len(scripted_server.requests)
    assert sent > 0 and (tmp_path / "one" / "cache" / CACHE_FILE).is_file()
    assert f"cache: {tmp_path / 'one' / 'cache' / CACHE_FILE}" in first.stdout
    print(f"MEASURED first compare run: {sent} requests, {entries(tmp_path / 'one' / 'cache' / CACHE_FILE)} entries")

    fresh = run(compare_cli(labelled, config, tmp_path / "two", "--cache", str(tmp_path / "one" / "cache")))
    assert fresh.returncode == 0, fresh.stderr
    assert len(scripted_server.requests) == sent, "a run from the shared cache sent requests"
    print("MEASURED fresh folder, same cache: 0 requests")
    one, two = (json.loads((tmp_path / d / "summary.json").read_text()) for d in ("one", "two"))
    assert without_timings(one) == without_timings(two)
    arms = {a["arm"]: a for a in two["results"]}
    assert arms["llm_judge"]["agreement"] == 1.0 and arms["decision_judge"]["agreement"] == 1.0
    assert arms["llm_judge"]["cost_usd"] > 0 and arms["decision_judge"]["calls"] > 0
    records = [json.loads(line) for line in (tmp_path / "two" / "runs.jsonl").read_text().splitlines()]
    assert all(r["cached_calls"] >= 1 and r["spent_usd"] == 0.0 for r in records)
    assert f"{sum(r['cached_calls'] for r in records)} model calls from the cache" in fresh.stdout
    assert not (tmp_path / "two" / "cache").exists()

    # the manifest accepts a rerun into the same folder with no cache, or another one
    for flags in (["--no-cache"], ["--cache", str(tmp_path / "elsewhere")]):
        again = run(compare_cli(labelled, config, tmp_path / "two", *flags))
        assert again.returncode == 0, again.stderr
        assert f"0 run now, {len(records)} resumed" in again.stdout
    assert len(scripted_server.requests) == sent

    uncached = run(compare_cli(labelled, config, tmp_path / "three", "--no-cache"))
    assert uncached.returncode == 0, uncached.stderr
    assert len(scripted_server.requests) - sent >= sent  # every call made again (no sharing either)
    print(f"MEASURED --no-cache into a new folder: {len(scripted_server.requests) - sent} requests")
    assert not (tmp_path / "three" / "cache").exists() and "cache: off" in uncached.stdout
    three = json.loads((tmp_path / "three" / "summary.json").read_text())
    assert without_timings(three) == without_timings(one)


@pytest.mark.slow
def test_a_compare_killed_mid_run_reruns_without_asking_again(tmp_path):
    with ScriptedServer(latency_s=0.15) as server:
        judge_server(server)
        labelled, config = compare_files(server, tmp_path)
        reference = run(compare_cli(labelled, config, tmp_path / "clean", "--concurrency", "1"))
        assert reference.returncode == 0, reference.stderr
        total = len(server.requests)
        server.clear()
        out = tmp_path / "killed"
        proc = subprocess.Popen(compare_cli(labelled, config, out, "--concurrency", "1"), cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        runs = out / "runs.jsonl"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if runs.exists() and runs.read_bytes().count(b"\n") >= 4:
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the run finished before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        before = len(server.requests)
        answered = entries(out / "cache" / CACHE_FILE)
        written = runs.read_bytes().count(b"\n")
        assert 0 < answered <= before < total and written >= 4
        server.clear()
        again = run(compare_cli(labelled, config, out, "--concurrency", "1"))
        assert again.returncode == 0, again.stderr
        rerun = len(server.requests)
        print(f"MEASURED crash+rerun: {before} requests before the kill ({answered} answered and cached), "
              f"{rerun} on the rerun, {total} for a clean run")
        assert rerun == total - answered  # no call already answered is asked again
        assert without_timings(json.loads((out / "summary.json").read_text())) == \
            without_timings(json.loads((tmp_path / "clean" / "summary.json").read_text()))


def test_library_compare_takes_a_cache_argument_and_the_seed_reaches_the_llm_judge(scripted_server, tmp_path):
    judge_server(scripted_server)
    items = parse_lines(labelled_lines(2))
    config = OracleConfig.model_validate(config_data(scripted_server))
    shared = tmp_path / "shared-cache"
    first = compare(items, tmp_path / "a", arms=["llm_judge"], config=config, report=False, cache=shared, seed=5)
    sent = len(scripted_server.requests)
    assert sent > 0 and first.cache_path == shared / CACHE_FILE and first.cached_calls == 0
    second = compare(items, tmp_path / "b", arms=["llm_judge"], config=config, report=False, cache=shared, seed=5)
    assert len(scripted_server.requests) == sent and second.cached_calls == sent
    seeded = config.model_copy(update={"llm_judge": config.llm_judge.model_copy(update={"seed": 5})})
    for result in (first, second):
        assert result.summary.seed == 5 and result.summary.config_hash == seeded.hash() != config.hash()
        assert json.loads((result.out_dir / "manifest.json").read_text())["config_hash"] == seeded.hash()
    off = compare(items, tmp_path / "c", arms=["llm_judge"], config=config, report=False, cache=False)
    assert off.cache_path is None and len(scripted_server.requests) == 2 * sent
    assert off.summary.seed == 0 and off.summary.config_hash == config.hash()


@pytest.mark.slow
def test_a_corrupt_cache_stops_a_compare_before_any_call(scripted_server, tmp_path):
    judge_server(scripted_server)
    labelled, config = compare_files(scripted_server, tmp_path)
    bad = tmp_path / "bad-cache"
    bad.mkdir()
    (bad / CACHE_FILE).write_bytes(b"\x00garbage" * 100)
    done = run(compare_cli(labelled, config, tmp_path / "out", "--cache", str(bad)))
    assert done.returncode == 2 and str(bad / CACHE_FILE) in done.stderr
    assert scripted_server.requests == [] and not (tmp_path / "out" / "runs.jsonl").exists()


class RecordsExtra:
    """An evaluator written against the public API that keeps the context's ``extra``."""

    name = "records_extra"
    version = "1"
    seen: list[dict] = []

    def spec(self, config):
        return {"name": self.name, "version": self.version}

    async def evaluate(self, ctx):
        from oracle import EvaluationResult, Status

        RecordsExtra.seen.append(dict(ctx.extra))
        return EvaluationResult(evaluator=self.name, status=Status.ok, ranking=[ctx.trajectories[0].id])


async def test_the_run_repeat_reaches_the_evaluator_context(monkeypatch):
    import oracle._evaluators as evaluators_module
    from oracle._evaluators import register_evaluator

    monkeypatch.setattr(evaluators_module, "_REGISTERED", {})
    register_evaluator("records_extra")(RecordsExtra)
    RecordsExtra.seen = []
    item = parse_lines(labelled_lines(1))[0]
    runner = ArmRunner(OracleConfig(), ProviderPool())
    for repeat in (0, 2):
        base = {"key": f"k{repeat}", "run_id": "r", "arm": "records_extra", "item_id": item.id, "repeat": repeat,
                "order": "given"}
        record = await runner.run(base, "records_extra", item, reorder(item, "given"), ["passed"])
        assert record.status == "ok"
    assert RecordsExtra.seen == [{"repeat": 0}, {"repeat": 2}]


# ---------------------------------------------------------------- calibrate and batch


@pytest.mark.slow
def test_calibrate_caches_beside_its_file_and_shares_a_cache(scripted_server, tmp_path):
    judge_server(scripted_server)
    labelled = tmp_path / "labelled.jsonl"
    labelled.write_text("\n".join(labelled_lines(12)) + "\n")
    config = tmp_path / "oracle.yaml"
    config.write_text(json.dumps(config_data(scripted_server)))

    def calibrate(out: Path, *flags: str) -> subprocess.CompletedProcess:
        return run([sys.executable, "-m", "oracle", "--config", str(config), "calibrate", str(labelled),
                    "-o", str(out), "--folds", "2", *flags])

    first = calibrate(tmp_path / "one" / "cal.json")
    assert first.returncode == 0, first.stderr
    sent = len(scripted_server.requests)
    cache = tmp_path / "one" / "cache" / CACHE_FILE
    assert sent > 0 and entries(cache) == sent
    again = calibrate(tmp_path / "two" / "cal.json", "--cache", str(cache.parent))
    assert again.returncode == 0, again.stderr
    assert len(scripted_server.requests) == sent and not (tmp_path / "two" / "cache").exists()
    one, two = (json.loads((tmp_path / d / "cal.json").read_text()) for d in ("one", "two"))
    one["evidence"].pop("date"), two["evidence"].pop("date")
    assert one == two
    off = calibrate(tmp_path / "three" / "cal.json", "--no-cache")
    assert off.returncode == 0, off.stderr
    assert len(scripted_server.requests) == 2 * sent and not (tmp_path / "three" / "cache").exists()


@pytest.mark.slow
def test_batch_resumes_under_another_cache_or_none(scripted_server, tmp_path):
    judge_server(scripted_server)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"task": {"id": f"j{i}", "prompt": f"Explain {i}.", "criteria": ["Correct"],
                                                  "evaluator": "llm_judge"},
                                         "trajectories": [{"id": "a", "answer": f"{RIGHT} {i}"}]}) + "\n"
                             for i in range(3)))
    out = tmp_path / "rows.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(ORACLE_BASE_URL=scripted_server.base_url, ORACLE_MODEL="scripted-model",
               ORACLE_LLM_JUDGE__LOGPROBS="false")

    def batch(**extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "oracle", "batch", str(tasks), "-o", str(out), "--no-store"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300, env={**env, **extra})

    first = batch(ORACLE_PROVIDERS__JUDGE__CACHE_PATH=str(tmp_path / "c1" / CACHE_FILE))
    assert first.returncode == 0, first.stderr
    assert len(scripted_server.requests) == 3 and entries(tmp_path / "c1" / CACHE_FILE) == 3
    lines = out.read_text().splitlines()
    assert len(lines) == 3 and {json.loads(line)["status"] for line in lines} == {"ok"}
    out.write_text("\n".join(lines[:2]) + "\n")  # the last row lost, as a crash could leave it
    for extra in ({}, {"ORACLE_PROVIDERS__JUDGE__CACHE_PATH": str(tmp_path / "c2" / CACHE_FILE)}):
        again = batch(**extra)
        assert again.returncode == 0, again.stderr
    assert len(out.read_text().splitlines()) == 3
    assert len(scripted_server.requests) == 4  # only the lost row was computed, once; nothing refused


def _open_and_write(path: str, results) -> None:
    import os

    from oracle.providers._cache import ResponseCache

    try:
        cache = ResponseCache(path)
        cache.put(f"k{os.getpid()}", "openai_chat", "{}")
        cache.close()
        results.put("ok")
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        results.put(repr(exc))


@pytest.mark.slow
def test_processes_opening_a_new_cache_file_at_once_all_get_it(tmp_path):
    """Six processes open the same new file together, ten times over: the switch to WAL and the
    first schema write must never answer "database is locked" to one of them."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    failures = []
    for trial in range(10):
        path = str(tmp_path / f"t{trial}" / "responses.sqlite")
        results = ctx.Queue()
        procs = [ctx.Process(target=_open_and_write, args=(path, results)) for _ in range(6)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(timeout=60)
        got = [results.get(timeout=10) for _ in procs]
        failures += [g for g in got if g != "ok"]
        from oracle.providers._cache import ResponseCache
        assert len(ResponseCache(path)) == 6 or failures
    assert failures == []
