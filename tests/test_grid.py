"""Grids against the oracle on every backend (docs/architecture.md, sections 3 and 4).

Each test item is one (key type, edge shape) case, one strategy and one backend; inside it,
every combination of allow_exact_matches, tolerance, nearest_tie and null_equality is checked
against ``tests/oracle.py``, and all disagreements are reported together.

The oracle's inputs are Python values (ints as Python ints so that its arithmetic is exact,
floats as Python floats holding exactly what the kernel sees, None for nulls).

The CUDA simulator runs every thread of a launch in Python (about 0.1 s a launch), so under
NUMBA_ENABLE_CUDASIM=1 each item checks a fixed, seeded sample of its combinations; the
samples differ between items, so the pass as a whole still covers every option.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pytest
from conftest import key_column, to_host
from oracle import NO_MATCH, _group, _order, oracle

import asofgpu as ag
from asofgpu._backend import cudasim_enabled

SIM = cudasim_enabled()
SIM_COMBOS = 1  # combinations per item under the simulator
NAN = math.nan
INF = math.inf

assert ag.NO_MATCH == NO_MATCH == -(2**31)


# --------------------------------------------------------------------------- key types


@dataclass(frozen=True)
class Kind:
    name: str
    arrow: pa.DataType
    dtype: type
    lo: object  # smallest finite value
    hi: object  # largest finite value

    @property
    def is_float(self) -> bool:
        return pa.types.is_floating(self.arrow)

    def py(self, v):
        """A Python value exactly as the kernel sees it (None stays None)."""
        if v is None:
            return None
        if self.is_float:
            return float(self.dtype(v))
        v = int(v)
        assert self.lo <= v <= self.hi, (self.name, v)
        return v

    def vals(self, xs):
        return [self.py(x) for x in xs]


F32_MAX = float(np.finfo(np.float32).max)
F64_MAX = float(np.finfo(np.float64).max)
KINDS = {
    "int64": Kind("int64", pa.int64(), np.int64, -(2**63), 2**63 - 1),
    "uint64": Kind("uint64", pa.uint64(), np.uint64, 0, 2**64 - 1),
    "int32": Kind("int32", pa.int32(), np.int32, -(2**31), 2**31 - 1),
    "float64": Kind("float64", pa.float64(), np.float64, -F64_MAX, F64_MAX),
    "float32": Kind("float32", pa.float32(), np.float32, -F32_MAX, F32_MAX),
}


def tolerances(kind: Kind) -> dict:
    if kind.is_float:
        return {"none": None, "zero": 0.0, "small": 1.5, "int_small": 2, "big": 1e308, "inf": INF}
    # 2**63: the boundary of the int64 range's half distance; 2**64: above every distance
    return {
        "none": None,
        "zero": 0,
        "small": 2,
        "float_small": 2.5,
        "half": 2**63,
        "huge": 2**64,
        "inf": INF,
    }


# --------------------------------------------------------------------------- edge shapes


@dataclass
class Case:
    left: list
    right: list
    left_by: list | None = None  # [(arrow type, python values), ...]
    right_by: list | None = None
    tie: tuple | None = None  # (arrow type, python values)

    @property
    def grouped(self) -> bool:
        return self.right_by is not None

    def groups(self, side):
        cols = self.left_by if side == "left" else self.right_by
        if cols is None:
            return None
        return [tuple(row) for row in zip(*[values for _, values in cols], strict=True)]


def by_arrays(cols):
    out = []
    for typ, values in cols:
        if pa.types.is_dictionary(typ):
            # a dictionary not in the rows' order (pandas categories, polars categoricals)
            dictionary = sorted({x for x in values if x is not None}, reverse=True)
            indices = [None if x is None else dictionary.index(x) for x in values]
            out.append(
                pa.DictionaryArray.from_arrays(
                    pa.array(indices, type=typ.index_type), pa.array(dictionary, typ.value_type)
                )
            )
        else:
            out.append(pa.array(values, type=typ))
    return out[0] if len(out) == 1 else out


def probes(k: Kind) -> list:
    """Left keys around the extremes of a type (distances up to the whole range)."""
    if k.is_float:
        return k.vals([k.lo, -1.0, -0.0, 0.0, 1.0, k.hi, k.lo / 2, k.hi / 2, 1e-300])
    if k.lo == 0:  # uint64
        return k.vals([0, 1, 2**62, 2**63 - 1, 2**63, 2**63 + 1, 2**64 - 2, 2**64 - 1])
    return k.vals([k.lo, k.lo + 1, k.lo // 2, -1, 0, 1, k.hi // 2, k.hi - 1, k.hi])


def _s(values):
    return (pa.string(), values)


def shapes(k: Kind) -> dict:
    v = k.vals
    s = {
        "empty_left": Case([], v([1, 3, 3, 5])),
        "empty_right": Case(v([0, 1, 3, 6]), []),
        "both_empty": Case([], []),
        "one_row_right": Case(v([0, 1, 2, 3, 4]), v([2])),
        "one_row_left": Case(v([3]), v([1, 3, 3, 5, 7])),
        "one_row_each": Case(v([4]), v([2])),
        "one_row_each_equal": Case(v([2]), v([2])),
        "all_duplicate": Case(v([2, 3, 4, 3, 0]), v([3] * 6)),
        "duplicates_unsorted": Case(v(range(11)), v([5, 1, 5, 3, 3, 9, 1, 5, 7, 7])),
        "nearest_ties": Case(v([2, 4, 6, 0, 8, 3]), v([1, 3, 3, 5, 5, 7, 1, 7])),
        "extremes_only": Case(probes(k), [k.lo, k.hi]),
        "extremes_mixed": Case(probes(k), [k.hi, k.lo, k.lo, k.py(5), k.hi, k.py(1)]),
        "null_keys": Case(v([None, 1, 3, None, 5, 2]), v([2, None, 3, None, 4, 2])),
        "all_null_right": Case(v([1, 2, None]), [None, None]),
        "all_null_left": Case([None, None], v([1, 2])),
        "groups_one_side": Case(
            v([1, 2, 3, 4, 5, 6]),
            v([0, 2, 4, 3, 5, 1]),
            [_s(["a", "b", "c", "a", "d", "b"])],
            [_s(["a", "b", "e", "b", "a", "e"])],
        ),
        "null_by": Case(
            v([2, 2, 2, 4, 4, 6]),
            v([1, 1, 3, 3, 5, 5, 1]),
            [_s(["a", None, "b", None, "a", None])],
            [_s(["a", None, None, "b", "a", None, "b"])],
        ),
        "null_by_left_only": Case(
            v([2, 2, 4]), v([1, 3, 1]), [_s([None, "a", None])], [_s(["a", "a", "b"])]
        ),
        "null_by_right_only": Case(
            v([2, 2, 4]), v([1, 3, 1]), [_s(["a", "b", "a"])], [_s([None, "a", None])]
        ),
        "multi_by": Case(
            v([3, 3, 3, 3, 3, 3, 6]),
            v([1, 2, 2, 4, 5, 0, 1, 2, 7]),
            [
                (pa.large_string(), ["x", "x", "y", None, "x", None, "y"]),
                (pa.int64(), [1, 2, 1, 1, None, None, 1]),
            ],
            [
                _s(["x", "x", "y", None, "x", None, "x", "y", None]),
                (pa.int64(), [1, 2, 1, 1, None, None, 1, 1, None]),
            ],
        ),
        "by_float": Case(
            v([2, 2, 2, 2, 2]),
            v([1, 1, 1, 1, 3, 0]),
            [(pa.float64(), [NAN, -0.0, 0.0, None, 1.5])],
            [(pa.float64(), [0.0, NAN, -0.0, None, NAN, 1.5])],
        ),
        # the right by-column is dictionary-encoded with the dictionary ["b", "a"] (by_arrays)
        "by_dictionary": Case(
            v([2, 2, 2, 5]),
            v([1, 1, 3, 4, 4]),
            [_s(["b", "a", None, "c"])],
            [(pa.dictionary(pa.int32(), pa.string()), ["a", "b", None, "a", "b"])],
        ),
        "tie_break": Case(
            v([0, 1, 2, 3, 4, 5, 6]),
            v([3, 1, 3, 3, 5, 1, 3, 5]),
            tie=(pa.int64(), [2, None, None, 2, 1, None, -1, 7]),
        ),
        "tie_break_negative": Case(
            v([1, 2, 3]), v([1, 1, 2, 2, 2]), tie=(pa.int64(), [-5, None, -3, None, -3])
        ),
        "tie_break_grouped_float": Case(
            v([1, 2, 3, 2, 4]),
            v([2, 2, 2, 2, 2, 2, 3, 3]),
            [_s(["a", "a", "a", "b", "b"])],
            [_s(["a", "a", "a", "b", "b", "b", "a", "b"])],
            tie=(pa.float64(), [0.0, NAN, -0.0, 1.0, -0.0, 0.0, None, INF]),
        ),
    }
    if k.is_float:
        s["nan_inf"] = Case(
            v([NAN, INF, -INF, 0.0, -0.0, 1.0, 0.5, k.hi, k.lo, -NAN, 2.0]),
            v([NAN, -INF, INF, 1.0, NAN, -0.0, 0.0, INF, -NAN]),
        )
        s["nan_only_right"] = Case(v([1.0, INF, NAN, -INF]), v([NAN, NAN]))
        s["inf_only_right"] = Case(v([-INF, 0.0, INF, NAN, k.hi]), v([-INF, INF, INF]))
        s["tiny_gaps"] = Case(
            v([0.0, 5e-324, 1e-300, -5e-324, 1.0 + 2**-23]),
            v([-5e-324, 5e-324, 0.0, 1.0, 1.0 + 2**-22]),
        )
    for i in range(4):
        s[f"random_{i}"] = random_case(k, random.Random(f"{k.name}/{i}"))
    return s


def value_pool(k: Kind) -> list:
    small = list(range(-3, 7)) if k.lo < 0 else list(range(10))
    if k.is_float:
        return k.vals(small + [0.5, 2.5, -0.0, NAN, INF, -INF, k.lo, k.hi])
    if k.lo == 0:
        return small + [2**63 - 1, 2**63, 2**63 + 1, k.hi - 1, k.hi]
    return small + [k.lo, k.lo + 1, k.hi - 1, k.hi]


def random_case(k: Kind, rng: random.Random) -> Case:
    pool = value_pool(k)
    keys = rng.sample(pool, rng.randint(1, 6))  # few distinct keys: many duplicates

    def column(n):
        return [None if rng.random() < 0.1 else rng.choice(keys) for _ in range(n)]

    n_left, n_right = rng.randint(0, 30), rng.randint(0, 30)
    case = Case(column(n_left), column(n_right))
    n_by = rng.choice([0, 1, 2])
    if n_by:

        def by(n):
            cols = [_s([rng.choice(["a", "b", "c", None]) for _ in range(n)])]
            if n_by == 2:
                cols.append((pa.int32(), [rng.choice([0, 1, None]) for _ in range(n)]))
            return cols

        case.left_by, case.right_by = by(n_left), by(n_right)
    if rng.random() < 0.5:
        case.tie = (pa.int64(), [rng.choice([None, 0, 1, 2]) for _ in range(n_right)])
    return case


CASES = {f"{k.name}-{name}": (k, case) for k in KINDS.values() for name, case in shapes(k).items()}
FORMS = ["numpy", "arrow", "chunked"]


def forms(case_id: str):
    i = sorted(CASES).index(case_id)
    return FORMS[i % 3], FORMS[(i // 3) % 3]


# --------------------------------------------------------------------------- running a case


_ORACLE_CACHE: dict = {}


def expected(case_id, case: Case, null_equality, **opts):
    key = (case_id, null_equality, tuple(sorted(opts.items())))
    if key not in _ORACLE_CACHE:
        _ORACLE_CACHE[key] = oracle(
            case.left,
            case.right,
            case.groups("left"),
            case.groups("right"),
            null_equal=null_equality == "equal",
            tie_break=None if case.tie is None else case.tie[1],
            **opts,
        )
    return _ORACLE_CACHE[key]


def inputs(case_id, case: Case):
    kind = CASES[case_id][0]
    left_form, right_form = forms(case_id)
    left = key_column(kind, case.left, left_form)
    right = key_column(kind, case.right, right_form)
    left_by = None if case.left_by is None else by_arrays(case.left_by)
    right_by = None if case.right_by is None else by_arrays(case.right_by)
    tie = None if case.tie is None else pa.array(case.tie[1], type=case.tie[0])
    return left, right, left_by, right_by, tie


def check_map(gmap, n_left: int) -> list:
    """The map as a list, after checking that it is int32 with one entry per left row."""
    got = to_host(gmap)
    assert got.dtype == np.int32, got.dtype
    assert got.shape == (n_left,), got.shape
    return got.tolist()


def sample(combos: list, seed: str) -> list:
    if not SIM or len(combos) <= SIM_COMBOS:
        return combos
    return random.Random(seed).sample(combos, SIM_COMBOS)


def describe(case: Case) -> str:
    return (
        f"left={case.left} right={case.right} left_by={case.left_by} "
        f"right_by={case.right_by} tie={case.tie}"
    )


@pytest.mark.parametrize("strategy", ["backward", "forward", "nearest"])
@pytest.mark.parametrize("case_id", sorted(CASES))
def test_grid(case_id, strategy, device):
    kind, case = CASES[case_id]
    left, right, left_by, right_by, tie = inputs(case_id, case)
    equalities = ["unequal", "equal"] if case.grouped else ["unequal"]
    ties = ["forward", "backward"] if strategy == "nearest" else ["forward"]
    combos = [
        (eq, exact, tol_name, nt)
        for eq in equalities
        for exact in (True, False)
        for tol_name in tolerances(kind)
        for nt in ties
    ]
    combos = sample(combos, f"{case_id}/{strategy}")
    prepared = {}
    failures = []
    for n, (eq, exact, tol_name, nt) in enumerate(combos):
        tol = tolerances(kind)[tol_name]
        if strategy != "nearest":  # nearest_tie must not matter: vary it anyway
            nt = "backward" if n % 2 else "forward"
        opts = {
            "strategy": strategy,
            "allow_exact_matches": exact,
            "tolerance": tol,
            "nearest_tie": nt,
        }
        if n == 0:  # the one-shot form once per item, the prepared form for the rest
            gmap = ag.asof_join(
                left,
                right,
                left_by,
                right_by,
                null_equality=eq,
                tie_break=tie,
                device=device,
                **opts,
            )
        else:
            if eq not in prepared:
                prepared[eq] = ag.AsofJoin(
                    right, right_by, null_equality=eq, tie_break=tie, device=device
                )
            gmap = prepared[eq].join(left, left_by, **opts)
        want = expected(case_id, case, eq, **opts)
        got = check_map(gmap, len(case.left))
        if got != want:
            failures.append(f"null_equality={eq} {opts}: got {got}, expected {want}")
    assert not failures, f"{describe(case)}\n" + "\n".join(failures)


# --------------------------------------------------------------------------- presorted


def sorted_right(
    case: Case,
    null_equal: bool,
    *,
    blocks_reversed=False,
    tie_nulls_last=False,
    null_keys_first=False,
) -> list:
    """The right rows' order for presorted=True. By default: grouped (groups in order of
    first appearance, rows of no group last), by key within a group (null keys last), then by
    tie-break ascending with nulls first, the order in which AsofJoin's own sort leaves equal
    keys (the smallest tie-break first, the winner last)."""
    groups = case.groups("right") or [None] * len(case.right)
    ties = case.tie[1] if case.tie else [None] * len(case.right)
    first_seen: dict = {}
    for g in groups:
        cg = _group(g, null_equal)
        if cg is not None:
            first_seen.setdefault(cg, len(first_seen))

    def sort_key(j):
        cg = _group(groups[j], null_equal)
        block = len(first_seen) if cg is None else first_seen[cg]
        if blocks_reversed:
            block = -block
        key = case.right[j]
        t = ties[j]
        tie_rank = (not tie_nulls_last, _order(t)) if t is not None else (tie_nulls_last,)
        null_key = (key is None) != null_keys_first
        if null_keys_first and key is None:
            block = -(10**9)
        return (block, null_key, _order(key) if key is not None else (0, 0), tie_rank)

    return sorted(range(len(case.right)), key=sort_key)


def permuted(case: Case, order: list) -> Case:
    def take(cols):
        return None if cols is None else [(t, [vals[j] for j in order]) for t, vals in cols]

    return Case(
        case.left,
        [case.right[j] for j in order],
        case.left_by,
        take(case.right_by),
        None if case.tie is None else (case.tie[0], [case.tie[1][j] for j in order]),
    )


# name -> (sort_right options, must presorted=True accept it?)
PRESORTED_ORDERS = {
    "canonical": ({}, True),
    # any order of the groups is "grouped by right_by"
    "blocks_reversed": ({"blocks_reversed": True}, True),
    # not the library's own order: a ValueError is allowed, a wrong map is not
    "tie_nulls_last": ({"tie_nulls_last": True}, False),
    "null_keys_first": ({"null_keys_first": True}, False),
}


@pytest.mark.parametrize("case_id", sorted(CASES) if not SIM else sorted(CASES)[::3])
def test_presorted(case_id, device):
    """presorted=True on a right side that is grouped and sorted: the same map as the oracle
    gives for those rows. Orders other than AsofJoin's own may be refused with ValueError."""
    _, original = CASES[case_id]
    failures = []
    equalities = ["unequal", "equal"] if original.grouped else ["unequal"]
    prepared = {}
    for eq in equalities:
        for name, (how, must_accept) in PRESORTED_ORDERS.items():
            if name == "tie_nulls_last" and (original.tie is None or None not in original.tie[1]):
                continue
            if name == "null_keys_first" and None not in original.right:
                continue
            case = permuted(original, sorted_right(original, eq == "equal", **how))
            left, right, left_by, right_by, tie = inputs(case_id, case)
            try:
                prepared[eq, name] = (
                    case,
                    ag.AsofJoin(
                        right,
                        right_by,
                        null_equality=eq,
                        tie_break=tie,
                        presorted=True,
                        device=device,
                    ),
                )
            except ValueError as exc:
                if must_accept:
                    failures.append(
                        f"null_equality={eq} {name}: rejected a sorted right side "
                        f"{case.right} by={case.right_by} tie={case.tie}: {exc}"
                    )
    combos = [
        (eq, name, s, exact)
        for eq, name in prepared
        for s in ("backward", "forward", "nearest")
        for exact in (True, False)
    ]
    for eq, name, s, exact in sample(combos, f"presorted/{case_id}"):
        case, j = prepared[eq, name]
        left, _, left_by, _, _ = inputs(case_id, case)
        opts = {"strategy": s, "allow_exact_matches": exact}
        want = oracle(
            case.left,
            case.right,
            case.groups("left"),
            case.groups("right"),
            null_equal=eq == "equal",
            tie_break=None if case.tie is None else case.tie[1],
            **opts,
        )
        got = check_map(j.join(left, left_by, **opts), len(case.left))
        if got != want:
            failures.append(
                f"null_equality={eq} {name} {opts}: got {got}, expected {want} "
                f"(right as given: {describe(case)})"
            )
    assert not failures, "\n".join(failures)


# --------------------------------------------------------------------------- ambiguous="raise"


def ambiguous_rows(case: Case, null_equal: bool, gmap: list) -> list:
    """Left rows whose chosen right row shares (group, key, tie-break) with another right row,
    computed here from the Python values, not by the library."""
    groups = case.groups("right") or [None] * len(case.right)
    ties = case.tie[1] if case.tie else [None] * len(case.right)

    def ident(j):
        t = ties[j]
        return (
            _group(groups[j], null_equal),
            _order(case.right[j]),
            (0,) if t is None else (1, _order(t)),
        )

    out = []
    for i, j in enumerate(gmap):
        if j == NO_MATCH:
            continue
        same = [
            k for k in range(len(case.right)) if case.right[k] is not None and ident(k) == ident(j)
        ]
        if len(same) > 1:
            out.append(i)
    return out


@pytest.mark.parametrize("case_id", sorted(CASES) if not SIM else sorted(CASES)[1::3])
def test_ambiguous_raise(case_id, device):
    """ambiguous="raise" raises AmbiguousMatchError exactly when a chosen key has several rows
    in its group (equal tie-break values included), and otherwise returns the usual map."""
    _, case = CASES[case_id]
    left, right, left_by, right_by, tie = inputs(case_id, case)
    equalities = ["unequal", "equal"] if case.grouped else ["unequal"]
    combos = [
        (eq, s, nt)
        for eq in equalities
        for s, nt in (
            ("backward", "forward"),
            ("forward", "forward"),
            ("nearest", "forward"),
            ("nearest", "backward"),
        )
    ]
    failures = []
    for eq, s, nt in sample(combos, f"ambiguous/{case_id}"):
        opts = {"strategy": s, "nearest_tie": nt}
        want = expected(
            case_id, case, eq, strategy=s, allow_exact_matches=True, tolerance=None, nearest_tie=nt
        )
        bad = ambiguous_rows(case, eq == "equal", want)
        j = ag.AsofJoin(right, right_by, null_equality=eq, tie_break=tie, device=device)
        try:
            got = check_map(j.join(left, left_by, ambiguous="raise", **opts), len(case.left))
        except ag.AmbiguousMatchError as exc:
            if not bad:
                failures.append(
                    f"null_equality={eq} {opts}: raised {exc} but no match is "
                    f"ambiguous (map {want})"
                )
            elif f"left row {bad[0]} " not in str(exc):
                failures.append(
                    f"null_equality={eq} {opts}: message should name left row {bad[0]}: {exc}"
                )
            continue
        if bad:
            failures.append(
                f"null_equality={eq} {opts}: no error, but left rows {bad} "
                f"matched a key with several rows (map {got})"
            )
        elif got != want:
            failures.append(f"null_equality={eq} {opts}: got {got}, expected {want}")
    assert not failures, f"{describe(case)}\n" + "\n".join(failures)
