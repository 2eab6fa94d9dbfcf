"""The comparison rules: when a candidate's value matches an expected value.

One rule per type, used by ``call`` tests (``harness.interpret``) and by every trajectory
comparator that compares values (``trajectory_checks``: exact arguments, exact and subset tool
results). Why written down: a verdict is only as good as its equality, and Python's ``==`` says
``True == 1``, ``3 == 3+0j``, ``nan != nan`` and overflows on ``float(10**400)``.

``tolerance`` is an absolute tolerance for floats (``call``: the test's ``tolerance``, else
``verifier.float_tolerance``; trajectory comparators: 0). ``numbers="json"`` (trajectory data,
which is JSON) treats an int and a float as one JSON number type; ``"typed"`` (``call`` tests) does not.

=====================  =========================================================================
expected               what matches
=====================  =========================================================================
None                   None only (not ``undefined``, 0, "", [])
``undefined`` (JS)     ``undefined`` only (``wire.UNDEFINED``; never None)
bool                   a bool of the same value (never 1, 0 or 1.0)
int (any size)         an int (a JavaScript Number or BigInt alike) equal exactly; a finite
                       float only under a nonzero tolerance (|got - expected| <= tolerance,
                       computed exactly, never through ``float()``), or equal exactly in
                       ``json`` mode. Never a bool, a complex, a str
float, finite          an int or a finite float with |got - expected| <= tolerance (0: exactly
                       equal); -0.0 equals 0.0. Never a bool, a complex, a str, NaN or infinity
float NaN              NaN only
float ±inf             the same infinity only (not the other one, not a huge finite float)
complex                a complex whose real and imaginary parts each match by the float rule
str                    a str equal code point for code point (no normalization, no stripping)
bytes                  bytes (or bytearray) equal byte for byte
list or tuple          a list or a tuple (the codec sends JavaScript arrays as lists, and JSON
                       has no tuples) of the same length, item by item
dict                   a dict with the same keys, value by value. Keys match by the same rules
                       without tolerance; since JSON object keys are always strings, an
                       expected str key spelling an int ("3") also takes the int key 3, unless
                       the candidate's dict holds both. Order is ignored
set or frozenset       a set or frozenset of the same elements, each matched exactly (types
                       included, no tolerance)
anything else          (library callers only) a value of the same type that compares equal
=====================  =========================================================================

Nesting is compared all the way down, without recursion limits on lists and dicts. Comparing
never raises: anything that cannot be compared is a mismatch with the reason.
"""

from __future__ import annotations

import math
import reprlib
from collections import Counter
from fractions import Fraction
from typing import Any, Literal

from oracle.sandbox.runtime import wire

Numbers = Literal["typed", "json"]
_EXACT_FLOAT_INT = 2**53
_MAX_KEY_DIGITS_BITS = 4000
"""An int key is tried against a str key only when it is small enough to print cheaply."""


class _Shower(reprlib.Repr):
    """Short, never-failing renderings of values for messages."""

    def __init__(self) -> None:
        super().__init__()
        self.maxstring, self.maxother, self.maxlist, self.maxdict, self.maxlevel = 60, 60, 8, 6, 4

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 200:  # never print a huge int (slow, and past the str-digits limit)
            return f"<{'-' if x < 0 else ''}int of about {int(x.bit_length() * 0.30103) + 1} digits>"
        return repr(int(x)) + ("n" if type(x) is wire.BigInt else "")

    def repr_float(self, x: float, level: int) -> str:
        return repr(float(x))


_SHOWER = _Shower()


def show(value: Any) -> str:
    """A short rendering of ``value`` for a message (never raises)."""
    try:
        if value is wire.UNDEFINED:
            return "undefined"
        if value is None:
            return "None"
        return _SHOWER.repr(value)
    except Exception:  # noqa: BLE001 - a library caller's object whose __repr__ raises
        return f"<{type(value).__name__}>"


def _kind(value: Any) -> str:
    if value is wire.UNDEFINED:
        return "undefined"
    if value is None:
        return "None"
    if isinstance(value, wire.BigInt):
        return "BigInt"
    for base in (bool, int, float, complex, str, bytes, bytearray, list, tuple, dict, frozenset, set):
        if isinstance(value, base):
            return base.__name__
    return type(value).__name__


def _a(kind: str) -> str:
    if kind in ("None", "undefined", "bytes"):
        return kind
    return ("an " if kind[0] in "aeiou" else "a ") + kind


def _types(got: Any, wanted: str) -> str:
    return f"{_a(_kind(got))}, not {_a(wanted)}"


def _effective(tolerance: float | None) -> float:
    if tolerance is None or tolerance != tolerance or tolerance < 0:
        return 0.0
    return float(tolerance)


def _exact_float(value: int | float) -> float | None:
    """``value`` as a float when that is exact, else None."""
    if isinstance(value, float):
        return value
    return float(value) if -_EXACT_FLOAT_INT <= value <= _EXACT_FLOAT_INT else None


def _within(got: int | float, expected: int | float, tol: float) -> bool:
    """|got - expected| <= tol for finite numbers, decided exactly (no overflow, no rounding)."""
    if tol == math.inf:
        return True
    g, e = _exact_float(got), _exact_float(expected)
    if g is not None and e is not None:
        if g == e:
            return True
        d = abs(g - e)  # correctly rounded: d < tol or d > tol settles it; d == tol is decided exactly
        if d != tol:
            return d < tol
    return abs(Fraction(got) - Fraction(expected)) <= Fraction(tol)


def _float_problem(got: Any, expected: float, tol: float) -> str | None:
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        return _types(got, "number")
    if math.isnan(expected):
        return None if isinstance(got, float) and math.isnan(got) else "not NaN"
    if math.isinf(expected):
        return None if isinstance(got, float) and got == expected else "not the same infinity"
    if isinstance(got, float) and not math.isfinite(got):
        return "not a finite number"
    if _within(got, expected, tol):
        return None
    return "outside the tolerance" if tol else "not equal"


def _int_problem(got: Any, expected: int, tol: float, json_numbers: bool) -> str | None:
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        return _types(got, "int")
    if isinstance(got, int):
        return None if int(got) == int(expected) else "not equal"
    if not (json_numbers or tol > 0):
        return "a float, not an int; an int expectation takes a float only under a nonzero tolerance"
    if not math.isfinite(got):
        return "not a finite number"
    if _within(got, int(expected), tol):
        return None
    return "outside the tolerance" if tol else "not equal"


def _canon(value: Any) -> tuple[Any, ...]:
    """A key equal for two hashable values exactly when they match without tolerance."""
    if value is None or value is wire.UNDEFINED:
        return (_kind(value),)
    if isinstance(value, bool):
        return ("bool", bool(value))
    if isinstance(value, int):
        return ("int", int(value))
    if isinstance(value, float):
        return ("nan",) if math.isnan(value) else ("float", float(value))
    if isinstance(value, complex):
        return ("complex", _canon(value.real), _canon(value.imag))
    if isinstance(value, str):
        return ("str", str(value))
    if isinstance(value, (bytes, bytearray)):
        return ("bytes", bytes(value))
    if isinstance(value, (tuple, list)):
        return ("seq", tuple(_canon(v) for v in value))
    if isinstance(value, (frozenset, set)):
        return ("set", frozenset(_canon(v) for v in value))
    return ("other", type(value), value)


def _int_spelled(key: Any) -> tuple[Any, ...] | None:
    """The canonical str key an int key also answers to ("3" for 3), or None."""
    if isinstance(key, int) and not isinstance(key, bool) and key.bit_length() <= _MAX_KEY_DIGITS_BITS:
        return ("str", str(int(key)))
    return None


def _dict_pairs(got: dict, expected: dict) -> tuple[list[tuple[Any, Any, Any]], str | None]:
    """(got value, expected value, expected key) for every key, or the first key problem. Keys
    that match each other (two NaN keys) pair up in order."""
    by_canon: dict[tuple[Any, ...], list[Any]] = {}
    for key in expected:
        by_canon.setdefault(_canon(key), []).append(key)
    taken: dict[tuple[Any, ...], list[Any]] = {}
    pairs = []
    for key, value in got.items():
        c = _canon(key)
        if len(taken.get(c, ())) >= len(by_canon.get(c, ())):
            alt = _int_spelled(key)
            if alt is not None and len(taken.get(alt, ())) < len(by_canon.get(alt, ())):
                c = alt
        slot = taken.setdefault(c, [])
        if len(slot) >= len(by_canon.get(c, ())):
            if slot:
                return [], (f"keys {show(slot[0])} and {show(key)} both stand for the expected key "
                            f"{show(by_canon[c][0])}")
            return [], f"unexpected key {show(key)}"
        want = by_canon[c][len(slot)]
        slot.append(key)
        pairs.append((value, expected[want], want))
    for c, keys in by_canon.items():
        if len(taken.get(c, ())) < len(keys):
            return [], f"missing key {show(keys[len(taken.get(c, ()))])}"
    return pairs, None


def _step(got: Any, expected: Any, tol: float, json_numbers: bool,
          push: list[tuple[Any, Any, tuple[Any, ...]]], path: tuple[Any, ...]) -> str | None:
    """Compare one level: the reason it differs, or None (children go onto ``push``)."""
    if expected is None or expected is wire.UNDEFINED:
        return None if got is expected else _types(got, _kind(expected))
    if isinstance(expected, bool):
        if not isinstance(got, bool):
            return _types(got, "bool")
        return None if bool(got) == bool(expected) else "not equal"
    if isinstance(expected, int):
        return _int_problem(got, expected, tol, json_numbers)
    if isinstance(expected, float):
        return _float_problem(got, float(expected), tol)
    if isinstance(expected, complex):
        if not isinstance(got, complex):
            return _types(got, "complex")
        return _float_problem(got.real, expected.real, tol) or _float_problem(got.imag, expected.imag, tol)
    if isinstance(expected, str):
        if not isinstance(got, str):
            return _types(got, "str")
        return None if str.__eq__(str(got), str(expected)) else "not equal"
    if isinstance(expected, (bytes, bytearray)):
        if not isinstance(got, (bytes, bytearray)):
            return _types(got, "bytes")
        return None if bytes(got) == bytes(expected) else "not equal"
    if isinstance(expected, (list, tuple)):
        if not isinstance(got, (list, tuple)):
            return _types(got, _kind(expected))
        if len(got) != len(expected):
            return f"{len(got)} items, not {len(expected)}"
        for i in range(len(expected) - 1, -1, -1):
            push.append((got[i], expected[i], path + (i,)))
        return None
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return _types(got, "dict")
        pairs, problem = _dict_pairs(got, expected)
        if problem:
            return problem
        for g, e, key in reversed(pairs):
            push.append((g, e, path + (key,)))
        return None
    if isinstance(expected, (set, frozenset)):
        if not isinstance(got, (set, frozenset)):
            return _types(got, _kind(expected))
        want = Counter(_canon(v) for v in expected)
        return None if want == Counter(_canon(v) for v in got) else "different elements"
    if type(got) is not type(expected):
        return _types(got, _kind(expected))
    return None if bool(got == expected) else "not equal"


def _where(path: tuple[Any, ...]) -> str:
    return "".join(f"[{show(k)}]" for k in path)


def value_mismatch(got: Any, expected: Any, tolerance: float | None = 0.0, *,
                   numbers: Numbers = "typed") -> str | None:
    """None when ``got`` matches ``expected`` under the rules above, else the first difference
    ("at [2]['a']: expected 3, got 3.5 (outside the tolerance)")."""
    tol, json_numbers = _effective(tolerance), numbers == "json"
    stack: list[tuple[Any, Any, tuple[Any, ...]]] = [(got, expected, ())]
    try:
        while stack:
            g, e, path = stack.pop()
            problem = _step(g, e, tol, json_numbers, stack, path)
            if problem is not None:
                where = f"at {_where(path)}: " if path else ""
                return f"{where}expected {show(e)}, got {show(g)} ({problem})"
    except RecursionError:  # hashable keys or set elements nested past the interpreter's limit
        return "a value nested too deeply to compare"
    except Exception as exc:  # noqa: BLE001 - a library caller's own type whose comparison raised
        return f"cannot be compared ({type(exc).__name__})"
    return None


def values_equal(got: Any, expected: Any, tolerance: float | None = 0.0, *, numbers: Numbers = "typed") -> bool:
    """Whether ``got`` matches ``expected`` (see the module's table); never raises."""
    return value_mismatch(got, expected, tolerance, numbers=numbers) is None
