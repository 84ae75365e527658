"""Calendar tolerances: a duration string with months, quarters, years or calendar days
(``"1mo"``, ``"1q"``, ``"1y"``, ``"1mo15d"``, ``"2mo12h"``), whose length depends on the key it
is measured from. Each left key x gets its own reach, as polars' ``dt.offset_by`` computes
it (month ends saturate, days are taken in the key's time zone): backward ``x -
x.offset_by("-" + tol)``, forward ``x.offset_by(tol) - x``. The probe kernels then compare
each candidate with its row's reach in its direction (``AsofJoin.join``), as for a column
of tolerances.

Where every day lasts 24 hours (dates, timestamps without a zone, in UTC or at a fixed
offset from it: ``fixed_offset_ns``), ``kernels/calendar.py`` counts the reaches
(``calendar_plan``, ``fixed_day_ticks``); in zones with clock changes polars does, and is
needed only there.

>>> import pyarrow as pa
>>> keys = pa.array([datetime.date(2024, 3, 31)], pa.date32())
>>> back, forward = reaches("1mo", keys, "left_on", ("backward", "forward"))
>>> back.to_pylist(), forward.to_pylist()
([datetime.timedelta(days=31)], [datetime.timedelta(days=30)])
"""

from __future__ import annotations

import datetime  # noqa: F401 - the doctest's
import re
from typing import NamedTuple

import pyarrow as pa

from ._duration import UNIT_NS, parse_duration

_MONTHS = re.compile(r"\d+\s*(mo|q|y)(?![a-z])")
_DAYS = re.compile(r"\d+\s*[dw](?![a-z])")


def is_calendar(tolerance, zoned: bool) -> bool:
    """Whether ``tolerance`` is a duration string whose length depends on the key: months,
    quarters or years, or calendar days and weeks on a key with a time zone (``zoned``: one
    that changes its clocks, where a day may be 23 or 25 hours).

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
    counted = _fixed_day_reaches(text, keys, directions, param)
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
            _unwrapped(
                (
                    series - series.dt.offset_by("-" + text)
                    if direction == "backward"
                    else series.dt.offset_by(text) - series
                ).to_arrow(),
                text,
                param,
            )
            for direction in directions
        )
    except pl.exceptions.PolarsError as exc:
        if calendar_parts(text) is None:
            msg = f"{param} {tolerance!r} is not a duration polars reads: {exc}"
        else:  # read, but some key moved by it is no time (a day its zone skipped)
            reason = str(exc).split(". You may", 1)[0]  # polars' hint names its own options
            msg = (
                f"{param} {tolerance!r}: polars' offset_by cannot move every key by it: "
                f"{reason}. Hint: convert the keys to UTC, whose clock skips no time, or "
                f"give a fixed duration"
            )
        raise ValueError(msg) from None
    except pl.exceptions.PanicException as exc:  # a BaseException: a key past its calendar
        msg = (
            f"{param} {tolerance!r}: polars' offset_by cannot move every key of {key_param} "
            f"by it ({exc}): its calendar ends about 262,000 years from 1970"
        )
        raise ValueError(msg) from None


def row_reaches(
    tolerance: str,
    keys: pa.ChunkedArray | pa.Array,
    key_param: str,
    directions=("backward",),
    param: str = "tolerance",
) -> tuple:
    """``reaches``, as ``RowTicks`` where the calendar kernel counts them (every day of 24
    hours): whole ticks up to 2**64, where an Arrow duration stops at 2**63 (300 years of
    nanoseconds were refused, 600 of microseconds cut to 584 on their way through
    nanoseconds). What the join takes as a column of tolerances, either way."""
    t = keys.type
    if (pa.types.is_timestamp(t) or pa.types.is_date(t)) and not tolerance.strip().startswith("-"):
        counted = fixed_day_ticks(tolerance.strip(), keys, directions)
        if counted is not None:
            return counted
    return reaches(tolerance, keys, key_param, directions, param)


def _unwrapped(reach, text: str, param: str):
    """polars' reaches with its wrapping undone: it moves a nanosecond key by "300y" past
    int64 and subtracts modulo 2**64 (300 years came out as -103,931 days, 600 as 5,642).
    A calendar duration's length lies within a few days a month of its nominal one, a window
    far narrower than 2**64 ticks: the one true reach in it is taken. A reach past what a
    duration of the key's unit holds is refused, as the fixed-day path refuses it."""
    import numpy as np

    from . import _arrow_numpy as arrow_numpy

    bounds = reach_bounds_ns(text)
    if bounds is None or not len(reach):
        return reach
    unit = reach.type.unit
    tick = UNIT_NS[unit]
    low, high = bounds[0] // tick, bounds[1] // tick
    if high <= np.iinfo(np.int64).max:
        return reach  # no reach can have wrapped
    if isinstance(reach, pa.ChunkedArray):
        reach = reach.combine_chunks()
    values = np.zeros(len(reach), np.int64)
    for i, w in enumerate(reach.cast(pa.int64()).to_pylist()):  # huge tolerances: a Python loop
        if w is None:
            continue
        kept = w % 2**64  # the true reach modulo 2**64
        r = kept + max(0, -(-(low - kept) // 2**64)) * 2**64  # the one in [low, low + 2**64)
        if r > np.iinfo(np.int64).max:
            raise _past_durations(param, text, r, unit)
        values[i] = r
    # (from its buffers: pa.array imports pandas, a third of a second, where installed)
    return arrow_numpy.array(values, pa.int64(), arrow_numpy.valid(reach)).cast(reach.type)


def reach_bounds_ns(text: str) -> tuple[int, int] | None:
    """The shortest and the longest reach, in nanoseconds, of a calendar duration (polars'
    duration language) from any key: months of 28 to 31 days (2024-03-31 back to 2024-02-29
    is 31: a month end saturates to the shorter month's), two days to spare each way for
    clocks (a zone's change moves a local day's length by an hour, or by a day where a zone
    crossed the date line) and a fixed part that rounds; None for text not read here.

    >>> [b // UNIT_NS["d"] for b in reach_bounds_ns("1mo15d")]
    [41, 48]
    """
    parts = calendar_parts(text)
    if parts is None:
        return None
    months, days, ns = parts
    slack = 2 * _DAY_NS
    low = max(0, (months * 28 + days) * _DAY_NS + ns - slack)
    return low, (months * 31 + days) * _DAY_NS + ns + slack


def _past_durations(param: str, text: str, reach: int, unit: str) -> ValueError:
    """A reach no Arrow duration of the key's unit holds (int64 ticks), refused."""
    return ValueError(
        f"{param} {text!r} reaches {reach} {unit} from a key, past what a duration of the "
        f"key's unit holds; pass a shorter one"
    )


# --------------------------------------------------------------------------- days of 24 hours

_DAY_NS = UNIT_NS["d"]
_MONTHS_PER = {"mo": 1, "q": 3, "y": 12}
# "mo" and "ms" before "m", "ns"/"us"/"ms" before "s": the longest unit first
_PART = re.compile(r"(\d+)(ns|us|ms|mo|s|m|h|d|w|q|y)")
_UTC = {"UTC", "ETC/UTC", "Z", "GMT", "ETC/GMT", "ETC/UCT", "UCT"}  # and +00:00, Etc/GMT+0
_OFFSET = re.compile(r"([+-])(\d\d):?(\d\d)")
_ETC_GMT = re.compile(r"ETC/GMT([+-]\d{1,2})")  # POSIX signs: Etc/GMT-5 is UTC+05:00


def fixed_offset_ns(tz: str | None) -> int | None:
    """The offset from UTC, in nanoseconds, of a time zone whose days all last 24 hours
    (none, UTC, a fixed offset such as "+05:30", "Etc/GMT-5"); None for a zone that may
    change its clocks. The one place that decides both whether "1d" is a fixed duration on
    a key and whether ``kernels/calendar.py`` can count a key's calendar reaches.

    >>> fixed_offset_ns(None), fixed_offset_ns("UTC"), fixed_offset_ns("-03:30")
    (0, 0, -12600000000000)
    >>> fixed_offset_ns("Etc/GMT-5") // 3_600_000_000_000, fixed_offset_ns("Europe/Amsterdam")
    (5, None)
    """
    if tz is None or tz.upper() in _UTC:
        return 0
    hour_ns = 3_600 * 10**9
    if m := _OFFSET.fullmatch(tz):
        sign = -1 if m.group(1) == "-" else 1
        return sign * (int(m.group(2)) * hour_ns + int(m.group(3)) * 60 * 10**9)
    if m := _ETC_GMT.fullmatch(tz.upper()):
        return -int(m.group(1)) * hour_ns
    return None


def clock_changes(tz: str | None) -> bool:
    """Whether a key's time zone may change its clocks (a day of 23 or 25 hours): its days
    and weeks are then the calendar's, elsewhere fixed durations (``is_calendar``)."""
    return fixed_offset_ns(tz) is None


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
            ns += n * UNIT_NS[unit]
        at = part.end()
    return (months, days, ns) if at == len(text) and at else None


class CalendarPlan(NamedTuple):
    """A calendar duration as ``kernels/calendar.py`` moves keys of one type forward:
    ``months``, then ``days`` and ``ticks`` (whole ticks of ``tick_ns``, under a day), with
    ``ticks_per_day``, the type's range of keys [``lowest``, ``highest``], and ``offset``,
    the ticks a key's zone is ahead of UTC (its days start that much earlier)."""

    months: int
    days: int
    ticks: int
    ticks_per_day: int
    lowest: int
    highest: int
    tick_ns: int
    offset: int = 0

    def move(self, direction: str):
        """The keys' ``kernels.calendar.Move`` for "backward" (the duration taken away) or
        "forward"."""
        from .kernels.calendar import Move

        sign = -1 if direction == "backward" else 1
        # The most whole days whose ticks fit 64 bits (capped within int64 for dates)
        most_days = min((2**64 - 1) // self.ticks_per_day, 2**62)
        return Move(
            direction == "backward",
            sign * self.months,
            sign * self.days,
            sign * self.ticks,
            self.ticks_per_day,
            self.offset,
            self.lowest,
            self.highest,
            most_days,
        )


# Parts past any key type's range (2**64 seconds are 5.8e11 years), capped so that the
# kernel's civil arithmetic stays inside int64: a reach that long is no limit.
_MOST_MONTHS = 1 << 44
_MOST_DAYS = 1 << 50


def calendar_plan(text: str, key_type) -> CalendarPlan | None:
    """How ``kernels/calendar.py`` counts ``text``'s reaches on keys of ``key_type`` (an
    ``asofgpu._columns.KeyType``): where every day lasts 24 hours (dates, timestamps in a
    zone of ``fixed_offset_ns``) and, on dates, every part is whole days. A timestamp's part
    of a day finer than its ticks is cut to whole ticks, as polars' ``offset_by`` cuts it
    ("1mo1500us" on milliseconds: a month and 1 ms), which polars cannot do in a zone of a
    fixed offset ("+05:30"). None elsewhere: polars then counts them, as ``reaches`` does.

    >>> from asofgpu._columns import KeyType
    >>> calendar_plan("1mo36h", KeyType("timestamp", 1_000_000)).move("backward")[:5]
    (True, -1, -1, -43200000, 86400000)
    >>> calendar_plan("1mo1500us", KeyType("timestamp", 1_000_000)).move("forward")[:4]
    (False, 1, 0, 1)
    >>> calendar_plan("1mo", KeyType("timestamp", 1_000, "Europe/Amsterdam")) is None
    True
    """
    parts = calendar_parts(text)
    if parts is None or key_type.family not in ("date", "timestamp"):
        return None
    offset_ns = fixed_offset_ns(key_type.tz)
    if offset_ns is None:
        return None
    months, days, ns = parts
    tick_ns = key_type.tick_ns
    if tick_ns == _DAY_NS and ns % tick_ns:  # a date's part of a day: polars' dates
        return None
    if offset_ns % tick_ns:
        return None
    days, ns = days + ns // _DAY_NS, ns % _DAY_NS  # whole days, and the part of a day
    ticks_per_day = _DAY_NS // tick_ns
    if tick_ns == _DAY_NS:  # date32: int32 days
        lowest, highest = -(2**31), 2**31 - 1
    else:
        lowest, highest = -(2**63), 2**63 - 1
    months, days = min(months, _MOST_MONTHS), min(days, _MOST_DAYS)
    return CalendarPlan(
        months, days, ns // tick_ns, ticks_per_day, lowest, highest, tick_ns, offset_ns // tick_ns
    )


def _fixed_day_reaches(text: str, keys, directions, param: str = "tolerance"):
    """``fixed_day_ticks``' reaches as Arrow durations (null where the key is null, and
    where a reach is no limit), or None where it does not apply."""
    import numpy as np

    from .kernels.calendar import NO_LIMIT

    counted = fixed_day_ticks(text, keys, directions)
    if counted is None:
        return None
    t = keys.type
    if pa.types.is_date32(t):
        unit, per_tick = "s", 86_400  # days as seconds
    else:
        unit, per_tick = ("ms" if pa.types.is_date64(t) else t.unit), 1
    valid = None
    from . import _arrow_numpy as arrow_numpy

    if keys.null_count:
        valid = arrow_numpy.valid(keys)
    out = []
    for r in counted:
        limited = r.values != np.uint64(NO_LIMIT)
        if valid is not None:
            limited &= valid
        too_far = limited & (r.values > np.uint64(np.iinfo(np.int64).max // per_tick))
        if too_far.any():
            raise _past_durations(param, text, int(r.values[np.argmax(too_far)]), unit)
        values = np.where(limited, r.values, 0).astype(np.int64) * per_tick
        # (from its buffers: pa.array imports pandas, a third of a second, where installed)
        out.append(arrow_numpy.array(values, pa.duration(unit), valid=limited))
    return tuple(out)


def fixed_day_ticks(text: str, keys, directions, backend=None, values=None):
    """The reaches of keys whose days all last 24 hours, counted by ``kernels/calendar.py``
    as polars' offset_by counts them, without building a polars Series (a 1M-row probe's
    reaches took longer than the probe): one ``RowTicks`` a direction, in the keys' own
    ticks, ``kernels.calendar.NO_LIMIT`` where the moved key lies past the type's range (a
    null key's reach is meaningless: it never matches). ``keys``: an Arrow column (counted
    on the host), or a ``KeyType`` whose ``values`` ``backend`` holds (counted where they
    lie). None where it does not apply (``calendar_plan``): polars then counts them."""
    import numpy as np

    from . import _arrow_numpy as arrow_numpy
    from ._columns import KeyType, RowTicks, key_type_of_arrow

    if isinstance(keys, KeyType):
        key_type = keys
    else:
        from ._backend import get_backend

        key_type = key_type_of_arrow(keys.type, "left_on")
        values = arrow_numpy.filled(keys, 0).astype(np.int64, copy=False)
        backend = get_backend("cpu")
    plan = calendar_plan(text, key_type)
    if plan is None:
        return None
    return tuple(
        RowTicks(backend.calendar_reaches(values, plan.move(d)), plan.tick_ns) for d in directions
    )
