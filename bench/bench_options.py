"""bench/run.py's command line: its options, their checks, and the defaults that depend on
``--quick``."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench_plan import ORDERS
from common import ROOT, label, parse_count, parse_size
from peers import SYSTEMS

DEFAULT_SIZES = "1Mx1M,10Mx1M,10Mx10M"
QUICK_SIZES = "100Kx100K,1Mx200K"
QUICK_PROBE_ROWS = 100_000


def parse_sizes(text: str) -> list[tuple[int, int]]:
    """'1Mx1M,10Mx10M' -> [(quotes, trades), ...]."""
    return [parse_size(part.strip(), example="10Mx1M") for part in text.split(",")]


def choice_list(choices: tuple[str, ...], what: str):
    """An argparse type: a comma-separated, non-empty subset of ``choices``, in their order."""

    def parse(text: str) -> list[str]:
        names = [n.strip().lower() for n in text.split(",") if n.strip()]
        unknown = [n for n in names if n not in choices]
        if unknown or not names:
            raise argparse.ArgumentTypeError(
                f"unknown {what} {', '.join(map(repr, unknown)) or repr(text)}; "
                f"choose from {', '.join(choices)}"
            )
        return [c for c in choices if c in names]

    return parse


def positive(kind):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number")
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text!r} must be positive")
        return value

    return parse


def options(argv: list[str] | None, description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench/run.py",
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Sizes are QUOTESxTRADES. Results: OUT/bench.md, bench.json, bench.png.",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"small sizes ({QUICK_SIZES}), probe batches of "
        f"{label(QUICK_PROBE_ROWS)} trades, one timed run: tests the harness",
    )
    parser.add_argument(
        "--sizes",
        type=parse_sizes,
        default=None,
        help=f"comma-separated QUOTESxTRADES (default {DEFAULT_SIZES})",
    )
    parser.add_argument(
        "--systems",
        type=choice_list(SYSTEMS, "system"),
        default=list(SYSTEMS),
        help=f"comma-separated subset of {','.join(SYSTEMS)} (default all)",
    )
    parser.add_argument(
        "--orders",
        type=choice_list(ORDERS, "order"),
        default=list(ORDERS),
        help="comma-separated subset of sorted,shuffled,by-symbol (default all)",
    )
    parser.add_argument(
        "--runs",
        type=positive(int),
        default=None,
        help="timed runs after the warm-up; the median is reported (default 3)",
    )
    parser.add_argument(
        "--probe-rows",
        type=parse_count,
        default=None,
        help="trades per prepared probe (default 1M)",
    )
    parser.add_argument("--symbols", type=positive(int), default=1000, help="default 1000")
    parser.add_argument("--seed", type=int, default=0, help="marketdata seed (default 0)")
    parser.add_argument(
        "--timeout",
        type=positive(float),
        default=300.0,
        help="seconds one run (or the load) may take before the system is "
        "recorded as timed out at that size (default 300)",
    )
    parser.add_argument(
        "--mem-limit",
        type=positive(float),
        default=16.0,
        help="GiB of RSS a worker may use before it is stopped (default 16)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=ROOT / "bench" / "results",
        help="where bench.md, bench.json and bench.png go (default bench/results)",
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=ROOT / "bench" / "data",
        help="parquet cache of the generated datasets (default bench/data)",
    )
    # The test hook: this system's answer is altered after its warm-up, so the correctness
    # check must fail. Hidden: it exists for tests/test_bench.py only.
    parser.add_argument("--corrupt-for-test", choices=SYSTEMS, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.sizes = args.sizes or parse_sizes(QUICK_SIZES if args.quick else DEFAULT_SIZES)
    args.runs = args.runs or (1 if args.quick else 3)
    args.probe_rows = args.probe_rows or (QUICK_PROBE_ROWS if args.quick else 1_000_000)
    return args
