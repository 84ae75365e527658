"""Small shared vocabulary: the no-match sentinel, strategies, the probe options.

>>> Strategy("nearest") is Strategy.NEAREST
True
>>> NO_MATCH
-2147483648
"""

from __future__ import annotations

import datetime  # noqa: F401 - named in Tolerance
import enum
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, Union

import numpy as np

if TYPE_CHECKING:  # the front ends' libraries, for the annotations only
    import cupy
    import pandas
    import polars
    import pyarrow

#: What the public API takes as a column: numpy and cupy arrays, Arrow arrays, pandas and
#: polars Series, cuDF columns and anything with ``__arrow_c_array__`` or
#: ``__cuda_array_interface__`` (the last two are not spelled here).
Column = Union[
    "np.ndarray",
    "pyarrow.Array",
    "pyarrow.ChunkedArray",
    "pandas.Series",
    "polars.Series",
    "cupy.ndarray",
]
#: One by column or several.
ByColumns = Union[Column, Sequence[Column]]
#: A gather map: numpy on the host backends, cupy on cuda.
GatherMap = Union["np.ndarray", "cupy.ndarray"]
StrategyName = Literal["backward", "forward", "nearest"]
DeviceName = Literal["auto", "cpu", "cuda", "python"]
#: A fixed tolerance: a number in the key's unit, or a duration for temporal keys (a pandas
#: Timedelta is a ``datetime.timedelta``).
Tolerance = Union[int, float, "datetime.timedelta", "np.timedelta64"]
#: ``AsofJoin.join``'s, ``asof_join``'s and ``join_asof``'s: a fixed tolerance, or a column of
#: them, one per left row (numbers or durations; null: no limit).
RowTolerance = Union[Tolerance, Column]
#: pandas' name for the direction of ``merge_asof``.
PandasDirection = Literal["backward", "forward", "nearest"]
#: A whole table: pyarrow, pandas or polars, or anything with ``__arrow_c_stream__`` (not
#: spelled here).
TableLike = Union["pyarrow.Table", "pyarrow.RecordBatch", "pandas.DataFrame", "polars.DataFrame"]

#: The gather-map sentinel for "no right row", libcudf's JoinNoMatch for int32 maps.
NO_MATCH = int(np.iinfo(np.int32).min)
#: The sentinel of int64 maps (right sides of 2**31 rows or more).
NO_MATCH_INT64 = int(np.iinfo(np.int64).min)
#: The group code of a row in no right group: a null by value, or one the right lacks.
NO_GROUP = -1


#: The most groups a right side may hold: group codes are int32, -1 for "no group".
MAX_GROUPS = 2**31 - 1


def check_group_count(n_groups: int, param: str = "right_by") -> int:
    """``n_groups``, refused past ``MAX_GROUPS`` (a right side of over 2**31 rows whose
    by-keys are nearly all distinct), whose int32 codes would wrap and match wrong groups.

    >>> check_group_count(40)
    40
    >>> check_group_count(2**31)
    Traceback (most recent call last):
    ...
    ValueError: right_by holds 2,147,483,648 distinct groups; asofgpu numbers them as int32, up to 2,147,483,647
    """
    if n_groups > MAX_GROUPS:
        msg = (
            f"{param} holds {n_groups:,} distinct groups; asofgpu numbers them as int32, "
            f"up to {MAX_GROUPS:,}"
        )
        raise ValueError(msg)
    return n_groups


def is_no_match(gmap):
    """Where a gather map holds no right row: its sentinel, ``NO_MATCH`` in an int32 map and
    ``NO_MATCH_INT64`` in an int64 one (where ``NO_MATCH``, an int32 map's widened, says so
    too, as ``gather`` reads it); an array of bools on the map's own device (numpy or cupy).

    >>> is_no_match(np.array([3, NO_MATCH, 0], dtype=np.int32)).tolist()
    [False, True, False]
    >>> is_no_match(np.array([NO_MATCH_INT64, 7, NO_MATCH])).tolist()
    [True, False, True]
    """
    dtype, ndim = getattr(gmap, "dtype", None), getattr(gmap, "ndim", None)
    if dtype is None or ndim is None:
        msg = f"gmap must be a gather map (a numpy or cupy array), got {type(gmap).__name__}"
        raise TypeError(msg)
    dtype = np.dtype(dtype)
    if dtype not in (np.int32, np.int64) or ndim != 1:
        msg = f"gmap must be a one-dimensional int32 or int64 gather map, got {ndim}-d {dtype}"
        raise TypeError(msg)
    if dtype == np.int32:
        return gmap == NO_MATCH
    return (gmap == NO_MATCH_INT64) | (gmap == NO_MATCH)


class Strategy(str, enum.Enum):
    """Which right row a left row takes: the latest at or before, the earliest at or after,
    or the closest of the two."""

    BACKWARD = "backward"
    FORWARD = "forward"
    NEAREST = "nearest"


class AmbiguousMatchError(ValueError):
    """Raised by ``ambiguous="raise"`` when the chosen key has several rows in its group."""


# Integer codes handed to the kernels (kernels take plain integers, never enums).
STRATEGY_CODE = {Strategy.BACKWARD: 0, Strategy.FORWARD: 1, Strategy.NEAREST: 2}
NEAREST_TIE_CODE = {"backward": 0, "forward": 1}
