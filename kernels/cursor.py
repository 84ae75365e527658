"""The probe of a time-ordered left batch against a prepared right side, on the CPU.

A per-row binary search over the whole group range touches a new stretch of the (large)
sorted right keys at every row: a cache miss per level. When the left keys ascend (trades
arrive in time order), each group's answer only moves forward, so each row gallops from where
its group's previous row stopped: a few probes into cache lines that row just used.

Only each group's keys need to ascend: a batch sorted by group then key (per-symbol files
one after the other) is walked as it comes too. A left batch in any other order is walked in
key order (``order``: its rows sorted by key, radix-sorted by the caller, which also passes
their keys and groups in that order, so that the walk reads them front to back), the answers
written back to each row's place. The walk
splits into pieces that run in parallel, each with its own cursor per group (starting at
the group's first position); the answers are those of ``probe.probe_row``.
"""

import numpy as np

from . import APART, bind, search
from .probe import BACKWARD, FORWARD, NEAREST

less = pick = lower_bound = upper_bound = prange = prefetch = None  # filled in by build()

# Each row's search misses the cache twice: its group's next keys, then ``rows_last`` where
# it stopped (1,000 groups interleave over arrays far larger than the cache). The misses of
# one row wait on each other and on its branches; a prefetch for the row AHEAD rows later, at
# its group's cursor, overlaps them with this row's work: a quarter to a third less time per
# row on the bench machine (time-ordered rows; shuffled ones gain nothing, and lose nothing).
AHEAD = 8

# Time-ordered trades against ten times as many quotes move each group's cursor about ten
# keys a row. When the answer lies among the WINDOW keys from the cursor (the test is one
# predictable branch), it takes four fixed steps that compile to conditional moves; galloping
# took as many steps, each a branch mispredicted about half the time. The steps below are
# written out for WINDOW = 16. Measured on the bench's 1M x 10M: 0.04 -> 0.033 s, together
# with a single search for single-direction strategies (probe_piece).
WINDOW = 16
U1, U2, U3, U4, U7, U8 = (np.uint64(k) for k in (1, 2, 3, 4, 7, 8))


def gallop_lower(keys, start, hi, x):
    """First position in [start, hi) whose key is not below x, searching outward from start."""
    if start + WINDOW <= hi:
        if not less(keys[np.uint64(start + WINDOW - 1)], x):
            b = np.uint64(start)  # keys before b are below x; the answer is at most start + 15
            b = b + U8 if less(keys[b + U7], x) else b
            b = b + U4 if less(keys[b + U3], x) else b
            b = b + U2 if less(keys[b + U1], x) else b
            return np.int64(b + U1 if less(keys[b], x) else b)
        start += WINDOW
    step = 1
    low = start
    while start + step <= hi and less(keys[np.uint64(start + step - 1)], x):
        low = start + step
        step <<= 1
    return lower_bound(keys, low, min(start + step, hi), x)


def gallop_upper(keys, start, hi, x):
    """First position in [start, hi) whose key is above x, searching outward from start."""
    if start + WINDOW <= hi:
        if less(x, keys[np.uint64(start + WINDOW - 1)]):
            b = np.uint64(start)  # keys before b are at most x; the answer is at most start + 15
            b = b if less(x, keys[b + U7]) else b + U8
            b = b if less(x, keys[b + U3]) else b + U4
            b = b if less(x, keys[b + U1]) else b + U2
            return np.int64(b if less(x, keys[b]) else b + U1)
        start += WINDOW
    step = 1
    low = start
    while start + step <= hi and not less(x, keys[np.uint64(start + step - 1)]):
        low = start + step
        step <<= 1
    return upper_bound(keys, low, min(start + step, hi), x)


def probe_piece(p0, p1, left, right, how, cursor, out):
    """The answers of the left walk's positions [p0, p1), galloping from ``cursor``."""
    offsets, right_keys = right.offsets, right.keys
    strategy, exact = how.strategy, how.exact
    last = right_keys.size - 1
    for p in range(p0, p1):
        if p + AHEAD < p1 and last >= 0:
            ahead = np.uint64(left.groups[p + AHEAD])
            at = max(cursor[ahead], offsets[ahead])
            # The window's keys (8 bytes each) and the answer's likely line of rows
            prefetch(right_keys, min(at + 8, last))
            prefetch(right_keys, min(at + 16, last))
            prefetch(right.rows_last, min(at + 8, last))
        # Rows and group codes index as uint64 (see the package's note on indices).
        i = np.uint64(left.rows[p])
        g = np.uint64(left.groups[p])
        lo = offsets[g]
        hi = offsets[g + U1]
        x = left.keys[p]
        # A group's keys ascend, so the keys before a cursor left by a lower search are below
        # x, and those before one left by an upper search at most x: each search starts there.
        # A call makes one kind of cursor (the strategy decides which searches run).
        start = max(cursor[g], lo)
        if strategy == NEAREST or (strategy == BACKWARD) != exact:
            first_ge = gallop_lower(right_keys, start, hi, x)
            cursor[g] = first_ge
            first_gt = first_ge
            if strategy == NEAREST:
                # Its forward candidate lies past x's own run, which is seldom there: a key
                # above x at first_ge (read just now) ends the search without a gallop.
                if first_ge < hi and not less(x, right_keys[np.uint64(first_ge)]):
                    first_gt = gallop_upper(right_keys, first_ge, hi, x)
        else:  # backward with exact matches, or forward without: one bound, above x
            first_gt = gallop_upper(right_keys, start, hi, x)
            cursor[g] = first_gt
            first_ge = first_gt  # not read: only b (backward) or f (forward) is
        b = (first_gt if exact else first_ge) - 1
        f = first_ge if exact else first_gt
        if strategy == BACKWARD:
            f = hi
        elif strategy == FORWARD:
            b = lo - 1
        pick(i, x, b, f, lo, hi, right, how, out)


def probe_sorted(left, right, how, n_pieces, out):
    """Probe the left rows of the walk ``left`` (a ``probe.Walk``: each group's keys
    ascending) against ``right`` (a ``probe.Right``) under ``how`` (a ``probe.Options``).
    The rest of ``out`` (rows without a key or group) gets ``no_match``."""
    n = left.rows.size
    if n < out.size:
        out[:] = how.no_match
    n_groups = right.offsets.size - 1
    cursor = np.zeros((n_pieces, n_groups + APART), np.int64)  # 0: below every group's range
    for t in prange(n_pieces):
        probe_piece(t * n // n_pieces, (t + 1) * n // n_pieces, left, right, how, cursor[t], out)


def build(jit, parallel_jit, is_float, unsigned, parallel_range, prefetch):
    """Return ``probe_sorted``: helpers compiled with ``jit``, the loop over
    pieces with ``parallel_jit`` (``parallel_range``: ``numba.prange`` there, or ``range``;
    ``prefetch(array, i)``: a cache hint, asofgpu/_intrinsics.py)."""
    from . import probe

    lower, upper, gap_fn = search.build(jit, is_float, unsigned)
    names = {
        "less": jit(search.less_float if is_float else search.less_int),
        "lower_bound": lower,
        "upper_bound": upper,
        "gap": gap_fn,
        "prange": parallel_range,
        "prefetch": prefetch,
    }
    names["end_of_run"] = jit(bind(probe.end_of_run, **names))
    names["decide"] = jit(bind(probe.decide, **names))
    names["pick"] = jit(bind(probe.pick, **names))
    for fn in (gallop_lower, gallop_upper):
        names[fn.__name__] = jit(bind(fn, **names))
    names["probe_piece"] = jit(bind(probe_piece, **names))
    return parallel_jit(bind(probe_sorted, **names))
