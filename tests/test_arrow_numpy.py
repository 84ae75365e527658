"""asofgpu._arrow_numpy: Arrow columns to numpy and back through their buffers, checked against
pyarrow's own conversions on every layout a reader gives (chunks, slices, nulls, no chunks)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from conftest import unhashable_extension_type
from asofgpu import _arrow_numpy as arrow_numpy

TYPES = [
    pa.int8(),
    pa.int16(),
    pa.int32(),
    pa.int64(),
    pa.uint8(),
    pa.uint32(),
    pa.uint64(),
    pa.float32(),
    pa.float64(),
    pa.bool_(),
    pa.timestamp("ns"),
    pa.timestamp("s", "UTC"),
    pa.date32(),
    pa.date64(),
    pa.duration("us"),
    pa.time32("ms"),
    pa.time64("ns"),
]


def _column(t: pa.DataType, n: int, seed: int, nulls: bool) -> pa.Array:
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 100, n)
    valid = rng.random(n) > 0.3 if nulls else np.ones(n, bool)
    if pa.types.is_boolean(t):
        values = [bool(v % 2) if ok else None for v, ok in zip(raw, valid)]
    elif pa.types.is_floating(t):
        values = [float(v) / 4 if ok else None for v, ok in zip(raw, valid)]
    else:
        values = [int(v) if ok else None for v, ok in zip(raw, valid)]
    storage = {8: pa.int8(), 16: pa.int16(), 32: pa.int32(), 64: pa.int64()}
    if pa.types.is_temporal(t):
        return pa.array(values, storage[t.bit_width]).view(t)
    return pa.array(values, t)


def _physical(column: pa.Array | pa.ChunkedArray) -> list:
    """pyarrow's own reading of the physical values, nulls as None."""
    t = column.type
    if pa.types.is_temporal(t):
        column = column.cast(pa.int64() if t.bit_width == 64 else pa.int32())
    return column.to_pylist()


@pytest.mark.parametrize("t", TYPES, ids=str)
@pytest.mark.parametrize("nulls", [False, True], ids=["dense", "nulls"])
def test_values_and_validity_match_pyarrow_on_chunks_and_slices(t, nulls):
    chunks = [_column(t, n, seed, nulls) for seed, n in enumerate([13, 0, 70, 5])]
    sliced = _column(t, 40, 9, nulls).slice(3, 29)  # an offset that is not a whole byte
    for column in [
        chunks[2],
        sliced,
        pa.chunked_array(chunks, t),
        pa.chunked_array([sliced, chunks[0]], t),
        pa.chunked_array([sliced], t),
    ]:
        expected = _physical(column)
        valid = arrow_numpy.valid(column)
        assert valid.dtype == np.bool_
        assert valid.tolist() == [v is not None for v in expected]
        got = arrow_numpy.values(column)
        assert [g if ok else None for g, ok in zip(got.tolist(), valid)] == expected
        assert arrow_numpy.filled(column, 0).tolist() == [0 if v is None else v for v in expected]


def test_a_column_of_no_chunks_or_no_rows_is_empty_of_its_type():
    assert arrow_numpy.values(pa.chunked_array([], pa.timestamp("ns"))).dtype == np.int64
    no_rows = pa.chunked_array([pa.array([], pa.int32()), pa.array([], pa.int32())])
    assert arrow_numpy.values(no_rows).dtype == np.int32 and len(arrow_numpy.values(no_rows)) == 0
    assert arrow_numpy.values(pa.array([], pa.float32())).dtype == np.float32
    assert arrow_numpy.valid(pa.chunked_array([], pa.int8())).tolist() == []
    assert arrow_numpy.combined(pa.chunked_array([], pa.string())).type == pa.string()
    assert len(arrow_numpy.combined(pa.chunked_array([], pa.string()))) == 0
    # as to_numpy gives a chunk of them (a float16 column of no chunks raised IndexError:
    # enrich's dry run of a float16 key or tolerance column ended in a traceback)
    for kind, dtype in ((pa.float16(), np.float16), (pa.string(), object), (pa.null(), object)):
        got = arrow_numpy.values(pa.chunked_array([], kind))
        assert got.dtype == dtype and len(got) == 0


def test_one_chunk_is_a_read_only_view_and_several_a_new_array():
    chunk = pa.array(np.arange(5))
    view = arrow_numpy.values(pa.chunked_array([chunk]))
    assert not view.flags.writeable
    assert view.ctypes.data == chunk.buffers()[1].address
    assert arrow_numpy.values(pa.chunked_array([chunk, chunk])).flags.writeable


def test_chunks_end_to_end_in_one_buffer_are_one_run_and_read_as_a_view():
    whole = pa.array(np.arange(10, dtype=np.int32))
    other = pa.array(np.arange(3, dtype=np.int32))
    reader_like = pa.chunked_array([whole.slice(0, 4), whole.slice(4, 0), whole.slice(4)])
    assert arrow_numpy.segments(reader_like) == [(whole.buffers()[1].address, 10)]
    view = arrow_numpy.values(reader_like)
    assert view.ctypes.data == whole.buffers()[1].address and not view.flags.writeable
    assert view.tolist() == list(range(10))
    # a gap, a chunk of another buffer, a chunk out of order: a run each, and a copy
    apart = pa.chunked_array([whole.slice(0, 3), whole.slice(4, 2), other, whole.slice(6)])
    assert [n for _, n in arrow_numpy.segments(apart)] == [3, 2, 3, 4]
    assert arrow_numpy.values(apart).tolist() == [0, 1, 2, 4, 5, 0, 1, 2, 6, 7, 8, 9]
    backwards = pa.chunked_array([whole.slice(5), whole.slice(0, 5)])
    assert len(arrow_numpy.segments(backwards)) == 2
    assert arrow_numpy.values(backwards).tolist() == [5, 6, 7, 8, 9, 0, 1, 2, 3, 4]


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_a_large_copy_split_over_threads_equals_numpys(monkeypatch, threads):
    import numba

    monkeypatch.setattr(arrow_numpy, "PARALLEL_COPY_BYTES", 64)  # 8 int64 values
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        # runs of 1, 0, 37, 2 and 60 rows: the threads' row ranges start inside runs
        sizes = [1, 0, 37, 2, 60]
        parts = [np.arange(n, dtype=np.int64) + 1_000 * k for k, n in enumerate(sizes)]
        got = arrow_numpy.concatenate(parts, np.full(sum(sizes), -1, np.int64))
        assert got.tolist() == np.concatenate(parts).tolist()
        column = pa.chunked_array([pa.array(part, pa.timestamp("ns")) for part in parts])
        assert arrow_numpy.values(column).tolist() == np.concatenate(parts).tolist()
    finally:
        numba.set_num_threads(before)


def test_a_helper_threads_failure_is_raised_not_a_half_written_array(monkeypatch):
    import numba

    class Failing(np.ndarray):
        def __getitem__(self, key):
            raise RuntimeError("a part could not be read")

    if numba.get_num_threads() < 2:
        pytest.skip("one thread: nothing is split")
    monkeypatch.setattr(arrow_numpy, "PARALLEL_COPY_BYTES", 64)
    parts = [np.arange(50, dtype=np.int64), np.arange(50, dtype=np.int64).view(Failing)]
    with pytest.raises(RuntimeError, match="a part could not be read"):
        arrow_numpy.concatenate(parts, np.empty(100, np.int64))


def test_parts_of_another_dtype_are_copied_by_numpy_and_its_casting_rules(monkeypatch):
    monkeypatch.setattr(arrow_numpy, "PARALLEL_COPY_BYTES", 8)
    with pytest.raises(TypeError, match="Cannot cast"):
        arrow_numpy.concatenate([np.array([1.5] * 4)], np.empty(4, np.int64))


def test_a_view_of_runs_keeps_its_column_alive():
    import gc

    column = pa.chunked_array(
        [pa.array(np.arange(1_000)).slice(k, 100) for k in range(0, 1_000, 100)]
    )
    view = arrow_numpy.values(column)
    del column
    gc.collect()
    assert view.tolist() == list(range(1_000))


def test_other_types_go_through_pyarrow():
    assert arrow_numpy.values(pa.array(["a", None])).tolist() == ["a", None]
    assert arrow_numpy.values(pa.array(np.array([1.5], np.float16))).tolist() == [1.5]
    assert arrow_numpy.valid(pa.nulls(3)).tolist() == [False] * 3


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint64, np.float64, np.bool_])
def test_array_wraps_numpy_values_with_their_nulls(dtype):
    values = np.arange(7).astype(dtype)
    valid = np.array([1, 0, 1, 1, 0, 1, 1], bool)
    for mask in (None, valid):
        got = arrow_numpy.array(values, valid=mask)
        assert got.type == pa.from_numpy_dtype(np.dtype(dtype))
        assert got.null_count == (0 if mask is None else 2)
        keep = np.ones(7, bool) if mask is None else mask
        assert got.to_pylist() == [v if ok else None for v, ok in zip(values.tolist(), keep)]
    strided = arrow_numpy.array(values[::2])
    assert strided.to_pylist() == values[::2].tolist()


def test_array_of_a_temporal_type_takes_its_integers():
    got = arrow_numpy.array(np.array([0, 86_400_000_000_000]), pa.timestamp("ns"))
    assert got.cast(pa.int64()).to_pylist() == [0, 86_400_000_000_000]
    assert str(got.type) == "timestamp[ns]"


def test_empty_table_has_the_schema_and_no_rows():
    schema = pa.schema([("t", pa.timestamp("ns")), ("s", pa.dictionary(pa.int32(), pa.string()))])
    table = arrow_numpy.empty_table(schema)
    assert table.schema == schema and table.num_rows == 0


def _chunked(kind: str) -> pa.ChunkedArray:
    """Six chunks of 100 rows, sliced out of longer arrays, with nulls."""
    rng = np.random.default_rng(7)
    chunks = []
    for k in range(6):
        raw = rng.integers(0, 50, 130)
        if kind == "text":
            whole = pa.array([None if v % 7 == 0 else f"s{v}" for v in raw])
        elif kind == "dictionary":  # a dictionary of its own in each chunk
            whole = pa.array([f"d{v + k}" for v in raw]).dictionary_encode()
        else:
            whole = pa.array([None if v % 7 == 0 else float(v) for v in raw])
        chunks.append(whole.slice(10 + k, 100))
    return pa.chunked_array(chunks)


@pytest.mark.parametrize("kind", ["float", "text", "dictionary"])
@pytest.mark.parametrize("n_rows", [0, 1, 20, 37, 599])  # few rows, then more than one in 16
@pytest.mark.parametrize("with_nulls", [False, True])
def test_take_of_few_or_many_rows_matches_arrows_take(kind, n_rows, with_nulls):
    column = _chunked(kind)
    rng = np.random.default_rng(n_rows)
    rows = rng.integers(0, len(column), n_rows)  # any order, repeats
    valid = rng.random(n_rows) > 0.3 if with_nulls else None
    expected = column.take(arrow_numpy.array(rows, valid=valid))
    taken = arrow_numpy.take(column, rows, valid)
    assert taken.type == column.type
    assert taken.to_pylist() == expected.to_pylist()


def test_take_reads_only_the_chunks_of_its_rows_given_or_finding_their_starts():
    rng = np.random.default_rng(8)
    sizes = rng.integers(0, 5, 400)  # many chunks, some empty, the last ones too
    column = pa.chunked_array(np.split(np.arange(sizes.sum()), np.cumsum(sizes)[:-1]), pa.int64())
    starts = arrow_numpy.chunk_starts(column)
    assert starts[0] == 0 and starts[-1] == len(column) and len(starts) == column.num_chunks + 1
    for n_rows in (0, 1, 9, 40):
        rows = rng.integers(0, len(column), n_rows)
        valid = rng.random(n_rows) > 0.2
        want = column.take(arrow_numpy.array(rows, valid=valid)).to_pylist()
        assert arrow_numpy.take(column, rows, valid).to_pylist() == want
        assert arrow_numpy.take(column, rows, valid, starts).to_pylist() == want
    # rows of one chunk, as a time-ordered batch's matches are, and nulls read no other
    k = int(np.argmax(sizes))
    rows = rng.integers(starts[k], starts[k + 1], 9)
    valid = np.arange(9) % 3 != 0
    want = column.take(arrow_numpy.array(np.where(valid, rows, -1), valid=valid)).to_pylist()
    assert arrow_numpy.take(column, np.where(valid, rows, -1), valid, starts).to_pylist() == want
    assert arrow_numpy.take(column, rows[:0], None, starts).to_pylist() == []


def test_take_of_a_table_takes_every_column():
    table = pa.table({"x": _chunked("float"), "s": _chunked("text")})
    rows = np.array([599, 0, 150, 150, 420])
    taken = arrow_numpy.take(table, rows)
    assert taken.schema == table.schema
    assert taken.to_pydict() == table.take(pa.array(rows)).to_pydict()


@pytest.mark.parametrize("row", [600, -1])
def test_take_outside_the_column_is_an_index_error(row):
    with pytest.raises(IndexError, match=r"take: a row outside 0\.\.599"):
        arrow_numpy.take(_chunked("float"), np.array([3, row]))


RUN_TYPES = [pa.int64(), pa.string(), pa.large_binary(), pa.string_view(), pa.bool_()]


@pytest.mark.parametrize("t", RUN_TYPES, ids=str)
def test_slices_of_one_array_make_one_run_and_the_rows_are_kept(t):
    rng = np.random.default_rng(7)
    whole = pa.array([None if rng.random() < 0.2 else _value(t, i) for i in range(1_000)], type=t)
    other = pa.array([_value(t, i) for i in range(40)], type=t)
    cases = {
        # a reader's row groups: each in slices, one after the other
        "slices": ([whole[:300], whole[300:300], whole[300:700], whole[700:]], 1),
        "another array between": ([whole[:500], other, whole[500:]], 3),
        "a gap": ([whole[:100], whole[200:]], 2),
        "out of order": ([whole[500:], whole[:500]], 2),
        "the same rows twice": ([whole[:100], whole[:100]], 2),
    }
    for name, (chunks, n_runs) in cases.items():
        column = pa.chunked_array(chunks, type=t)
        got = arrow_numpy.runs(column)
        assert len(got) == n_runs, name
        assert pa.chunked_array(got, type=t).equals(column), name


def test_slices_whose_buffers_were_cut_stay_apart():
    """A chunk may hold its buffers cut to its own rows (at the same addresses as the rest of
    the array's): joined, the run would read past them."""
    whole = pa.array([f"s{i}" for i in range(20)])
    _, offsets, data = whole.buffers()
    cut = pa.Array.from_buffers(pa.string(), 10, [None, offsets.slice(0, 11 * 4), data])
    rest = pa.Array.from_buffers(pa.string(), 10, [None, offsets, data], offset=10)
    column = pa.chunked_array([cut, rest])
    got = arrow_numpy.runs(column)
    assert len(got) == 2
    for run in got:
        run.validate(full=True)
    assert pa.chunked_array(got).equals(column)


def _value(t: pa.DataType, i: int):
    if pa.types.is_integer(t):
        return i
    if pa.types.is_boolean(t):
        return i % 3 == 0
    text = f"v{i % 37}" * (1 + i % 4)  # some longer than a view's 12 inline bytes
    return text.encode() if pa.types.is_binary(t) or pa.types.is_large_binary(t) else text


def test_slices_of_nested_or_dictionary_arrays_stay_chunks():
    for whole in (
        pa.array([[1], [2, 3], None, [4]]),
        pa.array(["a", "b", "a", None]).dictionary_encode(),
    ):
        column = pa.chunked_array([whole[:2], whole[2:]])
        got = arrow_numpy.runs(column)
        assert len(got) == 2 and pa.chunked_array(got).equals(column)


def test_many_small_chunks_are_copied_together_and_large_ones_read_where_they_lie():
    """``coarse_runs``: 3,000 chunks of 7 rows (a frame concatenated from pieces) become one
    array, its values and nulls kept; chunks of long values, chunks of the coarse size, and
    dictionaries stay as ``runs`` gives them."""
    rng = np.random.default_rng(3)
    pieces = [
        pa.array([f"s{v}" for v in rng.integers(0, 50, 7)], mask=rng.random(7) < 0.2)
        for _ in range(3000)
    ]
    column = pa.chunked_array(pieces)
    coarse = arrow_numpy.coarse_runs(column)
    assert len(coarse) == 1
    assert coarse[0].equals(column.combine_chunks())

    long_text = pa.chunked_array([pa.array(["x" * 10_000] * 3) for _ in range(10)])
    assert len(arrow_numpy.coarse_runs(long_text)) == 10  # a copy of long text gains nothing

    big = pa.chunked_array([pa.array(np.arange(arrow_numpy.COARSE_RUN_ROWS))] * 3)
    assert [len(r) for r in arrow_numpy.coarse_runs(big)] == [arrow_numpy.COARSE_RUN_ROWS] * 3

    codes = pa.chunked_array([pa.array(["a", "b"]).dictionary_encode()] * 50)
    assert len(arrow_numpy.coarse_runs(codes)) == 50

    views = pa.chunked_array([pa.array(["a", "b"], pa.string_view())] * 50)
    assert len(arrow_numpy.coarse_runs(views)) == 50  # read where they lie (kernels/views.py)

    whole = pa.array([f"s{v}" for v in range(6000)])  # small slices of one array: one view
    sliced = arrow_numpy.coarse_runs(
        pa.chunked_array([whole[i : i + 7] for i in range(0, 6000, 7)])
    )
    assert len(sliced) == 1 and sliced[0].buffers()[2].address == whole.buffers()[2].address


def test_a_join_by_text_of_many_small_chunks_equals_the_join_on_one_chunk():
    """The by column's lookups run on the copied pieces: the same map as on combined
    columns, nulls and values the right side lacks included."""
    import asofgpu as ag

    n, size = 60_000, 150

    def side(seed):
        local = np.random.default_rng(seed)
        keys = np.sort(local.integers(0, 10**6, n))
        values, nulls = local.integers(0, 300, n), local.random(n) < 0.01
        pieces = [  # arrays of their own, as pd.concat of pieces gives them: copied together
            pa.array([f"g{v}" for v in values[i : i + size]], mask=nulls[i : i + size])
            for i in range(0, n, size)
        ]
        return keys, pa.chunked_array(pieces)

    left_keys, left_by = side(1)
    right_keys, right_by = side(2)
    got = ag.asof_join(left_keys, right_keys, left_by, right_by, device="cpu")
    want = ag.asof_join(
        left_keys, right_keys, left_by.combine_chunks(), right_by.combine_chunks(), device="cpu"
    )
    np.testing.assert_array_equal(got, want)


def test_without_views_reads_schemas_it_cannot_keep_by_hash():
    """``without_views`` keeps its answer by the batch's types (a schema with metadata cannot
    be hashed before pyarrow 20: every pandas-written file's batch raised TypeError); a type
    that cannot be hashed at all (a Python extension type without ``__hash__``) is still
    answered, uncached."""
    import pyarrow as pa

    from asofgpu import _arrow_numpy

    unhashable = unhashable_extension_type(pa.string_view(), "asofgpu.test.unhashable")
    table = pa.table({"a": [1]}).replace_schema_metadata({"pandas": "{}"})
    assert _arrow_numpy.without_views(table) is table
    views = pa.table({"s": pa.array(["x"], pa.string_view())}).replace_schema_metadata({"k": "v"})
    assert _arrow_numpy.without_views(views).schema.field("s").type == pa.large_string()
    odd = pa.table(
        {"u": pa.ExtensionArray.from_storage(unhashable, pa.array(["y"]).cast(pa.string_view()))}
    )
    assert _arrow_numpy.without_views(odd) is odd  # (an extension type is kept as it is)


@pytest.mark.parametrize("ordered", [False, True])
@pytest.mark.parametrize("index", [pa.int8(), pa.uint32()], ids=str)
def test_used_dictionary_keeps_the_type_and_the_values(ordered, index):
    """A piece cut to the values its rows use is of its column's type (a polars Enum is an
    ordered dictionary; a table of pieces of two types is refused), and reads the same."""
    kind = pa.dictionary(index, pa.string(), ordered=ordered)
    coded = pa.DictionaryArray.from_arrays(
        pa.array([3, None, 1, 3], index), pa.array(["a", "b", "c", "d"]), ordered=ordered
    )
    kept = arrow_numpy.used_dictionary(coded.slice(1))
    assert kept.type == kind
    assert kept.dictionary.to_pylist() == ["b", "d"]
    assert kept.to_pylist() == [None, "b", "d"]


def test_used_dictionary_of_views_is_kept_whole():
    """pyarrow has no filter or take of views: a dictionary of them stays as it is."""
    coded = pa.DictionaryArray.from_arrays(pa.array([1]), pa.array(["a", "b"], pa.string_view()))
    assert arrow_numpy.used_dictionary(coded) is coded
