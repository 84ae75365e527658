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
    return enrich_e2e.day_bench(
        argv,
        __doc__,
        "tolerance",
        size=(10**7, 10**6),
        runs=5,
        runs_help="timed probes (5)",
        quick_size=(200_000, 20_000),
        packages=("pyarrow", "numba", "polars"),
        measure=measure,
        markdown=markdown,
    )


if __name__ == "__main__":
    sys.exit(main())
