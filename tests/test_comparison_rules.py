"""The comparison rules (strategies/verifier/comparison.py), one row of its table per case: what an
expectation of each type accepts and refuses, in ``typed`` mode (call tests) and ``json`` mode
(trajectory comparators); every codec-representable value matches itself (NaN included), and no
pair of values makes the comparison raise."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oracle.strategies.verifier.comparison import show, value_mismatch, values_equal
from oracle.sandbox.runtime import wire
from tests.profiles import examples
from tests.test_codec_properties import plain, roundtrip

NAN, INF = math.nan, math.inf
TOL = 1e-6  # verifier.float_tolerance's default
HUGE = 10**400

# (got, expected, tolerance, passes)
RULES = [
    # int: an int exactly; a float only under a nonzero tolerance; never bool / complex / str
    (3, 3, TOL, True), (4, 3, TOL, False), (wire.BigInt(3), 3, 0.0, True),
    (3.0, 3, TOL, True), (3.0000001, 3, TOL, True), (3.01, 3, TOL, False),
    (3.0, 3, 0.0, False), (3.0, 3, None, False),
    (True, 1, TOL, False), (False, 0, TOL, False), (3 + 0j, 3, TOL, False), ("3", 3, TOL, False),
    (None, 0, TOL, False), (NAN, 3, TOL, False), (INF, 3, TOL, False), ([3], 3, TOL, False),
    # huge ints: exact, never through float() (no OverflowError, no rounding)
    (HUGE, HUGE, 0.0, True), (HUGE + 1, HUGE, TOL, False), (1e308, HUGE, TOL, False), (HUGE, 1e308, TOL, False),
    (INF, HUGE, TOL, False), (HUGE, INF, TOL, False), (2**60 + 1, float(2**60), 0.0, False),
    (float(2**60), 2**60, TOL, True), (float(2**60), 2**60 + 1, TOL, False), (-HUGE, HUGE, TOL, False),
    # float: int or float within the tolerance; -0.0 == 0.0; never bool / complex / str
    (0.30000000000000004, 0.3, TOL, True), (0.3001, 0.3, TOL, False), (0.30000000000000004, 0.3, 0.0, False),
    (1, 1.0, 0.0, True), (2, 1.0, 0.5, False), (-0.0, 0.0, 0.0, True), (0.0, -0.0, 0.0, True),
    (True, 1.0, TOL, False), (1 + 0j, 1.0, TOL, False), ("1.0", 1.0, TOL, False),
    (1.5, 1.0, 0.5, True), (1.5000000001, 1.0, 0.5, False),
    # NaN matches NaN only; an infinity only itself
    (NAN, NAN, 0.0, True), (NAN, NAN, TOL, True), (0.0, NAN, TOL, False), (None, NAN, TOL, False),
    (INF, INF, 0.0, True), (-INF, -INF, 0.0, True), (-INF, INF, TOL, False), (INF, -INF, TOL, False),
    (1e308, INF, 1e300, False), (INF, 1e308, 1e300, False), (NAN, INF, TOL, False),
    # bool: a bool only
    (True, True, 0.0, True), (False, True, 0.0, False), (1, True, TOL, False), (1.0, True, TOL, False),
    (None, False, 0.0, False), (0, False, 0.0, False),
    # None only None; undefined only undefined
    (None, None, 0.0, True), (wire.UNDEFINED, None, 0.0, False), (0, None, 0.0, False), ("", None, 0.0, False),
    ([], None, 0.0, False), (wire.UNDEFINED, wire.UNDEFINED, 0.0, True), (None, wire.UNDEFINED, 0.0, False),
    # complex: a complex, part by part
    (1 + 2j, 1 + 2j, 0.0, True), (1 + 2.0000001j, 1 + 2j, TOL, True), (1, 1 + 0j, TOL, False),
    (complex(NAN, 1), complex(NAN, 1), 0.0, True),
    # str: exactly, no normalization
    ("a", "a", 0.0, True), ("a ", "a", TOL, False), ("A", "a", 0.0, False), ("e\u0301", "\u00e9", 0.0, False),
    ("\ud800", "\ud800", 0.0, True), (b"a", "a", 0.0, False), (["a"], "a", 0.0, False),
    # bytes
    (b"\x00", b"\x00", 0.0, True), (bytearray(b"\x00"), b"\x00", 0.0, True), ("\x00", b"\x00", 0.0, False),
    # lists and tuples: either, item by item
    ([1, 2], [1, 2], 0.0, True), ((1, 2), [1, 2], 0.0, True), ([1, 2], (1, 2), 0.0, True),
    ([2, 1], [1, 2], 0.0, False), ([1], [1, 2], 0.0, False), ([1, 2, 3], [1, 2], 0.0, False),
    ({1, 2}, [1, 2], 0.0, False), ({"0": 1}, [1], 0.0, False), ("ab", ["a", "b"], 0.0, False),
    ([1.0000001, [NAN]], [1.0, [NAN]], TOL, True), ([True], [1], TOL, False),
    # dicts: same keys (an int key answers to its str spelling unless that is ambiguous), values by the rules
    ({"a": 1}, {"a": 1}, 0.0, True), ({"a": 1, "b": 2}, {"b": 2, "a": 1}, 0.0, True),
    ({"a": 1}, {"a": 1, "b": 2}, 0.0, False), ({"a": 1, "b": 2}, {"a": 1}, 0.0, False),
    ({1: "x"}, {"1": "x"}, 0.0, True), ({1: "x"}, {1: "x"}, 0.0, True), ({"1": "x"}, {1: "x"}, 0.0, False),
    ({1: "x", "1": "x"}, {"1": "x"}, 0.0, False), ({True: "x"}, {"True": "x"}, 0.0, False),
    ({1.0: "x"}, {"1": "x"}, 0.0, False), ({1.0: "x"}, {1: "x"}, 0.0, False), ({"01": "x"}, {"1": "x"}, 0.0, False),
    ({"a": 3.0}, {"a": 3}, 0.0, False), ({"a": 3.0}, {"a": 3}, TOL, True), ([("a", 1)], {"a": 1}, 0.0, False),
    ({HUGE: 1}, {HUGE: 1}, 0.0, True), ({(1, 2): 1}, {(1, 2): 1}, 0.0, True),
    # sets: the same elements, exactly
    ({1, 2}, {2, 1}, 0.0, True), (frozenset({1}), {1}, 0.0, True), ({1.0}, {1}, TOL, False),
    ({True}, {1}, 0.0, False), ({1, 2}, {1}, 0.0, False), ([1], {1}, 0.0, False),
    # nesting all the way down
    ({"a": [1, {"b": (2.5, NAN)}]}, {"a": [1, {"b": [2.5, NAN]}]}, 0.0, True),
    ({"a": [1, {"b": [2.5, 0.0]}]}, {"a": [1, {"b": [2.5, NAN]}]}, TOL, False),
    ({"a": [1, {"b": [True]}]}, {"a": [1, {"b": [1]}]}, TOL, False),
]


@pytest.mark.parametrize("got, expected, tolerance, passes", RULES,
                         ids=[f"{i}:{show(g)[:20]}~{show(e)[:20]}" for i, (g, e, _, _) in enumerate(RULES)])
def test_rule_table(got, expected, tolerance, passes):
    assert values_equal(got, expected, tolerance) is passes
    problem = value_mismatch(got, expected, tolerance)
    assert (problem is None) is passes and (problem is None or problem.startswith(("expected", "at ")))


@pytest.mark.parametrize("got, expected, passes", [
    (34.0, 34, True), (34, 34.0, True), (34.5, 34, False), (True, 1, False), (1, True, False), (NAN, NAN, True),
    ({"amount": 34.0, "id": "A"}, {"amount": 34, "id": "A"}, True), ([1.0, 2], [1, 2.0], True), (None, 0, False),
])
def test_json_mode_treats_int_and_float_as_one_number_type(got, expected, passes):
    assert values_equal(got, expected, 0.0, numbers="json") is passes


def test_the_first_mismatch_is_named_with_its_path():
    problem = value_mismatch({"a": [1, {"b": 3.0}]}, {"a": [1, {"b": 3}]}, 0.0)
    assert problem == ("at ['a'][1]['b']: expected 3, got 3.0 (a float, not an int; an int expectation takes a "
                       "float only under a nonzero tolerance)")
    assert "got <int of about 401 digits>" in value_mismatch(HUGE, 1.0, TOL)
    assert value_mismatch(wire.UNDEFINED, None) == "expected None, got undefined (undefined, not None)"
    assert "both stand for" in value_mismatch({1: "x", "1": "x"}, {"1": "x", "2": "y"})


def test_deep_nesting_is_compared_without_recursion():
    deep_a, deep_b = [1], [1]
    for _ in range(50_000):
        deep_a, deep_b = [deep_a], [deep_b]
    assert values_equal(deep_a, deep_b, 0.0)
    deep_b[0] = [[2]]
    assert not values_equal(deep_a, deep_b, 0.0)


# -- properties ---------------------------------------------------------------------------------

@settings(max_examples=examples(500), derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(plain, st.sampled_from([0.0, TOL, None]))
def test_every_codec_value_matches_itself_and_its_round_trip(value, tolerance):
    assert values_equal(value, value, tolerance), value_mismatch(value, value, tolerance)
    assert values_equal(roundtrip(value), value, tolerance)


class Weird:
    def __eq__(self, other):
        raise RuntimeError("no")

    __hash__ = object.__hash__

    def __repr__(self):
        raise RuntimeError("no repr")


odd = st.one_of(plain, st.just(Weird()), st.just(object()), st.integers(min_value=10**5000, max_value=10**5000 + 5),
                st.floats(), st.lists(st.just(Weird()), max_size=2),
                st.dictionaries(st.text(max_size=2), st.just(Weird())))


@settings(max_examples=examples(800), derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(odd, odd, st.sampled_from([0.0, TOL, 1.0, None, math.inf, math.nan, -1.0]), st.sampled_from(["typed", "json"]))
def test_comparing_never_raises(got, expected, tolerance, numbers):
    problem = value_mismatch(got, expected, tolerance, numbers=numbers)
    assert problem is None or isinstance(problem, str)
    assert values_equal(got, expected, tolerance, numbers=numbers) is (problem is None)


@settings(max_examples=examples(300), derandomize=True)
@given(st.one_of(st.booleans(), st.complex_numbers(), st.text(), st.none()), st.integers())
def test_an_int_expectation_never_takes_a_bool_complex_str_or_none(got, expected):
    assert not values_equal(got, expected, 1e9)
