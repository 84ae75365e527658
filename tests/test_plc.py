"""asofgpu.plc: the pylibcudf-style front end, and the primitive's GroupCodes hook it uses.

Without a GPU, pylibcudf imports and makes Column objects that hold no data (data=None):
enough to test every argument check, which all run before device memory is touched. The
``gpu`` tests compare the maps with the cpu primitive's on real device columns.
"""

from __future__ import annotations

import datetime
import doctest
from importlib.util import find_spec

import numpy as np
import pyarrow as pa
import pytest

import asofgpu as ag
from asofgpu.join import GroupCodes

needs_plc = pytest.mark.skipif(
    find_spec("pylibcudf") is None, reason="pylibcudf is not installed (it lives in .venv-cudf)"
)


# --------------------------------------------------------------------------- GroupCodes hook


def test_group_codes_give_the_map_of_the_by_columns():
    rng = np.random.default_rng(3)
    right_on, left_on = rng.integers(0, 50, 300), rng.integers(-5, 55, 200)
    right_sym, left_sym = rng.integers(0, 7, 300), rng.integers(0, 9, 200)  # 7, 8: absent
    expected = ag.AsofJoin(right_on, right_sym, device="cpu").join(
        left_on, left_sym, strategy="nearest"
    )
    codes = GroupCodes(right_sym.astype(np.int32), 7)
    left_codes = GroupCodes(np.where(left_sym < 7, left_sym, -1).astype(np.int32), 7)
    for presorted in (False, True):
        order = np.lexsort((right_on, right_sym)) if presorted else np.arange(300)
        got = ag.AsofJoin(
            right_on[order], GroupCodes(codes.codes[order], 7), presorted=presorted, device="cpu"
        ).join(left_on, left_codes, strategy="nearest")
        np.testing.assert_array_equal(np.where(got >= 0, order[np.maximum(got, 0)], got), expected)


def test_group_codes_minus_one_never_match():
    j = ag.AsofJoin(
        np.array([1, 2, 3]), GroupCodes(np.array([0, -1, 0], np.int32), 1), device="cpu"
    )
    gmap = j.join(np.array([2, 3]), GroupCodes(np.array([0, -1], np.int32), 1))
    assert gmap.tolist() == [0, ag.NO_MATCH]


def test_group_codes_errors():
    with pytest.raises(ValueError, match="right_by has 2 rows, but right_on has 3"):
        ag.AsofJoin(np.array([1, 2, 3]), GroupCodes(np.zeros(2, np.int32), 1), device="cpu")
    j = ag.AsofJoin(np.array([1, 2, 3]), GroupCodes(np.zeros(3, np.int32), 1), device="cpu")
    with pytest.raises(TypeError, match="left_by must be GroupCodes, as right_by was, got ndarray"):
        j.join(np.array([1]), np.array([0]))
    with pytest.raises(ValueError, match="left_by has 2 rows, but left_on has 1"):
        j.join(np.array([1]), GroupCodes(np.zeros(2, np.int32), 1))


# --------------------------------------------------------------------------- arguments, no GPU


class Reached(Exception):
    """Raised in place of the first device step: every check before it passed."""


@pytest.fixture
def plc():
    if find_spec("pylibcudf") is None:
        pytest.skip("pylibcudf is not installed (it lives in .venv-cudf)")
    import pylibcudf

    return pylibcudf


@pytest.fixture
def front(plc, monkeypatch):
    """asofgpu.plc with its device steps replaced: preparation does nothing, and a join
    raises Reached where it would first touch the device."""
    import asofgpu.plc as front

    monkeypatch.setattr(front.AsofJoin, "_prepare", lambda self, *args: None)

    def reached(stream):
        raise Reached

    monkeypatch.setattr(front, "_stream", reached)
    return front


def col(plc, type_id, size=0, scale=0):
    """A Column with no data: pylibcudf makes these without a GPU."""
    dtype = plc.DataType(type_id, scale) if scale else plc.DataType(type_id)
    return plc.Column(dtype, size, None, None, 0, 0, [], validate=False)


@pytest.fixture
def prepared(plc, front):
    """A right side with one INT64 by-column and an INT64 key, 3 rows."""
    T = plc.TypeId
    return front.AsofJoin(plc.Table([col(plc, T.INT64, 3)]), col(plc, T.INT64, 3))


def test_join_no_match_is_libcudfs_sentinel():
    from asofgpu import plc as front

    assert front.JOIN_NO_MATCH == -(2**31) == ag.NO_MATCH


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        (
            lambda plc: (None, col(plc, plc.TypeId.INT64)),
            TypeError,
            "right_by must be a pylibcudf.Table .*got NoneType",
        ),
        (
            lambda plc: (plc.Table([]), np.arange(3)),
            TypeError,
            "right_on must be a pylibcudf.Column, got ndarray",
        ),
        (
            lambda plc: (plc.Table([col(plc, plc.TypeId.INT64, 2)]), col(plc, plc.TypeId.INT64, 3)),
            ValueError,
            "right_by has 2 rows, but right_on has 3; they must have the same length",
        ),
        (
            lambda plc: (plc.Table([]), col(plc, plc.TypeId.STRING)),
            TypeError,
            "right_on must be an integer, float, timestamp or duration column, got STRING",
        ),
        (
            lambda plc: (plc.Table([]), col(plc, plc.TypeId.BOOL8)),
            TypeError,
            "right_on must be an integer, float, timestamp or duration column, got BOOL8",
        ),
        (
            lambda plc: (plc.Table([]), col(plc, plc.TypeId.DECIMAL64, scale=-2)),
            TypeError,
            r"right_on must be .*, got DECIMAL64\(scale=-2\)",
        ),
        (
            lambda plc: (plc.Table([col(plc, plc.TypeId.STRUCT)]), col(plc, plc.TypeId.INT64)),
            TypeError,
            "right_by column 0 must be a flat column .*got STRUCT",
        ),
    ],
)
def test_prepare_argument_errors(plc, front, args, error, message):
    with pytest.raises(error, match=message):
        front.AsofJoin(*args(plc))


def test_nulls_equal_must_be_the_enum(plc, front):
    with pytest.raises(
        TypeError, match="nulls_equal must be a pylibcudf.types.NullEquality, got str"
    ):
        front.AsofJoin(plc.Table([]), col(plc, plc.TypeId.INT64), "equal")


def test_stream_must_be_a_stream(plc):
    import asofgpu.plc as front

    with pytest.raises(
        TypeError,
        match="stream must be an rmm Stream or have __cuda_stream__ "
        r"\(cupy, numba, cuda.core streams\), got object",
    ):
        front.AsofJoin(plc.Table([]), col(plc, plc.TypeId.INT64), stream=object())
    assert front._stream(None) is plc.utils.CUDF_DEFAULT_STREAM


def test_cupy_follows_the_callers_stream_without_a_deprecation(plc):
    """cupy 14 deprecates ExternalStream (a warning at every prepare and join): its
    Stream.from_external takes the caller's stream where cupy has it (issue 24, item 5)."""
    import warnings

    import cupy

    import asofgpu.plc as front

    class Foreign:  # a stream of another library, by the CUDA stream protocol
        def __cuda_stream__(self):
            return (0, 0)

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        stream = front._on_stream(Foreign())
    assert stream.ptr == 0 and isinstance(stream, cupy.cuda.Stream)


def test_valid_right_sides_reach_the_device(plc, monkeypatch):
    import asofgpu.plc as front

    def reached(self, *args):
        raise Reached

    monkeypatch.setattr(front.AsofJoin, "_prepare", reached)
    T = plc.TypeId
    for on in (
        T.INT8,
        T.UINT64,
        T.FLOAT32,
        T.TIMESTAMP_DAYS,
        T.TIMESTAMP_NANOSECONDS,
        T.DURATION_SECONDS,
    ):
        by = plc.Table([col(plc, T.STRING), col(plc, T.BOOL8), col(plc, T.DECIMAL128, scale=-3)])
        with pytest.raises(Reached):
            front.AsofJoin(by, col(plc, on), plc.types.NullEquality.EQUAL)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (
            dict(strategy="closest"),
            ValueError,
            "strategy must be one of 'backward', 'forward', 'nearest', got 'closest'",
        ),
        (dict(allow_exact_matches="yes"), TypeError, "allow_exact_matches must be True or False"),
        (dict(nearest_tie="middle"), ValueError, "nearest_tie must be one of"),
        (dict(tolerance=-1), ValueError, "tolerance must be non-negative, got -1"),
        (dict(tolerance="5s"), TypeError, "tolerance must be a non-negative number"),
        (
            dict(tolerance=datetime.timedelta(seconds=1)),
            TypeError,
            "tolerance: a timedelta needs a temporal key",
        ),
    ],
)
def test_join_option_errors(plc, prepared, kwargs, error, message):
    T = plc.TypeId
    with pytest.raises(error, match=message):
        prepared.join(plc.Table([col(plc, T.INT64, 2)]), col(plc, T.INT64, 2), **kwargs)


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        (
            lambda plc, T: ([col(plc, T.INT64)], col(plc, T.INT64)),
            TypeError,
            "left_by must be a pylibcudf.Table .*got list",
        ),
        (
            lambda plc, T: (plc.Table([col(plc, T.INT64)]), pa.array([1])),
            TypeError,
            "left_on must be a pylibcudf.Column, got Int64Array",
        ),
        (
            lambda plc, T: (plc.Table([]), col(plc, T.INT64)),
            ValueError,
            "left_by has 0 column.s., but right_by has 1; they must have the same number",
        ),
        (
            lambda plc, T: (plc.Table([col(plc, T.INT64, 4)]), col(plc, T.INT64, 2)),
            ValueError,
            "left_by has 4 rows, but left_on has 2",
        ),
        (
            lambda plc, T: (plc.Table([col(plc, T.STRING)]), col(plc, T.INT64)),
            TypeError,
            r"left_by column 0 \(STRING\) and right_by column 0 \(INT64\) cannot be compared: "
            r"by-columns must have the same type on both sides. Hint: cast one of them.",
        ),
        (
            lambda plc, T: (plc.Table([col(plc, T.INT32)]), col(plc, T.INT64)),
            TypeError,
            r"left_by column 0 \(INT32\) and right_by column 0 \(INT64\) cannot be compared",
        ),
        (
            lambda plc, T: (plc.Table([col(plc, T.INT64)]), col(plc, T.UINT64)),
            TypeError,
            r"left_on \(uint64\) and right_on \(int64\) cannot be compared: .*same signedness",
        ),
        (
            lambda plc, T: (plc.Table([col(plc, T.INT64)]), col(plc, T.TIMESTAMP_SECONDS)),
            TypeError,
            r"left_on \(timestamp\[s\]\) and right_on \(int64\) cannot be compared",
        ),
        (
            lambda plc, T: (plc.Table([col(plc, T.INT64)]), col(plc, T.STRING)),
            TypeError,
            "left_on must be an integer, float, timestamp or duration column, got STRING",
        ),
    ],
)
def test_join_argument_errors(plc, prepared, args, error, message):
    with pytest.raises(error, match=message):
        prepared.join(*args(plc, plc.TypeId))


def test_valid_joins_reach_the_device(plc, front):
    T = plc.TypeId
    j = front.AsofJoin(
        plc.Table([col(plc, T.FLOAT64, 2), col(plc, T.STRING, 2)]),
        col(plc, T.TIMESTAMP_MILLISECONDS, 2),
    )
    left_by = plc.Table([col(plc, T.FLOAT32, 5), col(plc, T.STRING, 5)])  # float widths may differ
    for on in (T.TIMESTAMP_NANOSECONDS, T.TIMESTAMP_SECONDS):
        with pytest.raises(Reached):
            j.join(
                left_by,
                col(plc, on, 5),
                "nearest",
                False,
                tolerance=np.timedelta64(5, "ms"),
                nearest_tie="backward",
            )


def test_gather_argument_errors(plc):
    from asofgpu.plc import gather

    T = plc.TypeId
    with pytest.raises(TypeError, match="table must be a pylibcudf.Table .*got Table"):
        gather(pa.table({"a": [1]}), col(plc, T.INT32))
    with pytest.raises(TypeError, match="gather_map must be a pylibcudf.Column, got ndarray"):
        gather(plc.Table([]), np.zeros(1, np.int32))
    with pytest.raises(TypeError, match="gather_map must be an INT32 column, got INT64"):
        gather(plc.Table([]), col(plc, T.INT64))


# --------------------------------------------------------------------------- on a GPU


def _device(arrow):
    import pylibcudf as plc

    return plc.Column.from_arrow(arrow)


def _map(column) -> np.ndarray:
    return np.asarray(column.to_arrow().to_pylist(), dtype=np.int64)


def _random_sides(rng, n_right, n_left, null_share=0.1):
    """Right and left sides as Arrow arrays: string and float by-keys with nulls, NaN and
    -0.0, int64 keys with nulls, in random order."""

    def strings(n):
        values = rng.choice(["AAPL", "MSFT", "", "GOOG", "Zé"], n).astype(object)
        values[rng.random(n) < null_share] = None
        return pa.array(values, pa.string())

    def floats(n):
        values = rng.choice([0.0, -0.0, 1.5, np.nan, np.inf], n)
        return pa.array(values, mask=rng.random(n) < null_share)

    def keys(n):
        return pa.array(rng.integers(-50, 50, n), mask=rng.random(n) < null_share)

    return (
        (strings(n_right), floats(n_right), keys(n_right)),
        (strings(n_left), floats(n_left), keys(n_left)),
    )


@pytest.mark.gpu
@needs_plc
@pytest.mark.parametrize("strategy", ["backward", "forward", "nearest"])
@pytest.mark.parametrize("exact", [True, False])
@pytest.mark.parametrize("nulls_equal", ["equal", "unequal"])
def test_device_map_equals_cpu_map(strategy, exact, nulls_equal):
    import pylibcudf as plc

    from asofgpu.plc import AsofJoin

    rng = np.random.default_rng(11)
    (rs, rf, ro), (ls, lf, lo) = _random_sides(rng, 5_000, 7_000)
    options = dict(strategy=strategy, allow_exact_matches=exact, tolerance=7)
    expected = ag.AsofJoin(ro, [rs, rf], null_equality=nulls_equal, device="cpu").join(
        lo, [ls, lf], **options
    )
    equality = getattr(plc.types.NullEquality, nulls_equal.upper())
    j = AsofJoin(plc.Table([_device(rs), _device(rf)]), _device(ro), equality)
    gmap = j.join(plc.Table([_device(ls), _device(lf)]), _device(lo), strategy, exact, tolerance=7)
    assert gmap.type().id() == plc.TypeId.INT32
    np.testing.assert_array_equal(_map(gmap), expected)


@pytest.mark.gpu
@needs_plc
def test_device_keys_of_other_types_and_widths():
    import pylibcudf as plc

    from asofgpu.plc import AsofJoin

    rng = np.random.default_rng(5)
    right_t = pa.array(rng.integers(0, 10**6, 2_000), pa.timestamp("ms"))
    left_t = pa.array(rng.integers(0, 10**9, 3_000), pa.timestamp("us"))
    right_g = pa.array(rng.random(2_000) < 0.5).cast(pa.float32())
    left_g = pa.array(rng.random(3_000) < 0.5).cast(pa.float64())
    tol = datetime.timedelta(milliseconds=300)
    expected = ag.AsofJoin(right_t, right_g, device="cpu").join(
        left_t, left_g, strategy="nearest", tolerance=tol
    )
    j = AsofJoin(plc.Table([_device(right_g)]), _device(right_t))
    got = j.join(plc.Table([_device(left_g)]), _device(left_t), "nearest", tolerance=tol)
    np.testing.assert_array_equal(_map(got), expected)


@pytest.mark.gpu
@needs_plc
def test_sliced_columns_read_from_their_offset():
    import pylibcudf as plc

    from asofgpu.plc import AsofJoin

    right = plc.Table.from_arrow(
        pa.table({"g": ["x", "y", "x", "y", "x", "y"], "t": pa.array([9, 1, 2, None, 5, 7])})
    )
    right = plc.copying.slice(right, [1, 6])[0]  # rows 1..5: offset 1
    g, t = right.columns()
    j = AsofJoin(plc.Table([g]), t)
    left_g = _device(pa.array(["x", "y", "y", None]))
    left_t = _device(pa.array([6, 6, 3, 6]))
    assert _map(j.join(plc.Table([left_g]), left_t)).tolist() == [3, 0, 0, ag.NO_MATCH]


@pytest.mark.gpu
@needs_plc
def test_empty_sides_and_no_by():
    import pylibcudf as plc

    from asofgpu.plc import AsofJoin

    empty = AsofJoin(
        plc.Table([_device(pa.array([], pa.string()))]), _device(pa.array([], pa.int64()))
    )
    got = empty.join(plc.Table([_device(pa.array(["a"]))]), _device(pa.array([1])))
    assert _map(got).tolist() == [ag.NO_MATCH]
    j = AsofJoin(plc.Table([]), _device(pa.array([1.0, np.nan, -0.0])))
    got = j.join(plc.Table([]), _device(pa.array([0.0, np.inf, np.nan, -1.0], pa.float32())))
    assert _map(got).tolist() == [2, 0, 1, ag.NO_MATCH]
    assert _map(j.join(plc.Table([]), _device(pa.array([], pa.float64())))).tolist() == []


@pytest.mark.gpu
@needs_plc
def test_a_join_on_another_stream_than_its_prepare_looks_groups_up_on_its_own():
    """The left by-keys are looked up on the join's stream, not the prepare's (issue 24, item
    1): two non-blocking streams, large sides, the map equals the cpu's."""
    import cupy
    import pylibcudf as plc
    from rmm.pylibrmm.stream import Stream

    from asofgpu.plc import AsofJoin

    rng = np.random.default_rng(12)
    (rs, rf, ro), (ls, lf, lo) = _random_sides(rng, 400_000, 600_000)
    expected = ag.AsofJoin(ro, [rs, rf], device="cpu").join(lo, [ls, lf])
    prepare_on = Stream(cupy.cuda.Stream(non_blocking=True))
    join_on = Stream(cupy.cuda.Stream(non_blocking=True))
    j = AsofJoin(plc.Table([_device(rs), _device(rf)]), _device(ro), stream=prepare_on)
    gmap = j.join(plc.Table([_device(ls), _device(lf)]), _device(lo), stream=join_on)
    np.testing.assert_array_equal(_map(gmap), expected)


@pytest.mark.gpu
@needs_plc
def test_gather_nullifies_no_match_and_streams_are_honoured():
    import pylibcudf as plc
    from rmm.pylibrmm.stream import Stream

    from asofgpu.plc import AsofJoin, gather

    stream = Stream()
    payload = plc.Table.from_arrow(pa.table({"bid": [1.0, 2.0, 3.0], "s": ["a", "b", None]}))
    j = AsofJoin(plc.Table([]), _device(pa.array([10, 20, 30])), stream=stream)
    gmap = j.join(plc.Table([]), _device(pa.array([25, 5, 30])), stream=stream)
    out = gather(payload, gmap, stream=stream).to_arrow()
    assert out.column(0).to_pylist() == [2.0, None, 3.0]
    assert out.column(1).to_pylist() == ["b", None, None]


@pytest.mark.gpu
@needs_plc
def test_docstring_examples_run_on_a_gpu():
    """The examples are marked +SKIP for hosts without a GPU; here they run."""
    import asofgpu.plc as front

    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in doctest.DocTestFinder().find(front):
        for example in test.examples:
            example.options.pop(doctest.SKIP, None)
        runner.run(test)
    assert runner.failures == 0
