"""The splice join (QuestDB's SPLICE JOIN, "a full as-of join"), as two gather maps.

Every left row and every right row appears once, on one timeline, beside the row of the other
side that prevailed at its key in its ``by`` group. Output row ``i`` is the pair
``(left_map[i], right_map[i])``; the side that drives the row gives its own row number, the
other side its prevailing row or ``NO_MATCH``.

How it is built: two backward as-of joins (left probing right, right probing left), then one
merge of the two sides in key order. Each side is stable-sorted by key (skipped when it is
time-sorted already, as readers give it), and the backend merges them straight into the two
maps (``Backend.splice_merge``): on the CPU one pass over both sides, a piece a thread
(``kernels/splice.py``); on the GPU each row's place is its rank in its side plus the rows of
the other side before it (two ``searchsorted``). Never a sort of the concatenation. Rows with a
null key come last, left before right, in input order, and match nothing.

>>> import numpy as np
>>> buys = np.array([0.039906, 0.343909])
>>> sells = np.array([0.222534, 0.222534])
>>> left_map, right_map = splice_maps(buys, sells, device="cpu")
>>> left_map.tolist(), right_map.tolist()
([0, 0, 0, 1], [-2147483648, 0, 1, 1])
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from . import _validate
from ._backend import get_backend
from ._columns import (
    Key,
    Ticks,
    common_tick,
    is_device,
    is_row_tolerances,
    ordered_key,
    rescale,
    to_arrow,
    tolerance_in_ticks,
)
from ._encode import Groups
from ._types import ByColumns, Column, DeviceName, GatherMap, Tolerance
from ._calendar import fixed as fixed_duration
from ._calendar import clock_changes, is_calendar, row_reaches
from .join import AsofJoin, GroupCodes, by_columns, less_in_total_order


def splice_maps(
    left_on: Column,
    right_on: Column,
    left_by: ByColumns | None = None,
    right_by: ByColumns | None = None,
    *,
    null_equality: Literal["unequal", "equal"] = "unequal",
    allow_exact_matches: bool = True,
    tolerance: Tolerance | None = None,
    device: DeviceName = "auto",
) -> tuple[GatherMap, GatherMap]:
    """The splice join's two gather maps, each of ``n_left + n_right`` entries: the left row
    and the right row of each output row, ``NO_MATCH`` where there is none.

    Output rows are in key order (the driving row's key; at equal keys left rows first, each
    side in its input order; null keys last). A left-driven row carries the prevailing right
    row of its group: the one a backward ``asof_join`` picks (the last of the largest key
    ``<=`` its key, ``<`` with ``allow_exact_matches=False``, within ``tolerance``). A
    right-driven row carries the prevailing left row the same way. ``tolerance`` is in the
    physical unit of ``right_on``, or a duration, as ``asof_join`` takes it. Each map is int32
    (sentinel ``NO_MATCH``) when its side has fewer than 2**31 rows, else int64
    (``NO_MATCH_INT64``); numpy on the host backends, cupy on cuda.
    """
    if _validate.device(device) == "auto" and (is_device(left_on) or is_device(right_on)):
        device = "cuda"
    backend = get_backend(device)
    exact = _validate.flag(allow_exact_matches, "allow_exact_matches")
    _validate.one_of(null_equality, "null_equality", ("unequal", "equal"))
    host = backend.xp is np
    left_key = ordered_key(left_on, "left_on", host)
    right_key = ordered_key(right_on, "right_on", host)
    tick = common_tick(left_key.type, right_key.type, "left_on", "right_on")
    if is_row_tolerances(tolerance):
        msg = (
            "splice_join (and splice_maps) takes one tolerance for both sides, got a column: a "
            "tolerance per row is AsofJoin.join's, asof_join's and join_asof's"
        )
        raise TypeError(msg)
    if is_calendar(tolerance, zoned=clock_changes(right_key.type.tz)):
        # Each driving row's own reach back from its key (polars' offset_by), both ways.
        reach = {
            side: row_reaches(tolerance, to_arrow(column, side), side)[0]
            for side, column in (("left_on", left_on), ("right_on", right_on))
        }
    else:
        if isinstance(tolerance, str):
            tolerance = fixed_duration(tolerance)
        ticks = tolerance_in_ticks(tolerance, right_key.type, tick)
        reach = dict.fromkeys(
            ("left_on", "right_on"), None if ticks is None else Ticks(ticks, tick)
        )
    options = dict(
        allow_exact_matches=exact,
        null_equality=null_equality,
        device=backend.name,
    )
    # The keys are read once and handed to both joins as they are (``ordered_key`` passes a
    # Key through), and so are the by-keys, encoded once (``_shared_codes``); otherwise the
    # left-probes-right join runs first, so that its checks (by-columns given on both sides,
    # their types, lengths) name the parameters as the caller gave them.
    left_by, right_by = _shared_codes(
        left_by, right_by, null_equality, len(left_key.values), len(right_key.values)
    )
    right_of_left = _backward(left_key, right_key, left_by, right_by, reach["left_on"], options)
    left_of_right = _backward(right_key, left_key, right_by, left_by, reach["right_on"], options)

    xp = backend.xp
    left_key = rescale(left_key, tick, "left_on", xp) if tick else left_key
    right_key = rescale(right_key, tick, "right_on", xp) if tick else right_key
    left_rows, left_sorted, left_unkeyed = _key_order(left_key, backend)
    right_rows, right_sorted, right_unkeyed = _key_order(right_key, backend)
    n_left, n_right = len(left_key.values), len(right_key.values)
    left_map = backend.empty(n_left + n_right, left_of_right.dtype)
    right_map = backend.empty(n_left + n_right, right_of_left.dtype)
    backend.splice_merge(
        left_key.type.physical == "float",
        left_sorted,
        left_rows,
        right_of_left,
        right_sorted,
        right_rows,
        left_of_right,
        left_map,
        right_map,
    )
    # Rows without a key: left then right, in input order, beside nothing.
    start = len(left_sorted) + len(right_sorted)
    middle = start + len(left_unkeyed)
    left_map[start:middle] = left_unkeyed
    right_map[start:middle] = np.iinfo(right_map.dtype).min  # NO_MATCH of the map's width
    left_map[middle:] = np.iinfo(left_map.dtype).min
    right_map[middle:] = right_unkeyed
    return left_map, right_map


def _shared_codes(left_by, right_by, null_equality: str, n_left: int, n_right: int):
    """Both sides' host by-columns as ``GroupCodes`` numbered by the right side's groups,
    encoded once: the right side's dictionary and the left's lookup serve both joins, where
    each join would build its own (the reverse one hashing the left side again, 0.1 s of a
    10M x 10M splice). Anything else (no by-keys, codes already, device arrays, a column
    count or length that does not fit) is returned as it is, for the joins to take or
    refuse."""
    if isinstance(left_by, GroupCodes) or isinstance(right_by, GroupCodes):
        return left_by, right_by
    left, right = by_columns(left_by, "left_by"), by_columns(right_by, "right_by")
    if not left or len(left) != len(right) or any(is_device(c) for c in left + right):
        return left_by, right_by
    sides = []
    for given, side, n, key in (
        (right, "right", n_right, "right_on"),
        (left, "left", n_left, "left_on"),
    ):
        params = [f"{side}_by[{i}]" for i in range(len(given))]
        columns = [to_arrow(c, p) for c, p in zip(given, params)]
        for column, param in zip(columns, params):
            _validate.same_length(n, len(column), param, key)
        sides.append((columns, params))
    groups = Groups(*sides[0], null_equality == "equal")
    left_codes = groups.lookup(*sides[1]).astype(np.int32, copy=False)
    right_codes = groups.right_codes.astype(np.int32, copy=False)
    return GroupCodes(left_codes, groups.n_groups), GroupCodes(right_codes, groups.n_groups)


def _backward(probe_key: Key, prepared_key: Key, probe_by, prepared_by, tolerance, options: dict):
    """A backward as-of join of ``probe_key``'s rows into ``prepared_key``'s rows, within
    ``tolerance`` (one, already on the kernel's scale, or a column of one per probing row)."""
    prepared = AsofJoin(
        prepared_key,
        prepared_by,
        null_equality=options["null_equality"],
        device=options["device"],
        _defer_sort=True,
    )
    return prepared.join(
        probe_key,
        probe_by,
        strategy="backward",
        allow_exact_matches=options["allow_exact_matches"],
        tolerance=tolerance,
    )


def _key_order(key: Key, backend):
    """The rows with a key in stable key order (none at all: every row, in row order), their
    keys, and the rows without a key."""
    xp = backend.xp
    values = key.values
    is_float = key.type.physical == "float"
    none = xp.zeros(0, dtype=np.int64)
    if key.valid is None:
        keyed, unkeyed = none, none
    else:
        keyed = xp.flatnonzero(key.valid)
        unkeyed = xp.flatnonzero(~key.valid)
        values = values[keyed]
    if len(values) > 1 and bool(less_in_total_order(values[1:], values[:-1], xp, is_float).any()):
        order = backend.stable_argsort(values)
        values = values[order]
        keyed = order if key.valid is None else keyed[order]
    return keyed, values, unkeyed  # keyed empty: time-sorted already, as readers give it
