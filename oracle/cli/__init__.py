"""Private: the command line. ``main`` is the entry point; each command module exposes
``register(subparsers)`` and handlers returning an exit code."""
