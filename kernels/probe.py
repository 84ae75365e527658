"""``probe_row``: one left row's as-of match, written into the gather map.

The right side arrives prepared, as a ``Right``: keys sorted by (group, key) with group ``g``
occupying ``[offsets[g], offsets[g + 1])``, and two arrays translating a sorted position back
to the caller's right row number: ``rows_last`` (the row a backward pick takes among equal
keys, the last) and ``rows_first`` (the row a forward pick takes, the first; the same array
unless a tie-break column reorders equal keys). Applying them here saves a pass over the map.
The join's options arrive as one ``Options``. Every kernel takes these two bundles (and the
walks a ``Walk`` per side), so that each argument list says what it is in a few names.
"""

import collections

from . import bind, search

#: The prepared right side (see above).
Right = collections.namedtuple("Right", "offsets keys rows_last rows_first")
#: The join's options: ``strategy`` (BACKWARD, FORWARD or NEAREST), ``exact`` (exact matches
#: allowed), ``has_tol`` and ``tol`` (the tolerance, float64 for float keys, else uint64);
#: ``back_tols`` and ``forward_tols``, when not empty, each left row's own reach back and
#: ahead in place of ``tol`` (a column of tolerances, or a calendar one: 2024-03-31 reaches
#: 31 days back by "1mo" and 30 ahead); ``nearest_tie`` (TIE_TO_BACKWARD or TIE_TO_FORWARD)
#: and ``no_match`` (the map's sentinel). ``asofgpu._backend.options`` makes them, typed
#: alike for every call.
Options = collections.namedtuple(
    "Options", "strategy exact has_tol tol back_tols forward_tols nearest_tie no_match"
)
#: Rows in walk (key) order: their ``keys`` and group codes (``groups``), and the caller's row
#: number of each (``rows``).
Walk = collections.namedtuple("Walk", "keys groups rows")

BACKWARD, FORWARD, NEAREST = 0, 1, 2
TIE_TO_BACKWARD, TIE_TO_FORWARD = 0, 1  # pandas' and polars' nearest rules
less = lower_bound = upper_bound = gap = decide = pick = end_of_run = None  # by build()


def probe_row(i, left_keys, left_groups, right, how, out):
    g = left_groups[i]
    if g < 0:  # null key, null group under "unequal", or a group the right lacks
        out[i] = how.no_match
        return
    lo = right.offsets[g]
    hi = right.offsets[g + 1]
    x = left_keys[i]
    # b: last position with key <= x (< x when not exact); f: first with key >= x (> x).
    b = lo - 1
    f = hi
    if how.strategy != FORWARD:
        if how.exact:
            b = upper_bound(right.keys, lo, hi, x) - 1
        else:
            b = lower_bound(right.keys, lo, hi, x) - 1
    if how.strategy == FORWARD:
        if how.exact:
            f = lower_bound(right.keys, lo, hi, x)
        else:
            f = upper_bound(right.keys, lo, hi, x)
    elif how.strategy == NEAREST:
        # Past b, not searched again: with exact matches every key after b is above x, so f
        # is b + 1 (when b holds x itself, f lies after x's run, and both nearest rules then
        # take b's row, the last of x's run, as they would anyway); without, the keys after b
        # are at least x, and only a run of x itself is walked past. A second binary
        # search from b missed the cache at nearly every level, for an answer next door.
        f = b + 1
        if not how.exact and f < hi and not less(x, right.keys[f]):
            f = end_of_run(right.keys, f, hi)  # galloping past x's run, as the cursors do
    pick(i, x, b, f, lo, hi, right, how, out)


NO_PICK, PICK_BACK, PICK_FORWARD, PICK_FORWARD_LAST = 0, 1, 2, 3


def decide(i, x, has_b, b_key, has_f, f_key, how):
    """Which candidate left row i, with key x, takes: its backward one (key b_key; PICK_BACK:
    the last row of that key), its forward one (f_key; PICK_FORWARD: the first row of that
    key, PICK_FORWARD_LAST: the last, polars' nearest rule), or none (NO_PICK). A missing
    candidate's key may be anything of the keys' type (x, say): its gap is computed, and may
    be NaN or wrapped, but ``has_b`` and ``has_f`` keep it from deciding anything. Under a
    tolerance each candidate must lie within its own direction's reach, and nearest takes
    the closer of those left (with one reach both ways, the same as checking the closer).
    The one place these rules exist: ``pick`` (every probe) and ``scan.choose`` (the
    one-shot merge scan) both ask here.

    Written as selects, not branches: which candidate is closer is a coin toss on market
    data, and a branch on it mispredicts half the time. With the tolerance's and the tie's
    branches around it, numba's compiler branched: the one-group merge scan's nearest took
    20 ms against 9 (1M x 1M, one thread)."""
    strategy = how.strategy
    has_b = has_b & (strategy != FORWARD)
    has_f = has_f & (strategy != BACKWARD)
    back_gap = gap(b_key, x)
    fwd_gap = gap(x, f_key)
    if how.has_tol:
        back_reach = how.back_tols[i] if len(how.back_tols) else how.tol
        fwd_reach = how.forward_tols[i] if len(how.forward_tols) else how.tol
        has_b = has_b & (not back_gap > back_reach)
        has_f = has_f & (not fwd_gap > fwd_reach)
    ties_forward = how.nearest_tie == TIE_TO_FORWARD
    closer_f = (fwd_gap < back_gap) | (ties_forward & (fwd_gap == back_gap))
    take_f = has_f & ((not has_b) | closer_f)  # nearest: the closer
    forward = (
        PICK_FORWARD_LAST  # polars: whichever key wins, its last row
        if strategy == NEAREST and ties_forward
        else PICK_FORWARD
    )
    backward = PICK_BACK if has_b else NO_PICK
    return forward if take_f else backward


def pick(i, x, b, f, lo, hi, right, how, out):
    """Write left row i's answer from its candidates in the group range [lo, hi): b, the last
    position at or before x (before, when strict; b < lo: none), and f, the first at or after
    it (after, when strict; f == hi: none). When b holds x itself, f may be x's run too or the
    run after it: every rule then takes b's row all the same."""
    has_b = b >= lo
    has_f = f < hi
    # decide reads the candidates' keys only to compare distances: otherwise, and for a
    # missing candidate, x stands in (a read the hot loops need not wait for)
    gaps = how.strategy == NEAREST or how.has_tol
    b_key = right.keys[b] if has_b and gaps else x
    f_key = right.keys[f] if has_f and gaps else x
    choice = decide(i, x, has_b, b_key, has_f, f_key, how)
    if choice == PICK_BACK:
        out[i] = right.rows_last[b]
    elif choice == PICK_FORWARD:
        out[i] = right.rows_first[f]
    elif choice == PICK_FORWARD_LAST:
        out[i] = right.rows_last[end_of_run(right.keys, f, hi) - 1]
    else:
        out[i] = how.no_match


def end_of_run(keys, f, hi):
    """The first position in [f, hi) whose key is above keys[f] (hi if none). Runs of equal
    keys are short: it gallops from f, where a binary search over [f, hi) missed the cache
    at every level (a 1M-row time-sorted nearest probe of 10M quotes: 57 -> 33 ms on the
    CPU)."""
    k = keys[f]
    step = 1
    low = f + 1  # keys before low are k
    while f + step < hi and not less(k, keys[f + step]):
        low = f + step + 1
        step <<= 1
    return upper_bound(keys, low, min(f + step, hi), k)


def build(jit, is_float, unsigned):
    """Return ``probe_row(i, left_keys, left_groups, right, how, out)``: left row i's match
    in ``right`` (a ``Right``) under ``how`` (an ``Options``), written to ``out[i]``."""
    lower, upper, gap_fn = search.build(jit, is_float, unsigned)
    names = {
        "lower_bound": lower,
        "upper_bound": upper,
        "gap": gap_fn,
        "less": jit(search.less_float if is_float else search.less_int),
    }
    names["end_of_run"] = jit(bind(end_of_run, **names))
    names["decide"] = jit(bind(decide, **names))
    names["pick"] = jit(bind(pick, **names))
    return jit(bind(probe_row, **names))
