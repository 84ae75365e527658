"""Hypothesis properties of the gather map (docs/architecture.md, sections 3 and 4).

(a) random inputs agree with the oracle, for every option (presorted and ambiguous included);
(b) a grouped join equals the ungrouped joins of each group, row numbers translated back;
(c) a prepared AsofJoin reused for several left batches equals one-shot joins;
(d) forward equals backward on reflected keys (an order-reversing bijection of the key type
    that never overflows) with the right rows reversed; nearest likewise, comparing keys;
(e) shuffling the right (or left) side changes the map only by the permutation, up to the
    choice among rows that share (group, key, tie-break).

Every property runs on each backend through the ``device`` fixture, with most examples on
the cpu backend: the python backend and the CUDA simulator are slow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pytest
from conftest import key_column, to_host
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import NO_MATCH, oracle

import asofgpu as ag
from asofgpu._backend import cudasim_enabled

SIM = cudasim_enabled()


def examples(device: str, n: int) -> int:
    """Examples for one property on one backend: ``n`` on the cpu backend."""
    if device == "cpu":
        return n
    if device == "python":
        return max(5, n // 8)
    return max(3, n // 40) if SIM else n // 2  # cuda: the simulator, or a real GPU


def run(device: str, n: int, strategy, check) -> None:
    """Run ``check`` as a hypothesis property with a per-backend example count."""
    settings(max_examples=examples(device, n), deadline=None)(given(strategy)(check))()


# --------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class Kind:
    name: str
    arrow: pa.DataType
    dtype: type
    values: st.SearchStrategy

    @property
    def is_float(self) -> bool:
        return pa.types.is_floating(self.arrow)


I64, U64, I32 = (-(2**63), 2**63 - 1), (0, 2**64 - 1), (-(2**31), 2**31 - 1)


def _ints(lo, hi):
    edges = [lo, lo + 1, hi - 1, hi] + ([2**63 - 1, 2**63, 2**63 + 1] if lo == 0 else [-1, 0])
    return st.one_of(st.integers(max(lo, -3), 6), st.integers(lo, hi), st.sampled_from(edges))


KINDS = {
    "int64": Kind("int64", pa.int64(), np.int64, _ints(*I64)),
    "uint64": Kind("uint64", pa.uint64(), np.uint64, _ints(*U64)),
    "int32": Kind("int32", pa.int32(), np.int32, _ints(*I32)),
    # floats(): NaN (any sign and payload), +-inf, -0.0, subnormals, the largest finite values
    "float64": Kind(
        "float64", pa.float64(), np.float64, st.one_of(st.integers(-3, 6).map(float), st.floats())
    ),
    "float32": Kind(
        "float32",
        pa.float32(),
        np.float32,
        st.one_of(st.integers(-3, 6).map(float), st.floats(width=32)),
    ),
}


@dataclass(frozen=True)
class Inputs:
    kind: Kind
    left: list
    right: list
    left_by: list | None  # [[row values of column 0], [column 1]] or None
    right_by: list | None
    by_types: tuple
    tie: list | None
    left_form: str
    right_form: str

    def groups(self, side):
        cols = self.left_by if side == "left" else self.right_by
        return None if cols is None else [tuple(row) for row in zip(*cols, strict=True)]


BY_TYPES = [
    (pa.string(), st.sampled_from(["a", "b", "c", None])),
    (pa.int64(), st.sampled_from([0, 1, None])),
    (pa.float64(), st.sampled_from([0.0, -0.0, math.nan, 1.5, None])),
]


@st.composite
def join_inputs(draw, kinds=tuple(KINDS), max_rows=25, by=True, tie=True, nulls=True):
    kind = KINDS[draw(st.sampled_from(kinds))]
    pool = draw(st.lists(kind.values, min_size=1, max_size=6))  # few keys: duplicates
    key = st.sampled_from(pool + [None] if nulls else pool)
    left = draw(st.lists(key, max_size=max_rows))
    right = draw(st.lists(key, max_size=max_rows))
    by_types: tuple = ()
    left_by = right_by = None
    n_by = draw(st.integers(0, 2)) if by else 0
    if n_by:
        chosen = draw(
            st.lists(
                st.sampled_from(range(len(BY_TYPES))), min_size=n_by, max_size=n_by, unique=True
            )
        )
        by_types = tuple(BY_TYPES[c][0] for c in chosen)

        def columns(n):
            return [draw(st.lists(BY_TYPES[c][1], min_size=n, max_size=n)) for c in chosen]

        left_by, right_by = columns(len(left)), columns(len(right))
    ties = None
    if tie and draw(st.booleans()):
        ties = draw(
            st.lists(
                st.sampled_from([None, -2, -1, 0, 1, 2]), min_size=len(right), max_size=len(right)
            )
        )
    forms = st.sampled_from(["numpy", "arrow", "chunked"])
    return Inputs(
        kind,
        [_py(kind, v) for v in left],
        [_py(kind, v) for v in right],
        left_by,
        right_by,
        by_types,
        ties,
        draw(forms),
        draw(forms),
    )


def _py(kind: Kind, v):
    """The Python value the kernel sees (float32 values are exact in float64)."""
    if v is None:
        return None
    return float(kind.dtype(v)) if kind.is_float else int(v)


def columns_of(inp: Inputs):
    """(left_on, right_on, left_by, right_by, tie_break) as the library takes them."""

    def by(cols):
        if cols is None:
            return None
        out = [pa.array(c, type=t) for c, t in zip(cols, inp.by_types, strict=True)]
        return out[0] if len(out) == 1 else out

    tie = None if inp.tie is None else pa.array(inp.tie, type=pa.int64())
    return (
        key_column(inp.kind, inp.left, inp.left_form),
        key_column(inp.kind, inp.right, inp.right_form),
        by(inp.left_by),
        by(inp.right_by),
        tie,
    )


def tolerances(kind: Kind):
    if kind.is_float:  # a float tolerance, exact in float64 (as the kernel compares it)
        return st.one_of(
            st.none(),
            st.just(0.0),
            st.floats(0, 8),
            st.floats(0, math.inf, allow_nan=False),
            st.integers(0, 2**53),
        )
    return st.one_of(
        st.none(),
        st.just(0),
        st.integers(0, 8),
        st.integers(0, 2**65),
        st.sampled_from([2**63 - 1, 2**63, 2**64 - 1, 2**64, math.inf]),
        st.floats(0, 1e20, allow_nan=False),
    )


@st.composite
def join_options(draw, kind: Kind, strategies=("backward", "forward", "nearest")):
    return {
        "strategy": draw(st.sampled_from(strategies)),
        "allow_exact_matches": draw(st.booleans()),
        "tolerance": draw(tolerances(kind)),
        "nearest_tie": draw(st.sampled_from(["forward", "backward"])),
    }


def expected(inp: Inputs, null_equality: str, **opts) -> list:
    return oracle(
        inp.left,
        inp.right,
        inp.groups("left"),
        inp.groups("right"),
        null_equal=null_equality == "equal",
        tie_break=inp.tie,
        **opts,
    )


def host_map(gmap, n_left: int) -> list:
    got = to_host(gmap)
    assert got.dtype == np.int32 and got.shape == (n_left,), (got.dtype, got.shape)
    return got.tolist()


def order_key(v):
    """asofgpu's total order on Python values (None for null): NaN above +inf, -0.0 == 0.0."""
    if v is None:
        return None
    if isinstance(v, float) and math.isnan(v):
        return (1, 0.0)
    return (0, v)


def group_of(row, null_equal: bool):
    """A hashable group, or None for a row that can match nothing (computed here, not by the
    oracle): NaN equals NaN, -0.0 equals 0.0."""
    if row is None:
        return ()
    out = []
    for v in row:
        if v is None and not null_equal:
            return None
        out.append(("null",) if v is None else order_key(v) if isinstance(v, float) else v)
    return tuple(out)


def identity(inp: Inputs, j: int, null_equal: bool):
    """What a match means, without the row number: (group, key, tie-break)."""
    groups = inp.groups("right")
    tie = None if inp.tie is None else inp.tie[j]
    return (
        group_of(None if groups is None else groups[j], null_equal),
        order_key(inp.right[j]),
        tie,
    )


def ambiguous(inp: Inputs, null_equal: bool, gmap: list) -> bool:
    """Whether some matched right row shares (group, key, tie-break) with another row."""
    ids = [
        identity(inp, j, null_equal) if inp.right[j] is not None else None
        for j in range(len(inp.right))
    ]
    return any(j != NO_MATCH and ids.count(ids[j]) > 1 for j in gmap)


def canonical_order(inp: Inputs, null_equal: bool) -> list:
    """Right rows grouped (first appearance; rows of no group last), by key (nulls last), by
    tie-break ascending (nulls first): an order presorted=True must accept."""
    groups = inp.groups("right") or [None] * len(inp.right)
    ties = inp.tie or [None] * len(inp.right)
    blocks: dict = {}
    for g in groups:
        cg = group_of(g, null_equal)
        if cg is not None:
            blocks.setdefault(cg, len(blocks))

    def sort_key(j):
        cg = group_of(groups[j], null_equal)
        k, t = inp.right[j], ties[j]
        return (
            len(blocks) if cg is None else blocks[cg],
            k is None,
            (0, 0) if k is None else order_key(k),
            (0,) if t is None else (1, t),
        )

    return sorted(range(len(inp.right)), key=sort_key)


def take_right(inp: Inputs, rows: list, **changes) -> Inputs:
    """The same inputs with the right side's rows taken in the given order."""
    return replace(
        inp,
        right=[inp.right[j] for j in rows],
        right_by=None if inp.right_by is None else [[c[j] for j in rows] for c in inp.right_by],
        tie=None if inp.tie is None else [inp.tie[j] for j in rows],
        **changes,
    )


# --------------------------------------------------------------------------- (a) the oracle


@st.composite
def oracle_case(draw):
    inp = draw(join_inputs())
    opts = draw(join_options(inp.kind))
    return inp, opts, draw(st.sampled_from(["unequal", "equal"])), draw(st.booleans())


def test_matches_oracle(device):
    def check(case):
        inp, opts, null_equality, raise_ambiguous = case
        left, right, left_by, right_by, tie = columns_of(inp)
        want = expected(inp, null_equality, **opts)
        call = dict(null_equality=null_equality, tie_break=tie, device=device, **opts)
        if raise_ambiguous and ambiguous(inp, null_equality == "equal", want):
            with pytest.raises(ag.AmbiguousMatchError):
                ag.asof_join(left, right, left_by, right_by, ambiguous="raise", **call)
            return
        got = ag.asof_join(
            left, right, left_by, right_by, ambiguous="raise" if raise_ambiguous else "pick", **call
        )
        assert host_map(got, len(inp.left)) == want

    run(device, 300, oracle_case(), check)


def test_presorted_matches_oracle(device):
    """presorted=True on the right side put in a grouped, sorted order: the oracle's map for
    those rows, at the default thresholds (the full check) and with every sort compiled and
    taking the radix path (the one-pass checks of ``AsofJoin._in_group_order`` first)."""
    from asofgpu._backend import walks

    def check(case):
        inp, opts, null_equality, _ = case
        inp = take_right(inp, canonical_order(inp, null_equality == "equal"))
        left, right, left_by, right_by, tie = columns_of(inp)
        want = expected(inp, null_equality, **opts)
        call = dict(null_equality=null_equality, tie_break=tie, presorted=True, device=device)
        got = ag.asof_join(left, right, left_by, right_by, **call, **opts)
        assert host_map(got, len(inp.left)) == want
        with walks.overridden(radix_min_rows=1, interpret_max_rows=0):
            got = ag.AsofJoin(right, right_by, **call).join(left, left_by, **opts)
        assert host_map(got, len(inp.left)) == want

    run(device, 100, oracle_case(), check)


def _sorts_and_scans(monkeypatch) -> list:
    """The names of the cpu backend's key sorts and merge scans from now on, as they run."""
    from asofgpu._backend.cpu import CpuBackend

    calls = []
    for name in ("stable_argsort", "scan"):
        method = getattr(CpuBackend, name)
        monkeypatch.setattr(
            CpuBackend,
            name,
            lambda self, *args, _name=name, _method=method, **kwargs: (
                calls.append(_name) or _method(self, *args, **kwargs)
            ),
        )
    return calls


def test_a_right_side_sorted_by_group_then_key_is_ordered_by_the_group_sort_alone(
    device, monkeypatch
):
    """A right side whose keys ascend within each group (sorted by group, then key: quotes
    kept a file a symbol), with every sort compiled and taking the radix path, prepared
    (without presorted=True) and joined one-shot: the oracle's map; and on the cpu, where
    one pass finds that order, no sort of the keys (only the group sort) and no merge scan,
    which would sort them. The drawn order, which that pass mostly refuses, matches the
    oracle too."""
    from asofgpu._backend import walks

    calls = _sorts_and_scans(monkeypatch)

    def maps(inp, opts, null_equality):
        left, right, left_by, right_by, tie = columns_of(inp)
        call = dict(null_equality=null_equality, tie_break=tie, device=device)
        calls.clear()
        with walks.overridden(radix_min_rows=1, interpret_max_rows=0):
            prepared = ag.AsofJoin(right, right_by, **call).join(left, left_by, **opts)
            one_shot = ag.asof_join(left, right, left_by, right_by, **call, **opts)
        return host_map(prepared, len(inp.left)), host_map(one_shot, len(inp.left))

    def check(case):
        inp, opts, null_equality, _ = case
        want = expected(inp, null_equality, **opts)
        assert maps(inp, opts, null_equality) == (want, want)
        inp = take_right(inp, canonical_order(inp, null_equality == "equal"))
        want = expected(inp, null_equality, **opts)
        assert maps(inp, opts, null_equality) == (want, want)
        if device == "cpu" and inp.right_by and inp.tie is None and None not in inp.right:
            keys = [order_key(k) for k in inp.right]
            # (keys that ascend overall are merge-scanned as they are: no sort either)
            assert calls == ([] if keys != sorted(keys) else ["scan"])

    run(device, 150, oracle_case(), check)


def test_quotes_sorted_by_symbol_at_default_thresholds_are_not_sorted_by_key(monkeypatch):
    """The drawn cases above seldom hold a side this test always does: 40,000 quotes (past
    the radix sort's 32,768) of three symbols whose times interleave, sorted by symbol then
    time. Prepared and one-shot, no sort of the keys and no merge scan; the maps equal the
    presorted=True prepare's, which checks that order in one pass each, not by the full
    check (``_verify_sorted``)."""

    rng = np.random.default_rng(7)
    n = 40_000
    symbols = np.sort(rng.integers(0, 3, n))
    times = np.concatenate([np.sort(rng.integers(0, 10**6, k)) for k in np.bincount(symbols)])
    left_times, left_symbols = rng.integers(0, 10**6, 5_000), rng.integers(0, 3, 5_000)
    calls = _sorts_and_scans(monkeypatch)
    prepared = ag.AsofJoin(times, symbols, device="cpu").join(left_times, left_symbols)
    one_shot = ag.asof_join(left_times, times, left_symbols, symbols, device="cpu")
    assert calls == []
    monkeypatch.setattr(ag.AsofJoin, "_verify_sorted", lambda *_: calls.append("verify"))
    checked = ag.AsofJoin(times, symbols, presorted=True, device="cpu")
    assert calls == []  # the one-pass checks showed the order (AsofJoin._in_group_order)
    want = to_host(checked.join(left_times, left_symbols))
    assert (to_host(prepared) == want).all() and (to_host(one_shot) == want).all()
    assert (want >= 0).sum() > 4_000


def test_quotes_sorted_by_symbol_with_null_symbols_and_times_among_them_are_not_sorted_by_key(
    monkeypatch,
):
    """The 40,000 quotes above with a null symbol or a null time here and there, rows that
    match nothing: the group sort alone still orders the rest (no sort of the keys, no merge
    scan), and the maps equal those of the sort by key, where the one-pass check is off."""
    from asofgpu._backend import walks

    rng = np.random.default_rng(8)
    n = 40_000
    symbols = np.sort(rng.integers(0, 3, n))
    times = np.concatenate([np.sort(rng.integers(0, 10**6, k)) for k in np.bincount(symbols)])
    holes = rng.choice(n, 200, replace=False)
    no_symbol, no_time = np.isin(np.arange(n), holes[:100]), np.isin(np.arange(n), holes[100:])
    times[holes] = rng.integers(0, 10**6, 200)  # out of every order: only their nulls hide it
    right_by = pa.array([f"s{k}" for k in symbols], mask=no_symbol)
    right_on = pa.array(times, mask=no_time)
    left_on, left_by = (
        rng.integers(0, 10**6, 5_000),
        pa.array(rng.choice(["s0", "s1", "s2"], 5_000)),
    )
    calls = _sorts_and_scans(monkeypatch)
    prepared = ag.AsofJoin(right_on, right_by, device="cpu").join(left_on, left_by)
    one_shot = ag.asof_join(left_on, right_on, left_by, right_by, device="cpu")
    assert calls == []
    with walks.overridden(radix_min_rows=n + 1):  # (the check runs where radix sorts run)
        want = to_host(ag.AsofJoin(right_on, right_by, device="cpu").join(left_on, left_by))
    assert calls == ["stable_argsort"]
    assert (to_host(prepared) == want).all() and (to_host(one_shot) == want).all()
    assert (want >= 0).sum() > 4_000


# --------------------------------------------------------------------------- (b) per group


@st.composite
def grouped_case(draw):
    inp = draw(join_inputs().filter(lambda i: i.right_by is not None))
    return inp, draw(join_options(inp.kind)), draw(st.sampled_from(["unequal", "equal"]))


def test_grouped_equals_per_group(device):
    def check(case):
        inp, opts, null_equality = case
        eq = null_equality == "equal"
        left, right, left_by, right_by, tie = columns_of(inp)
        got = host_map(
            ag.asof_join(
                left,
                right,
                left_by,
                right_by,
                null_equality=null_equality,
                tie_break=tie,
                device=device,
                **opts,
            ),
            len(inp.left),
        )
        left_groups = [group_of(g, eq) for g in inp.groups("left")]
        right_groups = [group_of(g, eq) for g in inp.groups("right")]
        want = [NO_MATCH] * len(inp.left)
        for g in {g for g in left_groups if g is not None}:
            rows = [i for i, lg in enumerate(left_groups) if lg == g]
            sub = [j for j, rg in enumerate(right_groups) if rg == g]
            if not sub:
                continue  # a group only on the left matches nothing
            kind = inp.kind
            sub_tie = None if inp.tie is None else pa.array([inp.tie[j] for j in sub], pa.int64())
            gmap = ag.asof_join(
                key_column(kind, [inp.left[i] for i in rows], inp.left_form),
                key_column(kind, [inp.right[j] for j in sub], inp.right_form),
                tie_break=sub_tie,
                device=device,
                **opts,
            )
            for i, j in zip(rows, host_map(gmap, len(rows)), strict=True):
                want[i] = NO_MATCH if j == NO_MATCH else sub[j]
        assert got == want

    run(device, 120, grouped_case(), check)


# --------------------------------------------------------------------------- (c) reuse


@st.composite
def batches_case(draw):
    inp = draw(join_inputs(max_rows=20))
    batches = []
    for _ in range(draw(st.integers(2, 4))):
        batch = draw(join_inputs(kinds=(inp.kind.name,), max_rows=12))
        if inp.right_by is None:
            batch = replace(batch, left_by=None)
        else:  # a left side with the right's by-columns
            n = len(batch.left)
            batch = replace(
                batch,
                left_by=[
                    draw(st.lists(next(s for t, s in BY_TYPES if t == typ), min_size=n, max_size=n))
                    for typ in inp.by_types
                ],
            )
        batches.append(
            (
                batch.left,
                batch.left_by,
                batch.left_form,
                draw(join_options(inp.kind)),
                draw(st.booleans()),
            )
        )
    return inp, draw(st.sampled_from(["unequal", "equal"])), batches


def test_prepared_reuse_equals_one_shot(device):
    def check(case):
        inp, null_equality, batches = case
        _, right, _, right_by, tie = columns_of(inp)
        prepared = ag.AsofJoin(
            right, right_by, null_equality=null_equality, tie_break=tie, device=device
        )
        first = None
        for left_keys, left_by_values, form, opts, raise_ambiguous in batches:
            batch = replace(inp, left=left_keys, left_by=left_by_values, left_form=form)
            left, _, left_by, _, _ = columns_of(batch)
            want = expected(batch, null_equality, **opts)
            one_shot = host_map(
                ag.asof_join(
                    left,
                    right,
                    left_by,
                    right_by,
                    null_equality=null_equality,
                    tie_break=tie,
                    device=device,
                    **opts,
                ),
                len(left_keys),
            )
            if raise_ambiguous:  # also leaves state behind for the next batches
                try:
                    prepared.join(left, left_by, ambiguous="raise", **opts)
                except ag.AmbiguousMatchError:
                    assert ambiguous(batch, null_equality == "equal", want)
                else:
                    assert not ambiguous(batch, null_equality == "equal", want)
            reused = host_map(prepared.join(left, left_by, **opts), len(left_keys))
            assert reused == one_shot == want
            if first is None:
                first = (left, left_by, opts, reused)
        left, left_by, opts, reused = first  # the first batch again, after the others
        assert host_map(prepared.join(left, left_by, **opts), len(reused)) == reused

    run(device, 50, batches_case(), check)


@st.composite
def temporal_case(draw):
    units = ["s", "ms", "us", "ns"]
    values = st.integers(-(10**9), 10**9)
    right_unit = draw(st.sampled_from(units))
    right = draw(st.lists(st.one_of(st.none(), values), max_size=20))
    batches = [
        (
            draw(st.sampled_from(units)),
            draw(st.lists(st.one_of(st.none(), values), max_size=12)),
            draw(st.sampled_from(["backward", "forward", "nearest"])),
            draw(st.one_of(st.none(), st.integers(0, 10**10))),
        )
        for _ in range(draw(st.integers(2, 4)))
    ]
    return right_unit, right, batches


def _timestamps(values, unit):
    arr = np.array([0 if v is None else v for v in values], dtype=f"datetime64[{unit}]")
    return pa.array(arr, mask=np.array([v is None for v in values], dtype=bool))


def test_prepared_reuse_across_units(device):
    """A prepared timestamp right side probed by left batches of other units (the right keys
    are rescaled per unit and cached): each batch equals its one-shot join and the oracle on
    nanoseconds."""
    ns = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}

    def check(case):
        right_unit, right_values, batches = case
        right = _timestamps(right_values, right_unit)
        prepared = ag.AsofJoin(right, device=device)
        for unit, left_values, strategy, tol_ns in batches:
            left = _timestamps(left_values, unit)
            opts = {
                "strategy": strategy,
                "tolerance": None if tol_ns is None else np.timedelta64(tol_ns, "ns"),
            }
            want = oracle(
                [None if v is None else v * ns[unit] for v in left_values],
                [None if v is None else v * ns[right_unit] for v in right_values],
                strategy=strategy,
                tolerance=tol_ns,
            )
            one_shot = host_map(ag.asof_join(left, right, device=device, **opts), len(want))
            assert host_map(prepared.join(left, **opts), len(want)) == one_shot == want

    run(device, 60, temporal_case(), check)


# --------------------------------------------------------------------------- (d) reflection


def reflect(kind: Kind, v):
    """An order-reversing bijection of the key type that never overflows and keeps distances:
    -1 - x on signed ints (int64 min <-> max), max - x on uint64, -x on floats (not NaN)."""
    if v is None:
        return None
    if kind.is_float:
        return -v
    return 2**64 - 1 - v if kind.name == "uint64" else -1 - v


@st.composite
def reflection_case(draw):
    inp = draw(join_inputs())
    if inp.kind.is_float:  # NaN sorts above +inf on both sides of a reflection: leave it out

        def finite(values):
            return [None if v is not None and math.isnan(v) else v for v in values]

        inp = replace(inp, left=finite(inp.left), right=finite(inp.right))
    return inp, draw(join_options(inp.kind)), draw(st.sampled_from(["unequal", "equal"]))


def test_forward_is_backward_reflected(device):
    """A join on reflected keys with the right rows reversed: backward there is forward here
    (row for row, duplicates included), forward is backward, and nearest takes the same key
    with nearest_tie swapped."""
    flip = {"backward": "forward", "forward": "backward", "nearest": "nearest"}
    tie_flip = {"forward": "backward", "backward": "forward"}

    def check(case):
        inp, opts, null_equality = case
        n = len(inp.right)
        mirrored = take_right(inp, list(range(n))[::-1])
        mirrored = replace(
            mirrored,
            left=[reflect(inp.kind, v) for v in inp.left],
            right=[reflect(inp.kind, v) for v in mirrored.right],
        )

        def join(x, **o):
            left, right, left_by, right_by, tie = columns_of(x)
            return host_map(
                ag.asof_join(
                    left,
                    right,
                    left_by,
                    right_by,
                    tie_break=tie,
                    null_equality=null_equality,
                    device=device,
                    **o,
                ),
                len(x.left),
            )

        here = join(inp, **opts)
        there = join(
            mirrored,
            **dict(
                opts, strategy=flip[opts["strategy"]], nearest_tie=tie_flip[opts["nearest_tie"]]
            ),
        )
        there = [NO_MATCH if j == NO_MATCH else n - 1 - j for j in there]  # reversed rows
        if opts["strategy"] != "nearest":
            assert here == there
        else:
            eq = null_equality == "equal"
            assert [None if j == NO_MATCH else identity(inp, j, eq)[:2] for j in here] == [
                None if j == NO_MATCH else identity(inp, j, eq)[:2] for j in there
            ]

    run(device, 200, reflection_case(), check)


# --------------------------------------------------------------------------- (e) input order


@st.composite
def shuffle_case(draw):
    inp = draw(join_inputs())
    return (
        inp,
        draw(join_options(inp.kind)),
        draw(st.sampled_from(["unequal", "equal"])),
        draw(st.permutations(range(len(inp.right)))),
        draw(st.permutations(range(len(inp.left)))),
    )


def test_input_order(device):
    def check(case):
        inp, opts, null_equality, perm, left_perm = case
        eq = null_equality == "equal"

        def join(x):
            left, right, left_by, right_by, tie = columns_of(x)
            return host_map(
                ag.asof_join(
                    left,
                    right,
                    left_by,
                    right_by,
                    tie_break=tie,
                    null_equality=null_equality,
                    device=device,
                    **opts,
                ),
                len(x.left),
            )

        base = join(inp)
        shuffled = [NO_MATCH if j == NO_MATCH else perm[j] for j in join(take_right(inp, perm))]
        assert [j == NO_MATCH for j in shuffled] == [j == NO_MATCH for j in base]
        for j, k in zip(base, shuffled, strict=True):
            if j != NO_MATCH:
                assert identity(inp, j, eq) == identity(inp, k, eq)
                dups = [
                    r
                    for r in range(len(inp.right))
                    if inp.right[r] is not None and identity(inp, r, eq) == identity(inp, j, eq)
                ]
                if len(dups) == 1:  # a unique (group, key, tie-break): the very same row
                    assert j == k

        # shuffling the left side permutes the map
        moved = replace(
            inp,
            left=[inp.left[i] for i in left_perm],
            left_by=None
            if inp.left_by is None
            else [[c[i] for i in left_perm] for c in inp.left_by],
        )
        assert join(moved) == [base[i] for i in left_perm]

    run(device, 150, shuffle_case(), check)
