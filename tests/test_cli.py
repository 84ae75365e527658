"""``asofgpu enrich`` and ``asofgpu demo`` end to end on temporary parquet files (cpu).

The oracle is ``asofgpu.join_asof`` on the whole files; every run also checks the rule that
nothing half-written is left: no OUT after a failure, and never a temporary file.
"""

from __future__ import annotations

import gc
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import asofgpu as ag
from asofgpu import cli, marketdata
from asofgpu._duration import format_duration, parse_duration, parse_tolerance

ROOT = Path(__file__).resolve().parents[1]


def run(*argv, capsys=None):
    """(exit code, stdout, stderr) of the command run in this process."""
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr() if capsys else ("", "")
    return code, out, err


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if "asofgpu-partial" in p.name)


def _dotted(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def write(table: pa.Table, path: Path, row_group_size: int = 50) -> Path:
    pq.write_table(table, path, row_group_size=row_group_size)
    return path


@pytest.fixture
def day(tmp_path):
    """A small shuffled market-data day: trades (left) and quotes (right) as parquet."""
    quotes, trades = marketdata.day(n_quotes=600, n_trades=400, n_symbols=12, seed=3, shuffled=True)
    return (
        write(trades, tmp_path / "trades.parquet"),
        write(quotes, tmp_path / "quotes.parquet", row_group_size=128),
    )


def expected(left: Path, right: Path, **options) -> pa.Table:
    return ag.join_asof(pq.read_table(left), pq.read_table(right), device="cpu", **options)


# ----------------------------------------------------------------------------- the result


@pytest.mark.parametrize(
    ("flags", "options"),
    [
        ([], {}),
        (["--strategy", "forward"], {"strategy": "forward"}),
        (
            ["--strategy", "nearest", "--tolerance", "2s"],
            {"strategy": "nearest", "tolerance": np.timedelta64(2, "s")},
        ),
        (
            ["--tolerance", "1m30s", "--no-exact-matches"],
            {"tolerance": np.timedelta64(90, "s"), "allow_exact_matches": False},
        ),
        (["--tolerance", "250000000"], {"tolerance": 250_000_000}),
    ],
)
def test_enrich_equals_join_asof_on_unsorted_files(
    day, tmp_path, capsys, flags, options, left_columns
):
    trades, quotes = day
    out = tmp_path / "out.parquet"
    code, stdout, _ = run(
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
        64,
        *flags,
        capsys=capsys,
    )
    assert code == 0
    want = expected(trades, quotes, on="time", by="symbol", **options)
    got = pq.read_table(out)
    assert got.schema == want.schema
    assert got.equals(want)
    chunks = "8 chunk(s) of up to 50" if left_columns == "copied" else "7 chunk(s) of up to 64"
    assert f"rows       {want.num_rows:,} in {chunks}" in stdout  # copied: LEFT's row groups
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("chunk_rows", [1, 7, 100, 10**6])
def test_chunked_equals_unchunked(day, tmp_path, capsys, chunk_rows, left_columns):
    trades, quotes = day
    whole, chunked = tmp_path / "whole.parquet", tmp_path / f"chunked{chunk_rows}.parquet"
    common = ["--on", "time", "--by", "symbol", "--device", "cpu", "-q"]
    assert run("enrich", trades, quotes, "-o", whole, "--chunk-rows", 10**7, *common)[0] == 0
    assert run(
        "enrich", trades, quotes, "-o", chunked, "--chunk-rows", chunk_rows, *common, capsys=capsys
    ) == (0, "", "")
    assert pq.read_table(chunked).equals(pq.read_table(whole))
    n_groups = pq.ParquetFile(chunked).metadata.num_row_groups
    if left_columns == "copied" and chunk_rows >= 50:  # LEFT's row groups of 50 fit a chunk
        assert n_groups == 8
    else:
        assert n_groups == -(-400 // chunk_rows)  # one row group per chunk


@pytest.mark.usefixtures("left_columns")
def test_keys_of_other_names_two_by_columns_and_nulls(tmp_path, capsys):
    rng = np.random.default_rng(5)
    n, m = 300, 200

    def maybe_null(values, share=0.1):
        return pa.array(values, mask=rng.random(len(values)) < share)

    left = write(
        pa.table(
            {
                "ts": maybe_null(rng.integers(0, 500, n).astype(np.int32)),
                "sym": maybe_null(rng.choice(["a", "b", "c"], n)),
                "venue": pa.array(rng.choice([1, 2], n)).dictionary_encode(),
                "qty": rng.integers(1, 9, n),
            }
        ),
        tmp_path / "left.parquet",
    )
    right = write(
        pa.table(
            {
                "quote_ts": maybe_null(rng.integers(0, 500, m)),
                "ticker": maybe_null(rng.choice(["a", "b", "c", "d"], m)),
                "exchange": rng.choice([1, 2, 3], m),
                "bid": maybe_null(rng.random(m)),
                "note": pa.array(rng.choice(["x", "yy", None], m)),
            }
        ),
        tmp_path / "right.parquet",
    )
    out = tmp_path / "out.parquet"
    code, stdout, _ = run(
        "enrich",
        left,
        right,
        "-o",
        out,
        "--left-on",
        "ts",
        "--right-on",
        "quote_ts",
        "--left-by",
        "sym,venue",
        "--right-by",
        "ticker",
        "--right-by",
        "exchange",
        "--strategy",
        "nearest",
        "--tolerance",
        "20",
        "--device",
        "cpu",
        "--chunk-rows",
        33,
        capsys=capsys,
    )
    assert code == 0
    want = expected(
        left,
        right,
        left_on="ts",
        right_on="quote_ts",
        by_left=["sym", "venue"],
        by_right=["ticker", "exchange"],
        strategy="nearest",
        tolerance=20,
    )
    got = pq.read_table(out)
    assert got.column_names == ["ts", "sym", "venue", "qty", "quote_ts", "bid", "note"]
    assert got.to_pydict() == want.to_pydict()
    assert "staleness  p50 " in stdout and "(LEFT ts minus RIGHT quote_ts)" in stdout


def test_names_that_hold_commas_are_given_in_double_quotes(tmp_path, capsys):
    # pandas writes the labels of a MultiIndex of columns as "('a', 't')"
    left = write(
        pa.table({"('k', 't')": [1, 5, 9], "('k', 'sym')": ["x", "y", "x"]}), tmp_path / "l.parquet"
    )
    right = write(
        pa.table(
            {
                "('k', 't')": [0, 4, 6, 8],
                "('k', 'sym')": ["x", "x", "y", "x"],
                'bid, "best"': [1.0, 2.0, 3.0, 4.0],
                "ask": [5.0, 6.0, 7.0, 8.0],
            }
        ),
        tmp_path / "r.parquet",
    )
    out = tmp_path / "out.parquet"
    keys = ["--on", "('k', 't')", "--device", "cpu", "-q"]
    code, _, stderr = run(
        "enrich", left, right, "-o", out, *keys, "--by", "('k', 'sym')", capsys=capsys
    )
    assert code == 2 and not out.exists()
    assert (
        "LEFT file " + str(left) + " has no column \"('k'\"; a name that holds a comma goes in "
        "double quotes: \"('k', 't')\" or \"('k', 'sym')\"" in stderr
    )
    # --on takes one name, never split: no quotes to suggest
    code, _, stderr = run(
        "enrich", left, right, "-o", out, "--on", "('k'", *keys[2:], capsys=capsys
    )
    assert code == 2 and "double quotes" not in stderr
    assert "has no column \"('k'\" (its columns: ('k', 't'), ('k', 'sym'))" in stderr
    code, _, stderr = run(
        "enrich",
        left,
        right,
        "-o",
        out,
        *keys,
        "--by",
        "\"('k', 'sym')\"",
        "--columns",
        ' "bid, ""best""" , ask',
        capsys=capsys,
    )
    assert code == 0, stderr
    want = expected(left, right, on="('k', 't')", by="('k', 'sym')")
    assert pq.read_table(out).equals(want)
    assert pq.read_table(out)['bid, "best"'].to_pylist() == [1.0, None, 4.0]


@pytest.mark.usefixtures("left_columns")
def test_columns_pick_order_and_suffix(day, tmp_path, capsys):
    trades, quotes = day
    out = tmp_path / "out.parquet"
    code, stdout, _ = run(
        "enrich",
        trades,
        quotes,
        "-o",
        out,
        "--on",
        "time",
        "--by",
        "symbol",
        "--columns",
        "ask,bid",
        "--columns",
        "time",
        "--suffix",
        "_q",
        "--device",
        "cpu",
        capsys=capsys,
    )
    assert code == 0
    got = pq.read_table(out)
    assert got.column_names == ["time", "symbol", "price", "size", "ask", "bid", "time_q"]
    full = expected(trades, quotes, on="time", by="symbol", coalesce=False, suffix="_q")
    assert got.equals(full.select(got.column_names))
    assert "attached   ask, bid, time_q from 600 right rows" in stdout
    matched = got.filter(got["time_q"].is_valid())
    assert matched.num_rows > 300  # a backward match is never later than its trade
    assert (
        matched["time"].cast(pa.int64()).to_numpy() >= matched["time_q"].cast(pa.int64()).to_numpy()
    ).all()


@pytest.mark.usefixtures("left_columns")
def test_summary_reports_match_share_and_exact_staleness(tmp_path, capsys):
    left = write(pa.table({"t": np.arange(0, 1000, 3, dtype=np.int64)}), tmp_path / "l.parquet")
    right = write(
        pa.table({"t": np.arange(100, 1000, 7, dtype=np.int64), "v": np.arange(129)}),
        tmp_path / "r.parquet",
    )
    code, stdout, _ = run(
        "enrich",
        left,
        right,
        "-o",
        tmp_path / "o.parquet",
        "--on",
        "t",
        "--device",
        "cpu",
        "--chunk-rows",
        50,
        capsys=capsys,
    )
    assert code == 0
    got = pq.read_table(tmp_path / "o.parquet")
    right_t = pq.read_table(right)["t"].to_numpy()
    matched = got["v"].is_valid().to_numpy(zero_copy_only=False)
    stale = got["t"].to_numpy()[matched] - right_t[got["v"].drop_null().to_numpy()]
    p50, p99 = (int(np.percentile(stale, q, method="lower")) for q in (50, 99))
    n = got.num_rows
    assert (
        f"matched    {matched.mean():.1%} ({matched.sum():,} rows; {n - matched.sum():,} "
        f"without a match)" in stdout
    )
    assert f"staleness  p50 {p50}, p99 {p99} (LEFT t minus RIGHT t)" in stdout
    assert "backend    cpu" in stdout


def test_temporal_staleness_reads_in_units_and_units_may_differ(tmp_path, capsys):
    base = np.datetime64("2026-11-27T14:30:00", "ms")
    left = write(
        pa.table({"t": pa.array(base + np.arange(0, 100_000, 1000), pa.timestamp("ms"))}),
        tmp_path / "l.parquet",
    )
    right = write(
        pa.table(
            {
                "t": pa.array(
                    (base + np.arange(0, 100_000, 4000) - 3).astype("datetime64[ns]"),
                    pa.timestamp("ns"),
                ),
                "v": np.arange(25.0),
            }
        ),
        tmp_path / "r.parquet",
    )
    code, stdout, _ = run(
        "enrich",
        left,
        right,
        "-o",
        tmp_path / "o.parquet",
        "--on",
        "t",
        "--device",
        "cpu",
        capsys=capsys,
    )
    assert code == 0
    assert pq.read_table(tmp_path / "o.parquet").equals(expected(left, right, on="t"))
    assert "staleness  p50 1.00 s, p99 3.00 s" in stdout  # 3 ms, 1.003 s, 2.003 s, 3.003 s


@pytest.mark.usefixtures("left_columns")
def test_empty_left_and_empty_right(tmp_path, capsys):
    trades = pa.table({"t": pa.array([], pa.int64()), "x": pa.array([], pa.string())})
    quotes = pa.table({"t": [1, 2], "bid": [1.0, 2.0]})
    left, right = write(trades, tmp_path / "l.parquet"), write(quotes, tmp_path / "r.parquet")
    out = tmp_path / "o.parquet"
    assert (
        run("enrich", left, right, "-o", out, "--on", "t", "--device", "cpu", capsys=capsys)[0] == 0
    )
    assert pq.read_table(out).equals(expected(left, right, on="t"))
    code, stdout, _ = run(
        "enrich", right, left, "-o", out, "--on", "t", "--device", "cpu", capsys=capsys
    )
    assert code == 0
    got = pq.read_table(out)
    assert got.equals(expected(right, left, on="t")) and got["x"].null_count == 2
    assert "matched    0% (0 rows; 2 without a match)" in stdout
    assert "staleness  no matched rows" in stdout


def test_progress_lines_on_stderr_off_a_terminal(day, tmp_path, capsys):
    trades, quotes = day
    code, stdout, stderr = run(
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
        "--chunk-rows",
        100,
        capsys=capsys,
    )
    assert code == 0 and stdout.startswith("asofgpu enrich: wrote ")
    lines = stderr.splitlines()
    assert lines[0].startswith("asofgpu enrich: reading RIGHT ")
    assert "right side read and prepared (600 right rows) in " in lines[1] and lines[1].endswith(
        " on cpu"
    )
    assert re.fullmatch(
        r"asofgpu enrich: 400 / 400 rows \(100%\), [\d.]+( [kMG])? rows/s, "
        r"ETA 0:00:00",
        lines[-1],
    )
    assert len(lines) == 7  # three phases, one line per quarter of the file


def test_a_streamed_rights_first_log_line_counts_all_its_rows_as_such(tmp_path, capsys):
    """A stream reads RIGHT a window at a time: its first line says so, and that the count
    is RIGHT's rows in all, not the window's."""
    quotes, trades = marketdata.day(n_quotes=600, n_trades=400, n_symbols=12, seed=3)
    code, _, stderr = run(
        "enrich",
        write(trades, tmp_path / "trades.parquet"),
        write(quotes, tmp_path / "quotes.parquet", row_group_size=128),
        "-o",
        tmp_path / "o.parquet",
        "--on",
        "time",
        "--by",
        "symbol",
        "--device",
        "cpu",
        "--right-mode",
        "stream",
        capsys=capsys,
    )
    assert code == 0
    assert (
        "checks and the first window read (RIGHT streamed in windows, 600 rows in all) in "
        in stderr.splitlines()[1]
    )


def test_progress_bar_on_a_terminal(day, tmp_path, capsys, monkeypatch):
    pytest.importorskip("rich")
    trades, quotes = day
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # pytest captures: no terminal
    code, stdout, stderr = run(
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
        "--chunk-rows",
        100,
        capsys=capsys,
    )
    assert code == 0 and "wrote" in stdout
    assert "400 / 400 rows" in stderr and "rows/s" in stderr and "ETA" in stderr


def test_output_replaces_an_existing_file_with_the_usual_mode(day, tmp_path, capsys):
    trades, quotes = day
    out = tmp_path / "o.parquet"
    out.write_text("old")
    assert (
        run(
            "enrich",
            trades,
            quotes,
            "-o",
            out,
            "--on",
            "time",
            "--by",
            "symbol",
            "-q",
            "--device",
            "cpu",
        )[0]
        == 0
    )
    assert pq.read_table(out).num_rows == 400
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask


@pytest.mark.parametrize(
    ("flag", "codec"),
    [
        ([], "SNAPPY"),
        (["--compression", "zstd:7"], "ZSTD"),
        (["--compression", "GZIP"], "GZIP"),
        (["--compression", "none"], "UNCOMPRESSED"),
    ],
)
def test_compression_codec_and_level(day, tmp_path, capsys, flag, codec):
    trades, quotes = day
    out = tmp_path / "out.parquet"
    assert (
        run(
            "enrich",
            trades,
            quotes,
            "-o",
            out,
            "--on",
            "time",
            "--by",
            "symbol",
            "-q",
            "--device",
            "cpu",
            "--chunk-rows",
            150,
            *flag,
            capsys=capsys,
        )[0]
        == 0
    )
    meta = pq.ParquetFile(out).metadata
    assert meta.num_row_groups == 3 and {
        meta.row_group(g).column(c).compression for g in range(3) for c in range(8)
    } == {codec}
    assert pq.read_table(out).equals(expected(trades, quotes, on="time", by="symbol"))


# ----------------------------------------------------------------------------- bad input


def _empty(tmp_path: Path) -> Path:
    (tmp_path / "empty").mkdir(exist_ok=True)
    return tmp_path / "empty"


def _folder_of(path: Path) -> Path:
    """A folder holding a copy of ``path``: a source of several files' kind."""
    folder = path.parent / f"{path.stem}-folder"
    folder.mkdir(exist_ok=True)
    shutil.copy(path, folder / path.name)
    return folder


def _junk(tmp_path: Path) -> Path:
    path = tmp_path / "junk.parquet"
    path.write_text("not parquet")
    return path


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["{missing}", "{quotes}", "--on", "time"], "LEFT file {missing} does not exist"),
        (["{trades}", "{missing}", "--on", "time"], "RIGHT file {missing} does not exist"),
        (
            ["", "{quotes}", "--on", "time"],
            "LEFT must name a parquet file, a folder or a glob, got ''",
        ),
        (
            ["{empty}", "{quotes}", "--on", "time"],
            "LEFT folder {empty} holds no parquet files (*.parquet)",
        ),
        (
            ["{trades}", "{tmp}/nothing-*.parquet", "--on", "time"],
            "RIGHT glob '{tmp}/nothing-*.parquet' matches no file",
        ),
        (["{trades}", "{junk}", "--on", "time"], "cannot read RIGHT file {junk} as parquet: "),
        (
            ["{trades}", "{quotes}", "--on", "tme"],
            "LEFT file {trades} has no column 'tme'; did you mean 'time'? (its columns: time, "
            "symbol, price, size)",
        ),
        (
            ["{trades}", "{quotes}", "--on", "time", "--by", "sym"],
            "LEFT file {trades} has no column 'sym'; did you mean 'symbol'?",
        ),
        (
            ["{trades}", "{quotes}", "--left-on", "time", "--right-on", "ts"],
            "RIGHT file {quotes} has no column 'ts' (its columns: time, symbol, bid, ask, bid_size, "
            "ask_size)",
        ),
        (  # "RIGHT files <folder> has no column": a folder is named as one
            ["{trades}", "{quotes_folder}", "--left-on", "time", "--right-on", "ts"],
            "RIGHT folder {quotes_folder} has no column 'ts' (its columns: time, symbol, ",
        ),
        (
            ["{trades}", "{quotes_folder}/*.parquet", "--left-on", "time", "--right-on", "ts"],
            "RIGHT files {quotes_folder}/*.parquet have no column 'ts' (its columns: time, ",
        ),
        (
            ["{trades}", "{quotes}", "--on", "time", "--columns", "bid,spread"],
            "RIGHT file {quotes} has no column 'spread' (named in --columns) (its columns: time, "
            "symbol, bid, ask, bid_size, ask_size)",
        ),
        (
            ["{trades}", "{quotes}", "--left-on", "size", "--right-on", "time"],
            "LEFT column 'size' (int64) and RIGHT column 'time' (timestamp[ns, tz=UTC]) cannot be "
            "compared: the as-of key must have the same type family on both sides.",
        ),
        (
            ["{trades}", "{quotes}", "--on", "time", "--left-by", "size", "--right-by", "symbol"],
            "LEFT column 'size' (int64) and RIGHT column 'symbol' (string) cannot be compared",
        ),
        (
            ["{trades}", "{quotes}", "--left-on", "size", "--right-on", "bid_size"],
            "LEFT column 'size' (int64) and RIGHT column 'bid_size' (double) cannot be compared",
        ),
        (
            ["{trades}", "{quotes}", "--on", "time", "--tolerance", "5 parsecs"],
            "--tolerance: '5 parsecs': unknown unit 'parsecs'; use one of ns, us, ms, s, m, h, d, w "
            "(e.g. 1m30s), or on date and timestamp keys the calendar's mo, q, y",
        ),
        (
            ["{trades}", "{trades}", "--on", "size", "--tolerance", "1mo"],
            "--tolerance '1mo' has calendar units (months, quarters, years), which need a date "
            "or timestamp key; LEFT column 'size' is int64",
        ),
        (
            ["{trades}", "{quotes}", "--on", "time", "--tolerance=-5s"],
            "--tolerance: a duration must not be negative, got '-5s'",
        ),
        (  # argparse took "-5s" for an option: "--tolerance: expected one argument"
            ["{trades}", "{quotes}", "--on", "time", "--tolerance", "-5s"],
            "--tolerance: a duration must not be negative, got '-5s'",
        ),
        (
            ["{trades}", "{quotes}", "--on", "time", "--memory-limit", "-1GiB"],
            "--memory-limit: expected a size such as 1GiB, 512MiB, 2GB or a number of bytes, "
            "got '-1GiB'",
        ),
        (
            ["{trades}", "{trades}", "--on", "size", "--tolerance", "5s"],
            "--tolerance: a duration needs a temporal key (date, time, timestamp or duration), the "
            "key is int64. Hint: pass a number in the key's unit.",
        ),
        (
            ["{trades}", "{quotes}", "--on", "time", "--strategy", "closest"],
            "argument --strategy: invalid choice: 'closest'",
        ),
        (
            ["{trades}", "{quotes}", "--on", "time", "--chunk-rows", "0"],
            "argument --chunk-rows: expected a positive number, got 0",
        ),
        (
            ["{trades}", "{quotes}", "--on", "time", "--chunk-rows", "many"],
            "argument --chunk-rows: expected a whole number, got 'many'",
        ),
        (
            ["{trades}", "{quotes}"],
            "the as-of key is missing: pass --on COL, or --left-on and --right-on",
        ),
        (
            ["{trades}", "{quotes}", "--on", "time", "--left-on", "time"],
            "pass either --on, or --left-on and --right-on, not both",
        ),
        (
            ["{trades}", "{quotes}", "--left-on", "time"],
            "--left-on and --right-on must be given together",
        ),
        (
            ["{trades}", "{quotes}", "--on", "time", "--left-by", "symbol"],
            "--left-by and --right-by must be given together",
        ),
        (
            ["{trades}", "{quotes}", "--on", "time", "--by", "symbol", "--left-by", "symbol"],
            "pass either --by, or --left-by and --right-by, not both",
        ),
        (
            [
                "{trades}",
                "{quotes}",
                "--on",
                "time",
                "--left-by",
                "symbol",
                "--right-by",
                "symbol,bid",
            ],
            "--left-by and --right-by must name as many columns, got 1 and 2",
        ),
        (
            ["{trades}", "{quotes}", "--on", "time", "--by", "symbol,"],
            "argument --by: expected column names separated by commas (a name with a comma in "
            "double quotes: \"a,b\"), got 'symbol,'",
        ),
        (
            ["{trades}", "{quotes}", "--on", "time", "--columns", '"bid,ask'],
            "argument --columns: expected column names separated by commas (a name with a comma "
            'in double quotes: "a,b"), got \'"bid,ask\'',
        ),
        (
            ["{trades}", "{quotes}", "--on", "time", "--columns", "bid,bid"],
            "--columns names 'bid' more than once",
        ),
        (
            [
                "{trades}",
                "{trades}",
                "--on",
                "time",
                "--by",
                "symbol",
                "--suffix",
                "",
                "--columns",
                "price",
            ],
            "column 'price' would appear twice in OUT: the RIGHT column 'price' clashes "
            "with a LEFT column even with --suffix ''",
        ),
        (
            ["{trades}", "{quotes}", "--on", "time", "--device", "tpu"],
            "argument --device: invalid choice: 'tpu'",
        ),
        (
            ["{trades}", "{quotes}", "--on", "time", "--strat", "forward"],
            "unrecognized arguments: --strat forward",
        ),
        (
            ["{trades}", "{quotes}", "--on", "time", "--compression", "lzo"],
            "argument --compression: expected one of none, snappy, gzip, brotli, lz4, zstd, "
            "optionally with :LEVEL, got 'lzo'",
        ),
        (
            ["{trades}", "{quotes}", "--on", "time", "--compression", "zstd:high"],
            "argument --compression: expected a whole-number level after zstd:, got 'zstd:high'",
        ),
        (
            ["{trades}", "{quotes}", "--on", "time", "--compression", "snappy:3"],
            "--compression snappy takes no level, got snappy:3",
        ),
        (
            ["{trades}", "{quotes}", "--on", "time", "--compression", "zstd:99"],
            "--compression zstd: the level must be a whole number from -131072 to 22, got 99",
        ),
    ],
)
def test_bad_input_exits_2_with_one_line_and_no_output(day, tmp_path, capsys, argv, message):
    trades, quotes = day
    names = {
        "trades": trades,
        "quotes": quotes,
        "missing": tmp_path / "missing.parquet",
        "empty": _empty(tmp_path),
        "tmp": tmp_path,
        "junk": _junk(tmp_path),
        "quotes_folder": _folder_of(quotes),
    }
    out = tmp_path / "out.parquet"
    device = [] if "--device" in argv else ["--device", "cpu"]
    code, stdout, stderr = run(
        "enrich", *(a.format(**names) for a in argv), "-o", out, *device, capsys=capsys
    )
    assert code == 2
    assert stdout == ""
    assert stderr.count("\n") == 1 and stderr.startswith("asofgpu enrich: error: ")
    assert message.format(**names) in stderr
    assert "Traceback" not in stderr
    assert not out.exists() and leftovers(tmp_path) == []


@pytest.mark.parametrize(
    ("out", "message"),
    [
        ("{tmp}", "OUT {tmp} is a directory; pass a file path, e.g. -o {tmp}/enriched.parquet"),
        ("", "-o/--output: expected a path to write, got ''"),
        (
            "{tmp}/no/such/dir/o.parquet",
            "the directory of OUT {tmp}/no/such/dir/o.parquet does not exist",
        ),
        (  # (found at the rename, after the work: exit 1, "File name too long")
            "{tmp}/" + "o" * 248 + ".parquet",
            "OUT {tmp}/" + "o" * 248 + ".parquet: its name is 256 bytes, and a name in {tmp} "
            "holds at most 255",
        ),
        (  # (it said "does not exist")
            "{trades}/o.parquet",
            "the directory of OUT {trades}/o.parquet, {trades}, is not a folder",
        ),
        ("{trades}", "OUT {trades} is the LEFT file; write to another path"),
        (
            "/dev/null",
            "OUT /dev/null is not a regular file; enrich writes a parquet file and "
            "renames it into place",
        ),
        (
            "-",
            "OUT - would be standard output, which enrich cannot write: it writes OUT beside "
            "itself and renames it into place; pass a file or folder path (./- for a file "
            "named '-')",
        ),
        (
            "/dev/stdout",
            "OUT /dev/stdout is a stream (a process's open file), not a path: enrich writes "
            "OUT beside itself and renames it into place; pass a file or folder path",
        ),
    ],
)
def test_bad_output_paths(day, tmp_path, capsys, out, message):
    trades, quotes = day
    before = trades.read_bytes()
    out = out.format(tmp=tmp_path, trades=trades)
    code, _, stderr = run(
        "enrich", trades, quotes, "-o", out, "--on", "time", "--device", "cpu", capsys=capsys
    )
    assert code == 2
    assert stderr == f"asofgpu enrich: error: {message.format(tmp=tmp_path, trades=trades)}\n"
    assert trades.read_bytes() == before and leftovers(tmp_path) == []


def test_a_dangling_link_as_out_names_the_missing_directory(day, tmp_path, capsys):
    """Its target's directory is missing, not OUT's (which the message said)."""
    trades, quotes = day
    link = tmp_path / "out.parquet"
    link.symlink_to(tmp_path / "gone" / "out.parquet")
    code, _, stderr = run("enrich", trades, quotes, "-o", link, "--on", "time", capsys=capsys)
    real = os.path.realpath(tmp_path)  # (as the message resolves it)
    assert (code, stderr) == (
        2,
        f"asofgpu enrich: error: OUT {link} is a link to {real}/gone/out.parquet, whose "
        f"directory {real}/gone does not exist\n",
    )
    assert link.is_symlink() and _dotted(tmp_path) == []


def test_an_out_through_a_processs_open_file_is_refused_and_the_file_kept(day, tmp_path, capsys):
    """``-o /dev/stdout >> log.txt``: /dev/stdout leads to /proc/self/fd/1 and on to
    log.txt, which renaming OUT into place replaced (exit 0, the log gone). Here through
    /dev/fd/N, a link of the user's to it, and a link to /dev/fd on the way."""
    trades, quotes = day
    log = tmp_path / "log.txt"
    log.write_text("keep me\n")
    link, folder_link = tmp_path / "out.parquet", tmp_path / "fds"
    folder_link.symlink_to("/dev/fd")
    with open(log, "a") as held:
        link.symlink_to(f"/dev/fd/{held.fileno()}")
        for out in (f"/dev/fd/{held.fileno()}", link, folder_link / str(held.fileno())):
            keys = ("--on", "time", "--device", "cpu")
            code, _, stderr = run("enrich", trades, quotes, "-o", out, *keys, capsys=capsys)
            assert code == 2 and f"OUT {out} is a stream (a process's open file)" in stderr
    assert log.read_text() == "keep me\n"


@pytest.mark.usefixtures("left_columns")
def test_bad_data_in_a_later_chunk_exits_2_and_leaves_nothing(tmp_path, capsys):
    """Times past year 2262 cannot become nanoseconds: found only when that chunk comes
    (parquet stores seconds as milliseconds)."""
    seconds = np.arange(0, 100, dtype=np.int64)
    seconds[70] = 40_000 * 365 * 86_400  # year ~41970
    left = write(pa.table({"t": pa.array(seconds, pa.timestamp("s"))}), tmp_path / "l.parquet")
    right = write(
        pa.table({"t": pa.array([0, 5 * 10**9], pa.timestamp("ns")), "v": [1, 2]}),
        tmp_path / "r.parquet",
    )
    out = tmp_path / "o.parquet"
    code, _, stderr = run(
        "enrich",
        left,
        right,
        "-o",
        out,
        "--on",
        "t",
        "--device",
        "cpu",
        "--chunk-rows",
        25,
        "-q",
        capsys=capsys,
    )
    assert code == 2
    assert stderr == (
        "asofgpu enrich: error: LEFT column 't' (timestamp[ms]) holds values that "
        "overflow int64 when converted to the other side's finer unit. Hint: cast "
        "both keys to the coarser unit.\n"
    )
    assert not out.exists() and leftovers(tmp_path) == []


@pytest.mark.usefixtures("left_columns")
@pytest.mark.parametrize("mode", ["memory", "stream", "spill"])
def test_enrich_on_the_cuda_backend(tmp_path, capsys, mode):
    """The simulator pass (NUMBA_ENABLE_CUDASIM=1) or a real GPU: the same file as on cpu,
    whichever way RIGHT is held (time-sorted files, so that it can be streamed)."""
    from asofgpu._backend import cudasim_enabled, cuda_usable

    if not (cuda_usable() or cudasim_enabled()):
        pytest.skip("no GPU and NUMBA_ENABLE_CUDASIM is not set (make test runs the simulator)")
    quotes, trades = marketdata.day(n_quotes=60, n_trades=40, n_symbols=4, seed=8)
    left, right = write(trades, tmp_path / "t.parquet"), write(quotes, tmp_path / "q.parquet")
    out = tmp_path / "o.parquet"
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
        "--strategy",
        "nearest",
        "--device",
        "cuda",
        "--chunk-rows",
        16,
        "--right-mode",
        mode,
        capsys=capsys,
    )
    assert code == 0 and "backend    cuda" in stdout
    want = expected(left, right, on="time", by="symbol", strategy="nearest")
    assert pq.read_table(out).equals(want)


def test_cuda_without_a_gpu_is_bad_input(day, tmp_path, capsys):
    from asofgpu._backend import cudasim_enabled, cuda_usable

    if cuda_usable() or cudasim_enabled():
        pytest.skip("a CUDA backend is usable here")
    trades, quotes = day
    code, _, stderr = run(
        "enrich",
        trades,
        quotes,
        "-o",
        tmp_path / "o.parquet",
        "--on",
        "time",
        "--device",
        "cuda",
        capsys=capsys,
    )
    assert code == 2
    assert stderr.startswith("asofgpu enrich: error: --device cuda needs an NVIDIA GPU")
    assert "or use --device cpu" in stderr
    assert not (tmp_path / "o.parquet").exists()


# ----------------------------------------------------------------------------- failing midway


@pytest.mark.usefixtures("left_columns", "heeding_interrupts")
@pytest.mark.parametrize(
    "error", [KeyboardInterrupt, signal.SIGTERM, signal.SIGHUP, "dropped", RuntimeError("bug")]
)
def test_a_run_that_fails_midway_leaves_nothing(day, tmp_path, capsys, failing_gather_at, error):
    """The second chunk's gather fails (tests/fakes.py), once the first chunk is written; or
    a Ctrl-C lands in a callback from C (numba compiling), which drops its KeyboardInterrupt:
    the run still ends at the next chunk, with nothing on stderr but its one line. SIGHUP
    (the terminal closed) ended the process by the signal, its hidden files left behind."""
    trades, quotes = day
    out = tmp_path / "out.parquet"
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGHUP)}

    def midway():
        assert leftovers(tmp_path), "the output goes to a temporary file first"
        assert not out.exists()

    calls = failing_gather_at(2, error, midway)
    argv = [
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
        100,
    ]
    if isinstance(error, RuntimeError):  # a bug: its traceback is shown, the file still goes
        with pytest.raises(RuntimeError, match="bug"):
            run(*argv)
    else:
        code, stdout, stderr = run(*argv, capsys=capsys)
        assert code == {signal.SIGTERM: 143, signal.SIGHUP: 129}.get(error, 130)
        assert stderr.endswith("asofgpu enrich: interrupted; no output was written\n")
        assert "Exception ignored" not in stderr and "Traceback" not in stderr
        assert "wrote" not in stdout
    assert len(calls) == 2  # a dropped one is raised before the third chunk's gather
    assert not out.exists() and leftovers(tmp_path) == []
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert signal.getsignal(signal.SIGHUP) is handlers[signal.SIGHUP]
    assert signal.getsignal(signal.SIGINT) is handlers[signal.SIGINT]  # (xdist's: ignored)


@pytest.mark.usefixtures("interrupted_after_commit")
def test_an_interrupt_after_the_commit_says_the_output_is_there(day, tmp_path, capsys):
    trades, quotes = day
    out = tmp_path / "out.parquet"
    code, _, stderr = run(
        "enrich", trades, quotes, "-o", out, "--on", "time", "--device", "cpu", capsys=capsys
    )
    assert code == 130
    assert stderr.endswith("asofgpu enrich: interrupted after the output was written\n")
    assert pq.read_table(out).num_rows == pq.read_metadata(trades).num_rows
    assert leftovers(tmp_path) == []


def _heeding_signals() -> None:
    """In the child before Python: SIGINT and SIGHUP heeded, as in a terminal's foreground
    (where this process ignores them: a background job, or ``nohup``)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _enrich_begun(trades, quotes, out, start=_heeding_signals) -> tuple[subprocess.Popen, str]:
    """``asofgpu enrich`` as a process, once it has logged its first line (the run began).
    ``start`` runs in the child before Python: by default SIGINT is heeded there, as in a
    terminal's foreground, even where this process was started ignoring it (in the
    background, as CI may be), which the child would inherit."""
    argv = ["enrich", trades, quotes, "-o", out, "--on", "time", "--chunk-rows", 100]
    process = subprocess.Popen(
        [sys.executable, "-m", "asofgpu", *map(str, argv), "--device", "cpu"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=start,
    )
    return process, process.stderr.readline()


@pytest.mark.slow  # asofgpu enrich as processes
@pytest.mark.usefixtures("left_columns")
@pytest.mark.parametrize("after", [0.0, 0.01, 0.03, 0.06, 0.1])
def test_ctrl_c_at_any_moment_of_a_run_exits_130_without_a_traceback(day, tmp_path, after):
    """Ctrl-C from the run's first log line on: one line, exit 130, nothing left. (Before it,
    while Python imports the package, Python's own traceback is what a Ctrl-C gives.)"""
    trades, quotes = day
    out = tmp_path / "out.parquet"
    process, first = _enrich_begun(trades, quotes, out)
    time.sleep(after)
    process.send_signal(signal.SIGINT)
    _, rest = process.communicate(timeout=120)
    stderr = first + rest
    assert process.returncode in (0, 130), stderr  # 0: done before the signal came
    assert "Traceback" not in stderr and "Exception ignored" not in stderr
    if process.returncode == 130:
        said = stderr.splitlines()[-1]
        assert said in (
            "asofgpu enrich: interrupted; no output was written",
            "asofgpu enrich: interrupted after the output was written",
            "asofgpu: interrupted",  # between the run's end and the process's
        ), stderr
        assert out.exists() is not said.endswith("no output was written")
    if out.exists():  # whole
        assert pq.read_table(out).num_rows == pq.read_metadata(trades).num_rows
    assert leftovers(tmp_path) == []


def _exit_of_module(tmp_path, source: str) -> subprocess.CompletedProcess:
    """``python -m`` on a module of ``source``: only ``-m`` heeds CPython's note of an
    interrupt that left ``exec``'d code (a file run exits with its ``sys.exit`` code)."""
    (tmp_path / "program.py").write_text(textwrap.dedent(source))
    return subprocess.run(
        [sys.executable, "-m", "program"], cwd=tmp_path, capture_output=True, text=True
    )


@pytest.mark.parametrize(("then", "code"), [("return 130", 130), ("raise SystemExit(2)", 2)])
def test_a_ctrl_c_caught_in_generated_code_still_exits_as_the_command_says(tmp_path, then, code):
    """Ctrl-C while numba ran its generated code (``exec`` of a string): the run said it was
    interrupted, and the process ended by SIGINT (returncode -2), now and then, instead of
    exiting 130 as it said; so did a usage error (``SystemExit``) after one."""
    done = _exit_of_module(
        tmp_path,
        f"""
        import sys
        from asofgpu import cli

        def interrupted_in_generated_code():
            try:
                exec("raise KeyboardInterrupt")
            except KeyboardInterrupt:
                print("interrupted", file=sys.stderr)
                {then}

        cli.main = interrupted_in_generated_code
        sys.exit(cli.entry())
        """,
    )
    assert (done.returncode, done.stderr) == (code, "interrupted\n")


def test_a_ctrl_c_in_generated_code_of_the_commands_imports_exits_130(tmp_path):
    """The same while ``python -m asofgpu`` imports its command (dataclasses, namedtuple and
    numba build classes and functions by ``exec``)."""
    done = _exit_of_module(
        tmp_path,
        """
        import importlib.abc, runpy, sys

        class InterruptedImport(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name == "asofgpu.cli":
                    exec("raise KeyboardInterrupt")

        sys.meta_path.insert(0, InterruptedImport())
        runpy.run_module("asofgpu", run_name="__main__")
        """,
    )
    assert (done.returncode, done.stderr) == (130, "asofgpu: interrupted\n")


@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)]
)
@pytest.mark.parametrize("interrupted", ["numpy", "asofgpu.cli"])
@pytest.mark.parametrize("twice", [False, True], ids=["once", "twice"])
def test_a_signal_while_the_script_imports_the_command_exits_as_documented(
    tmp_path, interrupted, signum, code, twice
):
    """The ``asofgpu`` script (``asofgpu.__main__:run``, as pip writes it) interrupted while
    the command's modules import, numpy's or asofgpu's own: one line and 130, where a
    traceback came when the package's ``__init__`` imported the library first; SIGTERM
    and SIGHUP then ended the process by the signal (returncode -15, -1), not 143 and 129.
    So did a second signal while the first was told (Ctrl-C pressed twice: -2, not 130)."""
    script = tmp_path / "asofgpu-script"
    script.write_text(
        textwrap.dedent(
            f"""
            import importlib.abc, signal, sys
            from asofgpu import _signals

            class InterruptedImport(importlib.abc.MetaPathFinder):
                def find_spec(self, name, path, target=None):
                    if name == {interrupted!r}:
                        signal.raise_signal({int(signum)})

            told = _signals.say

            def say_after_another(line):
                signal.raise_signal({int(signum)})
                told(line)

            if {twice!r}:
                _signals.say = say_after_another
            sys.meta_path.insert(0, InterruptedImport())
            from asofgpu.__main__ import run
            sys.exit(run())
            """
        )
    )
    done = subprocess.run(
        [sys.executable, str(script), "enrich", "--help"],
        capture_output=True,
        text=True,
        preexec_fn=_heeding_signals,
    )
    assert (done.returncode, done.stderr) == (code, "asofgpu: interrupted\n")


def test_the_last_line_to_a_closed_terminal_keeps_the_exit_code():
    """After SIGHUP the terminal is gone: the line "interrupted" cannot be written, stays in
    stderr's buffer, and Python's flush at exit failed again and made the exit code 120, not
    129. (Unbuffered, as PYTHONUNBUFFERED makes it, it did not.)"""
    import pty

    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    code = (
        "import os, sys; from asofgpu._signals import say\n"
        "print('a summary line')  # (stdout's buffer too)\n"
        "sys.stdin.read()  # until the terminal is closed\n"
        "say('asofgpu: interrupted'); sys.exit(129)"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=slave, stderr=slave, env=env
    )
    os.close(slave)
    os.close(master)
    process.stdin.close()
    assert process.wait(timeout=60) == 129
    # started with stderr closed (2>&-: sys.stderr is None), the line went nowhere, and the
    # exit code was 1 (an AttributeError of its flush)
    code = "import sys; from asofgpu._signals import say; say('interrupted'); sys.exit(130)"
    closed = subprocess.run(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, preexec_fn=lambda: os.close(2)
    )
    assert (closed.returncode, closed.stdout) == (130, b"")


def test_a_signal_dropped_while_the_command_imports_ends_the_run(tmp_path):
    """SIGTERM raised inside a callback from C while the command's modules import (numba's
    compiler calls back through ctypes), which drops what the handler raised: the run ends
    as it begins, as for one that was not dropped, where it went on as if none had come."""
    script = tmp_path / "asofgpu-script"
    script.write_text(
        textwrap.dedent(
            """
            import ctypes, importlib.abc, signal, sys

            class DroppedInImport(importlib.abc.MetaPathFinder):
                def find_spec(self, name, path, target=None):
                    if name == "asofgpu.cli":
                        def body():
                            signal.raise_signal(signal.SIGTERM)
                        ctypes.CFUNCTYPE(None)(body)()  # ctypes drops the exception

            sys.meta_path.insert(0, DroppedInImport())
            from asofgpu.__main__ import run
            sys.exit(run())
            """
        )
    )
    argv = ["enrich", tmp_path / "none.parquet", tmp_path / "none.parquet", "-o", tmp_path / "o"]
    done = subprocess.run(
        [sys.executable, str(script), *map(str, argv), "--on", "t"],
        capture_output=True,
        text=True,
        preexec_fn=_heeding_signals,
    )
    said = "asofgpu enrich: interrupted; no output was written\n"
    assert (done.returncode, done.stderr) == (143, said)  # ("Exception ignored ..." kept off)


@pytest.mark.slow  # asofgpu enrich as a process
def test_a_run_started_ignoring_ctrl_c_goes_on_ignoring_it(day, tmp_path):
    """A background job of a shell script (``asofgpu enrich ... &``) starts with SIGINT
    ignored, so that a Ctrl-C at the terminal leaves it running, as Python leaves it: enrich
    put its own handler over that, and the terminal's Ctrl-C ended the job (exit 130)."""
    trades, quotes = day
    out = tmp_path / "out.parquet"
    process, first = _enrich_begun(
        trades, quotes, out, start=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)
    )
    process.send_signal(signal.SIGINT)
    _, rest = process.communicate(timeout=120)
    assert process.returncode == 0, first + rest
    assert pq.read_table(out).num_rows == pq.read_metadata(trades).num_rows


@pytest.mark.slow  # asofgpu enrich as a process (the file-size limit is the process's)
@pytest.mark.usefixtures("left_columns")
def test_a_write_error_exits_1_and_keeps_the_old_output(day, tmp_path):
    """A real failed write: the file-size limit (RLIMIT_FSIZE) stops the output mid-way."""
    import resource

    trades, quotes = day
    out = tmp_path / "out.parquet"
    out.write_text("the previous result")

    def limit_file_size():
        resource.setrlimit(resource.RLIMIT_FSIZE, (4_000, 4_000))

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "asofgpu",
            "enrich",
            trades,
            quotes,
            "-o",
            out,
            "--on",
            "time",
            "--device",
            "cpu",
            "--chunk-rows",
            "100",
            "-q",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        preexec_fn=limit_file_size,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"asofgpu enrich: error: cannot write OUT {out}: "
        f"[Errno 27] File too large; nothing was written"
    )
    assert out.read_text() == "the previous result" and leftovers(tmp_path) == []


def _dead_pid() -> int:
    """The process id of a process that has ended."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


@pytest.mark.parametrize("mode", ["memory", "spill"])
def test_a_run_removes_what_killed_runs_on_this_host_left(day, tmp_path, capsys, mode):
    """SIGKILL (the OOM killer, kill -9) leaves a run's hidden files for good: partial OUTs
    and spill folders as large as the inputs piled up beside OUT and in --tmp-dir. Their
    names carry host and process id; the next run removes those of processes that are gone,
    and leaves a live run's, another host's and a name of another form alone."""
    import socket

    from asofgpu.enrich import _leftovers

    trades, quotes = day
    spill = tmp_path / "spill"
    spill.mkdir()
    host = _leftovers._host()
    assert host.startswith("".join(c for c in socket.gethostname() if c.isalnum())[:24])
    dead, alive = _dead_pid(), os.getpid()
    assert _leftovers.tag() == f"{host}-{alive}"
    stale = [
        tmp_path / f".out.parquet.{host}-{dead}.k2j4x9_a.asofgpu-partial",
        tmp_path / f".out.parquet.{host}-{dead}.q8w7e6r5.asofgpu-old",
        spill / f".asofgpu-spill-{host}-{dead}-p0o9i8u7",
    ]
    kept = [
        tmp_path / f".out.parquet.{host}-{alive}.a1b2c3d4.asofgpu-partial",
        tmp_path / f".out.parquet.otherhost-{dead}.a1b2c3d4.asofgpu-partial",
        spill / f".asofgpu-spill-otherhost-{dead}-z1x2c3v4",
        tmp_path / ".out.parquet.a1b2c3d4.asofgpu-partial",  # an earlier version's name
    ]
    for path in stale + kept:
        if "spill" in path.name or path.name.endswith("old"):
            path.mkdir()
            (path / "part-0.arrow").write_bytes(b"x" * 1000)
        else:
            path.write_bytes(b"PAR1")
    out = tmp_path / "out.parquet"
    options = ("--on", "time", "--device", "cpu", "--right-mode", mode, "--tmp-dir", spill)
    code, _, _ = run("enrich", trades, quotes, "-o", out, *options, capsys=capsys)
    assert code == 0 and pq.read_table(out).num_rows == pq.read_metadata(trades).num_rows
    assert [p for p in stale if p.exists()] == ([stale[2]] if mode == "memory" else [])
    assert all(p.exists() for p in kept)


def test_hosts_whose_names_differ_only_in_punctuation_keep_their_files(tmp_path, monkeypatch):
    """On a shared disk, node-11 took node-1-1's live partial OUT and spill folder for those
    of its own dead processes (both named "node11", the other host's process id unknown
    here), and removed them: node-1-1's run failed."""
    import socket

    from asofgpu.enrich import _leftovers

    monkeypatch.setattr(socket, "gethostname", lambda: "node-1-1")
    # a process id of theirs that no process here has
    theirs = tmp_path / f".out.parquet.{_leftovers._host()}-{_dead_pid()}.k2j4x9_a.asofgpu-partial"
    theirs.write_bytes(b"PAR1")
    monkeypatch.setattr(socket, "gethostname", lambda: "node-11")
    _leftovers.remove_stale(str(tmp_path))
    assert theirs.exists()


def test_what_a_sigkilled_run_was_writing_is_removed_by_the_next(tmp_path):
    """The names a run gives its partial OUT file and folder, and its spill folder, are the
    ones ``remove_stale`` knows: made by a process that is then killed outright."""
    from asofgpu.enrich import _leftovers

    spill = tmp_path / "spill"
    spill.mkdir()
    script = textwrap.dedent(f"""
        import sys, time
        from asofgpu.enrich._output import AtomicFile, AtomicFolder
        from asofgpu.enrich._spill import SpillFolder
        AtomicFile({str(tmp_path / "out.parquet")!r}), AtomicFolder({str(tmp_path / "out")!r})
        SpillFolder({str(spill)!r})
        print("writing", flush=True)
        time.sleep(120)
    """)
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline() == "writing\n"
    _leftovers.remove_stale(str(tmp_path))  # a live run's: kept
    assert len(_dotted(tmp_path)) == 2 and len(_dotted(spill)) == 1
    process.kill()
    process.wait()
    for folder in (tmp_path, spill):
        _leftovers.remove_stale(str(folder))
    assert _dotted(tmp_path) == [] and _dotted(spill) == []


@pytest.mark.parametrize("name", ["a" * 240 + ".parquet", "é" * 120 + ".parquet", "b" * 255])
def test_a_long_out_name_is_written_whole(day, tmp_path, capsys, name):
    """OUT's hidden copy beside it is named after it, and a name the file system takes
    (up to 255 bytes) made the copy's too long: "cannot write in the directory of OUT ...:
    File name too long". The copy's name is now cut to fit, and still one that the next
    run's clean-up knows. (Twice: the second run moves the first OUT aside.)"""
    from asofgpu.enrich import _leftovers

    trades, quotes = day
    left = tmp_path / "left"
    left.mkdir()
    write(pq.read_table(trades), left / "a.parquet")
    for given, out in ((trades, tmp_path / name), (left, tmp_path / "folder" / name)):
        out.parent.mkdir(exist_ok=True)
        for _ in range(2):
            argv = ("enrich", given, quotes, "-o", out, "--on", "time", "--device", "cpu", "-q")
            assert run(*argv, capsys=capsys)[0] == 0
        read = pq.read_table(out if out.is_file() else out / "a.parquet")
        assert read.num_rows == pq.read_metadata(trades).num_rows
        assert _dotted(out.parent) == []
    for suffix in (".asofgpu-partial", ".asofgpu-old"):
        hidden_name = _leftovers.hidden_prefix(name, suffix) + "k2j4x9_a" + suffix
        assert len(os.fsencode(hidden_name)) <= 255 and _leftovers._STALE.match(hidden_name)


def test_names_that_are_not_utf8_are_refused_by_name(day, tmp_path, capsys):
    """pyarrow opens files by UTF-8 names only: a LEFT or RIGHT file (given, or found in a
    folder), OUT or --tmp-dir named in other bytes (a Latin-1 file system's) raised a
    traceback (UnicodeEncodeError), or, for an OUT file, wrote it and then failed on it at
    the next run."""
    trades, quotes = day
    odd = os.fsdecode(b"caf\xe9")
    left = tmp_path / "left"
    left.mkdir()
    with open(left / f"{odd}.parquet", "wb") as f:  # (pyarrow takes no such path)
        pq.write_table(pq.read_table(trades), f)
    (tmp_path / odd).mkdir()
    (tmp_path / "link").symlink_to(tmp_path / odd)
    keys = ("--on", "time", "--device", "cpu")
    for argv, said in (
        ((left, quotes, "-o", tmp_path / "o"), f"LEFT file {left}/caf\\xe9.parquet"),
        ((trades, left / f"{odd}.parquet", "-o", tmp_path / "o.parquet"), "RIGHT file "),
        ((trades, quotes, "-o", tmp_path / f"{odd}.parquet"), f"OUT {tmp_path}/caf\\xe9.parquet"),
        (
            (trades, quotes, "-o", tmp_path / "o.parquet", "--tmp-dir", tmp_path / odd),
            f"--tmp-dir {tmp_path}/caf\\xe9",
        ),
        (  # a name of UTF-8 that leads there (its spill files would go beside OUT)
            (trades, quotes, "-o", tmp_path / "link" / "o.parquet"),
            f"OUT {os.path.realpath(tmp_path)}/caf\\xe9/o.parquet",
        ),
    ):
        code, _, stderr = run("enrich", *argv, *keys, capsys=capsys)
        assert code == 2 and stderr.startswith(f"asofgpu enrich: error: {said}"), stderr
        assert stderr.endswith(": its name is not UTF-8, which pyarrow cannot open; rename it\n")
    assert sorted(os.listdir(tmp_path)) == sorted(
        [odd, "left", "link", "quotes.parquet", "trades.parquet"]
    )


def _unwritable_folder() -> str:
    """A folder where no file can be made, even by root: sysfs takes no new files."""
    try:
        os.close(tempfile.mkstemp(dir="/sys")[0])
    except OSError:
        return "/sys"
    pytest.skip("/sys takes new files here")


@pytest.mark.parametrize("kind", ["file", "folder"])
def test_an_out_directory_that_takes_no_file_exits_1(day, tmp_path, capsys, kind):
    """OUT's temporary file or folder cannot be made beside it (a read-only filesystem, a
    directory the user cannot write): OUT could not be written, exit 1, as the help says,
    where it was reported as bad input (exit 2)."""
    trades, quotes = day
    folder = _unwritable_folder()
    left = trades
    if kind == "folder":
        left = tmp_path / "left"
        left.mkdir()
        write(pq.read_table(trades), left / "a.parquet")
    out = os.path.join(folder, "asofgpu-enrich-test" + (".parquet" if kind == "file" else ""))
    code, _, stderr = run(
        "enrich", left, quotes, "-o", out, "--on", "time", "--device", "cpu", capsys=capsys
    )
    assert code == 1
    assert stderr.startswith(
        f"asofgpu enrich: error: cannot write in the directory of OUT {folder}: "
    )
    assert stderr.endswith("; nothing was written\n")


@pytest.mark.slow  # asofgpu enrich as a process (the file-size limit is the process's)
@pytest.mark.parametrize("limit", [3_000, 12_000])  # the first file fails; a later one does
def test_a_write_error_in_a_folder_exits_1_and_leaves_nothing(day, tmp_path, limit):
    """A file's writer closes while the next file is joined: its failure still stops the run
    (exit 1), and the half-written folder goes."""
    import resource

    trades, quotes = day
    (tmp_path / "left").mkdir()
    table = pq.read_table(trades)
    for i in range(3):  # the later files are larger
        write(table.slice(0, 100 * (i + 1)), tmp_path / "left" / f"part-{i}.parquet")
    out = tmp_path / "out"

    def limit_file_size():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "asofgpu",
            "enrich",
            tmp_path / "left",
            quotes,
            "-o",
            out,
            "--on",
            "time",
            "--device",
            "cpu",
            "--chunk-rows",
            "50",
            "-q",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        preexec_fn=limit_file_size,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"asofgpu enrich: error: cannot write OUT {out}: "
        f"[Errno 27] File too large; nothing was written"
    )
    assert not out.exists() and [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


# ----------------------------------------------------------------------------- the command


def test_the_process_entry_returns_mains_code_and_freezes_the_heap(monkeypatch):
    """And ignores Ctrl-C, SIGTERM and SIGHUP from then on: the run is over, and a signal
    during the exit would only print a traceback (or end the process by the signal, rc -2)."""
    monkeypatch.setattr(cli, "main", lambda: 3)  # entry's own work, without running a command
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        assert cli.entry() == 3
        assert gc.get_freeze_count() > 0  # left alone by the collection at shutdown
        assert all(signal.getsignal(s) is signal.SIG_IGN for s in handlers)
    finally:
        gc.unfreeze()
        for s, handler in handlers.items():
            signal.signal(s, handler)


@pytest.mark.slow  # python -m asofgpu three times
def test_python_dash_m_help_documents_every_option():
    env = {**os.environ, "COLUMNS": "100"}
    top = subprocess.run(
        [sys.executable, "-m", "asofgpu", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        check=True,
    ).stdout
    assert top.startswith("usage: asofgpu ") and "enrich" in top and "demo" in top
    for command in ("enrich", "demo"):
        text = subprocess.run(
            [sys.executable, "-m", "asofgpu", command, "--help"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env,
            check=True,
        ).stdout
        assert text.startswith(f"usage: asofgpu {command} ")
        options = re.findall(r"^  (-\w(?: \w+)?, )?(--[\w-]+)", text, flags=re.MULTILINE)
        assert len(options) >= (16 if command == "enrich" else 9)
        # each option's help carries an example
        blocks = re.split(r"\n  (?=-)", text.split("options:", 1)[1].split("examples:")[0])
        for block in blocks[1:]:
            if not block.startswith("-h"):
                assert "e.g." in block, block


def test_demo_small(tmp_path, capsys):
    code, stdout, stderr = run(
        "demo",
        "--quotes",
        3000,
        "--trades",
        700,
        "--symbols",
        25,
        "--seed",
        4,
        "--shuffled",
        "--device",
        "cpu",
        "--chunk-rows",
        200,
        "--out-dir",
        tmp_path / "day",
        capsys=capsys,
    )
    assert code == 0
    day = tmp_path / "day"
    assert sorted(p.name for p in day.iterdir()) == [
        "enriched.parquet",
        "quotes.parquet",
        "trades.parquet",
    ]
    want = expected(day / "trades.parquet", day / "quotes.parquet", on="time", by="symbol")
    assert pq.read_table(day / "enriched.parquet").equals(want)
    assert "generated 3,000 quotes and 700 trades over 25 symbols (shuffled, seed 4)" in stdout
    assert "rows       700 in 4 chunk(s) of up to 200" in stdout
    assert re.search(r"staleness  p50 \S+ \w+, p99 ", stdout)
    assert "backend    cpu" in stdout and "e.g. 2026-11-27" in stdout
    assert "asofgpu demo: right side read and prepared (3,000 right rows)" in stderr


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--seed", "-5"], "argument --seed: expected a number from 0, got -5"),
        (
            ["--symbols", "99_999_999_999", "--quotes", "10", "--trades", "20"],
            "--symbols: at most as many as --quotes or --trades (20), got 99,999,999,999",
        ),
        (  # numpy's MemoryError (or OverflowError, past int64) came as a traceback
            ["--quotes", "99_999_999_999_999_999_999", "--trades", "5"],
            "--quotes and --trades: 99,999,999,999,999,999,999 quotes and 5 trades take about "
            "11,641,532,182.7 TiB of memory to generate and enrich, more than this machine's ",
        ),
    ],
)
def test_bad_demo_options_exit_2(tmp_path, capsys, argv, message):
    code, stdout, stderr = run("demo", *argv, "--out-dir", tmp_path / "day", capsys=capsys)
    assert code == 2 and stdout == ""
    said = stderr.splitlines()[-1]
    assert said.startswith(f"asofgpu demo: error: {message}")
    assert said.endswith(" (see asofgpu demo --help)")
    assert not (tmp_path / "day").exists()


SMALL_DEMO = ("--quotes", 500, "--trades", 100, "--symbols", 5, "-q")


@pytest.mark.usefixtures("heeding_interrupts")
def test_a_demo_interrupted_in_its_run_says_no_output_was_written(tmp_path, capsys, monkeypatch):
    """The day's files are in place before the run: a Ctrl-C in the run said "interrupted
    after the output was written", taking them for the run's output."""

    def interrupted(options, progress=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "enrich", interrupted)
    day = tmp_path / "day"
    code, _, stderr = run("demo", *SMALL_DEMO, "--out-dir", day, capsys=capsys)
    assert code == 130
    assert stderr.splitlines()[-1] == "asofgpu demo: interrupted; no output was written"
    assert sorted(p.name for p in day.iterdir()) == ["quotes.parquet", "trades.parquet"]


def test_a_demo_out_dir_that_is_a_file_is_refused_before_the_day_is_made(tmp_path, capsys):
    (tmp_path / "day").write_text("a file")
    code, stdout, stderr = run("demo", "--out-dir", tmp_path / "day", capsys=capsys)
    assert (code, stdout) == (2, "")
    assert (
        stderr.splitlines()[-1]
        == f"asofgpu demo: error: --out-dir {tmp_path / 'day'}: not a folder"
    )


def test_a_demo_file_that_cannot_be_written_leaves_nothing_behind(tmp_path, capsys, monkeypatch):
    """The day's files are written as enrich writes OUT: complete, or not at all."""
    import pyarrow.parquet

    real = pyarrow.parquet.write_table

    def full_disk(table, where, *args, **kwargs):
        if os.path.basename(str(where)).startswith(".trades.parquet"):
            real(table.slice(0, 10), where)  # half-written, then the disk is full
            raise OSError(28, "No space left on device")
        return real(table, where, *args, **kwargs)

    monkeypatch.setattr(pyarrow.parquet, "write_table", full_disk)
    day = tmp_path / "day"
    code, _, stderr = run("demo", *SMALL_DEMO, "--out-dir", day, capsys=capsys)
    assert code == 1
    assert stderr.splitlines()[-1] == (
        f"asofgpu demo: error: cannot write trades.parquet {day / 'trades.parquet'}: "
        "No space left on device; nothing was written"
    )
    assert sorted(p.name for p in day.iterdir()) == []  # quotes.parquet neither


def test_a_demo_whose_second_rename_fails_names_the_file_put_in_place(
    tmp_path, capsys, monkeypatch
):
    """Both day files are written before either is renamed; where the second rename fails
    (the first done), the message said "nothing was written" while quotes.parquet stood."""
    real = os.replace

    def refused(source, target):
        if os.path.basename(str(target)) == "trades.parquet":
            raise OSError(13, "Permission denied")
        return real(source, target)

    monkeypatch.setattr(os, "replace", refused)
    day = tmp_path / "day"
    code, _, stderr = run("demo", *SMALL_DEMO, "--out-dir", day, capsys=capsys)
    assert code == 1
    assert stderr.splitlines()[-1] == (
        f"asofgpu demo: error: cannot write trades.parquet {day / 'trades.parquet'}: "
        f"Permission denied; only {day / 'quotes.parquet'} put in place"
    )
    assert sorted(p.name for p in day.iterdir()) == ["quotes.parquet"]


def test_demo_in_a_temporary_directory_removes_it(capsys):
    code, stdout, _ = run(
        "demo",
        *SMALL_DEMO,
        "--device",
        "cpu",
        capsys=capsys,
    )
    assert code == 0
    folder = re.search(r"to (\S+) in ", stdout).group(1)
    assert not os.path.exists(folder)


# ----------------------------------------------------------------------------- durations


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("5s", 5 * 10**9),
        ("250ms", 250 * 10**6),
        ("1m", 60 * 10**9),
        ("1m30s", 90 * 10**9),
        ("2h15m", 8100 * 10**9),
        ("1d", 86_400 * 10**9),
        ("1w", 7 * 86_400 * 10**9),
        ("1.5us", 1500),
        ("17ns", 17),
        ("1h 30m", 5400 * 10**9),
        ("1s1s", 2 * 10**9),
    ],
)
def test_parse_duration(text, ns):
    assert parse_duration(text) == ns
    assert parse_tolerance(text) == np.timedelta64(ns, "ns")


def test_parse_tolerance_numbers_and_format_duration():
    assert parse_tolerance("100") == 100 and isinstance(parse_tolerance("100"), int)
    assert parse_tolerance("0.5") == 0.5 and parse_tolerance("inf") == float("inf")
    assert [
        format_duration(v)
        for v in (0, 412, 3_210, 4_213_000, 1.52e9, 90e9, 7_380e9, 86_400e9, -5e6)
    ] == ["0 s", "412 ns", "3.21 us", "4.21 ms", "1.52 s", "1m 30s", "2h 03m", "1d", "-5.00 ms"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "",
            r"expected a number in the key's own unit \(0.5, 1000\) or a duration such as 5s, "
            r"250ms or 1m30s, got ''",
        ),
        ("5x", "'5x': unknown unit 'x'; use one of ns, us, ms, s, m, h, d, w"),
        (
            "abc",
            r"expected a number in the key's own unit \(0.5, 1000\) or a duration such as 5s, "
            r"250ms or 1m30s \(units ns, .*\), got 'abc'",
        ),
        ("s", r"or a duration such as 5s, 250ms or 1m30s \(units ns, .*\), got 's'"),
        ("nan", "expected a non-negative number or a duration, got 'nan'"),
        ("-1", "a tolerance must not be negative, got '-1'"),
        ("-1s", "a duration must not be negative, got '-1s'"),
        ("0.5ns", "'0.5ns' is not a whole number of nanoseconds"),
        ("1y", r"'1y': years \(y\) have no fixed length; use one of ns, us"),
        ("300000d", r"'300000d' is too long: .* 292 years \(a longer one is a number in the key"),
    ],
)
def test_bad_tolerances_are_refused_by_what_is_wrong(text, message):
    with pytest.raises(ValueError, match=message):
        parse_tolerance(text)


def test_a_tolerance_past_292_years_is_taken_as_a_number_of_days_on_a_date_key(tmp_path, capsys):
    """What the refusal of "1000000d" tells the user to give instead works."""
    days = pa.array([0, 1, 2, 400_000_000], pa.date32())
    left = write(pa.table({"d": days}), tmp_path / "left.parquet")
    right = write(pa.table({"d": days.slice(0, 1), "y": [7]}), tmp_path / "right.parquet")
    out = tmp_path / "out.parquet"
    argv = ["enrich", left, right, "-o", out, "--on", "d", "-q", "--device", "cpu"]
    code, _, stderr = run(*argv, "--tolerance", "1000000d", capsys=capsys)
    assert code == 2 and "a number in the key's own unit" in stderr
    for tolerance, expected in (("1000000", [7, 7, 7, None]), ("400000000", [7] * 4)):
        code, _, stderr = run(*argv, "--tolerance", tolerance, capsys=capsys)
        assert code == 0, stderr
        assert pq.read_table(out)["y"].to_pylist() == expected


def test_float16_keys_and_tolerance_columns_are_enriched(tmp_path, capsys):
    """A float16 key or --tolerance-column ended in a traceback (exit 1): the dry run's
    column of no chunks had no numpy type."""
    half = pa.array(np.array([14, 16, 26], np.float16))
    tolerances = pa.array(np.array([4, 5, 6], np.float16))
    left = write(
        pa.table({"t": [14, 16, 26], "tol": tolerances, "h": half}), tmp_path / "l.parquet"
    )
    right = write(
        pa.table(
            {"t": [10, 20, 30], "h": pa.array(np.array([10, 20, 30], np.float16)), "v": [1, 2, 3]}
        ),
        tmp_path / "r.parquet",
    )
    out = tmp_path / "o.parquet"
    for keys, expected in (
        (["--on", "t", "--tolerance-column", "tol"], [1, None, 2]),
        (["--on", "h", "--tolerance", "3"], [None, None, None]),
        (["--on", "h", "--strategy", "nearest"], [1, 2, 3]),
    ):
        code, _, stderr = run(
            "enrich", left, right, "-o", out, *keys, "-q", "--device", "cpu", capsys=capsys
        )
        assert code == 0, stderr
        assert pq.read_table(out)["v"].to_pylist() == expected, keys


# pyarrow imports pandas the first time a value crosses between Python and Arrow (to_numpy,
# pa.array of numpy, pa.scalar, fill_null(0), empty_table): 0.15 to 0.2 s of a 2 s enrich
# run. asofgpu._arrow_numpy goes through the buffers instead; this run of every mode in one
# process (pyarrow tries the import once) finds any call that brings it back.
WITHOUT_PANDAS = """\
import importlib.abc, json, sys, traceback
from asofgpu.cli import main

class Importing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "pandas":
            print("".join(traceback.format_stack()), file=sys.stderr)
        return None

sys.meta_path.insert(0, Importing())
for argv in json.loads(sys.argv[1]):
    code = main(argv)
    if code:
        sys.exit(f"exit {code}: {argv}")
print("pandas" in sys.modules)
"""


@pytest.mark.slow  # asofgpu enrich in six modes, in a process of its own
def test_enrich_runs_in_every_mode_without_importing_pandas(tmp_path):
    quotes, trades = marketdata.day(n_quotes=100_000, n_trades=70_000, n_symbols=20, seed=5)
    sorted_left = write(trades, tmp_path / "trades.parquet", row_group_size=70_000)
    sorted_right = write(quotes, tmp_path / "quotes.parquet", row_group_size=25_000)
    small_quotes, small_trades = marketdata.day(
        n_quotes=600, n_trades=400, n_symbols=12, seed=3, shuffled=True
    )
    by_symbol = [("symbol", "ascending"), ("time", "ascending")]
    grouped_left = write(
        trades.sort_by(by_symbol), tmp_path / "grouped_trades.parquet", row_group_size=10_000
    )
    grouped_right = write(
        quotes.sort_by(by_symbol), tmp_path / "grouped_quotes.parquet", row_group_size=10_000
    )
    shuffled_left = write(small_trades, tmp_path / "shuffled_trades.parquet")
    shuffled_right = write(small_quotes, tmp_path / "shuffled_quotes.parquet")
    folder = tmp_path / "days"
    for day in ("2026-11-26", "2026-11-27"):
        (folder / f"date={day}").mkdir(parents=True)
        write(small_trades, folder / f"date={day}" / "trades.parquet")
    # a folder per size whose files hold the size column too: the folders' values are read
    # as int64 and checked against the files' statistics (with pa.scalar, once)
    sized = tmp_path / "sized"
    for size in pc.unique(small_trades["size"]).to_pylist()[:2]:
        (sized / f"size={size}").mkdir(parents=True)
        part = small_trades.filter(pc.equal(small_trades["size"], size))
        write(part, sized / f"size={size}" / "trades.parquet")
    keys = ["--on", "time", "--by", "symbol", "--device", "cpu", "-q"]
    runs = [
        [sorted_left, sorted_right, "-o", tmp_path / "streamed.parquet"],  # LEFT copied
        [sized, shuffled_right, "-o", tmp_path / "out_sized"],
        [sorted_left, sorted_right, "-o", tmp_path / "memory.parquet", "--right-mode", "memory"],
        [sorted_left, sorted_right, "-o", tmp_path / "spilled.parquet", "--right-mode", "spill"],
        [grouped_left, grouped_right, "-o", tmp_path / "grouped.parquet", "--strategy", "nearest"],
        [shuffled_left, shuffled_right, "-o", tmp_path / "shuffled.parquet"],
        [folder, shuffled_right, "-o", tmp_path / "out_days"],
    ]
    argv = [["enrich", *map(str, run), *keys] for run in runs]
    # a calendar tolerance; RIGHT's symbols attached as dictionary codes, each chunk's unused
    # ones dropped (both made Arrow arrays of numpy arrays with pa.array)
    calendar = [
        sorted_left,
        sorted_right,
        "-o",
        tmp_path / "calendar.parquet",
        "--tolerance",
        "1mo",
    ]
    argv.append(["enrich", *map(str, calendar), *keys])
    attached = [
        sorted_left,
        sorted_right,
        "-o",
        tmp_path / "attached.parquet",
        "--chunk-rows",
        "5000",
    ]
    argv.append(["enrich", *map(str, attached), "--on", "time", "--device", "cpu", "-q"])
    floats = ["--left-by", "price", "--right-by", "bid", "--on", "time", "--device", "cpu", "-q"]
    float_by = [shuffled_left, shuffled_right, "-o", tmp_path / "float_by.parquet"]
    argv.append(["enrich", *map(str, float_by), *floats])  # float by-keys: NaN made one
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_PANDAS, json.dumps(argv)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False", f"an enrich run imported pandas:\n{done.stderr}"
    for name in ("streamed", "memory", "spilled"):
        got = pq.read_table(tmp_path / f"{name}.parquet")
        assert got.equals(expected(sorted_left, sorted_right, on="time", by="symbol")), name


# A machine without pandas (a plain `pip install asofgpu`): its import fails.
NO_PANDAS = """\
import importlib.abc, sys

class NoPandas(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] == "pandas":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoPandas())
from asofgpu.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow  # asofgpu demo in a process of its own
def test_demo_runs_and_shows_a_trade_without_pandas(tmp_path):
    """pyarrow makes no Python datetime of a nanosecond time without pandas: the demo's
    example line failed with a traceback after the join, on an install without the extra."""
    argv = ["demo", "--quotes", "3000", "--trades", "700", "--symbols", "25", "--device", "cpu"]
    done = subprocess.run(
        [sys.executable, "-c", NO_PANDAS, *argv, "--out-dir", str(tmp_path / "day")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert re.search(r"^e\.g\. 2026-11-27 \d\d:\d\d:\d\d\.\d{9}Z S\d+: ", done.stdout, re.M), (
        done.stdout
    )


@pytest.mark.parametrize(
    "broken",
    ["stdout to a full disk", "stderr to a full disk", "an ascii terminal", "stderr closed"],
)
def test_output_the_terminal_cannot_take_leaves_the_run_and_its_exit_code(tmp_path, day, broken):
    """The summary to a full disk (or a pipe its reader left), progress lines to one, or a
    Unicode path on an ascii stdout: each ended a run, or one done already, in a traceback
    and exit 1 (which says OUT could not be written). The run goes on; what can be said is."""
    trades, quotes = day
    folder = tmp_path / "día"
    folder.mkdir()
    out = folder / "out.parquet"
    streams, env = {"capture_output": True}, dict(os.environ)
    if broken == "an ascii terminal":
        env["PYTHONIOENCODING"] = "ascii"
    elif broken == "stderr closed":
        streams = {"stdout": subprocess.PIPE, "preexec_fn": lambda: os.close(2)}
    else:
        full = open("/dev/full", "w")  # noqa: SIM115 - closed below
        name = broken.split()[0]
        streams = {name: full, ("stderr" if name == "stdout" else "stdout"): subprocess.PIPE}
    argv = [sys.executable, "-m", "asofgpu", "enrich", trades, quotes, "-o", out]
    try:
        done = subprocess.run(
            [*argv, "--on", "time", "--by", "symbol", "--device", "cpu", "--chunk-rows", "50"],
            text=True,
            env=env,
            **streams,
        )
    finally:
        if broken.endswith("full disk"):
            full.close()
    assert done.returncode == 0, done
    assert "Traceback" not in (done.stderr or "") + (done.stdout or "")
    assert pq.read_table(out).equals(expected(trades, quotes, on="time", by="symbol"))
    assert leftovers(folder) == []
    if broken == "an ascii terminal":
        assert "d\\xeda" in done.stdout  # OUT's path in the summary, escaped


def test_the_script_raises_the_collectors_thresholds(tmp_path):
    """The command's imports make objects that live to its end: the script raises the
    collector's thresholds before them (the bench's small enrich: 0.63 -> 0.59 s), in its
    own process only: ``import asofgpu`` leaves them as they are."""
    done = _exit_of_module(
        tmp_path,
        """
        import gc, runpy, sys

        default = gc.get_threshold()
        import asofgpu.cli
        assert gc.get_threshold() == default, gc.get_threshold()
        sys.argv = ["asofgpu", "no-such-command"]
        try:
            runpy.run_module("asofgpu", run_name="__main__")
        except SystemExit:
            pass
        print(gc.get_threshold())
        """,
    )
    assert done.stdout == "(50000, 20, 100)\n", done.stderr
