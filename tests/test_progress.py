"""Progress of many evaluations: the CLI's rich bar on a terminal, log events or plain lines
elsewhere, never stdout; the library itself draws no bar."""

from __future__ import annotations

import io

from oracle.batch.progress import Progress
from oracle.cli.progress_bar import rich_bar
from tests.plugins.oracle_logs import captured_logs


def test_a_terminal_gets_the_clis_live_bar_that_ends_on_the_final_count():
    out = io.StringIO()
    with captured_logs() as logs, Progress(3, stream=out, tty=True, label="evaluate", bar=rich_bar()) as p:
        p.running("task-7")
        for status in ("ok", "unparsed", "ok"):
            p.update({"status": status})
    text = out.getvalue()
    assert p.mode == "off" and "evaluate" in text and "3/3" in text and "failed=1" in text
    assert logs == []  # the bar replaces the log lines


def test_without_a_bar_a_terminal_gets_log_events_like_a_pipe():
    """A library caller (no bar handed in) on a terminal: the counts go to logging, nothing is drawn."""
    out = io.StringIO()
    with captured_logs() as logs:
        p = Progress(2, stream=out, tty=True, interval_s=0.0)
        assert p.mode == "log"
        p.update({"status": "ok"})
        p.close()
    assert [e["done"] for e in logs if e["event"] == "batch_progress"] == [1]
    assert out.getvalue() == ""


def test_off_a_terminal_plain_lines_at_the_interval_and_one_final_line():
    out = io.StringIO()
    p = Progress(4, skipped=1, stream=out, tty=False, off_tty="text", label="evaluate", interval_s=3600,
                 bar=rich_bar())
    for status in ("ok", "failed", "ok"):
        p.update({"status": status})
    p.close()
    p.close()  # closing twice writes nothing more
    assert out.getvalue().splitlines() == [out.getvalue().splitlines()[0]]
    assert out.getvalue().startswith("evaluate: 4/4 done, ") and "failed=1" in out.getvalue()
    assert out.getvalue().rstrip().endswith("eta 0 s")  # all done: nothing left to wait for


def test_batch_off_a_terminal_logs_progress_events_and_writes_nothing():
    out = io.StringIO()
    with captured_logs() as logs:
        p = Progress(2, stream=out, tty=False, interval_s=0.0)
        p.update({"status": "ok"})
        p.update({"status": "failed"})
        p.close()
    events = [e for e in logs if e["event"] == "batch_progress"]
    assert [e["done"] for e in events] == [1, 2] and events[-1]["failed"] == 1
    assert events[-1]["log_level"] == "info" and events[-1]["logger"] == "oracle.batch"
    assert out.getvalue() == ""


def test_off_shows_nothing():
    out = io.StringIO()
    with captured_logs() as logs, Progress(2, stream=out, tty=False, off_tty="off", interval_s=0.0) as p:
        p.update({"status": "ok"})
    assert out.getvalue() == "" and logs == []
