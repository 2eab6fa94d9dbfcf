"""Writes task.json (kept in the repo; rerun after editing this file): python build_task.py"""

import json
from pathlib import Path

PROMPT = '''Write `slugify(text)`: the words of `text` (runs of ASCII letters and digits), lowercased and joined
by single dashes. `slugify("Hello, World!")` is `"hello-world"`. It raises `TypeError` when `text` is
not a string.
'''

CONFTEST = '''import pytest


@pytest.fixture
def titles():
    """Titles and the slugs they must give."""
    return {"Hello World": "hello-world", "  Hello,   World!  ": "hello-world", "Python 3.12": "python-3-12"}
'''

TEST_SLUGIFY = '''import pytest

from solution import slugify


def test_basic():
    assert slugify("Hello World") == "hello-world"


@pytest.mark.parametrize("text, slug", [("a", "a"), ("A  B", "a-b"), ("--x--", "x"), ("", "")])
def test_edges(text, slug):
    assert slugify(text) == slug


def test_titles(titles):
    for text, slug in titles.items():
        assert slugify(text) == slug


class TestErrors:
    def test_rejects_a_non_string(self):
        with pytest.raises(TypeError):
            slugify(None)
'''

GOOD = '''import re


def slugify(text):
    if not isinstance(text, str):
        raise TypeError("text must be a str")
    return "-".join(re.findall(r"[a-z0-9]+", text.lower()))
'''

NAIVE = '''def slugify(text):
    return text.strip().lower().replace(" ", "-")
'''

WRONG = '''def slugify(text):
    return "WRONG"
'''

task = {
    "task": {
        "id": "slugify-pytest",
        "prompt": PROMPT,
        "language": "python",
        "entry_point": "slugify",
        "solution": GOOD,
        "tests": [{"kind": "pytest", "name": "slugify",
                   "files": {"conftest.py": CONFTEST, "test_slugify.py": TEST_SLUGIFY}}],
    },
    "trajectories": [
        {"id": "good", "code": GOOD},
        {"id": "naive", "code": NAIVE},
        {"id": "wrong", "code": WRONG},
    ],
}

Path(__file__).with_name("task.json").write_text(json.dumps(task, indent=2) + "\n")
