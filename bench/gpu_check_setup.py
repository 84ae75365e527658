"""The GPU check's first two stages. install: the wheels in bench/wheelhouse/, then this
checkout installed editable, offline, unless it is installed so already; then the command line
checked. env: the GPU (name, memory, L2, clocks), the driver, the package versions."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import common
from common import ROOT
from gpu_check_stage import Recorder, StageContext

WHEELHOUSE = ROOT / "bench" / "wheelhouse"
PACKAGES = (
    "numpy",
    "numba",
    "numba-cuda",
    "cupy-cuda13x",
    "cupy-cuda12x",
    "pyarrow",
    "pandas",
    "polars",
    "duckdb",
    "pytest",
    "hypothesis",
    "pytest-xdist",
    "pytest-timeout",
    "setuptools",
    "pip",
)


def gpu_name(props: dict) -> str:
    """A GPU's name from its properties (``cupy.cuda.runtime.getDeviceProperties``: bytes
    in some cupy versions)."""
    name = props.get("name", b"")
    return name.decode() if isinstance(name, bytes) else str(name)


def stage_env(ctx: StageContext, rec: Recorder) -> None:
    rec["python"] = f"{sys.version.split()[0]} ({sys.executable})"
    rec["machine"] = f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}"
    rec["packages"] = common.versions(PACKAGES)
    rec["nvidia_smi"] = _nvidia_smi()
    import numba

    rec["numba_threads"] = numba.config.NUMBA_NUM_THREADS
    from asofgpu._backend import cuda_usable, get_backend, numba_cuda_blocked

    if ctx.simulate:
        rec["simulator"] = get_backend("cuda").simulated
        if not rec["simulator"]:
            rec["status"] = "failed"
            rec["note"] = "--simulate needs NUMBA_ENABLE_CUDASIM=1 in the stage's environment"
        return
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(0)
    rec["gpu"] = {
        "name": gpu_name(props),
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
        why = numba_cuda_blocked()  # the image's numpy 2.5.2 with numba-cuda 0.30.4, once
        rec["note"] = (
            "asofgpu finds no usable GPU (cuda_usable() is False): every GPU result "
            "below is missing or wrong"
            + (f". {why} (bench/wheelhouse/ may carry one)" if why else "")
        )


def _nvidia_smi() -> dict | str:
    fields = (
        "name,driver_version,memory.total,memory.used,clocks.sm,clocks.mem,clocks.max.sm,"
        "clocks.max.mem,temperature.gpu,power.draw"
    )
    if shutil.which("nvidia-smi") is None:
        return "nvidia-smi not found"
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except subprocess.TimeoutExpired:
        return "nvidia-smi did not answer within 20 s"
    if out.returncode:
        return f"nvidia-smi failed: {out.stderr.strip()[:300]}"
    first = out.stdout.strip().splitlines()[0]
    return dict(zip(fields.split(","), (v.strip() for v in first.split(","))))


# ---- stage: install


def stage_install(ctx: StageContext, rec: Recorder) -> None:
    wheels = sorted(WHEELHOUSE.glob("*.whl"))
    if wheels:  # what the machine lacks or holds too new: make gpu-wheelhouse fetches them
        rec["wheelhouse"] = [w.name for w in wheels]
        for wheel in wheels:  # one at a time: a wheel the machine refuses stops no other
            _pip(rec, f"wheelhouse_pip {wheel.name}", ["--no-index", "--no-deps", str(wheel)], ctx)
    before = _installed_at()
    rec["installed_before"] = before
    if before and Path(before).resolve().is_relative_to(ROOT):
        rec["action"] = "none: this checkout is installed editable already"
    else:
        _pip(rec, "pip", ["--no-deps", "--no-build-isolation", "--no-index", "-e", str(ROOT)], ctx)
        rec["action"] = "pip install --dry-run (simulated)" if ctx.simulate else "pip install -e"
    after = _installed_at()
    rec["installed_at"] = after
    if not ctx.simulate and not (after and Path(after).resolve().is_relative_to(ROOT)):
        rec["status"] = "failed"
        rec["note"] = f"after the install, asofgpu imports from {after!r}, not from {ROOT}"
        return
    # The command line works from anywhere (asofgpu demo in the Docker image, for one).
    cli = subprocess.run(
        [sys.executable, "-m", "asofgpu", "--help"],
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),
        env=_env_without_pythonpath(),
    )
    rec["cli_help_rc"] = cli.returncode
    if cli.returncode and not ctx.simulate:
        rec["status"] = "failed"
        rec["note"] = f"python -m asofgpu --help failed: {cli.stderr.strip()[-500:]}"


def _pip(rec: Recorder, key: str, args: list[str], ctx: StageContext) -> None:
    cmd = [sys.executable, "-m", "pip", "install", "--no-input", "--disable-pip-version-check"]
    if ctx.simulate:
        cmd.append("--dry-run")  # here the check must not change the environment it runs in
    out = subprocess.run(
        cmd + args, capture_output=True, text=True, timeout=max(5, ctx.time_left() - 5)
    )
    print(out.stdout + out.stderr)
    rec[key] = {
        "command": " ".join(cmd + args),
        "rc": out.returncode,
        "output_tail": (out.stdout + out.stderr)[-2000:],
    }
    if out.returncode:
        rec["status"] = "failed"


def _env_without_pythonpath() -> dict:
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _installed_at() -> str | None:
    """Where ``import asofgpu`` leads from outside the checkout (None: not installed)."""
    out = subprocess.run(
        # asofgpu.table: the library itself, which import asofgpu alone does not load
        [sys.executable, "-c", "import asofgpu.table; print(asofgpu.__file__)"],
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),
        env=_env_without_pythonpath(),
    )
    if out.returncode:
        return None
    return out.stdout.strip() or None
