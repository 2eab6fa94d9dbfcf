"""CLI command groups: each module exposes ``register(subparsers)`` and handlers returning an exit code."""
