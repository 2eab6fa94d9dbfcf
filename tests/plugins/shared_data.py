"""Session fixture ``shared_data``: files of the shared data directory, or a skip (a fail under CI).

    def test_x(shared_data):
        path = shared_data("humaneval/HumanEval.jsonl.gz")   # a Path that exists

The directory follows ``oracle._internal.data_paths`` (``$ORACLE_DATA_DIR``, else ../shared/data beside the
checkout). On a developer machine without the data the test is skipped with the path and how to set
it; with ``CI=true`` it fails instead, because CI gets a copy of the data and a skip there would hide
a test that never ran.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import pytest

from oracle._internal.data_paths import DataNotFound, shared_data_file


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def _require(relative: str) -> Path:
    try:
        return shared_data_file(relative)
    except DataNotFound as exc:
        if in_ci():
            pytest.fail(f"shared data required in CI: {exc}", pytrace=False)
        pytest.skip(f"shared data not available: {exc}")
        raise  # unreachable: skip raises; keeps type checkers content


@pytest.fixture(scope="session")
def shared_data() -> Callable[[str], Path]:
    return _require
