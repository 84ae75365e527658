"""Bounds on a sorted slice ``keys[lo:hi]`` in asofgpu's total order, and key distances.

The order: integers as they are; floats with -0.0 == 0.0 and NaN above +inf, all NaN equal.
Distances never overflow: integer gaps are taken as unsigned 64-bit differences of the
larger minus the smaller, which is exact for every pair of int64 or uint64 keys.
"""

from . import bind

INF = float("inf")
less = unsigned = None  # filled in by build()


def less_int(a, b):
    return a < b


def less_float(a, b):
    # NaN sorts above everything else and equals itself.
    return a < b or (b != b and a == a)


def gap_int(low, high):
    """``high - low`` for ``low <= high``: exact as an unsigned 64-bit difference."""
    return unsigned(high) - unsigned(low)


def gap_float(low, high):
    """``high - low`` for ``low <= high`` in the total order (0 for equal keys, inf to NaN)."""
    if low == high or (high != high and low != low):
        return 0.0
    if high != high:
        return INF
    return high - low


def lower_bound(keys, lo, hi, x):
    """First position in [lo, hi) whose key is not below x (hi if none)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if less(keys[mid], x):
            lo = mid + 1
        else:
            hi = mid
    return lo


def upper_bound(keys, lo, hi, x):
    """First position in [lo, hi) whose key is above x (hi if none)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if less(x, keys[mid]):
            hi = mid
        else:
            lo = mid + 1
    return lo


def build(jit, is_float, unsigned_cast):
    """Return ``(lower_bound, upper_bound, gap)`` for integer or float keys.

    ``unsigned_cast`` turns an integer key into uint64 with wrap-around (``numba.uint64``
    on the numba backends), which makes ``unsigned(high) - unsigned(low)`` the exact distance.
    """
    cmp = jit(less_float if is_float else less_int)
    gap = jit(gap_float) if is_float else jit(bind(gap_int, unsigned=unsigned_cast))
    return jit(bind(lower_bound, less=cmp)), jit(bind(upper_bound, less=cmp)), gap
