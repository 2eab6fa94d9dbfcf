"""``oracle view PATH...``: a local browser viewer over results, compare folders and an escalation store.

Optional extra ``serve`` (FastAPI, uvicorn; ``view`` adds pygments for highlighting). Every path is
read and checked before anything is served: a missing path or a file that is not results is an
error naming it, exit 2. ``--export FILE`` writes the same pages as one self-contained HTML file.
"""

from __future__ import annotations

import argparse
import sys

INSTALL_HINT = "oracle view needs the serve extra: pip install 'oracle-router[view]'"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("view", help="browse results, compare folders and escalations in a local browser page")
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="results (evaluate --json, batch output), task files (prompt and candidates), compare "
                        "folders, an escalation store")
    p.add_argument("--store", help="escalation store to show and answer (default: a SQLite PATH given, else "
                                   "$ORACLE_STORE or the config's, if that file exists and a result escalated)")
    p.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1); any other needs a bearer token, as oracle serve")
    p.add_argument("--token-file", help="file whose first line is the bearer token (default $ORACLE_SERVE_TOKEN)")
    p.add_argument("--no-open", action="store_true", help="do not open a browser")
    p.add_argument("--export", metavar="FILE", help="write the pages as one self-contained HTML file and exit")
    p.set_defaults(func=cmd_view)


def _detected_store(args: argparse.Namespace, catalog) -> str | None:  # type: ignore[no-untyped-def]
    """The store the escalation commands would use, when it exists and some result escalated."""
    from pathlib import Path

    from oracle.config.model import OracleConfig
    from oracle.escalation._location import resolve_store_path

    if not any(e.escalation for e in catalog.entries):
        return None
    path = resolve_store_path(None, OracleConfig.load(args.config))
    return path if path != ":memory:" and Path(path).is_file() else None


def cmd_view(args: argparse.Namespace) -> int:
    from oracle.view.sources import ViewInputError, load_catalog

    try:
        catalog = load_catalog(args.paths, store=args.store)
        if catalog.store_path is None and not args.export:
            found = _detected_store(args, catalog)
            if found:
                catalog = load_catalog(args.paths, store=found)
    except ViewInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.export:
        from oracle.view.export import write

        try:
            out = write(catalog, args.export)
        except OSError as exc:
            print(f"error: --export {args.export}: cannot write: {exc.strerror}", file=sys.stderr)
            return 2
        print(f"wrote {out} ({len(catalog.entries)} tasks, {len(catalog.compares)} comparisons)", file=sys.stderr)
        return 0
    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        print(f"error: {INSTALL_HINT}", file=sys.stderr)
        return 2
    from oracle.serve.listen import bind
    from oracle.serve.settings import ServeConfigError
    from oracle.view import server
    from oracle.view.app import create_app

    try:
        settings = server.settings(args.host, args.port, args.token_file)
        sock = bind(settings.host, settings.port)
    except ServeConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: --host {args.host} --port {args.port}: cannot listen: {exc.strerror}", file=sys.stderr)
        return 2
    host, port = sock.getsockname()[:2]
    url = f"http://{f'[{host}]' if ':' in host else host}:{port}/"
    token = settings.token.get_secret_value() if settings.token else None

    def started() -> None:
        print(url, flush=True)
        print(f"oracle view: {len(catalog.entries)} tasks, {len(catalog.compares)} comparisons"
              f"{', store ' + catalog.store_path if catalog.store_path else ''}; Ctrl-C to stop",
              file=sys.stderr, flush=True)
        if not args.no_open:
            import webbrowser

            webbrowser.open(url)

    ok = server.run(create_app(catalog, token=token), sock, log_level=args.log_level, on_started=started)
    return 0 if ok else 1
