"""asofgpu.pandas.merge_asof against pandas.merge_asof: the same frames, the same errors.

Every comparison runs pandas itself on the same inputs: frames must be equal with dtypes,
index and column types checked, errors must have the same type and message. The one
deliberate difference (distances that wrap at integer extremes in pandas) is checked against
the oracle instead.
"""

from __future__ import annotations

import datetime
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from oracle import NO_MATCH, oracle
from pandas.errors import MergeError
from pandas.testing import assert_frame_equal

from asofgpu._pandas_semantics import NEGATIVE_TOLERANCE, PANDAS_3
from asofgpu.pandas import merge_asof

DIRECTIONS = ["backward", "forward", "nearest"]


def same_as_pandas(*args, **kwargs) -> pd.DataFrame:
    expected = pd.merge_asof(*args, **kwargs)
    got = merge_asof(*args, device="cpu", **kwargs)
    assert_frame_equal(
        got, expected, check_exact=True, check_index_type=True, check_column_type=True
    )
    return got


def same_error_as_pandas(*args, **kwargs) -> BaseException:
    with pytest.raises(Exception) as pandas_error:
        pd.merge_asof(*args, **kwargs)
    expected = pandas_error.value
    with pytest.raises(type(expected), match=f"^{re.escape(str(expected))}\\Z") as ours:
        merge_asof(*args, device="cpu", **kwargs)
    assert ours.type is type(expected)  # pytest.raises also accepts subclasses
    return expected


# --------------------------------------------------------------------------- random frames


def _keys(rng, n: int, kind: str):
    k = np.sort(rng.integers(0, 60, n))
    if kind == "float":
        return k / 4.0
    if kind == "float32":
        return (k / 10.0).astype(np.float32)
    if kind == "uint":
        return k.astype(np.uint64) + np.uint64(2**63)
    if kind == "datetime_ns":
        return pd.to_datetime(k, unit="s").as_unit("ns")
    if kind == "datetime_us_tz":
        return pd.to_datetime(k, unit="s").as_unit("us").tz_localize("America/New_York")
    return k


def _frames(seed: int, kind: str, n_left=40, n_right=30):
    rng = np.random.default_rng(seed)
    symbols = np.array(["A", "B", "C", None, np.nan], dtype=object)  # nulls group together
    right = pd.DataFrame(
        {
            "t": _keys(rng, n_right, kind),
            "g": rng.choice(symbols, n_right),
            "h": rng.integers(0, 3, n_right),
            "c": pd.Categorical(rng.choice(["u", "v", None], n_right), categories=["u", "v"]),
            "qty": rng.integers(0, 100, n_right),
            "flag": rng.random(n_right) > 0.5,
            "bid": rng.normal(size=n_right),
            "name": pd.array(rng.choice(["p", "q", None], n_right), dtype="str"),
            "n": pd.array(rng.integers(0, 5, n_right), dtype="Int64"),
        }
    )
    left = pd.DataFrame(
        {
            "t": _keys(rng, n_left, kind),
            "g": rng.choice(symbols, n_left),
            "h": rng.integers(0, 4, n_left),
            # the same categories in another order: pandas compares categoricals by value
            "c": pd.Categorical(rng.choice(["u", "v", None], n_left), categories=["v", "u"]),
            "bid": rng.normal(size=n_left),
        }
    )
    return left, right


TOLERANCES = {
    "int": [3, 0],
    "uint": [2],
    "float": [0.5, 2],
    "float32": [0.3],
    "datetime_ns": [pd.Timedelta("3s"), datetime.timedelta(seconds=1)],
    "datetime_us_tz": [pd.Timedelta("2s"), datetime.timedelta(milliseconds=4500)],
}
BYS = [None, "g", "h", "c", ["g", "h"], ["c", "g"]]


@pytest.mark.parametrize("exact", [True, False])
@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("kind", list(TOLERANCES))
def test_random_frames_match_pandas(kind, direction, exact):
    for seed, tolerance in enumerate([None, *TOLERANCES[kind]]):
        left, right = _frames(seed, kind)
        for by in (BYS[seed % 3], BYS[3 + seed % 3]):
            same_as_pandas(
                left,
                right,
                on="t",
                by=by,
                direction=direction,
                allow_exact_matches=exact,
                tolerance=tolerance,
            )


def test_random_frames_do_match_and_miss():
    """The random inputs exercise both outcomes (else the comparisons prove little)."""
    left, right = _frames(0, "int")
    got = merge_asof(left, right, on="t", by="g", tolerance=3, device="cpu")
    assert got["qty"].notna().any() and got["qty"].isna().any()


# --------------------------------------------------------------------------- key variants


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_left_on_right_on_keep_the_differently_named_right_keys(direction):
    left, right = _frames(7, "int")
    right = right.rename(columns={"t": "rt", "g": "rg", "h": "rh"})
    got = same_as_pandas(
        left,
        right,
        left_on="t",
        right_on="rt",
        left_by=["g", "h"],
        right_by=["rg", "rh"],
        direction=direction,
    )
    assert list(got.columns) == [
        "t",
        "g",
        "h",
        "c_x",
        "bid_x",
        "rt",
        "rg",
        "rh",
        "c_y",
        "qty",
        "flag",
        "bid_y",
        "name",
        "n",
    ]


@pytest.mark.parametrize("by", [None, "g"])
@pytest.mark.parametrize("direction", DIRECTIONS)
def test_index_joins(direction, by):
    left, right = _frames(8, "datetime_ns")
    left = left.set_index("t")
    right_indexed = right.set_index("t")
    both = same_as_pandas(
        left, right_indexed, left_index=True, right_index=True, by=by, direction=direction
    )
    assert both.index.equals(left.index)  # the left index, not a fresh RangeIndex
    same_as_pandas(left, right, left_index=True, right_on="t", by=by, direction=direction)
    got = same_as_pandas(
        left.reset_index(), right_indexed, left_on="t", right_index=True, by=by, direction=direction
    )
    # pandas 2 gives the row numbers as an Index of int64 (same_as_pandas checks that)
    assert isinstance(got.index, pd.RangeIndex) or not PANDAS_3


def test_right_index_with_an_empty_left_takes_the_right_index_type():
    left = pd.DataFrame({"t": np.array([], dtype=np.int64), "x": np.array([], dtype=float)})
    right = pd.DataFrame({"v": [1, 2]}, index=pd.Index([1, 5], name="t"))
    got = same_as_pandas(left, right, left_on="t", right_index=True)
    assert got.index.name == "t"


@pytest.mark.parametrize("which", ["left", "right", "both"])
def test_keys_given_as_arrays(which):
    left, right = _frames(9, "int")
    left_on = left["t"].to_numpy() if which in ("left", "both") else "t"
    right_on = right["t"].to_numpy() if which in ("right", "both") else "t"
    same_as_pandas(left, right, left_on=left_on, right_on=right_on)


def test_keys_given_as_index_levels_and_named_series():
    left, right = _frames(10, "float")
    same_as_pandas(left.set_index("t"), right.set_index("t"), on="t", by="h")
    same_as_pandas(left["t"], right, on="t")
    same_as_pandas(left, right[["t", "qty"]])  # on omitted: the one common column


@pytest.mark.parametrize("unit", ["ns", "us", "ms", "s"])
@pytest.mark.parametrize("tolerance", [pd.Timedelta("1500ms"), datetime.timedelta(seconds=2)])
def test_datetime_units_and_timedelta_tolerances(unit, tolerance):
    left = pd.DataFrame({"t": pd.to_datetime([0, 1500, 3000, 7000], unit="ms").as_unit(unit)})
    right = pd.DataFrame(
        {"t": pd.to_datetime([0, 1000, 5000], unit="ms").as_unit(unit), "v": [1, 2, 3]}
    )
    for direction in DIRECTIONS:
        same_as_pandas(left, right, on="t", tolerance=tolerance, direction=direction)


def test_other_key_dtypes():
    base = pd.DataFrame({"t": [1, 3, 3, 8]})
    right = pd.DataFrame({"t": [2, 3, 5], "v": [10, 20, 30]})
    for dtype in ["int8", "int32", "uint16", "Int64", "float32", "Float64"]:
        same_as_pandas(
            base.astype({"t": dtype}), right.astype({"t": dtype}), on="t", direction="nearest"
        )
    same_as_pandas(base.astype({"t": bool}), right.astype({"t": bool}), on="t")
    seconds = {"t": lambda frame: pd.to_timedelta(frame["t"], unit="s")}
    same_as_pandas(
        base.assign(**seconds),
        right.assign(**seconds),
        on="t",
        tolerance=datetime.timedelta(seconds=1),
    )
    days = pd.period_range("2020", periods=9, freq="D")
    periods = {"t": lambda frame: days[frame["t"].to_numpy()]}
    same_as_pandas(base.assign(**periods), right.assign(**periods), on="t", direction="forward")
    arrow = {"t": lambda frame: frame["t"].astype("int64[pyarrow]")}
    same_as_pandas(base.assign(**arrow), right.assign(**arrow), on="t", tolerance=1)


def test_float_keys_follow_pandas_arithmetic():
    """float32 distances are taken in float32, and inf - inf is NaN (a forward pick)."""
    left = pd.DataFrame({"t": np.array([1.1, 2.2, 3.3], dtype=np.float32)})
    right = pd.DataFrame({"t": np.array([1.0, 2.1, 3.2], dtype=np.float32), "v": [1, 2, 3]})
    for direction in DIRECTIONS:
        same_as_pandas(left, right, on="t", tolerance=0.1, direction=direction)
    left = pd.DataFrame({"t": [-np.inf, 0.0, np.inf]})
    right = pd.DataFrame({"t": [-np.inf, -np.inf, 1.0, np.inf, np.inf], "v": range(5)})
    got = same_as_pandas(left, right, on="t", direction="nearest")
    assert got["v"].tolist() == [0, 2, 3]  # the first of the equal infinite keys
    same_as_pandas(left, right, on="t", direction="nearest", tolerance=1)
    same_as_pandas(left, right, on="t", direction="nearest", allow_exact_matches=False)
    same_as_pandas(left, right, on="t", tolerance=float("nan"))  # pandas: never drops
    same_as_pandas(left, right.iloc[:0], on="t", direction="nearest")


# --------------------------------------------------------------------------- by keys


try:  # python-storage strings whose missing value is NaN (pandas 2.3 on)
    _PYTHON_NAN_STRINGS = pd.StringDtype("python", na_value=np.nan)
except TypeError:
    _PYTHON_NAN_STRINGS = "string[python]"


@pytest.mark.parametrize(
    "values",
    [
        pytest.param((["a", None, "b", np.nan], [np.nan, "a", None, "b"]), id="object-None-NaN"),
        pytest.param(([1.0, np.nan, -0.0, 2.0], [np.nan, 1.0, 0.0, 2.0]), id="float-NaN-zero"),
        pytest.param(
            (
                pd.array(["a", None, "b", None], dtype="str"),
                pd.array([None, "a", "b", None], dtype="str"),
            ),
            id="str",
        ),
        pytest.param(
            (
                pd.array(["a", None, "b", None], dtype="string[python]"),
                pd.array([None, "a", "b", None], dtype="string[python]"),
            ),
            id="string-python",
        ),
        pytest.param(
            (
                pd.array(["a", None, "b", None], dtype=_PYTHON_NAN_STRINGS),
                pd.array([None, "a", "b", None], dtype=_PYTHON_NAN_STRINGS),
            ),
            id="string-python-NaN",
            marks=pytest.mark.skipif(
                _PYTHON_NAN_STRINGS == "string[python]",
                reason="pandas before 2.3 has one flavour of python-storage strings",
            ),
        ),
        pytest.param(
            (pd.array([1, None, 2, None], dtype="Int64"), pd.array([None, 1, 2, 2], dtype="Int64")),
            id="Int64",
        ),
        pytest.param(
            (
                pd.Categorical(["a", None, "b", "a"]),
                pd.Categorical([None, "a", "b", "a"], categories=["b", "a"]),
            ),
            id="category",
        ),
        pytest.param(
            (
                pd.to_datetime([0, None, 5, None], unit="s"),
                pd.to_datetime([None, 0, 5, 5], unit="s"),
            ),
            id="datetime-NaT",
        ),
        pytest.param(
            (
                np.array([1, "a", (1, 2), True], dtype=object),
                np.array(["a", 1.0, (1, 2), 1], dtype=object),
            ),
            id="object-mixed",
        ),
        pytest.param(
            (
                pd.period_range("2020", periods=4, freq="D"),
                pd.period_range("2020", periods=4, freq="D")[::-1],
            ),
            id="period",
        ),
        pytest.param(
            (
                pd.array(["a", None, "b", None], dtype="string[pyarrow]"),
                pd.array([None, "a", "b", None], dtype="string[pyarrow]"),
            ),
            id="string-pyarrow",
        ),
        pytest.param(
            (
                pd.array(["a", None, "b", "a"], dtype=pd.ArrowDtype(pa.large_string())),
                pd.array([None, "a", "b", "b"], dtype=pd.ArrowDtype(pa.large_string())),
            ),
            id="large-string-pyarrow",
        ),
        pytest.param(
            (
                pd.array([1, None, 2, None], dtype="int64[pyarrow]"),
                pd.array([None, 1, 2, 2], dtype="int64[pyarrow]"),
            ),
            id="int64-pyarrow",
        ),
        pytest.param(
            (
                pd.array([1.0, None, np.nan, 2.0], dtype="double[pyarrow]"),
                pd.array([np.nan, 1.0, None, 2.0], dtype="double[pyarrow]"),
            ),
            id="double-pyarrow-NaN-and-null",
        ),
        pytest.param(
            (
                pd.array([0, None, 5, None], dtype=pd.ArrowDtype(pa.timestamp("s"))),
                pd.array([None, 0, 5, 5], dtype=pd.ArrowDtype(pa.timestamp("s"))),
            ),
            id="timestamp-pyarrow",
        ),
    ],
)
def test_by_nulls_match_nulls_and_values_match_as_pandas_hashes_them(values):
    lg, rg = values
    left = pd.DataFrame({"t": [1, 2, 3, 4], "g": lg})
    right = pd.DataFrame({"t": [0, 1, 2, 3], "g": rg, "v": [10, 20, 30, 40]})
    for direction in DIRECTIONS:
        same_as_pandas(left, right, on="t", by="g", direction=direction)


def test_null_by_keys_match_each_other():
    left = pd.DataFrame({"t": [5, 5], "g": [None, "a"]})
    right = pd.DataFrame({"t": [1, 2], "g": [np.nan, "b"], "v": [1, 2]})
    got = same_as_pandas(left, right, on="t", by="g")
    assert got["v"].tolist()[0] == 1 and np.isnan(got["v"].tolist()[1])


# --------------------------------------------------------------------------- output frame


@pytest.mark.parametrize("suffixes", [("_x", "_y"), (None, "_r"), ("_l", None), ["_a", "_b"]])
def test_suffixes_go_on_both_sides_of_overlapping_columns(suffixes):
    left, right = _frames(11, "int")
    got = same_as_pandas(left, right, on="t", suffixes=suffixes)
    lsuffix, rsuffix = suffixes
    assert ("bid" if lsuffix is None else f"bid{lsuffix}") in got.columns
    assert ("bid" if rsuffix is None else f"bid{rsuffix}") in got.columns


def test_unmatched_rows_upcast_int_and_bool_only_when_some_row_is_unmatched():
    right = pd.DataFrame(
        {
            "t": [1, 2, 3],
            "i": np.array([1, 2, 3], dtype=np.int32),
            "u": np.array([1, 2, 3], dtype=np.uint8),
            "b": [True, False, True],
            "f": np.array([1, 2, 3], dtype=np.float32),
            "I": pd.array([1, 2, 3], dtype="Int64"),
            "c": pd.Categorical(["x", "y", "x"]),
            "s": pd.array(["p", "q", "r"], dtype="str"),
            "z": pd.date_range("2020", periods=3, tz="Europe/Paris"),
        }
    )
    matched = same_as_pandas(pd.DataFrame({"t": [1, 3]}), right, on="t")
    assert matched.dtypes.drop("t").to_dict() == right.dtypes.drop("t").to_dict()
    missed = same_as_pandas(pd.DataFrame({"t": [0, 3]}), right, on="t")
    assert missed["i"].dtype == np.float64 and missed["u"].dtype == np.float64
    assert missed["b"].dtype == object
    kept = ["f", "I", "c", "s", "z"]
    assert missed.dtypes[kept].to_dict() == right.dtypes[kept].to_dict()


@pytest.mark.parametrize("rows", [5, 70_000])  # 70,000: asofgpu's gather on all cores
def test_arrow_backed_columns_come_back_as_pandas_gives_them(rows):
    """Right columns of pyarrow dtypes are gathered by asofgpu (numbers on all cores), the
    others by pandas: both as pandas' reindex makes them, nulls where no row matched."""
    rng = np.random.default_rng(4)
    t = np.sort(rng.integers(0, 3 * rows, rows))
    right = pd.DataFrame(
        {
            "t": t,
            "f": pd.array(rng.random(rows), dtype="double[pyarrow]"),
            "i": pd.array(rng.integers(0, 9, rows), dtype="int32[pyarrow]"),
            "n": pd.array(np.where(rng.random(rows) < 0.2, None, 1.5), dtype="float64[pyarrow]"),
            "s": pd.array(rng.choice(["a", "bb", None], rows), dtype="string[pyarrow]"),
            "z": pd.array(
                pd.date_range("2020", periods=rows, freq="s", tz="UTC"),
                dtype=pd.ArrowDtype(pa.timestamp("ns", tz="UTC")),
            ),
            "l": pd.array([[k] for k in range(rows)], dtype=pd.ArrowDtype(pa.list_(pa.int64()))),
            "b": pd.array(rng.random(rows) < 0.5, dtype="bool[pyarrow]"),
            "x": rng.random(rows),
            "c": pd.Categorical(rng.choice(["p", "q"], rows)),
        }
    )
    left = pd.DataFrame({"t": np.sort(rng.integers(-5, 3 * rows + 5, rows))})
    for direction in DIRECTIONS:
        got = same_as_pandas(left, right, on="t", direction=direction, tolerance=2)
        assert got.dtypes.drop("t").to_dict() == right.dtypes.drop("t").to_dict()


def test_duplicate_and_non_string_column_labels():
    right = pd.DataFrame([[0, 1, 2.0], [1, 2, 3.0], [2, 3, 4.0]], columns=["t", "v", "v"])
    same_as_pandas(pd.DataFrame({"t": [-1, 1, 5]}), right, on="t")
    left = pd.DataFrame({0: [-1, 1, 5], 1: [1, 2, 3]})
    same_as_pandas(left, pd.DataFrame({0: [0, 1, 2], 1: [5, 6, 7]}), on=0)


def test_attrs_propagate_as_in_pandas():
    left, right = pd.DataFrame({"t": [1, 2]}), pd.DataFrame({"t": [1, 2], "v": [3, 4]})
    left.attrs = right.attrs = {"source": "feed"}
    assert merge_asof(left, right, on="t", device="cpu").attrs == {"source": "feed"}


# --------------------------------------------------------------------------- pandas' examples


def _docstring_frames():
    quotes = pd.DataFrame(
        {
            "time": pd.to_datetime(
                [
                    "2016-05-25 13:30:00.023",
                    "2016-05-25 13:30:00.023",
                    "2016-05-25 13:30:00.030",
                    "2016-05-25 13:30:00.041",
                    "2016-05-25 13:30:00.048",
                    "2016-05-25 13:30:00.049",
                    "2016-05-25 13:30:00.072",
                    "2016-05-25 13:30:00.075",
                ]
            ),
            "ticker": ["GOOG", "MSFT", "MSFT", "MSFT", "GOOG", "AAPL", "GOOG", "MSFT"],
            "bid": [720.50, 51.95, 51.97, 51.99, 720.50, 97.99, 720.50, 52.01],
            "ask": [720.93, 51.96, 51.98, 52.00, 720.93, 98.01, 720.88, 52.03],
        }
    )
    trades = pd.DataFrame(
        {
            "time": pd.to_datetime(
                [
                    "2016-05-25 13:30:00.023",
                    "2016-05-25 13:30:00.038",
                    "2016-05-25 13:30:00.048",
                    "2016-05-25 13:30:00.048",
                    "2016-05-25 13:30:00.048",
                ]
            ),
            "ticker": ["MSFT", "MSFT", "GOOG", "GOOG", "AAPL"],
            "price": [51.95, 51.95, 720.77, 720.92, 98.0],
            "quantity": [75, 155, 100, 100, 100],
        }
    )
    return trades, quotes


def test_pandas_docstring_examples():
    left = pd.DataFrame({"a": [1, 5, 10], "left_val": ["a", "b", "c"]})
    right = pd.DataFrame({"a": [1, 2, 3, 6, 7], "right_val": [1, 2, 3, 6, 7]})
    assert same_as_pandas(left, right, on="a")["right_val"].tolist() == [1, 3, 7]
    same_as_pandas(left, right, on="a", allow_exact_matches=False)
    same_as_pandas(left, right, on="a", direction="forward")
    assert same_as_pandas(left, right, on="a", direction="nearest")["right_val"].tolist() == [
        1,
        6,
        7,
    ]
    same_as_pandas(left.set_index("a"), right.set_index("a"), left_index=True, right_index=True)

    trades, quotes = _docstring_frames()
    got = same_as_pandas(trades, quotes, on="time", by="ticker")
    assert got["bid"].tolist()[:4] == [51.95, 51.97, 720.50, 720.50]
    got = same_as_pandas(trades, quotes, on="time", by="ticker", tolerance=pd.Timedelta("2ms"))
    assert got["bid"].isna().tolist() == [False, True, False, False, True]
    got = same_as_pandas(
        trades,
        quotes,
        on="time",
        by="ticker",
        tolerance=pd.Timedelta("10ms"),
        allow_exact_matches=False,
    )
    assert got["bid"].notna().tolist() == [False, True, False, False, False]


# --------------------------------------------------------------------------- integer extremes


I64 = np.iinfo(np.int64)
EXTREMES = [
    pytest.param(
        [2**62, I64.max], [-(2**62) - 10, I64.max - 1], "nearest", None, id="int64-nearest"
    ),
    pytest.param([I64.max], [I64.min], "backward", 5, id="int64-tolerance"),
    pytest.param([I64.min], [I64.max], "forward", 5, id="int64-forward-tolerance"),
    pytest.param(
        np.array([100, 120], np.int8),
        np.array([-100, -120, 127], np.int8),
        "backward",
        5,
        id="int8-tolerance",
    ),
]


@pytest.mark.parametrize("left_keys, right_keys, direction, tolerance", EXTREMES)
def test_integer_extremes_are_exact_where_pandas_wraps(left_keys, right_keys, direction, tolerance):
    left = pd.DataFrame({"t": np.sort(np.asarray(left_keys))})
    right = pd.DataFrame({"t": np.sort(np.asarray(right_keys))})
    right["v"] = np.arange(len(right))
    got = merge_asof(left, right, on="t", direction=direction, tolerance=tolerance, device="cpu")
    gmap = oracle(
        [int(k) for k in left["t"]],
        [int(k) for k in right["t"]],
        strategy=direction,
        tolerance=tolerance,
        nearest_tie="backward",
    )
    expected = [np.nan if m == NO_MATCH else float(m) for m in gmap]
    np.testing.assert_array_equal(got["v"].astype(float), expected)  # exact; NaN at NaN
    # The case is one where pandas' arithmetic wraps: its answer differs.
    wrapped = pd.merge_asof(left, right, on="t", direction=direction, tolerance=tolerance)
    assert not got["v"].astype(float).equals(wrapped["v"].astype(float))


def test_categorical_keys_are_joined_by_value():
    """pandas checks sortedness in category order but joins on the values; asofgpu joins on
    the values throughout (a documented difference)."""
    left = pd.DataFrame({"t": pd.Categorical([3, 1], categories=[3, 1, 2])})
    right = pd.DataFrame({"t": pd.Categorical([3, 2], categories=[3, 1, 2]), "v": [0, 1]})
    got = merge_asof(left, right, on="t", device="cpu")
    gmap = oracle([3, 1], [3, 2], nearest_tie="backward")
    assert got["v"].tolist()[0] == gmap[0] == 0 and gmap[1] == NO_MATCH
    assert np.isnan(got["v"].tolist()[1])


def test_datetime_extremes_are_exact_where_pandas_wraps():
    left = pd.DataFrame({"t": pd.to_datetime([pd.Timestamp.max])})
    right = pd.DataFrame({"t": pd.to_datetime([pd.Timestamp.min]), "v": [1]})
    got = merge_asof(left, right, on="t", tolerance=pd.Timedelta(1), device="cpu")
    assert got["v"].isna().all()  # ~584 years apart: not within 1 ns
    assert pd.merge_asof(left, right, on="t", tolerance=pd.Timedelta(1))["v"].notna().all()


# --------------------------------------------------------------------------- errors


_ARROW_SECONDS = pd.ArrowDtype(pa.timestamp("s"))
L = pd.DataFrame(
    {"t": [1, 5, 10], "lv": [1, 2, 3], "g": ["a", "b", "a"]},
    index=pd.Index([10, 20, 30], name="li"),
)
R = pd.DataFrame(
    {"t": [2, 3, 7], "rv": [4, 5, 6], "g": ["a", "a", "b"]}, index=pd.Index([7, 8, 9], name="ri")
)

DECIMAL = pd.ArrowDtype(pa.decimal128(25, 1))
ERRORS = {
    "direction": ((L, R), dict(on="t", direction="x"), MergeError, "direction invalid: x"),
    "exact": (
        (L, R),
        dict(on="t", allow_exact_matches="x"),
        MergeError,
        "allow_exact_matches must be boolean, passed x",
    ),
    "tolerance-negative": (
        (L, R),
        dict(on="t", tolerance=-1),
        MergeError,
        NEGATIVE_TOLERANCE,
    ),
    "tolerance-negative-timedelta": (
        (L.assign(t=pd.to_datetime(L.t, unit="s")), R.assign(t=pd.to_datetime(R.t, unit="s"))),
        dict(on="t", tolerance=pd.Timedelta("-1s")),
        MergeError,
        NEGATIVE_TOLERANCE,
    ),
    "tolerance-float-on-int": (
        (L, R),
        dict(on="t", tolerance=1.0),
        MergeError,
        "incompatible tolerance 1.0, must be compat with type",
    ),
    "tolerance-bool-on-int": (
        (L, R),
        dict(on="t", tolerance=True),
        MergeError,
        "incompatible tolerance True",
    ),
    "tolerance-timedelta-on-int": (
        (L, R),
        dict(on="t", tolerance=pd.Timedelta(1)),
        MergeError,
        "incompatible tolerance",
    ),
    "tolerance-numpy-timedelta": (
        (L.assign(t=pd.to_datetime(L.t, unit="s")), R.assign(t=pd.to_datetime(R.t, unit="s"))),
        dict(on="t", tolerance=np.timedelta64(1, "s")),
        MergeError,
        "incompatible tolerance",
    ),
    "tolerance-int-on-datetime": (
        (L.assign(t=pd.to_datetime(L.t, unit="s")), R.assign(t=pd.to_datetime(R.t, unit="s"))),
        dict(on="t", tolerance=1),
        MergeError,
        "incompatible tolerance 1",
    ),
    "tolerance-bool-key": (
        (L.astype({"t": bool}), R.astype({"t": bool})),
        dict(on="t", tolerance=1),
        MergeError,
        "key must be integer, timestamp or float",
    ),
    "tolerance-overflow-int8": (
        (L.astype({"t": "int8"}), R.astype({"t": "int8"})),
        dict(on="t", tolerance=1000),
        OverflowError,
        "value too large to convert to npy_int8",
    ),
    "tolerance-overflow-int64": (
        (L, R),
        dict(on="t", tolerance=2**64),
        OverflowError,
        "Python int too large to convert to C long",
    ),
    "tolerance-overflow-timedelta": (
        (
            L.assign(t=pd.to_datetime(L.t, unit="s").dt.as_unit("ns")),
            R.assign(t=pd.to_datetime(R.t, unit="s").dt.as_unit("ns")),
        ),
        dict(on="t", tolerance=datetime.timedelta(days=999_999)),
        pd.errors.OutOfBoundsTimedelta,
        "without overflow",
    ),
    "keys-int-vs-float": (
        (L, R.astype({"t": float})),
        dict(on="t"),
        MergeError,
        "incompatible merge keys [0] dtype('int64') and dtype('float64'), must be the same type",
    ),
    "keys-int-vs-int32": (
        (L, R.astype({"t": "int32"})),
        dict(on="t"),
        MergeError,
        "must be the same type",
    ),
    "keys-units": (
        (
            L.assign(t=pd.to_datetime(L.t, unit="s").astype("M8[ns]")),
            R.assign(t=pd.to_datetime(R.t, unit="s").astype("M8[us]")),
        ),
        dict(on="t"),
        MergeError,
        "must be the same type",
    ),
    "keys-timezones": (
        (
            L.assign(t=pd.to_datetime(L.t, unit="s", utc=True)),
            R.assign(t=pd.to_datetime(R.t, unit="s").dt.tz_localize("Asia/Tokyo")),
        ),
        dict(on="t"),
        MergeError,
        "must be the same type",
    ),
    "by-types": (
        (L, R.assign(g=[1, 2, 3])),
        dict(on="t", by="g"),
        MergeError,
        "incompatible merge keys [0]",
    ),
    "by-categories": (
        (L.astype({"g": "category"}), R.assign(g=pd.Categorical(["a", "c", "c"]))),
        dict(on="t", by="g"),
        MergeError,
        "both sides category, but not equal ones",
    ),
    "key-object": (
        (L.astype({"t": object}), R.astype({"t": object})),
        dict(on="t"),
        MergeError,
        "Incompatible merge dtype, dtype('O') and dtype('O'), both sides must have numeric dtype",
    ),
    "key-str": (
        (L.astype({"t": str}), R.astype({"t": str})),
        dict(on="t"),
        MergeError,
        "both sides must have numeric dtype",
    ),
    "key-string-category": (
        (
            L.astype({"t": str}).astype({"t": "category"}),
            R.astype({"t": str}).astype({"t": "category"}),
        ),
        dict(on="t"),
        MergeError,
        "incompatible merge keys [0]",
    ),
    "key-float16": (
        (L.astype({"t": "float16"}), R.astype({"t": "float16"})),
        dict(on="t"),
        NotImplementedError,
        "float16 indexes are not supported",
    ),
    "key-decimal": (
        (L.astype({"t": DECIMAL}), R.astype({"t": DECIMAL})),
        dict(on="t"),
        TypeError,
        "No matching signature found",
    ),
    "several-keys": ((L, R), dict(on=["t", "g"]), MergeError, "can only asof on a key for left"),
    "several-common-columns": ((L, R), {}, MergeError, "can only asof on a key for left"),
    "no-common-columns": (
        (L[["lv"]], R[["rv"]]),
        {},
        MergeError,
        "No common columns to perform merge on.",
    ),
    "on-and-left_on": (
        (L, R),
        dict(on="t", left_on="t"),
        MergeError,
        'Can only pass argument "on" OR "left_on" and "right_on"',
    ),
    "on-and-left_index": (
        (L, R),
        dict(on="t", left_index=True),
        MergeError,
        'Can only pass argument "on" OR "left_index" and "right_index"',
    ),
    "left_index-only": (
        (L, R),
        dict(left_index=True),
        MergeError,
        "Must pass right_on or right_index=True",
    ),
    "right_index-only": (
        (L, R),
        dict(right_index=True),
        MergeError,
        "Must pass left_on or left_index=True",
    ),
    "left_on-only": ((L, R), dict(left_on="t"), MergeError, 'Must pass "right_on" OR'),
    "right_on-only": ((L, R), dict(right_on="t"), MergeError, 'Must pass "left_on" OR'),
    "left_on-and-left_index": (
        (L, R),
        dict(left_on="t", right_on="t", left_index=True),
        MergeError,
        'Can only pass argument "left_on" OR "left_index"',
    ),
    "right_on-and-right_index": (
        (L, R),
        dict(left_on="t", right_on="t", right_index=True),
        MergeError,
        'Can only pass argument "right_on" OR',
    ),
    "left_index-not-bool": (
        (L, R),
        dict(left_index=1, right_on="t"),
        ValueError,
        "left_index parameter must be of type bool",
    ),
    "multiindex-left": (
        (L.set_index("g", append=True), R.set_index("t")),
        dict(left_index=True, right_index=True),
        MergeError,
        "left can only have one index",
    ),
    "left_index-levels": (
        (L.set_index("g", append=True), R),
        dict(left_index=True, right_on="t"),
        ValueError,
        "len(right_on) must equal the number of levels in the index",
    ),
    "missing-column": ((L, R), dict(on="zz"), KeyError, "Requested level (zz)"),
    "missing-by": ((L, R), dict(on="t", by="zz"), KeyError, "zz"),
    "by-and-left_by": (
        (L, R),
        dict(on="t", by="g", left_by="g"),
        MergeError,
        "Can only pass by OR left_by and right_by",
    ),
    "missing-right_by": ((L, R), dict(on="t", left_by="g"), MergeError, "missing right_by"),
    "missing-left_by": ((L, R), dict(on="t", right_by="g"), MergeError, "missing left_by"),
    "by-lengths": (
        (L, R),
        dict(on="t", left_by=["g", "lv"], right_by=["g"]),
        MergeError,
        "left_by and right_by must be the same length",
    ),
    "ambiguous-label": (
        (L.set_index("t", drop=False), R),
        dict(on="t"),
        ValueError,
        "'t' is both an index level and a column label, which is ambiguous.",
    ),
    "duplicate-label": (
        (pd.DataFrame([[1, 2]], columns=["t", "t"]), R),
        dict(on="t"),
        ValueError,
        "The column label 't' is not unique.",
    ),
    "column-levels": (
        (L, pd.concat({"a": R}, axis=1)),
        dict(on="t"),
        MergeError,
        "Not allowed to merge between different levels.",
    ),
    "unsorted-left": ((L.iloc[::-1], R), dict(on="t"), ValueError, "left keys must be sorted"),
    "unsorted-right": ((L, R.iloc[::-1]), dict(on="t"), ValueError, "right keys must be sorted"),
    "unsorted-right-by": (
        (L, R.iloc[::-1]),
        dict(on="t", by="g"),
        ValueError,
        "right keys must be sorted",
    ),
    "null-left": (
        (L.astype({"t": float}).assign(t=[1.0, np.nan, 3.0]), R.astype({"t": float})),
        dict(on="t"),
        ValueError,
        "Merge keys contain null values on left side",
    ),
    "null-right": (
        (L.astype({"t": float}), R.astype({"t": float}).assign(t=[np.nan, 1.0, 2.0])),
        dict(on="t"),
        ValueError,
        "Merge keys contain null values on right side",
    ),
    "null-left-NaT": (
        (
            L.assign(t=pd.to_datetime([None, 1, 2], unit="s")),
            R.assign(t=pd.to_datetime(R.t, unit="s")),
        ),
        dict(on="t"),
        ValueError,
        "Merge keys contain null values on left side",
    ),
    "unsorted-left-pyarrow-time": (
        (
            L.assign(t=pd.array([3, 1, 2], dtype=_ARROW_SECONDS)),
            R.assign(t=pd.array([0, 1, 2], dtype=_ARROW_SECONDS)),
        ),
        dict(on="t"),
        ValueError,
        "left keys must be sorted",
    ),
    "null-right-pyarrow-time": (
        (
            L.assign(t=pd.array([1, 2, 3], dtype=_ARROW_SECONDS)),
            R.assign(t=pd.array([0, None, 2], dtype=_ARROW_SECONDS)),
        ),
        dict(on="t"),
        ValueError,
        "Merge keys contain null values on right side",
    ),
    "null-left-NA": (
        (
            L.astype({"t": "Int64"}).assign(t=pd.array([1, None, 3], dtype="Int64")),
            R.astype({"t": "Int64"}),
        ),
        dict(on="t"),
        ValueError,
        "Merge keys contain null values on left side",
    ),
    "suffixes-empty": (
        (L, R),
        dict(on="t", suffixes=("", "")),
        ValueError,
        "columns overlap but no suffix specified",
    ),
    "suffixes-duplicate": (
        (L.assign(g_y=1), R),
        dict(on="t", suffixes=("_x", "_y")),
        MergeError,
        "Passing 'suffixes' which cause duplicate columns {'g_y'} is not allowed.",
    ),
    "suffixes-dict": (
        (L, R),
        dict(on="t", suffixes={"a": 1}),
        TypeError,
        "Passing 'suffixes' as a <class 'dict'>, is not supported.",
    ),
    "suffixes-str": (
        (L, R),
        dict(on="t", suffixes="_x"),
        TypeError,
        "Passing 'suffixes' as a <class 'str'>, is not supported.",
    ),
    "series-without-name": (
        (L["t"].rename(None), R),
        dict(on="t"),
        ValueError,
        "Cannot merge a Series without a name",
    ),
    "not-a-frame": (
        ([1, 2], R),
        dict(on="t"),
        TypeError,
        "Can only merge Series or DataFrame objects, a <class 'list'> was passed",
    ),
    "by-float16": (
        (L.assign(g=np.float16(1)), R.assign(g=np.float16(1))),
        dict(on="t", by="g"),
        KeyError,
        "float16",
    ),
    "by-unhashable": (
        (L.assign(g=[[1]] * 3), R.assign(g=[[1]] * 3)),
        dict(on="t", by="g"),
        TypeError,
        "unhashable type: 'list'",
    ),
    "empty-by": ((L, R), dict(on="t", by=[]), IndexError, "list index out of range"),
}


# pandas 2 accepts these; pandas 3 refuses them, as asofgpu does with either.
PANDAS_3_ERRORS = {"right_on-and-right_index", "suffixes-duplicate"}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_have_pandas_type_and_message(case):
    frames, kwargs, error_type, fragment = ERRORS[case]
    if case in PANDAS_3_ERRORS and not PANDAS_3:
        pytest.skip("pandas 2 accepts it: test_pandas_2_accepts_what_pandas_3_refuses")
    expected = same_error_as_pandas(*frames, **kwargs)
    assert type(expected) is error_type and fragment in str(expected)  # the case is as named


@pytest.mark.skipif(PANDAS_3, reason="pandas 2's behaviour")
def test_pandas_2_accepts_what_pandas_3_refuses():
    """Under pandas 2, a suffix that makes a name of the other side is pandas' result (two
    columns of one name); ``right_on`` with ``right_index`` asofgpu still refuses, as pandas 3
    does (pandas 2 joins on the index and keeps both keys' columns)."""
    frames, kwargs, _, _ = ERRORS["suffixes-duplicate"]
    same_as_pandas(*frames, **kwargs)
    frames, kwargs, error_type, fragment = ERRORS["right_on-and-right_index"]
    pd.merge_asof(*frames, **kwargs)
    with pytest.raises(error_type, match=re.escape(fragment)):
        merge_asof(*frames, device="cpu", **kwargs)


def test_a_string_key_picked_by_pandas_label_rules_is_refused_as_pandas_refuses_it():
    """A boolean ``by`` array over integer column labels makes column 1 (pandas 3's default
    strings: Arrow arrays of a StringDtype, not an ArrowDtype) a key: an AttributeError here."""
    left = pd.DataFrame({0: [1, 5, 9], 1: ["a", "b", "a"], 2: [1, 2, 3]})
    right = pd.DataFrame({0: [0, 4, 8], 1: ["a", "a", "b"], 3: [1.0, 2.0, 3.0]})
    same_error_as_pandas(left, right, on=0, by=np.array([True, False, True]))


def test_error_precedence_follows_pandas():
    """Several problems at once: pandas' order decides which one is reported."""
    same_error_as_pandas(L.iloc[::-1], R.iloc[::-1], on="t", suffixes=("", ""))
    same_error_as_pandas(L, R.astype({"t": float}), on="t", tolerance=-1)
    same_error_as_pandas(L, R, on="t", direction="x", allow_exact_matches="x")
    # the right side's order and nulls are checked before the left key's type fails
    d1, d2 = pd.Timestamp("2020-01-01").date(), pd.Timestamp("2020-01-02").date()
    dates = pd.DataFrame({"t": pd.array([d1], dtype="date32[pyarrow]")})
    unsorted = pd.DataFrame({"t": pd.array([d2, d1], dtype="date32[pyarrow]"), "v": [1, 2]})
    assert "right keys must be sorted" in str(same_error_as_pandas(dates, unsorted, on="t"))
    nulls = pd.DataFrame({"t": pd.array([None, None], dtype="null[pyarrow]"), "v": [1, 2]})
    empty = pd.DataFrame({"t": pd.array([], dtype="null[pyarrow]")})
    assert "null values on right side" in str(same_error_as_pandas(empty, nulls, on="t"))
    same_error_as_pandas(dates, dates.assign(v=1), on="t")  # no order problem: the type's


@pytest.mark.parametrize("na_value", [pd.NA, np.nan])
def test_python_storage_strings_stay_strings(na_value):
    """pandas keeps string[python] by-keys as strings (their index level keeps its dtype)
    and refuses to join them to object or to the other missing-value flavour."""
    try:
        dtype = pd.StringDtype("python", na_value=na_value)
    except TypeError:
        pytest.skip("pandas before 2.3 has one flavour of python-storage strings")
    left = pd.DataFrame({"t": [1, 2], "g": pd.array(["a", "b"], dtype=dtype)})
    right = pd.DataFrame({"t": [1, 2], "g": pd.array(["a", "b"], dtype=dtype), "v": [1, 2]})
    got = same_as_pandas(left.set_index("g"), right.set_index("g"), on="t", by="g")
    assert got.index.dtype == dtype or got["g"].dtype == dtype
    same_error_as_pandas(left.astype({"g": object}), right, on="t", by="g")
    other = pd.StringDtype("python", na_value=np.nan if na_value is pd.NA else pd.NA)
    same_error_as_pandas(left.astype({"g": other}), right, on="t", by="g")


def test_device_is_validated():
    with pytest.raises(ValueError, match="device must be one of"):
        merge_asof(L, R, on="t", device="gpu")


def test_never_calls_pandas_merge_asof(monkeypatch):
    """pandas' own as-of merge, every way to reach it, made to refuse: the join is
    asofgpu's."""
    import pandas.core.reshape.merge as pandas_merge

    def refuse(*args, **kwargs):
        raise AssertionError("pandas' merge_asof was called")

    for name in ("merge_asof", "_AsOfMerge"):
        monkeypatch.setattr(pandas_merge, name, refuse)
    monkeypatch.setattr(pd, "merge_asof", refuse)
    got = merge_asof(L, R, on="t", by="g", device="cpu")
    assert got["rv"].isna().tolist() == [True, True, False] and got["rv"].iloc[2] == 5.0


def test_object_columns_stay_object():
    """pandas 3 reads an object array of strings as its str dtype unless told otherwise: the
    gathered right column must keep the object dtype pandas' own result has."""
    left = pd.DataFrame({"t": [1, 5]})
    right = pd.DataFrame({"t": [2], "s": pd.Series(["a"], dtype=object)})
    assert same_as_pandas(left, right, on="t")["s"].dtype == object


def test_arrow_columns_gathered_by_an_int32_map_keep_their_nulls():
    """rows_of with an int32 map: the no-match entries must not wrap to row 0."""
    from asofgpu._pandas_semantics import rows_of

    frame = pd.DataFrame({"q": pd.array([1, 2], dtype=pd.ArrowDtype(pa.int64()))})
    taken = rows_of(frame, np.array([1, -1, 0], dtype=np.int32))
    assert taken["q"].tolist() == [2, pd.NA, 1]


@pytest.mark.parametrize("rmap_dtype", [np.int32, np.intp])
@pytest.mark.parametrize("with_missing", [False, True])
def test_rows_of_takes_numpy_numbers_as_reindex_does(thresholds, with_missing, rmap_dtype):
    """Above ``parallel_gather_rows`` numpy floats (and integers, when no entry is missing)
    are taken by asofgpu's take: values, NaN and dtypes must be reindex's, for every dtype
    beside them that pandas still takes (bools, objects, datetimes, masked integers)."""
    from asofgpu._backend import walks
    from asofgpu._pandas_semantics import rows_of

    rng = np.random.default_rng(4)
    n = 300
    frame = pd.DataFrame(
        {
            "f64": rng.normal(size=n),
            "f32": rng.normal(size=n).astype(np.float32),
            "i64": rng.integers(-(2**62), 2**62, n),
            "i32": rng.integers(-100, 100, n).astype(np.int32),
            "u8": rng.integers(0, 255, n).astype(np.uint8),
            "b": rng.random(n) < 0.5,
            "o": pd.Series([f"s{i}" for i in range(n)], dtype=object),
            "dt": pd.date_range("2026-01-01", periods=n, freq="s"),
            "masked": pd.array(rng.integers(0, 9, n), dtype="Int64"),
        }
    )
    frame.loc[3, "f64"] = np.nan
    rmap = rng.integers(0, n, 2 * n).astype(rmap_dtype)
    if with_missing:
        rmap[rng.random(2 * n) < 0.2] = -1
    thresholds(parallel_gather_rows=0)
    with walks.recorded() as decisions:
        taken = rows_of(frame, rmap)
    assert ("gathers_in_parallel", True) in decisions
    want = frame.reset_index(drop=True).reindex(rmap.astype(np.intp)).reset_index(drop=True)
    assert_frame_equal(taken, want, check_exact=True)
    assert taken["f64"].isna().sum() == (rmap == 3).sum() + with_missing * (rmap == -1).sum()


def test_rows_of_refuses_a_position_past_the_frame(thresholds):
    """The take on all cores reads where the positions say: one past the frame is an error,
    as pandas' take makes it, never a read past the values."""
    from asofgpu._pandas_semantics import rows_of

    thresholds(parallel_gather_rows=0)
    frame = pd.DataFrame({"x": [1.0, 2.0]})
    with pytest.raises(IndexError, match="position 2 is past the frame's 2 rows"):
        rows_of(frame, np.array([0, -1, 2]))
