"""Private: the test-running verifier (the evaluator ``verifier``; the Oracle builds it by name).

Its sandbox is ``oracle.sandbox``."""

from oracle.strategies.verifier.strategy import VerifierStrategy

__all__ = ["VerifierStrategy"]
