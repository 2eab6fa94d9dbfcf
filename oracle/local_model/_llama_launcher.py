"""Run ``llama_cpp.server`` with llama.cpp's "extra buffer types" (weight repacking, AMX) turned off.

Why: a default llama-cpp-python build compiles for the build machine's CPU. On CPUs that report
AMX but run under a hypervisor that does not enable the tile state (seen on this project's
Firecracker VMs), the AMX matmul path dies with SIGILL on the first multi-token prompt. The
extra buffer types are the only way into that path, and for a 135M model they buy nothing, so
we switch them off through the model-params default before the server builds its model. The
arguments are exactly those of ``python -m llama_cpp.server``.

It runs only in the server's own process (``oracle.local_model.server_command``), so the patch
never touches a process that imports oracle as a library.
"""

from __future__ import annotations


def _disable_extra_buffer_types() -> None:
    import llama_cpp.llama_cpp as bindings  # the ctypes module llama_cpp.llama calls into

    original = bindings.llama_model_default_params

    def params():  # returns a ctypes struct
        p = original()
        p.use_extra_bufts = False
        return p

    bindings.llama_model_default_params = params


def main() -> None:
    _disable_extra_buffer_types()
    from llama_cpp.server.__main__ import main as server_main

    server_main()


if __name__ == "__main__":
    main()
