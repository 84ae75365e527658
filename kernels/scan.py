"""The merge scan: an as-of join of two sides walked together in key (time) order.

When both sides can be read in key order (market data arrives time-sorted), a single walk
keeps, per group, the last right row seen so far, and reads off each left row's backward
match in O(1): no sort of the right side by group, no binary search, no cache miss per row.
The forward match is the same walk run from the end. This is the CPU's one-shot path; the
per-row binary search (``probe.py``) stays the path of a prepared right side and of the GPU.

Inputs are the key arrays in the caller's row order plus ``lorder`` / ``rorder``: the rows
to walk, in key order (rows without a key or a group are left out; ``rorder`` keeps the
caller's order among equal keys, which decides which of several equal rows a pick takes).

The walk splits into ``n_chunks`` pieces of the left order that run in parallel. A piece
starts from the per-group state of everything before it (after it, walking forward), which
the pieces compute first, each over its own stretch of the right side, and then combine in
a short serial pass over (pieces x groups): the carry of DISTRIBUTED.md on one machine.
"""

import collections

import numpy as np

from . import bind, search
from .probe import BACKWARD, FORWARD, NEAREST, TIE_TO_FORWARD

less = gap = prange = None  # filled in by build()

#: The join's options, passed to the kernels as one (numba-typed) tuple.
Options = collections.namedtuple("Options", "strategy exact has_tol tol nearest_tie no_match")


def lower_bound_at(keys, order, x):
    """First position p of ``order`` with keys[order[p]] not below x."""
    lo = 0
    hi = order.size
    while lo < hi:
        mid = (lo + hi) >> 1
        if less(keys[order[mid]], x):
            lo = mid + 1
        else:
            hi = mid
    return lo


def upper_bound_at(keys, order, x):
    """First position p of ``order`` with keys[order[p]] above x."""
    lo = 0
    hi = order.size
    while lo < hi:
        mid = (lo + hi) >> 1
        if less(x, keys[order[mid]]):
            hi = mid
        else:
            lo = mid + 1
    return lo


def take_backward(right_keys, right_groups, r, last, last_key):
    g = right_groups[r]
    last[g] = r
    last_key[g] = right_keys[r]


def take_forward(right_keys, right_groups, r, first, first_key, run_last, runs):
    """Walking down: r becomes its group's first row. With ``runs`` (polars' nearest pick:
    the last row of the winning key), a smaller key starts a new run whose last row is r."""
    g = right_groups[r]
    k = right_keys[r]
    if runs and (first[g] < 0 or less(k, first_key[g])):
        run_last[g] = r
    first[g] = r
    first_key[g] = k


def backward_piece(left_keys, left_groups, lorder, p0, p1, right_keys, right_groups, rorder,
                   j, last, last_key, how, back, back_key, out):
    for p in range(p0, p1):
        i = lorder[p]
        x = left_keys[i]
        while j < rorder.size:
            r = rorder[j]
            if how.exact:
                if less(x, right_keys[r]):
                    break
            elif not less(right_keys[r], x):
                break
            take_backward(right_keys, right_groups, r, last, last_key)
            j += 1
        g = left_groups[i]
        if how.strategy == BACKWARD:
            out[i] = choose(x, last[g], last_key[g], -1, x, -1, how)
        else:  # nearest: the forward walk decides
            back[i] = last[g]
            back_key[i] = last_key[g]


def forward_piece(left_keys, left_groups, lorder, p0, p1, right_keys, right_groups, rorder,
                  j, first, first_key, run_last, how, back, back_key, out):
    """``j``: one past the last position not yet walked (the walk goes down)."""
    runs = how.strategy == NEAREST and how.nearest_tie == TIE_TO_FORWARD
    for p in range(p1 - 1, p0 - 1, -1):
        i = lorder[p]
        x = left_keys[i]
        while j > 0:
            r = rorder[j - 1]
            if how.exact:
                if less(right_keys[r], x):
                    break
            elif not less(x, right_keys[r]):
                break
            take_forward(right_keys, right_groups, r, first, first_key, run_last, runs)
            j -= 1
        g = left_groups[i]
        if how.strategy == NEAREST:
            out[i] = choose(x, back[i], back_key[i], first[g], first_key[g], run_last[g], how)
        else:
            out[i] = choose(x, -1, x, first[g], first_key[g], -1, how)


def piece_bounds(n_left, n_chunks):
    bounds = np.empty(n_chunks + 1, np.int64)
    for t in range(n_chunks + 1):
        bounds[t] = t * n_left // n_chunks
    return bounds


def backward_pass(left_keys, left_groups, lorder, right_keys, right_groups, rorder, n_groups,
                  n_chunks, how, back, back_key, out):
    p = piece_bounds(lorder.size, n_chunks)
    # Right rows below j0[t] have keys below piece t's first left key: walked before it
    # under either exactness.
    j0 = np.zeros(n_chunks, np.int64)
    for t in range(1, n_chunks):
        j0[t] = lower_bound_at(right_keys, rorder, left_keys[lorder[p[t]]])
    last = np.full((n_chunks, n_groups), -1, np.int64)
    last_key = np.zeros((n_chunks, n_groups), right_keys.dtype)
    for t in prange(1, n_chunks):
        for j in range(j0[t - 1], j0[t]):
            take_backward(right_keys, right_groups, rorder[j], last[t], last_key[t])
    for t in range(1, n_chunks):  # the carry: latest row of each group before piece t
        for g in range(n_groups):
            if last[t, g] < 0:
                last[t, g] = last[t - 1, g]
                last_key[t, g] = last_key[t - 1, g]
    for t in prange(n_chunks):
        backward_piece(left_keys, left_groups, lorder, p[t], p[t + 1], right_keys,
                       right_groups, rorder, j0[t], last[t], last_key[t], how, back, back_key,
                       out)


def forward_pass(left_keys, left_groups, lorder, right_keys, right_groups, rorder, n_groups,
                 n_chunks, how, back, back_key, out):
    p = piece_bounds(lorder.size, n_chunks)
    runs = how.strategy == NEAREST and how.nearest_tie == TIE_TO_FORWARD
    # Right rows from j1[t] on have keys above piece t's last left key.
    j1 = np.full(n_chunks, rorder.size, np.int64)
    for t in range(n_chunks - 1):
        j1[t] = upper_bound_at(right_keys, rorder, left_keys[lorder[p[t + 1] - 1]])
    first = np.full((n_chunks, n_groups), -1, np.int64)
    first_key = np.zeros((n_chunks, n_groups), right_keys.dtype)
    run_last = np.full((n_chunks, n_groups), -1, np.int64)
    for t in prange(n_chunks - 1):
        for j in range(j1[t + 1] - 1, j1[t] - 1, -1):
            take_forward(right_keys, right_groups, rorder[j], first[t], first_key[t],
                         run_last[t], runs)
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
        forward_piece(left_keys, left_groups, lorder, p[t], p[t + 1], right_keys,
                      right_groups, rorder, j1[t], first[t], first_key[t], run_last[t], how,
                      back, back_key, out)


def choose(x, b, b_key, f, f_key, f_last, how):
    """One left row's pick from its backward (row b, key b_key) and forward (f, f_key)
    candidates, -1 for none: the same rules as the end of ``probe.probe_row``."""
    has_b = b >= 0
    has_f = f >= 0
    take_f = has_f
    if how.strategy == BACKWARD:
        take_f = False
    elif how.strategy == NEAREST and has_b and has_f:
        back_gap = gap(b_key, x)
        fwd_gap = gap(x, f_key)
        if how.nearest_tie == TIE_TO_FORWARD:
            take_f = fwd_gap <= back_gap
        else:
            take_f = fwd_gap < back_gap
    if take_f:
        if how.has_tol and gap(x, f_key) > how.tol:
            return how.no_match
        if how.strategy == NEAREST and how.nearest_tie == TIE_TO_FORWARD:
            return f_last  # polars: whichever key wins, its last row
        return f
    if has_b and how.strategy != FORWARD:
        if how.has_tol and gap(b_key, x) > how.tol:
            return how.no_match
        return b
    return how.no_match


def scan_join(left_keys, left_groups, lorder, right_keys, right_groups, rorder, n_groups,
              n_chunks, how, out):
    """Fill ``out`` (the gather map, caller's left order) by merge scans. ``how`` holds the
    options: strategy, exact, has_tol, tol, nearest_tie and no_match."""
    n_chunks = max(1, min(n_chunks, lorder.size))
    if lorder.size < out.size:  # rows without a key or group are not walked
        out[:] = how.no_match
    n_back = out.size if how.strategy == NEAREST else 0
    back = np.full(n_back, -1, np.int64)
    back_key = np.empty(n_back, right_keys.dtype)
    if how.strategy != FORWARD:
        backward_pass(left_keys, left_groups, lorder, right_keys, right_groups, rorder,
                      n_groups, n_chunks, how, back, back_key, out)
    if how.strategy != BACKWARD:
        forward_pass(left_keys, left_groups, lorder, right_keys, right_groups, rorder,
                     n_groups, n_chunks, how, back, back_key, out)


def is_sorted_at(keys, order):
    """Whether keys[order] ascends in asofgpu's total order."""
    for p in range(1, order.size):
        if less(keys[order[p]], keys[order[p - 1]]):
            return False
    return True


def build(jit, parallel_jit, is_float, unsigned, parallel_range):
    """Return ``(scan_join, is_sorted_at)``: the helpers compiled with ``jit``, the loops
    over pieces and rows with ``parallel_jit`` (``parallel_range``: ``numba.prange`` there,
    or ``range``)."""
    cmp = jit(search.less_float if is_float else search.less_int)
    _, _, gap_fn = search.build(jit, is_float, unsigned)
    names = {"less": cmp, "gap": gap_fn, "prange": parallel_range}
    for fn in (lower_bound_at, upper_bound_at, take_backward, take_forward, piece_bounds,
               choose):
        names[fn.__name__] = jit(bind(fn, **names))
    for fn in (backward_piece, forward_piece):  # they call choose
        names[fn.__name__] = jit(bind(fn, **names))
    for fn in (backward_pass, forward_pass):
        names[fn.__name__] = parallel_jit(bind(fn, **names))
    return parallel_jit(bind(scan_join, **names)), jit(bind(is_sorted_at, **names))
