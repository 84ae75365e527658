"""The cuda backend: ``numba.cuda.jit(device=True)`` under a thin kernel, one thread a left row,
arrays in cupy (numpy under the CUDA simulator, ``NUMBA_ENABLE_CUDASIM=1``). The right side is
sorted with cupy's stable radix sort.
"""

from __future__ import annotations

import collections
import functools
import os
import warnings

import numpy as np

from ..kernels import bind, calendar, groups, probe, window
from ..kernels.calendar import Move
from ..kernels.probe import Options, Right
from ..kernels.window import Bounds, Reduced
from .base import Backend
from .jit import cuda_jit_cached, py_options, py_unsigned

CUDA_THREADS = 256
# numba-cuda warns of low occupancy at every launch of fewer blocks: at every small join, a
# warning the caller cannot act on, and an exception under an "error" filter (-W error,
# pytest's filterwarnings), which would fail the join. A launch has at least this many
# blocks instead (every kernel returns at once past its last row: 32,768 threads, a few
# microseconds). Not a filter around the launch: ``warnings.catch_warnings`` swaps the
# process's filters, which threads share, so two threads launching at once could leave one
# in place, or drop a filter another thread set meanwhile.
MIN_BLOCKS = 128


def cudasim_enabled() -> bool:
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


class CudaBackend(Backend):
    name = "cuda"

    def __init__(self):
        super().__init__()
        self.simulated = cudasim_enabled()
        if not self.simulated:
            import cupy

            self.xp = cupy

    def to_host(self, arr) -> np.ndarray:
        return np.asarray(arr) if self.simulated else self.xp.asnumpy(arr)

    def stable_argsort(self, values):
        if self.simulated:
            return np.argsort(values, kind="stable")
        return self.xp.argsort(values)  # cupy's sort is always stable (a radix sort)

    def probe(
        self,
        is_float,
        left_keys,
        left_groups,
        right,
        how,
        out,
        time_ordered=None,
        keys_ascend=False,
    ):
        if self.simulated:
            how = py_options(how, is_float)
        # The kernel takes the bundles' fields one by one and packs them again on the device:
        # a launch then passes only arrays and scalars, whose typing and transfer every
        # numba-cuda release handles alike (tuples of cupy arrays are typed by recent ones).
        self._launch(
            probe_kernel(is_float, self.simulated),  # one thread a row, always
            len(out),
            (left_keys, left_groups, *right, *how, out),
        )

    def window_bounds(self, is_float, left_keys, left_groups, right, bounds, starts, ends):
        if self.simulated and not is_float:  # gaps are Python ints there: compare exactly
            bounds = bounds._replace(before=int(bounds.before), after=int(bounds.after))
        kernel = window_kernels(is_float, self.simulated).bounds
        self._launch(kernel, len(starts), (left_keys, left_groups, *right, *bounds, starts, ends))

    def window_reduce(self, starts, ends, rows, values, keys, valid, out, shared=None):
        kernel = window_kernels(False, self.simulated).reduces
        self._launch(kernel, len(starts), (starts, ends, rows, values, keys, valid, *out))

    def calendar_reaches(self, keys, move):
        """One thread a key (kernels/calendar.py's ``reach_row``), on the device."""
        out = self.empty(len(keys), np.uint64)
        self._launch(calendar_kernel(self.simulated), len(keys), (keys, out, *move))
        return out

    def find_groups(self, values, distinct):
        """One thread a value (kernels/groups.py's ``find_row``): the column read once, as
        it is, where array operations made seven passes over it and its int64 copies."""
        out = self.empty(len(values), np.int32)
        self._launch(groups_kernel(self.simulated), len(out), (values, distinct, out))
        return out

    def _launch(self, kernel, n: int, args) -> None:
        """``kernel`` on n threads (one a row) on the caller's stream."""
        if n == 0:
            return
        blocks = (n + CUDA_THREADS - 1) // CUDA_THREADS
        if self.simulated:
            # The simulator writes every array argument back: give it writable copies. (It
            # does not warn, and runs each thread in Python: no idle blocks there.)
            args = [
                a.copy() if isinstance(a, np.ndarray) and not a.flags.writeable else a for a in args
            ]
            kernel[blocks, CUDA_THREADS](*args)
        else:
            kernel[max(blocks, MIN_BLOCKS), CUDA_THREADS, _callers_stream()](*args)


def _callers_stream():
    """cupy's current stream, as numba's: the kernel writes the map on the stream where the
    caller, and cupy's operations on the map, then read it. On numba's default stream a
    caller under ``cupy.cuda.Stream(non_blocking=True)`` could read it unwritten."""
    import cupy
    from numba import cuda

    return cuda.external_stream(cupy.cuda.get_current_stream().ptr)


def _probe_kernel(
    left_keys,
    left_groups,
    offsets,
    right_keys,
    rows_last,
    rows_first,
    strategy,
    exact,
    has_tol,
    tol,
    back_tols,
    forward_tols,
    nearest_tie,
    no_match,
    out,
):
    """The cuda kernel: one thread per left row (cuda, probe_row: bound). Its arguments are
    the fields of the left side, a ``probe.Right`` and a ``probe.Options``, in that order."""
    i = cuda.grid(1)  # noqa: F821 - bound by cuda_probe_source
    if i < out.size:
        right = Right(offsets, right_keys, rows_last, rows_first)
        how = Options(strategy, exact, has_tol, tol, back_tols, forward_tols, nearest_tie, no_match)
        probe_row(i, left_keys, left_groups, right, how, out)  # noqa: F821


@functools.cache
def probe_kernel(is_float: bool, simulated: bool):
    return _kernel(cuda_probe_source(is_float, simulated), simulated, _variant(is_float))


def _kernel(source, simulated: bool, variant: str):
    """``numba.cuda.jit`` of a kernel bound to its device functions: on a GPU cached on disk
    (``jit.cuda_jit_cached``: a new process loads it instead of compiling it); the simulator
    runs Python and has no cache."""
    if simulated:
        from numba import cuda

        return cuda.jit(source)
    return cuda_jit_cached(source, variant)


def _variant(is_float: bool) -> str:
    return "_float" if is_float else "_int"


def cuda_probe_source(is_float: bool, simulated: bool = False):
    """The probe kernel before ``cuda.jit``: ``_probe_kernel`` bound to its device functions.
    ``probe_kernel`` compiles it for launches; ``tests/test_ptx.py`` compiles it with
    the real CUDA compiler (``cuda.compile_ptx``, no GPU needed) for every argument type a
    launch can pass."""
    # numba.cuda is bound as a global: the simulator swaps globals that name it for its own.
    import numba
    from numba import cuda

    unsigned = py_unsigned if simulated else numba.uint64
    probe_row = probe.build(cuda.jit(device=True), is_float, unsigned)
    return bind(_probe_kernel, cuda=cuda, probe_row=probe_row)


def _window_kernel(
    left_keys,
    left_groups,
    offsets,
    right_keys,
    rows_last,
    rows_first,
    before,
    after,
    prevailing,
    befores,
    afters,
    starts,
    ends,
):
    """One thread per left row: its window (window_row: bound). The arguments are the left
    side, a ``probe.Right``'s and a ``window.Bounds``' fields, then the outputs."""
    i = cuda.grid(1)  # noqa: F821 - bound by window_kernels
    if i < starts.size:
        right = Right(offsets, right_keys, rows_last, rows_first)
        reach = Bounds(before, after, prevailing, befores, afters)
        window_row(i, left_keys, left_groups, right, reach, starts, ends)  # noqa: F821


def _reduce_kernel(
    starts,
    ends,
    rows,
    values,
    keys,
    valid,
    first,
    last,
    low,
    high,
    low_keys,
    high_keys,
    sums,
    counts,
):
    """One thread per left row: its window's reductions (reduce_row: bound). The outputs are
    a ``window.Reduced``'s fields."""
    i = cuda.grid(1)  # noqa: F821 - bound by window_kernels
    if i < starts.size:
        out = Reduced(first, last, low, high, low_keys, high_keys, sums, counts)
        reduce_row(i, starts, ends, rows, values, keys, valid, out)  # noqa: F821


WindowKernels = collections.namedtuple("WindowKernels", "bounds reduces")


@functools.cache
def window_kernels(is_float: bool, simulated: bool) -> WindowKernels:
    """The window join's kernels (kernels/window.py), one thread a left row, compiled for
    launches; ``is_float``: the comparisons of the keys (bounds)."""
    sources = window_kernel_sources(is_float, simulated)
    return WindowKernels(*(_kernel(k, simulated, _variant(is_float)) for k in sources))


def window_kernel_sources(is_float: bool, simulated: bool = False) -> WindowKernels:
    """The window kernels before ``cuda.jit``, bound to their device functions
    (``tests/test_ptx.py`` compiles them with the real CUDA compiler)."""
    import numba
    from numba import cuda

    unsigned = py_unsigned if simulated else numba.uint64
    device = cuda.jit(device=True)
    rows = window.build(device, device, is_float, unsigned, range, device)
    names = {
        "cuda": cuda,
        "window_row": rows.window_row,
        "reduce_row": rows.reduce_row,
    }
    return WindowKernels(bind(_window_kernel, **names), bind(_reduce_kernel, **names))


def _calendar_kernel(
    keys, out, backward, months, days, ticks, ticks_per_day, offset, lowest, highest, most_days
):
    """One thread per key: its reach under a calendar duration (reach_row: bound). Its
    arguments after the keys and the output are a ``calendar.Move``'s fields."""
    i = cuda.grid(1)  # noqa: F821 - bound by calendar_kernel_source
    if i < out.size:
        move = Move(
            backward, months, days, ticks, ticks_per_day, offset, lowest, highest, most_days
        )
        reach_row(i, keys, out, move)  # noqa: F821


@functools.cache
def calendar_kernel(simulated: bool):
    return _kernel(calendar_kernel_source(simulated), simulated, "")


def calendar_kernel_source(simulated: bool = False):
    """The calendar kernel before ``cuda.jit`` (``tests/test_ptx.py`` compiles it)."""
    import numba
    from numba import cuda

    row = calendar.build_row(cuda.jit(device=True), py_unsigned if simulated else numba.uint64)
    return bind(_calendar_kernel, cuda=cuda, reach_row=row)


def _groups_kernel(values, distinct, out):
    """One thread per value: its position among the distinct keys (find_row: bound)."""
    i = cuda.grid(1)  # noqa: F821 - bound by groups_kernel_source
    if i < out.size:
        find_row(i, values, distinct, out)  # noqa: F821


@functools.cache
def groups_kernel(simulated: bool):
    return _kernel(groups_kernel_source(simulated), simulated, "")


def groups_kernel_source(simulated: bool = False):
    """The group lookup's kernel before ``cuda.jit`` (``tests/test_ptx.py`` compiles it)."""
    import numba
    from numba import cuda

    row = groups.build(cuda.jit(device=True), int if simulated else numba.int64)
    return bind(_groups_kernel, cuda=cuda, find_row=row)


@functools.cache
def gpu_present() -> bool:
    """A real GPU that cupy and numba-cuda see (the simulator does not count). cupy is asked
    first: where it sees none, numba is not imported (``asofgpu enrich`` of a day too small to
    compile never imports it)."""
    if cudasim_enabled():
        return False
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() == 0:
            return False
        from numba import cuda

        return bool(cuda.is_available())
    except Exception:  # noqa: BLE001 - any import or driver failure means "no GPU here"
        return False


def cuda_usable() -> bool:
    """``gpu_present()``, and numba-cuda able to compile for it under this numpy; a GPU it
    cannot compile for is not usable, with a warning that says why (``device="auto"`` then
    runs on the cpu)."""
    if not gpu_present():
        return False
    blocked = numba_cuda_blocked()
    if blocked:
        warnings.warn(f"asofgpu runs on the cpu: {blocked}", RuntimeWarning, stacklevel=2)
    return not blocked


@functools.cache
def numba_cuda_blocked() -> str | None:
    """Why numba-cuda cannot compile a kernel under this numpy, or None.

    numba-cuda 0.30.4 and earlier register an overload of ``numpy.row_stack`` as they load
    their array support, at a process's first kernel compile; numpy 2.5 removed it, so every
    launch fails there with an AttributeError. numba-cuda is in maintenance and will not
    follow (NVIDIA/numba-cuda#907). Only where numpy lacks ``row_stack`` is that module
    loaded here, to see (tests/test_errors.py takes it away in a process of its own)."""
    if hasattr(np, "row_stack"):
        return None
    try:
        import numba.cuda.np.arrayobj  # noqa: F401 - loaded for its side effect, or its error
    except ImportError:  # no numba-cuda, or the simulator's numba.cuda
        return None
    except AttributeError as error:
        from importlib.metadata import PackageNotFoundError, version

        try:
            release = version("numba-cuda")
        except PackageNotFoundError:
            release = "(unknown version)"
        return (
            f"numba-cuda {release} cannot compile kernels under numpy {np.__version__} ({error}; "
            "numpy 2.5 removed it and numba-cuda will not follow: NVIDIA/numba-cuda#907). "
            "Hint: pip install 'numpy<2.5' (asofgpu's cuda extras ask for it)."
        )
    return None
