"""polars' ``join_asof`` on asofgpu's gather map, for DataFrame and LazyFrame (polars 1.x, 2.x).

``join_asof(left, right, ...)`` takes every parameter of ``DataFrame.join_asof`` and
``LazyFrame.join_asof``, plus ``device``, and gives what polars gives: the same columns, names,
dtypes and values, the same exceptions and warnings; a LazyFrame in gives a LazyFrame out.
Importing this module also registers the ``asofgpu`` namespace on DataFrame and LazyFrame:

>>> import polars as pl
>>> import asofgpu.polars
>>> trades = pl.DataFrame({"time": [2, 6], "qty": [1, 2]})
>>> quotes = pl.DataFrame({"time": [1, 5], "bid": [9.5, 9.75]})
>>> trades.asofgpu.join_asof(quotes, on="time", device="cpu").rows()
[(2, 1, 9.5), (6, 2, 9.75)]

How it works: polars runs the same call on zero-row slices of the inputs (the "dry run"), so
argument checks, messages, warnings and the output schema are polars' own, whatever its
version. polars issues its warnings itself, at the caller's line (the dry run is called from
a frame polars takes for the caller's) and under the caller's filters, so they behave as for
polars' own call: shown once a line under a "default" filter, and under an "error" filter
(``python -W error``, pytest's ``filterwarnings = error``) printed on standard error and not
raised, as polars prints the warnings of its compiled code, the join going on to its result
or polars' exception. On a LazyFrame, the dry run is polars' own join of two empty frames
inside the plan, so its schema, errors and warnings come where polars gives them (the
coalescing warning at ``collect_schema`` and ``collect``, the ``by`` one at ``collect``).
The rows come from ``asofgpu.asof_join``'s gather map: asofgpu's gather takes the
right's numbers, times, booleans and text (as the views polars holds) by it, and polars' own
gather every other dtype, so each (Enum, Decimal, Object, nested) comes through unchanged.

Where it differs from polars:

- Inputs need not be sorted. Data unsorted inside ``by`` groups (which polars cannot check),
  unsorted with ``check_sortedness=False``, or carrying a wrong sorted flag give the right rows
  where polars silently gives wrong ones. Without ``by``, ``check_sortedness=True`` still raises
  polars' ``InvalidOperationError`` for unsorted keys, as polars does.
- Float keys follow asofgpu's total order (NaN above +inf, equal keys at distance 0): with
  ``nearest`` or a tolerance, infinite and NaN keys match where polars' distances are NaN
  (``inf - inf``) and its picks erratic.
- ``by`` columns of two different Enum or Categorical dtypes are matched by value; polars
  compares their physical codes.
- Categorical ``on`` keys are ordered as the dtype orders its values (lexically on polars 2.x),
  the order polars' sortedness check uses; polars before 2.2 searches physical codes (2.2 its
  text, as here). ``nearest`` and ``tolerance`` on Categorical keys measure distances in
  physical codes, as polars does (2.2 refuses ``nearest`` on them, and so does the dry run).
- A ``numpy.timedelta64`` tolerance (polars 2.2 takes one) is the duration it denotes; polars
  2.2 counts it in the keys' own unit.
- Integer keys of different signedness (``Int64`` vs ``UInt64``), 128-bit integer and Decimal
  keys are brought to one 64-bit type when their values fit; otherwise backward and forward
  joins without a tolerance still work (by rank), and ``nearest`` or a tolerance raise
  ``InvalidOperationError``. Float32 distances are taken in float64, against a tolerance
  rounded to Float32 as polars rounds it; polars subtracts in Float32, so a ``nearest`` tie
  or a distance at the tolerance may still differ in the last bit.
- ``tolerance`` also takes what polars refuses: calendar durations ("1mo", "1q", "1y") on
  Date and Datetime keys, and a column of tolerances, one per left row (a Series, an
  expression on the left frame, or a left column's name); see ``join_asof``.
- LazyFrame: the inputs' schemas are resolved when ``join_asof`` is called (errors in the
  inputs' own plans come then, not at ``collect``). The join runs at ``collect``; the
  optimizer does not push predicates or projections through it. The plan polars appends to
  the errors it raises while planning the join ("Resolved plan until failure") shows
  asofgpu's node (``opaque_python``) around polars' join.
- Where several errors apply at once (unsorted keys and an unsupported strategy, say), which
  one is raised may differ; where polars panics, so does the dry run. Output columns whose names
  clash are refused (``DuplicateError``) where some polars 1.x versions return them twice.
"""

from __future__ import annotations

import datetime
import decimal
import inspect
import numbers
import os
import re
import sys
import types
from collections.abc import Iterable, Sequence
from typing import Literal

import numpy as np
import pyarrow as pa

try:
    import polars as pl
except ModuleNotFoundError as exc:
    msg = f"asofgpu.polars needs polars ({exc}). Hint: pip install 'asofgpu[polars]'"
    raise ModuleNotFoundError(msg, name=exc.name) from None
from polars.exceptions import ComputeError, InvalidOperationError

from . import _validate
from ._arrow_numpy import COARSE_RUN_ROWS
from ._columns import is_row_tolerances, key_type_of_arrow, tolerance_in_ticks
from ._calendar import fixed as fixed_duration
from ._calendar import calendar_parts, clock_changes, is_calendar
from ._duration import UNIT_NS, timedelta_ns
from ._types import NO_MATCH, DeviceName, StrategyName, is_no_match
from ._gather import gather
from .join import asof_join, windows_once
from .splice import splice_maps
from .table import check_suffix, missing_key, resolve_keys, right_names
from .window import (
    aggregations,
    by_column,
    check_reaches_given,
    name_clash,
    nulls_alone,
    reads_values,
    reduce_column,
)

__all__ = ["AsofgpuNamespace", "join_asof", "range_join", "splice_join", "window_join"]

_NOT_SORTED = (
    "argument in operation 'asof_join' is not sorted, please sort the 'expr/series/column' first"
)
_OPTIONS = (
    "left_on",
    "right_on",
    "on",
    "by_left",
    "by_right",
    "by",
    "strategy",
    "suffix",
    "tolerance",
    "allow_parallel",
    "force_parallel",
    "coalesce",
    "allow_exact_matches",
    "check_sortedness",
)
_FLAGS = ("allow_parallel", "force_parallel", "coalesce", "allow_exact_matches", "check_sortedness")
_EAGER_PARAMS = frozenset(inspect.signature(pl.DataFrame.join_asof).parameters)
_LAZY_PARAMS = frozenset(inspect.signature(pl.LazyFrame.join_asof).parameters)
_UNIT_NS = {**UNIT_NS, "i": 1}  # polars' duration units; "i" (index count) is one step
_DAY_NS = _UNIT_NS["d"]
_U64_MAX = 2**64 - 1
_WIDE_INTS = tuple(getattr(pl, n) for n in ("Int128", "UInt128") if hasattr(pl, n))
_WIDE_U128 = getattr(pl, "UInt128", None)
_HERE = (os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.abspath(pl.__file__)))


def join_asof(
    left: pl.DataFrame | pl.LazyFrame,
    right: pl.DataFrame | pl.LazyFrame,
    *,
    left_on: str | pl.Expr | None = None,
    right_on: str | pl.Expr | None = None,
    on: str | pl.Expr | None = None,
    by_left: str | Sequence[str] | None = None,
    by_right: str | Sequence[str] | None = None,
    by: str | Sequence[str] | None = None,
    strategy: StrategyName = "backward",
    suffix: str = "_right",
    tolerance: str | int | float | datetime.timedelta | None = None,
    allow_parallel: bool = True,
    force_parallel: bool = False,
    coalesce: bool = True,
    allow_exact_matches: bool = True,
    check_sortedness: bool = True,
    device: DeviceName = "auto",
) -> pl.DataFrame | pl.LazyFrame:
    """Perform an as-of join: polars' ``join_asof``, computed by asofgpu.

    For each left row, the right row of the same ``by`` group whose ``on`` key is the nearest
    in the ``strategy``'s direction (within ``tolerance``), or nulls: "backward" takes the last
    right row with key <= the left key, "forward" the first with key >= it, "nearest" the last
    row among those nearest (ties go to the larger key). Inputs need not be sorted.

    Parameters
    ----------
    left : polars.DataFrame or polars.LazyFrame
        The left side; its rows and columns come first, in its order.
    right : polars.DataFrame or polars.LazyFrame
        The right side, of the same kind as ``left``.
    left_on, right_on, on : str or polars.Expr, optional
        The as-of key of each side, or ``on`` for both; expressions are evaluated on each side.
    by_left, by_right, by : str or sequence of str, optional
        Equality keys: a left row only matches right rows whose keys are equal (nulls never
        match). Right ``by`` columns are not in the output.
    strategy : {"backward", "forward", "nearest"}
        Which right row a left row takes.
    suffix : str
        Appended to right column names that clash with left ones.
    tolerance : int, float, str, datetime.timedelta, polars.Series or polars.Expr, optional
        The largest distance (inclusive) between matched keys: a number in the key's physical
        unit (Date: days, Datetime: its time unit, Decimal: its smallest step), a polars
        duration string ("1s500ms", "1d" = 24 h, "1w") or a timedelta, for temporal keys.
        Negative values count as their absolute value. Beyond polars (which refuses these):

        - a calendar duration on a Date or Datetime key ("1mo", "1q", "1y", "1mo15d",
          "2mo12h"): each left key x reaches back to ``x.dt.offset_by("-" + tolerance)`` and
          ahead to ``x.dt.offset_by(tolerance)`` (month ends saturate: 2024-03-31 reaches back
          to 2024-02-29; with months, days are the key's time zone's); "nearest" checks each
          direction's candidate against its own bound. Not negative.
        - a column of tolerances, one per left row: a Series of the left's length, an
          expression evaluated on the left frame (``pl.col("staleness")``), or the name of a
          left column (a name that is also a duration string is refused: pass ``pl.col``).
          Durations, or numbers in the key's physical unit; non-negative; null is no limit.
    allow_parallel, force_parallel : bool
        Accepted for compatibility; asofgpu collects both LazyFrame inputs together.
    coalesce : bool
        Whether a right key column named as the left key is left out (True) or kept with
        ``suffix`` (False). Keys that are not plain columns are never coalesced.
    allow_exact_matches : bool
        Whether equal keys match (<=, >=) or not (<, >).
    check_sortedness : bool
        Without ``by``, raise polars' ``InvalidOperationError`` when a key is not sorted
        (nulls first), as polars does. With ``by``, polars warns that it cannot check;
        asofgpu does not need sorted input at all.
    device : {"auto", "cpu", "cuda", "python"}
        Where the gather map is computed; "auto" takes the GPU when one is usable.

    Returns
    -------
    polars.DataFrame or polars.LazyFrame
        Of the same kind as ``left``: polars' columns, dtypes and values.

    Examples
    --------
    >>> import polars as pl
    >>> from asofgpu.polars import join_asof
    >>> quotes = pl.DataFrame({"sym": ["A", "B", "A"], "time": [1, 2, 5], "bid": [9.5, 20.0, 9.75]})
    >>> trades = pl.DataFrame({"time": [6, 3, 2], "sym": ["A", "B", "A"], "qty": [10, 20, 30]})
    >>> join_asof(trades, quotes, on="time", by="sym", check_sortedness=False, device="cpu")
    shape: (3, 4)
    ┌──────┬─────┬─────┬──────┐
    │ time ┆ sym ┆ qty ┆ bid  │
    │ ---  ┆ --- ┆ --- ┆ ---  │
    │ i64  ┆ str ┆ i64 ┆ f64  │
    ╞══════╪═════╪═════╪══════╡
    │ 6    ┆ A   ┆ 10  ┆ 9.75 │
    │ 3    ┆ B   ┆ 20  ┆ 20.0 │
    │ 2    ┆ A   ┆ 30  ┆ 9.5  │
    └──────┴─────┴─────┴──────┘

    Durations and LazyFrames work as in polars:

    >>> from datetime import datetime
    >>> left = pl.LazyFrame({"t": [datetime(2024, 1, 1, 9, 0, 3)]})
    >>> right = pl.LazyFrame({"t": [datetime(2024, 1, 1, 9, 0, 1)], "px": [1.5]})
    >>> out = join_asof(left, right, on="t", tolerance="2s", coalesce=False, device="cpu")
    >>> out.collect().rows()
    [(datetime.datetime(2024, 1, 1, 9, 0, 3), datetime.datetime(2024, 1, 1, 9, 0, 1), 1.5)]
    >>> join_asof(left, right, on="t", tolerance="1s500ms", device="cpu").collect().rows()
    [(datetime.datetime(2024, 1, 1, 9, 0, 3), None)]

    Calendar durations and a tolerance per left row, which polars refuses:

    >>> from datetime import date
    >>> sales = pl.DataFrame({"d": [date(2024, 3, 31), date(2024, 4, 30)], "days": [20, 61]})
    >>> prices = pl.DataFrame({"d": [date(2024, 2, 29)], "px": [1.5]})
    >>> join_asof(sales, prices, on="d", tolerance="1mo", device="cpu")["px"].to_list()
    [1.5, None]
    >>> join_asof(sales, prices, on="d", tolerance=pl.col("days"), device="cpu")["px"].to_list()
    [None, 1.5]
    """
    options = dict(
        zip(
            _OPTIONS,
            (
                left_on,
                right_on,
                on,
                *_no_empty_by(by_left, by_right, by),
                strategy,
                suffix,
                tolerance,
                allow_parallel,
                force_parallel,
                coalesce,
                allow_exact_matches,
                check_sortedness,
            ),
            strict=True,
        )
    )
    _validate.device(device)
    if isinstance(left, pl.LazyFrame):
        return _lazy(left, right, options, device)
    if isinstance(left, pl.DataFrame):
        return _eager(left, right, options, device)
    got = _validate.type_name(left)
    msg = f"expected `left` to be a 'DataFrame' or a 'LazyFrame', got {got!r}"
    raise TypeError(msg)


# --------------------------------------------------------------------------- polars' own checks


def _polars_options(options: dict, accepted: frozenset) -> dict:
    """The options this polars takes; those it lacks (older versions) are checked here."""
    for name in _FLAGS:
        value = options[name]
        if name not in accepted and value is not None and not isinstance(value, (bool, np.bool_)):
            msg = f"'{type(value).__name__}' object is not an instance of 'bool'"
            raise TypeError(msg)
    return {k: v for k, v in options.items() if k in accepted}


def _origin():
    """Where a warning belongs: the innermost caller outside asofgpu and polars, as polars'
    own ``find_stacklevel`` finds it (None when there is none, as on a thread polars runs)."""
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_HERE):
        frame = frame.f_back
    return None if frame is None else (frame.f_code.co_filename, frame.f_lineno, frame.f_globals)


_AS_CALLER = (lambda function, args, kwargs: function(*args, **kwargs)).__code__


def _as_caller(origin, function, *args, **kwargs):
    """``function(*args, **kwargs)`` (one of polars' own), called from a frame that polars
    takes for the caller's: ``origin``'s file and line, with its module's globals (``origin``
    as :func:`_origin` gives it).

    polars issues each of its warnings with ``warnings.warn`` at the innermost frame outside
    polars; through this frame, that is the caller's, so polars' warnings are issued by
    polars itself, just as for a call of its own: at the caller's line, under the caller's
    filters, and with the caller's module registry (a "default" filter shows a warning once
    per line). Under an "error" filter, those polars issues from compiled code (all of
    ``join_asof``'s) are printed by polars, not raised (``eprintln!`` of what
    ``_polars_warn`` raised), and polars carries on to its result or its own exception.
    No warnings filter is touched here: ``catch_warnings`` would make every module's
    registry forget what it has shown, and a "default" filter show polars' warnings again
    at each call."""
    if origin is None or not isinstance(origin[1], int) or origin[1] < 1:
        return function(*args, **kwargs)
    filename, lineno, module_globals = origin
    code = _AS_CALLER.replace(
        co_filename=filename, co_firstlineno=lineno, co_name="<asofgpu: polars called from here>"
    )
    return types.FunctionType(code, module_globals)(function, args, kwargs)


def _dry_run(left: pl.DataFrame, right, options: dict) -> pl.DataFrame:
    """polars' join_asof on zero-row slices, as the caller's: its errors, its warnings, its
    output schema."""
    other = right.head(0) if isinstance(right, pl.DataFrame) else right
    polars_options = _polars_options(_as_polars_reads(options, left), _EAGER_PARAMS)
    return _as_caller(_origin(), left.head(0).join_asof, other, **polars_options)


# --------------------------------------------------------------------------- the two paths


def _lazy(left: pl.LazyFrame, right, options: dict, device: str) -> pl.LazyFrame:
    """The join as a LazyFrame: polars' own join_asof of two empty frames of the inputs'
    schemas (the dry run), mapped to asofgpu's join of the collected inputs. polars checks
    the arguments at the call, and resolves, checks and warns about the empty join where and
    when it does so for its own plan: output schema and errors at ``collect_schema`` and
    ``collect``, the coalescing warning whenever it resolves the plan, the ``by`` one at
    ``collect``."""
    options = {**options, **_listed_keys(options)}
    polars_options = _polars_options(_as_polars_reads(options, left), _LAZY_PARAMS)
    origin = _origin()
    if not isinstance(right, pl.LazyFrame):
        _as_caller(origin, left.join_asof, right, **polars_options)  # polars' TypeError
        msg = f"expected `other` to be a 'LazyFrame', not {type(right).__name__!r}"
        raise TypeError(msg)
    empty = [pl.DataFrame(schema=side.collect_schema()).lazy() for side in (left, right)]
    if _by_holds_key(options):
        # Empty, but not known to be so before collect: polars 2 fails to resolve a join of
        # two frames it knows empty when a by column is the on key ('"t" not found'), though
        # it joins the same frames holding rows. (Not for every join: on frames it does not
        # know empty, polars leaves its checks of the keys' types to the data.)
        empty = [frame.filter(pl.int_range(pl.len()) < 0) for frame in empty]

    def run(dry: pl.DataFrame) -> pl.DataFrame:
        collected = _as_caller(_origin(), pl.collect_all, [left, right])
        return _eager(*collected, options, device, dry)

    return _as_caller(origin, empty[0].join_asof, empty[1], **polars_options).map_batches(
        run, predicate_pushdown=False, projection_pushdown=False, slice_pushdown=False
    )


def _by_holds_key(options: dict) -> bool:
    """Whether a by column of either side is that side's on key, named or as a column
    expression (``pl.col("t")``)."""

    def name_of(key) -> str | None:
        if isinstance(key, pl.Expr) and key.meta.is_column():
            return key.meta.output_name()
        return key if isinstance(key, str) else None

    def names(value) -> list[str]:
        listed = value if isinstance(value, (list, tuple)) else [value]
        return [name for key in listed if (name := name_of(key)) is not None]

    on = options["on"]
    keys = (on, on) if on is not None else (options["left_on"], options["right_on"])
    by = (
        (options["by"],) * 2
        if options["by"] is not None
        else (options["by_left"], options["by_right"])
    )
    return any(set(names(key)) & set(names(columns)) for key, columns in zip(keys, by))


def _listed_keys(options: dict) -> dict:
    """The key options given as other iterables than a list (a set, a dict, a generator, a
    Series of names) as lists: polars' lazy join_asof takes any iterable of names, and a
    generator can be read only once, by the dry run or by the join."""
    return {
        name: list(value)
        for name in ("left_on", "right_on", "on")
        if isinstance(value := options[name], Iterable)
        and not isinstance(value, (str, bytes, list, pl.Expr))
    }


def _eager(
    left: pl.DataFrame, right, options: dict, device: str, dry: pl.DataFrame | None = None
) -> pl.DataFrame:
    if dry is None:
        dry = _dry_run(left, right, options)
    on = options["on"]
    left_expr, right_expr = (
        (on, on) if isinstance(on, (str, pl.Expr)) else (options["left_on"], options["right_on"])
    )
    left_key, right_key = _few_chunks(_key(left, left_expr)), _few_chunks(_key(right, right_expr))
    left_by, right_by = _by_names(options)
    if (
        not left_by
        and options["check_sortedness"]
        and not (left_key.is_sorted() and right_key.is_sorted())
    ):  # polars' rule: nulls first
        raise InvalidOperationError(_NOT_SORTED)
    strategy, tolerance = options["strategy"], options["tolerance"]
    left_col, right_col = _orderable(
        left_key, right_key, strategy == "nearest" or tolerance is not None
    )
    form = _extension(tolerance, left)
    if form == "column":
        tol = _tolerance_column(tolerance, left)
    elif form == "calendar":  # a Date or Datetime key: on others, polars' dry run refused it
        tol = tolerance
    else:
        tol = _tolerance(tolerance, left_key.dtype)
        if tol is not None and left_key.dtype == right_key.dtype == pl.Float32:
            tol = float(np.float32(tol))  # polars casts it to the keys' type: 0.2 as 0.2f
    if form is None and tol != tol:  # a NaN tolerance on float keys: polars matches nothing
        gmap = np.full(left.height, NO_MATCH, dtype=np.int32)
    else:
        left_cols, right_cols = _by_columns(left, right, left_by, right_by)
        gmap = asof_join(
            _arrow(left_col),
            _arrow(right_col),
            left_cols or None,
            right_cols or None,
            strategy=strategy,
            allow_exact_matches=options["allow_exact_matches"],
            tolerance=tol,
            nearest_tie="forward",
            null_equality="unequal",
            device=device,
        )
    return _assemble(left, right, dry, gmap, right_by, options["suffix"])


def _few_chunks(series: pl.Series) -> pl.Series:
    """A column the join reads (a key, a by column, a right column it gathers), rechunked by
    polars when it is many small chunks, fewer than ``COARSE_RUN_ROWS`` rows a chunk on
    average: a ``pl.concat(rechunk=False)`` of 5,000 pieces went to Arrow and was read a
    chunk at a time (4.1x polars' join, 0.47x rechunked). The right columns' copies live
    until they are gathered; LEFT's columns are passed on as they are (rechunking whole
    frames took 4 times polars' extra memory, these copies 2.7 times)."""
    chunks = series.n_chunks()
    if chunks > 1 and len(series) < COARSE_RUN_ROWS * chunks:
        return series.rechunk()
    return series


# --------------------------------------------------------------------------- keys


def _key(frame: pl.DataFrame, key) -> pl.Series:
    if isinstance(key, (list, tuple)) and len(key) == 1:
        key = key[0]  # polars' lazy join_asof takes a list of one key (its dry run said so)
    if isinstance(key, str):
        return frame.get_column(key)
    name = "__asofgpu_key"
    while name in frame.columns:
        name += "_"
    return frame.with_columns(key.alias(name)).get_column(name)


def _by_names(options: dict) -> tuple[list[str], list[str]]:
    def names(value):
        return [] if value is None else [value] if isinstance(value, str) else list(value)

    if options["by"] is not None:
        return names(options["by"]), names(options["by"])
    return names(options["by_left"]), names(options["by_right"])


def _is_categorical(dtype) -> bool:
    """A Categorical (of any ``Categories``) or an Enum."""
    return _categorical(dtype) or isinstance(dtype, pl.Enum)


def _categorical(dtype) -> bool:
    """A Categorical, of the global ``Categories`` or of its own: ``== pl.Categorical``
    holds only for the global ones, and a by column of its own Categories was joined by code,
    code 0 of one side matching code 0 of the other whatever their values."""
    return dtype == pl.Categorical or isinstance(dtype, pl.Categorical)


def _orderable(left: pl.Series, right: pl.Series, distances: bool):
    """Keys as asofgpu takes them (numbers or temporal), ordered as polars orders them. Keys
    of two kinds are refused as polars' join_asof refuses them (its dry run does, before a
    join_asof gets here; a splice join has none): cast to one, 3.5 would become 3."""
    if not _kinds_agree(left.dtype, right.dtype):
        msg = (
            f"datatypes of join keys don't match - `{left.name}`: {left.dtype} on left does not "
            f"match `{right.name}`: {right.dtype} on right"
        )
        raise pl.exceptions.SchemaError(msg)
    dtype = left.dtype
    if dtype == pl.Boolean:
        return left.cast(pl.UInt8), right.cast(pl.UInt8)
    if isinstance(dtype, pl.Enum) or (_categorical(dtype) and distances):
        # One Enum type on both sides: its codes are its order. Categorical distances are
        # polars' join_asof's, in codes (the splice join refuses them: it orders its rows).
        return left.to_physical(), right.to_physical()
    if dtype in (pl.String, pl.Binary) or _categorical(dtype):
        return _dense_rank(left, right)
    if dtype.is_integer() or isinstance(dtype, pl.Decimal):
        named = (left.dtype, right.dtype)  # a Decimal's physical values are Int128
        return _integers(left.to_physical(), right.to_physical(), distances, named)
    return left, right  # floats, dates, datetimes, durations, times


def _kinds_agree(left, right) -> bool:
    """Whether polars' join_asof takes keys of these dtypes together: of one kind, or one
    of them Null; an unsigned 128-bit integer only beside unsigned ones (polars has no type
    holding it and a signed one)."""
    if pl.Null in (left, right):
        return True
    signed = left.is_signed_integer() or right.is_signed_integer()
    return _key_kind(left) == _key_kind(right) and not (_WIDE_U128 in (left, right) and signed)


def _key_kind(dtype) -> str:
    """The kinds of key ``_orderable`` orders together: integers, decimals of one scale,
    floats, booleans, strings, binaries, categoricals, one Enum type, and each temporal type
    (any unit). Decimals of two scales, or an integer and a decimal, compare their unscaled
    integers; two Enum types (or an Enum and anything else) their codes; a string beside a
    binary or a categorical has no order in polars: polars refuses them, and so does this."""
    if dtype == pl.Boolean:
        return "boolean"
    if isinstance(dtype, pl.Enum):
        return f"enum{dtype.categories.to_list()}"
    if isinstance(dtype, pl.Decimal):
        return f"decimal(scale {dtype.scale})"
    if dtype.is_integer():
        return "integer"
    if dtype.is_float():
        return "float"
    return type(dtype).__name__  # String, Binary, Categorical, Date, Datetime, Duration, Time


def _dense_rank(left: pl.Series, right: pl.Series):
    """Both keys as their rank among all values of both (nulls stay null): same order."""
    rank = pl.concat([left, right]).rank("dense")
    return rank.slice(0, len(left)), rank.slice(len(left))


def _fits(series: pl.Series, lo: int, hi: int) -> bool:
    low, high = series.min(), series.max()
    return low is None or (lo <= low and high <= hi)


def _integers(left: pl.Series, right: pl.Series, distances: bool, named=None):
    """Integer keys of one 64-bit signedness: polars supercasts Int64 vs UInt64, asofgpu
    compares one kind; values decide which. ``named``: the keys' own types, for messages."""
    kinds = {
        "wide" if s.dtype in _WIDE_INTS else s.dtype.is_signed_integer() for s in (left, right)
    }
    if len(kinds) == 1 and "wide" not in kinds:
        return left, right
    for target, lo, hi in ((pl.Int64, -(2**63), 2**63 - 1), (pl.UInt64, 0, _U64_MAX)):
        if _fits(left, lo, hi) and _fits(right, lo, hi):
            return left.cast(target), right.cast(target)
    if not distances:
        unsigned = getattr(pl, "UInt128", None) in (left.dtype, right.dtype)
        wide = pl.UInt128 if unsigned else pl.Int128
        return _dense_rank(left.cast(wide), right.cast(wide))
    left_type, right_type = named or (left.dtype, right.dtype)
    msg = (
        f"asofgpu cannot measure distances between the as-of keys ({left_type} and "
        f"{right_type}): their values fit no single 64-bit integer type. Hint: use "
        f"strategy='backward' or 'forward' without a tolerance, or subtract a common "
        f"offset from both keys so that they fit Int64 (Float64 would round them)."
    )
    raise InvalidOperationError(msg)


def _by_columns(left: pl.DataFrame, right: pl.DataFrame, left_by, right_by):
    """By columns as asofgpu compares them: polars compares physical values (Date with Int32,
    any Datetime unit or zone), Enum and Categorical pairs are compared by value: by their
    codes where both sides are of one type (one Enum, or Categoricals of one ``Categories``,
    where a value has one code), else as text (a cast of 14 ms a side at 1M rows)."""
    left_cols, right_cols = [], []
    for left_name, right_name in zip(left_by, right_by, strict=True):
        ls, rs = _few_chunks(left.get_column(left_name)), _few_chunks(right.get_column(right_name))
        _check_by_types(ls, rs, len(left_cols))
        if _is_categorical(ls.dtype) and _is_categorical(rs.dtype) and ls.dtype != rs.dtype:
            ls, rs = ls.cast(pl.String), rs.cast(pl.String)
        elif isinstance(ls.dtype, pl.Decimal) or ls.dtype in _WIDE_INTS:
            ls, rs = _wide_as_string(ls), _wide_as_string(rs)  # Arrow has no 128-bit integers
        else:
            ls, rs = _physical(ls), _physical(rs)
        left_cols.append(_by_arrow(ls))
        right_cols.append(_by_arrow(rs))
    return left_cols, right_cols


def _check_by_types(left: pl.Series, right: pl.Series, i: int) -> None:
    """Refuse by columns of two physical types, as polars' join_asof does (Int64 beside
    Int128 failed in Arrow's export; beside Int32, with asofgpu's parameter names)."""
    both_categorical = _is_categorical(left.dtype) and _is_categorical(right.dtype)
    physical = {_physical(s.head(0)).dtype for s in (left, right) if s.dtype != pl.Null}
    if len(physical) > 1 and not both_categorical:
        msg = (
            f"by_left[{i}] `{left.name}` ({left.dtype}) and by_right[{i}] `{right.name}` "
            f"({right.dtype}) cannot be compared: by columns must have the same type on both "
            f"sides. Hint: cast one of them."
        )
        raise TypeError(msg)


def _physical(series: pl.Series) -> pl.Series:
    """``series.to_physical()``, without its call where the dtype is its own physical one
    (numbers, text, booleans): polars runs each call as a query, 30 us of a 2 ms join of
    2,000 rows."""
    dtype = series.dtype
    if dtype.is_integer() or dtype.is_float() or dtype in (pl.String, pl.Binary, pl.Boolean):
        return series
    return series.to_physical()


def _by_arrow(series: pl.Series) -> pa.ChunkedArray | pa.Array:
    """A by column for asofgpu: text as polars holds it (views, in its chunks, which asofgpu
    hashes where they lie: kernels/views.py) rather than Series.to_arrow's large strings, a
    copy (0.06-0.17 s a side at 10M rows)."""
    if series.dtype in (pl.String, pl.Binary):
        return series.to_frame().to_arrow(compat_level=pl.CompatLevel.newest()).column(0)
    return _arrow(series)


def _wide_as_string(series: pl.Series) -> pl.Series:
    try:  # the physical value, as polars compares it
        return series.to_physical().cast(pl.String)
    except pl.exceptions.PolarsError:  # older polars: Decimal as text (same scale: same order)
        return series.cast(pl.String)


def _arrow(series: pl.Series) -> pa.Array:
    """A column as asofgpu reads it (through Series.to_arrow: some polars 1.x export
    temporal columns wrongly through the Arrow stream interface)."""
    return series.to_arrow()


# --------------------------------------------------------------------------- tolerance


def _numpy_duration(tolerance: np.timedelta64, dtype) -> str:
    """A ``numpy.timedelta64`` tolerance (polars 2.2 takes one; earlier versions refuse it)
    as the duration string it denotes, for temporal keys; refused on others. polars 2.2
    reads its count in the keys' own unit (seconds as milliseconds): 1 ms on nanosecond
    keys is 1 ns there.

    >>> _numpy_duration(np.timedelta64(1500, "us"), pl.Datetime("ns"))
    '1500us'
    """
    if not dtype.is_temporal():
        msg = (
            f"a numpy.timedelta64 tolerance ({tolerance!r}) is a duration, and the keys are "
            f"{dtype}: give a number in the keys' own unit"
        )
        raise InvalidOperationError(msg)
    # (polars' dry run has refused NaT, and units other than s, ms, us and ns)
    unit, count = np.datetime_data(tolerance.dtype)
    return f"{abs(int(tolerance.astype(np.int64))) * count}{unit}"


def _duration_ns(tolerance) -> int:
    """A duration string or timedelta as whole nanoseconds, sign dropped ("1d" = 24 h; polars
    has already refused months, quarters, years and malformed strings, and reads "0mo36h" as
    36 hours).

    >>> _duration_ns("0mo1d2ns"), _duration_ns("-3us")
    (86400000000002, 3000)
    """
    if isinstance(tolerance, datetime.timedelta):
        return abs(timedelta_ns(tolerance))
    parts = re.findall(r"(\d+)([a-z]+)", tolerance)
    return sum(int(n) * _UNIT_NS[unit] for n, unit in parts if int(n))


def _extension(tolerance, left: pl.DataFrame | pl.LazyFrame) -> str | None:
    """Which of asofgpu's tolerances that polars refuses ``tolerance`` is: "column" (a Series,
    an expression, or the name of a left column that is no duration string), "calendar" (a
    duration with months, quarters or years), or None for one polars reads itself.

    Only strings polars refuses become calendar ones: "1d" on a zoned key stays polars' 24
    hours. A name that is also a duration is refused, as either reading could be meant."""
    if isinstance(tolerance, (pl.Series, pl.Expr)):
        return "column"
    if not isinstance(tolerance, str):
        return None
    if tolerance in left.collect_schema().names():
        if _reads_as_duration(tolerance):
            msg = (
                f"tolerance {tolerance!r} is both a column of the left frame and a duration "
                f"string; pass pl.col({tolerance!r}) for the column, or rename the column to "
                f"use the duration"
            )
            raise ValueError(msg)
        return "column"
    if _counts_months(tolerance) and _reads_as_duration(tolerance):
        return "calendar"
    return None


def _counts_months(text: str) -> bool:
    """Whether duration string ``text`` counts months, quarters or years, which polars
    refuses: not "0mo36h", which polars reads as 36 hours. (A leading minus aside: a
    negative calendar duration is asofgpu's to refuse, in its own words.)

    >>> _counts_months("1mo"), _counts_months("-1q"), _counts_months("0mo36h")
    (True, True, False)
    """
    if not is_calendar(text, zoned=False):
        return False
    parts = calendar_parts(text.strip().lower().removeprefix("-"))
    return parts is None or parts[0] != 0


def _reads_as_duration(text: str) -> bool:
    """Whether polars reads ``text`` as a duration (its own parser, through ``offset_by``)."""
    try:
        pl.Series([0], dtype=pl.Datetime("ns")).dt.offset_by(text)
    except pl.exceptions.PolarsError:
        return False
    return True


def _as_polars_reads(options: dict, left) -> dict:
    """The options for polars' dry run: a tolerance polars refuses (see ``_extension``) is
    replaced by 0, which gives the same output schema and keeps polars' own check that the
    key can take a tolerance at all (numeric or temporal). A calendar one only on a left
    key that has months (Date, Datetime): on any other, polars refuses it with its error."""
    form = _extension(options["tolerance"], left)
    if form is None or (form == "calendar" and not _key_has_months(left, options)):
        return options
    return {**options, "tolerance": 0}


def _key_has_months(left, options: dict) -> bool:
    """Whether the left key is a Date or Datetime; False where polars cannot resolve it
    (the dry run then raises polars' own error for it)."""
    key = options["on"] if options["on"] is not None else options["left_on"]
    try:
        dtype = _key(pl.DataFrame(schema=left.collect_schema()), key).dtype
    except (pl.exceptions.PolarsError, TypeError, ValueError):
        return False
    return dtype == pl.Date or isinstance(dtype, pl.Datetime)


def _tolerance_column(tolerance, left: pl.DataFrame) -> pa.Array:
    """A column of tolerances, one per left row, for asofgpu's join (which checks the values:
    numbers in the key's physical unit or durations, non-negative, null for no limit)."""
    if isinstance(tolerance, str):
        return _arrow(left.get_column(tolerance))
    what = "a Series"
    column = tolerance
    if isinstance(tolerance, pl.Expr):  # evaluated on the left frame, a scalar broadcast
        what = "an expression"
        column = left.select(tolerance).to_series()
        if len(column) == 1:
            column = column.new_from_index(0, left.height)
    if len(column) != left.height:
        msg = (
            f"tolerance is {what} of {len(column)} values but the left frame has "
            f"{left.height} rows; a column of tolerances has one value per left row"
        )
        raise ValueError(msg)
    return _arrow(column)


# polars 1.x reads a Decimal tolerance through a float (1.44: 2.9999999999999999 is 3);
# polars 2.x reads it exactly (2.1: truncated to 2 on integer keys).
_DECIMAL_THROUGH_FLOAT = int(pl.__version__.split(".")[0]) < 2


def _number(tolerance):
    """A numeric tolerance as given (int, float, Decimal, Fraction: converted exactly for
    the key's type later), or a date or time's physical value, as polars reads them."""
    if isinstance(tolerance, (bool, np.bool_, int, np.integer)):
        return int(tolerance)
    if isinstance(tolerance, decimal.Decimal) and _DECIMAL_THROUGH_FLOAT:
        return float(tolerance)
    if isinstance(tolerance, (numbers.Real, decimal.Decimal)):
        return tolerance
    if isinstance(tolerance, (datetime.date, datetime.time)):  # polars reads their physical value
        return pl.Series([tolerance]).to_physical()[0]
    msg = "could not extract number from any-value of dtype: 'Object'"
    raise ComputeError(msg)


def _tolerance(tolerance, dtype):
    """The tolerance in the key's physical unit, as asofgpu takes it (never negative)."""
    if tolerance is None:
        return None
    if isinstance(tolerance, np.timedelta64):  # (an np.integer too: before _number)
        tolerance = _numpy_duration(tolerance, dtype)
    if isinstance(tolerance, (str, datetime.timedelta)):
        ns = _duration_ns(tolerance)
        if dtype == pl.Date:
            return ns // _DAY_NS
        unit = getattr(dtype, "time_unit", None) or "ns"  # Time: nanoseconds
        return ns // _UNIT_NS[unit]
    value = _number(tolerance)
    if dtype.is_float():
        return abs(float(value))
    if not isinstance(value, int) and not np.isfinite(float(value)):
        msg = "could not extract number from any-value of dtype: 'Float64'"
        raise ComputeError(msg)
    # int() truncates toward zero, as polars does: exactly for a Fraction, and for a Decimal
    # where polars reads it exactly (see _DECIMAL_THROUGH_FLOAT).
    return min(abs(int(value)), _U64_MAX)


# --------------------------------------------------------------------------- the result


def _gather_index(gmap) -> pl.Series:
    gmap = gmap.get() if hasattr(gmap, "get") else np.asarray(gmap)
    missing = is_no_match(gmap)
    return pl.Series(pa.array(gmap.astype(np.int64), mask=missing if missing.any() else None))


def _assemble(left, right, dry, gmap, right_by, suffix: str) -> pl.DataFrame:
    """Left columns, then the right columns polars keeps, gathered by the map, named as in
    polars' dry-run result."""
    kept = _right_sources(dry.columns[left.width :], right, right_by, set(left.columns), suffix)
    if not kept:
        return left.clone()
    # A frame of the Series, not a select (polars runs a select as a query: 0.05 ms)
    sources = _frame([_few_chunks(right[c]) for c in kept], kept)
    return left.hstack(_frame(_gathered(sources, kept, gmap), dry.columns[left.width :]))


def _no_empty_by(by_left, by_right, by) -> tuple:
    """``(by_left, by_right, by)`` with an empty ``by`` (which polars lets override the
    other two), or an empty pair, as none: polars 2.2 raised a ShapeError on ``by=[]``, 1.x
    panicked. One empty side of a pair goes on to polars' own error.

    >>> _no_empty_by(["g"], ["g"], []), _no_empty_by((), (), None), _no_empty_by([], ["g"], None)
    ((None, None, None), (None, None, None), ([], ['g'], None))
    """

    def empty(b) -> bool:
        return isinstance(b, (list, tuple)) and not b

    if empty(by) or (empty(by_left) and empty(by_right)):
        return None, None, None
    return by_left, by_right, by


def _frame(columns: list[pl.Series], names: list[str]) -> pl.DataFrame:
    """A frame of ``columns`` named ``names``. (A frame of Series named as they are gave one
    named "" the name column_0, which then was not found, or clashed with a real column_0.)

    >>> _frame([pl.Series("a", [1]), pl.Series("b", [2])], ["", "column_0"]).columns
    ['', 'column_0']
    """
    frame = pl.DataFrame([column.alias(str(i)) for i, column in enumerate(columns)])
    frame.columns = names
    return frame


def _right_sources(names, right, right_by, left_names: set, suffix: str) -> list[str]:
    """The right column behind each of polars' right output ``names``: its own name, or the
    name the suffix was added to (a name the left side holds too). By name, not by count:
    polars leaves out a coalesced key, and its lazy join may leave out another column (a
    suffixed name that is also a by column's), so counting took the wrong columns.

    >>> _right_sources(["g"], pl.DataFrame({"k": [], "t": [], "g": []}), ["k"], {"t"}, "_right")
    ['g']
    >>> _right_sources(["t_right", "g"], pl.DataFrame({"t": [], "g": []}), [], {"t"}, "_right")
    ['t', 'g']
    """
    kept = set(right.columns) - set(right_by)
    sources = []
    for name in names:
        plain = name[: len(name) - len(suffix)] if suffix and name.endswith(suffix) else None
        if name in kept and name not in left_names:
            sources.append(name)
        elif plain in kept and plain in left_names:
            sources.append(plain)
        else:
            msg = (
                f"asofgpu: polars' result has a column {name!r} that asofgpu cannot trace to a "
                f"right column; please report this with your polars version ({pl.__version__})"
            )
            raise RuntimeError(msg)
    return sources


# Numbers, times and text: asofgpu's gather takes them on all cores (booleans: Arrow's take,
# on one), and polars reads its Arrow result back as the same dtype without a copy; 4 float
# columns of 10M rows in 10 chunks: 0.05 s against polars' gather's 0.3 s. Text goes as the
# views polars holds, taken without copying a byte of it (a symbol column by a 20M-row map:
# 0.5 s in polars' gather).
_GATHERED_HERE = (
    pl.String,
    pl.Binary,
    pl.Int8,
    pl.Int16,
    pl.Int32,
    pl.Int64,
    pl.UInt8,
    pl.UInt16,
    pl.UInt32,
    pl.UInt64,
    pl.Float32,
    pl.Float64,
    pl.Date,
    pl.Time,
    pl.Boolean,
)


def _gathered(right: pl.DataFrame, kept: list[str], gmap) -> list[pl.Series]:
    """Right's ``kept`` columns taken by the map (nulls where it holds NO_MATCH): numbers,
    times and text by asofgpu's gather, every other dtype (categorical, nested, decimal,
    object) by polars' own gather."""
    schema = right.schema
    here = [
        c
        for c in kept
        if schema[c] in _GATHERED_HERE or isinstance(schema[c], (pl.Datetime, pl.Duration))
    ]
    taken = {}
    if here:
        # The frame's export keeps its chunks (Series.to_arrow copies them into one), which
        # asofgpu's gather reads where they lie; text stays in polars' views.
        exported = (right if here == right.columns else right.select(here)).to_arrow(
            compat_level=pl.CompatLevel.newest()
        )
        table = gather(exported, gmap)
        for c in here:
            series = pl.from_arrow(table.column(c))
            taken[c] = series if series.dtype == schema[c] else series.cast(schema[c])
    rest = [c for c in kept if c not in taken]
    if rest:
        by_polars = right.select(rest).select(pl.all().gather(_gather_index(gmap)))
        taken.update(zip(rest, by_polars.get_columns()))
    return [taken[c] for c in kept]


# --------------------------------------------------------------------------- the splice join


def splice_join(
    left: pl.DataFrame | pl.LazyFrame,
    right: pl.DataFrame | pl.LazyFrame,
    *,
    on: str | None = None,
    left_on: str | None = None,
    right_on: str | None = None,
    by: str | Sequence[str] | None = None,
    by_left: str | Sequence[str] | None = None,
    by_right: str | Sequence[str] | None = None,
    allow_exact_matches: bool = True,
    tolerance: str | int | float | datetime.timedelta | None = None,
    suffix: str = "_right",
    null_equality: Literal["unequal", "equal"] = "unequal",
    device: DeviceName = "auto",
) -> pl.DataFrame | pl.LazyFrame:
    """The full as-of join (``asofgpu.splice_join``) on polars frames: every left row and every
    right row once, in key order, each beside the other side's row that prevailed at its key
    in its ``by`` group. polars has no such join.

    Keys are column names, as in ``join_asof``, of kinds it accepts together;
    ``tolerance`` as ``asofgpu.splice_join`` takes it (a number in the right key's physical
    unit, a duration string such as ``"2s"`` or ``"1mo"``, or a timedelta). The columns: all of ``left``'s, then all of ``right``'s (``on`` and ``by``
    included), ``suffix`` on right names that clash; each keeps its dtype. A LazyFrame in gives
    a LazyFrame out, whose join runs at ``collect``.

    >>> import polars as pl
    >>> buys = pl.DataFrame({"ts": [1, 4], "buy": ["b1", "b2"]})
    >>> sells = pl.DataFrame({"ts": [3, 3], "sell": ["s1", "s2"]})
    >>> splice_join(buys, sells, on="ts", device="cpu").rows()
    [(1, 'b1', None, None), (1, 'b1', 3, 's1'), (1, 'b1', 3, 's2'), (4, 'b2', 3, 's2')]
    """
    _validate.device(device)
    keys = resolve_keys(on, left_on, right_on, by, by_left, by_right)
    check_suffix(suffix)
    options = dict(
        allow_exact_matches=allow_exact_matches,
        tolerance=tolerance,
        null_equality=null_equality,
        device=device,
    )

    def run(left: pl.DataFrame, right: pl.DataFrame, device: str, dry: bool) -> pl.DataFrame:
        return _splice_eager(left, right, keys, suffix, {**options, "device": device})

    return _eager_or_lazy(left, right, run, device)


def _splice_eager(left: pl.DataFrame, right: pl.DataFrame, keys, suffix: str, options: dict):
    left_on, right_on, left_by, right_by = keys
    _check_keys(left.schema, right.schema, keys)
    tolerance = options["tolerance"]
    left_key, right_key = left.get_column(left_on), right.get_column(right_on)
    if tolerance is not None:
        _check_distances(left_key, right_key)
    left_col, right_col = _orderable(left_key, right_key, tolerance is not None)
    left_cols, right_cols = _by_columns(left, right, left_by, right_by)
    names = _right_names(left.columns, right.columns, suffix)
    left_map, right_map = splice_maps(
        _arrow(left_col),
        _arrow(right_col),
        left_cols or None,
        right_cols or None,
        null_equality=options["null_equality"],
        allow_exact_matches=options["allow_exact_matches"],
        tolerance=tolerance,  # asofgpu's own reading: no polars dry run checks it here
        device=options["device"],
    )
    columns = _gathered(left, left.columns, left_map) + _gathered(right, right.columns, right_map)
    return _frame(columns, left.columns + names)


def _check_distances(left: pl.Series, right: pl.Series) -> None:
    """Refuse a splice's tolerance on keys without distances: text and booleans, as polars'
    join_asof refuses them (the splice ranked them, so that whether 'm' was within 1 of 'b'
    hung on the other keys there were), and Categoricals, whose codes (polars' join_asof's
    distances) would order the rows by code too, which follows first appearance."""
    names = f"`{left.name}` ({left.dtype}), `{right.name}` ({right.dtype})"
    if _categorical(left.dtype) or _categorical(right.dtype):
        msg = (
            f"a tolerance needs distances between the keys, and Categorical keys ({names}) "
            f"are spliced in value order, not by their codes. Hint: cast them to an Enum of "
            f"their values in order, or leave the tolerance out."
        )
        raise InvalidOperationError(msg)
    if any(s.dtype in (pl.String, pl.Binary, pl.Boolean) for s in (left, right)):
        msg = (
            f"a tolerance needs distances between the keys, and keys {names} have none: "
            f"asof join with tolerance is only supported on numeric/temporal keys"
        )
        raise InvalidOperationError(msg)


# --------------------------------------------------------------------------- window joins


def window_join(
    left: pl.DataFrame | pl.LazyFrame,
    right: pl.DataFrame | pl.LazyFrame,
    *,
    on: str | None = None,
    left_on: str | None = None,
    right_on: str | None = None,
    by: str | Sequence[str] | None = None,
    by_left: str | Sequence[str] | None = None,
    by_right: str | Sequence[str] | None = None,
    before: str | int | float | datetime.timedelta,
    after: str | int | float | datetime.timedelta = 0,
    aggs: dict[str, str | Sequence[str]],
    prevailing: bool = False,
    device: DeviceName = "auto",
) -> pl.DataFrame | pl.LazyFrame:
    """The window join (``asofgpu.window_join``, kdb+'s ``wj``) on polars frames: each left
    row with aggregates of the right rows of its ``by`` group whose ``on`` key lies within
    ``[x - before, x + after]`` of its key x. polars has no such join.

    ``before`` and ``after``: non-negative numbers in the right key's physical unit, duration
    strings such as ``"5s"``, or timedeltas. ``aggs`` maps right columns to ``count``,
    ``sum``, ``mean``, ``min``, ``max``, ``first``, ``last``; each becomes a column
    ``<column>_<agg>`` (count Int64; sum Int64, UInt64 or Float64; mean Float64; the others
    the column's dtype), null for a window without a value. A LazyFrame in gives a LazyFrame
    out, whose join runs at ``collect``.

    >>> import polars as pl
    >>> trades = pl.DataFrame({"t": [5, 9], "sym": ["A", "A"]})
    >>> quotes = pl.DataFrame({"t": [1, 3, 4, 8], "sym": ["A"] * 4, "bid": [1.0, 2.0, 3.0, 4.0]})
    >>> window_join(trades, quotes, on="t", by="sym", before=2, aggs={"bid": "max"}, device="cpu").rows()
    [(5, 'A', 3.0), (9, 'A', 4.0)]
    """
    _validate.device(device)
    keys = resolve_keys(on, left_on, right_on, by, by_left, by_right)

    def run(left: pl.DataFrame, right: pl.DataFrame, device: str, dry: bool) -> pl.DataFrame:
        _check_keys(left.schema, right.schema, keys)
        _check_reach(before, after, right.schema[keys[1]])
        wanted = _aggregations(aggs, right.schema)
        clash = name_clash(wanted, left.schema)
        if clash:
            raise pl.exceptions.DuplicateError(clash)
        reach = _reaches(before, after, prevailing, dry)
        windows = _windows(left, right, keys, **reach, device=device)
        found = {}
        for name, hows in by_column(wanted).items():
            column = _arrow_column(right, name, hows)
            for how, result in reduce_column(windows, column, hows, extreme_values=True).items():
                if isinstance(result, pa.Array):
                    found[name, how] = pl.from_arrow(result)
                else:  # a gather map
                    found[name, how] = _gathered(right, [name], result)[0]
        return left.hstack([found[agg.column, agg.agg].alias(agg.name) for agg in wanted])

    return _eager_or_lazy(left, right, run, device)


def range_join(
    left: pl.DataFrame | pl.LazyFrame,
    right: pl.DataFrame | pl.LazyFrame,
    *,
    on: str | None = None,
    left_on: str | None = None,
    right_on: str | None = None,
    by: str | Sequence[str] | None = None,
    by_left: str | Sequence[str] | None = None,
    by_right: str | Sequence[str] | None = None,
    before: str | int | float | datetime.timedelta,
    after: str | int | float | datetime.timedelta = 0,
    prevailing: bool = False,
    suffix: str = "_right",
    device: DeviceName = "auto",
) -> pl.DataFrame | pl.LazyFrame:
    """The one-to-many as-of join (``asofgpu.range_join``) on polars frames: one row per
    (left row, right row of its window), in left order then key order, and each left row with
    an empty window once, with nulls. Windows as in ``window_join``; the columns are the left
    ones, then the right ones but the ``by`` columns (``suffix`` on names that clash), each of
    its dtype.

    >>> import polars as pl
    >>> trades = pl.DataFrame({"t": [5, 9]})
    >>> quotes = pl.DataFrame({"t": [1, 3, 4], "bid": [1.0, 2.0, 3.0]})
    >>> range_join(trades, quotes, on="t", before=2, device="cpu").rows()
    [(5, 3, 2.0), (5, 4, 3.0), (9, None, None)]
    """
    _validate.device(device)
    keys = resolve_keys(on, left_on, right_on, by, by_left, by_right)
    check_suffix(suffix)

    def run(left: pl.DataFrame, right: pl.DataFrame, device: str, dry: bool) -> pl.DataFrame:
        _check_keys(left.schema, right.schema, keys)
        _check_reach(before, after, right.schema[keys[1]])
        kept = [c for c in right.columns if c not in set(keys[3])]
        names = _right_names(left.columns, kept, suffix)
        reach = _reaches(before, after, prevailing, dry)
        left_map, right_map = _windows(left, right, keys, **reach, device=device).pairs()
        columns = _gathered(left, left.columns, left_map) + _gathered(right, kept, right_map)
        return _frame(columns, left.columns + names)

    return _eager_or_lazy(left, right, run, device)


def _reaches(before, after, prevailing: bool, dry: bool) -> dict:
    """A window's reaches as ``_windows`` takes them; for a ``dry`` run, on no rows, a
    column of reaches (one per left row) cut to none."""
    if dry:
        before, after = (r[:0] if is_row_tolerances(r) else r for r in (before, after))
    return dict(before=before, after=after, prevailing=prevailing)


def _eager_or_lazy(left, right, run, device: str):
    """``run(left, right, device, dry=False)`` on DataFrames, or a LazyFrame that runs it at
    ``collect``. The LazyFrame's schema is that of a ``dry`` run on empty frames of the
    inputs' schemas, on the cpu: every check a join makes of its keys and options fails at
    the call, as polars' own joins fail, and the schema is the collected frame's by
    construction."""
    if isinstance(left, pl.LazyFrame):
        if not isinstance(right, pl.LazyFrame):
            msg = f"right must be a LazyFrame, as left is, got {_validate.type_name(right)}"
            raise TypeError(msg)
        empty = run(
            pl.DataFrame(schema=left.collect_schema()),
            pl.DataFrame(schema=right.collect_schema()),
            "cpu",  # a join of no rows: no device needed, none started at the call
            dry=True,
        )

        def collected(_: pl.DataFrame) -> pl.DataFrame:
            return run(*pl.collect_all([left, right]), device, dry=False)

        return pl.LazyFrame(schema=empty.schema).map_batches(collected, schema=empty.schema)
    if isinstance(left, pl.DataFrame):
        if not isinstance(right, pl.DataFrame):
            msg = f"right must be a DataFrame, as left is, got {_validate.type_name(right)}"
            raise TypeError(msg)
        return run(left, right, device, dry=False)
    msg = f"left must be a polars DataFrame or LazyFrame, got {_validate.type_name(left)}"
    raise TypeError(msg)


def _right_names(left_names: list[str], names: list[str], suffix: str) -> list[str]:
    """``asofgpu.table.right_names``, a clash raised as polars raises one (DuplicateError)."""
    try:
        return right_names(left_names, names, suffix)
    except ValueError as exc:
        raise pl.exceptions.DuplicateError(str(exc)) from None


def _check_keys(left_schema, right_schema, keys) -> None:
    missing = missing_key(left_schema, right_schema, keys)
    if missing:
        raise pl.exceptions.ColumnNotFoundError(missing)


def _windows(left, right, keys, before, after, prevailing, device):
    """The windows of ``left``'s rows in ``right``. The keys go to asofgpu as they are (it
    refuses text, boolean and categorical keys, whose distances mean nothing), not ranked
    as ``join_asof``'s are."""
    left_on, right_on, left_by, right_by = keys
    left_cols, right_cols = _by_columns(left, right, left_by, right_by)
    left_key, right_key = left.get_column(left_on), right.get_column(right_on)
    if left_key.dtype.is_integer() and right_key.dtype.is_integer():
        # Signed against unsigned (UInt8 vs Int64) as join_asof takes them: one 64-bit kind
        # that holds both sides' values; and 128 bits, which Arrow has not, where they fit
        left_key, right_key = _integers(left_key, right_key, distances=True)
    return windows_once(
        _arrow(left_key), left_cols or None, _arrow(right_key), right_cols or None,
        before=_reach(before, "before"), after=_reach(after, "after"), prevailing=prevailing,
        device=device,
    )  # fmt: skip


def _reach(value, param: str):
    """A window's ``before`` or ``after`` as asofgpu takes it (duration strings in polars'
    units, fixed or calendar, read by asofgpu itself), a negative string refused."""
    if isinstance(value, str) and value.strip().startswith("-"):
        msg = f"{param} must be non-negative, got {value!r}"
        raise ValueError(msg)
    return value


def _check_reach(before, after, right_key_dtype) -> None:
    """``before`` and ``after`` checked against the right key's type before any work (a
    LazyFrame's call, not its ``collect``), with asofgpu's own messages; a calendar string
    is checked when the keys are read."""
    if right_key_dtype in _WIDE_INTS:  # read as a 64-bit integer (``_windows``): Arrow has none
        right_key_dtype = pl.Int64
    arrow_type = pl.Series(dtype=right_key_dtype).to_arrow().type
    key_type = key_type_of_arrow(arrow_type, "right_on")
    check_reaches_given(before, after)
    for value, param in ((before, "before"), (after, "after")):
        value = _reach(value, param)
        if is_row_tolerances(value) or is_calendar(value, zoned=clock_changes(key_type.tz)):
            continue  # a column or a calendar duration: checked when the keys are read
        if isinstance(value, str):
            value = fixed_duration(value, param)
        tolerance_in_ticks(value, key_type, key_type.tick_ns, param)


def _aggregations(aggs, schema):
    """The window join's aggregations, checked against the Arrow types of the right columns
    they read (only those: a right frame may hold Int128 columns, which Arrow lacks)."""

    def arrow_type(name: str) -> pa.DataType:
        try:
            return pl.DataFrame(schema={name: schema[name]}).to_arrow().schema.field(0).type
        except (pa.ArrowException, pl.exceptions.PolarsError):
            if not reads_values(aggs[name]):  # count, first, last: ``nulls_alone``'s type
                return pa.bool_()
            msg = (
                f"aggs[{name!r}]: a {schema[name]} column cannot be aggregated: Arrow, "
                f"which the join reads it as, has no such type (count, first and last take it)"
            )
            raise TypeError(msg) from None

    return aggregations(aggs, list(schema), arrow_type)


def _arrow_column(frame: pl.DataFrame, name: str, hows) -> pa.ChunkedArray:
    """A right column as Arrow for its ``hows``; for count, first and last (the picks'
    values gathered by polars) one Arrow cannot hold (Int128) as ``nulls_alone``."""
    column = frame.get_column(name)
    try:
        return pl.DataFrame([column]).to_arrow(compat_level=pl.CompatLevel.newest()).column(0)
    except (pa.ArrowException, pl.exceptions.PolarsError):
        if reads_values(hows):
            raise
    return nulls_alone(column.is_null().to_numpy())


# --------------------------------------------------------------------------- the namespace


class AsofgpuNamespace:
    """``frame.asofgpu``: asofgpu's joins with ``frame`` as the left side.

    >>> import polars as pl
    >>> import asofgpu.polars
    >>> left = pl.LazyFrame({"t": [1, 5]})
    >>> right = pl.LazyFrame({"t": [4], "v": ["x"]})
    >>> left.asofgpu.join_asof(right, on="t", strategy="forward", device="cpu").collect().rows()
    [(1, 'x'), (5, None)]
    """

    def __init__(self, frame):
        self._frame = frame

    def join_asof(self, other, **options):
        """:func:`asofgpu.polars.join_asof` with this frame as ``left``."""
        return join_asof(self._frame, other, **options)

    def splice_join(self, other, **options):
        """:func:`asofgpu.polars.splice_join` with this frame as ``left``."""
        return splice_join(self._frame, other, **options)

    def window_join(self, other, **options):
        """:func:`asofgpu.polars.window_join` with this frame as ``left``."""
        return window_join(self._frame, other, **options)

    def range_join(self, other, **options):
        """:func:`asofgpu.polars.range_join` with this frame as ``left``."""
        return range_join(self._frame, other, **options)


pl.api.register_dataframe_namespace("asofgpu")(AsofgpuNamespace)
pl.api.register_lazyframe_namespace("asofgpu")(AsofgpuNamespace)
