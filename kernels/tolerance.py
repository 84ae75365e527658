"""Per-row tolerances: a join's matches that lie farther from their left key than the row's
own tolerance become ``no_match``, with the probe's distances (``search.gap_*``: exact, NaN
above +inf). The join itself ran without a tolerance; this pass is what a column of
tolerances (or a calendar one, a column per direction) adds.

A nearest join with a reach per direction joins backward and forward, each within its own
reach, then ``choose_nearest`` takes the closer candidate by the probe's own rule.
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


def choose_nearest(
    out, back, forward, nearest, left_keys, right_keys_by_row, tie_forward, unsettled, no_match
):
    """Each left row's nearest pick from its backward and forward matches (each already
    within its own reach): the closer one, a tie going forward when ``tie_forward`` (polars'
    rule) else backward (pandas'). A forward pick under polars' rule is the last row of its
    key, which ``nearest`` (the row's nearest match without a tolerance) names when it has
    that key; otherwise the row is marked ``unsettled`` (and holds the forward row)."""
    for i in prange(out.size):
        b = back[i]
        f = forward[i]
        unsettled[i] = 0
        take_f = f != no_match
        if take_f and b != no_match:
            x = left_keys[i]
            to_back = gap(right_keys_by_row[b], x)
            to_forward = gap(x, right_keys_by_row[f])
            take_f = to_forward <= to_back if tie_forward else to_forward < to_back
        if not take_f:
            out[i] = b
        elif not tie_forward:
            out[i] = f
        else:
            n = nearest[i]
            k = right_keys_by_row[f]
            if (
                n != no_match
                and not less(right_keys_by_row[n], k)
                and not less(k, right_keys_by_row[n])
            ):
                out[i] = n
            else:
                out[i] = f
                unsettled[i] = 1


def build(jit, parallel_jit, is_float, unsigned, parallel_range):
    """``drop_past`` and ``choose_nearest`` over ``parallel_range`` with ``parallel_jit``;
    ``is_float`` chooses the comparisons and distances."""
    names = {
        "less": jit(search.less_float if is_float else search.less_int),
        "gap": search.build(jit, is_float, unsigned)[2],
        "prange": parallel_range,
    }
    return types.SimpleNamespace(
        drop_past=parallel_jit(bind(drop_past, **names)),
        choose_nearest=parallel_jit(bind(choose_nearest, **names)),
    )
