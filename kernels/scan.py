"""The merge scan: an as-of join of two sides walked together in key (time) order.

When both sides can be read in key order (market data arrives time-sorted), a single walk
keeps, per group, the last right row seen so far, and reads off each left row's backward
match in O(1): no sort of the right side by group, no binary search, no cache miss per row.
The forward match is the same walk run from the end; with one group (a join without ``by``)
both candidates are read off the right walk at positions that only move up, in one walk for
every strategy (``one_group_pass``). This is the CPU's one-shot path; a
prepared right side is probed by the cursors (``cursor.py``) or the stream (``stream.py``),
a small unordered batch and the GPU by the per-row binary search (``probe.py``).

Each side arrives as a ``probe.Walk``: its keys and group codes ascending by key (rows without
a key or a group left out; the right side keeps the caller's order among a group's equal keys,
which decides which of several equal rows a pick takes; equal keys of different groups may come
in any order), and the caller's row number of each walk position (``rows``). Reading both
sides in walk order keeps every access sequential but the write of each left row's answer.

The walk splits into ``n_chunks`` pieces of the left order that run in parallel. A piece
starts from the per-group state of everything before it (after it, walking forward), which
the pieces compute first, each over its own stretch of the right side, and then combine in
a short serial pass over (pieces x groups): the carry of asofgpu.dask's time-partitioned
strategy, on one machine.
"""

from typing import NamedTuple

import numpy as np

from . import APART, bind, probe, search
from .probe import (
    BACKWARD,
    FORWARD,
    NEAREST,
    PICK_BACK,
    PICK_FORWARD,
    PICK_FORWARD_LAST,
    TIE_TO_FORWARD,
)

ZERO, ONE = np.uint64(0), np.uint64(1)

less = gap = decide = lower_bound = upper_bound = prange = load_at = None  # filled in by build()


def take_backward(keys, groups, rows, j, last, last_key):
    """Walking up: position j of the right walk (its keys, groups and rows) becomes its
    group's latest row."""
    g = np.uint64(groups[j])  # walked rows' codes are groups (see the package's note)
    last[g] = rows[j]
    last_key[g] = keys[j]


def take_forward(keys, groups, rows, j, first, first_key, run_last, runs):
    """Walking down: position j becomes its group's first row. With ``runs`` (polars'
    nearest pick: the last row of the winning key), a smaller key starts a new run whose last
    row is this one."""
    g = np.uint64(groups[j])
    k = keys[j]
    r = rows[j]
    if runs:  # a select, not a branch: 1M x 1M nearest, one thread, 46 -> 33 ms
        new_run = first[g] < 0 or less(k, first_key[g])
        run_last[g] = r if new_run else run_last[g]
    first[g] = r
    first_key[g] = k


def backward_piece(left, p0, p1, right, j, last, last_key, how, back_row, back_key, out):
    """The left walk's positions [p0, p1), walking the right one up from position ``j`` with
    each group's latest row (``last``, ``last_key``) before it. Nearest leaves each left
    position's backward candidate (``back_row``, ``back_key``) for the forward walk."""
    j = np.uint64(j)  # right positions index as uint64 (see the package's note on indices)
    n_right = np.uint64(right.keys.size)
    for p in range(p0, p1):
        x = left.keys[p]
        while j < n_right:
            if how.exact:
                if less(x, right.keys[j]):
                    break
            elif not less(right.keys[j], x):
                break
            take_backward(right.keys, right.groups, right.rows, j, last, last_key)
            j += ONE
        g = np.uint64(left.groups[p])
        if how.strategy == BACKWARD:
            i = np.uint64(left.rows[p])
            out[i] = choose(i, x, last[g], last_key[g], -1, x, -1, how)
        else:  # nearest: the forward walk decides
            back_row[p] = last[g]
            back_key[p] = last_key[g]


def forward_piece(left, p0, p1, right, j, first, first_key, run_last, how, back_row, back_key, out):
    """``j``: one past the last position not yet walked (the walk goes down)."""
    runs = how.strategy == NEAREST and how.nearest_tie == TIE_TO_FORWARD
    j = np.uint64(j)
    rkeys, rgroups, rrows = right
    for p in range(p1 - 1, p0 - 1, -1):
        x = left.keys[p]
        while j > ZERO:
            if how.exact:
                if less(rkeys[j - ONE], x):
                    break
            elif not less(x, rkeys[j - ONE]):
                break
            j -= ONE
            take_forward(rkeys, rgroups, rrows, j, first, first_key, run_last, runs)
        g = np.uint64(left.groups[p])
        i = np.uint64(left.rows[p])
        if how.strategy == NEAREST:
            out[i] = choose(
                i, x, back_row[p], back_key[p], first[g], first_key[g], run_last[g], how
            )
        else:
            out[i] = choose(i, x, -1, x, first[g], first_key[g], -1, how)


def piece_bounds(n_left, n_chunks):
    bounds = np.empty(n_chunks + 1, np.int64)
    for t in range(n_chunks + 1):
        bounds[t] = t * n_left // n_chunks
    return bounds


def backward_pass(left, right, n_groups, n_chunks, how, back_row, back_key, out):
    p = piece_bounds(left.keys.size, n_chunks)
    # Right positions below j0[t] have keys below piece t's first left key: walked before it
    # under either exactness.
    j0 = np.zeros(n_chunks, np.int64)
    for t in range(1, n_chunks):
        j0[t] = lower_bound(right.keys, 0, right.keys.size, left.keys[p[t]])
    last = np.full((n_chunks, n_groups + APART), -1, np.int64)
    last_key = np.zeros((n_chunks, n_groups + APART), right.keys.dtype)
    for t in prange(1, n_chunks):
        for j in range(j0[t - 1], j0[t]):
            take_backward(right.keys, right.groups, right.rows, j, last[t], last_key[t])
    for t in range(1, n_chunks):  # the carry: latest row of each group before piece t
        for g in range(n_groups):
            if last[t, g] < 0:
                last[t, g] = last[t - 1, g]
                last_key[t, g] = last_key[t - 1, g]
    for t in prange(n_chunks):
        backward_piece(
            left, p[t], p[t + 1], right, j0[t], last[t], last_key[t], how, back_row, back_key, out
        )


def forward_pass(left, right, n_groups, n_chunks, how, back_row, back_key, out):
    p = piece_bounds(left.keys.size, n_chunks)
    runs = how.strategy == NEAREST and how.nearest_tie == TIE_TO_FORWARD
    # Right positions from j1[t] on have keys above piece t's last left key.
    j1 = np.full(n_chunks, right.keys.size, np.int64)
    for t in range(n_chunks - 1):
        j1[t] = upper_bound(right.keys, 0, right.keys.size, left.keys[p[t + 1] - 1])
    first = np.full((n_chunks, n_groups + APART), -1, np.int64)
    first_key = np.zeros((n_chunks, n_groups + APART), right.keys.dtype)
    run_last = np.full((n_chunks, n_groups + APART), -1, np.int64)
    for t in prange(n_chunks - 1):
        for j in range(j1[t + 1] - 1, j1[t] - 1, -1):
            take_forward(
                right.keys, right.groups, right.rows, j, first[t], first_key[t], run_last[t], runs
            )
    for t in range(n_chunks - 2, -1, -1):  # the carry: earliest row of each group after t
        for g in range(n_groups):
            if first[t + 1, g] < 0:
                continue
            if first[t, g] < 0:
                first[t, g] = first[t + 1, g]
                first_key[t, g] = first_key[t + 1, g]
                run_last[t, g] = run_last[t + 1, g]
            elif not less(first_key[t, g], first_key[t + 1, g]):
                run_last[t, g] = run_last[t + 1, g]  # the run of equal keys goes on
    for t in prange(n_chunks):
        forward_piece(
            left,
            p[t],
            p[t + 1],
            right,
            j1[t],
            first[t],
            first_key[t],
            run_last[t],
            how,
            back_row,
            back_key,
            out,
        )


def one_group_piece(left, p0, p1, right, how, out):
    """The left walk's positions [p0, p1) when every row is of one group (a join without
    ``by``): no per-group state; the candidates are read off the right walk at positions
    that only move up, so nearest takes one walk, not two. Each strategy gets its own copy
    of the walk, its strategy a constant: one walk for all read the strategy at every row,
    and backward took 8 ms against 4.5 (1M x 1M, two threads)."""
    if how.strategy == BACKWARD:
        one_group_walk(left, p0, p1, right, how, out, BACKWARD)
    elif how.strategy == FORWARD:
        one_group_walk(left, p0, p1, right, how, out, FORWARD)
    else:
        one_group_walk(left, p0, p1, right, how, out, NEAREST)


def one_group_walk(left, p0, p1, right, how, out, strategy):
    """``one_group_piece`` under ``strategy`` (``how.strategy``). The right walk is read at
    ``below``, the first key not below x, and ``above``, the first key above it; polars'
    nearest rule also moves ``end``, one past the forward candidate's run of equal keys."""
    rkeys, rrows = right.keys, right.rows
    n = np.uint64(rkeys.size)
    exact = how.exact
    runs = strategy == NEAREST and how.nearest_tie == TIE_TO_FORWARD
    # The backward candidate is the last row at or before x (before it, when strict), the
    # forward one the first at or after it (after). When the backward one holds x itself,
    # nearest takes it whatever the forward one is (its gap, 0, is within any reach: reaches
    # are never negative), so it may stand after x's run: exact nearest reads ``above``
    # alone, as backward does.
    uses_below = strategy == FORWARD if exact else strategy != FORWARD
    uses_above = strategy != FORWARD if exact else strategy != BACKWARD
    first = left.keys[p0]
    below = np.uint64(lower_bound(rkeys, 0, rkeys.size, first) if uses_below else 0)
    above = np.uint64(upper_bound(rkeys, 0, rkeys.size, first) if uses_above else 0)
    end = above
    for p in range(p0, p1):
        x = left.keys[p]
        if uses_below:
            while below < n and less(rkeys[below], x):
                below += ONE
        if uses_above:
            while above < n and not less(x, rkeys[above]):
                above += ONE
        back_end = above if exact else below
        f = below if exact and strategy == FORWARD else above
        b, b_key = -1, x
        if strategy != FORWARD and back_end > ZERO:
            b, b_key = rrows[back_end - ONE], rkeys[back_end - ONE]
        f_row, f_key, f_last = -1, x, -1
        if strategy != BACKWARD and f < n:
            f_row, f_key = rrows[f], rkeys[f]
            if runs:
                end = max(end, f + ONE)
                while end < n and not less(f_key, rkeys[end]):
                    end += ONE
                f_last = rrows[end - ONE]
        i = np.uint64(left.rows[p])
        out[i] = choose(i, x, b, b_key, f_row, f_key, f_last, how)


def one_group_pass(left, right, n_chunks, how, out):
    p = piece_bounds(left.keys.size, n_chunks)
    for t in prange(n_chunks):
        one_group_piece(left, p[t], p[t + 1], right, how, out)


def choose(i, x, b, b_key, f, f_key, f_last, how):
    """Left row i's pick from its backward (row b, key b_key) and forward (f, f_key; f_last:
    the last row of f's key) candidates, -1 for none, by ``probe.decide``'s rules."""
    choice = decide(i, x, b >= 0, b_key, f >= 0, f_key, how)
    # One return: with a return in each branch, the forward walk it is inlined in took twice
    # its time (1M x 1M, one thread: 21 against 10 ms; nearest's 38 against 25).
    row = b if choice == PICK_BACK else how.no_match
    row = f if choice == PICK_FORWARD else row
    return f_last if choice == PICK_FORWARD_LAST else row


def scan_join(left, right, n_groups, n_chunks, how, out, empty=np.empty):
    """Fill ``out`` (the gather map, caller's left order) by merge scans of the two walks
    (``probe.Walk``: keys ascending) under ``how`` (a ``probe.Options``). ``empty(n,
    dtype)`` allocates nearest's candidates (the CPU backend's pooled pages: fresh ones
    faulted in at every join, 16 bytes a left row)."""
    n_chunks = max(1, min(n_chunks, left.keys.size))
    if left.keys.size < out.size:  # rows without a key or group are not walked
        out[:] = how.no_match
    if n_groups == 1:
        if left.keys.size:
            one_group_pass(left, right, n_chunks, how, out)
        return
    n_back = left.keys.size if how.strategy == NEAREST else 0
    # nearest: each left position's backward candidate, row and key, for the forward walk
    # (every position's written by the backward walk before the forward one reads it)
    back_row, back_key = empty(n_back, np.int64), empty(n_back, right.keys.dtype)
    if how.strategy != FORWARD:
        backward_pass(left, right, n_groups, n_chunks, how, back_row, back_key, out)
    if how.strategy != BACKWARD:
        forward_pass(left, right, n_groups, n_chunks, how, back_row, back_key, out)


def is_sorted_at(keys, rows, n_pieces):
    """Whether keys[rows] ascends in asofgpu's total order. ``rows`` ascend; as many as
    there are keys, they are every row, and the keys are read in their own order. Checked
    in ``n_pieces`` stretches at once, each stopping at its first descent (10M int64 keys
    read through row numbers on one thread: 16 ms a side of a one-shot join)."""
    n = rows.size
    every_row = n == keys.size
    n_pieces = max(1, min(n_pieces, n))
    descends = np.zeros(n_pieces, np.bool_)
    for t in prange(n_pieces):
        for p in range(max(1, t * n // n_pieces), (t + 1) * n // n_pieces):
            if every_row:
                descent = less(keys[p], keys[p - 1])
            else:  # row numbers index as uint64 (see the package's note on indices)
                descent = less(keys[np.uint64(rows[p])], keys[np.uint64(rows[p - 1])])
            if descent:
                descends[t] = True
                break
    return not descends.any()


def ascends_within_groups(keys, groups, rows, n_groups):
    """Whether along ``rows`` (the walked rows' numbers, ascending; every row when there
    are as many as keys) each group's keys ascend in asofgpu's total order, the order a
    cursor walk needs (kernels/cursor.py), whatever the groups' interleaving: rows sorted
    by group then key (per-symbol files, one after the other) are, as are rows sorted by
    key. Rows of a code at or past ``n_groups`` (a prepare's discarded ones: a null symbol
    or time) are passed over. One pass, which stops at the first descent (a shuffled batch
    within a few hundred rows); the groups' last keys stay in cache."""
    n = rows.size
    every_row = n == keys.size
    last = np.empty(n_groups, keys.dtype)
    seen = np.zeros(n_groups, np.bool_)
    past = np.uint64(n_groups)  # (uint64 against int64 would compare as float64)
    for p in range(n):
        # row numbers and group codes index as uint64 (see the package's note on indices)
        r = np.uint64(p) if every_row else np.uint64(rows[p])
        g = np.uint64(groups[r])
        if g >= past:
            continue
        x = keys[r]
        if seen[g] and less(x, last[g]):
            return False
        last[g] = x
        seen[g] = True
    return True


def copy_is_sorted(addresses, starts, like, out, n_pieces):
    """Copy runs of values into ``out`` and return whether they ascend in asofgpu's total
    order: run k (rows ``starts[k]`` to ``starts[k + 1]`` of ``out``) lies at the integer
    address ``addresses[k]``, of ``like``'s dtype. ``is_sorted_at`` of every row, checked in
    the copy's own pass: a key column that arrives in chunks is copied anyway, and copying
    then checking the 10 runs of 10M int64 keys took 19 ms, both in one pass 7 ms. In
    ``n_pieces`` stretches at once; each compares its own rows, the borders are compared
    after."""
    n = np.uint64(out.size)
    if n == ZERO:
        return True
    n_pieces = max(1, min(n_pieces, out.size))
    descends = np.zeros(n_pieces, np.bool_)
    for t in prange(n_pieces):
        # Unsigned positions, as in the chunked gather (see the package's note on indices).
        lo = np.uint64(t) * n // np.uint64(n_pieces)
        hi = np.uint64(t + 1) * n // np.uint64(n_pieces)
        k = 0
        while starts[k + 1] <= lo:
            k += 1
        previous = load_at(addresses[k], lo - starts[k], like)
        descent = False
        i = lo
        while i < hi:
            end = min(hi, starts[k + 1])
            address, start = addresses[k], starts[k]
            for j in range(i, end):
                x = load_at(address, j - start, like)
                out[j] = x
                descent |= less(x, previous)
                previous = x
            i = max(i, end)
            k += 1
        descends[t] = descent
    for t in range(1, n_pieces):
        border = np.uint64(t) * n // np.uint64(n_pieces)
        if less(out[border], out[border - ONE]):
            return False
    return not descends.any()


class Scan(NamedTuple):
    """The compiled kernels of one build: the merge scan, the order check of rows given by
    number, the copy of runs that checks their order on the way, and the check of each
    group's order."""

    scan_join: object
    is_sorted_at: object
    copy_is_sorted: object
    ascends_within_groups: object


def build(jit, parallel_jit, is_float, unsigned, parallel_range, inline_jit, load):
    """Return the ``Scan`` kernels: the helpers compiled with ``jit``, the loops
    over pieces and rows with ``parallel_jit`` (``parallel_range``: ``numba.prange`` there,
    or ``range``), the steps taken once a row with ``inline_jit``: a call per right row cost
    the forward walk twice its time (100 against 48 ms at 4M x 4M), and one per left row
    (``choose``) did again (1M x 1M, one thread: 23 against 11 ms). ``scan_join`` stays
    a plain function that calls the compiled passes: compiled, it compiled both passes for
    any join, and a first backward join compiled 5 s longer. ``load`` is the ``load_at``
    intrinsic."""
    lower, upper, gap_fn = search.build(jit, is_float, unsigned)
    names = {
        "less": jit(search.less_float if is_float else search.less_int),
        "gap": gap_fn,
        "lower_bound": lower,
        "upper_bound": upper,
        "prange": parallel_range,
    }
    # decide inlined too: the one-group nearest walk took 13.3 ms calling it, 11.2 with it
    # inlined (1M x 1M, one thread)
    names["decide"] = inline_jit(bind(probe.decide, **names))
    names["piece_bounds"] = jit(bind(piece_bounds, **names))
    for fn in (choose, take_backward, take_forward, one_group_walk):
        names[fn.__name__] = inline_jit(bind(fn, **names))
    for fn in (backward_piece, forward_piece, one_group_piece):  # they call choose
        names[fn.__name__] = jit(bind(fn, **names))
    for fn in (backward_pass, forward_pass, one_group_pass):
        names[fn.__name__] = parallel_jit(bind(fn, **names))
    return Scan(
        bind(scan_join, **names),
        parallel_jit(bind(is_sorted_at, **names)),
        parallel_jit(bind(copy_is_sorted, load_at=load, **names)),
        jit(bind(ascends_within_groups, **names)),
    )
