"""asofgpu.polars.splice_join and asofgpu.pandas.splice_join: the splice join's rows (its naive
oracle's maps) taken from the frames by the libraries' own gathers, dtypes as they keep them."""

from __future__ import annotations

import datetime

import numpy as np
import pyarrow as pa
import pytest

from oracle import NO_MATCH, splice_oracle

pl = pytest.importorskip("polars")
pd = pytest.importorskip("pandas")
from polars.testing import assert_frame_equal as assert_polars_equal  # noqa: E402

import asofgpu as ag  # noqa: E402
import asofgpu.pandas as agpd  # noqa: E402
import asofgpu.polars as agpl  # noqa: E402

T0 = datetime.datetime(2024, 3, 1, 9, 30)


def _sides(seed: int, n_left: int = 30, n_right: int = 25):
    """Two sides with null keys, ties and by groups, as Python values."""
    rng = np.random.default_rng(seed)

    def side(n, names):
        keys = [None if rng.random() < 0.1 else int(k) for k in rng.integers(0, 20, n)]
        by = [None if rng.random() < 0.1 else str(rng.choice(names)) for _ in range(n)]
        return keys, by

    return side(n_left, ["a", "b", "c"]), side(n_right, ["a", "b"])


def _expected_maps(left_keys, right_keys, left_by, right_by, **options):
    return splice_oracle(
        left_keys, right_keys, [(g,) for g in left_by], [(g,) for g in right_by], **options
    )


# --------------------------------------------------------------------------- polars


def _polars_frames(seed: int):
    (lk, lb), (rk, rb) = _sides(seed)
    times = [None if k is None else T0 + datetime.timedelta(seconds=k) for k in lk]
    left = pl.DataFrame(
        {
            "t": pl.Series(times, dtype=pl.Datetime("us", "Europe/Amsterdam")),
            "sym": pl.Series(lb, dtype=pl.Categorical),
            "qty": list(range(len(lk))),
            "flag": [i % 3 == 0 for i in range(len(lk))],
        }
    )
    rtimes = [None if k is None else T0 + datetime.timedelta(seconds=k) for k in rk]
    right = pl.DataFrame(
        {
            "t": pl.Series(rtimes, dtype=pl.Datetime("ns", "Europe/Amsterdam")),
            "sym": pl.Series(rb, dtype=pl.Categorical),
            "bid": [float(i) / 4 for i in range(len(rk))],
            "venue": pl.Series(
                [f"v{i % 4}" for i in range(len(rk))], dtype=pl.Enum(["v0", "v1", "v2", "v3"])
            ),
            "tags": [[i, i + 1] for i in range(len(rk))],
        }
    )
    return left, right, (lk, rk, lb, rb)


def _taken(frame, gmap):
    index = pl.Series([None if m == NO_MATCH else m for m in gmap], dtype=pl.Int64)
    return frame.select(pl.all().gather(index))


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("tolerance", [None, "3s"])
def test_polars_rows_are_the_oracles(seed, tolerance):
    left, right, (lk, rk, lb, rb) = _polars_frames(seed)
    got = agpl.splice_join(left, right, on="t", by="sym", tolerance=tolerance, device="cpu")
    lmap, rmap = _expected_maps(lk, rk, lb, rb, tolerance=None if tolerance is None else 3)
    want = _taken(left, lmap).hstack(
        _taken(right, rmap).rename(lambda c: c + "_right" if c in left.columns else c)
    )
    assert got.columns == [
        "t",
        "sym",
        "qty",
        "flag",
        "t_right",
        "sym_right",
        "bid",
        "venue",
        "tags",
    ]
    assert_polars_equal(got, want, check_exact=True)


def test_polars_lazy_gives_the_eager_frame_and_its_schema_before_collect():
    left, right, _ = _polars_frames(5)
    lazy = agpl.splice_join(left.lazy(), right.lazy(), on="t", by="sym", suffix="_q", device="cpu")
    assert isinstance(lazy, pl.LazyFrame)
    eager = agpl.splice_join(left, right, on="t", by="sym", suffix="_q", device="cpu")
    assert lazy.collect_schema() == eager.schema
    assert_polars_equal(lazy.collect(), eager, check_exact=True)
    namespaced = left.lazy().asofgpu.splice_join(
        right.lazy(), on="t", by="sym", suffix="_q", device="cpu"
    )
    assert_polars_equal(namespaced.collect(), eager, check_exact=True)


def test_polars_columns_named_by_the_empty_string_keep_their_names():
    left = pl.DataFrame({"t": [1, 4], "": ["x", "y"]})
    right = pl.DataFrame({"t": [2, 3], "": [10, 20], "column_0": [1.5, 2.5]})
    got = agpl.splice_join(left, right, on="t", device="cpu")
    assert got.columns == ["t", "", "t_right", "_right", "column_0"]
    assert got.rows() == [
        (1, "x", None, None, None),
        (1, "x", 2, 10, 1.5),
        (1, "x", 3, 20, 2.5),
        (4, "y", 3, 20, 2.5),
    ]


def test_polars_string_keys_and_different_names():
    left = pl.DataFrame({"lk": ["b", "d", None], "x": [1, 2, 3]})
    right = pl.DataFrame({"rk": ["a", "c", "d"], "y": [10, 20, 30]})
    got = agpl.splice_join(left, right, left_on="lk", right_on="rk", device="cpu")
    assert got.rows() == [
        (None, None, "a", 10),
        ("b", 1, "a", 10),
        ("b", 1, "c", 20),
        ("d", 2, "d", 30),
        ("d", 2, "d", 30),
        (None, 3, None, None),
    ]


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda l, r: agpl.splice_join(l, r, on="nope"),
            pl.exceptions.ColumnNotFoundError,
            r"left frame has no column 'nope'",
        ),
        (
            lambda l, r: agpl.splice_join(l, r.lazy(), on="t"),
            TypeError,
            r"right must be a DataFrame, as left is",
        ),
        (
            lambda l, r: agpl.splice_join(l.lazy(), r, on="t"),
            TypeError,
            r"right must be a LazyFrame, as left is",
        ),
        (
            lambda l, r: agpl.splice_join(l.to_pandas(), r, on="t"),
            TypeError,
            r"left must be a polars DataFrame or LazyFrame",
        ),
        (
            lambda l, r: agpl.splice_join(l, r, on="t", by_left="g"),
            ValueError,
            r"by_left and by_right must be given together",
        ),
        (
            lambda l, r: agpl.splice_join(l, r, on="t", device="tpu"),
            ValueError,
            r"device must be one of",
        ),
        (
            lambda l, r: agpl.splice_join(l, r, on="t", suffix=None),
            TypeError,
            r"suffix must be a string",
        ),
    ],
)
def test_polars_errors_name_the_parameter(call, error, message):
    left = pl.DataFrame({"t": [1, 2], "g": ["a", "b"]})
    right = pl.DataFrame({"t": [1], "g": ["a"]})
    with pytest.raises(error, match=message):
        call(left, right)


@pytest.mark.parametrize(
    ("tolerance", "error", "message"),
    [
        ("abc", ValueError, r"tolerance: expected a duration such as 5s"),
        ("40D", ValueError, r"tolerance: '40D': unknown unit 'D'"),
        ("-40d", ValueError, r"tolerance: a duration must not be negative, got '-40d'"),
        (datetime.timedelta(days=-40), ValueError, r"tolerance must be non-negative"),
        (-3, ValueError, r"tolerance must be non-negative, got -3"),
        (float("nan"), ValueError, r"tolerance must be a non-negative number, got NaN"),
        (
            pa.array([1]),
            TypeError,
            r"splice_join \(and splice_maps\) takes one tolerance for both sides",
        ),
    ],
)
def test_polars_tolerance_is_checked_as_arrows_splice_join_checks_it(tolerance, error, message):
    """No polars dry run reads splice_join's tolerance: asofgpu reads it, eager and lazy (at
    the call, as polars' own lazy joins check theirs, not at ``collect``)."""
    buys = pl.DataFrame({"d": [datetime.date(2024, 3, 31)], "buy": ["b1"]})
    sells = pl.DataFrame({"d": [datetime.date(2024, 2, 29)], "sell": ["s1"]})
    with pytest.raises(error, match=message):
        agpl.splice_join(buys, sells, on="d", tolerance=tolerance, device="cpu")
    with pytest.raises(error, match=message):
        agpl.splice_join(buys.lazy(), sells.lazy(), on="d", tolerance=tolerance, device="cpu")


@pytest.mark.parametrize(
    ("left_dtype", "right_dtype"),
    [
        (pl.Int64, pl.Decimal(10, 2)),  # 2.00 compared as 200: after 5
        (pl.Decimal(10, 3), pl.Decimal(10, 2)),
        (pl.Enum(["a", "z"]), pl.Enum(["z", "a"])),  # 'a' beside 'z', by code
        (pl.Enum(["a", "z"]), pl.Categorical),
        (pl.Enum(["a", "z"]), pl.String),
    ],
)
def test_polars_splice_refuses_keys_compared_by_their_codes(left_dtype, right_dtype):
    """Decimals of two scales (or an integer and a decimal) and Enums of two types compare
    their unscaled integers or codes: polars' join_asof refuses them, and the splice join
    spliced them out of order, silently."""
    numeric = left_dtype == pl.Int64 or isinstance(left_dtype, pl.Decimal)
    values = [2, 5] if numeric else ["a", "z"]
    left = pl.DataFrame({"t": pl.Series(values, dtype=left_dtype)})
    right = pl.DataFrame({"t": pl.Series(values, dtype=right_dtype), "v": [1, 2]})
    with pytest.raises(pl.exceptions.SchemaError, match="datatypes of join keys don't match"):
        agpl.splice_join(left, right, on="t", device="cpu")
    with pytest.raises(pl.exceptions.SchemaError):  # polars' own join_asof, for the record
        left.join_asof(right, on="t")


def test_polars_splice_refuses_a_tolerance_on_categorical_keys():
    """Distances between Categorical keys are in codes (polars' join_asof measures them so),
    and ordering by them spliced the rows in order of first appearance: 'c' beside 'z'."""
    left = pl.DataFrame({"t": pl.Series(["z", "c", "a"], dtype=pl.Categorical)})
    right = pl.DataFrame({"t": pl.Series(["b"], dtype=pl.Categorical), "v": [1]})
    spliced = agpl.splice_join(left, right, on="t", device="cpu")  # without one: value order
    assert spliced["t"].cast(pl.String).to_list() == ["a", "a", "c", "z"]
    with pytest.raises(
        pl.exceptions.InvalidOperationError, match="Categorical keys .* are spliced in value order"
    ):
        agpl.splice_join(left, right, on="t", tolerance=10, device="cpu")


def test_polars_keys_of_two_kinds_are_refused_as_polars_join_asof_refuses_them():
    """Int64 against Float64 (or Boolean against Int64) is polars' SchemaError: ordered as
    join_asof orders keys, 3.5 had been cut to 3 and matched a left row at 3. Units of one
    temporal type may differ, as in join_asof."""
    left, right = pl.DataFrame({"t": [3], "a": ["L"]}), pl.DataFrame({"t": [3.5], "b": ["R"]})
    flags = pl.DataFrame({"t": [True], "b": ["R"]})
    for call in (
        lambda: agpl.splice_join(left, right, on="t", device="cpu"),
        lambda: agpl.splice_join(left.lazy(), right.lazy(), on="t", device="cpu"),
        lambda: agpl.splice_join(flags, left, on="t", device="cpu"),
    ):
        with pytest.raises(pl.exceptions.SchemaError, match="datatypes of join keys don't match"):
            call()
        with pytest.raises(pl.exceptions.SchemaError):  # polars' own join_asof, for the record
            left.join_asof(right, on="t")
    floats = left.with_columns(pl.col("t").cast(pl.Float64))
    got = agpl.splice_join(floats, right, on="t", device="cpu")
    assert got.rows() == [(3.0, "L", None, None), (3.0, "L", 3.5, "R")]


@pytest.mark.parametrize(
    ("left_values", "right_values"),
    [
        # Categorical texts of their own: polars' codes are global to the process, and
        # other tests need theirs for "a" to "e" in lexical order
        (pl.Series(["a", "m"]), pl.Series(["splice-b"], dtype=pl.Categorical)),
        (pl.Series(["a", "m"]), pl.Series([b"b"])),
        (pl.Series([b"a", b"m"]), pl.Series(["splice-b"], dtype=pl.Categorical)),
        (pl.Series([-1, 5]), pl.Series([3], dtype=pl.UInt128)),  # 2**64 beside -1: no type
        (pl.Series([-1, 5], dtype=pl.Int128), pl.Series([3], dtype=pl.UInt128)),
    ],
    ids=["string-categorical", "string-binary", "binary-categorical", "i64-u128", "i128-u128"],
)
def test_polars_keys_polars_has_no_order_for_are_refused_at_the_call(left_values, right_values):
    """Text of two kinds crashed in polars' concat, naming no key; a signed key beside an
    unsigned 128-bit one joined while the values fitted 64 bits and failed in polars' cast
    otherwise (on a LazyFrame, at collect): each is polars' SchemaError, at the call."""
    left = pl.DataFrame({"t": left_values, "a": [1, 2]})
    right = pl.DataFrame({"t": right_values, "b": [10]})
    for call in (
        lambda: agpl.splice_join(left, right, on="t", device="cpu"),
        lambda: agpl.splice_join(left.lazy(), right.lazy(), on="t", device="cpu"),
    ):
        with pytest.raises(pl.exceptions.SchemaError, match="datatypes of join keys don't match"):
            call()
    with pytest.raises(pl.exceptions.SchemaError):  # polars' own join_asof, for the record
        left.join_asof(right, on="t")
    unsigned = pl.DataFrame({"t": pl.Series([1, 5], dtype=pl.UInt64), "a": [1, 2]})
    if right_values.dtype == pl.UInt128:  # beside unsigned keys it joins, as polars' does
        got = agpl.splice_join(unsigned, right, on="t", device="cpu")
        assert got.rows() == [(1, 1, None, None), (1, 1, 3, 10), (5, 2, 3, 10)]


def test_polars_splice_refuses_the_key_pairs_polars_join_asof_refuses():
    """Over a matrix of key types, the splice's SchemaError falls where polars' own does
    (a UInt128 beside a decimal or a float had been taken)."""
    dtypes = [pl.Int64, pl.Int32, pl.UInt64, pl.Int128, pl.UInt128, pl.Decimal(10, 2)]
    dtypes += [pl.Float64, pl.String, pl.Binary, pl.Date, pl.Boolean]
    dtypes.append(pl.Categorical)  # "splice-1": texts of their own (codes are global)

    def frame(dtype, **extra):
        text = dtype in (pl.String, pl.Binary, pl.Categorical)
        key = pl.Series(["splice-1"]) if text else pl.Series([1])
        return pl.DataFrame({"t": key.cast(dtype), **extra})

    for left_dtype in dtypes:
        for right_dtype in dtypes:
            left, right = frame(left_dtype), frame(right_dtype, v=[1])
            try:
                left.join_asof(right, on="t")
                refused = False
            except pl.exceptions.SchemaError:
                refused = True
            try:
                agpl.splice_join(left, right, on="t", device="cpu")
                ours = False
            except pl.exceptions.SchemaError:
                ours = True
            assert ours == refused, (left_dtype, right_dtype)


@pytest.mark.parametrize(
    "values", [["a", "m"], [b"a", b"m"], [False, True]], ids=["string", "binary", "boolean"]
)
def test_polars_splice_refuses_a_tolerance_on_keys_without_distances(values):
    """Keys of text or booleans have no distances: the tolerance had been measured in their
    ranks among both sides' keys, so whether 'm' was within 1 of 'b' hung on whether a left
    row 'c' was there. polars' join_asof refuses them."""
    left = pl.DataFrame({"t": values, "a": [1, 2]})
    right = pl.DataFrame({"t": values[:1], "b": [10]})
    for frames in ((left, right), (left.lazy(), right.lazy())):
        with pytest.raises(
            pl.exceptions.InvalidOperationError, match=r"keys `t` \(\w+\), `t` \(\w+\) have none"
        ):
            agpl.splice_join(*frames, on="t", tolerance=1, device="cpu")
    with pytest.raises(pl.exceptions.InvalidOperationError, match="only supported on numeric"):
        left.join_asof(right, on="t", tolerance=1)  # polars' own, for the record
    assert agpl.splice_join(left, right, on="t", device="cpu").height == 3  # none: it joins


@pytest.mark.parametrize(
    ("left_dtype", "right_dtype"),
    [(pl.Int64, pl.Int128), (pl.Int128, pl.Int64), (pl.Int64, pl.Int32)],
)
def test_polars_by_columns_of_two_types_are_refused_by_name(left_dtype, right_dtype):
    """by columns of two physical types are polars' error too; Int64 beside Int128 failed
    in Arrow's export with a format string ('_pli128'), Int128 beside Int64 joined."""
    left = pl.DataFrame({"t": [1], "g": pl.Series([5], dtype=left_dtype)})
    right = pl.DataFrame({"t": [0], "g": pl.Series([5], dtype=right_dtype), "y": [10]})
    message = rf"by_left\[0\] `g` \({left_dtype}\) and by_right\[0\] `g` \({right_dtype}\) cannot"
    for call in (
        lambda: agpl.splice_join(left, right, on="t", by="g", device="cpu"),
        lambda: agpl.splice_join(left.lazy(), right.lazy(), on="t", by="g", device="cpu"),
        lambda: agpl.window_join(left, right, on="t", by="g", before=1, aggs={"y": "sum"}),
        lambda: agpl.range_join(left.lazy(), right.lazy(), on="t", by="g", before=1),
    ):
        with pytest.raises(TypeError, match=message):
            call()
    with pytest.raises(pl.exceptions.ComputeError, match="mismatching dtypes in 'by'"):
        with pytest.warns(UserWarning, match="Sortedness"):  # polars' own, for the record
            left.join_asof(right, on="t", by="g")


def test_polars_duration_tolerances_are_read_as_on_arrow_tables():
    """Calendar ("1mo": Feb 29 is within a month of Mar 31), fixed and spaced durations give
    the Arrow splice_join's rows; a duration on an integer key is refused."""
    buys = pl.DataFrame({"d": [datetime.date(2024, 3, 31)], "buy": ["b1"]})
    sells = pl.DataFrame({"d": [datetime.date(2024, 2, 29)], "sell": ["s1"]})
    for tolerance in ("1mo", "40d", "30d", datetime.timedelta(days=31), np.timedelta64(31, "D")):
        ours = agpl.splice_join(buys, sells, on="d", tolerance=tolerance, device="cpu")
        arrow = ag.splice_join(
            buys.to_arrow(), sells.to_arrow(), on="d", tolerance=tolerance, device="cpu"
        )
        assert ours["sell"].to_list() == arrow["sell"].to_pylist(), tolerance
    assert agpl.splice_join(buys, sells, on="d", tolerance="1mo", device="cpu")[
        "sell"
    ].to_list() == ["s1", "s1"]
    assert agpl.splice_join(buys, sells, on="d", tolerance="30d", device="cpu")[
        "sell"
    ].to_list() == ["s1", None]
    ints = pl.DataFrame({"t": [10]}), pl.DataFrame({"t": [5], "s": ["s1"]})
    with pytest.raises(TypeError, match=r"tolerance: a duration needs a temporal key"):
        agpl.splice_join(*ints, on="t", tolerance="2s", device="cpu")


# --------------------------------------------------------------------------- pandas


def _pandas_frames(seed: int, arrow_dtypes: bool):
    (lk, lb), (rk, rb) = _sides(seed)
    base = pd.Timestamp("2024-03-01 09:30")
    left = pd.DataFrame(
        {
            "t": pd.to_datetime(
                [None if k is None else base + pd.Timedelta(seconds=k) for k in lk]
            ),
            "sym": pd.Categorical(lb),
            "qty": np.arange(len(lk), dtype=np.int64),
            "flag": np.arange(len(lk)) % 3 == 0,
        }
    )
    right = pd.DataFrame(
        {
            "t": pd.to_datetime(
                [None if k is None else base + pd.Timedelta(seconds=k) for k in rk]
            ),
            "sym": pd.Series(rb, dtype=object),
            "bid": np.arange(len(rk)) / 4,
            "size": pd.array(range(len(rk)), dtype="Int64"),
        }
    )
    if arrow_dtypes:
        left = left.astype({"qty": pd.ArrowDtype(pa.int64()), "flag": pd.ArrowDtype(pa.bool_())})
        right = right.astype(
            {"bid": pd.ArrowDtype(pa.float64()), "sym": pd.ArrowDtype(pa.string())}
        )
    return left, right, (lk, rk, lb, rb)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("arrow_dtypes", [False, True])
def test_pandas_rows_are_the_oracles_as_reindex_takes_them(seed, arrow_dtypes):
    left, right, (lk, rk, lb, rb) = _pandas_frames(seed, arrow_dtypes)
    got = agpd.splice_join(
        left, right, on="t", by="sym", tolerance=pd.Timedelta("3s"), device="cpu"
    )
    lmap, rmap = _expected_maps(lk, rk, lb, rb, tolerance=3)  # keys in seconds
    positions = [[-1 if m == NO_MATCH else m for m in gmap] for gmap in (lmap, rmap)]
    want = pd.concat(
        [
            left.reindex(positions[0]).reset_index(drop=True),
            right.reindex(positions[1])
            .reset_index(drop=True)
            .add_suffix("_right")[["t_right", "sym_right", "bid_right", "size_right"]]
            .rename(columns={"bid_right": "bid", "size_right": "size"}),
        ],
        axis=1,
    )
    pd.testing.assert_frame_equal(got, want, check_exact=True)


def test_pandas_without_by_and_unsorted_input():
    left = pd.DataFrame({"k": [5, 1, 3], "a": ["x", "y", "z"]})
    right = pd.DataFrame({"k": [2, 4], "b": [True, False]})
    got = agpd.splice_join(left, right, on="k", allow_exact_matches=False, device="cpu")
    lmap, rmap = splice_oracle([5, 1, 3], [2, 4], allow_exact_matches=False)
    assert lmap == [1, 1, 2, 2, 0]
    assert got["a"].tolist() == ["y", "y", "z", "z", "x"]
    assert got["b"].tolist() == [np.nan, True, True, False, False]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"on": "nope"}, KeyError, r"left frame has no column 'nope'"),
        ({"on": "t", "by": "h"}, KeyError, r"left frame has no column 'h'"),
        ({"on": "t", "tolerance": -1}, ValueError, r"tolerance must be non-negative"),
        ({"on": "t", "null_equality": "maybe"}, ValueError, r"null_equality must be one of"),
    ],
)
def test_pandas_errors_name_the_parameter(kwargs, error, message):
    left = pd.DataFrame({"t": [1, 2], "g": ["a", "b"]})
    right = pd.DataFrame({"t": [1], "g": ["a"]})
    with pytest.raises(error, match=message):
        agpd.splice_join(left, right, device="cpu", **kwargs)


def test_pandas_operands_must_be_frames():
    with pytest.raises(TypeError, match=r"right must be a pandas DataFrame, got pandas.Series"):
        agpd.splice_join(pd.DataFrame({"t": [1]}), pd.Series([1], name="t"), on="t")
