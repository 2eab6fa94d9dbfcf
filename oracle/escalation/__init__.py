"""Escalation: asking a person when the evaluation cannot settle a verdict by itself.

- ``triggers``: pure checks over a route and a result (its typed concerns) that file an escalation
  request with a specific question;
- ``store``: the SQLite ``EscalationStore`` holding requests until answered (and the outcome log);
- ``human``: the ``HumanOracle`` protocol, console and callback implementations;
- ``resume``: applying an answer: re-route, re-evaluate, keep both evaluations in the trace.

These modules are internal and may change without notice; the public names (``Escalation``,
``OracleResult``, the errors) stay in ``oracle`` (``oracle/__init__.py``). Nothing is re-exported
here, so importing the package loads none of its modules.
"""
