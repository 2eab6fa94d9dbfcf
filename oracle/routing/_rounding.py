"""``round(x, digits)`` for the route trace, without its decimal string round trip in the usual case.

The trace rounds a dozen floats per route (totals to 9 digits, shares and densities to 6), and
``round(x, n)`` formats ``x`` as a decimal string and parses it back: on the machines we measure it
costs more than the rest of the arithmetic of a route. Here the same value is reached with float
arithmetic whenever that is provably exact, and ``round`` itself is called otherwise.

Why it is exact: with ``s = 10**digits`` (an exact double), ``y = x * s`` differs from the real
product by at most ``|y| * 2**-53``, under ``2**-13`` while ``|y| < 2**40``. If ``y`` is more than
0.4999 away from a tie, the real product rounds to the same integer ``n`` that ``y`` does (no tie is
possible), which is the integer ``round`` finds (``n`` is computed in float arithmetic, see
``_SHIFT``). ``round`` then returns the double nearest to
``n / 10**digits``; so does the IEEE division ``n / s`` of two exact doubles. A nonzero value that
rounds to 0 goes to ``round``, which keeps its sign (-0.0).
"""

from __future__ import annotations

_SCALES = {digits: float(10 ** digits) for digits in range(16)}
_LIMIT = float(2 ** 40)
_SHIFT = 6755399441055744.0  # 1.5 * 2**52
"""``(y + _SHIFT) - _SHIFT`` is ``y`` rounded to the nearest integer (ties to even), as a float, for
``|y| < 2**51``: adding 1.5 * 2**52 leaves no bits below the units place, so the addition itself
rounds (IEEE round-to-nearest-even), and the subtraction is exact. No call and no int object."""


def round_to(x: float, digits: int) -> float:
    """Exactly ``round(x, digits)`` for a float ``x`` and ``0 <= digits <= 15``."""
    scale = _SCALES[digits]
    y = x * scale
    if -_LIMIT < y < _LIMIT:  # also False for NaN
        n = (y + _SHIFT) - _SHIFT
        if -0.4999 < y - n < 0.4999:
            if n:
                return n / scale
            if not x:
                return x  # 0.0 or -0.0, as round keeps it
    return round(x, digits)
