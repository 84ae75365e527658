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

The reductions read a payload column at each position p of a window: ``values[rows[p]]``
(``rows``: the caller's right row at each position), or ``values[p]`` when ``rows`` is empty
(the values put in the prepared order beforehand, which reads each window's values end to
end), skipping those whose ``valid`` entry is False (an empty ``valid``: no nulls).
``reduce_row`` makes one pass for all of a column's reductions: the positions of the first
and last valid values and of the first smallest and largest (in asofgpu's total order, NaN
above +inf), the sum in window order, and the count. A left row of no group (a negative
code) has an empty window.
"""

import collections

from . import bind, search

#: The window's reach on the key's scale (uint64 for integer keys, float64 for float keys)
#: and whether it takes the prevailing row.
Bounds = collections.namedtuple("Bounds", "before after prevailing")

#: A window's reductions, one array each (an empty position array: not wanted).
Reduced = collections.namedtuple("Reduced", "first last low high sums counts")

less = gap = window_row = reduce_row = prange = None  # filled in by build()


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


def reduce_row(i, starts, ends, rows, values, valid, out):
    """Window i's reductions of ``values`` in one pass, into the arrays of ``out`` (a
    ``Reduced``; an empty position array is not computed): the positions of its first and
    last valid value and of its first smallest and largest (-1 when none), the sum of its
    valid values in window order (``sums[i]`` starts at 0 of the values' type; no values:
    none) and their count."""
    first = -1
    last = -1
    low = -1
    high = -1
    count = 0
    total = out.sums[i]
    extremes = out.low.size > 0 or out.high.size > 0
    for p in range(starts[i], ends[i]):
        r = rows[p] if rows.size else p
        if valid.size == 0 or valid[r]:
            if first < 0:
                first = p
                low = p
                high = p
            elif extremes:
                v = values[r]
                if less(v, values[rows[low] if rows.size else low]):
                    low = p
                elif less(values[rows[high] if rows.size else high], v):
                    high = p
            last = p
            count += 1
            if values.size:
                total += values[r]
    if out.first.size:
        out.first[i] = first
    if out.last.size:
        out.last[i] = last
    if out.low.size:
        out.low[i] = low
    if out.high.size:
        out.high[i] = high
    out.sums[i] = total
    out.counts[i] = count


def windows(left_keys, left_groups, right, bounds, starts, ends):
    for i in prange(starts.size):
        window_row(i, left_keys, left_groups, right, bounds, starts, ends)


def reduces(starts, ends, rows, values, valid, out):
    for i in prange(starts.size):
        reduce_row(i, starts, ends, rows, values, valid, out)


Kernels = collections.namedtuple("Kernels", "window_row reduce_row windows reduces")


def build(jit, parallel_jit, is_float, unsigned, parallel_range):
    """The row functions compiled with ``jit`` and their loops over left rows with
    ``parallel_jit`` over ``parallel_range`` (``numba.prange``, or ``range``). ``is_float``
    chooses the key comparisons and distances (windows) or the comparison of the values
    (reductions: a float or integer payload)."""
    names = {
        "less": jit(search.less_float if is_float else search.less_int),
        "gap": search.build(jit, is_float, unsigned)[2],
        "prange": parallel_range,
    }
    names["window_row"] = jit(bind(window_row, **names))
    names["reduce_row"] = jit(bind(reduce_row, **names))
    return Kernels(
        names["window_row"],
        names["reduce_row"],
        parallel_jit(bind(windows, **names)),
        parallel_jit(bind(reduces, **names)),
    )
