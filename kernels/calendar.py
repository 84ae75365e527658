"""Calendar arithmetic for calendar tolerances (``asofgpu._calendar``): each key moved by
whole months, then by days and a fixed part, as polars' ``dt.offset_by`` moves it on keys
whose days all last 24 hours (no time zone, or a fixed offset from UTC).

A key is a count of ticks since 1970-01-01 (``ticks_per_day`` of them a day; a date's tick
is its day). Months move the civil date: the day of the month is kept, or saturates to the
month's last day (2024-03-31 less a month is 2024-02-29), and the time of day is kept.
Civil dates are counted in 400-year cycles of 146,097 days, with years starting on March 1st
so that a leap day ends its year; every division is a floor division, so dates before 1970
need no special case.
"""

import collections

from . import bind

prange = None  # filled in by build()

#: How keys move under a signed calendar duration: whole ``months`` first, then
#: ``day_ticks + fixed_ticks``; a key is ``ticks_per_day`` ticks a day, and a moved key must
#: stay within days [``lowest_day``, ``highest_day``] (its type's range).
Move = collections.namedtuple(
    "Move", "months day_ticks fixed_ticks ticks_per_day lowest_day highest_day"
)

#: Days from 0000-03-01 to 1970-01-01, in the proleptic Gregorian calendar.
EPOCH_SHIFT = 719_468
CYCLE_DAYS = 146_097  # 400 years


def civil_from_days(days):
    """(year, month 1-12, day 1-31) of a day count since 1970-01-01."""
    z = days + EPOCH_SHIFT
    cycle = z // CYCLE_DAYS
    day_of_cycle = z - cycle * CYCLE_DAYS
    year_of_cycle = (
        day_of_cycle - day_of_cycle // 1460 + day_of_cycle // 36524 - day_of_cycle // 146096
    ) // 365
    day_of_year = day_of_cycle - (365 * year_of_cycle + year_of_cycle // 4 - year_of_cycle // 100)
    march_month = (5 * day_of_year + 2) // 153  # 0: March ... 11: February
    day = day_of_year - (153 * march_month + 2) // 5 + 1
    month = march_month + 3 if march_month < 10 else march_month - 9
    year = year_of_cycle + cycle * 400 + (1 if month <= 2 else 0)
    return year, month, day


def days_from_civil(year, month, day):
    """The day count since 1970-01-01 of a civil date (``civil_from_days``' inverse)."""
    year = year - (1 if month <= 2 else 0)
    cycle = year // 400
    year_of_cycle = year - cycle * 400
    march_month = month - 3 if month > 2 else month + 9
    day_of_year = (153 * march_month + 2) // 5 + day - 1
    day_of_cycle = year_of_cycle * 365 + year_of_cycle // 4 - year_of_cycle // 100 + day_of_year
    return cycle * CYCLE_DAYS + day_of_cycle - EPOCH_SHIFT


def days_in_month(year, month):
    if month == 2:
        leap = (year % 4 == 0 and year % 100 != 0) or year % 400 == 0
        return 29 if leap else 28
    return 30 if month in (4, 6, 9, 11) else 31


def moved_day(days, months):
    """The day count of the civil date ``days`` moved by ``months`` (signed), its day of the
    month kept or saturated to the month's last day."""
    if months == 0:
        return days
    year, month, day = civil_from_days(days)
    total = year * 12 + (month - 1) + months
    year = total // 12
    month = total - year * 12 + 1
    return days_from_civil(year, month, min(day, days_in_month(year, month)))


def day_move(days, move):
    """How far, in ticks, the keys of day ``days`` move under ``move`` (a ``Move``); and
    False when moved keys would leave the type's range."""
    target = moved_day(days, move.months)
    shift = move.day_ticks + move.fixed_ticks
    moved = target + shift // move.ticks_per_day
    if days < move.lowest_day or moved < move.lowest_day or moved > move.highest_day:
        return 0, False
    return (target - days) * move.ticks_per_day + shift, True


def reach_row(i, keys, out, move):
    """Row i's reach (one GPU thread a row): the distance from its key to the key moved;
    -1 when the moved key would leave the range."""
    delta, in_range = day_move(keys[i] // move.ticks_per_day, move)
    out[i] = (-delta if delta < 0 else delta) if in_range else -1


def reaches_piece(keys, out, start, stop, move):
    """Rows [start, stop) of ``reaches``; returns how many moved keys left the range. Keys
    of one day move alike: the day's move is computed once for a run of them (time-sorted
    keys come in such runs), a division and a civil date a day rather than a row."""
    out_of_range = 0
    day_start = 1
    day_end = 0  # no day yet
    delta = 0
    for i in range(start, stop):
        x = keys[i]
        if x < day_start or x >= day_end:
            days = x // move.ticks_per_day
            day_start = days * move.ticks_per_day
            day_end = day_start + move.ticks_per_day if days < move.highest_day else day_start
            delta, in_range = day_move(days, move)
            if not in_range:
                out_of_range += 1
                day_end = day_start  # no run: the next row is looked at afresh
        out[i] = -delta if delta < 0 else delta
    return out_of_range


def reaches(keys, out, move, pieces):
    """Each key's distance to itself moved under ``move`` (a ``Move``): how far back (a
    negative duration) or ahead its bound lies, in ticks, the rows in ``pieces`` pieces.
    Returns False when some moved key leaves the type's range (``out`` then holds no
    answer)."""
    n = keys.size
    step = (n + pieces - 1) // pieces
    out_of_range = 0
    for p in prange(pieces):
        out_of_range += reaches_piece(keys, out, min(p * step, n), min((p + 1) * step, n), move)
    return out_of_range == 0


def _helpers(jit):
    helpers = {
        "civil_from_days": jit(civil_from_days),
        "days_from_civil": jit(days_from_civil),
        "days_in_month": jit(days_in_month),
    }
    return {"day_move": jit(bind(day_move, moved_day=jit(bind(moved_day, **helpers))))}


def build(jit, piece_jit, parallel_jit, parallel_range):
    """``reaches`` over ``parallel_range`` with ``parallel_jit``, each piece compiled
    apart with ``piece_jit`` (numba 0.68 takes a counter of a function inlined into a
    ``prange`` loop for the loop's own reduction), its helpers with ``jit``."""
    piece = piece_jit(bind(reaches_piece, **_helpers(jit)))
    return parallel_jit(bind(reaches, reaches_piece=piece, prange=parallel_range))


def build_row(jit):
    """``reach_row`` and its helpers compiled with ``jit`` (a device function on the GPU)."""
    return jit(bind(reach_row, **_helpers(jit)))
