"""Where ``asofgpu enrich`` writes: one parquet file encoded on all cores, renamed into place.

pyarrow's ``ParquetWriter`` encodes and compresses on the calling thread, one column after
another: at 10M rows x 8 columns that is about 1.4 s on one core, most of an enrich's time.
``ParquetStitcher`` encodes each chunk as a parquet file of its own in memory, several at a
time on a thread pool (pyarrow releases the GIL), and appends their row groups in order to one
file: the pages are copied as they are and only the footer is rewritten, with the page offsets
moved by where each part landed (``_thrift``). The file is what one writer would have made of
the same row groups.

``AtomicFile`` keeps a failure from leaving anything: the output is written to a hidden
temporary file beside OUT, renamed onto it only when complete, and removed otherwise.

>>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
>>> path = os.path.join(tempfile.mkdtemp(), "out.parquet")
>>> w = ParquetStitcher(path, pa.schema([("x", pa.int64())]))
>>> w.write(pa.table({"x": [1, 2]})); w.write(pa.table({"x": [3]})); w.close()
>>> pq.read_table(path)["x"].to_pylist(), pq.ParquetFile(path).metadata.num_row_groups
([1, 2, 3], 2)
"""

from __future__ import annotations

import collections
import os
import shutil
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor

import pyarrow as pa
import pyarrow.parquet as pq

from . import _thrift as thrift
from ._errors import EnrichError, OutputError

MAGIC = b"PAR1"
PARTIAL = ".asofgpu-partial"  # the suffix of what is still being written
MARKER = "_ASOFGPU_ENRICH"  # in an OUT folder: enrich wrote it (readers skip "_" files)

# FileMetaData, RowGroup, ColumnChunk and ColumnMetaData field ids (parquet.thrift).
_FILE_NUM_ROWS, _FILE_ROW_GROUPS = 3, 4
_GROUP_COLUMNS, _GROUP_FILE_OFFSET, _GROUP_ORDINAL = 1, 5, 7
_CHUNK_FILE_OFFSET, _CHUNK_META = 2, 3
_CHUNK_INDEXES = (4, 6)  # offset and column index offsets: absolute offsets inside the index
_META_PAGE_OFFSETS = (9, 10, 11)  # data, index and dictionary page offsets
_META_BLOOM_OFFSET = 14


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class AtomicFile:
    """A hidden temporary file beside ``out``, renamed onto it by ``commit`` and removed on
    any way out without a commit (errors, KeyboardInterrupt, SystemExit)."""

    def __init__(self, out: str):
        self.out = out
        folder, name = os.path.split(out)
        try:
            fd, self.tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=PARTIAL, dir=folder)
        except OSError as exc:
            raise EnrichError(f"cannot write in the directory of OUT {folder}: "
                              f"{exc.strerror or exc}") from None
        os.close(fd)
        self.committed = False

    def __enter__(self):
        return self

    def path_for(self, relative: str) -> str:  # noqa: ARG002 - one file: OUT itself
        return self.tmp

    def commit(self) -> None:
        try:
            _fsync(self.tmp)  # the data is on disk before the name points at it
            os.chmod(self.tmp, 0o666 & ~_umask())  # as a plain open() would have made it
            os.replace(self.tmp, self.out)
        except OSError as exc:
            raise OutputError(f"cannot write OUT {self.out}: {exc.strerror or exc}") from None
        self.committed = True

    def __exit__(self, *exc_info):
        if not self.committed:
            try:
                os.remove(self.tmp)
            except FileNotFoundError:
                pass
        return False


class AtomicFolder:
    """A hidden temporary folder beside ``out`` that ``commit`` puts in its place whole.

    An existing OUT folder is moved aside, the new one renamed in, and the old one removed;
    if the rename fails, the old one is put back. ``MARKER`` in the folder says that enrich
    wrote it: only such a folder (or an empty one) is ever replaced (``check_replaceable``).
    """

    def __init__(self, out: str):
        self.out = out
        folder, name = os.path.split(out)
        try:
            self.tmp = tempfile.mkdtemp(prefix=f".{name}.", suffix=PARTIAL, dir=folder)
        except OSError as exc:
            raise EnrichError(f"cannot write in the directory of OUT {folder}: "
                              f"{exc.strerror or exc}") from None
        self.files: list[str] = []
        self.committed = False

    def __enter__(self):
        return self

    def path_for(self, relative: str) -> str:
        path = os.path.join(self.tmp, relative)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        except OSError as exc:
            raise OutputError(f"cannot write OUT {self.out}: {exc.strerror or exc}") from None
        self.files.append(path)
        return path

    @staticmethod
    def check_replaceable(out: str) -> None:
        """Raise EnrichError unless ``out`` is absent, an empty folder, or enrich's own."""
        if not os.path.exists(out):
            return
        if not os.path.isdir(out):
            raise EnrichError(f"OUT {out} is not a folder; LEFT is a folder or glob, so OUT "
                              f"is a folder of one output file per LEFT file")
        if os.listdir(out) and not os.path.exists(os.path.join(out, MARKER)):
            raise EnrichError(f"OUT {out} is a folder that asofgpu enrich did not write (no "
                              f"{MARKER} in it); pass a new path, or remove it first")

    def commit(self) -> None:
        aside = None
        try:
            for path in self.files:
                _fsync(path)
            with open(os.path.join(self.tmp, MARKER), "w") as marker:
                marker.write("written by asofgpu enrich\n")
            mode = 0o777 & ~_umask()
            for here, _, _ in os.walk(self.tmp):
                os.chmod(here, mode)  # mkdtemp's 0700 -> as a plain mkdir would have made it
            if os.path.exists(self.out):
                aside = tempfile.mkdtemp(prefix=f".{os.path.basename(self.out)}.",
                                         suffix=".asofgpu-old", dir=os.path.dirname(self.out))
                os.replace(self.out, os.path.join(aside, "old"))
            try:
                os.replace(self.tmp, self.out)
            except OSError:
                if aside is not None:  # put the old folder back
                    os.replace(os.path.join(aside, "old"), self.out)
                raise
        except OSError as exc:
            raise OutputError(f"cannot write OUT {self.out}: {exc.strerror or exc}") from None
        finally:
            if aside is not None:
                shutil.rmtree(aside, ignore_errors=True)
        self.committed = True

    def __exit__(self, *exc_info):
        if not self.committed:
            shutil.rmtree(self.tmp, ignore_errors=True)
        return False


def _shift(fields: dict, field: int, by: int) -> None:
    if field in fields:
        kind, value = fields[field]
        fields[field] = (kind, value + by)


def _row_groups(part: pa.Buffer, shift: int, first_ordinal: int) -> tuple[dict, list, int]:
    """A part's footer, its row groups re-addressed ``shift`` bytes further, and where its
    pages end."""
    data = memoryview(part).cast("B")  # pyarrow exports signed bytes
    if len(data) < 12 or bytes(data[-4:]) != MAGIC or bytes(data[:4]) != MAGIC:
        raise thrift.ThriftError("not a parquet file")
    length = int.from_bytes(data[-8:-4], "little")
    footer_at = len(data) - 8 - length
    meta, _ = thrift.decode_struct(data[footer_at:len(data) - 8], 0)
    groups = meta[_FILE_ROW_GROUPS][1][1] if _FILE_ROW_GROUPS in meta else []
    for ordinal, group in enumerate(groups, first_ordinal):
        _shift(group, _GROUP_FILE_OFFSET, shift)
        group[_GROUP_ORDINAL] = (thrift.I16, ordinal)
        for chunk in group[_GROUP_COLUMNS][1][1]:
            if any(f in chunk for f in _CHUNK_INDEXES) or _META_BLOOM_OFFSET in chunk.get(
                    _CHUNK_META, (0, {}))[1]:
                raise thrift.ThriftError("page indexes and bloom filters are not re-addressed")
            if chunk.get(_CHUNK_FILE_OFFSET, (0, 0))[1] > 0:  # 0: not set (deprecated field)
                _shift(chunk, _CHUNK_FILE_OFFSET, shift)
            meta_data = chunk[_CHUNK_META][1]
            for field in _META_PAGE_OFFSETS:
                _shift(meta_data, field, shift)
    return meta, groups, footer_at


class ParquetStitcher:
    """Tables written as row groups of one parquet file, each encoded on a thread pool.

    ``write`` hands a table to the pool and returns at once, unless ``threads + 1`` tables
    are already on their way: then it first waits for the oldest to be written (so memory
    holds a bounded number of tables and their encoded bytes). One more thread appends the
    encoded tables to the file in order. ``close`` waits for the rest and writes the footer.
    Errors of the file system raise ``OSError``; of encoding, ``pyarrow.ArrowException``.
    """

    def __init__(self, path: str, schema: pa.Schema, *, compression: str = "snappy",
                 compression_level: int | None = None, threads: int | None = None):
        self.schema = schema
        self._options = {"compression": compression, "compression_level": compression_level,
                         "write_page_index": False}
        self._threads = max(1, threads or os.cpu_count() or 1)
        self._file = open(path, "wb")  # noqa: SIM115 - closed by close() or abort()
        self._file.write(MAGIC)
        self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="asofgpu-encode")
        self._appender = ThreadPoolExecutor(1, thread_name_prefix="asofgpu-append")
        self._pending: collections.deque[Future] = collections.deque()  # appends, in order
        self._meta: dict | None = None  # the first part's footer: schema, key-value metadata
        self._groups: list[dict] = []
        self._rows = 0

    def _encode(self, table: pa.Table) -> pa.Buffer:
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, row_group_size=max(1, table.num_rows), **self._options)
        return sink.getvalue()

    def write(self, table: pa.Table) -> None:
        if not table.schema.equals(self.schema):
            msg = f"table schema {table.schema} is not the writer's {self.schema}"
            raise ValueError(msg)
        if not table.num_rows:  # pyarrow would write an empty row group
            return
        while len(self._pending) > self._threads:
            self._pending.popleft().result()  # raises what writing it raised
        encoded = self._pool.submit(self._encode, table)
        self._pending.append(self._appender.submit(lambda: self._append(encoded.result())))

    def _append(self, part: pa.Buffer) -> None:
        at = self._file.tell()
        meta, groups, end = _row_groups(part, at - len(MAGIC), len(self._groups))
        if self._meta is None:
            self._meta = meta
        if not groups:
            return
        self._file.write(memoryview(part)[len(MAGIC):end])
        self._groups += groups
        self._rows += meta[_FILE_NUM_ROWS][1]

    def close(self) -> None:
        """Wait for what is still being encoded and appended, then write the footer."""
        while self._pending:
            self._pending.popleft().result()
        self._pool.shutdown()
        self._appender.shutdown()
        if self._meta is None:  # nothing written: the footer of an empty table
            self._meta = _row_groups(self._encode(self.schema.empty_table()), 0, 0)[0]
        meta = dict(self._meta)
        meta[_FILE_NUM_ROWS] = (thrift.I64, self._rows)
        meta[_FILE_ROW_GROUPS] = (thrift.LIST, (thrift.STRUCT, self._groups))
        footer = thrift.encode_struct(meta)
        self._file.write(footer + len(footer).to_bytes(4, "little") + MAGIC)
        self._file.close()

    def abort(self) -> None:
        """On the way out of a failure: stop encoding, close the file, say nothing."""
        for pending in self._pending:
            pending.cancel()
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._appender.shutdown(wait=True, cancel_futures=True)
        self._pending.clear()
        try:
            self._file.close()  # flushes: may fail as the write did
        except OSError:
            pass
