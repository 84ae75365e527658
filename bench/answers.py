"""bench/run.py's correctness check: each system's answer (the checked column, by trade)
saved by its worker after the warm-up, and compared, trade by trade, with the first answer
on the same files."""

from __future__ import annotations

from pathlib import Path

from common import BenchError
from peers import CHECKED


def by_trade(ids, values):
    """The checked column as float64 (NaN where no quote matched), in trade_id order."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(ids, (pa.Array, pa.ChunkedArray)):
        ids = ids.to_numpy()
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = pc.fill_null(values.cast(pa.float64()), float("nan")).to_numpy()
    order = np.argsort(ids, kind="stable")
    return np.asarray(ids)[order], np.asarray(values, dtype=np.float64)[order]


def save(path: str, ids, values) -> None:
    """An answer, as ``compare`` reads it."""
    import numpy as np

    np.savez(path, trade_id=ids, value=values)


def compare(check: Path, reference: Path, job, reference_name: str) -> None:
    """The job's answer must equal the reference's, trade by trade (NaN: no match)."""
    import numpy as np

    with np.load(check) as got, np.load(reference) as want:
        where = f"{job.name}: its {CHECKED!r} column"
        if not np.array_equal(got["trade_id"], want["trade_id"]):
            raise BenchError(
                f"{where} comes for other trades than {reference_name}'s "
                f"({len(got['trade_id']):,} rows against {len(want['trade_id']):,})"
            )
        a, b = got["value"], want["value"]
        wrong = ~((a == b) | (np.isnan(a) & np.isnan(b)))
        if wrong.any():
            first = int(np.argmax(wrong))
            raise BenchError(
                f"WRONG ANSWER: {where} differs from {reference_name}'s in "
                f"{int(wrong.sum()):,} of {len(a):,} trades; first at trade_id "
                f"{int(got['trade_id'][first])}: {a[first]} against {b[first]}"
            )
