"""``oracle serve`` against held-open and trickling connections: real sockets to a real server.

The server's memory must not grow with what a client holds open, and a busy API must not stop
the health probe answering: the open path reads no body and has its own small limit; a request
head or body trickled byte by byte is cut off by its own deadline; connections are capped.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.serve_support import need_serve_extra, serve

need_serve_extra()


def _addr(base_url: str) -> tuple[str, int]:
    host, port = base_url.removeprefix("http://").split(":")
    return host, int(port)


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _closed_within(sock: socket.socket, seconds: float) -> float | None:
    """Seconds until the server closes ``sock`` (recv gives b'' or a reset), or None."""
    start = time.monotonic()
    sock.settimeout(0.2)
    while time.monotonic() - start < seconds:
        try:
            data = sock.recv(65536)
        except socket.timeout:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return time.monotonic() - start
        if data == b"":
            return time.monotonic() - start
    return None


@pytest.mark.slow
def test_health_answers_while_the_api_slots_are_held_by_trickled_bodies(tmp_path):
    with serve(tmp_path, "--concurrency", "2", "--body-timeout", "4") as served:
        addr = _addr(served.base_url)
        holders = []
        for _ in range(2):  # two slowloris bodies take both API slots
            s = socket.create_connection(addr, timeout=10)
            s.sendall(b"POST /v1/route HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 5000\r\n\r\n{")
            holders.append(s)
        with httpx.Client(base_url=served.base_url, timeout=5) as client:
            deadline = time.monotonic() + 5
            while client.get("/v1/health").json()["requests_in_flight"] < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert client.get("/v1/version").status_code == 503  # the API is full...
            start = time.monotonic()
            for _ in range(10):  # ...and the probe still answers, at once
                assert client.get("/v1/health").status_code == 200
            assert time.monotonic() - start < 3
        # the trickled bodies get 408 once the body deadline passes, and free their slots
        for s in holders:
            s.settimeout(10)
            head = s.recv(4096)
            assert head.startswith(b"HTTP/1.1 408"), head[:200]
            s.close()
        assert httpx.get(served.base_url + "/v1/version").status_code == 200


@pytest.mark.slow
def test_the_open_path_reads_no_body(tmp_path):
    with serve(tmp_path) as served:
        addr = _addr(served.base_url)
        with socket.create_connection(addr, timeout=10) as s:  # a body declared, never sent
            s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\n")
            start = time.monotonic()
            head = s.recv(4096)
            assert head.startswith(b"HTTP/1.1 200"), head[:200]
            assert time.monotonic() - start < 3
            assert b"connection: close" in head.lower()
            assert _closed_within(s, 5) is not None  # the unread body is never parsed
        pid = served.proc.pid
        before = _rss_kib(pid)
        socks = []
        for _ in range(20):  # bodies sent to the open path are not taken in
            s = socket.create_connection(addr, timeout=10)
            s.sendall(b"POST /v1/health HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
            try:
                for _ in range(64):
                    s.sendall(b"4000\r\n" + b"x" * 0x4000 + b"\r\n")
            except OSError:
                pass  # the server closed it: fine
            socks.append(s)
        grown = _rss_kib(pid) - before
        for s in socks:
            s.close()
        assert grown < 40 * 1024, f"server grew by {grown} KiB for 20 MiB of bodies to the open path"


@pytest.mark.slow
def test_a_trickled_request_head_is_cut_off(tmp_path):
    with serve(tmp_path, "--header-timeout", "2") as served:
        addr = _addr(served.base_url)
        with socket.create_connection(addr, timeout=10) as s:
            s.sendall(b"GET /v1/health HTTP/1.1\r\n")
            stop = threading.Event()

            def trickle() -> None:
                while not stop.is_set():
                    try:
                        s.sendall(b"X")
                    except OSError:
                        return
                    time.sleep(0.3)

            t = threading.Thread(target=trickle, daemon=True)
            t.start()
            took = _closed_within(s, 8)
            stop.set()
            assert took is not None and took < 6, took
        # a connection that never sends a byte is closed too
        with socket.create_connection(addr, timeout=10) as idle:
            assert _closed_within(idle, 8) is not None
        assert httpx.get(served.base_url + "/v1/health").status_code == 200


@pytest.mark.slow
def test_held_connections_are_capped_and_memory_stays_flat(tmp_path):
    with serve(tmp_path, "--max-connections", "30", "--header-timeout", "3") as served:
        addr = _addr(served.base_url)
        pid = served.proc.pid
        before = _rss_kib(pid)
        socks = []
        for _ in range(200):  # each holds a 15 KiB incomplete head
            s = socket.create_connection(addr, timeout=10)
            try:
                s.sendall(b"GET /v1/health HTTP/1.1\r\nX-Pad: " + b"a" * 15_000)
            except OSError:
                pass
            socks.append(s)
        time.sleep(0.5)
        grown = _rss_kib(pid) - before
        closed = sum(1 for s in socks if _closed_within(s, 0.05) is not None)
        assert closed >= 150, f"only {closed} of 200 held connections were refused past the cap of 30"
        assert grown < 30 * 1024, f"server grew by {grown} KiB holding 200 half-sent heads"
        for s in socks:
            s.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # once the held ones time out, the probe answers again
            try:
                if httpx.get(served.base_url + "/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        else:
            pytest.fail("health did not answer after the held connections were dropped")


@pytest.mark.slow
def test_a_huge_declared_body_never_sent_is_refused_unread(tmp_path):
    with serve(tmp_path, "--body-timeout", "2") as served:
        addr = _addr(served.base_url)
        with socket.create_connection(addr, timeout=10) as s:
            s.sendall(b"POST /v1/route HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999\r\n\r\n")
            assert s.recv(4096).startswith(b"HTTP/1.1 413")
        with socket.create_connection(addr, timeout=10) as s:  # within the limit, but never sent
            s.sendall(b"POST /v1/route HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{")
            start = time.monotonic()
            head = s.recv(4096)
            assert head.startswith(b"HTTP/1.1 408") and time.monotonic() - start < 6, head[:200]
