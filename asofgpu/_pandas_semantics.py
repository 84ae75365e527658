"""pandas' ``merge_asof`` semantics, shared by the front ends that promise them.

``asofgpu.pandas``, ``asofgpu.cudf`` and ``asofgpu.dask`` all return what ``pandas.merge_asof``
returns, with its errors. The rules they share live here, once. What is still each front
end's own: ``asofgpu.cudf`` casts bool ``on`` keys to uint8, checks the device ``on`` key and
lays out its join keys from device columns; ``asofgpu.dask``'s cuDF partitions take neither
the bool cast nor the float picks (float32 keys with ``nearest`` or a tolerance may differ
from pandas there). The interface (the functions and the class defined here without a
leading underscore; ``AsofMerge``'s attributes ``left``, ``right``, ``left_on``,
``right_on``, ``left_by``, ``right_by``, ``left_index`` and ``right_index`` are read by the
front ends too):

- ``check_join_options`` and ``validate_operand``: pandas' first checks of a call;
- ``AsofMerge``: one call's arguments validated as pandas validates them (keys, ``by``,
  dtypes, tolerance), then, on pandas frames, the right indexer computed by asofgpu
  (``right_indexer``, whose ``prepare`` a subclass may override to reuse a prepared right
  side) and the result laid out as pandas lays it out (``result``). Its other methods give
  the same rules to a front end that holds its data elsewhere: ``asofgpu.cudf`` builds one on
  zero-row pandas copies of its frames (``temporal_tolerance``, ``kernel_keys``, ``by_labels``,
  ``result_labels``, ``index_from``, ``join_keys``);
- ``kernel_tolerance``, ``float_arithmetic_matters`` and ``pandas_float_pick``: the tolerance
  and the float distances as pandas' kernel computes them (numpy or cupy arrays);
  ``extension_tolerance``: a ``DateOffset`` or a column of tolerances, which pandas refuses,
  as asofgpu's join takes them;
- ``reindex_positions`` and ``rows_of``: a gather map as ``reindex`` positions, and a frame's
  rows taken by them as ``reindex`` takes them (-1: a row of missing values), which
  ``asofgpu.pandas.splice_join`` uses for both sides;
- ``plc_column``, ``device_by_table``, ``prepare_on_device`` and ``probe_on_device``: cuDF
  columns joined on the device with pandas' by-key rules (nulls and NaN equal, categoricals
  by value) and its choice among equal right keys (``asofgpu.cudf``, and the cuDF partitions
  of ``asofgpu.dask``).

Users: ``asofgpu.pandas`` (everything on pandas frames), ``asofgpu.cudf`` (the checks and
layout rules, and the device join), ``asofgpu.dask`` (``AsofMerge`` on pandas partitions and
on the empty metas, the device join on cuDF partitions). No front end imports another's
private names.
"""

from __future__ import annotations

import datetime
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
from pandas.api.extensions import ExtensionArray, take
from pandas.api.types import (
    is_bool,
    is_float_dtype,
    is_hashable,
    is_integer,
    is_integer_dtype,
    is_list_like,
    is_number,
    is_object_dtype,
    is_string_dtype,
)
from pandas.errors import MergeError

from ._backend import take_fixed, walks
from ._columns import Reaches, is_row_tolerances, key_type_of_arrow, row_tolerances
from ._types import NO_MATCH_INT64
from ._gather import gather
from .join import AsofJoin

# pandas 3 changed two checks of merge_asof; asofgpu follows the pandas it runs beside.
PANDAS_3 = int(pd.__version__.split(".")[0]) >= 3
# pandas 2 says "positive" of a tolerance that may be 0.
NEGATIVE_TOLERANCE = "tolerance must be " + ("non-negative" if PANDAS_3 else "positive")

_KNOWN = (np.ndarray, ExtensionArray, pd.Index, pd.Series)
_MASKED = (pd.arrays.IntegerArray, pd.arrays.FloatingArray, pd.arrays.BooleanArray)
_MASKED_DTYPES = tuple(
    getattr(pd, f"{kind}Dtype")
    for kind in (
        "Int8",
        "Int16",
        "Int32",
        "Int64",
        "UInt8",
        "UInt16",
        "UInt32",
        "UInt64",
        "Float32",
        "Float64",
        "Boolean",
    )
)


# --------------------------------------------------------------------------- first checks


def check_join_options(direction, allow_exact_matches) -> tuple[str, bool]:
    """pandas' checks of ``direction`` and ``allow_exact_matches``, in its order; both as
    the join takes them.

    >>> check_join_options("nearest", True)
    ('nearest', True)
    >>> check_join_options("sideways", True)
    Traceback (most recent call last):
    ...
    pandas.errors.MergeError: direction invalid: sideways
    """
    if direction not in ["backward", "forward", "nearest"]:
        raise MergeError(f"direction invalid: {direction}")
    if not is_bool(allow_exact_matches):
        msg = f"allow_exact_matches must be boolean, passed {allow_exact_matches}"
        raise MergeError(msg)
    return str(direction), bool(allow_exact_matches)


def validate_operand(obj, frame_type=pd.DataFrame, series_type=pd.Series):
    """pandas' _validate_operand: a DataFrame, or a named Series as one; of another library
    when given its types (``cudf.DataFrame``, ``cudf.Series``)."""
    if isinstance(obj, frame_type):
        return obj
    if isinstance(obj, series_type):
        if obj.name is None:
            raise ValueError("Cannot merge a Series without a name")
        return obj.to_frame()
    raise TypeError(f"Can only merge Series or DataFrame objects, a {type(obj)} was passed")


# --------------------------------------------------------------------------- one merge


class AsofMerge:
    """pandas' _AsOfMerge, step by step, with asofgpu computing the right indexer.

    Construction validates the call as pandas does; ``result(right_indexer(...))`` is the
    merge of two pandas frames.
    """

    def __init__(
        self,
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
    ):
        self.left = validate_operand(left)
        self.right = validate_operand(right)
        self.on = _make_list(on)
        self.suffixes = suffixes
        self.left_index, self.right_index = left_index, right_index
        self.by, self.left_by, self.right_by = by, left_by, right_by
        self.tolerance = tolerance
        self._tolerance_rows = None  # a column of tolerances, read once (on the host)
        if not is_bool(left_index):
            raise ValueError(f"left_index parameter must be of type bool, not {type(left_index)}")
        if not is_bool(right_index):
            raise ValueError(f"right_index parameter must be of type bool, not {type(right_index)}")
        nl, nr = self.left.columns.nlevels, self.right.columns.nlevels
        if nl != nr:
            msg = (
                f"Not allowed to merge between different levels. ({nl} levels on the "
                f"left, {nr} on the right)"
            )
            raise MergeError(msg)
        self.left_on, self.right_on = self._validate_left_right_on(left_on, right_on)
        self.left_keys, self.right_keys, self.join_names, right_drop = self._merge_keys()
        if right_drop:
            self.right = _drop_labels_or_levels(self.right, right_drop)
        self._require_matching_dtypes()
        self._validate_tolerance()

    # ------------------------------------------------------------------ validation

    def _validate_left_right_on(self, left_on, right_on):
        left_on, right_on = _make_list(left_on), _make_list(right_on)
        if self.on is None and left_on is None and right_on is None:
            if self.left_index and self.right_index:
                left_on, right_on = (), ()
            elif self.left_index:
                raise MergeError("Must pass right_on or right_index=True")
            elif self.right_index:
                raise MergeError("Must pass left_on or left_index=True")
            else:
                left_cols, right_cols = self.left.columns, self.right.columns
                common = left_cols.intersection(right_cols)
                if len(common) == 0:
                    raise MergeError(
                        "No common columns to perform merge on. "
                        f"Merge options: left_on={left_on}, right_on={right_on}, "
                        f"left_index={self.left_index}, right_index={self.right_index}"
                    )
                if (
                    not left_cols.join(common, how="inner").is_unique
                    or not right_cols.join(common, how="inner").is_unique
                ):
                    raise MergeError(f"Data columns not unique: {common!r}")
                left_on = right_on = common
        elif self.on is not None:
            if left_on is not None or right_on is not None:
                raise MergeError(
                    'Can only pass argument "on" OR "left_on" '
                    'and "right_on", not a combination of both.'
                )
            if self.left_index or self.right_index:
                raise MergeError(
                    'Can only pass argument "on" OR "left_index" '
                    'and "right_index", not a combination of both.'
                )
            left_on = right_on = self.on
        elif left_on is not None:
            if self.left_index:
                raise MergeError('Can only pass argument "left_on" OR "left_index" not both.')
            if not self.right_index and right_on is None:
                raise MergeError('Must pass "right_on" OR "right_index".')
            if self.right_index and right_on is not None:
                raise MergeError('Can only pass argument "right_on" OR "right_index" not both.')
            if self.right_index:
                if len(left_on) != self.right.index.nlevels:
                    raise ValueError(
                        'len(left_on) must equal the number of levels in the index of "right"'
                    )
                right_on = [None] * len(left_on)
        elif right_on is not None:
            if self.right_index:
                raise MergeError('Can only pass argument "right_on" OR "right_index" not both.')
            if not self.left_index and left_on is None:
                raise MergeError('Must pass "left_on" OR "left_index".')
            if self.left_index:
                if len(right_on) != self.left.index.nlevels:
                    raise ValueError(
                        'len(right_on) must equal the number of levels in the index of "left"'
                    )
                left_on = [None] * len(right_on)
        if len(right_on) != len(left_on):
            raise ValueError("len(right_on) must equal len(left_on)")
        return self._validate_asof_on(left_on, right_on)

    def _validate_asof_on(self, left_on, right_on):
        if len(left_on) != 1 and not self.left_index:
            raise MergeError("can only asof on a key for left")
        if len(right_on) != 1 and not self.right_index:
            raise MergeError("can only asof on a key for right")
        if self.left_index and isinstance(self.left.index, pd.MultiIndex):
            raise MergeError("left can only have one index")
        if self.right_index and isinstance(self.right.index, pd.MultiIndex):
            raise MergeError("right can only have one index")
        if self.by is not None:
            if self.left_by is not None or self.right_by is not None:
                raise MergeError("Can only pass by OR left_by and right_by")
            self.left_by = self.right_by = self.by
        if self.left_by is None and self.right_by is not None:
            raise MergeError("missing left_by")
        if self.left_by is not None and self.right_by is None:
            raise MergeError("missing right_by")
        lo_dtype = self.left.index.dtype if self.left_index else _on_dtype(self.left, left_on[0])
        ro_dtype = (
            self.right.index.dtype if self.right_index else _on_dtype(self.right, right_on[0])
        )
        if (
            is_object_dtype(lo_dtype)
            or is_object_dtype(ro_dtype)
            or is_string_dtype(lo_dtype)
            or is_string_dtype(ro_dtype)
        ):
            raise MergeError(
                f"Incompatible merge dtype, {lo_dtype!r} and {ro_dtype!r}, "
                "both sides must have numeric dtype"
            )
        if self.left_by is not None:
            if not is_list_like(self.left_by):
                self.left_by = [self.left_by]
            if not is_list_like(self.right_by):
                self.right_by = [self.right_by]
            if len(self.left_by) != len(self.right_by):
                raise MergeError("left_by and right_by must be the same length")
            left_on = self.left_by + list(left_on)
            right_on = self.right_by + list(right_on)
        return left_on, right_on

    def _merge_keys(self):
        """pandas' _get_merge_keys: key arrays, their names, right keys to drop."""
        left, right = self.left, self.right
        left_keys, right_keys, names, right_drop = [], [], [], []

        def is_lkey(x):
            return isinstance(x, _KNOWN) and len(x) == len(left)

        def is_rkey(x):
            return isinstance(x, _KNOWN) and len(x) == len(right)

        if _any(self.left_on) and _any(self.right_on):
            for lk, rk in zip(self.left_on, self.right_on, strict=True):
                lk, rk = _extract(lk), _extract(rk)
                if is_lkey(lk):
                    left_keys.append(lk)
                    if is_rkey(rk):
                        right_keys.append(rk)
                        names.append(None)
                    elif rk is not None:
                        right_keys.append(_label_or_level_values(right, rk))
                        names.append(rk)
                    else:
                        right_keys.append(_values(right.index))
                        names.append(right.index.name)
                else:
                    if not is_rkey(rk):
                        right_keys.append(
                            _label_or_level_values(right, rk)
                            if rk is not None
                            else _values(right.index)
                        )
                        if lk is not None and lk == rk:
                            right_drop.append(rk)
                    else:
                        right_keys.append(rk)
                    if lk is not None:
                        left_keys.append(_label_or_level_values(left, lk))
                        names.append(lk)
                    else:
                        left_keys.append(_values(left.index))
                        names.append(left.index.name)
        elif _any(self.left_on):
            for k in self.left_on:
                if is_lkey(k):
                    left_keys.append(_extract(k))
                    names.append(None)
                else:
                    left_keys.append(_label_or_level_values(left, k))
                    names.append(k)
            right_keys = [_values(right.index)]
        elif _any(self.right_on):
            for k in self.right_on:
                k = _extract(k)
                if is_rkey(k):
                    right_keys.append(k)
                    names.append(None)
                else:
                    right_keys.append(_label_or_level_values(right, k))
                    names.append(k)
            left_keys = [_values(left.index)]
        return left_keys, right_keys, names, right_drop

    def _on_values(self, side: str):
        frame, index_flag, keys = (
            (self.left, self.left_index, self.left_keys)
            if side == "left"
            else (self.right, self.right_index, self.right_keys)
        )
        return _values(frame.index) if index_flag else keys[-1]

    def _require_matching_dtypes(self) -> None:
        for i, (lk, rk) in enumerate(zip(self.left_keys, self.right_keys, strict=True)):
            _check_dtype_match(lk, rk, i)
        _check_dtype_match(self._on_values("left"), self._on_values("right"), 0)

    def _validate_tolerance(self) -> None:
        tol = self.tolerance
        if tol is None:
            return
        lt = self._on_values("left")
        msg = f"incompatible tolerance {tol}, must be compat with type {lt.dtype!r}"
        if isinstance(tol, pd.offsets.BaseOffset) or is_row_tolerances(tol):
            self._tolerance_extension(lt)  # checked further when probed: they need the rows
            return
        if _is_temporal(lt):
            if not isinstance(tol, datetime.timedelta):
                raise MergeError(msg)
            if tol < pd.Timedelta(0):
                raise MergeError(NEGATIVE_TOLERANCE)
        elif is_integer_dtype(lt.dtype):
            if not is_integer(tol):
                raise MergeError(msg)
            if tol < 0:
                raise MergeError(NEGATIVE_TOLERANCE)
        elif is_float_dtype(lt.dtype):
            if not is_number(tol):
                raise MergeError(msg)
            if tol < 0:
                raise MergeError(NEGATIVE_TOLERANCE)
        else:
            raise MergeError("key must be integer, timestamp or float")

    def _tolerance_extension(self, lt) -> None:
        """asofgpu's tolerances beyond pandas': a ``DateOffset`` on a datetime key, or a
        column with one tolerance per left row (durations on a temporal key, numbers on a
        numeric one)."""
        tol = self.tolerance
        if isinstance(tol, pd.offsets.BaseOffset):
            if lt.dtype.kind != "M":  # only datetime keys take asofgpu's: pandas' error
                msg = f"incompatible tolerance {tol}, must be compat with type {lt.dtype!r}"
                raise MergeError(msg)
            return
        column = self._tolerance_rows = _tolerance_column(tol)
        if _is_temporal(lt):
            expected = "durations (timedelta64)", column.dtype.kind == "m"
        elif is_integer_dtype(lt.dtype) or is_float_dtype(lt.dtype):
            expected = "numbers", is_integer_dtype(column.dtype) or is_float_dtype(column.dtype)
        else:
            raise MergeError("key must be integer, timestamp or float")
        if not expected[1] and column.isna().all():
            # No entry holds a value (a list of None or of NaT, or an empty one): its dtype
            # is pandas' guess from nothing. Every row has no limit.
            dtype = "timedelta64[ns]" if _is_temporal(lt) else "float64"
            column = self._tolerance_rows = pd.Series(None, index=column.index, dtype=dtype)
        elif not expected[1]:
            msg = (
                f"tolerance: a column of tolerances on a {lt.dtype} key holds "
                f"{expected[0]}, got {column.dtype}"
            )
            raise MergeError(msg)

    def probe_tolerance(self, key_dtype: np.dtype, direction: str):
        """The tolerance as ``AsofJoin.join`` takes it, on the kernel's keys of ``key_dtype``
        (whole ticks of the left key's unit on a temporal key): pandas' scalar through
        ``kernel_tolerance``; a column of them as ``extension_tolerance`` gives it; a
        ``DateOffset`` as each left row's reach in the ways ``direction`` looks (``Reaches``),
        measured by pandas' own arithmetic: back to ``x - offset``, ahead to ``x + offset``."""
        tol = self.tolerance
        if isinstance(tol, pd.offsets.BaseOffset) or is_row_tolerances(tol):
            rows = self._tolerance_rows  # the column as the checks read it: not read again
            given = tol if rows is None else rows
            return extension_tolerance(given, self._on_values("left"), key_dtype, direction)
        tolerance = self.temporal_tolerance()
        return None if tolerance is None else kernel_tolerance(tolerance, key_dtype)

    # ------------------------------------------------------------------ the keys

    def temporal_tolerance(self):
        """The tolerance; a temporal key's as int64 ticks of the key's unit (the first step
        of pandas' conversion; ``kernel_tolerance`` is the second)."""
        left_values, tolerance = self._on_values("left"), self.tolerance
        if tolerance is not None and _is_temporal(left_values):
            tolerance = pd.Timedelta(tolerance)
            if left_values.dtype.kind in "mM":
                tolerance = tolerance.as_unit(_unit(left_values))
            tolerance = int(tolerance.to_timedelta64().astype(np.int64))
        return tolerance

    def kernel_keys(self) -> tuple[np.ndarray, np.ndarray]:
        """Both ``on`` keys as pandas' kernel takes them (numpy numbers or bools), after
        pandas' checks in its order: each side's nulls and order, then both sides' types."""
        lkey = _join_values(self._on_values("left"), "left")
        rkey = _join_values(self._on_values("right"), "right")
        return _kernel_array(lkey), _kernel_array(rkey)

    def by_labels(self) -> tuple[list, list]:
        """The ``by`` part of ``left_on`` and ``right_on``: all of them when both keys are
        the index, else all but the ``on`` key (empty without ``by``)."""
        return self._by_part(self.left_on), self._by_part(self.right_on)

    def _by_part(self, keys):
        return keys if self.left_index and self.right_index else keys[:-1]

    def right_indexer(self, direction: str, exact: bool, device) -> np.ndarray:
        """pandas' right indexer (-1: no match), computed by asofgpu."""
        lkey, rkey = self.kernel_keys()
        left_by = right_by = None
        if self.left_by is not None:
            lks, rks = self._by_part(self.left_keys), self._by_part(self.right_keys)
            lks[0]  # noqa: B018 - as pandas: IndexError when by names no column
            pairs = [_by_columns(lk, rk) for lk, rk in zip(lks, rks)]
            left_by, right_by = [p[0] for p in pairs], [p[1] for p in pairs]
        tolerance = self.probe_tolerance(lkey.dtype, direction)
        prepared = self.prepare(_kernel_key(rkey), right_by, device)

        def probe(strategy, tol):
            gmap = prepared.join(
                _kernel_key(lkey),
                left_by,
                strategy=strategy,
                allow_exact_matches=exact,
                tolerance=tol,
                nearest_tie="backward",
            )
            return reindex_positions(gmap)

        if lkey.dtype.kind == "f" and float_arithmetic_matters(lkey, direction, tolerance):
            return pandas_float_pick(lkey, rkey, probe, direction, tolerance)
        return probe(direction, tolerance)

    def prepare(self, right_key: np.ndarray, right_by, device, reused=False) -> AsofJoin:
        """The right side prepared for the probe (asofgpu.dask overrides this to reuse one
        per worker). Used once, its sort by group waits: on the cpu the join may walk both
        sides in key order."""
        return AsofJoin(
            right_key, right_by, null_equality="equal", device=device, _defer_sort=not reused
        )

    # ------------------------------------------------------------------ the result

    def result_labels(self) -> tuple[pd.Index, pd.Index]:
        """The left's and the right's column labels in the result, suffixed where they
        overlap (pandas' errors for bad suffixes)."""
        return _items_overlap_with_suffix(self.left.columns, self.right.columns, self.suffixes)

    def index_from(self, n_left: int) -> str | None:
        """Where the result's index comes from, for a left side of ``n_left`` rows: "left"
        (the left's index), "right" (the right's, taken by the map: no rows, since the left
        has none) or None (a RangeIndex)."""
        if self.right_index:
            return "left" if n_left > 0 else "right"
        return "left" if self.left_index else None

    def join_keys(self):
        """(position, name, left label) of each key pandas' _maybe_add_join_keys may put in
        the result (a label None: the left's index); keys whose two names differ stay out."""
        keys = zip(self.join_names, self.left_on, self.right_on, strict=True)
        for i, (name, lname, rname) in enumerate(keys):
            if isinstance(lname, str) and isinstance(rname, str) and lname != rname:
                continue
            yield i, name, lname

    def _join_index(self, rmap: np.ndarray) -> pd.Index:
        side = self.index_from(len(self.left))
        if side == "left":
            return self.left.index.take(np.arange(len(self.left)))
        if side == "right":
            return self.right.index.take(rmap)
        return pd.RangeIndex(len(rmap))

    def result(self, rmap: np.ndarray) -> pd.DataFrame:
        """The merged frame for a right indexer (-1: no match), as pandas builds it."""
        join_index = self._join_index(rmap)
        left, right = self.left[:], self.right[:]
        llabels, rlabels = self.result_labels()
        if not _is_identity(rmap, len(right)):
            right = rows_of(right, rmap)
        left.index = join_index
        right.index = join_index
        left.columns = llabels
        right.columns = rlabels
        result = pd.concat([left, right], axis=1)
        self._add_join_keys(result, rmap)
        return result

    def _add_join_keys(self, result: pd.DataFrame, rmap: np.ndarray) -> None:
        """pandas' _maybe_add_join_keys for a left indexer that is always 0..n-1."""
        right_missing = bool((rmap == -1).any())
        for i, name, _ in self.join_keys():
            take_left = take_right = None
            if name in result:
                if name in self.left:
                    rdtype = self.right_keys[i].dtype
                    ldtype = result[name].dtype
                    if ldtype.kind == "M" and rdtype.kind == "M" and ldtype != rdtype:
                        take_right = self.right_keys[i]
                        if result[name].dtype != self.left[name].dtype:
                            take_left = _values(self.left[name])
                elif name in self.right:
                    ldtype = self.left_keys[i].dtype
                    rdtype = result[name].dtype
                    resolution = rdtype.kind == "M" and ldtype.kind == "M" and rdtype != ldtype
                    if right_missing or resolution:
                        take_left = self.left_keys[i]
                        if result[name].dtype != self.right[name].dtype:
                            take_right = _values(self.right[name])
            else:
                take_left, take_right = self.left_keys[i], self.right_keys[i]
            if take_left is None and take_right is None:
                continue
            lvals = _values(result[name]) if take_left is None else _take(take_left, None)
            rvals = _values(result[name]) if take_right is None else _take(take_right, rmap)
            if len(rmap) == 0:
                key_col, dtype = pd.Index(rvals, dtype=rvals.dtype, copy=False), rvals.dtype
            else:
                key_col, dtype = pd.Index(lvals, dtype=lvals.dtype, copy=False), lvals.dtype
                if not (rmap == -1).all():
                    dtype = _common_type(lvals.dtype, rvals.dtype)
                    if lvals.dtype.kind == "M" and rvals.dtype.kind == "M" and dtype.kind == "O":
                        dtype = key_col.dtype
            if is_hashable(name) and name in result.columns:
                result[name] = pd.Series(key_col, dtype=dtype, index=result.index)
            elif _is_level_reference(result, name):
                if isinstance(result.index, pd.MultiIndex):
                    key_col.name = name
                    levels = [
                        result.index.get_level_values(n) if n != name else key_col
                        for n in result.index.names
                    ]
                    result.index = pd.MultiIndex.from_arrays(levels, names=[x.name for x in levels])
                else:
                    result.index = pd.Index(key_col, name=name)
            else:
                result.insert(i, name or f"key_{i}", key_col)


# --------------------------------------------------------------------------- pandas' kernel


def kernel_tolerance(tolerance, dtype: np.dtype):
    """The tolerance as pandas hands it to its kernel for keys of ``dtype`` (same errors),
    for asofgpu; None for a float NaN, which pandas never applies.

    >>> kernel_tolerance(2, np.dtype(np.int64))
    2
    >>> kernel_tolerance(float("nan"), np.dtype(np.float64)) is None
    True
    >>> kernel_tolerance(300, np.dtype(np.int8))
    Traceback (most recent call last):
    ...
    OverflowError: value too large to convert to npy_int8
    """
    if dtype.kind == "f":
        tolerance = float(tolerance)
        return None if tolerance != tolerance else tolerance
    if dtype.kind in "iu":
        tolerance = int(tolerance)
        info = np.iinfo(dtype)
        c_long = "C long" if dtype.kind == "i" else "C unsigned long"
        if tolerance > np.iinfo(np.int64 if dtype.kind == "i" else np.uint64).max:
            raise OverflowError(f"Python int too large to convert to {c_long}")
        if tolerance > info.max:
            raise OverflowError(f"value too large to convert to npy_{dtype.name}")
    return tolerance


def extension_tolerance(tolerance, left_values, key_dtype: np.dtype, direction: str):
    """asofgpu's tolerances beyond pandas' as ``AsofJoin.join`` takes them, for the left
    ``on`` values ``left_values`` (pandas or numpy, read on the host) joined as keys of
    ``key_dtype`` in ``direction``: a ``DateOffset`` as each row's reach (``Reaches``, by
    pandas' own arithmetic: back to ``x - offset``, ahead to ``x + offset``, each only where
    ``direction`` looks that way); a column of them as an Arrow array (numbers; on a
    temporal key whole ticks of the key's unit, rounded down, the largest for no limit;
    null: no limit), one per left row and none negative."""
    if isinstance(tolerance, pd.offsets.BaseOffset):
        return _offset_reaches(tolerance, left_values, direction)
    column = _tolerance_column(tolerance)
    if len(column) != len(left_values):
        msg = (
            f"tolerance has {len(column)} rows but left has {len(left_values)}: a column of "
            f"tolerances has one per left row"
        )
        raise MergeError(msg)
    temporal = column.dtype.kind == "m"
    negative = (column < pd.Timedelta(0) if temporal else column < 0).fillna(False)
    if negative.any():
        at = int(np.argmax(negative.to_numpy(dtype=bool)))
        raise MergeError(f"{NEGATIVE_TOLERANCE}, got {column.iloc[at]} at left row {at}")
    if temporal:
        # Durations of their own unit to whole ticks of the key's, rounded down, a null or
        # one past every distance as the largest (no limit): through nanoseconds, a column
        # of over 292 years overflowed where the same 900-year DateOffset joins.
        key_type = key_type_of_arrow(pa.timestamp(_unit(left_values)), "left_on")
        durations = pa.array(column, from_pandas=True)
        return pa.array(row_tolerances(durations, key_type, key_type.tick_ns, len(column), True))
    numbers = column.astype("float64" if key_dtype.kind == "f" else column.dtype)
    return pa.array(numbers, from_pandas=True)


def _tolerance_column(tolerance) -> pd.Series:
    """A column of tolerances as a Series read by position (its index is not aligned); a
    cuDF Series or a cupy array is copied to the host. Objects are typed by their values,
    as a list of them is (numbers, durations).

    >>> _tolerance_column(pd.Series([1, None], dtype=object, index=[5, 6])).tolist()
    [1.0, nan]
    """
    if type(tolerance).__module__.split(".")[0] == "cudf":
        return tolerance.to_pandas().reset_index(drop=True)
    if hasattr(tolerance, "__cuda_array_interface__") and hasattr(tolerance, "get"):
        return pd.Series(tolerance.get())  # cupy
    if isinstance(tolerance, pd.Series):
        column = tolerance.reset_index(drop=True)
        return column.infer_objects() if column.dtype == object else column
    if isinstance(tolerance, (pa.Array, pa.ChunkedArray)):
        return pd.Series(tolerance.to_pandas(types_mapper=pd.ArrowDtype))
    return pd.Series(tolerance)


def _offset_reaches(offset, left_values, direction: str) -> Reaches:
    """Each left key's reach back to ``x - offset`` (unless ``direction`` is forward) and
    ahead to ``x + offset`` (unless backward), in whole ticks of the key's unit (pandas' own
    calendar arithmetic: month ends saturate, days are counted on the wall clock of the
    key's time zone). A bound the direction never reads is not computed: one at a wall time
    a clock change skips or repeats refused the join.

    >>> keys = pd.DatetimeIndex(["2024-03-13 07:00"]).as_unit("s").tz_localize("US/Eastern")
    >>> _offset_reaches(pd.DateOffset(days=3, hours=5), keys, "forward")
    Reaches(backward=None, forward=array([277200]))
    """
    keys = pd.DatetimeIndex(left_values)
    per_tick = pd.Timedelta(1, unit=_unit(left_values)).value
    try:
        back = keys - (keys - offset) if direction != "forward" else None
        ahead = (keys + offset) - keys if direction != "backward" else None
    except offset_errors() as exc:  # out of bounds, or a wall time skipped or repeated
        msg = f"tolerance {offset!r} cannot be applied to every left key: {exc}"
        raise MergeError(msg) from None
    reaches = [None if r is None else _whole_ticks(r, per_tick) for r in (back, ahead)]
    for r in reaches:
        if r is not None and len(r) and r.min() < 0:
            raise MergeError(f"{NEGATIVE_TOLERANCE}, got {offset!r}")
    return Reaches(*reaches)


def offset_errors() -> tuple:
    """What a ``DateOffset`` applied to keys raises: out of bounds, or a wall time that
    does not exist or occurs twice; pandas 2 with a pytz zone raises pytz's own (no
    ValueError), and has imported pytz where it can."""
    pytz = sys.modules.get("pytz.exceptions")
    return (OverflowError, ValueError) + ((pytz.InvalidTimeError,) if pytz else ())


def _whole_ticks(deltas: pd.TimedeltaIndex, per_tick: int) -> np.ndarray:
    """Durations in whole ticks of ``per_tick`` nanoseconds, rounded down (a distance within
    a tolerance is within its whole ticks), without passing through nanoseconds, which
    overflow past 292 years."""
    per_unit = pd.Timedelta(1, unit=deltas.unit).value
    values = np.asarray(deltas.asi8)
    if per_tick >= per_unit:
        return values // (per_tick // per_unit)
    return values * (per_unit // per_tick)


def float_arithmetic_matters(lkey, direction: str, tolerance, xp=np) -> bool:
    """Where pandas' float arithmetic differs from asofgpu's: float32 distances, and
    ``inf - inf`` (NaN) deciding a nearest pick. ``lkey``: the left float keys, a numpy
    (``xp=np``) or cupy (``xp=cupy``) array, read only for a nearest pick on float64."""
    if lkey.dtype != np.float64:
        return direction == "nearest" or tolerance is not None
    return direction == "nearest" and bool(xp.isinf(lkey).any())


def pandas_float_pick(
    lkey, rkey, probe, direction: str, tolerance, *, xp=np, no_match=-1, dtype=np.intp
):
    """pandas' float picks: each side found without a tolerance (``probe(strategy, None)``,
    a map holding ``no_match`` where nothing matched), checked against the tolerance in the
    key's dtype, then the backward row unless the forward one is strictly closer. numpy or
    cupy (``xp``) arrays; the map comes back as ``dtype``.

    >>> rkey = np.array([1.0, 2.0, 3.0])
    >>> def probe(strategy, tol):  # the maps of left keys 1.5 and 2.75
    ...     return np.array([0, 1]) if strategy == "backward" else np.array([1, 2])
    >>> pandas_float_pick(np.array([1.5, 2.75]), rkey, probe, "nearest", None).tolist()
    [0, 2]
    >>> pandas_float_pick(np.array([1.5, 2.75]), rkey, probe, "nearest", 0.4).tolist()
    [-1, 2]
    """
    with np.errstate(over="ignore"):
        if isinstance(tolerance, pa.Array):  # one per row, NaN (never exceeded) for null
            tol = xp.asarray(tolerance.to_numpy(zero_copy_only=False), dtype=lkey.dtype)
        else:
            tol = None if tolerance is None else lkey.dtype.type(tolerance)
    none = xp.full(len(lkey), no_match, dtype=dtype)
    if not len(rkey):
        return none
    back = probe("backward", None) if direction != "forward" else none
    fwd = probe("forward", None) if direction != "backward" else none
    with np.errstate(invalid="ignore", over="ignore"):
        bdiff = lkey - rkey[xp.maximum(back, 0)]
        fdiff = rkey[xp.maximum(fwd, 0)] - lkey
        if tol is not None:
            back = xp.where(bdiff > tol, no_match, back)
            fwd = xp.where(fdiff > tol, no_match, fwd)
        pick_back = (back != no_match) & ((fwd == no_match) | (bdiff <= fdiff))
    return xp.where(pick_back, back, fwd).astype(dtype, copy=False)


# --------------------------------------------------------------------------- on the device


def plc_column(obj):
    """A cuDF Series or Index as a pylibcudf Column (no copy)."""
    col = obj.to_pylibcudf()
    return col[0] if isinstance(col, tuple) else col


def device_by_table(columns: list):
    """cuDF ``by`` columns as a pylibcudf Table whose rows compare as pandas compares the
    keys: categoricals by value, NaN as null (pandas groups NaN and None together). No
    columns: an empty table (no by-keys)."""
    import pylibcudf as plc

    return plc.Table([device_by_column(c) for c in columns])


def device_by_column(values, nan_is_null: bool = True):
    """A cuDF ``by`` column as pylibcudf compares it: categoricals by their values (libcudf
    does not sort dictionary columns), and NaN as null where ``nan_is_null`` (pandas'
    merge_asof, whose NaN by-values match each other as its nulls do)."""
    import cudf

    if isinstance(values.dtype, cudf.CategoricalDtype):
        values = values.astype(values.dtype.categories.dtype)
    if nan_is_null and values.dtype.kind == "f":
        values = values.nans_to_nulls()
    return plc_column(values)


def prepare_on_device(right_on, right_by):
    """A cuDF ``on`` key (Series or Index) and ``device_by_table``'s right table prepared
    by ``asofgpu.plc``, null by-keys matching each other (pandas' rule)."""
    import pylibcudf as plc

    from . import plc as plc_join

    return plc_join.AsofJoin(right_by, plc_column(right_on), plc.types.NullEquality.EQUAL)


def probe_on_device(prepared, left_on, left_by, strategy: str, exact: bool, tolerance):
    """The gather map (cupy int32, NO_MATCH where nothing matched) of a cuDF left key and
    ``device_by_table``'s left table, ties of a nearest pick going backward (pandas' rule)."""
    from ._device_encode import values_view

    gmap = prepared.join(
        left_by, plc_column(left_on), strategy, exact, tolerance=tolerance, nearest_tie="backward"
    )
    return values_view(gmap, np.dtype(np.int32))


# --------------------------------------------------------------------------- pandas' helpers


def _make_list(obj):
    if obj is not None and not isinstance(obj, (tuple, list)):
        return [obj]
    return obj


def _any(x) -> bool:
    return x is not None and any(v is not None for v in x)


def _values(obj):
    """What pandas calls ``obj._values``: the ndarray or ExtensionArray underneath."""
    if isinstance(obj, pd.MultiIndex):
        return obj.values
    if isinstance(obj, (pd.Index, pd.Series)):
        obj = obj.array
    # Only the plain wrapper: python-storage strings (StringArray) subclass it and stay
    # strings, as pandas' extract_array keeps them.
    if type(obj) is pd.arrays.NumpyExtensionArray:
        return obj.to_numpy()
    return obj


def _extract(obj):
    """pandas' extract_array(obj, extract_numpy=True): a RangeIndex stays as it is."""
    return obj if isinstance(obj, pd.RangeIndex) else _values(obj)


def _label_or_level_values(frame: pd.DataFrame, key):
    if is_hashable(key) and key in frame.columns:
        if key is not None and key in frame.index.names:
            msg = f"'{key}' is both an index level and a column label, which is ambiguous."
            raise ValueError(msg)
        values = frame.xs(key, axis=1)
        if isinstance(values, pd.DataFrame):
            multi = (
                "\nFor a multi-index, the label must be a tuple with elements "
                "corresponding to each level."
                if isinstance(frame.columns, pd.MultiIndex)
                else ""
            )
            raise ValueError(f"The column label '{key}' is not unique.{multi}")
        return _values(values)
    if _is_level_reference(frame, key):
        return _values(frame.index.get_level_values(key))
    raise KeyError(key)


def _is_level_reference(frame: pd.DataFrame, key) -> bool:
    return (
        key is not None
        and is_hashable(key)
        and key in frame.index.names
        and key not in frame.columns
    )


def _drop_labels_or_levels(frame: pd.DataFrame, keys) -> pd.DataFrame:
    levels = [k for k in keys if _is_level_reference(frame, k)]
    labels = [k for k in keys if not _is_level_reference(frame, k)]
    dropped = frame.copy(deep=False)
    if levels:
        dropped = dropped.reset_index(levels, drop=True)
    if labels:
        dropped = dropped.drop(labels, axis=1)
    return dropped


def _on_dtype(frame: pd.DataFrame, key):
    if isinstance(key, _KNOWN):
        return key.dtype
    if key in frame.columns:
        return _label_or_level_values(frame, key).dtype
    return frame.index.get_level_values(key)  # pandas takes the level itself here


def _check_dtype_match(left, right, i: int) -> None:
    if left.dtype != right.dtype:
        if isinstance(left.dtype, pd.CategoricalDtype) and isinstance(
            right.dtype, pd.CategoricalDtype
        ):
            msg = (
                f"incompatible merge keys [{i}] {left.dtype!r} and {right.dtype!r}, "
                f"both sides category, but not equal ones"
            )
        else:
            msg = (
                f"incompatible merge keys [{i}] {left.dtype!r} and {right.dtype!r}, "
                f"must be the same type"
            )
        raise MergeError(msg)


def _needs_i8(dtype) -> bool:
    if isinstance(dtype, np.dtype):
        return dtype.kind in "mM"
    return isinstance(dtype, (pd.PeriodDtype, pd.DatetimeTZDtype))


def _is_temporal(values) -> bool:
    """pandas: needs_i8_conversion, or an Arrow temporal type."""
    return _needs_i8(values.dtype) or (
        isinstance(values, pd.arrays.ArrowExtensionArray) and values.dtype.kind in "mM"
    )


def _arrow_timestamp_or_duration(values) -> bool:
    # pandas 3's default strings are Arrow arrays too, of a StringDtype without pyarrow_dtype.
    if not isinstance(values, pd.arrays.ArrowExtensionArray) or not isinstance(
        values.dtype, pd.ArrowDtype
    ):
        return False
    t = values.dtype.pyarrow_dtype
    return pa.types.is_timestamp(t) or pa.types.is_duration(t)


def reindex_positions(gmap) -> np.ndarray:
    """A gather map (numpy or cupy) as ``reindex`` positions on the host: -1 where it holds
    no row.

    >>> reindex_positions(np.array([2, -(2**31)], dtype=np.int32)).tolist()
    [2, -1]
    >>> reindex_positions(np.array([-(2**63), 0, 5])).tolist()
    [-1, 0, 5]
    """
    gmap = np.asarray(gmap.get() if hasattr(gmap, "get") else gmap)
    positions = gmap.astype(np.intp)  # a copy: the caller's map stays as it is
    # Rows are >= 0 and the sentinels the most negative values: two passes, not five.
    return np.maximum(positions, -1, out=positions)


def _is_identity(rmap: np.ndarray, n: int) -> bool:
    """Whether ``rmap`` is 0..n-1 (the right side as it is): its first entries settle nearly
    every case without a pass over all of them."""
    if len(rmap) != n:
        return False
    head = min(n, 1024)
    return bool((rmap[:head] == np.arange(head)).all() and (rmap == np.arange(n)).all())


def rows_of(frame: pd.DataFrame, rmap: np.ndarray) -> pd.DataFrame:
    """What ``frame.set_axis(RangeIndex).reindex(rmap)`` gives (``rmap``: rows of ``frame``,
    -1 for a row of missing values; each column's dtype as reindex makes it), column by
    column: without reindex's lookup of every position in the index (0.4 s at 10M rows);
    Arrow-backed columns by asofgpu's gather (numbers on all cores) rather than Arrow's take
    (0.15 s a float column), and numpy numbers by its take (``_numbers_of``)."""
    arrow = [k for k, dtype in enumerate(frame.dtypes) if isinstance(dtype, pd.ArrowDtype)]
    arrays = {}
    if arrow:
        table = gather(
            pa.table(
                [frame.iloc[:, k].array.__arrow_array__() for k in arrow],
                names=[str(k) for k in arrow],
            ),
            np.where(rmap < 0, np.int64(NO_MATCH_INT64), rmap.astype(np.int64, copy=False)),
        )
        arrays.update(
            (k, pd.arrays.ArrowExtensionArray(table.column(i))) for i, k in enumerate(arrow)
        )
    if walks.gathers_in_parallel(len(rmap)):
        arrays.update(
            _numbers_of(frame, [k for k in range(frame.shape[1]) if k not in arrays], rmap)
        )
    for k in range(frame.shape[1]):
        if k not in arrays:
            values = take(frame.iloc[:, k]._values, rmap, allow_fill=True)
            if isinstance(values, np.ndarray) and values.dtype == object:
                # pandas 3 would read an object array of strings as its str dtype.
                values = pd.Series(values, dtype=object, copy=False)
            arrays[k] = values
    taken = pd.DataFrame(
        {k: arrays[k] for k in range(frame.shape[1])}, index=pd.RangeIndex(len(rmap)), copy=False
    )
    taken.columns = frame.columns
    return taken


def _numbers_of(frame: pd.DataFrame, columns: list[int], rmap: np.ndarray) -> dict:
    """Of ``columns``, the numpy float32 and float64 ones, and the numpy integer ones when
    ``rmap`` holds no -1 (else pandas makes them float64), taken by ``rmap`` on all cores
    (``_backend.take_fixed``; NaN where it is -1), by position. pandas' take of the bench's
    four float columns, 10M rows: 0.16 s a call, with its check of the positions."""
    valid = rmap >= 0
    missing = None if valid.all() else np.flatnonzero(~valid)
    picked = []
    for k in columns:
        values = frame.iloc[:, k]._values
        if isinstance(values, np.ndarray) and (
            (values.dtype.kind == "f" and values.dtype.itemsize in (4, 8))
            or (values.dtype.kind in "iu" and missing is None)
        ):
            values = np.ascontiguousarray(values).view()
            values.flags.writeable = False  # as gather's columns: the same compiled take
            picked.append((k, values))
    if not picked:
        return {}
    top = int(rmap.max(initial=-1))
    if top >= len(frame):  # the take reads where it is told: never past the values
        raise IndexError(f"rows_of: position {top} is past the frame's {len(frame)} rows")
    buffers = take_fixed([values for _, values in picked], rmap, valid)
    taken = {}
    for (k, values), buffer in zip(picked, buffers):
        column = np.frombuffer(buffer, values.dtype)  # writable: the take's own memory
        if missing is not None:
            column[missing] = np.nan
        taken[k] = column
    return taken


def _unit(values) -> str:
    if isinstance(values, pd.arrays.ArrowExtensionArray):
        return values.dtype.pyarrow_dtype.unit
    if isinstance(values, np.ndarray):
        return np.datetime_data(values.dtype)[0]
    return values.unit


def require_sorted_key(key, side: str) -> None:
    """pandas' checks of an ``on`` key given as a pandas or cuDF Series or Index, and its
    messages: a key with nulls is out of order, and its nulls are named first."""
    if not key.is_monotonic_increasing:
        if bool(key.isna().any()):
            raise ValueError(f"Merge keys contain null values on {side} side")
        raise ValueError(f"{side} keys must be sorted")


def _join_values(values, side: str):
    """pandas' _convert_values_for_libjoin: checks, then the key as pandas hands it to its
    kernel, which ``_kernel_array`` checks once both sides have passed theirs."""
    if _arrow_timestamp_or_duration(values):
        # Checked on the int64 values: pandas' Index of them is a converted copy (0.05 s a
        # side at 10M rows).
        ints = values.__arrow_array__().cast(pa.int64())
        if ints.null_count:
            raise ValueError(f"Merge keys contain null values on {side} side")
        values = ints.to_numpy()
        if len(values) and not bool((values[1:] >= values[:-1]).all()):
            raise ValueError(f"{side} keys must be sorted")
        return values
    require_sorted_key(pd.Index(values, copy=False), side)
    if _needs_i8(values.dtype):
        values = np.asarray(values.view("i8"))
    elif isinstance(values, _MASKED):
        values = values.to_numpy(dtype=values.dtype.numpy_dtype)
    elif isinstance(values, ExtensionArray):
        values = values.to_numpy()
    return values


def _kernel_array(values) -> np.ndarray:
    """A converted key as a numpy array of numbers or bools, or pandas' kernel dispatch
    error."""
    if isinstance(values, pd.Index) or np.asarray(values).dtype.kind not in "biuf":
        raise TypeError("No matching signature found")
    return np.asarray(values)


def _kernel_key(values: np.ndarray) -> np.ndarray:
    return values.view(np.uint8) if values.dtype.kind == "b" else values


def _by_columns(lk, rk):
    """A by-key pair as asofgpu columns: natively when Arrow compares them as pandas does,
    else as pandas' joint factorization (all nulls one group)."""
    if lk.dtype == np.float16:  # pandas has no float16 hash table
        raise KeyError(np.float16)
    if _native_by(lk.dtype):
        return pd.Series(lk, copy=False), pd.Series(rk, copy=False)
    if isinstance(lk, np.ndarray) and isinstance(rk, np.ndarray) and lk.dtype == rk.dtype:
        # Factorized as they are: in a Series, pandas 3 reads text objects as its str type,
        # each text converted to Arrow (3 times: a side each and the two together), which
        # took 2/3 of an object by column's 0.3 s at 1M + 1M rows. The codes are the same.
        both = np.concatenate([lk, rk])
    else:
        both = pd.concat([pd.Series(lk, copy=False), pd.Series(rk, copy=False)], ignore_index=True)
    codes = pd.factorize(both)[0].astype(np.int64, copy=False)
    return codes[: len(lk)], codes[len(lk) :]


def _native_by(dtype) -> bool:
    if isinstance(dtype, np.dtype):
        return dtype.kind in "biufmM"
    if isinstance(dtype, pd.CategoricalDtype):
        return _native_by(dtype.categories.dtype)
    if isinstance(dtype, pd.ArrowDtype):  # read in place; equal exactly when pandas says so
        t = dtype.pyarrow_dtype  # (floats are not: pandas' NaN and null rules differ)
        return (
            pa.types.is_string(t)
            or pa.types.is_large_string(t)
            or pa.types.is_integer(t)
            or pa.types.is_timestamp(t)
            or pa.types.is_date(t)
            or pa.types.is_duration(t)
        )
    return isinstance(dtype, (pd.StringDtype, pd.DatetimeTZDtype) + _MASKED_DTYPES)


def _take(values, rmap):
    """pandas' take_nd with na_value_for_dtype(compat=True) as the fill."""
    values = _extract(values)
    if isinstance(values, pd.RangeIndex):
        values = values.to_numpy()
    if rmap is None:
        return values
    dtype = values.dtype
    if not isinstance(dtype, np.dtype):
        fill = dtype.na_value
    elif dtype.kind in "mM":
        fill = dtype.type("NaT", np.datetime_data(dtype)[0])
    else:
        fill = {"i": 0, "u": 0, "b": False}.get(dtype.kind, np.nan)
    if isinstance(values, np.ndarray):
        return take(values, rmap, allow_fill=True, fill_value=fill)
    return values.take(rmap, allow_fill=True, fill_value=fill)


def _common_type(a, b):
    if a == b:
        return a
    from pandas.core.dtypes.cast import find_common_type

    return find_common_type([a, b])


def _items_overlap_with_suffix(left: pd.Index, right: pd.Index, suffixes):
    if not is_list_like(suffixes, allow_sets=False) or isinstance(suffixes, dict):
        raise TypeError(
            f"Passing 'suffixes' as a {type(suffixes)}, is not supported. "
            "Provide 'suffixes' as a tuple instead."
        )
    to_rename = left.intersection(right)
    if len(to_rename) == 0:
        return left, right
    lsuffix, rsuffix = suffixes
    if not lsuffix and not rsuffix:
        raise ValueError(f"columns overlap but no suffix specified: {to_rename}")

    def renamer(suffix):
        return lambda x: f"{x}{suffix}" if x in to_rename and suffix is not None else x

    llabels = _transform_index(left, renamer(lsuffix))
    rlabels = _transform_index(right, renamer(rsuffix))
    dups = []
    if not llabels.is_unique:
        dups.extend(llabels[llabels.duplicated() & ~left.duplicated()].tolist())
    if not rlabels.is_unique:
        dups.extend(rlabels[rlabels.duplicated() & ~right.duplicated()].tolist())
    if PANDAS_3:  # pandas 2 let a suffixed name clash with a name of the other side
        dups.extend(llabels.intersection(right.difference(to_rename)).tolist())
        dups.extend(rlabels.intersection(left.difference(to_rename)).tolist())
    if dups:
        raise MergeError(
            f"Passing 'suffixes' which cause duplicate columns {set(dups)} is not allowed."
        )
    return llabels, rlabels


def _transform_index(index: pd.Index, func) -> pd.Index:
    if isinstance(index, pd.MultiIndex):
        return type(index).from_arrays(
            [index.get_level_values(i).map(func) for i in range(index.nlevels)]
        )
    if any(isinstance(x, tuple) for x in index):
        return pd.Index([func(x) for x in index], name=index.name, tupleize_cols=False)
    return index.map(func)
