"""The GPU check's pytest stage, its two ends: the command (the whole suite, less the modules
that import at their top a package missing here, which are named) and the summary read back
from the JUnit XML it writes."""

from __future__ import annotations

import ast
import importlib.util
import os
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
