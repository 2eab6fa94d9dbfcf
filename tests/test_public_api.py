"""The public API is small and pinned: a rename here is a breaking change."""

import oracle

EXPECTED = {"Escalation", "EvaluationResult", "Oracle", "OracleConfig", "OracleError", "OracleResult",
            "Policy", "Route", "Status", "Strategy", "Task", "Trajectory"}


def test_public_names_are_exactly_the_documented_set():
    assert set(oracle.__all__) == EXPECTED
    for name in EXPECTED:
        assert getattr(oracle, name) is not None


def test_status_names_are_the_contract():
    assert [s.value for s in oracle.Status] == ["ok", "failed", "abstained", "unparsed", "escalated",
                                                "pending"]
