#!/usr/bin/env python3
"""The GPU check (``make gpu-check``): what a machine with an NVIDIA GPU can tell us, in one
run of under 8 minutes, with no network.

Stages, in this order, each in a process of its own with a time box, so that a stage that
fails or hangs is recorded and the next one still runs:

  env      the GPU (name, memory, L2, clocks), the driver, the package versions;
  install  ``pip install --no-deps --no-build-isolation --no-index -e .``, skipped when this
           checkout is installed editable already (the Docker image); editable because
           tests/test_layout.py checks that the installed package imports kernels/ from the tree.
           Wheels in bench/wheelhouse/ (test peers the machine lacks, such as polars, fetched
           by a machine with network) are installed first, offline;
  pytest   the whole suite on the real CUDA backend, ``gpu`` tests included; a test module that
           imports a package missing here (polars on the lent H200) at its top is left out and
           named in the report;
  compare  GPU against CPU gather maps on 10M left x 1M right random rows with groups and nulls:
           every strategy, exact and strict, with and without a tolerance, float keys, null
           groups matching each other;
  bench    100M trades x 10M quotes x 5,000 groups generated on the device: prepare, the gather
           map (``join()`` end to end, and the probe kernel alone), a device gather of four
           float64 payload columns, time-sorted and shuffled left, timed with CUDA events (the
           median of several runs after a warm-up); the device copy bandwidth, the byte floor
           (``byte_floor``) and the ratio to it; the CPU backend on the same data.

Results: bench/results/gpu_check.md (to read), gpu_check.json (every number), gpu_check.log
(every stage's output) and gpu_check_pytest.xml (JUnit), copied to $OUT too when it is set,
all rewritten after every stage so that a run cut short still leaves what finished. Exit status
1 when any stage failed or ran out of time; the performance goals are reported, not enforced.

``--simulate`` runs the same stages at tiny sizes in numba's CUDA simulator: no GPU needed, and
the times mean nothing (tests/test_gpu_check.py runs it). ``--plant-mismatch`` corrupts one entry
of the first GPU map before it is compared: the test hook that shows the comparison catches it.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import importlib.util
import json
import os
import platform
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/common.py, when loaded by path
import common  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_RESULTS = ROOT / "bench" / "results"
WHEELHOUSE = ROOT / "bench" / "wheelhouse"
STAGES = ("env", "install", "pytest", "compare", "bench")
# Seconds: each stage's time box (None: whatever is left), and the least a stage is still
# worth starting with (the stages after one keep that much of the budget back for themselves).
BOX = {"env": 30, "install": 60, "pytest": 210, "compare": 90, "bench": None}
LEAST = {"env": 10, "install": 20, "pytest": 60, "compare": 40, "bench": 120}
GRACE_S = 15  # after SIGINT at the time limit, how long a stage may take to write its results
PEAK_HBM_BYTES_S = 4.8e12  # the H200 datasheet's figure, shown next to the measured copy rate
REPORT_FILES = ("gpu_check.md", "gpu_check.json", "gpu_check.log", "gpu_check_pytest.xml")
PACKAGES = ("numpy", "numba", "numba-cuda", "cupy-cuda13x", "cupy-cuda12x", "pyarrow", "pandas",
            "polars", "duckdb", "pytest", "hypothesis", "pytest-xdist", "pytest-timeout",
            "setuptools", "pip")


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


FULL = Sizes(10_000_000, 1_000_000, 1_000, 100_000_000, 10_000_000, 5_000, 2 * 2**30, 5,
             10_000_000)
# The simulator runs every CUDA thread in Python (about 0.3 ms each): a few hundred rows.
SIMULATED = Sizes(300, 100, 8, 256, 64, 8, 2**20, 1, 128)


# ---------------------------------------------------------------------------------------------
# Inside a stage's process


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
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1, default=_plain))
        os.replace(tmp, self.path)


def _plain(obj):
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


def run_stage(name: str, result: Path, ctx: StageContext) -> int:
    rec = Recorder(result)
    # The orchestrator stops a stage at its time limit with SIGINT: record it, keep the rest.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        STAGE_FUNCTIONS[name](ctx, rec)
        if rec["status"] == "running":
            rec["status"] = "passed"
    except KeyboardInterrupt:
        rec["status"] = "timeout"
    except Exception:  # noqa: BLE001 - any failure is the stage's result, reported in full
        rec["error"] = traceback.format_exc()
        rec["status"] = "failed"
        print(rec["error"], file=sys.stderr)
    return 0 if rec["status"] == "passed" else 1


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
        return {"ms": statistics.median(ms), "runs_ms": ms,
                "wall_ms": statistics.median(s[1] for s in samples)}


# ---- stage: env


def stage_env(ctx: StageContext, rec: Recorder) -> None:
    rec["python"] = f"{sys.version.split()[0]} ({sys.executable})"
    rec["machine"] = f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}"
    rec["packages"] = common.versions(PACKAGES)
    rec["nvidia_smi"] = _nvidia_smi()
    import numba

    rec["numba_threads"] = numba.config.NUMBA_NUM_THREADS
    from asofgpu._backend import cuda_usable, get_backend

    if ctx.simulate:
        rec["simulator"] = get_backend("cuda").simulated
        if not rec["simulator"]:
            rec["status"] = "failed"
            rec["note"] = "--simulate needs NUMBA_ENABLE_CUDASIM=1 in the stage's environment"
        return
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(0)
    name = props.get("name", b"")
    rec["gpu"] = {
        "name": name.decode() if isinstance(name, bytes) else str(name),
        "compute_capability": f"{props.get('major')}.{props.get('minor')}",
        "multiprocessors": props.get("multiProcessorCount"),
        "l2_cache_mb": props.get("l2CacheSize", 0) / 1e6,
        "memory_gib": props.get("totalGlobalMem", 0) / 2**30,
        "driver_api": cupy.cuda.runtime.driverGetVersion(),
        "runtime_api": cupy.cuda.runtime.runtimeGetVersion(),
    }
    from numba import cuda

    rec["numba_cuda_available"] = bool(cuda.is_available())
    rec["cuda_usable"] = cuda_usable()
    if not rec["cuda_usable"]:
        rec["status"] = "failed"
        rec["note"] = ("asofgpu finds no usable GPU (cuda_usable() is False): every GPU result "
                       "below is missing or wrong")


def _nvidia_smi() -> dict | str:
    fields = ("name,driver_version,memory.total,memory.used,clocks.sm,clocks.mem,clocks.max.sm,"
              "clocks.max.mem,temperature.gpu,power.draw")
    if shutil.which("nvidia-smi") is None:
        return "nvidia-smi not found"
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return "nvidia-smi did not answer within 20 s"
    if out.returncode:
        return f"nvidia-smi failed: {out.stderr.strip()[:300]}"
    first = out.stdout.strip().splitlines()[0]
    return dict(zip(fields.split(","), (v.strip() for v in first.split(","))))


# ---- stage: install


def stage_install(ctx: StageContext, rec: Recorder) -> None:
    before = _installed_at()
    rec["installed_before"] = before
    if before and Path(before).resolve().is_relative_to(ROOT):
        rec["action"] = "none: this checkout is installed editable already"
    else:
        wheels = sorted(WHEELHOUSE.glob("*.whl"))
        if wheels:  # peers the machine lacks, fetched by a machine with network (see handoff)
            rec["wheelhouse"] = [w.name for w in wheels]
            _pip(rec, "wheelhouse_pip", ["--no-index", "--no-deps", *map(str, wheels)], ctx)
        _pip(rec, "pip", ["--no-deps", "--no-build-isolation", "--no-index", "-e", str(ROOT)],
             ctx)
        rec["action"] = "pip install --dry-run (simulated)" if ctx.simulate else "pip install -e"
    after = _installed_at()
    rec["installed_at"] = after
    if not ctx.simulate and not (after and Path(after).resolve().is_relative_to(ROOT)):
        rec["status"] = "failed"
        rec["note"] = f"after the install, asofgpu imports from {after!r}, not from {ROOT}"
        return
    # The command line works from anywhere (asofgpu demo in the Docker image, for one).
    cli = subprocess.run([sys.executable, "-m", "asofgpu", "--help"], capture_output=True,
                         text=True, cwd=tempfile.gettempdir(), env=_env_without_pythonpath())
    rec["cli_help_rc"] = cli.returncode
    if cli.returncode and not ctx.simulate:
        rec["status"] = "failed"
        rec["note"] = f"python -m asofgpu --help failed: {cli.stderr.strip()[-500:]}"


def _pip(rec: Recorder, key: str, args: list[str], ctx: StageContext) -> None:
    cmd = [sys.executable, "-m", "pip", "install", "--no-input", "--disable-pip-version-check"]
    if ctx.simulate:
        cmd.append("--dry-run")  # here the check must not change the environment it runs in
    out = subprocess.run(cmd + args, capture_output=True, text=True,
                         timeout=max(5, ctx.time_left() - 5))
    print(out.stdout + out.stderr)
    rec[key] = {"command": " ".join(cmd + args), "rc": out.returncode,
                "output_tail": (out.stdout + out.stderr)[-2000:]}
    if out.returncode:
        rec["status"] = "failed"


def _env_without_pythonpath() -> dict:
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _installed_at() -> str | None:
    """Where ``import asofgpu`` leads from outside the checkout (None: not installed)."""
    out = subprocess.run([sys.executable, "-c", "import asofgpu; print(asofgpu.__file__)"],
                         capture_output=True, text=True, cwd=tempfile.gettempdir(),
                         env=_env_without_pythonpath())
    if out.returncode:
        return None
    return out.stdout.strip() or None


# ---- stage: compare


def stage_compare(ctx: StageContext, rec: Recorder) -> None:
    import pyarrow as pa

    import asofgpu as ag
    from asofgpu._backend import get_backend

    gpu = get_backend("cuda")
    s = ctx.sizes
    n_left, n_right, n_groups = s.compare_left, s.compare_right, s.compare_groups
    rng = np.random.default_rng(20261130)
    span = 4 * n_right  # about one right key in four values: ties and exact matches occur

    def nullable(values):  # 1% nulls
        return pa.array(values, mask=rng.random(len(values)) < 0.01)

    def floats(values):  # the float path: NaN (a value above +inf, not a null) and -0.0
        out = values / 4.0
        out[rng.random(len(out)) < 0.001] = np.nan
        out[out == 0] = -0.0
        return out

    right_on = rng.integers(0, span, n_right)
    left_on = rng.integers(-span // 50, span + span // 50, n_left)
    right_by = nullable(rng.integers(0, n_groups, n_right, dtype=np.int32))
    # Some left groups the right side lacks: those rows never match.
    left_by = nullable(rng.integers(0, n_groups + max(1, n_groups // 10), n_left, dtype=np.int32))
    inputs = {"int64": (nullable(right_on), nullable(left_on)),
              "float64": (nullable(floats(right_on)), nullable(floats(left_on)))}
    rec["data"] = {"left_rows": n_left, "right_rows": n_right, "groups": n_groups,
                   "null_share": 0.01, "key_span": span}
    tol = 3 * span // n_right
    cases = [("int64", "unequal", dict(strategy=st, allow_exact_matches=ex, tolerance=t))
             for st in ("backward", "forward", "nearest") for ex in (True, False)
             for t in (None, tol)]
    cases += [("float64", "unequal", dict(strategy=st, tolerance=t))
              for st in ("backward", "forward", "nearest") for t in (None, tol / 4.0)]
    cases += [("int64", "unequal", dict(strategy="nearest", nearest_tie="backward")),
              ("int64", "equal", dict(strategy="backward")),
              ("int64", "equal", dict(strategy="nearest", tolerance=tol))]
    prepared = {}
    failed = False
    for i, (key, null_equality, options) in enumerate(cases):
        if (key, null_equality) not in prepared:
            r_on = inputs[key][0]
            prepared[key, null_equality] = tuple(
                ag.AsofJoin(r_on, right_by, null_equality=null_equality, device=device)
                for device in ("cuda", "cpu"))
        on_gpu, on_cpu = prepared[key, null_equality]
        l_on = inputs[key][1]
        t0 = time.perf_counter()
        gmap = gpu.to_host(on_gpu.join(l_on, left_by, **options))
        t1 = time.perf_counter()
        cmap = on_cpu.join(l_on, left_by, **options)
        t2 = time.perf_counter()
        if ctx.plant_mismatch and i == 0:
            row = len(gmap) // 2
            gmap[row] = 1 if gmap[row] == 0 else 0
        differ = np.flatnonzero(gmap != cmap)
        case = {"key": key, "null_equality": null_equality, "options": options,
                "gpu_dtype": str(gmap.dtype), "cpu_dtype": str(cmap.dtype),
                "matched": int((cmap != ag.NO_MATCH).sum()), "mismatches": len(differ),
                "gpu_s": t1 - t0, "cpu_s": t2 - t1}
        if len(differ):
            row = int(differ[0])
            case["first_mismatch"] = {"row": row, "gpu": int(gmap[row]), "cpu": int(cmap[row])}
        if len(differ) or gmap.dtype != cmap.dtype:
            failed = True
        rec.append("cases", case)
        print(f"compare {key} {null_equality} {options}: {len(differ)} mismatches", flush=True)
    rec["status"] = "failed" if failed else "passed"


# ---- stage: bench


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

    data = {"right_on": times(n_right), "right_by": groups(n_right),
            "payload": [rs.random_sample(n_right) for _ in range(4)],
            "left_on": times(n_left), "left_by": groups(n_left)}
    perm = rs.permutation(n_left)
    data["shuffled_on"], data["shuffled_by"] = data["left_on"][perm], data["left_by"][perm]
    return data


def kernel_only(join, left_on, left_by):
    """The probe kernel alone, the backward map (what the byte floor is about): join() less its
    host-side work (the Arrow lookup of the left group codes, the key checks). It uses
    AsofJoin's private fields as join() does; should they change, this measurement fails and
    says so, and join() is still timed. Returns the callable and the map it fills."""
    from asofgpu._columns import ordered_key
    from asofgpu._types import NEAREST_TIE_CODE, STRATEGY_CODE, Strategy

    key = ordered_key(left_on, "left_on", join._host)
    groups = join._left_groups(left_by, len(key.values))
    right_keys = join._keys[join._key_type.tick_ns]
    out = join.backend.xp.empty(len(key.values), dtype=join.map_dtype)
    is_float = join._key_type.physical == "float"

    def run():
        join.backend.probe(is_float, key.values, groups, join._offsets, right_keys,
                           join._rows_last, join._rows_first, STRATEGY_CODE[Strategy.BACKWARD],
                           True, None, NEAREST_TIE_CODE["forward"], out)

    return run, out


def device_gather(xp, columns, gmap):
    """The four payload columns in map order on the device, with a validity mask where the map
    holds a row (NO_MATCH, the dtype's minimum, is its only negative value). asofgpu.gather
    works on the host through Arrow; this is the unfused device gather a cupy user writes."""
    valid = gmap >= 0
    rows = xp.where(valid, gmap, 0)
    return [col.take(rows) for col in columns], valid


def stage_bench(ctx: StageContext, rec: Recorder) -> None:
    import pyarrow as pa

    import asofgpu as ag
    from asofgpu._backend import get_backend

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
        lambda: ag.AsofJoin(data["right_on"], data["right_by"], device="cuda"), runs=3)
    prepared = ag.AsofJoin(data["right_on"], data["right_by"], device="cuda")
    map_bytes = np.dtype(prepared.map_dtype).itemsize
    floors = {"map_bytes": byte_floor(n_left, n_right, n_groups, map_bytes, 0),
              "payload_bytes": byte_floor(n_left, n_right, n_groups, map_bytes, 4)}
    for what in ("map", "payload"):
        floors[f"{what}_ms"] = floors[f"{what}_bytes"] / bandwidth * 1e3
        floors[f"{what}_ms_at_peak"] = floors[f"{what}_bytes"] / PEAK_HBM_BYTES_S * 1e3
    rec["floor"] = floors
    orders = {"time-sorted": ("left_on", "left_by"), "shuffled": ("shuffled_on", "shuffled_by")}
    gpu_maps = {}
    for order, (on, by) in orders.items():
        left_on, left_by = data[on], data[by]
        result = rec[f"gpu_{order}"] = {}  # the same dict: rec.flush() writes what it holds
        result["join"] = gpu_clock.measure(lambda: prepared.join(left_on, left_by),
                                           runs=max(2, s.runs - 2))
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
        except Exception:  # noqa: BLE001 - private fields changed: report, keep measuring
            result["probe_error"] = traceback.format_exc()
            rec["status"] = "failed"
        rec.flush()
        result["gather4"] = gpu_clock.measure(
            lambda: device_gather(xp, data["payload"], gmap), runs=s.runs)
        if "probe" in result:
            both = result["probe"]["ms"] + result["gather4"]["ms"]
            result["map_and_payload_ms"] = both
            result["map_and_payload_floor_ratio"] = both / floors["payload_ms"]
        rec.flush()
    gmap = left_on = left_by = None  # only the prepared right side stays on the device
    _free_device_memory(xp)

    # asofgpu.gather, the library's (host-side, Arrow) gather, once on the time-sorted map.
    if ctx.time_left() > 90 or ctx.simulate:
        payload_host = pa.table({name: be.to_host(col) for name, col
                                 in zip(("bid", "ask", "bid_size", "ask_size"), data["payload"])})
        host_map = gpu_maps["time-sorted"]
        rec["host_gather4"] = cpu_clock.measure(lambda: ag.gather(payload_host, host_map),
                                                runs=1, warmup=0)

    # The CPU backend on the same data (host copies), for the speed-up.
    host = {name: be.to_host(data[name]) for name in
            ("right_on", "right_by", "left_on", "left_by", "shuffled_on", "shuffled_by")}
    data.clear()
    _free_device_memory(xp)
    warm = ag.AsofJoin(host["right_on"][:1000], host["right_by"][:1000], device="cpu")
    warm.join(host["left_on"][:100_000], host["left_by"][:100_000])  # compile (or load) first
    rec["cpu_prepare"], on_cpu = _timed_once(
        cpu_clock, lambda: ag.AsofJoin(host["right_on"], host["right_by"], device="cpu"))
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


def _copy_bandwidth(xp, clock: Clock, nbytes: int, runs: int) -> dict:
    """The ceiling: a device-to-device copy (cudaMemcpy; numpy's copyto in the simulator),
    counting the bytes read and the bytes written."""
    src = xp.ones(nbytes // 8, dtype=xp.float64)
    dst = xp.empty_like(src)
    if xp is np:
        timing = clock.measure(lambda: np.copyto(dst, src), runs=runs)
    else:
        timing = clock.measure(lambda: dst.data.copy_from_device_async(src.data, src.nbytes),
                               runs=runs)
    return {**timing, "bytes": 2 * src.nbytes, "bytes_per_s": 2 * src.nbytes / (timing["ms"] / 1e3)}


def _bench_cpu(ctx, rec: Recorder, result: dict, on_cpu, left_on, left_by, gpu_map,
               clock: Clock) -> None:
    """CPU join() on a slice first; on the full left too when the slice says it fits in the
    stage's remaining time, else the full time is the slice's scaled by rows (and says so).
    Fills ``result``, which rec holds, flushing after each step."""
    n, cut = len(left_on), min(len(left_on), ctx.sizes.cpu_slice)
    result["slice_rows"] = cut
    result["join_slice"], cmap = _timed_once(clock, lambda: on_cpu.join(left_on[:cut],
                                                                        left_by[:cut]))
    rec.flush()
    estimate_s = result["join_slice"]["ms"] / 1e3 * n / cut
    result["full_run"] = cut == n or 2 * estimate_s + 30 < ctx.time_left()
    if result["full_run"] and cut < n:
        result["join_full"], cmap = _timed_once(clock, lambda: on_cpu.join(left_on, left_by))
    if result["full_run"]:
        result["join_ms_full"] = result.get("join_full", result["join_slice"])["ms"]
    else:  # scaled by rows; the report says so
        result["join_ms_full"] = result["join_slice"]["ms"] * n / cut
    result["map_equals_gpu"] = bool(np.array_equal(cmap, gpu_map[:len(cmap)]))
    rec.flush()
    try:
        rows = n if result["full_run"] else cut
        run, _ = kernel_only(on_cpu, left_on[:rows], left_by[:rows])
        result["probe"] = clock.measure(run, runs=1, warmup=0)
        result["probe_ms_full"] = result["probe"]["ms"] * n / rows
    except Exception:  # noqa: BLE001 - private fields changed: the join() times stand
        result["probe_error"] = traceback.format_exc()
    rec.flush()


def _timed_once(clock: Clock, fn) -> tuple[dict, object]:
    """One timed run of fn, and what it returned: a CPU run at full size is too slow to repeat
    just to keep its result."""
    kept = []
    timing = clock.measure(lambda: kept.append(fn()), runs=1, warmup=0)
    return timing, kept[0]


def _sync(xp) -> None:
    if xp is not np:
        xp.cuda.runtime.deviceSynchronize()


def _free_device_memory(xp) -> None:
    if xp is not np:
        xp.get_default_memory_pool().free_all_blocks()


STAGE_FUNCTIONS = {"env": stage_env, "install": stage_install, "compare": stage_compare,
                   "bench": stage_bench}


# ---------------------------------------------------------------------------------------------
# pytest: the command and its results


def missing_imports(paths: list[Path]) -> dict[str, list[str]]:
    """Test modules whose module-level imports name a package this interpreter lacks: pytest
    would fail to import them (a collection error) rather than skip them. Imports inside a
    try block, a function or a test are guarded or deferred, and nothing after a module-level
    ``pytest.importorskip`` of a missing package runs: none of those count."""
    found = {}
    for path in paths:
        tree = ast.parse(path.read_text(), filename=str(path))
        names = set()
        for node in tree.body:
            skipped_for = _importorskip_of(node)
            if skipped_for and _absent(skipped_for, path):
                break  # the module skips here, cleanly
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
        missing = sorted(n for n in names if n != "__future__" and _absent(n, path))
        if missing:
            found[str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)] = missing
    return found


def _importorskip_of(node: ast.stmt) -> str | None:
    """The top-level package a statement's ``pytest.importorskip("pkg...")`` asks for."""
    for call in ast.walk(node):
        if not isinstance(call, ast.Call) or not call.args:
            continue
        name = getattr(call.func, "attr", None) or getattr(call.func, "id", None)
        first = call.args[0]
        if (name == "importorskip" and isinstance(first, ast.Constant)
                and isinstance(first.value, str)):
            return first.value.split(".")[0]
    return None


def _absent(name: str, path: Path) -> bool:
    """Not installed, nor (for a test) a module in tests/: pytest puts that folder on the path
    for conftest and oracle. A package's own absolute imports never resolve beside the file."""
    tests = ROOT / "tests"
    if path.parent == tests and ((tests / f"{name}.py").exists() or (tests / name).is_dir()):
        return False
    return importlib.util.find_spec(name) is None


def pytest_command(simulate: bool, junit: Path) -> tuple[list[str], dict]:
    if simulate:  # the gpu tests (skipped) and a quick one: the suite is far too slow there
        targets = [ROOT / "tests" / "test_gpu.py", ROOT / "tests" / "test_layout.py"]
        selection = ["-k", "test_gpu or front_end"]  # not "gpu": it matches "asofgpu" too
    else:  # as make test-cpu, the doctests included (a module whose imports fail, such as
        # asofgpu/polars.py without polars, has its doctests skipped, not errored)
        targets = sorted((ROOT / "tests").glob("test_*.py"))
        selection = ["--doctest-modules", "--doctest-ignore-import-errors"]
    importlib.invalidate_caches()  # the install stage may have added packages since
    left_out = missing_imports(targets)
    # The check's own test reruns this script in the simulator: nothing about the GPU.
    ignores = [ROOT / "tests" / "test_gpu_check.py", *(ROOT / p for p in left_out)]
    cmd = [sys.executable, "-m", "pytest", "-m", "gpu or not gpu", *selection,
           "-p", "no:cacheprovider", "-q", "--durations=15", f"--junitxml={junit}",
           *(f"--ignore={p}" for p in ignores)]
    if not simulate:
        if importlib.util.find_spec("xdist"):  # each worker has its own CUDA context
            cmd += ["-n", str(min(8, os.cpu_count() or 1))]
        if importlib.util.find_spec("pytest_timeout"):  # one hung test must not take it all
            cmd += ["--timeout=120"]
        cmd += ["tests", "asofgpu"]
    else:
        cmd += [str(t.relative_to(ROOT)) for t in targets]
    return cmd, left_out


def junit_summary(path: Path) -> dict | None:
    """Counts and the failed tests from pytest's JUnit XML (None when it was not written)."""
    if not path.exists():
        return None
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    counts = {k: sum(int(s.get(k, 0)) for s in suites)
              for k in ("tests", "failures", "errors", "skipped")}
    counts["time_s"] = sum(float(s.get("time", 0)) for s in suites)
    counts["passed"] = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    failed = []
    for case in root.iter("testcase"):
        for outcome in ("failure", "error"):
            node = case.find(outcome)
            if node is not None:
                message = (node.get("message") or "").strip().splitlines()
                failed.append({"test": f"{case.get('classname')}::{case.get('name')}",
                               "outcome": outcome, "message": message[0][:300] if message else ""})
    counts["failed_tests"] = failed
    return counts


# ---------------------------------------------------------------------------------------------
# The orchestrator


class Run:
    def __init__(self, args):
        self.simulate = args.simulate
        self.plant_mismatch = args.plant_mismatch
        self.results = Path(args.results) if args.results else (
            Path(tempfile.gettempdir()) / "asofgpu-gpu-check-simulated" if args.simulate
            else DEFAULT_RESULTS)
        self.results.mkdir(parents=True, exist_ok=True)
        self.out = Path(os.environ["OUT"]) if os.environ.get("OUT") else None
        self.started = time.time()
        self.deadline = self.started + args.budget
        self.log_path = self.results / "gpu_check.log"
        self.log_path.write_text("")
        self.junit = self.results / "gpu_check_pytest.xml"
        self.junit.unlink(missing_ok=True)
        self.report = {"meta": {"started": _utc(self.started), "budget_s": args.budget,
                                "simulated": self.simulate, "root": str(ROOT),
                                "host": platform.node(), "argv": sys.argv[1:]},
                       "stages": {}}
        self.env = dict(os.environ, PYTHONUNBUFFERED="1",
                        PYTHONPATH=os.pathsep.join(
                            [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
        if self.simulate:
            self.env["NUMBA_ENABLE_CUDASIM"] = "1"
        else:  # a stray setting would quietly turn the real check into a simulated one
            self.env.pop("NUMBA_ENABLE_CUDASIM", None)

    def log(self, text: str) -> None:
        print(text, flush=True)
        with self.log_path.open("a") as f:
            f.write(text + "\n")

    def execute(self, cmd: list[str], limit: float) -> tuple[int | None, bool]:
        """Run a command with its output shown and logged; at the limit, SIGINT (pytest and
        the stages then write what they have), SIGKILL after a grace. (rc, timed out)."""
        proc = subprocess.Popen(cmd, cwd=ROOT, env=self.env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, errors="replace",
                                start_new_session=True)

        def pump():
            with self.log_path.open("a") as f:
                for line in proc.stdout:
                    sys.stdout.write(line)
                    f.write(line)
                    f.flush()  # a run killed from outside still leaves its log
            sys.stdout.flush()

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        timed_out = False
        try:
            proc.wait(timeout=limit)
        except KeyboardInterrupt:  # Ctrl-C here: the stage runs in a session of its own
            self._signal(proc, signal.SIGKILL)
            raise
        except subprocess.TimeoutExpired:
            timed_out = True
            self._signal(proc, signal.SIGINT)
            try:
                proc.wait(timeout=GRACE_S)
            except subprocess.TimeoutExpired:
                self._signal(proc, signal.SIGKILL)
                proc.wait()
        reader.join(timeout=10)
        return proc.returncode, timed_out

    @staticmethod
    def _signal(proc, sig) -> None:
        try:
            os.killpg(proc.pid, sig)  # the stage and its own children (pytest's workers)
        except ProcessLookupError:
            pass

    def run_all(self, stages: list[str]) -> int:
        for i, name in enumerate(stages):
            left = self.deadline - time.time()
            later = sum(LEAST[n] for n in stages[i + 1:])
            box = min(left if BOX[name] is None else BOX[name], left - later)
            entry = {"status": "skipped", "box_s": round(box, 1)}
            self.report["stages"][name] = entry
            if box < LEAST[name] / 2:
                entry["note"] = f"not started: {left:.0f} s of the budget left"
                self.log(f"==== {name}: skipped, {left:.0f} s left")
                self.write()
                continue
            self.log(f"==== {name} (time box {box:.0f} s) {_utc(time.time())}")
            t0 = time.time()
            if name == "pytest":
                self.pytest_stage(entry, box)
            else:
                self.python_stage(name, entry, box)
            entry["seconds"] = round(time.time() - t0, 1)
            if entry["status"] == "timeout":
                entry["note"] = f"stopped at its {box:.0f} s time box; what it finished is kept"
            self.log(f"==== {name}: {entry['status']} in {entry['seconds']} s")
            self.write()
        self.report["meta"]["finished"] = _utc(time.time())
        self.report["meta"]["seconds"] = round(time.time() - self.started, 1)
        failed = [n for n, e in self.report["stages"].items() if e["status"] != "passed"]
        self.report["meta"]["result"] = "failed: " + ", ".join(failed) if failed else "passed"
        self.write()
        print("\n" + render_markdown(self.report), flush=True)
        return 1 if failed else 0

    def python_stage(self, name: str, entry: dict, box: float) -> None:
        result = self.results / f".gpu_check_{name}.json"
        result.unlink(missing_ok=True)
        cmd = [sys.executable, str(Path(__file__).resolve()), "--run-stage", name,
               "--result", str(result), "--deadline", str(time.time() + box)]
        if self.simulate:
            cmd.append("--simulate")
        if self.plant_mismatch:
            cmd.append("--plant-mismatch")
        rc, timed_out = self.execute(cmd, box)
        if result.exists():
            entry.update(json.loads(result.read_text()))
            result.unlink()
        entry["rc"] = rc
        if timed_out:
            entry["status"] = "timeout"
        elif rc != 0 and entry.get("status") in (None, "running", "skipped", "passed"):
            entry["status"] = "failed"  # it died before it could say so (a crash, a kill)

    def pytest_stage(self, entry: dict, box: float) -> None:
        cmd, left_out = pytest_command(self.simulate, self.junit)
        entry["command"] = shlex.join(cmd)
        entry["left_out"] = left_out
        rc, timed_out = self.execute(cmd, box)
        entry["rc"] = rc
        entry["junit"] = junit_summary(self.junit)
        entry["status"] = "timeout" if timed_out else "passed" if rc == 0 else "failed"

    def write(self) -> None:
        """The reports, rewritten in full after every stage, here and in $OUT."""
        (self.results / "gpu_check.json").write_text(
            json.dumps(self.report, indent=1, default=_plain))
        (self.results / "gpu_check.md").write_text(render_markdown(self.report))
        if self.out:
            self.out.mkdir(parents=True, exist_ok=True)
            for name in REPORT_FILES:
                if (self.results / name).exists():
                    shutil.copyfile(self.results / name, self.out / name)


def _utc(t: float) -> str:
    moment = datetime.datetime.fromtimestamp(t, datetime.timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


# ---------------------------------------------------------------------------------------------
# The Markdown report


def _ms(value) -> str:
    if value is None:
        return "—"
    return f"{value / 1e3:.2f} s" if value >= 1000 else f"{value:.3g} ms"


def _x(value) -> str:
    return "—" if value is None else f"{value:.3g}x"


def _get(d: dict, *keys):
    for key in keys:
        if not isinstance(d, dict) or key not in d:
            return None
        d = d[key]
    return d


def render_markdown(report: dict) -> str:
    meta, stages = report["meta"], report["stages"]
    env = stages.get("env", {})
    gpu_name = _get(env, "gpu", "name") or ("CUDA simulator" if meta["simulated"] else "?")
    lines = [f"# asofgpu GPU check: {meta['started']}, {gpu_name}", ""]
    if meta["simulated"]:
        lines += ["**Simulated** (numba's CUDA simulator, tiny sizes): the code paths ran; the "
                  "times mean nothing.", ""]
    lines += [f"Result: **{meta.get('result', 'running')}**; {meta.get('seconds', '…')} s of a "
              f"{meta['budget_s']} s budget. Raw numbers: gpu_check.json; output: gpu_check.log.",
              "", "| stage | status | seconds | note |", "|---|---|---|---|"]
    for name, entry in stages.items():
        note = entry.get("note", "")
        if entry.get("error"):
            note = (note + " " + entry["error"].strip().splitlines()[-1])[:200]
        lines.append(f"| {name} | {entry['status']} | {entry.get('seconds', '—')} | {note} |")
    lines += _md_env(env) + _md_install(stages.get("install"))
    lines += _md_pytest(stages.get("pytest")) + _md_compare(stages.get("compare"))
    lines += _md_bench(stages.get("bench"))
    return "\n".join(lines) + "\n"


def _md_env(env: dict) -> list[str]:
    if not env:
        return []
    lines = ["", "## Machine", ""]
    gpu = env.get("gpu")
    if gpu:
        lines.append(f"- GPU: {gpu['name']} (compute capability {gpu['compute_capability']}), "
                     f"{gpu['multiprocessors']} SMs, L2 {gpu['l2_cache_mb']:.0f} MB, "
                     f"{gpu['memory_gib']:.0f} GiB; CUDA driver API {gpu['driver_api']}, "
                     f"runtime {gpu['runtime_api']}")
    if isinstance(env.get("nvidia_smi"), dict):
        smi = env["nvidia_smi"]
        lines.append("- nvidia-smi: " + ", ".join(f"{k} {v}" for k, v in smi.items()))
    elif env.get("nvidia_smi"):
        lines.append(f"- nvidia-smi: {env['nvidia_smi']}")
    if env.get("machine"):
        lines.append(f"- host: {env['machine']}; numba threads {env.get('numba_threads')}")
    if env.get("python"):
        lines.append(f"- python {env['python']}")
    packages = env.get("packages") or {}
    if packages:
        absent = ", ".join(k for k, v in packages.items() if not v) or "none"
        lines.append("- packages: " + ", ".join(f"{k} {v}" for k, v in packages.items() if v)
                     + f"; absent: {absent}")
    return lines


def _md_install(entry: dict | None) -> list[str]:
    if not entry or entry["status"] == "skipped":
        return []
    lines = ["", "## Install", "", f"- {entry.get('action', '—')}; asofgpu imports from "
             f"{entry.get('installed_at')}"]
    for key in ("wheelhouse_pip", "pip"):
        if key in entry:
            lines.append(f"- `{entry[key]['command']}`: exit {entry[key]['rc']}")
    return lines


def _md_pytest(entry: dict | None) -> list[str]:
    if not entry or "command" not in entry:
        return []
    lines = ["", "## Test suite", "", f"`{entry['command']}`", ""]
    junit = entry.get("junit")
    if junit:
        lines.append(f"{junit['passed']} passed, {junit['failures']} failed, {junit['errors']} "
                     f"errors, {junit['skipped']} skipped in {junit['time_s']:.0f} s "
                     f"(exit {entry['rc']}; JUnit: gpu_check_pytest.xml)")
    else:
        lines.append(f"No JUnit report (exit {entry.get('rc')}, {entry['status']}): see "
                     f"gpu_check.log for how far it got.")
    if entry.get("left_out"):
        lines += ["", "Not run: these modules import, at their top, a package missing here "
                  "(they should skip with pytest.importorskip instead):"]
        lines += [f"- {path}: {', '.join(names)}" for path, names in entry["left_out"].items()]
    failed = (junit or {}).get("failed_tests") or []
    if failed:
        lines += ["", "Failed:"]
        lines += [f"- {f['test']} ({f['outcome']}): {f['message']}" for f in failed[:40]]
        if len(failed) > 40:
            lines.append(f"- … and {len(failed) - 40} more (gpu_check_pytest.xml)")
    return lines


def _md_compare(entry: dict | None) -> list[str]:
    if not entry or not entry.get("cases"):
        return []
    data = entry.get("data", {})
    lines = ["", f"## GPU and CPU gather maps ({data.get('left_rows', 0):,} left x "
             f"{data.get('right_rows', 0):,} right rows, {data.get('groups', 0):,} groups, 1% "
             f"nulls in every column)", "",
             "| key | null groups | options | matched | mismatches | GPU join | CPU join |",
             "|---|---|---|---|---|---|---|"]
    for case in entry["cases"]:
        options = ", ".join(f"{k}={v}" for k, v in case["options"].items())
        mismatch = str(case["mismatches"])
        if case.get("first_mismatch"):
            m = case["first_mismatch"]
            mismatch += f" (row {m['row']}: GPU {m['gpu']}, CPU {m['cpu']})"
        lines.append(f"| {case['key']} | {case['null_equality']} | {options} | "
                     f"{case['matched']:,} | {mismatch} | {case['gpu_s']:.2f} s | "
                     f"{case['cpu_s']:.2f} s |")
    return lines


def _md_bench(entry: dict | None) -> list[str]:
    if not entry or "sizes" not in entry:
        return []
    s = entry["sizes"]
    lines = ["", f"## Benchmark: {s['bench_left']:,} trades x {s['bench_right']:,} quotes x "
             f"{s['bench_groups']:,} groups", "",
             "Generated on the device: int64 times, int32 group codes (Zipf activity), four "
             "float64 quote columns; the right side time-sorted. GPU times by CUDA events, "
             "median of several runs after a warm-up; CPU times by the wall clock, one run."]
    copy, floor = entry.get("copy"), entry.get("floor")
    if copy:
        lines.append(f"\nDevice copy bandwidth: **{copy['bytes_per_s'] / 1e9:,.0f} GB/s** (a "
                     f"{copy['bytes'] / 2e9:.2f} GB device-to-device copy, bytes read + written; "
                     f"datasheet peak {PEAK_HBM_BYTES_S / 1e12:.1f} TB/s).")
    if floor:
        lines.append(f"Byte floor: gather map {floor['map_bytes'] / 1e9:.2f} "
                     f"GB = {_ms(floor['map_ms'])} at the measured bandwidth "
                     f"({_ms(floor['map_ms_at_peak'])} at peak); with four payload columns "
                     f"{floor['payload_bytes'] / 1e9:.2f} GB = {_ms(floor['payload_ms'])}.")
    orders = ("time-sorted", "shuffled")
    g = {o: entry.get(f"gpu_{o}") or {} for o in orders}
    c = {o: entry.get(f"cpu_{o}") or {} for o in orders}

    def row(label, cells):
        return "| " + " | ".join([label, *("—" if c is None else c for c in cells)]) + " |"

    def values(side, *keys):  # one per left order, None where it is missing
        return [_get(side[o], *keys) for o in orders]

    def each(side, fmt, *keys):
        return [None if v is None else fmt(v) for v in values(side, *keys)]

    lines += ["", "| | time-sorted left | shuffled left |", "|---|---|---|",
              row("GPU prepare (AsofJoin of the quotes)",
                  [_ms(_get(entry, "gpu_prepare", "ms")), "(same)"]),
              row("GPU join(): gather map, end to end (incl. host group lookup)",
                  each(g, _ms, "join", "ms")),
              row("GPU probe kernel alone: gather map", each(g, _ms, "probe", "ms")),
              row("&nbsp; ratio to its byte floor", each(g, _x, "probe_floor_ratio")),
              row("GPU gather of 4 float64 columns (cupy take)", each(g, _ms, "gather4", "ms")),
              row("GPU map + 4 columns (probe + gather)", each(g, _ms, "map_and_payload_ms")),
              row("&nbsp; ratio to its byte floor", each(g, _x, "map_and_payload_floor_ratio")),
              row("asofgpu.gather of 4 columns (host, Arrow)",
                  [_ms(_get(entry, "host_gather4", "ms")), "—"]),
              row("CPU prepare", [_ms(_get(entry, "cpu_prepare", "ms")), "(same)"]),
              row("CPU join(): gather map", [_cpu_join(c[o]) for o in orders]),
              row("CPU probe alone", each(c, _ms, "probe_ms_full")),
              row("**speed-up, join()** (CPU / GPU)", each(c, _x, "speedup_join")),
              row("**speed-up, probe** (CPU / GPU)", each(c, _x, "speedup_probe")),
              row("GPU map equals CPU map", each(c, str, "map_equals_gpu"))]
    lines += ["", "Goals (issue #5), time-sorted / shuffled left: the gather map within 3x of "
              "its byte floor: " + _goal(values(g, "probe_floor_ratio"), lambda r: r <= 3)
              + "; at least 50x faster than the CPU backend: join() "
              + _goal(values(c, "speedup_join"), lambda r: r >= 50) + ", probe "
              + _goal(values(c, "speedup_probe"), lambda r: r >= 50) + "."]
    for o in orders:
        error = g[o].get("probe_error") or c[o].get("probe_error")
        if error:
            lines.append(f"\n{o}: the probe alone could not be timed: "
                         + error.strip().splitlines()[-1])
    return lines


def _goal(ratios: list, met) -> str:
    if any(r is None for r in ratios):
        return "not measured"
    verdict = "met" if all(met(r) for r in ratios) else "missed"
    return f"{' / '.join(f'{r:.3g}x' for r in ratios)} ({verdict})"


def _cpu_join(c: dict) -> str:
    if "join_ms_full" not in c:
        return "—"
    if c.get("full_run"):
        return _ms(c["join_ms_full"])
    return f"{_ms(c['join_ms_full'])} (scaled from {c['slice_rows']:,} rows)"


# ---------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--simulate", action="store_true",
                        help="tiny sizes in numba's CUDA simulator (no GPU; times mean nothing)")
    parser.add_argument("--plant-mismatch", action="store_true",
                        help="test hook: corrupt one entry of the first GPU map before comparing")
    parser.add_argument("--budget", type=float, default=450,
                        help="seconds for the stages (default 450: with the grace a stopped "
                        "stage gets, the run ends within 8 minutes)")
    parser.add_argument("--results", help="where the reports go (default bench/results/; a "
                        "temporary folder under --simulate); also $OUT when set")
    parser.add_argument("--stages", default=",".join(STAGES),
                        help=f"a comma-separated subset of {','.join(STAGES)}")
    parser.add_argument("--run-stage", choices=sorted(STAGE_FUNCTIONS), help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    parser.add_argument("--deadline", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run_stage:  # inside one stage's process
        ctx = StageContext(args.simulate, args.plant_mismatch, args.deadline)
        return run_stage(args.run_stage, Path(args.result), ctx)
    stages = [s.strip() for s in args.stages.split(",") if s.strip()]
    unknown = sorted(set(stages) - set(STAGES))
    if unknown:
        parser.error(f"unknown stage(s) {', '.join(unknown)}; choose from {', '.join(STAGES)}")
    return Run(args).run_all([s for s in STAGES if s in stages])


if __name__ == "__main__":
    sys.exit(main())
