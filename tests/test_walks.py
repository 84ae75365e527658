"""``walks.recorded``: the one way tests see which CPU walk a call took."""

from __future__ import annotations

import threading

import numpy as np

from asofgpu import AsofJoin
from asofgpu._backend import walks


def test_nested_blocks_each_get_every_decision():
    """Leaving an inner block (its list equal to the outer's) keeps the outer one recording."""
    walks.parallel(1)  # outside: not recorded
    with walks.recorded() as outer:
        with walks.recorded() as inner:
            pass
        walks.radix_sorts(1 << 20)
        with walks.recorded() as inner:
            walks.parallel(1)
    walks.parallel(1)
    assert outer == [("radix_sorts", True), ("parallel", False)]
    assert inner == [("parallel", False)]


def test_decisions_on_other_threads_are_recorded():
    with walks.recorded() as decisions:
        thread = threading.Thread(target=walks.gathers_in_parallel, args=(0,))
        thread.start()
        thread.join()
    assert decisions == [("gathers_in_parallel", False)]


def test_a_probe_records_the_walk_it_took(thresholds):
    """A prepared probe of sorted rows against a time-ordered right side of one group streams
    it; forced off by the switch, it gallops from cursors."""
    right = np.arange(0, 200_000, 2)
    left = np.arange(1, 200_000, 2)
    prepared = AsofJoin(right, device="cpu")
    with walks.recorded() as decisions:
        prepared.join(left)
    assert ("streams", True) in decisions
    thresholds(stream_span=0)
    with walks.recorded() as decisions:
        prepared.join(left)
    assert ("streams", False) in decisions
