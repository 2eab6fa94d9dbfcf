"""Attack suite: hostile programs against every sandbox backend on this machine.

Every assertion looks from the host side: files that must not appear on the host, a listener that
must not hear anything, processes of the run's uid that must be gone, secrets that must not show up
in what the program printed. rlimits-only is not a containment backend (it is refused by default)
and is not attacked here; tests/test_sandbox_layers.py checks the refusal.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
import subprocess
import time
from pathlib import Path

import pytest

from oracle.sandbox import RunRequest, Sandbox, SandboxLimits, probe
from oracle.sandbox.slots import processes_of_uid
from tests.plugins.sandbox_backends import CONTAINMENT_BACKENDS, use_backend

pytestmark = pytest.mark.sandbox

PYTHON = "/usr/bin/python3.11"
LIMITS = SandboxLimits(timeout_s=8, memory_mb=512, max_pids=32, output_limit_bytes=200_000, disk_mb=16)


def run(backend: str, code: str, limits: SandboxLimits = LIMITS, timeout_s: float | None = None):
    sandbox = Sandbox(backend=backend, limits=limits)
    request = RunRequest(command=[PYTHON, "-I", "-c", code], timeout_s=timeout_s)
    return asyncio.run(sandbox.run(request))


@pytest.fixture(params=CONTAINMENT_BACKENDS)
def backend(request) -> str:
    return use_backend(request.param)


def _assert_no_leftovers(outcome) -> None:
    if outcome.uid is not None:
        assert processes_of_uid(outcome.uid) == [], "processes of the run's uid outlived the run"


def test_some_backend_is_available():
    assert set(CONTAINMENT_BACKENDS) & set(probe().available), f"no containment backend: {probe().describe()}"


def test_infinite_loop_is_killed_on_time(backend):
    start = time.monotonic()
    out = run(backend, "while True:\n    pass\n", timeout_s=1.0)
    assert out.timed_out
    assert time.monotonic() - start < 4
    _assert_no_leftovers(out)


@pytest.mark.slow
def test_fork_bomb_is_bounded_and_swept(backend):
    code = ("import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n")
    out = run(backend, code, timeout_s=1.5)
    assert out.timed_out or out.exit_code is not None
    _assert_no_leftovers(out)
    assert subprocess.run(["true"]).returncode == 0  # the host can still start processes


@pytest.mark.slow
def test_one_8_gib_allocation_is_refused(backend):
    out = run(backend, "b = bytearray(8 << 30)\nprint('allocated', len(b))\n")
    assert b"allocated" not in out.stdout
    assert out.exit_code != 0
    if out.memory_peak_bytes is not None:
        assert out.memory_peak_bytes <= LIMITS.memory_mb * 1024 * 1024


@pytest.mark.slow
def test_memory_across_processes_is_bounded(backend):
    if not probe().cgroups.memory:
        pytest.skip("no writable memory cgroup: memory across processes is not bounded here")
    code = """
import os, time
kids = []
for i in range(4):
    pid = os.fork()
    if pid == 0:
        b = bytearray(700 << 20)
        print('allocated', i, flush=True)
        time.sleep(4)
        print('survived', i, flush=True)
        os._exit(0)
    kids.append(pid)
for k in kids:
    os.waitpid(k, 0)
"""
    limits = SandboxLimits(timeout_s=12, memory_mb=1024, max_pids=32, output_limit_bytes=10_000)
    out = run(backend, code, limits=limits)
    # Two children never hold 700 MiB each at once. The OOM killer may pick a holder that has
    # already allocated (then the next one allocates), so count the holders that lived on.
    assert out.stdout.count(b"survived") <= 1, out.stdout
    assert out.memory_peak_bytes is not None and out.memory_peak_bytes <= 1024 * 1024 * 1024
    _assert_no_leftovers(out)


@pytest.mark.parametrize("where", ["/tmp", "/root", "/dev/shm", "/var/tmp"])
def test_writing_outside_the_work_dir_leaves_the_host_untouched(backend, where):
    name = f"oracle-escape-{secrets.token_hex(6)}"
    code = f"""
try:
    with open({where!r} + '/{name}', 'w') as fh:
        fh.write('escaped')
    print('wrote')
except OSError as exc:
    print('refused', exc)
"""
    run(backend, code)
    assert not Path(where, name).exists()


def test_reading_shadow_and_a_canary_fails(backend, tmp_path_factory):
    token = secrets.token_hex(12)
    canary_dir = Path("/var/tmp") / f"oracle-canary-{token[:6]}"
    canary_dir.mkdir(mode=0o755)
    canary = canary_dir / "canary.txt"
    canary.write_text(token)
    canary.chmod(0o644)  # world-readable on purpose: only the sandbox may keep it out
    try:
        code = f"""
for path in ('/etc/shadow', {str(canary)!r}):
    try:
        print(open(path).read())
    except OSError as exc:
        print('refused', path, exc)
"""
        out = run(backend, code)
        assert token.encode() not in out.stdout + out.stderr
        assert b"root:" not in out.stdout
        assert out.stdout.count(b"refused") == 2
    finally:
        canary.unlink()
        canary_dir.rmdir()


def test_evaluator_secrets_do_not_leak(backend, monkeypatch):
    token = secrets.token_hex(16)
    monkeypatch.setenv("ORACLE_TEST_SECRET", token)
    code = """
import os
print(dict(os.environ))
for pid in (['self', str(os.getppid()), '1'] + [p for p in os.listdir('/proc') if p.isdigit()]
            if os.path.isdir('/proc') else []):
    try:
        print(pid, open('/proc/%s/environ' % pid, 'rb').read())
    except OSError as exc:
        print(pid, 'refused', exc)
"""
    out = run(backend, code)
    assert token.encode() not in out.stdout + out.stderr
    host_parent = os.getpid()
    assert f"/proc/{host_parent}/environ" not in out.stdout.decode()


def test_no_network_to_a_host_listener(backend):
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(5)
    tcp.settimeout(0.5)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.settimeout(0.5)
    code = f"""
import socket
try:
    s = socket.create_connection(('127.0.0.1', {tcp.getsockname()[1]}), timeout=1)
    s.sendall(b'hello'); print('tcp connected')
except OSError as exc:
    print('tcp refused', exc)
try:
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.sendto(b'hello', ('127.0.0.1', {udp.getsockname()[1]})); print('udp sent')
except OSError as exc:
    print('udp refused', exc)
"""
    try:
        out = run(backend, code)
        assert b"tcp connected" not in out.stdout
        with pytest.raises(socket.timeout):
            tcp.accept()
        with pytest.raises(socket.timeout):
            udp.recvfrom(100)
    finally:
        tcp.close()
        udp.close()


@pytest.mark.slow
def test_double_fork_daemon_does_not_outlive_the_run(backend):
    code = """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for _ in range(600):
            time.sleep(0.1)
    os._exit(0)
time.sleep(0.2)
print('parent done')
"""
    out = run(backend, code)
    assert b"parent done" in out.stdout
    _assert_no_leftovers(out)


def test_killing_the_parent_does_not_reach_the_host(backend):
    code = """
import os, signal
for target in (os.getppid(), -1, 1):
    try:
        os.kill(target, signal.SIGKILL)
    except OSError as exc:
        print('refused', target, exc)
"""
    bystander = subprocess.Popen(["sleep", "30"])
    try:
        run(backend, code)
        assert bystander.poll() is None, "a host process was killed"
    finally:
        bystander.kill()
        bystander.wait()


def test_one_gigabyte_on_stdout_is_cut(backend):
    start = time.monotonic()
    code = "import sys\nchunk = b'x' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.buffer.write(chunk)\n"
    out = run(backend, code, timeout_s=20)
    assert out.output_truncated
    assert len(out.stdout) <= LIMITS.output_limit_bytes
    assert time.monotonic() - start < 10


def test_filling_the_disk_stops_at_the_cap(backend):
    code = """
n = 0
try:
    for i in range(10000):
        with open('fill%d' % i, 'wb') as fh:
            for _ in range(16):
                fh.write(b'x' * (1 << 20)); n += 1 << 20
except OSError as exc:
    print('stopped', type(exc).__name__)
print('written', n >> 20)
"""
    out = run(backend, code, timeout_s=20)
    written = int(out.stdout.split(b"written")[-1].strip() or b"-1")
    assert 0 <= written <= LIMITS.disk_mb + 1
    assert b"stopped" in out.stdout


def test_ctypes_calls_into_libc_gain_nothing(backend):
    name = f"/tmp/oracle-ctypes-{secrets.token_hex(6)}"
    code = f"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
print('setuid', libc.setuid(0))
print('unshare', libc.unshare(0x10000000))
print('system', libc.system(b'touch {name}'))
"""
    out = run(backend, code)
    assert b"setuid -1" in out.stdout or b"setuid 0" not in out.stdout
    assert not Path(name).exists()
    _assert_no_leftovers(out)


def test_no_connection_to_host_unix_sockets(backend):
    token = secrets.token_hex(6)
    folder = Path("/tmp") / f"oracle-unix-{token}"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    path = str(folder / "host.sock")
    listeners = []
    for address in (path, f"\0oracle-abstract-{token}"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(address)
        s.listen(5)
        s.settimeout(0.5)
        listeners.append(s)
    os.chmod(path, 0o777)  # only the sandbox may keep the slot uid out, not file permissions
    code = f"""
import socket
for name, address in (('path', {path!r}), ('abstract', {chr(0) + 'oracle-abstract-' + token!r})):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(2)
        s.connect(address)
        s.sendall(b'hello')
        print(name, 'connected')
    except OSError as exc:
        print(name, 'refused', exc.errno)
"""
    try:
        out = run(backend, code)
        assert b"connected" not in out.stdout
        assert out.stdout.count(b"refused") == 2, out.stdout + out.stderr[-2000:]
        for s in listeners:
            with pytest.raises(socket.timeout):
                s.accept()
    finally:
        for s in listeners:
            s.close()
        Path(path).unlink(missing_ok=True)
        folder.rmdir()


KERNEL_SURFACE = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
CLONE_NEWUSER, SIGCHLD = 0x10000000, 17

def report(name, r):
    if r == 0 and name.startswith('clone'):
        os._exit(0)  # the new child: say nothing
    if r > 0 and name.startswith('clone'):
        os.waitpid(r, 0)
    print(name, r, ctypes.get_errno() if r < 0 else 0, flush=True)

params = ctypes.create_string_buffer(120)
report('io_uring_setup', libc.syscall(ctypes.c_long(425), ctypes.c_long(4), params))
report('unshare_newuser', libc.unshare(CLONE_NEWUSER))
report('unshare_all', libc.unshare(0x7E020000))
args = (ctypes.c_uint64 * 8)(CLONE_NEWUSER, 0, 0, 0, SIGCHLD, 0, 0, 0)  # struct clone_args
report('clone3_newuser', libc.syscall(ctypes.c_long(435), args, ctypes.c_long(64)))
report('clone_newuser', libc.syscall(ctypes.c_long(56), ctypes.c_long(CLONE_NEWUSER | SIGCHLD),
                                     ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(0)))
"""


def test_io_uring_and_nested_user_namespaces_are_refused(backend):
    if os.uname().machine != "x86_64":
        pytest.skip("the probe uses x86_64 syscall numbers for clone")
    out = run(backend, KERNEL_SURFACE)
    results = {line.split()[0]: line.split()[1:] for line in out.stdout.decode().splitlines()}
    assert set(results) == {"io_uring_setup", "unshare_newuser", "unshare_all", "clone3_newuser",
                            "clone_newuser"}, out.stderr[-2000:]
    assert results["io_uring_setup"] == ["-1", "1"]
    assert results["unshare_newuser"] == ["-1", "1"]
    assert results["unshare_all"] == ["-1", "1"]
    assert results["clone3_newuser"] == ["-1", "38"]
    assert results["clone_newuser"] == ["-1", "1"]
    _assert_no_leftovers(out)
