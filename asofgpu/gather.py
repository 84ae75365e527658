"""Take payload rows by a gather map, null where the map says NO_MATCH (libcudf's NULLIFY).

>>> import numpy as np, pyarrow as pa
>>> quotes = pa.table({"bid": [1.0, 2.0, 3.0]})
>>> gather(quotes, np.array([2, NO_MATCH, 0], dtype=np.int32)).column("bid").to_pylist()
[3.0, None, 1.0]
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from ._columns import device_to_numpy, is_device, to_table
from ._types import NO_MATCH, NO_MATCH_INT64


def _host_map(gmap) -> np.ndarray:
    if is_device(gmap):
        gmap = device_to_numpy(gmap)
    elif isinstance(gmap, (pa.Array, pa.ChunkedArray)):
        if not pa.types.is_integer(gmap.type):
            msg = f"gmap must be a one-dimensional integer array, got {gmap.type}"
            raise TypeError(msg)
        gmap = gmap.cast(pa.int64()).fill_null(NO_MATCH_INT64)  # a null entry: no match
        gmap = gmap.to_numpy()
    gmap = np.asarray(gmap)
    if gmap.ndim != 1 or gmap.dtype.kind not in "iu":
        msg = f"gmap must be a one-dimensional integer array, got {gmap.dtype} of shape {gmap.shape}"
        raise TypeError(msg)
    return gmap


def _as_table(obj) -> pa.Table:
    try:
        return to_table(obj, "right_table")
    except TypeError:
        msg = f"right_table must be a table (pyarrow, pandas, polars, cuDF), got {type(obj).__name__}"
        raise TypeError(msg) from None


def gather(right_table, gmap) -> pa.Table:
    """Rows of ``right_table`` in map order; all-null rows where the map holds NO_MATCH.

    ``right_table`` is any table Arrow can read (pyarrow, pandas, polars, cuDF); the result is
    a ``pyarrow.Table`` with the same schema, every column nullable.
    """
    gmap = _host_map(gmap)
    table = _as_table(right_table)
    missing = (gmap == NO_MATCH) | (gmap == NO_MATCH_INT64)
    bad = ~missing & ((gmap < 0) | (gmap >= table.num_rows))
    if bad.any():
        at = int(np.argmax(bad))
        msg = (
            f"gmap[{at}] = {int(gmap[at])} is not a row of right_table ({table.num_rows} rows) "
            f"nor NO_MATCH"
        )
        raise IndexError(msg)
    indices = pa.array(gmap.astype(np.int64, copy=False), mask=missing if missing.any() else None)
    if len(gmap) >= _THREADED_ROWS and table.num_columns > 1:
        # Arrow's take is single-threaded and releases the GIL: one column per core.
        with ThreadPoolExecutor(max_workers=min(table.num_columns, os.cpu_count() or 1)) as pool:
            columns = list(pool.map(lambda c: _take(c, indices), table.columns))
    else:
        columns = [_take(c, indices) for c in table.columns]
    return pa.Table.from_arrays(columns, schema=table.schema)


_THREADED_ROWS = 1 << 16


def _take(column: pa.ChunkedArray, indices: pa.Array) -> pa.ChunkedArray:
    # Arrow's take has no kernel for view strings and binaries (polars exports them):
    # take their large form and cast back.
    view = column.type if _is_view(column.type) else None
    if view is not None:
        column = column.cast(pa.large_string() if pa.types.is_string_view(view)
                             else pa.large_binary())
    taken = column.take(indices)
    return taken.cast(view) if view is not None else taken


def _is_view(t: pa.DataType) -> bool:
    return pa.types.is_string_view(t) or pa.types.is_binary_view(t)
