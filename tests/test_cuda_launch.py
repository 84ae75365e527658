"""The CUDA launch (``_backend.CudaBackend._launch``, every kernel's; reached here through
``probe``) keeps numba-cuda's low-occupancy warning to itself: it comes at every launch of
under 128 blocks, that is every small join, and under an "error" filter it would fail the
join. The simulator does not warn, so the kernel here is a stand-in that warns as
numba-cuda's launch configuration does (``low_occupancy_launch``, tests/fakes.py); the real
one is tested on a GPU (``tests/test_gpu.py``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from asofgpu import _backend


def test_cuda_launch_keeps_the_low_occupancy_warning_to_itself(low_occupancy_launch):
    if not (_backend.cudasim_enabled() or _backend.cuda_usable()):
        pytest.skip("no GPU and NUMBA_ENABLE_CUDASIM is not set (make test runs the simulator)")
    backend = _backend.get_backend("cuda")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        keys, groups = np.zeros(3), np.zeros(3, np.int32)
        right = _backend.Right(np.array([0, 3]), keys, np.arange(3), np.arange(3))
        how = _backend.options(False, 0, True, None, 0, np.int32)
        backend.probe(False, keys, groups, right, how, np.empty(3, np.int32))
        with pytest.warns(UserWarning, match="another warning"):  # others pass through
            warnings.warn("another warning", stacklevel=1)
    # the kernel's arguments: the left side's 2, the Right's 4, the Options' 8 and the map
    assert low_occupancy_launch == [((1, _backend.CUDA_THREADS), 15)]
