"""Small shared vocabulary: the no-match sentinel, strategies, the probe options.

>>> Strategy("nearest") is Strategy.NEAREST
True
>>> NO_MATCH
-2147483648
"""

from __future__ import annotations

import enum

import numpy as np

#: The gather-map sentinel for "no right row", libcudf's JoinNoMatch for int32 maps.
NO_MATCH = int(np.iinfo(np.int32).min)
#: The sentinel of int64 maps (right sides of 2**31 rows or more).
NO_MATCH_INT64 = int(np.iinfo(np.int64).min)


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
