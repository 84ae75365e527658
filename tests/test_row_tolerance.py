"""Per-row tolerances (issue 22, first part): ``tolerance`` as a column, one distance per left
row, in ``AsofJoin.join``, ``asof_join`` and ``join_asof``, on every backend. A row's answer
is the oracle's with that row's tolerance (a null one: no limit)."""

from __future__ import annotations

import datetime

import numpy as np
import pyarrow as pa
import pytest

import asofgpu as ag
from conftest import to_host
from oracle import NO_MATCH, oracle, window_oracle


def _expected(left_keys, right_keys, left_groups, right_groups, tolerances, **options):
    """Each left row joined alone with its own tolerance (the oracle's scalar rule)."""
    out = []
    for i, tol in enumerate(tolerances):
        row = oracle(
            [left_keys[i]],
            right_keys,
            None if left_groups is None else [left_groups[i]],
            right_groups,
            tolerance=tol,
            **options,
        )
        out.append(row[0])
    return out


@pytest.mark.parametrize("kind", ["int", "float"])
@pytest.mark.parametrize("strategy", ["backward", "forward", "nearest"])
@pytest.mark.parametrize("seed", range(3))
def test_each_row_keeps_its_own_tolerance(device, small, kind, strategy, seed):
    rng = np.random.default_rng(seed)
    n_left, n_right = int(rng.integers(1, small)), int(rng.integers(0, small))
    if kind == "int":
        left = [int(v) for v in rng.integers(-20, 20, n_left)]
        right = [int(v) for v in rng.integers(-20, 20, n_right)]
        tols = [None if rng.random() < 0.2 else int(v) for v in rng.integers(0, 6, n_left)]
        arrow = pa.int64()
    else:
        pool = [-2.5, -0.0, 0.0, 1.25, 3.0, 7.5, np.inf, np.nan]
        left = [float(v) for v in rng.choice(pool, n_left)]
        right = [float(v) for v in rng.choice(pool, n_right)]
        tols = [
            None if rng.random() < 0.2 else float(v)
            for v in rng.choice([0, 0.5, 2.0, np.inf], n_left)
        ]
        arrow = pa.float64()
    groups_left = [str(g) for g in rng.choice(["a", "b"], n_left)]
    groups_right = [str(g) for g in rng.choice(["a", "b"], n_right)]
    tolerance = pa.array(tols, pa.float64() if kind == "float" else pa.int64())
    for exact in (True, False):
        options = dict(strategy=strategy, allow_exact_matches=exact)
        want = _expected(
            left, right, [(g,) for g in groups_left], [(g,) for g in groups_right], tols, **options
        )
        one_shot = ag.asof_join(
            pa.array(left, arrow),
            pa.array(right, arrow),
            pa.array(groups_left),
            pa.array(groups_right),
            tolerance=tolerance,
            device=device,
            **options,
        )
        prepared = ag.AsofJoin(pa.array(right, arrow), pa.array(groups_right), device=device)
        probed = prepared.join(
            pa.array(left, arrow), pa.array(groups_left), tolerance=tolerance, **options
        )
        assert to_host(one_shot).tolist() == want
        assert to_host(probed).tolist() == want


def test_integer_extremes_never_overflow(device):
    """Distances up to 2**64 - 1 compare exactly against tolerances of that size."""
    lo, hi = -(2**63), 2**63 - 1
    right = np.array([lo], dtype=np.int64)
    left = np.array([hi, hi], dtype=np.int64)
    tolerance = np.array([2**64 - 1, 2**64 - 2], dtype=np.uint64)
    got = ag.asof_join(left, right, tolerance=tolerance, device=device)
    assert to_host(got).tolist() == [0, NO_MATCH]


def test_durations_and_units(device):
    """Durations per row on timestamp keys; numbers in the right key's unit even where the keys
    meet in the left's finer unit (1.5 s on seconds is 1.5e9 ns)."""
    right = pa.array([0, 10, 20], pa.timestamp("s"))
    left = pa.array([5, 12, 25, 30], pa.timestamp("s"))
    per_row = pa.array([5, 1, None, 9], pa.duration("s"))
    got = ag.asof_join(left, right, tolerance=per_row, device=device)
    assert to_host(got).tolist() == [0, NO_MATCH, 2, NO_MATCH]
    millis = pa.array([1_200, 11_600, 21_000], pa.timestamp("ms"))
    numbers = np.array([1.5, 1.5, 1.0])
    got = ag.asof_join(millis, right, tolerance=numbers, device=device)
    assert to_host(got).tolist() == [0, NO_MATCH, 2]
    as_numpy = np.array([1500, 1000], dtype="timedelta64[ms]")
    got = ag.asof_join(millis[:2], right, tolerance=as_numpy, device=device)
    assert to_host(got).tolist() == [0, NO_MATCH]


def test_a_column_of_numbers_in_a_coarser_unit_counts_ticks_as_a_scalar_does(device):
    """2.675 s is 2674.999... ms: a scalar counts 2674 ticks of the left's milliseconds, and
    so must a column of it, whose float product rounded up to 2675 (a match a tick too far),
    in joins and in windows alike; and every number the product makes whole is kept."""
    right = pa.array([0], pa.timestamp("s"))
    left = pa.array([2675, 2674, 3000, 500], pa.timestamp("ms"))
    numbers = np.array([2.675, 2.675, 3.0, 0.5])
    for tolerance in (numbers, pa.array(numbers)):
        got = ag.asof_join(left, right, tolerance=tolerance, device=device)
        assert to_host(got).tolist() == [NO_MATCH, 0, 0, 0]
    each = [
        to_host(ag.asof_join(left[k : k + 1], right, tolerance=float(v), device=device))[0]
        for k, v in enumerate(numbers)
    ]
    assert each == [NO_MATCH, 0, 0, 0]
    trades, quotes = pa.table({"t": left}), pa.table({"t": right, "v": [1]})
    for before in (2.675, numbers):
        counts = ag.window_join(
            trades.slice(0, 2),
            quotes,
            on="t",
            before=before if np.isscalar(before) else before[:2],
            aggs={"v": "count"},
            device=device,
        )["v_count"].to_pylist()
        assert counts == [0, 1]


def test_join_asof_takes_a_column_per_left_row():
    trades = pa.table({"t": [5, 12, 25], "staleness": [5, 1, 10]})
    quotes = pa.table({"t": [0, 10, 20], "bid": [1.0, 2.0, 3.0]})
    out = ag.join_asof(trades, quotes, on="t", tolerance=trades["staleness"], device="cpu")
    assert out["bid"].to_pylist() == [1.0, None, 3.0]


def test_a_prepared_join_keeps_scalar_tolerances_as_they_were(device):
    prepared = ag.AsofJoin(np.array([0, 10, 20]), device=device)
    left = np.array([5, 12, 25])
    per_row = prepared.join(left, tolerance=np.array([5, 1, 4]))
    assert to_host(per_row).tolist() == [0, NO_MATCH, NO_MATCH]
    assert to_host(prepared.join(left, tolerance=2)).tolist() == [NO_MATCH, 1, NO_MATCH]


@pytest.mark.parametrize(
    ("tolerance", "error", "message"),
    [
        (np.array([1, -1, 2]), ValueError, r"tolerance must be non-negative, got -1 at left row 1"),
        (np.array([1.0, np.nan, 2.0]), ValueError, r"got NaN at left row 1"),
        (np.array([1, 2]), ValueError, r"tolerance has 2 rows but left_on has 3"),
        (pa.array(["1", "2", "3"]), TypeError, r"got a column of string"),
        (pa.array([1, 2, 3], pa.duration("s")), TypeError, r"durations need a temporal key"),
        ([1, 2, 3], TypeError, r"tolerance must be a column"),
    ],
)
def test_row_tolerance_errors(tolerance, error, message):
    with pytest.raises(error, match=message):
        ag.asof_join(np.array([1, 2, 3]), np.array([0, 1]), tolerance=tolerance, device="cpu")


def test_a_timedelta_scalar_still_needs_a_temporal_key():
    with pytest.raises(TypeError, match="tolerance: a duration needs a temporal key"):
        ag.asof_join(
            np.array([1]), np.array([0]), tolerance=datetime.timedelta(seconds=1), device="cpu"
        )


# --------------------------------------------------------------------------- calendar tolerances

# (their oracle is polars' offset_by: each test that reads polars skips without it, not the
# module, whose other tests run on the GPU check's machine, which has no polars)


def _calendar_expected(left, right, tolerance, strategy, nearest_tie):
    """The contract read literally: each left key's bounds by polars' offset_by (backward:
    keys >= x.offset_by("-" + tol); forward: keys <= x.offset_by(tol)); nearest checks each
    direction's candidate against its own bound, then picks as it would (a forward pick under
    polars' rule: the last row of its key)."""
    pl = pytest.importorskip("polars")
    series = pl.from_arrow(left)
    low = (series.dt.offset_by("-" + tolerance)).to_physical().to_list()
    high = (series.dt.offset_by(tolerance)).to_physical().to_list()
    xs = series.to_physical().to_list()
    keys = pl.from_arrow(right).to_physical().to_list()
    out = []
    for x, lo, hi in zip(xs, low, high):
        if x is None:
            out.append(NO_MATCH)
            continue
        b = oracle([x], keys, strategy="backward", tolerance=x - lo)[0]
        f = oracle([x], keys, strategy="forward", tolerance=hi - x)[0]
        if strategy == "backward":
            out.append(b)
        elif strategy == "forward":
            out.append(f)
        elif b != NO_MATCH and f != NO_MATCH:
            out.append(oracle([x], keys, strategy="nearest", nearest_tie=nearest_tie)[0])
        elif b != NO_MATCH:
            out.append(b)
        elif f != NO_MATCH and nearest_tie == "forward":
            out.append(oracle([keys[f]], keys, strategy="backward")[0])  # its key's last row
        else:
            out.append(f)
    return out


def _times(texts, unit, tz):
    pl = pytest.importorskip("polars")
    values = pl.Series([datetime.datetime.fromisoformat(t) for t in texts]).cast(pl.Datetime(unit))
    if tz:
        values = values.dt.replace_time_zone(tz)
    return values.to_arrow()


_RIGHT = [
    "2024-01-31 12:00",
    "2024-02-29 12:00",
    "2024-02-29 12:00",
    "2024-03-01 00:00",
    "2024-03-30 18:00",
    "2024-04-30 12:00",
    "2024-10-26 13:00",
    "2024-10-27 13:00",
    "2024-11-15 00:00",
]
_LEFT = [
    "2024-03-31 12:00",
    "2024-02-10 00:00",
    "2024-03-31 11:59",
    "2024-05-31 12:00",
    "2024-10-27 12:00",
    "2024-10-28 12:30",
    "2024-12-31 00:00",
    "2024-01-01 00:00",
]


@pytest.mark.parametrize("tolerance", ["1mo", "1d", "1mo15d", "2mo12h", "1q", "1w"])
@pytest.mark.parametrize("tz", [None, "Europe/Amsterdam"])
@pytest.mark.parametrize("strategy", ["backward", "forward", "nearest"])
def test_calendar_tolerances_follow_offset_by(device, tolerance, tz, strategy):
    right = _times(_RIGHT, "us", tz)
    left = _times(_LEFT, "ms", tz)  # another unit: the keys meet in microseconds
    for tie in ("forward", "backward"):
        want = _calendar_expected(left.cast(right.type), right, tolerance, strategy, tie)
        got = ag.AsofJoin(right, device=device).join(
            left, strategy=strategy, tolerance=tolerance, nearest_tie=tie
        )
        assert to_host(got).tolist() == want, (tolerance, tz, strategy, tie)


def test_month_ends_saturate_and_days_follow_the_zone():
    """2024-03-31 minus 1mo is 2024-02-29; 2024-10-27 12:00 in Amsterdam minus 1d is 25 hours
    earlier (the clocks went back that night)."""
    pl = pytest.importorskip("polars")
    right = pl.Series(
        [datetime.date(2024, 2, 28), datetime.date(2024, 2, 29)], dtype=pl.Date
    ).to_arrow()
    left = pl.Series([datetime.date(2024, 3, 31)], dtype=pl.Date).to_arrow()
    prepared = ag.AsofJoin(right, device="cpu")
    assert prepared.join(left, tolerance="1mo").tolist() == [1]
    assert prepared.join(pa.array([datetime.date(2024, 3, 30)]), tolerance="1mo").tolist() == [1]
    zoned = _times(["2024-10-26 11:30", "2024-10-26 12:30"], "ns", "Europe/Amsterdam")
    at = _times(["2024-10-27 12:00"], "ns", "Europe/Amsterdam")
    prepared = ag.AsofJoin(zoned, device="cpu")
    assert prepared.join(at, tolerance="1d").tolist() == [1]  # 12:30 the day before: 24.5 h
    assert prepared.join(at, tolerance="24h").tolist() == [NO_MATCH]


def test_fixed_duration_strings_are_fixed():
    right = pa.array([0, 10**9], pa.timestamp("ns"))
    got = ag.asof_join(pa.array([3 * 10**9], pa.timestamp("ns")), right, tolerance="2s")
    assert got.tolist() == [1]
    assert ag.asof_join(
        pa.array([4 * 10**9], pa.timestamp("ns")), right, tolerance="2s"
    ).tolist() == [NO_MATCH]


@pytest.mark.parametrize(
    ("left", "right", "tolerance", "error", "message"),
    [
        (
            np.array([1]),
            np.array([0]),
            "1mo",
            TypeError,
            r"tolerance '1mo' has calendar units, which need a date or timestamp key; left_on is int64",
        ),
        (
            pa.array([1], pa.timestamp("s")),
            pa.array([0], pa.timestamp("s")),
            "-1mo",
            ValueError,
            r"tolerance must be non-negative, got '-1mo'",
        ),
        (
            pa.array([1], pa.timestamp("s")),
            pa.array([0], pa.timestamp("s")),
            "1mox",
            ValueError,
            r"tolerance: '1mox': unknown unit 'mox'",
        ),
        (
            pa.array([1], pa.timestamp("s")),
            pa.array([0], pa.timestamp("s")),
            "1mo5x",
            ValueError,
            r"tolerance '1mo5x' is not a duration polars reads",
        ),
        (  # Samoa skipped 2011-12-30: a day back from noon on the 31st is no time there
            pa.array([1_325_282_400], pa.timestamp("s", "Pacific/Apia")),
            pa.array([0], pa.timestamp("s", "Pacific/Apia")),
            "1d",
            ValueError,
            r"tolerance '1d': polars' offset_by cannot move every key by it: .*non-existent in "
            r"time zone 'Pacific/Apia'\. Hint: convert the keys to UTC",
        ),
        (  # the year 318,857: past polars' calendar, where offset_by panics (a BaseException)
            pa.array([10**13], pa.timestamp("s", "Europe/London")),
            pa.array([0], pa.timestamp("s", "Europe/London")),
            "1d",
            ValueError,
            r"tolerance '1d': polars' offset_by cannot move every key of left_on by it "
            r"\(.*\): its calendar ends about 262,000 years from 1970",
        ),
        (
            np.array([1]),
            np.array([0]),
            "5s",
            TypeError,
            r"tolerance: a duration needs a temporal key",
        ),
        (
            np.array([1]),
            np.array([0]),
            "soon",
            ValueError,
            r"tolerance: expected a duration such as 5s",
        ),
    ],
)
def test_calendar_tolerance_errors(left, right, tolerance, error, message):
    pytest.importorskip("polars")  # (some zones' cases reach polars before their error)
    with pytest.raises(error, match=message):
        ag.asof_join(left, right, tolerance=tolerance, device="cpu")


# --------------------------------------------------------------------------- window reaches


def _window_expected(left, right, befores, afters, prevailing):
    """window_oracle row by row, each left row with its own reach."""
    return [
        window_oracle([x], None, right, None, b, a, prevailing)[0]
        for x, b, a in zip(left, befores, afters)
    ]


@pytest.mark.parametrize("prevailing", [False, True])
def test_window_reaches_per_row(device, small, prevailing):
    rng = np.random.default_rng(11)
    right = [int(v) for v in np.sort(rng.integers(0, 50, small))]
    left = [int(v) for v in rng.integers(0, 50, small)]
    befores = [int(v) for v in rng.integers(0, 8, small)]
    afters = [None if rng.random() < 0.2 else int(v) for v in rng.integers(0, 4, small)]
    windows = ag.AsofJoin(np.array(right), device=device).windows(
        np.array(left),
        before=np.array(befores),
        after=pa.array(afters, pa.int64()),
        prevailing=prevailing,
    )
    starts, ends, rows = (to_host(a) for a in (windows.starts, windows.ends, windows.rows))
    got = [rows[s:e].tolist() for s, e in zip(starts, ends)]
    limitless = [2**64 - 1 if a is None else a for a in afters]
    assert got == _window_expected(left, right, befores, limitless, prevailing)


def test_window_reaches_by_the_calendar(device):
    """before="1mo" from 2024-03-31 reaches 2024-02-29 (31 days), from 2024-04-30 reaches
    2024-03-30 (31 days too: 30 days of April and one of March)."""
    right = pa.array(
        [datetime.date(2024, 2, 28), datetime.date(2024, 2, 29), datetime.date(2024, 3, 30)],
        pa.date32(),
    )
    left = pa.array([datetime.date(2024, 3, 31), datetime.date(2024, 4, 30)], pa.date32())
    windows = ag.AsofJoin(right, device=device).windows(left, before="1mo")
    rows = to_host(windows.rows)
    got = [rows[s:e].tolist() for s, e in zip(to_host(windows.starts), to_host(windows.ends))]
    assert got == [[1, 2], [2]]
    table = ag.window_join(
        pa.table({"d": left}),
        pa.table({"d": right, "v": [1, 2, 3]}),
        on="d",
        before="1mo",
        aggs={"v": "sum"},
        device=device,
    )
    assert table["v_sum"].to_pylist() == [5, 3]


def test_window_reach_errors():
    prepared = ag.AsofJoin(np.array([1, 2, 3]), device="cpu")
    with pytest.raises(ValueError, match=r"before must be non-negative, got -1 at left row 1"):
        prepared.windows(np.array([1, 2]), before=np.array([0, -1]))
    with pytest.raises(ValueError, match=r"after has 1 rows but left_on has 2"):
        prepared.windows(np.array([1, 2]), before=1, after=np.array([1]))
    with pytest.raises(TypeError, match=r"before '1mo' has calendar units, which need a date"):
        prepared.windows(np.array([1, 2]), before="1mo")


def test_splice_takes_a_calendar_tolerance_both_ways(device):
    """Each driving row's prevailing row is the backward join's under the same calendar
    tolerance, from its own key: left rows as ``asof_join(left, right)`` gives them, right
    rows as ``asof_join(right, left)`` does."""
    left = _times(_LEFT, "us", "Europe/Amsterdam")
    right = _times(_RIGHT, "us", "Europe/Amsterdam")
    left_map, right_map = (
        to_host(m).tolist() for m in ag.splice_maps(left, right, tolerance="1mo", device=device)
    )
    forward = to_host(ag.asof_join(left, right, tolerance="1mo", device=device)).tolist()
    reverse = to_host(ag.asof_join(right, left, tolerance="1mo", device=device)).tolist()
    driven_by_left = {}
    driven_by_right = {}
    for lrow, rrow in zip(left_map, right_map):
        # Keys differ between the sides here, so each output row's driver is the side whose
        # row is not the other's prevailing one: read both ways.
        if lrow != NO_MATCH and forward[lrow] == rrow:
            driven_by_left[lrow] = rrow
        if rrow != NO_MATCH and reverse[rrow] == lrow:
            driven_by_right[rrow] = lrow
    assert sorted(driven_by_left) == list(range(len(_LEFT)))
    assert sorted(driven_by_right) == list(range(len(_RIGHT)))
    assert NO_MATCH in forward and NO_MATCH in reverse  # the tolerance dropped some


# --------------------------------------------------------------------------- review regressions


def test_a_nearest_calendar_join_of_a_one_shot_call(device):
    """asof_join defers the right side's sort (its scan needs none); the nearest calendar
    join then read the right keys in row order before they existed."""
    right = _times(_RIGHT, "us", "Europe/Amsterdam")
    left = _times(_LEFT, "us", "Europe/Amsterdam")
    prepared = ag.AsofJoin(right, device=device).join(left, strategy="nearest", tolerance="1mo")
    one_shot = ag.asof_join(left, right, strategy="nearest", tolerance="1mo", device=device)
    assert to_host(one_shot).tolist() == to_host(prepared).tolist()


def test_an_infinite_tolerance_in_a_column_has_no_limit(device):
    """A float column on integer keys: inf (and anything past 2**64) is the largest
    distance, as the scalar inf is; it was cast to 0."""
    prepared = ag.AsofJoin(np.array([1, 5, 10]), device=device)
    got = prepared.join(np.array([7, 12]), tolerance=np.array([np.inf, 1e30]))
    assert (
        to_host(got).tolist()
        == to_host(prepared.join(np.array([7, 12]), tolerance=np.inf)).tolist()
    )
    windows = prepared.windows(np.array([7]), before=np.array([np.inf]))
    assert to_host(windows.lengths()).tolist() == [2]


@pytest.mark.parametrize("right", [np.array([1, 5, 9]), np.array([1.0, 5.0, 9.0])])
def test_a_column_of_untyped_nulls_has_no_limit(device, right):
    """pandas' Series([None, None]) and Arrow's nulls carry no type: every entry is null, so
    no row has a limit, as a typed column of nulls says; they were refused ("a column of
    null"). An empty batch's untyped column likewise."""
    import pandas as pd

    prepared = ag.AsofJoin(right, device=device)
    left = right[:2] + 1
    want = to_host(prepared.join(left)).tolist()
    for nulls in (
        pa.array([None, None]),
        pd.Series([None, None]),
        pa.array([None, None], pa.int64()),
    ):
        assert to_host(prepared.join(left, tolerance=nulls)).tolist() == want
    assert to_host(prepared.join(left[:0], tolerance=pa.array([]))).tolist() == []


def test_a_column_of_tolerances_against_no_right_rows(device):
    prepared = ag.AsofJoin(np.array([], np.int64), device=device)
    got = prepared.join(np.array([1, 2]), tolerance=np.array([1, 1]))
    assert to_host(got).tolist() == [NO_MATCH, NO_MATCH]


def test_polars_takes_a_reach_per_row():
    pl = pytest.importorskip("polars")
    left = pl.DataFrame({"t": [5, 9], "reach": [1, 10]})
    right = pl.DataFrame({"t": [1, 4, 8], "v": [1, 2, 3]})
    from asofgpu import polars as agpl

    got = agpl.window_join(
        left, right, on="t", before=left["reach"], aggs={"v": "sum"}, device="cpu"
    )
    assert got["v_sum"].to_list() == [2, 6]
    # On LazyFrames: the call's checks run the join on no rows, where a column of two reaches
    # was two too many ("before has 2 rows but left_on has 0").
    lazy = agpl.window_join(
        left.lazy(), right.lazy(), on="t", before=left["reach"], aggs={"v": "sum"}, device="cpu"
    )
    assert lazy.collect()["v_sum"].to_list() == [2, 6]
    pairs = agpl.range_join(left.lazy(), right.lazy(), on="t", before=left["reach"], device="cpu")
    assert pairs.collect()["v"].to_list() == [2, 1, 2, 3]


@pytest.mark.parametrize("strategy", ["backward", "forward", "nearest"])
@pytest.mark.parametrize("nearest_tie", ["forward", "backward"])
@pytest.mark.parametrize("exact", [True, False])
@pytest.mark.parametrize("seed", range(3))
def test_reaches_bound_each_direction_by_its_own_column(
    device, small, strategy, nearest_tie, exact, seed
):
    """``Reaches`` (what calendar tolerances and pandas' DateOffsets become): each row reaches
    back by one column and ahead by another; nearest checks each side's candidate against
    its own reach, then picks between those left by the usual rule."""
    from asofgpu._columns import Reaches

    rng = np.random.default_rng(seed)
    n_left, n_right = int(rng.integers(1, small)), int(rng.integers(0, small))
    left = [int(v) for v in rng.integers(-20, 20, n_left)]
    right = [int(v) for v in rng.integers(-20, 20, n_right)]
    back = [None if rng.random() < 0.2 else int(v) for v in rng.integers(0, 6, n_left)]
    ahead = [None if rng.random() < 0.2 else int(v) for v in rng.integers(0, 6, n_left)]
    groups_left = [(str(g),) for g in rng.choice(["a", "b"], n_left)]
    groups_right = [(str(g),) for g in rng.choice(["a", "b"], n_right)]
    options = dict(nearest_tie=nearest_tie, allow_exact_matches=exact)
    by_back = _expected(
        left, right, groups_left, groups_right, back, strategy="backward", allow_exact_matches=exact
    )
    by_ahead = _expected(
        left, right, groups_left, groups_right, ahead, strategy="forward", allow_exact_matches=exact
    )
    free = oracle(left, right, groups_left, groups_right, strategy="nearest", **options)
    if nearest_tie == "forward":  # polars' rule: a nearest forward pick is its key's last row
        last = {(right[j], groups_right[j]): j for j in range(n_right)}
        lone = [NO_MATCH if f == NO_MATCH else last[right[f], groups_right[f]] for f in by_ahead]
    else:
        lone = by_ahead
    want = {
        "backward": by_back,
        "forward": by_ahead,
        "nearest": [
            f if b == NO_MATCH else b if f == NO_MATCH else n
            for b, f, n in zip(by_back, lone, free, strict=True)
        ],
    }[strategy]
    prepared = ag.AsofJoin(
        pa.array(right, pa.int64()), pa.array([g for (g,) in groups_right]), device=device
    )
    got = prepared.join(
        pa.array(left, pa.int64()),
        pa.array([g for (g,) in groups_left], pa.string()),
        strategy=strategy,
        tolerance=Reaches(pa.array(back, pa.int64()), pa.array(ahead, pa.int64())),
        **options,
    )
    assert to_host(got).tolist() == want


def test_a_forward_pick_under_polars_rule_stops_at_its_groups_end(device):
    """The last row of a forward pick's key is its group's: group b's rows of the same key,
    next in the prepared order, are not it."""
    from asofgpu._columns import Reaches

    right_keys = pa.array([5, 1, 5, 5, 9, 5], pa.int64())
    right_groups = pa.array(["a", "a", "b", "a", "b", "b"])
    prepared = ag.AsofJoin(right_keys, right_groups, device=device)
    got = prepared.join(
        pa.array([4, 4], pa.int64()),
        pa.array(["a", "b"]),
        strategy="nearest",
        tolerance=Reaches(pa.array([0, 0], pa.int64()), pa.array([10, 10], pa.int64())),
    )
    assert to_host(got).tolist() == [3, 5]  # the last 5 of a (row 3) and of b (row 5)


def test_a_nearest_calendar_join_of_a_time_sorted_side_takes_a_keys_last_row():
    """Review regression: a time-sorted right side may be streamed, and the stream wrote the
    first row of a forward key where polars' rule takes the last; the cpu must agree with the
    python backend row by row (sizes large enough to stream)."""
    rng = np.random.default_rng(3)
    m, n, groups = 200_000, 20_000, 100
    right_keys = np.sort(rng.integers(0, 50_000, m)).astype("datetime64[s]")
    left_keys = np.sort(rng.integers(0, 50_000, n)).astype("datetime64[s]")
    right_groups = pa.array(rng.integers(0, groups, m))
    left_groups = pa.array(rng.integers(0, groups, n))
    options = dict(strategy="nearest", tolerance="1mo")
    want = ag.AsofJoin(right_keys, right_groups, device="python").join(
        left_keys, left_groups, **options
    )
    got = ag.AsofJoin(right_keys, right_groups, device="cpu").join(
        left_keys, left_groups, **options
    )
    assert np.array_equal(to_host(got), to_host(want))


def _on_walk(walk: str, left_keys, right_keys, left_groups, right_groups, **options):
    """The cpu's join compiled and on its thread pool, with ``walk`` forced by its threshold:
    the stream of a time-sorted right side, the cursors, a binary search a row (of left
    rows out of key order), or the one-shot merge scan; whether the probe streamed is
    checked (a threshold that no longer forces its walk would test another one)."""
    from asofgpu._backend import walks

    thresholds = {
        "stream": dict(stream_span=1 << 40, stream_group_span=0, stream_nearest_min_span=0),
        "cursor": dict(stream_span=0),
        "search": dict(search_max_rows=1 << 40),
        "scan": {},
    }[walk]
    with walks.overridden(parallel_min_rows=0, interpret_max_rows=0, **thresholds):
        if walk == "scan":
            return ag.asof_join(
                left_keys, right_keys, left_groups, right_groups, device="cpu", **options
            )
        prepared = ag.AsofJoin(right_keys, right_groups, device="cpu")
        with walks.recorded() as decisions:
            got = prepared.join(left_keys, left_groups, **options)
    assert (("streams", True) in decisions) == (walk == "stream"), decisions
    return got


@pytest.mark.parametrize("walk", ["stream", "cursor", "search", "scan"])
@pytest.mark.parametrize("strategy", ["backward", "forward", "nearest"])
@pytest.mark.parametrize("tolerance", ["column", "1mo"])
def test_every_cpu_walk_compares_each_row_with_its_own_reach(walk, strategy, tolerance):
    """The kernels compare each candidate with its row's own reach in its direction (issue
    22): each of the cpu's walks, forced by its threshold (the stream of a time-sorted
    right side, the cursors, a binary search a row of shuffled left rows, the one-shot
    merge scan), agrees with the python backend row by row, on a column of tolerances with
    nulls and on a calendar one (whose reach back and ahead differ)."""

    rng = np.random.default_rng(7)
    m, n, groups = 20_000, 4_000, 8
    day = 86_400
    # quotes in two seasons of two months, trades all year: gaps of months to reach across
    seasons = rng.integers(0, 60 * day, m) + rng.choice([0, 180 * day], m)
    right_keys = np.sort(seasons).astype("datetime64[s]")
    left_keys = np.sort(rng.integers(0, 400 * day, n)).astype("datetime64[s]")
    right_groups = pa.array(rng.integers(0, groups, m))
    left_groups = pa.array(rng.integers(0, groups, n))
    if walk == "search":  # a binary search a row is for left rows out of key order
        shuffle = rng.permutation(n)
        left_keys, left_groups = left_keys[shuffle], left_groups.take(pa.array(shuffle))
    if tolerance == "column":
        reach = rng.integers(0, 40 * day, n)
        tolerance = pa.array([None if v % 7 == 0 else int(v) for v in reach], pa.duration("s"))
    options = dict(strategy=strategy, tolerance=tolerance)
    want = ag.AsofJoin(right_keys, right_groups, device="python").join(
        left_keys, left_groups, **options
    )
    got = _on_walk(walk, left_keys, right_keys, left_groups, right_groups, **options)
    assert (to_host(want) >= 0).mean() > 0.3  # the reaches leave matches and drop some
    assert (to_host(want) < 0).mean() > 0.05
    assert np.array_equal(to_host(got), to_host(want))


def _ns(text: str) -> int:
    return int(np.datetime64(text, "ns").astype(np.int64))


@pytest.mark.parametrize(
    ("left", "tolerance", "strategy", "inside", "outside"),
    [
        # 300 years is more than an int64 of nanoseconds holds (292 years): the reach wrapped
        ("2200-01-01", "300y", "backward", "1900-01-01", "1899-12-31T23:59:59.999999999"),
        ("1700-01-01", "300y", "forward", "2000-01-01", "2000-01-01T00:00:00.000000001"),
        ("2200-01-01", "300y", "nearest", "1900-01-01", "1899-12-31T23:59:59.999999999"),
        ("1700-01-01", "1mo200000d", "forward", "2247-09-02", "2247-09-02T00:00:00.000000001"),
        # a bound past the type's range (ns keys span 1677-2262): every key within reach
        ("2200-01-01", "600y", "backward", "1677-09-22", None),
        ("2200-01-01", "1mo99999999999999999999ns", "backward", "1677-09-22", None),
        ("1700-01-01", "2000000000q", "forward", "2262-04-11", None),
    ],
)
def test_calendar_reaches_past_292_years_are_exact(
    device, left, tolerance, strategy, inside, outside
):
    """Review finding: on nanosecond keys a calendar reach of more than 2**63 ns wrapped
    ("300y" gave no match) and a part past int64 ("1mo200000d" in ticks) raised numba's typing
    error. The reach is counted exactly in 64 unsigned bits, a bound past the type's range
    is no limit."""
    assert np.datetime64("1700-02-01") + np.timedelta64(200_000, "D") == np.datetime64("2247-09-02")
    for right, want in ((inside, 0), (outside, ag.NO_MATCH)):
        if right is None:
            continue
        prepared = ag.AsofJoin(pa.array([_ns(right)], pa.timestamp("ns")), device=device)
        got = prepared.join(
            pa.array([_ns(left)], pa.timestamp("ns")), strategy=strategy, tolerance=tolerance
        )
        assert to_host(got).tolist() == [want], (right, tolerance)


@pytest.mark.parametrize("strategy", ["backward", "forward", "nearest"])
def test_a_calendar_tolerance_on_a_fixed_offset_zone(device, strategy):
    """A key at a fixed offset from UTC ("+05:30", as pandas' fixed-offset zones reach
    Arrow) takes calendar tolerances, counted on its own civil dates; polars refuses such a
    zone, so the answer is checked against the same instants in Asia/Kolkata (which polars
    counts, and which has kept +05:30 since 1945)."""
    pytest.importorskip("polars")  # (the named zone's answer: polars' offset_by)
    rng = np.random.default_rng(11)
    day = 86_400
    start = int(np.datetime64("2024-01-01", "s").astype(np.int64))
    seasons = rng.integers(0, 60 * day, 300) + rng.choice([0, 200 * day], 300)
    right = np.sort(start + seasons)
    left = rng.integers(start, start + 400 * day, 200)

    def local(text):  # a wall-clock time at +05:30, as UTC seconds
        return int(np.datetime64(text, "s").astype(np.int64)) - 19_800

    # Group c: a minute past midnight on March 31st there (still March 30th in UTC), and
    # quotes a month back and ahead by the civil date there, which UTC's dates miss.
    edge = [local("2024-03-31T00:01"), local("2024-03-31T00:01")]
    near = [local("2024-02-29T12:00"), local("2024-04-30T12:00")]
    right, left = np.concatenate([right, near]), np.concatenate([left, edge])
    groups_right = pa.array([*rng.choice(["a", "b"], 300), "c", "d"])
    groups_left = pa.array([*rng.choice(["a", "b"], 200), "c", "d"])

    def join(zone):
        prepared = ag.AsofJoin(
            pa.array(right, pa.timestamp("s", zone)), groups_right, device=device
        )
        return to_host(
            prepared.join(
                pa.array(left, pa.timestamp("s", zone)),
                groups_left,
                strategy=strategy,
                tolerance="1mo",
            )
        ).tolist()

    got, want = join("+05:30"), join("Asia/Kolkata")
    assert got == want
    assert 0 < sum(r == ag.NO_MATCH for r in got) < len(got)
    if strategy != "forward":  # 2024-02-29 12:00 there: a month back by the civil date
        assert got[-2] == 300  # reaches it (by UTC's date, March 30th, it would not)
    if strategy != "backward":  # 2024-04-30 12:00 there: past a month ahead (April 30th
        assert got[-1] == ag.NO_MATCH  # 00:01; by UTC's date, May 1st 00:01 there)


def _brute_reaches(left, left_groups, right, right_groups, back, ahead, strategy, exact, tie):
    """Each left row's match by reading every right row of its group: the latest key at or
    before (the last such row), the earliest at or after (the first such row; under polars'
    nearest rule the last), each kept within its own reach (None: no limit), the closer
    taken by ``tie``'s rule."""
    out = []
    for i, (x, g) in enumerate(zip(left, left_groups, strict=True)):
        rows = [j for j in range(len(right)) if right_groups[j] == g]
        before = [j for j in rows if (right[j] <= x if exact else right[j] < x)]
        after = [j for j in rows if (right[j] >= x if exact else right[j] > x)]
        b = f = None
        if before and strategy != "forward":
            kb = max(right[j] for j in before)
            if back[i] is None or x - kb <= back[i]:
                b = max(j for j in before if right[j] == kb)
        if after and strategy != "backward":
            kf = min(right[j] for j in after)
            if ahead[i] is None or kf - x <= ahead[i]:
                same = [j for j in after if right[j] == kf]
                f = max(same) if strategy == "nearest" and tie == "forward" else min(same)
        if b is not None and f is not None:
            gb, gf = x - right[b], right[f] - x
            take_f = gf <= gb if tie == "forward" else gf < gb
            out.append(f if take_f else b)
        else:
            out.append(NO_MATCH if b is None and f is None else b if f is None else f)
    return out


@pytest.mark.parametrize("walk", ["stream", "cursor", "search", "scan"])
@pytest.mark.parametrize("strategy", ["backward", "forward", "nearest"])
@pytest.mark.parametrize("tie", ["forward", "backward"])
@pytest.mark.parametrize("exact", [True, False])
def test_every_cpu_walk_keeps_each_direction_within_its_reach(walk, strategy, tie, exact):
    """Review finding: the walks were compared with the python backend, which runs the same
    rules, on keys too sparse to tie. Here few distinct keys (runs of equal keys, equal
    distances both ways) and a reach back and a reach ahead per row (nulls among them) are
    checked against every right row read one by one, on each cpu walk compiled."""
    from asofgpu._columns import Reaches

    rng = np.random.default_rng(17)
    m, n = 800, 200
    right = np.sort(rng.integers(0, 100, m))  # time-sorted, as the stream needs
    left = np.sort(rng.integers(-5, 105, n))
    right_groups = rng.integers(0, 3, m)
    left_groups = rng.integers(0, 3, n)
    if walk == "search":
        shuffle = rng.permutation(n)
        left, left_groups = left[shuffle], left_groups[shuffle]
    back = [None if v == 0 else int(v) - 1 for v in rng.integers(0, 6, n)]
    ahead = [None if v == 0 else int(v) - 1 for v in rng.integers(0, 6, n)]
    want = _brute_reaches(
        left.tolist(),
        left_groups.tolist(),
        right.tolist(),
        right_groups.tolist(),
        back,
        ahead,
        strategy,
        exact,
        tie,
    )
    options = dict(
        strategy=strategy,
        allow_exact_matches=exact,
        nearest_tie=tie,
        tolerance=Reaches(pa.array(back, pa.int64()), pa.array(ahead, pa.int64())),
    )
    got = _on_walk(walk, left, right, left_groups, right_groups, **options)
    assert to_host(got).tolist() == want


def test_calendar_reaches_past_what_nanoseconds_hold_are_refused_not_wrapped():
    """polars moves a nanosecond key past int64 by wrapping, and subtracts modulo 2**64: "600y"
    came out as 5,642 days and matched nothing, "300y" as a negative reach. The true reach is
    taken back; one a duration cannot hold is refused; one that fits is exact, even where the
    moved key itself lies past the type's range (2200 + 100 years)."""
    pytest.importorskip("polars")
    zone = pa.timestamp("ns", "Europe/London")
    y1970, y1684 = pa.array([0], zone), pa.array([-9 * 10**18], zone)
    assert ag.asof_join(y1970, y1684, tolerance="290y", device="cpu").tolist() == [0]
    assert ag.asof_join(y1970, y1684, tolerance="285y", device="cpu").tolist() == [NO_MATCH]
    for tolerance in ("300y", "600y", "2000y"):
        with pytest.raises(
            ValueError,
            match=rf"tolerance '{tolerance}' reaches \d+ ns from a key, past what a duration "
            r"of the key's unit holds; pass a shorter one",
        ):
            ag.asof_join(y1970, y1684, tolerance=tolerance, strategy="nearest", device="cpu")
    y2200, y2262 = pa.array([7_258_118_400 * 10**9], zone), pa.array([2**63 - 1], zone)
    got = ag.asof_join(y2200, y2262, tolerance="100y", strategy="forward", device="cpu")
    assert got.tolist() == [0]
    got = ag.asof_join(y2200, y2262, tolerance="50y", strategy="forward", device="cpu")
    assert got.tolist() == [NO_MATCH]


@pytest.mark.parametrize("unit", ["s", "us", "ns"])
def test_window_and_splice_reaches_longer_than_a_duration_holds_are_exact(device, unit):
    """A calendar reach went to the window and splice joins as an Arrow duration, which
    stops at 2**63 ticks: "300y" of nanoseconds was refused (the as-of join took it), and on
    a key of seconds or microseconds a reach past 2**64 nanoseconds (584 years, "600y", or a
    column of 650 years) was cut to 584 on its way through nanoseconds, silently. The
    kernel's own count (whole ticks up to 2**64) goes to them as it goes to the as-of join."""
    kind = pa.timestamp(unit)
    years = [1300, 1430, 1500] if unit != "ns" else [1700, 1750, 1800]
    span = "600y" if unit != "ns" else "300y"  # from 2024: 1424, or 1724
    stamp = [int(np.datetime64(f"{y}-01-01", unit).astype(np.int64)) for y in (2024, *years)]
    left = pa.table({"t": pa.array(stamp[:1], kind)})
    right = pa.table({"t": pa.array(stamp[1:], kind), "v": years})
    out = ag.window_join(
        left, right, on="t", before=span, aggs={"v": ["count", "min"]}, device=device
    )
    assert out.select(["v_count", "v_min"]).to_pylist() == [{"v_count": 2, "v_min": years[1]}]
    pairs = ag.range_join(left, right, on="t", before=span, device=device)
    assert pairs["v"].to_pylist() == years[1:]
    if unit != "ns":  # a column of 650 years of seconds: past 2**64 nanoseconds too
        reach = pa.array([650 * 365 * 86_400], pa.duration("s"))
        out = ag.window_join(left, right, on="t", before=reach, aggs={"v": "count"}, device=device)
        assert out["v_count"].to_pylist() == [2]
    # The splice join: the right row at 2024 carries the left row 'span' back at years[1].
    early = pa.table({"t": pa.array(stamp[2:3], kind), "l": ["x"]})
    late = pa.table({"t": pa.array(stamp[:1], kind), "r": ["y"]})
    spliced = ag.splice_join(early, late, on="t", tolerance=span, device=device)
    assert spliced["l"].to_pylist() == ["x", "x"]
