"""The window join's kernels: each left row's window in the prepared right side, and
reductions over the windows.

The right side arrives prepared (``probe.Right``: keys sorted by (group, key), group ``g`` at
``[offsets[g], offsets[g + 1])``). A left row with key x and group g has the window of
positions ``[start, end)`` in g's range whose keys k satisfy ``x - before <= k <= x + after``,
written without ever computing ``x - before`` (which can overflow): k is in unless it is below
x by more than ``before`` (``less(k, x) and gap(k, x) > before``) or above x by more than
``after``. Both conditions hold on a prefix and a suffix of the sorted range, so two binary
searches find the window. With ``prevailing`` the window also takes the position before
``start`` (the last right row below the window: the state on entering it), when the group has
one.

The reductions read a payload column through the prepared order: ``values[rows[p]]`` for
each position p of a window (``rows``: the caller's right row at each position), skipping rows
whose ``valid`` entry is False (an empty ``valid``: no nulls). ``pick_row`` returns the
position of the first or last valid value, or of the first smallest or largest one in
asofgpu's total order (NaN above +inf); ``sum_row`` sums the valid values in window order and
counts them. A row of ``no_group`` (negative) has an empty window.
"""

import collections

from . import bind, search

#: The window's reach on the key's scale (uint64 for integer keys, float64 for float keys)
#: and whether it takes the prevailing row.
Bounds = collections.namedtuple("Bounds", "before after prevailing")

FIRST, LAST, MIN, MAX = 0, 1, 2, 3
PICKS = {"first": FIRST, "last": LAST, "min": MIN, "max": MAX}

less = gap = window_row = pick_row = sum_row = prange = None  # filled in by build()


def window_row(i, left_keys, left_groups, right, bounds, starts, ends):
    g = left_groups[i]
    if g < 0:  # null key or group, or a group the right lacks: an empty window
        starts[i] = 0
        ends[i] = 0
        return
    lo = right.offsets[g]
    hi = right.offsets[g + 1]
    x = left_keys[i]
    a = lo
    b = hi
    while a < b:  # the first position not more than `before` below x
        mid = (a + b) >> 1
        k = right.keys[mid]
        if less(k, x) and gap(k, x) > bounds.before:
            a = mid + 1
        else:
            b = mid
    start = a
    b = hi
    while a < b:  # the first position more than `after` above x
        mid = (a + b) >> 1
        k = right.keys[mid]
        if less(x, k) and gap(x, k) > bounds.after:
            b = mid
        else:
            a = mid + 1
    if bounds.prevailing and start > lo:
        start -= 1
    starts[i] = start
    ends[i] = a


def pick_row(i, starts, ends, rows, values, valid, op, out):
    """The position in window i of its first or last valid value (op FIRST, LAST), or of its
    first smallest or largest (MIN, MAX); -1 when it has no valid value."""
    best = -1
    if op == LAST:
        p = ends[i] - 1
        while p >= starts[i]:
            if valid.size == 0 or valid[rows[p]]:
                best = p
                break
            p -= 1
    else:
        for p in range(starts[i], ends[i]):
            r = rows[p]
            if valid.size == 0 or valid[r]:
                if best < 0:
                    best = p
                    if op == FIRST:
                        break
                elif op == MIN:
                    if less(values[r], values[rows[best]]):
                        best = p
                elif less(values[rows[best]], values[r]):
                    best = p
    out[i] = best


def sum_row(i, starts, ends, rows, values, valid, sums, counts):
    """Window i's valid values summed in window order (into ``sums[i]``, which starts at 0 of
    the accumulator's type) and counted."""
    total = sums[i]
    count = 0
    for p in range(starts[i], ends[i]):
        r = rows[p]
        if valid.size == 0 or valid[r]:
            total += values[r]
            count += 1
    sums[i] = total
    counts[i] = count


def windows(left_keys, left_groups, right, bounds, starts, ends):
    for i in prange(starts.size):
        window_row(i, left_keys, left_groups, right, bounds, starts, ends)


def picks(starts, ends, rows, values, valid, op, out):
    for i in prange(out.size):
        pick_row(i, starts, ends, rows, values, valid, op, out)


def sums(starts, ends, rows, values, valid, out, counts):
    for i in prange(out.size):
        sum_row(i, starts, ends, rows, values, valid, out, counts)


Kernels = collections.namedtuple("Kernels", "window_row pick_row sum_row windows picks sums")


def build(jit, parallel_jit, is_float, unsigned, parallel_range):
    """The row functions compiled with ``jit`` and their loops over left rows with
    ``parallel_jit`` over ``parallel_range`` (``numba.prange``, or ``range``). ``is_float``
    chooses the key comparisons and distances, and the comparison of ``pick_row``'s values
    (float or integer payload)."""
    names = {
        "less": jit(search.less_float if is_float else search.less_int),
        "gap": search.build(jit, is_float, unsigned)[2],
        "prange": parallel_range,
    }
    names["window_row"] = jit(bind(window_row, **names))
    names["pick_row"] = jit(bind(pick_row, **names))
    names["sum_row"] = jit(bind(sum_row, **names))
    return Kernels(
        names["window_row"],
        names["pick_row"],
        names["sum_row"],
        parallel_jit(bind(windows, **names)),
        parallel_jit(bind(picks, **names)),
        parallel_jit(bind(sums, **names)),
    )
