"""Progress of many evaluations: a rich bar on a terminal, log events or plain lines elsewhere, never stdout."""

from __future__ import annotations

import io

from structlog.testing import capture_logs

from oracle.batch.progress import Progress


def test_a_terminal_gets_a_live_bar_that_ends_on_the_final_count():
    out = io.StringIO()
    with Progress(3, stream=out, tty=True, label="evaluate") as p:
        p.running("task-7")
        for status in ("ok", "unparsed", "ok"):
            p.update({"status": status})
    text = out.getvalue()
    assert p.mode == "bar" and "evaluate" in text and "3/3" in text and "failed=1" in text


def test_off_a_terminal_plain_lines_at_the_interval_and_one_final_line():
    out = io.StringIO()
    p = Progress(4, skipped=1, stream=out, tty=False, off_tty="text", label="evaluate", interval_s=3600)
    for status in ("ok", "failed", "ok"):
        p.update({"status": status})
    p.close()
    p.close()  # closing twice writes nothing more
    assert out.getvalue().splitlines() == [out.getvalue().splitlines()[0]]
    assert out.getvalue().startswith("evaluate: 4/4 done, ") and "failed=1" in out.getvalue()
    assert out.getvalue().rstrip().endswith("eta 0 s")  # all done: nothing left to wait for


def test_batch_off_a_terminal_logs_progress_events_and_writes_nothing():
    out = io.StringIO()
    with capture_logs() as logs:
        p = Progress(2, stream=out, tty=False, interval_s=0.0)
        p.update({"status": "ok"})
        p.update({"status": "failed"})
        p.close()
    events = [e for e in logs if e["event"] == "batch_progress"]
    assert [e["done"] for e in events] == [1, 2] and events[-1]["failed"] == 1
    assert out.getvalue() == ""


def test_off_shows_nothing():
    out = io.StringIO()
    with capture_logs() as logs, Progress(2, stream=out, tty=False, off_tty="off", interval_s=0.0) as p:
        p.update({"status": "ok"})
    assert out.getvalue() == "" and logs == []
