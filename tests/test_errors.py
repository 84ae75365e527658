"""Every user-facing error of asofgpu: its exception type and its message.

The API's rule: errors are raised on the host before device work, with built-in exception
types, the parameter named, expected vs got, and a ``Hint:`` where a standard fix exists.
Each ``msg = ...; raise X(msg)`` in ``asofgpu/*.py`` has a test here, and so do inputs that
once leaked a pyarrow error instead of naming the parameter.
"""

from __future__ import annotations

import datetime as dt
import decimal
import importlib.util
import math
import os
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import asofgpu as ag
from asofgpu import AmbiguousMatchError, AsofJoin, asof_join
from asofgpu._backend import cuda_usable, cudasim_enabled

L1 = np.array([1, 2, 3])
R1 = np.array([0, 2, 4])


def cpu_join(left_on=L1, right_on=R1, left_by=None, right_by=None, **kwargs):
    kwargs.setdefault("device", "cpu")
    return asof_join(left_on, right_on, left_by, right_by, **kwargs)


# ----------------------------------------------------------------------------- options


@pytest.mark.parametrize("value", ["closest", "BACKWARD", "", None, 1, "asof"])
def test_bad_strategy(value):
    msg = f"strategy must be one of 'backward', 'forward', 'nearest', got {value!r}"
    with pytest.raises(ValueError, match=re.escape(msg)):
        cpu_join(strategy=value)
    with pytest.raises(ValueError, match=re.escape(msg)):
        AsofJoin(R1, device="cpu").join(L1, strategy=value)


def test_strategy_enum_and_strings_accepted():
    for value in (ag.Strategy.FORWARD, "forward"):
        assert cpu_join(strategy=value).tolist() == [1, 1, 2]


@pytest.mark.parametrize("value", [1, 0, "yes", None, "True", 1.0])
def test_bad_allow_exact_matches(value):
    msg = f"allow_exact_matches must be True or False, got {value!r}"
    with pytest.raises(TypeError, match=re.escape(msg)):
        cpu_join(allow_exact_matches=value)


def test_numpy_bool_allowed_for_flags():
    assert cpu_join(allow_exact_matches=np.bool_(False)).tolist() == [0, 0, 1]
    assert cpu_join(presorted=np.bool_(True)).tolist() == [0, 1, 1]


@pytest.mark.parametrize("value", ["left", "nearest", None, True, "FORWARD"])
def test_bad_nearest_tie(value):
    msg = f"nearest_tie must be one of 'forward', 'backward', got {value!r}"
    with pytest.raises(ValueError, match=re.escape(msg)):
        cpu_join(strategy="nearest", nearest_tie=value)
    # checked whatever the strategy
    with pytest.raises(ValueError, match=re.escape(msg)):
        cpu_join(nearest_tie=value)


@pytest.mark.parametrize("value", ["error", "ignore", None, False])
def test_bad_ambiguous(value):
    msg = f"ambiguous must be one of 'pick', 'raise', got {value!r}"
    with pytest.raises(ValueError, match=re.escape(msg)):
        cpu_join(ambiguous=value)


@pytest.mark.parametrize("value", ["EQUAL", "equal_nulls", True, None])
def test_bad_null_equality(value):
    msg = f"null_equality must be one of 'unequal', 'equal', got {value!r}"
    with pytest.raises(ValueError, match=re.escape(msg)):
        cpu_join(null_equality=value)
    with pytest.raises(ValueError, match=re.escape(msg)):
        AsofJoin(R1, null_equality=value, device="cpu")


@pytest.mark.parametrize("value", [1, "yes", None, "True"])
def test_bad_presorted(value):
    msg = f"presorted must be True or False, got {value!r}"
    with pytest.raises(TypeError, match=re.escape(msg)):
        cpu_join(presorted=value)
    with pytest.raises(TypeError, match=re.escape(msg)):
        AsofJoin(R1, presorted=value, device="cpu")


# "gpu" gets an id of its own: conftest skips tests whose keywords hold "gpu"
@pytest.mark.parametrize("value", [pytest.param("gpu", id="str-gpu"), "CPU", None, 0, "cuda:0"])
def test_bad_device(value):
    msg = f"device must be one of 'auto', 'cpu', 'cuda', 'python', got {value!r}"
    with pytest.raises(ValueError, match=re.escape(msg)):
        asof_join(L1, R1, device=value)
    with pytest.raises(ValueError, match=re.escape(msg)):
        AsofJoin(R1, device=value)
    with pytest.raises(ValueError, match=re.escape(msg)):
        ag.splice_maps(L1, R1, device=value)


def test_an_array_as_device_is_refused_by_name():
    """Checked before it is compared with "auto" (numpy's truth value error named nothing)."""
    with pytest.raises(ValueError, match=r"device must be one of 'auto', .*got array"):
        asof_join(L1, R1, device=np.array(["cpu", "cpu"]))
    with pytest.raises(ValueError, match=r"device must be one of 'auto', .*got array"):
        ag.splice_maps(L1, R1, device=np.array(["cpu", "cpu"]))


@pytest.mark.skipif(
    cudasim_enabled() or cuda_usable(), reason="a GPU or the CUDA simulator is available here"
)
def test_cuda_without_gpu():
    msg = (
        "device='cuda' needs an NVIDIA GPU with cupy and numba-cuda installed, and none is "
        "usable here. Hint: pip install 'asofgpu[cuda12]' (or cuda13), or use device='cpu'."
    )
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        asof_join(L1, R1, device="cuda")
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        AsofJoin(R1, device="cuda")


NUMPY_WITHOUT_ROW_STACK = """
import numpy, sys, warnings
del numpy.row_stack  # as numpy 2.5 removed it
import asofgpu as ag
from asofgpu import _backend
if sys.argv[1] == "present":  # a stand-in for a GPU that cupy and numba-cuda see
    _backend.gpu_present = _backend.cuda.gpu_present = lambda: True
try:
    ag.AsofJoin(numpy.arange(5), device="cuda")
except RuntimeError as error:
    print(error)
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    print(ag.AsofJoin(numpy.arange(5)).join(numpy.array([2, 7])).tolist())
print(" | ".join(str(w.message) for w in seen) or "none")
"""

_BLOCKED = (
    r"numba-cuda \S+ cannot compile kernels under numpy \S+ \(module 'numpy' has no "
    r"attribute 'row_stack'; numpy 2\.5 removed it and numba-cuda will not follow: "
    r"NVIDIA/numba-cuda#907\)\. Hint: pip install 'numpy<2\.5' \(asofgpu's cuda extras ask "
    r"for it\)\."
)


@pytest.mark.skipif(
    not hasattr(np, "row_stack") or importlib.util.find_spec("numba_cuda") is None,
    reason="needs numba-cuda, and a numpy with row_stack to take away",
)
# (not "gpu": conftest skips tests whose keywords hold it, for want of a real one)
@pytest.mark.parametrize("device", ["present", "absent"])
def test_cuda_under_a_numpy_numba_cuda_cannot_compile_for_says_so(device):
    # numba-cuda 0.30.4 (the last) loads an overload of numpy.row_stack at its first compile,
    # and numpy 2.5 removed it: every kernel launch failed on a lent H200 with numpy 2.5.2.
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    done = subprocess.run(
        [sys.executable, "-c", NUMPY_WITHOUT_ROW_STACK, device],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    message, answer, warned = done.stdout.strip().splitlines()
    assert answer == "[2, 4]"  # device="auto" runs on the cpu
    if device == "absent":  # no GPU is the first thing to say
        assert message.startswith("device='cuda' needs an NVIDIA GPU"), message
        assert warned == "none"
        return
    assert re.fullmatch(f"device='cuda' cannot run here: {_BLOCKED}", message), message
    assert re.fullmatch(f"asofgpu runs on the cpu: {_BLOCKED}", warned), warned


def test_unknown_keyword():
    with pytest.raises(TypeError, match="unexpected keyword argument 'direction'"):
        cpu_join(direction="forward")


# ----------------------------------------------------------------------------- tolerance


@pytest.mark.parametrize("value", [-1, -0.5, -math.inf, np.int8(-3), np.float32(-1e-6)])
def test_negative_tolerance(value):
    with pytest.raises(ValueError, match=re.escape(f"tolerance must be non-negative, got {value}")):
        cpu_join(tolerance=value)


@pytest.mark.parametrize(
    "value",
    [
        dt.timedelta(microseconds=-1),
        dt.timedelta(days=-1),
        np.timedelta64(-1, "ns"),
        np.timedelta64(-2, "D"),
    ],
)
@pytest.mark.parametrize("unit", ["s", "ns"])
def test_negative_timedelta_tolerance(value, unit):
    key = pa.array([1, 2], pa.timestamp(unit))
    msg = f"tolerance must be non-negative, got {value}"
    with pytest.raises(ValueError, match=re.escape(msg)):
        cpu_join(key, key, tolerance=value)


@pytest.mark.parametrize("value", [math.nan, np.float64("nan"), np.float32("nan")])
def test_nan_tolerance(value):
    with pytest.raises(
        ValueError, match=re.escape("tolerance must be a non-negative number, got NaN")
    ):
        cpu_join(tolerance=value)
    with pytest.raises(ValueError, match="got NaN"):
        cpu_join(L1.astype(float), R1.astype(float), tolerance=value)


@pytest.mark.parametrize(
    "value",
    [np.array(1), 1j, decimal.Decimal(1), pd.NaT, np.datetime64(1, "s"), object(), {"a": 1}, {1}],
)
def test_wrong_type_tolerance(value):
    """(A list is taken for a column of tolerances, and refused as columns are; a string for
    a duration, fixed or calendar: tests/test_row_tolerance.py. A dict or a set has a length
    but no row order: no column.)"""
    msg = (
        f"tolerance must be a non-negative number, datetime.timedelta or numpy.timedelta64, "
        f"got {type(value).__name__}"
    )
    with pytest.raises(TypeError, match=re.escape(msg)):
        cpu_join(tolerance=value)


@pytest.mark.parametrize("value", [True, False, np.bool_(True)])
def test_bool_tolerance(value):
    msg = (
        f"tolerance must be a non-negative number, datetime.timedelta or numpy.timedelta64, "
        f"got {type(value).__name__}"
    )
    with pytest.raises(TypeError, match=re.escape(msg)):
        cpu_join(tolerance=value)


@pytest.mark.parametrize(
    ("keys", "name"),
    [
        (np.array([1, 2]), "int64"),
        (np.array([1.0, 2.0]), "double"),
        (np.array([1, 2], np.uint8), "uint8"),
        (np.array([1, 2], np.float32), "float"),
    ],
)
@pytest.mark.parametrize(
    "value", [dt.timedelta(seconds=1), np.timedelta64(1, "s"), pd.Timedelta(1, "s")]
)
def test_timedelta_tolerance_on_non_temporal_key(keys, name, value):
    msg = (
        f"tolerance: a duration needs a temporal key (date, time, timestamp or duration), "
        f"the key is {name}. Hint: pass a number in the key's unit."
    )
    with pytest.raises(TypeError, match=re.escape(msg)):
        cpu_join(keys, keys, tolerance=value)


def test_nat_tolerance():
    key = pa.array([1, 2], pa.timestamp("s"))
    with pytest.raises(ValueError, match=re.escape("tolerance must be a duration, got NaT")):
        cpu_join(key, key, tolerance=np.timedelta64("NaT"))
    with pytest.raises(ValueError, match=re.escape("tolerance must be a duration, got NaT")):
        cpu_join(key, key, tolerance=np.timedelta64("NaT", "ns"))


@pytest.mark.parametrize("unit", ["Y", "M", "ps", "fs", "as", "generic"])
def test_unsupported_timedelta64_unit(unit):
    key = pa.array([1, 2], pa.timestamp("s"))
    value = np.timedelta64(1) if unit == "generic" else np.timedelta64(1, unit)
    with pytest.raises(
        ValueError, match=re.escape(f"tolerance: numpy.timedelta64 unit {unit!r} is not supported")
    ):
        cpu_join(key, key, tolerance=value)


def test_huge_timedelta64_tolerance_is_not_called_negative():
    key = pa.array([0, 10**9], pa.timestamp("s"))
    try:
        got = cpu_join(key, key, tolerance=np.timedelta64(10**15, "W"))
    except OverflowError as exc:  # refusing it is fine, if the message says why
        assert "tolerance" in str(exc)
    else:  # like datetime.timedelta.max: a tolerance beyond every distance
        assert got.tolist() == [0, 1]


# ----------------------------------------------------------------------------- on keys


@pytest.mark.parametrize(
    ("left", "right", "lname", "rname", "hint"),
    [
        (
            np.array([1.0]),
            np.array([1]),
            "double",
            "int64",
            " Hint: cast both to integers or both to floats.",
        ),
        (
            np.array([1]),
            np.array([1.0], np.float32),
            "int64",
            "float",
            " Hint: cast both to integers or both to floats.",
        ),
        (
            np.array([1], np.uint8),
            np.array([1]),
            "uint8",
            "int64",
            " Hint: cast both to the same signedness.",
        ),
        (
            np.array([1]),
            np.array([1], np.uint64),
            "int64",
            "uint64",
            " Hint: cast both to the same signedness.",
        ),
        (
            pa.array([1], pa.timestamp("s", "UTC")),
            pa.array([1], pa.timestamp("s", "Europe/Paris")),
            "timestamp[s, tz=UTC]",
            "timestamp[s, tz=Europe/Paris]",
            " Hint: convert both to the same timezone.",
        ),
        (
            pa.array([1], pa.timestamp("ns")),
            pa.array([1], pa.timestamp("ms", "UTC")),
            "timestamp[ns]",
            "timestamp[ms, tz=UTC]",
            " Hint: convert both to the same timezone.",
        ),
        (
            pa.array([1], pa.date32()),
            pa.array([1], pa.timestamp("s")),
            "date32[day]",
            "timestamp[s]",
            " Hint: cast the dates to timestamps (numpy's datetime64[D] is read as dates).",
        ),
        (
            np.array([1], "datetime64[s]"),
            np.array([1], "datetime64[D]"),
            "timestamp[s]",
            "date32[day]",
            " Hint: cast the dates to timestamps (numpy's datetime64[D] is read as dates).",
        ),
        (
            pa.array([1], pa.duration("s")),
            pa.array([1], pa.time32("s")),
            "duration[s]",
            "time32[s]",
            "",
        ),
        (pa.array([1], pa.timestamp("s")), np.array([1]), "timestamp[s]", "int64", ""),
        (
            np.array([1], np.uint8),
            np.array([1.0], np.float32),
            "uint8",
            "float",
            " Hint: cast both to integers or both to floats.",
        ),
    ],
)
def test_on_key_type_mismatch(left, right, lname, rname, hint):
    msg = (
        f"left_on ({lname}) and right_on ({rname}) cannot be compared: the as-of key must "
        f"have the same type family on both sides.{hint}"
    )
    with pytest.raises(TypeError, match=re.escape(msg) + "$"):
        cpu_join(left, right)
    with pytest.raises(TypeError, match=re.escape(msg) + "$"):
        AsofJoin(right, device="cpu").join(left)


UNSUPPORTED_ON = {  # a column of n rows, and its type as the message shows it (None: unchecked)
    "string": (lambda n: np.array(["a"] * n), "string"),
    "bool": (lambda n: np.array([True] * n), "bool"),
    "large_string": (lambda n: pa.array(["a"] * n, pa.large_string()), "large_string"),
    "decimal": (lambda n: pa.array([1] * n, pa.decimal128(5, 0)), "decimal128(5, 0)"),
    "null": (lambda n: pa.nulls(n), "null"),
    "struct": (lambda n: pa.array([{"a": 1}] * n), "struct<a: int64>"),
    "list": (lambda n: pa.array([[1]] * n), "list<item: int64>"),
    "dictionary": (
        lambda n: pa.array([1] * n).dictionary_encode(),
        "dictionary<values=int64, indices=int32, ordered=0>",
    ),
    "pandas category": (lambda n: pd.Series(["a"] * n).astype("category"), None),
}


@pytest.mark.parametrize("kind", list(UNSUPPORTED_ON))
@pytest.mark.parametrize("param", ["left_on", "right_on", "tie_break"])
def test_unsupported_on_types(kind, param):
    make, name = UNSUPPORTED_ON[kind]
    msg = f"{param} must be an integer, float, date, time, timestamp or duration column, got "
    pattern = re.escape(msg) + (re.escape(name) + "$" if name else "dictionary<")
    with pytest.raises(TypeError, match=pattern):
        if param == "left_on":
            AsofJoin(R1, device="cpu").join(make(3))
        elif param == "right_on":
            asof_join(L1, make(3), device="cpu")
        else:
            asof_join(L1, R1, tie_break=make(3), device="cpu")


@pytest.mark.parametrize("param", ["left_on", "right_on", "tie_break"])
@pytest.mark.parametrize("value", [[1, 2, 3], 5, "abc", {"a": [1]}, (1, 2, 3)])
def test_on_not_a_column(param, value):
    args = {"left_on": L1, "right_on": R1}
    kwargs = {}
    if param == "tie_break":
        kwargs["tie_break"] = value
    else:
        args[param] = value
    msg = (
        f"{param} must be a column (numpy, cupy or pyarrow array, pandas, polars or cuDF "
        f"Series), got {type(value).__name__}"
    )
    with pytest.raises(TypeError, match=re.escape(msg)):
        asof_join(args["left_on"], args["right_on"], device="cpu", **kwargs)


@pytest.mark.parametrize("param", ["left_on", "right_on", "left_by", "right_by", "tie_break"])
@pytest.mark.parametrize("shape", [(3, 2), (1, 3), ()])
def test_not_one_dimensional(param, shape):
    bad = np.zeros(shape, dtype=np.int64) if shape else np.array(3)
    kwargs = {
        "left_on": L1,
        "right_on": R1,
        "left_by": np.array(["a"] * 3),
        "right_by": np.array(["a"] * 3),
    }
    if param == "tie_break":
        kwargs["tie_break"] = bad
    else:
        kwargs[param] = bad
    name = {"left_by": "left_by[0]", "right_by": "right_by[0]"}.get(param, param)
    msg = f"{name} must be one-dimensional, got an array of shape {bad.shape}"
    with pytest.raises(ValueError, match=re.escape(msg)):
        asof_join(device="cpu", **kwargs)


@pytest.mark.parametrize(
    "dtype", ["datetime64[m]", "datetime64[h]", "timedelta64[m]", "timedelta64[D]"]
)
def test_numpy_coarse_time_units_are_read_exactly(dtype):
    """Minutes, hours and days have a fixed length: they are read as whole seconds."""
    seconds = "datetime64[s]" if dtype[0] == "d" else "timedelta64[s]"
    right = np.array([0, 59 * 60, 3 * 86_400], seconds)
    left = np.array([0, 1, 2], dtype)
    expected = [
        int(np.searchsorted(right.astype(np.int64), v, "right")) - 1
        for v in left.astype(seconds).astype(np.int64)
    ]
    assert AsofJoin(right, device="cpu").join(left).tolist() == expected


@pytest.mark.parametrize("dtype", ["datetime64[M]", "datetime64[Y]", "timedelta64[M]"])
def test_numpy_time_units_without_fixed_length_are_refused(dtype):
    msg = f"left_on must use a fixed time unit (W, D, h, m, s, ms, us or ns), got {dtype}"
    with pytest.raises(TypeError, match=re.escape(msg)):
        AsofJoin(np.array([1], "datetime64[s]"), device="cpu").join(np.array([1, 2], dtype))


@pytest.mark.parametrize("param", ["left_on", "left_by"])
def test_mixed_object_column_names_the_parameter(param):
    mixed = pd.Series(["a", 1, 2.5], dtype=object)
    kwargs = {"left_on": L1, "left_by": pd.Series(["a", "b", "c"])}
    kwargs[param] = mixed
    name = "left_by[0]" if param == "left_by" else param
    with pytest.raises(TypeError, match=re.escape(name)):
        asof_join(
            kwargs["left_on"], R1, kwargs["left_by"], pd.Series(["a", "b", "c"]), device="cpu"
        )


@pytest.mark.parametrize(
    ("coarse", "fine", "coarse_param"),
    [("left", "right", "left_on"), ("right", "left", "right_on")],
)
@pytest.mark.parametrize("value", [10**11, -(10**11), 2**62])
def test_overflow_when_rescaling_units(coarse, fine, coarse_param, value):
    sides = {
        coarse: pa.array([0, value], pa.timestamp("s")),
        fine: pa.array([0, 1], pa.timestamp("ns")),
    }
    msg = (
        f"{coarse_param} (timestamp[s]) holds values that overflow int64 when converted to "
        f"the other side's finer unit. Hint: cast both keys to the coarser unit."
    )
    with pytest.raises(OverflowError, match=re.escape(msg)):
        cpu_join(sides["left"], sides["right"])


def test_overflow_when_rescaling_a_prepared_right_side():
    joiner = AsofJoin(pa.array([0, 10**11], pa.timestamp("s")), device="cpu")
    assert joiner.join(pa.array([5], pa.timestamp("s"))).tolist() == [0]
    with pytest.raises(
        OverflowError, match=re.escape("right_on (timestamp[s]) holds values that overflow int64")
    ):
        joiner.join(pa.array([5], pa.timestamp("ns")))
    # also for durations, and not for a value that just fits
    with pytest.raises(OverflowError, match=re.escape("left_on (duration[ms])")):
        cpu_join(
            pa.array([2**63 // 10**6 + 1], pa.duration("ms")), pa.array([0], pa.duration("ns"))
        )
    ok = cpu_join(pa.array([2**63 // 10**6], pa.duration("ms")), pa.array([0], pa.duration("ns")))
    assert ok.tolist() == [0]


# ----------------------------------------------------------------------------- by columns


@pytest.mark.parametrize(
    ("left", "right", "lname", "rname"),
    [
        (pa.array(["a"]), pa.array([1]), "string", "int64"),
        (pa.array([1], pa.int32()), pa.array([1], pa.int64()), "int32", "int64"),
        (pa.array([1]), pa.array([1], pa.uint64()), "int64", "uint64"),
        (pa.array([1]), pa.array([1.0]), "int64", "double"),
        (pa.array([b"a"]), pa.array(["a"]), "binary", "string"),
        (
            pa.array([1], pa.timestamp("s", "UTC")),
            pa.array([1], pa.timestamp("s")),
            "timestamp[s, tz=UTC]",
            "timestamp[s]",
        ),
        (
            pa.array([1], pa.timestamp("ms")),
            pa.array([1], pa.timestamp("s")),
            "timestamp[ms]",
            "timestamp[s]",
        ),
        (pa.array([True]), pa.array([1], pa.int8()), "bool", "int8"),
        (
            pa.array([1]).dictionary_encode(),
            pa.array(["a"]),
            "dictionary<values=int64, indices=int32, ordered=0>",
            "string",
        ),
        (
            pa.array(["a"]),
            pa.array([1]).dictionary_encode(),
            "string",
            "dictionary<values=int64, indices=int32, ordered=0>",
        ),
    ],
)
def test_by_type_mismatch(left, right, lname, rname):
    msg = (
        f"left_by[0] ({lname}) and right_by[0] ({rname}) cannot be compared: by-columns must "
        f"have the same type on both sides. Hint: cast one of them."
    )
    with pytest.raises(TypeError, match=re.escape(msg)):
        asof_join(np.array([1]), np.array([1]), left, right, device="cpu")


def test_by_type_mismatch_in_a_later_column():
    msg = "left_by[1] (string) and right_by[1] (int64) cannot be compared"
    with pytest.raises(TypeError, match=re.escape(msg)):
        asof_join(
            np.array([1]),
            np.array([1]),
            [pa.array(["a"]), pa.array(["x"])],
            [pa.array(["a"]), pa.array([1])],
            device="cpu",
        )


@pytest.mark.parametrize(
    ("column", "name"),
    [
        (pa.array([[1]]), "list<item: int64>"),
        (pa.array([{"a": 1}]), "struct<a: int64>"),
        (pa.array([[("k", 1)]], pa.map_(pa.string(), pa.int64())), "map<string, int64>"),
        (pa.array([[1]], pa.large_list(pa.int8())), "large_list<item: int8>"),
    ],
)
@pytest.mark.parametrize("side", ["left", "right"])
def test_nested_by_types(column, name, side):
    ok = pa.array([1])
    left, right = (column, ok) if side == "left" else (ok, column)
    msg = f"{side}_by[0] must be a flat column (numbers, strings, temporal, bool), got {name}"
    with pytest.raises(TypeError, match=re.escape(msg)):
        asof_join(np.array([1]), np.array([1]), left, right, device="cpu")


@pytest.mark.parametrize("side", ["left", "right"])
def test_extension_by_types_are_refused_with_their_storage_named(side):
    """An extension type's equality is its own (bool8's 1 and 2 are both true): the right
    side's went to Arrow's dictionary_encode, which has no kernel for them."""
    flag = pa.ExtensionArray.from_storage(pa.bool8(), pa.array([1], pa.int8()))
    left, right = (flag, pa.array([True])) if side == "left" else (pa.array([True]), flag)
    msg = (
        f"{side}_by[0] must be a flat column (numbers, strings, temporal, bool), got "
        f"extension<arrow.bool8>. Hint: pass its storage (int8) if its bits are its value"
    )
    with pytest.raises(TypeError, match=re.escape(msg)):
        asof_join(np.array([1]), np.array([1]), left, right, device="cpu")


@pytest.mark.parametrize(("n_left", "n_right"), [(1, 2), (2, 1), (3, 2), (2, 3)])
def test_wrong_number_of_by_columns(n_left, n_right):
    left = [pa.array(["a"])] * n_left
    right = [pa.array(["a"])] * n_right
    msg = f"left_by must have {n_right} column(s) to match right_by, got {n_left}"
    with pytest.raises(ValueError, match=re.escape(msg)):
        asof_join(np.array([1]), np.array([1]), left, right, device="cpu")
    # a table counts its columns
    table = pa.table({f"c{i}": ["a"] for i in range(n_left)})
    with pytest.raises(ValueError, match=re.escape(msg)):
        AsofJoin(np.array([1]), right, device="cpu").join(np.array([1]), table)


def test_left_by_without_right_by():
    msg = "left_by was given but the right side has no right_by; pass both or neither"
    with pytest.raises(ValueError, match=re.escape(msg)):
        asof_join(L1, R1, np.array(["a"] * 3), None, device="cpu")
    with pytest.raises(ValueError, match=re.escape(msg)):
        AsofJoin(R1, device="cpu").join(L1, [np.array(["a"] * 3)])


def test_right_by_without_left_by():
    msg = "left_by is required: the right side was prepared with right_by"
    with pytest.raises(ValueError, match=re.escape(msg)):
        asof_join(L1, R1, None, np.array(["a"] * 3), device="cpu")
    with pytest.raises(ValueError, match=re.escape(msg)):
        AsofJoin(R1, np.array(["a"] * 3), device="cpu").join(L1)


@pytest.mark.parametrize("empty", [[], ()])
def test_empty_by_sequence(empty):
    kind = type(empty).__name__
    with pytest.raises(
        ValueError, match=re.escape(f"right_by must hold at least one column, got an empty {kind}")
    ):
        asof_join(L1, R1, None, empty, device="cpu")
    with pytest.raises(
        ValueError, match=re.escape(f"left_by must hold at least one column, got an empty {kind}")
    ):
        asof_join(L1, R1, empty, [np.array(["a"] * 3)], device="cpu")


@pytest.mark.parametrize("value", ["a", 5, {"a": [1, 2, 3]}, [1, 2, 3]])
def test_by_not_a_column(value):
    # a list is a list of columns: its first element is reported
    got = value[0] if isinstance(value, list) else value
    msg = (
        f"right_by[0] must be a column (numpy, cupy or pyarrow array, pandas, polars or cuDF "
        f"Series), got {type(got).__name__}"
    )
    with pytest.raises(TypeError, match=re.escape(msg)):
        asof_join(L1, R1, value, value, device="cpu")


# ----------------------------------------------------------------------------- lengths


def test_length_mismatches():
    with pytest.raises(
        ValueError,
        match=re.escape(
            "right_by[0] has 2 rows, but right_on has 3; they must have the same length"
        ),
    ):
        asof_join(L1, R1, np.array(["a"] * 3), np.array(["a"] * 2), device="cpu")
    with pytest.raises(
        ValueError,
        match=re.escape(
            "right_by[1] has 4 rows, but right_on has 3; they must have the same length"
        ),
    ):
        asof_join(
            L1,
            R1,
            [np.array(["a"] * 3)] * 2,
            [np.array(["a"] * 3), np.array([1] * 4)],
            device="cpu",
        )
    with pytest.raises(
        ValueError,
        match=re.escape("left_by[0] has 5 rows, but left_on has 3; they must have the same length"),
    ):
        asof_join(L1, R1, np.array(["a"] * 5), np.array(["a"] * 3), device="cpu")
    with pytest.raises(
        ValueError,
        match=re.escape("tie_break has 2 rows, but right_on has 3; they must have the same length"),
    ):
        asof_join(L1, R1, tie_break=np.array([1, 2]), device="cpu")
    with pytest.raises(ValueError, match=re.escape("left_by[0] has 0 rows, but left_on has 3")):
        asof_join(L1, R1, pa.chunked_array([], pa.string()), np.array(["a"] * 3), device="cpu")


# ----------------------------------------------------------------------------- presorted


def test_presorted_on_unsorted_data_without_by():
    msg = (
        "presorted=True but the right side is not sorted by right_on (row 2 is out of "
        "order). Hint: pass presorted=False to let AsofJoin sort it."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        asof_join(L1, np.array([1, 3, 2]), presorted=True, device="cpu")
    with pytest.raises(ValueError, match=re.escape(msg)):
        AsofJoin(np.array([1, 3, 2]), presorted=True, device="cpu")
    # null keys are skipped; the row number is the caller's; no right_by is blamed
    with pytest.raises(
        ValueError, match=re.escape("not sorted by right_on (row 3 is out of order)")
    ):
        asof_join(L1, pa.array([1, None, 5, 4]), presorted=True, device="cpu")
    # NaN sorts last: NaN before a number is out of order
    with pytest.raises(ValueError, match=re.escape("(row 1 is out of order)")):
        asof_join(L1.astype(float), np.array([math.nan, 1.0]), presorted=True, device="cpu")


def test_presorted_on_unsorted_data_with_by():
    msg = (
        "presorted=True but the right side is not grouped by right_by and sorted by right_on "
        "(row 2 is out of order). Hint: pass presorted=False to let AsofJoin sort it."
    )
    # groups interleaved
    with pytest.raises(ValueError, match=re.escape(msg)):
        asof_join(
            L1,
            np.array([1, 2, 3]),
            np.array(["a"] * 3),
            np.array(["a", "b", "a"]),
            presorted=True,
            device="cpu",
        )
    # keys descending inside a group
    with pytest.raises(ValueError, match=re.escape(msg)):
        asof_join(
            L1,
            np.array([5, 9, 1, 0]),
            np.array(["a"] * 3),
            np.array(["a", "b", "b", "c"]),
            presorted=True,
            device="cpu",
        )


@pytest.mark.parametrize(
    "broken", ["groups split", "groups interleave", "a key descends", "a null key inside"]
)
def test_presorted_past_the_one_pass_checks_size_still_names_the_row(broken):
    """40,000 right rows, past the radix sort's 32,768: where the one-pass checks
    (``AsofJoin._in_group_order``) run, an order they refuse goes to the full check, which
    names the row. Groups that interleave, each of its keys in order, pass the keys' check
    and fail the codes'."""
    n = 40_000
    symbols = np.repeat(np.array(["a", "b", "c", "d"]), n // 4)
    times = np.tile(np.arange(n // 4), 4)
    row = 25_000
    if broken == "groups split":
        symbols[row] = "a"  # an "a" among the "c"s: a group seen before
    elif broken == "groups interleave":
        symbols, times, row = np.where(np.arange(n) % 2, "b", "a"), np.arange(n), 2
    elif broken == "a key descends":
        times[row] = times[row - 1] - 1
    times = pa.array(times, mask=np.arange(n) == row) if broken == "a null key inside" else times
    call = dict(presorted=True, device="cpu")
    if broken == "a null key inside":  # skipped: its group's order holds around it
        # c's times run 0.. from row 20,000: the null's own time matches the row before it
        got = AsofJoin(times, symbols, **call).join(np.array([row - 20_000]), np.array(["c"]))
        assert got.tolist() == [row - 1]
        return
    msg = f"grouped by right_by and sorted by right_on (row {row} is out of order)"
    with pytest.raises(ValueError, match=re.escape(msg)):
        AsofJoin(times, symbols, **call)


# ----------------------------------------------------------------------------- ambiguity


def test_ambiguous_match_error():
    assert issubclass(AmbiguousMatchError, ValueError)
    msg = (
        "ambiguous='raise': left row 1 (and 1 more) matched a key that has several right rows "
        "in its group. Hint: pass tie_break= to pick one, or ambiguous='pick' to take the "
        "last (backward) or first (forward) row."
    )
    with pytest.raises(AmbiguousMatchError, match=re.escape(msg)):
        asof_join(np.array([0, 2, 3]), np.array([1, 1, 2, 2]), ambiguous="raise", device="cpu")
    with pytest.raises(ValueError, match=re.escape("ambiguous='raise': left row 0 (and 0 more)")):
        AsofJoin(np.array([1, 1]), device="cpu").join(np.array([1]), ambiguous="raise")


# ----------------------------------------------------------------------------- gather


def test_gather_errors():
    table = pa.table({"x": [1, 2]})
    with pytest.raises(
        IndexError, match=re.escape("gmap[2] = 2 is not a row of right_table (2 rows) nor NO_MATCH")
    ):
        ag.gather(table, np.array([0, 1, 2], np.int32))
    with pytest.raises(
        IndexError,
        match=re.escape("gmap[0] = -5 is not a row of right_table (2 rows) nor NO_MATCH"),
    ):
        ag.gather(table, np.array([-5], np.int64))
    for huge in (  # past int64: Arrow's cast raised ArrowInvalid, naming no parameter
        pa.array([1, None, 2**64 - 1], pa.uint64()),
        pa.chunked_array([pa.array([1, None], pa.uint64()), pa.array([2**64 - 1], pa.uint64())]),
        np.array([1, 0, 2**64 - 1], np.uint64),
    ):
        with pytest.raises(
            IndexError,
            match=re.escape(
                "gmap[2] = 18446744073709551615 is not a row of right_table (2 rows) nor NO_MATCH"
            ),
        ):
            ag.gather(table, huge)
    assert ag.gather(table, pa.array([1, None], pa.uint64())).column("x").to_pylist() == [2, None]
    with pytest.raises(
        TypeError,
        match=re.escape("gmap must be a one-dimensional integer array, got float64 of shape (2,)"),
    ):
        ag.gather(table, np.array([0.0, 1.0]))
    with pytest.raises(
        TypeError,
        match=re.escape("gmap must be a one-dimensional integer array, got int32 of shape (1, 2)"),
    ):
        ag.gather(table, np.array([[0, 1]], np.int32))
    with pytest.raises(
        TypeError,
        match=re.escape("gmap must be a one-dimensional integer array, got bool of shape (2,)"),
    ):
        ag.gather(table, np.array([True, False]))
    for bad, name in ((5, "int"), (pa.array([1]), "pyarrow.Int64Array"), ("table", "str")):
        with pytest.raises(
            TypeError,
            match=re.escape(
                f"right_table must be a table (pyarrow Table, polars or pandas DataFrame, or "
                f"anything with __arrow_c_stream__), got {name}"
            ),
        ):
            ag.gather(bad, np.array([0], np.int32))
    # A frame Arrow cannot read is named as one, with Arrow's reason (which column, which
    # type): it was "must be a table, got DataFrame".
    pd = pytest.importorskip("pandas")
    pl = pytest.importorskip("polars")
    for frame, reason in (
        (pd.DataFrame({"m": ["a", 1.5]}), "Conversion failed for column m"),
        (pl.DataFrame({"x": pl.Series([1, 2], dtype=pl.Int128)}), "_pli128"),
    ):
        with pytest.raises(
            TypeError, match=r"right_table: its DataFrame cannot be read as Arrow: .*" + reason
        ):
            ag.gather(frame, np.array([0], np.int32))
        with pytest.raises(TypeError, match=r"left: its DataFrame cannot be read as Arrow"):
            ag.join_asof(frame, pa.table({"t": [1]}), on="t", device="cpu")


def test_gather_map_with_nulls():
    table = pa.table({"x": [1, 2]})
    try:
        out = ag.gather(table, pa.array([1, None], pa.int32()))
    except (TypeError, ValueError) as exc:
        assert "gmap" in str(exc)
    else:  # or a null entry reads as NO_MATCH
        assert out.column("x").to_pylist() == [2, None]


# ----------------------------------------------------------------------------- front ends


def test_join_asof_table_errors():
    """The table front end's own messages (tests/test_table.py covers the key arguments)."""
    left = pa.table({"t": [1], "g": ["a"]})
    with pytest.raises(
        TypeError,
        match=re.escape(
            "right must be a table (pyarrow Table, polars or pandas DataFrame, or anything with "
            "__arrow_c_stream__), got list"
        ),
    ):
        ag.join_asof(left, [1], on="t", device="cpu")
    with pytest.raises(
        KeyError, match=re.escape("right table has no column 't'; its columns are ['s']")
    ):
        ag.join_asof(left, pa.table({"s": [1]}), on="t", device="cpu")
    with pytest.raises(TypeError, match=re.escape("right_on must be one column name, got ['t']")):
        ag.join_asof(left, left, left_on="t", right_on=["t"], device="cpu")
    with pytest.raises(
        TypeError,
        match=re.escape("by_left must be a column name or a non-empty sequence of names, got [1]"),
    ):
        ag.join_asof(left, left, on="t", by_left=[1], by_right=["g"], device="cpu")
    # the primitive's errors come through unchanged
    with pytest.raises(ValueError, match="strategy must be one of"):
        ag.join_asof(left, left, on="t", strategy="up", device="cpu")


def test_join_asof_by_not_a_name():
    left = pa.table({"t": [1], "g": ["a"]})
    with pytest.raises(
        TypeError,
        match=re.escape("by must be a column name or a non-empty sequence of names, got 5"),
    ):
        ag.join_asof(left, left, on="t", by=5, device="cpu")


def test_marketdata_errors():
    from asofgpu import marketdata

    msg = "n_symbols must be positive and n_quotes, n_trades non-negative"
    for args in ((10, 10, 0), (-1, 10, 5), (10, -1, 5)):
        with pytest.raises(ValueError, match=re.escape(msg)):
            marketdata.day(*args)
    msg = "n_symbols must be below 2**31, got 2,147,483,648"
    with pytest.raises(ValueError, match=re.escape(msg)):
        marketdata.day(10, 20, 2**31)  # (refused before a name is built for each)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["demo", "--quotes", "x"], "argument --quotes: expected a whole number, got 'x'"),
        (["demo", "--trades", "0"], "argument --trades: expected a positive number, got 0"),
        (["demo", "--symbols", "-3"], "argument --symbols: expected a positive number, got -3"),
    ],
)
def test_cli_argument_errors(argv, message, capsys):
    from asofgpu import cli

    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


# ----------------------------------------------------------------------------- device arrays


@pytest.mark.gpu
def test_device_key_errors():
    cupy = pytest.importorskip("cupy")
    right = cupy.asarray(np.array([0, 2, 4]))
    with pytest.raises(
        ValueError, match=re.escape("left_on must be one-dimensional, got an array of shape (3, 2)")
    ):
        asof_join(cupy.zeros((3, 2), dtype=cupy.int64), right, device="cuda")
    with pytest.raises(
        TypeError,
        match=re.escape(
            "right_on must be an integer, float, datetime64 or timedelta64 array, got bool"
        ),
    ):
        asof_join(
            cupy.asarray(np.array([1, 2])), cupy.asarray(np.array([True, False])), device="cuda"
        )
    with pytest.raises(
        TypeError,
        match=re.escape(
            "left_on must be an integer, float, datetime64 or timedelta64 array, got complex128"
        ),
    ):
        asof_join(cupy.asarray(np.array([1j])), right, device="cuda")
