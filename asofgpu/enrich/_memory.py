"""How much memory ``asofgpu enrich`` may use, and what a prepared RIGHT would take of it.

``--memory-limit`` bounds the process's peak resident memory. The process itself (Python,
numba, pyarrow and the compiled kernels) takes ``BASE_BYTES``; LEFT streams in chunks whose
size follows from the limit (``chunk_rows``); RIGHT, when it is not streamed (``--right-mode``), is prepared in memory when
its estimate (``right_bytes``) fits what is left, and spilled to hash partitions otherwise
(``_spill``).

>>> parse_size("1GiB"), parse_size("512MiB"), parse_size("2GB"), parse_size("1_000")
(1073741824, 536870912, 2000000000, 1000)
>>> readable(1536), readable(734003200), readable(3 * 2**40)
('1.5 KiB', '700 MiB', '3.0 TiB')
"""

from __future__ import annotations

import math
import os
import re

import numpy as np
import pyarrow as pa

from .._encode import family
from ._errors import EnrichError
from ._schemas import is_text
from ._sources import Source

BASE_BYTES = 400 << 20  # the process before any data: measured 250-330 MiB, with room
# LEFT chunks alive at once besides those the writer encodes (``in_flight``): two read ahead,
# one being joined.
READ_AND_JOINED_CHUNKS = 3
# A prepared RIGHT row holds its read columns about 2.5 times (the columns as read, their
# sorted copies and the combined payload) plus the sort's row numbers and group codes:
# 10M bench quotes (44 B a row as read) peaked at 1.0 GiB of the process's 1.5 GiB.
RIGHT_COPIES = 2.5
RIGHT_ROW_OVERHEAD = 24
# A prepared RIGHT row that brings a group of its own (a state table of entities) costs more:
# its by value's entry in the hash table and dictionary, its group's offsets. 1.9M rows of
# an int64 by column and a key took 209 B a row to prepare with a group a row, 83 B with
# 1,000 groups; the share of rows that are groups comes from a sample (``group_share``).
GROUP_ROW_BYTES = 128
# A range of LEFT's keys regrouped (``_regroup``) is held about four times over while it is
# sorted, joined and put back in row order: 30M keys (90% in one group) regrouped against
# 1M grouped quotes under a 1 GiB limit peaked at 1.5 GiB in 10 ranges, 1.03 GiB in 20 and
# 964 MiB in 40, the ranges' own bytes 168, 84 and 42 MiB.
REGROUP_COPIES = 4

_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
_SIZE = re.compile(r"\s*(\d[\d_]*(?:\.\d+)?)\s*([a-zA-Z]*)\s*")


def parse_size(text: str) -> int:
    """``1GiB``, ``512MiB``, ``2GB`` or a number of bytes -> bytes."""
    match = _SIZE.fullmatch(str(text))
    unit = match and match.group(2).lower()
    if not match or unit not in _UNITS:
        msg = f"expected a size such as 1GiB, 512MiB, 2GB or a number of bytes, got {text!r}"
        raise ValueError(msg)
    return int(float(match.group(1).replace("_", "")) * _UNITS[unit])


def readable(n: float) -> str:
    """1536 -> '1.5 KiB'; 734003200 -> '700 MiB'."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n:,.0f} {unit}" if unit == "B" or n >= 100 else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} TiB"


def machine_memory() -> int:
    """The machine's physical memory in bytes."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def default_limit() -> int:
    """A quarter of the machine's memory."""
    return machine_memory() // 4


def row_bytes(
    source: Source, columns: list[str], as_codes: list[str] = (), kept: list[str] = ()
) -> float:
    """Bytes a row of ``columns`` takes in memory once read, from the files' metadata:
    fixed-width columns their width, text and nested ones their uncompressed size a row plus
    an offset, partition columns and by columns read as codes (``as_codes``) 4, text kept as
    a dictionary (``kept``, ``kept_dictionary``) a 4-byte code and its stored share of the
    dictionaries."""
    total = 0.0
    for name in columns:
        if name in kept:
            total += 4 + _stored(source, name)[0]
            continue
        if name in as_codes or name not in source.data_schema.names:
            total += 4
            continue
        kind = source.schema.field(name).type
        try:
            width = 0 if is_text(kind) else kind.bit_width // 8
        except ValueError:  # not fixed-width: lists, structs, maps
            width = 0
        total += width if width else _stored_bytes(source, name)
    return total


def kept_dictionary(source: Source, name: str) -> bool:
    """Whether a text column is read, gathered and written as a dictionary (its codes and
    its values once) rather than as strings: when every file stores it dictionary-encoded,
    in under half the bytes of its strings (a writer whose dictionary outgrew its page went
    on in plain pages, about as large as the strings). A 200-byte note of 2,000 values was
    read as 400 MB of strings, gathered into 200 MB more, and hashed again by the writer.
    (The stored size is the most any file stores a row, the strings' size the first rows'
    of the first file that keeps the column so: a folder of one writer's files, alike.)"""
    if not is_text(source.schema.field(name).type):
        return False
    stored, encoded, measured = _stored(source, name)
    return encoded and 2 * stored < measured


def _stored(source: Source, name: str) -> tuple[float, bool, float]:
    """A text or nested column's stored bytes a row (the most of any file's, from its row
    groups' uncompressed sizes), whether every file keeps it dictionary-encoded, and, for
    text, its values' own bytes a row, measured on the first rows of the first file that
    keeps it so (``Part.text_bytes``; 0 when none does)."""
    kind = source.schema.field(name).type
    per_row, encoded, measured = 0.0, True, None
    for part in source.parts:
        meta = part.meta
        if not meta.num_rows:
            continue
        leaves = part.leaves.get(name, ())
        chunks = [meta.row_group(g).column(j) for g in range(meta.num_row_groups) for j in leaves]
        per_row = max(per_row, sum(c.total_uncompressed_size for c in chunks) / meta.num_rows)
        dictionary = bool(chunks) and all(c.has_dictionary_page for c in chunks)
        encoded = encoded and dictionary
        if measured is None and is_text(kind) and any(c.has_dictionary_page for c in chunks):
            measured = part.text_bytes(source.side, name)
    return per_row, encoded, measured or 0.0


def _stored_bytes(source: Source, name: str) -> float:
    """Bytes a row of a column (all its leaves) takes once read, plus a 4-byte offset: the
    most of any file's, from its row groups' uncompressed sizes. A text column a file keeps
    dictionary-encoded is stored as codes and its distinct values once (a 400-byte string
    repeated stores as about a byte a row), and read as whole strings: its values' own
    lengths are measured, on the first rows of the first such file (``Part.text_bytes``)."""
    stored, _, measured = _stored(source, name)
    return max(stored, measured) + 4


def right_bytes(
    source: Source,
    columns: list[str],
    as_codes: list[str],
    group_share: float = 0.0,
    kept: list[str] = (),
) -> int:
    """What RIGHT prepared in memory would take, by ``RIGHT_COPIES``, when ``group_share`` of
    its rows are each a group of its own (as ``group_share()`` reads it from a sample)."""
    per_row = (
        RIGHT_COPIES * row_bytes(source, columns, as_codes, kept)
        + RIGHT_ROW_OVERHEAD
        + GROUP_ROW_BYTES * group_share
    )
    return math.ceil(source.rows * per_row)


def group_share(source: Source, by: list[str], sample: int = 1 << 16) -> float:
    """About how many groups a row of ``source`` brings: the distinct values of its ``by``
    columns in the files (partition columns are one value a file) over the rows, in the
    first ``sample`` rows of its first file with rows; 0 when no by column is in the files.
    A sample of a state table of entities reads 1; of a market-data day, its symbols over
    the sample's rows."""
    # A by column the join refuses (an extension type) is for the checks on zero rows to
    # name; Arrow's encoding would fail on it first, with a message naming nothing.
    names = source.data_schema.names
    data = [c for c in by if c in names and family(source.data_schema.field(c).type) is not None]
    part = next((p for p in source.parts if p.rows), None)
    if not data or part is None:
        return 0.0
    batches, rows = [], 0
    for batch in part.batches(source.side, sample, data):  # a row group's at most
        batches.append(batch)
        rows += batch.num_rows
        if rows >= sample:
            break
    if not rows:
        return 0.0
    from ._stream import group_ids  # (it imports this module)

    table = pa.Table.from_batches(batches).slice(0, sample)
    # Rows with a null by value, numbered -1, count as one value more.
    return len(np.unique(group_ids(table, data))) / table.num_rows


def in_flight(writers: int, threads: int | None = None) -> int:
    """LEFT chunks alive at once: read ahead and being joined, and for each of ``writers``
    output files written at once the ``threads + 1`` it may be encoding (``ParquetStitcher``;
    ``threads``: one a core).

    >>> in_flight(1, threads=2), in_flight(2, threads=2), in_flight(1, threads=16)
    (6, 9, 20)
    """
    threads = max(1, threads or os.cpu_count() or 1)
    return READ_AND_JOINED_CHUNKS + writers * (threads + 1)


def chunk_rows(
    limit: int, requested: int, left_row: float, payload_row: float, writers: int = 1
) -> int:
    """LEFT rows a chunk: as requested, or fewer so that the chunks in flight (``in_flight``
    of ``writers`` files written at once) take at most a quarter of what the limit leaves
    after the process itself."""
    per_row = in_flight(writers) * (left_row + payload_row)
    return max(1, min(requested, int((limit - BASE_BYTES) / 4 / max(1.0, per_row))))


def check_limit(limit: int, given: str) -> int:
    """The data budget of ``limit``: what is left after the process itself."""
    floor = BASE_BYTES + (16 << 20)  # the process, and 16 MiB for data
    if limit <= floor:
        raise EnrichError(
            f"--memory-limit {given} is too small: the process itself takes "
            f"about {BASE_BYTES >> 20} MiB; give more than {floor >> 20} MiB, and room "
            f"for the largest row group"
        )
    return limit - BASE_BYTES


def largest_row_group(source: Source, as_codes: list[str] = (), read=lambda part: None) -> int:
    """The largest row group of a source once read, in bytes: its uncompressed size, where
    a text column kept dictionary-encoded counts its strings' lengths (``_stored_bytes``),
    unless it is read as codes (``as_codes``). ``read(part)``: the columns read of a file
    (None: all of them; a LEFT file copied into OUT has only its keys read)."""
    measured: dict[str, float] = {}
    largest = 0
    schema = source.data_schema
    texts = [n for n in schema.names if n not in as_codes and is_text(schema.field(n).type)]
    for part in source.parts:
        meta = part.meta
        names = read(part)
        if names is not None:
            names = [name for name in names if name in schema.names]
        leaves = part.leaves
        texts_read = texts if names is None else [n for n in texts if n in names]
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            size = part.group_bytes(g, names, meta)
            for name in texts_read:
                chunks = [group.column(j) for j in leaves.get(name, ())]
                if group.num_rows and any(c.has_dictionary_page for c in chunks):
                    if name not in measured:
                        measured[name] = part.text_bytes(source.side, name)
                    stored = sum(c.total_uncompressed_size for c in chunks)
                    size += max(0, int(group.num_rows * measured[name]) - stored)
            largest = max(largest, size)
    return largest
