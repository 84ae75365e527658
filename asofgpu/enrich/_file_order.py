"""The order a side's files hold their rows in, as far as their row-group statistics show
without reading them: a tape, the key never going back through the files in turn
(``is_tape``); the files in key order where their paths are not (``files_in_key_order``);
grouped, by the by columns and then the key, partition folders first (``grouped_order``).
Where none shows, RIGHT is held in memory, regrouped or spilled instead of streamed
(``_job._mode``). What the statistics cannot show, the order within a row group, is read
from the first row group; the stream checks every batch as it goes (``_stream.Order``).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .. import _arrow_numpy as arrow_numpy
from ._errors import EnrichError, one_line
from ._sources import NULL_PARTITION, Source
from ._stream import Order, descents, key_numbers, streamable_key


def is_tape(source: Source, on: str) -> bool:
    """Whether ``on`` never decreases through the files in order, as far as can be told
    without reading them: the row groups' statistics must not overlap (row groups without
    statistics: unknown, so no), and the first row group, whose order within statistics
    cannot show (a shuffled file may be one row group), is read and checked."""
    if on not in source.data_schema.names:
        return False
    raw = _raw_statistics(source, on)
    last = None
    first = None  # (path, row group) of the first with keys
    for part in source.parts:
        span = _key_span(part, on, raw)
        if span is _UNKNOWN:
            return False
        if span is None:
            continue  # no keys to order
        low, high, g = span
        if last is not None and low < last:
            return False
        last = high
        first = first or (part.path, g)
    return first is None or _row_group_ascends(source, *first, on)


def _row_group_ascends(source: Source, path: str, g: int, on: str) -> bool:
    """Whether row group ``g`` of ``path`` holds its ``on`` keys in order: read, as the
    statistics say nothing of the order inside one (a shuffled file may be one row group)."""
    try:
        keys = pq.ParquetFile(path).read_row_group(g, columns=[on]).column(0)
    except (OSError, pa.ArrowException) as exc:
        raise EnrichError(f"cannot read {source.side} file {path}: {one_line(exc)}") from None
    values, valid = key_numbers(keys)
    values = values if valid is None else values[valid]
    return bool(np.all(values[1:] >= values[:-1]))


def files_in_key_order(source: Source, on: str, ties_by_path: bool = True) -> tuple[Source, str]:
    """``source`` with its files in the order of their ``on`` keys, where they are a tape in
    that order (``is_tape``'s checks: statistics, and the first row group read) but not in
    their paths' order: pyarrow's ``write_dataset`` names a day's files part-0 ...
    part-16, and part-10 sorts before part-2. With
    ``ties_by_path`` (RIGHT's: its row order where keys tie is its files' paths'), rows of
    equal keys keep their paths' order: where one file ends on the key the next begins
    with, it must come first by path too, or the files keep their paths' order, and the
    second value says which two (else ""). LEFT's rows are matched each on its own, in any
    order. Files of no keys go first. Only for keys a stream takes (``streamable_key``);
    any other ``source`` is returned as it is, as are sources already in order.

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> for i in range(11):  # 0-9, 10-19, ..., 100-109
    ...     pq.write_table(pa.table({"t": list(range(10 * i, 10 * i + 10))}),
    ...                    os.path.join(folder, f"part-{i}.parquet"))
    >>> source = Source.find(folder, "RIGHT")
    >>> [p.relative for p in source.parts][:3], is_tape(source, "t")
    (['part-0.parquet', 'part-1.parquet', 'part-10.parquet'], False)
    >>> ordered, tie = files_in_key_order(source, "t")
    >>> [p.relative for p in ordered.parts][:3], is_tape(ordered, "t"), tie
    (['part-0.parquet', 'part-1.parquet', 'part-2.parquet'], True, '')
    """
    order, tie = _key_order(source, on, ties_by_path)
    if order is None:
        return source, tie
    return dataclasses.replace(source, parts=[source.parts[i] for i in order]), ""


def _key_order(source: Source, on: str, ties_by_path: bool) -> tuple[list[int] | None, str]:
    """The positions of ``source``'s files in their keys' order (``files_in_key_order``),
    or None; and where only a tie across two files stands in the way, which."""
    kind = source.schema.field(on).type if on in source.data_schema.names else None
    if kind is None or not streamable_key(kind, kind) or len(source.parts) < 2:
        return None, ""
    raw = _raw_statistics(source, on)
    if _ends_overlap(source, on, raw):
        return None, ""  # (what every file's spans would say, from two row groups a file)
    spans = [_key_span(part, on, raw) for part in source.parts]
    if any(span is _UNKNOWN for span in spans):
        return None, ""
    empty = [i for i, span in enumerate(spans) if span is None]
    by_path = [i for i, span in enumerate(spans) if span is not None]
    if all(spans[b][0] >= spans[a][1] for a, b in zip(by_path, by_path[1:])):
        return None, ""  # in order already
    # By first key, then last: a file of one key before one that begins with it. (Stable:
    # files alike keep their paths' order.)
    by_key = sorted(by_path, key=lambda i: spans[i][:2])
    tie = ""
    for before, after in zip(by_key, by_key[1:]):
        low, last = spans[after][0], spans[before][1]
        if low < last:
            return None, ""  # overlapping keys: no tape in any order
        if low == last and after < before and ties_by_path and not tie:
            first, then = source.parts[before].relative, source.parts[after].relative
            tie = (
                f"{first} ends on the key {then} begins with ({_shown(low, kind)}), and by "
                f"path {then} comes first"
            )
    if tie:
        return None, tie
    first = by_key[0]
    if not _row_group_ascends(source, source.parts[first].path, spans[first][2], on):
        return None, ""
    return empty + by_key, ""


def _ends_overlap(source: Source, on: str, raw: bool) -> bool:
    """Whether the files' keys overlap in any order, by each file's first and last row
    group of keys alone: the span ``_key_span`` walks every row group for, where those
    ascend (where they do not, the file is no part of a tape either). A day partitioned by
    symbol (``write_dataset``'s hive folders: 1,000 files of 300 row groups) spans the day
    in every file, which two row groups a file show: its 300,000 row groups' statistics
    took 0.8 s. False where a first or last row group gives no statistics."""
    ends = []
    for part in source.parts:
        meta, index = part.meta, part.leaves[on][0]
        groups = range(meta.num_row_groups)
        first = _first_keyed(part, meta, index, groups)
        if first is None:
            continue  # (a file of no keys)
        last = _first_keyed(part, meta, index, reversed(groups))
        low, high = first.statistics, last.statistics
        if low is None or high is None or not (low.has_min_max and high.has_min_max):
            return False
        ends.append((_bounds(low, raw)[0], _bounds(high, raw)[1]))
    ends.sort()
    return any(b[0] < a[1] for a, b in zip(ends, ends[1:]))


def _first_keyed(part, meta: pq.FileMetaData, index: int, groups):
    """The chunk of leaf column ``index`` of the first of ``groups`` (row group numbers, in
    the order looked at) of ``part`` (its footer ``meta``) that holds values; None where none
    does."""
    for g in groups:
        chunk = meta.row_group(g).column(index)
        if not _holds_no_values(part, index, chunk, chunk.statistics):
            return chunk
    return None


def _shown(value, kind: pa.DataType) -> str:
    """A key's statistic (raw: an integer) as its type shows it."""
    try:
        return str(pa.scalar(value, kind).as_py())
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return str(value)


# A file whose row groups' statistics cannot show its keys in order (``_key_span``).
_UNKNOWN = object()


def _raw_statistics(source: Source, on: str) -> bool:
    """Whether ``on``'s statistics are compared as their raw (physical) values: those of
    signed and temporal keys order as the keys do, and are plain ints (pyarrow builds pandas
    Timestamps of nanosecond ones). Unsigned ones are read as they are: the physical int32
    of a uint32 may wrap."""
    return not pa.types.is_unsigned_integer(source.schema.field(on).type)


def _key_span(part, on: str, raw: bool):
    """A file's lowest and highest ``on`` key and its first row group of keys, by its row
    groups' statistics: None where it holds no keys, ``_UNKNOWN`` where they cannot show its
    keys in order (a row group without statistics, or one starting below the last's end)."""
    meta = part.meta
    index = part.leaves[on][0]
    span = None
    for g in range(meta.num_row_groups):
        column = meta.row_group(g).column(index)
        stats = column.statistics
        if _holds_no_values(part, index, column, stats):
            continue  # no keys to order
        if stats is None or not stats.has_min_max:
            return _UNKNOWN
        low, high = _bounds(stats, raw)
        if span is None:
            span = (low, high, g)
        elif low < span[1]:
            return _UNKNOWN
        else:
            span = (span[0], high, span[2])
    return span


def _bounds(stats, raw: bool) -> tuple:
    """A row group's lowest and highest key by its statistics, raw (``_raw_statistics``)
    or as pyarrow converts them."""
    return (stats.min_raw, stats.max_raw) if raw else (stats.min, stats.max)


def _holds_no_values(part, index: int, chunk, stats) -> bool:
    """Whether a row group's chunk of ``part``'s leaf column ``index`` holds no values: no
    rows, only nulls, or a column of type null (``Part.null_leaves``); ``stats``: the
    chunk's statistics, which the caller holds (pyarrow builds them anew at each ask)."""
    return (
        chunk.num_values == 0
        or index in part.null_leaves
        or (stats is not None and stats.has_null_count and stats.null_count == chunk.num_values)
    )


def without_statistics(source: Source, column: str) -> str | None:
    """Where ``column``'s values lie in a row group whose footer gives no min/max for them,
    as ``is_tape`` and ``grouped_order`` need (``file, row group N`` and why: INT96
    timestamps, older Spark's, have none; else statistics were written off); or None."""
    if column not in source.data_schema.names:
        return None
    for part in source.parts:
        meta, index = part.meta, part.leaves[column][0]
        for g in range(meta.num_row_groups):
            chunk = meta.row_group(g).column(index)
            stats = chunk.statistics
            # (the statistics first: most chunks have them)
            if (stats is not None and stats.has_min_max) or _holds_no_values(
                part, index, chunk, stats
            ):
                continue
            why = (
                "INT96 timestamps, as older Spark writes them, have none"
                if chunk.physical_type == "INT96"
                else "written without statistics"
            )
            return f"{part.path}, row group {g}: {why}"
    return None


def grouped_order(source: Source, by: list[str], on: str) -> tuple[Source | None, str]:
    """``source`` with its files in the order a grouped stream reads them, where they are
    sorted by their ``by`` columns and then ``on`` (a day file per symbol, as vendors ship
    them), as far as can be told without reading them; else None, and why: the first check
    they fail, and where it lies ("" where no by columns are given). By columns of
    partition folders alone (``symbol=A/``, as pyarrow's and polars' partitioned writes lay
    a day out) must come first among ``by``: the files are taken in the order of their
    folders' values, their paths' order kept among files of the same values
    (``_in_folder_order``). Then: the first by column of the files' own, within the files of
    one folder, never goes back by its row-group statistics; no by column holds a null
    (where nulls sort is the writer's choice; a null folder neither) or is of floats (NaN
    sorts where the writer puts it, and has no statistics); no row group of one group alone
    begins below the end of the one before it of that group alone, or holds a group before
    that one's; and the first row group, read whole, is in order.

    >>> import os, tempfile
    >>> root = tempfile.mkdtemp()
    >>> for symbol in ("A", "A-1", "B"):  # by path A-1/ sorts before A/
    ...     os.mkdir(os.path.join(root, f"s={symbol}"))
    ...     pq.write_table(pa.table({"t": [1, 2]}), os.path.join(root, f"s={symbol}", "p.parquet"))
    >>> source = Source.find(root, "RIGHT")
    >>> [p.relative for p in source.parts]
    ['s=A-1/p.parquet', 's=A/p.parquet', 's=B/p.parquet']
    >>> [p.relative for p in grouped_order(source, ["s"], "t")[0].parts]
    ['s=A/p.parquet', 's=A-1/p.parquet', 's=B/p.parquet']
    >>> root = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"s": ["B", "C"], "t": [1, 2]}), os.path.join(root, "0.parquet"))
    >>> pq.write_table(pa.table({"s": ["A"], "t": [3]}), os.path.join(root, "1.parquet"))
    >>> print(grouped_order(Source.find(root, "RIGHT"), ["s"], "t")[1].replace(root, "ROOT"))
    's' goes back from 'C' to 'A' at ROOT/1.parquet, row group 0
    """
    if not by:
        return None, ""
    names = source.data_schema.names
    folders = [c for c in by if source.is_partition(c)]
    unordered = folders_unordered(source, by)
    if unordered:
        return None, unordered
    missing = [c for c in (*by[len(folders) :], on) if c not in names]
    if missing:
        return None, f"{missing[0]!r} is not a column of its files"
    floats = [c for c in by if pa.types.is_floating(source.schema.field(c).type)]
    if floats:
        return None, (
            f"by column {floats[0]!r} holds floats, whose NaN sorts where a writer puts it "
            f"and has no statistics"
        )
    values = None
    if folders:
        source, values = _in_folder_order(source, folders)
    why = _grouped(source, folders, list(by[len(folders) :]), on, values)
    return (None, why) if why else (source, "")


def folders_unordered(source: Source, by: list[str]) -> str:
    """Why ``source``'s partition folders among ``by`` keep its files from a grouped stream
    (``grouped_order``), or "" where nothing does: a folder after a by column of the
    files' own (their order would interleave the files), or a null one
    (``__HIVE_DEFAULT_PARTITION__``: where nulls sort is no writer's order)."""
    own = next((i for i, c in enumerate(by) if not source.is_partition(c)), len(by))
    after = [c for c in by[own:] if source.is_partition(c)]
    if after:
        are = "is a partition folder" if len(after) == 1 else "are partition folders"
        named = ", ".join(map(repr, after))
        return f"{named} {are}, which a stream takes only before the by columns of its files"
    for name in by[:own]:
        if any(p.values[name] is None for p in source.parts):
            return (
                f"a folder {name}={NULL_PARTITION} holds nulls, which sort where a writer puts them"
            )
    return ""


def _in_folder_order(source: Source, folders: list[str]) -> tuple[Source, list[tuple]]:
    """``source`` with its files in the order of their ``folders``' values (none null;
    typed as the columns are: int64 folders 7 before 10, which their paths' order puts
    after; text byte-wise, as Arrow orders it and the stream compares it), files of the
    same values in their paths' order; and each file's values."""
    table = pa.table(
        {
            c: pa.concat_arrays([source.partition_column(p, c, 1, False) for p in source.parts])
            for c in folders
        }
    )
    order = pc.sort_indices(table, [(c, "ascending") for c in folders]).to_pylist()  # (stable)
    rows = table.to_pylist()
    values = [tuple(rows[i][c] for c in folders) for i in order]
    if order != sorted(order):
        source = dataclasses.replace(source, parts=[source.parts[i] for i in order])
    return source, values


def _grouped(source: Source, folders: list[str], by: list[str], on: str, values) -> str:
    """``grouped_order``'s checks of ``source``'s files in their order: ``by`` the columns of
    its files, after ``folders`` whose values ``values`` gives a file each; the first that
    fails, and where ("" where none does)."""
    last = None
    first = None  # (part, row group) of the first with rows
    # The last row group's by values where it holds one group alone, and its keys' highest:
    # a next one of that group alone must not begin below it (the group's rows in files
    # part-10 before part-2 by path: the first by column's statistics never go back).
    alone, high = None, None
    raw = _raw_statistics(source, on)
    folder = None  # the folders' values of the file before
    for p, part in enumerate(source.parts):
        meta = part.meta
        indexes = [part.leaves[c][0] for c in by]
        key = part.leaves[on][0]
        if folders and values[p] != folder:
            folder, last = values[p], None  # a group of folders anew: the files' by columns too
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            if group.num_rows == 0:
                continue
            # (each chunk's statistics taken once: pyarrow builds them anew at each ask, and
            # a day laid out a folder a symbol holds 300,000 row groups a side)
            by_stats = [group.column(index).statistics for index in indexes]
            for stats in by_stats:
                if stats is None or not stats.has_null_count or stats.null_count:
                    at = f"{part.path}, row group {g}"
                    return _nulls_unknown_or_held(part, by, indexes, by_stats, at)
            if by_stats:
                stats = by_stats[0]
                if not stats.has_min_max:
                    return f"its footers give no min/max for {by[0]!r} ({part.path}, row group {g})"
                if last is not None and stats.min < last:
                    return (
                        f"{by[0]!r} goes back from {_by_shown([last])} to "
                        f"{_by_shown([stats.min])} at {part.path}, row group {g}"
                    )
                last = stats.max
            first = first or (part, g)
            mine = _one_group(by_stats)
            mine = None if mine is None else (folder, *mine)
            chunk = group.column(key)
            keys = chunk.statistics
            if mine is not None and mine == alone:
                if _holds_no_values(part, key, chunk, keys):
                    continue  # (null keys alone: nothing to order, and the group goes on)
            if mine is None or keys is None or not keys.has_min_max:
                alone = None  # (several groups, or keys unknown: nothing to compare)
                continue
            low, top = _bounds(keys, raw)
            if mine == alone:
                if low < high:
                    kind = source.schema.field(on).type
                    return (
                        f"{on!r} goes back within {_by_shown(_values_of(mine))} from "
                        f"{_shown(high, kind)} to {_shown(low, kind)} at {part.path}, "
                        f"row group {g}"
                    )
            elif alone is not None and _before(mine, alone):
                return (
                    f"the by values go back from {_by_shown(_values_of(alone))} to "
                    f"{_by_shown(_values_of(mine))} at {part.path}, row group {g}"
                )
            alone, high = mine, top
    if first is None:
        return ""
    part, g = first
    try:
        head = pq.ParquetFile(part.path).read_row_group(g, columns=[*by, on])
    except (OSError, pa.ArrowException) as exc:
        raise EnrichError(f"cannot read {source.side} file {part.path}: {one_line(exc)}") from None
    head = source.with_partitions(part, arrow_numpy.without_views(head), folders, [])
    order = Order.of(source, on, [*folders, *by])
    if descents(order.keys(head)).any():
        return f"its first row group is not in order ({part.path}, row group {g})"
    return ""


def _nulls_unknown_or_held(part, by: list[str], indexes: list[int], by_stats: list, at: str) -> str:
    """Why a row group (``at``) of ``part``, one of whose by columns' statistics
    ``by_stats`` (of leaf columns ``indexes``) do not say "no nulls", keeps its files from a
    grouped stream."""
    name, index, stats = next(
        (name, index, stats)
        for name, index, stats in zip(by, indexes, by_stats)
        if stats is None or not stats.has_null_count or stats.null_count
    )
    if index in part.null_leaves:  # (pandas writes a column of None so: no statistics)
        return f"{name!r} holds only nulls ({at})"
    if stats is None or not stats.has_null_count:
        return f"its footers do not say whether {name!r} holds nulls ({at})"
    return f"{name!r} holds nulls, which sort where a writer puts them ({at})"


def _by_shown(values) -> str:
    """By values as a reason shows them: text quoted, others as their type writes them
    (a pandas Timestamp, a date)."""
    return ", ".join(repr(v) if isinstance(v, (str, bytes)) else str(v) for v in values)


def _values_of(group: tuple) -> tuple:
    """A group's by values, its folders' first (``_grouped``'s ``(folders, *values)``)."""
    return (*(group[0] or ()), *group[1:])


def _before(group: tuple, other: tuple) -> bool:
    """Whether the by values of one group alone come before those of ``other`` (Python
    orders text by code point, as Arrow does by UTF-8 bytes); False where they do not
    compare.

    >>> _before((None, "A", 1), (None, "A", 2)), _before((None, "é"), (None, "z"))
    (True, False)
    >>> _before((None, 1), (None, "a"))
    False
    """
    try:
        return group < other
    except TypeError:
        return False


def _one_group(by_stats: list) -> tuple | None:
    """The by values of a row group that holds one group alone, by its by columns'
    statistics ``by_stats`` (none: a file's by values are all its folders'); None where it
    may hold more."""
    values = []
    for stats in by_stats:
        if not stats.has_min_max or stats.min != stats.max:
            return None
        values.append(stats.min)
    return tuple(values)
