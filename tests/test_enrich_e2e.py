"""bench/enrich_e2e.py (make bench's end-to-end section) on tiny days: the result files, every
system's record, the scale run with its memory limit, and the comparison that stops a wrong
answer. Each system's run is a process of its own, so the script is run only a few times."""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

for needed in ("duckdb", "polars", "psutil"):
    pytest.importorskip(needed)  # the `bench` extra

import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "enrich_e2e.py"

# Stands in for `python -m asofgpu` while enrich may not have --memory-limit: it logs the
# arguments of a run given the option, then fails like argparse (E2E_STANDIN_FAIL) or runs the
# real enrich without it. Runs without the option go straight to the real enrich.
STANDIN = """\
import json, os, sys
argv = sys.argv[1:]
if "--memory-limit" in argv:
    with open(os.environ["E2E_STANDIN_LOG"], "a") as f:
        f.write(json.dumps(argv) + "\\n")
    if os.environ.get("E2E_STANDIN_FAIL"):
        sys.exit("asofgpu enrich: error: unrecognized arguments: --memory-limit")
    at = argv.index("--memory-limit")
    del argv[at:at + 2]
os.execv(sys.executable, [sys.executable, "-m", "asofgpu", *argv])
"""


@pytest.fixture(scope="module")
def e2e():
    """The script as a module, for its functions."""
    spec = importlib.util.spec_from_file_location("enrich_e2e", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_script(tmp_path: Path, *args: str, env: dict | None = None):
    return subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--quick",
            "--size",
            "20Kx20K",
            "--runs",
            "1",
            "--data",
            str(tmp_path / "data"),
            "--out",
            str(tmp_path / "out"),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def standin(tmp_path: Path, fail: bool = False) -> tuple[list[str], dict]:
    """(--enrich-cmd and its value, the environment) for the stand-in, logging to tmp_path."""
    import os

    script = tmp_path / "standin.py"
    script.write_text(STANDIN)
    env = dict(os.environ, E2E_STANDIN_LOG=str(tmp_path / "standin.log"))
    if fail:
        env["E2E_STANDIN_FAIL"] = "1"
    return ["--enrich-cmd", f"{sys.executable} {script}"], env


@pytest.mark.slow  # the script's whole run: every system a process of its own
def test_every_system_runs_is_checked_and_reported_with_the_scale_run(tmp_path):
    cmd, env = standin(tmp_path)
    done = run_script(tmp_path, "--scale", "30Kx5K", "--scale-memory-limit", "64MiB", *cmd, env=env)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == ["enrich.json", "enrich.md"]
    report = json.loads((out / "enrich.json").read_text())
    records = {r["system"]: r for r in report["results"]}
    assert list(records) == ["asofgpu", "polars-lazy", "polars-eager", "duckdb"]
    for system, r in records.items():
        assert r["status"] == "ok", system
        assert len(r["times_s"]) == 1 and r["median_s"] > 0
        assert r["peak_rss_mib"] > 0 and r["output_bytes"] > 0
        assert r.get("checked_against") == (None if system == "asofgpu" else "asofgpu")
    assert report["warmup_s"] > 0
    assert report["headline"]["ratio"] > 0 and report["headline"]["goal"] == 0.7
    assert report["settings"]["size"] == [20_000, 20_000]
    table = (out / "enrich.md").read_text()
    assert (
        "| system | median wall s | runs (s) | peak RSS | output size | asofgpu / this |" in table
    )
    assert "asofgpu / fastest peer" in table and "goal at most 0.7x (issue 18" in table
    # The scale run: asofgpu alone, given the limit, whose peak (Python, numba, pyarrow) is
    # well over 64 MiB, so reported as over it.
    scale = report["scale"]
    assert scale["status"] == "ok" and scale["wall_s"] > 0
    assert scale["memory_limit"] == "64MiB" and scale["memory_limit_bytes"] == 64 * 2**20
    assert scale["peak_rss_bytes"] > 64 * 2**20 and scale["under_limit"] is False
    assert "| **no** |" in table and "--memory-limit 64MiB" in table
    [logged] = [json.loads(line) for line in (tmp_path / "standin.log").read_text().splitlines()]
    assert logged[logged.index("--memory-limit") + 1] == "64MiB"
    quotes = pq.read_table(Path(scale["data"]) / "quotes.parquet")
    assert quotes.num_rows == 30_000
    # Nothing left behind in the cache but the two days.
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == [
        "20Kx20K-1000sym-seed0",
        "scale-30Kx5K-1000sym-seed0",
    ]


@pytest.mark.slow  # the script's whole run
def test_trades_by_symbol_are_enriched_folder_to_folder_and_checked(tmp_path):
    """``--left-files by-symbol``: asofgpu writes a folder of a file a symbol, the peers one
    file each from the folder's glob, and every one's rows are checked against asofgpu's;
    the report is enrich-by-symbol.*, and has no goal."""
    done = run_script(tmp_path, "--left-files", "by-symbol")
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == ["enrich-by-symbol.json", "enrich-by-symbol.md"]
    report = json.loads((out / "enrich-by-symbol.json").read_text())
    assert report["settings"]["left_files"] == "by-symbol" and report["settings"]["goal"] is None
    assert report["data"]["trades_files"] > 100  # Zipf over 1,000 symbols
    for r in report["results"]:
        assert r["status"] == "ok" and r["output_bytes"] > 0, r["system"]
        assert r.get("checked_against") == (None if r["system"] == "asofgpu" else "asofgpu")
    assert report["headline"]["goal"] is None and report["headline"]["met"] is None
    table = (out / "enrich-by-symbol.md").read_text()
    assert "trades in a file a symbol" in table and "goal at most" not in table
    assert f"split by symbol into a folder of {report['data']['trades_files']:,} files" in table
    assert "trades-by-symbol/*.parquet" in table
    data = tmp_path / "data" / "20Kx20K-1000sym-seed0"
    assert sorted(p.name for p in data.iterdir()) == [
        "quotes.parquet",
        "trades-by-symbol",
        "trades.parquet",
    ]


@pytest.mark.slow  # the script's whole run
def test_quotes_by_symbol_are_read_as_a_folder_and_checked(tmp_path):
    """``--right-files by-symbol``: every system reads the quotes' folder (the peers as a
    glob), every peer's rows are checked against asofgpu's; the report is
    enrich-quotes-by-symbol.*, and has no goal."""
    done = run_script(tmp_path, "--right-files", "by-symbol")
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    stem = "enrich-quotes-by-symbol"
    assert sorted(p.name for p in out.iterdir()) == [f"{stem}.json", f"{stem}.md"]
    report = json.loads((out / f"{stem}.json").read_text())
    assert report["settings"]["right_files"] == "by-symbol" and report["settings"]["goal"] is None
    assert report["data"]["quotes_files"] > 100 and report["data"]["trades_files"] == 1
    for r in report["results"]:
        assert r["status"] == "ok" and r["output_bytes"] > 0, r["system"]
        assert r.get("checked_against") == (None if r["system"] == "asofgpu" else "asofgpu")
    table = (out / f"{stem}.md").read_text()
    assert "quotes in a file a symbol" in table and "trades in a file a symbol" not in table
    assert f"split by symbol into a folder of {report['data']['quotes_files']:,} files" in table
    assert "quotes-by-symbol/*.parquet" in table


@pytest.mark.slow  # the script's whole run
@pytest.mark.parametrize(
    ("layout", "files", "title", "shown"),
    [
        (
            "parts",
            lambda n: n == 17,
            "trades in numbered parts, quotes in numbered parts",
            ["trades-parts/*.parquet", '.sort("time")'],
        ),
        (
            "hive",
            lambda n: n > 100,
            "trades in hive folders by symbol, quotes in hive folders by symbol",
            ["trades-hive/*/*.parquet", "hive_partitioning=True"],
        ),
    ],
)
def test_both_sides_in_folders_are_enriched_and_checked(tmp_path, layout, files, title, shown):
    """``--left-files parts --right-files parts`` (numbered parts, which polars sorts once
    read) and ``hive`` (the symbol in the folders' names): asofgpu enriches a folder into a
    folder, the peers read both globs and write one file each, and every one's rows are
    checked against asofgpu's; the report has no goal."""
    done = run_script(tmp_path, "--left-files", layout, "--right-files", layout)
    assert done.returncode == 0, done.stderr
    stem = f"enrich-{layout}-quotes-{layout}"
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == [f"{stem}.json", f"{stem}.md"]
    report = json.loads((out / f"{stem}.json").read_text())
    assert report["settings"]["goal"] is None
    assert files(report["data"]["trades_files"]) and files(report["data"]["quotes_files"])
    for r in report["results"]:
        assert r["status"] == "ok" and r["output_bytes"] > 0, r["system"]
        assert r.get("checked_against") == (None if r["system"] == "asofgpu" else "asofgpu")
    table = (out / f"{stem}.md").read_text()
    assert title in table
    assert all(text in table for text in shown)


@pytest.mark.slow  # the script's whole run
def test_a_scale_run_that_fails_is_reported_and_fails_the_script(tmp_path):
    cmd, env = standin(tmp_path, fail=True)
    done = run_script(tmp_path, "--scale", "30Kx5K", *cmd, env=env)
    assert done.returncode == 1
    assert "the scale run failed" in done.stderr
    report = json.loads((tmp_path / "out" / "enrich.json").read_text())
    assert report["scale"]["status"] == "failed"
    assert all(r["status"] == "ok" for r in report["results"])  # the main table still stands
    assert "unrecognized arguments: --memory-limit" in (tmp_path / "out" / "enrich.md").read_text()


@pytest.mark.slow  # the script's whole run
def test_the_scale_run_with_enrichs_own_memory_limit(tmp_path):
    help_text = subprocess.run(
        [sys.executable, "-m", "asofgpu", "enrich", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    if "--memory-limit" not in help_text:
        pytest.skip(
            "asofgpu enrich has no --memory-limit yet: the scale path is tested with "
            "a stand-in command above"
        )
    done = run_script(tmp_path, "--scale", "30Kx5K", "--scale-memory-limit", "2GiB")
    assert done.returncode == 0, done.stderr
    scale = json.loads((tmp_path / "out" / "enrich.json").read_text())["scale"]
    assert scale["status"] == "ok" and scale["under_limit"] is True


def test_the_scale_day_is_written_in_time_order_slice_by_slice(e2e, tmp_path):
    import numpy as np

    from asofgpu import marketdata

    rng = np.random.default_rng(0)
    base = np.exp(rng.normal(4.0, 1.0, e2e.SYMBOLS))
    for kind, reference in zip(("quotes", "trades"), marketdata.day(10, 10, e2e.SYMBOLS)):
        path = tmp_path / f"{kind}.parquet"
        e2e.write_sliced(path, kind, 10_001, rng, base, slice_rows=1_000)
        assert pq.ParquetFile(path).metadata.num_row_groups == 11  # one slice, one row group
        table = pq.read_table(path)
        assert table.schema.equals(reference.schema, check_metadata=False)
        assert table.num_rows == 10_001
        times = table["time"].cast(pa.int64()).to_numpy()
        assert (np.diff(times) >= 0).all()
        assert len(table["symbol"].unique()) > 100  # Zipf over 1,000 symbols


@pytest.mark.parametrize("side", ["trades", "quotes"])
def test_a_day_file_by_symbol_is_a_file_a_symbol_each_in_time_order(e2e, tmp_path, side):
    """``--left-files by-symbol`` and ``--right-files by-symbol``: the day's trades or
    quotes, a file a symbol, each holding that symbol's rows in the file's order; written
    once (a second call finds the folder)."""
    from asofgpu import marketdata

    quotes, trades = marketdata.day(300, 2_000, 40, seed=3)
    trades = trades if side == "trades" else quotes
    path = tmp_path / f"{side}.parquet"
    pq.write_table(trades, path)
    said = []
    folder = e2e.split_by_symbol(path, said.append)
    files = sorted(folder.iterdir())
    symbols = sorted(set(trades["symbol"].to_pylist()))
    assert [f.name for f in files] == [f"{s}.parquet" for s in symbols]
    for file in files:
        symbol = file.name.removesuffix(".parquet")
        expected = trades.filter(pc.equal(trades["symbol"], symbol))
        assert pq.read_table(file).equals(expected), symbol
    assert len(said) == 1 and f"into {len(symbols):,} files by symbol" in said[0]
    assert e2e.split_by_symbol(path, said.append) == folder and len(said) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{side}-by-symbol", f"{side}.parquet"]
    assert e2e.size_on_disk(folder) == sum(f.stat().st_size for f in files)


@pytest.mark.parametrize("quotes_folder", [False, True])
def test_a_folder_of_trades_is_a_glob_to_the_peers_and_a_folder_to_asofgpu(
    e2e, tmp_path, quotes_folder
):
    folder = tmp_path / "trades-by-symbol"
    folder.mkdir()
    quotes = tmp_path / ("quotes-by-symbol" if quotes_folder else "quotes.parquet")
    if quotes_folder:
        quotes.mkdir()
    outs = {s: tmp_path / f"{s}.parquet" for s in e2e.SYSTEMS} | {"asofgpu": tmp_path / "o"}
    argv = e2e.commands(["asofgpu"], folder, quotes, outs)
    assert argv["asofgpu"][:4] == ["asofgpu", "enrich", str(folder), str(quotes)]
    assert argv["asofgpu"][argv["asofgpu"].index("-o") + 1] == str(tmp_path / "o")
    for peer in ("polars-lazy", "polars-eager", "duckdb"):
        assert argv[peer][3] == str(folder / "*.parquet"), peer
        assert argv[peer][4] == str(quotes / "*.parquet" if quotes_folder else quotes), peer
    stems = [e2e.report_stem(left, right) for left in e2e.LAYOUTS for right in e2e.LAYOUTS]
    assert stems == [
        "enrich",
        "enrich-quotes-by-symbol",
        "enrich-quotes-parts",
        "enrich-quotes-hive",
        "enrich-by-symbol",
        "enrich-by-symbol-quotes-by-symbol",
        "enrich-by-symbol-quotes-parts",
        "enrich-by-symbol-quotes-hive",
        "enrich-parts",
        "enrich-parts-quotes-by-symbol",
        "enrich-parts-quotes-parts",
        "enrich-parts-quotes-hive",
        "enrich-hive",
        "enrich-hive-quotes-by-symbol",
        "enrich-hive-quotes-parts",
        "enrich-hive-quotes-hive",
    ]


def test_one_file_has_asofgpu_write_a_folder_of_trades_into_one_file(e2e, tmp_path):
    """``--one-file``: asofgpu's command asks for one file where the trades are a folder
    (not for a file of trades, where OUT is one file anyway); the report says so, and its
    name ends in -one-file."""
    folder, quotes = tmp_path / "trades-by-symbol", tmp_path / "quotes.parquet"
    folder.mkdir()
    outs = {s: tmp_path / f"{s}.parquet" for s in e2e.SYSTEMS}
    argv = e2e.commands(["asofgpu"], folder, quotes, outs, one_file=True)["asofgpu"]
    assert argv[-2:] == ["--one-file", "-q"]
    assert argv[argv.index("-o") + 1] == str(tmp_path / "asofgpu.parquet")
    argv = e2e.commands(["asofgpu"], quotes, quotes, outs, one_file=True)["asofgpu"]
    assert "--one-file" not in argv
    assert (
        e2e.report_stem("by-symbol", "by-symbol", True)
        == "enrich-by-symbol-quotes-by-symbol-one-file"
    )
    assert e2e.report_stem("one", "by-symbol", True) == "enrich-quotes-by-symbol"
    report = {
        "settings": {"left_files": "by-symbol", "right_files": "one", "one_file": True},
        "data": {"trades_files": 1000, "quotes_files": 1},
    }
    assert "asofgpu enriches the folder into one file (`--one-file`)" in e2e._layout_text(report)
    report["settings"]["one_file"] = False
    assert "into a folder of as many files" in e2e._layout_text(report)


@pytest.mark.parametrize("layouts", [("parts", "parts"), ("parts", "one"), ("one", "parts")])
def test_polars_sorts_the_numbered_parts_it_reads_by_a_glob(e2e, tmp_path, layouts):
    """A glob reads part-10 before part-2: out of time order, which polars cannot check
    with ``by``; its user sorts the side first. DuckDB's ASOF JOIN sorts by itself."""
    trades, quotes = tmp_path / "trades-parts", tmp_path / "quotes-parts"
    outs = {s: tmp_path / f"{s}.parquet" for s in e2e.SYSTEMS}
    argv = e2e.commands(["asofgpu"], trades, quotes, outs, layouts=layouts)
    for peer in ("polars-lazy", "polars-eager"):
        read = "pl.scan_parquet" if peer == "polars-lazy" else "pl.read_parquet"
        code = argv[peer][2]
        for side, layout in zip(("trades", "quotes"), layouts):
            sorted_ = f'{read}({side}).sort("time")' in code
            assert sorted_ == (layout == "parts"), (peer, side)
    assert ".sort(" not in argv["duckdb"][2]


def test_a_day_file_in_parts_is_numbered_files_that_sort_out_of_time_order(e2e, tmp_path):
    """``--left-files parts`` and ``--right-files parts``: the day in ``PARTS`` files of
    equal rows in its order, named by pyarrow's ``write_dataset``: by path, part-10 comes
    before part-2; by number, they are the day. Written once (a second call finds them)."""
    from asofgpu import marketdata

    quotes, _ = marketdata.day(3_000, 100, 40, seed=3)
    path = tmp_path / "quotes.parquet"
    pq.write_table(quotes, path)
    said = []
    folder = e2e.split_into_parts(path, said.append)
    names = sorted(p.name for p in folder.iterdir())
    assert len(names) == e2e.PARTS and names[:3] == [
        "part-0.parquet",
        "part-1.parquet",
        "part-10.parquet",
    ]
    by_number = sorted(folder.iterdir(), key=lambda p: int(p.stem.removeprefix("part-")))
    tables = [pq.read_table(p) for p in by_number]
    assert pa.concat_tables(tables).equals(quotes)
    assert max(t.num_rows for t in tables) == -(-quotes.num_rows // e2e.PARTS)
    assert len(said) == 1 and f"as {e2e.PARTS:,} numbered parts" in said[0]
    assert e2e.split_into_parts(path, said.append) == folder and len(said) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["quotes-parts", "quotes.parquet"]


def test_a_day_partitioned_by_symbol_is_hive_folders_as_write_dataset_makes_them(e2e, tmp_path):
    """``--left-files hive`` and ``--right-files hive``: a folder symbol=X/ a symbol, as
    pyarrow's ``write_dataset`` partitions a table: the symbol only in the folders' names,
    each file in the day's order, in small row groups. Written once."""
    from asofgpu import marketdata

    quotes, _ = marketdata.day(3_000, 100, 40, seed=3)
    path = tmp_path / "quotes.parquet"
    pq.write_table(quotes, path)
    said = []
    folder = e2e.split_into_hive(path, said.append)
    symbols = sorted(set(quotes["symbol"].to_pylist()))
    assert sorted(p.name for p in folder.iterdir()) == [f"symbol={s}" for s in symbols]
    assert e2e.files_of(folder) == len(symbols) and e2e.files_of(path) == 1
    for symbol in symbols:
        (file,) = (folder / f"symbol={symbol}").iterdir()
        table = pq.read_table(file, partitioning=None)
        assert "symbol" not in table.column_names
        mine = quotes.filter(pc.equal(quotes["symbol"], symbol)).drop_columns(["symbol"])
        assert table.equals(mine)  # the day's order kept
    assert len(said) == 1 and f"into {len(symbols):,} hive folders" in said[0]
    assert e2e.split_into_hive(path, said.append) == folder and len(said) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["quotes-hive", "quotes.parquet"]


@pytest.mark.parametrize("layouts", [("hive", "hive"), ("hive", "one"), ("one", "hive")])
def test_the_peers_read_hive_folders_by_a_glob_with_their_partition_column(e2e, tmp_path, layouts):
    """A hive side is read a level down (``*/*.parquet``), its partition column taken from
    the folders' names: polars is told (it infers one from a folder given alone, not from a
    glob), DuckDB too."""
    trades, quotes = tmp_path / "trades-hive", tmp_path / "quotes-hive"
    trades.mkdir(), quotes.mkdir()
    outs = {s: tmp_path / f"{s}.parquet" for s in e2e.SYSTEMS}
    argv = e2e.commands(["asofgpu"], trades, quotes, outs, layouts=layouts)
    for at, (path, layout) in enumerate(zip((trades, quotes), layouts), start=3):
        glob = str(path / "*" / "*.parquet") if layout == "hive" else str(path / "*.parquet")
        for peer in ("polars-lazy", "polars-eager", "duckdb"):
            assert argv[peer][at] == glob, peer
    for peer, hive in (("polars-lazy", "True"), ("polars-eager", "True"), ("duckdb", "true")):
        code = argv[peer][2]
        for side, layout in zip(("trades", "quotes"), layouts):
            said = f"{side}, hive_partitioning={hive})" in code or (
                f"'{{{side}}}', hive_partitioning={hive})" in code
            )
            assert said == (layout == "hive"), (peer, side)
        assert ".sort(" not in code


def test_a_day_of_per_symbol_files_is_reported_without_the_one_files_goal(e2e):
    records = {
        "asofgpu": {"system": "asofgpu", "status": "ok", "median_s": 3.0},
        "polars-eager": {"system": "polars-eager", "status": "ok", "median_s": 2.0},
    }
    assert e2e.headline(records, None) == {
        "ratio": 1.5,
        "fastest_peer": "polars-eager",
        "goal": None,
        "met": None,
    }
    assert e2e.headline(records)["goal"] == 0.7 and e2e.headline(records)["met"] is False


def _trades(bids, order=None):
    rows = {
        "time": [1, 2, 2, 3],
        "symbol": ["A", "B", "B", "A"],
        "price": [1.0, 2.0, 2.0, 3.0],
        "size": [100, 200, 200, 300],
        "bid": bids,
    }
    table = pa.table(rows)
    return table if order is None else table.take(order)


def test_outputs_with_the_same_rows_in_any_order_and_types_match(e2e):
    ours = _trades([0.5, None, 1.5, 2.5])
    # Another order, the two trades with equal keys swapped, a string type polars writes, an
    # extra column and microsecond times would all be the same answer.
    theirs = _trades([0.5, 1.5, None, 2.5], order=[3, 2, 0, 1])
    theirs = theirs.set_column(1, "symbol", theirs["symbol"].cast(pa.large_string()))
    theirs = theirs.append_column("ask", pa.array([1.0, 2.0, 3.0, 4.0]))
    theirs = theirs.set_column(0, "time", theirs["time"].cast(pa.timestamp("us", tz="UTC")))
    ours = ours.set_column(0, "time", ours["time"].cast(pa.timestamp("us", tz="UTC")))
    assert e2e.mismatch(ours, theirs, "asofgpu", "duckdb") is None


@pytest.mark.parametrize(
    ("bids", "rows", "message"),
    [
        ([0.5, None, 1.5, 2.75], None, "duckdb's output differs from asofgpu's in 1 of 4 rows"),
        ([0.5, None, 1.5, None], None, "in 1 of 4 rows"),  # a match lost
        ([0.5, 1.0, 1.5, 2.5], None, "differs from asofgpu's in"),  # a match made up
        ([0.5, None, 1.5, 2.5], [0, 1, 2], "duckdb's output has 3 rows, asofgpu's 4"),
    ],
)
def test_a_wrong_answer_is_caught(e2e, bids, rows, message):
    ours = _trades([0.5, None, 1.5, 2.5])
    theirs = _trades(bids, order=rows)
    wrong = e2e.mismatch(ours, theirs, "asofgpu", "duckdb")
    assert wrong is not None and message in wrong


def test_an_output_without_a_compared_column_is_an_error(e2e):
    ours = _trades([0.5, None, 1.5, 2.5])
    with pytest.raises(e2e.BenchError, match="the output has no column bid"):
        e2e.mismatch(ours, ours.drop_columns(["bid"]), "asofgpu", "duckdb")


@pytest.mark.slow  # three processes measured, one of 200 MiB, one stopped at its timeout
def test_measure_times_the_process_and_reads_its_peak(e2e):
    hog = (
        "b = bytearray(200 * 2**20); b[::4096] = b'x' * len(b[::4096]); import time; "
        "time.sleep(0.2)"
    )
    run = e2e.measure([sys.executable, "-c", hog], timeout=60)
    assert run["status"] == "ok" and run["wall_s"] >= 0.2
    assert 200 * 2**20 <= run["peak_rss_bytes"] < 1 * 2**30
    failed = e2e.measure([sys.executable, "-c", "import sys; sys.exit('no such file')"], 60)
    assert failed["status"] == "failed" and failed["rc"] == 1
    assert "no such file" in failed["stderr"]
    start = time.perf_counter()
    stopped = e2e.measure([sys.executable, "-c", "import time; time.sleep(60)"], timeout=0.5)
    assert stopped["status"] == "timeout" and time.perf_counter() - start < 10


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--size", "10M"], "argument --size: '10M' is not QUOTESxTRADES"),
        (["--scale", "100Mxlots"], "argument --scale: 'lots' is not a row count"),
        (["--runs", "0"], "argument --runs: '0' must be at least 1"),
        (["--scale-memory-limit", "lots"], "'lots' is not an amount of memory such as 2GiB"),
    ],
)
def test_a_bad_option_names_itself(tmp_path, args, message):
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args, "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert message in done.stderr
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2GiB", 2 * 2**30),
        ("512MiB", 512 * 2**20),
        ("4GB", 4 * 10**9),
        ("1.5GiB", 3 * 2**29),
        ("4096", 4096),
        ("64 mib", 64 * 2**20),
        ("1_000_000", 10**6),
    ],
)
def test_memory_amounts_read_as_enrich_reads_them(e2e, text, expected):
    assert e2e.parse_bytes(text) == expected


@pytest.mark.parametrize("text", ["2G", "lots", "0GiB", "-1MiB"])
def test_memory_amounts_enrich_would_refuse_are_refused(e2e, text):
    with pytest.raises(argparse.ArgumentTypeError, match="is not an amount of memory"):
        e2e.parse_bytes(text)
