"""RIGHT out of core without spilling: both sides streamed in key order, as tapes are.

When RIGHT and LEFT are each sorted by their ``on`` key across their files (a tape: quotes and
trades as exchanges publish them), a backward join needs, for a LEFT row of key ``l``, only
the last RIGHT row of its group at or before ``l``. RIGHT is read in windows of a bounded
number of rows; a ``carry`` keeps the last row of every group seen before the window. The
LEFT rows whose key lies before the next window's first key are joined against carry + window
(the carry comes first: RIGHT's order still decides among equal keys), and after the window
the carry becomes the last row of each group of carry + window. Memory holds one window, the
carry (a row per group) and LEFT's chunks, whatever RIGHT's length: the per-group carry of
``asofgpu.dask``'s time strategy, on one machine.

The layout is read from the files' row-group statistics (``is_tape``) and verified while
streaming: a key below one already seen is an ``EnrichError`` (and nothing is written).

Streaming is for ``backward`` only (forward and nearest would need the next row of each group,
however far ahead: they spill), and for keys whose type is the same integer or temporal type
on both sides (their order is that of their int64 values).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ._errors import EnrichError
from ._sources import Source


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
    for part in source.parts:
        meta = part.meta
        index = meta.schema.to_arrow_schema().get_field_index(on)
        for g in range(meta.num_row_groups):
            column = meta.row_group(g).column(index)
            stats = column.statistics
            if column.num_values == 0 or (stats is not None and stats.has_null_count
                                          and stats.null_count == column.num_values):
                continue  # no keys to order
            if stats is None or not stats.has_min_max:
                return False
            if last is not None and stats.min < last:
                return False
            last = stats.max
            first = first or (part.path, g)
    if first is None:
        return True
    keys = pq.ParquetFile(first[0]).read_row_group(first[1], columns=[on]).column(0)
    values, valid = int64_keys(keys)
    values = values if valid is None else values[valid]
    return bool(np.all(values[1:] >= values[:-1]))


def int64_keys(column) -> tuple[np.ndarray, np.ndarray | None]:
    """A key column's int64 values and validity (None: no nulls; null rows hold 0)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if not column.null_count:
        return column.cast(pa.int64()).to_numpy(), None
    valid = column.is_valid().to_numpy(zero_copy_only=False)
    return column.cast(pa.int64()).fill_null(0).to_numpy(), valid


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
                raise EnrichError(
                    f"{self.side} {self.given} is not sorted by {self.on!r} at row {at:,}, "
                    f"though its row-group statistics say so; write it sorted, or pass "
                    f"--right-mode spill")
            self.last = int(keys[-1])
        self.rows += len(values)


class Windows:
    """RIGHT read in windows, each joined with the carry of the rows before it.

    ``window()`` is carry + the current window in RIGHT's order; ``next_start`` the first key
    of the window after it (None: the current one is the last): LEFT rows below it belong
    to the current window. Batches whose keys are all null are skipped: such rows are never
    candidates.
    """

    def __init__(self, batches, on: str, by: list[str], schema: pa.Schema, given: str):
        self._batches = iter(batches)
        self._on, self._by = on, by
        self._order = Order("RIGHT", given, on)
        self.carry: pa.Table | None = None
        self.current = self._read()
        if self.current is None:  # RIGHT holds no key at all
            self.current = schema.empty_table()
        self._ahead = self._read()

    @property
    def next_start(self) -> int | None:
        return None if self._ahead is None else _first_key(self._ahead, self._on)

    def _read(self) -> pa.Table | None:
        """The next batch holding a key, as a table, its keys checked; None at the end."""
        for batch in self._batches:
            values, valid = int64_keys(batch.column(self._on))
            self._order.check(values, valid)
            if valid is None or valid.any():
                return pa.Table.from_batches([batch])
        return None

    def window(self) -> pa.Table:
        if self.carry is None or not self.carry.num_rows:
            return self.current
        return pa.concat_tables([self.carry, self.current])

    def advance(self) -> None:
        """Fold the current window into the carry and move to the next one."""
        self.carry = self._last_of_each_group(self.window())
        self.current, self._ahead = self._ahead, self._read()

    def _last_of_each_group(self, table: pa.Table) -> pa.Table:
        """The last row of each group among rows whose key and by values are all valid (a
        null key is never a candidate; a null by value matches nothing). Only the key
        columns are grouped; the rows chosen (one a group) are taken whole at the end."""
        valid = table.column(self._on).is_valid()
        for name in self._by:
            valid = pc.and_(valid, table.column(name).is_valid())
        mask = valid.to_numpy(zero_copy_only=False)
        rows = None if mask.all() else np.flatnonzero(mask)
        if not self._by:
            last = np.flatnonzero(mask)[-1:]
            return table.take(pa.array(last, pa.int64()))
        keys = [table.column(c).unify_dictionaries()  # Acero groups one dictionary only
                if pa.types.is_dictionary(table.schema.field(c).type) else table.column(c)
                for c in self._by]
        numbered = pa.table(keys + [pa.array(np.arange(table.num_rows, dtype=np.int64))],
                            names=[*self._by, "__row"])
        if rows is not None:
            numbered = numbered.take(pa.array(rows))
        last = numbered.group_by(self._by, use_threads=False).aggregate([("__row", "max")])
        return table.take(pa.array(np.sort(last.column("__row_max").to_numpy())))


def _first_key(table: pa.Table, on: str) -> int:
    values, valid = int64_keys(table.column(on))
    return int(values[0] if valid is None else values[valid][0])


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
