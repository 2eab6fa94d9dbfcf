"""The run's pipe reader: a writer that outlives its run (a lost worker's process, until the pool
destroys that worker) must never keep the host reading."""

from __future__ import annotations

import os
import threading

from oracle.sandbox.runs import _Streams


def test_draining_stops_when_a_live_writer_has_nothing_more():
    r, w = os.pipe()
    streams = _Streams(cap=1000)
    streams.add(r, "stdout")
    os.write(w, b"partial output")
    done = threading.Event()

    def drain():
        while streams.read(r) == "data":
            pass
        done.set()

    threading.Thread(target=drain, daemon=True).start()
    assert done.wait(5), "draining spun on a pipe whose writer is still open"
    assert bytes(streams.data["stdout"]) == b"partial output" and r in streams.fds
    os.close(w)
    assert streams.read(r) == "eof" and r not in streams.fds
    streams.close()


def test_output_beyond_the_cap_is_marked_not_kept():
    r, w = os.pipe()
    streams = _Streams(cap=4)
    streams.add(r, "stderr")
    os.write(w, b"0123456789")
    os.close(w)
    assert streams.read(r) == "data"
    assert bytes(streams.data["stderr"]) == b"0123" and streams.overflow == {"stderr"}
    assert streams.read(r) == "eof"
