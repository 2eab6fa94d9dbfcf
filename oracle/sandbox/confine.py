"""Landlock + seccomp confinement applied in the child just before exec (the fallback layer).

Everything the pre-exec hook needs (ctypes, libc, the prepared structs and the BPF program) is built
*before* fork: importing or allocating between fork and exec can deadlock on locks another thread
held at fork time. The hook itself only calls prepared functions.

Landlock restricts the filesystem (read/exec under the system directories, read/write under the
work dir, nothing else), on ABI 4+ TCP bind/connect, on ABI 6+ abstract unix sockets and signals
beyond the run's own processes. The seccomp filter of ``seccomp.py``
(no new sockets of any family, no io_uring, no nested namespaces, no ptrace...) comes last.
"""

from __future__ import annotations

import ctypes
import os
import platform
from dataclasses import dataclass, field

from oracle.sandbox.seccomp import PreparedFilter

_NR = {"x86_64": {"create": 444, "add": 445, "restrict": 446},
       "aarch64": {"create": 444, "add": 445, "restrict": 446}}
PR_SET_NO_NEW_PRIVS = 38
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
LANDLOCK_RULE_NET_PORT = 2

# Filesystem access rights by ABI version (bit masks from linux/landlock.h).
_FS_ABI1 = (1 << 13) - 1          # execute .. make_sym
_FS_REFER = 1 << 13               # ABI 2
_FS_TRUNCATE = 1 << 14            # ABI 3
_FS_IOCTL_DEV = 1 << 15           # ABI 5
_READ_EXEC = (1 << 0) | (1 << 2) | (1 << 3)  # execute, read_file, read_dir
_NET_BIND, _NET_CONNECT = 1, 2
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1, 2  # ABI 6: no abstract unix sockets or signals outside
_FILE_RIGHTS = (1 << 0) | (1 << 1) | (1 << 2) | _FS_TRUNCATE | _FS_IOCTL_DEV

_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long
_prctl = _libc.prctl


_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
MS_NOSUID, MS_NODEV = 2, 4
MNT_DETACH = 2


def mount_tmpfs(path: str, size_bytes: int, uid: int | None) -> bool:
    """Mount a size-capped tmpfs on ``path`` (root only): the disk cap of the non-namespace backends."""
    opts = f"size={size_bytes},mode=0700" + (f",uid={uid},gid={uid}" if uid is not None else "")
    return _libc.mount(b"tmpfs", path.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, opts.encode()) == 0


def unmount(path: str) -> None:
    _libc.umount2(path.encode(), MNT_DETACH)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when unsupported."""
    nr = _NR.get(platform.machine())
    if nr is None:
        return 0
    v = _syscall(ctypes.c_long(nr["create"]), None, ctypes.c_size_t(0),
                 ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    return int(v) if v > 0 else 0


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


@dataclass
class PreparedConfinement:
    """Buffers and path fds prepared in the parent; ``apply()`` runs in the child."""

    abi: int
    read_paths: list[str]
    write_paths: list[str]
    tree_paths: list[str] = field(default_factory=list)
    """Read/write like ``write_paths``, plus moving entries between directories (REFER, ABI 2+):
    a repository tree, where builds and candidates rename across its subdirectories."""

    def __post_init__(self) -> None:
        arch = platform.machine()
        self._nr = _NR[arch]
        fs = _FS_ABI1 | (_FS_REFER if self.abi >= 2 else 0) | (_FS_TRUNCATE if self.abi >= 3 else 0) \
            | (_FS_IOCTL_DEV if self.abi >= 5 else 0)
        self._fs_all = fs
        self._attr = _RulesetAttr(fs, (_NET_BIND | _NET_CONNECT) if self.abi >= 4 else 0,
                                  (_SCOPE_ABSTRACT_UNIX | _SCOPE_SIGNAL) if self.abi >= 6 else 0)
        self._attr_size = 24 if self.abi >= 6 else 16 if self.abi >= 4 else 8
        self._rules = []
        for path, access in [(p, _READ_EXEC) for p in self.read_paths] + \
                            [(p, fs & ~_FS_REFER) for p in self.write_paths] + \
                            [(p, fs) for p in self.tree_paths]:
            if os.path.isdir(path):
                self._rules.append((path, access))
            elif os.path.exists(path):  # files take file rights only, else the kernel says EINVAL
                self._rules.append((path, access & _FILE_RIGHTS))
        self._filter = PreparedFilter()
        self._fds: list[int] = []

    def open_paths(self) -> None:
        """Open the allowed paths (O_PATH) in the parent; the child only passes the fds."""
        self._fds = [os.open(p, os.O_PATH | os.O_CLOEXEC) for p, _ in self._rules]
        self._beneath = [_PathBeneath(access & self._fs_all, fd)
                         for (_, access), fd in zip(self._rules, self._fds)]

    def close_paths(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds = []

    def apply(self) -> None:
        """In the child: no_new_privs, Landlock ruleset, the seccomp filter. Raises on failure."""
        if _prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(NO_NEW_PRIVS) failed")
        ruleset = _syscall(ctypes.c_long(self._nr["create"]), ctypes.byref(self._attr),
                           ctypes.c_size_t(self._attr_size),
                           ctypes.c_uint32(0))
        if ruleset < 0:
            raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
        for rule in self._beneath:
            if _syscall(ctypes.c_long(self._nr["add"]), ctypes.c_int(ruleset),
                        ctypes.c_int(LANDLOCK_RULE_PATH_BENEATH), ctypes.byref(rule),
                        ctypes.c_uint32(0)) != 0:
                raise OSError(ctypes.get_errno(), "landlock_add_rule failed")
        if _syscall(ctypes.c_long(self._nr["restrict"]), ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
        os.close(ruleset)
        self._filter.apply()
