"""asofgpu.cudf.merge_asof: pandas' signature and results on cuDF frames; asofgpu.cudf.splice_join:
the table-level splice join's results on cuDF frames.

``import cudf`` works without a GPU (cudf 26.10), and so do empty frames
(``cudf.DataFrame()``): the argument checks and pandas' validation run in CI on them, each
compared with pandas' own error. Frames with columns need a GPU: those tests carry ``gpu`` and
compare the result with pandas and with asofgpu.pandas (merge_asof), or with the table-level
``asofgpu.splice_join`` on the cpu (splice_join).
"""

from __future__ import annotations

from importlib.util import find_spec

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import asofgpu as ag

pytestmark = pytest.mark.skipif(
    find_spec("cudf") is None, reason="cudf is not installed (it lives in .venv-cudf)"
)


def _errors_alike(call_ours, call_pandas):
    with pytest.raises(Exception) as theirs:  # noqa: PT011 - whatever pandas raises
        call_pandas()
    with pytest.raises(type(theirs.value)) as ours:
        call_ours()
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(direction="sideways"),
        dict(allow_exact_matches="yes"),
        dict(),  # no common columns
        dict(on="a", left_on="a"),
        dict(on="a", left_index=True),
        dict(left_index=True),
        dict(right_index=True),
        dict(left_on="a", left_index=True),
        dict(left_on=["a", "b"], right_on=["a", "b"]),
        dict(left_index=True, right_index=True, by="x", left_by="x"),
        dict(left_index=True, right_index=True, left_by="x"),
        dict(left_index="yes", right_index=True),
    ],
)
def test_validation_errors_are_pandas(kwargs):
    import cudf

    from asofgpu.cudf import merge_asof

    _errors_alike(
        lambda: merge_asof(cudf.DataFrame(), cudf.DataFrame(), **kwargs),
        lambda: pd.merge_asof(pd.DataFrame(), pd.DataFrame(), **kwargs),
    )


def test_operands_must_be_cudf():
    import cudf

    from asofgpu.cudf import merge_asof

    with pytest.raises(
        TypeError,
        match="Can only merge Series or DataFrame objects, a "
        "<class 'pandas.*DataFrame'> was passed",
    ):
        merge_asof(pd.DataFrame({"t": [1]}), cudf.DataFrame(), on="t")
    with pytest.raises(
        TypeError, match="Can only merge Series or DataFrame objects, a <class 'list'> was passed"
    ):
        merge_asof(cudf.DataFrame(), [1, 2], on="t")


@pytest.mark.parametrize("param", ["on", "left_on", "right_on", "by", "left_by", "right_by"])
def test_keys_must_be_labels(param):
    import cudf

    from asofgpu.cudf import merge_asof

    message = (
        f"{param} must be a column label or index level name .* in "
        f"asofgpu.cudf.merge_asof, got ndarray. Hint: add the array"
    )
    for value in (np.arange(3), ["t", np.arange(3)]):
        with pytest.raises(TypeError, match=message):
            merge_asof(cudf.DataFrame(), cudf.DataFrame(), **{param: value})


def test_splice_operands_must_be_cudf_frames():
    import cudf

    from asofgpu.cudf import splice_join

    with pytest.raises(
        TypeError, match=r"left must be a cudf.DataFrame, got pandas(\.core\.frame)?\.DataFrame"
    ):
        splice_join(pd.DataFrame({"t": [1]}), cudf.DataFrame(), on="t")
    with pytest.raises(TypeError, match="right must be a cudf.DataFrame, got builtins.list"):
        splice_join(cudf.DataFrame(), [1, 2], on="t")


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({}, ValueError, "the as-of key is missing: pass on, or both left_on and right_on"),
        (dict(on="t", left_on="t"), ValueError, "pass either on, or both left_on and right_on"),
        (dict(on=["t"]), TypeError, r"on must be one column name, got \['t'\]"),
        (dict(on=3), KeyError, "left frame has no column 3"),  # a label, as pandas' are
        (dict(on="t", by="g", by_left="g"), ValueError, "pass either by, or both by_left"),
        (dict(on="t", by_left="g"), ValueError, "by_left and by_right must be given together"),
        (
            dict(on="t", by_left=["a", "b"], by_right="a"),
            ValueError,
            "by_left and by_right must name as many columns, got 2 and 1",
        ),
        (dict(on="t", by=[]), TypeError, "by must be a column name or a non-empty sequence"),
        (dict(on="t", suffix=3), TypeError, "suffix must be a string, got 3"),
        (
            dict(on="t", allow_exact_matches="yes"),
            TypeError,
            "allow_exact_matches must be True or False, got 'yes'",
        ),
        (
            dict(on="t", null_equality="x"),
            ValueError,
            "null_equality must be one of 'unequal', 'equal', got 'x'",
        ),
        (dict(on="t"), KeyError, r"left frame has no column 't'; its columns are \[\]"),
        (dict(left_on="a", right_on="b", by="g"), KeyError, "left frame has no column 'a'"),
    ],
)
def test_splice_argument_errors(kwargs, error, message):
    import cudf

    from asofgpu.cudf import splice_join

    with pytest.raises(error, match=message):
        splice_join(cudf.DataFrame(), cudf.DataFrame(), **kwargs)


# --------------------------------------------------------------------------- on a GPU


def _frames(rng, n_left=3_000, n_right=2_000, key="int64"):
    """Sorted pandas frames: an int or datetime key, a string and an int by-key, payloads."""

    def frame(n, payload):
        t = np.sort(rng.integers(0, 10_000, n))
        out = pd.DataFrame(
            {
                "t": t.astype(key) if key != "datetime" else pd.to_datetime(t, unit="ms"),
                "sym": rng.choice(["A", "B", "C", "D"], n),
                "venue": rng.integers(0, 3, n),
            }
        )
        out[payload] = rng.integers(-100, 100, n)
        out["flag"] = rng.random(n) < 0.5
        return out

    return frame(n_left, "qty"), frame(n_right, "bid")


def _compare(left, right, **kwargs):
    import cudf

    from asofgpu.cudf import merge_asof
    from asofgpu.pandas import merge_asof as pandas_front

    expected = pd.merge_asof(left, right, **kwargs)
    got = merge_asof(cudf.from_pandas(left), cudf.from_pandas(right), **kwargs)
    assert isinstance(got, cudf.DataFrame)
    pd.testing.assert_frame_equal(got.to_pandas(), expected, check_exact=True)
    pd.testing.assert_frame_equal(
        pandas_front(left, right, device="cpu", **kwargs), expected, check_exact=True
    )


@pytest.mark.gpu
@pytest.mark.parametrize("direction", ["backward", "forward", "nearest"])
@pytest.mark.parametrize("exact", [True, False])
@pytest.mark.parametrize("key", ["int64", "int32", "float64", "datetime"])
def test_equals_pandas_on_random_frames(direction, exact, key):
    left, right = _frames(np.random.default_rng(1), key=key)
    tolerance = pd.Timedelta("25ms") if key == "datetime" else 25
    for kwargs in (
        dict(on="t"),
        dict(on="t", by="sym"),
        dict(on="t", by=["sym", "venue"]),
        dict(on="t", by="sym", tolerance=tolerance),
    ):
        _compare(left, right, direction=direction, allow_exact_matches=exact, **kwargs)


@pytest.mark.gpu
@pytest.mark.parametrize("key", ["int64", "float64"])
def test_a_caller_on_a_non_blocking_cupy_stream_gets_pandas_results(key):
    """asofgpu.plc runs on pylibcudf's default stream and waits for no other (issue 24, item
    6): asofgpu.cudf's own cupy work on its maps runs there too, not on the stream the caller
    made current, so a non-blocking one reads nothing unwritten. Large enough that the work
    takes time to finish."""
    import cupy

    left, right = _frames(np.random.default_rng(5), n_left=400_000, n_right=300_000, key=key)
    with cupy.cuda.Stream(non_blocking=True):
        _compare(left, right, on="t", by="sym", direction="nearest")


@pytest.mark.gpu
def test_key_names_indexes_and_suffixes_follow_pandas():
    left, right = _frames(np.random.default_rng(2), 500, 400)
    right_renamed = right.rename(columns={"t": "t2", "sym": "sym2"})
    _compare(left, right_renamed, left_on="t", right_on="t2", left_by="sym", right_by="sym2")
    _compare(left.set_index("t"), right.set_index("t"), left_index=True, right_index=True, by="sym")
    _compare(left.set_index("t"), right, left_index=True, right_on="t", by="sym")
    _compare(
        left, right.set_index("t"), left_on="t", right_index=True, by="sym", suffixes=("_l", None)
    )


@pytest.mark.gpu
def test_float32_and_infinite_keys_follow_pandas_arithmetic():
    rng = np.random.default_rng(4)
    left = pd.DataFrame({"t": np.sort(rng.random(800)).astype(np.float32) * 1e4})
    right = pd.DataFrame(
        {"t": np.sort(rng.random(600)).astype(np.float32) * 1e4, "v": np.arange(600)}
    )
    for direction in ("backward", "forward", "nearest"):
        _compare(left, right, on="t", direction=direction, tolerance=0.5)
    left64 = pd.DataFrame({"t": [-np.inf, 0.0, 3.0, np.inf]})
    right64 = pd.DataFrame({"t": [-np.inf, 1.0, np.inf], "v": [1, 2, 3]})
    _compare(left64, right64, on="t", direction="nearest")


@pytest.mark.gpu
def test_data_errors_are_pandas():
    import cudf

    from asofgpu.cudf import merge_asof

    unsorted = pd.DataFrame({"t": [3, 1, 2], "v": [1, 2, 3]})
    with_null = pd.DataFrame({"t": [1.0, np.nan, 3.0], "v": [1, 2, 3]})
    sorted_ = pd.DataFrame({"t": [1, 2, 3], "v": [1, 2, 3]})
    for left, right in ((unsorted, sorted_), (sorted_, unsorted), (with_null, with_null)):
        _errors_alike(
            lambda: merge_asof(cudf.from_pandas(left), cudf.from_pandas(right), on="t"),
            lambda: pd.merge_asof(left, right, on="t"),
        )


def _splice_tables(rng, n_left, n_right, key):
    """Arrow tables in random order: an int or timestamp key with nulls and many ties, a
    string by-key with nulls, an int by-key, a payload; the same names on both sides."""

    def table(n, payload):
        t = pa.array(rng.integers(0, 300, n), mask=rng.random(n) < 0.05)
        sym = rng.choice(["A", "B", "C"], n).astype(object)
        sym[rng.random(n) < 0.05] = None
        return pa.table(
            {
                "t": t.cast(pa.timestamp("ms")) if key == "datetime" else t,
                "sym": pa.array(sym, pa.string()),
                "venue": rng.integers(0, 3, n),
                payload: rng.normal(size=n),
            }
        )

    return table(n_left, "qty"), table(n_right, "bid")


def _compare_splice(left, right, **kwargs):
    """asofgpu.cudf.splice_join of Arrow tables made cuDF frames, against the table-level
    splice join on the cpu of the frames' own columns: names, dtypes, index and values."""
    import cudf

    from asofgpu.cudf import splice_join

    left_f, right_f = cudf.DataFrame.from_arrow(left), cudf.DataFrame.from_arrow(right)

    def arrow(frame):
        return pa.table({c: frame[c].to_arrow() for c in frame.columns})

    expected = ag.splice_join(arrow(left_f), arrow(right_f), device="cpu", **kwargs)
    got = splice_join(left_f, right_f, **kwargs)
    assert isinstance(got, cudf.DataFrame)
    assert list(got.columns) == expected.column_names
    assert list(got.dtypes) == list(left_f.dtypes) + list(right_f.dtypes)
    assert isinstance(got.index, cudf.RangeIndex)
    assert (got.index.start, len(got)) == (0, len(left) + len(right))
    for name, column in zip(expected.column_names, expected.columns):
        assert got[name].to_arrow().to_pylist() == column.to_pylist(), name


@pytest.mark.gpu
@pytest.mark.parametrize("exact", [True, False])
@pytest.mark.parametrize("key", ["int64", "datetime"])
def test_splice_join_equals_the_table_level_one(exact, key):
    left, right = _splice_tables(np.random.default_rng(8), 3_000, 2_000, key)
    tolerance = pd.Timedelta("25ms") if key == "datetime" else 25
    for kwargs in (
        dict(on="t"),
        dict(on="t", by="sym"),
        dict(on="t", by=["sym", "venue"], tolerance=tolerance),
        dict(on="t", by="sym", null_equality="equal", suffix="_q"),
    ):
        _compare_splice(left, right, allow_exact_matches=exact, **kwargs)
    renamed = right.rename_columns(["t2", "sym2", "venue", "bid"])
    _compare_splice(
        left,
        renamed,
        left_on="t",
        right_on="t2",
        by_left="sym",
        by_right="sym2",
        allow_exact_matches=exact,
        tolerance=tolerance,
    )


@pytest.mark.gpu
def test_splice_join_questdb_example():
    import cudf

    from asofgpu.cudf import splice_join

    buys = cudf.DataFrame({"ts": [0.039906, 0.343909], "buy": ["b1", "b2"]})
    sells = cudf.DataFrame({"ts": [0.222534, 0.222534], "sell": ["s1", "s2"]})
    out = splice_join(buys, sells, on="ts")
    assert list(out.columns) == ["ts", "buy", "ts_right", "sell"]
    pairs = zip(out["buy"].to_arrow().to_pylist(), out["sell"].to_arrow().to_pylist())
    assert list(pairs) == [("b1", None), ("b1", "s1"), ("b1", "s2"), ("b2", "s2")]
    assert out["ts"].to_arrow().to_pylist() == [0.039906, 0.039906, 0.039906, 0.343909]
    assert out["ts_right"].to_arrow().to_pylist() == [None, 0.222534, 0.222534, 0.222534]


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (dict(on="t", by="g"), KeyError, r"right frame has no column 'g'; its columns are"),
        (
            dict(on="t", suffix="_q"),
            ValueError,
            "column 'v_q' appears twice in the result: the right column 'v' clashes",
        ),
        (dict(on="t", tolerance="5s"), TypeError, "tolerance must be a non-negative number"),
        (
            dict(left_on="t", right_on="s"),
            TypeError,
            "right_on must be an integer, float, timestamp or duration column, got STRING",
        ),
    ],
)
def test_splice_errors_on_frames(kwargs, error, message):
    import cudf

    from asofgpu.cudf import splice_join

    left = cudf.DataFrame({"t": [1, 2], "g": ["a", "b"], "v": [1.0, 2.0], "v_q": [0, 0]})
    right = cudf.DataFrame({"t": [1], "s": ["x"], "v": [3.0]})
    with pytest.raises(error, match=message):
        splice_join(left, right, **kwargs)


@pytest.mark.gpu
def test_docstring_examples_run_on_a_gpu():
    import doctest

    import asofgpu.cudf as front

    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in doctest.DocTestFinder().find(front):
        for example in test.examples:
            example.options.pop(doctest.SKIP, None)
        runner.run(test)
    assert runner.failures == 0


@pytest.mark.gpu
@pytest.mark.parametrize("direction", ["backward", "forward", "nearest"])
def test_date_offsets_and_columns_of_tolerances_as_asofgpu_pandas_takes_them(direction):
    """pandas refuses both; asofgpu.cudf must give asofgpu.pandas' answer (which
    tests/test_pandas_tolerance.py checks against a brute force)."""
    import cudf

    from asofgpu.cudf import merge_asof
    from asofgpu.pandas import merge_asof as pandas_front

    rng = np.random.default_rng(4)
    hours = [np.sort(rng.integers(0, 24 * 200, n)) for n in (60, 40)]
    left = pd.DataFrame({"t": pd.Timestamp("2024-01-20") + pd.to_timedelta(hours[0], "h")})
    left["sym"] = rng.choice(["a", "b"], len(left))
    right = pd.DataFrame({"t": pd.Timestamp("2024-01-20") + pd.to_timedelta(hours[1], "h")})
    right["sym"] = rng.choice(["a", "b"], len(right))
    right["v"] = np.arange(len(right), dtype=np.float64)
    stale = pd.Series(pd.to_timedelta(rng.choice([1, 24, 24 * 30, -1], len(left)), "h"))
    stale[stale < pd.Timedelta(0)] = pd.NaT
    for tolerance in (pd.DateOffset(months=1), stale, cudf.from_pandas(stale)):
        options = dict(on="t", by="sym", direction=direction, tolerance=tolerance)
        got = merge_asof(cudf.from_pandas(left), cudf.from_pandas(right), **options)
        host = stale if isinstance(tolerance, cudf.Series) else tolerance
        want = pandas_front(left, right, device="cpu", **{**options, "tolerance": host})
        pd.testing.assert_frame_equal(got.to_pandas(), want, check_exact=True)
