"""The evaluators: the protocol they implement and the three built-ins.

Public: ``oracle.strategies.protocol`` (``Evaluator``, ``EvaluationContext``). The built-ins,
``decision_judge``, ``llm_judge`` and ``verifier`` (and ``_judging``, what the judges share), are
private packages: the Oracle builds them by name (oracle/_evaluators.py), and they register
nothing and import nothing above them.

This folder sits at the top of the repository and installs as ``oracle.strategies``; imported
under any other name (``strategies``, with the repository root on ``sys.path``) it would be a
second copy of every evaluator class, so it refuses.
"""

if __name__ != "oracle.strategies":
    raise ImportError(f"import oracle.strategies, not {__name__}: this folder is the package oracle.strategies "
                      "(a second copy under another name would hold other classes)")
