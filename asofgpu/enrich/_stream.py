"""RIGHT out of core without spilling: both sides streamed in key order, as tapes are.

When RIGHT and LEFT are each sorted by their ``on`` key across their files (a tape: quotes and
trades as exchanges publish them), a LEFT row of key ``l`` needs only the RIGHT rows of its
group near ``l``: the last at or before it (backward), the first at or after it (forward), or
both (nearest). RIGHT is read in windows of a bounded number of rows that never split a run of
equal keys (``whole_key_windows``). The LEFT rows whose key lies before the next window's first
key are joined against, in RIGHT's order: the carry in (the last row of each group before the
window), the window, and for forward and nearest joins the carry out (each group's rows at its
smallest key after the window, from a first pass over RIGHT: ``carries_out``). After the window
the carry in becomes the last row of each group of carry + window. Memory holds one window, the
carries (rows a group) and LEFT's chunks, whatever RIGHT's length: the per-group carries of
``asofgpu.dask``'s time strategy, on one machine.

The layout is read from the files' row-group statistics and first row group (``is_tape``) and
verified while streaming: a key below one already seen is an ``EnrichError`` (and nothing is
written). Keys must be of one integer or temporal type on both sides (their order is that of
their int64 values).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .. import _arrow_numpy as arrow_numpy
from .._columns import ordered_key
from ._errors import EnrichError, one_line
from ._sources import Source, leaf_columns


def streamable_key(left: pa.DataType, right: pa.DataType) -> bool:
    """Keys whose order is their int64 value's, the same type on both sides."""
    return left == right and not pa.types.is_uint64(left) and (
        pa.types.is_integer(left) or pa.types.is_timestamp(left) or pa.types.is_date(left)
        or pa.types.is_duration(left) or pa.types.is_time(left))


def is_tape(source: Source, on: str) -> bool:
    """Whether ``on`` never decreases through the files in order, as far as can be told
    without reading them: the row groups' statistics must not overlap (row groups without
    statistics: unknown, so no), and the first row group, whose order within statistics
    cannot show (a shuffled file may be one row group), is read and checked."""
    if on not in source.data_schema.names:
        return False
    last = None
    first = None  # (path, row group) of the first with keys
    # The raw (physical) values of signed and temporal keys order as the keys do, and are
    # plain ints (pyarrow builds pandas Timestamps of nanosecond ones). Unsigned ones are
    # read as they are: the physical int32 of a uint32 may wrap.
    raw = not pa.types.is_unsigned_integer(source.schema.field(on).type)
    for part in source.parts:
        meta = part.meta
        index = leaf_columns(meta, on)[0]
        for g in range(meta.num_row_groups):
            column = meta.row_group(g).column(index)
            stats = column.statistics
            if column.num_values == 0 or (stats is not None and stats.has_null_count
                                          and stats.null_count == column.num_values):
                continue  # no keys to order
            if stats is None or not stats.has_min_max:
                return False
            low, high = (stats.min_raw, stats.max_raw) if raw else (stats.min, stats.max)
            if last is not None and low < last:
                return False
            last = high
            first = first or (part.path, g)
    if first is None:
        return True
    try:
        keys = pq.ParquetFile(first[0]).read_row_group(first[1], columns=[on]).column(0)
    except (OSError, pa.ArrowException) as exc:
        raise EnrichError(f"cannot read {source.side} file {first[0]}: {one_line(exc)}") from None
    values, valid = key_numbers(keys)
    values = values if valid is None else values[valid]
    return bool(np.all(values[1:] >= values[:-1]))


def key_numbers(column) -> tuple[np.ndarray, np.ndarray | None]:
    """A key column's values as the join orders them (``ordered_key``: int64 for integers and
    instants, float64 with -0.0 as 0.0 and NaN last), and its validity (None: no nulls)."""
    key = ordered_key(column, "on", host=True)
    return key.values, key.valid


class NotSorted(EnrichError):
    """A side that its statistics said was sorted is not: ``auto`` starts again without
    streaming; ``--right-mode stream`` stops here."""


class Order:
    """Checks that a stream's keys never decrease, batch after batch."""

    def __init__(self, side: str, given: str, on: str):
        self.side, self.given, self.on = side, given, on
        self.last: int | None = None
        self.rows = 0

    def check(self, values: np.ndarray, valid: np.ndarray | None) -> None:
        keys = values if valid is None else values[valid]
        if len(keys):
            steps = np.flatnonzero(keys[1:] < keys[:-1])
            bad = None
            if self.last is not None and keys[0] < self.last:
                bad = 0
            elif len(steps):
                bad = int(steps[0]) + 1
            if bad is not None:
                at = self.rows + (bad if valid is None else int(np.flatnonzero(valid)[bad]))
                raise NotSorted(
                    f"{self.side} {self.given} is not sorted by {self.on!r} at row {at:,}, "
                    f"though its row-group statistics say so; write it sorted, or pass "
                    f"--right-mode spill")
            self.last = int(keys[-1])
        self.rows += len(values)


def whole_key_windows(batches, on: str, order: Order):
    """RIGHT's batches as windows that never split a run of equal keys (a batch's trailing
    run waits for the next), their order checked; rows after the last key of all are kept,
    batches without a key are dropped (a null key is never a candidate)."""
    pending = None  # (table, its key values, their validity)
    for batch in batches:
        values, valid = key_numbers(batch.column(on))
        order.check(values, valid)
        table = pa.Table.from_batches([batch])
        if pending is not None:
            table = pa.concat_tables([pending[0], table])
            if pending[2] is not None or valid is not None:
                valid = np.concatenate([_all_valid(pending[1], pending[2]),
                                        _all_valid(values, valid)])
            values = np.concatenate([pending[1], values])
        keys = values if valid is None else values[valid]
        if not len(keys):
            continue
        first_of_last = int(np.searchsorted(keys, keys[-1], side="left"))
        cut = first_of_last if valid is None else int(np.flatnonzero(valid)[first_of_last])
        if cut:
            yield table.slice(0, cut)
        pending = (table.slice(cut), values[cut:], None if valid is None else valid[cut:])
    if pending is not None:
        yield pending[0]


def _all_valid(values: np.ndarray, valid: np.ndarray | None) -> np.ndarray:
    return np.ones(len(values), bool) if valid is None else valid


class Windows:
    """RIGHT read in windows (``whole_key_windows``), each joined with the carries of the rows
    around it.

    ``window()`` is, in RIGHT's order: the carry in (the last row of each group before the
    window: the backward candidates it lacks), the window, and the carry out (the first row
    of each group after it: the forward candidates it lacks; only when ``carry_out`` is
    given, one table a window). ``next_start`` is the first key of the next window (None:
    this is the last): LEFT rows below it belong to this one.
    """

    def __init__(self, windows, on: str, by: list[str], schema: pa.Schema,
                 carry_out: list[pa.Table] | None = None):
        self._windows = iter(windows)
        self._on, self._by = on, by
        self._carry_out = carry_out
        self._at = 0
        self.carry: pa.Table | None = None
        self.current = next(self._windows, None)
        if self.current is None:  # RIGHT holds no key at all
            self.current = arrow_numpy.empty_table(schema)
        self._ahead = next(self._windows, None)
        self._ahead_start = None  # its first key, once asked

    @property
    def next_start(self) -> int | None:
        if self._ahead is not None and self._ahead_start is None:
            self._ahead_start = _first_key(self._ahead, self._on)
        return self._ahead_start

    def window(self) -> pa.Table:
        parts = [t for t in (self.carry, self.current) if t is not None and t.num_rows]
        if self._carry_out is not None and self._at < len(self._carry_out):
            parts.append(self._carry_out[self._at])
        return pa.concat_tables(parts) if len(parts) > 1 else (parts or [self.current])[0]

    @property
    def carries_out(self) -> bool:
        return self._carry_out is not None

    def advance(self, carry: pa.Table | None = None) -> None:
        """Fold the current window into the carry in and move to the next one; ``carry``: the
        new carry in, when the caller knows it (the last row of each group of the window
        without a carry out), else it is found here."""
        if carry is None:
            parts = [t for t in (self.carry, self.current) if t is not None]
            carry = ends_of_groups(pa.concat_tables(parts), self._on, self._by, last=True,
                                   in_key_order=True)
        self.carry = carry
        self.current, self._ahead = self._ahead, next(self._windows, None)
        self._ahead_start = None
        self._at += 1


def carries_out(windows, on: str, by: list[str], schema: pa.Schema) -> list[pa.Table]:
    """For each window, the first row of each group in the windows after it (a first pass
    over RIGHT, for forward and nearest joins): the windows' own first rows, folded from the
    last window back."""
    firsts = [ends_of_groups(w, on, by, last=False, in_key_order=True) for w in windows]
    out = [arrow_numpy.empty_table(schema)] * max(1, len(firsts))
    for w in range(len(firsts) - 2, -1, -1):
        out[w] = ends_of_groups(pa.concat_tables([firsts[w + 1], out[w + 1]]), on, by,
                                last=False, in_key_order=True)
    return out


def group_ids(table: pa.Table, by: list[str]) -> np.ndarray:
    """A group number a row (-1 where a by value is null), equal only for equal by values:
    as fine as the join's groups or finer (-0.0 and 0.0 apart), which a carry can afford,
    since a finer carry keeps every row the join's would."""
    ids = np.zeros(table.num_rows, np.int64)
    null = np.zeros(table.num_rows, bool)
    for k, name in enumerate(by):
        column = table.column(name)
        column = (column.unify_dictionaries() if pa.types.is_dictionary(column.type)
                  else pc.dictionary_encode(column))
        indices = pa.chunked_array([c.indices for c in column.chunks], pa.int32())
        null |= ~arrow_numpy.valid(indices)
        codes = arrow_numpy.filled(indices, 0).astype(np.int64)
        ids = codes if k == 0 else np.unique(np.stack([ids, codes], axis=1), axis=0,
                                             return_inverse=True)[1].reshape(-1)
    ids[null] = -1
    return ids


def ends_of_groups(table: pa.Table, on: str, by: list[str], last: bool,
                   in_key_order: bool = False) -> pa.Table:
    """What a window or key range hands on of each group, among rows whose key and by values
    are all valid (a null key is never a candidate, a null by value matches nothing): its
    last row by key, then row order (``last``, the carry in: the backward candidate of any
    later row), or all its rows at its smallest key (the carry out: the forward candidates,
    every one of them, since which wins depends on the strategy and its tie rule).
    ``in_key_order``: the table is sorted by ``on`` already. Rows keep the table's order."""
    values, valid = key_numbers(table.column(on))
    ids = group_ids(table, by)
    kept = ids >= 0 if valid is None else valid & (ids >= 0)
    if in_key_order:
        order = np.flatnonzero(kept)
    else:  # stable: equal keys keep their row order; NaN sorts last, as the join orders it
        order = np.argsort(values, kind="stable")
        order = order[kept[order]]
    if not len(order):
        return table.slice(0, 0)
    groups, keys = ids[order], values[order]
    at = np.arange(len(order))
    if last:
        ends = np.full(int(groups.max()) + 1, -1)
        np.maximum.at(ends, groups, at)
        rows = order[ends[ends >= 0]]
    else:
        starts = np.full(int(groups.max()) + 1, len(order))
        np.minimum.at(starts, groups, at)
        new_key = np.concatenate([[True], (keys[1:] != keys[:-1])
                                  & ~(np.isnan(keys[1:]) & np.isnan(keys[:-1]))
                                  if keys.dtype.kind == "f" else keys[1:] != keys[:-1]])
        run = np.cumsum(new_key)  # the number of each row's key among the sorted keys
        rows = order[run == run[starts[groups]]]
    return table.take(arrow_numpy.array(np.sort(rows)))


def _first_key(table: pa.Table, on: str) -> int:
    """A window's first key (it has one: windows without keys are dropped), read from its
    first rows when they hold one."""
    column = table.column(on)
    for head in (column.slice(0, 1024), column):
        values, valid = key_numbers(head)
        if valid is None or valid.any():
            return int(values[0] if valid is None else values[valid][0])
    raise AssertionError("a window without a key")


def split_by_key(values: np.ndarray, valid: np.ndarray | None, start: int | None) -> int:
    """The position of the first row whose (valid) key is at or above ``start`` in a
    non-decreasing run of keys (None: every row is below)."""
    if start is None:
        return len(values)
    if valid is None:
        return int(np.searchsorted(values, start, side="left"))
    where = np.flatnonzero(valid)
    k = int(np.searchsorted(values[where], start, side="left"))
    return len(values) if k == len(where) else int(where[k])
