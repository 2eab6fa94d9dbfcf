"""Classic BPF for seccomp: the assembler, the syscall numbers, and the per-run filter.

Why here, in the runtime: the host builds the sandbox-wide policy (sandbox/seccomp.py imports this
module), and the warm worker inside the sandbox builds a second, stricter filter that it installs on
itself before its first fork, so that every run's process inherits it. That per-run filter closes
the reach from a run to the worker it was forked from (and to anything else outside the run):

- resource limits may be changed for the caller only (``prlimit64`` with pid 0); scheduling is not
  changed at all, not even the caller's own (``setpriority``, ``sched_setaffinity``,
  ``sched_setscheduler``, ``sched_setparam``, ``sched_setattr``, ``ioprio_set``): a run that lowered
  its own priority could turn a timeout into "starved" (runs.py) whenever the machine is busy;
- no signal reaches a protected pid (the worker and every ancestor it could see, their process
  groups, and ``-1``, "everyone I may signal"); ``pidfd_open`` of a protected pid is refused, and
  ``pidfd_send_signal`` is refused outright (a pidfd can also come from opening ``/proc/<pid>``);
- System V IPC and POSIX message queues are refused: their objects outlive the process that made
  them (on a backend without an IPC namespace, even the oracle), so they could carry one run's data
  to the next.

Everything is refused with EPERM, an error a program can handle, never a kill. Pure standard library:
the runtime package runs inside the sandbox without the rest of ``oracle``.
"""

from __future__ import annotations

import ctypes
import platform
import struct

EPERM, EACCES, ENOSYS = 1, 13, 38
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
X32_BIT = 0x40000000

# Syscall numbers (asm/unistd_64.h for x86_64, asm-generic/unistd.h for aarch64; 424+ are shared).
_COMMON = {"pidfd_send_signal": 424, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
           "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
           "pidfd_open": 434, "clone3": 435, "mount_setattr": 442, "open_tree_attr": 467}
SYSCALLS = {
    "x86_64": {"socket": 41, "clone": 56, "ptrace": 101, "pivot_root": 155, "mount": 165,
               "umount2": 166, "init_module": 175, "delete_module": 176, "kexec_load": 246,
               "add_key": 248, "request_key": 249, "keyctl": 250, "unshare": 272,
               "perf_event_open": 298, "open_by_handle_at": 304, "setns": 308,
               "process_vm_readv": 310, "process_vm_writev": 311, "finit_module": 313,
               "kexec_file_load": 320, "bpf": 321, "userfaultfd": 323,
               "kill": 62, "tkill": 200, "tgkill": 234, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297,
               "prlimit64": 302, "setpriority": 141, "sched_setparam": 142, "sched_setscheduler": 144,
               "sched_setaffinity": 203, "sched_setattr": 314, "ioprio_set": 251, "ioprio_get": 252,
               "shmget": 29, "shmat": 30, "shmctl": 31, "shmdt": 67, "semget": 64, "semop": 65,
               "semctl": 66, "semtimedop": 220, "msgget": 68, "msgsnd": 69, "msgrcv": 70, "msgctl": 71,
               "mq_open": 240, "mq_unlink": 241, "mq_timedsend": 242, "mq_timedreceive": 243,
               "mq_notify": 244, "mq_getsetattr": 245, **_COMMON},
    "aarch64": {"socket": 198, "clone": 220, "ptrace": 117, "pivot_root": 41, "mount": 40,
                "umount2": 39, "init_module": 105, "delete_module": 106, "kexec_load": 104,
                "add_key": 217, "request_key": 218, "keyctl": 219, "unshare": 97,
                "perf_event_open": 241, "open_by_handle_at": 265, "setns": 268,
                "process_vm_readv": 270, "process_vm_writev": 271, "finit_module": 273,
                "kexec_file_load": 294, "bpf": 280, "userfaultfd": 282,
                "kill": 129, "tkill": 130, "tgkill": 131, "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240,
                "prlimit64": 261, "setpriority": 140, "sched_setparam": 118, "sched_setscheduler": 119,
                "sched_setaffinity": 122, "sched_setattr": 274, "ioprio_set": 30, "ioprio_get": 31,
                "shmget": 194, "shmat": 196, "shmctl": 195, "shmdt": 197, "semget": 190, "semop": 193,
                "semctl": 191, "semtimedop": 192, "msgget": 186, "msgsnd": 189, "msgrcv": 188, "msgctl": 187,
                "mq_open": 180, "mq_unlink": 181, "mq_timedsend": 182, "mq_timedreceive": 183,
                "mq_notify": 184, "mq_getsetattr": 185, **_COMMON},
}

SELF_ONLY = ("prlimit64",)
"""Allowed only with pid 0 (the caller)."""
SIGNALS = ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open")
"""Refused when their first argument is a protected pid (or process group)."""
RUN_DENIED = ("setpriority", "sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr",
              "ioprio_set", "pidfd_send_signal", "shmget", "shmat", "shmctl", "shmdt", "semget", "semop", "semctl",
              "semtimedop", "msgget", "msgsnd", "msgrcv", "msgctl", "mq_open", "mq_unlink", "mq_timedsend",
              "mq_timedreceive", "mq_notify", "mq_getsetattr")
"""Refused whatever their arguments, in every run."""

RET_ALLOW, RET_ERRNO, RET_KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000
LD_ABS, JEQ, JSET, RET = 0x20, 0x15, 0x45, 0x06
OFF_NR, OFF_ARCH, OFF_ARG0 = 0, 4, 16


def arg(i: int) -> int:
    """Offset of the low 32 bits of argument ``i`` in struct seccomp_data (both arches are little-endian;
    pid_t and int arguments are 32 bits, the kernel ignores the high word)."""
    return OFF_ARG0 + 8 * i


def assemble(prog: list[tuple]) -> bytes:
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
        out.append(struct.pack("<HBBI", code, jt, jf, k & 0xFFFFFFFF))
    return b"".join(out)


def run_filter(arch: str, protected: list[int]) -> bytes:
    """The per-run filter (module docstring). ``protected``: pids and negated process groups that no
    signal may reach; -1 is always protected."""
    nr = SYSCALLS[arch]
    targets = sorted({-1, *protected})
    prog: list[tuple] = [(LD_ABS, OFF_ARCH), (JEQ, AUDIT_ARCH[arch], None, "allow"), (LD_ABS, OFF_NR)]
    prog += [(JEQ, nr[name], "self_only", None) for name in SELF_ONLY]
    prog += [(JEQ, nr[name], "target", None) for name in SIGNALS]
    prog += [(JEQ, nr[name], "eperm", None) for name in RUN_DENIED]
    prog += [(RET, RET_ALLOW),
             ("label", "self_only"), (LD_ABS, arg(0)), (JEQ, 0, "allow", "eperm"),
             ("label", "target"), (LD_ABS, arg(0))]
    prog += [(JEQ, pid & 0xFFFFFFFF, "eperm", None) for pid in targets]
    prog += [("label", "allow"), (RET, RET_ALLOW),
             ("label", "eperm"), (RET, RET_ERRNO | EPERM)]
    return assemble(prog)


PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class Prepared:
    """A program held in a C buffer, so that ``apply()`` (after fork) allocates nothing."""

    def __init__(self, program: bytes) -> None:
        self._buf = ctypes.create_string_buffer(program, len(program))
        self._fprog = _SockFprog(len(program) // 8, ctypes.addressof(self._buf))
        self._ref = ctypes.byref(self._fprog)
        self._prctl = ctypes.CDLL(None, use_errno=True).prctl

    def apply(self) -> None:
        """no_new_privs, then the filter; raises OSError (the process must then not run anything)."""
        if self._prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(NO_NEW_PRIVS) failed")
        if self._prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, self._ref, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "seccomp filter failed")


def machine() -> str:
    return platform.machine()
