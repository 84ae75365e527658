"""asofgpu: as-of joins on the GPU and the CPU, built as a gather map.

>>> import numpy as np, asofgpu as ag
>>> ag.asof_join(np.array([2, 9]), np.array([1, 5, 8]), device="cpu").tolist()
[0, 2]
"""

from ._host_pool import HOST_POOL as host_pool
from ._types import NO_MATCH, NO_MATCH_INT64, AmbiguousMatchError, Strategy, is_no_match
from .gather import gather
from .join import AsofJoin, asof_join
from .splice import splice_maps
from .table import join_asof, range_join, splice_join, window_join
from .window import Windows

__all__ = [
    "NO_MATCH",
    "NO_MATCH_INT64",
    "AmbiguousMatchError",
    "AsofJoin",
    "Strategy",
    "Windows",
    "asof_join",
    "gather",
    "host_pool",
    "is_no_match",
    "join_asof",
    "range_join",
    "splice_join",
    "splice_maps",
    "window_join",
]
__version__ = "0.1.0"
