"""The streaming executor's lowering of ``AsofJoin``: a broadcast join.

Without it cudf-polars' generic lowering collapses both inputs into one partition (and warns).
An as-of match of a left row depends only on that row and the whole right side, so the left
side keeps its partitions and the right side is gathered into one partition (across ranks
too: that is what ``Repartition`` to one partition does), which every left chunk is joined
with. The lowered node prepares that one right chunk once for all its left chunks
(``AsofJoin.reusing_right_side``). A slice polars pushed into the join would cut every
chunk: then both sides collapse.
"""

from __future__ import annotations

import operator
from functools import reduce

from cudf_polars.streaming.base import PartitionInfo
from cudf_polars.streaming.dispatch import lower_ir_node
from cudf_polars.streaming.repartition import Repartition
from cudf_polars.streaming.utils import _lower_ir_fallback

from ._node import AsofJoin


def lower_asof_join(ir: AsofJoin, rec):
    if ir.options.zlice is not None:
        return _lower_ir_fallback(
            ir, rec, msg="asofgpu: a sliced as-of join runs as one partition."
        )
    left, right = ir.children
    left, left_info = rec(left)
    right, right_info = rec(right)
    partition_info = reduce(operator.or_, (left_info, right_info))
    right = Repartition(right.schema, right)
    partition_info[right] = PartitionInfo(count=1)
    lowered = ir.reconstruct([left, right]).reusing_right_side()
    partition_info[lowered] = PartitionInfo(count=partition_info[left].count)
    return lowered, partition_info


def register() -> None:
    lower_ir_node.register(AsofJoin, lower_asof_join)
