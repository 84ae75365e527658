"""bench/run.py's worker: the process one system runs in (``run.py --worker SPEC``). It loads
its files, warms up, saves its answer for the check, then makes a timed run each time the
parent gives it the turn, and reports each step, its page faults and its peak memory as event
lines on stdout."""

from __future__ import annotations

import json
import resource
import sys
import time

import answers
from peers import RUNNERS

EVENT = "@@bench "  # prefix of the worker's progress lines on stdout


def _emit(**event) -> None:
    print(EVENT + json.dumps(event), flush=True)


def _reset_peak_rss() -> bool:
    """Restart the process's peak-RSS count (Linux 4.0+), so that the reported peak covers the
    runs and not the parquet reading before them. False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_rss_mib() -> float:
    """The process's peak RSS. VmHWM, not getrusage's ru_maxrss: Linux carries ru_maxrss over
    from the forking parent through exec, so a worker would inherit the harness's own peak."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    scale = 2**20 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes there, KiB here
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale


def worker(spec: dict) -> None:
    """One system, one mode, one pair of files: load, warm up, check, then a timed run for
    each line on stdin (the parent's turns); events on stdout."""
    import numpy as np
    import psutil

    start = time.perf_counter()
    runner = RUNNERS[spec["system"]](
        spec["quotes"], spec["trades"], spec["order"], spec["prepared"]
    )
    _emit(
        event="loaded",
        seconds=time.perf_counter() - start,
        rss_mib=psutil.Process().memory_info().rss / 2**20,
    )
    peak_is_runs = _reset_peak_rss()
    if spec["prepared"]:
        runner.prepare()  # warm-up: JIT cache load, allocator
        start = time.perf_counter()
        runner.prepare()
        _emit(event="prepare", seconds=time.perf_counter() - start)
    start = time.perf_counter()
    result = runner.join()
    _emit(event="warmup", seconds=time.perf_counter() - start)
    ids, values = answers.by_trade(*runner.answer(result))
    runner.free(result)
    del result
    if spec["corrupt"]:
        middle = len(values) // 2
        values[middle] = 0.0 if np.isnan(values[middle]) else values[middle] + 1.0
    answers.save(spec["check"], ids, values)
    del ids, values
    _emit(event="checked")
    for i in range(spec["runs"]):
        if not sys.stdin.readline():  # the parent's go for this run; none: it has gone
            return
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        start = time.perf_counter()
        result = runner.join()
        seconds = time.perf_counter() - start
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
        runner.free(result)  # outside the timed region: dropping the table is not the join
        del result
        _emit(event="run", i=i, seconds=seconds, at=time.time() - seconds, faults=faults)
    _emit(event="done", peak_rss_mib=_peak_rss_mib(), peak_is_runs=peak_is_runs)
