"""Dictionary encoding and dictionary lookup on all cores, for any kind of column that can say
how to hash a row and whether two rows of equal hashes hold the same value: text
(``kernels/strings.py``) and fixed-width values (``kernels/fixed_width.py``).

A column arrives as Arrow's buffers: ``keys``, indexed by row (a text column's offsets, one
more than its rows; a fixed-width column's values), ``data`` (the bytes the offsets point
into; empty for fixed-width values) and ``bitmap`` (validity bits from bit ``bit0``, or empty
when the column has no nulls). Each kind binds ``hash_row(keys, data, bitmap, bit0, i)`` (a
null hashes to ``NULL_HASH``) and ``same_across(keys, data, i, table_keys, table_data, c)``.
The buffers go to every function as arguments of their own: bundled in a tuple, the text
kernels took half as long again.

Encoding: each of ``n_pieces`` stretches of rows gets its own open-addressing table, and a
short serial pass merges the pieces' distinct values in piece order, so that codes come out in
order of first appearance, as Arrow's ``dictionary_encode`` gives them; ``firsts`` names the
row where each value first appears, so the caller takes the dictionary with one small
``take``. Tables keep each slot's hash, so that most mismatches never compare values. Nulls
are one value of their own, unless ``nulls_distinct``.

Lookup: ``lookup_table`` builds a table of the right side's dictionary once, and ``lookup``
finds each left row's value in it (on all cores, or on one thread for a small column).
"""

from typing import NamedTuple

import numpy as np

NULL = -1  # the code of a null row under ``nulls_distinct`` (SQL: a null matches nothing)
MIX = 0x9E3779B97F4A7C15  # odd: multiplying by it is a bijection of uint64
NULL_HASH = 0x243F6A8885A308D3  # nulls' hash when nulls form a value of their own
MIN_SLOTS = 16  # a dictionary's table
INITIAL_SLOTS = 1024  # a piece's table, grown as it fills

hash_row = same_across = prange = None  # the kind's, and the loop's range: filled in by build()


def is_valid(bitmap, bit0, i):
    if bitmap.size == 0:
        return True
    b = bit0 + i
    return (bitmap[b >> 3] >> (b & 7)) & 1 == 1


def mix(x):
    """A bijection of uint64 (each step is one) whose low (slot) bits depend on every input
    bit: without the first shift they would see only the low bits, the first bytes of a
    short value, and IDs sharing a prefix would crowd one run of slots."""
    x ^= x >> np.uint64(32)
    x *= np.uint64(MIX)
    return x ^ (x >> np.uint64(29))


def same_value(keys, data, bitmap, bit0, h, a, b):
    """Whether rows a and b, whose hashes are both h, hold the same value (two nulls: the
    same). Nulls hash to NULL_HASH, so rows of any other hash are valid: only there is
    validity read (10M int64 rows with nulls took 24 ms to encode reading it at every match,
    18-20 ms this way)."""
    if bitmap.size and h == np.uint64(NULL_HASH):
        valid_a = is_valid(bitmap, bit0, a)
        if valid_a != is_valid(bitmap, bit0, b):
            return False
        if not valid_a:
            return True
    return same_across(keys, data, a, keys, data, b)


def insert(slots, hashes, h, row, code, keys, data, bitmap, bit0, rows_of):
    """The code of ``row``'s value in the table (``rows_of[c]``: a row holding code c's
    value), or -1 after writing ``code`` into a free slot for it."""
    mask = np.uint64(slots.size - 1)
    k = h & mask
    while True:
        c = slots[k]
        if c < 0:
            slots[k] = code
            hashes[k] = h
            return -1
        if hashes[k] == h and same_value(keys, data, bitmap, bit0, h, rows_of[c], row):
            return c
        k = (k + np.uint64(1)) & mask


def grown(slots, hashes):
    """The table at twice the size, every code re-inserted by its hash."""
    new_slots = np.full(2 * slots.size, -1, np.int32)
    new_hashes = np.empty(2 * slots.size, np.uint64)
    mask = np.uint64(new_slots.size - 1)
    for k in range(slots.size):
        if slots[k] >= 0:
            j = hashes[k] & mask
            while new_slots[j] >= 0:
                j = (j + np.uint64(1)) & mask
            new_slots[j] = slots[k]
            new_hashes[j] = hashes[k]
    return new_slots, new_hashes


def encode_piece(keys, data, bitmap, bit0, nulls_distinct, lo, hi, codes, firsts):
    """Local codes of rows lo..hi in order of first appearance, written to ``codes``; the
    row of each local code's first appearance to ``firsts[lo:]``. Returns how many."""
    # Inlined into a parallel loop, numba allocates these once per thread, not per piece:
    # right, since the slots are refilled for each piece and a hash is read only behind a
    # filled slot.
    slots = np.full(INITIAL_SLOTS, -1, np.int32)
    hashes = np.empty(INITIAL_SLOTS, np.uint64)
    rows_of = firsts[lo:hi]
    n = 0
    for i in range(lo, hi):
        if nulls_distinct and not is_valid(bitmap, bit0, i):
            codes[i] = NULL
            continue
        h = hash_row(keys, data, bitmap, bit0, i)
        c = insert(slots, hashes, h, i, n, keys, data, bitmap, bit0, rows_of)
        if c >= 0:
            codes[i] = c
            continue
        rows_of[n] = i
        codes[i] = n
        n += 1
        if 2 * n > slots.size:  # at most half full: probe runs stay short
            slots, hashes = grown(slots, hashes)
    return n


def merge_pieces(keys, data, bitmap, bit0, bounds, counts, local_firsts):
    """The pieces' values merged in piece order, so that codes stay in order of first
    appearance: (each local code's global code, the pieces' one after another; the first
    row of each global code)."""
    to_global = np.empty(counts.sum(), np.int32)
    firsts = np.empty(counts.sum(), np.int64)
    slots = np.full(INITIAL_SLOTS, -1, np.int32)
    hashes = np.empty(INITIAL_SLOTS, np.uint64)
    n = 0
    start = 0
    for t in range(counts.size):
        for c in range(counts[t]):
            row = local_firsts[bounds[t] + c]
            h = hash_row(keys, data, bitmap, bit0, row)
            g = insert(slots, hashes, h, row, n, keys, data, bitmap, bit0, firsts)
            if g < 0:
                firsts[n] = row
                g = n
                n += 1
                if 2 * n > slots.size:
                    slots, hashes = grown(slots, hashes)
            to_global[start + c] = g
        start += counts[t]
    return to_global, firsts[:n]


def dictionary_encode(keys, data, bitmap, bit0, nulls_distinct, n_pieces, codes, local_firsts):
    """Fill ``codes`` (int32 per row; NULL for a null under ``nulls_distinct``, else nulls
    are one more value) and return ``firsts``: the first row of each code's value.
    ``local_firsts`` (int64, one per row) is scratch."""
    n_rows = codes.size
    n_pieces = max(1, min(n_pieces, n_rows))
    bounds = np.empty(n_pieces + 1, np.int64)
    for t in range(n_pieces + 1):
        bounds[t] = t * n_rows // n_pieces
    counts = np.zeros(n_pieces, np.int64)
    for t in prange(n_pieces):
        counts[t] = encode_piece(
            keys, data, bitmap, bit0, nulls_distinct, bounds[t], bounds[t + 1], codes, local_firsts
        )
    to_global, firsts = merge_pieces(keys, data, bitmap, bit0, bounds, counts, local_firsts)
    for t in prange(n_pieces):
        if t > 0:  # the first piece's codes are global already
            start = counts[:t].sum()
            for i in range(bounds[t], bounds[t + 1]):
                if codes[i] >= 0:
                    codes[i] = to_global[start + codes[i]]
    return firsts


def lookup_table(keys, data, bitmap, bit0, n):
    """(slots, hashes): an open-addressing table of the ``n`` distinct values of a column (a
    dictionary), at most half full, each value's slot holding its position; nulls left
    out."""
    size = MIN_SLOTS
    while size < 2 * n:
        size *= 2
    slots = np.full(size, -1, np.int32)
    hashes = np.empty(size, np.uint64)
    mask = np.uint64(size - 1)
    for c in range(n):
        if not is_valid(bitmap, bit0, c):
            continue
        h = hash_row(keys, data, bitmap, bit0, c)
        k = h & mask
        while slots[k] >= 0:  # distinct values: a taken slot never holds this one
            k = (k + np.uint64(1)) & mask
        slots[k] = c
        hashes[k] = h
    return slots, hashes


def lookup(table_keys, table_data, slots, hashes, keys, data, bitmap, bit0, null_code, codes):
    """``codes[i]``: the position in the table's dictionary of row i's value, NULL where it
    has none, ``null_code`` where the row is null."""
    mask = np.uint64(slots.size - 1)
    for i in prange(codes.size):
        if not is_valid(bitmap, bit0, i):
            codes[i] = null_code
            continue
        h = hash_row(keys, data, bitmap, bit0, i)
        k = h & mask
        code = NULL
        while slots[k] >= 0:  # a free slot ends the value's run: not in the table
            c = slots[k]
            if hashes[k] == h and same_across(keys, data, i, table_keys, table_data, c):
                code = c
                break
            k = (k + np.uint64(1)) & mask
        codes[i] = code


class Kernels(NamedTuple):
    """One kind's compiled hashing: ``dictionary_encode``, ``lookup_table``, and ``lookup`` on
    all cores and on one thread."""

    dictionary_encode: object
    lookup_table: object
    lookup_parallel: object
    lookup_serial: object


def build(inline_jit, jit, parallel_jit, parallel_range, helpers, **names) -> Kernels:
    """Return the ``Kernels``: ``dictionary_encode`` (its loops over pieces compiled with
    ``parallel_jit``, in ``parallel_range``: ``numba.prange`` there, or ``range``),
    ``lookup_table`` (``jit``), and ``lookup`` on all cores and on one thread.

    ``helpers``: the kind's plain functions, ending with ``hash_row`` and ``same_across``,
    each calling only those before it, ``is_valid``, ``mix`` and ``names``. In the hot
    loops they, the helpers here and the encoding of a piece are inlined (``inline_jit``):
    numba counts references to every array argument of a call between compiled functions,
    three times the time of the hashing itself, and only a piece inlined into the parallel
    loop runs at full speed. The merge and the dictionary's table, which see only distinct
    values, call compiled functions instead (inlining them too doubles the compile time)."""
    from . import bind

    hot = dict(names, prange=parallel_range)
    cold = dict(hot)
    for fn in (is_valid, mix, *helpers, same_value, insert, grown):
        hot[fn.__name__] = inline_jit(bind(fn, **hot))
        cold[fn.__name__] = jit(bind(fn, **cold))
    pieces = {
        "prange": parallel_range,
        "encode_piece": inline_jit(bind(encode_piece, **hot)),
        "merge_pieces": jit(bind(merge_pieces, **cold)),
    }
    return Kernels(
        parallel_jit(bind(dictionary_encode, **pieces)),
        jit(bind(lookup_table, **cold)),
        parallel_jit(bind(lookup, **hot)),
        jit(bind(lookup, **dict(hot, prange=range))),
    )
