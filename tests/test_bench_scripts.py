"""bench/splice.py and bench/window.py (make bench's peer-script sections) on a tiny day: every
system runs, the outputs are checked against asofgpu's, the report is written; the
harness's check (bench/script_bench.py) stops a wrong answer; bench/tolerance.py runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

for needed in ("polars", "duckdb"):
    pytest.importorskip(needed)  # the `bench` extra

BENCH = Path(__file__).resolve().parents[1] / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))  # the scripts' modules, imported as the scripts do
import script_bench  # noqa: E402


@pytest.mark.slow
@pytest.mark.parametrize("script", ["splice", "window"])
def test_every_system_runs_agrees_and_is_reported(tmp_path, script):
    done = subprocess.run(
        [sys.executable, str(BENCH / f"{script}.py"), "--quick", "--size", "20Kx2K"]
        + ["--runs", "2", "--data", str(tmp_path / "data"), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "out" / f"{script}.json").read_text())
    assert list(report["systems"]) == ["asofgpu", "polars", "duckdb"]
    for name, row in report["systems"].items():
        once = script == "window" and name == "duckdb"  # BENCH.slow: one timed call
        assert len(row["times"]) == (1 if once else 2) and row["median"] > 0
    table = (tmp_path / "out" / f"{script}.md").read_text()
    assert "20,000 quotes x 2,000 trades" in table and "Against the faster peer" in table


@pytest.mark.slow
def test_the_tolerance_bench_measures_and_reports(tmp_path):
    done = subprocess.run(
        [sys.executable, str(BENCH / "tolerance.py"), "--quick", "--size", "20Kx2K"]
        + ["--data", str(tmp_path / "data"), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "out" / "tolerance.json").read_text())
    assert len(report["cases"]) == 6 and all(c["median"] > 0 for c in report["cases"].values())
    assert (tmp_path / "out" / "tolerance.md").read_text().count("at most 1.3x") == 4


@pytest.mark.slow
def test_the_strategies_bench_checks_and_reports(tmp_path):
    done = subprocess.run(
        [sys.executable, str(BENCH / "strategies.py"), "--quick", "--size", "20Kx5K"]
        + ["--data", str(tmp_path / "data"), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "out" / "strategies.json").read_text())
    cases = {(c["peer"], c["strategy"], c["by"]) for c in report["cases"]}
    assert len(cases) == 12 and all(c["ours"] > 0 < c["theirs"] for c in report["cases"])
    assert (tmp_path / "out" / "strategies.md").read_text().count("| nearest | (none) |") == 2


def test_fingerprints_agree_only_within_the_tolerance_of_their_approximate_sums():
    import pyarrow as pa

    exact = pa.table({"n": [1, 2], "m": [0.1, 0.2]})
    base = script_bench.fingerprint(exact, approx=("m",))
    near = script_bench.fingerprint(pa.table({"n": [1, 2], "m": [0.1, 0.2 + 1e-15]}), ("m",))
    far = script_bench.fingerprint(pa.table({"n": [1, 2], "m": [0.1, 0.21]}), ("m",))
    other = script_bench.fingerprint(pa.table({"n": [1, 3], "m": [0.1, 0.2]}), ("m",))
    assert script_bench._agree(near, base)
    assert not script_bench._agree(far, base)
    assert not script_bench._agree(other, base)
    # without approx, floats compare bit for bit
    assert script_bench.fingerprint(exact) != script_bench.fingerprint(
        pa.table({"n": [1, 2], "m": [0.1, 0.2 + 1e-15]})
    )
