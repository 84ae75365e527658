"""Duration strings in (polars' units), readable durations out.

``parse_duration`` reads polars-style strings: an integer or decimal count and a unit, repeated
("5s", "250ms", "1m30s", "1.5h", "2d12h"); units ns, us (or µs), ms, s, m, h, d (24 h) and w
(7 d). ``parse_tolerance`` reads what ``--tolerance`` takes: such a string, or a bare number in
the key's own unit. ``format_duration`` writes nanoseconds for people.

>>> parse_duration("1m30s"), parse_duration("250ms"), parse_duration("1.5us")
(90000000000, 250000000, 1500)
>>> str(parse_tolerance("5s"))  # durations: numpy.timedelta64
'5000000000 nanoseconds'
>>> parse_tolerance("1000"), parse_tolerance("0.25")  # numbers: in the key's own unit
(1000, 0.25)
>>> format_duration(4_213_000), format_duration(-90 * 10**9), format_duration(3 * 86_400 * 10**9)
('4.21 ms', '-1m 30s', '3d')
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

import numpy as np

UNIT_NS = {
    "ns": 1,
    "us": 10**3,
    "µs": 10**3,
    "ms": 10**6,
    "s": 10**9,
    "m": 60 * 10**9,
    "h": 3600 * 10**9,
    "d": 86_400 * 10**9,
    "w": 7 * 86_400 * 10**9,
}
_CALENDAR = {"mo": "months", "q": "quarters", "y": "years"}
_PART = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-zµ]+)", re.IGNORECASE)
_INT64_MAX = int(np.iinfo(np.int64).max)
UNITS_TEXT = "ns, us, ms, s, m, h, d, w"


def timedelta_ns(delta) -> int:
    """A ``datetime.timedelta``'s whole nanoseconds, exactly: a pandas ``Timedelta`` (a
    subclass) keeps those below the microsecond in ``nanoseconds``, which its days, seconds
    and microseconds leave out.

    >>> import datetime, pandas as pd
    >>> timedelta_ns(datetime.timedelta(seconds=1, microseconds=2))
    1000002000
    >>> timedelta_ns(pd.Timedelta(nanoseconds=1500)), timedelta_ns(pd.Timedelta(nanoseconds=-500))
    (1500, -500)
    """
    ns = (delta.days * 86_400 + delta.seconds) * 10**9 + delta.microseconds * 1000
    return ns + int(getattr(delta, "nanoseconds", 0))


_A_DURATION = "a duration such as 5s, 250ms or 1m30s"


def parse_duration(text: str, expected: str = _A_DURATION) -> int:
    """A duration string as whole nanoseconds (never negative); ``expected``: what a text
    of neither counts nor units is told it should have been."""
    if not isinstance(text, str) or not text.strip():
        msg = f"expected {expected}, got {text!r}"
        raise ValueError(msg)
    stripped = text.strip()
    if stripped.startswith("-"):
        msg = f"a duration must not be negative, got {text!r}"
        raise ValueError(msg)
    total, end = Decimal(0), 0
    for part in _PART.finditer(stripped):
        if part.start() != end:
            break
        count, unit = Decimal(part.group(1)), part.group(2)
        if unit not in UNIT_NS:
            if unit.lower() in _CALENDAR or unit.lower() in ("mo", "i"):
                what = _CALENDAR.get(unit.lower(), "index counts")
                msg = f"{text!r}: {what} ({unit}) have no fixed length; use one of {UNITS_TEXT}"
            else:
                msg = (
                    f"{text!r}: unknown unit {unit!r}; use one of {UNITS_TEXT} (e.g. 1m30s), "
                    f"or on date and timestamp keys the calendar's mo, q, y"
                )
            raise ValueError(msg)
        total += count * UNIT_NS[unit]
        end = part.end()
    if end != len(stripped) or end == 0:
        msg = f"expected {expected} (units {UNITS_TEXT}), got {text!r}"
        raise ValueError(msg)
    if total != total.to_integral_value():
        msg = f"{text!r} is not a whole number of nanoseconds"
        raise ValueError(msg)
    if total > _INT64_MAX:
        msg = (
            f"{text!r} is too long: durations go up to about 292 years (a longer one is a "
            f"number in the key's own unit, e.g. 1000000 for a million days on a date key)"
        )
        raise ValueError(msg)
    return int(total)


def parse_tolerance(text: str):
    """``--tolerance``: a bare number (int or float, in the key's own unit) or a duration
    string (a ``numpy.timedelta64`` in nanoseconds)."""
    stripped = text.strip() if isinstance(text, str) else text
    try:
        number = Decimal(stripped.replace("_", "")) if isinstance(stripped, str) else None
    except InvalidOperation:
        number = None
    if number is None or not stripped:
        # (a float or integer key's user wants a number: the message names both)
        expected = f"a number in the key's own unit (0.5, 1000) or {_A_DURATION}"
        return np.timedelta64(parse_duration(text, expected), "ns")
    if number.is_nan():
        msg = f"expected a non-negative number or a duration, got {text!r}"
        raise ValueError(msg)
    if number < 0:
        msg = f"a tolerance must not be negative, got {text!r}"
        raise ValueError(msg)
    is_int = number.is_finite() and re.fullmatch(r"[\d_]+", stripped) is not None
    return int(number) if is_int else float(number)


def format_duration(ns: float) -> str:
    """Nanoseconds for people: three significant digits below a minute, then m/h/d parts."""
    if ns != ns:
        return "nan"
    if ns < 0:
        return "-" + format_duration(-ns)
    if math.isinf(ns):
        return "inf"
    if ns == 0:
        return "0 s"
    for unit, size, below in (
        ("ns", 1, 1000),
        ("us", 10**3, 1000),
        ("ms", 10**6, 1000),
        ("s", 10**9, 59.95),
    ):
        text = str(int(ns)) if size == 1 and ns == int(ns) else _significant(ns / size)
        if float(text) < below:  # 999.7 ns reads 1.00 us, not 1000 ns
            return f"{text} {unit}"
    seconds = round(ns / 10**9)
    days, rest = divmod(seconds, 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{days}d" if not (hours or minutes or seconds) else f"{days}d {hours:02d}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}m {seconds:02d}s"


def _significant(value: float) -> str:
    """Three significant digits, no exponent: 4.21, 42.1, 421."""
    value = float(f"{value:.3g}")  # round first: 0.9997 -> 1.00, not 1.000
    digits = max(0, 2 - int(math.floor(math.log10(value)))) if value > 0 else 0
    return f"{value:.{digits}f}"
