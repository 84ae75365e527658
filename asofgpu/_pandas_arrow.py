"""pandas columns and frames as Arrow, without a copy where nothing is missing.

``pa.Table.from_pandas`` checks every float for NaN and every datetime for NaT, value by value,
and writes a new array when it finds none: 22 ms for each 10M-row float64 column, 0.1 s of a
0.3 s ``join_asof`` on pandas frames of 10M quotes (2 cores). numpy finds a NaN or NaT with one
vectorised reduction (``min`` carries a NaN through; NaT is int64's minimum), so a column
without any is wrapped as it lies. A column with missing values, or of any other type, goes
through pyarrow's conversion, so the result always equals ``from_pandas``' (NaN and NaT
become nulls, as pandas means them).

>>> import numpy as np, pandas as pd
>>> frame = pd.DataFrame({"t": pd.to_datetime([1, 2], unit="s", utc=True), "x": [0.5, np.nan],
...                       "s": ["a", "b"]})
>>> table(frame).to_pydict()["x"], table(frame).schema.field("t").type.tz
([0.5, None], 'UTC')
>>> values = np.array([1.5, 2.5])
>>> column(pd.Series(values, copy=False)).buffers()[1].address == values.ctypes.data
True
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from . import _arrow_numpy as arrow_numpy


def table(frame) -> pa.Table:
    """``pa.Table.from_pandas(frame, preserve_index=False)``, without its schema's pandas
    metadata; numeric and datetime columns without missing values are not copied, and the
    others are converted column by column as ``from_pandas`` converts them, without its
    per-call bookkeeping (a 20,000-row frame with one text column: 0.17 ms, here 0.01)."""
    names = list(frame.columns)
    if not all(isinstance(name, str) for name in names) or len(set(names)) != len(names):
        return pa.Table.from_pandas(frame, preserve_index=False)  # its own naming rules
    series = [column for _, column in frame.items()]
    values = [_numpy_values(column) for column in series]
    missing = iter(_missing([v for v in values if v is not None]))
    arrays = [  # the others one after the other: threads gained nothing, as the conversion
        # of Python objects holds the GIL (from_pandas' threads, 1M rows, three columns)
        _wrap(v, column) if v is not None and not next(missing) else _converted(column)
        for v, column in zip(values, series)
    ]
    return pa.table(arrays, names=names)


def column(series) -> pa.Array | pa.ChunkedArray:
    """``pa.array(series, from_pandas=True)``; without a copy as ``table``'s columns."""
    fast = as_it_lies(series)
    return fast if fast is not None else pa.array(series, from_pandas=True)


def as_it_lies(series) -> pa.Array | None:
    """The Arrow array over ``series``' own numpy values, when it has a numpy integer, float32/64
    or datetime64/timedelta64 type (with or without a time zone), native byte order and no
    missing value; else None."""
    values = _numpy_values(series)
    if values is None or _missing([values])[0]:
        return None
    return _wrap(values, series)


def python_strings(series) -> pa.Array | pa.ChunkedArray | None:
    """A column of pandas' ``StringDtype`` kept as Python objects (``"string[python]"``,
    pandas 2's "string") as Arrow strings read from those objects, missing values (NA or
    NaN) as nulls: pandas' own export copies the objects and finds the missing ones first
    (two 1M-row columns: 113 ms, here 67); else None.

    >>> import pandas as pd
    >>> python_strings(pd.Series(["a", None], dtype="string[python]")).to_pylist()
    ['a', None]
    >>> python_strings(pd.Series([1.5])) is None
    True
    """
    import pandas as pd  # imported already: series is one of its objects

    dtype = series.dtype
    if not (isinstance(dtype, pd.StringDtype) and dtype.storage == "python"):
        return None
    # the array's own objects (np.asarray does not copy them); pandas' export type
    return pa.array(np.asarray(series.array), type=pa.string(), from_pandas=True)


#: Columns with more rows than this are checked for missing values in stretches on all cores.
PARALLEL_CHECK_ROWS = 1 << 20


def _converted(series) -> pa.Array | pa.ChunkedArray:
    """``series`` as ``from_pandas`` converts one of a frame's columns (``pa.array`` of it,
    NaN and NaT as nulls); a column of Python strings read from its objects
    (``python_strings``). A column ``pa.array`` cannot read goes to ``from_pandas`` itself,
    whose error names the column (and whose own checks refuse some types first: sparse ones).
    """
    strings = python_strings(series)
    if strings is not None:
        return strings
    try:
        return pa.array(series, from_pandas=True)
    except (pa.ArrowException, TypeError, ValueError):
        return pa.Table.from_pandas(series.to_frame(), preserve_index=False).column(0)


def _missing(columns: list[np.ndarray]) -> list[bool]:
    """Whether each of ``columns`` (``_numpy_values``') holds a NaN or NaT, by numpy's
    ``min`` (it carries a NaN through; NaT is int64's minimum), which releases the GIL: large
    columns are read in stretches on numba's threads (``jit.pool_threads()``, the join's
    own limit where a caller set one). The 7 float and datetime columns of the bench's
    frames, 10M rows each, took 39 ms on one core, 21 ms on two.

    >>> _missing([np.array([1.0, np.nan]), np.arange(3), np.array([0, "NaT"], "M8[s]")])
    [True, False, True]
    """
    stretches = []  # (column, rows): the reads that need a min
    threads = 1
    if any(len(c) > PARALLEL_CHECK_ROWS and c.dtype.kind not in "iu" for c in columns):
        from ._backend.jit import pool_threads

        threads = pool_threads()
    for k, values in enumerate(columns):
        if values.dtype.kind in "iu" or not len(values):
            continue
        n = len(values)
        pieces = threads if n > PARALLEL_CHECK_ROWS else 1
        stretches += [(k, slice(n * t // pieces, n * (t + 1) // pieces)) for t in range(pieces)]

    def holds_missing(stretch) -> bool:
        k, rows = stretch
        values = columns[k][rows]
        if values.dtype.kind == "f":
            return bool(np.isnan(values.min()))
        return int(values.view(np.int64).min()) == np.iinfo(np.int64).min

    if threads > 1 and len(stretches) > 1:
        with ThreadPoolExecutor(threads, thread_name_prefix="asofgpu-check") as pool:
            found = list(pool.map(holds_missing, stretches))
    else:
        found = [holds_missing(stretch) for stretch in stretches]
    missing = [False] * len(columns)
    for (k, _), missing_here in zip(stretches, found):
        missing[k] = missing[k] or missing_here
    return missing


def _wrap(values: np.ndarray, series) -> pa.Array:
    """The Arrow array over ``_numpy_values``' ``values`` of ``series``, known to hold no
    missing value."""
    kind = values.dtype.kind
    if kind in "iuf":
        return pa.array(values)
    as_integers = values.view(np.int64)
    unit = np.datetime_data(values.dtype)[0]
    if kind == "m":
        return arrow_numpy.array(as_integers, pa.duration(unit))
    return arrow_numpy.array(as_integers, pa.timestamp(unit, _time_zone(series)))


_UNITS = ("s", "ms", "us", "ns")


def _numpy_values(series) -> np.ndarray | None:
    dtype = series.dtype
    tz = getattr(dtype, "tz", None)
    if tz is None and not isinstance(dtype, np.dtype):
        return None  # extension types: nullable integers, strings, categoricals, Arrow-backed
    # a zoned column's UTC instants: the same memory, not a copy (the array's own
    # tz_convert: the Series' accessor builds a Series and an index for them, 30 us)
    values = (series if tz is None else series.array.tz_convert(None)).to_numpy(copy=False)
    if not isinstance(values, np.ndarray) or values.ndim != 1 or not values.dtype.isnative:
        return None
    kind = values.dtype.kind
    if kind in "iu" or (kind == "f" and values.dtype.itemsize in (4, 8)):
        return values
    if kind in "mM" and np.datetime_data(values.dtype)[0] in _UNITS:
        return values
    return None


def _time_zone(series) -> str | None:
    """The time zone pyarrow's own conversion gives ``series``' type (None: naive), found
    once a type (converting an empty column of it costs 0.06 ms)."""
    dtype = series.dtype
    if getattr(dtype, "tz", None) is None:
        return None
    zone = _ZONES.get(dtype)
    if zone is None:
        zone = _ZONES[dtype] = pa.Array.from_pandas(series.iloc[:0]).type.tz
    return zone


#: pandas' zoned types and their pyarrow time zones, as ``_time_zone`` found them.
_ZONES: dict = {}
