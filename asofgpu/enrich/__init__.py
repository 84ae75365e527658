"""``asofgpu enrich``: attach the as-of matches of one parquet source to another.

LEFT (the events: trades) and RIGHT (the state: quotes) are each a parquet file, a folder of
them or a glob, hive partition folders becoming columns (``_sources``). Everything is checked
on zero rows first (``_checks``). RIGHT is held in one of four ways (``_attach``: in memory,
prepared once by ``AsofJoin``; streamed beside LEFT when both are sorted alike; streamed with
LEFT regrouped; or spilled to hash partitions); each LEFT file is streamed through it in chunks; each chunk's gather map takes the payload columns
(``gather``) and the chunk is encoded as a row group of its output file on a thread pool
(``_output.ParquetStitcher``). The output equals ``join_asof(left, right, ...)`` on the whole
data, in LEFT's row order: one file when LEFT is one file, else a folder with one file per LEFT
file at the same relative path.

Nothing half-written: the output goes to a hidden temporary file or folder beside OUT, renamed
into place only when complete; any failure or interrupt removes it, and an existing OUT stays
as it was.

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

from ._checks import CODECS, DEFAULT_CHUNK_ROWS, RIGHT_MODES, Options
from ._errors import EnrichError, OutputError
from ._job import Summary, enrich

__all__ = [
    "CODECS",
    "DEFAULT_CHUNK_ROWS",
    "RIGHT_MODES",
    "EnrichError",
    "OutputError",
    "Options",
    "Summary",
    "enrich",
]
