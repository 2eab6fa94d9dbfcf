"""The values users' tests naturally pass cross by value (oracle/sandbox/runtime/wire_values.py):
numpy arrays and scalars, dates and times, Decimal and Fraction. Round trips are exact (type,
dtype, shape, every bit of every float: -0.0 and NaN inside arrays included); what may not cross is
refused naming it; a malformed tag is a ChannelError, never a value. The last part runs the two
real sides of the channel (tests/channel_support.py, this interpreter, which has numpy): arrays go
both ways and a candidate's in-place change to an array argument comes back."""

from __future__ import annotations

import datetime as dt
import decimal
import fractions
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from oracle.sandbox.runtime import wire, wire_values
from tests.channel_support import run_cases
from tests.profiles import examples


def roundtrip(value):
    frame = wire.dumps({"op": "ret", "value": wire.encode(value)})
    return wire.decode(wire.loads(frame[4:])["value"])


def same_array(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal dtype (byte order aside), shape and bytes: -0.0 and every NaN payload count."""
    return a.dtype.newbyteorder("=") == b.dtype.newbyteorder("=") and a.shape == b.shape and \
        np.ascontiguousarray(a, dtype=b.dtype).tobytes() == b.tobytes()


DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
          "float64", "complex64", "complex128"]
arrays = st.sampled_from(DTYPES).flatmap(lambda d: hnp.arrays(
    np.dtype(d), hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)))


# -- numpy ----------------------------------------------------------------------------------------
@settings(max_examples=examples(300))
@given(arrays)
def test_arrays_cross_exactly(a):
    got = roundtrip(a)
    assert type(got) is np.ndarray and got.flags.c_contiguous and got.flags.writeable and got.flags.owndata
    assert same_array(a, got)


@settings(max_examples=examples(100))
@given(arrays, st.sampled_from(["transpose", "slice", "big-endian", "reversed"]))
def test_any_layout_arrives_equal_and_in_c_order(a, how):
    if how == "transpose":
        src = a.T
    elif how == "slice":
        src = a[..., ::2] if a.ndim else a
    elif how == "reversed":
        src = a[::-1] if a.ndim else a
    else:
        src = a.astype(a.dtype.newbyteorder(">"))
    got = roundtrip(src)
    assert got.flags.c_contiguous and got.dtype.byteorder in ("=", "|", "<")
    assert same_array(src, got)


def test_negative_zero_nan_empty_and_zero_d_arrays():
    a = roundtrip(np.array([-0.0, np.nan, np.inf, -np.inf, 0.0]))
    assert math.copysign(1.0, a[0]) < 0 and math.isnan(a[1]) and a[2] == np.inf and a[3] == -np.inf
    assert math.copysign(1.0, a[4]) > 0
    for empty in (np.zeros(0), np.zeros((3, 0, 2), dtype=np.int16)):
        got = roundtrip(empty)
        assert got.shape == empty.shape and got.dtype == empty.dtype
    zero_d = roundtrip(np.array(7, dtype=np.uint32))
    assert type(zero_d) is np.ndarray and zero_d.shape == () and zero_d.dtype == np.uint32 and zero_d == 7


def test_a_subclass_arrives_as_a_plain_ndarray_and_a_masked_array_is_refused():
    class Tricky(np.ndarray):
        def __eq__(self, other):
            return True

    got = roundtrip(np.arange(3).view(Tricky))
    assert type(got) is np.ndarray and got.tolist() == [0, 1, 2]
    with pytest.raises(wire.NotPlain, match="masked array"):
        wire.encode(np.ma.array([1, 2], mask=[0, 1]))


@pytest.mark.parametrize("value", [np.int64(-5), np.int8(3), np.uint64(2**64 - 1), np.bool_(True), np.bool_(False),
                                   np.float32(-0.0), np.float16(1.5), np.complex64(1 - 2j), np.float32("nan")])
def test_numpy_scalars_keep_their_type(value):
    got = roundtrip(value)
    assert type(got) is type(value) and got.tobytes() == value.tobytes()


def test_float64_and_complex128_cross_as_float_and_complex():
    assert type(roundtrip(np.float64(2.5))) is float and type(roundtrip(np.complex128(1j))) is complex


@pytest.mark.parametrize("value, name", [
    (np.array(["a"]), "<U1"), (np.array([1, "x"], dtype=object), "object"), (np.zeros(2, "M8[ns]"), "datetime64"),
    (np.zeros(2, dtype=[("a", "i4")]), "('a', '<i4')"), (np.zeros(1, "V4"), "V4"), (np.array([b"x"]), "S1"),
    (np.longdouble(1), "float128"), (np.datetime64("2020-01-01"), "datetime64"), (np.str_("x"), None),
])
def test_dtypes_that_may_not_cross_are_refused_naming_the_dtype(value, name):
    if name is None:  # np.str_ subclasses str: it crosses as one
        assert type(roundtrip(value)) is str
        return
    with pytest.raises(wire.NotPlain, match="cannot cross") as info:
        wire.encode(value)
    assert name in str(info.value)


B8 = "AAAAAAAAAAA="  # eight zero bytes


@pytest.mark.parametrize("tag, why", [
    ({"nd": ["<f8", [2], B8]}, "needs 16 bytes, not 8"),
    ({"nd": ["<f8", [1], B8 + "A"]}, "base64"),
    ({"nd": ["|O", [1], B8]}, "dtype '|O'"),
    ({"nd": ["<U2", [1], B8]}, "dtype '<U2'"),
    ({"nd": ["<M8[ns]", [1], B8]}, "dtype '<M8[ns]'"),
    ({"nd": [["<f8"], [1], B8]}, "dtype"),
    ({"nd": [">f8", [1], B8]}, "dtype '>f8'"),
    ({"nd": ["<f8", [-1], ""]}, "shape"),
    ({"nd": ["<f8", [True], B8]}, "shape"),
    ({"nd": ["<f8", [1.0], B8]}, "shape"),
    ({"nd": ["<f8", [1] * 40, B8]}, "at most 32"),
    ({"nd": ["<f8", 1, B8]}, "[dtype, shape, bytes]"),
    ({"nd": ["<f8", [1]]}, "[dtype, shape, bytes]"),
    ({"nd": ["<f8", [2**62, 2**62], B8]}, "bytes"),
    ({"ns": ["<i8", "AA=="]}, "needs 8 bytes"),
    ({"ns": ["|O", B8]}, "dtype"),
    ({"date": [2020, 13, 1]}, "month"),
    ({"date": [2020, 1]}, "date"),
    ({"date": [2020, 1, True]}, "date"),
    ({"dt": [2020, 1, 1, 0, 0, 0, 0, 0, [86400 * 10**6, None]]}, "timezone"),
    ({"dt": [2020, 1, 1, 0, 0, 0, 0, 0, "UTC"]}, "timezone"),
    ({"tm": [25, 0, 0, 0, 0, None]}, "hour"),
    ({"td": [10**10, 0, 0]}, "td"),
    ({"dec": "1.5; import os"}, "Decimal"),
    ({"dec": "1" * (wire_values.MAX_DECIMAL_TEXT + 1)}, "Decimal"),
    ({"fr": [1, 0]}, "positive"),
    ({"fr": [1.5, 2]}, "int"),
])
def test_malformed_tags_are_refused(tag, why):
    with pytest.raises(wire.ChannelError) as info:
        wire.decode(json.loads(json.dumps(tag)))
    assert why in str(info.value), info.value


# -- dates, times, Decimal, Fraction --------------------------------------------------------------
offsets = st.integers(-86399 * 10**6 + 1, 86399 * 10**6 - 1).map(lambda us: dt.timezone(dt.timedelta(microseconds=us)))
zones = st.one_of(st.none(), st.just(dt.timezone.utc), offsets,
                  st.builds(dt.timezone, st.just(dt.timedelta(hours=5, minutes=30)), st.sampled_from(["IST", "ü"])))
others = st.one_of(
    st.dates(), st.timedeltas(),
    st.builds(lambda d, tz, fold: d.replace(tzinfo=tz, fold=fold), st.datetimes(), zones, st.integers(0, 1)),
    st.builds(lambda t, tz, fold: t.replace(tzinfo=tz, fold=fold), st.times(), zones, st.integers(0, 1)),
    st.decimals(allow_nan=True, allow_infinity=True), st.fractions(),
    st.builds(fractions.Fraction, st.integers(-10**30, 10**30), st.integers(1, 10**30)),
)


def same_value(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, decimal.Decimal):
        return str(a) == str(b)
    if isinstance(a, (dt.datetime, dt.time)):
        return a == b and a.fold == b.fold and a.tzinfo == b.tzinfo and repr(a) == repr(b)
    return a == b


@settings(max_examples=examples(300))
@given(others)
def test_dates_times_decimals_and_fractions_cross_exactly(value):
    assert same_value(value, roundtrip(value))


@settings(max_examples=examples(50))
@given(st.lists(others, max_size=4))
def test_they_cross_inside_containers(values):
    got = roundtrip({"k": tuple(values)})
    assert len(got["k"]) == len(values) and all(map(same_value, values, got["k"]))


@pytest.mark.parametrize("value", [decimal.Decimal("-0.00"), decimal.Decimal("sNaN12"), decimal.Decimal("-NaN"),
                                   decimal.Decimal("1E+999999999"), decimal.Decimal("1.10")])
def test_decimals_keep_their_exact_text(value):
    got = roundtrip(value)
    assert type(got) is decimal.Decimal and str(got) == str(value)


def test_other_tzinfo_is_refused_naming_its_type():
    import zoneinfo

    class Fixed(dt.tzinfo):
        def utcoffset(self, d):
            return dt.timedelta(hours=1)

    for tz, name in ((zoneinfo.ZoneInfo("UTC"), "zoneinfo.ZoneInfo"), (Fixed(), "Fixed")):
        for value in (dt.datetime(2020, 1, 1, tzinfo=tz), dt.time(1, tzinfo=tz)):
            with pytest.raises(wire.NotPlain, match=name):
                wire.encode(value)


def test_a_frame_limit_still_holds_for_big_arrays():
    with pytest.raises(wire.NotPlain, match="exceeds"):
        wire.dumps({"op": "ret", "value": wire.encode(np.zeros(wire.MAX_FRAME // 8))})


def test_encoding_never_imports_numpy(tmp_path):
    import subprocess
    import sys

    code = ("import sys, datetime, decimal\nfrom oracle.sandbox.runtime import wire\n"
            "wire.encode([datetime.date(2020, 1, 1), decimal.Decimal(1), 5])\n"
            "assert 'numpy' not in sys.modules, 'numpy imported'\n"
            "try:\n    wire.encode(object())\nexcept wire.NotPlain:\n    pass\n"
            "assert 'numpy' not in sys.modules\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_decoding_an_array_without_numpy_names_numpy_and_the_environment(tmp_path):
    import subprocess
    import sys

    blocker = tmp_path / "numpy"
    blocker.mkdir()
    (blocker / "__init__.py").write_text("raise ImportError('no numpy here')\n")
    code = ("from oracle.sandbox.runtime import wire\n"
            "try:\n    wire.decode({'nd': ['<f8', [1], 'AAAAAAAAAAA=']})\n"
            "except wire.ChannelError as exc:\n    print(exc)\n")
    import os

    env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{os.getcwd()}")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert "numpy cannot be imported on this side" in proc.stdout and "environment" in proc.stdout, proc


# -- both real sides of the channel ---------------------------------------------------------------
CANDIDATE = '''
import numpy as np


def unit(v):
    return v / np.linalg.norm(v)


def describe(x):
    return type(x).__name__, str(getattr(x, "dtype", "")), list(getattr(x, "shape", ()))


def sort_in_place(a):
    a.sort()
    a[0] = -1


def grow(a):
    a.shape = (2, 2)


def stats(a):
    return a.sum(), a.dtype == np.int32, a.max() > 2
'''


@pytest.mark.slow
def test_arrays_and_scalars_cross_between_the_real_sides():
    tests = {
        "unit": "import numpy as np\nassert np.allclose(unit(np.array([3.0, 4.0])), [0.6, 0.8])\n",
        "types": "import numpy as np\n"
                 "assert describe(np.zeros((2, 3), dtype=np.float32)) == ('ndarray', 'float32', [2, 3])\n"
                 "assert describe(np.int16(4)) == ('int16', 'int16', [])\n"
                 "assert describe(np.arange(6).reshape(2, 3).T) == ('ndarray', 'int64', [3, 2])\n",
        "scalars": "import numpy as np\ns, is32, big = stats(np.array([1, 2, 3], dtype=np.int32))\n"
                   "assert type(s) is np.int64 and s == 6 and type(is32) is bool and type(big) is np.bool_\n",
        "write_back": "import numpy as np\na = np.array([3, 1, 2])\nsort_in_place(a)\n"
                      "assert a.tolist() == [-1, 2, 3]\n",
        "view_write_back": "import numpy as np\nbig = np.array([9, 3, 1, 2])\nsort_in_place(big[1:])\n"
                           "assert big.tolist() == [9, -1, 2, 3]\n",
        "shape_change": "import numpy as np\ngrow(np.arange(4))\n",
        "big_endian_write_back": "import numpy as np\na = np.array([3.0, 1.0, 2.0], dtype='>f8')\nsort_in_place(a)\n"
                                 "assert a.tolist() == [-1.0, 2.0, 3.0] and a.dtype.str == '>f8'\n",
        "wrong": "import numpy as np\nassert np.allclose(unit(np.array([3.0, 4.0])), [0.8, 0.6])\n",
    }
    got = dict(zip(tests, run_cases([{"candidate": CANDIDATE, "test": {"kind": "assert", "code": code,
                                                                       "entry_point": "unit"}}
                                     for code in tests.values()])))
    for name in ("unit", "types", "scalars", "write_back", "view_write_back", "big_endian_write_back"):
        assert got[name]["outcome"] == "pass", (name, got[name])
    assert got["shape_change"]["outcome"] == "error" and "dtype or shape" in got["shape_change"]["message"]
    assert got["wrong"]["outcome"] == "fail"


def test_dates_decimals_and_fractions_cross_between_the_real_sides():
    cand = ("import datetime, decimal, fractions\n"
            "def later(d, days):\n    return d + datetime.timedelta(days=days)\n"
            "def money(x):\n    return x * decimal.Decimal('1.10')\n"
            "def half(f):\n    return f / 2\n")
    code = ("import datetime, decimal, fractions\n"
            "tz = datetime.timezone(datetime.timedelta(hours=2))\n"
            "got = later(datetime.datetime(2020, 2, 28, 12, tzinfo=tz), 1)\n"
            "assert got == datetime.datetime(2020, 2, 29, 12, tzinfo=tz) and got.tzinfo == tz\n"
            "assert later(datetime.date(2020, 12, 31), 1) == datetime.date(2021, 1, 1)\n"
            "assert str(money(decimal.Decimal('2.00'))) == '2.2000'\n"
            "assert half(fractions.Fraction(1, 3)) == fractions.Fraction(1, 6)\n")
    (verdict,) = run_cases([{"candidate": cand, "test": {"kind": "assert", "code": code, "entry_point": "later"}}])
    assert verdict["outcome"] == "pass", verdict


# -- in the real sandbox (the default interpreter: no numpy, no environment needed) ---------------
DATES_CANDIDATE = ("import datetime, decimal, fractions\n"
                   "def later(d, days):\n    return d + datetime.timedelta(days=days)\n"
                   "def money(x):\n    return x * decimal.Decimal('1.10')\n"
                   "def half(f):\n    return f / 2\n")
DATES_PYTEST = '''
import datetime
import decimal
import fractions

from solution import half, later, money


def test_dates():
    tz = datetime.timezone(datetime.timedelta(hours=-3), "BRT")
    got = later(datetime.datetime(2024, 2, 28, 23, 30, tzinfo=tz), 1)
    assert got == datetime.datetime(2024, 2, 29, 23, 30, tzinfo=tz) and got.tzinfo == tz
    assert later(datetime.date(2024, 12, 31), 1) == datetime.date(2025, 1, 1)
    assert later(datetime.timedelta(hours=1), 1) == datetime.timedelta(days=1, hours=1)


def test_decimal_and_fraction():
    assert money(decimal.Decimal("2.00")) == decimal.Decimal("2.2000")
    assert str(money(decimal.Decimal("2.00"))) == "2.2000"
    assert half(fractions.Fraction(1, 3)) == fractions.Fraction(1, 6)
'''


@pytest.mark.slow
@pytest.mark.sandbox
def test_dates_decimals_and_fractions_cross_in_the_sandbox():
    import asyncio

    from oracle.config.model import OracleConfig
    from oracle.strategies.protocol import EvaluationContext
    from oracle.strategies.verifier.strategy import VerifierStrategy
    from oracle.tasks.task import Task, Trajectory
    from tests.plugins.sandbox_backends import strongest_backend

    tests = [{"kind": "pytest", "name": "suite", "code": DATES_PYTEST},
             {"kind": "assert", "name": "assert",
              "code": "import datetime\nassert later(datetime.time(1, 2), 0) is None\n"}]
    wrong = DATES_CANDIDATE.replace("Decimal('1.10')", "Decimal('1.1')")
    task = Task(id="dates", prompt="later, money, half", entry_point="later", tests=tests)
    config = OracleConfig(verifier={"backend": strongest_backend(), "timeout_s": 20})
    strategy = VerifierStrategy()
    try:
        result = asyncio.run(strategy.evaluate(EvaluationContext(
            task=task, trajectories=(Trajectory(id="good", code=DATES_CANDIDATE), Trajectory(id="wrong", code=wrong)),
            config=config)))
    finally:
        strategy.close()
    good = {t["name"]: (t["outcome"], t["message"]) for t in result.candidate("good").details["tests"]}
    bad = {t["name"]: (t["outcome"], t["message"]) for t in result.candidate("wrong").details["tests"]}
    assert good["suite::test_dates"][0] == "pass" and good["suite::test_decimal_and_fraction"][0] == "pass", good
    outcome, message = bad["suite::test_decimal_and_fraction"]
    assert outcome == "fail" and "2.200" in message, message
    # A time crosses to the candidate, which adds a timedelta to it: the candidate's own TypeError.
    assert good["assert"][0] == "error" and "TypeError" in good["assert"][1], good
    assert result.broken_tests == []
