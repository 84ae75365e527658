"""Group codes for fixed-width by-columns (integers, temporals, floats), for
``kernels/hashing.py``: a row's hash, by the value's bits.

Arrow's ``dictionary_encode`` hashes on one core: 53 ms of a 0.153 s one-shot join of
10M x 10M rows with int64 symbol ids. Arrow's ``index_in`` hashes its whole value set again
at every call: for a prepared join of 100,000 integer groups, probing 1,000 rows took
1.35 ms, 1.17 of them in ``index_in``; for 1M rows of 1,000 groups it took 6.6 of 12.7 ms,
on one core.

A column's ``keys`` are its values as unsigned integers of their own width (a numpy view of
Arrow's data buffer), so two values are equal exactly when their bits are, and widened to
``uint64`` they stay so; its ``data`` is empty. Floats come canonical
(``_encode.canonical_by``: one NaN, no -0.0), so equal floats have equal bits. The hash,
``mix``, is a bijection of ``uint64``: valid values of equal hashes are equal, and values
never compare.
"""

import numpy as np

from . import hashing
from .hashing import NULL_HASH, is_valid, mix


def hash_row(values, data, bitmap, bit0, i):
    if not is_valid(bitmap, bit0, i):
        return np.uint64(NULL_HASH)
    return mix(np.uint64(values[i]))


def same_across(values, data, i, table_values, table_data, c):
    """Valid values of equal hashes are the same value: the hash is a bijection."""
    return True


def build(inline_jit, jit, parallel_jit, parallel_range):
    """``hashing.build`` for fixed-width values: its ``hashing.Kernels``."""
    return hashing.build(inline_jit, jit, parallel_jit, parallel_range, (hash_row, same_across))
