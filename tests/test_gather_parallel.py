"""gather() of large maps: fixed-width columns are taken on all cores (kernels/take.py; four
columns of one width at a time, then two, then one alone; their validity beside them), and so
are text and binary columns (views too); everything else by Arrow's take; all must give
Arrow's answer."""

from __future__ import annotations


import numpy as np
import pyarrow as pa
import pytest

import asofgpu as ag
from asofgpu import _arrow_numpy
from asofgpu import _gather as gather_module
from asofgpu._backend import walks

N = 100_000  # above gather's parallel threshold


def _table(rng):
    ints = rng.integers(-(2**40), 2**40, N)
    return pa.table(
        {
            "f64": rng.normal(size=N),
            "f32": pa.array(rng.normal(size=N).astype(np.float32)),
            "i32": pa.array(ints.astype(np.int32)),
            "i8": pa.array(ints.astype(np.int8)),
            "u16": pa.array(ints.astype(np.uint16)),
            "i16": pa.array(ints.astype(np.int16)),
            "u64": pa.array(ints.astype(np.uint64)),
            "ts": pa.array(ints, pa.timestamp("ns", tz="UTC")),
            "dur": pa.array(ints, pa.duration("us")),
            "chunked": pa.chunked_array([ints[: N // 3], ints[N // 3 :]]),
            "with_nulls": pa.array(ints, mask=rng.random(N) < 0.1),
            "chunked_nulls": pa.chunked_array(
                [  # sliced, all null, without nulls
                    pa.array(rng.normal(size=N // 2 + 3), mask=rng.random(N // 2 + 3) < 0.2).slice(
                        3
                    ),
                    pa.nulls(N // 4, pa.float64()),
                    pa.array(rng.normal(size=N - N // 2 - N // 4)),
                ]
            ),
            "text": pa.array(ints.astype(str)),
            "large_text": pa.array(ints.astype(str)).cast(pa.large_string()),
            "bytes": pa.array([b"\x00" * (i % 5) + b"x" for i in range(N)], pa.binary()),
            "large_bytes": pa.array([b"y" * (i % 3) for i in range(N)], pa.large_binary()),
            "views": pa.chunked_array(
                [  # polars' text: inline (up to 12 bytes) and out-of-line views, sliced
                    pa.array(
                        [f"{i}" * (i % 4) for i in range(N // 2 + 5)],
                        pa.string_view(),
                        mask=rng.random(N // 2 + 5) < 0.1,
                    ).slice(5),
                    pa.array([f"view {i}" for i in range(N - N // 2)], pa.string_view()),
                ]
            ),
            "binary_views": pa.array([b"z" * (i % 17) for i in range(N)], pa.binary_view()),
            "text_nulls": pa.chunked_array(
                [  # sliced, with nulls, all null, empty strings
                    pa.array(
                        [f"r{i}" for i in range(N // 2 + 3)], mask=rng.random(N // 2 + 3) < 0.2
                    ).slice(3),
                    pa.nulls(N // 4, pa.string()),
                    pa.array([""] * (N - N // 2 - N // 4)),
                ]
            ),
            "date": pa.array(ints % 10_000, pa.int32()).cast(pa.date32()),
            "date64": pa.array((ints % 10_000) * 86_400_000, pa.date64()),
            "time32": pa.array(ints % 86_400, pa.int32()).cast(pa.time32("s")),
            "time64": pa.array((ints % 86_400) * 10**9, pa.time64("ns"), mask=rng.random(N) < 0.1),
            "bool": pa.array(ints % 3 == 0, mask=rng.random(N) < 0.1),  # Arrow's take
        }
    )


def _assert_columns_equal(got: pa.Table, expected: pa.Table) -> None:
    """Each column of ``got`` equals ``expected``'s, whatever their chunks."""
    for name in expected.column_names:
        assert got.column(name).combine_chunks().equals(expected.column(name).combine_chunks()), (
            name
        )


def _arrow_take(table: pa.Table, indices: pa.Array) -> pa.Table:
    """Arrow's take, view types through their large forms (Arrow has no take for views)."""
    large = {pa.string_view(): pa.large_string(), pa.binary_view(): pa.large_binary()}
    wide = pa.schema([f.with_type(large.get(f.type, f.type)) for f in table.schema])
    return table.cast(wide).take(indices).cast(table.schema)


@pytest.mark.parametrize("map_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("misses", [0.0, 0.3])
def test_large_gather_equals_arrow_take(map_dtype, misses):
    rng = np.random.default_rng(3)
    table = _table(rng)
    gmap = rng.integers(0, N, N).astype(map_dtype)
    missing = rng.random(N) < misses
    gmap[missing] = ag.NO_MATCH if map_dtype == np.int32 else np.iinfo(np.int64).min
    got = ag.gather(table, gmap)
    expected = _arrow_take(table, pa.array(gmap.astype(np.int64), mask=missing))
    assert got.schema == table.schema
    _assert_columns_equal(got, expected)
    assert got.column("f64").null_count == int(missing.sum())


@pytest.mark.parametrize("n_columns", range(1, 8))
def test_large_gather_of_each_count_of_one_width(n_columns):
    """Every split into fours, a pair and one: each column lands in its own place."""
    rng = np.random.default_rng(n_columns)
    table = pa.table({f"c{k}": rng.normal(size=N) + 10 * k for k in range(n_columns)})
    gmap = rng.integers(0, N, N).astype(np.int32)
    gmap[::7] = ag.NO_MATCH
    got = ag.gather(table, gmap)
    expected = table.take(pa.array(gmap.astype(np.int64), mask=gmap == ag.NO_MATCH))
    assert got.equals(expected)


def test_large_gather_names_the_first_bad_entry():
    table = pa.table({"x": np.arange(N, dtype=np.float64)})
    gmap = np.zeros(N, dtype=np.int32)
    gmap[[70_000, 80_000]] = [N, -5]
    with pytest.raises(
        IndexError,
        match=r"gmap\[70000\] = 100000 is not a row of right_table "
        r"\(100000 rows\) nor NO_MATCH",
    ):
        ag.gather(table, gmap)


def _chunked(values: np.ndarray, cuts: list[int], arrow_type=None) -> pa.ChunkedArray:
    """Chunks in buffers of their own, each followed by a value found nowhere else: a read
    past a chunk's end gives a wrong answer rather than the next chunk's first value."""
    pieces = [np.append(p, np.array([99], p.dtype))[:-1] for p in np.split(values, cuts)]
    return pa.chunked_array([pa.array(p, arrow_type) for p in pieces], arrow_type)


@pytest.mark.parametrize("map_dtype", [np.int32, np.int64])
def test_chunked_columns_are_gathered_where_they_lie(map_dtype):
    """Columns in chunks (as parquet readers give them) are taken chunk-wise in place: each
    width, chunk layouts that differ between columns, empty and sliced chunks, chunks that
    lie end to end."""
    rng = np.random.default_rng(11)
    ints = rng.integers(-(2**40), 2**40, N)
    sliced = pa.array(np.concatenate([[7, 7], ints, [7]])).slice(2, N)  # offset 2
    row_group_a = pa.array(rng.normal(size=60_000))
    row_group_b = _chunked(rng.normal(size=N - 60_000), []).chunk(0)
    table = pa.table(
        {
            "a": _chunked(rng.normal(size=N), [10, 10, 50_000]),  # an empty chunk
            "b": _chunked(rng.normal(size=N), [10, 10, 50_000]),
            "c": _chunked(rng.normal(size=N), [10, 10, 50_000]),
            "d": _chunked(rng.normal(size=N), [10, 10, 50_000]),
            "e": _chunked(rng.normal(size=N), [10, 10, 50_000]),  # a fifth of that layout
            "i32": _chunked(ints.astype(np.int32), [1, 99_998]),  # one-row chunks at both ends
            "ts": _chunked(ints, [33_333, 66_666], pa.timestamp("ns")),
            "sliced": pa.chunked_array([sliced.slice(0, 40_000), sliced.slice(40_000)]),
            # a reader's row groups: slices end to end within each of two buffers, read as runs
            "runs": pa.chunked_array(
                [
                    *(row_group_a.slice(k, 10_000) for k in range(0, 60_000, 10_000)),
                    row_group_b.slice(0, 1),
                    row_group_b.slice(1),
                ]
            ),
            "many": _chunked(ints.astype(np.uint16), list(range(1_000, N, 1_000))),
        }
    )
    gmap = rng.integers(0, N, N).astype(map_dtype)
    gmap[[0, 1, 2]] = [0, N - 1, 10]  # the first and last rows, the first after empty
    missing = rng.random(N) < 0.2
    gmap[missing] = ag.NO_MATCH if map_dtype == np.int32 else np.iinfo(np.int64).min
    got = ag.gather(table, gmap)
    expected = table.take(pa.array(gmap.astype(np.int64), mask=missing))
    _assert_columns_equal(got, expected)


def test_a_small_map_of_a_table_in_many_chunks_is_gathered_where_they_lie():
    """A map below the parallel threshold, from columns in 100 chunks (a RIGHT of 100 files),
    which Arrow's take would take a chunk at a time: the fixed-width columns without nulls
    are gathered in place (two chunks, or one, as well); a column with nulls, whose validity
    would be read whole, and the text column by Arrow's take."""
    rng = np.random.default_rng(12)
    rows, cuts = 400_000, list(range(4_000, 400_000, 4_000))
    ints = rng.integers(-(2**40), 2**40, rows)
    table = pa.table(
        {
            "f64": _chunked(rng.normal(size=rows), cuts),
            "i64_nulls": pa.chunked_array(
                pa.array(part, mask=rng.random(len(part)) < 0.1) for part in np.split(ints, cuts)
            ),
            "ts": _chunked(ints, cuts, pa.timestamp("us")),
            "text": pa.chunked_array(pa.array(part.astype(str)) for part in np.split(ints, cuts)),
            "two_chunks": _chunked(ints.astype(np.int32), [rows // 2]),
        }
    )
    entries = 20_000  # at most one row in 16, above the rows run as plain Python
    assert entries < walks.THRESHOLDS.parallel_gather_rows
    gmap = rng.integers(0, rows, entries).astype(np.int32)
    gmap[[0, 1]] = [0, rows - 1]
    missing = rng.random(entries) < 0.2
    gmap[missing] = ag.NO_MATCH
    with walks.recorded() as decisions:
        got = ag.gather(table, gmap)
    in_place = [kept for name, kept in decisions if name == "gathers_in_place"]
    assert in_place == [True, False, True, True]  # the fixed-width columns
    expected = table.take(pa.array(gmap.astype(np.int64), mask=missing))
    _assert_columns_equal(got, expected)


@pytest.mark.parametrize("small_first", [True, False])
def test_one_table_gathered_by_small_and_large_maps_in_either_order(small_first):
    """A small map takes only the columns without nulls in place, a large one every
    fixed-width column: the layout kept for the table is kept for each choice of columns,
    not one for the table (a column then read another's values, or was not found)."""
    rng = np.random.default_rng(13)
    rows, cuts = 400_000, list(range(50_000, 400_000, 50_000))
    table = pa.table(
        {
            "whole": pa.array(rng.normal(size=rows), mask=rng.random(rows) < 0.1),
            "chunked": _chunked(rng.normal(size=rows), cuts),
            "ints": _chunked(rng.integers(0, 1 << 40, rows), cuts),
        }
    )
    small = rng.integers(0, rows, 20_000).astype(np.int32)
    large = rng.integers(0, rows, 100_000).astype(np.int32)
    assert len(small) < walks.THRESHOLDS.parallel_gather_rows <= len(large)
    for gmap in (small, large) if small_first else (large, small):
        got = ag.gather(table, gmap)
        expected = table.take(pa.array(gmap))
        _assert_columns_equal(got, expected)


@pytest.mark.parametrize(
    ("entries", "launches", "kept"),
    [
        (20_000, {}, [True, False, True, True, True, True]),  # from parallel_min_rows, compiled
        (
            1,
            {"parallel_min_rows": 0, "interpret_max_rows": 0},
            [True, False, True, True] + [True] * 2,
        ),
        (
            64,
            {"parallel_min_rows": 0, "interpret_max_rows": 0},
            [True, False, True, True] + [True] * 2,
        ),
        (10_000, {"interpret_max_rows": 0}, [False] * 6),  # the pool would wake for it
        # a process whose small launches run as plain Python: a small gather compiles nothing
        (20_000, {"interpret_max_rows": 1 << 20, "interpret_seconds": 1e9}, [False] * 6),
    ],
)
def test_a_small_map_takes_fixed_width_columns_without_nulls_by_the_kernels(
    entries, launches, kept
):
    """Below the parallel threshold the kernels still take one-chunk fixed-width columns
    without nulls, dates and times among them (Arrow's take of an as-of map, NO_MATCH entries
    and all, costs 2 to 3 times theirs); with nulls, and text and booleans, by Arrow's take."""
    rng = np.random.default_rng(14)
    rows = 50_000
    table = pa.table(
        {
            "f64": rng.normal(size=rows),
            "i64_nulls": pa.array(rng.integers(0, 1 << 40, rows), mask=rng.random(rows) < 0.1),
            "ts": pa.array(rng.integers(0, 1 << 60, rows), pa.timestamp("ns")),
            "text": pa.array(rng.integers(0, 1_000, rows).astype(str)),
            "i8": pa.array(rng.integers(-100, 100, rows).astype(np.int8)),
            "bool": pa.array(rng.random(rows) < 0.5),
            "date": pa.array(rng.integers(0, 30_000, rows).astype(np.int32), pa.date32()),
            "time": pa.array(rng.integers(0, 86_400 * 10**6, rows), pa.time64("us")),
        }
    )
    gmap = rng.integers(0, rows, entries).astype(np.int32)
    missing = rng.random(entries) < 0.2
    gmap[missing] = ag.NO_MATCH
    expected = table.take(pa.array(gmap.astype(np.int64), mask=missing))
    assert entries < walks.THRESHOLDS.parallel_gather_rows
    with walks.overridden(**launches), walks.recorded() as decisions:
        got = ag.gather(table, gmap)
    assert [k for name, k in decisions if name == "gathers_in_place"] == kept
    _assert_columns_equal(got, expected)


@pytest.mark.parametrize("n_columns", range(1, 6))
def test_chunked_columns_of_each_count_of_one_layout(n_columns):
    """Each count of columns sharing a chunk layout and a width, one to four a pass (each
    count its own compiled kernel), and a fifth left for a second pass."""
    rng = np.random.default_rng(20 + n_columns)
    cuts = [7, 30_000, 30_001, 80_000]
    table = pa.table(
        {f"c{k}": _chunked(rng.normal(size=N) + 10 * k, cuts) for k in range(n_columns)}
    )
    gmap = rng.integers(0, N, N)
    missing = rng.random(N) < 0.1
    gmap[missing] = np.iinfo(np.int64).min
    assert ag.gather(table, gmap).equals(table.take(pa.array(gmap, mask=missing)))


def test_a_tables_layout_is_kept_while_it_lives():
    """A payload table gathered from again and again has its chunks' addresses found once:
    kept while the table lives (the same result each time, whatever the map), dropped when it
    goes, so that a new table never finds another's."""
    rng = np.random.default_rng(30)
    table = pa.table(
        {
            "x": _chunked(rng.normal(size=N), [5, 60_000]),
            "whole": rng.integers(0, 9, N),
            "i": _chunked(rng.integers(-9, 9, N).astype(np.int32), [3]),
        }
    )
    key = (id(table), "layout", 0, 1, 2)  # the table and the columns taken: every one
    for seed in range(3):
        gmap = np.random.default_rng(seed).integers(0, N, N)
        got = ag.gather(table, gmap)
        assert got.equals(table.take(pa.array(gmap)))
        assert key in gather_module._FOUND
    layout = gather_module._FOUND[key][1]
    assert ag.gather(table, gmap).equals(got) and gather_module._FOUND[key][1] is layout
    del table, got
    assert key not in gather_module._FOUND


def test_a_small_gathers_chunk_starts_are_found_once_a_table(monkeypatch):
    """Small maps from a payload of many chunks (enrich's small LEFT chunks against RIGHT's
    row groups of a few rows) take from the chunks they read, their starts found once for
    the table: found at every gather, 7 rows of 1,200 chunks took 1.8 ms, and a spilled
    enrich of 12,000 rows in chunks of 7 spent 3 of its 5 s there. Columns taken after a
    cast or a decoding (views, run-end encoded, a dictionary holding a null) lose their
    empty chunks, so they find their own."""
    found = []
    real = _arrow_numpy.chunk_starts
    monkeypatch.setattr(_arrow_numpy, "chunk_starts", lambda c: found.append(1) or real(c))
    rng = np.random.default_rng(31)
    sizes = rng.integers(0, 12, 1_200)  # empty chunks among them
    sizes[:3] = (2, 0, 2)
    n = int(sizes.sum())
    cuts = np.cumsum(sizes)[:-1]
    pieces = np.split(np.arange(n), cuts)

    def column(arrow_type, encode=None):
        chunks = [pa.array(p.astype(str), pa.string()).cast(arrow_type) for p in pieces]
        return pa.chunked_array([encode(c) if encode else c for c in chunks], arrow_type)

    null_in_dictionary = pa.dictionary(pa.int32(), pa.string())
    table = pa.table(
        {
            "x": pa.chunked_array(np.split(rng.normal(size=n), cuts)),
            "s": column(pa.string()),
            "views": column(pa.string_view()),
            "runs": pa.chunked_array(
                [pa.compute.run_end_encode(pa.array(p)) for p in pieces],
                pa.run_end_encoded(pa.int32(), pa.int64()),
            ),
            "codes": pa.chunked_array(
                [
                    pa.DictionaryArray.from_arrays(
                        pa.array(np.zeros(len(p), np.int32)), pa.array([str(k), None])
                    )
                    for k, p in enumerate(pieces)
                ],
                null_in_dictionary,
            ),
        }
    )
    want_of = pa.table(  # what each row holds, in plain types
        {
            "x": table["x"],
            "s": table["s"],
            "views": table["s"],
            "runs": pa.chunked_array(pieces, pa.int64()),
            "codes": pa.chunked_array(
                [[str(k)] * len(p) for k, p in enumerate(pieces)], pa.string()
            ),
        }
    )
    for seed in range(20):
        gmap = np.random.default_rng(seed).integers(0, n, 7).astype(np.int32)
        gmap[seed % 7] = ag.NO_MATCH
        want = want_of.take(pa.array(gmap, mask=gmap == ag.NO_MATCH))
        assert ag.gather(table, gmap).to_pydict() == want.to_pydict(), seed
    # once each for the table; the three converted columns find theirs at each gather
    assert len(found) == table.num_columns + 3 * 20
    del table
    assert not [key for key in gather_module._FOUND if "starts" in key]


@pytest.mark.parametrize("blocks", [4, 1 << 16])
@pytest.mark.parametrize("order", ["shuffled", "ascending"])
def test_chunked_gather_steps_past_every_chunk_a_block_holds(thresholds, blocks, order):
    """Each row finds its chunk from a table of blocks: with blocks longer than the shortest
    chunk (four blocks over 100K rows, one-row chunks among long ones) a row steps past
    many chunk ends, and still lands in its own. An ascending map (time-ordered trades)
    keeps the last row's chunk while it holds the row, and moves on at each chunk end."""
    thresholds(chunk_blocks=blocks)
    rng = np.random.default_rng(5)
    cuts = sorted({*range(1, 40), *range(30_000, 30_050, 3), 70_000, N - 1})
    table = pa.table({k: _chunked(rng.normal(size=N), cuts) for k in "abcde"})
    gmap = rng.integers(0, N, N).astype(np.int64)
    if order == "ascending":
        gmap.sort()
    gmap[:4] = [0, 1, 39, N - 1]
    got = ag.gather(table, gmap)
    assert got.equals(table.take(pa.array(gmap)))


def test_take_text_declines_rows_of_more_bytes_than_it_is_given():
    """take_text declines (None) when the taken rows' bytes pass ``most``: two rows of 2**30
    bytes each, taken twice, overflow int32 offsets (gather then takes the column in its
    large form, ``_gather._in_chunks_of``); the bytes are never read."""
    from asofgpu._backend import take_text

    offsets = np.array([0, 2**30, 2**31 - 1], dtype=np.int32)
    gmap = np.array([0, 1, 0, 1], dtype=np.int32)
    valid = np.ones(4, dtype=bool)
    assert take_text(offsets, np.zeros(0, np.uint8), gmap, valid, 2**31 - 1) is None
    wide = take_text(offsets.astype(np.int64), np.zeros(0, np.uint8), gmap, ~valid, 2**63 - 1)
    assert np.frombuffer(wide[0], np.int64).tolist() == [0, 0, 0, 0, 0]


def test_text_of_an_empty_table_by_a_map_of_misses():
    """A large map of NO_MATCH over a table without rows (the splice join of an empty side):
    text columns of every kind come back all null."""
    gmap = np.full(N, ag.NO_MATCH, dtype=np.int32)
    for kind in (pa.string(), pa.large_binary(), pa.string_view()):
        for column in (pa.chunked_array([], kind), pa.chunked_array([pa.nulls(0, kind)])):
            got = ag.gather(pa.table({"s": column}), gmap)
            assert got.num_rows == N and got.column("s").null_count == N
            assert got.schema.field("s").type == kind


@pytest.mark.parametrize("kind", [pa.string_view(), pa.binary_view()])
def test_a_small_gather_of_inline_views_has_no_absent_data_buffer(kind):
    """A small map takes view text through its large form and casts back; pyarrow's cast (18
    to 21 at least) then gives text that fits in its views an absent (None) data buffer, and
    polars 1.44 crashes importing such an array. The gather's arrays hold none."""
    column = pa.chunked_array([pa.array(["r3", None, "a", ""], pa.large_string()).cast(kind)])
    got = ag.gather(pa.table({"s": column}), np.array([3, 0, ag.NO_MATCH, 1], dtype=np.int32))
    for chunk in got.column("s").chunks:
        assert all(b is not None for b in chunk.buffers()[2:])
    expected = [b"", b"r3", None, None] if kind == pa.binary_view() else ["", "r3", None, None]
    assert got.column("s").to_pylist() == expected


def test_a_large_gather_of_cast_inline_views_has_no_absent_data_buffer():
    """The same for a map taken on all cores (``_take_views``), from a column that pyarrow's
    cast left with an absent data buffer (pyarrow 18 to 21: its views point at nothing)."""
    column = pa.array([f"s{i % 100}" for i in range(N)], pa.large_string()).cast(pa.string_view())
    gmap = np.arange(N, dtype=np.int32)[::-1].copy()
    gmap[::5] = ag.NO_MATCH
    got = ag.gather(pa.table({"s": column}), gmap)
    for chunk in got.column("s").chunks:
        assert all(b is not None for b in chunk.buffers()[2:])
    expected = [None if k % 5 == 0 else f"s{(N - 1 - k) % 100}" for k in range(N)]
    assert got.column("s").to_pylist() == expected


@pytest.mark.parametrize("n", [5, N])
def test_views_inside_lists_and_structs_are_gathered(n):
    """polars exports the text of its struct and list columns as views inside them, for
    which Arrow has no take kernel: the top-level views were cast and taken, nested ones
    raised ArrowNotImplementedError at every map size."""
    words = [f"w{i % 7}" for i in range(n)]
    table = pa.table(
        {
            "st": pa.array(
                [{"a": i, "b": w} for i, w in enumerate(words)],
                pa.struct([("a", pa.int64()), ("b", pa.string_view())]),
            ),
            "l": pa.array([[w] * (i % 3) for i, w in enumerate(words)], pa.list_(pa.string_view())),
            "m": pa.array(
                [[(w, b"v")] for w in words], pa.map_(pa.string_view(), pa.binary_view())
            ),
        }
    )
    gmap = np.arange(n, dtype=np.int32)[::-1].copy()
    gmap[::4] = ag.NO_MATCH
    got = ag.gather(table, gmap)
    assert got.schema == table.schema
    # Arrow's take of the large types (the views' values), a null row where nothing matched.
    plain = table.cast(
        pa.schema([f.with_type(ag._arrow_numpy.viewless(f.type)) for f in table.schema])
    )
    want = plain.take(pa.array(np.where(gmap >= 0, gmap, 0), mask=gmap < 0))
    assert got.to_pylist() == want.to_pylist()


def test_run_end_encoded_columns_widen_their_run_ends_to_hold_the_result():
    """int16 run ends count to 32,767 rows: a gather of more rows from such a column (a
    join_asof of a longer left side) raised Arrow's error. The result's run ends widen;
    narrower results keep the column's type."""
    right = pa.table(
        {
            "t": [0, 5],
            "p": pa.compute.run_end_encode(pa.array([1.0, None]), run_end_type=pa.int16()),
        }
    )
    gmap = np.resize(np.array([0, 1, ag.NO_MATCH], np.int32), 40_000)
    got = ag.gather(right, gmap)
    assert got["p"].type == pa.run_end_encoded(pa.int32(), pa.float64())
    assert got["p"].to_pylist() == [1.0, None, None] * 13_333 + [1.0]
    assert ag.gather(right, gmap[:3])["p"].type == right["p"].type
    joined = ag.join_asof(pa.table({"t": np.arange(40_000)}), right, on="t", device="cpu")
    assert joined["p"].to_pylist() == [1.0] * 5 + [None] * 39_995


@pytest.mark.parametrize("kind", [pa.string(), pa.binary()])
@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("overflowing", ["chunks", "rows taken"])
def test_text_past_32_bit_offsets_comes_back_in_chunks_that_fit(
    monkeypatch, thresholds, kind, parallel, overflowing
):
    """A string or binary column whose chunks together hold more bytes than 32-bit offsets
    reach (two 1.1 GB chunks, as a reader gives a large column), or whose rows taken do
    (100,000 picks of 30,000-byte values), raised Arrow's offset overflow: it comes back of
    its own type in chunks that fit. Here the limit is made small; a small map's take is
    Arrow's, whose overflow error at that limit is raised for it."""
    from asofgpu import _gather

    monkeypatch.setattr(_gather, "TEXT_BYTES_MOST", 40)
    thresholds(parallel_gather_rows=0 if parallel else 10**9)
    if not parallel:
        real_take = _arrow_numpy.take

        def take(column, rows, valid=None, starts=None):
            if pa.types.is_string(column.type) or pa.types.is_binary(column.type):
                kept = [True] * len(rows) if valid is None else valid
                picked = [column[int(r)].as_py() for r, ok in zip(rows, kept) if ok]
                if (
                    sum(len(c.as_py() or "") for c in column) > 40
                    or sum(len(v) for v in picked if v is not None) > 40
                ):
                    raise pa.ArrowInvalid("offset overflow while concatenating arrays")
            return real_take(column, rows, valid, starts)

        monkeypatch.setattr(_arrow_numpy, "take", take)
    values = ["a" * 15, "bb", None, "c" * 20, "", "d" * 9]
    if overflowing == "chunks":  # 46 bytes in three chunks; the rows taken, 11
        column = pa.chunked_array([pa.array(values[:2], kind), [], pa.array(values[2:], kind)])
        gmap = np.array([1, ag.NO_MATCH, 4, 2, 5], np.int32)
    else:  # one chunk of 37 bytes; the rows taken, 87
        column = pa.chunked_array([pa.array(values[:4], kind)])
        gmap = np.array([0, 3, ag.NO_MATCH, 2, 0, 3, 1, 0], np.int32)
    taken = ag.gather(pa.table({"s": column}), gmap)["s"]
    plain = [None if k < 0 else column[int(k)].as_py() for k in gmap]
    assert taken.type == kind and taken.to_pylist() == plain
    for chunk in taken.chunks:
        assert sum(len(v) for v in chunk.to_pylist() if v is not None) <= 40
        assert np.frombuffer(chunk.buffers()[1], np.int32)[chunk.offset] == 0
    assert taken.null_count == plain.count(None)
