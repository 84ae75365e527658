"""Which CPU walk runs, and every threshold that decides it (the host gathers', the key
lookups' and ``asofgpu enrich``'s copy of LEFT too): the one place to read or tune them.

A prepared probe on the cpu backend (``CpuBackend.probe``) decides, in this order:

0. ``compiles(rows)``: with numba's kernels, or, for a small launch in a process that has not
   yet spent ``interpret_seconds`` on it, with the python backend's plain-Python ones;
1. ``parallel(rows)``: on numba's thread pool, or on one thread;
2. ``searches_each_row(rows, in_order)``: a few rows out of key order binary-search each one
   (``kernels/probe.py``); the rest are walked in key order, sorted first when they are not;
3. ``streams(...)``: a batch spanning few right rows per left row, against a time-ordered right
   side, streams it (``kernels/stream.py``); any other gallops from per-group cursors
   (``kernels/cursor.py``), in ``pieces(...)`` pieces.

A one-shot join (``CpuBackend.scan``) walks both sides in key order (``kernels/scan.py``), on the
thread pool from ``parallel(rows)``; sorts of 64-bit keys take the radix sort from
``radix_sorts(rows)``.

Every threshold is a field of ``Thresholds``, read at each call from ``THRESHOLDS``.
``overridden`` is the one switch that forces a path, for tests and for the benches that set the
thresholds (``python bench/thresholds.py``):

>>> with overridden(parallel_min_rows=0):
...     parallel(1)
True
>>> parallel(1)
False

and ``recorded`` the one way to see which paths a call took, for tests that check a walk ran
without reaching into the kernels:

>>> with recorded() as decisions:
...     radix_sorts(10)
False
>>> decisions
[('radix_sorts', False)]
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import threading
import time

import numpy as np


@dataclasses.dataclass(frozen=True)
class Thresholds:
    """The CPU walks' thresholds. Each is set by ``python bench/thresholds.py NAME``, which times
    both sides of its decision on 2 threads."""

    #: Below this many rows a launch runs on one thread: waking numba's pool costs milliseconds.
    parallel_min_rows: int = 16_384
    #: Below this many map entries a gather checks its map with numpy and takes its columns
    #: by Arrow's one-core take (``asofgpu.gather``), but for fixed-width columns without
    #: nulls from ``parallel_min_rows`` entries (``gathers_in_place``).
    parallel_gather_rows: int = 1 << 16
    #: Below this many rows Arrow's one-core hash encodes group keys as fast (``_encode``).
    parallel_encode_rows: int = 1 << 16
    #: ... and a column is hashed on all cores only when at most this share of a sample of its
    #: first rows is distinct: merging the pieces' dictionaries of mostly distinct values
    #: (IDs) costs more than Arrow's one-core encoding.
    parallel_encode_distinct: float = 0.25
    #: ... and when more than this share of the rows after that sample hold values it lacks,
    #: within their first half (a column sorted by its values: quotes sorted by symbol show a
    #: few symbols in their first rows), the whole column is hashed on all cores instead of
    #: those rows being encoded on one core and appended (``_encode._look_up_rest``).
    appended_max_share: float = 0.002
    #: ... and then it is hashed on all cores only when at most this share of a sample where
    #: the lookup stopped is distinct, else by Arrow on one core: ids sorted, each a few
    #: times, merge dictionaries of millions (``_encode._encoded_again``).
    rehash_max_distinct: float = 0.01
    #: From this many rows a by column of views (polars' strings) is hashed where it lies, on
    #: all cores (``_encode._encode_views``), not cast to large strings and encoded as text:
    #: the cast copies every value, so the views win well below ``parallel_encode_rows``.
    parallel_views_rows: int = 1 << 14
    #: From this many rows a key column in several runs of chunks is copied with its order
    #: checked in the copy's pass (``order.copy_checked``): a pass over the keys fewer.
    checked_copy_min_rows: int = 1 << 14
    #: Below this many rows numpy's stable argsort is as fast as the radix sort.
    radix_min_rows: int = 1 << 15
    #: Below this many left rows out of key order, a binary search a row beats sorting them.
    search_max_rows: int = 1 << 15
    #: A sorted batch streams when its key range holds at most this many right rows a left row:
    #: the stream reads the whole range, a cursor pays a search (and a cache miss) a group.
    stream_span: int = 256
    #: ... and, where the right side has several groups, when groups x right rows a left row
    #: reach this: a few groups' cursors stay in cache and gallop cheaply.
    stream_group_span: int = 200
    #: ... and a nearest batch (which walks the stream twice) when its key range holds at least
    #: this many right rows: fewer stay in cache, where its cursors find both candidates side
    #: by side (``python bench/thresholds.py stream_nearest_min_span``: a market-data day's
    #: trades into 131,072 quotes took 0.69 ms streamed against 0.54, 524,288 2.28 against
    #: 2.19, 1,048,576 4.53 against 5.07, 4,194,304 16.2 against 18.9).
    stream_nearest_min_span: int = 1 << 19
    #: Parallel walks split into this many pieces a thread, so that uneven pieces even out.
    pieces_per_thread: int = 4
    #: Each piece keeps a cursor a group: pieces x groups stays under this many cursors.
    most_cursors: int = 1 << 23
    #: The most entries of the table in which a chunked gather finds each row's chunk
    #: (``take.chunk_blocks``): 512 KiB, which stays in cache.
    chunk_blocks: int = 1 << 16
    #: From this many rows a by column of numbers that Arrow would dictionary-encode (mostly
    #: distinct values: entity ids) is encoded by sorting instead (``_encode._encode_sorted``).
    #: In a new process (a one-shot join, ``asofgpu enrich``), preparing a join by 8M distinct
    #: int64 ids took 1.9-2.7 s with Arrow's hash and 1.0-1.2 s sorted, 20M 11.9 and 5.5 s; in
    #: one that has encoded before (the sweep), Arrow's is faster up to about 10M (8M: 0.84
    #: against 1.51 s; 20M: 3.98 against 2.81 s), and below 4M always.
    sort_encode_min_rows: int = 1 << 23
    #: Below this many rows left group keys are looked up by Arrow's ``index_in`` rather than
    #: in the right's dictionary hashed once (``_encode``): 0, since ``index_in`` hashes the
    #: dictionary again at every call, most of a small probe's time with many groups.
    hashed_lookup_min_rows: int = 0
    #: LEFT files whose row groups average fewer rows are encoded again by ``asofgpu
    #: enrich``, not copied page by page into OUT (``enrich._copy``): OUT keeps a copied
    #: file's row groups, and readers pay for each one.
    copy_min_group_rows: int = 1 << 16
    #: ... unless they average this many bytes (uncompressed) or more: a wide file's row
    #: groups of few rows (Spark's of 128 MB, 1,000 columns: about 30,000 rows) are kept
    #: too, where writing it again cost 3.5 times the copy's time.
    copy_min_group_bytes: int = 16 << 20
    #: Below this many rows a launch runs the kernels as plain Python (the python backend's,
    #: and Arrow's lookups of group keys, for every backend), while the process has spent less
    #: than ``interpret_seconds`` so:
    #: numba takes seconds to compile each kernel, and a new environment's first small join
    #: compiled for 10 s, where plain Python takes milliseconds (16K trades: about 60 ms).
    interpret_max_rows: int = 1 << 14
    #: ... and then compiles: a process that keeps making small joins has spent on plain
    #: Python about what compiling (seconds) or loading numba's cache (0.1 to 0.6 s) costs.
    interpret_seconds: float = 1.0


THRESHOLDS = Thresholds()
# The seconds this process has spent in plain-Python launches (``interpreting``).
_interpreted_seconds = 0.0
# The lists of the ``recorded`` blocks open now, each taking every decision made.
_records: list[list] = []


@contextlib.contextmanager
def recorded():
    """A list of the decisions made in the block, filled as they are made: (the deciding
    function's name, its outcome), in order, from every thread. For tests and benches that
    check which walk a call took; nested blocks each get every decision."""
    record: list = []
    _records.append(record)
    try:
        yield record
    finally:
        del _records[next(i for i, r in enumerate(_records) if r is record)]  # not an equal one


def _decision(decide):
    """``decide``, its outcomes noted in the ``recorded`` blocks open when it runs."""

    @functools.wraps(decide)
    def noted(*args, **kwargs):
        outcome = decide(*args, **kwargs)
        for record in _records:
            record.append((decide.__name__, outcome))
        return outcome

    return noted


@contextlib.contextmanager
def overridden(**changes):
    """Run the block with some thresholds changed (``Thresholds``' field names): 0 or a huge
    value forces one side of a decision. Not thread-safe: for tests and benches."""
    global THRESHOLDS
    before = THRESHOLDS
    THRESHOLDS = dataclasses.replace(before, **changes)
    try:
        yield THRESHOLDS
    finally:
        THRESHOLDS = before


@_decision
def compiles(rows: int) -> bool:
    """Whether a launch over ``rows`` rows runs numba's compiled kernels, rather than the
    plain-Python ones: always above ``interpret_max_rows``, once the process has spent
    ``interpret_seconds`` in plain Python (``interpreting``), and in a ``compiling_ahead``
    block of a job that would spend them anyway.

    >>> compiles(1 << 20)
    True
    >>> with overridden(interpret_max_rows=1 << 20, interpret_seconds=1e9):
    ...     compiles(100)
    False
    """
    t = THRESHOLDS
    return (
        rows >= t.interpret_max_rows
        or _interpreted_seconds >= t.interpret_seconds
        or getattr(_ahead, "on", False)
    )


# About what a left row costs a plain-Python probe (4.7 us on this 2-core machine, a
# prepared probe of time-sorted trades; a compiled one 0.1-0.2 us).
INTERPRETED_ROW_SECONDS = 5e-6
# Whether this thread is in a ``compiling_ahead`` block of a large job.
_ahead = threading.local()


@contextlib.contextmanager
def compiling_ahead(rows: int):
    """On this thread, compile from the block's first launch, whatever its size, where a job
    of ``rows`` left rows in all (an ``asofgpu enrich`` of many small LEFT files) would
    spend ``interpret_seconds`` in plain Python before compiling anyway: 300 files of 2,000
    rows spent 1.0 s so, where numba's cache loads in 0.1 to 0.6 s.

    >>> with overridden(interpret_max_rows=1 << 20, interpret_seconds=1.0):
    ...     with compiling_ahead(10_000):
    ...         small = compiles(100)
    ...     with compiling_ahead(1_000_000):
    ...         large = compiles(100)
    >>> small, large
    (False, True)
    """
    before = getattr(_ahead, "on", False)
    _ahead.on = before or rows * INTERPRETED_ROW_SECONDS >= THRESHOLDS.interpret_seconds
    try:
        yield
    finally:
        _ahead.on = before


def interpreted_seconds() -> float:
    """The seconds this process has spent in plain-Python launches so far."""
    return _interpreted_seconds


@contextlib.contextmanager
def interpreting():
    """Count the block's time as spent in plain-Python launches (``compiles``)."""
    global _interpreted_seconds
    start = time.perf_counter()
    try:
        yield
    finally:
        _interpreted_seconds += time.perf_counter() - start


@_decision
def parallel(rows: int) -> bool:
    """Whether a launch over ``rows`` rows runs on numba's thread pool."""
    return rows >= THRESHOLDS.parallel_min_rows


@_decision
def gathers_in_parallel(entries: int) -> bool:
    """Whether a gather map of ``entries`` is checked and its fixed-width columns taken on all
    cores (``take.py``), rather than by Arrow's take."""
    return entries >= THRESHOLDS.parallel_gather_rows


@_decision
def gathers_in_place(entries: int, nulls: int) -> bool:
    """Whether a map too small to gather on all cores (``gathers_in_parallel``) takes a
    fixed-width column by the kernels all the same, where it lies. Arrow's take of an as-of
    map, which holds NO_MATCH entries, costs 2 to 3 times theirs (20,000 entries, four
    float64 columns of 1M rows: 0.75 ms against 0.29), 1.2 to 1.7 times without NO_MATCH,
    and takes a column in many chunks a chunk at a time (100 chunks: 7.1 ms against 0.2).
    Not for a column with ``nulls``, whose validity the kernels read whole (10M rows: 9.6 ms,
    against Arrow's 4.5 for 20,000 entries); nor below ``parallel_min_rows``, where the take
    kernels would wake the thread pool (slower than Arrow once the pool has slept) and wait
    for any other parallel launch; nor where the launch would run as plain Python
    (``compiles``)."""
    return nulls == 0 and entries >= THRESHOLDS.parallel_min_rows and compiles(entries)


@_decision
def looks_up_by_hash(rows: int) -> bool:
    """Whether ``rows`` left group keys are looked up in the right's hashed dictionary
    (``kernels/hashing.py``), rather than by Arrow's ``index_in``."""
    return rows >= THRESHOLDS.hashed_lookup_min_rows and compiles(rows)


@_decision
def copies_row_groups(rows: int, groups: int, nbytes: int = 0) -> bool:
    """Whether a LEFT file of ``rows`` rows (``nbytes`` uncompressed) in ``groups``
    non-empty row groups is copied into ``asofgpu enrich``'s OUT as it is: row groups of
    ``copy_min_group_rows`` rows, or of ``copy_min_group_bytes``, on average."""
    t = THRESHOLDS
    return rows >= t.copy_min_group_rows * groups or nbytes >= t.copy_min_group_bytes * groups


@_decision
def collapses_run(
    rows: int, batch_rows: int, collapsed: int, needs_bytes: int, max_bytes: int | None
) -> bool:
    """Whether ``asofgpu enrich``'s stream collapses a growing run of one key (a state
    table's day: ``rows`` rows, batches of ``batch_rows``) to each group's first and last
    row now (``enrich._stream.first_and_last``). Never while it holds two batches or fewer
    (it goes on as a window then); past that, once it holds twice what its last collapse
    kept (``collapsed``), since each collapse reads every row kept so far (one a batch took
    time that grew with the square of the entities: 10.6 s for 8M where 4M took 2.9), or
    sooner when collapsing it later would outgrow ``max_bytes`` (``needs_bytes``: its bytes
    and what collapsing it takes).

    >>> collapses_run(6, 2, 0, 0, None), collapses_run(6, 2, 3, 0, None)
    (True, False)
    >>> collapses_run(6, 2, 3, 101, 100), collapses_run(6, 3, 0, 101, 100)
    (True, False)
    """
    if rows <= 2 * batch_rows:
        return False
    if rows > 2 * collapsed:
        return True
    return max_bytes is not None and needs_bytes > max_bytes


@_decision
def encodes_by_sorting(rows: int) -> bool:
    """Whether a column of ``rows`` numbers that Arrow would dictionary-encode is encoded by
    sorting it (``_encode._encode_sorted``) instead."""
    return rows >= THRESHOLDS.sort_encode_min_rows


@_decision
def encodes_in_parallel(rows: int) -> bool:
    """Whether a group key column of ``rows`` may be hashed on all cores (``hashing.py``)."""
    return rows >= THRESHOLDS.parallel_encode_rows


@_decision
def hashes_views(rows: int) -> bool:
    """Whether a by column of ``rows`` views is hashed where it lies (``kernels/views.py``),
    rather than cast to large strings first; never as plain Python (``compiles``)."""
    return rows >= THRESHOLDS.parallel_views_rows and compiles(rows)


@_decision
def encodes_sample_in_parallel(sample_rows: int, distinct: int) -> bool:
    """Whether a group key column whose sample of ``sample_rows`` first rows holds
    ``distinct`` values is hashed on all cores: its values repeat, as group keys do."""
    return distinct <= THRESHOLDS.parallel_encode_distinct * sample_rows


def most_appended(rows: int) -> int:
    """The most of a group key column's ``rows`` after its sample whose values the sample
    may lack, for them to be encoded on one core and appended to its dictionary; past it
    the lookup stops and the whole column is hashed on all cores. Few, in a column whose
    values repeat in every stretch of rows; most, in one sorted by its values."""
    return int(THRESHOLDS.appended_max_share * rows)


@_decision
def rehashes(sample_rows: int, distinct: int) -> bool:
    """Whether a group key column whose sample's lookup stopped (``most_appended``) is
    hashed whole on all cores, where a sample of ``sample_rows`` rows there holds
    ``distinct`` values: its values repeat, as sorted symbols do."""
    return distinct <= THRESHOLDS.rehash_max_distinct * sample_rows


@_decision
def checks_while_copying(rows: int) -> bool:
    """Whether a chunked key column of ``rows`` is copied by the kernel that checks its order
    in the same pass, rather than copied by numpy and checked by the walk."""
    return rows >= THRESHOLDS.checked_copy_min_rows and compiles(rows)


@_decision
def radix_sorts(rows: int) -> bool:
    """Whether a stable sort of ``rows`` 64-bit keys takes the radix sort (``kernels/radix.py``)
    rather than numpy's."""
    return rows >= THRESHOLDS.radix_min_rows


@_decision
def searches_each_row(rows: int, in_order: bool) -> bool:
    """Whether a prepared probe binary-searches each of its ``rows`` walked rows, rather than
    walking them: as they come when ``in_order`` or when each group's keys ascend, else in
    key order, sorted first (``CpuBackend.probe``)."""
    return not in_order and rows < THRESHOLDS.search_max_rows


@_decision
def streams(right_keys, keys, n_groups: int, pieces: int, nearest: bool = False) -> bool:
    """Whether left rows of ascending ``keys`` are cheaper to stream through the time-ordered
    ``right_keys`` than to gallop from cursors: few right rows per left row within their key
    range but not too few for the right side's ``n_groups``, and at least a row per group and
    piece (each of the ``pieces`` starts with a binary search in every group). A ``nearest``
    probe, which walks the stream twice, streams only over ``stream_nearest_min_span`` right
    rows or more, and never for one group: its one cursor finds both candidates side by side
    in cache (4M x 1M: 14 against 17 ms)."""
    t = THRESHOLDS
    if len(keys) < max(n_groups, 1) * pieces or (nearest and n_groups <= 1):
        return False
    span = int(
        np.searchsorted(right_keys, keys[-1], side="right")
        - np.searchsorted(right_keys, keys[0], side="left")
    )
    if nearest and span < t.stream_nearest_min_span:
        return False
    return span <= t.stream_span * len(keys) and (
        n_groups <= 1 or n_groups * span >= t.stream_group_span * len(keys)
    )


@_decision
def pieces(parallel: bool, threads: int, n_groups: int) -> int:
    """How many pieces a parallel walk splits into: each holds a cursor per group, so many
    groups mean fewer pieces."""
    if not parallel:
        return 1
    t = THRESHOLDS
    return max(1, min(t.pieces_per_thread * threads, t.most_cursors // max(n_groups, 1)))


@_decision
def window_cursors(rows: int, pieces: int, n_groups: int) -> bool:
    """Whether each piece of the window join's bounds keeps a cursor per group (its last
    window end, where the group's next search starts): not when the cursors would outnumber
    the rows, as the stream's rule has it."""
    return pieces * n_groups <= rows


@_decision
def sort_pieces(rows: int, n_buckets: int) -> int:
    """How many pieces the counting sort of the right rows by group runs in: a piece a
    thread on the pool, one when the pieces' counts (one per bucket each) would outnumber
    the rows."""
    from .jit import threads

    n = threads(parallel(rows))
    return n if n * n_buckets <= rows else 1


@_decision
def row_pieces(rows: int) -> int:
    """How many pieces a loop over ``rows`` rows that runs a piece at a time (the window
    join's, the calendar's reaches) splits into (one when it runs on one thread):
    ``pieces_per_thread`` a thread, as the probe's walks (the reductions of 200K trades' 5 s
    windows took 27-30 ms with 1 to 128 pieces a thread)."""
    if not parallel(rows):
        return 1
    from .jit import pool_threads

    return max(1, min(rows, THRESHOLDS.pieces_per_thread * pool_threads()))
