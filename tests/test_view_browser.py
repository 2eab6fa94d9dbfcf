"""``oracle view`` as a person uses it: real results, a real server on a real socket, Debian's chromium.

The results are made here, by the real CLI: the N+1 example through the verifier in the sandbox;
an LLM judge (pointwise and pairwise) and the decision judge against the scripted wire-protocol
server (real HTTP), their escalations filed in a real store; a real ``oracle compare`` folder.
``oracle view`` runs as a subprocess on port 0; playwright drives /usr/bin/chromium (never a
downloaded browser) with every request leaving 127.0.0.1 refused, and collects console messages,
page errors and failed requests: a page passes only with none. A control page with a script error
proves that check can fail.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from tests.plugins.scripted_server import ScriptedServer, chat_reply, decision_handler, garbage_reply

pytestmark = [pytest.mark.slow, pytest.mark.sandbox]
ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
LLM_TASK = {"task": {"id": "haiku-autumn", "prompt": "Write a haiku about autumn leaves.", "evaluator": "llm_judge",
                     "criteria": ["Three lines, 5-7-5 syllables", "Vivid autumn imagery"]},
            "trajectories": [{"id": "a", "answer": "Red leaves drift and fall\nwhispering to the cold ground\n"
                                                   "autumn says goodbye"},
                             {"id": "b", "answer": "Leaves are falling down. It is autumn now. The end."}]}


def _oracle(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "oracle", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "ORACLE_STORE": str(cwd / "unused.sqlite")})
    if check:
        assert proc.returncode in (0, 3), proc.stderr[-3000:]
    return proc


def _pointwise(request: Any) -> Any:
    return chat_reply(json.dumps({"criteria": {"c1": {"rationale": "three lines, 5-7-5", "score": 8},
                                               "c2": {"rationale": "red leaves, cold ground", "score": 6}}}))


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict[str, Path]:
    """Real results of each evaluator, their task files, a store with escalations, a compare folder."""
    work = tmp_path_factory.mktemp("view")
    (work / "llm_task.json").write_text(json.dumps(LLM_TASK))
    store = work / "esc.sqlite"
    rows = [_oracle("evaluate", str(ROOT / "examples/n_plus_one/task.json"), "--json", cwd=work).stdout]
    with ScriptedServer() as server:
        config = {"providers": {"judge": {"kind": "openai", "base_url": server.base_url, "model": "scripted-model",
                                          "max_retries": 0, "timeout_s": 30},
                                "decision": {"kind": "systemone", "base_url": server.base_url,
                                             "model": "scripted-decider", "max_retries": 0, "timeout_s": 30}}}
        for mode in ("pointwise", "pairwise"):
            cfg = work / f"{mode}.yaml"
            cfg.write_text(yaml.safe_dump({**config, "llm_judge": {"mode": mode}}))
            server.set_handler(_pointwise if mode == "pointwise" else
                               (lambda req: chat_reply(json.dumps({"rationale": "A reads better", "winner": "A"}))))
            rows.append(_oracle("evaluate", "llm_task.json", "--json", "--config", str(cfg), "--store", str(store),
                                cwd=work).stdout)
        server.set_handler(lambda req: garbage_reply())  # a judge that cannot be read: status failed or unparsed
        rows.append(_oracle("evaluate", "llm_task.json", "--json", "--config", str(work / "pointwise.yaml"),
                            cwd=work).stdout)
        server.set_handler(decision_handler(confidence=0.2))
        cfg = work / "decision.yaml"
        cfg.write_text(yaml.safe_dump(config))
        rows.append(_oracle("evaluate", str(ROOT / "examples/decision_judge/support_replies.yaml"), "--json",
                            "--config", str(cfg), "--store", str(store), cwd=work).stdout)
    (work / "results.jsonl").write_text("".join(r if r.endswith("\n") else r + "\n" for r in rows))
    _oracle("compare", str(ROOT / "docs/examples/labelled.jsonl"), "-o", str(work / "cmp"), "--arms",
            "verifier,baseline", "--both-orders", cwd=work)
    return {"work": work, "results": work / "results.jsonl", "store": store, "compare": work / "cmp",
            "tasks": [ROOT / "examples/n_plus_one/task.json", work / "llm_task.json",
                      ROOT / "examples/decision_judge/support_replies.yaml"]}


@contextmanager
def viewer(*args: str, cwd: Path) -> Iterator[str]:
    """``oracle view ARGS --port 0 --no-open`` on a real socket; yields the URL it prints."""
    proc = subprocess.Popen([sys.executable, "-m", "oracle", "view", *args, "--port", "0", "--no-open"], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), (url, proc.stderr.read() if proc.poll() is not None else "")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def view_args(made: dict[str, Any]) -> list[str]:
    return [str(made["results"]), *map(str, made["tasks"]), str(made["compare"]), "--store", str(made["store"])]


class Browser:
    """Headless chromium through playwright; ``problems`` holds every console message, page error and
    failed request since the last ``clear()``."""

    def __init__(self, pw: Any) -> None:
        self.browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        self.context = self.browser.new_context()
        self.context.route("**/*", self._only_local)
        self.page = self.context.new_page()
        self.problems: list[str] = []
        self.page.on("console", lambda m: self.problems.append(f"console {m.type}: {m.text}")
                     if m.type in ("error", "warning") else None)
        self.page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        self.page.on("requestfailed", lambda r: self.problems.append(f"request failed: {r.url}"))
        self.outside: list[str] = []

    def _only_local(self, route: Any) -> None:
        url = route.request.url
        if url.startswith(("http://127.0.0.1:", "file://", "data:")):
            route.continue_()
        else:
            self.outside.append(url)
            route.abort()


@pytest.fixture
def browser():
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail("chromium is not installed (Debian: apt-get install -y chromium)")
    with sync_playwright() as pw:
        b = Browser(pw)
        try:
            yield b
        finally:
            b.browser.close()


def rows_shown(page: Any) -> list[str]:
    return page.eval_on_selector_all("#rows-body tr", "trs => trs.map(t => t.children[0].textContent)")


def test_the_console_check_catches_a_script_error(browser, tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><body><script>console.error('boom'); undefinedFunction();</script>"
                   "<img src='http://example.invalid/x.png'></body></html>")
    browser.page.goto(bad.as_uri())
    browser.page.wait_for_timeout(300)
    assert any("boom" in p for p in browser.problems), browser.problems
    assert any("undefinedFunction" in p for p in browser.problems), browser.problems
    assert browser.outside == ["http://example.invalid/x.png"]


def test_list_loads_clean_and_the_filters_change_the_rows(made, browser):
    rows = [json.loads(line) for line in made["results"].read_text().splitlines()]
    assert len({r["evaluator"] for r in rows}) == 3 and any(r["escalation"] for r in rows)

    def ids(keep: Any) -> list[str]:
        return sorted(r["task_id"] for r in rows if keep(r))

    with viewer(*view_args(made), cwd=made["work"]) as url:
        page = browser.page
        page.goto(url)
        page.wait_for_selector("body[data-loaded]")
        assert sorted(rows_shown(page)) == ids(lambda r: True)
        assert page.inner_text("#count") == f"{len(rows)} of {len(rows)} tasks"
        assert "verifier (1)" in page.inner_text("#f-evaluator")
        checks = [("#f-evaluator", "verifier", lambda r: r["evaluator"] == "verifier"),
                  ("#f-evaluator", "decision_judge", lambda r: r["evaluator"] == "decision_judge"),
                  ("#f-passed", "passed", lambda r: r["passed"] is True),
                  ("#f-passed", "no verdict", lambda r: r["passed"] is None),
                  ("#f-escalated", "escalated", lambda r: r["escalation"] is not None),
                  ("#f-status", "ok", lambda r: r["status"] == "ok"),
                  ("#f-status", rows[3]["status"], lambda r: r["status"] == rows[3]["status"])]
        for select, value, keep in checks:
            page.select_option(select, value)
            expected = ids(keep)
            assert 0 < len(expected) < len(rows), (select, value)
            assert sorted(rows_shown(page)) == expected, (select, value)
            assert page.inner_text("#count").startswith(f"{len(expected)} of {len(rows)}")
            page.select_option(select, "")
        page.select_option("#f-evaluator", "llm_judge")
        page.select_option("#f-escalated", "escalated")  # filters combine
        assert sorted(rows_shown(page)) == ids(lambda r: r["evaluator"] == "llm_judge" and r["escalation"])
        page.select_option("#f-evaluator", "")
        page.select_option("#f-escalated", "")
        page.fill("#f-q", "autumn leaves")  # the prompt's text, not its id
        assert rows_shown(page) == ["haiku-autumn"] * 3
        page.fill("#f-q", "")
        assert len(rows_shown(page)) == len(rows)
    assert browser.problems == [] and browser.outside == []


def _task_url(url: str, task_id: str, section: str | None = None) -> str:
    """The page of the row for ``task_id`` (the one with the part ``section`` when several rows share it)."""
    import urllib.request

    with urllib.request.urlopen(url + "api/rows") as reply:
        rows = json.load(reply)["rows"]
    for r in rows:
        if r["task_id"] == task_id:
            with urllib.request.urlopen(url + "task/" + r["key"]) as page:
                if section is None or f'id="{section}"' in page.read().decode():
                    return url + "task/" + r["key"]
    raise AssertionError(f"no row for {task_id} with {section}")


def test_task_pages_show_each_part(made, browser):
    with viewer(*view_args(made), cwd=made["work"]) as url:
        page = browser.page
        page.goto(_task_url(url, "n-plus-one-orders"))
        assert "Fix the N+1 query" in page.inner_text("#prompt")
        assert page.eval_on_selector_all(".cand", "c => c.map(x => x.dataset.candidate)") == \
            ["join", "batched_prefetch", "lru_cache"]
        assert page.locator(".cand span[style]").count() > 0  # pygments' highlighting (inline styles)
        assert page.locator(".diff .add").count() > 0 and page.locator(".diff .del").count() > 0
        tests = page.inner_text("#tests")
        assert "got 51 for 50 orders = 1 + N" in tests and "isolated" in tests
        assert page.locator("#tests tr.outcome-fail").count() == 3
        votes = page.eval_on_selector_all(".vote", "v => v.map(x => x.dataset.policy)")
        assert "execution_evidence" in votes
        weights = page.eval_on_selector_all(".vote .bar.weight", "b => b.map(x => x.getBoundingClientRect().width)")
        assert len(weights) == len(votes) and max(weights) > min(weights) > 0  # weights 3 and 1 drawn apart
        route = page.inner_text("#route")
        assert "decision_judge: not feasible" in route and "fallback" in route and "confidence" in route
        prov = page.inner_text("#provenance")
        assert "isolated" in prov and ("nsjail" in prov or "bubblewrap" in prov)
        assert browser.problems == []

        page.goto(_task_url(url, "haiku-autumn", "criteria"))
        crit = page.inner_text("#criteria-table")
        assert "Vivid autumn imagery" in crit and "red leaves, cold ground" in crit
        assert "scripted-model" in page.inner_text("#calls")
        page.goto(_task_url(url, "haiku-autumn", "pairs"))
        pairs = page.inner_text("#pairs")
        assert "order flip" in pairs and "A=a, B=b" in pairs and "A=b, B=a" in pairs
        assert page.locator(".pair.flipped").count() == 1
        esc = page.inner_text("#escalation")
        assert "pairwise_order_inconsistent" in esc and page.locator("#answer-form").count() == 1
        page.goto(_task_url(url, "ticket-app-crash"))
        assert "politeness" in page.inner_text("#criteria-table")
        assert "decision_low_confidence" in page.inner_text("#escalation")
        assert browser.problems == [] and browser.outside == []


def test_an_answer_posted_from_the_page_lands_in_the_store(made, browser, tmp_path):
    store = tmp_path / "esc.sqlite"
    store.write_bytes(made["store"].read_bytes())
    args = [str(made["results"]), *map(str, made["tasks"]), "--store", str(store)]
    with viewer(*args, cwd=made["work"]) as url:
        page = browser.page
        page.goto(_task_url(url, "haiku-autumn", "pairs"))
        esc_id = page.get_attribute("#answer-form", "data-id")
        options = page.eval_on_selector_all("#answer-form select option", "o => o.map(x => x.value)")
        page.select_option("#answer-form select", options[1])
        page.fill("#answer-form textarea", "a keeps the 5-7-5 form")
        page.fill("#answer-form input[name=by]", "reviewer-1")
        page.click("#answer-form button")
        page.wait_for_selector("#answer-status.ok")
        assert page.inner_text("#answer-status").startswith("answered")
        assert page.inner_text("#esc-state") == "answered"
        assert browser.problems == []
        with sqlite3.connect(store) as db:
            state, answer, choice = db.execute("SELECT state, answer, choice FROM escalations WHERE id=?",
                                               (esc_id,)).fetchone()
        assert state == "answered" and choice == options[1]
        assert json.loads(answer) == {"text": "a keeps the 5-7-5 form", "choice": options[1],
                                      "answered_by": "reviewer-1"}
        # the first answer wins, as in the CLI; --replace (the checkbox) overrides it
        page.fill("#answer-form textarea", "second thoughts")
        page.click("#answer-form button")
        page.wait_for_selector("#answer-status.error")
        assert "already answered" in page.inner_text("#answer-status")
        page.check("#answer-form input[name=replace]")
        page.click("#answer-form button")
        page.wait_for_selector("#answer-status.ok")
        with sqlite3.connect(store) as db:
            (answer,) = db.execute("SELECT answer FROM escalations WHERE id=?", (esc_id,)).fetchone()
        assert json.loads(answer)["text"] == "second thoughts"
        page.goto(url)  # the list shows the request's new state
        page.wait_for_selector("body[data-loaded]")
        page.select_option("#f-escalated", "escalated")
        assert "(answered)" in page.inner_text("#rows-body")


def test_compare_folder_shows_the_summary_plots_and_links_its_disagreements(made, browser):
    with viewer(*view_args(made), cwd=made["work"]) as url:
        page = browser.page
        page.goto(url + "compare/c0")
        arms = page.eval_on_selector_all("#arms tbody tr", "r => r.map(x => x.children[0].textContent)")
        summary = json.loads((made["compare"] / "summary.json").read_text())
        assert arms == [a["arm"] for a in summary["results"]]
        plots = page.locator(".plot img")
        assert plots.count() >= 3
        assert all(page.evaluate("i => i.naturalWidth", plots.nth(i).element_handle()) > 0
                   for i in range(plots.count()))
        verdicts: dict[str, set[str]] = {}
        for line in (made["compare"] / "runs.jsonl").read_text().splitlines():
            r = json.loads(line)
            if r["status"] != "n/a":
                verdicts.setdefault(r["item_id"], set()).add(json.dumps([r["top"], sorted(r["passed"].items())]))
        split = sorted(item for item, seen in verdicts.items() if len(seen) > 1)
        assert split, verdicts
        links = page.locator("#disagreements a.item-link")
        assert sorted(links.all_inner_texts()) == split
        links.first.click()
        page.wait_for_selector("#records")
        assert "verifier" in page.inner_text("#records") and "baseline" in page.inner_text("#records")
        assert browser.problems == [] and browser.outside == []


def test_the_export_opens_offline_and_shows_the_list_and_the_pages(made, browser, tmp_path):
    out = tmp_path / "view.html"
    proc = _oracle("view", *view_args(made), "--export", str(out), cwd=made["work"])
    assert proc.returncode == 0 and out.is_file()
    page = browser.page
    page.goto(out.as_uri())
    page.wait_for_selector("body[data-loaded]")
    assert len(rows_shown(page)) == len(made["results"].read_text().splitlines())
    page.select_option("#f-evaluator", "verifier")
    assert rows_shown(page) == ["n-plus-one-orders"]
    page.click("#rows-body a")
    page.wait_for_selector("#page #tests")
    assert "got 51 for 50 orders" in page.inner_text("#page #tests")
    assert page.locator("#page #answer-form").count() == 0  # a file has no store to answer into
    page.go_back()
    page.wait_for_selector("#list:not([hidden])")
    assert browser.problems == [] and browser.outside == []
