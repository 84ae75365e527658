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
    try:
        import polars as pl
    except ImportError:
        msg = (
            f"{param} {tolerance!r}: calendar durations are computed by polars' offset_by, "
            f"and polars is not installed. Hint: pip install polars"
        )
        raise ImportError(msg) from None
    series = pl.from_arrow(keys if isinstance(keys, pa.ChunkedArray) else pa.chunked_array([keys]))
    text = tolerance.strip()
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
