"""The cpu one-shot path (kernels/scan.py merge scan, kernels/radix.py key order) against the
prepared path (per-row binary search) and the naive oracle, at sizes that take the parallel
pieces, the carry between them and the radix sort, which the small grid cases never reach."""

from __future__ import annotations

import itertools
import pickle

import numpy as np
import pyarrow as pa
import pytest

import asofgpu as ag
from asofgpu import _backend
from asofgpu._backend import walks
from conftest import HUGE
from oracle import oracle


OPTIONS = [
    dict(strategy=s, allow_exact_matches=e, nearest_tie=t, tolerance=tol)
    for s, e, t, tol in itertools.product(
        ("backward", "forward", "nearest"), (True, False), ("forward", "backward"), (None, 3)
    )
    if t == "forward" or s == "nearest"
]


def _keys(rng, n, kind, span):
    if kind == "float":
        keys = rng.integers(-span, span, n).astype(np.float64)
        keys[rng.random(n) < 0.02] = np.nan
        keys[rng.random(n) < 0.02] = -0.0
        keys[rng.random(n) < 0.01] = np.inf
        return keys
    if kind == "uint":
        return rng.integers(0, 2 * span, n).astype(np.uint64) + np.uint64(2**63)
    return rng.integers(-span, span, n)


@pytest.mark.parametrize("kind", ["int", "float", "uint"])
@pytest.mark.parametrize("order", ["sorted", "shuffled"])
@pytest.mark.parametrize("groups", [40, None])
def test_one_shot_scan_equals_prepared_probe(kind, order, groups):
    """40k x 70k rows: parallel pieces with carries, and (shuffled) the radix key order.
    Few distinct keys per group make long runs of equal keys cross the piece boundaries.
    Without groups (``None``) the scan takes its one-group walk, where every left row's
    candidates are read at positions of the right walk."""
    # str hashes change with every process (PYTHONHASHSEED): a seed of its own per case.
    rng = np.random.default_rng(["int", "float", "uint"].index(kind) * 2 + (order == "sorted"))
    n_left, n_right = 40_000, 70_000
    span = 500 if groups else 5_000  # as many rows a key without groups as in one group
    left, right = _keys(rng, n_left, kind, span), _keys(rng, n_right, kind, span)
    if order == "sorted":
        left, right = np.sort(left), np.sort(right)
    left_by = right_by = None
    if groups:
        left_by = pa.array(rng.integers(0, groups, n_left).astype(str))
        right_by = pa.array(rng.integers(0, groups, n_right).astype(str))
    prepared = ag.AsofJoin(right, right_by, device="cpu")
    for options in OPTIONS:
        if kind != "float" and options["tolerance"] is not None:
            options = {**options, "tolerance": 3}
        expected = prepared.join(left, left_by, **options)
        got = ag.asof_join(left, right, left_by, right_by, device="cpu", **options)
        np.testing.assert_array_equal(got, expected, err_msg=str(options))


@pytest.mark.parametrize("kind", ["int", "uint"])
def test_one_group_walk_in_pieces_of_a_row_or_two_equals_the_oracle(kind):
    """The one-group walk (no ``by``) in pieces of a row or two, so that runs of equal keys
    and reaches straddle every piece's start: each strategy, exactness and tie rule, with no
    tolerance, a fixed one and a column of them (null: no limit), on int64 keys and uint64
    keys near 2**64, against the naive oracle."""
    rng = np.random.default_rng(kind == "uint")
    base = 2**64 - 16 if kind == "uint" else -6
    dtype = np.uint64 if kind == "uint" else np.int64
    with walks.overridden(interpret_max_rows=0, parallel_min_rows=0, pieces_per_thread=64):
        for _ in range(30):
            left = sorted(base + int(k) for k in rng.integers(0, 12, rng.integers(1, 30)))
            right = sorted(base + int(k) for k in rng.integers(0, 12, rng.integers(0, 30)))
            column = [None if rng.random() < 0.2 else int(t) for t in rng.integers(0, 4, len(left))]
            for options, tolerance in itertools.product(OPTIONS[::2], (None, 2, column)):
                options = {k: v for k, v in options.items() if k != "tolerance"}
                given = pa.array(tolerance, pa.uint64()) if tolerance is column else tolerance
                got = ag.asof_join(
                    np.array(left, dtype),
                    np.array(right, dtype),
                    tolerance=given,
                    device="cpu",
                    **options,
                )
                limits = tolerance if tolerance is column else [tolerance] * len(left)
                expected = [
                    oracle([x], right, tolerance=limit, **options)[0]
                    for x, limit in zip(left, limits)
                ]
                assert got.tolist() == expected, (left, right, tolerance, options)


def test_one_shot_scan_with_nulls_and_many_groups():
    """Null keys and null groups on both sides, a group per few rows (so the state of each
    piece is large), under both null rules: the prepared path (oracle-tested by test_grid)
    gives the same map."""
    rng = np.random.default_rng(5)
    n = 20_000
    left = pa.array(rng.integers(0, 3_000, n), mask=rng.random(n) < 0.05)
    right = pa.array(rng.integers(0, 3_000, n), mask=rng.random(n) < 0.05)
    left_by = pa.array(rng.integers(0, 4_000, n), mask=rng.random(n) < 0.05)
    right_by = pa.array(rng.integers(0, 4_000, n), mask=rng.random(n) < 0.05)
    for strategy, null_equality in itertools.product(
        ("backward", "forward", "nearest"), ("unequal", "equal")
    ):
        got = ag.asof_join(
            left,
            right,
            left_by,
            right_by,
            strategy=strategy,
            tolerance=40,
            null_equality=null_equality,
            device="cpu",
        )
        expected = ag.AsofJoin(right, right_by, null_equality=null_equality, device="cpu").join(
            left, left_by, strategy=strategy, tolerance=40
        )
        np.testing.assert_array_equal(got, expected)
        assert (got != ag.NO_MATCH).any()


@pytest.mark.parametrize("kind", ["int", "wide int", "float", "positive float", "uint"])
def test_walk_order_is_a_stable_sort_of_the_walked_rows(kind):
    """The radix path: rows by key, and rows of one group with equal keys in row order; keys
    rebuilt from their order bits, groups from the bits below them (by key, then group) or,
    where the keys' order bits leave no room for them, gathered (by key alone): "wide int",
    and "float", whose negatives and positives (and inf, NaN) lie 2**63 apart in those bits."""
    rng = np.random.default_rng(11)
    n = 100_000
    if kind == "wide int":
        keys = rng.integers(-(2**62), 2**62, n) // rng.choice([1, 2**40], n)
    elif kind == "positive float":
        keys = rng.integers(1, 1_000, n) / 4
    else:
        keys = _keys(rng, n, kind, 1_000)
    if kind == "float":
        keys = np.where(np.isnan(keys), np.nan, keys + 0.0)  # canonical: one NaN, no -0.0
    groups = rng.integers(0, 50, n).astype(np.int32)
    walked = rng.random(n) < 0.9
    is_float = keys.dtype == np.float64
    is_sorted = _backend.jit.cpu_scan(is_float, True).is_sorted_at
    sorted_keys, sorted_groups, order = _backend.order.walk_order(
        walked, keys, groups, 50, is_float, is_sorted, 2
    )
    rows = np.flatnonzero(walked)
    if kind in ("wide int", "float"):
        expected = rows[np.argsort(keys[rows], kind="stable")]
    else:
        expected = rows[np.lexsort((rows, groups[rows], keys[rows]))]
    np.testing.assert_array_equal(order, expected)
    np.testing.assert_array_equal(sorted_keys, keys[expected])
    np.testing.assert_array_equal(sorted_groups, groups[expected])


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("is_float", [False, True])
def test_is_sorted_finds_a_descent_wherever_it_lies(is_float, parallel):
    """The check that decides whether a side is walked as it lies: every adjacent pair, in
    each of several stretches and across their borders, of all rows or of some (read through
    their row numbers), with ties and (floats) NaN, which sorts last."""
    is_sorted = _backend.jit.cpu_scan(is_float, parallel).is_sorted_at
    dtype = np.float64 if is_float else np.int64
    keys = np.repeat(np.arange(50, dtype=dtype), 2)  # 100 rows, each key twice
    if is_float:
        keys[-3:] = np.nan
    every, some = np.arange(100, dtype=np.int32), np.arange(0, 100, 3, dtype=np.int32)
    for n_pieces in (1, 2, 3, 7, 100, 200):
        assert is_sorted(keys, every, n_pieces) and is_sorted(keys, some, n_pieces)
        for at in (1, 33, 50, 51, 66, 96):  # 50: the border of two halves
            broken = keys.copy()
            broken[at] = broken[at - 1] - 1
            assert not is_sorted(broken, every, n_pieces), (n_pieces, at)
            # through row numbers: only the rows they name are compared
            assert is_sorted(broken, np.setdiff1d(every, [at]).astype(np.int32), n_pieces)
            assert not is_sorted(broken, np.array([at - 1, at], np.int32), n_pieces)
        if is_float:  # a number after a NaN descends
            broken = keys.copy()
            broken[98] = 0.0
            assert not is_sorted(broken, every, n_pieces)
    empty = np.empty(0, dtype)
    assert is_sorted(empty, np.empty(0, np.int32), 2)
    assert is_sorted(keys, np.empty(0, np.int32), 2)


@pytest.mark.parametrize("dtype", [np.int64, np.uint64, np.float64])
def test_copy_is_sorted_copies_runs_and_finds_a_descent_wherever_it_lies(dtype):
    """The copy of a chunked key column's runs, with its order checked in the same pass:
    the copy equals the runs end to end, and the answer equals ``is_sorted_at`` of it, for a
    descent inside a run, at a run's border, at a piece's border, with runs of one row, ties
    and (floats) NaN, which sorts last, in 1 to more pieces than rows."""
    is_float = dtype == np.float64
    scan = _backend.jit.cpu_scan(is_float, True)
    keys = np.repeat(np.arange(10, 40, dtype=dtype), 2)  # 60 rows, each key twice
    if is_float:
        keys[-3:] = np.nan
    cuts = [0, 1, 2, 17, 30, 31, 45, 60]  # runs of 1, 1, 15, 13, 1, 14 and 15 rows
    every = np.arange(60, dtype=np.int32)
    cases = [keys]
    for at in (1, 2, 5, 17, 20, 30, 31, 45, 56):  # 17, 30, 31, 45: run borders
        broken = keys.copy()
        broken[at] = broken[at - 1] - 1
        cases.append(broken)
    if is_float:  # a number after a NaN descends
        broken = keys.copy()
        broken[58] = 0.0
        cases.append(broken)
    for case in cases:
        runs = [case[a:b].copy() for a, b in zip(cuts, cuts[1:])]  # a buffer each
        addresses = np.array([run.ctypes.data for run in runs], np.uint64)
        starts = np.array(cuts, np.uint64)
        expected = bool(scan.is_sorted_at(case, every, 1))
        for n_pieces in (1, 2, 3, 7, 30, 60, 200):
            out = np.full(60, 7, dtype)
            ascends = scan.copy_is_sorted(addresses, starts, out[:0], out, n_pieces)
            np.testing.assert_array_equal(out, case)
            assert ascends == expected, (n_pieces, case)
        assert not expected or case is keys
    empty = np.empty(0, dtype)
    assert scan.copy_is_sorted(np.empty(0, np.uint64), np.zeros(1, np.uint64), empty, empty, 2)


@pytest.mark.parametrize("kind", ["int", "float"])
def test_prepared_probe_paths_agree(kind):
    """A prepared right side probed three ways: a large batch in key order (cursor probe), a
    large shuffled batch (radix order, then cursor probe) and small shuffled batches (one
    binary search per row), all with null keys and groups the right side lacks."""
    rng = np.random.default_rng(23)
    n_left, n_right = 50_000, 30_000
    right = _keys(rng, n_right, kind, 400)
    right_by = rng.integers(0, 60, n_right).astype(str)
    left = np.sort(_keys(rng, n_left, kind, 400))
    left_by = rng.integers(0, 70, n_left).astype(str)
    left_valid = rng.random(n_left) > 0.03
    prepared = ag.AsofJoin(right, right_by, device="cpu")
    shuffle = rng.permutation(n_left)
    for options in OPTIONS:
        on = pa.array(left, mask=~left_valid)
        in_order = prepared.join(on, left_by, **options)
        shuffled = prepared.join(on.take(shuffle), left_by[shuffle], **options)
        np.testing.assert_array_equal(shuffled, in_order[shuffle], err_msg=str(options))
        small = np.concatenate(
            [
                prepared.join(
                    on.take(shuffle[k : k + 1_000]), left_by[shuffle[k : k + 1_000]], **options
                )
                for k in range(0, n_left, 1_000)
            ]
        )
        np.testing.assert_array_equal(small, in_order[shuffle], err_msg=str(options))
        scan = ag.asof_join(on, right, left_by, right_by, device="cpu", **options)
        np.testing.assert_array_equal(scan, in_order, err_msg=str(options))


@pytest.mark.parametrize("kind", ["int", "float"])
def test_cursor_probe_steps_of_every_length(kind):
    """Time-ordered rows against about ten times as many right keys: each group's cursor
    moves by nothing, by a few keys (inside the 16-key window kernels/cursor.py searches
    first), by exactly the window, or far past it, over runs of equal keys longer than the
    window. The cursor probe's answers equal one binary search per row (probe_row). (The
    right rows come shuffled, so that no probe streams instead.)"""
    rng = np.random.default_rng(7)
    n_right = 60_000
    steps = rng.choice([0, 1, 2, 40], n_right, p=[0.45, 0.35, 0.15, 0.05])
    steps[rng.random(n_right) < 0.002] = 5_000  # gaps many windows wide
    right = np.cumsum(steps)
    for start in rng.integers(0, n_right - 60, 40):  # runs of 40 equal keys
        right[start : start + 40] = right[start]
    right = np.sort(right)
    right_by = rng.integers(0, 3, n_right).astype(str)
    left = np.sort(
        np.concatenate(
            [
                rng.choice(right, 4_000),  # exact hits
                rng.integers(-10, right[-1] + 10, 4_000),
            ]
        )
    )
    left_by = rng.integers(0, 3, left.size).astype(str)
    if kind == "float":
        right, left = right.astype(np.float64), left.astype(np.float64)
        right[-50:] = np.nan  # above every number: the window meets NaN near the end
        left[-30:] = np.nan
    rows = rng.permutation(n_right)
    prepared = ag.AsofJoin(right[rows], right_by[rows], device="cpu")
    shuffle = rng.permutation(left.size)  # small unordered batches: a binary search a row
    for options in OPTIONS:
        with walks.recorded() as decisions:
            in_order = prepared.join(left, left_by, **options)
        assert _walks(decisions) == ["cursor"], options
        with walks.recorded() as decisions:
            one_by_one = np.concatenate(
                [
                    prepared.join(
                        left[shuffle[k : k + 1_000]], left_by[shuffle[k : k + 1_000]], **options
                    )
                    for k in range(0, left.size, 1_000)
                ]
            )
        assert _walks(decisions) == ["search"] * 8, options
        np.testing.assert_array_equal(one_by_one, in_order[shuffle], err_msg=str(options))


def _by_group_then_key(rng, n, kind, groups):
    """``n`` left keys of ``kind``, which rows are null, and their groups (one the right
    lacks), sorted by group then key, as per-symbol files one after another give them."""
    keys = _keys(rng, n, kind, 3_100)
    by = rng.integers(0, groups + 1, n)
    order = np.lexsort((keys, by))  # NaN after every number, as asofgpu orders them
    return keys[order], rng.random(n) < 0.03, by[order].astype(str)


@pytest.fixture
def walked_as_they_come(monkeypatch):
    """Each cpu probe's walk: True where its rows were walked as they came, False where
    they were sorted by key first (``order.in_key_order``)."""
    from asofgpu._backend import cpu

    seen = []
    real = cpu.in_key_order

    def in_key_order(rows, in_order, *args):
        seen.append(bool(in_order))
        return real(rows, in_order, *args)

    monkeypatch.setattr(cpu, "in_key_order", in_key_order)
    return seen


@pytest.mark.parametrize("right_order", ["shuffled", "time-sorted"])
@pytest.mark.parametrize("kind", ["int", "float", "uint"])
def test_rows_sorted_by_group_then_key_are_walked_as_they_come(
    kind, right_order, walked_as_they_come, at_most_8_threads
):
    """Left rows sorted by group, then key, are out of key order, but each group's keys
    ascend: the cursors walk them as they come, never sorted (a 10M-row day of per-symbol
    files: 1.17 s of probes sorted, 0.38 s so), and never stream (the stream walks keys in
    order). One descent within a group sends the batch to the key sort, and then to the
    stream where the right side is time-sorted. The answers equal one binary search a row."""
    rng = np.random.default_rng(["int", "float", "uint"].index(kind) + 40)
    n_left, n_right = 40_000, 60_000  # above search_max_rows: the batch is walked
    right = _keys(rng, n_right, kind, 3_000)
    if right_order == "time-sorted":
        right = np.sort(right)
    right_by = rng.integers(0, 300, n_right).astype(str)  # enough groups to stream
    prepared = ag.AsofJoin(right, right_by, device="cpu")
    keys, nulls, left_by = _by_group_then_key(rng, n_left, kind, 300)
    walked = ~nulls[:-1] & ~nulls[1:]
    ascents = np.flatnonzero((left_by[:-1] == left_by[1:]) & (keys[:-1] < keys[1:]) & walked)
    at = ascents[len(ascents) // 3]
    swapped_keys = keys.copy()
    swapped_keys[[at, at + 1]] = keys[[at + 1, at]]  # one group's two keys swapped
    left_on, descent = pa.array(keys, mask=nulls), pa.array(swapped_keys, mask=nulls)
    sorted_walk = "stream" if right_order == "time-sorted" else "cursor"
    for options in OPTIONS:
        walked_as_they_come.clear()
        # nearest streams from 524,288 right rows: these 60,000 too
        with walks.overridden(stream_nearest_min_span=0), walks.recorded() as decisions:
            grouped = prepared.join(left_on, left_by, **options)
            swapped = prepared.join(descent, left_by, **options)
        assert _walks(decisions) == ["cursor", sorted_walk], options
        assert walked_as_they_come == [True, False], options
        for keys, answers in ((left_on, grouped), (descent, swapped)):
            one_by_one = np.concatenate(
                [
                    prepared.join(keys[k : k + 1_000], left_by[k : k + 1_000], **options)
                    for k in range(0, n_left, 1_000)
                ]
            )
            np.testing.assert_array_equal(answers, one_by_one, err_msg=str(options))


@pytest.mark.parametrize("kind", ["int", "float", "uint"])
def test_each_groups_order_is_checked_whatever_the_interleaving(kind):
    """``ascends_within_groups``: true where every group's keys ascend along the rows,
    however the groups interleave (equal keys and NaN last allowed); false at one descent;
    over the walked rows only when given some, and over none of a code past the groups."""
    from asofgpu._backend import jit

    check = jit.cpu_scan(kind == "float", False).ascends_within_groups
    dtype = {"int": np.int64, "float": np.float64, "uint": np.uint64}[kind]
    keys = np.array([5, 1, 5, 2, 7, 2, 9, 3], dtype)
    if kind == "uint":
        keys += np.uint64(2**63)  # above every int64: compared as unsigned
    groups = np.array([0, 1, 0, 1, 0, 1, 2, 1], np.int32)
    every = np.arange(8, dtype=np.int64)
    assert check(keys, groups, every, 3)
    assert check(keys[::-1].copy(), groups, every, 3) is False
    keys[5] = 0  # group 1: 1, 2, 0, 3
    assert check(keys, groups, every, 3) is False
    assert check(keys, groups, np.array([0, 1, 2, 3, 4, 6, 7], np.int64), 3)  # row 5 skipped
    discarded = groups.copy()
    discarded[[3, 5]] = 3  # their code at n_groups (a prepare discards them): passed over
    assert check(keys, discarded, every, 3)
    assert check(keys, discarded, every, 4) is False  # as a group: 2, then 0
    if kind == "uint":  # 1 then 2**63 ascend as unsigned, not as int64
        big = np.array([1, 2**63], np.uint64)
        assert check(big, np.zeros(2, np.int32), np.arange(2, dtype=np.int64), 1)
    if kind == "float":
        keys = np.array([1.0, np.nan, -np.inf, np.nan], dtype)
        assert check(keys, np.array([0, 0, 1, 1], np.int32), np.arange(4, dtype=np.int64), 2)
        assert not check(
            keys[::-1].copy(), np.array([0, 0, 1, 1], np.int32), np.arange(4, dtype=np.int64), 2
        )


@pytest.mark.parametrize("one_group", [True, False])
def test_a_time_ordered_batch_of_one_group_of_many_walks_its_cursor(one_group):
    """A time-ordered batch of one group, where the right side has 300 (a per-symbol file
    alone), walks its group's cursor: streaming would read every group's right rows over
    its span. The same batch over many groups streams. The answers equal one binary
    search per row."""
    rng = np.random.default_rng(12)
    n_left, n_right = 40_000, 60_000
    right = np.sort(_keys(rng, n_right, "int", 3_000))
    right_by = rng.integers(0, 300, n_right).astype(str)
    prepared = ag.AsofJoin(right, right_by, device="cpu")
    left = np.sort(_keys(rng, n_left, "int", 3_100))
    left_by = np.full(n_left, "7") if one_group else rng.integers(0, 300, n_left).astype(str)
    for options in OPTIONS:
        with walks.overridden(stream_nearest_min_span=0), walks.recorded() as decisions:
            answers = prepared.join(left, left_by, **options)
        assert _walks(decisions) == ["cursor" if one_group else "stream"], options
        one_by_one = np.concatenate(
            [
                prepared.join(left[k : k + 1_000], left_by[k : k + 1_000], **options)
                for k in range(0, n_left, 1_000)
            ]
        )
        np.testing.assert_array_equal(answers, one_by_one, err_msg=str(options))


@pytest.fixture
def at_most_8_threads():
    """A batch streams only with a row per group and thread: the streaming tests' group
    counts hold up to 100 threads, and a larger machine runs them on 8."""
    import numba

    before = numba.get_num_threads()
    numba.set_num_threads(min(before, 8))
    yield
    numba.set_num_threads(before)


@pytest.mark.parametrize(
    ("n_groups", "right_rows", "streams"),
    [
        (1, 1, True),
        (1, 256, True),
        (1, 257, False),  # one group: the span alone decides
        (2, 99, False),
        (2, 100, True),
        (200, 1, True),
        (199, 1, False),
        (3, 66, False),
    ],
)
def test_streams_where_groups_times_span_reach_the_threshold(n_groups, right_rows, streams):
    """``walks.streams`` on 1,000 left rows spanning ``right_rows`` right rows each: up to
    ``stream_span`` a row, and for several groups from ``stream_group_span`` (200) over the
    groups."""
    assert walks.THRESHOLDS.stream_span == 256 and walks.THRESHOLDS.stream_group_span == 200
    right_keys = np.arange(1_000 * right_rows, dtype=np.int64)
    keys = np.arange(1_000, dtype=np.int64) * right_rows
    keys[-1] = right_keys[-1]  # the batch spans all 1,000 x right_rows right rows
    assert walks.streams(right_keys, keys, n_groups, pieces=1) == streams


@pytest.mark.parametrize(
    ("n_groups", "right_rows", "streams"),
    [
        (1_000, 524_000, False),  # in cache, where its cursors win
        (1_000, 525_000, True),  # from stream_nearest_min_span (524,288)
        (1, 600_000, False),  # one group: its cursor finds both candidates side by side
        (2, 600_000, True),
    ],
)
def test_nearest_streams_over_many_right_rows_of_several_groups(n_groups, right_rows, streams):
    """``walks.streams`` for a nearest batch of 4,096 left rows spanning ``right_rows``
    right rows (128 to 147 a left row: the backward rules stream them all): at least
    ``stream_nearest_min_span`` of them, and more than one group."""
    assert walks.THRESHOLDS.stream_nearest_min_span == 1 << 19
    right_keys = np.arange(right_rows, dtype=np.int64)
    keys = np.linspace(0, right_rows - 1, 4_096).astype(np.int64)
    assert walks.streams(right_keys, keys, n_groups, pieces=1)  # as backward
    assert walks.streams(right_keys, keys, n_groups, pieces=1, nearest=True) == streams


def _walks(decisions: list) -> list[str]:
    """The walk each prepared probe took, in order, from the decisions ``walks.recorded``
    noted: "search" (a binary search a row, kernels/probe.py), "stream" (kernels/stream.py)
    or "cursor" (kernels/cursor.py, the one walk of a probe that asks ``walks.pieces``)."""
    taken = []
    for name, outcome in decisions:
        if (name, outcome) == ("searches_each_row", True):
            taken.append("search")
        elif (name, outcome) == ("streams", True):
            taken.append("stream")
        elif name == "pieces":
            taken.append("cursor")
    return taken


@pytest.mark.parametrize("kind", ["int", "float", "uint"])
def test_streamed_probe_equals_one_search_a_row(kind, at_most_8_threads):
    """A time-sorted right side, every row in a group, probed by a batch of about as many
    rows, time-ordered or shuffled (then radix-sorted): the probe streams the right side (in
    parallel pieces), with null left keys, left groups the right lacks and runs of equal
    keys. Its answers equal one binary search per row (probe_row) for every option: nearest
    walks the stream up and then down."""
    rng = np.random.default_rng(11)
    n_left, n_right = 40_000, 60_000
    right = np.sort(_keys(rng, n_right, kind, 3_000))
    right_by = rng.integers(0, 300, n_right).astype(str)  # enough groups to stream
    left = np.sort(_keys(rng, n_left, kind, 3_100))
    left_by = rng.integers(0, 301, n_left).astype(str)  # "300": a group the right lacks
    left_on = pa.array(left, mask=rng.random(n_left) < 0.03)
    prepared = ag.AsofJoin(right, right_by, device="cpu")
    shuffle = rng.permutation(n_left)
    for options in OPTIONS:
        # nearest streams from 524,288 right rows: these 60,000 too
        with walks.overridden(stream_nearest_min_span=0), walks.recorded() as decisions:
            streamed = prepared.join(left_on, left_by, **options)
            shuffled = prepared.join(left_on.take(shuffle), left_by[shuffle], **options)
        assert _walks(decisions) == ["stream", "stream"], options
        assert ("parallel", True) in decisions, options
        np.testing.assert_array_equal(shuffled, streamed[shuffle], err_msg=str(options))
        one_by_one = np.concatenate(
            [
                prepared.join(
                    left_on.take(shuffle[k : k + 1_000]), left_by[shuffle[k : k + 1_000]], **options
                )
                for k in range(0, n_left, 1_000)
            ]
        )
        np.testing.assert_array_equal(one_by_one, streamed[shuffle], err_msg=str(options))


@pytest.mark.parametrize("pieces", [3, 7, 16])
def test_streamed_nearest_across_pieces_that_split_runs_of_equal_keys(monkeypatch, pieces):
    """The nearest stream starts each piece's walk down from binary searches at its last
    left key: runs of equal right keys (polars' rule takes the winning key's last row) that
    the pieces' borders cut, and left keys equal to right ones, give the rows one search a
    row (the python backend) gives, in 3 to 16 pieces (more than this machine's threads)."""
    from asofgpu._backend import cpu

    monkeypatch.setattr(cpu, "threads", lambda parallel: pieces if parallel else 1)
    rng = np.random.default_rng(pieces)
    distinct = np.sort(rng.choice(np.arange(0, 40_000, 4), 2_000, replace=False))
    right = np.repeat(distinct, rng.integers(1, 4, distinct.size))  # runs of one to three
    right_by = rng.integers(0, 3, right.size)
    # left keys on the right's keys (in the runs) and between them
    left = np.sort(np.concatenate([rng.choice(right, 1_500), rng.integers(0, 40_000, 1_500)]))
    left_by = rng.integers(0, 3, left.size)
    prepared = ag.AsofJoin(right, right_by, device="cpu")
    oracle_join = ag.AsofJoin(right, right_by, device="python")
    for options in (o for o in OPTIONS if o["strategy"] == "nearest"):
        # 3 groups, 4,000 right rows: streamed all the same
        forced = dict(stream_span=HUGE, stream_group_span=0, stream_nearest_min_span=0)
        with walks.overridden(parallel_min_rows=0, interpret_max_rows=0, **forced):
            with walks.recorded() as decisions:
                got = prepared.join(left, left_by, **options)
        assert _walks(decisions) == ["stream"], options
        want = oracle_join.join(left, left_by, **options)
        np.testing.assert_array_equal(got, want, err_msg=str(options))


def test_streamed_probe_without_by():
    """No by-keys (one group) and pairs of equal right keys: backward takes the last of a
    pair, forward the first, as one search a row does; a batch too small for threads
    streams on one."""
    right = np.repeat(np.arange(0, 50_000, 2), 2)
    prepared = ag.AsofJoin(right, device="cpu")
    left = np.arange(-3, 50_003)
    shuffle = np.random.default_rng(3).permutation(left.size)
    for options in (
        {},
        dict(allow_exact_matches=False),
        dict(strategy="forward"),
        dict(strategy="forward", allow_exact_matches=False, tolerance=1),
    ):
        with walks.recorded() as decisions:
            streamed = prepared.join(left, **options)
        with walks.recorded() as on_one:
            small = prepared.join(left[:2_000], **options)
        assert _walks(decisions) == _walks(on_one) == ["stream"], options
        assert ("parallel", True) not in on_one, options  # one thread
        np.testing.assert_array_equal(small, streamed[:2_000], err_msg=str(options))
        one_by_one = np.concatenate(
            [
                prepared.join(left[shuffle[k : k + 1_000]], **options)
                for k in range(0, left.size, 1_000)
            ]
        )
        np.testing.assert_array_equal(one_by_one, streamed[shuffle], err_msg=str(options))
    assert prepared.join(np.arange(3, 20_000)).tolist()[:2] == [3, 5]  # keys 2 and 4
    assert prepared.join(np.arange(3, 20_000), strategy="forward").tolist()[:2] == [4, 4]


@pytest.mark.parametrize("by", [False, True])
def test_streamed_probe_ignores_later_changes_to_the_callers_keys(by, at_most_8_threads):
    """The streamed probe reads the right keys in row order: a copy, not the caller's array,
    which may change after preparing (the sorted copy does not)."""
    names = np.array([f"g{i}" for i in range(1_000)])  # enough groups to stream
    right = np.arange(0, 100_000, 2)
    right_by = names[np.arange(right.size) % 1_000] if by else None
    left = np.arange(-1, 100_001)
    left_by = names[np.arange(left.size) % 1_000] if by else None
    prepared = ag.AsofJoin(right, right_by, device="cpu")
    with walks.recorded() as decisions:
        before = prepared.join(left, left_by)
        right += 7
        np.testing.assert_array_equal(prepared.join(left, left_by), before)
    assert _walks(decisions) == ["stream", "stream"]


@pytest.mark.parametrize("direction", ["backward", "forward"])
def test_a_batch_spanning_many_right_rows_a_row_streams(direction):
    """Up to ``stream_span`` right rows per left row, a time-ordered batch still streams the
    right side (walking far more right rows than it has rows), with the answers of one
    search a row."""
    rng = np.random.default_rng(8)
    n = 60_000
    right = np.sort(rng.integers(0, 10**7, n))
    right_by = rng.integers(0, 10, n).astype(str)
    left = np.sort(rng.integers(0, 10**7, n * 2 // walks.THRESHOLDS.stream_span))
    left_by = rng.integers(0, 11, len(left)).astype(str)  # "10": a group the right lacks
    prepared = ag.AsofJoin(right, right_by, device="cpu")
    with walks.recorded() as decisions:
        got = prepared.join(left, left_by, strategy=direction)
    assert _walks(decisions) == ["stream"]
    shuffle = rng.permutation(len(left))
    with walks.recorded() as decisions:
        shuffled = prepared.join(left[shuffle], left_by[shuffle], strategy=direction)
    assert _walks(decisions) == ["search"]  # an unordered batch: a binary search a row
    np.testing.assert_array_equal(shuffled, got[shuffle])
    assert (got != ag.NO_MATCH).mean() > 0.8


@pytest.mark.parametrize(
    "case",
    [
        "unsorted right",
        "null right group",
        "nearest of one group",
        "finer left unit",
        "wide span",
        "few groups",
        "control",
    ],
)
def test_probe_streams_only_where_it_may(case, at_most_8_threads):
    """Streaming needs a time-sorted right side with every row in a group, the right's own
    unit, few right rows per left row, and, with several groups, not too few for them, and
    nearest several groups (one cursor finds both its candidates side by side); otherwise
    the cursor probe answers (here checked against one search a row). Each case would
    stream but for what it changes: the control, which changes nothing, streams."""
    rng = np.random.default_rng(5)
    n = 40_000
    # 400 groups x about 1 right row a left row = 400 >= stream_group_span. The wide span's
    # 79 rows (one thread) need no more groups than rows (walks.streams wants a row per group and
    # piece): 20 groups x about 505 right rows a row would pass the group rule.
    n_groups = {"wide span": 20, "few groups": 20, "nearest of one group": 1}.get(case, 400)
    right = np.sort(rng.integers(0, 10**6, n)).astype("datetime64[ms]")
    right_by = pa.array(rng.integers(0, n_groups, n).astype(str))
    left = np.sort(rng.integers(0, 10**6, n)).astype("datetime64[ms]")
    options = {}
    if case == "unsorted right":
        right = right[rng.permutation(n)]
    elif case == "null right group":
        right_by = pa.array(right_by.to_pylist()[:-1] + [None])
    elif case == "nearest of one group":
        options = dict(strategy="nearest")
    elif case == "finer left unit":
        left = left.astype("datetime64[us]")
    elif case == "wide span":  # 79 rows over 40,000 right rows: twice the span that streams
        left = left[:: 2 * walks.THRESHOLDS.stream_span]
    # "few groups": 20 groups x a right row a left row, below stream_group_span
    left_by = rng.integers(0, n_groups, len(left)).astype(str)
    prepared = ag.AsofJoin(right, right_by, device="cpu")
    with walks.recorded() as decisions:
        got = prepared.join(left, left_by, **options)
    assert _walks(decisions) == (["stream"] if case == "control" else ["cursor"])
    shuffle = rng.permutation(len(left))
    one_by_one = np.concatenate(
        [
            prepared.join(left[shuffle[k : k + 1_000]], left_by[shuffle[k : k + 1_000]], **options)
            for k in range(0, len(left), 1_000)
        ]
    )
    np.testing.assert_array_equal(one_by_one, got[shuffle])


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64, np.uint64])
def test_prefetch_is_only_a_hint(dtype):
    """The cursor probe's cache hint compiles for every array it is given, changes nothing
    and does not fault on the last element."""
    import numba

    from asofgpu._intrinsics import prefetch

    @numba.njit
    def total(values):
        s = values[0] - values[0]
        for i in range(values.size):
            prefetch(values, min(i + 8, values.size - 1))
            s += values[i]
        return s

    values = np.arange(1, 100, dtype=dtype)
    assert total(values) == values.sum()


def test_prefetch_refuses_what_is_not_a_1d_array():
    import numba

    from asofgpu._intrinsics import prefetch

    @numba.njit
    def hint(values):
        prefetch(values, 0)

    with pytest.raises(numba.core.errors.TypingError, match="prefetch"):
        hint(np.zeros((2, 2)))


@pytest.mark.parametrize("span", [1, 2**8, 2**12, 2**20, 2**40])
def test_radix_argsort_for_every_number_of_passes(span):
    """The passes alternate between the sort's arrays and its spares: an even or odd number
    of them (none when all keys are equal, one or two for these 70k rows) must leave the
    sorted rows where it says."""
    rng = np.random.default_rng(span)
    keys = rng.integers(0, span, 70_000) + 10**12
    order = _backend.CpuBackend().stable_argsort(keys)
    np.testing.assert_array_equal(order, np.argsort(keys, kind="stable"))


@pytest.mark.parametrize("groups", [1, 7, 3_000, 40_000])
@pytest.mark.parametrize("parallel_from", [0, 10**9])
@pytest.mark.parametrize("rows", ["shuffled", "as they are", "grouped already"])
def test_the_group_sort_is_stable_on_one_thread_and_in_pieces(
    thresholds, groups, parallel_from, rows
):
    """Prepared right rows sorted by group (the counting sort): each group's rows keep the
    order they had (a shuffled order, or none: the rows as they are, time-sorted quotes),
    their keys move with them, and the offsets bound each group (the last bucket holds the
    discarded rows), whether the pieces run on the pool (the counts of 40,000 groups a piece
    outgrow 70,000 rows: one piece then) or on one thread; the plain Python sort is the
    oracle. Rows in group order already (quotes sorted by symbol) come back as they are,
    their keys a copy of the caller's."""
    thresholds(parallel_min_rows=parallel_from)
    rng = np.random.default_rng(groups)
    n = 70_000
    order = rng.permutation(n).astype(np.int64) if rows == "shuffled" else None
    bucket = rng.integers(0, groups + 1, n).astype(np.int32)
    if rows == "grouped already":
        bucket.sort()
    keys = rng.integers(-(2**62), 2**62, n)
    got = _backend.CpuBackend().group_sort(order, bucket, groups, keys)
    expected = _backend.PythonBackend().group_sort(order, bucket, groups, keys)
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype
    assert not np.shares_memory(got[1], keys)


def test_load_word_reads_eight_bytes_little_endian_at_any_offset():
    """The string hash's word load: unaligned, first byte lowest; it refuses arrays other
    than one-dimensional uint8."""
    import numba

    from asofgpu._intrinsics import load_word

    @numba.njit
    def words(data):
        out = np.empty(data.size - 7, np.uint64)
        for p in range(out.size):
            out[p] = load_word(data, p)
        return out

    data = np.random.default_rng(5).integers(0, 256, 40).astype(np.uint8)
    expected = [int.from_bytes(data[p : p + 8].tobytes(), "little") for p in range(33)]
    assert words(data).tolist() == expected

    @numba.njit
    def word(values):
        return load_word(values, 0)

    with pytest.raises(numba.core.errors.TypingError, match="load_word"):
        word(np.zeros(8, np.int64))


@pytest.mark.parametrize(
    "layout", ["uniform", "clustered", "short runs", "long runs", "long runs of equal keys"]
)
@pytest.mark.parametrize("pieces", [1, 2, 7])
@pytest.mark.parametrize("n", [3_000, 70_000])
def test_radix_argsort_settles_runs_of_equal_top_bits(layout, pieces, n):
    """The passes over all rows sort only the top bits (12 for 3,000 rows: one pass, which
    leaves the sorted bits in the spares; 24 for 70,000: two); runs of keys equal there are
    then settled: short ones by insertion sorts, those past LONG_RUN by a radix sort of their
    own, stably, runs across the pieces' bounds included."""
    rng = np.random.default_rng(3)
    low = rng.integers(0, 2**17, n)
    keys = {
        "uniform": rng.integers(0, 2**40, n),
        "clustered": np.where(
            rng.random(n) < 0.5, rng.integers(0, 2**14, n), rng.integers(0, 2**40, n)
        ),
        "short runs": rng.integers(0, 2_000, n) << 30 | low,  # n / 2,000 rows a run
        "long runs": rng.integers(0, 20, n) << 30 | low,  # n / 20: past LONG_RUN
        "long runs of equal keys": rng.integers(0, 20, n) << 30 | low % 4,
    }[layout] - 2**35
    order = _backend.order.radix_order(np.arange(n), keys, False, pieces)[0]
    np.testing.assert_array_equal(order, np.argsort(keys, kind="stable"))


def test_a_one_shot_calls_deferred_sort_keeps_the_callers_keys_uncopied():
    """A one-shot call (``_defer_sort``: ``asof_join``, the window and range joins) holds the
    caller's keys unsorted until it returns: the time order kept for a stream is theirs, not
    a copy (80 MB for 10M keys); a prepared join copies them (the test above)."""
    rng = np.random.default_rng(5)
    right_keys, right_by = np.sort(rng.integers(0, 10**6, 5_000)), rng.integers(0, 20, 5_000)
    one_shot = ag.AsofJoin(right_keys, right_by, device="cpu", _defer_sort=True)
    windows = one_shot.windows(right_keys[::7], right_by[::7], before=50)
    assert np.shares_memory(one_shot._time_ordered[0], right_keys)
    prepared = ag.AsofJoin(right_keys, right_by, device="cpu")
    assert not np.shares_memory(prepared._time_ordered[0], right_keys)
    again = prepared.windows(right_keys[::7], right_by[::7], before=50)
    assert np.array_equal(windows.starts, again.starts)
    assert np.array_equal(windows.ends, again.ends)


@pytest.mark.parametrize("form", ["numpy", "chunked arrow"])
def test_a_streamed_probe_reads_the_keys_as_they_were_prepared(form):
    """The stream walks the right keys in row order as prepared: a caller's numpy array,
    changed after preparing, changes no answer (its keys were copied); Arrow's chunks,
    combined into memory the host pool lends, are walked without a copy and answer the
    same after the pool lent more."""
    from asofgpu._backend import walks

    rng = np.random.default_rng(9)
    m, n = 200_000, 5_000  # keys of over 1 MiB: combined into memory the host pool lends
    right_keys = np.sort(rng.integers(0, 10**6, m))
    left_keys = np.sort(rng.integers(0, 10**6, n))
    right_by, left_by = rng.integers(0, 20, m), rng.integers(0, 20, n)
    if form == "numpy":
        given = right_keys.copy()
    else:
        given = pa.chunked_array([right_keys[: m // 3], right_keys[m // 3 :]])
    with walks.overridden(stream_span=1 << 40, stream_group_span=0, parallel_min_rows=0):
        prepared = ag.AsofJoin(given, right_by, device="cpu")
        if form == "numpy":
            given[:] = given[::-1]  # the caller reuses its array
        # the pool lends again only what nothing holds: not the prepared keys
        ag.AsofJoin(pa.chunked_array([right_keys[::-1][:7], right_keys[7:]]), right_by)
        got = prepared.join(left_keys, left_by)
    want = ag.AsofJoin(right_keys, right_by, device="python").join(left_keys, left_by)
    assert np.array_equal(got, want)


def _in_runs(values: np.ndarray, cuts, type=None) -> pa.ChunkedArray:
    """``values`` as chunks that each own a buffer (runs that do not lie end to end)."""
    return pa.chunked_array(
        [pa.array(values[a:b].copy(), type) for a, b in zip(cuts, cuts[1:])], type
    )


@pytest.mark.parametrize("kind", ["int", "float", "uint", "timestamp"])
def test_chunked_keys_are_copied_with_their_order_checked(kind):
    """A key column in several runs of chunks, as readers give them, is copied into one
    array with its order checked in the copy's pass (``Key.ascends``), and the walks skip
    their own check. The copy holds the column's values; keys out of order only across a
    run's border are found so; and one-shot and prepared joins of such columns equal those
    of their combined copies."""
    from asofgpu import _columns

    rng = np.random.default_rng(11)
    n_left, n_right = 30_000, 40_000
    left, right = (
        np.sort(_keys(rng, n_left, kind, 5_000)),
        np.sort(_keys(rng, n_right, kind, 5_000)),
    )
    type = pa.timestamp("ns") if kind == "timestamp" else None
    left_cuts, right_cuts = [0, 9_000, 20_000, n_left], [0, 1, 17_000, 17_001, n_right]
    left_by = pa.array(rng.integers(0, 40, n_left).astype(str))
    right_by = pa.array(rng.integers(0, 40, n_right).astype(str))
    broken = right.copy()
    broken[17_000] = broken[16_999] - 1  # a descent at a run's border
    for keys, ascends in ((right, True), (broken, False)):
        column = _in_runs(keys, right_cuts, type)
        with walks.recorded() as decisions:
            key = _columns.ordered_key(column, "right_on", host=True)
        assert ("checks_while_copying", True) in decisions
        assert key.ascends is ascends and key.valid is None
        assert np.array_equal(key.values, keys, equal_nan=kind == "float")
        one_shot = ag.AsofJoin(column, right_by, device="cpu", _defer_sort=True)
        assert pickle.loads(pickle.dumps(one_shot))._unsorted[0].ascends is ascends
        chunked_left = _in_runs(left, left_cuts, type)
        combined = column.combine_chunks(), chunked_left.combine_chunks()
        for options in OPTIONS[::3]:
            if kind == "timestamp" and options["tolerance"] is not None:
                options = {**options, "tolerance": np.timedelta64(3, "ns")}
            want = ag.asof_join(
                combined[1], combined[0], left_by, right_by, device="cpu", **options
            )
            got = ag.asof_join(chunked_left, column, left_by, right_by, device="cpu", **options)
            np.testing.assert_array_equal(got, want, err_msg=str(options))
            prepared = ag.AsofJoin(column, right_by, device="cpu").join(
                chunked_left, left_by, **options
            )
            np.testing.assert_array_equal(prepared, want, err_msg=str(options))
    # Not copied so: a column with nulls, or whose chunks lie end to end (one run, a view).
    with_nulls = pa.chunked_array(
        [
            pa.array(right[:100].copy(), type, mask=np.arange(100) == 3),
            pa.array(right[100:].copy(), type),
        ]
    )
    key = _columns.ordered_key(with_nulls, "right_on", host=True)
    assert not key.ascends and key.valid is not None and not key.valid[3]
    whole = pa.array(right, type)
    key = _columns.ordered_key(pa.chunked_array([whole[:10], whole[10:]]), "right_on", host=True)
    assert not key.ascends
    if kind != "float":  # floats are copied to make their NaN and -0.0 canonical
        assert np.shares_memory(key.values, right)


def _writable_arrays_in(signatures, positions) -> list:
    """The argument types at ``positions`` (an array, or a tuple of them: a ``Walk``,
    ``Right`` or ``Tape``) of compiled ``signatures`` that are writable arrays."""
    found = []
    for signature in signatures:
        for k in positions:
            arg = signature[k]
            for t in getattr(arg, "types", (arg,)):
                if getattr(t, "mutable", False):
                    found.append((k, t))
    return found


@pytest.mark.parametrize("parallel", [False, True])
def test_writable_and_read_only_inputs_run_one_compiled_kernel(thresholds, parallel):
    """numba compiles a kernel again for each mix of writable and read-only arrays: the
    backend passes every array a kernel only reads as read-only, so numpy's writable arrays
    and Arrow's read-only buffers run the kernels ``asofgpu warm`` compiled (integer groups
    from a pandas frame compiled for 5 s after it). Writable numpy inputs here: the one-shot
    scan, the prepared probe (cursors and streams), the group encoding and lookup, the
    gather, a calendar tolerance's reaches, the window join (fixed and per-row reaches) and
    the splice compile no signature with a writable input."""
    thresholds(interpret_max_rows=0, parallel_min_rows=0 if parallel else HUGE)
    thresholds(parallel_encode_rows=0, parallel_gather_rows=0)
    rng = np.random.default_rng(12)
    right_keys = np.arange(4_000, dtype=np.int64) * 3
    right_groups = rng.integers(0, 50, 4_000) * 7919  # ids: hashed, not dense codes
    left_keys = np.sort(rng.integers(0, 12_000, 1_000))
    left_groups = rng.integers(0, 50, 1_000) * 7919
    assert all(a.flags.writeable for a in (right_keys, right_groups, left_keys, left_groups))
    ag.asof_join(left_keys, right_keys, left_groups, right_groups, device="cpu")
    prepared = ag.AsofJoin(right_keys, right_groups, device="cpu")
    for stream in (True, False):
        forced = dict(stream_span=HUGE if stream else 0, stream_group_span=0)
        with walks.overridden(**forced, stream_nearest_min_span=0):
            prepared.join(left_keys, left_groups, strategy="nearest")
            gmap = prepared.join(left_keys, left_groups)
    ag.gather(pa.table({"v": rng.random(4_000)}), gmap)
    days = ag.AsofJoin(right_keys.astype("M8[D]"), device="cpu")
    days.join(left_keys.astype("M8[D]"), tolerance="1mo")  # reaches counted by the calendar
    quotes = pa.table({"t": right_keys, "g": right_groups, "v": rng.random(4_000)})
    trades = pa.table({"t": left_keys, "g": left_groups})
    for before in (30, np.full(1_000, 30)):  # fixed, and one a row (numpy's, writable)
        ag.window_join(
            trades, quotes, on="t", by="g", before=before, aggs={"v": ["sum", "max"]}, device="cpu"
        )
    ag.splice_join(trades, quotes, on="t", by="g", device="cpu")
    jit = _backend.jit
    kernels = {
        # the merge scan's compiled passes (scan_join itself is plain Python)
        "scan": (jit.cpu_scan(False, parallel).scan_join.__globals__["backward_pass"], (0, 1)),
        "cursors": (jit.cpu_cursor_probe(False, parallel), (0, 1)),
        "stream": (jit.cpu_stream_probe(False, parallel).probe, (0, 1, 2)),
        "stream nearest": (jit.cpu_stream_probe(False, parallel).nearest, (0, 1, 2)),
        "encoding": (jit.cpu_fixed_width().dictionary_encode, (0, 1, 2)),
        "lookup": (jit.cpu_fixed_width().lookup_parallel, (0, 1, 4, 5, 6)),
        "take": (jit.cpu_take().take_fixed, (0, 1, 2)),
        "windows": (jit.cpu_window(False, parallel).windows, (0, 1, 2, 3)),
        "window sums": (jit.cpu_window(False, parallel).reduces, (0, 1, 2, 3, 4, 5)),
        "splice": (jit.cpu_splice(False, parallel), (0, 1, 2, 3, 4, 5)),
        "calendar": (jit.cpu_calendar(parallel), (0,)),
    }
    for name, (kernel, positions) in kernels.items():
        if name == "lookup" and not parallel:
            kernel = jit.cpu_fixed_width().lookup_serial
        assert kernel.signatures, name  # compiled here, or before in this process
        assert _writable_arrays_in(kernel.signatures, positions) == [], name
