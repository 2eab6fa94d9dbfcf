"""Writes task.json (kept in the repo; rerun after editing this file): python build_task.py"""

import json
from pathlib import Path

PROMPT = '''Fix the N+1 query in `get_orders_with_items(user_id)`.

It loads a user's orders and then issues one query per order for its items: 51 queries for 50
orders, 5,001 for 5,000. Make it use a constant number of queries, whatever the number of orders,
and keep the result exactly the same: a list of {"id", "total", "items": [{"sku", "qty"}, ...]}
ordered by order id, items in item-id order, orders without items included with an empty list.
`CONN` is the application's sqlite3 connection (module global, set at startup).

```python
import sqlite3

CONN = None  # sqlite3.Connection, set by the application at startup


def get_orders_with_items(user_id):
    orders = CONN.execute(
        "SELECT id, total FROM orders WHERE user_id = ? ORDER BY id", (user_id,)).fetchall()
    result = []
    for order_id, total in orders:
        items = CONN.execute(
            "SELECT sku, qty FROM items WHERE order_id = ? ORDER BY id", (order_id,)).fetchall()
        result.append({"id": order_id, "total": total,
                       "items": [{"sku": sku, "qty": qty} for sku, qty in items]})
    return result
```
'''

# Shared by every test: an in-memory database, a statement counter, and the slow original as the oracle.
# The tests run in their own process and keep the real connection; the candidate's CONN is a narrow
# handle to it (execute, executemany, cursor, fetch*, iteration), so its queries are counted here and
# it cannot reach the counter (set_trace_callback) or the connection behind the handle.
SETUP = '''
import sqlite3

class AppCursor:
    """What the candidate sees of a cursor: run a statement, read rows."""
    def __init__(self, cursor):
        self._cursor = cursor
    def execute(self, sql, params=()):
        self._cursor.execute(sql, params)
        return self
    def executemany(self, sql, rows):
        self._cursor.executemany(sql, rows)
        return self
    def fetchall(self):
        return self._cursor.fetchall()
    def fetchone(self):
        return self._cursor.fetchone()
    def fetchmany(self, size=100):
        return self._cursor.fetchmany(size)
    def __iter__(self):
        return iter(self._cursor)

class AppConnection:
    """The application's connection as the candidate's code uses it."""
    def __init__(self, conn):
        self._conn = conn
    def execute(self, sql, params=()):
        return AppCursor(self._conn.cursor()).execute(sql, params)
    def executemany(self, sql, rows):
        return AppCursor(self._conn.cursor()).executemany(sql, rows)
    def cursor(self):
        return AppCursor(self._conn.cursor())

def build_db(n_orders, user_id=7):
    conn = sqlite3.connect(":memory:")
    conn.executescript(
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER, total REAL);"
        "CREATE TABLE items (id INTEGER PRIMARY KEY, order_id INTEGER, sku TEXT, qty INTEGER);"
        "CREATE INDEX items_order ON items(order_id);")
    orders, items = [], []
    for k in range(n_orders):
        oid = 1000 + 3 * k
        orders.append((oid, user_id, round(10 + k * 1.25, 2)))
        orders.append((oid + 1, user_id + 1, 99.0))  # another user's order, must not appear
        for j in range(k % 4):  # 0..3 items; every fourth order has none
            items.append((oid, f"SKU-{k}-{j}", j + 1))
        items.append((oid + 1, "OTHER", 1))
    conn.executemany("INSERT INTO orders VALUES (?, ?, ?)", orders)
    conn.executemany("INSERT INTO items (order_id, sku, qty) VALUES (?, ?, ?)", items)
    conn.commit()
    return conn

def expected_for(conn, user_id=7):
    out = []
    for oid, total in conn.execute("SELECT id, total FROM orders WHERE user_id = ? ORDER BY id", (user_id,)):
        items = conn.execute("SELECT sku, qty FROM items WHERE order_id = ? ORDER BY id", (oid,)).fetchall()
        out.append({"id": oid, "total": total, "items": [{"sku": s, "qty": q} for s, q in items]})
    return out

class QueryCounter:
    """Every statement the database runs, whatever its text: the trace callback fires once per
    execution (each row of an executemany, each statement of a script, each trigger program), so a
    lookup counts however it is worded (comments, VALUES, RETURNING, INSERT ... SELECT)."""
    def __init__(self, conn):
        self.statements = []
        conn.set_trace_callback(self.statements.append)
    @property
    def count(self):
        return len(self.statements)

def check_constant_queries(n_orders, limit=3):
    global CONN
    db = build_db(n_orders)
    CONN = AppConnection(db)
    want = expected_for(db)
    counter = QueryCounter(db)  # counting starts on a cold cache: a fresh process, a fresh database
    got = get_orders_with_items(7)
    db.set_trace_callback(None)
    n = counter.count
    assert n <= limit, (f"expected a constant number of queries (at most {limit}), got {n} for "
                        f"{n_orders} orders" + (" = 1 + N" if n == n_orders + 1 else ""))
    assert got == want, f"wrong result for {n_orders} orders (first difference near order {next((a['id'] for a, b in zip(want, got) if a != b), '?')})"
'''  # noqa: E501 - task code, written as is into task.json

TESTS = [
    {"kind": "assert", "name": "same_result_50_orders", "timeout_s": 20, "code": SETUP + '''
db = build_db(50)
CONN = AppConnection(db)
got = get_orders_with_items(7)
want = expected_for(db)
assert len(got) == 50, f"expected 50 orders, got {len(got)}"
assert got == want, "result differs from the original function"
assert get_orders_with_items(12345) == [], "a user without orders must get []"
'''},
    {"kind": "assert", "name": "constant_queries_50_orders", "timeout_s": 20,
     "code": SETUP + "\ncheck_constant_queries(50)\n"},
    {"kind": "assert", "name": "constant_queries_5000_orders", "timeout_s": 30,
     "code": SETUP + "\ncheck_constant_queries(5000)\n"},
    {"kind": "assert", "name": "sees_new_items_between_calls", "timeout_s": 20, "code": SETUP + '''
db = build_db(10)
CONN = AppConnection(db)
first = get_orders_with_items(7)
db.execute("INSERT INTO items (order_id, sku, qty) VALUES (1000, 'NEW', 5)")
db.commit()
second = get_orders_with_items(7)
assert second == expected_for(db), "a second call returned stale items after an insert"
'''},
]

JOIN = '''import sqlite3

CONN = None  # sqlite3.Connection, set by the application at startup


def get_orders_with_items(user_id):
    """One query: orders LEFT JOIN items, grouped in Python."""
    rows = CONN.execute(
        "SELECT o.id, o.total, i.sku, i.qty FROM orders o "
        "LEFT JOIN items i ON i.order_id = o.id "
        "WHERE o.user_id = ? ORDER BY o.id, i.id", (user_id,)).fetchall()
    result, by_id = [], {}
    for order_id, total, sku, qty in rows:
        order = by_id.get(order_id)
        if order is None:
            order = by_id[order_id] = {"id": order_id, "total": total, "items": []}
            result.append(order)
        if sku is not None:
            order["items"].append({"sku": sku, "qty": qty})
    return result
'''

PREFETCH = '''I kept the orders query and replaced the per-order loop with one batched prefetch:

```python
import sqlite3

CONN = None  # sqlite3.Connection, set by the application at startup


def get_orders_with_items(user_id):
    orders = CONN.execute(
        "SELECT id, total FROM orders WHERE user_id = ? ORDER BY id", (user_id,)).fetchall()
    if not orders:
        return []
    ids = [order_id for order_id, _ in orders]
    items_by_order = {order_id: [] for order_id in ids}
    placeholders = ",".join("?" * len(ids))
    for order_id, sku, qty in CONN.execute(
            f"SELECT order_id, sku, qty FROM items WHERE order_id IN ({placeholders}) ORDER BY id", ids):
        items_by_order[order_id].append({"sku": sku, "qty": qty})
    return [{"id": order_id, "total": total, "items": items_by_order[order_id]}
            for order_id, total in orders]
```

Two queries regardless of the number of orders.'''

CACHE = '''import sqlite3
from functools import lru_cache

CONN = None  # sqlite3.Connection, set by the application at startup


@lru_cache(maxsize=None)
def _items_for_order(order_id):
    rows = CONN.execute(
        "SELECT sku, qty FROM items WHERE order_id = ? ORDER BY id", (order_id,)).fetchall()
    return tuple(rows)


def get_orders_with_items(user_id):
    orders = CONN.execute(
        "SELECT id, total FROM orders WHERE user_id = ? ORDER BY id", (user_id,)).fetchall()
    return [{"id": order_id, "total": total,
             "items": [{"sku": sku, "qty": qty} for sku, qty in _items_for_order(order_id)]}
            for order_id, total in orders]
'''

task = {
    "task": {
        "id": "n-plus-one-orders",
        "prompt": PROMPT,
        "description": "Fix an N+1 query; the tests count queries on a cold cache.",
        "language": "python",
        "entry_point": "get_orders_with_items",
        "tests": TESTS,
        "metadata": {"example": "n_plus_one"},
    },
    "trajectories": [
        {"id": "join", "answer": "Replaced the loop with a single LEFT JOIN, grouped in Python.", "code": JOIN},
        {"id": "batched_prefetch", "answer": PREFETCH},
        {"id": "lru_cache", "answer": "Wrapped the per-order lookup in functools.lru_cache so repeated "
                                      "orders are served from memory and no longer hit the database.",
         "code": CACHE},
    ],
}

Path(__file__).with_name("task.json").write_text(json.dumps(task, indent=2) + "\n")
