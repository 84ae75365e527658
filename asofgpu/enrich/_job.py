"""The run of ``asofgpu enrich``: RIGHT read and prepared once, each LEFT file streamed through
it in chunks into its output file, and the summary."""

from __future__ import annotations

import contextlib
import math
import os
import queue
import resource
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._progress import Quiet, readable_count
from .._staleness import SAMPLE, Staleness
from ..gather import gather
from ..join import AsofJoin
from . import _memory as memory
from ._checks import (Options, Plan, check_options, check_output, dry_run, memory_limit_of, plan,
                      tolerance_of, translate)
from ._errors import EnrichError, OutputError, one_line
from ._output import AtomicFile, AtomicFolder, ParquetStitcher
from ._sources import Part, Source, is_text
from ._spill import (POSITION, Results, SpillFolder, in_left_order,
                     key_ranges, partition_of, range_of, read_all, read_batches,
                     stream_schema)
from ._spill import source_batches as spill_batches
from ._stream import (NotSorted, Order, Windows, carries_out, ends_of_groups, int64_keys,
                      is_tape, split_by_key, streamable_key, whole_key_windows)


MAX_PARTITIONS = 512  # each side's partitions are open files at once
RESULT_BATCH_ROWS = 1 << 16  # the output is rebuilt from a batch of each partition at once


@dataclass
class Summary:
    """What a run did: its rows, matches, staleness of the matched right rows, timings."""

    out: str
    files: int  # LEFT files enriched (one output file each)
    rows: int
    matched: int
    chunks: int
    chunk_rows: int
    attached: list[str]
    right_rows: int
    key: str  # how the staleness reads: "LEFT t minus RIGHT t"
    p50: str | None  # readable, None when nothing matched
    p99: str | None
    prepare_s: float
    stream_s: float
    elapsed_s: float
    backend: str
    peak_rss: int  # bytes: the process's peak resident memory
    spilled: int = 0  # bytes of spill files written (RIGHT out of core)
    mode: str = "memory"  # how RIGHT was held: memory, stream or spill

    def lines(self) -> list[str]:
        share = _share(self.matched, self.rows)
        stale = (f"p50 {self.p50}, p99 {self.p99} ({self.key})" if self.p50 is not None
                 else "no matched rows")
        rate = (f" ({readable_count(self.rows / self.stream_s)} rows/s)" if self.stream_s > 0
                else "")
        files = f"{self.files:,} files, " if self.files != 1 else ""
        return [
            f"wrote {self.out}",
            f"  rows       {self.rows:,} in {files}{self.chunks:,} chunk(s) of up to "
            f"{self.chunk_rows:,}",
            f"  attached   {', '.join(self.attached) or '(no columns)'} "
            f"from {self.right_rows:,} right rows",
            f"  matched    {share} ({self.matched:,} rows; {self.rows - self.matched:,} "
            f"without a match)",
            f"  staleness  {stale}",
            f"  elapsed    {self.elapsed_s:.2f} s: {_FIRST_PHASE[self.mode]} in "
            f"{self.prepare_s:.2f} s, left side streamed in {self.stream_s:.2f} s{rate}",
            f"  memory     peak {memory.readable(self.peak_rss)} resident"
            + (f", {memory.readable(self.spilled)} spilled to disk" if self.spilled else ""),
            f"  backend    {self.backend}",
        ]


_FIRST_PHASE = {"memory": "right side read and prepared",
                "stream": "checks and the first window read",
                "spill": "both sides spilled and joined a partition at a time"}


@dataclass
class _Counts:
    rows: int = 0
    chunks: int = 0


def enrich(options: Options, progress=None) -> Summary:
    """Run ``asofgpu enrich``: raises EnrichError (bad input) or OutputError (writing failed),
    and lets KeyboardInterrupt through; in every such case no output is left behind.

    Under ``--right-mode auto`` a side that its statistics showed sorted but is not (row
    groups that do not overlap, unsorted inside) is found while streaming: the run starts
    again without streaming."""
    progress = progress or Quiet()
    try:
        return _run(options, progress, may_stream=True)
    except NotSorted as exc:
        if options.right_mode != "auto":
            raise
        progress.log(f"{exc}: starting again without streaming")
        return _run(options, progress, may_stream=False)


def _run(options: Options, progress, may_stream: bool) -> Summary:
    start = time.perf_counter()
    tolerance = tolerance_of(options.tolerance)
    check_options(options)
    limit, limit_name = memory_limit_of(options)
    budget = memory.check_limit(limit, limit_name)
    left = Source.find(options.left, "LEFT")
    right = Source.find(options.right, "RIGHT")
    out = check_output(options, left, right)
    the_plan = plan(options, left, right)
    as_codes = _as_codes(options, the_plan, right)
    for source in (left, right):
        largest = memory.largest_row_group(source)
        if 2 * largest > budget:
            raise EnrichError(
                f"--memory-limit {limit_name} cannot hold a row group of {source.side} "
                f"({largest >> 20} MiB uncompressed) twice over; raise it, or write the files "
                f"with smaller row groups")
    left_row = memory.row_bytes(left, left.data_schema.names)
    payload_row = memory.row_bytes(right, the_plan.payload)
    rows = memory.chunk_rows(limit, options.chunk_rows, left_row, payload_row)
    need = memory.right_bytes(right, the_plan.read, as_codes)
    mode, why = _mode(options, left, right, need, budget, limit_name, may_stream)
    every = -(-left.rows // SAMPLE)  # staleness from about SAMPLE matches
    with contextlib.ExitStack() as stack:
        # Reading RIGHT (pyarrow, off the GIL) overlaps the checks on zero rows (numba
        # loading its compiled kernels, on the GIL), and LEFT's first chunks are read while
        # RIGHT is prepared.
        reading = stack.enter_context(ThreadPoolExecutor(1, thread_name_prefix="asofgpu-read"))
        right_table = (reading.submit(right.read, the_plan.read, as_codes)
                       if mode == "memory" else None)
        first = stack.enter_context(_Prefetch(_batches(left, left.parts[0], options, rows)))
        backend = dry_run(options, left.schema, right.schema, tolerance)
        target = stack.enter_context((AtomicFile if left.single else AtomicFolder)(out))
        if mode == "memory":
            progress.log(f"reading RIGHT {options.right} ({_files(right)}{right.rows:,} rows)")
            attach = _InMemory(options, the_plan, right_table.result(), tolerance, every)
        elif mode == "stream":
            progress.log(f"{why}: streaming RIGHT {options.right} ({_files(right)}"
                         f"{right.rows:,} rows, sorted by {options.right_on!r}) in windows of "
                         f"up to {rows:,} rows")
            windows = stack.enter_context(_Prefetch(
                spill_batches(right, the_plan.read, as_codes, rows)))
            attach = _Streamed(options, the_plan, left, right, windows, as_codes, tolerance,
                               rows, every)
        else:
            k = options.spill_partitions or _partitions(need, budget,
                                                        left.rows * (left_row + payload_row))
            folder = options.tmp_dir if options.tmp_dir is not None else os.path.dirname(out)
            spill = stack.enter_context(SpillFolder(os.fspath(folder)))
            progress.log(f"{why}: spilling both sides to {k} hash partitions in {spill.path}")
            attach = _Spilled(options, the_plan, left, right, as_codes, tolerance, spill, k,
                              rows, every, need, budget, progress)
        prepared_at = time.perf_counter()
        progress.log(f"{_FIRST_PHASE[mode]} ({attach.n_right:,} right rows) in "
                     f"{prepared_at - start:.2f} s on {backend}")
        progress.log(f"streaming LEFT {options.left} ({_files(left)}{left.rows:,} rows) in "
                     f"chunks of up to {rows:,} rows")
        counts = _Counts()
        progress.start(left.rows)
        try:
            for i, part in enumerate(left.parts):
                if not left.single:
                    progress.log(f"LEFT {part.relative}: {part.rows:,} rows "
                                 f"({memory.readable(part.bytes)})")
                batches = first if i == 0 else _Prefetch(_batches(left, part, options, rows))
                with batches:
                    _enrich_part(left, batches, target.path_for(part.relative), attach,
                                 the_plan, options, counts, progress, out)
        finally:
            progress.stop()
        target.commit()
    done = time.perf_counter()
    staleness = attach.staleness
    return Summary(
        out=str(options.out), files=len(left.parts), rows=counts.rows, matched=attach.matched,
        chunks=counts.chunks, chunk_rows=rows, attached=the_plan.names,
        right_rows=attach.n_right, key=f"LEFT {options.left_on} minus RIGHT {options.right_on}",
        p50=staleness.readable(0.5), p99=staleness.readable(0.99),
        prepare_s=prepared_at - start, stream_s=done - prepared_at, elapsed_s=done - start,
        backend=backend, peak_rss=peak_rss(), spilled=attach.spilled, mode=mode)


def _files(source: Source) -> str:
    return "" if source.single else f"{len(source.parts):,} files, "


def _as_codes(options: Options, the_plan: Plan, right: Source) -> list[str]:
    """RIGHT's by-columns read as dictionary columns: parquet stores text as dictionary
    pages, so the reader hands over each row group's codes instead of building millions of
    strings (10M quotes: 0.2 s instead of 1.0 s), and the join encodes the small
    dictionaries. Partition by-columns come as one-value dictionaries for the same reason."""
    return [c for c in options.right_by if c not in the_plan.payload
            and (is_text(right.schema.field(c).type) or c not in right.data_schema.names)]


def _mode(options: Options, left: Source, right: Source, need: int, budget: int,
          limit_name: str, may_stream: bool) -> tuple[str, str]:
    """How RIGHT is held (memory, stream or spill), and why, for the log."""
    mode = options.right_mode
    if mode == "auto" and options.spill_partitions is not None:
        return "spill", f"--spill-partitions {options.spill_partitions}"
    if mode in ("memory", "spill"):
        return mode, f"--right-mode {mode}"
    not_streamed = (_why_not_streamed(options, left, right) if may_stream
                    else "a side was not sorted after all")
    if mode == "stream":
        if not_streamed:
            raise EnrichError(f"--right-mode stream: {not_streamed}")
        return mode, "--right-mode stream"
    if not not_streamed:  # a tape streams whether it fits or not: less memory, less time
        return "stream", "both sides are sorted by their key"
    if need <= budget // 2:
        return "memory", ""
    return "spill", (f"RIGHT needs about {memory.readable(need)} prepared, more than half of "
                     f"what --memory-limit {limit_name} leaves")


def _why_not_streamed(options: Options, left: Source, right: Source) -> str:
    """Why RIGHT cannot be streamed ("" when it can)."""
    left_type = left.schema.field(options.left_on).type
    right_type = right.schema.field(options.right_on).type
    if not streamable_key(left_type, right_type):
        return (f"the keys must be of one integer or temporal type on both sides, got "
                f"{left_type} and {right_type}")
    for source, on in ((right, options.right_on), (left, options.left_on)):
        if not is_tape(source, on):
            return (f"{source.side} {source.given} is not sorted by {on!r}, as far as its "
                    f"row-group statistics and first row group show")
    return ""


def _rangeable(left: Source, right: Source, options: Options) -> bool:
    """Whether a partition can be cut into key ranges: keys that order as numbers alike on
    both sides (one type, not uint64, whose values may not fit int64)."""
    left_type = left.schema.field(options.left_on).type
    right_type = right.schema.field(options.right_on).type
    return left_type == right_type and not pa.types.is_uint64(left_type) and not (
        pa.types.is_decimal(left_type))


def _partitions(right_need: int, budget: int, left_bytes: float) -> int:
    """Partitions enough that one holds a quarter of the budget of RIGHT prepared, and of
    LEFT's keys and attached columns: room for skew between partitions."""
    k = max(math.ceil(4 * right_need / budget), math.ceil(4 * left_bytes / budget), 2)
    return min(k, MAX_PARTITIONS)


def _enrich_part(left: Source, batches, path: str, attach, the_plan: Plan, options: Options,
                 counts: _Counts, progress, out: str) -> None:
    """One LEFT file's ``batches``, RIGHT attached, into ``path``."""
    writer = _writer(path, the_plan.schema, options, out)
    try:
        for batch in batches:
            taken = attach(batch)
            columns = batch.columns[:len(left.data_schema)] + taken.columns
            with _writing(out):
                writer.write(pa.Table.from_arrays(columns, schema=the_plan.schema))
            counts.rows += batch.num_rows
            counts.chunks += 1
            progress.update(counts.rows)  # joined; the last chunks are written by close()
        with _writing(out):
            writer.close()
    except BaseException:
        writer.abort()
        raise


class _InMemory:
    """RIGHT read whole and prepared once; each LEFT chunk probes it."""

    spilled = 0

    def __init__(self, options: Options, the_plan: Plan, table: pa.Table, tolerance,
                 every: int):
        self.options, self.tolerance = options, tolerance
        try:
            self.prepared = AsofJoin(table.column(options.right_on),
                                     [table.column(c) for c in options.right_by] or None,
                                     device=options.device)
            self.staleness = Staleness(table.column(options.right_on), every=every)
        except (TypeError, ValueError, OverflowError) as exc:
            raise EnrichError(translate(exc, options)) from None
        self.payload = table.select(the_plan.payload)  # in chunks: gather reads them in place
        self.n_right = self.prepared.n_right
        self.matched = 0

    def __call__(self, batch: pa.RecordBatch) -> pa.Table:
        gmap = _probe(self.prepared, batch, self.options, self.tolerance)
        hit = np.flatnonzero(gmap != self.prepared.no_match)
        self.matched += len(hit)
        self.staleness.add(batch.column(self.options.left_on), gmap, hit)
        return gather(self.payload, gmap)


class _Spilled:
    """Both sides hash-partitioned into ``spill`` and joined a partition at a time (``_spill``);
    each LEFT chunk then takes its rows of the results, in order."""

    def __init__(self, options: Options, the_plan: Plan, left: Source, right: Source,
                 as_codes: list[str], tolerance, spill: SpillFolder, k: int, rows: int,
                 every: int, need: int, budget: int, progress):
        self.spilled = 0
        left_keys = [options.left_on, *options.left_by]
        left_codes = [c for c in options.left_by if is_text(left.schema.field(c).type)
                      or c not in left.data_schema.names]
        right_paths, right_rows = spill.partition(
            "right", spill_batches(right, the_plan.read, as_codes, rows),
            _schema_of(right, the_plan.read, as_codes), k,
            lambda batch: partition_of(batch, options.right_by, k))
        left_paths, _ = spill.partition(
            "left", spill_batches(left, left_keys, left_codes, rows, positions=True),
            _schema_of(left, left_keys, left_codes, positions=True), k,
            lambda batch: partition_of(batch, options.left_by, k))
        self.spilled = spill.bytes
        progress.log(f"spilled {memory.readable(spill.bytes)} in {k} partitions of each side")
        self.n_right = right.rows
        self.matched = 0
        self.staleness = Staleness(pa.array([], right.schema.field(options.right_on).type),
                                   every=every)
        self._results = []
        ranged = _rangeable(left, right, options)
        per_row = need / max(1, right.rows)
        for i in range(k):
            ranges = math.ceil(right_rows[i] * per_row / (budget / 4))
            if ranges > 1 and ranged:
                progress.log(f"partition {i} holds {right_rows[i]:,} RIGHT rows, too many to "
                             f"prepare at once: joined in {ranges} key ranges")
                result = self._join_in_ranges(right_paths[i], left_paths[i], ranges, options,
                                              the_plan, tolerance, spill)
            else:
                if ranges > 1:
                    progress.log(f"partition {i} holds {right_rows[i]:,} RIGHT rows, too many "
                                 f"to prepare at once, but keys of two types cannot be cut "
                                 f"into ranges: joined whole, over --memory-limit")
                result = self._join(read_all(right_paths[i]), read_all(left_paths[i]), options,
                                    the_plan, tolerance)
            os.remove(right_paths[i])
            os.remove(left_paths[i])
            path, writer = spill.writer(f"result-{i}", result.schema)
            try:
                writer.write_table(result, max_chunksize=RESULT_BATCH_ROWS)
                writer.close()
            except OSError as exc:
                raise spill.failed(exc) from None
            self._results.append(Results(path))
        self._at = 0

    def _join_in_ranges(self, right_path: str, left_path: str, ranges: int, options: Options,
                        the_plan: Plan, tolerance, spill: SpillFolder) -> pa.Table:
        """A partition too large to prepare whole (one group may hold most of RIGHT): both
        sides cut into key ranges, each range of LEFT joined against its range of RIGHT
        between the last row of each group before it (carry in, for backward and nearest)
        and the first after it (carry out, for forward and nearest), as in the Dask time
        strategy; the results put back in LEFT's order."""
        on, by = options.right_on, list(options.right_by)
        cuts = key_ranges(right_path, on, ranges)
        n = len(cuts) + 1
        schema, left_schema = stream_schema(right_path), stream_schema(left_path)
        right_parts, _ = spill.partition(f"{os.path.basename(right_path)}-range", read_batches(
            right_path), schema, n, range_of(on, cuts, n))  # null keys: never candidates
        left_parts, _ = spill.partition(f"{os.path.basename(left_path)}-range", read_batches(
            left_path), left_schema, n, range_of(options.left_on, cuts, 0))
        backward = options.strategy != "forward"
        forward = options.strategy != "backward"
        firsts = [ends_of_groups(read_all(p), on, by, last=False) for p in right_parts] \
            if forward else []
        carry_out = [schema.empty_table()] * n
        for r in range(n - 2, -1, -1) if forward else ():
            carry_out[r] = ends_of_groups(pa.concat_tables([firsts[r + 1], carry_out[r + 1]]),
                                          on, by, last=False)
        carry_in = schema.empty_table()
        results = []
        for r in range(n):
            window = read_all(right_parts[r])
            results.append(self._join(pa.concat_tables([carry_in, window, carry_out[r]]),
                                      read_all(left_parts[r]), options, the_plan, tolerance))
            if backward:
                carry_in = ends_of_groups(pa.concat_tables([carry_in, window]), on, by,
                                          last=True)
            os.remove(right_parts[r])
            os.remove(left_parts[r])
        result = pa.concat_tables(results)
        return result.take(pc.sort_indices(result, [(POSITION, "ascending")]))

    def _join(self, right: pa.Table, left: pa.Table, options: Options, the_plan: Plan,
              tolerance) -> pa.Table:
        """One partition joined: (LEFT position, attached columns) in LEFT order."""
        try:
            prepared = AsofJoin(right.column(options.right_on),
                                [right.column(c) for c in options.right_by] or None,
                                device=options.device)
            self.staleness = self.staleness.with_right(right.column(options.right_on))
        except (TypeError, ValueError, OverflowError) as exc:
            raise EnrichError(translate(exc, options)) from None
        gmap = _probe(prepared, left, options, tolerance)
        hit = np.flatnonzero(gmap != prepared.no_match)
        self.matched += len(hit)
        self.staleness.add(left.column(options.left_on), gmap, hit)
        taken = gather(right.select(the_plan.payload), gmap)
        return taken.add_column(0, POSITION, left.column(POSITION))

    def __call__(self, batch: pa.RecordBatch) -> pa.Table:
        end = self._at + batch.num_rows
        pieces = [piece for results in self._results for piece in results.until(end)]
        taken = in_left_order(pieces, self._at, batch.num_rows)
        self._at = end
        return taken


class _Streamed:
    """RIGHT streamed in windows with per-group carries (``_stream``); each LEFT chunk is cut
    where the next window starts, and each piece joined against its window and carries.
    Forward and nearest joins first read RIGHT once more for the carries out."""

    spilled = 0

    def __init__(self, options: Options, the_plan: Plan, left: Source, right: Source,
                 right_batches, as_codes: list[str], tolerance, rows: int, every: int):
        self.options, self.plan, self.tolerance = options, the_plan, tolerance
        schema = _schema_of(right, the_plan.read, as_codes)
        on, by = options.right_on, list(options.right_by)
        carry_out = None
        if options.strategy != "backward":
            carry_out = carries_out(whole_key_windows(
                spill_batches(right, the_plan.read, as_codes, rows), on,
                Order("RIGHT", right.given, on)), on, by, schema)
        self.windows = Windows(whole_key_windows(right_batches, on,
                                                 Order("RIGHT", right.given, on)),
                               on, by, schema, carry_out)
        self.left_order = Order("LEFT", left.given, options.left_on)
        self.n_right = right.rows
        self.matched = 0
        self.staleness = Staleness(schema.empty_table().column(options.right_on), every=every)
        self._prepared = None  # the current window's, built on its first piece
        self._empty = pa.schema([schema.field(c) for c in the_plan.payload]).empty_table()

    def __call__(self, batch: pa.RecordBatch) -> pa.Table:
        values, valid = int64_keys(batch.column(self.options.left_on))
        self.left_order.check(values, valid)
        pieces, at = [], 0
        while True:
            end = at + split_by_key(values[at:], None if valid is None else valid[at:],
                                    self.windows.next_start)
            if end > at:
                pieces.append(self._join(batch.slice(at, end - at)))
            if end == len(values):
                return pa.concat_tables(pieces) if pieces else self._empty
            at = end
            self.windows.advance()
            self._prepared = None

    def _join(self, piece: pa.RecordBatch) -> pa.Table:
        if self._prepared is None:
            window = self.windows.window()
            try:
                prepared = AsofJoin(window.column(self.options.right_on),
                                    [window.column(c) for c in self.options.right_by] or None,
                                    device=self.options.device)
            except (TypeError, ValueError, OverflowError) as exc:
                raise EnrichError(translate(exc, self.options)) from None
            self.staleness = self.staleness.with_right(window.column(self.options.right_on))
            self._prepared = (prepared, window.select(self.plan.payload))
        prepared, payload = self._prepared
        gmap = _probe(prepared, piece, self.options, self.tolerance)
        hit = np.flatnonzero(gmap != prepared.no_match)
        self.matched += len(hit)
        self.staleness.add(piece.column(self.options.left_on), gmap, hit)
        return gather(payload, gmap)


def _schema_of(source: Source, columns: list[str], as_codes: list[str],
               positions: bool = False) -> pa.Schema:
    """The schema of ``spill_batches``: text and partition columns in ``as_codes`` come as
    dictionaries of int32 indices."""
    fields = []
    for name in columns:
        field = source.schema.field(name)  # its nullability too: the batches keep it
        if name in as_codes and not pa.types.is_dictionary(field.type):
            field = field.with_type(pa.dictionary(pa.int32(), field.type))
        fields.append(field)
    if positions:
        fields.append(pa.field(POSITION, pa.int64()))
    return pa.schema(fields)


class _Prefetch:
    """An iterator run ``DEPTH`` items ahead on a thread of its own (a context manager: on
    the way out it stops the thread)."""

    DEPTH = 2

    def __init__(self, iterator):
        self._queue: queue.Queue = queue.Queue(self.DEPTH)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(iterator,), daemon=True,
                                        name="asofgpu-prefetch")
        self._thread.start()

    def _run(self, iterator) -> None:
        try:
            for item in iterator:
                if not self._put((True, item)):
                    return
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
            self._put((False, exc))
            return
        self._put((False, None))

    def _put(self, item) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def __iter__(self):
        while True:
            ok, item = self._queue.get()
            if ok:
                yield item
            elif item is None:
                return
            else:
                raise item

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        self._thread.join()
        return False


def _batches(left: Source, part: Part, options: Options, rows: int):
    """``part``'s rows in chunks: its columns, then the partition columns the join needs."""
    needed = [options.left_on, *options.left_by]
    for batch in part.batches("LEFT", rows):
        yield left.with_partitions(part, batch, needed, as_codes=needed)


def _probe(prepared: AsofJoin, batch: pa.RecordBatch, options: Options, tolerance):
    """The chunk's gather map, on the host."""
    try:
        gmap = prepared.join(batch.column(options.left_on),
                             [batch.column(c) for c in options.left_by] or None,
                             strategy=options.strategy,
                             allow_exact_matches=options.allow_exact_matches,
                             tolerance=tolerance)
    except (TypeError, ValueError, OverflowError) as exc:
        raise EnrichError(translate(exc, options)) from None
    return prepared.backend.to_host(gmap)


def _share(part: int, whole: int) -> str:
    """A percentage that never reads 100% or 0% unless it is: 99.97% -> >99.9%."""
    if not whole or part in (0, whole):
        return "-" if not whole else f"{100 * part // whole}%"
    share = part / whole
    return ">99.9%" if share > 0.999 else "<0.1%" if share < 0.001 else f"{share:.1%}"


def peak_rss() -> int:
    """The process's peak resident memory in bytes (ru_maxrss: KiB on Linux, B on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


# --------------------------------------------------------------------------- the output


def _writer(path: str, schema: pa.Schema, options: Options, out: str) -> ParquetStitcher:
    try:
        return ParquetStitcher(path, schema, compression=options.compression,
                               compression_level=options.compression_level)
    except OSError as exc:
        raise OutputError(f"cannot write OUT {out}: {one_line(exc)}") from None


@contextlib.contextmanager
def _writing(out: str):
    """A file-system error while OUT is written, in the command's words."""
    try:
        yield
    except OSError as exc:
        raise OutputError(f"cannot write OUT {out}: {one_line(exc)}") from None
