"""A by-key's place among the right side's distinct keys: how a left row given on the device
finds its group (``asofgpu/_device_groups.py``), one thread a row on the GPU.

``distinct`` holds the right side's distinct keys as int64 bits, sorted (``xp.unique``); a
row's value is searched for there and its position written out, or -1 where the right side
lacks it. Values may be integers of any width (the caller passes floats, bools and temporal
values already as int64 bits, uint64 viewed as int64): they are widened here, in the search,
so that a column of int32 keys is read once as it is. Done with array operations instead
(widen, searchsorted, clip, gather, compare, select, narrow) it was seven passes over the
column and its int64 copies.
"""

from . import bind

widen = None  # int64 of any integer: filled in by build()


def find_row(i, values, distinct, out):
    """``out[i]``: the position of ``values[i]`` in ``distinct``, or -1."""
    x = widen(values[i])
    lo = 0
    hi = len(distinct)
    while lo < hi:
        mid = (lo + hi) >> 1
        if distinct[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    if lo < len(distinct) and distinct[lo] == x:
        out[i] = lo
    else:
        out[i] = -1


def build(jit, widen_fn):
    """``find_row`` compiled with ``jit``; ``widen_fn``: ``numba.int64`` where compiled,
    ``int`` as plain Python."""
    return jit(bind(find_row, widen=widen_fn))
