"""A prepared ``AsofJoin`` pickles (to worker processes, to disk) and comes back equal: its
arrays by value, its backend by name, on every backend; its probes give the oracle's maps
before and after."""

from __future__ import annotations

import pickle

import numpy as np
import pyarrow as pa
import pytest
from conftest import to_host
from oracle import oracle

from asofgpu._backend import cuda_usable, cudasim_enabled
from asofgpu.join import AsofJoin

STRATEGIES = ["backward", "forward", "nearest"]


def _sides(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    right_t, left_t = rng.integers(0, 50, n), rng.integers(-5, 55, n)
    right_g = rng.choice(["a", "b", "c", None], n)
    left_g = rng.choice(["a", "b", "c", "d", None], n)
    return right_t, right_g, left_t, left_g


@pytest.mark.parametrize("presorted", [False, True])
def test_a_prepared_join_comes_back_equal(device, small, presorted):
    right_t, right_g, left_t, left_g = _sides(small)
    if presorted:  # grouped, keys ascending within groups
        order = np.lexsort((right_t, np.array([str(g) for g in right_g])))
        right_t, right_g = right_t[order], right_g[order]
    prepared = AsofJoin(right_t, pa.array(right_g), presorted=presorted, device=device)
    before = {s: to_host(prepared.join(left_t, pa.array(left_g), strategy=s)) for s in STRATEGIES}
    again = pickle.loads(pickle.dumps(prepared))
    assert again.backend.name == prepared.backend.name == device
    for strategy in STRATEGIES:
        got = to_host(again.join(left_t, pa.array(left_g), strategy=strategy))
        np.testing.assert_array_equal(got, before[strategy])
        want = oracle(
            left_t.tolist(),
            right_t.tolist(),
            [(g,) for g in left_g],
            [(g,) for g in right_g],
            strategy=strategy,
        )
        np.testing.assert_array_equal(got, want)
    # and once more, with what the probes cached (duplicates, keys at a finer tick)
    assert pickle.loads(pickle.dumps(again)).n_groups == prepared.n_groups


def test_a_device_join_unpickled_without_a_gpu_says_so():
    if cudasim_enabled() or cuda_usable():
        pytest.skip("a GPU (or the simulator) is usable here")
    state = AsofJoin(np.array([1, 2]), device="cpu").__getstate__()
    state["backend"] = "cuda"  # as a GPU session pickles it
    with pytest.raises(
        RuntimeError,
        match=r"^this AsofJoin was prepared on device='cuda', "
        r"which is not usable here: device='cuda' needs an NVIDIA GPU",
    ):
        pickle.loads(pickle.dumps(state)) and AsofJoin.__new__(AsofJoin).__setstate__(state)


def test_a_probe_at_a_finer_tick_leaves_a_pickle_under_way_alone():
    """A probe of a finer time unit keeps the right keys rescaled to it; added to the dict a
    pickle taken by another thread was iterating, ``pickle.dumps`` raised "dictionary changed
    size during iteration" (40 of 1,000 tries of a service that pickled while it probed). The
    probe now swaps in a new dict and leaves the old one as it was."""
    right = pa.array(np.arange(0, 4000, 2), pa.timestamp("ms"))
    prepared = AsofJoin(right, device="cpu")
    seen_by_a_pickle = prepared._keys
    before = dict(seen_by_a_pickle)
    left = pa.array(np.arange(0, 4000, 3) * 1000, pa.timestamp("us"))
    got = prepared.join(left)
    assert seen_by_a_pickle == before
    assert len(prepared._keys) == len(before) + 1
    want = oracle(np.arange(0, 4000, 3).tolist(), np.arange(0, 4000, 2).tolist())
    np.testing.assert_array_equal(to_host(got), want)
    np.testing.assert_array_equal(to_host(pickle.loads(pickle.dumps(prepared)).join(left)), want)
