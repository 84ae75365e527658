"""asofgpu.join_asof on whole tables against polars' join_asof (the rules it follows)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import asofgpu as ag

try:
    import polars as pl
    from polars.testing import assert_frame_equal
except ImportError:  # only the tests marked needs_polars skip
    pl = None

needs_polars = pytest.mark.skipif(pl is None, reason="polars is not installed")


def _frames(seed: int, n_left=60, n_right=50, groups=4):
    rng = np.random.default_rng(seed)
    right = pl.DataFrame(
        {
            "t": np.sort(rng.integers(0, 100, n_right)),
            "g": rng.choice([f"s{i}" for i in range(groups)], n_right),
            "bid": rng.normal(size=n_right),
            "x": rng.integers(0, 9, n_right),
        }
    )
    left = pl.DataFrame(
        {
            "t": np.sort(rng.integers(-5, 110, n_left)),
            "g": rng.choice([f"s{i}" for i in range(groups + 1)], n_left),
            "x": rng.integers(0, 9, n_left),
        }
    )
    return left, right


@needs_polars
@pytest.mark.parametrize("strategy", ["backward", "forward", "nearest"])
@pytest.mark.parametrize("exact", [True, False])
@pytest.mark.parametrize("tolerance", [None, 3])
@pytest.mark.parametrize("coalesce", [True, False])
@pytest.mark.parametrize("seed", [0, 1])
def test_same_frame_as_polars(strategy, exact, tolerance, coalesce, seed):
    left, right = _frames(seed)
    options = dict(
        on="t",
        by="g",
        strategy=strategy,
        allow_exact_matches=exact,
        tolerance=tolerance,
        coalesce=coalesce,
    )
    expected = left.join_asof(right, check_sortedness=False, **options)
    got = pl.from_arrow(ag.join_asof(left, right, device="cpu", **options))
    assert_frame_equal(got, expected, check_exact=True)


@needs_polars
def test_different_key_names_keep_the_right_on_and_drop_the_right_by():
    left, right = _frames(3)
    right = right.rename({"t": "rt", "g": "rg"})
    options = dict(left_on="t", right_on="rt", by_left="g", by_right="rg")
    expected = left.join_asof(right, check_sortedness=False, **options)
    got = pl.from_arrow(
        ag.join_asof(
            left, right, left_on="t", right_on="rt", by_left="g", by_right="rg", device="cpu"
        )
    )
    assert_frame_equal(got, expected, check_exact=True)


@needs_polars
def test_unsorted_inputs_give_the_sorted_answer_in_left_order():
    left, right = _frames(4)
    left = left.with_row_index("i")
    right = right.unique(subset=["g", "t"], keep="first", maintain_order=True)  # no duplicates
    expected = left.join_asof(right, on="t", by="g", check_sortedness=False)
    shuffled_left = left.sample(fraction=1.0, shuffle=True, seed=1)
    shuffled_right = right.sample(fraction=1.0, shuffle=True, seed=2)
    got = pl.from_arrow(ag.join_asof(shuffled_left, shuffled_right, on="t", by="g", device="cpu"))
    assert got["i"].to_list() == shuffled_left["i"].to_list()  # left order kept
    assert_frame_equal(got.sort("i"), expected, check_exact=True)


def test_payload_types_come_through_with_nulls():
    right = pa.table(
        {
            "t": [1, 5],
            "s": ["a", "b"],
            "d": pa.array([1, 2], pa.decimal128(10, 2)),
            "l": [[1, 2], [3]],
            "c": pa.array(["u", "v"]).dictionary_encode(),
            "b": [True, False],
            "ts": pa.array([10, 20], pa.timestamp("ms")),
        }
    )
    left = pa.table({"t": [0, 1, 7]})
    out = ag.join_asof(left, right, on="t", device="cpu")
    assert out.column_names == ["t", "s", "d", "l", "c", "b", "ts"]
    assert out.schema.field("d").type == pa.decimal128(10, 2)
    assert out.column("s").to_pylist() == [None, "a", "b"]
    assert out.column("l").to_pylist() == [None, [1, 2], [3]]
    assert out.column("c").to_pylist() == [None, "u", "v"]
    assert out.column("b").to_pylist() == [None, True, False]


def test_the_fields_of_the_left_come_as_declared_and_the_rights_nullable():
    """The left's columns come unchanged, their fields too (required, metadata; nullable in
    a splice, whose right rows have no left one); a right column's field keeps its metadata
    but its parquet field id, and is nullable."""
    left = pa.table(
        {"t": [1, 5]},
        schema=pa.schema([pa.field("t", pa.int64(), False, {"PARQUET:field_id": "1"})]),
    )
    v = pa.field("v", pa.float64(), False, {"unit": "USD", "PARQUET:field_id": "1"})
    right = pa.table({"t": [2], "v": [1.0]}, schema=pa.schema([("t", pa.int64()), v]))
    attached = pa.field("v", pa.float64(), metadata={"unit": "USD"})
    got = ag.join_asof(left, right, on="t", device="cpu")
    assert got.schema.field("t").equals(left.schema.field("t"), check_metadata=True)
    assert got.schema.field("v").equals(attached, check_metadata=True)
    assert got["v"].to_pylist() == [None, 1.0]
    got = ag.range_join(left, right, on="t", before=5, device="cpu")  # every left row once
    assert got.schema.field("t").equals(left.schema.field("t"), check_metadata=True)
    assert got.schema.field("v").equals(attached, check_metadata=True)
    got = ag.window_join(left, right, on="t", before=5, aggs={"v": "sum"}, device="cpu")
    assert got.schema.field("t").equals(left.schema.field("t"), check_metadata=True)
    got = ag.splice_join(left, right, on="t", device="cpu")  # left null where none prevails
    assert got.schema.field("t").equals(left.schema.field("t").with_nullable(True), True)
    assert got.schema.field("v").equals(attached, check_metadata=True)
    assert got["t"].to_pylist() == [1, 1, 5]  # (the right row at 2 carries the left at 1)


def test_pandas_frames_are_accepted():
    pd = pytest.importorskip("pandas")
    left = pd.DataFrame({"t": [1, 6]}, index=[10, 11])
    right = pd.DataFrame({"t": [0, 5], "v": [1.5, 2.5]})
    out = ag.join_asof(left, right, on="t", device="cpu")
    assert out.to_pydict() == {"t": [1, 6], "v": [1.5, 2.5]}


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (dict(), ValueError, "the as-of key is missing: pass on, or both left_on and right_on"),
        (dict(on="t", left_on="t", right_on="t"), ValueError, "pass either on, or both"),
        (dict(left_on="t"), ValueError, "the as-of key is missing"),
        (dict(on=["t"]), TypeError, "on must be one column name, got \\['t'\\]"),
        (dict(on="t", by="g", by_left="g", by_right="g"), ValueError, "pass either by, or both"),
        (dict(on="t", by_left="g"), ValueError, "by_left and by_right must be given together"),
        (
            dict(on="t", by_left=["g", "t"], by_right=["g"]),
            ValueError,
            "as many columns, got 2 and 1",
        ),
        (dict(on="t", by=[]), TypeError, "by must be a column name or a non-empty sequence"),
        (dict(on="nope"), KeyError, "left table has no column 'nope'"),
        (dict(on="t", suffix=None), TypeError, "suffix must be a string, got None"),
        (dict(on="t", coalesce="no"), TypeError, "coalesce must be True or False, got 'no'"),
        (dict(left_on="t", right_on="g", coalesce=None), TypeError, "coalesce must be True or"),
        (
            dict(on="t", device=np.array(["cpu"])),  # checked before it is compared with "auto"
            ValueError,
            "device must be one of 'auto', 'cpu', 'cuda', 'python', got array",
        ),
    ],
)
def test_argument_errors(kwargs, error, match):
    left = pa.table({"t": [1], "g": ["a"]})
    right = pa.table({"t": [1], "g": ["a"]})
    with pytest.raises(error, match=match):
        ag.join_asof(left, right, **{"device": "cpu", **kwargs})


def test_a_suffix_that_still_clashes_is_refused():
    left = pa.table({"t": [1], "x": [1], "x_right": [2]})
    right = pa.table({"t": [1], "x": [5]})
    with pytest.raises(
        ValueError,
        match="column 'x_right' appears twice in the result: the right column 'x' clashes "
        "with a left column even with suffix '_right'",
    ):
        ag.join_asof(left, right, on="t", device="cpu")
    # The suffixed name is another right column's: the message blamed a left one.
    left, right = pa.table({"t": [1], "x": [1]}), pa.table({"t": [1], "x": [5], "x_right": [6]})
    with pytest.raises(
        ValueError,
        match="column 'x_right' appears twice in the result: the right column 'x_right' "
        "clashes with another right column",
    ):
        ag.join_asof(left, right, on="t", device="cpu")


def test_non_tables_are_refused():
    with pytest.raises(TypeError, match="left must be a table"):
        ag.join_asof([1, 2], pa.table({"t": [1]}), on="t")


def test_the_old_names_of_by_left_and_by_right_still_work_with_a_deprecation_warning():
    left = pa.table({"t": [1, 5], "g": ["a", "b"]})
    right = pa.table({"t": [0, 4], "h": ["a", "b"], "v": [1.0, 2.0]})
    expected = ag.join_asof(left, right, on="t", by_left="g", by_right="h", device="cpu")
    with pytest.warns(DeprecationWarning) as caught:
        got = ag.join_asof(left, right, on="t", left_by="g", right_by="h", device="cpu")
    assert got.equals(expected)
    assert [str(w.message) for w in caught] == [
        f"join_asof's {old} is now {new}, as polars names it; the old name will be removed in "
        f"asofgpu 0.3"
        for old, new in (("left_by", "by_left"), ("right_by", "by_right"))
    ]
    assert {w.filename for w in caught} == {__file__}  # the caller's line
    with pytest.raises(TypeError, match="pass by_right only: right_by is its old name"):
        ag.join_asof(left, right, on="t", by_left="g", by_right="h", right_by="h", device="cpu")


@pytest.mark.parametrize("join", ["join_asof", "splice_join", "range_join", "window_join"])
@pytest.mark.parametrize("side", ["left", "right"])
def test_a_table_with_two_columns_of_one_name_is_refused_by_side(join, side):
    """pyarrow tables may hold two columns of one name; the joins take columns by name, and
    pyarrow's own KeyError named neither the side nor the call (the window join even said the
    column did not exist)."""
    twice = pa.table({"t": [1, 5], "v": [1.0, 2.0]})
    twice = twice.append_column("v", pa.array([3.0, 4.0]))
    once = pa.table({"t": [2, 6], "w": [1, 2]})
    left, right = (twice, once) if side == "left" else (once, twice)
    options = {"on": "t", "device": "cpu"}
    if join in ("range_join", "window_join"):
        options["before"] = 1
    if join == "window_join":
        options["aggs"] = {"w" if side == "left" else "v": "count"}
    msg = f"the {side} table has 2 columns named 'v': a join takes its columns by name"
    with pytest.raises(ValueError, match=msg):
        getattr(ag, join)(left, right, **options)


@pytest.mark.parametrize(
    ("front", "join"),
    [("table", j) for j in ("join_asof", "splice_join", "range_join", "window_join")]
    # asofgpu.pandas.merge_asof refuses them with pandas' own MergeError (test_pandas_frontend)
    + [("pandas", j) for j in ("splice_join", "range_join", "window_join")],
)
def test_by_columns_that_cannot_be_compared_are_refused_by_their_names(join, front):
    """The by columns' types are checked by the names the caller gave them: the join itself
    knows them as left_by[i] and right_by[i], which these functions do not take (their
    parameters are by, by_left and by_right). A column of nulls only compares with any."""
    left = pa.table({"t": [1, 3, 5], "x": ["a", "b", "a"], "g": [1, 2, 1]})
    right = pa.table({"t": [0, 2, 4], "x": ["a", "a", "b"], "s": ["a", "a", "b"], "v": [1, 2, 3]})
    if front == "pandas":
        import asofgpu.pandas as module

        def frame(table):
            return table.to_pandas()
    else:
        module = ag

        def frame(table):
            return table

    options = {"on": "t", "device": "cpu"}
    if join in ("range_join", "window_join"):
        options["before"] = 1
    if join == "window_join":
        options["aggs"] = {"v": "count"}
    msg = (
        r"left column 'g' \(int64\) and right column 's' \((large_)?string\) cannot be "
        r"compared: by-columns must have the same type on both sides"
    )
    with pytest.raises(TypeError, match=msg):
        getattr(module, join)(
            frame(left), frame(right), by_left=["x", "g"], by_right=["x", "s"], **options
        )
    nulls = right.set_column(2, "s", pa.array([None] * 3, pa.string()))
    joined = getattr(module, join)(
        frame(left), frame(nulls), by_left=["x", "g"], by_right=["x", "s"], **options
    )
    assert len(joined) >= len(left)


@pytest.mark.parametrize("extra", ["v255", "w"])
def test_dictionary_by_chunks_whose_values_outgrow_their_index_type(extra):
    """Chunks of uint8 dictionaries whose values number 256 or more together: Arrow cannot
    unify them in uint8, and the join ended in its ArrowInvalid ("requires a larger index
    type"). They are unified with wider indices."""
    values = pa.array([f"v{i}" for i in range(256)])
    first = pa.DictionaryArray.from_arrays(pa.array([255, None, 0, 255], pa.uint8()), values)
    second = pa.DictionaryArray.from_arrays(pa.array([0, None], pa.uint8()), pa.array([extra]))
    left = pa.table({"t": [1, 2, 3, 4, 5, 6], "s": pa.chunked_array([first, second])})
    right = left.append_column("v", pa.array(range(6)))
    got = ag.join_asof(left, right, on="t", by="s", device="cpu")["v"].to_pylist()
    # each row its own latest (rows 3 and 4 are v255 when the second dictionary holds it)
    assert got == [0, None, 2, 3, 4, None]
    decoded = left.set_column(1, "s", left["s"].cast(pa.string()))
    want = ag.join_asof(decoded, right.set_column(1, "s", decoded["s"]), on="t", by="s")
    assert got == want["v"].to_pylist()
    # attached: the gather's take refused them the same way; they widen their indices
    attached = ag.join_asof(left.select(["t"]), left, on="t", device="cpu")["s"]
    assert attached.type == pa.dictionary(pa.int32(), pa.string())
    assert attached.to_pylist() == left["s"].to_pylist()
