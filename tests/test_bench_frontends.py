"""bench/frontends.py (make bench's front-end section) on a tiny day: a record and a table row
for every case, the comparison that stops a wrong answer, and its options."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

for needed in ("pandas", "polars", "psutil"):
    pytest.importorskip(needed)  # the `bench` extra
import pandas  # noqa: E402
import polars  # noqa: E402

BENCH = Path(__file__).resolve().parents[1] / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))  # the scripts' modules, imported as the scripts do
import common  # noqa: E402
import frontends  # noqa: E402


@pytest.mark.slow
def test_every_case_is_measured_checked_and_reported(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            str(BENCH / "frontends.py"),
            "--quick",
            "--size",
            "20Kx20K",
            "--data",
            str(tmp_path / "data"),
            "--out",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "out" / "frontends.json").read_text())
    assert list(report["cases"]) == list(frontends.CASES)
    for row in report["cases"].values():
        assert len(row["runs"]["ours"]) == len(row["runs"]["theirs"]) == 1
        assert row["ratio"] == pytest.approx(row["ours"] / row["theirs"])
    table = (tmp_path / "out" / "frontends.md").read_text()
    assert table.count("| at most ") == len(frontends.CASES)
    assert "20,000 quotes x 20,000 trades" in table
    # The originals' versions are part of the result: their times move between releases.
    assert report["versions"]["polars"] == polars.__version__
    assert f"pandas {pandas.__version__}, polars {polars.__version__}" in table


@pytest.mark.usefixtures("bench_answers_differ")  # asofgpu's result 1, pandas' 2
def test_a_wrong_answer_stops_the_bench():
    with pytest.raises(common.BenchError, match="pandas: asofgpu's result differs"):
        frontends.worker("pandas", "t.parquet", "q.parquet", 1)


def test_an_unknown_case_is_refused(capsys):
    with pytest.raises(SystemExit) as exit_:
        frontends.options(["--cases", "pandas,spark"])
    assert exit_.value.code == 2 and "--cases: unknown spark" in capsys.readouterr().err
