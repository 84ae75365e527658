"""asofgpu.polars.join_asof's tolerances beyond polars (issue 22): calendar durations ("1mo")
and a column of tolerances, one per left row (a Series, an expression, a column's name).

polars refuses both, so the oracle is the contract read literally, row by row: a calendar
tolerance bounds each left key x by polars' own ``x.dt.offset_by("-" + tol)`` (backward) and
``x.dt.offset_by(tol)`` (forward), a nearest join checking each direction's candidate against
its own bound; a column bounds row i by its own tolerance (null: no limit), as ``oracle``
does for one scalar tolerance. Keys are compared as polars' physical values.
"""

from __future__ import annotations

import warnings
from datetime import date, datetime, timedelta

import numpy as np
import pytest

pl = pytest.importorskip("polars")
from polars.exceptions import ComputeError, InvalidOperationError
from polars.testing import assert_frame_equal

import asofgpu.polars  # noqa: F401 - registers the frame.asofgpu namespace
from asofgpu.polars import join_asof
from oracle import NO_MATCH, oracle

STRATEGIES = ["backward", "forward", "nearest"]


@pytest.fixture(params=["cpu", "python"])
def device(request):
    return request.param


# --------------------------------------------------------------------------- the oracle


def _rows(frame: pl.DataFrame, on: str, by: str | None):
    keys = frame.get_column(on).to_physical().to_list()
    groups = None if by is None else [(g,) for g in frame.get_column(by).to_list()]
    return keys, groups


def _one(x, group, right_keys, right_groups, **options) -> int:
    """The oracle for one left row."""
    return oracle([x], right_keys, None if group is None else [group], right_groups, **options)[0]


def _calendar_expected(left, right, tolerance, strategy, on="t", by=None, exact=True) -> list[int]:
    """Each left row's match under a calendar tolerance: its bounds by polars' offset_by, the
    candidates within them by brute force (``oracle`` with the row's own reach)."""
    series = left.get_column(on)
    low = series.dt.offset_by("-" + tolerance).to_physical().to_list()
    high = series.dt.offset_by(tolerance).to_physical().to_list()
    xs, left_groups = _rows(left, on, by)
    keys, right_groups = _rows(right, on, by)
    out = []
    for i, (x, lo, hi) in enumerate(zip(xs, low, high)):
        group = None if left_groups is None else left_groups[i]
        if x is None:
            out.append(NO_MATCH)
            continue
        within = dict(allow_exact_matches=exact)
        b = _one(x, group, keys, right_groups, strategy="backward", tolerance=x - lo, **within)
        f = _one(x, group, keys, right_groups, strategy="forward", tolerance=hi - x, **within)
        if strategy == "backward":
            out.append(b)
        elif strategy == "forward":
            out.append(f)
        elif b != NO_MATCH and f != NO_MATCH:  # both within their bounds: the nearest
            out.append(_one(x, group, keys, right_groups, strategy="nearest", **within))
        elif b != NO_MATCH:
            out.append(b)
        elif f != NO_MATCH:  # polars' rule: a forward pick takes the last row of its key
            out.append(_one(keys[f], group, keys, right_groups, strategy="backward"))
        else:
            out.append(NO_MATCH)
    return out


def _column_expected(left, right, tolerances, strategy, on="t", by=None, exact=True) -> list[int]:
    """Each left row's match with its own tolerance (physical units; None: no limit)."""
    xs, left_groups = _rows(left, on, by)
    keys, right_groups = _rows(right, on, by)
    return [
        _one(
            x,
            None if left_groups is None else left_groups[i],
            keys,
            right_groups,
            strategy=strategy,
            tolerance=tol,
            allow_exact_matches=exact,
        )
        for i, (x, tol) in enumerate(zip(xs, tolerances))
    ]


def _matched_rows(out: pl.DataFrame) -> list[int]:
    """The right row each output row took (the right frames carry their row number as
    ``row``), NO_MATCH for none."""
    return [NO_MATCH if r is None else r for r in out.get_column("row").to_list()]


# --------------------------------------------------------------------------- calendar durations

_RIGHT_TIMES = [
    "2024-01-31 12:00",
    "2024-02-29 12:00",
    "2024-02-29 12:00",
    "2024-03-01 00:00",
    "2024-03-30 18:00",
    "2024-04-30 12:00",
    "2023-02-28 12:00",
    "2024-10-26 13:00",
    "2024-10-27 13:00",
    "2024-07-27 12:30",
    "2024-11-15 00:00",
]
_LEFT_TIMES = [
    "2024-03-31 12:00",
    "2024-02-10 00:00",
    "2024-03-31 11:59",
    "2024-05-31 12:00",
    "2024-02-29 12:00",
    "2024-10-27 12:00",
    "2024-10-28 12:30",
    "2024-01-27 12:30",
    "2024-12-31 00:00",
    "2023-01-31 12:00",
    "2026-03-01 00:00",
    "2022-01-15 00:00",
    None,
]


def _times(texts, key: str) -> pl.Series:
    """The texts as a key of kind ``key``: "date", or "<unit>" / "<unit> <zone>"."""
    values = [None if t is None else datetime.fromisoformat(t) for t in texts]
    if key == "date":
        return pl.Series(values, dtype=pl.Datetime("us")).dt.date()
    unit, _, zone = key.partition(" ")
    series = pl.Series(values, dtype=pl.Datetime(unit))
    return series.dt.replace_time_zone(zone) if zone else series


def _calendar_frames(key: str):
    right = pl.DataFrame(
        {
            "t": _times(_RIGHT_TIMES, key),
            "g": ["a", "b"] * 5 + ["a"],
            "row": range(len(_RIGHT_TIMES)),
        }
    )
    left = pl.DataFrame(
        {
            "t": _times(_LEFT_TIMES, key),
            "g": ["a", "a", "b", "a", "b", "a", "b", "a", "b"] + ["a", "b"] * 2,
        }
    )
    return left, right


@pytest.mark.parametrize("tolerance", ["1mo", "1q", "1y", "1mo15d", "2mo12h"])
@pytest.mark.parametrize("key", ["date", "ms", "us Europe/Amsterdam", "ns UTC", "ns"])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_calendar_tolerances_follow_offset_by(tolerance, key, strategy):
    left, right = _calendar_frames(key)
    options = dict(on="t", strategy=strategy, tolerance=tolerance, check_sortedness=False)
    for by in (None, "g"):
        for exact in (True, False):
            got = join_asof(left, right, by=by, allow_exact_matches=exact, **options, device="cpu")
            want = _calendar_expected(left, right, tolerance, strategy, by=by, exact=exact)
            assert _matched_rows(got) == want, (by, exact, got)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_calendar_tolerances_on_every_device_and_lazily(device, strategy):
    left, right = _calendar_frames("us Europe/Amsterdam")
    options = dict(on="t", by="g", strategy=strategy, tolerance="1mo", check_sortedness=False)
    want = _calendar_expected(left, right, "1mo", strategy, by="g")
    assert _matched_rows(join_asof(left, right, **options, device=device)) == want
    lazy = join_asof(left.lazy(), right.lazy(), **options, device=device)
    assert isinstance(lazy, pl.LazyFrame)
    assert _matched_rows(lazy.collect()) == want
    assert _matched_rows(left.asofgpu.join_asof(right, **options, device=device)) == want


def test_month_ends_saturate_and_leap_years_count():
    """2024-03-31 reaches back to 2024-02-29 by "1mo" (2023-03-31 only to 2023-02-28), and
    2024-02-29 ahead to 2025-02-28 by "1y"."""
    right = pl.DataFrame(
        {"d": [date(2023, 2, 27), date(2024, 2, 28), date(2024, 2, 29)], "v": [1, 2, 3]}
    )
    left = pl.DataFrame({"d": [date(2024, 3, 31), date(2024, 3, 30), date(2023, 3, 31)]})
    got = join_asof(left, right, on="d", tolerance="1mo", check_sortedness=False, device="cpu")
    assert got["v"].to_list() == [3, 3, None]
    ahead = pl.DataFrame({"d": [date(2025, 2, 28), date(2025, 3, 1)], "v": [1, 2]})
    at = pl.DataFrame({"d": [date(2024, 2, 29)]})
    got = join_asof(at, ahead, on="d", strategy="forward", tolerance="1y", device="cpu")
    assert got["v"].to_list() == [1]


def test_calendar_days_follow_the_zone_with_months():
    """ "1mo1d" from 2024-11-27 12:00 in Amsterdam reaches back to 2024-10-26 12:00, across the
    night the clocks went back: 25 hours more than the same wall clocks in UTC."""
    right = pl.DataFrame({"t": [datetime(2024, 10, 26, 12)], "v": [1]})
    left = pl.DataFrame({"t": [datetime(2024, 11, 27, 12)]})
    for zone in ("Europe/Amsterdam", "UTC"):
        zoned = [f.with_columns(pl.col("t").dt.replace_time_zone(zone)) for f in (left, right)]
        got = join_asof(*zoned, on="t", tolerance="1mo1d", device="cpu")
        assert got["v"].to_list() == [1]
        shorter = join_asof(*zoned, on="t", tolerance="1mo23h", device="cpu")
        assert shorter["v"].to_list() == [None], zone


def test_days_on_a_zoned_key_stay_polars_fixed_ones():
    """polars reads "1d" as 24 hours, zone or not: that stays polars' own answer."""
    fall_back = [datetime(2024, 10, 26, 12), datetime(2024, 10, 27, 12)]  # 25 h apart there
    frame = pl.DataFrame({"t": fall_back, "v": [1, 2]}).with_columns(
        pl.col("t").dt.replace_time_zone("Europe/Amsterdam")
    )
    left, right = frame.slice(1).drop("v"), frame.slice(0, 1)
    for tolerance in ("1d", "1w", "25h"):
        expected = left.join_asof(right, on="t", tolerance=tolerance)
        assert_frame_equal(
            join_asof(left, right, on="t", tolerance=tolerance, device="cpu"), expected
        )
    assert join_asof(left, right, on="t", tolerance="1d", device="cpu")["v"].to_list() == [None]


# --------------------------------------------------------------------------- a column per left row


def _column_frames(kind: str, seed: int):
    """Unsorted left and right frames of key ``kind``, with by groups, and the left's
    tolerances: a Series (in the key's physical unit or as durations) and their physical
    values for the oracle (None: no limit)."""
    rng = np.random.default_rng(seed)
    n_left, n_right = 12, 15
    left_keys = [None if rng.random() < 0.1 else int(v) for v in rng.integers(0, 60, n_left)]
    right_keys = [int(v) for v in rng.integers(0, 60, n_right)]
    ticks = [None if rng.random() < 0.2 else int(v) for v in rng.integers(0, 12, n_left)]
    physical = ticks
    if kind == "int":
        dtype, tolerances = pl.Int32, pl.Series(ticks, dtype=pl.Int64)
    elif kind == "float":
        dtype = pl.Float64
        tolerances = pl.Series([None if t is None else t + 0.5 for t in ticks])
        physical = [None if t is None else t + 0.5 for t in ticks]
    elif kind == "date days":
        dtype, tolerances = pl.Date, pl.Series(ticks, dtype=pl.Int32)
    elif kind == "date durations":  # 1 day and 23 hours is 1 day: whole days, rounded down
        dtype = pl.Date
        tolerances = pl.Series(
            [None if t is None else timedelta(days=t, hours=23) for t in ticks],
            dtype=pl.Duration("ms"),
        )
    elif kind == "ms numbers":  # numbers in the key's own unit, as polars reads one
        dtype, tolerances = pl.Datetime("ms"), pl.Series(ticks, dtype=pl.UInt16)
    else:  # durations of another unit on a zoned key
        dtype = pl.Datetime("us", "Europe/Amsterdam")
        tolerances = pl.Series(ticks, dtype=pl.Int64).cast(pl.Duration("ns"))
        tolerances = tolerances * 1000 + pl.Series([999] * n_left).cast(pl.Duration("ns"))
    right = pl.DataFrame(
        {
            "t": pl.Series(right_keys).cast(dtype),
            "g": [str(g) for g in rng.choice(["a", "b"], n_right)],
            "row": range(n_right),
        }
    )
    left = pl.DataFrame(
        {
            "t": pl.Series(left_keys).cast(dtype),
            "g": [str(g) for g in rng.choice(["a", "b"], n_left)],
            "staleness": tolerances,
        }
    )
    return left, right, tolerances, physical


@pytest.mark.parametrize(
    "kind", ["int", "float", "date days", "date durations", "ms numbers", "us zoned durations"]
)
@pytest.mark.parametrize("form", ["series", "expr", "name"])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_each_left_row_keeps_its_own_tolerance(kind, form, strategy):
    for seed in range(2):
        left, right, tolerances, physical = _column_frames(kind, seed)
        tolerance = {"series": tolerances, "expr": pl.col("staleness"), "name": "staleness"}[form]
        options = dict(on="t", strategy=strategy, tolerance=tolerance, check_sortedness=False)
        for by, exact in ((None, True), ("g", True), ("g", False)):
            got = join_asof(left, right, by=by, allow_exact_matches=exact, **options, device="cpu")
            want = _column_expected(left, right, physical, strategy, by=by, exact=exact)
            assert _matched_rows(got) == want, (seed, by, exact)


@pytest.mark.parametrize("form", ["series", "expr", "name"])
def test_a_column_on_every_device_and_lazily(device, form):
    left, right, tolerances, physical = _column_frames("ms numbers", 3)
    tolerance = {"series": tolerances, "expr": pl.col("staleness"), "name": "staleness"}[form]
    options = dict(on="t", by="g", strategy="nearest", tolerance=tolerance, check_sortedness=False)
    want = _column_expected(left, right, physical, "nearest", by="g")
    assert _matched_rows(join_asof(left, right, **options, device=device)) == want
    lazy = join_asof(left.lazy(), right.lazy(), **options, device=device)
    assert _matched_rows(lazy.collect()) == want
    assert _matched_rows(left.lazy().asofgpu.join_asof(right.lazy(), **options).collect()) == want


def test_an_expression_is_evaluated_on_the_left_frame():
    """Any expression on the left's columns; a scalar is broadcast to every row."""
    left = pl.DataFrame({"t": [10, 20, 30], "stale": [1, 2, 3]})
    right = pl.DataFrame({"t": [5, 16, 24], "v": [1, 2, 3]})
    got = join_asof(left, right, on="t", tolerance=pl.col("stale") * 2, device="cpu")
    assert got["v"].to_list() == [None, 2, 3]
    got = join_asof(left, right, on="t", tolerance=pl.lit(5), device="cpu")
    assert got["v"].to_list() == [1, 2, None]
    lazy = join_asof(
        left.lazy().with_columns(stale=pl.col("stale") * 10),
        right.lazy(),
        on="t",
        tolerance=pl.col("stale"),
        device="cpu",
    )
    assert lazy.collect()["v"].to_list() == [1, 2, 3]


def test_a_fixed_tolerance_is_still_polars_own():
    left = pl.DataFrame({"t": [datetime(2024, 1, 1, 0, 0, s) for s in (3, 7, 20)], "x": [1, 2, 3]})
    right = pl.DataFrame({"t": [datetime(2024, 1, 1, 0, 0, s) for s in (1, 6, 10)], "v": [1, 2, 3]})
    for strategy in STRATEGIES:
        for tolerance in ("2s", "1s", timedelta(seconds=4), 2_000_000, "-3s"):
            options = dict(on="t", strategy=strategy, tolerance=tolerance)
            expected = left.join_asof(right, **options)
            assert_frame_equal(join_asof(left, right, **options, device="cpu"), expected)
            lazy = join_asof(left.lazy(), right.lazy(), **options, device="cpu").collect()
            assert_frame_equal(lazy, expected)
    # a name that is no column and no duration is polars' to refuse, as before
    with pytest.raises(InvalidOperationError, match="expected leading integer"):
        join_asof(left, right, on="t", tolerance="stale", device="cpu")


def _zoned(times, tz):
    return pl.DataFrame({"t": times}).with_columns(pl.col("t").dt.replace_time_zone(tz))


@pytest.mark.parametrize(
    ("left", "right", "tolerance", "matched"),
    [
        # 36 hours back from March 3 is 12:00 on March 1: out of reach (offset_by: in reach)
        ([date(2024, 3, 3)], [date(2024, 3, 1)], "0mo36h", False),
        ([date(2024, 3, 3)], [date(2024, 3, 1)], "0y1d12h", False),
        ([date(1969, 7, 3)], [date(1969, 7, 2)], "0mo2h", False),
        # 48 hours back across London's clock change: in reach (two calendar days: not)
        (
            _zoned([datetime(2024, 4, 1, 12)], "Europe/London"),
            _zoned([datetime(2024, 3, 30, 11, 30)], "Europe/London"),
            "0q2d",
            True,
        ),
        ([datetime(2024, 1, 3)], [datetime(2024, 1, 2)], "-0mo2d", True),  # polars drops "-"
    ],
)
def test_a_duration_of_no_months_is_polars_own(left, right, tolerance, matched):
    """A string that counts months, quarters or years of 0 is one polars reads itself, as
    the fixed duration of its other parts: asofgpu read it as a calendar one (and refused
    "-0mo2d", which polars reads as 2 days)."""
    left = left if isinstance(left, pl.DataFrame) else pl.DataFrame({"t": left})
    right = (right if isinstance(right, pl.DataFrame) else pl.DataFrame({"t": right})).with_columns(
        v=pl.lit(1)
    )
    for strategy in STRATEGIES:
        options = dict(on="t", strategy=strategy, tolerance=tolerance)
        expected = left.join_asof(right, **options)
        assert_frame_equal(join_asof(left, right, **options, device="cpu"), expected)
        lazy = join_asof(left.lazy(), right.lazy(), **options, device="cpu").collect()
        assert_frame_equal(lazy, expected)
    backward = join_asof(left, right, on="t", tolerance=tolerance, device="cpu")
    assert backward["v"].to_list() == ([1] if matched else [None])


# --------------------------------------------------------------------------- errors


def _ints():
    left = pl.DataFrame({"t": [1, 2, 3], "tol": [1, 1, 1]})
    return left, pl.DataFrame({"t": [0, 1], "v": [1, 2]})


@pytest.mark.parametrize(
    "key", [[1, 2], [1.0, 2.0], [timedelta(1), timedelta(2)], ["a", "b"], [False, True]]
)
def test_a_calendar_duration_on_a_key_without_months_is_polars_own_error(key):
    """Only Date and Datetime keys take asofgpu's calendar durations; on any other key polars
    sees the tolerance and refuses it, eager and lazy, with its own error (asofgpu had its
    own words, and on text keys polars' check of a tolerance of 0)."""
    left, right = pl.DataFrame({"t": key}), pl.DataFrame({"t": key[:1], "v": [1]})
    for tolerance in ("1mo", "1q"):
        with pytest.raises(ComputeError, match="month offset") as theirs:
            left.join_asof(right, on="t", tolerance=tolerance)
        with pytest.raises(ComputeError) as ours:
            join_asof(left, right, on="t", tolerance=tolerance, device="cpu")
        assert str(ours.value) == str(theirs.value)
        lazy = join_asof(left.lazy(), right.lazy(), on="t", tolerance=tolerance, device="cpu")
        with pytest.raises(ComputeError, match="month offset"):
            lazy.collect()


def test_a_calendar_duration_is_not_negative_and_polars_reads_it():
    days = pl.DataFrame({"t": [date(2024, 1, 1)]})
    with pytest.raises(ValueError, match=r"tolerance must be non-negative, got '-1mo'"):
        join_asof(days, days, on="t", tolerance="-1mo", device="cpu")
    with pytest.raises(InvalidOperationError, match="unit: 'MO' not supported"):
        join_asof(days, days, on="t", tolerance="1MO", device="cpu")  # polars' own message


def test_a_name_that_is_also_a_duration_is_ambiguous():
    left = pl.DataFrame({"t": [date(2024, 1, 1)], "1mo": [3]})
    right = pl.DataFrame({"t": [date(2023, 12, 31)], "v": [1]})
    message = r"tolerance '1mo' is both a column of the left frame and a duration string; pass pl.col\('1mo'\)"
    with pytest.raises(ValueError, match=message):
        join_asof(left, right, on="t", tolerance="1mo", device="cpu")
    with pytest.raises(ValueError, match=message):
        join_asof(left.lazy(), right.lazy(), on="t", tolerance="1mo", device="cpu")
    got = join_asof(left, right, on="t", tolerance=pl.col("1mo"), device="cpu")
    assert got["v"].to_list() == [1]


def test_a_series_of_another_length_is_refused():
    left, right = _ints()
    message = r"tolerance is a Series of 2 values but the left frame has 3 rows"
    with pytest.raises(ValueError, match=message):
        join_asof(left, right, on="t", tolerance=pl.Series([1, 2]), device="cpu")
    lazy = join_asof(left.lazy(), right.lazy(), on="t", tolerance=pl.Series([1, 2]), device="cpu")
    with pytest.raises(ValueError, match=message):  # checked at collect, on the collected left
        lazy.collect()


def test_an_expression_of_another_length_is_refused_by_name():
    """Review finding: polars' ShapeError named asofgpu's internal column."""
    left, right = _ints()
    message = r"tolerance is an expression of 2 values but the left frame has 3 rows"
    with pytest.raises(ValueError, match=message):
        join_asof(left, right, on="t", tolerance=pl.col("t").head(2), device="cpu")
    with pytest.raises(ValueError, match=message):
        join_asof(left, right, on="t", tolerance=pl.lit(pl.Series([1, 2])), device="cpu")


@pytest.mark.parametrize(
    ("tolerance", "error", "message"),
    [
        (
            pl.Series([1, -1, 2]),
            ValueError,
            r"tolerance must be non-negative, got -1 at left row 1",
        ),
        (
            pl.Series([1.0, float("nan"), 2.0]),
            ValueError,
            r"tolerance must be a non-negative number, got NaN at left row 1",
        ),
        (
            pl.Series(["1", "2", "3"]),
            TypeError,
            r"tolerance must be a number, a duration or a column of them",
        ),
        (pl.col("t").cast(pl.String), TypeError, r"tolerance must be a number, a duration"),
        (pl.Series([timedelta(1)] * 3), TypeError, r"tolerance: durations need a temporal key"),
    ],
)
def test_bad_entries_are_refused_naming_tolerance(tolerance, error, message):
    left, right = _ints()
    with pytest.raises(error, match=message):
        join_asof(left, right, on="t", tolerance=tolerance, device="cpu")


def test_polars_own_errors_still_come_first():
    """The dry run still checks every other argument, a column tolerance or not."""
    left, right = _ints()
    with pytest.raises(InvalidOperationError, match="not sorted"):
        join_asof(left.reverse(), right, on="t", tolerance=pl.col("tol"), device="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="strategy"):
            join_asof(left, right, on="t", strategy="sideways", tolerance="tol", device="cpu")


@pytest.mark.parametrize(
    ("left_type", "right_type", "strategy"),
    [
        (pl.Float32, pl.Float32, "backward"),
        (pl.Float32, pl.Float32, "forward"),
        (pl.Float32, pl.Float32, "nearest"),
        (pl.Float32, pl.Float64, "backward"),
        (pl.Float64, pl.Float32, "forward"),
    ],
)
def test_a_tolerance_on_float32_keys_is_rounded_as_polars_rounds_it(
    left_type, right_type, strategy
):
    """Both keys Float32: polars casts the tolerance to Float32, so 0.2 reaches a key 0.2f
    away (0.20000000298 as a double); with a Float64 side it stays 0.2 and does not."""
    left = pl.DataFrame({"t": pl.Series([0.2, 1.2, 5.0], dtype=left_type)})
    right = pl.DataFrame({"t": pl.Series([0.0, 1.0, 5.2], dtype=right_type), "v": [0, 1, 2]})
    ours = join_asof(left, right, on="t", strategy=strategy, tolerance=0.2, device="cpu")
    theirs = left.join_asof(right, on="t", strategy=strategy, tolerance=0.2)
    assert_frame_equal(ours, theirs)
