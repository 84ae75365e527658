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

prange = unsigned = None  # filled in by build()

#: How keys move under a calendar duration: whole ``months`` first, then ``days`` and
#: ``ticks`` (under a day); all three negative (``backward``) or all non-negative. A key is
#: ``ticks_per_day`` ticks a day, its zone ``offset`` ticks ahead of UTC (under a day;
#: its civil day is that of the key plus the offset), within [``lowest``, ``highest``]
#: (its type's range); a move of more than ``most_days`` days passes 64 bits of ticks.
Move = collections.namedtuple(
    "Move", "backward months days ticks ticks_per_day offset lowest highest most_days"
)

#: A reach past every distance between two keys: no limit (the probe's distances are uint64).
NO_LIMIT = 2**64 - 1
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


def day_reach(days, move):
    """How far, in ticks, the keys of day ``days`` reach under ``move`` (a ``Move``), as
    uint64: the days between the day and its moved day, plus the part of a day. NO_LIMIT
    where that passes 64 bits: farther than any two keys lie apart."""
    whole = moved_day(days, move.months) - days + move.days
    if whole < 0:
        whole = -whole
    if whole > move.most_days:
        return unsigned(NO_LIMIT)
    ticks = unsigned(-move.ticks if move.ticks < 0 else move.ticks)
    product = unsigned(whole) * unsigned(move.ticks_per_day)  # within 64 bits: whole is
    if product > unsigned(NO_LIMIT) - ticks:  # at most most_days
        return unsigned(NO_LIMIT)
    return product + ticks


def row_reach(x, reach, move):
    """Key x's reach: its day's, or NO_LIMIT when the moved key lies past the type's range
    (every key is then within reach). The room to the range's end is exact in uint64."""
    if move.backward:
        room = unsigned(x) - unsigned(move.lowest)
    else:
        room = unsigned(move.highest) - unsigned(x)
    return reach if reach <= room else unsigned(NO_LIMIT)


def civil_day(x, move):
    """The day count of key x's civil date in its zone: floor((x + offset) / ticks a day),
    without forming x + offset (which could leave the type's range)."""
    return x // move.ticks_per_day + (x % move.ticks_per_day + move.offset) // move.ticks_per_day


def reach_row(i, keys, out, move):
    """Row i's reach (one GPU thread a row): the distance from its key to the key moved."""
    x = keys[i]
    out[i] = row_reach(x, day_reach(civil_day(x, move), move), move)


def reaches_piece(keys, out, start, stop, move):
    """Rows [start, stop) of ``reaches``. Keys of one day reach alike: the day's reach is
    computed once for a run of them (time-sorted keys come in such runs), a division and a
    civil date a day rather than a row."""
    day_start = 1
    day_end = 0  # no day yet
    reach = unsigned(0)
    tpd = move.ticks_per_day
    for i in range(start, stop):
        x = keys[i]
        if x < day_start or x >= day_end:
            into = (x % tpd + move.offset) % tpd  # ticks since x's civil day began
            if unsigned(x) - unsigned(move.lowest) >= unsigned(into):
                day_start = x - into
                # the range's last day has no end within it: looked at afresh each row
                day_end = day_start + tpd if day_start <= move.highest - tpd else day_start
            else:  # the range's first day begins before it: looked at afresh each row
                day_start = x
                day_end = x
            reach = day_reach(civil_day(x, move), move)
        out[i] = row_reach(x, reach, move)


def reaches(keys, out, move, pieces):
    """Each key's distance to itself moved under ``move`` (a ``Move``), how far back or
    ahead its bound lies, in ticks (uint64; NO_LIMIT past the type's range), into ``out``;
    the rows in ``pieces`` pieces."""
    n = keys.size
    step = (n + pieces - 1) // pieces
    for p in prange(pieces):
        reaches_piece(keys, out, min(p * step, n), min((p + 1) * step, n), move)


def _helpers(jit, unsigned_fn):
    helpers = {
        "civil_from_days": jit(civil_from_days),
        "days_from_civil": jit(days_from_civil),
        "days_in_month": jit(days_in_month),
    }
    moved = jit(bind(moved_day, **helpers))
    return {
        "civil_day": jit(civil_day),
        "day_reach": jit(bind(day_reach, moved_day=moved, unsigned=unsigned_fn)),
        "row_reach": jit(bind(row_reach, unsigned=unsigned_fn)),
        "unsigned": unsigned_fn,
    }


def build(jit, piece_jit, parallel_jit, parallel_range, unsigned_fn):
    """``reaches`` over ``parallel_range`` with ``parallel_jit``, each piece compiled
    apart with ``piece_jit`` (numba 0.68 takes a variable a function inlined into a
    ``prange`` loop carries from row to row for the loop's own reduction), its helpers with
    ``jit``; ``unsigned_fn``: numba's uint64, or ``int`` as plain Python (exact either
    way)."""
    piece = piece_jit(bind(reaches_piece, **_helpers(jit, unsigned_fn)))
    return parallel_jit(bind(reaches, reaches_piece=piece, prange=parallel_range))


def build_row(jit, unsigned_fn):
    """``reach_row`` and its helpers compiled with ``jit`` (a device function on the GPU)."""
    return jit(bind(reach_row, **_helpers(jit, unsigned_fn)))
