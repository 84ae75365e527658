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
import stat
import tempfile
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from . import _interrupts as interrupts
from . import _thrift as thrift
from .. import _arrow_numpy as arrow_numpy
from .._encode import family
from ._copy import (
    CHUNK_FILE_OFFSET,
    CHUNK_INDEXES,
    CHUNK_META,
    ELEMENT_NUM_CHILDREN,
    FILE_COLUMN_ORDERS,
    FILE_NUM_ROWS,
    FILE_ROW_GROUPS,
    FILE_SCHEMA,
    GROUP_BYTES,
    GROUP_COLUMNS,
    GROUP_COMPRESSED,
    GROUP_FILE_OFFSET,
    GROUP_ORDINAL,
    GROUP_ROWS,
    GROUP_SORTING,
    MAGIC,
    META_BLOOM,
    META_DATA_PAGE,
    META_DICTIONARY_PAGE,
    META_INDEX_PAGE,
    CopiedGroup,
    LeftChunks,
    subtree_end,
)
from . import _leftovers as leftovers
from ._errors import EnrichError, OutputError
from ._schemas import is_text

PARTIAL = ".asofgpu-partial"  # the suffix of what is still being written
OLD = ".asofgpu-old"  # ... and of a folder holding the OUT it replaces, until it is in place
# In each file enrich writes, a key-value pair of its footer: an OUT folder of such files is
# enrich's to replace. (A marker file in the folder, as earlier versions wrote, stopped polars
# reading it: polars refuses a folder holding anything but parquet files.)
FOOTER_MARK = {"asofgpu": "enrich"}
MARKER = "_ASOFGPU_ENRICH"  # an earlier version's OUT folder holds this file: enrich's too


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
    any way out without a commit (errors, KeyboardInterrupt, SystemExit). ``label`` names
    ``out`` in errors."""

    def __init__(self, out: str, label: str = "OUT"):
        self.out = out
        self.label = label
        folder, name = os.path.split(out)
        leftovers.remove_stale(folder)
        try:
            fd, self.tmp = tempfile.mkstemp(
                prefix=leftovers.hidden_prefix(name, PARTIAL), suffix=PARTIAL, dir=folder
            )
        except OSError as exc:
            raise OutputError(
                f"cannot write in the directory of {label} {folder}: {exc.strerror or exc}"
            ) from None
        os.close(fd)
        self.committed = False
        self.synced = False  # on disk already (``sync``): the commit need not wait for it

    def __enter__(self):
        return self

    def path_for(self, relative: str) -> str:  # noqa: ARG002 - one file: OUT itself
        return self.tmp

    def sync(self, path: str) -> None:  # noqa: ARG002 - one file: OUT itself
        """The file, written whole, on disk now rather than at the commit."""
        _fsync(self.tmp)
        self.synced = True

    def commit(self) -> None:
        commit_together([self])

    def _put_in_place(self) -> None:
        os.replace(self.tmp, self.out)
        self.committed = True

    def __exit__(self, *exc_info):
        if not self.committed:
            try:
                os.remove(self.tmp)
            except FileNotFoundError:
                pass
        return False


def commit_together(files: list[AtomicFile], is_out: bool = True) -> None:
    """Put ``files`` in place, each on disk first, their renames one after the other with
    the signals held off (a Ctrl-C cannot fall between two); ``is_out`` as ``committing``
    takes it. A failure names its file, and those already in place (``OutputError``)."""
    for at in files:
        try:
            if not at.synced:
                _fsync(at.tmp)  # the data is on disk before the name points at it
            os.chmod(at.tmp, 0o666 & ~_umask())  # as a plain open() would have made it
        except OSError as exc:
            raise _cannot_write(at, exc) from None

    def put_in_place():
        for at in files:
            at._put_in_place()

    try:
        interrupts.committing(put_in_place, is_out)
    except OSError as exc:
        failed = next((at for at in files if not at.committed), files[-1])
        raise _cannot_write(failed, exc, tuple(at.out for at in files if at.committed)) from None


def _cannot_write(at: AtomicFile, exc: OSError, in_place: tuple[str, ...] = ()) -> OutputError:
    return OutputError(f"cannot write {at.label} {at.out}: {exc.strerror or exc}", in_place)


class AtomicFolder:
    """A hidden temporary folder beside ``out`` that ``commit`` puts in its place whole.

    An existing OUT folder is moved aside, the new one renamed in, and the old one removed;
    if the rename fails, the old one is put back. Only a folder of files enrich wrote (each
    with ``FOOTER_MARK`` in its footer), or an empty one, is ever replaced
    (``check_replaceable``).
    """

    def __init__(self, out: str, found: dict | None = None):
        self.out = out
        folder, name = os.path.split(out)
        leftovers.remove_stale(folder)
        try:
            self.tmp = tempfile.mkdtemp(
                prefix=leftovers.hidden_prefix(name, PARTIAL), suffix=PARTIAL, dir=folder
            )
        except OSError as exc:
            raise OutputError(
                f"cannot write in the directory of OUT {folder}: {exc.strerror or exc}"
            ) from None
        self.files: list[str] = []
        self._made: set[str] = set()  # the folders made in it
        self._synced: set[str] = set()  # its files on disk already (``sync``)
        self.committed = False
        # What OUT holds as the run begins, checked (``found``: as ``check_replaceable`` gave
        # it, when the run checked it before any work): what comes into it while the run
        # goes (a user's file, another run's partial output or spill folder) is checked at
        # the commit.
        self.found = self.check_replaceable(out) if found is None else found

    def __enter__(self):
        return self

    def path_for(self, relative: str) -> str:
        path = os.path.join(self.tmp, relative)
        folder = os.path.dirname(path)
        if folder not in self._made:  # (each asked once: 2,000 files' makedirs took 0.2 s)
            try:
                os.makedirs(folder, exist_ok=True)
            except OSError as exc:
                raise OutputError(f"cannot write OUT {self.out}: {exc.strerror or exc}") from None
            self._made.add(folder)
        self.files.append(path)
        return path

    def sync(self, path: str) -> None:
        """``path``, a file of the folder written whole, on disk now, on the caller's thread,
        rather than at the commit: 2,000 files' syncs took the commit 0.3 s."""
        _fsync(path)
        self._synced.add(path)

    @staticmethod
    def check_replaceable(out: str) -> dict:
        """Raise EnrichError unless ``out`` is absent, an empty folder, or enrich's own; the
        listing of what it holds, as checked (``_listing``)."""
        if not os.path.exists(out):
            return {}
        if not os.path.isdir(out):
            raise EnrichError(
                f"OUT {out} is not a folder; LEFT is a folder or glob, so OUT "
                f"is a folder of one output file per LEFT file"
            )
        found = _listing(out)
        if os.path.exists(os.path.join(out, MARKER)):
            return found
        foreign = _foreign(out, found, {})
        if foreign is not None:
            raise EnrichError(
                f"OUT {out} is a folder that asofgpu enrich did not write ({foreign} in it is "
                f"not a file of enrich's); pass a new path, or remove it first"
            )
        return found

    def commit(self) -> None:
        try:
            for path in self.files:
                if path not in self._synced:
                    _fsync(path)
            mode = 0o777 & ~_umask()
            for here, _, _ in os.walk(self.tmp):
                os.chmod(here, mode)  # mkdtemp's 0700 -> as a plain mkdir would have made it
            # What came into OUT since the run began, its footers read here, with signals
            # heeded; what comes between this and the move aside is told by its listing.
            listed = self._check_unchanged()
            interrupts.committing(lambda: self._put_in_place(listed))
        except OSError as exc:
            raise OutputError(f"cannot write OUT {self.out}: {exc.strerror or exc}") from None

    def _check_unchanged(self) -> dict | None:
        """OUT's listing now (None: there is none), once what came into it since the run
        began is enrich's."""
        if not os.path.lexists(self.out):
            return None
        if os.path.islink(self.out) or not os.path.isdir(self.out):
            raise OutputError(f"OUT {self.out} became a file during the run, and is left as it is")
        listed = _listing(self.out)
        came = _foreign(self.out, listed, self.found)
        if came is not None:
            raise OutputError(
                f"OUT {self.out} changed during the run: {came} came into it, which asofgpu "
                f"enrich did not write, and the folder is left as it is"
            )
        return listed

    def _put_in_place(self, listed: dict | None) -> None:
        """An existing OUT (as ``listed``) moved aside, the new one renamed in, the old one
        removed (or put back if anything failed); ``committing`` holds interrupts off
        throughout."""
        aside = old = None
        try:
            if listed is not None:
                aside = tempfile.mkdtemp(
                    prefix=leftovers.hidden_prefix(os.path.basename(self.out), OLD),
                    suffix=OLD,
                    dir=os.path.dirname(self.out),
                )
                old = os.path.join(aside, "old")
                os.replace(self.out, old)
                if _listing(old) != listed:  # names and inodes only: signals are held
                    self._put_back(old)
                    raise OutputError(
                        f"OUT {self.out} changed while it was being replaced, and is left as it is"
                    )
            try:
                os.replace(self.tmp, self.out)
            except OSError:
                if old is not None:
                    self._put_back(old)
                raise
            self.committed = True
        finally:
            # Not while the old folder is still in it: one that could not be put back.
            if aside is not None and (self.committed or not os.path.lexists(old)):
                shutil.rmtree(aside, ignore_errors=True)

    def _put_back(self, old: str) -> None:
        try:
            os.replace(old, self.out)
        except OSError as exc:  # (another run's OUT renamed in meanwhile)
            raise OutputError(
                f"OUT {self.out} could not be put back ({exc.strerror or exc}): the folder "
                f"it was is kept at {old}"
            ) from None

    def __exit__(self, *exc_info):
        if not self.committed:
            shutil.rmtree(self.tmp, ignore_errors=True)
        return False


def footer_metadata(left_metadata: dict[str, str]) -> dict[str, str]:
    """The key-value metadata of an OUT file's footer, from either writer: what it keeps of
    its LEFT file's (``Part.kept_metadata``), and ``FOOTER_MARK``."""
    return {**left_metadata, **FOOTER_MARK}


def _listing(folder: str) -> dict[str, tuple[int, int, int, int]]:
    """Each file below ``folder`` (relative to it), and each link to a folder (which a walk
    does not enter), with its mode, inode, size and change time, as ``lstat`` gives them."""
    found = {}
    for here, dirs, files in os.walk(folder):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(here, d))]:
            path = os.path.join(here, name)
            try:
                info = os.lstat(path)
            except OSError:  # gone meanwhile
                continue
            found[os.path.relpath(path, folder)] = (
                info.st_mode,
                info.st_ino,
                info.st_size,
                info.st_ctime_ns,
            )
    return found


def _foreign(folder: str, listed: dict, known: dict) -> str | None:
    """The first entry of ``listed`` (``folder``'s listing) that is not in ``known`` as it
    was and that enrich did not write: anything but a regular parquet file whose footer
    holds ``FOOTER_MARK``, or one inside another run's hidden folder (a partial OUT, a spill
    folder); None when there is none. This run's own hidden files (its spill folder, where
    ``--tmp-dir`` is OUT) are passed over."""
    for relative, seen in sorted(listed.items()):
        if known.get(relative) == seen:
            continue
        runs = {leftovers.run_of(part) for part in relative.split(os.sep)} - {None}
        if runs == {leftovers.tag()}:
            continue
        if runs or not stat.S_ISREG(seen[0]):  # (not opened: a FIFO's open would wait)
            return relative
        if not (
            relative.endswith(".parquet") and written_by_enrich(os.path.join(folder, relative))
        ):
            return relative
    return None


def written_by_enrich(path: str) -> bool:
    """Whether ``path`` is a parquet file whose footer holds ``FOOTER_MARK``."""
    try:
        found = pq.read_metadata(path).metadata or {}
    except (OSError, pa.ArrowException):
        return False
    return all(found.get(k.encode()) == v.encode() for k, v in FOOTER_MARK.items())


def _shift(fields: dict, field: int, by: int) -> None:
    if field in fields:
        kind, value = fields[field]
        fields[field] = (kind, value + by)


_EMPTY_FOOTERS: dict[tuple, dict] = {}  # (schema's bytes, options) -> its empty footer


def _empty_footer(schema: pa.Schema, options: dict) -> dict:
    """The footer of an empty table of ``schema`` encoded with ``options``, decoded: the
    same for every file of a run, and 120 us a file (2,000 LEFT files: 0.24 s of the
    closing thread, which the run waits for). Kept by the schema's bytes (its metadata and
    its fields' too, which a schema's equality leaves out). Read it, never change it (a
    writer takes a copy of its top level)."""
    key = (schema.serialize().to_pybytes(), tuple(sorted(options.items())))
    footer = _EMPTY_FOOTERS.get(key)
    if footer is None:
        footer = _row_groups(_encoded(arrow_numpy.empty_table(schema), options), 0, 0)[0]
        if len(_EMPTY_FOOTERS) >= 64:  # (a run's few schemas; a long-lived process's more)
            _EMPTY_FOOTERS.clear()
        _EMPTY_FOOTERS[key] = footer
    return footer


def _encoded(table: pa.Table, options: dict) -> pa.Buffer:
    """``table`` as a parquet file of one row group, in memory."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, row_group_size=max(1, table.num_rows), **options)
    return sink.getvalue()


def _row_groups(part: pa.Buffer, shift: int, first_ordinal: int) -> tuple[dict, list, int]:
    """A part's footer, its row groups re-addressed ``shift`` bytes further, and where its
    pages end."""
    data = memoryview(part).cast("B")  # pyarrow exports signed bytes
    if len(data) < 12 or bytes(data[-4:]) != MAGIC or bytes(data[:4]) != MAGIC:
        raise thrift.ThriftError("not a parquet file")
    length = int.from_bytes(data[-8:-4], "little")
    footer_at = len(data) - 8 - length
    meta, _ = thrift.decode_struct(data[footer_at : len(data) - 8], 0)
    groups = meta[FILE_ROW_GROUPS][1][1] if FILE_ROW_GROUPS in meta else []
    for ordinal, group in enumerate(groups, first_ordinal):
        _shift(group, GROUP_FILE_OFFSET, shift)
        group[GROUP_ORDINAL] = (thrift.I16, ordinal)
        for chunk in group[GROUP_COLUMNS][1][1]:
            if any(f in chunk for f in CHUNK_INDEXES) or any(
                f in chunk.get(CHUNK_META, (0, {}))[1] for f in META_BLOOM
            ):
                raise thrift.ThriftError("page indexes and bloom filters are not re-addressed")
            if chunk.get(CHUNK_FILE_OFFSET, (0, 0))[1] > 0:  # 0: not set (deprecated field)
                _shift(chunk, CHUNK_FILE_OFFSET, shift)
            meta_data = chunk[CHUNK_META][1]
            for field in (META_DATA_PAGE, META_INDEX_PAGE, META_DICTIONARY_PAGE):
                _shift(meta_data, field, shift)
    return meta, groups, footer_at


class WritePools:
    """The thread pools of the ``ParquetStitcher``s of a run: ``threads`` encoders, and one
    thread that appends each file's encoded tables in the order they came (the files'
    appends queue behind each other, each file's in order). Pools of a file's own started
    two threads a file: 2,000 LEFT files took 7 s, of which starting 4,000 threads 1 s."""

    def __init__(self, threads: int | None = None):
        self.threads = max(1, threads or os.cpu_count() or 1)
        self.encoder = ThreadPoolExecutor(self.threads, thread_name_prefix="asofgpu-encode")
        self.appender = ThreadPoolExecutor(1, thread_name_prefix="asofgpu-append")

    def shutdown(self, cancel: bool = False) -> None:
        self.encoder.shutdown(wait=True, cancel_futures=cancel)
        self.appender.shutdown(wait=True, cancel_futures=cancel)

    def __enter__(self) -> WritePools:
        return self

    def __exit__(self, *exc_info):
        self.shutdown(cancel=True)  # (each file's writer waited for its own, or aborted)
        return False


def _writer_options(compression: str, compression_level: int | None) -> dict:
    """pyarrow's writer options for OUT's files. Page indexes are off: their offsets live
    inside other structures, which stitching would have to move too."""
    return {
        "compression": compression,
        "compression_level": compression_level,
        "write_page_index": False,
    }


class ParquetStitcher:
    """Tables written as row groups of one parquet file, each encoded on a thread pool.

    ``write`` hands a table to the pool and returns at once, unless ``threads + 1`` tables
    are already on their way: then it first waits for the oldest to be written (so memory
    holds a bounded number of tables and their encoded bytes). One more thread appends the
    encoded tables to the file in order. ``close`` waits for the rest and writes the footer.
    Errors of the file system raise ``OSError``; of encoding, ``pyarrow.ArrowException``.

    With ``left`` (``_copy.LeftChunks``), ``schema`` is LEFT's columns then the written
    tables' (``schema_of_written``), and each ``write`` names the LEFT row group whose
    chunks come first in the same row group of the file. With ``pools``, the writers of a
    run share its ``WritePools``; without, the writer has its own, of ``threads`` encoders.
    """

    def __init__(
        self,
        path: str,
        schema: pa.Schema,
        *,
        compression: str = "snappy",
        compression_level: int | None = None,
        threads: int | None = None,
        left: LeftChunks | None = None,
        pools: WritePools | None = None,
    ):
        self.schema = schema
        self.left = left
        self.written_schema = schema_of_written(schema, left)
        self._options = _writer_options(compression, compression_level)
        self.path = path
        self._own_pools = pools is None
        self._pools = WritePools(threads) if pools is None else pools
        self._threads = self._pools.threads
        self._file = None
        # The file is made on the appending thread, first of its appends: making a file
        # costs the file system 0.4-0.7 ms of CPU where others were just written, and a run
        # of 2,000 small LEFT files spent 1.1 s of the join's thread so.
        self._opened = self._pools.appender.submit(self._open, path)
        self._pending: collections.deque[Future] = collections.deque([self._opened])
        self._groups: list[dict] = []
        self._rows = 0

    def _open(self, path: str) -> None:
        self._file = open(path, "wb")  # noqa: SIM115 - closed by close() or abort()
        self._file.write(MAGIC)

    def _encode(self, table: pa.Table) -> pa.Buffer:
        return _encoded(table, self._options)

    def write(self, table: pa.Table, left_group: CopiedGroup | None = None) -> None:
        """Append ``table``'s rows as one row group (after ``left_group``'s chunks when
        copying LEFT; then ``table`` may have no columns, and has the group's rows if any).
        Its columns are of the writer's types, or dictionaries of their text (``stored_as``)."""
        if not _stores_as(table.schema, self.written_schema):
            msg = f"table schema {table.schema} is not the writer's {self.written_schema}"
            raise ValueError(msg)
        if (left_group is None) != (self.left is None):
            msg = "a LEFT row group goes with each table exactly when the writer copies LEFT"
            raise ValueError(msg)
        rows = table.num_rows if left_group is None else left_group.num_rows
        if table.num_columns and table.num_rows != rows:
            msg = f"the LEFT row group holds {rows:,} rows, the table {table.num_rows:,}"
            raise ValueError(msg)
        if not rows:  # pyarrow would write an empty row group
            return
        while len(self._pending) > self._threads:
            self._pending.popleft().result()  # raises what writing it raised
        encoded = self._pools.encoder.submit(self._encode, table) if table.num_columns else None
        self._pending.append(
            self._pools.appender.submit(
                lambda: self._append(encoded and encoded.result(), left_group, rows)
            )
        )

    def _append(self, part: pa.Buffer | None, left_group: CopiedGroup | None, rows: int) -> None:
        self._opened.result()  # (done before: raises what making the file raised)
        at = self._file.tell()
        chunks, byte_size = [], 0
        if left_group is not None:
            chunks = self.left.copy(left_group, self._file, at)
            byte_size = left_group.total_byte_size
        if part is not None:
            here = self._file.tell()
            _, groups, end = _row_groups(part, here - len(MAGIC), 0)
            (group,) = groups
            self._file.write(memoryview(part)[len(MAGIC) : end])
            chunks += group[GROUP_COLUMNS][1][1]
            byte_size += group[GROUP_BYTES][1]
        group = {
            GROUP_COLUMNS: (thrift.LIST, (thrift.STRUCT, chunks)),
            GROUP_BYTES: (thrift.I64, byte_size),
            GROUP_ROWS: (thrift.I64, rows),
            GROUP_FILE_OFFSET: (thrift.I64, at),
            GROUP_COMPRESSED: (thrift.I64, self._file.tell() - at),
            GROUP_ORDINAL: (thrift.I16, len(self._groups)),
        }
        if left_group is not None and left_group.sorting is not None:
            group[GROUP_SORTING] = left_group.sorting
        self._groups.append(group)
        self._rows += rows

    def close(self) -> None:
        """Wait for what is still being encoded and appended, then write the footer."""
        while self._pending:
            self._pending.popleft().result()
        if self._own_pools:
            self._pools.shutdown()
        meta = self._footer()
        meta[FILE_NUM_ROWS] = (thrift.I64, self._rows)
        meta[FILE_ROW_GROUPS] = (thrift.LIST, (thrift.STRUCT, self._groups))
        footer = thrift.encode_struct(meta)
        self._file.write(footer + len(footer).to_bytes(4, "little") + MAGIC)
        self._file.close()

    def _footer(self) -> dict:
        """The file's footer but its rows: what one pyarrow writer of ``schema`` writes
        (version, schema, key-value metadata with the Arrow schema, column orders), with
        LEFT's own schema elements and column orders for its columns when copying."""
        meta = dict(_empty_footer(self.schema, self._options))
        if self.left is None:
            return meta
        elements = meta[FILE_SCHEMA][1][1]
        at = 1
        for _ in self.left.names:
            at = subtree_end(elements, at)
        root = dict(elements[0])
        root[ELEMENT_NUM_CHILDREN] = (thrift.I32, len(self.schema))
        meta[FILE_SCHEMA] = (
            thrift.LIST,
            (thrift.STRUCT, [root, *self.left.elements[1:], *elements[at:]]),
        )
        if FILE_COLUMN_ORDERS in meta:
            orders = meta[FILE_COLUMN_ORDERS][1][1]
            written = sum(1 for e in elements[at:] if ELEMENT_NUM_CHILDREN not in e)
            ours = orders[len(orders) - written :]
            # Without LEFT's orders its chunks carry no min/max (_copy._portable): the type's
            # order claims nothing about them.
            theirs = self.left.column_orders or [orders[0]] * self.left.leaves
            meta[FILE_COLUMN_ORDERS] = (thrift.LIST, (thrift.STRUCT, [*theirs, *ours]))
        return meta

    def abort(self) -> None:
        """On the way out of a failure: stop encoding, close the file, say nothing."""
        for pending in self._pending:
            pending.cancel()
        if self._own_pools:
            self._pools.shutdown(cancel=True)
        else:  # the appends already running (a cancelled one is done)
            futures.wait(self._pending)
        self._pending.clear()
        if self._file is None:  # never made: its making failed, or was cancelled
            return
        try:
            self._file.close()  # flushes: may fail as the write did
        except OSError:
            pass


class WholeFile:
    """A parquet file written whole, as one row group, by one pyarrow call on the run's
    encoding pool: a small LEFT file joined with others (``_left.joined_together``), whose
    rows come in one ``write``.

    What ``ParquetStitcher`` does for a file of many row groups (each encoded apart, its
    footer decoded and put together with the others' on one appending thread, the file's
    footer written by the closing thread) cost a file of a few hundred rows about a
    millisecond of Python, most of it holding the GIL: 1,000 per-symbol files of 200 rows
    took 2.4 s, 1.8 s so. The file is the same: one writer of ``schema`` wrote it.

    ``close`` waits for the file (and writes an empty one, of no row groups, when nothing
    was written); ``abort`` drops it unwritten, or waits until pyarrow has let it go.
    Errors of the file system raise ``OSError``; of encoding, ``pyarrow.ArrowException``.
    """

    def __init__(
        self,
        path: str,
        schema: pa.Schema,
        *,
        compression: str = "snappy",
        compression_level: int | None = None,
        pools: WritePools,
    ):
        self.path = path
        self.schema = self.written_schema = schema
        self._options = _writer_options(compression, compression_level)
        self._pools = pools
        self._written: Future | None = None

    def write(self, table: pa.Table, left_group: CopiedGroup | None = None) -> None:
        """Hand ``table`` (of the writer's types, or dictionaries of their text:
        ``stored_as``) to the encoding pool: the file's rows, all of them."""
        if left_group is not None:
            raise ValueError("a whole file copies no LEFT row group")
        if not _stores_as(table.schema, self.schema):
            raise ValueError(f"table schema {table.schema} is not the writer's {self.schema}")
        if self._written is not None:
            raise ValueError(f"{self.path} is written whole, by one write")
        self._written = self._pools.encoder.submit(self._write, table)

    def _write(self, table: pa.Table) -> None:
        # Text gathered as codes is written as text: pyarrow's writer takes the schema's own
        # types (the file is then what a writer of ``schema`` writes, its footer too).
        columns = [_decoded(c, f.type) for c, f in zip(table.columns, self.schema)]
        pq.write_table(
            pa.Table.from_arrays(columns, schema=self.schema),
            self.path,
            row_group_size=max(1, table.num_rows),
            filesystem=_LOCAL,
            **self._options,
        )

    def close(self) -> None:
        """The file written, or an empty one (no row groups) when nothing was."""
        if self._written is None:
            pq.ParquetWriter(self.path, self.schema, filesystem=_LOCAL, **self._options).close()
        else:
            self._written.result()  # raises what writing it raised

    def abort(self) -> None:
        """On the way out of a failure: the file not written, or let go of; say nothing."""
        if self._written is not None and not self._written.cancel():
            futures.wait([self._written])


# OUT's paths are local files: given as such, pyarrow never reads one as a URI ("s3:x")
_LOCAL = pafs.LocalFileSystem()


def _decoded(column: pa.ChunkedArray, kind: pa.DataType) -> pa.ChunkedArray:
    """``column`` (of type ``kind``, or a dictionary of its text: ``stored_as``) as ``kind``:
    the dictionary's values first, as pyarrow casts no dictionary to a view type."""
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    return column if column.type == kind else column.cast(kind)


def stored_as(column: pa.ChunkedArray, kind: pa.DataType) -> pa.ChunkedArray | pa.Array:
    """``column`` as OUT stores a column of type ``kind``: as it is when of that type; a
    dictionary of text of ``kind``'s family (RIGHT's text read as codes) as a dictionary of
    the values its codes use, which the writer stores as parquet's dictionary pages, the
    pages a column of ``kind`` has, and takes its min and max from; else cast to ``kind``.

    >>> codes = pa.chunked_array([pa.array(["b", "a", "b", None]).dictionary_encode()])
    >>> kept = stored_as(codes.take([0, 2, 3]), pa.large_string())
    >>> kept.dictionary.to_pylist(), kept.indices.to_pylist()
    (['b'], [0, 0, None])
    """
    if column.type == kind:
        return column
    if not _stores_as_text(column.type, kind):
        return column.cast(kind)
    # one dictionary (each chunk's own wrote them plain), of the values it uses
    return arrow_numpy.used_dictionary(arrow_numpy.combined(column))


def _stores_as_text(kind: pa.DataType, stored: pa.DataType) -> bool:
    """A dictionary of text of ``stored``'s family (string or binary, of any width)."""
    return (
        pa.types.is_dictionary(kind)
        and is_text(stored)
        and is_text(kind.value_type)
        and family(kind.value_type) == family(stored)
    )


def _stores_as(schema: pa.Schema, written: pa.Schema) -> bool:
    """Whether a table of ``schema`` is written as columns of ``written``: the same fields
    (metadata aside, as ``Schema.equals`` has it), each of the same type or a dictionary of
    its text."""
    return schema.names == written.names and all(
        a.nullable == b.nullable and (a.type == b.type or _stores_as_text(a.type, b.type))
        for a, b in zip(schema, written)
    )


def schema_of_written(schema: pa.Schema, left: LeftChunks | None) -> pa.Schema:
    """What ``ParquetStitcher.write`` takes: ``schema``, less LEFT's copied columns."""
    if left is None:
        return schema
    return pa.schema(list(schema)[len(left.names) :])
