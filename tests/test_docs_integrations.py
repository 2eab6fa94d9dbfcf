"""The snippets of the integrations page (docs/integrations.md) run as written, offline (network
namespace with loopback only, DeepEval telemetry off), each in a fresh interpreter."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.integrations_support import offline_command, offline_env, require

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]
ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "integrations.md"


def snippets() -> dict[str, str]:
    """Each python block of the page, keyed by the ## heading above it."""
    text = PAGE.read_text(encoding="utf-8")
    out: dict[str, str] = {}
    for part in re.split(r"\n## ", text)[1:]:
        heading = part.splitlines()[0]
        blocks = re.findall(r"```python\n(.*?)```", part, re.DOTALL)
        assert len(blocks) == 1, f"{heading}: expected one python block"
        out[heading.split(" (")[0]] = blocks[0]
    return out


EXPECT = {
    "Inspect AI": [r"^1\.0 verifier verifier ok: passed 1/1 tests$",
                   r"^0\.0 verifier verifier ok: expected 'paris' \(contains\), not in 'lyon'$"],
    "pydantic-evals": [r"\{'add': 1\.0, 'capital': 0\.0\}"],
    "LangSmith and openevals": [r"'key': 'oracle', 'score': 1\.0, 'comment': \"verifier ok: expected 'paris' "
                                r"\(contains\), found at 0\""],
    "DeepEval": [r"^1\.0 True verifier ok: expected 'paris' \(contains\), found at 0$"],
    "OpenTelemetry tracing": [r'"name": "oracle.evaluate"', r'"name": "gen_ai.evaluation.result"',
                              r'"gen_ai.evaluation.score.value": 1\.0'],
}


def test_every_adapter_section_has_a_snippet():
    assert set(snippets()) == set(EXPECT)


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_snippet_runs_as_written(name, tmp_path):
    require({"Inspect AI": "inspect_ai", "pydantic-evals": "pydantic_evals",
                         "LangSmith and openevals": "langsmith", "DeepEval": "deepeval",
                         "OpenTelemetry tracing": "opentelemetry.sdk"}[name])
    proc = subprocess.run(offline_command(snippets()[name]), cwd=tmp_path,
                          env=offline_env(str(tmp_path), str(ROOT)), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for pattern in EXPECT[name]:
        assert re.search(pattern, proc.stdout, re.MULTILINE), f"{pattern!r} not in:\n{proc.stdout[-3000:]}"
