"""Issue 31, budgets: ``max_calls`` / ``max_cost_usd`` are held before every request, retries included.

Everything runs against the real scripted OpenAI-compatible server (tests/plugins/scripted_server.py)
and counts requests where they arrive: at the server. Real CLI subprocesses for the command lines,
the real ``oracle serve`` app over HTTP for the service.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from oracle import Budget, Oracle, OracleConfig, Status
from oracle.errors import ConfigError
from oracle.providers.budget import check_prices, estimate_tokens
from tests.plugins.scripted_server import Reply, RecordedRequest, chat_reply, status_reply

PRICE = {"input_per_mtok": 1000.0, "output_per_mtok": 2000.0}
"""USD per million tokens: a request of ~100 input tokens and 512 output costs ~1.1 USD estimated."""


def judged(request: RecordedRequest) -> Reply:
    """A valid pointwise verdict, 50 input and 20 output tokens (the cost the budget charges)."""
    return chat_reply(json.dumps({"criteria": {"overall": {"rationale": "fine", "score": 7}}}),
                      prompt_tokens=50, completion_tokens=20)


def judge_line(task_id: str, *, candidates: int = 1) -> dict:
    return {"task": {"id": task_id, "prompt": f"Explain {task_id} briefly.", "evaluator": "llm_judge"},
            "trajectories": [{"id": f"c{n}", "answer": f"Answer {n} about {task_id}."} for n in range(candidates)]}


def config_for(server, *, prices: bool = True, cache_path: str | None = None, **judge: object) -> OracleConfig:
    settings = server.provider_settings(**({"cache_path": cache_path} if cache_path else {}), **judge)
    data = {"providers": {"judge": settings.model_dump(mode="json"),
                          "prices": {"scripted-model": PRICE} if prices else {}},
            "escalation": {"enabled": False}}
    return OracleConfig.model_validate(data)


def chat_requests(server) -> int:
    return sum(1 for r in server.requests if r.path.endswith("/chat/completions"))


# ------------------------------------------------------------------------------------------ library

def test_a_budget_of_n_calls_counts_every_retry_and_stops_before_the_next_request(scripted_server):
    scripted_server.push(status_reply(500), status_reply(500))
    scripted_server.set_handler(judged)
    config = config_for(scripted_server, max_retries=4)
    budget = Budget(max_calls=2)
    res = Oracle(config).evaluate(judge_line("t1"), budget=budget)
    assert chat_requests(scripted_server) == 2            # two 500s sent; the third attempt was not
    assert res.status == Status.skipped and res.result.reason == "budget"
    assert res.result.error.type == "BudgetExhausted" and "max_calls=2" in res.result.error.message
    assert res.result.calls == 2                          # the refused call's attempts are kept
    assert res.result.best == [] and all(c.score is None for c in res.result.candidates)
    assert budget.calls == 2 and budget.refused == 1 and budget.spent_usd == 0.0  # error replies cost 0


def test_enough_calls_for_the_retries_gives_the_verdict(scripted_server):
    scripted_server.push(status_reply(500))
    scripted_server.set_handler(judged)
    budget = Budget(max_calls=2)
    res = Oracle(config_for(scripted_server)).evaluate(judge_line("t1"), budget=budget)
    assert res.status == Status.ok, res.result.error
    assert chat_requests(scripted_server) == 2 and budget.calls == 2
    assert budget.spent_usd == pytest.approx((50 * 1000 + 20 * 2000) / 1e6)  # the actual cost, not the estimate


def test_a_cost_budget_stops_before_the_call_that_would_cross_it(scripted_server):
    scripted_server.set_handler(judged)
    config = config_for(scripted_server)
    actual = (50 * 1000 + 20 * 2000) / 1e6                       # 0.09 USD per reply
    Oracle(config).evaluate(judge_line("t0"), budget=Budget(max_cost_usd=100))
    body = scripted_server.requests[0]
    # one request's estimate (an upper bound): body bytes in, max_tokens out, at PRICE
    estimate = (len(body.body) * 1000 + body.json["max_tokens"] * 2000) / 1e6
    scripted_server.clear()
    budget = Budget(max_cost_usd=estimate + 0.15)
    first = Oracle(config).evaluate(judge_line("t1"), budget=budget)
    assert first.status == Status.ok and budget.spent_usd == pytest.approx(actual)
    second = Oracle(config).evaluate(judge_line("t2"), budget=budget)   # 0.09 + estimate fits
    assert second.status == Status.ok
    third = Oracle(config).evaluate(judge_line("t3"), budget=budget)    # 0.18 + estimate would not
    assert third.status == Status.skipped and third.result.reason == "budget"
    assert f"max_cost_usd={estimate + 0.15:g} would be exceeded" in third.result.error.message
    assert chat_requests(scripted_server) == 2 and budget.spent_usd == pytest.approx(2 * actual)
    assert third.result.calls == 0


def test_the_estimate_is_an_upper_bound_body_bytes_plus_max_tokens():
    from oracle.providers.types import ChatMessage, ChatRequest

    req = ChatRequest(messages=[ChatMessage(role="user", content="x" * 400)], max_tokens=300)
    assert estimate_tokens(b"y" * 401, req) == (401, 300)
    # dense text (CJK: 3 bytes a character, often one token each) is still over-estimated, never under
    dense = "\u6f22\u5b57" * 100
    assert estimate_tokens(dense.encode(), req)[0] >= len(dense)


def test_an_unknown_price_is_refused_up_front_naming_the_model(scripted_server):
    config = config_for(scripted_server, prices=False)
    with pytest.raises(ConfigError) as refused:
        Oracle(config).evaluate(judge_line("t1"), budget=Budget(max_cost_usd=1.0))
    assert "providers.judge.model" in str(refused.value) and "'scripted-model'" in str(refused.value)
    assert scripted_server.requests == []
    check_prices(config, Budget(max_calls=3))                   # a calls budget needs no price


def test_a_panel_member_without_a_price_is_refused_naming_it(scripted_server):
    data = config_for(scripted_server).model_dump(mode="json")
    data["providers"]["endpoints"] = {"other": scripted_server.provider_settings(model="other-model")
                                      .model_dump(mode="json")}
    data["llm_judge"]["panel"] = [{"provider": "judge"}, {"provider": "other"}]
    config = OracleConfig.model_validate(data)
    with pytest.raises(ConfigError) as refused:
        check_prices(config, Budget(max_cost_usd=5))
    assert "llm_judge.panel.1 (providers.other).model" in str(refused.value) and "'other-model'" in str(refused.value)


def test_bad_limits_name_the_field():
    with pytest.raises(ConfigError, match="max_calls"):
        Budget(max_calls=-1)
    with pytest.raises(ConfigError, match="max_cost_usd"):
        Budget(max_cost_usd=float("nan"))


def test_cache_hits_cost_nothing_against_the_budget(scripted_server, tmp_path):
    scripted_server.set_handler(judged)
    config = config_for(scripted_server, cache_path=str(tmp_path / "cache.sqlite"))
    first = Oracle(config).evaluate(judge_line("t1"), budget=Budget(max_calls=1))
    assert first.status == Status.ok and chat_requests(scripted_server) == 1
    zero = Budget(max_calls=0, max_cost_usd=0.0)
    again = Oracle(config).evaluate(judge_line("t1"), budget=zero)  # the same request: a cache hit
    assert again.status == Status.ok and chat_requests(scripted_server) == 1
    assert zero.calls == 0 and zero.refused == 0
    prov = again.result.provenance
    assert prov.cached_calls == 1 and again.result.cost_usd == 0.0
    assert prov.cached_cost_usd == pytest.approx((50 * 1000 + 20 * 2000) / 1e6)  # its original cost, apart


def test_concurrent_evaluations_never_exceed_the_calls_budget(scripted_server):
    scripted_server.latency_s = 0.05
    scripted_server.set_handler(judged)
    config = config_for(scripted_server, concurrency=16)
    budget = Budget(max_calls=5)

    async def run() -> list:
        async with Oracle(config, budget=budget) as oracle:
            return await asyncio.gather(*(oracle.aevaluate(judge_line(f"t{n}", candidates=2)) for n in range(12)))

    results = asyncio.run(run())
    # admitted: 5; a call admitted and then cancelled (its sibling was refused) may never reach the
    # server, so the server sees at most 5
    assert budget.calls == 5 and chat_requests(scripted_server) <= 5
    statuses = [r.status for r in results]
    assert Status.skipped in statuses and all(s in (Status.ok, Status.skipped) for s in statuses)
    # a row is ok only with both its calls; a skipped one keeps what it spent (0 or 1 call)
    assert sum(r.result.calls for r in results) == 5
    assert sum(r.status == Status.ok for r in results) <= 2



def test_requests_in_flight_hold_their_estimate_so_parallel_calls_cannot_overshoot_together(scripted_server):
    scripted_server.set_handler(judged)
    config = config_for(scripted_server, concurrency=16)
    Oracle(config).evaluate(judge_line("t0"), budget=Budget(max_cost_usd=100))
    sent = scripted_server.requests[0]
    estimate = (len(sent.body) * 1000 + sent.json["max_tokens"] * 2000) / 1e6
    scripted_server.clear()
    scripted_server.latency_s = 0.3            # every reply comes after all ten have asked
    budget = Budget(max_cost_usd=2.5 * estimate)

    async def run() -> list:
        async with Oracle(config, budget=budget) as oracle:
            return await asyncio.gather(*(oracle.aevaluate(judge_line(f"t{n}")) for n in range(10)))

    results = asyncio.run(run())
    # two estimates fit, a third would not: without the reservation all ten would have gone out
    assert chat_requests(scripted_server) == 2 == sum(r.status == Status.ok for r in results)
    assert budget.spent_usd == pytest.approx(2 * (50 * 1000 + 20 * 2000) / 1e6)
    assert budget.spent_usd <= budget.max_cost_usd and budget.refused == 8


# ---------------------------------------------------------------------------------------- the CLI

def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    return subprocess.run([sys.executable, "-m", "oracle", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300)


def config_file(tmp_path: Path, server, *, prices: bool = True, **judge: object) -> Path:
    path = tmp_path / "oracle.yaml"
    settings = server.provider_settings(**judge).model_dump(mode="json", exclude_defaults=True)
    path.write_text(json.dumps({"providers": {"judge": settings,
                                              "prices": {"scripted-model": PRICE} if prices else {}},
                                "escalation": {"enabled": False}}))
    return path


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def first_attempt_fails():
    """Each distinct prompt gets a 500 the first time, a verdict after: every call needs a retry. (Keyed
    by the messages: a client that learned the server gives no logprobs stops asking for them.)"""
    seen: set[str] = set()
    lock = threading.Lock()

    def handle(request: RecordedRequest) -> Reply:
        body = json.dumps(request.json["messages"], sort_keys=True)
        with lock:
            fresh = body not in seen
            seen.add(body)
        return status_reply(500) if fresh else judged(request)
    return handle


@pytest.mark.slow
def test_a_concurrent_batch_with_retries_never_sends_more_than_n_and_a_resume_runs_exactly_the_skipped(
        scripted_server, tmp_path):
    scripted_server.latency_s = 0.02
    scripted_server.set_handler(first_attempt_fails())
    cfg = config_file(tmp_path, scripted_server, concurrency=3, max_retries=3)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(judge_line(f"t{n}")) + "\n" for n in range(10)))
    out = tmp_path / "rows.jsonl"
    first = cli("--config", str(cfg), "batch", str(tasks), "-o", str(out), "--no-store", "--concurrency", "3",
                "--max-calls", "7", "--summary-json", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert chat_requests(scripted_server) == 7              # never more than N, at the server
    got = {r["task_id"]: r for r in rows(out)}
    assert len(got) == 10                                   # every input line has its row
    ok = {t for t, r in got.items() if r["status"] == "ok"}
    skipped = {t for t, r in got.items() if r["status"] == "skipped"}
    assert ok | skipped == set(got) and 1 <= len(ok) <= 3   # each ok row took its 500 and its retry
    assert all(got[t]["reason"] == "budget" for t in skipped)
    assert sum(r["calls"] for r in got.values()) == 7       # what the skipped rows spent is kept
    summary = json.loads(first.stdout)
    assert summary["statuses"]["skipped"] == len(skipped) and summary["budget"]["calls"] == 7
    assert "skipped (reason budget)" in first.stderr
    kept = {line for line in out.read_text().splitlines() if json.loads(line)["task_id"] in ok}

    scripted_server.clear()
    again = cli("--config", str(cfg), "batch", str(tasks), "-o", str(out), "--no-store", "--concurrency", "8",
                "--max-calls", "100", "--summary-json", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["computed"] == len(skipped) == report["rerun_skipped"] and report["resumed"] == len(ok)
    asked = {json.loads(r.body)["messages"][-1]["content"] for r in scripted_server.requests}
    assert all(any(f"Explain {t} briefly." in m for m in asked) for t in skipped)
    assert not any(any(f"Explain {t} briefly." in m for m in asked) for t in ok)  # the others untouched
    # a skipped row that had sent its first attempt meets no 500 now (the server remembers its body):
    # the resume sends 2 requests per skipped row, less the 500s already taken
    assert chat_requests(scripted_server) == report["budget"]["calls"] == sum(2 - got[t]["calls"] for t in skipped)
    final = {r["task_id"]: r for r in rows(out)}
    assert len(rows(out)) == 10 and {r["status"] for r in final.values()} == {"ok"}
    assert kept <= set(out.read_text().splitlines())        # the ok rows' lines are byte for byte as they were
    print(f"\nbatch: budget 7 -> server saw 7 requests, {len(ok)} ok, {len(skipped)} skipped; "
          f"resume -> {report['computed']} rows, {chat_requests(scripted_server)} requests")


@pytest.mark.slow
def test_evaluate_prints_the_skipped_status_and_why(scripted_server, tmp_path):
    scripted_server.set_handler(judged)
    cfg = config_file(tmp_path, scripted_server)
    task = tmp_path / "task.json"
    task.write_text(json.dumps(judge_line("t1")))
    shown = cli("--config", str(cfg), "evaluate", str(task), "--max-calls", "0", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "status: skipped (reason: budget" in shown.stdout
    assert "BudgetExhausted: budget: max_calls=0 reached" in shown.stdout
    assert "1 task(s) skipped (reason budget)" in shown.stderr
    assert scripted_server.requests == []
    strict = cli("--config", str(cfg), "evaluate", str(task), "--max-calls", "0", "--strict", "--json", cwd=tmp_path)
    assert strict.returncode == 3
    row = json.loads(strict.stdout)
    assert row["status"] == "skipped" and row["reason"] == "budget"


def test_a_cost_budget_on_an_unpriced_model_exits_2_naming_it(scripted_server, tmp_path):
    cfg = config_file(tmp_path, scripted_server, prices=False)
    task = tmp_path / "task.json"
    task.write_text(json.dumps(judge_line("t1")))
    refused = cli("--config", str(cfg), "evaluate", str(task), "--max-cost-usd", "1", cwd=tmp_path)
    assert refused.returncode == 2
    assert "providers.judge.model" in refused.stderr and "'scripted-model'" in refused.stderr
    assert scripted_server.requests == []
    bad = cli("--config", str(cfg), "evaluate", str(task), "--max-calls", "-1", cwd=tmp_path)
    assert bad.returncode == 2 and "--max-calls" in bad.stderr


# ------------------------------------------------------------------------------------------ serve

@pytest.mark.slow
def test_serve_holds_each_request_to_its_budget_within_the_server_ceiling(scripted_server, tmp_path):
    import time

    import httpx

    from tests.serve_support import judge_config, need_serve_extra, serve

    need_serve_extra()
    scripted_server.set_handler(judged)
    config = judge_config(scripted_server.base_url, escalation={"enabled": False}, llm_judge={"mode": "pointwise"},
                          providers={"judge": {"kind": "openai", "base_url": scripted_server.base_url,
                                               "model": "scripted-model", "max_retries": 0},
                                     "prices": {"scripted-model": PRICE}})
    two = judge_line("t1", candidates=2)                     # two calls, run together
    with serve(tmp_path, "--max-calls", "3", config=config) as served, \
            httpx.Client(base_url=served.base_url, timeout=60) as client:
        ok = client.post("/v1/evaluate", json=two).json()
        assert ok["result"]["status"] == "ok" and chat_requests(scripted_server) == 2
        cut = client.post("/v1/evaluate", params={"max_calls": 1}, json=two).json()["result"]
        assert cut["status"] == "skipped" and cut["result"]["reason"] == "budget"
        assert chat_requests(scripted_server) <= 3           # one admitted (maybe cancelled), one refused
        over = client.post("/v1/evaluate", params={"max_calls": 4}, json=two)
        assert over.status_code == 422 and over.json()["field"] == "max_calls"
        before = chat_requests(scripted_server)
        lines = "".join(json.dumps(judge_line(f"b{n}")) + "\n" for n in range(5))
        batch = client.post("/v1/batches", content=lines.encode()).json()  # the server's 3 for the batch
        deadline = time.monotonic() + 60
        while batch["state"] == "running" and time.monotonic() < deadline:
            time.sleep(0.1)
            batch = client.get(f"/v1/batches/{batch['batch_id']}").json()
        assert batch["state"] == "done", batch
        rows_got = [json.loads(line) for line in
                    client.get(f"/v1/batches/{batch['batch_id']}/results").text.splitlines()]
        assert len(rows_got) == 5 and sorted(r["status"] for r in rows_got) == ["ok"] * 3 + ["skipped"] * 2
        assert chat_requests(scripted_server) - before == 3
    unpriced = judge_config(scripted_server.base_url)
    with serve(tmp_path, config=unpriced) as served, httpx.Client(base_url=served.base_url, timeout=60) as client:
        refused = client.post("/v1/evaluate", params={"max_cost_usd": 1}, json=two)
        assert refused.status_code == 422 and refused.json()["field"] == "max_cost_usd"
        assert "'scripted-model'" in refused.json()["message"]


# ---------------------------------------------------------------------------------------- compare

def test_compare_records_skipped_runs_and_a_rerun_with_a_larger_budget_computes_exactly_them(scripted_server,
                                                                                           tmp_path):
    from oracle import compare

    scripted_server.set_handler(judged)
    config = config_for(scripted_server, concurrency=1)
    items = tmp_path / "labelled.jsonl"
    items.write_text("".join(json.dumps({**judge_line(f"q{n}"), "label": {"passed": {"c0": True}}}) + "\n"
                             for n in range(5)))
    out = tmp_path / "cmp"
    first = compare(str(items), out, arms=["llm_judge"], config=config, concurrency=1, report=False,
                    budget=Budget(max_calls=2))
    assert chat_requests(scripted_server) == 2
    statuses = sorted(r.status for r in first.records)
    assert statuses == ["ok", "ok", "skipped", "skipped", "skipped"]
    assert first.summary.results[0].skipped == 3
    skipped = {r.item_id for r in first.records if r.status == "skipped"}
    scripted_server.clear()
    again = compare(str(items), out, arms=["llm_judge"], config=config, concurrency=1, report=False,
                    budget=Budget(max_calls=10))
    assert again.computed == 3 and again.resumed == 2              # a skipped record is not done
    assert chat_requests(scripted_server) == 3                     # one call each, only theirs
    asked = {r.json["messages"][-1]["content"] for r in scripted_server.requests}
    assert all(any(f"Explain {i} briefly." in m for m in asked) for i in skipped)
    assert sorted(r.status for r in again.records) == ["ok"] * 5 and again.summary.results[0].skipped == 0
    lines = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert len(lines) == 8                                         # the first run's 5 and the 3 new ...
    third = compare(str(items), out, arms=["llm_judge"], config=config, concurrency=1, report=False)
    assert third.computed == 0 and chat_requests(scripted_server) == 3
    assert len((out / "runs.jsonl").read_text().splitlines()) == 5  # ... one record per run after a rerun


def test_calibrate_writes_nothing_when_the_budget_ran_out_first(scripted_server, tmp_path):
    cfg = config_file(tmp_path, scripted_server)
    out = tmp_path / "calibration.json"
    labelled = Path(__file__).resolve().parent.parent / "docs" / "examples" / "yesno.jsonl"
    cut = cli("--config", str(cfg), "calibrate", str(labelled), "-o", str(out), "--max-calls", "2", cwd=tmp_path)
    assert cut.returncode == 2, cut.stderr
    assert "the budget was spent before every item was answered" in cut.stderr and not out.exists()
    assert chat_requests(scripted_server) <= 2
