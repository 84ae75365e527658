"""Reproducible synthetic market-data days: quotes and trades for the demo, bench and tests.

One trading session (09:30 to 16:00 New York, stored as UTC nanoseconds) over ``n_symbols``
string symbols whose activity follows a Zipf law, as real tapes do: a few symbols carry most
of the quotes. Quotes have bid/ask prices and sizes (four float64 columns); trades have a price
and a size. Both tables come out time-sorted unless ``shuffled=True``.

>>> quotes, trades = day(n_quotes=1_000, n_trades=200, n_symbols=20, seed=1)
>>> quotes.column_names
['time', 'symbol', 'bid', 'ask', 'bid_size', 'ask_size']
>>> trades.num_rows, str(trades.schema.field("time").type)
(200, 'timestamp[ns, tz=UTC]')
"""

from __future__ import annotations

import datetime

import numpy as np
import pyarrow as pa

SESSION_OPEN = datetime.datetime(2026, 11, 27, 14, 30, tzinfo=datetime.timezone.utc)
SESSION_NS = int(6.5 * 3600 * 10**9)
TIME_TYPE = pa.timestamp("ns", tz="UTC")


def symbols(n_symbols: int) -> pa.Array:
    """Ticker-like names: S0000, S0001, ..."""
    width = max(4, len(str(n_symbols - 1)))
    return pa.array([f"S{i:0{width}d}" for i in range(n_symbols)], pa.string())


def activity(n_symbols: int, exponent: float = 1.1) -> np.ndarray:
    """Zipf weights: symbol k gets a share proportional to 1 / (k + 1) ** exponent."""
    weights = 1.0 / np.arange(1, n_symbols + 1) ** exponent
    return weights / weights.sum()


def _times(rng: np.random.Generator, n: int) -> np.ndarray:
    start = int(SESSION_OPEN.timestamp()) * 10**9
    return np.sort(rng.integers(start, start + SESSION_NS, n, dtype=np.int64))


def day(
    n_quotes: int = 4_000_000,
    n_trades: int = 1_000_000,
    n_symbols: int = 1_000,
    seed: int = 0,
    shuffled: bool = False,
) -> tuple[pa.Table, pa.Table]:
    """(quotes, trades) for one session; the same seed gives the same tables."""
    if n_symbols < 1 or n_quotes < 0 or n_trades < 0:
        msg = "n_symbols must be positive and n_quotes, n_trades non-negative"
        raise ValueError(msg)
    if n_symbols > 2**31 - 1:  # the symbols' codes are int32
        msg = f"n_symbols must be below 2**31, got {n_symbols:,}"
        raise ValueError(msg)
    rng = np.random.default_rng(seed)
    names = symbols(n_symbols)
    weights = activity(n_symbols)
    base = np.exp(rng.normal(4.0, 1.0, n_symbols))  # a price level per symbol, ~$55 median

    q_sym = rng.choice(n_symbols, n_quotes, p=weights).astype(np.int32)
    mid = base[q_sym] * (1 + rng.normal(0, 0.002, n_quotes))
    half_spread = base[q_sym] * rng.uniform(0.0001, 0.001, n_quotes)
    quotes = pa.table(
        {
            "time": pa.array(_times(rng, n_quotes), TIME_TYPE),
            "symbol": names.take(pa.array(q_sym)),
            "bid": np.round(mid - half_spread, 2),
            "ask": np.round(mid + half_spread, 2),
            "bid_size": rng.integers(1, 50, n_quotes).astype(np.float64) * 100,
            "ask_size": rng.integers(1, 50, n_quotes).astype(np.float64) * 100,
        }
    )
    t_sym = rng.choice(n_symbols, n_trades, p=weights).astype(np.int32)
    trades = pa.table(
        {
            "time": pa.array(_times(rng, n_trades), TIME_TYPE),
            "symbol": names.take(pa.array(t_sym)),
            "price": np.round(base[t_sym] * (1 + rng.normal(0, 0.002, n_trades)), 2),
            "size": rng.integers(1, 20, n_trades).astype(np.int64) * 100,
        }
    )
    if shuffled:
        quotes = quotes.take(rng.permutation(n_quotes))
        trades = trades.take(rng.permutation(n_trades))
    return quotes, trades
