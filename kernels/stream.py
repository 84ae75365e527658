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
``probe.probe_row`` for the backward and forward strategies (nearest is not streamed).
"""

import collections

import numpy as np

from . import APART, bind, search
from .probe import BACKWARD

#: The right side in its own row order, which is key order: its ``keys`` (ascending) and the
#: group code of each row (``groups``; every row in a group).
Tape = collections.namedtuple("Tape", "keys groups")

ZERO, ONE = np.uint64(0), np.uint64(1)

less = gap = lower_bound = upper_bound = prange = None  # filled in by build()


def backward_piece(p0, p1, left, tape, right, how, latest, out):
    """Backward answers of the left walk's positions [p0, p1); ``latest``: per group, the
    last right row walked (-1: none yet)."""
    offsets, right_keys, exact = right.offsets, tape.keys, how.exact
    x = left.keys[p0]
    for g in range(offsets.size - 1):
        lo = offsets[g]
        hi = offsets[g + 1]
        b = (
            upper_bound(right.keys, lo, hi, x) if exact else lower_bound(right.keys, lo, hi, x)
        ) - 1
        latest[g] = right.rows_last[b] if b >= lo else -1
    n_right = np.uint64(right_keys.size)
    # The first right row past the state: rows before it are all at most x (below x). Rows
    # and group codes index as uint64 (see the package's note on indices): 9 -> 6 ms here.
    j = np.uint64(
        upper_bound(right_keys, 0, right_keys.size, x)
        if exact
        else lower_bound(right_keys, 0, right_keys.size, x)
    )
    for p in range(p0, p1):
        x = left.keys[p]
        if exact:
            while j < n_right and not less(x, right_keys[j]):
                latest[np.uint64(tape.groups[j])] = j
                j += ONE
        else:
            while j < n_right and less(right_keys[j], x):
                latest[np.uint64(tape.groups[j])] = j
                j += ONE
        i = np.uint64(left.rows[p])
        r = latest[np.uint64(left.groups[p])]
        reach = how.back_tols[i] if len(how.back_tols) else how.tol
        if r < 0 or (how.has_tol and gap(right_keys[r], x) > reach):
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
    # The right rows before ``j`` are not walked yet; those from it on are all at least x
    # (above x).
    j = np.uint64(
        lower_bound(right_keys, 0, right_keys.size, x)
        if exact
        else upper_bound(right_keys, 0, right_keys.size, x)
    )
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


def build(jit, parallel_jit, is_float, unsigned, parallel_range):
    """Return ``stream_probe``: helpers compiled with ``jit``, the loop over pieces with
    ``parallel_jit`` (``parallel_range``: ``numba.prange`` there, or ``range``)."""
    lower, upper, gap_fn = search.build(jit, is_float, unsigned)
    names = {
        "less": jit(search.less_float if is_float else search.less_int),
        "lower_bound": lower,
        "upper_bound": upper,
        "gap": gap_fn,
        "prange": parallel_range,
    }
    for fn in (backward_piece, forward_piece):
        names[fn.__name__] = jit(bind(fn, **names))
    return parallel_jit(bind(stream_probe, **names))
