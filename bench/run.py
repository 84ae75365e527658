"""make bench: asofgpu against polars join_asof, pandas merge_asof, DuckDB ASOF JOIN,
ClickHouse's ASOF LEFT JOIN (chdb, in process) and pyarrow's Table.join_asof.

All of them join the same synthetic market-data days (``asofgpu.marketdata``: 1,000 string symbols
of Zipf activity, int64 nanosecond UTC times, four float64 quote columns), each trade taking
the latest quote of its symbol at or before it (backward, exact matches allowed), with time-sorted
and with shuffled inputs, in two modes:

- one-shot: tables in, table out. Every system gets string symbols and encodes them inside the
  timed region, sorts inside it when it needs sorted input (polars, pandas and pyarrow on
  shuffled data; DuckDB, ClickHouse and asofgpu need no sorted input), and returns the trade
  columns plus the same four quote columns. pyarrow runs only up to ``MAX_ROWS`` a side.
- prepared: asofgpu builds ``AsofJoin`` on the quotes once, then each timed run is the probe of
  a batch of ``--probe-rows`` trades (1M) plus the gather of the four quote columns into a
  table; compared with each peer's one-shot join of the quotes with that same batch.

Each dataset is generated once into parquet files under ``--data`` (bench/data). Each system
runs in its own process (``run.py --worker``): it reads the parquet into its native form
outside the timed region, runs one warm-up, then ``--runs`` timed runs (the median is reported),
and reports its peak RSS during the runs (inputs included). The processes of all systems on
the same files start one after another and then stay up together, taking turns: each round is
one timed run of each system, so that a drift in the machine's speed (20-50% within minutes on
a shared VM) falls on all of them alike rather than on whichever ran then. A run that takes
longer than ``--timeout`` seconds or a process above ``--mem-limit`` GiB is stopped and
recorded as such. Every system's answer (the bid column, by trade) must equal asofgpu's, or
the bench fails. A peer whose package is not installed is left out (``make bench`` installs
chdb where it can).

    python bench/run.py                       # the full run (about 8 minutes on 2 cores)
    python bench/run.py --quick               # small sizes, one run: checks the harness
    python bench/run.py --sizes 1Mx1M,10Mx10M --systems asofgpu,polars --orders sorted

Results go to ``--out`` (bench/results): bench.md (the table), bench.json (raw numbers) and
bench.png (rows/s against size), each written whole or not at all.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import math
import os
import queue
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/common.py, when loaded by path
from common import (ROOT, BenchError, atomic_write, commit, label,  # noqa: E402
                    machine, parse_count, versions)
SYSTEMS = ("asofgpu", "polars", "pandas", "duckdb", "chdb", "pyarrow")
PEERS = SYSTEMS[1:]
TITLES = {"asofgpu": "asofgpu", "polars": "polars", "pandas": "pandas", "duckdb": "DuckDB",
          "chdb": "ClickHouse (chdb)", "pyarrow": "pyarrow"}
# Systems run only on sizes up to this many rows a side: pyarrow's Table.join_asof (Acero)
# grows faster than its input (0.44 s at 100K x 100K, 15-20 s at 1M x 1M here), so at 10M every
# run would end at the time limit after minutes.
MAX_ROWS = {"pyarrow": 1_000_000}
ORDERS = ("sorted", "shuffled")
MODES = ("one-shot", "prepared")
PAYLOAD = ["bid", "ask", "bid_size", "ask_size"]
CHECKED = "bid"  # the payload column every system's answer is compared on
DEFAULT_SIZES = "1Mx1M,10Mx1M,10Mx10M"
QUICK_SIZES = "100Kx100K,1Mx200K"
QUICK_PROBE_ROWS = 100_000
EVENT = "@@bench "  # prefix of the worker's progress lines on stdout
GOALS = {("one-shot", "sorted"): 0.5, ("one-shot", "shuffled"): 0.33, ("prepared", "sorted"): 0.1,
         ("prepared", "shuffled"): 0.1}  # issue #5, for 10M x 10M


# ------------------------------------------------------------------------------ options

def parse_sizes(text: str) -> list[tuple[int, int]]:
    """'1Mx1M,10Mx10M' -> [(quotes, trades), ...]."""
    sizes = []
    for part in text.split(","):
        pieces = re.split("[xX×]", part.strip())
        if len(pieces) != 2:
            raise argparse.ArgumentTypeError(
                f"{part.strip()!r} is not QUOTESxTRADES, for example 10Mx1M (10M quotes, "
                f"1M trades)")
        sizes.append((parse_count(pieces[0]), parse_count(pieces[1])))
    return sizes


def choice_list(choices: tuple[str, ...], what: str):
    """An argparse type: a comma-separated, non-empty subset of ``choices``, in their order."""
    def parse(text: str) -> list[str]:
        names = [n.strip().lower() for n in text.split(",") if n.strip()]
        unknown = [n for n in names if n not in choices]
        if unknown or not names:
            raise argparse.ArgumentTypeError(
                f"unknown {what} {', '.join(map(repr, unknown)) or repr(text)}; "
                f"choose from {', '.join(choices)}")
        return [c for c in choices if c in names]
    return parse


def positive(kind):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number")
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text!r} must be positive")
        return value
    return parse


def options(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench/run.py", description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Sizes are QUOTESxTRADES. Results: OUT/bench.md, bench.json, bench.png.")
    parser.add_argument("--quick", action="store_true",
                        help=f"small sizes ({QUICK_SIZES}), probe batches of "
                             f"{label(QUICK_PROBE_ROWS)} trades, one timed run: tests the harness")
    parser.add_argument("--sizes", type=parse_sizes, default=None,
                        help=f"comma-separated QUOTESxTRADES (default {DEFAULT_SIZES})")
    parser.add_argument("--systems", type=choice_list(SYSTEMS, "system"), default=list(SYSTEMS),
                        help=f"comma-separated subset of {','.join(SYSTEMS)} (default all)")
    parser.add_argument("--orders", type=choice_list(ORDERS, "order"), default=list(ORDERS),
                        help="comma-separated subset of sorted,shuffled (default both)")
    parser.add_argument("--runs", type=positive(int), default=None,
                        help="timed runs after the warm-up; the median is reported (default 3)")
    parser.add_argument("--probe-rows", type=parse_count, default=None,
                        help="trades per prepared probe (default 1M)")
    parser.add_argument("--symbols", type=positive(int), default=1000, help="default 1000")
    parser.add_argument("--seed", type=int, default=0, help="marketdata seed (default 0)")
    parser.add_argument("--timeout", type=positive(float), default=300.0,
                        help="seconds one run (or the load) may take before the system is "
                             "recorded as timed out at that size (default 300)")
    parser.add_argument("--mem-limit", type=positive(float), default=16.0,
                        help="GiB of RSS a worker may use before it is stopped (default 16)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results",
                        help="where bench.md, bench.json and bench.png go (default bench/results)")
    parser.add_argument("--data", type=Path, default=ROOT / "bench" / "data",
                        help="parquet cache of the generated datasets (default bench/data)")
    # The test hook: this system's answer is altered after its warm-up, so the correctness
    # check must fail. Hidden: it exists for tests/test_bench.py only.
    parser.add_argument("--corrupt-for-test", choices=SYSTEMS, default=None,
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.sizes = args.sizes or parse_sizes(QUICK_SIZES if args.quick else DEFAULT_SIZES)
    args.runs = args.runs or (1 if args.quick else 3)
    args.probe_rows = args.probe_rows or (QUICK_PROBE_ROWS if args.quick else 1_000_000)
    return args


# ------------------------------------------------------------------------------ data

@dataclass(frozen=True)
class Dataset:
    quotes_rows: int
    trades_rows: int
    order: str
    quotes: Path
    trades: Path
    probe: Path  # the prepared mode's trades: ``trades`` itself when it has at most probe_rows
    probe_rows: int

    @property
    def name(self) -> str:
        return f"{label(self.quotes_rows)}x{label(self.trades_rows)}"


def _write_parquet(table, path: Path) -> None:
    """Whole or not at all: a cached file is never a torn one."""
    import pyarrow.parquet as pq
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def dataset(args, quotes_rows: int, trades_rows: int, order: str, say) -> Dataset:
    """The parquet files of one size and order, generated on first use."""
    folder = args.data / (f"{label(quotes_rows)}x{label(trades_rows)}-{order}-"
                          f"{args.symbols}sym-seed{args.seed}")
    probe_rows = min(args.probe_rows, trades_rows)
    ds = Dataset(quotes_rows, trades_rows, order, folder / "quotes.parquet",
                 folder / "trades.parquet",
                 folder / ("trades.parquet" if probe_rows == trades_rows
                           else f"trades-probe{label(probe_rows)}.parquet"), probe_rows)
    if ds.quotes.exists() and ds.trades.exists() and ds.probe.exists():
        return ds
    import numpy as np
    import pyarrow as pa

    from asofgpu import marketdata
    folder.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    quotes, trades = marketdata.day(quotes_rows, trades_rows, args.symbols, seed=args.seed,
                                    shuffled=order == "shuffled")
    # A trade id lets the check line up answers that come back in another row order (polars
    # and pandas return the sorted order on shuffled input; DuckDB promises no order).
    trades = trades.append_column("trade_id", pa.array(np.arange(trades_rows, dtype=np.int64)))
    _write_parquet(quotes, ds.quotes)
    _write_parquet(trades, ds.trades)
    if ds.probe != ds.trades:
        # A random subset of the day's trades, kept in file order (so still time-sorted or
        # still shuffled): a probe batch that spans the whole session.
        rng = np.random.default_rng(args.seed)
        rows = np.sort(rng.choice(trades_rows, probe_rows, replace=False))
        _write_parquet(trades.take(pa.array(rows)), ds.probe)
    del quotes, trades
    pa.default_memory_pool().release_unused()
    say(f"generated {ds.name} {order} ({quotes_rows:,} quotes, {trades_rows:,} trades) in "
        f"{folder} in {time.perf_counter() - start:.1f} s")
    return ds


# ------------------------------------------------------------------------------ worker side
# Each runner reads its parquet files into the system's native form (not timed), then
# ``join()`` is the timed region: tables in, the joined table out.

class AsofgpuRunner:
    def __init__(self, quotes: str, trades: str, order: str, prepared: bool):
        import pyarrow as pa
        import pyarrow.parquet as pq

        import asofgpu as ag
        self.pa, self.ag = pa, ag
        # As the reader gives them, in chunks (issue 19: measure what users hold); each peer
        # likewise gets its own reader's frames.
        self.quotes = pq.read_table(quotes)
        self.trades = pq.read_table(trades)
        self.prepared = None  # an AsofJoin after prepare(): the prepared mode

    def prepare(self) -> None:
        self.prepared = None  # drop the warm-up's before building the next: one at a time
        self.prepared = self.ag.AsofJoin(self.quotes["time"], self.quotes["symbol"], device="cpu")

    def join(self):
        ag = self.ag
        if self.prepared is None:
            return ag.join_asof(self.trades, self.quotes, on="time", by="symbol",
                                strategy="backward", device="cpu")
        gmap = self.prepared.join(self.trades["time"], self.trades["symbol"])
        taken = ag.gather(self.quotes.select(PAYLOAD), gmap)
        return self.pa.Table.from_arrays(self.trades.columns + taken.columns,
                                    names=self.trades.column_names + taken.column_names)

    def answer(self, result):
        return result["trade_id"], result[CHECKED]

    def free(self, result) -> None: ...


class PolarsRunner:
    def __init__(self, quotes: str, trades: str, order: str, prepared: bool):
        import polars as pl
        self.quotes, self.trades = pl.read_parquet(quotes), pl.read_parquet(trades)
        self.sort = order == "shuffled"

    def join(self):
        trades, quotes = self.trades, self.quotes
        if self.sort:  # join_asof requires both sides sorted by `on`: part of its work here
            trades, quotes = trades.sort("time"), quotes.sort("time")
        # The inputs are sorted (by the data or just above); polars cannot verify that with
        # `by` and would only warn.
        return trades.join_asof(quotes, on="time", by="symbol", strategy="backward",
                                check_sortedness=False)

    def answer(self, result):
        table = result.select(["trade_id", CHECKED]).to_arrow()
        return table["trade_id"], table[CHECKED]

    def free(self, result) -> None: ...


class PandasRunner:
    def __init__(self, quotes: str, trades: str, order: str, prepared: bool):
        import pandas as pd
        self.pd = pd
        self.quotes, self.trades = pd.read_parquet(quotes), pd.read_parquet(trades)
        self.sort = order == "shuffled"

    def join(self):
        trades, quotes = self.trades, self.quotes
        if self.sort:  # merge_asof requires both sides sorted by `on`: part of its work here
            trades, quotes = trades.sort_values("time"), quotes.sort_values("time")
        return self.pd.merge_asof(trades, quotes, on="time", by="symbol", direction="backward")

    def answer(self, result):
        import numpy as np
        return (result["trade_id"].to_numpy(),
                result[CHECKED].to_numpy(dtype=np.float64, na_value=np.nan))

    def free(self, result) -> None: ...


class DuckdbRunner:
    # DuckDB's native table out is a table in its database: the join is materialised into
    # one (in memory), which each run drops afterwards, outside the timed region.
    JOIN = ("CREATE TEMP TABLE joined AS SELECT t.*, " + ", ".join(f"q.{c}" for c in PAYLOAD)
            + " FROM trades t ASOF LEFT JOIN quotes q"
            " ON t.symbol = q.symbol AND t.time >= q.time")

    def __init__(self, quotes: str, trades: str, order: str, prepared: bool):
        import duckdb
        self.con = duckdb.connect()
        for name, path in (("quotes", quotes), ("trades", trades)):
            literal = "'" + str(path).replace("'", "''") + "'"
            self.con.execute(f"CREATE TABLE {name} AS SELECT * FROM read_parquet({literal})")

    def join(self):
        self.con.execute(self.JOIN)
        return "joined"

    def answer(self, result):
        table = self.con.sql(f"SELECT trade_id, {CHECKED} FROM {result}").fetch_arrow_table()
        return table["trade_id"], table[CHECKED]

    def free(self, result) -> None:
        self.con.execute(f"DROP TABLE {result}")


def _clickhouse_string(text: str) -> str:
    """A ClickHouse string literal: backslashes escaped, quotes doubled."""
    return "'" + str(text).replace("\\", "\\\\").replace("'", "''") + "'"


class ChdbRunner:
    # ClickHouse in this process (chdb): the files loaded into Memory tables, the join
    # materialised into one, dropped after each run outside the timed region, as DuckDB's.
    # join_use_nulls: an unmatched trade gets nulls, not ClickHouse's default of zeros.
    JOIN = ("CREATE TABLE joined ENGINE = Memory AS SELECT t.*, "
            + ", ".join(f"q.{c}" for c in PAYLOAD)
            + " FROM trades t ASOF LEFT JOIN quotes q"
            " ON t.symbol = q.symbol AND t.time >= q.time SETTINGS join_use_nulls = 1")

    def __init__(self, quotes: str, trades: str, order: str, prepared: bool):
        import chdb
        from chdb import session
        self.chdb = chdb
        self.session = session.Session()
        for name, path in (("quotes", quotes), ("trades", trades)):
            self.session.query(f"CREATE TABLE {name} ENGINE = Memory AS "
                               f"SELECT * FROM file({_clickhouse_string(path)}, Parquet)")

    def join(self):
        self.session.query(self.JOIN)
        return "joined"

    def answer(self, result):
        table = self.chdb.to_arrowTable(
            self.session.query(f"SELECT trade_id, {CHECKED} FROM {result}", "Arrow"))
        return table["trade_id"], table[CHECKED]

    def free(self, result) -> None:
        self.session.query(f"DROP TABLE {result}")


class PyarrowRunner:
    def __init__(self, quotes: str, trades: str, order: str, prepared: bool):
        import pyarrow.parquet as pq
        self.quotes, self.trades = pq.read_table(quotes), pq.read_table(trades)
        self.sort = order == "shuffled"

    def join(self):
        trades, quotes = self.trades, self.quotes
        if self.sort:  # Acero's as-of join refuses keys out of order: part of its work here
            trades, quotes = trades.sort_by("time"), quotes.sort_by("time")
        # A negative tolerance looks back (a positive one, forward); this one, without limit.
        return trades.join_asof(quotes, on="time", by="symbol", tolerance=-(2**63 - 1))

    def answer(self, result):
        return result["trade_id"], result[CHECKED]

    def free(self, result) -> None: ...


RUNNERS = {"asofgpu": AsofgpuRunner, "polars": PolarsRunner, "pandas": PandasRunner,
           "duckdb": DuckdbRunner, "chdb": ChdbRunner, "pyarrow": PyarrowRunner}


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
    import resource
    scale = 2**20 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes there, KiB here
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale


def _by_trade(ids, values):
    """The checked column as float64 (NaN where no quote matched), in trade_id order."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    if isinstance(ids, (pa.Array, pa.ChunkedArray)):
        ids = ids.to_numpy()
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = pc.fill_null(values.cast(pa.float64()), float("nan")).to_numpy()
    order = np.argsort(ids, kind="stable")
    return np.asarray(ids)[order], np.asarray(values, dtype=np.float64)[order]


def worker(spec: dict) -> None:
    """One system, one mode, one pair of files: load, warm up, check, then a timed run for
    each line on stdin (the parent's turns); events on stdout."""
    import numpy as np
    import psutil
    start = time.perf_counter()
    runner = RUNNERS[spec["system"]](spec["quotes"], spec["trades"], spec["order"],
                                     spec["prepared"])
    _emit(event="loaded", seconds=time.perf_counter() - start,
          rss_mib=psutil.Process().memory_info().rss / 2**20)
    peak_is_runs = _reset_peak_rss()
    if spec["prepared"]:
        runner.prepare()  # warm-up: JIT cache load, allocator
        start = time.perf_counter()
        runner.prepare()
        _emit(event="prepare", seconds=time.perf_counter() - start)
    start = time.perf_counter()
    result = runner.join()
    _emit(event="warmup", seconds=time.perf_counter() - start)
    ids, values = _by_trade(*runner.answer(result))
    runner.free(result)
    del result
    if spec["corrupt"]:
        middle = len(values) // 2
        values[middle] = 0.0 if np.isnan(values[middle]) else values[middle] + 1.0
    np.savez(spec["check"], trade_id=ids, value=values)
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


# ------------------------------------------------------------------------------ parent side

@dataclass(frozen=True)
class Job:
    system: str
    prepared: bool  # asofgpu's AsofJoin once, then probes; peers always run one-shot
    dataset: Dataset
    trades: Path  # the dataset's trades, or its probe batch
    trades_rows: int

    @property
    def pair(self) -> tuple[Path, Path]:
        return self.dataset.quotes, self.trades

    @property
    def name(self) -> str:
        what = "prepared probe" if self.prepared else "one-shot"
        rows = f"{label(self.dataset.quotes_rows)}x{label(self.trades_rows)}"
        return f"{TITLES[self.system]} {what} {rows} {self.dataset.order}"


def _read_events(stream, events: queue.Queue) -> None:
    for line in stream:
        if line.startswith(EVENT):
            events.put(json.loads(line[len(EVENT):]))
    events.put(None)  # end of output: the worker has exited (or closed stdout)


def _rss(proc) -> int:
    import psutil
    try:
        return proc.memory_info().rss
    except psutil.Error:
        return 0


class WorkerProcess:
    """One job's worker: its events, its limits (``--timeout`` per step, ``--mem-limit``) and
    its record: timings and peak memory, or status 'timeout' / 'memory'."""

    def __init__(self, job: Job, args, check: Path, on_event):
        import psutil
        spec = {"system": job.system, "prepared": job.prepared,
                "quotes": str(job.dataset.quotes), "trades": str(job.trades),
                "order": job.dataset.order, "runs": args.runs, "check": str(check),
                "corrupt": args.corrupt_for_test == job.system}
        self.job, self.on_event = job, on_event
        self.limit_bytes = args.mem_limit * 2**30
        self.timeout = args.timeout
        self.record = {"status": "ok", "times_s": [], "started_at": [], "page_faults": []}
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True,
            cwd=ROOT)
        self.events: queue.Queue = queue.Queue()
        threading.Thread(target=_read_events, args=(self.proc.stdout, self.events),
                         daemon=True).start()
        self.watched = psutil.Process(self.proc.pid)

    @property
    def ok(self) -> bool:
        return self.record["status"] == "ok"

    def until(self, wanted: str) -> bool:
        """Take the worker's events until ``wanted``: True then; False when it ran past its
        time or memory (it is stopped, and its record says which)."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                event = self.events.get(timeout=0.25)
            except queue.Empty:  # nothing new: watch the memory and the clock
                if _rss(self.watched) > self.limit_bytes:
                    return self._stop("memory")
                if time.monotonic() > deadline:
                    return self._stop("timeout")
                continue
            if event is None:  # the worker exited before saying what was wanted
                code = self.proc.wait()
                self.stderr.seek(0)
                tail = self.stderr.read()[-3000:]
                raise BenchError(f"{self.job.name}: the worker failed (exit code {code}):"
                                 f"\n{tail}")
            # A step that ended past its limit is over time all the same: the clock is read
            # above only after 0.25 s without events, which a fast worker never leaves.
            if time.monotonic() > deadline:
                return self._stop("timeout")
            deadline = time.monotonic() + self.timeout  # the limit is per step
            kind = event.pop("event")
            if kind == "loaded":
                self.record["load_s"] = event["seconds"]
                self.record["loaded_rss_mib"] = event["rss_mib"]
            elif kind == "prepare":
                self.record["prepare_s"] = event["seconds"]
            elif kind == "warmup":
                self.record["warmup_s"] = event["seconds"]
            elif kind == "run":
                self.record["times_s"].append(event["seconds"])
                self.record["started_at"].append(event["at"])  # Unix time: the turns
                # Minor faults in the run: an allocator that handed pages back while the
                # worker waited its turn makes the run fault them in again (bench/idle.py).
                self.record["page_faults"].append(event["faults"])
            elif kind == "done":
                self.record.update(event)
            self.on_event(self.job, kind, event)
            if kind == wanted:
                return True

    def run_once(self) -> bool:
        """One timed run, now."""
        try:
            self.proc.stdin.write("run\n")
            self.proc.stdin.flush()
        except OSError:  # it died while it waited: until() reports how, with its stderr
            pass
        return self.until("run")

    def finish(self) -> dict:
        if self.ok and self.until("done"):
            code = self.proc.wait()
            if code != 0:
                raise BenchError(f"{self.job.name}: the worker exited with code {code} "
                                 f"after its runs")
            self.record["median_s"] = statistics.median(self.record["times_s"])
        self.close()
        return self.record

    def _stop(self, status: str) -> bool:
        self.record["status"] = status
        self.close()
        return False

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.stderr.close()


def run_group(jobs: list[Job], args, checks: Path, on_checked, on_event) -> dict[Job, dict]:
    """The jobs on one pair of files: their workers started one at a time (each loads,
    prepares and warms up alone on the machine), each answer handed to
    ``on_checked(job, check)``, then ``--runs`` rounds of one timed run per worker, each
    round begun by the next system. Returns each job's record."""
    workers: list[WorkerProcess] = []
    try:
        for job in jobs:
            check = checks / (job.name.replace(" ", "-") + ".npz")  # one name per job
            workers.append(WorkerProcess(job, args, check, on_event))
            if workers[-1].until("checked"):
                on_checked(job, check)
        for r in range(args.runs):
            turn = [w for w in workers if w.ok]
            if not turn:
                break
            first = r % len(turn)
            for w in turn[first:] + turn[:first]:
                w.run_once()
        return {w.job: w.finish() for w in workers}
    finally:
        for w in workers:
            w.close()


def compare(check: Path, reference: Path, job: Job, reference_name: str) -> None:
    """The job's answer must equal the reference's, trade by trade (NaN: no match)."""
    import numpy as np
    with np.load(check) as got, np.load(reference) as want:
        where = f"{job.name}: its {CHECKED!r} column"
        if not np.array_equal(got["trade_id"], want["trade_id"]):
            raise BenchError(f"{where} comes for other trades than {reference_name}'s "
                             f"({len(got['trade_id']):,} rows against {len(want['trade_id']):,})")
        a, b = got["value"], want["value"]
        wrong = ~((a == b) | (np.isnan(a) & np.isnan(b)))
        if wrong.any():
            first = int(np.argmax(wrong))
            raise BenchError(
                f"WRONG ANSWER: {where} differs from {reference_name}'s in "
                f"{int(wrong.sum()):,} of {len(a):,} trades; first at trade_id "
                f"{int(got['trade_id'][first])}: {a[first]} against {b[first]}")


def plan(datasets: list[Dataset], systems: list[str]) -> tuple[list[Job], list[dict]]:
    """The distinct jobs to run, in order, and the report's cells that point at them (at
    none where the size passes the system's ``MAX_ROWS``)."""
    jobs: list[Job] = []
    cells = []

    def add(job: Job) -> Job:
        if job not in jobs:
            jobs.append(job)
        return job

    def cell(ds: Dataset, mode: str, job: Job) -> dict:
        too_large = max(ds.quotes_rows, job.trades_rows) > MAX_ROWS.get(job.system, math.inf)
        return {"dataset": ds, "mode": mode, "system": job.system, "planned": job,
                "job": None if too_large else add(job)}

    for ds in datasets:
        for system in systems:  # asofgpu first: on each pair of files it is the reference
            cells.append(cell(ds, "one-shot", Job(system, False, ds, ds.trades, ds.trades_rows)))
        if "asofgpu" not in systems:
            continue  # the prepared mode is asofgpu's; peers' runs there only compare to it
        for system in systems:
            prepared = system == "asofgpu"
            cells.append(cell(ds, "prepared", Job(system, prepared, ds, ds.probe,
                                                   ds.probe_rows)))
    return jobs, cells


# ------------------------------------------------------------------------------ report

def asofgpu_source() -> str | None:
    """Where the workers import asofgpu from (this checkout, unless PYTHONPATH says otherwise)."""
    import importlib.util
    spec = importlib.util.find_spec("asofgpu")
    return str(Path(spec.origin).parent) if spec and spec.origin else None


def _seconds(s: float) -> str:
    return f"{s:.3f} s" if s < 10 else f"{s:.1f} s"


def _memory(mib: float) -> str:
    return f"{mib / 1024:.1f} GiB" if mib >= 1024 else f"{mib:.0f} MiB"


def cell_text(entry: dict, timeout: float, mem_limit: float) -> str:
    status = entry["status"]
    if status == "too large":
        return f"not run (> {label(MAX_ROWS[entry['system']])} rows)"
    if status == "timeout":
        return f"timeout (> {timeout:g} s)"
    if status == "memory":
        return f"stopped (> {mem_limit:g} GiB)"
    text = f"{_seconds(entry['median_s'])} ({_memory(entry['peak_rss_mib'])})"
    if entry.get("prepare_s") is not None:
        text += f", prepare {_seconds(entry['prepare_s'])}"
    return text


def ratio(rows: list[dict]) -> float | None:
    """asofgpu's median over the fastest peer's, where both finished."""
    ours = [e["median_s"] for e in rows if e["system"] == "asofgpu" and e["status"] == "ok"]
    peers = [e["median_s"] for e in rows if e["system"] != "asofgpu" and e["status"] == "ok"]
    return ours[0] / min(peers) if ours and peers else None


def groups(entries: list[dict]):
    """Entries grouped by (quotes, trades, order, mode), in run order."""
    keyed: dict[tuple, list[dict]] = {}
    for e in entries:
        keyed.setdefault((e["quotes"], e["trades"], e["order"], e["mode"]), []).append(e)
    return keyed.items()


def markdown(report: dict) -> str:
    s = report["settings"]
    m = report["machine"]
    v = report["versions"]
    systems = s["systems"]
    lines = [
        "# asofgpu benchmark",
        "",
        f"{report['date']} · {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB · "
        f"load average {report['load_average'][0]:.2f} at the start, "
        f"{report['load_average'][1]:.2f} at the end · "
        f"commit {report['commit'] or 'unknown'}"
        + ("" if report["asofgpu_source"] == str(ROOT / "asofgpu")
           else f" · asofgpu imported from {report['asofgpu_source']}"),
        "",
        "Versions: " + ", ".join(f"{k} {val}" for k, val in v.items() if val)
        + f", Python {m['python']}.",
        "",
        f"Each cell: the median of {s['runs']} timed run(s) after a warm-up, each system in "
        f"its own process (the systems on the same files taking turns, a run each per "
        f"round), and in parentheses that process's peak RSS during the runs "
        f"(its inputs included). Rows: `asofgpu.marketdata.day(QUOTES, TRADES, "
        f"{s['symbols']}, seed={s['seed']})`, {s['symbols']:,} string symbols of Zipf "
        f"activity, four float64 quote columns; the trades carry time, symbol, price, size "
        f"and trade_id. Backward, exact matches allowed, `by` symbol.",
        "",
        "| quotes × trades | order | mode | " + " | ".join(TITLES[x] for x in systems)
        + (" | asofgpu / fastest peer |" if "asofgpu" in systems and len(systems) > 1 else " |"),
        "|---|---|---|" + "---:|" * len(systems)
        + ("---:|" if "asofgpu" in systems and len(systems) > 1 else ""),
    ]
    for (quotes, trades, order, mode), rows in groups(report["results"]):
        by_system = {e["system"]: e for e in rows}
        cells = [cell_text(by_system[x], s["timeout_s"], s["mem_limit_gib"]) for x in systems]
        if mode == "prepared":
            mode = f"prepared, {label(by_system['asofgpu']['trades_used'])} probed"
        line = (f"| {label(quotes)} × {label(trades)} | {order} | {mode} | "
                + " | ".join(cells) + " |")
        if "asofgpu" in systems and len(systems) > 1:
            r = ratio(rows)
            line += (f" {r:.2f}x |" if r is not None else " – |")
        lines.append(line)
    lines += [
        "",
        "- **one-shot**: tables in, table out. asofgpu: `asofgpu.join_asof(trades, quotes, "
        "on='time', by='symbol', device='cpu')` on pyarrow tables as `pq.read_table` gives "
        "them (in chunks, not combined); polars: `join_asof(..., "
        "by='symbol', check_sortedness=False)` on DataFrames; pandas: `merge_asof(..., "
        "by='symbol')`; DuckDB: `CREATE TEMP TABLE joined AS SELECT t.*, q.bid, ... FROM "
        "trades t ASOF LEFT JOIN quotes q ON t.symbol = q.symbol AND t.time >= q.time` on "
        "tables in an in-memory database; ClickHouse (chdb, in process): the same query "
        "into a `Memory` table, with `SETTINGS join_use_nulls = 1` (unmatched trades get "
        "nulls, not zeros); pyarrow: `trades.join_asof(quotes, on='time', by='symbol', "
        "tolerance=-(2**63 - 1))` (Acero; a negative tolerance looks back) on tables as "
        f"read, only where neither side passes {label(MAX_ROWS['pyarrow'])} rows (it took "
        "15-20 s at 1M × 1M). Symbols are strings for all (encoding is timed). On shuffled "
        "input polars, pandas and pyarrow also sort both sides by time inside the timed "
        "region, as they require; asofgpu, DuckDB and ClickHouse take any order.",
        f"- **prepared**: asofgpu builds `AsofJoin` on the quotes once (its time is the "
        f"`prepare` figure, one run after a warm-up); each timed run probes "
        f"{s['probe_rows']:,} trades (all trades when there are fewer; otherwise a random "
        f"subset in file order) and gathers the four quote columns into a table. The peers' "
        f"cells are their one-shot joins of the same quotes with those same trades.",
        "- Each system uses the threads it takes by default (all cores; pandas' merge_asof "
        "is single-threaded).",
        f"- Correctness: each system's `{CHECKED}` column, trade by trade, equals "
        f"{' or '.join(report['references']) or 'nobody'}'s on the same files (the first "
        f"system that finished on them; checked once, on the warm-up run).",
        "- Goals (issue #5, 10M × 10M): one-shot at most 0.5x the fastest peer on time-sorted "
        "input and 0.33x on shuffled input; the prepared probe + gather of 1M trades at most "
        "0.1x the fastest peer's one-shot on those trades.",
        *([f"- Not installed here, so left out: {', '.join(s['not_installed'])}."]
          if s.get("not_installed") else []),
        "",
        "![rows/s against size](bench.png)",
        "",
    ]
    return "\n".join(lines)


def plot(report: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    s = report["settings"]
    modes = [m for m in MODES if any(e["mode"] == m for e in report["results"])]
    orders = s["orders"]
    fig, axes = plt.subplots(len(modes), len(orders), squeeze=False,
                             figsize=(5.2 * len(orders), 4.0 * len(modes)))
    for r, mode in enumerate(modes):
        for c, order in enumerate(orders):
            ax = axes[r][c]
            ticks: dict[int, set[str]] = {}  # x -> the datasets there, as tick labels
            for system in s["systems"]:
                points = sorted((e["quotes"] + e["trades"], e["rows_per_s"])
                                for e in report["results"]
                                if (e["mode"], e["order"], e["system"]) == (mode, order, system)
                                and e["status"] == "ok")
                if points:
                    ax.plot(*zip(*points), marker="o", label=TITLES[system])
            for e in report["results"]:
                if (e["mode"], e["order"]) == (mode, order):
                    ticks.setdefault(e["quotes"] + e["trades"], set()).add(
                        f"{label(e['quotes'])}×{label(e['trades'])}")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xticks(sorted(ticks), ["\n".join(sorted(ticks[x])) for x in sorted(ticks)])
            ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
            ax.margins(x=0.1)
            ax.grid(True, which="both", alpha=0.3)
            ax.set_title(f"{mode}, {order}")
            ax.set_xlabel("dataset: quotes × trades (placed at quotes + trades rows)")
            ax.set_ylabel("trades probed per second" if mode == "prepared"
                          else "input rows (quotes + trades) per second")
            if ax.get_lines():  # a panel where every system timed out has nothing to label
                ax.legend(fontsize="small")
    m = report["machine"]
    fig.suptitle(f"asofgpu bench, {report['date']}, {m['cpu']}, {m['cores']} cores "
                 f"(median of {s['runs']})", fontsize="medium")
    fig.tight_layout()
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=110))
    plt.close(fig)


# ------------------------------------------------------------------------------ main

def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--worker"]:
        worker(json.loads(argv[1]))
        return 0
    args = options(argv)
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeElapsedColumn)
    console = Console(stderr=True, log_path=False)

    def say(text: str) -> None:
        console.log(text, highlight=False)

    began = time.perf_counter()
    load_start = os.getloadavg()[0]
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    try:
        missing = [x for x in args.systems if importlib.util.find_spec(x) is None]
        if missing:  # a peer whose package does not install here (chdb on some platforms)
            say(f"[yellow]not installed, left out: {', '.join(missing)}")
            args.systems = [x for x in args.systems if x not in missing]
        datasets = [dataset(args, q, t, order, say)
                    for q, t in args.sizes for order in args.orders]
        jobs, cells = plan(datasets, args.systems)
        results: dict[Job, dict] = {}
        references: dict[tuple[Path, Path], tuple[Path, str]] = {}
        groups: dict[tuple[Path, Path], list[Job]] = {}
        for job in jobs:  # the jobs on one pair of files take turns
            groups.setdefault(job.pair, []).append(job)
        with tempfile.TemporaryDirectory(prefix="asofgpu-bench-") as checks, Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                TimeElapsedColumn(), console=console) as progress:
            task = progress.add_task("bench", total=len(jobs))

            def on_event(job, kind, event):
                step = {"prepare": "prepared", "warmup": "warm-up done", "checked": "checked",
                        "run": f"run {event.get('i', 0) + 1}/{args.runs}"}
                progress.update(task, description=f"{job.name}: {step.get(kind, kind)}")

            def on_checked(job, check):
                # The first answer on a pair of files is the one the others must equal.
                reference = references.setdefault(job.pair, (check, TITLES[job.system]))
                if reference[0] != check:
                    compare(check, reference[0], job, reference[1])
                    check.unlink()

            for group in groups.values():
                progress.update(task, description=f"{group[0].name}: loading")
                for job, record in run_group(group, args, Path(checks), on_checked,
                                             on_event).items():
                    results[job] = record
                    if record["status"] == "ok":
                        record["checked_against"] = references[job.pair][1]
                        say(f"{job.name}: median {_seconds(record['median_s'])}, peak "
                            f"{_memory(record['peak_rss_mib'])}")
                    else:
                        say(f"[yellow]{job.name}: {record['status']}, recorded as such")
                    progress.advance(task)
        entries = []
        for cell in cells:
            ds, job = cell["dataset"], cell["planned"]
            record = results[job] if cell["job"] is not None else {"status": "too large"}
            rows = ds.quotes_rows + job.trades_rows if cell["mode"] == "one-shot" \
                else job.trades_rows
            entry = {"quotes": ds.quotes_rows, "trades": ds.trades_rows, "order": ds.order,
                     "mode": cell["mode"], "system": cell["system"],
                     "trades_used": job.trades_rows, **record}
            if record["status"] == "ok":
                entry["rows_per_s"] = rows / record["median_s"]
            entries.append(entry)
        report = {
            "date": date, "machine": machine(), "commit": commit(),
            "versions": versions(("asofgpu", "numpy", "pyarrow", "numba", "polars", "pandas",
                                  "duckdb", "chdb")),
            "asofgpu_source": asofgpu_source(),
            "load_average": [load_start, os.getloadavg()[0]],
            "command": ["bench/run.py", *argv],
            "settings": {"sizes": [[q, t] for q, t in args.sizes], "systems": args.systems,
                         "not_installed": missing,
                         "orders": args.orders, "runs": args.runs,
                         "probe_rows": args.probe_rows, "symbols": args.symbols,
                         "seed": args.seed, "timeout_s": args.timeout,
                         "mem_limit_gib": args.mem_limit},
            "references": sorted({name for _, name in references.values()}),
            "elapsed_s": time.perf_counter() - began,
            "results": entries,
        }
        text = markdown(report)
        atomic_write(args.out / "bench.json",
                      lambda tmp: tmp.write_text(json.dumps(report, indent=1) + "\n"))
        atomic_write(args.out / "bench.md", lambda tmp: tmp.write_text(text))
        plot(report, args.out / "bench.png")
    except BenchError as error:
        console.print(f"[bold red]bench: error:[/] {error}", highlight=False)
        console.print("No results were written.")
        return 1
    print(text)
    say(f"wrote bench.md, bench.json and bench.png to {args.out} "
        f"in {time.perf_counter() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
