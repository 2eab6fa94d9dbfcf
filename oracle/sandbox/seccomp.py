"""The one seccomp policy every backend applies, as raw BPF and as a kafel policy for nsjail.

Why a filter on top of namespaces and Landlock: some kernel interfaces step around both. io_uring
opens sockets and files without the socket()/open() syscalls a filter or LSM hook sees; nested user
namespaces hand the candidate a fresh set of capabilities over a large kernel attack surface; unix
sockets reach host services (abstract ones ignore the filesystem entirely). The policy:

- socket(), any address family -> EACCES. No sandboxed program needs a new socket: the runtime
  hands it pre-connected ones, and socketpair() stays allowed (multiprocessing uses it).
- clone3 -> ENOSYS (its flags live in memory a filter cannot read; glibc then falls back to
  clone); clone with any CLONE_NEW* flag -> EPERM; plain fork and threads are untouched.
- unshare, setns, io_uring_*, ptrace, process_vm_readv/writev, bpf, perf_event_open, userfaultfd,
  keyctl/add_key/request_key, mount and the new mount API, pivot_root, kexec, module loading,
  open_by_handle_at -> EPERM.
- a foreign architecture (i386 via int 0x80) kills the process; x32 numbers (bit 30 on x86_64)
  get ENOSYS, which is also what a kernel without x32 answers.

``filter_bytes()`` is the program for this machine; ``build_filter(arch)`` is pure and tested by
running it through a small BPF interpreter in tests/test_sandbox_seccomp.py.
"""

from __future__ import annotations

import functools
import os
import platform

from oracle.sandbox.runtime.bpf import (AUDIT_ARCH, EACCES, ENOSYS, EPERM, JEQ, JSET, LD_ABS, OFF_ARCH,
                                                  OFF_ARG0, OFF_NR, RET, RET_ALLOW, RET_ERRNO, RET_KILL_PROCESS,
                                                  SYSCALLS, X32_BIT, Prepared, assemble)

CLONE_NEW_FLAGS = 0x7E020000
"""CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET."""
DENIED = ("unshare", "setns", "io_uring_setup", "io_uring_enter", "io_uring_register", "ptrace",
          "process_vm_readv", "process_vm_writev", "bpf", "perf_event_open", "userfaultfd",
          "keyctl", "add_key", "request_key", "mount", "umount2", "pivot_root", "open_tree",
          "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
          "open_tree_attr", "kexec_load", "kexec_file_load", "init_module", "finit_module",
          "delete_module", "open_by_handle_at")
"""Refused with EPERM whatever their arguments."""
KAFEL_ALLOW_UP_TO = 1024
"""nsjail's kafel policy allows numbers below this one by one (x32 numbers stay refused)."""


def build_filter(arch: str) -> bytes:
    """The policy above as a classic BPF program (struct sock_filter array) for ``arch``."""
    if arch not in SYSCALLS:
        raise ValueError(f"no seccomp policy for architecture {arch!r}")
    nr = SYSCALLS[arch]
    prog: list[tuple] = [
        (LD_ABS, OFF_ARCH),
        (JEQ, AUDIT_ARCH[arch], None, "kill"),
        (LD_ABS, OFF_NR),
    ]
    if arch == "x86_64":
        prog.append((JSET, X32_BIT, "enosys", None))
    prog += [(JEQ, nr["socket"], "eacces", None),
             (JEQ, nr["clone"], "clone", None),
             (JEQ, nr["clone3"], "enosys", None)]
    prog += [(JEQ, nr[name], "eperm", None) for name in DENIED]
    prog += [(RET, RET_ALLOW),
             ("label", "clone"), (LD_ABS, OFF_ARG0),  # flags: args[0] on both arches, low word
             (JSET, CLONE_NEW_FLAGS, "eperm", None),
             (RET, RET_ALLOW),
             ("label", "eperm"), (RET, RET_ERRNO | EPERM),
             ("label", "eacces"), (RET, RET_ERRNO | EACCES),
             ("label", "enosys"), (RET, RET_ERRNO | ENOSYS),
             ("label", "kill"), (RET, RET_KILL_PROCESS)]
    return assemble(prog)


@functools.lru_cache(maxsize=1)
def filter_bytes() -> bytes:
    """The BPF program for this machine (raises ValueError on an architecture without a policy)."""
    return build_filter(platform.machine())


def kafel_policy(arch: str) -> str:
    """The same policy in kafel (nsjail ``--seccomp_string``), by number so kafel's tables don't matter.

    Default-deny by construction: only numbers below KAFEL_ALLOW_UP_TO are allowed, so the x32
    range (and anything else outside the table) gets ENOSYS; kafel kills a foreign arch itself.
    """
    nr = SYSCALLS[arch]
    denied = {nr[name] for name in DENIED} | {nr["socket"], nr["clone3"]}
    allowed = ", ".join(f"SYSCALL[{n}]" for n in range(KAFEL_ALLOW_UP_TO) if n not in denied)
    eperm = ", ".join(f"SYSCALL[{nr[name]}]" for name in DENIED)
    return (
        "POLICY oracle_sandbox { "
        f"ERRNO({EACCES}) {{ SYSCALL[{nr['socket']}] }}, "
        f"ERRNO({ENOSYS}) {{ SYSCALL[{nr['clone3']}] }}, "
        f"ERRNO({EPERM}) {{ clone(flags) {{ (flags & {CLONE_NEW_FLAGS:#x}) != 0 }}, {eperm} }}, "
        f"ALLOW {{ {allowed} }} "
        f"}} USE oracle_sandbox DEFAULT ERRNO({ENOSYS})")


def filter_fd() -> int:
    """A fresh read fd holding the program (bubblewrap ``--seccomp FD`` reads it to EOF and closes it).

    The caller passes it in ``pass_fds`` and closes its copy once the process is started.
    """
    data = filter_bytes()
    r, w = os.pipe()
    try:
        os.write(w, data)  # a few hundred bytes: far below the pipe buffer, never blocks
    finally:
        os.close(w)
    return r


class PreparedFilter(Prepared):
    """The sandbox-wide program in a C buffer, built before fork; ``apply()`` runs in the child."""

    def __init__(self, program: bytes | None = None) -> None:
        super().__init__(filter_bytes() if program is None else program)
