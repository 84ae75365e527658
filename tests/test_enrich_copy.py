"""LEFT's columns copied into OUT as they are (``asofgpu/enrich/_copy.py``): what the copy
keeps and drops, when a file is copied and when its columns are encoded again, and that
pyarrow, polars and DuckDB read the result as they read LEFT. The oracle is
``asofgpu.join_asof`` on the whole files."""

from __future__ import annotations

import decimal
import importlib.util
import inspect

import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import asofgpu as ag
from asofgpu._backend import walks
from asofgpu.enrich import _copy
from asofgpu.enrich import _memory as memory
from asofgpu.enrich import _thrift as thrift
from asofgpu.enrich._output import ParquetStitcher
from enrich_cli import hidden, run

COPIED = "LEFT's     columns copied as they are"
ENCODED = "LEFT's     columns read and written again"


@pytest.fixture
def small_groups(thresholds):
    """Copy row groups of any size: the tests' files are small."""
    thresholds(copy_min_group_rows=1)


def _left(n: int = 600) -> pa.Table:
    """LEFT with the columns a copy must carry: nulls, text, nested, zoned time, decimal."""
    rng = np.random.default_rng(5)
    return pa.table(
        {
            "t": np.arange(n, dtype=np.int64) * 3,
            "g": pa.array(rng.choice(["AAPL", "MSFT", "X"], n)),
            "price": pa.array(rng.normal(100, 1, n), mask=rng.random(n) < 0.1),
            "tags": [[i, i + 1] if i % 4 else None for i in range(n)],
            "where": [{"venue": "XNAS" if i % 2 else "ARCX", "lane": i % 5} for i in range(n)],
            "at": pa.array(np.arange(n) * 10**9, pa.timestamp("ns", tz="America/New_York")),
            "cost": pa.array([decimal.Decimal(i) / 100 for i in range(n)], pa.decimal128(9, 2)),
            "odd": np.arange(n) % 2 == 1,
        }
    )


def _right(n: int = 400) -> pa.Table:
    rng = np.random.default_rng(6)
    return pa.table(
        {
            "t": np.sort(rng.integers(0, 1800, n)),
            "g": pa.array(rng.choice(["AAPL", "MSFT", "Y"], n)),
            "bid": rng.normal(99, 1, n),
            "size": rng.integers(1, 9, n),
        }
    )


def _enrich(tmp_path, capsys, left_path, right_path, *flags, name="o.parquet"):
    out = tmp_path / name
    code, stdout, stderr = run(
        "enrich",
        left_path,
        right_path,
        "-o",
        out,
        "--on",
        "t",
        "--by",
        "g",
        "--device",
        "cpu",
        *flags,
        capsys=capsys,
    )
    assert code == 0, stderr
    assert hidden(tmp_path) == []
    return out, stdout, stderr


def _expected(left_path, right_path) -> pa.Table:
    return ag.join_asof(
        pq.read_table(left_path), pq.read_table(right_path), on="t", by="g", device="cpu"
    )


def _readers_agree(out, expected: pa.Table, tmp_path) -> None:
    """pyarrow reads ``expected``; polars and DuckDB read OUT as they read a file pyarrow
    wrote of it."""
    import polars as pl

    assert pq.read_table(out).equals(expected)
    reference = tmp_path / "reference.parquet"
    pq.write_table(expected, reference)
    assert pl.read_parquet(out).equals(pl.read_parquet(reference))
    if importlib.util.find_spec("duckdb") is None:  # the bench extra (make test has it)
        return
    import duckdb

    query = "SELECT * FROM read_parquet('{}')"
    assert (
        duckdb.sql(query.format(out)).fetchall() == duckdb.sql(query.format(reference)).fetchall()
    )


def _write_polars(table, path):
    import polars as pl

    pl.from_arrow(table).write_parquet(path, row_group_size=150)


def _write_duckdb(table, path):
    duckdb = pytest.importorskip("duckdb")
    trades = table  # noqa: F841 - DuckDB finds it by its name
    duckdb.sql(f"COPY (SELECT * FROM trades) TO '{path}' (FORMAT parquet, ROW_GROUP_SIZE 150)")


WRITERS = {
    "pyarrow": lambda t, p: pq.write_table(t, p, row_group_size=150),
    # page indexes and bloom filters (where pyarrow writes them) are dropped, page checksums
    # and sorting columns kept
    "pyarrow-extras": lambda t, p: pq.write_table(
        t,
        p,
        row_group_size=150,
        write_page_index=True,
        write_page_checksum=True,
        sorting_columns=[pq.SortingColumn(0)],
        **(
            {"bloom_filter_options": {"g": True}}
            if "bloom_filter_options" in inspect.signature(pq.ParquetWriter.__init__).parameters
            else {}
        ),
    ),
    "pyarrow-int96-zstd-v1": lambda t, p: pq.write_table(
        t,
        p,
        row_group_size=150,
        use_deprecated_int96_timestamps=True,
        compression="zstd",
        data_page_version="1.0",
    ),
    "polars": _write_polars,
    "duckdb": _write_duckdb,
}


@pytest.mark.usefixtures("small_groups")
@pytest.mark.parametrize("writer", list(WRITERS))
def test_copied_columns_read_as_lefts_do_in_every_reader(tmp_path, capsys, writer):
    left = _left()
    if writer == "duckdb":  # it writes the zoned time as UTC and the decimal as it likes
        left = left.drop_columns(["at", "cost"])
    left_path, right_path = tmp_path / "l.parquet", tmp_path / "r.parquet"
    WRITERS[writer](left, left_path)
    pq.write_table(_right(), right_path)
    out, stdout, stderr = _enrich(tmp_path, capsys, left_path, right_path)
    assert COPIED in stdout and "its columns copied as they are" in stderr
    _readers_agree(out, _expected(left_path, right_path), tmp_path)

    # LEFT's chunks as they were: codec, encodings, sizes, statistics; no index, no filter
    source, copied = pq.ParquetFile(left_path).metadata, pq.ParquetFile(out).metadata
    assert copied.num_row_groups == source.num_row_groups
    for g in range(source.num_row_groups):
        assert copied.row_group(g).num_rows == source.row_group(g).num_rows
        if writer == "pyarrow-extras":
            assert copied.row_group(g).sorting_columns == (pq.SortingColumn(0),)
        for j in range(source.num_columns):
            a, b = source.row_group(g).column(j), copied.row_group(g).column(j)
            assert (b.compression, b.encodings, b.total_compressed_size, b.num_values) == (
                a.compression,
                a.encodings,
                a.total_compressed_size,
                a.num_values,
            )
            assert b.statistics == a.statistics
            assert not b.has_offset_index and not b.has_column_index
            assert getattr(b, "bloom_filter_offset", None) is None  # pyarrow 18 has no field


def _without_column_orders(path) -> None:
    """Rewrite a file's footer as a writer from before column orders would have."""
    raw = path.read_bytes()
    meta, at = _copy.read_footer(str(path))
    del meta[_copy.FILE_COLUMN_ORDERS]
    footer = thrift.encode_struct(meta)
    path.write_bytes(raw[:at] + footer + len(footer).to_bytes(4, "little") + b"PAR1")


@pytest.mark.usefixtures("small_groups")
def test_a_file_without_column_orders_loses_only_its_min_and_max(tmp_path, capsys):
    """Without column orders a file's min/max are in its writer's order, which OUT, having
    column orders for its attached columns, could not say: they are dropped."""
    left_path, right_path = tmp_path / "l.parquet", tmp_path / "r.parquet"
    pq.write_table(_left(), left_path, row_group_size=200)
    _without_column_orders(left_path)
    pq.write_table(_right(), right_path)
    out, stdout, _ = _enrich(tmp_path, capsys, left_path, right_path)
    assert COPIED in stdout
    _readers_agree(out, _expected(left_path, right_path), tmp_path)
    meta = pq.ParquetFile(out).metadata
    names = [meta.schema.column(j).name for j in range(meta.num_columns)]
    for j, name in enumerate(names):
        stats = meta.row_group(0).column(j).statistics
        if name in ("bid", "size"):  # attached: encoded here, with their min and max
            assert stats.has_min_max
        else:
            assert not stats.has_min_max and stats.null_count is not None


@pytest.mark.usefixtures("small_groups")
@pytest.mark.parametrize(
    ("written", "flags", "copied", "codec"),
    [
        ("snappy", [], True, "SNAPPY"),
        ("zstd", [], True, "SNAPPY"),  # LEFT keeps its zstd; the attached columns: snappy
        ("snappy", ["--compression", "snappy"], True, "SNAPPY"),
        ("zstd", ["--compression", "zstd"], True, "ZSTD"),
        ("snappy", ["--compression", "zstd"], False, "ZSTD"),
        ("zstd", ["--compression", "zstd:5"], False, "ZSTD"),  # a level: LEFT's is unknown
        ("lz4", ["--compression", "lz4"], True, "LZ4"),
    ],
)
def test_compression_decides_what_is_copied(tmp_path, capsys, written, flags, copied, codec):
    left_path, right_path = tmp_path / "l.parquet", tmp_path / "r.parquet"
    pq.write_table(_left(), left_path, row_group_size=200, compression=written)
    pq.write_table(_right(), right_path)
    out, stdout, stderr = _enrich(tmp_path, capsys, left_path, right_path, *flags)
    assert (COPIED if copied else ENCODED) in stdout
    if not copied:
        assert "its columns written again: " in stderr
        assert (
            "--compression asks for level 5" in stderr
            if ":" in flags[-1]
            else "columns not compressed with zstd, as --compression asks" in stderr
        )
    meta = pq.ParquetFile(out).metadata
    codecs = {
        meta.schema.column(j).name: meta.row_group(0).column(j).compression
        for j in range(meta.num_columns)
    }
    assert codecs["bid"] == codecs["size"] == codec
    assert codecs["t"] == (written.upper() if copied else codec)
    assert pq.read_table(out).equals(_expected(left_path, right_path))


def test_row_groups_too_small_or_too_large_are_encoded_again(tmp_path, capsys):
    right_path = tmp_path / "r.parquet"
    pq.write_table(_right(), right_path)
    small, large = tmp_path / "small.parquet", tmp_path / "large.parquet"
    pq.write_table(_left(), small, row_group_size=100)
    pq.write_table(_left(), large)
    out, stdout, stderr = _enrich(tmp_path, capsys, small, right_path, name="o1.parquet")
    assert ENCODED in stdout
    assert re.search(
        r"row groups of 100 rows \([0-9.]+ KiB\) on average, too small to keep", stderr
    )
    assert pq.read_table(out).equals(_expected(small, right_path))
    out, stdout, stderr = _enrich(
        tmp_path, capsys, large, right_path, "--chunk-rows", 500, name="o2.parquet"
    )
    assert ENCODED in stdout
    assert (
        "row groups of up to 600 rows, more than a copied chunk holds (500 rows of its keys "
        "and attached columns: --chunk-rows" in stderr
    )
    assert pq.read_table(out).equals(_expected(large, right_path))


def test_row_groups_as_writers_make_them_are_copied_by_default(tmp_path, capsys):
    n = 2 * walks.THRESHOLDS.copy_min_group_rows + 10
    left = pa.table(
        {"t": np.arange(n, dtype=np.int64), "g": np.arange(n) % 7, "x": np.arange(n) * 0.5}
    )
    right = pa.table(
        {
            "t": np.arange(0, n, 3, dtype=np.int64),
            "g": np.arange(0, n, 3) % 7,
            "v": np.arange(0, n, 3) * 2.0,
        }
    )
    left_path, right_path = tmp_path / "l.parquet", tmp_path / "r.parquet"
    pq.write_table(left, left_path, row_group_size=n // 2)  # 2 x 65,541 rows
    pq.write_table(right, right_path)
    out, stdout, _ = _enrich(tmp_path, capsys, left_path, right_path)
    assert COPIED in stdout and "in 2 chunk(s) of up to 65,541" in stdout
    assert pq.read_table(out).equals(_expected(left_path, right_path))


def test_a_wide_left_is_copied_where_its_keys_fit_the_memory_limit(tmp_path, capsys):
    """The chunks of a copied LEFT hold only its keys: its 65,541-row row groups are copied
    under a limit that holds that many of its keys a chunk but not of its 52 columns (chunks
    of its whole width, too small for the row groups, which were encoded again). The limit
    leaves 512 MiB for data, a quarter of it for the chunks in flight: on 1 or 2 cores 5 or 6
    of them, 63,000 or 52,000 rows of 424 bytes, or 1.3M or 1.1M of 20 (t, g's code, v); on
    64 cores, 68 in flight, still 98,000 of 20."""
    n = 2 * walks.THRESHOLDS.copy_min_group_rows + 10
    rng = np.random.default_rng(7)
    left = pa.table(
        {"t": np.arange(n, dtype=np.int64), "g": np.arange(n) % 5}
        | {f"x{k}": rng.random(n) for k in range(50)}
    )
    right = pa.table({"t": np.arange(0, n, 4, dtype=np.int64), "g": np.arange(0, n, 4) % 5})
    right = right.append_column("v", pa.array(np.arange(right.num_rows) * 0.5))
    left_path, right_path = tmp_path / "l.parquet", tmp_path / "r.parquet"
    pq.write_table(left, left_path, row_group_size=n // 2)
    pq.write_table(right, right_path)
    limit = f"{(memory.BASE_BYTES >> 20) + 512}MiB"
    out, stdout, stderr = _enrich(tmp_path, capsys, left_path, right_path, "--memory-limit", limit)
    assert COPIED in stdout, stderr
    assert f"in 2 chunk(s) of up to {n // 2:,}" in stdout
    assert pq.read_table(out).equals(_expected(left_path, right_path))


@pytest.mark.usefixtures("small_groups")
def test_no_attached_columns_is_left_copied_whole(tmp_path, capsys):
    left_path, right_path = tmp_path / "l.parquet", tmp_path / "r.parquet"
    pq.write_table(_left(), left_path, row_group_size=200)
    pq.write_table(_right().select(["t", "g"]), right_path)
    out, stdout, _ = _enrich(tmp_path, capsys, left_path, right_path)
    assert COPIED in stdout and "attached   (no columns)" in stdout
    assert pq.read_table(out).equals(pq.read_table(left_path))


@pytest.mark.usefixtures("small_groups")
def test_an_empty_left_file(tmp_path, capsys):
    left_path, right_path = tmp_path / "l.parquet", tmp_path / "r.parquet"
    pq.write_table(_left().slice(0, 0), left_path)
    pq.write_table(_right(), right_path)
    out, stdout, _ = _enrich(tmp_path, capsys, left_path, right_path)
    assert COPIED in stdout
    got = pq.read_table(out)
    assert got.num_rows == 0 and got.schema == _expected(left_path, right_path).schema


def test_a_folder_is_copied_file_by_file(tmp_path, capsys, thresholds):
    thresholds(copy_min_group_rows=150)
    folder, right_path = tmp_path / "left", tmp_path / "r.parquet"
    folder.mkdir()
    left = _left()
    pq.write_table(left.slice(0, 300), folder / "a.parquet", row_group_size=150)
    pq.write_table(left.slice(300), folder / "b.parquet", row_group_size=100)
    pq.write_table(_right(), right_path)
    out, stdout, stderr = _enrich(tmp_path, capsys, folder, right_path, name="out")
    assert "columns copied as they are in 1 of 2 files" in stdout
    assert "LEFT a.parquet: 300 rows" in stderr and "LEFT b.parquet: 300 rows" in stderr
    right = pq.read_table(right_path)
    for name in ("a.parquet", "b.parquet"):
        want = ag.join_asof(pq.read_table(folder / name), right, on="t", by="g", device="cpu")
        assert pq.read_table(out / name).equals(want)


def test_a_folder_of_many_files_is_logged_in_a_few_lines(tmp_path, capsys, thresholds):
    """The first ``FILES_LOGGED`` LEFT files get a line each and the rest one line, which
    counts them (a folder of 1,000 files gave 1,000 lines) and names each reason a file is
    written again with its file, files of row groups too small to keep as one reason
    whatever their sizes; OUT holds every file's rows."""
    from asofgpu.enrich._left import FILES_LOGGED

    thresholds(copy_min_group_rows=40)
    folder, right_path = tmp_path / "left", tmp_path / "r.parquet"
    folder.mkdir()
    left, files = _left(), FILES_LOGGED + 4
    small = {11: 20, 12: 1}  # rows a row group: reasons in other words, of one kind
    for i in range(files):  # of the last four, one copied, two in row groups too small to
        part = left.slice(40 * i, 40)  # keep, and one of columns in another order
        if i == 13:
            part = part.select(part.column_names[::-1])
        pq.write_table(part, folder / f"f{i:02}.parquet", row_group_size=small.get(i, 40))
    pq.write_table(_right(), right_path)
    out, stdout, stderr = _enrich(tmp_path, capsys, folder, right_path, name="out")
    said = [line for line in stderr.splitlines() if line.startswith("asofgpu enrich: LEFT")]
    assert len(said) == FILES_LOGGED + 1
    assert said[0].startswith("asofgpu enrich: LEFT f00.parquet: 40 rows")
    assert re.fullmatch(
        r"asofgpu enrich: LEFT's 4 other files \(160 rows\): 1 copied as they are, 3 written "
        r"again: row groups of 20 rows \([0-9.]+ KiB\) on average, too small to keep "
        r"\(2 files, the first f11.parquet\); its columns differ in order, type or "
        r"nullability from the other LEFT files', read as one \(f13.parquet\)",
        said[-1],
    ), said[-1]
    assert f"columns copied as they are in {files - 3} of {files} files" in stdout
    right = pq.read_table(right_path)
    for i in range(files):
        name = f"f{i:02}.parquet"
        given = pq.read_table(folder / name).select(left.column_names)  # OUT's column order
        want = ag.join_asof(given, right, on="t", by="g", device="cpu")
        assert pq.read_table(out / name).equals(want)


def test_required_columns_stay_required_and_are_copied(tmp_path, capsys, thresholds):
    """Spark writes non-null columns as required: OUT declared LEFT's nullable, so no such
    file was copied. Now they stay required and are copied; a file's required column in a
    folder whose other file holds it nullable becomes nullable, that file written again."""
    thresholds(copy_min_group_rows=100)
    folder, right_path = tmp_path / "left", tmp_path / "r.parquet"
    folder.mkdir()
    left = _left()
    required = pa.schema([f.with_nullable(f.name not in ("t", "at", "odd")) for f in left.schema])
    pq.write_table(left.slice(0, 300).cast(required), folder / "a.parquet", row_group_size=150)
    pq.write_table(_right(), right_path)
    out, stdout, _ = _enrich(tmp_path, capsys, folder / "a.parquet", right_path, name="o.parquet")
    assert "LEFT's     columns copied as they are" in stdout
    assert pq.read_schema(out).remove_metadata() == pa.schema(
        list(required) + list(pq.read_schema(out))[len(required) :]
    )
    right = pq.read_table(right_path)
    want = ag.join_asof(pq.read_table(folder / "a.parquet"), right, on="t", by="g", device="cpu")
    assert pq.read_table(out).equals(want, check_metadata=False)
    pq.write_table(left.slice(300), folder / "b.parquet", row_group_size=150)  # nullable
    out, stdout, stderr = _enrich(tmp_path, capsys, folder, right_path, name="out")
    assert "columns copied as they are in 1 of 2 files" in stdout
    assert "a.parquet: 300 rows" in stderr and "differ in order, type or nullability" in stderr
    for name in ("a.parquet", "b.parquet"):
        got = pq.read_table(out / name)
        assert all(f.nullable for f in got.schema)
        want = ag.join_asof(pq.read_table(folder / name), right, on="t", by="g", device="cpu")
        assert got.to_pylist() == want.to_pylist()


@pytest.mark.usefixtures("small_groups")
def test_what_cannot_be_copied_says_why(tmp_path):
    path = tmp_path / "l.parquet"
    pq.write_table(_left(), path, row_group_size=200)
    schema = pq.read_schema(path)
    assert isinstance(_copy.LeftChunks.open(str(path), schema, 1000, None), _copy.LeftChunks)
    assert _copy.LeftChunks.open(str(path), pa.schema(list(schema)[1:]), 1000, None) == (
        "columns other than OUT's first ones"
    )
    required = pa.schema([pa.field("t", pa.int64(), nullable=False)])
    pq.write_table(pa.table({"t": [1, 2]}, schema=required), tmp_path / "r.parquet")
    assert _copy.LeftChunks.open(str(tmp_path / "r.parquet"), schema, 1000, None) == (
        "required (non-null) columns that other LEFT files hold nullable"
    )
    copied = _copy.LeftChunks.open(str(tmp_path / "r.parquet"), required, 1000, None)
    assert isinstance(copied, _copy.LeftChunks)  # required where OUT's is too
    pq.write_table(pa.table({"t": [1, 2]}), tmp_path / "n.parquet")
    assert _copy.LeftChunks.open(str(tmp_path / "n.parquet"), required, 1000, None) == (
        "nullable columns that OUT declares required"
    )
    raw = path.read_bytes()
    (tmp_path / "e.parquet").write_bytes(raw[:-4] + b"PARE")
    assert _copy.LeftChunks.open(str(tmp_path / "e.parquet"), schema, 1000, None) == (
        "a footer this copy cannot read (not a plain parquet footer)"
    )
    meta, at = _copy.read_footer(str(path))
    chunk = meta[_copy.FILE_ROW_GROUPS][1][1][0][_copy.GROUP_COLUMNS][1][1][0]
    chunk[_copy.CHUNK_PATH] = (thrift.BINARY, b"elsewhere.parquet")
    footer = thrift.encode_struct(meta)
    (tmp_path / "x.parquet").write_bytes(
        raw[:at] + footer + len(footer).to_bytes(4, "little") + b"PAR1"
    )
    assert _copy.LeftChunks.open(str(tmp_path / "x.parquet"), schema, 1000, None) == (
        "pages in another file"
    )


def test_row_group_sizes_are_checked_before_the_footer_is_decoded(tmp_path, monkeypatch):
    """A footer of thousands of one-row groups took the copy's Python reader seconds (8 s for
    1,000 groups of 70 columns), only for the file to be refused for their size."""
    path = tmp_path / "l.parquet"
    pq.write_table(_left(), path, row_group_size=1)
    monkeypatch.setattr(_copy, "read_footer", lambda _: pytest.fail("the footer was decoded"))
    schema = pq.read_schema(path)
    said = r"row groups of 1 row \([0-9]+ B\) on average, too small to keep"
    assert re.fullmatch(said, _copy.LeftChunks.open(str(path), schema, 1000, None))
    assert re.fullmatch(
        said, _copy.LeftChunks.open(str(path), schema, 1000, None, pq.read_metadata(path))
    )


def _as_parquet_mr_1_2_8(path) -> None:
    """Rewrite a file as parquet-mr 1.2.8 wrote it: each column's size without its
    dictionary page's header (PARQUET-816), which Arrow reads past by its name."""
    raw = path.read_bytes()
    meta, at = _copy.read_footer(str(path))
    for group in meta[_copy.FILE_ROW_GROUPS][1][1]:
        for chunk in group[_copy.GROUP_COLUMNS][1][1]:
            column = chunk[_copy.CHUNK_META][1]
            if _copy.META_DICTIONARY_PAGE in column:
                start = column[_copy.META_DICTIONARY_PAGE][1]
                _, header_end = thrift.decode_struct(raw, start)
                kind, size = column[_copy.META_COMPRESSED]
                column[_copy.META_COMPRESSED] = (kind, size - (header_end - start))
    meta[_copy.FILE_CREATED_BY] = (thrift.BINARY, b"parquet-mr version 1.2.8 (build 0)")
    footer = thrift.encode_struct(meta)
    path.write_bytes(raw[:at] + footer + len(footer).to_bytes(4, "little") + b"PAR1")


@pytest.mark.usefixtures("small_groups")
def test_pages_readers_read_with_workarounds_are_encoded_again(tmp_path, capsys):
    """Arrow reads the pages of old parquet-mr and parquet-cpp files with workarounds for
    their writers' bugs, chosen by the writer's name in the footer: copied under OUT's
    name (pyarrow's), they were unreadable ("Page was smaller than expected")."""
    left_path, right_path = tmp_path / "l.parquet", tmp_path / "r.parquet"
    table = _left().select(["t", "g", "price"])
    pq.write_table(table, left_path, row_group_size=200)
    _as_parquet_mr_1_2_8(left_path)
    assert pq.read_table(left_path).equals(table)  # (Arrow's workaround)
    schema = pq.read_schema(left_path)
    assert _copy.LeftChunks.open(str(left_path), schema, 1000, None) == (
        "pages written by parquet-mr version 1.2.8 (build 0), read with workarounds"
    )
    pq.write_table(_right(), right_path)
    out, stdout, _ = _enrich(tmp_path, capsys, left_path, right_path)
    assert ENCODED in stdout
    assert pq.read_table(out).equals(_expected(left_path, right_path))


@pytest.mark.usefixtures("small_groups")
def test_the_stitcher_takes_one_left_group_a_table_of_its_rows(tmp_path):
    path = tmp_path / "l.parquet"
    pq.write_table(pa.table({"t": np.arange(10)}), path, row_group_size=5)
    schema = pa.schema([("t", pa.int64()), ("v", pa.float64())])
    left = _copy.LeftChunks.open(str(path), schema, 100, None)
    writer = ParquetStitcher(str(tmp_path / "o.parquet"), schema, left=left)
    with pytest.raises(ValueError, match="a LEFT row group goes with each table"):
        writer.write(pa.table({"v": np.zeros(5)}))
    with pytest.raises(ValueError, match="the LEFT row group holds 5 rows, the table 4"):
        writer.write(pa.table({"v": np.zeros(4)}), left.groups[0])
    for g, group in enumerate(left.groups):
        writer.write(pa.table({"v": np.arange(5.0) + 5 * g}), group)
    writer.close()
    assert pq.read_table(tmp_path / "o.parquet").equals(
        pa.table({"t": np.arange(10), "v": np.arange(10.0)})
    )


def test_the_last_row_group_of_a_file_is_left_out_of_the_average(tmp_path, capsys, thresholds):
    """Writers fill row groups to a size and leave the rest last: 30 groups of 65,536 rows
    and one of 33,920 were refused at 64,516 on average, and a 300-column file written
    again took 70 s. Groups of 150, 150 and 100 rows are copied at 150; of 100, 100, 150
    and 50 they are not (116 on average, the 50 aside); of 100 and 300, whose last is the
    largest, they are (200 on average, none aside)."""
    thresholds(copy_min_group_rows=150)
    folder, right_path = tmp_path / "left", tmp_path / "r.parquet"
    folder.mkdir()
    left = _left(400)
    pq.write_table(left, folder / "a.parquet", row_group_size=150)
    with pq.ParquetWriter(folder / "b.parquet", left.schema) as writer:
        for start, rows in ((0, 100), (100, 100), (200, 150), (350, 50)):
            writer.write_table(left.slice(start, rows))
    with pq.ParquetWriter(folder / "c.parquet", left.schema) as writer:
        for start, rows in ((0, 100), (100, 300)):
            writer.write_table(left.slice(start, rows))
    pq.write_table(_right(), right_path)
    out, stdout, stderr = _enrich(tmp_path, capsys, folder, right_path, name="out")
    assert "columns copied as they are in 2 of 3 files" in stdout
    assert "b.parquet: 400 rows" in stderr
    assert "116 rows (" in stderr and "on average, the last aside, too small to keep" in stderr
    assert pq.ParquetFile(out / "a.parquet").metadata.num_row_groups == 3
    assert pq.ParquetFile(out / "c.parquet").metadata.num_row_groups == 2
    right = pq.read_table(right_path)
    for name in ("a.parquet", "b.parquet", "c.parquet"):
        want = ag.join_asof(pq.read_table(folder / name), right, on="t", by="g", device="cpu")
        assert pq.read_table(out / name).equals(want)


def test_row_groups_of_few_rows_and_many_bytes_are_copied(tmp_path, capsys, thresholds):
    """A wide file's row groups hold few rows for their bytes (Spark's of 128 MB, 1,000
    columns: about 30,000 rows): kept where they average ``copy_min_group_bytes``."""
    path, right_path = tmp_path / "l.parquet", tmp_path / "r.parquet"
    pq.write_table(_left(), path, row_group_size=200)
    pq.write_table(_right(), right_path)
    meta = pq.read_metadata(path)
    judged = [meta.row_group(g).total_byte_size for g in range(meta.num_row_groups)]
    average = sum(judged) // len(judged)  # (the last, as large as the others, counted)
    for bytes_needed, said in ((average, COPIED), (average + 1, ENCODED)):
        thresholds(copy_min_group_rows=1 << 40, copy_min_group_bytes=bytes_needed)
        out, stdout, _ = _enrich(tmp_path, capsys, path, right_path, name="o.parquet")
        assert said in stdout
        assert pq.read_table(out).equals(_expected(path, right_path))
