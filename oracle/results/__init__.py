"""What an evaluation returns: the result, typed concerns, provenance and the call ledger.

Public modules: ``oracle.results.result``, ``oracle.results.concerns``,
``oracle.results.provenance`` and ``oracle.results.ledger``."""
