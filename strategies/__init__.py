"""The three evaluators: decision judge, LLM judge, and the test-running verifier.

Each module registers its strategy with ``oracle.strategy.register_strategy`` on import.
"""
