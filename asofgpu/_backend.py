"""Builds and launches the kernels: numba's jit, its cache and the backends live here (cupy and
numba are also imported by ``_intrinsics``, ``_columns`` and the GPU front ends).

Three backends run the same ``kernels/`` source:

- ``python``: the identity jit, a plain loop (unit tests, pdb);
- ``cpu``: ``numba.njit`` with ``prange``, arrays in numpy. A prepared probe of a batch in key
  order (or radix-sorted into it: ``kernels/radix.py``) gallops from per-group cursors
  (``kernels/cursor.py``), or streams a time-sorted right side when the batch spans few
  right rows a row (``kernels/stream.py``); a small unordered batch binary-searches per
  row. One-shot joins walk both sides in key order instead (``scan``, ``kernels/scan.py``).
  Large payload gathers (``kernels/take.py``), the hashing of large text and fixed-width
  group keys and the lookup of left group keys in the right's dictionary
  (``kernels/hashing.py``, its kinds in ``kernels/strings.py`` and
  ``kernels/fixed_width.py``) run here too, for every backend;
- ``cuda``: ``numba.cuda.jit(device=True)`` under a thin kernel, arrays in cupy (numpy under the
  CUDA simulator, ``NUMBA_ENABLE_CUDASIM=1``).

Each also sorts the right side on its own device: the radix sort and a numba counting sort
by group on the host, cupy's stable radix sort on the device.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import tempfile
import threading
import warnings
from pathlib import Path

import numpy as np

from ._host_pool import HOST_POOL
from .kernels import bind, cursor, fixed_width, probe, radix, scan, stream, strings, take, views
from .kernels.probe import NEAREST

CUDA_THREADS = 256
# numba-cuda's warning at every launch of under 128 blocks (its class moved between numba and
# numba-cuda, so the message names it).
_LOW_OCCUPANCY = r"Grid size \d+ will likely result in GPU under-utilization"
PARALLEL_MIN_ROWS = 16_384  # below this, the cpu backend probes on one thread
_PARALLEL_LAUNCH = threading.Lock()


def _py_unsigned(x):
    """For the python backend and the simulator: Python ints make every gap exact."""
    return int(x)


def _identity(fn):
    return fn


def cudasim_enabled() -> bool:
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def host_empty(n: int, dtype) -> np.ndarray:
    """``numpy.empty`` for large host arrays, lent by ``asofgpu.host_pool``.

    The first write to a fresh page faults, and numba's own allocations get fresh pages each
    time: 80 MB written there cost 60 ms here, against 9 ms in pages kept from earlier joins.
    The pool keeps those pages even where Arrow's allocator would hand them back while idle.
    """
    return HOST_POOL.empty(n, dtype)


class Backend:
    """Sort the right side and probe it, on one device."""

    name = ""

    def __init__(self):
        self.xp = np
        self._probes = {}

    # ---- arrays
    def empty(self, n: int, dtype):
        return self.xp.empty(n, dtype=dtype)

    def asarray(self, arr):
        return self.xp.asarray(arr)

    def to_host(self, arr) -> np.ndarray:
        return np.asarray(arr)

    def stable_argsort(self, values):
        return np.argsort(values, kind="stable")

    def group_sort(self, order, bucket, n_groups: int, keys):
        """Stable sort of ``order`` by ``bucket[order]`` (values 0..n_groups, the last bucket
        holding discarded rows). Returns the reordered rows, their keys and the offsets of
        the n_groups + 1 buckets."""
        bucket_of = bucket[order]
        by_group = self.stable_argsort(bucket_of)
        counts = (self.xp.bincount(bucket_of, minlength=n_groups + 1) if len(bucket_of)
                  else self.xp.zeros(n_groups + 1, dtype=np.int64))  # cupy's refuses empty input
        offsets = self.xp.zeros(n_groups + 2, dtype=np.int64)
        self.xp.cumsum(counts, out=offsets[1:])
        rows = order[by_group]
        return rows, keys[rows], offsets

    # ---- the kernel
    def probe(self, is_float: bool, left_keys, left_groups, offsets, right_keys, rows_last,
              rows_first, strategy: int, exact: bool, tol, nearest_tie: int, out,
              time_ordered=None) -> None:
        """``time_ordered``: None, or the right side's (keys, group codes) in its own row
        order when its keys ascend and every row is in a group; the cpu may stream it."""
        has_tol = tol is not None
        tol = (np.float64(tol) if is_float else np.uint64(tol)) if has_tol else (
            np.float64(0) if is_float else np.uint64(0))
        no_match = np.iinfo(out.dtype).min
        self._launch(is_float, left_keys, left_groups, offsets, right_keys, rows_last,
                     rows_first, strategy, exact, has_tol, tol, nearest_tie, no_match, out,
                     time_ordered=time_ordered)

    def _launch(self, is_float, *args, time_ordered=None):
        raise NotImplementedError


class PythonBackend(Backend):
    name = "python"

    def _launch(self, is_float, *args, time_ordered=None):  # one search a row, always
        if is_float not in self._probes:
            self._probes[is_float] = probe.build(_identity, is_float, _py_unsigned)
        probe_row = self._probes[is_float]
        with np.errstate(over="ignore"):  # float gaps past the largest double are inf
            for i in range(len(args[-1])):
                probe_row(i, *args)


class CpuBackend(Backend):
    name = "cpu"

    def empty(self, n: int, dtype):
        return host_empty(n, dtype)

    def group_sort(self, order, bucket, n_groups, keys):
        rows = host_empty(order.size, order.dtype)
        sorted_keys = host_empty(order.size, keys.dtype)
        offsets = _counting_sort()(order, bucket, n_groups + 1, keys, rows, sorted_keys)
        return rows, sorted_keys, offsets

    def stable_argsort(self, values):
        """numpy's stable argsort of 64-bit keys is a timsort: large key arrays take the
        parallel radix sort (kernels/radix.py) instead."""
        if len(values) < RADIX_MIN_ROWS or values.dtype not in (np.int64, np.uint64,
                                                                 np.float64):
            return super().stable_argsort(values)
        with _PARALLEL_LAUNCH:
            rows = _row_numbers(len(values))
            order = _radix_order(rows, values, values.dtype == np.float64, _threads(True))[0]
        return order.astype(np.int64, copy=False)

    def _launch(self, is_float, *args, time_ordered=None):
        (left_keys, left_groups, offsets, sorted_keys, rows_last, rows_first, strategy, exact,
         has_tol, tol, nearest_tie, no_match, out) = args
        # Waking numba's thread pool costs milliseconds: small probes run on one thread.
        parallel = len(out) >= PARALLEL_MIN_ROWS
        # numba's workqueue threading layer (the one without TBB or OpenMP) aborts the process
        # on concurrent parallel launches; joins from several threads take turns instead.
        with _PARALLEL_LAUNCH if parallel else contextlib.nullcontext():
            threads = _threads(parallel)
            _, is_sorted = _cpu_scan(is_float, parallel)
            n_groups = len(offsets) - 1
            rows = _walked_rows(left_groups >= 0)
            in_order = is_sorted(left_keys, rows)
            if not in_order and len(rows) < RADIX_MIN_ROWS:
                _cpu_probe_all(is_float, parallel)(*args)  # few rows: a search each
                return
            # The walks read keys and groups in walk order, and write each answer in its row.
            keys, groups, rows = _in_key_order(rows, in_order, left_keys, left_groups, n_groups,
                                               is_float, threads)
            if time_ordered is not None and strategy != NEAREST and _streams(
                    time_ordered[0], keys, n_groups, threads):
                right_keys, right_groups = time_ordered
                _cpu_stream_probe(is_float, parallel)(
                    rows, keys, groups, right_keys, right_groups, offsets, sorted_keys,
                    rows_last, rows_first, strategy, exact, has_tol, tol, no_match, threads,
                    out)
                return
            # In key order each group's answers only move forward: gallop from cursors.
            _cpu_cursor_probe(is_float, parallel)(
                rows, keys, groups, offsets, sorted_keys, rows_last, rows_first, strategy, exact,
                has_tol, tol, nearest_tie, no_match, _pieces(parallel, threads, n_groups), out)

    def scan(self, is_float: bool, left_keys, left_groups, right_keys, right_groups,
             n_groups: int, strategy: int, exact: bool, tol, nearest_tie: int, out) -> None:
        """The one-shot merge scan (kernels/scan.py). ``left_groups`` holds -1 for rows that
        match nothing; ``right_groups`` (None: one group) holds n_groups for rows to skip."""
        if right_groups is None:
            right_groups = np.zeros(len(right_keys), dtype=np.int32)
        parallel = len(out) + len(right_keys) >= PARALLEL_MIN_ROWS
        join, is_sorted = _cpu_scan(is_float, parallel)
        threads = _threads(parallel)
        n_chunks = _pieces(parallel, threads, n_groups)
        has_tol = tol is not None
        tol = (np.float64(tol) if is_float else np.uint64(tol)) if has_tol else (
            np.float64(0) if is_float else np.uint64(0))
        no_match = np.iinfo(out.dtype).min
        how = scan.Options(np.int64(strategy), bool(exact), has_tol, tol,
                           np.int64(nearest_tie), np.int64(no_match))
        with _PARALLEL_LAUNCH if parallel else contextlib.nullcontext():
            left = _walk_order(left_groups >= 0, left_keys, left_groups, n_groups, is_float,
                               is_sorted, threads)
            right = _walk_order(right_groups < n_groups, right_keys, right_groups, n_groups,
                                is_float, is_sorted, threads)
            join(*left, *right, max(n_groups, 1), n_chunks, how, out)


RADIX_MIN_ROWS = 1 << 15  # below this numpy's stable argsort is as fast

# A batch streams the time-ordered right side (kernels/stream.py) when its key range holds
# at most this many right rows per left row. The cursor's cost per left row grows with the
# groups (a cache miss each once they pass the cache) and its start (a search per piece and
# group) is fixed, while the stream reads the whole range. Measured on 2 threads, a right
# side of 10M uniform int64 keys in 1 to 1,000 groups probed by time-sorted batches, each
# path forced through this constant (medians of 11; the stream's time over the cursor's):
# 0.61-0.93 at 256 right rows per left row, 0.39-0.74 at 128, 0.63-1.03 at 333. At 10 the
# stream took 0.5x with 100 or 1,000 groups, but 1.35x with 10 (whose cursors stay in cache).
STREAM_SPAN = 256
# But a few groups' cursors stay in cache and gallop cheaply, while the stream pays the same
# per left row whatever the groups. Forced each way (as above, medians of 15), the cursors
# took 0.45-0.55x the stream's time with 3 or 5 groups at 1 to 10 right rows per left row,
# 0.71-0.78x with 5 groups at 20 and 3 at 30, 0.58-0.86x with 10 or 16 groups at 3, 16 at 10
# and 100 at 1, and 0.74-1.1x with 10 groups at 10 (three runs); 30 groups at 3 took the same
# either way, at 10 the stream 0.64x. So where the right side has several groups, a batch
# streams only where its groups x right rows per left row reach this. One group streams: its
# cursor took 0.72-1.22x the stream's time, no clear winner. (The groups are the right
# side's: a batch that touches a few of many groups streams; that was not measured.)
STREAM_GROUP_SPAN = 200


def _streams(right_keys, keys, n_groups: int, pieces: int) -> bool:
    """Whether left rows of ascending ``keys`` are cheaper to stream than to search: few
    right rows per left row within their key range but not too few for the right side's
    ``n_groups``, and at least a row per group and piece (each of the ``pieces`` starts with
    a binary search in every group)."""
    if len(keys) < max(n_groups, 1) * pieces:
        return False
    span = int(np.searchsorted(right_keys, keys[-1], side="right")
               - np.searchsorted(right_keys, keys[0], side="left"))
    return span <= STREAM_SPAN * len(keys) and (
        n_groups <= 1 or n_groups * span >= STREAM_GROUP_SPAN * len(keys))


def _threads(parallel: bool) -> int:
    if not parallel:
        return 1
    import numba

    return numba.get_num_threads()


def _pieces(parallel: bool, threads: int, n_groups: int) -> int:
    """Parallel walks split into pieces; each holds a (pieces x groups) state, so many
    groups mean fewer pieces."""
    if not parallel:
        return 1
    return max(1, min(4 * threads, (1 << 23) // max(n_groups, 1)))


def _walk_order(walked, keys, groups, n_groups: int, is_float: bool, is_sorted,
                threads: int):
    """(keys, groups, row numbers) of the ``walked`` rows in ascending key order, equal keys
    of a group in row order: what the merge scan reads (time-sorted data with every row
    walked: the caller's own arrays). ``groups`` holds codes below ``n_groups`` for walked
    rows. The caller holds the parallel-launch lock."""
    rows = _walked_rows(walked)
    return _in_key_order(rows, is_sorted(keys, rows), keys, groups, n_groups, is_float,
                         threads)


def _in_key_order(rows, in_order: bool, keys, groups, n_groups: int, is_float: bool,
                  threads: int):
    """``_walk_order`` of the walked ``rows``, ``in_order`` when their keys ascend."""
    if in_order:
        if len(rows) == len(keys):
            return keys, groups, rows
        return keys[rows], groups[rows], rows
    if len(rows) < RADIX_MIN_ROWS:
        order = rows[np.argsort(keys[rows], kind="stable")]
        return keys[order], groups[order], order
    # The sorted keys and groups come back from the sorted order bits (the groups are sorted
    # with the keys where both fit in 64 bits), not by numpy's (slow, random) take.
    _, _, _, keys_from_bits, take_int32 = _cpu_radix(threads > 1)
    group_bits = max(n_groups - 1, 0).bit_length()
    order, bits, low, group_bits = _radix_order(rows, keys, is_float, threads, groups,
                                                group_bits)
    sorted_keys = host_empty(len(rows), keys.dtype)
    sorted_groups = host_empty(len(rows), np.int32)
    keys_from_bits(bits, np.uint64(low), is_float, group_bits, sorted_keys.view(np.uint64),
                   sorted_groups)
    if not group_bits:
        take_int32(groups, order, sorted_groups)
    return sorted_keys, sorted_groups, order


def _row_width(n: int):
    """Row numbers of an n-row side: int32 where they fit (each radix pass then moves 12
    bytes per row instead of 16)."""
    return np.int32 if n < 2**31 else np.int64


def _row_numbers(n: int) -> np.ndarray:
    """0..n-1 (``_row_width``), written on all cores when large (the caller then holds the
    parallel-launch lock)."""
    if n < PARALLEL_MIN_ROWS:
        return np.arange(n, dtype=_row_width(n))
    rows = host_empty(n, _row_width(n))
    _cpu_take().row_numbers(rows)
    return rows


def _walked_rows(walked) -> np.ndarray:
    """The row numbers (``_row_width``) where ``walked`` holds. Usually every row: then they
    are written, not searched for (numpy's flatnonzero took 40 ms for 10M rows, on one
    core)."""
    if walked.all():
        return _row_numbers(len(walked))
    return np.flatnonzero(walked).astype(_row_width(len(walked)), copy=False)


def _radix_order(rows, keys, is_float: bool, threads: int, groups=None, group_bits: int = 0):
    """``rows`` stably sorted by key with the radix sort (in place when they are of
    ``_row_width``: the caller's array is used up); also the sorted order bits, the offset
    they were taken from and the group bits below the keys in them (``groups``' codes of
    ``group_bits`` bits, when they fit: then the order is by key and group)."""
    order_bits_int, order_bits_float, argsort_bits, _, _ = _cpu_radix(threads > 1)
    width = _row_width(len(keys))
    rows = rows.astype(width, copy=False)
    bits = host_empty(len(rows), np.uint64)
    if groups is None:
        groups, group_bits = _NO_GROUPS, 0
    low, group_bits = (order_bits_float if is_float else order_bits_int)(
        keys, rows, groups, group_bits, bits)
    order = argsort_bits(bits, rows, threads, host_empty(len(rows), np.uint64),
                         host_empty(len(rows), width))
    return order, bits, low, group_bits


_NO_GROUPS = np.zeros(0, dtype=np.int32)
_NO_DATA = np.frombuffer(b"", dtype=np.uint8)  # a fixed-width column's: it has no bytes


def check_map(gmap: np.ndarray, n_rows: int):
    """(valid, missing, bad) of a host gather map over ``n_rows`` right rows, on all cores:
    which entries are rows, how many are NO_MATCH, how many are neither."""
    check = _cpu_take().check_map
    valid = host_empty(len(gmap), np.bool_)
    with _PARALLEL_LAUNCH:
        missing, bad = check(gmap, n_rows, valid)
    return valid, int(missing), int(bad)


def take_fixed(columns: list[np.ndarray], gmap: np.ndarray, valid: np.ndarray) -> list:
    """``values[gmap]`` of each of ``columns`` on all cores, 0 where ``valid`` is False, each
    in a ``pyarrow.Buffer``. Columns of one width are taken four at a time, then two, then
    one (their values' bits: it is a copy): each pass reads the map once, and the random
    reads of its columns overlap.

    The memory is ``asofgpu.host_pool``'s (``host_empty``): a service that gathers again and
    again writes into pages it already has (2 ms of an 8 MB column's 6 ms were page faults).
    """
    import pyarrow as pa

    kernels = _cpu_take()
    bits = [values.view(f"u{values.itemsize}") for values in columns]
    outs = [host_empty(len(gmap), values.dtype) for values in bits]
    by_width = {}
    for k, values in enumerate(bits):
        by_width.setdefault(values.itemsize, []).append(k)
    with _PARALLEL_LAUNCH:
        for ks in by_width.values():
            while len(ks) >= 4:
                a, b, c, d = ks[:4]
                kernels.take_fixed_quad(bits[a], bits[b], bits[c], bits[d], gmap, valid,
                                        outs[a], outs[b], outs[c], outs[d])
                ks = ks[4:]
            if len(ks) >= 2:
                kernels.take_fixed_pair(bits[ks[0]], bits[ks[1]], gmap, valid, outs[ks[0]],
                                        outs[ks[1]])
                ks = ks[2:]
            if ks:
                kernels.take_fixed(bits[ks[0]], gmap, valid, outs[ks[0]])
    return [pa.py_buffer(out) for out in outs]


def take_chunked(columns: list[tuple[int, list[int], list[int]]], gmap: np.ndarray,
                 valid: np.ndarray) -> list:
    """``take_fixed`` of columns given as their chunks, read where they lie (kernels/take.py
    ``take_chunked``): a table read from parquet comes in a chunk per row group, and copying
    them into one would touch as much fresh memory as the columns hold. Each column is
    (its values' width in bytes, the address of each non-empty chunk's first value, each
    one's length); the caller keeps the chunks alive. Columns of the same chunk lengths
    share one search for each entry's chunk; those of one width among them are then taken
    up to four in a pass."""
    import pyarrow as pa

    kernels = _cpu_take()
    layouts: dict[tuple, list[int]] = {}
    for k, (_, _, lengths) in enumerate(columns):
        layouts.setdefault(tuple(lengths), []).append(k)
    outs = [host_empty(len(gmap), np.dtype(f"u{width}")) for width, _, _ in columns]
    with _PARALLEL_LAUNCH:
        for lengths, ks in layouts.items():
            starts = np.cumsum((0, *lengths[:-1]), dtype=np.uint64)
            blocks, shift = _chunk_blocks(starts, sum(lengths))
            chunk_of = host_empty(len(gmap), np.int32)
            kernels.chunk_rows(starts, blocks, shift, gmap, valid, chunk_of)
            by_width: dict[int, list[int]] = {}
            for k in ks:
                by_width.setdefault(columns[k][0], []).append(k)
            for width, same in by_width.items():
                like = np.empty(0, np.dtype(f"u{width}"))
                for at in range(0, len(same), 4):
                    four = same[at:at + 4]
                    addresses = np.array([columns[k][1] for k in four], dtype=np.uint64)
                    targets = [outs[k] for k in four]
                    targets += [like] * (4 - len(four))  # untouched
                    kernels.take_chunked(addresses.reshape(len(four), len(lengths)), starts,
                                         like, gmap, valid, chunk_of, *targets)
    return [pa.py_buffer(out) for out in outs]


CHUNK_BLOCKS = 1 << 16  # the most entries of take_chunked's table of blocks


def _chunk_blocks(starts: np.ndarray, n_rows: int):
    """(blocks, shift) for kernels/take.py ``take_chunked``: the chunk holding the first row
    of each block of ``1 << shift`` rows. Blocks are as long as the shortest chunk allows (a
    row then steps past one chunk end at most), but there are at most ``CHUNK_BLOCKS``."""
    shortest = int(np.diff(starts, append=np.uint64(n_rows)).min(initial=n_rows))
    fewest = (max(n_rows, 1) - 1).bit_length() - (CHUNK_BLOCKS.bit_length() - 1)
    shift = max(shortest.bit_length() - 1, fewest, 0)
    first_rows = np.arange(0, max(n_rows, 1), 1 << shift, dtype=np.uint64)
    blocks = np.searchsorted(starts, first_rows, side="right").astype(np.int64) - 1
    return blocks, np.uint64(shift)


def dictionary_encode_text(offsets, data, bitmap, bit0: int, nulls_distinct: bool):
    """(codes, firsts) of a string or binary column's buffers, on all cores
    (kernels/hashing.py, kernels/strings.py): int32 codes in order of first appearance, -1
    for nulls under ``nulls_distinct``, and the first row holding each code's value."""
    return _dictionary_encode(_cpu_strings(), offsets, data, bitmap, bit0, nulls_distinct,
                              len(offsets) - 1)


def text_lookup_table(offsets, data, bitmap, bit0: int):
    """The hash table of a string or binary dictionary (distinct values), for
    ``lookup_text``: (slots, hashes)."""
    return _cpu_strings()[1](offsets, data, bitmap, np.int64(bit0), len(offsets) - 1)


def lookup_text(table, offsets, data, bitmap, bit0: int, null_code: int,
                out: np.ndarray | None = None) -> np.ndarray:
    """int32 positions of a string or binary column's values in a dictionary (on all cores
    for a large column): ``table`` is (the dictionary's offsets, its bytes,
    ``text_lookup_table`` of it); -1 for a value the dictionary lacks, ``null_code`` for a
    null. Written into ``out`` when given (a chunk's rows of a longer column)."""
    table_offsets, table_data, (slots, hashes) = table
    return _lookup(_cpu_strings(), table_offsets, table_data, slots, hashes, offsets, data,
                   bitmap, bit0, null_code, len(offsets) - 1, out)


def dictionary_encode_fixed(values, bitmap, bit0: int, nulls_distinct: bool):
    """(codes, firsts) of fixed-width values (unsigned integers of the values' width:
    kernels/fixed_width.py), on all cores: int32 codes in order of first appearance, -1 for
    nulls under ``nulls_distinct``, and the first row holding each code's value."""
    return _dictionary_encode(_cpu_fixed_width(), values, _NO_DATA, bitmap, bit0,
                              nulls_distinct, len(values))


def fixed_lookup_table(values, bitmap, bit0: int):
    """The hash table of a dictionary of fixed-width values (unsigned integers of the values'
    width: kernels/fixed_width.py), for ``lookup_fixed``: (slots, hashes)."""
    return _cpu_fixed_width()[1](values, _NO_DATA, bitmap, np.int64(bit0), len(values))


def lookup_fixed(table, values, bitmap, bit0: int, null_code: int) -> np.ndarray:
    """int32 positions of fixed-width values in the dictionary that ``table``
    (``fixed_lookup_table``) was built from, on all cores for a large column; -1 for a value
    the dictionary lacks, ``null_code`` for a null."""
    slots, hashes = table
    # The table's values are never read: equal hashes are equal values.
    return _lookup(_cpu_fixed_width(), _NO_DATA, _NO_DATA, slots, hashes, values, _NO_DATA,
                   bitmap, bit0, null_code, len(values))


def dictionary_encode_views(keys, bitmap, bit0: int, nulls_distinct: bool):
    """(codes, firsts) of a view column whose values are all inline (its views as pairs of
    uint64: kernels/views.py), on all cores, as ``dictionary_encode_text`` gives them."""
    return _dictionary_encode(_cpu_views(), keys, _NO_DATA, bitmap, bit0, nulls_distinct,
                              len(keys) // 2)


def views_lookup_table(keys, bitmap, bit0: int):
    """The hash table of a dictionary of inline views, for ``lookup_views``."""
    return _cpu_views()[1](keys, _NO_DATA, bitmap, np.int64(bit0), len(keys) // 2)


def lookup_views(table, keys, bitmap, bit0: int, null_code: int) -> np.ndarray:
    """int32 positions of inline views in a dictionary: ``table`` is (the dictionary's views,
    ``views_lookup_table`` of it); -1 for a value it lacks, ``null_code`` for a null."""
    table_keys, (slots, hashes) = table
    return _lookup(_cpu_views(), table_keys, _NO_DATA, slots, hashes, keys, _NO_DATA, bitmap,
                   bit0, null_code, len(keys) // 2)


def _dictionary_encode(kernels, keys, data, bitmap, bit0: int, nulls_distinct: bool,
                       n_rows: int):
    """(codes, firsts) of a column's buffers by one kind's kernels/hashing.py build."""
    codes = host_empty(n_rows, np.int32)
    with _PARALLEL_LAUNCH:
        firsts = kernels[0](keys, data, bitmap, np.int64(bit0), bool(nulls_distinct),
                            _threads(True), codes, host_empty(n_rows, np.int64))
    return codes, firsts


def _lookup(kernels, table_keys, table_data, slots, hashes, keys, data, bitmap, bit0: int,
            null_code: int, n_rows: int, out: np.ndarray | None = None) -> np.ndarray:
    """A column's positions in a dictionary's table by one kind's kernels/hashing.py build
    (into ``out`` when given): on all cores from ``PARALLEL_MIN_ROWS`` rows, else on one
    thread."""
    codes = host_empty(n_rows, np.int32) if out is None else out
    parallel = n_rows >= PARALLEL_MIN_ROWS
    with _PARALLEL_LAUNCH if parallel else contextlib.nullcontext():
        kernels[2 if parallel else 3](table_keys, table_data, slots, hashes, keys, data,
                                      bitmap, np.int64(bit0), np.int32(null_code), codes)
    return codes


@functools.cache
def _cpu_strings():
    import numba

    from ._intrinsics import load_word

    # The variant keeps text's kernels apart from fixed width's in numba's cache: both are
    # kernels/hashing.py's functions, under the same names.
    return strings.build(_cached_njit("text", inline="always"), _cached_njit("text"),
                         _cached_njit("text", parallel=True), numba.prange, load_word)


@functools.cache
def _cpu_fixed_width():
    import numba

    return fixed_width.build(_cached_njit("fixed", inline="always"), _cached_njit("fixed"),
                             _cached_njit("fixed", parallel=True), numba.prange)


@functools.cache
def _cpu_views():
    import numba

    return views.build(_cached_njit("views", inline="always"), _cached_njit("views"),
                       _cached_njit("views", parallel=True), numba.prange)


@functools.cache
def _cpu_take():
    import numba

    from ._intrinsics import load_at

    return take.build(_cached_njit(parallel=True), numba.prange, load_at)


@functools.cache
def _cpu_radix(parallel: bool):
    import numba

    return radix.build(_cached_njit(), _cached_njit(parallel=parallel),
                       numba.prange if parallel else range)


def _build_walk(kernels, is_float: bool, parallel: bool, *extra, **helper_options):
    """A kernels module's ``build`` for the cpu: helpers serial, its walks ``parallel``;
    ``extra``: the module's own further arguments."""
    import numba

    kind = "_float" if is_float else "_int"
    return kernels.build(_cached_njit(kind, **helper_options),
                         _cached_njit(kind, parallel=parallel), is_float, numba.uint64,
                         numba.prange if parallel else range, *extra)


@functools.cache
def _cpu_scan(is_float: bool, parallel: bool):
    return _build_walk(scan, is_float, parallel)


def _probe_all(left_keys, left_groups, offsets, right_keys, rows_last, rows_first,
               strategy, exact, has_tol, tol, nearest_tie, no_match, out):
    """The cpu kernel: probe_row over left rows, in parallel (prange, probe_row: bound)."""
    for i in prange(out.size):  # noqa: F821 - bound by _cpu_probe_all
        probe_row(i, left_keys, left_groups, offsets, right_keys,  # noqa: F821
                  rows_last, rows_first, strategy, exact, has_tol, tol, nearest_tie,
                  no_match, out)


@functools.cache
def _source_digest() -> str:
    """A digest of the kernel sources, of this module and of its intrinsics."""
    digest = hashlib.sha256()
    here = Path(__file__)
    for path in sorted(Path(probe.__file__).parent.glob("*.py")) + [
            here, here.with_name("_intrinsics.py")]:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _cached_njit(variant: str = "", **options):
    """``numba.njit(cache=True)`` keyed on the kernel sources: numba checks only the calling
    function's own file, so a cached probe would outlive an edit of the kernels it inlines.
    The digest in the qualified name (which names the cache file) retires it."""
    # numba's cache key ignores the options too (parallel or not): they go in the name.
    # So does the variant (which globals a build binds, e.g. float or integer comparisons).
    tag = variant + "".join(f"_{k}{v if isinstance(v, str) else int(v)}"
                            for k, v in sorted(options.items()))

    def jit(fn):
        fn = bind(fn)  # a copy: the module's function keeps its name
        fn.__qualname__ = f"{fn.__qualname__}_{_source_digest()}{tag}"
        return _njit_cached(fn, **options)

    return jit


def _njit_cached(fn, **options):
    """``numba.njit(cache=True, **options)(fn)``, wherever the cache can be written.

    numba caches beside the source when its ``__pycache__`` is writable, else in the user's
    cache directory (``~/.cache/numba``), and refuses to compile at all when neither is (a
    read-only installation run by a user without a home, as containers do). Then the cache
    goes to ``_FALLBACK_CACHE`` in the temporary directory (through ``NUMBA_CACHE_DIR``'s
    setting, which is the whole process's: other cached functions go there too), or, if even
    that cannot be written, nowhere: each process compiles again, and says so once."""
    global _WARNED_UNCACHED
    import numba

    try:
        return numba.njit(cache=True, **options)(fn)
    except RuntimeError as exc:  # numba: "cannot cache function ...: no locator available"
        if "no locator available" not in str(exc):
            raise
    if not numba.config.CACHE_DIR:
        numba.config.CACHE_DIR = _FALLBACK_CACHE
        try:
            return numba.njit(cache=True, **options)(fn)
        except RuntimeError:
            pass
    if not _WARNED_UNCACHED:
        _WARNED_UNCACHED = True
        warnings.warn(f"asofgpu: numba cannot write its cache beside the kernels, in the "
                      f"user's cache directory or in {_FALLBACK_CACHE}: each process compiles "
                      f"the kernels again (set NUMBA_CACHE_DIR to a writable directory)",
                      RuntimeWarning, stacklevel=3)
    return numba.njit(**options)(fn)


_WARNED_UNCACHED = False
# The cache's last resort, one per user (a shared one could hold another user's files).
_FALLBACK_CACHE = os.path.join(tempfile.gettempdir(), f"asofgpu-numba-cache-{os.getuid()}"
                               if hasattr(os, "getuid") else "asofgpu-numba-cache")


def cache_dir() -> str | None:
    """Where numba keeps the CPU kernels' machine code, as it chose for one of them
    (``kernels/take.py``'s): NUMBA_CACHE_DIR when set, else the kernels' own ``__pycache__``,
    else numba's user-wide directory, else ``_njit_cached``'s fallback; None when nothing can
    be cached."""
    return getattr(_cpu_take().check_map._cache, "_cache_path", None)


@functools.cache
def _cpu_probe_all(is_float: bool, parallel: bool):
    import numba

    probe_row = probe.build(_cached_njit(), is_float, numba.uint64)
    return _cached_njit(parallel=parallel)(
        bind(_probe_all, prange=numba.prange if parallel else range, probe_row=probe_row))


@functools.cache
def _cpu_cursor_probe(is_float: bool, parallel: bool):
    # Inlined helpers: numba counts references to each array argument of a call between
    # compiled functions, which made a 1M-row prepared probe 0.12 s instead of 0.08 s.
    # (The scan gains nothing from it, and inlining costs compile time.)
    from ._intrinsics import prefetch

    return _build_walk(cursor, is_float, parallel, prefetch, inline="always")


@functools.cache
def _cpu_stream_probe(is_float: bool, parallel: bool):
    return _build_walk(stream, is_float, parallel, inline="always")


@functools.cache
def _counting_sort():
    def counting_sort(order, bucket, n_buckets, keys, rows, sorted_keys):
        """Stable: rows keep their order within a bucket; the keys move with their rows in
        the same pass (into ``rows`` and ``sorted_keys``). Returns the n_buckets + 1
        offsets."""
        offsets = np.zeros(n_buckets + 1, np.int64)
        for k in range(order.size):
            offsets[bucket[order[k]] + 1] += 1
        for b in range(n_buckets):
            offsets[b + 1] += offsets[b]
        fill = offsets[:-1].copy()
        for k in range(order.size):
            row = order[k]
            b = bucket[row]
            rows[fill[b]] = row
            sorted_keys[fill[b]] = keys[row]
            fill[b] += 1
        return offsets

    return _njit_cached(counting_sort)


class CudaBackend(Backend):
    name = "cuda"

    def __init__(self):
        super().__init__()
        self.simulated = cudasim_enabled()
        if not self.simulated:
            import cupy

            self.xp = cupy

    def to_host(self, arr) -> np.ndarray:
        return np.asarray(arr) if self.simulated else self.xp.asnumpy(arr)

    def stable_argsort(self, values):
        if self.simulated:
            return np.argsort(values, kind="stable")
        return self.xp.argsort(values)  # cupy's sort is always stable (a radix sort)

    def _launch(self, is_float, *args, time_ordered=None):  # one thread a row, always
        kernel = _cuda_probe_kernel(is_float, self.simulated)
        n = len(args[-1])
        if n == 0:
            return
        blocks = (n + CUDA_THREADS - 1) // CUDA_THREADS
        if self.simulated:
            # The simulator writes every array argument back: give it writable copies.
            args = [a.copy() if isinstance(a, np.ndarray) and not a.flags.writeable else a
                    for a in args]
        with warnings.catch_warnings():
            # A small join is a small grid: a warning the caller cannot act on at every such
            # launch, and an exception under an "error" filter (-W error, pytest's
            # filterwarnings), which would fail the join.
            warnings.filterwarnings("ignore", message=_LOW_OCCUPANCY)
            launch = kernel[blocks, CUDA_THREADS]
        launch(*args)


def _probe_kernel(left_keys, left_groups, offsets, right_keys, rows_last, rows_first,
                  strategy, exact, has_tol, tol, nearest_tie, no_match, out):
    """The cuda kernel: one thread per left row (cuda, probe_row: bound)."""
    i = cuda.grid(1)  # noqa: F821 - bound by _cuda_probe_kernel
    if i < out.size:
        probe_row(i, left_keys, left_groups, offsets, right_keys,  # noqa: F821
                  rows_last, rows_first, strategy, exact, has_tol, tol, nearest_tie,
                  no_match, out)


@functools.cache
def _cuda_probe_kernel(is_float: bool, simulated: bool):
    from numba import cuda

    return cuda.jit(cuda_probe_source(is_float, simulated))


def cuda_probe_source(is_float: bool, simulated: bool = False):
    """The probe kernel before ``cuda.jit``: ``_probe_kernel`` bound to its device functions.
    ``_cuda_probe_kernel`` compiles it for launches; ``tests/test_ptx.py`` compiles it with
    the real CUDA compiler (``cuda.compile_ptx``, no GPU needed) for every argument type a
    launch can pass."""
    # numba.cuda is bound as a global: the simulator swaps globals that name it for its own.
    import numba
    from numba import cuda

    unsigned = _py_unsigned if simulated else numba.uint64
    probe_row = probe.build(cuda.jit(device=True), is_float, unsigned)
    return bind(_probe_kernel, cuda=cuda, probe_row=probe_row)


_BACKENDS = {"python": PythonBackend, "cpu": CpuBackend, "cuda": CudaBackend}


@functools.cache
def cuda_usable() -> bool:
    """A real GPU with cupy and numba-cuda importable (the simulator does not count)."""
    if cudasim_enabled():
        return False
    try:
        import cupy
        from numba import cuda

        return bool(cuda.is_available()) and cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - any import or driver failure means "no GPU here"
        return False


@functools.cache
def get_backend(device: str) -> Backend:
    """``"auto"`` picks ``cuda`` when a usable GPU is present, else ``cpu``."""
    if device == "auto":
        device = "cuda" if cuda_usable() else "cpu"
    if device == "cuda" and not (cudasim_enabled() or cuda_usable()):
        msg = (
            "device='cuda' needs an NVIDIA GPU with cupy and numba-cuda installed, and none is "
            "usable here. Hint: pip install 'asofgpu[cuda12]' (or cuda13), or use device='cpu'."
        )
        raise RuntimeError(msg)
    return _BACKENDS[device]()
