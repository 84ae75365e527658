"""Staleness quantiles over streamed chunks: every match, or an evenly spaced sample counted
across all chunks, whose quantiles stay within a small rank error of the whole stream's
however the chunks are cut."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from asofgpu._staleness import Staleness


def _stream(n: int, seed: int):
    """Right keys, a map into them, and left keys with a heavy-tailed staleness."""
    rng = np.random.default_rng(seed)
    right = np.sort(rng.integers(0, 10**12, n))
    gmap = rng.permutation(n)
    left = right[gmap] + rng.exponential(10**6, n).astype(np.int64)
    return right, gmap, left


def test_a_sample_of_unequal_chunks_and_parts_is_unbiased():
    """Chunks of very different sizes, matched against different right sides (the windows or
    partitions of enrich): a per-chunk cap would weigh the small chunks up."""
    n = 400_000
    right, gmap, left = _stream(n, 5)
    order = np.argsort(left - right[gmap])  # the stalest rows last: in the small chunks
    cuts = [0, 300_000, 390_000, 399_000, n]
    staleness = Staleness(pa.array(right[:0], pa.timestamp("ns")), every=10)
    for start, end in zip(cuts, cuts[1:]):
        rows = order[start:end]
        part = staleness.with_right(pa.array(right, pa.timestamp("ns")))
        part.add(pa.array(left[rows], pa.timestamp("ns")), gmap[rows], np.arange(len(rows)))
        staleness = part
    exact = np.sort(left - right[gmap])
    for q in (0.5, 0.99):
        rank = np.searchsorted(exact, staleness.sketch.quantile(q)) / n
        assert abs(rank - q) < 0.005, (q, rank)
    assert staleness.sketch.count == n // 10
    assert staleness.readable(0.5) == "694 us"  # the unit survives the parts


def test_every_match_by_default():
    right = np.arange(10, dtype=np.int64)
    staleness = Staleness(pa.array(right))
    staleness.add(pa.array(right + np.arange(10)), np.arange(10), np.arange(10))
    assert staleness.sketch.count == 10
    assert staleness.readable(0.5) == "4" and staleness.readable(0.99) == "8"
