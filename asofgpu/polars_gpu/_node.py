"""``AsofJoin``: the cudf-polars plan node of an as-of join, evaluated by ``asofgpu.plc``.

The right side is prepared (``asofgpu.plc.AsofJoin``: group codes and a sort) on the right
frame's own stream, then each left side is joined on the stream cudf-polars gives the call
(``stream_ordered_after(left, right)``), which it orders after the right frame's stream on
entry, and the right frame's stream after it on exit. So a join sees the preparation
complete, and the preparation's memory, given back on the right frame's stream, outlives
every join that read it: no call waits for the whole device or another stream. The streaming
executor's node keeps its preparation for all its left chunks (``_right_side``), until the
query ends: device memory outside what cudf-polars reserves for a call and may spill.

Imports cudf-polars and pylibcudf; ``asofgpu.polars_gpu`` imports this module only after
its version gates passed.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import ClassVar

import pylibcudf as plc
from cudf_polars.containers import Column, DataFrame
from cudf_polars.dsl.ir import IR
from cudf_polars.dsl.utils.reshape import broadcast
from polars.exceptions import InvalidOperationError

from ._options import AsofOptions
from ._right_side import ReusedRightSide, right_data

# polars' message, word for word, for unsorted keys (no by, check_sortedness=True).
NOT_SORTED = (
    "argument in operation 'asof_join' is not sorted, please sort the 'expr/series/column' first"
)
# polars' rule for by-keys: a null matches nothing.
NULLS_EQUAL = plc.types.NullEquality.UNEQUAL


@contextmanager
def _cupy_from_rmm():
    """asofgpu.plc allocates its device arrays with cupy; route them through rmm, so that
    they come from the memory resource cudf-polars set for this query (its pool) instead of
    competing with it. Thread-local in cupy: right for the streaming executor's threads."""
    import cupy
    from rmm.allocators.cupy import rmm_cupy_allocator

    with cupy.cuda.using_allocator(rmm_cupy_allocator):
        yield


class AsofJoin(IR):
    """An as-of join of two frames (polars' ``join_asof``), computed by asofgpu."""

    __slots__ = ("left_on", "options", "right_on")
    _non_child: ClassVar[tuple[str, ...]] = ("schema", "left_on", "right_on", "options")
    _n_non_child_args = 4

    def __init__(self, schema, left_on, right_on, options: AsofOptions, left: IR, right: IR):
        self.schema = schema
        self.left_on = left_on  # NamedExpr: the left key (a column or an expression)
        self.right_on = right_on
        self.options = options
        self.children = (left, right)
        # The last: None, the right side prepared at every call, or where a node made by
        # reusing_right_side keeps its preparation.
        self._non_child_args = (left_on, right_on, options, None)

    def reusing_right_side(self) -> AsofJoin:
        """This node, made to prepare its right side once for all its left chunks (the
        streaming lowering's: it has one right chunk). A node rebuilt from it (``reconstruct``,
        pickling) prepares at every call again."""
        node = self.reconstruct(self.children)
        node._non_child_args = (*self._non_child_args[:3], ReusedRightSide())
        return node

    @classmethod
    def do_evaluate(
        cls,
        left_on,
        right_on,
        options: AsofOptions,
        reused: ReusedRightSide | None,
        left: DataFrame,
        right: DataFrame,
        *,
        context,
    ) -> DataFrame:
        """Left columns, then the right columns polars keeps, gathered by asofgpu's map."""
        from .. import plc as asof_plc  # noqa: PLC0415  (imports cupy: only when run)

        if reused is None:
            join = _prepare(right_on, options, right)
        else:  # the key: everything the preparation reads
            key = (right_on, options.right_by, NULLS_EQUAL, right_data(right))
            join = reused.get(key, lambda: _prepare(right_on, options, right))
        (left_key,) = broadcast(
            left_on.evaluate(left), target_length=left.num_rows, stream=left.stream
        )
        with context.stream_ordered_after(left, right) as stream:
            if options.check_sortedness:
                _check_sorted(left_key, stream)
            left_by = plc.Table([left.column_map[name].obj for name in options.left_by])
            with _cupy_from_rmm():
                gmap = join.join(
                    left_by,
                    left_key.obj,
                    options.strategy,
                    options.allow_exact_matches,
                    tolerance=options.tolerance,
                    nearest_tie="forward",
                    stream=stream,
                )  # polars' tie rule
            sources = [right.column_map[name] for name, _ in options.right_columns]
            taken = []
            if sources:
                taken = asof_plc.gather(
                    plc.Table([c.obj for c in sources]), gmap, stream=stream
                ).columns()
            right_columns = [
                Column(col, dtype=src.dtype, name=out)
                for col, src, (_, out) in zip(taken, sources, options.right_columns, strict=True)
            ]
            result = DataFrame([*left.columns, *right_columns], stream=stream)
            return result.slice(options.zlice)


def _prepare(right_on, options: AsofOptions, right: DataFrame):
    """The right side prepared for joins (``asofgpu.plc.AsofJoin``), on the right frame's
    stream (see the module docstring); its key checked for polars' sortedness rule."""
    from .. import plc as asof_plc  # noqa: PLC0415  (imports cupy: only when run)

    stream = right.stream
    (right_key,) = broadcast(right_on.evaluate(right), target_length=right.num_rows, stream=stream)
    if options.check_sortedness:
        _check_sorted(right_key, stream)
    right_by = plc.Table([right.column_map[name].obj for name in options.right_by])
    with _cupy_from_rmm():
        return asof_plc.AsofJoin(right_by, right_key.obj, NULLS_EQUAL, stream=stream)


def _check_sorted(key: Column, stream) -> None:
    """polars' rule without ``by``: each key ascending, nulls first, or its error. A column
    polars flagged sorted is trusted without a look, as polars trusts it."""
    if not key.check_sorted(
        order=plc.types.Order.ASCENDING, null_order=plc.types.NullOrder.BEFORE, stream=stream
    ):
        raise InvalidOperationError(NOT_SORTED)
