"""The three evaluators: decision judge, LLM judge, and the test-running verifier.

Each module registers its strategy with ``oracle.strategies.protocol.register_strategy`` on import.
"""
