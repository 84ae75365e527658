"""make bench, the splice join: ``asofgpu.splice_join`` against the best peer script for the
same output (issue 20: at most 0.3x its time).

The data is the end-to-end day (``bench/enrich_e2e.py``'s cached parquet files: 10M trades x
10M quotes, 1,000 Zipf symbols, time-sorted). Each system runs in a process of its own and
reads the files once, untimed, the way its users hold data: asofgpu pyarrow tables as
``read_table`` gives them (in chunks), polars DataFrames, DuckDB tables loaded into its own
storage. Then one untimed call, and ``--runs`` timed calls, each producing the whole result in
memory (a pyarrow Table, a polars DataFrame, an Arrow table fetched from DuckDB):

- asofgpu: ``asofgpu.splice_join(trades, quotes, on="time", by="symbol")``;
- polars (lazy, which runs the two joins at once): a backward ``join_asof`` each way, each
  side's rows tagged with their key, side and row number, ``concat(how="diagonal")`` and a
  sort by those tags;
- DuckDB: the two ``ASOF LEFT JOIN``s under ``UNION ALL`` and ``ORDER BY`` the same tags.

The outputs must agree: each worker reports its row count, every column's nulls and an
order-sensitive checksum of every time and number column (strings are not summed), and the
script fails, writing nothing, if a peer's differ from asofgpu's.

    python bench/splice.py              # 10M x 10M, 3 runs each
    python bench/splice.py --quick      # 200K x 200K, 1 run: checks the harness

Results: ``--out`` (bench/results) splice.md and splice.json, each written whole or not at all.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import common
import enrich_e2e

SYSTEMS = {  # name: what runs
    "asofgpu": "asofgpu.splice_join on pyarrow tables as read",
    "polars": "two LazyFrame.join_asof, concat, sort, collect",
    "duckdb": "two ASOF LEFT JOIN, UNION ALL, ORDER BY",
}
GOAL = 0.3  # issue 20: at most 0.3x the faster peer's time
COLUMNS = [  # the splice's output: the trades' columns, then the quotes', suffixed on clashes
    "time",
    "symbol",
    "price",
    "size",
    "time_right",
    "symbol_right",
    "bid",
    "ask",
    "bid_size",
    "ask_size",
]


def _asofgpu(trades: str, quotes: str):
    import pyarrow.parquet as pq

    import asofgpu as ag

    left, right = pq.read_table(trades), pq.read_table(quotes)
    return lambda: ag.splice_join(left, right, on="time", by="symbol", device="cpu")


def _polars(trades: str, quotes: str):
    import polars as pl

    left = pl.read_parquet(trades).lazy()
    right = pl.read_parquet(quotes).rename({"time": "time_right", "symbol": "symbol_right"}).lazy()
    tags = ["__key", "__side", "__row"]

    def tagged(frame, key: str, side: int):
        return frame.with_row_index("__row").with_columns(
            pl.col(key).alias("__key"), pl.lit(side, pl.Int8).alias("__side")
        )

    # polars drops the right side's by column: join on a copy, keep the original.
    left_driven = tagged(left, "time", 0).join_asof(
        right.with_columns(pl.col("symbol_right").alias("__by")),
        left_on="time",
        right_on="time_right",
        by_left="symbol",
        by_right="__by",
        **_no_sortedness_check(pl),
    )
    right_driven = tagged(right, "time_right", 1).join_asof(
        left.with_columns(pl.col("symbol").alias("__by")),
        left_on="time_right",
        right_on="time",
        by_left="symbol_right",
        by_right="__by",
        **_no_sortedness_check(pl),
    )
    query = (
        pl.concat([left_driven, right_driven], how="diagonal")
        .sort(tags, nulls_last=True)
        .select(COLUMNS)
    )
    return query.collect


def _no_sortedness_check(pl) -> dict:
    """The files are time-sorted; with ``by`` polars cannot check that and would only warn."""
    import inspect

    takes = "check_sortedness" in inspect.signature(pl.LazyFrame.join_asof).parameters
    return {"check_sortedness": False} if takes else {}


def _duckdb(trades: str, quotes: str):
    import duckdb

    con = duckdb.connect()
    for name, path in (("t", trades), ("q", quotes)):
        con.execute(
            f"CREATE TABLE {name} AS SELECT *, row_number() OVER () AS rn FROM read_parquet(?)",
            [path],
        )
    query = """
        SELECT time, symbol, price, size, time_right, symbol_right, bid, ask, bid_size, ask_size
        FROM (
            SELECT t.time, t.symbol, t.price, t.size, q.time AS time_right,
                   q.symbol AS symbol_right, q.bid, q.ask, q.bid_size, q.ask_size,
                   t.time AS k, 0 AS side, t.rn AS rn
            FROM t ASOF LEFT JOIN q ON t.symbol = q.symbol AND t.time >= q.time
            UNION ALL
            SELECT t.time, t.symbol, t.price, t.size, q.time, q.symbol, q.bid, q.ask,
                   q.bid_size, q.ask_size, q.time AS k, 1 AS side, q.rn AS rn
            FROM q ASOF LEFT JOIN t ON q.symbol = t.symbol AND q.time >= t.time
        )
        ORDER BY k NULLS LAST, side, rn
    """

    def run():
        result = con.execute(query)
        # DuckDB 2 names it to_arrow_table; 1.x fetch_arrow_table.
        fetch = getattr(result, "to_arrow_table", None) or result.fetch_arrow_table
        return fetch()

    return run


def fingerprint(result) -> dict:
    """Row count, each column's nulls, and an order-sensitive checksum of each time and
    number column (values as int64 bits, weighted by position), from any Arrow-exportable
    result."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    table = pa.table(result) if not isinstance(result, pa.Table) else result
    out = {"rows": table.num_rows, "columns": table.column_names, "nulls": {}, "sums": {}}
    weights = (np.arange(table.num_rows, dtype=np.uint64) % np.uint64(65_521)) + np.uint64(1)
    for name in table.column_names:
        column = table[name]
        out["nulls"][name] = column.null_count
        if pa.types.is_timestamp(column.type):
            column = column.cast(pa.timestamp("ns", column.type.tz)).cast(pa.int64())
        elif pa.types.is_integer(column.type):
            column = column.cast(pa.int64())
        elif pa.types.is_floating(column.type):
            column = column.cast(pa.float64())
        else:
            continue
        values = pc.fill_null(column, 0).combine_chunks().to_numpy(zero_copy_only=False)
        bits = values.view(np.uint64)
        out["sums"][name] = int((bits * weights).sum(dtype=np.uint64))
    return out


CALLS = {"asofgpu": _asofgpu, "polars": _polars, "duckdb": _duckdb}


def worker(system: str, trades: str, quotes: str, runs: int) -> dict:
    """One system in this process: an untimed call, its result's fingerprint, ``runs`` timed
    calls."""
    call = CALLS[system](trades, quotes)
    print_ = fingerprint(call())
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return {"times": times, "fingerprint": print_}


def options(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--size", type=common.parse_size, default=(10**7, 10**7), help="QUOTESxTRADES")
    p.add_argument("--runs", type=enrich_e2e.positive_int, default=3, help="timed calls (3)")
    p.add_argument("--quick", action="store_true", help="--size 200Kx200K --runs 1 unless given")
    p.add_argument("--systems", default=",".join(SYSTEMS), help=f"of: {', '.join(SYSTEMS)}")
    p.add_argument("--data", type=Path, default=common.ROOT / "bench" / "data" / "e2e")
    p.add_argument("--out", type=Path, default=common.ROOT / "bench" / "results")
    p.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    given = sys.argv[1:] if argv is None else argv
    if args.quick:
        if "--size" not in given:
            args.size = (200_000, 200_000)
        if "--runs" not in given:
            args.runs = 1
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [s for s in args.systems if s not in SYSTEMS]
    if unknown or "asofgpu" not in args.systems:
        p.error(f"--systems: asofgpu and any of {', '.join(SYSTEMS)}; got {args.systems}")
    return args


def markdown(report: dict) -> str:
    lines = [
        "# The splice join against the peers' scripts",
        "",
        f"{report['when']} · {report['machine']['cpu']}, {report['machine']['cores']} "
        f"cores · commit {report['commit']}",
        "",
        f"{report['quotes']:,} quotes x {report['trades']:,} trades (`bench/enrich_e2e.py`'s "
        f"day), by symbol, {report['rows']:,} output rows held in memory; data read "
        f"beforehand, untimed; medians of {report['runs']} calls in one process a system, "
        f"after an untimed call. Outputs checked equal (rows, nulls, order-sensitive "
        f"checksums). `python bench/splice.py`.",
        "",
        "| system | what runs | median s | asofgpu's ratio to it |",
        "|---|---|---:|---:|",
    ]
    ours = report["systems"]["asofgpu"]["median"]
    for name, row in report["systems"].items():
        ratio = "" if name == "asofgpu" else f"{ours / row['median']:.2f}x"
        lines.append(f"| {name} | {SYSTEMS[name]} | {row['median']:.3f} | {ratio} |")
    best = report.get("best_peer")
    if best:
        ratio = ours / report["systems"][best]["median"]
        ok = "met" if ratio <= GOAL else "not met"
        lines += [
            "",
            f"Against the faster peer ({best}): {ratio:.2f}x; goal at most {GOAL}x: {ok}.",
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = options(argv)
    if args.worker:
        system, trades, quotes, runs = args.worker
        print(json.dumps(worker(system, trades, quotes, int(runs))))
        return 0
    say = common.progress
    quotes_rows, trades_rows = args.size
    quotes, trades = enrich_e2e.day_files(args.data, quotes_rows, trades_rows, say)
    report = {
        "when": common.utc_minute(),
        "machine": common.machine(),
        "commit": common.commit(),
        "versions": common.versions(("pyarrow", "numba", "polars", "duckdb")),
        "runs": args.runs,
        "quotes": quotes_rows,
        "trades": trades_rows,
        "systems": {},
    }
    prints = {}
    for system in args.systems:
        say(f"{system} ...")
        done = subprocess.run(
            [
                sys.executable,
                __file__,
                "--worker",
                system,
                str(trades),
                str(quotes),
                str(args.runs),
            ],
            capture_output=True,
            text=True,
        )
        if done.returncode:
            raise common.BenchError(f"{system} failed:\n{done.stderr[-2000:]}")
        result = json.loads(done.stdout.strip().splitlines()[-1])
        prints[system] = result["fingerprint"]
        median = statistics.median(result["times"])
        report["systems"][system] = {"median": median, "times": result["times"]}
        say(f"{system}: {median:.3f} s")
    reference = prints["asofgpu"]
    for system, fp in prints.items():
        if fp != reference:
            raise common.BenchError(
                f"{system}'s output differs from asofgpu's: {json.dumps(fp)} against "
                f"{json.dumps(reference)}"
            )
    report["rows"] = reference["rows"]
    peers = [s for s in report["systems"] if s != "asofgpu"]
    if peers:
        report["best_peer"] = min(peers, key=lambda s: report["systems"][s]["median"])
    common.write_report(args.out, "splice", report, markdown(report))
    say(f"wrote splice.md and splice.json to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
