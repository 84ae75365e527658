"""``AsofJoin``: sort the right side into group offsets once, probe it many times.

>>> import numpy as np
>>> quotes_t = np.array([1, 5, 10, 2, 6])
>>> quotes_sym = np.array(["A", "A", "A", "B", "B"])
>>> j = AsofJoin(quotes_t, quotes_sym, device="cpu")
>>> j.join(np.array([6, 6, 0]), np.array(["A", "B", "A"])).tolist()
[1, 4, -2147483648]
>>> j.join(np.array([6, 6]), np.array(["A", "B"]), strategy="forward", allow_exact_matches=False).tolist()
[2, -2147483648]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np
import pyarrow as pa

from . import _validate
from ._backend import Right, get_backend, options
from ._backend.base import never_descends
from ._columns import (
    Key,
    Reaches,
    RowTicks,
    common_tick,
    is_device,
    is_row_tolerances,
    ordered_key,
    rescale,
    row_tolerances,
    to_arrow,
    tolerance_in_ticks,
)
from ._device_groups import SortedGroups, device_columns, on_device
from ._encode import Groups
from ._host_pool import lent
from ._calendar import fixed as fixed_duration
from ._calendar import clock_changes, fixed_day_ticks, is_calendar, reaches, row_reaches
from .kernels.window import Bounds
from .window import Windows, check_reaches_given
from ._types import (
    NEAREST_TIE_CODE,
    NO_MATCH,
    NO_MATCH_INT64,
    STRATEGY_CODE,
    AmbiguousMatchError,
    ByColumns,
    Column,
    DeviceName,
    GatherMap,
    RowTolerance,
    StrategyName,
)

_INT32_ROWS = 2**31


@dataclass(frozen=True)
class GroupCodes:
    """By-keys the caller has encoded itself, passed as ``right_by`` and ``left_by``: one code
    per row (host or device array; -1: no group), numbered 0..n_groups-1 by the right side and
    in the same numbering on the left. asofgpu.plc encodes pylibcudf columns on the device.

    Host codes are checked here, as the compiled kernels index by them unchecked; device codes
    are asofgpu.plc's own, and checking them would cost a synchronization per probe.

    >>> GroupCodes(np.array([0, 3]), 2)
    Traceback (most recent call last):
    ...
    ValueError: GroupCodes.codes must lie in [-1, n_groups=2), got 3
    """

    codes: object
    n_groups: int

    def __post_init__(self):
        if isinstance(self.n_groups, bool) or not isinstance(self.n_groups, (int, np.integer)):
            msg = f"GroupCodes.n_groups must be an int, got {type(self.n_groups).__name__}"
            raise TypeError(msg)
        if self.n_groups < 0:
            msg = f"GroupCodes.n_groups must be at least 0, got {self.n_groups}"
            raise ValueError(msg)
        if is_device(self.codes) or isinstance(self.codes, _OnDevice):  # (pickled device codes)
            return
        codes = np.asarray(self.codes)
        if codes.ndim != 1 or not (codes.dtype.kind in "iu" or codes.size == 0):
            msg = f"GroupCodes.codes must be a 1-D integer array, got {codes.ndim}-D {codes.dtype}"
            raise TypeError(msg)
        if codes.size and (codes.min() < -1 or codes.max() >= self.n_groups):
            bad = codes.min() if codes.min() < -1 else codes.max()
            msg = f"GroupCodes.codes must lie in [-1, n_groups={self.n_groups}), got {bad}"
            raise ValueError(msg)
        object.__setattr__(self, "codes", codes)


def by_columns(obj, param: str) -> list:
    """None, one column, a sequence of columns, or a table -> a list of columns."""
    if obj is None:
        return []
    if isinstance(obj, (list, tuple)):
        if not obj:
            msg = f"{param} must hold at least one column, got an empty {type(obj).__name__}"
            raise ValueError(msg)
        return list(obj)
    if isinstance(obj, (pa.Table, pa.RecordBatch)):
        return list(obj.columns)
    shape = getattr(obj, "shape", None)
    if hasattr(obj, "columns") and shape is not None and len(shape) == 2:  # a data frame
        return [obj[c] for c in obj.columns]
    return [obj]


class _Rules(NamedTuple):
    """One probe's rules, as ``AsofJoin.join`` validated them."""

    strategy: str
    exact: bool
    nearest_tie: str
    ambiguous: str

    @property
    def tie_code(self) -> int:
        return NEAREST_TIE_CODE[self.nearest_tie]


class AsofJoin:
    """The right side of an as-of join ("the state table"), prepared once.

    Parameters
    ----------
    right_on : column
        The ordered key (time): integers, floats, dates, times, timestamps or durations.
    right_by : None, column, sequence of columns or table
        Equality keys (symbol, entity, ...): numbers, strings, bools, temporal, categoricals.
    null_equality : {"unequal", "equal"}
        Whether a null by-key matches a null by-key ("equal" is pandas' rule).
    tie_break : column, optional
        Among right rows with equal (by, on), the one with the largest value wins (nulls
        lose; equal values fall back to row order).
    presorted : bool
        The right side is already grouped by ``right_by`` and sorted by ``right_on`` within
        each group: verified in O(n), and the sort is skipped (with ``tie_break``, rows of
        equal keys are still ordered by it); any other order is refused. Without it, the
        cpu finds keys in order within each group itself, in one pass, and sorts them by
        group alone: from 32,768 rows and without ``tie_break`` (rows without a key or a
        group, which match nothing, are passed over).
    device : {"auto", "cpu", "cuda", "python"}
        Where the work runs; "auto" takes the GPU when one is usable. "python" runs the
        kernels as plain Python (slow; for debugging).

    A prepared join pickles (to worker processes, to disk): its arrays by value, its backend
    by name, so it comes back on the same device (one prepared on a GPU needs one there).
    """

    def __init__(
        self,
        right_on: Column,
        right_by: ByColumns | None = None,
        *,
        null_equality: Literal["unequal", "equal"] = "unequal",
        tie_break: Column | None = None,
        presorted: bool = False,
        device: DeviceName = "auto",
        _defer_sort: bool = False,
    ) -> None:
        _validate.one_of(null_equality, "null_equality", ("unequal", "equal"))
        presorted = _validate.flag(presorted, "presorted")
        self.backend = get_backend(_validate.device(device))
        xp = self.backend.xp
        self._host = xp is np
        key = ordered_key(right_on, "right_on", self._host)
        self.n_right = len(key.values)
        given = [] if isinstance(right_by, GroupCodes) else by_columns(right_by, "right_by")
        params = [f"right_by[{i}]" for i in range(len(given))]
        # Fixed-width keys already on the device stay there (a GPU backend only).
        device_by = None if self._host else device_columns(given)
        columns = [] if device_by else [to_arrow(c, p) for c, p in zip(given, params)]
        for col, param in zip(device_by[0] if device_by else columns, params):
            _validate.same_length(self.n_right, len(col), param, "right_on")
        self._groups = None
        n_groups = 1
        include = key.valid
        bucket = None
        if isinstance(right_by, GroupCodes):  # encoded by the caller (asofgpu.plc: on the device)
            _validate.same_length(self.n_right, len(right_by.codes), "right_by", "right_on")
            self._groups, n_groups = right_by, right_by.n_groups
            codes = self.backend.asarray(right_by.codes)
            bucket = xp.where(codes >= 0, codes, n_groups).astype(np.int32, copy=False)
        if device_by:
            arrays, dtypes = device_by
            self._groups = SortedGroups(arrays, params, self.backend, dtypes)
            n_groups = self._groups.n_groups
            bucket = self._groups.right_codes  # device keys have no nulls: every row a group
        if columns:
            self._groups = Groups(columns, params, null_equality == "equal")
            n_groups = self._groups.n_groups
            codes = self._groups.right_codes.astype(np.int32, copy=False)
            if len(codes) and codes.min() < 0:  # nulls, which match nothing: not walked
                codes = np.where(codes >= 0, codes, n_groups).astype(np.int32, copy=False)
            bucket = self.backend.asarray(codes)
        if include is not None:
            if bucket is None:
                bucket = xp.zeros(self.n_right, dtype=np.int32)
            bucket = xp.where(include, bucket, n_groups).astype(np.int32, copy=False)
        tie = None
        if tie_break is not None:
            tie = ordered_key(tie_break, "tie_break", self._host)
            _validate.same_length(self.n_right, len(tie.values), "tie_break", "right_on")
        self._renumber = None  # presorted groups are numbered in order of appearance
        self.map_dtype = np.int32 if self.n_right < _INT32_ROWS else np.int64
        self.no_match = NO_MATCH if self.map_dtype == np.int32 else NO_MATCH_INT64
        self.n_groups = n_groups
        self._key_type = key.type
        self._duplicated = None  # per right row: its (group, key[, tie]) is shared; lazy
        # A one-shot join (asof_join) on a backend that merge-scans may walk both sides in key
        # order instead (kernels/scan.py), which needs no sort by group: the sort waits for a
        # probe.
        self._unsorted = None
        self._key_ascends = None  # see _ascending
        self._key_ascends_in_groups = None  # see _ascending_in_groups
        self._time_ordered = None  # see _keep_time_order
        if _defer_sort and not presorted and tie is None and self.backend.merge_scans:
            self._unsorted = (key, bucket)
            return
        if presorted and not self._in_group_order(key, tie, bucket, n_groups):
            kept = self._kept_rows(bucket, n_groups)
            self._renumber = self._verify_sorted(key, bucket, n_groups, kept)
            if self._renumber is not None:
                bucket = self._renumber[bucket]
            if tie is None:
                self._set_sorted(key, tie, *self._presorted(key, bucket, n_groups, kept))
                return
        # (a tie-break column still needs ordering within runs of equal keys)
        self._set_sorted(key, tie, *self._sort(key, tie, bucket, n_groups))
        self._keep_time_order(key, bucket)

    # ------------------------------------------------------------------ pickling

    def __getstate__(self) -> dict:
        """Its arrays by value (device arrays copied to the host), its backend by name: a
        prepared join can go to worker processes or to disk, and come back equal."""
        state = dict(self.__dict__)
        state["backend"] = self.backend.name
        return _map_arrays(
            state, lambda a: _OnDevice(self.backend.to_host(a)) if is_device(a) else a
        )

    def __setstate__(self, state: dict) -> None:
        name = state["backend"]
        try:
            backend = get_backend(name)
        except RuntimeError as exc:
            msg = f"this AsofJoin was prepared on device={name!r}, which is not usable here: {exc}"
            raise RuntimeError(msg) from None
        state = _map_arrays(
            state, lambda a: backend.asarray(a.host) if isinstance(a, _OnDevice) else a
        )
        state["backend"] = backend
        self.__dict__.update(state)

    def _set_sorted(self, key: Key, tie: Key | None, rows, sorted_keys, offsets) -> None:
        self._offsets = offsets[: self.n_groups + 1]
        self._keys = {key.type.tick_ns: sorted_keys}
        self._rows_last = rows.astype(self.map_dtype, copy=False)
        self._rows_first = self._rows_last
        self._tie_sorted = None
        if tie is not None:
            self._tie_sorted = (tie.values[rows], None if tie.valid is None else tie.valid[rows])
            self._rows_first = self._first_of_best_tie()

    def _sort_deferred(self) -> None:
        unsorted = self._unsorted
        if unsorted is not None:
            key, bucket = unsorted
            self._set_sorted(key, None, *self._sort(key, None, bucket, self.n_groups))
            # A deferred sort is a one-shot call's, which holds the caller's key unsorted
            # already: it cannot change before the call returns, and is kept uncopied.
            self._keep_time_order(key, bucket, copy=False)
            # Marked done last: a thread that finds it done finds the sorted arrays set.
            self._unsorted = None

    def _ascending(self, key: Key) -> bool:
        """Whether the right keys ascend in row order (time-sorted, as quotes come); computed
        once."""
        if self._key_ascends is None and key.ascends:  # checked while it was copied
            self._key_ascends = True
        if self._key_ascends is None:
            values, xp = key.values, self.backend.xp
            is_float = key.type.physical == "float"
            # The first rows first: a shuffled side is answered there, without a pass over
            # all of them (10M keys: 7 ms, 20 ms as floats)
            head = values[: _HEAD_ROWS + 1]
            self._key_ascends = not bool(
                less_in_total_order(head[1:], head[:-1], xp, is_float).any()
            ) and not bool(less_in_total_order(values[1:], values[:-1], xp, is_float).any())
        return self._key_ascends

    def _ascending_in_groups(self, key: Key, bucket, n_groups: int) -> bool:
        """Whether the right keys ascend within each group in row order (quotes sorted by
        symbol, then time), where the backend tells it cheaply: the group sort alone, which
        keeps each group's rows in row order, then orders them. The rows the sort discards
        (bucket ``n_groups``: a null key or by value) are not looked at. Computed once."""
        if self._key_ascends_in_groups is None:
            self._key_ascends_in_groups = bucket is not None and self.backend.ascends_within_groups(
                key.values, bucket, n_groups, key.type.physical == "float"
            )
        return self._key_ascends_in_groups

    def _in_group_order(self, key: Key, tie: Key | None, bucket, n_groups: int) -> bool:
        """Whether a presorted right side shows its order in a pass or two: no tie-break,
        keys ascending within each group, groups in the order of their codes (numbered as
        they first appear: by values sorted ascend). Then it takes the path of a side not
        presorted, whose group sort keeps its rows as they are (and ``_keep_time_order``
        keeps a time-ordered side's keys for the stream, as it does there), and
        ``_verify_sorted``'s ten passes are not needed: a 1M-row window of quotes sorted by
        symbol, as enrich streams them, 43-63 -> 16-24 ms. Rows without a group (null by
        values or keys) in the middle, groups numbered out of order (``GroupCodes``), and a
        backend that cannot tell cheaply (a GPU; a side under 32,768 rows) take the full
        check."""
        if tie is not None:
            return False
        if bucket is None:
            return self._ascending(key)
        # (the backend's answer first: a GPU's is False, and its codes are not read; a
        # cpu's True, and they are on the host)
        return self._ascending_in_groups(key, bucket, n_groups) and never_descends(bucket)

    def _sorts_first(self, key: Key, bucket) -> bool:
        """Whether a one-shot join sorts its right side by group and probes it, rather than
        merge-scanning both sides in key order (``Backend.scan``): where the right keys
        ascend within each group but not overall, the scan would sort them by key where the
        group sort alone orders them. 10M x 10M, quotes sorted by symbol, the map alone
        (``asof_join``): trades in time order 348 -> 230 ms, sorted by symbol too 533 -> 202
        ms, shuffled 611 -> 445 ms; ``join_asof`` of tables, four quote columns gathered:
        628-712 -> 311 ms and 860-1043 -> 245 ms (docs/benchmarks.md)."""
        return not self._ascending(key) and self._ascending_in_groups(key, bucket, self.n_groups)

    def _keep_time_order(self, key: Key, bucket, copy: bool = True) -> None:
        """Keep the right keys and group codes in row order, for a backend that streams a
        time-ordered probe through them (kernels/stream.py), when the keys ascend and every
        row is in a group: 12 bytes a row (without by-keys none, the sorted keys being in
        that order already). Keys the caller could change after preparing are copied; those
        asofgpu made for itself (``lent``: an Arrow column's chunks combined) and a one-shot
        call's (``copy=False``) are kept as they are: the copy of 10M keys read from parquet
        (77 chunks) took 83 ms of a window join's 0.68 s."""
        if (
            not self.backend.streams_time_ordered
            or self._tie_sorted is not None
            or not self.n_right
            or int(self._offsets[-1]) != self.n_right
            or not self._ascending(key)
        ):
            return
        if bucket is None:  # np.zeros: pages of zeros that are never written
            self._time_ordered = (self._keys[key.type.tick_ns], np.zeros(self.n_right, np.int32))
        else:
            values = key.values
            if copy and not lent(values):
                values = values.copy()
            self._time_ordered = (values, bucket)

    # ------------------------------------------------------------------ preparation

    def _sort(self, key: Key, tie: Key | None, bucket, n_groups: int):
        """Stable sort by (group, key[, tie]), discarding rows of the last bucket."""
        be, xp = self.backend, self.backend.xp
        order = None  # the rows as they are: time-sorted already, as quotes come
        if tie is not None:  # least significant first; every pass stable
            order = be.stable_argsort(tie.values)
            if tie.valid is not None:
                order = order[be.stable_argsort(tie.valid[order])]
            order = order[be.stable_argsort(key.values[order])]
        elif not self._ascending(key) and not self._ascending_in_groups(key, bucket, n_groups):
            order = be.stable_argsort(key.values)
        if bucket is None:
            if order is None:
                order = xp.arange(self.n_right, dtype=np.int64)
            return order, key.values[order], xp.asarray(np.array([0, self.n_right], np.int64))
        rows, sorted_keys, offsets = be.group_sort(
            order, bucket, n_groups, key.values, self.map_dtype
        )
        kept = int(offsets[n_groups])
        return rows[:kept], sorted_keys[:kept], offsets

    def _kept_rows(self, bucket, n_groups: int):
        rows = self.backend.xp.arange(self.n_right, dtype=np.int64)
        return rows if bucket is None else rows[bucket[rows] < n_groups]

    def _verify_sorted(self, key: Key, bucket, n_groups: int, rows):
        """O(n) over the kept ``rows``: each group's rows contiguous and their keys ascending.
        Returns the groups' renumbering in order of appearance (None without by), which the
        offsets follow."""
        xp = self.backend.xp
        k = key.values[rows]
        groups = bucket[rows] if bucket is not None else xp.zeros(len(rows), dtype=np.int32)
        change = groups[1:] != groups[:-1]
        bad = ~change & less_in_total_order(k[1:], k[:-1], xp, key.type.physical == "float")
        run_starts = xp.ones(len(groups), dtype=bool)
        run_starts[1:] = change
        run_starts = xp.flatnonzero(run_starts)
        run_groups = groups[run_starts]
        _, first_run = xp.unique(run_groups, return_index=True)
        again = xp.ones(len(run_groups), dtype=bool)
        again[first_run] = False  # runs of a group seen before: not contiguous
        where = None
        if len(bad) and bool(bad.any()):
            where = int(xp.argmax(bad)) + 1
        if bool(again.any()):
            run_start = int(run_starts[int(xp.argmax(again))])
            where = run_start if where is None else min(where, run_start)
        if where is not None:
            # Null keys are a bucket of their own without right_by too: ask what was given.
            what = "grouped by right_by and " if self._groups is not None else ""
            msg = (
                f"presorted=True but the right side is not {what}sorted by right_on "
                f"(row {int(rows[where])} is out of order). "
                f"Hint: pass presorted=False to let AsofJoin sort it."
            )
            raise ValueError(msg)
        if bucket is None:
            return None
        rank = xp.full(n_groups + 1, -1, dtype=np.int32)
        rank[run_groups] = xp.arange(len(run_groups), dtype=np.int32)
        absent = rank[:n_groups] < 0  # groups whose rows were all dropped: empty, at the end
        rank[xp.flatnonzero(absent)] = xp.arange(len(run_groups), n_groups, dtype=np.int32)
        rank[n_groups] = n_groups
        return rank

    def _presorted(self, key: Key, bucket, n_groups: int, rows):
        """Rows, keys and offsets of a verified presorted right side (its kept ``rows``),
        without a sort."""
        xp = self.backend.xp
        offsets = xp.zeros(n_groups + 1, dtype=np.int64)
        if bucket is None:
            offsets[1] = len(rows)
        elif len(rows):
            xp.cumsum(xp.bincount(bucket[rows], minlength=n_groups), out=offsets[1:])
        return rows, key.values[rows], offsets

    def _group_of_position(self):
        """The group of each sorted position (searchsorted: cupy has no repeat by array)."""
        xp = self.backend.xp
        positions = xp.arange(int(self._offsets[-1]), dtype=np.int64)
        return xp.searchsorted(self._offsets[1:], positions, side="right")

    def _run_starts(self, with_tie: bool):
        """Per sorted position: does a new run of equal (group, key[, tie]) start here?"""
        xp = self.backend.xp
        keys = self._keys[self._key_type.tick_ns]
        m = len(keys)
        new = xp.ones(m, dtype=bool)
        if m > 1:
            g = self._group_of_position()
            new[1:] = (g[1:] != g[:-1]) | _differs(keys[1:], keys[:-1], xp)
            if with_tie and self._tie_sorted is not None:
                t, valid = self._tie_sorted
                new[1:] |= _differs(t[1:], t[:-1], xp)
                if valid is not None:
                    new[1:] |= valid[1:] != valid[:-1]
        return new

    def _first_of_best_tie(self):
        """The row a forward pick takes at each key run's start: the first row (in the
        caller's order) among those with the run's largest tie-break value."""
        xp = self.backend.xp
        key_new = self._run_starts(with_tie=False)
        tie_new = self._run_starts(with_tie=True)
        m = len(key_new)
        # The start of the tie run each position belongs to: the latest tie_new at or before.
        tie_start = xp.flatnonzero(tie_new)[xp.cumsum(tie_new) - 1]
        key_end = xp.ones(m, dtype=bool)
        key_end[:-1] = key_new[1:]
        rows_first = self._rows_last.copy()
        rows_first[xp.flatnonzero(key_new)] = self._rows_last[tie_start[xp.flatnonzero(key_end)]]
        return rows_first

    def _duplicated_rows(self):
        """Per right row (caller's numbering): whether another row shares its match key."""
        if self._duplicated is None:
            xp = self.backend.xp
            new = self._run_starts(with_tie=True)
            m = len(new)
            shared = xp.zeros(m, dtype=bool)
            if m > 1:
                shared[:-1] |= ~new[1:]
                shared[1:] |= ~new[1:]
            duplicated = xp.zeros(self.n_right, dtype=bool)
            duplicated[self._rows_last] = shared
            # Kept only once whole: a thread probing meanwhile (or a pickle taken then) must
            # never read a table still all False, which says no key is ambiguous.
            self._duplicated = duplicated
        return self._duplicated

    def _keys_at(self, tick_ns: int):
        """The sorted right keys at a finer tick (cached), for a left side of a finer unit."""
        keys = self._keys
        if tick_ns not in keys:
            coarse = Key(keys[self._key_type.tick_ns], None, self._key_type)
            finer = rescale(coarse, tick_ns, "right_on", self.backend.xp).values
            # A new dict, not an entry added: a pickle taken by another thread meanwhile
            # iterates the old one ("dictionary changed size during iteration").
            self._keys = keys = {**keys, tick_ns: finer}
        return keys[tick_ns]

    def last_rows(self) -> GatherMap:
        """Each group's last row (largest key; of equal keys, the last in row order), in row
        order: what a backward join takes for a key above them all (a window's carry).

        >>> AsofJoin(np.array([1, 5, 5, 2]), np.array(["a", "a", "a", "b"]), device="cpu").last_rows().tolist()
        [2, 3]
        """
        self._sort_deferred()
        xp = self.backend.xp
        ends = self._offsets[1:]
        ends = ends[ends > self._offsets[:-1]]  # the non-empty groups
        return xp.sort(self._rows_last[ends - 1])

    # ------------------------------------------------------------------ probing

    def join(
        self,
        left_on: Column,
        left_by: ByColumns | None = None,
        *,
        strategy: StrategyName = "backward",
        allow_exact_matches: bool = True,
        tolerance: RowTolerance | None = None,
        nearest_tie: Literal["forward", "backward"] = "forward",
        ambiguous: Literal["pick", "raise"] = "pick",
    ) -> GatherMap:
        """The gather map: for each left row (in left order), a right row number or NO_MATCH.

        ``tolerance`` is inclusive: a number in the physical unit of the prepared right key
        (``right_on``'s unit, whatever the left's), or a ``timedelta`` / ``numpy.timedelta64``;
        or a column of them, one per left row (numbers, or durations for temporal keys; a null
        entry: no limit), which the kernels compare each candidate with, as they read its key;
        or ``Reaches``, a column for each direction (a nearest
        join checks each side's candidate against its own); or a calendar duration
        (``"1mo"``, ``asofgpu._calendar``), which becomes one.
        ``nearest_tie`` is "forward" (polars: ties go to the larger key, whose last row wins)
        or "backward" (pandas: ties go to the smaller key; a forward pick takes its first row).
        ``ambiguous="raise"`` raises AmbiguousMatchError when the chosen key has several rows.
        """
        strategy = _validate.strategy(strategy)
        exact = _validate.flag(allow_exact_matches, "allow_exact_matches")
        _validate.one_of(nearest_tie, "nearest_tie", ("forward", "backward"))
        _validate.one_of(ambiguous, "ambiguous", ("pick", "raise"))
        left_key = ordered_key(left_on, "left_on", self._host)
        tick = common_tick(left_key.type, self._key_type, "left_on", "right_on")
        if is_calendar(tolerance, zoned=clock_changes(self._key_type.tz)):
            tolerance = self._calendar_reaches(left_on, left_key, tolerance, strategy)
        elif isinstance(tolerance, str):  # a duration without calendar units: fixed
            tolerance = fixed_duration(tolerance)
        rules = _Rules(strategy, exact, nearest_tie, ambiguous)
        return self._probe(left_key, tick, left_by, tolerance, rules)

    def _probe(self, left_key: Key, tick: int, left_by, tolerance, rules: "_Rules"):
        """``join`` of a left key read by ``ordered_key``, at ``tick`` (``common_tick``),
        with a fixed tolerance, a column of them, or ``Reaches``: the kernels compare each
        candidate with its row's own reach in its direction."""
        be, xp = self.backend, self.backend.xp
        n = len(left_key.values)
        left_key = rescale(left_key, tick, "left_on", xp)
        if isinstance(tolerance, Reaches) and rules.strategy != "nearest":
            tolerance = getattr(tolerance, rules.strategy)  # a one-way join: its direction's
        tol, reaches = None, None
        if isinstance(tolerance, Reaches):
            reaches = [
                self._row_limits(r, tick, n) for r in (tolerance.backward, tolerance.forward)
            ]
        elif is_row_tolerances(tolerance) or isinstance(tolerance, RowTicks):
            reaches = [self._row_limits(tolerance, tick, n)] * 2  # the same reach both ways
        else:
            tol = tolerance_in_ticks(tolerance, self._key_type, tick)
        groups = self._left_groups(left_by, n)
        if left_key.valid is not None:
            groups = xp.where(left_key.valid, groups, -1).astype(np.int32, copy=False)
        out = be.empty(n, self.map_dtype)
        is_float = self._key_type.physical == "float"
        how = options(
            is_float,
            STRATEGY_CODE[rules.strategy],
            rules.exact,
            tol,
            rules.tie_code,
            out.dtype,
            reaches,
            xp,
        )
        # A small join run as plain Python probes after a sort, as the python backend does.
        unsorted = self._unsorted  # (read once: another thread may sort it meanwhile)
        if (
            unsorted is not None
            and rules.ambiguous == "pick"
            and not be.interprets(n + self.n_right)
            and not self._sorts_first(*unsorted)
        ):
            key, bucket = unsorted
            if tick and bucket is not None:  # rows without a group are never read: unchecked
                key = Key(key.values, bucket < self.n_groups, key.type, key.ascends)
            right = rescale(key, tick, "right_on", xp) if tick else key
            be.scan(
                is_float,
                left_key.values,
                groups,
                right.values,
                bucket,
                self.n_groups,
                how,
                out,
                # (where _sorts_first's _ascending found every right row in order, the scan
                # need not check them again)
                keys_ascend=(left_key.ascends, right.ascends or bool(self._key_ascends)),
            )
            return out
        self._sort_deferred()
        right_keys = self._keys_at(tick) if tick else self._keys[self._key_type.tick_ns]
        be.probe(
            is_float,
            left_key.values,
            groups,
            Right(self._offsets, right_keys, self._rows_last, self._rows_first),
            how,
            out,
            time_ordered=self._time_ordered if tick == self._key_type.tick_ns else None,
            keys_ascend=left_key.ascends,
        )
        if rules.ambiguous == "raise":
            self._raise_if_ambiguous(out)
        return out

    def _calendar_reaches(self, left_on, left_key: Key, tolerance: str, strategy: str):
        """A calendar tolerance (``asofgpu._calendar``) as each left row's own reach, from
        its key by calendar arithmetic: the strategy's direction as a column of tolerances,
        or both directions (``Reaches``) for a nearest join. Counted where the keys lie
        (``Backend.calendar_reaches``) where every day lasts 24 hours, by polars on the host
        elsewhere."""
        directions = ("backward", "forward") if strategy == "nearest" else (strategy,)
        values = left_key.values
        if left_key.valid is not None:  # a null key's value is whatever its slot holds
            values = self.backend.xp.where(left_key.valid, values, 0)
        counted = fixed_day_ticks(
            tolerance.strip(), left_key.type, directions, self.backend, values
        )
        if counted is None:  # polars counts them (and refuses what it cannot read)
            if isinstance(left_on, Key):
                msg = "a calendar tolerance needs left_on as a column, not a kernel-ready Key"
                raise TypeError(msg)
            counted = reaches(tolerance, to_arrow(left_on, "left_on"), "left_on", directions)
        return counted[0] if strategy != "nearest" else Reaches(*counted)

    def _row_limits(self, column, tick: int, n: int):
        """A column of tolerances on the probe's scale (``row_tolerances``, or ``RowTicks``
        as the calendar kernel counted them)."""
        if isinstance(column, RowTicks):
            return column.at(tick or self._key_type.tick_ns, n, self._host)
        return row_tolerances(column, self._key_type, tick, n, self._host)

    def windows(
        self,
        left_on: Column,
        left_by: ByColumns | None = None,
        *,
        before: RowTolerance | str,
        after: RowTolerance | str = 0,
        prevailing: bool = False,
    ) -> Windows:
        """Each left row's window (the window join, kdb+'s ``wj``): the right rows of its
        group whose key lies in ``[x - before, x + after]`` for its key x, both ends
        inclusive, as a range of positions in the prepared order (see ``asofgpu.window``):
        by key, then in input order (by ``tie_break`` where the join was prepared with one).

        ``before`` and ``after`` are non-negative, of the kinds ``tolerance`` takes: numbers
        in ``right_on``'s unit, timedeltas, duration strings (``"5s"``; calendar ones such as
        ``"1mo"`` measured from each left key), or a column of one per left row (a null: no
        limit that way, as in a column of tolerances); on integer and temporal keys they
        count whole ticks (a fraction is dropped). ``prevailing=True``
        (kdb+'s ``wj`` rather than ``wj1``) also takes the state on entering the window: the
        last right row below ``x - before`` when the group has one, unless a key lies exactly
        at ``x - before`` (that row is the state, in the window already).
        Left rows with a null key, a null group (unless prepared with
        ``null_equality="equal"``) or a group the right side lacks get empty windows; right
        rows with a null key are in none.

        >>> j = AsofJoin(np.array([1, 2, 4, 7]), device="cpu")
        >>> w = j.windows(np.array([5, 4]), before=2, prevailing=True)
        >>> [w.rows[w.starts[i]:w.ends[i]].tolist() for i in range(2)]
        [[1, 2], [1, 2]]
        """
        check_reaches_given(before, after)
        prevailing = _validate.flag(prevailing, "prevailing")
        be, xp = self.backend, self.backend.xp
        left_key = ordered_key(left_on, "left_on", self._host)
        n = len(left_key.values)
        tick = common_tick(left_key.type, self._key_type, "left_on", "right_on")
        left_key = rescale(left_key, tick, "left_on", xp)
        is_float = self._key_type.physical == "float"
        before, befores = self._reach(before, "before", left_on, tick, n)
        after, afters = self._reach(after, "after", left_on, tick, n)
        reach = Bounds(before, after, prevailing, befores, afters)
        groups = self._left_groups(left_by, n)
        if left_key.valid is not None:
            groups = xp.where(left_key.valid, groups, -1).astype(np.int32, copy=False)
        self._sort_deferred()
        right_keys = self._keys_at(tick) if tick else self._keys[self._key_type.tick_ns]
        starts, ends = be.empty(n, np.int64), be.empty(n, np.int64)
        be.window_bounds(
            is_float,
            left_key.values,
            groups,
            Right(self._offsets, right_keys, self._rows_last, self._rows_first),
            reach,
            starts,
            ends,
        )
        return Windows(be, starts, ends, self._rows_last, self.no_match, self.n_right)

    def _reach(self, value, param: str, left_on, tick: int, n: int):
        """A window's ``before`` or ``after`` as the kernel takes it: (one reach, or 0 and an
        array of one per left row: a column of them, or a calendar duration's from each key
        by polars' offset_by, backward for ``before``, forward for ``after``)."""
        kind = np.float64 if self._key_type.physical == "float" else np.uint64
        if is_calendar(value, zoned=clock_changes(self._key_type.tz)):
            direction = "backward" if param == "before" else "forward"
            keys = to_arrow(left_on, "left_on")
            (value,) = row_reaches(value, keys, "left_on", (direction,), param)
        elif isinstance(value, str):
            value = fixed_duration(value, param)
        if is_row_tolerances(value):
            return kind(0), row_tolerances(value, self._key_type, tick, n, self._host, param)
        reach = tolerance_in_ticks(value, self._key_type, tick, param)
        return kind(reach), self.backend.xp.zeros(0, dtype=kind)

    def _left_groups(self, left_by, n: int):
        xp = self.backend.xp
        if isinstance(self._groups, GroupCodes):  # encoded by the caller, as right_by was
            if not isinstance(left_by, GroupCodes):
                msg = f"left_by must be GroupCodes, as right_by was, got {type(left_by).__name__}"
                raise TypeError(msg)
            _validate.same_length(n, len(left_by.codes), "left_by", "left_on")
            if left_by.n_groups != self._groups.n_groups:  # its codes were checked against it
                msg = (
                    f"left_by's GroupCodes number {left_by.n_groups} groups, right_by's "
                    f"{self._groups.n_groups}: both sides must be numbered by the right's groups"
                )
                raise ValueError(msg)
            codes = self.backend.asarray(left_by.codes)
            if self._renumber is not None:
                codes = xp.where(codes >= 0, self._renumber[codes], -1)
            return codes.astype(np.int32, copy=False)
        given = by_columns(left_by, "left_by")
        if self._groups is None:
            if given:
                msg = "left_by was given but the right side has no right_by; pass both or neither"
                raise ValueError(msg)
            return xp.zeros(n, dtype=np.int32)
        if not given:
            msg = "left_by is required: the right side was prepared with right_by"
            raise ValueError(msg)
        params = [f"left_by[{i}]" for i in range(len(given))]
        if isinstance(self._groups, SortedGroups):
            found = [on_device(c, p, xp) for c, p in zip(given, params)]
            columns, dtypes = [a for a, _ in found], [d for _, d in found]
        else:
            columns, dtypes = [to_arrow(c, p) for c, p in zip(given, params)], None
        for col, param in zip(columns, params):
            _validate.same_length(n, len(col), param, "left_on")
        codes = (
            self._groups.lookup(columns, params, dtypes)
            if dtypes is not None
            else self._groups.lookup(columns, params)
        )
        codes = self.backend.asarray(codes)
        if self._renumber is not None:
            codes = self.backend.xp.where(codes >= 0, self._renumber[codes], -1)
        return codes.astype(np.int32, copy=False)

    def _raise_if_ambiguous(self, gmap) -> None:
        xp = self.backend.xp
        matched = xp.flatnonzero(gmap != self.no_match)
        hits = self._duplicated_rows()[gmap[matched]]
        if len(hits) and bool(hits.any()):
            row = int(matched[int(xp.argmax(hits))])
            count = int(hits.sum())
            msg = (
                f"ambiguous='raise': left row {row} (and {count - 1} more) matched a key that "
                f"has several right rows in its group. Hint: pass tie_break= to pick one, or "
                f"ambiguous='pick' to take the last (backward) or first (forward) row."
            )
            raise AmbiguousMatchError(msg)


@dataclass(frozen=True)
class _OnDevice:
    """A device array's values, pickled on the host."""

    host: np.ndarray


def _map_arrays(value, f):
    """``value`` with ``f`` applied to every array in it, through dicts, lists, tuples and
    ``Key``s (the containers an AsofJoin keeps arrays in)."""
    if isinstance(value, dict):
        return {k: _map_arrays(v, f) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_map_arrays(v, f) for v in value)
    if isinstance(value, Key):
        values, valid = _map_arrays(value.values, f), _map_arrays(value.valid, f)
        return Key(values, valid, value.type, value.ascends)  # the same values, moved
    if isinstance(value, GroupCodes):
        return GroupCodes(_map_arrays(value.codes, f), value.n_groups)
    return f(value)


_HEAD_ROWS = 4096  # the rows ``AsofJoin._ascending`` checks before all of them


def less_in_total_order(a, b, xp, is_float: bool):
    """Elementwise a < b in asofgpu's total order (NaN above +inf)."""
    if not is_float:
        return a < b
    return (a < b) | (xp.isnan(b) & ~xp.isnan(a))


def _differs(a, b, xp):
    if a.dtype.kind != "f":
        return a != b
    return (a != b) & ~(xp.isnan(a) & xp.isnan(b))


def asof_join(
    left_on: Column,
    right_on: Column,
    left_by: ByColumns | None = None,
    right_by: ByColumns | None = None,
    *,
    null_equality: Literal["unequal", "equal"] = "unequal",
    tie_break: Column | None = None,
    presorted: bool = False,
    device: DeviceName = "auto",
    strategy: StrategyName = "backward",
    allow_exact_matches: bool = True,
    tolerance: RowTolerance | None = None,
    nearest_tie: Literal["forward", "backward"] = "forward",
    ambiguous: Literal["pick", "raise"] = "pick",
) -> GatherMap:
    """One-shot gather map: ``AsofJoin(right_on, right_by, ...).join(left_on, left_by, ...)``;
    the parameters are those of ``AsofJoin`` and ``AsofJoin.join``.

    >>> import numpy as np
    >>> asof_join(np.array([0, 5, 8]), np.array([1, 4, 7]), strategy="nearest", device="cpu").tolist()
    [0, 1, 2]
    """
    if _validate.device(device) == "auto" and (is_device(left_on) or is_device(right_on)):
        device = "cuda"
    prepared = AsofJoin(
        right_on,
        right_by,
        null_equality=null_equality,
        tie_break=tie_break,
        presorted=presorted,
        device=device,
        _defer_sort=True,
    )
    return prepared.join(
        left_on,
        left_by,
        strategy=strategy,
        allow_exact_matches=allow_exact_matches,
        tolerance=tolerance,
        nearest_tie=nearest_tie,
        ambiguous=ambiguous,
    )


def windows_once(left_on, left_by, right_on, right_by, *, before, after, prevailing, device):
    """One call's windows: ``AsofJoin(right_on, right_by).windows(left_on, left_by, ...)``,
    the right side prepared for this call only, so its sort by group waits for the windows
    (and copies nothing); the front ends' window joins.

    >>> w = windows_once(np.array([5]), None, np.array([1, 2, 4, 7]), None, before=2, after=0,
    ...                  prevailing=False, device="cpu")
    >>> w.rows[w.starts[0]:w.ends[0]].tolist()
    [2]
    """
    prepared = AsofJoin(right_on, right_by, device=device, _defer_sort=True)
    return prepared.windows(left_on, left_by, before=before, after=after, prevailing=prevailing)
