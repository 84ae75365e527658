"""The cpu backend: ``numba.njit`` with ``prange``, arrays in numpy.

A prepared probe walks its left rows in key order (sorted into it when they are not: ``order``)
and gallops from per-group cursors (``kernels/cursor.py``) or streams a time-sorted right side
(``kernels/stream.py``); a few rows out of order binary-search each one (``kernels/probe.py``).
A one-shot join walks both sides in key order (``kernels/scan.py``). ``walks`` decides which.
The right side is sorted by group with a counting sort, large key arrays with the radix sort.
A small launch before the process has spent ``walks.THRESHOLDS.interpret_seconds`` so runs the
python backend's plain-Python probe and numpy's sorts, compiling nothing (``walks.compiles``).
"""

from __future__ import annotations

import numpy as np

from ..kernels.probe import NEAREST, Options
from ..kernels.stream import Tape
from . import walks
from .base import (
    Backend,
    host_empty,
    interpreted_probe,
    interpreted_slides,
    never_descends,
    read_only,
)
from .jit import (
    PARALLEL_LAUNCH,
    cpu_calendar,
    cpu_cursor_probe,
    cpu_probe_all,
    cpu_radix,
    cpu_scan,
    cpu_splice,
    cpu_stream_probe,
    cpu_window,
    launching,
    threads,
)
from .order import in_key_order, radix_order, row_numbers, walk_order, walked_rows
from .take import take_fixed


#: The left rows a piece of the window join's slide takes (``window_reduce``).
SLIDE_PIECE_ROWS = 1 << 14
#: The key types the radix sort orders (``stable_argsort``).
_RADIX = (np.int64, np.uint64, np.float64)


def _one_group_of_many(groups, n_groups: int) -> bool:
    """Whether a walk's rows are all of one group where the right side has several (a
    per-symbol file alone): streaming would read every group's right rows over its keys'
    span (a day's file of one symbol, all 10M of the day's quotes), where its cursor walks
    its own group's (18 such files of a 10M-row day: 0.3 s streamed, about 0.01 s so)."""
    # (the first and last rows' groups first: where they differ, as in a batch of many
    # groups in key order, the compare of every row, 3-5 ms for 10M, is skipped)
    return (
        n_groups > 1
        and len(groups) > 0
        and groups[0] == groups[-1]
        and bool((groups == groups[0]).all())
    )


class CpuBackend(Backend):
    name = "cpu"
    merge_scans = True
    streams_time_ordered = True

    def empty(self, n: int, dtype):
        return host_empty(n, dtype)

    def interprets(self, rows: int) -> bool:
        return not walks.compiles(rows)

    def splice_merge(self, is_float, left_keys, *rest) -> None:
        """The merge kernel (kernels/splice.py): one pass over both sides, a piece a thread;
        a small launch takes the base's numpy ranks instead of compiling."""
        n = len(left_keys) + len(rest[2])  # rest: left rows and matches, right keys, ...
        if self.interprets(n):
            super().splice_merge(is_float, left_keys, *rest)
            return
        parallel = walks.parallel(n)
        read = map(read_only, (left_keys, *rest[:5]))  # all but the two maps it writes
        with launching(parallel):
            cpu_splice(is_float, parallel)(*read, *rest[5:], threads(parallel))

    def calendar_reaches(self, keys, move):
        """kernels/calendar.py's ``reaches`` on all cores, a piece a thread; a small launch
        as plain Python."""
        n = len(keys)
        if self.interprets(n):
            return super().calendar_reaches(keys, move)
        out = host_empty(n, np.uint64)  # pages kept: fresh ones faulted, 8 of its 9 ms
        parallel = walks.parallel(n)
        with launching(parallel):
            cpu_calendar(parallel)(read_only(keys), out, move, walks.row_pieces(n))
        return out

    def window_bounds(self, is_float, left_keys, left_groups, right, bounds, starts, ends):
        """A search for each left row's window end and a gallop back to its start
        (kernels/window.py), the rows in parallel pieces; each piece starts a group's search
        where its last row's ended, unless a cursor a group for each piece would outnumber
        the rows."""
        n = len(starts)
        if self.interprets(n):
            with walks.interpreting():
                super().window_bounds(is_float, left_keys, left_groups, right, bounds, starts, ends)
            return
        parallel = walks.parallel(n)
        pieces = walks.row_pieces(n)
        cursors = walks.window_cursors(n, pieces, len(right.offsets) - 1)
        left_keys, left_groups = read_only(left_keys), read_only(left_groups)
        right = type(right)(*map(read_only, right))
        # per-row reaches read-only too: a fixed reach's empty placeholder is numpy's own
        bounds = bounds._replace(befores=read_only(bounds.befores), afters=read_only(bounds.afters))
        with launching(parallel):
            cpu_window(is_float, parallel).windows(
                left_keys, left_groups, right, bounds, starts, ends, pieces, cursors
            )

    def window_reduce(self, starts, ends, rows, values, keys, valid, out, shared=None):
        """The windows one by one, or, for values in the prepared order without nulls, slid
        through in the order of their starts (``kernels/window.py``'s ``slide_piece``): the
        left rows of each group then come in key order, their windows move forward, and each
        position enters and leaves once instead of once a window it is in. That order, and
        the bounds put in it, are computed once for every column (in ``shared``)."""
        n = len(starts)
        interpreted = self.interprets(n)
        # read-only, whatever their source: one compiled reduction a dtype (``read_only``)
        starts, ends, rows, values, keys, valid = map(
            read_only, (starts, ends, rows, values, keys, valid)
        )
        if rows.size or valid.size:
            if interpreted:
                with walks.interpreting():
                    super().window_reduce(starts, ends, rows, values, keys, valid, out)
                return
            parallel = walks.parallel(n)
            with launching(parallel):
                cpu_window(False, parallel).reduces(
                    starts, ends, rows, values, keys, valid, out, walks.row_pieces(n)
                )
            return
        shared = {} if shared is None else shared
        if "slide" not in shared:
            shared["slide"] = self._slide_order(starts, ends, interpreted)
        order, by_start, by_end = shared["slide"]
        # Pieces of a fixed size, whatever the threads: where a piece starts, its slide
        # starts afresh, and the sums' rounding with it. A small launch slides as plain
        # Python: the same additions in the same order, so a float sum does not change in
        # its last bits once the process compiles (``walks.compiles``).
        piece_starts = np.append(np.arange(0, n, SLIDE_PIECE_ROWS), n).astype(np.int64)
        if interpreted:
            with walks.interpreting():
                interpreted_slides(order, by_start, by_end, values, keys, out, piece_starts)
            return
        parallel = walks.parallel(n)
        with launching(parallel):
            cpu_window(False, parallel).slides(
                order, by_start, by_end, values, keys, out, piece_starts
            )

    def _slide_order(self, starts, ends, interpreted: bool):
        """The order the windows are slid through, and their bounds in it: by start, and
        windows of one start by end. Left rows not in key order gave windows of one start
        (no quote between their reaches' starts) whose ends went back and forth, each then
        read whole: 5.3 s against 0.14 s for 2M trades in one group, 10 minutes back."""
        order = self.stable_argsort(starts)
        by_start, by_end = self._in_order(order, starts, ends, interpreted)
        tied = by_start[1:] == by_start[:-1]
        if np.any(tied & (by_end[1:] < by_end[:-1])):
            by_end_first = self.stable_argsort(ends)
            order = by_end_first[self.stable_argsort(starts[by_end_first])]
            by_start, by_end = self._in_order(order, starts, ends, interpreted)
        return order, by_start, by_end

    @staticmethod
    def _in_order(order, starts, ends, interpreted: bool):
        """``starts`` and ``ends`` taken in ``order``."""
        if interpreted:  # numpy's take: a small launch compiles nothing
            return starts[order], ends[order]
        n = len(order)
        by_start, by_end = take_fixed([starts, ends], order, np.ones(n, dtype=np.bool_))
        return np.frombuffer(by_start, np.int64, n), np.frombuffer(by_end, np.int64, n)

    def group_sort(self, order, bucket, n_groups, keys, rows_dtype=np.int64):
        n = len(bucket) if order is None else len(order)
        if self.interprets(n):
            return super().group_sort(order, bucket, n_groups, keys, rows_dtype)
        if order is None and never_descends(bucket):
            # The rows in group order already (quotes sorted by symbol, then time: groups are
            # numbered as they appear), which the counting sort would copy as they are: 10M
            # rows, 0.2 s; so, about 30 ms.
            offsets = np.searchsorted(bucket, np.arange(n_groups + 2, dtype=bucket.dtype))
            return np.arange(n, dtype=rows_dtype), keys.copy(), offsets.astype(np.int64)
        rows = host_empty(n, rows_dtype)  # written in the map's dtype: 10M rows, no 17 ms copy
        sorted_keys = host_empty(n, keys.dtype)
        pieces = walks.sort_pieces(n, n_groups + 1)
        with launching(pieces > 1):
            offsets = cpu_radix(pieces > 1).counting_sort(
                read_only(np.empty(0, np.int64) if order is None else order),
                order is None,
                read_only(bucket),
                n_groups + 1,
                read_only(keys),
                rows,
                sorted_keys,
                pieces,
            )
        return rows, sorted_keys, offsets

    def stable_argsort(self, values):
        """numpy's stable argsort of 64-bit keys is a timsort: large key arrays take the
        parallel radix sort (kernels/radix.py) instead."""
        # No rows go to numpy too: the radix kernel reads the first.
        if not len(values) or not walks.radix_sorts(len(values)) or values.dtype not in _RADIX:
            return super().stable_argsort(values)
        with PARALLEL_LAUNCH:
            rows = row_numbers(len(values))
            order = radix_order(rows, values, values.dtype == np.float64, threads(True))[0]
        return order.astype(np.int64, copy=False)

    def ascends_within_groups(self, keys, groups, n_groups: int, is_float: bool) -> bool:
        """One pass, where the keys would take the radix sort: quotes sorted by symbol then
        time (a file a symbol) pass, 10M of them in 16 ms where their sort took 0.65 s; it
        stops at the first descent, within a few rows of shuffled ones."""
        n = len(keys)
        if not walks.radix_sorts(n) or keys.dtype not in _RADIX:
            return False
        with PARALLEL_LAUNCH:
            rows = row_numbers(n)
        return cpu_scan(is_float, False).ascends_within_groups(keys, groups, rows, n_groups)

    def probe(
        self,
        is_float,
        left_keys,
        left_groups,
        right,
        how,
        out,
        time_ordered=None,
        keys_ascend=False,
    ):
        if self.interprets(len(out)):
            with walks.interpreting():
                interpreted_probe(is_float, left_keys, left_groups, right, how, out)
            return
        # Read-only, whatever their source: one compiled probe (``read_only``)
        left_keys, left_groups = read_only(left_keys), read_only(left_groups)
        right = type(right)(*map(read_only, right))
        parallel = walks.parallel(len(out))
        with launching(parallel):
            n_threads = threads(parallel)
            n_groups = len(right.offsets) - 1
            rows = walked_rows(left_groups >= 0)
            scan = cpu_scan(is_float, parallel)
            in_order = keys_ascend or scan.is_sorted_at(left_keys, rows, n_threads)
            if walks.searches_each_row(len(rows), in_order):
                cpu_probe_all(is_float, parallel)(left_keys, left_groups, right, how, out)
                return
            # Rows whose keys ascend within each group (sorted by group then key: per-symbol
            # files) are walked as they come: the cursors need no more (a 10M-row day of such
            # files, its batches sorted by key first: 1.17 s of probes; so: 0.38 s).
            by_group = not in_order and scan.ascends_within_groups(
                left_keys, left_groups, rows, n_groups
            )
            # The walks read keys and groups in walk order, and write each answer in its row.
            left = in_key_order(
                rows, in_order or by_group, left_keys, left_groups, n_groups, is_float, n_threads
            )
            nearest = how.strategy == NEAREST
            if (
                not by_group  # (the stream walks keys in order: these are only by group)
                and time_ordered is not None
                and not _one_group_of_many(left.groups, n_groups)
                and walks.streams(time_ordered[0], left.keys, n_groups, n_threads, nearest)
            ):
                tape = Tape(*map(read_only, time_ordered))
                stream = cpu_stream_probe(is_float, parallel)
                if nearest:  # each candidate, row and key, from the walk up to the walk down
                    candidates = (
                        host_empty(len(rows), out.dtype),
                        host_empty(len(rows), tape.keys.dtype),
                    )
                    stream.nearest(left, tape, right, how, n_threads, *candidates, out)
                else:
                    stream.probe(left, tape, right, how, n_threads, out)
                return
            # In key order each group's answers only move forward: gallop from cursors.
            n_pieces = walks.pieces(parallel, n_threads, n_groups)
            cpu_cursor_probe(is_float, parallel)(left, right, how, n_pieces, out)

    def scan(
        self,
        is_float: bool,
        left_keys,
        left_groups,
        right_keys,
        right_groups,
        n_groups: int,
        how: Options,
        out,
        keys_ascend: tuple[bool, bool] = (False, False),
    ) -> None:
        """The one-shot merge scan (kernels/scan.py) under ``how`` (``base.options``).
        ``left_groups`` holds -1 for rows that match nothing; ``right_groups`` (None: one
        group) holds n_groups for rows to skip; ``keys_ascend``: whether each side's keys
        are known to ascend (``Key.ascends``), and need no check."""
        if right_groups is None:
            right_groups = np.zeros(len(right_keys), dtype=np.int32)
        # Read-only, whatever their source: one compiled scan (``read_only``)
        left_keys, left_groups = read_only(left_keys), read_only(left_groups)
        right_keys, right_groups = read_only(right_keys), read_only(right_groups)
        parallel = walks.parallel(len(out) + len(right_keys))
        join, is_sorted = cpu_scan(is_float, parallel)[:2]
        n_threads = threads(parallel)
        n_chunks = walks.pieces(parallel, n_threads, n_groups)
        with launching(parallel):
            left = walk_order(
                left_groups >= 0,
                left_keys,
                left_groups,
                n_groups,
                is_float,
                is_sorted,
                n_threads,
                keys_ascend[0],
            )
            right = walk_order(
                right_groups < n_groups,
                right_keys,
                right_groups,
                n_groups,
                is_float,
                is_sorted,
                n_threads,
                keys_ascend[1],
            )
            join(left, right, max(n_groups, 1), n_chunks, how, out, host_empty)
