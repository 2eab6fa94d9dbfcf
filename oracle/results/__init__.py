"""What an evaluation returns: the result, typed concerns, provenance, the call ledger, and the
verdict on one candidate.

Public modules: ``oracle.results.result``, ``oracle.results.concerns``,
``oracle.results.provenance``, ``oracle.results.ledger`` and ``oracle.results.verdict``."""
