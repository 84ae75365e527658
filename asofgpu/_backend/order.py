"""Rows in key order on the host: what the CPU walks read (``cpu.py``).

The radix sort (``kernels/radix.py``) sorts 64-bit keys (with their group codes below them in
the sort bits, where both fit in 64 bits); numpy's stable argsort sorts short inputs
(``walks.radix_sorts``). Row numbers are int32 where they fit.
"""

from __future__ import annotations

import numpy as np

from ..kernels.probe import Walk
from . import walks
from .base import host_empty, read_only
from .jit import PARALLEL_LAUNCH, cpu_radix, cpu_scan, cpu_take, threads


def walk_order(
    walked,
    keys,
    groups,
    n_groups: int,
    is_float: bool,
    is_sorted,
    threads: int,
    ascends: bool = False,
) -> Walk:
    """The ``Walk`` (keys, groups, row numbers) of the ``walked`` rows in ascending key order, equal keys
    of a group in row order: what the merge scan reads (time-sorted data with every row
    walked: the caller's own arrays). ``groups`` holds codes below ``n_groups`` for walked
    rows; ``ascends``: every key is known to ascend (``Key.ascends``), and they are not
    checked again. The caller holds the parallel-launch lock."""
    rows = walked_rows(walked)
    in_order = ascends or is_sorted(keys, rows, threads)
    return in_key_order(rows, in_order, keys, groups, n_groups, is_float, threads)


def copy_checked(spans, dtype, is_float: bool) -> tuple[np.ndarray, bool]:
    """The values of a chunked column's runs (``_arrow_numpy.segments``: address and
    length of each, of ``dtype``) copied end to end into ``asofgpu.host_pool``'s memory, and
    whether they ascend in asofgpu's total order, found in the same pass on all cores
    (kernels/scan.py ``copy_is_sorted``). The caller keeps the column alive."""
    starts = np.cumsum((0, *(length for _, length in spans)), dtype=np.uint64)
    addresses = np.array([address for address, _ in spans], np.uint64)
    out = host_empty(int(starts[-1]), dtype)
    with PARALLEL_LAUNCH:
        kernel = cpu_scan(is_float, True).copy_is_sorted
        ascends = kernel(addresses, starts, out[:0], out, threads(True))
    return out, bool(ascends)


def in_key_order(
    rows, in_order: bool, keys, groups, n_groups: int, is_float: bool, threads: int
) -> Walk:
    """``walk_order`` of the walked ``rows``, walked as they come when ``in_order`` (their
    keys ascend, or ascend within each group, as the cursor walk needs); read-only, as the
    walks read them (``base.read_only``)."""
    return Walk(
        *map(read_only, _in_key_order(rows, in_order, keys, groups, n_groups, is_float, threads))
    )


def _in_key_order(rows, in_order: bool, keys, groups, n_groups: int, is_float: bool, threads: int):
    if in_order:
        if len(rows) == len(keys):
            return Walk(keys, groups, rows)
        return Walk(keys[rows], groups[rows], rows)
    if not walks.radix_sorts(len(rows)):
        order = rows[np.argsort(keys[rows], kind="stable")]
        return Walk(keys[order], groups[order], order)
    # The sorted keys and groups come back from the sorted order bits (the groups are sorted
    # with the keys where both fit in 64 bits), not by numpy's (slow, random) take.
    kernels = cpu_radix(threads > 1)
    group_bits = max(n_groups - 1, 0).bit_length()
    order, bits, low, group_bits = radix_order(rows, keys, is_float, threads, groups, group_bits)
    sorted_keys = host_empty(len(rows), keys.dtype)
    sorted_groups = host_empty(len(rows), np.int32)
    kernels.keys_from_bits(
        bits, np.uint64(low), is_float, group_bits, sorted_keys.view(np.uint64), sorted_groups
    )
    if not group_bits:
        kernels.take_int32(read_only(groups), order, sorted_groups)
    return Walk(sorted_keys, sorted_groups, order)


def row_width(n: int):
    """Row numbers of an n-row side: int32 where they fit (each radix pass then moves 12
    bytes per row instead of 16)."""
    return np.int32 if n < 2**31 else np.int64


def row_numbers(n: int) -> np.ndarray:
    """0..n-1 (``row_width``), written on all cores when large (the caller then holds the
    parallel-launch lock)."""
    if not walks.parallel(n):
        return np.arange(n, dtype=row_width(n))
    rows = host_empty(n, row_width(n))
    cpu_take().row_numbers(rows)
    return rows


def walked_rows(walked) -> np.ndarray:
    """The row numbers (``row_width``) where ``walked`` holds. Usually every row: then they
    are written, not searched for (numpy's flatnonzero took 40 ms for 10M rows, on one
    core)."""
    if walked.all():
        return row_numbers(len(walked))
    return np.flatnonzero(walked).astype(row_width(len(walked)), copy=False)


def radix_order(rows, keys, is_float: bool, threads: int, groups=None, group_bits: int = 0):
    """``rows`` stably sorted by key with the radix sort (in place when they are of
    ``row_width``: the caller's array is used up); also the sorted order bits, the offset
    they were taken from and the group bits below the keys in them (``groups``' codes of
    ``group_bits`` bits, when they fit: then the order is by key and group)."""
    kernels = cpu_radix(threads > 1)
    width = row_width(len(keys))
    rows = rows.astype(width, copy=False)
    bits = host_empty(len(rows), np.uint64)
    if groups is None:
        groups, group_bits = _NO_GROUPS, 0
    low, group_bits = (kernels.order_bits_float if is_float else kernels.order_bits_int)(
        read_only(keys), rows, read_only(groups), group_bits, bits
    )
    order = kernels.argsort_bits(
        bits, rows, threads, host_empty(len(rows), np.uint64), host_empty(len(rows), width)
    )
    return order, bits, low, group_bits


_NO_GROUPS = np.zeros(0, dtype=np.int32)
