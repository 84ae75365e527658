"""bench/run.py's plan: the jobs to run (a system, a mode, a pair of files) in order, and
the report's cells that point at them, at none where a size passes the system's
``MAX_ROWS``."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from bench_data import Dataset
from common import label
from peers import MAX_ROWS, TITLES

# Both sides time-sorted; shuffled; or sorted by symbol, then time (quotes kept a file a
# symbol, as many stores partition them).
ORDERS = ("sorted", "shuffled", "by-symbol")
MODES = ("one-shot", "prepared")


@dataclass(frozen=True)
class Job:
    system: str
    prepared: bool  # asofgpu's AsofJoin once, then probes; peers always run one-shot
    dataset: Dataset
    trades: Path  # the dataset's trades, or its probe batch
    trades_rows: int

    @property
    def pair(self) -> tuple[Path, Path]:
        return self.dataset.quotes, self.trades

    @property
    def name(self) -> str:
        what = "prepared probe" if self.prepared else "one-shot"
        rows = f"{label(self.dataset.quotes_rows)}x{label(self.trades_rows)}"
        return f"{TITLES[self.system]} {what} {rows} {self.dataset.order}"


def plan(datasets: list[Dataset], systems: list[str]) -> tuple[list[Job], list[dict]]:
    """The distinct jobs to run, in order, and the report's cells that point at them (at
    none where the size passes the system's ``MAX_ROWS``)."""
    jobs: list[Job] = []
    cells = []

    def add(job: Job) -> Job:
        if job not in jobs:
            jobs.append(job)
        return job

    def cell(ds: Dataset, mode: str, job: Job) -> dict:
        too_large = max(ds.quotes_rows, job.trades_rows) > MAX_ROWS.get(job.system, math.inf)
        return {
            "dataset": ds,
            "mode": mode,
            "system": job.system,
            "planned": job,
            "job": None if too_large else add(job),
        }

    for ds in datasets:
        for system in systems:  # asofgpu first: on each pair of files it is the reference
            cells.append(cell(ds, "one-shot", Job(system, False, ds, ds.trades, ds.trades_rows)))
        if "asofgpu" not in systems:
            continue  # the prepared mode is asofgpu's; peers' runs there only compare to it
        for system in systems:
            prepared = system == "asofgpu"
            cells.append(cell(ds, "prepared", Job(system, prepared, ds, ds.probe, ds.probe_rows)))
    return jobs, cells
