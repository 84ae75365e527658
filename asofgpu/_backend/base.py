"""The backend interface, and host arrays.

A ``Backend`` sorts the right side and probes it on one device; ``python`` runs the kernels as
plain Python (one search a row: unit tests, pdb). The cpu and cuda backends are in ``cpu.py``
and ``cuda.py``.
"""

from __future__ import annotations

import functools

import numpy as np

from .._host_pool import HOST_POOL
from ..kernels import calendar, groups, probe, splice, window
from .jit import identity_jit, py_options, py_unsigned


def host_empty(n: int, dtype) -> np.ndarray:
    """``numpy.empty`` for large host arrays, lent by ``asofgpu.host_pool``.

    The first write to a fresh page faults, and numba's own allocations get fresh pages each
    time: 80 MB written there cost 60 ms here, against 9 ms in pages kept from earlier joins.
    The pool keeps those pages even where Arrow's allocator would hand them back while idle.
    """
    return HOST_POOL.empty(n, dtype)


def read_only(a: np.ndarray) -> np.ndarray:
    """``a``, or a read-only view of it: how every host array a kernel only reads is passed.
    numba types an array by whether it is writable, and compiles a kernel again for each
    mix: Arrow's buffers are read-only, numpy's own arrays are not, and a join of integer
    groups from a pandas frame compiled for 5 s after ``asofgpu warm`` had compiled the same
    kernels for its writable twins.

    >>> a = np.arange(3)
    >>> read_only(a).flags.writeable, a.flags.writeable
    (False, True)
    """
    if not a.flags.writeable:
        return a
    view = a.view()
    view.flags.writeable = False
    return view


def never_descends(values, block: int = 1 << 16) -> bool:
    """Whether ``values`` (group codes, on the host) never descend, a block at a time:
    values out of order stop at the first block that shows it, not after a compare of them
    all.

    >>> never_descends(np.array([0, 0, 1, 3])), never_descends(np.array([0, 2, 1]), block=1)
    (True, False)
    """
    for start in range(0, len(values) - 1, block):
        piece = values[start : start + block + 1]
        if (piece[1:] < piece[:-1]).any():
            return False
    return True


def options(
    is_float: bool,
    strategy: int,
    exact: bool,
    tol,
    nearest_tie: int,
    map_dtype,
    reaches=None,
    xp=np,
) -> probe.Options:
    """The join's options as every kernel takes them, each field of one type whatever the
    caller passed (numba compiles a kernel once per argument type): the tolerance float64 for
    float keys, else uint64, 0 when there is none; ``reaches``, None or each left row's own
    reach back and ahead (two arrays of that type, on the device ``xp`` names: they replace
    ``tol``); ``no_match``, the map dtype's minimum.

    >>> how = options(False, 0, True, None, 0, np.int32)
    >>> how.has_tol, int(how.tol), len(how.back_tols), int(how.no_match)
    (False, 0, 0, -2147483648)
    """
    kind = np.float64 if is_float else np.uint64
    if reaches is None:
        back = forward = xp.empty(0, dtype=kind)
    else:
        back, forward = (xp.asarray(r).astype(kind, copy=False) for r in reaches)
    if xp is np:
        back, forward = read_only(back), read_only(forward)
    return probe.Options(
        np.int64(strategy),
        bool(exact),
        tol is not None or reaches is not None,
        kind(0 if tol is None else tol),
        back,
        forward,
        np.int64(nearest_tie),
        np.int64(np.iinfo(map_dtype).min),
    )


class Backend:
    """Sort the right side and probe it, on one device."""

    name = ""
    #: It has ``scan``: a one-shot join walks both sides in key order, with no sort by group.
    merge_scans = False
    #: Its probe may stream a time-ordered right side (``probe``'s ``time_ordered``).
    streams_time_ordered = False

    def __init__(self):
        self.xp = np

    # ---- arrays
    def empty(self, n: int, dtype):
        return self.xp.empty(n, dtype=dtype)

    def asarray(self, arr):
        return self.xp.asarray(arr)

    def to_host(self, arr) -> np.ndarray:
        return np.asarray(arr)

    def stable_argsort(self, values):
        return np.argsort(values, kind="stable")

    def ascends_within_groups(self, keys, groups, n_groups: int, is_float: bool) -> bool:
        """Whether along the rows each group's ``keys`` ascend (rows of ``groups`` codes at
        or past ``n_groups``, those a prepare discards, aside), so that a prepare's group
        sort alone orders them, where one pass tells it for less than the sort of the keys
        it spares. Here no pass does: False, and the keys are sorted (a device's sort of 10M
        keys takes milliseconds)."""
        return False

    def group_sort(self, order, bucket, n_groups: int, keys, rows_dtype=np.int64):
        """Stable sort of ``order`` (None: every row in row order) by ``bucket[order]``
        (values 0..n_groups, the last bucket holding discarded rows). Returns the reordered
        rows (of ``rows_dtype``: the join's map dtype, which spares it a copy), their keys
        and the offsets of the n_groups + 1 buckets."""
        if order is None:
            order = self.xp.arange(len(bucket), dtype=np.int64)
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
        return rows.astype(rows_dtype, copy=False), keys[rows], offsets

    def interprets(self, rows: int) -> bool:
        """Whether a launch over ``rows`` rows runs the kernels as plain Python."""
        return False

    # ---- the kernel
    def probe(
        self,
        is_float: bool,
        left_keys,
        left_groups,
        right: probe.Right,
        how: probe.Options,
        out,
        time_ordered=None,
        keys_ascend: bool = False,
    ) -> None:
        """Each left row's match in the prepared ``right`` under ``how`` (``options``),
        written to ``out``. ``time_ordered``: None, or the right side's (keys, group codes)
        in its own row order when its keys ascend and every row is in a group; the cpu may
        stream it. ``keys_ascend``: the left keys are known to ascend (``Key.ascends``); the
        cpu then does not check them again."""
        raise NotImplementedError

    # ---- the splice join's merge
    def splice_merge(
        self,
        is_float: bool,
        left_keys,
        left_rows,
        right_of_left,
        right_keys,
        right_rows,
        left_of_right,
        left_map,
        right_map,
    ) -> None:
        """Both sides' keyed rows on one timeline (``asofgpu.splice``): the keys ascend, the
        rows are the caller's numbers (none at all: the keys are the side's in row order, as
        time-sorted input gives them), ``right_of_left`` and ``left_of_right`` each row's
        match. Fills the maps' first ``len(left_keys) + len(right_keys)`` entries in merge
        order, left rows first at equal keys. Here each row's place is its rank in its side
        plus the other side's rows before it: two ``searchsorted`` of sorted keys, on the
        backend's device."""
        xp = self.xp
        if not len(left_rows):
            left_rows = xp.arange(len(left_keys), dtype=np.int64)
        if not len(right_rows):
            right_rows = xp.arange(len(right_keys), dtype=np.int64)
        at_left = xp.arange(len(left_keys), dtype=np.int64)
        at_left += xp.searchsorted(right_keys, left_keys, side="left")
        at_right = xp.arange(len(right_keys), dtype=np.int64)
        at_right += xp.searchsorted(left_keys, right_keys, side="right")
        left_map[at_left] = left_rows
        right_map[at_left] = right_of_left[left_rows]
        left_map[at_right] = left_of_right[right_rows]
        right_map[at_right] = right_rows

    # ---- group keys found on the device
    def find_groups(self, values, distinct):
        """Each of ``values``' positions in ``distinct`` (sorted, unique int64), or -1, as int32
        (kernels/groups.py's ``find_row``): how a left by-key given on the device finds its
        group (``_device_groups``). ``values``: integers of any width. Here as plain Python:
        the cpu encodes host keys by hashing, so only the tests bring device keys to it."""
        out = np.empty(len(values), np.int32)
        find_row = _find_group_row()
        for i in range(len(out)):
            find_row(i, values, distinct, out)
        return out

    # ---- calendar tolerances
    def calendar_reaches(self, keys, move):
        """Each key's reach under a calendar duration (kernels/calendar.py's ``reaches``;
        ``move``: a ``calendar.Move``), in ticks, as a uint64 array (``calendar.NO_LIMIT``
        where the moved key lies past the type's range). Here as plain Python, one piece."""
        out = np.empty(len(keys), np.uint64)
        _calendar()(keys, out, move, 1)
        return out

    # ---- the window join
    def window_bounds(
        self, is_float: bool, left_keys, left_groups, right: probe.Right, bounds, starts, ends
    ) -> None:
        """Each left row's window ``[starts[i], ends[i])`` of positions in the prepared
        ``right`` (kernels/window.py) under ``bounds`` (a ``window.Bounds``)."""
        interpreted_windows(is_float, left_keys, left_groups, right, bounds, starts, ends)

    def window_reduce(self, starts, ends, rows, values, keys, valid, out, shared=None) -> None:
        """Every window's reductions in one pass (kernels/window.py's ``reduce_row``): sums
        of ``values``, extremes of ``keys``, into ``out``, a ``window.Reduced``. ``shared``
        (a dict, or None) is kept by the caller for as long as the windows live: what the
        reductions of several columns over them can compute once goes there."""
        interpreted_reduce(starts, ends, rows, values, keys, valid, out)


class PythonBackend(Backend):
    name = "python"

    def interprets(self, rows: int) -> bool:
        return True

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
        interpreted_probe(is_float, left_keys, left_groups, right, how, out)

    def splice_merge(self, is_float, *sides) -> None:
        """The cpu's merge kernel as plain Python, cut into three pieces so that every test
        on this backend also checks where the pieces start (``kernels.splice.left_count``)."""
        _splice_merge(is_float)(*sides, 3)


@functools.cache
def _find_group_row():
    return groups.build(identity_jit, int)


@functools.cache
def _calendar():
    return calendar.build(identity_jit, identity_jit, identity_jit, range, py_unsigned)


@functools.cache
def _splice_merge(is_float: bool):
    return splice.build(identity_jit, identity_jit, is_float, py_unsigned, range)


@functools.cache
def _probe_row(is_float: bool):
    return probe.build(identity_jit, is_float, py_unsigned)


def interpreted_probe(is_float, left_keys, left_groups, right, how, out) -> None:
    """The probe kernel run as plain Python, one binary search a row: the python backend's,
    and the cpu backend's for a small launch before it compiles (``walks.compiles``)."""
    probe_row = _probe_row(is_float)
    how = py_options(how, is_float)
    with np.errstate(over="ignore"):  # float gaps past the largest double are inf
        for i in range(len(out)):
            probe_row(i, left_keys, left_groups, right, how, out)


@functools.cache
def _window_rows(is_float: bool):
    return window.build(identity_jit, identity_jit, is_float, py_unsigned, range, identity_jit)


def _as_compiled():
    """numpy's scalar arithmetic as the compiled sums do it, without a word: integer sums
    wrap, and +inf plus -inf is NaN (numpy's scalars would warn of both)."""
    return np.errstate(over="ignore", invalid="ignore")


def interpreted_windows(is_float, left_keys, left_groups, right, bounds, starts, ends) -> None:
    """The window kernel as plain Python (the python backend, and a small cpu launch)."""
    if not is_float:  # Python ints, as py_options makes the tolerance: every gap exact
        bounds = bounds._replace(
            before=int(bounds.before),
            after=int(bounds.after),
            befores=bounds.befores.tolist(),
            afters=bounds.afters.tolist(),
        )
    window_row = _window_rows(is_float).window_row
    with np.errstate(over="ignore"):
        for i in range(len(starts)):
            window_row(i, left_keys, left_groups, right, bounds, starts, ends)


def interpreted_slides(order, starts, ends, values, keys, out, piece_starts) -> None:
    """The cpu's slide of windows in the order of their starts (kernels/window.py's
    ``slides``) as plain Python: a small cpu launch, which then sums as a compiled one."""
    with _as_compiled():
        _window_rows(False).slides(order, starts, ends, values, keys, out, piece_starts)


def interpreted_reduce(starts, ends, rows, values, keys, valid, out) -> None:
    reduce_row = _window_rows(False).reduce_row
    with _as_compiled():
        for i in range(len(starts)):
            reduce_row(i, starts, ends, rows, values, keys, valid, out)
