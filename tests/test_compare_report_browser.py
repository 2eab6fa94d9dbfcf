"""The comparison report as a person sees it: Debian's chromium, headless, offline.

A real comparison (the verifier in the sandbox, the decision judge against jevcompat's reference
server, the baseline; real dev-suite items) writes report.html; chromium opens it with every
network request sent to a dead proxy, so anything the page tried to fetch would fail and log. The
DOM chromium built must hold the table and the four plots as inline SVG; chromium's log must show
no console message and no failed load; a screenshot must come out. A control page with a script
error and an external image proves the log check can fail.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from oracle.comparison.api import compare
from oracle.comparison._importers import import_suite
from oracle.config.model import OracleConfig
from tests.test_compare_determinism import reference_server

pytestmark = [pytest.mark.slow, pytest.mark.sandbox]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
LOG_PROBLEMS = re.compile(r"CONSOLE|Uncaught|ERR_|Failed to load|net::", re.IGNORECASE)


def chromium(page: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Headless chromium on a local file, offline (a dead proxy for every request), logging to stderr."""
    if CHROMIUM is None:
        pytest.fail("chromium is not installed (Debian: apt-get install -y chromium)")
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
         "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>", "--enable-logging=stderr", "--v=0",
         f"--user-data-dir={page.parent / 'chromium-profile'}", *args, page.resolve().as_uri()],
        capture_output=True, text=True, timeout=120)


def problems(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if LOG_PROBLEMS.search(line)]


def test_the_log_check_catches_a_script_error_and_a_network_fetch(tmp_path):
    page = tmp_path / "bad.html"
    page.write_text("<!DOCTYPE html><html><body><img src='http://example.invalid/x.png'>"
                    "<script>console.error('boom'); undefinedFunction();</script></body></html>")
    found = problems(chromium(page, "--dump-dom").stderr)
    assert any("boom" in line or "CONSOLE" in line for line in found), found
    assert any("ERR_" in line or "undefinedFunction" in line for line in found), found


def test_report_renders_offline_with_its_plots_and_no_console_errors(shared_data, tmp_path):
    suite = shared_data("suite/dev_suite.jsonl")
    items, _ = import_suite(suite, suite.parent.parent)
    picked = [i for prefix, n in (("code-verify/humaneval-codegen16b/", 2), ("decision/halueval-general/", 4),
                                  ("decision/truthfulqa-mc/", 3))
              for i in [x for x in items if x.id.startswith(prefix)][:n]]
    with reference_server() as url:
        config = OracleConfig.model_validate({"providers": {
            "decision": {"kind": "systemone", "base_url": url, "model": "jev-latest", "max_retries": 1}}})
        result = compare(picked, tmp_path / "out", arms=["verifier", "decision_judge", "baseline"],
                         both_orders=True, config=config)
    assert result.report_path is not None, result.report_error
    html = result.report_path.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", html), "the page links out"
    dom = chromium(result.report_path, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert problems(dom.stderr) == []
    for plot in ("agreement", "cost", "stability", "reliability", "bias"):
        section = re.search(rf'<div class="plot" id="plot-{plot}">(.*?)</svg>', dom.stdout, re.DOTALL)
        assert section and "<svg" in section.group(1) and "<path" in section.group(1), plot
    arms_table = re.search(r'<table id="arms">(.*?)</table>', dom.stdout, re.DOTALL).group(1)
    assert arms_table.count('<tr>') == 4  # header + three arms
    bias_table = re.search(r'<table id="bias">(.*?)</table>', dom.stdout, re.DOTALL).group(1)
    assert bias_table.count('<tr>') == 2 and "decision_judge" in bias_table  # header + the one judge arm
    shot = tmp_path / "report.png"
    snap = chromium(result.report_path, f"--screenshot={shot}", "--window-size=1200,1500", "--hide-scrollbars")
    assert snap.returncode == 0 and problems(snap.stderr) == []
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
