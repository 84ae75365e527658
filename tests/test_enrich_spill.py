"""``asofgpu enrich`` with RIGHT out of core: both sides spilled to hash partitions of the by
keys, joined a partition at a time, the output rebuilt in LEFT's order.

The oracle is ``asofgpu.join_asof`` on the whole files; ``--spill-partitions`` forces the path
on small data, and one run takes it because ``--memory-limit`` leaves too little room.
"""

from __future__ import annotations

import gc
import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import asofgpu as ag
from asofgpu import marketdata
from asofgpu.enrich._spill import POSITION, Results, merged, partition_of
from enrich_cli import coarse_times, enrich_in, hidden, run

pytestmark = pytest.mark.usefixtures("left_columns")  # copied and encoded, both

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def day(tmp_path):
    quotes, trades = marketdata.day(n_quotes=900, n_trades=500, n_symbols=15, seed=4, shuffled=True)
    pq.write_table(trades, tmp_path / "trades.parquet", row_group_size=64)
    pq.write_table(quotes, tmp_path / "quotes.parquet", row_group_size=100)
    return tmp_path / "trades.parquet", tmp_path / "quotes.parquet"


@pytest.mark.parametrize("k", [1, 2, 7])
@pytest.mark.parametrize(
    ("flags", "options"),
    [
        ([], {}),
        (
            ["--strategy", "forward", "--no-exact-matches"],
            {"strategy": "forward", "allow_exact_matches": False},
        ),
        (
            ["--strategy", "nearest", "--tolerance", "30s"],
            {"strategy": "nearest", "tolerance": np.timedelta64(30, "s")},
        ),
    ],
)
def test_spilled_equals_join_asof(day, tmp_path, capsys, k, flags, options):
    trades, quotes = day
    out = tmp_path / "out.parquet"
    code, stdout, stderr = run(
        "enrich",
        trades,
        quotes,
        "-o",
        out,
        "--on",
        "time",
        "--by",
        "symbol",
        "--device",
        "cpu",
        "--chunk-rows",
        97,
        "--spill-partitions",
        k,
        *flags,
        capsys=capsys,
    )
    assert code == 0, stderr
    expected = ag.join_asof(
        pq.read_table(trades),
        pq.read_table(quotes),
        on="time",
        by="symbol",
        device="cpu",
        **options,
    )
    assert pq.read_table(out).equals(expected)
    assert f"spilling both sides to {k} hash partitions in {tmp_path}" in stderr
    assert "spilled to disk" in stdout
    assert hidden(tmp_path) == []  # no spill folder, no partial file


def test_two_by_columns_with_nulls_and_a_partition_column(tmp_path, capsys):
    left, right = tmp_path / "l", tmp_path / "r"

    def frame(n, seed):
        r = np.random.default_rng(seed)
        return pa.table(
            {
                "t": r.integers(0, 100, n),
                "a": pa.array(r.choice(["x", "y", "z", None], n)),
                "b": pa.array(r.integers(0, 3, n).astype(float), mask=r.random(n) < 0.1),
                "v": r.random(n),
            }
        )

    for day in (1, 2):
        (left / f"day={day}").mkdir(parents=True)
        (right / f"day={day}").mkdir(parents=True)
        pq.write_table(
            frame(300, day).drop_columns(["v"]),
            left / f"day={day}" / "p.parquet",
            row_group_size=50,
        )
        pq.write_table(frame(400, 10 + day), right / f"day={day}" / "p.parquet", row_group_size=50)
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
            "day,a,b",
            "--device",
            "cpu",
            "--spill-partitions",
            5,
            "-q",
            capsys=capsys,
        )[0]
        == 0
    )
    # ParquetFile: the file alone (pyarrow's read_table adds the folder's "day" on some versions)
    quotes = pa.concat_tables(
        pq.ParquetFile(right / f"day={d}" / "p.parquet")
        .read()
        .append_column("day", pa.array([d] * 400))
        for d in (1, 2)
    )
    for d in (1, 2):
        trades = pq.ParquetFile(left / f"day={d}" / "p.parquet").read()
        expected = ag.join_asof(
            trades.append_column("day", pa.array([d] * 300)),
            quotes,
            on="t",
            by=["day", "a", "b"],
            device="cpu",
        )
        assert (
            pq.ParquetFile(out / f"day={d}" / "p.parquet")
            .read()
            .equals(expected.drop_columns(["day"]))
        )


def test_a_small_memory_limit_spills_by_itself(tmp_path, capsys):
    """Shuffled files are no tape: RIGHT that does not fit is spilled, not streamed."""
    quotes, trades = marketdata.day(
        n_quotes=300_000, n_trades=20_000, n_symbols=50, seed=2, shuffled=True
    )
    pq.write_table(quotes, tmp_path / "q.parquet")
    pq.write_table(trades, tmp_path / "t.parquet")
    out = tmp_path / "o.parquet"
    code, stdout, stderr = run(
        "enrich",
        tmp_path / "t.parquet",
        tmp_path / "q.parquet",
        "-o",
        out,
        "--on",
        "time",
        "--by",
        "symbol",
        "--device",
        "cpu",
        "--memory-limit",
        "450MiB",
        capsys=capsys,
    )
    assert code == 0, stderr
    assert "more than half of what --memory-limit 450MiB leaves: spilling both sides" in stderr
    assert pq.read_table(out).equals(
        ag.join_asof(trades, quotes, on="time", by="symbol", device="cpu")
    )


def _long_texts(rows: int, seed: int, length: int = 1_000) -> pa.Table:
    """A shuffled RIGHT whose payload is few distinct long strings: parquet keeps such a
    column dictionary-encoded, about a byte a row, and a reader gives whole strings."""
    rng = np.random.default_rng(seed)
    values = np.array([f"{i:04d}" + "x" * (length - 4) for i in range(50)])
    return pa.table(
        {
            "time": rng.permutation(rows).astype(np.int64),
            "symbol": rng.integers(0, 20, rows).astype(str),
            "note": values[rng.integers(0, 50, rows)],
        }
    )


def test_text_stored_as_a_dictionary_is_sized_as_read(tmp_path, capsys):
    """RIGHT's estimate took a dictionary-encoded column's stored size (its codes) where it
    is read as strings: 100,000 rows of 1,000-byte notes, 100 MB as read, were estimated at
    a few hundred KB and held in memory, the process at 2.7 times --memory-limit. And of a
    folder, the first file's sizes stood for every file's. Where every file keeps it as a
    dictionary of few values, it is read, gathered and written as one (its codes), and
    sized so; OUT's column is text all the same."""
    from asofgpu.enrich import _memory
    from asofgpu.enrich._sources import Source

    right = _long_texts(100_000, seed=1)
    pq.write_table(right, tmp_path / "q.parquet")
    assert pq.read_metadata(tmp_path / "q.parquet").row_group(0).column(2).has_dictionary_page
    source = Source.find(tmp_path / "q.parquet", "RIGHT")
    assert 1_000 <= _memory.row_bytes(source, ["note"]) <= 1_010
    assert _memory.kept_dictionary(source, "note")
    assert 4 < _memory.row_bytes(source, ["note"], kept=["note"]) < 10
    folder = tmp_path / "folder"
    folder.mkdir()
    short = right.slice(0, 1_000).set_column(2, "note", pa.array(["ab"] * 1_000))
    pq.write_table(short, folder / "a.parquet")  # the first file: short notes
    pq.write_table(right.slice(1_000), folder / "b.parquet", use_dictionary=False)
    assert _memory.row_bytes(Source.find(folder, "RIGHT"), ["note"]) >= 1_000
    assert not _memory.kept_dictionary(Source.find(folder, "RIGHT"), "note")  # b: plain
    trades = pa.table(
        {"time": np.arange(0, 100_000, 50), "symbol": (np.arange(2_000) % 20).astype(str)}
    )
    pq.write_table(trades, tmp_path / "t.parquet")
    out = tmp_path / "o.parquet"
    keys = ("--on", "time", "--by", "symbol", "--device", "cpu", "--memory-limit", "600MiB")
    code, _, stderr = run("enrich", tmp_path / "t.parquet", folder, "-o", out, *keys, capsys=capsys)
    assert code == 0, stderr
    assert "more than half of what --memory-limit 600MiB leaves: spilling both sides" in stderr
    in_folder = pa.concat_tables([short, right.slice(1_000)])
    expected = ag.join_asof(trades, in_folder, on="time", by="symbol", device="cpu")
    assert pq.read_table(out).equals(expected)
    # Held in memory all the same when the user says so, and the log says what that costs.
    args = (tmp_path / "t.parquet", folder, "-o", out, *keys)
    code, _, stderr = run("enrich", *args, "--right-mode", "memory", capsys=capsys)
    assert code == 0, stderr
    assert re.search(
        r"into memory: --right-mode memory, though it needs about \S+ MiB prepared, more than "
        r"half of what --memory-limit 600MiB leaves \(the limit then bounds LEFT's chunks, "
        r"not RIGHT\)",
        stderr,
    ), stderr
    assert pq.read_table(out).equals(expected)
    # One file of few notes: read as codes, which fit.
    args = (tmp_path / "t.parquet", tmp_path / "q.parquet", "-o", out, *keys)
    code, _, stderr = run("enrich", *args, capsys=capsys)
    assert code == 0, stderr
    assert "into memory: it fits" in stderr, stderr
    expected = ag.join_asof(trades, right, on="time", by="symbol", device="cpu")
    assert pq.read_table(out).equals(expected)
    assert pq.read_metadata(out).row_group(0).column(2).has_dictionary_page


def test_a_row_group_of_dictionary_text_too_large_as_read_is_refused(tmp_path, capsys):
    """A row group is held whole once read: 150,000 rows of 1,000-byte notes, 144 MiB read
    as strings (another file keeps the column plain), passed as the few hundred KB its
    dictionary-encoded column stores. Kept as a dictionary in every file, it is read as
    its codes, and fits."""
    right = _long_texts(150_000, seed=2)
    (tmp_path / "q").mkdir()
    pq.write_table(right, tmp_path / "q" / "a.parquet")
    trades = pa.table({"time": [5, 50], "symbol": ["1", "2"]})
    pq.write_table(trades, tmp_path / "t.parquet")
    keys = ("--on", "time", "--by", "symbol", "--device", "cpu", "--memory-limit", "600MiB")
    args = (tmp_path / "t.parquet", tmp_path / "q", "-o", tmp_path / "o.parquet")
    code, _, stderr = run("enrich", *args, *keys, capsys=capsys)
    assert code == 0, stderr
    assert pq.read_table(tmp_path / "o.parquet").equals(
        ag.join_asof(trades, right, on="time", by="symbol", device="cpu")
    )
    pq.write_table(right.slice(0, 10), tmp_path / "q" / "b.parquet", use_dictionary=False)
    code, _, stderr = run("enrich", *args, *keys, capsys=capsys)
    assert code == 2
    assert stderr == (
        "asofgpu enrich: error: --memory-limit 600MiB cannot hold a row group of RIGHT (144 "
        "MiB as read) twice over; raise it, or write the files with smaller row groups\n"
    )
    assert hidden(tmp_path) == []


def test_equal_values_of_other_types_share_a_partition():
    left = pa.table(
        {
            "s": pa.array(["a", "b", None, "é"]),
            "i": pa.array([1, 2, None, -5], pa.int32()),
            "f": pa.array([0.0, -0.0, float("nan"), 2.5]),
            "t": pa.array([1, 2, 3, None], pa.timestamp("ms")),
        }
    )
    right = pa.table(
        {
            "s": pa.array(["a", "b", None, "é"], pa.large_string()).dictionary_encode(),
            "i": pa.array([1, 2, None, -5], pa.int64()),
            "f": pa.array([-0.0, 0.0, float("nan"), 2.5], pa.float32()),
            "t": pa.array([1000, 2000, 3000, None], pa.timestamp("us")),
        }
    )
    for by in (["s"], ["i"], ["f"], ["t"], ["s", "i", "f", "t"]):
        assert partition_of(left, by, 13).tolist() == partition_of(right, by, 13).tolist(), by
    spread = partition_of(pa.table({"i": np.arange(10_000)}), ["i"], 8)
    assert np.bincount(spread, minlength=8).min() > 1_000


def _limit_file_size():
    resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))


@pytest.mark.slow  # asofgpu enrich as a process (the file-size limit is the process's)
def test_a_full_temporary_disk_exits_1_and_leaves_tmp_dir_as_found(day, tmp_path):
    trades, quotes = day
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "keep.txt").write_text("mine")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "asofgpu",
            "enrich",
            trades,
            quotes,
            "-o",
            tmp_path / "o.parquet",
            "--on",
            "time",
            "--by",
            "symbol",
            "--device",
            "cpu",
            "--spill-partitions",
            "2",
            "--tmp-dir",
            scratch,
            "-q",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        preexec_fn=_limit_file_size,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith(
        f"asofgpu enrich: error: cannot write spill files in --tmp-dir {scratch}: "
    )
    assert done.stderr.rstrip().endswith("File too large; nothing was written")
    assert sorted(os.listdir(scratch)) == ["keep.txt"]
    assert not (tmp_path / "o.parquet").exists() and hidden(tmp_path) == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--memory-limit", "lots"],
            "--memory-limit: expected a size such as 1GiB, 512MiB, 2GB or "
            "a number of bytes, got 'lots'",
        ),
        (
            ["--memory-limit", "100MiB"],
            "--memory-limit 100MiB is too small: the process itself "
            "takes about 400 MiB; give more than 416 MiB, and room for the largest row group",
        ),
        (["--memory-limit", "416MiB"], "--memory-limit 416MiB is too small"),
        (["--memory-limit", "420MiB"], "--memory-limit 420MiB cannot hold a row group of LEFT"),
        (["--tmp-dir", "{tmp}/nowhere"], "--tmp-dir {tmp}/nowhere is not a folder"),
        (
            ["--spill-partitions", "0"],
            "argument --spill-partitions: expected a positive number, got 0",
        ),
    ],
)
def test_bad_memory_options_exit_2(tmp_path, capsys, argv, message):
    pq.write_table(
        pa.table({"t": np.arange(3_000_000)}), tmp_path / "l.parquet", row_group_size=3_000_000
    )  # 24 MB uncompressed
    pq.write_table(pa.table({"t": [1], "v": [1.0]}), tmp_path / "r.parquet")
    argv = [a.format(tmp=tmp_path) for a in argv]
    code, stdout, stderr = run(
        "enrich",
        tmp_path / "l.parquet",
        tmp_path / "r.parquet",
        "-o",
        tmp_path / "o.parquet",
        "--on",
        "t",
        *argv,
        capsys=capsys,
    )
    assert code == 2 and stdout == "" and stderr.count("\n") == 1
    assert message.format(tmp=tmp_path) in stderr
    assert hidden(tmp_path) == []


def test_a_copied_left_counts_only_the_keys_of_its_row_groups(tmp_path, capsys, left_columns):
    """A LEFT file copied into OUT has only its keys read, so the memory limit is held
    against its keys' row groups: a row group of 440 MiB of text (kept dictionary-encoded, so
    the file is small) was refused under 1GiB, though only its 800 KB of keys are read. Read
    and encoded again, the row group is read whole, and refused."""
    n = 100_000
    notes = pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), ["x" * 4600])
    pq.write_table(
        pa.table({"t": np.arange(n) * 2, "note": notes}),
        tmp_path / "l.parquet",
        row_group_size=n,
        store_schema=False,  # read back as plain text, as most writers leave it
    )
    quotes = np.arange(0, 2 * n, 3)
    pq.write_table(pa.table({"t": quotes, "v": quotes * 0.5}), tmp_path / "r.parquet")
    code, _, stderr = enrich_in(tmp_path, "--memory-limit", "1GiB", by=None, capsys=capsys)
    if left_columns == "encoded":
        assert code == 2
        assert "--memory-limit 1GiB cannot hold a row group of LEFT (439 MiB as read)" in stderr
        return
    assert code == 0, stderr
    assert "copied as they are" in stderr
    out = pq.read_table(tmp_path / "o.parquet", columns=["t", "v"]).to_pandas()
    expected = np.arange(n) * 2 // 3 * 3 * 0.5  # the last quote at or before t
    np.testing.assert_array_equal(out["v"].to_numpy(), expected)


@pytest.mark.parametrize(
    ("flags", "options"),
    [
        ([], {}),
        (["--strategy", "forward"], {"strategy": "forward"}),
        (
            ["--strategy", "nearest", "--no-exact-matches"],
            {"strategy": "nearest", "allow_exact_matches": False},
        ),
        (
            ["--strategy", "nearest", "--tolerance", "2s"],
            {"strategy": "nearest", "tolerance": np.timedelta64(2, "s")},
        ),
    ],
)
@pytest.mark.parametrize("chunk_rows", [None, 1_500])
def test_a_busy_group_is_joined_in_key_ranges(tmp_path, capsys, flags, options, chunk_rows):
    """Zipf activity puts a seventh of the quotes in one symbol, so its partition would not
    fit: it is cut into key ranges joined with the carries of the ranges around them. Times
    are coarse, so runs of equal keys meet the range cuts. With small chunks each range's
    LEFT rows are joined a table at a time, and the ranges' results merged batch by batch."""
    quotes, trades = marketdata.day(
        n_quotes=300_000, n_trades=30_000, n_symbols=40, seed=5, shuffled=True
    )
    quotes = coarse_times(quotes, 10**8)
    pq.write_table(quotes, tmp_path / "q.parquet", row_group_size=50_000)
    pq.write_table(trades, tmp_path / "t.parquet", row_group_size=50_000)
    out = tmp_path / "o.parquet"
    code, _, stderr = run(
        "enrich",
        tmp_path / "t.parquet",
        tmp_path / "q.parquet",
        "-o",
        out,
        "--on",
        "time",
        "--by",
        "symbol",
        "--device",
        "cpu",
        "--memory-limit",
        "420MiB",
        *(["--chunk-rows", chunk_rows] if chunk_rows else []),
        *flags,
        capsys=capsys,
    )
    assert code == 0, stderr
    assert re.search(
        r"partition \d+ holds [\d,]+ RIGHT rows, too many to prepare at once: "
        r"joined in \d+ key ranges",
        stderr,
    )
    expected = ag.join_asof(trades, quotes, on="time", by="symbol", device="cpu", **options)
    assert pq.read_table(out).equals(expected)
    assert hidden(tmp_path) == []


@pytest.mark.parametrize(
    ("flags", "options"),
    [
        ([], {}),
        (["--strategy", "forward"], {"strategy": "forward"}),
        (["--strategy", "nearest"], {"strategy": "nearest"}),
        (
            ["--strategy", "nearest", "--no-exact-matches"],
            {"strategy": "nearest", "allow_exact_matches": False},
        ),
    ],
)
def test_a_key_too_busy_for_any_range_keeps_its_first_and_last_rows(
    tmp_path, capsys, flags, options
):
    """A daily state table: one day holds most of RIGHT's rows, every one at the same key
    (and the same few groups), so no cut between keys can make its range fit. The range is
    read as what a join can pick of it, each (group, key)'s first and last row: the rows
    that decide every strategy, whose answers must not change."""
    rng = np.random.default_rng(7)
    n_busy, n_rest = 120_000, 20_000
    days = np.concatenate([np.full(n_busy, 5), rng.integers(0, 10, n_rest)])
    groups = rng.choice(["a", "b", "c"], n_busy + n_rest)
    right = pa.table({"day": days, "g": groups, "v": np.arange(n_busy + n_rest, dtype=float)})
    right = right.take(rng.permutation(right.num_rows))
    left = pa.table(
        {"day": rng.integers(-1, 12, 3_000), "g": rng.choice(["a", "b", "c", "d"], 3_000)}
    )
    pq.write_table(right, tmp_path / "r.parquet", row_group_size=20_000)
    pq.write_table(left, tmp_path / "l.parquet")
    out = tmp_path / "o.parquet"
    code, _, stderr = run(
        "enrich",
        tmp_path / "l.parquet",
        tmp_path / "r.parquet",
        "-o",
        out,
        "--on",
        "day",
        "--by",
        "g",
        "--device",
        "cpu",
        "--memory-limit",
        "420MiB",
        "--spill-partitions",
        "1",
        *flags,
        capsys=capsys,
    )
    assert code == 0, stderr
    assert re.search(
        r"a key range holds [\d,]+ RIGHT rows of few keys, too many to prepare "
        r"at once: read as each key's first and last row per group",
        stderr,
    )
    expected = ag.join_asof(left, right, on="day", by="g", device="cpu", **options)
    assert pq.read_table(out).equals(expected)
    assert hidden(tmp_path) == []


def test_merged_results_come_in_position_order_a_batch_of_each_part_at_a_time():
    """Each part's results are in position order; merged, all of them are, and no table
    holds more than a batch of each part. An empty part adds nothing."""
    rng = np.random.default_rng(11)
    owner = rng.integers(0, 4, 5_000)
    sizes = [int(n) for n in rng.integers(50, 400, 4)]
    parts = []
    for p, size in enumerate(sizes):
        positions = np.flatnonzero(owner == p)
        table = pa.table({POSITION: positions, "v": positions * 2.0})
        parts.append(Results.of_table(pa.Table.from_batches(table.to_batches(size))))
    parts.append(Results.of_table(pa.table({POSITION: pa.array([], pa.int64()), "v": []})))
    tables = list(merged(parts))
    assert all(t.num_rows <= sum(sizes) for t in tables) and len(tables) > 4
    whole = pa.concat_tables(tables)
    assert whole[POSITION].to_pylist() == list(range(5_000))
    assert whole["v"].to_pylist() == [2.0 * i for i in range(5_000)]


@pytest.mark.parametrize("groups", ["a group a row", "50 groups"])
def test_a_right_whose_rows_are_each_a_group_is_spilled_where_few_groups_fit(
    tmp_path, capsys, groups
):
    """Preparing a row that is a group of its own (a state table of entities) takes about
    twice what a row of a few busy groups does: 200K such rows need more than half of what
    --memory-limit 450MiB leaves and spill, where 200K rows of 50 groups are held."""
    n = 200_000
    rng = np.random.default_rng(4)
    ids = rng.permutation(n) if groups == "a group a row" else rng.integers(0, 50, n)
    right = pa.table({"t": rng.permutation(n), "id": ids, "v": rng.random(n)})
    left = pa.table({"t": rng.integers(0, n, 5_000), "id": rng.choice(ids, 5_000)})
    pq.write_table(right, tmp_path / "r.parquet")
    pq.write_table(left, tmp_path / "l.parquet")
    code, _, stderr = enrich_in(tmp_path, "--memory-limit", "450MiB", capsys=capsys, by="id")
    assert code == 0, stderr
    assert ("spilling both sides" in stderr) == (groups == "a group a row"), stderr
    expected = ag.join_asof(left, right, on="t", by="id", device="cpu")
    assert pq.read_table(tmp_path / "o.parquet").equals(expected)


def test_group_share_reads_the_groups_a_row_brings(tmp_path):
    from asofgpu.enrich._memory import group_share
    from asofgpu.enrich._sources import Source

    pq.write_table(  # row groups of 3 rows: the sample reads on past the first
        pa.table({"a": [1, 2, 3, 4] * 2, "b": ["x", "x", "y", None] * 2, "c": [0] * 8}),
        tmp_path / "f.parquet",
        row_group_size=3,
    )
    source = Source.find(str(tmp_path / "f.parquet"), "RIGHT")
    assert group_share(source, ["a"]) == 0.5
    assert group_share(source, ["b"]) == 3 / 8  # a null is counted as one value
    assert group_share(source, ["a", "b"]) == 0.5
    assert group_share(source, ["c"]) == 1 / 8
    assert group_share(source, ["a"], sample=2) == 1.0
    assert group_share(source, []) == 0.0


@pytest.mark.parametrize("edge", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("strategy", ["backward", "forward", "nearest"])
def test_float_keys_at_nan_and_infinity_are_joined_in_key_ranges(tmp_path, capsys, edge, strategy):
    """A key range's rows are not in key order; its first may be NaN or infinite, from which
    the carries' start is read (int() of it raised). Wide rows make the ranges many."""
    n = 3_000
    key = np.arange(n, dtype=np.float64)
    key[0] = edge
    right = pa.table({"time": key, "pay": [f"p{i}" * 300 for i in range(n)]})
    left = pa.table({"time": [0.5, 10.5, 2999.5, np.nan, np.inf, -np.inf]})
    pq.write_table(right, tmp_path / "r.parquet", row_group_size=500)
    pq.write_table(left, tmp_path / "l.parquet")
    out = tmp_path / "o.parquet"
    code, _, stderr = run(
        "enrich",
        tmp_path / "l.parquet",
        tmp_path / "r.parquet",
        "-o",
        out,
        "--on",
        "time",
        "--strategy",
        strategy,
        "--device",
        "cpu",
        "--right-mode",
        "spill",
        "--memory-limit",
        "430MiB",
        capsys=capsys,
    )
    assert code == 0, stderr
    assert "key ranges" in stderr
    expected = ag.join_asof(left, right, on="time", strategy=strategy, device="cpu")
    got = pq.read_table(out)
    assert got.schema == expected.schema  # (equals() calls NaN unequal to itself)
    assert got["pay"].to_pylist() == expected["pay"].to_pylist()
    assert np.array_equal(got["time"].to_numpy(), left["time"].to_numpy(), equal_nan=True)
    assert hidden(tmp_path) == []


def test_a_partition_that_runs_out_of_descriptors_closes_what_it_opened(tmp_path, monkeypatch):
    """Out of file descriptors half-way through opening 512 partitions ("Too many open
    files"), the ones opened stayed open, the spill folder's removal could not open it in
    turn, and the folder stayed behind. Each is closed on the way out."""
    from asofgpu.enrich._errors import OutputError
    from asofgpu.enrich._spill import SpillFolder

    opened = []
    real = pa.ipc.new_stream

    def new_stream(sink, schema):
        if len(opened) == 5:
            raise OSError(24, "Too many open files")
        opened.append(sink)
        return real(sink, schema)

    monkeypatch.setattr(pa.ipc, "new_stream", new_stream)
    schema = pa.schema([("x", pa.int64())])
    batches = [pa.record_batch({"x": np.arange(10)})]
    gc.collect()  # a file an earlier test left to the collector would close during this one
    before = len(os.listdir("/proc/self/fd"))
    with pytest.raises(OutputError, match="Too many open files"), SpillFolder(str(tmp_path)) as f:
        f.partition("right", batches, schema, 512, lambda b: np.zeros(len(b), np.uint16))
    assert len(os.listdir("/proc/self/fd")) == before
    assert all(sink.closed for sink in opened)
    assert hidden(tmp_path) == []


def test_spill_errors_name_the_folder_as_the_user_gave_it(tmp_path, monkeypatch):
    """Without --tmp-dir, spill files go to OUT's folder: an error there named --tmp-dir,
    which the user never gave."""
    import tempfile

    from asofgpu.enrich import _job
    from asofgpu.enrich._checks import Options
    from asofgpu.enrich._errors import OutputError

    def no_room(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tempfile, "mkdtemp", no_room)
    out = str(tmp_path / "out.parquet")
    given = {"left": "l", "right": "r", "out": out, "left_on": "t", "right_on": "t"}
    with pytest.raises(OutputError) as raised:
        _job._spill_folder(Options(**given), out)
    assert str(raised.value) == (
        f"cannot write spill files in OUT's folder (--tmp-dir unset) {tmp_path}: "
        "No space left on device"
    )
    with pytest.raises(OutputError) as raised:
        _job._spill_folder(Options(**given, tmp_dir=str(tmp_path)), out)
    assert str(raised.value).startswith(f"cannot write spill files in --tmp-dir {tmp_path}: ")


@pytest.mark.parametrize("how", ["partition", "stream"])
def test_spilled_pieces_of_many_text_ids_carry_their_own_values_alone(tmp_path, how):
    """Each piece of a row group of many distinct ids (entities, not a market's symbols)
    went to its spill file with the row group's whole dictionary: 1M ids spilled 1.6 GiB
    for 46 MiB of keys and took 224 s against 8. A piece's dictionary is its own values."""
    from asofgpu.enrich._spill import SpillFolder, read_batches

    ids = pa.array([f"E{i:07d}" for i in range(20_000)]).dictionary_encode()
    batch = pa.record_batch({"g": ids, "t": np.arange(20_000)})
    with SpillFolder(str(tmp_path)) as spill:
        if how == "partition":
            paths, rows = spill.partition(
                "p", [batch], batch.schema, 10, lambda b: (np.arange(len(b)) % 10).astype(np.uint16)
            )
        else:
            path, stream = spill.writer("s", batch.schema)
            stream.write_table(pa.Table.from_batches([batch]), max_chunksize=2_000)
            stream.close()
            paths = [path]
        spilled = sum(os.path.getsize(p) for p in paths)
        pieces = [b for p in paths for b in read_batches(p)]
        assert spilled < 2 * 20_000 * 16  # (each id in one piece: 8 bytes, its code, offsets)
        assert all(len(b["g"].dictionary) == len(b) for b in pieces)
        got = sorted(v for b in pieces for v in b["g"].to_pylist())
        assert got == ids.to_pylist()
