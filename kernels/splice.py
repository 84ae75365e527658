"""The splice join's merge: both sides' rows on one timeline, written straight into the two
output maps.

Each side arrives as its keyed rows in key order (``keys`` ascending in asofgpu's total order,
``rows`` the caller's row number of each, or no rows at all when the keys are the side's in
row order, as time-sorted input gives them) and each row's backward match into the other side.
Output position ``d`` gets the ``d``-th row of the merge, in which a left row goes before a
right row of an equal key. A left row writes itself and its match; a right row likewise.

The output is cut into one piece a thread. A piece finds where it starts in both sides by one
binary search along its first diagonal (the merge path: ``left_count``), then merges serially,
reading both sides in order. O(n_left + n_right) work, no sort of the concatenation.
"""

import numpy as np

from . import bind, search

less = prange = None  # filled in by build()


def left_count(left_keys, right_keys, d):
    """How many left rows are among the first ``d`` rows of the merge: the first ``i`` whose
    left row does not go before right row ``d - i - 1`` (it goes before unless that right key
    is below its key: at equal keys left rows come first)."""
    lo = max(0, d - right_keys.size)
    hi = min(d, left_keys.size)
    while lo < hi:
        mid = (lo + hi) >> 1
        if less(right_keys[d - mid - 1], left_keys[mid]):
            hi = mid
        else:
            lo = mid + 1
    return lo


def merge(
    left_keys,
    left_rows,
    right_of_left,
    right_keys,
    right_rows,
    left_of_right,
    left_map,
    right_map,
    n_pieces,
):
    """Fill ``left_map[:n]`` and ``right_map[:n]`` (n: both sides' keyed rows) in merge
    order, ``n_pieces`` pieces in parallel."""
    n_left, n_right = left_keys.size, right_keys.size
    n = n_left + n_right
    step = (n + n_pieces - 1) // n_pieces
    for piece in prange(n_pieces):
        start = piece * step
        end = min(n, start + step)
        if start < end:
            i = left_count(left_keys, right_keys, start)
            j = start - i
            for d in range(start, end):
                if j >= n_right or (i < n_left and not less(right_keys[j], left_keys[i])):
                    row = left_rows[i] if left_rows.size else i
                    left_map[d] = row
                    right_map[d] = right_of_left[np.uint64(row)]
                    i += 1
                else:
                    row = right_rows[j] if right_rows.size else j
                    right_map[d] = row
                    left_map[d] = left_of_right[np.uint64(row)]
                    j += 1


def build(jit, parallel_jit, is_float, unsigned, parallel_range):
    """Return ``merge``: ``left_count`` compiled with ``jit``, ``merge`` with ``parallel_jit``
    over ``parallel_range`` (``numba.prange``, or ``range``). ``unsigned`` is unused: the
    signature is that of the other walks' builds."""
    names = {
        "less": jit(search.less_float if is_float else search.less_int),
        "prange": parallel_range,
    }
    names["left_count"] = jit(bind(left_count, **names))
    return parallel_jit(bind(merge, **names))
