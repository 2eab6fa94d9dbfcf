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

import ctypes
import functools
import os
import platform
import struct

EPERM, EACCES, ENOSYS = 1, 13, 38
CLONE_NEW_FLAGS = 0x7E020000
"""CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET."""
X32_BIT = 0x40000000
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}

# Syscall numbers (asm/unistd_64.h for x86_64, asm-generic/unistd.h for aarch64; 425+ are shared).
_COMMON = {"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428,
           "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
           "clone3": 435, "mount_setattr": 442, "open_tree_attr": 467}
SYSCALLS = {
    "x86_64": {"socket": 41, "clone": 56, "ptrace": 101, "pivot_root": 155, "mount": 165,
               "umount2": 166, "init_module": 175, "delete_module": 176, "kexec_load": 246,
               "add_key": 248, "request_key": 249, "keyctl": 250, "unshare": 272,
               "perf_event_open": 298, "open_by_handle_at": 304, "setns": 308,
               "process_vm_readv": 310, "process_vm_writev": 311, "finit_module": 313,
               "kexec_file_load": 320, "bpf": 321, "userfaultfd": 323, **_COMMON},
    "aarch64": {"socket": 198, "clone": 220, "ptrace": 117, "pivot_root": 41, "mount": 40,
                "umount2": 39, "init_module": 105, "delete_module": 106, "kexec_load": 104,
                "add_key": 217, "request_key": 218, "keyctl": 219, "unshare": 97,
                "perf_event_open": 241, "open_by_handle_at": 265, "setns": 268,
                "process_vm_readv": 270, "process_vm_writev": 271, "finit_module": 273,
                "kexec_file_load": 294, "bpf": 280, "userfaultfd": 282, **_COMMON},
}
DENIED = ("unshare", "setns", "io_uring_setup", "io_uring_enter", "io_uring_register", "ptrace",
          "process_vm_readv", "process_vm_writev", "bpf", "perf_event_open", "userfaultfd",
          "keyctl", "add_key", "request_key", "mount", "umount2", "pivot_root", "open_tree",
          "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
          "open_tree_attr", "kexec_load", "kexec_file_load", "init_module", "finit_module",
          "delete_module", "open_by_handle_at")
"""Refused with EPERM whatever their arguments."""
KAFEL_ALLOW_UP_TO = 1024
"""nsjail's kafel policy allows numbers below this one by one (x32 numbers stay refused)."""

RET_ALLOW, RET_ERRNO, RET_KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000
_LD_ABS, _JEQ, _JSET, _RET = 0x20, 0x15, 0x45, 0x06
_OFF_NR, _OFF_ARCH, _OFF_ARG0 = 0, 4, 16


def _assemble(prog: list[tuple]) -> bytes:
    """Instructions are (code, k) or (code, k, true_label, false_label); ("label", name) marks a spot."""
    labels, pos = {}, 0
    for ins in prog:
        if ins[0] == "label":
            labels[ins[1]] = pos
        else:
            pos += 1
    out, pos = [], 0
    for ins in prog:
        if ins[0] == "label":
            continue
        pos += 1
        code, k = ins[0], ins[1]
        jt = jf = 0
        if len(ins) == 4:
            jt = 0 if ins[2] is None else labels[ins[2]] - pos
            jf = 0 if ins[3] is None else labels[ins[3]] - pos
            if not (0 <= jt <= 255 and 0 <= jf <= 255):
                raise ValueError(f"BPF jump out of range: {ins}")
        out.append(struct.pack("<HBBI", code, jt, jf, k))
    return b"".join(out)


def build_filter(arch: str) -> bytes:
    """The policy above as a classic BPF program (struct sock_filter array) for ``arch``."""
    if arch not in SYSCALLS:
        raise ValueError(f"no seccomp policy for architecture {arch!r}")
    nr = SYSCALLS[arch]
    prog: list[tuple] = [
        (_LD_ABS, _OFF_ARCH),
        (_JEQ, AUDIT_ARCH[arch], None, "kill"),
        (_LD_ABS, _OFF_NR),
    ]
    if arch == "x86_64":
        prog.append((_JSET, X32_BIT, "enosys", None))
    prog += [(_JEQ, nr["socket"], "eacces", None),
             (_JEQ, nr["clone"], "clone", None),
             (_JEQ, nr["clone3"], "enosys", None)]
    prog += [(_JEQ, nr[name], "eperm", None) for name in DENIED]
    prog += [(_RET, RET_ALLOW),
             ("label", "clone"), (_LD_ABS, _OFF_ARG0),  # flags: args[0] on both arches, low word
             (_JSET, CLONE_NEW_FLAGS, "eperm", None),
             (_RET, RET_ALLOW),
             ("label", "eperm"), (_RET, RET_ERRNO | EPERM),
             ("label", "eacces"), (_RET, RET_ERRNO | EACCES),
             ("label", "enosys"), (_RET, RET_ERRNO | ENOSYS),
             ("label", "kill"), (_RET, RET_KILL_PROCESS)]
    return _assemble(prog)


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


PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
_libc = ctypes.CDLL(None, use_errno=True)
_prctl = _libc.prctl


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class PreparedFilter:
    """The program in a C buffer, built before fork; ``apply()`` runs in the child (no allocation)."""

    def __init__(self, program: bytes | None = None) -> None:
        data = filter_bytes() if program is None else program
        self._buf = ctypes.create_string_buffer(data, len(data))
        self._fprog = _SockFprog(len(data) // 8, ctypes.addressof(self._buf))
        self._ref = ctypes.byref(self._fprog)

    def apply(self) -> None:
        """no_new_privs, then the filter; raises OSError (the child then never execs)."""
        if _prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(NO_NEW_PRIVS) failed")
        if _prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, self._ref, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "seccomp filter failed")
