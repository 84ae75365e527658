"""asofgpu.plc: the pylibcudf-style front end, and the primitive's GroupCodes hook it uses.

Without a GPU, pylibcudf imports and makes Column objects that hold no data (data=None):
enough to test every argument check, which all run before device memory is touched. The
``gpu`` tests compare the maps with the cpu primitive's on real device columns.
"""

from __future__ import annotations

import datetime
import doctest
import itertools
from importlib.util import find_spec

import numpy as np
import pyarrow as pa
import pytest

import asofgpu as ag
from asofgpu._backend import cudasim_enabled
from asofgpu.join import GroupCodes
from fakes import Reached

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


@pytest.mark.parametrize(
    ("codes", "n_groups", "error", "message"),
    [
        ([0, 2], 2, ValueError, r"GroupCodes.codes must lie in \[-1, n_groups=2\), got 2"),
        ([0, -2], 2, ValueError, r"GroupCodes.codes must lie in \[-1, n_groups=2\), got -2"),
        ([0], 0, ValueError, r"GroupCodes.codes must lie in \[-1, n_groups=0\), got 0"),
        ([0.0, 1.0], 2, TypeError, "GroupCodes.codes must be a 1-D integer array, got 1-D float64"),
        ([[0]], 1, TypeError, "GroupCodes.codes must be a 1-D integer array, got 2-D int64"),
        ([0], 1.0, TypeError, "GroupCodes.n_groups must be an int, got float"),
        ([0], True, TypeError, "GroupCodes.n_groups must be an int, got bool"),
        ([0], -1, ValueError, "GroupCodes.n_groups must be at least 0, got -1"),
    ],
)
def test_group_codes_out_of_range_are_refused_before_a_kernel_reads_them(
    codes, n_groups, error, message
):
    with pytest.raises(error, match=message):
        GroupCodes(np.array(codes), n_groups)


def test_left_group_codes_must_number_the_right_sides_groups():
    """Left codes are checked against their own n_groups: a larger one than the right's let
    codes past the right's groups reach the kernel, which read out of range."""
    j = ag.AsofJoin(np.array([1, 2, 3]), GroupCodes(np.array([0, 1, 0], np.int32), 2), device="cpu")
    with pytest.raises(
        ValueError,
        match="left_by's GroupCodes number 100 groups, right_by's 2: both sides must be "
        "numbered by the right's groups",
    ):
        j.join(np.array([2]), GroupCodes(np.array([99], np.int32), 100))


class _DeviceLike:
    """What ``is_device`` takes for a device array (cupy, numba's), over a numpy array."""

    def __init__(self, values):
        self.values = values

    @property
    def __cuda_array_interface__(self):
        data = (self.values.ctypes.data, False)
        return {
            "shape": self.values.shape,
            "typestr": self.values.dtype.str,
            "data": data,
            "version": 3,
        }

    def __len__(self):
        return len(self.values)


def test_device_group_codes_go_through_a_pickle_unchecked():
    """A pickled AsofJoin holds device codes as ``_OnDevice`` host copies: the range check
    took that wrapper for a 0-D array and refused it."""
    from asofgpu.join import _map_arrays, _OnDevice

    codes = GroupCodes(_DeviceLike(np.array([0, 1, 0], np.int32)), 2)
    state = _map_arrays({"_groups": codes}, lambda a: _OnDevice(a.values))
    assert state["_groups"].codes.host.tolist() == [0, 1, 0]
    back = _map_arrays(state, lambda a: _DeviceLike(a.host) if isinstance(a, _OnDevice) else a)
    assert back["_groups"].n_groups == 2


def test_group_codes_take_lists_and_empty_codes():
    assert GroupCodes([0, -1, 1], 2).codes.tolist() == [0, -1, 1]
    assert len(GroupCodes(np.zeros(0), 0).codes) == 0


def test_group_codes_and_keys_give_the_splice_maps_of_the_by_columns(device, small):
    """What asofgpu.plc.splice_join hands splice_maps: Keys as they are, and both sides' codes
    numbered by the right side (-1: a group the right side lacks), on every backend."""
    from asofgpu._columns import ordered_key
    from conftest import to_host

    def maps(*args, **kwargs):
        return [to_host(m).tolist() for m in ag.splice_maps(*args, **kwargs)]

    rng = np.random.default_rng(4)
    n_left, n_right = small // 2, small
    left_on = pa.array(rng.integers(0, 40, n_left), mask=rng.random(n_left) < 0.1)
    right_on = pa.array(rng.integers(0, 40, n_right), mask=rng.random(n_right) < 0.1)
    left_sym, right_sym = rng.integers(0, 9, n_left), rng.integers(0, 7, n_right)  # 7, 8: left only
    left_codes = GroupCodes(np.where(left_sym < 7, left_sym, -1).astype(np.int32), 7)
    right_codes = GroupCodes(right_sym.astype(np.int32), 7)
    host = device != "cuda" or cudasim_enabled()  # the simulator's arrays are numpy
    keys = ordered_key(left_on, "left_on", host), ordered_key(right_on, "right_on", host)
    for options in (dict(), dict(allow_exact_matches=False, tolerance=3)):
        expected = maps(left_on, right_on, left_sym, right_sym, device="cpu", **options)
        assert maps(*keys, left_codes, right_codes, device=device, **options) == expected
    # A right side without rows: no groups, every left code -1.
    empty = pa.array([], pa.int64())
    got = maps(
        keys[0],
        ordered_key(empty, "right_on", host),
        GroupCodes(np.full(n_left, -1, np.int32), 0),
        GroupCodes(np.zeros(0, np.int32), 0),
        device=device,
    )
    assert got == maps(left_on, empty, left_sym, np.zeros(0, np.int64), device="cpu")


# --------------------------------------------------------------------------- arguments, no GPU


@pytest.fixture
def plc():
    if find_spec("pylibcudf") is None:
        pytest.skip("pylibcudf is not installed (it lives in .venv-cudf)")
    import pylibcudf

    return pylibcudf


@pytest.fixture
def front(plc, device_steps_reached):
    """asofgpu.plc with its device steps replaced, since there may be no GPU here:
    preparation does nothing, and a join raises Reached where it would first touch the
    device (tests/fakes.py)."""
    return device_steps_reached


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


def test_valid_right_sides_reach_the_device(plc, front):
    """Every check passes: the preparation (which does nothing here) is all that is left."""
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
            "tolerance: a duration needs a temporal key",
        ),
        (
            dict(tolerance=np.ones(3)),
            ValueError,
            "tolerance has 3 rows, but left_on has 2; they must have the same length",
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
    tolerances = (np.timedelta64(5, "ms"), pa.array([5, None, 1, 2, 3], pa.duration("ms")))
    for on, tolerance in itertools.product(
        (T.TIMESTAMP_NANOSECONDS, T.TIMESTAMP_SECONDS), tolerances
    ):
        with pytest.raises(Reached):
            j.join(
                left_by,
                col(plc, on, 5),
                "nearest",
                False,
                tolerance=tolerance,
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


def _splice_args(plc, **changes):
    """Valid splice_join arguments (one INT64 by-column, INT64 keys; 2 left and 3 right
    rows), some replaced."""
    T = plc.TypeId
    args = dict(
        left_by=plc.Table([col(plc, T.INT64, 2)]),
        left_on=col(plc, T.INT64, 2),
        right_by=plc.Table([col(plc, T.INT64, 3)]),
        right_on=col(plc, T.INT64, 3),
    )
    return {**args, **changes}


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        (
            lambda plc, T: dict(left_by=[col(plc, T.INT64, 2)]),
            TypeError,
            "left_by must be a pylibcudf.Table .*got list",
        ),
        (
            lambda plc, T: dict(left_on=pa.array([1, 2])),
            TypeError,
            "left_on must be a pylibcudf.Column, got Int64Array",
        ),
        (
            lambda plc, T: dict(right_by=None),
            TypeError,
            "right_by must be a pylibcudf.Table .*got NoneType",
        ),
        (
            lambda plc, T: dict(right_on=np.arange(3)),
            TypeError,
            "right_on must be a pylibcudf.Column, got ndarray",
        ),
        (
            lambda plc, T: dict(left_by=plc.Table([])),
            ValueError,
            "left_by has 0 column.s., but right_by has 1; they must have the same number",
        ),
        (
            lambda plc, T: dict(left_by=plc.Table([col(plc, T.INT64, 4)])),
            ValueError,
            "left_by has 4 rows, but left_on has 2; they must have the same length",
        ),
        (
            lambda plc, T: dict(right_by=plc.Table([col(plc, T.INT64, 2)])),
            ValueError,
            "right_by has 2 rows, but right_on has 3; they must have the same length",
        ),
        (
            lambda plc, T: dict(left_by=plc.Table([col(plc, T.STRUCT, 2)])),
            TypeError,
            "left_by column 0 must be a flat column .*got STRUCT",
        ),
        (
            lambda plc, T: dict(right_by=plc.Table([col(plc, T.LIST, 3)])),
            TypeError,
            "right_by column 0 must be a flat column .*got LIST",
        ),
        (
            lambda plc, T: dict(left_by=plc.Table([col(plc, T.STRING, 2)])),
            TypeError,
            r"left_by column 0 \(STRING\) and right_by column 0 \(INT64\) cannot be compared: "
            r"by-columns must have the same type on both sides",
        ),
        (
            lambda plc, T: dict(left_on=col(plc, T.STRING, 2)),
            TypeError,
            "left_on must be an integer, float, timestamp or duration column, got STRING",
        ),
        (
            lambda plc, T: dict(right_on=col(plc, T.BOOL8, 3)),
            TypeError,
            "right_on must be an integer, float, timestamp or duration column, got BOOL8",
        ),
        (
            lambda plc, T: dict(left_on=col(plc, T.UINT64, 2)),
            TypeError,
            r"left_on \(uint64\) and right_on \(int64\) cannot be compared: .*same signedness",
        ),
        (
            lambda plc, T: dict(right_on=col(plc, T.TIMESTAMP_SECONDS, 3)),
            TypeError,
            r"left_on \(int64\) and right_on \(timestamp\[s\]\) cannot be compared",
        ),
        (
            lambda plc, T: dict(allow_exact_matches="yes"),
            TypeError,
            "allow_exact_matches must be True or False, got 'yes'",
        ),
        (lambda plc, T: dict(tolerance=-1), ValueError, "tolerance must be non-negative, got -1"),
        (lambda plc, T: dict(tolerance="5s"), TypeError, "tolerance must be a non-negative number"),
        (
            lambda plc, T: dict(tolerance=datetime.timedelta(seconds=1)),
            TypeError,
            "tolerance: a duration needs a temporal key",
        ),
        (
            lambda plc, T: dict(nulls_equal="equal"),
            TypeError,
            "nulls_equal must be a pylibcudf.types.NullEquality, got str",
        ),
        (
            lambda plc, T: dict(
                left_by=plc.Table([]),
                left_on=col(plc, T.INT64, 2**30),
                right_by=plc.Table([]),
                right_on=col(plc, T.INT64, 2**30),
            ),
            ValueError,
            r"the splice join of 1073741824 and 1073741824 rows has 2147483648 rows, more than "
            r"a pylibcudf column holds \(2147483647\)",
        ),
    ],
)
def test_splice_join_argument_errors(plc, front, changes, error, message):
    with pytest.raises(error, match=message):
        front.splice_join(**_splice_args(plc, **changes(plc, plc.TypeId)))


def test_splice_join_stream_must_be_a_stream(plc):
    import asofgpu.plc as front

    with pytest.raises(TypeError, match="stream must be an rmm Stream or have __cuda_stream__"):
        front.splice_join(**_splice_args(plc), stream=object())


def test_valid_splice_joins_reach_the_device(plc, front):
    T = plc.TypeId
    for changes in (
        dict(),
        dict(left_by=plc.Table([]), right_by=plc.Table([])),  # no by-keys
        dict(
            left_by=plc.Table([col(plc, T.FLOAT32, 2), col(plc, T.STRING, 2)]),  # float widths
            right_by=plc.Table([col(plc, T.FLOAT64, 3), col(plc, T.STRING, 3)]),  # may differ
            left_on=col(plc, T.TIMESTAMP_NANOSECONDS, 2),
            right_on=col(plc, T.TIMESTAMP_MILLISECONDS, 3),
            allow_exact_matches=False,
            tolerance=np.timedelta64(5, "ms"),
            nulls_equal=plc.types.NullEquality.EQUAL,
        ),
    ):
        with pytest.raises(Reached):
            front.splice_join(**_splice_args(plc, **changes))


def _range_args(plc, **changes):
    """Valid range_join arguments (one INT64 by-column, INT64 keys; 2 left and 3 right rows,
    a window of 5 below each left key), some replaced."""
    return {**_splice_args(plc), "before": 5, **changes}


# Errors of the left side and of the window's reach: the module's range_join and a prepared
# AsofJoin's (whose right side is _range_args' one) raise them alike.
_RANGE_LEFT_AND_REACH_ERRORS = [
    (
        lambda plc, T: dict(left_by=[col(plc, T.INT64, 2)]),
        TypeError,
        "left_by must be a pylibcudf.Table .*got list",
    ),
    (
        lambda plc, T: dict(left_on=pa.array([1, 2])),
        TypeError,
        "left_on must be a pylibcudf.Column, got Int64Array",
    ),
    (
        lambda plc, T: dict(left_by=plc.Table([])),
        ValueError,
        "left_by has 0 column.s., but right_by has 1; they must have the same number",
    ),
    (
        lambda plc, T: dict(left_by=plc.Table([col(plc, T.INT64, 4)])),
        ValueError,
        "left_by has 4 rows, but left_on has 2; they must have the same length",
    ),
    (
        lambda plc, T: dict(left_by=plc.Table([col(plc, T.STRUCT, 2)])),
        TypeError,
        "left_by column 0 must be a flat column .*got STRUCT",
    ),
    (
        lambda plc, T: dict(left_by=plc.Table([col(plc, T.STRING, 2)])),
        TypeError,
        r"left_by column 0 \(STRING\) and right_by column 0 \(INT64\) cannot be compared: "
        r"by-columns must have the same type on both sides",
    ),
    (
        lambda plc, T: dict(left_on=col(plc, T.STRING, 2)),
        TypeError,
        "left_on must be an integer, float, timestamp or duration column, got STRING",
    ),
    (
        lambda plc, T: dict(left_on=col(plc, T.UINT64, 2)),
        TypeError,
        r"left_on \(uint64\) and right_on \(int64\) cannot be compared: .*same signedness",
    ),
    (
        lambda plc, T: dict(left_on=col(plc, T.TIMESTAMP_SECONDS, 2)),
        TypeError,
        r"left_on \(timestamp\[s\]\) and right_on \(int64\) cannot be compared",
    ),
    (
        lambda plc, T: dict(before=None),
        TypeError,
        "before is required: how far from each left key the window reaches",
    ),
    (
        lambda plc, T: dict(after=None),
        TypeError,
        "after is required: how far from each left key the window reaches",
    ),
    (lambda plc, T: dict(before=-1), ValueError, "before must be non-negative, got -1"),
    (lambda plc, T: dict(after=-0.5), ValueError, "after must be non-negative, got -0.5"),
    (lambda plc, T: dict(before=float("nan")), ValueError, "before must be a non-negative .*NaN"),
    (lambda plc, T: dict(before="5s"), TypeError, "before must be a non-negative number"),
    (lambda plc, T: dict(after=True), TypeError, "after must be a non-negative number"),
    (
        lambda plc, T: dict(after=datetime.timedelta(seconds=1)),
        TypeError,
        "after: a duration needs a temporal key",
    ),
    (
        lambda plc, T: dict(prevailing="yes"),
        TypeError,
        "prevailing must be True or False, got 'yes'",
    ),
]


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        *_RANGE_LEFT_AND_REACH_ERRORS,
        (
            lambda plc, T: dict(right_by=None),
            TypeError,
            "right_by must be a pylibcudf.Table .*got NoneType",
        ),
        (
            lambda plc, T: dict(right_on=np.arange(3)),
            TypeError,
            "right_on must be a pylibcudf.Column, got ndarray",
        ),
        (
            lambda plc, T: dict(right_by=plc.Table([col(plc, T.INT64, 2)])),
            ValueError,
            "right_by has 2 rows, but right_on has 3; they must have the same length",
        ),
        (
            lambda plc, T: dict(right_by=plc.Table([col(plc, T.LIST, 3)])),
            TypeError,
            "right_by column 0 must be a flat column .*got LIST",
        ),
        (
            lambda plc, T: dict(right_on=col(plc, T.BOOL8, 3)),
            TypeError,
            "right_on must be an integer, float, timestamp or duration column, got BOOL8",
        ),
        (
            lambda plc, T: dict(right_on=col(plc, T.TIMESTAMP_SECONDS, 3)),
            TypeError,
            r"left_on \(int64\) and right_on \(timestamp\[s\]\) cannot be compared",
        ),
        (
            lambda plc, T: dict(nulls_equal="equal"),
            TypeError,
            "nulls_equal must be a pylibcudf.types.NullEquality, got str",
        ),
    ],
)
def test_range_join_argument_errors(plc, front, changes, error, message):
    with pytest.raises(error, match=message):
        front.range_join(**_range_args(plc, **changes(plc, plc.TypeId)))


@pytest.mark.parametrize(("changes", "error", "message"), _RANGE_LEFT_AND_REACH_ERRORS)
def test_prepared_range_join_argument_errors(plc, prepared, changes, error, message):
    args = _range_args(plc, **changes(plc, plc.TypeId))
    del args["right_by"], args["right_on"]
    with pytest.raises(error, match=message):
        prepared.range_join(**args)


def test_range_join_stream_must_be_a_stream(plc):
    import asofgpu.plc as front

    with pytest.raises(TypeError, match="stream must be an rmm Stream or have __cuda_stream__"):
        front.range_join(**_range_args(plc), stream=object())


def test_range_join_needs_before_and_takes_its_options_positionally(plc, front):
    T = plc.TypeId
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'before'"):
        front.range_join(plc.Table([]), col(plc, T.INT64), plc.Table([]), col(plc, T.INT64))
    with pytest.raises(Reached):  # before, after, prevailing: the positions of the signature
        front.range_join(
            plc.Table([]), col(plc, T.INT64), plc.Table([]), col(plc, T.INT64), 5, 2, True
        )
    with pytest.raises(TypeError, match="takes from 4 to 6 positional arguments"):
        front.AsofJoin(plc.Table([]), col(plc, T.INT64)).range_join(
            plc.Table([]), col(plc, T.INT64), 5, 2, True, object()
        )


def test_valid_range_joins_reach_the_device(plc, front):
    T = plc.TypeId
    for changes in (
        dict(),
        dict(left_by=plc.Table([]), right_by=plc.Table([])),  # no by-keys
        dict(before=0, after=float("inf"), prevailing=True),
        dict(before=2.5, after=np.int8(3)),
        dict(
            left_by=plc.Table([col(plc, T.FLOAT32, 2), col(plc, T.STRING, 2)]),  # float widths
            right_by=plc.Table([col(plc, T.FLOAT64, 3), col(plc, T.STRING, 3)]),  # may differ
            left_on=col(plc, T.TIMESTAMP_NANOSECONDS, 2),
            right_on=col(plc, T.TIMESTAMP_MILLISECONDS, 3),
            before=np.timedelta64(5, "ms"),
            after=datetime.timedelta(microseconds=1),
            prevailing=np.True_,
            nulls_equal=plc.types.NullEquality.EQUAL,
        ),
        dict(left_on=col(plc, T.FLOAT32, 2), right_on=col(plc, T.FLOAT64, 3), before=0.25),
    ):
        with pytest.raises(Reached):
            front.range_join(**_range_args(plc, **changes))
        args = _range_args(plc, **changes)
        prepared = front.AsofJoin(args.pop("right_by"), args.pop("right_on"))
        args.pop("nulls_equal", None)
        with pytest.raises(Reached):
            prepared.range_join(**args)


def test_range_join_maps_are_the_windows_pairs_as_int32(plc_columns_on_the_host):
    """What plc's range join makes of the primitive's windows, on the cpu backend (pylibcudf's
    Column and the device's synchronization stubbed: they need a GPU): ``Windows.pairs`` as
    INT32, and every left row once beside JOIN_NO_MATCH when the right side has no rows."""
    import asofgpu.plc as front

    rng = np.random.default_rng(16)
    right_on, left_on = rng.integers(0, 50, 300), rng.integers(-5, 55, 200)
    right_sym, left_sym = rng.integers(0, 7, 300), rng.integers(0, 9, 200)
    windows = ag.AsofJoin(right_on, right_sym, device="cpu").windows(
        left_on, left_sym, before=3, after=1, prevailing=True
    )
    got = front._pairs(windows, "the stream")
    assert plc_columns_on_the_host == ["the stream"] * 2
    assert [m.dtype for m in got] == [np.int32] * 2
    for g, e in zip(got, windows.pairs()):
        np.testing.assert_array_equal(g, e)
    for n_left in (3, 0):
        windows = ag.AsofJoin(np.zeros(0, np.int64), device="cpu").windows(
            np.arange(n_left), before=5
        )
        got = front._pairs(windows, None)
        assert [m.dtype for m in got] == [np.int32] * 2
        assert [m.tolist() for m in got] == [list(range(n_left)), [ag.NO_MATCH] * n_left]


def test_range_join_maps_that_would_not_fit_a_column_are_refused(pairs_reached):
    """The output's size is known only once the windows are found: checked before the maps
    are made (a left row with an empty window counts one row). ``Windows.pairs`` raises
    Reached (tests/fakes.py): a column's worth of rows (2**31 - 1) is too much to make here."""
    from asofgpu._backend import get_backend
    from asofgpu.plc import _MAX_ROWS, _pairs
    from asofgpu.window import Windows

    cpu = get_backend("cpu")
    rows = np.zeros(1, np.int32)

    def windows(ends):
        ends = np.asarray(ends, np.int64)
        return Windows(cpu, np.zeros(len(ends), np.int64), ends, rows, ag.NO_MATCH, 1)

    with pytest.raises(
        ValueError,
        match=r"the range join of 2 left rows has 2147483648 rows, more than a pylibcudf "
        r"column holds \(2147483647\)",
    ):
        _pairs(windows([_MAX_ROWS, 0]), None)
    with pytest.raises(Reached):  # exactly as many rows as a column holds
        _pairs(windows([_MAX_ROWS - 1, 0]), None)
    with pytest.raises(Reached):
        _pairs(windows([]), None)


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
@pytest.mark.parametrize("strategy", ["backward", "forward", "nearest"])
def test_device_map_with_a_column_of_tolerances_equals_cpu_map(strategy):
    import pylibcudf as plc

    from asofgpu.plc import AsofJoin

    rng = np.random.default_rng(12)
    (rs, rf, ro), (ls, lf, lo) = _random_sides(rng, 5_000, 7_000)
    tolerances = pa.array(rng.integers(0, 9, len(lo)), mask=rng.random(len(lo)) < 0.1)
    expected = ag.AsofJoin(ro, [rs, rf], device="cpu").join(
        lo, [ls, lf], strategy=strategy, tolerance=tolerances
    )
    j = AsofJoin(plc.Table([_device(rs), _device(rf)]), _device(ro))
    left_by = plc.Table([_device(ls), _device(lf)])
    for column in (tolerances, _device(tolerances)):
        gmap = j.join(left_by, _device(lo), strategy, tolerance=column)
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
    1): two non-blocking streams, large sides, the map equals the cpu's. Each stream is
    synchronized before another reads its results (libcudf's rule, issue 24, item 6)."""
    import cupy
    import pylibcudf as plc
    from rmm.pylibrmm.stream import Stream

    from asofgpu.plc import AsofJoin

    rng = np.random.default_rng(12)
    (rs, rf, ro), (ls, lf, lo) = _random_sides(rng, 400_000, 600_000)
    expected = ag.AsofJoin(ro, [rs, rf], device="cpu").join(lo, [ls, lf])
    right_by, right_on = plc.Table([_device(rs), _device(rf)]), _device(ro)
    left_by, left_on = plc.Table([_device(ls), _device(lf)]), _device(lo)
    plc.utils.CUDF_DEFAULT_STREAM.synchronize()  # the inputs, made there
    prepare_on = Stream(cupy.cuda.Stream(non_blocking=True))
    join_on = Stream(cupy.cuda.Stream(non_blocking=True))
    j = AsofJoin(right_by, right_on, stream=prepare_on)
    prepare_on.synchronize()
    gmap = j.join(left_by, left_on, stream=join_on)
    join_on.synchronize()
    np.testing.assert_array_equal(_map(gmap), expected)


@pytest.mark.gpu
@needs_plc
def test_results_are_complete_in_the_order_of_their_stream():
    """Nothing waits for the device (issue 24, item 6): a result is complete in its stream's
    order. Prepared on a non-blocking stream, synchronized once, then probed by joins, range
    joins and gathers on two other non-blocking streams in turn, nothing read before its
    stream is synchronized. Left keys of a finer unit than the right's make the prepared side
    keep its keys brought to that unit, from the first join on, for those on the other stream.
    """
    import cupy
    import pylibcudf as plc
    from rmm.pylibrmm.stream import Stream

    from asofgpu.plc import AsofJoin, gather, range_join

    rng = np.random.default_rng(16)
    (rs, rf, _), (ls, lf, _) = _random_sides(rng, 200_000, 300_000)
    ro = pa.array(rng.integers(0, 10**7, 200_000), pa.timestamp("ms"))
    lo = pa.array(rng.integers(0, 10**10, 300_000), pa.timestamp("us"))
    bid = pa.array(rng.random(200_000))
    expected = ag.AsofJoin(ro, [rs, rf], device="cpu").join(lo, [ls, lf], strategy="nearest")
    expected_pairs = _range_expected([ls, lf], lo, [rs, rf], ro, before=2_000)
    right_by, left_by = plc.Table([_device(rs), _device(rf)]), plc.Table([_device(ls), _device(lf)])
    right_on, left_on, payload = _device(ro), _device(lo), plc.Table([_device(bid)])
    plc.utils.CUDF_DEFAULT_STREAM.synchronize()  # the inputs, made there
    prepare_on = Stream(cupy.cuda.Stream(non_blocking=True))
    streams = [Stream(cupy.cuda.Stream(non_blocking=True)) for _ in range(2)]
    j = AsofJoin(right_by, right_on, stream=prepare_on)
    prepare_on.synchronize()
    maps, gathered, pairs = [], [], []
    for stream in streams * 2:
        maps.append(j.join(left_by, left_on, "nearest", stream=stream))
        gathered.append(gather(payload, maps[-1], stream=stream))
    for stream in streams:
        pairs.append(j.range_join(left_by, left_on, 2_000, stream=stream))
    pairs.append(range_join(left_by, left_on, right_by, right_on, 2_000, stream=streams[0]))
    for stream in streams:
        stream.synchronize()
    hit = expected >= 0
    bids = np.asarray(bid)[expected[hit]]
    for gmap, taken in zip(maps, gathered):
        np.testing.assert_array_equal(_map(gmap), expected)
        values = np.asarray(taken.columns()[0].to_arrow().to_pylist(), dtype=object)
        assert values[~hit].tolist() == [None] * int((~hit).sum())
        np.testing.assert_array_equal(values[hit].astype(float), bids)
    for found in pairs:
        for got, want in zip(found, expected_pairs):
            np.testing.assert_array_equal(_map(got), want)


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


def _splice_expected(left_by, left_on, right_by, right_on, **options):
    """The cpu primitive's splice maps of the same Arrow data, as numpy."""
    return [
        np.asarray(m)
        for m in ag.splice_maps(left_on, right_on, left_by, right_by, device="cpu", **options)
    ]


def _splice_got(left_by, left_on, right_by, right_on, *args, **kwargs):
    """asofgpu.plc.splice_join's maps of Arrow data (by-keys: lists of arrays), as numpy."""
    import pylibcudf as plc

    from asofgpu.plc import splice_join

    maps = splice_join(
        plc.Table([_device(c) for c in left_by]),
        _device(left_on),
        plc.Table([_device(c) for c in right_by]),
        _device(right_on),
        *args,
        **kwargs,
    )
    assert [m.type().id() for m in maps] == [plc.TypeId.INT32] * 2
    assert [m.size() for m in maps] == [len(left_on) + len(right_on)] * 2
    return [_map(m) for m in maps]


@pytest.mark.gpu
@needs_plc
@pytest.mark.parametrize("exact", [True, False])
@pytest.mark.parametrize("nulls_equal", ["equal", "unequal"])
@pytest.mark.parametrize("tolerance", [None, 7])
def test_device_splice_maps_equal_cpu_maps(exact, nulls_equal, tolerance):
    """Random sides in random order: string and float by-keys with nulls, NaN and -0.0, int64
    keys with nulls and many ties."""
    import pylibcudf as plc

    rng = np.random.default_rng(13)
    (rs, rf, ro), (ls, lf, lo) = _random_sides(rng, 5_000, 7_000)
    expected = _splice_expected(
        [ls, lf],
        lo,
        [rs, rf],
        ro,
        null_equality=nulls_equal,
        allow_exact_matches=exact,
        tolerance=tolerance,
    )
    equality = getattr(plc.types.NullEquality, nulls_equal.upper())
    got = _splice_got([ls, lf], lo, [rs, rf], ro, exact, tolerance=tolerance, nulls_equal=equality)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)


@pytest.mark.gpu
@needs_plc
def test_device_splice_of_other_key_types():
    """Timestamps of two units with a timedelta tolerance and float by-keys of two widths;
    float keys with NaN, -0.0 and nulls without by-keys."""
    rng = np.random.default_rng(6)
    right_t = pa.array(rng.integers(0, 10**6, 2_000), pa.timestamp("ms"))
    left_t = pa.array(rng.integers(0, 10**9, 3_000), pa.timestamp("us"))
    right_g = pa.array(rng.random(2_000) < 0.5).cast(pa.float32())
    left_g = pa.array(rng.random(3_000) < 0.5).cast(pa.float64())
    tol = datetime.timedelta(milliseconds=300)
    expected = _splice_expected([left_g], left_t, [right_g], right_t, tolerance=tol)
    got = _splice_got([left_g], left_t, [right_g], right_t, tolerance=tol)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)
    values = [1.5, -0.0, 0.0, np.nan, np.inf, -1.0]
    left_f = pa.array(rng.choice(values, 500), mask=rng.random(500) < 0.1)
    right_f = pa.array(rng.choice(values, 400), mask=rng.random(400) < 0.1).cast(pa.float32())
    expected = _splice_expected(None, left_f, None, right_f, allow_exact_matches=False)
    got = _splice_got([], left_f, [], right_f, False)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)


@pytest.mark.gpu
@needs_plc
def test_device_splice_of_empty_sides():
    """A side without rows: no groups on the right, every left row alone, and back."""
    full_by, full_on = pa.array(["a", "b", None]), pa.array([2, 1, 3])
    empty_by, empty_on = pa.array([], pa.string()), pa.array([], pa.int64())
    for left, right in (
        ((full_by, full_on), (empty_by, empty_on)),
        ((empty_by, empty_on), (full_by, full_on)),
        ((empty_by, empty_on), (empty_by, empty_on)),
    ):
        expected = _splice_expected([left[0]], left[1], [right[0]], right[1])
        got = _splice_got([left[0]], left[1], [right[0]], right[1])
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(g, e)
    got = _splice_got([full_by], full_on, [empty_by], empty_on)
    assert [m.tolist() for m in got] == [[1, 0, 2], [ag.NO_MATCH] * 3]


@pytest.mark.gpu
@needs_plc
def test_device_splice_questdb_example_gathered_on_a_stream():
    """QuestDB's example: buys at 0.039906 and 0.343909, both sells at 0.222534; every row of
    both sides once, each side gathered by its map (NULLIFY) on the caller's stream."""
    import pylibcudf as plc
    from rmm.pylibrmm.stream import Stream

    from asofgpu.plc import gather, splice_join

    stream = Stream()
    buys = plc.Table.from_arrow(pa.table({"ts": [0.039906, 0.343909], "buy": ["b1", "b2"]}))
    sells = plc.Table.from_arrow(pa.table({"ts": [0.222534, 0.222534], "sell": ["s1", "s2"]}))
    left_map, right_map = splice_join(
        plc.Table([]), buys.columns()[0], plc.Table([]), sells.columns()[0], stream=stream
    )
    assert _map(left_map).tolist() == [0, 0, 0, 1]
    assert _map(right_map).tolist() == [ag.NO_MATCH, 0, 1, 1]
    bought = gather(buys, left_map, stream=stream).to_arrow()
    sold = gather(sells, right_map, stream=stream).to_arrow()
    assert list(zip(bought.column(1).to_pylist(), sold.column(1).to_pylist())) == [
        ("b1", None),
        ("b1", "s1"),
        ("b1", "s2"),
        ("b2", "s2"),
    ]
    assert sold.column(0).to_pylist() == [None, 0.222534, 0.222534, 0.222534]


def _range_expected(left_by, left_on, right_by, right_on, null_equality="unequal", **reach):
    """The cpu primitive's range-join maps (``Windows.pairs``) of the same Arrow data."""
    prepared = ag.AsofJoin(right_on, right_by or None, null_equality=null_equality, device="cpu")
    return [np.asarray(m) for m in prepared.windows(left_on, left_by or None, **reach).pairs()]


def _range_got(left_by, left_on, right_by, right_on, *args, **kwargs):
    """asofgpu.plc.range_join's maps of Arrow data (by-keys: lists of arrays), as numpy; and
    the same maps from a prepared AsofJoin's range_join, checked equal."""
    import pylibcudf as plc

    from asofgpu.plc import AsofJoin, range_join

    left = plc.Table([_device(c) for c in left_by]), _device(left_on)
    right = plc.Table([_device(c) for c in right_by]), _device(right_on)
    maps = range_join(*left, *right, *args, **kwargs)
    assert [m.type().id() for m in maps] == [plc.TypeId.INT32] * 2
    assert maps[0].size() == maps[1].size()
    got = [_map(m) for m in maps]
    stream = kwargs.pop("stream", None)
    prepared = AsofJoin(*right, kwargs.pop("nulls_equal", None), stream=stream)
    again = prepared.range_join(*left, *args, **kwargs, stream=stream)
    for g, a in zip(got, again):
        np.testing.assert_array_equal(_map(a), g)
    return got


@pytest.mark.gpu
@needs_plc
@pytest.mark.parametrize("prevailing", [False, True])
@pytest.mark.parametrize("nulls_equal", ["equal", "unequal"])
@pytest.mark.parametrize(("before", "after"), [(0, 0), (7, 0), (3, 5), (2.5, float("inf"))])
def test_device_range_maps_equal_cpu_maps(prevailing, nulls_equal, before, after):
    """Random sides in random order: string and float by-keys with nulls, NaN and -0.0, int64
    keys with nulls and many ties (windows of many rows, and empty ones)."""
    import pylibcudf as plc

    rng = np.random.default_rng(14)
    (rs, rf, ro), (ls, lf, lo) = _random_sides(rng, 5_000, 7_000)
    reach = dict(before=before, after=after, prevailing=prevailing)
    expected = _range_expected([ls, lf], lo, [rs, rf], ro, null_equality=nulls_equal, **reach)
    equality = getattr(plc.types.NullEquality, nulls_equal.upper())
    got = _range_got([ls, lf], lo, [rs, rf], ro, nulls_equal=equality, **reach)
    assert len(expected[0]) > 7_000  # some windows hold several rows
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)


@pytest.mark.gpu
@needs_plc
def test_device_range_join_of_other_key_types():
    """Timestamps of two units with timedelta reaches and float by-keys of two widths; float
    keys with NaN, -0.0 and nulls without by-keys, positional options."""
    rng = np.random.default_rng(7)
    right_t = pa.array(rng.integers(0, 10**6, 2_000), pa.timestamp("ms"))
    left_t = pa.array(rng.integers(0, 10**9, 3_000), pa.timestamp("us"))
    right_g = pa.array(rng.random(2_000) < 0.5).cast(pa.float32())
    left_g = pa.array(rng.random(3_000) < 0.5).cast(pa.float64())
    reach = dict(before=datetime.timedelta(milliseconds=300), after=np.timedelta64(40_000, "us"))
    expected = _range_expected([left_g], left_t, [right_g], right_t, prevailing=True, **reach)
    got = _range_got([left_g], left_t, [right_g], right_t, prevailing=True, **reach)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)
    values = [1.5, -0.0, 0.0, np.nan, np.inf, -1.0]
    left_f = pa.array(rng.choice(values, 500), mask=rng.random(500) < 0.1)
    right_f = pa.array(rng.choice(values, 400), mask=rng.random(400) < 0.1).cast(pa.float32())
    expected = _range_expected(None, left_f, None, right_f, before=1.5, after=0, prevailing=True)
    got = _range_got([], left_f, [], right_f, 1.5, 0, True)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)


@pytest.mark.gpu
@needs_plc
def test_device_range_join_of_empty_sides():
    """A right side without rows: every left row once, beside JOIN_NO_MATCH; a left side
    without rows: empty maps."""
    full_by, full_on = pa.array(["a", "b", None]), pa.array([2, 1, 3])
    empty_by, empty_on = pa.array([], pa.string()), pa.array([], pa.int64())
    got = _range_got([full_by], full_on, [empty_by], empty_on, 5)
    assert [m.tolist() for m in got] == [[0, 1, 2], [ag.NO_MATCH] * 3]
    got = _range_got([], full_on, [], empty_on, 5, 5, True)  # without by-keys too
    assert [m.tolist() for m in got] == [[0, 1, 2], [ag.NO_MATCH] * 3]
    for right_by, right_on in ((full_by, full_on), (empty_by, empty_on)):
        expected = _range_expected([empty_by], empty_on, [right_by], right_on, before=5)
        got = _range_got([empty_by], empty_on, [right_by], right_on, 5)
        assert [m.tolist() for m in got] == [m.tolist() for m in expected] == [[], []]


@pytest.mark.gpu
@needs_plc
def test_device_range_join_gathered_on_a_stream_from_sliced_columns():
    """Quotes of two symbols, sliced (offset 1), and three trades: each trade once per quote
    of its symbol within [t - 2, t + 1], a trade of an absent symbol or a null key once with
    nulls; both sides gathered by their maps (NULLIFY) on the caller's stream."""
    import pylibcudf as plc
    from rmm.pylibrmm.stream import Stream

    from asofgpu.plc import gather, range_join

    stream = Stream()
    quotes = plc.Table.from_arrow(
        pa.table(
            {
                "sym": ["x", "A", "A", "B", "A", "B", "A"],
                "t": pa.array([0, 1, 3, 4, 5, None, 6]),
                "bid": [0.0, 1.0, 3.0, 4.0, 5.0, 9.0, 6.0],
            }
        )
    )
    quotes = plc.copying.slice(quotes, [1, 7])[0]  # rows 1..6: offset 1
    q_sym, q_t, _ = quotes.columns()
    trades = plc.Table.from_arrow(
        pa.table({"sym": ["A", "C", "B", "A"], "t": pa.array([5, 5, 4, None]), "id": [1, 2, 3, 4]})
    )
    t_sym, t_t, _ = trades.columns()
    left_map, right_map = range_join(
        plc.Table([t_sym]), t_t, plc.Table([q_sym]), q_t, 2, 1, stream=stream
    )
    assert _map(left_map).tolist() == [0, 0, 0, 1, 2, 3]
    assert _map(right_map).tolist() == [1, 3, 5, ag.NO_MATCH, 2, ag.NO_MATCH]
    traded = gather(trades, left_map, stream=stream).to_arrow()
    quoted = gather(quotes, right_map, stream=stream).to_arrow()
    assert list(zip(traded.column(2).to_pylist(), quoted.column(2).to_pylist())) == [
        (1, 3.0),
        (1, 5.0),
        (1, 6.0),
        (2, None),
        (3, 4.0),
        (4, None),
    ]
    # prevailing: trade A at 5 also takes quote A at 1 (below 5 - 2), the state entering it.
    maps = range_join(plc.Table([t_sym]), t_t, plc.Table([q_sym]), q_t, 2, 1, True, stream=stream)
    assert [_map(m).tolist() for m in maps] == [
        [0, 0, 0, 0, 1, 2, 3],
        [0, 1, 3, 5, ag.NO_MATCH, 2, ag.NO_MATCH],
    ]


@pytest.mark.gpu
@needs_plc
def test_a_range_join_on_another_stream_than_its_prepare():
    """A prepared right side probed on another non-blocking stream, large sides: the maps
    equal the cpu's (the left by-keys are looked up on the range join's stream). Each stream
    is synchronized before another reads its results (libcudf's rule)."""
    import cupy
    import pylibcudf as plc
    from rmm.pylibrmm.stream import Stream

    from asofgpu.plc import AsofJoin

    rng = np.random.default_rng(15)
    (rs, rf, _), (ls, lf, _) = _random_sides(rng, 400_000, 600_000)
    # Keys over a wide range: windows of a few rows (about 1.6 million pairs in all).
    ro = pa.array(rng.integers(0, 10**7, 400_000), mask=rng.random(400_000) < 0.1)
    lo = pa.array(rng.integers(0, 10**7, 600_000), mask=rng.random(600_000) < 0.1)
    expected = _range_expected([ls, lf], lo, [rs, rf], ro, before=2_000)
    assert 10**6 < len(expected[0]) < 5 * 10**6
    right_by, right_on = plc.Table([_device(rs), _device(rf)]), _device(ro)
    left_by, left_on = plc.Table([_device(ls), _device(lf)]), _device(lo)
    plc.utils.CUDF_DEFAULT_STREAM.synchronize()  # the inputs, made there
    prepare_on = Stream(cupy.cuda.Stream(non_blocking=True))
    join_on = Stream(cupy.cuda.Stream(non_blocking=True))
    j = AsofJoin(right_by, right_on, stream=prepare_on)
    prepare_on.synchronize()
    maps = j.range_join(left_by, left_on, 2_000, stream=join_on)
    join_on.synchronize()
    for g, e in zip(maps, expected):
        np.testing.assert_array_equal(_map(g), e)


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
