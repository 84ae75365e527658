"""Group codes for string and binary by-columns, for ``kernels/hashing.py``: a row's hash and
its comparison with another row's bytes.

Arrow's ``dictionary_encode`` hashes on one core, about 28 ns a row on the bench machine: with
the left side's lookup it was half of a one-shot join of time-sorted data. Hashes here take 8
bytes at a time, and values of up to 7 bytes (tickers, venues) hash injectively and never
compare bytes at all.

A column's ``keys`` are its offsets (the column's slice of them, one more than its rows) and
its ``data`` the bytes they point into.
"""

import numpy as np

from . import hashing
from .hashing import NULL_HASH, is_valid, mix

SHORT = 7  # values of at most this many bytes hash injectively: equal hashes, equal values

load_word = None  # filled in by build()


def word_at(data, p, n):
    """Bytes p..p+n (n <= 8) as a little-endian word: one load and a mask, but for the
    last bytes of the data, which go one at a time."""
    if p + 8 <= data.size:
        w = load_word(data, p)
        if n < 8:
            w &= (np.uint64(1) << np.uint64(8 * n)) - np.uint64(1)
        return w
    w = np.uint64(0)
    for k in range(n):
        w |= np.uint64(data[p + k]) << np.uint64(8 * k)
    return w


def hash_row(offsets, data, bitmap, bit0, i):
    """A value's hash, 8 bytes at a time. Short values (``SHORT`` bytes or fewer) hash
    their bytes and length through a bijection: no two share a hash."""
    if bitmap.size and not is_valid(bitmap, bit0, i):
        return np.uint64(NULL_HASH)
    p = np.int64(offsets[i])
    end = np.int64(offsets[i + 1])
    n = end - p
    if n <= SHORT:
        return mix(word_at(data, p, n) | (np.uint64(n) << np.uint64(56)))
    h = np.uint64(n)
    while end - p >= 8:
        h = mix(h ^ word_at(data, p, 8)) + np.uint64(1)
        p += 8
    return mix(h ^ word_at(data, p, end - p))


def same_across(offsets, data, i, table_offsets, table_data, c):
    """Whether row i of a column and value c of a table (or row c of the same column),
    whose hashes are equal, hold the same bytes."""
    a0 = np.int64(offsets[i])
    b0 = np.int64(table_offsets[c])
    n = np.int64(offsets[i + 1]) - a0
    if np.int64(table_offsets[c + 1]) - b0 != n:
        return False
    if n <= SHORT:  # equal hashes and lengths: equal bytes
        return True
    for k in range(n):
        if data[a0 + k] != table_data[b0 + k]:
            return False
    return True


def build(inline_jit, jit, parallel_jit, parallel_range, load_word):
    """``hashing.build`` for text: its ``hashing.Kernels``. ``load_word(data, p)``: 8 bytes
    from p as a little-endian uint64 (asofgpu/_intrinsics.py)."""
    return hashing.build(
        inline_jit,
        jit,
        parallel_jit,
        parallel_range,
        (word_at, hash_row, same_across),
        load_word=load_word,
    )
