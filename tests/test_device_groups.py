"""Group keys encoded where they arrive on the device (``_device_groups``): the sort-based
encoding, run here on numpy, must group rows exactly as the host's hash-based ``Groups`` does;
on a GPU, AsofJoin keeps cupy by-keys on the device and joins as the CPU does."""

from __future__ import annotations

import pickle

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asofgpu._backend import get_backend
from asofgpu._device_groups import SortedGroups, device_columns, on_device
from asofgpu._encode import Groups

PYTHON = get_backend("python")
FLOATS = [0.0, -0.0, 1.5, -2.0, np.nan, np.inf, -np.inf, 7.25]


def _column(draw, kind: str, n: int) -> np.ndarray:
    if kind == "int":
        return np.array(draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n)), np.int64)
    if kind == "float":
        return np.array(draw(st.lists(st.sampled_from(FLOATS), min_size=n, max_size=n)), np.float64)
    if kind == "bool":
        return np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), np.bool_)
    days = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    return np.array(days, "datetime64[D]").astype("datetime64[ns]")


@st.composite
def sides(draw):
    kinds = draw(
        st.lists(st.sampled_from(["int", "float", "bool", "time"]), min_size=1, max_size=3)
    )
    n_right, n_left = draw(st.integers(1, 30)), draw(st.integers(0, 30))
    return ([_column(draw, k, n_right) for k in kinds], [_column(draw, k, n_left) for k in kinds])


def _host(columns):
    return [pa.chunked_array([pa.array(c)]) for c in columns]


def _there(backend, columns):
    """numpy columns as ``backend``'s arrays (cupy's on a GPU, which refuses numpy's, and
    holds no datetimes: those as their int64 ticks, their dtypes given beside them, as
    ``AsofJoin`` passes device columns)."""
    return [backend.xp.asarray(c.view(np.int64) if c.dtype.kind in "mM" else c) for c in columns]


def _dtypes(columns):
    return [c.dtype for c in columns]


def test_sorted_groups_group_as_the_host_does(device):
    """Right rows share a code exactly when the host gives them one; a left row finds the
    group the host finds (or none). -0.0 is 0.0, NaN is NaN, across columns of any type."""
    backend = get_backend(device)

    @settings(max_examples=20 if device == "cuda" else 200, deadline=None)
    @given(sides())
    def check(data):
        right, left = data
        params = [f"right_by[{i}]" for i in range(len(right))]
        lparams = [f"left_by[{i}]" for i in range(len(left))]
        ours = SortedGroups(_there(backend, right), params, backend, _dtypes(right))
        host = Groups(_host(right), params, null_equal=False)
        mapping = dict(zip(ours.right_codes.tolist(), host.right_codes.tolist()))
        assert len(mapping) == ours.n_groups == host.n_groups == len(set(mapping.values()))
        assert [mapping[c] for c in ours.right_codes.tolist()] == host.right_codes.tolist()
        found = ours.lookup(_there(backend, left), lparams, _dtypes(left))
        assert found.dtype == np.int32
        expected = host.lookup(_host(left), lparams).tolist()
        assert [mapping.get(c, -1) for c in found.tolist()] == expected

    check()


INTEGERS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool"]


@pytest.mark.parametrize("dtype", INTEGERS)
def test_integers_of_every_width_are_found_as_they_are(device, dtype):
    """The lookup reads integers and bools without an int64 copy (the kernel widens them):
    every width finds its group, the extremes too (uint64's top half wraps, on both sides)."""
    info = np.iinfo(dtype) if dtype != "bool" else None
    values = [0, 1] if info is None else [info.min, info.min + 1, 0, 7, info.max - 1, info.max]
    right = np.array(values[::2], dtype)
    left = np.array(values + values[::-1], dtype)
    backend = get_backend(device)
    groups = SortedGroups(_there(backend, [right]), ["right_by[0]"], backend)
    host = Groups(_host([right]), ["right_by[0]"], null_equal=False)
    mapping = dict(zip(groups.right_codes.tolist(), host.right_codes.tolist()))
    found = groups.lookup(_there(backend, [left]), ["left_by[0]"])
    assert found.dtype == np.int32
    expected = host.lookup(_host([left]), ["left_by[0]"]).tolist()
    assert [mapping.get(c, -1) for c in found.tolist()] == expected
    assert sum(c >= 0 for c in found.tolist()) == sum(v in set(values[::2]) for v in left.tolist())


def test_no_right_rows_leave_every_left_row_without_a_group(device):
    backend = get_backend(device)
    groups = SortedGroups(_there(backend, [np.array([], np.int64)]), ["right_by[0]"], backend)
    assert groups.n_groups == 0
    assert groups.lookup(_there(backend, [np.array([1, 2])]), ["left_by[0]"]).tolist() == [-1, -1]


def test_columns_of_two_kinds_and_widths():
    right = [np.array([1, 1, 2, 2], np.int32), np.array([0.5, 0.5, 0.5, 1.0], np.float32)]
    groups = SortedGroups(right, ["right_by[0]", "right_by[1]"], PYTHON)
    assert groups.n_groups == 3
    assert groups.right_codes[0] == groups.right_codes[1] != groups.right_codes[2]
    left = [np.array([2, 1, 3], np.int32), np.array([1.0, 0.5, 0.5])]  # float64: fine
    codes = groups.lookup(left, ["left_by[0]", "left_by[1]"]).tolist()
    assert codes == [groups.right_codes[3], groups.right_codes[0], -1]


def test_types_that_do_not_compare_are_refused_as_on_the_host():
    groups = SortedGroups([np.array([1, 2], np.int64)], ["right_by[0]"], PYTHON)
    with pytest.raises(
        TypeError,
        match=r"left_by\[0\] \(int32\) and right_by\[0\] \(int64\) "
        r"cannot be compared: by-columns must have the same "
        r"type on both sides. Hint: cast one of them.",
    ):
        groups.lookup([np.array([1], np.int32)], ["left_by[0]"])
    with pytest.raises(
        ValueError,
        match=r"left_by must have 1 column\(s\) to match right_by, "
        r"got 2",
    ):
        groups.lookup([np.array([1]), np.array([2])], ["left_by[0]", "left_by[1]"])


def test_pickled_with_its_arrays():
    groups = SortedGroups([np.array([3, 1, 3])], ["right_by[0]"], get_backend("cpu"))
    back = pickle.loads(pickle.dumps(groups))
    assert back.backend.name == "cpu" and back.xp is np
    assert back.right_codes.tolist() == groups.right_codes.tolist()
    assert back.lookup([np.array([1, 3, 2])], ["left_by[0]"]).tolist() == [0, 1, -1]


def test_host_columns_reach_a_device_encoding_only_when_they_can():
    assert device_columns([np.array([1, 2])]) is None  # on the host: the host encodes them
    array, dtype = on_device(np.array([1, 2], np.int16), "left_by[0]", np)
    assert dtype == np.int16 and array.tolist() == [1, 2]
    array, dtype = on_device(pa.array([1.5, 2.0]), "left_by[0]", np)
    assert dtype == np.float64
    # temporal ones as their ticks (cupy holds no datetimes), their dtype beside them
    for kind in (pa.timestamp("ns"), pa.duration("ms")):
        array, dtype = on_device(pa.array([5, 7], kind), "left_by[0]", np)
        assert array.dtype == np.int64 and array.tolist() == [5, 7]
        assert dtype == kind.to_pandas_dtype()
    with pytest.raises(
        TypeError,
        match=r"left_by\[0\] must be a device array or a column of "
        r"numbers, bools or naive timestamps without nulls, as "
        r"right_by was encoded on the device; got string",
    ):
        on_device(pa.array(["a"]), "left_by[0]", np)
    with pytest.raises(TypeError, match=r"; got int64 with nulls"):
        on_device(pa.array([1, None]), "left_by[0]", np)


@pytest.mark.gpu
def test_cupy_by_keys_stay_on_the_device_and_join_as_on_the_cpu():
    cupy = pytest.importorskip("cupy")
    from asofgpu import AsofJoin

    rng = np.random.default_rng(0)
    n = 100_000
    right_t, left_t = np.sort(rng.integers(0, 10**6, n)), rng.integers(0, 10**6, n)
    right_g = [rng.integers(0, 50, n), rng.choice(FLOATS, n)]
    left_g = [rng.integers(0, 60, n), rng.choice(FLOATS, n)]
    on_gpu = AsofJoin(cupy.asarray(right_t), [cupy.asarray(g) for g in right_g], device="cuda")
    assert isinstance(on_gpu._groups, SortedGroups)
    got = on_gpu.join(cupy.asarray(left_t), [cupy.asarray(g) for g in left_g])
    on_cpu = AsofJoin(right_t, right_g, device="cpu")
    assert cupy.asnumpy(got).tolist() == on_cpu.join(left_t, left_g).tolist()
    host_left = on_gpu.join(left_t, left_g)  # host left keys go over to the device
    assert cupy.asnumpy(host_left).tolist() == on_cpu.join(left_t, left_g).tolist()
