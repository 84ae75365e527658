"""Per-row tolerances: a join's matches that lie farther from their left key than the row's
own tolerance become ``no_match``, with the probe's distances (``search.gap_*``: exact, NaN
above +inf). The join itself ran without a tolerance; this pass is what a column of
tolerances (or a calendar one, a column per direction) adds.
"""

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


def build(jit, parallel_jit, is_float, unsigned, parallel_range):
    """``drop_past`` over ``parallel_range`` with ``parallel_jit``; ``is_float`` chooses the
    distances."""
    names = {
        "less": jit(search.less_float if is_float else search.less_int),
        "gap": search.build(jit, is_float, unsigned)[2],
        "prange": parallel_range,
    }
    return parallel_jit(bind(drop_past, **names))
