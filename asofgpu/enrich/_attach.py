"""The four ways ``asofgpu enrich`` holds RIGHT, each an "attach" object: called with a LEFT
chunk, it returns the attached columns for those rows in order, and keeps the matched count
and the staleness sketch.

- ``InMemory``: RIGHT read whole and prepared once (``AsofJoin``).
- ``Streamed``: both sides sorted by their key: RIGHT in windows with per-group carries
  (``_stream``).
- ``Regrouped``: RIGHT sorted (by its key, or by its by-columns and then its key), LEFT not:
  LEFT's keys put in RIGHT's order (``_regroup``), joined against RIGHT streamed.
- ``Spilled``: anything else: both sides hash-partitioned on disk, joined a partition (or a key
  range of one) at a time, LEFT's order rebuilt (``_spill``).

docs/enrich.md says why each gives the whole answer.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pyarrow as pa

from .. import _arrow_numpy as arrow_numpy
from .._columns import key_type_of_arrow, row_tolerances, tolerance_in_ticks
from .._encode import unified
from .._calendar import reach_bounds_ns
from .._staleness import Staleness
from .._gather import gather
from ..join import AsofJoin
from . import _memory as memory
from ._checks import Options, Plan, Tolerance, left_columns, translate
from ._errors import EnrichError
from ._schemas import is_text, read_as_codes
from ._sources import Source
from ._regroup import ByRanges, on_ranges, restore, stream_order
from ._spill import (
    POSITION,
    Narrowing,
    Results,
    SpillFolder,
    in_left_order,
    key_ranges,
    merged,
    partition_of,
    range_of,
    read_all,
    read_batches,
    stream_schema,
)
from ._spill import source_batches as spill_batches
from ._stream import (
    Order,
    Reach,
    Windows,
    carries_out,
    ends_of_groups,
    first_and_last_of,
    split_by_key,
    tables_of,
    whole_key_windows,
)

RESULT_BATCH_ROWS = 1 << 16  # the output is rebuilt from a batch of each partition at once


def payload_of(right: pa.Table, names: list[str]) -> pa.Table:
    """RIGHT's attached columns as each LEFT piece gathers from them: in their chunks, which
    a gather reads in place, but text read as codes in one chunk of one dictionary. Arrow's
    take of chunks of several dictionaries unifies them each time: 10 row groups of 200,000
    distinct 50-byte notes took 380 ms a gather of 1M rows, against 3 ms once unified.

    >>> codes = [pa.array(v).dictionary_encode() for v in (["a", "b"], ["c", "a"])]
    >>> right = pa.table({"t": pa.chunked_array([[1, 2], [3, 4]]), "x": pa.chunked_array(codes)})
    >>> payload = payload_of(right, ["x", "t"])
    >>> payload["x"].num_chunks, payload["x"].chunk(0).dictionary.to_pylist(), payload["t"].num_chunks
    (1, ['a', 'b', 'c'], 2)
    """
    payload = right.select(names)
    for k, column in enumerate(payload.columns):
        if pa.types.is_dictionary(column.type) and column.num_chunks > 1:
            one = pa.chunked_array([unified(column).combine_chunks()], column.type)
            payload = payload.set_column(k, payload.field(k), one)
    return payload


class _Attach:
    """What each way keeps: the matched count and the staleness sketch, and the attaching of
    a LEFT piece to a prepared RIGHT."""

    spilled = 0  # bytes of spill files

    def __init__(self, options: Options, tolerance, staleness: Staleness, n_right: int):
        self.options, self.tolerance = options, tolerance
        self.staleness, self.n_right = staleness, n_right
        self.matched = 0

    def finish(self) -> None:
        """After LEFT's last row: whatever must still be checked."""

    def _attach(self, prepared: AsofJoin, payload: pa.Table, left) -> pa.Table:
        """``payload``'s rows for the LEFT rows of ``left`` (a batch or table)."""
        gmap = _probe(prepared, left, self.options, self.tolerance)
        hit = np.flatnonzero(gmap != prepared.no_match)
        self.matched += len(hit)
        self.staleness.add(left.column(self.options.left_on), gmap, hit)
        return gather(payload, gmap)


class InMemory(_Attach):
    """RIGHT read whole and prepared once; each LEFT chunk probes it."""

    def __init__(self, options: Options, the_plan: Plan, table: pa.Table, tolerance, every: int):
        self.prepared = prepare(table, options)
        super().__init__(
            options,
            tolerance,
            Staleness(table.column(options.right_on), every=every),
            self.prepared.n_right,
        )
        self.payload = payload_of(table, the_plan.payload)

    def __call__(self, batch: pa.RecordBatch) -> pa.Table:
        return self._attach(self.prepared, self.payload, batch)


class Spilled(_Attach):
    """Both sides hash-partitioned into ``spill`` and joined a partition at a time (``_spill``);
    each LEFT chunk then takes its rows of the results, in order."""

    def __init__(
        self,
        options: Options,
        the_plan: Plan,
        left: Source,
        right: Source,
        as_codes: list[str],
        tolerance,
        spill: SpillFolder,
        k: int,
        rows: int,
        every: int,
        need: int,
        budget: int,
        progress,
    ):
        super().__init__(
            options,
            tolerance,
            Staleness(pa.chunked_array([], right.schema.field(options.right_on).type), every=every),
            right.rows,
        )
        left_keys = left_columns(options)
        left_codes = [
            c
            for c in options.left_by
            if is_text(left.schema.field(c).type) or c not in left.data_schema.names
        ]
        right_paths, right_rows = spill.partition(
            "right",
            spill_batches(right, the_plan.read, as_codes, rows),
            schema_of(right, the_plan.read, as_codes),
            k,
            lambda batch: partition_of(batch, options.right_by, k),
        )
        left_paths, _ = spill.partition(
            "left",
            spill_batches(left, left_keys, left_codes, rows, positions=True),
            schema_of(left, left_keys, left_codes, positions=True),
            k,
            lambda batch: partition_of(batch, options.left_by, k),
        )
        self.spilled = spill.bytes
        progress.log(f"spilled {memory.readable(spill.bytes)} in {k} partitions of each side")
        self._results = []
        ranged = _rangeable(left, right, options)
        per_row = need / max(1, right.rows)
        for i in range(k):
            ranges = math.ceil(right_rows[i] * per_row / (budget / 4))
            if ranges > 1 and ranged:
                progress.log(
                    f"partition {i} holds {right_rows[i]:,} RIGHT rows, too many to "
                    f"prepare at once: joined in {ranges} key ranges"
                )
                result = self._join_in_ranges(
                    right_paths[i],
                    left_paths[i],
                    ranges,
                    options,
                    the_plan,
                    tolerance,
                    spill,
                    int(budget / 4 / max(per_row, 1.0)),
                    progress,
                    rows,
                )
            else:
                if ranges > 1:
                    progress.log(
                        f"partition {i} holds {right_rows[i]:,} RIGHT rows, too many "
                        f"to prepare at once, but keys of two types cannot be cut "
                        f"into ranges: joined whole, over --memory-limit"
                    )
                result = _write_results(
                    spill,
                    f"result-{i}",
                    self._joined(
                        read_all(right_paths[i]),
                        tables_of(read_batches(left_paths[i]), rows),
                        options,
                        the_plan,
                        tolerance,
                    ),
                )
            os.remove(right_paths[i])
            os.remove(left_paths[i])
            self._results.append(result)
        self._at = 0

    def _join_in_ranges(
        self,
        right_path: str,
        left_path: str,
        ranges: int,
        options: Options,
        the_plan: Plan,
        tolerance,
        spill: SpillFolder,
        most_rows: int,
        progress,
        rows: int,
    ) -> Results:
        """A partition too large to prepare whole (one group may hold most of RIGHT): both
        sides cut into key ranges, each range of LEFT joined against its range of RIGHT
        between the last row of each group before it (carry in, for backward and nearest)
        and the first after it (carry out, for forward and nearest), as in the Dask time
        strategy, in tables of ``rows`` LEFT rows; each range's results written in turn,
        then merged in LEFT's order. A range of more than ``most_rows`` RIGHT rows (equal
        keys share a range: one key may hold them all) is read as the rows a join can pick
        of it (``first_and_last``)."""
        on, by = options.right_on, list(options.right_by)
        cuts = key_ranges(right_path, on, ranges)
        n = len(cuts) + 1
        schema, left_schema = stream_schema(right_path), stream_schema(left_path)
        right_parts, right_rows = spill.partition(
            f"{os.path.basename(right_path)}-range",
            read_batches(right_path),
            schema,
            n,
            range_of(on, cuts, n),
        )  # null keys: never candidates
        left_parts, _ = spill.partition(
            f"{os.path.basename(left_path)}-range",
            read_batches(left_path),
            left_schema,
            n,
            range_of(options.left_on, cuts, 0),
        )

        reduced = set()

        def range_table(r: int) -> pa.Table:
            if right_rows[r] <= most_rows:
                return read_all(right_parts[r])
            if r not in reduced:
                reduced.add(r)
                progress.log(
                    f"a key range holds {right_rows[r]:,} RIGHT rows of few keys, too "
                    f"many to prepare at once: read as each key's first and last row "
                    f"per group"
                )
            return first_and_last_of(read_batches(right_parts[r]), on, by, schema)

        backward = options.strategy != "forward"
        forward = options.strategy != "backward"
        carry_out = (
            carries_out(
                (range_table(r) for r in range(n)),
                Order("RIGHT", right_path, on),
                by,
                schema,
                in_key_order=False,
            )
            if forward
            else [arrow_numpy.empty_table(schema)] * n
        )
        carry_in = arrow_numpy.empty_table(schema)
        name = os.path.basename(left_path)
        results = []
        for r in range(n):
            window = range_table(r)
            # Merging reads a batch of each range at once: together, about a LEFT chunk.
            results.append(
                _write_results(
                    spill,
                    f"{name}-result-{r}",
                    self._joined(
                        pa.concat_tables([carry_in, window, carry_out[r]]),
                        tables_of(read_batches(left_parts[r]), rows),
                        options,
                        the_plan,
                        tolerance,
                    ),
                    max(1024, rows // n),
                )
            )
            if backward:
                carry_in = ends_of_groups(pa.concat_tables([carry_in, window]), on, by, last=True)
            os.remove(right_parts[r])
            os.remove(left_parts[r])
        result = _write_results(spill, f"{name}-result", merged(results))
        for part in results:
            if part.path is not None:
                os.remove(part.path)
        return result

    def _joined(self, right: pa.Table, left_tables, options: Options, the_plan: Plan, tolerance):
        """One partition (or key range) joined, a LEFT table at a time: (LEFT position,
        attached columns) of each, in LEFT order."""
        prepared = prepare(right, options)
        self.staleness = self.staleness.with_right(right.column(options.right_on))
        payload = payload_of(right, the_plan.payload)
        for left in left_tables:
            taken = self._attach(prepared, payload, left)
            yield taken.add_column(0, POSITION, left.column(POSITION))

    def __call__(self, batch: pa.RecordBatch) -> pa.Table:
        return _results_for(self, batch)


def _results_for(attach, batch: pa.RecordBatch) -> pa.Table:
    """The attached columns of the next LEFT ``batch``, from the results each partition of
    ``attach`` wrote in position order (``attach._results``; ``attach._at``: the batch's
    first position)."""
    end = attach._at + batch.num_rows
    pieces = [piece for results in attach._results for piece in results.until(end)]
    taken = in_left_order(pieces, attach._at, batch.num_rows)
    attach._at = end
    return taken


def _write_results(
    spill: SpillFolder, name: str, results, batch_rows: int = RESULT_BATCH_ROWS
) -> Results:
    """A partition's results (tables, in position order) into ``spill``, in batches of up to
    ``batch_rows``, to be read back in position order."""
    path, writer = None, None
    try:
        for result in results:
            if writer is None:
                path, writer = spill.writer(name, result.schema)
            writer.write_table(result, max_chunksize=batch_rows)
        if writer is None:  # no LEFT row fell in this partition
            return Results.of_table(arrow_numpy.empty_table(pa.schema([(POSITION, pa.int64())])))
        writer.close()
    except BaseException as exc:
        if writer is not None:
            writer.abandon()
        if isinstance(exc, OSError):
            raise spill.failed(exc) from None
        raise
    return Results.of_file(path)


class Streamed(_Attach):
    """RIGHT streamed in windows with per-group carries (``_stream``); each LEFT chunk is cut
    where the next window starts, and each piece joined against its window and carries.
    Forward and nearest joins first read RIGHT once more for the carries out."""

    def __init__(
        self,
        options: Options,
        the_plan: Plan,
        left: Source,
        right: Source,
        right_batches,
        as_codes: list[str],
        tolerance,
        rows: int,
        every: int,
        grouped: bool = False,
        narrowing: Narrowing | None = None,
        max_carry_bytes: int | None = None,
    ):
        """``narrowing``: set by ``finish``, so that ``right_batches`` reads the rest of
        RIGHT's keys only; ``max_carry_bytes``: what the carries may hold (``Windows``)."""
        schema = schema_of(right, the_plan.read, as_codes)
        self._narrowing = narrowing
        super().__init__(
            options,
            tolerance,
            Staleness(pa.chunked_array([], schema.field(options.right_on).type), every=every),
            right.rows,
        )
        self.plan, self.grouped = the_plan, grouped
        on, by = options.right_on, list(options.right_by)

        def right_order():
            return Order.of(right, on, by if grouped else ())

        # A grouped stream's carries keep the next group's rows whatever the tolerance.
        reach = Reach(
            options.strategy != "forward",
            None if grouped else _reach(tolerance, schema.field(on).type, left, options),
        )
        carry_out = None
        if options.strategy != "backward":
            carry_out = carries_out(
                whole_key_windows(
                    tables_of(spill_batches(right, the_plan.read, as_codes, rows), rows),
                    right_order(),
                    by,
                    max_carry_bytes,
                ),
                right_order(),
                by,
                schema,
                reach,
                max_carry_bytes,
            )
        self.windows = Windows(
            whole_key_windows(tables_of(right_batches, rows), right_order(), by, max_carry_bytes),
            right_order(),
            by,
            schema,
            carry_out,
            reach,
            max_carry_bytes,
        )
        self.left_order = Order.of(left, options.left_on, options.left_by if grouped else ())
        self._prepared = None  # the current window's, built on its first piece
        self._empty = arrow_numpy.empty_table(  # nullable, as the joins' columns are
            pa.schema([schema.field(c).with_nullable(True) for c in the_plan.payload])
        )

    def __call__(self, batch: pa.RecordBatch) -> pa.Table:
        keys = self.left_order.keys(batch)
        self.left_order.check(keys)
        pieces, at = [], 0
        while True:
            end = at + split_by_key(keys.slice(at), self.windows.next_start)
            if end > at:
                pieces.append(self._join(batch.slice(at, end - at)))
            if end == keys.n:
                return pa.concat_tables(pieces) if pieces else self._empty
            at = end
            self._advance()

    @property
    def payload_schema(self) -> pa.Schema:
        """The attached columns' schema."""
        return self._empty.schema

    def finish(self) -> None:
        if self._narrowing is not None:
            self._narrowing.set()
        self.windows.drain()

    def _advance(self) -> None:
        """The next window. Without a carry out, a prepared window already knows the next
        carry in: each group's last row (no group-by over the window again)."""
        carry = None
        if self._prepared is not None and not self.windows.carries_out:
            prepared, _, window = self._prepared
            carry = arrow_numpy.take(window, prepared.backend.to_host(prepared.last_rows()))
        self.windows.advance(carry)
        self._prepared = None

    def _join(self, piece: pa.RecordBatch) -> pa.Table:
        if self._prepared is None:
            window = self.windows.window()
            self.staleness = self.staleness.with_right(window.column(self.options.right_on))
            # A grouped window after its carry in is in (group, key) order: the carry holds
            # each group's last row, in the groups' order; a carry out would come after.
            presorted = self.grouped and not self.windows.carries_out
            self._prepared = (
                prepare(window, self.options, presorted),
                payload_of(window, self.plan.payload),
                window,
            )
        return self._attach(*self._prepared[:2], piece)


class Regrouped(_Attach):
    """RIGHT sorted by its key (a tape) or by its by columns and then its key (``grouped``),
    LEFT not: LEFT's keys put in RIGHT's order (``_regroup``: spilled in ranges when they do
    not fit, each range sorted) and joined against RIGHT streamed (``Streamed``); each LEFT
    chunk then takes its rows of the results, in order."""

    def __init__(
        self,
        options: Options,
        the_plan: Plan,
        left: Source,
        right: Source,
        right_batches,
        as_codes: list[str],
        tolerance,
        spill: SpillFolder | None,
        k: int,
        rows: int,
        every: int,
        progress,
        grouped: bool,
        narrowing: Narrowing | None = None,
        max_carry_bytes: int | None = None,
    ):
        """``spill``: where LEFT's ``k`` ranges go (None when ``k`` is 1: held in memory);
        ``max_carry_bytes``: what RIGHT's carries may hold (``Windows``)."""
        stream = Streamed(
            options,
            the_plan,
            left,
            right,
            right_batches,
            as_codes,
            tolerance,
            rows,
            every,
            grouped,
            narrowing,
            max_carry_bytes,
        )
        super().__init__(options, tolerance, stream.staleness, right.rows)
        self._payload = stream.payload_schema
        on, by = options.left_on, list(options.left_by)
        codes = [
            c for c in by if is_text(left.schema.field(c).type) or c not in left.data_schema.names
        ]
        batches = spill_batches(left, left_columns(options), codes, rows, positions=True)
        schema = schema_of(left, left_columns(options), codes, positions=True)
        order = by if grouped else []
        if k > 1:
            ranged = order[0] if grouped else on
            # Grouped, the first pass reads the other by columns and the keys too: a value
            # too busy for one range is cut further by them.
            read = [*order, on] if grouped else [on]
            first_pass = spill_batches(left, read, [c for c in codes if c in read], rows)
            part_of = (
                ByRanges(first_pass, ranged, k, on, left.rows, rest=order[1:])
                if grouped
                else on_ranges(first_pass, ranged, k, left.rows)
            )
            paths, _ = spill.partition("left", batches, schema, k, part_of)
            named = (*order, on) if grouped else on
            busy = part_of.cut if grouped else 0
            progress.log(
                f"LEFT's keys spilled in {k} ranges of {ranged!r} "
                f"({memory.readable(spill.bytes)}), each sorted by {named!r} in turn"
                + (
                    f"; {busy} value{'s' if busy > 1 else ''} too busy for one range cut by "
                    f"{(*order[1:], on) if len(order) > 1 else on!r}"
                    if busy
                    else ""
                )
            )
            tables = (_read_and_remove(path) for path in paths)
        else:
            tables = [pa.Table.from_batches(list(batches), schema)]
        self._results = []
        for i, table in enumerate(tables):
            result = self._join(stream, table, on, order, rows)
            self._results.append(
                _write_results(spill, f"result-{i}", [result])
                if k > 1
                else Results.of_table(result)
            )
        stream.finish()  # RIGHT past the last LEFT row is checked too
        self.matched, self.staleness = stream.matched, stream.staleness
        self.spilled = spill.bytes if spill is not None else 0
        self._at = 0

    def _join(
        self, stream: Streamed, table: pa.Table, on: str, order: list[str], rows: int
    ) -> pa.Table:
        """A partition of LEFT's keys joined in RIGHT's order (by ``order``'s columns, then
        ``on``): (LEFT position, attached columns) in the partition's row order."""
        keyed, others = stream_order(table, on, order)
        in_order = gather(table, keyed)
        pieces = [stream(in_order.slice(at, rows)) for at in range(0, len(keyed), rows)]
        pieces.append(
            pa.table(
                {f.name: pa.nulls(len(others), f.type) for f in self._payload}, schema=self._payload
            )
        )
        taken = restore(pa.concat_tables(pieces), np.concatenate([keyed, others]))
        return taken.add_column(0, POSITION, table.column(POSITION))

    def __call__(self, batch: pa.RecordBatch) -> pa.Table:
        return _results_for(self, batch)


def _read_and_remove(path: str) -> pa.Table:
    table = read_all(path)
    os.remove(path)
    return table


def schema_of(
    source: Source, columns: list[str], as_codes: list[str], positions: bool = False
) -> pa.Schema:
    """The schema of ``spill_batches``: text and partition columns in ``as_codes`` come as
    dictionaries of int32 indices."""
    fields = []
    for name in columns:
        field = source.schema.field(name)  # its nullability too: the batches keep it
        if name in as_codes:
            field = field.with_type(read_as_codes(field.type))
        else:  # as the batches are read
            field = field.with_type(arrow_numpy.viewless(field.type))
        fields.append(field)
    if positions:
        fields.append(pa.field(POSITION, pa.int64()))
    return pa.schema(fields)


def _rangeable(left: Source, right: Source, options: Options) -> bool:
    """Whether a partition can be cut into key ranges: keys that order as numbers alike on
    both sides (one type, not uint64, whose values may not fit int64)."""
    left_type = left.schema.field(options.left_on).type
    right_type = right.schema.field(options.right_on).type
    return (
        left_type == right_type
        and not pa.types.is_uint64(left_type)
        and not (pa.types.is_decimal(left_type))
    )


def prepare(table: pa.Table, options: Options, presorted: bool = False) -> AsofJoin:
    """RIGHT's rows of ``table`` prepared, errors in the command's words; ``presorted``: the
    rows are in (group, key) order already, which is checked instead of sorted."""
    try:
        return AsofJoin(
            table.column(options.right_on),
            [table.column(c) for c in options.right_by] or None,
            presorted=presorted,
            device=options.device,
        )
    except (TypeError, ValueError, OverflowError) as exc:
        raise EnrichError(translate(exc, options)) from None


def _reach(tolerance: Tolerance, key: pa.DataType, left: Source, options: Options) -> int | None:
    """How far any LEFT row still to come may look for its match, in the units of a stream's
    keys (one integer or temporal type on both sides: ``key_numbers``' int64 values), by
    which the carries are trimmed; None for any distance. It must cover every row, or a
    carry would drop the match of a row to come: the calendar's longest reach, or LEFT's
    largest tolerance."""
    key_type = key_type_of_arrow(key, "on")
    if tolerance.column is not None:
        return _largest_tolerance(left, tolerance.column, key_type, options)
    if tolerance.calendar:
        bounds = reach_bounds_ns(tolerance.value)  # (then the carries keep every row)
        return None if bounds is None else -(-bounds[1] // key_type.tick_ns)
    ticks = tolerance_in_ticks(tolerance.value, key_type, key_type.tick_ns)
    return None if ticks is None else int(ticks)


def _largest_tolerance(left: Source, name: str, key_type, options: Options) -> int | None:
    """LEFT's largest tolerance in ``name``, in key units: the column read a row group at a
    time (the carries are trimmed before LEFT is streamed); None when a row has none (null:
    no limit) or when it is a partition column (its values are the folders')."""
    if name not in left.data_schema.names:
        return None
    largest = 0
    for part in left.parts:
        for table in part.row_groups("LEFT", [name], []):
            column = Tolerance(column=name).of(table)
            if column.null_count:
                return None
            try:
                ticks = row_tolerances(column, key_type, key_type.tick_ns, len(column), True)
            except (TypeError, ValueError, OverflowError) as exc:
                raise EnrichError(translate(exc, options)) from None
            if len(ticks):
                largest = max(largest, int(ticks.max()))
    return None if largest >= np.iinfo(np.int64).max else largest


def _probe(prepared: AsofJoin, left, options: Options, tolerance: Tolerance):
    """The gather map of a LEFT batch or table, on the host."""
    try:
        gmap = prepared.join(
            left.column(options.left_on),
            [left.column(c) for c in options.left_by] or None,
            strategy=options.strategy,
            allow_exact_matches=options.allow_exact_matches,
            tolerance=tolerance.of(left),
        )
    except (TypeError, ValueError, OverflowError) as exc:
        raise EnrichError(translate(exc, options)) from None
    return prepared.backend.to_host(gmap)
