"""bench/run.py's data sets: a synthetic market-data day of each size and order, generated
once into parquet files (quotes, trades, and the prepared mode's probe batch) under
``--data``."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from common import label, write_parquet


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


def dataset(args, quotes_rows: int, trades_rows: int, order: str, say) -> Dataset:
    """The parquet files of one size and order, generated on first use."""
    folder = args.data / (
        f"{label(quotes_rows)}x{label(trades_rows)}-{order}-{args.symbols}sym-seed{args.seed}"
    )
    probe_rows = min(args.probe_rows, trades_rows)
    ds = Dataset(
        quotes_rows,
        trades_rows,
        order,
        folder / "quotes.parquet",
        folder / "trades.parquet",
        folder
        / (
            "trades.parquet"
            if probe_rows == trades_rows
            else f"trades-probe{label(probe_rows)}.parquet"
        ),
        probe_rows,
    )
    if ds.quotes.exists() and ds.trades.exists() and ds.probe.exists():
        return ds
    import numpy as np
    import pyarrow as pa

    from asofgpu import marketdata

    folder.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    quotes, trades = marketdata.day(
        quotes_rows, trades_rows, args.symbols, seed=args.seed, shuffled=order == "shuffled"
    )
    # A trade id lets the check line up answers that come back in another row order (polars
    # and pandas return the sorted order on shuffled input; DuckDB promises no order).
    trades = trades.append_column("trade_id", pa.array(np.arange(trades_rows, dtype=np.int64)))
    if order == "by-symbol":  # each symbol's rows together, in time order: a file a symbol
        by_symbol = [("symbol", "ascending"), ("time", "ascending")]
        quotes, trades = quotes.sort_by(by_symbol), trades.sort_by(by_symbol)
    write_parquet(quotes, ds.quotes)
    write_parquet(trades, ds.trades)
    if ds.probe != ds.trades:
        # A random subset of the day's trades, kept in file order (so still in the order of
        # the data set): a probe batch that spans the whole session.
        rng = np.random.default_rng(args.seed)
        rows = np.sort(rng.choice(trades_rows, probe_rows, replace=False))
        write_parquet(trades.take(pa.array(rows)), ds.probe)
    del quotes, trades
    pa.default_memory_pool().release_unused()
    say(
        f"generated {ds.name} {order} ({quotes_rows:,} quotes, {trades_rows:,} trades) in "
        f"{folder} in {time.perf_counter() - start:.1f} s"
    )
    return ds
