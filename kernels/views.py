"""Group codes for text in Arrow's view layout (``string_view``, ``binary_view``: what polars
exports) whose values are all inline, for ``kernels/hashing.py``.

A view is 16 bytes: the value's length (4 bytes), then a value of at most 12 bytes itself
(longer ones point into other buffers; a right column holding any is cast to large strings
instead, ``_encode``, and a longer left value, its length above 12, equals no inline one and
is found in no dictionary of them). Tickers, venues and most IDs are that short, so the column needs no copy: its
``keys`` are its views as pairs of ``uint64`` (little-endian: the first holds the length and
the first 4 bytes, the second the next 8), its ``data`` is empty. The bytes past a value's
length are masked off (Arrow asks writers to zero them; a reader need not rely on it), so two
rows hold the same value exactly when their masked words are equal. Casting 10M polars
symbols to large strings took 0.17 s a side; hashing the views takes none of that.
"""

import numpy as np

from . import hashing
from .hashing import NULL_HASH, is_valid, mix

INLINE = 12  # the longest value a view holds itself


def masked_words(keys, i):
    """Row i's two words with the bytes past its length cleared."""
    low = np.uint64(keys[2 * i])
    high = np.uint64(keys[2 * i + 1])
    n = low & np.uint64(0xFFFFFFFF)
    if n < np.uint64(4):  # the length and n bytes of the low word's upper half
        low &= (np.uint64(1) << (np.uint64(32) + np.uint64(8) * n)) - np.uint64(1)
        high = np.uint64(0)
    elif n < np.uint64(INLINE):
        high &= (np.uint64(1) << (np.uint64(8) * (n - np.uint64(4)))) - np.uint64(1)
    return low, high


def hash_row(keys, data, bitmap, bit0, i):
    if not is_valid(bitmap, bit0, i):
        return np.uint64(NULL_HASH)
    low, high = masked_words(keys, i)
    return mix(mix(low) ^ high)


def same_across(keys, data, i, table_keys, table_data, c):
    a_low, a_high = masked_words(keys, i)
    b_low, b_high = masked_words(table_keys, c)
    return a_low == b_low and a_high == b_high


def build(inline_jit, jit, parallel_jit, parallel_range):
    """``hashing.build`` for inline views: its ``hashing.Kernels``."""
    return hashing.build(
        inline_jit,
        jit,
        parallel_jit,
        parallel_range,
        (masked_words, hash_row, same_across),
        INLINE=INLINE,
    )
