"""The splice join (asofgpu.splice_maps, asofgpu.splice_join) against its naive oracle, on
every backend, and the properties the issue names."""

from __future__ import annotations

import datetime

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import asofgpu as ag
from asofgpu._backend import cudasim_enabled
from conftest import to_host
from oracle import NO_MATCH, splice_oracle


def _maps(*args, **kwargs):
    left_map, right_map = ag.splice_maps(*args, **kwargs)
    return to_host(left_map).tolist(), to_host(right_map).tolist()


def _random_side(rng, n: int, kind: str, nulls: bool, groups: int):
    if kind == "int":
        keys = [int(v) for v in rng.integers(0, 12, n)]
    else:
        keys = [float(v) for v in rng.choice([-0.0, 0.0, 1.5, 2.0, 3.25, np.inf, np.nan], n)]
    if nulls:
        keys = [None if rng.random() < 0.15 else k for k in keys]
    names = [f"g{i}" for i in range(groups)]
    by = [None if nulls and rng.random() < 0.1 else str(rng.choice(names)) for _ in range(n)]
    return keys, by


def _arrow(values, kind: str) -> pa.Array:
    return pa.array(values, type=pa.int64() if kind == "int" else pa.float64())


@pytest.mark.parametrize("kind", ["int", "float"])
@pytest.mark.parametrize("seed", range(4))
def test_matches_the_oracle(device, small, kind, seed):
    rng = np.random.default_rng(seed)
    n_left, n_right = int(rng.integers(0, small)), int(rng.integers(0, small))
    left_keys, left_by = _random_side(rng, n_left, kind, nulls=seed % 2 == 1, groups=3)
    right_keys, right_by = _random_side(rng, n_right, kind, nulls=seed % 2 == 1, groups=4)
    for exact in (True, False):
        for tolerance in (None, 2):
            for null_equal in (False, True):
                got = _maps(
                    _arrow(left_keys, kind),
                    _arrow(right_keys, kind),
                    pa.array(left_by, pa.string()),
                    pa.array(right_by, pa.string()),
                    allow_exact_matches=exact,
                    tolerance=tolerance,
                    null_equality="equal" if null_equal else "unequal",
                    device=device,
                )
                want = splice_oracle(
                    left_keys,
                    right_keys,
                    [(g,) for g in left_by],
                    [(g,) for g in right_by],
                    allow_exact_matches=exact,
                    tolerance=tolerance,
                    null_equal=null_equal,
                )
                assert got == tuple(want), (exact, tolerance, null_equal)


def test_without_by_and_unsorted(device, small):
    rng = np.random.default_rng(7)
    left = rng.integers(0, 30, small // 2)
    right = rng.integers(0, 30, small // 2 + 3)
    got = _maps(left, right, device=device)
    assert list(got) == list(splice_oracle(left.tolist(), right.tolist()))


def test_questdb_example(device):
    """QuestDB's documented example (its JOIN reference, SPLICE JOIN): two buys, two sells at
    one timestamp; the four rows its documentation shows."""
    buys = pa.table({"ts": [0.039906, 0.343909], "buy": ["b1", "b2"]})
    sells = pa.table({"ts": [0.222534, 0.222534], "sell": ["s1", "s2"]})
    out = ag.splice_join(buys, sells, on="ts", device=device)
    assert list(zip(out["buy"].to_pylist(), out["sell"].to_pylist())) == [
        ("b1", None),
        ("b1", "s1"),
        ("b1", "s2"),
        ("b2", "s2"),
    ]
    assert out["ts"].to_pylist() == [0.039906, 0.039906, 0.039906, 0.343909]
    assert out["ts_right"].to_pylist() == [None, 0.222534, 0.222534, 0.222534]


def test_a_pending_row_of_another_group_changes_nothing(device):
    """Per group (QuestDB's ON keys): a row of another group between a row and its prevailing
    row takes nothing away and pairs it with no older row."""
    left = pa.table({"t": [1, 2, 3, 4], "g": ["a", "b", "a", "b"], "x": [10, 20, 30, 40]})
    right = pa.table({"t": [1, 2, 3, 4], "g": ["b", "a", "b", "a"], "y": [1, 2, 3, 4]})
    out = ag.splice_join(left, right, on="t", by="g", device=device)
    assert out.to_pydict() == {
        "t": [1, None, 2, 1, 3, 2, 4, 3],
        "g": ["a", None, "b", "a", "a", "b", "b", "a"],
        "x": [10, None, 20, 10, 30, 20, 40, 30],
        "t_right": [None, 1, 1, 2, 2, 3, 3, 4],
        "g_right": [None, "b", "b", "a", "a", "b", "b", "a"],
        "y": [None, 1, 1, 2, 2, 3, 3, 4],
    }


def test_columns_and_names():
    left = pa.table({"t": [1, 5], "g": ["a", "a"], "v": [1.0, 2.0]})
    right = pa.table({"t": [3], "g": ["a"], "v": [9.0], "w": [7]})
    out = ag.splice_join(left, right, on="t", by="g", suffix="_q", device="cpu")
    assert out.column_names == ["t", "g", "v", "t_q", "g_q", "v_q", "w"]
    assert out.num_rows == 3
    assert out["v_q"].to_pylist() == [None, 9.0, 9.0]
    assert out["v"].to_pylist() == [1.0, 1.0, 2.0]
    with pytest.raises(ValueError, match=r"column 'v_q' appears twice in the result"):
        ag.splice_join(left.append_column("v_q", pa.array([0, 0])), right, on="t", suffix="_q")


def test_left_on_right_on_and_by_left_by_right():
    left = pa.table({"lt": [2, 6], "ls": ["A", "B"]})
    right = pa.table({"rt": [1, 5], "rs": ["B", "A"], "p": [1, 2]})
    out = ag.splice_join(
        left, right, left_on="lt", right_on="rt", by_left="ls", by_right="rs", device="cpu"
    )
    assert out.column_names == ["lt", "ls", "rt", "rs", "p"]
    assert out.to_pydict() == {
        "lt": [None, 2, 2, 6],
        "ls": [None, "A", "A", "B"],
        "rt": [1, None, 5, 1],
        "rs": ["B", None, "A", "B"],
        "p": [1, None, 2, 1],
    }


def test_empty_sides(device):
    empty = pa.table({"t": pa.array([], pa.int64()), "x": pa.array([], pa.float64())})
    full = pa.table({"t": [1, 2], "x": [1.0, 2.0]})
    assert ag.splice_join(empty, full, on="t", device=device)["x_right"].to_pylist() == [1.0, 2.0]
    assert ag.splice_join(full, empty, on="t", device=device)["x"].to_pylist() == [1.0, 2.0]
    assert ag.splice_join(empty, empty, on="t", device=device).num_rows == 0


def test_units_differ_and_tolerance_is_in_the_right_unit(device):
    ms = pa.array([1_000, 2_000, 10_000], pa.timestamp("ms"))
    ns = pa.array([1_500_000_000, 9_000_000_000], pa.timestamp("ns"))
    want = splice_oracle(
        [1_000_000_000, 2_000_000_000, 10_000_000_000],
        [1_500_000_000, 9_000_000_000],
        tolerance=1_000_000_000,
    )
    for tolerance in (1_000_000_000, datetime.timedelta(seconds=1), np.timedelta64(1, "s")):
        assert list(_maps(ms, ns, tolerance=tolerance, device=device)) == list(want)
    # Right in ms: a number is in milliseconds, for both directions.
    want = splice_oracle([1_500, 9_000], [1_000, 2_000, 10_000], tolerance=600)
    assert list(_maps(ns, ms, tolerance=600, device=device)) == list(want)


def test_nulls_come_last_left_then_right(device):
    left = pa.array([None, 3, None], pa.int64())
    right = pa.array([None, 1], pa.int64())
    left_map, right_map = _maps(left, right, device=device)
    assert left_map == [NO_MATCH, 1, 0, 2, NO_MATCH]
    assert right_map == [1, 1, NO_MATCH, NO_MATCH, 0]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"on": "t", "tolerance": -1}, ValueError, r"tolerance must be non-negative, got -1"),
        ({"on": "t", "suffix": 3}, TypeError, r"suffix must be a string, got 3"),
        ({"on": "t", "allow_exact_matches": "yes"}, TypeError, r"allow_exact_matches must be"),
        ({}, ValueError, r"the as-of key is missing"),
        ({"on": "nope"}, KeyError, r"left table has no column 'nope'"),
        ({"on": "t", "by_left": "g"}, ValueError, r"by_left and by_right must be given together"),
        ({"on": "t", "by": "g", "null_equality": "x"}, ValueError, r"null_equality must be one"),
        ({"on": "t", "device": "tpu"}, ValueError, r"device must be one of"),
        ({"left_on": "t", "right_on": "s"}, TypeError, r"right_on must be an integer, float"),
    ],
)
def test_errors_name_the_parameter(kwargs, error, message):
    left = pa.table({"t": [1, 2], "g": ["a", "b"]})
    right = pa.table({"t": [1], "g": ["a"], "s": ["x"]})
    kwargs = {"device": "cpu", **kwargs}
    with pytest.raises(error, match=message):
        ag.splice_join(left, right, **kwargs)


def test_by_types_must_compare():
    with pytest.raises(TypeError, match=r"left_by\[0\] \(int64\) and right_by\[0\] \(string\)"):
        ag.splice_maps(np.array([1]), np.array([1]), np.array([1]), np.array(["a"]), device="cpu")


# --------------------------------------------------------------------------- properties

_SMALL = 12 if cudasim_enabled() else 40


def _side(data, parity: int):
    """Keys (None: null) and by values. ``parity`` keeps the two sides' keys apart (even
    left, odd right), so that which side drives a row can be read off the maps."""
    keys = data.draw(
        st.lists(
            st.one_of(st.none(), st.integers(-5, 5).map(lambda k: 2 * k + parity)), max_size=_SMALL
        )
    )
    by = data.draw(st.lists(st.sampled_from(["a", "b"]), min_size=len(keys), max_size=len(keys)))
    return keys, by


def _run(left, right, left_by, right_by, **kwargs):
    return _maps(
        pa.array(left, pa.int64()),
        pa.array(right, pa.int64()),
        pa.array(left_by, pa.string()),
        pa.array(right_by, pa.string()),
        device="cpu",
        **kwargs,
    )


def _left_drives(left, right, left_map, right_map) -> list[bool]:
    """Per output row: whether a left row drives it (keys of the sides never equal)."""
    drives = []
    for lrow, rrow in zip(left_map, right_map):
        if rrow == NO_MATCH or lrow == NO_MATCH:
            drives.append(rrow == NO_MATCH)
        else:  # the prevailing row's key is below the driving row's
            drives.append(
                right[rrow] is None or (left[lrow] is not None and left[lrow] > right[rrow])
            )
    return drives


@settings(max_examples=60, deadline=None)
@given(data=st.data(), exact=st.booleans(), tolerance=st.one_of(st.none(), st.integers(0, 3)))
def test_properties(data, exact, tolerance):
    """n_left + n_right rows, each row of each side driving one; the left-driven rows are
    join_asof's rows in key order; swapping the sides swaps the maps."""
    (left, left_by), (right, right_by) = _side(data, 0), _side(data, 1)
    options = {"allow_exact_matches": exact, "tolerance": tolerance}
    left_map, right_map = _run(left, right, left_by, right_by, **options)
    assert len(left_map) == len(right_map) == len(left) + len(right)
    assert (left_map, right_map) == tuple(
        splice_oracle(left, right, [(g,) for g in left_by], [(g,) for g in right_by], **options)
    )
    drives = _left_drives(left, right, left_map, right_map)
    assert sorted(l for l, d in zip(left_map, drives) if d) == list(range(len(left)))
    assert sorted(r for r, d in zip(right_map, drives) if not d) == list(range(len(right)))
    gmap = to_host(
        ag.asof_join(
            pa.array(left, pa.int64()),
            pa.array(right, pa.int64()),
            pa.array(left_by, pa.string()),
            pa.array(right_by, pa.string()),
            device="cpu",
            **options,
        )
    ).tolist()
    in_key_order = sorted(range(len(left)), key=lambda i: (left[i] is None, left[i] or 0, i))
    driven = [(l, r) for l, r, d in zip(left_map, right_map, drives) if d]
    assert driven == [(i, gmap[i]) for i in in_key_order]
    swapped = _run(right, left, right_by, left_by, **options)
    if not any(k is None for k in left + right):  # null keys: left's come first, not swapped
        assert swapped == (right_map, left_map)
