"""``asofgpu enrich`` on folders of parquet files, globs and hive partitions; OUT as a folder.

The oracle is ``asofgpu.join_asof`` on the whole data (every file read and concatenated, the
partition columns added by hand); every run also checks that nothing half-written is left.
"""

from __future__ import annotations

import datetime
import os
import shutil
import threading
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import asofgpu as ag
from conftest import unhashable_extension_type
from asofgpu import marketdata
from asofgpu.enrich._output import WholeFile, written_by_enrich
from enrich_cli import enrich_in, hidden, needs_parquet_views, run

pytestmark = pytest.mark.usefixtures("left_columns")  # copied and encoded, both


def write(table: pa.Table, path: Path, row_group_size: int = 40) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, row_group_size=row_group_size)
    return path


def small_left_files(folder: Path, n: int, width: int = 1) -> None:
    """``n`` LEFT files of two rows each in ``folder / "l"`` (named by their number, of
    ``width`` digits at least), ten seconds apart, and a RIGHT of two rows, ``r.parquet``."""
    for i in range(n):
        times = pa.array([10 * i, 10 * i + 5], pa.timestamp("s"))
        write(pa.table({"t": times, "g": [1, 2]}), folder / "l" / f"{i:0{width}d}.parquet")
    right = pa.table({"t": pa.array([0, 1], pa.timestamp("s")), "g": [1, 2], "v": [1.0, 2.0]})
    write(right, folder / "r.parquet")


def three_left_files(folder: Path, rows: int, row_group_size: int = 40) -> Path:
    """``folder / "l"``, holding three LEFT files of ``rows`` rows each (their ``t`` ten
    seconds apart, the files' interleaved a second apart; ``x`` numbering the rows)."""
    for i in range(3):
        times = pa.array(np.arange(rows) * 10 + i, pa.timestamp("s"))
        table = pa.table({"t": times, "x": np.arange(rows) + rows * i})
        write(table, folder / "l" / f"{i}.parquet", row_group_size)
    return folder / "l"


def enrich_folder(folder: Path, capsys) -> tuple[int, str, str]:
    """``asofgpu enrich`` of ``folder``'s LEFT folder ``l`` and ``r.parquet`` into ``out``
    there, on ``t``, on the cpu: (exit code, stdout, stderr)."""
    return run(
        "enrich", folder / "l", folder / "r.parquet", "-o", folder / "out", "--on", "t",
        "--device", "cpu", capsys=capsys,
    )  # fmt: skip


def days(seed: int = 1):
    """Two shuffled market-data days (quotes, trades) of the same symbols."""
    return [
        marketdata.day(n_quotes=300, n_trades=200, n_symbols=6, seed=seed + d, shuffled=True)
        for d in range(2)
    ]


def with_column(table: pa.Table, name: str, value) -> pa.Table:
    return table.append_column(name, pa.array([value] * table.num_rows))


def test_a_folder_of_one_file_is_counted_as_one_file(tmp_path, capsys):
    """The progress lines count a folder's files: "1 file", not "1 files"."""
    quotes, trades = marketdata.day(n_quotes=300, n_trades=200, n_symbols=6, seed=1)
    left, right = tmp_path / "trades", tmp_path / "quotes"
    write(trades, left / "t.parquet")
    write(quotes, right / "q.parquet")
    for mode in ("memory", "stream"):
        code, _, stderr = run(
            "enrich", left, right, "-o", tmp_path / mode, "--on", "time", "--by", "symbol",
            "--device", "cpu", "--right-mode", mode, capsys=capsys,
        )  # fmt: skip
        assert code == 0, stderr
        assert f"RIGHT {right} (1 file, 300 rows" in stderr
        assert f"LEFT {left} (1 file, 200 rows)" in stderr
        assert "1 files" not in stderr


@pytest.mark.parametrize("mode", ["memory", "stream", "spill"])
def test_small_left_files_are_joined_together_and_written_apart(
    tmp_path, capsys, mode, left_columns
):
    """Consecutive LEFT files of up to a chunk's rows in all are one join
    (``joined_together``; a join costs about a millisecond whatever its rows), and each is
    still written into a file of its own as a join of it alone writes it: an empty file
    among them, one in a folder of its own, each row's tolerance read with the keys, and
    two (one empty) whose ``g`` is of another text type, read as the others' and so never
    copied: a copied file's text keys come as codes of its own type, the others' as text of
    the type read, and a run of both is still one join (it had been a join a chunk)."""
    rng = np.random.default_rng(5)
    left, out = tmp_path / "l", tmp_path / "out"
    names = ["0.parquet", "1.parquet", "2.parquet", "3.parquet", "4.parquet", "z/5.parquet"]
    sizes = [3, 0, 5, 9, 2, 7]  # --chunk-rows 10: joined as [3, 0, 5], [9], [2, 7]
    start = 0
    for name, n in zip(names, sizes):
        table = pa.table(
            {
                "t": pa.array(np.arange(start, start + n) * 10, pa.timestamp("s")),
                "g": pa.array(
                    rng.choice(["a", "b", "c"], n).tolist(),
                    "large_string" if start == 3 else "string",
                ),
                "tol": pa.array(rng.integers(0, 30, n), pa.duration("s")),
                "x": pa.array(np.arange(start, start + n)),
            }
        )
        write(table, left / name, row_group_size=max(n, 1))
        start += n
    right = pa.table(
        {
            "t": pa.array(np.arange(0, 300, 7), pa.timestamp("s")),
            "g": pa.array(rng.choice(["a", "b", "c"], 43), pa.string()),
            "v": rng.random(43),
        }
    )
    write(right, tmp_path / "r.parquet")
    code, stdout, stderr = run(
        "enrich", left, tmp_path / "r.parquet", "-o", out, "--on", "t", "--by", "g",
        "--tolerance-column", "tol", "--chunk-rows", "10", "--right-mode", mode,
        "--device", "cpu", capsys=capsys,
    )  # fmt: skip
    assert code == 0, stderr
    assert "26 in 6 files, 3 chunk(s) of up to 9" in stdout
    for name in names:
        alone = pq.read_table(left / name)
        alone = alone.set_column(1, "g", alone["g"].cast("string"))
        expected = ag.join_asof(alone, right, on="t", by="g", tolerance=alone["tol"])
        written = pq.read_table(out / name)
        assert written.schema.names == ["t", "g", "tol", "x", "v"]
        assert written.to_pylist() == expected.select(written.schema.names).to_pylist(), name


def test_a_file_joined_with_others_keeps_its_row_groups_only_when_copied(
    tmp_path, capsys, left_columns
):
    """Files joined together and not copied are written whole (``WholeFile``): a file of
    three row groups becomes one of one; copied, its row groups stay as they are. Either
    way each holds what a join of it alone gives."""
    left = three_left_files(tmp_path, 6, row_group_size=2)
    right = pa.table({"t": pa.array(np.arange(0, 60, 7), pa.timestamp("s")), "v": np.arange(9.0)})
    write(right, tmp_path / "r.parquet")
    code, _, stderr = enrich_folder(tmp_path, capsys)
    assert code == 0, stderr
    for i in range(3):
        written = pq.ParquetFile(tmp_path / "out" / f"{i}.parquet")
        assert written.metadata.num_row_groups == (3 if left_columns == "copied" else 1)
        expected = ag.join_asof(pq.read_table(left / f"{i}.parquet"), right, on="t")
        assert written.read().to_pylist() == expected.to_pylist()


def test_each_out_file_is_synced_as_it_closes_not_at_the_commit(tmp_path, capsys, monkeypatch):
    """Each OUT file goes to disk on the closing thread, while the next files are joined,
    once: the commit syncs none again (2,000 files' syncs took the commit 0.3 s)."""
    from asofgpu.enrich import _output

    small_left_files(tmp_path, 5)
    synced = []
    real = _output._fsync

    def fsync(path):
        synced.append((os.path.basename(path), threading.current_thread().name))
        real(path)

    monkeypatch.setattr(_output, "_fsync", fsync)
    code, _, stderr = enrich_in(tmp_path, capsys=capsys, left="l", out="out")
    assert code == 0, stderr
    assert sorted(synced) == [(f"{i}.parquet", "asofgpu-close_0") for i in range(5)]
    assert sorted(os.listdir(tmp_path / "out")) == [f"{i}.parquet" for i in range(5)]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd")
def test_many_small_left_files_stay_within_the_open_files_allowed(tmp_path, capsys):
    """Copied files joined together are open until their run is written: a run of every one
    of 300 small files ran out of descriptors under a limit of 256 (macOS' default). Runs
    hold ``RUN_COPIED`` of them at most, and the run before them while it closes; files
    written whole (not copied) are open only while written."""
    import resource

    from asofgpu.enrich._left import RUN_COPIED

    small_left_files(tmp_path, 300, width=3)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    room = 2 * RUN_COPIED + 60  # the runs' files, and what reading and the pools hold
    resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + room, hard))
    try:
        code, _, stderr = enrich_in(tmp_path, capsys=capsys, left="l", out="out")
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert code == 0, stderr
    assert len(os.listdir(tmp_path / "out")) == 300
    assert pq.read_table(tmp_path / "out" / "299.parquet")["v"].to_pylist() == [1.0, 2.0]


def test_a_file_that_fails_to_close_aborts_the_run_after_it(tmp_path, capsys, monkeypatch):
    """A file that cannot be synced as it closes fails the run where the next run waits
    for it: that next run's writers, made and written by then, are aborted, their files
    closed (they stayed open until the error was collected)."""
    from asofgpu.enrich import _left, _output

    small_left_files(tmp_path, 4)
    made = []
    real_writer = _left._writer

    def writer(*args):
        made.append(real_writer(*args))
        return made[-1]

    def sync(folder, path):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(_left, "_writer", writer)
    monkeypatch.setattr(_output.AtomicFolder, "sync", sync)
    code, _, stderr = enrich_in(
        tmp_path, "--chunk-rows", "2", capsys=capsys, left="l", out="out"
    )  # a run a file
    assert code == 1, stderr
    assert "Input/output error" in stderr
    # (a file not made yet when its writer was aborted is never made)
    assert len(made) == 2 and all(let_go(w) for w in made)
    assert hidden(tmp_path) == []


@needs_parquet_views
@pytest.mark.parametrize("kind", ["string_view", "binary_view"])
def test_files_written_whole_take_rights_text_views_read_as_codes(tmp_path, capsys, kind):
    """RIGHT text of a view type, few long values, is read as codes (kept dictionaries);
    a small LEFT file joined with others writes it whole as the view type (pyarrow casts
    no dictionary to a view type: it decodes first), as a join of it alone would."""
    left = three_left_files(tmp_path, 5)
    venue = pa.array(["NYSE" * 20, "ARCA" * 20] * 500).cast(getattr(pa, kind)())
    right = pa.table({"t": pa.array(np.arange(1_000), pa.timestamp("s")), "venue": venue})
    write(right, tmp_path / "r.parquet", row_group_size=1_000)
    code, _, stderr = enrich_folder(tmp_path, capsys)
    assert code == 0, stderr
    for i in range(3):
        written = pq.read_table(tmp_path / "out" / f"{i}.parquet")
        assert written.schema.field("venue").type == getattr(pa, kind)()
        expected = ag.join_asof(pq.read_table(left / f"{i}.parquet"), right, on="t")
        assert written.to_pylist() == expected.to_pylist()


def test_copied_files_take_a_larger_share_of_the_files_a_run_holds(
    tmp_path, capsys, monkeypatch, left_columns
):
    """A run holds ``RUN_FILES`` files at most (each holds its tables until the run is
    written), ``RUN_COPIED`` of them copied (each holds its file open); files written whole
    open theirs only while pyarrow writes it, so a run holds many more of them: 1,000
    per-symbol files of 200 rows took 1.90 s in runs of 32, 1.68 s in one."""
    from asofgpu.enrich import _left

    monkeypatch.setattr(_left, "RUN_FILES", 16)
    monkeypatch.setattr(_left, "RUN_COPIED", 4)
    small_left_files(tmp_path, 20, width=2)
    code, stdout, stderr = enrich_in(tmp_path, capsys=capsys, left="l", out="out")
    assert code == 0, stderr
    joins = 5 if left_columns == "copied" else 2  # runs of 4 copied, or of 16 written whole
    assert f"40 in 20 files, {joins} chunk(s)" in stdout
    for i in (0, 19):
        assert pq.read_table(tmp_path / "out" / f"{i:02d}.parquet")["v"].to_pylist() == [1.0, 2.0]


def test_a_failure_among_files_joined_together_leaves_nothing(tmp_path, capsys, monkeypatch):
    """A write that fails in a run of files joined together aborts every writer of the run
    (each file closed, or never written), and the run leaves no OUT and nothing hidden."""
    from asofgpu.enrich import _output

    small_left_files(tmp_path, 4)
    aborted, writes = [], []
    for kind in (_output.ParquetStitcher, _output.WholeFile):  # (the run's files are written whole)
        real_abort, real_write = kind.abort, kind.write

        def abort(writer, real_abort=real_abort):
            aborted.append(writer)
            real_abort(writer)

        def write_or_fail(writer, *args, real_write=real_write):
            writes.append(writer)
            if len(writes) == 3:
                raise OSError(28, "No space left on device")
            real_write(writer, *args)

        monkeypatch.setattr(kind, "abort", abort)
        monkeypatch.setattr(kind, "write", write_or_fail)
    code, _, stderr = enrich_in(tmp_path, capsys=capsys, left="l", out="out")
    assert code == 1, stderr
    assert "No space left on device" in stderr
    assert len(aborted) == 4
    assert all(let_go(writer) for writer in aborted)
    assert not (tmp_path / "out").exists()
    assert hidden(tmp_path) == []


def let_go(writer) -> bool:
    """Whether a writer holds its file no more: closed, or never made (a stitcher), or
    written and let go of, or never to be (a whole file)."""
    if isinstance(writer, WholeFile):
        return writer._written is None or writer._written.done()
    return writer._file is None or writer._file.closed


def test_left_and_right_folders_give_a_mirrored_out_folder(tmp_path, capsys):
    (q0, t0), (q1, t1) = days()
    left, right = tmp_path / "trades", tmp_path / "quotes"
    write(t0.slice(0, 120), left / "a.parquet")
    write(t0.slice(120), left / "sub" / "b.parquet")
    write(t1, left / "sub" / "c.parquet")
    write(q0, right / "q0.parquet")
    write(q1, right / "more" / "q1.parquet")
    (left / "_ignored.parquet").write_text("not read: names starting with _ are skipped")
    (right / "notes.txt").write_text("not read: not *.parquet")
    out = tmp_path / "out"
    code, stdout, _ = run(
        "enrich",
        left,
        right,
        "-o",
        out,
        "--on",
        "time",
        "--by",
        "symbol",
        "--device",
        "cpu",
        "--chunk-rows",
        50,
        capsys=capsys,
    )
    assert code == 0
    assert "rows       400 in 3 files, " in stdout and "from 600 right rows" in stdout
    quotes = pa.concat_tables([q0, q1])
    for name, part in (
        ("a.parquet", t0.slice(0, 120)),
        ("sub/b.parquet", t0.slice(120)),
        ("sub/c.parquet", t1),
    ):
        expected = ag.join_asof(part, quotes, on="time", by="symbol", device="cpu")
        assert pq.read_table(out / name).equals(expected), name
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == [
        "a.parquet",
        "sub",
        "sub/b.parquet",
        "sub/c.parquet",
    ]
    assert hidden(tmp_path) == []


def test_footers_past_their_budget_are_dropped_freed_and_read_again(tmp_path, monkeypatch):
    """A run's footers are held up to a budget: the first while they fit, and past it the
    one asked for last (here; ``RECENT``), the others dropped, freed at once (a footer's own
    schema refers back to it: a cycle only Python's collector frees, and dropped footers
    stayed, 0.8 MiB each), and read again when asked for."""
    import gc
    import weakref

    from asofgpu.enrich._sources import Footers, Source
    from asofgpu.enrich._file_order import _ends_overlap, grouped_order, without_statistics

    for i in range(6):
        table = pa.table(
            {
                "t": pa.array(np.arange(20) + 100 * i, pa.int64()),
                "g": pa.array(["a", "b"] * 10),
                "none": pa.nulls(20),  # parquet's null type: its own leaf, no statistics
            }
        )
        write(table, tmp_path / f"part-{i}.parquet", row_group_size=4)
    monkeypatch.setattr(Footers, "RECENT", 1)
    one = Source.find(tmp_path / "part-0.parquet", "RIGHT").parts[0].footer_bytes
    footers = Footers(budget=2 * one)
    source = Source.find(tmp_path, "RIGHT", footers)
    dropped = [p.footer is None for p in source.parts]
    assert dropped == [False, False, True, True, True, False]
    assert footers.bytes == 3 * one and footers.read_again == 0
    gc.disable()  # (what the collector alone would free stays)
    try:
        last = source.parts[-1]
        held = weakref.ref(last.footer)
        assert last.leaves == {"t": range(0, 1), "g": range(1, 2), "none": range(2, 3)}
        assert last.null_leaves == {2}
        assert without_statistics(source, "t") is None
        assert not _ends_overlap(source, "t", raw=True)
        assert grouped_order(source, ["g"], "t")[0] is None
        assert held() is None  # dropped by the walks, and read again since: another
        assert last.footer is not None
    finally:
        gc.enable()
    assert [p.footer is None for p in source.parts] == dropped
    # Two walks of every file (grouped_order stops at the first) read the four dropped again.
    assert footers.bytes == 3 * one and footers.read_again == 2 * 4
    again = last.meta
    assert again.num_row_groups == 5 and again.equals(pq.read_metadata(last.path))


def test_a_file_rewritten_before_its_footer_is_read_again_stops_the_run(
    tmp_path, capsys, monkeypatch
):
    """A footer read again must be the same file's: one rewritten after the run found it
    (its columns in another order, so the leaves it was mapped by are another column's)
    stops the run by name, leaving nothing, where it was read with stale leaf numbers."""
    from asofgpu.enrich import _sources

    monkeypatch.setattr(_sources, "FOOTER_CHUNK_BYTES", 1 << 40)  # past any budget: each
    monkeypatch.setattr(_sources.Footers, "RECENT", 1)  # footer dropped for the next one
    for i in range(3):
        times = pa.array(np.arange(40) + 40 * i, pa.int64())
        write(
            pa.table({"g": ["a", "b"] * 20, "t": times, "v": np.arange(40.0)}),
            tmp_path / "r" / f"q{i}.parquet",
        )
    write(pa.table({"g": ["a", "b"], "t": [5, 70]}), tmp_path / "l.parquet")
    find = _sources.Source.find.__func__

    def find_then_rewrite(cls, given, side, footers=None):
        source = find(cls, given, side, footers)
        if side == "RIGHT":
            table = pq.read_table(tmp_path / "r" / "q0.parquet")
            write(table.select(["v", "t", "g"]), tmp_path / "r" / "q0.parquet")
        return source

    monkeypatch.setattr(_sources.Source, "find", classmethod(find_then_rewrite))
    code, _, stderr = enrich_in(tmp_path, "--right-mode", "stream", capsys=capsys, right="r")
    assert code == 2
    assert stderr == (
        f"asofgpu enrich: error: RIGHT file {tmp_path / 'r' / 'q0.parquet'} changed while the "
        "run read it; run again once nothing writes to it\n"
    )
    assert hidden(tmp_path) == [] and not (tmp_path / "o.parquet").exists()


def test_a_side_read_for_the_last_time_drops_its_footers(tmp_path, monkeypatch):
    """RIGHT held in memory is read once: each file's footer is dropped as it is read, and
    the memory handed back past ``TRIM_BYTES``; a footer asked for after is read again."""
    from asofgpu.enrich import _sources
    from asofgpu.enrich._sources import Footers, Source

    for i in range(3):
        write(pa.table({"t": [i, i + 1], "g": ["a", "b"]}), tmp_path / f"p{i}.parquet")
    trims = []
    monkeypatch.setattr(_sources, "_trim_malloc", lambda: trims.append(1))
    monkeypatch.setattr(Footers, "TRIM_BYTES", 1)
    monkeypatch.setattr(Footers, "KEPT_BYTES", 0)
    footers = Footers(budget=1 << 30)
    source = Source.find(tmp_path, "RIGHT", footers)
    whole = pa.concat_tables(pq.read_table(p) for p in sorted(tmp_path.glob("*.parquet")))
    assert source.read(["t", "g"]).equals(whole)
    assert all(p.footer is not None for p in source.parts) and trims == []
    assert source.read(["t", "g"], last=True).equals(whole)
    assert all(p.footer is None for p in source.parts) and len(trims) == 3
    assert footers.bytes == 0
    assert source.parts[1].meta.num_rows == 2 and footers.read_again == 1


def test_a_stream_read_for_the_last_time_drops_each_footer_after_its_file(tmp_path, monkeypatch):
    """A stream's last pass drops each file's footer once its last batch is handed over,
    not before: the next file's is still held. Footers that take ``KEPT_BYTES`` or less in
    all are kept (freeing them costs more than they hold)."""
    from asofgpu.enrich._sources import Footers, Source
    from asofgpu.enrich._spill import source_batches

    for i in range(3):
        write(pa.table({"t": [2 * i, 2 * i + 1]}), tmp_path / f"p{i}.parquet", row_group_size=1)
    footers = Footers(budget=1 << 30)
    source = Source.find(tmp_path, "RIGHT", footers)
    assert len(list(source_batches(source, ["t"], [], 1, last=True))) == 6
    assert all(p.footer is not None for p in source.parts) and footers.bytes > 0
    monkeypatch.setattr(Footers, "KEPT_BYTES", 0)
    read = source_batches(source, ["t"], [], 1, last=True)
    assert [next(read).column(0).to_pylist() for _ in range(3)] == [[0], [1], [2]]
    assert [p.footer is None for p in source.parts] == [True, False, False]
    assert pa.Table.from_batches(list(read)).column(0).to_pylist() == [3, 4, 5]
    assert all(p.footer is None for p in source.parts) and footers.bytes == 0
    assert footers.read_again == 0


def test_runs_read_ahead_come_in_order_and_so_does_a_broken_file(tmp_path):
    """``Source.group_batches`` reads runs of small row groups ahead on threads: batches come
    in the files' order, each file's end marked, and a file broken after it was found raises
    only after the rows of the files before it."""
    from asofgpu.enrich._errors import EnrichError
    from asofgpu.enrich._sources import Footers, Source

    for i in range(4):
        write(pa.table({"t": np.arange(10 * i, 10 * i + 10)}), tmp_path / f"p{i}.parquet",
              row_group_size=2)  # fmt: skip
    source = Source.find(tmp_path, "RIGHT", Footers(budget=1 << 30))
    items = list(source.group_batches(100, lambda: ["t"], []))
    ends = [part.relative for part, batch, _ in items if batch is None]
    assert ends == [f"p{i}.parquet" for i in range(4)]
    got = [b.column(0).to_pylist() for _, b, names in items if b is not None]
    assert got == [list(range(10 * i, 10 * i + 10)) for i in range(4)]  # (a file's run: one)
    (tmp_path / "p2.parquet").write_bytes(b"PAR1 not any more")
    seen = []
    with pytest.raises(EnrichError, match="cannot read RIGHT file .*p2.parquet"):
        for part, batch, _ in source.group_batches(100, lambda: ["t"], []):
            seen.append((part.relative, batch is None))
    assert seen == [("p0.parquet", False), ("p0.parquet", True)] + [
        ("p1.parquet", False), ("p1.parquet", True)
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("mode", "strategy", "dropped"),
    [
        ("stream", "backward", "both"),
        ("memory", "backward", "both"),
        ("spill", "backward", "RIGHT"),  # (LEFT's spilled by a pass of its own)
        ("regroup", "backward", "RIGHT"),  # (LEFT's keys put in order by passes of their own)
        ("stream", "forward", "LEFT"),  # (RIGHT's read again by the first pass)
        ("stream", "nearest", "LEFT"),
    ],
)
def test_a_run_drops_every_footer_once_its_file_is_read_for_the_last_time(
    tmp_path, capsys, monkeypatch, mode, strategy, dropped
):
    """A file's footer goes once the run has read the file for the last time: RIGHT's as a
    backward stream's windows pass its files (a forward or nearest stream's first pass
    reads them again), as it is read into memory, or spilled; LEFT's as each file is read,
    where that is its only pass. None is read again (the hive day's 2.1 GiB of them stayed
    to its end)."""
    from asofgpu.enrich import _sources

    runs = []
    init = _sources.Footers.__init__

    def kept(self, budget):
        init(self, budget)
        runs.append(self)

    monkeypatch.setattr(_sources.Footers, "__init__", kept)
    monkeypatch.setattr(_sources.Footers, "KEPT_BYTES", 0)
    found = {}
    find = _sources.Source.find.__func__

    def finds(cls, given, side, footers=None):
        found[side] = find(cls, given, side, footers)
        return found[side]

    monkeypatch.setattr(_sources.Source, "find", classmethod(finds))
    left_keys = [[0, 25], [10, 15], [5, 20]] if mode == "regroup" else [[0, 5], [10, 15], [20, 25]]
    for side, column in (("l", "x"), ("r", "v")):
        (tmp_path / side).mkdir()
        for i in range(3):
            keys = left_keys[i] if side == "l" else [10 * i, 10 * i + 5]
            table = pa.table({"t": keys, column: [1.0 * i, 2.0 * i]})
            write(table, tmp_path / side / f"p{i}.parquet", row_group_size=1)
    flag = "stream" if mode == "regroup" else mode  # (LEFT out of order: regrouped)
    code, _, stderr = run(
        "enrich", tmp_path / "l", tmp_path / "r", "-o", tmp_path / "o", "--on", "t",
        "--device", "cpu", "--right-mode", flag, "--strategy", strategy, capsys=capsys,
    )  # fmt: skip
    assert code == 0, stderr
    assert ("LEFT's keys put in that order" in stderr) == (mode == "regroup")
    left, right = pq.read_table(tmp_path / "o" / "p2.parquet"), pq.read_table(tmp_path / "r")
    expected = ag.join_asof(
        pq.read_table(tmp_path / "l" / "p2.parquet"), right, on="t", strategy=strategy
    )
    assert left.equals(expected)
    (footers,) = runs
    assert footers.read_again == 0
    held = {side: [p.footer is not None for p in source.parts] for side, source in found.items()}
    assert held == {
        "LEFT": [dropped not in ("both", "LEFT")] * 3,
        "RIGHT": [dropped not in ("both", "RIGHT")] * 3,
    }


@pytest.mark.parametrize("mode", ["memory", "stream", "spill"])
def test_a_run_whose_footers_outgrow_their_budget_reads_them_again(
    tmp_path, capsys, monkeypatch, mode
):
    """Footers estimated past their share of --memory-limit (here each is, alone) are read
    again when asked for, and the run's output is the same."""
    from asofgpu.enrich import _sources

    monkeypatch.setattr(_sources, "FOOTER_CHUNK_BYTES", 1 << 40)
    monkeypatch.setattr(_sources.Footers, "RECENT", 1)  # only the one asked for last
    again = []
    hold = _sources.Footers.hold
    monkeypatch.setattr(
        _sources.Footers,
        "hold",
        lambda self, part, read=False: again.append(read) or hold(self, part, read),
    )
    (q0, t0), (q1, t1) = days()
    left, right = tmp_path / "trades", tmp_path / "quotes"
    write(t0, left / "a.parquet")
    write(t1, left / "b.parquet")
    quotes = pa.concat_tables([q0, q1]).sort_by("time")
    for i in range(3):
        write(quotes.slice(200 * i, 200), right / f"q{i}.parquet")
    _enrich_folders(left, right, tmp_path / "out", mode, capsys)
    for name, part in (("a.parquet", t0), ("b.parquet", t1)):
        expected = ag.join_asof(part, quotes, on="time", by="symbol", device="cpu")
        assert pq.read_table(tmp_path / "out" / name).equals(expected), name
    assert sum(again) >= 5  # (each file's footer read again once at least)


def _enrich_folders(left: Path, right: Path, out: Path, mode: str, capsys, by: str = "symbol"):
    """``asofgpu enrich`` of ``left`` and ``right`` into ``out`` on time by ``by`` on the
    cpu, RIGHT held as ``mode`` says, in chunks of 50 rows; checked to succeed."""
    code, _, stderr = run(
        "enrich", left, right, "-o", out, "--on", "time", "--by", by, "--device", "cpu",
        "--chunk-rows", 50, "--right-mode", mode, capsys=capsys,
    )  # fmt: skip
    assert code == 0, stderr


def _written_as(table: pa.Table, form: int) -> pa.Table:
    """``table`` (text as ``large_string``, lists as ``list``) as one of three writers might
    give it: text as ``string`` (pandas 2 writes it so), or ``large_string`` with lists as
    ``large_list`` of required items and the other columns required, or as views with the
    ``venue`` and ``desk`` columns as dictionaries."""
    fields = []
    for f in table.schema:
        if pa.types.is_large_string(f.type):
            text = [pa.string(), pa.large_string(), pa.string_view()][form]
            if form == 2 and f.name in ("venue", "desk"):
                text = pa.dictionary(pa.int32(), pa.string())
            fields.append(pa.field(f.name, text))
        elif pa.types.is_list(f.type):
            required = pa.field("item", pa.int64(), nullable=False)  # as Spark writes arrays
            fields.append(pa.field(f.name, pa.large_list(required) if form == 1 else f.type))
        else:
            fields.append(pa.field(f.name, f.type, nullable=form != 1))
    return table.cast(pa.schema(fields))


def _with(table: pa.Table, name: str, values, kind: pa.DataType) -> pa.Table:
    """``table`` with column ``name`` set (or appended) to ``values`` of type ``kind``."""
    column = pa.array(values, kind)
    if name in table.column_names:
        return table.set_column(table.schema.get_field_index(name), name, column)
    return table.append_column(name, column)


@needs_parquet_views
@pytest.mark.parametrize("mode", ["memory", "stream", "spill"])
def test_files_that_write_text_lists_and_dictionaries_alike_are_read_as_one(tmp_path, capsys, mode):
    """A folder whose files hold the same columns in other widths (string, large_string,
    views; list and large_list), as dictionaries or not, required or not, is joined as one
    source of the widest form, as polars and DuckDB read it; OUT holds that form."""
    (quotes, trades), _ = days()
    quotes = quotes.sort_by("time")  # RIGHT in time order, as the stream mode reads it
    n, m = quotes.num_rows, trades.num_rows
    quotes = _with(quotes, "symbol", quotes["symbol"].to_pylist(), pa.large_string())
    quotes = _with(quotes, "venue", [f"v{i % 4}" for i in range(n)], pa.large_string())
    quotes = _with(quotes, "hist", [[i, i + 1] for i in range(n)], pa.list_(pa.int64()))
    trades = _with(trades, "symbol", trades["symbol"].to_pylist(), pa.large_string())
    trades = _with(trades, "desk", [f"d{i % 3}" for i in range(m)], pa.large_string())
    left, right = tmp_path / "trades", tmp_path / "quotes"
    for form, rows in enumerate([(0, 70), (70, 140), (140, m)]):
        write(_written_as(trades.slice(rows[0], rows[1] - rows[0]), form), left / f"{form}.parquet")
        write(_written_as(quotes.slice(form * 100, 100), form), right / f"{form}.parquet")
    out = tmp_path / "out"
    _enrich_folders(left, right, out, mode, capsys)
    expected = ag.join_asof(trades, quotes, on="time", by="symbol", device="cpu")
    hist = expected.schema.get_field_index("hist")
    expected = expected.cast(expected.schema.set(hist, pa.field("hist", pa.large_list(pa.int64()))))
    got = pa.concat_tables(pq.read_table(out / f"{form}.parquet") for form in range(3))
    assert got.equals(expected)
    assert hidden(tmp_path) == []


@pytest.mark.parametrize("mode", ["memory", "stream", "spill"])
def test_files_that_order_their_columns_otherwise_are_read_by_name(tmp_path, capsys, mode):
    """Columns are matched by name, as polars and DuckDB match them: a file that holds them
    in another order is read in the first file's; OUT holds that order."""
    (quotes, trades), _ = days()
    quotes = quotes.sort_by("time")  # RIGHT in time order, as the stream mode reads it
    left, right = tmp_path / "trades", tmp_path / "quotes"
    for i in range(2):
        part, pieces = trades.slice(i * 100, 100), quotes.slice(i * 150, 150)
        if i:  # the second files: their columns reversed
            part, pieces = (t.select(t.column_names[::-1]) for t in (part, pieces))
        write(part, left / f"{i}.parquet")
        write(pieces, right / f"{i}.parquet")
    out = tmp_path / "out"
    _enrich_folders(left, right, out, mode, capsys)
    expected = ag.join_asof(trades, quotes, on="time", by="symbol", device="cpu")
    got = pa.concat_tables(pq.read_table(out / f"{i}.parquet") for i in range(2))
    assert got.equals(expected)
    assert hidden(tmp_path) == []


def _nulled(table: pa.Table, names: list[str]) -> tuple[pa.Table, pa.Table]:
    """``table`` with columns ``names`` all null: as values of their types (the oracle's),
    and as pandas writes a column of None (Arrow's type null)."""
    written = table
    for name in names:
        table = _with(table, name, [None] * table.num_rows, table.schema.field(name).type)
        written = _with(written, name, [None] * table.num_rows, pa.null())
    return table, written


@pytest.mark.parametrize("mode", ["memory", "stream", "spill"])
def test_a_column_of_nulls_in_some_files_takes_the_others_type(tmp_path, capsys, mode):
    """pandas writes a column holding only None as Arrow's type null: beside the same column
    of text or numbers in other files it is read as that type (polars and DuckDB refuse such
    a folder). Here RIGHT's key, its by column and two payload columns, and a LEFT column."""
    (quotes, trades), _ = days()
    quotes = quotes.sort_by("time").slice(0, 200)  # RIGHT in time order, for the stream
    quotes = _with(quotes, "venue", [f"v{i % 4}" for i in range(200)], pa.string())
    trades = _with(trades, "desk", [f"d{i % 3}" for i in range(trades.num_rows)], pa.string())
    left, right = tmp_path / "trades", tmp_path / "quotes"
    lefts, rights = [], []
    for i, (t, q, nulls) in enumerate(
        [(trades.slice(0, 100), quotes.slice(0, 80), ([], [])),
         (trades.slice(100), quotes.slice(80), (["desk"], ["symbol", "venue", "bid"]))]
    ):  # fmt: skip
        (t, t_written), (q, q_written) = _nulled(t, nulls[0]), _nulled(q, nulls[1])
        write(t_written, left / f"{i}.parquet")
        write(q_written, right / f"{i}.parquet")
        lefts.append(t)
        rights.append(q)
    # A file of RIGHT rows without keys, at the end: the stream finds no keys to order in it.
    q, q_written = _nulled(quotes.slice(0, 5), ["time"])
    write(q_written, right / "2.parquet")
    rights.append(q)
    assert pq.read_schema(right / "1.parquet").field("symbol").type == pa.null()
    out = tmp_path / "out"
    _enrich_folders(left, right, out, mode, capsys)
    expected = ag.join_asof(
        pa.concat_tables(lefts), pa.concat_tables(rights), on="time", by="symbol", device="cpu"
    )
    got = pa.concat_tables(pq.read_table(out / f"{i}.parquet") for i in range(2))
    assert got.equals(expected)
    assert hidden(tmp_path) == []


def test_hive_partitions_are_columns_and_keep_matches_within_a_day(tmp_path, capsys):
    (q0, t0), (q1, t1) = days()
    left, right = tmp_path / "trades", tmp_path / "quotes"
    for day, quotes, trades in (("2026-11-27", q0, t0), ("2026-11-30", q1, t1)):
        write(trades, left / f"date={day}" / "part-0.parquet")
        write(quotes, right / f"date={day}" / "part-0.parquet")
    out = tmp_path / "out"
    common = ["--on", "time", "--device", "cpu", "-q"]
    assert (
        run("enrich", left, right, "-o", out, "--by", "date,symbol", *common, capsys=capsys)[0] == 0
    )
    # The days' clocks overlap (marketdata uses one session), so without the date a trade of
    # the first day would take quotes of the second.
    quotes = pa.concat_tables(
        [with_column(q0, "date", "2026-11-27"), with_column(q1, "date", "2026-11-30")]
    )
    for day, trades in (("2026-11-27", t0), ("2026-11-30", t1)):
        expected = ag.join_asof(
            with_column(trades, "date", day), quotes, on="time", by=["date", "symbol"], device="cpu"
        ).drop_columns(["date"])
        got = pq.ParquetFile(out / f"date={day}" / "part-0.parquet").read()  # the file alone
        assert got.equals(expected)
        across = ag.join_asof(
            trades, pa.concat_tables([q0, q1]), on="time", by="symbol", device="cpu"
        )
        assert not got.equals(across)
    # read back as a hive dataset, OUT has the date column again
    assert pq.read_table(out).column_names[-1] == "date"


@pytest.mark.parametrize("mode", ["memory", "spill"])
def test_partition_folders_over_files_that_hold_their_column_read_the_column(
    tmp_path, capsys, mode
):
    """polars' partitioned writes keep the partition column in the files too: the files'
    column is read (its type kept), the folders' values checked against its statistics."""
    (q0, t0), (q1, t1) = days()
    left, right = tmp_path / "trades", tmp_path / "quotes"
    days_ = (("2026-11-27", q0, t0), ("2026-11-30", q1, t1), ("__HIVE_DEFAULT_PARTITION__", q1, t1))
    for day, quotes, trades in days_:
        value = None if day.startswith("__") else datetime.date.fromisoformat(day)
        write(
            _with(trades, "date", [value] * trades.num_rows, pa.date32()),
            left / f"date={day}" / "p.parquet",
        )
        write(
            _with(quotes, "date", [value] * quotes.num_rows, pa.date32()),
            right / f"date={day}" / "p.parquet",
        )
    out = tmp_path / "out"
    _enrich_folders(left, right, out, mode, capsys, by="date,symbol")
    quotes = pa.concat_tables(pq.ParquetFile(p).read() for p in sorted(right.rglob("*.parquet")))
    assert quotes.schema.field("date").type == pa.date32()
    for day, _, _ in days_:
        trades = pq.ParquetFile(left / f"date={day}" / "p.parquet").read()
        expected = ag.join_asof(trades, quotes, on="time", by=["date", "symbol"], device="cpu")
        assert pq.ParquetFile(out / f"date={day}" / "p.parquet").read().equals(expected)
    assert hidden(tmp_path) == []


def test_partition_folders_of_times_and_of_types_without_a_text_form(tmp_path, capsys):
    """Times are compared as times (polars names their folders p=12%3A00%3A01); a column of
    a type without a text form (fixed-size binary: DuckDB's intervals) is taken as it is."""
    right = write(pa.table({"t": [0, 4], "v": [1.0, 2.0]}), tmp_path / "r.parquet")
    left = tmp_path / "l"
    for folder, value in (("00%3A00%3A00", "00:00:00"), ("12%3A00%3A01", "12:00:01")):
        time = pa.array([datetime.time.fromisoformat(value)] * 2, pa.time64("us"))
        write(pa.table({"t": [1, 5], "p": time, "b": pa.array([b"ab"] * 2, pa.binary(2))}),
              left / f"p={folder}" / f"b={folder}" / "x.parquet")  # fmt: skip
    argv = ["enrich", left, right, "--on", "t", "--device", "cpu", "-q"]
    code, _, stderr = run(*argv, "-o", tmp_path / "out", capsys=capsys)
    assert code == 0, stderr
    got = pq.ParquetFile(tmp_path / "out" / "p=12%3A00%3A01" / "b=12%3A00%3A01" / "x.parquet")
    assert got.read()["p"].to_pylist() == [datetime.time(12, 0, 1)] * 2
    (left / "p=12%3A00%3A01").rename(left / "p=12%3A00%3A02")
    code, _, stderr = run(*argv, "-o", tmp_path / "out2", capsys=capsys)
    assert code == 2
    assert "partition folder p=12:00:02 disagrees with the column 'p' of its file " in stderr
    assert hidden(tmp_path) == []


def test_partition_folders_over_dictionary_columns_whose_statistics_say_too_much(tmp_path, capsys):
    """A file that keeps its folder's column as a dictionary (a pandas Categorical) sliced
    from a larger one with nulls: pyarrow's statistics of ['B', None] say 'A' to 'B', of
    [None, None] 'A' to 'A'. The column's values agree with the folders, and the run goes
    on; a folder its values contradict is still refused, by those values."""
    categorical = pa.DictionaryArray.from_arrays(
        pa.array([0, 0, 1, None, None, None], pa.int32()), pa.array(["A", "B"])
    )
    left_table = pa.table({"t": [1, 5, 2, 6, 3, 7], "symbol": categorical})
    left = tmp_path / "l"
    for folder, at in (("A", 0), ("B", 2), ("__HIVE_DEFAULT_PARTITION__", 4)):
        write(left_table.slice(at, 2), left / f"symbol={folder}" / "part-0.parquet")
    stats = pq.ParquetFile(left / "symbol=B" / "part-0.parquet").metadata.row_group(0)
    assert (stats.column(1).statistics.min, stats.column(1).statistics.max) == ("A", "B")
    right = write(
        pa.table({"t": [0, 0], "symbol": ["A", "B"], "v": [1.0, 2.0]}), tmp_path / "r.parquet"
    )
    argv = ["enrich", left, right, "--on", "t", "--by", "symbol", "--device", "cpu", "-q"]
    code, _, stderr = run(*argv, "-o", tmp_path / "out", capsys=capsys)
    assert code == 0, stderr
    got = {  # (a file alone: pyarrow 19's read_table takes its folder as a partition too)
        folder: pq.ParquetFile(tmp_path / "out" / f"symbol={folder}" / "part-0.parquet").read()
        for folder in ("A", "B", "__HIVE_DEFAULT_PARTITION__")
    }
    assert got["A"]["v"].to_pylist() == [1.0, 1.0]
    assert got["B"]["symbol"].to_pylist() == ["B", None]  # the file's own column
    assert got["B"]["v"].to_pylist() == [2.0, None]
    assert got["__HIVE_DEFAULT_PARTITION__"]["v"].to_pylist() == [None, None]
    (left / "symbol=B").rename(left / "symbol=C")
    code, _, stderr = run(*argv, "-o", tmp_path / "out2", capsys=capsys)
    assert code == 2
    assert (
        "LEFT partition folder symbol=C disagrees with the column 'symbol' of its file "
        "symbol=C/part-0.parquet, which holds B in row group 0;" in stderr
    )
    assert hidden(tmp_path) == []


def test_a_partition_folder_over_dates_past_pythons_is_not_compared(tmp_path, capsys):
    """A file's date column past year 9999 (which Python's dates do not reach) under a
    folder of a date: its statistics cannot be compared, and the file's values are taken
    as they are, as where a file has no statistics; no traceback."""
    late = pa.array([3_000_000, 3_000_000], pa.date32())  # (year 10183)
    write(pa.table({"t": [1, 2], "k": late}), tmp_path / "l" / "k=2026-01-01" / "p.parquet")
    right = write(pa.table({"t": [0], "v": [1.0]}), tmp_path / "r.parquet")
    argv = ["enrich", tmp_path / "l", right, "--on", "t", "--device", "cpu", "-q"]
    code, _, stderr = run(*argv, "-o", tmp_path / "out", capsys=capsys)
    assert code == 0, stderr
    got = pq.ParquetFile(tmp_path / "out" / "k=2026-01-01" / "p.parquet").read()
    assert got["k"].equals(pa.chunked_array([late])) and got["v"].to_pylist() == [1.0, 1.0]


def test_partition_folders_over_files_that_hold_their_duration_column(tmp_path, capsys):
    """A duration's folder is its count (``d=90``, as pyarrow writes it), compared with the
    files' column of that unit."""
    right = write(pa.table({"t": [0, 4], "v": [1.0, 2.0]}), tmp_path / "r.parquet")
    d = pa.array([90, 90], pa.duration("ms"))
    write(pa.table({"t": [1, 5], "d": d}), tmp_path / "l" / "d=90" / "x.parquet")
    argv = ["enrich", tmp_path / "l", right, "--on", "t", "--device", "cpu", "-q"]
    code, _, stderr = run(*argv, "-o", tmp_path / "out", capsys=capsys)
    assert code == 0, stderr
    got = pq.ParquetFile(tmp_path / "out" / "d=90" / "x.parquet").read()  # (no folder's d)
    assert got["d"].equals(pa.chunked_array([d])) and got["v"].to_pylist() == [1.0, 2.0]
    (tmp_path / "l" / "d=90").rename(tmp_path / "l" / "d=91")
    code, _, stderr = run(*argv, "-o", tmp_path / "out2", capsys=capsys)
    assert code == 2
    assert "partition folder d=91 disagrees with the column 'd' of its file " in stderr
    assert "which holds 90 in row group 0" in stderr  # a count, as the folder is named
    # Past int64, and what int() alone reads as the column's count: refused, not a traceback
    # nor taken; a count of 19 digits within int64 is one.
    cases = [("99999999999999999999", 90, 2), ("1_000", 1000, 2), ("\u0661\u0662", 12, 2)]
    cases.append(("1000000000000000000", 10**18, 0))
    for count, value, exit_code in cases:
        shutil.rmtree(tmp_path / "l")
        column = pa.array([value] * 2, pa.duration("ns"))
        write(pa.table({"t": [1, 5], "d": column}), tmp_path / "l" / f"d={count}" / "x.parquet")
        code, _, stderr = run(*argv, "-o", tmp_path / f"out-{value}", capsys=capsys)
        assert code == exit_code, (count, stderr)
        assert exit_code == 0 or f"partition folder d={count} disagrees" in stderr, stderr


def test_whole_number_partitions_are_int64_and_nulls_match_nothing(tmp_path, capsys):
    right = tmp_path / "r"
    write(pa.table({"t": [1, 1], "v": [10.0, 20.0]}).slice(0, 1), right / "venue=7" / "x.parquet")
    write(
        pa.table({"t": [1], "v": [30.0]}), right / "venue=__HIVE_DEFAULT_PARTITION__" / "x.parquet"
    )
    left = tmp_path / "l"
    write(pa.table({"t": [5]}), left / "venue=7" / "y.parquet")
    write(pa.table({"t": [5]}), left / "venue=__HIVE_DEFAULT_PARTITION__" / "y.parquet")
    write(pa.table({"t": [5]}), left / "venue=8" / "y.parquet")
    out = tmp_path / "out"
    assert (
        run(
            "enrich",
            left,
            right,
            "-o",
            out,
            "--on",
            "t",
            "--by",
            "venue",
            "--device",
            "cpu",
            "-q",
            capsys=capsys,
        )[0]
        == 0
    )
    got = {p.parent.name: pq.ParquetFile(p).read()["v"].to_pylist() for p in out.rglob("*.parquet")}
    assert got == {"venue=7": [10.0], "venue=8": [None], "venue=__HIVE_DEFAULT_PARTITION__": [None]}
    from asofgpu.enrich._sources import Source

    assert Source.find(right, "RIGHT").schema.field("venue").type == pa.int64()


def test_a_by_partition_of_null_folders_only_takes_the_other_sides_type(tmp_path, capsys):
    # Nothing types a partition whose every folder is __HIVE_DEFAULT_PARTITION__ (polars reads
    # it as string, pyarrow's datasets refuse it): it was refused against LEFT's int64 venue.
    right = tmp_path / "r"
    write(
        pa.table({"t": [1], "v": [30.0]}), right / "venue=__HIVE_DEFAULT_PARTITION__" / "x.parquet"
    )
    left = tmp_path / "l"
    write(pa.table({"t": [5]}), left / "venue=7" / "y.parquet")
    argv = ("--on", "t", "--by", "venue", "--device", "cpu", "-q")
    assert run("enrich", left, right, "-o", tmp_path / "out", *argv, capsys=capsys)[0] == 0
    got = pq.ParquetFile(tmp_path / "out" / "venue=7" / "y.parquet").read()
    assert got["v"].to_pylist() == [None]
    # and the other way round: LEFT's null folders against RIGHT's int venue column
    write(pa.table({"t": [1], "venue": [7], "v": [30.0]}), tmp_path / "q.parquet")
    code, _, stderr = run(
        "enrich", right, tmp_path / "q.parquet", "-o", tmp_path / "o2", *argv, capsys=capsys
    )
    assert (code, stderr) == (0, "")
    got = pq.ParquetFile(tmp_path / "o2" / "venue=__HIVE_DEFAULT_PARTITION__" / "x.parquet")
    assert got.read()["v_right"].to_pylist() == [None]
    # two sides of null folders only stay strings (and match nothing)
    code, _, stderr = run("enrich", right, right, "-o", tmp_path / "o3", *argv, capsys=capsys)
    assert (code, stderr) == (0, "")


def _v_by_folder(tmp_path, capsys, out: str, *argv) -> dict:
    """enrich of LEFT folder ``l`` with ``right.parquet`` into folder ``out``: the attached
    ``v`` of each of OUT's partition folders."""
    code, _, stderr = run(
        "enrich",
        tmp_path / "l",
        tmp_path / "right.parquet",
        "-o",
        tmp_path / out,
        *argv,
        capsys=capsys,
    )
    assert (code, stderr) == (0, "")
    files = (tmp_path / out).rglob("*.parquet")
    return {p.parent.name: pq.ParquetFile(p).read()["v"].to_pylist() for p in files}


@pytest.mark.parametrize(
    ("folders", "kind"),
    [
        (["0", "1", "2"], pa.int32()),
        (["2026-11-26", "2026-11-27", "2026-11-28"], pa.date32()),
        (["0", "90", "-5"], pa.duration("ms")),  # (pyarrow's write_dataset writes counts)
    ],
)
def test_a_by_partition_takes_the_type_of_the_column_it_meets(tmp_path, capsys, folders, kind):
    """Folders ``g=0`` (int64) or ``g=2026-11-27`` (string) beside the other side's int32 or
    date32 column ``g`` were refused ("cannot be compared ... Hint: cast one of them", of a
    column that is a folder name): the partition takes the column's type where each folder
    value is one of it, on either side; a value that is not is refused by its folder's name."""
    numbers = pa.types.is_duration(kind)  # (pyarrow casts no text to durations)
    values = pa.array([int(g) for g in folders] if numbers else folders).cast(kind)
    for g in folders:
        write(pa.table({"t": [10, 20]}), tmp_path / "l" / f"g={g}" / "p.parquet")
        write(pa.table({"t": [5, 25], "v": [1.0, 2.0]}), tmp_path / "r" / f"g={g}" / "p.parquet")
    flat = pa.table({"t": [5, 15, 5], "g": values, "v": [1.0, 2.0, 3.0]})
    write(flat, tmp_path / "right.parquet")
    write(pa.table({"t": [10, 20, 10], "g": values}), tmp_path / "left.parquet")
    argv = ("--on", "t", "--by", "g", "--device", "cpu", "-q")
    assert _v_by_folder(tmp_path, capsys, "o1", *argv) == {
        f"g={folders[0]}": [1.0, 1.0],
        f"g={folders[1]}": [None, 2.0],
        f"g={folders[2]}": [3.0, 3.0],
    }
    code, _, stderr = enrich_in(  # RIGHT's folders against LEFT's column
        tmp_path, "-q", capsys=capsys, left="left.parquet", right="r", out="o2.parquet"
    )
    assert (code, stderr) == (0, "")
    assert pq.read_table(tmp_path / "o2.parquet")["v"].to_pylist() == [1.0, 1.0, 1.0]
    write(pa.table({"t": [10]}), tmp_path / "l" / "g=x" / "p.parquet")  # not an int32 or date
    code, _, stderr = enrich_in(
        tmp_path, "-q", capsys=capsys, left="l", right="right.parquet", out="o3"
    )
    assert code == 2 and stderr == (
        f"asofgpu enrich: error: LEFT partition folder g=x is no {kind} value, the type of "
        f"RIGHT column 'g' it is joined by. Hint: rename the folder, or write RIGHT's 'g' as "
        f"a type of the folders' values\n"
    )


@pytest.mark.parametrize("mode", ["memory", "stream", "spill"])
@pytest.mark.parametrize(
    "text", [pa.large_string(), pytest.param(pa.string_view(), marks=needs_parquet_views)]
)
def test_by_partitions_beside_text_of_other_widths_stay_text(tmp_path, capsys, mode, text):
    """Folders ``g=a`` (string) or ``g=1`` (int64) beside the other side's large_string or
    view column ``g``: a first version took the column's type as it was, and streamed or
    spilled, dictionaries of string met dictionaries of large_string (a traceback); views
    had no take. Text folders stay string, which compares with text of any width; whole
    numbers are read as text there."""
    for g in ("a", "1"):
        write(pa.table({"t": [10, 20]}), tmp_path / "l" / f"g={g}" / "p.parquet")
    right = pa.table({"t": [5, 5, 15], "g": pa.array(["a", "1", "a"], text), "v": [1.0, 3, 2]})
    write(right, tmp_path / "right.parquet")
    argv = ("--on", "t", "--by", "g", "--device", "cpu", "-q", "--right-mode", mode)
    assert _v_by_folder(tmp_path, capsys, "o", *argv) == {"g=a": [1.0, 2.0], "g=1": [3.0, 3.0]}


def test_a_folder_value_a_type_would_cut_is_not_read_as_it(tmp_path, capsys):
    """``g=12:00:01.0005`` beside a time32[ms] column: read as that type it was cut to
    12:00:01.000 and matched its rows; it is refused, by its folder's name."""
    write(pa.table({"t": [10]}), tmp_path / "l" / "g=12:00:01.0005" / "p.parquet")
    import datetime

    right = pa.table(
        {"t": [5], "g": pa.array([datetime.time(12, 0, 1)], pa.time32("ms")), "v": [1.0]}
    )
    write(right, tmp_path / "right.parquet")
    code, _, stderr = enrich_in(
        tmp_path, "-q", capsys=capsys, left="l", right="right.parquet", out="o"
    )
    assert code == 2 and "LEFT partition folder g=12:00:01.0005 is no time32[ms] value" in stderr


@pytest.mark.parametrize("mode", ["memory", "spill"])
@pytest.mark.parametrize("digits", ["LEFT", "RIGHT"])
def test_by_folders_of_digits_beside_folders_of_text_are_text(tmp_path, capsys, mode, digits):
    """g=7203 and g=007 on one side (int64: every value a whole number) beside g=7203,
    g=AAPL and g=7 on the other (string) were refused as int64 against string, "Hint: cast
    one of them", which no folder can be: both are text, 007 as 007 (no match for it)."""
    ones, others = ["7203", "007"], ["7203", "AAPL", "7"]
    left_folders, right_folders = (ones, others) if digits == "LEFT" else (others, ones)
    for g in left_folders:
        write(pa.table({"t": [10]}), tmp_path / "l" / f"g={g}" / "p.parquet")
    for v, g in enumerate(right_folders):
        write(pa.table({"t": [5], "v": [float(v)]}), tmp_path / "r" / f"g={g}" / "p.parquet")
    code, _, stderr = enrich_in(
        tmp_path, "-q", "--right-mode", mode, capsys=capsys, left="l", right="r", out="o"
    )
    assert (code, stderr) == (0, "")
    got = _v_by_folder_of(tmp_path / "o")
    want = {
        g: [float(right_folders.index(g))] if g in right_folders else [None] for g in left_folders
    }
    assert got == {f"g={g}": v for g, v in want.items()}


def test_by_folders_of_digits_beside_text_none_shares_are_still_refused(tmp_path, capsys):
    """day=20261127 beside day=2026-11-27: two spellings of one day, none named as one of
    the other side's. As text they would match nothing, silently: refused, as before."""
    write(pa.table({"t": [10]}), tmp_path / "l" / "g=20261127" / "p.parquet")
    write(pa.table({"t": [5], "v": [1.0]}), tmp_path / "r" / "g=2026-11-27" / "p.parquet")
    code, _, stderr = enrich_in(tmp_path, "-q", capsys=capsys, left="l", right="r", out="o")
    assert code == 2 and "cannot be compared" in stderr and not (tmp_path / "o").exists()


def _v_by_folder_of(out: Path) -> dict:
    return {
        p.parent.name: pq.read_table(p, partitioning=None)["v"].to_pylist()
        for p in sorted(out.rglob("*.parquet"))
    }


@pytest.mark.parametrize("mode", ["auto", "memory", "stream", "spill"])
def test_the_key_may_be_a_left_partition_folder(tmp_path, capsys, mode):
    """``--on day`` where LEFT's days are folders day=20261127: the key was read as the
    one-value dictionary a by-column of folders is read as, and refused ("must be an
    integer ... column, got dictionary") where RIGHT was held in memory."""
    for day, rows in ((20261127, ["A", "B"]), (20261130, ["A", "B"])):
        left = pa.table({"symbol": rows, "px": [1.0, 2.0]})
        write(left, tmp_path / "l" / f"day={day}" / "p.parquet")
    right = pa.table(
        {
            "day": [20261126, 20261126, 20261128, 20261128],
            "symbol": ["A", "B", "A", "B"],
            "close": [10.0, 30.0, 20.0, 40.0],
        }
    )
    write(right, tmp_path / "r.parquet")
    code, _, stderr = enrich_in(
        tmp_path,
        "-q",
        "--right-mode",
        mode,
        capsys=capsys,
        on="day",
        by="symbol",
        left="l",
        out="o",
    )
    assert (code, stderr) == (0, "")
    got = {
        p.parent.name: pq.read_table(p, partitioning=None)["close"].to_pylist()
        for p in sorted((tmp_path / "o").rglob("*.parquet"))
    }
    assert got == {"day=20261127": [10.0, 30.0], "day=20261130": [20.0, 40.0]}


@pytest.mark.parametrize("mode", ["memory", "stream", "spill"])
def test_a_key_of_date_folders_takes_the_type_of_the_other_sides_key(tmp_path, capsys, mode):
    """``--on date`` over LEFT's date=2026-11-27 folders (text, as folders of anything but
    whole numbers are) beside RIGHT's date32 ``date``: the folders are dates, as a by-column
    of folders takes the type of the column it meets (refused before: "got string")."""
    for day in ("2026-11-27", "2026-11-30"):
        write(pa.table({"g": ["a", "b"]}), tmp_path / "l" / f"date={day}" / "p.parquet")
    days = [datetime.date(2026, 11, d) for d in (26, 26, 28, 28)]
    right = pa.table({"date": days, "g": ["a", "b", "a", "b"], "v": [1.0, 2.0, 3.0, 4.0]})
    write(right, tmp_path / "r.parquet")
    code, _, stderr = enrich_in(
        tmp_path, "-q", "--right-mode", mode, capsys=capsys, on="date", left="l", out="o"
    )
    assert (code, stderr) == (0, "")
    got = {
        p.parent.name: pq.read_table(p, partitioning=None)["v"].to_pylist()
        for p in sorted((tmp_path / "o").rglob("*.parquet"))
    }
    assert got == {"date=2026-11-27": [1.0, 2.0], "date=2026-11-30": [3.0, 4.0]}


def test_a_key_of_date_folders_beside_a_key_of_text_is_refused_as_that_text(tmp_path, capsys):
    """Where the other side's files hold the key, as text, the folders take that type, and
    the refusal names that column: not the folders, whose other side does hold a key."""
    write(pa.table({"g": ["a"]}), tmp_path / "l" / "date=2026-11-27" / "p.parquet")
    write(pa.table({"date": ["2026-11-26"], "g": ["a"], "v": [1.0]}), tmp_path / "r.parquet")
    code, _, stderr = enrich_in(tmp_path, capsys=capsys, on="date", left="l", out="o")
    assert (code, stderr) == (
        2,
        "asofgpu enrich: error: RIGHT column 'date' must be an integer, float, date, time, "
        "timestamp or duration column, got string\n",
    )


def test_a_key_of_text_folders_on_both_sides_is_refused_by_its_folder(tmp_path, capsys):
    """Folders of dates on both sides: nothing types them but their own text, and the
    refusal names the folder, not a column of strings."""
    write(pa.table({"g": ["a"]}), tmp_path / "l" / "date=2026-11-27" / "p.parquet")
    write(pa.table({"g": ["a"], "v": [1.0]}), tmp_path / "r" / "date=2026-11-26" / "p.parquet")
    code, _, stderr = enrich_in(tmp_path, capsys=capsys, on="date", left="l", right="r", out="o")
    assert code == 2
    assert stderr == (
        "asofgpu enrich: error: LEFT's key 'date' is a partition folder (date=2026-11-27), "
        "read as text, which no key is: a folder key takes the type of the other side's "
        "column of it, and the other side's files hold none. Hint: write the key into the "
        "files of one side\n"
    )
    assert hidden(tmp_path) == [] and not (tmp_path / "o").exists()


@pytest.mark.parametrize("mode", ["memory", "spill"])
@pytest.mark.parametrize("kind", [pa.float32(), pa.float64()])
def test_float_by_folders_take_nan_and_negative_zero_as_the_column_does(
    tmp_path, capsys, kind, mode
):
    """RIGHT in folders g=nan, g=-0 and g=1.5 (pyarrow's names for those floats) beside
    LEFT's float column g: NaN was refused as "no double value" (no NaN equals itself); all
    NaNs are one group, and -0.0 is 0.0, as in every join."""
    for g, v in (("nan", 1.0), ("-0", 2.0), ("1.5", 3.0)):
        write(pa.table({"t": [0.0], "v": [v]}), tmp_path / "r" / f"g={g}" / "p.parquet")
    left = pa.table({"t": [1.0, 1.0, 1.0, 1.0], "g": pa.array([1.5, np.nan, 0.0, 2.0], kind)})
    write(left, tmp_path / "l.parquet")
    code, _, stderr = enrich_in(tmp_path, "-q", "--right-mode", mode, capsys=capsys, right="r")
    assert (code, stderr) == (0, "")
    assert pq.read_table(tmp_path / "o.parquet")["v"].to_pylist() == [3.0, 1.0, 2.0, None]


def test_a_folder_value_a_narrow_float_would_round_is_not_read_as_it(tmp_path, capsys):
    """g=16777217 beside LEFT's float32 g: read as float32 it became 16777216 and matched
    LEFT's rows of that value, silently; it is refused by its folder's name, where g=0.1
    (pyarrow's name for float32's 0.1) is float32's 0.1."""
    for g in ("0.1", "16777217"):
        write(pa.table({"t": [0.0], "v": [1.0]}), tmp_path / "r" / f"g={g}" / "p.parquet")
    left = pa.table({"t": [1.0, 1.0], "g": pa.array([0.1, 16777216.0], pa.float32())})
    write(left, tmp_path / "l.parquet")
    code, _, stderr = enrich_in(tmp_path, "-q", capsys=capsys, right="r")
    assert code == 2 and stderr == (
        "asofgpu enrich: error: RIGHT partition folder g=16777217 is no float value, the "
        "type of LEFT column 'g' it is joined by. Hint: rename the folder, or write LEFT's "
        "'g' as a type of the folders' values\n"
    )
    shutil.rmtree(tmp_path / "r" / "g=16777217")
    code, _, stderr = enrich_in(tmp_path, "-q", capsys=capsys, right="r")
    assert (code, stderr) == (0, "")
    assert pq.read_table(tmp_path / "o.parquet")["v"].to_pylist() == [1.0, None]


@pytest.mark.parametrize("folder", ["9007199254740993", "1e400", "0.1000000000000000001"])
def test_a_folder_value_a_double_would_round_is_not_read_as_it(tmp_path, capsys, folder):
    """A double rounds text too: 2**53 + 1 to 2**53, 1e400 to inf, twenty digits of 0.1 to
    0.1; each matched the rows of what it became. Refused by the folder's name."""
    write(pa.table({"t": [0.0], "v": [1.0]}), tmp_path / "r" / f"g={folder}" / "p.parquet")
    left = pa.table({"t": [1.0, 1.0, 1.0], "g": [2.0**53, float("inf"), 0.1]})
    write(left, tmp_path / "l.parquet")
    code, _, stderr = enrich_in(tmp_path, "-q", capsys=capsys, right="r")
    assert code == 2 and f"RIGHT partition folder g={folder} is no double value" in stderr


@pytest.mark.parametrize("kind", ["uuid", "json"])
def test_folders_over_files_that_hold_their_uuid_or_json_column(tmp_path, capsys, kind):
    """Partition folders of a UUID or JSON column the files hold (polars and DuckDB write
    both): the column is read as Arrow's extension type, whose folders' text no statistics
    compare with (UUID), or whose statistics are bytes (JSON): they were refused as
    disagreeing with their column."""
    for i in (1, 2):
        if kind == "uuid":
            folder, column = f"00000000-0000-0000-0000-00000000000{i}", pa.uuid()
            one = bytes(15) + bytes([i])
        else:
            folder, column = str(i), pa.json_()
            one = str(i)
        rows = pa.table({"t": [4 + i], "u": pa.array([one], column), "v": [float(i)]})
        write(rows, tmp_path / "r" / f"u={folder}" / "p.parquet")
    write(pa.table({"t": [10]}), tmp_path / "l.parquet")
    code, _, stderr = enrich_in(tmp_path, "-q", capsys=capsys, by=None, right="r")
    assert (code, stderr) == (0, "")
    got = pq.read_table(tmp_path / "o.parquet")
    assert got["v"].to_pylist() == [2.0] and got.schema.field("u").type == column


def test_a_glob_names_files_and_a_single_left_file_gives_a_file(tmp_path, capsys):
    (q0, t0), (q1, _) = days()
    write(q0, tmp_path / "day" / "a" / "quotes-1.parquet")
    write(q1, tmp_path / "day" / "b" / "quotes-2.parquet")
    write(q1, tmp_path / "day" / "b" / "other.parquet")  # not matched by the glob
    trades = write(t0, tmp_path / "trades.parquet")
    out = tmp_path / "o.parquet"
    pattern = os.path.join(tmp_path, "day", "*", "quotes-*.parquet")
    assert (
        run(
            "enrich",
            trades,
            pattern,
            "-o",
            out,
            "--on",
            "time",
            "--by",
            "symbol",
            "--device",
            "cpu",
            "-q",
            capsys=capsys,
        )[0]
        == 0
    )
    expected = ag.join_asof(t0, pa.concat_tables([q0, q1]), on="time", by="symbol", device="cpu")
    assert pq.read_table(out).equals(expected)


def test_an_existing_out_folder_of_enrich_is_replaced_whole(tmp_path, capsys):
    (q0, t0), _ = days()
    left = tmp_path / "trades"
    write(t0.slice(0, 100), left / "a.parquet")
    write(t0.slice(100), left / "b.parquet")
    quotes = write(q0, tmp_path / "quotes.parquet")
    out = tmp_path / "out"
    argv = ["enrich", left, quotes, "-o", out, "--on", "time", "--device", "cpu", "-q"]
    assert run(*argv, capsys=capsys)[0] == 0
    (left / "b.parquet").unlink()
    assert run(*argv, capsys=capsys)[0] == 0
    assert sorted(p.name for p in out.iterdir()) == ["a.parquet"]  # each file's footer says
    assert written_by_enrich(out / "a.parquet")  # enrich wrote it: no marker file in OUT
    assert hidden(tmp_path) == []
    # polars reads a folder of parquet files only (a marker file in it made polars refuse it)
    pl = pytest.importorskip("polars")
    assert pl.read_parquet(out).height == 100


def test_an_out_folder_is_checked_once_when_the_run_begins(tmp_path, capsys, monkeypatch):
    """Each footer of the OUT folder a run replaces is read once, as the run begins: the
    check that refuses a folder enrich did not write gives the commit its listing, and the
    commit reads only what came in since (nothing here)."""
    from asofgpu.enrich import _output

    (q0, t0), _ = days()
    left = tmp_path / "trades"
    for i in range(3):
        write(t0.slice(50 * i, 50), left / f"{i}.parquet")
    quotes = write(q0, tmp_path / "quotes.parquet")
    out = tmp_path / "out"
    argv = ["enrich", left, quotes, "-o", out, "--on", "time", "--device", "cpu", "-q"]
    assert run(*argv, capsys=capsys)[0] == 0
    real, read = _output.written_by_enrich, []
    monkeypatch.setattr(_output, "written_by_enrich", lambda path: read.append(path) or real(path))
    (out / "new.parquet").write_bytes((out / "0.parquet").read_bytes())
    assert run(*argv, capsys=capsys)[0] == 0
    names = sorted(os.path.relpath(path, out) for path in read)
    assert names == ["0.parquet", "1.parquet", "2.parquet", "new.parquet"]
    assert sorted(p.name for p in out.iterdir()) == ["0.parquet", "1.parquet", "2.parquet"]


def _right_and_an_earlier_out(tmp_path):
    """A one-row RIGHT, and the OUT folder an earlier run left, holding "the previous
    result"."""
    right = write(
        pa.table({"t": pa.array([0], pa.timestamp("ns")), "v": [1]}), tmp_path / "r.parquet"
    )
    out = tmp_path / "out"
    out.mkdir()
    (out / "_ASOFGPU_ENRICH").write_text("an earlier run")
    (out / "old.parquet").write_text("the previous result")
    return right, out


def test_a_failure_midway_keeps_the_old_out_folder_and_leaves_nothing(tmp_path, capsys):
    """The second LEFT file holds a time that overflows nanoseconds: found only when read."""
    left = tmp_path / "l"
    write(pa.table({"t": pa.array(np.arange(50), pa.timestamp("s"))}), left / "1.parquet")
    bad = np.arange(50)
    bad[30] = 40_000 * 365 * 86_400
    write(pa.table({"t": pa.array(bad, pa.timestamp("s"))}), left / "2.parquet")
    right, out = _right_and_an_earlier_out(tmp_path)
    code, _, stderr = run(
        "enrich", left, right, "-o", out, "--on", "t", "--device", "cpu", "-q", capsys=capsys
    )
    assert code == 2 and "overflow" in stderr
    assert (out / "old.parquet").read_text() == "the previous result"
    assert hidden(tmp_path) == []


@pytest.mark.parametrize("chunk_rows", ["50", "1000"])  # a run a file; all three together
def test_an_out_file_that_cannot_be_made_fails_the_run_and_leaves_nothing(
    tmp_path, capsys, monkeypatch, chunk_rows
):
    """OUT's files are made on the writers' threads (a stitcher's appending thread, or the
    encoding pool where files joined together are written whole): the second one refused
    is still the command's one-line error, and the old OUT folder stays."""
    from asofgpu.enrich import _output

    left = tmp_path / "l"
    for name in ("1", "2", "3"):
        write(pa.table({"t": pa.array(np.arange(50), pa.timestamp("s"))}), left / f"{name}.parquet")
    right, out = _right_and_an_earlier_out(tmp_path)
    real_path_for = _output.AtomicFolder.path_for

    def path_for(folder, relative):  # the second file's, in a folder that is not there
        path = real_path_for(folder, relative)
        return os.path.join(path + ".gone", "2.parquet") if relative == "2.parquet" else path

    monkeypatch.setattr(_output.AtomicFolder, "path_for", path_for)
    code, _, stderr = run(
        "enrich", left, right, "-o", out, "--on", "t", "--chunk-rows", chunk_rows,
        "--device", "cpu", "-q", capsys=capsys,
    )  # fmt: skip
    assert code == 1
    last = stderr.splitlines()[-1]
    assert last.startswith(f"asofgpu enrich: error: cannot write OUT {out}: "), last
    assert "No such file or directory" in last and last.endswith("; nothing was written")
    assert (out / "old.parquet").read_text() == "the previous result"
    assert hidden(tmp_path) == []


def test_out_beside_a_glob_is_refused_only_where_the_glob_would_read_it(
    tmp_path, capsys, monkeypatch
):
    """A glob stood for its whole fixed folder: 'trades_*.parquet' refused every OUT under
    the working folder, calling the glob a folder. Only an OUT the glob matches is refused."""
    monkeypatch.chdir(tmp_path)
    for i in (1, 2):
        write(pa.table({"t": [1, 2, 3], "s": ["a", "b", "a"]}), tmp_path / f"trades_{i}.parquet")
    write(pa.table({"t": [0, 2], "s": ["a", "b"], "v": [1, 2]}), tmp_path / "quotes.parquet")
    (tmp_path / "outs").mkdir()
    keys = ["--on", "t", "--by", "s", "--device", "cpu", "-q"]
    for left, right, out, message in (
        (
            "trades_1.parquet",
            "quot*.parquet",
            "quotes_out.parquet",
            "OUT quotes_out.parquet is matched by the RIGHT glob 'quot*.parquet'; write it "
            "elsewhere, or a later run would read it as input",
        ),
        (
            "**/trades_*.parquet",
            "quotes.parquet",
            "outs/deep",
            "OUT outs/deep would hold {tmp}/outs/deep/trades_1.parquet, which is matched by the "
            "LEFT glob '**/trades_*.parquet'",
        ),
    ):
        code, stdout, stderr = run("enrich", left, right, "-o", out, *keys, capsys=capsys)
        assert code == 2 and stdout == "" and stderr.count("\n") == 1
        assert message.format(tmp=os.path.realpath(tmp_path)) in stderr
        assert not os.path.exists(out)
    for left, right, out in (
        ("trades_*.parquet", "quotes.parquet", "outs/enriched"),
        ("trades_1.parquet", "quot*.parquet", "outs/e.parquet"),
        ("trades_*.parquet", "quotes.parquet", "trades_out"),  # OUT/trades_1.parquet: no match
    ):
        code, _, stderr = run("enrich", left, right, "-o", out, *keys, capsys=capsys)
        assert code == 0, stderr
        assert pq.read_table(out if out.endswith(".parquet") else f"{out}/trades_2.parquet")[
            "v"
        ].to_pylist() == [1, 2, 1]


@pytest.mark.parametrize("end", ["/", "/."])
def test_out_ending_in_a_slash_for_one_left_file_is_refused(tmp_path, capsys, end):
    """'-o newdir/' (and 'newdir/.') wrote a file named newdir: realpath dropped the end."""
    left = write(pa.table({"t": [1, 2]}), tmp_path / "l.parquet")
    right = write(pa.table({"t": [1], "v": [1.0]}), tmp_path / "r.parquet")
    out = f"{tmp_path}/newdir{end}"
    code, stdout, stderr = run("enrich", left, right, "-o", out, "--on", "t", capsys=capsys)
    assert code == 2 and stdout == ""
    assert (
        f"OUT {out} names a folder (it ends in {end[-1]}), but LEFT is one file, so OUT is one "
        f"file too; pass a file path, e.g. -o {os.path.join(out, 'enriched.parquet')}"
    ) in stderr
    assert not os.path.exists(tmp_path / "newdir")


def test_globs_that_climb_or_pass_links_still_keep_out_from_their_matches(tmp_path, capsys):
    """A '..' after a wildcard, and OUT named through a link the glob passes, were not
    matched (the check compared resolved paths name by name), so a later run would have
    read OUT as input."""
    left = write(pa.table({"t": [1, 2]}), tmp_path / "l.parquet")
    write(pa.table({"t": [1], "v": [1.0]}), tmp_path / "q" / "a" / "r.parquet")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "q" / "link").symlink_to(tmp_path / "elsewhere")
    for right, out in (
        (f"{tmp_path}/q/*/../*/r.parquet", tmp_path / "q" / "b" / "r.parquet"),
        (f"{tmp_path}/q/*/*.parquet", tmp_path / "q" / "link" / "o.parquet"),
    ):
        out.parent.mkdir(exist_ok=True)
        code, _, stderr = run("enrich", left, right, "-o", out, "--on", "t", capsys=capsys)
        assert code == 2 and f"is matched by the RIGHT glob {right!r}" in stderr, stderr
        assert not out.exists()


def test_an_absolute_glob_with_a_wildcard_first_writes_inside_out(tmp_path, capsys):
    """'/tm*/...': the glob's fixed folder was taken as '.', so each output file's path
    relative to it climbed out of OUT, and enrich wrote beside the inputs instead."""
    real = os.path.realpath(tmp_path)
    first, rest = real.lstrip(os.sep).split(os.sep, 1)
    for day in ("d1", "d2"):
        write(pa.table({"t": [1, 2]}), Path(real) / "in" / day / "x.parquet")
    right = write(pa.table({"t": [1], "v": [1.0]}), tmp_path / "r.parquet")
    pattern = f"{os.sep}{first[0]}*{os.sep}{rest}/in/*/x.parquet"
    out = tmp_path / "out"
    before = sorted(p for p in Path(real).rglob("*") if p.is_file())
    code, _, stderr = run("enrich", pattern, right, "-o", out, "--on", "t", "-q", capsys=capsys)
    assert code == 0, stderr
    written = sorted(p for p in Path(real).rglob("*.parquet") if p.is_file() and p not in before)
    assert len(written) == 2 and all(out in p.parents for p in written), written


@pytest.mark.parametrize(
    ("case", "message"),
    [
        (
            "schemas",
            "LEFT files disagree on their columns: {l}/a.parquet has t: int64, "
            "{l}/b.parquet has t: double",
        ),
        (
            "clash",
            "LEFT partition folder t=3 disagrees with the column 't' of its file t=3/b.parquet, "
            "which holds 1 to 2 in row group 0; the folder and the column must say the same",
        ),
        (
            "clash-null",
            "LEFT partition folder t=__HIVE_DEFAULT_PARTITION__ disagrees with the column 't' "
            "of its file t=__HIVE_DEFAULT_PARTITION__/b.parquet, which holds 1 to 2 in row "
            "group 0;",
        ),
        (
            "clash-type",
            "LEFT partition folder t=x disagrees with the column 't' of its file t=x/b.parquet "
            "(int64), which cannot hold 'x'; the folder and the column must say the same",
        ),
        (
            "mixed",
            "LEFT files sit in different partition folders: a.parquet has no partition "
            "folders, d=1/b.parquet has d=",
        ),
        ("out-is-a-file", "OUT {out} is not a folder; LEFT is a folder or glob"),
        (
            "out-is-foreign",
            "OUT {out} is a folder that asofgpu enrich did not write (thesis.tex in it is "
            "not a file of enrich's); pass a new path, or remove it first",
        ),
        (
            "out-of-other-parquet",  # a parquet file enrich did not write: the user's own
            "OUT {out} is a folder that asofgpu enrich did not write (sub/data.parquet in it "
            "is not a file of enrich's); pass a new path, or remove it first",
        ),
        ("out-inside-left", "OUT {l}/out is inside the LEFT folder {l}"),
        (
            "fifo",  # its open waited for a writer, deaf to Ctrl-C and SIGTERM
            "LEFT folder {l} holds b.parquet, which is not a regular file (a FIFO, a device, "
            "or a link to nothing)",
        ),
        (
            "dangling-link",
            "LEFT folder {l} holds b.parquet, which is not a regular file (a FIFO, a device, "
            "or a link to nothing)",
        ),
    ],
)
def test_bad_folders_exit_2_with_one_line(tmp_path, capsys, case, message):
    left, out = tmp_path / "l", tmp_path / "out"
    write(pa.table({"t": [1, 2]}), left / "a.parquet")
    right = write(pa.table({"t": [1], "v": [1.0]}), tmp_path / "r.parquet")
    if case == "schemas":
        write(pa.table({"t": [1.5]}), left / "b.parquet")
    elif case.startswith("clash"):
        folder = {"clash": "t=3", "clash-null": "t=__HIVE_DEFAULT_PARTITION__", "clash-type": "t=x"}
        write(pa.table({"t": [1, 2]}), left / folder[case] / "b.parquet")
        (left / "a.parquet").unlink()
    elif case == "mixed":
        write(pa.table({"t": [3]}), left / "d=1" / "b.parquet")
    elif case == "out-is-a-file":
        out.write_text("a file")
    elif case == "out-is-foreign":
        out.mkdir()
        (out / "thesis.tex").write_text("keep me")
    elif case == "out-of-other-parquet":
        write(pa.table({"t": [1]}), out / "sub" / "data.parquet")
    elif case == "out-inside-left":
        out = left / "out"
    elif case == "fifo":
        os.mkfifo(left / "b.parquet")
    elif case == "dangling-link":
        (left / "b.parquet").symlink_to(tmp_path / "gone.parquet")
    code, stdout, stderr = run(
        "enrich", left, right, "-o", out, "--on", "t", "--device", "cpu", capsys=capsys
    )
    assert code == 2 and stdout == ""
    assert stderr.count("\n") == 1
    assert message.format(l=left, out=out) in stderr
    assert hidden(tmp_path) == []
    if case == "out-is-foreign":
        assert (out / "thesis.tex").read_text() == "keep me"
    if case == "out-of-other-parquet":
        assert pq.read_table(out / "sub" / "data.parquet")["t"].to_pylist() == [1]


def _two_days(tmp_path: Path) -> Path:
    """LEFT as trades/date=1/t.parquet and trades/date=2/t.parquet; RIGHT, returned."""
    trades = pa.table({"time": [1, 2, 3], "symbol": ["a", "a", "b"], "px": [1.0, 2.0, 3.0]})
    for day in ("date=1", "date=2"):
        write(trades, tmp_path / "trades" / day / "t.parquet")
    quotes = pa.table({"time": [0, 2], "symbol": ["a", "b"], "bid": [9.0, 8.0]})
    return write(quotes, tmp_path / "quotes.parquet")


@pytest.mark.parametrize("side", ["LEFT", "RIGHT"])
def test_an_input_inside_the_out_folder_it_would_replace_exits_2_and_is_kept(
    tmp_path, capsys, side
):
    """An earlier run's OUT folder holds files enrich wrote, so it may be replaced; one of
    them given as this run's input was deleted by the replacement (exit 0, nothing said)."""
    right = _two_days(tmp_path)
    out = tmp_path / "out"
    keys = ("--on", "time", "--by", "symbol", "--device", "cpu", "-q")
    assert run("enrich", tmp_path / "trades", right, "-o", out, *keys, capsys=capsys)[0] == 0
    inside = out / "date=2" / "t.parquet"
    before = pq.read_table(inside)
    if side == "LEFT":
        argv = (out / "date=2", right, "-o", out, "--suffix", "_2")
    else:
        argv = (tmp_path / "trades", inside, "-o", out, "--columns", "px", "--suffix", "_2")
    code, stdout, stderr = run("enrich", *argv, *keys, capsys=capsys)
    assert (code, stdout) == (2, "")
    assert (
        f"asofgpu enrich: error: {side} file {inside} is inside OUT {out}, which this run "
        "replaces; write OUT elsewhere (or move the file out)"
    ) in stderr
    assert pq.read_table(inside).equals(before)
    assert hidden(tmp_path) == []
    # A folder of the user's own is refused as such, whatever it holds.
    (out / "notes.txt").write_text("mine")
    code, _, stderr = run("enrich", *argv, *keys, capsys=capsys)
    assert code == 2 and "is a folder that asofgpu enrich did not write" in stderr


@pytest.mark.parametrize(
    "came",
    [
        "notes.txt",  # the user's
        ".extra.parquet.vm-1.k2j4x9_a.asofgpu-partial",  # another run's, writing OUT/extra
        ".asofgpu-spill-vm-1-p0o9i8u7/right-0.arrow",  # ... and spilling beside it
        ".sub.vm-1.k2j4x9_a.asofgpu-partial/t.parquet",  # another run's file of enrich's
        "fifo.parquet",  # (not opened: its open would wait for a writer)
        "link",  # to a folder, which a walk does not enter
        "more.parquet",  # a file of enrich's: replaced with the rest
        None,  # nothing but this run's own spill folder (--tmp-dir OUT)
    ],
)
def test_what_comes_into_the_out_folder_during_the_run_is_not_deleted(
    tmp_path, capsys, monkeypatch, came
):
    """OUT was checked replaceable when the run began, and replaced whole at its end: what
    came into it meanwhile (a user's file, another run's partial output and spill folder)
    was deleted with it, and the other run failed."""
    from asofgpu.enrich import _attach

    right = _two_days(tmp_path)
    out = tmp_path / "out"
    argv = ("enrich", tmp_path / "trades", right, "-o", out, "--on", "time", "--by", "symbol")
    keys = ("--device", "cpu", "-q", "--chunk-rows", "1")
    assert run(*argv, *keys, capsys=capsys)[0] == 0
    earlier = sorted(p.relative_to(out) for p in out.rglob("*.parquet"))
    real = _attach.gather

    def gather(table, gmap):
        path = out / came if came else None
        if path is not None and not os.path.lexists(path):
            path.parent.mkdir(exist_ok=True)
            if came.endswith("t.parquet") or came == "more.parquet":
                shutil.copy(out / "date=1" / "t.parquet", path)  # enrich's footer
            elif came == "fifo.parquet":
                os.mkfifo(path)
            elif came == "link":
                path.symlink_to(tmp_path / "trades")
            else:
                path.write_text("mine")
        return real(table, gmap)

    monkeypatch.setattr(_attach, "gather", gather)
    if came is None:
        keys = (*keys, "--right-mode", "spill", "--tmp-dir", out)
    code, _, stderr = run(*argv, *keys, capsys=capsys)
    if came in ("more.parquet", None):
        assert (code, stderr) == (0, "")
        assert came is None or not (out / came).exists()
        assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []
    else:
        assert (code, stderr) == (
            1,
            f"asofgpu enrich: error: OUT {out} changed during the run: {came} came into it, "
            "which asofgpu enrich did not write, and the folder is left as it is; nothing was "
            "written\n",
        )
        assert os.path.lexists(out / came)
        earlier += [Path(came)] if came.endswith(".parquet") else []
    assert sorted(p.relative_to(out) for p in out.rglob("*.parquet")) == sorted(earlier)
    assert hidden(tmp_path) == []


def _enrichs_folder(out: Path) -> None:
    from asofgpu.enrich._output import FOOTER_MARK

    write(pa.table({"t": [1]}).replace_schema_metadata(FOOTER_MARK), out / "a.parquet")


def test_an_out_folder_that_became_a_file_is_left_as_it_is(tmp_path):
    from asofgpu.enrich._errors import OutputError
    from asofgpu.enrich._output import AtomicFolder

    out = tmp_path / "out"
    _enrichs_folder(out)
    with AtomicFolder(str(out)) as target:
        shutil.rmtree(out)
        out.write_text("another run's OUT file")
        with pytest.raises(OutputError, match=f"^OUT {out} became a file during the run, and"):
            target.commit()
    assert out.read_text() == "another run's OUT file" and hidden(tmp_path) == []


def test_an_old_out_that_cannot_be_put_back_is_kept_and_named(tmp_path, monkeypatch):
    """What came into OUT between the last check and the move aside is found by its listing
    (signals held, no footer read); the folder is put back, and where another run's OUT took
    its place meanwhile, it stays where it was moved, named, not removed with the rest."""
    from asofgpu.enrich import _output
    from asofgpu.enrich._errors import OutputError

    out = tmp_path / "out"
    _enrichs_folder(out)
    real = _output._listing

    def listing(folder):
        if folder.endswith(os.sep + "old"):  # moved aside: now something comes, and a folder
            (Path(folder) / "late.txt").write_text("mine")
            _enrichs_folder(out)  # takes OUT's place
        return real(folder)

    with _output.AtomicFolder(str(out)) as target:
        monkeypatch.setattr(_output, "_listing", listing)
        with pytest.raises(OutputError, match=f"^OUT {out} could not be put back") as raised:
            target.commit()
    kept = str(raised.value).rsplit("kept at ", 1)[1]
    assert sorted(os.listdir(kept)) == ["a.parquet", "late.txt"]


def test_a_files_row_groups_are_read_on_the_footer_read_once(tmp_path, monkeypatch):
    """The spill reads LEFT a row group (or a run of small ones) at a time: its reader takes
    the footer the source read when it found the file, where parsing it again per row group
    made a file of 8,000 row groups take 99 s to spill (6.8 s so); and one reader reads
    them all."""
    from asofgpu.enrich._sources import Source, runs_of

    path = tmp_path / "l.parquet"
    pq.write_table(pa.table({"t": np.arange(40), "v": np.arange(40.0)}), path, row_group_size=1)
    (part,) = Source.find(str(path), "LEFT").parts
    readers = []
    real = pq.ParquetFile

    def counted(*args, **kwargs):
        readers.append(kwargs.get("metadata"))
        return real(*args, **kwargs)

    monkeypatch.setattr(pq, "ParquetFile", counted)
    runs = runs_of([1] * 40, 10)  # (its 40 row groups of a row, 10 a run)
    got = [list(part.read_run("LEFT", run, 10, ["t"], [])) for run in runs]
    assert [[b.column(0).to_pylist() for b in batches] for batches in got] == [
        [list(range(i, i + 10))] for i in (0, 10, 20, 30)
    ]
    tables = list(part.row_groups("LEFT", ["v"], []))
    assert len(tables) == 40 and tables[-1].column(0).to_pylist() == [39.0]
    assert len(readers) == 5 and all(meta is part.meta for meta in readers)


def test_a_run_of_row_groups_comes_as_one_batch_unless_a_nested_column_is_in_pieces(tmp_path):
    """``Part.read_run`` hands a run of small row groups over as one batch, text read as
    dictionaries (a piece a row group) put together beside a list column; a list of
    dictionary text, which pyarrow reads a row group at a time and which stays in its pieces
    (``combined_columns``), comes a batch a row group. The rows are the same either way."""
    from asofgpu.enrich._sources import Source

    path = tmp_path / "l.parquet"
    table = pa.table({"t": np.arange(6), "s": list("abcdef"), "l": [[str(i)] for i in range(6)]})
    pq.write_table(table, path, row_group_size=2)
    (part,) = Source.find(str(path), "LEFT").parts
    for read_dictionary, sizes in ((["s"], [6]), (["s", "l.list.element"], [2, 2, 2])):
        batches = list(part.read_run("LEFT", [0, 1, 2], 10, None, read_dictionary))
        assert [b.num_rows for b in batches] == sizes
        got = pa.Table.from_batches(batches)
        assert got.column("s").to_pylist() == list("abcdef")
        assert got.column("l").to_pylist() == table.column("l").to_pylist()


def test_only_row_groups_of_a_few_mib_and_columns_decode_on_threads(tmp_path, monkeypatch):
    """pyarrow's threads decode a row group a column each: below ``THREADED_BYTES`` handing
    them out costs more than it saves (5,000 files of 400 rows read in 0.93 s with them,
    0.26 s without), and one column has nothing to share."""
    from asofgpu.enrich import _sources

    rng = np.random.default_rng(0)
    n = 200_000  # two int64 columns of random values: over 2 MiB uncompressed
    table = pa.table({"t": np.arange(n), "v": rng.integers(0, 1 << 62, n)})
    pq.write_table(table.slice(0, 100), tmp_path / "small.parquet")
    pq.write_table(table, tmp_path / "mixed.parquet", row_group_size=n - 100)
    small = _sources.Source.find(tmp_path / "small.parquet", "RIGHT").parts[0]
    mixed = _sources.Source.find(tmp_path / "mixed.parquet", "RIGHT").parts[0]
    assert mixed.meta.row_group(0).total_byte_size >= _sources.THREADED_BYTES
    assert not small._worth_threads([0], None)
    assert mixed._worth_threads([0, 1], None) and mixed._worth_threads([0], ["t", "v"])
    assert not mixed._worth_threads([1], None)  # its 100-row group
    assert not mixed._worth_threads([0], ["v"])
    wide = table.append_column("w", pa.array(rng.random(n))).slice(0, n // 2)
    pq.write_table(wide, tmp_path / "wide.parquet")  # three columns of 0.9 MiB
    wide = _sources.Source.find(tmp_path / "wide.parquet", "RIGHT").parts[0]
    assert wide._worth_threads([0], ["t", "v", "w"]) and wide._worth_threads([0], None)
    assert not wide._worth_threads([0], ["t", "w"])  # (only the columns read count)

    asked = []
    real = pq.ParquetFile.iter_batches

    def iter_batches(self, *args, use_threads=True, **kwargs):
        asked.append(use_threads)
        return real(self, *args, use_threads=use_threads, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", iter_batches)
    read = pa.Table.from_batches(list(mixed.batches("RIGHT", 1 << 20)))
    assert read.equals(table) and asked == [True]

    asked.clear()  # a source read whole (RIGHT held in memory)
    real_read = pq.ParquetFile.read

    def read_whole(self, *args, use_threads=True, **kwargs):
        asked.append((self.metadata.num_rows, use_threads))
        return real_read(self, *args, use_threads=use_threads, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read", read_whole)
    os.makedirs(tmp_path / "both")
    for name in ("small", "mixed"):
        shutil.copy(tmp_path / f"{name}.parquet", tmp_path / "both" / f"{name}.parquet")
    both = _sources.Source.find(tmp_path / "both", "RIGHT")
    assert both.read(["t", "v"]).equals(pa.concat_tables([table, table.slice(0, 100)]))
    # mixed.parquet on threads, small.parquet not (read at once: in either order)
    assert sorted(asked) == [(100, False), (n, True)]


@pytest.mark.parametrize(("files", "compiled"), [(2, False), (20, True)])
def test_many_small_left_files_compile_from_the_first_join(
    tmp_path, capsys, monkeypatch, thresholds, files, compiled
):
    """Each small LEFT file is a join below the size that compiles: together, 300 files of
    2,000 rows spent the plain-Python budget (1.0 s) before compiling anyway. A run whose
    LEFT would spend it compiles from the first join (``walks.compiling_ahead``); a small
    one stays in plain Python. (Here a row costs 1 s of a 10-second budget, and chunks of
    two rows keep each file a join of its own, where small files are joined together.)"""
    from asofgpu._backend import walks

    # (The suite compiles every launch: conftest.py. A budget beyond what the test process
    # has spent.)
    thresholds(interpret_max_rows=1 << 14, interpret_seconds=10.0)
    monkeypatch.setattr(walks, "INTERPRETED_ROW_SECONDS", 1.0)
    left = tmp_path / "l"
    for i in range(files):
        times = pa.array(np.arange(i * 2, i * 2 + 2), pa.timestamp("s"))
        write(pa.table({"t": times, "g": [1, 2]}), left / f"{i:02d}.parquet")
    right = pa.table({"t": pa.array([0, 1], pa.timestamp("s")), "g": [1, 2], "v": [1.0, 2.0]})
    write(right, tmp_path / "r.parquet")
    with walks.recorded() as decisions:
        code, _, stderr = enrich_in(
            tmp_path, "--chunk-rows", "2", capsys=capsys, left="l", out="out"
        )
    assert code == 0, stderr
    outcomes = [outcome for name, outcome in decisions if name == "compiles"]
    if compiled:  # each file's join (the checks on zero rows stay plain Python)
        assert outcomes.count(True) >= files
    else:
        assert True not in outcomes
    expected = ag.join_asof(pq.read_table(left / "00.parquet"), right, on="t", by="g")
    assert pq.read_table(tmp_path / "out" / "00.parquet").equals(expected)


@pytest.mark.parametrize(("rows", "readied"), [(100, False), (1 << 14, True)])
def test_numba_is_made_ready_beside_the_statistics_where_the_run_compiles(
    tmp_path, capsys, monkeypatch, thresholds, rows, readied
):
    """numba's CPU target is set up on the checks' thread, after the dry run chose the CPU,
    while the main thread reads statistics; a run too small to compile skips it, and leaves
    numba's thread pool alone."""
    import contextlib

    from asofgpu.enrich import _job

    thresholds(interpret_max_rows=1 << 14)
    threads = []
    monkeypatch.setattr(
        _job, "ready_cpu_target", lambda: threads.append(threading.current_thread().name)
    )
    pool_set = []
    monkeypatch.setattr(_job, "_kernel_threads", lambda: contextlib.nullcontext(pool_set.append(1)))
    times = pa.array(np.arange(rows), pa.timestamp("s"))
    write(pa.table({"t": times, "g": np.arange(rows) % 3}), tmp_path / "l.parquet")
    write(
        pa.table({"t": times, "g": np.arange(rows) % 3, "v": np.arange(rows)}),
        tmp_path / "r.parquet",
    )
    code, _, stderr = enrich_in(tmp_path, capsys=capsys)
    assert code == 0, stderr
    assert threads == (["asofgpu-check_0"] if readied else [])
    assert pool_set == ([1] if readied else [])
    assert pq.read_table(tmp_path / "o.parquet")["v"].to_pylist()[-3:] == [
        rows - 3,
        rows - 2,
        rows - 1,
    ]


# A cupy that sees no GPU, as on a machine with the cuda extras and no driver.
NO_GPU_CUPY = """\
class _Runtime:
    @staticmethod
    def getDeviceCount():
        raise RuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")


class cuda:
    runtime = _Runtime
"""


# (once: the run is a process of its own, which the fixture's thresholds do not reach)
@pytest.mark.parametrize("left_columns", ["encoded"], indirect=True)
@pytest.mark.parametrize("cupy", [False, True], ids=["without cupy", "cupy without a GPU"])
def test_a_day_too_small_to_compile_does_not_import_numba(tmp_path, left_columns, cupy):
    """A whole ``asofgpu enrich`` process of a 2,000-row day on ``--device auto`` stays in
    plain Python: numba's import and pool were 0.2-0.3 s of its 0.73 s. Where cupy is
    installed and sees no GPU, numba-cuda is not asked."""
    import subprocess
    import sys

    quotes, trades = marketdata.day(n_quotes=1_000, n_trades=2_000, n_symbols=5, seed=2)
    write(trades, tmp_path / "trades.parquet")
    write(quotes, tmp_path / "quotes.parquet")
    env = dict(os.environ)
    if cupy:
        (tmp_path / "fake" / "cupy").mkdir(parents=True)
        (tmp_path / "fake" / "cupy" / "__init__.py").write_text(NO_GPU_CUPY)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(tmp_path / "fake"), *filter(None, [env.get("PYTHONPATH")])]
        )
    script = (
        "import sys; from asofgpu.cli import main; code = main(sys.argv[1:]); "
        "print(code, 'numba' in sys.modules, 'cupy' in sys.modules)"
    )
    argv = ["enrich", "trades.parquet", "quotes.parquet", "--on", "time", "--by", "symbol"]
    done = subprocess.run(
        [sys.executable, "-c", script, *argv, "-o", "out.parquet"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.stdout.splitlines()[-1].split() == ["0", "False", str(cupy)], done.stderr
    assert "backend    cpu (auto: no usable GPU)" in done.stdout
    expected = ag.join_asof(trades, quotes, on="time", by="symbol")
    assert pq.read_table(tmp_path / "out.parquet").equals(expected)


def test_the_leaf_map_of_a_column_whose_type_cannot_be_hashed():
    """The leaf map is shared by files of the same columns, kept by their names and types;
    a Python extension type without a hash is counted all the same, uncached, and as its
    storage: a struct's two leaves (counted as one before, which put the next column's
    chunks one leaf early)."""
    import io

    from asofgpu.enrich._schemas import leaf_map

    pair = unhashable_extension_type(
        pa.struct([("x", pa.int64()), ("y", pa.int64())]), "asofgpu.t.pair"
    )
    pa.register_extension_type(pair)
    try:
        pairs = pa.array([{"x": 1, "y": 2}], pair.storage_type)
        table = pa.table({"p": pa.ExtensionArray.from_storage(pair, pairs), "t": [3]})
        buffer = io.BytesIO()
        pq.write_table(table, buffer)
        schema = pq.read_schema(io.BytesIO(buffer.getvalue()))
        assert isinstance(schema.field("p").type, type(pair))
        leaves = leaf_map(schema)
        assert (list(leaves["p"]), list(leaves["t"])) == ([0, 1], [2])
    finally:
        pa.unregister_extension_type("asofgpu.t.pair")
