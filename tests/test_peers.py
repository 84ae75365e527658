"""pandas ``merge_asof`` and polars ``join_asof`` as second oracles (cpu backend).

Only where their rules are asofgpu's (where their contracts and asofgpu's agree: docs/architecture.md, section 3):

- pandas: ``nearest_tie="backward"``, ``null_equality="equal"``, both sides sorted globally by
  ``on``, no null / NaN in ``on``, no infinities (pandas computes ``inf - inf``), no integer
  extremes (pandas' distances wrap);
- polars: ``nearest_tie="forward"``, ``null_equality="unequal"``, sorted within groups (here:
  globally, nulls first, NaN last); nulls, NaN, infinities and integer extremes included.

The right side carries its row number (``ridx``); the peer's result hands it back per left row,
which must equal asofgpu's gather map. "First" and "last" among equal keys mean right row order:
both see the same (sorted) right frame, so the orders agree.
"""

from __future__ import annotations

import datetime as dt
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from asofgpu import NO_MATCH, asof_join

try:
    import polars as pl
except ImportError:  # only the tests marked needs_polars skip
    pl = None

STRATEGIES = ["backward", "forward", "nearest"]
KINDS = ["int64", "float64", "datetime"]
SEEDS = [0, 1, 2]
GROUPS = ["a", "b", "c", None]
_BASE = np.datetime64("2024-03-01T09:30:00", "ns")
needs_polars = pytest.mark.skipif(pl is None, reason="polars is not installed")


def _keys(rng, kind: str, n: int, peer: str, special=(math.nan, math.inf, -math.inf)) -> list:
    small = rng.integers(-15, 16, size=n)
    if kind == "int64":
        keys = [int(v) for v in small]
        if peer == "polars":
            extremes = [-(2**63), -(2**63) + 1, 2**63 - 2, 2**63 - 1]
            keys = [extremes[int(rng.integers(4))] if rng.random() < 0.1 else k for k in keys]
    elif kind == "float64":
        keys = [float(v) / 4 for v in small]
        if peer == "polars":
            special = [*special, -0.0, 0.0]
            keys = [
                special[int(rng.integers(len(special)))] if rng.random() < 0.15 else k for k in keys
            ]
    else:
        keys = [_BASE + np.timedelta64(int(v) * 500, "ms") for v in small]
    if peer == "polars":
        keys = [None if rng.random() < 0.08 else k for k in keys]
    return keys


def _tolerance(kind: str, with_tolerance: bool):
    if not with_tolerance:
        return None
    return {"int64": 3, "float64": 0.75, "datetime": dt.timedelta(seconds=1)}[kind]


def _frames(rng, kind: str, peer: str, n_by: int, special=()):
    n_left, n_right = int(rng.integers(0, 30)), int(rng.integers(0, 40))
    if rng.random() < 0.8:  # mostly non-empty
        n_left, n_right = max(n_left, 1), max(n_right, 1)
    left = {"t": _keys(rng, kind, n_left, peer, special)}
    right = {"t": _keys(rng, kind, n_right, peer, special)}
    for j in range(n_by):
        left[f"g{j}"] = [GROUPS[i] for i in rng.integers(len(GROUPS), size=n_left)]
        right[f"g{j}"] = [GROUPS[i] for i in rng.integers(len(GROUPS), size=n_right)]
    left["lidx"] = list(range(n_left))
    return left, right


def _ours(left_on, right_on, left_by, right_by, **options):
    gmap = asof_join(left_on, right_on, left_by or None, right_by or None, device="cpu", **options)
    assert gmap.dtype == np.int32
    return gmap.tolist()


# ----------------------------------------------------------------------------- pandas


def _pandas_frame(data: dict, kind: str) -> pd.DataFrame:
    frame = pd.DataFrame(data)
    for name in frame.columns:
        if name.startswith("g"):  # the same string dtype on both sides, even when all None
            frame[name] = frame[name].astype("str")
    if kind == "datetime":
        frame["t"] = frame["t"].astype("datetime64[ns]")
    elif kind == "int64":
        frame["t"] = frame["t"].astype("int64")
    else:
        frame["t"] = frame["t"].astype("float64")
    return frame.sort_values("t", kind="stable").reset_index(drop=True)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("with_tolerance", [False, True], ids=["no-tol", "tol"])
@pytest.mark.parametrize("exact", [True, False], ids=["exact", "strict"])
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("kind", KINDS)
def test_pandas_merge_asof(kind, strategy, exact, with_tolerance, seed):
    rng = np.random.default_rng([seed, KINDS.index(kind), STRATEGIES.index(strategy), exact])
    n_by = int(rng.integers(0, 3))
    left_data, right_data = _frames(rng, kind, "pandas", n_by)
    left = _pandas_frame(left_data, kind)
    right = _pandas_frame(right_data, kind)
    right["ridx"] = np.arange(len(right))
    by = [f"g{j}" for j in range(n_by)]
    tolerance = _tolerance(kind, with_tolerance)
    peer_tolerance = pd.Timedelta(tolerance) if isinstance(tolerance, dt.timedelta) else tolerance
    merged = pd.merge_asof(
        left,
        right,
        on="t",
        by=by or None,
        direction=strategy,
        allow_exact_matches=exact,
        tolerance=peer_tolerance,
    )
    assert merged["lidx"].tolist() == left["lidx"].tolist()
    want = [NO_MATCH if pd.isna(v) else int(v) for v in merged["ridx"]]
    got = _ours(
        left["t"],
        right["t"],
        [left[c] for c in by],
        [right[c] for c in by],
        strategy=strategy,
        allow_exact_matches=exact,
        tolerance=tolerance,
        nearest_tie="backward",
        null_equality="equal",
    )
    assert got == want, (left.to_dict("list"), right.to_dict("list"))


def test_pandas_nearest_duplicates_and_ties():
    """pandas' nearest: equal distances go backward; the forward side takes its first
    duplicate, the backward side its last."""
    right = pd.DataFrame({"t": [1, 1, 5, 5, 9], "ridx": range(5)})
    left = pd.DataFrame({"t": [0, 3, 4, 7, 10]})
    merged = pd.merge_asof(left, right, on="t", direction="nearest")
    want = [NO_MATCH if pd.isna(v) else int(v) for v in merged["ridx"]]
    assert want == [0, 1, 2, 3, 4]
    got = _ours(left["t"], right["t"], [], [], strategy="nearest", nearest_tie="backward")
    assert got == want


# ----------------------------------------------------------------------------- polars


def _polars_specials(strategy: str, with_tolerance: bool) -> tuple:
    """The special floats on which polars 2.1 follows asofgpu's rules. polars takes distances
    as plain differences: inf - inf and NaN - NaN are NaN, so a tolerance never accepts equal
    infinite or NaN keys (asofgpu: distance 0), and nearest takes a right NaN over a finite
    backward key (asofgpu: NaN is infinitely far); see test_special_floats_where_polars_differs.
    """
    if with_tolerance:
        return ()
    return (math.inf, -math.inf) if strategy == "nearest" else (math.nan, math.inf, -math.inf)


def _polars_frame(data: dict, kind: str) -> pl.DataFrame:
    data = dict(data)
    if kind == "datetime":
        data["t"] = [None if v is None else int(v.astype(np.int64)) for v in data["t"]]
    dtype = {"int64": pl.Int64, "float64": pl.Float64, "datetime": pl.Int64}[kind]
    schema = {name: pl.String for name in data if name.startswith("g")}
    frame = pl.DataFrame(data, schema_overrides={"t": dtype, **schema}, strict=False)
    if kind == "datetime":
        frame = frame.with_columns(pl.col("t").cast(pl.Datetime("ns")))
    return frame.sort("t", nulls_last=False, maintain_order=True)


@needs_polars
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("with_tolerance", [False, True], ids=["no-tol", "tol"])
@pytest.mark.parametrize("exact", [True, False], ids=["exact", "strict"])
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("kind", KINDS)
def test_polars_join_asof(kind, strategy, exact, with_tolerance, seed):
    rng = np.random.default_rng([seed, KINDS.index(kind), STRATEGIES.index(strategy), exact, 7])
    n_by = int(rng.integers(0, 3))
    left_data, right_data = _frames(
        rng, kind, "polars", n_by, _polars_specials(strategy, with_tolerance)
    )
    left = _polars_frame(left_data, kind)
    right = _polars_frame(right_data, kind).with_row_index("ridx")
    by = [f"g{j}" for j in range(n_by)]
    tolerance = _tolerance(kind, with_tolerance)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Sortedness of columns cannot be checked ..."
        joined = left.join_asof(
            right,
            on="t",
            by=by or None,
            strategy=strategy,
            allow_exact_matches=exact,
            tolerance=tolerance,
            check_sortedness=not by,
        )
    assert joined["lidx"].to_list() == left["lidx"].to_list()
    want = [NO_MATCH if v is None else int(v) for v in joined["ridx"].to_list()]
    got = _ours(
        left["t"],
        right["t"],
        [left[c] for c in by],
        [right[c] for c in by],
        strategy=strategy,
        allow_exact_matches=exact,
        tolerance=tolerance,
        nearest_tie="forward",
        null_equality="unequal",
    )
    assert got == want, (left.to_dict(as_series=False), right.to_dict(as_series=False))


@needs_polars
def test_polars_nearest_duplicates_and_ties():
    """polars' nearest: equal distances go forward; whichever key wins, its last row."""
    right = pl.DataFrame({"t": [1, 1, 5, 5, 9]}).with_row_index("ridx")
    left = pl.DataFrame({"t": [0, 3, 4, 7, 10]})
    joined = left.join_asof(right, on="t", strategy="nearest")
    want = [NO_MATCH if v is None else int(v) for v in joined["ridx"].to_list()]
    assert want == [1, 3, 3, 4, 4]
    got = _ours(left["t"], right["t"], [], [], strategy="nearest", nearest_tie="forward")
    assert got == want


def test_special_floats_where_polars_differs():
    """asofgpu's rules for equal infinite / NaN keys under a tolerance and for NaN under
    nearest (docs/architecture.md, section 3: total order, NaN above +inf and equal to itself; a distance is
    0 between equal keys and infinite between NaN and a number). polars 2.1 answers None, None
    and 1 here."""
    inf, nan = math.inf, math.nan
    cases = [
        ([inf], [1.0, inf], {"tolerance": 0.75}, [1]),
        ([-inf], [-inf, 1.0], {"strategy": "forward", "tolerance": 0.0}, [0]),
        ([nan], [1.0, nan], {"strategy": "nearest", "tolerance": 0.75}, [1]),
        ([5.0], [1.0, nan], {"strategy": "nearest"}, [0]),
        ([5.0], [1.0, nan], {"strategy": "forward", "tolerance": inf}, [1]),
    ]
    for left, right, options, want in cases:
        assert _ours(np.array(left), np.array(right), [], [], **options) == want, options


@needs_polars
def test_polars_uint64_keys_at_the_extremes():
    """polars supercasts nothing here: both sides UInt64, keys above 2**63."""
    rng = np.random.default_rng(5)
    pool = [0, 1, 2**63 - 1, 2**63, 2**63 + 1, 2**64 - 2, 2**64 - 1]
    lkeys = sorted(pool[i] for i in rng.integers(len(pool), size=20))
    rkeys = sorted(pool[i] for i in rng.integers(len(pool), size=15))
    left = pl.DataFrame({"t": pl.Series(lkeys, dtype=pl.UInt64)})
    right = pl.DataFrame({"t": pl.Series(rkeys, dtype=pl.UInt64)}).with_row_index("ridx")
    for strategy in STRATEGIES:
        for exact in (True, False):
            for tolerance in (None, 1, 2**63):
                joined = left.join_asof(
                    right, on="t", strategy=strategy, allow_exact_matches=exact, tolerance=tolerance
                )
                want = [NO_MATCH if v is None else int(v) for v in joined["ridx"].to_list()]
                got = _ours(
                    left["t"],
                    right["t"],
                    [],
                    [],
                    strategy=strategy,
                    allow_exact_matches=exact,
                    tolerance=tolerance,
                    nearest_tie="forward",
                )
                assert got == want, (strategy, exact, tolerance)
