"""The window join's kernels: each left row's window in the prepared right side, and
reductions over the windows.

The right side arrives prepared (``probe.Right``: keys sorted by (group, key), group ``g`` at
``[offsets[g], offsets[g + 1])``). A left row with key x and group g has the window of
positions ``[start, end)`` in g's range whose keys k satisfy ``x - before <= k <= x + after``,
written without ever computing ``x - before`` (which can overflow): k is in unless it is below
x by more than ``before`` (``less(k, x) and gap(k, x) > before``) or above x by more than
``after``. Both conditions hold on a prefix and a suffix of the sorted range: a search finds
the window's end (a binary search of the range, or, on the cpu, a gallop on from the end the
group's last row found, ``window_row_from``), and a gallop back from it its start. With
``prevailing`` the window also takes the position before ``start`` (the last right row below
the window: the state on entering it), when the group has one and no key lies exactly at the
window's start (that row is the state on entering, as kdb+'s ``wj`` takes it).

The reductions read a payload column at each position p of a window: ``values[rows[p]]``
(``rows``: the caller's right row at each position), or ``values[p]`` when ``rows`` is empty
(the values put in the prepared order beforehand, which reads each window's values end to
end), skipping those whose ``valid`` entry is False (an empty ``valid``: no nulls).
``reduce_row`` makes one pass for all of a column's reductions: the positions of the first
and last valid values and of the first smallest and largest, those smallest and largest keys
(where the keys are the values themselves, the caller takes them instead of gathering the
values at the positions), the sum of the ``values`` in window order, and the count.
``slide_piece`` makes the same for windows that move forward (the cpu's, for values in the
prepared order without nulls), each position entering and leaving once. Smallest and
largest compare ``keys`` with a plain ``<``: the caller gives keys in the values' order
(floats without NaN as they are; other floats as an integer image of asofgpu's total order,
NaN above +inf), since a comparison aware of NaN made the loop 4x slower. A left row of no
group (a negative code) has an empty window.
"""

import collections

import numpy as np

from . import APART, bind, search

#: The window's reach on the key's scale (uint64 for integer keys, float64 for float keys)
#: and whether it takes the prevailing row; ``befores`` and ``afters``, when not empty, hold a
#: reach per left row instead (a column of them, or a calendar reach).
Bounds = collections.namedtuple("Bounds", "before after prevailing befores afters")

#: A window's reductions, one array each (an empty array: not wanted): the positions of its
#: first and last valid value and of its smallest and largest key, those keys themselves, the
#: sum of its values and their count.
Reduced = collections.namedtuple("Reduced", "first last low high low_keys high_keys sums counts")

less = gap = at_edge = window_row_from = store = dense = sparse = reduce_row = prange = None
# (filled in by build())
window_piece = reduce_piece = slide_piece = None


def window_row(i, left_keys, left_groups, right, bounds, starts, ends):
    """Left row i's window, by a binary search of its group's range for the end."""
    window_row_from(i, left_keys, left_groups, right, bounds, starts, ends, right.offsets[:0])


def window_row_from(i, left_keys, left_groups, right, bounds, starts, ends, cursor):
    """Left row i's window; ``cursor`` (when not empty) holds each group's last window end
    found by the caller's piece, where the search for this one starts when the key there
    is still within reach: left rows in key order (trades in time order) find their end a
    few positions on, in cache lines their group's last row read, where a binary search of
    the whole range missed the cache at most of its steps."""
    g = left_groups[i]
    if g < 0:  # null key or group, or a group the right lacks: an empty window
        starts[i] = 0
        ends[i] = 0
        return
    lo = right.offsets[g]
    hi = right.offsets[g + 1]
    x = left_keys[i]
    before = bounds.befores[i] if len(bounds.befores) else bounds.before
    after = bounds.afters[i] if len(bounds.afters) else bounds.after
    a = lo
    b = hi
    if cursor.size:
        c = max(cursor[g], lo)
        if c > lo and less(x, right.keys[c - 1]) and gap(x, right.keys[c - 1]) > after:
            b = c  # this row's end lies before the last one's
        else:
            a = c  # galloping on: positions before a are within reach
            step = 1
            while a + step <= hi:
                k = right.keys[a + step - 1]
                if less(x, k) and gap(x, k) > after:
                    b = a + step - 1
                    break
                a += step
                step <<= 1
    while a < b:  # the first position more than `after` above x
        mid = (a + b) >> 1
        k = right.keys[mid]
        if less(x, k) and gap(x, k) > after:
            b = mid
        else:
            a = mid + 1
    end = a
    if cursor.size:
        cursor[g] = end
    # The first position not more than `before` below x, galloping back from the end:
    # windows are short beside their group's range, and the keys just read are in cache.
    a = lo
    b = end  # positions in [b, end) are within reach
    step = 1
    while end - step >= lo:
        k = right.keys[end - step]
        if less(k, x) and gap(k, x) > before:
            a = end - step + 1
            break
        b = end - step
        step <<= 1
    while a < b:
        mid = (a + b) >> 1
        k = right.keys[mid]
        if less(k, x) and gap(k, x) > before:
            a = mid + 1
        else:
            b = mid
    start = a
    if bounds.prevailing and start > lo and not at_edge(right.keys, start, end, x, before):
        start -= 1
    starts[i] = start
    ends[i] = end


def at_edge(keys, start, end, x, before):
    """Whether the window's first key lies exactly ``before`` below x: the state on entering
    the window is then in it, and no earlier row prevails (kdb+'s ``wj``)."""
    if start == end:
        return False
    k = keys[start]
    return not less(x, k) and gap(k, x) == before


def reduce_row(i, starts, ends, rows, values, keys, valid, out):
    """Window i's reductions in one pass, into the arrays of ``out`` (a ``Reduced``; an
    empty array is not written): the positions of its first and last valid value, of its
    first smallest and largest ``keys`` (-1 when none; no keys: not looked for) and those
    keys (0 when none), the sum of its valid ``values`` in window order (``sums[i]`` starts
    at 0 of their type; no values: none) and their count."""
    if rows.size == 0 and valid.size == 0:
        found = dense(starts[i], ends[i], values, keys, out.sums[i])
    else:
        found = sparse(starts[i], ends[i], rows, values, keys, valid, out.sums[i])
    store(i, found, out)


def store(i, found, out):
    """Write window i's reductions (``found``: first, last, low, high, low_key, high_key,
    total, count) into the wanted arrays of ``out``."""
    first, last, low, high, low_key, high_key, total, count = found
    if out.first.size:
        out.first[i] = first
    if out.last.size:
        out.last[i] = last
    if out.low.size:
        out.low[i] = low
    if out.high.size:
        out.high[i] = high
    if out.low_keys.size:
        out.low_keys[i] = low_key
    if out.high_keys.size:
        out.high_keys[i] = high_key
    out.sums[i] = total
    out.counts[i] = count


def dense(start, end, values, keys, total):
    """``reduce_row`` of values and keys in the prepared order without nulls, the common
    case: the first and last positions are the window's ends, and each loop reads its array
    end to end. Returns (first, last, low, high, low_key, high_key, total, count)."""
    low_key = keys[0] if keys.size else 0  # of the keys' type; the window's, once read
    high_key = low_key
    if start >= end:
        return -1, -1, -1, -1, low_key, high_key, total, 0
    low = start
    high = start
    if keys.size:
        low_key = keys[start]
        high_key = low_key
        for p in range(start + 1, end):
            k = keys[p]
            if k < low_key:
                low_key = k
                low = p
            if high_key < k:
                high_key = k
                high = p
    if values.size:
        for p in range(start, end):
            total += values[p]
    return start, end - 1, low, high, low_key, high_key, total, end - start


def sparse(start, end, rows, values, keys, valid, total):
    """``reduce_row`` through ``rows`` (an empty one: values and keys in the prepared order),
    skipping rows that ``valid`` marks null. Returns (first, last, low, high, low_key,
    high_key, total, count)."""
    first = -1
    last = -1
    low = -1
    high = -1
    count = 0
    low_key = keys[0] if keys.size else 0  # of the keys' type; set at the first valid value
    high_key = low_key
    for p in range(start, end):
        r = rows[p] if rows.size else p
        if valid.size == 0 or valid[r]:
            if values.size:
                total += values[r]
            if keys.size:
                k = keys[r]
                if first < 0 or k < low_key:
                    low_key = k
                    low = p
                if first < 0 or high_key < k:
                    high_key = k
                    high = p
            if first < 0:
                first = p
            last = p
            count += 1
    return first, last, low, high, low_key, high_key, total, count


def slide_piece(lo, hi, order, starts, ends, values, keys, out):
    """``reduce_row`` of the windows ``[lo, hi)`` in the order of their starts (so each
    group's windows come in key order, and their ends mostly ascend too), over values and
    keys in the prepared order without nulls: each position enters and leaves the windows'
    state once, where ``dense`` reads every window whole. The j-th window in that order
    spans ``[starts[j], ends[j])`` and is left row ``order[j]``'s: the bounds are read in
    the slide's order, end to end, and only the results are written at the left rows
    (bounds read through ``order`` missed the cache at every window, and each miss held up
    the slide: 0.12 s against 0.07 s for a column of 1M windows over 10M quotes).

    The state is a queue of two stacks (a "two-stacks" sliding window): the front, positions
    ``[front, split)`` with the aggregate of each suffix up to ``split`` (computed in one
    backward pass when the front runs out), and the back, ``[split, reached)``, with one
    running aggregate. A window ``[s, e)`` with ``front <= s`` is the front's suffix at s
    combined with the back, the back first extended to e; sums add the window's values only,
    so their error stays within the window's. A window that moves backward (an end before
    the last one) is read whole. The state is the piece's own: pieces may cut a group.
    """
    if lo >= hi:
        return
    longest = 0
    for j in range(lo, hi):
        longest = max(longest, ends[j] - starts[j])
    # The extremes' positions only when wanted (the bench's bid: 55-58 ms with, 48-50 without).
    positions = keys.size > 0 and (out.low.size > 0 or out.high.size > 0)
    sums = np.empty(longest, out.sums.dtype)  # suffix aggregates, at position - front
    lows = np.empty(longest if positions else 0, np.int64)
    highs = np.empty(longest if positions else 0, np.int64)
    low_keys = np.empty(longest if keys.size else 0, keys.dtype)  # keys[lows], read in order
    high_keys = np.empty(longest if keys.size else 0, keys.dtype)
    front = 0
    split = 0
    reached = 0
    zero = out.sums[order[lo]]  # of the sums' type (out.sums starts at 0)
    back_sum = zero
    back_low = -1
    back_high = -1
    back_low_key = 0
    back_high_key = 0
    for j in range(lo, hi):
        i = order[j]
        s = starts[j]
        e = ends[j]
        if s >= e or s < front or e < reached:  # empty, or moving backward: whole
            found = dense(s, e, values, keys, zero)
        else:
            if s >= reached:  # past all the state holds: start afresh
                front = s
                split = s
                reached = s
                back_sum = zero
                back_low = -1
                back_high = -1
            while reached < e:  # the back takes in the window's new positions
                if values.size:
                    back_sum += values[reached]
                if keys.size:
                    k = keys[reached]
                    if back_low < 0 or k < back_low_key:
                        back_low_key = k
                        back_low = reached
                    if back_high < 0 or back_high_key < k:
                        back_high_key = k
                        back_high = reached
                reached += 1
            if s >= split:  # the front is used up: [s, reached) becomes the front
                front = s
                split = reached
                last = split - 1 - front
                if values.size:
                    suffix = values[split - 1]  # in a register: no store to load back
                    sums[last] = suffix
                    for q in range(last - 1, -1, -1):
                        suffix = values[front + q] + suffix
                        sums[q] = suffix
                if keys.size and not positions:  # the keys alone, without a branch
                    low_key = keys[split - 1]
                    high_key = low_key
                    low_keys[last] = low_key
                    high_keys[last] = high_key
                    for q in range(last - 1, -1, -1):
                        k = keys[front + q]
                        low_key = low_key if low_key < k else k
                        high_key = high_key if k < high_key else k
                        low_keys[q] = low_key
                        high_keys[q] = high_key
                elif keys.size:
                    low = split - 1
                    high = low
                    low_key = keys[low]
                    high_key = low_key
                    lows[last] = low
                    highs[last] = high
                    low_keys[last] = low_key
                    high_keys[last] = high_key
                    for q in range(last - 1, -1, -1):
                        k = keys[front + q]
                        if not low_key < k:  # the first of equal ones: the earlier
                            low_key = k
                            low = front + q
                        if not k < high_key:
                            high_key = k
                            high = front + q
                        lows[q] = low
                        low_keys[q] = low_key
                        highs[q] = high
                        high_keys[q] = high_key
                back_sum = zero
                back_low = -1
                back_high = -1
            q = s - front
            total = zero
            low = -1
            high = -1
            low_key = back_low_key
            high_key = back_high_key
            if values.size:
                total = sums[q] + back_sum
            if keys.size:
                if positions:
                    low = lows[q]
                    high = highs[q]
                low_key = low_keys[q]
                high_key = high_keys[q]
                if back_low >= 0 and back_low_key < low_key:
                    low = back_low
                    low_key = back_low_key
                if back_high >= 0 and high_key < back_high_key:
                    high = back_high
                    high_key = back_high_key
            found = (s, e - 1, low, high, low_key, high_key, total, e - s)
        store(i, found, out)


def slides(order, starts, ends, values, keys, out, piece_starts):
    for piece in prange(piece_starts.size - 1):
        lo = piece_starts[piece]
        slide_piece(lo, piece_starts[piece + 1], order, starts, ends, values, keys, out)


def window_piece(lo, hi, left_keys, left_groups, right, bounds, starts, ends, cursor):
    for i in range(lo, hi):
        window_row_from(i, left_keys, left_groups, right, bounds, starts, ends, cursor)


def reduce_piece(lo, hi, starts, ends, rows, values, keys, valid, out):
    for i in range(lo, hi):
        reduce_row(i, starts, ends, rows, values, keys, valid, out)


def windows(left_keys, left_groups, right, bounds, starts, ends, n_pieces, cursors):
    """Every left row's window, the rows in ``n_pieces`` pieces in parallel; with
    ``cursors``, each piece keeps each group's last window end (``window_row_from``)."""
    n = starts.size
    step = (n + n_pieces - 1) // n_pieces
    # 0: below every group's range; no columns: no cursors
    width = right.offsets.size - 1 + APART if cursors else 0
    cursor = np.zeros((n_pieces, width), np.int64)
    for piece in prange(n_pieces):
        lo = min(n, piece * step)
        window_piece(
            lo,
            min(n, lo + step),
            left_keys,
            left_groups,
            right,
            bounds,
            starts,
            ends,
            cursor[piece],
        )


def reduces(starts, ends, rows, values, keys, valid, out, n_pieces):
    n = starts.size
    step = (n + n_pieces - 1) // n_pieces
    for piece in prange(n_pieces):
        lo = min(n, piece * step)
        reduce_piece(lo, min(n, lo + step), starts, ends, rows, values, keys, valid, out)


Kernels = collections.namedtuple("Kernels", "window_row reduce_row windows reduces slides")


def build(jit, parallel_jit, is_float, unsigned, parallel_range, piece_jit):
    """The row functions compiled with ``jit``, their loops over a piece of the left rows
    with ``piece_jit``, and the loops over the pieces with ``parallel_jit`` over
    ``parallel_range`` (``numba.prange``, or ``range``). ``is_float`` chooses the key
    comparisons and distances of the windows (the reductions compare their ``keys`` with a
    plain ``<``, whatever their type).

    On the cpu the row functions are inlined into the pieces' loops, and a thread calls a
    piece at a time: a call per row, passing a dozen arrays, counted references to each
    (0.2 s of the bench's reductions); inlined into the ``prange`` loop itself, numba took
    ``reduce_row``'s counters for the loop's reductions and wrote counts of 0."""
    names = {
        "less": jit(search.less_float if is_float else search.less_int),
        "gap": search.build(jit, is_float, unsigned)[2],
        "prange": parallel_range,
    }
    names["at_edge"] = jit(bind(at_edge, **names))
    names["window_row_from"] = jit(bind(window_row_from, **names))
    names["window_row"] = jit(bind(window_row, **names))
    names["store"] = jit(store)
    names["dense"] = jit(dense)
    names["sparse"] = jit(sparse)
    names["reduce_row"] = jit(bind(reduce_row, **names))
    names["window_piece"] = piece_jit(bind(window_piece, **names))
    names["reduce_piece"] = piece_jit(bind(reduce_piece, **names))
    names["slide_piece"] = piece_jit(bind(slide_piece, **names))
    return Kernels(
        names["window_row"],
        names["reduce_row"],
        parallel_jit(bind(windows, **names)),
        parallel_jit(bind(reduces, **names)),
        parallel_jit(bind(slides, **names)),
    )
