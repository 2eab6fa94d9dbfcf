"""The ``oracle`` command line: a thin layer over the library.

Exit codes: 0 success, 1 internal error (a bug: please report it), 2 bad input (task file,
config, arguments, an escalation id or answer that does not fit, a corrupt escalation store, a
batch output locked by another process; a run stopped because the model endpoint on this machine
is not running), 3 evaluation finished but a task failed (``evaluate``, unless
``--allow-failures``) or, with ``--strict``, at least one task is not ok (failed, pending,
unparsed...), or ``oracle check`` found a broken test. JSON goes to stdout, logs to stderr.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from oracle._internal.version import __version__

EXIT_OK, EXIT_INTERNAL, EXIT_BAD_INPUT, EXIT_NOT_OK = 0, 1, 2, 3
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")

# Each command group lives in its own module under oracle/cli/ and exposes register().
COMMAND_MODULES = (
    "oracle.cli.core",
    "oracle.cli.sandbox",
    "oracle.cli.env",
    "oracle.cli.model",
    "oracle.cli.escalations",
    "oracle.cli.batch",
    "oracle.cli.compare",
    "oracle.cli.rubric",
    "oracle.cli.serve",
    "oracle.cli.view",
    "oracle.cli.calibrate",
    "oracle.cli.routes",
    "oracle.cli.check",
    "oracle.cli.imports",
    "oracle.cli.schema",
    "oracle.cli.init",
)
COMMANDS = {
    "route": "oracle.cli.core", "evaluate": "oracle.cli.core", "config": "oracle.cli.core",
    "sandbox": "oracle.cli.sandbox", "env": "oracle.cli.env", "model": "oracle.cli.model",
    "escalations": "oracle.cli.escalations", "resume": "oracle.cli.escalations",
    "batch": "oracle.cli.batch",
    "compare": "oracle.cli.compare",
    "rubric": "oracle.cli.rubric",
    "serve": "oracle.cli.serve",
    "view": "oracle.cli.view",
    "calibrate": "oracle.cli.calibrate",
    "routes": "oracle.cli.routes",
    "check": "oracle.cli.check",
    "import": "oracle.cli.imports",
    "schema": "oracle.cli.schema",
    "init": "oracle.cli.init",
}
"""Top-level command -> the module that registers it. A run imports only the module of the command
it names (``oracle route`` never imports the batch engine, the providers or the sandbox); help and
unknown commands import them all. tests/test_startup.py checks the table against the modules."""
_GLOBAL_OPTIONS_WITH_VALUE = ("--config", "--log-format", "--log-level")
"""Global options that take a value: ``_command_in`` skips the value when they come first."""
_SILENT_COMMANDS = frozenset({"route", "config"})
"""Commands that run no code that logs: they skip configuring logging (and importing structlog, its
renderer, which would cost more than the rest of ``oracle route``). tests/test_startup.py checks
they stay silent."""


def _command_in(argv: Sequence[str]) -> str | None:
    """The first positional argument (the command), skipping the global options and their values."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in _GLOBAL_OPTIONS_WITH_VALUE:
            skip = True
        elif not arg.startswith("-"):
            return arg
        elif arg == "--":
            return None
    return None


def _global_options(parser: argparse.ArgumentParser, *, default: object) -> None:
    """The options every command takes, before or after its name. On the command's own parser they
    default to ``SUPPRESS``, so a value given before the command is kept unless repeated after it
    (argparse copies a sub-parser's defaults over the values parsed before it)."""
    parser.add_argument("--config", default=default, help="config file (.yaml, .toml or .py); default: built-in")
    parser.add_argument("--log-format", choices=("console", "json"), default=default,
                        help="log lines on stderr: readable console or JSON lines")
    parser.add_argument("--log-level", default=default, type=str.lower, choices=LOG_LEVELS,
                        help="log lines on stderr at or above this level (default warning)")


_AFTER_THE_COMMAND = argparse.ArgumentParser(add_help=False)
_global_options(_AFTER_THE_COMMAND, default=argparse.SUPPRESS)


class CommandParser(argparse.ArgumentParser):
    """Every command's parser (and every action's under it: argparse builds nested sub-parsers with
    the class of their parent) takes the global options as a parent parser."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs["parents"] = [*kwargs.get("parents", ()), _AFTER_THE_COMMAND]  # type: ignore[misc]
        kwargs.setdefault("conflict_handler", "resolve")  # a (third-party) command's own option of the name wins
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser with every command, or (given the arguments) only the command they name."""
    parser = argparse.ArgumentParser(
        prog="oracle",
        description="Route AI outputs to the evaluator that fits them and evaluate them. The global options "
                    "(--config, --log-format, --log-level, --json) go before or after the command.",
        epilog="Exit codes: 0 ok, 1 internal error, 2 bad input, 3 a task failed (evaluate; any task not ok "
               "with --strict).",
    )
    parser.add_argument("--config", help="config file (.yaml, .toml or .py); default: built-in")
    parser.add_argument("--log-format", choices=("console", "json"), default="console",
                        help="log lines on stderr: readable console or JSON lines")
    parser.add_argument("--log-level", default="warning", type=str.lower, choices=LOG_LEVELS,
                        help="log lines on stderr at or above this level (default warning)")
    parser.add_argument("--json", dest="json_before_command", action="store_true",
                        help="JSON output, for the commands that have it (the same as their own --json)")
    parser.add_argument("--version", action="version", version=f"oracle-router {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    sub.required = True
    command = _command_in(argv) if argv is not None else None
    modules = (COMMANDS[command],) if command in COMMANDS else COMMAND_MODULES
    for name in modules:
        importlib.import_module(name).register(sub)  # a missing built-in module is a bug: it raises
    if command not in COMMANDS:  # help, or a command no built-in has: third-party commands too
        from oracle._internal.plugins import COMMANDS as GROUP, clash, load_group

        for name, register in sorted(load_group(GROUP).items()):
            if name in COMMANDS:
                raise clash(GROUP, name, "command")
            register(sub)
    return parser


def _tolerant_streams() -> None:
    """stdout and stderr write what they cannot encode as ``\\uXXXX`` escapes instead of raising:
    printing a name or a message must never turn bad input into an internal error."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if callable(reconfigure):
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # a closed or detached stream: leave it as it is
                pass


def main(argv: Sequence[str] | None = None) -> int:
    from oracle.errors import ConfigError, EscalationStoreError, OutputLocked, TaskValidationError

    argv = list(sys.argv[1:] if argv is None else argv)
    _tolerant_streams()
    try:
        parser = build_parser(argv)
    except ConfigError as exc:  # a third-party command that fails to load (PluginError)
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    args = parser.parse_args(argv)
    if args.json_before_command:  # `oracle --json CMD`: the command's own --json, where it has one
        if not hasattr(args, "json"):
            parser.error(f"--json: `oracle {args.command}` has no --json option")
        args.json = True
    if args.command not in _SILENT_COMMANDS:
        from oracle.cli.logging_setup import configure_logging

        configure_logging(args.log_format, args.log_level)
    try:
        return int(args.func(args) or 0)
    except (TaskValidationError, ConfigError, EscalationStoreError, OutputLocked) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except UnicodeError as exc:  # text no encoder can write: it came from an input (argv, a file)
        print(f"error: input text is not valid Unicode ({type(exc).__name__}: {ascii(str(exc))[:200]}); "
              "a lone surrogate (a '\\ud800' escape, or bytes that are not UTF-8) cannot be used",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:  # noqa: BLE001 - the CLI's last line of defence
        print(f"internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
