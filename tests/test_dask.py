"""asofgpu.dask.merge_asof on LocalClusters (threads and processes) against pandas.merge_asof
on the same data: the concatenated partitions, stably sorted by the key where the inputs are
not in order. Many joins go into one compute, so a test costs one round trip.
"""

from __future__ import annotations

import itertools
from decimal import Decimal

import numpy as np
import pandas as pd
import pytest
from pandas.errors import MergeError

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

import dask  # noqa: E402

from asofgpu._pandas_semantics import NEGATIVE_TOLERANCE  # noqa: E402
from asofgpu.dask import merge_asof  # noqa: E402
import asofgpu.pandas as agpd  # noqa: E402

DIRECTIONS = ["backward", "forward", "nearest"]
GROUPS = ["A", "B", "C", "D"]


@pytest.fixture(scope="module")
def threads():
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster, set_as_default=False) as client,
    ):
        yield client


@pytest.fixture(scope="module")
def processes():
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster, set_as_default=False) as client,
    ):
        yield client


# --------------------------------------------------------------------------- helpers


def market(seed: int, n_left: int = 50, n_right: int = 60, span: int = 30):
    """Time-sorted quotes (right) and trades (left) with many equal times."""
    rng = np.random.default_rng(seed)
    right = pd.DataFrame(
        {
            "t": np.sort(rng.integers(0, span, n_right)),
            "g": rng.choice(GROUPS, n_right),
            "rid": np.arange(n_right),
            "bid": rng.integers(0, 1000, n_right) / 8,
            "firm": rng.random(n_right) < 0.5,
        }
    )
    left = pd.DataFrame(
        {
            "t": np.sort(rng.integers(0, span, n_left)),
            "g": rng.choice(GROUPS, n_left),
            "lid": np.arange(n_left),
        }
    )
    return left, right


def cut(frame: pd.DataFrame, bounds) -> dd.DataFrame:
    """Partitions frame.iloc[a:b] for consecutive bounds (a repeated bound: an empty one)."""
    pieces = list(zip(bounds[:-1], bounds[1:], strict=True))
    return dd.from_map(lambda ab: frame.iloc[ab[0] : ab[1]], pieces, meta=frame.iloc[:0])


def even(frame: pd.DataFrame, n: int) -> dd.DataFrame:
    return cut(frame, np.linspace(0, len(frame), n + 1).astype(int))


def compute(client, make):
    """Build the joins (their key pass included) and compute them all on ``client``."""
    with client.as_current():
        joins = make()
        return dask.compute(*joins)


def expected_for(left: dd.DataFrame, right: dd.DataFrame, **kw) -> pd.DataFrame:
    """pandas on the concatenated partitions, stably sorted by the key, in left input order."""
    kw.pop("method", None)
    lp, rp = dask.compute(left, right, scheduler="synchronous")
    lkey = kw.get("left_on", kw.get("on"))
    rkey = kw.get("right_on", kw.get("on"))
    ls = lp.sort_values(lkey, kind="stable") if lkey else lp
    rs = rp.sort_values(rkey, kind="stable") if rkey else rp
    out = pd.merge_asof(ls, rs, **kw)
    if "lid" in lp.columns and lkey:
        out = out.set_index(pd.Index(ls["lid"].to_numpy())).loc[lp["lid"].to_numpy()]
        out = out.reset_index(drop=True)
    return out


def assert_matches(got: pd.DataFrame, expected: pd.DataFrame, index: bool = False) -> None:
    """Equal frames; right int/bool columns may be float64/boolean (asofgpu.dask upcasts
    them in every partition, pandas to float64/object only when some row is unmatched)."""
    if not index:
        got = got.reset_index(drop=True)
    assert list(got.columns) == list(expected.columns)
    for name in got.columns:
        g, e = got[name].dtype, expected[name].dtype
        assert (
            g == e
            or (e.kind in "iu" and g == np.float64)
            or (e.kind in "bO" and g == pd.BooleanDtype())
        )
    pd.testing.assert_frame_equal(got, expected.astype(got.dtypes.to_dict()), check_exact=True)


def check_jobs(client, jobs, device="cpu") -> list:
    """Each job (left, right, keywords) joined on the cluster, all in one compute, against
    pandas on the same data; each output partition holds its left partition's rows."""

    def build():
        return [merge_asof(lf, rf, device=device, **kw).to_delayed() for lf, rf, kw in jobs]

    results = []
    for (lf, rf, kw), parts in zip(jobs, compute(client, build), strict=True):
        left_parts = dask.compute(*lf.to_delayed(), scheduler="synchronous")
        assert [len(p) for p in parts] == [len(p) for p in left_parts]
        result = pd.concat(parts)
        assert_matches(result, expected_for(lf, rf, **kw))
        results.append(result)
    return results


def graph_names(collection) -> set:
    names = set()
    for key in collection.__dask_graph__():
        name = key[0] if isinstance(key, tuple) else key
        names.add(str(name).split("-")[0])
    return names


def rare_groups(seed: int = 5):
    """Group R quotes once, in the first right partition, and trades only in the last left
    one; group F is the mirror (one quote at the end, trades at the start); group S is in
    one partition of each side only; equal times cross partition boundaries."""
    left, right = market(seed, n_left=40, n_right=60, span=100)
    right = pd.concat(
        [
            right,
            pd.DataFrame(
                {
                    "t": [0, 99, 50],
                    "g": ["R", "F", "S"],
                    "rid": [900, 901, 902],
                    "bid": [1.5, 2.5, 3.5],
                    "firm": [True, False, True],
                }
            ),
        ]
    )
    left = pd.concat(
        [
            left,
            pd.DataFrame(
                {
                    "t": [97, 98, 1, 2, 49, 51],
                    "g": ["R", "R", "F", "F", "S", "S"],
                    "lid": range(900, 906),
                }
            ),
        ]
    )
    right = right.sort_values("t", kind="stable").reset_index(drop=True)
    left = left.sort_values("t", kind="stable").reset_index(drop=True)
    return cut(left, [0, 9, 9, 25, 46]), cut(right, [0, 11, 25, 25, 45, 63])


# --------------------------------------------------------------------------- time strategy


def test_every_direction_tolerance_and_exactness(threads):
    """Directions x tolerance (none, zero, small, spanning partitions) x exact/strict, with
    rare groups and an empty partition on each side."""
    left, right = rare_groups()
    options = [(None, True), (0, True), (3, False)]
    jobs = [
        (
            left,
            right,
            dict(on="t", by="g", method="time", direction=d, tolerance=t, allow_exact_matches=x),
        )
        for d, (t, x) in itertools.product(DIRECTIONS, options)
    ]
    jobs.append(
        (left, right, dict(on="t", by="g", method="time", direction="nearest", tolerance=40))
    )  # spans several partitions
    got = check_jobs(threads, jobs)
    backward, forward = got[0], got[len(options)]
    assert backward.loc[backward.g == "R", "rid"].tolist() == [900.0, 900.0]
    assert forward.loc[forward.g == "F", "rid"].tolist() == [901.0, 901.0]


LAYOUTS = {
    "one partition each": ([0, 50], [0, 60]),
    "one left partition": ([0, 50], [0, 13, 13, 31, 60]),
    "one right partition": ([0, 7, 20, 50], [0, 60]),
    "empty partitions": ([0, 0, 12, 12, 33, 50, 50], [0, 0, 25, 25, 60, 60]),
    "a row per partition": ([0, 1, 2, 3, 4, 5, 50], [0, 5, 10, 60]),
    "cuts inside runs of equal keys": ([0, 5, 11, 23, 50], [0, 7, 19, 20, 33, 60]),
}


def test_partition_layouts(threads):
    """Few distinct times (every cut falls inside a run of equal keys) over many layouts."""
    left, right = market(3, span=6)
    cases = [
        dict(direction="nearest", allow_exact_matches=False, tolerance=1),
        dict(direction="backward"),
        dict(direction="forward"),
    ]
    jobs = [
        (cut(left, lcuts), cut(right, rcuts), dict(on="t", by="g", method="time", **cases[i % 3]))
        for i, (lcuts, rcuts) in enumerate(LAYOUTS.values())
    ]
    lcuts, rcuts = LAYOUTS["empty partitions"]
    jobs += [
        (cut(left, lcuts), cut(right, rcuts), dict(on="t", by="g", method="time", **case))
        for case in cases[1:]
    ]
    check_jobs(threads, jobs)


def test_without_by(threads):
    left, right = market(2)
    jobs = [
        (even(left, 3), even(right, 4), dict(on="t", method="time", direction=d))
        for d in DIRECTIONS
    ]
    jobs.append(
        (even(left, 3), even(right, 4), dict(on="t", method="broadcast", direction="nearest"))
    )
    check_jobs(threads, jobs)


def test_known_and_unknown_divisions_of_an_index_key(threads):
    left, right = market(6)
    known_l = dd.from_pandas(left.set_index("t"), npartitions=3, sort=True)
    known_r = dd.from_pandas(right.set_index("t"), npartitions=4, sort=True)
    assert known_l.known_divisions and known_r.known_divisions
    unknown_l, unknown_r = known_l.clear_divisions(), known_r.clear_divisions()
    cases = [
        (known_l, known_r, "nearest", "time"),
        (unknown_l, unknown_r, "backward", "time"),
        (known_l, unknown_r, "forward", "time"),
        (unknown_l, known_r, "nearest", "broadcast"),
    ]
    got = compute(
        threads,
        lambda: [
            merge_asof(
                lf,
                rf,
                left_index=True,
                right_index=True,
                by="g",
                direction=d,
                method=s,
                device="cpu",
            )
            for lf, rf, d, s in cases
        ],
    )
    for (lf, rf, d, _), result in zip(cases, got, strict=True):
        lp, rp = dask.compute(lf, rf, scheduler="synchronous")
        assert_matches(
            result,
            pd.merge_asof(lp, rp, left_index=True, right_index=True, by="g", direction=d),
            index=True,
        )
    out = merge_asof(known_l, known_r, left_index=True, right_index=True, by="g", method="time")
    assert out.divisions == known_l.divisions


# --------------------------------------------------------------------------- any order


def shuffled(seed: int):
    """Both sides in random row order: partitions overlap and are unsorted inside."""
    left, right = market(seed)
    rng = np.random.default_rng(seed)
    left = left.iloc[rng.permutation(len(left))].reset_index(drop=True)
    right = right.iloc[rng.permutation(len(right))].reset_index(drop=True)
    return even(left, 3), even(right, 3)


def test_unsorted_inputs_keep_left_order(threads):
    left, right = shuffled(7)
    jobs = [
        (left, right, dict(on="t", by="g", method="hash", direction="nearest", tolerance=3)),
        (
            left,
            right,
            dict(
                on="t", by="g", method="broadcast", direction="forward", allow_exact_matches=False
            ),
        ),
        (left, right, dict(on="t", by="g", method="broadcast", direction="backward")),
        (left, right, dict(on="t", by="g", method="auto")),
    ]  # auto: hash
    got = check_jobs(threads, jobs)
    lids = dask.compute(left, scheduler="synchronous")[0]["lid"].tolist()
    assert all(g["lid"].tolist() == lids for g in got)


def test_null_by_values_group_together(threads):
    """pandas matches None with NaN in ``by``: the hash strategy must route them alike."""
    left, right = market(9)
    left["g"] = left["g"].astype(object).where(left["lid"] % 3 != 0, None)
    right["g"] = right["g"].astype(object).where(right["rid"] % 4 != 0, np.nan)
    jobs = [
        (even(left, 2), even(right, 2), dict(on="t", by="g", method=s)) for s in ("time", "hash")
    ]
    check_jobs(threads, jobs)


# --------------------------------------------------------------------------- processes


@pytest.mark.slow  # a LocalCluster of worker processes, started for this test alone
def test_each_strategy_on_worker_processes(processes):
    """Everything crosses process boundaries. device="python" runs the same kernel source
    without each fresh worker loading numba's compiled kernels (seconds on two cores)."""
    left, right = rare_groups()
    jobs = [
        (left, right, dict(on="t", by="g", method="time", direction="nearest", tolerance=3)),
        (left, right, dict(on="t", by="g", method="hash", direction="backward")),
    ]
    check_jobs(processes, jobs, device="python")


def test_datetime_keys_and_a_timedelta_tolerance(threads):
    left, right = market(10)
    for frame in (left, right):
        frame["t"] = pd.Timestamp("2026-01-02 09:30") + pd.to_timedelta(frame["t"], unit="ms")
    jobs = [
        (
            even(left, 3),
            even(right, 2),
            dict(on="t", by="g", method="time", direction=d, tolerance=pd.Timedelta("2ms")),
        )
        for d in ("backward", "forward")
    ]
    check_jobs(threads, jobs)


# --------------------------------------------------------------------------- strategies


def test_auto_picks_broadcast_time_or_hash():
    left, right = market(11)
    sorted_l, sorted_r = even(left, 3), even(right, 3)
    with dask.config.set(scheduler="synchronous"):
        one = merge_asof(sorted_l, even(right, 1), on="t", by="g")
        time = merge_asof(sorted_l, sorted_r, on="t", by="g")
        hashed = merge_asof(*shuffled(11), on="t", by="g")
    assert "_sorted_right" in graph_names(one)
    assert "_split_right" in graph_names(time) and "_sorted_right" not in graph_names(time)
    assert "_join_hash" in graph_names(hashed)


def test_time_and_broadcast_never_shuffle():
    left, right = market(12)
    with dask.config.set(scheduler="synchronous"):
        outs = [
            merge_asof(even(left, 3), even(right, 3), on="t", by="g", method=s)
            for s in ("time", "broadcast", "hash")
        ]
    shuffles = [any("shuffle" in name for name in graph_names(o)) for o in outs]
    assert shuffles == [False, False, True]


def test_broadcast_prepares_the_right_side_once_per_process(threads, thresholds):
    """Preparing the right side sorts its rows by group, which each sort notes
    (``walks.sort_pieces``, in the compiled sort): one sort for six left partitions on the
    two workers of this one process (each join reads the sort; the empty meta's
    preparation on the client sorts nothing)."""
    from asofgpu._backend import walks

    thresholds(interpret_max_rows=0)  # compiled, at every size: the sort notes its pieces
    left, right = market(13)
    left = even(left, 6)
    with walks.recorded() as decisions:
        compute(
            threads,
            lambda: [
                merge_asof(left, even(right, 2), on="t", by="g", method="broadcast", device="cpu")
            ],
        )
    assert [name for name, _ in decisions].count("sort_pieces") == 1


def test_broadcast_computed_again_after_its_file_changed_probes_the_new_rows(tmp_path):
    """The cache of prepared right sides is keyed by the graph, which names the reader and
    the path, not the rows: computed again after the file changed, the collection joined
    the new rows against the old keys, silently. An entry serves the frame it was made of."""
    path = tmp_path / "quotes.parquet"
    left = dd.from_pandas(pd.DataFrame({"t": [1, 2, 3, 4]}), npartitions=2)
    pd.DataFrame({"t": [0, 2], "x": [1.0, 2.0]}).to_parquet(path)
    out = merge_asof(left, dd.read_parquet(path), on="t", method="broadcast", device="cpu")
    with dask.config.set(scheduler="synchronous"):
        assert out.compute()["x"].tolist() == [1.0, 2.0, 2.0, 2.0]
        pd.DataFrame({"t": [3, 4], "x": [10.0, 20.0]}).to_parquet(path)
        got = out.compute()["x"].tolist()
    want = pd.merge_asof(left.compute(), pd.read_parquet(path), on="t")["x"]
    pd.testing.assert_series_equal(pd.Series(got), want, check_names=False)  # NaN NaN 10 20


@pytest.mark.parametrize(
    ("left_t", "right_t", "tolerance", "direction"),
    [
        ([0.0, 1.6], [0.6, 5.0], 1.0, "backward"),  # 1.6 - 0.6 <= 1.0; 1.6 - 1.0 > 0.6
        ([0.0, 1.6], [0.6, 5.0], 1.0, "nearest"),
        ([0.4, 1.9], [0.0, 1.8], 1.4, "forward"),  # 1.8 - 0.4 <= 1.4; 0.4 + 1.4 < 1.8
    ],
)
def test_time_method_prunes_float_carries_as_pandas_measures_them(
    left_t, right_t, tolerance, direction
):
    """The carries are pruned by each partition's first (last) key less (plus) the
    tolerance, which in floats can miss pandas' test of the keys' difference by an ulp: a
    row pandas matches was dropped, silently."""
    left = pd.DataFrame({"t": left_t})
    right = pd.DataFrame({"t": right_t, "x": [1.0, 2.0]})
    options = dict(on="t", tolerance=tolerance, direction=direction)
    got = _two_partitions_each_by_time(left, right, **options)
    pd.testing.assert_frame_equal(got, pd.merge_asof(left, right, **options))


def _two_partitions_each_by_time(left: pd.DataFrame, right: pd.DataFrame, **options):
    """The time method's result, each side in two partitions, its rows numbered anew (each
    partition numbers its own)."""
    got = merge_asof(
        dd.from_pandas(left, npartitions=2),
        dd.from_pandas(right, npartitions=2),
        method="time",
        device="cpu",
        **options,
    )
    with dask.config.set(scheduler="synchronous"):
        return got.compute().reset_index(drop=True)


@pytest.mark.parametrize("unit", ["s", "ms"])
@pytest.mark.parametrize(
    "tolerance",
    [pd.Timedelta("2500ms"), pd.Timedelta("1500us"), pd.DateOffset(seconds=2, milliseconds=500)],
)
@pytest.mark.parametrize("direction", ["backward", "forward"])
def test_time_method_takes_a_tolerance_finer_than_its_keys(unit, tolerance, direction):
    """A carry's reach 2.5 s from keys of whole seconds lies between them: it was searched
    for in the key and refused ("Cannot losslessly convert units")."""
    base = pd.Timestamp("2024-03-01 09:30")
    left = pd.DataFrame({"t": (base + pd.to_timedelta([0, 4], "s")).as_unit(unit)})
    right = pd.DataFrame(
        {"t": (base + pd.to_timedelta([2, 6], "s")).as_unit(unit), "x": [1.0, 2.0]}
    )
    options = dict(on="t", tolerance=tolerance, direction=direction)
    got = _two_partitions_each_by_time(left, right, **options)
    from asofgpu.pandas import merge_asof as pandas_merge_asof  # pandas refuses a DateOffset

    pd.testing.assert_frame_equal(got, pandas_merge_asof(left, right, device="cpu", **options))


@pytest.mark.parametrize("method", ["auto", "time", "hash", "broadcast"])
@pytest.mark.parametrize("known", ["neither", "left"])
def test_by_categories_dask_does_not_know_are_learned_first(method, known):
    """``astype("category")`` leaves dask's categories unknown: each partition held its own,
    and pandas' merge of a partition refused them as unequal where pandas joins the whole
    frames. Categories the two sides do not share are still pandas' error, at the call."""
    left = pd.DataFrame({"t": [1, 2, 3, 4], "g": ["a", "a", "b", "b"]})
    right = pd.DataFrame({"t": [0, 1, 2, 3], "g": ["b", "a", "b", "a"], "x": [10, 11, 12, 13]})
    ld, rd = dd.from_pandas(left, npartitions=2), dd.from_pandas(right, npartitions=2)
    ld["g"], rd["g"] = ld["g"].astype("category"), rd["g"].astype("category")
    if known == "left":
        ld["g"] = ld["g"].cat.as_known()
    with dask.config.set(scheduler="synchronous"):
        lp, rp = dask.compute(ld, rd)
        want = pd.merge_asof(lp, rp, on="t", by="g")
        got = merge_asof(ld, rd, on="t", by="g", method=method, device="cpu").compute()
    assert got["x"].tolist() == want["x"].astype(float).tolist()  # int -> float64 (README)
    other = dd.from_pandas(right.assign(g=right["g"].replace("a", "z")), npartitions=2)
    other["g"] = other["g"].astype("category")
    with pytest.raises(MergeError, match="both sides category, but not equal ones"):
        merge_asof(ld, other, on="t", by="g", method=method, device="cpu")


@pytest.mark.parametrize("method", ["time", "hash", "broadcast"])
def test_other_categorical_columns_dask_does_not_know_stay_categorical(method):
    """Categorical columns that are not by keys, of categories dask does not know, came out
    as strings (the time method's concat of right pieces, the hash method's shuffles: the
    meta said category), or the compute failed in dask's concat (a left partition no right
    row reaches took the meta's placeholder categories, of another dtype than the data's)."""
    left = pd.DataFrame({"t": [1, 2, 10, 11, 20, 21], "c": list("abcdef"), "k": 1})
    right = pd.DataFrame({"t": [5, 6, 15, 16], "g": list("ABCD"), "k": 1})
    ld = dd.from_pandas(left, npartitions=3).astype({"c": "category"})
    rd = dd.from_pandas(right, npartitions=2).astype({"g": "category"})
    with dask.config.set(scheduler="synchronous"):
        lp, rp = dask.compute(ld, rd)
        want = pd.merge_asof(lp, rp, on="t", by="k")
        out = merge_asof(ld, rd, on="t", by="k", method=method, device="cpu")
        parts = [part.compute() for part in out.to_delayed()]
        got = out.compute().reset_index(drop=True)
    for frame in (out._meta, *parts, got):
        assert isinstance(frame["c"].dtype, pd.CategoricalDtype), method
        assert isinstance(frame["g"].dtype, pd.CategoricalDtype), method
    assert got["g"].tolist() == want["g"].tolist()  # [NaN, NaN, B, B, D, D]
    assert got["c"].tolist() == want["c"].tolist()


@pytest.mark.parametrize("method", ["time", "hash", "broadcast"])
def test_categories_dask_does_not_know_come_in_the_order_the_whole_frame_has_them(method):
    """Categories learned by ``cat.as_known`` came in the order of dask's shuffle (A, C, B),
    where the computed frames, and so pandas, have each partition's own in partition order,
    new ones after (C, D, A, B): the same values, other codes and another sort order."""
    chunks = [
        pd.DataFrame({"t": [1, 2], "g": ["x", "x"], "c": ["D", "C"]}),
        pd.DataFrame({"t": [3], "g": ["x"], "c": ["D"]}),
        pd.DataFrame({"t": [5, 6], "g": ["x", "x"], "c": ["B", "A"]}),
    ]
    rd = dd.from_map(lambda part: part, chunks, meta=chunks[0].iloc[:0])
    rd = rd.assign(c=rd["c"].astype("category"), g=rd["g"].astype("category"))
    ld = dd.from_pandas(pd.DataFrame({"t": [2, 4, 6], "g": ["x"] * 3}), npartitions=2)
    ld = ld.assign(g=ld["g"].astype("category"))
    with dask.config.set(scheduler="synchronous"):
        lp, rp = dask.compute(ld, rd)
        want = pd.merge_asof(lp, rp, on="t", by="g")
        got = merge_asof(ld, rd, on="t", by="g", method=method, device="cpu").compute()
    assert list(rp["c"].cat.categories) == ["C", "D", "A", "B"]
    assert list(got["c"].cat.categories) == ["C", "D", "A", "B"]
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want)


@pytest.mark.parametrize("method", ["time", "hash", "broadcast"])
def test_suffixes_that_repeat_a_label_upcast_only_the_right_columns(method):
    """pandas allows suffixes that give a right column a left one's label; the right side's
    int/bool upcasts were applied by label, so the left's int column of that label became
    float64 (or, beside a right bool column, the compute raised)."""
    left = pd.DataFrame({"t": [1, 2, 3], "v": [1, 2, 3], "w": [7, 8, 9], "k": 1})
    right = pd.DataFrame({"t": [1, 2], "v": [10, 20], "w": [True, False], "k": 1})
    want = pd.merge_asof(left, right, on="t", by="k", suffixes=("_a", "_a"))
    out = merge_asof(
        dd.from_pandas(left, npartitions=2),
        dd.from_pandas(right, npartitions=1),
        on="t",
        by="k",
        suffixes=("_a", "_a"),
        method=method,
        device="cpu",
    )
    with dask.config.set(scheduler="synchronous"):
        got = out.compute().reset_index(drop=True)
    dtypes = ["int64"] * 4 + ["float64", "boolean"]  # t, v_a, w_a, k | v_a, w_a (upcast)
    assert [str(d) for d in out._meta.dtypes] == dtypes
    assert [str(d) for d in got.dtypes] == dtypes
    assert got.iloc[:, :4].equals(want.iloc[:, :4])
    assert got.iloc[:, 4].tolist() == [10.0, 20.0, 20.0]
    assert got.iloc[:, 5].tolist() == [True, False, False]


@pytest.mark.parametrize(("seed", "n", "groups", "parts"), [(0, 40, 3, 4), (10, 10, 2, 5)])
def test_by_categories_dask_does_not_know_are_learned_under_a_client(
    threads, seed, n, groups, parts
):
    """Under a distributed client dask learns categories with its p2p shuffle, which put its
    placeholder ``__UNKNOWN_CATEGORIES__`` among them (the first case) or repeated one, which
    pandas refused at the call (the second): the categories are those learned without one."""
    rng = np.random.default_rng(seed)
    names = [f"g{i}" for i in range(groups)]
    left = pd.DataFrame({"t": np.arange(n), "g": rng.choice(names, n)})
    right = pd.DataFrame({"t": np.arange(n), "g": rng.choice(names, n), "x": np.arange(n) * 1.0})
    ld, rd = dd.from_pandas(left, npartitions=parts), dd.from_pandas(right, npartitions=parts)
    ld["g"], rd["g"] = ld["g"].astype("category"), rd["g"].astype("category")
    with dask.config.set(scheduler="synchronous"):
        alone = merge_asof(ld, rd, on="t", by="g", device="cpu").compute()
    (got,) = compute(threads, lambda: [merge_asof(ld, rd, on="t", by="g", device="cpu")])
    assert list(got["g"].cat.categories) == list(alone["g"].cat.categories)
    assert "__UNKNOWN_CATEGORIES__" not in list(got["g"].cat.categories)
    want = pd.merge_asof(
        left.astype({"g": "category"}), right.astype({"g": "category"}), on="t", by="g"
    )
    pd.testing.assert_frame_equal(got.reset_index(drop=True), alone.reset_index(drop=True))
    assert got["x"].tolist() == pytest.approx(want["x"].tolist(), nan_ok=True)


def test_the_hash_method_keeps_the_categories_dtype_under_a_client(threads):
    """distributed's p2p shuffle, which the hash method took under a client, gave text
    categories back as `str`, where its meta and pandas say `string`."""
    rng = np.random.default_rng(3)
    left = pd.DataFrame({"t": np.sort(rng.integers(0, 500, 300)), "g": rng.choice(GROUPS, 300)})
    right = pd.DataFrame(
        {
            "t": np.sort(rng.integers(0, 500, 400)),
            "g": rng.choice(GROUPS, 400),
            "c": rng.choice(["p", "q"], 400),
        }
    )
    ld, rd = dd.from_pandas(left, npartitions=4), dd.from_pandas(right, npartitions=5)
    ld = ld.assign(g=ld["g"].astype("category"))
    rd = rd.assign(g=rd["g"].astype("category"), c=rd["c"].astype("category"))

    def join():
        return merge_asof(ld, rd, on="t", by="g", method="hash", device="cpu")

    (got,) = compute(threads, lambda: [join()])
    out = join()
    want = pd.merge_asof(ld.compute(), rd.compute(), on="t", by="g")
    for column in ("g", "c"):
        kinds = {str(frame[column].dtype.categories.dtype) for frame in (got, out._meta, want)}
        assert len(kinds) == 1, (column, kinds)
    assert got["c"].astype(object).tolist() == want["c"].astype(object).tolist()


@pytest.mark.parametrize(
    ("left_values", "right_values"),
    [
        ([1, 2, 3], [1.0, 2.0, 3.0]),
        ([True, False, True], [1, 0, 1]),
        ([Decimal(1), Decimal("2.0"), Decimal(3)], [1, 2, 3]),
        ([-0.0, 1.5, "x"], [0.0, 1.5, "x"]),
    ],
    ids=["int-float", "bool-int", "decimal-int", "signed-zero-and-text"],
)
def test_the_hash_method_groups_equal_objects_of_other_types_as_pandas_does(
    left_values, right_values
):
    """An object by-column's 1 and 1.0 (True and 1, ...) are one group to pandas; the hash
    method hashed them by their text and sent them to different partitions: no match."""
    left = pd.DataFrame({"t": np.arange(6), "b": pd.Series(left_values * 2, dtype=object)})
    right = pd.DataFrame(
        {"t": np.arange(6), "b": pd.Series(right_values * 2, dtype=object), "y": np.arange(6.0)}
    )
    want = pd.merge_asof(left, right, on="t", by="b")
    with dask.config.set({"dataframe.convert-string": False, "scheduler": "synchronous"}):
        got = merge_asof(
            dd.from_pandas(left, npartitions=2, sort=False),
            dd.from_pandas(right, npartitions=3, sort=False),
            on="t",
            by="b",
            method="hash",
            device="cpu",
        ).compute()
    assert got["y"].tolist() == want["y"].tolist() == list(np.arange(6.0))


@pytest.mark.parametrize("side", ["left", "right"])
def test_the_hash_method_refuses_a_column_named_as_its_own_tags(side):
    """A column named as one of the hash method's tags failed inside the graph ("cannot
    insert ..., already exists", or a KeyError of columns renamed past it)."""
    left, right = market(4)
    frames = {"left": left, "right": right}
    frames[side] = frames[side].assign(__asofgpu_group_hash=1)
    with pytest.raises(
        ValueError,
        match="the hash method tags the rows with columns of its own, and a column is named "
        "'__asofgpu_group_hash', as one of them: rename it, or use method='broadcast'",
    ):
        merge_asof(even(frames["left"], 2), even(frames["right"], 2), on="t", by="g", method="hash")
    ld, rd = even(frames["left"], 2), even(frames["right"], 2)
    with dask.config.set(scheduler="synchronous"):
        got = merge_asof(ld, rd, on="t", by="g", method="time", device="cpu").compute()
    assert_matches(got, expected_for(ld, rd, on="t", by="g"))


@pytest.mark.parametrize(
    ("one", "other"),
    [
        (1, 1.0),
        (True, 1),
        (np.True_, True),
        (np.int64(3), 3.0),
        (Decimal("2.5"), 2.5),
        (-0.0, 0.0),
        (Decimal(10**400), 10**400),
        (Decimal("Infinity"), float("inf")),
    ],
)
def test_object_values_pandas_takes_as_equal_hash_alike(one, other):
    """Where the hash method sends a row depends on its by-values' hash alone: values pandas'
    by takes as equal must hash alike, whatever else shares their partition column."""
    from asofgpu.dask import _group_hash

    assert one == other
    for company in ([], ["x"], [2.5]):  # all numbers, text beside them
        left = pd.DataFrame({"b": pd.Series([one, *company], dtype=object)})
        right = pd.DataFrame({"b": pd.Series([*company, other], dtype=object)})
        assert _group_hash(left, ("b",))[0] == _group_hash(right, ("b",))[-1]


def test_known_divisions_are_read_as_dask_cuts_them_not_by_npartitions():
    """dask's repartition(npartitions=7) of an index of two values reports 7 partitions, and
    cuts 2 (its divisions and its tasks): the spans are the divisions'."""
    left = pd.DataFrame({"lid": [0, 1]}, index=pd.Index([0, 9], name="t"))
    right = pd.DataFrame({"x": [0.0, 1.0]}, index=pd.Index([3, 5], name="t"))
    rd = dd.from_pandas(right, npartitions=2).repartition(npartitions=7)
    options = dict(left_index=True, right_index=True, direction="forward")
    with dask.config.set(scheduler="synchronous"):
        want = pd.merge_asof(left, rd.compute(), **options)
        got = merge_asof(
            dd.from_pandas(left, npartitions=1), rd, method="time", device="cpu", **options
        )
        pd.testing.assert_frame_equal(got.compute(), want)


@pytest.mark.parametrize("method", ["time", "hash", "broadcast"])
@pytest.mark.parametrize("read", ["both", "left", "right"])
def test_parquet_partitions_are_joined_as_the_reader_cuts_them(tmp_path, method, read):
    """dask fuses a parquet reader's partitions when it reads few of their columns: the key
    column alone of four files came in two partitions, the frame in four. The time method
    paired those spans with the frame's partitions: an error with both sides read from
    parquet (the README's own example), wrong rows with the left only, silently."""
    rng = np.random.default_rng(3)
    n = 40
    trades = pd.DataFrame(
        {
            "time": np.sort(rng.integers(0, 400, 4 * n)),
            "ticker": rng.choice(["A", "B"], 4 * n),
            "qty": rng.integers(1, 9, 4 * n),
            "note": rng.random(4 * n),
        }
    )
    quotes = pd.DataFrame(
        {
            "time": np.sort(rng.integers(0, 400, 4 * n)),
            "ticker": rng.choice(["A", "B"], 4 * n),
            "bid": rng.random(4 * n),
            "ask": rng.random(4 * n),
        }
    )
    sides = {}
    for name, frame in (("left", trades), ("right", quotes)):
        if read in (name, "both"):
            (tmp_path / name).mkdir()
            for i in range(4):
                frame.iloc[i * n : (i + 1) * n].to_parquet(tmp_path / name / f"{i}.parquet")
            sides[name] = dd.read_parquet(tmp_path / name)
        else:
            sides[name] = dd.from_pandas(frame, npartitions=4, sort=False)
    got = merge_asof(
        sides["left"], sides["right"], on="time", by="ticker", method=method, device="cpu"
    )
    with dask.config.set(scheduler="synchronous"):
        got = got.compute().reset_index(drop=True)
    want = pd.merge_asof(trades, quotes, on="time", by="ticker")
    pd.testing.assert_series_equal(got["bid"], want["bid"])
    pd.testing.assert_series_equal(got["qty"], want["qty"])


# --------------------------------------------------------------------------- errors


def small():
    left, right = market(14, n_left=10, n_right=10)
    return even(left, 2), even(right, 2)


def test_unknown_strategy():
    with pytest.raises(
        ValueError, match="method must be one of 'auto', 'time', 'hash', 'broadcast', got 'fast'"
    ):
        merge_asof(*small(), on="t", method="fast")


def test_unknown_device():
    with pytest.raises(ValueError, match="device must be one of"):
        merge_asof(*small(), on="t", device="tpu")


def test_inputs_must_be_dask_frames():
    left, right = market(15)
    with pytest.raises(
        TypeError,
        match="left must be a dask DataFrame or a named dask Series "
        r"\(dask.dataframe.from_pandas converts a pandas one\), "
        "got pandas.DataFrame",
    ):
        merge_asof(left, even(right, 2), on="t")


def test_unnamed_series_as_pandas_says():
    left, right = small()
    with pytest.raises(ValueError, match="Cannot merge a Series without a name"):
        merge_asof(left, right["t"].rename(None), on="t")


def test_keys_must_be_labels():
    left, right = small()
    with pytest.raises(
        ValueError, match="left_on must be column labels in asofgpu.dask, got a ndarray"
    ):
        merge_asof(left, right, left_on=np.arange(10), right_on="t")


def test_index_level_keys_are_refused():
    left, right = small()
    with pytest.raises(
        ValueError,
        match="right_on must name a column of right in "
        "asofgpu.dask .index levels are not supported",
    ):
        merge_asof(left, right.set_index("t", sorted=True), left_on="t", right_on="t")


def test_pandas_errors_come_before_anything_runs():
    left, right = small()
    with pytest.raises(MergeError, match="direction invalid: sideways"):
        merge_asof(left, right, on="t", direction="sideways")
    with pytest.raises(MergeError, match=NEGATIVE_TOLERANCE):
        merge_asof(left, right, on="t", tolerance=-1)
    with pytest.raises(MergeError, match="incompatible merge keys"):
        merge_asof(left, right.astype({"t": "float64"}), on="t")


def test_hash_needs_by():
    with pytest.raises(
        ValueError, match="method='hash' partitions both sides on the by keys: pass by"
    ):
        merge_asof(*small(), on="t", method="hash")


def test_hash_joins_on_columns_only():
    left, right = small()
    with pytest.raises(
        ValueError,
        match="method='hash' joins on columns: with left_index "
        "and right_index use method='time' or "
        "'broadcast'",
    ):
        merge_asof(
            left.set_index("t", sorted=True),
            right.set_index("t", sorted=True),
            left_index=True,
            right_index=True,
            by="g",
            method="hash",
        )


def test_an_index_key_on_one_side_only_is_refused():
    left, right = small()
    with pytest.raises(
        ValueError, match="left_index and right_index must be given together in asofgpu.dask"
    ):
        merge_asof(left.set_index("t", sorted=True), right, left_index=True, right_on="t")


def test_time_needs_sorted_inputs():
    left, right = shuffled(16)
    sorted_l, sorted_r = small()
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(
            ValueError,
            match=r"^left keys must be sorted \(across partitions "
            r"too\): with inputs out of order, asofgpu.dask "
            r"needs method='hash' or method='broadcast'$",
        ):
            merge_asof(left, sorted_r, on="t", by="g", method="time")
        with pytest.raises(ValueError, match="^right keys must be sorted"):
            merge_asof(sorted_l, right, on="t", by="g", method="time")
        with pytest.raises(
            ValueError,
            match=r"^left keys must be sorted .* needs by= \(method='hash'\) or "
            r"method='broadcast'$",
        ):
            merge_asof(left, right, on="t")  # auto: no by, so no hash strategy
        # Index keys: the hash method joins on columns, by= or not.
        with pytest.raises(
            ValueError, match=r"^left keys must be sorted .* needs method='broadcast'$"
        ):
            merge_asof(
                left.set_index("t", sort=False),
                right.set_index("t", sort=False),
                left_index=True,
                right_index=True,
                by="g",
            )


def test_partitions_in_the_wrong_order():
    left, right = market(17)
    backwards = cut(left, [0, 25, 50]).partitions[[1, 0]]
    with (
        dask.config.set(scheduler="synchronous"),
        pytest.raises(ValueError, match="^left keys must be sorted"),
    ):
        merge_asof(backwards, even(right, 2), on="t", by="g", method="time")


@pytest.mark.parametrize("method", ["auto", "time"])
@pytest.mark.parametrize(
    ("picked", "divisions", "want"),
    [
        ([2, 0, 1], (5, 1, 3, 5), [2, 3, 0, 1, 1, 2]),
        ([0, 0], (1, 1, 3), [0, 1, 0, 1]),
        ([0, 1, 1], (1, 3, 3, 5), [0, 1, 1, 2, 1, 2]),
    ],
)
def test_index_partitions_in_the_wrong_order_with_known_divisions(method, picked, divisions, want):
    """dask keeps divisions "known" for partitions picked out of order or twice: taken as
    spans, the left joined wrong rows silently (auto, and time where it did not blame the
    right side)."""
    left = pd.DataFrame({"lid": range(6)}, index=pd.Index([1, 2, 3, 4, 5, 6], name="t"))
    right = pd.DataFrame({"rid": range(4)}, index=pd.Index([0, 2, 4, 6], name="t"))
    shuffled = dd.from_pandas(left, npartitions=3, sort=True).partitions[picked]
    assert shuffled.known_divisions and shuffled.divisions == divisions
    with (
        dask.config.set(scheduler="synchronous"),
        pytest.raises(ValueError, match="^left keys must be sorted \\(across partitions too\\)"),
    ):
        merge_asof(
            shuffled,
            dd.from_pandas(right, npartitions=2, sort=True),
            left_index=True,
            right_index=True,
            method=method,
        ).compute()
    # the broadcast method joins them as pandas does the concatenated partitions
    with dask.config.set(scheduler="synchronous"):
        got = merge_asof(
            shuffled,
            dd.from_pandas(right, npartitions=2, sort=True),
            left_index=True,
            right_index=True,
            method="broadcast",
        ).compute()
    assert got["rid"].tolist() == want


def test_null_keys_as_pandas_says():
    left, right = market(18)
    lnull = left.astype({"t": "float64"})
    lnull.loc[3, "t"] = np.nan
    rnull = right.astype({"t": "float64"})
    rnull.loc[5, "t"] = np.nan
    lf, rf = even(left.astype({"t": "float64"}), 2), even(right.astype({"t": "float64"}), 2)
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(ValueError, match="Merge keys contain null values on left side"):
            merge_asof(even(lnull, 2), rf, on="t", by="g", method="time")
        with pytest.raises(ValueError, match="Merge keys contain null values on right side"):
            merge_asof(lf, even(rnull, 2), on="t", by="g", method="broadcast").compute()
        with pytest.raises(ValueError, match="Merge keys contain null values on right side"):
            merge_asof(lf, even(rnull, 2), on="t", by="g", method="hash").compute()


@pytest.mark.parametrize("scheduler", ["synchronous", "threads"])
def test_bad_keys_on_both_sides_are_reported_in_pandas_order(scheduler):
    """pandas checks the left key (nulls, then order) before the right one. The key pass
    raised from whichever partition's task failed first: the right side, or the other
    problem, from run to run."""
    both_null = (
        pd.DataFrame({"t": [1.0, 2.0, np.nan, 4.0], "g": list("abab")}),
        pd.DataFrame({"t": [0.0, np.nan, 2.0, 3.0], "g": list("abab"), "x": [1, 2, 3, 4]}),
        {"by": "g"},
    )
    left_unsorted = (
        pd.DataFrame({"t": [4.0, 3.0, 2.0, 1.0]}),
        pd.DataFrame({"t": [0.0, np.nan, 2.0, 3.0], "x": [1, 2, 3, 4]}),
        {},
    )
    for left, right, options in (both_null, left_unsorted):
        with pytest.raises(ValueError) as expected:
            pd.merge_asof(left, right, on="t", **options)
        for _ in range(5):
            with dask.config.set(scheduler=scheduler), pytest.raises(ValueError) as ours:
                merge_asof(
                    dd.from_pandas(left, npartitions=2, sort=False),
                    dd.from_pandas(right, npartitions=2, sort=False),
                    on="t",
                    device="cpu",
                    **options,
                )
            assert str(ours.value).startswith(str(expected.value))


@pytest.mark.parametrize("left_partitions", [1, 2])
def test_the_broadcast_method_blames_a_partitions_own_null_keys_before_the_right_sides(
    left_partitions,
):
    """The right side, sorted in a task of its own, raised for its nulls before any left
    partition looked at its key: pandas blames the left's nulls first. (Where only some
    left partitions hold nulls, the first task to fail says which side.)"""
    left = pd.DataFrame({"t": [1.0, np.nan, 3.0, np.nan]})
    right = pd.DataFrame({"t": [1.0, 2.0, np.nan, 5.0], "x": [1, 2, 3, 4]})
    with pytest.raises(ValueError, match="Merge keys contain null values on left side"):
        pd.merge_asof(left, right, on="t")
    lparts = dd.from_pandas(left, npartitions=left_partitions, sort=False)
    parts = [lparts.get_partition(i).compute() for i in range(left_partitions)]
    assert all(bool(part["t"].isna().any()) for part in parts)  # every task finds a left null
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(ValueError, match="Merge keys contain null values on left side"):
            merge_asof(lparts, dd.from_pandas(right, npartitions=1), on="t", device="cpu").compute()
        fine = dd.from_pandas(left.fillna(2.0), npartitions=left_partitions, sort=False)
        with pytest.raises(ValueError, match="Merge keys contain null values on right side"):
            merge_asof(fine, dd.from_pandas(right, npartitions=1), on="t", device="cpu").compute()


def test_the_old_name_of_method_still_works_with_a_deprecation_warning():
    left, right = small()
    expected = merge_asof(left, right, on="t", method="broadcast", device="cpu").compute()
    with pytest.warns(DeprecationWarning, match=r"merge_asof's strategy= is now method="):
        got = merge_asof(left, right, on="t", strategy="broadcast", device="cpu").compute()
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    with (
        pytest.warns(DeprecationWarning),
        pytest.raises(
            ValueError,
            match="strategy must be one of 'auto', 'time', 'hash', 'broadcast', got 'fast'",
        ),
    ):
        merge_asof(left, right, on="t", strategy="fast", device="cpu")
    with (
        pytest.warns(DeprecationWarning),
        pytest.raises(
            TypeError, match=r"pass method= alone .*, got method='hash' and strategy='time'"
        ),
    ):
        merge_asof(left, right, on="t", method="hash", strategy="time", device="cpu")


# --------------------------------------------------------------------------- calendar tolerances


@pytest.mark.parametrize("zone", [None, "Europe/Amsterdam"])
def test_a_date_offset_tolerance_measures_each_partition_by_the_calendar(threads, zone):
    """pandas refuses a DateOffset; asofgpu.pandas measures each key's reach by pandas'
    calendar arithmetic, and the dask join, cut into partitions whose carries are pruned
    by those reaches, must give the same rows. Days span month ends of a leap year and, with
    a zone, the autumn clock change."""
    from asofgpu.pandas import merge_asof as pandas_merge_asof

    left, right = market(21, n_left=60, n_right=40, span=24 * 200)
    for frame in (left, right):
        stamps = pd.Timestamp("2024-01-20") + pd.to_timedelta(frame["t"], unit="h")
        frame["t"] = stamps.dt.tz_localize(zone) if zone else stamps
    offset = pd.DateOffset(months=1)
    jobs = [
        (even(left, 4), even(right, 3), dict(on="t", by="g", method=m, direction=d))
        for m in ("time", "broadcast", "hash")
        for d in DIRECTIONS
    ]

    def build():
        return [
            merge_asof(lf, rf, tolerance=offset, device="cpu", **kw).to_delayed()
            for lf, rf, kw in jobs
        ]

    for (lf, rf, kw), parts in zip(jobs, compute(threads, build), strict=True):
        kw = {k: v for k, v in kw.items() if k != "method"}
        lp, rp = dask.compute(lf, rf, scheduler="synchronous")  # dask's dtypes
        want = pandas_merge_asof(lp, rp, tolerance=offset, device="cpu", **kw)
        assert_matches(pd.concat(parts).reset_index(drop=True), want)


def test_a_date_offset_prunes_carries_a_day_beyond_its_reach():
    from asofgpu.dask import _shift

    month = pd.DateOffset(months=1)
    assert _shift(pd.Timestamp("2024-03-31"), month, -1) == pd.Timestamp("2024-02-28")
    assert _shift(pd.Timestamp("2024-01-31"), month, +1) == pd.Timestamp("2024-03-01")
    assert (
        _shift(pd.Timestamp("2262-04-01").as_unit("ns"), month, +1) is None
    )  # past the range: no pruning


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_a_date_offset_bound_in_a_clock_change_gap_is_refused_as_asofgpu_pandas_refuses_it(
    direction,
):
    """3 days 5 hours back from 2024-03-13 07:00 in New York is a wall time that does not
    exist: the carries' pruning raised pytz's own error under pandas 2, at the call; the
    join refuses it (MergeError) where it reads that bound, and a forward one joins."""
    keys = pd.DatetimeIndex(["2024-03-13 07:00", "2024-03-14 07:00"]).as_unit("ns")
    left = pd.DataFrame({"t": keys.tz_localize("US/Eastern"), "g": "a"})
    right = pd.DataFrame({"t": left["t"] - pd.Timedelta("1h"), "g": "a", "v": [1, 2]})
    offset = pd.DateOffset(days=3, hours=5)
    options = dict(on="t", by="g", tolerance=offset, direction=direction, device="cpu")
    if direction == "forward":
        got = merge_asof(even(left, 2), even(right, 2), method="time", **options)
        assert got.compute(scheduler="synchronous")["v"].fillna(-1).tolist() == [2, -1]
        return
    with pytest.raises(MergeError, match="cannot be applied to every left key: 2024-03-10 02"):
        merge_asof(even(left, 2), even(right, 2), method="time", **options).compute(
            scheduler="synchronous"
        )


def test_a_date_offset_that_moves_every_date_back_is_refused_at_the_call():
    """asofgpu.pandas refuses it on any data; the dask call had returned, and the compute
    raised. One of mixed signs depends on the dates and the direction: the partitions' keys
    decide it, and a backward join never reads the reach ahead."""
    left, right = market(23)
    stamps = pd.Timestamp("2024-01-31") + pd.to_timedelta(left["t"], unit="D")
    left["t"], right["t"] = (
        stamps,
        pd.Timestamp("2024-01-31") + pd.to_timedelta(right["t"], unit="D"),
    )
    lf, rf = even(left, 2), even(right, 2)
    for offset in (pd.DateOffset(months=-1), pd.offsets.MonthEnd(-1), pd.offsets.Hour(-3)):
        with pytest.raises(MergeError, match=f"{NEGATIVE_TOLERANCE}, got <"):
            merge_asof(lf, rf, on="t", by="g", tolerance=offset, device="cpu")
    mixed = pd.DateOffset(months=1, days=-30)  # ahead from February: 1 month < 30 days
    ahead = merge_asof(lf, rf, on="t", by="g", tolerance=mixed, direction="nearest")
    with pytest.raises(MergeError, match=NEGATIVE_TOLERANCE):
        ahead.compute(scheduler="synchronous")
    back = merge_asof(lf, rf, on="t", by="g", tolerance=mixed, device="cpu")
    whole = agpd.merge_asof(left, right, on="t", by="g", tolerance=mixed, device="cpu")
    got = back.compute(scheduler="synchronous").reset_index(drop=True)
    pd.testing.assert_series_equal(got["rid"], whole["rid"])  # (dask makes text pyarrow's)
    assert 0 < got["rid"].isna().sum() < len(got)  # the reach back (a day or two) cut some


def test_a_column_of_tolerances_is_refused_by_name():
    left, right = market(22)
    with pytest.raises(ValueError, match="tolerance: a column of tolerances cannot follow"):
        merge_asof(even(left, 2), even(right, 2), on="t", tolerance=np.ones(len(left)))


@pytest.mark.parametrize("by", [None, "g"])
def test_a_categorical_on_key_joins_by_its_values_as_asofgpu_pandas_does(by):
    """A categorical on key whose categories are not in value order: the time method took
    each partition's first and last values as its span while pandas' order check follows
    the categories, so the spans were inverted and every left row lost its match (auto took
    it too where the partitions passed). It goes by broadcast, or hash with by, as
    ``asofgpu.pandas`` joins: by values; method="time" is refused by name."""
    import asofgpu.pandas as ap

    cats = [3, 2, 1, 0]  # the categories in reverse value order
    left = pd.DataFrame(
        {"t": pd.Categorical([3, 2, 1], categories=cats), "g": ["a"] * 3, "lid": [0, 1, 2]}
    )
    right = pd.DataFrame(
        {"t": pd.Categorical([3, 1, 0], categories=cats), "g": ["a"] * 3, "rid": [10, 11, 12]}
    )
    expected = ap.merge_asof(left, right, on="t", by=by, device="cpu")
    assert expected["rid"].tolist() == [10, 11, 11]
    # two partitions a side; one of them empty
    for left_bounds, right_bounds in (([0, 1, 3], [0, 2, 3]), ([0, 0, 3], [0, 3, 3])):
        got = merge_asof(
            cut(left, left_bounds), cut(right, right_bounds), on="t", by=by, device="cpu"
        )
        got = got.compute(scheduler="synchronous")
        assert list(got.columns) == list(expected.columns)
        assert got["lid"].tolist() == [0, 1, 2] and got["rid"].tolist() == [10, 11, 11]
    with pytest.raises(ValueError, match="^method='time' cannot split a categorical on key"):
        merge_asof(cut(left, [0, 1, 3]), cut(right, [0, 2, 3]), on="t", by=by, method="time")
    # as the index (which the hash method cannot join on: broadcast, by or not)
    indexed = merge_asof(
        cut(left.set_index("t"), [0, 1, 3]),
        cut(right.set_index("t"), [0, 2, 3]),
        left_index=True,
        right_index=True,
        by=by,
        device="cpu",
    )
    assert indexed.compute(scheduler="synchronous")["rid"].tolist() == [10, 11, 11]
