"""Every key type (README's Use section) through every column form, against the oracle.

The oracle (tests/oracle.py) runs on the *physical* values of the keys (the integers Arrow stores
for temporal types, the floats of float columns), so a conversion that changes an ordering, loses
precision or mixes units shows up as a wrong row number. Every test runs on every backend
(``device`` fixture: python, cpu, cuda or its simulator) with small inputs, but the column-form
matrices, which skip the python backend: forms are host code, the same for every backend.

Conversions by the column forms (numpy, pandas, polars) may change a column's type, e.g. polars
turns ``time32[s]`` into ``time64[ns]``; they are strictly monotone and applied to both sides, so
the gather map must still equal the oracle's on the original physical values.

polars is optional: it is imported where a case needs it, and only those cases skip without it
(a loop over forms puts its polars forms last, so the others are checked before the skip).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from conftest import to_host
from oracle import oracle

import asofgpu as ag
from asofgpu import NO_MATCH, AmbiguousMatchError, AsofJoin, asof_join
from asofgpu._backend import cudasim_enabled

# ----------------------------------------------------------------------------- option sets

ALL_OPTIONS = [
    {"strategy": "backward", "allow_exact_matches": True},
    {"strategy": "backward", "allow_exact_matches": False},
    {"strategy": "forward", "allow_exact_matches": True},
    {"strategy": "forward", "allow_exact_matches": False},
    {"strategy": "nearest", "allow_exact_matches": True, "nearest_tie": "forward"},
    {"strategy": "nearest", "allow_exact_matches": True, "nearest_tie": "backward"},
    {"strategy": "nearest", "allow_exact_matches": False, "nearest_tie": "forward"},
    {"strategy": "nearest", "allow_exact_matches": False, "nearest_tie": "backward"},
]
# A cheaper set for wide matrices (the simulator pays per call): both searches, both nearest
# rules, exact and strict.
FEW_OPTIONS = [
    {"strategy": "backward", "allow_exact_matches": True},
    {"strategy": "forward", "allow_exact_matches": False},
    {"strategy": "nearest", "allow_exact_matches": True, "nearest_tie": "forward"},
    {"strategy": "nearest", "allow_exact_matches": False, "nearest_tie": "backward"},
]
THREE_STRATEGIES = [
    {"strategy": "backward"},
    {"strategy": "forward"},
    {"strategy": "nearest", "nearest_tie": "forward"},
    {"strategy": "nearest", "nearest_tie": "backward"},
]


def on_simulator(device) -> bool:
    return device == "cuda" and cudasim_enabled()


def trimmed(device, items: list, keep: int, salt: int = 0) -> list:
    """All items, or on the CUDA simulator (a fraction of a second per kernel launch) ``keep``
    of them, rotated by ``salt`` so that a parametrized test still covers every item."""
    if not on_simulator(device) or keep >= len(items):
        return items
    step = max(1, len(items) // keep)
    return [items[(salt + k * step) % len(items)] for k in range(keep)]


def oracle_options(opts: dict) -> dict:
    out = {"strategy": "backward", "allow_exact_matches": True, "nearest_tie": "forward"}
    out.update(opts)
    return out


def check_join(
    device,
    left_on,
    right_on,
    lkeys,
    rkeys,
    *,
    left_by=None,
    right_by=None,
    lgroups=None,
    rgroups=None,
    options=ALL_OPTIONS,
    null_equality="unequal",
    tie_break=None,
    ties=None,
    tolerance=None,
    oracle_tolerance=None,
    context="",
):
    """Prepare the right side once, probe it with every option set, compare with the oracle."""
    joiner = AsofJoin(
        right_on, right_by, null_equality=null_equality, tie_break=tie_break, device=device
    )
    if oracle_tolerance is None:
        oracle_tolerance = tolerance
    for opts in options:
        got = to_host(joiner.join(left_on, left_by, tolerance=tolerance, **opts))
        want = oracle(
            lkeys,
            rkeys,
            lgroups,
            rgroups,
            tolerance=oracle_tolerance,
            null_equal=null_equality == "equal",
            tie_break=ties,
            **oracle_options(opts),
        )
        assert got.dtype == np.int32
        assert got.tolist() == want, (
            f"{context} {opts} tolerance={tolerance!r}\nleft={lkeys}\nright={rkeys}\n"
            f"lgroups={lgroups}\nrgroups={rgroups}\nties={ties}"
        )


# ----------------------------------------------------------------------------- key types

F32 = [float(np.float32(x)) for x in (0.1, 1.5, 3.4e38, -3.5)]
KEY_TYPES = {
    "int8": (pa.int8(), [-128, -127, -1, 0, 1, 2, 3, 126, 127]),
    "int16": (pa.int16(), [-32768, -1, 0, 1, 2, 3, 32766, 32767]),
    "int32": (pa.int32(), [-(2**31), -1, 0, 1, 2, 3, 2**31 - 2, 2**31 - 1]),
    "int64": (pa.int64(), [-(2**63), -(2**63) + 1, -1, 0, 1, 2, 3, 2**63 - 2, 2**63 - 1]),
    "uint8": (pa.uint8(), [0, 1, 2, 3, 128, 254, 255]),
    "uint16": (pa.uint16(), [0, 1, 2, 3, 32768, 65534, 65535]),
    "uint32": (pa.uint32(), [0, 1, 2, 3, 2**31, 2**32 - 2, 2**32 - 1]),
    "uint64": (pa.uint64(), [0, 1, 2, 3, 2**63 - 1, 2**63, 2**63 + 1, 2**64 - 2, 2**64 - 1]),
    "float32": (
        pa.float32(),
        [-math.inf, F32[3], -0.0, 0.0, F32[0], F32[1], 2.0, F32[2], math.inf, math.nan],
    ),
    "float64": (
        pa.float64(),
        [-math.inf, -1.7e308, -0.0, 0.0, 5e-324, 0.1, 1.5, 2.0, 1.7e308, math.inf, math.nan],
    ),
    "date32": (pa.date32(), [-719162, -1, 0, 1, 2, 3, 2932896]),
    "date64": (pa.date64(), [d * 86_400_000 for d in (-719162, -1, 0, 1, 2, 3, 2932896)]),
    "time32[s]": (pa.time32("s"), [0, 1, 2, 3, 43200, 86398, 86399]),
    "time32[ms]": (pa.time32("ms"), [0, 1, 2, 3, 43_200_000, 86_399_999]),
    "time64[us]": (pa.time64("us"), [0, 1, 2, 3, 43_200_000_000, 86_399_999_999]),
    "time64[ns]": (pa.time64("ns"), [0, 1, 2, 3, 43_200_000_000_001, 86_399_999_999_999]),
}
_SECONDS = [-62_135_596_800, -1, 0, 1, 2, 3, 253_402_300_799]  # years 1 and 9999
for _unit, _scale in (("s", 1), ("ms", 10**3), ("us", 10**6)):
    KEY_TYPES[f"timestamp[{_unit}]"] = (pa.timestamp(_unit), [v * _scale for v in _SECONDS])
    KEY_TYPES[f"duration[{_unit}]"] = (pa.duration(_unit), [v * _scale for v in _SECONDS])
_NS = [-(2**63) + 1, -1, 0, 1, 2, 3, 2**63 - 1]  # not the int64 minimum: numpy's NaT
KEY_TYPES["timestamp[ns]"] = (pa.timestamp("ns"), _NS)
KEY_TYPES["duration[ns]"] = (pa.duration("ns"), _NS)
for _unit, _tz in (
    ("s", "UTC"),
    ("ms", "Asia/Tokyo"),
    ("us", "America/New_York"),
    ("ns", "Europe/Paris"),
):
    KEY_TYPES[f"timestamp[{_unit},{_tz}]"] = (
        pa.timestamp(_unit, _tz),
        KEY_TYPES[f"timestamp[{_unit}]"][1],
    )

SIMULATOR_FORM_TYPES = {
    "int64",
    "uint64",
    "float64",
    "date32",
    "time32[s]",
    "timestamp[ns,Europe/Paris]",
    "duration[us]",
}
FORMS = ["arrow", "chunked", "numpy", "pandas", "pandas_arrow", "polars"]
# numpy and numpy-backed pandas hold no nulls; datetime.time objects stop at microseconds.
_NO_NULL_FORMS = {"numpy", "pandas"}
_FORM_SKIPS = {("time64[ns]", "numpy"), ("time64[ns]", "pandas")}


def physical(col) -> list:
    """The values Arrow stores, as Python ints / floats (None for null)."""
    if isinstance(col, pa.ChunkedArray):
        return [v for chunk in col.chunks for v in physical(chunk)]
    t = col.type
    if pa.types.is_dictionary(t):
        return physical(col.dictionary_decode())
    if pa.types.is_temporal(t):
        col = col.cast(pa.int32() if t.bit_width == 32 else pa.int64())
    return col.to_pylist()


def random_column(rng, pa_type, pool, n, null_p=0.15) -> pa.Array:
    values = [pool[i] for i in rng.integers(len(pool), size=n)]
    values = [None if rng.random() < null_p else v for v in values]
    return pa.array(values, type=pa_type)


def as_form(arr: pa.Array, form: str):
    """One column in the requested user-side form."""
    if form == "arrow":
        return arr
    if form == "chunked":
        k = len(arr)
        return pa.chunked_array(
            [arr[: k // 3], arr[k // 3 : 2 * k // 3], arr[2 * k // 3 :]], type=arr.type
        )
    if form == "numpy":
        out = arr.to_numpy(zero_copy_only=False)
        assert isinstance(out, np.ndarray)
        return out
    if form == "pandas":
        return arr.to_pandas()  # numpy-backed dtypes (datetime64, timedelta64, object dates)
    if form == "pandas_arrow":
        return pd.Series(arr.to_pandas(types_mapper=pd.ArrowDtype))
    if form == "polars":
        pl = pytest.importorskip("polars")
        out = pl.from_arrow(arr)
        assert isinstance(out, pl.Series)
        return out
    raise AssertionError(form)


@pytest.mark.parametrize("type_name", list(KEY_TYPES))
def test_on_key_type_all_options(device, type_name):
    """Each key type, Arrow arrays with nulls, every strategy / exactness / nearest rule."""
    pa_type, pool = KEY_TYPES[type_name]
    rng = np.random.default_rng(sum(map(ord, type_name)))
    left = random_column(rng, pa_type, pool, 17)
    right = random_column(rng, pa_type, pool, 19)
    assert left.type == pa_type and right.type == pa_type
    salt = list(KEY_TYPES).index(type_name)
    check_join(
        device,
        left,
        right,
        physical(left),
        physical(right),
        options=trimmed(device, ALL_OPTIONS, 2, salt),
        context=type_name,
    )


# The column forms are host code, the same arrays reaching any backend: not on the python
# backend, whose kernels test_on_key_type_all_options runs on every key type.
NO_PYTHON = pytest.mark.parametrize("device", ["cpu", "cuda"], indirect=True)


@NO_PYTHON
@pytest.mark.parametrize(
    ("type_name", "form"),
    [(t, f) for t in KEY_TYPES for f in FORMS if (t, f) not in _FORM_SKIPS],
)
def test_on_key_type_column_forms(device, type_name, form):
    """Each key type in each column form (the same form on both sides)."""
    if on_simulator(device) and type_name not in SIMULATOR_FORM_TYPES:
        pytest.skip(
            "the simulator pass checks the column forms on a few key types only: "
            "the conversion is host code shared by every backend"
        )
    pa_type, pool = KEY_TYPES[type_name]
    rng = np.random.default_rng(sum(map(ord, type_name + form)))
    null_p = 0.0 if form in _NO_NULL_FORMS else 0.15
    left = random_column(rng, pa_type, pool, 13, null_p)
    right = random_column(rng, pa_type, pool, 16, null_p)
    lkeys, rkeys = physical(left), physical(right)
    if form == "pandas":  # pandas' convention: NaN in a numpy-backed float Series is missing
        lkeys, rkeys = ([None if v != v else v for v in keys] for keys in (lkeys, rkeys))
    check_join(
        device,
        as_form(left, form),
        as_form(right, form),
        lkeys,
        rkeys,
        options=trimmed(device, FEW_OPTIONS[::2], 1, FORMS.index(form)),
        context=f"{type_name} as {form}",
    )


def test_on_mixed_column_forms(device):
    """Left and right need not be the same kind of object."""
    rng = np.random.default_rng(7)
    pa_type, pool = KEY_TYPES["int64"]
    left = random_column(rng, pa_type, pool, 15, 0.0)
    right = random_column(rng, pa_type, pool, 15, 0.2)
    for lform, rform in (("pandas", "chunked"), ("numpy", "polars"), ("polars", "arrow")):
        check_join(
            device,
            as_form(left, lform),
            as_form(right, rform),
            physical(left),
            physical(right),
            options=FEW_OPTIONS[:1],
            context=f"{lform} vs {rform}",
        )


def test_on_integer_widths_mix(device):
    """Widths may differ between the sides (int8 vs int64, uint8 vs uint64, float32 vs 64)."""
    rng = np.random.default_rng(11)
    for lt, rt in (
        ("int8", "int64"),
        ("int64", "int16"),
        ("uint8", "uint64"),
        ("uint64", "uint32"),
        ("float32", "float64"),
    ):
        left = random_column(rng, KEY_TYPES[lt][0], KEY_TYPES[lt][1], 12)
        right = random_column(rng, KEY_TYPES[rt][0], KEY_TYPES[rt][1], 14)
        check_join(
            device,
            left,
            right,
            physical(left),
            physical(right),
            options=FEW_OPTIONS[:2],
            context=f"{lt} vs {rt}",
        )


def test_uint64_above_int64_keeps_order(device):
    big = 2**63
    right = np.array([big - 1, big, big + 10, 2**64 - 1, 5], dtype=np.uint64)
    left = np.array([big + 4, big + 7, 2**64 - 2, big - 1, 2**64 - 1, 6], dtype=np.uint64)
    assert asof_join(left, right, device=device).tolist() == [1, 1, 2, 0, 3, 4]
    assert asof_join(left, right, strategy="forward", device=device).tolist() == [2, 2, 3, 0, 3, 0]
    # nearest: big+4 is 4 from big, 6 from big+10; big+7 is 3 from big+10
    got = asof_join(left, right, strategy="nearest", device=device).tolist()
    assert got == [1, 2, 3, 0, 3, 4]
    # distances of 2**63 and more never overflow
    tol = asof_join(
        np.array([2**64 - 1], np.uint64),
        np.array([0], np.uint64),
        tolerance=2**64 - 2,
        device=device,
    )
    assert tol.tolist() == [NO_MATCH]
    tol = asof_join(
        np.array([2**64 - 1], np.uint64),
        np.array([0], np.uint64),
        tolerance=2**64 - 1,
        device=device,
    )
    assert tol.tolist() == [0]


def test_int64_extremes_distances(device):
    lo, hi = -(2**63), 2**63 - 1
    right = np.array([lo, hi], dtype=np.int64)
    left = np.array([-1, 0, lo, hi], dtype=np.int64)
    # -1 is 2**63 - 1 from lo and 2**63 from hi: lo is nearer; 0 is equidistant-ish the other way
    got = asof_join(left, right, strategy="nearest", device=device).tolist()
    assert got == [0, 1, 0, 1]
    got = asof_join(left, right, strategy="nearest", tolerance=2**63 - 1, device=device)
    assert got.tolist() == [0, 1, 0, 1]
    got = asof_join(left, right, strategy="nearest", tolerance=2**63 - 2, device=device)
    assert got.tolist() == [NO_MATCH, NO_MATCH, 0, 1]
    got = asof_join(np.array([hi]), np.array([lo]), tolerance=2**64 - 2, device=device)
    assert got.tolist() == [NO_MATCH]
    got = asof_join(np.array([hi]), np.array([lo]), tolerance=2**64 - 1, device=device)
    assert got.tolist() == [0]


def test_numba_tells_walks_of_other_key_types_apart():
    """numba picks a kernel's compiled version by a fingerprint of its arguments' types; 0.59
    and 0.60 took a namedtuple's, past 40 bytes, from stale memory, the same for a ``Walk``
    of int64 keys as for one of uint64 keys: in some processes the merge scan compiled for
    one ran on the other (test_int64_extremes_distances answered [1, 1, 1, 1] at the floors,
    at random). pyproject.toml asks for 0.61, and the kernels' builder checks it."""
    from numba import _dispatcher

    from asofgpu.kernels.probe import Walk

    groups = np.zeros(2, np.int32)
    prints = {
        _dispatcher.compute_fingerprint(Walk(np.zeros(2, dtype), groups, groups))
        for dtype in (np.int64, np.uint64, np.float64)
    }
    assert len(prints) == 3


def test_a_numba_that_confuses_argument_types_is_refused(monkeypatch):
    import numba

    from asofgpu._backend import jit

    monkeypatch.setattr(numba, "__version__", "0.60.0")
    jit.check_numba_version.cache_clear()
    try:
        with pytest.raises(
            jit.NumbaTooOld,
            match=r"^asofgpu needs numba 0\.61 or later, found 0\.60\.0, which can run a kernel "
            r"compiled for other argument types \(wrong rows\): pip install 'numba>=0\.61'$",
        ):
            jit.njit_cached(lambda: 1)
    finally:
        jit.check_numba_version.cache_clear()


@pytest.mark.parametrize("side", ["left", "right"])
def test_float16_keys_in_chunks_as_a_reader_gives_them(device, side):
    """float16 keys of 20,000 rows in two buffers were copied as float64 (numpy reads the
    None of "not stored as a kernel type" as float64): garbage keys, read past each chunk,
    and 19,980 rows joined wrong. The copy that checks order takes only what it can read."""
    n = 20_000
    halves = (np.arange(n) % 1000).astype(np.float16)
    chunked = pa.chunked_array(
        [pa.array(halves[: n // 2].copy()), pa.array(halves[n // 2 :].copy())]
    )
    whole = np.arange(1000, dtype=np.float64)
    if side == "left":
        got = asof_join(chunked, whole, device=device)
        want = halves.astype(np.int64)
    else:  # the right side's keys, in the order a reader gives them
        got = asof_join(whole, chunked, device=device)
        want = np.full(1000, n - 1000) + np.arange(1000)  # the last row of each key
    assert to_host(got).tolist() == want.tolist()


def test_float_total_order(device):
    """NaN above +inf and equal to itself; -0.0 == 0.0; infinities are ordinary values."""
    nan, inf = math.nan, math.inf
    right = np.array([nan, -inf, 0.0, inf, -0.0, 1.0])
    left = np.array([nan, inf, -0.0, 0.0, -inf, 0.5, 1e308])
    # backward: NaN takes the NaN row, inf the inf row, ±0 the last of the two zero rows
    assert asof_join(left, right, device=device).tolist() == [0, 3, 4, 4, 1, 4, 5]
    # forward: ±0 -> the first zero row
    assert asof_join(left, right, strategy="forward", device=device).tolist() == [
        0,
        3,
        2,
        2,
        1,
        5,
        3,
    ]
    strict = asof_join(
        left, right, strategy="forward", allow_exact_matches=False, device=device
    ).tolist()
    assert strict == [NO_MATCH, 0, 5, 5, 2, 5, 3]
    strict = asof_join(left, right, allow_exact_matches=False, device=device).tolist()
    assert strict == [3, 5, 1, 1, NO_MATCH, 4, 5]
    # NaN is infinitely far from everything else: no tolerance but inf reaches it
    lnan = np.array([nan])
    assert asof_join(lnan, np.array([1.0]), tolerance=1e308, device=device).tolist() == [NO_MATCH]
    assert asof_join(lnan, np.array([1.0]), tolerance=math.inf, device=device).tolist() == [0]


def test_a_signalling_or_negative_nan_key_is_nan_without_a_warning(device):
    """Any NaN bit pattern is the one NaN of the order, and reading it warns of nothing."""
    signalling = np.array([0x7FF0000000000001, 0xFFF8000000000000], np.uint64).view(np.float64)
    right = np.array([1.0, signalling[0], 2.0])
    left = np.array([signalling[1], math.nan, 1.5, -0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = asof_join(left, right, device=device).tolist()
    assert got == asof_join(np.array([math.nan, math.nan, 1.5, 0.0]), right, device=device).tolist()
    assert got == [1, 1, 0, NO_MATCH]


# ----------------------------------------------------------------------------- mixed units

MIXED_UNITS = [
    (pa.timestamp("ns"), pa.timestamp("s")),
    (pa.timestamp("s"), pa.timestamp("ns")),
    (pa.timestamp("ms"), pa.timestamp("us")),
    (pa.timestamp("us", "UTC"), pa.timestamp("ms", "UTC")),
    (pa.timestamp("ns", "Asia/Tokyo"), pa.timestamp("s", "Asia/Tokyo")),
    (pa.date32(), pa.date64()),
    (pa.date64(), pa.date32()),
    (pa.time32("s"), pa.time64("ns")),
    (pa.time64("us"), pa.time32("ms")),
    (pa.duration("ns"), pa.duration("s")),
    (pa.duration("ms"), pa.duration("us")),
]


def tick_ns(t: pa.DataType) -> int:
    if pa.types.is_date32(t):
        return 86_400 * 10**9
    if pa.types.is_date64(t):
        return 10**6
    return {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[t.unit]


def mixed_unit_data(rng, coarse_type, fine_type, n, anchors):
    """Values near a few anchors, in each type's own ticks: equal instants, one tick off."""
    factor = tick_ns(coarse_type) // tick_ns(fine_type)
    coarse = [a for a in rng.choice(anchors, size=n)]
    fine = [
        int(a) * factor + int(d)
        for a, d in zip(rng.choice(anchors, size=n), rng.integers(-1, 2, size=n))
    ]
    coarse = [None if rng.random() < 0.1 else int(v) for v in coarse]
    return pa.array(coarse, coarse_type), pa.array(fine, fine_type), factor


def _anchors(t):
    if pa.types.is_time(t):
        return [1, 2, 3, 5, 80_000]
    return [-(10**9), -2, 0, 1, 2, 3, 5, 10**9]


@pytest.mark.parametrize(("left_type", "right_type"), MIXED_UNITS, ids=str)
def test_mixed_units(device, left_type, right_type):
    """Left and right of the same family in different units: compared on the finer unit;
    an integer tolerance is in the right key's unit, a timedelta is converted."""
    rng = np.random.default_rng(len(str(left_type)) * 31 + len(str(right_type)))
    left_fine = tick_ns(left_type) < tick_ns(right_type)
    coarse_type, fine_type = (right_type, left_type) if left_fine else (left_type, right_type)
    coarse, fine, factor = mixed_unit_data(rng, coarse_type, fine_type, 15, _anchors(coarse_type))
    coarse_keys = [None if v is None else v * factor for v in physical(coarse)]
    fine_keys = physical(fine)
    if left_fine:
        left, right, lkeys, rkeys = fine, coarse, fine_keys, coarse_keys
    else:
        left, right, lkeys, rkeys = coarse, fine, coarse_keys, fine_keys
    salt = MIXED_UNITS.index((left_type, right_type))
    check_join(
        device,
        left,
        right,
        lkeys,
        rkeys,
        options=trimmed(device, FEW_OPTIONS, 1, salt),
        context="units",
    )
    fine_tick = tick_ns(fine_type)
    check_join(
        device,
        left,
        right,
        lkeys,
        rkeys,
        options=trimmed(device, THREE_STRATEGIES[:3], 1, salt),
        tolerance=1,
        oracle_tolerance=tick_ns(right_type) // fine_tick,
        context="units, tolerance 1 tick of the right key",
    )
    td = dt.timedelta(microseconds=max(1, fine_tick // 1000))
    check_join(
        device,
        left,
        right,
        lkeys,
        rkeys,
        options=THREE_STRATEGIES[:1],
        tolerance=td,
        oracle_tolerance=(td // dt.timedelta(microseconds=1)) * 1000 / fine_tick,
        context="units, timedelta",
    )


def test_prepared_join_probed_with_other_units(device):
    """One AsofJoin on timestamp[s], probed with ns, ms, s and ns again (cached rescale)."""
    right_s = [None, 5, 1, 3, 3, -2, 10**9]
    joiner = AsofJoin(pa.array(right_s, pa.timestamp("s")), device=device)
    probes = [
        ("ns", 10**9, [3 * 10**9 - 1, 3 * 10**9, 3 * 10**9 + 1, None, -(10**9), 10**18]),
        ("ms", 10**3, [2999, 3000, 3001, 5000, -2000, 10**12]),
        ("s", 1, [2, 3, 4, 5, -2, 10**9]),
        ("ns", 10**9, [5 * 10**9, 1, 0, 10**18 + 1]),
    ]
    for unit, factor, left in probes:
        rkeys = [None if v is None else v * factor for v in right_s]
        for opts in trimmed(device, FEW_OPTIONS, 1, factor):
            got = to_host(joiner.join(pa.array(left, pa.timestamp(unit)), **opts)).tolist()
            assert got == oracle(left, rkeys, **oracle_options(opts)), (unit, opts)
        # a number is in the right key's unit (seconds), whatever the left's
        got = to_host(joiner.join(pa.array(left, pa.timestamp(unit)), tolerance=1))
        assert got.tolist() == oracle(left, rkeys, tolerance=factor), unit
    # the right side prepared in ns, probed with coarser seconds
    joiner = AsofJoin(pa.array([10**9 - 1, 2 * 10**9 + 1], pa.timestamp("ns")), device=device)
    got = to_host(joiner.join(pa.array([1, 2, 3], pa.timestamp("s"))))
    assert got.tolist() == [0, 0, 1]
    got = to_host(
        joiner.join(
            pa.array([1, 2, 3], pa.timestamp("s")), strategy="forward", tolerance=dt.timedelta(0)
        )
    )
    assert got.tolist() == [NO_MATCH, NO_MATCH, NO_MATCH]
    got = to_host(
        joiner.join(
            pa.array([1, 2, 3], pa.timestamp("s")),
            strategy="nearest",
            tolerance=np.timedelta64(1, "ns"),
        )
    )
    assert got.tolist() == [0, 1, NO_MATCH]


# ----------------------------------------------------------------------------- tolerance

TEMPORAL = [t for t in KEY_TYPES if "int" not in t and "float" not in t]


def tolerance_cases(t: pa.DataType):
    """(label, tolerance as passed, the same tolerance in the key's ticks, for the oracle)."""
    tick = tick_ns(t)
    cases = [("int", 2, 2), ("numpy int", np.int16(3), 3), ("float", 2.5, 2.5)]
    if tick == 86_400 * 10**9:  # date32: days
        cases += [
            ("timedelta", dt.timedelta(days=1, hours=12), 1.5),
            ("timedelta64[h]", np.timedelta64(36, "h"), 1.5),
            ("timedelta64[W]", np.timedelta64(1, "W"), 7),
            ("timedelta64[D]", np.timedelta64(2, "D"), 2),
        ]
    elif tick == 10**9:  # seconds
        cases += [
            ("timedelta", dt.timedelta(seconds=1.5), 1.5),
            ("timedelta64[m]", np.timedelta64(2, "m"), 120),
        ]
    elif tick == 10**6:  # milliseconds (and date64)
        cases += [
            ("timedelta", dt.timedelta(microseconds=3500), 3.5),
            ("timedelta64[ns]", np.timedelta64(2_500_000, "ns"), 2.5),
        ]
    elif tick == 10**3:  # microseconds
        cases += [
            ("timedelta", dt.timedelta(microseconds=3), 3),
            ("timedelta64[ns]", np.timedelta64(2500, "ns"), 2.5),
        ]
    else:  # nanoseconds
        cases += [
            ("timedelta", dt.timedelta(microseconds=2), 2000),
            ("timedelta64[ns]", np.timedelta64(5, "ns"), 5),
        ]
    return cases


@pytest.mark.parametrize("type_name", TEMPORAL)
def test_tolerance_on_temporal_keys(device, type_name):
    """int / float in the key's physical unit, timedelta and timedelta64 converted, all
    inclusive: data sit at the limit, one tick inside and one tick outside."""
    pa_type = KEY_TYPES[type_name][0]
    rng = np.random.default_rng(sum(map(ord, type_name)) + 5)
    salt = TEMPORAL.index(type_name)
    for label, tol, ticks in trimmed(device, tolerance_cases(pa_type), 2, salt):
        step = max(1, math.floor(ticks))
        base = 2 if pa.types.is_time(pa_type) else -3 * step
        rvals = [base + step * int(k) for k in rng.integers(0, 6, size=12)]
        lvals = [
            base + step * int(k) + int(d)
            for k, d in zip(rng.integers(0, 6, size=14), rng.integers(-2, 3, size=14))
        ]
        if pa.types.is_time(pa_type):
            lvals = [max(v, 0) for v in lvals]
        rvals[0] = None
        left, right = pa.array(lvals, pa_type), pa.array(rvals, pa_type)
        check_join(
            device,
            left,
            right,
            physical(left),
            physical(right),
            options=trimmed(device, THREE_STRATEGIES[:3], 1, salt + len(label)),
            tolerance=tol,
            oracle_tolerance=ticks,
            context=f"{type_name} {label}",
        )


def test_tolerance_is_inclusive_in_key_units(device):
    ts = pa.timestamp("ms")
    right = pa.array([1000, 5000], ts)
    left = pa.array([2500, 2501, 6500, 4999], ts)
    for tol in (
        1500,
        1500.9,
        dt.timedelta(milliseconds=1500),
        dt.timedelta(milliseconds=1500, microseconds=999),
        np.timedelta64(1500, "ms"),
        np.timedelta64(1_500_999_999, "ns"),
    ):
        got = asof_join(left, right, tolerance=tol, device=device).tolist()
        assert got == [0, NO_MATCH, 1, NO_MATCH], tol
    got = asof_join(
        left, right, strategy="forward", tolerance=dt.timedelta(seconds=2.5), device=device
    )
    assert got.tolist() == [1, 1, NO_MATCH, 1]
    # a tolerance of zero keeps exact matches only
    got = asof_join(
        pa.array([1000, 1001], ts),
        right,
        strategy="nearest",
        tolerance=dt.timedelta(0),
        device=device,
    )
    assert got.tolist() == [0, NO_MATCH]
    # date32: timedelta of 36 h is one whole day
    days = asof_join(
        pa.array([3, 4], pa.date32()),
        pa.array([2], pa.date32()),
        tolerance=dt.timedelta(hours=36),
        device=device,
    )
    assert days.tolist() == [0, NO_MATCH]
    # time32[s] with timedelta64 in hours
    t = asof_join(
        pa.array([3600, 3601], pa.time32("s")),
        pa.array([0], pa.time32("s")),
        tolerance=np.timedelta64(1, "h"),
        device=device,
    )
    assert t.tolist() == [0, NO_MATCH]


def test_tolerance_on_numeric_keys(device):
    rng = np.random.default_rng(3)
    cases = [
        ("int64", 2),
        ("int64", 2.7),
        ("int64", np.uint64(1)),
        ("int64", math.inf),
        ("int64", 2**64 - 1),
        ("int64", 2**70),
        ("uint64", 2**63),
        ("int8", 200),
        ("float64", 0.5),
        ("float64", 2),
        ("float64", math.inf),
        ("float32", 1.0),
    ]
    for i, (type_name, tol) in enumerate(trimmed(device, cases, 6)):
        pa_type, pool = KEY_TYPES[type_name]
        pool = pool + [0, 1, 2, 3, 4]
        if pa.types.is_floating(pa_type):
            pool = pool + [0.5, 1.25, 2.75]
        left = random_column(rng, pa_type, pool, 14)
        right = random_column(rng, pa_type, pool, 14)
        check_join(
            device,
            left,
            right,
            physical(left),
            physical(right),
            options=trimmed(device, THREE_STRATEGIES[:3], 1, i),
            tolerance=tol,
            oracle_tolerance=float(tol) if isinstance(tol, float) else int(tol),
            context=f"{type_name} tolerance {tol!r}",
        )


def test_huge_timedelta64_tolerance_does_not_wrap(device):
    """584 years of seconds: 18446744074 s * 10**9 wraps around int64 nanoseconds to 0.29 s if
    the conversion overflows; the distance of 1e9 s is well within the tolerance."""
    left = pa.array([10**9], pa.timestamp("s"))
    right = pa.array([0], pa.timestamp("s"))
    got = asof_join(left, right, tolerance=np.timedelta64(18_446_744_074, "s"), device=device)
    assert got.tolist() == [0]


def test_a_pandas_timedelta_keeps_its_nanoseconds(device):
    """pandas' Timedelta is a datetime.timedelta whose nanoseconds below the microsecond are
    not in its days, seconds and microseconds: read as one, 500 ns was 0 and matched
    nothing. Distances 500 ns and 1 ns; a window of 600 ns holds one row each."""
    left = pa.array(np.array([1000, 2000], "datetime64[ns]"))
    right = pa.array(np.array([500, 1999], "datetime64[ns]"))
    for tolerance in (pd.Timedelta(nanoseconds=500), pd.Timedelta(microseconds=1, nanoseconds=1)):
        assert to_host(asof_join(left, right, tolerance=tolerance, device=device)).tolist() == [
            0,
            1,
        ]
    assert to_host(
        asof_join(left, right, tolerance=pd.Timedelta(nanoseconds=499), device=device)
    ).tolist() == [NO_MATCH, 1]
    out = ag.window_join(
        pa.table({"t": left}),
        pa.table({"t": right, "v": [1.0, 2.0]}),
        on="t",
        before=pd.Timedelta(nanoseconds=600),
        aggs={"v": "count"},
        device=device,
    )
    assert out["v_count"].to_pylist() == [1, 1]


# ----------------------------------------------------------------------------- by columns


def _dict(values, dictionary, index_type=pa.int32()):
    pos = {v: i for i, v in enumerate(dictionary)}
    idx = pa.array([None if v is None else pos[v] for v in values], index_type)
    return pa.DictionaryArray.from_arrays(idx, pa.array(dictionary))


STRING_POOL = ["a", "b", "", "ß", "long string value", None]
BY_TYPES = {
    "utf8": (pa.string(), STRING_POOL),
    "large_string": (pa.large_string(), STRING_POOL),
    "string_view": (pa.string_view(), STRING_POOL),
    "binary": (pa.binary(), [b"a", b"b", b"\x00", None]),
    "bool": (pa.bool_(), [True, False, None]),
    "int8": (pa.int8(), [-128, 0, 1, 127, None]),
    "int64": (pa.int64(), [-(2**63), 0, 1, 2**63 - 1, None]),
    "uint64": (pa.uint64(), [0, 1, 2**63, 2**64 - 1, None]),
    "float32": (pa.float32(), [math.nan, -0.0, 0.0, 1.5, -math.inf, None]),
    "float64": (pa.float64(), [math.nan, -0.0, 0.0, 1.5, math.inf, None]),
    "date32": (pa.date32(), [0, 1, -5, None]),
    "timestamp[ns,UTC]": (pa.timestamp("ns", "UTC"), [0, 1, 2**62, None]),
    "duration[s]": (pa.duration("s"), [0, 1, None]),
    "time64[us]": (pa.time64("us"), [0, 1, None]),
    "decimal128": (
        pa.decimal128(7, 2),
        [None] + [decimal.Decimal(x) for x in ("1.00", "-2.50", "0.01")],
    ),
}


def random_by(rng, pa_type, pool, n):
    return pa.array([pool[i] for i in rng.integers(len(pool), size=n)], type=pa_type)


def groups_of(*cols) -> list:
    return list(zip(*[physical(c) for c in cols]))


def int_keys(rng, n, null_p=0.1):
    return [None if rng.random() < null_p else int(v) for v in rng.integers(0, 12, size=n)]


@pytest.mark.parametrize("null_equality", ["unequal", "equal"])
@pytest.mark.parametrize("type_name", list(BY_TYPES))
def test_by_type(device, type_name, null_equality):
    pa_type, pool = BY_TYPES[type_name]
    rng = np.random.default_rng(sum(map(ord, type_name)))
    lkeys, rkeys = int_keys(rng, 16), int_keys(rng, 18)
    lby, rby = random_by(rng, pa_type, pool, 16), random_by(rng, pa_type, pool, 18)
    check_join(
        device,
        pa.array(lkeys, pa.int64()),
        pa.array(rkeys, pa.int64()),
        lkeys,
        rkeys,
        left_by=lby,
        right_by=rby,
        lgroups=groups_of(lby),
        rgroups=groups_of(rby),
        options=trimmed(device, THREE_STRATEGIES[:3], 1, len(type_name)),
        null_equality=null_equality,
        context=type_name,
    )


@pytest.mark.parametrize("null_equality", ["unequal", "equal"])
def test_by_dictionary_compared_by_value(device, null_equality):
    """Different dictionaries (order, unused entries, index widths) on each side, dictionary vs
    plain string both ways, per-chunk dictionaries, duplicate and null dictionary values."""
    rng = np.random.default_rng(21)
    values = ["x", "y", "z", None]
    lvals = [values[i] for i in rng.integers(4, size=16)]
    rvals = [values[i] for i in rng.integers(4, size=18)]
    lkeys, rkeys = int_keys(rng, 16), int_keys(rng, 18)
    lgroups, rgroups = [(v,) for v in lvals], [(v,) for v in rvals]
    variants = {
        "dict a": _dict(lvals, ["z", "x", "unused", "y"], pa.int8()),
        "dict b": _dict(rvals, ["y", "q", "x", "z"], pa.int64()),
        "dict with null value": pa.DictionaryArray.from_arrays(
            pa.array([{"x": 0, "y": 1, "z": 2, None: 3}[v] for v in rvals], pa.int16()),
            pa.array(["x", "y", "z", None]),
        ),
        "dict duplicate values": pa.DictionaryArray.from_arrays(
            pa.array(
                [
                    {"x": 0, "y": 2, "z": 3, None: None}[v] if v != "x" or rng.random() < 0.5 else 1
                    for v in rvals
                ],
                pa.int32(),
            ),
            pa.array(["x", "x", "y", "z"]),
        ),
        "dict large_string": pa.DictionaryArray.from_arrays(
            pa.array([None if v is None else ["z", "y", "x"].index(v) for v in lvals], pa.int32()),
            pa.array(["z", "y", "x"], pa.large_string()),
        ),
        "plain left": pa.array(lvals),
        "plain right": pa.array(rvals, pa.large_string()),
        "chunked dict": pa.chunked_array(
            [
                _dict(lvals[:5], ["x", "y", "z"]),
                _dict(lvals[5:11], ["z", "y", "x", "w"]),
                _dict(lvals[11:], ["y", "x", "z"]),
            ]
        ),
    }
    left_variants = ["dict a", "dict large_string", "plain left", "chunked dict"]
    right_variants = ["dict b", "dict with null value", "dict duplicate values", "plain right"]
    pairs = [(lname, rname) for lname in left_variants for rname in right_variants]
    if on_simulator(device):  # every variant once, on either side
        pairs = list(zip(left_variants, right_variants))
    for lname, rname in pairs:
        lby, rby = variants[lname], variants[rname]
        assert physical(lby) == lvals and physical(rby) == rvals
        check_join(
            device,
            pa.array(lkeys, pa.int64()),
            pa.array(rkeys, pa.int64()),
            lkeys,
            rkeys,
            left_by=lby,
            right_by=rby,
            lgroups=lgroups,
            rgroups=rgroups,
            options=THREE_STRATEGIES[:1],
            null_equality=null_equality,
            context=f"{lname} vs {rname}",
        )


@pytest.mark.parametrize("index_type", [pa.uint8(), pa.uint32()], ids=str)
def test_by_dictionary_unsigned_indices(device, index_type):
    """Arrow allows unsigned dictionary indices; polars' Categorical exports uint32 ones."""
    right_by = pa.DictionaryArray.from_arrays(
        pa.array([1, 0, None, 1], index_type), pa.array(["a", "b"])
    )
    right_on = np.array([1, 2, 3, 4])
    for left_by in (
        pa.array(["a", "b", None]),
        pa.DictionaryArray.from_arrays(pa.array([0, 1, None], index_type), pa.array(["a", "b"])),
    ):
        got = asof_join(np.full(3, 9), right_on, left_by, right_by, device=device)
        assert to_host(got).tolist() == [1, 3, NO_MATCH]
        got = asof_join(
            np.full(3, 9), right_on, left_by, right_by, null_equality="equal", device=device
        )
        assert to_host(got).tolist() == [1, 3, 2]


def test_by_float_nan_and_signed_zero(device):
    right_on = np.array([1, 2, 3, 4])
    right_by = np.array([math.nan, -0.0, 0.0, 1.0])
    left_by = np.array([float("nan"), 0.0, -0.0, 1.0, 2.0], dtype=np.float32)
    got = asof_join(np.full(5, 10), right_on, left_by, right_by, device=device).tolist()
    assert got == [0, 2, 2, 3, NO_MATCH]
    # a NaN with another payload is still NaN
    other_nan = np.array([0x7FF8000000000001], dtype=np.int64).view(np.float64)
    got = asof_join(np.array([10]), right_on, other_nan, right_by, device=device).tolist()
    assert got == [0]
    # NaN is not null: with null_equality="equal" a null matches only a null
    got = asof_join(
        np.array([10, 10]),
        pa.array([1, 2]),
        pa.array([None, math.nan]),
        pa.array([math.nan, None]),
        null_equality="equal",
        device=device,
    )
    assert to_host(got).tolist() == [1, 0]


@pytest.mark.parametrize("null_equality", ["unequal", "equal"])
def test_several_by_columns(device, null_equality):
    rng = np.random.default_rng(5)
    n_left, n_right = 20, 22
    specs = [
        (pa.string(), ["a", "b", None]),
        (pa.int32(), [1, 2, None]),
        (pa.bool_(), [True, False]),
        (pa.float64(), [math.nan, 0.0, -0.0]),
    ]
    lcols = [random_by(rng, t, p, n_left) for t, p in specs]
    rcols = [random_by(rng, t, p, n_right) for t, p in specs]
    lkeys, rkeys = int_keys(rng, n_left), int_keys(rng, n_right)
    check_join(
        device,
        pa.array(lkeys, pa.int64()),
        pa.array(rkeys, pa.int64()),
        lkeys,
        rkeys,
        left_by=lcols,
        right_by=rcols,
        lgroups=groups_of(*lcols),
        rgroups=groups_of(*rcols),
        options=trimmed(device, FEW_OPTIONS, 2),
        null_equality=null_equality,
    )


BY_FORMS = [
    "single arrow",
    "list",
    "tuple",
    "pa.Table",
    "RecordBatch",
    "numpy",
    "pandas",
    "pandas DataFrame",
    "polars",
    "polars DataFrame",
    "pandas category",
    "polars categorical",
]


def by_form(cols: list[pa.Array], form: str):
    if form == "single arrow":
        assert len(cols) == 1
        return cols[0]
    if form == "list":
        return list(cols)
    if form == "tuple":
        return tuple(pa.chunked_array([c]) for c in cols)
    if form == "pa.Table":
        return pa.table({f"c{i}": c for i, c in enumerate(cols)})
    if form == "RecordBatch":
        return pa.record_batch({f"c{i}": c for i, c in enumerate(cols)})
    if form == "numpy":
        return [c.to_numpy(zero_copy_only=False) for c in cols]
    if form == "pandas":
        return [c.to_pandas() for c in cols]
    if form == "pandas DataFrame":
        return pd.DataFrame({f"c{i}": c.to_pandas() for i, c in enumerate(cols)})
    if form == "pandas category":
        return [c.to_pandas().astype("category") for c in cols]
    pl = pytest.importorskip("polars")
    if form == "polars":
        return [pl.from_arrow(c) for c in cols]
    if form == "polars DataFrame":
        return pl.DataFrame([pl.from_arrow(c).alias(f"c{i}") for i, c in enumerate(cols)])
    if form == "polars categorical":
        return [pl.from_arrow(c).cast(pl.Categorical) for c in cols]
    raise AssertionError(form)


@NO_PYTHON  # host code: the by columns are encoded the same for every backend
@pytest.mark.parametrize("form", BY_FORMS)
def test_by_column_forms(device, form):
    """by as one column, a list / tuple of columns, a table, a data frame, numpy / pandas /
    polars columns, categoricals: the same groups (string values, no nulls)."""
    rng = np.random.default_rng(8)
    n_left, n_right = 15, 17
    ncols = 1 if form == "single arrow" else 2
    pools = [["IBM", "MSFT", "AAPL"], ["x", "y"]][:ncols]
    lcols = [random_by(rng, pa.string(), p, n_left) for p in pools]
    rcols = [random_by(rng, pa.string(), p, n_right) for p in pools]
    lkeys, rkeys = int_keys(rng, n_left, 0.0), int_keys(rng, n_right, 0.0)
    check_join(
        device,
        np.array(lkeys),
        np.array(rkeys),
        lkeys,
        rkeys,
        left_by=by_form(lcols, form),
        right_by=by_form(rcols, form),
        lgroups=groups_of(*lcols),
        rgroups=groups_of(*rcols),
        options=FEW_OPTIONS[:2],
        context=form,
    )


def test_by_numeric_and_temporal_forms(device):
    """Integer, bool and timestamp by-columns given as numpy / pandas / polars."""
    rng = np.random.default_rng(9)
    specs = [
        (pa.int64(), [1, 2, 3]),
        (pa.bool_(), [True, False]),
        (pa.timestamp("ns"), [0, 10**18]),
    ]
    lcols = [random_by(rng, t, pool, 14) for t, pool in specs]
    rcols = [random_by(rng, t, pool, 16) for t, pool in specs]
    lkeys, rkeys = int_keys(rng, 14, 0.0), int_keys(rng, 16, 0.0)
    for form in ("numpy", "pandas", "pandas DataFrame", "polars", "polars DataFrame"):
        check_join(
            device,
            np.array(lkeys),
            np.array(rkeys),
            lkeys,
            rkeys,
            left_by=by_form(lcols, form),
            right_by=by_form(rcols, form),
            lgroups=groups_of(*lcols),
            rgroups=groups_of(*rcols),
            options=FEW_OPTIONS[:1],
            context=form,
        )


def test_by_groups_on_one_side_only(device):
    got = asof_join(
        np.array([5, 5, 5]),
        np.array([1, 2]),
        np.array(["a", "zz", "b"]),
        np.array(["b", "c"]),
        device=device,
    )
    assert to_host(got).tolist() == [NO_MATCH, NO_MATCH, 0]
    got = asof_join(
        np.array([5]), np.array([], np.int64), np.array(["a"]), np.array([], str), device=device
    )
    assert to_host(got).tolist() == [NO_MATCH]
    got = asof_join(
        np.array([], np.int64), np.array([1]), np.array([], str), np.array(["a"]), device=device
    )
    assert to_host(got).tolist() == []


# ----------------------------------------------------------------------------- order


def test_unsorted_inputs_left_order_and_caller_row_numbers(device):
    """Any order in, the map in left order with the caller's right row numbers."""
    rng = np.random.default_rng(13)
    rkeys = [int(v) for v in rng.permutation(20) * 3]  # distinct keys
    lkeys = [int(v) for v in rng.integers(-2, 62, size=25)]
    rgroups = [int(g) for g in rng.integers(0, 3, size=20)]
    lgroups = [int(g) for g in rng.integers(0, 4, size=25)]
    check_join(
        device,
        np.array(lkeys),
        np.array(rkeys),
        lkeys,
        rkeys,
        left_by=np.array(lgroups),
        right_by=np.array(rgroups),
        lgroups=[(g,) for g in lgroups],
        rgroups=[(g,) for g in rgroups],
        options=FEW_OPTIONS,
    )
    base = to_host(
        asof_join(
            np.array(lkeys), np.array(rkeys), np.array(lgroups), np.array(rgroups), device=device
        )
    )
    # permuting the right side renumbers the map, permuting the left permutes it
    perm = rng.permutation(20)
    inverse = np.argsort(perm)
    moved = to_host(
        asof_join(
            np.array(lkeys),
            np.array(rkeys)[perm],
            np.array(lgroups),
            np.array(rgroups)[perm],
            device=device,
        )
    )
    assert moved.tolist() == [NO_MATCH if r == NO_MATCH else int(inverse[r]) for r in base]
    lperm = rng.permutation(25)
    moved = to_host(
        asof_join(
            np.array(lkeys)[lperm],
            np.array(rkeys),
            np.array(lgroups)[lperm],
            np.array(rgroups),
            device=device,
        )
    )
    assert moved.tolist() == base[lperm].tolist()
    assert (base != NO_MATCH).sum() > 5


def _sorted_right(rng, n, key_pool, n_groups, null_p=0.1):
    """A right side grouped (contiguous groups in first-appearance order) and sorted by key
    within each group; null keys anywhere."""
    groups = sorted(int(g) for g in rng.integers(0, n_groups, size=n))
    group_order = rng.permutation(n_groups)
    groups = sorted(groups, key=lambda g: int(np.where(group_order == g)[0][0]))
    keys = []
    for g in dict.fromkeys(groups):
        k = sorted(
            (key_pool[i] for i in rng.integers(len(key_pool), size=groups.count(g))),
            key=lambda v: (1, 0.0) if v != v else (0, v),
        )
        keys.extend(k)
    keys = [None if rng.random() < null_p else v for v in keys]
    return keys, groups


@pytest.mark.parametrize("with_by", [False, True])
@pytest.mark.parametrize("kind", ["int64", "float64", "uint64", "timestamp[us]"])
def test_presorted_same_map(device, with_by, kind):
    pa_type, pool = KEY_TYPES[kind]
    rng = np.random.default_rng(len(kind) + with_by)
    pool = pool + pool[:3]
    rkeys, rgroups = _sorted_right(rng, 24, pool, 4 if with_by else 1)
    lkeys = [pool[i] for i in rng.integers(len(pool), size=20)]
    lgroups = [int(g) for g in rng.integers(0, 5, size=20)]
    right_on, left_on = pa.array(rkeys, pa_type), pa.array(lkeys, pa_type)
    right_by = pa.array(rgroups) if with_by else None
    left_by = pa.array(lgroups) if with_by else None
    sorted_join = AsofJoin(right_on, right_by, presorted=True, device=device)
    plain_join = AsofJoin(right_on, right_by, presorted=False, device=device)
    for opts in trimmed(device, FEW_OPTIONS, 1, len(kind)):
        a = to_host(sorted_join.join(left_on, left_by, **opts)).tolist()
        b = to_host(plain_join.join(left_on, left_by, **opts)).tolist()
        assert a == b, opts
        want = oracle(
            physical(left_on),
            physical(right_on),
            [(g,) for g in lgroups] if with_by else None,
            [(g,) for g in rgroups] if with_by else None,
            **oracle_options(opts),
        )
        assert a == want, opts


def test_presorted_float_total_order_and_null_groups(device):
    """-0.0 and 0.0 interleaved are sorted; NaN last; null-group rows anywhere (never matched
    under "unequal")."""
    right_on = pa.array([-1.0, 0.0, -0.0, 0.0, math.inf, math.nan, math.nan, 2.0, None, 1.0])
    right_by = pa.array(["a", "a", "a", None, "a", "a", "a", "b", "b", None])
    left_on = pa.array([0.0, -0.0, math.nan, 5.0, 2.0, 0.0])
    left_by = pa.array(["a", "a", "a", "a", "b", None])
    for opts in trimmed(device, FEW_OPTIONS, 2):
        a = to_host(
            asof_join(left_on, right_on, left_by, right_by, presorted=True, device=device, **opts)
        )
        b = to_host(asof_join(left_on, right_on, left_by, right_by, device=device, **opts))
        assert a.tolist() == b.tolist(), opts
        want = oracle(
            physical(left_on),
            physical(right_on),
            groups_of(left_by),
            groups_of(right_by),
            **oracle_options(opts),
        )
        assert a.tolist() == want, opts


def test_presorted_with_tie_break_on_input_sorted_by_key(device):
    """The API: presorted=True means "right is already sorted by (by..., on)". A tie_break
    column is an extra pick rule, not part of that contract."""
    right_on = np.array([1, 1, 1, 2])
    tie = np.array([3, 7, 5, 0])
    a = asof_join(np.array([1, 5]), right_on, tie_break=tie, presorted=True, device=device)
    b = asof_join(np.array([1, 5]), right_on, tie_break=tie, device=device)
    assert to_host(a).tolist() == to_host(b).tolist() == [1, 3]


def test_presorted_tie_break_nulls_never_silently_wrong(device):
    """With nulls in tie_break (nulls lose): presorted=True must either refuse the input or
    give the map presorted=False gives, never another one."""
    for ties in ([-1, None], [None, -1], [None, 5], [5, None]):
        tie = pa.array(ties, pa.int64())
        b = to_host(
            asof_join(np.array([1, 5]), np.array([1, 1]), tie_break=tie, device=device)
        ).tolist()
        assert b == oracle([1, 5], [1, 1], tie_break=ties)
        try:
            a = to_host(
                asof_join(
                    np.array([1, 5]), np.array([1, 1]), tie_break=tie, presorted=True, device=device
                )
            ).tolist()
        except ValueError:
            continue
        assert a == b, ties


# ----------------------------------------------------------------------------- tie_break

TIE_POOLS = {
    "int64": (pa.int64(), [-5, 0, 3, 3, 9, None]),
    "uint64": (pa.uint64(), [0, 2**63, 2**64 - 1, 1, None]),
    "float64": (pa.float64(), [math.nan, -0.0, 0.0, 1.5, -math.inf, math.inf, None]),
    "timestamp[ms]": (pa.timestamp("ms"), [0, 1, 2, None]),
}


@pytest.mark.parametrize("tie_type", list(TIE_POOLS))
def test_tie_break_picks_largest(device, tie_type):
    """Among rows with equal (by, on) the largest tie value wins (nulls lose, NaN largest,
    -0.0 == 0.0); equal tie values fall back to row order (last backward, first forward)."""
    pa_type, pool = TIE_POOLS[tie_type]
    rng = np.random.default_rng(len(tie_type))
    n_right = 24
    rkeys = [int(v) for v in rng.integers(0, 5, size=n_right)]  # many duplicates
    lkeys = [int(v) for v in rng.integers(-1, 7, size=18)]
    rg = [int(g) for g in rng.integers(0, 2, size=n_right)]
    lg = [int(g) for g in rng.integers(0, 2, size=18)]
    tie = random_by(rng, pa_type, pool, n_right)
    check_join(
        device,
        np.array(lkeys),
        np.array(rkeys),
        lkeys,
        rkeys,
        left_by=np.array(lg),
        right_by=np.array(rg),
        lgroups=[(g,) for g in lg],
        rgroups=[(g,) for g in rg],
        tie_break=tie,
        ties=physical(tie),
        options=trimmed(device, ALL_OPTIONS, 2, list(TIE_POOLS).index(tie_type)),
        context=tie_type,
    )


def test_tie_break_explicit(device):
    right_on = np.array([1, 1, 1, 1, 3])
    tie = np.array([2, 9, 9, 4, 0])
    left = np.array([1, 2, 0])
    assert asof_join(left, right_on, tie_break=tie, device=device).tolist() == [2, 2, NO_MATCH]
    assert asof_join(left, right_on, tie_break=tie, strategy="forward", device=device).tolist() == [
        1,
        4,
        1,
    ]
    # without tie_break: last backward, first forward
    assert asof_join(left, right_on, device=device).tolist() == [3, 3, NO_MATCH]
    assert asof_join(left, right_on, strategy="forward", device=device).tolist() == [0, 4, 0]
    # nearest, pandas rule: the forward side's pick is its "first" row (best tie, first)
    got = asof_join(
        np.array([0]),
        right_on,
        tie_break=tie,
        strategy="nearest",
        nearest_tie="backward",
        device=device,
    )
    assert got.tolist() == [1]
    got = asof_join(
        np.array([0]),
        right_on,
        tie_break=tie,
        strategy="nearest",
        nearest_tie="forward",
        device=device,
    )
    assert got.tolist() == [2]


# ----------------------------------------------------------------------------- ambiguity


@pytest.mark.parametrize("use_tie", [False, True])
def test_ambiguous_raise_iff_chosen_key_shared(device, use_tie):
    """ambiguous="raise" raises exactly when some matched right row shares its (group, key,
    tie-break value) with another right row that has a non-null key; "pick" never raises and
    gives the same map."""
    rng = np.random.default_rng(31 + use_tie)
    raised = not_raised = 0
    for trial in range(6 if on_simulator(device) else 12):
        n_right = int(rng.integers(1, 9))
        rkeys = [None if rng.random() < 0.1 else int(v) for v in rng.integers(0, 6, size=n_right)]
        rgroups = [int(g) for g in rng.integers(0, 2, size=n_right)]
        lkeys = [int(v) for v in rng.integers(-1, 7, size=4)]
        lgroups = [int(g) for g in rng.integers(0, 2, size=4)]
        ties = [int(t) for t in rng.integers(0, 3, size=n_right)] if use_tie else None
        opts = FEW_OPTIONS[trial % len(FEW_OPTIONS)]
        joiner = AsofJoin(
            pa.array(rkeys, pa.int64()),
            np.array(rgroups),
            tie_break=None if ties is None else np.array(ties),
            device=device,
        )
        want = oracle(
            lkeys,
            rkeys,
            [(g,) for g in lgroups],
            [(g,) for g in rgroups],
            tie_break=ties,
            **oracle_options(opts),
        )

        def match_key(j):
            return rgroups[j], rkeys[j], None if ties is None else ties[j]

        live = [j for j in range(n_right) if rkeys[j] is not None]
        shared = [
            j for j in want if j != NO_MATCH and sum(match_key(k) == match_key(j) for k in live) > 1
        ]
        picked = to_host(
            joiner.join(np.array(lkeys), np.array(lgroups), ambiguous="pick", **opts)
        ).tolist()
        assert picked == want
        if shared:
            raised += 1
            with pytest.raises(AmbiguousMatchError, match="ambiguous='raise'"):
                joiner.join(np.array(lkeys), np.array(lgroups), ambiguous="raise", **opts)
        else:
            not_raised += 1
            got = to_host(
                joiner.join(np.array(lkeys), np.array(lgroups), ambiguous="raise", **opts)
            )
            assert got.tolist() == want
    assert raised and not_raised


def test_ambiguous_explicit_cases(device):
    right_on = np.array([1, 1, 5, 3])
    right_by = np.array(["a", "a", "a", "b"])
    # key 1 has two rows in group a; key 5 has one
    ok = asof_join(
        np.array([6, 3]), right_on, np.array(["a", "b"]), right_by, ambiguous="raise", device=device
    )
    assert to_host(ok).tolist() == [2, 3]
    with pytest.raises(AmbiguousMatchError, match=r"left row 1 \(and 0 more\)"):
        asof_join(
            np.array([6, 2]),
            right_on,
            np.array(["a", "a"]),
            right_by,
            ambiguous="raise",
            device=device,
        )
    with pytest.raises(AmbiguousMatchError, match=r"left row 0 \(and 1 more\)"):
        asof_join(
            np.array([1, 0]),
            right_on,
            np.array(["a", "a"]),
            right_by,
            strategy="forward",
            ambiguous="raise",
            device=device,
        )
    # the same key in another group is not a duplicate
    ok = asof_join(
        np.array([3]),
        np.array([3, 3]),
        np.array(["b"]),
        np.array(["b", "c"]),
        ambiguous="raise",
        device=device,
    )
    assert to_host(ok).tolist() == [0]
    # no match never raises; the duplicated key not chosen never raises
    ok = asof_join(
        np.array([-5, 4]),
        right_on,
        np.array(["a", "a"]),
        right_by,
        strategy="nearest",
        allow_exact_matches=False,
        tolerance=1,
        ambiguous="raise",
        device=device,
    )
    assert to_host(ok).tolist() == [NO_MATCH, 2]
    # nearest picks the duplicated key -> raises
    with pytest.raises(AmbiguousMatchError):
        asof_join(
            np.array([2]),
            right_on,
            np.array(["a"]),
            right_by,
            strategy="nearest",
            ambiguous="raise",
            device=device,
        )
    # -0.0 and 0.0 are the same key, NaN and NaN too
    for keys in ([-0.0, 0.0], [math.nan, math.nan]):
        with pytest.raises(AmbiguousMatchError):
            asof_join(np.array([keys[0]]), np.array(keys), ambiguous="raise", device=device)
    # a null key and a null group (unequal) are no candidates, hence no duplicates
    ok = asof_join(np.array([7]), pa.array([None, 7]), ambiguous="raise", device=device)
    assert to_host(ok).tolist() == [1]
    ok = asof_join(
        np.array([7]),
        np.array([7, 7]),
        pa.array(["a"]),
        pa.array(["a", None]),
        ambiguous="raise",
        device=device,
    )
    assert to_host(ok).tolist() == [0]
    with pytest.raises(AmbiguousMatchError):  # ... unless nulls are equal
        asof_join(
            np.array([7]),
            np.array([7, 7]),
            pa.array([None], pa.string()),
            pa.array([None, None], pa.string()),
            null_equality="equal",
            ambiguous="raise",
            device=device,
        )


def test_ambiguous_with_tie_break(device):
    right_on = np.array([1, 1, 1, 2, 2])
    # key 1: ties 4, 8, 6 -> resolved (row 1); key 2: ties 3, 3 -> not resolved
    tie = np.array([4, 8, 6, 3, 3])
    ok = asof_join(np.array([1, 1]), right_on, tie_break=tie, ambiguous="raise", device=device)
    assert to_host(ok).tolist() == [1, 1]
    ok = asof_join(
        np.array([1]), right_on, tie_break=tie, strategy="forward", ambiguous="raise", device=device
    )
    assert to_host(ok).tolist() == [1]
    with pytest.raises(AmbiguousMatchError):
        asof_join(np.array([2]), right_on, tie_break=tie, ambiguous="raise", device=device)
    # lower tie values shared among themselves do not matter; the winner's own value does
    tie = np.array([4, 4, 9, 3, 3])
    ok = asof_join(np.array([1]), right_on, tie_break=tie, ambiguous="raise", device=device)
    assert to_host(ok).tolist() == [2]
    tie = np.array([9, 4, 9, 1, 3])
    with pytest.raises(AmbiguousMatchError):
        asof_join(np.array([1]), right_on, tie_break=tie, ambiguous="raise", device=device)
    ok = asof_join(np.array([2]), right_on, tie_break=tie, ambiguous="raise", device=device)
    assert to_host(ok).tolist() == [4]
    # null tie values lose and are equal to each other
    tie = pa.array([None, None, 1, None, None])
    ok = asof_join(np.array([1]), right_on, tie_break=tie, ambiguous="raise", device=device)
    assert to_host(ok).tolist() == [2]
    with pytest.raises(AmbiguousMatchError):
        asof_join(np.array([2]), right_on, tie_break=tie, ambiguous="raise", device=device)


# ----------------------------------------------------------------------------- gather


def payload_columns():
    D = decimal.Decimal
    return {
        "i8": pa.array([1, -2, None, 127], pa.int8()),
        "u64": pa.array([0, 2**64 - 1, None, 2**63], pa.uint64()),
        "f32": pa.array([1.5, math.inf, None, -0.0], pa.float32()),
        "f64": pa.array([math.nan, 2.5, None, 1e300]),
        "bool": pa.array([True, False, None, True]),
        "str": pa.array(["a", "", None, "ß"]),
        "large_str": pa.array(["a", "b", None, "c"], pa.large_string()),
        "binary": pa.array([b"\x00", b"b", None, b""]),
        "ts": pa.array([0, 10**18, None, -5], pa.timestamp("ns", "UTC")),
        "date": pa.array([0, 1, None, 20000], pa.date32()),
        "time": pa.array([0, 1, None, 86_399_999_999], pa.time64("us")),
        "dur": pa.array([0, -1, None, 7], pa.duration("ms")),
        "dec128": pa.array([D("1.25"), D("-99999.99"), None, D("0.00")], pa.decimal128(7, 2)),
        "dec256": pa.array([D("1.5"), D("2"), None, D("-3")], pa.decimal256(40, 5)),
        "list": pa.array([[1, 2], [], None, [None]], pa.list_(pa.int64())),
        "large_list": pa.array([["x"], None, [], ["y", "z"]], pa.large_list(pa.string())),
        "struct": pa.array([{"a": 1, "b": "x"}, None, {"a": None, "b": "y"}, {"a": 3, "b": None}]),
        "dict": pa.DictionaryArray.from_arrays(
            pa.array([1, 0, None, 1], pa.int8()), pa.array(["lo", "hi"])
        ),
        "fixed": pa.array([b"ab", b"cd", None, b"ef"], pa.binary(2)),
        "null": pa.nulls(4),
    }


def test_gather_every_payload_type():
    table = pa.table(payload_columns())
    gmap = np.array([3, NO_MATCH, 0, 2, 3, NO_MATCH, 1], dtype=np.int32)
    out = ag.gather(table, gmap)
    assert isinstance(out, pa.Table)
    assert out.num_rows == len(gmap)
    assert out.schema.names == table.schema.names
    for name in table.column_names:
        assert out.column(name).type == table.column(name).type, name
        src = table.column(name).to_pylist()
        want = [None if i == NO_MATCH else src[i] for i in gmap]
        got = out.column(name).to_pylist()
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g == w or (g != g and w != w), (name, got, want)


def test_gather_map_forms_and_table_forms():
    table = pa.table({"x": [10, 20, 30], "s": ["a", "b", "c"]})
    want = {"x": [30, None, 10], "s": ["c", None, "a"]}
    maps = [
        np.array([2, NO_MATCH, 0], np.int32),
        np.array([2, ag._types.NO_MATCH_INT64, 0], np.int64),
        np.array([2, NO_MATCH, 0], np.int64),
        pa.array([2, NO_MATCH, 0], pa.int32()),
        pa.chunked_array([[2], [NO_MATCH, 0]], pa.int32()),
        [2, NO_MATCH, 0],
    ]
    for gmap in maps:
        assert ag.gather(table, gmap).to_pydict() == want, gmap
    for tab in (table.to_batches()[0], table.to_pandas()):
        out = ag.gather(tab, np.array([2, NO_MATCH, 0], np.int32))
        assert out.column("x").to_pylist() == want["x"]
        assert out.column("s").to_pylist() == want["s"]
    empty = ag.gather(table, np.array([], np.int32))
    assert empty.num_rows == 0 and empty.schema == table.schema
    nothing = ag.gather(table, np.full(2, NO_MATCH, np.int32))
    assert nothing.to_pydict() == {"x": [None, None], "s": [None, None]}
    # a right table with no rows: every map entry must be NO_MATCH
    none = ag.gather(table.slice(0, 0), np.full(2, NO_MATCH, np.int32))
    assert none.to_pydict() == {"x": [None, None], "s": [None, None]}
    pl = pytest.importorskip("polars")
    out = ag.gather(pl.from_arrow(table.select(["x"])), np.array([2, NO_MATCH, 0], np.int32))
    assert out.column("x").to_pylist() == want["x"]


def test_gather_string_view_payload():
    """string_view is a string type (and what polars hands over for its String columns)."""
    view = pa.table({"s": pa.array(["a", "long enough to be out of line", None], pa.string_view())})
    gmap = np.array([1, NO_MATCH, 0, 2], np.int32)
    assert ag.gather(view, gmap).column("s").to_pylist() == [
        "long enough to be out of line",
        None,
        "a",
        None,
    ]
    pl = pytest.importorskip("polars")
    frame = pl.DataFrame({"sym": ["IBM", "MSFT"], "px": [1.0, 2.0]})
    out = ag.gather(frame, np.array([1, NO_MATCH], np.int32))
    assert out.column("sym").to_pylist() == ["MSFT", None]
    assert out.column("px").to_pylist() == [2.0, None]


def test_gather_gives_every_field_nullable():
    """A NO_MATCH row is null: a field the table declared not null stayed so, holding
    nulls (and pyarrow's parquet writer refused the result)."""
    schema = pa.schema([pa.field("a", pa.int64(), nullable=False)], metadata={"k": "v"})
    table = pa.table({"a": [1, 2, 3]}, schema=schema)
    for n in (3, 70_000):  # the small take and the parallel one
        out = ag.gather(table, np.resize(np.array([0, NO_MATCH, 2], np.int32), n))
        assert out.schema.field("a").nullable and out.schema.metadata == {b"k": b"v"}


def test_gather_takes_maps_in_every_form_a_caller_holds():
    """Big-endian maps (the parallel check's kernel took them as Python objects), pandas'
    and polars' integer Series with nulls (numpy made them floats, refused: a null is no
    match, as in an Arrow map), and an empty list (float64 to numpy)."""
    pd = pytest.importorskip("pandas")
    pl = pytest.importorskip("polars")
    table = pa.table({"x": [10, 20, 30]})
    for n in (3, 70_000):
        native = np.resize(np.array([2, 0, 1], np.int64), n)
        want = ag.gather(table, native).column("x").to_pylist()
        for dtype in (">i8", ">i4"):
            assert ag.gather(table, native.astype(dtype)).column("x").to_pylist() == want
    for gmap in (pd.Series([2, None, 0], dtype="Int32"), pl.Series([2, None, 0], dtype=pl.Int32)):
        assert ag.gather(table, gmap).column("x").to_pylist() == [30, None, 10]
    assert ag.gather(table, []).num_rows == 0


def _float16_dictionaries(*values):
    """One dictionary chunk of float16 ``values`` each, indices 0, 1, ... (built from its
    parts: pyarrow 19 to 22 have no dictionary_encode of float16)."""
    return [
        pa.DictionaryArray.from_arrays(
            pa.array(range(len(v)), pa.int8()), pa.array(np.array(v, np.float16))
        )
        for v in values
    ]


def test_gather_columns_arrows_take_cannot():
    """Run-end encoded columns (Arrow has no take for them) and dictionary chunks Arrow
    cannot unify (a null value refused, for views with an error of its own; float16 ones
    unified by their bits, 1.5 read as 15872.0, silently) come through with their types and
    values."""
    gmap = np.array([3, NO_MATCH, 1, 0], np.int32)
    halves = _float16_dictionaries([0, 1.5], [1.5, 2])
    columns = {
        "ree": pa.chunked_array([pc.run_end_encode(pa.array([7, 7, 8, None]))]),
        "halves": pa.chunked_array(halves),
    }
    for text in (pa.string(), pa.string_view()):  # views: Arrow cannot even decode them
        columns[f"holes {text}"] = pa.chunked_array(
            pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int8()), pa.array(v, text))
            for v in (["x", None], ["y", "x"])
        )
    for name, column in columns.items():
        out = ag.gather(pa.table({name: column}), gmap).column(name)
        assert out.type == column.type, name
        values = column.to_pylist()
        assert out.to_pylist() == [values[3], None, values[1], values[0]], name


def test_dictionary_by_chunks_arrow_cannot_unify():
    """by-columns of dictionary chunks holding a null value (Arrow refuses to unify them:
    a join raised ArrowInvalid) or of float16 values (unified by their bits: nothing
    matched) join by value, as the same values not encoded do."""
    halves = _float16_dictionaries([0, 1.5], [1.5, 2])
    holes = [  # views too: pyarrow 26 has no cast of a dictionary of views to its values
        [
            pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int8()), pa.array(v, text))
            for v in (["A", None], ["B", "A"])
        ]
        for text in (pa.string(), pa.string_view())
    ]
    for chunks in (halves, *holes):
        coded = pa.chunked_array(chunks)
        plain = pa.array(coded.to_pylist(), coded.type.value_type)
        keys = np.zeros(4, np.int64)
        for null_equality in ("unequal", "equal"):
            want = asof_join(keys, keys, plain, plain, null_equality=null_equality, device="cpu")
            for left, right in ((coded, plain), (plain, coded), (coded, coded)):
                got = asof_join(keys, keys, left, right, null_equality=null_equality, device="cpu")
                assert got.tolist() == want.tolist()


@pytest.mark.parametrize("text", [pa.string(), pa.string_view()], ids=str)
@pytest.mark.parametrize("null_equality", ["unequal", "equal"])
def test_dictionary_by_chunks_far_larger_than_their_rows(null_equality, text):
    """A reader's batches each carry their row group's whole dictionary: by-columns of a few
    rows a chunk (a null among them) over 500 values join as the same values decoded, and
    their groups are the values the rows use, not all the dictionaries hold."""
    from asofgpu._encode import Groups

    rng = np.random.default_rng(8)
    dictionary = pa.array([f"id{i}" for i in range(500)], text)  # (views: kept whole)

    def coded(chunks: int) -> pa.ChunkedArray:
        return pa.chunked_array(
            pa.DictionaryArray.from_arrays(
                pa.array(rng.integers(0, 500, 6), pa.int32(), mask=rng.random(6) < 0.2), dictionary
            ).slice(1)
            for _ in range(chunks)
        )

    left, right = coded(4), coded(5)
    lkeys, rkeys = rng.integers(0, 100, len(left)), np.sort(rng.integers(0, 100, len(right)))
    decoded = [pa.chunked_array([pa.array(c.to_pylist(), pa.string())]) for c in (left, right)]
    want = asof_join(lkeys, rkeys, *decoded, null_equality=null_equality, device="cpu")
    got = asof_join(lkeys, rkeys, left, right, null_equality=null_equality, device="cpu")
    assert got.tolist() == want.tolist()
    equal = null_equality == "equal"
    groups = Groups([right], ["right_by"], null_equal=equal)
    used = len({v for v in right.to_pylist() if equal or v is not None})
    assert groups.n_groups == (used if text == pa.string() else 500 + equal)


def test_gather_bad_maps_raise():
    table = pa.table({"x": [1, 2, 3]})
    with pytest.raises(IndexError, match=r"gmap\[1\] = 3 is not a row"):
        ag.gather(table, np.array([0, 3], np.int32))
    with pytest.raises(IndexError, match=r"gmap\[0\] = -1 is not a row"):
        ag.gather(table, np.array([-1], np.int64))
    with pytest.raises(IndexError):
        ag.gather(table.slice(0, 0), np.array([0], np.int32))
    with pytest.raises(TypeError, match="gmap must be a one-dimensional integer array"):
        ag.gather(table, np.array([0.0, 1.0]))
    with pytest.raises(TypeError, match="gmap must be a one-dimensional integer array"):
        ag.gather(table, np.zeros((2, 1), np.int32))


def test_gather_after_join(device):
    quotes = pa.table(
        {
            "t": pa.array([1, 5, 9], pa.timestamp("ms")),
            "bid": [1.0, 2.0, None],
            "sym": pa.array(["a", "b", "a"]).dictionary_encode(),
        }
    )
    gmap = to_host(
        asof_join(
            pa.array([0, 5, 10, 6], pa.timestamp("ms")),
            quotes["t"],
            pa.array(["a", "b", "a", "a"]),
            quotes["sym"],
            device=device,
        )
    )
    assert gmap.tolist() == [NO_MATCH, 1, 2, 0]
    out = ag.gather(quotes, gmap)
    assert out.column("bid").to_pylist() == [None, 2.0, None, 1.0]
    assert out.column("sym").to_pylist() == [None, "b", "a", "a"]
    assert out.column("t").cast(pa.int64()).to_pylist() == [None, 5, 9, 1]


def test_device_datetimes_reach_cupy_as_int64_ticks():
    """cupy 14.0.0 refuses datetime64 in __cuda_array_interface__: a temporal device column
    is read through an interface that says int64, over the same memory, and keeps the
    column alive (issue 24, item 3). The join on such a column runs in make gpu-check."""
    from asofgpu._columns import _AsTicks

    class Column:
        __cuda_array_interface__ = {
            "shape": (3,),
            "typestr": "<M8[ns]",
            "data": (1234, False),
            "strides": None,
            "version": 3,
            "descr": [("", "<M8[ns]")],
        }

    column = Column()
    ticks = _AsTicks(column, column.__cuda_array_interface__)
    assert ticks.__cuda_array_interface__ == {
        **Column.__cuda_array_interface__,
        "typestr": "<i8",
        "descr": [("", "<i8")],
    }
    assert ticks._owner is column
    assert column.__cuda_array_interface__["typestr"] == "<M8[ns]"  # the column's, unchanged


@pytest.mark.parametrize("null_equality", ["unequal", "equal"])
@pytest.mark.parametrize(
    "left_by",
    [
        pd.Series(pd.Categorical([None, None])),  # pandas types its categories float64
        pa.array([None, None], pa.float64()),
        pa.array([None, None], pa.null()),
        pa.DictionaryArray.from_arrays(pa.array([None, None], pa.int8()), pa.array([], pa.int64())),
    ],
    ids=["pandas categorical", "float64", "null", "dictionary of int64"],
)
def test_a_left_by_column_without_a_value_is_in_no_group_whatever_its_type(
    device, left_by, null_equality
):
    """A probe batch whose by-keys are all unknown (or empty) is typed as its source guessed:
    its rows match nothing, or the right's null group under null_equality="equal", where a
    type check refused it. Prepared on strings."""
    right_by = pa.array(["A", None, "B"])
    prepared = ag.AsofJoin(
        np.array([0, 1, 2]), right_by, null_equality=null_equality, device=device
    )
    got = to_host(prepared.join(np.array([5, 0]), left_by))
    want = oracle(
        [5, 0],
        [0, 1, 2],
        [(None,), (None,)],
        [(v,) for v in right_by.to_pylist()],
        null_equal=null_equality == "equal",
    )
    assert got.tolist() == want
    empty = pd.Series(pd.Categorical([]))  # pandas' empty Categorical: dictionary of nulls
    assert to_host(prepared.join(np.array([], np.int64), empty)).tolist() == []
    with pytest.raises(TypeError, match=r"left_by\[0\] \(double\) and right_by\[0\] \(string\)"):
        prepared.join(np.array([5]), pa.array([1.5]))  # a value of another type still is refused
    with pytest.raises(TypeError, match=r"left_by\[0\] \(double\) and right_by\[0\] \(string\)"):
        prepared.join(np.array([], np.int64), pa.array([], pa.float64()))  # a typed empty one


@pytest.mark.parametrize("null_equality", ["unequal", "equal"])
@pytest.mark.parametrize(
    "right_by",
    [
        pd.Series(pd.Categorical([None, None])),  # pandas types its categories float64
        pa.array([None, None], pa.float64()),
        pa.DictionaryArray.from_arrays(pa.array([None, None], pa.int8()), pa.array([], pa.int64())),
        pd.Series(pd.Categorical([])),  # pandas' empty Categorical: dictionary of nulls
    ],
    ids=["pandas categorical", "float64", "dictionary of int64", "empty categorical"],
)
def test_a_right_by_column_without_a_value_is_one_null_group_whatever_its_type(
    device, right_by, null_equality
):
    """The same on the prepared side (pandas' window and range joins refused a right frame
    whose Categorical by column had no category: empty, or all missing): left rows of any
    type match nothing, null ones its null group under null_equality="equal"."""
    right_keys = list(range(len(right_by)))
    prepared = ag.AsofJoin(
        np.array(right_keys, np.int64), right_by, null_equality=null_equality, device=device
    )
    left_by = pa.array(["A", None])
    got = to_host(prepared.join(np.array([5, 5]), left_by))
    want = oracle(
        [5, 5],
        right_keys,
        [(v,) for v in left_by.to_pylist()],
        [(None,)] * len(right_keys),
        null_equal=null_equality == "equal",
    )
    assert got.tolist() == want


@pytest.mark.parametrize(
    "values",
    [
        np.array([3, -1, 7], np.int8),
        np.array([2**64 - 1, 0], np.uint64),
        np.array([1.5, np.nan, -np.inf], np.float32),
        np.array([0.5, 2.0], np.float16),
        np.array([True, False, True]),
        np.arange(10, dtype=np.int64)[::3],  # strided
        np.array([1, 2], ">i4"),  # big-endian: to_arrow makes it native first
        np.array(["2026-12-07T10:00:00.5", "NaT"], "datetime64[ms]"),
        np.array([1, "NaT", -3], "timedelta64[ns]"),
        np.array(["2026-12-07", "NaT"], "datetime64[D]"),  # a date: pa.array's way
        np.array(["a", "bc"]),
        np.ma.masked_array([5, 55, 95], mask=[0, 1, 0]),  # masked: null
        np.ma.masked_array(np.array(["2026-12-07", "2026-12-08"], "datetime64[s]"), mask=[1, 0]),
    ],
    ids=lambda v: str(v.dtype),
)
def test_a_numpy_column_reads_as_pa_array_reads_it(values):
    """``to_arrow`` of a numpy array goes through its buffer where it can (pyarrow's
    ``pa.array`` imports pandas first): the same type, values and nulls."""
    from asofgpu._columns import to_arrow

    try:
        want = pa.array(values.astype(values.dtype.newbyteorder("=")))
    except pa.ArrowException:
        with pytest.raises(TypeError, match="could not be read as a column of one type"):
            to_arrow(values, "left_on")
        return

    def seen(column):  # NaN as a name: it equals nothing, itself included
        return ["NaN" if isinstance(v, float) and math.isnan(v) else v for v in column.to_pylist()]

    got = to_arrow(values, "left_on")
    assert got.type == want.type and seen(got) == seen(want)


def test_a_multiple_of_a_time_unit_keeps_its_multiple():
    """pyarrow reads ``datetime64[10ms]`` as milliseconds, dropping the 10: 10 ms read as 1
    ms matched the wrong rows. The keys are read in whole units first."""
    right = np.array([1, 2, 5], "datetime64[10ms]")  # 10, 20 and 50 ms
    left = np.array([15, 25, 45], "datetime64[ms]")
    m = ag.AsofJoin(right, device="cpu").join(left)
    assert to_host(m).tolist() == [0, 1, 1]
    m = ag.AsofJoin(np.array([1, 3], "datetime64[2D]"), device="cpu").join(  # days 2 and 6
        np.array([3, 6], "datetime64[D]")
    )
    assert to_host(m).tolist() == [0, 1]
    # A device column's ticks are read as they lie: a multiple of a unit is refused there
    from asofgpu._columns import key_type_of_numpy

    message = (
        "right_on must use the unit ms itself, not a multiple of it, got datetime64[10ms]: "
        "cast it with .astype('M8[ms]') first"
    )
    with pytest.raises(TypeError, match=re.escape(message)):
        key_type_of_numpy(np.dtype("datetime64[10ms]"), "right_on")


def test_masked_numpy_keys_are_nulls():
    """A masked numpy array's masked keys are nulls: a left one matches nothing, a right one
    is matched by none (through pa.array, which reads the mask)."""
    right = np.arange(0, 100, 10)
    m = ag.AsofJoin(right, device="cpu").join(np.ma.masked_array([5, 55, 95], mask=[0, 1, 0]))
    assert to_host(m).tolist() == [0, NO_MATCH, 9]
    masked_right = np.ma.masked_array(right, mask=[0] * 9 + [1])
    assert to_host(ag.AsofJoin(masked_right, device="cpu").join(np.array([95]))).tolist() == [8]
