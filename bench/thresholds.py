"""Times both sides of each CPU threshold's decision, so that it can be set from a measurement.

Every threshold of ``asofgpu._backend.walks.Thresholds`` decides between two paths. For one
threshold, this runs the call it decides at sizes around its value, once with each path forced
(``walks.overridden``), and prints the median times side by side. Set the threshold where the
faster side changes, on the machine the defaults are for (2 cores here).

    python bench/thresholds.py parallel_min_rows
    python bench/thresholds.py stream_span --runs 9
    python bench/thresholds.py stream_group_span --strategy nearest

It measures; it never changes the defaults.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np
import pyarrow as pa

import asofgpu as ag
from asofgpu import _encode
from asofgpu._backend import CpuBackend, walks

HUGE = 1 << 62
RIGHT_ROWS = 1_000_000


def _right(n_groups: int, rows: int = RIGHT_ROWS, seed: int = 0):
    """A time-ordered right side: ascending int64 keys, groups drawn at random."""
    rng = np.random.default_rng(seed)
    return np.arange(rows, dtype=np.int64) * 10, rng.integers(0, n_groups, rows)


#: The strategy of the prepared probes timed (``--strategy``): the stream's rules were set
#: for backward, and nearest walks the stream twice.
STRATEGY = "backward"


def _probe(n_groups: int, shuffled: bool, right_rows_per_left: int = 1):
    """A prepared probe of n left rows spanning ``right_rows_per_left`` right rows each,
    under ``STRATEGY`` as it is when the probe runs."""
    keys, groups = _right(n_groups)
    prepared = ag.AsofJoin(keys, groups, device="cpu")
    rng = np.random.default_rng(1)

    def call(n: int):
        span = min(len(keys), n * right_rows_per_left)
        left = np.sort(rng.integers(0, span * 10, n))
        if shuffled:
            rng.shuffle(left)
        left_groups = rng.integers(0, n_groups, n)
        return lambda: prepared.join(left, left_groups, strategy=STRATEGY)

    return call


def _nearest_day(n: int):
    """A prepared nearest probe of ``marketdata.day``'s n / 4 trades into its n quotes."""
    from asofgpu import marketdata

    quotes, trades = marketdata.day(n_quotes=n, n_trades=n // 4, n_symbols=1_000, seed=1)
    prepared = ag.AsofJoin(quotes["time"], quotes["symbol"], device="cpu")
    return lambda: prepared.join(trades["time"], trades["symbol"], strategy="nearest")


def _argsort(n: int):
    values = np.random.default_rng(2).integers(0, 1 << 62, n)
    return lambda: CpuBackend().stable_argsort(values)


def _gather(n: int):
    """The columns the decision moves (fixed-width ones without nulls take the kernels at
    any size): two float64 columns with nulls and a symbol column, by an as-of map (some
    NO_MATCH entries)."""
    rng = np.random.default_rng(3)
    table = pa.table(
        {
            **{
                c: pa.array(rng.normal(size=RIGHT_ROWS), mask=rng.random(RIGHT_ROWS) < 0.01)
                for c in "ab"
            },
            "symbol": pa.array(
                np.array([f"S{i}" for i in range(1_000)])[rng.integers(0, 1_000, RIGHT_ROWS)]
            ),
        }
    )
    gmap = rng.integers(0, RIGHT_ROWS, n).astype(np.int32)
    gmap[rng.random(n) < 0.02] = ag.NO_MATCH
    return lambda: ag.gather(table, gmap)


def _encode_text(n: int):
    symbols = np.array([f"S{i}" for i in range(1_000)])
    column = pa.chunked_array([pa.array(np.random.default_rng(4).choice(symbols, n))])
    return lambda: _encode.Groups([column], ["right_by"], null_equal=False)


def _encode_distinct(n: int):
    """The encoding of 1M strings holding ``n`` distinct values (sampled in the first rows
    as the whole column)."""
    values = np.array([f"ID{i:09d}" for i in range(n)])
    rng = np.random.default_rng(8)
    column = pa.chunked_array([pa.array(values[rng.integers(0, n, 1_000_000)])])
    return lambda: _encode.Groups([column], ["right_by"], null_equal=False)


def _encode_missed(n: int):
    """The encoding of 10M strings of 1,000 symbols in 77 chunks, as a reader gives them,
    whose first 65,536 rows (the sample) hold half of the symbols, and ``n`` of the other
    rows the other half."""
    symbols = np.array([f"S{i:04d}" for i in range(1_000)])
    rng = np.random.default_rng(11)
    values = symbols[rng.integers(0, 500, 10_000_000)]
    sample = _encode.DISTINCT_SAMPLE_ROWS
    missed = sample + rng.choice(10_000_000 - sample, n, replace=False)
    values[missed] = symbols[rng.integers(500, 1_000, n)]
    column = pa.chunked_array([pa.array(part) for part in np.array_split(values, 77)])
    return lambda: _encode.Groups([column], ["right_by"], null_equal=False)


def _encode_sorted_ids(n: int):
    """The encoding of 10M ids sorted, each ``n`` times, in 77 chunks: a sample of the first
    rows holds few of them, so the lookup stops and the column is encoded again."""
    ids = np.char.add("ID", np.repeat(np.arange(10_000_000 // n), n).astype(str))
    column = pa.chunked_array([pa.array(part) for part in np.array_split(ids, 77)])
    return lambda: _encode.Groups([column], ["right_by"], null_equal=False)


def _encode_ids(n: int):
    """The encoding of ``n`` distinct int64 entity ids (a state table's), shuffled."""
    ids = np.random.default_rng(9).permutation(n).astype(np.int64) * 7
    column = pa.chunked_array([pa.array(ids)])
    return lambda: _encode.Groups([column], ["right_by"], null_equal=False)


def _encode_views(n: int):
    """A one-shot join's encoding of n polars strings (Arrow views) of 1,000 symbols on the
    right, and its lookup of n more on the left."""
    symbols = np.array([f"S{i}" for i in range(1_000)])
    rng = np.random.default_rng(10)
    right, left = (
        pa.chunked_array([pa.array(rng.choice(symbols, n), pa.string_view())]) for _ in "rl"
    )

    def call():
        groups = _encode.Groups([right], ["right_by"], null_equal=False)
        return groups.lookup([left], ["left_by"])

    return call


def _lookup_text(n: int):
    symbols = np.array([f"S{i}" for i in range(1_000)])
    rng = np.random.default_rng(6)
    groups = _encode.Groups([pa.chunked_array([pa.array(symbols)])], ["right_by"], False)
    column = pa.chunked_array([pa.array(rng.choice(symbols, n))])
    return lambda: groups.lookup([column], ["left_by"])


def _chunked_gather(n: int):
    rng = np.random.default_rng(5)
    column = pa.chunked_array(np.array_split(rng.normal(size=RIGHT_ROWS), 77))
    table = pa.table({"a": column})
    gmap = rng.integers(0, RIGHT_ROWS, n).astype(np.int64)
    return lambda: ag.gather(table, gmap)


def _key_copy(n: int):
    """A time-sorted key column of n rows in 8 chunks of their own, read as a join reads it,
    then checked as the walk checks keys that the read did not."""
    from asofgpu import _columns
    from asofgpu._backend.jit import cpu_scan, threads
    from asofgpu._backend.order import row_numbers

    keys = np.sort(np.random.default_rng(9).integers(0, 1 << 40, n))
    column = pa.chunked_array([pa.array(part.copy()) for part in np.array_split(keys, 8)])
    parallel = walks.parallel(n)
    rows = row_numbers(n)

    def call():
        key = _columns.ordered_key(column, "on", host=True)
        return key.ascends or cpu_scan(False, parallel).is_sorted_at(
            key.values, rows, threads(parallel)
        )

    return call


def _small_join(n: int):
    from asofgpu import marketdata

    quotes, trades = marketdata.day(4 * n, n, 1_000, seed=7)
    return lambda: ag.join_asof(trades, quotes, on="time", by="symbol", device="cpu")


# threshold -> (what is timed, sizes, {side: overrides}); sizes are the argument of the call.
CASES = {
    "parallel_min_rows": (
        "a prepared probe of n time-sorted rows, 1,000 groups",
        _probe(1_000, False),
        [1_024, 4_096, 16_384, 65_536],
        {"parallel": {"parallel_min_rows": 0}, "one thread": {"parallel_min_rows": HUGE}},
    ),
    "radix_min_rows": (
        "a stable argsort of n random int64",
        _argsort,
        [4_096, 16_384, 32_768, 131_072],
        {"radix": {"radix_min_rows": 0}, "numpy": {"radix_min_rows": HUGE}},
    ),
    "search_max_rows": (
        "a prepared probe of n shuffled rows, 1,000 groups",
        _probe(1_000, True),
        [4_096, 16_384, 32_768, 131_072],
        {"search each": {"search_max_rows": HUGE}, "sort and walk": {"search_max_rows": 0}},
    ),
    "stream_span": (
        "a prepared probe of 100K time-sorted rows, 1,000 groups, n right rows a left row",
        None,
        [1, 16, 256, 1_024],
        {"stream": {"stream_span": HUGE, "stream_group_span": 0}, "cursors": {"stream_span": 0}},
    ),
    "stream_group_span": (
        "a prepared probe of 100K time-sorted rows, 4 right rows a left row, n groups",
        None,
        [1, 5, 50, 500],
        {"stream": {"stream_span": HUGE, "stream_group_span": 0}, "cursors": {"stream_span": 0}},
    ),
    "stream_nearest_min_span": (
        "a prepared nearest probe of a market-data day's n / 4 trades into its n quotes, "
        "1,000 symbols (evenly spaced synthetic keys favour the cursors at every size)",
        _nearest_day,
        [131_072, 524_288, 1_048_576, 4_194_304],
        {
            "stream": {"stream_span": HUGE, "stream_group_span": 0, "stream_nearest_min_span": 0},
            "cursors": {"stream_span": 0},
        },
    ),
    "pieces_per_thread": (
        "a prepared probe of 1M shuffled rows, 1,000 groups, n pieces a thread",
        None,
        [1, 2, 4, 16],
        {},
    ),
    "parallel_gather_rows": (
        "a gather of n entries, 2 float64 columns with nulls and a text one of 1M rows",
        _gather,
        [4_096, 16_384, 65_536, 262_144],
        {"all cores": {"parallel_gather_rows": 0}, "Arrow's take": {"parallel_gather_rows": HUGE}},
    ),
    "parallel_encode_rows": (
        "the encoding of n strings of 1,000 symbols",
        _encode_text,
        [4_096, 16_384, 65_536, 262_144],
        {"all cores": {"parallel_encode_rows": 0}, "Arrow's hash": {"parallel_encode_rows": HUGE}},
    ),
    "parallel_views_rows": (
        "the encoding of n polars strings (views) of 1,000 symbols, and a lookup of n more",
        _encode_views,
        [4_096, 8_192, 16_384, 65_536],
        {
            "views hashed": {"parallel_views_rows": 0},
            "cast to large strings": {"parallel_views_rows": HUGE},
        },
    ),
    "parallel_encode_distinct": (
        "the encoding of 1M strings of n distinct values",
        _encode_distinct,
        [1_000, 65_536, 250_000, 1_000_000],
        {
            "all cores": {"parallel_encode_distinct": 1.0, "parallel_encode_rows": 0},
            "Arrow's hash": {"parallel_encode_distinct": 0.0},
        },
    ),
    "appended_max_share": (
        "the encoding of 10M strings, n of the 9,934,464 after the sample holding values it lacks",
        _encode_missed,
        [100, 1_000, 10_000, 50_000, 300_000],
        {
            "appended": {"appended_max_share": 1.0},
            "all hashed again": {"appended_max_share": 0.0},
        },
    ),
    "rehash_max_distinct": (
        "the encoding of 10M ids sorted, each n times",
        _encode_sorted_ids,
        [16, 64, 256, 1_000],
        {
            "all cores": {"rehash_max_distinct": 1.0},
            "Arrow's hash": {"rehash_max_distinct": 0.0},
        },
    ),
    "sort_encode_min_rows": (
        "the encoding of n distinct int64 ids",
        _encode_ids,
        [1_000_000, 4_000_000, 8_000_000, 20_000_000],
        {"sorted": {"sort_encode_min_rows": 0}, "Arrow's hash": {"sort_encode_min_rows": HUGE}},
    ),
    "chunk_blocks": (
        "a gather of 1M entries from 77 chunks, n table entries at most",
        None,
        [64, 1_024, 65_536, 1 << 20],
        {},
    ),
    "checked_copy_min_rows": (
        "a key column of n rows in 8 chunks copied, and its order checked",
        _key_copy,
        [1_024, 4_096, 16_384, 65_536],
        {
            "in one pass": {"checked_copy_min_rows": 0, "interpret_max_rows": 0},
            "copy, then check": {"checked_copy_min_rows": HUGE, "interpret_max_rows": 0},
        },
    ),
    "most_cursors": ("(no bench: it bounds memory, pieces x groups cursors)", None, [], {}),
    "hashed_lookup_min_rows": (
        "a prepared probe's lookup of n strings among 1,000 symbols",
        _lookup_text,
        [16, 256, 4_096, 65_536],
        {
            "hashed once": {"hashed_lookup_min_rows": 0},
            "Arrow's index_in": {"hashed_lookup_min_rows": HUGE},
        },
    ),
    "copy_min_group_rows": (
        "(no bench: it sets the row groups OUT keeps from a copied LEFT file)",
        None,
        [],
        {},
    ),
    "copy_min_group_bytes": (
        "(no bench: with copy_min_group_rows, it sets the row groups OUT keeps)",
        None,
        [],
        {},
    ),
    "interpret_max_rows": (
        "a one-shot join of n trades x 4n quotes, 1,000 symbols (compiled: cached, so "
        "without the seconds of compiling that bench/first_call.py times)",
        _small_join,
        [1_024, 4_096, 16_384, 65_536],
        {
            "plain Python": {"interpret_max_rows": HUGE, "interpret_seconds": float(HUGE)},
            "compiled": {"interpret_max_rows": 0},
        },
    ),
    "interpret_seconds": (
        "(no bench: it weighs plain Python against compiling, which bench/first_call.py times)",
        None,
        [],
        {},
    ),
}


def _make(name: str):
    """``name``'s sweep: size -> the call it times. Sweeps without sides time one path with
    the threshold itself set to each size."""
    make = CASES[name][1]
    if name == "stream_span":
        return lambda n: _probe(1_000, False, n)(100_000)
    if name == "stream_group_span":
        return lambda n: _probe(n, False, 4)(100_000)
    if name == "pieces_per_thread":
        probe = _probe(1_000, True)(1_000_000)
        return lambda n: probe
    if name == "chunk_blocks":
        gather = _chunked_gather(1_000_000)
        return lambda n: gather
    return make


def timed(call, runs: int) -> float:
    call()  # compiled, pages written
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def sweep(name: str, runs: int) -> list[str]:
    """The markdown table of ``name``'s sweep."""
    what, _, sizes, sides = CASES[name]
    default = getattr(walks.Thresholds(), name)
    probes = name in ("parallel_min_rows", "stream_span", "stream_group_span", "pieces_per_thread")
    how = f" ({STRATEGY})" if probes and STRATEGY != "backward" else ""
    lines = [f"{name} (now {default:,}): {what}{how}", ""]
    if not sizes:
        return lines
    make = _make(name)
    if not sides:  # one path whose parameter is the threshold itself
        lines += ["| n | median ms |", "|---:|---:|"]
        for n in sizes:
            with walks.overridden(**{name: n}):
                lines.append(f"| {n:,} | {1e3 * timed(make(n), runs):.3f} |")
        return lines
    names = list(sides)
    header = " | ".join(f"{side} ms" for side in names)
    lines += [f"| n | {header} | faster |", "|---:|" + "---:|" * len(names) + "---|"]
    for n in sizes:
        call = make(n)
        medians = {}
        for side in names:
            with walks.overridden(**sides[side]):
                medians[side] = timed(call, runs)
        best = min(medians, key=medians.get)
        cells = " | ".join(f"{1e3 * medians[s]:.3f}" for s in names)
        lines.append(f"| {n:,} | {cells} | {best} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("threshold", choices=list(CASES), nargs="+")
    p.add_argument("--runs", type=int, default=5, help="timed calls a side and size (5)")
    p.add_argument(
        "--strategy",
        choices=["backward", "forward", "nearest"],
        default="backward",
        help="of the prepared probes (parallel_min_rows, stream_span, stream_group_span, "
        "pieces_per_thread); backward by default",
    )
    args = p.parse_args(argv)
    if args.runs < 1:
        p.error("--runs must be at least 1")
    global STRATEGY
    STRATEGY = args.strategy
    # Every other decision is timed between compiled kernels, as a process runs them once it
    # has spent its seconds of plain Python on small joins.
    with walks.overridden(interpret_max_rows=0):
        for name in args.threshold:
            print("\n".join(sweep(name, args.runs)), end="\n\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
