"""How long a prepared probe + gather takes after idle spells, and the page faults it takes.

    .venv/bin/python bench/idle.py                  # 10M quotes, 1M trades
    .venv/bin/python bench/idle.py --pool-mib 0     # the same, asofgpu.host_pool off

One process prepares ``AsofJoin`` on a day of quotes (``asofgpu.marketdata``, time-sorted),
then, round after round, sleeps for each of ``--sleeps`` seconds and times the probe of the
trades plus the gather of the four quote columns: the bench's prepared mode, where each run
follows a wait while the other systems run. Arrow's default memory pool (mimalloc) purges
pages freed some time before, and does it at its next allocation: without
``asofgpu.host_pool``, which keeps the blocks of large arrays, the join after an idle spell
pays for the purge and, after a longer one, for faulting the pages in again (the minor faults
column). ``MIMALLOC_PURGE_DELAY=-1``, set before the process starts, keeps them too.
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import time

import numpy as np
import pyarrow as pa

import asofgpu as ag
from asofgpu import marketdata
from common import PAYLOAD  # bench/, the folder this script runs from


def _seconds_list(text: str) -> list[float]:
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        values = []
    if (
        not values
        or any(not (math.isfinite(v) and v >= 0) for v in values)
        or len(set(values)) < len(values)
    ):
        msg = f"expected comma-separated seconds >= 0, each once (e.g. 0,0.1,2), got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return values


def _whole(text: str, least: int) -> int:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value >= least and value.is_integer()):
        msg = f"expected a whole number >= {least} (e.g. 1e6), got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return int(value)


def _count(text: str) -> int:
    return _whole(text, 1)


def _mib(text: str) -> int:
    return _whole(text, 0)


def options(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quotes", type=_count, default=10_000_000, help="default 1e7")
    parser.add_argument("--trades", type=_count, default=1_000_000, help="default 1e6")
    parser.add_argument("--symbols", type=_count, default=1000)
    parser.add_argument(
        "--sleeps",
        type=_seconds_list,
        default=[0.0, 0.1, 0.5, 2.0],
        help="idle seconds before each timed join (default 0,0.1,0.5,2)",
    )
    parser.add_argument("--rounds", type=_count, default=5, help="timed joins per sleep")
    parser.add_argument(
        "--pool-mib",
        type=_mib,
        default=ag.host_pool.get_limit() >> 20,
        help="asofgpu.host_pool's limit in MiB; 0 turns it off (default %(default)s)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = options(argv)
    ag.host_pool.set_limit(args.pool_mib << 20)
    quotes, trades = marketdata.day(args.quotes, args.trades, args.symbols, seed=0)
    prepared = ag.AsofJoin(quotes["time"], quotes["symbol"], device="cpu")
    payload = quotes.select(PAYLOAD)

    def join():
        return ag.gather(payload, prepared.join(trades["time"], trades["symbol"]))

    for _ in range(3):  # compile-cache loads, the pool's first pages
        join()
    pool = pa.default_memory_pool().backend_name
    purge = os.environ.get("MIMALLOC_PURGE_DELAY", "unset")
    print(
        f"{args.quotes:,} quotes, {args.trades:,} trades; host pool {args.pool_mib} MiB, "
        f"Arrow pool {pool}, MIMALLOC_PURGE_DELAY {purge}"
    )
    times: dict[float, list[float]] = {s: [] for s in args.sleeps}
    faults: dict[float, list[int]] = {s: [] for s in args.sleeps}
    for _ in range(args.rounds):  # each sleep in every round: drift hits them alike
        for s in args.sleeps:
            time.sleep(s)
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            start = time.perf_counter()
            result = join()
            times[s].append(time.perf_counter() - start)
            faults[s].append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
            del result
    print("| idle before | median | min | max | minor faults (median) |")
    print("|---:|---:|---:|---:|---:|")
    for s in args.sleeps:
        ms = np.array(times[s]) * 1e3
        print(
            f"| {s:g} s | {np.median(ms):.1f} ms | {ms.min():.1f} ms | {ms.max():.1f} ms "
            f"| {int(np.median(faults[s])):,} |"
        )


if __name__ == "__main__":
    main()
