"""make bench, the front ends: each drop-in against the call it replaces, on frames as pandas
and polars read them from parquet.

The data is the end-to-end day (``bench/enrich_e2e.py``'s cached parquet files: 10M trades x
10M quotes, 1,000 Zipf symbols, by default), read once per case the way a user would:
``pandas.read_parquet`` (numpy dtypes, and ``dtype_backend="pyarrow"``), ``polars.read_parquet``
(eager, and ``.lazy()``), ``pyarrow.parquet.read_table`` (chunked, as read). Each case runs in
a process of its own: one untimed call of each side (numba loads its kernels there), then
``--runs`` rounds, the two sides alternating which goes first, and the medians compared. In
a round each side is called twice in a row and the second call timed, as in a process that
makes that call again and again: alternating single calls would time each side's arrays
faulted in again after the other's (``asofgpu.host_pool`` keeps the last ones written). The
two results must be equal (pandas' ``assert_frame_equal``, polars' ``equals``), or the script
fails and writes nothing.

Cases (the goals are issue 19's):

- ``asofgpu.pandas.merge_asof`` / ``pandas.merge_asof``, numpy dtypes and pyarrow dtypes (0.5x);
- ``asofgpu.polars.join_asof`` / ``DataFrame.join_asof`` and ``LazyFrame.join_asof().collect()``
  (0.5x);
- ``asofgpu.join_asof`` on polars frames, and on pandas frames, / the same call on the pyarrow
  tables (1.2x);
- pyarrow tables as ``read_table`` gives them (in chunks) / their ``combine_chunks()`` copies
  (1.1x): ``asofgpu.join_asof``, and the prepared probe + gather of a million trades (the
  rows from 4.5M on, in the reader's chunks) with the quotes' ``AsofJoin`` built beforehand.

    python bench/frontends.py                 # 10M x 10M, 5 rounds
    python bench/frontends.py --quick         # 200K x 200K, 1 round: checks the harness

Results: ``--out`` (bench/results) frontends.md and frontends.json, each written whole or not
at all.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import common
import enrich_e2e

# What the report names beside the machine: the originals' versions move their times (a
# fresh environment took polars 2.2 the day after the 2.1 runs).
VERSIONS = ("asofgpu", "pandas", "polars", "pyarrow", "numpy", "numba")

CASES = {  # name: (what is measured, what it is compared with, the goal)
    "pandas": ("asofgpu.pandas.merge_asof", "pandas.merge_asof", 0.5),
    "pandas-pyarrow": ("asofgpu.pandas.merge_asof", "pandas.merge_asof", 0.5),
    "polars-eager": ("asofgpu.polars.join_asof", "DataFrame.join_asof", 0.5),
    "polars-lazy": (
        "asofgpu.polars.join_asof(...).collect()",
        "LazyFrame.join_asof(...).collect()",
        0.5,
    ),
    "join_asof-polars": (
        "asofgpu.join_asof on polars frames",
        "asofgpu.join_asof on pyarrow tables",
        1.2,
    ),
    "join_asof-pandas": (
        "asofgpu.join_asof on pandas frames",
        "asofgpu.join_asof on pyarrow tables",
        1.2,
    ),
    "chunked-one-shot": (
        "asofgpu.join_asof on tables as read",
        "asofgpu.join_asof on their combined copies",
        1.1,
    ),
    "chunked-prepared": (
        "probe + gather of 1M trades, tables as read",
        "the same on combined copies",
        1.1,
    ),
}
PROBE_FROM, PROBE_ROWS = 4_500_000, 1_000_000  # the chunked-prepared batch


def _calls(case: str, trades: str, quotes: str):
    """(ours, theirs, equal): the two calls of a case on the files, and the check that their
    results are the same."""
    import warnings

    warnings.simplefilter("ignore")  # polars: sortedness cannot be checked with by groups
    keys = {"on": "time", "by": "symbol"}
    if case.startswith("pandas"):
        import pandas as pd

        import asofgpu.pandas

        kind = {"dtype_backend": "pyarrow"} if case == "pandas-pyarrow" else {}
        left, right = pd.read_parquet(trades, **kind), pd.read_parquet(quotes, **kind)
        return (
            lambda: asofgpu.pandas.merge_asof(left, right, device="cpu", **keys),
            lambda: pd.merge_asof(left, right, **keys),
            lambda a, b: pd.testing.assert_frame_equal(a, b, check_exact=True) is None,
        )
    if case.startswith("polars"):
        import polars as pl

        import asofgpu.polars

        left, right = pl.read_parquet(trades), pl.read_parquet(quotes)
        if case == "polars-lazy":
            left, right = left.lazy(), right.lazy()
            return (
                lambda: asofgpu.polars.join_asof(left, right, device="cpu", **keys).collect(),
                lambda: left.join_asof(right, **keys).collect(),
                lambda a, b: a.equals(b),
            )
        return (
            lambda: asofgpu.polars.join_asof(left, right, device="cpu", **keys),
            lambda: left.join_asof(right, **keys),
            lambda a, b: a.equals(b),
        )
    import pyarrow.parquet as pq

    import asofgpu as ag

    tables = pq.read_table(trades), pq.read_table(quotes)
    if case.startswith("chunked"):
        return _chunked_calls(case, *tables)
    if case == "join_asof-polars":
        import polars as pl

        frames = pl.read_parquet(trades), pl.read_parquet(quotes)
    else:
        import pandas as pd

        frames = pd.read_parquet(trades), pd.read_parquet(quotes)
    # Values must agree; the types of strings may not (polars' views, pandas' strings).
    return (
        lambda: ag.join_asof(*frames, device="cpu", **keys),
        lambda: ag.join_asof(*tables, device="cpu", **keys),
        lambda a, b: a.cast(b.schema).equals(b),
    )


def _chunked_calls(case: str, trades, quotes):
    """``_calls`` of the chunked cases: tables as read against their combined copies."""
    import asofgpu as ag

    copies = trades.combine_chunks(), quotes.combine_chunks()
    if case == "chunked-one-shot":
        return (
            lambda: ag.join_asof(trades, quotes, on="time", by="symbol", device="cpu"),
            lambda: ag.join_asof(*copies, on="time", by="symbol", device="cpu"),
            lambda a, b: a.equals(b),
        )

    def probe(trades, quotes):
        prepared = ag.AsofJoin(quotes["time"], quotes["symbol"], device="cpu")
        batch = trades.slice(min(PROBE_FROM, trades.num_rows // 2), PROBE_ROWS)
        payload = quotes.drop_columns(["time", "symbol"])
        return lambda: ag.gather(payload, prepared.join(batch["time"], batch["symbol"]))

    return probe(trades, quotes), probe(*copies), lambda a, b: a.equals(b)


def worker(case: str, trades: str, quotes: str, runs: int) -> dict:
    """One case in this process: a warm-up call of each side, then ``runs`` alternating
    rounds of two calls a side, the second timed; the first results are compared."""
    ours, theirs, equal = _calls(case, trades, quotes)
    if not equal(ours(), theirs()):
        raise common.BenchError(f"{case}: asofgpu's result differs from the original's")
    return common.alternating_rounds(ours, theirs, runs)


def options(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--size",
        type=common.parse_size,
        default=(10**7, 10**7),
        help="QUOTESxTRADES (default 10Mx10M)",
    )
    p.add_argument(
        "--runs",
        type=enrich_e2e.positive_int,
        default=5,
        help="timed rounds of each case (default 5)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="--size 200Kx200K --runs 1 unless given: checks the harness",
    )
    p.add_argument(
        "--cases", default=",".join(CASES), help=f"comma-separated, of: {', '.join(CASES)}"
    )
    p.add_argument("--data", type=Path, default=common.ROOT / "bench" / "data" / "e2e")
    p.add_argument("--out", type=Path, default=common.ROOT / "bench" / "results")
    p.add_argument(
        "--worker", nargs=4, metavar=("CASE", "TRADES", "QUOTES", "RUNS"), help=argparse.SUPPRESS
    )
    args = p.parse_args(argv)
    given = sys.argv[1:] if argv is None else argv
    if args.quick:
        if "--size" not in given:
            args.size = (200_000, 200_000)
        if "--runs" not in given:
            args.runs = 1
    args.cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in args.cases if c not in CASES]
    if unknown:
        p.error(f"--cases: unknown {', '.join(unknown)}; the cases are {', '.join(CASES)}")
    return args


def markdown(report: dict) -> str:
    lines = [
        "# The front ends against what they replace",
        "",
        *common.heading(report),
        "",
        f"{report['quotes']:,} quotes x {report['trades']:,} trades "
        f"(`bench/enrich_e2e.py`'s day), backward by symbol, frames as read from "
        f"parquet; medians of {report['runs']} alternating rounds in one process a case "
        f"(each side called twice a round, the second timed), after a warm-up call of "
        f"each side. `python bench/frontends.py`.",
        "",
        "| case | asofgpu | median ms | the original | median ms | ratio | goal |",
        "|---|---|---:|---|---:|---:|---|",
    ]
    for name, row in report["cases"].items():
        ok = "met" if row["ratio"] <= row["goal"] else "not met"
        lines.append(
            f"| {name} | {row['ours_call']} | {1e3 * row['ours']:,.2f} | "
            f"{row['theirs_call']} | {1e3 * row['theirs']:,.2f} | {row['ratio']:.2f}x | "
            f"at most {row['goal']}x: {ok} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = options(argv)
    if args.worker:
        case, trades, quotes, runs = args.worker
        print(json.dumps(worker(case, trades, quotes, int(runs))))
        return 0
    say = common.progress
    quotes_rows, trades_rows = args.size
    quotes, trades = enrich_e2e.day_files(args.data, quotes_rows, trades_rows, say)
    report = {
        "date": common.utc_minute(),
        "machine": common.machine(),
        "versions": common.versions(VERSIONS),
        "commit": common.commit(),
        "load_average": [os.getloadavg()[0], None],
        "runs": args.runs,
        "quotes": quotes_rows,
        "trades": trades_rows,
        "cases": {},
    }
    for case in args.cases:
        say(f"{case} ...")
        done = subprocess.run(
            [sys.executable, __file__, "--worker", case, str(trades), str(quotes), str(args.runs)],
            capture_output=True,
            text=True,
        )
        if done.returncode:
            raise common.BenchError(f"{case} failed:\n{done.stderr[-2000:]}")
        times = json.loads(done.stdout.strip().splitlines()[-1])
        ours_call, theirs_call, goal = CASES[case]
        ours, theirs = statistics.median(times["ours"]), statistics.median(times["theirs"])
        report["cases"][case] = {
            "ours_call": ours_call,
            "theirs_call": theirs_call,
            "goal": goal,
            "ours": ours,
            "theirs": theirs,
            "ratio": ours / theirs,
            "runs": times,
        }
        say(f"{case}: {1e3 * ours:,.2f} ms against {1e3 * theirs:,.2f} ms ({ours / theirs:.2f}x)")
    report["load_average"][1] = os.getloadavg()[0]
    common.write_report(args.out, "frontends", report, markdown(report))
    say(f"wrote frontends.md and frontends.json to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
