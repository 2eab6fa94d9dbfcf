"""The escalation store under concurrent and careless use: real SQLite files, real processes.

First answer wins (20 processes answer at once: one exit 0, nineteen exit 2 naming the answer);
a resolved request is not reopened unless asked; id prefixes are literal, 8+ characters, unique;
a corrupt store is exit 2 naming the file.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from oracle.errors import AlreadyAnswered, EscalationNotFound, EscalationStoreError
from oracle.escalation.store import EscalationStore
from oracle.escalation.human import HumanAnswer
from oracle._oracle import Oracle
from oracle.results.result import Escalation, OracleResult, Status
from oracle.tasks.task import TaskInput
from tests.data.tasks import open_task

ROOT = Path(__file__).resolve().parent.parent


def _cli(store: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "oracle", "escalations", *args, "--store", str(store)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


def _file(store: EscalationStore, esc_id: str, options: list[str] | None = None) -> None:
    item = TaskInput.model_validate(open_task(id=f"task-{esc_id}"))
    route = Oracle().route(item)
    request = Escalation(id=esc_id, reason="low_route_confidence", question="Which evaluator?",
                         options=options, blocking=True)
    first = OracleResult(task_id=item.task.id, status=Status.pending, route=route, escalation=request)
    assert store.put(request, item, first)


@pytest.fixture
def store_path(tmp_path) -> Path:
    path = tmp_path / "esc.sqlite"
    with EscalationStore(path) as store:
        _file(store, "esc-0123456789abcdef", options=["yes", "no"])
        _file(store, "esc-0123456799999999")
        _file(store, "esc-ffffffff00000000")
    return path


@pytest.mark.slow
def test_twenty_concurrent_answers_one_wins_the_rest_exit_2(store_path):
    def answer(i: int) -> subprocess.CompletedProcess:
        return _cli(store_path, "answer", "esc-ffffffff00000000", f"answer number {i}", "--by", f"r{i}")

    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(answer, range(20)))
    winners = [r for r in results if r.returncode == 0]
    losers = [r for r in results if r.returncode != 0]
    assert len(winners) == 1, [r.stderr for r in results]
    assert all(r.returncode == 2 for r in losers)
    with EscalationStore(store_path) as store:
        stored = store.get("esc-ffffffff00000000")
    assert stored.state == "answered"
    winner_text = stored.answer.text
    assert winners[0].stdout.startswith("esc-ffffffff00000000: answered")
    for r in losers:  # each refusal names the answer that stands
        assert "already answered" in r.stderr and winner_text in r.stderr and "--replace" in r.stderr


def test_a_resolved_request_is_not_reopened_without_replace(store_path):
    with EscalationStore(store_path) as store:
        store.answer("esc-0123456789abcdef", HumanAnswer(choice="yes"))
        first = store.get("esc-0123456789abcdef").first_result
        store.resolve("esc-0123456789abcdef", first)
        with pytest.raises(AlreadyAnswered, match="already resolved") as info:
            store.answer("esc-0123456789abcdef", HumanAnswer(choice="no"))
        assert info.value.existing.choice == "yes"
        entry = store.get("esc-0123456789abcdef")
        assert entry.state == "resolved" and entry.final_result is not None and entry.answer.choice == "yes"
    out = _cli(store_path, "answer", "esc-0123456789abcdef", "--choice", "no")
    assert out.returncode == 2 and "choice='yes'" in out.stderr
    out = _cli(store_path, "answer", "esc-0123456789abcdef", "--choice", "no", "--replace")
    assert out.returncode == 0, out.stderr
    with EscalationStore(store_path) as store:
        entry = store.get("esc-0123456789abcdef")
        assert entry.state == "answered" and entry.answer.choice == "no" and entry.final_result is None


@pytest.mark.parametrize("bad_id", ["", "_", "%", "esc-_", "esc-%", "esc-", "esc-0123", "esc-012345%",
                                    "esc-0123456_89abcdef", "%0123456789abcdef"])
def test_wildcards_and_short_prefixes_never_pick_a_request(store_path, bad_id):
    with EscalationStore(store_path) as store:
        with pytest.raises(EscalationNotFound):
            store.get(bad_id)
        with pytest.raises(EscalationNotFound):
            store.answer(bad_id, HumanAnswer(text="x"))
        assert store.count("answered") == 0
    out = _cli(store_path, "answer", bad_id, "some text")
    assert out.returncode == 2 and "no escalation" in out.stderr


def test_literal_prefixes_of_eight_or_more_characters(store_path):
    with EscalationStore(store_path) as store:
        assert store.get("esc-ffff").id == "esc-ffffffff00000000"            # 8 characters, unique
        with pytest.raises(EscalationNotFound, match="ambiguous prefix: esc-0123456789abcdef, esc-0123456799999999"):
            store.get("esc-01234567")
        assert store.get("esc-012345678").id == "esc-0123456789abcdef"
    out = _cli(store_path, "show", "esc-01234567")
    assert out.returncode == 2 and "ambiguous" in out.stderr


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["garbage", "empty_table", "bad_row", "directory"])
def test_a_corrupt_store_is_exit_2_naming_the_file(tmp_path, store_path, damage):
    path = store_path
    if damage == "garbage":
        path = tmp_path / "garbage.sqlite"
        path.write_bytes(b"this is not a database at all" * 100)
    elif damage == "empty_table":
        path = tmp_path / "other.sqlite"
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE TABLE escalations (id TEXT)")
    elif damage == "bad_row":
        with sqlite3.connect(path) as conn:
            conn.execute("UPDATE escalations SET request='{not json' WHERE id='esc-ffffffff00000000'")
    else:
        path = tmp_path / "adir.sqlite"
        path.mkdir()
    for args in (("list",), ("show", "esc-ffffffff00000000"), ("answer", "esc-ffffffff00000000", "x")):
        out = _cli(path, *args)
        assert out.returncode == 2, (damage, args, out.stderr)
        assert str(path) in out.stderr and "internal error" not in out.stderr, out.stderr
    with pytest.raises(EscalationStoreError, match=str(path)):
        with EscalationStore(path) as store:
            store.list()
            store.get("esc-ffffffff00000000")


def test_list_json_still_works(store_path):
    out = _cli(store_path, "list", "--json")
    assert out.returncode == 0
    assert {json.loads(line)["id"] for line in out.stdout.splitlines()} == {
        "esc-0123456789abcdef", "esc-0123456799999999", "esc-ffffffff00000000"}
