"""make bench, every strategy through the drop-ins: ``asofgpu.pandas.merge_asof`` against
``pandas.merge_asof`` and ``asofgpu.polars.join_asof`` against polars' ``DataFrame.join_asof``,
backward, forward and nearest, by symbol and without ``by`` (one instrument's tape), on
time-sorted frames as pandas and polars read the day's parquet files.

Each case runs in this one process: one untimed call of each side, then ``--runs`` rounds, the
two sides alternating which goes first, each side called twice a round and the second call
timed (``bench/frontends.py``'s rule); the medians are compared. The two results must be
equal (pandas' ``assert_frame_equal``, polars' ``equals``), or the script fails and writes
nothing. The quotes' payload is their bid; without ``by`` the symbol columns are dropped.

    python bench/strategies.py                # 1M quotes x 1M trades, 7 rounds
    python bench/strategies.py --quick        # 20K x 20K, 1 round: checks the harness

Results: ``--out`` (bench/results) strategies.md and strategies.json.
"""

from __future__ import annotations

import statistics
import sys
import warnings
from pathlib import Path

import common
import enrich_e2e

STRATEGIES = ("backward", "forward", "nearest")


def _race(ours, theirs, runs: int) -> tuple[float, float]:
    """Medians of ``runs`` alternating rounds (``common.alternating_rounds``), after an
    untimed call of each."""
    ours()
    theirs()
    times = common.alternating_rounds(ours, theirs, runs)
    return statistics.median(times["ours"]), statistics.median(times["theirs"])


def measure(quotes_path: Path, trades_path: Path, runs: int) -> list[dict]:
    import pandas as pd
    import polars as pl

    import asofgpu.pandas as apd
    import asofgpu.polars as apl

    # polars says, at every call with by, that it cannot check the keys' order: both sides
    # are handed the same sorted frames.
    warnings.filterwarnings("ignore", message="Sortedness of columns cannot be checked")
    cases = []
    for by in ("symbol", None):
        keep = ["time", "symbol"] if by else ["time"]
        quotes = pd.read_parquet(quotes_path, columns=[*keep, "bid"])
        trades = pd.read_parquet(trades_path, columns=[*keep, "price"])
        pl_quotes, pl_trades = pl.from_pandas(quotes), pl.from_pandas(trades)
        for strategy in STRATEGIES:
            pandas_args = {"on": "time", "by": by, "direction": strategy}
            polars_args = {"on": "time", "by": by, "strategy": strategy}
            pd.testing.assert_frame_equal(
                apd.merge_asof(trades, quotes, **pandas_args),
                pd.merge_asof(trades, quotes, **pandas_args),
            )
            if not apl.join_asof(pl_trades, pl_quotes, **polars_args).equals(
                pl_trades.join_asof(pl_quotes, **polars_args)
            ):
                raise common.BenchError(f"polars, {strategy}, by {by}: the results differ")
            for peer, ours, theirs in (
                (
                    "pandas",
                    lambda: apd.merge_asof(trades, quotes, **pandas_args),
                    lambda: pd.merge_asof(trades, quotes, **pandas_args),
                ),
                (
                    "polars",
                    lambda: apl.join_asof(pl_trades, pl_quotes, **polars_args),
                    lambda: pl_trades.join_asof(pl_quotes, **polars_args),
                ),
            ):
                mine, theirs_s = _race(ours, theirs, runs)
                cases.append(
                    {"peer": peer, "strategy": strategy, "by": by, "ours": mine, "theirs": theirs_s}
                )
                common.progress(f"{peer} {strategy} by {by}: {mine / theirs_s:.2f}x")
    return cases


def markdown(report: dict) -> str:
    lines = [
        "# Every strategy through the drop-ins",
        "",
        f"{report['when']} · {report['machine']['cpu']}, {report['machine']['cores']} cores · "
        f"commit {report['commit']}",
        "",
        f"{report['quotes']:,} quotes x {report['trades']:,} trades (the day's files, "
        f"time-sorted), frames as pandas and polars read them; medians of {report['runs']} "
        f"alternating rounds (each side called twice a round, the second timed). "
        f"`python bench/strategies.py`.",
        "",
        "| drop-in | strategy | by | asofgpu ms | the original ms | ratio |",
        "|---|---|---|---:|---:|---:|",
    ]
    for c in report["cases"]:
        lines.append(
            f"| {c['peer']} | {c['strategy']} | {c['by'] or '(none)'} | {1e3 * c['ours']:.1f} "
            f"| {1e3 * c['theirs']:.1f} | {c['ours'] / c['theirs']:.2f}x |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    return enrich_e2e.day_bench(
        argv,
        __doc__,
        "strategies",
        size=(10**6, 10**6),
        runs=7,
        runs_help="rounds (7)",
        quick_size=(20_000, 20_000),
        packages=("pandas", "polars", "pyarrow", "numba"),
        measure=measure,
        markdown=markdown,
    )


if __name__ == "__main__":
    sys.exit(main())
