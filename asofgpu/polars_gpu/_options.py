"""What polars' as-of join node asks for, checked and turned into the options of our IR node.

Pure Python over polars dtypes (no cudf-polars import), so every rule here is tested on a
machine without a GPU. Anything outside the subset asofgpu runs exactly like polars raises
``NotImplementedError``: cudf-polars records it and polars runs the whole query on the CPU,
where polars' own result or error comes out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import polars as pl

STRATEGIES = ("backward", "forward", "nearest")

# The largest |tolerance| polars 1.x reads into each key type (it extracts the tolerance as
# i32 for the narrow ones, u32/u64 for wide unsigned keys, i64 for the others), measured on
# polars 1.44.2. Outside these, polars raises "could not extract number from any-value", and
# so do we, by refusing: the CPU engine then raises polars' own error.
_I32 = 2**31 - 1
_I64 = 2**63 - 1
_SIGNED_LIMIT = {
    pl.Int8: _I32,
    pl.Int16: _I32,
    pl.Int32: _I32,
    pl.UInt8: _I32,
    pl.UInt16: _I32,
    pl.Date: _I32,
    pl.Int64: _I64,
}
_UNSIGNED_LIMIT = {pl.UInt32: 2**32 - 1, pl.UInt64: 2**64 - 1}  # negative: polars raises
_SIGNED = (pl.Int8, pl.Int16, pl.Int32, pl.Int64)
_UNSIGNED = (pl.UInt8, pl.UInt16, pl.UInt32, pl.UInt64)
_FLOATS = (pl.Float32, pl.Float64)
# by-keys asofgpu.plc compares exactly as polars does (floats, decimals and categoricals are
# left to polars: their equality rules are not verified on the device yet).
_BY_PLAIN = (*_SIGNED, *_UNSIGNED, pl.Boolean, pl.String, pl.Date)


@dataclass(frozen=True)
class AsofOptions:
    """Everything ``AsofJoin.do_evaluate`` needs besides the two key expressions.

    Hashable and picklable: cudf-polars hashes nodes, and multi-process engines ship them.
    """

    strategy: str
    tolerance: int | float | None  # in the key's physical unit, never negative
    allow_exact_matches: bool
    check_sortedness: bool  # raise polars' error for unsorted keys (only without by)
    left_by: tuple[str, ...]
    right_by: tuple[str, ...]
    right_columns: tuple[tuple[str, str], ...]  # (right input name, output name), in order
    zlice: tuple[int, int | None] | None  # a slice polars pushed into the join


def _base(dtype):
    """The dtype class (Datetime('ns', 'UTC') -> Datetime) for membership tests."""
    return dtype.base_type() if hasattr(dtype, "base_type") else type(dtype)


def _kind(dtype) -> str | None:
    base = _base(dtype)
    if base in _SIGNED:
        return "signed"
    if base in _UNSIGNED:
        return "unsigned"
    if base in _FLOATS:
        return "float"
    if base in (pl.Date, pl.Datetime, pl.Duration):
        return "temporal"
    return None


def check_key_dtypes(left, right) -> None:
    """On-keys asofgpu orders as polars does: integers of one signedness (widths may
    differ, as polars supercasts them), floats, and identical Date/Datetime/Duration."""
    kinds = (_kind(left), _kind(right))
    if None in kinds:
        bad = left if kinds[0] is None else right
        msg = f"asofgpu: as-of join keys of dtype {bad} run on the CPU"
        raise NotImplementedError(msg)
    if kinds[0] != kinds[1] or (kinds[0] == "temporal" and left != right):
        msg = f"asofgpu: as-of join keys of dtypes {left} and {right} run on the CPU"
        raise NotImplementedError(msg)


def check_by_dtypes(left_names, right_names, left_schema, right_schema) -> None:
    if len(left_names) != len(right_names):
        msg = "asofgpu: by_left and by_right of different lengths run on the CPU"
        raise NotImplementedError(msg)
    for left_name, right_name in zip(left_names, right_names):
        if left_name not in left_schema or right_name not in right_schema:
            msg = f"asofgpu: by-key {left_name!r}/{right_name!r} is not an input column"
            raise NotImplementedError(msg)
        left, right = left_schema[left_name], right_schema[right_name]
        if left != right:  # polars refuses these itself; never guess
            msg = f"asofgpu: by-keys of dtypes {left} and {right} run on the CPU"
            raise NotImplementedError(msg)
        if _base(left) not in _BY_PLAIN and _base(left) not in (pl.Datetime, pl.Duration):
            msg = f"asofgpu: by-keys of dtype {left} run on the CPU"
            raise NotImplementedError(msg)


def tolerance_value(tolerance, key_dtype):
    """polars' tolerance (already in the key's physical unit) as asofgpu takes it, or
    NotImplementedError where polars 1.x would raise or where its rounding is not ours."""
    if tolerance is None:
        return None
    kind = _kind(key_dtype)
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)):
        msg = f"asofgpu: a tolerance of type {type(tolerance).__name__} runs on the CPU"
        raise NotImplementedError(msg)
    if kind == "float":
        if not math.isfinite(tolerance):
            msg = f"asofgpu: a tolerance of {tolerance} runs on the CPU"
            raise NotImplementedError(msg)
        return abs(float(tolerance))
    if isinstance(tolerance, float):  # polars truncates it into the key's integer type
        msg = "asofgpu: a float tolerance on integer or temporal keys runs on the CPU"
        raise NotImplementedError(msg)
    base = _base(key_dtype)
    if base in _UNSIGNED_LIMIT:
        low, high = 0, _UNSIGNED_LIMIT[base]
    else:
        limit = _SIGNED_LIMIT.get(base, _I64)  # Datetime, Duration: i64
        low, high = -limit, limit
    if not low <= tolerance <= high:
        msg = (
            f"asofgpu: a tolerance of {tolerance} on {key_dtype} keys runs on the CPU "
            f"(polars decides whether it can read it)"
        )
        raise NotImplementedError(msg)
    return abs(tolerance)


def right_columns(
    left_names, right_names, right_by, *, left_key, right_key, coalesce, suffix
) -> tuple[tuple[str, str], ...]:
    """polars' as-of output rule for the right side: every right column but the by-keys,
    and but the key when coalescing two plain key columns of one name; a name that clashes
    with a left column takes ``suffix``. ``left_key``/``right_key``: the key's column name,
    None for an expression key. Returns (right input name, output name) pairs."""
    dropped = set(right_by)
    if coalesce and right_key is not None and right_key == left_key:
        dropped.add(right_key)
    left = set(left_names)
    return tuple(
        (name, f"{name}{suffix}" if name in left else name)
        for name in right_names
        if name not in dropped
    )


def output_names(left_names, pairs) -> list[str]:
    return [*left_names, *(out for _, out in pairs)]


def parse(
    how,
    nulls_equal,
    zlice,
    suffix,
    coalesce,
    *,
    left_schema,
    right_schema,
    left_key,
    right_key,
    left_key_dtype,
    right_key_dtype,
    schema_names,
) -> AsofOptions:
    """polars' Join options for an as-of join -> AsofOptions, or NotImplementedError.

    ``how`` is polars' ('AsOf', strategy, tolerance, tolerance_str, left_by, right_by,
    allow_exact_matches, check_sortedness); the schemas map names to polars dtypes.
    """
    if len(how) != 8:
        msg = f"asofgpu: an as-of option tuple of {len(how)} fields is not the tested layout"
        raise NotImplementedError(msg)
    _, strategy, tolerance, _, left_by, right_by, exact, check_sortedness = how
    if strategy not in STRATEGIES:
        msg = f"asofgpu: as-of strategy {strategy!r} runs on the CPU"
        raise NotImplementedError(msg)
    if nulls_equal:
        msg = "asofgpu: an as-of join with nulls_equal runs on the CPU"
        raise NotImplementedError(msg)
    if zlice is not None and (len(zlice) != 2 or zlice[0] < 0):
        msg = f"asofgpu: an as-of join sliced by {zlice} runs on the CPU"
        raise NotImplementedError(msg)
    left_by, right_by = tuple(left_by or ()), tuple(right_by or ())
    check_key_dtypes(left_key_dtype, right_key_dtype)
    check_by_dtypes(left_by, right_by, left_schema, right_schema)
    tolerance = tolerance_value(tolerance, right_key_dtype)
    pairs = right_columns(
        list(left_schema),
        list(right_schema),
        right_by,
        left_key=left_key,
        right_key=right_key,
        coalesce=coalesce,
        suffix=suffix,
    )
    names = output_names(list(left_schema), pairs)
    if names != list(schema_names):  # a layout we did not foresee: let polars build it
        msg = (
            f"asofgpu: expected the as-of join to give columns {names}, polars plans "
            f"{list(schema_names)}; running it on the CPU"
        )
        raise NotImplementedError(msg)
    return AsofOptions(
        strategy=strategy,
        tolerance=tolerance,
        allow_exact_matches=bool(exact),
        check_sortedness=bool(check_sortedness) and not left_by,
        left_by=left_by,
        right_by=right_by,
        right_columns=pairs,
        zlice=None if zlice is None else tuple(zlice),
    )
