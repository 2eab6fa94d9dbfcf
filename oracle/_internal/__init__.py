"""Small helpers shared by every layer (safe file and JSON I/O, logging, canonical JSON, messages).

Private: nothing here is part of the public API. Modules here import nothing else of the package
(the lowest layer)."""
