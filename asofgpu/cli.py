"""The ``asofgpu`` command.

``asofgpu demo`` builds a synthetic market-data day (``asofgpu.marketdata``), prepares the
quotes once (``AsofJoin``), probes them with the trades on the best available backend, gathers
the quote columns, and prints what it did and how fast.

Example::

    asofgpu demo --quotes 4000000 --trades 1000000 --symbols 1000 --device auto
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np


def _positive_int(text: str) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        msg = f"expected a whole number, got {text!r}"
        raise argparse.ArgumentTypeError(msg) from None
    if value < 1:
        msg = f"expected a positive number, got {value}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="asofgpu", description="As-of joins on the GPU and the CPU.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser(
        "demo", help="enrich a synthetic market-data day with prevailing quotes",
        description=("Generate a market-data day, prepare the quotes once, attach the "
                     "prevailing quote to every trade, and report the timings. "
                     "Example: asofgpu demo --trades 2000000 --device cpu"))
    demo.add_argument("--quotes", type=_positive_int, default=4_000_000,
                      help="number of quotes (default 4,000,000; e.g. --quotes 10_000_000)")
    demo.add_argument("--trades", type=_positive_int, default=1_000_000,
                      help="number of trades (default 1,000,000)")
    demo.add_argument("--symbols", type=_positive_int, default=1_000,
                      help="number of symbols, Zipf-distributed activity (default 1,000)")
    demo.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    demo.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                      help="where to run (default auto: the GPU when one is usable)")
    return parser


def _demo(args) -> int:
    from . import AsofJoin, NO_MATCH, gather, marketdata

    say = print
    t0 = time.perf_counter()
    quotes, trades = marketdata.day(args.quotes, args.trades, args.symbols, seed=args.seed)
    t1 = time.perf_counter()
    say(f"generated {quotes.num_rows:,} quotes and {trades.num_rows:,} trades over "
        f"{args.symbols:,} symbols in {t1 - t0:.2f} s (seed {args.seed})")

    # The first prepare and probe compile the kernels (cached on disk for later runs).
    warm = AsofJoin(quotes["time"].slice(0, 100), quotes["symbol"].slice(0, 100),
                    device=args.device)
    warm.join(trades["time"].slice(0, 100), trades["symbol"].slice(0, 100))
    t2 = time.perf_counter()
    say(f"backend: {warm.backend.name} (compile / cache load {t2 - t1:.2f} s)")

    prepared = AsofJoin(quotes["time"], quotes["symbol"], device=args.device)
    t3 = time.perf_counter()
    gmap = prepared.join(trades["time"], trades["symbol"])
    t4 = time.perf_counter()
    gather(quotes.select(["bid", "ask", "bid_size", "ask_size"]), gmap)
    t5 = time.perf_counter()

    host_map = prepared.backend.to_host(gmap)
    matched = host_map != NO_MATCH
    stale = (trades["time"].to_numpy().astype(np.int64)[matched]
             - quotes["time"].to_numpy().astype(np.int64)[host_map[matched]])
    p50, p99 = (np.percentile(stale, [50, 99]) / 1e6) if len(stale) else (float("nan"),) * 2
    say(f"prepare  {t3 - t2:8.3f} s  ({quotes.num_rows / (t3 - t2) / 1e6:,.1f} M quotes/s)")
    say(f"probe    {t4 - t3:8.3f} s  ({trades.num_rows / (t4 - t3) / 1e6:,.1f} M trades/s)")
    say(f"gather   {t5 - t4:8.3f} s  (4 float64 quote columns)")
    say(f"matched  {matched.mean():8.1%}   quote staleness p50 {p50:.3f} ms, p99 {p99:.3f} ms")
    if matched.any():
        row = int(np.argmax(matched))
        trade = trades.slice(row, 1).to_pylist()[0]
        quote = quotes.slice(int(host_map[row]), 1).to_pylist()[0]
        say(f"e.g. trade {row:,}: {trade['symbol']} {trade['size']} @ {trade['price']} at "
            f"{trade['time']}, prevailing quote {quote['bid']} / {quote['ask']} from {quote['time']}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "demo":
        return _demo(args)
    return 2  # unreachable: argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
