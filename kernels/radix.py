"""A stable LSD radix argsort for the CPU: the key order of shuffled sides for the merge scan.

numpy's stable argsort of 64-bit keys is a timsort, several seconds for 10M random keys on
two cores; this sorts (key, row) pairs 12 bits at a time, each pass parallel over pieces of the
input, and only over the bits the keys' range needs (a day of nanosecond timestamps: 45 bits,
four passes). Keys arrive as ``uint64`` whose order is the wanted order (``order_bits`` turns
asofgpu's int64 and float64 keys into such).
"""

import numpy as np

from . import bind

DIGIT_BITS = 12
RADIX = 1 << DIGIT_BITS
prange = None  # filled in by build()


def order_bits_int(keys, rows, out):
    """int64 (or uint64) keys of ``rows`` as uint64 offsets from their minimum (order kept,
    no overflow); returns the minimum's bits, which ``keys_from_bits`` adds back."""
    low = keys[rows[0]]
    for p in range(rows.size):
        low = min(low, keys[rows[p]])
    for p in prange(rows.size):
        out[p] = np.uint64(keys[rows[p]]) - np.uint64(low)
    return np.uint64(low)


def order_bits_float(keys, rows, out):
    """Canonical float64 keys (one NaN, no -0.0) as uint64 in asofgpu's total order: flip all
    bits of negatives, set the sign bit of the rest (NaN lands above +inf); then as offsets
    from their minimum, which is returned."""
    bits = keys.view(np.uint64)
    for p in prange(rows.size):
        b = bits[rows[p]]
        out[p] = ~b if b >> np.uint64(63) else b | np.uint64(1 << 63)
    low = out[0]
    for p in range(rows.size):
        low = min(low, out[p])
    for p in prange(rows.size):
        out[p] -= low
    return low


def keys_from_bits(bits, low, is_float, out):
    """The keys back from their sorted order bits: no random reads of the original keys."""
    top = np.uint64(1 << 63)
    for p in prange(bits.size):
        b = bits[p] + low
        if is_float:
            b = b ^ top if b & top else ~b
        out[p] = b


def take_int32(values, rows, out):
    for p in prange(rows.size):
        out[p] = values[rows[p]]


def argsort_bits(bits, rows, n_pieces, spare_bits, spare_rows):
    """``rows`` reordered by ``bits`` (stable: equal keys keep their order in ``rows``);
    ``bits`` is sorted in place alongside. The passes alternate between the arrays and the
    caller's spares (of the same sizes): the result is ``rows`` or ``spare_rows``."""
    n = bits.size
    high = np.uint64(0)
    for p in range(n):
        high = max(high, bits[p])
    passes = 0
    while high > 0:
        passes += 1
        high >>= np.uint64(DIGIT_BITS)
    bounds = np.empty(n_pieces + 1, np.int64)
    for t in range(n_pieces + 1):
        bounds[t] = t * n // n_pieces
    mask = np.uint64(RADIX - 1)
    counts = np.zeros((n_pieces, RADIX), np.int64)
    src_bits, src_rows = bits, rows
    dst_bits, dst_rows = spare_bits, spare_rows
    for k in range(passes):
        shift = np.uint64(k * DIGIT_BITS)
        for t in prange(n_pieces):
            counts[t, :] = 0
            for p in range(bounds[t], bounds[t + 1]):
                counts[t, (src_bits[p] >> shift) & mask] += 1
        start = 0  # each piece writes its rows of digit d after all earlier digits and pieces
        for d in range(RADIX):
            for t in range(n_pieces):
                c = counts[t, d]
                counts[t, d] = start
                start += c
        for t in prange(n_pieces):
            for p in range(bounds[t], bounds[t + 1]):
                b = src_bits[p]
                q = counts[t, (b >> shift) & mask]
                dst_bits[q] = b
                dst_rows[q] = src_rows[p]
                counts[t, (b >> shift) & mask] = q + 1
        src_bits, dst_bits = dst_bits, src_bits
        src_rows, dst_rows = dst_rows, src_rows
    if passes % 2:
        bits[:] = src_bits
    return src_rows


def build(jit, parallel_range):
    """Return ``(order_bits_int, order_bits_float, argsort_bits, keys_from_bits,
    take_int32)`` compiled with ``jit``
    (``parallel_range``: ``numba.prange`` under a parallel jit, else ``range``)."""
    names = {"prange": parallel_range}
    return tuple(jit(bind(fn, **names))
                 for fn in (order_bits_int, order_bits_float, argsort_bits, keys_from_bits,
                            take_int32))
