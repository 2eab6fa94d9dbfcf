"""``oracle sandbox check``: print the isolation layers found on this machine and the level in use.

Exit 0 when untrusted code can run with the configured backend, 2 when the configuration asks for
something this machine lacks (a named backend that is missing, or rlimits only without opt-in).
"""

from __future__ import annotations

import argparse
import json
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("sandbox", help="inspect the code sandbox")
    sub = parser.add_subparsers(dest="sandbox_command", metavar="SUBCOMMAND")
    sub.required = True
    check = sub.add_parser("check", help="probe the isolation layers and print the isolation level")
    check.add_argument("--run", action="store_true",
                       help="also run `assert 1+1==2` in the sandbox and report the time it took")
    check.set_defaults(func=_check)


def _check(args: argparse.Namespace) -> int:
    import asyncio

    from oracle.config.model import OracleConfig
    from oracle.errors import IsolationUnavailable
    from oracle.sandbox import RunRequest, Sandbox, SandboxLimits, probe
    from oracle.strategies.verifier.strategy import find_interpreter

    cfg = OracleConfig.load(args.config).verifier
    report = probe().describe()
    report["configured_backend"] = cfg.backend
    report["interpreters"] = {lang: find_interpreter(lang, cfg) for lang in ("python", "javascript")}
    code = 0
    try:
        sandbox = Sandbox(backend=cfg.backend, allow_weak_isolation=cfg.allow_weak_isolation,
                          limits=SandboxLimits(timeout_s=cfg.timeout_s, memory_mb=cfg.memory_mb,
                                               max_pids=cfg.max_pids, disk_mb=cfg.disk_mb))
        report["backend"] = sandbox.backend
        report["isolation_level"] = sandbox.isolation_level
        report["ready"] = True
        python = report["interpreters"]["python"]
        if args.run and python:
            outcome = asyncio.run(sandbox.run(RunRequest(command=[python, "-I", "-c", "assert 1+1==2"])))
            report["trial_run"] = {"exit_code": outcome.exit_code, "duration_ms": round(outcome.duration_ms, 1)}
    except IsolationUnavailable as exc:
        report["ready"] = False
        report["error"] = str(exc)
        code = 2
    print(json.dumps(report, indent=2, sort_keys=True))
    if code:
        print(f"error: {report['error']}", file=sys.stderr)
    return code
