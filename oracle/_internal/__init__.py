"""Small helpers shared by every layer (safe file and JSON I/O, logging, canonical JSON, checks of
decoded input, the version).

Private: nothing here is part of the public API. Modules here import nothing else of the package
but ``oracle.errors`` (the lowest layers; the import-linter contracts in pyproject.toml hold it)."""
