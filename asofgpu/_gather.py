"""Take payload rows by a gather map, null where the map says NO_MATCH (libcudf's NULLIFY).

>>> import numpy as np, pyarrow as pa
>>> from asofgpu import NO_MATCH
>>> quotes = pa.table({"bid": [1.0, 2.0, 3.0]})
>>> gather(quotes, np.array([2, NO_MATCH, 0], dtype=np.int32)).column("bid").to_pylist()
[3.0, None, 1.0]
"""

from __future__ import annotations

import weakref
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import _arrow_numpy as arrow_numpy
from ._backend import (
    check_map,
    chunked_passes,
    take_chunked,
    take_fixed,
    take_text,
    take_views,
    walks,
)
from ._columns import device_to_numpy, is_device, to_arrow, to_table
from ._encode import unified, wide_indices
from ._types import NO_MATCH, NO_MATCH_INT64, GatherMap, TableLike


def _host_map(gmap) -> np.ndarray:
    if type(gmap).__module__.split(".")[0] in ("pandas", "polars"):
        gmap = to_arrow(gmap, "gmap")  # a Series with nulls: numpy would make them floats
    if is_device(gmap):
        gmap = device_to_numpy(gmap)
    elif isinstance(gmap, (pa.Array, pa.ChunkedArray)):
        if not pa.types.is_integer(gmap.type):
            msg = f"gmap must be a one-dimensional integer array, got {gmap.type}"
            raise TypeError(msg)
        if pa.types.is_uint64(gmap.type) and (pc.max(gmap).as_py() or 0) >= 2**63:
            # No row, and past int64: kept as uint64 for the row check below to name it.
            gmap = arrow_numpy.filled(gmap, 0)
        else:
            gmap = arrow_numpy.filled(gmap.cast(pa.int64()), NO_MATCH_INT64)  # null: no match
    gmap = np.asarray(gmap)
    if gmap.shape == (0,):
        gmap = gmap.astype(np.int32)  # an empty list is float64 to numpy
    if not gmap.dtype.isnative:  # big-endian: the kernels read native integers
        gmap = gmap.astype(gmap.dtype.newbyteorder("="))
    if gmap.ndim != 1 or gmap.dtype.kind not in "iu":
        msg = (
            f"gmap must be a one-dimensional integer array, got {gmap.dtype} of shape {gmap.shape}"
        )
        raise TypeError(msg)
    return gmap


def gather(right_table: TableLike, gmap: GatherMap | pa.Array | pa.ChunkedArray) -> pa.Table:
    """Rows of ``right_table`` in map order; all-null rows where the map holds NO_MATCH.

    ``right_table`` is any table Arrow can read (pyarrow, pandas, polars, cuDF); the result is
    a ``pyarrow.Table`` with the same schema, every column nullable.
    """
    gmap = _host_map(gmap)
    table = to_table(right_table, "right_table")
    parallel = walks.gathers_in_parallel(len(gmap))
    if parallel:
        valid, n_missing, n_bad = check_map(gmap, table.num_rows)
    else:
        valid = (gmap >= 0) & (gmap < table.num_rows)
        # (either sentinel, in a map of any integer type: not is_no_match, for int32 and int64)
        n_bad = int(((gmap != NO_MATCH) & (gmap != NO_MATCH_INT64) & ~valid).sum())
        n_missing = len(gmap) - int(valid.sum()) - n_bad
    if n_bad:
        at = int(np.argmax(~valid & (gmap != NO_MATCH) & (gmap != NO_MATCH_INT64)))
        msg = (
            f"gmap[{at}] = {int(gmap[at])} is not a row of right_table ({table.num_rows} rows) "
            f"nor NO_MATCH"
        )
        raise IndexError(msg)
    fixed = [
        k
        for k, column in enumerate(table.columns)
        if _fixed_width(column)
        and (parallel or walks.gathers_in_place(len(gmap), column.null_count))
    ]
    taken = dict(zip(fixed, _take_fixed(table, fixed, gmap, valid, n_missing))) if fixed else {}
    for k, column in enumerate(table.columns):
        if k in taken:
            continue
        if parallel and arrow_numpy.is_offset_text(column.type):
            taken[k] = _take_text(column, gmap, valid)
        elif parallel and arrow_numpy.is_view_text(column.type):
            taken[k] = _take_views(column, gmap, valid)
        else:
            starts = _starts(table)[k] if arrow_numpy.takes_per_chunk(column, len(gmap)) else None
            taken[k] = _take(column, gmap, None if n_missing == 0 else valid, starts)
    # Every field nullable: a NO_MATCH row is null in a field the table declared not null.
    # Each of its column's type: run ends widen where the result outgrows them (``_take``).
    columns = [taken[k] for k in range(table.num_columns)]
    fields = [f.with_type(c.type).with_nullable(True) for f, c in zip(table.schema, columns)]
    return pa.Table.from_arrays(columns, schema=pa.schema(fields, table.schema.metadata))


def _fixed_width(column: pa.ChunkedArray) -> bool:
    """Integers, floats of 4 or 8 bytes, dates, times, instants and durations: numpy views of
    their values (with nulls, of whatever their slots hold: the validity is taken beside
    them). Not booleans, whose values are bits. Decided by the type alone: a table's chunks
    are walked once, by ``_take_fixed``."""
    dtype = arrow_numpy.physical_dtype(column.type)
    return column.num_chunks > 0 and dtype is not None and dtype.kind != "b"


class _Layout(NamedTuple):
    """Where a table's fixed-width columns lie, by their positions among them: those Arrow
    takes (a chunk without a values buffer), those in one run (and its values), and the
    passes over those in chunks (``chunked_passes``)."""

    by_arrow: list[int]
    whole: list[tuple[int, np.ndarray]]
    chunked: list[int]
    passes: list


# What is found of the tables gathered from, while they live (by id and what was found, with
# a weak reference that removes the entry when the table goes): a service, or enrich's LEFT
# chunks, gather from one payload table again and again. Walking 4 columns of 77 chunks each
# is 0.4 ms of a 1M-row gather's 5 (the layouts); finding where 1,200 chunks start was 1.8 ms
# of taking 7 rows (the starts).
_FOUND: dict[tuple, tuple] = {}


def _found(table: pa.Table, what: tuple, find):
    """``find()``, once for each live ``table`` and ``what``."""
    key = (id(table), *what)
    known = _FOUND.get(key)
    if known is not None and known[0]() is table:
        return known[1]
    value = find()

    def forget(_, found=_FOUND):  # the dict itself: a table may outlive the globals
        found.pop(key, None)

    _FOUND[key] = (weakref.ref(table, forget), value)
    return value


def _starts(table: pa.Table) -> list[np.ndarray]:
    """``arrow_numpy.chunk_starts`` of each column of ``table``."""
    return _found(table, ("starts",), lambda: list(map(arrow_numpy.chunk_starts, table.columns)))


def _layout(table: pa.Table, fixed: list[int], columns: list[pa.ChunkedArray]) -> _Layout:
    """The ``_Layout`` of ``table``'s fixed-width ``columns`` (its columns ``fixed``), found
    once for each table and choice of columns: a small map takes only the columns without
    nulls (``walks.gathers_in_place``), a large one all of them."""
    return _found(table, ("layout", *fixed), lambda: _find_layout(columns))


def _find_layout(columns: list[pa.ChunkedArray]) -> _Layout:
    by_arrow, whole, chunked, described = [], [], [], []
    for k, column in enumerate(columns):
        runs = arrow_numpy.segments(column)
        if runs is None:
            by_arrow.append(k)
        elif len(runs) > 1:
            chunked.append(k)
            width = column.type.bit_width // 8
            described.append((width, [a for a, _ in runs], [n for _, n in runs]))
        else:
            whole.append((k, arrow_numpy.values(column)))
    return _Layout(by_arrow, whole, chunked, chunked_passes(described) if chunked else [])


def _take_fixed(
    table: pa.Table, fixed: list[int], gmap: np.ndarray, valid: np.ndarray, n_missing: int
) -> list:
    """``table``'s fixed-width columns ``fixed`` taken on all cores (``_backend.take_fixed``),
    each read where it lies (Arrow's take for one with a chunk without values buffer): a
    column whose chunks are runs in several places (``arrow_numpy.segments``) is gathered
    run by run in place (``_backend.take_chunked``), not combined into a copy first."""
    columns = [table.column(k) for k in fixed]
    layout = _layout(table, fixed, columns)
    buffers = {}
    if layout.whole:
        whole = [values for _, values in layout.whole]
        buffers.update(zip([k for k, _ in layout.whole], take_fixed(whole, gmap, valid)))
    if layout.chunked:
        buffers.update(zip(layout.chunked, take_chunked(layout.passes, gmap, valid)))
    bitmap = None if n_missing == 0 else pa.py_buffer(np.packbits(valid, bitorder="little"))
    taken = []
    for k, column in enumerate(columns):
        if k in layout.by_arrow:
            taken.append(_take(column, gmap, None if n_missing == 0 else valid))
            continue
        nulls, column_bitmap = n_missing, bitmap
        if column.null_count:
            _, column_bitmap, nulls = _kept(column, gmap, valid)
        taken.append(
            pa.Array.from_buffers(
                column.type, len(gmap), [column_bitmap, buffers[k]], null_count=nulls
            )
        )
    return taken


def _kept(column, gmap: np.ndarray, valid: np.ndarray):
    """(kept, bitmap, nulls) of a column taken by a checked map: a row is valid where the map
    and the taken value are; the bitmap is None when no row is null."""
    kept = valid
    if column.null_count:
        kept = valid & arrow_numpy.valid(column)[np.where(valid, gmap, 0)]
    nulls = len(gmap) - int(np.count_nonzero(kept))
    bitmap = pa.py_buffer(np.packbits(kept, bitorder="little")) if nulls else None
    return kept, bitmap, nulls


# The most bytes a text or binary array of 32-bit offsets holds.
TEXT_BYTES_MOST = 2**31 - 1


def _take_text(column: pa.ChunkedArray, gmap: np.ndarray, valid: np.ndarray):
    """A text or binary column taken on all cores (``_backend.take_text``), from its chunks
    combined into one array (a copy of its bytes, a small part of the take's time). A column
    of 32-bit offsets whose chunks, or whose rows taken, hold more bytes than those offsets
    reach is taken in its large form and comes back in chunks that do (``_in_chunks_of``)."""
    narrow = _narrow_text(column.type)
    if narrow and _overflows(column):  # its chunks cannot be combined
        return _in_chunks_of(_take_text(_widened(column), gmap, valid), column.type)
    array = arrow_numpy.combined(column)
    offsets, data = _offsets(array), array.buffers()[2]
    data = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
    kept, bitmap, nulls = _kept(array, gmap, valid)
    most = TEXT_BYTES_MOST if narrow else np.iinfo(np.int64).max
    buffers = take_text(offsets, data, gmap, kept, most)
    if buffers is None:  # the rows taken overflow 32-bit offsets
        return _in_chunks_of(_take_text(_widened(column), gmap, valid), column.type)
    return pa.Array.from_buffers(column.type, len(gmap), [bitmap, *buffers], null_count=nulls)


def _narrow_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_binary(t)


def _widened(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A text or binary column of 32-bit offsets in its large form (its bytes shared)."""
    return column.cast(pa.large_string() if pa.types.is_string(column.type) else pa.large_binary())


def _offsets(array: pa.Array) -> np.ndarray:
    """An offset-text array's offsets, one a row and one more (``count``: a buffer may be
    longer than its array, padding or a slice's parent)."""
    dtype = np.int32 if _narrow_text(array.type) else np.int64
    count = array.offset + len(array) + 1
    return np.frombuffer(array.buffers()[1], dtype, count=count)[array.offset :]


def _overflows(column: pa.ChunkedArray) -> bool:
    """Whether a text column's values hold more bytes than 32-bit offsets reach; counted
    only where its buffers' size says they may."""
    if column.nbytes <= TEXT_BYTES_MOST:
        return False
    chunks = map(_offsets, column.chunks)
    return sum(int(o[-1]) - int(o[0]) for o in chunks if len(o) > 1) > TEXT_BYTES_MOST


def _in_chunks_of(taken: pa.Array | pa.ChunkedArray, kind: pa.DataType) -> pa.ChunkedArray:
    """A large text or binary column, taken from a column of ``kind`` (32-bit offsets: no
    value is longer than they reach), as a column of ``kind`` in chunks of at most
    ``TEXT_BYTES_MOST`` bytes each. Each chunk's offsets start from 0 (Arrow's cast keeps the
    large offsets as they are, which past 2 GiB do not fit)."""
    pieces = []
    for chunk in taken.chunks if isinstance(taken, pa.ChunkedArray) else [taken]:
        offsets, data = _offsets(chunk), chunk.buffers()[2] or pa.py_buffer(b"")
        start = 0
        while start < len(chunk):
            end = int(np.searchsorted(offsets, offsets[start] + TEXT_BYTES_MOST, side="right"))
            end = max(end - 1, start + 1)
            kept = arrow_numpy.valid(chunk.slice(start, end - start))
            nulls = len(kept) - int(np.count_nonzero(kept))
            bitmap = pa.py_buffer(np.packbits(kept, bitorder="little")) if nulls else None
            rebased = pa.py_buffer((offsets[start : end + 1] - offsets[start]).astype(np.int32))
            values = data.slice(int(offsets[start]), int(offsets[end] - offsets[start]))
            pieces.append(
                pa.Array.from_buffers(kind, end - start, [bitmap, rebased, values], nulls)
            )
            start = end
    return pa.chunked_array(pieces, kind)


def _take_views(column: pa.ChunkedArray, gmap: np.ndarray, valid: np.ndarray) -> pa.Array:
    """A view-text or view-binary column (polars exports its text as them) taken on all
    cores: its 16-byte views, which keep pointing into the column's data buffers (the result
    shares them; nothing of the text is copied). Chunks are combined first, which rewrites
    the views, not the text."""
    array = arrow_numpy.combined(column)
    _, views, *data = array.buffers()
    views = np.frombuffer(views, np.uint64, count=2 * (array.offset + len(array)))
    views = views.reshape(-1, 2)[array.offset :]
    kept, bitmap, nulls = _kept(array, gmap, valid)
    out = take_views(views, gmap, kept)
    taken = pa.Array.from_buffers(column.type, len(gmap), [bitmap, out, *data], null_count=nulls)
    return _no_absent_data(taken)


def _take(
    column: pa.ChunkedArray, gmap: np.ndarray, valid: np.ndarray | None, starts=None
) -> pa.ChunkedArray:
    """``arrow_numpy.take`` of a column, whatever its type; ``starts``: its chunk starts
    (``_starts``), read only where the column is taken as it is: a cast or a decoding drops
    its empty chunks."""
    # Arrow's take has no kernel for view strings and binaries, nor for lists and structs
    # of them (polars exports its text so): a small map takes their large form, cast back.
    kind, plain = column.type, arrow_numpy.viewless(column.type)
    if pa.types.is_run_end_encoded(kind):  # no take kernel either: decoded and encoded again
        taken = _take(pc.run_end_decode(column), gmap, valid)
        return pc.run_end_encode(taken, run_end_type=_run_ends(kind.run_end_type, len(gmap)))
    if arrow_numpy.unifies_wrong(column):  # as Arrow's take of chunks would unify them
        taken = _take(arrow_numpy.decoded(column), gmap, valid)
        return arrow_numpy.dictionary_encode(taken).cast(kind)
    if plain == kind:
        try:
            return arrow_numpy.take(column, gmap, valid, starts)
        except pa.ArrowInvalid as exc:
            if _narrow_text(kind) and "overflow" in str(exc):
                # chunks, or rows taken, of more bytes than 32-bit offsets reach (Arrow's
                # take combines the chunks first): taken in the large form, in chunks that fit
                return _in_chunks_of(_take(_widened(column), gmap, valid), kind)
            wide = arrow_numpy.rebuilt(kind, wide_indices)
            if wide == kind:
                raise
            # chunks whose dictionaries (at any depth) together outgrow the index type
            # (uint8's 255 values): taken with wider indices, as run ends widen above
            wider = unified(column) if pa.types.is_dictionary(kind) else column.cast(wide)
            return arrow_numpy.take(wider, gmap, valid)
    taken = arrow_numpy.take(column.cast(plain), gmap, valid).cast(kind)
    if not arrow_numpy.is_view_text(kind):
        return taken
    return pa.chunked_array([_no_absent_data(c) for c in taken.chunks], kind)


def _run_ends(run_end_type: pa.DataType, rows: int) -> pa.DataType:
    """``run_end_type``, or the narrowest wider one that counts to ``rows``: int16 run ends
    hold 32,767 rows, and a gather of more from such a column raised Arrow's error.

    >>> _run_ends(pa.int16(), 100), _run_ends(pa.int16(), 40_000), _run_ends(pa.int32(), 2**31)
    (DataType(int16), DataType(int32), DataType(int64))
    """
    for t in (run_end_type, pa.int32(), pa.int64()):
        if rows < 2 ** (t.bit_width - 1):  # signed run ends
            return t
    return pa.int64()


def _no_absent_data(array: pa.Array) -> pa.Array:
    """A view array without the absent data buffer that pyarrow's cast (18 to 21 at least)
    gives one whose text all fits in its views, and that a gather of such a column would pass
    on: polars 1.44 crashes reading it (a null buffer in the C data interface)."""
    validity, views, *data = array.buffers()
    if not data or any(b is not None for b in data):
        return array
    return pa.Array.from_buffers(
        array.type, len(array), [validity, views], null_count=array.null_count, offset=array.offset
    )


def attached_field(name: str, kind: pa.DataType, source: pa.Field) -> pa.Field:
    """The output field of a right column ``source`` attached as ``name`` of type ``kind``:
    nullable (rows without a match are null), with ``source``'s metadata (polars' Enum
    categories, a user's units) but its parquet field id, which names a right column and
    may be a left one's too. (The left's fields are kept as they are.)

    >>> source = pa.field("bid", pa.float64(), False, {"unit": "USD", "PARQUET:field_id": "3"})
    >>> attached_field("bid_right", pa.float64(), source)
    pyarrow.Field<bid_right: double>
    >>> _.metadata
    {b'unit': b'USD'}
    """
    kept = {k: v for k, v in (source.metadata or {}).items() if k != b"PARQUET:field_id"}
    return pa.field(name, kind, metadata=kept or None)
