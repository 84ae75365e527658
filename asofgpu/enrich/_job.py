"""The run of ``asofgpu enrich``: RIGHT read and prepared once, each LEFT file streamed through
it in chunks into its output file, and the summary."""

from __future__ import annotations

import contextlib
import resource
import sys
import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from .._progress import Quiet, readable_count
from .._staleness import Staleness
from ..gather import gather
from ..join import AsofJoin
from ._checks import (Options, Plan, check_options, check_output, dry_run, plan, tolerance_of,
                      translate)
from ._errors import EnrichError, OutputError, one_line
from ._output import AtomicFile, AtomicFolder, ParquetStitcher
from ._sources import Part, Source, is_text


@dataclass
class Summary:
    """What a run did: its rows, matches, staleness of the matched right rows, timings."""

    out: str
    files: int  # LEFT files enriched (one output file each)
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
    peak_rss: int  # bytes: the process's peak resident memory

    def lines(self) -> list[str]:
        share = _share(self.matched, self.rows)
        stale = (f"p50 {self.p50}, p99 {self.p99} ({self.key})" if self.p50 is not None
                 else "no matched rows")
        rate = (f" ({readable_count(self.rows / self.stream_s)} rows/s)" if self.stream_s > 0
                else "")
        files = f"{self.files:,} files, " if self.files != 1 else ""
        return [
            f"wrote {self.out}",
            f"  rows       {self.rows:,} in {files}{self.chunks:,} chunk(s) of up to "
            f"{self.chunk_rows:,}",
            f"  attached   {', '.join(self.attached) or '(no columns)'} "
            f"from {self.right_rows:,} right rows",
            f"  matched    {share} ({self.matched:,} rows; {self.rows - self.matched:,} "
            f"without a match)",
            f"  staleness  {stale}",
            f"  elapsed    {self.elapsed_s:.2f} s: right side read and prepared in "
            f"{self.prepare_s:.2f} s, left side streamed in {self.stream_s:.2f} s{rate}",
            f"  memory     peak {readable_bytes(self.peak_rss)} resident",
            f"  backend    {self.backend}",
        ]


@dataclass
class _Counts:
    rows: int = 0
    matched: int = 0
    chunks: int = 0


def enrich(options: Options, progress=None) -> Summary:
    """Run ``asofgpu enrich``: raises EnrichError (bad input) or OutputError (writing failed),
    and lets KeyboardInterrupt through; in every such case no output is left behind."""
    progress = progress or Quiet()
    start = time.perf_counter()
    tolerance = tolerance_of(options.tolerance)
    check_options(options)
    left = Source.find(options.left, "LEFT")
    right = Source.find(options.right, "RIGHT")
    out = check_output(options, left, right)
    the_plan = plan(options, left, right)
    backend = dry_run(options, left.schema, right.schema, tolerance)
    with (AtomicFile if left.single else AtomicFolder)(out) as target:
        progress.log(f"reading RIGHT {options.right} ({_files(right)}{right.rows:,} rows)")
        prepared, payload, staleness = _prepare(options, the_plan, right)
        prepared_at = time.perf_counter()
        progress.log(f"prepared {prepared.n_right:,} right rows in {prepared_at - start:.2f} s "
                     f"on {backend}")
        progress.log(f"streaming LEFT {options.left} ({_files(left)}{left.rows:,} rows) in "
                     f"chunks of up to {options.chunk_rows:,} rows")
        counts = _Counts()
        progress.start(left.rows)
        try:
            for part in left.parts:
                if not left.single:
                    progress.log(f"LEFT {part.relative}: {part.rows:,} rows "
                                 f"({readable_bytes(part.bytes)})")
                _enrich_part(left, part, target.path_for(part.relative), prepared, payload,
                             staleness, the_plan, options, tolerance, counts, progress, out)
        finally:
            progress.stop()
        target.commit()
    done = time.perf_counter()
    return Summary(
        out=str(options.out), files=len(left.parts), rows=counts.rows, matched=counts.matched,
        chunks=counts.chunks, chunk_rows=options.chunk_rows, attached=the_plan.names,
        right_rows=prepared.n_right, key=f"LEFT {options.left_on} minus RIGHT {options.right_on}",
        p50=staleness.readable(0.5), p99=staleness.readable(0.99),
        prepare_s=prepared_at - start, stream_s=done - prepared_at, elapsed_s=done - start,
        backend=backend, peak_rss=peak_rss())


def _files(source: Source) -> str:
    return "" if source.single else f"{len(source.parts):,} files, "


def _enrich_part(left: Source, part: Part, path: str, prepared: AsofJoin, payload: pa.Table,
                 staleness: Staleness, the_plan: Plan, options: Options, tolerance,
                 counts: _Counts, progress, out: str) -> None:
    """One LEFT file through the prepared RIGHT into ``path``."""
    writer = _writer(path, the_plan.schema, options, out)
    try:
        for batch in _batches(left, part, options):
            gmap = _probe(prepared, batch, options, tolerance)
            taken = gather(payload, gmap)
            columns = batch.columns[:len(left.data_schema)] + taken.columns
            with _writing(out):
                writer.write(pa.Table.from_arrays(columns, schema=the_plan.schema))
            hit = np.flatnonzero(gmap != prepared.no_match)
            counts.matched += len(hit)
            staleness.add(batch.column(options.left_on), gmap, hit)
            counts.rows += batch.num_rows
            counts.chunks += 1
            progress.update(counts.rows)  # joined; the last chunks are written by close()
        with _writing(out):
            writer.close()
    except BaseException:
        writer.abort()
        raise


def _prepare(options: Options, the_plan: Plan, right: Source):
    # Text by-columns are read as dictionary columns: parquet stores them as dictionary pages,
    # so the reader hands over each row group's codes instead of building millions of strings
    # (10M quotes: 0.2 s instead of 1.0 s), and the join encodes the small dictionaries.
    # Partition by-columns come as one-value dictionaries for the same reason.
    as_codes = [c for c in options.right_by if c not in the_plan.payload
                and (is_text(right.schema.field(c).type)
                     or c not in right.data_schema.names)]
    table = right.read(the_plan.read, as_codes)
    try:
        prepared = AsofJoin(table.column(options.right_on),
                            [table.column(c) for c in options.right_by] or None,
                            device=options.device)
        staleness = Staleness(table.column(options.right_on))
    except (TypeError, ValueError, OverflowError) as exc:
        raise EnrichError(translate(exc, options)) from None
    payload = table.select(the_plan.payload)
    try:  # one contiguous chunk per column: each chunk's take then reads it in place
        payload = payload.combine_chunks()
    except pa.ArrowInvalid:  # a string column past 2 GiB: stays chunked
        pass
    return prepared, payload, staleness


def _batches(left: Source, part: Part, options: Options):
    """``part``'s rows in chunks: its columns, then the partition columns the join needs."""
    needed = [options.left_on, *options.left_by]
    batches = part.open("LEFT").iter_batches(batch_size=options.chunk_rows)
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except (OSError, pa.ArrowException) as exc:
            raise EnrichError(f"cannot read LEFT file {part.path}: {one_line(exc)}") from None
        yield left.with_partitions(part, batch, needed, as_codes=needed)


def _probe(prepared: AsofJoin, batch: pa.RecordBatch, options: Options, tolerance):
    """The chunk's gather map, on the host."""
    try:
        gmap = prepared.join(batch.column(options.left_on),
                             [batch.column(c) for c in options.left_by] or None,
                             strategy=options.strategy,
                             allow_exact_matches=options.allow_exact_matches,
                             tolerance=tolerance)
    except (TypeError, ValueError, OverflowError) as exc:
        raise EnrichError(translate(exc, options)) from None
    return prepared.backend.to_host(gmap)


def _share(part: int, whole: int) -> str:
    """A percentage that never reads 100% or 0% unless it is: 99.97% -> >99.9%."""
    if not whole or part in (0, whole):
        return "-" if not whole else f"{100 * part // whole}%"
    share = part / whole
    return ">99.9%" if share > 0.999 else "<0.1%" if share < 0.001 else f"{share:.1%}"


def readable_bytes(n: float) -> str:
    """1536 -> '1.5 KiB'; 734003200 -> '700 MiB'."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:,.0f} {unit}" if unit == "B" or n >= 100 else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError  # pragma: no cover


def peak_rss() -> int:
    """The process's peak resident memory in bytes (ru_maxrss: KiB on Linux, B on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


# --------------------------------------------------------------------------- the output


def _writer(path: str, schema: pa.Schema, options: Options, out: str) -> ParquetStitcher:
    try:
        return ParquetStitcher(path, schema, compression=options.compression,
                               compression_level=options.compression_level)
    except OSError as exc:
        raise OutputError(f"cannot write OUT {out}: {one_line(exc)}") from None


@contextlib.contextmanager
def _writing(out: str):
    """A file-system error while OUT is written, in the command's words."""
    try:
        yield
    except OSError as exc:
        raise OutputError(f"cannot write OUT {out}: {one_line(exc)}") from None
