"""The run of ``asofgpu enrich``: the checks, the choice of how RIGHT is held (``_attach``),
each LEFT file streamed through it in chunks into its output file (``_left``), and the
summary. On the GPU, a run that holds RIGHT in memory may have libcudf read and write its
parquet (``_device_io``)."""

from __future__ import annotations

import contextlib
import math
import os
import resource
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import NamedTuple

import pyarrow as pa

from .._backend import walks
from .._backend.jit import ready_cpu_target
from .._progress import Quiet, readable_count
from .._staleness import SAMPLE
from . import _device_io as device_io
from . import _memory as memory
from ._attach import InMemory, Regrouped, Spilled, Streamed
from ._checks import (
    Options,
    Plan,
    Tolerance,
    check_options,
    check_output,
    dry_run,
    files_into_one,
    left_columns,
    memory_limit_of,
    one_out_file,
    plan,
    tolerance_of,
)
from ._errors import EnrichError
from ._file_order import (
    files_in_key_order,
    folders_unordered,
    grouped_order,
    is_tape,
    without_statistics,
)
from ._left import copied_chunks, copy_of, files_batches, how_read, join_left, joined_together
from ._output import AtomicFile, AtomicFolder
from ._prefetch import Prefetch
from ._schemas import is_text
from ._sources import Footers, Source, type_partitions
from ._spill import Narrowing, SpillFolder
from ._spill import source_batches as spill_batches
from ._stream import CarryTooLarge, NotSorted, streamable_key, tables_of

MAX_PARTITIONS = 512  # each side's partitions are open files at once
LAYOUTS = ("tape", "grouped")  # the orders a stream takes, tried in this order
# A tape of RIGHT whose sample holds this many groups a row is held in memory where it fits
# (``_mode``): 100,000 groups in 10M rows sample 0.74 and stream as fast; 1M sample 0.97.
MANY_GROUPS = 0.9


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
    copied: int = 0  # LEFT files whose columns went into OUT as they are
    device_io: bool = False  # libcudf read and wrote the parquet on the device (_device_io)

    def lines(self) -> list[str]:
        share = _share(self.matched, self.rows)
        stale = (
            f"p50 {self.p50}, p99 {self.p99} ({self.key})"
            if self.p50 is not None
            else "no matched rows"
        )
        rate = f" ({readable_count(self.rows / self.stream_s)} rows/s)" if self.stream_s > 0 else ""
        files = f"{self.files:,} files, " if self.files != 1 else ""
        return [
            f"wrote {self.out}",
            f"  rows       {self.rows:,} in {files}{self.chunks:,} chunk(s) of up to "
            f"{self.chunk_rows:,}",
            f"  attached   {', '.join(self.attached) or '(no columns)'} "
            f"from {self.right_rows:,} right rows",
            f"  LEFT's     columns {self._left_columns()}",
            f"  matched    {share} ({self.matched:,} rows; {self.rows - self.matched:,} "
            f"without a match)",
            f"  staleness  {stale}",
            f"  elapsed    {self.elapsed_s:.2f} s: {self._first_phase()} in "
            f"{self.prepare_s:.2f} s, left side streamed in {self.stream_s:.2f} s{rate}",
            f"  memory     peak {memory.readable(self.peak_rss)} resident"
            + (f", {memory.readable(self.spilled)} spilled to disk" if self.spilled else ""),
            f"  backend    {self.backend}",
        ]

    def _first_phase(self) -> str:
        if self.device_io:
            return "right side read and prepared on the device"
        return _FIRST_PHASE[self.mode]

    def _left_columns(self) -> str:
        if self.device_io:
            return "read and written again on the device by libcudf"
        if not self.copied:
            return "read and written again"
        if self.files == 1:
            return "copied as they are (their pages; only the keys were read)"
        return f"copied as they are in {self.copied:,} of {self.files:,} files"


_FIRST_PHASE = {
    "memory": "right side read and prepared",
    "stream": "checks and the first window read",
    "regroup": "LEFT's keys joined in RIGHT's order, RIGHT streamed",
    "spill": "both sides spilled and joined a partition at a time",
}


def enrich(options: Options, progress=None) -> Summary:
    """Run ``asofgpu enrich``: raises EnrichError (bad input) or OutputError (writing failed),
    and lets KeyboardInterrupt through; in every such case no output is left behind.

    A side that its statistics showed sorted but is not (row groups that do not overlap,
    unsorted inside) is found while streaming, before OUT is committed: the run starts again.
    When LEFT broke its order, RIGHT still streams and LEFT's keys are put in its order
    (``Regrouped``); when RIGHT did, with the other layout its statistics allowed (a few row
    groups of a file sorted by (symbol, time) may pass for a tape), then, under
    ``--right-mode auto``, without streaming. So too when RIGHT has too many groups to
    stream in the budget (``CarryTooLarge``)."""
    progress = progress or Quiet()
    layouts, failed, left_sorted = LAYOUTS, None, True
    while True:
        try:
            return _run(options, progress, layouts, failed, left_sorted)
        except CarryTooLarge as exc:
            if options.right_mode == "stream":
                raise EnrichError(
                    f"--right-mode stream: {exc}; raise --memory-limit, or pass "
                    f"--right-mode auto to hold RIGHT in memory or spill it"
                ) from None
            progress.log(f"{exc}: starting again without streaming")
            layouts = ()
        except NotSorted as exc:
            if exc.side == "LEFT" and left_sorted:
                left_sorted = False
            else:
                layouts = tuple(
                    layout
                    for layout in layouts
                    if layout != exc.layout and (layout == "tape" or options.right_by)
                )  # needs by
            if exc is failed or (not layouts and options.right_mode != "auto"):
                raise  # (failed: raised again by --right-mode stream, nothing else streams)
            progress.log(f"{exc.fact}: starting again" + ("" if layouts else " without streaming"))
            failed = exc


@dataclass(frozen=True)
class Run:
    """What a run has settled before it attaches RIGHT: what the join of each LEFT chunk and
    the way RIGHT is held both take."""

    options: Options
    the_plan: Plan
    left: Source
    right: Source
    tolerance: Tolerance
    as_codes: list[str]  # RIGHT's columns read as dictionary codes
    rows: int  # a chunk's rows, and a window's
    every: int  # staleness from about SAMPLE matches
    budget: int  # bytes
    out: str
    progress: Quiet  # or what else logs, counts and stops as it does (_progress)


def _run(
    options: Options,
    progress,
    layouts: tuple[str, ...],
    failed: NotSorted | None = None,
    left_sorted: bool = True,
) -> Summary:
    start = time.perf_counter()
    check_options(options)
    limit, limit_name = memory_limit_of(options)
    budget = memory.check_limit(limit, limit_name)
    # The files' footers take up to half of the budget, and what they take is the data's no
    # more: past it, the first read stay and the others are read again when asked for.
    footers = Footers(budget // 2)
    left = Source.find(options.left, "LEFT", footers)
    right = Source.find(options.right, "RIGHT", footers)
    budget -= min(footers.bytes, budget // 2)  # (one footer alone may be more)
    keys = (options.left_on, options.right_on)
    type_partitions(left, right, options.left_by, options.right_by, keys)
    tolerance = tolerance_of(options, left, right)
    with contextlib.ExitStack() as stack:
        # The checks on zero rows, on a thread of their own while this one reads statistics
        # and starts the readers (pyarrow, off the GIL). Their errors are raised where they
        # stood.
        checking = stack.enter_context(ThreadPoolExecutor(1, thread_name_prefix="asofgpu-check"))
        checked = checking.submit(dry_run, options, left.schema, right.schema, tolerance)
        # A run of fewer rows than compile or run on numba's pool (``walks.compiles`` and
        # ``walks.parallel``) leaves numba's import and pool alone: 0.2-0.3 s of a 2,000-row
        # day's 0.73 s. (Where a process has spent its plain-Python budget, such a run's
        # launches compile all the same, each on one thread.)
        t = walks.THRESHOLDS
        compiled = max(left.rows, right.rows) >= min(t.interpret_max_rows, t.parallel_min_rows)
        if compiled:
            checking.submit(_ready_cpu_target, checked)
        out, found = check_output(options, left, right)
        the_plan = plan(options, left, right)
        as_codes = _as_codes(options, the_plan, right)
        kept = _kept_dictionaries(the_plan, right)
        sizes = _sizes(options, the_plan, left, right, limit, budget, limit_name, as_codes, kept)
        share = memory.group_share(right, options.right_by)
        need = memory.right_bytes(right, the_plan.read, as_codes, share, kept)
        try:
            mode, why, grouped, streamed = _mode(
                options, left, right, need, budget, limit_name, layouts, failed, left_sorted, share
            )
        except EnrichError:
            checked.result()  # keys that cannot be joined at all: that reason first
            raise
        if streamed.left is not left:  # LEFT's files in key order: its copies go with them
            sizes = sizes._replace(copies=_in_order_of(sizes.copies, left, streamed.left))
        left, right = streamed.left, streamed.right
        if kept and mode in ("regroup", "spill"):
            # Their results are spilled and merged back in LEFT's order, each partition's
            # dictionaries with them, unified at every merge: 4M rows of notes repeated 11
            # times took 17 s spilled, at 976 MB under a 700MiB limit; 5.4-6.5 s at 680-695
            # MB as strings. As strings, then.
            kept = []
            sizes = _sizes(
                options, the_plan, left, right, limit, budget, limit_name, as_codes, kept
            )
            need = memory.right_bytes(right, the_plan.read, as_codes, share)
        rows, copies = sizes.rows, sizes.copies
        every = -(-left.rows // SAMPLE)  # staleness from about SAMPLE matches
        run = Run(
            options=options,
            the_plan=the_plan,
            left=left,
            right=right,
            tolerance=tolerance,
            as_codes=as_codes + kept,
            rows=rows,
            every=every,
            budget=budget,
            out=out,
            progress=progress,
        )
        if mode == "memory" and device_io.wanted(options):
            summary = _on_device(run, found, checked, start)
            if summary is not None:
                return summary
        reading = stack.enter_context(ThreadPoolExecutor(1, thread_name_prefix="asofgpu-read"))
        right_table = (
            reading.submit(right.read, the_plan.read, run.as_codes, last=True)
            if mode == "memory"
            else None
        )
        # Past LEFT's last row, RIGHT is read for its order check alone: its keys only.
        # Its batches are put together into tables of up to a chunk's rows on the reading
        # thread: handed over one by one, 5,000 files of 400 rows kept the join waiting on
        # the queue 0.9 s of 2.1. Putting them together holds the next batch read: one table
        # waits in the queue, not two (two held 30-90 MB more of the bench's day).
        # The windows are RIGHT's last pass but where a forward or nearest stream's first
        # pass, after them on the join's thread, reads the files again (for carries out):
        # there they keep their footers (dropped by the windows, they were read again).
        narrowing = Narrowing([options.right_on, *options.right_by])
        right_last = options.strategy == "backward"
        windows = (
            stack.enter_context(
                Prefetch(
                    tables_of(
                        spill_batches(
                            right,
                            the_plan.read,
                            run.as_codes,
                            rows,
                            narrowing=narrowing,
                            last=right_last,
                        ),
                        rows,
                    ),
                    depth=1,
                )
            )
            if mode in ("stream", "regroup")
            else None
        )
        # LEFT's files are read here for the last time, but where they are regrouped or
        # spilled, by passes of their own after this one has begun.
        left_last = mode in ("memory", "stream")
        runs = joined_together(left.parts, rows, [copied_chunks(c) is not None for c in copies])
        left_batches = stack.enter_context(
            Prefetch(files_batches(left, options, rows, copies, runs, left_last))
        )
        backend = checked.result()
        if compiled:
            stack.enter_context(_kernel_threads())
        # Many small chunks (a small --chunk-rows; small files are joined together) are
        # many joins below the size that compiles: together they would spend the
        # plain-Python budget first (walks.compiling_ahead).
        stack.enter_context(walks.compiling_ahead(left.rows))
        target = stack.enter_context(_target(options, left, out, found))
        if mode == "memory":
            attach = _in_memory(run, right_table.result(), why, kept)
        elif mode == "stream":
            attach = _streamed(run, windows, narrowing, why, grouped, kept)
        elif mode == "regroup":
            attach = _regrouped(run, windows, narrowing, why, grouped, sizes, stack)
        else:
            attach = _spilled(run, why, need, sizes, stack)
        if mode in ("memory", "spill"):  # RIGHT is read: its footers are not asked for again
            footers.release(right.parts)
        prepared_at = time.perf_counter()
        # A stream holds a window of RIGHT, not its rows: the count is the file's, said so
        rows_note = (
            "RIGHT streamed in windows, {:,} rows in all" if mode == "stream" else "{:,} right rows"
        ).format(attach.n_right)
        progress.log(
            f"{_FIRST_PHASE[mode]} ({rows_note}) in {prepared_at - start:.2f} s on {backend}"
        )
        progress.log(
            f"streaming LEFT {options.left} ({_files(left)}{left.rows:,} rows)"
            + (f": {how_read(copies[0], rows)}" if left.single else "")
        )
        counts = join_left(run, runs, left_batches, copies, target, attach)
        target.commit()
    done = time.perf_counter()
    staleness = attach.staleness
    return Summary(
        out=str(options.out),
        files=len(left.parts),
        rows=counts.rows,
        matched=attach.matched,
        chunks=counts.chunks,
        chunk_rows=counts.largest,
        attached=the_plan.names,
        right_rows=attach.n_right,
        key=f"LEFT {options.left_on} minus RIGHT {options.right_on}",
        p50=staleness.readable(0.5),
        p99=staleness.readable(0.99),
        prepare_s=prepared_at - start,
        stream_s=done - prepared_at,
        elapsed_s=done - start,
        backend=backend,
        peak_rss=peak_rss(),
        spilled=attach.spilled,
        mode=mode,
        copied=sum(copied_chunks(c) is not None for c in copies),
    )


# --------------------------------------------------------------------------- RIGHT held


def _in_memory(run: Run, table: pa.Table, why: str, kept: list[str]) -> InMemory:
    """RIGHT read whole (``table``) and prepared."""
    options, right = run.options, run.right
    run.progress.log(
        f"reading RIGHT {options.right} ({_files(right)}{right.rows:,} rows) into "
        f"memory: {why}{_as_codes_note(kept)}"
    )
    return InMemory(options, run.the_plan, table, run.tolerance, run.every)


def _streamed(
    run: Run, windows: Prefetch, narrowing: Narrowing, why: str, grouped: bool, kept: list
) -> Streamed:
    """RIGHT streamed in ``windows`` beside LEFT, both in (by..., key) order when
    ``grouped``, else in key order."""
    options, right = run.options, run.right
    order = (*options.right_by, options.right_on) if grouped else options.right_on
    run.progress.log(
        f"{why}: streaming RIGHT {options.right} ({_files(right)}"
        f"{right.rows:,} rows, sorted by {order!r}) in windows of "
        f"up to {run.rows:,} rows{_as_codes_note(kept)}"
    )
    return Streamed(
        options,
        run.the_plan,
        run.left,
        right,
        windows,
        run.as_codes,
        run.tolerance,
        run.rows,
        run.every,
        grouped,
        narrowing,
        run.budget // 4,
    )


def _regrouped(
    run: Run,
    windows: Prefetch,
    narrowing: Narrowing,
    why: str,
    grouped: bool,
    sizes: _Sizes,
    stack: contextlib.ExitStack,
) -> Regrouped:
    """RIGHT streamed in ``windows``, LEFT's keys put in its order: in memory, or in key
    ranges spilled to a folder that ``stack`` removes."""
    options, right, left = run.options, run.right, run.left
    # LEFT's keys, each row's position (8 bytes) and what is attached to it
    held = left.rows * (sizes.keys_row + 8 + sizes.payload_row)
    k = options.spill_partitions or _left_ranges(held, run.budget)
    spill = stack.enter_context(_spill_folder(options, run.out)) if k > 1 else None
    order = (*options.right_by, options.right_on) if grouped else options.right_on
    run.progress.log(
        f"{why}: streaming RIGHT {options.right} ({_files(right)}"
        f"{right.rows:,} rows, sorted by {order!r}) in windows of up to "
        f"{run.rows:,} rows, LEFT's keys put in that order"
        + (f" in {k} ranges in {spill.path}" if k > 1 else " in memory")
    )
    return Regrouped(
        options,
        run.the_plan,
        left,
        right,
        windows,
        run.as_codes,
        run.tolerance,
        spill,
        k,
        run.rows,
        run.every,
        run.progress,
        grouped,
        narrowing,
        run.budget // 4,
    )


def _spilled(run: Run, why: str, need: int, sizes: _Sizes, stack: contextlib.ExitStack) -> Spilled:
    """Both sides spilled to hash partitions in a folder that ``stack`` removes, each
    partition joined in memory."""
    options, left = run.options, run.left
    k = options.spill_partitions or _partitions(
        need, run.budget, left.rows * (sizes.left_row + sizes.payload_row)
    )
    spill = stack.enter_context(_spill_folder(options, run.out))
    run.progress.log(f"{why}: spilling both sides to {k} hash partitions in {spill.path}")
    return Spilled(
        options,
        run.the_plan,
        left,
        run.right,
        run.as_codes,
        run.tolerance,
        spill,
        k,
        run.rows,
        run.every,
        need,
        run.budget,
        run.progress,
    )


def _target(options: Options, left: Source, out: str, found: dict) -> AtomicFile | AtomicFolder:
    """Where the run writes OUT, hidden until its commit: one file (``one_out_file``), else
    a folder, whose contents ``check_output`` ``found`` (the commit compares)."""
    return AtomicFile(out) if one_out_file(options, left) else AtomicFolder(out, found)


def _on_device(run: Run, found: dict, checked, start: float) -> Summary | None:
    """The run with libcudf reading and writing the parquet (``_device_io``), into a hidden
    file or folder as the host pipeline's, committed the same way; None, and why in the log
    when the join runs on the GPU, where the host pipeline must do it."""
    options, the_plan, tolerance = run.options, run.the_plan, run.tolerance
    left, right, out, progress = run.left, run.right, run.out, run.progress
    backend = checked.result()
    why = device_io.device_io_refusal(
        options, the_plan, tolerance, left, right, backend
    ) or device_io.libcudf_refusal(options)
    if why is None:
        try:
            with _target(options, left, out, found) as target:
                done = device_io.enrich(
                    options,
                    the_plan,
                    tolerance,
                    left,
                    right,
                    target,
                    out,
                    run.rows,
                    run.every,
                    progress,
                )
                target.commit()
        except device_io.Unsupported as exc:
            why = f"{exc}; starting again"
    if why is not None:
        if backend == "cuda":
            progress.log(f"parquet read and written on the host: {why}")
        return None
    end = time.perf_counter()
    return Summary(
        out=str(options.out),
        files=len(left.parts),
        rows=done.rows,
        matched=done.matched,
        chunks=len(left.parts),  # each file read, joined and written whole
        chunk_rows=done.largest,
        attached=the_plan.names,
        right_rows=right.rows,
        key=f"LEFT {options.left_on} minus RIGHT {options.right_on}",
        p50=done.staleness.readable(0.5),
        p99=done.staleness.readable(0.99),
        prepare_s=done.prepared_at - start,
        stream_s=end - done.prepared_at,
        elapsed_s=end - start,
        backend=backend,
        peak_rss=peak_rss(),
        device_io=True,
    )


def _ready_cpu_target(checked) -> None:
    """numba's CPU target set up for the first compiled launch, after the dry run (on the
    same thread) chose the CPU: beside this thread's reading of statistics and row groups,
    much of it off the GIL, it takes less of the run's time (4M x 2M, whole processes,
    medians of 15 alternating runs: 0.86 s -> 0.82 s; 1M x 1M and 10M x 10M within the
    noise). A run of fewer rows than compile stays in plain Python and skips it; a failure
    here is met again, and raised, where the join imports numba."""
    if checked.exception() is None and checked.result().startswith("cpu"):
        ready_cpu_target()


@contextlib.contextmanager
def _kernel_threads():
    """The join's CPU kernels on half of the cores, on this thread: the encoders (a thread a
    core) and the readers keep the others busy, and a kernel split over busy cores waits for
    its slowest thread. (10M x 10M on 2 cores, one kernel thread instead of two: 0.5 s less
    CPU, 0.3 s less wall.)"""
    import numba

    from .._backend.jit import pool_threads

    before = pool_threads()
    numba.set_num_threads(max(1, min(before, (os.cpu_count() or 1) // 2)))
    try:
        yield
    finally:
        numba.set_num_threads(before)


def _files(source: Source) -> str:
    n = len(source.parts)
    return "" if source.single else f"{n:,} file{'' if n == 1 else 's'}, "


def _as_codes(options: Options, the_plan: Plan, right: Source) -> list[str]:
    """RIGHT's by-columns read as dictionary columns: parquet stores text as dictionary
    pages, so the reader hands over each row group's codes instead of building millions of
    strings (10M quotes: 0.2 s instead of 1.0 s), and the join encodes the small
    dictionaries. Partition by-columns come as one-value dictionaries for the same reason."""
    return [
        c
        for c in options.right_by
        if c not in the_plan.payload
        and (is_text(right.schema.field(c).type) or c not in right.data_schema.names)
    ]


def _kept_dictionaries(the_plan: Plan, right: Source) -> list[str]:
    """RIGHT's attached text columns that its files keep as dictionaries of few values
    (``memory.kept_dictionary``): read as codes too, gathered and written as they are, where
    RIGHT is held in memory or streamed beside a sorted LEFT."""
    return [
        c
        for c in the_plan.payload
        if c in right.data_schema.names and memory.kept_dictionary(right, c)
    ]


def _as_codes_note(kept: list[str]) -> str:
    """The log's word on the attached text read as codes."""
    if not kept:
        return ""
    return f"; attached text kept as dictionary codes: {', '.join(kept)}"


class _Sizes(NamedTuple):
    left_row: float  # bytes a LEFT row takes read whole
    payload_row: float  # bytes the attached columns take a LEFT row
    rows: int  # LEFT rows a chunk
    keys_row: float  # bytes a row of LEFT's keys takes
    copies: list  # each LEFT file's ``copy_of``


def _sizes(
    options: Options,
    the_plan: Plan,
    left: Source,
    right: Source,
    limit: int,
    budget: int,
    limit_name: str,
    as_codes: list[str],
    kept: list[str],
) -> _Sizes:
    """What a row of each side takes, LEFT's chunks, and which LEFT files are copied, with
    RIGHT's ``as_codes`` and ``kept`` columns read as codes; a limit that cannot hold a row
    group of a side twice over is refused."""
    written = the_plan.schema.names[: len(the_plan.schema) - len(the_plan.payload)]
    left_row = memory.row_bytes(left, written)  # (--one-file: partition columns too, as codes)
    payload_row = memory.row_bytes(right, the_plan.payload, as_codes, kept)
    one_file = one_out_file(options, left)
    writers = 1 if one_file else 2  # a run's files, and the last run's closing
    rows = memory.chunk_rows(limit, options.chunk_rows, left_row, payload_row, writers)
    # A LEFT file copied into OUT as it is has only its keys read (its by columns as codes),
    # so its row groups may be as large as those allow: a LEFT of 44 columns was held to
    # chunks of its whole width, too small for its row groups of 1M rows, and decoded and
    # encoded again (1.7x polars' time, 2.2 GiB against 1.3).
    keys_row = memory.row_bytes(left, left_columns(options), options.left_by)
    copy_rows = memory.chunk_rows(limit, options.chunk_rows, keys_row, payload_row, writers)
    copies = [copy_of(part, the_plan, options, copy_rows) for part in left.parts]
    if files_into_one(options, left):  # (a copy is of one LEFT file's row groups and footer)
        copies = [f"--one-file writes LEFT's {len(left.parts):,} files into one"] * len(copies)
    # A copied LEFT file's row groups are read as their keys: a 44-column LEFT that runs in
    # 448 MiB was refused at 1GiB when its row groups were counted whole.
    copied_paths = {part.path for part, copy in zip(left.parts, copies) if copied_chunks(copy)}
    keys = left_columns(options)
    for source, codes, read in (
        (left, options.left_by, lambda part: keys if part.path in copied_paths else None),
        (right, as_codes + kept, lambda part: None),
    ):
        largest = memory.largest_row_group(source, codes, read)
        if 2 * largest > budget:
            raise EnrichError(
                f"--memory-limit {limit_name} cannot hold a row group of {source.side} "
                f"({largest >> 20} MiB as read) twice over; raise it, or write the files "
                f"with smaller row groups"
            )
    return _Sizes(left_row, payload_row, rows, keys_row, copies)


def _mode(
    options: Options,
    left: Source,
    right: Source,
    need: int,
    budget: int,
    limit_name: str,
    layouts: tuple[str, ...],
    failed: NotSorted | None,
    left_sorted: bool = True,
    share: float = 0.0,
) -> tuple[str, str, bool, _Layout]:
    """How RIGHT is held (memory, stream, regroup or spill), why, for the log, whether a
    stream is grouped (sorted by the by columns, then the key) rather than a tape, and the
    sides as the mode reads them (``_Layout``'s, where it streams: their files may be in key
    order; else as given);
    ``layouts``: RIGHT's still to try, after ``failed`` found one wrong; ``left_sorted``:
    False once LEFT broke the order its statistics promised; ``share``: the groups a row of
    RIGHT brings, in a sample (``memory.group_share``)."""
    mode = options.right_mode
    given = _Layout("", False, "", "", left, right)
    if mode == "auto" and options.spill_partitions is not None:
        return "spill", f"--spill-partitions {options.spill_partitions}", False, given
    if mode == "memory" and need > budget // 2:  # the user's choice, over the estimate
        return (
            mode,
            f"--right-mode memory, though it needs about {memory.readable(need)} prepared, "
            f"more than half of what --memory-limit {limit_name} leaves (the limit then "
            f"bounds LEFT's chunks, not RIGHT)",
            False,
            given,
        )
    if mode in ("memory", "spill"):
        return mode, f"--right-mode {mode}", False, given
    sides = _layout(options, left, right, layouts, left_sorted)
    layout, alike, not_streamed, hint = sides.layout, sides.alike, sides.why, sides.hint
    grouped = layout == "grouped"
    if mode == "stream":
        if not_streamed:
            raise failed or EnrichError(f"--right-mode stream: {not_streamed}{hint}")
        if options.spill_partitions is not None and alike:
            raise EnrichError(
                "--spill-partitions: nothing spills when both sides stream "
                "(it sets LEFT's ranges when only RIGHT is sorted)"
            )
        return ("stream" if alike else "regroup"), "--right-mode stream", grouped, sides
    by = ", ".join(repr(c) for c in options.right_by)
    fits = f"it fits (about {memory.readable(need)} prepared)"
    # A forward or nearest stream reads RIGHT twice, its first pass for each window's carry
    # out: held in memory, RIGHT is read once (2M x 4M, forward: 0.88-1.03 s against
    # 1.13-1.20, and 140 MiB less at peak; 10M x 10M: 1.80-2.03 s against 2.16-2.23, 200 MiB
    # more).
    if alike and options.strategy != "backward" and need <= budget // 2:
        return (
            "memory",
            f"{fits}, and a {options.strategy} stream would read RIGHT twice",
            False,
            given,
        )
    # A tape whose sample is nearly all groups of their own (entities' states, not a market's
    # symbols) carries about a row a group from window to window, each window encoding its
    # carry again: held in memory where it fits (1M string groups, 1M x 10M: 4.7-5.6 s
    # against 14-16 s streamed; 1M int groups, 2M x 4M: 1.5 s against 2.0-2.4 s).
    if layout == "tape" and alike and share >= MANY_GROUPS and need <= budget // 2:
        return (
            "memory",
            f"{fits}, and RIGHT's rows are nearly all groups of their own (a stream would "
            f"carry every group from window to window)",
            False,
            given,
        )
    # Both sides sorted alike stream whether RIGHT fits or not, backward: less memory, less
    # time (10M x 10M in (symbol, time) order: 2.8 s streamed, 3.3 s in memory).
    if layout == "tape" and alike:
        return "stream", "both sides are sorted by their key", False, sides
    if grouped and alike:
        return (
            "stream",
            f"both sides are sorted by their by columns ({by}), then their key",
            True,
            sides,
        )
    if need <= budget // 2:
        if layout:  # RIGHT's order allows a stream, LEFT's does not
            return "memory", f"{fits}, and LEFT is not sorted as RIGHT is", False, given
        return "memory", f"{fits}, and {not_streamed}", False, given
    too_large = (
        f"needs about {memory.readable(need)} prepared, more than half of what "
        f"--memory-limit {limit_name} leaves"
    )
    if layout:  # RIGHT streams, LEFT's keys are put in its order: RIGHT is never written
        order = f"its by columns ({by}), then its key" if grouped else "its key"
        return "regroup", f"RIGHT is sorted by {order}, and {too_large}", grouped, sides
    return "spill", f"RIGHT {too_large}", False, given


class _Layout(NamedTuple):
    """How RIGHT streams (``_layout``): ``layout``, "tape" or "grouped" ("" where it cannot,
    ``why`` not, and the ``hint`` of another mode), whether LEFT is in that order too
    (``alike``), and the two sides as a stream reads them: a side's files in the order of
    their keys where their paths' order is none a stream takes (``files_in_key_order``)."""

    layout: str
    alike: bool
    why: str
    hint: str
    left: Source
    right: Source


def _layout(
    options: Options,
    left: Source,
    right: Source,
    layouts: tuple[str, ...] = LAYOUTS,
    left_sorted: bool = True,
) -> _Layout:
    """The first of ``layouts`` ("tape", "grouped") that RIGHT's statistics allow, both
    sides' if they can, and whether LEFT's allow it too; or "", False, why RIGHT cannot be
    streamed and, where another mode joins what no stream can, the hint saying so."""
    left_type = left.schema.field(options.left_on).type
    right_type = right.schema.field(options.right_on).type
    if not streamable_key(left_type, right_type):
        why = (
            f"streaming needs keys of one integer type (not uint64) or one temporal type and "
            f"unit on both sides, and LEFT column {options.left_on!r} is {left_type}, RIGHT "
            f"column {options.right_on!r} {right_type}"
        )
        return _Layout("", False, why, "; --right-mode memory or spill joins them", left, right)
    sides = ((right, options.right_on, options.right_by), (left, options.left_on, options.left_by))
    # Each check reads a side's first row group: each side is checked once.
    tape = [is_tape(source, on) for source, on, _ in sides]
    tape[1] = tape[1] and left_sorted
    if "tape" in layouts and all(tape):
        return _Layout("tape", True, "", "", left, right)
    # (a side of partition folders in their values' order: ``grouped_order``)
    in_groups, not_grouped = zip(*(grouped_order(source, by, on) for source, on, by in sides))
    grouped = [source is not None for source in in_groups]
    grouped[1] = grouped[1] and left_sorted
    if "grouped" in layouts and all(grouped):
        return _Layout("grouped", True, "", "", in_groups[1], in_groups[0])
    # A side in no order by its files' paths may be a tape by its files' keys (numbered
    # files: part-10 sorts before part-2). Not one in an order already: that order streams,
    # and its files' statistics are not all read again (5,000 files: 0.13 s).
    keyed = [source for source, _, _ in sides]
    tie = ""  # where a tie across two of RIGHT's files alone keeps them from a tape, which
    if "tape" in layouts:
        for i, (source, on, _) in enumerate(sides):
            if tape[i] or grouped[i] or (i == 1 and not left_sorted):
                continue
            ordered, blocked = files_in_key_order(source, on, ties_by_path=i == 0)
            tie = blocked if i == 0 else tie
            if ordered is not source:  # a tape in key order, its first row group read
                keyed[i], tape[i] = ordered, True
        if all(tape):
            return _Layout("tape", True, "", "", keyed[1], keyed[0])
    for layout, sorted_as in (("tape", tape), ("grouped", grouped)):  # RIGHT's alone
        if layout in layouts and sorted_as[0]:
            return _Layout(
                layout, False, "", "", left, (keyed if layout == "tape" else in_groups)[0]
            )
    if layouts != LAYOUTS:  # one was tried
        return _Layout("", False, "RIGHT was not sorted after all", "", left, right)
    on, by = options.right_on, options.right_by
    unknown = without_statistics(right, on)
    if unknown is not None:
        why = (
            f"whether RIGHT {right.given} is sorted by {on!r} cannot be told without reading "
            f"it: its footers give no min/max statistics for {on!r} ({unknown})"
        )
        if by:
            why += f", nor do they show it sorted by {(*by, on)!r}"
        return _Layout("", False, why, "; --right-mode memory or spill joins it", left, right)
    unordered = folders_unordered(right, by)
    orders = repr(on) + (f" nor by {(*by, on)!r}" if by and not unordered else "")
    why = (
        f"RIGHT {right.given} is not sorted by {orders}, as far as its row-group statistics "
        f"and first row group show"
    )
    if unordered:
        why += f", and an order by {(*by, on)!r} is not looked for: {unordered}"
    elif not_grouped[0]:
        why += f": {not_grouped[0]}"  # (why not grouped; a tape's why is its overlaps)
    if tie:
        why += (
            f"; its files would be, taken in their keys' order, but {tie}, and rows of "
            f"equal keys are in the order of their files' paths: name the files so that "
            f"their paths sort as their keys do (part-09 before part-10)"
        )
    return _Layout("", False, why, "", left, right)


def _in_order_of(copies: list, before: Source, after: Source) -> list:
    """``copies``, one a file of ``before``, in the order of ``after``'s files."""
    at = {part.path: i for i, part in enumerate(before.parts)}
    return [copies[at[part.path]] for part in after.parts]


def _spill_folder(options: Options, out: str) -> SpillFolder:
    if options.tmp_dir is not None:
        return SpillFolder(os.fspath(options.tmp_dir))
    return SpillFolder(os.path.dirname(out), "OUT's folder (--tmp-dir unset)")


def _left_ranges(left_bytes: float, budget: int) -> int:
    """How many ranges LEFT's keys are regrouped in: one, held in memory, while its keys and
    attached columns, held ``REGROUP_COPIES`` times over, take at most a quarter of the
    budget; else enough that each does."""
    need = memory.REGROUP_COPIES * left_bytes
    return min(max(1, math.ceil(4 * need / budget)), MAX_PARTITIONS)


def _partitions(right_need: int, budget: int, left_bytes: float) -> int:
    """Partitions enough that one holds a quarter of the budget of RIGHT prepared, and of
    LEFT's keys and attached columns: room for skew between partitions."""
    k = max(math.ceil(4 * right_need / budget), math.ceil(4 * left_bytes / budget), 2)
    return min(k, MAX_PARTITIONS)


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
