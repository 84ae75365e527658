"""make bench: asofgpu against polars join_asof, pandas merge_asof, DuckDB ASOF JOIN,
ClickHouse's ASOF LEFT JOIN (chdb, in process) and pyarrow's Table.join_asof.

All of them join the same synthetic market-data days (``asofgpu.marketdata``: 1,000 string symbols
of Zipf activity, int64 nanosecond UTC times, four float64 quote columns), each trade taking
the latest quote of its symbol at or before it (backward, exact matches allowed), with time-sorted
inputs, shuffled ones and ones sorted by symbol, then time (by-symbol: quotes kept a file a
symbol), in two modes:

- one-shot: tables in, table out. Every system gets string symbols and encodes them inside the
  timed region, sorts inside it when it needs sorted input (polars, pandas and pyarrow on
  shuffled data, pandas and pyarrow by symbol; DuckDB, ClickHouse and asofgpu need no sorted
  input), and returns the trade
  columns plus the same four quote columns. pyarrow runs only up to ``MAX_ROWS`` a side.
- prepared: asofgpu builds ``AsofJoin`` on the quotes once, then each timed run is the probe of
  a batch of ``--probe-rows`` trades (1M) plus the gather of the four quote columns into a
  table; compared with each peer's one-shot join of the quotes with that same batch.

Each dataset is generated once into parquet files under ``--data`` (bench/data). Each system
runs in its own process (``run.py --worker``): it reads the parquet into its native form
outside the timed region, runs one warm-up, then ``--runs`` timed runs (the median is reported),
and reports its peak RSS during the runs (inputs included). The processes of all systems on
the same files start one after another and then stay up together, taking turns: each round is
one timed run of each system, so that a drift in the machine's speed (20-50% within minutes on
a shared VM) falls on all of them alike rather than on whichever ran then. A run that takes
longer than ``--timeout`` seconds or a process above ``--mem-limit`` GiB is stopped and
recorded as such. Every system's answer (the bid column, by trade) must equal asofgpu's, or
the bench fails. A peer whose package is not installed is left out (``make bench`` installs
chdb where it can).

    python bench/run.py                       # the full run (about 8 minutes on 2 cores)
    python bench/run.py --quick               # small sizes, one run: checks the harness
    python bench/run.py --sizes 1Mx1M,10Mx10M --systems asofgpu,polars --orders sorted

Results go to ``--out`` (bench/results): bench.md (the table), bench.json (raw numbers) and
bench.png (rows/s against size), each written whole or not at all.

The parts, a module each: bench_options.py (the command line), bench_data.py (the data sets),
bench_plan.py (the jobs and the report's cells), peers.py (each system's runner),
peer_worker.py (the process a system runs in), peer_turns.py (the workers' turns and limits),
answers.py (the correctness check) and bench_report.py (bench.json, bench.md, bench.png).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its modules, when loaded by path
import answers  # noqa: E402
import bench_report  # noqa: E402
from bench_data import dataset  # noqa: E402
from bench_options import options  # noqa: E402
from bench_plan import Job, plan  # noqa: E402
from common import BenchError, seconds_text, utc_minute  # noqa: E402
from peer_turns import run_group  # noqa: E402
from peer_worker import worker  # noqa: E402
from peers import TITLES  # noqa: E402


def run_jobs(jobs: list[Job], args, console, say) -> tuple[dict, dict]:
    """Every job, a pair of files at a time, with a progress bar; each answer checked against
    the first on its files. Returns each job's record and, per pair of files, the reference
    answer and whose it is."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    results: dict[Job, dict] = {}
    references: dict[tuple[Path, Path], tuple[Path, str]] = {}
    groups: dict[tuple[Path, Path], list[Job]] = {}
    for job in jobs:  # the jobs on one pair of files take turns
        groups.setdefault(job.pair, []).append(job)
    with (
        tempfile.TemporaryDirectory(prefix="asofgpu-bench-") as checks,
        Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
        ) as progress,
    ):
        task = progress.add_task("bench", total=len(jobs))

        def on_event(job, kind, event):
            step = {
                "prepare": "prepared",
                "warmup": "warm-up done",
                "checked": "checked",
                "run": f"run {event.get('i', 0) + 1}/{args.runs}",
            }
            progress.update(task, description=f"{job.name}: {step.get(kind, kind)}")

        def on_checked(job, check):
            # The first answer on a pair of files is the one the others must equal.
            reference = references.setdefault(job.pair, (check, TITLES[job.system]))
            if reference[0] != check:
                answers.compare(check, reference[0], job, reference[1])
                check.unlink()

        for group in groups.values():
            progress.update(task, description=f"{group[0].name}: loading")
            for job, record in run_group(group, args, Path(checks), on_checked, on_event).items():
                results[job] = record
                if record["status"] == "ok":
                    record["checked_against"] = references[job.pair][1]
                    say(
                        f"{job.name}: median {seconds_text(record['median_s'])}, peak "
                        f"{bench_report.memory_text(record['peak_rss_mib'])}"
                    )
                else:
                    say(f"[yellow]{job.name}: {record['status']}, recorded as such")
                progress.advance(task)
    return results, references


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--worker"]:
        worker(json.loads(argv[1]))
        return 0
    args = options(argv, __doc__.splitlines()[0])
    from rich.console import Console

    console = Console(stderr=True, log_path=False)

    def say(text: str) -> None:
        console.log(text, highlight=False)

    began = time.perf_counter()
    load_start = os.getloadavg()[0]
    date = utc_minute()
    try:
        missing = [x for x in args.systems if importlib.util.find_spec(x) is None]
        if missing:  # a peer whose package does not install here (chdb on some platforms)
            say(f"[yellow]not installed, left out: {', '.join(missing)}")
            args.systems = [x for x in args.systems if x not in missing]
        datasets = [dataset(args, q, t, order, say) for q, t in args.sizes for order in args.orders]
        jobs, cells = plan(datasets, args.systems)
        results, references = run_jobs(jobs, args, console, say)
        report = bench_report.build(
            args,
            argv,
            date=date,
            load_start=load_start,
            began=began,
            not_installed=missing,
            references=references,
            results=bench_report.entries(cells, results),
        )
        text = bench_report.write(report, args.out)
    except BenchError as error:
        console.print(f"[bold red]bench: error:[/] {error}", highlight=False)
        console.print("No results were written.")
        return 1
    print(text)
    say(
        f"wrote bench.md, bench.json and bench.png to {args.out} "
        f"in {time.perf_counter() - began:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
