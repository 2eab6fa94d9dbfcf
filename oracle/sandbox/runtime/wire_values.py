"""Values users' tests pass that JSON has no form for: numpy arrays and scalars, dates and times,
Decimal and Fraction, encoded as wire.py tags (standard library only at import).

Why by value: a test that hands the candidate ``np.array([3.0, 4.0])`` or a ``date`` means the
value, not an object to call back into; a handle to it would make every ``==`` on it an identity
check. Each value is rebuilt on the receiving side from data alone, by our own code:

- an ndarray crosses as ``{"nd": [dtype, shape, "<base64>"]}``: the dtype string (little-endian),
  the shape, the raw bytes in C order. Only the dtypes of ``ARRAY_DTYPES`` cross (bool, signed and
  unsigned ints, floats, complex); object, structured, string and datetime64 arrays are refused
  naming their dtype. A subclass crosses as a plain ndarray (a masked array is refused: its mask
  would be lost). What arrives is a fresh, writable, C-ordered base-class ndarray;
- a numpy scalar (``np.int64``, ``np.bool_``, ``np.float32``...) as ``{"ns": [dtype, "<base64>"]}``;
  ``np.float64`` and ``np.complex128`` subclass float and complex and cross as those;
- ``{"date": [y, m, d]}``, ``{"dt": [y, m, d, H, M, S, us, fold, tz]}``, ``{"tm": [H, M, S, us,
  fold, tz]}``, ``{"td": [days, seconds, us]}``; ``tz`` is null (naive) or ``[offset_us, name]``
  (a fixed-offset ``datetime.timezone``, ``name`` null for its default); any other tzinfo (zoneinfo,
  pytz, dateutil) is refused: its rules are code;
- ``{"dec": "<text>"}`` a ``decimal.Decimal`` (its exact text: digits, exponent, sign, NaN, sNaN,
  Infinity), ``{"fr": [n, d]}`` a ``fractions.Fraction``.

Encoding looks numpy up in ``sys.modules`` (it never imports it to encode: a side that has not
imported numpy holds no arrays). Decoding an array or numpy scalar imports numpy then; a side
whose environment lacks numpy gets a ``ChannelError`` that says so. Decoding runs no code the
sender chose: the dtype is looked up in our table, never parsed by numpy from sender text.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import fractions
import re
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

ARRAY_DTYPES = {
    "|b1": 1, "|i1": 1, "|u1": 1, "<i2": 2, "<u2": 2, "<i4": 4, "<u4": 4, "<i8": 8, "<u8": 8,
    "<f2": 2, "<f4": 4, "<f8": 8, "<c8": 8, "<c16": 16,
}
"""The dtypes that cross (as numpy spells them, little-endian), with their item sizes."""
MAX_NDIM = 32
"""At most this many dimensions cross (numpy 2 allows 64); more is refused before numpy sees it."""
MAX_DECIMAL_TEXT = 100_010
_DECIMAL = re.compile(r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|Infinity|s?NaN[0-9]*)",
                      re.ASCII)
TAGS = frozenset({"nd", "ns", "date", "dt", "tm", "td", "dec", "fr"})


class _Errors:
    """wire.py's exception types, handed in so this module needs no import of wire (no cycle)."""

    not_plain: type[Exception] = Exception
    channel: type[Exception] = Exception


errors = _Errors()


def _numpy_kind(value: object) -> str | None:
    """'array', 'scalar' or None, judged by the numpy this process has already imported."""
    np = sys.modules.get("numpy")
    if np is None:
        return None
    try:
        if isinstance(value, np.ndarray):
            return "array"
        if isinstance(value, np.generic):
            return "scalar"
    except Exception:  # noqa: BLE001 - a module named numpy that is not numpy: not ours to judge
        return None
    return None


def _dtype_code(dtype) -> str:
    """The little-endian code of ``dtype`` if it may cross, else NotPlain naming it."""
    code = dtype.newbyteorder("<").str if dtype.byteorder not in ("|",) else dtype.str
    if dtype.fields is not None or dtype.subdtype is not None or code not in ARRAY_DTYPES:
        raise errors.not_plain(f"a numpy array or scalar of dtype {dtype!s} ({dtype.str}) cannot cross: only "
                               "bool, int, float and complex dtypes do (convert it, e.g. .tolist())")
    return code


def encode(value: object, encode_plain: Callable[[object], object]) -> object | None:
    """The tag for ``value`` if it is one of this module's kinds, else None (``encode_plain``
    encodes the plain parts: ints of a Fraction)."""
    kind = _numpy_kind(value)
    if kind == "array":
        np = sys.modules["numpy"]
        if isinstance(value, np.ma.MaskedArray):
            raise errors.not_plain("a numpy masked array cannot cross the boundary: its mask would be lost "
                                   "(send .filled(...) or the data and the mask as two arrays)")
        arr = np.asarray(value)  # a subclass as its base class: no method of its own runs from here on
        code = _dtype_code(arr.dtype)
        if arr.ndim > MAX_NDIM:
            raise errors.not_plain(f"a numpy array of {arr.ndim} dimensions cannot cross (at most {MAX_NDIM})")
        raw = np.ascontiguousarray(arr, dtype=np.dtype(code)).tobytes(order="C")
        return {"nd": [code, [int(n) for n in arr.shape], base64.b64encode(raw).decode("ascii")]}
    if kind == "scalar":
        np = sys.modules["numpy"]
        code = _dtype_code(value.dtype)  # type: ignore[attr-defined]
        raw = np.asarray(value, dtype=np.dtype(code)).tobytes()
        return {"ns": [code, base64.b64encode(raw).decode("ascii")]}
    if isinstance(value, datetime.datetime):
        nanos = getattr(value, "nanosecond", 0)  # pandas' Timestamp: nanoseconds a datetime cannot hold
        if nanos:
            raise errors.not_plain(f"a {type(value).__qualname__} with nanoseconds cannot cross as a datetime")
        return {"dt": [value.year, value.month, value.day, value.hour, value.minute, value.second,
                       value.microsecond, value.fold, _tz(value.tzinfo, value)]}
    if isinstance(value, datetime.date):
        return {"date": [value.year, value.month, value.day]}
    if isinstance(value, datetime.time):
        return {"tm": [value.hour, value.minute, value.second, value.microsecond, value.fold,
                       _tz(value.tzinfo, None)]}
    if isinstance(value, datetime.timedelta):
        return {"td": [value.days, value.seconds, value.microseconds]}
    if isinstance(value, decimal.Decimal):
        text = decimal.Decimal.__str__(value)
        if len(text) > MAX_DECIMAL_TEXT:
            raise errors.not_plain(f"a Decimal of more than {MAX_DECIMAL_TEXT} characters cannot cross")
        return {"dec": text}
    if isinstance(value, fractions.Fraction):
        return {"fr": [encode_plain(int(value.numerator)), encode_plain(int(value.denominator))]}
    return None


def _tz(tz: object, moment: datetime.datetime | None) -> list | None:
    if tz is None:
        return None
    if type(tz) is not datetime.timezone:
        raise errors.not_plain(f"a date or time with tzinfo {type(tz).__module__}.{type(tz).__qualname__} cannot "
                               "cross: only naive ones and a fixed datetime.timezone do (convert it: .astimezone())")
    offset = tz.utcoffset(None)
    us = (offset.days * 86400 + offset.seconds) * 1_000_000 + offset.microseconds
    name = tz.tzname(None)
    return [us, None if name == datetime.timezone(offset).tzname(None) else name]


# -- decoding --------------------------------------------------------------------------------------
def _ints(body: object, n: int, what: str) -> list[int]:
    if not (isinstance(body, list) and len(body) == n
            and all(isinstance(x, int) and not isinstance(x, bool) for x in body)):
        raise errors.channel(f"bad {what} tag")
    return body


def _raw(text: object, what: str) -> bytes:
    if not isinstance(text, str):
        raise errors.channel(f"{what} tag must hold base64 text")
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise errors.channel(f"{what} tag is not valid base64") from None


def _numpy(what: str):
    try:
        import numpy
    except BaseException as exc:  # noqa: BLE001 - any failure to import is the same answer
        raise errors.channel(f"the other side sent a {what}, but numpy cannot be imported on this side "
                             f"({type(exc).__name__}: {exc}); a task that passes numpy values needs numpy "
                             "wherever they arrive: in the task's environment (environment: {requirements: "
                             "[numpy]}) for the sandbox's two sides") from None
    return numpy


def _itemsize(code: object) -> int:
    """The item size of a dtype from our table (never parsed by numpy from the sender's text)."""
    if not isinstance(code, str) or code not in ARRAY_DTYPES:
        shown = str(code)[:40]
        raise errors.channel(f"an array or numpy scalar of dtype {shown!r} in a message: only bool, integer, "
                             "float and complex dtypes cross by value (little-endian)")
    return ARRAY_DTYPES[code]


def _decode_tz(data: object):
    if data is None:
        return None
    if not (isinstance(data, list) and len(data) == 2 and isinstance(data[0], int) and not isinstance(data[0], bool)
            and (data[1] is None or isinstance(data[1], str) and len(data[1]) <= 100)):
        raise errors.channel("bad timezone in a date or time tag")
    try:
        offset = datetime.timedelta(microseconds=data[0])
        return datetime.timezone(offset) if data[1] is None else datetime.timezone(offset, data[1])
    except (ValueError, OverflowError, TypeError) as exc:
        raise errors.channel(f"bad timezone in a date or time tag: {exc}") from None


def decode(tag: str, body: Any, decode_plain: Callable[[object], object]) -> object:
    """The value of one of this module's tags (``tag`` in ``TAGS``); malformed is a ChannelError,
    a dtype that may not cross a NotPlain naming it."""
    try:
        if tag == "nd":
            if not (isinstance(body, list) and len(body) == 3 and isinstance(body[1], list)):
                raise errors.channel("an array tag must hold [dtype, shape, bytes]")
            code, shape, text = body
            if len(shape) > MAX_NDIM or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                                                for n in shape):
                raise errors.channel(f"bad array shape (non-negative ints, at most {MAX_NDIM} of them)")
            size = _itemsize(code)
            raw = _raw(text, "array")
            count = 1
            for n in shape:
                count *= n
            if count * size != len(raw):
                raise errors.channel(f"an array of shape {tuple(shape)} and dtype {code} needs "
                                     f"{count * size} bytes, not {len(raw)}")
            np = _numpy("numpy array")
            dtype = np.dtype(code)
            return np.frombuffer(raw, dtype=dtype).reshape(shape).copy(order="C")
        if tag == "ns":
            if not (isinstance(body, list) and len(body) == 2):
                raise errors.channel("a numpy scalar tag must hold [dtype, bytes]")
            size = _itemsize(body[0])
            raw = _raw(body[1], "numpy scalar")
            if len(raw) != size:
                raise errors.channel(f"a numpy scalar of dtype {body[0]} needs {size} bytes")
            np = _numpy("numpy scalar")
            dtype = np.dtype(body[0])
            return np.frombuffer(raw, dtype=dtype)[0]
        if tag == "date":
            return datetime.date(*_ints(body, 3, "date"))
        if tag == "dt":
            if not isinstance(body, list) or len(body) != 9:
                raise errors.channel("bad datetime tag")
            y, mo, d, h, mi, s, us, fold = _ints(body[:8], 8, "datetime")
            return datetime.datetime(y, mo, d, h, mi, s, us, tzinfo=_decode_tz(body[8]), fold=fold)
        if tag == "tm":
            if not isinstance(body, list) or len(body) != 6:
                raise errors.channel("bad time tag")
            h, mi, s, us, fold = _ints(body[:5], 5, "time")
            return datetime.time(h, mi, s, us, tzinfo=_decode_tz(body[5]), fold=fold)
        if tag == "td":
            days, seconds, us = _ints(body, 3, "timedelta")
            return datetime.timedelta(days=days, seconds=seconds, microseconds=us)
        if tag == "dec":
            if not isinstance(body, str) or len(body) > MAX_DECIMAL_TEXT or not _DECIMAL.fullmatch(body):
                raise errors.channel("bad Decimal tag")
            return decimal.Decimal(body)
        if tag == "fr":
            if not (isinstance(body, list) and len(body) == 2):
                raise errors.channel("a Fraction tag must hold [numerator, denominator]")
            num, den = (decode_plain(x) for x in body)
            if not (isinstance(num, int) and isinstance(den, int)) or isinstance(num, bool) \
                    or isinstance(den, bool) or den <= 0:
                raise errors.channel("a Fraction tag must hold an int and a positive int")
            return fractions.Fraction(int(num), int(den))
    except (ValueError, OverflowError, TypeError, ArithmeticError, MemoryError) as exc:
        raise errors.channel(f"bad {tag!r} tag: {str(exc)[:200]}") from None
    raise errors.channel(f"unknown tag {tag!r}")
