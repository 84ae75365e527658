"""``asofgpu enrich``: attach the as-of matches of one parquet file to another, out of core.

The right file (the state: quotes) is read once and prepared (``AsofJoin``); the left file (the
events: trades) is streamed through it in chunks; each chunk's gather map takes the payload
columns (``gather``) and the chunk is encoded as a row group of the output on a thread pool
(``_output.ParquetStitcher``). The output equals ``join_asof(left, right, ...)`` on the whole
files, in the left file's row order, while memory holds the prepared right side and a bounded
number of chunks.

Nothing half-written: the output goes to a hidden temporary file beside OUT, renamed into place
(``os.replace``) only when complete; any failure or interrupt removes it, and an existing OUT
stays as it was.

>>> import pathlib, tempfile, pyarrow as pa, pyarrow.parquet as pq
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> pq.write_table(pa.table({"t": [2, 6], "sym": ["A", "A"]}), d / "trades.parquet")
>>> quotes = pa.table({"t": [1, 5], "sym": ["A", "A"], "bid": [9.5, 9.75]})
>>> pq.write_table(quotes, d / "quotes.parquet")
>>> s = enrich(Options(d / "trades.parquet", d / "quotes.parquet", d / "out.parquet",
...                    left_on="t", right_on="t", left_by=["sym"], right_by=["sym"], device="cpu"))
>>> pq.read_table(d / "out.parquet").to_pydict(), s.rows, s.matched
({'t': [2, 6], 'sym': ['A', 'A'], 'bid': [9.5, 9.75]}, 2, 2)
"""

from ._job import CODECS, DEFAULT_CHUNK_ROWS, EnrichError, Options, Summary, enrich
from ._output import OutputError

__all__ = ["CODECS", "DEFAULT_CHUNK_ROWS", "EnrichError", "OutputError", "Options", "Summary",
           "enrich"]
