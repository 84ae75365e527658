"""``asofgpu enrich --tolerance 1mo`` (calendar durations) and ``--tolerance-column`` (each
LEFT row's own), end to end through the command, against ``asofgpu.join_asof`` on the whole
tables with the same tolerance. Row groups and ``--chunk-rows`` are small, so that a stream
has many windows and its carries are trimmed to the tolerance's reach many times over: the
sparse groups' matches lie a month back, behind windows of a busy group's daily rows."""

from __future__ import annotations

import datetime as dt
import importlib.util

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import asofgpu as ag
from asofgpu._calendar import reach_bounds_ns, reaches
from asofgpu.enrich import _attach
from asofgpu.enrich._checks import Options, Tolerance
from asofgpu.enrich._sources import Source
from enrich_cli import enrich_in, hidden

# polars does the calendar arithmetic (where the key's zone changes its clocks, always)
needs_polars = pytest.mark.skipif(
    importlib.util.find_spec("polars") is None, reason="polars counts the calendar"
)

STRATEGIES = ("backward", "forward", "nearest")

# How RIGHT is held, the LEFT order it needs, the flags, and what the log says of it.
LAYOUTS = {
    "tape": ("sorted", ["--right-mode", "stream"], "sorted by 't') in windows"),
    "grouped": ("grouped", ["--right-mode", "stream"], "sorted by ('g', 't')) in windows"),
    "regroup": (
        "shuffled",
        ["--right-mode", "stream", "--spill-partitions", "2"],
        "LEFT's keys spilled in 2 ranges",
    ),
    "memory": ("shuffled", ["--right-mode", "memory"], "reading RIGHT"),
    "spill": ("shuffled", ["--right-mode", "spill", "--spill-partitions", "3"], "spilling"),
}


def _dates(values) -> np.ndarray:
    return np.array(values, dtype="datetime64[D]")


def calendar_tables(seed: int = 0, key=pa.date32()) -> tuple[pa.Table, pa.Table]:
    """RIGHT: a busy group "busy" with a row a day (a stream's windows then start on every
    day), sparse groups whose rows lie on month ends and the leap day, and a null key; LEFT:
    month ends and random days of every group, one without RIGHT rows, with a tolerance
    column of durations holding nulls. Keys of type ``key``: dates, or timestamps a few hours
    past midnight (local time in a zone)."""
    rng = np.random.default_rng(seed)
    busy = np.arange(np.datetime64("2023-12-01"), np.datetime64("2024-07-15"))
    sparse = {
        "s": _dates(["2024-01-31", "2024-02-29", "2024-05-31"]),
        "u": _dates(["2023-12-31", "2024-03-31", "2024-04-30"]),
        "w": np.sort(rng.choice(busy, 8, replace=False)),
    }
    r_days = np.concatenate([busy, *sparse.values()])
    r_groups = ["busy"] * len(busy) + [g for g, d in sparse.items() for _ in d]
    month_ends = _dates(
        ["2024-01-31", "2024-02-29", "2024-03-01", "2024-03-31", "2024-04-30", "2024-05-31"]
    )
    groups = ["busy", "s", "u", "w", "none"]
    l_days = np.concatenate([np.repeat(month_ends, len(groups)), rng.choice(busy, 60)])
    l_groups = groups * len(month_ends) + list(rng.choice(groups, 60))
    right = pa.table(
        {
            "t": _keys(r_days, key, rng),
            "g": r_groups,
            "v": np.arange(len(r_days), dtype=np.float64),
        }
    )
    right = pa.concat_tables([right, pa.table({"t": pa.nulls(1, key), "g": ["s"], "v": [-1.0]})])
    days = rng.integers(0, 45, len(l_days))
    tol = pa.array(
        [None if i % 9 == 0 else dt.timedelta(days=int(d)) for i, d in enumerate(days)],
        pa.duration("s"),
    )
    left = pa.table({"t": _keys(l_days, key, rng), "g": l_groups, "tol": tol})
    return left, right


def _keys(days: np.ndarray, key: pa.DataType, rng) -> pa.Array:
    """Days as ``key``: dates, or timestamps at a few hours past midnight (in the key's zone
    when it has one: a zoned key's values are UTC instants)."""
    if pa.types.is_date(key):
        return pa.array(days.astype("datetime64[D]"), key)
    hours = rng.integers(1, 12, len(days)).astype("timedelta64[h]")
    local = days.astype("datetime64[us]") + hours
    if key.tz is None:
        return pa.array(local, key)
    import polars as pl

    zoned = pl.Series(local).dt.replace_time_zone(key.tz, ambiguous="earliest")
    return zoned.to_arrow().cast(key)


def write(tmp_path, left: pa.Table, right: pa.Table, order: str) -> tuple[pa.Table, pa.Table]:
    """l.parquet and r.parquet in small row groups: both sorted by ``t`` (a tape), both by
    (``g``, ``t``) (grouped), or RIGHT sorted and LEFT shuffled. Returns them as written."""
    if order == "grouped":
        right = right.sort_by([("g", "ascending"), ("t", "ascending")])
        left = left.sort_by([("g", "ascending"), ("t", "ascending")])
    else:
        right = right.sort_by("t")  # nulls last
        left = left.sort_by("t")
        if order == "shuffled":
            left = left.take(np.random.default_rng(3).permutation(left.num_rows))
    pq.write_table(right, tmp_path / "r.parquet", row_group_size=16)
    pq.write_table(left, tmp_path / "l.parquet", row_group_size=7)
    return left, right


def enriched(tmp_path, capsys, *flags, out="o.parquet") -> tuple[pa.Table, str]:
    code, _, stderr = enrich_in(tmp_path, *flags, capsys=capsys, out=out)
    assert code == 0, stderr
    assert hidden(tmp_path) == []
    return pq.read_table(tmp_path / out), stderr


def check_every_strategy(
    tmp_path, capsys, left, right, layout, flags, tolerance, chunks=(1, 5), copied=None
):
    """Enrich ``left`` and ``right`` written for ``layout`` with ``flags``, each strategy and
    chunk size, and compare with join_asof under ``tolerance`` (a callable of LEFT as
    written, for a column); where ``copied`` is given, whether the log says LEFT's columns
    were copied as they are."""
    order, mode_flags, logged = LAYOUTS[layout]
    left, right = write(tmp_path, left, right, order)
    tol = tolerance(left) if callable(tolerance) else tolerance
    for strategy in STRATEGIES:
        expected = ag.join_asof(
            left, right, on="t", by="g", strategy=strategy, tolerance=tol, device="cpu"
        )
        for chunk_rows in chunks:
            got, stderr = enriched(
                tmp_path,
                capsys,
                *flags,
                *mode_flags,
                "--strategy",
                strategy,
                "--chunk-rows",
                chunk_rows,
                out=f"o-{strategy}-{chunk_rows}.parquet",
            )
            assert logged in stderr
            if copied is not None:
                assert ("its columns copied as they are" in stderr) == copied, stderr
            assert got.equals(expected), (layout, strategy, chunk_rows)
    return expected


# --------------------------------------------------------------------------- calendar


@needs_polars
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("tolerance", ["1mo", "1q", "1mo15d"])
def test_calendar_tolerance_on_dates_every_way(tmp_path, capsys, layout, tolerance):
    left, right = calendar_tables()
    flags = ["--tolerance", tolerance]
    check_every_strategy(tmp_path, capsys, left, right, layout, flags, tolerance)


@needs_polars
def test_a_month_end_reaches_back_to_the_leap_day_and_no_further(tmp_path, capsys):
    """A month back from 2024-03-29 is 2024-02-29; from 2024-03-31 too (the month end
    saturates: 31 days); from 2024-04-01 it is 2024-03-01. A tape whose windows start on
    every day must keep the leap day's row in its carry for 31 days."""
    right = pa.table(
        {
            "t": pa.array(_dates(["2024-02-28", "2024-02-29", "2024-03-30"]), pa.date32()),
            "g": ["a", "a", "b"],
            "v": [1.0, 2.0, 3.0],
        }
    )
    busy = np.arange(np.datetime64("2024-02-01"), np.datetime64("2024-05-01"))
    right = pa.concat_tables(
        [
            right,
            pa.table(
                {
                    "t": pa.array(busy, pa.date32()),
                    "g": ["busy"] * len(busy),
                    "v": np.full(len(busy), 0.0),
                }
            ),
        ]
    )
    left = pa.table(
        {
            "t": pa.array(
                _dates(["2024-03-28", "2024-03-29", "2024-03-31", "2024-04-01", "2024-04-30"]),
                pa.date32(),
            ),
            "g": ["a", "a", "a", "a", "b"],
        }
    )
    write(tmp_path, left, right, "sorted")
    got, stderr = enriched(
        tmp_path, capsys, "--tolerance", "1mo", "--right-mode", "stream", "--chunk-rows", "1"
    )
    assert "in windows of up to 1 rows" in stderr
    # 03-28 and 03-29 reach back to 02-28 and 02-29; 03-31 to 02-29; 04-01 only to 03-01
    assert got["v"].to_pylist() == [2.0, 2.0, 2.0, None, 3.0]


@needs_polars
@pytest.mark.parametrize("layout", ["tape", "grouped", "memory", "spill"])
@pytest.mark.parametrize(
    ("key", "tolerance"),
    [
        (pa.timestamp("us"), "1mo"),
        (pa.timestamp("us"), "2mo12h"),
        (pa.timestamp("ms", "America/New_York"), "1mo"),
        (pa.timestamp("ms", "America/New_York"), "1d"),
        (pa.timestamp("ns", "UTC"), "2d"),
    ],
    ids=str,
)
def test_calendar_tolerance_on_timestamps(tmp_path, capsys, layout, key, tolerance):
    """Naive and zoned timestamps: in New York a day is the zone's, 23 or 25 hours around a
    clock change; in UTC "2d" is 48 hours, the fixed tolerance."""
    left, right = calendar_tables(seed=1, key=key)
    flags = ["--tolerance", tolerance]
    check_every_strategy(tmp_path, capsys, left, right, layout, flags, tolerance, chunks=(1,))


@needs_polars
def test_a_zoned_day_is_23_hours_after_the_spring_clock_change(tmp_path, capsys):
    """2024-03-11 01:30 in New York reaches back one day to 2024-03-10 01:30, 23 hours: a
    quote 23.5 hours before is inside "24h" but outside "1d"."""
    key = pa.timestamp("us", "America/New_York")
    at = np.datetime64("2024-03-11T05:30", "us")  # 01:30 EDT
    right = pa.table(
        {"t": pa.array(np.array([at - np.timedelta64(1410, "m")]), key), "g": ["a"], "v": [1.0]}
    )
    left = pa.table({"t": pa.array(np.array([at]), key), "g": ["a"]})
    write(tmp_path, left, right, "sorted")
    for tolerance, v in (("1d", None), ("24h", 1.0)):
        got, _ = enriched(tmp_path, capsys, "--tolerance", tolerance, out=f"{tolerance}.parquet")
        assert got["v"].to_pylist() == [v]


@needs_polars
@pytest.mark.parametrize(
    ("key", "tolerance"),
    [
        (key, tolerance)
        for key in (
            pa.date32(),
            pa.timestamp("s", "America/New_York"),
            pa.timestamp("s", "Australia/Lord_Howe"),
        )
        for tolerance in ("1mo", "1q", "1y", "1mo15d", "1d", "1w", "3mo2w", "5y", "2mo12h")
        if pa.types.is_timestamp(key) or not tolerance.endswith("h")  # no hours on a date
    ],
    ids=str,
)
def test_the_calendar_bound_covers_every_key(key, tolerance):
    """The carries' reach for a calendar tolerance is at least every key's, both ways: noon
    of every day over twenty years (leap years, month ends), in zones that change their
    clocks by an hour or by half of one."""
    import polars as pl

    days = np.arange(np.datetime64("2005-01-01"), np.datetime64("2025-01-01"))
    keys = pa.array(days, pa.date32())
    if pa.types.is_timestamp(key):
        noon = pl.Series(days.astype("datetime64[ms]") + np.timedelta64(12, "h"))
        keys = noon.dt.replace_time_zone(key.tz).to_arrow().cast(key)
    back, forward = reaches(tolerance, keys, "the key", ("backward", "forward"))
    low, high = reach_bounds_ns(tolerance)
    longest = max(np.max(r.to_numpy(zero_copy_only=False)) for r in (back, forward))
    shortest = min(np.min(r.to_numpy(zero_copy_only=False)) for r in (back, forward))
    assert np.timedelta64(low, "ns") <= shortest and longest <= np.timedelta64(high, "ns")


# --------------------------------------------------------------------------- a column


def _column(left: pa.Table) -> pa.ChunkedArray:
    return left["tol"]


@pytest.mark.parametrize("left_columns", ["copied", "encoded"], indirect=True)
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_tolerance_column_of_durations_with_nulls(tmp_path, capsys, layout, left_columns):
    """Each row's own tolerance, 0 to 44 days, null (no limit) for a ninth of the rows: the
    column is read for the join though only the keys are read otherwise (LEFT copied: in
    chunks that hold its row groups of 7 rows), and stays in OUT like any LEFT column."""
    left, right = calendar_tables(seed=2)
    copied = left_columns == "copied"
    expected = check_every_strategy(
        tmp_path,
        capsys,
        left,
        right,
        layout,
        ["--tolerance-column", "tol"],
        _column,
        chunks=(7,) if copied else (1, 5),
        copied=copied,
    )
    assert "tol" in expected.column_names


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_tolerance_column_of_nulls_alone_limits_nothing(tmp_path, capsys, layout):
    """A column of None alone, which pandas writes as Arrow's null type: no row has a limit.
    It was refused ("holds null"), though null is what says "no limit"."""
    left, right = calendar_tables(seed=3)
    left = left.set_column(left.schema.get_field_index("tol"), "tol", pa.nulls(len(left)))
    check_every_strategy(
        tmp_path, capsys, left, right, layout, ["--tolerance-column", "tol"], _column
    )


@pytest.mark.parametrize("layout", ["tape", "regroup", "spill"])
def test_tolerance_column_without_nulls_bounds_the_carries(tmp_path, capsys, layout):
    """Without nulls the carries are trimmed to LEFT's largest tolerance (a pass over the
    column before streaming): 44 days here, of a tape whose rows lie a month apart."""
    left, right = calendar_tables(seed=4)
    left = left.set_column(
        2, "tol", pa.compute.fill_null(left["tol"], pa.scalar(dt.timedelta(0), pa.duration("s")))
    )
    check_every_strategy(
        tmp_path, capsys, left, right, layout, ["--tolerance-column", "tol"], _column
    )


@pytest.mark.parametrize("layout", ["tape", "grouped", "regroup", "memory", "spill"])
@pytest.mark.parametrize("kind", [pa.int64(), pa.float64(), pa.uint8()], ids=str)
def test_tolerance_column_of_numbers_in_the_key_unit(tmp_path, capsys, layout, kind):
    """Integer keys, and tolerances in their unit: whole numbers, fractions (rounded down,
    as distances are whole), inf (no limit) and nulls."""
    rng = np.random.default_rng(5)
    right = pa.table(
        {
            "t": rng.integers(0, 2_000, 300),
            "g": rng.choice(["a", "b", "c"], 300),
            "v": np.arange(300, dtype=np.float64),
        }
    )
    tol = rng.integers(0, 60, 200).astype(np.float64)
    if kind == pa.float64():
        tol = tol / 4
        tol[::17] = np.inf
    left = pa.table(
        {
            "t": rng.integers(-10, 2_100, 200),
            "g": rng.choice(["a", "b", "c", "d"], 200),
            "tol": pa.array(tol, mask=np.arange(200) % 11 == 0).cast(kind, safe=False),
        }
    )
    check_every_strategy(
        tmp_path, capsys, left, right, layout, ["--tolerance-column", "tol"], _column, (3,)
    )


def test_tolerance_column_in_days_of_a_date_key(tmp_path, capsys):
    left, right = calendar_tables(seed=6)
    days = pa.compute.divide(left["tol"].cast(pa.int64()), 86_400)
    left = left.set_column(2, "tol", days)
    check_every_strategy(
        tmp_path, capsys, left, right, "tape", ["--tolerance-column", "tol"], _column
    )


def test_the_reach_of_a_column_is_its_largest_value(tmp_path):
    """LEFT's largest tolerance over every file and row group, in the key's units; None
    (no trimming) when a row has none."""
    left = pa.table(
        {
            "t": pa.array([1, 2, 3, 4], pa.timestamp("ms")),
            "tol": pa.array([5, 90, 7, 0], pa.duration("s")),
        }
    )
    pq.write_table(left, tmp_path / "l.parquet", row_group_size=1)
    source = Source.find(tmp_path / "l.parquet", "LEFT")
    options = Options(tmp_path / "l.parquet", tmp_path, tmp_path, "t", "t")
    key = pa.timestamp("ms")
    assert _attach._reach(Tolerance(column="tol"), key, source, options) == 90_000
    pq.write_table(
        left.set_column(1, "tol", pa.array([5, None, 7, 0], pa.duration("s"))),
        tmp_path / "l.parquet",
    )
    source = Source.find(tmp_path / "l.parquet", "LEFT")
    assert _attach._reach(Tolerance(column="tol"), key, source, options) is None


# --------------------------------------------------------------------------- errors


@pytest.fixture
def files(tmp_path):
    """l.parquet and r.parquet of integer keys, a text column and a negative tolerance."""
    left = pa.table(
        {
            "t": [1, 5, 9],
            "g": ["a", "a", "b"],
            "s": ["x", "y", "z"],
            "neg": [3, -2, 1],
            "nan": [1.0, float("nan"), 2.0],
            "dur": pa.array([1, 2, 3], pa.duration("s")),
        }
    )
    right = pa.table({"t": [0, 4, 8], "g": ["a", "a", "b"], "v": [1.0, 2.0, 3.0]})
    pq.write_table(left, tmp_path / "l.parquet")
    pq.write_table(right, tmp_path / "r.parquet")
    return tmp_path


@pytest.mark.parametrize("mode", ["memory", "stream", "spill"])
@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--tolerance", "1mo"],
            "--tolerance '1mo' has calendar units (months, quarters, years), which need a "
            "date or timestamp key; LEFT column 't' is int64",
        ),
        (
            ["--tolerance", "5", "--tolerance-column", "neg"],
            "pass either --tolerance (one for every row) or --tolerance-column (each row's "
            "own), not both",
        ),
        (
            ["--tolerance-column", "max_age"],
            "LEFT file {left} has no column 'max_age' (named in --tolerance-column) (its columns: "
            "t, g, s, neg, nan, dur)",
        ),
        (
            ["--tolerance-column", "s"],
            "--tolerance-column 's' holds string; it must hold numbers in the key's unit or "
            "durations (null: no limit)",
        ),
        (["--tolerance-column", "neg"], "--tolerance-column 'neg' must be non-negative, got -2"),
        (
            ["--tolerance-column", "nan"],
            "--tolerance-column 'nan' must be a non-negative number, got NaN",
        ),
        (
            ["--tolerance-column", "dur"],
            "--tolerance-column 'dur': durations need a temporal key (date, time, timestamp "
            "or duration), the key is int64",
        ),
    ],
)
def test_errors_name_the_option(files, capsys, mode, flags, message):
    code, _, stderr = enrich_in(files, *flags, "--right-mode", mode, capsys=capsys)
    assert code == 2
    assert f"asofgpu enrich: error: {message.format(left=files / 'l.parquet')}" in stderr
    assert not (files / "o.parquet").exists() and hidden(files) == []


@needs_polars
@pytest.mark.parametrize(
    ("tolerance", "message"),
    [
        ("-1mo", "--tolerance must be non-negative, got '-1mo'"),
        ("1mo5x", "--tolerance '1mo5x' is not a duration polars reads: unit: 'x' not supported"),
        ("1.5mo", "--tolerance '1.5mo' is not a duration polars reads"),
    ],
)
def test_calendar_errors_on_a_date_key(tmp_path, capsys, tolerance, message):
    left, right = calendar_tables()
    write(tmp_path, left, right, "sorted")
    code, _, stderr = enrich_in(tmp_path, f"--tolerance={tolerance}", capsys=capsys)
    assert code == 2
    assert f"asofgpu enrich: error: {message}" in stderr
    assert not (tmp_path / "o.parquet").exists() and hidden(tmp_path) == []


@pytest.mark.parametrize("strategy", ["backward", "nearest"])
def test_tolerance_column_through_a_spilled_partition_cut_into_key_ranges(
    tmp_path, capsys, strategy
):
    """A partition too large to prepare at once is joined a key range at a time: LEFT's
    tolerances travel with its keys into the ranges."""
    rng = np.random.default_rng(8)
    n = 150_000
    right = pa.table(
        {"t": rng.integers(0, 10**6, n), "g": rng.choice(["a", "b", "c"], n), "v": np.arange(n)}
    )
    tol = pa.array(rng.integers(0, 40, 3_000), mask=rng.random(3_000) < 0.1)
    left = pa.table(
        {"t": rng.integers(0, 10**6, 3_000), "g": rng.choice(["a", "b", "d"], 3_000), "tol": tol}
    )
    pq.write_table(right, tmp_path / "r.parquet", row_group_size=25_000)
    pq.write_table(left, tmp_path / "l.parquet")
    got, stderr = enriched(
        tmp_path,
        capsys,
        "--tolerance-column",
        "tol",
        "--strategy",
        strategy,
        "--memory-limit",
        "420MiB",
        "--spill-partitions",
        "1",
    )
    assert "too many to prepare at once: joined in" in stderr
    expected = ag.join_asof(
        left, right, on="t", by="g", strategy=strategy, tolerance=left["tol"], device="cpu"
    )
    assert got.equals(expected)
