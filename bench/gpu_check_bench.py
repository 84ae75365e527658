"""The GPU check's bench stage: trades and quotes generated on the device; prepare, the gather
map (``join()`` end to end, and the probe kernel alone), a device gather of four payload
columns, for time-sorted and shuffled trades, timed with CUDA events; the device copy
bandwidth, the byte floor and the ratio to it; the window join (windows of about 100
quotes, four reductions of a column); then the CPU backend on the same data, compared."""

from __future__ import annotations

import statistics
import time
import traceback
from dataclasses import asdict

import numpy as np

from common import PAYLOAD
from gpu_check_setup import gpu_name
from gpu_check_stage import Recorder, StageContext

# Datasheet peaks of device memory bandwidth, bytes/s, by the GPU's name (the first that is in
# it): shown next to the measured copy rate; the floors themselves use the measured rate.
# (GH200 first: its name holds H200's, and its memory comes in two speeds, so none is shown)
PEAK_HBM_BYTES_S = {
    "GH200": None,
    "H200": 4.8e12,
    "H100 NVL": 3.9e12,
    "H100 PCIe": 2.0e12,
    "H100": 3.35e12,
}


def peak_bandwidth(gpu_name: str | None) -> float | None:
    """The datasheet peak of ``gpu_name``'s memory bandwidth (bytes/s), None for a GPU not
    in ``PEAK_HBM_BYTES_S``.

    >>> peak_bandwidth("NVIDIA H100 80GB HBM3"), peak_bandwidth("NVIDIA H100 PCIe")
    (3350000000000.0, 2000000000000.0)
    >>> peak_bandwidth("NVIDIA A100-SXM4-80GB") is None
    True
    """
    return next((peak for name, peak in PEAK_HBM_BYTES_S.items() if name in (gpu_name or "")), None)


class Clock:
    """Times a callable. On the GPU with CUDA events on the current stream, which numba's and
    cupy's launches share (the legacy default stream): the time between the two events
    includes host work that makes the stream wait, as join()'s group encoding does. The wall
    time is kept beside it. On the host (the CPU backend, the simulator) the wall clock."""

    def __init__(self, on_device: bool):
        self.cupy = None
        if on_device:
            import cupy

            self.cupy = cupy

    def once(self, fn) -> tuple[float, float]:
        """(milliseconds by the events or the wall clock, wall milliseconds)."""
        if self.cupy is None:
            t0 = time.perf_counter()
            fn()
            wall = (time.perf_counter() - t0) * 1e3
            return wall, wall
        cuda = self.cupy.cuda
        cuda.runtime.deviceSynchronize()
        start, end = cuda.Event(), cuda.Event()
        t0 = time.perf_counter()
        start.record()
        fn()
        end.record()
        end.synchronize()
        wall = (time.perf_counter() - t0) * 1e3
        return cuda.get_elapsed_time(start, end), wall

    def measure(self, fn, runs: int, warmup: int = 1) -> dict:
        for _ in range(warmup):
            self.once(fn)
        samples = [self.once(fn) for _ in range(runs)]
        ms = [s[0] for s in samples]
        return {
            "ms": statistics.median(ms),
            "runs_ms": ms,
            "wall_ms": statistics.median(s[1] for s in samples),
        }


def byte_floor(n_left: int, n_right: int, n_groups: int, map_bytes: int, payload: int) -> int:
    """The fewest bytes a probe can move: left keys (int64) and group codes (int32) read, the
    map written, the right keys and the group offsets read once; with payload, each column
    written per left row and read once per right row (the fused best case)."""
    floor = n_left * (8 + 4) + n_left * map_bytes + n_right * 8 + (n_groups + 1) * 8
    return floor + payload * 8 * (n_left + n_right)


def market(xp, n_left: int, n_right: int, n_groups: int, seed: int) -> dict:
    """Trades and quotes of one session on the device (cupy, or numpy in the simulator): int64
    nanosecond times, time-sorted; int32 group codes with marketdata's Zipf activity; four
    float64 quote columns; the trades also shuffled."""
    from asofgpu import marketdata

    rs = xp.random.RandomState(seed)
    cdf = xp.asarray(np.cumsum(marketdata.activity(n_groups)))
    start = int(marketdata.SESSION_OPEN.timestamp()) * 10**9

    def times(n):
        return xp.sort((rs.random_sample(n) * marketdata.SESSION_NS).astype(xp.int64)) + start

    def groups(n):  # the cdf's last entry may round below 1: clip
        codes = xp.searchsorted(cdf, rs.random_sample(n), side="right")
        return xp.minimum(codes, n_groups - 1).astype(xp.int32)

    data = {
        "right_on": times(n_right),
        "right_by": groups(n_right),
        "payload": [rs.random_sample(n_right) for _ in range(4)],
        "left_on": times(n_left),
        "left_by": groups(n_left),
    }
    perm = rs.permutation(n_left)
    data["shuffled_on"], data["shuffled_by"] = data["left_on"][perm], data["left_by"][perm]
    return data


def kernel_only(join, left_on, left_by):
    """The probe kernel alone, the backward map (what the byte floor is about): join() less its
    host-side work (the Arrow lookup of the left group codes, the key checks). It uses
    AsofJoin's private fields as join() does; should they change, this measurement fails and
    says so, and join() is still timed. Returns the callable and the map it fills."""
    from asofgpu._backend import Right, options
    from asofgpu._columns import ordered_key
    from asofgpu._types import NEAREST_TIE_CODE, STRATEGY_CODE, Strategy

    key = ordered_key(left_on, "left_on", join._host)
    groups = join._left_groups(left_by, len(key.values))
    right_keys = join._keys[join._key_type.tick_ns]
    out = join.backend.xp.empty(len(key.values), dtype=join.map_dtype)
    is_float = join._key_type.physical == "float"

    right = Right(join._offsets, right_keys, join._rows_last, join._rows_first)
    how = options(
        is_float,
        STRATEGY_CODE[Strategy.BACKWARD],
        True,
        None,
        NEAREST_TIE_CODE["forward"],
        out.dtype,
        xp=join.backend.xp,  # its empty reach columns on the device, as join() passes them
    )

    def run():  # with the hints join() gives (the cpu walks a time-ordered right side)
        join.backend.probe(
            is_float,
            key.values,
            groups,
            right,
            how,
            out,
            time_ordered=join._time_ordered,
            keys_ascend=key.ascends,
        )

    return run, out


def join_parts(join, left_on, left_by) -> dict:
    """join()'s steps before its probe, each as a callable to time: the left key read and
    checked (``left_key``: its type, nulls, whether it ascends) and the left groups looked up
    in the right's (``left_groups``). Private, as ``kernel_only``."""
    from asofgpu._columns import ordered_key

    n = len(left_on)
    return {
        "left_key": lambda: ordered_key(left_on, "left_on", join._host),
        "left_groups": lambda: join._left_groups(left_by, n),
    }


def device_gather(xp, columns, gmap):
    """The four payload columns in map order on the device, with a validity mask where the map
    holds a row (NO_MATCH, the dtype's minimum, is its only negative value). asofgpu.gather
    works on the host through Arrow; this is the unfused device gather a cupy user writes."""
    valid = gmap >= 0
    rows = xp.where(valid, gmap, 0)
    return [col.take(rows) for col in columns], valid


# A new process's first joins on the GPU: a backward join and a window join, on the device.
_FIRST_CALL = """
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import asofgpu as ag
import asofgpu.table  # the library: __init__ loads nothing
t1 = time.perf_counter()
rng = np.random.default_rng(5)
n_right, n_left = int(sys.argv[1]), int(sys.argv[2])
right = np.sort(rng.integers(0, 10**6, n_right))
left = rng.integers(0, 10**6, n_left)
prepared = ag.AsofJoin(right, device="cuda")
gmap = prepared.backend.to_host(prepared.join(left))
windows = prepared.windows(left, before=1_000)
reduced = windows.reduce(("count", "max"), rng.random(n_right))  # the reduction's kernel too
count = prepared.backend.to_host(reduced["count"])
top = prepared.backend.to_host(reduced["max"])
t2 = time.perf_counter()
again = prepared.backend.to_host(prepared.join(left))
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "first_joins_s": t2 - t1, "again_s": t3 - t2,
                  "answer": [int(gmap.sum()), int((gmap == again).all()), int(count.sum()),
                             int(top.sum())]}))
"""


def first_calls(ctx: StageContext) -> dict:
    """Two new processes, one after the other, each importing asofgpu and making its first
    joins on the GPU (``_FIRST_CALL``), with a numba cache of their own that starts empty:
    the first compiles the kernels, the second should load them (``jit.cuda_jit_cached``).
    Their times, and whether they gave the same answers."""
    import json
    import os
    import subprocess
    import sys
    import tempfile

    found = {}
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        rows = ["100", "200"] if ctx.simulate else ["100000", "200000"]  # right, left
        for run in ("cold", "cached"):
            try:
                done = subprocess.run(
                    [sys.executable, "-c", _FIRST_CALL, *rows],
                    capture_output=True,
                    text=True,
                    env=env,
                    timeout=max(10, ctx.time_left() / 4),
                )
            except subprocess.TimeoutExpired:
                found[run] = {"error": "timed out"}
                break
            if done.returncode:
                found[run] = {"error": done.stderr[-2000:]}
                break
            try:  # its last line; anything else is the process's failure, not the stage's
                found[run] = json.loads(done.stdout.strip().splitlines()[-1])
            except (IndexError, ValueError):
                found[run] = {"error": f"no result on its last line: {done.stdout[-2000:]!r}"}
                break
    if "answer" in found.get("cached", {}):
        found["same_answers"] = found["cold"]["answer"] == found["cached"]["answer"]
    return found


def stage_bench(ctx: StageContext, rec: Recorder) -> None:
    import pyarrow as pa

    import asofgpu as ag
    from asofgpu._backend import get_backend

    rec["first_calls"] = first_calls(ctx)
    failed = any("error" in v for v in rec["first_calls"].values() if isinstance(v, dict))
    if failed or not rec["first_calls"].get("same_answers", False):
        rec["status"] = "failed"
    rec.flush()
    be = get_backend("cuda")
    xp = be.xp
    s = ctx.sizes
    gpu_clock, cpu_clock = Clock(on_device=not ctx.simulate), Clock(on_device=False)
    n_left, n_right, n_groups = s.bench_left, s.bench_right, s.bench_groups
    rec["sizes"] = asdict(s)

    rec["copy"] = _copy_bandwidth(xp, gpu_clock, s.copy_bytes, s.runs)
    _free_device_memory(xp)
    bandwidth = rec["copy"]["bytes_per_s"]

    t0 = time.perf_counter()
    data = market(xp, n_left, n_right, n_groups, seed=0)
    _sync(xp)
    rec["generate_s"] = time.perf_counter() - t0

    # The GPU: prepare the quotes, then per left order the map and the payload.
    rec["gpu_prepare"] = gpu_clock.measure(
        lambda: ag.AsofJoin(data["right_on"], data["right_by"], device="cuda"), runs=3
    )
    prepared = ag.AsofJoin(data["right_on"], data["right_by"], device="cuda")
    map_bytes = np.dtype(prepared.map_dtype).itemsize
    peak = (
        None if ctx.simulate else peak_bandwidth(gpu_name(xp.cuda.runtime.getDeviceProperties(0)))
    )
    floors = {
        "map_bytes": byte_floor(n_left, n_right, n_groups, map_bytes, 0),
        "payload_bytes": byte_floor(n_left, n_right, n_groups, map_bytes, 4),
    }
    for what in ("map", "payload"):
        floors[f"{what}_ms"] = floors[f"{what}_bytes"] / bandwidth * 1e3
        if peak is not None:
            floors[f"{what}_ms_at_peak"] = floors[f"{what}_bytes"] / peak * 1e3
    rec["floor"] = floors
    rec["peak_bytes_per_s"] = peak
    orders = {"time-sorted": ("left_on", "left_by"), "shuffled": ("shuffled_on", "shuffled_by")}
    gpu_maps = {}
    for order, (on, by) in orders.items():
        left_on, left_by = data[on], data[by]
        result = rec[f"gpu_{order}"] = {}  # the same dict: rec.flush() writes what it holds
        result["join"] = gpu_clock.measure(
            lambda: prepared.join(left_on, left_by), runs=max(2, s.runs - 2)
        )
        rec.flush()
        gmap = prepared.join(left_on, left_by)
        gpu_maps[order] = be.to_host(gmap)
        try:
            run, out = kernel_only(prepared, left_on, left_by)
            result["probe"] = gpu_clock.measure(run, runs=2 * s.runs)
            result["probe_equals_join"] = bool(xp.array_equal(out, gmap))
            result["probe_floor_ratio"] = result["probe"]["ms"] / floors["map_ms"]
            if not result["probe_equals_join"]:
                rec["status"] = "failed"
            # join() less the probe: where its other half goes (8.5 ms against 4.4 on an
            # H200, 2026-12-04, not yet broken down)
            for part, fn in join_parts(prepared, left_on, left_by).items():
                result[part] = gpu_clock.measure(fn, runs=s.runs)
        except Exception:  # noqa: BLE001 - private fields changed: report, keep measuring
            result["probe_error"] = traceback.format_exc()
            rec["status"] = "failed"
        rec.flush()
        result["gather4"] = gpu_clock.measure(
            lambda: device_gather(xp, data["payload"], gmap), runs=s.runs
        )
        if "probe" in result:
            both = result["probe"]["ms"] + result["gather4"]["ms"]
            result["map_and_payload_ms"] = both
            result["map_and_payload_floor_ratio"] = both / floors["payload_ms"]
        rec.flush()
    gmap = left_on = left_by = None  # only the prepared right side stays on the device
    _free_device_memory(xp)
    gpu_windows = _bench_gpu_windows(ctx, rec, prepared, data, gpu_clock)
    _free_device_memory(xp)

    # asofgpu.gather, the library's (host-side, Arrow) gather, once on the time-sorted map.
    if ctx.time_left() > 90 or ctx.simulate:
        payload_host = pa.table(
            {name: be.to_host(col) for name, col in zip(PAYLOAD, data["payload"])}
        )
        host_map = gpu_maps["time-sorted"]
        rec["host_gather4"] = cpu_clock.measure(
            lambda: ag.gather(payload_host, host_map), runs=1, warmup=0
        )

    # The CPU backend on the same data (host copies), for the speed-up.
    host = {
        name: be.to_host(data[name])
        for name in ("right_on", "right_by", "left_on", "left_by", "shuffled_on", "shuffled_by")
    }
    host["window_values"] = be.to_host(data["payload"][0])
    data.clear()
    _free_device_memory(xp)
    warm = ag.AsofJoin(host["right_on"][:1000], host["right_by"][:1000], device="cpu")
    warm.join(host["left_on"][:100_000], host["left_by"][:100_000])  # compile (or load) first
    rec["cpu_prepare"], on_cpu = _timed_once(
        cpu_clock,
        lambda: ag.AsofJoin(host["right_on"], host["right_by"], device="cpu"),
        warmup=1,
    )
    for order, (on, by) in orders.items():
        result = rec[f"cpu_{order}"] = {}
        _bench_cpu(ctx, rec, result, on_cpu, host[on], host[by], gpu_maps[order], cpu_clock)
        gpu = rec[f"gpu_{order}"]
        result["speedup_join"] = result["join_ms_full"] / gpu["join"]["ms"]
        if "probe" in gpu and "probe_ms_full" in result:
            result["speedup_probe"] = result["probe_ms_full"] / gpu["probe"]["ms"]
        rec[f"cpu_{order}"] = result
        if not result["map_equals_gpu"]:
            rec["status"] = "failed"
    if gpu_windows is not None:
        _bench_cpu_windows(ctx, rec, on_cpu, host, gpu_windows, cpu_clock)


WINDOW_QUOTES = 100  # the window join's reach: the time of 100 quotes (of all groups) a trade
WINDOW_AGGS = ("max", "min", "mean", "count")


def window_ns(n_right: int) -> int:
    """The window's reach for ``n_right`` quotes in a session: the time in which
    ``WINDOW_QUOTES`` of them arrive (23 ms at 100M quotes; a simulated run's few quotes
    still fill its windows)."""
    from asofgpu import marketdata

    return marketdata.SESSION_NS * WINDOW_QUOTES // n_right


def _bench_gpu_windows(ctx, rec: Recorder, prepared, data: dict, clock: Clock):
    """The window join on the GPU: each time-sorted trade's window (``AsofJoin.windows``),
    then max, min, mean and count of one quote column over them (``Windows.reduce``). Returns
    the windows and reductions on the host, for the CPU's comparison (None if it failed)."""
    reach = window_ns(prepared.n_right)
    result = rec["gpu_window"] = {"before_ns": reach}
    try:
        left_on, left_by = data["left_on"], data["left_by"]

        def windows():
            return prepared.windows(left_on, left_by, before=reach)

        result["windows"] = clock.measure(windows, runs=ctx.sizes.runs)
        found = windows()
        values = data["payload"][0]
        result["positions"] = int(found.lengths().sum())
        result["reduce"] = clock.measure(
            lambda: found.reduce(WINDOW_AGGS, values), runs=ctx.sizes.runs
        )
        reduced = found.reduce(WINDOW_AGGS, values)
        host = prepared.backend.to_host
        rec.flush()
        held = {k: host(v) for k, v in window_rows(found, prepared.backend.xp).items()}
        return held, {k: host(v) for k, v in reduced.items()}
    except Exception:  # noqa: BLE001 - report, keep measuring the rest
        result["error"] = traceback.format_exc()
        rec["status"] = "failed"
        rec.flush()
        return None


def _bench_cpu_windows(ctx, rec: Recorder, on_cpu, host: dict, gpu, clock: Clock) -> None:
    """The same window join on the CPU, on the first ``cpu_slice`` trades: its time (after a
    run that compiles its kernels), and how its windows and reductions compare with the
    GPU's (``window_differences``)."""
    result = rec["cpu_window"] = {}
    cut = min(len(host["left_on"]), ctx.sizes.cpu_slice)
    result["slice_rows"] = cut
    reach = rec["gpu_window"]["before_ns"]
    result["windows"], found = _timed_once(
        clock,
        lambda: on_cpu.windows(host["left_on"][:cut], host["left_by"][:cut], before=reach),
        warmup=1,
    )
    result["reduce"], reduced = _timed_once(
        clock, lambda: found.reduce(WINDOW_AGGS, host["window_values"]), warmup=1
    )
    gpu_held, gpu_reduced = gpu
    ours = {**window_rows(found, np), **reduced}
    theirs = {part: values[:cut] for part, values in {**gpu_held, **gpu_reduced}.items()}
    result["differences"] = window_differences(ours, theirs, host["window_values"])
    result["equals_gpu"] = not any(d["counts"] for d in result["differences"].values())
    if not result["equals_gpu"]:
        rec["status"] = "failed"
    rec.flush()


def window_rows(found, xp) -> dict:
    """What each window holds, in terms the backends share: its length and its first and last
    right row (-1 when empty). Its positions (``starts``, ``ends``) are in each backend's own
    prepared order, which may order the groups differently (on the H200: 8.4M of 10M
    windows' positions differed, their contents none).

    >>> from types import SimpleNamespace as W
    >>> held = window_rows(W(starts=np.array([0, 2, 1]), ends=np.array([2, 2, 3]),
    ...                      rows=np.array([7, 5, 6])), np)
    >>> [held[k].tolist() for k in ("length", "first_row", "last_row")]
    [[2, 0, 2], [7, -1, 5], [5, -1, 6]]
    """
    starts, ends, rows = found.starts, found.ends, found.rows
    lengths = ends - starts
    empty = lengths <= 0
    if not len(rows):  # no right rows: every window is empty
        none = xp.full(len(starts), -1, dtype=np.int64)
        return {"length": lengths, "first_row": none, "last_row": none}
    first = xp.where(empty, -1, rows[xp.where(empty, 0, starts)])
    last = xp.where(empty, -1, rows[xp.where(empty, 0, ends - 1)])
    return {"length": lengths, "first_row": first, "last_row": last}


# The cpu backend's means slide (each value added as it enters the window and taken off as it
# leaves, kernels/window.py's slide_piece), the GPU's sum each window afresh: the same sums
# but for rounding, which the running sum carries from window to window within a piece.
MEAN_RTOL = 1e-9


def window_differences(cpu: dict, gpu: dict, values) -> dict:
    """Where the cpu's windows and reductions differ from the GPU's: for each part, how many
    windows differ (``counts``), the first few, and for min and max how many of those pick a
    row of the same value (a tie taken differently), for the mean its largest relative
    difference (counted above ``MEAN_RTOL`` only).

    >>> d = window_differences(
    ...     {"length": np.array([0, 1]), "max": np.array([1, 2]), "mean": np.array([1.0, 2.0])},
    ...     {"length": np.array([0, 1]), "max": np.array([1, 1]), "mean": np.array([1.0, 2.0])},
    ...     np.array([5.0, 7.0, 7.0]))
    >>> d["length"]["counts"], d["max"]["counts"], d["max"]["same_value"], d["mean"]["counts"]
    (0, 1, 1, 0)
    """
    found = {}
    for part, ours in cpu.items():
        theirs = gpu[part]
        if part == "mean":
            with np.errstate(invalid="ignore", divide="ignore"):
                rel = np.abs(ours - theirs) / np.maximum(np.abs(theirs), np.finfo(float).tiny)
            rel = np.where(np.isnan(ours) & np.isnan(theirs), 0.0, rel)
            wrong = np.flatnonzero(~(rel <= MEAN_RTOL))
            entry = {"max_rel": float(np.nanmax(rel)) if len(rel) else 0.0}
        else:
            wrong = np.flatnonzero(ours != theirs)
            entry = {}
        entry["counts"] = len(wrong)
        entry["first"] = [
            {"window": int(i), "cpu": _plain_number(ours[i]), "gpu": _plain_number(theirs[i])}
            for i in wrong[:5]
        ]
        if part in ("min", "max") and len(wrong):
            a, b = ours[wrong], theirs[wrong]
            both = (a >= 0) & (b >= 0)  # NO_MATCH on either side is no tie
            entry["same_value"] = int(
                np.sum(both & (values[np.where(both, a, 0)] == values[np.where(both, b, 0)]))
            )
        found[part] = entry
    return found


def _plain_number(x):
    return float(x) if isinstance(x, (float, np.floating)) else int(x)


def _copy_bandwidth(xp, clock: Clock, nbytes: int, runs: int) -> dict:
    """The ceiling: a device-to-device copy (cudaMemcpy; numpy's copyto in the simulator),
    counting the bytes read and the bytes written."""
    src = xp.ones(nbytes // 8, dtype=xp.float64)
    dst = xp.empty_like(src)
    if xp is np:
        timing = clock.measure(lambda: np.copyto(dst, src), runs=runs)
    else:
        timing = clock.measure(
            lambda: dst.data.copy_from_device_async(src.data, src.nbytes), runs=runs
        )
    return {**timing, "bytes": 2 * src.nbytes, "bytes_per_s": 2 * src.nbytes / (timing["ms"] / 1e3)}


def _bench_cpu(
    ctx, rec: Recorder, result: dict, on_cpu, left_on, left_by, gpu_map, clock: Clock
) -> None:
    """CPU join() on a slice first; on the full left too when the slice says it fits in the
    stage's remaining time, else the full time is the slice's scaled by rows (and says so).
    Fills ``result``, which rec holds, flushing after each step."""
    n, cut = len(left_on), min(len(left_on), ctx.sizes.cpu_slice)
    result["slice_rows"] = cut
    result["join_slice"], cmap = _timed_once(
        clock, lambda: on_cpu.join(left_on[:cut], left_by[:cut]), warmup=1
    )
    rec.flush()
    estimate_s = result["join_slice"]["ms"] / 1e3 * n / cut
    result["full_run"] = cut == n or 2 * estimate_s + 30 < ctx.time_left()
    if result["full_run"] and cut < n:
        result["join_full"], cmap = _timed_once(clock, lambda: on_cpu.join(left_on, left_by))
    if result["full_run"]:
        result["join_ms_full"] = result.get("join_full", result["join_slice"])["ms"]
    else:  # scaled by rows; the report says so
        result["join_ms_full"] = result["join_slice"]["ms"] * n / cut
    result["map_equals_gpu"] = bool(np.array_equal(cmap, gpu_map[: len(cmap)]))
    rec.flush()
    try:
        rows = n if result["full_run"] else cut
        run, _ = kernel_only(on_cpu, left_on[:rows], left_by[:rows])
        result["probe"] = clock.measure(run, runs=1, warmup=1)
        result["probe_ms_full"] = result["probe"]["ms"] * n / rows
    except Exception:  # noqa: BLE001 - private fields changed: the join() times stand
        result["probe_error"] = traceback.format_exc()
    rec.flush()


def _timed_once(clock: Clock, fn, warmup: int = 0) -> tuple[dict, object]:
    """One timed run of fn, and what it returned: a CPU run at full size is too slow to repeat
    just to keep its result. ``warmup=1`` runs it once untimed first, to compile what it
    needs at this size (numba specializes the cpu's kernels by path, serial or parallel, and
    a small warm-up does not take every path)."""
    kept = []

    def run():
        kept.clear()  # the warm-up's result goes before the timed run makes its own
        kept.append(fn())

    timing = clock.measure(run, runs=1, warmup=warmup)
    return timing, kept[0]


def _sync(xp) -> None:
    if xp is not np:
        xp.cuda.runtime.deviceSynchronize()


def _free_device_memory(xp) -> None:
    if xp is not np:
        xp.get_default_memory_pool().free_all_blocks()
