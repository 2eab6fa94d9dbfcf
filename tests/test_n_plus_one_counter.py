"""The N+1 example's statement counter cannot be dodged by rewording the per-order query.

Each forger below is the original N+1 code (one lookup per order) with its lookups disguised:
comments or a byte-order mark before ``SELECT``, a leading ``;``, ``VALUES`` around a subquery,
``UPDATE ... RETURNING``, ``INSERT ... SELECT`` per order (``execute`` and ``executemany``), a CTE
inside an ``INSERT``, a trigger that runs the lookup once per order, a cursor instead of the
connection, and reaches for the connection's own API (``executescript``, ``create_function``,
``set_trace_callback``). Every one returns the right data, so only the counter can fail them.

Two claims, on every sandbox backend here:

1. with the example's counter (every statement the database runs, from sqlite3's trace
   callback) every forger fails both constant-query tests, while honest fixes, however worded
   (a comment and lowercase before a correlated subquery included), still pass all four tests;
2. the forgers are real forgeries: under the old counter (statements starting with SELECT or
   WITH) the disguised ones pass everything, so claim 1 is the counter's doing.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from oracle.config.model import OracleConfig
from oracle.results.result import Status
from oracle.strategies.protocol import EvaluationContext
from oracle.strategies.verifier.strategy import VerifierStrategy
from oracle.tasks.task import Task, Trajectory
from tests.plugins.sandbox_backends import on_each_backend, strongest_backend

pytestmark = pytest.mark.sandbox
DATA = json.loads((Path(__file__).resolve().parents[1] / "examples" / "n_plus_one" / "task.json").read_text())
TASK = Task.model_validate(DATA["task"])
SHIPPED = {t["id"]: t for t in DATA["trajectories"]}

N_PLUS_ONE = '''import json
import sqlite3

CONN = None


def get_orders_with_items(user_id):
    orders = CONN.execute(
        "SELECT id, total FROM orders WHERE user_id = ? ORDER BY id", (user_id,)).fetchall()
    result = []
    for order_id, total in orders:
        items = LOOKUP
        result.append({"id": order_id, "total": total,
                       "items": [{"sku": sku, "qty": qty} for sku, qty in items]})
    return result
'''
ITEMS = "sku, qty FROM items WHERE order_id = ? ORDER BY id"


def per_order(lookup: str) -> str:
    """The original N+1 code with its per-order lookup replaced by ``lookup`` (an expression)."""
    return N_PLUS_ONE.replace("LOOKUP", lookup)


def _execute(sql: str, via: str = "CONN") -> str:
    return f"[tuple(r) for r in {via}.execute({sql!r}, (order_id,)).fetchall()]"


PICK_INTO_TEMP = '''import sqlite3

CONN = None


def get_orders_with_items(user_id):
    orders = CONN.execute(
        "SELECT id, total FROM orders WHERE user_id = ? ORDER BY id", (user_id,)).fetchall()
    CONN.execute("CREATE TEMP TABLE IF NOT EXISTS picked (oid, item_id, sku, qty)")
    CONN.execute("DELETE FROM picked")
    PICK
    by_order = {order_id: [] for order_id, _ in orders}
    for oid, sku, qty in CONN.execute("SELECT oid, sku, qty FROM picked ORDER BY item_id").fetchall():
        by_order[oid].append({"sku": sku, "qty": qty})
    return [{"id": order_id, "total": total, "items": by_order[order_id]} for order_id, total in orders]
'''
TRIGGER = PICK_INTO_TEMP.replace("    PICK\n", '''    CONN.execute("CREATE TEMP TABLE IF NOT EXISTS wanted (oid)")
    CONN.execute("CREATE TEMP TRIGGER IF NOT EXISTS pick AFTER INSERT ON wanted BEGIN "
                 "INSERT INTO picked SELECT order_id, id, sku, qty FROM items WHERE order_id = NEW.oid; END")
    CONN.execute("DELETE FROM wanted")
    CONN.execute("INSERT INTO wanted SELECT id FROM orders WHERE user_id = ?", (user_id,))
''')

DISGUISED = {
    "block_comment": per_order(_execute("/* items */ SELECT " + ITEMS)),
    "line_comment": per_order(_execute("-- items of one order\nSELECT " + ITEMS)),
    "leading_semicolon": per_order(_execute("; SELECT " + ITEMS)),
    "byte_order_mark": per_order(_execute("\ufeffSELECT " + ITEMS)),
    "lowercase_comment_cursor": per_order(_execute("/**/select sku, qty from items where order_id = ? order by id",
                                                   via="CONN.cursor()")),
    "values_subquery": per_order(
        "[tuple(x) for x in json.loads(CONN.execute('VALUES ((SELECT json_group_array(json_array(sku, qty)) "
        "FROM (SELECT sku, qty FROM items WHERE order_id = ? ORDER BY id)))', (order_id,)).fetchone()[0])]"),
    "update_returning": per_order(
        "[(s, q) for _, s, q in sorted(CONN.execute('UPDATE items SET qty = qty WHERE order_id = ? "
        "RETURNING id, sku, qty', (order_id,)).fetchall())]"),
    "executemany_insert_select": PICK_INTO_TEMP.replace("    PICK\n", (
        '    CONN.executemany("INSERT INTO picked SELECT order_id, id, sku, qty FROM items WHERE order_id = ?",\n'
        '                     [(order_id,) for order_id, _ in orders])\n')),
    "insert_with_cte_per_order": PICK_INTO_TEMP.replace("    PICK\n", (
        '    for order_id, _ in orders:\n'
        '        CONN.execute("INSERT INTO picked WITH s AS (SELECT order_id, id, sku, qty FROM items '
        'WHERE order_id = ?) SELECT * FROM s", (order_id,))\n')),
    "trigger_per_order": TRIGGER,
}
"""N+1 in disguise: the old SELECT/WITH-prefix counter saw at most 3 statements for each."""

REACHES = {
    "executescript": per_order("CONN.executescript('SELECT 1;') and " + _execute("SELECT " + ITEMS)),
    "create_function": SHIPPED["lru_cache"]["code"].replace(
        "def get_orders_with_items(user_id):\n",
        "def get_orders_with_items(user_id):\n    CONN.create_function('lookup', 1, lambda x: x)\n"),
    "trace_switched_off": per_order("CONN.set_trace_callback(None) or " + _execute("SELECT " + ITEMS)),
}
"""N+1 that also reaches for the connection's own API, which the candidate's handle does not offer."""

HONEST = {
    "join": SHIPPED["join"]["code"],
    "batched_prefetch": SHIPPED["batched_prefetch"]["answer"],
    "commented_correlated_subquery": '''import json

CONN = None


def get_orders_with_items(user_id):
    rows = CONN.execute(
        "/* one statement */ select o.id, o.total, (select json_group_array(json_array(sku, qty)) "
        "from (select sku, qty from items where order_id = o.id order by id)) "
        "from orders o where o.user_id = ? order by o.id", (user_id,)).fetchall()
    return [{"id": oid, "total": total, "items": [{"sku": s, "qty": q} for s, q in json.loads(items)]}
            for oid, total, items in rows]
''',
}

COUNTED = ("constant_queries_50_orders", "constant_queries_5000_orders")
OLD_COUNT = ('return sum(1 for s in self.statements if s.lstrip().upper().startswith(("SELECT", "WITH")))')


def _evaluate(backend: str, task: Task, candidates: dict[str, str]):
    config = OracleConfig(verifier={"backend": backend, "timeout_s": 20, "workers": 2})
    strategy = VerifierStrategy()
    trajectories = tuple(Trajectory(id=name, answer=code) if code.lstrip().startswith("I kept")
                         else Trajectory(id=name, code=code) for name, code in candidates.items())
    try:
        return asyncio.run(strategy.evaluate(EvaluationContext(task=task, trajectories=trajectories,
                                                               config=config)))
    finally:
        strategy.close()


def _outcomes(result, name: str) -> dict[str, str]:
    return {t["name"]: t["outcome"] for t in result.candidate(name).details["tests"]}


def _old_counter_task() -> Task:
    """The example as it was: only statements starting with SELECT or WITH counted."""
    tests = []
    for t in TASK.tests:
        code = t.code.replace("return len(self.statements)", OLD_COUNT)
        assert code != t.code
        tests.append(t.model_copy(update={"code": code}))
    return TASK.model_copy(update={"tests": tests})


def test_the_example_counts_every_statement_not_a_prefix():
    for t in TASK.tests:
        assert "set_trace_callback(self.statements.append)" in t.code and "startswith" not in t.code


@pytest.mark.slow
@on_each_backend
def test_disguised_n_plus_one_fails_and_honest_fixes_pass(backend):
    result = _evaluate(backend, TASK, {**HONEST, **DISGUISED, **REACHES})
    assert result.status is Status.ok, result.error
    for name in HONEST:
        assert set(_outcomes(result, name).values()) == {"pass"}, (name, result.candidate(name).details["tests"])
    for name in [*DISGUISED, *REACHES]:
        cand = result.candidate(name)
        outcomes = _outcomes(result, name)
        assert cand.passed is False and all(outcomes[t] != "pass" for t in COUNTED), (name, cand.details["tests"])
    for name in DISGUISED:  # right data, wrong query count: the counter, not a crash, fails them
        outcomes = _outcomes(result, name)
        assert outcomes["same_result_50_orders"] == "pass", (name, result.candidate(name).details["tests"])
        message = {t["name"]: t["message"] for t in result.candidate(name).details["tests"]}
        assert "expected a constant number of queries" in message["constant_queries_50_orders"], message
    assert result.best == list(HONEST)


@pytest.mark.slow
def test_the_disguises_fooled_the_old_select_prefix_counter():
    """Without this, claim 1 could hold because a forger is simply broken."""
    result = _evaluate(strongest_backend(), _old_counter_task(), {**DISGUISED, "join": HONEST["join"]})
    assert result.status is Status.ok, result.error
    for name in [*DISGUISED, "join"]:
        assert set(_outcomes(result, name).values()) == {"pass"}, (name, result.candidate(name).details["tests"])
