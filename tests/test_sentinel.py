"""``asofgpu.is_no_match``: where a gather map of either width holds no right row, on every
backend's maps; anything else is refused with a message naming the parameter."""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pytest
from conftest import to_host

import asofgpu as ag


def test_a_joins_map_on_every_backend(device):
    gmap = ag.asof_join(np.array([0, 5, 9]), np.array([1, 4]), device=device)
    assert to_host(ag.is_no_match(gmap)).tolist() == [True, False, False]


def test_each_width_has_its_sentinel():
    # -2**31 in an int64 map is no row either: an int32 map's sentinel, widened, as gather
    # reads it (is_no_match said False where gather took it for no match)
    wide = np.array([ag.NO_MATCH_INT64, ag.NO_MATCH, 3], dtype=np.int64)
    assert ag.is_no_match(wide).tolist() == [True, True, False]
    table = pa.table({"v": [10, 11, 12, 13]})
    assert ag.gather(table, wide)["v"].to_pylist() == [None, None, 13]
    narrow = np.array([ag.NO_MATCH, 3], dtype=np.int32)
    assert ag.is_no_match(narrow).tolist() == [True, False]


@pytest.mark.parametrize(
    ("gmap", "message"),
    [
        (np.array([1.0]), "a one-dimensional int32 or int64 gather map, got 1-d float64"),
        (np.zeros((2, 2), np.int32), "a one-dimensional int32 or int64 gather map, got 2-d int32"),
        ([1, 2], "a gather map (a numpy or cupy array), got list"),  # (was an AttributeError)
        (None, "a gather map (a numpy or cupy array), got NoneType"),
    ],
)
def test_other_arrays_are_refused(gmap, message):
    with pytest.raises(TypeError, match=f"^gmap must be {re.escape(message)}$"):
        ag.is_no_match(gmap)
