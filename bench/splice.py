"""make bench, the splice join: ``asofgpu.splice_join`` against the best peer script for the
same output (issue 20: at most 0.3x its time).

10M trades x 10M quotes, each system in a process of its own on data read beforehand, the
outputs checked equal (``bench/script_bench.py``, the harness):

- asofgpu: ``asofgpu.splice_join(trades, quotes, on="time", by="symbol")``;
- polars (lazy, which runs the two joins at once): a backward ``join_asof`` each way, each
  side's rows tagged with their key, side and row number, ``concat(how="diagonal")`` and a
  sort by those tags;
- DuckDB: the two ``ASOF LEFT JOIN``s under ``UNION ALL`` and ``ORDER BY`` the same tags.

    python bench/splice.py              # 10M x 10M, 3 runs each
    python bench/splice.py --quick      # 200K x 200K, 1 run: checks the harness

Results: ``--out`` (bench/results) splice.md and splice.json.
"""

from __future__ import annotations

import sys

from script_bench import ScriptBench, main

COLUMNS = [  # the splice's output: the trades' columns, then the quotes', suffixed on clashes
    "time",
    "symbol",
    "price",
    "size",
    "time_right",
    "symbol_right",
    "bid",
    "ask",
    "bid_size",
    "ask_size",
]


def _asofgpu(trades: str, quotes: str):
    import pyarrow.parquet as pq

    import asofgpu as ag

    left, right = pq.read_table(trades), pq.read_table(quotes)
    return lambda: ag.splice_join(left, right, on="time", by="symbol", device="cpu")


def _polars(trades: str, quotes: str):
    import polars as pl

    left = pl.read_parquet(trades).lazy()
    right = pl.read_parquet(quotes).rename({"time": "time_right", "symbol": "symbol_right"}).lazy()
    tags = ["__key", "__side", "__row"]

    def tagged(frame, key: str, side: int):
        return frame.with_row_index("__row").with_columns(
            pl.col(key).alias("__key"), pl.lit(side, pl.Int8).alias("__side")
        )

    # polars drops the right side's by column: join on a copy, keep the original.
    left_driven = tagged(left, "time", 0).join_asof(
        right.with_columns(pl.col("symbol_right").alias("__by")),
        left_on="time",
        right_on="time_right",
        by_left="symbol",
        by_right="__by",
        **_no_sortedness_check(pl),
    )
    right_driven = tagged(right, "time_right", 1).join_asof(
        left.with_columns(pl.col("symbol").alias("__by")),
        left_on="time_right",
        right_on="time",
        by_left="symbol_right",
        by_right="__by",
        **_no_sortedness_check(pl),
    )
    query = (
        pl.concat([left_driven, right_driven], how="diagonal")
        .sort(tags, nulls_last=True)
        .select(COLUMNS)
    )
    return query.collect


def _no_sortedness_check(pl) -> dict:
    """The files are time-sorted; with ``by`` polars cannot check that and would only warn."""
    import inspect

    takes = "check_sortedness" in inspect.signature(pl.LazyFrame.join_asof).parameters
    return {"check_sortedness": False} if takes else {}


def _duckdb(trades: str, quotes: str):
    import duckdb

    con = duckdb.connect()
    for name, path in (("t", trades), ("q", quotes)):
        con.execute(
            f"CREATE TABLE {name} AS SELECT *, row_number() OVER () AS rn FROM read_parquet(?)",
            [path],
        )
    query = """
        SELECT time, symbol, price, size, time_right, symbol_right, bid, ask, bid_size, ask_size
        FROM (
            SELECT t.time, t.symbol, t.price, t.size, q.time AS time_right,
                   q.symbol AS symbol_right, q.bid, q.ask, q.bid_size, q.ask_size,
                   t.time AS k, 0 AS side, t.rn AS rn
            FROM t ASOF LEFT JOIN q ON t.symbol = q.symbol AND t.time >= q.time
            UNION ALL
            SELECT t.time, t.symbol, t.price, t.size, q.time, q.symbol, q.bid, q.ask,
                   q.bid_size, q.ask_size, q.time AS k, 1 AS side, q.rn AS rn
            FROM q ASOF LEFT JOIN t ON q.symbol = t.symbol AND q.time >= t.time
        )
        ORDER BY k NULLS LAST, side, rn
    """

    def run():
        result = con.execute(query)
        # DuckDB 2 names it to_arrow_table; 1.x fetch_arrow_table.
        fetch = getattr(result, "to_arrow_table", None) or result.fetch_arrow_table
        return fetch()

    return run


BENCH = ScriptBench(
    name="splice",
    title="The splice join against the peers' scripts",
    script=__file__,
    systems={
        "asofgpu": ("asofgpu.splice_join on pyarrow tables as read", _asofgpu),
        "polars": ("two LazyFrame.join_asof, concat, sort, collect", _polars),
        "duckdb": ("two ASOF LEFT JOIN, UNION ALL, ORDER BY", _duckdb),
    },
    goal=0.3,  # issue 20: at most 0.3x the faster peer's time
    size=(10**7, 10**7),
    quick=(200_000, 200_000),
    method="every trade and every quote on one timeline, each beside the other side's "
    "prevailing row.",
)

if __name__ == "__main__":
    sys.exit(main(BENCH, __doc__))
