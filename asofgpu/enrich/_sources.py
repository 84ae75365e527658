"""LEFT and RIGHT as users give them: a parquet file, a folder of parquet files, or a glob.

A folder is searched recursively for ``*.parquet`` files (names starting with ``.`` or ``_``
are skipped, as pyarrow's datasets skip them); a glob (``'day/*/trades-*.parquet'``, ``**``
for any depth) names its files directly. Folders of the form ``key=value`` between the root
(the folder given, or the glob's fixed prefix) and a file are hive partitions: each becomes a
column (``date=2026-11-27/`` -> a ``date`` column of every row below it), usable in ``--by``.
A partition column is int64 when all its values are whole numbers, else string;
``__HIVE_DEFAULT_PARTITION__`` is null; a by-column of folders takes the type of the column
it is paired with where its values allow (``type_partitions``). Where the files hold a
column of a folder's name too (polars writes them so), that column is read, and the
folders' values are checked against its statistics. Every file must have the same columns
(by name, in any order: the first file's is the source's), of one type each as a reader
sees it: a column that is text in every file but of other offset widths or as views
(``string``, ``large_string``, ``string_view``: pandas 2 and 3 write text as the first two),
a list of other offset widths, a dictionary in some files, or not-null in some, is read in
its widest form
(``large_string``, ``large_list``, plain values, nullable); one of type null in some
(pandas writes a column of None so) as the others' type.

>>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
>>> root = tempfile.mkdtemp()
>>> for day in ("2026-11-27", "2026-11-30"):
...     os.makedirs(os.path.join(root, f"date={day}"))
...     pq.write_table(pa.table({"t": [1, 2]}), os.path.join(root, f"date={day}", "q.parquet"))
>>> src = Source.find(root, "RIGHT")
>>> [p.relative for p in src.parts], src.schema.names, src.rows
(['date=2026-11-27/q.parquet', 'date=2026-11-30/q.parquet'], ['t', 'date'], 4)
>>> src.read(["date", "t"])["date"].to_pylist()
['2026-11-27', '2026-11-27', '2026-11-30', '2026-11-30']
"""

from __future__ import annotations

import datetime
import fnmatch
import functools
import glob
import itertools
import json
import math
import os
import re
import threading
import urllib.parse
from collections import OrderedDict, deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .. import _arrow_numpy as arrow_numpy
from .._encode import family
from ._errors import EnrichError, one_line
from ._schemas import common_schema, is_text, leaf_map, read_as_codes, wide_indices_of

SUFFIX = ".parquet"
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
_GLOB_CHARS = re.compile(r"[*?[]")
# The uncompressed size from which a row group's columns are decoded on threads of their
# own (``Part._worth_threads``): about where threads began to pay on this machine.
THREADED_BYTES = 2 << 20
READERS = 2  # the files ``Source.read`` reads at a time
_WHOLE = re.compile(r"-?[0-9]{1,18}")  # (ASCII: ``\d`` takes other scripts' digits)


# Footer entries OUT's files do not take from LEFT's (``Part.kept_metadata``): schemas of
# LEFT's columns, which their readers read files by (parquet-avro by its Avro schema, Spark,
# Iceberg, Hugging Face's datasets by their features), and would read OUT by without the
# attached columns, or fail on them. (pyarrow writes OUT's Arrow schema anew.)
NOT_KEPT = (
    b"ARROW:schema",
    b"org.apache.spark.sql.parquet.row.metadata",
    b"parquet.avro.schema",
    b"avro.schema",
    b"parquet.proto.descriptor",
    b"parquet.proto.class",
    b"thrift.descriptor",
    b"thrift.class",
    b"iceberg.schema",
    b"huggingface",
    b"pig.schema",
)


def _pandas_entry_fits(entry: str) -> bool:
    """Whether pandas reads OUT by LEFT's ``pandas`` entry (its index and dtypes, the
    attached columns, which it does not name, as pandas reads any column): not where the
    frame's column labels were not strings (ints, a MultiIndex), for pandas would read the
    attached columns' names as such labels, and fail. A frame written without its index
    (``index=False``) names no label type, and pandas reads its labels as strings."""
    try:
        labels = json.loads(entry).get("column_indexes")
    except (ValueError, AttributeError):
        return False
    if labels == []:
        return True
    if not (isinstance(labels, list) and len(labels) == 1 and isinstance(labels[0], dict)):
        return False
    return labels[0].get("pandas_type") == "unicode"


# A footer's bytes once parsed (pyarrow's FileMetaData): about 880 a column chunk of
# pyarrow 26's files with statistics (7.5 times their serialized 117), and its serialized
# bytes again, which long text statistics fill (50 row groups of 3,500-character strings: 94
# MiB parsed for 200 files, 30 MiB by the chunks alone); and some for the file.
FOOTER_CHUNK_BYTES = 1024
FOOTER_FILE_BYTES = 4096


class Footers:
    """The parsed footers of a run's files, held up to ``budget`` bytes (their
    ``Part.footer_bytes``): the first read while they fit, kept; past the budget, the
    ``RECENT`` asked for most recently besides, the others dropped and read again when asked
    for. A day partitioned by symbol as pyarrow's ``write_dataset`` writes it (2,000 files
    of 300 row groups of tens of rows) held 2.1 GiB of footers, more than a --memory-limit of
    2GiB: the limit was passed before a row was read. (Not the least recently used: a run's
    passes walk every file in turn, which would read every one again each time.)"""

    RECENT = 4  # the files read at once, by the readers, the join and a writer
    TRIM_BYTES = 64 << 20  # released footers handed back at once (0.3 s a GiB)
    # Footers released are kept while all held take no more: freeing a day's 2,000 small
    # ones as their files were read cost 0.2-0.3 s of 3.6 (both sides a file a symbol).
    KEPT_BYTES = 64 << 20

    def __init__(self, budget: float):
        self.budget = budget
        self.bytes = 0  # held now
        self.read_again = 0  # footers read again after they were dropped
        self._untrimmed = 0  # bytes of footers released since memory was last handed back
        self._kept: dict[int, Part] = {}  # by id(part)
        self._recent: OrderedDict[int, Part] = OrderedDict()  # the oldest first
        self._lock = threading.Lock()  # (readers' threads ask for footers too)

    def hold(self, part: Part, again: bool = False) -> None:
        """``part``'s footer, just read (``again``: after it was dropped) or asked for."""
        key = id(part)
        with self._lock:
            self.read_again += again
            if key in self._kept or part.footer is None:  # (None: dropped by another thread
                return  # since it was asked for: read again next time)
            if key in self._recent:
                self._recent.move_to_end(key)
                return
            self.bytes += part.footer_bytes
            if self.bytes <= self.budget:
                self._kept[key] = part
                return
            self._recent[key] = part
            while len(self._recent) > self.RECENT:
                self._drop(self._recent.popitem(last=False)[1])
            trim = self._trim_due()
        if trim:  # (parses on readers' threads spread over the C heap's arenas)
            _trim_malloc()

    def release(self, parts: list[Part]) -> None:
        """Drop the footers of ``parts``, read for the last time (a side's files once it is
        held in memory or spilled, a stream's as it passes them, LEFT's as each is read),
        and hand their memory back (``_trim_malloc``) once ``TRIM_BYTES``
        are dropped: the hive day's 1.3 GiB of RIGHT footers stayed beside its prepared rows
        until the end. While those held take ``KEPT_BYTES`` or less, nothing is dropped."""
        with self._lock:
            if self.bytes <= self.KEPT_BYTES:
                return
            for part in parts:
                key = id(part)
                if key in self._kept or key in self._recent:
                    self._kept.pop(key, None)
                    self._recent.pop(key, None)
                    self._drop(part)
            trim = self._trim_due()
        if trim:
            _trim_malloc()

    def _drop(self, part: Part) -> None:
        """(Under the lock.) ``part``'s footer dropped, its bytes counted to hand back."""
        part.footer = None
        self.bytes -= part.footer_bytes
        self._untrimmed += part.footer_bytes

    def _trim_due(self) -> bool:
        """(Under the lock.) Whether ``TRIM_BYTES`` were dropped since memory was last
        handed back, counted afresh when so."""
        due = self._untrimmed >= self.TRIM_BYTES
        if due:
            self._untrimmed = 0
        return due


def _trim_malloc() -> None:
    """Hand the C heap's free pages back to the system (glibc's ``malloc_trim``): a footer
    is parsed into many small blocks of it, which Arrow's own allocator never reuses, and
    1.3 GiB of them freed stayed resident. Elsewhere (macOS, musl), nothing."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim():
    """glibc's ``malloc_trim``, or None; looked up once (``find_library`` runs ``ldconfig``:
    1.3 ms a call)."""
    import ctypes
    import ctypes.util

    try:
        return ctypes.CDLL(ctypes.util.find_library("c")).malloc_trim
    except (OSError, AttributeError, TypeError):
        return None


@dataclass
class Part:
    """One parquet file of a source, with its hive partition values."""

    path: str
    relative: str  # below the source's root: where its output goes in a folder OUT
    values: dict[str, str | None]  # partition column -> its raw value (None: null)
    # Its footer: rows, row groups, statistics (``meta``); None once ``footers`` dropped it.
    footer: pq.FileMetaData | None
    bytes: int  # the file's size
    # The source's columns where this file's differ (their order, text widths, views,
    # dictionaries, nullability: ``common_schema``; RIGHT's dictionary indices,
    # ``wide_indices``): its reads are cast to them. None: the file's own.
    wanted: pa.Schema | None = None
    # Whether ``wanted`` differs from the file's own columns in more than dictionary indices'
    # widths: their order, or their types.
    reordered_or_retyped: bool = False
    # Where the footer is held within a budget; None: by this part alone, always.
    footers: Footers | None = field(default=None, repr=False, compare=False)
    side: str = "RIGHT"  # how a failed read of the footer again names the file
    # The file's own columns as its reader gives them (None: the footer's mapping of them,
    # which refers back to the footer: only for a part that never drops it).
    columns: pa.Schema | None = field(default=None, repr=False, compare=False)
    # Its size and modification time when its footer was first read: a footer read again
    # must be of the same file.
    stamp: tuple[int, int] | None = field(default=None, repr=False, compare=False)
    # Text columns' bytes a row once read (``text_bytes``), measured once a run.
    _text_bytes: dict[str, float] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        meta = self.footer
        self.rows = meta.num_rows
        chunks = meta.num_row_groups * meta.num_columns
        self.footer_bytes = FOOTER_FILE_BYTES + FOOTER_CHUNK_BYTES * chunks + meta.serialized_size
        if self.columns is None:
            self.columns = meta.schema.to_arrow_schema()
        if self.footers is not None:
            self.footers.hold(self)

    @property
    def meta(self) -> pq.FileMetaData:
        """The file's footer, read again where ``footers`` dropped it."""
        meta = self.footer  # (once: another thread may drop it)
        if self.footers is None:
            return meta
        again = meta is None
        if again:
            meta = _footer(self.path, self.side)[0]
            try:
                changed = _stamp(self.path) != self.stamp or meta.num_rows != self.rows
            except OSError:  # (gone since)
                changed = True
            if changed:
                raise EnrichError(
                    f"{self.side} file {self.path} changed while the run read it; run again "
                    f"once nothing writes to it"
                )
            self.footer = meta
        self.footers.hold(self, again)
        return meta

    def read_for_the_last_time(self) -> None:
        """The run reads the file no more: its footer may go (``Footers.release``)."""
        if self.footers is not None:
            self.footers.release([self])

    @functools.cached_property
    def leaves(self) -> dict[str, range]:
        """``leaf_map`` of the file, made once: asked for each column and row group (5,000
        files' sizes took 0.28 s mapping them column by column, and 30,000 calls a run over
        10,000 row groups 0.18 s). Of the reader's columns where known: the footer's own
        mapping (``FileMetaData.schema``) and the footer refer to each other, a cycle that
        only Python's collector frees, and footers dropped by ``footers`` so stayed, 0.8 MiB
        each (4.6 GiB under a --memory-limit of 2GiB)."""
        return leaf_map(self.columns)

    @functools.cached_property
    def null_leaves(self) -> frozenset[int]:
        """The leaf columns of parquet's null type (pandas writes a column of None so): they
        hold no values, and their footer gives no statistics."""
        fields = self.columns
        return frozenset(self.leaves[f.name][0] for f in fields if pa.types.is_null(f.type))

    def text_bytes(self, side: str, name: str, sample: int = 1 << 16) -> float:
        """Bytes a row of text column ``name`` holds once read, in the file's first
        ``sample`` rows (a null holds none): what a column kept dictionary-encoded, stored as
        codes, takes as whole strings. Measured once: the memory estimate and the row-group
        check both ask. (A name with a dot beside a struct of that name and field reads as
        the struct's field: 0, not measured.)"""
        if name not in self._text_bytes:
            import pyarrow.compute as pc

            batch = next(self.batches(side, sample, [name]), None)
            measured = 0.0
            if batch is not None and batch.num_rows and is_text(batch.schema.field(0).type):
                lengths = pc.sum(pc.binary_length(batch.column(0))).as_py() or 0
                measured = lengths / batch.num_rows
            self._text_bytes[name] = measured
        return self._text_bytes[name]

    @functools.cached_property
    def kept_metadata(self) -> dict[str, str]:
        """The key-value metadata of the file's footer that OUT's file of this one keeps:
        all of it (a writer's version, Spark's calendar flags, a user's own entries) but
        ``NOT_KEPT``'s: the Arrow schema, which OUT's writer writes anew, and the schemas of
        the file's columns other readers read it by, which would have them read OUT
        without the attached ones; an entry that is not UTF-8 text, as the format requires;
        and pandas' entry where pandas could not read OUT by it (``_pandas_entry_fits``).

        >>> import io, pyarrow as pa, pyarrow.parquet as pq
        >>> buffer = io.BytesIO()
        >>> pq.write_table(pa.table({"t": [1]}).replace_schema_metadata({"from": "A"}), buffer)
        >>> part = Part("l.parquet", "l.parquet", {}, pq.read_metadata(buffer), 0)
        >>> sorted(part.kept_metadata.items())
        [('from', 'A')]
        """
        kept = {}
        for key, value in (self.meta.metadata or {}).items():
            if key in NOT_KEPT:
                continue
            try:
                kept[key.decode()] = value.decode()
            except UnicodeDecodeError:
                continue
        if "pandas" in kept and not _pandas_entry_fits(kept["pandas"]):
            del kept["pandas"]
        return kept

    def batches(
        self,
        side: str,
        rows: int,
        columns: list[str] | None = None,
        read_dictionary: list[str] | None = None,
    ):
        """The file's rows in record batches of up to ``rows``; a file that cannot be read
        (now or half-way) raises EnrichError naming it."""
        columns = self.wanted.names if columns is None and self.wanted else columns
        try:
            # The parsed footer reused (``meta``): a reader per row group (the spill's passes)
            # parsed it again each time, quadratic in the row groups (8,000 spilled in 99 s, now 6.8).
            reader = pq.ParquetFile(
                self.path, metadata=self.meta, pre_buffer=False, read_dictionary=read_dictionary
            )
            groups = range(self.meta.num_row_groups)
            batches = reader.iter_batches(
                batch_size=rows, columns=columns, use_threads=self._worth_threads(groups, columns)
            )
            while True:
                try:
                    yield self.as_wanted(next(batches), read_dictionary)
                except StopIteration:
                    return
        except (OSError, pa.ArrowException) as exc:
            raise EnrichError(f"cannot read {side} file {self.path}: {one_line(exc)}") from None

    def read_run(self, side: str, run: list[int], rows: int, columns, read_dictionary):
        """Row groups ``run`` of the file (``Source.group_batches``), their ``columns``:
        batches of up to ``rows``, one row group of more rows read in slices as asked for, else the
        run read at once and handed over as one batch (each batch costs its own partition
        columns and checks: 300 row groups of 33 rows a file came as 300 batches), unless it
        holds a column kept in its pieces (``combined_columns``): a batch a row group."""
        try:
            meta = self.meta
            reader = pq.ParquetFile(
                self.path, metadata=meta, pre_buffer=False, read_dictionary=read_dictionary
            )
            threads = self._worth_threads(run, columns, together=True)
            if len(run) == 1 and meta.row_group(run[0]).num_rows > rows:
                batches = reader.iter_batches(
                    batch_size=rows, columns=columns, row_groups=run, use_threads=threads
                )
            else:
                table = _read_run(reader, run, columns, threads)
                batches = (combined_columns(table) if len(run) > 1 else table).to_batches()
            for batch in batches:
                yield self.as_wanted(batch, read_dictionary)
        except (OSError, pa.ArrowException) as exc:
            raise EnrichError(f"cannot read {side} file {self.path}: {one_line(exc)}") from None

    def row_groups(self, side: str, columns: list[str], read_dictionary: list[str]):
        """The file's ``columns``, one table a row group (each may be empty)."""
        try:
            reader = pq.ParquetFile(
                self.path, metadata=self.meta, pre_buffer=False, read_dictionary=read_dictionary
            )
            for g in range(reader.metadata.num_row_groups):
                threads = self._worth_threads([g], columns)
                table = reader.read_row_group(g, columns=columns, use_threads=threads)
                yield self.as_wanted(table, read_dictionary)
        except (OSError, pa.ArrowException) as exc:
            raise EnrichError(f"cannot read {side} file {self.path}: {one_line(exc)}") from None

    def _worth_threads(self, groups, columns: list[str] | None, together: bool = False) -> bool:
        """Whether to decode ``columns`` of row groups ``groups`` on pyarrow's threads, a
        column a thread: only where those columns of a row group (of all of them, read
        ``together``) take ``THREADED_BYTES`` or more (uncompressed), and are more than one.
        Below that, handing columns out costs more than it saves: 5,000 files of 400 rows
        read in 0.93 s with threads, 0.26 s without (a 10,000-row group 540 µs against 263;
        a 100,000-row group of 4 MiB, 1.6 ms against 2.2)."""
        meta = self.meta
        if (meta.num_columns if columns is None else len(columns)) < 2:
            return False
        sizes = [self.group_bytes(g, columns, meta) for g in groups]
        return (sum(sizes) if together else max(sizes, default=0)) >= THREADED_BYTES

    def group_bytes(self, g: int, columns: list[str] | None, meta=None) -> int:
        """Row group ``g``'s ``columns`` (None: all), uncompressed; ``meta``: the footer,
        where the caller holds it (asked for once, not a row group at a time)."""
        group = (self.meta if meta is None else meta).row_group(g)
        if columns is None:
            return group.total_byte_size
        leaves = (j for name in columns for j in self.leaves.get(name, ()))
        return sum(group.column(j).total_uncompressed_size for j in leaves)

    def as_wanted(self, data, as_codes=None):
        """A batch or table read from this file, as every file's are: views as large types
        (``viewless``), and the source's types where this file's differ; columns read as
        codes (``as_codes``) stay dictionaries."""
        if self.wanted is not None:
            fields = []
            for f in data.schema:
                w = self.wanted.field(f.name)
                if not (as_codes and f.name in as_codes):
                    fields.append(w)
                elif pa.types.is_null(f.type):  # read as nulls, not codes
                    fields.append(w.with_type(read_as_codes(w.type)))
                else:
                    fields.append(f.with_nullable(w.nullable))
            data = data.cast(pa.schema(fields))
        return arrow_numpy.without_views(data)


@dataclass
class Source:
    """The files of LEFT or RIGHT, their common schema and their partition columns."""

    side: str  # "LEFT" or "RIGHT": how messages name it
    given: str  # the path or glob as given
    single: bool  # one file named directly (OUT is then a file)
    parts: list[Part]
    data_schema: pa.Schema  # the files' columns
    partitions: list[pa.Field] = field(default_factory=list)  # then the partition columns

    @property
    def schema(self) -> pa.Schema:
        return pa.schema(list(self.data_schema) + self.partitions)

    @property
    def rows(self) -> int:
        return sum(p.rows for p in self.parts)

    @classmethod
    def find(cls, given, side: str, footers: Footers | None = None) -> Source:
        """The source at ``given`` (a file, a folder or a glob), its schema checked; its
        files' footers held by ``footers`` (None: each by its part)."""
        given = os.fspath(given)
        single = False
        if not given:
            raise EnrichError(f"{side} must name a parquet file, a folder or a glob, got ''")
        if os.path.isfile(given):
            root, paths, single = os.path.dirname(given), [given], True
        elif os.path.isdir(given):
            root, paths = given, _parquet_files(given)
            if not paths:
                raise EnrichError(f"{side} folder {given} holds no parquet files (*{SUFFIX})")
            for path in paths:  # a FIFO's open would wait, deaf to Ctrl-C, for a writer
                if not os.path.isfile(path):
                    raise EnrichError(
                        f"{side} folder {given} holds {os.path.relpath(path, given)}, which is "
                        f"not a regular file (a FIFO, a device, or a link to nothing)"
                    )
        elif _GLOB_CHARS.search(given):
            root = glob_root(given)
            paths = sorted(
                p
                for p in glob.glob(given, recursive=True)
                if os.path.isfile(p) and not _hidden(os.path.basename(p))
            )
            if not paths:
                raise EnrichError(f"{side} glob {given!r} matches no file")
        elif os.path.exists(given):
            raise EnrichError(f"{side} {given} is neither a file nor a folder")
        else:
            raise EnrichError(f"{side} file {given} does not exist")
        parts, schemas = [], []
        for path in paths:
            check_utf8(path, f"{side} file")
            relative = os.path.relpath(path, root) if not single else os.path.basename(path)
            stamp = _stamp(path)  # (before the footer: a rewrite after it changes it)
            meta, file_schema = _footer(path, side)
            values = {} if single else _partition_values(relative)
            part = Part(
                path, relative, values, meta, stamp[0], footers=footers, side=side,
                columns=file_schema, stamp=stamp,
            )  # fmt: skip
            if side == "LEFT":
                part.kept_metadata  # noqa: B018 (OUT's, taken while the footer is here)
            parts.append(part)
            schemas.append(file_schema)
        first, schema = parts[0].path, schemas[0]
        for part, file_schema in zip(parts[1:], schemas[1:]):
            if file_schema.equals(schema, check_metadata=True):
                continue  # (the files of a writer's run mostly are)
            common = common_schema(schema, file_schema)
            if common is None:
                raise EnrichError(
                    f"{side} files disagree on their columns: {first} has "
                    f"{_describe(schemas[0])}, {part.path} has {_describe(file_schema)}"
                )
            schema = common
        if side == "RIGHT":
            # RIGHT's rows are held, streamed and gathered together, and their dictionaries
            # unified: the files' (or row groups') dictionaries of narrow indices may hold more
            # values together than their index type does (pandas: int8 a file of <128 values).
            schema = wide_indices_of(schema)
        wide = wide_indices_of(schema)
        for part, file_schema in zip(parts, schemas):
            part.wanted = None if file_schema.equals(schema) else schema
            part.reordered_or_retyped = part.wanted is not None and not wide_indices_of(
                file_schema
            ).equals(wide)
        twice = sorted({n for n in schema.names if schema.names.count(n) > 1})
        if twice:  # parquet allows it; no column could then be named
            raise EnrichError(
                f"{side} {first} has more than one column named "
                f"{', '.join(map(repr, twice))}; rename them so that each name is one column"
            )
        source = cls(side, given, single, parts, schema)
        source.partitions = source._partition_fields()
        return source

    def _partition_fields(self) -> list[pa.Field]:
        keys = list(self.parts[0].values)
        for part in self.parts:
            if list(part.values) != keys:
                raise EnrichError(
                    f"{self.side} files sit in different partition folders: "
                    f"{self.parts[0].relative} has {_keys(keys)}, {part.relative} has "
                    f"{_keys(list(part.values))}"
                )
        fields = []
        for key in keys:
            if key in self.data_schema.names:  # the files hold it too (polars writes them so)
                self._check_folders_agree(key)
                continue
            values = [p.values[key] for p in self.parts if p.values[key] is not None]
            whole = bool(values) and all(_WHOLE.fullmatch(v) for v in values)
            fields.append(pa.field(key, pa.int64() if whole else pa.string()))
        return fields

    def untyped(self, name: str) -> bool:
        """Whether ``name`` is a partition column of null folders only
        (``__HIVE_DEFAULT_PARTITION__``): no value says its type (string, as polars reads it)."""
        return any(f.name == name for f in self.partitions) and all(
            p.values[name] is None for p in self.parts
        )

    def is_partition(self, name: str) -> bool:
        """Whether ``name`` is a column of partition folders alone (the files hold none)."""
        return any(f.name == name for f in self.partitions)

    def misfit(self, name: str, kind: pa.DataType) -> str | None:
        """The first folder value of partition column ``name`` that is no value of ``kind``,
        whole (``12:00:01.0005`` is no time32[ms]: its cast would drop the 500 us); None
        where each is one."""
        for part in self.parts:
            raw = part.values[name]
            try:
                value = _parsed(raw, kind)
                if pa.types.is_floating(kind):
                    if not _float_holds(raw, value, kind):
                        return raw
                elif pa.array([value], kind)[0].as_py() != value:
                    return raw
            except (ValueError, TypeError, pa.ArrowNotImplementedError):  # (ArrowInvalid too)
                return raw
        return None

    def retype(self, name: str, kind: pa.DataType) -> None:
        """Partition column ``name`` as ``kind`` (each folder's value one of it: ``misfit``)."""
        self.partitions = [pa.field(name, kind) if f.name == name else f for f in self.partitions]

    def _check_folders_agree(self, key: str) -> None:
        """Partition folders ``key=value`` above files that hold a column ``key`` (polars'
        partitioned writes keep it): the files' column is read, and each folder's value must
        be what the column holds, as far as the row groups' statistics show (where they
        show nothing, or the column's type has no text form to compare, as DuckDB's
        intervals, the files' values are taken)."""
        kind = self.data_schema.field(key).type
        kind = kind.value_type if pa.types.is_dictionary(kind) else kind
        if isinstance(kind, pa.BaseExtensionType):  # (DuckDB's UUID and JSON: as stored)
            kind = kind.storage_type
        if pa.types.is_fixed_size_binary(kind) or pa.types.is_nested(kind):
            return  # (DuckDB's intervals are fixed-size binary, their folders '00:00:01')
        for part in self.parts:
            raw, index = part.values[key], list(part.leaves.get(key, ()))
            if len(index) != 1:  # (a nested column: no statistics to compare)
                continue
            try:
                value = _parsed(raw, kind)
            except ValueError:  # (pyarrow's ArrowInvalid is one)
                self._folder_disagrees(part, key, f" ({kind}), which cannot hold {raw!r}")
            except pa.ArrowNotImplementedError:  # (no cast from text: month-day-nanos, say)
                continue
            meta = part.meta
            held = _Held(part, key, self.side)
            for g in range(meta.num_row_groups):
                chunk = meta.row_group(g).column(index[0])
                stats = chunk.statistics
                try:
                    if stats is None or not stats.has_min_max:
                        continue  # (no values, or none to compare)
                    low, high = stats.min, stats.max
                except (OverflowError, ValueError):  # (a date past Python's: not compared)
                    continue
                if isinstance(value, str) and isinstance(low, bytes):  # (JSON's: not UTF8)
                    low, high = low.decode(errors="replace"), high.decode(errors="replace")
                if pa.types.is_duration(kind):  # (statistics hold a duration's count)
                    low, high = (pa.scalar(x).cast(kind).as_py() for x in (low, high))
                if value is None or not low == value == high:
                    values = held.of(g)  # (what the statistics say, confirmed)
                    if not _agrees(values, value):
                        shown = dict.fromkeys(map(_folder_text, (values[0], values[-1])))
                        self._folder_disagrees(
                            part, key, f", which holds {' to '.join(shown)} in row group {g}"
                        )

    def _folder_disagrees(self, part: Part, key: str, what: str):
        raw = part.values[key]
        raise EnrichError(
            f"{self.side} partition folder {key}={NULL_PARTITION if raw is None else raw} "
            f"disagrees with the column {key!r} of its file {part.relative}{what}; the "
            f"folder and the column must say the same"
        )

    def partition_column(self, part: Part, name: str, rows: int, as_codes: bool) -> pa.Array:
        """A partition column for ``rows`` rows of ``part``: a one-value dictionary column
        when ``as_codes`` (group keys: no per-row values), else plain values."""
        kind = self.schema.field(name).type
        raw = part.values[name]
        if raw is None:  # (a null index, not a null in the dictionary: Arrow unifies those)
            return (
                pa.DictionaryArray.from_arrays(pa.nulls(rows, pa.int32()), pa.nulls(0, kind))
                if as_codes
                else pa.nulls(rows, kind)
            )
        if as_codes:
            return pa.DictionaryArray.from_arrays(
                arrow_numpy.array(np.zeros(rows, np.int32)), _repeated(raw, kind, 1)
            )
        return _repeated(raw, kind, rows)

    def with_partitions(
        self, part: Part, batch: pa.RecordBatch | pa.Table, names: list[str], as_codes: list[str]
    ):
        """``batch`` of ``part`` with the partition columns among ``names`` appended."""
        for name in names:
            if name in self.data_schema.names or name in batch.column_names:
                continue
            column = self.partition_column(part, name, batch.num_rows, name in as_codes)
            batch = batch.append_column(pa.field(name, column.type), column)
        return batch

    def group_batches(self, rows: int, columns, read_dictionary: list[str]):
        """(part, batch, names) for every file's rows in turn, in batches of up to ``rows``:
        a run of row groups at a time (``runs_of``), ``columns()`` naming the columns of
        each as it is started (data and partition columns: they may narrow on the way; its
        data columns are read, and ``names`` are those it was started with). While one run
        is handed over, the next ``READERS`` runs of several row groups are read on threads,
        up to half of ``rows`` rows ahead in all: a file of 300 row groups of 33 rows takes
        7 ms to read, mostly their fixed costs. A run of more rows, or of one row group, is
        read alone when it is reached (handing 1,000 files of one row group each to the
        threads cost 0.2 s of 3.8). (part, None, None) follows each file's last batch.
        Whatever goes wrong comes in the files' order: an unreadable file after the rows
        before it."""
        ahead: deque = deque()  # (part, rows, names, future of its batches, its file's last)
        held = 0

        def over(part, names, batches, last: bool):
            yield from ((part, batch, names) for batch in batches)
            if last:
                yield part, None, None

        def handed():
            nonlocal held
            part, n, names, batches, last = ahead.popleft()
            held -= n
            yield from over(part, names, batches.result(), last)

        def drained():
            while ahead:
                yield from handed()

        with ThreadPoolExecutor(READERS, thread_name_prefix="asofgpu-read-run") as pool:
            for part in self.parts:
                try:
                    meta = part.meta
                except EnrichError:  # (its footer read again, and the file changed)
                    yield from drained()
                    raise
                # Small row groups together, up to ``rows`` a run: the runs depend on the
                # sizes alone, so that two passes of the same columns cut alike.
                sizes = [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]
                runs = runs_of(sizes, rows)
                if not runs:
                    yield from drained()
                    yield from over(part, None, (), True)
                for i, run in enumerate(runs):
                    n = sum(sizes[g] for g in run)
                    alone = n > rows // 2 or len(run) == 1  # (read when reached)
                    while ahead and (alone or len(ahead) > READERS or held + n > rows // 2):
                        yield from handed()
                    names = columns()
                    data = [c for c in names if c in self.data_schema.names]
                    read = part.read_run(self.side, run, rows, data, read_dictionary)
                    last = i == len(runs) - 1
                    if alone:
                        yield from over(part, names, read, last)
                    else:
                        ahead.append((part, n, names, pool.submit(list, read), last))
                        held += n
            yield from drained()

    def read(self, columns: list[str], as_codes: list[str] = (), last: bool = False) -> pa.Table:
        """Every file's ``columns`` (data and partition), one table; text data columns and
        partition columns named in ``as_codes`` come as dictionary columns. Several files
        are read ``READERS`` at a time, each decoded off the GIL: 1,000 files of a symbol's
        quotes each (10M rows) in 0.51 s, 0.58 s one at a time, on 2 cores. ``last``: the
        files are read for the last time, and each one's footer is dropped once it is
        (``Footers.release``)."""
        data = [c for c in columns if c in self.data_schema.names]
        codes = [c for c in as_codes if c in data]

        def read_part(part: Part) -> pa.Table:
            try:
                # (ParquetFile, not read_table: pyarrow's datasets import pandas)
                reader = pq.ParquetFile(
                    part.path, metadata=part.meta, pre_buffer=False, read_dictionary=codes
                )
                threads = part._worth_threads(range(part.meta.num_row_groups), data)
                table = part.as_wanted(_read_run(reader, None, data, threads), codes)
            except (OSError, pa.ArrowException) as exc:
                raise EnrichError(
                    f"cannot read {self.side} file {part.path}: {one_line(exc)}"
                ) from None
            if last:
                part.read_for_the_last_time()
            return self.with_partitions(part, table, columns, as_codes).select(columns)

        if len(self.parts) == 1:
            tables = [read_part(self.parts[0])]
        else:
            with ThreadPoolExecutor(READERS, thread_name_prefix="asofgpu-read-file") as pool:
                tables = list(pool.map(read_part, self.parts))  # (the first error, in order)
        return tables[0] if len(tables) == 1 else pa.concat_tables(tables, promote_options="none")


def combined_columns(table: pa.Table) -> pa.Table:
    """``table`` with each column that can be put into one piece so: all but the nested
    (lists, structs, maps) and extension types (JSON, geometries), which stay in their pieces.
    Arrow splits text whose offsets would pass 2 GiB into pieces again, but not text inside
    those: a window of such files holding 2.4 GB of it failed to combine.

    >>> table = pa.concat_tables([pa.table({"x": [1], "l": [[1]]})] * 2)
    >>> [c.num_chunks for c in combined_columns(table).columns]
    [1, 2]
    """
    flat = [
        i
        for i, field in enumerate(table.schema)
        if not pa.types.is_nested(field.type)
        and not isinstance(field.type, pa.BaseExtensionType)
        and table.column(i).num_chunks > 1
    ]
    if not flat:
        return table
    columns = table.columns
    for i, column in zip(flat, table.select(flat).combine_chunks().columns):
        columns[i] = column
    return pa.Table.from_arrays(columns, schema=table.schema)


def _read_run(reader: pq.ParquetFile, run, columns: list[str], threads: bool) -> pa.Table:
    """Row groups ``run`` (None: the whole file) read together, on pyarrow's threads when
    ``threads``, or a row group at a time where pyarrow reads dictionaries nested in lists
    or structs of several row groups only so ("Nested data conversions not implemented for
    chunked array outputs")."""
    try:
        if run is None:
            return reader.read(columns=columns, use_threads=threads)
        return reader.read_row_groups(run, columns=columns, use_threads=threads)
    except pa.ArrowNotImplementedError:
        groups = range(reader.metadata.num_row_groups) if run is None else run
        return pa.concat_tables(
            reader.read_row_group(g, columns=columns, use_threads=threads) for g in groups
        )


def runs_of(
    sizes: list[int], rows: int, most: int | None = None, costs: list[int] | None = None
) -> list[list[int]]:
    """Consecutive pieces (row groups, files) of ``sizes`` rows in runs taken together: each
    of up to ``rows`` rows in all and ``most`` pieces (their ``costs`` in all, when given),
    or one piece alone.

    >>> runs_of([3, 3, 3, 9, 0, 2], 6)
    [[0, 1], [2], [3], [4, 5]]
    >>> runs_of([0, 0, 0], 6, most=2)
    [[0, 1], [2]]
    >>> runs_of([0, 0, 0, 0], 6, most=4, costs=[2, 1, 1, 2])
    [[0, 1, 2], [3]]
    """
    runs, run, held, spent = [], [], 0, 0
    for g, n in enumerate(sizes):
        cost = 1 if costs is None else costs[g]
        if run and (held + n > rows or (most is not None and spent + cost > most)):
            runs.append(run)
            run, held, spent = [], 0, 0
        run.append(g)
        held += n
        spent += cost
    if run:
        runs.append(run)
    return runs


def type_partitions(left: Source, right: Source, left_by, right_by, keys=None) -> None:
    """A by-column that is a partition on one side, paired with a column the other side's
    files hold, takes that column's type where each of its folders' values is one of it
    (``g=1`` folders beside an int32 ``g``, ``date=2026-11-27`` beside a date32 ``date``):
    the folders' own typing (int64 or string) would refuse them. So does one of null folders
    only (``Source.untyped``: nothing typed it, its rows match nothing either way). (A
    dictionary's values' type: partition columns are plain.) A folder whose value is not one
    of the column's type is refused by name: the join's "cast one of them" fits no folder.
    Folders of whole numbers paired with folders of text are text (``_digits_beside_text``).
    So too the key, ``keys`` (LEFT's, RIGHT's), where it is a partition (``--on date`` over
    ``date=2026-11-27`` folders), but never as text, which no key is."""
    keys = [tuple(keys)] if keys else []
    for mine, theirs, pairs in (
        (left, right, [*zip(left_by, right_by), *keys]),
        (right, left, [*zip(right_by, left_by), *((b, a) for a, b in keys)]),
    ):
        for name, other in pairs:
            is_key = (name, other) in keys or (other, name) in keys
            if not is_key and _digits_beside_text(mine, name, theirs, other):
                mine.retype(name, pa.string())  # (each folder's text as it is: 007 stays)
                continue
            typed = other in theirs.data_schema.names or (  # (two sides' folders: each by
                mine.untyped(name) and other in theirs.schema.names and not theirs.untyped(other)
            )  # its own values, but where one side's are all null)
            if not (mine.is_partition(name) and typed):
                continue
            kind = theirs.schema.field(other).type
            kind = kind.value_type if pa.types.is_dictionary(kind) else kind
            if family(kind) in ("string", "binary"):  # (plain: the join compares any widths)
                kind = pa.string() if family(kind) == "string" else pa.binary()
            if family(kind) in (None, family(mine.schema.field(name).type)):
                continue  # (the same; or no by-column type, which the join names)
            misfit = mine.misfit(name, kind)
            if misfit is None:
                mine.retype(name, kind)
            elif other in theirs.data_schema.names and not pa.types.is_null(kind):
                raise EnrichError(
                    f"{mine.side} partition folder {name}={misfit} is no {kind} value, the type "
                    f"of {theirs.side} column {other!r} it is joined by. Hint: rename the "
                    f"folder, or write {theirs.side}'s {other!r} as a type of the folders' "
                    f"values"
                )
    for (source, name), (other, its) in itertools.permutations(
        zip((left, right), keys[0] if keys else ())
    ):
        if its in other.data_schema.names:
            continue  # (typed by it: a key of text there is the join's to name)
        if source.is_partition(name) and source.schema.field(name).type == pa.string():
            value = source.parts[0].values[name] or NULL_PARTITION
            raise EnrichError(
                f"{source.side}'s key {name!r} is a partition folder ({name}={value}), read "
                f"as text, which no key is: a folder key takes the type of the other side's "
                f"column of it, and the other side's files hold none. Hint: write the key "
                f"into the files of one side"
            )


def _digits_beside_text(mine: Source, name: str, theirs: Source, other: str) -> bool:
    """Whether ``name`` is a by-column of folders whose values are all whole numbers (so
    int64), paired with the other side's folders ``other`` of text (symbol=7203 beside
    symbol=AAPL): neither has a type of its own to give, and the two were refused as
    int64 against string, with a hint to cast what is a folder's name. Both are then
    text, where a folder of one side is named as one of the other's."""
    return (
        mine.is_partition(name)
        and theirs.is_partition(other)
        and mine.schema.field(name).type == pa.int64()
        and theirs.schema.field(other).type == pa.string()
        and not theirs.untyped(other)  # (null folders only: typed by these, as above)
        # and one of them named as one of the other's: else two spellings of one thing
        # (day=20261127 beside day=2026-11-27) would match nothing, and are refused
        and not {p.values[name] for p in mine.parts}.isdisjoint(
            p.values[other] for p in theirs.parts
        )
    )


def check_utf8(path: str, what: str) -> None:
    """Refuse a path whose name is not UTF-8 (bytes the file system took, which Python holds
    as surrogate escapes): pyarrow opens files by UTF-8 names only, and raised a traceback.

    >>> check_utf8(os.fsdecode(b"caf\\xe9.parquet"), "LEFT file")
    Traceback (most recent call last):
    asofgpu.enrich._errors.EnrichError: LEFT file caf\\xe9.parquet: its name is not UTF-8, which pyarrow cannot open; rename it
    """
    try:
        path.encode()
    except UnicodeEncodeError:
        shown = os.fsencode(path).decode(errors="backslashreplace")
        raise EnrichError(
            f"{what} {shown}: its name is not UTF-8, which pyarrow cannot open; rename it"
        ) from None


class _Held:
    """The values of column ``key`` in row groups of ``part``, each read when first asked
    for, in order (``Part.row_groups``). A folder its row groups' statistics contradict is
    read before it is refused: pyarrow writes the statistics of a slice of a dictionary
    column that holds nulls from more of its dictionary than the slice uses (a pandas
    Categorical's ['B', None] as 'A' to 'B', its [None, None] as 'A' to 'A'), and such
    folders were refused."""

    def __init__(self, part: Part, key: str, side: str):
        self._groups = enumerate(part.row_groups(side, [key], None))

    def of(self, g: int) -> list[pa.Scalar]:
        """Row group ``g``'s values, each once, least first (no nulls); ``g`` above those
        asked for before."""
        for at, table in self._groups:
            if at == g:
                break
        column = table.column(0)
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        if isinstance(column.type, pa.BaseExtensionType):  # (JSON: compared as text)
            storage = column.type.storage_type
            column = pa.chunked_array([c.storage for c in column.chunks], storage)
        values = column.drop_null().unique()
        return list(values.take(pc.array_sort_indices(values))) if len(values) else []


def _folder_text(value: pa.Scalar) -> str:
    """A column's value as a partition folder writes it: a duration's count, a boolean as
    ``true``, bytes as text."""
    if pa.types.is_duration(value.type):
        return str(value.cast(pa.int64()).as_py())
    if pa.types.is_boolean(value.type):
        return str(value.as_py()).lower()
    if pa.types.is_binary(value.type) or pa.types.is_large_binary(value.type):
        return value.as_py().decode(errors="replace")
    return str(value)


def _agrees(values: list[pa.Scalar], value) -> bool:
    """Whether a row group's ``values`` (``_Held``) agree with its folder's ``value``: none
    (nulls only), or the one value, equal or both NaN (``g=nan``)."""
    if len(values) != 1:
        return not values
    try:
        held = values[0].as_py()
    except (OverflowError, ValueError):  # (a date past Python's: not compared)
        return True
    return held == value or (held != held and value != value)


def _parsed(raw: str | None, kind: pa.DataType):
    """A partition folder's value as a value of type ``kind``, as statistics give it.

    >>> _parsed("2026-11-27", pa.date32()), _parsed("a", pa.large_binary()), _parsed(None, pa.int8())
    (datetime.date(2026, 11, 27), b'a', None)
    >>> _parsed("12:00:01", pa.time64("ns"))  # (pyarrow casts no text to times)
    datetime.time(12, 0, 1)
    >>> _parsed("90", pa.duration("s"))  # (nor to durations: pyarrow writes their counts)
    datetime.timedelta(seconds=90)
    """
    if raw is None or family(kind) == "string":
        return raw
    if family(kind) == "binary":
        return raw.encode()
    if pa.types.is_time(kind):
        return datetime.time.fromisoformat(raw)
    if pa.types.is_duration(kind):
        # (int() alone takes "1_000", " 7", other scripts' digits)
        if not (re.fullmatch(r"-?[0-9]+", raw) and -(2**63) <= int(raw) < 2**63):
            raise ValueError(f"{raw!r} is no count of a duration's ticks")
        return pa.scalar(int(raw)).cast(kind).as_py()
    return arrow_numpy.text(raw).cast(kind)[0].as_py()


def _float_holds(raw: str | None, value: float | None, kind: pa.DataType) -> bool:
    """Whether ``value``, folder text ``raw`` read as floats of ``kind``, is the number the
    text says: NaN (``g=nan``, as pyarrow names it) is one, though no NaN equals itself; the
    float nearest to the text must be the text's own number, or the shortest text of its
    width or of a double (``0.1``, pyarrow's name for float32's 0.1, and
    ``0.10000000149011612``), where ``16777217`` became float32's 16777216 and matched its
    rows. (Other texts of a float, ``0.300000012`` for float32's 0.3, are refused too.)

    >>> [_float_holds(t, _parsed(t, pa.float32()), pa.float32()) for t in ("0.1", "nan", "16777217")]
    [True, True, False]
    >>> [_float_holds(t, _parsed(t, pa.float64()), pa.float64()) for t in ("-0", "1e+30", "1e400")]
    [True, True, False]
    """
    if raw is None:
        return True
    if math.isnan(said := float(raw)) or math.isnan(value):
        return math.isnan(said) and math.isnan(value)
    # (exactly: reading text rounds 9007199254740993 to ...992 and 1e400 to inf as doubles
    # too. pyarrow names a float32 by its shortest text, a float16 by its double's)
    texts = (value, str(np.dtype(kind.to_pandas_dtype()).type(value)), repr(value))
    try:
        return any(Decimal(raw) == Decimal(text) for text in texts)
    except InvalidOperation:  # (a text pyarrow reads and Python's decimal does not)
        return False


def _repeated(raw: str, kind: pa.DataType, rows: int) -> pa.Array:
    """A partition folder's value ``raw`` as a value of ``kind``, ``rows`` times."""
    if kind == pa.int64():
        return arrow_numpy.array(np.full(rows, int(raw), np.int64))
    if kind == pa.string():
        data = raw.encode()
        offsets = np.arange(rows + 1, dtype=np.int32) * len(data)
        return pa.StringArray.from_buffers(rows, pa.py_buffer(offsets), pa.py_buffer(data * rows))
    one = pa.array([_parsed(raw, kind)], kind)  # (a type another side's column gave it)
    return one.take(arrow_numpy.array(np.zeros(rows, np.int32)))


def _hidden(name: str) -> bool:
    return name.startswith((".", "_"))


def _parquet_files(folder: str) -> list[str]:
    found = []
    for here, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not _hidden(d))
        found += [
            os.path.join(here, f) for f in sorted(files) if f.endswith(SUFFIX) and not _hidden(f)
        ]
    return sorted(found)  # the order of their paths: RIGHT's row order where keys tie


def glob_root(pattern: str) -> str:
    """The folder of a glob's fixed part: 'day/*/q-*.parquet' -> 'day'."""
    return _glob_parts(pattern)[0]


def _glob_parts(pattern: str) -> tuple[str, list[str]]:
    """A glob's fixed folder and the names of its pattern after it ('.' names dropped)."""
    pieces = pattern.split(os.sep)
    fixed = next((i for i, piece in enumerate(pieces) if _GLOB_CHARS.search(piece)), len(pieces))
    root = os.sep if pieces[:fixed] == [""] else os.sep.join(pieces[:fixed]) or "."
    return root, [p for p in pieces[fixed:] if p not in ("", os.curdir)]


def glob_matches(pattern: str, paths: list[str]) -> str | None:
    """The first of ``paths`` (absolute, normalized; pass a path both as given and resolved,
    since glob lists paths through links) that ``glob.glob(pattern, recursive=True)`` would
    list once it exists: name by name, ``**`` standing for any number of folders. A pattern
    that climbs with '..' after a wildcard matches anything under the folder it can climb
    to, and a leading dot is matched as any name is: answers stricter than glob's, never
    looser.

    >>> here = os.getcwd()
    >>> glob_matches("day/*.parquet", [f"{here}/day/x/a.parquet", f"{here}/day/a.parquet"])[len(here):]
    '/day/a.parquet'
    >>> glob_matches("day/*.parquet", [f"{here}/day/x/a.parquet", f"{here}/a.parquet"]) is None
    True
    >>> glob_matches("day/**/*.parquet", [f"{here}/day/x/y/a.parquet"])[len(here):]
    '/day/x/y/a.parquet'
    """
    root, pieces = _glob_parts(pattern)
    climbs = pieces.count(os.pardir)
    top = os.path.join(root, *[os.pardir] * climbs)
    tops = {os.path.join(os.path.abspath(top), ""), os.path.join(os.path.realpath(top), "")}
    for path in paths:
        for folder in tops:
            if path.startswith(folder) and (
                climbs or _names_match(pieces, path[len(folder) :].split(os.sep))
            ):
                return path
    return None


def _names_match(pieces: list[str], names: list[str]) -> bool:
    if not pieces:
        return not names
    if pieces[0] == "**":
        return any(_names_match(pieces[1:], names[i:]) for i in range(len(names) + 1))
    return (
        bool(names)
        and fnmatch.fnmatchcase(names[0], pieces[0])
        and _names_match(pieces[1:], names[1:])
    )


def _footer(path: str, side: str) -> tuple[pq.FileMetaData, pa.Schema]:
    """A file's footer and the schema its reader gives: the footer's own mapping
    (``to_arrow_schema``) names the storage types of logical types that a reader gives as
    extension types (UUID, JSON) where the file keeps no Arrow schema, as DuckDB's do."""
    try:
        with pq.ParquetFile(path) as reader:
            return reader.metadata, reader.schema_arrow.remove_metadata()
    except PermissionError:
        raise EnrichError(f"cannot read {side} file {path}: permission denied") from None
    except (OSError, pa.ArrowException) as exc:
        raise EnrichError(f"cannot read {side} file {path} as parquet: {one_line(exc)}") from None


def _stamp(path: str) -> tuple[int, int]:
    """A file's size and modification time (ns), which a rewrite changes."""
    info = os.stat(path)
    return info.st_size, info.st_mtime_ns


def _partition_values(relative: str) -> dict[str, str | None]:
    values = {}
    for folder in relative.split(os.sep)[:-1]:
        key, eq, value = folder.partition("=")
        if eq and key:
            value = urllib.parse.unquote(value)
            values[urllib.parse.unquote(key)] = None if value == NULL_PARTITION else value
    return values


def _describe(schema: pa.Schema) -> str:
    return ", ".join(f"{f.name}: {f.type}" for f in schema)


def _keys(keys: list[str]) -> str:
    return ", ".join(f"{k}=" for k in keys) if keys else "no partition folders"
