"""The CLI's one renderer: plain ASCII columns off a terminal or with NO_COLOR, rich's colour on a
terminal, the same columns either way, and a layout that does not depend on the screen's width."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rich.text import Text

from oracle.cli.render import Col, Grid, plain_output, plain_text, show

ROOT = Path(__file__).resolve().parent.parent
TASK = ROOT / "examples" / "n_plus_one" / "task.json"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def grid() -> list:
    return [Text("title line"),
            Grid([Col("name", footer="TOTAL"), Col("n", numeric=True, footer="12"), Col("note", text=True)],
                 [["alpha", "2", "short"], [Text("beta", style="red"), "10", "a longer note"]], footer=True)]


def test_plain_layout_is_pinned_ascii_without_trailing_spaces():
    assert plain_text(grid()).splitlines() == [
        "title line",
        "name    n  note",
        "------------------------",
        "alpha   2  short",
        "beta   10  a longer note",
        "------------------------",
        "TOTAL  12",
    ]


def test_text_from_a_task_is_printed_as_written_never_as_markup():
    cells = [["[bold]id[/bold]", ":smile:", "[red]x"]]
    text = plain_text([Grid([Col("a"), Col("b"), Col("c")], cells), Text("[override] :x:")])
    assert "[bold]id[/bold]  :smile:  [red]x" in text and text.endswith("[override] :x:")


def test_a_terminal_gets_colour_and_the_same_columns(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("COLUMNS", "120")
    out = Terminal()
    show(grid(), out)
    coloured = out.getvalue()
    assert "\x1b[" in coloured and "─" in coloured  # rich's colour and box
    as_plain = [line.rstrip() for line in ANSI.sub("", coloured).replace("─", "-").splitlines()]
    assert as_plain == plain_text(grid()).splitlines()


def test_no_color_or_a_pipe_means_plain(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert plain_output(io.StringIO()) and not plain_output(Terminal())
    monkeypatch.setenv("NO_COLOR", "1")
    assert plain_output(Terminal())
    out = Terminal()
    show(grid(), out)
    assert out.getvalue() == plain_text(grid()) + "\n"


def test_under_a_live_progress_bar_stdout_is_still_the_terminal_behind_it(monkeypatch):
    """With a bar on the same screen, rich swaps stdout for a proxy that draws above the bar."""
    from rich.console import Console
    from rich.file_proxy import FileProxy

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert not plain_output(FileProxy(Console(file=io.StringIO()), Terminal()))
    assert plain_output(FileProxy(Console(file=io.StringIO()), io.StringIO()))


def _mask_timing(text: str) -> str:
    return re.sub(r"\d+ us", "N us", text)


def _oracle_on_a_terminal(*args: str, **env: str) -> str:
    """Run ``oracle`` with stdout on a pseudo-terminal; what it wrote there."""
    main, child = pty.openpty()
    environ = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    environ.update(TERM="xterm-256color", COLUMNS="160", **env)
    proc = subprocess.Popen([sys.executable, "-m", "oracle", *args], stdout=child, stderr=subprocess.PIPE,
                            cwd=ROOT, env=environ)
    os.close(child)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(main)
    assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""
    return b"".join(chunks).decode().replace("\r\n", "\n")


@pytest.mark.slow
def test_oracle_route_on_a_terminal_in_a_pipe_and_with_no_color():
    piped = subprocess.run([sys.executable, "-m", "oracle", "route", str(TASK)], capture_output=True, text=True,
                           cwd=ROOT, timeout=120, env={**os.environ, "COLUMNS": "30"})
    assert piped.returncode == 0, piped.stderr
    assert "\x1b[" not in piped.stdout and "─" not in piped.stdout
    lines = piped.stdout.splitlines()
    assert max(map(len, lines)) > 60  # a narrow COLUMNS wraps nothing off a terminal
    assert all(line == line.rstrip() for line in lines)
    tty = _oracle_on_a_terminal("route", str(TASK))
    assert "\x1b[" in tty and "─" in tty
    assert _mask_timing(_oracle_on_a_terminal("route", str(TASK), NO_COLOR="1")) == _mask_timing(piped.stdout)


def test_evaluate_shows_every_figure_of_the_result(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"task": {"id": "sum", "prompt": "What is 2+2?", "reference": "4",
                                         "evaluator": "verifier"},
                                "trajectories": [{"id": "good", "answer": "4"}, {"id": "bad", "answer": "5"}]}))
    out = subprocess.run([sys.executable, "-m", "oracle", "evaluate", str(path)], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "task sum: -> verifier  confidence " in text and "  [override]" in text
    header = next(line for line in text.splitlines() if line.startswith("policy"))
    assert header.split() == ["policy", "weight", "verifier", "decision", "llm_judge", "reason"]
    assert re.search(r"^TOTAL +\d\.\d\d +\d\.\d\d +\d\.\d\d$", text, re.M)
    assert re.search(r"^status: ok  integrity: reference$", text, re.M)
    assert re.search(r"^candidate +score +passed +status +why$", text, re.M)
    assert re.search(r"^good +1\.000  PASS    ok", text, re.M) and re.search(r"^bad +0\.000  FAIL    ok", text, re.M)
    # a reference check calls no model: its cost is known to be zero and says so (issue 29)
    assert re.search(r"^best: good  ranking: good > bad  calls \d+  cost \$0 \(no model call\)  \d+ ms$", text, re.M)
    assert text.endswith("\n\n")  # a blank line after each task


def test_the_docs_sample_is_what_oracle_route_prints():
    """docs/cli.md shows the plain layout line for line (tests/test_docs_commands.py checks the
    other samples with the spacing and the timings left aside)."""
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    command = "$ oracle route examples/n_plus_one/task.json | head -5"
    block = page.split(command + "\n", 1)[1].split("```", 1)[0].splitlines()
    out = subprocess.run([sys.executable, "-m", "oracle", "route", str(TASK)], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[:5] == block
