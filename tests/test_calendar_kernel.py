"""kernels/calendar.py: calendar reaches counted on the CPU for keys whose days last 24 hours
(dates, timestamps without a zone or in UTC), equal to polars' ``dt.offset_by`` key by key,
compiled and as plain Python, on sorted keys (a day's move reused along a run) and shuffled
ones; and where it does not apply, polars counts them."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from asofgpu import _backend
from asofgpu._backend import walks
from asofgpu._calendar import _fixed_day_reaches, calendar_parts, fixed_offset_ns, reaches

pl = pytest.importorskip("polars")

# (The last two with parts finer than some keys' ticks: cut to whole ticks, as polars cuts)
DURATIONS = ["1mo", "1q", "1y", "1mo15d", "2mo12h", "3y2mo1w3d5h7m", "1mo1s", "5d"]
DURATIONS += ["1mo1500ms", "3d7h11us13ns"]
PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}


def _polars_reaches(keys: pa.Array, text: str):
    """polars' reaches back and ahead, in nanoseconds cut to whole ticks of the keys (polars
    reads seconds as milliseconds: 1,500 ms reaches as far among keys of seconds as 1 s)."""
    s = pl.from_arrow(keys)
    back, ahead = s - s.dt.offset_by("-" + text), s.dt.offset_by(text) - s
    tick = 86_400 * 10**9 if pa.types.is_date32(keys.type) else 10**9 // PER_SECOND[keys.type.unit]
    return [
        [None if v is None else v // tick * tick for v in r.dt.total_nanoseconds().to_list()]
        for r in (back, ahead)
    ]


def _nanoseconds(reach: pa.Array) -> list:
    per_unit = 10**9 // PER_SECOND[reach.type.unit]
    return [None if v is None else v * per_unit for v in reach.cast(pa.int64()).to_pylist()]


def _keys(rng, unit: str, tz, n: int, ordered: bool) -> pa.Array:
    years = 200 if unit == "ns" else 4000  # ns keys end in 2262
    seconds = rng.integers(-years * 365 * 86_400, years * 365 * 86_400, n)
    month_ends = (
        np.datetime64("2024-01-31", "s").astype(np.int64)
        + np.array([0, 29, 60, 90, 121, 151, 182, 213, 243, 274, 304, 335, -2, -1, 1]) * 86_400
    )  # ends of 2024's months (a leap year), and around New Year
    values = np.concatenate([seconds, month_ends + 43_200]) * PER_SECOND[unit]
    values = values + rng.integers(0, PER_SECOND[unit], len(values))
    if ordered:
        values = np.sort(values)
    mask = rng.random(len(values)) < 0.05
    return pa.array(values, pa.timestamp(unit, tz), mask=mask)


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("ordered", [True, False])
@pytest.mark.parametrize(("unit", "tz"), [("s", None), ("ms", "UTC"), ("us", None), ("ns", "UTC")])
def test_timestamps_move_as_polars_moves_them(compiled, ordered, unit, tz):
    rng = np.random.default_rng(len(unit) + ordered)
    keys = _keys(rng, unit, tz, 3000 if compiled else 300, ordered)
    _counts_as_polars(keys, keys, compiled)


def _counts_as_polars(keys: pa.Array, polars_keys: pa.Array, compiled: bool) -> None:
    """The kernel (compiled, or as plain Python) counts ``keys``' reaches under every one of
    DURATIONS as polars' offset_by counts those of ``polars_keys`` (the same instants)."""
    limit = 0 if compiled else 1 << 30
    with walks.overridden(interpret_max_rows=limit, interpret_seconds=0 if compiled else 1e9):
        for text in DURATIONS:
            counted = _fixed_day_reaches(text, pa.chunked_array([keys]), ("backward", "forward"))
            assert counted is not None, text
            assert [_nanoseconds(r) for r in counted] == _polars_reaches(polars_keys, text), text


@pytest.mark.parametrize("ordered", [True, False])
def test_dates_move_as_polars_moves_them(ordered):
    rng = np.random.default_rng(7)
    days = rng.integers(-700_000, 700_000, 2000).astype(np.int32)
    keys = pa.array(np.sort(days) if ordered else days, pa.date32())
    for text in ["1mo", "1q", "1y", "1mo15d", "2w"]:
        counted = _fixed_day_reaches(text, pa.chunked_array([keys]), ("backward", "forward"))
        assert [_nanoseconds(r) for r in counted] == _polars_reaches(keys, text), text


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("ordered", [True, False])
@pytest.mark.parametrize(
    ("zone", "as_polars"),
    [
        ("+05:30", "Asia/Kolkata"),  # polars reads no offsets; Kolkata has kept +05:30 since 1945
        ("-03:00", "Etc/GMT+3"),
        ("Etc/GMT-5", "Etc/GMT-5"),
    ],
)
@pytest.mark.parametrize("unit", ["s", "ns"])
def test_fixed_offset_zones_move_as_polars_moves_them(compiled, ordered, zone, as_polars, unit):
    """A zone at a fixed offset from UTC has days of 24 hours: the kernel counts its keys'
    reaches on their civil dates there (polars refuses "+05:30" itself)."""
    rng = np.random.default_rng(len(zone) + ordered)
    start, stop = (np.datetime64(d, "s").astype(np.int64) for d in ("1950-01-01", "2200-01-01"))
    values = rng.integers(start, stop, 3000 if compiled else 300)
    # midnights and month ends in the zone, and a tick either side
    local = np.datetime64("2024-01-31", "s").astype(np.int64) - (fixed_offset_ns(zone) // 10**9)
    values = np.concatenate([values, local + np.array([-1, 0, 1, 86_400 * 29, 86_400 * 60])])
    values = values * PER_SECOND[unit]
    if ordered:
        values = np.sort(values)
    keys = pa.array(values, pa.timestamp(unit, zone))
    _counts_as_polars(keys, pa.array(values, pa.timestamp(unit, as_polars)), compiled)


@pytest.mark.parametrize("unit", ["s", "ns"])
@pytest.mark.parametrize("zone", [None, "+05:30", "-11:00"])
def test_a_days_reach_is_reused_only_within_the_day(unit, zone):
    """The cpu reuses a day's reach along a run of keys on that day; at the ends of the
    type's range, whose first and last days are cut short, and across each zone's
    midnights, every key's reach equals the one counted for it alone (the GPU's way)."""
    from asofgpu._calendar import calendar_plan
    from asofgpu._columns import KeyType
    from asofgpu.kernels import calendar

    low, high = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    day = 86_400 * PER_SECOND[unit]
    offset = fixed_offset_ns(zone) // (10**9 // PER_SECOND[unit])
    midnights = np.arange(-3, 4) * day - offset  # the zone's, around 1970
    first = low - low % day + day - offset  # the first midnight in the range, or near it
    last = high - high % day - offset
    rng = np.random.default_rng(5)
    values = np.sort(
        np.concatenate(
            [
                low + rng.integers(0, 3 * day, 300),
                high - rng.integers(0, 3 * day, 300),
                rng.integers(-3 * day, 3 * day, 300),
                [low, low + 1, high - 1, high],
                *(m + np.array([-1, 0, 1]) for m in (*midnights, first, last) if low < m < high),
            ]
        )
    )
    key_type = KeyType("timestamp", 10**9 // PER_SECOND[unit], zone)
    row = calendar.build_row(lambda f: f, int)
    for text in ["1mo", "1d", "12h", "1y1d"]:
        plan = calendar_plan(text, key_type)
        for direction in ("backward", "forward"):
            move = plan.move(direction)
            with walks.overridden(interpret_max_rows=0, interpret_seconds=0):
                got = _backend.get_backend("cpu").calendar_reaches(values, move)
            alone = np.empty(len(values), np.uint64)
            for i in range(len(values)):
                row(i, values, alone, move)
            assert np.array_equal(got, alone), (text, direction)


def test_what_the_kernel_does_not_count_polars_counts():
    """Zones with clock changes, a part day on a date, text the parser does not read
    plainly. (A part finer than a timestamp's tick the kernel counts, cut to whole ticks:
    DURATIONS.)"""
    zoned = pa.array([0], pa.timestamp("us", "Europe/Amsterdam"))
    days = pa.array([0], pa.date32())
    assert _fixed_day_reaches("1mo", zoned, ("backward",)) is None
    assert _fixed_day_reaches("1mo12h", days, ("backward",)) is None
    assert calendar_parts("1 mo") is None and calendar_parts("1MO") is None
    for keys, text in [(zoned, "1mo"), (days, "1mo12h")]:
        (got,) = reaches(text, keys, "left_on", ("backward",))
        s = pl.from_arrow(keys)
        assert got.to_pylist() == (s - s.dt.offset_by("-" + text)).to_list()


@pytest.mark.parametrize("compiled", [True, False])
def test_a_moved_key_past_the_types_range_is_no_limit(compiled):
    """A bound past the type's range (ns keys end in 2262) leaves every key within reach:
    null, no limit; the reach back from the same key is exact; a date's too."""
    edge = pa.array([2**63 - 10**15, 0], pa.timestamp("ns"))
    days = pa.array([2**31 - 100, 0], pa.date32())
    limit = 0 if compiled else 1 << 30
    with walks.overridden(interpret_max_rows=limit, interpret_seconds=0 if compiled else 1e9):
        back, ahead = _fixed_day_reaches("1y", edge, ("backward", "forward"))
        assert ahead.to_pylist()[0] is None and back.to_pylist()[0] is not None
        assert _nanoseconds(back) == _polars_reaches(edge, "1y")[0]
        assert _nanoseconds(ahead)[1] == _polars_reaches(edge, "1y")[1][1]
        (ahead,) = _fixed_day_reaches("1y", days, ("forward",))
        assert ahead.to_pylist()[0] is None and ahead.to_pylist()[1] is not None


@pytest.mark.parametrize("compiled", [True, False])
def test_a_reach_across_the_whole_range_is_exact(compiled):
    """Review finding: a reach of nearly the type's whole span counted as no limit. From the
    last date, a move back to the first is a reach of exactly the room there, and one day
    more is no limit."""
    from asofgpu._calendar import calendar_plan
    from asofgpu._columns import KeyType
    from asofgpu.kernels.calendar import NO_LIMIT

    plan = calendar_plan("1d", KeyType("date", 86_400 * 10**9))
    keys = np.array([2**31 - 1], np.int64)
    limit = 0 if compiled else 1 << 30
    for days, want in ((2**32 - 1, 2**32 - 1), (2**32, NO_LIMIT)):
        move = plan._replace(days=days).move("backward")
        with walks.overridden(interpret_max_rows=limit, interpret_seconds=0 if compiled else 1e9):
            got = _backend.get_backend("cpu").calendar_reaches(keys, move)
        assert got.tolist() == [want], days


def test_a_reach_longer_than_a_duration_holds_is_refused_by_name():
    """300 years back from 2200 lies in range, but further than an int64 of nanoseconds
    (292 years) holds: as an Arrow duration it is refused, naming the tolerance (the join
    itself counts it exactly, tests/test_row_tolerance.py)."""
    keys = pa.array([int(np.datetime64("2200-01-01", "ns").astype(np.int64))], pa.timestamp("ns"))
    with pytest.raises(ValueError, match=r"tolerance '300y' reaches \d+ ns from a key, past"):
        reaches("300y", keys, "left_on")


def test_duration_strings_are_read_into_months_days_and_nanoseconds():
    assert calendar_parts("1y2mo15d12h") == (14, 15, 12 * 3_600 * 10**9)
    assert calendar_parts("2q1w") == (6, 7, 0)
    assert calendar_parts("1mo500ms3us1ns") == (1, 0, 500 * 10**6 + 3_000 + 1)
    assert calendar_parts("") is None
    assert calendar_parts("mo") is None
    assert calendar_parts("1mo x") is None


@pytest.mark.parametrize("strategy", ["backward", "forward", "nearest"])
def test_a_part_finer_than_the_tick_in_a_zone_of_a_fixed_offset(strategy):
    """Parts finer than keys of milliseconds in "+05:30", which polars cannot read (its
    "unable to parse time zone" came out of the join before): the kernel cuts them to whole
    ticks, and joins as polars does in Asia/Kolkata (+05:30 since 1945)."""
    import asofgpu as ag

    rng = np.random.default_rng(3)
    start, stop = (np.datetime64(d, "ms").astype(np.int64) for d in ("1950-01-01", "2200-01-01"))
    left_keys = np.sort(rng.integers(start, stop, 300))
    right_keys = np.sort(rng.integers(start, stop, 2000))
    for text in ["1mo1us", "2mo3d1500us", "1y999999ns"]:
        got = {}
        for zone in ("+05:30", "Asia/Kolkata"):
            left = pa.table({"t": pa.array(left_keys, pa.timestamp("ms", zone))})
            right = pa.table(
                {"t": pa.array(right_keys, pa.timestamp("ms", zone)), "v": range(2000)}
            )
            joined = ag.join_asof(left, right, on="t", strategy=strategy, tolerance=text)
            got[zone] = joined["v"].to_pylist()
        assert got["+05:30"] == got["Asia/Kolkata"], text
        assert any(v is not None for v in got["+05:30"]), text
        if text == "1mo1us":  # (a month is less than most gaps here: it cuts)
            assert None in got["+05:30"]


def test_a_part_of_a_day_on_date32_and_date64_keys():
    """Dates of days drop a reach's time of day where ``offset_by`` lands ("2mo12h" back from
    1971-03-01: 1970-12-31); date64 keys, milliseconds, keep it, as polars reads them (as
    datetimes): 1970-12-31 12:00, which the date misses (README)."""
    import datetime as dt

    import asofgpu as ag

    left, right = [dt.date(1971, 3, 1)], [dt.date(1970, 12, 31)]
    got = {}
    for keys in (pa.date32(), pa.date64()):
        joined = ag.join_asof(
            pa.table({"t": pa.array(left, keys)}),
            pa.table({"t": pa.array(right, keys), "v": [1]}),
            on="t",
            tolerance="2mo12h",
        )
        got[str(keys)] = joined["v"].to_pylist()
    assert got == {"date32[day]": [1], "date64[ms]": [None]}
