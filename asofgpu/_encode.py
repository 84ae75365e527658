"""``by`` columns -> int32 group codes: a dictionary built from the right side, the left
looked up in it.

Everything runs in hash kernels, never a Python loop over rows: Arrow's
``dictionary_encode``, and for large text (string, binary) and fixed-width (integer, float,
temporal) columns asofgpu's own on all cores (``kernels/hashing.py``, with
``kernels/strings.py`` and ``kernels/fixed_width.py``; Arrow's hash on one core was half of a
one-shot join): a sample of the first rows hashed, the rest looked up in its dictionary
(``_encode_hashed``). A left text, integer, float or temporal column is looked up in a hash
table of the right's dictionary, built once (the same modules; on all cores where
``_backend.walks.parallel`` says so); other types (bool, decimal) by Arrow's ``index_in``,
which hashes the dictionary again at each call. Several columns are combined pairwise
(``code * n + code``) and re-encoded after each step, so the combined codes stay dense and
never overflow.
Code -1 means "no group": a null under ``null_equality="unequal"``, or (left) a value the right
side never has.

>>> import pyarrow as pa
>>> groups = Groups([pa.chunked_array([["b", "a", "b"]])], ["right_by"], null_equal=False)
>>> groups.right_codes.tolist(), groups.n_groups
([0, 1, 0], 2)
>>> groups.lookup([pa.chunked_array([["a", "z", None]])], ["left_by"]).tolist()
[1, -1, -1]
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import _arrow_numpy as arrow_numpy
from ._backend import walks
from ._types import NO_GROUP, check_group_count
from .kernels import views


def family(t: pa.DataType):
    """Types whose values compare equal across flavours (string vs large_string, ...)."""
    if pa.types.is_dictionary(t):
        return family(t.value_type)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return "binary"
    if pa.types.is_floating(t):
        return "float"
    # An extension type's values are equal as its own rules say (bool8's 1 and 2 are both
    # true), which its storage's bits do not tell: none is a group key.
    if pa.types.is_nested(t) or isinstance(t, pa.BaseExtensionType):
        return None
    return t


def _check_type(left: pa.DataType, right: pa.DataType, left_param: str, right_param: str):
    for t, p in ((left, left_param), (right, right_param)):
        if family(t) is None:
            msg = f"{p} must be a flat column (numbers, strings, temporal, bool), got {t}"
            if isinstance(t, pa.BaseExtensionType):
                msg += f". Hint: pass its storage ({t.storage_type}) if its bits are its value"
            raise TypeError(msg)
    if family(left) != family(right) and not (pa.types.is_null(left) or pa.types.is_null(right)):
        msg = (
            f"{left_param} ({left}) and {right_param} ({right}) cannot be compared: "
            f"by-columns must have the same type on both sides. Hint: cast one of them."
        )
        raise TypeError(msg)


def check_comparable(
    left: pa.ChunkedArray, right: pa.ChunkedArray, left_param: str, right_param: str
):
    """Refuse a pair of by-columns whose values cannot be compared, by the names the caller
    knows them by (a front end's column names), as the join would by ``left_by[i]``."""
    _check_type(
        _nulls_if_untyped(left).type, _nulls_if_untyped(right).type, left_param, right_param
    )


def _nulls_if_untyped(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """``col``, or as many nulls of type null where its type says nothing of its keys: it
    holds nulls only, or is a dictionary of null values (pandas' empty Categorical; pandas
    types a Categorical of missing values float64). Such a column compares with any type.
    An empty column of another type keeps it: a join on zero rows checks a call."""
    null_values = pa.types.is_dictionary(col.type) and pa.types.is_null(col.type.value_type)
    if null_values or (len(col) > 0 and col.null_count == len(col)):
        return pa.chunked_array([pa.nulls(len(col))])
    return col


def canonical_by(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """Floats as float64 with -0.0 -> 0.0 and one NaN, so equal values hash equal; view
    strings (polars exports them) as large strings, which Arrow's hash kernels take."""
    if arrow_numpy.is_view_text(col.type):
        return col.cast(arrow_numpy.viewless(col.type))
    if not pa.types.is_floating(col.type):
        return col
    col = col.cast(pa.float64())
    # (Arrow scalars from buffers: pa.scalar, which pc makes of Python numbers, imports pandas)
    nan, zero = arrow_numpy.array(np.array([np.nan, 0.0]))
    return pc.if_else(pc.is_nan(col), nan, pc.add(col, zero))


def _nulls_as(indices: pa.ChunkedArray, code: int) -> np.ndarray:
    """Indices as int32 with nulls replaced by ``code`` (polars' Categorical indices are
    uint32: widen them first so that -1 fits)."""
    if pa.types.is_unsigned_integer(indices.type):
        indices = indices.cast(pa.int64())
    return arrow_numpy.filled(indices, code).astype(np.int32, copy=False)


def _take_codes(value_codes: np.ndarray, indices: np.ndarray, null_code: int) -> np.ndarray:
    """``value_codes[indices]``, and ``null_code`` where an index is -1 (a null), in one take:
    the null code sits at the end, where index -1 reads."""
    table = np.append(value_codes.astype(np.int32, copy=False), np.int32(null_code))
    return table[indices]


DISTINCT_SAMPLE_ROWS = 1 << 16
LOOKUP_PIECE_ROWS = 1 << 20  # the most rows the rest is looked up in at a time
NO_BYTES = np.frombuffer(b"", dtype=np.uint8)  # no validity bitmap (no nulls), or no data


def _encode_sorted(col: pa.ChunkedArray) -> tuple[pa.Array, np.ndarray]:
    """(dictionary, codes) of a column of ``_is_fixed_width`` values without nulls, exactly as
    Arrow's ``dictionary_encode`` gives them (values numbered in order of first appearance),
    found by sorting: the cpu's radix sort of the values' bits on all cores, runs of equal
    values numbered, and the numbers put in order of each value's first row by a second
    sort. Arrow's hash table slows by far past a few million distinct values (a state
    table's 20M entity ids: 10.7 s, against 2.3 s so)."""
    from ._backend import get_backend

    values = arrow_numpy.values(col)
    bits = arrow_numpy.int64_bits(values)
    cpu = get_backend("cpu")
    order = cpu.stable_argsort(bits)
    ordered = bits[order]
    starts = np.empty(len(ordered), bool)
    starts[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
    del ordered
    numbers = np.cumsum(starts, dtype=np.int64)  # each sorted row's run, in value order
    numbers -= 1
    firsts = order[starts]  # each value's first row: the sort is stable
    del starts
    by_appearance = cpu.stable_argsort(firsts)
    renumber = np.empty(len(firsts), np.int32)
    renumber[by_appearance] = np.arange(len(firsts), dtype=np.int32)
    codes = np.empty(len(values), np.int32)
    codes[order] = renumber[numbers]
    dictionary = arrow_numpy.array(values[firsts[by_appearance]], col.type)
    return dictionary, codes


def _text_buffers(col: pa.ChunkedArray, large: bool = False):
    """(array, offsets, bytes, validity bitmap) of a string or binary column in one array,
    as numpy views for kernels/strings.py; the bitmap is empty without nulls and starts at
    bit ``array.offset``. Chunks whose values together may pass 2 GiB, or ``large``, give
    64-bit offsets."""
    if col.num_chunks == 1 and not large:
        arr = col.chunk(0)
    elif (
        not large
        and sum(data.size for chunk in col.chunks if (data := chunk.buffers()[2]) is not None)
        < 2**31
    ):
        arr = arrow_numpy.combined(col)  # offsets stay 32-bit: a cast would copy twice
    else:
        as_large = pa.large_binary() if family(col.type) == "binary" else pa.large_string()
        arr = arrow_numpy.combined(col.cast(as_large))
    validity, offsets, data = arr.buffers()
    width = (
        np.int64
        if pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
        else np.int32
    )
    offsets = np.frombuffer(offsets, dtype=width)[arr.offset : arr.offset + len(arr) + 1]
    data = np.frombuffer(data, dtype=np.uint8) if data is not None else NO_BYTES
    bitmap = np.frombuffer(validity, dtype=np.uint8) if arr.null_count else NO_BYTES
    return arr, offsets, data, bitmap


def _is_fixed_width(t: pa.DataType) -> bool:
    """Types whose values are equal exactly when their bits are (floats after
    ``canonical_by``), in one data buffer of 1, 2, 4 or 8 bytes a value."""
    return (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_timestamp(t)
        or pa.types.is_date(t)
        or pa.types.is_time(t)
        or pa.types.is_duration(t)
    )


def _fixed_width_buffers(arr: pa.Array):
    """(values, validity bitmap, its first bit) of a fixed-width array, as numpy views for
    kernels/fixed_width.py: values as unsigned integers of their width; the bitmap is empty
    without nulls."""
    width = np.dtype(f"<u{arr.type.bit_width // 8}")
    validity, data = arr.buffers()
    values = (
        np.frombuffer(data, dtype=width, count=arr.offset + len(arr))[arr.offset :]
        if data is not None
        else np.zeros(len(arr), width)
    )
    bitmap = np.frombuffer(validity, dtype=np.uint8) if arr.null_count else NO_BYTES
    return values, bitmap, arr.offset


def _encode_parallel(col: pa.ChunkedArray, nulls_distinct: bool):
    """(codes, dictionary) of a text or fixed-width column, on all cores: int32 codes in order
    of first appearance, -1 for a null under ``nulls_distinct`` (else nulls are one more
    value)."""
    from ._backend import dictionary_encode_fixed, dictionary_encode_text

    if arrow_numpy.is_offset_text(col.type):
        arr, offsets, data, bitmap = _text_buffers(col)
        codes, firsts = dictionary_encode_text(offsets, data, bitmap, arr.offset, nulls_distinct)
        return codes, arr.take(arrow_numpy.array(firsts)).cast(col.type)
    arr = arrow_numpy.combined(col)
    codes, firsts = dictionary_encode_fixed(*_fixed_width_buffers(arr), nulls_distinct)
    return codes, arr.take(arrow_numpy.array(firsts))


def _encode_hashed(col: pa.ChunkedArray, nulls_distinct: bool):
    """(codes, dictionary) of a large text or fixed-width column (after ``canonical_by``)
    whose values repeat, as group keys do, in order of first appearance as Arrow's
    ``dictionary_encode`` gives them; None for any other column, which Arrow's one-core
    hash serves better (``walks.encodes_in_parallel``; where most values of a sample of the
    first rows are distinct, as IDs are, ``walks.encodes_sample_in_parallel``).

    The sample is encoded on all cores, and the rest of the column looked up in its
    dictionary, run by run where its chunks lie (never combined first); the few values the
    sample lacks are encoded after, in row order, and appended. A lookup costs less than
    half an encoding: 10M symbols, 33 ms looked up against 77 ms encoded (106 ms when the
    column's 77 chunks had to be combined first). Where the sample lacks many rows' values
    (``walks.most_appended``: a column sorted by its values), the whole column is encoded
    again (``_encoded_again``)."""
    if not walks.encodes_in_parallel(len(col)) or not (
        arrow_numpy.is_offset_text(col.type) or _is_fixed_width(col.type)
    ):
        return None
    head = col.slice(0, DISTINCT_SAMPLE_ROWS)
    head_codes, dictionary = _encode_parallel(head, nulls_distinct)
    if not walks.encodes_sample_in_parallel(len(head), len(dictionary)):
        return None
    if len(head) == len(col):
        return head_codes, dictionary
    from ._backend import host_empty

    codes = host_empty(len(col), np.int32)
    codes[: len(head)] = head_codes
    table = _lookup_table(dictionary)
    rows, stopped_at = _look_up_rest(
        col,
        codes,
        len(head),
        lambda run, null_code, out: _look_up(table, run, null_code, out),
        _first_null(arrow_numpy.valid(dictionary)),
        nulls_distinct,
    )
    if rows is None:  # many: a column sorted by its values, say
        return _encoded_again(col, stopped_at, nulls_distinct)
    if rows.size:  # in row order: the codes stay in order of first appearance
        values = col.take(arrow_numpy.array(rows))  # in chunks: text may pass 2 GiB
        more = pc.dictionary_encode(values, null_encoding="mask" if nulls_distinct else "encode")
        # No nulls among the indices: the missed rows are valid, or nulls are a value.
        indices = [chunk.indices.to_numpy() for chunk in more.chunks]
        codes[rows] = len(dictionary) + np.concatenate([np.empty(0, np.int32), *indices])
        dictionary = pa.concat_arrays([dictionary, more.chunk(0).dictionary])
    return codes, dictionary


def _encoded_again(col: pa.ChunkedArray, at: int, nulls_distinct: bool):
    """(codes, dictionary) of a column whose sample's lookup stopped at row ``at``
    (``_look_up_rest``), hashed whole on all cores where the rows there repeat their values
    (symbols sorted: 10M rows in 57 ms, 295 ms appended on one core); None, for Arrow's
    one-core hash, where they are mostly distinct (``walks.rehashes``: ids sorted, each a
    few times, whose merged dictionaries of millions cost the cores more)."""
    there = col.slice(at, DISTINCT_SAMPLE_ROWS)
    _, dictionary = _encode_parallel(there, nulls_distinct)
    if not walks.rehashes(len(there), len(dictionary)):
        return None
    return _encode_parallel(col, nulls_distinct)


def _first_null(valid: np.ndarray) -> int:
    """The code of a dictionary's null (whose ``valid`` is False), NO_GROUP without one."""
    null_at = np.flatnonzero(~valid)
    return int(null_at[0]) if len(null_at) else NO_GROUP


def _look_up_rest(
    col: pa.ChunkedArray, codes: np.ndarray, start: int, look_up, null_code: int, nulls_distinct
) -> tuple[np.ndarray | None, int | None]:
    """Fill ``codes[start:]`` with the dictionary positions of ``col``'s rows from ``start``
    on, run by run where its chunks lie (``look_up(run, null_code, out)``), and return the
    rows whose value the dictionary lacks, ascending (nulls among them when nulls are one
    more value and the dictionary has none: ``null_code`` is then NO_GROUP), and None.

    Or (None, the row where the lookup stopped), the rows after left unread, once those in
    the first half of the rows are more than ``walks.most_appended`` allows: runs are looked
    up ``LOOKUP_PIECE_ROWS`` rows at a time, so that one run of 10M rows sorted by value
    stops within its first million. Rows past that half do not count: hashing the column
    again would cost more than the half left and its missed rows (10M rows whose last
    25,000 hold new values: 175 ms so, 83 ms appended)."""
    missed = []
    at, most, n_missed = start, walks.most_appended(len(col) - start), 0
    half = start + (len(col) - start) // 2
    pieces = (
        whole.slice(i, LOOKUP_PIECE_ROWS)
        for whole in arrow_numpy.coarse_runs(col.slice(start))
        for i in range(0, len(whole), LOOKUP_PIECE_ROWS)
    )
    for run in pieces:
        found = codes[at : at + len(run)]
        look_up(run, null_code, found)
        if found.min() < 0:
            missing = found == NO_GROUP
            if nulls_distinct and run.null_count:
                missing &= arrow_numpy.valid(run)  # a null's code is NO_GROUP: not missed
            missed.append(np.flatnonzero(missing) + at)
            n_missed += int(np.count_nonzero(missed[-1] < half))
            if n_missed > most:
                return None, at
        at += len(run)
    return np.concatenate([np.empty(0, np.int64), *missed]), None


def _lookup_table(dictionary: pa.Array):
    """The hash table of a text or fixed-width dictionary (distinct values), for
    ``_look_up``."""
    from ._backend import fixed_lookup_table, text_lookup_table

    if arrow_numpy.is_offset_text(dictionary.type):
        arr, offsets, data, bitmap = _text_buffers(pa.chunked_array([dictionary]), large=True)
        return offsets, data, text_lookup_table(offsets, data, bitmap, arr.offset)
    return fixed_lookup_table(*_fixed_width_buffers(dictionary))


def _look_up(table, arr: pa.Array, null_code: int, out: np.ndarray | None) -> np.ndarray:
    """Each of ``arr``'s values' position in the dictionary whose ``_lookup_table`` is
    ``table`` (of the same kind: text, or fixed-width of ``arr``'s type), -1 where it has
    none, ``null_code`` for a null; written into ``out`` when given."""
    from ._backend import lookup_fixed, lookup_text

    if arrow_numpy.is_offset_text(arr.type):
        arr, offsets, data, bitmap = _text_buffers(pa.chunked_array([arr]))
        return lookup_text(table, offsets, data, bitmap, arr.offset, null_code, out=out)
    return lookup_fixed(table, *_fixed_width_buffers(arr), null_code, out=out)


def _hashed_views(col: pa.ChunkedArray) -> bool:
    """Whether a view column is hashed where it lies (``kernels/views.py``) when its values
    all sit in their views (``_inline``), rather than cast to large strings: from
    ``parallel_views_rows`` rows (``walks.hashes_views``)."""
    return arrow_numpy.is_view_text(col.type) and walks.hashes_views(len(col))


def _inline(col: pa.ChunkedArray) -> bool:
    """Whether every view of a view column holds its whole value (null slots included): then
    two views are equal exactly when their words are."""
    return all(_longest(_view_words(chunk)[0]) <= views.INLINE for chunk in col.chunks)


def _longest(words: np.ndarray) -> int:
    """The longest length among views given as their words (two uint64 a view, the first
    4 bytes of each its length); 0 for none."""
    return int(words.view("<u4")[::4].max(initial=0))


def _view_words(arr: pa.Array):
    """(views as pairs of uint64, validity bitmap, its first bit) of a view array, as numpy
    views for kernels/views.py; the bitmap is empty without nulls."""
    validity, data = arr.buffers()[:2]
    words = np.frombuffer(data, dtype="<u8", count=2 * (arr.offset + len(arr)))[2 * arr.offset :]
    bitmap = np.frombuffer(validity, dtype=np.uint8) if arr.null_count else NO_BYTES
    return words, bitmap, arr.offset


def _hash_views(col: pa.ChunkedArray, nulls_distinct: bool):
    """(codes, words, valid) of an inline view column, hashed on all cores in one pass over
    its chunks' views put end to end (10M polars symbols in 10 chunks: 0.15 s hashed chunk
    by chunk and the dictionaries merged, 0.1 s so): int32 codes in order of first
    appearance (-1 for nulls under ``nulls_distinct``), and each code's view (a row of two
    uint64 words) and validity."""
    from ._backend import host_empty

    chunks = [chunk for chunk in col.chunks if len(chunk)] or col.chunks[:1]
    keys, bitmap, bit0 = _view_words(chunks[0])
    if len(chunks) > 1:
        parts = [_view_words(chunk)[0] for chunk in chunks]
        keys = arrow_numpy.concatenate(parts, host_empty(2 * len(col), np.uint64))
        bitmap, bit0 = NO_BYTES, 0
        if col.null_count:
            bitmap = _bitmap(np.concatenate([arrow_numpy.valid(c) for c in chunks]))
    return _hash_view_words(keys, bitmap, bit0, nulls_distinct)


def _hash_view_words(keys: np.ndarray, bitmap: np.ndarray, bit0: int, nulls_distinct: bool):
    """``_hash_views`` of views given as their words (two uint64 a view) and a
    validity bitmap from bit ``bit0``."""
    from ._backend import dictionary_encode_views

    codes, firsts = dictionary_encode_views(keys, bitmap, bit0, nulls_distinct)
    words = np.ascontiguousarray(keys.reshape(-1, 2)[firsts])
    return codes, words, _valid_at(bitmap, bit0, firsts)


def _views_at(col: pa.ChunkedArray, rows: np.ndarray):
    """(words, validity bitmap) of the views of ``col``'s ``rows`` (ascending), read from
    the chunks that hold them (Arrow's take has no kernel for views)."""
    words, valid = [np.empty((0, 2), np.uint64)], [np.empty(0, bool)]
    at = 0
    for chunk in col.chunks:
        lo, hi = np.searchsorted(rows, [at, at + len(chunk)])
        if hi > lo:
            local = rows[lo:hi] - at
            words.append(_view_words(chunk)[0].reshape(-1, 2)[local])
            valid.append(arrow_numpy.valid(chunk)[local])
        at += len(chunk)
    return np.concatenate(words).reshape(-1), _bitmap(np.concatenate(valid))


def _valid_at(bitmap: np.ndarray, bit0: int, rows: np.ndarray) -> np.ndarray:
    """Whether each of ``rows`` is valid, from a validity bitmap (empty: all are)."""
    if not bitmap.size:
        return np.ones(len(rows), bool)
    bits = bit0 + rows
    return ((bitmap[bits >> 3] >> (bits & 7).astype(np.uint8)) & 1).astype(bool)


def _bitmap(valid: np.ndarray) -> np.ndarray:
    return NO_BYTES if valid.all() else np.packbits(valid, bitorder="little")


def _dictionary_of(col: pa.ChunkedArray) -> pa.Array:
    """The shared dictionary of a unified dictionary column (empty when it has no chunks)."""
    if col.num_chunks:
        return col.chunk(0).dictionary
    return pa.nulls(0, col.type.value_type)


def wide_indices(t: pa.DataType) -> pa.DataType:
    """``t`` with indices of 32 bits at least where it is a dictionary: the chunks of narrower
    ones may hold more values in all than their index type holds (pandas writes a categorical
    of fewer than 128 values as int8 codes, each file its own).

    >>> wide_indices(pa.dictionary(pa.int8(), pa.string()))
    DictionaryType(dictionary<values=string, indices=int32, ordered=0>)
    """
    if pa.types.is_dictionary(t) and t.index_type.bit_width < 32:
        return pa.dictionary(pa.int32(), t.value_type, t.ordered)
    return t


def unified(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """A dictionary column's chunks on one dictionary (``unify_dictionaries``, or where Arrow
    gets it wrong, ``arrow_numpy.unifies_wrong``, decoded and encoded as one, its indices
    then of 32 bits at least), ordered as the column is; its indices widened where the values
    outgrow them.

    >>> kind = pa.dictionary(pa.int8(), pa.string(), ordered=True)
    >>> a = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int8()), ["a", None])
    >>> b = pa.DictionaryArray.from_arrays(pa.array([0], pa.int8()), ["b"])
    >>> one = unified(pa.chunked_array([a.cast(kind), b.cast(kind)]))  # (a null value)
    >>> one.type, one.to_pylist()
    (DictionaryType(dictionary<values=string, indices=int32, ordered=1>), ['a', None, 'b'])
    """
    if arrow_numpy.unifies_wrong(col):
        decoded = arrow_numpy.combined(arrow_numpy.decoded(col))
        # (of the column's index type, widened, and order: the encoding's are int32, unordered)
        return pa.chunked_array(
            [arrow_numpy.dictionary_encode(decoded).cast(wide_indices(col.type))]
        )
    try:
        return col.unify_dictionaries()
    except pa.ArrowInvalid:  # more values in all than the index type holds (uint8: 255)
        return col.cast(wide_indices(col.type)).unify_dictionaries()


def _used_values(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """A dictionary column with each chunk whose dictionary holds more values than it has
    rows cut to the values its rows use (``arrow_numpy.used_dictionary``): a reader's
    batches each carry their row group's whole dictionary, and windows of 45,000 quotes from
    row groups of 220,000 ids hashed all 220,000 again for each window (3 of a regroup's 12
    s).

    >>> coded = pa.array(["a", "b", "c"]).dictionary_encode().slice(1, 1)
    >>> _used_values(pa.chunked_array([coded])).chunk(0).dictionary.to_pylist()
    ['b']
    """
    return pa.chunked_array([arrow_numpy.trimmed_dictionary(c) for c in col.chunks], col.type)


def _combine_chunks(col: pa.ChunkedArray) -> pa.ChunkedArray:
    return col if col.num_chunks else pa.chunked_array([pa.nulls(0, col.type)])


def _chunk_by_chunk(col: pa.ChunkedArray, lookup) -> np.ndarray:
    """The int32 codes of a column of at least one chunk, ``lookup(chunk, out)`` of each run
    of chunks (``arrow_numpy.coarse_runs``) written into its rows of one array: chunks are
    read where they lie (combining them would copy every value, a third of a text lookup's
    time on 10M rows), a reader's row group in one launch rather than one a slice; only many
    small chunks of short values are copied together first."""
    from ._backend import host_empty

    pieces = arrow_numpy.coarse_runs(col)
    if len(pieces) == 1:
        return lookup(pieces[0], None)
    codes = host_empty(len(col), np.int32)
    at = 0
    for piece in pieces:
        lookup(piece, codes[at : at + len(piece)])
        at += len(piece)
    return codes


class _Column:
    """One by-column's right dictionary, and the lookup of left values in it."""

    def __init__(self, col: pa.ChunkedArray, null_equal: bool):
        self.null_equal = null_equal
        self.type = col.type
        col = _combine_chunks(col)
        self._view_table = None  # with inline views: (their words, validity, hash table)
        if pa.types.is_dictionary(col.type):
            self.dictionary, self.codes = self._encode_dictionary_column(col)
        elif _hashed_views(col) and (encoded := self._encode_views(col)) is not None:
            self.dictionary, self.codes = encoded
        else:
            self.dictionary, self.codes = self._encode_values(canonical_by(col))
        valid = arrow_numpy.valid(self.dictionary)
        self.null_code = _first_null(valid) if null_equal else NO_GROUP
        self._table = None  # the dictionary's hash table, built on first lookup

    def _encode_values(self, col: pa.ChunkedArray):
        hashed = _encode_hashed(col, nulls_distinct=not self.null_equal)
        if hashed is not None:
            codes, dictionary = hashed
            return dictionary, codes
        if not col.null_count and _is_fixed_width(col.type) and walks.encodes_by_sorting(len(col)):
            return _encode_sorted(col)
        enc = arrow_numpy.dictionary_encode(
            col, null_encoding="encode" if self.null_equal else "mask"
        )
        dictionary = enc.chunk(0).dictionary if enc.num_chunks else pa.nulls(0, col.type)
        indices = pa.chunked_array([c.indices for c in enc.chunks], pa.int32())
        return dictionary, _nulls_as(indices, NO_GROUP)

    def _encode_views(self, col: pa.ChunkedArray):
        """Codes of an inline view column, as ``_encode_hashed`` encodes text: the views of
        a sample of the first rows hashed on all cores (``_hash_views``), the rest looked up
        in their dictionary run by run where it lies, and the views the sample lacks hashed
        after and appended (the whole column hashed so where the sample is mostly distinct,
        or lacks many rows' values: ``walks.most_appended``).
        An inline view holds its whole value, so a view means the same in any chunk; None
        when a value is too long for its view. A longer value can equal no inline one, so
        only the sample and the views it lacks are checked (every view's length read again
        took 18 ms of 10M). The dictionary comes as large strings (or binaries), as a cast
        column's would; its views stay for lookups of views."""
        from ._backend import host_empty, lookup_views, views_lookup_table

        nulls_distinct = not self.null_equal
        head = col.slice(0, DISTINCT_SAMPLE_ROWS)
        if not _inline(head):
            return None
        head_codes, words, valid = _hash_views(head, nulls_distinct)
        if len(head) == len(col):
            codes = head_codes
        elif not walks.encodes_sample_in_parallel(len(head), len(words)):
            if not _inline(col):
                return None
            codes, words, valid = _hash_views(col, nulls_distinct)
        else:
            codes = host_empty(len(col), np.int32)
            codes[: len(head)] = head_codes
            flat = words.reshape(-1)
            table = (flat, views_lookup_table(flat, _bitmap(valid), 0))
            rows, _ = _look_up_rest(
                col,
                codes,
                len(head),
                lambda run, null_code, out: lookup_views(
                    table, *_view_words(run), null_code, out=out
                ),
                _first_null(valid),
                nulls_distinct,
            )
            if rows is None:
                if not _inline(col):
                    return None
                codes, words, valid = _hash_views(col, nulls_distinct)
            elif rows.size:  # in row order: the codes stay in order of first appearance
                missed, bitmap = _views_at(col, rows)
                if _longest(missed) > views.INLINE:
                    return None
                more_codes, more_words, more_valid = _hash_view_words(
                    missed, bitmap, 0, nulls_distinct
                )
                codes[rows] = len(words) + more_codes  # no nulls among them, or one value
                words = np.concatenate([words, more_words])
                valid = np.concatenate([valid, more_valid])
        self._view_table = (words.reshape(-1), _bitmap(valid), None)
        buffers = [None if valid.all() else pa.py_buffer(_bitmap(valid)), pa.py_buffer(words)]
        views_array = pa.Array.from_buffers(col.type, len(words), buffers)
        return views_array.cast(arrow_numpy.viewless(col.type)), codes

    def _encode_dictionary_column(self, col: pa.ChunkedArray):
        """Categoricals by value: encode the (small) dictionary, then map the indices."""
        col = unified(_used_values(col))
        values = _Column(pa.chunked_array([_dictionary_of(col)]), self.null_equal)
        dictionary, value_codes = values.dictionary, values.codes
        indices = _nulls_as(pa.chunked_array([c.indices for c in col.chunks]), -1)
        if self.null_equal and (indices < 0).any():
            if values.null_code == NO_GROUP:  # null indices need a group of their own
                dictionary = pa.concat_arrays([dictionary, pa.nulls(1, dictionary.type)])
                null_code = len(dictionary) - 1
            else:
                null_code = values.null_code
        else:
            null_code = NO_GROUP
        codes = _take_codes(value_codes, indices, null_code)
        return dictionary, codes.astype(np.int32, copy=False)

    def lookup(self, col: pa.ChunkedArray) -> np.ndarray:
        col = _combine_chunks(col)
        if pa.types.is_dictionary(col.type):
            col = unified(_used_values(col))
            value_codes = self.lookup(pa.chunked_array([_dictionary_of(col)]))
            indices = _nulls_as(pa.chunked_array([c.indices for c in col.chunks]), -1)
            codes = _take_codes(value_codes, indices, self.null_code)
            return codes.astype(np.int32, copy=False)
        if pa.types.is_null(col.type):  # all null
            return np.full(len(col), self.null_code, dtype=np.int32)
        # A view too long to be inline equals no value of the inline dictionary: not found.
        # A view column of any size is looked up where it lies: a cast would copy its values.
        if (
            self._view_table is not None
            and arrow_numpy.is_view_text(col.type)
            and walks.looks_up_by_hash(len(col))
        ):
            return self._lookup_views(col)
        col = canonical_by(col)
        # A prepared join probes again and again: the dictionary is hashed once, not at each
        # call as Arrow's index_in does (most of a small probe's time with many groups).
        if not walks.looks_up_by_hash(len(col)):
            with walks.interpreting():  # in place of compiled kernels: it counts (a GPU's too)
                return self._index_in(col)
        if (
            arrow_numpy.is_offset_text(col.type)
            and arrow_numpy.is_offset_text(self.dictionary.type)
        ) or (_is_fixed_width(col.type) and col.type == self.dictionary.type):
            return self._lookup_hashed(col)
        return self._index_in(col)

    def _lookup_views(self, col: pa.ChunkedArray) -> np.ndarray:
        """Each row's view looked up in a hash table of the dictionary's views."""
        from ._backend import lookup_views, views_lookup_table

        words, bitmap, table = self._view_table
        if table is None:
            table = views_lookup_table(words, bitmap, 0)
            self._view_table = (words, bitmap, table)
        return _chunk_by_chunk(
            col,
            lambda chunk, out: lookup_views(
                (words, table), *_view_words(chunk), self.null_code, out=out
            ),
        )

    def _lookup_hashed(self, col: pa.ChunkedArray) -> np.ndarray:
        """Each row's value (text, or fixed-width of the dictionary's type) looked up in a
        hash table of the dictionary, built once."""
        if self._table is None:
            self._table = _lookup_table(self.dictionary)
        return _chunk_by_chunk(
            col, lambda chunk, out: _look_up(self._table, chunk, self.null_code, out)
        )

    def _index_in(self, col: pa.ChunkedArray) -> np.ndarray:
        """Arrow's lookup of each value's position in the dictionary."""
        value_set = self.dictionary
        if value_set.type != col.type:
            value_set = value_set.cast(col.type)
        found = pc.index_in(col, value_set=value_set, skip_nulls=not self.null_equal)
        return _nulls_as(found, NO_GROUP)


class Groups:
    """The right side's groups over any number of by-columns; left columns looked up."""

    def __init__(self, columns: list[pa.ChunkedArray], params: list[str], null_equal: bool):
        columns = [_nulls_if_untyped(c) for c in columns]  # compared with a left of any type
        for col, param in zip(columns, params):
            _check_type(col.type, col.type, param, param)
        self.params = params
        self.columns = [_Column(c, null_equal) for c in columns]
        codes = self.columns[0].codes
        self._steps = []  # per extra column: the dictionary of combined codes
        for column in self.columns[1:]:
            combined = _pair(codes, column.codes, len(column.dictionary))
            codes, step = _encode_pairs(combined)
            self._steps.append(step)
        self.right_codes = codes
        # Checked once every code is made: past int32 they wrapped, and are refused here.
        for column, param in zip(self.columns, params):
            check_group_count(len(column.dictionary), param)
        self.n_groups = len(self._steps[-1]) if self._steps else len(self.columns[0].dictionary)
        check_group_count(self.n_groups, params[0].split("[")[0])
        self._step_tables = [None] * len(self._steps)  # built on first lookup

    def lookup(self, columns: list[pa.ChunkedArray], params: list[str]) -> np.ndarray:
        """Group codes of left rows (-1: no such group on the right, or a null key)."""
        if len(columns) != len(self.columns):
            msg = (
                f"{params[0].split('[')[0]} must have {len(self.columns)} column(s) to match "
                f"right_by, got {len(columns)}"
            )
            raise ValueError(msg)
        # A batch of unknown keys, typed as its source guessed, is in no group, whatever its
        # type.
        columns = [_nulls_if_untyped(c) for c in columns]
        for col, column, lp, rp in zip(columns, self.columns, params, self.params):
            _check_type(col.type, column.type, lp, rp)
        from ._backend import fixed_lookup_table, lookup_fixed

        codes = self.columns[0].lookup(columns[0])
        for k, (col, column) in enumerate(zip(columns[1:], self.columns[1:])):
            combined = _pair(codes, column.lookup(col), len(column.dictionary))
            if not walks.looks_up_by_hash(len(combined)):
                with walks.interpreting():
                    found = pc.index_in(arrow_numpy.array(combined), value_set=self._steps[k])
                codes = _nulls_as(pa.chunked_array([found]), NO_GROUP)
                continue
            if self._step_tables[k] is None:
                self._step_tables[k] = fixed_lookup_table(*_fixed_width_buffers(self._steps[k]))
            # NO_GROUP's bits are no step value's (those are all >= 0): it stays NO_GROUP.
            codes = lookup_fixed(
                self._step_tables[k], combined.view(np.uint64), NO_BYTES, 0, NO_GROUP
            )
        return codes


def _encode_pairs(combined: np.ndarray):
    """(codes, dictionary) of combined pair codes, in order of first appearance; NO_GROUP
    stays NO_GROUP and is not in the dictionary. On all cores when large, as a column."""
    arr = arrow_numpy.array(combined, valid=combined >= 0)
    hashed = _encode_hashed(pa.chunked_array([arr]), nulls_distinct=True)
    if hashed is not None:
        return hashed
    enc = pc.dictionary_encode(arr)
    return _nulls_as(pa.chunked_array([enc.indices]), NO_GROUP), enc.dictionary


def _pair(codes: np.ndarray, more: np.ndarray, n_more: int) -> np.ndarray:
    """Mixed-radix combination of two code arrays; -1 where either is -1."""
    combined = codes.astype(np.int64) * n_more + more
    combined[(codes < 0) | (more < 0)] = NO_GROUP
    return combined
