"""pylibcudf-style as-of joins: ``Table`` and ``Column`` in, an INT32 gather-map ``Column`` out.

The shape is libcudf's proposed ``cudf::asof_join`` (NVIDIA/cudf PR #24180): prepare the right
side once, probe it with any number of left sides, and gather payload with pylibcudf's own
``copying.gather`` under ``OutOfBoundsPolicy.NULLIFY``. Neither libcudf nor pylibcudf has an
as-of join of its own; this module runs asofgpu's CUDA kernel on pylibcudf columns.

Data stays on the device: ``on`` columns reach the kernel zero-copy (a cupy view of the
column's buffer, widened when narrower than 64 bits), and ``by`` columns, strings included,
are turned into group codes by libcudf's sort and binary search (``asofgpu._device_encode``).

Streams: ``stream`` (an rmm ``Stream``, or anything with ``__cuda_stream__`` such as a cupy or
numba stream; None: pylibcudf's default stream) carries all of a call's device work: the
pylibcudf calls, and the cupy work and CUDA kernels of encoding, sorting and probing, which
run on cupy's current stream, made ``stream`` for the call. Nothing waits for the whole device.
As in libcudf, results are complete in ``stream``'s order: a consumer on another stream
synchronizes ``stream`` first (or waits for it), and so does a join on another stream than
the one its ``AsofJoin`` was prepared on. Inputs must stay valid until the work on ``stream``
is done, and a prepared ``AsofJoin``'s memory goes back, when it is dropped, on the streams
it was allocated on (its preparation's; for right keys kept at a finer unit, the first join's
at that unit): drop it once the joins that read it are done. Within a call, the host still
waits for ``stream`` where it reads a device value (a count, a size). Device memory for the codes and the
maps comes from cupy's allocator (route it through rmm with
``rmm.allocators.cupy.rmm_cupy_allocator``).

``splice_join`` is the full as-of join (QuestDB's SPLICE JOIN, ``asofgpu.splice_maps``) in the
same style: two INT32 maps, one for the left rows and one for the right rows of each output row,
each gathered with ``gather``. ``range_join`` (and ``AsofJoin.range_join`` on a prepared right
side) is the window join's one-to-many join (``asofgpu.Windows.pairs``): two INT32 maps with
an entry for each right row in each left row's window.

Examples
--------
>>> import pyarrow as pa, pylibcudf as plc  # doctest: +SKIP
>>> from asofgpu import plc as ag  # doctest: +SKIP
>>> quotes = plc.Table.from_arrow(pa.table({  # doctest: +SKIP
...     "sym": ["A", "A", "A", "B", "B"], "time": [1, 5, 10, 2, 6],
...     "bid": [10.0, 10.5, 11.0, 20.0, 20.5]}))
>>> sym, time, bid = quotes.columns()  # doctest: +SKIP
>>> trades = plc.Table.from_arrow(pa.table({"sym": ["A", "B", "A"], "time": [6, 6, 0]}))  # doctest: +SKIP
>>> j = ag.AsofJoin(plc.Table([sym]), time)  # doctest: +SKIP
>>> gmap = j.join(plc.Table([trades.columns()[0]]), trades.columns()[1])  # doctest: +SKIP
>>> gmap.to_arrow().to_pylist()  # doctest: +SKIP
[1, 4, -2147483648]
>>> ag.gather(plc.Table([bid]), gmap).columns()[0].to_arrow().to_pylist()  # doctest: +SKIP
[10.5, 20.5, None]
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

from . import _validate
from ._columns import Reaches, common_tick, is_row_tolerances, to_arrow, tolerance_in_ticks
from ._device_encode import (
    DeviceGroups,
    check_by_type,
    check_by_types_match,
    on_key_type,
    ordered_key,
)
from ._types import NEAREST_TIE_CODE, NO_MATCH, Strategy
from .join import AsofJoin as _PrimitiveJoin
from .join import GroupCodes
from .splice import splice_maps
from .window import check_reaches_given

__all__ = ["JOIN_NO_MATCH", "AsofJoin", "Strategy", "gather", "range_join", "splice_join"]

#: libcudf's ``cudf::JoinNoMatch`` (``std::numeric_limits<size_type>::min()``, -2**31): the map
#: entry of a left row without a match. pylibcudf does not export it. NULLIFY gathers a null
#: for it, as for any index outside ``[-num_rows, num_rows)``.
JOIN_NO_MATCH = NO_MATCH
#: The most rows a libcudf column holds (``size_type`` is int32).
_MAX_ROWS = 2**31 - 1


def _plc():
    try:
        import pylibcudf
    except ImportError as exc:
        msg = (
            f"asofgpu.plc needs pylibcudf ({exc}). Hint: pip install pylibcudf-cu12 "
            f"(or -cu13), which needs an NVIDIA GPU to make columns."
        )
        raise ImportError(msg) from None
    return pylibcudf


def _check_column(obj, param: str) -> None:
    if not isinstance(obj, _plc().Column):
        msg = f"{param} must be a pylibcudf.Column, got {type(obj).__name__}"
        raise TypeError(msg)


def _check_table(obj, param: str) -> None:
    if not isinstance(obj, _plc().Table):
        msg = (
            f"{param} must be a pylibcudf.Table (with no columns when there are no by-keys), "
            f"got {type(obj).__name__}"
        )
        raise TypeError(msg)


def _check_rows(table, column, table_param: str, column_param: str) -> None:
    if table.num_columns() and table.num_rows() != column.size():
        msg = (
            f"{table_param} has {table.num_rows()} rows, but {column_param} has "
            f"{column.size()}; they must have the same length"
        )
        raise ValueError(msg)


def _null_equal(nulls_equal) -> bool:
    """Whether null by-keys match each other (None: UNEQUAL, libcudf's default)."""
    plc = _plc()
    if nulls_equal is None:
        return False
    if not isinstance(nulls_equal, plc.types.NullEquality):
        msg = (
            f"nulls_equal must be a pylibcudf.types.NullEquality, got {type(nulls_equal).__name__}"
        )
        raise TypeError(msg)
    return nulls_equal == plc.types.NullEquality.EQUAL


def _check_right(right_by, right_on, nulls_equal):
    """The host checks of a right side: ``(null_equal, key_type, by_types)``."""
    _check_table(right_by, "right_by")
    _check_column(right_on, "right_on")
    null_equal = _null_equal(nulls_equal)
    _check_rows(right_by, right_on, "right_by", "right_on")
    key_type = on_key_type(right_on.type(), "right_on")
    by_types = [c.type() for c in right_by.columns()]
    for i, dtype in enumerate(by_types):
        check_by_type(dtype, f"right_by column {i}")
    return null_equal, key_type, by_types


def _check_left(left_by, left_on, by_types, key_type) -> int:
    """The host checks of a left side against a right side's ``by_types`` and ``key_type``:
    the tick both keys are compared in."""
    _check_table(left_by, "left_by")
    _check_column(left_on, "left_on")
    if left_by.num_columns() != len(by_types):
        msg = (
            f"left_by has {left_by.num_columns()} column(s), but right_by has "
            f"{len(by_types)}; they must have the same number"
        )
        raise ValueError(msg)
    _check_rows(left_by, left_on, "left_by", "left_on")
    for i, (col, right) in enumerate(zip(left_by.columns(), by_types)):
        check_by_type(col.type(), f"left_by column {i}")
        check_by_types_match(col.type(), right, f"left_by column {i}", f"right_by column {i}")
    left_type = on_key_type(left_on.type(), "left_on")
    return common_tick(left_type, key_type, "left_on", "right_on")


def _check_reach(before, after, prevailing, key_type, tick) -> bool:
    """The host checks of a window's reach (the primitive's, before any device work)."""
    check_reaches_given(before, after)
    prevailing = _validate.flag(prevailing, "prevailing")
    tolerance_in_ticks(before, key_type, tick, "before")
    tolerance_in_ticks(after, key_type, tick, "after")
    return prevailing


def _stream(stream):
    """None -> pylibcudf's default stream; otherwise an rmm Stream (no device work)."""
    from rmm.pylibrmm.stream import Stream

    if stream is None:
        return _plc().utils.CUDF_DEFAULT_STREAM
    if isinstance(stream, Stream):
        return stream
    try:
        return Stream(stream)
    except (TypeError, NotImplementedError):
        msg = (
            f"stream must be an rmm Stream or have __cuda_stream__ (cupy, numba, "
            f"cuda.core streams), got {type(stream).__name__}"
        )
        raise TypeError(msg) from None


def _on_stream(stream):
    """cupy's work inside the block goes to ``stream``: through ``Stream.from_external``
    where cupy has it (14; its ``ExternalStream`` warns that it is deprecated at every call),
    else ``ExternalStream`` (13)."""
    import cupy

    from_external = getattr(cupy.cuda.Stream, "from_external", None)
    if from_external is not None:
        return from_external(stream)
    return cupy.cuda.ExternalStream(stream.__cuda_stream__()[1])


@contextmanager
def on_default_stream():
    """cupy's work in the block runs on pylibcudf's default stream, where this module's calls
    given no ``stream`` run theirs: work on their results (``asofgpu.cudf``'s) is ordered
    after them whatever cupy stream the caller made current."""
    with _on_stream(_stream(None)):
        yield


def _pairs(windows, stream):
    """The range join's two maps of ``windows`` (the primitive's, on the device) as INT32
    pylibcudf columns; ValueError when they would not fit one."""
    lengths = windows.lengths()
    rows = int(windows.backend.xp.maximum(lengths, 1).sum()) if len(windows) else 0
    if rows > _MAX_ROWS:  # known only once the windows are found
        msg = (
            f"the range join of {len(windows)} left rows has {rows} rows, more than a "
            f"pylibcudf column holds ({_MAX_ROWS}). Hint: a smaller before / after, or the "
            f"left side in slices"
        )
        raise ValueError(msg)
    left_map, right_map = windows.pairs()
    column = _plc().Column
    return (
        column.from_cuda_array_interface(left_map.astype("int32", copy=False), stream=stream),
        column.from_cuda_array_interface(right_map.astype("int32", copy=False), stream=stream),
    )


class AsofJoin:
    """The right side of an as-of join, prepared once on the device; pylibcudf's shape.

    Parameters
    ----------
    right_by : pylibcudf.Table
        Equality keys (symbol, entity, ...), any number of columns of numbers, bools,
        strings, timestamps, durations or decimals; a table with no columns for none.
    right_on : pylibcudf.Column
        The ordered key (time): integers, floats, timestamps or durations. Null rows are
        never a match.
    nulls_equal : pylibcudf.types.NullEquality
        ``UNEQUAL`` (the default, libcudf's and polars' rule): a row with a null by-key
        matches nothing; ``EQUAL`` (pandas' rule): null by-keys match each other.
    stream : rmm Stream or object with ``__cuda_stream__``, optional
        Where the preparation runs. Joins on another stream synchronize it first (see the
        module docstring).

    Notes
    -----
    Inputs may come in any order: the right side is sorted here (a stable sort, so among
    equal keys the caller's row order decides). Float keys order NaN above +inf, all NaNs
    equal, and -0.0 equal to 0.0.

    Examples
    --------
    >>> import pyarrow as pa, pylibcudf as plc  # doctest: +SKIP
    >>> from asofgpu.plc import AsofJoin  # doctest: +SKIP
    >>> right_on = plc.Column.from_arrow(pa.array([1, 5, 10]))  # doctest: +SKIP
    >>> j = AsofJoin(plc.Table([]), right_on)  # no by-keys  # doctest: +SKIP
    >>> j.join(plc.Table([]), plc.Column.from_arrow(pa.array([0, 5, 7])),  # doctest: +SKIP
    ...        "nearest").to_arrow().to_pylist()
    [0, 1, 1]
    """

    def __init__(self, right_by, right_on, nulls_equal=None, stream=None):
        null_equal, self._key_type, self._by_types = _check_right(right_by, right_on, nulls_equal)
        # The ticks the primitive holds the right keys at, complete for any stream (see _kept).
        self._ticks = {self._key_type.tick_ns}
        self._lock = threading.Lock()
        self._prepare(right_by, right_on, null_equal, stream)

    def _prepare(self, right_by, right_on, null_equal: bool, stream) -> None:
        """The device work, on ``stream``: group codes, then the primitive's sort into group
        offsets."""
        stream = _stream(stream)
        with _on_stream(stream):
            key = ordered_key(right_on, "right_on", stream)
            self._groups = DeviceGroups(right_by, null_equal, stream) if self._by_types else None
            codes = None
            if self._groups is not None:
                codes = GroupCodes(self._groups.codes, self._groups.n_groups)
            self._join = _PrimitiveJoin(key, codes, device="cuda")

    @contextmanager
    def _kept(self, tick: int, stream):
        """Around a join's device work on ``stream``. Where the left keys have a finer unit
        (``tick``), the primitive brings the right keys to it once and keeps them for later
        joins, which may run on other streams: the first join at a tick holds the lock and
        waits for ``stream``, even when it fails (the keys may be kept by then), so that no
        other join reads them before they are complete."""
        if tick and tick not in self._ticks:
            with self._lock:
                if tick not in self._ticks:  # not made while this join waited for the lock
                    try:
                        yield
                    finally:
                        stream.synchronize()
                    self._ticks.add(tick)
                    return
        yield

    def join(
        self,
        left_by,
        left_on,
        strategy=Strategy.BACKWARD,
        allow_exact_matches=True,
        *,
        tolerance=None,
        nearest_tie="forward",
        stream=None,
    ):
        """The gather map of ``left_on`` (in left order) into the prepared right side.

        Parameters
        ----------
        left_by : pylibcudf.Table
            As many columns as ``right_by``, each of its column's type (float widths may
            differ); a table with no columns when the right side has none.
        left_on : pylibcudf.Column
            The ordered key, of ``right_on``'s kind (integer widths, float widths and time
            units may differ; signed against unsigned may not). Null rows get no match.
        strategy : {"backward", "forward", "nearest"} or asofgpu.Strategy
            The latest right key at or before, the earliest at or after, or the closer.
        allow_exact_matches : bool
            False: equal keys do not match (strictly before / after).
        tolerance : int, float, datetime.timedelta, numpy.timedelta64 or column, optional
            The largest distance a match may have (inclusive); a number is in the unit of
            ``right_on``'s type (nanoseconds for TIMESTAMP_NANOSECONDS, days for
            TIMESTAMP_DAYS). Or a column of them, one per left row (a pylibcudf Column,
            cupy, numpy or Arrow: numbers in that unit or durations; null: no limit), read
            on the host for its checks.
        nearest_tie : {"forward", "backward"}
            Equal distances under "nearest": "forward" (polars' rule: the larger key, its
            last row) or "backward" (pandas' rule: the smaller key).
        stream : rmm Stream or object with ``__cuda_stream__``, optional

        Returns
        -------
        pylibcudf.Column
            INT32, one entry per left row: the right row number (as the caller numbered
            the rows), or ``JOIN_NO_MATCH`` (-2**31). Among equal right keys, backward
            takes the last row, forward the first.

        Examples
        --------
        >>> import pyarrow as pa, pylibcudf as plc  # doctest: +SKIP
        >>> from asofgpu.plc import AsofJoin  # doctest: +SKIP
        >>> sym = plc.Column.from_arrow(pa.array(["A", "A", "B"]))  # doctest: +SKIP
        >>> t = plc.Column.from_arrow(pa.array([1, 5, 2]))  # doctest: +SKIP
        >>> j = AsofJoin(plc.Table([sym]), t)  # doctest: +SKIP
        >>> left_sym = plc.Column.from_arrow(pa.array(["A", "B", "C"]))  # doctest: +SKIP
        >>> left_t = plc.Column.from_arrow(pa.array([4, 9, 9]))  # doctest: +SKIP
        >>> j.join(plc.Table([left_sym]), left_t).to_arrow().to_pylist()  # doctest: +SKIP
        [0, 2, -2147483648]
        >>> j.join(plc.Table([left_sym]), left_t, "forward").to_arrow().to_pylist()  # doctest: +SKIP
        [1, -2147483648, -2147483648]
        """
        # Every check is on the host, before device memory is touched.
        strategy = _validate.strategy(strategy)
        exact = _validate.flag(allow_exact_matches, "allow_exact_matches")
        _validate.one_of(nearest_tie, "nearest_tie", tuple(NEAREST_TIE_CODE))
        tick = _check_left(left_by, left_on, self._by_types, self._key_type)
        if isinstance(tolerance, _plc().Column):  # read where the caller's work is ordered
            tolerance = tolerance.to_arrow(stream=_stream(stream))
        if is_row_tolerances(tolerance):  # its values are checked with the map, on the host
            rows = len(to_arrow(tolerance, "tolerance"))
            _validate.same_length(left_on.size(), rows, "tolerance", "left_on")
        elif not isinstance(tolerance, Reaches):
            tolerance_in_ticks(tolerance, self._key_type, tick)  # its errors, before device work
        stream = _stream(stream)
        with _on_stream(stream), self._kept(tick, stream):
            key, codes = self._left(left_by, left_on, stream)
            gmap = self._join.join(
                key,
                codes,
                strategy=strategy,
                allow_exact_matches=exact,
                tolerance=tolerance,
                nearest_tie=nearest_tie,
            )
            return _plc().Column.from_cuda_array_interface(gmap, stream=stream)

    def range_join(self, left_by, left_on, before, after=0, prevailing=False, *, stream=None):
        """The range join's two gather maps (the window join's pairs): for each left row (in
        left order) one entry per right row of the prepared side in its window, in key order
        (then the caller's row order), or one entry beside ``JOIN_NO_MATCH`` when its window
        is empty.

        A left row's window is the right rows of its group whose key lies in
        ``[x - before, x + after]`` for its key x, both ends inclusive (``asofgpu.window``).

        Parameters
        ----------
        left_by, left_on : pylibcudf.Table, pylibcudf.Column
            As in ``join``. Left rows with a null key, with a null by-key (under ``UNEQUAL``)
            or of a group the right side lacks have empty windows.
        before, after : int, float, datetime.timedelta or numpy.timedelta64
            How far below and above the left key the window reaches (non-negative; a
            number is in ``right_on``'s unit, as ``join``'s tolerance). ``after`` defaults to
            0: the window ends at the left key.
        prevailing : bool
            True (kdb+'s ``wj`` rather than ``wj1``): the window also takes the state on
            entering it, the last right row of the group below ``x - before``, when there is
            one and no key lies exactly at ``x - before``.
        stream : rmm Stream or object with ``__cuda_stream__``, optional

        Returns
        -------
        (pylibcudf.Column, pylibcudf.Column)
            INT32 maps of one entry per output row: its left row and its right row (the
            caller's row numbers; ``JOIN_NO_MATCH`` beside a left row with an empty window).
            ``gather`` takes each side's payload with its map.

        Raises
        ------
        ValueError
            When the output holds more rows than a pylibcudf column (2**31 - 1): known only
            once the windows are found, so this one error comes after device work.

        Examples
        --------
        >>> import pyarrow as pa, pylibcudf as plc  # doctest: +SKIP
        >>> from asofgpu.plc import AsofJoin  # doctest: +SKIP
        >>> quotes = AsofJoin(plc.Table([]), plc.Column.from_arrow(pa.array([1, 2, 4, 7])))  # doctest: +SKIP
        >>> maps = quotes.range_join(  # doctest: +SKIP
        ...     plc.Table([]), plc.Column.from_arrow(pa.array([4, 0])), 2)
        >>> [m.to_arrow().to_pylist() for m in maps]  # doctest: +SKIP
        [[0, 0, 1], [1, 2, -2147483648]]
        """
        # Every check is on the host, before device memory is touched.
        tick = _check_left(left_by, left_on, self._by_types, self._key_type)
        prevailing = _check_reach(before, after, prevailing, self._key_type, tick)
        stream = _stream(stream)
        with _on_stream(stream), self._kept(tick, stream):
            key, codes = self._left(left_by, left_on, stream)
            windows = self._join.windows(
                key, codes, before=before, after=after, prevailing=prevailing
            )
            return _pairs(windows, stream)

    def _left(self, left_by, left_on, stream):
        """The device work on a left side, inside the caller's ``_on_stream(stream)``: its
        key, and its group codes in the right side's numbering (None without by-keys)."""
        key = ordered_key(left_on, "left_on", stream)
        codes = None
        if self._groups is not None:
            codes = GroupCodes(self._groups.lookup(left_by, stream), self._groups.n_groups)
        return key, codes


def splice_join(
    left_by,
    left_on,
    right_by,
    right_on,
    allow_exact_matches=True,
    *,
    tolerance=None,
    nulls_equal=None,
    stream=None,
):
    """The splice join (QuestDB's SPLICE JOIN, a full as-of join) as two gather maps.

    Every left row and every right row appears once, in key order: at equal keys left rows
    first, each side in its row order, null keys last (left, then right). A left row comes
    with the right row a backward ``AsofJoin.join`` gives it; a right row with the left row
    the same rule gives it (``allow_exact_matches`` and ``tolerance`` apply both ways).

    Parameters
    ----------
    left_by, right_by : pylibcudf.Table
        Equality keys, as many columns on both sides, of one type each (float widths may
        differ); tables with no columns for none.
    left_on, right_on : pylibcudf.Column
        The ordered keys (integers, floats, timestamps or durations, of one kind). Null
        rows come last and match nothing.
    allow_exact_matches : bool
        False: equal keys do not match (strictly before).
    tolerance : int, float, datetime.timedelta or numpy.timedelta64, optional
        The largest distance a match may have (inclusive); a number is in ``right_on``'s unit.
    nulls_equal : pylibcudf.types.NullEquality
        ``UNEQUAL`` (the default): a row with a null by-key matches nothing; ``EQUAL``: null
        by-keys match each other.
    stream : rmm Stream or object with ``__cuda_stream__``, optional

    Returns
    -------
    (pylibcudf.Column, pylibcudf.Column)
        INT32 maps of ``left_on.size() + right_on.size()`` entries each: the left row and
        the right row of each output row, ``JOIN_NO_MATCH`` where there is none. ``gather``
        takes the payload of each side with its map.

    Examples
    --------
    >>> import pyarrow as pa, pylibcudf as plc  # doctest: +SKIP
    >>> from asofgpu.plc import gather, splice_join  # doctest: +SKIP
    >>> buys = plc.Table.from_arrow(pa.table({"ts": [1, 4], "buy": ["b1", "b2"]}))  # doctest: +SKIP
    >>> sells = plc.Table.from_arrow(pa.table({"ts": [3, 3], "sell": ["s1", "s2"]}))  # doctest: +SKIP
    >>> left_map, right_map = splice_join(  # doctest: +SKIP
    ...     plc.Table([]), buys.columns()[0], plc.Table([]), sells.columns()[0])
    >>> left_map.to_arrow().to_pylist(), right_map.to_arrow().to_pylist()  # doctest: +SKIP
    ([0, 0, 0, 1], [-2147483648, 0, 1, 1])
    >>> gather(sells, right_map).columns()[1].to_arrow().to_pylist()  # doctest: +SKIP
    [None, 's1', 's2', 's2']
    """
    # Every check is on the host, before device memory is touched.
    exact = _validate.flag(allow_exact_matches, "allow_exact_matches")
    null_equal, right_type, by_types = _check_right(right_by, right_on, nulls_equal)
    tick = _check_left(left_by, left_on, by_types, right_type)
    tolerance_in_ticks(tolerance, right_type, tick)  # its errors, before device work
    rows = left_on.size() + right_on.size()
    if rows > _MAX_ROWS:  # the maps would not fit a pylibcudf column
        msg = (
            f"the splice join of {left_on.size()} and {right_on.size()} rows has {rows} rows, "
            f"more than a pylibcudf column holds ({_MAX_ROWS})"
        )
        raise ValueError(msg)
    stream = _stream(stream)
    with _on_stream(stream):
        left_key = ordered_key(left_on, "left_on", stream)
        right_key = ordered_key(right_on, "right_on", stream)
        left_codes = right_codes = None
        if right_by.num_columns():
            # Both sides numbered by the right's groups: what splice_maps takes as GroupCodes.
            groups = DeviceGroups(right_by, null_equal, stream)
            right_codes = GroupCodes(groups.codes, groups.n_groups)
            left_codes = GroupCodes(groups.lookup(left_by, stream), groups.n_groups)
        left_map, right_map = splice_maps(
            left_key,
            right_key,
            left_codes,
            right_codes,
            allow_exact_matches=exact,
            tolerance=tolerance,
            device="cuda",
        )
        column = _plc().Column
        return (
            column.from_cuda_array_interface(left_map, stream=stream),
            column.from_cuda_array_interface(right_map, stream=stream),
        )


def range_join(
    left_by,
    left_on,
    right_by,
    right_on,
    before,
    after=0,
    prevailing=False,
    *,
    nulls_equal=None,
    stream=None,
):
    """The range join (the window join's one-to-many join, ``asofgpu.Windows.pairs``) as two
    gather maps.

    Each left row, in left order, comes once for every right row of its window: the right
    rows of its group whose key lies in ``[x - before, x + after]`` for its key x, both ends
    inclusive, in key order (then the caller's row order); a left row whose window is empty
    comes once, beside ``JOIN_NO_MATCH``. ``AsofJoin(right_by, right_on).range_join(...)``
    gives the same maps from a right side prepared once.

    Parameters
    ----------
    left_by, right_by : pylibcudf.Table
        Equality keys, as many columns on both sides, of one type each (float widths may
        differ); tables with no columns for none.
    left_on, right_on : pylibcudf.Column
        The ordered keys (integers, floats, timestamps or durations, of one kind; widths and
        time units may differ). Null rows are in no window (a left one: its window is empty).
    before, after : int, float, datetime.timedelta or numpy.timedelta64
        How far below and above the left key the window reaches (non-negative; a number is
        in ``right_on``'s unit). ``after`` defaults to 0: the window ends at the left key.
    prevailing : bool
        True (kdb+'s ``wj`` rather than ``wj1``): the window also takes the state on entering
        it, the last right row of the group below ``x - before``, when there is one and no key
        lies exactly at ``x - before``.
    nulls_equal : pylibcudf.types.NullEquality
        ``UNEQUAL`` (the default): a row with a null by-key matches nothing; ``EQUAL``: null
        by-keys match each other.
    stream : rmm Stream or object with ``__cuda_stream__``, optional

    Returns
    -------
    (pylibcudf.Column, pylibcudf.Column)
        INT32 maps of one entry per output row: its left row and its right row (the caller's
        row numbers; ``JOIN_NO_MATCH`` beside a left row with an empty window). ``gather``
        takes each side's payload with its map.

    Raises
    ------
    ValueError
        When the output holds more rows than a pylibcudf column (2**31 - 1): known only once
        the windows are found, so this one error comes after device work.

    Examples
    --------
    >>> import pyarrow as pa, pylibcudf as plc  # doctest: +SKIP
    >>> from asofgpu.plc import gather, range_join  # doctest: +SKIP
    >>> quotes = plc.Table.from_arrow(pa.table({  # doctest: +SKIP
    ...     "sym": ["A", "A", "A", "B", "B"], "time": [1, 3, 4, 2, 8],
    ...     "bid": [1.0, 2.0, 3.0, 4.0, 5.0]}))
    >>> trades = plc.Table.from_arrow(pa.table({"sym": ["A", "B", "C"], "time": [5, 5, 1]}))  # doctest: +SKIP
    >>> q_sym, q_time, bid = quotes.columns()  # doctest: +SKIP
    >>> t_sym, t_time = trades.columns()  # doctest: +SKIP
    >>> left_map, right_map = range_join(  # doctest: +SKIP
    ...     plc.Table([t_sym]), t_time, plc.Table([q_sym]), q_time, 2)
    >>> left_map.to_arrow().to_pylist(), right_map.to_arrow().to_pylist()  # doctest: +SKIP
    ([0, 0, 1, 2], [1, 2, -2147483648, -2147483648])
    >>> gather(plc.Table([bid]), right_map).columns()[0].to_arrow().to_pylist()  # doctest: +SKIP
    [2.0, 3.0, None, None]
    >>> maps = range_join(  # doctest: +SKIP
    ...     plc.Table([t_sym]), t_time, plc.Table([q_sym]), q_time, 2, prevailing=True)
    >>> [m.to_arrow().to_pylist() for m in maps]  # doctest: +SKIP
    [[0, 0, 1, 2], [1, 2, 3, -2147483648]]
    """
    # Every check is on the host, before device memory is touched (the prepared join and its
    # range_join check again: cheap, and the same messages).
    _, right_type, by_types = _check_right(right_by, right_on, nulls_equal)
    tick = _check_left(left_by, left_on, by_types, right_type)
    _check_reach(before, after, prevailing, right_type, tick)
    stream = _stream(stream)
    join = AsofJoin(right_by, right_on, nulls_equal, stream)
    return join.range_join(left_by, left_on, before, after, prevailing, stream=stream)


def gather(table, gather_map, stream=None, mr=None):
    """Rows of ``table`` taken by an as-of gather map, all-null where it holds JOIN_NO_MATCH.

    This is ``pylibcudf.copying.gather(table, gather_map, OutOfBoundsPolicy.NULLIFY)``:
    JOIN_NO_MATCH lies outside ``[-num_rows, num_rows)`` for every table libcudf can hold,
    so NULLIFY turns exactly those entries into null rows.

    Parameters
    ----------
    table : pylibcudf.Table
        The right side's payload columns, in the row order the map was computed for.
    gather_map : pylibcudf.Column
        An INT32 map from ``AsofJoin.join`` (or one of ``splice_join``'s or
        ``range_join``'s).
    stream : rmm Stream or object with ``__cuda_stream__``, optional
    mr : rmm DeviceMemoryResource, optional
        Where the gathered columns are allocated (pylibcudf's default: the current one).

    Returns
    -------
    pylibcudf.Table
        One row per map entry.

    Examples
    --------
    >>> import pyarrow as pa, pylibcudf as plc  # doctest: +SKIP
    >>> from asofgpu.plc import JOIN_NO_MATCH, gather  # doctest: +SKIP
    >>> payload = plc.Table.from_arrow(pa.table({"bid": [1.0, 2.0, 3.0]}))  # doctest: +SKIP
    >>> gmap = plc.Column.from_arrow(pa.array([2, JOIN_NO_MATCH, 0], pa.int32()))  # doctest: +SKIP
    >>> gather(payload, gmap).columns()[0].to_arrow().to_pylist()  # doctest: +SKIP
    [3.0, None, 1.0]
    """
    plc = _plc()
    _check_table(table, "table")
    _check_column(gather_map, "gather_map")
    if gather_map.type().id() != plc.TypeId.INT32:
        msg = f"gather_map must be an INT32 column, got {gather_map.type().id().name}"
        raise TypeError(msg)
    return plc.copying.gather(
        table, gather_map, plc.copying.OutOfBoundsPolicy.NULLIFY, stream=_stream(stream), mr=mr
    )
