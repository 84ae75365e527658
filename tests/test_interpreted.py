"""Small joins on the cpu backend run the kernels as plain Python until the process has spent
``interpret_seconds`` so (``asofgpu._backend.walks.compiles``): a new environment's first small
join compiles nothing. The rest of the suite runs the compiled kernels (the root conftest);
these tests turn plain Python back on with the one switch, ``walks.overridden``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
from conftest import HUGE
from hypothesis import given, settings
from hypothesis import strategies as st
from test_properties import columns_of, expected, host_map, join_inputs, join_options

import asofgpu as ag
from asofgpu import _encode, marketdata
from asofgpu._backend import walks

# Every small launch in plain Python, whatever this process has spent so far.
PLAIN = {"interpret_max_rows": HUGE, "interpret_seconds": float(HUGE)}


@st.composite
def cases(draw):
    inp = draw(join_inputs())
    return inp, draw(join_options(inp.kind)), draw(st.sampled_from(["unequal", "equal"]))


@settings(max_examples=150, deadline=None)
@given(cases())
def test_plain_python_joins_agree_with_the_oracle(case):
    inp, opts, null_equality = case
    left_on, right_on, left_by, right_by, tie = columns_of(inp)
    want = expected(inp, null_equality, **opts)
    spent = walks.interpreted_seconds()
    with walks.overridden(**PLAIN):
        prepared = ag.AsofJoin(
            right_on, right_by, null_equality=null_equality, tie_break=tie, device="cpu"
        )
        assert host_map(prepared.join(left_on, left_by, **opts), len(inp.left)) == want
        if tie is None:  # the one-shot path
            one_shot = ag.asof_join(
                left_on,
                right_on,
                left_by,
                right_by,
                null_equality=null_equality,
                device="cpu",
                **opts,
            )
            assert host_map(one_shot, len(inp.left)) == want
    assert walks.interpreted_seconds() > spent or not inp.left  # it ran as plain Python


def _day(n: int):
    return marketdata.day(4 * n, n, 50, seed=3)


def test_a_small_join_runs_as_plain_python_until_the_seconds_are_spent():
    quotes, trades = _day(500)
    with walks.overridden(interpret_max_rows=0):
        want = ag.join_asof(trades, quotes, on="time", by="symbol", device="cpu")
    with walks.overridden(interpret_max_rows=HUGE):
        with walks.overridden(interpret_seconds=walks.interpreted_seconds() + 60.0):
            assert not walks.compiles(len(trades))
            spent = walks.interpreted_seconds()
            got = ag.join_asof(trades, quotes, on="time", by="symbol", device="cpu")
            assert walks.interpreted_seconds() > spent
            assert got.equals(want)
        # The seconds spent: compiled from now on, and no more counted.
        with walks.overridden(interpret_seconds=walks.interpreted_seconds()):
            assert walks.compiles(len(trades))
            spent = walks.interpreted_seconds()
            got = ag.join_asof(trades, quotes, on="time", by="symbol", device="cpu")
            assert walks.interpreted_seconds() == spent
            assert got.equals(want)


def test_a_join_past_the_size_compiles():
    quotes, trades = _day(500)
    with walks.overridden(interpret_max_rows=len(trades), interpret_seconds=float(HUGE)):
        assert walks.compiles(len(trades))
        assert not walks.compiles(len(trades) - 1)
        spent = walks.interpreted_seconds()
        prepared = ag.AsofJoin(quotes["time"], quotes["symbol"], device="cpu")
        prepared.join(trades["time"], trades["symbol"])
        assert walks.interpreted_seconds() == spent


def test_arrows_lookups_in_place_of_the_hashed_ones_count_too():
    """Group keys looked up by Arrow while small launches are plain Python count toward the
    seconds, so that a process that only looks up (a GPU's probes) compiles them in time."""
    symbols = pa.chunked_array([pa.array(["a", "b", "c"] * 10)])
    pairs = [symbols, pa.chunked_array([pa.array(list(range(30)))])]
    with walks.overridden(**PLAIN):
        for columns in ([symbols], pairs):
            groups = _encode.Groups(columns, ["right_by"] * len(columns), null_equal=False)
            spent = walks.interpreted_seconds()
            codes = groups.lookup(columns, ["left_by"] * len(columns))
            assert walks.interpreted_seconds() > spent
            assert codes.tolist() == groups.right_codes.tolist()


def test_interpreting_counts_the_block_even_when_it_raises():
    spent = walks.interpreted_seconds()
    try:
        with walks.interpreting():
            time.sleep(0.01)
            raise KeyError("x")
    except KeyError:
        pass
    assert walks.interpreted_seconds() >= spent + 0.01


# The start of a script run in a new environment (``_in_a_new_environment``): the functions
# numba compiles, in ``compiled``, from its compile events.
LISTENING = """
import json, os, sys
from numba.core import event

compiled = []

class Compiles(event.Listener):
    def on_start(self, ev):
        pass

    def on_end(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__qualname__)
"""


def _in_a_new_environment(tmp_path, script: str, *args: str) -> dict:
    """``script``'s last line of output, read as JSON, run in a new process with an empty numba
    cache and the default thresholds (not this suite's)."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    done = subprocess.run(
        [sys.executable, "-c", script, *args], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


# Each usual small first call, then what numba compiled and what its cache holds.
FIRST_CALLS = (
    LISTENING
    + """
import numpy as np, pandas as pd, polars as pl, pyarrow as pa
import asofgpu as ag, asofgpu.marketdata, asofgpu.pandas, asofgpu.polars

quotes, trades = ag.marketdata.day(4000, 1000, 50, seed=5)
quotes = quotes.append_column("venue", pa.array(np.arange(len(quotes)) % 3))
trades = trades.append_column("venue", pa.array(np.arange(len(trades)) % 3))
ints = {n: t.set_column(1, "symbol", pa.array(np.arange(len(t)) % 7)) for n, t in
        (("q", quotes), ("t", trades))}
with event.install_listener("numba:compile", Compiles()):
    a = ag.join_asof(trades, quotes, on="time", by="symbol", device="cpu")
    b = ag.join_asof(trades, quotes, on="time", by="symbol", strategy="nearest",
                     tolerance=np.timedelta64(1, "s"), device="cpu")
    c = ag.join_asof(ints["t"], ints["q"], on="time", by="symbol", device="cpu")
    d = ag.join_asof(trades, quotes, on="time", by=["symbol", "venue"], device="cpu")
    prepared = ag.AsofJoin(quotes["time"], quotes["symbol"], device="cpu")
    e = ag.gather(quotes.select(["bid"]), prepared.join(trades["time"], trades["symbol"]))
    f = asofgpu.pandas.merge_asof(trades.to_pandas(), quotes.to_pandas(), on="time", by="symbol")
    g = asofgpu.polars.join_asof(pl.from_arrow(trades), pl.from_arrow(quotes), on="time",
                                 by="symbol", check_sortedness=False)
python = {
    "a": ag.join_asof(trades, quotes, on="time", by="symbol", device="python"),
    "b": ag.join_asof(trades, quotes, on="time", by="symbol", strategy="nearest",
                      tolerance=np.timedelta64(1, "s"), device="python"),
    "c": ag.join_asof(ints["t"], ints["q"], on="time", by="symbol", device="python"),
    "d": ag.join_asof(trades, quotes, on="time", by=["symbol", "venue"], device="python"),
    "e": ag.gather(quotes.select(["bid"]), ag.AsofJoin(quotes["time"], quotes["symbol"],
                   device="python").join(trades["time"], trades["symbol"])),
    "f": asofgpu.pandas.merge_asof(trades.to_pandas(), quotes.to_pandas(), on="time",
                                   by="symbol", device="python"),
    "g": asofgpu.polars.join_asof(pl.from_arrow(trades), pl.from_arrow(quotes), on="time",
                                  by="symbol", check_sortedness=False, device="python"),
}
cache = os.environ["NUMBA_CACHE_DIR"]
print(json.dumps({
    "compiled": compiled,
    "cached": sorted(os.listdir(cache)) if os.path.isdir(cache) else [],
    "same": [a.equals(python["a"]), b.equals(python["b"]), c.equals(python["c"]),
             d.equals(python["d"]), e.equals(python["e"]),
             f.equals(python["f"]), g.equals(python["g"])],
}))
"""
)


def test_a_new_environments_first_small_joins_compile_nothing(tmp_path):
    report = _in_a_new_environment(tmp_path, FIRST_CALLS)
    assert report == {"compiled": [], "cached": [], "same": [True] * 7}


def test_a_plain_python_one_shot_join_keeps_the_right_side_unsorted():
    """The right side stays the caller's: a one-shot join in plain Python sorts a copy."""
    keys = np.array([5, 1, 3], dtype=np.int64)
    with walks.overridden(**PLAIN):
        got = ag.asof_join(np.array([2, 4, 6]), keys, device="cpu")
    assert got.tolist() == [1, 2, 0]
    assert keys.tolist() == [5, 1, 3]
    assert pa.array(got).type == pa.int32()


def test_plain_python_splice_agrees_with_the_oracle():
    """A small splice join on the cpu: its probes in plain Python and its merge by numpy's
    ranks (``Backend.splice_merge``), nothing compiled."""
    from oracle import splice_oracle

    rng = np.random.default_rng(8)
    left = [None if rng.random() < 0.1 else int(k) for k in rng.integers(0, 15, 40)]
    right = [None if rng.random() < 0.1 else int(k) for k in rng.integers(0, 15, 30)]
    left_by = [str(g) for g in rng.choice(["a", "b"], 40)]
    right_by = [str(g) for g in rng.choice(["a", "b", "c"], 30)]
    with walks.overridden(**PLAIN):
        maps = ag.splice_maps(
            pa.array(left, pa.int64()),
            pa.array(right, pa.int64()),
            pa.array(left_by),
            pa.array(right_by),
            allow_exact_matches=False,
            device="cpu",
        )
    want = splice_oracle(
        left,
        right,
        [(g,) for g in left_by],
        [(g,) for g in right_by],
        allow_exact_matches=False,
    )
    assert tuple(m.tolist() for m in maps) == want


# A new environment's first enrich of small files on the cpu: what numba compiled (its zero-row
# checks and its joins run as plain Python).
SMALL_ENRICH = (
    LISTENING
    + """
import pyarrow.parquet as pq
from asofgpu import cli, marketdata

folder = sys.argv[1]
quotes, trades = marketdata.day(4000, 1000, 50, seed=5)
pq.write_table(quotes, f"{folder}/quotes.parquet")
pq.write_table(trades, f"{folder}/trades.parquet")
with event.install_listener("numba:compile", Compiles()):
    code = cli.main(["enrich", f"{folder}/trades.parquet", f"{folder}/quotes.parquet", "-o",
                     f"{folder}/out.parquet", "--on", "time", "--by", "symbol", "--device", "cpu",
                     "-q"])
rows = pq.read_table(f"{folder}/out.parquet").num_rows
print(json.dumps({"code": code, "compiled": compiled, "rows": rows}))
"""
)


def test_a_new_environments_first_small_enrich_compiles_nothing(tmp_path):
    report = _in_a_new_environment(tmp_path, SMALL_ENRICH, str(tmp_path))
    assert report == {"code": 0, "compiled": [], "rows": 1000}
