"""``oracle sandbox check``: print the isolation layers found on this machine and the level in use.

Exit 0 when untrusted code can run with the configured backend, 2 when the configuration asks for
something this machine lacks (a named backend that is missing, or rlimits only without opt-in) or
names an interpreter the sandbox user cannot run. Each interpreter is shown as its path, or as
``unusable: <why>; <fix>`` / ``missing: <why>`` (as ``backends`` shows a missing layer); the
configured ``verifier.environment``, if any, as its interpreter and whether it is built yet.
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
    from oracle.strategies.verifier.strategy import interpreter_status

    cfg = OracleConfig.load(args.config).verifier
    report = probe().describe()
    report["configured_backend"] = cfg.backend
    report["interpreters"] = {}
    code = 0
    for lang in ("python", "javascript"):
        path, why = interpreter_status(lang, cfg)
        if path is not None:
            report["interpreters"][lang] = path
        elif lang == "javascript" and not cfg.node_executable and why and why.startswith("node is not installed"):
            report["interpreters"][lang] = f"missing: {why}"
        else:
            report["interpreters"][lang] = f"unusable: {why}"
            configured = cfg.python_executable or cfg.environment is not None if lang == "python" \
                else cfg.node_executable
            if configured:
                code = 2
                report.setdefault("errors", []).append(f"{lang}: {why}")
    if cfg.environment is not None:
        report["environment"] = _environment(cfg, report["interpreters"]["python"])
    try:
        sandbox = Sandbox(backend=cfg.backend, allow_weak_isolation=cfg.allow_weak_isolation,
                          limits=SandboxLimits(timeout_s=cfg.timeout_s, memory_mb=cfg.memory_mb,
                                               max_pids=cfg.max_pids, disk_mb=cfg.disk_mb))
        report["backend"] = sandbox.backend
        report["isolation_level"] = sandbox.isolation_level
        report["ready"] = True
        python = report["interpreters"]["python"]
        if args.run and python.startswith("/"):
            outcome = asyncio.run(sandbox.run(RunRequest(command=[python, "-I", "-c", "assert 1+1==2"])))
            report["trial_run"] = {"exit_code": outcome.exit_code, "duration_ms": round(outcome.duration_ms, 1)}
    except IsolationUnavailable as exc:
        report["ready"] = False
        report["error"] = str(exc)
        code = 2
    print(json.dumps(report, indent=2, sort_keys=True))
    for problem in ([report["error"]] if "error" in report else []) + report.get("errors", []):
        print(f"error: {problem}", file=sys.stderr)
    return code


def _environment(cfg, python: str) -> dict:
    """The configured environment as the verifier would use it, built or not (nothing is built)."""
    from oracle.errors import OracleError
    from oracle.strategies.verifier import environments

    if not python.startswith("/"):
        return {"ready": False, "error": python}
    try:
        record = environments.prepare(cfg.environment, "verifier.environment", cfg, python, build=False).record
    except OracleError as exc:
        return {"ready": False, "error": str(exc)}
    return {"ready": True, **{k: v for k, v in record.items() if k not in ("source", "seconds", "reused")}}
