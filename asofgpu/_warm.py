"""``asofgpu warm``: compile the CPU kernels of the usual joins into numba's cache before the
first join needs them.

numba compiles a kernel the first time it is called with new argument types and keeps the
machine code in its cache on disk (beside the kernels, or in the user's cache directory when
the package's is not writable; see ``_backend.cache_dir``). A small join runs as plain
Python and compiles nothing (``_backend.walks.compiles``), but in a new environment the first
larger join compiles for seconds to tens of seconds (README, "The first join in a new
environment", from ``bench/first_call.py``: 13.6 s on two cores, and the first prepared probe
and gather 5.1 s more); once cached, the same process takes about 1 s. ``warm`` runs joins of
the usual shapes, compiled whatever their size, and ``asofgpu enrich`` on small files (its
windows and spills have kernels of their own), each shape in a process of its own so that the
compiling takes every core:

>>> sorted(SHAPES)  # where pandas and polars are installed
['enrich', 'float keys', 'integer groups', 'one-shot', 'pandas', 'polars', 'prepared', 'window']

The cache is the machine's: numba keys it by the CPU it compiled for, so a cache built on
another machine (a container image built elsewhere) is compiled again at the first use.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import multiprocessing
import os
import time
from importlib.util import find_spec

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# Below and above every size at which a path changes (parallel launches, radix sorts, the
# parallel hash and gather): each shape runs at both.
SIZES = (1_000, 100_000)


def _day(n: int, shuffled: bool = False, symbols: int = 1000):
    """Quotes and trades of a market-data day: four quotes a trade, as a prepared probe of
    many groups streams the quotes (``_backend.walks.streams``) and one of few groups gallops."""
    from . import marketdata

    return marketdata.day(4 * n, n, symbols, seed=1, shuffled=shuffled)


def _as_read(table: pa.Table) -> pa.Table:
    """``table`` as a parquet reader gives it: a chunk of separate buffers per row group,
    which the gathers read where they lie (``take_chunked``), and keys copied with their
    order checked (``copy_checked``): kernels a table in one chunk never calls."""
    import io

    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(table, buffer, row_group_size=max(len(table) // 4, 1))
    return pq.read_table(io.BytesIO(buffer.getvalue()))


def _one_shot() -> None:
    from . import join_asof, splice_join

    for n in SIZES:
        for shuffled in (False, True):
            quotes, trades = _day(n, shuffled)
            join_asof(trades, quotes, on="time", by="symbol", device="cpu")
            join_asof(_as_read(trades), _as_read(quotes), on="time", by="symbol", device="cpu")
            join_asof(trades, quotes, on="time", device="cpu")  # one group: a walk of its own
            splice_join(trades, quotes, on="time", by="symbol", device="cpu")
            join_asof(
                trades,
                quotes,
                on="time",
                by="symbol",
                strategy="nearest",
                tolerance=np.timedelta64(1, "s"),
                device="cpu",
            )


def _prepared() -> None:
    from . import AsofJoin, gather
    from ._backend import walks

    for n, symbols in itertools.product(SIZES, (1000, 3)):
        quotes, trades = _day(n, symbols=symbols)
        prepared = AsofJoin(quotes["time"], quotes["symbol"], device="cpu")
        read = _as_read(quotes)  # its keys copied with their order checked
        AsofJoin(read["time"], read["symbol"], device="cpu").join(trades["time"], trades["symbol"])
        payload = quotes.drop_columns(["time", "symbol"])
        for batch in (trades, trades.take(np.random.default_rng(0).permutation(n))):
            gmap = prepared.join(batch["time"], batch["symbol"])
            gather(payload, gmap)
            gather(read, gmap)  # every column chunk by chunk, as a reader's chunks lie
            gather(payload, gmap.astype(np.int64))  # the pandas front end's positions
        # nearest streams with kernels of its own over many quotes (stream_nearest_min_span),
        # compiled here on fewer (1,000 symbols; the 3 take the cursors, compiled above)
        with walks.overridden(stream_nearest_min_span=0):
            prepared.join(trades["time"], trades["symbol"], strategy="nearest")


def _integer_groups() -> None:
    from . import join_asof

    for n in SIZES:
        quotes, trades = _day(n)
        ids = {
            name: pc.dictionary_encode(t["symbol"]).combine_chunks().indices
            for name, t in (("quotes", quotes), ("trades", trades))
        }
        join_asof(
            trades.set_column(1, "symbol", ids["trades"].cast(pa.int64())),
            quotes.set_column(1, "symbol", ids["quotes"].cast(pa.int64())),
            on="time",
            by="symbol",
            device="cpu",
        )


def _float_keys() -> None:
    from . import join_asof

    for n in SIZES:
        quotes, trades = _day(n)
        seconds = {
            name: t.set_column(0, "time", pa.array(t["time"].cast(pa.int64()).to_numpy() / 1e9))
            for name, t in (("quotes", quotes), ("trades", trades))
        }
        join_asof(seconds["trades"], seconds["quotes"], on="time", by="symbol", device="cpu")
        join_asof(seconds["trades"], seconds["quotes"], on="time", device="cpu")


def _window() -> None:
    """The window join: its windows, its reductions read whole and slid through (time-sorted
    trades, then shuffled ones), with and without nulls, and the range join's pairs."""
    from . import range_join, window_join

    aggs = {"bid": ["count", "sum", "mean", "min", "max", "first", "last"], "bid_size": "max"}
    for n in SIZES:
        for shuffled in (False, True):
            quotes, trades = _day(n, shuffled)
            every_seventh = pa.array(np.arange(len(quotes)) % 7 == 0)
            gappy = quotes.set_column(2, "bid", pc.if_else(every_seventh, None, quotes["bid"]))
            for right in (quotes, gappy):
                window_join(
                    trades,
                    right,
                    on="time",
                    by="symbol",
                    before=np.timedelta64(2, "s"),
                    aggs=aggs,
                    device="cpu",
                )
            range_join(
                trades, quotes, on="time", by="symbol", before=np.timedelta64(1, "s"), device="cpu"
            )


def _enrich() -> None:
    """``asofgpu enrich`` on time-sorted files in each way it holds RIGHT (the main job's own
    kernels: the streamed windows, the spill's partitions), and on shuffled ones, which it
    holds in memory and sorts (``asofgpu demo --shuffled``: the radix sort's kernels, built
    serial for enrich's thread in a 2-core process)."""
    import tempfile

    import pyarrow.parquet as pq

    from .enrich import Options, enrich

    days = {"sorted": _day(SIZES[-1]), "shuffled": _day(SIZES[-1], shuffled=True)}
    with tempfile.TemporaryDirectory(prefix="asofgpu-warm-") as folder:
        paths = {}
        for order, tables in days.items():
            for name, table in zip(("quotes", "trades"), tables):
                paths[order, name] = os.path.join(folder, f"{order}_{name}.parquet")
                pq.write_table(table, paths[order, name], row_group_size=SIZES[-1] // 4)
        for order, mode in (
            ("sorted", "stream"),
            ("sorted", "memory"),
            ("sorted", "spill"),
            ("shuffled", "auto"),
        ):
            enrich(
                Options(
                    left=paths[order, "trades"],
                    right=paths[order, "quotes"],
                    out=os.path.join(folder, f"{order}_{mode}.parquet"),
                    left_on="time",
                    right_on="time",
                    left_by=["symbol"],
                    right_by=["symbol"],
                    device="cpu",
                    chunk_rows=SIZES[-1] // 4,
                    right_mode=mode,
                )
            )


def _pandas() -> None:
    """pandas' frames through ``asofgpu.pandas``: their text by-columns (large strings, or
    Python objects) hash with kernels of their own, and the result is taken on all cores."""
    from . import pandas as front

    for n in SIZES:
        quotes, trades = (t.to_pandas() for t in _day(n))
        front.merge_asof(trades, quotes, on="time", by="symbol", device="cpu")
        as_objects = {"symbol": object}  # pandas 2's default for text
        front.merge_asof(
            trades.astype(as_objects),
            quotes.astype(as_objects),
            on="time",
            by="symbol",
            device="cpu",
        )


def _polars() -> None:
    """polars' frames through ``asofgpu.polars``: their text is hashed as the views polars
    holds (``kernels/views.py``)."""
    import polars as pl

    from . import polars as front

    for n in SIZES:
        quotes, trades = (pl.from_arrow(t) for t in _day(n))
        # (sortedness unchecked: with by, polars warns that it cannot check it); on the larger
        # day a few trades too, whose views are looked up on one thread
        for left in (trades,) if n == SIZES[0] else (trades, trades.head(SIZES[0])):
            front.join_asof(
                left, quotes, on="time", by="symbol", check_sortedness=False, device="cpu"
            )


SHAPES = {
    "one-shot": _one_shot,
    "prepared": _prepared,
    "integer groups": _integer_groups,
    "float keys": _float_keys,
    "enrich": _enrich,
    "window": _window,
    # the front ends' own kernels, where their libraries are installed
    **{
        name: shape for name, shape in (("pandas", _pandas), ("polars", _polars)) if find_spec(name)
    },
}


def _timed(shape: str) -> float:
    from ._backend import walks

    start = time.perf_counter()
    with walks.overridden(interpret_max_rows=0):  # small joins too: compiled, not plain Python
        SHAPES[shape]()
    return time.perf_counter() - start


def warm(processes: int | None = None, say=print) -> float:
    """Run every shape (``processes`` at a time, default: every core) and return the
    seconds it all took; ``say`` hears each shape's time as it ends."""
    processes = processes or os.cpu_count() or 1
    start = time.perf_counter()
    # spawn: a fork would copy this process's numba threads' state into each worker.
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(processes, mp_context=context) as pool:
        runs = {pool.submit(_timed, shape): shape for shape in SHAPES}
        for done in concurrent.futures.as_completed(runs):
            say(f"{runs[done]}: {done.result():.1f} s")
    return time.perf_counter() - start
