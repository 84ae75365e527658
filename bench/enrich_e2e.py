"""make bench, end to end: ``asofgpu enrich`` against polars and DuckDB, parquet in, parquet out.

The product's main job, measured whole: enrich a day of trades with the prevailing quote of
their symbol (backward, exact matches allowed, by symbol), reading both files from parquet and
writing the enriched trades to parquet. Each system runs as a process of its own, from start to
exit (Python start-up, imports, reading, joining, writing), so the wall time is what a user
waits for; the peak RSS is that process's (``getrusage(RUSAGE_CHILDREN)`` in a fresh Python that
starts it, Linux: exact, no polling). Systems:

- asofgpu: ``python -m asofgpu enrich trades quotes -o out --on time --by symbol --device cpu -q``
  (after one untimed warm-up run: numba loads or compiles its cache there, and Python writes
  asofgpu's bytecode even where ``PYTHONDONTWRITEBYTECODE`` says not to, as it does on this
  machine: pip compiled the peers' bytecode when it installed them, and an editable asofgpu
  would otherwise compile its 0.16 s of sources in every timed run);
- polars lazy: ``scan_parquet(trades).join_asof(scan_parquet(quotes), ...).sink_parquet(out)``;
- polars eager: ``read_parquet(trades).join_asof(read_parquet(quotes), ...).write_parquet(out)``;
- DuckDB: ``COPY (SELECT t.*, q.bid, ... FROM read_parquet(trades) t ASOF LEFT JOIN
  read_parquet(quotes) q ON t.symbol = q.symbol AND t.time >= q.time) TO out (FORMAT parquet)``.

The data is ``asofgpu.marketdata.day(QUOTES, TRADES, 1000, seed=0)`` written with
``pyarrow.parquet.write_table``, generated once into ``--data``. The systems take turns, one run
each per round and the order rotated every round, so a drift in the machine's speed falls on all
of them alike. Each writes with its own default compression. Every peer's output must hold the
same (time, symbol, price, size, bid) rows as asofgpu's, as a multiset (DuckDB does not keep the
trades' order), or the script fails and writes nothing.

``--left-files by-symbol`` lays the trades out as many feeds deliver them: a folder of one file
a symbol (``split_by_symbol``: 1,000 Zipf-sized files, each in time order), written once beside
the day. asofgpu enriches the folder into a folder of as many files (``-o`` a folder); the peers
read it as one glob (``trades-by-symbol/*.parquet``) and write one file. Its report is
enrich-by-symbol.md and .json, and has no goal. ``--right-files by-symbol`` lays the quotes out
so (``quotes-by-symbol/``), as stores that keep a file a symbol hold them; its reports are
enrich-quotes-by-symbol.* (and enrich-by-symbol-quotes-by-symbol.* with both), without a goal.
``parts`` lays a side out as pyarrow's ``write_dataset`` writes a day (``split_into_parts``:
``PARTS`` files of equal rows in time order, ``preserve_order=True``), named part-0 ... part-16,
so that part-10 sorts before part-2: the peers' globs read them in that order, so polars sorts
each side by time first (``.sort("time")``, what its user must write; DuckDB's ASOF JOIN sorts
by itself); reports enrich-parts-quotes-parts.* and so on. ``hive`` lays a side out as
``write_dataset`` partitions it by symbol with its defaults otherwise (``split_into_hive``:
``symbol=S0000/part-0.parquet`` and so on, the symbol in the folders' names alone, each file in
time order, in the small row groups the writer makes of a table's batches: about 300 a file);
the peers read it as one glob with hive partitioning (``*/*.parquet``); reports
enrich-hive-quotes-hive.* and so on.

``--scale 100Mx10M`` (make bench passes it) adds one run of asofgpu alone with
``--memory-limit`` on a day too large to hold comfortably: the quotes are written time slice by
time slice, never all in memory. It reports the wall time, the peak RSS and whether that stayed
under the limit.

    python bench/enrich_e2e.py                          # 10M x 10M, 2 rounds
    python bench/enrich_e2e.py --quick                  # 200K x 200K, 1 round: checks the harness
    python bench/enrich_e2e.py --scale 100Mx10M --scale-memory-limit 2GiB

Results go to ``--out`` (bench/results): enrich.md (the table) and enrich.json (raw numbers),
each written whole or not at all.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/common.py, when loaded by path
from common import (
    ROOT,
    BenchError,
    atomic_write,
    commit,
    heading,
    label,  # noqa: E402
    machine,
    parse_size,
    progress,
    seconds_text,
    utc_minute,
    versions,
    write_parquet,
    write_report,
)

SYSTEMS = ("asofgpu", "polars-lazy", "polars-eager", "duckdb")
TITLES = {
    "asofgpu": "asofgpu enrich",
    "polars-lazy": "polars (lazy)",
    "polars-eager": "polars (eager)",
    "duckdb": "DuckDB",
}
GOAL = 0.7  # issue 18: asofgpu enrich at most 0.7x the fastest peer's wall time, 10M x 10M
SYMBOLS, SEED = 1000, 0
DEFAULT_SIZE, QUICK_SIZE = "10Mx10M", "200Kx200K"
KEY = ["time", "symbol", "price", "size", "bid"]  # the rows compared, as a multiset
# How trades and quotes are laid out: --left-files and --right-files.
LAYOUTS = ("one", "by-symbol", "parts", "hive")
PARTS = 17  # the files of the parts layout: part-10 ... part-16 sort before part-2
SLICE_ROWS = 5_000_000  # rows per generated slice of the scale day
RESULT = "@@e2e "  # the prefix of the meter's one line on stdout


# ------------------------------------------------------------------------------ options


def parse_bytes(text: str) -> int:
    """'2GiB', '512MiB', '4GB', '1_000_000' -> bytes, read as enrich reads --memory-limit."""
    from asofgpu.enrich._memory import parse_size as parse_memory

    try:
        value = parse_memory(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an amount of memory such as 2GiB, 512MiB or 4GB"
        )
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def options(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench/enrich_e2e.py",
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Sizes are QUOTESxTRADES with K, M, G suffixes. "
        "Results: OUT/enrich.md and OUT/enrich.json (enrich-by-symbol.* with "
        "--left-files by-symbol, enrich-quotes-by-symbol.* with --right-files by-symbol; "
        "-one-file added with --one-file and a folder of trades).",
    )
    parser.add_argument(
        "--size",
        type=parse_size,
        default=None,
        help=f"the day joined by every system (default {DEFAULT_SIZE})",
    )
    parser.add_argument(
        "--runs",
        type=positive_int,
        default=None,
        help="timed rounds, one run of each system per round (default 2)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"--size {QUICK_SIZE} --runs 1 unless given: checks the harness",
    )
    parser.add_argument(
        "--left-files",
        choices=LAYOUTS,
        default="one",
        help="the trades as one file (default), or by-symbol: a folder of one file a "
        "symbol, as a feed split by instrument gives them, or parts: a folder of "
        f"{PARTS} files in time order named as pyarrow's write_dataset names them "
        "(part-0 ...), or hive: folders symbol=S0000/ ... as write_dataset partitions "
        "a table by symbol; OUT is then a folder too",
    )
    parser.add_argument(
        "--right-files",
        choices=LAYOUTS,
        default="one",
        help="the quotes as one file (default), or by-symbol: a folder of one file a symbol, "
        "each in time order, or parts and hive: as --left-files has them",
    )
    parser.add_argument(
        "--one-file",
        action="store_true",
        help="with a folder of trades, asofgpu writes one file (enrich --one-file), as the "
        "peers do, not a folder of a file per trades file",
    )
    parser.add_argument(
        "--scale",
        type=parse_size,
        default=None,
        help="also run asofgpu alone with --memory-limit on a day of this "
        "size, written slice by slice (off unless given; e.g. 100Mx10M)",
    )
    parser.add_argument(
        "--scale-memory-limit",
        default="2GiB",
        metavar="LIMIT",
        help="passed to enrich --memory-limit as written; the peak RSS is "
        "compared with it (default 2GiB)",
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=ROOT / "bench" / "data" / "e2e",
        help="cache of the generated parquet files (default bench/data/e2e)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=ROOT / "bench" / "results",
        help="where the report goes (default bench/results)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=1800.0,
        help="seconds one run may take before it is stopped and the system "
        "recorded as timed out (default 1800)",
    )
    parser.add_argument(
        "--enrich-cmd",
        default=None,
        metavar="CMD",
        help="the command that runs asofgpu, split like a shell would "
        "(default: this Python's -m asofgpu)",
    )
    args = parser.parse_args(argv)
    args.size = args.size or parse_size(QUICK_SIZE if args.quick else DEFAULT_SIZE)
    args.runs = args.runs or (1 if args.quick else 2)
    try:
        args.limit_bytes = parse_bytes(args.scale_memory_limit)
    except argparse.ArgumentTypeError as error:
        parser.error(f"argument --scale-memory-limit: {error}")
    args.enrich_cmd = (
        shlex.split(args.enrich_cmd) if args.enrich_cmd else [sys.executable, "-m", "asofgpu"]
    )
    return args


# ------------------------------------------------------------------------------ data


def _cached_day(folder: Path, what: str, write, say) -> tuple[Path, Path]:
    """(quotes.parquet, trades.parquet) in ``folder``, written by ``write(quotes, trades)``
    the first time only."""
    quotes, trades = folder / "quotes.parquet", folder / "trades.parquet"
    if not (quotes.exists() and trades.exists()):
        folder.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        write(quotes, trades)
        say(f"generated {what} in {folder} in {time.perf_counter() - start:.1f} s")
    return quotes, trades


def day_files(data: Path, quotes_rows: int, trades_rows: int, say) -> tuple[Path, Path]:
    """(quotes.parquet, trades.parquet) of ``marketdata.day``, generated on first use."""

    def write(quotes: Path, trades: Path) -> None:
        from asofgpu import marketdata

        q, t = marketdata.day(quotes_rows, trades_rows, SYMBOLS, seed=SEED)
        write_parquet(q, quotes)
        write_parquet(t, trades)

    name = f"{label(quotes_rows)}x{label(trades_rows)}"
    return _cached_day(
        data / f"{name}-{SYMBOLS}sym-seed{SEED}",
        f"{label(quotes_rows)} quotes x {label(trades_rows)} trades",
        write,
        say,
    )


def split_by_symbol(day_file: Path, say) -> Path:
    """A folder beside ``day_file`` (the trades or the quotes) of its rows split by symbol,
    ``NAME-by-symbol/S0000.parquet`` and so on, each in the file's (time) order, written
    once; the folder appears whole or not at all.

    A per-symbol feed is what many users' LEFT is: Zipf-sized files, from most of a chunk
    down to a few hundred rows, which asofgpu enriches file by file into a folder; and
    stores that keep a file a symbol hold their quotes so."""

    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    folder = day_file.parent / f"{day_file.stem}-by-symbol"
    if folder.is_dir():
        return folder
    start = time.perf_counter()
    table = pq.read_table(day_file)
    table = table.take(pc.sort_indices(table["symbol"]))  # stable: time order kept within
    symbols, counts = pc.value_counts(table["symbol"]).flatten()
    order = pc.sort_indices(symbols)

    def write(partial: Path) -> None:
        at = 0
        for symbol, count in zip(symbols.take(order).to_pylist(), counts.take(order).to_pylist()):
            pq.write_table(table.slice(at, count), partial / f"{symbol}.parquet")
            at += count

    _written_whole(folder, write)
    took = time.perf_counter() - start
    say(f"split {day_file.name} into {len(symbols):,} files by symbol in {took:.1f} s")
    return folder


def split_into_parts(day_file: Path, say) -> Path:
    """A folder beside ``day_file`` of its rows in ``PARTS`` files of equal rows, in the
    file's (time) order, as pyarrow's ``write_dataset`` writes a day it is told to keep in
    order: ``NAME-parts/part-0.parquet`` ... ``part-16.parquet``, so that part-10 sorts
    before part-2. Written once; the folder appears whole or not at all."""

    return _written_dataset(
        day_file,
        "parts",
        lambda rows: {"max_rows_per_file": rows, "max_rows_per_group": rows},
        lambda folder, took: say(
            f"wrote {day_file.name} as {len(list(folder.iterdir())):,} numbered parts in "
            f"{took:.1f} s"
        ),
    )


def split_into_hive(day_file: Path, say) -> Path:
    """A folder beside ``day_file`` of its rows partitioned by symbol as pyarrow's
    ``write_dataset`` partitions a table read by ``read_table``, hive-style:
    ``NAME-hive/symbol=S0000/part-0.parquet`` and so on, the symbol in the folders' names
    only, each file in the day's (time) order (``preserve_order=True``) and in the row groups
    the writer makes of the table's batches (about 300 a file, of tens of rows). Written
    once; the folder appears whole or not at all."""

    return _written_dataset(
        day_file,
        "hive",
        lambda rows: {"partitioning": ["symbol"], "partitioning_flavor": "hive"},
        lambda folder, took: say(
            f"partitioned {day_file.name} into {files_of(folder):,} hive folders in {took:.1f} s"
        ),
    )


def _written_dataset(day_file: Path, layout: str, options, done) -> Path:
    """``NAME-layout/`` beside ``day_file``: its rows as pyarrow's ``write_dataset`` writes
    them kept in order, with ``options(rows per part)``; written once, whole or not at all,
    and then ``done(folder, seconds)``."""
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    folder = day_file.parent / f"{day_file.stem}-{layout}"
    if folder.is_dir():
        return folder
    start = time.perf_counter()
    table = pq.read_table(day_file)
    _written_whole(
        folder,
        lambda partial: ds.write_dataset(
            table,
            partial,
            format="parquet",
            preserve_order=True,
            existing_data_behavior="overwrite_or_ignore",  # (mkdtemp's folder, empty)
            **options(max(1, -(-table.num_rows // PARTS))),
        ),
    )
    done(folder, time.perf_counter() - start)
    return folder


def files_of(path: Path) -> int:
    """The parquet files of a side: 1 for a file, else those below the folder."""
    return len(list(path.rglob("*.parquet"))) if path.is_dir() else 1


def _written_whole(folder: Path, write) -> None:
    """``write(partial)`` fills a new hidden folder beside ``folder``, which then becomes
    ``folder``: it appears whole or not at all."""
    import shutil

    partial = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        write(partial)
        os.chmod(partial, 0o777 & ~_umask())  # mkdtemp's is 0700: as a plain mkdir would make it
        os.rename(partial, folder)
    except BaseException:
        shutil.rmtree(partial)
        raise


def laid_out(day_file: Path, layout: str, say) -> Path:
    """``day_file`` as ``layout`` lays it out (``LAYOUTS``): itself, or a folder beside it."""
    if layout == "by-symbol":
        return split_by_symbol(day_file, say)
    if layout == "parts":
        return split_into_parts(day_file, say)
    if layout == "hive":
        return split_into_hive(day_file, say)
    return day_file


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def day_bench(
    argv: list[str] | None,
    doc: str,
    stem: str,
    *,
    size: tuple[int, int],
    runs: int,
    runs_help: str,
    quick_size: tuple[int, int],
    packages: tuple[str, ...],
    measure,
    markdown,
) -> int:
    """A bench of one process on the day's files (``day_files``): its options (``--size``,
    ``--runs``, ``--quick`` for ``quick_size`` and one run unless given, ``--data``,
    ``--out``), ``measure(quotes, trades, runs)``'s cases in a report with the machine and
    the commit, written as ``stem``.json and ``markdown(report)`` as ``stem``.md."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("--size", type=parse_size, default=size, help="QUOTESxTRADES")
    p.add_argument("--runs", type=positive_int, default=runs, help=runs_help)
    quick = f"{label(quick_size[0])}x{label(quick_size[1])}"
    p.add_argument("--quick", action="store_true", help=f"--size {quick} --runs 1 unless given")
    p.add_argument("--data", type=Path, default=ROOT / "bench" / "data" / "e2e")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = p.parse_args(argv)
    given = sys.argv[1:] if argv is None else argv
    if args.quick:
        args.size = args.size if "--size" in given else quick_size
        args.runs = args.runs if "--runs" in given else 1
    quotes_rows, trades_rows = args.size
    quotes, trades = day_files(args.data, quotes_rows, trades_rows, progress)
    report = {
        "when": utc_minute(),
        "machine": machine(),
        "commit": commit(),
        "versions": versions(packages),
        "runs": args.runs,
        "quotes": quotes_rows,
        "trades": trades_rows,
        "cases": measure(quotes, trades, args.runs),
    }
    write_report(args.out, stem, report, markdown(report))
    progress(f"wrote {stem}.md and {stem}.json to {args.out}")
    return 0


def _slice_tables(rng, base, kind: str, times):
    """One time slice of quotes or trades, as ``marketdata.day`` makes them."""
    import numpy as np
    import pyarrow as pa

    from asofgpu import marketdata

    n = len(times)
    sym = rng.choice(SYMBOLS, n, p=marketdata.activity(SYMBOLS)).astype(np.int32)
    columns = {
        "time": pa.array(times, marketdata.TIME_TYPE),
        "symbol": marketdata.symbols(SYMBOLS).take(pa.array(sym)),
    }
    if kind == "quotes":
        mid = base[sym] * (1 + rng.normal(0, 0.002, n))
        half_spread = base[sym] * rng.uniform(0.0001, 0.001, n)
        columns |= {
            "bid": np.round(mid - half_spread, 2),
            "ask": np.round(mid + half_spread, 2),
            "bid_size": rng.integers(1, 50, n).astype(np.float64) * 100,
            "ask_size": rng.integers(1, 50, n).astype(np.float64) * 100,
        }
    else:
        columns |= {
            "price": np.round(base[sym] * (1 + rng.normal(0, 0.002, n)), 2),
            "size": rng.integers(1, 20, n).astype(np.int64) * 100,
        }
    return pa.table(columns)


def write_sliced(path: Path, kind: str, rows: int, rng, base, slice_rows: int = SLICE_ROWS):
    """``rows`` quotes or trades over the session, time-sorted, written one time slice at a
    time with ``ParquetWriter``: memory holds one slice, never the whole file."""
    import numpy as np
    import pyarrow.parquet as pq

    from asofgpu import marketdata

    slices = max(1, -(-rows // slice_rows))
    start = int(marketdata.SESSION_OPEN.timestamp()) * 10**9
    bounds = start + np.arange(slices + 1, dtype=np.int64) * marketdata.SESSION_NS // slices

    def write(tmp: Path) -> None:
        writer = None
        try:
            for i in range(slices):
                n = rows // slices + (i < rows % slices)
                times = np.sort(rng.integers(bounds[i], bounds[i + 1], n, dtype=np.int64))
                table = _slice_tables(rng, base, kind, times)
                writer = writer or pq.ParquetWriter(tmp, table.schema)
                writer.write_table(table)
        finally:
            if writer is not None:
                writer.close()

    atomic_write(path, write)


def scale_files(data: Path, quotes_rows: int, trades_rows: int, say) -> tuple[Path, Path]:
    """(quotes.parquet, trades.parquet) of the scale day, generated slice by slice once."""

    def write(quotes: Path, trades: Path) -> None:
        import numpy as np

        rng = np.random.default_rng(SEED)
        base = np.exp(rng.normal(4.0, 1.0, SYMBOLS))  # a price level per symbol, as marketdata's
        write_sliced(quotes, "quotes", quotes_rows, rng, base)
        write_sliced(trades, "trades", trades_rows, rng, base)

    name = f"{label(quotes_rows)}x{label(trades_rows)}"
    return _cached_day(
        data / f"scale-{name}-{SYMBOLS}sym-seed{SEED}",
        f"the scale day, {label(quotes_rows)} quotes x {label(trades_rows)} trades,",
        write,
        say,
    )


# ------------------------------------------------------------------------------ the systems

POLARS_CODE = """\
import sys
import polars as pl
trades, quotes, out = sys.argv[1:]
{read}(trades{hive_trades}){sort_trades}.join_asof({read}(quotes{hive_quotes}){sort_quotes}, on="time", by="symbol"{check}).{write}(out)"""
# Numbered parts read by a glob come part-10 before part-2: out of time order, so a polars
# user sorts them (with ``by`` polars cannot check, and would join them as they come).
SORT = '.sort("time")'
# A glob of hive folders, read with its partition column (polars takes one from a folder
# only by itself; DuckDB may guess, and is told).
POLARS_HIVE, DUCKDB_HIVE = ", hive_partitioning=True", ", hive_partitioning=true"

DUCKDB_CODE = """\
import sys
import duckdb
trades, quotes, out = (p.replace("'", "''") for p in sys.argv[1:])
duckdb.execute(f\"\"\"COPY (SELECT t.*, q.bid, q.ask, q.bid_size, q.ask_size
    FROM read_parquet('{{trades}}'{hive_trades}) t ASOF LEFT JOIN read_parquet('{{quotes}}'{hive_quotes}) q
    ON t.symbol = q.symbol AND t.time >= q.time) TO '{{out}}' (FORMAT parquet)\"\"\")"""


def _polars_check_arg() -> str:
    """``, check_sortedness=False`` where polars takes it: the files are time-sorted, and
    polars cannot verify that with ``by`` and would only warn."""
    import inspect

    import polars as pl

    takes = "check_sortedness" in inspect.signature(pl.LazyFrame.join_asof).parameters
    return ", check_sortedness=False" if takes else ""


def enrich_argv(enrich_cmd: list[str], trades: Path, quotes: Path, out: Path, device: str):
    """asofgpu's job as the README runs it (backward by symbol, exact matches allowed), its
    log on standard error."""
    return [
        *enrich_cmd,
        "enrich",
        str(trades),
        str(quotes),
        "-o",
        str(out),
        "--on",
        "time",
        "--by",
        "symbol",
        "--device",
        device,
    ]


def commands(
    enrich_cmd: list[str],
    trades: Path,
    quotes: Path,
    outs: dict[str, Path],
    systems=SYSTEMS,
    layouts: tuple[str, str] = ("one", "one"),
    one_file: bool = False,
) -> dict[str, list[str]]:
    """Each system's whole job as an argv: asofgpu's command, the peers' ``python -c``;
    ``layouts``: the trades' and the quotes' (``LAYOUTS``); ``one_file``: asofgpu writes a
    folder of trades into one file (``--one-file``)."""
    check = _polars_check_arg() if any(s.startswith("polars") for s in systems) else ""
    sides = tuple(zip(("trades", "quotes"), layouts))
    sorts = {f"sort_{side}": SORT if layout == "parts" else "" for side, layout in sides}
    hive = {side: layout == "hive" for side, layout in sides}
    polars_hive = {f"hive_{side}": POLARS_HIVE if hive[side] else "" for side, _ in sides}
    code = {
        "polars-lazy": POLARS_CODE.format(
            read="pl.scan_parquet", write="sink_parquet", check=check, **sorts, **polars_hive
        ),
        "polars-eager": POLARS_CODE.format(
            read="pl.read_parquet", write="write_parquet", check=check, **sorts, **polars_hive
        ),
        "duckdb": DUCKDB_CODE.format(
            **{f"hive_{side}": DUCKDB_HIVE if hive[side] else "" for side, _ in sides}
        ),
    }
    # A folder as each peer reads one: DuckDB needs a glob, polars takes one too; hive
    # folders hold their files a level down.
    peer_trades, peer_quotes = (
        str(p / "*" / "*.parquet" if hive[side] else p / "*.parquet") if p.is_dir() else str(p)
        for p, side in ((trades, "trades"), (quotes, "quotes"))
    )
    argv = {}
    for system in systems:
        if system == "asofgpu":
            one = ["--one-file"] if one_file and trades.is_dir() else []
            argv[system] = [
                *enrich_argv(enrich_cmd, trades, quotes, outs[system], "cpu"),
                *one,
                "-q",
            ]
        else:
            argv[system] = [
                sys.executable,
                "-c",
                code[system],
                peer_trades,
                peer_quotes,
                str(outs[system]),
            ]
    return argv


# ------------------------------------------------------------------------------ measuring

# A fresh, small Python starts the job and reads its children's peak RSS when it is done. Not
# the bench itself: Linux carries a parent's peak RSS into a child through fork and exec, so a
# job started straight from the bench (which reads outputs of millions of rows) would inherit it.
METER = """\
import json, resource, subprocess, sys, time
start = time.perf_counter()
rc = subprocess.call(sys.argv[1:], stdout=sys.stderr)
wall = time.perf_counter() - start
peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
print("@@e2e " + json.dumps({"rc": rc, "wall_s": wall, "peak_kib": peak_kib}), flush=True)"""


def measure(argv: list[str], timeout: float, env: dict | None = None) -> dict:
    """One run of ``argv`` (in ``env``, default this process's): {status, wall_s,
    peak_rss_bytes, started_at, stderr}. status is ok, failed (with rc) or timeout (the job's
    whole process group stopped)."""
    started = time.time()
    proc = subprocess.Popen(
        [sys.executable, "-c", METER, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=env,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the meter's session: the meter and the job
        proc.communicate()
        return {"status": "timeout", "started_at": started, "stderr": ""}
    lines = [line for line in stdout.splitlines() if line.startswith(RESULT)]
    if not lines:
        return {
            "status": "failed",
            "rc": proc.returncode,
            "started_at": started,
            "stderr": stderr[-4000:],
        }
    meter = json.loads(lines[-1][len(RESULT) :])
    status = "ok" if meter["rc"] == 0 else "failed"
    return {
        "status": status,
        "rc": meter["rc"],
        "wall_s": meter["wall_s"],
        "peak_rss_bytes": meter["peak_kib"] * 1024,
        "started_at": started,
        "stderr": stderr[-4000:],  # the tail: why it failed, or the job's summary
    }


def rounds(
    argv: dict[str, list[str]], outs: dict[str, Path], runs: int, timeout: float, say
) -> dict[str, dict]:
    """``runs`` rounds, one run of each system per round, the order rotated every round; a
    system that fails or times out sits out the rounds after. Per system: its record."""
    records = {
        s: {"system": s, "status": "ok", "times_s": [], "peak_rss_bytes": [], "started_at": []}
        for s in argv
    }
    systems = list(argv)
    for r in range(runs):
        for system in systems[r % len(systems) :] + systems[: r % len(systems)]:
            record = records[system]
            if record["status"] != "ok":
                continue
            remove(outs[system])  # outside the timed region
            run = measure(argv[system], timeout)
            if run["status"] != "ok":
                record.update(status=run["status"], rc=run.get("rc"), stderr=run["stderr"])
                say(
                    f"round {r + 1}/{runs}: {system} {run['status']}"
                    + (
                        f" (exit {run['rc']}): {_last_line(run['stderr'])}"
                        if run["status"] == "failed"
                        else f" after {timeout:g} s"
                    )
                )
                continue
            record["times_s"].append(run["wall_s"])
            record["peak_rss_bytes"].append(run["peak_rss_bytes"])
            record["started_at"].append(run["started_at"])
            say(
                f"round {r + 1}/{runs}: {system} {run['wall_s']:.2f} s, peak "
                f"{_memory(run['peak_rss_bytes'])}"
            )
    for system, record in records.items():
        if record["status"] == "ok":
            record["median_s"] = statistics.median(record["times_s"])
            record["peak_rss_mib"] = max(record["peak_rss_bytes"]) / 2**20
            record["output_bytes"] = size_on_disk(outs[system])
    return records


def remove(path: Path) -> None:
    """A file or a folder gone, if there."""
    import shutil

    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def size_on_disk(path: Path) -> int:
    """A file's size, or a folder's: the sum of the files in it."""
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(no message)"


# ------------------------------------------------------------------------------ correctness


def canonical(table):
    """The KEY columns in one type each (int64 nanoseconds, string, float64, int64, float64),
    rows sorted by all of them: two outputs hold the same rows iff these are equal."""
    import pyarrow as pa
    import pyarrow.compute as pc

    types = {
        "time": pa.timestamp("ns", tz="UTC"),
        "symbol": pa.string(),
        "price": pa.float64(),
        "size": pa.int64(),
        "bid": pa.float64(),
    }
    missing = [c for c in KEY if c not in table.column_names]
    if missing:
        raise BenchError(f"the output has no column {', '.join(missing)}")
    columns = []
    for name in KEY:
        column = table[name].cast(types[name])
        if name == "time":
            column = column.cast(pa.int64())
        columns.append(column)
    keyed = pa.table(columns, names=KEY)
    order = pc.sort_indices(keyed, [(c, "ascending") for c in KEY])  # nulls last
    return keyed.take(order).combine_chunks()


def _differing_rows(a, b):
    """Positions where two canonical tables of one length differ in any column."""
    import numpy as np
    import pyarrow.compute as pc

    differ = np.zeros(a.num_rows, dtype=bool)
    for name in KEY:
        x, y = a[name], b[name]
        same = pc.fill_null(pc.equal(x, y), False)
        both_null = pc.and_(pc.is_null(x), pc.is_null(y))
        differ |= ~pc.or_(same, both_null).to_numpy(zero_copy_only=False)
    return np.flatnonzero(differ)


def mismatch(reference, other, reference_name: str, other_name: str) -> str | None:
    """None when both tables hold the same (time, symbol, price, size, bid) rows, in any order
    and with any column types; otherwise what differs, in a sentence."""
    a, b = canonical(reference), canonical(other)
    if a.num_rows != b.num_rows:
        return f"{other_name}'s output has {b.num_rows:,} rows, {reference_name}'s {a.num_rows:,}"
    rows = _differing_rows(a, b)
    if len(rows) == 0:
        return None
    first = int(rows[0])
    return (
        f"{other_name}'s output differs from {reference_name}'s in {len(rows):,} of "
        f"{a.num_rows:,} rows (sorted by {', '.join(KEY)}); the first: "
        f"{reference_name} {a.slice(first, 1).to_pylist()[0]} vs {other_name} "
        f"{b.slice(first, 1).to_pylist()[0]}"
    )


def check(outs: dict[str, Path], records: dict[str, dict]) -> None:
    """Every peer that finished wrote the same rows as asofgpu, or BenchError."""
    import pyarrow.parquet as pq

    reference = pq.read_table(outs["asofgpu"], columns=KEY)
    for system, record in records.items():
        if system == "asofgpu" or record["status"] != "ok":
            continue
        wrong = mismatch(reference, pq.read_table(outs[system], columns=KEY), "asofgpu", system)
        if wrong:
            raise BenchError(f"WRONG ANSWER: {wrong}")
        record["checked_against"] = "asofgpu"


# ------------------------------------------------------------------------------ report


def headline(records: dict[str, dict], goal: float | None = GOAL) -> dict | None:
    """asofgpu's median over the fastest peer's, where both finished, with the goal (None
    where the day has none: the goal is the one file's)."""
    peers = {s: r["median_s"] for s, r in records.items() if s != "asofgpu" and r["status"] == "ok"}
    if records["asofgpu"]["status"] != "ok" or not peers:
        return None
    fastest = min(peers, key=peers.get)
    ratio = records["asofgpu"]["median_s"] / peers[fastest]
    met = None if goal is None else ratio <= goal
    return {"ratio": ratio, "fastest_peer": fastest, "goal": goal, "met": met}


def _memory(n_bytes: float) -> str:
    if n_bytes >= 2**30:
        return f"{n_bytes / 2**30:.2f} GiB"
    return f"{n_bytes / 2**20:.0f} MiB" if n_bytes >= 2**20 else f"{n_bytes / 2**10:.0f} KiB"


def _row(record: dict, asofgpu_median: float | None) -> str:
    title = TITLES[record["system"]]
    if record["status"] != "ok":
        return f"| {title} | {record['status']} | – | – | – | – |"
    ratio = (
        "–"
        if record["system"] == "asofgpu" or asofgpu_median is None
        else f"{asofgpu_median / record['median_s']:.2f}x"
    )
    return (
        f"| {title} | {record['median_s']:.2f} | "
        f"{', '.join(f'{t:.2f}' for t in record['times_s'])} | "
        f"{_memory(record['peak_rss_mib'] * 2**20)} | {_memory(record['output_bytes'])} | "
        f"{ratio} |"
    )


def _command_text(argv: list[str], folders: dict[str, str]) -> str:
    """A command as one would type it, its folders shortened to names: {"$RUN": path}."""

    def word(w: str) -> str:
        w = shlex.quote(w)
        for name, folder in folders.items():
            w = w.replace(folder, name)
        return w

    if len(argv) > 2 and argv[1] == "-c":  # a peer: its code on lines of its own
        return (
            f"{word(argv[0])} -c CODE "
            + " ".join(word(w) for w in argv[3:])
            + f"\n# where CODE is:\n{argv[2]}"
        )
    return " ".join(word(w) for w in argv)


def _layout_text(report: dict) -> str:
    """What --left-files and --right-files change, in a sentence each; nothing for the one
    file."""
    s, data = report["settings"], report["data"]
    text = ""
    left, right = s.get("left_files", "one"), s.get("right_files", "one")
    one_file = s.get("one_file", False)
    if left == "by-symbol":
        into = "one file (`--one-file`)" if one_file else "a folder of as many files"
        text += (
            f" The trades are split by symbol into a folder of {data['trades_files']:,} "
            f"files (`split_by_symbol`: Zipf-sized, each in time order), as a per-instrument "
            f"feed gives them: asofgpu enriches the folder into {into}, "
            f"the peers read it as one glob and write one file."
        )
    if right == "by-symbol":
        text += (
            f" The quotes are split by symbol into a folder of {data['quotes_files']:,} files "
            f"(each in time order), as stores that keep a file a symbol hold them; every "
            f"system reads it whole (the peers as one glob)."
        )
    parts = [side for side, layout in (("trades", left), ("quotes", right)) if layout == "parts"]
    if parts:
        text += (
            f" The {' and the '.join(parts)} are written as pyarrow's `write_dataset` writes a "
            f"day kept in order (`split_into_parts`: {PARTS} files of equal rows, part-0 ... "
            f"part-{PARTS - 1}, so that part-10 sorts before part-2); the peers read each "
            f"folder as one glob, in that order, and polars sorts it by time first."
            + (
                " asofgpu enriches the trades' folder into "
                + ("one file (`--one-file`)." if one_file else "a folder of as many files.")
                if left == "parts"
                else ""
            )
        )
    hive = [side for side, layout in (("trades", left), ("quotes", right)) if layout == "hive"]
    if hive:
        files = " and ".join(f"{data[f'{side}_files']:,}" for side in hive)
        text += (
            f" The {' and the '.join(hive)} are partitioned by symbol as pyarrow's "
            f"`write_dataset` partitions a table (`split_into_hive`: {files} hive folders "
            f"symbol=S0000/ ..., the symbol in the folders' names only, each file in time "
            f"order and in the writer's small row groups); the peers read each as one glob "
            f"with hive partitioning."
            + (
                " asofgpu enriches the trades' folders into "
                + ("one file (`--one-file`)." if one_file else "as many folders.")
                if left == "hive"
                else ""
            )
        )
    return text


def _title(s: dict) -> str:
    said = {
        "by-symbol": "in a file a symbol",
        "parts": "in numbered parts",
        "hive": "in hive folders by symbol",
    }
    sides = [
        f"{side} {said[s[key]]}"
        for side, key in (("trades", "left_files"), ("quotes", "right_files"))
        if s.get(key, "one") != "one"
    ]
    return "# asofgpu enrich, end to end" + "".join(f", {side}" for side in sides)


def markdown(report: dict) -> str:
    s = report["settings"]
    q, t = s["size"]
    records = {r["system"]: r for r in report["results"]}
    ours = records["asofgpu"].get("median_s")
    lines = [
        _title(s),
        "",
        *heading(report),
        "",
        f"Each system enriches {t:,} trades with the prevailing quote of their symbol out of "
        f"{q:,} quotes (backward, exact matches allowed, by symbol): "
        f"`asofgpu.marketdata.day({label(q)}, {label(t)}, {SYMBOLS}, seed={SEED})` written "
        f"with `pyarrow.parquet.write_table`, parquet in, parquet out with the system's own "
        f"default compression.{_layout_text(report)} Wall time: the whole process, start to exit (Python start-up, "
        f"imports, reading, joining, writing), one process per run; {s['runs']} round(s), one "
        f"run of each system per round, the order rotated every round, after one untimed "
        f"warm-up run of asofgpu ({seconds_text(report['warmup_s'])}: numba's cache, and "
        f"asofgpu's bytecode, which pip writes for the peers when it installs them). Peak RSS: "
        f"the largest over the system's runs (`getrusage(RUSAGE_CHILDREN)`).",
        "",
        "| system | median wall s | runs (s) | peak RSS | output size | asofgpu / this |",
        "|---|---:|---|---:|---:|---:|",
        *(_row(records[x], ours) for x in s["systems"]),
        "",
    ]
    h = report["headline"]
    if h:
        goal = (
            ""
            if h["goal"] is None
            else f" · goal at most {h['goal']}x (issue 18, 10M × 10M): "
            f"{'met' if h['met'] else 'not met'}"
        )
        lines += [
            f"**asofgpu / fastest peer ({TITLES[h['fastest_peer']]}): {h['ratio']:.2f}x**{goal}.",
            "",
        ]
    checked = [TITLES[r["system"]] for r in report["results"] if r.get("checked_against")]
    lines += [
        f"Correctness: the output of {', '.join(checked) or 'no peer'} holds the same "
        f"({', '.join(KEY)}) rows as asofgpu's, compared as multisets.",
        "",
    ]
    if report["scale"]:
        lines += scale_markdown(report["scale"])
    lines += [
        "## Commands",
        "",
        f"`$DATA` is `{report['data']['folder']}`, where the inputs are; `$RUN` the "
        f"run's temporary folder, where the outputs go.",
        "",
        "```",
    ]
    folders = {"$RUN": report["run_folder"], "$DATA": report["data"]["folder"]}
    for system in s["systems"]:
        lines += [f"# {TITLES[system]}", _command_text(report["commands"][system], folders), ""]
    if report["scale"]:
        scale = report["scale"]
        lines += [
            f"# asofgpu enrich, the scale run ($DATA: {scale['data']})",
            _command_text(scale["command"], {"$RUN": scale["run_folder"], "$DATA": scale["data"]}),
        ]
    lines += ["```", ""]
    return "\n".join(lines)


def scale_markdown(scale: dict) -> list[str]:
    q, t = scale["size"]
    lines = [
        "## At scale: bounded memory",
        "",
        f"asofgpu enrich alone, once, on {q:,} quotes x {t:,} trades (written slice by "
        f"slice, time-sorted) with `--memory-limit {scale['memory_limit']}`.",
        "",
    ]
    if scale["status"] != "ok":
        return lines + [
            f"**{scale['status']}**"
            + (
                f" (exit {scale.get('rc')}): `{_last_line(scale.get('stderr', ''))}`"
                if scale["status"] == "failed"
                else ""
            ),
            "",
        ]
    under = "yes" if scale["under_limit"] else "**no**"
    return lines + [
        "| wall s | peak RSS | limit | under the limit | output size |",
        "|---:|---:|---:|---|---:|",
        f"| {scale['wall_s']:.1f} | {_memory(scale['peak_rss_bytes'])} | "
        f"{_memory(scale['memory_limit_bytes'])} | {under} | "
        f"{_memory(scale['output_bytes'])} |",
        "",
    ]


def _write_text(path: Path, text: str) -> None:
    atomic_write(path, lambda tmp: tmp.write_text(text))


# ------------------------------------------------------------------------------ main


def peers_section(args, say) -> dict:
    """The timed rounds on the day of ``--size``, checked: a part of the report."""
    quotes, trades = day_files(args.data, *args.size, say)
    left = laid_out(trades, args.left_files, say)
    right = laid_out(quotes, args.right_files, say)
    with tempfile.TemporaryDirectory(prefix="run-", dir=args.data) as folder:
        # asofgpu enriches a folder into a folder (or one file: --one-file), a file a file;
        # the peers write one file.
        outs = {s: Path(folder) / f"{s}.parquet" for s in SYSTEMS}
        if left.is_dir() and not args.one_file:
            outs["asofgpu"] = Path(folder) / "asofgpu"
        layouts = (args.left_files, args.right_files)
        argv = commands(args.enrich_cmd, left, right, outs, layouts=layouts, one_file=args.one_file)
        writing_bytecode = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        warmup = measure(argv["asofgpu"], args.timeout, writing_bytecode)
        if warmup["status"] != "ok":
            raise BenchError(
                f"asofgpu enrich's warm-up run {warmup['status']}: {_last_line(warmup['stderr'])}"
            )
        say(f"warm-up: asofgpu {warmup['wall_s']:.1f} s")
        records = rounds(argv, outs, args.runs, args.timeout, say)
        if records["asofgpu"]["status"] != "ok":
            raise BenchError(
                f"asofgpu enrich {records['asofgpu']['status']}: "
                f"{_last_line(records['asofgpu'].get('stderr', ''))}"
            )
        check(outs, records)
    return {
        "data": {
            "folder": str(quotes.parent),
            "quotes_bytes": size_on_disk(right),
            "trades_bytes": size_on_disk(left),
            "trades_files": files_of(left),
            "quotes_files": files_of(right),
        },
        "warmup_s": warmup["wall_s"],
        "commands": argv,
        "run_folder": folder,
        "results": [records[s] for s in SYSTEMS],
        "headline": headline(records, goal_of(args)),
    }


def scale_section(args, say) -> dict:
    """One run of asofgpu enrich with --memory-limit on the scale day."""
    quotes, trades = scale_files(args.data, *args.scale, say)
    with tempfile.TemporaryDirectory(prefix="scale-", dir=args.data) as folder:
        out = Path(folder) / "asofgpu.parquet"
        argv = commands(args.enrich_cmd, trades, quotes, {"asofgpu": out}, ["asofgpu"])
        argv = argv["asofgpu"] + ["--memory-limit", args.scale_memory_limit]
        run = measure(argv, args.timeout)
        entry = {
            "size": list(args.scale),
            "memory_limit": args.scale_memory_limit,
            "memory_limit_bytes": args.limit_bytes,
            "command": argv,
            "run_folder": folder,
            "data": str(quotes.parent),
            **run,
        }
        if run["status"] == "ok":
            entry.pop("stderr")
            entry["under_limit"] = run["peak_rss_bytes"] <= args.limit_bytes
            entry["output_bytes"] = out.stat().st_size
            say(
                f"scale {label(args.scale[0])}x{label(args.scale[1])}: {run['wall_s']:.1f} s, "
                f"peak {_memory(run['peak_rss_bytes'])}, limit {args.scale_memory_limit}: "
                f"{'under' if entry['under_limit'] else 'OVER'}"
            )
        else:
            say(f"scale run {run['status']}: {_last_line(run['stderr'])}")
    return entry


def report_stem(left_files: str, right_files: str = "one", one_file: bool = False) -> str:
    """enrich (the day's one trades file and one quotes file), enrich-by-symbol (the trades
    a file a symbol), enrich-quotes-by-symbol, or both, and -one-file where asofgpu writes
    a folder of trades into one file: the layouts' reports can share a folder."""
    return (
        "enrich"
        + ("" if left_files == "one" else f"-{left_files}")
        + ("" if right_files == "one" else f"-quotes-{right_files}")
        + ("-one-file" if one_file and left_files != "one" else "")
    )


def goal_of(args) -> float | None:
    """The goal, for the day's one file of each side; none for other layouts."""
    return GOAL if args.left_files == args.right_files == "one" else None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = options(argv)

    def say(text: str) -> None:  # on stderr: stdout is the table
        progress(text, sys.stderr)

    began = time.perf_counter()
    load_start = os.getloadavg()[0]
    date = utc_minute()
    args.data.mkdir(parents=True, exist_ok=True)
    try:
        peers = peers_section(args, say)
    except BenchError as error:
        print(f"enrich_e2e: error: {error}\nNo results were written.", file=sys.stderr)
        return 1
    scale = scale_section(args, say) if args.scale else None
    report = {
        "date": date,
        "machine": machine(),
        "versions": versions(("asofgpu", "polars", "duckdb", "pyarrow", "numpy", "numba")),
        "commit": commit(),
        "load_average": [load_start, os.getloadavg()[0]],
        "command": ["bench/enrich_e2e.py", *argv],
        "settings": {
            "size": list(args.size),
            "runs": args.runs,
            "symbols": SYMBOLS,
            "seed": SEED,
            "left_files": args.left_files,
            "right_files": args.right_files,
            "one_file": args.one_file,
            "systems": list(SYSTEMS),
            "goal": goal_of(args),
            "timeout_s": args.timeout,
        },
        **peers,
        "scale": scale,
        "elapsed_s": time.perf_counter() - began,
    }
    text = markdown(report)
    stem = report_stem(args.left_files, args.right_files, args.one_file)
    _write_text(args.out / f"{stem}.json", json.dumps(report, indent=1) + "\n")
    _write_text(args.out / f"{stem}.md", text)
    print(text)
    say(f"wrote {stem}.md and {stem}.json to {args.out} in {time.perf_counter() - began:.0f} s")
    if scale and scale["status"] != "ok":
        print(
            f"enrich_e2e: error: the scale run {scale['status']} (see {stem}.md)", file=sys.stderr
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
