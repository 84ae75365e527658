"""Per-row tolerances: a join's matches that lie farther from their left key than the row's
own tolerance become ``no_match``, with the probe's distances (``search.gap_*``: exact, NaN
above +inf). The join itself ran without a tolerance; this pass is what a column of
tolerances (or a calendar one, a column per direction) adds.

A nearest join with a reach per direction joins backward and forward without a tolerance,
then ``nearest_within`` keeps each candidate within its own reach and takes the closer by
the probe's own rule, in one pass.
"""

import types

from . import bind, search

less = gap = prange = None  # filled in by build()


def drop_past(out, left_keys, right_keys_by_row, tolerances, no_match):
    for i in prange(out.size):
        r = out[i]
        if r != no_match:
            x = left_keys[i]
            k = right_keys_by_row[r]
            distance = gap(x, k) if less(x, k) else gap(k, x)
            if distance > tolerances[i]:
                out[i] = no_match


def nearest_within(
    out,
    back,
    forward,
    left_keys,
    right_keys_by_row,
    back_reach,
    forward_reach,
    tie_forward,
    no_match,
):
    """Each left row's nearest pick from its backward and forward matches (the join's maps
    without a tolerance), each kept only within its own reach: the closer of those left, a
    tie going forward when ``tie_forward`` (polars' rule) else backward (pandas')."""
    for i in prange(out.size):
        x = left_keys[i]
        b = back[i]
        f = forward[i]
        to_back = gap(x, x)  # 0, of the distances' type
        to_forward = to_back
        if b != no_match:
            to_back = gap(right_keys_by_row[b], x)
            if to_back > back_reach[i]:
                b = no_match
        if f != no_match:
            to_forward = gap(x, right_keys_by_row[f])
            if to_forward > forward_reach[i]:
                f = no_match
        take_f = f != no_match
        if take_f and b != no_match:
            take_f = to_forward <= to_back if tie_forward else to_forward < to_back
        out[i] = f if take_f else b


def build(jit, parallel_jit, is_float, unsigned, parallel_range):
    """``drop_past`` and ``nearest_within`` over ``parallel_range`` with ``parallel_jit``;
    ``is_float`` chooses the comparisons and distances."""
    names = {
        "less": jit(search.less_float if is_float else search.less_int),
        "gap": search.build(jit, is_float, unsigned)[2],
        "prange": parallel_range,
    }
    return types.SimpleNamespace(
        drop_past=parallel_jit(bind(drop_past, **names)),
        nearest_within=parallel_jit(bind(nearest_within, **names)),
    )
