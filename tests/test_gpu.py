"""On a real NVIDIA GPU (marker ``gpu``; deselected in CI, run by the GPU check): device
inputs stay on the device, and the cuda map equals the cpu map on larger random inputs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import asofgpu as ag

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("strategy", ["backward", "forward", "nearest"])
@pytest.mark.parametrize("exact", [True, False])
def test_cuda_map_equals_cpu_map_on_random_groups(strategy, exact):
    import cupy

    rng = np.random.default_rng(7)
    n_right, n_left = 200_000, 300_000
    right_on = rng.integers(-(10**6), 10**6, n_right)
    left_on = rng.integers(-(10**6), 10**6, n_left)
    right_by = rng.integers(0, 500, n_right)
    left_by = rng.integers(0, 520, n_left)
    options = dict(strategy=strategy, allow_exact_matches=exact, tolerance=5_000)
    cpu = ag.asof_join(left_on, right_on, left_by, right_by, device="cpu", **options)
    gpu = ag.asof_join(
        cupy.asarray(left_on), cupy.asarray(right_on), left_by, right_by, device="cuda", **options
    )
    assert isinstance(gpu, cupy.ndarray)
    np.testing.assert_array_equal(cupy.asnumpy(gpu), cpu)


def test_device_keys_are_not_copied_to_the_host():
    import cupy

    right = cupy.arange(0, 1000, 10, dtype=cupy.int64)
    left = cupy.asarray([5, 10, 999, -1])
    gmap = ag.AsofJoin(right, device="cuda").join(left)
    assert isinstance(gmap, cupy.ndarray)
    assert cupy.asnumpy(gmap).tolist() == [0, 1, 99, ag.NO_MATCH]


def test_a_small_join_on_the_gpu_does_not_warn_of_low_occupancy():
    """numba-cuda warns at every launch of under 128 blocks; under an "error" filter that
    would fail every small join (issue 24, item 4)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")  # (a message filter missed its highlighted text)
        gmap = ag.asof_join(np.array([1, 5]), np.array([0, 4]), device="cuda")
    assert ag.is_no_match(gmap).tolist() == [False, False]
    assert not [w for w in seen if "Grid size" in str(w.message)]


def test_a_join_under_a_non_blocking_stream_reads_the_map_it_wrote():
    """The probe kernel launches on cupy's current stream (issue 24, item 2): under a
    non-blocking stream, cupy's reads of the map wait for the kernel that writes it."""
    import cupy

    rng = np.random.default_rng(8)
    right_on = np.sort(rng.integers(0, 10**9, 2_000_000))
    left_on = rng.integers(0, 10**9, 4_000_000)
    right_by, left_by = rng.integers(0, 1_000, 2_000_000), rng.integers(0, 1_000, 4_000_000)
    cpu = ag.asof_join(left_on, right_on, left_by, right_by, device="cpu")
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        prepared = ag.AsofJoin(cupy.asarray(right_on), right_by, device="cuda")
        for _ in range(3):
            gmap = prepared.join(cupy.asarray(left_on), left_by)
            hits = int(cupy.count_nonzero(gmap != ag.NO_MATCH))  # on the stream, at once
            assert hits == int(np.count_nonzero(cpu != ag.NO_MATCH))
            np.testing.assert_array_equal(cupy.asnumpy(gmap, stream=stream), cpu)


@pytest.mark.parametrize("unit", ["ns", "us", "s"])
def test_datetime_device_columns_join_as_their_host_copies(unit):
    """A numba device array of datetime64 (its __cuda_array_interface__ says M8, which cupy
    14.0.0 refuses) joins as its host copy does (issue 24, item 3)."""
    import cupy
    from numba import cuda

    rng = np.random.default_rng(9)
    right = np.sort(rng.integers(0, 10**9, 50_000)).astype(f"datetime64[{unit}]")
    left = rng.integers(0, 10**9, 80_000).astype(f"datetime64[{unit}]")
    cpu = ag.asof_join(left, right, device="cpu")
    gpu = ag.asof_join(cuda.to_device(left), cuda.to_device(right), device="cuda")
    np.testing.assert_array_equal(cupy.asnumpy(gpu), cpu)


@pytest.mark.parametrize("kind", ["datetime64[us]", "timedelta64[ns]"])
def test_window_reductions_of_temporal_device_columns_are_their_host_copies(kind):
    """A numba device array of datetime64 or timedelta64 values (its interface says M8/m8,
    which cupy 14.0.0 refuses) reduces in windows as its host copy does: read as int64
    ticks (issue 24, item 3)."""
    import cupy
    from numba import cuda

    rng = np.random.default_rng(4)
    right_on = np.sort(rng.integers(0, 10_000, 20_000))
    left_on = rng.integers(0, 10_000, 5_000)
    values = rng.integers(-(10**12), 10**12, 20_000).astype(kind)
    wanted = ["min", "max", "first", "last", "count"]
    found = {}
    for device, put in (("cpu", np.asarray), ("cuda", cuda.to_device)):
        windows = ag.AsofJoin(right_on, device=device).windows(left_on, before=50)
        reduced = windows.reduce(wanted, put(values))
        found[device] = {how: cupy.asnumpy(cupy.asarray(v)) for how, v in reduced.items()}
    for how in wanted:
        np.testing.assert_array_equal(found["cuda"][how], found["cpu"][how], err_msg=how)
