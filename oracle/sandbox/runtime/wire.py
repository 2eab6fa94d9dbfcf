"""The restricted codec and framing of the candidate/test channel (standard library only).

Why a codec of our own: the verdict is decided in the test process, so nothing that crosses from
the candidate may carry behaviour. Only plain data crosses, by value, with its type preserved:
None, bool, int (any size), float (nan, inf and -0.0 included), complex, str, bytes, bytearray, and tuples,
lists, dicts, sets and frozensets of these, plus JavaScript's ``undefined`` (``UNDEFINED``) and a
small JavaScript BigInt (``BigInt``, an int); and, between two Python sides, numpy arrays and
scalars, dates and times, ``Decimal`` and ``Fraction`` (wire_values.py says how, and what is
refused). Everything else crosses as a handle (an id the owner resolves) or not at all. Never
pickle: unpickling runs code chosen by the sender.

Encoding: JSON where JSON is exact (null, booleans, strings, integers of at most 2**53 - 1, finite
nonzero-signed floats written with a '.' or an exponent, lists); every JSON object is a tag, so a
tag can never be confused with data: ``{"t": [...]}`` tuple, ``{"d": [[k, v], ...]}`` dict (a
JavaScript plain object, or a Map when a key is not a string), ``{"m": [[k, v], ...]}`` a
JavaScript Map (a dict here), ``{"s": [...]}`` set, ``{"fs": [...]}`` frozenset, ``{"b":
"<base64>"}`` bytes, ``{"ba": "<base64>"}`` bytearray, ``{"c": [re, im]}`` complex, ``{"f":
"nan"|"inf"|"-inf"|"-0"|"<literal>"}`` a
float JSON cannot spell (the literal form: a JavaScript Number with an integral value past 2**53,
which must stay a float), ``{"h": id, "o": owner, "k": kind}`` a handle, ``{"u": 1}``
JavaScript's undefined, ``{"bi": "123"}`` an integer past 2**53 - 1, or a JavaScript BigInt;
``{"nd"}``, ``{"ns"}``, ``{"date"}``, ``{"dt"}``, ``{"tm"}``, ``{"td"}``, ``{"dec"}``, ``{"fr"}``
the values of wire_values.py.

The two languages (wire.js is the other end), one representation each:

======================  =========================  ==========================================
value                   on the wire                 arrives as
======================  =========================  ==========================================
Python int, |x|<2**53   ``5``                       JS Number; Python int
Python int, larger      ``{"bi": "…"}``             JS BigInt (never a rounded Number); int
JS BigInt               ``{"bi": "…"}``             JS BigInt; Python int (``BigInt`` when
                                                    small, so it goes back as a BigInt)
JS Number past 2**53    ``{"f": "1e+21"}``          JS Number; Python float
-0.0 / -0               ``{"f": "-0"}``             the negative zero on both sides
NaN, ±inf               ``{"f": "nan"}`` …          the same on both sides
undefined               ``{"u": 1}``                JS undefined; Python ``UNDEFINED``
complex                 ``{"c": [re, im]}``         Python complex; refused by JavaScript
numpy ndarray           ``{"nd": [dtype, shape,     a fresh writable C-order ndarray (bool,
                        "<base64>"]}``              int, uint, float, complex dtypes only)
numpy scalar            ``{"ns": [dtype, "…"]}``    the same numpy type (np.float64 and
                                                    np.complex128 are float and complex)
date, datetime, time    ``{"date": [y, m, d]}``,    the same type, naive or with a fixed-offset
                        ``{"dt"}``, ``{"tm"}``      ``datetime.timezone``; other tzinfo refused
timedelta               ``{"td": [d, s, us]}``      timedelta
Decimal                 ``{"dec": "1.10"}``         Decimal, its exact text (NaN, -0 included)
Fraction                ``{"fr": [n, d]}``          Fraction
======================  =========================  ==========================================

The values below complex are Python's alone: wire.js refuses each of them by name ("a numpy array
cannot cross into JavaScript"). Both sides of a run speak one language (the task's), so a Python
side never has a JavaScript peer; the refusal is for a message that reaches one all the same.

A Python float with an integral value (3.0) reaches JavaScript as the Number 3, which comes back
as the int 3: JavaScript has one number type. A str holding a UTF-16 surrogate pair as two code
points ("\\ud83d\\ude00") is refused: JSON would merge it into one character. Lone surrogates
cross as they are.

Framing: a 4-byte big-endian length, then that many bytes of UTF-8 JSON. Frames above
``MAX_FRAME`` bytes, invalid UTF-8, invalid JSON, unknown tags and nesting deeper than
``MAX_DEPTH`` are a ``ChannelError``: the receiver fails the current test, nothing else.
"""

from __future__ import annotations

import base64
import builtins
import json
import math
import os
import re
import struct
import sys

from . import wire_values

TYPE_CHECKING = False  # type checkers read the block below; at run time nothing more is imported
if TYPE_CHECKING:
    from typing import Any

MAX_FRAME = 32 * 1024 * 1024
MAX_DEPTH = 200
MAX_INT_DIGITS = 100_000
MAX_SAFE_INT = 2**53 - 1
"""The largest integer a JavaScript Number holds exactly; larger ones travel as ``{"bi"}``."""
_HEADER = struct.Struct(">I")
_SURROGATE_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_DIGITS = re.compile(r"-?[0-9]+", re.ASCII)
_FLOAT_LITERAL = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?", re.ASCII)

if hasattr(sys, "set_int_max_str_digits"):
    sys.set_int_max_str_digits(MAX_INT_DIGITS + 10)


class ChannelError(Exception):
    """The peer sent something that is not a well-formed message, or the channel broke."""


class NotPlain(Exception):
    """A value of a type that may not cross by value (its type is named in the message)."""


wire_values.errors.not_plain, wire_values.errors.channel = NotPlain, ChannelError


class Handle:
    """A reference to an object that stays with its owner ("c" candidate side, "t" test side)."""

    __slots__ = ("id", "owner", "kind")

    def __init__(self, hid: int, owner: str, kind: str = "object") -> None:
        self.id, self.owner, self.kind = hid, owner, kind

    def __repr__(self) -> str:
        return f"Handle({self.id}, {self.owner!r}, {self.kind!r})"


class BigInt(int):
    """A JavaScript BigInt small enough to pass for a Number (|x| <= 2**53 - 1): an int here,
    which goes back to JavaScript as a BigInt. Larger integers need no marker (JavaScript can only
    hold them as BigInts)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{int(self)}n"


class Undefined:
    """JavaScript's ``undefined`` (``UNDEFINED``, the only instance): not None, equal only to
    itself, falsy, so that a JavaScript function that forgets to return never matches ``null``."""

    __slots__ = ()
    _instance: "Undefined | None" = None

    def __new__(cls) -> "Undefined":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "undefined"

    def __reduce__(self) -> str:
        return "UNDEFINED"


UNDEFINED = Undefined()


_PLAIN_SCALARS = (type(None), bool, int, float, complex, str, bytes)
_BASES = (bool, int, float, complex, str, bytes, bytearray, tuple, list, dict, frozenset, set)


def plain_base(value: object) -> type | None:
    """The plain type ``value`` crosses as (a subclass crosses as its base), or None."""
    t = type(value)
    if t in _BASES or value is None:
        return t
    for base in _BASES:
        if isinstance(value, base):
            return base
    return None


def encode(value: Any, to_handle=None, _depth: int = 0) -> object:
    """``value`` as a JSON-ready structure. ``to_handle(obj) -> Handle`` takes non-plain values;
    without it they raise ``NotPlain`` naming the type."""
    if _depth > MAX_DEPTH:
        raise NotPlain(f"nesting deeper than {MAX_DEPTH}")
    if value is None or value is True or value is False:
        return value
    if value is UNDEFINED:
        return {"u": 1}
    base = plain_base(value)
    if base is bool:
        return bool(value)
    if base is int:
        n = int.__index__(value)
        if -MAX_SAFE_INT <= n <= MAX_SAFE_INT and type(value) is not BigInt:
            return n
        return {"bi": _int_text(n)}
    if base is float:
        f = float.__float__(value)
        if math.isfinite(f):
            return f if f != 0.0 or math.copysign(1.0, f) > 0 else {"f": "-0"}
        return {"f": "nan" if math.isnan(f) else ("inf" if f > 0 else "-inf")}
    if base is str:
        text = str.__str__(value)
        if not text.isascii():
            pair = _SURROGATE_PAIR.search(text)
            if pair is not None:
                raise NotPlain(f"a str holding a UTF-16 surrogate pair as two code points (U+{ord(pair[0][0]):04X} "
                               f"U+{ord(pair[0][1]):04X} at index {pair.start()}) cannot cross: JSON would merge "
                               "them into one character")
        return text
    if base is bytes:
        return {"b": base64.b64encode(bytes(value)).decode("ascii")}
    if base is bytearray:
        return {"ba": base64.b64encode(bytes(value)).decode("ascii")}
    if base is complex:
        c = complex(value)
        return {"c": [encode(c.real), encode(c.imag)]}
    d = _depth + 1
    if base is list:
        return [encode(v, to_handle, d) for v in list.__iter__(value)]
    if base is tuple:
        return {"t": [encode(v, to_handle, d) for v in tuple.__iter__(value)]}
    if base is dict:
        return {"d": [[encode(k, to_handle, d), encode(v, to_handle, d)] for k, v in dict.items(value)]}
    if base is set:
        return {"s": [encode(v, to_handle, d) for v in set.__iter__(value)]}
    if base is frozenset:
        return {"fs": [encode(v, to_handle, d) for v in frozenset.__iter__(value)]}
    if isinstance(value, Handle):
        return {"h": value.id, "o": value.owner, "k": value.kind}
    tagged = wire_values.encode(value, encode)
    if tagged is not None:
        return tagged
    if to_handle is not None:
        h = to_handle(value)
        return {"h": h.id, "o": h.owner, "k": h.kind}
    raise NotPlain(f"a value of type {type(value).__module__}.{type(value).__qualname__} cannot cross "
                   "the boundary (plain data only)")


def _int_text(n: int) -> str:
    try:
        text = str(n)
    except ValueError:
        text = ""
    if not text or len(text) > MAX_INT_DIGITS + 1:
        raise NotPlain(f"an integer of more than {MAX_INT_DIGITS} digits cannot cross the boundary")
    return text


def _float_tag(text: object) -> float:
    if text == "nan":
        return float("nan")  # a fresh object each time: two NaNs in a set stay two, as sent
    if text == "inf":
        return math.inf
    if text == "-inf":
        return -math.inf
    if text == "-0":
        return -0.0
    if isinstance(text, str) and len(text) <= 400 and _FLOAT_LITERAL.fullmatch(text):
        value = float(text)
        if math.isfinite(value):
            return value
    raise ChannelError(f"bad float tag {str(text)[:40]!r}")


def _hashable(value: object, what: str) -> object:
    try:
        hash(value)
    except TypeError:
        raise ChannelError(f"unhashable {type(value).__name__} as a {what}") from None
    return value


def decode(data: object, from_handle=None, _depth: int = 0) -> object:
    """The plain value a JSON structure stands for; handles go through ``from_handle(Handle)``."""
    if _depth > MAX_DEPTH:
        raise ChannelError(f"nesting deeper than {MAX_DEPTH}")
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    d = _depth + 1
    if isinstance(data, list):
        return [decode(v, from_handle, d) for v in data]
    if not isinstance(data, dict) or len(data) == 0:
        raise ChannelError(f"unexpected {type(data).__name__} in a message")
    if "h" in data:
        if not (isinstance(data.get("h"), int) and data.get("o") in ("c", "t") and len(data) <= 3):
            raise ChannelError("malformed handle")
        handle = Handle(data["h"], data["o"], str(data.get("k", "object")))
        if from_handle is None:
            raise ChannelError("a handle where only plain data may cross")
        return from_handle(handle)
    if len(data) != 1:
        raise ChannelError(f"unknown tag {sorted(data)[:3]}")
    (tag, body), = data.items()
    if tag == "f":
        return _float_tag(body)
    if tag == "b" or tag == "ba":
        if not isinstance(body, str):
            raise ChannelError("bytes tag must hold base64 text")
        try:
            raw = base64.b64decode(body.encode("ascii"), validate=True)
        except (ValueError, UnicodeEncodeError):
            raise ChannelError("bytes tag is not valid base64") from None
        return raw if tag == "b" else bytearray(raw)
    if tag == "u":
        if body != 1 or isinstance(body, bool):
            raise ChannelError("bad undefined tag")
        return UNDEFINED
    if tag in wire_values.TAGS:
        return wire_values.decode(tag, body, lambda v: decode(v, None, d))
    if tag == "bi":
        if not isinstance(body, str) or len(body) > MAX_INT_DIGITS + 1 or not _DIGITS.fullmatch(body):
            raise ChannelError("bad bigint tag")
        n = int(body)
        return BigInt(n) if -MAX_SAFE_INT <= n <= MAX_SAFE_INT else n
    if not isinstance(body, list):
        raise ChannelError(f"tag {tag!r} must hold a list")
    if tag == "t":
        return tuple(decode(v, from_handle, d) for v in body)
    if tag == "c":
        if len(body) != 2:
            raise ChannelError("complex tag must hold [re, im]")
        re_: Any
        im: Any
        re_, im = (decode(v, None, d) for v in body)
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (re_, im)):
            raise ChannelError("complex parts must be numbers")
        return complex(re_, im)
    if tag == "s" or tag == "fs":
        items = [_hashable(decode(v, from_handle, d), "set item") for v in body]
        return set(items) if tag == "s" else frozenset(items)
    if tag == "d" or tag == "m":
        out = {}
        for pair in body:
            if not isinstance(pair, list) or len(pair) != 2:
                raise ChannelError("dict tag must hold [key, value] pairs")
            out[_hashable(decode(pair[0], from_handle, d), "dict key")] = decode(pair[1], from_handle, d)
        return out
    raise ChannelError(f"unknown tag {tag!r}")


def _parse_int(text: str) -> int:
    if len(text) > MAX_INT_DIGITS:
        raise ChannelError(f"an integer of more than {MAX_INT_DIGITS} digits")
    return int(text)


def _no_constant(name: str) -> None:
    raise ChannelError(f"bare {name} in a message (non-finite floats travel as tags)")


def dumps(message: dict) -> bytes:
    """A message (already encoded) as one frame."""
    # ensure_ascii: a lone surrogate (a legal Python str) travels as a \u escape, not as bad UTF-8.
    body = json.dumps(message, allow_nan=False, separators=(",", ":"), ensure_ascii=True).encode("ascii")
    if len(body) > MAX_FRAME:
        raise NotPlain(f"message of {len(body)} bytes exceeds the {MAX_FRAME}-byte limit")
    return _HEADER.pack(len(body)) + body


def loads(body: bytes) -> dict:
    """One frame's body as a message dict; anything malformed is a ChannelError."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise ChannelError("a message that is not valid UTF-8") from None
    try:
        message = json.loads(text, parse_int=_parse_int, parse_constant=_no_constant)
    except ChannelError:
        raise
    except (ValueError, RecursionError) as exc:
        raise ChannelError(f"a message that is not valid JSON: {str(exc)[:120]}") from None
    if not isinstance(message, dict) or not isinstance(message.get("op"), str):
        raise ChannelError("a message without an op")
    return message


class Channel:
    """Blocking frame I/O on one file descriptor (a connected socket or a pipe pair)."""

    def __init__(self, rfd: int, wfd: int | None = None) -> None:
        self.rfd = rfd
        self.wfd = rfd if wfd is None else wfd
        self._buf = bytearray()

    def send(self, message: dict) -> None:
        frame = dumps(message)
        view = memoryview(frame)
        while view:
            try:
                n = os.write(self.wfd, view)
            except BrokenPipeError:
                raise ChannelError("the peer closed the channel") from None
            except OSError as exc:
                raise ChannelError(f"cannot write to the channel: {exc}") from None
            view = view[n:]

    def _fill(self, want: int) -> None:
        while len(self._buf) < want:
            try:
                chunk = os.read(self.rfd, max(65536, want - len(self._buf)))
            except OSError as exc:
                raise ChannelError(f"cannot read from the channel: {exc}") from None
            if not chunk:
                raise EOFError("the peer closed the channel")
            self._buf += chunk

    def recv(self) -> dict:
        """The next message; EOFError when the peer closed the channel cleanly between messages."""
        self._fill(4)
        (size,) = _HEADER.unpack(bytes(self._buf[:4]))
        if size > MAX_FRAME:
            raise ChannelError(f"a message of {size} bytes exceeds the {MAX_FRAME}-byte limit")
        try:
            self._fill(4 + size)
        except EOFError:
            raise ChannelError("the channel closed in the middle of a message") from None
        body = bytes(self._buf[4:4 + size])
        del self._buf[:4 + size]
        return loads(body)


# Built-in exception types a candidate's exception may be re-raised as on the test side.
BUILTIN_EXCEPTIONS = {name: obj for name, obj in vars(builtins).items()
                      if isinstance(obj, type) and issubclass(obj, BaseException)}
EXIT_EXCEPTIONS = ("SystemExit", "KeyboardInterrupt", "GeneratorExit")


def builtin_exception_name(exc: BaseException) -> str:
    """The nearest built-in exception type of ``exc`` (a candidate's own class maps to its base)."""
    for klass in type(exc).__mro__:
        if klass.__module__ == "builtins" and klass.__name__ in BUILTIN_EXCEPTIONS:
            return klass.__name__
    return "Exception"
