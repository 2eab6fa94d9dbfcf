"""The test-running verifier and its sandbox; importing this module registers the strategy."""

from oracle.strategies.protocol import register_strategy
from oracle.strategies.verifier.strategy import VerifierStrategy


@register_strategy("verifier")
def make_verifier() -> VerifierStrategy:
    """Factory used by the Oracle: ``strategy_factory("verifier")()``."""
    return VerifierStrategy()


__all__ = ["VerifierStrategy", "make_verifier"]
