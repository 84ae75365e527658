"""``merge_asof`` on Dask: pandas' as-of merge past one machine, on CPUs and GPUs.

``asofgpu.dask.merge_asof(left, right, ...)`` takes two dask DataFrames (pandas partitions, or
cuDF partitions from dask-cudf) and returns a dask DataFrame with one output partition per left
partition. Every partition is joined by asofgpu under pandas' rules
(``asofgpu._pandas_semantics``, shared with ``asofgpu.pandas`` and ``asofgpu.cudf``): pandas
partitions on ``device`` (the CPU, or the GPU when one is usable), cuDF partitions on the GPU
with the data, by-keys included, kept on the device as ``asofgpu.cudf`` keeps them. Neither
dask's nor pandas' own ``merge_asof`` is used (cuDF has none).

Three methods; ``method="auto"`` picks one:

- ``"broadcast"`` when the right side is a single partition;
- ``"time"`` when both sides are in ``on`` order across their partitions (known divisions of
  an index key, or one pass over the key columns alone);
- ``"hash"`` otherwise, when there are ``by`` keys.

The time and broadcast methods never move the left side.
"""

from __future__ import annotations

import bisect
import collections
import dataclasses
import functools
import itertools
import math
import numbers
import sys
import threading
import weakref
import warnings
from collections.abc import Hashable, Sequence
from typing import Literal

import numpy as np

try:
    import dask
    import dask.dataframe as dd
    import pandas as pd
except ModuleNotFoundError as exc:
    msg = f"asofgpu.dask needs dask and pandas ({exc}). Hint: pip install 'asofgpu[dask]'"
    raise ModuleNotFoundError(msg, name=exc.name) from None
from dask import delayed
from pandas.api.types import is_hashable
from pandas.errors import MergeError

from . import _pandas_semantics as _semantics
from . import _validate
from ._columns import is_row_tolerances
from ._types import DeviceName, PandasDirection, Tolerance

__all__ = ["METHODS", "merge_asof"]

METHODS = ("auto", "time", "hash", "broadcast")

# Columns the hash method adds for the shuffles and removes again.
_LEFT_PART = "__asofgpu_left_partition"
_LEFT_POS = "__asofgpu_left_position"
_RIGHT_PART = "__asofgpu_right_partition"
_RIGHT_POS = "__asofgpu_right_position"
_GROUP_HASH = "__asofgpu_group_hash"
_TAGS = (_LEFT_PART, _LEFT_POS)
_RESERVED = frozenset((_LEFT_PART, _LEFT_POS, _RIGHT_PART, _RIGHT_POS, _GROUP_HASH))

# searchsorted sides of a key interval's (lower, upper) ends.
_CLOSED = ("left", "right")  # [lower, upper]
_HALF_OPEN = ("left", "left")  # [lower, upper)
_OPEN_CLOSED = ("right", "right")  # (lower, upper]


def merge_asof(
    left: dd.DataFrame | dd.Series,
    right: dd.DataFrame | dd.Series,
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
    method: Literal["auto", "broadcast", "time", "hash"] = "auto",
    device: DeviceName = "auto",
    strategy: str | None = None,
) -> dd.DataFrame:
    """Perform a merge by key distance on dask DataFrames, as ``pandas.merge_asof`` does.

    For each left row, take the right row (of the same ``by`` group) whose ``on`` key is the
    closest in the ``direction``: "backward" the last row whose key is less than or equal to
    the left key, "forward" the first row whose key is greater than or equal to it, "nearest"
    the closer of the two (the backward one on a tie). The result equals
    ``pandas.merge_asof`` on the concatenated partitions.

    Parameters
    ----------
    left, right : dask DataFrame or named dask Series
        Partitions of pandas frames, or of cuDF frames (dask-cudf: the join runs on the GPU).
    on, left_on, right_on, left_index, right_index, by, left_by, right_by, suffixes, \
tolerance, allow_exact_matches, direction
        As in ``pandas.merge_asof``. Keys must be column labels, not arrays, or the index
        of both sides (``left_index`` and ``right_index`` together). ``tolerance`` may
        also be a ``pandas.DateOffset`` on pandas partitions, as ``asofgpu.pandas`` takes
        it (not a column of tolerances: its rows cannot follow the partitions).
    method : {"auto", "time", "hash", "broadcast"}
        How the right rows reach the left partitions (below). "auto" takes "broadcast" for a
        one-partition right side, "time" when both sides are in ``on`` order across their
        partitions, else "hash" (which needs ``by``). A categorical ``on`` key goes by
        "broadcast", or "hash" with ``by`` on column keys: the join compares its values,
        pandas' order its categories', so "time" refuses it.
    device : {"auto", "cpu", "cuda", "python"}
        Where pandas partitions are joined ("auto": a usable GPU, else the CPU). cuDF
        partitions are always joined on the GPU.
    strategy
        The old name of ``method`` (deprecated: polars and asofgpu name the direction so).

    Returns
    -------
    dask DataFrame
        One partition per left partition, in left row order. Each partition is what pandas
        returns for it: a fresh RangeIndex per partition, or, when both keys are the index,
        the left's index (and the left's divisions).

    Raises
    ------
    ValueError
        For an unknown ``method``, for keys that are not column labels, for an index key
        on one side only, for ``"hash"`` without ``by`` or with index keys, and with
        pandas' messages for keys out of order ("left keys must be sorted") or null keys.
        Every error ``pandas.merge_asof`` raises for the arguments is raised here, with its
        type and message, before anything runs.

    Notes
    -----
    What each method moves over the network (P left partitions, W workers, G groups):

    - **time**: the left side does not move. Each right partition is sliced where it lies,
      and each slice goes to the one left partition whose key interval it serves (at most
      all of the right side; rows equal to a boundary key go to both neighbours). Per left
      partition, a carry of at most one right row per group (the last before its interval,
      for backward and nearest; the first after it, for forward and nearest) comes from a
      per-group max/min folded over the partitions in key order, so a group whose last
      quote lies many partitions back is still found; a ``tolerance`` drops carry rows that
      no later left row can reach (a ``DateOffset``'s reach from the interval's first key,
      less a day: calendar arithmetic keeps key order except on a zone's repeated hour).
      Without known divisions, the key columns alone are read once beforehand for each
      partition's first and last key.
    - **broadcast**: the left side does not move. The right side is gathered into one
      partition, sorted once by ``on`` and copied once to every worker (W times its size);
      each worker prepares it once (``AsofJoin``, kept in a small per-process cache) and
      probes it with each of its left partitions, which may be in any order.
    - **hash**: both sides are shuffled on the ``by`` keys (all of both sides crosses the
      network once), joined per partition, and the output is shuffled back to the left's
      partitions and row order (all of the output once more). Inputs may be in any order;
      equal right keys keep their input order.

    Inputs out of ``on`` order (broadcast, hash) are joined as pandas joins them after a
    stable sort by ``on``. Int and bool columns from the right side are float64 and pandas'
    nullable "boolean" in every partition (pandas makes them float64 and object only when
    some row is unmatched, which a lazy result cannot know, and dask reads object columns as
    strings); on cuDF partitions they keep their dtype, with nulls. The time method
    folds the carries in a chain (depth P); each step holds at most G rows.

    Categorical columns whose categories dask does not know (``astype("category")``,
    ``read_parquet``'s dictionary columns) are read once at the call to learn them
    (``cat.as_known()``): pandas joins whole frames, comparing their categories in ``by``
    and keeping them in the output, and no single partition holds them.

    Examples
    --------
    >>> import dask, dask.dataframe as dd, pandas as pd
    >>> from asofgpu.dask import merge_asof
    >>> quotes = dd.from_pandas(pd.DataFrame({
    ...     "time": [1, 2, 5, 6, 9, 12], "ticker": ["A", "B", "A", "B", "A", "B"],
    ...     "bid": [10.0, 20.0, 10.5, 20.5, 11.0, 21.0]}), npartitions=3)
    >>> trades = dd.from_pandas(pd.DataFrame({
    ...     "time": [2, 6, 7, 10, 12], "ticker": ["A", "A", "B", "B", "C"],
    ...     "qty": [100, 200, 300, 400, 500]}), npartitions=2)
    >>> out = merge_asof(trades, quotes, on="time", by="ticker", device="cpu")
    >>> out.npartitions
    2
    >>> with dask.config.set(scheduler="synchronous"):
    ...     out.compute()
       time ticker  qty   bid
    0     2      A  100  10.0
    1     6      A  200  10.5
    2     7      B  300  20.5
    0    10      B  400  20.5
    1    12      C  500   NaN
    >>> with dask.config.set(scheduler="synchronous"):
    ...     merge_asof(trades, quotes, on="time", by="ticker", direction="forward",
    ...                tolerance=3, method="hash", device="cpu").compute()["bid"].tolist()
    [10.5, 11.0, nan, 21.0, nan]
    """
    if strategy is not None:
        warnings.warn(
            "asofgpu.dask.merge_asof's strategy= is now method= (polars and asofgpu "
            "name the direction strategy); the old name will be removed in asofgpu "
            "0.3",
            DeprecationWarning,
            stacklevel=2,
        )
        if not (isinstance(method, str) and method == "auto"):
            msg = (
                "pass method= alone (strategy= is its old name), "
                f"got method={method!r} and strategy={strategy!r}"
            )
            raise TypeError(msg)
        method = _validate.one_of(strategy, "strategy", METHODS)
    method = _validate.one_of(method, "method", METHODS)
    device = _validate.device(device)
    left, right = _as_frame(left, "left"), _as_frame(right, "right")
    _check_tolerance_form(tolerance, left)
    _require_labels(
        on=on, left_on=left_on, right_on=right_on, by=by, left_by=left_by, right_by=right_by
    )
    left, right = _known_categories(left), _known_categories(right)
    keywords = dict(
        on=on,
        left_on=left_on,
        right_on=right_on,
        left_index=left_index,
        right_index=right_index,
        by=by,
        left_by=left_by,
        right_by=right_by,
        suffixes=suffixes,
        tolerance=tolerance,
        allow_exact_matches=allow_exact_matches,
        direction=direction,
    )
    spec, meta = _plan(_pandas_meta(left), _pandas_meta(right), keywords, device)
    if isinstance(tolerance, pd.offsets.BaseOffset) and _moves_back(tolerance):
        # after pandas' checks, as asofgpu.pandas refuses it: at the keys' reaches
        raise MergeError(f"{_semantics.NEGATIVE_TOLERANCE}, got {tolerance!r}")
    if _is_cudf(left._meta):
        import cudf

        meta = cudf.from_pandas(meta)  # cuDF columns hold nulls: no upcasts
    else:
        meta = _upcast(meta, spec.upcasts)
    method, spans = _choose(method, left, right, spec)
    if method == "broadcast":
        parts = _broadcast(left, right, spec)
    elif method == "time":
        parts = _time_partitioned(left, right, spec, *spans)
    else:
        return _hash_partitioned(left, right, spec, meta)
    divisions = left.divisions if spec.keeps_left_index else None
    return dd.from_delayed(parts, meta=meta, divisions=divisions, verify_meta=False)


# --------------------------------------------------------------------------- the plan


@dataclasses.dataclass(frozen=True)
class _Spec:
    """What every partition's join needs, fixed once on the client."""

    merge: dict  # pandas' keywords, as given
    left_key: object  # the left ``on`` column label; None: the index
    right_key: object
    left_by: tuple
    right_by: tuple
    direction: str
    exact: bool
    tolerance: object  # validated, in the key's type; None when absent (or NaN)
    device: str
    any_order: bool  # partitions may be out of ``on`` order (broadcast, hash)
    upcasts: tuple  # (position, dtype) of right int/bool columns, cast in every partition
    n_left: int  # output columns that come from the left
    columns: tuple  # output column labels (the cuDF path names its result with them)
    right_columns: tuple  # right columns kept in the output
    keeps_left_index: bool  # both keys are the index: the output keeps the left's


def _plan(lmeta: pd.DataFrame, rmeta: pd.DataFrame, keywords: dict, device: str):
    """Validate the call as pandas does (on the empty metas, so every pandas error comes
    before anything runs) and fix the per-partition plan. Returns the spec and the output
    meta as pandas builds it (``spec.upcasts`` holds the upcasts of pandas partitions)."""
    direction, exact = _semantics.check_join_options(
        keywords["direction"], keywords["allow_exact_matches"]
    )
    op = _operation(lmeta, rmeta, keywords)
    meta = op.result(op.right_indexer(direction, exact, "python"))
    if bool(keywords["left_index"]) != bool(keywords["right_index"]):
        # pandas fills the key column of such a join with the left's or the right's keys
        # depending on whether any row anywhere is unmatched: no partition can know that.
        msg = (
            "left_index and right_index must be given together in asofgpu.dask (an index "
            "key on one side and a key column on the other is not supported)"
        )
        raise ValueError(msg)
    left_key = None if keywords["left_index"] else _column(op.left_on[-1], lmeta, "left_on")
    right_key = None if keywords["right_index"] else _column(op.right_on[-1], rmeta, "right_on")
    left_by = tuple(_column(c, lmeta, "left_by") for c in op.left_by or ())
    right_by = tuple(_column(c, rmeta, "right_by") for c in op.right_by or ())
    n_left = len(op.left.columns)
    # pandas makes unmatched int columns float64 and bool columns object; dask would take
    # an object column for strings (its convert-string option), so bools become "boolean".
    # By position: suffixes may give a right column a left one's label, as pandas allows.
    upcasts = tuple(
        (at, np.dtype(np.float64) if dtype.kind in "iu" else pd.BooleanDtype())
        for at, dtype in enumerate(meta.dtypes)
        if at >= n_left and isinstance(dtype, np.dtype) and dtype.kind in "iub"
    )
    spec = _Spec(
        merge=keywords,
        left_key=left_key,
        right_key=right_key,
        left_by=left_by,
        right_by=right_by,
        direction=keywords["direction"],
        exact=bool(keywords["allow_exact_matches"]),
        tolerance=_key_tolerance(keywords["tolerance"], lmeta, left_key),
        device=device,
        any_order=False,
        upcasts=upcasts,
        n_left=n_left,
        columns=tuple(meta.columns),
        right_columns=tuple(op.right.columns),
        keeps_left_index=bool(keywords["left_index"]),
    )
    return spec, meta


def _operation(left, right, keywords: dict, cache_key=None):
    """pandas' merge of two pandas frames (``AsofMerge``), with the right side's ``AsofJoin``
    taken from this process's cache when ``cache_key`` names one."""
    k = keywords
    return _SharedRight(
        cache_key,
        left,
        right,
        k["on"],
        k["left_on"],
        k["right_on"],
        k["left_index"],
        k["right_index"],
        k["by"],
        k["left_by"],
        k["right_by"],
        k["suffixes"],
        k["tolerance"],
    )


def _require_labels(**keys) -> None:
    """Keys must be labels: each partition is joined by name, so arrays cannot be split."""
    for param, value in keys.items():
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if not is_hashable(item):
                msg = (
                    f"{param} must be column labels in asofgpu.dask, got a "
                    f"{type(item).__name__} (arrays are not supported; left_index and "
                    f"right_index join on the index)"
                )
                raise ValueError(msg)


def _column(label, meta: pd.DataFrame, param: str):
    """A key must be a column (pandas also takes index level names)."""
    if label in meta.columns:
        return label
    msg = (
        f"{param} must name a column of {param.split('_')[0]} in asofgpu.dask (index "
        f"levels are not supported; left_index and right_index join on the index), "
        f"got {label!r}"
    )
    raise ValueError(msg)


def _check_tolerance_form(tolerance, left) -> None:
    """What asofgpu.pandas takes beyond pandas' tolerances, as far as partitions allow: a
    ``DateOffset`` on pandas partitions (each partition's keys measure their own reaches); a
    column of tolerances, one per left row, cannot follow the partitions."""
    if is_row_tolerances(tolerance):
        msg = (
            "tolerance: a column of tolerances cannot follow asofgpu.dask's partitions; pass "
            "a number, a Timedelta or a DateOffset (or join each partition with "
            "asofgpu.pandas.merge_asof)"
        )
        raise ValueError(msg)
    if isinstance(tolerance, pd.offsets.BaseOffset) and _is_cudf(left._meta):
        msg = (
            f"tolerance {tolerance!r}: a DateOffset is taken on pandas partitions only; "
            f"cuDF partitions take a number or a Timedelta"
        )
        raise TypeError(msg)


_OFFSET_UNITS = {"years", "months", "weeks", "days", "hours", "minutes", "seconds"}
_OFFSET_UNITS |= {"milliseconds", "microseconds", "nanoseconds", "offset"}


def _moves_back(offset) -> bool:
    """Whether a DateOffset moves every date back, so that asofgpu.pandas refuses it on any
    data: its count and all its relative units of one sign, negative. One of mixed signs
    (months=1, days=-30) or of absolute fields (weekday=0) depends on the date: each
    partition's keys are checked as they are joined.

    >>> _moves_back(pd.DateOffset(months=-1)), _moves_back(pd.DateOffset(months=1, days=-30))
    (True, False)
    """
    kwds = offset.kwds
    if set(kwds) - _OFFSET_UNITS:
        return False
    values = [v.total_seconds() if hasattr(v, "total_seconds") else v for v in kwds.values()]
    signs = {np.sign(v) for v in values if v} or {1}
    return len(signs) == 1 and bool(offset.n * signs.pop() < 0)


def _key_tolerance(tolerance, lmeta, left_key):
    """The validated tolerance in the key's own type, for pruning carries and for the cuDF
    path; None when there is none (or it is NaN, which pandas never applies)."""
    if tolerance is None:
        return None
    dtype = lmeta.index.dtype if left_key is None else lmeta[left_key].dtype
    if isinstance(tolerance, pd.offsets.BaseOffset):
        return tolerance
    if dtype.kind in "mM":
        return pd.Timedelta(tolerance)
    if dtype.kind == "f" and tolerance != tolerance:
        return None
    return tolerance


def _known_categories(frame):
    """``frame`` with its categorical columns of categories dask does not know
    (``astype("category")``, or ``read_parquet``'s dictionary columns) made known: each
    partition held only its own categories, which pandas' merge refused as unequal by keys
    where the whole frames' are equal, and which other columns lost in the methods' concats
    and shuffles (strings in the output, or dask's concat refusing categories of two dtypes).
    pandas joins whole frames, whose categories every partition then holds: the whole
    frame's as computing it gives them (``_categories_in_order``)."""
    unknown = [
        label
        for label, dtype in frame._meta.dtypes.items()
        if isinstance(dtype, pd.CategoricalDtype) and not frame[label].cat.known
    ]
    if not unknown:
        return frame
    frame = frame.copy()
    if _is_cudf(frame._meta):
        # cuDF's as dask learns them, with its task-based shuffle: under a distributed client
        # its p2p shuffle put the meta's placeholder category among them.
        with dask.config.set({"dataframe.shuffle.method": "tasks"}):
            for label in unknown:
                frame[label] = frame[label].cat.as_known()
        return frame
    learned = dask.compute(*[_categories_in_order(frame[label]) for label in unknown])
    for label, categories in zip(unknown, learned):
        frame[label] = frame[label].cat.set_categories(categories)
    return frame


def _categories_in_order(column):
    """The categories of ``column`` (a dask categorical Series) in the order its computed
    whole has them: each partition's own, in partition order, each new one after those
    before it, as pandas' union of categoricals puts the partitions together. (dask's
    ``cat.as_known`` gave them in the order of its shuffle's hashes, and under a distributed
    client with its meta's placeholder among them.)"""

    def together(per_partition):
        return pd.Index(per_partition[0]).append(list(per_partition[1:])).unique()

    parts = [delayed(lambda part: part.cat.categories)(part) for part in column.to_delayed()]
    return delayed(together)(parts)


def _as_frame(obj, side: str):
    if isinstance(obj, dd.Series):
        _semantics.validate_operand(_pandas_meta(obj))  # pandas' error for an unnamed Series
        return obj.to_frame()
    if isinstance(obj, dd.DataFrame):
        return obj
    msg = (
        f"{side} must be a dask DataFrame or a named dask Series "
        f"(dask.dataframe.from_pandas converts a pandas one), got {_validate.type_name(obj)}"
    )
    raise TypeError(msg)


def _pandas_meta(collection):
    meta = collection._meta
    return meta.to_pandas() if _is_cudf(meta) else meta


def _is_cudf(obj) -> bool:
    return type(obj).__module__.split(".")[0] == "cudf"


def _choose(method: str, left, right, spec: _Spec):
    """The method to run and, for "time", each side's key spans."""
    if method == "hash":
        _require_hashable_plan(spec)
        return method, None
    if method == "broadcast" or (method == "auto" and right.npartitions == 1):
        return "broadcast", None
    if _categorical_on(left, spec.left_key) or _categorical_on(right, spec.right_key):
        # The join compares a categorical key's values, pandas' order check its categories'
        # order: partitions in one order are not in the other's, and the time method's spans
        # would cut the right side where it has no rows (every match lost).
        hashable = spec.left_by and spec.left_key is not None  # (hash joins on columns)
        if method == "time":
            msg = (
                "method='time' cannot split a categorical on key across partitions (the join "
                "compares its values, pandas' order its categories'): use method='broadcast'"
                + (" or 'hash'" if hashable else "")
            )
            raise ValueError(msg)
        return ("hash" if hashable else "broadcast"), None
    (lspans, left_ok), (rspans, right_ok) = _key_spans(left, spec.left_key, right, spec.right_key)
    if left_ok and right_ok:
        return "time", (lspans, rspans)
    hashable = method == "auto" and spec.left_by and spec.left_key is not None
    # pandas' order: the left key's nulls, then its order, then the right key's.
    for side, spans, ok in (("left", lspans, left_ok), ("right", rspans, right_ok)):
        if _NULLS in spans:
            raise ValueError(f"Merge keys contain null values on {side} side")
        if not ok and not hashable:
            _refuse_out_of_order(side, spec)
    return "hash", None  # index keys are both or neither


def _categorical_on(frame, key) -> bool:
    """Whether ``frame``'s on key (a column, or the index where ``key`` is None) is
    categorical."""
    meta = frame._meta
    dtype = meta.index.dtype if key is None else meta[key].dtype
    return getattr(dtype, "name", None) == "category"  # pandas' and cuDF's alike


def _refuse_out_of_order(side: str, spec: _Spec):
    remedy = (
        "method='broadcast'"  # the hash method joins on columns only
        if spec.left_key is None
        else "method='hash' or method='broadcast'"
        if spec.left_by
        else "by= (method='hash') or method='broadcast'"
    )
    msg = (
        f"{side} keys must be sorted (across partitions too): with inputs out of order, "
        f"asofgpu.dask needs {remedy}"
    )
    raise ValueError(msg)


def _require_hashable_plan(spec: _Spec) -> None:
    if not spec.left_by:
        msg = (
            "method='hash' partitions both sides on the by keys: pass by (or left_by "
            "and right_by), or use method='time' or 'broadcast'"
        )
        raise ValueError(msg)
    if spec.left_key is None or spec.right_key is None:
        msg = (
            "method='hash' joins on columns: with left_index and right_index use "
            "method='time' or 'broadcast'"
        )
        raise ValueError(msg)


# --------------------------------------------------------------------------- key spans


def _key_spans(left, left_key, right, right_key):
    """Each partition's (first, last) key, None when empty, and whether the side is in key
    order across its partitions. Known divisions of an index key are used as they are where
    they ascend; otherwise one pass reads the key columns alone (both sides in one compute)."""
    sides = [(left, left_key, "left"), (right, right_key, "right")]
    known = [
        _division_spans(frame) if key is None and frame.known_divisions else None
        for frame, key, _ in sides
    ]
    tasks = [
        [delayed(_partition_span)(p) for p in _key_collection(frame, key)]
        for (frame, key, side), spans in zip(sides, known, strict=True)
        if spans is None
    ]
    computed = iter(dask.compute(*tasks)) if tasks else iter(())
    return [(spans, True) if spans is not None else _in_order(next(computed)) for spans in known]


def _key_collection(frame, key):
    return _partitions(frame.index if key is None else frame[key])


def _partitions(collection) -> list:
    """A collection's partitions as delayed objects, cut as its ``npartitions`` and
    ``divisions`` say. dask's optimizer fuses a parquet reader's partitions when it reads
    few of the columns (a key column alone: 4 files became 2 partitions, a frame of all its
    columns stayed 4), which paired one side's key spans with other partitions: an error,
    or, one side fused, left rows joined against the wrong right rows, silently. The
    projections are still pushed into the reader (``simplify``); the fusion is not run."""
    return collection.simplify().to_delayed(optimize_graph=False)


def _division_spans(frame) -> list | None:
    """Closed spans from known divisions: wider than the keys inside, which is enough. None
    where they break dask's own rule (ascending, the last two may be equal): dask keeps
    divisions "known" for partitions picked out of order or twice (``frame.partitions[[2, 0,
    1]]``: (5, 1, 3, 5); ``[[0, 1, 1]]``: (1, 3, 3, 5), whose first span is narrower than its
    keys), and trusted they joined silently wrong rows; the keys' pass then finds the side
    out of order."""
    d = frame.divisions
    if not (all(a < b for a, b in zip(d[:-2], d[1:-1])) and d[-2] <= d[-1]):
        return None
    return [(d[i], d[i + 1]) for i in range(len(d) - 1)]


_NULLS = "nulls"  # a partition span's mark: the key holds nulls


def _partition_span(key):
    """(first, last) of a partition's key, None when empty; False when out of order,
    ``_NULLS`` when it holds nulls (which side to blame first is pandas' order, decided
    once every partition is read, not by which task fails first)."""
    if len(key) == 0:
        return None
    if not key.is_monotonic_increasing:
        return _NULLS if bool(key.isna().any()) else False
    return _at(key, 0), _at(key, len(key) - 1)


def _in_order(spans) -> tuple[list, bool]:
    spans = list(spans)
    if any(s is False or s is _NULLS for s in spans):
        return spans, False
    last = [s[1] for s in spans if s is not None]
    first = [s[0] for s in spans if s is not None]
    return spans, all(a <= b for a, b in zip(last[:-1], first[1:], strict=True))


def _at(key, i: int):
    return key.iloc[i] if hasattr(key, "iloc") else key[i]


# --------------------------------------------------------------------------- time method


def _time_partitioned(left, right, spec: _Spec, lspans: list, rspans: list) -> list:
    """Left partition i (keys in [a_i, b_i]) joins with the right rows whose keys lie in
    [a_i, b_i], plus per group the last right row before a_i (carry-in) and the first
    after b_i (carry-out). Both carries are folds over disjoint key blocks, so each right
    row is summarised once:

    - block k of the carry-in: [a_k, a_k+1) (block -1: below a_0), and
      carry_in_i = the last row per group of blocks -1 .. i-1;
    - block k of the carry-out: (b_k-1, b_k] (block m: above b_m-1), and
      carry_out_i = the first row per group of blocks i+1 .. m.
    """
    live = [i for i, span in enumerate(lspans) if span is not None]
    starts = [lspans[i][0] for i in live]
    ends = [lspans[i][1] for i in live]
    m = len(live)
    empty = right._meta
    pieces = [[] for _ in range(m)]
    before = [[] for _ in range(m + 1)]  # before[k + 1]: block k of the carry-in
    after = [[] for _ in range(m + 1)]  # after[k]: block k of the carry-out
    need_before = spec.direction != "forward"
    need_after = spec.direction != "backward"
    for rpart, span in zip(_partitions(right), rspans, strict=True):
        if span is None:
            continue
        lo, hi = span
        piece_ids = range(bisect.bisect_left(ends, lo), bisect.bisect_right(starts, hi))
        before_ids = (
            range(bisect.bisect_right(starts, lo), bisect.bisect_right(starts, hi) + 1)
            if need_before
            else ()
        )
        after_ids = (
            range(bisect.bisect_left(ends, lo), bisect.bisect_left(ends, hi) + 1)
            if need_after
            else ()
        )
        split = delayed(_split_right)(
            rpart,
            spec,
            [(starts[e], ends[e]) for e in piece_ids],
            [_bound(starts, b - 1) + _bound(starts, b) for b in before_ids],
            [_bound(ends, k - 1) + _bound(ends, k) for k in after_ids],
        )
        # One output list: a getitem task per slice, run where the right partition lies.
        n = itertools.count()
        for e in piece_ids:
            pieces[e].append(split[next(n)])
        for b in before_ids:
            before[b].append(split[next(n)])
        for k in after_ids:
            after[k].append(split[next(n)])
    carry_in, carry_out = [None] * m, [None] * m
    if need_before:
        state = None
        for e in range(m):
            state = delayed(_carry_in)(
                state, before[e], empty, spec, _shift(starts[e], spec.tolerance, -1)
            )
            carry_in[e] = state
    if need_after:
        state = None
        for e in reversed(range(m)):
            state = delayed(_carry_out)(
                after[e + 1], state, empty, spec, _shift(ends[e], spec.tolerance, +1)
            )
            carry_out[e] = state
    slot = {i: e for e, i in enumerate(live)}
    return [
        delayed(_join_time)(
            lpart, carry_in[slot[i]], pieces[slot[i]], carry_out[slot[i]], empty, spec
        )
        if i in slot
        else delayed(_join_partition)(lpart, empty, spec)
        for i, lpart in enumerate(_partitions(left))
    ]


def _bound(cuts: list, k: int) -> tuple:
    """(cuts[k],), or (None,) past either end: an unbounded side of a block."""
    return (cuts[k] if 0 <= k < len(cuts) else None,)


_SLACK = pd.Timedelta(days=1)


def _shift(bound, tolerance, sign: int):
    """bound -/+ tolerance: how far back (ahead) a carry row can still be reached; None when
    there is no tolerance or the bound would leave the key's range (nothing is pruned)."""
    if tolerance is None:
        return None
    if isinstance(tolerance, pd.offsets.BaseOffset):
        # Calendar arithmetic keeps key order except on a time zone's repeated hour, where
        # a later key can reach back up to that hour less far: a day of slack covers it.
        try:
            stamp = pd.Timestamp(bound)
            return stamp - tolerance - _SLACK if sign < 0 else stamp + tolerance + _SLACK
        except (*_semantics.offset_errors(), TypeError):  # (the partition's join says why)
            return None
    if isinstance(bound, (np.integer, int)) and not isinstance(bound, (bool, np.bool_)):
        info = np.iinfo(bound.dtype if isinstance(bound, np.integer) else np.int64)
        shifted = int(bound) + sign * int(tolerance)
        return shifted if info.min <= shifted <= info.max else None
    if isinstance(bound, (float, np.floating)):
        # pandas tests the rounded difference of the keys against the tolerance, which the
        # rounded bound - tolerance may miss by an ulp (1.6 - 1.0 > 0.6, 1.6 - 0.6 <= 1.0):
        # the bound moves out by far more than float32's rounding, keeping a row or so more.
        bound, tolerance = float(bound), float(tolerance)
        shifted = bound + sign * tolerance
        if not math.isfinite(shifted):
            return None
        return shifted + sign * 2**-20 * (abs(bound) + abs(tolerance))
    try:
        return bound + sign * tolerance
    except (OverflowError, ValueError):  # a timestamp pushed out of its range
        return None


def _split_right(part, spec: _Spec, pieces: list, before: list, after: list) -> list:
    """One right partition, cut where it lies: the rows of each left span it overlaps, then
    the per-group summaries of each carry block it overlaps, in one list."""
    key = _key(part, spec.right_key)
    _semantics.require_sorted_key(key, "right")
    by = spec.right_by
    return (
        [part.iloc[_rows(key, a, b, _CLOSED)] for a, b in pieces]
        + [_per_group(part.iloc[_rows(key, lo, hi, _HALF_OPEN)], by, "last") for lo, hi in before]
        + [_per_group(part.iloc[_rows(key, lo, hi, _OPEN_CLOSED)], by, "first") for lo, hi in after]
    )


def _carry_in(state, blocks: list, empty, spec: _Spec, reach):
    """One step of the prefix fold: the last right row per group so far (blocks come in key
    order, so concatenation keeps the rows sorted and "last" is the largest (key, row));
    rows before ``reach`` are out of tolerance for every later left row."""
    frame = _per_group(_concat([state, *blocks], empty), spec.right_by, "last")
    if reach is None:
        return frame
    return frame.iloc[_count(_key(frame, spec.right_key) < reach) :]


def _carry_out(blocks: list, state, empty, spec: _Spec, reach):
    """One step of the suffix fold: the first right row per group from here on; rows past
    ``reach`` are out of tolerance for every earlier left row."""
    frame = _per_group(_concat([*blocks, state], empty), spec.right_by, "first")
    if reach is None:
        return frame
    return frame.iloc[: _count(_key(frame, spec.right_key) <= reach)]


def _count(below) -> int:
    """The rows of a sorted key on one side of a reach, counted by comparing (a search
    would need the reach in the key's unit: 2.5 s back from a key of whole seconds is
    not one)."""
    return int(below.sum())


def _join_time(left, carry_in, pieces: list, carry_out, empty, spec: _Spec):
    """[carry-in, pieces, carry-out] is already in key order: carry-in keys lie below the
    span, carry-out keys above it, so no sort is needed."""
    right = _concat([carry_in, *pieces, carry_out], empty)
    return _join_partition(left, right, spec)


def _per_group(frame, by: tuple, keep: str):
    """The last (first) row of each group; nulls form one group, as in pandas' ``by``."""
    if by:
        return frame.drop_duplicates(subset=list(by), keep=keep)
    return frame.iloc[-1:] if keep == "last" else frame.iloc[:1]


def _rows(key, lower, upper, sides: tuple) -> slice:
    """The positions of a sorted key between two bounds (None: unbounded)."""
    start = 0 if lower is None else _searchsorted(key, lower, sides[0])
    stop = len(key) if upper is None else _searchsorted(key, upper, sides[1])
    return slice(start, max(start, stop))


def _searchsorted(key, value, side: str) -> int:
    pos = key.searchsorted(value, side=side)
    return int(pos[0]) if getattr(pos, "ndim", 0) else int(pos)


def _concat(frames: list, empty):
    frames = [f for f in frames if f is not None and len(f)]
    if not frames:
        return empty
    if len(frames) == 1:
        return frames[0]
    return sys.modules[type(frames[0]).__module__.split(".")[0]].concat(frames)


# --------------------------------------------------------------------------- broadcast


def _broadcast(left, right, spec: _Spec) -> list:
    """The whole right side, sorted once, goes to every left partition's task; each worker
    prepares it once (the cache key names this graph's right side)."""
    whole = delayed(_sorted_right)(right.repartition(npartitions=1).to_delayed()[0], spec)
    cache_key = f"asofgpu-prepared-{whole.key}"  # not a graph key: dask passes it as text
    spec = dataclasses.replace(spec, any_order=True)
    return [delayed(_join_partition)(lpart, whole, spec, cache_key) for lpart in _partitions(left)]


def _sorted_right(part, spec: _Spec):
    if _is_cudf(part):  # AsofJoin on the GPU takes any order
        return part
    if bool(_key(part, spec.right_key).isna().any()):
        return _RIGHT_NULLS  # refused by each left partition's task, after its own key's nulls
    return _sort_partition(part, spec.right_key, "right")[0]


_RIGHT_NULLS = "asofgpu: the right key holds nulls"  # (pandas blames the left's nulls first)


class _PreparedCache:
    """Right sides prepared (an ``AsofJoin``, or ``asofgpu.plc``'s for cuDF partitions), kept
    per process (so once per worker) for the broadcast method; the few most recent, since
    each holds a sorted copy of a right side (on the GPU, device memory).

    An entry serves the very frame it was prepared from: a graph's key names how the right
    side is made (a reader and a path), not its rows, and computing the collection again
    after its file changed must not probe the old keys. Within one computation every task
    of a worker is handed the same frame."""

    def __init__(self, size: int):
        self._size = size
        self._entries = collections.OrderedDict()  # key -> (weak reference to source, value)
        self._lock = threading.Lock()

    def get(self, key, source, build):
        # Built under the lock: a worker's threads wait for one preparation, not race to many.
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry[0]() is source:
                self._entries.move_to_end(key)
                return entry[1]
            value = build()
            self._entries[key] = (weakref.ref(source), value)
            self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)
            return value


_PREPARED = _PreparedCache(size=4)


class _SharedRight(_semantics.AsofMerge):
    """pandas' merge whose ``AsofJoin`` comes from the process cache."""

    def __init__(self, cache_key, left, right, *args):
        super().__init__(left, right, *args)
        self._cache_key = cache_key
        self._source = right  # the frame this task was handed: what a cache entry must match

    def prepare(self, right_key, right_by, device):
        # by keys pandas cannot hash natively are codes factorized jointly with this left
        # partition: no other partition can share them.
        if self._cache_key is None or any(isinstance(c, np.ndarray) for c in right_by or ()):
            return super().prepare(right_key, right_by, device)
        return _PREPARED.get(
            (self._cache_key, device),
            self._source,
            lambda: super(_SharedRight, self).prepare(right_key, right_by, device, reused=True),
        )


# --------------------------------------------------------------------------- hash method


def _hash_partitioned(left, right, spec: _Spec, meta):
    """Shuffle both sides on a hash of the by keys (computed here, so both sides agree
    whatever their column names), join per partition, shuffle back by left partition."""
    reserved = [c for c in (*left.columns, *right.columns) if c in _RESERVED]
    if reserved:
        msg = (
            f"the hash method tags the rows with columns of its own, and a column is named "
            f"{reserved[0]!r}, as one of them: rename it, or use method='broadcast'"
        )
        raise ValueError(msg)
    n = max(left.npartitions, right.npartitions)
    joined_meta = _positional(_with_tags(meta, spec.n_left))
    # The left's two tags join its columns: the right's upcasts sit two places later.
    later = tuple((at + len(_TAGS), dtype) for at, dtype in spec.upcasts)
    spec = dataclasses.replace(spec, any_order=True, upcasts=later)
    tagged = [
        _tagged(frame, by, names)
        for frame, by, names in (
            (left, spec.left_by, (_LEFT_PART, _LEFT_POS)),
            (right, spec.right_by, (_RIGHT_PART, _RIGHT_POS)),
        )
    ]
    # distributed's p2p shuffle gives categories of text back as `str`, not the meta's (and
    # pandas') `string`: frames with categorical columns take the task-based shuffle.
    method = "tasks" if any(_has_categoricals(t._meta) for t in tagged) else None
    lparts, rparts = (
        t.shuffle(on=_GROUP_HASH, npartitions=n, shuffle_method=method).to_delayed() for t in tagged
    )
    joined = dd.from_delayed(
        [delayed(_join_hash)(lp, rp, spec) for lp, rp in zip(lparts, rparts, strict=True)],
        meta=joined_meta,
        verify_meta=False,
    )
    p = left.npartitions
    back = joined.set_index(_LEFT_PART, divisions=tuple(range(p)) + (p - 1,), shuffle_method=method)
    restore = functools.partial(_restore_order, columns=list(meta.columns))
    return back.map_partitions(restore, meta=meta).clear_divisions()


def _has_categoricals(meta) -> bool:
    return any(isinstance(dtype, pd.CategoricalDtype) for dtype in meta.dtypes)


def _tagged(frame, by: tuple, names: tuple):
    parts = [delayed(_tag)(part, i, by, names) for i, part in enumerate(_partitions(frame))]
    return dd.from_delayed(parts, meta=_tag(frame._meta, 0, by, names), verify_meta=False)


def _tag(part, number: int, by: tuple, names: tuple):
    """Each row's partition and position (the order to restore, or the tie-break among equal
    right keys) and its group's hash."""
    return part.assign(
        **{
            names[0]: np.int64(number),
            names[1]: np.arange(len(part), dtype=np.int64),
            _GROUP_HASH: _group_hash(part, by),
        }
    )


def _group_hash(part, by: tuple):
    if _is_cudf(part):
        return part[list(by)].hash_values()
    h = np.zeros(len(part), dtype=np.uint64)
    for column in by:
        values = part[column]
        # hash_pandas_object hashes objects by their text: numbers of other types made one
        # (all-text partitions skip the pass; kept object, where Series.map makes an
        # all-number partition float64, hashed otherwise, and pandas 2.2's fails on an int
        # past float's range)
        if values.dtype == object and pd.api.types.infer_dtype(values) not in _TEXT:
            canonical = _CANONICAL(values.to_numpy(dtype=object))
            values = pd.Series(canonical, index=values.index, dtype=object)
        column_hash = pd.util.hash_pandas_object(values, index=False).to_numpy()
        # None, NaN and NA are one group in pandas' by: give them one hash.
        column_hash = np.where(values.isna().to_numpy(), np.uint64(0), column_hash)
        h = h * np.uint64(1_000_003) ^ column_hash
    return h


_TEXT = ("string", "bytes", "empty")


def _canonical_number(value):
    """An object column's number as the float it equals, so that values pandas' ``by``
    takes as equal (1, 1.0, True, numpy's True, Decimal("1"), -0.0 and 0.0) hash alike; one
    past float's range as the text of the int it equals, where whole; anything else as it
    is. (Unequal values sharing a form only share a hash partition, where the join compares
    them exactly.)

    >>> [_canonical_number(v) for v in (1, True, np.True_, -0.0, 2.5, "1", None)]
    [1.0, 1.0, 1.0, 0.0, 2.5, '1', None]
    >>> from decimal import Decimal
    >>> _canonical_number(Decimal(10**400)) == _canonical_number(10**400) == str(10**400)
    True
    """
    if isinstance(value, np.bool_):  # (not a numbers.Number)
        value = bool(value)
    if not isinstance(value, numbers.Number):  # (numpy's numbers, Decimal, Fraction are)
        return value
    try:
        number = complex(value)
    except (OverflowError, TypeError, ValueError):
        number = None
    if number is not None and number.imag == 0:
        # (a Decimal past float's range comes out as inf; an infinite one equals it)
        if math.isfinite(number.real) or value == number.real:
            return number.real + 0.0
    try:
        whole = int(value)
    except (OverflowError, TypeError, ValueError):
        return value
    # (as text, which the hash reads anyway: pandas 2.2's hash turns such an int to float)
    return str(whole) if whole == value else value


_CANONICAL = np.frompyfunc(_canonical_number, 1, 1)  # an object array in, one out


def _with_tags(meta, at: int):
    meta = meta.copy()
    meta.insert(at, _LEFT_PART, np.zeros(0, dtype=np.int64))
    meta.insert(at + 1, _LEFT_POS, np.zeros(0, dtype=np.int64))
    return meta


def _join_hash(left, right, spec: _Spec):
    """One hash partition: complete groups of both sides, in shuffle order. Equal right keys
    are ordered by their input position, as pandas would see them after a stable sort."""
    right = right.sort_values([spec.right_key, _RIGHT_PART, _RIGHT_POS])
    right = right.drop(columns=[_RIGHT_PART, _RIGHT_POS, _GROUP_HASH])
    return _positional(_join_partition(left.drop(columns=[_GROUP_HASH]), right, spec))


def _positional(frame):
    """``frame`` with its columns but the tags named by position: the shuffle back cannot
    move a frame of repeated labels, which pandas' suffixes allow."""
    frame = frame.copy(deep=False)
    frame.columns = [
        c if c in _TAGS else f"__asofgpu_column_{i}" for i, c in enumerate(frame.columns)
    ]
    return frame


def _restore_order(part, columns: list):
    part = part.sort_values(_LEFT_POS).drop(columns=[_LEFT_POS]).reset_index(drop=True)
    part.columns = columns
    return part


# --------------------------------------------------------------------------- one partition


def _join_partition(left, right, spec: _Spec, cache_key=None):
    """One left partition joined with the right rows that can serve it, on its backend."""
    if isinstance(right, str) and right == _RIGHT_NULLS:  # pandas blames the left first
        side = "left" if bool(_key(left, spec.left_key).isna().any()) else "right"
        raise ValueError(f"Merge keys contain null values on {side} side")
    if _is_cudf(left):
        return _join_cudf(left, right, spec, cache_key)
    order = None
    if spec.any_order:
        left, order = _sort_partition(left, spec.left_key, "left")
    op = _operation(left, right, spec.merge, cache_key)
    out = op.result(op.right_indexer(spec.direction, spec.exact, spec.device))
    if order is not None:  # back to the partition's own row order
        out = out.iloc[np.argsort(order, kind="stable")]
        if not spec.keeps_left_index:
            out = out.reset_index(drop=True)
    return _upcast(out, spec.upcasts)


def _upcast(frame: pd.DataFrame, upcasts: tuple) -> pd.DataFrame:
    """The right side's int and bool columns as float64 and "boolean" (``_Spec.upcasts``)."""
    if upcasts:
        frame = frame.copy(deep=False)
        for at, dtype in upcasts:
            frame.isetitem(at, frame.iloc[:, at].astype(dtype))
    return frame


def _sort_partition(part, key_label, side: str):
    """The partition stably sorted by its key, and the order taken (None: already sorted)."""
    key = _key(part, key_label)
    if key.is_monotonic_increasing:
        return part, None
    if bool(key.isna().any()):
        raise ValueError(f"Merge keys contain null values on {side} side")
    order = np.asarray(key.argsort(kind="stable"))
    return part.iloc[order], order


def _key(frame, label):
    return frame.index if label is None else frame[label]


def _join_cudf(left, right, spec: _Spec, cache_key=None):
    """One cuDF partition: the gather map computed on the GPU with the device join that
    ``asofgpu.cudf`` uses (by-keys encoded there, as pandas compares them), and cuDF builds
    the result from it, so the data never leaves the device. Unsorted partitions need no sort
    (the join takes any order); equal right keys keep their row order, as in pandas. Unlike
    ``asofgpu.cudf``, bool ``on`` keys are refused and float keys take asofgpu's exact
    distances, not pandas' float arithmetic."""
    import cudf

    lkey, rkey = _key(left, spec.left_key), _key(right, spec.right_key)
    for key, side in ((lkey, "left"), (rkey, "right")):
        if spec.any_order:
            if bool(key.isna().any()):
                raise ValueError(f"Merge keys contain null values on {side} side")
        else:
            _semantics.require_sorted_key(key, side)

    def prepare():
        right_by = _semantics.device_by_table([right[c] for c in spec.right_by])
        return _semantics.prepare_on_device(rkey, right_by)

    prepared = _PREPARED.get((cache_key, "cuda"), right, prepare) if cache_key else prepare()
    tolerance = spec.tolerance
    if isinstance(tolerance, pd.Timedelta):
        tolerance = tolerance.to_timedelta64()  # exact to the nanosecond
    left_by = _semantics.device_by_table([left[c] for c in spec.left_by])
    gmap = _semantics.probe_on_device(
        prepared, lkey, left_by, spec.direction, spec.exact, tolerance
    )
    # NO_MATCH is no row label: reindex leaves those rows null.
    taken = right[list(spec.right_columns)].reset_index(drop=True).reindex(cudf.Index(gmap))
    left_part = left.reset_index(drop=True)
    left_part.columns = list(spec.columns[: spec.n_left])
    taken = taken.reset_index(drop=True)
    taken.columns = list(spec.columns[spec.n_left :])
    out = cudf.concat([left_part, taken], axis=1)
    if spec.keeps_left_index:
        out.index = left.index
    return out
