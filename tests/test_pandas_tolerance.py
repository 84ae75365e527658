"""``asofgpu.pandas.merge_asof`` with tolerances pandas refuses (issue 22): a ``DateOffset``,
whose bounds follow pandas' own calendar arithmetic, and a column with one tolerance per
left row. Each answer is checked row by row: against a brute-force search under pandas'
rules with bounds computed one key at a time, and against pandas' own ``merge_asof`` of
that row alone with its own fixed tolerance."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from pandas.errors import MergeError

from asofgpu.pandas import merge_asof

DIRECTIONS = ["backward", "forward", "nearest"]


def _brute_force(left, right, on, by, offset, direction, exact):
    """pandas' rules, one left row at a time: the last right row at or before the key
    (backward), the first at or after it (forward), each kept only within its own bound
    (``x - offset``, ``x + offset``, computed on that key alone), nearest taking the
    backward one unless the forward one is strictly closer."""
    out = []
    for _, row in left.iterrows():
        x = row[on]
        rows = right if by is None else right[right[by] == row[by]]
        keys = rows[on]
        before = rows[(keys <= x) if exact else (keys < x)]
        after = rows[(keys >= x) if exact else (keys > x)]
        back = before.iloc[-1] if len(before) else None
        ahead = after.iloc[0] if len(after) else None
        if back is not None and back[on] < x - offset:
            back = None
        if ahead is not None and ahead[on] > x + offset:
            ahead = None
        if direction == "backward":
            pick = back
        elif direction == "forward":
            pick = ahead
        elif back is None or ahead is None:
            pick = back if ahead is None else ahead
        else:
            pick = back if x - back[on] <= ahead[on] - x else ahead
        out.append(None if pick is None else pick["v"])
    return out


def _values(frame):
    return [None if pd.isna(v) else v for v in frame["v"]]


def _frames(rng, n_left, n_right, start, span, tz=None, unit="ns"):
    def keys(n):
        offsets = np.sort(rng.integers(0, span, n))
        stamps = pd.Timestamp(start) + pd.to_timedelta(offsets, unit="h")
        index = pd.DatetimeIndex(stamps).as_unit(unit)
        return index.tz_localize(tz) if tz else index

    left = pd.DataFrame({"t": keys(n_left), "g": rng.choice(["a", "b"], n_left)})
    right = pd.DataFrame(
        {"t": keys(n_right), "g": rng.choice(["a", "b"], n_right), "v": np.arange(n_right)}
    )
    return left, right


OFFSETS = [
    pd.DateOffset(months=1),
    pd.DateOffset(months=3),
    pd.DateOffset(years=1),
    pd.DateOffset(months=1, days=15),
    pd.DateOffset(days=1),
    pd.DateOffset(months=2, hours=12),
    pd.offsets.MonthEnd(1),
]


@pytest.mark.parametrize("offset", OFFSETS, ids=repr)
@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("exact", [True, False])
def test_date_offset_bounds_each_key_by_pandas_calendar(offset, direction, exact):
    """Month ends (January 31st to February 29th of a leap year) and whole quarters, keys
    in hours over eight months, two groups."""
    rng = np.random.default_rng(len(repr(offset)) + len(direction))
    left, right = _frames(rng, 40, 30, "2024-01-20", 24 * 240)
    got = merge_asof(
        left,
        right,
        on="t",
        by="g",
        tolerance=offset,
        direction=direction,
        allow_exact_matches=exact,
        device="cpu",
    )
    assert _values(got) == _brute_force(left, right, "t", "g", offset, direction, exact)


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_date_offset_days_follow_the_wall_clock_of_the_zone(direction, unit):
    """Across Amsterdam's clock change on 2024-10-27, a calendar day back from noon is 25
    hours; a day counted in hours would miss the quote 24.5 hours back."""
    left = pd.DataFrame(
        {"t": pd.DatetimeIndex(["2024-10-27 12:00"]).tz_localize("Europe/Amsterdam")}
    )
    left["t"] = left["t"].dt.as_unit(unit)
    quote = pd.Timestamp("2024-10-26 12:30", tz="Europe/Amsterdam")
    right = pd.DataFrame({"t": [quote], "v": [7]})
    right["t"] = right["t"].dt.as_unit(unit)
    day = pd.DateOffset(days=1)
    got = merge_asof(left, right, on="t", tolerance=day, direction=direction, device="cpu")
    want = _brute_force(left, right, "t", None, day, direction, True)
    assert _values(got) == want
    assert want == ([7] if direction != "forward" else [None])
    fixed = merge_asof(left, right, on="t", tolerance=pd.Timedelta("24h"), device="cpu")
    assert _values(fixed) == [None]


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_a_bound_in_a_clock_change_gap_refuses_only_the_directions_that_read_it(direction):
    """3 days 5 hours back from 2024-03-13 07:00 in New York is 02:00 on the day the clocks
    go forward, a time that does not exist: a forward join never reads that bound (it was
    computed all the same, and refused the join), a backward and a nearest one do."""
    keys = pd.DatetimeIndex(["2024-03-13 07:00"]).as_unit("ns").tz_localize("US/Eastern")
    left = pd.DataFrame({"t": keys})
    right = pd.DataFrame({"t": keys + pd.Timedelta("17h"), "v": [1]})
    offset = pd.DateOffset(days=3, hours=5)
    if direction == "forward":
        got = merge_asof(left, right, on="t", tolerance=offset, direction=direction, device="cpu")
        assert _values(got) == [1] == _brute_force(left, right, "t", None, offset, direction, True)
        return
    with pytest.raises(MergeError, match="cannot be applied to every left key: 2024-03-10 02:00"):
        merge_asof(left, right, on="t", tolerance=offset, direction=direction, device="cpu")


def test_a_bound_on_a_repeated_wall_time_refuses_a_backward_join():
    """3 days back from 2024-11-06 01:30 in New York is 01:30 on the day the clocks go
    back, a wall time that occurs twice; forward never reads it."""
    keys = pd.DatetimeIndex(["2024-11-06 01:30"]).as_unit("ns").tz_localize("US/Eastern")
    left = pd.DataFrame({"t": keys})
    right = pd.DataFrame({"t": keys + pd.Timedelta("1h"), "v": [1]})
    offset = pd.DateOffset(days=3)
    got = merge_asof(left, right, on="t", tolerance=offset, direction="forward", device="cpu")
    assert _values(got) == [1]
    with pytest.raises(MergeError, match="cannot be applied to every left key: .*2024-11-03 01:30"):
        merge_asof(left, right, on="t", tolerance=offset, device="cpu")


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_date_offset_on_arrow_timestamps_and_the_index(direction):
    rng = np.random.default_rng(5)
    left, right = _frames(rng, 30, 20, "2023-12-15", 24 * 120, tz="UTC", unit="us")
    offset = pd.DateOffset(months=1)
    want = _brute_force(left, right, "t", None, offset, direction, True)
    arrow_left, arrow_right = (
        frame.assign(t=frame["t"].astype(pd.ArrowDtype(pa.timestamp("us", tz="UTC"))))
        for frame in (left, right)
    )
    got = merge_asof(
        arrow_left, arrow_right, on="t", tolerance=offset, direction=direction, device="cpu"
    )
    assert _values(got) == want
    by_index = merge_asof(
        left.set_index("t"),
        right.set_index("t"),
        left_index=True,
        right_index=True,
        tolerance=offset,
        direction=direction,
        device="python",
    )
    assert _values(by_index) == want


def _pandas_row_by_row(left, right, tolerances, **options):
    """pandas' own merge_asof of each left row alone, with its own fixed tolerance (None:
    no tolerance)."""
    out = []
    for i, tol in enumerate(tolerances):
        tol = None if pd.isna(tol) else tol
        row = pd.merge_asof(left.iloc[[i]], right, tolerance=tol, **options)
        out.append(None if pd.isna(row["v"].iloc[0]) else row["v"].iloc[0])
    return out


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("exact", [True, False])
def test_a_column_of_durations_keeps_each_row_its_own(direction, exact):
    rng = np.random.default_rng(11)
    left, right = _frames(rng, 40, 30, "2024-01-01", 24 * 10)
    hours = rng.choice([0, 1, 5, 24, -1], len(left))
    tolerances = pd.Series(
        [pd.NaT if h < 0 else pd.Timedelta(hours=int(h)) for h in hours], index=left.index + 100
    )  # another index: a column is read by position
    options = dict(on="t", by="g", direction=direction, allow_exact_matches=exact)
    got = merge_asof(left, right, tolerance=tolerances, device="cpu", **options)
    assert _values(got) == _pandas_row_by_row(left, right, list(tolerances), **options)


def _seconds(*stamps) -> pd.Series:
    return pd.Series(np.array(stamps, "datetime64[s]"))  # (pandas 2.2 parses to ns only)


def test_a_column_of_durations_past_nanoseconds_range_and_in_other_units():
    """Durations of their own unit become whole ticks of the key's, rounded down, exactly:
    900 years of seconds on keys of seconds (pandas' nanoseconds end at 292 years; through
    them the column raised OutOfBoundsTimedelta where a 900-year DateOffset joins), and
    milliseconds on keys of seconds."""
    left = pd.DataFrame({"t": _seconds("2500-01-01")})
    right = pd.DataFrame({"t": _seconds("1700-01-01"), "v": [1]})
    years = pd.Series(np.array([900 * 365 * 86400], "timedelta64[s]"))
    assert _values(merge_asof(left, right, on="t", tolerance=years, device="cpu")) == [1]
    assert _values(merge_asof(left, right, on="t", tolerance=years / 2, device="cpu")) == [None]
    # 9,999 ms on a key of seconds is 9 s (rounded down): a quote 9 s ahead is in reach;
    # 8,999 ms is 8 s: it is not; NaT: no limit.
    left = pd.DataFrame({"t": _seconds("2024-01-01", "2024-01-01", "2024-01-01")})
    right = pd.DataFrame({"t": _seconds("2024-01-01 00:00:09"), "v": [2]})
    millis = pd.Series(np.array([9_999, 8_999, "NaT"], "timedelta64[ms]"))
    got = merge_asof(left, right, on="t", tolerance=millis, direction="forward", device="cpu")
    assert _values(got) == [2, None, 2]


@pytest.mark.parametrize("kind", ["int", "float", "float32"])
@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("form", ["series", "numpy", "arrow", "list", "objects"])
def test_a_column_of_numbers_on_numeric_keys(kind, direction, form):
    rng = np.random.default_rng(3)
    dtype = {"int": np.int64, "float": np.float64, "float32": np.float32}[kind]
    left = pd.DataFrame({"k": np.sort(rng.integers(0, 50, 30)).astype(dtype)})
    right = pd.DataFrame({"k": np.sort(rng.integers(0, 50, 20)).astype(dtype), "v": range(20)})
    tols = [None if t < 0 else int(t) for t in rng.integers(-1, 6, 30)]
    if kind != "int":
        tols = [None if t is None else t + 0.5 for t in tols]
    column = {
        "series": pd.Series(tols, dtype="Int64" if kind == "int" else "float64"),
        "numpy": np.array([np.nan if t is None else t for t in tols]),
        "arrow": pa.array(tols),
        "list": [np.nan if t is None else t for t in tols],
        "objects": pd.Series(tols, dtype=object),  # typed by its values, as the list is
    }[form]
    got = merge_asof(left, right, on="k", tolerance=column, direction=direction, device="cpu")
    scalar = [None if t is None else (int(t) if kind == "int" else dtype(t)) for t in tols]
    if kind == "int":  # pandas takes whole numbers on an integer key; round down as asofgpu does
        scalar = [None if t is None else int(np.floor(t)) for t in scalar]
    want = _pandas_row_by_row(left, right, scalar, on="k", direction=direction)
    assert _values(got) == want


def test_a_fixed_tolerance_still_takes_pandas_own_path():
    left = pd.DataFrame({"t": pd.to_datetime(["2024-01-02", "2024-01-05"])})
    right = pd.DataFrame({"t": pd.to_datetime(["2024-01-01"]), "v": [1]})
    got = merge_asof(left, right, on="t", tolerance=pd.Timedelta("2D"), device="cpu")
    want = pd.merge_asof(left, right, on="t", tolerance=pd.Timedelta("2D"))
    pd.testing.assert_frame_equal(got, want)


@pytest.mark.parametrize(
    ("tolerance", "key", "error"),
    [
        (pd.DateOffset(months=1), [1, 2], "incompatible tolerance <DateOffset: months=1>"),
        (
            pd.DateOffset(months=-1),
            None,
            "tolerance must be (non-negative|positive), got <DateOffset",
        ),
        (pd.Series([pd.Timedelta("1h")]), None, "tolerance has 1 rows but left has 2"),
        (
            pd.Series([pd.Timedelta("1h"), pd.Timedelta("-1h")]),
            None,
            r"tolerance must be (non-negative|positive), got -1 days \+23:00:00 at left row 1",
        ),
        (pd.Series([1, 2]), None, "a column of tolerances on a datetime64.* key holds durations"),
        (pd.Series(["a", "b"]), [1, 2], "on a int64 key holds numbers, got (object|str)"),
        (pd.Series([1, -3]), [1, 2], "at left row 1"),
        (
            pd.DateOffset(years=9000),
            None,
            "tolerance <DateOffset: years=9000> cannot be applied to every left key",
        ),
    ],
)
def test_errors_name_the_tolerance(tolerance, key, error):
    keys = pd.to_datetime(["2024-01-02", "2024-01-05"]).as_unit("ns") if key is None else key
    left = pd.DataFrame({"t": keys})
    right = pd.DataFrame({"t": keys[:1], "v": [1]})
    with pytest.raises(MergeError, match=error):
        merge_asof(left, right, on="t", tolerance=tolerance, device="cpu")


@pytest.mark.parametrize("keys", [[1, 5], [1.0, 5.0], pd.to_timedelta([1, 5], unit="s")])
@pytest.mark.parametrize("offset", [pd.offsets.Hour(1), pd.DateOffset(days=1)])
def test_a_date_offset_on_a_key_that_is_no_datetime_is_pandas_own_error(keys, offset):
    """Only datetime keys take asofgpu's DateOffset; on others pandas' error, word for word
    (asofgpu had its own)."""
    left, right = pd.DataFrame({"t": keys}), pd.DataFrame({"t": keys[:1], "v": [1]})
    with pytest.raises(MergeError) as theirs:
        pd.merge_asof(left, right, on="t", tolerance=offset)
    with pytest.raises(MergeError, match=re.escape(str(theirs.value))):
        merge_asof(left, right, on="t", tolerance=offset, device="cpu")


@pytest.mark.parametrize(
    ("keys", "tolerances"),
    [
        ([1, 5], [None, None]),
        ([1.0, 5.0], [float("nan"), None]),
        (pd.to_datetime([1, 5], unit="s"), [pd.NaT, pd.NaT]),  # pandas infers datetime64
        ([], []),
    ],
    ids=["none", "nan and none", "nat", "empty"],
)
def test_a_list_of_tolerances_without_a_value_is_no_limit(keys, tolerances):
    """A list whose entries are all missing (or an empty one for an empty left) was refused:
    pandas types such a list from nothing (object, or datetime64 for NaT), not as numbers
    or durations. Each row has no limit, as with no tolerance."""
    left = pd.DataFrame({"t": keys})
    right = pd.DataFrame({"t": pd.Series(keys[:1], dtype=left["t"].dtype), "v": [1][: len(keys)]})
    got = merge_asof(left, right, on="t", tolerance=tolerances, device="cpu")
    pd.testing.assert_frame_equal(got, merge_asof(left, right, on="t", device="cpu"))


@pytest.mark.parametrize("tolerance", [{"a": 10}, {10}, {"a": 1, "b": 2}])
def test_a_dict_or_set_tolerance_is_refused_as_pandas_refuses_it(tolerance):
    """Not a column of tolerances (no row order): pandas' own MergeError, word for word."""
    left, right = pd.DataFrame({"t": [5, 6]}), pd.DataFrame({"t": [1], "v": [1]})
    with pytest.raises(MergeError) as theirs:
        pd.merge_asof(left, right, on="t", tolerance=tolerance)
    with pytest.raises(MergeError, match=re.escape(str(theirs.value))):
        merge_asof(left, right, on="t", tolerance=tolerance, device="cpu")
