"""RIGHT out of core: both sides hash-partitioned on their by keys into temporary files, each
partition joined in memory, the results put back in LEFT's order.

Rows of one group land in one partition (``partition_of`` hashes the by values, so equal
values hash equally on both sides whatever their Arrow types), and each side keeps its row
order within a partition, so every partition joins exactly as the whole would: RIGHT's row
order still decides among equal keys. LEFT rows carry their position; each partition's result
is (position, payload) in increasing position, and the output is rebuilt chunk by chunk in
LEFT's order by taking from every partition the rows before the chunk's end
(``Results.until``). Partitions are Arrow IPC streams in a hidden folder of ``--tmp-dir``,
removed on every way out.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import zlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import _arrow_numpy as arrow_numpy
from .._gather import gather
from . import _leftovers as leftovers
from ._errors import OutputError, one_line
from ._schemas import is_text
from ._sources import Source
from ._stream import key_numbers, sorted_sample

POSITION = "__asofgpu_left_row"
_TICKS_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}


# --------------------------------------------------------------------------- hashing


def _mix(x: np.ndarray) -> np.ndarray:
    """A 64-bit finalizer (murmur3's): nearby values spread over all partitions."""
    x = x ^ (x >> np.uint64(33))
    x = x * np.uint64(0xFF51AFD7ED558CCD)
    x = x ^ (x >> np.uint64(33))
    x = x * np.uint64(0xC4CEB9FE1A85EC53)
    return x ^ (x >> np.uint64(33))


def _canonical(arr: pa.Array) -> np.ndarray:
    """One uint64 a row such that equal values (as the join compares them) are equal: floats
    with -0.0 as 0.0 and one NaN (``ordered_key``'s), instants and times in whole seconds (any
    unit: a coarser value may collide, which only puts two groups in one partition), dates in
    days; other fixed-width values (decimals, fixed-size binary, intervals), whose by-columns
    are of one type on both sides, by their bits."""
    t = arr.type
    if pa.types.is_boolean(t):
        return arrow_numpy.filled(arr, False).astype(np.uint64)
    if pa.types.is_null(t):
        return np.zeros(len(arr), np.uint64)
    if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_temporal(t)):
        return _bits(arr)
    values = key_numbers(arr)[0]  # null rows hold 0; _hashes overwrites them
    if pa.types.is_date64(t):
        values = values // 86_400_000
    elif pa.types.is_timestamp(t) or pa.types.is_duration(t) or pa.types.is_time(t):
        values = values // _TICKS_PER_SECOND[t.unit]
    return values.view(np.uint64)


def _bits(arr: pa.Array) -> np.ndarray:
    """One uint64 a row from the bits of a fixed-width value of any width, words mixed in
    turn (null rows: whatever their slots hold; ``_hashes`` overwrites them).

    >>> import decimal
    >>> h = _bits(pa.array([decimal.Decimal(1), decimal.Decimal(2), decimal.Decimal(1)]))
    >>> bool(h[0] == h[2]), bool(h[0] == h[1])
    (True, False)
    """
    width = arr.type.bit_width // 8
    data = arr.buffers()[1]
    rows = np.frombuffer(data, np.uint8, len(arr) * width, arr.offset * width).reshape(-1, width)
    words = np.zeros((len(arr), -(-width // 8) * 8), np.uint8)
    words[:, :width] = rows
    hashes = np.zeros(len(arr), np.uint64)
    for word in words.view(np.uint64).T:
        hashes = _mix(hashes ^ word)
    return hashes


def _text_hashes(values: pa.Array) -> np.ndarray:
    """A uint64 per distinct text value: its bytes' CRC-32 (Python's own hash is salted)."""
    return np.fromiter(
        (zlib.crc32(v.as_buffer().to_pybytes()) if v.is_valid else 0 for v in values),
        np.uint64,
        len(values),
    )


def _hashes(arr: pa.Array) -> np.ndarray:
    """A uint64 a row; null rows hash to 0 (a null by-key never matches: any partition)."""
    t = arr.type
    if pa.types.is_dictionary(t) or is_text(t):
        if not pa.types.is_dictionary(t):
            arr = pc.dictionary_encode(arr)
        by_value = (
            _text_hashes(arr.dictionary)
            if is_text(arr.type.value_type)
            else _mix(_canonical(arr.dictionary))
        )
        indices = arrow_numpy.filled(arr.indices, 0)
        hashes = by_value[indices] if len(by_value) else np.zeros(len(arr), np.uint64)
    else:
        hashes = _mix(_canonical(arr))
    if arr.null_count:
        hashes[~arrow_numpy.valid(arr)] = 0
    return hashes


def partition_of(batch: pa.RecordBatch | pa.Table, by: list[str], k: int) -> np.ndarray:
    """Each row's partition in [0, k), from its by values (uint16: numpy sorts it by radix)."""
    combined = np.zeros(batch.num_rows, np.uint64)
    for name in by:
        column = batch.column(name)
        if isinstance(column, pa.ChunkedArray):
            column = arrow_numpy.combined(column)
        combined = _mix(combined * np.uint64(31) + _hashes(column))
    return (combined % np.uint64(k)).astype(np.uint16)


# --------------------------------------------------------------------------- spill files


class SpillFolder:
    """A hidden folder in ``tmp_dir`` for the partitions, removed on every way out.
    ``named``: how errors name ``tmp_dir`` (``--tmp-dir``, or OUT's folder by default)."""

    def __init__(self, tmp_dir: str, named: str = "--tmp-dir"):
        self.where = f"{named} {tmp_dir}"
        leftovers.remove_stale(tmp_dir)
        try:
            self.path = tempfile.mkdtemp(prefix=f".asofgpu-spill-{leftovers.tag()}-", dir=tmp_dir)
        except OSError as exc:
            raise OutputError(
                f"cannot write spill files in {self.where}: {exc.strerror or exc}"
            ) from None
        self.bytes = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        shutil.rmtree(self.path, ignore_errors=True)
        return False

    def failed(self, exc: OSError) -> OutputError:
        return OutputError(f"cannot write spill files in {self.where}: {one_line(exc)}")

    def partition(
        self, name: str, batches, schema: pa.Schema, parts: int, part_of
    ) -> tuple[list[str], np.ndarray]:
        """``batches`` split into ``parts`` IPC streams by ``part_of(batch)`` (each row's
        part, uint16; a row of part ``parts`` or more is dropped), each in the order the rows
        came; their paths and row counts."""
        paths = [os.path.join(self.path, f"{name}-{i}.arrow") for i in range(parts)]
        rows = np.zeros(parts, np.int64)
        sinks, writers = [], []
        try:
            for path in paths:
                sinks.append(pa.OSFile(path, "wb"))
                writers.append(pa.ipc.new_stream(sinks[-1], schema))
            for batch in batches:
                ids = part_of(batch)
                order = np.argsort(ids, kind="stable")
                ends = np.cumsum(np.bincount(ids, minlength=parts)[:parts])
                taken = batch.take(arrow_numpy.array(order))
                for i, writer in enumerate(writers):
                    start = ends[i - 1] if i else 0
                    if ends[i] > start:
                        writer.write_batch(_compact(taken.slice(start, ends[i] - start)))
                        rows[i] += ends[i] - start
            for writer, sink in zip(writers, sinks):
                writer.close()
                sink.close()  # (a write the file system put off fails here)
            self.bytes += sum(os.path.getsize(p) for p in paths)
        except BaseException as exc:
            _close_quietly(sinks)
            if isinstance(exc, OSError):  # (the files gone too: a folder removed under the run)
                raise self.failed(exc) from None
            raise
        return paths, rows

    def writer(self, name: str, schema: pa.Schema) -> tuple[str, SpillStream]:
        path = os.path.join(self.path, f"{name}.arrow")
        try:
            return path, SpillStream(path, schema)
        except OSError as exc:
            raise self.failed(exc) from None


class SpillStream:
    """An IPC stream and the file under it, closed together (the stream's ``close`` leaves
    its file open)."""

    def __init__(self, path: str, schema: pa.Schema):
        self._sink = pa.OSFile(path, "wb")
        try:
            self._writer = pa.ipc.new_stream(self._sink, schema)
        except BaseException:
            _close_quietly([self._sink])
            raise

    def write_table(self, table: pa.Table, max_chunksize: int | None = None) -> None:
        for batch in table.to_batches(max_chunksize):
            self._writer.write_batch(_compact(batch))

    def close(self) -> None:
        try:
            self._writer.close()
        finally:
            self._sink.close()

    def abandon(self) -> None:
        """Close it on the way out of an error, which a failed close must not hide."""
        _close_quietly([self._sink])


def _compact(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with each dictionary column holding fewer rows than its dictionary cut to
    the values those rows use (``used_dictionary``): the stream writes a batch's dictionary
    with it, and each piece of a row group of 1M distinct ids carried all 1M (1.6 GiB
    spilled for 46 MiB of keys, in 224 s, where int ids took 8)."""
    columns = [arrow_numpy.trimmed_dictionary(column) for column in batch.columns]
    if all(a is b for a, b in zip(columns, batch.columns)):
        return batch
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


def _close_quietly(sinks) -> None:
    """Close ``sinks`` on the way out of an error (out of descriptors, "Too many open files",
    the ones still open kept the spill folder's removal from opening it, and the folder
    stayed), which a failed close must not hide."""
    for sink in sinks:
        try:
            sink.close()
        except OSError:
            pass


def read_all(path: str) -> pa.Table:
    with pa.OSFile(path) as f:
        return pa.ipc.open_stream(f).read_all()


def stream_schema(path: str) -> pa.Schema:
    with pa.OSFile(path) as f:
        return pa.ipc.open_stream(f).schema


def read_batches(path: str):
    with pa.OSFile(path) as f:
        yield from pa.ipc.open_stream(f)


# --------------------------------------------------------------------------- key ranges


def key_ranges(path: str, on: str, ranges: int, sample: int = 1 << 20) -> np.ndarray:
    """``ranges - 1`` keys that cut a partition's rows into about equal key ranges, from an
    evenly spaced sample of its keys (repeated keys may merge ranges)."""
    total = sum(b.num_rows for b in read_batches(path))
    keys = sorted_sample(read_batches(path), on, max(1, total // sample))
    if not len(keys):
        return keys
    cuts = keys[(np.arange(1, ranges) * len(keys)) // ranges]
    return np.unique(cuts)


def range_of(on: str, cuts: np.ndarray, null_range: int):
    """``part_of`` for ``SpillFolder.partition``: each row's key range (``searchsorted``
    right: equal keys share a range), ``null_range`` for a null key."""

    def part_of(batch) -> np.ndarray:
        values, valid = key_numbers(batch.column(on))
        ids = np.searchsorted(cuts, values, side="right").astype(np.uint16)
        if valid is not None:
            ids[~valid] = null_range
        return ids

    return part_of


class Results:
    """A partition's results (position, payload) in increasing position, read in order."""

    def __init__(self, reader, path: str | None = None):
        self._reader = reader  # read_next_batch(): the next batch, StopIteration at the end
        self.path = path  # the file read, if any
        self._rest: pa.Table | None = None
        self._positions = np.zeros(0, np.int64)

    @classmethod
    def of_file(cls, path: str) -> Results:
        return cls(pa.ipc.open_stream(pa.OSFile(path)), path)  # closes with the reader

    @classmethod
    def of_table(cls, table: pa.Table) -> Results:
        """Results held in memory (a partition that is all of LEFT)."""
        return cls(pa.RecordBatchReader.from_batches(table.schema, table.to_batches()))

    def _load(self) -> bool:
        """Read the next non-empty batch into ``_rest``; False at the end."""
        while self._rest is None:
            try:
                batch = self._reader.read_next_batch()
            except StopIteration:
                return False
            if batch.num_rows:
                self._rest = pa.Table.from_batches([batch])
                self._positions = arrow_numpy.values(self._rest.column(POSITION))
        return True

    def next_end(self) -> int | None:
        """One past the last position of the batch at hand (None: no rows are left)."""
        return int(self._positions[-1]) + 1 if self._load() else None

    def until(self, end: int) -> list[pa.Table]:
        """The next rows whose position is below ``end``."""
        pieces = []
        while True:
            if not self._load():
                return pieces
            cut = int(np.searchsorted(self._positions, end))
            pieces.append(self._rest.slice(0, cut))
            if cut < self._rest.num_rows:
                self._rest = self._rest.slice(cut)
                self._positions = self._positions[cut:]
                return pieces
            self._rest = None


def merged(parts: list[Results]):
    """The rows of ``parts`` (each in increasing position) in increasing position, a table at
    a time of at most a batch of each part: memory holds a batch of each.

    >>> def part(positions):
    ...     return Results.of_table(pa.table({POSITION: pa.array(positions, pa.int64())}))
    >>> [t[POSITION].to_pylist() for t in merged([part([0, 3, 4]), part([1, 2, 7]), part([])])]
    [[0, 1, 2, 3, 4], [7]]
    """
    while True:
        ends = [end for end in (part.next_end() for part in parts) if end is not None]
        if not ends:
            return
        table = pa.concat_tables([piece for part in parts for piece in part.until(min(ends))])
        yield table.take(pc.sort_indices(table, [(POSITION, "ascending")]))


def in_left_order(pieces: list[pa.Table], start: int, rows: int) -> pa.Table:
    """The result rows of positions ``start .. start + rows``, in position order, without
    the position column."""
    table = pa.concat_tables(pieces) if pieces else None
    if table is None or table.num_rows != rows:
        msg = f"spilled results hold {0 if table is None else table.num_rows} rows of {rows}"
        raise AssertionError(msg)
    at = arrow_numpy.values(table.column(POSITION)) - start
    table = table.drop_columns([POSITION])
    if rows and at[0] == 0 and bool((at[1:] - at[:-1] == 1).all()):
        return table  # one partition's rows, in order already
    order = np.empty(rows, np.int64)
    order[at] = np.arange(rows)
    return gather(table, order)


def source_batches(
    source: Source,
    columns: list[str],
    as_codes: list[str],
    rows: int,
    *,
    positions: bool = False,
    narrowing: Narrowing | None = None,
    last: bool = False,
):
    """Every file's ``columns`` in batches of up to ``rows``, partition columns appended
    (as one-value dictionaries when in ``as_codes``), then the LEFT position when asked;
    with ``narrowing``, only its columns from the row groups (or runs of small ones:
    ``Source.group_batches``) started after it was set (those read ahead keep the columns
    they began with). ``last``: the files are read for the last time, and each one's footer
    is dropped once it is (``Footers.release``: a stream of the hive day held all 1,000
    files' footers, 1 GiB, to its end)."""
    at = 0
    codes = [c for c in as_codes if c in source.data_schema.names]

    def wanted() -> list[str]:
        return columns if narrowing is None or not narrowing.is_set() else narrowing.columns

    # A row group (or a run of small ones) at a time, so that the columns may narrow on the
    # way (and two passes over a side that read the same columns cut it at the same places).
    for part, batch, names in source.group_batches(rows, wanted, codes):
        if batch is None:  # (the end of its file)
            if last:
                part.read_for_the_last_time()
            continue
        batch = source.with_partitions(part, batch, names, as_codes).select(names)
        if positions:
            batch = batch.append_column(
                POSITION, arrow_numpy.array(np.arange(at, at + batch.num_rows, dtype=np.int64))
            )
        at += batch.num_rows
        yield batch


class Narrowing(threading.Event):
    """Set once the rest of a stream needs only ``columns`` (RIGHT's keys, once LEFT has
    ended: the rest is read for its order check alone)."""

    def __init__(self, columns: list[str]):
        super().__init__()
        self.columns = columns
