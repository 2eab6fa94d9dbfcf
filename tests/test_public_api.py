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


def test_installed_package_claims_only_the_oracle_import_name(tmp_path):
    """`policies` and `strategies` are other projects' names on PyPI: they install as oracle.*."""
    import subprocess
    import sys

    code = ("import importlib.util, sys\n"
            "import oracle.policies, oracle.strategies.verifier\n"
            "print(importlib.util.find_spec('policies'), importlib.util.find_spec('strategies'))\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('policies', 'strategies')))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["None None", "[]"], out.stdout + out.stderr
