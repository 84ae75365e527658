"""Running ``asofgpu enrich`` in the test process, and what it must never leave behind."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from asofgpu import cli

# pyarrow writes string and binary views to parquet from 21 on (and reads files that hold
# them as plain text before): tests that write view columns into their inputs need it.
needs_parquet_views = pytest.mark.skipif(
    int(pa.__version__.split(".")[0]) < 21, reason="pyarrow writes views to parquet from 21"
)

# The strategies and options the streams are checked with: (command-line flags, join_asof's
# keyword arguments).
STREAM_OPTIONS = [
    ([], {}),
    (
        ["--no-exact-matches", "--tolerance", "20s"],
        {"allow_exact_matches": False, "tolerance": np.timedelta64(20, "s")},
    ),
    (["--strategy", "forward"], {"strategy": "forward"}),
    (
        ["--strategy", "nearest", "--tolerance", "20s"],
        {"strategy": "nearest", "tolerance": np.timedelta64(20, "s")},
    ),
]


def coarse_times(quotes: pa.Table, tick: int = 10**10) -> pa.Table:
    """``quotes`` with times rounded down to ``tick`` nanoseconds: runs of equal keys, which
    windows, ranges and chunks then meet."""
    time = quotes["time"]
    rounded = pa.compute.multiply(
        pa.compute.cast(pa.compute.divide(time.cast(pa.int64()), tick), pa.int64()), tick
    )
    return quotes.set_column(quotes.schema.get_field_index("time"), "time", rounded.cast(time.type))


def run(*argv, capsys) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of the command."""
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def enrich_in(
    folder: Path,
    *flags,
    capsys,
    on: str = "t",
    by: str | None = "g",
    left: str = "l.parquet",
    right: str = "r.parquet",
    out: str = "o.parquet",
) -> tuple[int, str, str]:
    """``asofgpu enrich`` of ``folder``'s files ``left`` and ``right`` into ``out`` there,
    on ``on`` by ``by`` (None: without) on the cpu, with ``flags``: (exit code, stdout,
    stderr)."""
    return run(
        "enrich",
        folder / left,
        folder / right,
        "-o",
        folder / out,
        "--on",
        on,
        *(() if by is None else ("--by", by)),
        "--device",
        "cpu",
        *flags,
        capsys=capsys,
    )


def hidden(folder: Path) -> list[str]:
    """What a run may leave only while it runs: partial outputs, spill folders, old OUTs."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))
