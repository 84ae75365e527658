"""``asofgpu enrich --one-file``: LEFT's several files written into one OUT file, their rows
one file after another in the order they are read, the columns of their partition folders
after LEFT's own; checked against ``asofgpu.join_asof`` of the files read as one table.
Several LEFT files are never copied, so only one LEFT file's test runs both ways."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import asofgpu as ag
from asofgpu.enrich._checks import Options, plan, tolerance_of
from asofgpu.enrich._device_io import device_io_refusal
from asofgpu.enrich._output import written_by_enrich
from asofgpu.enrich._sources import Source
from enrich_cli import hidden, run


def write(table: pa.Table, path: Path, row_group_size: int = 4, metadata=None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if metadata is not None:
        table = table.replace_schema_metadata(metadata)
    pq.write_table(table, path, row_group_size=row_group_size)
    return path


def quotes(rng) -> pa.Table:
    n = 60
    return pa.table(
        {
            "t": pa.array(np.sort(rng.integers(0, 400, n)), pa.timestamp("s")),
            "day": pa.array(rng.choice([1, 2], n)),
            "g": pa.array(rng.choice(["a", "b", "c"], n).tolist()),
            "v": rng.random(n),
        }
    )


def trades(rng, start: int, n: int) -> pa.Table:
    return pa.table(
        {
            "t": pa.array(np.sort(rng.integers(start, start + 100, n)), pa.timestamp("s")),
            "x": pa.array(np.arange(n), pa.int32()),
        }
    )


def enrich(tmp_path: Path, left: Path, right: Path, *flags, capsys, by: str = "day,g"):
    return run(
        "enrich", left, right, "-o", tmp_path / "o.parquet", "--on", "t", "--by", by,
        "--device", "cpu", "--one-file", *flags, capsys=capsys,
    )  # fmt: skip


@pytest.mark.parametrize("mode", ["memory", "stream", "spill"])
def test_one_file_holds_every_left_file_and_its_partition_columns(tmp_path, capsys, mode):
    """Hive folders src=feed/day=D/g=G, each file sorted by time and the files in (day, g)
    order: OUT is one file of their rows in that order, the folders' columns after LEFT's,
    each row joined as ``join_asof`` joins the files read as one table; small files joined
    together are one row group (a chunk of up to --chunk-rows rows), not one a file."""
    rng = np.random.default_rng(7)
    left = tmp_path / "l"
    pieces = []
    for day in (1, 2):
        for g in ("a", "b", "c"):
            # (one file of more rows than a chunk: joined alone, a chunk at a time)
            n = 30 if (day, g) == (2, "b") else int(rng.integers(0, 6))
            table = trades(rng, 100 * day, n)
            write(table, left / "src=feed" / f"day={day}" / f"g={g}" / "part.parquet")
            pieces.append(
                table.append_column("src", pa.array(["feed"] * len(table), pa.string()))
                .append_column("day", pa.array([day] * len(table), pa.int64()))
                .append_column("g", pa.array([g] * len(table), pa.string()))
            )
    right = write(quotes(rng), tmp_path / "r.parquet", row_group_size=10)
    code, stdout, stderr = enrich(
        tmp_path, left, right, "--right-mode", mode, "--chunk-rows", "12", capsys=capsys
    )
    assert code == 0, stderr
    assert "--one-file writes LEFT's 6 files into one" in stderr
    whole = pa.concat_tables(pieces)
    expected = ag.join_asof(whole, pq.read_table(right), on="t", by=["day", "g"])
    out = pq.ParquetFile(tmp_path / "o.parquet")
    written = out.read()
    assert written.schema.names == ["t", "x", "src", "day", "g", "v"]  # src: no by column
    assert written.schema.field("day").type == pa.int64()
    assert written.schema.field("g").type == pa.string()
    assert written.to_pylist() == expected.to_pylist()
    # each row group a run of files joined together, of up to 12 rows in all
    sizes = [out.metadata.row_group(i).num_rows for i in range(out.metadata.num_row_groups)]
    assert sum(sizes) == len(whole) and max(sizes) <= 12
    small = sum(0 < len(p) < 30 for p in pieces)  # the 30-row file: 3 chunks of its own
    assert len(sizes) < small + 3
    assert written_by_enrich(str(tmp_path / "o.parquet"))
    assert hidden(tmp_path) == []


def test_one_file_of_plain_files_keeps_the_first_files_metadata_but_pandas(tmp_path, capsys):
    """Files of no partition folders, a large one (several chunks) among small ones: their
    rows in the paths' order; OUT's footer keeps the first file's metadata, but pandas'
    entry, which describes that file's rows and index alone (a RangeIndex of its length)."""
    rng = np.random.default_rng(3)
    left = tmp_path / "l"
    tables = [trades(rng, 0, 3), trades(rng, 100, 40), trades(rng, 200, 0), trades(rng, 300, 5)]
    for i, table in enumerate(tables):
        table = table.append_column("g", pa.array(rng.choice(["a", "b"], len(table)), pa.string()))
        tables[i] = table
        meta = {"pandas": '{"index_columns": []}', "source": f"feed-{i}"}
        write(table, left / f"{i}.parquet", metadata=meta)
    right = write(quotes(rng), tmp_path / "r.parquet")
    code, _, stderr = enrich(tmp_path, left, right, "--chunk-rows", "16", capsys=capsys, by="g")
    assert code == 0, stderr
    expected = ag.join_asof(pa.concat_tables(tables), pq.read_table(right), on="t", by="g")
    written = pq.read_table(tmp_path / "o.parquet")
    assert written.schema.names == ["t", "x", "g", "day", "v"]
    assert written.to_pylist() == expected.to_pylist()
    metadata = pq.read_metadata(tmp_path / "o.parquet").metadata
    assert metadata[b"source"] == b"feed-0"
    assert b"pandas" not in metadata


@pytest.mark.usefixtures("left_columns")  # copied and encoded, both
def test_one_file_of_one_left_file_is_what_a_run_without_it_writes(tmp_path, capsys):
    rng = np.random.default_rng(4)
    left = write(
        trades(rng, 0, 20).append_column("g", pa.array(["a"] * 20)), tmp_path / "l.parquet"
    )
    right = write(quotes(rng), tmp_path / "r.parquet")
    code, _, stderr = enrich(tmp_path, left, right, capsys=capsys, by="g")
    assert code == 0, stderr
    assert "--one-file" not in stderr  # one LEFT file: copied as it is, when it can be
    expected = ag.join_asof(pq.read_table(left), pq.read_table(right), on="t", by="g")
    assert pq.read_table(tmp_path / "o.parquet").to_pylist() == expected.to_pylist()


def test_one_file_refuses_a_folder_path(tmp_path, capsys):
    rng = np.random.default_rng(5)
    for i in range(2):
        write(
            trades(rng, 0, 3).append_column("g", pa.array(["a"] * 3)), tmp_path / f"l/{i}.parquet"
        )
    right = write(quotes(rng), tmp_path / "r.parquet")
    code, _, stderr = run(
        "enrich", tmp_path / "l", right, "-o", f"{tmp_path}/out/", "--on", "t", "--by", "g",
        "--one-file", capsys=capsys,
    )  # fmt: skip
    assert code == 2
    assert (
        "names a folder (it ends in /), but --one-file asks for one file; pass a file path"
        in stderr
    )
    (tmp_path / "old").mkdir()
    code, _, stderr = run(
        "enrich", tmp_path / "l", right, "-o", tmp_path / "old", "--on", "t", "--by", "g",
        "--one-file", capsys=capsys,
    )  # fmt: skip
    assert code == 2
    assert f"OUT {tmp_path / 'old'} is a directory; pass a file path" in stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["l", "old", "r.parquet"]


def test_one_file_is_written_on_the_host(tmp_path):
    """libcudf's reader and writer take a LEFT file at a time (``_device_io``)."""
    rng = np.random.default_rng(6)
    for i in range(2):
        table = trades(rng, 0, 3).append_column("symbol", pa.array(["a"] * 3))
        write(table.rename_columns(["time", "x", "symbol"]), tmp_path / f"l/{i}.parquet")
    right = quotes(rng).rename_columns(["time", "day", "symbol", "v"])
    write(right, tmp_path / "r.parquet")
    options = Options(
        tmp_path / "l",
        tmp_path / "r.parquet",
        tmp_path / "o.parquet",
        left_on="time",
        right_on="time",
        left_by=["symbol"],
        right_by=["symbol"],
        one_file=True,
    )
    left = Source.find(tmp_path / "l", "LEFT")
    right_source = Source.find(tmp_path / "r.parquet", "RIGHT")
    args = (plan(options, left, right_source), tolerance_of(options, left, right_source))
    why = device_io_refusal(options, *args, left, right_source, "cuda")
    assert why == "--one-file: libcudf writes a file per LEFT file"


@pytest.mark.parametrize("mode", ["memory", "stream", "spill"])
def test_one_file_of_unsorted_files_a_null_folder_and_empty_files(tmp_path, capsys, mode):
    """LEFT in no key order (its files shuffled inside), a null partition folder and empty
    files: the rows in the files' order (their paths'), null where the folder is; a LEFT of
    empty files only is one file of no rows, of OUT's schema."""
    rng = np.random.default_rng(8)
    left = tmp_path / "l"
    pieces = []
    for folder, n in (("7", 9), ("8", 30), ("9", 0), ("__HIVE_DEFAULT_PARTITION__", 6)):
        table = trades(rng, 0, n).append_column("g", pa.array(rng.choice(["a", "c"], n), "str"))
        table = table.take(rng.permutation(n))
        write(table, left / f"k={folder}" / "part.parquet")
        k = None if folder.startswith("__") else int(folder)
        pieces.append(table.append_column("k", pa.array([k] * n, pa.int64())))
    right = write(quotes(rng), tmp_path / "r.parquet")
    code, _, stderr = enrich(
        tmp_path, left, right, "--right-mode", mode, "--chunk-rows", "8", capsys=capsys, by="g"
    )
    assert code == 0, stderr
    if mode == "stream":  # RIGHT in key order, LEFT in none
        assert "LEFT's keys joined in RIGHT's order" in stderr
    expected = ag.join_asof(pa.concat_tables(pieces), pq.read_table(right), on="t", by="g")
    written = pq.read_table(tmp_path / "o.parquet")
    assert written.schema.names == ["t", "x", "g", "k", "day", "v"]
    assert written.to_pylist() == expected.to_pylist()

    empty = tmp_path / "e"
    for i in range(2):
        write(
            trades(rng, 0, 0).append_column("g", pa.array([], pa.string())), empty / f"{i}.parquet"
        )
    (tmp_path / "o.parquet").unlink()
    code, _, stderr = enrich(tmp_path, empty, right, capsys=capsys, by="g")
    assert code == 0, stderr
    written = pq.read_table(tmp_path / "o.parquet")
    assert written.num_rows == 0
    assert written.schema.names == ["t", "x", "g", "day", "v"]


def test_a_failed_write_of_one_file_leaves_nothing(tmp_path, capsys, monkeypatch):
    """A write that fails halfway (the disk full) aborts OUT's one writer, which lets its
    file go; the run leaves no OUT and nothing hidden, and says why."""
    from asofgpu.enrich import _output

    rng = np.random.default_rng(9)
    for i in range(5):
        table = trades(rng, 100 * i, 7).append_column("g", pa.array(["a"] * 7))
        write(table, tmp_path / "l" / f"{i}.parquet")
    right = write(quotes(rng), tmp_path / "r.parquet")
    aborted, writes = [], []
    real_abort, real_write = _output.ParquetStitcher.abort, _output.ParquetStitcher.write

    def abort(writer):
        aborted.append(writer)
        real_abort(writer)

    def write_or_fail(writer, *args):
        writes.append(writer)
        if len(writes) == 2:
            raise OSError(28, "No space left on device")
        real_write(writer, *args)

    monkeypatch.setattr(_output.ParquetStitcher, "abort", abort)
    monkeypatch.setattr(_output.ParquetStitcher, "write", write_or_fail)
    code, _, stderr = enrich(
        tmp_path, tmp_path / "l", right, "--chunk-rows", "8", capsys=capsys, by="g"
    )
    assert code == 1, stderr
    assert "No space left on device" in stderr
    assert len(writes) == 2 and writes[0] is writes[1]  # one writer: OUT's one file
    assert aborted and all(writer is writes[0] for writer in aborted)
    assert writes[0]._file is None or writes[0]._file.closed
    assert not (tmp_path / "o.parquet").exists()
    assert hidden(tmp_path) == []


def test_one_file_of_a_key_in_partition_folders(tmp_path, capsys):
    """--on a partition folder (day=1, day=2 beside RIGHT's int64 day): the key is written
    as a column of its type, and joined as one (a key is never taken as codes)."""
    left = tmp_path / "l"
    pieces = []
    for day in (1, 2):
        for s in ("a", "b"):
            table = pa.table({"x": [1, 2, 3], "s": [s] * 3})
            write(table, left / f"day={day}" / f"p{s}.parquet")
            pieces.append(table.append_column("day", pa.array([day] * 3, pa.int64())))
    right = pa.table(
        {"day": pa.array([0, 1, 2], pa.int64()), "s": ["a", "a", "b"], "v": [1.0, 2.0, 3.0]}
    )
    write(right, tmp_path / "r.parquet")
    code, _, stderr = run(
        "enrich", left, tmp_path / "r.parquet", "-o", tmp_path / "o.parquet", "--on", "day",
        "--by", "s", "--device", "cpu", "--one-file", capsys=capsys,
    )  # fmt: skip
    assert code == 0, stderr
    expected = ag.join_asof(pa.concat_tables(pieces), right, on="day", by="s")
    written = pq.read_table(tmp_path / "o.parquet")
    assert written.schema.field("day").type == pa.int64()
    assert written.to_pylist() == expected.to_pylist()
