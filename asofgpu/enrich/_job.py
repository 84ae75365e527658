"""The run of ``asofgpu enrich``: checks, the prepared RIGHT, the LEFT stream, the summary."""

from __future__ import annotations

import contextlib
import difflib
import os
import re
import time
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .._duration import parse_tolerance
from .._progress import Quiet, readable_count
from .._staleness import Staleness
from ..gather import gather
from ..join import AsofJoin
from ._output import AtomicFile, OutputError, ParquetStitcher

DEFAULT_CHUNK_ROWS = 1_000_000
CODECS = ("none", "snappy", "gzip", "brotli", "lz4", "zstd")  # what parquet files may use


class EnrichError(Exception):
    """Bad input (a file, a column, a key type, an option): the message names it."""


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
    tolerance: object = None  # None, "5s" / "250ms" / "1m30s", or a number in the key's unit
    allow_exact_matches: bool = True
    columns: list[str] | None = None  # the right columns to attach; None: all but the keys
    suffix: str = "_right"
    device: str = "auto"
    chunk_rows: int = DEFAULT_CHUNK_ROWS
    compression: str = "snappy"  # OUT's codec: one of CODECS
    compression_level: int | None = None  # None: the codec's default


@dataclass
class Summary:
    """What a run did: its rows, matches, staleness of the matched right rows, timings."""

    out: str
    rows: int
    matched: int
    chunks: int
    chunk_rows: int
    attached: list[str]
    right_rows: int
    key: str  # how the staleness reads: "LEFT t minus RIGHT t"
    p50: str | None  # readable, None when nothing matched
    p99: str | None
    prepare_s: float
    stream_s: float
    elapsed_s: float
    backend: str

    def lines(self) -> list[str]:
        share = _share(self.matched, self.rows)
        stale = (f"p50 {self.p50}, p99 {self.p99} ({self.key})" if self.p50 is not None
                 else "no matched rows")
        rate = (f" ({readable_count(self.rows / self.stream_s)} rows/s)" if self.stream_s > 0
                else "")
        return [
            f"wrote {self.out}",
            f"  rows       {self.rows:,} in {self.chunks:,} chunk(s) of up to {self.chunk_rows:,}",
            f"  attached   {', '.join(self.attached) or '(no columns)'} "
            f"from {self.right_rows:,} right rows",
            f"  matched    {share} ({self.matched:,} rows; {self.rows - self.matched:,} "
            f"without a match)",
            f"  staleness  {stale}",
            f"  elapsed    {self.elapsed_s:.2f} s: right side read and prepared in "
            f"{self.prepare_s:.2f} s, left side streamed in {self.stream_s:.2f} s{rate}",
            f"  backend    {self.backend}",
        ]


@dataclass
class _Plan:
    """Which columns are read, attached and written."""

    payload: list[str]  # right columns to attach
    names: list[str]  # their names in the output
    read: list[str]  # right columns to read
    schema: pa.Schema  # the output's


def enrich(options: Options, progress=None) -> Summary:
    """Run ``asofgpu enrich``: raises EnrichError (bad input) or OutputError (writing failed),
    and lets KeyboardInterrupt through; in every such case no output is left behind."""
    progress = progress or Quiet()
    start = time.perf_counter()
    tolerance = _tolerance(options.tolerance)
    _check_options(options)
    left_file = _open(options.left, "LEFT")
    right_file = _open(options.right, "RIGHT")
    out = _check_output(options)
    plan = _plan(options, left_file.schema_arrow, right_file.schema_arrow)
    backend = _dry_run(options, left_file.schema_arrow, right_file.schema_arrow, tolerance)
    with AtomicFile(out, error=EnrichError) as target:
        progress.log(f"reading RIGHT {options.right} ({right_file.metadata.num_rows:,} rows)")
        prepared, payload, staleness = _prepare(options, plan, right_file)
        prepared_at = time.perf_counter()
        progress.log(f"prepared {prepared.n_right:,} right rows in {prepared_at - start:.2f} s "
                     f"on {backend}")
        total = left_file.metadata.num_rows
        progress.log(f"streaming LEFT {options.left} ({total:,} rows) in chunks of up to "
                     f"{options.chunk_rows:,} rows")
        rows = matched = chunks = 0
        writer = _writer(target.tmp, plan.schema, options, out)
        progress.start(total)
        try:
            for batch in _batches(left_file, options):
                gmap = _probe(prepared, batch, options, tolerance)
                taken = gather(payload, gmap)
                with _writing(out):
                    writer.write(pa.Table.from_arrays(batch.columns + taken.columns,
                                                      schema=plan.schema))
                hit = np.flatnonzero(gmap != prepared.no_match)
                matched += len(hit)
                staleness.add(batch.column(options.left_on), gmap, hit)
                rows += batch.num_rows
                chunks += 1
                progress.update(rows)  # joined; the last chunks are written by close()
            with _writing(out):
                writer.close()
        except BaseException:
            writer.abort()
            raise
        finally:
            progress.stop()
        target.commit()
    done = time.perf_counter()
    return Summary(
        out=str(options.out), rows=rows, matched=matched, chunks=chunks,
        chunk_rows=options.chunk_rows, attached=plan.names, right_rows=prepared.n_right,
        key=f"LEFT {options.left_on} minus RIGHT {options.right_on}",
        p50=staleness.readable(0.5), p99=staleness.readable(0.99),
        prepare_s=prepared_at - start, stream_s=done - prepared_at, elapsed_s=done - start,
        backend=backend)


# --------------------------------------------------------------------------- checks


def _tolerance(value):
    if isinstance(value, str):
        try:
            return parse_tolerance(value)
        except ValueError as exc:
            raise EnrichError(f"--tolerance: {exc}") from None
    return value


def _check_options(options: Options) -> None:
    rows = options.chunk_rows
    if isinstance(rows, bool) or not isinstance(rows, (int, np.integer)) or rows < 1:
        raise EnrichError(f"--chunk-rows must be a positive whole number, got {rows!r}")
    _check_compression(options.compression, options.compression_level)
    if not isinstance(options.suffix, str):
        raise EnrichError(f"--suffix must be a string, got {options.suffix!r}")
    if len(options.left_by) != len(options.right_by):
        raise EnrichError(f"--left-by and --right-by must name as many columns, got "
                          f"{len(options.left_by)} and {len(options.right_by)}")


def _check_compression(codec, level) -> None:
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
        raise EnrichError(f"--compression {codec}: the level must be a whole number from {low} "
                          f"to {high}, got {level!r}")


def _open(path, side: str) -> pq.ParquetFile:
    if not os.path.exists(path):
        raise EnrichError(f"{side} file {os.fspath(path)} does not exist")
    if os.path.isdir(path):
        raise EnrichError(f"{side} {os.fspath(path)} is a directory; pass a parquet file")
    try:
        return pq.ParquetFile(path, pre_buffer=False)
    except PermissionError:
        raise EnrichError(f"cannot read {side} file {os.fspath(path)}: permission denied") from None
    except (OSError, pa.ArrowException) as exc:
        raise EnrichError(f"cannot read {side} file {os.fspath(path)} as parquet: "
                          f"{_one_line(exc)}") from None


def _check_output(options: Options) -> str:
    """OUT's real path (a symlink's target is what gets replaced)."""
    out = os.path.realpath(options.out)
    if os.path.isdir(out):
        raise EnrichError(f"OUT {os.fspath(options.out)} is a directory; pass a file path, "
                          f"e.g. -o {os.path.join(os.fspath(options.out), 'enriched.parquet')}")
    if os.path.exists(out) and not os.path.isfile(out):
        raise EnrichError(f"OUT {os.fspath(options.out)} is not a regular file; enrich writes "
                          f"a parquet file and renames it into place")
    parent = os.path.dirname(out)
    if not os.path.isdir(parent):
        raise EnrichError(f"the directory of OUT {os.fspath(options.out)} does not exist")
    for side, path in (("LEFT", options.left), ("RIGHT", options.right)):
        if os.path.exists(out) and os.path.samefile(out, path):
            raise EnrichError(f"OUT {os.fspath(options.out)} is the {side} file; "
                              f"write to another path")
    return out


def _column_hint(name: str, schema: pa.Schema) -> str:
    close = difflib.get_close_matches(name, schema.names, n=1)
    listed = ", ".join(schema.names[:12]) + (", ..." if len(schema.names) > 12 else "")
    return (f"; did you mean {close[0]!r}?" if close else "") + f" (its columns: {listed})"


def _need(schema: pa.Schema, name: str, side: str, path, named_in: str = "") -> None:
    if name not in schema.names:
        where = f" (named in {named_in})" if named_in else ""
        raise EnrichError(f"{side} file {os.fspath(path)} has no column {name!r}{where}"
                          f"{_column_hint(name, schema)}")


def _plan(options: Options, left: pa.Schema, right: pa.Schema) -> _Plan:
    _need(left, options.left_on, "LEFT", options.left)
    _need(right, options.right_on, "RIGHT", options.right)
    for name in options.left_by:
        _need(left, name, "LEFT", options.left)
    for name in options.right_by:
        _need(right, name, "RIGHT", options.right)
    if options.columns is None:  # join_asof's rule: all but the right by (and a same-named on)
        dropped = set(options.right_by)
        if options.right_on == options.left_on:
            dropped.add(options.right_on)
        payload = [n for n in right.names if n not in dropped]
    else:
        payload = list(options.columns)
        for name in payload:
            _need(right, name, "RIGHT", options.right, "--columns")
        twice = sorted({n for n in payload if payload.count(n) > 1})
        if twice:
            raise EnrichError(f"--columns names {', '.join(map(repr, twice))} more than once")
    names: list[str] = []
    for name in payload:
        out = name + options.suffix if name in left.names else name
        if out in left.names or out in names:
            raise EnrichError(
                f"column {out!r} would appear twice in OUT: the RIGHT column {name!r} clashes "
                f"with a LEFT column even with --suffix {options.suffix!r}; pass another "
                f"--suffix, or leave {name!r} out of --columns")
        names.append(out)
    read = list(dict.fromkeys([options.right_on, *options.right_by, *payload]))
    fields = [pa.field(f.name, f.type) for f in left]
    fields += [pa.field(n, right.field(c).type) for c, n in zip(payload, names)]
    return _Plan(payload, names, read, pa.schema(fields))


_PARAM = re.compile(r"\b(left|right)_(on|by)(?:\[(\d+)\])?")


def _translate(exc: BaseException, options: Options) -> str:
    """A core message in the command's words: left_by[0] -> LEFT column 'sym'."""
    def name(match):
        side, kind, index = match.groups()
        column = getattr(options, f"{side}_{kind}")
        if kind == "by":
            column = column[int(index or 0)]
        return f"{side.upper()} column {column!r}"
    text = _PARAM.sub(name, _one_line(exc))
    text = re.sub(r"device='(\w+)'", r"--device \1", text)
    text = text.replace("tolerance: a timedelta", "tolerance: a duration")
    return re.sub(r"^tolerance\b", "--tolerance", text)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _dry_run(options: Options, left: pa.Schema, right: pa.Schema, tolerance) -> str:
    """Every type, option and device check on zero rows, before any data is read."""
    l, r = left.empty_table(), right.empty_table()
    try:
        empty = AsofJoin(r.column(options.right_on), [r.column(c) for c in options.right_by]
                         or None, device=options.device)
        empty.join(l.column(options.left_on), [l.column(c) for c in options.left_by] or None,
                   strategy=options.strategy, allow_exact_matches=options.allow_exact_matches,
                   tolerance=tolerance)
    except (TypeError, ValueError, OverflowError, RuntimeError) as exc:
        raise EnrichError(_translate(exc, options)) from None
    name = empty.backend.name
    return f"{name} (auto: no usable GPU)" if options.device == "auto" and name == "cpu" else name


# --------------------------------------------------------------------------- the run


def _prepare(options: Options, plan: _Plan, right_file: pq.ParquetFile):
    # Text by-columns are read as dictionary columns: parquet stores them as dictionary pages,
    # so the reader hands over each row group's codes instead of building millions of strings
    # (10M quotes: 0.2 s instead of 1.0 s), and the join encodes the small dictionaries.
    schema = right_file.schema_arrow
    as_codes = [c for c in options.right_by if c not in plan.payload
                and _is_text(schema.field(c).type)]
    try:
        right = pq.read_table(options.right, columns=plan.read, read_dictionary=as_codes,
                              pre_buffer=False)
    except (OSError, pa.ArrowException) as exc:
        raise EnrichError(f"cannot read RIGHT file {os.fspath(options.right)}: "
                          f"{_one_line(exc)}") from None
    try:
        prepared = AsofJoin(right.column(options.right_on),
                            [right.column(c) for c in options.right_by] or None,
                            device=options.device)
        staleness = Staleness(right.column(options.right_on))
    except (TypeError, ValueError, OverflowError) as exc:
        raise EnrichError(_translate(exc, options)) from None
    payload = right.select(plan.payload)
    try:  # one contiguous chunk per column: each chunk's take then reads it in place
        payload = payload.combine_chunks()
    except pa.ArrowInvalid:  # a string column past 2 GiB: stays chunked
        pass
    return prepared, payload, staleness


def _is_text(t: pa.DataType) -> bool:
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t))


def _batches(left_file: pq.ParquetFile, options: Options):
    batches = left_file.iter_batches(batch_size=options.chunk_rows)
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except (OSError, pa.ArrowException) as exc:
            raise EnrichError(f"cannot read LEFT file {os.fspath(options.left)}: "
                              f"{_one_line(exc)}") from None
        yield batch


def _probe(prepared: AsofJoin, batch: pa.RecordBatch, options: Options, tolerance):
    """The chunk's gather map, on the host."""
    try:
        gmap = prepared.join(batch.column(options.left_on),
                             [batch.column(c) for c in options.left_by] or None,
                             strategy=options.strategy,
                             allow_exact_matches=options.allow_exact_matches,
                             tolerance=tolerance)
    except (TypeError, ValueError, OverflowError) as exc:
        raise EnrichError(_translate(exc, options)) from None
    return prepared.backend.to_host(gmap)


def _share(part: int, whole: int) -> str:
    """A percentage that never reads 100% or 0% unless it is: 99.97% -> >99.9%."""
    if not whole or part in (0, whole):
        return "-" if not whole else f"{100 * part // whole}%"
    share = part / whole
    return ">99.9%" if share > 0.999 else "<0.1%" if share < 0.001 else f"{share:.1%}"


# --------------------------------------------------------------------------- the output


def _writer(tmp: str, schema: pa.Schema, options: Options, out: str) -> ParquetStitcher:
    try:
        return ParquetStitcher(tmp, schema, compression=options.compression,
                               compression_level=options.compression_level)
    except OSError as exc:
        raise OutputError(f"cannot write OUT {out}: {_one_line(exc)}") from None


@contextlib.contextmanager
def _writing(out: str):
    """A file-system error while OUT is written, in the command's words."""
    try:
        yield
    except OSError as exc:
        raise OutputError(f"cannot write OUT {out}: {_one_line(exc)}") from None
