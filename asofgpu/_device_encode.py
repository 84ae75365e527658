"""pylibcudf columns -> what the primitive reads, without leaving the device.

Two jobs, both for ``asofgpu.plc``:

- ``ordered_key``: an ordered (``on``) column as a kernel-ready ``Key``: a zero-copy cupy view of
  its values (widened to int64, uint64 or float64 when narrower), and its validity when it has
  nulls.
- ``DeviceGroups``: ``by`` columns of any fixed-width or string type -> int32 group codes, with
  libcudf's own kernels. The right keys are stable-sorted once; a row's group is the rank of its
  run of equal keys in that order; a left row is found by ``lower_bound`` and ``upper_bound`` in
  the sorted right keys (a non-empty equal range is an exact match). One comparator, libcudf's
  lexicographic row comparator, decides sorting, run boundaries and lookups alike: nulls equal
  each other, NaN equals NaN, -0.0 equals 0.0. Strings never reach the host.

Everything here is checked on the host before device memory is touched (types, lengths, column
counts), so that argument errors come without a GPU. The functions that touch the device take
the rmm ``Stream`` the pylibcudf calls run on; cupy's work runs on that stream too.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ._columns import PHYSICAL_NUMPY, Key, canonical_floats, key_type_of_arrow
from ._types import NO_GROUP


def type_name(dtype) -> str:
    """A pylibcudf DataType as messages name it: ``INT64``, ``STRING``, ``DECIMAL64(scale=-2)``."""
    name = dtype.id().name
    return f"{name}(scale={dtype.scale()})" if name.startswith("DECIMAL") else name


def on_key_type(dtype, param: str):
    """The KeyType of an ordered pylibcudf column (TypeError for types that have no order the
    kernels know: strings, bools, decimals, nested)."""
    try:
        arrow = dtype.to_arrow()
    except (TypeError, ValueError):  # decimals, lists, structs: no plain Arrow equivalent
        arrow = None
    if arrow is None or pa.types.is_boolean(arrow) or pa.types.is_string(arrow):
        msg = (
            f"{param} must be an integer, float, timestamp or duration column, "
            f"got {type_name(dtype)}"
        )
        raise TypeError(msg)
    return key_type_of_arrow(arrow, param)


def _storage_dtype(dtype) -> np.dtype:
    """The numpy dtype of a fixed-width column's data buffer (temporal types: their int)."""
    import pylibcudf as plc

    arrow = dtype.to_arrow()
    if pa.types.is_integer(arrow) or pa.types.is_floating(arrow):
        return np.dtype(arrow.to_pandas_dtype())
    return np.dtype(f"int{8 * plc.types.size_of(dtype)}")


def values_view(col, dtype: np.dtype):
    """A cupy array over a fixed-width column's values (its offset applied), zero-copy; the
    column is kept alive as the memory's owner."""
    import cupy

    n = col.size()
    if n == 0:
        return cupy.empty(0, dtype=dtype)
    ptr = col.data().ptr + col.offset() * dtype.itemsize
    memory = cupy.cuda.UnownedMemory(ptr, n * dtype.itemsize, owner=col)
    return cupy.ndarray((n,), dtype=dtype, memptr=cupy.cuda.MemoryPointer(memory, 0))


def validity(col, stream):
    """A cupy bool array, True where ``col`` holds a value; None when it has no nulls."""
    import pylibcudf as plc

    if col.null_count() == 0:
        return None
    valid = plc.unary.is_valid(col, stream=stream)  # BOOL8: one byte per row, 0 or 1
    return values_view(valid, np.dtype(np.uint8)).view(np.bool_)


def ordered_key(col, param: str, stream) -> Key:
    """An ordered pylibcudf column as the kernels read it; null slots hold whatever the
    column's memory holds there (the validity keeps them out of every search)."""
    import cupy

    ktype = on_key_type(col.type(), param)
    values = values_view(col, _storage_dtype(col.type()))
    values = values.astype(PHYSICAL_NUMPY[ktype.physical], copy=False)
    if ktype.physical == "float":
        values = canonical_floats(values, cupy)
    return Key(values, validity(col, stream), ktype)


# --------------------------------------------------------------------------- group codes


def check_by_type(dtype, param: str) -> None:
    """Any flat type libcudf sorts: numbers, bools, strings, timestamps, durations, decimals."""
    import pylibcudf as plc

    if dtype.id() in (
        plc.TypeId.LIST,
        plc.TypeId.STRUCT,
        plc.TypeId.DICTIONARY32,
        plc.TypeId.EMPTY,
    ):
        msg = (
            f"{param} must be a flat column (numbers, strings, timestamps, bool), "
            f"got {type_name(dtype)}"
        )
        raise TypeError(msg)


def _is_float(dtype) -> bool:
    import pylibcudf as plc

    return dtype.id() in (plc.TypeId.FLOAT32, plc.TypeId.FLOAT64)


def check_by_types_match(left, right, left_param: str, right_param: str) -> None:
    """By-columns compare only within one type (float widths aside: both become float64)."""
    same = left.id() == right.id() and left.scale() == right.scale()
    if not same and not (_is_float(left) and _is_float(right)):
        msg = (
            f"{left_param} ({type_name(left)}) and {right_param} ({type_name(right)}) "
            f"cannot be compared: by-columns must have the same type on both sides. "
            f"Hint: cast one of them."
        )
        raise TypeError(msg)


def _searchable(table, stream):
    """float32 columns as float64, so that both sides' tables have one type per column."""
    import pylibcudf as plc

    float64 = plc.DataType(plc.TypeId.FLOAT64)
    columns = [
        plc.unary.cast(c, float64, stream=stream) if c.type().id() == plc.TypeId.FLOAT32 else c
        for c in table.columns()
    ]
    return plc.Table(columns)


def _null_rows(table, stream):
    """A cupy bool array, True where any column of ``table`` is null (None: no nulls)."""
    mask = None
    for col in table.columns():
        valid = validity(col, stream)
        if valid is not None:
            mask = ~valid if mask is None else mask | ~valid
    return mask


class DeviceGroups:
    """The right side's by-keys as group codes, and the lookup of left keys in them.

    ``codes`` (cupy int32, one per right row) and ``n_groups`` are what the primitive's
    ``GroupCodes`` carries. Under ``null_equal=False`` a row with a null key gets -1.
    """

    def __init__(self, right_by, null_equal: bool, stream):
        import cupy
        import pylibcudf as plc

        self.null_equal = null_equal
        table = _searchable(right_by, stream)
        k, n = table.num_columns(), table.num_rows()
        self._order = [plc.types.Order.ASCENDING] * k
        self._nulls = [plc.types.NullOrder.BEFORE] * k
        perm = plc.sorting.stable_sorted_order(table, self._order, self._nulls, stream=stream)
        self._sorted = plc.copying.gather(
            table, perm, plc.copying.OutOfBoundsPolicy.DONT_CHECK, stream=stream
        )
        # A sorted position starts a run of equal keys iff the lower bound of its own key is
        # itself; the rank of the run it belongs to is its group.
        first = self._search(plc.search.lower_bound, self._sorted, stream)
        rank = cupy.cumsum(first == cupy.arange(n, dtype=np.int32), dtype=np.int32) - 1
        self._rank = rank
        self.n_groups = int(rank[-1]) + 1 if n else 0
        codes = cupy.empty(n, dtype=np.int32)
        codes[values_view(perm, np.dtype(np.int32))] = rank
        self.codes = self._drop_null_keys(codes, table, stream)

    def _search(self, how, needles, stream):
        result = how(self._sorted, needles, self._order, self._nulls, stream=stream)
        return values_view(result, np.dtype(np.int32))  # libcudf's size_type

    def _drop_null_keys(self, codes, table, stream):
        if not self.null_equal:
            nulls = _null_rows(table, stream)
            if nulls is not None:
                codes[nulls] = NO_GROUP
        return codes

    def lookup(self, left_by, stream):
        """Codes of left rows in the right's numbering (-1: no such group, or a null key),
        computed on ``stream``: the probe's, whatever stream the right side was prepared on
        (cupy's work inside the caller's ``_on_stream`` block goes there too)."""
        import cupy
        import pylibcudf as plc

        table = _searchable(left_by, stream)
        n = table.num_rows()
        if self.n_groups == 0:
            return cupy.full(n, NO_GROUP, dtype=np.int32)
        lo = self._search(plc.search.lower_bound, table, stream)
        hi = self._search(plc.search.upper_bound, table, stream)
        found = hi > lo  # a non-empty range of equal right keys: the group exists
        last = len(self._rank) - 1
        codes = cupy.where(found, self._rank[cupy.minimum(lo, last)], NO_GROUP)
        return self._drop_null_keys(codes.astype(np.int32, copy=False), table, stream)
