"""Programs that run inside the sandbox: one package, standard library only, relative imports.

Why a package that stands alone: the host imports it as ``oracle.sandbox.runtime`` (the seccomp
policy, the worker checks, the tests), and each worker gets a read-only copy at ``/src/runtime``
and starts ``python -E -s -m runtime.zygote`` from ``/src`` (workers.py), so the same files run in
the sandbox without the rest of ``oracle`` and without anything writable on ``sys.path``.
"""
