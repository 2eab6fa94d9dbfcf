"""The test-running verifier and its sandbox; importing this module registers the strategy."""

from oracle.config import OracleConfig
from oracle.strategy import register_strategy
from oracle.strategies.verifier.strategy import VerifierStrategy


@register_strategy("verifier")
def make_verifier(config: OracleConfig) -> VerifierStrategy:
    """Factory used by the Oracle: ``strategy_factory("verifier")(config)``."""
    return VerifierStrategy(config)


__all__ = ["VerifierStrategy", "make_verifier"]
