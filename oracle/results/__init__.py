"""What an evaluation returns: the result, typed concerns, provenance and the call ledger.

Public modules: ``oracle.results.result``, ``oracle.results.concerns``,
``oracle.results.provenance``, ``oracle.results.ledger`` and ``oracle.results.verdict`` (one
candidate's verdict, as the adapters and telemetry report it)."""
