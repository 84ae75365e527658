"""Peak resident memory of ``asofgpu enrich`` against left files of growing length.

Writes a right file (quotes) and left files (trades) of the given sizes with
``asofgpu.marketdata``, runs ``asofgpu enrich`` on each in a fresh process, and prints the peak
RSS (``resource.getrusage(RUSAGE_CHILDREN)``, Linux: KiB) with the wall time. Bounded memory
means the peak does not grow with the left file: the prepared right side plus a few chunks.

    python bench/enrich_memory.py                       # 2M quotes; 2M and 8M trades
    python bench/enrich_memory.py --left 2e6 8e6 --right 2e6 --chunk-rows 1000000
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

import pyarrow.parquet as pq

from asofgpu import marketdata


def _peak_kib(argv: list[str]) -> tuple[int, float]:
    """Peak RSS of one child process (fork a fresh Python so that children do not mix)."""
    code = (
        "import resource, subprocess, sys, time; t = time.perf_counter(); "
        "rc = subprocess.call(sys.argv[1:]); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, "
        "time.perf_counter() - t, rc)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, *argv], check=True, capture_output=True, text=True
    ).stdout.split()
    if out[2] != "0":
        raise SystemExit(f"enrich failed: {' '.join(argv)}")
    return int(out[0]), float(out[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--right", type=float, default=2e6)
    parser.add_argument("--left", type=float, nargs="+", default=[2e6, 8e6])
    parser.add_argument("--symbols", type=int, default=1000)
    parser.add_argument("--chunk-rows", type=int, default=None)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    exe = os.path.join(os.path.dirname(sys.executable), "asofgpu")
    with tempfile.TemporaryDirectory(prefix="asofgpu-mem-") as d:
        right = os.path.join(d, "quotes.parquet")
        quotes, _ = marketdata.day(int(args.right), 0, args.symbols, seed=1)
        pq.write_table(quotes, right)
        del quotes
        print(f"right: {int(args.right):,} quotes, {os.path.getsize(right) / 2**20:.0f} MiB")
        print("| left rows | left file | peak RSS | wall |\n|---:|---:|---:|---:|")
        for n in args.left:
            left = os.path.join(d, "trades.parquet")
            _, trades = marketdata.day(0, int(n), args.symbols, seed=2)
            pq.write_table(trades, left)
            del trades
            argv = [
                exe,
                "enrich",
                left,
                right,
                "-o",
                os.path.join(d, "out.parquet"),
                "--on",
                "time",
                "--by",
                "symbol",
                "--device",
                args.device,
                "-q",
            ]
            if args.chunk_rows:
                argv += ["--chunk-rows", str(args.chunk_rows)]
            peak, wall = _peak_kib(argv)
            print(
                f"| {int(n):,} | {os.path.getsize(left) / 2**20:.0f} MiB | "
                f"{peak / 1024:,.0f} MiB | {wall:.1f} s |",
                flush=True,
            )


if __name__ == "__main__":
    main()
