"""make bench, tolerances per row and by the calendar: a prepared probe of time-sorted trades
into the day's quotes with one fixed tolerance, with a column of one per trade, and with
``"1mo"`` (issue 22: at most 1.3x the fixed probe's time on the CPU).

The quotes are prepared once (``AsofJoin`` by symbol); each probe is ``join(trades["time"],
trades["symbol"], strategy=..., tolerance=...)``, timed alone, medians of ``--runs`` after an
untimed call, in this one process, on the CPU. The three maps are checked: the column of
tolerances holds 1 h for every trade, so its map must equal the fixed 1 h probe's.

    python bench/tolerance.py            # 10M quotes x 1M trades, 5 runs
    python bench/tolerance.py --quick    # 200K x 20K, 1 run: checks the harness

Results: ``--out`` (bench/results) tolerance.md and tolerance.json.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import time
from pathlib import Path

import common
import enrich_e2e

GOAL = 1.3
HOUR = datetime.timedelta(hours=1)


def measure(quotes_path: Path, trades_path: Path, runs: int) -> dict:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    import asofgpu as ag

    quotes = pq.read_table(quotes_path, columns=["time", "symbol"])
    trades = pq.read_table(trades_path, columns=["time", "symbol"])
    prepared = ag.AsofJoin(quotes["time"], quotes["symbol"], device="cpu")
    hours = pa.array(np.full(trades.num_rows, 3_600 * 10**9), pa.duration("ns"))
    tolerances = {"fixed 1 h": HOUR, "a column (1 h each)": hours, '"1mo"': "1mo"}
    out = {}
    for strategy in ("backward", "nearest"):
        maps = {}
        for name, tolerance in tolerances.items():

            def probe(tolerance=tolerance):
                return prepared.join(
                    trades["time"], trades["symbol"], strategy=strategy, tolerance=tolerance
                )

            maps[name] = probe()
            times = []
            for _ in range(runs):
                start = time.perf_counter()
                probe()
                times.append(time.perf_counter() - start)
            out[f"{strategy}, {name}"] = {"median": statistics.median(times), "times": times}
        if not np.array_equal(maps["fixed 1 h"], maps["a column (1 h each)"]):
            raise common.BenchError(f"{strategy}: the column of 1 h differs from the fixed 1 h")
    return out


def markdown(report: dict) -> str:
    lines = [
        "# Tolerances per row and by the calendar",
        "",
        f"{report['when']} · {report['machine']['cpu']}, {report['machine']['cores']} cores · "
        f"commit {report['commit']}",
        "",
        f"{report['quotes']:,} quotes prepared by symbol, probed by {report['trades']:,} "
        f"time-sorted trades on the CPU; medians of {report['runs']} probes after an untimed "
        f"one. `python bench/tolerance.py`.",
        "",
        "| probe | median ms | to the fixed one | goal |",
        "|---|---:|---:|---|",
    ]
    for case, row in report["cases"].items():
        strategy = case.split(",")[0]
        fixed = report["cases"][f"{strategy}, fixed 1 h"]["median"]
        ratio = row["median"] / fixed
        goal = "" if "fixed" in case else ("met" if ratio <= GOAL else "not met")
        goal = f"at most {GOAL}x: {goal}" if goal else ""
        lines.append(f"| {case} | {1e3 * row['median']:.1f} | {ratio:.2f}x | {goal} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=common.parse_size, default=(10**7, 10**6), help="QUOTESxTRADES")
    p.add_argument("--runs", type=enrich_e2e.positive_int, default=5, help="timed probes (5)")
    p.add_argument("--quick", action="store_true", help="--size 200Kx20K --runs 1 unless given")
    p.add_argument("--data", type=Path, default=common.ROOT / "bench" / "data" / "e2e")
    p.add_argument("--out", type=Path, default=common.ROOT / "bench" / "results")
    args = p.parse_args(argv)
    given = sys.argv[1:] if argv is None else argv
    if args.quick:
        args.size = args.size if "--size" in given else (200_000, 20_000)
        args.runs = args.runs if "--runs" in given else 1
    quotes_rows, trades_rows = args.size
    quotes, trades = enrich_e2e.day_files(args.data, quotes_rows, trades_rows, common.progress)
    report = {
        "when": common.utc_minute(),
        "machine": common.machine(),
        "commit": common.commit(),
        "versions": common.versions(("pyarrow", "numba", "polars")),
        "runs": args.runs,
        "quotes": quotes_rows,
        "trades": trades_rows,
        "cases": measure(quotes, trades, args.runs),
    }
    common.write_report(args.out, "tolerance", report, markdown(report))
    common.progress(f"wrote tolerance.md and tolerance.json to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
