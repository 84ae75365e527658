"""Per-row tolerances (issue 22, first part): ``tolerance`` as a column, one distance per left
row, in ``AsofJoin.join``, ``asof_join`` and ``join_asof``, on every backend. A row's answer
is the oracle's with that row's tolerance (a null one: no limit)."""

from __future__ import annotations

import datetime

import numpy as np
import pyarrow as pa
import pytest

import asofgpu as ag
from conftest import to_host
from oracle import NO_MATCH, oracle


def _expected(left_keys, right_keys, left_groups, right_groups, tolerances, **options):
    """Each left row joined alone with its own tolerance (the oracle's scalar rule)."""
    out = []
    for i, tol in enumerate(tolerances):
        row = oracle(
            [left_keys[i]],
            right_keys,
            None if left_groups is None else [left_groups[i]],
            right_groups,
            tolerance=tol,
            **options,
        )
        out.append(row[0])
    return out


@pytest.mark.parametrize("kind", ["int", "float"])
@pytest.mark.parametrize("strategy", ["backward", "forward", "nearest"])
@pytest.mark.parametrize("seed", range(3))
def test_each_row_keeps_its_own_tolerance(device, small, kind, strategy, seed):
    rng = np.random.default_rng(seed)
    n_left, n_right = int(rng.integers(1, small)), int(rng.integers(0, small))
    if kind == "int":
        left = [int(v) for v in rng.integers(-20, 20, n_left)]
        right = [int(v) for v in rng.integers(-20, 20, n_right)]
        tols = [None if rng.random() < 0.2 else int(v) for v in rng.integers(0, 6, n_left)]
        arrow = pa.int64()
    else:
        pool = [-2.5, -0.0, 0.0, 1.25, 3.0, 7.5, np.inf, np.nan]
        left = [float(v) for v in rng.choice(pool, n_left)]
        right = [float(v) for v in rng.choice(pool, n_right)]
        tols = [
            None if rng.random() < 0.2 else float(v)
            for v in rng.choice([0, 0.5, 2.0, np.inf], n_left)
        ]
        arrow = pa.float64()
    groups_left = [str(g) for g in rng.choice(["a", "b"], n_left)]
    groups_right = [str(g) for g in rng.choice(["a", "b"], n_right)]
    tolerance = pa.array(tols, pa.float64() if kind == "float" else pa.int64())
    for exact in (True, False):
        options = dict(strategy=strategy, allow_exact_matches=exact)
        want = _expected(
            left, right, [(g,) for g in groups_left], [(g,) for g in groups_right], tols, **options
        )
        one_shot = ag.asof_join(
            pa.array(left, arrow),
            pa.array(right, arrow),
            pa.array(groups_left),
            pa.array(groups_right),
            tolerance=tolerance,
            device=device,
            **options,
        )
        prepared = ag.AsofJoin(pa.array(right, arrow), pa.array(groups_right), device=device)
        probed = prepared.join(
            pa.array(left, arrow), pa.array(groups_left), tolerance=tolerance, **options
        )
        assert to_host(one_shot).tolist() == want
        assert to_host(probed).tolist() == want


def test_integer_extremes_never_overflow(device):
    """Distances up to 2**64 - 1 compare exactly against tolerances of that size."""
    lo, hi = -(2**63), 2**63 - 1
    right = np.array([lo], dtype=np.int64)
    left = np.array([hi, hi], dtype=np.int64)
    tolerance = np.array([2**64 - 1, 2**64 - 2], dtype=np.uint64)
    got = ag.asof_join(left, right, tolerance=tolerance, device=device)
    assert to_host(got).tolist() == [0, NO_MATCH]


def test_durations_and_units(device):
    """Durations per row on timestamp keys; numbers in the right key's unit even where the keys
    meet in the left's finer unit (1.5 s on seconds is 1.5e9 ns)."""
    right = pa.array([0, 10, 20], pa.timestamp("s"))
    left = pa.array([5, 12, 25, 30], pa.timestamp("s"))
    per_row = pa.array([5, 1, None, 9], pa.duration("s"))
    got = ag.asof_join(left, right, tolerance=per_row, device=device)
    assert to_host(got).tolist() == [0, NO_MATCH, 2, NO_MATCH]
    millis = pa.array([1_200, 11_600, 21_000], pa.timestamp("ms"))
    numbers = np.array([1.5, 1.5, 1.0])
    got = ag.asof_join(millis, right, tolerance=numbers, device=device)
    assert to_host(got).tolist() == [0, NO_MATCH, 2]
    as_numpy = np.array([1500, 1000], dtype="timedelta64[ms]")
    got = ag.asof_join(millis[:2], right, tolerance=as_numpy, device=device)
    assert to_host(got).tolist() == [0, NO_MATCH]


def test_join_asof_takes_a_column_per_left_row():
    trades = pa.table({"t": [5, 12, 25], "staleness": [5, 1, 10]})
    quotes = pa.table({"t": [0, 10, 20], "bid": [1.0, 2.0, 3.0]})
    out = ag.join_asof(trades, quotes, on="t", tolerance=trades["staleness"], device="cpu")
    assert out["bid"].to_pylist() == [1.0, None, 3.0]


def test_a_prepared_join_keeps_scalar_tolerances_as_they_were(device):
    prepared = ag.AsofJoin(np.array([0, 10, 20]), device=device)
    left = np.array([5, 12, 25])
    per_row = prepared.join(left, tolerance=np.array([5, 1, 4]))
    assert to_host(per_row).tolist() == [0, NO_MATCH, NO_MATCH]
    assert to_host(prepared.join(left, tolerance=2)).tolist() == [NO_MATCH, 1, NO_MATCH]


@pytest.mark.parametrize(
    ("tolerance", "error", "message"),
    [
        (np.array([1, -1, 2]), ValueError, r"tolerance must be non-negative, got -1 at left row 1"),
        (np.array([1.0, np.nan, 2.0]), ValueError, r"got NaN at left row 1"),
        (np.array([1, 2]), ValueError, r"tolerance has 2 rows but left_on has 3"),
        (pa.array(["1", "2", "3"]), TypeError, r"got a column of string"),
        (pa.array([1, 2, 3], pa.duration("s")), TypeError, r"durations need a temporal key"),
        ([1, 2, 3], TypeError, r"tolerance must be a column"),
    ],
)
def test_row_tolerance_errors(tolerance, error, message):
    with pytest.raises(error, match=message):
        ag.asof_join(np.array([1, 2, 3]), np.array([0, 1]), tolerance=tolerance, device="cpu")


def test_a_timedelta_scalar_still_needs_a_temporal_key():
    with pytest.raises(TypeError, match="tolerance: a timedelta needs a temporal key"):
        ag.asof_join(
            np.array([1]), np.array([0]), tolerance=datetime.timedelta(seconds=1), device="cpu"
        )
