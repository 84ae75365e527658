"""LEFT's side of a run: its files read in runs (``joined_together``) on a thread of their
own (``files_batches``, handed over by a ``Prefetch``), each chunk joined with RIGHT attached
(``_attach``), its rows handed to its file's writer in OUT (``_output``), and each file closed
and synced while the next files are joined (``join_left``). A LEFT file whose columns can be
carried into OUT as they are (``copy_of``: ``_copy.LeftChunks``) has only its keys read."""

from __future__ import annotations

import contextlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from .. import _arrow_numpy as arrow_numpy
from .._encode import family
from . import _interrupts as interrupts
from . import _memory as memory
from ._checks import Options, Plan, files_into_one, left_columns
from ._copy import TOO_SMALL, LeftChunks
from ._errors import OutputError, one_line
from ._output import (
    AtomicFile,
    AtomicFolder,
    ParquetStitcher,
    WholeFile,
    WritePools,
    footer_metadata,
    stored_as,
)
from ._prefetch import Prefetch
from ._schemas import is_text
from ._sources import Part, Source, runs_of

if TYPE_CHECKING:
    from ._job import Run

# LEFT files joined together at most (``joined_together``): memory, each file's tables held
# until its run is written; and of them copied, open files
RUN_FILES, RUN_COPIED = 1024, 32
# LEFT files the log gives a line each (``file_lines``); one line tells of the rest
FILES_LOGGED = 10
REASONS_LOGGED = 3  # the reasons named where LEFT's other files are written again for several


@dataclass
class Counts:
    """LEFT's rows joined, and the joins (chunks)."""

    rows: int = 0
    chunks: int = 0  # joins
    largest: int = 0  # rows of the largest chunk

    def add(self, rows: int) -> None:
        """A chunk of ``rows`` rows joined."""
        self.rows += rows
        self.chunks += 1
        self.largest = max(self.largest, rows)


def join_left(
    run: Run,
    runs: list[list[int]],
    left_batches: Prefetch,
    copies: list,
    target: AtomicFile | AtomicFolder,
    attach,
) -> Counts:
    """Each run of LEFT's files (``joined_together``) read from ``left_batches``, RIGHT
    attached, and written into its place in ``target``; the counts of rows and joins.

    A file's last chunks are encoded while the next files are read and joined: its writer
    closes on a thread of its own (one at a time), left before OUT is."""
    options, left, progress, out = run.options, run.left, run.progress, run.out
    counts = Counts()
    # The writers' pools, shut down after ``closing`` (entered after them) has closed the
    # last file.
    with (
        WritePools() as pools,
        ThreadPoolExecutor(1, thread_name_prefix="asofgpu-close") as closing,
        _one_file_writer(left, target, run.the_plan, options, pools) as one_file,
    ):
        closed = []  # the last run's files, closing
        progress.start(left.rows)
        try:
            lines = file_lines(
                left,
                [i for files in runs for i in files],
                lambda i: how_read(copies[i], run.rows, left.parts[i]),
                lambda rest: _how_read_all(
                    [copies[i] for i in rest], [left.parts[i] for i in rest]
                ),
            )
            for files in runs:
                for i in files:
                    if i in lines:
                        progress.log(lines[i])
                with (
                    _writers(files, left, target, run.the_plan, options, copies, pools)
                    if one_file is None
                    else contextlib.nullcontext([one_file] * len(files))
                ) as writers:
                    if len(files) == 1:
                        batches = _one_file(left_batches)
                        _enrich_part(left, batches, writers[0], attach, counts, progress, out)
                    else:
                        chunks = next(iter(left_batches))
                        _enrich_parts(left, chunks, writers, attach, options, counts, progress, out)
                        progress.update(counts.rows)
                    for done in closed:
                        done.result()  # raises what closing the files before raised
                if one_file is None:
                    closed = [closing.submit(_close, writer, out, target) for writer in writers]
            attach.finish()  # a stream checks the RIGHT rows past LEFT's last row too
            for done in closed:
                done.result()
            if one_file is not None:  # here, not on the closing thread: an interrupt aborts
                _close(one_file, out, target)  # the writer, never while it closes
        finally:
            progress.stop()
    return counts


def joined_together(
    parts: list[Part],
    rows: int,
    copied: list[bool] | None = None,
    files: int | None = None,
    copied_files: int | None = None,
) -> list[list[int]]:
    """LEFT's files (their indices) in runs joined as one chunk: consecutive files of up to
    ``rows`` rows in all, each still written into its own output file; a larger file alone,
    in chunks. A join costs about a millisecond whatever its rows (the probe's and gather's
    set-up, the staleness, handing the GIL to and from the readers and writers): a day of
    per-symbol LEFT files, most of a few thousand rows, spent most of its time so.

    A run holds ``files`` (``RUN_FILES``) at most: each file's tables and futures (about
    13 KB) are held until its run is written, and 20,000 files of 3 rows in one run went
    past a --memory-limit of 650MiB. Of them, ``copied_files`` (``RUN_COPIED``) whose
    columns are ``copied`` (all, when not given) at most: each is open from its run's start
    until the run is written, and the last run's while they close (a run of 2,000 empty or
    tiny files ran out of macOS' 256 descriptors and Linux' 1,024). The others are written
    whole (``WholeFile``), each opened only while pyarrow writes it.

    >>> from types import SimpleNamespace as Part
    >>> joined_together([Part(rows=n) for n in (5, 3, 9, 2, 0, 1)], rows=8)
    [[0, 1], [2], [3, 4, 5]]
    >>> joined_together([Part(rows=0)] * 5, rows=8, files=4, copied_files=2)
    [[0, 1], [2, 3], [4]]
    >>> copied = [True, False, False, False, True, False]
    >>> joined_together([Part(rows=0)] * 6, rows=8, copied=copied, files=4, copied_files=2)
    [[0, 1, 2], [3, 4, 5]]
    """
    files = RUN_FILES if files is None else files
    copied_files = RUN_COPIED if copied_files is None else copied_files
    cost = max(1, files // copied_files)  # a copied file's share of a run's files
    costs = [cost if copied is None or copied[i] else 1 for i in range(len(parts))]
    return runs_of([part.rows for part in parts], rows, most=files, costs=costs)


def files_batches(
    left: Source, options: Options, rows: int, copies: list, runs: list, last: bool = False
):
    """Every LEFT file's ``_batches``, by ``runs`` (``joined_together``): a file alone's
    followed by None, and the files of a run of several as one item, a list of each file's
    list of chunks (of up to a chunk's rows in all). Read on one thread, which goes on into
    the next files while the last chunks of one are joined (a reader a file made each
    file's first chunk wait for its own: 100 files of 20,000 rows waited 0.37 s); a run as
    one item reads the next run, not the next file, while one is joined."""
    for run in runs:
        chunks = [
            _batches(left, left.parts[i], options, rows, copied_chunks(copies[i]), last)
            for i in run
        ]
        if len(run) == 1:
            yield from chunks[0]
            yield None
        else:
            yield [
                _as_one(list(batches)) if _written_whole(run, copies[i]) else list(batches)
                for i, batches in zip(run, chunks)
            ]


def _batches(
    left: Source, part: Part, options: Options, rows: int, copied: LeftChunks | None, last: bool
):
    """``part``'s rows in chunks, each with the LEFT row group it copies (None: not copied):
    its columns (only the join's, when copied), then the partition columns the join needs.
    ``last``: the file is read for the last time, and its footer is dropped once it is
    (``Footers.release``; what OUT's file keeps of it was taken when it was found)."""
    # By-columns of folders as one-value dictionaries; the key never (a join takes no
    # dictionary key: --on a partition folder, day=20261127, was refused as one)
    keys = [c for c in dict.fromkeys(options.left_by) if c != options.left_on]
    needed = left_columns(options)  # the keys, and each row's tolerance when asked
    if copied is None:
        written = written_partitions(left, options)  # --one-file: written as columns
        codes = keys + [c for c in written if c != options.left_on]  # (the key: plain)
        for batch in part.batches("LEFT", rows):
            yield left.with_partitions(part, batch, needed + written, as_codes=codes), None
    else:
        data = [c for c in needed if c in left.data_schema.names]
        text = [c for c in data if is_text(left.data_schema.field(c).type)]
        for table, group in zip(part.row_groups("LEFT", data, text), copied.groups):
            yield left.with_partitions(part, table, needed, as_codes=keys), group
    if last:
        part.read_for_the_last_time()


def _written_whole(run: list[int], copy) -> bool:
    """Whether a file of ``run`` is written whole (``WholeFile``), its chunks handed over as
    one (``_as_one``): one of several joined together, its columns not copied."""
    return len(run) > 1 and copied_chunks(copy) is None


def _as_one(chunks: list) -> list:
    """A file's chunks (not copied, so each with no row group) as one chunk, or none: its
    rows for one write (``WholeFile``). They are of up to a chunk's rows in all."""
    tables = [_as_table(batch) for batch, _ in chunks if batch.num_rows]
    if len(tables) <= 1:
        return [(tables[0], None)] if tables else []
    return [(pa.concat_tables(tables), None)]


def _one_file(batches: Prefetch):
    """The items of ``batches`` up to the end of the file (``files_batches``' None)."""
    for item in batches:
        if item is None:
            return
        yield item


@contextlib.contextmanager
def _one_file_writer(
    left: Source,
    target: AtomicFile | AtomicFolder,
    the_plan: Plan,
    options: Options,
    pools: WritePools,
):
    """OUT's one writer for LEFT's several files (``--one-file``), aborted if the block
    raises; None where each file has its own (``_writers``). Its footer keeps the first
    file's metadata (``Part.kept_metadata``) but pandas', which describes that file's rows
    and index alone."""
    if not files_into_one(options, left):
        yield None
        return
    kept = {k: v for k, v in left.parts[0].kept_metadata.items() if k != "pandas"}
    writer = _writer(target.path_for(""), the_plan, kept, options, None, pools)
    try:
        yield writer
    except BaseException:
        writer.abort()
        raise


@contextlib.contextmanager
def _writers(
    run: list[int],
    left: Source,
    target: AtomicFile | AtomicFolder,
    the_plan: Plan,
    options: Options,
    copies: list,
    pools: WritePools,
):
    """The writers of LEFT's files ``run`` (indices), each into its place in ``target``;
    all aborted (their files closed) if the block raises. In a run of several files, each
    not copied is written whole (``files_batches`` gives it one chunk)."""
    writers: list[ParquetStitcher | WholeFile] = []
    try:
        for i in run:
            part = left.parts[i]
            path = target.path_for(part.relative)
            whole = _written_whole(run, copies[i])
            writer = _writer(path, the_plan, part.kept_metadata, options, copies[i], pools, whole)
            writers.append(writer)
        yield writers
    except BaseException:
        for writer in writers:
            writer.abort()
        raise


def _enrich_part(
    left: Source, batches, writer: ParquetStitcher, attach, counts: Counts, progress, out: str
) -> None:
    """One LEFT file's ``batches``, a chunk at a time, RIGHT attached, handed to ``writer``."""
    for batch, group in batches:
        interrupts.check()  # one a callback from C dropped (numba compiling) ends the run
        if not batch.num_rows:  # an empty file's or row group's: nothing to attach or write
            continue
        _write_joined(left, writer, batch, group, attach(batch), out)
        counts.add(batch.num_rows)
        progress.update(counts.rows)  # joined; the last chunks are written by close()


def _enrich_parts(
    left: Source,
    files: list[list],
    writers: list[ParquetStitcher | WholeFile],
    attach,
    options: Options,
    counts: Counts,
    progress,
    out: str,
) -> None:
    """Several small LEFT files (``joined_together``), their chunks and a writer each: the
    chunks joined as one, and each chunk's rows handed to its file's writer."""
    chunks = [
        (writer, batch, group)
        for writer, batches in zip(writers, files)
        for batch, group in batches
        if batch.num_rows  # an empty file's or row group's: nothing to attach or write
    ]
    interrupts.check()
    if not chunks:
        return
    needed = left_columns(options)  # (a copied file's chunks hold no others)
    keys = _of_one_schema([_as_table(batch).select(needed) for _, batch, _ in chunks])
    if keys is None:  # (not seen: the files are read as one schema) joined as they come
        for writer, batches in zip(writers, files):
            _enrich_part(left, batches, writer, attach, counts, progress, out)
        return
    together = pa.concat_tables(keys)
    taken = attach(together)
    at, tables = 0, []
    for writer, batch, group in chunks:
        tables.append(
            _joined(left, writer.written_schema, batch, group, taken.slice(at, batch.num_rows))
        )
        at += batch.num_rows
    if _one_writer(chunks) and all(t.schema.equals(tables[0].schema) for t in tables):
        # OUT's one file (--one-file): the run's rows one row group, not one a file
        chunks, tables = chunks[:1], [pa.concat_tables(tables)]
    for (writer, _, group), table in zip(chunks, tables):
        with _writing(out):
            writer.write(table, group)
    counts.add(together.num_rows)


def _one_writer(chunks: list) -> bool:
    """Whether the chunks of a run, (writer, batch, group), go to one writer and copy no row
    group: OUT's one file (``--one-file``)."""
    return all(w is chunks[0][0] and g is None for w, _, g in chunks)


def _of_one_schema(tables: list[pa.Table]) -> list[pa.Table] | None:
    """The key ``tables`` of a run's chunks in one schema, to be joined as one, or None where
    they cannot be. A copied file's text keys come as codes, a dictionary of its own text
    type; another's as the text type the files are read as: both become codes of that type
    (a run of both had been joined a chunk at a time: 21 files, 1M rows of a day of
    per-symbol files, in 28 joins).

    >>> codes = pa.table({"s": pa.array(["a", "b"]).dictionary_encode()})
    >>> tables = _of_one_schema([codes, pa.table({"s": pa.array(["c"], pa.large_string())})])
    >>> [str(table["s"].type) for table in tables] == ["dictionary<values=large_string, "
    ...     "indices=int32, ordered=0>"] * 2, [table["s"].to_pylist() for table in tables]
    (True, [['a', 'b'], ['c']])
    >>> _of_one_schema([codes, pa.table({"s": pa.array([b"c"])})]) is None  # binary
    True
    """
    first = tables[0].schema
    if all(table.schema.equals(first) for table in tables):
        return tables
    as_codes = {}
    for i in range(len(first)):
        kinds = {table.schema.field(i).type for table in tables}
        if len(kinds) == 1:
            continue
        plain = [kind for kind in kinds if not pa.types.is_dictionary(kind)]
        values = {kind.value_type for kind in kinds if pa.types.is_dictionary(kind)} | set(plain)
        offsets = all(is_text(v) and not arrow_numpy.is_view_text(v) for v in values)
        if len(plain) != 1 or not offsets or len({family(v) for v in values}) > 1:
            return None
        as_codes[i] = pa.dictionary(pa.int32(), plain[0])
    encoded = []
    for table in tables:
        for i, kind in as_codes.items():
            field, column = table.schema.field(i), table.column(i)
            if not pa.types.is_dictionary(field.type):
                column = pc.dictionary_encode(column)
            table = table.set_column(i, field.with_type(kind), column.cast(kind))
        encoded.append(table)
    if any(not table.schema.equals(encoded[0].schema) for table in encoded):
        return None
    return encoded


def _as_table(batch: pa.RecordBatch | pa.Table) -> pa.Table:
    return batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])


def _write_joined(
    left: Source,
    writer: ParquetStitcher | WholeFile,
    batch: pa.RecordBatch | pa.Table,
    group,
    taken: pa.Table,
    out: str,
) -> None:
    """A LEFT chunk (``batch``, or the LEFT row group ``group`` it copies) and the columns
    ``taken`` for it from RIGHT, handed to ``writer``."""
    table = _joined(left, writer.written_schema, batch, group, taken)
    with _writing(out):
        writer.write(table, group)


def _joined(
    left: Source, written: pa.Schema, batch: pa.RecordBatch | pa.Table, group, taken: pa.Table
) -> pa.Table:
    """The table a writer of ``written`` takes for a LEFT chunk and its ``taken`` columns:
    LEFT's columns (none when its row group ``group`` is copied), then the partition columns
    OUT's one file holds (``written_partitions``), then ``taken``."""
    columns = taken.columns
    if group is None:
        batch = _as_table(batch)  # (its columns chunked, as ``stored_as`` takes them)
        partitions = written.names[len(left.data_schema) : len(written) - len(columns)]
        columns = [
            *batch.columns[: len(left.data_schema)],
            *map(batch.column, partitions),
        ] + columns
    # Views are read as large types (``viewless``): OUT keeps the files' own types; text
    # gathered as codes is written as such.
    columns = [stored_as(c, f.type) for c, f in zip(columns, written)]
    schema = pa.schema([f.with_type(c.type) for c, f in zip(columns, written)], written.metadata)
    return pa.Table.from_arrays(columns, schema=schema)


def _close(
    writer: ParquetStitcher | WholeFile, out: str, target: AtomicFile | AtomicFolder
) -> None:
    """What ``writer`` still encodes written, then its footer, and the file on disk
    (``target.sync``) while the next LEFT files are joined."""
    try:
        with _writing(out):
            writer.close()
            target.sync(writer.path)
    except BaseException:
        writer.abort()
        raise


def how_read(copy, rows: int, part: Part | None = None) -> str:
    """How a LEFT file is read, by its ``copy_of``; with its rows and size when ``part``."""
    size = f"{part.rows:,} rows ({memory.readable(part.bytes)}), " if part else ""
    if isinstance(copy, LeftChunks):
        return f"{size}a row group at a time, only its keys read; its columns copied as they are"
    return f"{size}in chunks of up to {rows:,} rows, its columns written again: {copy}"


def file_lines(left: Source, order: list[int], about, about_rest) -> dict[int, str]:
    """The log's lines on LEFT's files, by the index of the file each comes before (files
    joined in ``order``): ``LEFT <file>: about(index)`` for each of the first ``FILES_LOGGED``,
    then one ``LEFT's N other files (R rows): about_rest(indices)``; none for a single file.
    (A folder of 1,000 files gave 1,000 lines.)

    >>> from types import SimpleNamespace as S
    >>> left = S(single=False, parts=[S(relative=f"f{i}", rows=i) for i in range(12)])
    >>> lines = file_lines(left, list(range(12)), lambda i: f"{i} rows", lambda rest: "...")
    >>> lines[0], lines[9], lines[10], 11 in lines
    ('LEFT f0: 0 rows', 'LEFT f9: 9 rows', "LEFT's 2 other files (21 rows): ...", False)
    >>> file_lines(left, list(range(11)), str, lambda rest: "...")[10]
    "LEFT's 1 other file (10 rows): ..."
    """
    if left.single:
        return {}
    lines = {i: f"LEFT {left.parts[i].relative}: {about(i)}" for i in order[:FILES_LOGGED]}
    rest = order[FILES_LOGGED:]
    if rest:
        rows = sum(left.parts[i].rows for i in rest)
        files = f"{len(rest):,} other file{'s' * (len(rest) != 1)}"
        lines[rest[0]] = f"LEFT's {files} ({rows:,} rows): {about_rest(rest)}"
    return lines


def _how_read_all(copies: list, parts: list[Part]) -> str:
    """How LEFT's ``parts`` are read, each by its copy (``copy_of``), in a few words: how many
    are copied, how many written again and why: where the reasons differ, each of the first
    ``REASONS_LOGGED`` with how many files it holds back and the first of them. Row groups
    too small to keep are one reason whatever their sizes, in the words of its first file (a
    folder of small files gave a reason each size).

    >>> from types import SimpleNamespace as S
    >>> parts = [S(relative=name) for name in ("a", "b", "c", "d")]
    >>> _how_read_all(["an encrypted file"] * 3, parts)
    '3 written again: an encrypted file'
    >>> _how_read_all(["an encrypted file", "encrypted columns", "an encrypted file"], parts)
    '3 written again: an encrypted file (2 files, the first a); encrypted columns (b)'
    >>> _how_read_all(["w", "x", "y", "z", "z"], parts + [S(relative="e")])
    '5 written again: w (a); x (b); y (c); 1 other reason (2 files, the first d)'
    >>> small = ["20 rows (1.1 KiB), too small to keep", "1 row (900 B), too small to keep"]
    >>> _how_read_all(small + ["x 9", "x 99"], parts)
    '4 written again: 20 rows (1.1 KiB), too small to keep (2 files, the first a); x 9 (c); x 99 (d)'
    """
    why = [(copy, part) for copy, part in zip(copies, parts) if not copied_chunks(copy)]
    said = []
    if len(why) < len(copies):
        said.append(f"{len(copies) - len(why):,} copied as they are")
    # Each kind of reason's first words and its files, kinds in their first file's order.
    held_back: dict[str, tuple[str, list[Part]]] = {}
    for copy, part in why:
        kind = TOO_SMALL if copy.endswith(TOO_SMALL) else copy
        held_back.setdefault(kind, (copy, []))[1].append(part)
    reasons = list(held_back.values())
    if len(reasons) == 1 and all(copy == why[0][0] for copy, _ in why):
        said.append(f"{len(why):,} written again: {why[0][0]}")
    elif reasons:
        named = [f"{reason} ({_files_from(files)})" for reason, files in reasons[:REASONS_LOGGED]]
        others = [files for _, files in reasons[REASONS_LOGGED:]]
        if others:
            every = [part for files in others for part in files]
            named.append(
                f"{len(others):,} other reason{'s' * (len(others) != 1)} ({_files_from(every)})"
            )
        said.append(f"{len(why):,} written again: " + "; ".join(named))
    return ", ".join(said)


def _files_from(files: list[Part]) -> str:
    """``b``, or ``2 files, the first a``: the files a reason holds back, for the log."""
    if len(files) == 1:
        return files[0].relative
    return f"{len(files):,} files, the first {files[0].relative}"


def copied_chunks(copy) -> LeftChunks | None:
    return copy if isinstance(copy, LeftChunks) else None


def written_partitions(left: Source, options: Options) -> list[str]:
    """The partition columns OUT's one file holds (``--one-file``: no folder names them),
    after LEFT's columns; none where OUT mirrors LEFT's folders."""
    if not options.one_file:
        return []
    return [f.name for f in left.partitions if f.name not in left.data_schema.names]


def copy_of(part: Part, the_plan: Plan, options: Options, group_rows: int):
    """``part`` as a ``LeftChunks`` when its columns can be copied into OUT as they are, or
    why not (a str)."""
    if options.compression_level is not None:
        return f"--compression asks for level {options.compression_level}"
    if part.wanted is not None:  # (its pages hold what OUT's footer would not describe)
        return (
            "its columns differ in order, type or nullability from the other LEFT files', "
            "read as one"
        )
    return LeftChunks.open(
        part.path, the_plan.schema, group_rows, options.compression, sizes=part.meta
    )


def _writer(
    path: str,
    the_plan: Plan,
    kept: dict[str, str],
    options: Options,
    copy,
    pools: WritePools,
    whole: bool = False,
) -> ParquetStitcher | WholeFile:
    """OUT's writer into ``path``: ``whole``, a ``WholeFile``; else a ``ParquetStitcher``
    (copying ``copy``'s row groups when it is a ``LeftChunks``). Each makes the file on a
    thread of its pools: what that raises comes from a write or the close, under
    ``_writing``. The file keeps ``kept``, its LEFT file's footer metadata
    (``Part.kept_metadata``: pandas reads OUT with LEFT's index and dtypes, Spark with its
    calendar), and its footer says enrich wrote it (``FOOTER_MARK``)."""
    schema = the_plan.schema.with_metadata(footer_metadata(kept))
    compression = options.compression or "snappy"
    if whole:
        return WholeFile(
            path,
            schema,
            compression=compression,
            compression_level=options.compression_level,
            pools=pools,
        )
    return ParquetStitcher(
        path,
        schema,
        compression=compression,
        compression_level=options.compression_level,
        left=copied_chunks(copy),
        pools=pools,
    )


@contextlib.contextmanager
def _writing(out: str):
    """A file-system error while OUT is written, in the command's words."""
    try:
        yield
    except OSError as exc:
        raise OutputError(f"cannot write OUT {out}: {one_line(exc)}") from None
