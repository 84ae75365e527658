"""asofgpu: as-of joins on the GPU and the CPU, built as a gather map.

>>> import numpy as np, asofgpu as ag
>>> ag.asof_join(np.array([2, 9]), np.array([1, 5, 8]), device="cpu").tolist()
[0, 2]

The names below are imported at their first use, not with the package: the ``asofgpu``
command starts (and answers a Ctrl-C) before numpy, pyarrow and the library are loaded, and
``import asofgpu.marketdata`` loads what it needs only.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# Each public name: (the module that defines it, its name there).
_PUBLIC = {
    "NO_MATCH": ("._types", "NO_MATCH"),
    "NO_MATCH_INT64": ("._types", "NO_MATCH_INT64"),
    "AmbiguousMatchError": ("._types", "AmbiguousMatchError"),
    "AsofJoin": (".join", "AsofJoin"),
    "Strategy": ("._types", "Strategy"),
    "Windows": (".window", "Windows"),
    "asof_join": (".join", "asof_join"),
    "gather": ("._gather", "gather"),
    "host_pool": ("._host_pool", "HOST_POOL"),
    "is_no_match": ("._types", "is_no_match"),
    "join_asof": (".table", "join_asof"),
    "range_join": (".table", "range_join"),
    "splice_join": (".table", "splice_join"),
    "splice_maps": (".splice", "splice_maps"),
    "window_join": (".table", "window_join"),
}
__all__ = [  # _PUBLIC's names (tests/test_layout.py), written out for type checkers
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
# The modules an eager import of the package used to load, found as its attributes still.
_MODULES = ("join", "splice", "table", "window")
__version__ = "0.1.0"

if TYPE_CHECKING:  # what type checkers and editors see: each name re-exported ("as" itself)
    from ._gather import gather as gather
    from ._host_pool import HOST_POOL as host_pool  # noqa: F401 (re-exported so named)
    from ._types import NO_MATCH as NO_MATCH
    from ._types import NO_MATCH_INT64 as NO_MATCH_INT64
    from ._types import AmbiguousMatchError as AmbiguousMatchError
    from ._types import Strategy as Strategy
    from ._types import is_no_match as is_no_match
    from .join import AsofJoin as AsofJoin
    from .join import asof_join as asof_join
    from .splice import splice_maps as splice_maps
    from .table import join_asof as join_asof
    from .table import range_join as range_join
    from .table import splice_join as splice_join
    from .table import window_join as window_join
    from .window import Windows as Windows


if not TYPE_CHECKING:  # hidden from type checkers, which then tell a misspelt name

    def __getattr__(name: str):
        if name in _MODULES:
            return importlib.import_module("." + name, __name__)  # binds itself here
        try:
            module, attribute = _PUBLIC[name]
        except KeyError:
            raise AttributeError(f"module 'asofgpu' has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module, __name__), attribute)
        globals()[name] = value  # found here from now on, without this function
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC, *_MODULES})
