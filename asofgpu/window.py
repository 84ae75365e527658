"""The window join (kdb+'s ``wj``): every right row of a left row's group whose key lies in a
window around the left row's key, as ranges of a prepared right side, reduced or expanded.

``AsofJoin.windows`` finds each left row's window: the right rows of its group with key in
``[x - before, x + after]``, both ends inclusive (with ``prevailing``, also the state on
entering the window: the last right row below ``x - before``, unless a key lies exactly
there). A window is a range
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
import pyarrow.compute as pc

from . import _arrow_numpy as arrow_numpy
from . import _validate
from ._backend import Backend, get_backend, take_fixed, walks
from ._columns import device_array, canonical_floats, to_arrow
from ._gather import gather
from .kernels.window import Reduced

PICKS = ("first", "last", "min", "max")  # the reductions that choose a right row

#: The aggregations a window join computes (``Windows.reduce`` makes each).
AGGREGATIONS = ("count", "sum", "mean", "min", "max", "first", "last")


class Windows:
    """Each left row's window in a prepared right side (``AsofJoin.windows`` makes it).

    ``starts`` and ``ends`` (int64, on the join's device): window ``i`` is the positions
    ``[starts[i], ends[i])`` of the prepared order; ``rows`` (the join's map dtype): the right
    row at each position, so ``rows[starts[i]:ends[i]]`` are window i's right rows in key order
    (then input order). Payload arguments are aligned with the right rows (numpy, cupy on a
    GPU); ``valid`` (bool, optional) says which of them are not null. The arrays are not to be
    changed: the reductions keep what they share between columns (the cpu's slide order).
    """

    def __init__(
        self, backend: Backend | str, starts, ends, rows, no_match: int, n_right: int
    ) -> None:
        if isinstance(backend, str):  # a backend's name, as ``device=`` takes it
            backend = get_backend(_validate.one_of(backend, "backend", _validate.DEVICES))
        elif not isinstance(backend, Backend):
            msg = f"backend must be a Backend or one of {list(_validate.DEVICES)}, got {backend!r}"
            raise TypeError(msg)
        self.backend = backend
        self.starts = starts
        self.ends = ends
        self.rows = rows
        self.no_match = no_match
        self.n_right = n_right  # payloads hold one value per right row
        # What the backend's reductions of every column over these windows share (the
        # cpu's slide keeps the windows in the order of their starts there).
        self._shared: dict = {}

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
        """Per window, ``(sums, counts)``: its valid values summed (0 where there is none)
        and counted. Integers sum as int64 (unsigned ones as uint64), wrapping as numpy's
        do; floats as float64, adding the window's own values only (in window order, or, for
        windows slid through, as a suffix sum plus a running sum); booleans count their True
        values."""
        found = self.reduce(("sum", "count"), values, valid)
        return found["sum"], found["count"]

    def mean(self, values, valid=None):
        """Per window, ``(means, counts)``: the mean of its valid values (float64, summed as
        ``sum`` sums them; NaN where there is none) and their count."""
        found = self.reduce(("mean", "count"), values, valid)
        return found["mean"], found["count"]

    def pick(self, how: str, values=None, valid=None):
        """Per window, the right row of its first or last valid value (``how="first"`` /
        ``"last"``, in window order), or of its smallest or largest (``"min"`` / ``"max"``:
        the first of equal ones, in asofgpu's total order, NaN above +inf), as a gather map
        with the join's ``NO_MATCH`` where the window holds no valid value. ``values`` is
        needed by min and max only."""
        if not isinstance(how, str) or how not in PICKS:
            msg = f"how must be one of {list(PICKS)}, got {how!r}"
            raise ValueError(msg)
        return self.reduce((how,), values, valid)[how]

    def reduce(self, wanted, values=None, valid=None, *, extreme_values: bool = False) -> dict:
        """Several reductions of one payload column, in one pass over the windows: a dict
        from each of ``wanted`` (of ``AGGREGATIONS``) to what ``count``, ``sum`` (its sums),
        ``mean`` (its means) and ``pick`` give. ``values`` may be omitted for count, first
        and last.

        With ``extreme_values``, min and max give the smallest and largest values themselves,
        under ``"min_value"`` and ``"max_value"`` instead (of the values' type; where a window
        holds no valid value, anything: its count says so), when the values are their own
        order keys (int64, and float64 without NaN): a window join then needs no gather of
        the rows the maps name."""
        if isinstance(wanted, str) or not isinstance(wanted, (list, tuple, set, frozenset)):
            msg = f"wanted must be a list of reductions such as ['sum', 'count'], got {wanted!r}"
            raise TypeError(msg)
        wanted = tuple(wanted)
        for how in wanted:
            if not isinstance(how, str) or how not in AGGREGATIONS:
                msg = f"wanted must hold reductions among {list(AGGREGATIONS)}, got {how!r}"
                raise ValueError(msg)
        extreme_values = _validate.flag(extreme_values, "extreme_values")
        values, valid = _arrow_payload(values, valid, sums=bool(set(wanted) & _SUMS))
        xp, n = self.backend.xp, len(self)
        nothing = xp.zeros(0, dtype=np.int64)
        numbers = keys = nothing
        temporal = False
        if values is None:
            if set(wanted) & NEED_VALUES:
                msg = f"{sorted(set(wanted) & NEED_VALUES)} need values"
                raise TypeError(msg)
            if set(wanted) == {"count"}:
                return {"count": self.count(valid)}
        else:
            # cupy holds no temporal type: instants and durations travel as their int64
            # ticks, which are also their order keys (_order_keys), on every backend.
            values, dtype = self._typed(values)
            _checked(dtype, set(wanted) & _SUMS)
            temporal = dtype.kind in "mM"
            values = self._payload(values, "values")
            if set(wanted) & _SUMS:
                numbers = _summable(values)
            if set(wanted) & {"min", "max"}:
                keys = _order_keys(values, xp)
        found = {}
        if "mean" in wanted and numbers.dtype != np.float64:
            # A mean sums as float64 (an integer sum could wrap): a pass of its own.
            found["mean"] = self.reduce(("mean",), numbers.astype(np.float64), valid)["mean"]
            wanted = tuple(w for w in wanted if w != "mean")
            if "sum" not in wanted:
                numbers = nothing
        # The extremes' values are the keys' when the keys are the values (_order_keys).
        # (Not for temporal values: their extremes come as rows, of their own type.)
        as_values = (
            {"min", "max"} & set(wanted)
            if extreme_values and keys is values and not temporal
            else set()
        )
        rows, (numbers, keys, valid) = self._read_order(numbers, keys, self._valid(valid))
        positions = {
            how: self.backend.empty(n if how in wanted and how not in as_values else 0, np.int64)
            for how in PICKS
        }
        extremes = [
            self.backend.empty(n if how in as_values else 0, keys.dtype) for how in _EXTREMES
        ]
        sums = xp.zeros(n, dtype=numbers.dtype)
        out = Reduced(*positions.values(), *extremes, sums, self.backend.empty(n, np.int64))
        self.backend.window_reduce(
            self.starts, self.ends, rows, numbers, keys, valid, out, self._shared
        )
        for how, found_values in zip(_EXTREMES, extremes):
            if how in as_values:
                found[f"{how}_value"] = found_values
        for how in wanted:
            if how in PICKS and how not in as_values:
                found[how] = self._rows_at(positions[how])
        if "count" in wanted:
            found["count"] = out.counts
        if "sum" in wanted:
            found["sum"] = out.sums
        if "mean" in wanted:
            with np.errstate(invalid="ignore", divide="ignore"):
                found["mean"] = out.sums / out.counts
        return found

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
        positions = xp.where(lengths[left] == 0, -1, self.starts[left] + step)
        return left, self._rows_at(positions)

    # ---- helpers
    def _rows_at(self, positions):
        """The right row at each position (-1: ``NO_MATCH``), as a gather map; on the host
        on all cores (numpy's fancy index took 12 ms for 1M windows)."""
        xp = self.backend.xp
        found = positions >= 0
        if not len(self.rows):  # no right rows: every position is -1
            return xp.full(len(positions), self.no_match, dtype=self.rows.dtype)
        rows = _taken(self.rows, positions, xp, found)
        return xp.where(found, rows, self.no_match).astype(self.rows.dtype, copy=False)

    def _typed(self, values):
        """(``values`` as an array of numbers, temporal ones as their int64 ticks; the dtype
        that says their kind): device arrays (any with ``__cuda_array_interface__``) through
        the backend (a temporal one on the GPU read as ticks by ``device_array``: cupy holds
        no temporal type, and 14.0.0 refuses one in an interface), anything else through
        numpy."""
        if hasattr(values, "__cuda_array_interface__"):
            dtype = np.dtype(values.__cuda_array_interface__["typestr"])
            if dtype.kind in "mM" and self.backend.xp is not np:
                return device_array(values)  # (its ticks, and the dtype read above)
            values = self.backend.asarray(values)
        else:
            values = np.asarray(values)
        return (values.view(np.int64) if values.dtype.kind in "mM" else values), values.dtype

    def _payload(self, values, param: str, dtype=None):
        values = self.backend.asarray(values)
        if dtype == np.bool_ and values.dtype != np.bool_:
            msg = f"{param} must be booleans, got {values.dtype}"  # "False" would be true
            raise TypeError(msg)
        if dtype is not None:
            values = values.astype(dtype, copy=False)
        if values.shape != (self.n_right,):
            msg = (
                f"{param} must be one value per right row ({self.n_right}), got shape "
                f"{values.shape}"
            )
            raise ValueError(msg)
        return values

    def _valid(self, valid):
        if valid is None:
            return self.backend.xp.zeros(0, dtype=np.bool_)  # empty: no nulls
        return self._payload(valid, "valid", np.bool_)

    def _read_order(self, *arrays):
        """(rows, arrays) as the reduction kernel reads them. When the windows hold as many
        positions as a quarter of the prepared rows or more, the (non-empty) arrays are put
        in the prepared order first (one gather each, on all cores on the host), so that
        each window reads its values end to end, and ``rows`` goes empty; otherwise each
        value is read through ``rows``."""
        xp = self.backend.xp
        if not len(self.rows) or 4 * int(self.lengths().sum()) < len(self.rows):
            return self.rows, arrays
        arranged = {}  # one gather for an array passed twice (float sums and extremes)
        for a in arrays:
            if len(a) and id(a) not in arranged:
                arranged[id(a)] = _taken(a, self.rows, xp)
        return xp.zeros(0, dtype=self.rows.dtype), tuple(arranged.get(id(a), a) for a in arrays)


def _taken(values, at, xp, where=None):
    """``values[at]``, where ``where`` (None: everywhere) is True, an unspecified value
    elsewhere (``at`` is not read there); on the host on all cores (a 10M-row column: 0.12 s
    in numpy)."""
    if xp is not np or not walks.gathers_in_parallel(len(at)):
        return values[at if where is None else xp.where(where, at, 0)]
    if where is None:
        where = np.ones(len(at), dtype=np.bool_)
    (buffer,) = take_fixed([np.ascontiguousarray(values)], at, where)
    return np.frombuffer(buffer, values.dtype, len(at))


#: The reductions that choose the smallest and the largest value, as ``Reduced`` keeps them.
_EXTREMES = ("min", "max")
#: The reductions that read values, and those that sum them.
#: The reductions that read a column's values; count, first and last read its nulls alone.
NEED_VALUES = {"sum", "mean", "min", "max"}


def reads_values(hows) -> bool:
    """Whether aggregations ``hows`` (one, or a list) read a column's values; count, first
    and last read its nulls alone (``nulls_alone``).

    >>> reads_values(["count", "last"]), reads_values("sum")
    (False, True)
    """
    return bool(set([hows] if isinstance(hows, str) else hows) & NEED_VALUES)


def nulls_alone(null: np.ndarray) -> pa.ChunkedArray:
    """A stand-in for a column Arrow cannot hold (polars' Int128, pandas' complex) where
    only its nulls are read (``null``: where it is null): booleans of the same nulls."""
    return pa.chunked_array([pa.array(~null, mask=null)])


_SUMS = {"sum", "mean"}


def _checked(dtype: np.dtype, sums: bool) -> None:
    """Refuses values of a type the reductions do not apply to: they take numbers and
    booleans, and temporal values where nothing is summed."""
    if dtype.kind not in "biuf" and (sums or dtype.kind not in "mM"):
        what = "numbers or booleans" if sums else "numbers, booleans or temporal"
        msg = f"values must be {what}, got {dtype}"
        raise TypeError(msg)


def _summable(values):
    """Values in the type they sum in: float64, int64 or uint64 (booleans as int64)."""
    target = {"b": np.int64, "i": np.int64, "u": np.uint64, "f": np.float64}[values.dtype.kind]
    return values.astype(target, copy=False)


_LOW_63 = np.int64(0x7FFF_FFFF_FFFF_FFFF)


def _order_keys(values, xp):
    """Keys in the order of ``values`` (asofgpu's total order) that the kernel compares with
    a plain ``<``: float64 values without NaN as they are (``<`` takes -0.0 as 0.0), other
    floats as int64 images of their bits (every NaN as one, above +inf; the bits below the
    sign flipped for negative numbers, which makes larger magnitudes smaller); integers and
    temporal ticks as int64 (unsigned ones shifted by 2**63)."""
    kind = values.dtype.kind
    if kind in "mM":
        return values.view(np.int64)
    if kind == "u":
        return (values.astype(np.uint64) ^ np.uint64(2**63)).view(np.int64)
    if kind != "f":
        return values.astype(np.int64, copy=False)
    floats = values.astype(np.float64, copy=False)
    # The largest value is NaN when any is: one read, no mask (10M values: 4 ms, 11 ms and a
    # fresh 10 MB for isnan().any()).
    with np.errstate(invalid="ignore"):
        if not len(floats) or not bool(xp.isnan(floats.max())):
            return floats
    bits = canonical_floats(floats, xp).view(np.int64)
    return bits ^ ((bits >> 63) & _LOW_63)


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
        if column not in columns:  # a name, or a pandas frame's label (0)
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


def name_clash(wanted: list[Aggregation], left_names) -> str | None:
    """The message for the first aggregate column whose name a left column has, or None:
    each front end raises it as its library would (ValueError, polars' DuplicateError)."""
    for agg in wanted:
        if agg.name in left_names:
            return (
                f"the aggregate column {agg.name!r} clashes with a left column of that name. "
                f"Hint: rename the left column or the right column {agg.column!r}."
            )
    return None


def check_reaches_given(before, after) -> None:
    """A window needs both reaches: ``None`` for either is refused by name."""
    for reach, param in ((before, "before"), (after, "after")):
        if reach is None:
            msg = f"{param} is required: how far from each left key the window reaches"
            raise TypeError(msg)


def _numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)


def _ordered(t: pa.DataType) -> bool:
    return _numeric(t) or pa.types.is_temporal(t)


def _refusal(agg: str, t: pa.DataType) -> str | None:
    if pa.types.is_run_end_encoded(t):  # aggregated as its values (``_run_ends_decoded``)
        t = t.value_type  # (pyarrow decodes no run-end encoded dictionary: refused later)
    if pa.types.is_dictionary(t) and t.ordered:  # ranked by position: min and max only
        if agg in ("sum", "mean"):
            return "applies to numbers, not to an ordered dictionary's categories"
        return None
    if pa.types.is_dictionary(t):
        t = t.value_type
    if agg in ("sum", "mean") and not _numeric(t):
        return "applies to integer, float and boolean columns"
    if agg in ("min", "max") and not _ordered(t):
        return "applies to integer, float, boolean and temporal columns"
    return None


def by_column(wanted: list[Aggregation]) -> dict[str, list[str]]:
    """The aggregations of each column, columns in order of first mention."""
    out: dict[str, list[str]] = {}
    for agg in wanted:
        out.setdefault(agg.column, []).append(agg.agg)
    return out


def reduce_column(
    windows: Windows, column: pa.ChunkedArray, wanted: list[str], *, extreme_values: bool = False
) -> dict:
    """The aggregations ``wanted`` of one right column over every window, in one pass: for
    count, sum (int64; uint64 for unsigned columns, float64 for floats) and mean (float64),
    an Arrow array (null where the window holds no value; count 0); for min, max, first and
    last, the gather map of the right rows whose values they take (``NO_MATCH`` where none),
    or, with ``extreme_values``, for min and max an Arrow array of the column's type where
    the values are their own order keys (``Windows.reduce``), which needs no gather."""
    be = windows.backend
    # A dictionary's null values too, which null_count misses.
    valid = arrow_numpy.valid(column) if arrow_numpy.has_nulls(column) else None
    values = _values(column) if set(wanted) & NEED_VALUES else None
    # An encoded column's min and max keep its type: they gather its rows.
    encoded = pa.types.is_dictionary(column.type) or pa.types.is_run_end_encoded(column.type)
    extreme_values = extreme_values and not encoded
    found = windows.reduce(wanted, values, valid, extreme_values=extreme_values)
    counts = be.to_host(found["count"]) if "count" in found else None
    if counts is None and any(f"{how}_value" in found or how in _SUMS for how in wanted):
        counts = be.to_host(windows.reduce(("count",), None, valid)["count"])  # nulls' mask
    out = {}
    for how in wanted:
        if f"{how}_value" in found:
            value = be.to_host(found[f"{how}_value"])
            out[how] = arrow_numpy.array(value, column.type, counts > 0)
            continue
        result = be.to_host(found[how])
        if how in PICKS:
            out[how] = result
        elif how == "count":
            out[how] = pa.array(result, pa.int64())
        else:  # sum, mean
            out[how] = arrow_numpy.array(result, None, counts > 0)
    return out


def aggregate(windows: Windows, right: pa.Table, wanted: list[Aggregation]) -> list[pa.Array]:
    """The window join's columns: each ``Aggregation`` of ``right``'s columns over
    ``windows`` (``reduce_column``, one pass a column), as Arrow arrays of one entry per left
    row; min, max, first and last keep the column's type."""
    found = {}
    for name, hows in by_column(wanted).items():
        column = right.column(name)
        for how, result in reduce_column(windows, column, hows, extreme_values=True).items():
            if not isinstance(result, pa.Array):  # a gather map
                result = arrow_numpy.combined(gather(pa.table({"c": column}), result).column(0))
            found[Aggregation(name, how)] = result
    return [found[agg] for agg in wanted]


def _arrow_payload(values, valid, sums: bool = False):
    """An Arrow column (or a pandas or polars Series) as ``(numpy values, valid)``: its
    values exact (``_values``: int64 stays int64, where numpy's conversion of one with nulls
    made floats), its nulls as ``valid`` unless the caller gave one. Anything else as given.
    An ordered dictionary's values are its categories' positions, which ``sums`` refuses:
    they rank, they do not add."""
    module = type(values).__module__.split(".")[0]
    if not isinstance(values, (pa.Array, pa.ChunkedArray)) and module not in ("pandas", "polars"):
        return values, valid
    column = to_arrow(values, "values")
    column = column if isinstance(column, pa.ChunkedArray) else pa.chunked_array([column])
    if valid is None:
        valid = arrow_numpy.valid(column) if arrow_numpy.has_nulls(column) else None
    column = _run_ends_decoded(column)
    if pa.types.is_dictionary(column.type) and column.type.ordered and sums:
        msg = "values: sum and mean apply to numbers, not to an ordered dictionary's categories"
        raise TypeError(msg)
    if pa.types.is_dictionary(column.type) and not column.type.ordered:
        column = column.cast(column.type.value_type)
    t = column.type
    if pa.types.is_timestamp(t) or pa.types.is_duration(t) or pa.types.is_date(t):
        return column.to_numpy(), valid  # temporal, as numpy reads them: no sums of instants
    return _values(column), valid


def _values(column: pa.ChunkedArray) -> np.ndarray:
    """A numeric, boolean or temporal column's values as numpy (temporal ones as their
    integers; the slots of nulls as they lie, never read); dictionary and run-end encoded
    columns decoded, but an ordered dictionary (a pandas ordered Categorical, a polars Enum),
    whose values rank by their position in the dictionary, as those positions."""
    column = _run_ends_decoded(column)
    if pa.types.is_dictionary(column.type) and column.type.ordered:
        return _ranks(column)
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    return arrow_numpy.values(column)


def _run_ends_decoded(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A run-end encoded column as its values; any other as it is."""
    return pc.run_end_decode(column) if pa.types.is_run_end_encoded(column.type) else column


def _ranks(column: pa.ChunkedArray) -> np.ndarray:
    """The dictionary positions of an ordered dictionary column, as int64: its chunks that
    hold rows must share one dictionary, which alone says how their values rank.

    >>> cat = pa.array([1, 2, 3]).dictionary_encode()
    >>> ordered = pa.DictionaryArray.from_arrays(cat.indices, pa.array([3, 1, 2]), ordered=True)
    >>> _ranks(pa.chunked_array([ordered])).tolist()
    [0, 1, 2]
    """
    # An empty chunk holds no value to rank: its dictionary (a reader's, or none) is not read
    dictionaries = [chunk.dictionary for chunk in column.chunks if len(chunk)]
    if any(not d.equals(dictionaries[0]) for d in dictionaries[1:]):
        msg = (
            f"an ordered dictionary column ({column.type}) whose chunks hold different "
            f"dictionaries has no one order of its values: give its chunks one dictionary"
        )
        raise ValueError(msg)
    indices = pa.chunked_array([c.indices for c in column.chunks], column.type.index_type)
    return arrow_numpy.values(indices).astype(np.int64, copy=False)
