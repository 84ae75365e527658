"""The GPU check's pytest stage, its two ends: the command (what the GPU adds to CI's runs:
gpu-marked tests and cuda-backend cases, less the modules that import at their top a package
missing here, which are named) and the summary read back from the JUnit XML it writes."""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from common import ROOT


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
        if (
            name == "importorskip"
            and isinstance(first, ast.Constant)
            and isinstance(first.value, str)
        ):
            return first.value.split(".")[0]
    return None


def _absent(name: str, path: Path) -> bool:
    """Not installed, nor one of this checkout's own packages (every stage runs with the
    checkout on PYTHONPATH, while this process may not have it on its path: an editable
    install made by the install stage is seen only by interpreters started after it), nor
    (for a test) a module in tests/: pytest puts that folder on the path for conftest and
    oracle. A package's own absolute imports never resolve beside the file."""
    if (ROOT / name / "__init__.py").exists():
        return False
    tests = ROOT / "tests"
    if path.parent == tests and ((tests / f"{name}.py").exists() or (tests / name).is_dir()):
        return False
    return importlib.util.find_spec(name) is None


# What a GPU adds to CI's runs: the gpu-marked tests and every case on the cuda backend
# (tests/conftest.py marks those ``cuda``). The CPU cases, and the slow tool runs, CI has run.
GPU_SELECTION = "(gpu or cuda) and not slow"
MOST_WORKERS = 4  # xdist workers on one GPU: each holds a CUDA context and compiles alone


def pytest_command(
    simulate: bool, junit: Path, compute_mode: str | None = None
) -> tuple[list[str], dict]:
    """The pytest stage's command and the test modules it leaves out (their missing imports).
    ``compute_mode``: nvidia-smi's (found here when None); under an exclusive mode one
    process at a time may hold the GPU, so the tests run in one."""
    if simulate:  # the gpu tests (skipped) and a quick one: the suite is far too slow there
        targets = [ROOT / "tests" / "test_gpu.py", ROOT / "tests" / "test_layout.py"]
        selection = ["-m", "gpu or not gpu", "-k", "test_gpu or front_end"]  # not "-k gpu":
        # it matches "asofgpu" too
    else:
        targets = sorted((ROOT / "tests").glob("test_*.py"))
        selection = ["-m", GPU_SELECTION]
    importlib.invalidate_caches()  # the install stage may have added packages since
    left_out = missing_imports(targets)
    # The check's own test reruns this script in the simulator: nothing about the GPU.
    ignores = [ROOT / "tests" / "test_gpu_check.py", *(ROOT / p for p in left_out)]
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        *selection,
        "-p",
        "no:cacheprovider",
        "-q",
        "--durations=15",
        f"--junitxml={junit}",
        *(f"--ignore={p}" for p in ignores),
    ]
    if not simulate:
        workers = gpu_workers(_compute_mode() if compute_mode is None else compute_mode)
        if workers > 1 and importlib.util.find_spec("xdist"):
            cmd += ["-n", str(workers)]
        if importlib.util.find_spec("pytest_timeout"):  # one hung test must not take it all
            cmd += ["--timeout=120"]
        cmd += ["tests"]
    else:
        cmd += [str(t.relative_to(ROOT)) for t in targets]
    return cmd, left_out


def gpu_workers(compute_mode: str) -> int:
    """How many pytest processes share the GPU: one under an exclusive compute mode (a second
    process could not create its context) or when the mode is unknown, else up to
    ``MOST_WORKERS``.

    >>> gpu_workers("Default") > 0, gpu_workers("Exclusive_Process"), gpu_workers("")
    (True, 1, 1)
    """
    if compute_mode.strip().lower() != "default":
        return 1
    return max(1, min(MOST_WORKERS, os.cpu_count() or 1))


def _compute_mode() -> str:
    """nvidia-smi's compute mode of the first GPU ("" when it cannot say). Asked of
    nvidia-smi, not of CUDA: a context here would hold an exclusive GPU against the tests."""
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=compute_mode", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    lines = done.stdout.strip().splitlines()
    return lines[0] if done.returncode == 0 and lines else ""


def junit_summary(path: Path) -> dict | None:
    """Counts and the failed tests from pytest's JUnit XML (None when it was not written)."""
    if not path.exists():
        return None
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    counts = {
        k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")
    }
    counts["time_s"] = sum(float(s.get("time", 0)) for s in suites)
    counts["passed"] = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    failed = []
    for case in root.iter("testcase"):
        for outcome in ("failure", "error"):
            node = case.find(outcome)
            if node is not None:
                message = (node.get("message") or "").strip().splitlines()
                failed.append(
                    {
                        "test": f"{case.get('classname')}::{case.get('name')}",
                        "outcome": outcome,
                        "message": message[0][:300] if message else "",
                    }
                )
    counts["failed_tests"] = failed
    return counts
