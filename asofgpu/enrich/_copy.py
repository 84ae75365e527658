"""LEFT's columns carried into OUT as they are: their column chunks copied byte for byte.

OUT holds every LEFT column unchanged, then the attached ones. Decoding LEFT's columns only
to encode them again was a quarter of an enrich's CPU time (10M trades: their strings read and
hashed again, their numbers dictionary-encoded again), so when a LEFT file allows it only
its join keys are read, and each of its row groups becomes one row group of OUT: LEFT's
column chunks (compressed pages, dictionaries, statistics) followed by the attached columns
encoded from the join's result. The footer takes LEFT's schema elements and chunk metadata,
with the page offsets moved to where the pages land (``_thrift``).

A LEFT file is copied (``LeftChunks.open``) when its footer is plain (not encrypted), its
writer is not one whose pages readers read with workarounds (``read_with_workarounds``), every
chunk's pages lie in the file itself, its top-level columns are required where OUT's are
and optional where OUT's are nullable (not a file's required column that other files of its
folder hold nullable), its row groups are neither tiny (each one costs an encode of its own)
nor larger than a chunk (--chunk-rows, or fewer when memory is short: a row group is joined whole),
and, when --compression is given, its chunks already use that codec. Otherwise its columns
are decoded and encoded again, as before. What is not copied: page indexes and bloom
filters (optional; readers do without), and min/max statistics that a file without column
orders wrote (their order is the writer's, which a reader cannot know once the file says
otherwise).

>>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
>>> path = os.path.join(tempfile.mkdtemp(), "left.parquet")
>>> pq.write_table(pa.table({"t": list(range(100_000))}), path)
>>> chunks = LeftChunks.open(path, pa.schema([("t", pa.int64()), ("x", pa.float64())]),
...                          max_rows=1 << 20, codec=None)
>>> isinstance(chunks, LeftChunks), chunks.groups[0].num_rows
(True, 100000)
>>> LeftChunks.open(path, pa.schema([("t", pa.int64())]), max_rows=1000, codec=None)
'row groups of up to 100,000 rows, more than a copied chunk holds (1,000 rows of its keys and attached columns: --chunk-rows, or what memory allows)'
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from .._backend import walks
from . import _memory as memory
from . import _thrift as thrift

MAGIC = b"PAR1"

# Field ids of parquet.thrift: FileMetaData, SchemaElement, RowGroup, ColumnChunk,
# ColumnMetaData, Statistics.
FILE_SCHEMA, FILE_NUM_ROWS, FILE_ROW_GROUPS, FILE_CREATED_BY, FILE_COLUMN_ORDERS = 2, 3, 4, 6, 7
FILE_ENCRYPTION = 8
ELEMENT_REPETITION, ELEMENT_NAME, ELEMENT_NUM_CHILDREN = 3, 4, 5
REQUIRED, OPTIONAL = 0, 1  # FieldRepetitionType
GROUP_COLUMNS, GROUP_BYTES, GROUP_ROWS, GROUP_SORTING = 1, 2, 3, 4
GROUP_FILE_OFFSET, GROUP_COMPRESSED, GROUP_ORDINAL = 5, 6, 7
CHUNK_PATH, CHUNK_FILE_OFFSET, CHUNK_META = 1, 2, 3
CHUNK_INDEXES = (4, 5, 6, 7)  # offset index and column index: offsets and lengths
CHUNK_ENCRYPTED = (8, 9)
META_CODEC, META_COMPRESSED = 4, 7
META_DATA_PAGE, META_INDEX_PAGE, META_DICTIONARY_PAGE = 9, 10, 11
META_STATISTICS, META_BLOOM = 12, (14, 15)
STATS_ORDERED = (1, 2, 5, 6)  # max, min (deprecated), max_value, min_value

# pyarrow's codec names -> parquet's CompressionCodec values (lz4: the raw and the framed)
CODEC_IDS = {"none": {0}, "snappy": {1}, "gzip": {2}, "brotli": {4}, "lz4": {5, 7}, "zstd": {6}}


def read_footer(path: str) -> tuple[dict, int]:
    """A parquet file's decoded ``FileMetaData`` and where it starts; ThriftError when the
    file does not end as a plain parquet file does (an encrypted footer ends in PARE)."""
    with open(path, "rb") as f:
        size = f.seek(0, os.SEEK_END)
        if size < 12:
            raise thrift.ThriftError("not a parquet file")
        f.seek(size - 8)
        tail = f.read(8)
        if tail[4:] != MAGIC:
            raise thrift.ThriftError("not a plain parquet footer")
        length = int.from_bytes(tail[:4], "little")
        if length > size - 12:
            raise thrift.ThriftError("footer length past the start of the file")
        f.seek(size - 8 - length)
        meta, _ = thrift.decode_struct(f.read(length), 0)
    return meta, size - 8 - length


def subtree_end(elements: list[dict], at: int) -> int:
    """One past the last schema element of the field that starts at ``elements[at]``
    (elements list a tree depth first; a group says how many children it has)."""
    pending = 1
    while pending:
        pending += elements[at].get(ELEMENT_NUM_CHILDREN, (0, 0))[1] - 1
        at += 1
    return at


def top_level(elements: list[dict]) -> list[dict]:
    """The elements of the root's children (``elements[0]`` is the root)."""
    fields, at = [], 1
    while at < len(elements):
        fields.append(elements[at])
        at = subtree_end(elements, at)
    return fields


def top_level_names(elements: list[dict]) -> list[str]:
    return [e[ELEMENT_NAME][1].decode("utf-8", "replace") for e in top_level(elements)]


@dataclass
class CopiedGroup:
    """One LEFT row group: its chunks' byte ranges and their metadata, ready to re-address."""

    num_rows: int
    total_byte_size: int
    ranges: list[tuple[int, int]]  # (start, length) of each chunk's pages in LEFT
    chunks: list[dict]  # ColumnChunk structs, indexes and bloom filters dropped
    sorting: tuple | None  # its sorting columns: LEFT's columns keep their numbers in OUT


class LeftChunks:
    """A LEFT file whose column chunks go into OUT as they are (see the module's note)."""

    def __init__(self, path: str, meta: dict, groups: list[CopiedGroup]):
        self.path = path
        self.elements = meta[FILE_SCHEMA][1][1]
        self.names = top_level_names(self.elements)
        self.leaves = sum(1 for e in self.elements[1:] if ELEMENT_NUM_CHILDREN not in e)
        self.column_orders = meta.get(FILE_COLUMN_ORDERS, (None, (None, None)))[1][1]
        self.groups = groups

    @classmethod
    def open(
        cls,
        path: str,
        schema: pa.Schema,
        max_rows: int,
        codec: str | None,
        sizes: pq.FileMetaData | None = None,
    ):
        """A ``LeftChunks`` of the file at ``path``, whose columns are the first fields of
        OUT's ``schema``; or, when it cannot be copied, why not (a str). ``sizes``: the
        file's metadata as pyarrow read it, where the caller has it."""
        try:
            # Its row groups' sizes first, from what pyarrow read: a footer of thousands of
            # one-row groups took this module's reader 8 s, to be refused for their size.
            read = pq.read_metadata(path) if sizes is None else sizes
            groups = [read.row_group(g) for g in range(read.num_row_groups)]
            why = _sizes_refused([(g.num_rows, g.total_byte_size) for g in groups], max_rows)
            if why:
                return why
        except (OSError, pa.ArrowException):
            pass  # (an encrypted footer, say: the reader below says why, or checks them)
        try:
            meta, footer_at = read_footer(path)
            return cls._check(path, meta, footer_at, schema, max_rows, codec)
        except (thrift.ThriftError, KeyError, IndexError, TypeError, UnicodeError) as exc:
            return f"a footer this copy cannot read ({exc})"
        except OSError as exc:  # reading it for the join says so, in the command's words
            return f"its footer could not be read ({exc.strerror or exc})"

    @classmethod
    def _check(cls, path, meta, footer_at, schema, max_rows, codec):
        if FILE_ENCRYPTION in meta:
            return "an encrypted file"
        writer = meta.get(FILE_CREATED_BY, (None, b""))[1].decode("utf-8", "replace")
        if read_with_workarounds(writer):
            # Readers undo those writers' bugs by the name in the footer, which OUT's names
            # pyarrow instead: their pages, copied, were unreadable there.
            return f"pages written by {writer}, read with workarounds"
        elements = meta[FILE_SCHEMA][1][1]
        names = top_level_names(elements)
        if names != schema.names[: len(names)]:
            return "columns other than OUT's first ones"
        for element, field in zip(top_level(elements), schema):
            repetition = element.get(ELEMENT_REPETITION, (0, OPTIONAL))[1]
            if repetition not in (OPTIONAL, REQUIRED):
                return "repeated columns (a list in the layout before parquet's LIST type)"
            if (repetition == REQUIRED) != (not field.nullable):
                # A required column's pages hold no null flags, an optional one's do: under
                # a field declared the other way (other LEFT files' are), readers misread them.
                if repetition == REQUIRED:
                    return "required (non-null) columns that other LEFT files hold nullable"
                return "nullable columns that OUT declares required"
        orders = meta.get(FILE_COLUMN_ORDERS, (None, (None, None)))[1][1]
        groups = []
        for group in meta.get(FILE_ROW_GROUPS, (None, (None, [])))[1][1]:
            rows = group[GROUP_ROWS][1]
            ranges, chunks = [], []
            for chunk in group[GROUP_COLUMNS][1][1] if rows else ():  # empty: never written
                why = _uncopyable(chunk, footer_at, codec)
                if why:
                    return why
                column = chunk[CHUNK_META][1]
                ranges.append((_pages_start(column), column[META_COMPRESSED][1]))
                chunks.append(_portable(chunk, orders is not None))
            groups.append(
                CopiedGroup(rows, group[GROUP_BYTES][1], ranges, chunks, group.get(GROUP_SORTING))
            )
        sizes = [(g.num_rows, g.total_byte_size) for g in groups]
        return _sizes_refused(sizes, max_rows) or cls(path, meta, groups)

    def copy(self, group: CopiedGroup, out, at: int) -> list[dict]:
        """Write ``group``'s pages to the file ``out`` (at its position ``at``) and return
        its chunks' metadata re-addressed to where they landed."""
        chunks = []
        with open(self.path, "rb") as source:
            for (start, length), chunk in zip(group.ranges, group.chunks):
                source.seek(start)
                _copy_bytes(source, out, length)
                chunks.append(_moved(chunk, at - start))
                at += length
        return chunks


# How the reason a file's row groups are too small to copy ends (the log counts such files
# as one reason, whatever their sizes: ``_left._how_read_all``).
TOO_SMALL = "too small to keep"


def _sizes_refused(sizes: list[tuple[int, int]], max_rows: int) -> str | None:
    """Why a file of row groups of ``sizes`` (rows, uncompressed bytes) is not copied: one
    holds more rows than a copied chunk (it is joined whole), or they are too small on
    average (``walks.copies_row_groups``: each costs an encode of its own), the last aside
    where it holds fewer rows than the one before: a writer fills its row groups to a size
    and leaves the rest last (30 groups of 65,536 rows and one of 33,920 were refused at
    64,516 on average, and a 300-column file written again took 70 s); None where neither.

    >>> _sizes_refused([(65_536, 1 << 20), (65_536, 1 << 20), (100, 1 << 10)], 1 << 20)
    >>> _sizes_refused([(10_000, 2 << 20), (1_000_000, 200 << 20)], 1 << 20)  # not aside
    >>> _sizes_refused([(100, 1 << 10), (100, 1 << 10), (50, 1 << 9)], 1 << 20)
    'row groups of 100 rows (1.0 KiB) on average, the last aside, too small to keep'
    >>> _sizes_refused([(20_000, 100 << 20), (100, 1 << 10)], 1 << 20)  # wide: kept
    """
    rows = [r for r, _ in sizes]
    if rows and max(rows) > max_rows:
        return (
            f"row groups of up to {max(rows):,} rows, more than a copied chunk holds "
            f"({max_rows:,} rows of its keys and attached columns: --chunk-rows, or what "
            f"memory allows)"
        )
    holding = [(r, b) for r, b in sizes if r]  # empty ones: no row group in OUT
    aside = len(holding) > 1 and holding[-1][0] < holding[-2][0]
    judged = holding[:-1] if aside else holding
    total, nbytes = sum(r for r, _ in judged), sum(b for _, b in judged)
    if judged and not walks.copies_row_groups(total, len(judged), nbytes):
        average = total // len(judged)
        size = memory.readable(nbytes // len(judged))
        return (
            f"row groups of {average:,} row{'s' * (average != 1)} ({size}) on average"
            f"{', the last aside' if aside else ''}, {TOO_SMALL}"
        )
    return None


def _pages_start(column: dict) -> int:
    """Where a chunk's pages start: its dictionary page when it has one before its data
    pages (some writers set the dictionary offset to 0 when there is none)."""
    data = column[META_DATA_PAGE][1]
    dictionary = column.get(META_DICTIONARY_PAGE, (0, 0))[1]
    return dictionary if 0 < dictionary < data else data


# The writers whose pages readers read with workarounds, chosen by the footer's
# ``created_by`` (parquet's ``ApplicationVersion``): parquet-mr before 1.2.9 left the
# dictionary page out of a column's size (PARQUET-816), and before 1.8.0 wrote
# DELTA_BYTE_ARRAY pages Java's reader reads its own way (PARQUET-246); parquet-cpp before
# Arrow 3.0 marked compressed data pages v2 as not compressed (ARROW-10353). (The readers'
# distrust of older writers' statistics needs no cut-off: such files have no column orders,
# and ``_portable`` drops their min and max.)
_FIXED = {"parquet-mr": (1, 8, 0), "parquet-cpp": (2, 0, 0)}


def read_with_workarounds(created_by: str) -> bool:
    """Whether readers read pages of a file ``created_by`` wrote with workarounds.

    >>> read_with_workarounds("parquet-mr version 1.2.8 (build 1bf2dfd)")
    True
    >>> [read_with_workarounds(w) for w in ("parquet-cpp version 1.5.1-SNAPSHOT",
    ...  "parquet-cpp-arrow version 3.0.0", "parquet-mr version 1.8.1 (build 4aba4d)", "")]
    [True, False, False, False]
    """
    application, _, version = created_by.partition(" version ")
    fixed = _FIXED.get(application.strip())
    if fixed is None:
        return False
    numbers = re.match(r"\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?", version)
    if numbers is None:
        return True  # a version that cannot be read: as the oldest
    return tuple(int(n or 0) for n in numbers.groups()) < fixed


def _uncopyable(chunk: dict, footer_at: int, codec: str | None) -> str:
    if any(f in chunk for f in CHUNK_ENCRYPTED) or CHUNK_META not in chunk:
        return "encrypted columns"
    if chunk.get(CHUNK_PATH, (0, b""))[1]:
        return "pages in another file"
    column = chunk[CHUNK_META][1]
    start, length = _pages_start(column), column[META_COMPRESSED][1]
    if start < len(MAGIC) or length < 0 or start + length > footer_at:
        return "column offsets outside the file's pages"
    if codec is not None and column[META_CODEC][1] not in CODEC_IDS[codec]:
        return f"columns not compressed with {codec}, as --compression asks"
    return ""


def _portable(chunk: dict, ordered: bool) -> dict:
    """A chunk's metadata without what cannot come along: page indexes and bloom filters
    (not copied), and min/max statistics of a file without column orders."""
    chunk = {f: v for f, v in chunk.items() if f not in CHUNK_INDEXES}
    kind, column = chunk[CHUNK_META]
    column = {f: v for f, v in column.items() if f not in META_BLOOM}
    if not ordered and META_STATISTICS in column:
        stats_kind, stats = column[META_STATISTICS]
        column[META_STATISTICS] = (
            stats_kind,
            {f: v for f, v in stats.items() if f not in STATS_ORDERED},
        )
    chunk[CHUNK_META] = (kind, column)
    return chunk


def _moved(chunk: dict, shift: int) -> dict:
    """A chunk's metadata with its page offsets moved ``shift`` bytes."""
    chunk = dict(chunk)
    kind, column = chunk[CHUNK_META]
    column = dict(column)
    for field in (META_DATA_PAGE, META_INDEX_PAGE, META_DICTIONARY_PAGE):
        if field in column and column[field][1] > 0:
            column[field] = (column[field][0], column[field][1] + shift)
    chunk[CHUNK_META] = (kind, column)
    if chunk.get(CHUNK_FILE_OFFSET, (0, 0))[1] > 0:  # deprecated; 0: not set
        chunk[CHUNK_FILE_OFFSET] = (
            chunk[CHUNK_FILE_OFFSET][0],
            chunk[CHUNK_FILE_OFFSET][1] + shift,
        )
    return chunk


def _copy_bytes(source, out, length: int, block: int = 8 << 20) -> None:
    while length:
        data = source.read(min(block, length))
        if not data:
            raise OSError(f"{source.name} ended {length:,} bytes early")
        out.write(data)
        length -= len(data)
