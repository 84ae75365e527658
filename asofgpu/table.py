"""``join_asof`` on whole tables: Arrow-compatible tables in, a ``pyarrow.Table`` out.

The output follows polars' rules: the left columns first, then the right columns other than
the keys; right ``by`` columns are always dropped; a right ``on`` column of the same name as the
left's is dropped under ``coalesce=True`` and kept as ``<name><suffix>`` otherwise; a right
``on`` of another name is kept; the suffix goes on clashing right names only.

>>> import pyarrow as pa
>>> trades = pa.table({"time": [2, 6], "sym": ["A", "A"], "qty": [1, 2]})
>>> quotes = pa.table({"time": [1, 5], "sym": ["A", "A"], "bid": [9.5, 9.75]})
>>> join_asof(trades, quotes, on="time", by="sym", device="cpu").to_pydict()
{'time': [2, 6], 'sym': ['A', 'A'], 'qty': [1, 2], 'bid': [9.5, 9.75]}
"""

from __future__ import annotations

import pyarrow as pa

from ._columns import to_table
from .gather import gather
from .join import asof_join


def _names(value, param: str) -> list[str]:
    if value is None:
        return []
    names = [value] if isinstance(value, str) else (
        list(value) if isinstance(value, (list, tuple)) else None)
    if not names or not all(isinstance(n, str) for n in names):
        msg = f"{param} must be a column name or a non-empty sequence of names, got {value!r}"
        raise TypeError(msg)
    return names


def _resolve_keys(on, left_on, right_on, by, left_by, right_by):
    if on is not None and (left_on is not None or right_on is not None):
        msg = "pass either on, or both left_on and right_on, not both"
        raise ValueError(msg)
    if on is None and (left_on is None or right_on is None):
        msg = "the as-of key is missing: pass on, or both left_on and right_on"
        raise ValueError(msg)
    left_on, right_on = (on, on) if on is not None else (left_on, right_on)
    for value, param in ((left_on, "left_on" if on is None else "on"),
                         (right_on, "right_on" if on is None else "on")):
        if not isinstance(value, str):
            msg = f"{param} must be one column name, got {value!r}"
            raise TypeError(msg)
    if by is not None and (left_by is not None or right_by is not None):
        msg = "pass either by, or both left_by and right_by, not both"
        raise ValueError(msg)
    if by is not None:
        left_by = right_by = _names(by, "by")
    else:
        if (left_by is None) != (right_by is None):
            msg = "left_by and right_by must be given together"
            raise ValueError(msg)
        left_by, right_by = _names(left_by, "left_by"), _names(right_by, "right_by")
        if len(left_by) != len(right_by):
            msg = (f"left_by and right_by must name as many columns, got {len(left_by)} and "
                   f"{len(right_by)}")
            raise ValueError(msg)
    return left_on, right_on, left_by, right_by


def _column(table: pa.Table, name: str, side: str) -> pa.ChunkedArray:
    if name not in table.column_names:
        msg = f"{side} table has no column {name!r}; its columns are {table.column_names}"
        raise KeyError(msg)
    return table.column(name)


def join_asof(left, right, *, on=None, left_on=None, right_on=None, by=None, left_by=None,
              right_by=None, strategy="backward", allow_exact_matches=True, tolerance=None,
              suffix="_right", coalesce=True, device="auto") -> pa.Table:
    """As-of join two tables (polars' semantics and output rules), returning a pyarrow.Table.

    Each left row gets the right row of the same ``by`` group whose ``on`` key is the closest
    in the ``strategy``'s direction (within ``tolerance``), or nulls. Nulls in ``by`` never
    match; nearest ties go to the larger key. Inputs may come in any order; the output is in
    left order.
    """
    left_t, right_t = to_table(left, "left"), to_table(right, "right")
    left_on, right_on, left_by, right_by = _resolve_keys(on, left_on, right_on, by, left_by,
                                                         right_by)
    if not isinstance(suffix, str):
        msg = f"suffix must be a string, got {suffix!r}"
        raise TypeError(msg)
    gmap = asof_join(
        _column(left_t, left_on, "left"), _column(right_t, right_on, "right"),
        [_column(left_t, n, "left") for n in left_by] or None,
        [_column(right_t, n, "right") for n in right_by] or None,
        strategy=strategy, allow_exact_matches=allow_exact_matches, tolerance=tolerance,
        nearest_tie="forward", null_equality="unequal", device=device)

    dropped = set(right_by)
    if right_on == left_on and coalesce:
        dropped.add(right_on)
    kept = [n for n in right_t.column_names if n not in dropped]
    taken = gather(right_t.select(kept), gmap)
    names = list(left_t.column_names)
    out_names = []
    for name in kept:
        out = name + suffix if name in names else name
        if out in names or out in out_names:
            msg = (f"column {out!r} appears twice in the result: the right column {name!r} "
                   f"clashes with a left column even with suffix {suffix!r}. Hint: rename it "
                   f"or pass another suffix.")
            raise ValueError(msg)
        out_names.append(out)
    return pa.Table.from_arrays(list(left_t.columns) + list(taken.columns),
                                names=names + out_names)
