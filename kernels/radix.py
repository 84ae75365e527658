"""A stable LSD radix argsort for the CPU: the key order of shuffled sides for the merge scan,
of unordered prepared batches for the cursors and the stream, and of the right keys at prepare;
and the counting sort of the right rows by group at prepare (one digit of that scheme).

numpy's stable argsort of 64-bit keys is a timsort, several seconds for 10M random keys on
two cores; this sorts (key, row) pairs 12 bits at a time, each pass parallel over pieces of the
input. Keys arrive as ``uint64`` whose order is the wanted order (``order_bits`` turns
asofgpu's int64 and float64 keys into such), as offsets from their minimum, so only the bits
their range needs are sorted. Below them the bits may hold each row's group code: the merge
scan reads keys and groups in key order, and both then come back from the sorted bits, not
from a random gather of the groups (50 ms for 10M rows). The order is then by key and group,
which the scan does not mind: it needs only the keys ascending, and rows of one group with
equal keys in their order.

Only the top bits are sorted in passes over the whole input: as many as the row count has
(rounded up to whole digits: 24 for 10M rows, where a day of nanosecond timestamps has 47).
That leaves out of order only the rows within runs of keys equal in those top bits, and with
about one row per top value those runs are short: an insertion sort settles each, in one
parallel pass over the sorted bits. 10M such keys take 2 passes and the settling instead of
4 passes: 0.16-0.18 s instead of 0.24-0.33 s. Keys clustered in a few top values make long runs,
which get a radix sort of their own low bits.
"""

from typing import NamedTuple

import numpy as np

from . import APART, bind

DIGIT_BITS = 12
RADIX = 1 << DIGIT_BITS
RUN_DIGIT_BITS = 8  # long runs are sorted 8 bits a pass: counters for 256 digits, not 4096
LONG_RUN = 128  # longer runs of equal top bits take a radix sort, shorter an insertion sort
prange = sort_run = insertion_sort = None  # filled in by build()


def order_bits_int(keys, rows, groups, group_bits, out):
    """int64 (or uint64) keys of ``rows`` as uint64 offsets from their minimum (order kept,
    no overflow), shifted up by ``group_bits`` to hold the row's code in ``groups`` below
    them, when both fit in 64 bits. Returns the minimum's bits, which ``keys_from_bits`` adds
    back, and the group bits used (0 when they did not fit)."""
    # Row numbers index as uint64 (see the package's note on indices).
    low = keys[np.uint64(rows[0])]
    high = low
    for p in range(rows.size):
        k = keys[np.uint64(rows[p])]
        low = min(low, k)
        high = max(high, k)
    if bit_length(np.uint64(high) - np.uint64(low)) + group_bits > 64:
        group_bits = 0
    shift = np.uint64(group_bits)
    for p in prange(rows.size):
        row = np.uint64(rows[p])
        b = (np.uint64(keys[row]) - np.uint64(low)) << shift
        if group_bits:
            b |= np.uint64(groups[row])
        out[p] = b
    return np.uint64(low), group_bits


def order_bits_float(keys, rows, groups, group_bits, out):
    """Canonical float64 keys (one NaN, no -0.0) as uint64 in asofgpu's total order: flip all
    bits of negatives, set the sign bit of the rest (NaN lands above +inf); then as offsets
    from their minimum, with the group codes below them as in ``order_bits_int``."""
    bits = keys.view(np.uint64)
    for p in prange(rows.size):
        b = bits[np.uint64(rows[p])]
        out[p] = ~b if b >> np.uint64(63) else b | np.uint64(1 << 63)
    low = out[0]
    high = out[0]
    for p in range(rows.size):
        low = min(low, out[p])
        high = max(high, out[p])
    if bit_length(high - low) + group_bits > 64:
        group_bits = 0
    shift = np.uint64(group_bits)
    for p in prange(rows.size):
        b = (out[p] - low) << shift
        if group_bits:
            b |= np.uint64(groups[np.uint64(rows[p])])
        out[p] = b
    return low, group_bits


def keys_from_bits(bits, low, is_float, group_bits, keys, groups):
    """The keys (and with ``group_bits``, the group codes) back from their sorted order bits:
    no random reads of the original arrays."""
    top = np.uint64(1 << 63)
    shift = np.uint64(group_bits)
    mask = np.uint64((1 << group_bits) - 1)
    for p in prange(bits.size):
        b = bits[p]
        if group_bits:
            groups[p] = b & mask
        b = (b >> shift) + low
        if is_float:
            b = b ^ top if b & top else ~b
        keys[p] = b


def take_int32(values, rows, out):
    for p in prange(rows.size):
        out[p] = values[np.uint64(rows[p])]


def bit_length(x):
    n = 0
    while x > 0:
        n += 1
        x >>= np.uint64(1)
    return n


def argsort_bits(bits, rows, n_pieces, spare_bits, spare_rows):
    """``rows`` reordered by ``bits`` (stable: equal keys keep their order in ``rows``);
    ``bits`` is sorted in place alongside. The passes over the top bits alternate between the
    arrays and the caller's spares (of the same sizes), then the runs equal there are settled
    with the other pair as scratch: the result is ``rows`` or ``spare_rows``."""
    n = bits.size
    high = np.uint64(0)
    for p in range(n):
        high = max(high, bits[p])
    n_bits = bit_length(high)
    top_bits = min(n_bits, -(-bit_length(np.uint64(n)) // DIGIT_BITS) * DIGIT_BITS)
    low_bit = n_bits - top_bits
    passes = -(-top_bits // DIGIT_BITS)
    bounds = np.empty(n_pieces + 1, np.int64)
    for t in range(n_pieces + 1):
        bounds[t] = t * n // n_pieces
    mask = np.uint64(RADIX - 1)
    counts = np.zeros((n_pieces, RADIX), np.int64)
    src_bits, src_rows = bits, rows
    dst_bits, dst_rows = spare_bits, spare_rows
    for k in range(passes):
        shift = np.uint64(low_bit + k * DIGIT_BITS)
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
    if low_bit > 0:  # the arrays the result is not in are free: scratch for long runs
        settle_runs(src_bits, src_rows, low_bit, bounds, dst_bits, dst_rows)
    if passes % 2:
        bits[:] = src_bits
    return src_rows


def settle_runs(bits, rows, low_bit, bounds, spare_bits, spare_rows):
    """Sort each run of ``bits`` equal above ``low_bit`` by its low bits (stably), in
    parallel over pieces: a piece takes the runs that start in it, to their ends."""
    n = bits.size
    shift = np.uint64(low_bit)
    for t in prange(bounds.size - 1):
        p, end = bounds[t], bounds[t + 1]
        while 0 < p < end and bits[p] >> shift == bits[p - 1] >> shift:
            p += 1  # a run from the piece before: that piece's
        while p < end:
            top = bits[p] >> shift
            q = p + 1
            while q < n and bits[q] >> shift == top:
                q += 1
            if q - p > LONG_RUN:
                sort_run(bits, rows, p, q, spare_bits, spare_rows)
            elif q - p > 1:
                insertion_sort(bits, rows, p, q)
            p = q


def insertion_sort(bits, rows, p, q):
    """Stable sort of positions p..q-1 by ``bits``: few and nearly sorted rows."""
    for i in range(p + 1, q):
        b = bits[i]
        if b >= bits[i - 1]:
            continue
        r = rows[i]
        j = i - 1
        while j >= p and bits[j] > b:
            bits[j + 1] = bits[j]
            rows[j + 1] = rows[j]
            j -= 1
        bits[j + 1] = b
        rows[j + 1] = r


def sort_run(bits, rows, p, q, spare_bits, spare_rows):
    """Stable LSD sort of positions p..q-1, whose bits differ only below their top bits,
    through the same positions of the spares: one thread, 8 bits a pass."""
    low = bits[p]
    high = bits[p]
    for i in range(p, q):
        low = min(low, bits[i])
        high = max(high, bits[i])
    passes = -(-bit_length(high - low) // RUN_DIGIT_BITS)
    mask = np.uint64((1 << RUN_DIGIT_BITS) - 1)
    counts = np.empty(1 << RUN_DIGIT_BITS, np.int64)
    src_bits, src_rows = bits, rows
    dst_bits, dst_rows = spare_bits, spare_rows
    for k in range(passes):
        shift = np.uint64(k * RUN_DIGIT_BITS)
        for d in range(counts.size):
            counts[d] = 0
        for i in range(p, q):
            counts[((src_bits[i] - low) >> shift) & mask] += 1
        start = p
        for d in range(counts.size):
            c = counts[d]
            counts[d] = start
            start += c
        for i in range(p, q):
            b = src_bits[i]
            d = ((b - low) >> shift) & mask
            dst_bits[counts[d]] = b
            dst_rows[counts[d]] = src_rows[i]
            counts[d] += 1
        src_bits, dst_bits = dst_bits, src_bits
        src_rows, dst_rows = dst_rows, src_rows
    if passes % 2:
        for i in range(p, q):
            bits[i] = src_bits[i]
            rows[i] = src_rows[i]


def counting_sort(order, every_row, bucket, n_buckets, keys, rows, sorted_keys, n_pieces):
    """The rows of ``order`` (with ``every_row``: all of ``bucket``'s rows in row order,
    ``order`` unread) put in order of their ``bucket`` (stable: rows keep their order
    within a bucket) into ``rows``, their ``keys`` moved alongside into ``sorted_keys``;
    returns the ``n_buckets + 1`` offsets of the buckets. The radix passes' scheme, one
    digit of ``n_buckets`` values: each of ``n_pieces`` pieces of ``order`` counts its
    rows per bucket, and writes them, in parallel, after every earlier bucket and every
    earlier piece's rows of its own bucket (the counts take ``n_pieces * n_buckets``
    integers: the caller passes one piece when they would be many)."""
    n = bucket.size if every_row else order.size
    bounds = np.empty(n_pieces + 1, np.int64)
    for t in range(n_pieces + 1):
        bounds[t] = t * n // n_pieces
    counts = np.zeros((n_pieces, n_buckets + APART), np.int64)
    for t in prange(n_pieces):
        for k in range(bounds[t], bounds[t + 1]):
            counts[t, bucket[k if every_row else order[k]]] += 1
    offsets = np.empty(n_buckets + 1, np.int64)
    start = 0
    for b in range(n_buckets):
        offsets[b] = start
        for t in range(n_pieces):
            c = counts[t, b]
            counts[t, b] = start
            start += c
    offsets[n_buckets] = start
    for t in prange(n_pieces):
        for k in range(bounds[t], bounds[t + 1]):
            row = k if every_row else order[k]
            b = bucket[row]
            q = counts[t, b]
            rows[q] = row
            sorted_keys[q] = keys[row]
            counts[t, b] = q + 1
    return offsets


class Kernels(NamedTuple):
    order_bits_int: object
    order_bits_float: object
    argsort_bits: object
    keys_from_bits: object
    take_int32: object
    counting_sort: object


def build(jit, parallel_jit, parallel_range) -> Kernels:
    """Return the ``Kernels``: the passes over all rows compiled with ``parallel_jit``
    (``parallel_range``: ``numba.prange`` there, else ``range``), the per-run helpers, which
    run inside them, with ``jit``."""
    names = {"prange": parallel_range}
    names["bit_length"] = jit(bind(bit_length))
    names["insertion_sort"] = jit(bind(insertion_sort))
    names["sort_run"] = jit(bind(sort_run, **names))
    names["settle_runs"] = parallel_jit(bind(settle_runs, **names))
    return Kernels(*(parallel_jit(bind(globals()[name], **names)) for name in Kernels._fields))
