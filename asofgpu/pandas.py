"""``merge_asof`` for pandas: pandas' signature, results, dtypes and errors, on asofgpu.

``asofgpu.pandas.merge_asof`` is a drop-in for ``pandas.merge_asof``: the same keywords, the
same result frame (columns, column order, dtypes, index), the same exception types and
messages, plus a ``device`` keyword. It validates its arguments the way pandas does, computes
the gather map with asofgpu's primitive (``nearest_tie="backward"``, ``null_equality="equal"``:
pandas' rules) and builds the result the way pandas builds it. It never calls pandas' own
``merge_asof``.

Differences from pandas (deliberate):

- Distances never wrap. pandas computes ``left - right`` in the key's integer dtype, so near
  the extremes of that dtype (int64, the int64 view of datetimes and timedeltas, and int8,
  int16, int32 much sooner) it picks the wrong ``nearest`` row and lets rows through a
  ``tolerance`` that they exceed. asofgpu computes exact distances.
- ``device`` ("auto", "cpu", "cuda", "python") says where the join runs; pandas has no such
  keyword.
- ``tolerance`` also takes what pandas refuses: a ``DateOffset`` on a datetime key (each left
  key x matches right keys from ``x - offset`` to ``x + offset``, by pandas' own calendar
  arithmetic: ``pd.DateOffset(months=1)`` reaches back 29 days from March 29th, 2024, and a
  calendar day back from noon across a clock change is 23 or 25 hours), and a column with
  one tolerance per left row (a Series, read by position, an array or a list: durations on
  a temporal key, numbers on a numeric one; a missing entry means no limit).
- When pandas' sortedness check passes but the values it joins on are not in order
  (categorical ``on`` keys whose categories are not in value order), pandas' result depends on
  its scan; asofgpu joins on the values.

Everything else (float32 and infinite keys, NaN tolerances, the upcasting of unmatched int and
bool columns, keys given as arrays or index levels, every error) follows pandas. Those rules
live in ``asofgpu._pandas_semantics``, which the cuDF and Dask front ends share.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Literal

import pyarrow as pa

from . import _validate
from ._pandas_semantics import (
    PANDAS_3,
    AsofMerge,
    check_join_options,
    reindex_positions,
    rows_of,
)
from ._types import DeviceName, PandasDirection, RowTolerance, Tolerance
from ._columns import to_arrow
from .join import windows_once
from .splice import splice_maps
from .table import by_pairs, check_suffix, missing_key, resolve_keys, right_names
from .window import (
    PICKS,
    aggregations,
    by_column,
    name_clash,
    nulls_alone,
    reads_values,
    reduce_column,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["merge_asof", "range_join", "splice_join", "window_join"]


def merge_asof(
    left: pd.DataFrame | pd.Series,
    right: pd.DataFrame | pd.Series,
    on: Hashable | None = None,
    left_on: Hashable | None = None,
    right_on: Hashable | None = None,
    left_index: bool = False,
    right_index: bool = False,
    by: Hashable | Sequence[Hashable] | None = None,
    left_by: Hashable | Sequence[Hashable] | None = None,
    right_by: Hashable | Sequence[Hashable] | None = None,
    suffixes: Sequence[str | None] = ("_x", "_y"),
    tolerance: Tolerance | None = None,
    allow_exact_matches: bool = True,
    direction: PandasDirection = "backward",
    *,
    device: DeviceName = "auto",
) -> pd.DataFrame:
    """Perform a merge by key distance, as ``pandas.merge_asof`` does.

    For each left row, take the right row (of the same ``by`` group) whose ``on`` key is the
    closest in the ``direction``: "backward" takes the last row whose key is less than or
    equal to the left key, "forward" the first row whose key is greater than or equal to it,
    "nearest" the closer of the two (the backward one on a tie). Both frames must be sorted
    by their ``on`` key.

    Parameters
    ----------
    left, right : DataFrame or named Series
    on : label
        Column (or index level) name in both frames: the ordered key.
    left_on, right_on : label or array-like
        The key of each frame, when the names differ or the key is not a column.
    left_index, right_index : bool
        Use the frame's index as its key.
    by : label or list of labels
        Columns that must be equal before the ``on`` search (nulls match nulls).
    left_by, right_by : label or list of labels
        ``by`` columns of each frame, when their names differ.
    suffixes : (str or None, str or None)
        Added to overlapping column names of the left and right frames.
    tolerance : int, float, datetime.timedelta, pandas.Timedelta, DateOffset or column, optional
        The largest distance a match may have (inclusive), in the key's type. asofgpu
        also takes a ``pandas.DateOffset`` on a datetime key (right keys from
        ``x - offset`` to ``x + offset``, by pandas' calendar arithmetic) and a column of
        tolerances, one per left row, read by position (missing: no limit).
    allow_exact_matches : bool
        False: equal keys do not match (strictly less / greater than).
    direction : {"backward", "forward", "nearest"}
    device : {"auto", "cpu", "cuda", "python"}
        Where the join runs (asofgpu only); "auto" takes a usable GPU.

    Returns
    -------
    DataFrame
        The left frame's rows and columns, then the right frame's columns (keys of the same
        name dropped), exactly as ``pandas.merge_asof`` returns it.

    Notes
    -----
    Unlike pandas, distances are exact at the extremes of integer and datetime keys, where
    pandas' arithmetic wraps (see the module docstring for every difference).

    Examples
    --------
    >>> import pandas as pd
    >>> from asofgpu.pandas import merge_asof
    >>> quotes = pd.DataFrame({
    ...     "time": pd.to_datetime(["2016-05-25 13:30:00.023", "2016-05-25 13:30:00.023",
    ...                             "2016-05-25 13:30:00.030", "2016-05-25 13:30:00.041",
    ...                             "2016-05-25 13:30:00.048"]),
    ...     "ticker": ["GOOG", "MSFT", "MSFT", "MSFT", "GOOG"],
    ...     "bid": [720.50, 51.95, 51.97, 51.99, 720.50]})
    >>> trades = pd.DataFrame({
    ...     "time": pd.to_datetime(["2016-05-25 13:30:00.023", "2016-05-25 13:30:00.038",
    ...                             "2016-05-25 13:30:00.048", "2016-05-25 13:30:00.048"]),
    ...     "ticker": ["MSFT", "MSFT", "GOOG", "AAPL"],
    ...     "quantity": [75, 155, 100, 100]})
    >>> merge_asof(trades, quotes, on="time", by="ticker", device="cpu")
                         time ticker  quantity     bid
    0 2016-05-25 13:30:00.023   MSFT        75   51.95
    1 2016-05-25 13:30:00.038   MSFT       155   51.97
    2 2016-05-25 13:30:00.048   GOOG       100  720.50
    3 2016-05-25 13:30:00.048   AAPL       100     NaN
    >>> merge_asof(trades, quotes, on="time", by="ticker", tolerance=pd.Timedelta("2ms"),
    ...            device="cpu")["bid"].tolist()
    [51.95, nan, 720.5, nan]

    A tolerance per trade (pandas refuses a column; a missing entry means no limit):

    >>> stale = pd.Series(pd.to_timedelta(["1ms", "10ms", None, "0ms"]))
    >>> merge_asof(trades, quotes, on="time", by="ticker", tolerance=stale,
    ...            device="cpu")["bid"].tolist()
    [51.95, 51.97, 720.5, nan]

    Integer payloads become float64 only when some row is unmatched, as in pandas:

    >>> left = pd.DataFrame({"a": [1, 5, 10]})
    >>> right = pd.DataFrame({"a": [1, 2, 3, 6, 7], "right_val": [1, 2, 3, 6, 7]})
    >>> merge_asof(left, right, on="a", direction="nearest", device="cpu")
        a  right_val
    0   1          1
    1   5          6
    2  10          7
    >>> merge_asof(left, right, on="a", allow_exact_matches=False, device="cpu")
        a  right_val
    0   1        NaN
    1   5        3.0
    2  10        7.0
    """
    device = _validate.device(device)
    direction, exact = check_join_options(direction, allow_exact_matches)
    op = AsofMerge(
        left,
        right,
        on,
        left_on,
        right_on,
        left_index,
        right_index,
        by,
        left_by,
        right_by,
        suffixes,
        tolerance,
    )
    return op.result(op.right_indexer(direction, exact, device))


def splice_join(
    left: pd.DataFrame,
    right: pd.DataFrame,
    *,
    on: str | None = None,
    left_on: str | None = None,
    right_on: str | None = None,
    by: str | Sequence[str] | None = None,
    by_left: str | Sequence[str] | None = None,
    by_right: str | Sequence[str] | None = None,
    allow_exact_matches: bool = True,
    tolerance: Tolerance | None = None,
    suffix: str = "_right",
    null_equality: Literal["unequal", "equal"] = "unequal",
    device: DeviceName = "auto",
) -> pd.DataFrame:
    """The full as-of join (``asofgpu.splice_join``) on pandas frames: every left row and
    every right row once, in key order, each beside the other side's row that prevailed at its
    key in its ``by`` group. pandas has no such join.

    The parameters are ``asofgpu.splice_join``'s: keys are column names; ``tolerance`` a number
    in the right key's unit or a ``pandas.Timedelta``. The result has a fresh RangeIndex, all of
    ``left``'s columns, then all of ``right``'s (``suffix`` on names that clash), each taken as
    ``reindex`` takes rows: where a side has no row, int and bool columns become float64 and
    object, as in ``merge_asof``, and nullable and Arrow dtypes keep their dtype.

    >>> import pandas as pd
    >>> buys = pd.DataFrame({"ts": [1, 4], "buy": ["b1", "b2"]})
    >>> sells = pd.DataFrame({"ts": [3, 3], "sell": ["s1", "s2"]})
    >>> splice_join(buys, sells, on="ts", device="cpu")
       ts buy  ts_right sell
    0   1  b1       NaN  NaN
    1   1  b1       3.0   s1
    2   1  b1       3.0   s2
    3   4  b2       3.0   s2
    """
    import pandas as pd

    for frame, side in ((left, "left"), (right, "right")):
        if not isinstance(frame, pd.DataFrame):
            msg = f"{side} must be a pandas DataFrame, got {_validate.type_name(frame)}"
            raise TypeError(msg)
    left_on, right_on, left_by, right_by = resolve_keys(
        on, left_on, right_on, by, by_left, by_right, labels=True
    )
    check_suffix(suffix)
    missing = missing_key(left.columns, right.columns, (left_on, right_on, left_by, right_by))
    if missing:
        raise KeyError(missing)
    left_map, right_map = splice_maps(
        left[left_on],
        right[right_on],
        *by_pairs([left[c] for c in left_by], [right[c] for c in right_by], left_by, right_by),
        null_equality=null_equality,
        allow_exact_matches=allow_exact_matches,
        tolerance=tolerance,
        device=device,
    )
    names = right_names(list(left.columns), list(right.columns), suffix)
    taken = [
        rows_of(frame, reindex_positions(gmap))
        for frame, gmap in ((left, left_map), (right, right_map))
    ]
    taken[1].columns = names
    # pandas 2 copies every column unless told not to; pandas 3 refuses the keyword.
    return pd.concat(taken, axis=1) if PANDAS_3 else pd.concat(taken, axis=1, copy=False)


def window_join(
    left: pd.DataFrame,
    right: pd.DataFrame,
    *,
    on: str | None = None,
    left_on: str | None = None,
    right_on: str | None = None,
    by: str | Sequence[str] | None = None,
    by_left: str | Sequence[str] | None = None,
    by_right: str | Sequence[str] | None = None,
    before: RowTolerance | str,
    after: RowTolerance | str = 0,
    aggs: dict[str, str | Sequence[str]],
    prevailing: bool = False,
    device: DeviceName = "auto",
) -> pd.DataFrame:
    """The window join (``asofgpu.window_join``, kdb+'s ``wj``) on pandas frames: ``left``
    with aggregates of the right rows of each row's ``by`` group whose ``on`` key lies within
    ``[x - before, x + after]`` of its key x. pandas has no such join.

    The parameters are ``asofgpu.window_join``'s; ``before`` and ``after`` are numbers in the
    right key's unit, ``pandas.Timedelta``s, duration strings (``"5s"``, ``"1mo"``) or a
    Series of one per left row. The result keeps ``left``'s index and columns
    and adds ``<column>_<agg>`` per aggregation: count numpy int64; sum and mean as numbers
    (NaN where a window holds no value; Arrow and nullable dtypes in, the same family out); min,
    max, first and last taken as ``reindex`` takes rows (int and bool become float64 and
    object where a window is empty, as in ``merge_asof``).

    >>> import pandas as pd
    >>> trades = pd.DataFrame({"t": [5, 9], "sym": ["A", "A"]})
    >>> quotes = pd.DataFrame({"t": [1, 3, 4, 8], "sym": ["A"] * 4, "bid": [1.0, 2.0, 3.0, 4.0]})
    >>> window_join(trades, quotes, on="t", by="sym", before=2, aggs={"bid": ["max", "count"]}, device="cpu")
       t sym  bid_max  bid_count
    0  5   A      3.0          2
    1  9   A      4.0          1
    """
    import pandas as pd

    keys = _frame_keys(left, right, on, left_on, right_on, by, by_left, by_right)
    arrow = {}  # each aggregated column read once, for its type and its values

    def arrow_of(name):
        if name not in arrow:
            try:
                arrow[name] = to_arrow(right[name], f"aggs[{name!r}]")
            except (TypeError, ValueError) as exc:
                if reads_values(aggs[name]):
                    raise (ValueError if isinstance(exc, ValueError) else TypeError)(
                        f"{exc}. Hint: sum, mean, min and max read the values, which Arrow "
                        f"must read (a sparse column: pass right[{name!r}].sparse.to_dense()); "
                        f"count, first and last take any column"
                    ) from None
                # count, first and last (pandas takes the rows) of a column Arrow cannot
                # read (complex, sparse, mixed objects): its nulls alone.
                arrow[name] = nulls_alone(right[name].isna().to_numpy())
        return arrow[name]

    wanted = aggregations(aggs, list(right.columns), lambda c: arrow_of(c).type)
    clash = name_clash(wanted, left.columns)
    if clash:
        raise ValueError(clash)
    windows = _windows(left, right, keys, before, after, prevailing, device)
    out = left.copy(deep=False)
    found = {}
    for name, hows in by_column(wanted).items():
        dtype = right[name].dtype
        extremes = _values_kept(dtype)
        for how, result in reduce_column(
            windows, arrow_of(name), hows, extreme_values=extremes
        ).items():
            if isinstance(result, pa.Array) and how in PICKS:  # min or max values
                found[name, how] = pd.Series(_pandas_values(result, dtype), index=left.index)
            elif how in PICKS:
                taken = rows_of(right[[name]], reindex_positions(result)).iloc[:, 0]
                found[name, how] = taken.set_axis(left.index)
            else:
                numbers = (
                    result.to_numpy()  # counts: never null
                    if how == "count"
                    else _pandas_numbers(result, right[name].dtype)
                )
                found[name, how] = pd.Series(numbers, index=left.index)
    for agg in wanted:
        out[agg.name] = found[agg.column, agg.agg]
    return out


def range_join(
    left: pd.DataFrame,
    right: pd.DataFrame,
    *,
    on: str | None = None,
    left_on: str | None = None,
    right_on: str | None = None,
    by: str | Sequence[str] | None = None,
    by_left: str | Sequence[str] | None = None,
    by_right: str | Sequence[str] | None = None,
    before: RowTolerance | str,
    after: RowTolerance | str = 0,
    prevailing: bool = False,
    suffix: str = "_right",
    device: DeviceName = "auto",
) -> pd.DataFrame:
    """The one-to-many as-of join (``asofgpu.range_join``) on pandas frames: one row per (left
    row, right row of its window), in left order then key order, and each left row with an
    empty window once, with missing values. A fresh RangeIndex; the left columns, then the
    right ones but the ``by`` columns (``suffix`` on names that clash), taken as ``reindex``
    takes rows.

    >>> import pandas as pd
    >>> trades = pd.DataFrame({"t": [5, 9]})
    >>> quotes = pd.DataFrame({"t": [1, 3, 4], "bid": [1.0, 2.0, 3.0]})
    >>> range_join(trades, quotes, on="t", before=2, device="cpu")
       t  t_right  bid
    0  5      3.0  2.0
    1  5      4.0  3.0
    2  9      NaN  NaN
    """
    import pandas as pd

    keys = _frame_keys(left, right, on, left_on, right_on, by, by_left, by_right)
    check_suffix(suffix)
    kept = [c for c in right.columns if c not in set(keys[3])]
    names = right_names(list(left.columns), kept, suffix)
    windows = _windows(left, right, keys, before, after, prevailing, device)
    left_map, right_map = windows.pairs()
    taken = [
        rows_of(left, reindex_positions(left_map)),
        rows_of(right[kept], reindex_positions(right_map)),
    ]
    taken[1].columns = names
    return pd.concat(taken, axis=1) if PANDAS_3 else pd.concat(taken, axis=1, copy=False)


def _frame_keys(left, right, on, left_on, right_on, by, by_left, by_right):
    import pandas as pd

    for frame, side in ((left, "left"), (right, "right")):
        if not isinstance(frame, pd.DataFrame):
            msg = f"{side} must be a pandas DataFrame, got {_validate.type_name(frame)}"
            raise TypeError(msg)
    keys = resolve_keys(on, left_on, right_on, by, by_left, by_right, labels=True)
    missing = missing_key(left.columns, right.columns, keys)
    if missing:
        raise KeyError(missing)
    return keys


def _windows(left, right, keys, before, after, prevailing, device):
    left_on, right_on, left_by, right_by = keys
    left_cols, right_cols = by_pairs(
        [left[c] for c in left_by], [right[c] for c in right_by], left_by, right_by
    )
    return windows_once(
        left[left_on], left_cols, right[right_on], right_cols,
        before=before, after=after, prevailing=prevailing, device=device,
    )  # fmt: skip


def _values_kept(dtype) -> bool:
    """Whether a column's min and max can come as the values themselves
    (``reduce_column``'s ``extreme_values``) and become what ``rows_of`` would take: numpy
    float64 and int64 (NaN, and int64 made float64, where a window is empty) and
    Arrow-backed columns. Other dtypes gather the rows the picks name."""
    import numpy as np
    import pandas as pd

    return dtype in (np.float64, np.int64) or isinstance(dtype, pd.ArrowDtype)


def _pandas_values(array: pa.Array, source_dtype):
    """Min or max values of a ``_values_kept`` column (Arrow, its type, null where a window
    is empty) as pandas holds them."""
    import pandas as pd

    if isinstance(source_dtype, pd.ArrowDtype):
        return pd.arrays.ArrowExtensionArray(array)
    return array.to_numpy(zero_copy_only=False)  # nulls: float64 NaN


def _pandas_numbers(array, source_dtype):
    """A count, sum or mean as pandas holds numbers like the column's: Arrow-backed for an
    Arrow column, nullable for a nullable one, else numpy (NaN where null)."""
    import pandas as pd

    if isinstance(source_dtype, pd.ArrowDtype):
        return pd.arrays.ArrowExtensionArray(array)
    if isinstance(source_dtype, pd.api.extensions.ExtensionDtype) and hasattr(
        source_dtype, "numpy_dtype"
    ):  # the masked dtypes: Int64, UInt8, Float64, boolean, ...
        nullable = {pa.int64(): pd.Int64Dtype(), pa.uint64(): pd.UInt64Dtype()}
        return (
            array.to_pandas(types_mapper=nullable.get).array
            if array.type in nullable
            else pd.array(array.to_pandas(), dtype=pd.Float64Dtype())
        )
    return array.to_numpy(zero_copy_only=False)
