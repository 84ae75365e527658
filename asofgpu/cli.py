"""The ``asofgpu`` command (also ``python -m asofgpu``): argument parsing and messages.

``asofgpu enrich`` attaches to every row of a parquet file the as-of match from another
(``asofgpu.enrich``); ``asofgpu demo`` generates a synthetic market-data day
(``asofgpu.marketdata``), writes it as parquet and enriches its trades with the prevailing
quotes; ``asofgpu warm`` compiles the usual joins' CPU kernels into numba's cache ahead of
the first join (``asofgpu._warm``). Exit codes: 0 done, 1 the output could not be written,
2 bad input or usage, 130 interrupted (143 on SIGTERM, 129 on SIGHUP); in every failure no
output file is left behind.

Example::

    asofgpu enrich trades.parquet quotes.parquet -o enriched.parquet --on time --by symbol
    asofgpu demo --quotes 10_000_000 --trades 2_000_000 --device cpu
    asofgpu warm
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import re
import signal
import sys
import textwrap
import time
import typing
import warnings

from . import _progress
from . import _signals
from . import _validate
from ._backend.jit import JitDisabled, NumbaTooOld
from ._types import StrategyName
from .enrich import _interrupts as interrupts
from .enrich import (
    CODECS,
    DEFAULT_CHUNK_ROWS,
    RIGHT_MODES,
    EnrichError,
    Options,
    OutputError,
    enrich,
)

# (not python, the kernels as plain Python: far too slow for a file)
DEVICES = tuple(d for d in _validate.DEVICES if d != "python")
STRATEGIES = typing.get_args(StrategyName)
# The memory ``asofgpu demo`` takes for a row of its day (quotes and trades alike): 8M quotes
# and 2M trades peaked at 0.75 GB generated, 2M and 0.5M at 0.29 GB, 61 bytes a row more;
# twice that, for the enrich that follows.
DEMO_ROW_BYTES = 128

ENRICH_EXAMPLES = """\
examples:
  # the prevailing quote of every trade, per symbol
  asofgpu enrich trades.parquet quotes.parquet -o enriched.parquet --on time --by symbol

  # only bid and ask, at most 5 s old, keys of other names, by two columns
  asofgpu enrich trades.parquet quotes.parquet -o out.parquet \\
      --left-on trade_time --right-on quote_time --by symbol,venue \\
      --columns bid,ask --tolerance 5s

  # each payment's last statement at most a calendar month before it; or each row's own
  # limit, from a LEFT column of durations
  asofgpu enrich payments.parquet statements.parquet -o out.parquet --on date \\
      --by account --tolerance 1mo
  asofgpu enrich readings.parquet calibrations.parquet -o out.parquet --on time \\
      --by sensor --tolerance-column max_age

  # a folder of trade files (hive folders date=.../symbol=...) into one file, the
  # folders' columns written as columns (without --one-file: a folder of a file each)
  asofgpu enrich trades/ quotes/ -o enriched.parquet --on time --by date,symbol --one-file

  # the next update strictly after each event, on the CPU, 250,000 rows at a time
  asofgpu enrich events.parquet updates.parquet -o out.parquet --on ts \\
      --strategy forward --no-exact-matches --device cpu --chunk-rows 250_000

The output holds every LEFT column, then the attached RIGHT columns (by default all but the
by columns and a same-named on column), in LEFT's row order: what asofgpu.join_asof returns
on the whole files. Either file may be unsorted. Exit codes: 0 done, 1 OUT could not be
written, 2 bad input, 130 interrupted (Ctrl-C), 143 terminated (SIGTERM), 129 hung up
(SIGHUP: the terminal closed); on any failure no OUT (and no temporary file) is left.
"""

DEMO_EXAMPLES = """\
examples:
  asofgpu demo                                   # 4M quotes, 1M trades, 1,000 symbols
  asofgpu demo --quotes 20_000_000 --trades 5_000_000 --symbols 5000 --device cuda
  asofgpu demo --out-dir day/ --shuffled         # keep the files; unsorted inputs
"""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``asofgpu enrich: error: ...`` and exit code 2, and
    options only by their whole names: an abbreviation a script relied on (``--strat``)
    would become ambiguous, or name another option, as soon as a new option shared its
    start."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _wrap(text: str) -> str:
    return textwrap.fill(text, 88)


def _whole_number(text: str) -> int:
    try:
        return int(text.replace("_", "").replace(",", ""))
    except ValueError:
        msg = f"expected a whole number, got {text!r}"
        raise argparse.ArgumentTypeError(msg) from None


def _non_negative_int(text: str) -> int:
    value = _whole_number(text)
    if value < 0:
        msg = f"expected a number from 0, got {value}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _positive_int(text: str) -> int:
    value = _whole_number(text)
    if value < 1:
        msg = f"expected a positive number, got {value}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _compression(text: str) -> tuple[str, int | None]:
    """``zstd`` or ``zstd:3``: a codec, and a level or None."""
    codec, colon, level = text.strip().lower().partition(":")
    if codec not in CODECS:
        msg = f"expected one of {', '.join(CODECS)}, optionally with :LEVEL, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    if not colon:
        return codec, None
    try:
        return codec, int(level)
    except ValueError:
        msg = f"expected a whole-number level after {codec}:, got {text!r}"
        raise argparse.ArgumentTypeError(msg) from None


# A name of a comma-separated list: in double quotes (a quote inside doubled), or bare.
_NAME = re.compile(r'\s*(?:"((?:[^"]|"")*)"|([^,"][^,]*|))\s*(,|$)')


def _names(text: str) -> list[str]:
    """Column names separated by commas, bare ones stripped of spaces; a name that holds a
    comma (pandas writes a MultiIndex label as "('a', 't')") or spaces at its ends is given in
    double quotes, a quote inside it doubled, as in CSV.

    >>> _names("symbol, venue")
    ['symbol', 'venue']
    >>> _names('"a,b", venue')
    ['a,b', 'venue']
    """
    names, at = [], 0
    while (found := _NAME.match(text, at)) is not None:
        quoted, bare, comma = found.groups()
        names.append(bare.strip() if quoted is None else quoted.replace('""', '"'))
        if not comma:
            break
        at = found.end()
    if found is None or not all(names):
        msg = (
            f"expected column names separated by commas (a name with a comma in double "
            f'quotes: "a,b"), got {text!r}'
        )
        raise argparse.ArgumentTypeError(msg)
    return names


def _parser() -> _Parser:
    from . import __version__

    parser = _Parser(
        prog="asofgpu",
        description="As-of joins on the GPU and the CPU.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
        "  asofgpu enrich trades.parquet quotes.parquet -o out.parquet "
        "--on time --by symbol\n"
        "  asofgpu demo\n"
        "  asofgpu warm\n\n"
        "Run 'asofgpu COMMAND --help' for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"asofgpu {__version__}")
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_Parser
    )
    fmt = argparse.RawDescriptionHelpFormatter
    e = sub.add_parser(
        "enrich",
        formatter_class=fmt,
        epilog=ENRICH_EXAMPLES,
        help="attach to every row of a parquet file the as-of match from another",
        description=_wrap(
            "Attach to every LEFT row the RIGHT row of the same --by group whose --on key is "
            "the latest at or before it (--strategy backward; forward and nearest too), "
            "streaming LEFT in chunks against RIGHT prepared once. OUT is written to a "
            "temporary file beside it and renamed into place when complete."
        ),
    )
    e.add_argument(
        "left",
        metavar="LEFT",
        help="parquet file, folder or glob whose rows are enriched, streamed (e.g. trades.parquet)",
    )
    e.add_argument(
        "right",
        metavar="RIGHT",
        help="parquet file, folder or glob of the rows to attach (e.g. quotes.parquet)",
    )
    e.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        required=True,
        help="parquet file to write (a folder when LEFT is several files, unless "
        "--one-file); an existing "
        "one is replaced only by a complete new one (e.g. -o enriched.parquet)",
    )
    keys = e.add_argument_group("keys")
    keys.add_argument(
        "--on",
        metavar="COL",
        help="the as-of key in both files: integers, floats, dates, times, "
        "timestamps or durations (e.g. --on time)",
    )
    keys.add_argument(
        "--left-on",
        metavar="COL",
        help="the as-of key in LEFT when names differ (e.g. --left-on trade_time)",
    )
    keys.add_argument(
        "--right-on",
        metavar="COL",
        help="the as-of key in RIGHT when names differ (e.g. --right-on quote_time)",
    )
    keys.add_argument(
        "--by",
        metavar="COL[,COL]",
        type=_names,
        action="append",
        help="equality keys in both files; rows match only within a group "
        "(e.g. --by symbol or --by symbol,venue; a name that holds a comma goes in "
        "double quotes, as in CSV)",
    )
    keys.add_argument(
        "--left-by",
        metavar="COL[,COL]",
        type=_names,
        action="append",
        help="equality keys in LEFT when names differ (e.g. --left-by ticker; quoted as --by)",
    )
    keys.add_argument(
        "--right-by",
        metavar="COL[,COL]",
        type=_names,
        action="append",
        help="equality keys in RIGHT, as many as --left-by (e.g. --right-by sym; quoted as --by)",
    )
    match = e.add_argument_group("matching")
    match.add_argument(
        "--strategy",
        choices=STRATEGIES,
        default="backward",
        help="backward: the latest RIGHT key <= the LEFT key; forward: the "
        "earliest >=; nearest: the closest, ties to the later "
        "(default backward; e.g. --strategy nearest)",
    )
    match.add_argument(
        "--tolerance",
        metavar="T",
        help="the largest distance that still matches, inclusive: a duration "
        "in units ns, us, ms, s, m, h, d, w (e.g. 5s, 250ms, 1m30s) or a "
        "number in the key's own unit, RIGHT's if the units differ (e.g. "
        "--tolerance 100); or a calendar duration of months, quarters or years "
        "(mo, q, y; days and weeks too on a key whose time zone changes its clocks), measured from "
        "each date or timestamp key as polars' dt.offset_by counts it, month ends "
        "saturating (e.g. --tolerance 1mo, 1q, 1mo15d)",
    )
    match.add_argument(
        "--tolerance-column",
        metavar="COL",
        help="instead of --tolerance, a LEFT column holding each row's own: "
        "durations, or numbers in the key's unit (RIGHT's if the units differ); "
        "null: no limit (e.g. --tolerance-column max_age)",
    )
    match.add_argument(
        "--no-exact-matches",
        dest="exact",
        action="store_false",
        help="a RIGHT key equal to the LEFT key does not match (strictly "
        "before for backward, after for forward; e.g. --no-exact-matches)",
    )
    payload = e.add_argument_group("output")
    payload.add_argument(
        "--columns",
        metavar="C1,C2",
        type=_names,
        action="append",
        help="the RIGHT columns to attach, in this order (default: all but "
        "the by columns and a same-named on column; e.g. --columns bid,ask; quoted "
        "as --by)",
    )
    payload.add_argument(
        "--suffix",
        default="_right",
        help="appended to an attached column whose name LEFT already has "
        "(default _right; e.g. --suffix _quote)",
    )
    payload.add_argument(
        "--compression",
        metavar="CODEC[:LEVEL]",
        type=_compression,
        default=(None, None),
        help=f"OUT's compression: {', '.join(CODECS)}, optionally with a "
        f"level (e.g. --compression zstd:3; default: LEFT's columns keep "
        f"theirs when its file is copied as it is, and what is encoded is snappy)",
    )
    payload.add_argument(
        "--one-file",
        action="store_true",
        help="OUT is one parquet file even when LEFT is several files: their rows one file "
        "after another, in the order they are read, and the columns of LEFT's partition "
        "folders after LEFT's own (default: a folder of a file per LEFT file; e.g. -o "
        "day.parquet --one-file)",
    )
    run = e.add_argument_group("running")
    run.add_argument(
        "--device",
        choices=DEVICES,
        default="auto",
        help="where the join runs; auto takes the GPU when one is usable "
        "(default auto; e.g. --device cpu)",
    )
    run.add_argument(
        "--chunk-rows",
        metavar="N",
        type=_positive_int,
        default=DEFAULT_CHUNK_ROWS,
        help="LEFT rows per chunk: memory holds RIGHT prepared plus a few chunks; "
        "a file whose row groups fit is joined a row group at a time, its "
        f"columns copied (default {DEFAULT_CHUNK_ROWS:,}; e.g. --chunk-rows "
        "250_000)",
    )
    run.add_argument(
        "--memory-limit",
        metavar="SIZE",
        help="the most memory the process may hold; RIGHT is spilled to hash "
        "partitions on disk when it would not fit (default: a quarter of "
        "the machine's memory; e.g. --memory-limit 2GiB, 512MiB, 4GB)",
    )
    run.add_argument(
        "--tmp-dir",
        metavar="DIR",
        help="where spill files go, in a hidden folder removed at the end "
        "(default: OUT's folder; e.g. --tmp-dir /scratch)",
    )
    run.add_argument(
        "--right-mode",
        choices=RIGHT_MODES,
        default="auto",
        help="how RIGHT is held: streamed in windows, when it is sorted by its "
        "--on key, or by its by columns and then that key (LEFT's keys are "
        "put in its order when LEFT is not sorted alike); in memory; or "
        "spilled to hash partitions of the by keys on disk. auto: streamed "
        "when both sides are sorted alike (forward and nearest, and a key-sorted "
        "RIGHT of nearly a group a row: only when RIGHT does not fit "
        "--memory-limit), else in memory when it fits "
        "--memory-limit, else streamed if RIGHT is sorted, else spilled "
        "(default auto; e.g. --right-mode spill)",
    )
    run.add_argument(
        "--spill-partitions",
        metavar="N",
        type=_positive_int,
        help="spill both sides to N hash partitions of the by keys whatever RIGHT "
        "needs, e.g. when the estimate is off; with --right-mode stream and "
        "only RIGHT sorted, LEFT's keys in N ranges "
        "(e.g. --spill-partitions 16)",
    )
    run.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress and no summary; errors only (e.g. -q)",
    )
    e.set_defaults(run=_enrich, parser=e)

    d = sub.add_parser(
        "demo",
        formatter_class=fmt,
        epilog=DEMO_EXAMPLES,
        help="enrich a synthetic market-data day with the prevailing quotes",
        description=_wrap(
            "Generate a market-data day (asofgpu.marketdata: Zipf-distributed symbol "
            "activity, nanosecond UTC timestamps), write quotes and trades as parquet, run "
            "'asofgpu enrich' on them on the best available backend and print its summary."
        ),
    )
    d.add_argument(
        "--quotes",
        metavar="N",
        type=_positive_int,
        default=4_000_000,
        help="number of quotes (default 4,000,000; e.g. --quotes 10_000_000)",
    )
    d.add_argument(
        "--trades",
        metavar="N",
        type=_positive_int,
        default=1_000_000,
        help="number of trades (default 1,000,000; e.g. --trades 2_000_000)",
    )
    d.add_argument(
        "--symbols",
        metavar="N",
        type=_positive_int,
        default=1_000,
        help="number of symbols (default 1,000; e.g. --symbols 5000)",
    )
    d.add_argument(
        "--seed",
        metavar="N",
        type=_non_negative_int,
        default=0,
        help="random seed: the same seed gives the same day (default 0; e.g. --seed 7)",
    )
    d.add_argument(
        "--shuffled",
        action="store_true",
        help="write both files in random row order (e.g. --shuffled)",
    )
    d.add_argument(
        "--out-dir",
        metavar="DIR",
        help="keep quotes.parquet, trades.parquet and enriched.parquet in DIR "
        "(default: a temporary directory, removed at the end; e.g. --out-dir day/)",
    )
    d.add_argument(
        "--device",
        choices=DEVICES,
        default="auto",
        help="where the join runs (default auto: the GPU when one is usable; e.g. --device cpu)",
    )
    d.add_argument(
        "--chunk-rows",
        metavar="N",
        type=_positive_int,
        default=DEFAULT_CHUNK_ROWS,
        help=f"trades per chunk (default {DEFAULT_CHUNK_ROWS:,}; e.g. --chunk-rows 100_000)",
    )
    d.add_argument(
        "-q", "--quiet", action="store_true", help="the summary only, no progress (e.g. -q)"
    )
    d.set_defaults(run=_demo, parser=d)

    w = sub.add_parser(
        "warm",
        formatter_class=fmt,
        help="compile the CPU kernels of the usual joins before the first join needs them",
        description=_wrap(
            "Run small joins of the usual shapes (one-shot and prepared, string and integer "
            "groups, time and float keys, tables as parquet readers give them, pandas and "
            "polars frames) and 'asofgpu enrich' on small files (streamed, in memory, "
            "spilled) so that numba compiles their CPU kernels into its cache now, each "
            "shape in a process of its own: the first join in a new environment then loads "
            "them (about a second) instead of compiling them (tens of seconds on two "
            "cores). The cache is this machine's; run it once after installing."
        ),
    )
    w.add_argument(
        "--processes",
        metavar="N",
        type=_positive_int,
        default=None,
        help="shapes compiled at once (default: one per core; e.g. --processes 2)",
    )
    w.set_defaults(run=_warm_kernels, parser=w)
    return parser


# --------------------------------------------------------------------------- enrich


def _one(values) -> list[str] | None:
    """A repeated, comma-separated flag as one list."""
    return None if values is None else [n for part in values for n in part]


def _options(args, parser) -> Options:
    if args.on is not None and (args.left_on is not None or args.right_on is not None):
        parser.error("pass either --on, or --left-on and --right-on, not both")
    if args.on is None and (args.left_on is None) != (args.right_on is None):
        parser.error("--left-on and --right-on must be given together")
    if args.on is None and args.left_on is None:
        parser.error("the as-of key is missing: pass --on COL, or --left-on and --right-on")
    by, left_by, right_by = _one(args.by), _one(args.left_by), _one(args.right_by)
    if by is not None and (left_by is not None or right_by is not None):
        parser.error("pass either --by, or --left-by and --right-by, not both")
    if (left_by is None) != (right_by is None):
        parser.error("--left-by and --right-by must be given together")
    if left_by is not None and len(left_by) != len(right_by):
        parser.error(
            f"--left-by and --right-by must name as many columns, got "
            f"{len(left_by)} and {len(right_by)}"
        )
    if by is not None:
        left_by = right_by = by
    return Options(
        left=args.left,
        right=args.right,
        out=args.output,
        left_on=args.on or args.left_on,
        right_on=args.on or args.right_on,
        left_by=left_by or [],
        right_by=right_by or [],
        strategy=args.strategy,
        tolerance=args.tolerance,
        tolerance_column=args.tolerance_column,
        allow_exact_matches=args.exact,
        columns=_one(args.columns),
        suffix=args.suffix,
        device=args.device,
        chunk_rows=args.chunk_rows,
        compression=args.compression[0],
        compression_level=args.compression[1],
        memory_limit=args.memory_limit,
        tmp_dir=args.tmp_dir,
        right_mode=args.right_mode,
        spill_partitions=args.spill_partitions,
        one_file=args.one_file,
    )


def _enrich(args, parser) -> int:
    options = _options(args, parser)
    summary = enrich(options, None if args.quiet else _progress.for_stderr(parser.prog))
    if not args.quiet:
        _signals.tell(f"{parser.prog}: " + "\n".join(summary.lines()))
    return 0


# --------------------------------------------------------------------------- demo


def _demo(args, parser) -> int:
    import tempfile

    import pyarrow.parquet as pq

    from . import marketdata
    from .enrich._memory import machine_memory, readable

    if args.symbols > max(args.quotes, args.trades):
        parser.error(
            f"--symbols: at most as many as --quotes or --trades "
            f"({max(args.quotes, args.trades):,}), got {args.symbols:,}"
        )
    need = DEMO_ROW_BYTES * (args.quotes + args.trades)
    if need > machine_memory():
        parser.error(
            f"--quotes and --trades: {args.quotes:,} quotes and {args.trades:,} trades take "
            f"about {readable(need)} of memory to generate and enrich, more than this machine's "
            f"{readable(machine_memory())}"
        )
    say = _signals.tell
    with contextlib.ExitStack() as stack:
        if args.out_dir is None:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="asofgpu-demo-"))
        else:  # made before the day is generated: a bad one is told at once
            folder = args.out_dir
            if os.path.exists(folder) and not os.path.isdir(folder):
                raise EnrichError(f"--out-dir {folder}: not a folder")
            try:
                os.makedirs(folder, exist_ok=True)
            except OSError as exc:
                raise EnrichError(f"--out-dir {folder}: {exc.strerror or exc}") from None
        t0 = time.perf_counter()
        quotes, trades = marketdata.day(
            args.quotes, args.trades, args.symbols, seed=args.seed, shuffled=args.shuffled
        )
        order = "shuffled" if args.shuffled else "time-sorted"
        say(
            f"generated {quotes.num_rows:,} quotes and {trades.num_rows:,} trades over "
            f"{args.symbols:,} symbols ({order}, seed {args.seed}) in "
            f"{time.perf_counter() - t0:.2f} s"
        )
        paths = {n: os.path.join(folder, f"{n}.parquet") for n in ("quotes", "trades", "enriched")}
        t1 = time.perf_counter()
        _write_whole({paths["quotes"]: quotes, paths["trades"]: trades})
        del quotes, trades
        size = sum(os.path.getsize(paths[n]) for n in ("quotes", "trades")) / 2**20
        say(
            f"wrote quotes.parquet and trades.parquet ({size:,.0f} MiB) to {folder} in "
            f"{time.perf_counter() - t1:.2f} s"
        )
        say(
            f"running: asofgpu enrich {paths['trades']} {paths['quotes']} -o "
            f"{paths['enriched']} --on time --by symbol --device {args.device}"
        )
        options = Options(
            left=paths["trades"],
            right=paths["quotes"],
            out=paths["enriched"],
            left_on="time",
            right_on="time",
            left_by=["symbol"],
            right_by=["symbol"],
            device=args.device,
            chunk_rows=args.chunk_rows,
        )
        summary = enrich(options, None if args.quiet else _progress.for_stderr(parser.prog))
        say("\n".join(summary.lines()))
        _example(pq.ParquetFile(paths["enriched"]), say)
        if args.out_dir is None:
            say(f"(the temporary directory {folder} is removed; --out-dir DIR keeps the files)")
    return 0


# --------------------------------------------------------------------------- warm


def _warm_kernels(args, parser) -> int:
    from . import _warm
    from ._backend import cache_dir, jit

    with warnings.catch_warnings():  # its "cannot write its cache" is said below, as an error
        warnings.simplefilter("ignore", RuntimeWarning)
        cache = cache_dir()
    if cache is None:
        _signals.say(
            f"{parser.prog}: error: {jit.UNCACHED_BECAUSE}: warming would compile into "
            "nothing. Set NUMBA_CACHE_DIR to a writable directory, and warm with it set, as "
            "the joins will run"
        )
        return 1
    say = _signals.tell
    seconds = _warm.warm(args.processes, lambda line: say(f"compiled {line}"))
    say(f"the usual joins' kernels are in numba's cache ({cache}), in {seconds:.1f} s")
    return 0


def _write_whole(tables: dict) -> None:
    """Parquet files (``{path: table}``), each complete or absent, as enrich writes OUT
    (``AtomicFile``): each written beside its place, and none renamed until all are written
    (then one after the other, the signals held off)."""
    import pyarrow.parquet as pq

    from .enrich._output import AtomicFile, commit_together

    with contextlib.ExitStack() as stack:
        written = []
        for path, table in tables.items():
            label = os.path.basename(path)
            whole = stack.enter_context(AtomicFile(path, label))
            try:
                pq.write_table(table, whole.tmp)
            except OSError as exc:
                raise OutputError(f"cannot write {label} {path}: {exc.strerror or exc}") from None
            written.append(whole)
        commit_together(written, is_out=False)  # (the run's inputs, not its output)


def _example(enriched, say) -> None:
    """One enriched trade, as the output file holds it."""
    import pyarrow as pa

    batch = next(enriched.iter_batches(batch_size=10_000), None)
    if batch is None:
        return
    # Times as Arrow writes them: without pandas, pyarrow cannot make a Python datetime of
    # nanoseconds, and with it, pandas would be imported for one line of output.
    rows = pa.RecordBatch.from_arrays(
        [c.cast(pa.string()) if pa.types.is_timestamp(c.type) else c for c in batch.columns],
        names=batch.schema.names,
    ).to_pylist()
    row = next((r for r in rows if r["bid"] is not None), rows[0])
    say(
        f"e.g. {row['time']} {row['symbol']}: {row['size']} @ {row['price']}, prevailing "
        f"quote {row['bid']} / {row['ask']} ({row['bid_size']:.0f} x {row['ask_size']:.0f})"
        if row["bid"] is not None
        else f"e.g. {row['time']} {row['symbol']}: {row['size']} @ {row['price']}, no quote before it"
    )


# --------------------------------------------------------------------------- main


def _keeping_allocator() -> None:
    """Arrow's jemalloc pool for the command's own process, where it is built in.

    The default pool (mimalloc) hands freed pages back to the system within milliseconds, so
    each chunk's buffers fault in again; a 10M-row enrich spent 1.8-2.7 s of system time on
    it, and 0.8-1.3 s with jemalloc, whose pages are kept for seconds (3.2-3.3 s wall instead
    of 3.9-4.0, after a polars run, on 2 cores). A library call leaves the pool as it is."""
    import pyarrow as pa

    try:
        pa.set_memory_pool(pa.jemalloc_memory_pool())
    except (NotImplementedError, pa.ArrowNotImplementedError):  # a build without jemalloc
        pass


def _values_attached(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``--tolerance -5s`` as ``--tolerance=-5s`` (``-o -1.parquet`` as ``-o-1.parquet``):
    argparse takes a word that begins with "-" and is no plain number for an option, and
    said "--tolerance: expected one argument" where the option's own check says what is
    wrong with the value ("must not be negative"). Only after the command's name, for its
    options that take a value, followed by "-" and a digit.

    >>> _values_attached(_parser(), ["enrich", "--tolerance", "-5s", "-q", "-o", "-1.pq"])
    ['enrich', '--tolerance=-5s', '-q', '-o-1.pq']
    >>> _values_attached(_parser(), ["demo", "--tolerance", "-5s"])
    ['demo', '--tolerance', '-5s']
    """
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    takes_value: set[str] = set()
    attached, words = [], iter(argv)
    for word in words:
        if word == "--":  # what follows is positional
            attached += [word, *words]
            break
        if not takes_value and word in commands.choices:
            takes_value = {
                name
                for name, action in commands.choices[word]._option_string_actions.items()
                if action.nargs is None
            }
        elif word in takes_value:
            value = next(words, None)
            if value is not None and re.match(r"-\.?[0-9]", value):
                attached.append(f"{word}={value}" if word.startswith("--") else word + value)
                continue
            attached += [word] if value is None else [word, value]
            continue
        attached.append(word)
    return attached


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args, unknown = parser.parse_known_args(_values_attached(parser, argv))
    if unknown:  # told by the command's parser, whose options they were meant to be
        args.parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    prog = f"asofgpu {args.command}"
    _keeping_allocator()
    run = None
    try:
        with interrupts.handling() as run:
            return args.run(args, args.parser)
    except EnrichError as exc:
        _signals.say(f"{prog}: error: {exc}")
        return 2
    except OutputError as exc:
        in_place = ", ".join(exc.in_place)  # written together with the failing file
        told = f"only {in_place} put in place" if in_place else "nothing was written"
        _signals.say(f"{prog}: error: {exc}; {told}")
        return 1
    except (JitDisabled, NumbaTooOld) as exc:  # the process's setup: told as bad input is
        _signals.say(f"{prog}: error: {exc}")
        return 2
    except KeyboardInterrupt as exc:
        if run is not None and run.committed:  # after OUT was put in place, whole
            _signals.say(f"{prog}: interrupted after the output was written")
        else:
            _signals.say(f"{prog}: interrupted; no output was written")
        return _signals.exit_code(exc)


def entry() -> int:
    """The ``asofgpu`` process (``python -m asofgpu`` and the script): ``main``, then a quick
    exit. At shutdown Python collects garbage through every live object, numba's many
    thousands included: 0.3 s after an enrich, for nothing. Frozen, they are left to the
    process's end. (Only here: a program that calls ``main`` goes on living.) Text its
    stdout and stderr cannot encode (PYTHONIOENCODING=ascii, and a path in Unicode) is
    written escaped, not raised as an error after the work is done."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        code = main()
    except KeyboardInterrupt as exc:  # outside the run's own handling: its options, its exit
        _signals.say("asofgpu: interrupted")
        code = _signals.exit_code(exc)
    finally:  # done, or given up: a signal now would only make the exit a traceback
        for s in interrupts.SIGNALS:
            signal.signal(s, signal.SIG_IGN)
        interrupts.keep_exit_code()  # also on the way out of a SystemExit (a usage error)
    gc.freeze()
    return code


if __name__ == "__main__":
    sys.exit(entry())
