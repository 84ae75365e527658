"""The GPU check's stage process (``gpu_check.py --run-stage NAME``): the sizes a stage works
at, its results as a JSON object rewritten after every change (so a stage stopped at its time
box still leaves what it measured), and the run of one stage that records how it ended."""

from __future__ import annotations

import json
import signal
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from common import atomic_write


@dataclass(frozen=True)
class Sizes:
    compare_left: int
    compare_right: int
    compare_groups: int
    bench_left: int
    bench_right: int
    bench_groups: int
    copy_bytes: int  # the buffer of the device-to-device copy that measures bandwidth
    runs: int  # timed runs of each GPU measurement (after one warm-up); the median is reported
    cpu_slice: int  # left rows of the CPU run that estimates the CPU time of the full size
    enrich_quotes: int  # the enrich stage's day: quotes, trades, and rounds of both devices
    enrich_trades: int
    enrich_rounds: int


FULL = Sizes(
    10_000_000, 1_000_000, 1_000, 100_000_000, 10_000_000, 5_000, 2 * 2**30, 5, 10_000_000,
    10_000_000, 10_000_000, 3,
)  # fmt: skip
# The simulator runs every CUDA thread in Python (about 0.3 ms each): a few hundred rows.
SIMULATED = Sizes(300, 100, 8, 256, 64, 8, 2**20, 1, 128, 400, 200, 2)


class Recorder:
    """A stage's results as one JSON object, rewritten after every change, so that a stage
    stopped at its time limit still leaves what it had measured."""

    def __init__(self, path: Path):
        self.path = path
        self.data: dict = {"status": "running"}
        self.flush()

    def __setitem__(self, key: str, value) -> None:
        self.data[key] = value
        self.flush()

    def __getitem__(self, key: str):
        return self.data[key]

    def append(self, key: str, value) -> None:
        self.data.setdefault(key, []).append(value)
        self.flush()

    def flush(self) -> None:
        text = json.dumps(self.data, indent=1, default=plain)
        atomic_write(self.path, lambda tmp: tmp.write_text(text))


def plain(obj):
    """numpy scalars and paths as JSON values."""
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    msg = f"not JSON serializable: {type(obj).__name__}"
    raise TypeError(msg)


@dataclass
class StageContext:
    simulate: bool
    plant_mismatch: bool
    deadline: float  # time.time() by which the stage must be done

    @property
    def sizes(self) -> Sizes:
        return SIMULATED if self.simulate else FULL

    def time_left(self) -> float:
        return self.deadline - time.time()


def run_stage(stage, result: Path, ctx: StageContext) -> int:
    """``stage(ctx, rec)`` with its results recorded in ``result``: passed, failed (with the
    traceback), or timeout when the orchestrator interrupted it at its time box."""
    rec = Recorder(result)
    # The orchestrator stops a stage at its time limit with SIGINT: record it, keep the rest.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        stage(ctx, rec)
        if rec["status"] == "running":
            rec["status"] = "passed"
    except KeyboardInterrupt:
        rec["status"] = "timeout"
    except Exception:  # noqa: BLE001 - any failure is the stage's result, reported in full
        rec["error"] = traceback.format_exc()
        rec["status"] = "failed"
        print(rec["error"], file=sys.stderr)
    return 0 if rec["status"] == "passed" else 1
