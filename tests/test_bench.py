"""bench/run.py (make bench) on tiny data: the three result files, the systems' turns, the
correctness check that stops a wrong answer, and clear errors for bad options; its parts
(bench/bench_plan.py, peer_turns.py, bench_report.py) on their own. Each worker is a process of
its own, so these runs are kept to a handful of processes and marked slow."""

from __future__ import annotations

import importlib.util
import json
import queue
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import pytest

for needed in ("duckdb", "polars", "pandas", "matplotlib", "psutil", "rich"):
    pytest.importorskip(needed)  # the `bench` extra

BENCH = Path(__file__).resolve().parents[1] / "bench"
RUN = BENCH / "run.py"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))  # the scripts' modules, imported as the scripts do
import bench_data  # noqa: E402
import bench_plan  # noqa: E402
import bench_report  # noqa: E402
import first_call  # noqa: E402
import peer_turns  # noqa: E402
import peers  # noqa: E402


def bench(*args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            str(RUN),
            "--quick",
            "--sizes",
            "2000x1000",
            "--data",
            str(tmp_path / "data"),
            "--out",
            str(tmp_path / "out"),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_writes_the_table_the_numbers_and_the_plot(tmp_path):
    done = bench("--orders", "sorted", tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == ["bench.json", "bench.md", "bench.png"]
    report = json.loads((out / "bench.json").read_text())
    cells = {(e["mode"], e["system"]): e for e in report["results"]}
    systems = ["asofgpu", "polars", "pandas", "duckdb", "pyarrow"]
    systems += ["chdb"] if importlib.util.find_spec("chdb") else []  # make bench installs it
    assert report["settings"]["not_installed"] == ([] if "chdb" in systems else ["chdb"])
    assert set(cells) == {(m, s) for m in ("one-shot", "prepared") for s in systems}
    assert all(
        e["status"] == "ok" and e["median_s"] > 0 and e["peak_rss_mib"] > 0 for e in cells.values()
    )
    assert cells["prepared", "asofgpu"]["prepare_s"] > 0
    assert all(e["checked_against"] == "asofgpu" for e in cells.values())
    assert all(
        len(e["page_faults"]) == len(e["times_s"]) >= 1
        and all(isinstance(f, int) and f >= 0 for f in e["page_faults"])
        for e in cells.values()
    )
    table = (out / "bench.md").read_text()
    assert "| 2K × 1K | sorted | one-shot |" in table and "asofgpu / fastest peer" in table
    assert "| 2K × 1K | sorted | prepared, 1K probed |" in table
    assert (out / "bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_the_by_symbol_order_sorts_both_sides_by_symbol_then_time(tmp_path):
    """Each side's rows by symbol, then time, the trades keeping their ids; every system's
    answer equal to asofgpu's (pandas sorts by time first; polars needs no sort)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    done = bench(
        "--orders", "by-symbol", "--systems", "asofgpu,polars,pandas,duckdb", tmp_path=tmp_path
    )
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "data" / "2Kx1K-by-symbol-1000sym-seed0"
    for name in ("quotes.parquet", "trades.parquet"):
        table = pq.read_table(folder / name)
        order = [("symbol", "ascending"), ("time", "ascending")]
        assert table.equals(table.take(pc.sort_indices(table, order)))
    ids = pq.read_table(folder / "trades.parquet")["trade_id"].to_pylist()
    assert sorted(ids) == list(range(1_000)) and ids != sorted(ids)
    table = (tmp_path / "out" / "bench.md").read_text()
    assert "| 2K × 1K | by-symbol | one-shot |" in table


@pytest.mark.slow
def test_the_systems_on_one_pair_of_files_take_turns(tmp_path):
    """Each round is one timed run of every job on the same files, begun by the next one:
    a drift of the machine's speed falls on all systems alike."""
    done = bench(
        "--orders", "sorted", "--systems", "asofgpu,polars", "--runs", "2", tmp_path=tmp_path
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "out" / "bench.json").read_text())
    # 1K trades are fewer than the probe batch: the prepared job shares the one-shot files.
    runs = sorted(
        (at, e["mode"], e["system"])
        for e in report["results"]
        if not (e["mode"] == "prepared" and e["system"] == "polars")
        for at in e["started_at"]
    )
    jobs = ["one-shot asofgpu", "one-shot polars", "prepared asofgpu"]
    assert [f"{mode} {system}" for _, mode, system in runs] == jobs + jobs[1:] + jobs[:1]


@pytest.mark.slow
def test_a_wrong_answer_fails_loudly_and_writes_nothing(tmp_path):
    # polars sorts shuffled input, so its answer also has to be lined up by trade first.
    done = bench(
        "--orders",
        "shuffled",
        "--systems",
        "asofgpu,polars",
        "--corrupt-for-test",
        "polars",
        tmp_path=tmp_path,
    )
    assert done.returncode == 1
    assert "WRONG ANSWER: polars one-shot 2Kx1K shuffled" in done.stderr
    assert "differs from asofgpu's in 1 of 1,000 trades" in done.stderr
    assert not (tmp_path / "out").exists()


def test_a_system_is_not_run_past_its_size_limit():
    """pyarrow's join_asof takes minutes at 10M rows: its cells there are planned as not
    run, and say so, while the other systems' run."""
    small, large = (
        bench_data.Dataset(q, t, "sorted", Path(f"{q}q"), Path(f"{q}t"), Path(f"{q}t"), t)
        for q, t in ((1000, 1000), (peers.MAX_ROWS["pyarrow"] + 1, 1000))
    )
    jobs, cells = bench_plan.plan([small, large], ["asofgpu", "pyarrow"])
    skipped = [(c["dataset"], c["mode"]) for c in cells if c["job"] is None]
    assert skipped == [(large, "one-shot"), (large, "prepared")]
    assert {(j.system, j.dataset) for j in jobs} == {
        ("asofgpu", small),
        ("pyarrow", small),
        ("asofgpu", large),
    }
    entry = {"system": "pyarrow", "status": "too large"}
    assert bench_report.cell_text(entry, 300, 16) == "not run (> 1M rows)"


def test_a_step_that_ends_past_its_limit_is_a_timeout():
    """The parent reads the clock while the worker is silent; a step whose event comes in
    after its limit, before the next look, is over time all the same (a fast worker sends
    its events less than 0.25 s apart, and its steps went unchecked)."""
    worker = peer_turns.WorkerProcess.__new__(peer_turns.WorkerProcess)  # no process needed
    worker.job, worker.on_event = None, lambda *event: None
    worker.timeout, worker.limit_bytes = 1e-6, 2**40
    worker.record = {"status": "ok", "times_s": [], "started_at": []}
    worker.proc, worker.stderr = types.SimpleNamespace(poll=lambda: 0), tempfile.TemporaryFile()
    worker.events = queue.Queue()
    worker.events.put({"event": "loaded", "seconds": 0.5, "rss_mib": 100.0})
    assert not worker.until("loaded")
    assert worker.record["status"] == "timeout"


@pytest.mark.slow
def test_a_run_over_the_time_limit_is_recorded_not_waited_for(tmp_path):
    # Starting a worker (imports, reading the parquet) takes longer than 10 ms: both jobs stop.
    done = bench(
        "--orders", "sorted", "--systems", "asofgpu", "--timeout", "0.01", tmp_path=tmp_path
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "out" / "bench.json").read_text())
    assert [e["status"] for e in report["results"]] == ["timeout", "timeout"]
    assert "| timeout (> 0.01 s) |" in (tmp_path / "out" / "bench.md").read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--systems", "asofgpu,spark"], "argument --systems: unknown system 'spark'; choose from"),
        (["--sizes", "10M"], "argument --sizes: '10M' is not QUOTESxTRADES"),
        (["--sizes", "1Mxlots"], "argument --sizes: 'lots' is not a row count"),
        (["--runs", "0"], "argument --runs: '0' must be positive"),
        (["--orders", "random"], "argument --orders: unknown order 'random'"),
    ],
)
def test_a_bad_option_names_itself(tmp_path, args, message):
    done = subprocess.run(
        [sys.executable, str(RUN), *args, "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert message in done.stderr
    assert not list(tmp_path.iterdir())


IDLE = BENCH / "idle.py"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("pool", "header"), [([], "host pool 256 MiB"), (["--pool-mib", "0"], "host pool 0 MiB")]
)
def test_idle_times_a_probe_after_each_sleep(pool, header):
    """bench/idle.py: a row per sleep with its times and page faults, in one process."""
    done = subprocess.run(
        [
            sys.executable,
            str(IDLE),
            "--quotes",
            "2e4",
            "--trades",
            "2e3",
            "--sleeps",
            "0,0.01",
            "--rounds",
            "2",
            *pool,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert header in done.stdout
    assert "Arrow pool" in done.stdout and "MIMALLOC_PURGE_DELAY" in done.stdout
    rows = [line for line in done.stdout.splitlines() if line.startswith("| 0")]
    assert [row.split("|")[1].strip() for row in rows] == ["0 s", "0.01 s"]


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--sleeps", "0,-1", "expected comma-separated seconds >= 0, each once"),
        ("--sleeps", "soon", "expected comma-separated seconds >= 0, each once"),
        ("--sleeps", "0,inf", "expected comma-separated seconds >= 0, each once"),
        ("--sleeps", "0,0.1,0", "expected comma-separated seconds >= 0, each once"),
        ("--rounds", "0", "expected a whole number >= 1"),
        ("--quotes", "many", "expected a whole number >= 1"),
        ("--trades", "2.5", "expected a whole number >= 1"),
        ("--pool-mib", "-1", "expected a whole number >= 0"),
        ("--pool-mib", "lots", "expected a whole number >= 0"),
    ],
)
def test_idle_rejects_bad_options(flag, value, message):
    done = subprocess.run(
        [sys.executable, str(IDLE), flag, value], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and message in done.stderr and flag in done.stderr


def test_first_call_reports_both_caches_and_the_goal(capsys):
    """bench/first_call.py's table and its option check (its processes take minutes of
    compiling, so they are not run here)."""
    step = {"import_s": 0.2, "join_asof_s": 0.02, "prepared_s": 0.01, "process_s": 0.5}
    large = {"import_s": 0.2, "join_asof_s": 7.5, "prepared_s": 3.2, "process_s": 11.5}
    report = {
        "when": "now",
        "machine": {"cpu": "cpu", "cores": 2},
        "commit": "abc",
        "runs": 3,
        "warm_s": 75.0,
        "cold": step,
        "warm": dict(step, process_s=0.6),
        "large_cold": large,
        "large_warm": dict(large, join_asof_s=0.7, process_s=1.4),
    }
    table = first_call.markdown(report)
    assert (
        "| three rows | a new environment (empty cache) | 0.20 s | 0.02 s | 0.01 s | 0.50 s |"
        in table
    )
    assert "| three rows | after `asofgpu warm` | 0.20 s | 0.02 s | 0.01 s | 0.60 s |" in table
    assert (
        "| 100,000 trades | a new environment (empty cache) | 0.20 s | 7.50 s | 3.20 s "
        "| 11.50 s |" in table
    )
    assert "| 100,000 trades | after `asofgpu warm` | 0.20 s | 0.70 s | 3.20 s | 1.40 s |" in table
    assert "first small join under 2 s: met." in table
    report["cold"] = dict(step, process_s=2.5)
    assert "first small join under 2 s: not met." in first_call.markdown(report)
    with pytest.raises(SystemExit):
        first_call.main(["--runs", "0"])
    assert "--runs must be at least 1, got 0" in capsys.readouterr().err


def test_every_threshold_has_a_sweep_and_one_runs():
    """bench/thresholds.py times both sides of each of walks.Thresholds' decisions: a new
    threshold needs its sweep there, and a sweep prints one row per size."""
    import dataclasses

    import thresholds

    from asofgpu._backend import walks

    assert set(thresholds.CASES) == {f.name for f in dataclasses.fields(walks.Thresholds)}
    before = walks.THRESHOLDS
    lines = thresholds.sweep("radix_min_rows", runs=1)
    rows = [line for line in lines if line.startswith("| ") and line[2].isdigit()]
    assert len(rows) == len(thresholds.CASES["radix_min_rows"][2])
    assert all(row.endswith(("| radix |", "| numpy |")) for row in rows)
    assert walks.THRESHOLDS == before  # every override undone
