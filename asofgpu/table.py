"""``join_asof``, ``splice_join``, ``window_join`` and ``range_join`` on whole tables: Arrow-compatible tables in, a
``pyarrow.Table`` out.

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

import warnings
from collections.abc import Hashable, Sequence
from typing import Literal

import pyarrow as pa

from . import _validate
from ._columns import to_arrow, to_table
from ._encode import check_comparable
from ._gather import attached_field, gather
from ._types import DeviceName, RowTolerance, StrategyName, TableLike, Tolerance
from .join import asof_join, windows_once
from .splice import splice_maps
from .window import aggregate, aggregations, name_clash


def _is_name(value, labels: bool) -> bool:
    """A column's name: a string, or, for frames whose columns are labels (pandas, cuDF),
    any hashable label other than a sequence (``0``, a Timestamp)."""
    if labels:
        return not isinstance(value, (list, tuple)) and isinstance(value, Hashable)
    return isinstance(value, str)


def _names(value, param: str, labels: bool = False) -> list:
    if value is None:
        return []
    names = (
        list(value)
        if isinstance(value, (list, tuple))
        else ([value] if _is_name(value, labels) else None)
    )
    if not names or not all(_is_name(n, labels) for n in names):
        msg = f"{param} must be a column name or a non-empty sequence of names, got {value!r}"
        raise TypeError(msg)
    return names


def resolve_keys(on, left_on, right_on, by, by_left, by_right, labels: bool = False):
    """(left_on, right_on, by_left, by_right) from a join's keyword arguments; ``labels``:
    names are a pandas frame's column labels (any hashable), not only strings."""
    if on is not None and (left_on is not None or right_on is not None):
        msg = "pass either on, or both left_on and right_on, not both"
        raise ValueError(msg)
    if on is None and (left_on is None or right_on is None):
        msg = "the as-of key is missing: pass on, or both left_on and right_on"
        raise ValueError(msg)
    left_on, right_on = (on, on) if on is not None else (left_on, right_on)
    for value, param in (
        (left_on, "left_on" if on is None else "on"),
        (right_on, "right_on" if on is None else "on"),
    ):
        if not _is_name(value, labels):
            msg = f"{param} must be one column name, got {value!r}"
            raise TypeError(msg)
    if by is not None and (by_left is not None or by_right is not None):
        msg = "pass either by, or both by_left and by_right, not both"
        raise ValueError(msg)
    if by is not None:
        by_left = by_right = _names(by, "by", labels)
    else:
        if (by_left is None) != (by_right is None):
            msg = "by_left and by_right must be given together"
            raise ValueError(msg)
        by_left = _names(by_left, "by_left", labels)
        by_right = _names(by_right, "by_right", labels)
        if len(by_left) != len(by_right):
            msg = (
                f"by_left and by_right must name as many columns, got {len(by_left)} and "
                f"{len(by_right)}"
            )
            raise ValueError(msg)
    return left_on, right_on, by_left, by_right


def _renamed(new, old, new_name: str, old_name: str):
    """The value of a parameter that was renamed, given by either name."""
    if old is None:
        return new
    if new is not None:
        msg = f"pass {new_name} only: {old_name} is its old name"
        raise TypeError(msg)
    warnings.warn(
        f"join_asof's {old_name} is now {new_name}, as polars names it; the old name "
        f"will be removed in asofgpu 0.3",
        DeprecationWarning,
        stacklevel=3,
    )
    return old


def _column(table: pa.Table, name: str, side: str) -> pa.ChunkedArray:
    if name not in table.column_names:
        msg = f"{side} table has no column {name!r}; its columns are {table.column_names}"
        raise KeyError(msg)
    return table.column(name)


def join_asof(
    left: TableLike,
    right: TableLike,
    *,
    on: str | None = None,
    left_on: str | None = None,
    right_on: str | None = None,
    by: str | Sequence[str] | None = None,
    by_left: str | Sequence[str] | None = None,
    by_right: str | Sequence[str] | None = None,
    strategy: StrategyName = "backward",
    allow_exact_matches: bool = True,
    tolerance: RowTolerance | None = None,
    suffix: str = "_right",
    coalesce: bool = True,
    device: DeviceName = "auto",
    left_by: str | Sequence[str] | None = None,
    right_by: str | Sequence[str] | None = None,
) -> pa.Table:
    """As-of join two tables (polars' semantics, parameter names and output rules), returning a
    pyarrow.Table.

    Each left row gets the right row of the same ``by`` group whose ``on`` key is the closest
    in the ``strategy``'s direction (within ``tolerance``: one distance, or a column of one
    per left row, such as ``left["staleness"]``), or nulls. Nulls in ``by`` never
    match; nearest ties go to the larger key. Inputs may come in any order; the output is in
    left order. ``left_by`` and ``right_by`` are the old names of ``by_left`` and ``by_right``
    (deprecated).
    """
    by_left = _renamed(by_left, left_by, "by_left", "left_by")
    by_right = _renamed(by_right, right_by, "by_right", "right_by")
    left_t, right_t = _table(left, "left"), _table(right, "right")
    left_on, right_on, left_by, right_by = resolve_keys(
        on, left_on, right_on, by, by_left, by_right
    )
    check_suffix(suffix)
    coalesce = _validate.flag(coalesce, "coalesce")
    dropped = set(right_by)
    if right_on == left_on and coalesce:
        dropped.add(right_on)
    kept = [n for n in right_t.column_names if n not in dropped]
    names = list(left_t.column_names)
    out_names = right_names(names, kept, suffix)  # a clash refused before any work
    gmap = asof_join(
        _column(left_t, left_on, "left"),
        _column(right_t, right_on, "right"),
        *_by_pairs(left_t, right_t, left_by, right_by),
        strategy=strategy,
        allow_exact_matches=allow_exact_matches,
        tolerance=tolerance,
        nearest_tie="forward",
        null_equality="unequal",
        device=device,
    )

    taken = gather(right_t.select(kept), gmap)
    return _joined(left_t.schema, left_t.columns, right_t, kept, taken, out_names)


def missing_key(left_columns, right_columns, keys) -> str | None:
    """The message for the first key of ``keys`` (``resolve_keys``' four) that its frame's
    columns lack, or None: the front ends raise it as their library would (KeyError, polars'
    ColumnNotFoundError)."""
    left_on, right_on, left_by, right_by = keys
    for columns, wanted, side in (
        (list(left_columns), [left_on, *left_by], "left"),
        (list(right_columns), [right_on, *right_by], "right"),
    ):
        for name in wanted:
            if name not in columns:
                return f"{side} frame has no column {name!r}; its columns are {columns}"
    return None


def by_pairs(left_columns, right_columns, left_by, right_by) -> tuple[list, list]:
    """The by columns of each side (named ``left_by`` and ``right_by``) as Arrow, a pair
    refused by its column names where its values cannot be compared; None for a side
    without. E.g. ``left column 'g' (int64) and right column 's' (string) cannot be
    compared``, where the join itself could name them only ``left_by[0]`` and ``right_by[0]``.
    """
    left = [to_arrow(c, f"left column {n!r}") for c, n in zip(left_columns, left_by)]
    right = [to_arrow(c, f"right column {n!r}") for c, n in zip(right_columns, right_by)]
    for lcol, rcol, lname, rname in zip(left, right, left_by, right_by):
        check_comparable(lcol, rcol, f"left column {lname!r}", f"right column {rname!r}")
    return left or None, right or None


def check_suffix(suffix) -> None:
    if not isinstance(suffix, str):
        msg = f"suffix must be a string, got {suffix!r}"
        raise TypeError(msg)


def _by_pairs(left_t: pa.Table, right_t: pa.Table, left_by, right_by) -> tuple[list, list]:
    return by_pairs(
        [_column(left_t, n, "left") for n in left_by],
        [_column(right_t, n, "right") for n in right_by],
        left_by,
        right_by,
    )


def _table(obj, side: str) -> pa.Table:
    """``side``'s table (``to_table``), each of its columns named once: the joins take
    columns by name, and name the output's.

    >>> _table(pa.Table.from_arrays([pa.array([1]), pa.array([2])], ["t", "t"]), "left")
    Traceback (most recent call last):
    ...
    ValueError: the left table has 2 columns named 't': a join takes its columns by name. Hint: rename them
    """
    table = to_table(obj, side)
    names = table.column_names
    if len(set(names)) < len(names):
        name = next(n for n in names if names.count(n) > 1)
        msg = (
            f"the {side} table has {names.count(name)} columns named {name!r}: a join takes "
            f"its columns by name. Hint: rename them"
        )
        raise ValueError(msg)
    return table


def right_names(left_names: list[str], names: list[str], suffix: str) -> list[str]:
    """The output names of the right columns ``names``: ``suffix`` on those that clash with a
    left name; a name that still clashes is refused."""
    out_names = []
    for name in names:
        out = f"{name}{suffix}" if name in left_names else name
        if out in left_names or out in out_names:
            other = "a left column" if out in left_names else "another right column"
            what = (
                f"the right column {name!r} clashes with {other} even with suffix {suffix!r}"
                if out != name
                else f"the right column {name!r} clashes with {other}"
            )
            msg = (
                f"column {out!r} appears twice in the result: {what}. Hint: rename it or "
                f"pass another suffix."
            )
            raise ValueError(msg)
        out_names.append(out)
    return out_names


def splice_join(
    left: TableLike,
    right: TableLike,
    *,
    on: str | None = None,
    left_on: str | None = None,
    right_on: str | None = None,
    by: str | Sequence[str] | None = None,
    by_left: str | Sequence[str] | None = None,
    by_right: str | Sequence[str] | None = None,
    allow_exact_matches: bool = True,
    tolerance: Tolerance | None = None,
    suffix: str = "_right",
    null_equality: Literal["unequal", "equal"] = "unequal",
    device: DeviceName = "auto",
) -> pa.Table:
    """The full as-of join (QuestDB's SPLICE JOIN): every left row and every right row once,
    in key order, each beside the other side's row that prevailed at its key in its group.

    Rows are ordered by their own ``on`` key; at equal keys left rows come first, each side in
    its input order; rows with a null key come last and match nothing. A left row carries the
    right row a backward ``join_asof`` gives it; a right row carries the left row the same
    rule gives it (``allow_exact_matches`` and ``tolerance`` apply both ways; a number
    ``tolerance`` is in ``right_on``'s unit, a calendar one such as ``"1mo"`` reaches back
    from each driving row's own key). The columns are all the left columns, then all
    the right columns (both ``on`` and ``by`` columns kept), ``suffix`` on right names that
    clash with a left one. ``by`` nulls match nothing unless ``null_equality="equal"``.

    >>> import pyarrow as pa
    >>> buys = pa.table({"ts": [1, 4], "buy": ["b1", "b2"]})
    >>> sells = pa.table({"ts": [3, 3], "sell": ["s1", "s2"]})
    >>> out = splice_join(buys, sells, on="ts", device="cpu")
    >>> list(zip(out["buy"].to_pylist(), out["sell"].to_pylist()))
    [('b1', None), ('b1', 's1'), ('b1', 's2'), ('b2', 's2')]
    >>> out.column_names
    ['ts', 'buy', 'ts_right', 'sell']
    """
    left_t, right_t = _table(left, "left"), _table(right, "right")
    left_on, right_on, left_by, right_by = resolve_keys(
        on, left_on, right_on, by, by_left, by_right
    )
    check_suffix(suffix)
    left_map, right_map = splice_maps(
        _column(left_t, left_on, "left"),
        _column(right_t, right_on, "right"),
        *_by_pairs(left_t, right_t, left_by, right_by),
        null_equality=null_equality,
        allow_exact_matches=allow_exact_matches,
        tolerance=tolerance,
        device=device,
    )
    names = list(left_t.column_names)
    out_names = right_names(names, right_t.column_names, suffix)
    left_rows, right_rows = gather(left_t, left_map), gather(right_t, right_map)
    fields = [  # each side null on the other's rows
        f.with_type(c.type).with_nullable(True) for f, c in zip(left_t.schema, left_rows.columns)
    ]
    return _joined(fields, left_rows.columns, right_t, right_t.column_names, right_rows, out_names)


def _joined(fields, columns, right_t, kept, taken, out_names) -> pa.Table:
    """The output of ``fields`` (the left's, of ``columns``), then ``taken`` (the right
    columns ``kept``, gathered) named ``out_names``, as ``attached_field`` declares them."""
    fields = list(fields) + [
        attached_field(name, column.type, right_t.schema.field(source))
        for name, column, source in zip(out_names, taken.columns, kept)
    ]
    return pa.Table.from_arrays(list(columns) + list(taken.columns), schema=pa.schema(fields))


def _windows(left_t, right_t, keys, before, after, prevailing, device):
    left_on, right_on, left_by, right_by = keys
    left_cols, right_cols = _by_pairs(left_t, right_t, left_by, right_by)
    return windows_once(
        _column(left_t, left_on, "left"), left_cols, _column(right_t, right_on, "right"),
        right_cols, before=before, after=after, prevailing=prevailing, device=device,
    )  # fmt: skip


def window_join(
    left: TableLike,
    right: TableLike,
    *,
    on: str | None = None,
    left_on: str | None = None,
    right_on: str | None = None,
    by: str | Sequence[str] | None = None,
    by_left: str | Sequence[str] | None = None,
    by_right: str | Sequence[str] | None = None,
    before: RowTolerance | str,
    after: RowTolerance | str = 0,
    aggs: dict[str, str | Sequence[str]],
    prevailing: bool = False,
    device: DeviceName = "auto",
) -> pa.Table:
    """The window join (kdb+'s ``wj``): each left row with aggregates of the right rows of its
    ``by`` group whose ``on`` key lies within ``[x - before, x + after]`` of its key x.

    ``aggs`` maps right columns to aggregations: ``count`` (non-null values), ``sum``,
    ``mean``, ``min``, ``max``, ``first``, ``last`` (in key order, then input order), all
    ignoring nulls; a window without a value gives null (count: 0). The result is the left
    table plus a column ``<column>_<agg>`` per aggregation, in left order. ``before`` and
    ``after`` are non-negative numbers in ``right_on``'s unit, timedeltas, duration strings
    (calendar ones such as ``"1mo"`` measured from each left key) or a column of one per left
    row, both ends inclusive; ``prevailing=True`` also puts in each window the state on
    entering it, as kdb+'s ``wj`` does (``wj1`` does not): the last right row below it, unless
    a key lies exactly at the window's start (that row is the state). Null keys and null
    ``by`` values get empty windows.

    >>> import pyarrow as pa
    >>> trades = pa.table({"t": [5, 9], "sym": ["A", "A"]})
    >>> quotes = pa.table({"t": [1, 3, 4, 8], "sym": ["A"] * 4, "bid": [1.0, 2.0, 3.0, 4.0]})
    >>> out = window_join(trades, quotes, on="t", by="sym", before=2,
    ...                   aggs={"bid": ["max", "count"]}, device="cpu")
    >>> out.to_pydict()
    {'t': [5, 9], 'sym': ['A', 'A'], 'bid_max': [3.0, 4.0], 'bid_count': [2, 1]}
    """
    left_t, right_t = _table(left, "left"), _table(right, "right")
    keys = resolve_keys(on, left_on, right_on, by, by_left, by_right)
    wanted = aggregations(aggs, right_t.column_names, lambda c: right_t.schema.field(c).type)
    names = list(left_t.column_names)
    clash = name_clash(wanted, names)
    if clash:
        raise ValueError(clash)
    windows = _windows(left_t, right_t, keys, before, after, prevailing, device)
    columns = aggregate(windows, right_t, wanted)
    fields = list(left_t.schema) + [pa.field(agg.name, c.type) for agg, c in zip(wanted, columns)]
    return pa.Table.from_arrays(list(left_t.columns) + columns, schema=pa.schema(fields))


def range_join(
    left: TableLike,
    right: TableLike,
    *,
    on: str | None = None,
    left_on: str | None = None,
    right_on: str | None = None,
    by: str | Sequence[str] | None = None,
    by_left: str | Sequence[str] | None = None,
    by_right: str | Sequence[str] | None = None,
    before: RowTolerance | str,
    after: RowTolerance | str = 0,
    prevailing: bool = False,
    suffix: str = "_right",
    device: DeviceName = "auto",
) -> pa.Table:
    """The one-to-many as-of join behind the window join: one row per (left row, right row in
    its window), in left order then key order (then input order), and each left row whose
    window is empty once, with nulls on the right.

    Windows are those of ``window_join``. The columns are the left columns, then the right
    columns but the ``by`` ones (equal to the left's); the right ``on`` column is kept, as
    ``<name><suffix>`` when the left has that name.

    >>> import pyarrow as pa
    >>> trades = pa.table({"t": [5, 9]})
    >>> quotes = pa.table({"t": [1, 3, 4], "bid": [1.0, 2.0, 3.0]})
    >>> range_join(trades, quotes, on="t", before=2, device="cpu").to_pydict()
    {'t': [5, 5, 9], 't_right': [3, 4, None], 'bid': [2.0, 3.0, None]}
    """
    left_t, right_t = _table(left, "left"), _table(right, "right")
    keys = resolve_keys(on, left_on, right_on, by, by_left, by_right)
    check_suffix(suffix)
    kept = [n for n in right_t.column_names if n not in set(keys[3])]
    names = list(left_t.column_names)
    out_names = right_names(names, kept, suffix)
    windows = _windows(left_t, right_t, keys, before, after, prevailing, device)
    left_map, right_map = (windows.backend.to_host(m) for m in windows.pairs())
    left_rows, right_rows = gather(left_t, left_map), gather(right_t.select(kept), right_map)
    fields = [f.with_type(c.type) for f, c in zip(left_t.schema, left_rows.columns)]
    return _joined(fields, left_rows.columns, right_t, kept, right_rows, out_names)
