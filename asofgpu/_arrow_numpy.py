"""numpy arrays of Arrow columns and back, through their buffers.

pyarrow imports pandas the first time a value crosses between Python and Arrow:
``Array.to_numpy``, ``pa.array`` of a numpy array, ``pa.scalar``, ``fill_null(0)``,
``Schema.empty_table``, even for an int64 column. That is 0.15 to 0.2 s of a 2 s
``asofgpu enrich``, a process with no other use for pandas. A fixed-width column's values are
one buffer and its validity a bitmap: these functions read and wrap them directly, as views
where they can. (``tests/test_cli.py`` checks that an enrich run leaves pandas unimported.)

>>> import numpy as np
>>> import pyarrow as pa
>>> values(pa.chunked_array([[1, 2], [3]])).tolist()
[1, 2, 3]
>>> values(pa.array([0, 86_400], pa.timestamp("s"))).tolist()
[0, 86400]
>>> filled(pa.array([1, None, 3]), -1).tolist()
[1, -1, 3]
>>> whole = pa.array([5, 6, 7, 8], pa.int64())
>>> [length for _, length in segments(pa.chunked_array([whole[:1], whole[1:3], whole[3:]]))]
[4]
>>> valid(pa.array([1, None, 3])).tolist()
[True, False, True]
>>> array(np.arange(3), valid=np.array([True, False, True])).to_pylist()
[0, None, 2]
"""

from __future__ import annotations

import functools
import threading

import numpy as np
import pyarrow as pa

from ._host_pool import HOST_POOL


def values(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The physical values of a column: integers and floats as they are, temporal types as the
    integers they are stored as (a timestamp[ns] as int64), booleans unpacked. The slots of
    nulls hold whatever the buffer holds. A column of one chunk, or of chunks that lie end to
    end (``segments``), gives a read-only view, of several a new array; other types go
    through ``to_numpy``."""
    if isinstance(column, pa.ChunkedArray):
        if column.num_chunks == 1:
            return values(column.chunk(0))
        if column.num_chunks == 0:  # (float16: as to_numpy gives one; others: object)
            kind = np.float16 if pa.types.is_float16(column.type) else object
            return np.empty(0, _dtype(column.type) or kind)
        dtype = _dtype(column.type)
        spans = segments(column) if dtype is not None and dtype != np.bool_ else None
        if spans == []:  # chunks of no rows
            return np.empty(0, dtype)
        if spans is not None and len(spans) == 1:
            return _view(spans[0], dtype, column)  # slices of one buffer, as a reader's
        # Into memory asofgpu.host_pool keeps written: a join's keys are copied at each
        # call, and fresh pages cost it four times the copy (80 MB: 44 ms against 11).
        if spans is not None:
            parts = [_view(span, dtype, column) for span in spans]
            return concatenate(parts, HOST_POOL.empty(len(column), dtype))
        parts = [values(chunk) for chunk in column.chunks]
        if parts[0].dtype == np.bool_ or dtype is None:
            return np.concatenate(parts)
        return np.concatenate(parts, out=HOST_POOL.empty(len(column), parts[0].dtype))
    dtype = _dtype(column.type)
    if dtype is None or (column.buffers()[1] is None and len(column)):
        return column.to_numpy(zero_copy_only=False)
    if dtype == np.bool_:
        return _bits(column.buffers()[1], column.offset, len(column))
    if not len(column):
        return np.empty(0, dtype)
    view = np.frombuffer(column.buffers()[1], dtype, len(column), column.offset * dtype.itemsize)
    view.flags.writeable = False  # Arrow's data is immutable (and numba types by the flag)
    return view


def int64_bits(values: np.ndarray) -> np.ndarray:
    """What ``values`` reads, as int64 numbers of their bits: equal exactly where the bits
    are (floats' -0.0 and 0.0 apart), for finding runs of equal values after a sort of them.

    >>> int64_bits(np.array([-0.0, 0.0, 1.0])).tolist()[:2]
    [-9223372036854775808, 0]
    """
    return values.view(f"i{values.itemsize}").astype(np.int64, copy=False)


#: A copy of more bytes than this is split over threads (numpy copies without the GIL): one
#: core copied the 10 runs of a 10M-row int64 column (80 MB) in 13-15 ms, two in 7-8 ms; a
#: 1M-row column's copy took 0.67 ms either way.
PARALLEL_COPY_BYTES = 16 << 20


def concatenate(parts: list[np.ndarray], out: np.ndarray) -> np.ndarray:
    """``np.concatenate(parts, out=out)``, a large copy of parts of ``out``'s dtype split by
    rows over numba's threads (``jit.pool_threads()``: the join's own limit where a
    caller set one).

    >>> concatenate([np.arange(3), np.arange(2)], np.empty(5, np.int64)).tolist()
    [0, 1, 2, 0, 1]
    """
    threads = 1
    if out.nbytes > PARALLEL_COPY_BYTES and all(part.dtype == out.dtype for part in parts):
        from ._backend.jit import pool_threads

        threads = min(pool_threads(), out.nbytes // PARALLEL_COPY_BYTES)
    if threads <= 1 or len(parts) == 0:
        return np.concatenate(parts, out=out)
    starts = np.cumsum([0] + [len(part) for part in parts])
    failed: list[BaseException] = []

    def copy(lo: int, hi: int) -> None:  # out[lo:hi] from the parts that hold those rows
        try:
            k = int(np.searchsorted(starts, lo, side="right")) - 1
            while lo < hi:
                end = min(hi, int(starts[k + 1]))
                out[lo:end] = parts[k][lo - starts[k] : end - starts[k]]
                lo, k = end, k + 1
        except BaseException as exc:  # raised below, never a half-written array returned
            failed.append(exc)

    bounds = [len(out) * t // threads for t in range(threads + 1)]
    helpers = [
        threading.Thread(target=copy, args=(bounds[t], bounds[t + 1])) for t in range(1, threads)
    ]
    for helper in helpers:
        helper.start()
    copy(bounds[0], bounds[1])
    for helper in helpers:
        helper.join()
    if failed:
        raise failed[0]
    return out


def segments(column: pa.ChunkedArray) -> list[tuple[int, int]] | None:
    """(address of the first value, number of values) of each run of ``column``'s non-empty
    chunks that lie end to end in memory, for a fixed-width type other than boolean; None
    when a chunk has no values buffer. A parquet reader's chunks are slices of one buffer
    per row group (77 chunks, 10 runs, for a 10M-row column), so reading runs instead of
    chunks makes fewer, longer reads."""
    width = column.type.bit_width // 8
    runs: list[list[int]] = []
    for chunk in column.chunks:
        if not len(chunk):
            continue
        data = chunk.buffers()[1]
        if data is None:
            return None
        address = data.address + chunk.offset * width
        if runs and runs[-1][0] + runs[-1][1] * width == address:
            runs[-1][1] += len(chunk)
        else:
            runs.append([address, len(chunk)])
    return [(address, length) for address, length in runs]


def runs(column: pa.ChunkedArray) -> list[pa.Array]:
    """``column``'s non-empty chunks, each run of chunks that are consecutive slices of one
    array (the same buffers, each starting where the last ended) joined into one slice of it:
    a parquet reader gives a row group's array in slices (77 chunks, 10 runs, for a 10M-row
    column), and a kernel launched a run rather than a chunk reads the same memory, uncopied.

    >>> whole = pa.array(["a", "b", None, "d"])
    >>> [r.to_pylist() for r in runs(pa.chunked_array([whole[:1], whole[1:3], whole[3:]]))]
    [['a', 'b', None, 'd']]
    >>> len(runs(pa.chunked_array([whole[:2], pa.array(["e"]), whole[2:]])))
    3
    """
    out: list[pa.Array] = []
    first = last = None
    length = 0

    def close():
        if first is not None:
            out.append(
                first
                if first is last
                else pa.Array.from_buffers(first.type, length, first.buffers(), offset=first.offset)
            )

    for chunk in column.chunks:
        if not len(chunk):
            continue
        if last is not None and _consecutive(last, chunk):
            last, length = chunk, length + len(chunk)
            continue
        close()
        first = last = chunk
        length = len(chunk)
    close()
    return out


#: Chunks shorter than this on average are copied together (``coarse_runs``)...
COARSE_RUN_ROWS = 1 << 14
#: ...when their values are this short on average: a copy of long text gains nothing.
COARSE_ROW_BYTES = 4096
#: Up to this size they are copied into one array (under 2 GiB: text of 32-bit offsets).
COARSE_WHOLE_BYTES = 256 << 20


def coarse_runs(column: pa.ChunkedArray) -> list[pa.Array]:
    """``runs``, but a column of many small chunks (fewer than ``COARSE_RUN_ROWS`` rows on
    average, of short values) copied into pieces of about that many rows, for a kernel
    launched a piece: a frame put together from 5,000 pieces (``pd.concat``,
    ``pl.concat(rechunk=False)``) gave 5,000 runs of 200 rows, whose launches took 0.18 s of
    a text by column's lookup where 62 took 36 ms.

    >>> pieces = pa.chunked_array([pa.array([i, i + 1]) for i in range(0, 6, 2)])
    >>> [r.to_pylist() for r in coarse_runs(pieces)]
    [[0, 1, 2, 3, 4, 5]]
    """
    n, t = len(column), column.type
    if (
        column.num_chunks < 2
        or n >= COARSE_RUN_ROWS * column.num_chunks
        or not _flat(t)
        or pa.types.is_string_view(t)  # views are read in their chunks (kernels/views.py),
        or pa.types.is_binary_view(t)  # and pyarrow 19 cannot size or join them
    ):
        return runs(column)
    chunks = [chunk for chunk in column.chunks if len(chunk)]
    if len(chunks) > 1 and _consecutive(chunks[0], chunks[1]):
        # Slices of one array (a reader's, or polars' slices of one frame): runs joins them
        # without a copy, and what it leaves apart is put together below.
        chunks = runs(column)
        if len(chunks) < 2 or n >= COARSE_RUN_ROWS * len(chunks):
            return chunks
    # The bytes a row from the first chunks (ChunkedArray.nbytes visits every chunk: 10 ms
    # for 5,000).
    sample = chunks[:8]
    row_bytes = sum(c.nbytes for c in sample) / max(1, sum(len(c) for c in sample))
    if row_bytes > COARSE_ROW_BYTES:
        return runs(column)
    if row_bytes * n <= COARSE_WHOLE_BYTES:
        return _concatenated(chunks)  # one copy in Arrow, not a Python step a piece
    out: list[pa.Array] = []
    held: list[pa.Array] = []
    rows = 0
    for chunk in chunks:
        held.append(chunk)
        rows += len(chunk)
        if rows >= COARSE_RUN_ROWS:
            out.extend(_concatenated(held))
            held, rows = [], 0
    out.extend(_concatenated(held))
    return out


def _concatenated(arrays: list[pa.Array]) -> list[pa.Array]:
    """``arrays`` as one (a copy), or as they are where they do not fit one: text of 32-bit
    offsets past 2 GiB."""
    if len(arrays) < 2:
        return arrays
    try:
        return [pa.concat_arrays(arrays)]
    except pa.ArrowInvalid:
        return arrays


def _consecutive(a: pa.Array, b: pa.Array) -> bool:
    """Whether ``b`` is the slice of one flat array right after ``a``."""
    return b.offset == a.offset + len(a) and _same_buffers(b, a) and _flat(b.type)


def _flat(t: pa.DataType) -> bool:
    """Whether an array of type ``t`` is its buffers alone: not nested (children carry offsets
    of their own), a dictionary (its values) or an extension type."""
    return t.num_fields == 0 and not (
        pa.types.is_dictionary(t) or isinstance(t, pa.BaseExtensionType)
    )


def _same_buffers(a: pa.Array, b: pa.Array) -> bool:
    """Whether two arrays are slices of one: the same buffers, whole (a slice's buffer may
    also be cut to its own rows, and then cannot hold the run's)."""

    def spans(arr):
        return [None if x is None else (x.address, x.size) for x in arr.buffers()]

    return spans(a) == spans(b)


def _view(span: tuple[int, int], dtype: np.dtype, owner) -> np.ndarray:
    """A read-only numpy view of ``segments``' ``span``, keeping ``owner`` (the column whose
    buffers hold it) alive."""
    address, length = span
    buffer = pa.foreign_buffer(address, length * dtype.itemsize, base=owner)
    view = np.frombuffer(buffer, dtype, length)
    view.flags.writeable = False
    return view


def filled(column: pa.Array | pa.ChunkedArray, value) -> np.ndarray:
    """``values(column)`` with ``value`` where it is null (``column.fill_null(value)``)."""
    data = values(column)
    return data if column.null_count == 0 else np.where(valid(column), data, value)


def has_nulls(column: pa.Array | pa.ChunkedArray) -> bool:
    """Whether ``valid`` would say any row is null: ``null_count``, or a dictionary's null
    values, or a run-end encoded column's, which it does not count."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    if pa.types.is_dictionary(column.type):
        return column.null_count > 0 or any(c.dictionary.null_count for c in chunks)
    if pa.types.is_run_end_encoded(column.type):
        return any(c.values.null_count for c in chunks)
    return column.null_count > 0


def valid(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Where a column is not null, as a bool array; a dictionary's null values are nulls
    too, as Arrow reads them, where its ``null_count`` counts its indices' alone, and so are
    a run-end encoded column's (its ``null_count`` is 0: they lie in its values).

    >>> codes = pa.DictionaryArray.from_arrays(pa.array([0, 1, None, 1]), pa.array([5, None]))
    >>> valid(codes).tolist(), codes.null_count
    ([True, False, False, False], 1)
    >>> import pyarrow.compute as pc
    >>> runs = pc.run_end_encode(pa.array([None, 1.0, 1.0, None]))
    >>> valid(runs).tolist(), runs.null_count
    ([False, True, True, False], 0)
    """
    if isinstance(column, pa.ChunkedArray):
        parts = [valid(chunk) for chunk in column.chunks]
        return parts[0] if len(parts) == 1 else np.concatenate([np.empty(0, bool), *parts])
    if pa.types.is_dictionary(column.type) and column.dictionary.null_count:
        at = valid(column.indices)
        indices = filled(column.indices, 0).astype(np.intp)
        return at & valid(column.dictionary)[indices]
    if pa.types.is_run_end_encoded(column.type):
        import pyarrow.compute as pc  # here only: its import costs every process 15 ms

        return valid(pc.run_end_decode(column))
    bitmap = column.buffers()[0] if len(column.buffers()) else None
    if column.null_count == 0 or bitmap is None:
        return np.full(len(column), column.null_count == 0)
    return _bits(bitmap, column.offset, len(column))


def array(
    values: np.ndarray, type: pa.DataType | None = None, valid: np.ndarray | None = None
) -> pa.Array:
    """An Arrow array over a one-dimensional numpy array of integers, floats or booleans
    (no copy unless it is strided or boolean), of ``type`` (default: the numpy type's; a
    temporal type of the same width takes integers), null where ``valid`` is False."""
    values = np.ascontiguousarray(values)
    type = type or pa.from_numpy_dtype(values.dtype)
    data = pa.py_buffer(
        np.packbits(values, bitorder="little") if values.dtype == np.bool_ else values
    )
    if valid is None or valid.all():
        return pa.Array.from_buffers(type, len(values), [None, data], null_count=0)
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(
        type, len(values), [bitmap, data], null_count=len(values) - int(np.count_nonzero(valid))
    )


def text(value: str) -> pa.Array:
    """A one-row Arrow string array holding ``value``, from its buffers (``pa.array`` and
    ``pa.scalar`` import pandas, a third of a second, where it is installed).

    >>> text("2026-11-27").cast(pa.date32())[0].as_py()
    datetime.date(2026, 11, 27)
    """
    data = value.encode()
    offsets = np.array([0, len(data)], np.int32)
    return pa.Array.from_buffers(pa.string(), 1, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def rebuilt(t: pa.DataType, node, field=None) -> pa.DataType:
    """``t`` rebuilt from the bottom up: each nested type (a struct's fields, a list's items,
    a map's keys and items, a dictionary's values) rebuilt first, its field then passed to
    ``field`` where given (not a map's keys, which are never null), and each type so rebuilt
    passed to ``node``: the one walk over nested types of ``viewless`` and of enrich's
    schemas.

    >>> rebuilt(pa.list_(pa.int8()), lambda t: pa.int16() if t == pa.int8() else t)
    ListType(list<item: int16>)
    """

    def inner(f: pa.Field) -> pa.Field:
        f = f.with_type(rebuilt(f.type, node, field))
        return f if field is None else field(f)

    if pa.types.is_struct(t):
        t = pa.struct([inner(t.field(i)) for i in range(t.num_fields)])
    elif pa.types.is_map(t):
        t = pa.map_(t.key_field.with_type(rebuilt(t.key_type, node, field)), inner(t.item_field))
    elif pa.types.is_fixed_size_list(t):
        t = pa.list_(inner(t.value_field), t.list_size)
    elif pa.types.is_list(t):
        t = pa.list_(inner(t.value_field))
    elif pa.types.is_large_list(t):
        t = pa.large_list(inner(t.value_field))
    elif pa.types.is_list_view(t):
        t = pa.list_view(inner(t.value_field))
    elif pa.types.is_large_list_view(t):
        t = pa.large_list_view(inner(t.value_field))
    elif pa.types.is_dictionary(t):
        t = pa.dictionary(t.index_type, rebuilt(t.value_type, node, field), t.ordered)
    return node(t)


def viewless(t: pa.DataType) -> pa.DataType:
    """``t`` with string and binary views as large strings and binaries, nested ones too:
    pyarrow (26) has no take, filter or sort for views: ``gather`` and ``asofgpu enrich``,
    which take and order rows, work on this form and cast back.

    >>> viewless(pa.struct([("s", pa.string_view()), ("l", pa.list_(pa.binary_view()))]))
    StructType(struct<s: large_string, l: list<item: large_binary>>)
    """
    return rebuilt(t, _without_view)


def _without_view(t: pa.DataType) -> pa.DataType:
    if pa.types.is_string_view(t):
        return pa.large_string()
    return pa.large_binary() if pa.types.is_binary_view(t) else t


def viewless_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([f.with_type(viewless(f.type)) for f in schema], schema.metadata)


def without_views(data):
    """A table or batch with its view columns cast to ``viewless`` types (few hold them:
    the rest pass untouched)."""
    types = tuple(data.schema.types)
    try:
        views = _hold_views(types)
    except TypeError:  # (a type that cannot be hashed: a Python extension type without one)
        views = _hold_views.__wrapped__(types)
    return data.cast(viewless_schema(data.schema)) if views else data


@functools.lru_cache(maxsize=256)
def _hold_views(types: tuple) -> bool:
    """Whether any of ``types`` holds views, at any depth: asked of every batch a source
    reads, of few schemas (10,000 row groups' batches spent 0.21 s rebuilding their types).
    Kept by the types alone: a schema with metadata cannot be hashed before pyarrow 20."""
    return any(viewless(t) != t for t in types)


def decoded(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A dictionary column's values; view ones as large strings or binaries (pyarrow 26
    cannot decode a dictionary of views, but casts it to one of large values).

    >>> views = pa.array(["a", None], pa.string_view()).dictionary_encode()
    >>> decoded(pa.chunked_array([views])).to_pylist()
    ['a', None]
    """
    plain = viewless(column.type)
    return column.cast(plain).cast(plain.value_type)


def dictionary_encode(values, **options):
    """``pyarrow.compute.dictionary_encode(values, **options)``, of float16 values too, which
    pyarrow before 26 has no kernel for: those are encoded by their bits (as Arrow hashes
    floats: -0.0 apart from 0.0) and their dictionaries read as float16 again.

    >>> halves = pa.array(np.array([1.5, -0.0, 1.5], np.float16))
    >>> coded = dictionary_encode(halves)
    >>> coded.dictionary.to_pylist(), coded.indices.to_pylist()
    ([1.5, -0.0], [0, 1, 0])
    """
    import pyarrow.compute as pc

    if not pa.types.is_float16(values.type):
        return pc.dictionary_encode(values, **options)
    if isinstance(values, pa.ChunkedArray):
        bits = pa.chunked_array([c.view(pa.uint16()) for c in values.chunks], pa.uint16())
        coded = pc.dictionary_encode(bits, **options)
        chunks = [_halves(c) for c in coded.chunks]
        return pa.chunked_array(chunks, pa.dictionary(coded.type.index_type, pa.float16()))
    return _halves(pc.dictionary_encode(values.view(pa.uint16()), **options))


def _halves(coded: pa.DictionaryArray) -> pa.DictionaryArray:
    """A dictionary array of uint16 bits as one of the float16 values they are."""
    return pa.DictionaryArray.from_arrays(coded.indices, coded.dictionary.view(pa.float16()))


def unifies_wrong(column: pa.ChunkedArray) -> bool:
    """Whether Arrow cannot put a dictionary column's chunks on one dictionary, as its take
    of chunks and ``unify_dictionaries`` do: it refuses dictionaries holding a null value,
    and unifies float16 ones by their bits (pyarrow 26: 1.5 became 15872.0, silently).
    Such a column is decoded and encoded again instead.

    >>> def halves(*values):  # (pyarrow before 21 has no dictionary_encode of float16)
    ...     codes = pa.array(np.arange(len(values)), pa.int32())
    ...     return pa.DictionaryArray.from_arrays(codes, pa.array(np.array(values, np.float16)))
    >>> chunks = [halves(0, 1.5), halves(2)]
    >>> unifies_wrong(pa.chunked_array(chunks)), unifies_wrong(pa.chunked_array(chunks[:1]))
    (True, False)
    """
    return (
        pa.types.is_dictionary(column.type)
        and column.num_chunks > 1
        and (
            pa.types.is_float16(column.type.value_type)
            or any(chunk.dictionary.null_count for chunk in column.chunks)
        )
    )


#: A take of at most one row in this many of a chunked column reads each chunk where it lies.
FEW_ROWS = 16


def take(
    data: pa.Table | pa.ChunkedArray,
    rows: np.ndarray,
    valid: np.ndarray | None = None,
    starts: list[np.ndarray] | np.ndarray | None = None,
) -> pa.Table | pa.ChunkedArray:
    """``data.take(rows)`` (null where ``valid`` is False), without copying whole chunks.

    Arrow's take on a chunked column concatenates its chunks into one before it takes: 2.4 ms
    for 1,000 rows of three 1M-row float64 chunks, against 8 us from one chunk. A take of few
    rows (at most one in ``FEW_ROWS``) takes each chunk's rows from that chunk and puts them
    in order; a larger one pays the concatenation once, as Arrow does. ``starts``: the
    column's ``chunk_starts`` (a list of them for a table's columns), from a caller that takes
    from the same data again and again, so that a take's cost follows the chunks it reads,
    not the column's: 7 rows of a column of 1,200 chunks took 1.8 ms finding where they start.

    >>> column = pa.chunked_array([[1, 2], [3, 4, 5]])
    >>> take(column, np.array([4, 0, 2]), np.array([True, True, False])).to_pylist()
    [5, 1, None]
    """
    rows = np.asarray(rows, dtype=np.int64)
    if valid is not None and valid.all():
        valid = None
    if isinstance(data, pa.Table):
        starts = [None] * data.num_columns if starts is None else starts
        return pa.Table.from_arrays(
            [_take_column(c, rows, valid, at) for c, at in zip(data.columns, starts)],
            schema=data.schema,
        )
    return _take_column(data, rows, valid, starts)


def takes_per_chunk(column: pa.ChunkedArray, entries: int) -> bool:
    """Whether ``take`` of ``entries`` rows takes ``column``'s rows chunk by chunk (a call a
    chunk), rather than concatenating its chunks once."""
    return column.num_chunks > 1 and entries * FEW_ROWS <= len(column)


def chunk_starts(column: pa.ChunkedArray) -> np.ndarray:
    """The first row of each chunk of ``column``, and its length last.

    >>> chunk_starts(pa.chunked_array([[1, 2], [], [3, 4, 5]])).tolist()
    [0, 2, 2, 5]
    """
    return np.cumsum([0, *(len(chunk) for chunk in column.chunks)])


def _take_column(
    column: pa.ChunkedArray, rows: np.ndarray, valid: np.ndarray | None, starts=None
) -> pa.ChunkedArray:
    if not takes_per_chunk(column, len(rows)):
        return column.take(array(rows if valid is None else np.where(valid, rows, 0), valid=valid))
    if starts is None or len(starts) != column.num_chunks + 1 or starts[-1] != len(column):
        starts = chunk_starts(column)  # none given, or another column's
    if valid is not None:  # a null's row: one taken anyway, so that it reads no other chunk
        rows = np.where(valid, rows, rows[np.argmax(valid)] if valid.any() else 0)
    if len(rows) and (rows.min() < 0 or rows.max() >= len(column)):
        msg = f"take: a row outside 0..{len(column) - 1}"
        raise IndexError(msg)
    chunk_of = np.searchsorted(starts, rows, side="right") - 1
    if len(rows) and chunk_of[0] == chunk_of[-1] and (chunk_of == chunk_of[0]).all():
        # all in one chunk, as a time-ordered batch's matches mostly are: one take, in order
        k = int(chunk_of[0])
        taken = column.chunk(k).take(array(rows - starts[k], valid=valid))
        return pa.chunked_array([taken], column.type)
    order = np.argsort(chunk_of, kind="stable")
    in_order = chunk_of[order]
    # the chunks read, each with its rows' stretch of ``order``: never a loop over them all
    firsts = np.flatnonzero(np.diff(in_order, prepend=-1))
    ends = np.append(firsts[1:], len(order))
    pieces = [
        column.chunk(k).take(array(rows[order[a:b]] - starts[k]))
        for k, a, b in zip(in_order[firsts].tolist(), firsts.tolist(), ends.tolist())
    ]
    if not pieces:  # no rows
        return pa.chunked_array([], column.type)
    back = np.empty_like(order)
    back[order] = np.arange(len(order))  # each row's place among the pieces' rows
    return pa.chunked_array([pa.concat_arrays(pieces).take(array(back, valid=valid))], column.type)


def combined(column: pa.ChunkedArray) -> pa.Array:
    """``column`` as one array: its only chunk as it is (``combine_chunks`` copies even one
    chunk, into fresh pages: 4-5 ms of each 1M-row column a window join's picks take), its
    chunks concatenated, or an empty array when it has none (``combine_chunks`` then converts
    a Python list)."""
    if column.num_chunks == 1:
        return column.chunk(0)
    return column.combine_chunks() if column.num_chunks else pa.nulls(0, column.type)


def used_dictionary(coded: pa.DictionaryArray) -> pa.DictionaryArray:
    """``coded`` with its dictionary cut to the values its rows use, renumbered (itself
    where it uses all, or of views, which pyarrow cannot cut): a slice or a take keeps its
    whole dictionary, which a writer then writes whole with each piece.

    >>> coded = pa.array(["b", "a", "b", None]).dictionary_encode().take(pa.array([0, 2, 3]))
    >>> kept = used_dictionary(coded)
    >>> kept.dictionary.to_pylist(), kept.indices.to_pylist()
    (['b'], [0, 0, None])
    """
    import pyarrow.compute as pc

    if is_view_text(coded.dictionary.type):  # (pyarrow has no filter or take of views)
        return coded
    codes = filled(coded.indices, 0)
    used = np.zeros(len(coded.dictionary), bool)
    used[codes[valid(coded.indices)]] = True
    if used.all():
        return coded
    # (Arrow arrays from their buffers: pa.array would import pandas, a third of a second)
    index = coded.type.index_type
    renumbered = array((np.cumsum(used) - 1).astype(index.to_pandas_dtype()), index)
    return pa.DictionaryArray.from_arrays(
        pc.take(renumbered, coded.indices),
        coded.dictionary.filter(array(used)),
        ordered=coded.type.ordered,  # (of the same type: a polars Enum is ordered)
    )


def trimmed_dictionary(column: pa.Array) -> pa.Array:
    """``column``, a dictionary of more values than it has rows cut to those it uses
    (``used_dictionary``); any other as it is. A reader's batches each carry their row
    group's whole dictionary, which a piece of them would carry on: spilled, sampled or
    hashed.

    >>> coded = pa.array(["a", "b", "c"]).dictionary_encode()
    >>> trimmed_dictionary(coded.slice(1, 1)).dictionary.to_pylist()
    ['b']
    >>> trimmed_dictionary(coded) is coded
    True
    """
    if pa.types.is_dictionary(column.type) and len(column.dictionary) > len(column):
        return used_dictionary(column)
    return column


def empty_table(schema: pa.Schema) -> pa.Table:
    """``schema.empty_table()``."""
    return pa.Table.from_batches([], schema=schema)


def physical_dtype(t: pa.DataType) -> np.dtype | None:
    """The numpy dtype ``values`` gives a column of type ``t`` (None: not read from its
    buffers).

    >>> physical_dtype(pa.timestamp("ns")), physical_dtype(pa.string())
    (dtype('int64'), None)
    """
    return _dtype(t)


def is_offset_text(t: pa.DataType) -> bool:
    """String and binary types of 32- or 64-bit offsets, which the text kernels read (views
    are another layout).

    >>> is_offset_text(pa.large_binary()), is_offset_text(pa.string_view())
    (True, False)
    """
    return (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
    )


def is_view_text(t: pa.DataType) -> bool:
    """String and binary views (polars' text), which the view kernels read.

    >>> is_view_text(pa.binary_view()), is_view_text(pa.large_string())
    (True, False)
    """
    return pa.types.is_string_view(t) or pa.types.is_binary_view(t)


def is_fixed_width(t: pa.DataType) -> bool:
    """Whether ``values`` reads a column of type ``t`` from its buffers."""
    return _dtype(t) is not None


def _dtype(t: pa.DataType) -> np.dtype | None:
    if pa.types.is_boolean(t):
        return np.dtype(np.bool_)
    if pa.types.is_integer(t):
        return np.dtype(f"{'i' if pa.types.is_signed_integer(t) else 'u'}{t.bit_width // 8}")
    if pa.types.is_float32(t) or pa.types.is_float64(t):
        return np.dtype(f"f{t.bit_width // 8}")
    if pa.types.is_temporal(t) and not pa.types.is_interval(t):
        return np.dtype(f"i{t.bit_width // 8}")
    return None


def _bits(buffer: pa.Buffer, offset: int, length: int) -> np.ndarray:
    packed = np.frombuffer(buffer, np.uint8, (offset + length + 7) // 8)
    return np.unpackbits(packed, count=offset + length, bitorder="little")[offset:].view(bool)
