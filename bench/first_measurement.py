"""First measurement (issue: the as-of primitive): 10M quotes over 1,000 symbols prepared
once, probed with 1M trades on the CPU, next to polars' join_asof on the same data.

Run: make bench-first   (or: .venv/bin/python bench/first_measurement.py [--quotes N ...])
The full harness (pandas, DuckDB, separate processes, memory, plots) is bench/'s own issue.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np
import polars as pl

import asofgpu as ag
from asofgpu import marketdata


def median_time(fn, runs: int) -> tuple[float, object]:
    fn()  # warm-up (JIT compile or cache load, allocator, page faults)
    times, result = [], None
    for _ in range(runs):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quotes", type=int, default=10_000_000)
    parser.add_argument("--trades", type=int, default=1_000_000)
    parser.add_argument("--symbols", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    quotes, trades = marketdata.day(args.quotes, args.trades, args.symbols, seed=0)
    payload = ["bid", "ask", "bid_size", "ask_size"]
    print(f"{args.quotes:,} quotes x {args.trades:,} trades, {args.symbols:,} symbols, "
          f"time-sorted; {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"median of {args.runs} after a warm-up")

    prepare_s, prepared = median_time(
        lambda: ag.AsofJoin(quotes["time"], quotes["symbol"], device="cpu"), args.runs)
    probe_s, gmap = median_time(lambda: prepared.join(trades["time"], trades["symbol"]), args.runs)
    gather_s, _ = median_time(lambda: ag.gather(quotes.select(payload), gmap), args.runs)

    q_pl, t_pl = pl.from_arrow(quotes), pl.from_arrow(trades)
    polars_s, joined = median_time(
        lambda: t_pl.join_asof(q_pl, on="time", by="symbol", check_sortedness=False), args.runs)

    # The same answer: polars' bid column equals ours (both backward, exact matches allowed).
    ours = ag.gather(quotes.select(["bid"]), gmap).column("bid").to_numpy(zero_copy_only=False)
    theirs = joined["bid"].to_numpy()
    assert np.array_equal(np.isnan(ours), np.isnan(theirs))
    assert np.array_equal(ours[~np.isnan(ours)], theirs[~np.isnan(theirs)])

    print(f"asofgpu prepare (once)           {prepare_s:7.3f} s")
    print(f"asofgpu probe, 1 map             {probe_s:7.3f} s")
    print(f"asofgpu gather, 4 f64 columns    {gather_s:7.3f} s")
    print(f"asofgpu probe + gather           {probe_s + gather_s:7.3f} s")
    print(f"polars join_asof (one-shot)      {polars_s:7.3f} s")
    print(f"ratio probe+gather / polars      {(probe_s + gather_s) / polars_s:7.3f}")
    print(f"ratio prepare+probe+gather / polars {(prepare_s + probe_s + gather_s) / polars_s:7.3f}")


if __name__ == "__main__":
    main()
