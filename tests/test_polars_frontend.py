"""asofgpu.polars.join_asof against polars' own join_asof: frames, dtypes, errors, warnings.

polars is the oracle wherever its inputs are valid (sorted). Where polars silently returns wrong
rows (unsorted data it cannot check), the oracle is polars on the same data sorted. The file runs
on polars 1.x (the line cudf-polars pins) and 2.x; where the two lines differ (messages, which
tolerances polars 1.x can read), the expectation follows the running polars.
"""

from __future__ import annotations

import functools
import re
import warnings
import zlib
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

pl = pytest.importorskip("polars")
from polars.exceptions import (
    ColumnNotFoundError,
    ComputeError,
    DuplicateError,
    InvalidOperationError,
    PanicException,
    SchemaError,
)
from polars.testing import assert_frame_equal

import asofgpu.polars as agp
from asofgpu.polars import join_asof

CPU = {"device": "cpu"}
POLARS_1 = int(pl.__version__.split(".")[0]) < 2
# 2.2 searches Categorical keys by their text (and refuses nearest on them), and takes a
# numpy.timedelta64 tolerance, which earlier versions refuse
POLARS_2_2 = tuple(int(p) for p in pl.__version__.split(".")[:2]) >= (2, 2)
SORT_WARNING = "Sortedness of columns cannot be checked when 'by' groups provided"
COALESCE_WARNING = (
    "coalescing join requested but not all join keys are column references, "
    "turning off key coalescing"
)


def _both(left, right, **options):
    """(polars' frame, asofgpu's frame), warnings silenced (tested on their own below)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = left.join_asof(right, **options)
        got = join_asof(left, right, **options, **CPU)
        if isinstance(expected, pl.LazyFrame):
            return expected.collect(), got.collect()
    return expected, got


def _same(left, right, **options):
    """asofgpu's frame, asserted equal to polars'. On polars 1.x, where polars itself refuses
    the call (tolerances it cannot read into the key's type, say), asofgpu must raise the same
    error, and None is returned; on 2.x every call here must succeed."""
    try:
        expected, got = _both(left, right, **options)
    except pl.exceptions.PolarsError as error:
        if not POLARS_1:
            raise
        with pytest.raises(type(error), match=re.escape(str(error))):
            _both_asofgpu(left, right, **options)
        return None
    assert_frame_equal(got, expected, check_exact=True)
    return got


def _both_asofgpu(left, right, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = join_asof(left, right, **options, **CPU)
        return got.collect() if isinstance(got, pl.LazyFrame) else got


def _words(error: Exception) -> str:
    """An exception's message without the plan polars appends to errors of a LazyFrame (its
    "Resolved plan until failure", which shows asofgpu's plan around polars' join)."""
    return str(error).split("\n\nResolved plan until failure")[0]


# --------------------------------------------------------------------------- random sorted inputs

KEY_DTYPES = [
    pl.Int64,
    pl.Int32,
    pl.UInt64,
    pl.Float64,
    pl.Date,
    pl.Datetime("ns"),
    pl.Datetime("us"),
    pl.Datetime("ns", "UTC"),
    pl.Datetime("us", "America/New_York"),
    pl.Duration("us"),
]
_PER_SECOND = {"ns": 10**9, "us": 10**6, "ms": 10**3}


def _keys(steps: np.ndarray, dtype, nulls: int) -> pl.Series:
    """Sorted keys from integer steps: ints as they are, floats halved, UInt64 above 2**63,
    Date in days, Datetime and Duration in seconds; ``nulls`` nulls first."""
    s = pl.Series("t", steps, dtype=pl.Int64)
    if dtype == pl.Float64:
        s = s / 2
    elif dtype == pl.UInt64:
        s = (s + 100).cast(pl.UInt64) + 2**63
    elif dtype == pl.Date:
        s = (s + 19_000).cast(pl.Int32).cast(pl.Date)
    elif isinstance(dtype, (pl.Datetime, pl.Duration)):
        s = ((s + 1_700_000_000) * _PER_SECOND[dtype.time_unit]).cast(dtype)
    else:
        s = s.cast(dtype)
    return s.scatter(list(range(nulls)), None) if nulls else s


def _tolerances(dtype) -> list:
    """Valid tolerances of every kind for a key dtype (in steps: 1 int, 0.5 float, 1 day, 1 s)."""
    if dtype == pl.Float64:
        return [None, 1.25, -1, 2]
    if dtype == pl.Date:
        return [None, 2, "2d", "36h", timedelta(days=-3)]
    if isinstance(dtype, (pl.Datetime, pl.Duration)):
        return [
            None,
            "1s500ms",
            "2500ms",
            "-2s",
            timedelta(seconds=3),
            2 * _PER_SECOND[dtype.time_unit],
        ]
    return [None, 3, -2, 2.5]


def _frames(dtype, seed: int, n_left=40, n_right=30):
    rng = np.random.default_rng(seed)
    right = pl.DataFrame(
        {
            "t": _keys(np.sort(rng.integers(0, 50, n_right)), dtype, nulls=int(rng.integers(0, 3))),
            "g": rng.choice(["a", "b", "c"], n_right).tolist(),
            "v": np.arange(n_right),
            "s": [f"r{i}" for i in range(n_right)],
        }
    )
    left = pl.DataFrame(
        {
            "t": _keys(np.sort(rng.integers(-5, 55, n_left)), dtype, nulls=int(rng.integers(0, 3))),
            "g": pl.Series(rng.choice(["a", "b", "c", "z"], n_left).tolist()).scatter([1], None),
            "v": np.arange(n_left) * 10,
        }
    )
    return left, right


@pytest.mark.parametrize("coalesce", [True, False])
@pytest.mark.parametrize("by", [None, "g"])
@pytest.mark.parametrize("exact", [True, False])
@pytest.mark.parametrize("strategy", ["backward", "forward", "nearest"])
@pytest.mark.parametrize("dtype", KEY_DTYPES, ids=str)
def test_same_frame_as_polars_on_sorted_inputs(dtype, strategy, exact, by, coalesce):
    seed = zlib.crc32(f"{dtype}{strategy}{exact}{by}{coalesce}".encode())
    left, right = _frames(dtype, seed=seed)
    for tolerance in _tolerances(dtype):
        got = _same(
            left,
            right,
            on="t",
            by=by,
            strategy=strategy,
            allow_exact_matches=exact,
            tolerance=tolerance,
            coalesce=coalesce,
        )
        if got is not None:  # None: polars 1.x refused the tolerance, and so did asofgpu
            assert got["v_right"].null_count() < got.height  # something matched


def test_float_keys_with_nan_and_infinities():
    left = pl.DataFrame({"t": [None, -np.inf, -0.0, 1.5, 3.0, np.inf, np.nan]})
    right = pl.DataFrame({"t": [None, -np.inf, 0.0, 0.0, 2.0, np.inf, np.nan], "v": range(7)})
    finite = pl.col("t").is_finite() | pl.col("t").is_null()
    for strategy in ("backward", "forward", "nearest"):
        for exact in (True, False):
            if strategy != "nearest":
                _same(left, right, on="t", strategy=strategy, allow_exact_matches=exact)
            else:  # as polars while no NaN is involved
                no_nan = pl.col("t").is_nan().not_()
                # rechunk: polars 1.44 calls a filtered, sorted Float64 column unsorted
                _same(
                    left.filter(no_nan).rechunk(),
                    right.filter(no_nan).rechunk(),
                    on="t",
                    strategy=strategy,
                    allow_exact_matches=exact,
                )
            _same(
                left.filter(finite).rechunk(),
                right.filter(finite).rechunk(),
                on="t",
                strategy=strategy,
                allow_exact_matches=exact,
                tolerance=1,
            )
    # polars measures inf - inf and NaN distances as NaN; asofgpu's total order does not:
    # equal keys are at distance 0, and a finite key is nearer than NaN
    got = join_asof(left, right, on="t", strategy="nearest", tolerance=1e300, **CPU)
    assert got["v"].to_list() == [None, 1, 3, 4, 4, 5, 6]
    got = join_asof(left, right, on="t", tolerance=1, **CPU)
    assert got["v"].to_list() == [None, 1, 3, None, 4, 5, 6]
    expected, got = _both(left, right, on="t", tolerance=float("nan"))
    assert got["v"].null_count() == got.height  # a NaN tolerance matches nothing, as in polars
    assert_frame_equal(got, expected, check_exact=True)


@pytest.mark.parametrize(
    ("left_dtype", "right_dtype"),
    [
        (pl.Int32, pl.Int64),
        (pl.Int64, pl.Int8),
        (pl.Int64, pl.UInt64),
        (pl.UInt64, pl.Int64),
        (pl.UInt8, pl.Int16),
        (pl.Int32, pl.UInt32),
        (pl.UInt32, pl.UInt64),
        (pl.Float32, pl.Float64),
    ],
)
@pytest.mark.parametrize("strategy", ["backward", "forward", "nearest"])
def test_integer_and_float_widths_are_supercast_like_polars(left_dtype, right_dtype, strategy):
    left = pl.DataFrame({"t": pl.Series([0, 3, 7, 8, 20], dtype=left_dtype)})
    right = pl.DataFrame({"t": pl.Series([1, 3, 5, 9], dtype=right_dtype), "v": range(4)})
    for coalesce in (True, False):
        _same(left, right, on="t", strategy=strategy, tolerance=2, coalesce=coalesce)


def test_int64_and_uint64_extremes():
    big = pl.DataFrame({"t": pl.Series([2**63 + 1, 2**64 - 1], dtype=pl.UInt64), "v": [1, 2]})
    probe = pl.DataFrame({"t": pl.Series([2**63, 2**64 - 2], dtype=pl.UInt64)})
    for strategy in ("backward", "forward", "nearest"):
        _same(probe, big, on="t", strategy=strategy, tolerance=2**63)
    negative = pl.DataFrame({"t": pl.Series([-(2**63), -5, 2**62], dtype=pl.Int64)})
    mixed = pl.DataFrame({"t": pl.Series([0, 2**63 + 5], dtype=pl.UInt64), "v": [1, 2]})
    for strategy in ("backward", "forward"):  # no single 64-bit type holds both: ranked
        _same(negative, mixed, on="t", strategy=strategy, coalesce=False)
    with pytest.raises(InvalidOperationError, match="fit no single 64-bit integer type"):
        join_asof(negative, mixed, on="t", strategy="nearest", **CPU)
    extremes = pl.DataFrame({"t": pl.Series([-(2**63), 2**63 - 1], dtype=pl.Int64), "v": [1, 2]})
    for strategy in ("backward", "forward", "nearest"):  # distances never overflow
        _same(negative, extremes, on="t", strategy=strategy, tolerance=2**64 - 1)


def test_decimal_keys_past_64_bits_are_refused_for_distances_by_their_own_type():
    import decimal

    dtype = pl.Decimal(38, 2)
    left = pl.DataFrame({"t": pl.Series([decimal.Decimal("1e20")], dtype=dtype)})
    right = pl.DataFrame({"t": pl.Series([decimal.Decimal("-1e20")], dtype=dtype), "v": [0]})
    _same(left, right, on="t", strategy="backward")
    message = (
        "asofgpu cannot measure distances between the as-of keys (Decimal(precision=38, "
        "scale=2) and Decimal(precision=38, scale=2)): their values fit no single 64-bit "
        "integer type. Hint: use strategy='backward' or 'forward' without a tolerance, or "
        "subtract a common offset from both keys so that they fit Int64 (Float64 would round "
        "them)."
    )
    with pytest.raises(InvalidOperationError, match=re.escape(message)):
        join_asof(left, right, on="t", strategy="nearest", **CPU)


@pytest.mark.parametrize(
    "dtype",
    [
        pl.String,
        pl.Binary,
        pl.Boolean,
        pl.Categorical,
        pl.Enum(["x", "m", "c", "a"]),
        pl.Decimal(12, 3),
        pl.Time,
    ],
    ids=str,
)
def test_other_key_dtypes_match_polars(dtype):
    if dtype == pl.Boolean:
        lk, rk = [False, True, True], [False, False, True]
    elif dtype == pl.Time:
        lk, rk = [time(9), time(10), time(12)], [time(8), time(9, 59, 58), time(11)]
    elif dtype == pl.Decimal:
        lk, rk = [Decimal("1.000"), Decimal("2.500")], [Decimal("0.990"), Decimal("2.499")]
    elif isinstance(dtype, pl.Enum):  # in the enum's order
        lk, rk = ["x", "m", "a"], ["x", "c", "c"]
    elif dtype == pl.Categorical:  # texts no other test makes: codes are global in polars
        lk, rk = ["lexical-b", "lexical-d", "lexical-e"], ["lexical-a", "lexical-c", "lexical-c"]
    else:
        lk, rk = ["b", "d", "e"], ["a", "c", "c"]
    # one Series for both sides, so that a Categorical's codes follow its lexical order
    both = pl.Series(sorted(set(lk + rk)) + lk + rk).cast(dtype).slice(len(set(lk + rk)))
    left = pl.DataFrame({"t": both.slice(0, len(lk))})
    right = pl.DataFrame({"t": both.slice(len(lk)), "v": range(len(rk))})
    nearest_ok = dtype not in (pl.String, pl.Binary, pl.Boolean) and not (
        POLARS_2_2 and dtype == pl.Categorical
    )
    for strategy in ("backward", "forward", "nearest") if nearest_ok else ("backward", "forward"):
        for exact in (True, False):
            got = _same(
                left, right, on="t", strategy=strategy, allow_exact_matches=exact, coalesce=False
            )
            assert got["v"].null_count() < got.height
    if dtype in (pl.Decimal, pl.Time):
        _same(left, right, on="t", tolerance=10 if dtype == pl.Decimal else "2s")


def test_categorical_keys_follow_their_lexical_order():
    """polars 2 checks Categorical keys in lexical order but searches physical codes."""
    # texts no other test makes (polars' codes are global to the process): these codes
    # follow first appearance here, whichever tests ran before
    texts = ["e", "c", "a", "b", "d"]
    codes_not_lexical = pl.Series([f"not-lexical-{t}" for t in texts]).cast(pl.Categorical)
    left = pl.DataFrame({"t": codes_not_lexical.slice(3)})  # b, d
    right = pl.DataFrame({"t": codes_not_lexical.slice(0, 3).reverse(), "v": [1, 2, 3]})
    for strategy in ("backward", "forward"):
        as_strings = left.cast(pl.String).join_asof(
            right.cast({"t": pl.String}), on="t", strategy=strategy
        )
        got = join_asof(left, right, on="t", strategy=strategy, **CPU)
        assert got["v"].to_list() == as_strings["v"].to_list()
    # polars before 2.2 searched the codes (wrong rows); 2.2 searches the text, as asofgpu
    assert left.join_asof(right, on="t").equals(join_asof(left, right, on="t", **CPU)) == (
        POLARS_2_2
    )
    if POLARS_2_2:  # and refuses nearest on them; so does the dry run here
        message = 'AsOf strategy "nearest" is not supported for binary data type'
        for frames in ((left, right), (left.lazy(), right.lazy())):
            with pytest.raises(InvalidOperationError, match=re.escape(message)):
                pl.collect_all([join_asof(*frames, on="t", strategy="nearest", **CPU).lazy()])


@pytest.mark.skipif(not POLARS_2_2, reason="polars before 2.2 refuses it (ComputeError)")
def test_a_numpy_timedelta_tolerance_is_the_duration_it_denotes():
    """polars 2.2 reads np.timedelta64(1, "ms") on nanosecond keys as 1 ns; asofgpu as
    1,000,000 ns, as a timedelta or "1ms" reads. On keys without a unit it is refused."""
    keys = pl.Series([1, 2, 10**6, 10**6 + 1, 10**9]).cast(pl.Datetime("ns"))
    left = pl.DataFrame({"t": keys})
    right = pl.DataFrame({"t": keys.slice(0, 1), "v": [1]})
    for tolerance in (np.timedelta64(1, "ms"), np.timedelta64(-1000, "us")):
        got = join_asof(left, right, on="t", tolerance=tolerance, **CPU)
        assert got.equals(left.join_asof(right, on="t", tolerance="1ms"))
        assert got["v"].to_list() == [1, 1, 1, 1, None]  # (1 ms from the first, 1 ns)
    message = (
        "a numpy.timedelta64 tolerance (np.timedelta64(1,'s')) is a duration, and the keys are "
        "Int64: give a number in the keys' own unit"
    )
    with pytest.raises(InvalidOperationError, match=re.escape(message)):
        join_asof(L, R, on="t", tolerance=np.timedelta64(1, "s"), **CPU)
    message = "could not extract number from any-value of dtype: 'Null'"  # polars' dry run
    with pytest.raises(ComputeError, match=re.escape(message)):
        join_asof(left, right, on="t", tolerance=np.timedelta64("NaT", "ns"), **CPU)
    with pytest.raises(ValueError, match="cannot convert NumPy value 1 minutes with unit 'm'"):
        join_asof(left, right, on="t", tolerance=np.timedelta64(1, "m"), **CPU)


def test_payload_dtypes_come_through_like_polars():
    right = pl.DataFrame(
        {
            "t": [1, 5, 9],
            "cat": pl.Series(["u", "v", "u"], dtype=pl.Categorical),
            "enum": pl.Series(["lo", "hi", "lo"], dtype=pl.Enum(["lo", "hi"])),
            "dec": pl.Series([Decimal("1.25"), Decimal("-3.50"), None], dtype=pl.Decimal(10, 2)),
            "tz": pl.Series([datetime(2024, 3, 31, 1, 30)] * 3).dt.replace_time_zone(
                "Europe/Paris"
            ),
            "d": [date(2024, 1, 1), None, date(2024, 1, 3)],
            "dur": [timedelta(seconds=1), timedelta(days=2), None],
            "tm": [time(1), time(2), time(3)],
            "s": ["a", None, "c"],
            "bin": [b"x", b"y", b"z"],
            "b": [True, False, None],
            "i8": pl.Series([1, 2, 3], dtype=pl.Int8),
            "lst": [[1, 2], [], None],
            "st": [{"a": 1, "b": "x"}, {"a": 2, "b": None}, None],
            "arr": pl.Series([[1, 2], [3, 4], [5, 6]], dtype=pl.Array(pl.Int16, 2)),
            "nul": pl.Series([None, None, None], dtype=pl.Null),
        }
    )
    left = pl.DataFrame({"t": [0, 1, 6, 9, 12], "s": ["l0", "l1", "l2", "l3", "l4"]})
    for strategy in ("backward", "forward", "nearest"):
        got = _same(left, right, on="t", strategy=strategy)
        assert got.schema["s_right"] == pl.String and got.schema["enum"] == right.schema["enum"]
    obj = pl.DataFrame({"t": [1], "o": pl.Series([{1, 2}], dtype=pl.Object)})
    got = join_asof(pl.DataFrame({"t": [0, 2]}), obj, on="t", **CPU)
    assert got.schema["o"] == pl.Object and got["o"].to_list() == [None, {1, 2}]


def test_by_several_columns_and_by_dtypes():
    rng = np.random.default_rng(7)
    n = 60
    frame = pl.DataFrame(
        {
            "t": np.sort(rng.integers(0, 40, n)),
            "g": rng.choice(["a", "b"], n).tolist(),
            "k": pl.Series(rng.integers(0, 3, n)),
            "f": pl.Series(rng.choice([0.0, -0.0, np.nan, 1.5], n)),
            "c": pl.Series(rng.choice(["u", "v"], n).tolist(), dtype=pl.Categorical),
            "e": pl.Series(rng.choice(["u", "v"], n).tolist(), dtype=pl.Enum(["v", "u"])),
            "d": pl.Series(rng.integers(0, 2, n)).cast(pl.Date),
            "dec": pl.Series(rng.integers(0, 2, n)).cast(pl.Decimal(8, 2)),
            "bo": pl.Series(rng.integers(0, 2, n) == 1),
            "v": np.arange(n),
        }
    )
    left, right = frame.slice(0, 30).with_row_index("i"), frame.slice(30)
    for by in (["g", "k"], ["f"], ["c", "e"], ["d", "dec", "bo"], ["g", "k", "f", "c"]):
        got = _same(left, right, on="t", by=by, strategy="nearest")
        assert got["v_right"].null_count() < got.height
    renamed = right.rename({"g": "rg", "k": "rk", "t": "rt"})
    for coalesce in (True, False):
        _same(
            left,
            renamed,
            left_on="t",
            right_on="rt",
            by_left=["g", "k"],
            by_right=["rg", "rk"],
            coalesce=coalesce,
        )


def test_by_compares_physical_values_like_polars():
    left = pl.DataFrame({"t": [1, 5, 9], "g": pl.Series([1, 2, 3]).cast(pl.Date)})
    right = pl.DataFrame(
        {"t": [0, 4, 8], "g": pl.Series([1, 2, 3], dtype=pl.Int32), "v": [1, 2, 3]}
    )
    got = _same(left, right, on="t", by="g")  # Date vs Int32: polars compares days
    assert got["v"].to_list() == [1, 2, 3]
    left_us = left.with_columns(g=pl.Series([1, 2, 3]).cast(pl.Datetime("us")))
    right_ns = right.with_columns(g=pl.Series([1, 2, 3]).cast(pl.Datetime("ns", "UTC")))
    assert _same(left_us, right_ns, on="t", by="g")["v"].to_list() == [1, 2, 3]


def test_by_of_two_different_enums_matches_values_where_polars_matches_codes():
    left = pl.DataFrame(
        {"t": [1, 5, 9], "g": pl.Series(["a", "b", "a"], dtype=pl.Enum(["a", "b"]))}
    )
    right = pl.DataFrame(
        {"t": [0, 4, 8], "g": pl.Series(["a", "a", "b"], dtype=pl.Enum(["b", "a"])), "v": [1, 2, 3]}
    )
    got = join_asof(left, right, on="t", by="g", check_sortedness=False, **CPU)
    by_value = left.cast({"g": pl.String}).join_asof(
        right.cast({"g": pl.String}), on="t", by="g", check_sortedness=False
    )
    assert got["v"].to_list() == by_value["v"].to_list() == [1, None, 2]
    by_code = left.join_asof(right, on="t", by="g", check_sortedness=False)
    assert by_code["v"].to_list() != got["v"].to_list()


@pytest.mark.parametrize(
    ("left_type", "right_type"),
    [
        (pl.Categorical, pl.Categorical),  # one mapping of values to codes: joined by code
        (pl.Enum(["w", "v", "u"]), pl.Enum(["w", "v", "u"])),
        (pl.Categorical(pl.Categories("a")), pl.Categorical(pl.Categories("b"))),
        (pl.Categorical, pl.Categorical(pl.Categories("b"))),
    ],
    ids=["categorical", "enum", "two categories", "global and own"],
)
def test_by_of_categoricals_matches_values_whatever_their_codes(left_type, right_type):
    """Of one type, Categoricals join by code; of two, whose codes mean other values (u is 0
    in one and 2 in the other), by value."""
    left = pl.DataFrame({"t": [1, 5, 9], "g": ["u", "v", "w"]})
    right = pl.DataFrame({"t": [0, 4, 8], "g": ["w", "v", "u"], "v": [1, 2, 3]})
    left, right = left.cast({"g": left_type}), right.cast({"g": right_type})
    got = join_asof(left, right, on="t", by="g", **CPU)
    assert got["v"].to_list() == [None, 2, 1]
    assert got["g"].dtype == left_type


@pytest.mark.parametrize("strategy", ["backward", "nearest"])
def test_frames_of_many_small_chunks_join_as_polars_joins_them(strategy):
    """Frames put together from 400 pieces without a rechunk (rechunked before the join,
    which read them a chunk at a time): polars' rows."""

    def pieces(n, seed, payload):
        local = np.random.default_rng(seed)
        frame = pl.DataFrame(
            {"t": np.sort(local.integers(0, 10**6, n)), "g": local.choice(["a", "b", None], n)}
            | ({"v": local.random(n)} if payload else {})
        )
        return pl.concat([frame.slice(i, 50) for i in range(0, n, 50)], rechunk=False)

    left, right = pieces(20_000, 1, False), pieces(20_000, 2, True)
    assert left.n_chunks() == right.n_chunks() == 400
    _same(left, right, on="t", by="g", strategy=strategy)


def test_nulls_in_by_never_match_and_null_groups_are_kept():
    left = pl.DataFrame({"t": [1, 5, 9], "g": [None, "a", None]})
    right = pl.DataFrame({"t": [0, 4, 8], "g": [None, "a", None], "v": [1, 2, 3]})
    got = _same(left, right, on="t", by="g")
    assert got["v"].to_list() == [None, 2, None]
    nulls = pl.DataFrame({"t": [1], "g": pl.Series([None], dtype=pl.Null)})
    _same(nulls, nulls.with_columns(v=pl.lit(1)), on="t", by="g")


def test_empty_sides():
    left, right = _frames(pl.Int64, seed=3)
    for by in (None, "g"):
        _same(left.head(0), right, on="t", by=by)
        got = _same(left, right.head(0), on="t", by=by, strategy="nearest")
        assert got["v_right"].null_count() == got.height


# --------------------------------------------------------------------------- keys and columns


def test_column_layout_coalesce_suffix_and_different_names():
    left = pl.DataFrame({"t": [1, 5, 9], "g": ["a", "b", "a"], "x": [1, 2, 3], "rt": [7, 7, 7]})
    right = pl.DataFrame(
        {"t": [0, 4, 8], "g": ["a", "a", "b"], "y": [1.0, 2.0, 3.0], "x": [9, 9, 9]}
    )
    renamed = right.rename({"t": "rt", "g": "rg"})
    cases = [
        dict(on="t", by="g"),
        dict(on="t", by="g", coalesce=False),
        dict(on="t", suffix="_r", coalesce=False),
        dict(on="t", by="t"),
        dict(left_on="x", right_on="t"),
        dict(on="t", by_left="g", by_right="g", by="x"),
    ]
    for options in cases:
        _same(left, right, **options)
    for coalesce in (True, False):
        got = _same(
            left, renamed, left_on="t", right_on="rt", by_left="g", by_right="rg", coalesce=coalesce
        )
        assert got.columns == ["t", "g", "x", "rt", "rt_right", "y", "x_right"]


def test_a_column_named_by_the_empty_string_or_column_0_is_kept_by_its_name():
    """polars names a frame's Series named "" column_0: the right columns were looked up by a
    name they no longer had (KeyError), or clashed with a real column_0."""
    left = pl.DataFrame({"t": [1, 3, 5], "": [10, 20, 30]})
    right = pl.DataFrame({"t": [0, 2, 4], "": [1.0, 2.0, 3.0], "column_0": ["a", "b", "c"]})
    got = _same(left, right, on="t")
    assert got.columns == ["t", "", "_right", "column_0"]
    _same(left.drop(""), right, on="t")
    assert _same(left, right, on="t", coalesce=False).columns[2:4] == ["t_right", "_right"]
    keyed = right.rename({"t": "", "": "t"})
    _same(left.rename({"t": "", "": "x"}), keyed, on="", coalesce=False)


def test_expression_keys():
    left = pl.DataFrame({"t": [1, 5, 9], "x": [1, 2, 3]})
    right = pl.DataFrame({"t": [0, 4, 8], "y": [1.0, 2.0, 3.0]})
    import polars.selectors as cs

    for key in (pl.col("t"), pl.first(), cs.by_name("t")):  # plain columns: coalesced
        got = _same(left, right, on=key)  # None: polars 1.x allows no selector in a join key
        assert (POLARS_1 and got is None) or got.columns == ["t", "x", "y"]
    for options in (
        dict(on=pl.col("t") * 2),
        dict(left_on=pl.col("t") + 4, right_on="t"),
        dict(left_on="t", right_on=pl.col("t").cast(pl.Int32) + 1),
        dict(on=pl.lit(5)),
        dict(on=pl.col("t").cast(pl.Float64), coalesce=False),
        dict(left_on="x", right_on=pl.col("t")),
    ):
        got = _same(left, right, **options)
        assert "t_right" in got.columns
    got = _same(left, right, left_on=pl.col("t") + 4, right_on="t")
    assert got["y"].to_list() == [2.0, 3.0, 3.0]


def test_lazyframes_stay_lazy_and_collect_to_polars_frame():
    left, right = _frames(pl.Datetime("us", "UTC"), seed=11)
    options = dict(on="t", by="g", tolerance="3s", strategy="nearest", check_sortedness=False)
    got = join_asof(left.lazy(), right.lazy(), **options, **CPU)
    assert isinstance(got, pl.LazyFrame)
    expected = left.lazy().join_asof(right.lazy(), **options)
    assert got.collect_schema() == expected.collect_schema()
    assert_frame_equal(got.collect(), expected.collect(), check_exact=True)
    assert_frame_equal(got.collect(engine="streaming"), expected.collect(), check_exact=True)
    query = got.filter(pl.col("v_right").is_not_null()).select("t", "s")
    assert_frame_equal(
        query.collect(),
        expected.collect().filter(pl.col("v_right").is_not_null()).select("t", "s"),
        check_exact=True,
    )

    calls = []

    def counted(df):
        calls.append(1)
        return df

    source = left.lazy().map_batches(counted, schema=left.schema)
    deferred = join_asof(source, right.lazy(), **options, **CPU)
    assert calls == []  # nothing ran yet
    assert deferred.collect().height == left.height and calls == [1]


@pytest.mark.parametrize(
    "keys",
    [
        lambda: dict(left_on=["t"], right_on=["t"]),
        lambda: dict(left_on=("t",), right_on=["t"], coalesce=False),
        lambda: dict(left_on=["t"], right_on=["u"]),
        lambda: dict(left_on={"t"}, right_on="t"),
        lambda: dict(left_on={"t": 1}, right_on="t"),
        lambda: dict(left_on=(name for name in ["t"]), right_on=iter(["u"])),
        lambda: dict(left_on=pl.Series(["t"]), right_on="t"),
        lambda: dict(left_on=["t", "x"], right_on="t"),
        lambda: dict(left_on=[], right_on="t"),
    ],
    ids=["list", "tuple", "names", "set", "dict", "generators", "series", "two", "none"],
)
@pytest.mark.filterwarnings("ignore:coalescing join requested")  # polars' own, for both
def test_lazy_keys_as_iterables_of_names_join_as_polars_joins_them(keys):
    """polars 2's lazy join_asof takes a key as any iterable of one name (its eager one, and
    polars 1's, refuse it): the dry run accepted it, and the join itself failed with an
    AttributeError at collect (a generator: the dry run had read it). Where this polars
    refuses it, so does asofgpu, with polars' error."""
    left = pl.LazyFrame({"t": [1, 5, 9], "x": [1, 2, 3]})
    right = pl.LazyFrame({"t": [0, 4, 8], "u": [0, 4, 8], "y": [1.0, 2.0, 3.0]})
    try:
        expected = left.join_asof(right, **keys()).collect()
    except (pl.exceptions.PolarsError, TypeError) as refused:
        with pytest.raises(type(refused), match=re.escape(_words(refused))):
            join_asof(left, right, **keys(), **CPU).collect()
    else:
        assert_frame_equal(join_asof(left, right, **keys(), **CPU).collect(), expected)


@pytest.mark.parametrize("on", ["name", "column expression"])
@pytest.mark.parametrize("by", ["t", ["g", "t"]])
@pytest.mark.parametrize("kind", ["eager", "lazy"])
def test_a_by_column_that_is_the_on_key_joins_as_polars_joins_it(kind, by, on):
    """A by column that is also the key: polars joins it, eager and lazy; asofgpu's lazy
    join failed ('"t" not found') in polars 2's resolution of its dry run, on frames polars
    knew were empty, and so it did with the key given as ``pl.col("t")``."""
    left = pl.DataFrame({"t": [1, 4, 9], "g": ["a", "a", "b"]})
    right = pl.DataFrame({"t": [0, 4, 8], "g": ["a", "a", "b"], "y": [1.0, 2.0, 3.0]})
    if kind == "lazy":
        left, right = left.lazy(), right.lazy()
    got = _same(left, right, on="t" if on == "name" else pl.col("t"), by=by)
    assert got is None or got["y"].to_list() == [None, 2.0, None]


@pytest.mark.parametrize("coalesce", [False, True])
@pytest.mark.parametrize("kind", ["eager", "lazy"])
def test_right_columns_are_traced_by_name_where_a_suffixed_name_is_a_by_columns(kind, coalesce):
    """Right "t" suffixed is "t_right", the right by column's name: polars' lazy join leaves
    that column out, and asofgpu, counting the columns it kept, dropped the right key
    instead and put t's values under the key's name ("g" held 100, 200, 300)."""
    left = pl.DataFrame({"x": [0, 4, 8], "t": ["a", "b", "a"]})
    right = pl.DataFrame({"t_right": ["a", "b", "a"], "t": [100, 200, 300], "g": [0, 2, 8]})
    if kind == "lazy":
        left, right = left.lazy(), right.lazy()
    options = dict(by_left="t", by_right="t_right", coalesce=coalesce)
    got = _same(left, right, left_on="x", right_on="g", **options)
    assert got["g"].to_list() == [0, 2, 8]
    got = _same(
        left.rename({"x": "g"}), right.rename({"g": "x"}), left_on="g", right_on="x", **options
    )
    assert got["x"].to_list() == [0, 2, 8]


def test_namespace_on_dataframe_and_lazyframe():
    left = pl.DataFrame({"t": [1, 5, 9]})
    right = pl.DataFrame({"t": [0, 4, 8], "v": [1, 2, 3]})
    expected = left.join_asof(right, on="t", strategy="forward")
    assert_frame_equal(
        left.asofgpu.join_asof(right, on="t", strategy="forward", **CPU), expected, check_exact=True
    )
    lazy = left.lazy().asofgpu.join_asof(right.lazy(), on="t", strategy="forward", **CPU)
    assert isinstance(lazy, pl.LazyFrame)
    assert_frame_equal(lazy.collect(), expected, check_exact=True)
    assert isinstance(left.asofgpu, agp.AsofgpuNamespace)


# --------------------------------------------------------------------------- unsorted input


def _shuffled(frame: pl.DataFrame, seed: int) -> pl.DataFrame:
    return frame.sample(fraction=1.0, shuffle=True, seed=seed)


@pytest.mark.parametrize("strategy", ["backward", "forward", "nearest"])
def test_unsorted_within_groups_gives_the_sorted_answer(strategy):
    left, right = _frames(pl.Int64, seed=21, n_left=80, n_right=60)
    left = _shuffled(left.with_row_index("i"), 1)
    right = _shuffled(right, 2)
    options = dict(on="t", by="g", strategy=strategy, tolerance=4)
    got = join_asof(left, right, check_sortedness=False, **options, **CPU)
    assert got["i"].to_list() == left["i"].to_list()  # left order kept
    # polars' answer on the same rows sorted (stable: equal keys keep their order)
    expected = left.sort("t").join_asof(
        right.sort("t", maintain_order=True), check_sortedness=False, **options
    )
    assert_frame_equal(got.sort("i"), expected.sort("i"), check_exact=True)
    wrong = left.join_asof(right, check_sortedness=False, **options)  # polars on unsorted rows
    assert not wrong.sort("i").equals(expected.sort("i"))


def test_unsorted_without_by_and_a_wrong_sorted_flag_give_the_sorted_answer():
    left, right = _frames(pl.Int64, seed=5)
    left, right = _shuffled(left.with_row_index("i"), 3), _shuffled(right, 4)
    expected = left.sort("t").join_asof(right.sort("t", maintain_order=True), on="t")
    got = join_asof(left, right, on="t", check_sortedness=False, **CPU)
    assert_frame_equal(got.sort("i"), expected.sort("i"), check_exact=True)
    flagged = left.with_columns(pl.col("t").set_sorted())  # polars trusts the flag
    got = join_asof(flagged, right.with_columns(pl.col("t").set_sorted()), on="t", **CPU)
    assert_frame_equal(got.sort("i"), expected.sort("i"), check_exact=True)
    wrong = flagged.join_asof(right.with_columns(pl.col("t").set_sorted()), on="t")
    assert not wrong.sort("i").equals(expected.sort("i"))
    lazy = join_asof(flagged.lazy(), right.set_sorted("t").lazy(), on="t", **CPU).collect()
    assert_frame_equal(lazy.sort("i"), expected.sort("i"), check_exact=True)


def test_an_empty_by_is_no_by():
    """polars 2.2 raises a ShapeError on ``by=[]`` (1.x panics); asofgpu joins without."""
    got = join_asof(L, R, on="t", by=[], **CPU)
    assert_frame_equal(got, L.join_asof(R, on="t"), check_exact=True)
    assert got.columns == ["t", "g", "x", "g_right", "y"]
    lazy = join_asof(L.lazy(), R.lazy(), on="t", by_left=(), by_right=(), **CPU)
    assert_frame_equal(lazy.collect(), got, check_exact=True)
    overriding = join_asof(L, R, on="t", by=[], by_left="g", by_right="g", **CPU)
    assert_frame_equal(overriding, got, check_exact=True)  # polars' by overrides the pair
    for pair in (dict(by_left=[]), dict(by_left=["g"], by_right=[])):  # polars' own errors
        with pytest.raises(InvalidOperationError) as polars_error:
            L.join_asof(R, on="t", **pair)
        with pytest.raises(InvalidOperationError, match=re.escape(_words(polars_error.value))):
            join_asof(L, R, on="t", **pair, **CPU)


# --------------------------------------------------------------------------- errors and warnings

L = pl.DataFrame({"t": [1, 5, 9], "g": ["a", "b", "a"], "x": [1, 2, 3]})
R = pl.DataFrame({"t": [0, 4, 8], "g": ["a", "a", "b"], "y": [1.0, 2.0, 3.0]})


def _col(name, values, dtype=None):
    return lambda frame: frame.with_columns(pl.Series(name, values, dtype=dtype))


def _cast(dtype, name="t"):
    return lambda frame: frame.with_columns(pl.col(name).cast(dtype))


_DT = _cast(pl.Datetime("us"))


def _by_polars(message_2: str, message_1: str) -> str:
    """The message of the running polars line: 2.x's, or 1.x's where it words it otherwise."""
    return message_1 if POLARS_1 else message_2


EAGER_ERRORS = [  # DataFrame.join_asof's own checks; LazyFrame.join_asof raises ValueError
    (dict(on=["t"]), "expected `on` to be str or Expr, got 'list'"),
    (dict(), "expected `left_on` to be str or Expr, got 'NoneType'"),
    (dict(left_on="t"), "expected `right_on` to be str or Expr, got 'NoneType'"),
    (dict(right_on="t"), "expected `left_on` to be str or Expr, got 'NoneType'"),
    (dict(on=1), "expected `on` to be str or Expr, got 'int'"),
]


@pytest.mark.parametrize(("options", "message"), EAGER_ERRORS)
def test_dataframe_argument_errors(options, message):
    with pytest.raises(TypeError, match=re.escape(message)):
        L.join_asof(R, **options)
    with pytest.raises(TypeError, match=re.escape(message)):
        join_asof(L, R, **options, **CPU)
    with pytest.raises(ValueError, match="you should pass the column to join on as an argument"):
        L.lazy().join_asof(R.lazy(), **options)
    with pytest.raises(ValueError, match="you should pass the column to join on as an argument"):
        join_asof(L.lazy(), R.lazy(), **options, **CPU)


ERRORS = [  # (left change, right change, options, exception, message)
    (None, None, dict(on="nope"), ColumnNotFoundError, 'unable to find column "nope"'),
    (
        None,
        None,
        dict(on="t", by="nope"),
        ColumnNotFoundError,
        "'asof_join' on column: 'nope' is invalid",
    ),
    (
        None,
        None,
        dict(on="t", by_left="g"),
        InvalidOperationError,
        "expected both 'by_left' and 'by_right' to be set in 'asof_join'",
    ),
    (
        None,
        None,
        dict(on="t", by_left=["g", "x"], by_right=["g"]),
        InvalidOperationError,
        _by_polars(
            "expected equal number of columns in `by_left` (2) and `by_right` (1) in `asof_join`",
            "expected equal number of columns in 'by_left' and 'by_right' in 'asof_join'",
        ),
    ),
    (
        None,
        None,
        dict(on="t", by=pl.col("g")),
        TypeError,
        "'Expr' object is not an instance of 'Sequence'",
    ),
    (
        None,
        None,
        dict(on="t", strategy="closest"),
        ValueError,
        "asof `strategy` must be one of {'backward', 'forward', 'nearest'}, got closest",
    ),
    (None, None, dict(on="t", suffix=None), TypeError, "'None' is not an instance of 'str'"),
    (
        None,
        None,
        dict(on="t", allow_exact_matches="yes"),
        TypeError,
        "'str' object is not an instance of 'bool'",
    ),
    (None, None, dict(on="t", coalesce=None), TypeError, "'None' is not an instance of 'bool'"),
    (
        None,
        None,
        dict(on="t", check_sortedness=1),
        TypeError,
        "'int' object is not an instance of 'bool'",
    ),
    (
        None,
        None,
        dict(on="t", force_parallel="x"),
        TypeError,
        "'str' object is not an instance of 'bool'",
    ),
    (
        None,
        _cast(pl.Float64),
        dict(on="t"),
        SchemaError,
        "datatypes of join keys don't match - `t`: i64 on left does not match `t`: f64 on right",
    ),
    (
        _cast(pl.Datetime("ns")),
        _DT,
        dict(on="t"),
        SchemaError,
        "`t`: datetime[ns] on left does not match `t`: datetime[μs] on right",
    ),
    (
        _cast(pl.Datetime("us", "UTC")),
        _DT,
        dict(on="t"),
        SchemaError,
        "`t`: datetime[μs, UTC] on left does not match `t`: datetime[μs] on right",
    ),
    (
        _cast(pl.Date),
        _DT,
        dict(on="t"),
        SchemaError,
        "`t`: date on left does not match `t`: datetime[μs] on right",
    ),
    (
        _cast(pl.Int32, "x"),
        _col("x", [1, 2, 3]),
        dict(on="t", by="x"),
        ComputeError,
        "mismatching dtypes in 'by' parameter of asof-join: `i32` and `i64`",
    ),
    (
        _cast(pl.Categorical, "g"),
        None,
        dict(on="t", by="g"),
        ComputeError,
        "mismatching dtypes in 'by' parameter of asof-join: `u32` and `str`",
    ),
    (
        lambda f: f.with_columns(g=pl.concat_list("x")),
        lambda f: f.with_columns(g=pl.concat_list("t")),
        dict(on="t", by="g"),
        ComputeError,
        "not yet implemented: Dispatch join for list[i64] and list[i64]",
    ),
    (
        _DT,
        _DT,
        dict(on="t", tolerance="abc"),
        InvalidOperationError,
        "expected leading integer in the duration string, found 'a'",
    ),
    (
        _DT,
        _DT,
        dict(on="t", tolerance="2H"),
        InvalidOperationError,
        "unit: 'H' not supported; available units are: 'y', 'mo', 'q', 'w', 'd', 'h', 'm', 's', "
        "'ms', 'us', 'ns'",
    ),
    (
        _DT,
        _DT,
        dict(on="t", tolerance="1.5h"),
        InvalidOperationError,
        "expected a valid unit to follow integer in the duration string '1.5h'",
    ),
    (
        _DT,
        _DT,
        dict(on="t", tolerance=float("inf")),
        ComputeError,
        "could not extract number from any-value of dtype: 'Float64'",
    ),
    (
        None,
        None,
        dict(on="t", tolerance=float("nan")),
        ComputeError,
        "could not extract number from any-value of dtype: 'Float64'",
    ),
    (
        None,
        None,
        dict(on="t", tolerance=[1]),
        ComputeError,
        "could not extract number from any-value of dtype: 'List(Int64)'",
    ),
    pytest.param(
        None,
        None,
        dict(on="t", tolerance=np.timedelta64(1, "s")),
        ComputeError,
        "could not extract number from any-value of dtype: 'Object'",
        marks=pytest.mark.skipif(POLARS_2_2, reason="polars 2.2 takes it"),
    ),
    (
        None,
        None,
        dict(on="g", tolerance=1, check_sortedness=False),
        InvalidOperationError,
        _by_polars(
            "asof join with tolerance is only supported on numeric/temporal keys, got "
            "left: `str`, right: `str`",
            "asof join with tolerance is only supported on numeric/temporal keys",
        ),
    ),
    (
        None,
        None,
        dict(on="g", strategy="nearest", check_sortedness=False),
        InvalidOperationError,
        'AsOf strategy "nearest" is not supported for binary data type',
    ),
    (
        _col("b", [False, True, True]),
        _col("b", [False, True, True]),
        dict(on="b", strategy="nearest"),
        InvalidOperationError,
        'AsOf strategy "nearest" is not supported for bool data type',
    ),
    (
        lambda f: f.with_columns(t=pl.concat_list("t")),
        lambda f: f.with_columns(t=pl.concat_list("t")),
        dict(on="t"),
        InvalidOperationError,
        _by_polars(
            "asof join is only supported on primitive key types, got left: `list[i64]`, "
            "right: `list[i64]`",
            "asof join is only supported on primitive key types",
        ),
    ),
    (
        _col("t", [None] * 3),
        _col("t", [None] * 3),
        dict(on="t"),
        InvalidOperationError,
        _by_polars(
            "asof join is only supported on primitive key types, got left: `null`, right: `null`",
            "asof join is only supported on primitive key types",
        ),
    ),
    (
        lambda f: f.with_columns(y=0, y_right=0),
        None,
        dict(on="t"),
        DuplicateError,
        "column with name 'y_right' already exists",
    ),
    (
        None,
        lambda f: f.with_columns(x=9, x_right=0),
        dict(on="t", by="g"),
        DuplicateError,
        "column 'x_right' is duplicate",
    ),
    (
        None,
        None,
        dict(on="t", suffix=""),
        DuplicateError,
        _by_polars("column 'g' is duplicate", "column with name 'g' already exists"),
    ),
    (
        None,
        None,
        dict(on=pl.all()),
        InvalidOperationError,
        _by_polars(
            "'asof_join' expects exactly one join key after expression expansion, got 3",
            "'Expr: cs.all()' not allowed in this context/location",
        ),
    ),
    (
        None,
        None,
        dict(on=pl.col("t").alias("k")),
        InvalidOperationError,
        "'alias' is not allowed in a join key, use 'with_columns' first",
    ),
    (
        None,
        None,
        dict(on=pl.col("t").sort(descending=True)),
        InvalidOperationError,
        "all join key expressions must be elementwise.",
    ),
    (
        _col("t", [5, 1, 9]),
        None,
        dict(on="t"),
        InvalidOperationError,
        "argument in operation 'asof_join' is not sorted, please sort the 'expr/series/column' "
        "first",
    ),
    (None, _col("t", [4, 0, 8]), dict(on="t"), InvalidOperationError, "is not sorted"),
    (_col("t", [1, None, 9]), None, dict(on="t"), InvalidOperationError, "is not sorted"),
    (None, _col("t", [0, 4, None]), dict(on="t"), InvalidOperationError, "is not sorted"),
    (
        _col("t", [1.0, np.nan, 9.0]),
        _cast(pl.Float64),
        dict(on="t"),
        InvalidOperationError,
        "is not sorted",
    ),
    (
        lambda f: f.with_columns(pl.col("t").reverse().set_sorted(descending=True)),
        None,
        dict(on="t"),
        InvalidOperationError,
        "is not sorted",
    ),
    (None, None, dict(on="g"), InvalidOperationError, "is not sorted"),
]


@pytest.mark.parametrize(("left_change", "right_change", "options", "error", "message"), ERRORS)
def test_errors_are_polars_errors(left_change, right_change, options, error, message):
    left = left_change(L) if left_change else L
    right = right_change(R) if right_change else R
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error, match=re.escape(message)):  # polars itself, the reference
            left.join_asof(right, **options)
        with pytest.raises(error, match=re.escape(message)):
            join_asof(left, right, **options, **CPU)
        try:  # polars' LazyFrame, the reference there: its words at collect
            left.lazy().join_asof(right.lazy(), **options).collect()
            lazy_message = message  # unsorted keys its streaming engine does not check
        except error as lazy_error:
            lazy_message = _words(lazy_error)
        with pytest.raises(error, match=re.escape(lazy_message)):
            join_asof(left.lazy(), right.lazy(), **options, **CPU).collect()


def test_panics_are_polars_panics():
    message = "can only use timedelta string language with Date/Datetime/Duration/Time dtypes"
    with pytest.raises(PanicException, match=re.escape(message)):  # polars, the reference
        L.join_asof(R, on="t", tolerance="1s")
    with pytest.raises(PanicException, match=re.escape(message)):
        join_asof(L, R, on="t", tolerance="1s", **CPU)


def test_errors_of_the_call_itself():
    with pytest.raises(TypeError, match="expected `other` to be a 'DataFrame', not 'LazyFrame'"):
        join_asof(L, R.lazy(), on="t", **CPU)
    with pytest.raises(TypeError, match="expected `other` to be a 'LazyFrame', not 'DataFrame'"):
        join_asof(L.lazy(), R, on="t", **CPU)
    with pytest.raises(ValueError, match="you should pass the column to join on as an argument"):
        join_asof(L.lazy(), R.lazy(), on=["t"], **CPU)
    with pytest.raises(
        TypeError, match="expected `left` to be a 'DataFrame' or a 'LazyFrame', got 'dict'"
    ):
        join_asof({"t": [1]}, R, on="t", **CPU)
    # (pandas' frame is a DataFrame too: the message named it 'DataFrame', as it named none)
    with pytest.raises(TypeError, match="a 'LazyFrame', got 'pandas.DataFrame'"):
        join_asof(R.to_pandas(), R, on="t", **CPU)
    with pytest.raises(ValueError, match="device must be one of"):
        join_asof(L, R, on="t", device="tpu")


def test_lazy_errors_of_the_data_come_at_collect():
    unsorted = join_asof(L.reverse().lazy(), R.lazy(), on="t", **CPU)  # no error yet
    with pytest.raises(InvalidOperationError, match="is not sorted"):
        unsorted.collect()


def test_sortedness_warning_with_by_like_polars():
    for frame in (L, L.lazy()):
        with pytest.warns(UserWarning, match=re.escape(SORT_WARNING)) as record:
            out = join_asof(frame, R if frame is L else R.lazy(), on="t", by="g", **CPU)
            if isinstance(out, pl.LazyFrame):
                assert not [w for w in record if SORT_WARNING in str(w.message)]  # not yet
                out.collect()
        assert [w.filename for w in record if SORT_WARNING in str(w.message)] == [__file__]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        join_asof(L, R, on="t", by="g", check_sortedness=False, **CPU)
        join_asof(L, R, on="t", **CPU)


R_CODES = R.with_columns(pl.col("g").cast(pl.Categorical).to_physical())  # by: u32 vs str
R_FLOATS = R.with_columns(pl.col("t").cast(pl.Float64))  # keys: i64 vs f64
BOTH_WARNINGS = {SORT_WARNING, COALESCE_WARNING}
WARNING_CASES = {  # left, right, options, the warnings polars gives
    "by": (L, R, dict(on="t", by="g"), {SORT_WARNING}),
    "expression-key": (L, R, dict(on=pl.col("t") + 1), {COALESCE_WARNING}),
    "both": (L, R, dict(on=pl.col("t") + 1, by="g"), BOTH_WARNINGS),
    "by-then-error": (L, R_CODES, dict(on="t", by="g"), {SORT_WARNING}),
    "expression-key-then-planning-error": (
        L,
        R_FLOATS,
        dict(on=pl.col("t") + 1),
        {COALESCE_WARNING},
    ),
    "both-then-error": (L, R_CODES, dict(on=pl.col("t") + 1, by="g"), BOTH_WARNINGS),
    "expression-key-unsorted": (L.reverse(), R, dict(on=pl.col("t") + 1), {COALESCE_WARNING}),
    "by-unchecked": (L, R, dict(on="t", by="g", check_sortedness=False), set()),
    "column-expression": (L, R, dict(on=pl.col("t")), set()),
    "expression-key-uncoalesced": (L, R, dict(on=pl.col("t") + 1, coalesce=False), set()),
    "argument-error-first": (L, R, dict(on=pl.col("t") + 1, by="g", strategy="closest"), set()),
}
POLARS_JOINS = {"eager": pl.DataFrame.join_asof, "lazy": pl.LazyFrame.join_asof}


def _under_filter(join, left, right, options, action, capfd):
    """Everything a join does under the warnings filter ``action``, called twice from these
    same lines (``join``: polars' method or asofgpu's function; their warnings belong to
    these lines either way): for each step (the call, then for a LazyFrame its schema and
    its rows) the warnings shown (category, message, file, line), what was printed on
    standard error, and the result: a frame's schema and rows, or an exception's type and
    polars' words."""
    record = []
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter(action)
        for _ in range(2):  # a "default" filter shows a warning once a line
            out = None
            for step in ("join_asof", "collect_schema", "collect"):
                capfd.readouterr()
                shown.clear()
                try:
                    if step == "join_asof":
                        result = out = join(left, right, **options)
                    else:
                        result = getattr(out, step)()
                except Exception as error:  # noqa: BLE001 - compared below
                    result, out = (type(error), _words(error)), None
                if isinstance(result, pl.DataFrame):
                    result = (dict(result.schema), result.rows())
                elif isinstance(result, pl.LazyFrame):
                    result = "LazyFrame"
                elif not isinstance(result, tuple):
                    result = dict(result)  # a schema
                seen = [(w.category, str(w.message), w.filename, w.lineno) for w in shown]
                record.append((step, result, seen, capfd.readouterr().err))
                if not isinstance(out, pl.LazyFrame):
                    break
    return record


@pytest.mark.parametrize("kind", ["eager", "lazy"])
@pytest.mark.parametrize("action", ["default", "error", "ignore", "always", "module"])
@pytest.mark.parametrize("case", list(WARNING_CASES))
def test_warnings_under_every_filter_like_polars(case, action, kind, capfd):
    """polars issues its join_asof warnings from compiled code: shown under the caller's
    filters as any warning, but under an "error" filter printed on standard error (file
    descriptor 2) and not raised, polars going on to its result or its own exception. asofgpu
    does exactly the same at each step: the same warnings, at the same lines, once a line
    under "default", printed alike, and polars' result or exception."""
    left, right, options, expected = WARNING_CASES[case]
    if kind == "lazy":
        left, right = left.lazy(), right.lazy()
    want = _under_filter(POLARS_JOINS[kind], left, right, options, action, capfd)
    got = _under_filter(functools.partial(join_asof, **CPU), left, right, options, action, capfd)
    assert got == want
    shown = {message for _, _, seen, _ in want for _, message, _, _ in seen}
    printed = {line for *_, err in want for line in err.splitlines()}
    assert shown == (expected if action in ("default", "always", "module") else set())
    assert printed == ({f"UserWarning: {m}" for m in expected} if action == "error" else set())
    if action == "always":  # each call shows them again
        assert sum(len(seen) for _, _, seen, _ in want) >= 2 * len(expected)


def test_python_W_error_prints_polars_warnings_and_carries_on():
    """The issue's case: under ``python -W error`` polars prints its warning and returns its
    frame, and so does asofgpu, eager and lazy."""
    import subprocess
    import sys

    script = (
        "import functools, polars as pl, asofgpu.polars\n"
        "df = pl.DataFrame({'t': [1, 2], 'g': ['a', 'a']})\n"
        "ours = functools.partial(asofgpu.polars.join_asof, device='cpu')\n"
        "for join in (pl.DataFrame.join_asof, ours):\n"
        "    print(join(df, df, on='t', by='g').height)\n"
        "for join in (pl.LazyFrame.join_asof, ours):\n"
        "    print(join(df.lazy(), df.lazy(), on=pl.col('t') + 1).collect().height)\n"
    )
    run = subprocess.run(
        [sys.executable, "-W", "error", "-c", script], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["2"] * 4
    assert (
        run.stderr.splitlines()
        == [f"UserWarning: {SORT_WARNING}"] * 2 + [f"UserWarning: {COALESCE_WARNING}"] * 2
    )


# --------------------------------------------------------------------------- tolerance forms


def test_duration_strings_and_numbers_in_the_physical_unit():
    base = datetime(2024, 1, 1)
    left = pl.DataFrame({"t": [base + timedelta(hours=h) for h in (1, 26, 50)]})
    right = pl.DataFrame({"t": [base + timedelta(hours=h) for h in (0, 24, 48)], "v": [1, 2, 3]})
    matched = [
        ("1h", 1),
        ("59m", 0),
        ("3600s", 1),
        ("1h1ns", 1),
        ("1d", 3),
        ("1w", 3),
        ("1d1h", 3),
        ("2h", 3),
        ("", 0),
        ("1i", 0),
        ("3599999999us", 0),
        ("10us", 0),
        ("5ns", 0),
        ("-1h", 1),
        (timedelta(hours=-2), 3),
        (timedelta(minutes=59), 0),
        (3_600_000_000, 1),
        (-3_600_000_000, 1),
        (3.6e9, 1),
        (2**70, 3),
        (True, 0),
    ]
    for tolerance, n in matched:
        got = _same(left, right, on="t", tolerance=tolerance)
        assert got is None or got["v"].count() == n, tolerance  # None: refused by polars 1.x
    for unit in ("ns", "ms"):
        _same(
            left.cast({"t": pl.Datetime(unit)}),
            right.cast({"t": pl.Datetime(unit)}),
            on="t",
            tolerance="1h",
        )
    fall_back = [datetime(2024, 10, 26, 12), datetime(2024, 10, 27, 12)]  # 25 h apart there
    amsterdam = pl.DataFrame({"t": fall_back, "v": [1, 2]}).with_columns(
        pl.col("t").dt.replace_time_zone("Europe/Amsterdam")
    )
    for tolerance, n in [
        ("1d", 0),
        ("25h", 1),
        ("1d59m", 0),
        ("1d1h", 1),
        ("1500m", 1),
        ("3m", 0),
        ("90000s", 1),
    ]:  # "1d" is 24 h, not a calendar day
        got = _same(
            amsterdam.slice(1).drop("v"), amsterdam.slice(0, 1), on="t", tolerance=tolerance
        )
        assert got["v"].count() == n, tolerance
    days = pl.DataFrame({"t": [date(2024, 1, 3), date(2024, 1, 10)]})
    days_right = pl.DataFrame({"t": [date(2024, 1, 1), date(2024, 1, 8)], "v": [1, 2]})
    for tolerance, n in [
        (1, 0),
        (2, 2),
        ("1d", 0),
        ("2d", 2),
        ("47h", 0),
        ("48h", 2),
        (2.5, 2),
        (1.5, 0),
        (timedelta(hours=47), 0),
        ("1w", 2),
    ]:
        got = _same(days, days_right, on="t", tolerance=tolerance)
        assert got is None or got["v"].count() == n, tolerance
    ints = pl.DataFrame({"t": pl.Series([10, 20], dtype=pl.Int8)})
    ints_right = pl.DataFrame({"t": pl.Series([7, 19], dtype=pl.Int8), "v": [1, 2]})
    for tolerance, n in [
        (3, 2),
        (2, 1),
        (300, 2),
        (-3, 2),
        (2.9, 1),
        (-2.9, 1),
        (True, 1),
        (False, 0),
        (np.int64(3), 2),
        (np.float32(2.5), 1),
        (Decimal("3.5"), 2),
        (Decimal("2.9999999999999999"), 2 if POLARS_1 else 1),
        (Fraction(7, 2), 2),
        (Fraction(-5, 2), 1),
        (date(1970, 1, 4), 2),
        (time(0, 0, 0, 2), 2),
    ]:
        got = _same(ints, ints_right, on="t", tolerance=tolerance)
        assert got is None or got["v"].count() == n, tolerance
    floats = pl.DataFrame({"t": [10.0, 20.0]})
    floats_right = pl.DataFrame({"t": [9.7, 19.5], "v": [1, 2]})
    for tolerance, n in [(Fraction(1, 3), 1), (Decimal("0.5"), 2), (Decimal("0.25"), 0)]:
        got = _same(floats, floats_right, on="t", tolerance=tolerance)
        assert got is None or got["v"].count() == n, tolerance


# --------------------------------------------------------------------------- polars' own examples


def test_the_examples_of_polars_join_asof_docstring():
    gdp = pl.DataFrame(
        {
            "date": pl.date_range(date(2016, 1, 1), date(2020, 1, 1), "1y", eager=True),
            "gdp": [4164, 4411, 4566, 4696, 4827],
        }
    )
    population = pl.DataFrame(
        {
            "date": [date(2016, 3, 1), date(2018, 8, 1), date(2019, 1, 1)],
            "population": [82.19, 82.66, 83.12],
        }
    ).sort("date")
    rows = {
        ("backward", True): [4164, 4566, 4696],
        ("forward", True): [4411, 4696, 4696],
        ("nearest", True): [4164, 4696, 4696],
    }
    for (strategy, coalesce), gdp_values in rows.items():
        got = _same(population, gdp, on="date", strategy=strategy, coalesce=coalesce)
        assert got["gdp"].to_list() == gdp_values
    got = _same(population, gdp, on="date", strategy="backward", coalesce=False)
    assert got["date_right"].to_list() == [date(2016, 1, 1), date(2018, 1, 1), date(2019, 1, 1)]

    gdp_dates = pl.date_range(date(2016, 1, 1), date(2020, 1, 1), "1y", eager=True)
    gdp2 = pl.DataFrame(
        {
            "country": ["Germany"] * 5 + ["Netherlands"] * 5,
            "date": pl.concat([gdp_dates, gdp_dates]),
            "gdp": [4164, 4411, 4566, 4696, 4827, 784, 833, 914, 910, 909],
        }
    ).sort("country", "date")
    pop2 = pl.DataFrame(
        {
            "country": ["Germany"] * 3 + ["Netherlands"] * 3,
            "date": [date(2016, 3, 1), date(2018, 8, 1), date(2019, 1, 1)] * 2,
            "population": [82.19, 82.66, 83.12, 17.11, 17.32, 17.40],
        }
    ).sort("country", "date")
    got = _same(pop2, gdp2, by="country", on="date", strategy="nearest")
    assert got["gdp"].to_list() == [4164, 4696, 4696, 784, 910, 910]
    lazy = _same(pop2.lazy(), gdp2.lazy(), by="country", on="date", strategy="nearest")
    assert_frame_equal(lazy, got, check_exact=True)


def test_import_asofgpu_does_not_import_polars_but_the_front_end_does():
    import subprocess
    import sys

    code = (
        "import sys, asofgpu; a = 'polars' in sys.modules; import asofgpu.polars; "
        "print(a, 'polars' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_the_by_warning_reaches_a_script_read_from_stdin():
    """Re-emitting polars' warning at the caller must not need the caller's source: a script
    piped into ``python -`` once raised ImportError ('__main__' is not a built-in module)."""
    import subprocess
    import sys

    script = (
        "import polars as pl, asofgpu.polars\n"
        "df = pl.DataFrame({'t': [1], 'g': ['a']})\n"
        "print(asofgpu.polars.join_asof(df, df, on='t', by='g', device='cpu').height)\n"
    )
    run = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "1"
    assert "<stdin>:3: UserWarning: Sortedness of columns cannot be checked" in run.stderr
