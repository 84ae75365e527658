"""The CUDA launch (``_backend.CudaBackend._launch``, every kernel's) on a GPU: on the
caller's stream, with at least ``MIN_BLOCKS`` blocks, so that numba-cuda's low-occupancy
warning (at every launch of fewer: every small join, and under an "error" filter a failed
join) never comes, and without touching the process's warnings filters, which other threads
share. The launch is exercised here with a stand-in kernel that warns as numba-cuda's launch
configuration does (``low_occupancy_launch``, tests/fakes.py) and a stand-in stream; the
real one is tested on a GPU (``tests/test_gpu.py``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from asofgpu._backend import cuda


def _backend(simulated: bool) -> cuda.CudaBackend:
    backend = object.__new__(cuda.CudaBackend)  # (a real one needs cupy, or the simulator)
    backend.simulated = simulated
    return backend


@pytest.mark.parametrize(
    ("rows", "blocks"), [(1, 128), (3, 128), (128 * 256, 128), (128 * 256 + 1, 129), (10**6, 3907)]
)
def test_a_gpu_launch_has_enough_blocks_not_to_warn(
    low_occupancy_launch, monkeypatch, rows, blocks
):
    stream = object()
    monkeypatch.setattr(cuda, "_callers_stream", lambda: stream)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = warnings.filters
        _backend(simulated=False)._launch(cuda.probe_kernel(False, False), rows, (np.zeros(1),))
    assert low_occupancy_launch == [((blocks, cuda.CUDA_THREADS, stream), 1)]
    # launched under the caller's filters: none swapped in (threads share them)
    assert [f is ours for f in low_occupancy_launch.filters] == [True]


def test_the_stand_in_kernel_warns_as_numba_cuda_does(low_occupancy_launch):
    with pytest.warns(Warning, match="Grid size 127 will likely result in GPU under-utilization"):
        cuda.probe_kernel(False, False)[127, cuda.CUDA_THREADS]


def test_the_simulator_runs_no_idle_blocks(low_occupancy_launch):
    """It runs each thread in Python, and does not warn."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _backend(simulated=True)._launch(cuda.probe_kernel(False, True), 300, (np.zeros(1),))
    assert low_occupancy_launch == [((2, cuda.CUDA_THREADS), 1)]


def test_an_empty_launch_launches_nothing(low_occupancy_launch):
    _backend(simulated=False)._launch(cuda.probe_kernel(False, False), 0, ())
    assert low_occupancy_launch == []
