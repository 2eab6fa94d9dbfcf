"""launch.build_command / make_preexec used directly, as a caller holding extra fds does."""

from __future__ import annotations

import os
import subprocess

import pytest

from oracle.sandbox import SandboxLimits, probe, seccomp, slots
from oracle.sandbox.launch import build_command, make_preexec
from tests.plugins.sandbox_backends import on_each_namespace_backend

pytestmark = pytest.mark.sandbox

PYTHON = "/usr/bin/python3"


@on_each_namespace_backend
def test_pass_fds_reach_the_sandboxed_program_and_nothing_else_does(backend):
    layers = probe()
    kept_r, kept_w = os.pipe()
    other_r, other_w = os.pipe()
    os.set_inheritable(other_w, True)  # inheritable, yet not passed: must still not reach the program
    code = (f"import os\nos.write({kept_w}, b'through')\n"
            f"try:\n    os.write({other_w}, b'leak')\nexcept OSError as e:\n    print('closed', e.errno)\n")
    limits = SandboxLimits(timeout_s=20)
    slot = slots.claim_slot()
    filter_fd = seccomp.filter_fd() if backend == "bubblewrap" else None
    try:
        argv = build_command(backend, layers.available[backend], [PYTHON, "-I", "-c", code],
                             src_dir="/nonexistent", limits=limits, layers=layers, extra_ro=[],
                             pass_fds=[kept_w], seccomp_fd=filter_fd)
        hook = make_preexec(uid=slot.uid if slot else None, procs_files=[], limits=limits,
                            confinement=None, set_address_limit=False)
        res = subprocess.run(argv, capture_output=True, timeout=30, preexec_fn=hook, cwd="/",
                             env={"PATH": "/usr/bin:/bin"},
                             pass_fds=[kept_w] + ([filter_fd] if filter_fd is not None else []))
    finally:
        if slot:
            slot.release()
        if filter_fd is not None:
            os.close(filter_fd)
        os.close(kept_w)
        os.close(other_w)
    try:
        assert res.returncode == 0, res.stderr[-2000:]
        assert os.read(kept_r, 100) == b"through"
        assert b"closed 9" in res.stdout  # EBADF
        assert os.read(other_r, 100) == b""
    finally:
        os.close(kept_r)
        os.close(other_r)


def test_bubblewrap_without_a_seccomp_fd_is_refused():
    layers = probe()
    with pytest.raises(ValueError, match="seccomp_fd"):
        build_command("bubblewrap", "/usr/bin/bwrap", ["/usr/bin/true"], src_dir="/x",
                      limits=SandboxLimits(), layers=layers, extra_ro=[])
