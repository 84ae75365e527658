"""The GPU check (bench/gpu_check.py, ``make gpu-check``) run in numba's CUDA simulator: every
stage runs at tiny sizes, the reports land in the results folder and in $OUT, and the GPU/CPU
comparison catches a mismatch planted through its test hook (a minute: marked slow). Then the
pytest stage's module check on its own (bench/gpu_check_pytest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
SCRIPT = BENCH / "gpu_check.py"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))  # the script's modules, imported as the script does
import gpu_check_orchestrator  # noqa: E402
import gpu_check_pytest  # noqa: E402


@pytest.fixture(scope="module")
def simulated_run(tmp_path_factory):
    """One simulated run (about a minute on two cores), shared by the tests below."""
    tmp = tmp_path_factory.mktemp("gpu_check")
    # The simulator must be chosen before numba is imported: in the environment.
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", OUT=str(tmp / "out"))
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--simulate",
            "--plant-mismatch",
            "--results",
            str(tmp / "results"),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = json.loads((tmp / "results" / "gpu_check.json").read_text())
    markdown = (tmp / "results" / "gpu_check.md").read_text()
    return proc, tmp, report, markdown


@pytest.mark.slow
def test_every_stage_runs_and_writes_its_reports(simulated_run):
    proc, tmp, report, markdown = simulated_run
    for folder in (tmp / "results", tmp / "out"):
        for name in gpu_check_orchestrator.REPORT_FILES:
            assert (folder / name).stat().st_size > 0, proc.stdout[-3000:]
    statuses = {name: stage["status"] for name, stage in report["stages"].items()}
    # compare fails: the planted mismatch; every other stage passes.
    assert statuses == {
        "env": "passed",
        "install": "passed",
        "pytest": "passed",
        "compare": "failed",
        "bench": "passed",
        "enrich": "passed",
    }, proc.stdout[-3000:]
    assert report["meta"]["simulated"] and report["meta"]["result"] == "failed: compare"
    junit = report["stages"]["pytest"]["junit"]
    assert junit["tests"] > 0 and junit["failures"] == junit["errors"] == 0
    bench = report["stages"]["bench"]
    for order in ("time-sorted", "shuffled"):
        gpu, cpu = bench[f"gpu_{order}"], bench[f"cpu_{order}"]
        assert gpu["probe_equals_join"] and cpu["map_equals_gpu"]
        for measured in (
            gpu["join"]["ms"],
            gpu["probe"]["ms"],
            gpu["gather4"]["ms"],
            cpu["join_ms_full"],
            cpu["speedup_join"],
            cpu["speedup_probe"],
        ):
            assert measured > 0
    assert bench["cpu_window"]["equals_gpu"] and bench["gpu_window"]["positions"] > 0
    assert bench["gpu_window"]["reduce"]["ms"] > 0
    for part in ("left_key", "left_groups"):
        assert bench["gpu_time-sorted"][part]["ms"] > 0
    first = bench["first_calls"]  # two new processes, the second on the first's cache
    assert first["same_answers"] and first["cold"]["first_joins_s"] > 0
    assert first["cached"]["answer"][2] > 0  # windows were counted
    assert bench["floor"]["map_bytes"] == 256 * (8 + 4 + 4) + 64 * 8 + 9 * 8
    assert bench["copy"]["bytes_per_s"] > 0
    enrich = report["stages"]["enrich"]  # whole processes, cuda and cpu taking turns
    assert enrich["same_rows"] and enrich["footer_marked"] and enrich["rows"]["trades"] > 0
    for device in ("cuda", "cpu"):
        assert len(enrich["runs"][device]) == 2 and enrich["summary"][device]["median_s"] > 0
    assert enrich["cuda_log"][-1].split() == ["backend", "cuda"]  # it joined on the device
    for heading in (
        "## Test suite",
        "## GPU and CPU gather maps",
        "## Benchmark",
        "Byte floor",
        "Window join",
        "## `asofgpu enrich`, parquet in and out",
    ):
        assert heading in markdown
    assert "**Simulated**" in markdown


@pytest.mark.slow
def test_the_comparison_catches_a_planted_mismatch(simulated_run):
    proc, _, report, markdown = simulated_run
    assert proc.returncode == 1
    cases = report["stages"]["compare"]["cases"]
    strategies = {case["options"]["strategy"] for case in cases}
    assert strategies == {"backward", "forward", "nearest"} and len(cases) == 21
    planted, rest = cases[0], cases[1:]
    assert planted["mismatches"] == 1
    assert planted["first_mismatch"]["row"] == report["stages"]["compare"]["data"]["left_rows"] // 2
    assert all(case["mismatches"] == 0 for case in rest)
    assert f"1 (row {planted['first_mismatch']['row']}: GPU" in markdown


def test_modules_that_import_a_missing_package_are_named(tmp_path):
    module = tmp_path / "test_needs_peers.py"
    module.write_text(
        "import os\n"
        "import surely_not_installed_peer.sub as peer\n"
        "from numpy import array\n"
        "from . import sibling\n"
        "try:\n"
        "    import guarded_missing_peer\n"
        "except ImportError:\n"
        "    guarded_missing_peer = None\n"
        "def test_later():\n"
        "    import deferred_missing_peer\n"
    )
    skipping = tmp_path / "test_skips_cleanly.py"
    skipping.write_text(
        "import pytest\n"
        "peer = pytest.importorskip('surely_not_installed_peer.sub', reason='needs the peer')\n"
        "import surely_not_installed_peer\n"
    )
    assert gpu_check_pytest.missing_imports([module, skipping]) == {
        str(module): ["surely_not_installed_peer"]
    }


def test_the_checkouts_own_package_is_never_missing_even_where_it_is_not_installed(
    tmp_path, monkeypatch
):
    # On the lent GPU the orchestrator's interpreter predates the install stage's editable
    # install, so it cannot find asofgpu; every stage runs with the checkout on PYTHONPATH.
    module = tmp_path / "test_uses_the_package.py"
    module.write_text(
        "import asofgpu\nfrom asofgpu import join\nimport surely_not_installed_peer\n"
    )
    real_find_spec = gpu_check_pytest.importlib.util.find_spec
    monkeypatch.setattr(
        gpu_check_pytest.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "asofgpu" else real_find_spec(name, *a),
    )
    assert gpu_check_pytest.missing_imports([module]) == {
        str(module): ["surely_not_installed_peer"]
    }


@pytest.mark.parametrize(
    ("mode", "workers"), [("Exclusive_Process", 1), ("Prohibited", 1), ("", 1), ("Default", None)]
)
def test_the_gpu_pytest_stage_runs_what_the_gpu_adds_in_processes_its_mode_allows(
    tmp_path, mode, workers
):
    cmd, _ = gpu_check_pytest.pytest_command(False, tmp_path / "j.xml", compute_mode=mode)
    assert cmd[cmd.index("-m", 3) + 1] == "(gpu or cuda) and not slow"  # after "-m pytest"
    if workers == 1:
        assert "-n" not in cmd
    elif "-n" in cmd:  # with pytest-xdist installed
        assert 1 <= int(cmd[cmd.index("-n") + 1]) <= gpu_check_pytest.MOST_WORKERS


def test_cuda_cases_are_marked_cuda_at_collection():
    """The gpu-check's selection rests on it: every case of the device fixture's cuda param
    is marked ``cuda``, and no other."""

    def collected(*marker):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "--collect-only",
                "-q",
                "-p",
                "no:cacheprovider",
                *marker,
                "tests/test_sentinel.py",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return [line for line in done.stdout.splitlines() if "::" in line]

    every, cuda = collected(), collected("-m", "cuda")
    assert cuda and all("cuda" in line for line in cuda)
    assert sorted(cuda) == sorted(line for line in every if "[cuda" in line)


def test_the_report_renders_stages_cut_short():
    """An enrich stage stopped in its first cpu run, errors without output, a GPU not in the
    datasheet table: the report still renders (an IndexError there lost the device's run)."""
    import gpu_check_report

    report = {
        "meta": {"started": "now", "budget_s": 450, "simulated": False},
        "stages": {
            "env": {"status": "passed"},
            "compare": {"status": "failed", "error": "\n  \n"},
            "bench": {
                "status": "failed",
                "sizes": {"bench_left": 100, "bench_right": 10, "bench_groups": 2},
                "first_calls": {"cold": {"error": ""}},
                "copy": {"bytes_per_s": 2e12, "bytes": 4e9},
                "floor": {
                    "map_bytes": 1e9,
                    "map_ms": 0.5,
                    "payload_bytes": 3e9,
                    "payload_ms": 1.5,
                },
                "peak_bytes_per_s": None,
                "gpu_window": {"error": "\n"},
            },
            "enrich": {"status": "timeout", "runs": {"cuda": [3.5], "cpu": []}},
        },
    }
    markdown = gpu_check_report.render_markdown(report)
    assert "| compare | failed | — |  (no output) |" in markdown
    assert "| cpu | — | — |  | — |" in markdown
    assert "cold: failed ((no output))" in markdown
    assert "Window join on the GPU failed: (no output)" in markdown
    assert "bytes read + written)." in markdown and "at peak" not in markdown


def test_a_report_that_cannot_render_still_leaves_the_results_in_out(tmp_path, monkeypatch):
    """The JSON and the log reach $OUT even when the markdown cannot be rendered; the
    markdown then says where the results are."""

    def broken(report):
        raise KeyError("surprise")

    monkeypatch.setenv("OUT", str(tmp_path / "out"))
    monkeypatch.setattr(gpu_check_orchestrator, "render_markdown", broken)
    args = types.SimpleNamespace(
        simulate=True, plant_mismatch=False, results=str(tmp_path / "r"), budget=10
    )
    run = gpu_check_orchestrator.Run(args)
    run.report["stages"]["env"] = {"status": "passed", "seconds": 1.0}
    run.write()
    saved = json.loads((tmp_path / "out" / "gpu_check.json").read_text())
    assert saved["stages"]["env"]["status"] == "passed"
    markdown = (tmp_path / "out" / "gpu_check.md").read_text()
    assert "could not be rendered (KeyError: 'surprise'); gpu_check.json holds" in markdown


@pytest.mark.parametrize(
    ("name", "peak"),
    [
        ("NVIDIA H200", 4.8e12),
        ("NVIDIA H100 80GB HBM3", 3.35e12),
        ("NVIDIA H100 PCIe", 2.0e12),
        ("NVIDIA H100 NVL", 3.9e12),
        ("NVIDIA A100-SXM4-80GB", None),
        ("NVIDIA GH200 480GB", None),
        (None, None),
    ],
)
def test_the_datasheet_peak_is_the_gpus_own(name, peak):
    import gpu_check_bench

    assert gpu_check_bench.peak_bandwidth(name) == peak


def test_a_first_call_that_prints_no_result_is_an_error_not_a_crash(monkeypatch):
    import gpu_check_bench

    class Done:
        returncode, stdout, stderr = 0, "numba says hello\n", ""

    import subprocess as the_module  # (first_calls imports it where it runs)

    monkeypatch.setattr(the_module, "run", lambda *a, **k: Done())
    ctx = type("Ctx", (), {"simulate": True, "time_left": lambda self: 100})()
    found = gpu_check_bench.first_calls(ctx)
    assert found["cold"]["error"].startswith("no result on its last line: 'numba says hello")
    assert "cached" not in found
