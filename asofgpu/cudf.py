"""``merge_asof`` for cuDF: pandas' signature and results, on ``cudf.DataFrame``s, on the GPU.

cuDF has no ``merge_asof`` (NVIDIA/cudf issue #2231, now story #24110). This one takes pandas'
keywords and returns what ``pandas.merge_asof`` returns for the same frames (compare with
``result.to_pandas()``), computed by ``asofgpu.plc`` without moving the data to the host:

- the arguments are validated by ``asofgpu._pandas_semantics`` (the pandas front end's rules) on
  zero-row pandas copies of the two frames (column names, dtypes and index only), so errors
  are pandas' own, type and message;
- the keys are checked on the device (nulls, sortedness: pandas' messages), encoded and probed
  by ``asofgpu.plc``, and the right frame's columns gathered by the map (NULLIFY);
- the result's columns, names, suffixes and index follow pandas' rules.

Differences from pandas:

- keys must be column labels or index level names (or ``left_index`` / ``right_index``);
  arrays as ``left_on`` / ``right_on`` / ``by`` raise TypeError;
- unmatched rows hold nulls in the right columns' own dtypes (cuDF's columns are nullable):
  ``result.to_pandas()`` turns int columns with nulls into float64 and bool columns into
  object, as pandas' result has them, and ``to_pandas(nullable=True)`` keeps Int64 / boolean;
- distances never wrap at the extremes of integer and datetime keys (as in
  ``asofgpu.pandas``).

``splice_join`` is the full as-of join (QuestDB's SPLICE JOIN) on cuDF frames, with the rules
and layout of the table-level ``asofgpu.splice_join`` (not pandas'): every row of both frames
once in key order, all left columns then all right columns, a fresh RangeIndex. Its maps come
from ``asofgpu.plc.splice_join``; both frames are gathered on the device.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np

from . import _validate
from . import plc as _plc_front
from ._types import NO_MATCH, PandasDirection, Tolerance
from .table import check_suffix, missing_key, resolve_keys, right_names

if TYPE_CHECKING:
    import cudf

__all__ = ["merge_asof", "splice_join"]


def merge_asof(
    left: cudf.DataFrame | cudf.Series,
    right: cudf.DataFrame | cudf.Series,
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
) -> cudf.DataFrame:
    """Perform a merge by key distance, as ``pandas.merge_asof`` does, on cuDF frames.

    For each left row, take the right row (of the same ``by`` group) whose ``on`` key is the
    closest in the ``direction``: "backward" takes the last row whose key is less than or
    equal to the left key, "forward" the first row whose key is greater than or equal to it,
    "nearest" the closer of the two (the backward one on a tie). Both frames must be sorted
    by their ``on`` key. Everything runs on the GPU.

    Parameters
    ----------
    left, right : cudf.DataFrame or named cudf.Series
    on : label
        Column (or index level) name in both frames: the ordered key.
    left_on, right_on : label
        The key of each frame, when the names differ.
    left_index, right_index : bool
        Use the frame's index as its key.
    by : label or list of labels
        Columns that must be equal before the ``on`` search (nulls match nulls, NaN matches
        null).
    left_by, right_by : label or list of labels
        ``by`` columns of each frame, when their names differ.
    suffixes : (str or None, str or None)
        Added to overlapping column names of the left and right frames.
    tolerance : int, float, datetime.timedelta, pandas.Timedelta, DateOffset or column, optional
        The largest distance a match may have (inclusive), in the key's type; also, as
        ``asofgpu.pandas`` takes them, a ``pandas.DateOffset`` on a datetime key and a column
        of tolerances, one per left row (a cuDF or pandas Series, read by position). Their
        bounds are counted on the host (the left key is copied there), then joined on the
        device.
    allow_exact_matches : bool
        False: equal keys do not match (strictly less / greater than).
    direction : {"backward", "forward", "nearest"}

    Returns
    -------
    cudf.DataFrame
        The left frame's rows and columns, then the right frame's columns (keys of the same
        name dropped), as ``pandas.merge_asof`` lays them out; nulls where nothing matched.

    Examples
    --------
    >>> import cudf  # doctest: +SKIP
    >>> from asofgpu.cudf import merge_asof  # doctest: +SKIP
    >>> quotes = cudf.DataFrame({"time": [1, 5, 10, 2, 6],  # doctest: +SKIP
    ...                          "ticker": ["A", "A", "A", "B", "B"],
    ...                          "bid": [10.0, 10.5, 11.0, 20.0, 20.5]}).sort_values("time")
    >>> trades = cudf.DataFrame({"time": [0, 6, 6], "ticker": ["A", "A", "B"],  # doctest: +SKIP
    ...                          "qty": [5, 7, 9]})
    >>> merge_asof(trades, quotes, on="time", by="ticker").to_pandas()  # doctest: +SKIP
       time ticker  qty   bid
    0     0      A    5   NaN
    1     6      A    7  10.5
    2     6      B    9  20.5
    >>> merge_asof(trades, quotes, on="time", by="ticker", direction="forward",  # doctest: +SKIP
    ...            allow_exact_matches=False)["bid"].to_arrow().to_pylist()
    [10.0, 11.0, None]
    """
    from ._pandas_semantics import AsofMerge, check_join_options

    direction, exact = check_join_options(direction, allow_exact_matches)
    left, right = _operand(left), _operand(right)
    for param, value in (
        ("on", on),
        ("left_on", left_on),
        ("right_on", right_on),
        ("by", by),
        ("left_by", left_by),
        ("right_by", right_by),
    ):
        _check_labels(value, param)
    # pandas' validation on zero-row copies: names, dtypes and index, no data.
    op = AsofMerge(
        _empty_pandas(left),
        _empty_pandas(right),
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
    with _plc_front.on_default_stream():  # where cuDF's data and asofgpu.plc's maps are made
        gmap = _right_indexer(op, left, right, direction, exact)
        return _result(op, left, right, gmap)


def splice_join(
    left: cudf.DataFrame,
    right: cudf.DataFrame,
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
) -> cudf.DataFrame:
    """The full as-of join (QuestDB's SPLICE JOIN) of two cuDF frames, on the GPU: every left
    row and every right row once, in key order, each beside the other frame's row that
    prevailed at its key in its group.

    The rules are ``asofgpu.splice_join``'s: rows ordered by their own ``on`` key, left rows
    first at equal keys, each frame in its row order, null keys last; a left row carries the
    right row a backward as-of join gives it, a right row the left row the same rule gives it
    (``allow_exact_matches`` and ``tolerance`` apply both ways; a number ``tolerance`` is in
    ``right_on``'s unit). ``by`` nulls match nothing unless ``null_equality="equal"``. The
    result holds all left columns, then all right columns, ``suffix`` on right names that
    clash with a left one, and a fresh RangeIndex; nulls where a row has no partner.

    Examples
    --------
    >>> import cudf  # doctest: +SKIP
    >>> from asofgpu.cudf import splice_join  # doctest: +SKIP
    >>> buys = cudf.DataFrame({"ts": [1, 4], "buy": ["b1", "b2"]})  # doctest: +SKIP
    >>> sells = cudf.DataFrame({"ts": [3, 3], "sell": ["s1", "s2"]})  # doctest: +SKIP
    >>> out = splice_join(buys, sells, on="ts")  # doctest: +SKIP
    >>> list(out.columns)  # doctest: +SKIP
    ['ts', 'buy', 'ts_right', 'sell']
    >>> out["buy"].to_arrow().to_pylist(), out["sell"].to_arrow().to_pylist()  # doctest: +SKIP
    (['b1', 'b1', 'b1', 'b2'], [None, 's1', 's2', 's2'])
    """
    cudf = _cudf()
    import pylibcudf as plc
    from cudf.core.column import ColumnBase

    from ._pandas_semantics import device_by_column as by_column
    from ._pandas_semantics import plc_column

    for frame, side in ((left, "left"), (right, "right")):
        if not isinstance(frame, cudf.DataFrame):
            kind = f"{type(frame).__module__}.{type(frame).__qualname__}"
            msg = f"{side} must be a cudf.DataFrame, got {kind}"
            raise TypeError(msg)
    left_on, right_on, left_by, right_by = resolve_keys(
        on, left_on, right_on, by, by_left, by_right, labels=True
    )
    check_suffix(suffix)
    exact = _validate.flag(allow_exact_matches, "allow_exact_matches")
    _validate.one_of(null_equality, "null_equality", ("unequal", "equal"))
    missing = missing_key(left.columns, right.columns, (left_on, right_on, left_by, right_by))
    if missing:
        raise KeyError(missing)
    labels = list(left.columns) + right_names(list(left.columns), list(right.columns), suffix)
    equality = (
        plc.types.NullEquality.EQUAL if null_equality == "equal" else plc.types.NullEquality.UNEQUAL
    )
    left_map, right_map = _plc_front.splice_join(
        plc.Table([by_column(left[n], nan_is_null=False) for n in left_by]),
        plc_column(left[left_on]),
        plc.Table([by_column(right[n], nan_is_null=False) for n in right_by]),
        plc_column(right[right_on]),
        exact,
        tolerance=tolerance,
        nulls_equal=equality,
    )
    columns = []
    for frame, gmap in ((left, left_map), (right, right_map)):
        gathered = _plc_front.gather(plc.Table([plc_column(frame[c]) for c in frame.columns]), gmap)
        columns += [
            ColumnBase.create(col, frame[c].dtype)
            for col, c in zip(gathered.columns(), frame.columns)
        ]
    return cudf.DataFrame._from_data(
        dict(zip(labels, columns)), index=cudf.RangeIndex(left_map.size())
    )


# --------------------------------------------------------------------------- arguments


def _cudf():
    try:
        import cudf
    except ImportError as exc:
        msg = (
            f"asofgpu.cudf needs cudf ({exc}). Hint: pip install cudf-cu12 (or -cu13), "
            f"which needs an NVIDIA GPU to make frames."
        )
        raise ImportError(msg) from None
    return cudf


def _operand(obj):
    """pandas' _validate_operand, for cuDF objects."""
    from ._pandas_semantics import validate_operand

    cudf = _cudf()
    return validate_operand(obj, cudf.DataFrame, cudf.Series)


def _check_labels(value, param: str) -> None:
    from pandas.api.types import is_hashable

    values = value if isinstance(value, list) else [value]
    for v in values:
        if not is_hashable(v):
            msg = (
                f"{param} must be a column label or index level name (or a list of them) in "
                f"asofgpu.cudf.merge_asof, got {type(v).__name__}. Hint: add the array to "
                f"the frame as a column and pass its name."
            )
            raise TypeError(msg)


def _empty_pandas(frame):
    """The frame's columns, dtypes and index, without its rows, as pandas."""
    return frame.head(0).to_pandas()


# --------------------------------------------------------------------------- the join


def _key(frame, label, use_index: bool):
    """A key of a cuDF frame as a Series or Index: the index, a column or an index level."""
    if use_index or label is None:
        return frame.index
    if label in frame.columns:
        return frame[label]
    return frame.index.get_level_values(label)


def _right_indexer(op, left, right, direction: str, exact: bool):
    """The map (cupy int32, NO_MATCH where nothing matched), pandas' rules, on the device."""
    import pandas as pd

    from ._columns import is_row_tolerances
    from ._pandas_semantics import (
        device_by_table,
        extension_tolerance,
        float_arithmetic_matters,
        kernel_tolerance,
        pandas_float_pick,
        prepare_on_device,
        probe_on_device,
        require_sorted_key,
    )

    extended = isinstance(op.tolerance, pd.offsets.BaseOffset) or is_row_tolerances(op.tolerance)
    tolerance = None if extended else op.temporal_tolerance()
    lkey = _key(left, None if op.left_index else op.left_on[-1], op.left_index)
    rkey = _key(right, None if op.right_index else op.right_on[-1], op.right_index)
    require_sorted_key(lkey, "left")  # (nulls and NaN alike, on the device)
    require_sorted_key(rkey, "right")
    # pandas' type errors, on the proxies without data, after both sides' order and nulls
    kernel_dtype = op.kernel_keys()[0].dtype
    if kernel_dtype.kind == "b":  # pandas joins bools as uint8
        lkey, rkey = lkey.astype("uint8"), rkey.astype("uint8")
    lnames, rnames = op.by_labels()
    left_by = device_by_table([_key(left, n, False) for n in lnames])
    right_by = device_by_table([_key(right, n, False) for n in rnames])
    if extended:  # a DateOffset's reaches or a column's values, counted on the host
        tolerance = extension_tolerance(
            op.tolerance, lkey.to_pandas().array, kernel_dtype, direction
        )
    elif tolerance is not None:
        tolerance = kernel_tolerance(tolerance, kernel_dtype)
    prepared = prepare_on_device(rkey, right_by)

    def probe(strategy, tol):
        return probe_on_device(prepared, lkey, left_by, strategy, exact, tol)

    if kernel_dtype.kind == "f":
        import cupy

        lvalues, rvalues = lkey.values, rkey.values
        if float_arithmetic_matters(lvalues, direction, tolerance, xp=cupy):
            return pandas_float_pick(
                lvalues,
                rvalues,
                probe,
                direction,
                tolerance,
                xp=cupy,
                no_match=NO_MATCH,
                dtype=np.int32,
            )
    return probe(direction, tolerance)


# --------------------------------------------------------------------------- the result


def _result(op, left, right, gmap):
    """pandas' result layout (``AsofMerge.result``'s) built from device columns."""
    import pandas as pd
    import pylibcudf as plc
    from cudf.core.column import ColumnBase

    from ._pandas_semantics import plc_column

    cudf = _cudf()
    kept = list(op.right.columns)  # right columns left after pandas drops same-named keys
    llabels, rlabels = op.result_labels()
    gathered = _plc_front.gather(
        plc.Table([plc_column(right[c]) for c in kept]), plc.Column.from_cuda_array_interface(gmap)
    )
    labels = list(llabels) + list(rlabels)
    columns = [ColumnBase.create(plc_column(left[c]), left[c].dtype) for c in left.columns]
    columns += [ColumnBase.create(col, right[c].dtype) for col, c in zip(gathered.columns(), kept)]
    right_missing = bool((gmap == NO_MATCH).any())
    _add_join_keys(op, left, labels, columns, right_missing)
    side = op.index_from(len(left))
    if side == "left":
        index = left.index
    elif side == "right":
        index = right.index[:0]
    else:
        index = cudf.RangeIndex(len(left))
    result = cudf.DataFrame._from_data(dict(enumerate(columns)), index=index)
    result.columns = (
        pd.MultiIndex.from_tuples(labels)
        if isinstance(op.left.columns, pd.MultiIndex)
        else pd.Index(labels, tupleize_cols=False)
    )
    return result


def _add_join_keys(op, left, labels: list, columns: list, right_missing: bool) -> None:
    """pandas' _maybe_add_join_keys for an as-of merge (every left row once, in order), on
    the keys ``AsofMerge.join_keys`` names: a right key column named like a left-index key
    takes the left keys where rows went unmatched; a key that is no column of the result is
    inserted from the left keys."""
    from cudf.core.column import ColumnBase
    from pandas.api.types import is_hashable

    from ._pandas_semantics import plc_column

    for i, name, lname in op.join_keys():
        key = _key(left, lname, lname is None)
        if is_hashable(name) and name in labels:
            if name not in op.left and name in op.right and right_missing:
                if key.dtype.kind in "iu":  # pandas: the right column, upcast by its missing
                    key = key.astype("float64")  # rows, decides the dtype
                columns[labels.index(name)] = ColumnBase.create(plc_column(key), key.dtype)
            continue
        key_column = ColumnBase.create(plc_column(key), key.dtype)
        if (
            (op.left_index or op.right_index)
            and len(left)
            and name is not None
            and name in left.index.names
        ):
            continue  # a level of the result's index (the left's): it holds these values
        labels.insert(i, name if name is not None else f"key_{i}")
        columns.insert(i, key_column)
