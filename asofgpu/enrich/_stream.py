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

The same holds for files sorted by their by columns and then their key (``grouped_order``:
day files per symbol, as vendors ship them, or a folder a symbol): the stream's order is
then (by..., on), and the carries hold each group's last row as before. Comparing (by...,
on) keys costs little: a batch's rows fall in runs of equal by values (``Keys``), and only
the runs' values are compared as values.

The layout is read from the files' row-group statistics and first row group (``_file_order``:
``is_tape``, ``grouped_order``) and verified while streaming: a key below one already seen is
an ``EnrichError`` (and nothing is written). Files whose paths sort out of key order (part-10
before part-2) stream in their keys' order where their statistics show it
(``_file_order.files_in_key_order``). Keys must be of one integer or temporal type on both
sides (their order is that of their int64 values).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import _arrow_numpy as arrow_numpy
from .._backend import get_backend, walks
from .._columns import ordered_key
from .._encode import family, unified
from ._errors import EnrichError
from ._memory import readable
from ._sources import Source, combined_columns


def streamable_key(left: pa.DataType, right: pa.DataType) -> bool:
    """Keys whose order is their int64 value's, the same type on both sides."""
    return (
        left == right
        and not pa.types.is_uint64(left)
        and (
            pa.types.is_integer(left)
            or pa.types.is_timestamp(left)
            or pa.types.is_date(left)
            or pa.types.is_duration(left)
            or pa.types.is_time(left)
        )
    )


def key_numbers(column) -> tuple[np.ndarray, np.ndarray | None]:
    """A key column's values as the join orders them (``ordered_key``: int64 for integers and
    instants, float64 with -0.0 as 0.0 and NaN last), and its validity (None: no nulls)."""
    key = ordered_key(column, "on", host=True)
    return key.values, key.valid


class NotSorted(EnrichError):
    """A side that its statistics said was sorted is not: the run starts again with the other
    layout its statistics allow, or without streaming (``auto``), or stops here."""

    def __init__(self, fact: str, layout: str, side: str = "RIGHT"):
        super().__init__(f"{fact}; write it sorted, or pass --right-mode spill")
        self.fact = fact  # what was found, without the advice: the log of a run starting again
        self.layout = layout  # "tape" or "grouped": the one that failed
        self.side = side  # "LEFT" or "RIGHT": the one that broke it


@dataclass(frozen=True)
class Start:
    """A point of a stream's order: the by values (Arrow scalars; none for a tape) and the key
    (its ``key_numbers`` value)."""

    by: tuple
    on: int | float


@dataclass(frozen=True)
class Keys:
    """A batch's stream keys, of its keyed rows (those with a key and by values; the others
    are never candidates and may sit anywhere): ``on`` as ``key_numbers`` gives them,
    ``rows`` their positions in the batch (None: every row), and for a grouped stream the
    runs of equal by values: where each starts among the keyed rows, and its by values
    (``heads``, Arrow arrays, text in its large form). Only the heads are compared as
    values: a batch of a million rows holds a few thousand runs."""

    n: int
    on: np.ndarray
    rows: np.ndarray | None = None
    runs: np.ndarray | None = None
    heads: tuple = ()

    def __len__(self) -> int:
        return len(self.on)

    def position(self, i: int) -> int:
        """The batch row of keyed row ``i``."""
        return i if self.rows is None else int(self.rows[i])

    def run_of(self, i: int) -> int:
        return int(np.searchsorted(self.runs, i, side="right")) - 1

    def at(self, i: int) -> Start:
        # .item(): an int for integer and temporal keys; a float for a spilled range's float
        # keys, which may be NaN or infinite (int() raised) and are never rounded
        if self.runs is None:
            return Start((), self.on[i].item())
        r = self.run_of(i)
        return Start(tuple(h[r] for h in self.heads), self.on[i].item())

    def slice(self, at: int) -> Keys:
        """The keys of batch rows ``at`` onwards."""
        first = at if self.rows is None else int(np.searchsorted(self.rows, at))
        rows = None if self.rows is None else self.rows[first:] - at
        if self.runs is None:
            return Keys(self.n - at, self.on[first:], rows)
        if first == len(self.on):
            return Keys(
                self.n - at,
                self.on[first:],
                rows,
                self.runs[:0],
                tuple(h.slice(0, 0) for h in self.heads),
            )
        r = self.run_of(first)
        runs = np.concatenate([[0], self.runs[r + 1 :] - first])
        return Keys(self.n - at, self.on[first:], rows, runs, tuple(h.slice(r) for h in self.heads))

    @staticmethod
    def concat(a: Keys, b: Keys) -> Keys:
        rows = (
            None
            if a.rows is None and b.rows is None
            else np.concatenate(
                [
                    np.arange(a.n) if a.rows is None else a.rows,
                    (np.arange(b.n) if b.rows is None else b.rows) + a.n,
                ]
            )
        )
        on = np.concatenate([a.on, b.on])
        if a.runs is None:
            return Keys(a.n + b.n, on, rows)
        runs, heads = b.runs + len(a.on), b.heads
        if (
            len(a.runs) and len(b.runs) and compare(a.at(len(a) - 1).by, 0, b.at(0).by, 0)[1]
        ):  # one run across the two
            runs, heads = runs[1:], tuple(h.slice(1) for h in heads)
        return Keys(
            a.n + b.n,
            on,
            rows,
            np.concatenate([a.runs, runs]),
            tuple(pa.concat_arrays([x, y]) for x, y in zip(a.heads, heads)),
        )


class Order:
    """How a side is sorted, and the check that its stream keeps to it, batch after batch:
    by ``on`` alone (a tape), or by its ``by`` columns and then ``on`` (grouped: the day
    files vendors ship per symbol), by values in Arrow's order (text byte-wise)."""

    def __init__(
        self, side: str, given: str, on: str, by: list[str] | tuple = (), files: list = ()
    ):
        self.side, self.given, self.on, self.by = side, given, on, tuple(by)
        # (path, rows) of a folder's or glob's files, read in turn: a message names the file.
        self.files = list(files)
        self.last: Start | None = None
        self.rows = 0

    @classmethod
    def of(cls, source: Source, on: str, by: list[str] | tuple = ()) -> Order:
        """The order of a stream of all ``source``'s files in turn."""
        files = [] if source.single else [(p.path, p.rows) for p in source.parts]
        return cls(source.side, source.given, on, by, files)

    def where(self, row: int) -> str:
        """Row ``row`` of the stream (from 0), in the file that holds it where the side is a
        folder or glob: 'row 5', 'row 1 of day/b.parquet'."""
        if not self.files:
            return f"row {row:,}"
        for path, rows in self.files:
            if row < rows:
                return f"row {row:,} of {path}"
            row -= rows
        return f"row {row:,} past its files"  # (not met: the files hold every row)

    @property
    def named(self) -> str:
        """The order as the messages name it: 'time' or ('symbol', 'time')."""
        return repr(self.on) if not self.by else repr((*self.by, self.on))

    def keys(self, table) -> Keys:
        """The stream keys of a batch or table."""
        values, keyed = key_numbers(table.column(self.on))
        columns = [table.column(name) for name in self.by]
        for column in columns:
            if column.null_count:
                keyed = _all_valid(values, keyed) & arrow_numpy.valid(column)
        rows = None
        if keyed is not None and not keyed.all():
            rows = np.flatnonzero(keyed)
            values = values[rows]
            columns = [c.take(arrow_numpy.array(rows)) for c in columns]
        if not self.by:
            return Keys(table.num_rows, values, rows)
        change = np.zeros(max(len(values) - 1, 0), bool)
        for column in columns:
            change |= _changes(column)
        runs = np.flatnonzero(np.concatenate([[len(values) > 0], change]))
        heads = tuple(as_comparable(c.take(arrow_numpy.array(runs))) for c in columns)
        if len(runs) > 1:  # equal values under different codes: one run
            same = compare(
                tuple(h.slice(1) for h in heads),
                0,
                tuple(h.slice(0, len(runs) - 1) for h in heads),
                0,
            )[1]
            if same.any():
                keep = np.concatenate([[True], ~same])
                runs = runs[keep]
                heads = tuple(h.filter(arrow_numpy.array(keep)) for h in heads)
        return Keys(table.num_rows, values, rows, runs, heads)

    def check(self, keys: Keys) -> None:
        if len(keys):
            bad = None
            if self.last is not None and below(keys.at(0), self.last):
                bad = 0
            else:
                steps = np.flatnonzero(descents(keys))
                if len(steps):
                    bad = int(steps[0]) + 1
            if bad is not None:
                at = self.where(self.rows + keys.position(bad))
                raise NotSorted(
                    f"{self.side} {self.given} is not sorted by {self.named} at {at}, "
                    f"though the bounds of its row groups are in order",
                    "grouped" if self.by else "tape",
                    self.side,
                )
            self.last = keys.at(len(keys) - 1)
        self.rows += keys.n


def sorted_sample(batches, on: str, every: int) -> np.ndarray:
    """Every ``every``-th valid key of column ``on`` over ``batches`` (``key_numbers``),
    sorted: where key ranges are cut.

    >>> sorted_sample([pa.record_batch({"t": [5, None, 1, 3]})], "t", 1).tolist()
    [1, 3, 5]
    """
    picked = []
    for batch in batches:
        keys, valid = key_numbers(batch.column(on))
        picked.append((keys if valid is None else keys[valid])[::every])
    # (no int64 among uint64 keys: together they would come out float64, and past 2**53
    # unequal keys as equal cuts)
    return np.sort(np.concatenate(picked)) if picked else np.zeros(0, np.int64)


def _changes(column) -> np.ndarray:
    """Where a by column's value differs from the row above (position ``i`` for row
    ``i + 1``); dictionary columns by their indices (equal values under two indices are
    found by ``Order.keys`` among the runs' values)."""
    if isinstance(column, pa.ChunkedArray):
        column = arrow_numpy.combined(column)
    if pa.types.is_dictionary(column.type):
        column = column.indices
    if len(column) < 2:
        return np.zeros(0, bool)
    if arrow_numpy.is_fixed_width(column.type):
        values = arrow_numpy.values(column)
        return values[1:] != values[:-1]
    return arrow_numpy.values(pc.not_equal(column.slice(1), column.slice(0, len(column) - 1)))


def as_comparable(column) -> pa.Array:
    """By values as an array that compares with the other side's: dictionaries decoded,
    text and binary in their large form."""
    if isinstance(column, pa.ChunkedArray):
        column = arrow_numpy.combined(column)
    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    kind = family(column.type)
    if kind in ("string", "binary"):
        column = column.cast(pa.large_string() if kind == "string" else pa.large_binary())
    return column


def compare(by_a, on_a, by_b, on_b):
    """(a < b, a == b) in (by..., on) order, element-wise: by values are Arrow arrays or
    scalars (a null compares as anything: its row never matches), keys numpy arrays or
    ints; numpy broadcasts the results."""
    less, equal = np.False_, np.True_
    for a, b in zip(by_a, by_b):
        less = less | (equal & _bools(pc.less(a, b)))
        equal = equal & _bools(pc.equal(a, b))
    return less | (equal & (on_a < on_b)), equal & (on_a == on_b)


def _bools(result) -> np.ndarray:
    return arrow_numpy.values(result) if isinstance(result, pa.Array) else np.bool_(result.as_py())


def below(a: Start, b: Start) -> bool:
    """Whether ``a`` comes before ``b``."""
    return bool(compare(a.by, a.on, b.by, b.on)[0])


def descents(keys: Keys) -> np.ndarray:
    """Where a keyed row comes before the one above it (position ``i`` for row ``i + 1``):
    a key below the one above in the same run, or a run whose by values are below the
    run's before it."""
    steps = keys.on[1:] < keys.on[:-1]
    if keys.runs is None or len(keys.runs) < 2:
        return steps
    steps[keys.runs[1:] - 1] = False  # a new run may start at any key
    heads, n = keys.heads, len(keys.runs)
    after, before = tuple(h.slice(1) for h in heads), tuple(h.slice(0, n - 1) for h in heads)
    back = compare(after, 0, before, 0)[0]
    steps[keys.runs[1:][back] - 1] = True
    return steps


#: A table of ``tables_of`` whose chunks average fewer rows is copied into one chunk.
SMALL_CHUNK_ROWS = 16_384


def tables_of(batches, rows: int):
    """Consecutive ``batches`` put together into tables of up to ``rows`` rows, so that each
    join is of up to a chunk's size: RIGHT read a row group at a time (a window a row group
    of 10,000 rows was 400 prepares and joins, its 2M x 4M enrich 2.5x polars' time), a
    spilled partition a chunk's share at a time. A batch narrowed to the keys
    (``Narrowing``) narrows those held with it. See ``_together`` for when the chunks are
    copied into one."""
    held, n = [], 0
    for batch in batches:
        if held and n + batch.num_rows > rows:
            yield _together(held)
            held, n = [], 0
        table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
        if held and held[0].column_names != table.column_names:
            held = [h.select(table.column_names) for h in held]
        held.append(table)
        n += table.num_rows
    if held:
        yield _together(held)


def _together(tables: list[pa.Table]) -> pa.Table:
    """``tables`` as one table: in their chunks, nothing copied, unless those average fewer
    than ``SMALL_CHUNK_ROWS`` rows. Then its columns are copied into one chunk here, by the
    thread that reads them (a stream's RIGHT: its reading thread, off the join's), as each
    join's order checks, key copies and takes went a chunk at a time.
    Both sides kept a file a symbol (a 1M-row window of up to 370 files): 3.88 -> 3.67 s
    with the presorted check (medians of 10 alternating processes); a window of 16 row
    groups of 65,536 rows gains nothing from the copy (1.78 s, 1.84 s copied).

    Nested columns (lists, structs, maps) and extension types (JSON, geometries) stay in
    their chunks (``combined_columns``); their takes go a chunk at a time, as before."""
    table = pa.concat_tables(tables)
    chunks = max((column.num_chunks for column in table.columns), default=0)
    if chunks <= 1 or table.num_rows >= SMALL_CHUNK_ROWS * chunks:
        return table
    return combined_columns(table)


def whole_key_windows(
    batches, order: Order, by: list[str] | tuple = (), max_run_bytes: int | None = None
):
    """RIGHT's batches as windows that never split a run of equal keys (a batch's trailing
    run waits for the next), their order checked; rows after the last key of all are kept,
    batches without a key are dropped (a null key is never a candidate). A run longer than
    two batches (one key holding a day of a daily state table) is kept as what a join can
    pick of it, each group's first and last row (``first_and_last``, groups by ``by``),
    collapsed again when it has doubled since (``walks.collapses_run``); more than
    ``max_run_bytes`` of those, with what the next collapse of them takes, raises
    ``CarryTooLarge`` (a state table of more entities than the budget holds does not
    stream)."""
    pending = None  # (table, its keys)
    collapsed = 0  # the rows the run's last collapse kept
    for batch in batches:
        keys = order.keys(batch)
        order.check(keys)
        table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
        if pending is not None:
            head = pending[0]
            if head.column_names != table.column_names:  # narrowed to the keys (LEFT ended)
                head = head.select(table.column_names)
            table = pa.concat_tables([head, table])
            keys = Keys.concat(pending[1], keys)
        if not len(keys):
            continue
        run = 0 if keys.runs is None else int(keys.runs[-1])  # the last by values' rows
        first_of_last = run + int(np.searchsorted(keys.on[run:], keys.on[-1], side="left"))
        cut = keys.position(first_of_last)
        if cut:
            yield table.slice(0, cut)
        pending = (table.slice(cut), keys.slice(cut))
        if cut:
            collapsed = 0
        elif _collapses(pending[0], batch.num_rows, collapsed, max_run_bytes):  # one run
            kept = first_and_last(pending[0], order.on, list(by))
            # The next collapse works on these rows again (FIRST_AND_LAST_ROW_BYTES).
            held = kept.nbytes + FIRST_AND_LAST_ROW_BYTES * kept.num_rows
            _check_carries(held, max_run_bytes, _ONE_KEY)
            pending = (kept, order.keys(kept))
            collapsed = kept.num_rows
    if pending is not None and pending[0].num_rows:  # (a run of null by values collapses to none)
        yield pending[0]


def _collapses(run: pa.Table, batch_rows: int, collapsed: int, max_run_bytes: int | None) -> bool:
    """``walks.collapses_run`` of a growing run of one key whose last collapse kept
    ``collapsed`` rows: its bytes, and what collapsing it takes (``FIRST_AND_LAST_ROW_BYTES``
    a row), against ``max_run_bytes``."""
    rows = run.num_rows
    needs = run.nbytes + FIRST_AND_LAST_ROW_BYTES * rows if max_run_bytes is not None else 0
    return walks.collapses_run(rows, batch_rows, collapsed, needs, max_run_bytes)


def first_and_last_of(batches, on: str, by: list[str], schema: pa.Schema) -> pa.Table:
    """``first_and_last`` of all the rows of ``batches`` (a spilled key range of few keys and
    many rows), the rows kept so far collapsed again each time they double
    (``walks.collapses_run``) rather than with every batch: it holds up to twice what it
    keeps, and a batch."""
    kept = arrow_numpy.empty_table(schema)
    collapsed = 0
    for batch in batches:
        kept = pa.concat_tables([kept, pa.Table.from_batches([batch])])
        if _collapses(kept, batch.num_rows, collapsed, None):
            kept = first_and_last(kept, on, by)
            collapsed = kept.num_rows
    return first_and_last(kept, on, by)


class CarryTooLarge(EnrichError):
    """What a stream holds besides its window outgrew its share of the memory budget: the
    rows it hands on from window to window (a row or a few of each group of RIGHT, the
    ``carries``), or, of a run of one key, each group's first and last row: RIGHT has too
    many groups to stream within ``--memory-limit``."""

    def __init__(self, held: int, allowed: int, what: str):
        super().__init__(
            f"streaming RIGHT {what.format(readable(held))}, more than the "
            f"{readable(allowed)} they may take (a quarter of what --memory-limit leaves)"
        )


_HANDS_ON = "hands on a row or more of each of its groups from window to window: {} of them"
_ONE_KEY = (
    "holds the first and last row of each group at one key (a state table's day): {} with "
    "what finding them takes"
)
#: What ``first_and_last`` takes a row while it works, above the table: its by values (as
#: numbers, or dictionary-encoded), the keys, a sort and the picks (145 B measured for 1M and
#: 3M rows of an int64 by column dictionary-encoded, each row a key, its group and a float64;
#: 60-70 B and the output since the numbers are compared as they are).
FIRST_AND_LAST_ROW_BYTES = 150


def _check_carries(held: int, allowed: int | None, what: str = _HANDS_ON) -> None:
    if allowed is not None and held > allowed:
        raise CarryTooLarge(held, allowed, what)


def _all_valid(values: np.ndarray, valid: np.ndarray | None) -> np.ndarray:
    return np.ones(len(values), bool) if valid is None else valid


@dataclass(frozen=True)
class Reach:
    """Which RIGHT rows a LEFT row can still match, by which the carries are trimmed:
    ``back``, whether the join looks back at all (not a forward join); ``tolerance``, how
    far it looks, in key units (None: any distance)."""

    back: bool = True
    tolerance: int | None = None


_INT64 = np.iinfo(np.int64)


def _by_values(table: pa.Table, by: tuple) -> tuple:
    return tuple(as_comparable(table.column(name)) for name in by)


def _kept(table: pa.Table, keep: np.ndarray | None) -> pa.Table:
    return table if keep is None or keep.all() else table.filter(arrow_numpy.array(keep))


def carry_in_for(carry: pa.Table, order: Order, start: Start | None, reach: Reach) -> pa.Table:
    """The rows of a carry in that a LEFT row at or after ``start`` can match: none when
    the join never looks back; in a grouped stream those of ``start``'s group alone (LEFT is
    past the groups before it); on a tape with a tolerance, those within it of ``start``."""
    if not reach.back:
        return carry.slice(0, 0)
    if start is None or not carry.num_rows:
        return carry
    if order.by:
        return _kept(carry, ~compare(_by_values(carry, order.by), 0, start.by, 0)[0])
    if reach.tolerance is None:
        return carry
    values, _ = key_numbers(carry.column(order.on))
    return _kept(carry, values >= max(start.on - reach.tolerance, int(_INT64.min)))


def carry_out_for(carry: pa.Table, order: Order, start: Start | None, reach: Reach) -> pa.Table:
    """The rows of a carry out (rows at or after ``start``) that a LEFT row before
    ``start`` can match: in a grouped stream those of ``start``'s group alone (the groups
    after it hold no such LEFT row); on a tape with a tolerance, those within it of
    ``start``."""
    if start is None or not carry.num_rows:
        return carry
    if order.by:
        return _kept(carry, ~compare(start.by, 0, _by_values(carry, order.by), 0)[0])
    if reach.tolerance is None:
        return carry
    values, _ = key_numbers(carry.column(order.on))  # whole numbers: LEFT's are below start.on
    return _kept(carry, values <= min(start.on - 1 + reach.tolerance, int(_INT64.max)))


class Windows:
    """RIGHT read in windows (``whole_key_windows``), each joined with the carries of the rows
    around it.

    ``window()`` is, in RIGHT's order: the carry in (the last row of each group before the
    window: the backward candidates it lacks), the window, and the carry out (the first row
    of each group after it: the forward candidates it lacks; only when ``carry_out`` is
    given, one table a window). ``next_start`` is the first key of the next window in
    ``order`` (None: this is the last): LEFT rows below it belong to this one. The carry in
    keeps only what the LEFT rows to come can match (``reach``: ``carry_in_for``); more
    than ``max_carry_bytes`` of it raises ``CarryTooLarge``.
    """

    def __init__(
        self,
        windows,
        order: Order,
        by: list[str],
        schema: pa.Schema,
        carry_out: list[pa.Table] | None = None,
        reach: Reach = Reach(),
        max_carry_bytes: int | None = None,
    ):
        self._windows = iter(windows)
        self._reach = reach
        self._max_carry_bytes = max_carry_bytes
        self._order = order
        self._on, self._by = order.on, by
        self._carry_out = carry_out
        self._at = 0
        self.carry: pa.Table | None = None
        self.current = next(self._windows, None)
        if self.current is None:  # RIGHT holds no key at all
            self.current = arrow_numpy.empty_table(schema)
        self._ahead = next(self._windows, None)
        self._ahead_start = None  # its first key, once asked

    @property
    def next_start(self) -> Start | None:
        if self._ahead is not None and self._ahead_start is None:
            self._ahead_start = _first_key(self._ahead, self._order)
        return self._ahead_start

    def window(self) -> pa.Table:
        parts = [t for t in (self.carry, self.current) if t is not None and t.num_rows]
        if self._carry_out is not None and self._at < len(self._carry_out):
            parts.append(self._carry_out[self._at])
        return pa.concat_tables(parts) if len(parts) > 1 else (parts or [self.current])[0]

    @property
    def carries_out(self) -> bool:
        return self._carry_out is not None

    def drain(self) -> None:
        """Read the windows no LEFT row reached, for their order check alone: a row out of
        order there may be the match of a row already written."""
        for _ in self._windows:
            pass

    def advance(self, carry: pa.Table | None = None) -> None:
        """Fold the current window into the carry in and move to the next one; ``carry``: the
        new carry in, when the caller knows it (the last row of each group of the window
        without a carry out), else it is found here."""
        if carry is None and not self._reach.back:
            carry = self.current.slice(0, 0)  # a forward join never looks back
        elif carry is None:
            parts = [t for t in (self.carry, self.current) if t is not None]
            carry = ends_of_groups(
                pa.concat_tables(parts), self._on, self._by, last=True, in_key_order=True
            )
        carry = carry_in_for(carry, self._order, self.next_start, self._reach)
        _check_carries(carry.nbytes, self._max_carry_bytes)
        self.carry = carry
        self.current, self._ahead = self._ahead, next(self._windows, None)
        self._ahead_start = None
        self._at += 1


def carries_out(
    windows,
    order: Order,
    by: list[str],
    schema: pa.Schema,
    reach: Reach = Reach(),
    max_bytes: int | None = None,
    in_key_order: bool = True,
) -> list[pa.Table]:
    """For each window, the first row of each group in the windows after it (a first pass
    over RIGHT, for forward and nearest joins): the windows' own first rows, folded from the
    last window back, each kept to what the window's LEFT rows can match (``reach``:
    ``carry_out_for``). Held all at once: more than ``max_bytes`` raises
    ``CarryTooLarge``. ``in_key_order``: False for windows not sorted by key (a spilled
    partition's key ranges)."""
    on = order.on
    firsts, starts, held = [], [], 0
    for window in windows:
        starts.append(_first_key_if_any(window, order))  # None: a first window of no key
        first = ends_of_groups(window, on, by, last=False, in_key_order=in_key_order)
        firsts.append(carry_out_for(first, order, starts[-1], reach))
        held += firsts[-1].nbytes
        _check_carries(held, max_bytes)
    out = [arrow_numpy.empty_table(schema)] * max(1, len(firsts))
    for w in range(len(firsts) - 2, -1, -1):
        out[w] = carry_out_for(
            ends_of_groups(
                pa.concat_tables([firsts[w + 1], out[w + 1]]),
                on,
                by,
                last=False,
                in_key_order=in_key_order,
            ),
            order,
            starts[w + 1],
            reach,
        )
        held += out[w].nbytes - firsts[w + 1].nbytes
        firsts[w + 1] = None  # folded into out[w]
        _check_carries(held, max_bytes)
    return out


def group_ids(table: pa.Table, by: list[str]) -> np.ndarray:
    """A group number a row (-1 where a by value is null), equal only for equal by values:
    as fine as the join's groups or finer (-0.0 and 0.0 apart), which a carry can afford,
    since a finer carry keeps every row the join's would. Arrow's dictionary encoding, not
    the join's (``_encode.Groups``): enrich samples RIGHT's groups with it before any join,
    and the join's hashing kernels took 0.3 s to load there.

    >>> t = pa.table({"s": ["a", "b", "a", None], "x": [1, 2, 1, 2]})
    >>> group_ids(t, ["s", "x"]).tolist()
    [0, 1, 0, -1]
    """
    ids = np.zeros(table.num_rows, np.int64)
    null = np.zeros(table.num_rows, bool)
    for k, name in enumerate(by):
        codes, n_codes = _codes(table.column(name))
        null |= codes < 0
        if k:  # the pair as one number (both below the rows), numbered again from 0
            paired = pa.array(ids * n_codes + np.maximum(codes, 0))
            codes = arrow_numpy.values(pc.dictionary_encode(paired).indices).astype(np.int64)
        ids = codes
    ids[null] = -1
    return ids


def _codes(column: pa.ChunkedArray) -> tuple[np.ndarray, int]:
    """Each row's position in ``column``'s distinct values (-1: null), and how many there are."""
    if pa.types.is_dictionary(column.type):
        column = unified(column)
    else:  # in one piece: a chunked column's chunks would each get the whole dictionary
        column = pa.chunked_array([arrow_numpy.dictionary_encode(arrow_numpy.combined(column))])
    indices = pa.chunked_array([c.indices for c in column.chunks], column.type.index_type)
    codes = arrow_numpy.filled(indices, 0).astype(np.int64)  # (unsigned: -1 would wrap)
    if indices.null_count:
        codes[~arrow_numpy.valid(indices)] = -1
    return codes, max(len(column.chunk(0).dictionary) if column.num_chunks else 0, 1)


def ends_of_groups(
    table: pa.Table, on: str, by: list[str], last: bool, in_key_order: bool = False
) -> pa.Table:
    """What a window or key range hands on of each group, among rows whose key and by values
    are all valid (a null key is never a candidate, a null by value matches nothing): its
    last row by key, then row order (``last``, the carry in: the backward candidate of any
    later row), or all its rows at its smallest key (the carry out: the forward candidates,
    every one of them, since which wins depends on the strategy and its tie rule).
    ``in_key_order``: the table is sorted by ``on`` already. Rows keep the table's order."""
    values, valid = key_numbers(table.column(on))
    ids = group_ids(table, by)
    kept = ids >= 0 if valid is None else valid & (ids >= 0)
    order = None  # row numbers in key order; None: every row, as they are
    if not in_key_order:  # stable: equal keys keep their row order; NaN sorts last, as joins do
        order = np.argsort(values, kind="stable")
        order = order[kept[order]]
    elif not kept.all():
        order = np.flatnonzero(kept)
    if not table.num_rows or (order is not None and not len(order)):
        return table.slice(0, 0)
    # The window's rows in key order, without gathering them when they are: a window of 1M
    # quotes took 27 ms here, a fifth of a forward stream's first pass, gathering and counting.
    groups, keys = (ids, values) if order is None else (ids[order], values[order])
    at = np.arange(len(groups))
    if last:
        ends = np.full(int(groups.max()) + 1, -1)
        np.maximum.at(ends, groups, at)
        rows = ends[ends >= 0]
    else:
        starts = np.full(int(groups.max()) + 1, len(groups))
        np.minimum.at(starts, groups, at)
        first = keys[np.minimum(starts, len(keys) - 1)][groups]  # its group's smallest key
        same = keys == first
        if keys.dtype.kind == "f":
            same |= np.isnan(keys) & np.isnan(first)
        rows = np.flatnonzero(same)
    if order is not None:
        rows = order[rows]
    return table.take(arrow_numpy.array(np.sort(rows)))


def first_and_last(table: pa.Table, on: str, by: list[str]) -> pa.Table:
    """The rows of ``table`` a join can pick: of each (group, key), its first and its last row
    (a backward join takes the last, a forward one the first, nearest either), in row order.
    Rows without a key or a by value, which never match, go. Applied batch after batch to
    what it kept so far and the next batch, it gives what it gives on the whole.

    >>> t = pa.table({"t": [1, 1, 1, 2, 1, None], "g": ["a", "a", "a", "a", "b", "a"]})
    >>> first_and_last(t, "t", ["g"]).to_pydict()
    {'t': [1, 1, 2, 1], 'g': ['a', 'a', 'a', 'b']}
    """
    if not table.num_rows:
        return table
    values, valid = key_numbers(table.column(on))
    groups, grouped = _group_words(table, by)
    kept = grouped if valid is None else valid & grouped
    order = np.flatnonzero(kept)
    # By the first by column, then the others, then the key, and row order among equals: a
    # stable pass each, least significant first, by the cpu's radix sort (numpy's lexsort
    # took 1.0 s of a collapse of 7M rows).
    cpu = get_backend("cpu")
    for words in (values, *reversed(groups)):
        order = order[cpu.stable_argsort(words[order])]
    keys = values[order]
    starts = np.ones(len(order), bool)
    starts[1:] = keys[1:] != keys[:-1]
    for g in groups:
        sorted_g = g[order]
        starts[1:] |= sorted_g[1:] != sorted_g[:-1]
    ends = np.ones(len(order), bool)
    ends[:-1] = starts[1:]
    return table.take(arrow_numpy.array(np.sort(order[starts | ends])))


def _group_words(table: pa.Table, by: list[str]) -> tuple[list[np.ndarray], np.ndarray]:
    """Integer arrays (one or more) whose equal tuples mark rows of equal by values, and which
    rows have none null: each by column ``arrow_numpy.values`` reads (numbers, booleans,
    instants) as the bits of its values (``arrow_numpy.int64_bits``: floats' too, so -0.0 and
    0.0 apart: finer than the join's groups, which what a join can pick affords), else
    ``group_ids`` of them all. A state table's entity ids need no hashing then (Arrow's
    dictionary encoding of 8M distinct ids took 1.4 s of a collapse's 1.9)."""
    if not by:
        return [], np.ones(table.num_rows, bool)
    columns = [table.column(name) for name in by]
    if not all(arrow_numpy.is_fixed_width(c.type) for c in columns):
        ids = group_ids(table, by)
        return [ids], ids >= 0
    grouped = np.ones(table.num_rows, bool)
    words = []
    for column in columns:
        if column.null_count:
            grouped &= arrow_numpy.valid(column)
        words.append(arrow_numpy.int64_bits(arrow_numpy.values(column)))
    return words, grouped


def _first_key(table: pa.Table, order: Order) -> Start:
    """A window's first key (those after the first have one: windows without keys are
    dropped), read from its first rows when they hold one."""
    start = _first_key_if_any(table, order)
    if start is None:
        raise AssertionError("a window without a key")
    return start


def _first_key_if_any(table: pa.Table, order: Order) -> Start | None:
    for head in (table.slice(0, 1024), table):
        keys = order.keys(head)
        if len(keys):
            return keys.at(0)
    return None


def split_by_key(keys: Keys, start: Start | None) -> int:
    """The position of the first keyed row at or above ``start`` in a sorted run of keys
    (None: every row is below)."""
    if start is None:
        return keys.n
    lo, hi = 0, len(keys)
    if keys.runs is not None and len(keys.runs):
        less, equal = compare(keys.heads, 0, start.by, 0)
        r = int(np.count_nonzero(less))  # runs below the start's by values
        ends = np.append(keys.runs[1:], len(keys))
        lo = int(keys.runs[r]) if r < len(keys.runs) else len(keys)
        hi = int(ends[r]) if r < len(keys.runs) and equal[r] else lo
    k = lo + int(np.searchsorted(keys.on[lo:hi], start.on, side="left"))
    return keys.n if k == len(keys) else keys.position(k)
