"""The left side's group codes for fixed-width by-columns (integers, temporals, floats): each
value looked up in an open-addressing table of the right side's dictionary, built once.

Arrow's ``index_in`` hashes its whole value set again at every call. For a prepared join of
100,000 integer groups, probing 1,000 rows took 1.35 ms, 1.17 of them in ``index_in``; for
1M rows of 1,000 groups it took 6.6 of 12.7 ms, on one core.

Values arrive as unsigned integers of their own width (numpy views of Arrow's data buffer),
so two values are equal exactly when their bits are, and widened to ``uint64`` they stay
so. Floats come canonical (``_encode.canonical_by``: one NaN, no -0.0), so equal floats have
equal bits. Nulls are in the validity ``bitmap`` (bits from ``bit0``; empty: no nulls).
"""

import numpy as np

from .strings import NULL, is_valid, mix

MIN_SLOTS = 16

prange = None  # filled in by build()


def lookup_table(values, bitmap, bit0):
    """(slots, keys): an open-addressing table of distinct ``values`` (a dictionary), at most
    half full, each value's slot holding its position; nulls left out."""
    size = MIN_SLOTS
    while size < 2 * values.size:
        size *= 2
    slots = np.full(size, -1, np.int32)
    keys = np.empty(size, np.uint64)
    mask = np.uint64(size - 1)
    for c in range(values.size):
        if not is_valid(bitmap, bit0, c):
            continue
        x = np.uint64(values[c])
        k = mix(x) & mask
        while slots[k] >= 0:  # distinct values: a taken slot never holds this one
            k = (k + np.uint64(1)) & mask
        slots[k] = c
        keys[k] = x
    return slots, keys


def lookup(slots, keys, values, bitmap, bit0, null_code, codes):
    """``codes[i]``: the position in the table's dictionary of row i's value, NULL where it
    has none, ``null_code`` where the row is null."""
    mask = np.uint64(slots.size - 1)
    for i in prange(codes.size):
        if not is_valid(bitmap, bit0, i):
            codes[i] = null_code
            continue
        x = np.uint64(values[i])
        k = mix(x) & mask
        code = NULL
        while slots[k] >= 0:  # a free slot ends the value's run: not in the table
            if keys[k] == x:
                code = slots[k]
                break
            k = (k + np.uint64(1)) & mask
        codes[i] = code


def build(inline_jit, jit, lookup_jit, lookup_range):
    """Return ``lookup_table`` (compiled with ``jit``) and ``lookup`` (with ``lookup_jit``,
    its rows in ``lookup_range``: ``numba.prange`` or ``range``); their helpers with
    ``inline_jit``."""
    from . import bind

    helpers = {fn.__name__: inline_jit(bind(fn)) for fn in (is_valid, mix)}
    return (jit(bind(lookup_table, **helpers)),
            lookup_jit(bind(lookup, prange=lookup_range, **helpers)))
