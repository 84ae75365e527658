"""Group keys that arrive on the device, encoded there: fixed-width ``by`` columns (cupy arrays,
numba device arrays, numeric cuDF columns without nulls: anything with a readable
``__cuda_array_interface__``) -> int32 group codes, without a trip to the host. Text keys go
through the host (``_encode.Groups``), or through libcudf in ``asofgpu.plc``.

Sort-based, as a GPU does it best: each column's values, made comparable as int64 bits (floats
as float64 with -0.0 as 0.0 and one NaN, so that equal keys are equal bits; temporal values as
their ticks; bools as 0 and 1), are replaced by their rank among the right side's distinct
values (``xp.unique``, a radix sort on the device); several columns combine as mixed-radix
ranks, ranked again. A left value is found by binary search among the right's distinct values,
one thread a row (``Backend.find_groups``); a value the right side lacks is in no group (-1).

The code takes its backend: cuda on the device, python in the tests, which check it against
the host's hash-based encoding.

>>> import numpy as np
>>> from asofgpu._backend import get_backend
>>> groups = SortedGroups([np.array([5, 3, 5, 9])], ["right_by[0]"], get_backend("python"))
>>> groups.right_codes.tolist(), groups.n_groups
([1, 0, 1, 2], 3)
>>> groups.lookup([np.array([9, 4, 3])], ["left_by[0]"]).tolist()
[2, -1, 0]
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ._types import check_group_count


def is_fixed_width(dtype: np.dtype) -> bool:
    """The dtypes encoded here: integers, floats, bools, datetimes and timedeltas."""
    return np.dtype(dtype).kind in "iufbmM"


def _type_name(dtype: np.dtype) -> str:
    """A dtype as the host's messages name it (Arrow's names: int64, timestamp[ns])."""
    try:
        return str(pa.from_numpy_dtype(dtype))
    except (pa.ArrowNotImplementedError, TypeError):
        return str(dtype)


def _check_types(left: np.dtype, right: np.dtype, left_param: str, right_param: str) -> None:
    """The host's rule: one type on both sides, floats of any width excepted."""
    if left == right or (left.kind == "f" and right.kind == "f"):
        return
    msg = (
        f"{left_param} ({_type_name(left)}) and {right_param} ({_type_name(right)}) cannot "
        f"be compared: by-columns must have the same type on both sides. Hint: cast one "
        f"of them."
    )
    raise TypeError(msg)


def comparable(values, dtype: np.dtype, xp):
    """A column's values as int64 bits that are equal exactly when the keys are."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        values = values.astype(np.float64)
        values = xp.where(xp.isnan(values), np.nan, values + 0.0)  # one NaN; -0.0 -> 0.0
        return values.view(np.int64)
    if dtype.kind in "mM":
        return values.view(np.int64) if values.dtype.itemsize == 8 else values.astype(np.int64)
    return values.astype(np.int64)  # integers (uint64 wraps, equal bits for equal values), bools


def searchable(values, dtype: np.dtype, xp):
    """A column's values as ``Backend.find_groups`` searches them among ``comparable`` bits:
    integers as they are (it widens them as it reads them; uint64 viewed as int64, as
    ``comparable`` wraps it), bools as uint8, the rest as ``comparable`` makes them."""
    dtype = np.dtype(dtype)
    if dtype.kind == "u" and dtype.itemsize == 8:
        return values.view(np.int64)
    if dtype.kind in "iu":
        return values
    if dtype.kind == "b":
        return values.view(np.uint8)
    return comparable(values, dtype, xp)


def device_columns(columns: list) -> tuple[list, list] | None:
    """(``xp`` arrays, their dtypes) of by-columns that are all on the device and of fixed
    width, else None (encoded on the host)."""
    from ._columns import device_array, is_device

    if not columns or not all(is_device(c) for c in columns):
        return None
    arrays = [device_array(c) for c in columns]
    if not all(is_fixed_width(dtype) for _, dtype in arrays):
        return None
    return [a.reshape(-1) for a, _ in arrays], [dtype for _, dtype in arrays]


def on_device(obj, param: str, xp):
    """A left by-column as an ``xp`` array and its dtype, for a right side encoded on the
    device: device arrays as they are, host columns of fixed width without nulls copied over."""
    from ._columns import device_array, is_device, to_arrow

    if is_device(obj):
        array, dtype = device_array(obj)
        return array.reshape(-1), dtype
    column = to_arrow(obj, param)
    t = column.type
    fixed = (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_boolean(t)
        or pa.types.is_duration(t)
        or (pa.types.is_timestamp(t) and t.tz is None)
    )
    if not fixed or column.null_count:
        msg = (
            f"{param} must be a device array or a column of numbers, bools or naive "
            f"timestamps without nulls, as right_by was encoded on the device; got {t}"
            + (" with nulls" if fixed else "")
        )
        raise TypeError(msg)
    host = column.to_numpy()
    # cupy holds no datetimes: their int64 ticks go over, their dtype says what they are
    ticks = host.view(np.int64) if host.dtype.kind in "mM" else host
    return xp.asarray(ticks), host.dtype


class SortedGroups:
    """The right side's groups over fixed-width by-columns already on the device (the
    ``backend``'s arrays); left columns looked up there. Picklable with its arrays."""

    def __init__(self, columns: list, params: list[str], backend, dtypes: list | None = None):
        """``columns``: the right by-columns as the backend's arrays (temporal ones may come
        as their int64 ticks, with their true dtypes in ``dtypes``)."""
        self.backend = backend
        self.xp = xp = backend.xp
        self.params = params
        self.dtypes = [np.dtype(d) for d in (dtypes or [c.dtype for c in columns])]
        self._levels = []  # per column: its distinct comparable values, sorted
        self._steps = []  # per further column: the distinct combined codes, sorted
        codes = None
        for column, dtype in zip(columns, self.dtypes):
            distinct, rank = xp.unique(comparable(column, dtype, xp), return_inverse=True)
            self._levels.append(distinct)
            rank = rank.reshape(-1).astype(np.int64)  # numpy 2.0's inverse kept a shape
            if codes is None:
                codes = rank
            else:
                combined = codes * len(distinct) + rank
                step, codes = xp.unique(combined, return_inverse=True)
                self._steps.append(step)
                codes = codes.reshape(-1)
        self.n_groups = len(self._steps[-1]) if self._steps else len(self._levels[0])
        check_group_count(self.n_groups, params[0].split("[")[0])
        self.right_codes = codes.astype(np.int32)

    def __getstate__(self) -> dict:
        """Its backend by name (cupy's arrays pickle themselves)."""
        state = {**self.__dict__, "backend": self.backend.name}
        del state["xp"]
        return state

    def __setstate__(self, state: dict) -> None:
        from ._backend import get_backend

        backend = get_backend(state["backend"])
        self.__dict__.update({**state, "backend": backend, "xp": backend.xp})

    def lookup(self, columns: list, params: list[str], dtypes: list | None = None):
        """Group codes (int32, ``xp``) of left by-columns given as ``xp`` arrays, NO_GROUP
        for a key the right side lacks."""
        if len(columns) != len(self._levels):
            msg = (
                f"{params[0].split('[')[0]} must have {len(self._levels)} column(s) to "
                f"match right_by, got {len(columns)}"
            )
            raise ValueError(msg)
        dtypes = [np.dtype(d) for d in (dtypes or [c.dtype for c in columns])]
        for dtype, right, lp, rp in zip(dtypes, self.dtypes, params, self.params):
            _check_types(dtype, right, lp, rp)
        xp = self.xp
        codes = self._find(self._levels[0], columns[0], dtypes[0])
        for k in range(1, len(columns)):
            level = self._levels[k]
            rank = self._find(level, columns[k], dtypes[k])
            wide = codes.astype(np.int64) * len(level) + rank  # int32 codes times a level: int64
            combined = xp.where((codes >= 0) & (rank >= 0), wide, -1)
            codes = self._find(self._steps[k - 1], combined)  # -1 is no step's value
        return codes

    def _find(self, distinct, values, dtype=np.int64):
        """Each value's position among ``distinct`` (int32), or NO_GROUP."""
        return self.backend.find_groups(searchable(values, dtype, self.xp), distinct)
