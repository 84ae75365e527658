"""The naive oracle: asofgpu's semantics (docs/architecture.md, section 3) as a plain loop over Python
values. Deliberately slow and obvious; every other implementation is checked against it.

Keys are Python numbers (int or float, NaN allowed) or None for null; groups are tuples of
hashable values (None for null), or None when there is no ``by``.
"""

from __future__ import annotations

import math

NO_MATCH = -(2**31)


def _order(key):
    """Sort key of the total order: NaN above +inf, all NaN equal, -0.0 == 0.0."""
    if isinstance(key, float) and math.isnan(key):
        return (1, 0.0)
    return (0, key)


def _distance(a, b):
    if _order(a) == _order(b):
        return 0
    if _order(a)[0] != _order(b)[0]:  # one NaN, one not
        return math.inf
    return abs(b - a)  # exact for Python ints


def _group(values, null_equal: bool):
    """A hashable group, or None when the row can match nothing."""
    if values is None:
        return ()
    out = []
    for v in values:
        if v is None:
            if not null_equal:
                return None
            out.append(("null",))
        elif isinstance(v, float) and math.isnan(v):
            out.append(("nan",))
        else:
            out.append(v)
    return tuple(out)


def oracle(
    left_keys,
    right_keys,
    left_groups=None,
    right_groups=None,
    *,
    strategy="backward",
    allow_exact_matches=True,
    tolerance=None,
    nearest_tie="forward",
    null_equal=False,
    tie_break=None,
):
    """The gather map as a list: for each left row a right row number or NO_MATCH."""
    n_right = len(right_keys)
    if left_groups is None:
        left_groups = [None] * len(left_keys)
    if right_groups is None:
        right_groups = [None] * n_right
    ties = tie_break if tie_break is not None else [None] * n_right

    def tie_rank(j):
        t = ties[j]
        return (0,) if t is None else (1, _order(t))

    out = []
    for lkey, lgroup in zip(left_keys, left_groups):
        group = _group(lgroup, null_equal)
        if lkey is None or group is None:
            out.append(NO_MATCH)
            continue
        candidates = [
            j
            for j in range(n_right)
            if right_keys[j] is not None and _group(right_groups[j], null_equal) == group
        ]
        lo = _order(lkey)
        before = [
            j
            for j in candidates
            if _order(right_keys[j]) < lo or (allow_exact_matches and _order(right_keys[j]) == lo)
        ]
        after = [
            j
            for j in candidates
            if _order(right_keys[j]) > lo or (allow_exact_matches and _order(right_keys[j]) == lo)
        ]

        def rows_at(rows, best):
            return [j for j in rows if _order(right_keys[j]) == best]

        def last_row(rows):  # largest tie-break wins, then the last row
            top = max(tie_rank(j) for j in rows)
            return [j for j in rows if tie_rank(j) == top][-1]

        def first_row(rows):  # largest tie-break wins, then the first row
            top = max(tie_rank(j) for j in rows)
            return [j for j in rows if tie_rank(j) == top][0]

        b = f = None
        if before:
            b = last_row(rows_at(before, max(_order(right_keys[j]) for j in before)))
        if after:
            f_rows = rows_at(after, min(_order(right_keys[j]) for j in after))
            f = first_row(f_rows)
            f_last = last_row(f_rows)
        if strategy == "backward":
            pick = b
        elif strategy == "forward":
            pick = f
        elif b is None or f is None:
            pick = b if f is None else (f_last if nearest_tie == "forward" else f)
        else:
            db, df = _distance(right_keys[b], lkey), _distance(lkey, right_keys[f])
            if nearest_tie == "forward":
                pick = f_last if df <= db else b
            else:
                pick = b if db <= df else f
        if pick is not None and tolerance is not None:
            if _distance(right_keys[pick], lkey) > tolerance:
                pick = None
        out.append(NO_MATCH if pick is None else pick)
    return out


def splice_oracle(
    left_keys,
    right_keys,
    left_groups=None,
    right_groups=None,
    *,
    allow_exact_matches=True,
    tolerance=None,
    null_equal=False,
):
    """The splice join as two lists (left row, right row per output row; NO_MATCH for none),
    following its rules one by one: every row of both sides once; ordered by the driving row's
    key, left rows first at equal keys, each side in input order, null keys last (left, then
    right); each row beside the other side's prevailing row of its group: the last in (key,
    input order) with key <= its key (< without exact matches), within ``tolerance``."""
    sides = {
        "left": (left_keys, left_groups or [None] * len(left_keys)),
        "right": (right_keys, right_groups or [None] * len(right_keys)),
    }

    def prevailing(side: str, row: int):
        keys, groups = sides[side]
        other_keys, other_groups = sides["right" if side == "left" else "left"]
        key, group = keys[row], _group(groups[row], null_equal)
        if key is None or group is None:
            return NO_MATCH
        best = None
        for j, (k, g) in enumerate(zip(other_keys, other_groups)):
            if k is None or _group(g, null_equal) != group:
                continue
            before = _order(k) < _order(key) or (allow_exact_matches and _order(k) == _order(key))
            if before and (best is None or _order(k) >= _order(other_keys[best])):
                best = j
        if best is not None and tolerance is not None:
            if _distance(other_keys[best], key) > tolerance:
                best = None
        return NO_MATCH if best is None else best

    rows = []
    for side_rank, side in enumerate(("left", "right")):
        for i, key in enumerate(sides[side][0]):
            place = (1,) if key is None else (0, _order(key))
            rows.append((place, side_rank, i, side))
    rows.sort(key=lambda r: r[:3])
    left_map, right_map = [], []
    for _, _, i, side in rows:
        other = prevailing(side, i)
        left_map.append(i if side == "left" else other)
        right_map.append(i if side == "right" else other)
    return left_map, right_map


def window_oracle(left_keys, left_groups, right_keys, right_groups, before, after, prevailing):
    """The window join's windows: for each left row, the right rows of its group whose key k
    lies within [x - before, x + after] of its key x (distances as ``_distance`` takes them,
    both ends inclusive), in key order then row order; with ``prevailing``, first the last of
    those (in that order) whose key is below the window, when there is one and no key lies
    exactly at the window's start (kdb+'s ``wj``: the state on entering). Null keys and
    null groups (``by`` nulls never match) give empty windows; null right keys are in none.

    Returns a list of lists of right row numbers."""
    out = []
    for i, x in enumerate(left_keys):
        g = _group(None if left_groups is None else left_groups[i], False)
        if x is None or g is None:
            out.append([])
            continue
        mine = [
            j
            for j, k in enumerate(right_keys)
            if k is not None
            and _group(None if right_groups is None else right_groups[j], False) == g
        ]
        mine.sort(key=lambda j: (_order(right_keys[j]), j))
        below = [
            j
            for j in mine
            if _order(right_keys[j]) < _order(x) and _distance(right_keys[j], x) > before
        ]
        inside = [
            j
            for j in mine
            if j not in below
            and not (_order(x) < _order(right_keys[j]) and _distance(x, right_keys[j]) > after)
        ]
        # A key exactly at x - before is the state on entering: the window holds it. On
        # integer keys the reach counts whole ticks (a fraction is dropped, as distances are
        # whole): the window starts on the key's grid.
        edge = math.floor(before) if isinstance(x, int) and math.isfinite(before) else before
        at_edge = any(
            _order(right_keys[j]) <= _order(x) and _distance(right_keys[j], x) == edge
            for j in inside
        )
        out.append(([below[-1]] if prevailing and below and not at_edge else []) + inside)
    return out


def reduce_oracle(window, values, agg):
    """One window's aggregate of ``values`` (Python numbers, None for null) over its right
    rows ``window``, in order: count, sum, mean (a float64 loop), min and max (the first of
    the smallest or largest in the total order, NaN above +inf), first, last; None when the
    window holds no value (count: 0). min, max, first and last return the right row."""
    rows = [j for j in window if values[j] is not None]
    if agg == "count":
        return len(rows)
    if not rows:
        return None
    if agg == "sum":
        total = 0.0 if isinstance(values[rows[0]], float) else 0
        for j in rows:
            total += values[j]
        return total
    if agg == "mean":
        total = 0.0
        for j in rows:
            total += float(values[j])
        return total / len(rows)
    if agg == "first":
        return rows[0]
    if agg == "last":
        return rows[-1]
    best = rows[0]
    for j in rows[1:]:
        if (agg == "min" and _order(values[j]) < _order(values[best])) or (
            agg == "max" and _order(values[best]) < _order(values[j])
        ):
            best = j
    return best
