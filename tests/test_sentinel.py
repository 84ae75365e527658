"""``asofgpu.is_no_match``: where a gather map of either width holds no right row, on every
backend's maps; anything else is refused with a message naming the parameter."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import to_host

import asofgpu as ag


def test_a_joins_map_on_every_backend(device):
    gmap = ag.asof_join(np.array([0, 5, 9]), np.array([1, 4]), device=device)
    assert to_host(ag.is_no_match(gmap)).tolist() == [True, False, False]


def test_each_width_has_its_sentinel():
    wide = np.array([ag.NO_MATCH_INT64, ag.NO_MATCH, 3], dtype=np.int64)
    assert ag.is_no_match(wide).tolist() == [True, False, False]  # -2**31 is a row here
    narrow = np.array([ag.NO_MATCH, 3], dtype=np.int32)
    assert ag.is_no_match(narrow).tolist() == [True, False]


def test_other_arrays_are_refused():
    with pytest.raises(
        TypeError,
        match=r"^gmap must be an int32 or int64 gather map, got "
        r"float64$",
    ):
        ag.is_no_match(np.array([1.0]))
