"""Escalation: asking a person when the evaluation cannot settle a verdict by itself.

Public (what ``Oracle(human=..., store=...)`` takes, and resuming later):

- ``human``: the ``HumanOracle`` and ``AsyncHumanOracle`` protocols, ``HumanAnswer``, console and
  callback implementations;
- ``store``: the SQLite ``EscalationStore`` holding requests until answered (and the outcome log);
- ``resume``: applying an answer: re-route, re-evaluate, keep both evaluations in the trace.

Private: ``_triggers``, the pure checks over a route and a result (its typed concerns) that file
an escalation request with a specific question; ``_location``, which store a command uses
(``--store``, ``ORACLE_STORE``, the config, the default). The request itself (``Escalation``) is
``oracle.results.result``. Nothing is re-exported here, so importing the package loads none of its
modules.
"""
