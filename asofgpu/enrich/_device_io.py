"""``asofgpu enrich`` on the GPU with its parquet read and written by libcudf: RIGHT read on the
device and prepared once (``asofgpu.plc.AsofJoin``), then each LEFT file read whole, probed,
its payload gathered (``asofgpu.plc.gather``) and written after LEFT's columns. The rows never
cross to the host; only the keys and the gather maps do, for the matches and the staleness.

It runs only where it writes what the host pipeline would (``device_io_refusal``,
``libcudf_refusal``). What it meets on the way and cannot do (a column libcudf reads as
another type, a file it cannot read, a key the front end refuses, the device's memory running
out) raises ``Unsupported`` before OUT is committed, and the run is done again on the host:
never a different result.

Every pylibcudf call, and all of ``asofgpu.plc``'s work (its cupy calls and kernels), runs on
pylibcudf's default stream: each gather map is complete, in that stream's order, when the next
call reads it.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from importlib.util import find_spec

import numpy as np
import pyarrow as pa

from .. import _arrow_numpy as arrow_numpy
from .._backend import cudasim_enabled
from .._staleness import Staleness
from ._checks import Options, Plan, Tolerance, files_into_one
from ._errors import OutputError, one_line
from ._left import file_lines
from ._output import footer_metadata
from ._sources import Part, Source

MAX_ROWS = 2**31 - 1  # libcudf's size_type: the most rows of a column, so of a file read whole

# --compression's codecs as pylibcudf's CompressionType names (None: what the host writes
# attached columns in); whether this libcudf writes one is asked at run time.
CODECS = {
    None: "SNAPPY",
    "none": "NONE",
    "snappy": "SNAPPY",
    "gzip": "GZIP",
    "brotli": "BROTLI",
    "lz4": "LZ4",
    "zstd": "ZSTD",
}

# The Arrow types libcudf reads from parquet and writes back so that pyarrow reads the same
# type, as pylibcudf's TypeId names. Not among them: large and view strings, binary and
# dictionaries (written back as plain strings), timestamps in seconds (written in
# milliseconds), durations and decimals (their Arrow types need the Arrow schema, in which
# libcudf would declare its strings as string views), and nested types.
_TYPE_IDS = {
    pa.int8(): "INT8",
    pa.int16(): "INT16",
    pa.int32(): "INT32",
    pa.int64(): "INT64",
    pa.uint8(): "UINT8",
    pa.uint16(): "UINT16",
    pa.uint32(): "UINT32",
    pa.uint64(): "UINT64",
    pa.float32(): "FLOAT32",
    pa.float64(): "FLOAT64",
    pa.bool_(): "BOOL8",
    pa.string(): "STRING",
    pa.date32(): "TIMESTAMP_DAYS",
}
_TIMESTAMP_IDS = {
    "ms": "TIMESTAMP_MILLISECONDS",
    "us": "TIMESTAMP_MICROSECONDS",
    "ns": "TIMESTAMP_NANOSECONDS",
}

# What pylibcudf raises for libcudf's exceptions (its exception_handler.pxd), and cupy's and
# rmm's out-of-memory errors (MemoryError): each means "not on the device", never bad input,
# which the host pipeline then reports in its own words.
_LIBCUDF_ERRORS = (
    RuntimeError,
    OSError,
    ValueError,
    TypeError,
    IndexError,
    ArithmeticError,
    MemoryError,
)


class Unsupported(Exception):
    """Found on the device: this run cannot be done there exactly; the host does it again."""


@dataclass
class Done:
    """What a device run did, for the summary."""

    staleness: Staleness
    prepared_at: float  # time.perf_counter() once RIGHT was prepared
    rows: int = 0
    matched: int = 0
    largest: int = 0  # rows of the largest LEFT file (each is read and written whole)


def wanted(options: Options) -> bool:
    """Whether to ask, before the host's readers start, if libcudf reads and writes: the join
    may run on the GPU and pylibcudf is installed, or the GPU was asked for (the log then says
    why not). Other runs start reading without waiting for the join's backend."""
    return options.device == "cuda" or (
        options.device == "auto" and find_spec("pylibcudf") is not None
    )


def libcudf_type(kind: pa.DataType) -> str | None:
    """The pylibcudf TypeId name libcudf reads ``kind`` as, when it writes it back as ``kind``
    (timestamps without a time zone or in UTC, the two its writer knows); else None."""
    if pa.types.is_timestamp(kind):
        return _TIMESTAMP_IDS.get(kind.unit) if kind.tz in (None, "UTC") else None
    if isinstance(kind, pa.ExtensionType):  # (a Python one may not hash: none is libcudf's)
        return None
    return _TYPE_IDS.get(kind)


def _groupable(kind: pa.DataType) -> bool:
    """By-key types that libcudf's grouping compares as the host's does (not floats: whether
    NaN and -0.0 group alike on both paths is not something to rely on)."""
    return (
        pa.types.is_integer(kind)
        or pa.types.is_string(kind)
        or pa.types.is_boolean(kind)
        or pa.types.is_date32(kind)
        or pa.types.is_timestamp(kind)
    )


def device_io_refusal(
    options: Options,
    the_plan: Plan,
    tolerance: Tolerance,
    left: Source,
    right: Source,
    backend: str,
) -> str | None:
    """Why libcudf does not read and write this run's parquet (a line for the log), or None
    when it writes what the host pipeline would. Only the options, the sources' footers and
    the join's backend name decide it: it needs no GPU."""
    if backend != "cuda":
        return f"the join runs on {backend}"
    if files_into_one(options, left):
        return "--one-file: libcudf writes a file per LEFT file"
    for source in (left, right):
        if source.partitions:
            names = ", ".join(repr(f.name) for f in source.partitions)
            return f"{source.side}'s partition folders make columns ({names}); libcudf's do not"
    # RIGHT's files are read by one libcudf call, which takes them as of one schema (LEFT's
    # are read a file at a time, by name: their order does not matter).
    other = next((p for p in right.parts if p.reordered_or_retyped), None)
    if other is not None:
        return (
            f"RIGHT's files order or type their columns otherwise ({other.relative} beside "
            f"{right.parts[0].relative}); libcudf reads files of one schema"
        )
    if options.tolerance_column is not None:
        name = options.tolerance_column
        return f"--tolerance-column {name!r}: the device takes one tolerance for every row"
    if tolerance.calendar:
        return f"--tolerance {tolerance.value}: calendar units are measured on the host"
    if options.compression_level is not None:
        return (
            f"--compression {options.compression}:{options.compression_level}: libcudf's "
            f"parquet writer takes no level"
        )
    if not right.rows:
        return "RIGHT has no rows"
    if right.rows > MAX_ROWS:
        return f"RIGHT's {right.rows:,} rows are more than a libcudf column holds"
    for part in left.parts:
        if part.rows > MAX_ROWS:
            return (
                f"LEFT file {part.path} has {part.rows:,} rows, more than a libcudf column "
                f"holds (each LEFT file is read whole)"
            )
    for source, names in ((left, left.data_schema.names), (right, the_plan.read)):
        for name in names:
            kind = source.schema.field(name).type
            if libcudf_type(kind) is None:
                return (
                    f"{source.side} column {name!r} is {kind}, which libcudf does not write "
                    f"back as such"
                )
    zones = {kind.tz for kind in the_plan.schema.types if pa.types.is_timestamp(kind)}
    if len(zones) > 1:
        return "OUT holds timestamps in UTC and without a time zone; libcudf writes one kind"
    for left_by, right_by in zip(options.left_by, options.right_by):
        left_type, right_type = left.schema.field(left_by).type, right.schema.field(right_by).type
        if left_type != right_type or not _groupable(left_type):
            return (
                f"by columns LEFT {left_by!r} ({left_type}) and RIGHT {right_by!r} "
                f"({right_type}): on the device both must be of one integer, string, bool, "
                f"date or timestamp type"
            )
    return None


def libcudf_refusal(options: Options) -> str | None:
    """Why libcudf cannot do this run's I/O in this process (the simulator, no pylibcudf, a
    codec this build does not write), or None. Imports pylibcudf: asked last."""
    if cudasim_enabled():
        return "the kernels run in the CUDA simulator (NUMBA_ENABLE_CUDASIM), not on a GPU"
    try:
        import pylibcudf as plc
    except (ImportError, OSError, RuntimeError) as exc:
        return f"pylibcudf does not import ({one_line(exc)})"
    codec = getattr(plc.io.types.CompressionType, CODECS[options.compression])
    if not plc.io.parquet.is_supported_write_parquet(codec):
        name = options.compression or "snappy (the default)"
        return f"--compression {name}: this libcudf does not write it"
    return None


def reader_options(plc, paths: list[str], columns: list[str]):
    """libcudf's options to read ``columns`` of the files ``paths``, one after another."""
    source = plc.io.SourceInfo(paths)
    return plc.io.parquet.ParquetReaderOptions.builder(source).column_names(columns).build()


def output_metadata(plc, table, fields: list[pa.Field]):
    """OUT's ``fields`` (the plan's) for ``table``'s columns: their names, and nullable as
    they are declared, as the host's files are (LEFT's required columns required, the rest
    nullable): libcudf would otherwise write a column without nulls as required."""
    metadata = plc.io.types.TableInputMetadata(table)
    for column, field in zip(metadata.column_metadata, fields, strict=True):
        column.set_name(field.name).set_nullability(field.nullable)
    return metadata


def writer_options(
    plc,
    path: str,
    table,
    fields: list[pa.Field],
    compression: str | None,
    utc: bool,
    rows: int,
    metadata: dict[str, str] | None = None,
):
    """libcudf's options to write ``table`` as OUT's file ``path``: ``compression`` (one of
    ``CODECS``), timestamps marked UTC or not as OUT's columns are (``utc``), row groups of up
    to ``rows`` as the host's chunks, and the key-value ``metadata`` (what OUT keeps of
    LEFT's footer)."""
    sink = plc.io.SinkInfo([path])
    built = (
        plc.io.parquet.ParquetWriterOptions.builder(sink, table)
        .metadata(output_metadata(plc, table, fields))
        .compression(getattr(plc.io.types.CompressionType, CODECS[compression]))
        .utc_timestamps(utc)
        .row_group_size_rows(min(rows, MAX_ROWS))
    )
    if metadata:
        built = built.key_value_metadata([metadata])
    return built.build()


def enrich(
    options: Options,
    the_plan: Plan,
    tolerance: Tolerance,
    left: Source,
    right: Source,
    target,
    out: str,
    rows: int,
    every: int,
    progress,
) -> Done:
    """The run on the device, into ``target`` (an ``AtomicFile`` or ``AtomicFolder``, which
    the caller commits): what ``device_io_refusal`` and ``libcudf_refusal`` allowed. Raises
    ``Unsupported`` when it finds it cannot finish exactly, OutputError when OUT cannot be
    written."""
    import pylibcudf as plc

    from .. import plc as front

    progress.log(
        f"reading RIGHT {options.right} and LEFT {options.left}, and writing OUT, on the "
        f"device with libcudf"
    )
    began = time.perf_counter()
    with _or_host(f"RIGHT {right.given}"):
        columns = _read(plc, right, right.parts, the_plan.read)
        right_on = columns[options.right_on]
        prepared = front.AsofJoin(plc.Table([columns[c] for c in options.right_by]), right_on)
        staleness = Staleness(right_on.to_arrow(), every=every)
    payload = plc.Table([columns[c] for c in the_plan.payload])
    done = Done(staleness, time.perf_counter())
    progress.log(
        f"right side read and prepared on the device ({right.rows:,} right rows) in "
        f"{done.prepared_at - began:.2f} s"
    )
    utc = any(pa.types.is_timestamp(t) and t.tz is not None for t in the_plan.schema.types)
    progress.start(left.rows)
    try:
        lines = file_lines(
            left,
            list(range(len(left.parts))),
            lambda i: f"{left.parts[i].rows:,} rows, read and written whole",
            lambda rest: "each read and written whole",
        )
        for i, part in enumerate(left.parts):
            if i in lines:
                progress.log(lines[i])
            with _or_host(f"LEFT file {part.path}"):
                table = _attached(
                    plc, front, part, left, options, tolerance, prepared, payload, done
                )
            with _or_host("writing OUT"):
                written = writer_options(
                    plc,
                    target.path_for(part.relative),
                    table,
                    list(the_plan.schema),
                    options.compression,
                    utc,
                    rows,
                    footer_metadata(part.kept_metadata),
                )
            with _writing(out):
                plc.io.parquet.write_parquet(written)
            done.rows += table.num_rows()
            done.largest = max(done.largest, table.num_rows())
            progress.update(done.rows)
    finally:
        progress.stop()
    return done


def _attached(
    plc, front, part: Part, left: Source, options: Options, tolerance, prepared, payload, done
):
    """``part`` read whole, RIGHT's payload attached: a table of OUT's columns. The matches
    and the staleness go into ``done``."""
    names = left.data_schema.names
    columns = _read(plc, left, [part], names)
    left_on = columns[options.left_on]
    if left_on.size():
        gmap = prepared.join(
            plc.Table([columns[c] for c in options.left_by]),
            left_on,
            options.strategy,
            options.allow_exact_matches,
            tolerance=tolerance.value,
        )
        taken = front.gather(payload, gmap)
        host_map = arrow_numpy.values(gmap.to_arrow())
        hit = np.flatnonzero(host_map != front.JOIN_NO_MATCH)
        done.matched += len(hit)
        done.staleness.add(left_on.to_arrow(), host_map, hit)
    else:  # a file without rows: nothing to probe
        (taken,) = plc.copying.slice(payload, [0, 0])
    return plc.Table([*(columns[n] for n in names), *taken.columns()])


def _read(plc, source: Source, parts: list[Part], names: list[str]) -> dict:
    """``names`` of ``parts`` (one table) by name, each checked to be of the type the host
    reads it as (a file pyarrow wrote with coerced timestamps, say, libcudf may read in
    another unit)."""
    got = plc.io.parquet.read_parquet(reader_options(plc, [p.path for p in parts], names))
    columns = dict(zip(got.column_names(), got.columns))
    for name in names:
        kind = source.schema.field(name).type
        if name not in columns:
            raise Unsupported(f"libcudf did not read {source.side} column {name!r}")
        found = columns[name].type().id()
        if found != getattr(plc.TypeId, libcudf_type(kind)):
            raise Unsupported(
                f"libcudf reads {source.side} column {name!r} ({kind}) as {found.name}"
            )
    return columns


@contextlib.contextmanager
def _or_host(what: str):
    """A failure of libcudf or of the front end on the device, as ``Unsupported``."""
    try:
        yield
    except _LIBCUDF_ERRORS as exc:
        raise Unsupported(f"on the device, {what}: {one_line(exc)}") from None


@contextlib.contextmanager
def _writing(out: str):
    """A file-system error while OUT is written, in the command's words; any other failure
    of libcudf's writer (an encoding it cannot do, the device's memory running out) is
    ``Unsupported``: nothing is committed yet, and the host writes OUT instead (and reports
    a full disk in its turn)."""
    try:
        yield
    except OSError as exc:
        raise OutputError(f"cannot write OUT {out}: {one_line(exc)}") from None
    except _LIBCUDF_ERRORS as exc:
        raise Unsupported(f"on the device, writing OUT: {one_line(exc)}") from None
