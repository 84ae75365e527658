"""Staleness quantiles over streamed chunks: exact up to ``SAMPLE`` matches a chunk, then from
an evenly spaced sample whose quantiles stay within a small rank error of the whole chunk's."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from asofgpu._staleness import SAMPLE, Staleness


def test_a_large_chunk_is_sampled_within_a_small_rank_error():
    rng = np.random.default_rng(5)
    n = 8 * SAMPLE + 17
    right = np.sort(rng.integers(0, 10**12, n))
    gmap = rng.permutation(n)
    left = right[gmap] + rng.exponential(10**6, n).astype(np.int64)  # heavy right tail
    staleness = Staleness(pa.array(right, pa.timestamp("ns")))
    staleness.add(pa.array(left, pa.timestamp("ns")), gmap, np.arange(n))
    exact = np.sort(left - right[gmap])
    for q in (0.5, 0.99):
        got = staleness.sketch.quantile(q)
        rank = np.searchsorted(exact, got) / n
        assert abs(rank - q) < 0.002, (q, rank)
    assert staleness.sketch.count <= SAMPLE


def test_a_small_chunk_counts_every_match():
    right = np.arange(10, dtype=np.int64)
    staleness = Staleness(pa.array(right))
    staleness.add(pa.array(right + np.arange(10)), np.arange(10), np.arange(10))
    assert staleness.sketch.count == 10
    assert staleness.readable(0.5) == "4" and staleness.readable(0.99) == "8"
