"""README.md's Python examples, run, and their stated results checked.

Each ```python block of README.md is one test, named by the heading it sits under (the text
before the heading's colon; a second block under one heading gets " 2", a third " 3"). A
block runs statement by statement in a namespace of its own, with ``__name__ == "__main__"``
(as a script's), in a fresh temporary directory:

- first the "Use" block runs there unchecked: the later examples take its imports (``np``,
  ``pa``, ``ag``) and, under "Arrow tables", its ``trades`` and ``quotes`` as given;
- then the block's entry in ``SETUP`` adds what the README leaves to the reader (frames for
  the front ends, parquet folders for Dask);
- then the block itself; the value of each bare expression statement is kept, in order, as
  a REPL would show it (``shown``).

``CHECKS`` maps every block to a function of ``(ns, shown, says)`` that asserts what the
block's comments state (None where they state nothing checkable: the block need only run);
``says(text)`` asserts that a comment it checks is still in the block as written. A block
that is not in ``CHECKS``, or an entry whose block is gone, fails ``test_every_block_is_known``.

Blocks for cuDF, pylibcudf, cudf-polars or dask-cuda carry ``gpu`` (conftest skips them
without a usable GPU, ``make gpu-check`` selects them) and are skipped first when a module of
``NEEDS`` is missing; their setups and checks have not run yet. ``SKIP`` names the blocks that
cannot run anywhere a test runs, and why.

asofgpu has no setting that forces ``device="auto"`` to the cpu: "auto" is the cpu wherever
no GPU is usable (the simulator does not count), so these examples run on the cpu in
``make test-cpu``; on a GPU machine they run on the GPU, as a reader's would.
"""

from __future__ import annotations

import ast
import contextlib
import re
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import to_host

import asofgpu as ag

README = Path(__file__).resolve().parent.parent / "README.md"


@dataclass(frozen=True)
class Block:
    name: str  # the heading's text before its colon, numbered from the second block on
    line: int  # README line of the block's first code line
    source: str


def readme_blocks(path: Path = README) -> list[Block]:
    """The ```python blocks of ``path``, each named by the heading above it."""
    blocks, heading, seen = [], "", {}
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            if line.strip() == "```python":
                seen[heading] = seen.get(heading, 0) + 1
                name = heading if seen[heading] == 1 else f"{heading} {seen[heading]}"
                blocks.append(Block(name, i + 2, "\n".join(lines[i + 1 : end]) + "\n"))
            i = end  # a '#' inside a fence is a comment, not a heading
        elif line.startswith("#"):
            heading = re.sub(r":\s.*$", "", line.lstrip("#").strip())
        i += 1
    return blocks


def run(block: Block, ns: dict) -> list:
    """Run ``block`` in ``ns``; the values of its bare expressions, in order. Tracebacks
    point at README.md's lines."""
    tree = ast.parse(block.source, filename=str(README))
    ast.increment_lineno(tree, block.line - 1)
    shown, filename = [], str(README)
    for stmt in tree.body:
        if isinstance(stmt, ast.Expr):
            shown.append(eval(compile(ast.Expression(stmt.value), filename, "eval"), ns))
        else:
            exec(compile(ast.Module([stmt], type_ignores=[]), filename, "exec"), ns)
    return shown


def says(block: Block, text: str) -> None:
    """A check's tie to the README: the statement or comment whose claim it asserts is still
    there as written (a changed comment fails until its check follows)."""
    assert text in block.source, f"README.md's {block.name!r} example no longer says {text!r}"


def rows(table: pa.Table) -> list[tuple]:
    return [tuple(r.values()) for r in table.to_pylist()]


# --------------------------------------------------------------------------- inputs


def frames():
    """Tiny time-sorted pandas trades and quotes (ms apart, tickers A, B, C): trade B at 30 ms
    is 25 ms after its quote (outside the examples' 10 ms tolerance), C has no quotes."""
    import pandas as pd

    t0 = pd.Timestamp("2024-01-02 09:30")

    def at(ms):
        return t0 + pd.to_timedelta(ms, unit="ms")

    quotes = pd.DataFrame(
        {
            "time": at([0, 1, 3, 5, 20]),
            "ticker": ["A", "B", "A", "B", "A"],
            "bid": [1.0, 2.0, 3.0, 4.0, 5.0],
        }
    )
    trades = pd.DataFrame(
        {
            "time": at([2, 4, 9, 30, 31]),
            "ticker": ["A", "B", "A", "B", "C"],
            "qty": [10, 20, 30, 40, 50],
        }
    )
    return trades, quotes


def write_parquet_folders() -> None:
    """trades/ and quotes/ in the working directory, two files each, in time order."""
    trades, quotes = frames()
    for name, frame in (("trades", trades), ("quotes", quotes)):
        Path(name).mkdir()
        half = len(frame) // 2
        frame[:half].to_parquet(f"{name}/part-0.parquet", index=False)
        frame[half:].to_parquet(f"{name}/part-1.parquet", index=False)


@contextlib.contextmanager
def pandas_frames(ns):
    import pandas as pd

    ns["pd"] = pd
    ns["trades"], ns["quotes"] = frames()
    yield


@contextlib.contextmanager
def polars_frames(ns):
    import polars as pl

    ns["pl"] = pl
    ns["trades"], ns["quotes"] = (pl.from_pandas(f) for f in frames())
    yield


@contextlib.contextmanager
def cudf_frames(ns):
    import cudf
    import pandas as pd

    ns["pd"] = pd
    ns["trades"], ns["quotes"] = (cudf.from_pandas(f) for f in frames())
    yield


@contextlib.contextmanager
def plc_columns(ns):
    import pylibcudf as plc

    def column(values):
        return plc.Column.from_arrow(pa.array(values))

    # Integer nanoseconds: the block's tolerance and window are 5 ms and 1 ms.
    ns["quote_sym"], ns["quote_time"] = column(["A", "B", "A"]), column([0, 1_000_000, 3_000_000])
    ns["bid"], ns["ask"] = column([1.0, 2.0, 3.0]), column([1.5, 2.5, 3.5])
    ns["trade_sym"] = column(["A", "B", "A", "C"])
    ns["trade_time"] = column([2_000_000, 9_000_000, 3_500_000, 4_000_000])
    yield


@contextlib.contextmanager
def polars_gpu_query(ns):
    import polars as pl

    import asofgpu.polars_gpu

    ns["pl"] = pl
    ns["trades"], ns["quotes"] = (pl.from_pandas(f).rename({"ticker": "sym"}) for f in frames())
    ns["query"] = ns["trades"].lazy().join_asof(ns["quotes"].lazy(), on="time", by="sym")
    try:
        yield
    finally:
        asofgpu.polars_gpu.uninstall()  # install() is process-wide


@contextlib.contextmanager
def dask_folders(ns):
    write_parquet_folders()
    yield


@contextlib.contextmanager
def dask_gpu_folders(ns):
    import dask

    write_parquet_folders()
    try:
        yield
    finally:
        for name in ("client", "cluster"):
            if name in ns:
                ns[name].close()
        dask.config.set({"dataframe.backend": "pandas"})  # the block sets it process-wide


SETUP = {
    "pandas": pandas_frames,
    "polars": polars_frames,
    "cuDF": cudf_frames,
    "pylibcudf": plc_columns,
    "polars' GPU engine": polars_gpu_query,
    "Dask": dask_folders,
    "Dask 2": dask_gpu_folders,
}

# --------------------------------------------------------------------------- checks


def check_use(ns, shown, says):
    gathered, _one_shot = shown
    says("# [1, 4, NO_MATCH], in trade order")
    assert to_host(ns["gmap"]).tolist() == [1, 4, ag.NO_MATCH]
    says("# bid: [10.5, 20.5, null]")
    assert gathered.column_names == ["bid"]
    assert gathered.column("bid").to_pylist() == [10.5, 20.5, None]


def check_splice(ns, shown, says):
    (spliced,) = shown
    says("# ts, buy, ts_right, sell:")
    says("# (1, b1, null, null), (1, b1, 3, s1), (1, b1, 3, s2), (4, b2, 3, s2)")
    assert spliced.column_names == ["ts", "buy", "ts_right", "sell"]
    want = [(1, "b1", None, None), (1, "b1", 3, "s1"), (1, "b1", 3, "s2"), (4, "b2", 3, "s2")]
    assert rows(spliced) == want
    says("# the two gather maps")  # of the same rows, each side's columns by its map
    left = ag.gather(ns["buys"], to_host(ns["left_map"]))
    right = ag.gather(ns["sells"], to_host(ns["right_map"]))
    assert [(*a, *b) for a, b in zip(rows(left), rows(right), strict=True)] == want


def check_window(ns, shown, says):
    windowed, ranged, (starts, ends, positions), reduced = shown
    says("# t, sym, bid_max, bid_count: (5, A, 3.0, 2), (9, A, 4.0, 1)")
    assert windowed.column_names == ["t", "sym", "bid_max", "bid_count"]
    assert rows(windowed) == [(5, "A", 3.0, 2), (9, "A", 4.0, 1)]
    says("# t, sym, t_right, bid: (5, A, 3, 2.0), (5, A, 4, 3.0), (9, A, 8, 4.0)")
    assert ranged.column_names == ["t", "sym", "t_right", "bid"]
    assert rows(ranged) == [(5, "A", 3, 2.0), (5, "A", 4, 3.0), (9, "A", 8, 4.0)]
    says("# the windows, as ranges of the prepared order")  # the range join's t 3, 4 and 8
    starts, ends, positions = to_host(starts), to_host(ends), to_host(positions)
    assert [positions[s:e].tolist() for s, e in zip(starts, ends, strict=True)] == [[1, 2], [3]]
    # The reductions agree with the window join's: max picks the row of bid 3.0, then 4.0.
    bids = ns["quotes"]["bid"].to_pylist()
    assert ns["values"].to_pylist() == bids
    assert [bids[i] for i in to_host(reduced["max"])] == [3.0, 4.0]
    assert to_host(reduced["mean"]).tolist() == [2.5, 4.0]


def check_arrow(ns, _shown, says):
    out = ns["out"]
    says("# a pyarrow.Table")
    assert isinstance(out, pa.Table)
    # Polars' output rules on the Use tables: right by and (coalesced) on dropped; the bids
    # are the Use block's gather (a backward join, each match within the tolerance of 2).
    assert out.column_names == ["time", "sym", "bid"]
    assert out.column("bid").to_pylist() == [10.5, 20.5, None]


def check_pandas(ns, shown, says):
    import pandas as pd

    says("# instead of: from pandas import merge_asof")  # pandas' own frame
    want = pd.merge_asof(
        ns["trades"], ns["quotes"], on="time", by="ticker", tolerance=pd.Timedelta("10ms")
    )
    pd.testing.assert_frame_equal(shown[0], want)


def check_polars(ns, shown, says):
    from polars.testing import assert_frame_equal

    trades, quotes = ns["trades"], ns["quotes"]
    # Sorted inputs: polars' own join_asof is the answer to equal.
    mine = dict(on="time", by="ticker", check_sortedness=False)
    assert_frame_equal(shown[0], trades.join_asof(quotes, tolerance="10ms", **mine))
    says("# the registered namespace")
    assert_frame_equal(shown[1], trades.join_asof(quotes, **mine))


def check_cudf(ns, shown, _says):
    import pandas as pd

    trades, quotes = (f.to_pandas() for f in (ns["trades"], ns["quotes"]))
    # "the result equals pandas.merge_asof's after .to_pandas()"
    want = pd.merge_asof(trades, quotes, on="time", by="ticker", tolerance=pd.Timedelta("10ms"))
    pd.testing.assert_frame_equal(shown[0].to_pandas(), want)


def check_plc(ns, _shown, says):
    import pylibcudf as plc

    host = {k: ns[k].to_arrow() for k in ("quote_sym", "quote_time", "trade_sym", "trade_time")}
    gmap = ns["gmap"]
    says("# INT32 Column, JOIN_NO_MATCH")  # the cpu's map of the same join
    assert gmap.type().id() == plc.TypeId.INT32
    want = ag.asof_join(
        host["trade_time"],
        host["quote_time"],
        host["trade_sym"],
        host["quote_sym"],
        tolerance=5_000_000,
        device="cpu",
    )
    assert gmap.to_arrow().to_pylist() == want.tolist()
    assert ns["payload"].num_rows() == len(want)


def check_polars_gpu(ns, shown, says):
    from polars.testing import assert_frame_equal

    installed, collected = shown
    says("# once per process; True when active")
    assert installed is True
    trades, quotes = ns["trades"], ns["quotes"]
    want = trades.join_asof(quotes, on="time", by="sym", tolerance="5s", check_sortedness=False)
    assert_frame_equal(collected, want)
    assert_frame_equal(ns["out"], ns["query"].collect())


def check_dask(ns, _shown, says):
    import pandas as pd

    trades, quotes = (ns[side].compute().reset_index(drop=True) for side in ("trades", "quotes"))
    # The section's text: "the computed frame equals pandas.merge_asof on the concatenated
    # partitions".
    want = pd.merge_asof(trades, quotes, on="time", by="ticker", tolerance=pd.Timedelta("5s"))
    pd.testing.assert_frame_equal(ns["out"].compute().reset_index(drop=True), want)
    says("# one output partition per trades partition")
    assert len(list(Path("enriched").glob("*.parquet"))) == ns["trades"].npartitions


def check_dask_gpus(_ns, _shown, _says):
    import pandas as pd

    trades, quotes = (pd.read_parquet(side) for side in ("trades", "quotes"))
    want = pd.merge_asof(trades, quotes, on="time", by="ticker")
    got = pd.read_parquet("enriched")
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want, check_dtype=False)


def check_host_pool(_ns, shown, says):
    _, (total, used, free), _ = shown
    says("# keep at most 64 MiB of blocks")
    assert ag.host_pool.get_limit() == 64 << 20
    assert total == used + free <= 64 << 20
    says("# hand the free blocks back to Arrow's pool now")
    assert ag.host_pool.free_bytes() == 0


CHECKS = {
    "Use": check_use,
    "Splice join": check_splice,
    "Window join": check_window,
    "Arrow tables": check_arrow,
    "pandas": check_pandas,
    "polars": check_polars,
    "cuDF": check_cudf,
    "pylibcudf": check_plc,
    "polars' GPU engine": check_polars_gpu,
    "Dask": check_dask,
    "Dask 2": check_dask_gpus,
    "Dask 3": None,
    "Backends": check_host_pool,
}

# Blocks that need a GPU, and the modules each imports (skipped, naming the first missing).
NEEDS = {
    "cuDF": ["cudf"],
    "pylibcudf": ["pylibcudf"],
    "polars' GPU engine": ["cudf_polars"],
    "Dask 2": ["dask_cuda", "cudf"],
}

SKIP = {
    "Dask 3": "connects to a Dask scheduler at tcp://head:8786, which the README's "
    "`dask scheduler` starts on another machine",
}

# Warnings an example gives by design: polars' own, which asofgpu.polars passes on (README).
WARNS = {"polars": "Sortedness of columns cannot be checked when 'by' groups provided"}


def marks(name: str) -> list:
    found = []
    if name in NEEDS:
        found.append(pytest.mark.gpu)
        missing = [m for m in NEEDS[name] if find_spec(m) is None]
        if missing:
            found.append(pytest.mark.skip(reason=f"{missing[0]} is not installed"))
    if name in SKIP:
        found.append(pytest.mark.skip(reason=SKIP[name]))
    if name in WARNS:
        found.append(pytest.mark.filterwarnings(f"ignore:{WARNS[name]}"))
    return found


BLOCKS = readme_blocks()
USE = next(b for b in BLOCKS if b.name == "Use")


@pytest.fixture
def host_pool_limit():
    """The Backends block sets the process-wide pool's limit: put it back."""
    limit = ag.host_pool.get_limit()
    yield
    ag.host_pool.set_limit(limit)


@pytest.mark.parametrize("block", [pytest.param(b, id=b.name, marks=marks(b.name)) for b in BLOCKS])
def test_block(block, tmp_path, monkeypatch, host_pool_limit):
    assert block.name in CHECKS, (
        f"README.md line {block.line}: a new example; add {block.name!r} to CHECKS"
    )
    monkeypatch.chdir(tmp_path)  # the examples' files (parquet folders, outputs) go here
    ns = {"__name__": "__main__"}
    if block is not USE:
        run(USE, ns)
    with SETUP.get(block.name, contextlib.nullcontext)(ns):
        shown = run(block, ns)
        if CHECKS[block.name] is not None:
            CHECKS[block.name](ns, shown, lambda text: says(block, text))


def test_every_block_is_known():
    names = [b.name for b in BLOCKS]
    assert sorted(names) == sorted(CHECKS), "README examples and CHECKS differ"
    for table in (SETUP, NEEDS, SKIP, WARNS):
        assert set(table) <= set(names)
