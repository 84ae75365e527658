"""The enrich output writer: Thrift's compact codec and row groups encoded apart, stitched into
one parquet file that every reader takes as if one writer had made it."""

from __future__ import annotations

import datetime

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asofgpu.enrich import _thrift as thrift
from asofgpu.enrich._output import ParquetStitcher, WholeFile, WritePools, stored_as


def _footer(path) -> bytes:
    data = open(path, "rb").read()
    length = int.from_bytes(data[-8:-4], "little")
    return data[-8 - length : -8]


def table(n: int, seed: int = 0) -> pa.Table:
    """Every kind of column a market-data enrich writes, with nulls."""
    rng = np.random.default_rng(seed)
    nulls = rng.random(n) < 0.1
    return pa.table(
        {
            "time": pa.array(np.sort(rng.integers(0, 10**12, n)), pa.timestamp("ns", tz="UTC")),
            "symbol": pa.array([f"S{i}" for i in rng.integers(0, 50, n)]),
            "size": pa.array(rng.integers(0, 100, n), mask=nulls),
            "bid": pa.array(np.round(rng.random(n) * 100, 2), mask=nulls),
            "flag": pa.array(rng.random(n) < 0.5),
            "day": pa.array([datetime.date(2026, 11, 27)] * n, pa.date32()),
            "venue": pa.array(rng.choice(["X", "Y", None], n)).dictionary_encode(),
        }
    )


# ----------------------------------------------------------------------------- thrift


def test_a_pyarrow_footer_decodes_and_encodes_to_the_same_bytes(tmp_path):
    pq.write_table(table(5_000), tmp_path / "t.parquet", row_group_size=1_000)
    raw = _footer(tmp_path / "t.parquet")
    fields, end = thrift.decode_struct(raw, 0)
    assert end == len(raw) and fields[3] == (thrift.I64, 5_000)
    assert len(fields[4][1][1]) == 5  # five row groups
    assert thrift.encode_struct(fields) == raw


_scalars = st.one_of(
    st.tuples(st.just(thrift.I32), st.integers(-(2**31), 2**31 - 1)),
    st.tuples(st.just(thrift.I64), st.integers(-(2**63), 2**63 - 1)),
    st.tuples(st.just(thrift.I16), st.integers(-(2**15), 2**15 - 1)),
    st.tuples(st.just(thrift.BINARY), st.binary(max_size=40)),
    st.tuples(st.just(thrift.TRUE), st.booleans()),
    st.tuples(st.just(thrift.DOUBLE), st.binary(min_size=8, max_size=8)),
)


def _structs(children):
    return st.dictionaries(st.integers(1, 40), children, max_size=6)


_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.tuples(st.just(thrift.STRUCT), _structs(inner)),
        st.tuples(
            st.just(thrift.LIST),
            st.tuples(st.just(thrift.I64), st.lists(st.integers(-(2**63), 2**63 - 1), max_size=20)),
        ),
        st.tuples(
            st.just(thrift.LIST),
            st.tuples(st.just(thrift.STRUCT), st.lists(_structs(inner), max_size=17)),
        ),
    ),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(_structs(_values))
def test_any_struct_survives_a_round_trip(fields):
    raw = thrift.encode_struct(fields)
    assert thrift.decode_struct(raw, 0) == (fields, len(raw))


@pytest.mark.parametrize("raw", [b"", b"\x15", b"\x18\x05ab", b"\x19\x2c"])
def test_truncated_bytes_raise(raw):
    with pytest.raises(thrift.ThriftError, match="truncated"):
        thrift.decode_struct(raw, 0)


# ----------------------------------------------------------------------------- stitching


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("compression", ["snappy", "zstd", "none"])
def test_stitched_file_reads_back_equal_in_every_reader(tmp_path, threads, compression):
    whole = table(3_000)
    path = tmp_path / "out.parquet"
    writer = ParquetStitcher(str(path), whole.schema, threads=threads, compression=compression)
    for start, size in ((0, 1_000), (1_000, 0), (1_000, 1), (1_001, 999), (2_000, 1_000)):
        writer.write(whole.slice(start, size))
    writer.close()
    meta = pq.ParquetFile(path).metadata
    assert meta.num_rows == 3_000
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [
        1_000,
        1,
        999,
        1_000,
    ]
    assert meta.row_group(0).column(0).compression == compression.upper().replace(
        "NONE", "UNCOMPRESSED"
    )
    assert pq.read_table(path).equals(whole)
    # one row group at a time, and by another reader: the offsets of every page are right
    assert pa.concat_tables(
        pq.ParquetFile(path).read_row_group(i) for i in range(meta.num_row_groups)
    ).equals(whole)
    polars = pytest.importorskip("polars")
    assert polars.read_parquet(path).equals(polars.from_arrow(whole))


def test_writers_sharing_a_runs_pools_write_each_file_whole(tmp_path):
    """A run's files share its ``WritePools`` (pools of a file's own started two threads a
    file): tables of two files written in turn land in their own files, in order, and one
    writer's abort leaves the other's file as written, the pools still working."""
    whole = table(3_000)
    with WritePools(threads=2) as pools:
        first, second, dropped = (
            ParquetStitcher(str(tmp_path / f"{name}.parquet"), whole.schema, pools=pools)
            for name in ("first", "second", "dropped")
        )
        for start in range(0, 3_000, 500):
            for writer in (first, second, dropped):
                writer.write(whole.slice(start, 500))
        dropped.abort()
        first.close()
        second.write(whole.slice(0, 10))
        second.close()
    assert pq.read_table(tmp_path / "first.parquet").equals(whole)
    assert pq.read_table(tmp_path / "second.parquet").equals(
        pa.concat_tables([whole, whole.slice(0, 10)])
    )
    assert pq.ParquetFile(tmp_path / "second.parquet").metadata.num_row_groups == 7


def test_statistics_stay_with_their_row_group(tmp_path):
    whole = table(2_000)
    path = tmp_path / "out.parquet"
    writer = ParquetStitcher(str(path), whole.schema, threads=2)
    writer.write(whole.slice(0, 1_000))
    writer.write(whole.slice(1_000))
    writer.close()
    meta = pq.ParquetFile(path).metadata
    for i, part in enumerate((whole.slice(0, 1_000), whole.slice(1_000))):
        stats = meta.row_group(i).column(0).statistics
        assert (stats.min, stats.max) == (part["time"][0].as_py(), part["time"][-1].as_py())


def test_nothing_written_gives_an_empty_file_of_the_schema(tmp_path):
    schema = table(1).schema
    writer = ParquetStitcher(str(tmp_path / "e.parquet"), schema)
    writer.write(schema.empty_table())
    writer.close()
    back = pq.read_table(tmp_path / "e.parquet")
    assert back.num_rows == 0 and back.schema.equals(schema)


@pytest.mark.parametrize("then", ["write", "close", "abort"])
def test_a_file_that_cannot_be_made_raises_at_its_first_write_or_close(tmp_path, then):
    """The file is made on the appending thread (the join's thread paid 1.1 s making 2,000
    small ones): what making it raised comes from the next write, or from close; abort says
    nothing."""
    writer = ParquetStitcher(str(tmp_path), table(1).schema)  # a folder: no file there
    if then == "write":
        with pytest.raises(IsADirectoryError):
            for _ in range(8):  # (a write waits for the oldest once the pools are full)
                writer.write(table(10))
            writer.close()
    elif then == "close":
        with pytest.raises(IsADirectoryError):
            writer.close()
    writer.abort()


def test_a_table_of_another_schema_is_refused(tmp_path):
    writer = ParquetStitcher(str(tmp_path / "o.parquet"), pa.schema([("x", pa.int64())]))
    with pytest.raises(ValueError, match="is not the writer's"):
        writer.write(pa.table({"x": pa.array([1], pa.int32())}))
    writer.abort()


# ----------------------------------------------------------------------------- whole files


@pytest.mark.parametrize(
    "text",
    [
        pa.large_string(),
        pytest.param(
            pa.string_view() if hasattr(pa, "string_view") else None,
            marks=pytest.mark.skipif(
                int(pa.__version__.split(".")[0]) < 21,
                reason="pyarrow writes views to parquet from 21",
            ),
        ),
    ],
)
def test_a_whole_file_is_what_a_stitcher_of_one_write_gives(tmp_path, text):
    """A small file joined with others is written whole by pyarrow: the same rows, schema
    (its metadata too), row group and statistics as the stitcher's file of the same write;
    text gathered as codes (``stored_as``) is written as the schema's text, a view type too
    (pyarrow casts no dictionary to one: its values first)."""
    whole = table(500).replace_schema_metadata({"asofgpu": "enrich", "pandas": "{}"})
    schema = whole.schema.set(1, pa.field("symbol", text))
    codes = stored_as(whole["symbol"].dictionary_encode(), text)
    written = whole.set_column(1, "symbol", codes)
    with WritePools(threads=2) as pools:
        writers = [
            kind(str(tmp_path / f"{kind.__name__}.parquet"), schema, pools=pools)
            for kind in (WholeFile, ParquetStitcher)
        ]
        for writer in writers:
            writer.write(written)
            writer.close()
    ours, stitched = (pq.ParquetFile(w.path) for w in writers)
    assert ours.schema_arrow.equals(schema, check_metadata=True)
    assert ours.read().equals(stitched.read())
    assert ours.read().equals(whole.cast(schema))
    assert ours.metadata.num_row_groups == 1 and ours.metadata.num_rows == 500
    for column in range(len(schema)):
        mine = ours.metadata.row_group(0).column(column)
        theirs = stitched.metadata.row_group(0).column(column)
        assert mine.statistics == theirs.statistics, schema.names[column]
        assert mine.compression == theirs.compression == "SNAPPY"


def test_a_whole_file_given_nothing_is_an_empty_file_of_the_schema(tmp_path):
    schema = table(1).schema
    with WritePools(threads=1) as pools:
        writer = WholeFile(str(tmp_path / "e.parquet"), schema, pools=pools)
        writer.close()
    file = pq.ParquetFile(tmp_path / "e.parquet")
    assert file.metadata.num_row_groups == 0
    assert file.read().num_rows == 0 and file.schema_arrow.equals(schema)


def test_a_whole_file_is_written_by_one_write_of_its_schema(tmp_path):
    schema = pa.schema([("x", pa.int64())])
    with WritePools(threads=1) as pools:
        writer = WholeFile(str(tmp_path / "o.parquet"), schema, pools=pools)
        with pytest.raises(ValueError, match="is not the writer's"):
            writer.write(pa.table({"x": pa.array([1], pa.int32())}))
        writer.write(pa.table({"x": [1, 2]}))
        with pytest.raises(ValueError, match="is written whole, by one write"):
            writer.write(pa.table({"x": [3]}))
        writer.close()
    assert pq.read_table(tmp_path / "o.parquet")["x"].to_pylist() == [1, 2]


def test_a_whole_file_that_cannot_be_made_raises_at_close_and_abort_says_nothing(tmp_path):
    with WritePools(threads=1) as pools:
        writer = WholeFile(str(tmp_path), table(1).schema, pools=pools)  # a folder
        writer.write(table(10))
        with pytest.raises(OSError):
            writer.close()
        writer.abort()


def test_an_aborted_whole_file_being_written_is_waited_for(tmp_path, monkeypatch):
    """Abort waits for a write pyarrow is running (the run's folder is removed after)."""
    import threading
    import time

    from asofgpu.enrich import _output

    started, release = threading.Event(), threading.Event()
    real = _output.pq.write_table

    def slow_write(*args, **kwargs):
        started.set()
        release.wait()
        real(*args, **kwargs)

    monkeypatch.setattr(_output.pq, "write_table", slow_write)
    with WritePools(threads=1) as pools:
        writer = WholeFile(str(tmp_path / "w.parquet"), table(1).schema, pools=pools)
        writer.write(table(10))
        assert started.wait(10)
        threading.Timer(0.3, release.set).start()
        before = time.perf_counter()
        writer.abort()
        assert time.perf_counter() - before >= 0.25
        assert writer._written.done()
    assert pq.read_table(tmp_path / "w.parquet").num_rows == 10


def test_an_aborted_whole_file_waiting_for_the_pool_is_never_written(tmp_path):
    """Abort cancels a write still queued (the pool busy), so no file is made after the
    run has failed; one already running is waited for."""
    import threading

    release = threading.Event()
    with WritePools(threads=1) as pools:
        busy = pools.encoder.submit(release.wait)
        queued = WholeFile(str(tmp_path / "q.parquet"), table(1).schema, pools=pools)
        queued.write(table(10))
        queued.abort()
        release.set()
        busy.result()
    assert not (tmp_path / "q.parquet").exists()


@pytest.mark.parametrize("failing", ["fsync", "rename"])
def test_files_committed_together_name_the_one_that_failed_and_those_in_place(
    tmp_path, monkeypatch, failing
):
    """A failure before the renames leaves none in place; a rename that fails after another
    succeeded says which file is in place (the demo's day files)."""
    import os

    from asofgpu.enrich import _output
    from asofgpu.enrich._errors import OutputError

    def refused(*_):
        raise OSError(5, "Input/output error")

    first, second = tmp_path / "a.parquet", tmp_path / "b.parquet"
    with _output.AtomicFile(str(first), "a") as a, _output.AtomicFile(str(second), "b") as b:
        for f in (a, b):
            with open(f.tmp, "w") as out:
                out.write("data")
        if failing == "fsync":
            real_fsync = _output._fsync
            monkeypatch.setattr(
                _output, "_fsync", lambda path: refused() if path == b.tmp else real_fsync(path)
            )
        else:
            real = os.replace
            monkeypatch.setattr(
                os, "replace", lambda s, t: refused() if t == str(second) else real(s, t)
            )
        with pytest.raises(OutputError, match=f"^cannot write b {second}: Input/output error$"):
            try:
                _output.commit_together([a, b], is_out=False)
            except OutputError as exc:
                assert exc.in_place == (() if failing == "fsync" else (str(first),))
                raise
    assert sorted(p.name for p in tmp_path.iterdir()) == (
        [] if failing == "fsync" else ["a.parquet"]
    )


def test_writers_of_schemas_equal_but_for_metadata_write_their_own(tmp_path):
    """The empty footer a writer starts from is kept a schema (``_empty_footer``), by its
    bytes: schemas that compare equal but hold other metadata, the file's or a field's (the
    LEFT files of one run, each with its own), each write their own."""
    base = table(1).schema
    schemas = [
        base.with_metadata({"from": "a"}),
        base.with_metadata({"from": "b"}),
        base.set(0, base.field(0).with_metadata({"unit": "ns"})).with_metadata({"from": "b"}),
    ]
    assert schemas[0] == schemas[1] == schemas[2]  # (equality leaves metadata out)
    with WritePools() as pools:
        for i, schema in enumerate(schemas):
            writer = ParquetStitcher(str(tmp_path / f"{i}.parquet"), schema, pools=pools)
            writer.write(table(10).cast(schema))
            writer.close()
    for i, schema in enumerate(schemas):
        back = pq.read_schema(tmp_path / f"{i}.parquet")
        assert back.metadata[b"from"] == schema.metadata[b"from"]
        assert back.field(0).metadata == schema.field(0).metadata
