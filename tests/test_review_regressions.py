"""Bugs a review found, each pinned by the smallest input that showed it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from conftest import to_host

import asofgpu as ag
from asofgpu import NO_MATCH, AsofJoin
from asofgpu._columns import is_device


@pytest.mark.parametrize("null_equality", ["unequal", "equal"])
def test_all_null_categorical_by_columns(device, null_equality):
    """An empty dictionary (an all-null categorical) once raised IndexError on either side."""
    empty = pa.array([None], pa.string()).dictionary_encode()
    j = AsofJoin(
        np.array([1, 2]), pa.array(["a", None]), null_equality=null_equality, device=device
    )
    expected = [1] if null_equality == "equal" else [NO_MATCH]
    assert to_host(j.join(np.array([5]), empty)).tolist() == expected
    right_empty = pa.array([None, None], pa.string()).dictionary_encode()
    j = AsofJoin(np.array([1, 2]), right_empty, null_equality=null_equality, device=device)
    assert to_host(j.join(np.array([5, 5]), pa.array([None, "a"]))).tolist() == [
        1 if null_equality == "equal" else NO_MATCH,
        NO_MATCH,
    ]


def test_parallel_and_serial_probes_have_their_own_cache_files():
    """numba's cache key ignores parallel=: both builds once shared one cache entry, and
    whichever was saved last ran in every later process."""
    from asofgpu._backend.jit import cpu_probe_all

    names = {cpu_probe_all(False, p).py_func.__qualname__ for p in (False, True)}
    assert len(names) == 2


def test_gather_drops_the_pandas_index():
    out = ag.gather(
        pd.DataFrame({"bid": [1.0, 2.0]}, index=[10, 20]), np.array([1, NO_MATCH], np.int32)
    )
    assert out.column_names == ["bid"]
    assert out.column("bid").to_pylist() == [2.0, None]


def test_gather_reads_nulls_in_an_unsigned_pyarrow_map_as_no_match():
    out = ag.gather(pa.table({"x": [1, 2]}), pa.array([1, None], pa.uint32()))
    assert out.column("x").to_pylist() == [2, None]


def test_a_numeric_tolerance_is_in_the_right_keys_unit_whatever_the_left_unit():
    j = AsofJoin(pa.array([0], pa.timestamp("s")), device="cpu")
    assert j.join(pa.array([3], pa.timestamp("s")), tolerance=5).tolist() == [0]
    assert j.join(pa.array([3 * 10**9], pa.timestamp("ns")), tolerance=5).tolist() == [0]
    assert j.join(pa.array([6 * 10**9], pa.timestamp("ns")), tolerance=5).tolist() == [NO_MATCH]


def test_a_finite_tolerance_beyond_every_double_reaches_every_finite_distance_only():
    """10**400 is past the largest double, but not infinite: the distance from inf (or NaN)
    to a number is inf, which it does not reach."""
    huge = 10**400
    got = ag.asof_join(np.array([1e300]), np.array([-1e300]), tolerance=huge, device="cpu")
    assert got.tolist() == [0]
    left = np.array([np.inf, np.nan, 5.0])
    got = ag.asof_join(left, np.array([0.0]), tolerance=huge, device="cpu")
    assert got.tolist() == [NO_MATCH, NO_MATCH, 0]
    assert ag.asof_join(left, np.array([0.0]), tolerance=np.inf, device="cpu").tolist() == [0] * 3
    joined = ag.range_join(
        pa.table({"t": left}), pa.table({"t": [0.0], "v": [7]}), on="t", before=huge, device="cpu"
    )
    assert joined["v"].to_pylist() == [None, None, 7]


class _CudfStringLike:
    """cuDF's string columns raise NotImplementedError from __cuda_array_interface__."""

    @property
    def __cuda_array_interface__(self):
        raise NotImplementedError("strings have no CUDA array interface")

    def to_arrow(self):
        return pa.array(["a", "b"])


def test_objects_whose_cuda_interface_raises_are_read_through_to_arrow():
    column = _CudfStringLike()
    assert not is_device(column)
    got = ag.asof_join(
        np.array([5, 5]), np.array([1, 2]), column, pa.array(["b", "a"]), device="cpu"
    )
    assert got.tolist() == [1, 0]


def test_one_shot_skips_the_overflow_check_of_right_rows_without_a_group():
    """The one-shot path rescaled every right key to the left's finer unit, so a right row
    dropped for its null by-key could raise OverflowError where AsofJoin answered."""
    right_on = np.array([0, 10**10], "datetime64[s]")  # 10**10 s overflows int64 in ns
    right_by, left_by = pa.array(["a", None]), np.array(["a"])
    left_on = np.array([5], "datetime64[ns]")
    assert AsofJoin(right_on, right_by, device="cpu").join(left_on, left_by).tolist() == [0]
    assert ag.asof_join(left_on, right_on, left_by, right_by, device="cpu").tolist() == [0]


class _ReadOnce:
    """A column behind a C stream that can be read once (as some producers allow)."""

    def __init__(self, values):
        self.values, self.read = pa.chunked_array([values]), False

    def __arrow_c_stream__(self, requested_schema=None):
        assert not self.read, "the stream was read twice"
        self.read = True
        return self.values.__arrow_c_stream__(requested_schema)


@pytest.mark.parametrize("as_text", [False, True])
def test_one_shot_reads_each_left_by_stream_once(as_text):
    """A left by-key stream is read once (an early encoding of it once read it twice)."""
    n = 70_000  # above the parallel text encoding's threshold
    codes = np.arange(n) % 3
    codes = codes.astype(str) if as_text else codes
    got = ag.asof_join(np.arange(n), np.arange(n), _ReadOnce(pa.array(codes)), codes, device="cpu")
    np.testing.assert_array_equal(got, np.arange(n))


def test_a_fractional_tolerance_keeps_its_fraction_on_a_finer_left_unit(device):
    """tolerance=1.5 on a right key in seconds is 1.5 s even when the keys meet in the left's
    nanoseconds: it was rounded down to 1 s before scaling, dropping a quote 1.2 s back."""
    right = pa.array([0, 10], pa.timestamp("s"))
    left = pa.array([1_200_000_000, 11_600_000_000], pa.timestamp("ns"))
    got = ag.asof_join(left, right, tolerance=1.5, device=device)
    assert to_host(got).tolist() == [0, NO_MATCH]


@pytest.mark.parametrize("dtype", [">i8", ">f8", ">u4", ">M8[ns]"])
def test_big_endian_numpy_keys_and_groups_join_as_their_native_copies(dtype):
    right, left = np.array([1, 5, 10]), np.array([6, 0, 10])
    by_right, by_left = np.array([7, 7, 8], ">i4"), np.array([7, 7, 8], ">i4")
    expected = ag.asof_join(
        left.astype(dtype).astype(dtype[1:]),
        right.astype(dtype).astype(dtype[1:]),
        by_left.astype("<i4"),
        by_right.astype("<i4"),
        device="cpu",
    )
    got = ag.asof_join(left.astype(dtype), right.astype(dtype), by_left, by_right, device="cpu")
    assert got.tolist() == expected.tolist() == [1, NO_MATCH, 2]
    prepared = AsofJoin(right.astype(dtype), by_right, device="cpu")
    assert prepared.join(left.astype(dtype), by_left).tolist() == expected.tolist()
