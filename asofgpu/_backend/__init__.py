"""Builds and launches the kernels: the backends, numba's jit and cache, and the host
operations every backend shares.

Three backends run the same ``kernels/`` source (``get_backend`` picks one):

- ``python`` (``base.py``): the identity jit, a plain loop (unit tests, pdb);
- ``cpu`` (``cpu.py``): ``numba.njit`` with ``prange``, arrays in numpy. Which walk a join
  takes, and every threshold behind the choice, is in ``walks.py``; rows are put in key order
  by ``order.py``;
- ``cuda`` (``cuda.py``): ``numba.cuda.jit(device=True)`` under a thin kernel, arrays in cupy.

For every backend, large payload gathers (``take.py``) and the hashing of group keys
(``hashing.py``) run on the host's cores. ``jit.py`` builds the CPU kernels and keeps numba's
cache. numba is imported here and by ``_intrinsics`` (elsewhere only for its thread
count); cupy here, by ``_columns`` and by the GPU front ends.

>>> get_backend("cpu").name
'cpu'
"""

from __future__ import annotations

import functools

from .base import Backend, PythonBackend, host_empty, options
from .cpu import CpuBackend
from .cuda import (
    CUDA_THREADS,
    CudaBackend,
    cuda_probe_source,
    cuda_usable,
    cudasim_enabled,
    gpu_present,
    numba_cuda_blocked,
)
from .hashing import (
    dictionary_encode_fixed,
    dictionary_encode_text,
    dictionary_encode_views,
    fixed_lookup_table,
    lookup_fixed,
    lookup_text,
    lookup_views,
    text_lookup_table,
    views_lookup_table,
)
from ..kernels.probe import Right
from .jit import cache_dir
from .take import check_map, chunked_passes, take_chunked, take_fixed, take_text, take_views

__all__ = [
    "CUDA_THREADS",
    "Backend",
    "CpuBackend",
    "CudaBackend",
    "PythonBackend",
    "Right",
    "cache_dir",
    "check_map",
    "chunked_passes",
    "cuda_probe_source",
    "cuda_usable",
    "cudasim_enabled",
    "dictionary_encode_fixed",
    "dictionary_encode_text",
    "dictionary_encode_views",
    "fixed_lookup_table",
    "get_backend",
    "gpu_present",
    "host_empty",
    "lookup_fixed",
    "lookup_text",
    "lookup_views",
    "numba_cuda_blocked",
    "options",
    "take_chunked",
    "take_fixed",
    "take_text",
    "take_views",
    "text_lookup_table",
    "views_lookup_table",
]

_BACKENDS = {"python": PythonBackend, "cpu": CpuBackend, "cuda": CudaBackend}


@functools.cache
def get_backend(device: str) -> Backend:
    """``"auto"`` picks ``cuda`` when a usable GPU is present, else ``cpu``."""
    if device == "auto":
        device = "cuda" if cuda_usable() else "cpu"
    if device == "cuda" and not (cudasim_enabled() or gpu_present()):
        msg = (
            "device='cuda' needs an NVIDIA GPU with cupy and numba-cuda installed, and none is "
            "usable here. Hint: pip install 'asofgpu[cuda12]' (or cuda13), or use device='cpu'."
        )
        raise RuntimeError(msg)
    if device == "cuda" and not cudasim_enabled() and (blocked := numba_cuda_blocked()):
        raise RuntimeError(f"device='cuda' cannot run here: {blocked}")
    return _BACKENDS[device]()
