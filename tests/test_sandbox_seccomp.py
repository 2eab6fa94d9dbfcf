"""The seccomp policy: the BPF builder run through a BPF interpreter, and the policy in every backend.

The interpreter below executes the classic-BPF subset the builder emits (absolute loads, JEQ/JSET/
JGE/JA, RET) against a seccomp_data record, so each decision is checked on the real bytes. The
behaviour tests then run the same calls inside every backend this machine has and compare.
"""

from __future__ import annotations

import asyncio
import struct

import pytest

from oracle.sandbox import RunRequest, Sandbox, SandboxLimits, seccomp
from tests.plugins.sandbox_backends import CONTAINMENT_BACKENDS, use_backend

ALLOW, KILL = seccomp.RET_ALLOW, seccomp.RET_KILL_PROCESS
ERRNO = seccomp.RET_ERRNO
SIGCHLD = 17
FORK_FLAGS = 0x01200000 | SIGCHLD          # CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD
THREAD_FLAGS = 0x003D0F00                  # glibc pthread_create via clone


def run_bpf(program: bytes, nr: int, arch: int, args: tuple[int, ...] = ()) -> int:
    """Execute ``program`` on a seccomp_data record; returns the filter's verdict."""
    args = tuple(args) + (0,) * (6 - len(args))
    data = struct.pack("<iIQ6Q", nr, arch, 0, *[a & (2**64 - 1) for a in args])
    insns = [struct.unpack("<HBBI", program[i:i + 8]) for i in range(0, len(program), 8)]
    acc, pc = 0, 0
    for _ in range(len(insns) + 1):
        code, jt, jf, k = insns[pc]
        pc += 1
        if code == 0x20:                       # ld w abs
            acc = struct.unpack_from("<I", data, k)[0]
        elif code == 0x15:                     # jeq k
            pc += jt if acc == k else jf
        elif code == 0x45:                     # jset k
            pc += jt if acc & k else jf
        elif code == 0x35:                     # jge k
            pc += jt if acc >= k else jf
        elif code == 0x05:                     # ja
            pc += k
        elif code == 0x06:                     # ret k
            return k
        else:
            raise AssertionError(f"unexpected BPF opcode {code:#x}")
    raise AssertionError("program ran off its end")


@pytest.mark.parametrize("arch", sorted(seccomp.SYSCALLS))
def test_filter_decisions(arch):
    prog = seccomp.build_filter(arch)
    audit = seccomp.AUDIT_ARCH[arch]
    nr = seccomp.SYSCALLS[arch]
    assert len(prog) % 8 == 0 and len(prog) // 8 < 100

    def verdict(name_or_nr, *args):
        n = nr[name_or_nr] if isinstance(name_or_nr, str) else name_or_nr
        return run_bpf(prog, n, audit, args)

    for domain in (1, 2, 10, 16, 17, 40, 38):  # unix, inet, inet6, netlink, packet, vsock, alg
        assert verdict("socket", domain, 1, 0) == ERRNO | seccomp.EACCES
    for name in seccomp.DENIED:
        assert verdict(name, 0, 0) == ERRNO | seccomp.EPERM, name
    assert verdict("clone3", 0, 88) == ERRNO | seccomp.ENOSYS
    assert verdict("clone", FORK_FLAGS) == ALLOW
    assert verdict("clone", THREAD_FLAGS) == ALLOW
    for flag in (0x10000000, 0x20000, 0x02000000, 0x04000000, 0x08000000, 0x20000000, 0x40000000):
        assert verdict("clone", FORK_FLAGS | flag) == ERRNO | seccomp.EPERM, hex(flag)
    socketpair = {"x86_64": 53, "aarch64": 199}[arch]
    ordinary = {"x86_64": (0, 1, 9, 56 - 1, 57, 59, 231, 257, 435 - 1, 439),
                "aarch64": (63, 64, 222, 221, 93, 56, 435 - 1, 439)}[arch]
    for n in (socketpair, *ordinary):
        assert verdict(n, 1, 1, 0) == ALLOW, n
    foreign = 0x40000003  # AUDIT_ARCH_I386
    assert run_bpf(prog, 1, foreign) == KILL
    if arch == "x86_64":
        assert verdict(0x40000000 | 39) == ERRNO | seccomp.ENOSYS  # x32 getpid
        assert verdict(0x40000000 | nr["unshare"], 0x10000000) == ERRNO | seccomp.ENOSYS


def test_unknown_arch_has_no_policy():
    with pytest.raises(ValueError):
        seccomp.build_filter("mips")


@pytest.mark.parametrize("arch", sorted(seccomp.SYSCALLS))
def test_kafel_policy_refuses_what_the_filter_refuses(arch):
    policy = seccomp.kafel_policy(arch)
    nr = seccomp.SYSCALLS[arch]
    allow_block = policy.split("ALLOW {", 1)[1]
    for name in (*seccomp.DENIED, "socket", "clone3"):
        assert f"SYSCALL[{nr[name]}]" in policy.split("ALLOW {", 1)[0], name
        assert f"SYSCALL[{nr[name]}]," not in allow_block and f"SYSCALL[{nr[name]}] " not in allow_block
    assert f"SYSCALL[{nr['clone']}]" in allow_block  # allowed once the flag check passed
    assert "DEFAULT ERRNO(38)" in policy


# --- the policy inside every backend -------------------------------------------------------------

PYTHON = "/usr/bin/python3"
LIMITS = SandboxLimits(timeout_s=20, memory_mb=1024, max_pids=64, output_limit_bytes=200_000)


def run(backend: str, command: list[str], **kw):
    return asyncio.run(Sandbox(backend=backend, limits=LIMITS).run(RunRequest(command=command, **kw)))


@pytest.fixture(params=CONTAINMENT_BACKENDS)
def backend(request) -> str:
    return use_backend(request.param)


def test_every_denied_syscall_answers_eperm_inside(backend):
    """All arguments -1: without the filter most of these fail otherwise (EBADF, EINVAL, ESRCH...)."""
    nr = seccomp.SYSCALLS[__import__("platform").machine()]
    calls = {name: nr[name] for name in seccomp.DENIED}
    code = f"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
for name, n in {calls!r}.items():
    r = libc.syscall(ctypes.c_long(n), *[ctypes.c_long(-1)] * 6)
    print(name, r, ctypes.get_errno() if r < 0 else 0)
"""
    out = run(backend, [PYTHON, "-I", "-c", code])
    lines = dict(line.split(" ", 1) for line in out.stdout.decode().splitlines())
    assert set(lines) == set(calls), out.stderr[-2000:]
    wrong = {name: v for name, v in lines.items() if v != "-1 1"}
    assert not wrong, f"{backend}: not refused with EPERM: {wrong}"


def test_python_still_does_ordinary_work(backend):
    code = r"""
import concurrent.futures, multiprocessing, os, socket, subprocess, threading, json
res = {}
t = threading.Thread(target=lambda: res.setdefault('thread', True)); t.start(); t.join()
with concurrent.futures.ThreadPoolExecutor(4) as ex:
    res['pool'] = sum(ex.map(lambda x: x * x, range(10)))
pid = os.fork()
if pid == 0:
    os._exit(3)
res['fork'] = os.waitpid(pid, 0)[1] >> 8
res['subprocess'] = subprocess.run(['/usr/bin/python3', '-c', 'print(6*7)'],
                                   capture_output=True).stdout.decode().strip()
a, b = socket.socketpair(); a.sendall(b'x'); res['socketpair'] = b.recv(1).decode()
r, w = os.pipe(); os.write(w, b'p'); res['pipe'] = os.read(r, 1).decode()
ctx = multiprocessing.get_context('fork')
parent, child = ctx.Pipe()
p = ctx.Process(target=lambda c: c.send(sum(range(5))), args=(child,)); p.start(); res['mp'] = parent.recv(); p.join()
print(json.dumps(res))
"""
    out = run(backend, [PYTHON, "-I", "-c", code])
    assert out.exit_code == 0, out.stderr[-3000:]
    assert out.stdout.strip() == (b'{"thread": true, "pool": 285, "fork": 3, "subprocess": "42", '
                                  b'"socketpair": "x", "pipe": "p", "mp": 10}')


def test_node_starts_with_threads_and_children(backend):
    code = """
const { Worker } = require('worker_threads');
const cp = require('child_process');
const w = new Worker('require("worker_threads").parentPort.postMessage(6 * 7)', { eval: true });
w.on('message', (m) => {
  const child = cp.spawnSync('/usr/bin/node', ['--openssl-config=/dev/null', '-e', 'console.log(1 + 1)']);
  require('fs').writeFileSync('probe.txt', 'x');
  require('fs').readFile('probe.txt', (err) => {
    console.log(JSON.stringify({ worker: m, child: child.stdout.toString().trim(), fsAsync: !err }));
  });
});
"""
    # (Landlock leaves /etc out, where node looks for openssl.cnf by default)
    out = run(backend, ["/usr/bin/node", "--openssl-config=/dev/null", "-e", code], address_limit=False)
    assert out.exit_code == 0, out.stderr[-3000:]
    assert out.stdout.strip() == b'{"worker":42,"child":"2","fsAsync":true}'


def test_rlimits_backend_applies_the_filter_too(monkeypatch):
    """The weak backend (explicit opt-in only) still gets the filter from the pre-exec hook."""
    monkeypatch.setenv("ORACLE_ALLOW_WEAK_SANDBOX", "1")
    sandbox = Sandbox(backend="rlimits", limits=LIMITS, allow_weak_isolation=True)
    code = """
import ctypes, socket
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
print('unshare', libc.unshare(0x10000000), ctypes.get_errno())
try:
    socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); print('socket made')
except OSError as exc:
    print('socket refused', exc.errno)
"""
    out = asyncio.run(sandbox.run(RunRequest(command=[PYTHON, "-I", "-c", code])))
    assert out.stdout.split(b"\n")[:2] == [b"unshare -1 1", b"socket refused 13"], out.stderr[-2000:]
