"""The harness of the benches that pit one asofgpu call against the shortest peer scripts
that compute the same result (``bench/splice.py``, ``bench/window.py``).

The data is ``bench/enrich_e2e.py``'s market-data day (cached parquet files, time-sorted,
1,000 Zipf symbols). Each system runs in a process of its own (``<script> --worker``): it
reads the files once, untimed, the way its users hold data (pyarrow tables in chunks, polars
DataFrames, DuckDB's own tables), makes one untimed call, then ``--runs`` timed calls, each
producing the whole result in memory. The outputs must agree: each worker reports its row
count, every column's nulls and an order-sensitive checksum of every time and number column
(``fingerprint``), and the bench fails, writing nothing, if a peer's differ from asofgpu's.
Results: ``--out`` (bench/results) ``<name>.md`` and ``<name>.json``, each written whole or
not at all.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import common
import enrich_e2e


@dataclass(frozen=True)
class ScriptBench:
    name: str  # of the results' files
    title: str  # the markdown's heading
    script: str  # the bench's file, which runs the workers
    #: system -> (what runs, in words; ``call(trades, quotes)`` -> a function making the result)
    systems: dict[str, tuple[str, Callable]]
    goal: float  # asofgpu's time over the faster peer's, at most
    size: tuple[int, int]  # the default QUOTESxTRADES
    quick: tuple[int, int]  # --quick's
    method: str  # a sentence on what the systems compute, for the markdown
    #: float columns the peers compute another way (a sliding sum, a segment tree): compared
    #: within a relative 1e-9 rather than bit for bit
    approx: tuple[str, ...] = ()
    #: systems so much slower than the others that they get one timed call, not --runs
    slow: tuple[str, ...] = ()


def fingerprint(result, approx=()) -> dict:
    """Row count, each column's nulls, and an order-sensitive checksum of each time and
    number column (values as int64 bits, weighted by position), from any Arrow-exportable
    result; for the float columns ``approx``, the position-weighted sum of the values."""
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
        if name in approx:
            out.setdefault("approx", {})[name] = float((values * weights).sum())
            continue
        bits = values.view(np.uint64)
        out["sums"][name] = int((bits * weights).sum(dtype=np.uint64))
    return out


def worker(bench: ScriptBench, system: str, trades: str, quotes: str, runs: int) -> dict:
    """One system in this process: an untimed call, its result's fingerprint, ``runs`` timed
    calls."""
    call = bench.systems[system][1](trades, quotes)
    print_ = fingerprint(call(), bench.approx)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return {"times": times, "fingerprint": print_}


def options(bench: ScriptBench, argv: list[str] | None, doc: str) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=doc.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    quick = "x".join(common.label(n) for n in bench.quick)
    p.add_argument("--size", type=common.parse_size, default=bench.size, help="QUOTESxTRADES")
    p.add_argument("--runs", type=enrich_e2e.positive_int, default=3, help="timed calls (3)")
    p.add_argument("--quick", action="store_true", help=f"--size {quick} --runs 1 unless given")
    p.add_argument(
        "--systems", default=",".join(bench.systems), help="of: " + ", ".join(bench.systems)
    )
    p.add_argument("--data", type=Path, default=common.ROOT / "bench" / "data" / "e2e")
    p.add_argument("--out", type=Path, default=common.ROOT / "bench" / "results")
    p.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    given = sys.argv[1:] if argv is None else argv
    if args.quick:
        if "--size" not in given:
            args.size = bench.quick
        if "--runs" not in given:
            args.runs = 1
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [s for s in args.systems if s not in bench.systems]
    if unknown or "asofgpu" not in args.systems:
        p.error(f"--systems: asofgpu and any of {', '.join(bench.systems)}; got {args.systems}")
    return args


def _agree(fp: dict, reference: dict) -> bool:
    """Fingerprints equal, their ``approx`` sums within a relative 1e-9."""
    near = fp.get("approx", {}), reference.get("approx", {})
    if {k: v for k, v in fp.items() if k != "approx"} != {
        k: v for k, v in reference.items() if k != "approx"
    } or near[0].keys() != near[1].keys():
        return False
    return all(abs(near[0][k] - v) <= 1e-9 * max(abs(v), 1.0) for k, v in near[1].items())


def _approx_note(bench: ScriptBench) -> str:
    if not bench.approx:
        return ""
    return "; " + ", ".join(bench.approx) + " within a relative 1e-9, summed another way"


def markdown(bench: ScriptBench, report: dict) -> str:
    lines = [
        f"# {bench.title}",
        "",
        f"{report['when']} · {report['machine']['cpu']}, {report['machine']['cores']} "
        f"cores · commit {report['commit']}",
        "",
        f"{report['quotes']:,} quotes x {report['trades']:,} trades (`bench/enrich_e2e.py`'s "
        f"day), by symbol: {bench.method} {report['rows']:,} output rows held in memory; data "
        f"read beforehand, untimed; medians of {report['runs']} calls in one process a system, "
        f"after an untimed call. Outputs checked equal (rows, nulls, order-sensitive "
        f"checksums{_approx_note(bench)}). "
        f"`python {Path(bench.script).relative_to(common.ROOT)}`.",
        "",
        "| system | what runs | median s | asofgpu's ratio to it |",
        "|---|---|---:|---:|",
    ]
    ours = report["systems"]["asofgpu"]["median"]
    for name, row in report["systems"].items():
        ratio = "" if name == "asofgpu" else f"{ours / row['median']:.2f}x"
        once = " (one timed call)" if len(row["times"]) == 1 < report["runs"] else ""
        lines.append(f"| {name} | {bench.systems[name][0]}{once} | {row['median']:.3f} | {ratio} |")
    best = report.get("best_peer")
    if best:
        ratio = ours / report["systems"][best]["median"]
        ok = "met" if ratio <= bench.goal else "not met"
        lines += [
            "",
            f"Against the faster peer ({best}): {ratio:.2f}x; goal at most {bench.goal}x: {ok}.",
        ]
    return "\n".join(lines) + "\n"


def main(bench: ScriptBench, doc: str, argv: list[str] | None = None) -> int:
    args = options(bench, argv, doc)
    if args.worker:
        system, trades, quotes, runs = args.worker
        print(json.dumps(worker(bench, system, trades, quotes, int(runs))))
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
            [sys.executable, bench.script, "--worker", system, str(trades), str(quotes)]
            + [str(1 if system in bench.slow else args.runs)],
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
        if not _agree(fp, reference):
            raise common.BenchError(
                f"{system}'s output differs from asofgpu's: {json.dumps(fp)} against "
                f"{json.dumps(reference)}"
            )
    report["rows"] = reference["rows"]
    peers = [s for s in report["systems"] if s != "asofgpu"]
    if peers:
        report["best_peer"] = min(peers, key=lambda s: report["systems"][s]["median"])
    common.write_report(args.out, bench.name, report, markdown(bench, report))
    say(f"wrote {bench.name}.md and {bench.name}.json to {args.out}")
    return 0
