"""What ``asofgpu enrich`` is asked to do, checked before any data is read: the options, the
columns each side must have, what OUT will hold, and the join itself on zero rows."""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from .._calendar import clock_changes, is_calendar, reaches
from .._duration import parse_tolerance
from .._gather import attached_field
from ..join import AsofJoin
from .. import _arrow_numpy as arrow_numpy
from ._errors import EnrichError, one_line
from ._memory import default_limit, parse_size
from ._output import AtomicFolder
from ._sources import Source, check_utf8, glob_matches

DEFAULT_CHUNK_ROWS = 1 << 20  # pyarrow's row groups: files it wrote are copied (_copy)
# auto: streamed when both sides are tapes, else in memory when it fits, else spilled
RIGHT_MODES = ("auto", "memory", "stream", "spill")
CODECS = ("none", "snappy", "gzip", "brotli", "lz4", "zstd")  # what parquet files may use


@dataclass
class Options:
    """What ``asofgpu enrich`` is asked to do; the names follow ``join_asof``'s keywords."""

    left: str | os.PathLike
    right: str | os.PathLike
    out: str | os.PathLike
    left_on: str
    right_on: str
    left_by: list[str] = field(default_factory=list)
    right_by: list[str] = field(default_factory=list)
    strategy: str = "backward"
    # None, "5s" / "250ms" / "1m30s", a calendar "1mo" / "1q" / "1mo15d", or a number in the
    # key's unit
    tolerance: object = None
    tolerance_column: str | None = None  # a LEFT column of each row's tolerance
    allow_exact_matches: bool = True
    columns: list[str] | None = None  # the right columns to attach; None: all but the keys
    suffix: str = "_right"
    device: str = "auto"
    chunk_rows: int = DEFAULT_CHUNK_ROWS
    # OUT's codec, one of CODECS; None: LEFT's columns as they are (_copy), the rest snappy
    compression: str | None = None
    compression_level: int | None = None  # None: the codec's default
    memory_limit: int | str | None = None  # bytes or "1GiB"; None: a quarter of the machine's
    tmp_dir: str | os.PathLike | None = None  # where spill files go; None: beside OUT
    right_mode: str = "auto"  # how RIGHT is held: one of RIGHT_MODES
    spill_partitions: int | None = None  # when spilling: this many partitions (and spill)
    one_file: bool = False  # OUT one file even when LEFT is several (``one_out_file``)


@dataclass
class Plan:
    """Which columns are read, attached and written."""

    payload: list[str]  # right columns to attach
    names: list[str]  # their names in the output
    read: list[str]  # right columns to read
    schema: pa.Schema  # the output's


@dataclass(frozen=True)
class Tolerance:
    """``--tolerance`` or ``--tolerance-column`` as the join takes it: ``value``, one for
    every row (None, a number in the key's unit, a ``numpy.timedelta64``, or a calendar
    string such as "1mo" that the join measures from each key), or ``column``, the LEFT
    column holding each row's own."""

    value: object = None
    column: str | None = None

    @property
    def calendar(self) -> bool:
        return isinstance(self.value, str)

    def of(self, left):
        """The tolerance for the rows of ``left`` (a LEFT batch or table)."""
        if self.column is None:
            return self.value
        column = left.column(self.column)
        if pa.types.is_dictionary(column.type):  # a partition or by column read as codes
            column = column.cast(column.type.value_type)
        return column


def tolerance_of(options: Options, left: Source, right: Source) -> Tolerance:
    """The tolerance asked for, checked against the keys' types."""
    if options.tolerance_column is not None:
        return Tolerance(column=_tolerance_column(options, left))
    value = options.tolerance
    if not isinstance(value, str):
        return Tolerance(value)
    _need(left, options.left_on)
    _need(right, options.right_on)
    # As the join decides: months, quarters and years, or days and weeks where the key's
    # zone changes its clocks (a day of 23 or 25 hours), are the calendar's.
    key = right.schema.field(options.right_on).type
    if is_calendar(value, zoned=pa.types.is_timestamp(key) and clock_changes(key.tz)):
        return Tolerance(_calendar(value.strip(), options, left))
    try:
        return Tolerance(parse_tolerance(value))
    except ValueError as exc:
        raise EnrichError(f"--tolerance: {exc}") from None


def _calendar(text: str, options: Options, left: Source) -> str:
    """A calendar tolerance, checked on one key of LEFT's type before any data is read: the
    key's type, the sign, and the text (polars' duration language)."""
    key = left.schema.field(options.left_on).type
    if not (pa.types.is_timestamp(key) or pa.types.is_date(key)):
        raise EnrichError(
            f"--tolerance {text!r} has calendar units (months, quarters, years), which need "
            f"a date or timestamp key; LEFT column {options.left_on!r} is {key}. Hint: pass "
            f"a number in the key's unit"
        )
    try:
        # A key of 0 from its buffers: pa.array would import pandas (a third of a second)
        zero = arrow_numpy.array(np.zeros(1, f"i{key.bit_width // 8}"), key)
        reaches(text, zero, "the key", ("backward", "forward"), "--tolerance")
    except (ValueError, TypeError, ImportError) as exc:
        raise EnrichError(one_line(exc)) from None
    return text


def _tolerance_column(options: Options, left: Source) -> str:
    name = options.tolerance_column
    if not isinstance(name, str):
        raise EnrichError(f"--tolerance-column must name a LEFT column, got {name!r}")
    _need(left, name, "--tolerance-column")
    kind = left.schema.field(name).type
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    if not (
        pa.types.is_integer(kind)
        or pa.types.is_floating(kind)
        or pa.types.is_duration(kind)
        or pa.types.is_null(kind)  # (pandas writes a column of None so: no limit anywhere)
    ):
        raise EnrichError(
            f"--tolerance-column {name!r} holds {kind}; it must hold numbers in the key's unit "
            f"or durations (null: no limit)"
        )
    return name


def left_columns(options: Options) -> list[str]:
    """The LEFT columns the join reads: the keys, and each row's tolerance when asked."""
    extra = [options.tolerance_column] if options.tolerance_column is not None else []
    return list(dict.fromkeys([options.left_on, *options.left_by, *extra]))


def check_options(options: Options) -> None:
    if options.tolerance is not None and options.tolerance_column is not None:
        raise EnrichError(
            "pass either --tolerance (one for every row) or --tolerance-column (each row's "
            "own), not both"
        )
    rows = options.chunk_rows
    if isinstance(rows, bool) or not isinstance(rows, (int, np.integer)) or rows < 1:
        raise EnrichError(f"--chunk-rows must be a positive whole number, got {rows!r}")
    _check_compression(options.compression, options.compression_level)
    if options.right_mode not in RIGHT_MODES:
        raise EnrichError(
            f"--right-mode must be one of {', '.join(RIGHT_MODES)}, got {options.right_mode!r}"
        )
    k = options.spill_partitions
    if k is not None and options.right_mode == "memory":
        raise EnrichError("--spill-partitions spills; it cannot go with --right-mode memory")
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 512):
        raise EnrichError(f"--spill-partitions must be a whole number from 1 to 512, got {k!r}")
    if options.tmp_dir is not None and not os.path.isdir(options.tmp_dir):
        raise EnrichError(f"--tmp-dir {os.fspath(options.tmp_dir)} is not a folder")
    if options.tmp_dir is not None:
        check_utf8(os.fspath(options.tmp_dir), "--tmp-dir")
    if not isinstance(options.suffix, str):
        raise EnrichError(f"--suffix must be a string, got {options.suffix!r}")
    if len(options.left_by) != len(options.right_by):
        raise EnrichError(
            f"--left-by and --right-by must name as many columns, got "
            f"{len(options.left_by)} and {len(options.right_by)}"
        )


def memory_limit_of(options: Options) -> tuple[int, str]:
    """The limit in bytes, and how to name it in messages."""
    limit = options.memory_limit
    if limit is None:
        limit = default_limit()
        return limit, f"{limit >> 20} MiB (a quarter of this machine's memory)"
    if isinstance(limit, str):
        try:
            return parse_size(limit), limit
        except ValueError as exc:
            raise EnrichError(f"--memory-limit: {exc}") from None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise EnrichError(f"--memory-limit must be a positive size, got {limit!r}")
    return limit, f"{limit:,} bytes"


def _check_compression(codec, level) -> None:
    if codec is None and level is not None:
        raise EnrichError(f"--compression: a level ({level!r}) needs a codec, e.g. zstd:{level}")
    if codec is None:
        return
    if codec not in CODECS:
        raise EnrichError(f"--compression must be one of {', '.join(CODECS)}, got {codec!r}")
    if codec != "none" and not pa.Codec.is_available(codec):
        raise EnrichError(f"--compression {codec}: this pyarrow was built without it")
    if level is None:
        return
    if codec == "none" or not pa.Codec.supports_compression_level(codec):
        raise EnrichError(f"--compression {codec} takes no level, got {codec}:{level}")
    low, high = pa.Codec.minimum_compression_level(codec), pa.Codec.maximum_compression_level(codec)
    if isinstance(level, bool) or not isinstance(level, int) or not low <= level <= high:
        raise EnrichError(
            f"--compression {codec}: the level must be a whole number from {low} "
            f"to {high}, got {level!r}"
        )


def one_out_file(options: Options, left: Source) -> bool:
    """Whether OUT is one file: LEFT is one, or ``--one-file`` asks for one of its files'
    rows one after another (``files_into_one``); else OUT is a folder of a file per LEFT
    file."""
    return left.single or options.one_file


def files_into_one(options: Options, left: Source) -> bool:
    """Whether ``--one-file`` puts several LEFT files (a folder or glob) into OUT's one file,
    which copies none of them and has one writer."""
    return options.one_file and not left.single


def check_output(options: Options, left: Source, right: Source) -> tuple[str, dict]:
    """OUT's real path (a symlink's target is what gets replaced): one file
    (``one_out_file``), else a folder of one file per LEFT file; and, for a folder, what it
    holds as checked (``AtomicFolder.check_replaceable``: {} for a file, or none yet), which
    the commit compares with what it then holds."""
    one_file = one_out_file(options, left)
    given = os.fspath(options.out)
    if not given.strip():
        raise EnrichError(f"-o/--output: expected a path to write, got {given!r}")
    check_utf8(given, "OUT")
    if given == "-":  # standard output, to many commands; here it was a file named "-"
        raise EnrichError(
            "OUT - would be standard output, which enrich cannot write: it writes OUT beside "
            "itself and renames it into place; pass a file or folder path (./- for a file "
            "named '-')"
        )
    if _names_a_stream(given):
        raise EnrichError(
            f"OUT {given} is a stream (a process's open file), not a path: enrich writes OUT "
            f"beside itself and renames it into place; pass a file or folder path"
        )
    names_folder = given.endswith(os.sep) or os.path.basename(given) in (os.curdir, os.pardir)
    if one_file and names_folder and not os.path.isdir(given):
        why = (
            "LEFT is one file, so OUT is one file too"
            if left.single
            else "--one-file asks for one file"
        )
        raise EnrichError(
            f"OUT {given} names a folder (it ends in {os.path.basename(given) or os.sep}), "
            f"but {why}; pass a file path, e.g. -o {os.path.join(given, 'enriched.parquet')}"
        )
    out = os.path.realpath(given)
    check_utf8(out, "OUT")  # (the folder it resolves to too: spill files go beside it)
    parent = os.path.dirname(out)
    if not os.path.isdir(parent):
        if os.path.islink(given):  # a dangling link: its target's directory is the one
            raise EnrichError(
                f"OUT {given} is a link to {out}, whose directory {parent} does not exist"
            )
        if os.path.exists(parent):
            raise EnrichError(f"the directory of OUT {given}, {parent}, is not a folder")
        raise EnrichError(f"the directory of OUT {given} does not exist")
    name_bytes = len(os.fsencode(os.path.basename(out)))
    try:
        longest = os.pathconf(parent, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):  # (no pathconf: not POSIX) the rename says
        longest = -1
    if 0 < longest < name_bytes:  # told now, not at the rename after the work (-1: no limit)
        raise EnrichError(
            f"OUT {given}: its name is {name_bytes} bytes, and a name in {parent} holds at "
            f"most {longest}"
        )
    for source in (left, right):
        for part in source.parts:
            if os.path.exists(out) and os.path.samefile(out, part.path):
                raise EnrichError(f"OUT {given} is the {source.side} file; write to another path")
        if source.single:
            continue
        if not os.path.isdir(source.given):  # a glob: only the paths it matches are read
            outs = [out, os.path.abspath(given)]  # (resolved, and as given: see glob_matches)
            written = (
                outs
                if one_file
                else [os.path.join(o, p.relative) for o in outs for p in left.parts]
            )
            matched = glob_matches(source.given, written)
            if matched is not None:
                what = "" if matched in outs else f" would hold {matched}, which"
                raise EnrichError(
                    f"OUT {given}{what} is matched by the {source.side} glob "
                    f"{source.given!r}; write it elsewhere, or a later run would read it as input"
                )
        elif _inside(out, source.given):
            raise EnrichError(
                f"OUT {given} is inside the {source.side} folder {source.given}; "
                f"write it elsewhere, or a later run would read it as input"
            )
    if not one_file:
        found = AtomicFolder.check_replaceable(out)
        if os.path.isdir(out):  # an earlier run's, which this run replaces whole
            for source in (left, right):
                for part in source.parts:
                    if _inside(os.path.realpath(part.path), out):
                        raise EnrichError(
                            f"{source.side} file {part.path} is inside OUT {given}, which "
                            f"this run replaces; write OUT elsewhere (or move the file out)"
                        )
        return out, found
    if os.path.isdir(out):
        raise EnrichError(
            f"OUT {given} is a directory; pass a file path, "
            f"e.g. -o {os.path.join(given, 'enriched.parquet')}"
        )
    if os.path.exists(out) and not os.path.isfile(out):
        raise EnrichError(
            f"OUT {given} is not a regular file; enrich writes "
            f"a parquet file and renames it into place"
        )
    return out, {}


_DESCRIPTORS = re.compile(r"^(/proc/[^/]+(/task/[^/]+)?/fd|/dev/fd)/")


def _names_a_stream(given: str) -> bool:
    """Whether ``given`` leads, link by link, through a process's file descriptors
    (``/dev/stdout`` -> ``/proc/self/fd/1`` -> a pipe, a terminal, or the file a shell
    redirected to, which renaming OUT into place would replace)."""
    path = os.path.abspath(given)
    for _ in range(40):  # the kernel's own limit on links followed
        # The folders on the way resolved (a link to /dev/fd among them), the last name not.
        path = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
        if _DESCRIPTORS.match(path):
            return True
        if not os.path.islink(path):
            return False
        path = os.path.abspath(os.path.join(os.path.dirname(path), os.readlink(path)))
    return False


def _inside(path: str, folder: str) -> bool:
    folder = os.path.realpath(folder)
    return os.path.commonpath([path, folder]) == folder


def _column_hint(name: str, schema: pa.Schema, listed: bool) -> str:
    """What the user may have meant: a close name, or, for a name of a comma-separated list
    (``listed``: --by, --columns), the names that hold a comma that the list cut."""
    cut = [n for n in schema.names if "," in n and name in (p.strip() for p in n.split(","))]
    if listed and cut:
        quoted = " or ".join('"' + n.replace('"', '""') + '"' for n in cut[:3])
        more = ", ..." if len(cut) > 3 else ""
        return f"; a name that holds a comma goes in double quotes: {quoted}{more}"
    close = difflib.get_close_matches(name, schema.names, n=1)
    names = ", ".join(schema.names[:12]) + (", ..." if len(schema.names) > 12 else "")
    return (f"; did you mean {close[0]!r}?" if close else "") + f" (its columns: {names})"


def _need(source: Source, name: str, named_in: str = "", listed: bool = False) -> None:
    if name not in source.schema.names:
        where = f" (named in {named_in})" if named_in else ""
        if source.single:
            named = f"file {source.given} has"
        elif os.path.isdir(source.given):
            named = f"folder {source.given} has"
        else:
            named = f"files {source.given} have"  # a glob
        raise EnrichError(
            f"{source.side} {named} no column {name!r}{where}"
            f"{_column_hint(name, source.schema, listed)}"
        )


def plan(options: Options, left: Source, right: Source) -> Plan:
    _need(left, options.left_on)
    _need(right, options.right_on)
    for name in options.left_by:
        _need(left, name, listed=True)
    for name in options.right_by:
        _need(right, name, listed=True)
    if options.columns is None:  # join_asof's rule: all but the right by (and a same-named on)
        dropped = set(options.right_by)
        if options.right_on == options.left_on:
            dropped.add(options.right_on)
        payload = [n for n in right.schema.names if n not in dropped]
    else:
        payload = list(options.columns)
        for name in payload:
            _need(right, name, "--columns", listed=True)
        twice = sorted({n for n in payload if payload.count(n) > 1})
        if twice:
            raise EnrichError(f"--columns names {', '.join(map(repr, twice))} more than once")
    taken = left.schema.names  # partition columns too: they name OUT's folders
    names: list[str] = []
    for name in payload:
        out = name + options.suffix if name in taken else name
        if out in taken or out in names:
            raise EnrichError(
                f"column {out!r} would appear twice in OUT: the RIGHT column {name!r} clashes "
                f"with a LEFT column even with --suffix {options.suffix!r}; pass another "
                f"--suffix, or leave {name!r} out of --columns"
            )
        names.append(out)
    read = list(dict.fromkeys([options.right_on, *options.right_by, *payload]))
    fields = list(left.data_schema)  # as LEFT's files declare them (required, metadata)
    if one_out_file(options, left):  # the partition folders' columns, which no folder names
        fields += [f for f in left.partitions if f.name not in left.data_schema.names]
    for c, n in zip(payload, names):
        field = right.schema.field(c)
        fields.append(attached_field(n, nullable_inside(field.type), field))
    return Plan(payload, names, read, pa.schema(fields))


def nullable_inside(t: pa.DataType) -> pa.DataType:
    """``t`` with the fields of its structs nullable, at any depth: the struct attached to a
    row without a match is null and its fields with it, which a parquet writer refuses
    under fields declared not-null (Spark and pyarrow schemas declare them so).

    >>> nullable_inside(pa.list_(pa.struct([pa.field("a", pa.int64(), nullable=False)])))
    ListType(list<item: struct<a: int64>>)
    """
    return arrow_numpy.rebuilt(t, _struct_of_nullable_fields)


def _struct_of_nullable_fields(t: pa.DataType) -> pa.DataType:
    if not pa.types.is_struct(t):
        return t
    return pa.struct([t.field(i).with_nullable(True) for i in range(t.num_fields)])


_PARAM = re.compile(r"\b(left|right)_(on|by)(?:\[(\d+)\])?")


def translate(exc: BaseException, options: Options) -> str:
    """A core message in the command's words: left_by[0] -> LEFT column 'sym'."""

    def name(match):
        side, kind, index = match.groups()
        column = getattr(options, f"{side}_{kind}")
        if kind == "by":
            column = column[int(index or 0)]
        return f"{side.upper()} column {column!r}"

    text = _PARAM.sub(name, one_line(exc))
    text = re.sub(r"device='(\w+)'", r"--device \1", text)
    text = text.replace("tolerance: a timedelta", "tolerance: a duration")
    if options.tolerance_column is not None:
        # "at left row 3" counts the rows of a chunk, whose order may be RIGHT's: not LEFT's
        text = re.sub(r" at left row \d+", "", text)
        return re.sub(r"^tolerance\b", f"--tolerance-column {options.tolerance_column!r}", text)
    return re.sub(r"^tolerance\b", "--tolerance", text)


def dry_run(options: Options, left: pa.Schema, right: pa.Schema, tolerance: Tolerance) -> str:
    """Every type, option and device check on zero rows, before any data is read."""
    l, r = arrow_numpy.empty_table(left), arrow_numpy.empty_table(right)
    try:
        empty = AsofJoin(
            r.column(options.right_on),
            [r.column(c) for c in options.right_by] or None,
            device=options.device,
        )
        empty.join(
            l.column(options.left_on),
            [l.column(c) for c in options.left_by] or None,
            strategy=options.strategy,
            allow_exact_matches=options.allow_exact_matches,
            tolerance=tolerance.of(l),
        )
    except (TypeError, ValueError, OverflowError, RuntimeError) as exc:
        raise EnrichError(translate(exc, options)) from None
    name = empty.backend.name
    return f"{name} (auto: no usable GPU)" if options.device == "auto" and name == "cpu" else name
