"""The probe of a time-ordered left batch by streaming the right side in its own time order.

When the right side arrived time-sorted (quotes usually do) and every right row is in a group,
a backward probe of left rows in key order can walk both sides at once, as a merge: the right
rows up to the next left key each overwrite their group's entry of a small table, and each
left row reads its group's entry. That reads the right keys and groups front to back, which
the hardware prefetches, where the cursor probe (kernels/cursor.py) jumps between 1,000 group
ranges and waits for memory at nearly every row. It pays per right row walked, so the caller
takes it when the left batch spans few right rows per left row (``stream_span`` in
asofgpu/_backend/walks.py), but, when the right side has several groups, not so few that their
cursors would stay in cache (``stream_group_span``).

A forward probe walks both backwards. The walk splits into pieces that run in parallel; each
starts from its groups' answers for its first left key (its last, walking backwards), found
by binary search in the prepared (group, key) order. The answers are those of
``probe.probe_row``. Nearest walks each piece both ways (``stream_nearest``): up, leaving
each left row's backward candidate, then down, deciding between it and the forward one as
the merge scan does (``scan.choose``). It streams only where the right side has several
groups (``walks.streams``): one group's cursor finds both candidates side by side.
"""

import collections
from typing import NamedTuple

import numpy as np

from . import APART, bind, probe, scan, search
from .probe import BACKWARD, TIE_TO_FORWARD

#: The right side in its own row order, which is key order: its ``keys`` (ascending) and the
#: group code of each row (``groups``; every row in a group).
Tape = collections.namedtuple("Tape", "keys groups")

ZERO, ONE = np.uint64(0), np.uint64(1)

less = gap = lower_bound = upper_bound = prange = end_of_run = choose = None  # by build()
start_up = walk_up = down_from = None  # by build()


def start_up(x, tape, right, exact, latest):
    """Each group's last right row at or before ``x`` (before it, when not ``exact``) into
    ``latest`` (-1: none), by binary search in the prepared (group, key) order; returns the
    first tape position past them, where a walk up from x starts."""
    for g in range(right.offsets.size - 1):
        lo = right.offsets[g]
        hi = right.offsets[g + 1]
        b = (
            upper_bound(right.keys, lo, hi, x) if exact else lower_bound(right.keys, lo, hi, x)
        ) - 1
        latest[g] = right.rows_last[b] if b >= lo else -1
    # Rows and group codes index as uint64 (see the package's note on indices): 9 -> 6 ms.
    return np.uint64(
        upper_bound(tape.keys, 0, tape.keys.size, x)
        if exact
        else lower_bound(tape.keys, 0, tape.keys.size, x)
    )


def walk_up(x, j, tape, exact, latest):
    """The tape's rows from position ``j`` up to ``x`` (at most x, or below it), each its
    group's latest; returns the position reached."""
    n_right = np.uint64(tape.keys.size)
    if exact:
        while j < n_right and not less(x, tape.keys[j]):
            latest[np.uint64(tape.groups[j])] = j
            j += ONE
    else:
        while j < n_right and less(tape.keys[j], x):
            latest[np.uint64(tape.groups[j])] = j
            j += ONE
    return j


def down_from(x, tape, exact):
    """Where a walk down from ``x`` starts: the first tape position whose key is at least x
    (above x, when not ``exact``). The rows from it on are in the walk's starting state,
    those before it are not walked yet."""
    return np.uint64(
        lower_bound(tape.keys, 0, tape.keys.size, x)
        if exact
        else upper_bound(tape.keys, 0, tape.keys.size, x)
    )


def backward_piece(p0, p1, left, tape, right, how, latest, out):
    """Backward answers of the left walk's positions [p0, p1); ``latest``: per group, the
    last right row walked (-1: none yet)."""
    j = start_up(left.keys[p0], tape, right, how.exact, latest)
    for p in range(p0, p1):
        x = left.keys[p]
        j = walk_up(x, j, tape, how.exact, latest)
        i = np.uint64(left.rows[p])
        r = latest[np.uint64(left.groups[p])]
        reach = how.back_tols[i] if len(how.back_tols) else how.tol
        if r < 0 or (how.has_tol and gap(tape.keys[r], x) > reach):
            out[i] = how.no_match
        else:
            out[i] = r


def forward_piece(p0, p1, left, tape, right, how, earliest, out):
    """Forward answers of the left walk's positions [p0, p1), walked from the last;
    ``earliest``: per group, the first right row walked (-1: none yet)."""
    offsets, right_keys, exact = right.offsets, tape.keys, how.exact
    x = left.keys[p1 - 1]
    for g in range(offsets.size - 1):
        lo = offsets[g]
        hi = offsets[g + 1]
        f = lower_bound(right.keys, lo, hi, x) if exact else upper_bound(right.keys, lo, hi, x)
        earliest[g] = right.rows_first[f] if f < hi else -1
    j = down_from(x, tape, exact)
    for p in range(p1 - 1, p0 - 1, -1):
        x = left.keys[p]
        if exact:
            while j > ZERO and not less(right_keys[j - ONE], x):
                j -= ONE
                earliest[np.uint64(tape.groups[j])] = j
        else:
            while j > ZERO and less(x, right_keys[j - ONE]):
                j -= ONE
                earliest[np.uint64(tape.groups[j])] = j
        i = np.uint64(left.rows[p])
        r = earliest[np.uint64(left.groups[p])]
        reach = how.forward_tols[i] if len(how.forward_tols) else how.tol
        if r < 0 or (how.has_tol and gap(x, right_keys[r]) > reach):
            out[i] = how.no_match
        else:
            out[i] = r


def nearest_back_piece(p0, p1, left, tape, right, how, latest, back_row, back_key):
    """``backward_piece``'s walk for nearest: each left position's backward candidate, its
    row (-1: none) and key, left in ``back_row`` and ``back_key`` for the walk down."""
    j = start_up(left.keys[p0], tape, right, how.exact, latest)
    for p in range(p0, p1):
        x = left.keys[p]
        j = walk_up(x, j, tape, how.exact, latest)
        r = latest[np.uint64(left.groups[p])]
        back_row[p] = r
        back_key[p] = tape.keys[np.uint64(r)] if r >= 0 else x


def nearest_forward_piece(
    p0, p1, left, tape, right, how, earliest, first_key, run_last, back_row, back_key, out
):
    """``forward_piece``'s walk for nearest, down from the piece's last left position: per
    group the first right row walked (``earliest``, -1: none), its key (``first_key``) and,
    for polars' rule (a tie goes forward, to the last row of the winning key), the last row
    of that key's run (``run_last``); each left position decides between its two candidates
    (``scan.choose``)."""
    offsets, right_keys, exact = right.offsets, tape.keys, how.exact
    runs = how.nearest_tie == TIE_TO_FORWARD
    x = left.keys[p1 - 1]
    for g in range(offsets.size - 1):
        lo = offsets[g]
        hi = offsets[g + 1]
        f = lower_bound(right.keys, lo, hi, x) if exact else upper_bound(right.keys, lo, hi, x)
        earliest[g] = -1
        if f < hi:
            earliest[g] = right.rows_first[f]
            first_key[g] = right.keys[f]
            run_last[g] = right.rows_last[end_of_run(right.keys, f, hi) - 1] if runs else -1
    j = down_from(x, tape, exact)
    for p in range(p1 - 1, p0 - 1, -1):
        x = left.keys[p]
        while j > ZERO:
            if exact:
                if less(right_keys[j - ONE], x):
                    break
            elif not less(x, right_keys[j - ONE]):
                break
            j -= ONE
            g = np.uint64(tape.groups[j])
            k = right_keys[j]
            if runs:  # a smaller key starts a new run, whose last row is this one
                new_run = earliest[g] < 0 or less(k, first_key[g])
                # (signed: numba unifies uint64 and a signed value as float64)
                run_last[g] = np.int64(j) if new_run else run_last[g]
            earliest[g] = j
            first_key[g] = k
        g = np.uint64(left.groups[p])
        i = np.uint64(left.rows[p])
        out[i] = choose(i, x, back_row[p], back_key[p], earliest[g], first_key[g], run_last[g], how)


def stream_nearest(left, tape, right, how, n_pieces, back_row, back_key, out):
    """``stream_probe`` for the nearest strategy: each piece walked up and then down;
    ``back_row`` and ``back_key``, one entry a left position, hold the candidates between
    the two walks (the caller's pooled pages: fresh ones would fault at every probe)."""
    n = left.rows.size
    if n < out.size:
        out[:] = how.no_match
    width = right.offsets.size - 1 + APART
    latest = np.empty((n_pieces, width), out.dtype)
    first_key = np.empty((n_pieces, width), tape.keys.dtype)
    run_last = np.empty((n_pieces, width), out.dtype)
    for t in prange(n_pieces):
        p0 = t * n // n_pieces
        p1 = (t + 1) * n // n_pieces
        if p0 < p1:
            nearest_back_piece(p0, p1, left, tape, right, how, latest[t], back_row, back_key)
            nearest_forward_piece(
                p0,
                p1,
                left,
                tape,
                right,
                how,
                latest[t],
                first_key[t],
                run_last[t],
                back_row,
                back_key,
                out,
            )


def stream_probe(left, tape, right, how, n_pieces, out):
    """Probe the left rows of the walk ``left`` (a ``probe.Walk``: keys ascending) against
    the ``tape`` (a ``Tape``); the prepared ``right`` (a ``probe.Right``) starts each piece. The rest of
    ``out`` (rows without a key or group) gets ``no_match``. ``how.strategy``: backward or
    forward."""
    n = left.rows.size
    if n < out.size:
        out[:] = how.no_match
    state = np.empty((n_pieces, right.offsets.size - 1 + APART), out.dtype)
    for t in prange(n_pieces):
        p0 = t * n // n_pieces
        p1 = (t + 1) * n // n_pieces
        if p0 < p1:
            if how.strategy == BACKWARD:
                backward_piece(p0, p1, left, tape, right, how, state[t], out)
            else:
                forward_piece(p0, p1, left, tape, right, how, state[t], out)


class Stream(NamedTuple):
    """The compiled walks: ``probe`` (backward or forward) and ``nearest``."""

    probe: object
    nearest: object


def build(jit, parallel_jit, is_float, unsigned, parallel_range):
    """Return the ``Stream`` walks: helpers compiled with ``jit``, the loops over pieces
    with ``parallel_jit`` (``parallel_range``: ``numba.prange`` there, or ``range``)."""
    lower, upper, gap_fn = search.build(jit, is_float, unsigned)
    names = {
        "less": jit(search.less_float if is_float else search.less_int),
        "lower_bound": lower,
        "upper_bound": upper,
        "gap": gap_fn,
        "prange": parallel_range,
    }
    names["end_of_run"] = jit(bind(probe.end_of_run, **names))
    names["decide"] = jit(bind(probe.decide, **names))
    names["choose"] = jit(bind(scan.choose, **names))
    names["start_up"] = jit(bind(start_up, **names))
    names["walk_up"] = jit(bind(walk_up, **names))
    names["down_from"] = jit(bind(down_from, **names))
    for fn in (backward_piece, forward_piece, nearest_back_piece, nearest_forward_piece):
        names[fn.__name__] = jit(bind(fn, **names))
    return Stream(
        parallel_jit(bind(stream_probe, **names)), parallel_jit(bind(stream_nearest, **names))
    )
