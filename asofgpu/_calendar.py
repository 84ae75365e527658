"""Calendar tolerances: a duration string with months, quarters, years or calendar days
(``"1mo"``, ``"1q"``, ``"1y"``, ``"1mo15d"``, ``"2mo12h"``), whose length depends on the key it
is measured from. Each left key x gets its own reach, computed by polars' ``dt.offset_by``
(month ends saturate, days are taken in the key's time zone): backward ``x - x.offset_by("-"
+ tol)``, forward ``x.offset_by(tol) - x``. The join then drops matches past their row's
reach (``AsofJoin.join``), as for a column of tolerances.

polars does the calendar arithmetic, as its users know it; it is needed only for these
strings.

>>> import pyarrow as pa
>>> keys = pa.array([datetime.date(2024, 3, 31)], pa.date32())
>>> back, forward = reaches("1mo", keys, "left_on", ("backward", "forward"))
>>> back.to_pylist(), forward.to_pylist()
([datetime.timedelta(days=31)], [datetime.timedelta(days=30)])
"""

from __future__ import annotations

import datetime  # noqa: F401 - the doctest's
import re

import pyarrow as pa

from ._duration import parse_duration

_MONTHS = re.compile(r"\d+\s*(mo|q|y)(?![a-z])")
_DAYS = re.compile(r"\d+\s*[dw](?![a-z])")


def is_calendar(tolerance, zoned: bool) -> bool:
    """Whether ``tolerance`` is a duration string whose length depends on the key: months,
    quarters or years, or calendar days and weeks on a key with a time zone (where a day may
    be 23 or 25 hours).

    >>> is_calendar("1mo", False), is_calendar("2d", False), is_calendar("2d", True)
    (True, False, True)
    """
    if not isinstance(tolerance, str):
        return False
    text = tolerance.strip().lower()
    return bool(_MONTHS.search(text) or (zoned and _DAYS.search(text)))


def fixed(tolerance: str, param: str = "tolerance"):
    """A duration string without calendar units, as the timedelta it is."""
    import numpy as np

    try:
        return np.timedelta64(parse_duration(tolerance), "ns")
    except ValueError as exc:
        raise ValueError(f"{param}: {exc}") from None


def reaches(
    tolerance: str,
    keys: pa.ChunkedArray | pa.Array,
    key_param: str,
    directions=("backward",),
    param: str = "tolerance",
) -> tuple:
    """The reaches of each key under a calendar tolerance, one Arrow duration array (in
    polars' unit for the keys' type; null where the key is null) for each of
    ``directions``, "backward" (``x - x.offset_by("-" + tol)``) or "forward"."""
    if tolerance.strip().startswith("-"):
        msg = f"{param} must be non-negative, got {tolerance!r}"
        raise ValueError(msg)
    t = keys.type
    if not (pa.types.is_timestamp(t) or pa.types.is_date(t)):
        msg = (
            f"{param} {tolerance!r} has calendar units, which need a date or timestamp key; "
            f"{key_param} is {t}"
        )
        raise TypeError(msg)
    text = tolerance.strip()
    counted = _fixed_day_reaches(text, keys, directions)
    if counted is not None:
        return counted
    try:
        import polars as pl
    except ImportError:
        msg = (
            f"{param} {tolerance!r}: calendar durations are computed by polars' offset_by, "
            f"and polars is not installed. Hint: pip install polars"
        )
        raise ImportError(msg) from None
    series = pl.from_arrow(keys if isinstance(keys, pa.ChunkedArray) else pa.chunked_array([keys]))
    try:
        return tuple(
            (
                series - series.dt.offset_by("-" + text)
                if direction == "backward"
                else series.dt.offset_by(text) - series
            ).to_arrow()
            for direction in directions
        )
    except pl.exceptions.PolarsError as exc:
        msg = f"{param} {tolerance!r} is not a duration polars reads: {exc}"
        raise ValueError(msg) from None


# --------------------------------------------------------------------------- days of 24 hours

_NS = {"ns": 1, "us": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9, "h": 3_600 * 10**9}
_DAY_NS = 86_400 * 10**9
_MONTHS_PER = {"mo": 1, "q": 3, "y": 12}
# "mo" and "ms" before "m", "ns"/"us"/"ms" before "s": the longest unit first
_PART = re.compile(r"(\d+)(ns|us|ms|mo|s|m|h|d|w|q|y)")
_UTC = {"UTC", "Etc/UTC", "utc", "+00:00", "Z", "Etc/GMT", "GMT"}


def calendar_parts(text: str):
    """(months, days, nanoseconds) of a duration string in polars' language, or None when
    ``text`` is not plainly one (polars then reads it, and raises its own errors).

    >>> calendar_parts("1y2mo15d12h"), calendar_parts("1q"), calendar_parts("1 mo")
    ((14, 15, 43200000000000), (3, 0, 0), None)
    """
    months = days = ns = 0
    at = 0
    for part in _PART.finditer(text):
        if part.start() != at:
            return None
        n, unit = int(part.group(1)), part.group(2)
        if unit in _MONTHS_PER:
            months += n * _MONTHS_PER[unit]
        elif unit in ("d", "w"):
            days += n * (7 if unit == "w" else 1)
        else:
            ns += n * _NS[unit]
        at = part.end()
    return (months, days, ns) if at == len(text) and at else None


def _fixed_day_reaches(text: str, keys, directions):
    """``fixed_day_ticks``' reaches as Arrow durations (null where the key is null), or
    None where it does not apply."""
    counted = fixed_day_ticks(text, keys, directions)
    if counted is None:
        return None
    t = keys.type
    unit, per_tick = ("s", 86_400) if pa.types.is_date32(t) else (t.unit, 1)  # dates: seconds
    mask = None
    if keys.null_count:
        from . import _arrow_numpy as arrow_numpy

        mask = ~arrow_numpy.valid(keys)
    return tuple(pa.array(r.values * per_tick, pa.duration(unit), mask=mask) for r in counted)


def fixed_day_ticks(text: str, keys, directions):
    """The reaches of keys whose days all last 24 hours (dates, timestamps without a time
    zone or in UTC), counted by ``kernels/calendar.py`` on all cores, as polars' offset_by
    counts them, without building a polars Series (a 1M-row probe's reaches took longer
    than the probe): one ``RowTicks`` a direction, in the keys' own ticks (a null key's
    reach is meaningless: it never matches). None where it does not apply: other zones, a
    part finer than the key's tick, a moved key out of the type's range; polars then
    counts them."""
    import numpy as np

    from . import _arrow_numpy as arrow_numpy
    from ._columns import RowTicks

    t = keys.type
    parts = calendar_parts(text)
    if parts is None:
        return None
    if pa.types.is_date32(t):
        tick_ns = _DAY_NS
    elif pa.types.is_timestamp(t) and (t.tz is None or t.tz in _UTC):
        tick_ns = _NS[t.unit]
    else:
        return None
    months, days, ns = parts
    if (days * _DAY_NS) % tick_ns or ns % tick_ns:
        return None
    values = arrow_numpy.filled(keys, 0).astype(np.int64, copy=False)
    ticks_per_day = _DAY_NS // tick_ns
    if pa.types.is_date32(t):
        lowest, highest = -(2**31), 2**31 - 1
    else:
        # two days inside the range: a moved key's time of day and part day stay in it
        lowest, highest = -(2**63) // ticks_per_day + 2, (2**63 - 1) // ticks_per_day - 2
    out = []
    for direction in directions:
        sign = -1 if direction == "backward" else 1
        reach = np.empty(len(values), np.int64)
        in_range = _calendar_kernel(len(values))(
            values,
            reach,
            sign * months,
            sign * days * ticks_per_day,
            sign * (ns // tick_ns),
            ticks_per_day,
            lowest,
            highest,
        )
        if not in_range:
            return None
        out.append(RowTicks(reach, tick_ns))
    return tuple(out)


def _calendar_kernel(rows: int):
    """kernels/calendar.py's ``reaches``: compiled on all cores, or plain Python for a
    small launch (as the backends decide)."""
    from ._backend import walks
    from ._backend.jit import cpu_calendar, identity_jit, launching
    from .kernels import calendar

    if not walks.compiles(rows):
        kernel = calendar.build(identity_jit, identity_jit, identity_jit, range)
        return lambda *args: kernel(*args, 1)
    parallel = walks.parallel(rows)

    def launch(*args):
        with launching(parallel):
            return cpu_calendar(parallel)(*args, walks.row_pieces(rows))

    return launch
