"""``merge_asof`` for cuDF: pandas' signature and results, on ``cudf.DataFrame``s, on the GPU.

cuDF has no ``merge_asof`` (NVIDIA/cudf issue #2231, now story #24110). This one takes pandas'
keywords and returns what ``pandas.merge_asof`` returns for the same frames (compare with
``result.to_pandas()``), computed by ``asofgpu.plc`` without moving the data to the host:

- the arguments are validated by asofgpu's pandas front end on zero-row pandas copies of the
  two frames (column names, dtypes and index only), so errors are pandas' own, type and message;
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
"""

from __future__ import annotations

import numpy as np

from . import plc as _plc_front
from ._device_encode import values_view
from ._types import NO_MATCH, Strategy

__all__ = ["merge_asof"]


def merge_asof(left, right, on=None, left_on=None, right_on=None, left_index=False,
               right_index=False, by=None, left_by=None, right_by=None, suffixes=("_x", "_y"),
               tolerance=None, allow_exact_matches=True, direction="backward"):
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
    tolerance : int, float, datetime.timedelta or pandas.Timedelta, optional
        The largest distance a match may have (inclusive), in the key's type.
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
    import pandas as pd
    from pandas.api.types import is_bool
    from pandas.errors import MergeError

    from .pandas import _AsofMerge

    if direction not in ["backward", "forward", "nearest"]:  # pandas' checks, in its order
        raise MergeError(f"direction invalid: {direction}")
    if not is_bool(allow_exact_matches):
        msg = f"allow_exact_matches must be boolean, passed {allow_exact_matches}"
        raise MergeError(msg)
    left, right = _operand(left), _operand(right)
    for param, value in (("on", on), ("left_on", left_on), ("right_on", right_on),
                         ("by", by), ("left_by", left_by), ("right_by", right_by)):
        _check_labels(value, param)
    # pandas' validation on zero-row copies: names, dtypes and index, no data.
    op = _AsofMerge(_empty_pandas(left), _empty_pandas(right), on, left_on, right_on,
                    left_index, right_index, by, left_by, right_by, suffixes, tolerance)
    gmap = _right_indexer(op, left, right, str(direction), bool(allow_exact_matches))
    return _result(op, left, right, gmap, pd)


# --------------------------------------------------------------------------- arguments


def _cudf():
    try:
        import cudf
    except ImportError as exc:
        msg = (f"asofgpu.cudf needs cudf ({exc}). Hint: pip install cudf-cu12 (or -cu13), "
               f"which needs an NVIDIA GPU to make frames.")
        raise ImportError(msg) from None
    return cudf


def _operand(obj):
    """pandas' _validate_operand, for cuDF objects."""
    cudf = _cudf()
    if isinstance(obj, cudf.DataFrame):
        return obj
    if isinstance(obj, cudf.Series):
        if obj.name is None:
            raise ValueError("Cannot merge a Series without a name")
        return obj.to_frame()
    msg = f"Can only merge Series or DataFrame objects, a {type(obj)} was passed"
    raise TypeError(msg)


def _check_labels(value, param: str) -> None:
    from pandas.api.types import is_hashable

    values = value if isinstance(value, list) else [value]
    for v in values:
        if not is_hashable(v):
            msg = (f"{param} must be a column label or index level name (or a list of them) in "
                   f"asofgpu.cudf.merge_asof, got {type(v).__name__}. Hint: add the array to "
                   f"the frame as a column and pass its name.")
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


def _plc_column(obj):
    col = obj.to_pylibcudf()
    return col[0] if isinstance(col, tuple) else col


def _check_on(values, side: str) -> None:
    """pandas' data checks on an ``on`` key (nulls and NaN alike), run on the device."""
    if bool(values.isna().any()):
        raise ValueError(f"Merge keys contain null values on {side} side")
    if not values.is_monotonic_increasing:
        raise ValueError(f"{side} keys must be sorted")


def _by_column(values):
    """A by-key as the encoder should compare it: categoricals by value, NaN as null
    (pandas groups NaN and None together)."""
    cudf = _cudf()
    if isinstance(values.dtype, cudf.CategoricalDtype):
        values = values.astype(values.dtype.categories.dtype)
    if values.dtype.kind == "f":
        values = values.nans_to_nulls()
    return _plc_column(values)


def _right_indexer(op, left, right, direction: str, exact: bool):
    """The map (cupy int32, NO_MATCH where nothing matched), pandas' rules, on the device."""
    import pandas as pd
    import pylibcudf as plc

    from .pandas import (_float_arithmetic_matters, _is_temporal, _join_values, _kernel_array,
                         _kernel_tolerance, _unit)

    left_proxy, right_proxy = op._on_values("left"), op._on_values("right")
    tolerance = op.tolerance
    if tolerance is not None and _is_temporal(left_proxy):
        tolerance = pd.Timedelta(tolerance)
        if left_proxy.dtype.kind in "mM":
            tolerance = tolerance.as_unit(_unit(left_proxy))
        tolerance = int(tolerance.to_timedelta64().astype(np.int64))
    lkey = _key(left, None if op.left_index else op.left_on[-1], op.left_index)
    rkey = _key(right, None if op.right_index else op.right_on[-1], op.right_index)
    _check_on(lkey, "left")
    _check_on(rkey, "right")
    # pandas' type errors, on proxies without data, after both sides' order and nulls
    left_join, right_join = _join_values(left_proxy, "left"), _join_values(right_proxy, "right")
    kernel_dtype = _kernel_array(left_join).dtype
    _kernel_array(right_join)
    if kernel_dtype.kind == "b":  # pandas joins bools as uint8
        lkey, rkey = lkey.astype("uint8"), rkey.astype("uint8")
    left_by = right_by = plc.Table([])
    if op.left_by is not None:
        both = op.left_index and op.right_index
        lnames = op.left_on if both else op.left_on[:-1]
        rnames = op.right_on if both else op.right_on[:-1]
        left_by = plc.Table([_by_column(_key(left, n, False)) for n in lnames])
        right_by = plc.Table([_by_column(_key(right, n, False)) for n in rnames])
    if tolerance is not None:
        tolerance = _kernel_tolerance(tolerance, kernel_dtype)
    prepared = _plc_front.AsofJoin(right_by, _plc_column(rkey), plc.types.NullEquality.EQUAL)

    def probe(strategy, tol):
        gmap = prepared.join(left_by, _plc_column(lkey), strategy, exact, tolerance=tol,
                             nearest_tie="backward")
        return values_view(gmap, np.dtype(np.int32))

    if kernel_dtype.kind == "f" and _float_matters(lkey, kernel_dtype, direction, tolerance,
                                                   _float_arithmetic_matters):
        return _pandas_float_pick(lkey, rkey, probe, direction, tolerance)
    return probe(direction, tolerance)


def _float_matters(lkey, dtype, direction, tolerance, rule) -> bool:
    """asofgpu.pandas' rule, with the data it looks at (infinite keys) checked on the device."""
    import cupy

    if dtype != np.float64:
        return rule(np.empty(0, dtype), direction, tolerance)
    return direction == "nearest" and bool(cupy.isinf(lkey.values).any())


def _pandas_float_pick(lkey, rkey, probe, direction: str, tolerance):
    """pandas' float picks on the device (asofgpu.pandas._pandas_float_pick's twin): each
    side found without a tolerance, checked against it in the key's dtype, then the backward
    row unless the forward one is strictly closer."""
    import cupy

    lvals, rvals = lkey.values, rkey.values
    with np.errstate(over="ignore"):
        tol = None if tolerance is None else lvals.dtype.type(tolerance)
    none = cupy.full(len(lvals), NO_MATCH, dtype=np.int32)
    if not len(rvals):
        return none
    back = probe(Strategy.BACKWARD.value, None) if direction != "forward" else none
    fwd = probe(Strategy.FORWARD.value, None) if direction != "backward" else none
    bdiff = lvals - rvals[cupy.maximum(back, 0)]
    fdiff = rvals[cupy.maximum(fwd, 0)] - lvals
    if tol is not None:
        back = cupy.where(bdiff > tol, NO_MATCH, back)
        fwd = cupy.where(fdiff > tol, NO_MATCH, fwd)
    pick_back = (back != NO_MATCH) & ((fwd == NO_MATCH) | (bdiff <= fdiff))
    return cupy.where(pick_back, back, fwd).astype(np.int32)


# --------------------------------------------------------------------------- the result


def _result(op, left, right, gmap, pd):
    """pandas' result layout (asofgpu.pandas._AsofMerge.result) built from device columns."""
    import pylibcudf as plc
    from cudf.core.column import ColumnBase

    from .pandas import _items_overlap_with_suffix

    cudf = _cudf()
    kept = list(op.right.columns)  # right columns left after pandas drops same-named keys
    llabels, rlabels = _items_overlap_with_suffix(op.left.columns, op.right.columns,
                                                  op.suffixes)
    gathered = _plc_front.gather(plc.Table([_plc_column(right[c]) for c in kept]),
                                 plc.Column.from_cuda_array_interface(gmap))
    labels = list(llabels) + list(rlabels)
    columns = [ColumnBase.create(_plc_column(left[c]), left[c].dtype) for c in left.columns]
    columns += [ColumnBase.create(col, right[c].dtype)
                for col, c in zip(gathered.columns(), kept)]
    right_missing = bool((gmap == NO_MATCH).any())
    _add_join_keys(op, left, labels, columns, right_missing)
    if op.right_index:
        index = left.index if len(left) else right.index[:0]
    elif op.left_index:
        index = left.index
    else:
        index = cudf.RangeIndex(len(left))
    result = cudf.DataFrame._from_data(dict(enumerate(columns)), index=index)
    result.columns = (pd.MultiIndex.from_tuples(labels)
                      if isinstance(op.left.columns, pd.MultiIndex)
                      else pd.Index(labels, tupleize_cols=False))
    return result


def _add_join_keys(op, left, labels: list, columns: list, right_missing: bool) -> None:
    """pandas' _maybe_add_join_keys for an as-of merge (every left row once, in order): a
    right key column named like a left-index key takes the left keys where rows went
    unmatched; a key that is no column of the result is inserted from the left keys."""
    from cudf.core.column import ColumnBase
    from pandas.api.types import is_hashable

    for i, (name, lname, rname) in enumerate(zip(op.join_names, op.left_on, op.right_on)):
        if isinstance(lname, str) and isinstance(rname, str) and lname != rname:
            continue
        key = _key(left, lname, lname is None)
        if is_hashable(name) and name in labels:
            if name not in op.left and name in op.right and right_missing:
                if key.dtype.kind in "iu":  # pandas: the right column, upcast by its missing
                    key = key.astype("float64")  # rows, decides the dtype
                columns[labels.index(name)] = ColumnBase.create(_plc_column(key), key.dtype)
            continue
        key_column = ColumnBase.create(_plc_column(key), key.dtype)
        if ((op.left_index or op.right_index) and len(left) and name is not None
                and name in left.index.names):
            continue  # a level of the result's index (the left's): it holds these values
        labels.insert(i, name if name is not None else f"key_{i}")
        columns.insert(i, key_column)
