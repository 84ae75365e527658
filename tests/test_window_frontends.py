"""asofgpu.polars and asofgpu.pandas window_join and range_join: each left row's window (the
naive oracle's ``window_oracle``), reduced by ``reduce_oracle`` or expanded into pairs, taken
from the frames by the libraries' own gathers, dtypes as each library keeps them."""

from __future__ import annotations

import datetime

import numpy as np
import pyarrow as pa
import pytest

from oracle import NO_MATCH, reduce_oracle, window_oracle

pl = pytest.importorskip("polars")
pd = pytest.importorskip("pandas")
from polars.testing import assert_frame_equal as assert_polars_equal  # noqa: E402

import asofgpu  # noqa: E402
import asofgpu.pandas as agpd  # noqa: E402
import asofgpu.polars as agpl  # noqa: E402

T0 = datetime.datetime(2024, 3, 1, 9, 30)
NS = 10**9
ALL = ["count", "sum", "mean", "min", "max", "first", "last"]
PICKS = ("min", "max", "first", "last")


def _sides(seed: int, n_left: int = 30, n_right: int = 40):
    """Two sides with null keys, ties and by groups (null ones too), as Python values."""
    rng = np.random.default_rng(seed)

    def side(n, names):
        keys = [None if rng.random() < 0.1 else int(k) for k in rng.integers(0, 20, n)]
        by = [None if rng.random() < 0.1 else str(rng.choice(names)) for _ in range(n)]
        return keys, by

    return side(n_left, ["a", "b", "c"]), side(n_right, ["a", "b"])


def _windows(lk, rk, lb, rb, before, after, prevailing):
    groups = (
        None if lb is None else [(g,) for g in lb],
        None if rb is None else [(g,) for g in rb],
    )
    return window_oracle(lk, groups[0], rk, groups[1], before, after, prevailing)


def _pairs(windows):
    """The range join's maps from the oracle's windows: one entry per (left row, right row of
    its window), an empty window once beside NO_MATCH."""
    left_map, right_map = [], []
    for i, window in enumerate(windows):
        for j in window or [NO_MATCH]:
            left_map.append(i)
            right_map.append(j)
    return left_map, right_map


# --------------------------------------------------------------------------- polars


def _polars_keys(kind: str, keys: list):
    """A key column of ``kind`` from integer keys (None: null), and the oracle's keys in the
    column's physical unit."""
    if kind == "int":
        return pl.Series(keys, dtype=pl.Int64), keys
    if kind == "float":  # halves, every key 7 NaN (above +inf in asofgpu's order)
        values = [None if k is None else float("nan") if k == 7 else k / 2 for k in keys]
        return pl.Series(values, dtype=pl.Float64), values
    assert kind.startswith("datetime")
    times = [None if k is None else T0 + datetime.timedelta(seconds=k) for k in keys]
    series = pl.Series(times, dtype=pl.Datetime("ns")).dt.replace_time_zone("UTC")
    return series, [None if k is None else k * NS for k in keys]


# kind -> (before, after as the front end takes them; the same in the key's physical unit)
REACH = {
    "int": (3, 1, 3, 1),
    "float": (1.5, 0.5, 1.5, 0.5),
    "datetime": ("3s", "500ms", 3 * NS, NS // 2),
    "datetime-timedelta": (
        datetime.timedelta(seconds=2, milliseconds=500),
        datetime.timedelta(0),
        5 * NS // 2,
        0,
    ),
}

POLARS_AGGS = {
    "v": ALL,
    "n": ALL,
    "f": ALL,
    "ts": ["count", "min", "max", "first", "last"],
    "s": ["count", "first", "last"],
    "c": ["count", "first", "last"],
    "e": ["first", "last"],
    "tags": ["count", "first", "last"],
}


def _polars_frames(seed: int, kind: str = "int"):
    (lk, lb), (rk, rb) = _sides(seed)
    rng = np.random.default_rng(seed + 100)
    n = len(rk)
    left_key, lo = _polars_keys(kind, lk)
    right_key, ro = _polars_keys(kind, rk)

    def nulls(values, p=0.15):
        return [None if rng.random() < p else v for v in values]

    v = [float(x) for x in rng.integers(-8, 8, n) / 4]
    v = [float("nan") if i % 9 == 4 else x for i, x in enumerate(v)]
    left = pl.DataFrame(
        {"t": left_key, "sym": pl.Series(lb, dtype=pl.String), "qty": list(range(len(lk)))}
    )
    right = pl.DataFrame(
        {
            "t": right_key,
            "sym": pl.Series(rb, dtype=pl.String),
            "v": pl.Series(nulls(v), dtype=pl.Float64),
            "n": pl.Series(nulls(rng.integers(-50, 50, n).tolist()), dtype=pl.Int64),
            "f": pl.Series(nulls([bool(b) for b in rng.integers(0, 2, n)]), dtype=pl.Boolean),
            "ts": pl.Series(
                nulls([T0 + datetime.timedelta(minutes=int(m)) for m in rng.integers(0, 9, n)]),
                dtype=pl.Datetime("us"),
            ),
            "s": pl.Series(nulls([f"s{i % 6}" for i in range(n)]), dtype=pl.String),
            "c": pl.Series(nulls([f"c{i % 5}" for i in range(n)]), dtype=pl.Categorical),
            "e": pl.Series(
                nulls([f"v{i % 4}" for i in range(n)]), dtype=pl.Enum(["v3", "v2", "v1", "v0"])
            ),
            "tags": pl.Series(nulls([[i, i + 1] for i in range(n)]), dtype=pl.List(pl.Int64)),
        }
    )
    return left, right, (lo, ro, lb, rb)


def _gather(frame, rows):
    index = pl.Series([None if r is None or r == NO_MATCH else r for r in rows], dtype=pl.Int64)
    return frame.select(pl.all().gather(index))


def _polars_expected(left, right, windows, aggs):
    columns = []
    for column, names in aggs.items():
        names = [names] if isinstance(names, str) else names
        values = right.get_column(column).to_list()
        dtype = right.schema[column]
        for agg in names:
            got = [reduce_oracle(w, values, agg) for w in windows]
            if agg in PICKS:
                series = _gather(right.select(column), got).get_column(column)
            elif agg == "count":
                series = pl.Series(got, dtype=pl.Int64)
            elif agg == "mean" or dtype.is_float():
                series = pl.Series(got, dtype=pl.Float64)
            else:
                series = pl.Series(got, dtype=pl.Int64)
            columns.append(series.alias(f"{column}_{agg}"))
    return left.hstack(columns)


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("prevailing", [False, True])
@pytest.mark.parametrize("kind", list(REACH))
def test_polars_window_join_is_the_oracles(kind, prevailing, seed):
    left, right, (lk, rk, lb, rb) = _polars_frames(seed, kind)
    before, after, o_before, o_after = REACH[kind]
    got = agpl.window_join(
        left,
        right,
        on="t",
        by="sym",
        before=before,
        after=after,
        aggs=POLARS_AGGS,
        prevailing=prevailing,
        device="cpu",
    )
    windows = _windows(lk, rk, lb, rb, o_before, o_after, prevailing)
    assert any(windows) and not all(windows)  # both kinds of window are tried
    want = _polars_expected(left, right, windows, POLARS_AGGS)
    assert_polars_equal(got, want, check_exact=True)
    # first and last keep every dtype; min and max keep the temporal one
    for column in ("ts", "s", "c", "e", "tags"):
        for agg in POLARS_AGGS[column]:
            if agg != "count":
                assert got.schema[f"{column}_{agg}"] == right.schema[column]


def test_polars_range_join_keeps_a_column_named_by_the_empty_string():
    left = pl.DataFrame({"t": [1, 4], "": ["x", "y"]})
    right = pl.DataFrame({"t": [2, 3], "": [10, 20], "column_0": [1.5, 2.5]})
    got = agpl.range_join(left, right, on="t", before=2, device="cpu")
    assert got.columns == ["t", "", "t_right", "_right", "column_0"]
    assert got.rows() == [(1, "x", None, None, None), (4, "y", 2, 10, 1.5), (4, "y", 3, 20, 2.5)]


def test_polars_window_join_on_the_python_backend_and_key_names_that_differ():
    left, right, (lk, rk, lb, rb) = _polars_frames(7, "int")
    left = left.rename({"t": "lt", "sym": "lsym"})
    right = right.rename({"t": "rt", "sym": "rsym"})
    aggs = {"v": ["sum", "max"], "n": ["mean", "first"], "c": "last"}
    got = agpl.window_join(
        left,
        right,
        left_on="lt",
        right_on="rt",
        by_left="lsym",
        by_right="rsym",
        before=2,
        after=2,
        aggs=aggs,
        device="python",
    )
    windows = _windows(lk, rk, lb, rb, 2, 2, False)
    assert_polars_equal(got, _polars_expected(left, right, windows, aggs), check_exact=True)


def test_polars_window_join_without_by_matches_the_arrow_table_version():
    left, right, (lk, rk, _, _) = _polars_frames(3, "datetime")
    aggs = {"v": ALL, "n": ["sum", "min", "last"], "s": ["count", "first"], "ts": "max"}
    got = agpl.window_join(left, right, on="t", before="4s", after="1s", aggs=aggs, device="cpu")
    windows = _windows(lk, rk, None, None, 4 * NS, NS, False)
    assert_polars_equal(got, _polars_expected(left, right, windows, aggs), check_exact=True)
    table = asofgpu.window_join(
        left.to_arrow(), right.to_arrow(), on="t", before=4 * NS, after=NS, aggs=aggs, device="cpu"
    )
    assert table.column_names == got.columns
    assert_polars_equal(pl.from_arrow(table), got, check_exact=True)


@pytest.mark.parametrize("kind", ["float", "datetime"])
def test_polars_lazy_gives_the_eager_frame_and_its_schema_before_collect(kind):
    left, right, _ = _polars_frames(4, kind)
    before, after, _, _ = REACH[kind]
    options = dict(on="t", by="sym", before=before, after=after, device="cpu")
    lazy = agpl.window_join(left.lazy(), right.lazy(), aggs=POLARS_AGGS, **options)
    assert isinstance(lazy, pl.LazyFrame)
    schema = lazy.collect_schema()
    eager = agpl.window_join(left, right, aggs=POLARS_AGGS, **options)
    collected = lazy.collect()
    assert schema == collected.schema == eager.schema
    assert_polars_equal(collected, eager, check_exact=True)
    namespaced = left.asofgpu.window_join(right, aggs=POLARS_AGGS, **options)
    assert_polars_equal(namespaced, eager, check_exact=True)
    lazy_namespaced = left.lazy().asofgpu.window_join(right.lazy(), aggs=POLARS_AGGS, **options)
    assert_polars_equal(lazy_namespaced.collect(), eager, check_exact=True)


def test_polars_aggregate_dtypes_follow_the_column():
    left = pl.DataFrame({"t": [5, 100]})
    right = pl.DataFrame(
        {
            "t": [3, 4, 5],
            "u": pl.Series([1, 2, 3], dtype=pl.UInt32),
            "i": pl.Series([1, 2, 3], dtype=pl.Int8),
            "x": pl.Series([1.5, 2.5, 3.0], dtype=pl.Float32),
            "d": pl.Series([datetime.date(2024, 1, d) for d in (3, 1, 2)], dtype=pl.Date),
        }
    )
    aggs = {"u": ["sum", "mean", "min"], "i": ["sum", "max"], "x": ["sum", "max"], "d": ["min"]}
    got = agpl.window_join(left, right, on="t", before=2, aggs=aggs, device="cpu")
    assert dict(got.schema) == {
        "t": pl.Int64,
        "u_sum": pl.UInt64,
        "u_mean": pl.Float64,
        "u_min": pl.UInt32,
        "i_sum": pl.Int64,
        "i_max": pl.Int8,
        "x_sum": pl.Float64,
        "x_max": pl.Float32,
        "d_min": pl.Date,
    }
    assert got.row(0) == (5, 6, 2.0, 1, 6, 3, 7.0, 3.0, datetime.date(2024, 1, 1))
    assert got.row(1) == (100, None, None, None, None, None, None, None, None)
    lazy = agpl.window_join(left.lazy(), right.lazy(), on="t", before=2, aggs=aggs, device="cpu")
    assert lazy.collect_schema() == got.schema


# --------------------------------------------------------------------------- polars range join


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("prevailing", [False, True])
@pytest.mark.parametrize("kind", ["int", "float", "datetime"])
def test_polars_range_join_rows_are_the_oracles_pairs(kind, prevailing, seed):
    left, right, (lk, rk, lb, rb) = _polars_frames(seed, kind)
    right = right.rename({"n": "qty"})  # clashes with a left column: takes the suffix
    before, after, o_before, o_after = REACH[kind]
    options = dict(on="t", by="sym", before=before, after=after, prevailing=prevailing)
    got = agpl.range_join(left, right, suffix="_q", device="cpu", **options)
    left_map, right_map = _pairs(_windows(lk, rk, lb, rb, o_before, o_after, prevailing))
    kept = right.drop("sym")
    want = _gather(left, left_map).hstack(
        _gather(kept, right_map).rename({"t": "t_q", "qty": "qty_q"})
    )
    assert got.columns == ["t", "sym", "qty", "t_q", "v", "qty_q", "f", "ts", "s", "c", "e", "tags"]
    assert_polars_equal(got, want, check_exact=True)
    lazy = agpl.range_join(left.lazy(), right.lazy(), suffix="_q", device="cpu", **options)
    assert isinstance(lazy, pl.LazyFrame)
    assert lazy.collect_schema() == got.schema
    assert_polars_equal(lazy.collect(), got, check_exact=True)


@pytest.mark.parametrize("join", ["window", "range"])
@pytest.mark.parametrize(
    ("left_type", "right_type", "values"),
    [
        (pl.UInt8, pl.Int64, [0, 3, 7, 200]),
        (pl.Int32, pl.UInt64, [0, 3, 7, 200]),
        (pl.Int64, pl.UInt64, [-5, 3, 7, 2**62]),  # Int64 holds both
        (pl.UInt64, pl.Int8, [0, 3, 7, 100]),
    ],
)
def test_polars_keys_of_two_signednesses_join_as_join_asof_takes_them(
    join, left_type, right_type, values
):
    """As polars' join_asof supercasts them: the keys are compared as one 64-bit kind that
    holds both sides' values; the frames keep their own types."""
    left = pl.DataFrame({"t": pl.Series(values, dtype=left_type)})
    right = pl.DataFrame({"t": pl.Series([1, 3, 6, 7, 9], dtype=right_type), "v": range(5)})
    call = agpl.window_join if join == "window" else agpl.range_join
    options = {"aggs": {"v": ["sum", "count"]}} if join == "window" else {}
    got = call(left, right, on="t", before=2, after=1, device="cpu", **options)
    wide = call(
        left.cast({"t": pl.Int64}),
        right.cast({"t": pl.Int64}),
        on="t",
        before=2,
        after=1,
        device="cpu",
        **options,
    )
    keys = [c for c in ("t", "t_right") if c in got.columns]
    assert got["t"].dtype == left_type
    assert "t_right" not in keys or got["t_right"].dtype == right_type
    assert_polars_equal(got.drop(keys), wide.drop(keys), check_exact=True)
    for key in keys:
        assert got[key].cast(pl.Int64).to_list() == wide[key].to_list()


def test_polars_range_join_default_suffix_key_names_namespace_and_python_backend():
    left, right, (lk, rk, lb, rb) = _polars_frames(11, "datetime")
    left = left.rename({"sym": "lsym"})
    right = right.rename({"sym": "rsym"})
    options = dict(
        on="t", by_left="lsym", by_right="rsym", before=datetime.timedelta(seconds=1), after="2s"
    )
    got = left.asofgpu.range_join(right, device="python", **options)
    left_map, right_map = _pairs(_windows(lk, rk, lb, rb, NS, 2 * NS, False))
    want = _gather(left, left_map).hstack(
        _gather(right.drop("rsym"), right_map).rename({"t": "t_right"})
    )
    assert "rsym" not in got.columns and "t_right" in got.columns
    assert_polars_equal(got, want, check_exact=True)
    lazy = left.lazy().asofgpu.range_join(right.lazy(), device="cpu", **options)
    assert_polars_equal(lazy.collect(), got, check_exact=True)


def test_polars_range_join_rows_in_key_order_and_empty_windows_once():
    left = pl.DataFrame({"t": [5, 9, 0]})
    right = pl.DataFrame({"t": [4, 1, 3, 4], "bid": [1.0, 2.0, 3.0, 4.0]})
    got = agpl.range_join(left, right, on="t", before=2, device="cpu")
    assert got.rows() == [
        (5, 3, 3.0),
        (5, 4, 1.0),
        (5, 4, 4.0),
        (9, None, None),
        (0, None, None),
    ]
    with_prevailing = agpl.range_join(left, right, on="t", before=0, prevailing=True, device="cpu")
    assert with_prevailing.rows() == [(5, 4, 4.0), (9, 4, 4.0), (0, None, None)]


# --------------------------------------------------------------------------- polars errors


def _error_frames(lazy: bool):
    left = pl.DataFrame({"t": [1, 2], "g": ["a", "b"], "v_sum": [0.0, 1.0]})
    right = pl.DataFrame({"t": [1], "g": ["a"], "v": [2.0], "s": ["x"]})
    return (left.lazy(), right.lazy()) if lazy else (left, right)


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda l, r: agpl.window_join(l, r, on="nope", before=1, aggs={"v": "sum"}),
            pl.exceptions.ColumnNotFoundError,
            r"left frame has no column 'nope'",
        ),
        (
            lambda l, r: agpl.window_join(l, r, on="t", by="h", before=1, aggs={"v": "sum"}),
            pl.exceptions.ColumnNotFoundError,
            r"left frame has no column 'h'",
        ),
        (
            lambda l, r: agpl.window_join(
                l, r.drop("g"), on="t", by="g", before=1, aggs={"v": "max"}
            ),
            pl.exceptions.ColumnNotFoundError,
            r"right frame has no column 'g'",
        ),
        (
            lambda l, r: agpl.range_join(l, r, left_on="t", right_on="u", before=1),
            pl.exceptions.ColumnNotFoundError,
            r"right frame has no column 'u'",
        ),
        (
            lambda l, r: agpl.window_join(l, r, on="t", before=1, aggs={"v": "median"}),
            ValueError,
            r"aggs\['v'\]: unknown aggregation 'median'",
        ),
        (
            lambda l, r: agpl.window_join(l, r, on="t", before=1, aggs={"v": ["max", "sum"]}),
            pl.exceptions.DuplicateError,
            r"the aggregate column 'v_sum' clashes with a left column",
        ),
        (
            lambda l, r: agpl.window_join(l, r, on="t", before=1, aggs={"w": "sum"}),
            KeyError,
            r"aggs names 'w', which is not a column of the right side",
        ),
        (
            lambda l, r: agpl.window_join(l, r, on="t", before=1, aggs={"s": "mean"}),
            TypeError,
            r"aggs\['s'\]: 'mean' applies to integer, float and boolean columns",
        ),
        (
            lambda l, r: agpl.window_join(l, r, on="t", before=1, aggs={}),
            TypeError,
            r"aggs must be a non-empty dict",
        ),
        (
            lambda l, r: agpl.window_join(l, r, on="t", before=1, aggs={"v": "sum"}, device="tpu"),
            ValueError,
            r"device must be one of",
        ),
        (
            lambda l, r: agpl.range_join(l, r, on="t", before=1, suffix=None),
            TypeError,
            r"suffix must be a string",
        ),
        (
            lambda l, r: agpl.range_join(
                l, r.rename({"v": "v_sum", "s": "v_sum_right"}), on="t", before=1
            ),
            pl.exceptions.DuplicateError,  # as the window join's clash, and polars' own joins
            r"column 'v_sum_right' appears twice in the result",
        ),
        (
            lambda l, r: agpl.splice_join(l, r, on="t", suffix=""),
            pl.exceptions.DuplicateError,
            r"column 't' appears twice in the result",
        ),
        (
            lambda l, r: agpl.range_join(l, r, on="g", before=1),
            TypeError,  # text keys have no distances: refused by the join of no rows
            r"right_on must be an integer, float, date, time, timestamp or duration column",
        ),
        (
            lambda l, r: agpl.splice_join(l, r, on="t", null_equality="same"),
            ValueError,
            r"null_equality must be one of 'unequal', 'equal', got 'same'",
        ),
        (
            lambda l, r: agpl.splice_join(l, r, on="t", tolerance="1mo"),
            TypeError,
            r"tolerance",
        ),
    ],
)
def test_polars_errors_at_the_call(call, error, message, lazy):
    left, right = _error_frames(lazy)
    with pytest.raises(error, match=message):
        call(left, right)


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("join", ["window", "range"])
@pytest.mark.parametrize(
    ("reach", "message"),
    [
        ({"before": -5}, r"before must be non-negative, got -5"),
        ({"before": -0.5}, r"before must be non-negative, got -0.5"),
        ({"before": 1, "after": -1}, r"after must be non-negative, got -1"),
        ({"before": "-5s"}, r"before must be non-negative, got '-5s'"),
        (
            {"before": "1s", "after": datetime.timedelta(seconds=-1)},
            r"after must be non-negative",
        ),
    ],
)
def test_polars_negative_reach_is_refused(reach, message, join, lazy):
    temporal = isinstance(reach["before"], str)
    left = pl.DataFrame({"t": [5, 9]})
    right = pl.DataFrame({"t": [1, 4], "v": [1.0, 2.0]})
    if temporal:
        left, right = (
            f.with_columns(pl.col("t").cast(pl.Datetime("ns")).dt.replace_time_zone("UTC"))
            for f in (left, right)
        )
    if lazy:
        left, right = left.lazy(), right.lazy()
    if join == "window":
        call = lambda: agpl.window_join(
            left, right, on="t", aggs={"v": "sum"}, device="cpu", **reach
        )  # noqa: E731
    else:
        call = lambda: agpl.range_join(left, right, on="t", device="cpu", **reach)  # noqa: E731
    with pytest.raises(ValueError, match=message):
        call()  # a LazyFrame's too: at the call, not at collect


@pytest.mark.parametrize("join", [agpl.window_join, agpl.range_join])
def test_polars_frames_of_one_kind(join):
    left, right = _error_frames(False)
    options = dict(on="t", before=1) | ({"aggs": {"v": "sum"}} if join is agpl.window_join else {})
    with pytest.raises(
        TypeError, match=r"right must be a DataFrame, as left is, got polars.LazyFrame"
    ):
        join(left, right.lazy(), **options)
    with pytest.raises(
        TypeError, match=r"right must be a LazyFrame, as left is, got polars.DataFrame"
    ):
        join(left.lazy(), right, **options)
    with pytest.raises(TypeError, match=r"left must be a polars DataFrame or LazyFrame"):
        join(left.to_pandas(), right, **options)


# --------------------------------------------------------------------------- pandas


def _pandas_frames(seed: int):
    """Datetime keys (seconds from 09:30; NaT), object ``by`` with nulls, a left index that is
    not a RangeIndex, and right columns of each dtype family."""
    (lk, lb), (rk, rb) = _sides(seed)
    rng = np.random.default_rng(seed + 200)
    n = len(rk)
    base = pd.Timestamp("2024-03-01 09:30")

    def times(keys):
        return pd.to_datetime([None if k is None else base + pd.Timedelta(seconds=k) for k in keys])

    def nulls(values, p=0.15):
        return [None if rng.random() < p else v for v in values]

    left = pd.DataFrame(
        {
            "t": times(lk),
            "sym": np.array(lb, dtype=object),
            "qty": np.arange(len(lk), dtype=np.int64),
        },
        index=pd.Index([f"r{100 - i}" for i in range(len(lk))], name="id"),
    )
    right = pd.DataFrame(
        {
            "t": times(rk),
            "sym": pd.Series(rb, dtype=object),
            "bid": np.array(nulls((rng.integers(-8, 8, n) / 4).tolist()), dtype=np.float64),
            "n": rng.integers(-50, 50, n).astype(np.int64),
            "size": pd.array(nulls(rng.integers(0, 100, n).tolist()), dtype="Int64"),
            "px": pd.array(
                nulls((rng.integers(0, 64, n) / 8).tolist()), dtype=pd.ArrowDtype(pa.float64())
            ),
            "flag": rng.integers(0, 2, n).astype(bool),
            "name": pd.Series(nulls([f"s{i % 6}" for i in range(n)]), dtype=object),
            "venue": pd.Categorical(nulls([f"v{i % 4}" for i in range(n)])),
            "label": pd.array(
                nulls([f"l{i % 3}" for i in range(n)]), dtype=pd.ArrowDtype(pa.string())
            ),
            "at": pd.to_datetime(
                nulls([base + pd.Timedelta(minutes=int(m)) for m in rng.integers(0, 9, n)])
            ).tz_localize("UTC"),
        }
    )
    return left, right, (lk, rk, lb, rb)


PANDAS_AGGS = {
    "bid": ALL,
    "n": ALL,
    "size": ALL,
    "px": ALL,
    "flag": ALL,
    "name": ["count", "first", "last"],
    "venue": ["count", "first", "last"],
    "label": ["count", "first", "last"],
    "at": ["count", "min", "max", "first", "last"],
}


def _python_values(series):
    return [None if pd.isna(v) else v for v in series.tolist()]


def _pandas_number(got, source, agg):
    """A count, sum or mean as the front end holds it: Arrow-backed for an Arrow column,
    nullable for a nullable one, numpy (NaN where missing) otherwise."""
    dtype = source.dtype
    floating = agg == "mean" or pd.api.types.is_float_dtype(dtype)
    if isinstance(dtype, pd.ArrowDtype):
        return pd.array(got, dtype=pd.ArrowDtype(pa.float64() if floating else pa.int64()))
    if isinstance(dtype, pd.api.extensions.ExtensionDtype) and hasattr(dtype, "numpy_dtype"):
        return pd.array(got, dtype="Float64" if floating else "Int64")
    if floating or None in got:
        return np.array([np.nan if v is None else v for v in got], dtype=np.float64)
    return np.array(got, dtype=np.int64)


def _pandas_expected(left, right, windows, aggs):
    want = left.copy()
    for column, names in aggs.items():
        names = [names] if isinstance(names, str) else names
        values = _python_values(right[column])
        for agg in names:
            got = [reduce_oracle(w, values, agg) for w in windows]
            name = f"{column}_{agg}"
            if agg in PICKS:
                rows = [-1 if r is None else r for r in got]
                want[name] = right[column].reindex(rows).set_axis(left.index)
            else:
                want[name] = pd.Series(_pandas_number(got, right[column], agg), index=left.index)
    return want


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("prevailing", [False, True])
def test_pandas_window_join_is_the_oracles(seed, prevailing):
    left, right, (lk, rk, lb, rb) = _pandas_frames(seed)
    got = agpd.window_join(
        left,
        right,
        on="t",
        by="sym",
        before=pd.Timedelta("3s"),
        after=pd.Timedelta("1s"),
        aggs=PANDAS_AGGS,
        prevailing=prevailing,
        device="cpu",
    )
    windows = _windows(lk, rk, lb, rb, 3, 1, prevailing)  # keys in seconds
    assert any(windows) and not all(windows)
    want = _pandas_expected(left, right, windows, PANDAS_AGGS)
    assert got.index.equals(left.index) and got.index.name == "id"
    assert list(got.columns) == list(want.columns)
    # count is an integer column; its dtype family is not pinned down here
    counts = [c for c in got.columns if c.endswith("_count")]
    for c in counts:
        assert pd.api.types.is_integer_dtype(got[c].dtype), (c, got[c].dtype)
        assert got[c].tolist() == want[c].tolist(), c
    assert got["bid_count"].dtype == np.int64 and got["name_count"].dtype == np.int64
    for column in ("venue", "label", "at"):  # picks keep the dtype, as reindex does
        assert got[f"{column}_first"].dtype == right[column].dtype
    pd.testing.assert_frame_equal(
        got.drop(columns=counts), want.drop(columns=counts), check_exact=True
    )
    assert left.columns.tolist() == ["t", "sym", "qty"]  # left untouched


def test_pandas_window_join_nullable_int_keys_different_names_python_backend():
    left, right, (lk, rk, lb, rb) = _pandas_frames(5)
    left = left.assign(t=pd.array(lk, dtype="Int64")).rename(columns={"t": "lt"})
    right = right.assign(t=pd.array(rk, dtype="Int64")).rename(columns={"t": "rt", "sym": "rsym"})
    aggs = {"bid": ["mean", "max"], "size": ["sum", "first"], "px": "last"}
    got = agpd.window_join(
        left,
        right,
        left_on="lt",
        right_on="rt",
        by_left="sym",
        by_right="rsym",
        before=2,
        after=0,
        aggs=aggs,
        device="python",
    )
    windows = _windows(lk, rk, lb, rb, 2, 0, False)
    want = _pandas_expected(left, right, windows, aggs)
    pd.testing.assert_frame_equal(got, want, check_exact=True)


def test_pandas_window_join_dtypes():
    left = pd.DataFrame({"t": [5, 100]}, index=[10, 20])
    right = pd.DataFrame(
        {
            "t": [1, 3, 4],
            "n": np.array([10, 20, 30], dtype=np.int64),
            "size": pd.array([1, None, 3], dtype="Int64"),
            "px": pd.array([1.0, 2.0, None], dtype=pd.ArrowDtype(pa.float64())),
            "ok": np.array([True, False, True]),
        }
    )
    aggs = {
        "n": ["sum", "mean", "min", "max"],
        "size": ["sum", "mean", "min"],
        "px": ["sum", "mean", "max"],
        "ok": ["sum", "first"],
    }
    got = agpd.window_join(left, right, on="t", before=2, aggs=aggs, device="cpu")
    assert got.index.tolist() == [10, 20]
    # numpy int: the empty window makes float64 with NaN, as reindex does
    assert got["n_min"].dtype == np.float64 and got["n_max"].dtype == np.float64
    assert got["n_min"].tolist()[0] == 20.0 and np.isnan(got["n_min"].tolist()[1])
    assert got["n_sum"].dtype == np.float64 and got["n_sum"].tolist()[0] == 50.0
    assert np.isnan(got["n_sum"].iloc[1]) and np.isnan(got["n_mean"].iloc[1])
    # nullable stays nullable
    assert got["size_sum"].dtype == pd.Int64Dtype()
    assert got["size_sum"].tolist()[0] == 3 and got["size_sum"].isna().tolist() == [False, True]
    assert got["size_mean"].dtype == pd.Float64Dtype() and got["size_mean"].iloc[0] == 3.0
    assert got["size_min"].dtype == pd.Int64Dtype() and got["size_min"].iloc[0] == 3
    # Arrow in, Arrow out
    assert got["px_mean"].dtype == pd.ArrowDtype(pa.float64())
    assert got["px_sum"].dtype == pd.ArrowDtype(pa.float64())
    assert got["px_mean"].tolist()[0] == 2.0 and got["px_mean"].isna().tolist() == [False, True]
    assert got["px_max"].dtype == pd.ArrowDtype(pa.float64()) and got["px_max"].iloc[0] == 2.0
    # numpy bool: first becomes object where a window is empty
    assert got["ok_first"].dtype == object and got["ok_first"].tolist()[0] == False  # noqa: E712
    assert got["ok_first"].isna().tolist() == [False, True]
    # no empty window: numpy columns keep their dtype
    full = agpd.window_join(left, right, on="t", before=100, aggs=aggs, device="cpu")
    assert full["n_min"].dtype == np.int64 and full["n_min"].tolist() == [10, 10]
    assert full["n_sum"].dtype == np.int64 and full["n_sum"].tolist() == [60, 60]
    assert full["ok_first"].dtype == bool and full["ok_sum"].dtype == np.int64


# --------------------------------------------------------------------------- pandas range join


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("prevailing", [False, True])
def test_pandas_range_join_rows_are_the_oracles_pairs(seed, prevailing):
    left, right, (lk, rk, lb, rb) = _pandas_frames(seed)
    right = right.rename(columns={"n": "qty"})
    got = agpd.range_join(
        left,
        right,
        on="t",
        by="sym",
        before=pd.Timedelta("2s"),
        after=pd.Timedelta("2s"),
        prevailing=prevailing,
        device="cpu",
    )
    left_map, right_map = _pairs(_windows(lk, rk, lb, rb, 2, 2, prevailing))
    positions = [-1 if m == NO_MATCH else m for m in right_map]
    want = pd.concat(
        [
            left.iloc[left_map].reset_index(drop=True),
            right.drop(columns="sym")
            .reindex(positions)
            .reset_index(drop=True)
            .rename(columns={"t": "t_right", "qty": "qty_right"}),
        ],
        axis=1,
    )
    assert isinstance(got.index, pd.RangeIndex) and got.index.equals(pd.RangeIndex(len(want)))
    assert "sym_right" not in got.columns
    pd.testing.assert_frame_equal(got, want, check_exact=True)


def test_pandas_range_join_suffix_and_int_keys():
    left = pd.DataFrame({"t": [5, 9, 0], "bid": [0.5, 0.25, 0.0]}, index=[7, 8, 9])
    right = pd.DataFrame({"t": [4, 1, 3, 4], "bid": [1.0, 2.0, 3.0, 4.0]})
    got = agpd.range_join(left, right, on="t", before=2, suffix="_q", device="cpu")
    want = pd.DataFrame(
        {
            "t": [5, 5, 5, 9, 0],
            "bid": [0.5, 0.5, 0.5, 0.25, 0.0],
            "t_q": [3.0, 4.0, 4.0, np.nan, np.nan],
            "bid_q": [3.0, 1.0, 4.0, np.nan, np.nan],
        }
    )
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert isinstance(got.index, pd.RangeIndex)


# --------------------------------------------------------------------------- pandas errors


@pytest.mark.parametrize(
    ("join", "kwargs", "error", "message"),
    [
        ("window", {"on": "nope"}, KeyError, r"left frame has no column 'nope'"),
        ("range", {"on": "t", "by": "h"}, KeyError, r"left frame has no column 'h'"),
        ("window", {"left_on": "t", "right_on": "u"}, KeyError, r"right frame has no column 'u'"),
        (
            "window",
            {"on": "t", "aggs": {"v": "median"}},
            ValueError,
            r"unknown aggregation 'median'",
        ),
        (
            "window",
            {"on": "t", "aggs": {"v": ["max", "sum"]}},
            ValueError,
            r"the aggregate column 'v_sum' clashes with a left column",
        ),
        ("window", {"on": "t", "before": -5}, ValueError, r"before must be non-negative"),
        ("range", {"on": "t", "before": -5}, ValueError, r"before must be non-negative"),
        ("window", {"on": "t", "after": -1}, ValueError, r"after must be non-negative"),
        ("range", {"on": "t", "suffix": 3}, TypeError, r"suffix must be a string"),
    ],
)
def test_pandas_errors(join, kwargs, error, message):
    left = pd.DataFrame({"t": [1, 2], "g": ["a", "b"], "v_sum": [0.0, 1.0]})
    right = pd.DataFrame({"t": [1], "g": ["a"], "v": [2.0]})
    options = {"before": 1, "device": "cpu"} | kwargs
    with pytest.raises(error, match=message):
        if join == "window":
            agpd.window_join(left, right, **({"aggs": {"v": "mean"}} | options))
        else:
            options.pop("aggs", None)
            agpd.range_join(left, right, **options)


def test_pandas_operands_must_be_frames():
    left = pd.DataFrame({"t": [1]})
    with pytest.raises(TypeError, match=r"right must be a pandas DataFrame, got pandas.Series"):
        agpd.window_join(left, pd.Series([1], name="t"), on="t", before=1, aggs={"t": "sum"})
    with pytest.raises(TypeError, match=r"left must be a pandas DataFrame, got polars.DataFrame$"):
        agpd.range_join(pl.DataFrame({"t": [1]}), left, on="t", before=1)


# --------------------------------------------------------------------------- edge cases


def test_polars_empty_right_side_gives_empty_windows():
    left = pl.DataFrame({"t": [5, 6]})
    right = pl.DataFrame({"t": pl.Series([], dtype=pl.Int64), "v": pl.Series([], dtype=pl.Float64)})
    got = agpl.window_join(
        left, right, on="t", before=1, aggs={"v": ["count", "sum", "min", "first"]}, device="cpu"
    )
    assert got.rows() == [(5, 0, None, None, None), (6, 0, None, None, None)]
    pairs = agpl.range_join(left, right, on="t", before=1, device="cpu")
    assert pairs.rows() == [(5, None, None), (6, None, None)]


def test_pandas_empty_right_side_gives_empty_windows():
    left = pd.DataFrame({"t": [5, 6]})
    right = pd.DataFrame({"t": np.array([], dtype=np.int64), "v": np.array([], dtype=float)})
    got = agpd.window_join(
        left, right, on="t", before=1, aggs={"v": ["count", "first"]}, device="cpu"
    )
    assert got["v_count"].tolist() == [0, 0] and got["v_first"].isna().all()
    pairs = agpd.range_join(left, right, on="t", before=1, device="cpu")
    assert pairs["t"].tolist() == [5, 6] and pairs["t_right"].isna().all()


@pytest.mark.parametrize(
    "right_sym",
    [pd.Series([], dtype="category"), pd.Series([None], dtype="category")],
    ids=["no rows", "all missing"],
)
def test_pandas_right_categorical_by_without_a_category_gives_empty_windows(right_sym):
    """A right frame whose Categorical by column has no category (empty, or of missing
    values: pandas types its categories object or float64) was refused beside a string one
    ("cannot be compared"); its rows are in no group, and every window is empty."""
    left = pd.DataFrame({"t": [5], "sym": ["A"]})
    right = pd.DataFrame({"t": np.arange(len(right_sym)), "sym": right_sym, "v": 1.0})
    got = agpd.window_join(left, right, on="t", by="sym", before=9, aggs={"v": "count"})
    assert got["v_count"].tolist() == [0]
    pairs = agpd.range_join(left, right, on="t", by="sym", before=9)
    assert pairs["t"].tolist() == [5] and pairs["t_right"].isna().all()


@pytest.mark.parametrize("before", ["5s", datetime.timedelta(seconds=5)])
def test_polars_duration_reach_on_a_number_key_is_refused(before):
    # asofgpu.window_join and asofgpu.pandas.window_join refuse a timedelta on an integer key
    # (TypeError: "a duration needs a temporal key"); polars refuses duration strings there
    left = pl.DataFrame({"t": [5_000_000_010]})
    right = pl.DataFrame({"t": [1, 5_000_000_000], "v": [1, 2]})
    with pytest.raises(TypeError, match=r"temporal"):
        agpl.window_join(left, right, on="t", before=before, aggs={"v": "sum"}, device="cpu")


@pytest.mark.parametrize("before", ["abc", "1mox", "5 seconds", "-5s"])
def test_polars_malformed_duration_strings_are_refused(before):
    # polars' own join_asof refuses each of these as a tolerance (InvalidOperationError or
    # ComputeError); window_join must not read "abc" as 0
    left = pl.DataFrame({"t": [datetime.datetime(2024, 1, 1, 0, 0, 5)]})
    right = pl.DataFrame(
        {"t": [datetime.datetime(2024, 1, 1, 0, 0, s) for s in (0, 4)], "v": [1, 2]}
    )
    with pytest.raises((ValueError, pl.exceptions.PolarsError)):
        agpl.window_join(left, right, on="t", before=before, aggs={"v": "sum"}, device="cpu")


def test_polars_reads_a_decimal_duration_exactly():
    # polars' own strings take whole counts only; asofgpu's parser reads "1.5s" as 1.5 s
    left = pl.DataFrame({"t": [datetime.datetime(2024, 1, 1, 0, 0, 5)]})
    right = pl.DataFrame(
        {
            "t": [
                datetime.datetime(2024, 1, 1, 0, 0, 3, 400_000),
                datetime.datetime(2024, 1, 1, 0, 0, 3, 600_000),
            ],
            "v": [1, 2],
        }
    )
    got = agpl.window_join(left, right, on="t", before="1.5s", aggs={"v": "sum"}, device="cpu")
    assert got["v_sum"].to_list() == [2]


@pytest.mark.parametrize(
    ("values", "dtype"),
    [([True, False], pl.Boolean), (["a", "c"], pl.Categorical), (["a", "c"], pl.Enum(["a", "c"]))],
)
def test_polars_keys_without_distances_are_refused(values, dtype):
    # booleans and categoricals have an order but no distance: refused, as the table
    # version refuses them
    left = pl.DataFrame({"k": pl.Series(values[1:], dtype=dtype)})
    right = pl.DataFrame({"k": pl.Series(values, dtype=dtype), "v": [1, 2]})
    with pytest.raises(TypeError, match="right_on must be an integer, float, date, time"):
        agpl.window_join(left, right, on="k", before=1, aggs={"v": "sum"}, device="cpu")


def test_polars_string_keys_are_refused_as_by_the_table_version():
    # a window on String keys would measure distances in ranks among both sides' values, so
    # that a right row outside every window changes which rows are in one; the Arrow-table
    # version refuses the key (TypeError)
    left = pl.DataFrame({"k": ["c"]})
    right = pl.DataFrame({"k": ["a", "c"], "v": [1, 2]})
    with pytest.raises(TypeError):
        asofgpu.window_join(
            left.to_arrow(), right.to_arrow(), on="k", before=1, aggs={"v": "sum"}, device="cpu"
        )
    with pytest.raises(TypeError):
        agpl.window_join(left, right, on="k", before=1, aggs={"v": "sum"}, device="cpu")


def test_polars_right_columns_without_an_arrow_type_are_refused_only_when_aggregated():
    """A right frame may hold Int128 columns (Arrow has none): only aggregating one is
    refused, naming it; the whole right schema was converted, and any such column failed."""
    right = pl.DataFrame({"t": [3, 4], "v": [1.0, 2.0], "big": pl.Series([1, 2], dtype=pl.Int128)})
    left = pl.DataFrame({"t": [5]})
    got = agpl.window_join(left, right, on="t", before=2, aggs={"v": "max"}, device="cpu")
    assert got.rows() == [(5, 2.0)]
    with pytest.raises(
        TypeError,
        match=r"aggs\['big'\]: a Int128 column cannot be aggregated: Arrow, which the join ",
    ):
        agpl.window_join(left, right, on="t", before=2, aggs={"big": "max"}, device="cpu")


# --------------------------------------------------------------------------- ordered categories


def _categorical_sides(seed: int):
    """Integer keys, and a right column of categories ranked against their values' order."""
    rng = np.random.default_rng(seed)
    categories = ["mid", "lo", "hi", "top"]
    left_t = [int(k) for k in rng.integers(0, 20, 15)]
    right_t = [int(k) for k in rng.integers(0, 20, 25)]
    values = [None if rng.random() < 0.2 else str(rng.choice(categories)) for _ in right_t]
    return categories, left_t, right_t, values


def _in_window(keys, x: int, before: int, after: int) -> list[bool]:
    return [x - before <= k <= x + after for k in keys]


@pytest.mark.parametrize("seed", range(3))
def test_pandas_ordered_categorical_min_max_are_pandas_own(seed):
    """Each window's min and max of an ordered Categorical are pandas' ``Series.min/max`` of
    its rows: by category order, not by value."""
    categories, left_t, right_t, values = _categorical_sides(seed)
    dtype = pd.CategoricalDtype(categories, ordered=True)
    left = pd.DataFrame({"t": left_t})
    right = pd.DataFrame({"t": right_t, "c": pd.Series(values, dtype=dtype)})
    out = agpd.window_join(
        left, right, on="t", before=4, after=1, aggs={"c": ["min", "max"]}, device="cpu"
    )
    assert out["c_min"].dtype == dtype
    for i, x in enumerate(left_t):
        rows = right["c"][_in_window(right_t, x, 4, 1)]
        for agg in ("min", "max"):
            want, got = getattr(rows, agg)(), out[f"c_{agg}"].iloc[i]
            assert (pd.isna(want) and pd.isna(got)) or want == got, (agg, i)


@pytest.mark.parametrize("seed", range(3))
def test_polars_enum_min_max_are_polars_own(seed):
    """Each window's min and max of an Enum are polars' own: by the Enum's order."""
    categories, left_t, right_t, values = _categorical_sides(seed)
    enum = pl.Enum(categories)
    left = pl.DataFrame({"t": left_t})
    right = pl.DataFrame({"t": right_t, "c": pl.Series(values, dtype=enum)})
    out = agpl.window_join(
        left, right, on="t", before=4, after=1, aggs={"c": ["min", "max"]}, device="cpu"
    )
    assert out.schema["c_min"] == enum
    for i, x in enumerate(left_t):
        rows = right.filter(pl.Series(_in_window(right_t, x, 4, 1)))["c"]
        assert out["c_min"][i] == rows.min() and out["c_max"][i] == rows.max(), i


def test_pandas_frames_with_labels_that_are_not_strings():
    """pandas' columns may be labelled 0, 1 (a frame made from a list of rows): merge_asof
    joins on=0, and the window, range and splice joins said "on must be one column name,
    got 0" of a column the frame has."""
    left = pd.DataFrame({0: [5, 9], 2: ["a", "b"]})
    right = pd.DataFrame({0: [4, 8], 1: [1.0, 2.0], 2: ["a", "b"]})
    out = agpd.window_join(left, right, on=0, by=2, before=1, aggs={1: "sum"}, device="cpu")
    assert list(out.columns) == [0, 2, "1_sum"] and out["1_sum"].tolist() == [1.0, 2.0]
    pairs = agpd.range_join(left, right, on=0, by=2, before=1, device="cpu")
    assert list(pairs.columns) == [0, 2, "0_right", 1] and pairs[1].tolist() == [1.0, 2.0]
    spliced = agpd.splice_join(left, right, on=0, by=2, device="cpu")
    assert spliced[1].tolist()[-1] == 2.0 and len(spliced) == 4
    with pytest.raises(TypeError, match=r"on must be one column name, got \[0\]"):
        agpd.range_join(left, right, on=[0], before=1, device="cpu")


def test_pandas_count_first_and_last_of_columns_arrow_cannot_read():
    """count reads where a column is null, first and last take its rows with pandas: a
    complex, sparse or mixed-object column (which Arrow cannot read) has them, as the range
    join carries them; they were refused with Arrow's message. Sums still need values."""
    left = pd.DataFrame({"t": [3, 0]})
    columns = {
        "sparse": pd.arrays.SparseArray([1.0, np.nan, 2.0]),
        "complex": np.array([1 + 1j, 2, 3]),
        "mixed": pd.Series(["a", 2, None], dtype=object),
    }
    for name, column in columns.items():
        right = pd.DataFrame({"t": [0, 1, 2], "v": column})
        out = agpd.window_join(
            left, right, on="t", before=5, aggs={"v": ["count", "first", "last"]}, device="cpu"
        )
        values = list(right["v"])
        valid = [i for i, v in enumerate(values) if not pd.isna(v)]
        assert out["v_count"].tolist() == [len(valid), int(not pd.isna(values[0]))], name
        assert (
            out["v_first"].iloc[0] == values[valid[0]]
            and out["v_last"].iloc[0] == values[valid[-1]]
        )
    for name, column in columns.items():
        right = pd.DataFrame({"t": [0, 1, 2], "v": column})
        with pytest.raises((TypeError, ValueError)) as refused:
            agpd.window_join(left, right, on="t", before=5, aggs={"v": "sum"}, device="cpu")
        assert str(refused.value).startswith("aggs['v'] could not be read as a column of"), name
        assert str(refused.value).endswith(
            "Hint: sum, mean, min and max read the values, which Arrow must read (a sparse "
            "column: pass right['v'].sparse.to_dense()); count, first and last take any column"
        ), name
    # An error of Arrow's whose type takes more than a message (a lone surrogate's
    # UnicodeEncodeError) comes as a ValueError with the hint, not as a TypeError of its own
    right = pd.DataFrame({"t": [0, 1], "v": pd.Series(["a", "\ud800"], dtype=object)})
    with pytest.raises(ValueError, match="Hint: sum, mean, min and max read the values"):
        agpd.window_join(left, right, on="t", before=5, aggs={"v": "max"}, device="cpu")


@pytest.mark.skipif(not hasattr(pl, "Int128"), reason="this polars has no Int128")
def test_polars_int128_columns_count_first_and_last_and_keys():
    """Arrow has no 128-bit integers: count, first and last (which read nulls alone, the
    picks' values gathered by polars) of an Int128 column were refused, as "cannot be
    aggregated"; Int128 keys raised Arrow's own error. Keys are read as 64-bit integers
    where their values fit, as join_asof reads them."""
    big = 2**100
    left = pl.DataFrame({"t": [5, 9]})
    right = pl.DataFrame({"t": [1, 4, 8], "big": pl.Series([big, None, 4], dtype=pl.Int128)})
    out = agpl.window_join(
        left, right, on="t", before=10, aggs={"big": ["count", "first", "last"]}, device="cpu"
    )
    assert out.rows() == [(5, 1, big, big), (9, 2, big, 4)]
    assert out.schema["big_first"] == pl.Int128
    with pytest.raises(
        TypeError,
        match=r"aggs\['big'\]: a Int128 column cannot be aggregated: Arrow, which the join ",
    ):
        agpl.window_join(left, right, on="t", before=10, aggs={"big": "sum"}, device="cpu")
    wide = agpl.window_join(
        left.cast({"t": pl.Int128}),
        right.cast({"t": pl.Int128}),
        on="t",
        before=2,
        aggs={"big": "count"},
        device="cpu",
    )
    assert wide["big_count"].to_list() == [0, 1]
