"""The window join (AsofJoin.windows, asofgpu.Windows, asofgpu.window_join and
asofgpu.range_join) against its naive oracle (window_oracle, reduce_oracle), on every backend.

On the cpu backend every test here runs the compiled kernels (a small launch would otherwise
run them as plain Python, as the python backend does); one test runs them on numba's pool."""

from __future__ import annotations

import datetime
import math
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import asofgpu as ag
from asofgpu._backend import cudasim_enabled, walks
from conftest import HUGE, to_host
from oracle import NO_MATCH, reduce_oracle, window_oracle

INF = math.inf
NAN = math.nan


@pytest.fixture(autouse=True)
def _compiled(request):
    """On the cpu backend, the compiled kernels whatever the size of the launch."""
    if "device" in request.fixturenames and request.getfixturevalue("device") == "cpu":
        with walks.overridden(interpret_max_rows=0):
            yield
    else:
        yield


# --------------------------------------------------------------------------- helpers


def _lists(windows) -> list[list[int]]:
    """Each window's right rows, as lists."""
    starts, ends = to_host(windows.starts).tolist(), to_host(windows.ends).tolist()
    rows = to_host(windows.rows)
    assert len(starts) == len(ends) == len(windows)
    return [rows[s:e].tolist() for s, e in zip(starts, ends)]


_FLOATS = [-INF, -2.5, -0.0, 0.0, 1.5, 2.0, 3.25, 7.0, INF, NAN]  # steps of 0.5 at least


def _random_keys(rng, n: int, kind: str, nulls: bool) -> list:
    if kind == "int":
        keys = [int(v) for v in rng.integers(-6, 7, n)]
    else:
        keys = [float(v) for v in rng.choice(_FLOATS, n)]
    if nulls:
        keys = [None if rng.random() < 0.15 else k for k in keys]
    return keys


def _random_by(rng, n: int, names: list[str], nulls: bool) -> list:
    return [None if nulls and rng.random() < 0.12 else str(rng.choice(names)) for _ in range(n)]


def _arrow_keys(keys, kind: str) -> pa.Array:
    return pa.array(keys, type=pa.int64() if kind == "int" else pa.float64())


def _groups(by):
    return None if by is None else [(g,) for g in by]


# (before, after) pairs: 0, asymmetric, narrower than one key step, wider than any group.
_INT_REACH = [(0, 0), (1, 0), (0, 2), (2, 3), (0.5, 1.5), (10**6, 10**6), (2**70, 0), (INF, INF)]
_FLOAT_REACH = [(0, 0), (0.25, 0), (0, 0.25), (1.0, 0.5), (4.75, 2), (1e300, 1e300), (INF, 0)]
_FLOAT_REACH += [(0, INF), (INF, INF)]


def _check_windows(prepared, left_keys, left_by, kind, right_keys, right_by, reach):
    for before, after in reach:
        for prevailing in (False, True):
            got = _lists(
                prepared.windows(
                    _arrow_keys(left_keys, kind),
                    None if left_by is None else pa.array(left_by, pa.string()),
                    before=before,
                    after=after,
                    prevailing=prevailing,
                )
            )
            want = window_oracle(
                left_keys,
                _groups(left_by),
                right_keys,
                _groups(right_by),
                before,
                after,
                prevailing,
            )
            assert got == want, (before, after, prevailing)


# --------------------------------------------------------------------------- windows


@pytest.mark.parametrize("kind", ["int", "float"])
@pytest.mark.parametrize("seed", range(3))
def test_windows_match_the_oracle(device, small, kind, seed):
    rng = np.random.default_rng(seed)
    nulls = seed != 0
    n_left, n_right = int(rng.integers(1, small)), int(rng.integers(1, small))
    left_keys = _random_keys(rng, n_left, kind, nulls)
    right_keys = _random_keys(rng, n_right, kind, nulls)
    # "z" is a group the right side lacks: its windows are empty.
    left_by = _random_by(rng, n_left, ["a", "b", "c", "z"], nulls)
    right_by = _random_by(rng, n_right, ["a", "b", "c"], nulls)
    prepared = ag.AsofJoin(
        _arrow_keys(right_keys, kind), pa.array(right_by, pa.string()), device=device
    )
    reach = _INT_REACH if kind == "int" else _FLOAT_REACH
    _check_windows(prepared, left_keys, left_by, kind, right_keys, right_by, reach)


@pytest.mark.parametrize("kind", ["int", "float"])
def test_windows_without_by(device, small, kind):
    rng = np.random.default_rng(11)
    left_keys = _random_keys(rng, small // 2, kind, nulls=True)
    right_keys = _random_keys(rng, small // 2 + 3, kind, nulls=True)
    prepared = ag.AsofJoin(_arrow_keys(right_keys, kind), device=device)
    reach = _INT_REACH if kind == "int" else _FLOAT_REACH
    _check_windows(prepared, left_keys, None, kind, right_keys, None, reach)


def test_windows_on_the_cpu_pool():
    """The compiled kernels on numba's thread pool (every launch parallel, and every gather:
    the picks' rows taken on all cores)."""
    rng = np.random.default_rng(5)
    small = 300
    with walks.overridden(interpret_max_rows=0, parallel_min_rows=0, parallel_gather_rows=0):
        for kind in ("int", "float"):
            left_keys = _random_keys(rng, small, kind, nulls=True)
            right_keys = _random_keys(rng, small, kind, nulls=True)
            left_by = _random_by(rng, small, ["a", "b", "z"], True)
            right_by = _random_by(rng, small, ["a", "b"], True)
            prepared = ag.AsofJoin(
                _arrow_keys(right_keys, kind), pa.array(right_by, pa.string()), device="cpu"
            )
            reach = (_INT_REACH if kind == "int" else _FLOAT_REACH)[:4]
            _check_windows(prepared, left_keys, left_by, kind, right_keys, right_by, reach)
            windows = prepared.windows(
                _arrow_keys(left_keys, kind), pa.array(left_by, pa.string()), before=3, after=1
            )
            _check_reductions(
                windows,
                window_oracle(
                    left_keys, _groups(left_by), right_keys, _groups(right_by), 3, 1, False
                ),
                rng,
                small,
            )


@pytest.mark.parametrize("pieces_per_thread", [1, 7])
def test_window_ends_from_each_pieces_cursors(pieces_per_thread):
    """On the cpu each piece of left rows starts a group's search for the window end where
    its last row of the group ended: left rows in key order (ties, and runs of equal keys
    in the right side), with rows out of order among them (an end before the cursor: a
    search back) and a reach per row (ends that do not ascend), in one piece a thread and
    in several."""
    rng = np.random.default_rng(pieces_per_thread)
    n_left, n_right = 400, 600
    left_keys = np.sort(rng.integers(0, 200, n_left))
    swap = rng.choice(n_left, 20, replace=False)
    left_keys[swap] = rng.integers(0, 200, 20)  # a few rows out of key order
    right_keys = rng.integers(0, 200, n_right)
    left_by = [str(g) for g in rng.choice(["a", "b", "c", "z"], n_left)]
    right_by = [str(g) for g in rng.choice(["a", "b", "c"], n_right)]
    overrides = {"interpret_max_rows": 0, "parallel_min_rows": 0}
    with walks.overridden(pieces_per_thread=pieces_per_thread, **overrides):
        prepared = ag.AsofJoin(pa.array(right_keys), pa.array(right_by, pa.string()), device="cpu")
        _check_windows(
            prepared,
            left_keys.tolist(),
            left_by,
            "int",
            right_keys.tolist(),
            right_by,
            [(5, 0), (3, 7)],
        )
        afters = rng.integers(0, 20, n_left)
        got = _lists(
            prepared.windows(
                pa.array(left_keys),
                pa.array(left_by, pa.string()),
                before=4,
                after=pa.array(afters),
            )
        )
    want = [
        window_oracle([x], [(g,)], right_keys.tolist(), _groups(right_by), 4, int(a), False)
        for x, g, a in zip(left_keys.tolist(), left_by, afters)
    ]
    assert got == [w for one in want for w in one]


def test_a_null_reach_in_a_column_of_them_is_no_limit(device):
    """A column of reaches reads a null as a column of tolerances does: no limit, that way
    (the window reaches the group's first or last key; nothing prevails below the first)."""
    right_keys = [1, 2, 4, 7, 9]
    prepared = ag.AsofJoin(pa.array(right_keys), device=device)
    left_keys, befores, afters = [5, 5, 8, 8], [1, None, None, 0], [None, 0, 1, None]
    got = _lists(
        prepared.windows(
            pa.array(left_keys), before=pa.array(befores), after=pa.array(afters), prevailing=True
        )
    )
    assert got == [[2, 3, 4], [0, 1, 2], [0, 1, 2, 3, 4], [3, 4]]
    limits = [(INF if b is None else b, INF if a is None else a) for b, a in zip(befores, afters)]
    oracle = [
        window_oracle([x], None, right_keys, None, *lim, True)[0]
        for x, lim in zip(left_keys, limits)
    ]
    assert got == oracle


@pytest.mark.parametrize("interpreted", [True, False])
def test_windows_of_one_start_are_slid_in_the_order_of_their_ends(interpreted):
    """Left rows out of key order gave windows of one start (no quote between their reaches'
    starts) whose ends went back and forth, each then read whole: 240 times as long for
    100,000 trades an hour back. They are slid by start, then end; the sums as before."""
    from asofgpu._backend import get_backend

    cpu = get_backend("cpu")
    starts, ends = np.array([0, 0, 0, 2, 2, 1]), np.array([5, 3, 4, 6, 2, 1])
    order, by_start, by_end = cpu._slide_order(starts, ends, interpreted)
    assert order.tolist() == [1, 2, 0, 5, 4, 3]
    assert by_start.tolist() == [0, 0, 0, 1, 2, 2] and by_end.tolist() == [3, 4, 5, 1, 2, 6]
    in_order = cpu._slide_order(np.array([0, 0, 1]), np.array([1, 2, 2]), interpreted)
    assert in_order[0].tolist() == [0, 1, 2]
    rng = np.random.default_rng(3)
    right_keys = np.sort(rng.integers(0, 1000, 600))
    left_keys = rng.permutation(np.repeat(rng.integers(0, 1000, 60), 3))
    numbers = rng.integers(-50, 50, 600)
    values = pa.array(numbers)
    with walks.overridden(interpret_max_rows=HUGE if interpreted else 0, parallel_min_rows=0):
        prepared = ag.AsofJoin(pa.array(right_keys), device="cpu")
        windows = prepared.windows(pa.array(left_keys), before=40)
        got = windows.reduce(["sum", "max"], values)
    want = window_oracle(left_keys.tolist(), None, right_keys.tolist(), None, 40, 0, False)
    sums = [int(numbers[rows].sum()) for rows in want]
    assert np.asarray(got["sum"]).tolist() == sums


def test_a_documented_example(device):
    """kdb+'s wj and wj1 on one group: [x - 2, x + 0], with and without the prevailing row
    (the state on entering: the last row at or before x - 2, added when it lies below)."""
    quotes = ag.AsofJoin(np.array([1, 2, 4, 7]), device=device)
    assert _lists(quotes.windows(np.array([4, 0, 9]), before=2)) == [[1, 2], [], [3]]
    assert _lists(quotes.windows(np.array([5, 0, 10]), before=2, prevailing=True)) == [
        [1, 2],  # [3, 5] holds 4; the state at 3 is the row at 2
        [],
        [3],  # [8, 10] is empty; the state at 8 is the row at 7
    ]
    # A key exactly at x - 2 is the state on entering, and in the window already.
    assert _lists(quotes.windows(np.array([4, 9]), before=2, prevailing=True)) == [[1, 2], [3]]
    assert _lists(quotes.windows(np.array([4, 0, 9]), before=0, after=3)) == [[2, 3], [0, 1], []]


def test_ties_keep_input_order_and_prevailing_takes_the_last(device):
    """Equal keys sit in input order; the prevailing row is the last of the largest key below
    the window. Rows tied at the window's start are all in it, and none prevails below them
    (kdb+'s wj would keep only the last of them)."""
    right = pa.array([5, 3, 3, 5, 1, 3], pa.int64())
    prepared = ag.AsofJoin(right, device=device)
    assert _lists(prepared.windows(pa.array([5, 4], pa.int64()), before=1, prevailing=True)) == [
        [5, 0, 3],
        [1, 2, 5],
    ]
    assert _lists(prepared.windows(pa.array([4], pa.int64()), before=0, prevailing=True)) == [[5]]
    assert _lists(prepared.windows(pa.array([5], pa.int64()), before=2)) == [[1, 2, 5, 0, 3]]


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("device", ["cpu", "python"])
def test_both_infinities_in_a_window_sum_to_nan_without_a_warning(device, compiled):
    """+inf and -inf in one window sum to NaN, as any float sum does, and say nothing more:
    a small launch sums as plain Python (numpy scalars, which warn "invalid value
    encountered"), where the compiled kernels it stands in for never warn."""
    import warnings

    left = pa.table({"t": [1, 2, 3]})
    right = pa.table({"t": [0, 1, 2, 3], "v": [INF, -INF, 1.0, 2.0]})
    interpret = 0 if compiled else HUGE
    with walks.overridden(interpret_max_rows=interpret), warnings.catch_warnings():
        warnings.simplefilter("error")
        out = ag.window_join(
            left, right, on="t", before=2, aggs={"v": ["sum", "mean"]}, device=device
        )
    assert [_nan_as_none(v) for v in out["v_sum"].to_pylist()] == [None, None, -INF]
    assert [_nan_as_none(v) for v in out["v_mean"].to_pylist()] == [None, None, -INF]


def _nan_as_none(value):
    return None if value is not None and math.isnan(value) else value


def test_float_keys_signed_zero_nan_and_infinities(device):
    right_keys = [0.0, -0.0, NAN, INF, -INF, 1.0, NAN, None]
    prepared = ag.AsofJoin(pa.array(right_keys, pa.float64()), device=device)
    left_keys = [-0.0, 0.0, NAN, INF, -INF, None]
    cases = {
        (0, 0): [[0, 1], [0, 1], [2, 6], [3], [4], []],
        (INF, 0): [[4, 0, 1], [4, 0, 1], [4, 0, 1, 5, 3, 2, 6], [4, 0, 1, 5, 3], [4], []],
        (0, INF): [
            [0, 1, 5, 3, 2, 6],
            [0, 1, 5, 3, 2, 6],
            [2, 6],
            [3, 2, 6],
            [4, 0, 1, 5, 3, 2, 6],
            [],
        ],
    }
    for (before, after), want in cases.items():
        got = _lists(
            prepared.windows(pa.array(left_keys, pa.float64()), before=before, after=after)
        )
        assert got == want, (before, after)
        oracle = window_oracle(left_keys, None, right_keys, None, before, after, False)
        assert got == oracle
    # Prevailing: a NaN window starts at its NaN keys, -inf's at -inf: the state on entering
    # is in each; a window of 2.0 (empty) gets the largest key below it, 1.0.
    left = [NAN, -INF, 2.0]
    got = _lists(prepared.windows(pa.array(left, pa.float64()), before=0, prevailing=True))
    assert got == [[2, 6], [4], [5]]
    assert got == window_oracle(left, None, right_keys, None, 0, 0, True)


@pytest.mark.parametrize("kind", ["int64", "uint64"])
def test_integer_keys_at_their_extremes(device, kind):
    """Distances up to 2**64 - 1 are exact: no key or bound overflows."""
    info = np.iinfo(kind)
    right_keys = [int(info.min), int(info.min) + 1, 0, int(info.max) - 1, int(info.max)]
    left_keys = [int(info.min), 0, int(info.max)]
    prepared = ag.AsofJoin(pa.array(right_keys, pa.from_numpy_dtype(np.dtype(kind))), device=device)
    span = int(info.max) - int(info.min)  # 2**64 - 1
    for before, after in [(0, 0), (1, 1), (span - 1, 0), (span, 0), (0, span - 1), (0, span)]:
        for prevailing in (False, True):
            got = prepared.windows(
                pa.array(left_keys, pa.from_numpy_dtype(np.dtype(kind))),
                before=before,
                after=after,
                prevailing=prevailing,
            )
            want = window_oracle(left_keys, None, right_keys, None, before, after, prevailing)
            assert _lists(got) == want, (before, after, prevailing)


def test_groups_absent_null_keys_and_null_groups(device):
    right = pa.table(
        {
            "t": pa.array([1, 2, None, 3, 4], pa.int64()),
            "g": pa.array(["a", "a", "a", None, "b"]),
        }
    )
    prepared = ag.AsofJoin(right["t"], right["g"], device=device)
    left_t = pa.array([2, None, 3, 3, 4], pa.int64())
    left_g = pa.array(["a", "a", None, "zz", "b"])
    for prevailing in (False, True):
        got = _lists(prepared.windows(left_t, left_g, before=INF, after=INF, prevailing=prevailing))
        assert got == [[0, 1], [], [], [], [4]]


# Right sides whose prepared order holds no row: no rows, only null keys, only null groups.
_NO_RIGHT_ROW = {
    "no rows": (pa.array([], pa.float64()), None),
    "null keys": (pa.array([None, None], pa.float64()), None),
    "null groups": (pa.array([1.0, 2.0]), pa.array([None, None], pa.string())),
}


@pytest.mark.parametrize("case", list(_NO_RIGHT_ROW))
def test_windows_with_no_right_row(device, case):
    """Every window empty: counts 0, sums 0, means NaN, no pick, each left row once."""
    keys, by = _NO_RIGHT_ROW[case]
    prepared = ag.AsofJoin(keys, by, device=device)
    left_by = None if by is None else pa.array(["a", None])
    w = prepared.windows(pa.array([1.0, NAN]), left_by, before=INF, after=INF, prevailing=True)
    assert _lists(w) == [[], []]
    assert to_host(w.count()).tolist() == [0, 0]
    values = np.zeros(len(keys))
    assert to_host(w.sum(values)[0]).tolist() == [0.0, 0.0]
    means, counts = w.mean(values)
    assert np.isnan(to_host(means)).all() and to_host(counts).tolist() == [0, 0]


@pytest.mark.parametrize("case", list(_NO_RIGHT_ROW))
def test_picks_with_no_right_row(device, case):
    keys, by = _NO_RIGHT_ROW[case]
    prepared = ag.AsofJoin(keys, by, device=device)
    left_by = None if by is None else pa.array(["a", None])
    w = prepared.windows(pa.array([1.0, NAN]), left_by, before=INF, after=INF)
    assert to_host(w.pick("first")).tolist() == [NO_MATCH, NO_MATCH]
    assert to_host(w.pick("max", np.zeros(len(keys)))).tolist() == [NO_MATCH, NO_MATCH]


@pytest.mark.parametrize("case", list(_NO_RIGHT_ROW))
def test_pairs_with_no_right_row(device, case):
    keys, by = _NO_RIGHT_ROW[case]
    prepared = ag.AsofJoin(keys, by, device=device)
    left_by = None if by is None else pa.array(["a", None])
    w = prepared.windows(pa.array([1.0, NAN]), left_by, before=INF, after=INF)
    left_map, right_map = (to_host(m).tolist() for m in w.pairs())
    assert (left_map, right_map) == ([0, 1], [NO_MATCH, NO_MATCH])


def test_no_left_rows(device):
    prepared = ag.AsofJoin(pa.array([1, 2, 3]), device=device)
    w = prepared.windows(pa.array([], pa.int64()), before=1)
    assert len(w) == 0 and _lists(w) == []
    assert [len(to_host(m)) for m in w.pairs()] == [0, 0]
    assert len(to_host(w.sum(np.array([1, 2, 3]))[0])) == 0
    assert len(to_host(w.pick("max", np.array([1, 2, 3])))) == 0


def test_presorted_right_side(device):
    right = pa.array([1, 2, 2, 5, 1, 3], pa.int64())
    by = pa.array(["a", "a", "a", "a", "b", "b"])
    left, left_by = pa.array([2, 4, 3]), pa.array(["a", "a", "b"])
    sorted_ = ag.AsofJoin(right, by, presorted=True, device=device)
    plain = ag.AsofJoin(right, by, device=device)
    for prevailing in (False, True):
        a = sorted_.windows(left, left_by, before=1, after=1, prevailing=prevailing)
        b = plain.windows(left, left_by, before=1, after=1, prevailing=prevailing)
        assert _lists(a) == _lists(b)
    assert _lists(plain.windows(left, left_by, before=1, after=1)) == [[0, 1, 2], [3], [5]]


# --------------------------------------------------------------------------- time units


def test_left_in_seconds_right_in_nanoseconds(device):
    rng = np.random.default_rng(3)
    n = 12
    right_ns = [
        int(s) * 10**9 + int(o)
        for s, o in zip(rng.integers(0, 8, n), rng.choice([0, 1, 5 * 10**8, 10**9 - 1], n))
    ]
    right_ns = [None if i % 7 == 3 else v for i, v in enumerate(right_ns)]
    left_s = [0, 2, 3, None, 5, 7, 8]
    right_by = ["a" if i % 3 else "b" for i in range(n)]
    left_by = ["a", "b", "a", "a", "b", "a", "b"]
    prepared = ag.AsofJoin(
        pa.array(right_ns, pa.timestamp("ns")), pa.array(right_by), device=device
    )
    left = pa.array(left_s, pa.timestamp("s"))
    left_ns = [None if v is None else v * 10**9 for v in left_s]
    reaches = [
        (datetime.timedelta(seconds=2), datetime.timedelta(milliseconds=500)),
        (np.timedelta64(2, "s"), np.timedelta64(500, "ms")),
        (2 * 10**9, 5 * 10**8),  # numbers in the right's unit
        (datetime.timedelta(0), 10**9 - 1),
    ]
    for before, after in reaches:
        b = before if isinstance(before, int) else _ns(before)
        a = after if isinstance(after, int) else _ns(after)
        for prevailing in (False, True):
            got = _lists(
                prepared.windows(
                    left, pa.array(left_by), before=before, after=after, prevailing=prevailing
                )
            )
            want = window_oracle(
                left_ns, _groups(left_by), right_ns, _groups(right_by), b, a, prevailing
            )
            assert got == want, (before, after, prevailing)


def test_left_in_nanoseconds_right_in_seconds(device):
    """A number is in the right's unit (here seconds), though the keys meet in nanoseconds."""
    right_s = [0, 1, 3, 3, 6, None, 9]
    left_ns = [0, 10**9 + 1, 3 * 10**9 - 1, 5 * 10**9 + 5 * 10**8, None, 9 * 10**9]
    prepared = ag.AsofJoin(pa.array(right_s, pa.timestamp("s")), device=device)
    left = pa.array(left_ns, pa.timestamp("ns"))
    right_ns = [None if v is None else v * 10**9 for v in right_s]
    for before, after, b, a in [
        (2, 0, 2 * 10**9, 0),
        (datetime.timedelta(seconds=2), np.timedelta64(1500, "ms"), 2 * 10**9, 15 * 10**8),
        (0, 1, 0, 10**9),
        (np.timedelta64(1, "ns"), np.timedelta64(1, "ns"), 1, 1),
    ]:
        for prevailing in (False, True):
            got = _lists(prepared.windows(left, before=before, after=after, prevailing=prevailing))
            want = window_oracle(left_ns, None, right_ns, None, b, a, prevailing)
            assert got == want, (before, after, prevailing)


def test_a_timedelta_finer_than_the_key_rounds_down(device):
    """On millisecond keys 1.5 ms reaches 1 ms (distances are whole ticks)."""
    right = pa.array([0, 1, 2, 3, 4], pa.timestamp("ms"))
    prepared = ag.AsofJoin(right, device=device)
    w = prepared.windows(
        pa.array([2], pa.timestamp("ms")), before=datetime.timedelta(microseconds=1500)
    )
    assert _lists(w) == [[1, 2]]


def test_a_fractional_number_is_in_the_right_unit(device):
    """1.5 on a right key in seconds is 1.5 s, though the keys meet in nanoseconds (a left
    key in ns): a right row 1.2 s below the left key is in the window."""
    prepared = ag.AsofJoin(pa.array([0, 1], pa.timestamp("s")), device=device)
    left = pa.array([1_200_000_000, 3_400_000_000], pa.timestamp("ns"))
    got = _lists(prepared.windows(left, before=1.5, after=0.5))
    want = window_oracle(
        [1_200_000_000, 3_400_000_000], None, [0, 10**9], None, 1.5e9, 0.5e9, False
    )
    assert want == [[0, 1], []]
    assert got == want


def _ns(delta) -> int:
    if isinstance(delta, datetime.timedelta):
        return (delta.days * 86_400 + delta.seconds) * 10**9 + delta.microseconds * 1000
    return int(delta.astype("timedelta64[ns]").astype(np.int64))


# --------------------------------------------------------------------------- Windows' reductions


def _close(got, want, scale: float) -> bool:
    """Floats equal within 1e-9 of ``scale`` (the sum of absolute values); NaN equals NaN,
    infinities exactly."""
    if isinstance(want, float) and (math.isnan(want) or math.isinf(want)):
        return (math.isnan(got) and math.isnan(want)) or got == want
    return abs(got - want) <= 1e-9 * scale


def _check_reductions(windows, want_windows, rng, n_right: int) -> None:
    n_right = max(n_right, 1)
    ints = rng.integers(-50, 50, n_right)
    floats = rng.choice([-0.0, 0.0, 1.5, -2.25, 1e10, NAN, 3.0, -1e-3], n_right)
    valid = rng.random(n_right) < 0.7
    xs_i = [int(v) if ok else None for v, ok in zip(ints, valid)]
    xs_f = [float(v) if ok else None for v, ok in zip(floats, valid)]
    all_i = [int(v) for v in ints]
    lengths = [len(w) for w in want_windows]
    assert to_host(windows.count()).tolist() == lengths
    assert to_host(windows.lengths()).tolist() == lengths
    assert to_host(windows.count(valid)).tolist() == [
        reduce_oracle(w, xs_i, "count") for w in want_windows
    ]
    sums, counts = windows.sum(ints, valid)
    assert to_host(sums).dtype == np.int64
    assert to_host(counts).tolist() == [reduce_oracle(w, xs_i, "count") for w in want_windows]
    assert to_host(sums).tolist() == [reduce_oracle(w, xs_i, "sum") or 0 for w in want_windows]
    sums, _ = windows.sum(ints)  # without valid: every row counts
    assert to_host(sums).tolist() == [reduce_oracle(w, all_i, "sum") or 0 for w in want_windows]
    for values, xs in ((ints, xs_i), (floats, xs_f)):
        means, counts = windows.mean(values, valid)
        means = to_host(means).tolist()
        for i, w in enumerate(want_windows):
            want = reduce_oracle(w, xs, "mean")
            scale = sum(abs(xs[j]) for j in w if xs[j] is not None and not math.isnan(xs[j]))
            if want is None:
                assert math.isnan(means[i]), (i, w)
            else:
                assert _close(means[i], want, scale / max(len(w), 1)), (i, w, means[i], want)
        fsums, _ = windows.sum(values, valid)
        fsums = to_host(fsums).tolist()
        for i, w in enumerate(want_windows):
            want = reduce_oracle(w, xs, "sum") or 0
            scale = sum(abs(xs[j]) for j in w if xs[j] is not None and not math.isnan(xs[j]))
            assert _close(fsums[i], want, scale), (i, w, fsums[i], want)
        for how in ("first", "last", "min", "max"):
            got = to_host(windows.pick(how, values, valid)).tolist()
            want = [reduce_oracle(w, xs, how) for w in want_windows]
            assert got == [NO_MATCH if r is None else r for r in want], how
    for how in ("first", "last"):  # without values or valid
        got = to_host(windows.pick(how)).tolist()
        assert got == [
            NO_MATCH if not w else (w[0] if how == "first" else w[-1]) for w in want_windows
        ]
    # pairs: one entry per (left row, right row), in left order then window order
    left_map, right_map = (to_host(m).tolist() for m in windows.pairs())
    want_left, want_right = _pairs(want_windows)
    assert (left_map, right_map) == (want_left, want_right)


def _pairs(windows: list[list[int]]):
    left, right = [], []
    for i, w in enumerate(windows):
        for j in w or [NO_MATCH]:
            left.append(i)
            right.append(j)
    return left, right


@pytest.mark.parametrize("kind", ["int", "float"])
def test_reductions_match_the_oracle(device, small, kind):
    rng = np.random.default_rng(21 if kind == "int" else 22)
    n_left, n_right = small, small
    left_keys = _random_keys(rng, n_left, kind, nulls=True)
    right_keys = _random_keys(rng, n_right, kind, nulls=True)
    left_by = _random_by(rng, n_left, ["a", "b", "z"], True)
    right_by = _random_by(rng, n_right, ["a", "b"], True)
    prepared = ag.AsofJoin(
        _arrow_keys(right_keys, kind), pa.array(right_by, pa.string()), device=device
    )
    for before, after, prevailing in [(2, 1, False), (1.5, 0, True), (INF, INF, False)]:
        windows = prepared.windows(
            _arrow_keys(left_keys, kind),
            pa.array(left_by, pa.string()),
            before=before,
            after=after,
            prevailing=prevailing,
        )
        want = window_oracle(
            left_keys, _groups(left_by), right_keys, _groups(right_by), before, after, prevailing
        )
        assert _lists(windows) == want
        _check_reductions(windows, want, rng, n_right)


def test_pick_min_max_order(device):
    """min and max take the first of equal values, in the total order (NaN above +inf,
    -0.0 == 0.0); booleans and unsigned values compare as numbers."""
    prepared = ag.AsofJoin(np.arange(6), device=device)
    w = prepared.windows(np.array([5, 2]), before=5)  # rows 0..5, rows 0..2
    floats = np.array([0.0, -0.0, NAN, INF, -INF, NAN])
    assert to_host(w.pick("max", floats)).tolist() == [2, 2]
    assert to_host(w.pick("min", floats)).tolist() == [4, 0]
    signed_zero = np.array([-0.0, 0.0, 1.0, 1.0, 1.0, 1.0])
    assert to_host(w.pick("min", signed_zero)).tolist() == [0, 0]
    big = np.array([2**63, 2**64 - 1, 1, 0, 2**63 + 1, 5], dtype=np.uint64)
    assert to_host(w.pick("max", big)).tolist() == [1, 1]
    assert to_host(w.pick("min", big)).tolist() == [3, 2]
    flags = np.array([False, True, True, False, True, False])
    assert to_host(w.pick("max", flags)).tolist() == [1, 1]
    assert to_host(w.pick("min", flags)).tolist() == [0, 0]
    valid = np.array([False, False, True, True, True, True])
    assert to_host(w.pick("min", flags, valid)).tolist() == [3, 2]
    stamps = np.array([5, 3, 9, 3, 1, 9], dtype="datetime64[ns]")
    assert to_host(w.pick("max", stamps)).tolist() == [2, 2]
    assert to_host(w.pick("min", stamps)).tolist() == [4, 1]


def test_extreme_values_are_the_values_the_picks_name(device):
    """``reduce(..., extreme_values=True)`` gives min and max as values where the values are
    their own order keys (int64; float64 without NaN), the first of equal ones as the picks
    take it (-0.0 before 0.0 stays -0.0), and the maps otherwise."""
    prepared = ag.AsofJoin(np.arange(6), device=device)
    w = prepared.windows(np.array([5, 2, -9]), before=5)  # rows 0..5, rows 0..2, none
    valid = np.array([True, True, True, False, True, True])
    for values in (
        np.array([-0.0, 0.0, 3.5, -1.0, 3.5, -1.0]),
        np.array([0.0, -0.0, -2.0, 9.0, 0.0, -2.0]),
        np.array([4, -7, 4, 2**62, -7, 0], dtype=np.int64),
    ):
        for mask in (None, valid):
            found = w.reduce(["min", "max", "count"], values, mask, extreme_values=True)
            assert {"min", "max"}.isdisjoint(found)
            counts = to_host(found["count"])
            for how in ("min", "max"):
                picked = to_host(w.pick(how, values, mask))
                got = to_host(found[f"{how}_value"])
                assert got.dtype == values.dtype
                has = counts > 0
                assert has.tolist() == [True, True, False]
                assert got[has].tobytes() == values[picked[has]].tobytes(), (how, values, mask)
    for values in (np.array([0.0, NAN, 1.0, 2.0, 3.0, 4.0]), np.arange(6, dtype=np.uint64)):
        found = w.reduce(["min", "max"], values, extreme_values=True)
        assert sorted(found) == ["max", "min"]  # gather maps
        assert to_host(found["max"]).tolist() == to_host(w.pick("max", values)).tolist()


def test_unsigned_and_boolean_sums(device):
    prepared = ag.AsofJoin(np.arange(4), device=device)
    w = prepared.windows(np.array([3, 0, -5]), before=3)
    sums, counts = w.sum(np.array([2**63, 2**63 - 1, 1, 7], dtype=np.uint64))
    assert to_host(sums).dtype == np.uint64
    assert to_host(sums).tolist() == [(2**64 + 7) % 2**64, 2**63, 0]
    assert to_host(counts).tolist() == [4, 1, 0]
    sums, counts = w.sum(np.array([True, True, False, True]), np.array([1, 0, 1, 1], bool))
    assert to_host(sums).dtype == np.int64
    assert to_host(sums).tolist() == [2, 1, 0]
    assert to_host(counts).tolist() == [3, 1, 0]
    means, _ = w.mean(np.array([True, True, False, True]))
    assert to_host(means)[:2].tolist() == [0.75, 1.0] and math.isnan(to_host(means)[2])


# --------------------------------------------------------------------------- window_join


_AGGS = {
    "i": ["count", "sum", "mean", "min", "max", "first", "last"],
    "f": ["count", "sum", "mean", "min", "max", "first", "last"],
    "b": ["count", "sum", "mean", "min", "max", "first", "last"],
    "u": ["sum", "mean", "min", "max"],
    "ts": ["count", "min", "max", "first", "last"],
    "s": ["count", "first", "last"],
    "d": ["first", "last", "count"],
    # Floats without NaN are their own order keys: min and max come from the reduction,
    # not from a gather (``extreme_values``); with nulls and without.
    "r": ["min", "max", "mean"],
    "q": ["min", "max", "count"],
}


def _random_right(rng, n: int):
    def nulled(values):
        return [None if rng.random() < 0.2 else v for v in values]

    floats = [float(v) for v in rng.choice([-0.0, 0.0, 1.5, -2.25, 1e10, NAN, -1e-3], n)]
    floats = [f + float(rng.normal()) if f == 1.5 else f for f in floats]  # inexact sums
    if n > 3:
        floats[n // 2] = INF  # one infinity: its windows' sums and means are inf
    return {
        "t": nulled([int(v) for v in rng.integers(0, 12, n)]),
        "g": nulled([str(v) for v in rng.choice(["a", "b"], n)]),
        "i": nulled([int(v) for v in rng.integers(-50, 50, n)]),
        "f": nulled(floats),
        "b": nulled([bool(v) for v in rng.integers(0, 2, n)]),
        "u": nulled([int(v) for v in rng.integers(0, 2**64, n, dtype=np.uint64)]),
        "ts": nulled(
            [
                datetime.datetime(2024, 1, 1) + datetime.timedelta(seconds=int(v))
                for v in rng.integers(0, 9, n)
            ]
        ),
        "s": nulled([str(v) for v in rng.choice(["x", "yy", "", "zzz"], n)]),
        "d": nulled([str(v) for v in rng.choice(["p", "q"], n)]),
        "r": [float(v) for v in rng.choice([-0.0, 0.0, 2.5, -1.0, 7.0], n)],  # ties
        "q": nulled([float(v) for v in rng.choice([0.0, -0.0, 1e300, -3.5], n)]),
    }


_TYPES = {
    "t": pa.int64(),
    "g": pa.string(),
    "i": pa.int64(),
    "f": pa.float64(),
    "b": pa.bool_(),
    "u": pa.uint64(),
    "ts": pa.timestamp("us"),
    "s": pa.string(),
    "r": pa.float64(),
    "q": pa.float64(),
}


def _right_table(columns: dict) -> pa.Table:
    arrays = {
        name: pa.array(values, _TYPES[name])
        if name != "d"
        else pa.array(values).dictionary_encode()
        for name, values in columns.items()
    }
    table = pa.table(arrays)
    half = table.num_rows // 2
    return pa.concat_tables([table.slice(0, half), table.slice(half)])  # two chunks a column


def _want_type(column: str, agg: str, right: pa.Table) -> pa.DataType:
    kind = right.schema.field(column).type
    if agg == "count":
        return pa.int64()
    if agg == "mean":
        return pa.float64()
    if agg == "sum":
        return (
            pa.uint64()
            if pa.types.is_unsigned_integer(kind)
            else (pa.float64() if pa.types.is_floating(kind) else pa.int64())
        )
    return kind


def _same(got, want) -> bool:
    """Exact equality, NaN equal to NaN, -0.0 apart from 0.0."""
    if isinstance(want, float) and isinstance(got, float):
        if math.isnan(want) or math.isnan(got):
            return math.isnan(want) and math.isnan(got)
        return got == want and math.copysign(1, got) == math.copysign(1, want)
    return type(got) is type(want) and got == want


def _check_aggregates(out: pa.Table, right: pa.Table, windows, aggs) -> None:
    for column, names in aggs.items():
        values = right.column(column).to_pylist()
        for agg in names:
            name = f"{column}_{agg}"
            assert out.schema.field(name).type == _want_type(column, agg, right), name
            got = out.column(name).to_pylist()
            for i, w in enumerate(windows):
                want = reduce_oracle(w, values, agg)
                if agg == "count":
                    assert got[i] == want, (name, i, w)
                elif want is None:
                    assert got[i] is None, (name, i, w, got[i])
                elif agg in ("min", "max", "first", "last"):
                    assert _same(got[i], values[want]), (name, i, w, got[i], values[want])
                elif column == "u" and agg == "sum":  # uint64 sums wrap
                    assert got[i] == want % 2**64, (name, i, w)
                elif column in ("i", "b") and agg == "sum":  # exact
                    assert got[i] == want, (name, i, w)
                else:
                    scale = sum(
                        abs(float(values[j]))
                        for j in w
                        if values[j] is not None and not math.isnan(values[j])
                    )
                    if agg == "mean":
                        scale /= len(w)
                    assert _close(got[i], want, scale), (name, i, w, got[i], want)


@pytest.mark.parametrize("seed", range(2))
def test_window_join_aggregates_match_the_oracle(device, small, seed):
    rng = np.random.default_rng(100 + seed)
    n_right, n_left = small, max(small // 2, 3)
    right = _right_table(_random_right(rng, n_right))
    left_t = [None if rng.random() < 0.1 else int(v) for v in rng.integers(0, 12, n_left)]
    left_g = _random_by(rng, n_left, ["a", "b", "c"], True)
    left = pa.table(
        {"t": pa.array(left_t, pa.int64()), "g": pa.array(left_g), "v": np.arange(n_left)}
    )
    right_t, right_g = right["t"].to_pylist(), right["g"].to_pylist()
    for before, after, prevailing in [(0, 0, False), (3, 1, True), (INF, INF, False)]:
        out = ag.window_join(
            left,
            right,
            on="t",
            by="g",
            before=before,
            after=after,
            aggs=_AGGS,
            prevailing=prevailing,
            device=device,
        )
        names = [f"{c}_{a}" for c, aggs in _AGGS.items() for a in aggs]
        assert out.column_names == ["t", "g", "v", *names]
        assert out.select(["t", "g", "v"]).equals(left)
        windows = window_oracle(
            left_t, _groups(left_g), right_t, _groups(right_g), before, after, prevailing
        )
        _check_aggregates(out, right, windows, _AGGS)


def _ordered(values: list, categories: list, chunks: int = 2) -> pa.ChunkedArray:
    """``values`` as an ordered dictionary column of ``categories`` (in their rank order, as
    a pandas ordered Categorical or a polars Enum gives it), in ``chunks`` chunks sharing it."""
    dictionary = pa.array(categories)
    indices = pa.array([None if v is None else categories.index(v) for v in values], pa.int8())
    bounds = np.linspace(0, len(values), chunks + 1).astype(int)
    return pa.chunked_array(
        [
            pa.DictionaryArray.from_arrays(indices[a:b], dictionary, ordered=True)
            for a, b in zip(bounds[:-1], bounds[1:])
        ]
    )


@pytest.mark.parametrize("categories", [["mid", "lo", "hi", "top"], [30, -1, 7, 2]])
def test_window_join_ranks_an_ordered_dictionary_by_its_categories(device, small, categories):
    """min and max of an ordered dictionary (pandas' ordered Categorical, polars' Enum) go by
    the categories' order, as pandas' and polars' own min and max do, not by value (texts
    too, which have no distances of their own); its chunks share the dictionary."""
    rng = np.random.default_rng(7)
    n_right, n_left = small, max(small // 2, 3)
    right_t = [int(v) for v in rng.integers(0, 12, n_right)]
    right_g = _random_by(rng, n_right, ["a", "b"], True)
    values = [None if rng.random() < 0.15 else categories[k] for k in rng.integers(0, 4, n_right)]
    right = pa.table(
        {
            "t": pa.array(right_t, pa.int64()),
            "g": pa.array(right_g),
            "o": _ordered(values, categories),
        }
    )
    left_t = [int(v) for v in rng.integers(0, 12, n_left)]
    left_g = _random_by(rng, n_left, ["a", "b"], True)
    left = pa.table({"t": pa.array(left_t, pa.int64()), "g": pa.array(left_g)})
    aggs = {"o": ["min", "max", "first", "count"]}
    out = ag.window_join(left, right, on="t", by="g", before=3, after=1, aggs=aggs, device=device)
    windows = window_oracle(left_t, _groups(left_g), right_t, _groups(right_g), 3, 1, False)
    ranks = [None if v is None else categories.index(v) for v in values]
    for agg in aggs["o"]:
        column = out.column(f"o_{agg}")
        assert column.type == (pa.int64() if agg == "count" else right.schema.field("o").type)
        got = column.to_pylist()
        for i, w in enumerate(windows):
            want = reduce_oracle(w, ranks, agg)
            want = want if agg == "count" or want is None else values[want]
            assert got[i] == want, (agg, i, w)


def test_a_dictionarys_null_values_are_nulls_of_the_column(device):
    """Arrow reads a dictionary value that is null as a null of the column, where the
    column's null_count counts its indices' alone: the window join counted, summed and
    ranked the null slot's 0 (count 3, mean 4.0, min null)."""
    left = pa.table({"t": [3]})
    for values, dictionary in (([0, 1, 2], [5, None, 7]), ([0, 1, 1], [None, "x"])):
        coded = pa.DictionaryArray.from_arrays(pa.array(values, pa.int8()), pa.array(dictionary))
        plain = coded.cast(coded.type.value_type)
        aggs = ["count", "first", "last"] + (
            ["sum", "mean", "min", "max"] if values[2] == 2 else []
        )
        got, want = (
            ag.window_join(
                left,
                pa.table({"t": [1, 2, 3], "p": p}),
                on="t",
                before=5,
                aggs={"p": aggs},
                device=device,
            )
            for p in (coded, plain)
        )
        for agg in aggs:
            got_agg = got[f"p_{agg}"]
            if pa.types.is_dictionary(got_agg.type):
                got_agg = got_agg.cast(got_agg.type.value_type)
            assert got_agg.to_pylist() == want[f"p_{agg}"].to_pylist(), agg


def test_a_run_end_encoded_columns_nulls_are_nulls(device):
    """A run-end encoded column holds its nulls in its values, and its null_count is 0: the
    window join counted them (count 4 of [null, 1, 2, null]) and picked them as first and
    last, as no other layout of the same values does. Its sums, means, minima and maxima
    were refused ("'sum' applies to integer, float and boolean columns"): they are its
    values' (min and max keep its type)."""
    left = pa.table({"t": [10, 3]})

    def encoded_and_plain(values, aggs):
        return (
            ag.window_join(
                left,
                pa.table({"t": [1, 2, 3, 4, 5], "p": p}),
                on="t",
                before=100,
                aggs={"p": aggs},
                device=device,
            )
            for p in (pc.run_end_encode(values, run_end_type=pa.int32()), values)
        )

    values = pa.array([None, 1.0, 2.0, None, 2.0])
    aggs = ["count", "first", "last", "sum", "mean", "min", "max"]
    got, want = encoded_and_plain(values, aggs)
    assert got.to_pylist() == want.to_pylist()
    assert got["p_count"].to_pylist() == [3, 2]
    assert pa.types.is_run_end_encoded(got["p_max"].type)
    instants = pa.array([None, 1, 2, None, 2], pa.timestamp("s"))
    got, want = encoded_and_plain(instants, ["min", "max", "first", "last"])
    assert got.to_pylist() == want.to_pylist()
    text = pa.table({"t": [1], "s": pc.run_end_encode(pa.array(["a"]))})
    with pytest.raises(
        TypeError, match=r"aggs\['s'\]: 'sum' applies to integer, float and boolean"
    ):
        ag.window_join(left, text, on="t", before=1, aggs={"s": "sum"}, device=device)


def test_ordered_dictionary_refusals():
    left = pa.table({"t": [5]})
    one = pa.table({"t": [1, 2], "o": _ordered(["lo", "hi"], ["lo", "hi"])})
    with pytest.raises(
        TypeError,
        match=r"aggs\['o'\]: 'sum' applies to numbers, not to an ordered dictionary's categories",
    ):
        ag.window_join(left, one, on="t", before=9, aggs={"o": "sum"}, device="cpu")
    two = pa.table(
        {
            "t": [1, 2],
            "o": pa.chunked_array(
                [
                    pa.DictionaryArray.from_arrays(
                        pa.array([0], pa.int8()), ["lo", "hi"], ordered=True
                    ),
                    pa.DictionaryArray.from_arrays(
                        pa.array([0], pa.int8()), ["hi", "lo"], ordered=True
                    ),
                ]
            ),
        }
    )
    with pytest.raises(
        ValueError, match=r"whose chunks hold different dictionaries has no one order"
    ):
        ag.window_join(left, two, on="t", before=9, aggs={"o": "max"}, device="cpu")
    # an empty chunk of another dictionary (or none) ranks nothing: not refused
    empty = pa.DictionaryArray.from_arrays(
        pa.array([], pa.int8()), pa.array([], pa.string()), ordered=True
    )
    first = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int8()), ["lo", "hi"], ordered=True)
    three = pa.table({"t": [1, 2], "o": pa.chunked_array([empty, first, empty], first.type)})
    got = ag.window_join(left, three, on="t", before=9, aggs={"o": ["min", "max"]}, device="cpu")
    assert got.select(["o_min", "o_max"]).to_pylist() == [{"o_min": "lo", "o_max": "hi"}]


def test_window_join_by_left_by_right_and_no_by(device):
    left = pa.table({"lt": [5, 9, 2], "ls": ["A", "A", "B"]})
    right = pa.table(
        {"rt": [1, 3, 4, 8, 2], "rs": ["A", "A", "A", "A", "B"], "bid": [1.0, 2.0, 3.0, 4.0, 5.0]}
    )
    out = ag.window_join(
        left,
        right,
        left_on="lt",
        right_on="rt",
        by_left="ls",
        by_right="rs",
        before=2,
        aggs={"bid": ["max", "count"], "rt": "last"},
        device=device,
    )
    assert out.to_pydict() == {
        "lt": [5, 9, 2],
        "ls": ["A", "A", "B"],
        "bid_max": [3.0, 4.0, 5.0],
        "bid_count": [2, 1, 1],
        "rt_last": [4, 8, 2],
    }
    out = ag.window_join(
        left,
        right,
        left_on="lt",
        right_on="rt",
        before=1,
        after=1,
        aggs={"bid": "sum"},
        device=device,
    )
    assert out["bid_sum"].to_pylist() == [3.0, 4.0, 1.0 + 2.0 + 5.0]


def test_window_join_timestamps_and_prevailing(device):
    """A timestamp key with a timedelta reach; prevailing brings the state on entering."""
    t0 = datetime.datetime(2024, 1, 1, 9, 30)
    sec = datetime.timedelta(seconds=1)
    trades = pa.table({"time": pa.array([t0 + 5 * sec, t0 + 10 * sec], pa.timestamp("ms"))})
    quotes = pa.table(
        {
            "time": pa.array([t0, t0 + 2 * sec, t0 + 4 * sec, t0 + 5 * sec], pa.timestamp("us")),
            "bid": [1.0, 2.0, None, 4.0],
        }
    )
    values, times = quotes["bid"].to_pylist(), quotes["time"].to_pylist()
    for prevailing, want_first in [(False, [4.0, None]), (True, [2.0, 4.0])]:
        out = ag.window_join(
            trades,
            quotes,
            on="time",
            before=datetime.timedelta(seconds=1.5),
            aggs={"bid": ["count", "first", "mean"], "time": ["min", "max"]},
            prevailing=prevailing,
            device=device,
        )
        windows = window_oracle(
            [5_000_000, 10_000_000],
            None,
            [0, 2_000_000, 4_000_000, 5_000_000],
            None,
            1_500_000,
            0,
            prevailing,
        )
        assert out["bid_count"].to_pylist() == [reduce_oracle(w, values, "count") for w in windows]
        assert out["bid_first"].to_pylist() == want_first
        assert out.schema.field("time_min").type == pa.timestamp("us")
        assert out["time_min"].to_pylist() == [times[w[0]] if w else None for w in windows]
        assert out["time_max"].to_pylist() == [times[w[-1]] if w else None for w in windows]
    # One second before: the quote at 4 s is at the window's start, the state on entering.
    out = ag.window_join(
        trades,
        quotes,
        on="time",
        before=sec,
        aggs={"bid": ["first"], "time": ["min"]},
        prevailing=True,
        device=device,
    )
    assert out["bid_first"].to_pylist() == [4.0, 4.0]
    assert out["time_min"].to_pylist() == [t0 + 4 * sec, t0 + 5 * sec]


def _no_right_row_table(case: str) -> pa.Table:
    keys, by = _NO_RIGHT_ROW[case]
    columns = {"t": keys, "x": pa.array([float(i) for i in range(len(keys))], pa.float64())}
    if by is not None:
        columns["g"] = by
    return pa.table(columns)


@pytest.mark.parametrize("case", list(_NO_RIGHT_ROW))
def test_window_join_with_no_right_row(device, case):
    """count 0, every other aggregate null."""
    right = _no_right_row_table(case)
    by = {"by": "g"} if "g" in right.column_names else {}
    left = pa.table({"t": [1.0, 5.0], "g": ["a", "a"]})
    aggs = {"x": ["count", "sum", "mean", "min", "max", "first", "last"]}
    out = ag.window_join(left, right, on="t", before=10, aggs=aggs, device=device, **by)
    assert out["x_count"].to_pylist() == [0, 0]
    for agg in aggs["x"][1:]:
        assert out[f"x_{agg}"].to_pylist() == [None, None], agg
        assert out.schema.field(f"x_{agg}").type == pa.float64(), agg


def test_window_join_with_no_left_row(device):
    left = pa.table({"t": pa.array([], pa.int64())})
    aggs = {"x": ["count", "sum", "mean", "min", "max", "first", "last"]}
    for right in (
        pa.table({"t": pa.array([], pa.int64()), "x": pa.array([], pa.float64())}),
        pa.table({"t": [1, 2], "x": [1.0, 2.0]}),
    ):
        out = ag.window_join(left, right, on="t", before=10, aggs=aggs, device=device)
        assert out.num_rows == 0
        assert out.column_names == ["t"] + [f"x_{a}" for a in aggs["x"]]
        assert out.schema.field("x_sum").type == pa.float64()
        assert out.schema.field("x_count").type == pa.int64()
        assert out.schema.field("x_first").type == pa.float64()


# --------------------------------------------------------------------------- range_join


def _want_range_rows(left: pa.Table, right: pa.Table, kept: dict[str, str], windows) -> dict:
    """The range join's columns as the oracle's pairs give them; ``kept``: the right columns
    kept, by their output names."""
    left_map, right_map = _pairs(windows)
    out = {n: [left[n].to_pylist()[i] for i in left_map] for n in left.column_names}
    for out_name, n in kept.items():
        values = right[n].to_pylist()
        out[out_name] = [None if j == NO_MATCH else values[j] for j in right_map]
    return out


@pytest.mark.parametrize("kind", ["int", "float"])
def test_range_join_matches_the_oracle(device, small, kind):
    rng = np.random.default_rng(31)
    n_left, n_right = max(small // 2, 2), small
    left_keys = _random_keys(rng, n_left, kind, nulls=True)
    right_keys = _random_keys(rng, n_right, kind, nulls=True)
    left_by = _random_by(rng, n_left, ["a", "b", "z"], True)
    right_by = _random_by(rng, n_right, ["a", "b"], True)
    left = pa.table(
        {
            "t": _arrow_keys(left_keys, kind),
            "g": pa.array(left_by, pa.string()),
            "x": np.arange(n_left),
        }
    )
    right = pa.table(
        {
            "t": _arrow_keys(right_keys, kind),
            "g": pa.array(right_by, pa.string()),
            "x": pa.array([f"r{j}" for j in range(n_right)]),
            "y": rng.normal(size=n_right),
        }
    )
    for before, after, prevailing in [(0, 0, False), (1.5, 0.5, True), (INF, INF, False)]:
        out = ag.range_join(
            left,
            right,
            on="t",
            by="g",
            before=before,
            after=after,
            prevailing=prevailing,
            device=device,
        )
        assert out.column_names == ["t", "g", "x", "t_right", "x_right", "y"]
        windows = window_oracle(
            left_keys, _groups(left_by), right_keys, _groups(right_by), before, after, prevailing
        )
        want = _want_range_rows(left, right, {"t_right": "t", "x_right": "x", "y": "y"}, windows)
        got = out.to_pydict()
        assert list(got) == list(want)
        for name in got:
            assert len(got[name]) == len(want[name]), name
            assert all(_same_or_none(a, b) for a, b in zip(got[name], want[name])), name


def _same_or_none(got, want) -> bool:
    if want is None or got is None:
        return got is None and want is None
    return _same(got, want)  # the values as they were, -0.0 kept


def test_range_join_names_and_suffix():
    left = pa.table({"t": [2, 6], "g": ["a", "a"], "v": [1.0, 2.0]})
    right = pa.table({"t": [1, 5, 6], "g": ["a", "a", "a"], "v": [9.0, 8.0, 7.0], "w": [7, 6, 5]})
    out = ag.range_join(left, right, on="t", by="g", before=1, suffix="_q", device="cpu")
    assert out.column_names == ["t", "g", "v", "t_q", "v_q", "w"]
    assert out.to_pydict() == {
        "t": [2, 6, 6],
        "g": ["a", "a", "a"],
        "v": [1.0, 2.0, 2.0],
        "t_q": [1, 5, 6],
        "v_q": [9.0, 8.0, 7.0],
        "w": [7, 6, 5],
    }
    other = pa.table({"rt": [1, 5], "rg": ["a", "b"], "w": [7, 6]})
    out = ag.range_join(
        left, other, left_on="t", right_on="rt", by_left="g", by_right="rg", before=4, device="cpu"
    )
    assert out.column_names == ["t", "g", "v", "rt", "w"]
    assert out.to_pydict()["rt"] == [1, None]
    with pytest.raises(ValueError, match=r"column 'v_q' appears twice in the result"):
        ag.range_join(
            left.append_column("v_q", pa.array([0, 0])),
            right,
            on="t",
            before=1,
            suffix="_q",
            device="cpu",
        )
    with pytest.raises(TypeError, match=r"suffix must be a string, got 3"):
        ag.range_join(left, right, on="t", before=1, suffix=3, device="cpu")


def test_range_join_with_no_left_row(device):
    empty = pa.table({"t": pa.array([], pa.int64()), "x": pa.array([], pa.float64())})
    full = pa.table({"t": [1, 2], "x": [1.0, 2.0]})
    out = ag.range_join(empty, full, on="t", before=5, device=device)
    assert out.num_rows == 0 and out.column_names == ["t", "x", "t_right", "x_right"]
    assert ag.range_join(empty, empty, on="t", before=5, device=device).num_rows == 0


@pytest.mark.parametrize("case", list(_NO_RIGHT_ROW))
def test_range_join_with_no_right_row(device, case):
    """Each left row once, with nulls on the right."""
    right = _no_right_row_table(case)
    by = {"by": "g"} if "g" in right.column_names else {}
    left = pa.table({"t": [1.0, 2.0], "g": ["a", "a"], "y": [7, 8]})
    out = ag.range_join(left, right, on="t", before=5, device=device, **by)
    want = {
        "t": [1.0, 2.0],
        "g": ["a", "a"],
        "y": [7, 8],
        "t_right": [None, None],
        "x": [None, None],
    }
    assert out.to_pydict() == want
    assert out.schema.field("x").type == pa.float64()


# --------------------------------------------------------------------------- errors


_LEFT = pa.table({"t": [1, 2], "g": ["a", "b"], "x_max": [0, 0]})
_RIGHT = pa.table({"t": [1, 3], "g": ["a", "a"], "x": [1.0, 2.0], "s": ["p", "q"]})


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"before": -1}, ValueError, r"before must be non-negative, got -1"),
        ({"before": 1, "after": -2}, ValueError, r"after must be non-negative, got -2"),
        ({"before": NAN}, ValueError, r"before must be a non-negative number, got NaN"),
        ({"before": "1s"}, TypeError, r"before: a duration needs a temporal key"),
        (
            {"before": datetime.timedelta(seconds=1)},
            TypeError,
            r"before: a duration needs a temporal key .* the key is int64",
        ),
        (
            {"before": 1, "after": np.timedelta64(1, "s")},
            TypeError,
            r"after: a duration needs a temporal key",
        ),
        (
            {"before": 1, "aggs": {"x": "median"}},
            ValueError,
            r"aggs\['x'\]: unknown aggregation 'median'; use one of",
        ),
        (
            {"before": 1, "aggs": {"s": "sum"}},
            TypeError,
            r"aggs\['s'\]: 'sum' applies to integer, float and boolean columns, and 's' is string",
        ),
        (
            {"before": 1, "aggs": {"s": ["count", "mean"]}},
            TypeError,
            r"aggs\['s'\]: 'mean' applies to integer, float and boolean columns",
        ),
        (
            {"before": 1, "aggs": {"s": "min"}},
            TypeError,
            r"aggs\['s'\]: 'min' applies to integer, float, boolean and temporal columns, and 's' is string",
        ),
        (
            {"before": 1, "aggs": {"nope": "count"}},
            KeyError,
            r"aggs names 'nope', which is not a column of the right",
        ),
        ({"before": 1, "aggs": ["x"]}, TypeError, r"aggs must be a non-empty dict of right column"),
        ({"before": 1, "aggs": {}}, TypeError, r"aggs must be a non-empty dict of right column"),
        ({"before": 1, "aggs": None}, TypeError, r"aggs must be a non-empty dict"),
        (
            {"before": 1, "aggs": {"x": []}},
            TypeError,
            r"aggs\['x'\] must be an aggregation or a non-empty list",
        ),
        (
            {"before": 1, "aggs": {"x": ["max", "min", "max"]}},
            ValueError,
            r"aggs\['x'\] asks for 'max' twice",
        ),
        (
            {"before": 1, "aggs": {"x": "max"}},
            ValueError,
            r"the aggregate column 'x_max' clashes with a left column of that name",
        ),
        (
            {"before": 1, "prevailing": "yes"},
            TypeError,
            r"prevailing must be True or False, got 'yes'",
        ),
        ({"before": 1, "prevailing": 1}, TypeError, r"prevailing must be True or False, got 1"),
        ({"before": 1, "on": None, "by_left": "g"}, ValueError, r"the as-of key is missing"),
        (
            {"before": 1, "by": None, "by_left": "g"},
            ValueError,
            r"by_left and by_right must be given together",
        ),
        ({"before": 1, "on": "nope"}, KeyError, r"table has no column 'nope'"),
        ({"before": 1, "device": "tpu"}, ValueError, r"device must be one of"),
    ],
)
def test_window_join_errors(kwargs, error, message):
    kwargs = {"on": "t", "by": "g", "aggs": {"x": "count"}, "device": "cpu", **kwargs}
    kwargs = {k: v for k, v in kwargs.items() if v is not None or k == "aggs"}
    with pytest.raises(error, match=message):
        ag.window_join(_LEFT, _RIGHT, **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"before": -1}, ValueError, r"before must be non-negative, got -1"),
        ({"before": 0, "after": -1}, ValueError, r"after must be non-negative, got -1"),
        ({"before": 1, "prevailing": None}, TypeError, r"prevailing must be True or False"),
        ({"before": 1, "by_left": "g"}, ValueError, r"by_left and by_right must be given together"),
    ],
)
def test_range_join_errors(kwargs, error, message):
    with pytest.raises(error, match=message):
        ag.range_join(_LEFT, _RIGHT, on="t", device="cpu", **kwargs)


def test_windows_errors():
    prepared = ag.AsofJoin(np.array([1, 2, 3]), device="cpu")
    grouped = ag.AsofJoin(np.array([1, 2, 3]), np.array(["a", "b", "a"]), device="cpu")
    left = np.array([2, 3])
    with pytest.raises(TypeError, match=r"before is required: how far from each left key"):
        prepared.windows(left, before=None)
    with pytest.raises(TypeError, match=r"before"):
        prepared.windows(left)  # a keyword without a default
    with pytest.raises(TypeError, match=r"before"):
        ag.window_join(_LEFT, _RIGHT, on="t", aggs={"x": "count"}, device="cpu")
    with pytest.raises(ValueError, match=r"before must be non-negative, got -3"):
        prepared.windows(left, before=-3)
    with pytest.raises(ValueError, match=r"after must be non-negative, got -0.5"):
        prepared.windows(left, before=1, after=-0.5)
    with pytest.raises(TypeError, match=r"before: a duration needs a temporal key"):
        prepared.windows(left, before=datetime.timedelta(seconds=1))
    with pytest.raises(TypeError, match=r"prevailing must be True or False, got 'no'"):
        prepared.windows(left, before=1, prevailing="no")
    with pytest.raises(
        ValueError, match=r"left_by was given but the right side has no right_by; pass both"
    ):
        prepared.windows(left, np.array(["a", "b"]), before=1)
    with pytest.raises(ValueError, match=r"left_by is required: the right side was prepared"):
        grouped.windows(left, before=1)
    with pytest.raises(ValueError, match=r"left_by\[0\] has 1 rows, but left_on has 2"):
        grouped.windows(left, np.array(["a"]), before=1)
    with pytest.raises(
        TypeError, match=r"left_on \(double\) and right_on \(int64\) cannot be compared"
    ):
        prepared.windows(np.array([1.0]), before=1)
    seconds = ag.AsofJoin(pa.array([1, 2], pa.timestamp("s")), device="cpu")
    with pytest.raises(ValueError, match=r"before must be a duration, got NaT"):
        seconds.windows(pa.array([1], pa.timestamp("s")), before=np.timedelta64("NaT"))
    with pytest.raises(ValueError, match=r"before must be non-negative"):
        seconds.windows(pa.array([1], pa.timestamp("s")), before=datetime.timedelta(seconds=-1))


def test_after_none_is_refused_by_name(device):
    """after=None, like before=None, is refused with a message naming it (rather than
    failing inside the kernel)."""
    prepared = ag.AsofJoin(np.array([1, 2, 3]), device=device)
    with pytest.raises(TypeError, match=r"after is required"):
        prepared.windows(np.array([2, 3]), before=1, after=None)


def test_windows_method_errors():
    w = ag.AsofJoin(np.array([1, 2, 3]), device="cpu").windows(np.array([2, 3]), before=1)
    with pytest.raises(ValueError, match=r"how must be one of \[.*'first'.*\], got 'median'"):
        w.pick("median", np.array([1, 2, 3]))
    with pytest.raises(TypeError, match=r"'max'.* needs? values"):
        w.pick("max")
    with pytest.raises(ValueError, match=r"how must be one of \[.*'first'.*\], got array"):
        w.pick(np.array(["first", "last"]), np.array([1, 2, 3]))
    with pytest.raises(ValueError, match=r"wanted must hold reductions among \[.*\], got 'median'"):
        w.reduce(["median"], np.array([1, 2, 3]))
    with pytest.raises(ValueError, match=r"wanted must hold reductions among .*, got array"):
        w.reduce([np.array(["min", "max"])], np.array([1, 2, 3]))
    for flag in ("no", None, np.nan, [True]):
        with pytest.raises(TypeError, match=r"extreme_values must be True or False, got"):
            w.reduce(["min"], np.array([1.0, 2.0, 3.0]), extreme_values=flag)
    with pytest.raises(TypeError, match=r"values must be .* or booleans, got <U1"):
        w.sum(np.array(["a", "b", "c"]))
    with pytest.raises(TypeError, match=r"values must be .* or booleans, got <U1"):
        w.mean(np.array(["a", "b", "c"]))
    with pytest.raises(TypeError, match=r"values must be numbers, booleans or temporal"):
        w.pick("min", np.array(["a", "b", "c"]))
    with pytest.raises(
        ValueError, match=r"values must be one value per right row \(3\), got shape \(2,\)"
    ):
        w.sum(np.array([1, 2]))
    with pytest.raises(ValueError, match=r"valid must be one value per right row"):
        w.count(np.array([True]))
    for valid in (np.array(["False"] * 3), np.array([np.nan, 0.5, 1.0])):  # all truthy
        with pytest.raises(TypeError, match=r"valid must be booleans, got"):
            w.count(valid)
        with pytest.raises(TypeError, match=r"valid must be booleans, got"):
            w.sum(np.array([1, 2, 3]), valid)
    for wanted in (None, "sum", 3):
        with pytest.raises(TypeError, match=r"wanted must be a list of reductions"):
            w.reduce(wanted, np.array([1, 2, 3]))


def test_windows_read_an_arrow_columns_nulls_and_exact_integers(device):
    """A payload given as Arrow (or a pandas or polars Series) went through numpy's
    conversion: its nulls became NaN (a window's max picked the null row, its sum NaN) and
    its int64 values floats (2**53 + 1 rounded). Now its nulls are ``valid`` and its values
    exact, as the window join reads them; a caller's ``valid`` still wins."""
    import pandas as pd

    prepared = ag.AsofJoin(np.array([1, 2, 3, 4]), device=device)
    w = prepared.windows(np.array([3]), before=1)  # rows 1 and 2
    big = 2**53 + 1
    columns = [
        pa.chunked_array([[1, None], [big, 4]]),
        pa.array([1, None, big, 4]),
        pd.Series([1, None, big, 4], dtype="Int64"),
    ]
    try:  # (the GPU check's machine has no polars)
        import polars as pl
    except ImportError:
        pass
    else:
        columns.append(pl.Series([1, None, big, 4]))
    for column in columns:
        found = w.reduce(["sum", "count", "max", "min"], column)
        assert to_host(found["sum"]).tolist() == [big]
        assert to_host(found["count"]).tolist() == [1]
        assert to_host(found["max"]).tolist() == to_host(found["min"]).tolist() == [2]
    everything = w.count(np.ones(4, bool))
    assert (
        to_host(w.reduce(["count"], pa.array([1, None, 3, 4]), np.ones(4, bool))["count"]).tolist()
        == to_host(everything).tolist()
    )
    instants = pa.array([1, None, 3, 4], pa.timestamp("s"))
    # encoded too: a run-end encoded or dictionary column's values were summed as integers
    for column in (instants, pc.run_end_encode(instants), instants.dictionary_encode()):
        with pytest.raises(
            TypeError, match=r"values must be numbers or booleans, got datetime64\[s\]"
        ):
            w.sum(column)
    # an ordered dictionary's positions rank (min, max), they do not add (it summed them)
    ordered = pa.DictionaryArray.from_arrays(pa.array([1, 0, None, 1]), ["lo", "hi"], ordered=True)
    for how in ("sum", "mean"):
        with pytest.raises(TypeError, match="^values: sum and mean apply to numbers, not to an"):
            w.reduce([how], ordered)
    assert to_host(w.reduce(["max"], ordered)["max"]).tolist() == [1]  # (its window: rows 1, 2)


def test_windows_made_with_a_backend_name():
    """``Windows`` is exported: made by hand, its backend may be named as ``device=`` is."""
    w = ag.Windows("cpu", np.array([0, 1]), np.array([2, 3]), np.array([0, 1, 2]), ag.NO_MATCH, 3)
    assert w.count().tolist() == [2, 2]
    assert w.sum(np.array([1, 2, 4]))[0].tolist() == [3, 6]
    # another name, or no backend at all, is refused by name (a KeyError of the registry)
    parts = (np.array([0]), np.array([1]), np.array([0], np.int32), ag.NO_MATCH, 1)
    with pytest.raises(ValueError, match="^backend must be one of 'auto', 'cpu', 'cuda', 'python'"):
        ag.Windows("bogus", *parts)
    with pytest.raises(TypeError, match=r"^backend must be a Backend or one of \['auto'"):
        ag.Windows(3, *parts)


# --------------------------------------------------------------------------- properties

_SMALL = 12 if cudasim_enabled() else 30


def _side(data, keys):
    values = data.draw(st.lists(st.one_of(st.none(), keys), max_size=_SMALL))
    by = data.draw(
        st.lists(st.sampled_from(["a", "b", None]), min_size=len(values), max_size=len(values))
    )
    return values, by


_REACH_INT = st.one_of(st.integers(0, 4), st.just(INF), st.just(2**64))
_FLOAT_KEYS = st.sampled_from([-INF, -1.0, -0.0, 0.0, 0.5, 1.0, 2.5, INF, NAN])


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    kind=st.sampled_from(["int", "float"]),
    prevailing=st.booleans(),
)
def test_windows_property(data, kind, prevailing):
    """Windows equal the oracle's, on the compiled cpu kernels."""
    keys = st.integers(-4, 4) if kind == "int" else _FLOAT_KEYS
    reach = _REACH_INT if kind == "int" else st.sampled_from([0, 0.5, 1.0, 3.0, INF])
    (left, left_by), (right, right_by) = _side(data, keys), _side(data, keys)
    before, after = data.draw(reach), data.draw(reach)
    with walks.overridden(interpret_max_rows=0):
        prepared = ag.AsofJoin(
            _arrow_keys(right, kind), pa.array(right_by, pa.string()), device="cpu"
        )
        w = prepared.windows(
            _arrow_keys(left, kind),
            pa.array(left_by, pa.string()),
            before=before,
            after=after,
            prevailing=prevailing,
        )
        want = window_oracle(
            left, _groups(left_by), right, _groups(right_by), before, after, prevailing
        )
        assert _lists(w) == want


@settings(max_examples=40, deadline=None)
@given(data=st.data(), before=st.integers(0, 3), after=st.integers(0, 3), prevailing=st.booleans())
def test_pairs_agree_with_windows(data, before, after, prevailing):
    """pairs() lists the windows' rows in order; counts and first/last agree with them; a
    wider window holds the narrower one."""
    (left, left_by), (right, right_by) = (
        _side(data, st.integers(-4, 4)),
        _side(data, st.integers(-4, 4)),
    )
    with walks.overridden(interpret_max_rows=0):
        prepared = ag.AsofJoin(
            pa.array(right, pa.int64()), pa.array(right_by, pa.string()), device="cpu"
        )
        left_keys, left_groups = pa.array(left, pa.int64()), pa.array(left_by, pa.string())
        w = prepared.windows(
            left_keys, left_groups, before=before, after=after, prevailing=prevailing
        )
        windows = _lists(w)
        left_map, right_map = (to_host(m).tolist() for m in w.pairs())
        assert (left_map, right_map) == _pairs(windows)
        assert to_host(w.count()).tolist() == [len(x) for x in windows]
        assert to_host(w.pick("first")).tolist() == [x[0] if x else NO_MATCH for x in windows]
        assert to_host(w.pick("last")).tolist() == [x[-1] if x else NO_MATCH for x in windows]
        wider = _lists(
            prepared.windows(
                left_keys, left_groups, before=before + 1, after=after + 1, prevailing=prevailing
            )
        )
        for narrow, wide in zip(windows, wider):
            assert set(narrow) <= set(wide)


@pytest.mark.parametrize("shuffled", [False, True])
@pytest.mark.parametrize("prevailing", [False, True])
def test_sliding_reductions_equal_window_by_window_ones(thresholds, shuffled, prevailing):
    """On the cpu, values in the prepared order without nulls are slid through group by
    group (kernels/window.py's ``slide_piece``: a front of suffix aggregates, a running back,
    flips when the front runs out, pieces that end where groups do); on the python backend
    every window is read whole. Time-sorted left rows slide throughout; shuffled ones move
    backward often and are read whole there too. Keys with ties, values with ties (which
    the first smallest and largest must break alike), several groups, wide windows."""
    thresholds(parallel_min_rows=0)  # the cpu's pieces on numba's threads
    rng = np.random.default_rng(3)
    n_right, n_left = 6_000, 1_500
    right_keys = np.sort(rng.integers(0, 3_000, n_right))
    right_groups = rng.choice(["a", "b", "c", "d"], n_right, p=[0.55, 0.25, 0.15, 0.05])
    left_keys = np.sort(rng.integers(0, 3_000, n_left))
    left_groups = rng.choice(["a", "b", "c", "e"], n_left)
    if shuffled:
        perm = rng.permutation(n_left)
        left_keys, left_groups = left_keys[perm], left_groups[perm]
    values = rng.integers(0, 40, n_right).astype(np.float64) / 4  # many equal values
    values[rng.random(n_right) < 0.01] = np.nan
    wanted = ("count", "sum", "mean", "min", "max", "first", "last")
    got, want = {}, {}
    for device, out in (("cpu", got), ("python", want)):
        prepared = ag.AsofJoin(right_keys, right_groups, device=device)
        windows = prepared.windows(
            left_keys, left_groups, before=60, after=5, prevailing=prevailing
        )
        assert 4 * int(windows.lengths().sum()) >= n_right  # values arranged: no rows read
        out.update({k: to_host(v) for k, v in windows.reduce(wanted, values).items()})
    for how in ("count", "min", "max", "first", "last"):
        np.testing.assert_array_equal(got[how], want[how], err_msg=how)
    for how in ("sum", "mean"):  # summed in another order: within the window's rounding
        np.testing.assert_allclose(got[how], want[how], rtol=1e-12, equal_nan=True, err_msg=how)


def test_kdb_wj_reference_example(device):
    """kdb+'s own wj example (code.kx.com/q/ref/wj): quotes every second, windows [t - 2, t + 1]
    whose starts hold a quote, so the prevailing row is in the window: max ask 103 104 108, min
    bid 98 99 104, as kdb+ prints them."""
    trades = pa.table({"sym": ["ibm"] * 3, "time": [1, 4, 8], "price": [100, 101, 105]})
    quotes = pa.table(
        {
            "sym": ["ibm"] * 9,
            "time": list(range(1, 10)),
            "ask": [101, 103, 103, 104, 104, 107, 108, 107, 108],
            "bid": [98, 99, 102, 103, 103, 104, 106, 106, 107],
        }
    )
    for prevailing in (True, False):
        out = ag.window_join(
            trades,
            quotes,
            on="time",
            by="sym",
            before=2,
            after=1,
            prevailing=prevailing,
            aggs={"ask": "max", "bid": "min"},
            device=device,
        )
        assert out["ask_max"].to_pylist() == [103, 104, 108]
        assert out["bid_min"].to_pylist() == [98, 99, 104]


def test_the_cpus_float_sums_do_not_change_once_it_compiles(thresholds):
    """A small cpu launch runs as plain Python until the process has interpreted for a while
    (``walks.compiles``); it slides the windows as the compiled launch does, so a float sum
    is the same to the last bit either way (it read them whole, and differed: 0.6 against
    0.6000000000000001 for 0.1 + 0.2 + 0.3)."""
    right = pa.table({"t": np.arange(300), "v": np.tile([0.1, 0.2, 0.3], 100)})
    left = pa.table({"t": np.arange(0, 300, 7)})

    def sums():
        out = ag.window_join(
            left, right, on="t", before=5, aggs={"v": ["sum", "mean"]}, device="cpu"
        )
        return out["v_sum"].to_pylist(), out["v_mean"].to_pylist()

    thresholds(interpret_max_rows=HUGE, interpret_seconds=HUGE)  # plain Python
    interpreted = sums()
    thresholds(interpret_max_rows=0, interpret_seconds=0)  # compiled
    assert sums() == interpreted
    values = right["v"].to_pylist()
    for t, got in zip(left["t"].to_pylist(), interpreted[0]):  # within the README's bound
        window = values[max(0, t - 5) : t + 1]
        exact = sum(Fraction(v) for v in window)
        assert abs(Fraction(got) - exact) <= len(window) * 2**-53 * sum(map(abs, window))
