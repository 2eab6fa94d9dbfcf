"""``oracle serve``: the HTTP JSON API (``oracle.serve``), with uvicorn; optional extra ``serve``."""

from __future__ import annotations

import argparse
import sys

from oracle.config.model import OracleConfig

INSTALL_HINT = "oracle serve needs the serve extra: pip install 'oracle-router[serve]'"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="serve the HTTP JSON API (127.0.0.1 unless given a token)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1); any other needs a bearer token")
    p.add_argument("--port", type=int, default=8780, help="port (default 8780; 0 picks a free one)")
    p.add_argument("--token-file", help="file whose first line is the bearer token "
                                        "(default: $ORACLE_SERVE_TOKEN, else no token)")
    p.add_argument("--max-body-mib", type=float, default=16.0, help="largest request body, MiB (default 16)")
    p.add_argument("--request-timeout", type=float, default=300.0, help="seconds per request (default 300)")
    p.add_argument("--concurrency", type=int, default=8, help="requests in flight (default 8); more get 503")
    p.add_argument("--max-connections", type=int, default=256,
                   help="open connections at once (default 256); one more is closed on arrival")
    p.add_argument("--body-timeout", type=float, default=30.0,
                   help="seconds to receive a request body (default 30); then 408")
    p.add_argument("--header-timeout", type=float, default=10.0,
                   help="seconds to receive a request head after its first byte (default 10); then closed")
    p.add_argument("--max-jobs", type=int, default=8, help="evaluations running at once (default 8)")
    p.add_argument("--max-batches", type=int, default=2, help="batch runs at once (default 2)")
    p.add_argument("--allow-in-process", action="store_true",
                   help="accept tasks with execution: in_process (verifier.allow_in_process must allow it too)")
    p.add_argument("--store", help="escalation store (default: $ORACLE_STORE, else escalation.store_path of the "
                                   "config, else .oracle/escalations.sqlite)")
    p.add_argument("--work-dir", help="where batch inputs and rows are kept (default: a temporary directory)")
    p.add_argument("--openapi", action="store_true", help="print the OpenAPI document and exit")
    from oracle.cli.budget_flags import add_budget_flags

    add_budget_flags(p)  # here: the ceiling of each request's budget (oracle/serve/settings.py)
    p.set_defaults(func=cmd_serve)


def _settings(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from pydantic import ValidationError

    from oracle.serve.settings import ServeConfigError, ServeSettings, read_token

    try:
        settings = ServeSettings(host=args.host, port=args.port, token=read_token(args.token_file),
                                 max_body_bytes=int(args.max_body_mib * 1024 * 1024),
                                 request_timeout_s=args.request_timeout, max_concurrency=args.concurrency,
                                 max_connections=args.max_connections, body_timeout_s=args.body_timeout,
                                 header_timeout_s=args.header_timeout,
                                 max_jobs=args.max_jobs, max_batches=args.max_batches,
                                 allow_in_process=args.allow_in_process, store_path=args.store,
                                 work_dir=args.work_dir, max_cost_usd=args.max_cost_usd, max_calls=args.max_calls)
    except ValidationError as exc:
        err = exc.errors()[0]
        option = {"max_body_bytes": "--max-body-mib", "request_timeout_s": "--request-timeout",
                  "max_concurrency": "--concurrency", "body_timeout_s": "--body-timeout",
                  "header_timeout_s": "--header-timeout"}.get(str(err["loc"][0]),
                                                              "--" + str(err["loc"][0]).replace("_", "-"))
        raise ServeConfigError(f"{option}: {err['msg']}") from None
    settings.check()
    return settings


def cmd_serve(args: argparse.Namespace) -> int:
    try:
        import fastapi  # noqa: F401
        import uvicorn
    except ImportError:
        print(f"error: {INSTALL_HINT}", file=sys.stderr)
        return 2
    from oracle.serve.app import create_app
    from oracle.serve.openapi_doc import build, render
    from oracle.serve.settings import ServeConfigError

    config = OracleConfig.load(args.config)
    try:
        settings = _settings(args)
    except ServeConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if settings.max_cost_usd is not None:  # a model with no known price: refused now, not at the first request
        from oracle.providers.budget import Budget, check_prices

        check_prices(config, Budget(max_cost_usd=settings.max_cost_usd))
    if args.openapi:
        sys.stdout.write(render(build(create_app(config, settings).fastapi)))  # type: ignore[attr-defined]
        return 0
    try:
        from oracle.serve.listen import bind

        sock = bind(settings.host, settings.port)
    except OSError as exc:
        print(f"error: --host {settings.host} --port {settings.port}: cannot listen: {exc.strerror}", file=sys.stderr)
        return 2
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host

    def ready() -> None:
        auth = "bearer token required" if settings.token else "no token: loopback only"
        print(f"oracle serve: listening on http://{shown}:{port} ({auth})", file=sys.stderr, flush=True)

    from oracle.serve.connections import MAX_HEAD_BYTES, protocol_class

    app = create_app(config, settings, on_ready=ready)
    http = protocol_class(max_connections=settings.max_connections, header_timeout_s=settings.header_timeout_s)
    server = uvicorn.Server(uvicorn.Config(app, lifespan="on", log_level=args.log_level, access_log=False,
                                           timeout_graceful_shutdown=10, http=http,
                                           h11_max_incomplete_event_size=MAX_HEAD_BYTES))
    server.run(sockets=[sock])
    return 0 if server.started else 1
