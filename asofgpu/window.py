"""The window join (kdb+'s ``wj``): every right row of a left row's group whose key lies in a
window around the left row's key, as ranges of a prepared right side, reduced or expanded.

``AsofJoin.windows`` finds each left row's window: the right rows of its group with key in
``[x - before, x + after]``, both ends inclusive (with ``prevailing``, also the last right row
below ``x - before``, the state on entering the window). A window is a range
``[starts[i], ends[i])`` of positions in the prepared order (by group, then key, then input
order); ``rows`` gives the right row at each position. ``Windows`` then reduces a payload
column over every window (``count``, ``sum``, ``mean``; ``pick`` for first, last, min and max,
as gather maps) or lists the (left row, right row) pairs (``pairs``, the range join).

>>> import numpy as np
>>> from asofgpu import AsofJoin
>>> quotes = AsofJoin(np.array([1, 2, 4, 7]), device="cpu")
>>> w = quotes.windows(np.array([4, 0]), before=2)
>>> w.starts.tolist(), w.ends.tolist()
([1, 0], [3, 0])
>>> w.sum(np.array([10.0, 20.0, 30.0, 40.0]))[0].tolist()
[50.0, 0.0]
>>> [m.tolist() for m in w.pairs()]
[[0, 0, 1], [1, 2, -2147483648]]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from . import _arrow_numpy as arrow_numpy
from ._backend import Backend
from .gather import gather
from .kernels.window import PICKS

#: The aggregations, in the order their columns appear when several are asked of a column.
AGGREGATIONS = ("count", "sum", "mean", "min", "max", "first", "last")


class Windows:
    """Each left row's window in a prepared right side (``AsofJoin.windows`` makes it).

    ``starts`` and ``ends`` (int64, on the join's device): window ``i`` is the positions
    ``[starts[i], ends[i])`` of the prepared order; ``rows`` (the join's map dtype): the right
    row at each position, so ``rows[starts[i]:ends[i]]`` are window i's right rows in key order
    (then input order). Payload arguments are aligned with the right rows (numpy, cupy on a
    GPU); ``valid`` (bool, optional) says which of them are not null.
    """

    def __init__(self, backend: Backend, starts, ends, rows, no_match: int) -> None:
        self.backend = backend
        self.starts = starts
        self.ends = ends
        self.rows = rows
        self.no_match = no_match

    def __len__(self) -> int:
        return len(self.starts)

    def lengths(self):
        """The number of right rows in each window."""
        return self.ends - self.starts

    def count(self, valid=None):
        """Per window, its right rows whose ``valid`` entry is True (all of them without
        ``valid``), as int64: a prefix sum over the prepared order, exact."""
        if valid is None:
            return self.lengths()
        xp = self.backend.xp
        valid = self._payload(valid, "valid", np.bool_)
        before = xp.zeros(len(self.rows) + 1, dtype=np.int64)
        xp.cumsum(valid[self.rows], out=before[1:])
        return before[self.ends] - before[self.starts]

    def sum(self, values, valid=None):
        """Per window, ``(sums, counts)``: its valid values summed in window order (0 where
        there is none) and counted. Integers sum as int64 (unsigned ones as uint64), wrapping
        as numpy's do; floats as float64; booleans count their True values."""
        values = self._payload(values, "values")
        kind = values.dtype.kind
        if kind not in "biuf":
            msg = f"values must be integers, floats or booleans, got {values.dtype}"
            raise TypeError(msg)
        accumulator = {"b": np.int64, "i": np.int64, "u": np.uint64, "f": np.float64}[kind]
        return self._sums(values.astype(accumulator, copy=False), valid)

    def mean(self, values, valid=None):
        """Per window, ``(means, counts)``: the mean of its valid values (float64, summed in
        window order; NaN where there is none) and their count."""
        values = self._payload(values, "values")
        if values.dtype.kind not in "biuf":
            msg = f"values must be integers, floats or booleans, got {values.dtype}"
            raise TypeError(msg)
        sums, counts = self._sums(values.astype(np.float64, copy=False), valid)
        xp = self.backend.xp
        with np.errstate(invalid="ignore", divide="ignore"):
            return sums / xp.where(counts > 0, counts, 0), counts

    def pick(self, how: str, values=None, valid=None):
        """Per window, the right row of its first or last valid value (``how="first"`` /
        ``"last"``, in window order), or of its smallest or largest (``"min"`` / ``"max"``:
        the first of equal ones, in asofgpu's total order, NaN above +inf), as a gather map
        with the join's ``NO_MATCH`` where the window holds no valid value. ``values`` is
        needed by min and max only."""
        if how not in PICKS:
            msg = f"how must be one of {sorted(PICKS)}, got {how!r}"
            raise ValueError(msg)
        op = PICKS[how]
        xp = self.backend.xp
        if values is None:
            if how in ("min", "max"):
                msg = f"pick({how!r}) needs values"
                raise TypeError(msg)
            values = xp.zeros(0, dtype=np.int64)
        else:
            values = _comparable(self._payload(values, "values"))
        valid = self._valid(valid)
        out = self.backend.empty(len(self), np.int64)
        is_float = values.dtype.kind == "f"
        self.backend.window_picks(
            is_float, self.starts, self.ends, self.rows, values, valid, op, out
        )
        found = out >= 0
        return xp.where(found, self.rows[xp.where(found, out, 0)], self.no_match).astype(
            self.rows.dtype, copy=False
        )

    def pairs(self):
        """The range join's two gather maps: one entry per (left row, right row of its
        window), in left order then window order, and each left row with an empty window
        once, beside ``NO_MATCH``."""
        xp = self.backend.xp
        n = len(self)
        lengths = self.lengths()
        sizes = xp.maximum(lengths, 1)
        total = int(sizes.sum()) if n else 0
        left_dtype = np.int32 if n < 2**31 else np.int64
        firsts = xp.zeros(n, dtype=np.int64)  # each left row's first entry
        if n:
            xp.cumsum(sizes[:-1], out=firsts[1:])
        left = _repeat(xp, xp.arange(n, dtype=left_dtype), sizes, firsts, total)
        step = xp.arange(total, dtype=np.int64) - firsts[left]
        positions = self.starts[left] + step
        empty = lengths[left] == 0
        right = xp.where(empty, self.no_match, self.rows[xp.where(empty, 0, positions)])
        return left, right.astype(self.rows.dtype, copy=False)

    # ---- helpers
    def _payload(self, values, param: str, dtype=None):
        values = self.backend.asarray(values)
        if dtype is not None:
            values = values.astype(dtype, copy=False)
        if values.ndim != 1 or len(values) < _right_rows(self.rows, self.starts, self.ends):
            msg = f"{param} must be one value per right row, got shape {values.shape}"
            raise ValueError(msg)
        return values

    def _valid(self, valid):
        if valid is None:
            return self.backend.xp.zeros(0, dtype=np.bool_)  # empty: no nulls
        return self._payload(valid, "valid", np.bool_)

    def _sums(self, values, valid):
        xp = self.backend.xp
        sums = xp.zeros(len(self), dtype=values.dtype)
        counts = self.backend.empty(len(self), np.int64)
        self.backend.window_sums(
            self.starts, self.ends, self.rows, values, self._valid(valid), sums, counts
        )
        return sums, counts


def _right_rows(rows, starts, ends) -> int:
    """The fewest values a payload may hold: one past the largest right row in any window."""
    return int(rows.max()) + 1 if len(rows) and len(starts) and bool((ends > starts).any()) else 0


def _comparable(values):
    """Values in a type the pick kernel is compiled for: float64, int64 or uint64 (booleans as
    uint64, temporal types as their int64 ticks)."""
    kind = values.dtype.kind
    if kind in "mM":
        return values.view(np.int64)
    if kind not in "biuf":
        msg = f"values must be numbers, booleans or temporal, got {values.dtype}"
        raise TypeError(msg)
    target = {"b": np.uint64, "i": np.int64, "u": np.uint64, "f": np.float64}[kind]
    return values.astype(target, copy=False)


def _repeat(xp, values, sizes, firsts, total: int):
    """``numpy.repeat(values, sizes)``; cupy's repeat takes no array of sizes, so on a GPU
    each entry finds its row among ``firsts`` (the running sums of ``sizes``)."""
    if xp is np:
        return np.repeat(values, sizes)
    entries = xp.arange(total, dtype=np.int64)
    return values[xp.searchsorted(firsts, entries, side="right") - 1]


# --------------------------------------------------------------------------- whole columns


@dataclass(frozen=True)
class Aggregation:
    """One output column of a window join: ``agg`` of the right column ``column``."""

    column: str
    agg: str

    @property
    def name(self) -> str:
        return f"{self.column}_{self.agg}"


def aggregations(aggs, columns: list[str], type_of) -> list[Aggregation]:
    """``aggs`` (a dict: right column -> an aggregation or a list of them) checked against
    the right side's ``columns`` and their Arrow types (``type_of(name)``), before any
    work."""
    if not isinstance(aggs, dict) or not aggs:
        msg = (
            f"aggs must be a non-empty dict of right column -> aggregation(s), such as "
            f'{{"bid": ["max", "mean"]}}, got {aggs!r}'
        )
        raise TypeError(msg)
    out = []
    for column, wanted in aggs.items():
        if not isinstance(column, str) or column not in columns:
            msg = (
                f"aggs names {column!r}, which is not a column of the right side; its "
                f"columns are {list(columns)}"
            )
            raise KeyError(msg)
        names = [wanted] if isinstance(wanted, str) else wanted
        if not isinstance(names, (list, tuple)) or not names:
            msg = f"aggs[{column!r}] must be an aggregation or a non-empty list of them, got {wanted!r}"
            raise TypeError(msg)
        kind = type_of(column)
        for agg in names:
            if agg not in AGGREGATIONS:
                msg = f"aggs[{column!r}]: unknown aggregation {agg!r}; use one of {list(AGGREGATIONS)}"
                raise ValueError(msg)
            why = _refusal(agg, kind)
            if why:
                msg = f"aggs[{column!r}]: {agg!r} {why}, and {column!r} is {kind}"
                raise TypeError(msg)
            if Aggregation(column, agg) in out:
                msg = f"aggs[{column!r}] asks for {agg!r} twice"
                raise ValueError(msg)
            out.append(Aggregation(column, agg))
    return out


def _numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)


def _ordered(t: pa.DataType) -> bool:
    return _numeric(t) or pa.types.is_temporal(t)


def _refusal(agg: str, t: pa.DataType) -> str | None:
    if pa.types.is_dictionary(t):
        t = t.value_type
    if agg in ("sum", "mean") and not _numeric(t):
        return "applies to integer, float and boolean columns"
    if agg in ("min", "max") and not _ordered(t):
        return "applies to integer, float, boolean and temporal columns"
    return None


def picks(agg: Aggregation) -> bool:
    """Whether ``agg`` chooses a right row (min, max, first, last), whose value is then
    gathered, rather than computing a new value."""
    return agg.agg in PICKS


def picked(windows: Windows, column: pa.ChunkedArray, agg: Aggregation):
    """The gather map of a choosing aggregation (``picks``): per window, the right row whose
    value of ``column`` it takes, ``NO_MATCH`` where there is no valid value."""
    valid = arrow_numpy.valid(column) if column.null_count else None
    values = _values(column) if agg.agg in ("min", "max") else None
    return windows.backend.to_host(windows.pick(agg.agg, values, valid))


def reduced(windows: Windows, column: pa.ChunkedArray, agg: Aggregation) -> pa.Array:
    """count (int64), sum (int64; uint64 for unsigned columns, float64 for floats) or mean
    (float64) of ``column`` over each window, null where the window holds no value."""
    be = windows.backend
    valid = arrow_numpy.valid(column) if column.null_count else None
    if agg.agg == "count":
        return pa.array(be.to_host(windows.count(valid)), pa.int64())
    result, counts = (windows.sum if agg.agg == "sum" else windows.mean)(_values(column), valid)
    return arrow_numpy.array(be.to_host(result), None, be.to_host(counts) > 0)


def aggregate(windows: Windows, right: pa.Table, wanted: list[Aggregation]) -> list[pa.Array]:
    """The window join's columns: each ``Aggregation`` of ``right``'s columns over
    ``windows``, as Arrow arrays of one entry per left row; min, max, first and last keep the
    column's type. Nulls are skipped; a window without a value gives null (count: 0)."""
    out = []
    for agg in wanted:
        column = right.column(agg.column)
        if picks(agg):
            gmap = picked(windows, column, agg)
            out.append(arrow_numpy.combined(gather(pa.table({"c": column}), gmap).column(0)))
        else:
            out.append(reduced(windows, column, agg))
    return out


def _values(column: pa.ChunkedArray) -> np.ndarray:
    """A numeric, boolean or temporal column's values as numpy (temporal ones as their
    integers; the slots of nulls as they lie, never read); dictionary columns decoded."""
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    return arrow_numpy.values(column)
