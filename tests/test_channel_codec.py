"""The channel between candidate and test: the codec keeps types and accepts nothing else, and the
RPC rules hold over a real socket pair (two peers in two threads, as the two processes use them)."""

from __future__ import annotations

import collections
import enum
import math
import socket
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oracle.sandbox.runtime import rpc, wire
from tests.profiles import examples

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(min_value=-10**400, max_value=10**400),
                    st.floats(allow_nan=True, allow_infinity=True), st.complex_numbers(allow_nan=False),
                    st.text(), st.binary())
hashable = st.recursive(scalars, lambda inner: st.one_of(st.tuples(inner, inner), st.frozensets(inner, max_size=3)),
                        max_leaves=8)
plain = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.tuples(inner, inner),
                            st.dictionaries(hashable, inner, max_size=4), st.sets(hashable, max_size=4),
                            st.frozensets(hashable, max_size=4)),
    max_leaves=30)


def same(a, b, *, ordered_dicts: bool = True) -> bool:
    """Equal with the same types all the way down; NaN equals NaN; -0.0 is not 0.0. Dicts compare in
    order (the codec keeps insertion order; NaN keys are not found by lookup) unless ``ordered_dicts``
    is False."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, complex):
        return same(a.real, b.real) and same(a.imag, b.imag)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y, ordered_dicts=ordered_dicts) for x, y in zip(a, b))
    if isinstance(a, dict):
        if len(a) != len(b):
            return False
        if ordered_dicts:
            return all(same(ka, kb) and same(va, vb) for (ka, va), (kb, vb) in zip(a.items(), b.items()))
        return all(any(same(ka, kb) and same(va, vb, ordered_dicts=False) for kb, vb in b.items())
                   for ka, va in a.items())
    if isinstance(a, (set, frozenset)):
        return len(a) == len(b) and all(any(same(x, y) for y in b) for x in a)
    return a == b


def roundtrip(value):
    frame = wire.dumps({"op": "ret", "value": wire.encode(value)})
    return wire.decode(wire.loads(frame[4:])["value"])


@settings(max_examples=examples(400), derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(plain)
def test_plain_data_crosses_with_its_types(value):
    assert same(roundtrip(value), value)


def test_distinct_nans_in_a_set_stay_distinct():
    got = roundtrip({frozenset({float("nan"), float("nan")})})
    assert len(next(iter(got))) == 2


def test_subclasses_cross_as_their_plain_base():
    Point = collections.namedtuple("Point", "x y")

    class Color(enum.IntEnum):
        RED = 1

    class Name(str):
        def __eq__(self, other):
            return True

    got = roundtrip([collections.Counter("aab"), Point(1, 2), Color.RED, collections.OrderedDict(a=1),
                     Name("x"), collections.defaultdict(int, {"k": 2})])
    assert same(got, [{"a": 2, "b": 1}, (1, 2), 1, {"a": 1}, "x", {"k": 2}])
    assert type(got[2]) is int and type(got[4]) is str


@pytest.mark.parametrize("value, name", [(range(3), "range"), (object(), "object"),
                                         ((x for x in ()), "generator"), (len, "builtin_function_or_method")])
def test_other_types_fail_naming_the_type(value, name):
    with pytest.raises(wire.NotPlain, match=name):
        wire.encode(value)


@settings(max_examples=examples(600), derandomize=True)
@given(st.binary(max_size=200))
def test_garbage_bytes_are_only_ever_a_channel_error(body):
    try:
        message = wire.loads(body)
        wire.decode(message.get("value"))
    except wire.ChannelError:
        pass


json_like = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text()),
                         lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                 st.dictionaries(st.sampled_from(["t", "d", "s", "fs", "b", "c", "f",
                                                                                  "h", "o", "u", "bi", "x"]),
                                                                 inner, max_size=2)),
                         max_leaves=12)


@settings(max_examples=examples(600), derandomize=True)
@given(json_like)
def test_malformed_tags_are_only_ever_a_channel_error(data):
    try:
        wire.decode(data)
    except wire.ChannelError:
        pass


def test_depth_size_and_number_limits():
    deep = [[]]
    for _ in range(wire.MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(wire.NotPlain):
        wire.encode(deep)
    nested_json = "[" * 100_000 + "]" * 100_000
    with pytest.raises(wire.ChannelError):
        wire.loads(('{"op": "ret", "value": ' + nested_json + "}").encode())
    with pytest.raises(wire.ChannelError):
        wire.loads(b'{"op": "ret", "value": ' + b"9" * (wire.MAX_INT_DIGITS + 1) + b"}")
    with pytest.raises(wire.ChannelError):
        wire.loads(b'{"op": "ret", "value": NaN}')
    with pytest.raises(wire.ChannelError):
        wire.loads(b'\xff\xfe{"op": 1}')
    a, b = socket.socketpair()
    a.sendall((wire.MAX_FRAME + 1).to_bytes(4, "big"))
    with pytest.raises(wire.ChannelError, match="exceeds"):
        wire.Channel(b.fileno()).recv()
    a.close()
    b.close()


class Stack:
    def __init__(self):
        self.items = []

    def push(self, x):
        self.items.append(x)
        return len(self.items)

    def __len__(self):
        return len(self.items)

    def __eq__(self, other):  # a candidate's __eq__ must never be consulted by the test side
        return True


def _pair():
    """A candidate peer serving in a thread and a test peer, over a real socket pair."""
    a, b = socket.socketpair()
    ns = {"Stack": Stack, "fails": lambda: (_ for _ in ()).throw(ValueError("bad input")),
          "leaves": lambda: (_ for _ in ()).throw(SystemExit(0)), "apply": lambda f, x: f(x) + 1,
          "gen": lambda: (i for i in range(3)), "peek": lambda conn: conn._secret}
    for fn in ns.values():
        fn.__module__ = "candidate"
    Stack.__module__ = "candidate"
    cand = rpc.Peer(wire.Channel(a.fileno()), "c", exportable=rpc.candidate_exportable("candidate"), namespace=ns)
    test = rpc.Peer(wire.Channel(b.fileno()), "t")
    exported = {k: test.decode(cand.encode(v)) for k, v in ns.items()}
    thread = threading.Thread(target=cand.serve, daemon=True)
    thread.start()
    return exported, test, (a, b, thread)


def test_rpc_rules_over_a_socket_pair():
    ex, test, (a, b, thread) = _pair()
    stack = ex["Stack"]()
    assert isinstance(stack, rpc.Remote) and stack.push(5) == 1 and stack.push((1, 2)) == 2
    assert len(stack) == 2 and stack.items == [5, (1, 2)]
    assert (stack == [5, (1, 2)]) is False and stack != 3 and bool(stack) is True  # no forwarded __eq__
    with pytest.raises(ValueError, match="bad input"):
        ex["fails"]()
    with pytest.raises(rpc.BoundaryError, match="SystemExit"):
        ex["leaves"]()
    assert test.violations  # an exit is recorded even if a test swallowed it
    assert ex["apply"](lambda x: x * 10, 4) == 41  # a test-side callable crosses as a handle
    with pytest.raises(rpc.BoundaryError, match="generator"):
        ex["gen"]()

    class Conn:
        _secret = "hidden"

    with pytest.raises(AttributeError, match="not available to the candidate"):
        ex["peek"](Conn())
    with pytest.raises(rpc.NeedsInProcess, match="in_process"):
        ex["apply"].__code__  # noqa: B018 - the attribute access is what must raise
    test.channel.send({"op": "close"})
    thread.join(timeout=5)
    a.close()
    b.close()


def test_a_dead_peer_is_a_boundary_error_not_a_hang():
    ex, test, (a, b, thread) = _pair()
    test.channel.send({"op": "close"})
    thread.join(timeout=5)
    a.close()
    with pytest.raises(rpc.BoundaryError, match="ended|gone|broke"):
        ex["apply"](abs, 1)
    with pytest.raises(rpc.BoundaryError):  # and it stays broken
        ex["apply"](abs, 1)
    b.close()
