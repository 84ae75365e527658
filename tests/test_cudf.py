"""asofgpu.cudf.merge_asof: pandas' signature and results on cuDF frames.

``import cudf`` works without a GPU (cudf 26.10), and so do empty frames
(``cudf.DataFrame()``): the argument checks and pandas' validation run in CI on them, each
compared with pandas' own error. Frames with columns need a GPU: those tests carry ``gpu`` and
compare the result with pandas and with asofgpu.pandas.
"""

from __future__ import annotations

from importlib.util import find_spec

import numpy as np
import pandas as pd
import pytest

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
