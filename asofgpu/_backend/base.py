"""The backend interface, and host arrays.

A ``Backend`` sorts the right side and probes it on one device; ``python`` runs the kernels as
plain Python (one search a row: unit tests, pdb). The cpu and cuda backends are in ``cpu.py``
and ``cuda.py``.
"""

from __future__ import annotations

import numpy as np

from .._host_pool import HOST_POOL
from ..kernels import probe
from .jit import identity_jit, py_unsigned


def host_empty(n: int, dtype) -> np.ndarray:
    """``numpy.empty`` for large host arrays, lent by ``asofgpu.host_pool``.

    The first write to a fresh page faults, and numba's own allocations get fresh pages each
    time: 80 MB written there cost 60 ms here, against 9 ms in pages kept from earlier joins.
    The pool keeps those pages even where Arrow's allocator would hand them back while idle.
    """
    return HOST_POOL.empty(n, dtype)


def kernel_tolerance(is_float: bool, tol) -> tuple[bool, object]:
    """(whether there is one, the tolerance as the kernels take it: float64 for float keys,
    else uint64; 0 when there is none)."""
    if tol is None:
        return False, np.float64(0) if is_float else np.uint64(0)
    return True, np.float64(tol) if is_float else np.uint64(tol)


class Backend:
    """Sort the right side and probe it, on one device."""

    name = ""
    #: It has ``scan``: a one-shot join walks both sides in key order, with no sort by group.
    merge_scans = False
    #: Its probe may stream a time-ordered right side (``probe``'s ``time_ordered``).
    streams_time_ordered = False

    def __init__(self):
        self.xp = np
        self._probes = {}

    # ---- arrays
    def empty(self, n: int, dtype):
        return self.xp.empty(n, dtype=dtype)

    def asarray(self, arr):
        return self.xp.asarray(arr)

    def to_host(self, arr) -> np.ndarray:
        return np.asarray(arr)

    def stable_argsort(self, values):
        return np.argsort(values, kind="stable")

    def group_sort(self, order, bucket, n_groups: int, keys):
        """Stable sort of ``order`` by ``bucket[order]`` (values 0..n_groups, the last bucket
        holding discarded rows). Returns the reordered rows, their keys and the offsets of
        the n_groups + 1 buckets."""
        bucket_of = bucket[order]
        by_group = self.stable_argsort(bucket_of)
        counts = (
            self.xp.bincount(bucket_of, minlength=n_groups + 1)
            if len(bucket_of)
            else self.xp.zeros(n_groups + 1, dtype=np.int64)
        )  # cupy's refuses empty input
        offsets = self.xp.zeros(n_groups + 2, dtype=np.int64)
        self.xp.cumsum(counts, out=offsets[1:])
        rows = order[by_group]
        return rows, keys[rows], offsets

    # ---- the kernel
    def probe(
        self,
        is_float: bool,
        left_keys,
        left_groups,
        offsets,
        right_keys,
        rows_last,
        rows_first,
        strategy: int,
        exact: bool,
        tol,
        nearest_tie: int,
        out,
        time_ordered=None,
    ) -> None:
        """``time_ordered``: None, or the right side's (keys, group codes) in its own row
        order when its keys ascend and every row is in a group; the cpu may stream it."""
        has_tol, tol = kernel_tolerance(is_float, tol)
        no_match = np.iinfo(out.dtype).min
        self._launch(
            is_float,
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
            nearest_tie,
            no_match,
            out,
            time_ordered=time_ordered,
        )

    def _launch(self, is_float, *args, time_ordered=None):
        raise NotImplementedError


class PythonBackend(Backend):
    name = "python"

    def _launch(self, is_float, *args, time_ordered=None):  # one search a row, always
        if is_float not in self._probes:
            self._probes[is_float] = probe.build(identity_jit, is_float, py_unsigned)
        probe_row = self._probes[is_float]
        with np.errstate(over="ignore"):  # float gaps past the largest double are inf
            for i in range(len(args[-1])):
                probe_row(i, *args)
