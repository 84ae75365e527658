"""Any column a user holds -> what the kernels read: an ordered key array and its validity.

Host columns (numpy, pyarrow, pandas, polars, anything with ``__arrow_c_stream__`` or
``__arrow_c_array__``) become pyarrow ChunkedArrays; device columns (cupy, anything with
``__cuda_array_interface__``) stay cupy arrays. Ordered keys are reduced to three physical
kinds, int64, uint64 and float64, which is all the kernels are compiled for; temporal keys keep
their unit (ticks of so many nanoseconds) so that both sides and the tolerance can be put on
one scale.

>>> import numpy as np
>>> key = ordered_key(np.array([3, 1, 2], dtype=np.int32), "right_on", host=True)
>>> key.values.dtype, key.type.family
(dtype('int64'), 'int')
"""

from __future__ import annotations

import datetime
import math
import sys
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pyarrow as pa

from . import _arrow_numpy as arrow_numpy
from . import _pandas_arrow as pandas_arrow
from . import _validate
from ._duration import UNIT_NS, timedelta_ns

# Arrow's time units.
_TICK_NS = {unit: UNIT_NS[unit] for unit in ("s", "ms", "us", "ns")}
_DAY_NS = UNIT_NS["d"]
# numpy's fixed-length units (months and years have no fixed length).
_NUMPY_UNIT_NS = {**_TICK_NS, "m": UNIT_NS["m"], "h": UNIT_NS["h"], "D": _DAY_NS, "W": UNIT_NS["w"]}


@dataclass(frozen=True)
class KeyType:
    """The logical type of an ordered key: family, tick (ns per unit, temporal only), tz."""

    family: str  # "int", "uint", "float", "timestamp", "date", "duration", "time"
    tick_ns: int = 0
    tz: str | None = None
    name: str = ""  # as the user's type reads, for messages

    @property
    def physical(self) -> str:
        """The kernel's key kind: "int" (int64), "uint" (uint64) or "float" (float64)."""
        return self.family if self.family in ("uint", "float") else "int"

    @property
    def temporal(self) -> bool:
        return self.tick_ns > 0


@dataclass
class Key:
    """Kernel-ready ordered key: values (int64, uint64 or float64), validity (or None), and
    whether the values are known to ascend in asofgpu's total order (null slots included):
    found while copying a chunked column, and then not checked again. False: unknown."""

    values: object
    valid: object
    type: KeyType
    ascends: bool = False


# --------------------------------------------------------------------------- recognising inputs


_DLPACK_CPU, _DLPACK_CUDA_DEVICES = 1, (2, 3, 13)  # kDLCPU; kDLCUDA, CUDAHost, CUDAManaged


def _dlpack_device(obj) -> int | None:
    if not hasattr(obj, "__dlpack_device__") or isinstance(obj, np.ndarray):
        return None
    try:
        return int(obj.__dlpack_device__()[0])
    except Exception:  # noqa: BLE001 - pyarrow before 26 refuses arrays with nulls: host ones
        return None


def _has_cai(obj) -> bool:
    """Whether ``__cuda_array_interface__`` can be read: cuDF raises NotImplementedError
    for strings, lists and decimals, and for columns with nulls the mask cupy refuses."""
    try:
        interface = obj.__cuda_array_interface__
    except Exception:  # noqa: BLE001 - any failure means "read it another way"
        return False
    return interface.get("mask") is None


def is_device(obj) -> bool:
    """True for device-resident arrays: cupy, numba device arrays, anything with a readable
    ``__cuda_array_interface__`` or a CUDA ``__dlpack__``."""
    return _has_cai(obj) or _dlpack_device(obj) in _DLPACK_CUDA_DEVICES


def device_array(obj):
    """(a cupy array over a device column's memory, the column's numpy dtype). Datetime and
    timedelta columns come as their int64 ticks: cupy 14.0.0 refuses those types in a
    ``__cuda_array_interface__`` (13.x and 14.0.1 read them), and the kernels read ticks."""
    import cupy

    if not _has_cai(obj):
        arr = cupy.from_dlpack(obj)
        return arr, np.dtype(arr.dtype)
    interface = obj.__cuda_array_interface__
    dtype = np.dtype(interface["typestr"])
    if dtype.kind not in "mM":
        return cupy.asarray(obj), dtype
    return cupy.asarray(_AsTicks(obj, interface)), dtype


class _AsTicks:
    """A datetime64/timedelta64 device column's interface with int64 in place of its type;
    it keeps the column (the memory's owner) alive."""

    def __init__(self, owner, interface: dict):
        self._owner = owner
        ticks = {**interface, "typestr": "<i8"}
        if "descr" in ticks:
            ticks["descr"] = [("", "<i8")]
        self.__cuda_array_interface__ = ticks


def to_arrow(obj, param: str) -> pa.ChunkedArray:
    """A host column as a pyarrow ChunkedArray, zero-copy where the memory allows it."""
    if isinstance(obj, pa.ChunkedArray):
        return obj
    if isinstance(obj, pa.Array):
        return pa.chunked_array([obj])
    if is_device(obj):
        return pa.chunked_array([pa.array(device_to_numpy(obj))])
    if _dlpack_device(obj) == _DLPACK_CPU:
        obj = np.from_dlpack(obj)
    if type(obj).__module__.startswith("polars") and hasattr(obj, "to_arrow"):
        obj = obj.to_arrow()  # polars 1.x breaks temporal Series in the C stream export
        return obj if isinstance(obj, pa.ChunkedArray) else pa.chunked_array([obj])
    if isinstance(obj, np.ndarray) and obj.ndim != 1:
        msg = f"{param} must be one-dimensional, got an array of shape {obj.shape}"
        raise ValueError(msg)
    if type(obj).__module__.startswith("pandas") and _is_series(obj):
        # pandas' own export (__arrow_c_stream__) checks every value for NaN or NaT one at
        # a time: 32-40 ms a 10M-row column (one vectorised min here: 7-8 ms), three of
        # them in a window join.
        fast = pandas_arrow.as_it_lies(obj)
        if fast is None:
            fast = pandas_arrow.python_strings(obj)  # chunked past 2 GiB of text
        if fast is not None:
            return fast if isinstance(fast, pa.ChunkedArray) else pa.chunked_array([fast])
    try:  # one place turns Arrow's conversion errors into a message naming the parameter
        if isinstance(obj, np.ndarray):
            if not obj.dtype.isnative:  # Arrow reads native byte order only: a copy
                obj = obj.astype(obj.dtype.newbyteorder("="))
            return pa.chunked_array([_numpy_to_arrow(_fixed_time_unit(obj, param))])
        if hasattr(obj, "__arrow_c_stream__"):
            return pa.chunked_array(obj)
        if hasattr(obj, "__arrow_c_array__"):
            return pa.chunked_array([pa.array(obj)])
        if type(obj).__module__.startswith("pandas") and not hasattr(obj, "to_arrow"):
            return pa.chunked_array([pandas_arrow.column(obj)])
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        msg = f"{param} could not be read as a column of one type: {exc}"
        raise TypeError(msg) from None
    if hasattr(obj, "to_arrow"):  # cuDF Series, pylibcudf Column
        return to_arrow(obj.to_arrow(), param)
    msg = (
        f"{param} must be a column (numpy, cupy or pyarrow array, pandas, polars or cuDF "
        f"Series), got {_validate.type_name(obj)}"
    )
    raise TypeError(msg)


def _is_series(obj) -> bool:
    import pandas as pd  # imported already: obj is one of its objects

    return isinstance(obj, pd.Series)


def to_table(obj, param: str) -> pa.Table:
    """Any Arrow-compatible table: pyarrow, or anything with ``__arrow_c_stream__`` (polars,
    pandas, DuckDB relations), or a pandas DataFrame (its index is not a column)."""
    if isinstance(obj, pa.Table):
        return obj
    if isinstance(obj, pa.RecordBatch):
        return pa.Table.from_batches([obj])
    if type(obj).__module__.startswith("pandas") and hasattr(obj, "columns"):
        try:
            return pandas_arrow.table(obj)
        except pa.ArrowException as exc:  # a column Arrow cannot read (objects of two kinds)
            msg = f"{param}: its DataFrame cannot be read as Arrow: {exc}"
            raise TypeError(msg) from None
    if hasattr(obj, "__arrow_c_stream__"):
        try:
            return pa.table(obj)
        except (TypeError, ValueError, pa.ArrowException) as exc:
            if hasattr(obj, "columns"):  # a frame Arrow cannot read: say why
                msg = f"{param}: its {type(obj).__name__} cannot be read as Arrow: {exc}"
                raise TypeError(msg) from None
            # a column's stream, say: not a table
    elif hasattr(obj, "to_arrow"):  # cuDF
        return to_table(obj.to_arrow(), param)
    msg = (
        f"{param} must be a table (pyarrow Table, polars or pandas DataFrame, or anything "
        f"with __arrow_c_stream__), got {_validate.type_name(obj)}"
    )
    raise TypeError(msg)


def _numpy_to_arrow(arr: np.ndarray) -> pa.Array:
    """``pa.array(arr)`` for a one-dimensional numpy array in native byte order: numbers,
    booleans, and times in s, ms, us or ns (NaT null) over its buffer (``arrow_numpy.array``),
    as pyarrow has them, without the import of pandas that ``pa.array`` makes first (0.25 s
    of a process's first join of numpy arrays); others through ``pa.array``.

    >>> _numpy_to_arrow(np.array(["2026-12-07", "NaT"], "datetime64[s]")).to_pylist()
    [datetime.datetime(2026, 12, 7, 0, 0), None]
    """
    if type(arr) is not np.ndarray:  # a masked array's mask: pa.array makes its nulls
        return pa.array(arr)
    kind = arr.dtype.kind
    if kind in "biuf":
        return arrow_numpy.array(arr)
    if kind in "mM" and np.datetime_data(arr.dtype) in _ARROW_TICKS:
        return arrow_numpy.array(arr.view(np.int64), pa.from_numpy_dtype(arr.dtype), ~np.isnat(arr))
    return pa.array(arr)


_ARROW_TICKS = {(unit, 1) for unit in _TICK_NS}  # (datetime_data: the unit, no multiple)


def _fixed_time_unit(arr: np.ndarray, param: str) -> np.ndarray:
    """numpy minutes, hours and weeks (and timedelta days) as the exact whole seconds Arrow
    reads, multiples of a unit (``datetime64[10ms]``) as the unit; units without a fixed
    length refused.

    >>> _fixed_time_unit(np.array([1, 2], "datetime64[10ms]"), "left_on").tolist()
    [datetime.datetime(1970, 1, 1, 0, 0, 0, 10000), datetime.datetime(1970, 1, 1, 0, 0, 0, 20000)]
    """
    if arr.dtype.kind in "mM":
        unit, count = np.datetime_data(arr.dtype)
        if unit in ("m", "h", "W") or (unit == "D" and arr.dtype.kind == "m"):
            return arr.astype(arr.dtype.str[:3] + "[s]")
        if count != 1 and (unit in _TICK_NS or unit == "D"):
            # pyarrow reads datetime64[10ms] as ms, its count dropped: whole units instead
            return arr.astype(f"{arr.dtype.str[:3]}[{unit}]")
        if unit not in _TICK_NS and unit != "D":
            msg = (
                f"{param} must use a fixed time unit (W, D, h, m, s, ms, us or ns), got {arr.dtype}"
            )
            raise TypeError(msg)
    return arr


def device_to_numpy(obj):
    arr, dtype = device_array(obj)
    host = arr.get()
    return host.view(dtype) if dtype.kind in "mM" else host


# --------------------------------------------------------------------------- ordered keys


def key_type_of_arrow(t: pa.DataType, param: str) -> KeyType:
    name = str(t)
    if pa.types.is_signed_integer(t):
        return KeyType("int", name=name)
    if pa.types.is_unsigned_integer(t):
        return KeyType("uint", name=name)
    if pa.types.is_floating(t):
        return KeyType("float", name=name)
    if pa.types.is_timestamp(t):
        return KeyType("timestamp", _TICK_NS[t.unit], t.tz, name)
    if pa.types.is_duration(t):
        return KeyType("duration", _TICK_NS[t.unit], name=name)
    if pa.types.is_time(t):
        return KeyType("time", _TICK_NS[t.unit], name=name)
    if pa.types.is_date32(t):
        return KeyType("date", _DAY_NS, name=name)
    if pa.types.is_date64(t):
        return KeyType("date", _TICK_NS["ms"], name=name)
    msg = f"{param} must be an integer, float, date, time, timestamp or duration column, got {name}"
    raise TypeError(msg)


def key_type_of_numpy(dtype: np.dtype, param: str) -> KeyType:
    if dtype.kind in "mM":
        unit, count = np.datetime_data(dtype)
        if unit not in _TICK_NS:
            msg = f"{param} must use the unit s, ms, us or ns, got {dtype}"
            raise TypeError(msg)
        if count != 1:  # its ticks are not the unit's: the kernels read ticks as they lie
            msg = (
                f"{param} must use the unit {unit} itself, not a multiple of it, got {dtype}: "
                f"cast it with .astype('{dtype.str[1:3]}[{unit}]') first"
            )
            raise TypeError(msg)
        family = "timestamp" if dtype.kind == "M" else "duration"
        return KeyType(family, _TICK_NS[unit], name=str(dtype))
    kinds = {"i": "int", "u": "uint", "f": "float"}
    if dtype.kind in kinds:
        return KeyType(kinds[dtype.kind], name=str(dtype))
    msg = f"{param} must be an integer, float, datetime64 or timedelta64 array, got {dtype}"
    raise TypeError(msg)


PHYSICAL_NUMPY = {"int": np.int64, "uint": np.uint64, "float": np.float64}


def ordered_key(obj, param: str, host: bool) -> Key:
    """Reduce a column to a Key on the host (numpy) or the device (cupy)."""
    if isinstance(obj, Key):  # kernel-ready already (asofgpu.plc reads pylibcudf columns itself)
        return obj
    if not host and is_device(obj):
        import cupy

        arr, dtype = device_array(obj)  # temporal columns as their int64 ticks
        if arr.ndim != 1:
            msg = f"{param} must be one-dimensional, got an array of shape {arr.shape}"
            raise ValueError(msg)
        ktype = key_type_of_numpy(dtype, param)
        values = arr.astype(PHYSICAL_NUMPY[ktype.physical], copy=False)
        if ktype.physical == "float":
            values = canonical_floats(values, cupy)
        return Key(values, None, ktype)
    col = to_arrow(obj, param)
    ktype = key_type_of_arrow(col.type, param)
    values, valid, ascends = _arrow_to_numpy(col, ktype, checked=host)
    if ktype.physical == "float":  # keeps the order: it changes no key's place in it
        values = canonical_floats(values, np)
    if not host:
        import cupy

        values = cupy.asarray(values)
        valid = None if valid is None else cupy.asarray(valid)
    return Key(values, valid, ktype, ascends)


def _arrow_to_numpy(col: pa.ChunkedArray, ktype: KeyType, checked: bool = False):
    """The physical values of a key column (nulls filled with 0), its validity, and whether
    they are known to ascend (``Key.ascends``; only ``checked``: for the cpu's walks, which a
    device's keys never reach)."""
    copied = _copied_checked(col, ktype) if checked else None
    if copied is not None:
        return copied[0], None, copied[1]
    valid = arrow_numpy.valid(col) if col.null_count else None
    values = arrow_numpy.filled(col, 0)
    return values.astype(PHYSICAL_NUMPY[ktype.physical], copy=False), valid, False


def _copied_checked(col: pa.ChunkedArray, ktype: KeyType):
    """A key column in several runs of chunks (a reader's), without nulls and stored as its
    kernel type, copied into one array with its order checked in the same pass
    (``_backend.order.copy_checked``): (values, whether they ascend). None for any other
    column, which ``arrow_numpy.values`` reads as it lies or copies, and a walk checks."""
    from ._backend import order, walks

    dtype = np.dtype(PHYSICAL_NUMPY[ktype.physical])
    stored = arrow_numpy.physical_dtype(col.type)
    if (
        col.num_chunks < 2
        or col.null_count
        or stored is None  # (float16's: numpy reads None as float64, equal to a float key's)
        or stored != dtype
        or not walks.checks_while_copying(len(col))
    ):
        return None
    spans = arrow_numpy.segments(col)
    if spans is None or len(spans) < 2:  # one run is read where it lies
        return None
    return order.copy_checked(spans, dtype, ktype.physical == "float")


def canonical_floats(values, xp):
    """-0.0 -> 0.0 and every NaN -> the one quiet NaN, so that sorts see equal keys as equal.
    The NaNs go first: adding 0.0 to a signalling one raised numpy's "invalid value"
    warning."""
    if not len(values) or not (xp.isnan(values).any() or (values == 0).any()):
        return values
    canonical = xp.where(xp.isnan(values), np.nan, values)
    canonical += 0.0
    return canonical


def common_tick(left: KeyType, right: KeyType, left_param: str, right_param: str) -> int:
    """Check that two keys compare, and return the tick both are brought to (0: not temporal).

    Widths may differ (int32 vs int64, float32 vs float64, timestamp[s] vs timestamp[ns]);
    the family, the signedness and the timezone may not.
    """
    if left.family != right.family or left.tz != right.tz:
        hint = ""
        if {left.family, right.family} == {"int", "uint"}:
            hint = " Hint: cast both to the same signedness."
        elif left.tz != right.tz and left.family == right.family:
            hint = " Hint: convert both to the same timezone."
        elif {left.family, right.family} == {"date", "timestamp"}:
            hint = " Hint: cast the dates to timestamps (numpy's datetime64[D] is read as dates)."
        elif {left.family, right.family} <= {"int", "uint", "float"}:
            hint = " Hint: cast both to integers or both to floats."
        msg = (
            f"{left_param} ({left.name}) and {right_param} ({right.name}) cannot be compared: "
            f"the as-of key must have the same type family on both sides.{hint}"
        )
        raise TypeError(msg)
    return min(left.tick_ns, right.tick_ns)


def rescale(key: Key, tick_ns: int, param: str, xp) -> Key:
    """Bring a temporal key to a finer tick, refusing values that would overflow int64."""
    if not key.type.temporal or key.type.tick_ns == tick_ns:
        return key
    factor = key.type.tick_ns // tick_ns
    limit = np.iinfo(np.int64).max // factor
    values = key.values
    if len(values):
        live = values if key.valid is None else xp.where(key.valid, values, 0)
        if int(live.max()) > limit or int(live.min()) < -limit:
            msg = (
                f"{param} ({key.type.name}) holds values that overflow int64 when converted "
                f"to the other side's finer unit. Hint: cast both keys to the coarser unit."
            )
            raise OverflowError(msg)
    ktype = KeyType(key.type.family, tick_ns, key.type.tz, key.type.name)
    return Key(values * factor, key.valid, ktype, key.ascends)  # no overflow: order kept


# --------------------------------------------------------------------------- tolerance


@dataclass(frozen=True)
class Ticks:
    """A tolerance already on the kernel's scale (what ``tolerance_in_ticks`` returned) at
    ``tick_ns``: a join that probes both ways (splice) converts the user's tolerance once,
    against the right key's unit, and hands it to the reverse probe as is."""

    value: object  # np.uint64 or float
    tick_ns: int


def tolerance_in_ticks(tolerance, ktype: KeyType, tick_ns: int, param: str = "tolerance"):
    """The tolerance on the kernel's scale: uint64 for integer keys, float64 for float keys.

    Numbers are in the key's physical unit (of the column as given); ``timedelta`` and
    ``numpy.timedelta64`` are converted for temporal keys. Returns None for no tolerance.
    ``param`` names the distance in messages (the window join's ``before`` and ``after``).
    """
    if tolerance is None:
        return None
    if isinstance(tolerance, Ticks):
        assert tolerance.tick_ns == tick_ns, "Ticks handed to a probe of another scale"
        return tolerance.value
    if isinstance(tolerance, (datetime.timedelta, np.timedelta64)):
        if not ktype.temporal:
            msg = (
                f"{param}: a duration needs a temporal key (date, time, timestamp or "
                f"duration), the key is {ktype.name}. Hint: pass a number in the key's unit."
            )
            raise TypeError(msg)
        if isinstance(tolerance, datetime.timedelta):
            ns = timedelta_ns(tolerance)
        else:
            if np.isnat(tolerance):
                msg = f"{param} must be a duration, got NaT"
                raise ValueError(msg)
            unit, count = np.datetime_data(tolerance.dtype)
            if unit not in _NUMPY_UNIT_NS:
                msg = (
                    f"{param}: numpy.timedelta64 unit {unit!r} is not supported; "
                    f"use W, D, h, m, s, ms, us or ns"
                )
                raise ValueError(msg)
            # Python ints: exact for any count, where numpy's cast to ns would wrap.
            ns = int(tolerance.astype(np.int64)) * count * _NUMPY_UNIT_NS[unit]
        ticks = ns // tick_ns  # distances are whole ticks: d <= t  <=>  d <= floor(t)
        return _nonnegative_ticks(ticks, tolerance, param)
    if isinstance(tolerance, (bool, np.bool_)) or not isinstance(
        tolerance, (int, float, np.integer, np.floating)
    ):
        msg = (
            f"{param} must be a non-negative number, datetime.timedelta or "
            f"numpy.timedelta64, got {type(tolerance).__name__}"
        )
        raise TypeError(msg)
    if tolerance != tolerance:
        msg = f"{param} must be a non-negative number, got NaN"
        raise ValueError(msg)
    if tolerance < 0:
        msg = f"{param} must be non-negative, got {tolerance}"
        raise ValueError(msg)
    if ktype.physical == "float":
        try:
            value = float(tolerance)
        except OverflowError:
            value = float("inf")
        if value == float("inf") and tolerance != float("inf"):
            # A finite number beyond every double (10**400): beyond every finite distance,
            # but not the infinite ones (to or from inf, NaN's), which inf would let match.
            # (A finite distance past the largest double, as between -1e308 and 1e308, is
            # inf to the kernels too: ruled out here, at this one corner.)
            return sys.float_info.max
        return value
    if tolerance == float("inf"):
        return np.uint64(np.iinfo(np.uint64).max)
    # A number is in the column's own unit; the key may have been brought to a finer tick,
    # where a fraction of the column's unit is whole ticks (1.5 s is 1.5e9 ns): scaled
    # exactly (a Fraction), then rounded down, as distances are whole ticks.
    factor = ktype.tick_ns // tick_ns if ktype.temporal and ktype.tick_ns != tick_ns else 1
    exact = (
        int(tolerance) if isinstance(tolerance, (int, np.integer)) else Fraction(float(tolerance))
    )
    ticks = math.floor(exact * factor)
    return _nonnegative_ticks(ticks, tolerance, param)


@dataclass(frozen=True)
class RowTicks:
    """A column of tolerances already counted in whole ticks of ``tick_ns`` nanoseconds
    (uint64, one per left row; 2**64 - 1 for no limit), as the calendar kernel counts
    reaches: put on a probe's scale by ``at`` without reading them as Arrow durations.

    >>> RowTicks(np.array([2, 0]), 1_000).at(1, 2, True).tolist()
    [2000, 0]
    """

    values: np.ndarray
    tick_ns: int

    def __len__(self) -> int:  # a column of tolerances: one a left row
        return len(self.values)

    def at(self, tick_ns: int, n_rows: int, host: bool, param: str = "tolerance"):
        """The tolerances at ``tick_ns`` (a tick that divides this one), as
        ``row_tolerances`` gives them: uint64, on the host or the device."""
        if len(self.values) != n_rows:
            msg = f"{param} has {len(self.values)} rows but left_on has {n_rows}"
            raise ValueError(msg)
        if host:
            xp = np
            ticks = np.asarray(
                self.values if isinstance(self.values, np.ndarray) else self.values.get()
            )
        else:
            import cupy as xp

            ticks = xp.asarray(self.values)
        ticks = ticks.view(np.uint64)
        if tick_ns != self.tick_ns:  # a finer tick: scaled, past the largest clamped to it
            factor = np.uint64(self.tick_ns // tick_ns)
            largest = np.iinfo(np.uint64).max
            ticks = xp.where(ticks > largest // factor, np.uint64(largest), ticks * factor)
        return ticks


@dataclass(frozen=True)
class Reaches:
    """A tolerance per left row and per direction: ``backward``, how far back each row's
    match may lie, and ``forward``, how far ahead; each a column as ``row_tolerances`` takes
    it. A calendar tolerance becomes one (each key's reach differs by direction: 2024-03-31
    reaches back 31 days by "1mo" and ahead 30), and so does a pandas ``DateOffset``, which
    ``asofgpu.pandas`` measures with pandas' own arithmetic. ``AsofJoin.join`` takes it as
    ``tolerance``: a backward or forward join reads its direction's column, a nearest one
    checks each side's candidate against its own.

    >>> Reaches(np.array([31]), np.array([30])).forward.tolist()
    [30]
    """

    backward: object
    forward: object


def is_row_tolerances(tolerance) -> bool:
    """Whether ``tolerance`` is a column of distances, one per left row (anything with a
    length or an Arrow or CUDA array interface, text aside, and mappings and sets, which hold
    no row order), rather than one distance.

    >>> is_row_tolerances(np.array([1, 2])), is_row_tolerances(5), is_row_tolerances("5s")
    (True, False, False)
    >>> is_row_tolerances({"a": 10}), is_row_tolerances({10})
    (False, False)
    """
    if isinstance(tolerance, (str, bytes, Mapping, AbstractSet)) or (
        isinstance(tolerance, np.ndarray) and tolerance.ndim == 0
    ):
        return False
    return any(
        hasattr(tolerance, name)
        for name in (
            "__len__",
            "__arrow_c_array__",
            "__arrow_c_stream__",
            "__cuda_array_interface__",
        )
    )


def row_tolerances(
    column, ktype: KeyType, tick_ns: int, n_rows: int, host: bool, param: str = "tolerance"
):
    """A column of tolerances, one per left row, on the kernel's scale (``tolerance_in_ticks``
    of each): numbers in the right key's unit, or durations (Arrow durations, numpy
    timedelta64) for temporal keys; a null entry means no limit (the largest distance).
    Returns a numpy array on the host, or cupy on the device.

    >>> t = row_tolerances(np.array([2, 0]), KeyType("int", name="int64"), 0, 2, True)
    >>> t.tolist()
    [2, 0]
    """
    if isinstance(column, RowTicks):  # counted in ticks already (a calendar's reaches)
        return column.at(tick_ns or ktype.tick_ns, n_rows, host, param)
    col = to_arrow(column, param)
    if len(col) != n_rows:
        msg = f"{param} has {len(col)} rows but left_on has {n_rows}; a column of tolerances has one per left row"
        raise ValueError(msg)
    t = col.type
    is_float = ktype.physical == "float"
    if pa.types.is_null(t):  # nulls only, typed by nothing (pd.Series([None])): no limit
        col = pa.chunked_array([pa.nulls(len(col), pa.float64() if is_float else pa.uint64())])
        t = col.type
    if pa.types.is_duration(t):
        if not ktype.temporal:
            msg = (
                f"{param}: durations need a temporal key (date, time, timestamp or duration), "
                f"the key is {ktype.name}. Hint: pass numbers in the key's unit."
            )
            raise TypeError(msg)
        per_unit = _TICK_NS[t.unit]
        values = arrow_numpy.filled(col, 0).astype(np.int64)
        numerator, denominator = per_unit, tick_ns  # duration units to ticks, rounded down
    elif pa.types.is_integer(t) or pa.types.is_floating(t):
        values = arrow_numpy.filled(col, 0)
        scaled = ktype.temporal and ktype.tick_ns != tick_ns
        numerator, denominator = (ktype.tick_ns // tick_ns if scaled else 1), 1
    else:
        msg = (
            f"{param} must be a number, a duration or a column of them (one per left row), "
            f"got a column of {t}"
        )
        raise TypeError(msg)
    valid = arrow_numpy.valid(col) if col.null_count else None
    negative = values < 0 if valid is None else valid & (values < 0)
    if negative.any():
        at = int(np.argmax(negative))
        msg = f"{param} must be non-negative, got {values[at]} at left row {at}"
        raise ValueError(msg)
    if values.dtype.kind == "f":
        nan = np.isnan(values) if valid is None else valid & np.isnan(values)
        if nan.any():
            at = int(np.argmax(nan))
            msg = f"{param} must be a non-negative number, got NaN at left row {at}"
            raise ValueError(msg)
    largest = np.inf if is_float else np.iinfo(np.uint64).max  # no limit
    if is_float:
        ticks = values.astype(np.float64) * numerator / denominator
    elif values.dtype.kind == "f":  # whole ticks, rounded down, clamped to the largest
        ticks = _floor_times(values.astype(np.float64), numerator)  # (denominator: 1)
    else:  # whole ticks, rounded down, without overflow
        ticks = values.astype(np.int64, copy=False).view(np.uint64)
        # Seconds to a key of seconds go 1:1, not through nanoseconds, which past 2**64
        # (585 years) were clamped, and 600 years of a key of seconds became 584.
        common = math.gcd(numerator, denominator)
        numerator, denominator = numerator // common, denominator // common
        if numerator != 1:
            beyond = ticks > largest // numerator  # past every distance: no limit
            ticks = np.where(beyond, 0, ticks) * np.uint64(numerator)
        if denominator != 1:
            ticks = ticks // np.uint64(denominator)
        if numerator != 1:
            ticks[beyond] = largest
    if valid is not None:
        ticks = np.where(valid, ticks, largest).astype(ticks.dtype)
    if host:
        return ticks
    import cupy

    return cupy.asarray(ticks)


def _floor_times(values: np.ndarray, factor: int) -> np.ndarray:
    """``floor(value * factor)`` of non-negative floats and a whole ``factor``, exactly, as
    uint64 (a product that rounds to 2**64 or more, inf too: the largest, no limit). The
    float product rounds: 2.675 s is 2674.999... ms, whose product rounds up to 2675.0, a
    tick more than the number holds (``tolerance_in_ticks`` counts a scalar exactly). The
    product's rounding error, found exactly (Dekker's product, of halves split by
    Veltkamp's constant), is added back where the product came out whole: elsewhere no
    whole number lies between it and the truth.

    >>> _floor_times(np.array([2.675, 0.5, 3.0, np.inf]), 1000).tolist()
    [2674, 500, 3000, 18446744073709551615]
    """
    product = values * float(factor)
    floor = np.floor(product)
    beyond = product >= 2.0**64  # inf too: past every distance
    ticks = np.where(beyond, 0.0, floor).astype(np.uint64)
    ticks[beyond] = np.iinfo(np.uint64).max
    if factor == 1:
        return ticks
    safe = np.where(beyond, 0.0, values)  # no overflow in the split

    def halves(x):
        big = x * 134217729.0  # 2**27 + 1
        high = big - (big - x)
        return high, x - high

    v_high, v_low = halves(safe)
    f_high, f_low = halves(np.float64(factor))
    kept = np.where(beyond, 0.0, product)
    error = ((v_high * f_high - kept) + v_high * f_low + v_low * f_high) + v_low * f_low
    step = np.floor(error)  # product + error is the true value; its floor, where product is whole
    whole = (floor == product) & ~beyond
    down, up = whole & (step < 0), whole & (step > 0)
    ticks[down] -= (-step[down]).astype(np.uint64)
    ticks[up] += step[up].astype(np.uint64)
    return ticks


def _nonnegative_ticks(ticks: int, tolerance, param: str) -> np.uint64:
    if ticks < 0:
        msg = f"{param} must be non-negative, got {tolerance}"
        raise ValueError(msg)
    return np.uint64(min(ticks, int(np.iinfo(np.uint64).max)))
