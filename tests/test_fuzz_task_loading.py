"""Property: whatever a task file decodes to, loading + routing never raises anything but our error.

Inputs are built to sit near the real shape (task objects with every known key, trajectories as
objects, message lists and wrong-typed look-alikes, values of every JSON type including NaN and
huge numbers), because purely random JSON is rejected at the first key and tests nothing.
Derandomized, so a failure reproduces; 2,500 examples.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oracle.errors import TaskValidationError
from oracle._oracle import Oracle
from oracle.routing.route import route_adapter
from oracle.tasks.task import TaskInput
from oracle.tasks.files import decode_json, parse_task
from tests.profiles import examples

huge_ints = st.sampled_from([10 ** 4000, -(10 ** 3999), 2 ** 63])
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10 ** 30), max_value=10 ** 30),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
    st.sampled_from(["", "assistant", "user", "tool", "system", "call", "assert", "io", "check",
                     "likelihood", "choice", "score", "regex", "numeric", "set", "([a-z]+ ?)+"]))
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)), max_leaves=12)


def _maybe(key: str, value: st.SearchStrategy) -> st.SearchStrategy:
    """The key with a value of the right type, or no key."""
    return st.one_of(st.just({}), value.map(lambda v: {key: v}))


def _obj(*parts: st.SearchStrategy, junk_keys: tuple[str, ...] = ()) -> st.SearchStrategy:
    """An object of the given optional keys; sometimes one key (known or not) gets any JSON value."""
    def merge(dicts: tuple) -> dict:
        out: dict = {}
        for d in dicts:
            out.update(d)
        return out
    clean = st.tuples(*parts).map(merge)
    keys = st.one_of(st.sampled_from(junk_keys), st.text(max_size=6)) if junk_keys else st.text(max_size=6)
    spoil = st.sampled_from([False] * 7 + [True])  # one object in eight gets a wrong value
    return st.tuples(clean, spoil, keys, json_values).map(lambda t: {**t[0], t[2]: t[3]} if t[1] else t[0])


finite = st.floats(min_value=0, max_value=10)
weird_float = st.one_of(st.floats(), st.sampled_from([1e308, float("inf"), float("nan"), -1.0]))
any_float = st.sampled_from([True, True, True, False]).flatmap(lambda ok: finite if ok else weird_float)
tests_ = st.lists(st.one_of(
    _obj(st.just({"kind": "assert"}), _maybe("code", st.sampled_from(["assert True", "x = 1"])),
         _maybe("weight", any_float), _maybe("timeout_s", any_float), junk_keys=("code", "weight", "name")),
    _obj(st.just({"kind": "call", "call": "f(1)"}), _maybe("expected", json_values),
         _maybe("tolerance", any_float), junk_keys=("call", "expected", "tolerance")),
    _obj(st.just({"kind": "io"}), _maybe("stdout", st.text(max_size=5)), _maybe("stdin", st.text(max_size=5)),
         junk_keys=("stdout", "whitespace")),
    _obj(st.just({"kind": "check", "code": "def check(c): pass"}), junk_keys=("kind",))), max_size=3)
questions = st.lists(st.one_of(
    _obj(st.just({"type": "likelihood", "instructions": "ok?"}),
         st.fixed_dictionaries({"id": st.sampled_from(["q", "r"])}),
         _maybe("min_confidence", any_float), junk_keys=("id", "min_confidence", "inputs", "scores")),
    _obj(st.just({"type": "choice", "instructions": "which?"}),
         st.fixed_dictionaries({"id": st.sampled_from(["c", "q"])}),
         _maybe("options", st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=4)),
         _maybe("abstain_option", st.text(max_size=3)), junk_keys=("options", "scores")),
    _obj(st.just({"type": "score", "instructions": "how good?"}), st.just({"id": "s"}),
         _maybe("levels", st.lists(st.text(max_size=3), max_size=5)), junk_keys=("levels", "scores"))),
    max_size=3)
criteria = st.lists(st.one_of(st.text(max_size=8), _obj(
    st.fixed_dictionaries({"criterion": st.text(min_size=1, max_size=8)}), _maybe("weight", any_float),
    junk_keys=("criterion", "weight"))), max_size=3)
reference_checks = _obj(_maybe("mode", st.sampled_from(["exact", "normalized", "regex", "numeric", "set"])),
                        _maybe("rel_tol", any_float), _maybe("abs_tol", any_float),
                        _maybe("separator", st.text(min_size=1, max_size=2) | st.just("")),
                        junk_keys=("mode", "rel_tol", "separator"))
tasks = _obj(
    st.fixed_dictionaries({"id": st.sampled_from(["t", "task-1"]),
                           "prompt": st.text(max_size=60) | st.sampled_from([
                               "def add(a, b):", "Is this correct? yes or no", "Write a poem"])}),
    _maybe("criteria", criteria), _maybe("reference", st.text(max_size=8) | st.sampled_from(["([a-z]+ ?)+", "4"])),
    _maybe("reference_check", reference_checks), _maybe("tests", tests_), _maybe("questions", questions),
    _maybe("metadata", st.dictionaries(st.text(max_size=4), json_values, max_size=3)),
    _maybe("difficulty", st.sampled_from(["easy", "medium", "hard"])),
    _maybe("evaluator", st.sampled_from(["verifier", "llm_judge", "decision_judge"])),
    _maybe("entry_point", st.sampled_from(["add", "f"])), _maybe("language", st.sampled_from(["python", "javascript"])),
    junk_keys=("id", "prompt", "criteria", "tests", "questions", "metadata", "reference_check", "evaluator"))
functions = _obj(_maybe("name", st.text(max_size=5)), _maybe("arguments", json_values),
                 junk_keys=("name", "arguments"))
tool_calls = st.lists(_obj(_maybe("id", st.text(max_size=3)), _maybe("type", st.just("function")),
                           _maybe("function", functions), junk_keys=("function", "id")), max_size=3)
turns = st.lists(_obj(
    st.fixed_dictionaries({"role": st.sampled_from(["assistant", "user", "tool", "system"])}),
    _maybe("content", st.one_of(st.none(), st.text(max_size=8), st.lists(_obj(
        st.just({"type": "text"}), _maybe("text", st.text(max_size=5)), junk_keys=("text",)), max_size=2))),
    _maybe("tool_calls", tool_calls), _maybe("name", st.text(max_size=4)),
    junk_keys=("role", "content", "tool_calls", "name")), max_size=4)
trajectory = st.one_of(
    _obj(_maybe("answer", st.text(max_size=20)), _maybe("code", st.text(max_size=20)),
         _maybe("steps", st.lists(_obj(_maybe("type", st.sampled_from(["reasoning", "tool_call"])),
                                       _maybe("content", st.text(max_size=5))), max_size=2)),
         _maybe("output", st.text(max_size=5)),
         _maybe("metadata", st.dictionaries(st.text(max_size=4), json_values, max_size=2)),
         junk_keys=("answer", "code", "steps", "metadata", "id")),
    _obj(turns.map(lambda m: {"messages": m}), _maybe("metadata", st.dictionaries(st.text(max_size=3), json_values)),
         junk_keys=("messages", "id", "metadata")),
    turns, json_values)


def _with_ids(trajs: list) -> list:
    """Give object trajectories distinct ids (most of the time) so more inputs reach routing."""
    return [{"id": f"c{i}", **t} if isinstance(t, dict) and "id" not in t else t for i, t in enumerate(trajs)]


near_valid = st.fixed_dictionaries(
    {"task": tasks, "trajectories": st.lists(trajectory, min_size=1, max_size=4).map(_with_ids)})
_KINDS = [
    near_valid,
    st.fixed_dictionaries({"task": tasks, "trajectories": st.lists(trajectory, max_size=4)}),
    st.fixed_dictionaries({"task": json_values, "trajectories": json_values}),
    st.tuples(near_valid, huge_ints).map(lambda t: {**t[0], "task": {**t[0]["task"], "metadata": {"n": t[1]}}}),
    json_values]
documents = st.sampled_from([0] * 6 + [1, 2, 3, 4]).flatmap(lambda k: _KINDS[k])

ORACLE = Oracle()


@pytest.mark.slow  # 2,500 documents: about 40 s; the dev profile's 250 run with -m slow
@settings(max_examples=examples(2500), derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(documents)
def test_loading_and_routing_never_raise_anything_but_task_validation_error(document):
    try:
        item = parse_task(document)
    except TaskValidationError as exc:
        assert exc.field, exc  # every rejection names a field
        return
    assert isinstance(item, TaskInput)
    route = ORACLE.route(item)
    assert route.evaluator in (None, "decision_judge", "llm_judge", "verifier")
    assert math.isfinite(route.confidence)
    item.task.content_hash()
    json.loads(route_adapter().dump_json(route))


@settings(max_examples=examples(500), derandomize=True, deadline=None, database=None)
@given(st.binary(max_size=200))
def test_any_bytes_are_json_or_our_error(raw):
    try:
        decode_json(raw, source="fuzz", line=1)
    except TaskValidationError:
        pass


@pytest.mark.parametrize("depth", [63, 64, 65, 1000, 100_000])
def test_nesting_at_and_past_the_limit(depth):
    raw = json.dumps({"task": {"id": "t", "prompt": "p", "metadata": {}}, "trajectories": [{"id": "a"}]})
    # object 1, task 2, metadata 3, then lists: the innermost list sits at ``depth``
    raw = raw.replace('"metadata": {}', '"metadata": {"x": ' + "[" * (depth - 3) + "]" * (depth - 3) + "}")
    try:
        item = parse_task(decode_json(raw, source="x", line=1))
    except TaskValidationError as exc:
        assert depth > 64 and ("nested" in str(exc)), str(exc)[:200]
    else:
        assert depth <= 64
        ORACLE.route(item)
