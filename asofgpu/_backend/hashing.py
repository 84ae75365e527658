"""Group keys hashed on the host, on all cores (``kernels/hashing.py``, its kinds in
``kernels/strings.py``, ``kernels/fixed_width.py`` and ``kernels/views.py``): a column
dictionary-encoded into int32 codes, and another column looked up in that dictionary.
``asofgpu._encode`` calls them for every backend.
"""

from __future__ import annotations

import numpy as np

from . import walks
from .base import host_empty, read_only
from .jit import PARALLEL_LAUNCH, cpu_fixed_width, cpu_strings, cpu_views, launching, threads

_NO_DATA = np.frombuffer(b"", dtype=np.uint8)  # a fixed-width column's: it has no bytes


def dictionary_encode_text(offsets, data, bitmap, bit0: int, nulls_distinct: bool):
    """(codes, firsts) of a string or binary column's buffers, on all cores
    (kernels/hashing.py, kernels/strings.py): int32 codes in order of first appearance, -1
    for nulls under ``nulls_distinct``, and the first row holding each code's value."""
    return _dictionary_encode(
        cpu_strings(), offsets, data, bitmap, bit0, nulls_distinct, len(offsets) - 1
    )


def text_lookup_table(offsets, data, bitmap, bit0: int):
    """The hash table of a string or binary dictionary (distinct values), for
    ``lookup_text``: (slots, hashes)."""
    return cpu_strings().lookup_table(
        *_read(offsets, data, bitmap), np.int64(bit0), len(offsets) - 1
    )


def lookup_text(
    table, offsets, data, bitmap, bit0: int, null_code: int, out: np.ndarray | None = None
) -> np.ndarray:
    """int32 positions of a string or binary column's values in a dictionary (on all cores
    for a large column): ``table`` is (the dictionary's offsets, its bytes,
    ``text_lookup_table`` of it); -1 for a value the dictionary lacks, ``null_code`` for a
    null. Written into ``out`` when given (a chunk's rows of a longer column)."""
    table_offsets, table_data, (slots, hashes) = table
    return _lookup(
        cpu_strings(),
        table_offsets,
        table_data,
        slots,
        hashes,
        offsets,
        data,
        bitmap,
        bit0,
        null_code,
        len(offsets) - 1,
        out,
    )


def dictionary_encode_fixed(values, bitmap, bit0: int, nulls_distinct: bool):
    """(codes, firsts) of fixed-width values (unsigned integers of the values' width:
    kernels/fixed_width.py), on all cores: int32 codes in order of first appearance, -1 for
    nulls under ``nulls_distinct``, and the first row holding each code's value."""
    return _dictionary_encode(
        cpu_fixed_width(), values, _NO_DATA, bitmap, bit0, nulls_distinct, len(values)
    )


def fixed_lookup_table(values, bitmap, bit0: int):
    """The hash table of a dictionary of fixed-width values (unsigned integers of the values'
    width: kernels/fixed_width.py), for ``lookup_fixed``: (slots, hashes)."""
    return cpu_fixed_width().lookup_table(
        *_read(values, _NO_DATA, bitmap), np.int64(bit0), len(values)
    )


def lookup_fixed(
    table, values, bitmap, bit0: int, null_code: int, out: np.ndarray | None = None
) -> np.ndarray:
    """int32 positions of fixed-width values in the dictionary that ``table``
    (``fixed_lookup_table``) was built from, on all cores for a large column; -1 for a value
    the dictionary lacks, ``null_code`` for a null. Written into ``out`` when given."""
    slots, hashes = table
    # The table's values are never read: equal hashes are equal values.
    return _lookup(
        cpu_fixed_width(),
        _NO_DATA,
        _NO_DATA,
        slots,
        hashes,
        values,
        _NO_DATA,
        bitmap,
        bit0,
        null_code,
        len(values),
        out,
    )


def dictionary_encode_views(keys, bitmap, bit0: int, nulls_distinct: bool):
    """(codes, firsts) of a view column whose values are all inline (its views as pairs of
    uint64: kernels/views.py), on all cores, as ``dictionary_encode_text`` gives them."""
    return _dictionary_encode(
        cpu_views(), keys, _NO_DATA, bitmap, bit0, nulls_distinct, len(keys) // 2
    )


def views_lookup_table(keys, bitmap, bit0: int):
    """The hash table of a dictionary of inline views, for ``lookup_views``."""
    return cpu_views().lookup_table(*_read(keys, _NO_DATA, bitmap), np.int64(bit0), len(keys) // 2)


def lookup_views(
    table, keys, bitmap, bit0: int, null_code: int, out: np.ndarray | None = None
) -> np.ndarray:
    """int32 positions of inline views in a dictionary: ``table`` is (the dictionary's views,
    ``views_lookup_table`` of it); -1 for a value it lacks, ``null_code`` for a null.
    Written into ``out`` when given."""
    table_keys, (slots, hashes) = table
    return _lookup(
        cpu_views(),
        table_keys,
        _NO_DATA,
        slots,
        hashes,
        keys,
        _NO_DATA,
        bitmap,
        bit0,
        null_code,
        len(keys) // 2,
        out,
    )


def _dictionary_encode(kernels, keys, data, bitmap, bit0: int, nulls_distinct: bool, n_rows: int):
    """(codes, firsts) of a column's buffers by one kind's kernels/hashing.py build."""
    codes = host_empty(n_rows, np.int32)
    with PARALLEL_LAUNCH:
        firsts = kernels.dictionary_encode(
            *_read(keys, data, bitmap),
            np.int64(bit0),
            bool(nulls_distinct),
            threads(True),
            codes,
            host_empty(n_rows, np.int64),
        )
    return codes, firsts


def _lookup(
    kernels,
    table_keys,
    table_data,
    slots,
    hashes,
    keys,
    data,
    bitmap,
    bit0: int,
    null_code: int,
    n_rows: int,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """A column's positions in a dictionary's table by one kind's kernels/hashing.py build
    (into ``out`` when given): on all cores where ``walks.parallel`` says so, else on one
    thread."""
    codes = host_empty(n_rows, np.int32) if out is None else out
    parallel = walks.parallel(n_rows)
    with launching(parallel):
        lookup = kernels.lookup_parallel if parallel else kernels.lookup_serial
        lookup(
            *_read(table_keys, table_data),
            slots,
            hashes,
            *_read(keys, data, bitmap),
            np.int64(bit0),
            np.int32(null_code),
            codes,
        )
    return codes


def _read(*arrays) -> list:
    """Column buffers as every kernel here reads them: read-only (``base.read_only``)."""
    return [read_only(a) for a in arrays]
