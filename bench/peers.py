"""The systems bench/run.py joins with, and how each joins: a runner per system reads the
parquet files into the system's native form (not timed), then ``join()`` is the timed region,
tables in, the joined table out; ``answer()`` gives the checked column by trade and ``free()``
drops what the join made, outside the timed region."""

from __future__ import annotations

from common import PAYLOAD

SYSTEMS = ("asofgpu", "polars", "pandas", "duckdb", "chdb", "pyarrow")
TITLES = {
    "asofgpu": "asofgpu",
    "polars": "polars",
    "pandas": "pandas",
    "duckdb": "DuckDB",
    "chdb": "ClickHouse (chdb)",
    "pyarrow": "pyarrow",
}
# Systems run only on sizes up to this many rows a side: pyarrow's Table.join_asof (Acero)
# grows faster than its input, so at 10M rows every run would end at the time limit after
# minutes and tell nothing.
MAX_ROWS = {"pyarrow": 1_000_000}
CHECKED = "bid"  # the payload column every system's answer is compared on


class AsofgpuRunner:
    def __init__(self, quotes: str, trades: str, order: str, prepared: bool):
        import pyarrow as pa
        import pyarrow.parquet as pq

        import asofgpu as ag

        self.pa, self.ag = pa, ag
        # As the reader gives them, in chunks: what users hold (issue 19); each peer likewise
        # gets its own reader's frames.
        self.quotes = pq.read_table(quotes)
        self.trades = pq.read_table(trades)
        self.prepared = None  # an AsofJoin after prepare(): the prepared mode

    def prepare(self) -> None:
        self.prepared = None  # drop the warm-up's before building the next: one at a time
        self.prepared = self.ag.AsofJoin(self.quotes["time"], self.quotes["symbol"], device="cpu")

    def join(self):
        ag = self.ag
        if self.prepared is None:
            return ag.join_asof(
                self.trades, self.quotes, on="time", by="symbol", strategy="backward", device="cpu"
            )
        gmap = self.prepared.join(self.trades["time"], self.trades["symbol"])
        taken = ag.gather(self.quotes.select(PAYLOAD), gmap)
        return self.pa.Table.from_arrays(
            self.trades.columns + taken.columns, names=self.trades.column_names + taken.column_names
        )

    def answer(self, result):
        return result["trade_id"], result[CHECKED]

    def free(self, result) -> None: ...


class PolarsRunner:
    def __init__(self, quotes: str, trades: str, order: str, prepared: bool):
        import polars as pl

        self.quotes, self.trades = pl.read_parquet(quotes), pl.read_parquet(trades)
        # By symbol, each symbol's keys ascend: what its by-join needs (the check agrees)
        self.sort = order == "shuffled"

    def join(self):
        trades, quotes = self.trades, self.quotes
        if self.sort:  # join_asof requires both sides sorted by `on`: part of its work here
            trades, quotes = trades.sort("time"), quotes.sort("time")
        # The inputs are sorted (by the data or just above); polars cannot verify that with
        # `by` and would only warn.
        return trades.join_asof(
            quotes, on="time", by="symbol", strategy="backward", check_sortedness=False
        )

    def answer(self, result):
        table = result.select(["trade_id", CHECKED]).to_arrow()
        return table["trade_id"], table[CHECKED]

    def free(self, result) -> None: ...


class PandasRunner:
    def __init__(self, quotes: str, trades: str, order: str, prepared: bool):
        import pandas as pd

        self.pd = pd
        self.quotes, self.trades = pd.read_parquet(quotes), pd.read_parquet(trades)
        self.sort = order != "sorted"  # its `on` must ascend overall, by symbol or not

    def join(self):
        trades, quotes = self.trades, self.quotes
        if self.sort:  # merge_asof requires both sides sorted by `on`: part of its work here
            trades, quotes = trades.sort_values("time"), quotes.sort_values("time")
        return self.pd.merge_asof(trades, quotes, on="time", by="symbol", direction="backward")

    def answer(self, result):
        import numpy as np

        return (
            result["trade_id"].to_numpy(),
            result[CHECKED].to_numpy(dtype=np.float64, na_value=np.nan),
        )

    def free(self, result) -> None: ...


class DuckdbRunner:
    # DuckDB's native table out is a table in its database: the join is materialised into
    # one (in memory), which each run drops afterwards, outside the timed region.
    JOIN = (
        "CREATE TEMP TABLE joined AS SELECT t.*, "
        + ", ".join(f"q.{c}" for c in PAYLOAD)
        + " FROM trades t ASOF LEFT JOIN quotes q"
        " ON t.symbol = q.symbol AND t.time >= q.time"
    )

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
    JOIN = (
        "CREATE TABLE joined ENGINE = Memory AS SELECT t.*, "
        + ", ".join(f"q.{c}" for c in PAYLOAD)
        + " FROM trades t ASOF LEFT JOIN quotes q"
        " ON t.symbol = q.symbol AND t.time >= q.time SETTINGS join_use_nulls = 1"
    )

    def __init__(self, quotes: str, trades: str, order: str, prepared: bool):
        import chdb
        from chdb import session

        self.chdb = chdb
        self.session = session.Session()
        for name, path in (("quotes", quotes), ("trades", trades)):
            self.session.query(
                f"CREATE TABLE {name} ENGINE = Memory AS "
                f"SELECT * FROM file({_clickhouse_string(path)}, Parquet)"
            )

    def join(self):
        self.session.query(self.JOIN)
        return "joined"

    def answer(self, result):
        table = self.chdb.to_arrowTable(
            self.session.query(f"SELECT trade_id, {CHECKED} FROM {result}", "Arrow")
        )
        return table["trade_id"], table[CHECKED]

    def free(self, result) -> None:
        self.session.query(f"DROP TABLE {result}")


class PyarrowRunner:
    def __init__(self, quotes: str, trades: str, order: str, prepared: bool):
        import pyarrow.parquet as pq

        self.quotes, self.trades = pq.read_table(quotes), pq.read_table(trades)
        self.sort = order != "sorted"  # Acero: `on` ascending overall

    def join(self):
        trades, quotes = self.trades, self.quotes
        if self.sort:  # Acero's as-of join refuses keys out of order: part of its work here
            trades, quotes = trades.sort_by("time"), quotes.sort_by("time")
        # A negative tolerance looks back (a positive one, forward); this one, without limit.
        return trades.join_asof(quotes, on="time", by="symbol", tolerance=-(2**63 - 1))

    def answer(self, result):
        return result["trade_id"], result[CHECKED]

    def free(self, result) -> None: ...


RUNNERS = {
    "asofgpu": AsofgpuRunner,
    "polars": PolarsRunner,
    "pandas": PandasRunner,
    "duckdb": DuckdbRunner,
    "chdb": ChdbRunner,
    "pyarrow": PyarrowRunner,
}
