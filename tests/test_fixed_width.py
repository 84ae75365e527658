"""Fixed-width by-values (kernels/fixed_width.py): their dictionary encoding against Arrow's
``dictionary_encode`` (the same codes, in order of first appearance, and the same
dictionary) and their lookup in a dictionary's table against Arrow's ``index_in``, for
every integer width and sign at its extremes, floats (NaN, -0.0, inf), temporals, nulls
either way, sliced columns and values the dictionary lacks, on one thread and on all cores;
then through ``Groups`` (one by-column and two) and a whole join, against Arrow's path."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import asofgpu as ag
from asofgpu import _backend, _encode
from asofgpu._backend import walks
from conftest import HUGE


def _int_values(bits: int, signed: bool):
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    edges = sorted({lo, hi, 0, 1, hi - 1} | ({-1, lo + 1} if signed else set()))
    return st.one_of(
        st.sampled_from(edges),
        st.integers(lo, hi),
        st.integers(-3, 3).filter(lambda v: lo <= v <= hi),
    )


# (type, values as the type's own Python values or the integers under it, a view type)
FIXED = {
    "int8": (pa.int8(), _int_values(8, True), None),
    "uint8": (pa.uint8(), _int_values(8, False), None),
    "int16": (pa.int16(), _int_values(16, True), None),
    "uint16": (pa.uint16(), _int_values(16, False), None),
    "int32": (pa.int32(), _int_values(32, True), None),
    "uint32": (pa.uint32(), _int_values(32, False), None),
    "int64": (pa.int64(), _int_values(64, True), None),
    "uint64": (pa.uint64(), _int_values(64, False), None),
    # float32 reaches the lookup as float64 (canonical_by), as in a join
    "float32": (
        pa.float32(),
        st.sampled_from([0.0, -0.0, math.nan, math.inf, -math.inf, 1.5, -2.25, 3.0]),
        None,
    ),
    "float64": (
        pa.float64(),
        st.one_of(st.sampled_from([0.0, -0.0, math.nan, math.inf, 1.5]), st.floats(allow_nan=True)),
        None,
    ),
    "timestamp": (pa.int64(), _int_values(64, True), pa.timestamp("ns")),
    "date32": (pa.int32(), _int_values(32, True), pa.date32()),
    "time32": (pa.int32(), st.integers(0, 86_399), pa.time32("s")),
    "duration": (pa.int64(), _int_values(64, True), pa.duration("ms")),
}


def _column(rows, name: str) -> pa.Array:
    t, _, view = FIXED[name]
    arr = pa.array(rows, t)
    return arr.view(view) if view is not None else arr


def _canonical(arr: pa.Array) -> pa.Array:
    return _encode.canonical_by(pa.chunked_array([arr])).combine_chunks()


def _lookup(dictionary: pa.Array, column: pa.Array, null_code: int) -> np.ndarray:
    table = _backend.fixed_lookup_table(*_encode._fixed_width_buffers(dictionary))
    return _backend.lookup_fixed(table, *_encode._fixed_width_buffers(column), null_code)


def _index_in(dictionary: pa.Array, column: pa.Array, null_code: int) -> np.ndarray:
    want = pc.index_in(column, value_set=dictionary, skip_nulls=True)
    want = want.fill_null(-1).to_numpy().astype(np.int32)
    want[column.is_null().to_numpy(zero_copy_only=False)] = null_code
    return want


def _encode_kernel(arr: pa.Array, nulls_distinct: bool, n_pieces: int):
    values, bitmap, bit0 = _encode._fixed_width_buffers(arr)
    codes = np.empty(len(arr), np.int32)
    # read-only, as the backend passes them: a writable signature compiled here would fail
    # test_scan's check that the backend never compiles one, in a worker that ran this first
    read_only = _backend.base.read_only
    firsts = _backend.jit.cpu_fixed_width().dictionary_encode(
        read_only(values),
        read_only(_encode.NO_BYTES),
        read_only(bitmap),
        np.int64(bit0),
        nulls_distinct,
        n_pieces,
        codes,
        np.empty(len(arr), np.int64),
    )
    return codes, arr.take(pa.array(firsts))


def _assert_encoded_like_arrow(arr: pa.Array, nulls_distinct: bool, n_pieces: int):
    codes, dictionary = _encode_kernel(arr, nulls_distinct, n_pieces)
    enc = pc.dictionary_encode(arr, null_encoding="mask" if nulls_distinct else "encode")
    np.testing.assert_array_equal(codes, enc.indices.fill_null(-1).to_numpy())
    _assert_same_values(dictionary, enc.dictionary)


def _assert_same_values(a: pa.Array, b: pa.Array):
    """Equal arrays, NaN equal to NaN (Arrow's ``equals`` is IEEE's there): the same type,
    nulls and bits."""
    assert a.type == b.type and len(a) == len(b), (a, b)
    valid = a.is_valid().to_numpy(zero_copy_only=False)
    np.testing.assert_array_equal(valid, b.is_valid().to_numpy(zero_copy_only=False))
    np.testing.assert_array_equal(
        _encode._fixed_width_buffers(a)[0][valid], _encode._fixed_width_buffers(b)[0][valid]
    )


@pytest.mark.parametrize("name", list(FIXED))
@settings(max_examples=80, deadline=None)
@given(
    data=st.data(), nulls_distinct=st.booleans(), n_pieces=st.integers(1, 5), cut=st.integers(0, 5)
)
def test_codes_and_dictionary_equal_arrows(name, data, nulls_distinct, n_pieces, cut):
    """Pieces encoded apart and merged in order give Arrow's codes and dictionary: values in
    order of first appearance, a null as one more value (or -1 under ``nulls_distinct``);
    each piece on a core of its own, or several pieces one after another on one."""
    values = st.one_of(st.none(), FIXED[name][1])
    pool = data.draw(st.lists(values, min_size=1, max_size=8))
    rows = data.draw(st.lists(st.sampled_from(pool), max_size=60))
    arr = _canonical(_column(rows, name))
    _assert_encoded_like_arrow(arr, nulls_distinct, n_pieces)
    _assert_encoded_like_arrow(arr.slice(min(cut, len(arr))), nulls_distinct, n_pieces)


@pytest.mark.parametrize("name", list(FIXED))
@settings(max_examples=60, deadline=None)
@given(data=st.data(), cut=st.integers(0, 5))
def test_encoding_by_sorting_equals_arrows(name, data, cut):
    """A by column of numbers without nulls, past ``sort_encode_min_rows`` (mostly distinct
    entity ids), encoded by sorting gives Arrow's dictionary_encode exactly: values in order
    of first appearance, NaN one value, -0.0 as 0.0 (canonical), chunked or not."""
    values = FIXED[name][1]
    pool = data.draw(st.lists(values, min_size=1, max_size=12))
    rows = data.draw(st.lists(st.sampled_from(pool), min_size=1, max_size=60))
    arr = _canonical(_column(rows, name)).slice(min(cut, len(rows) - 1))
    enc = pc.dictionary_encode(arr)
    for column in (pa.chunked_array([arr]), pa.chunked_array([arr.slice(0, 3), arr.slice(3)])):
        for radix_from in (1, 10**9):  # the radix sort (as at 8M rows), and numpy's
            with walks.overridden(radix_min_rows=radix_from):
                dictionary, codes = _encode._encode_sorted(column)
            np.testing.assert_array_equal(codes, enc.indices.to_numpy())
            _assert_same_values(dictionary, enc.dictionary)


def test_a_large_mostly_distinct_by_column_is_encoded_by_sorting_and_joins_alike():
    """Past the threshold, a by column Arrow would hash (mostly distinct ids) is encoded by
    sorting (a recorded decision), and the join matches the one encoded by Arrow's hash."""
    rng = np.random.default_rng(9)
    n = 20_000
    right_by = pa.chunked_array([pa.array(rng.permutation(n) * 7)])
    right_on = pa.array(rng.integers(0, 1_000, n))
    left_by = pa.array(rng.integers(0, n, 5_000) * 7)
    left_on = pa.array(rng.integers(0, 1_000, 5_000))
    want = ag.AsofJoin(right_on, right_by, device="cpu").join(left_on, left_by)
    with walks.overridden(sort_encode_min_rows=n), walks.recorded() as decisions:
        got = ag.AsofJoin(right_on, right_by, device="cpu").join(left_on, left_by)
    assert ("encodes_by_sorting", True) in decisions
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("nulls_distinct", [False, True])
def test_many_distinct_values_grow_the_tables(nulls_distinct):
    """50k distinct values among 200k rows: each piece's table and the merge's grow many
    times over; with more pieces than threads, a thread encodes several one after another."""
    import numba

    rng = np.random.default_rng(5)
    rows = rng.integers(-(1 << 62), 1 << 62, 50_000)[rng.integers(0, 50_000, 200_000)]
    arr = pa.array(rows, mask=rng.random(200_000) < 0.001)
    for n_pieces in (1, 2, 7, 4 * numba.get_num_threads() + 1):
        _assert_encoded_like_arrow(arr, nulls_distinct, n_pieces)


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("name", list(FIXED))
@settings(max_examples=40, deadline=None)
@given(data=st.data(), null_code=st.integers(-1, 5), cut=st.integers(0, 5))
def test_lookup_in_a_dictionary_equals_arrows_index_in(name, parallel, data, null_code, cut):
    """Each row's position in a dictionary of distinct values (which may hold a null), -1
    where it has none and the given code for nulls; the column sliced (an offset into its
    values and its validity bits)."""
    values = st.one_of(st.none(), FIXED[name][1])
    pool = data.draw(st.lists(values, max_size=30))
    dictionary = pc.unique(_canonical(_column(pool, name)))
    rows = data.draw(st.lists(st.one_of(st.sampled_from(pool or [None]), values), max_size=60))
    column = _canonical(_column(rows, name))
    column = column.slice(min(cut, len(column)))
    with walks.overridden(parallel_min_rows=0 if parallel else 1 << 62):
        found = _lookup(dictionary, column, null_code)
    np.testing.assert_array_equal(found, _index_in(dictionary, column, null_code))


def _unmix(h: int) -> int:
    """The uint64 whose ``hashing.mix`` is h (each step of mix is a bijection)."""
    from asofgpu.kernels import hashing

    m = (1 << 64) - 1
    x = h ^ (h >> 29) ^ (h >> 58)  # undoes x ^= x >> 29
    x = (x * pow(hashing.MIX, -1, 1 << 64)) & m  # undoes x *= MIX
    return x ^ (x >> 32)  # undoes x ^= x >> 32


@pytest.mark.parametrize("n_pieces", [1, 3])
def test_the_value_that_hashes_as_a_null_stays_apart_from_nulls(n_pieces):
    """Nulls hash to ``NULL_HASH``, and one valid value hashes there too: the tables must
    tell them apart by validity, in the pieces, the merge and the lookup."""
    from asofgpu.kernels import hashing

    bits = _unmix(hashing.NULL_HASH)
    value = bits - (1 << 64) if bits >= 1 << 63 else bits
    arr = pa.array([value, None, value, None, 7, None], pa.int64())
    for nulls_distinct in (False, True):
        _assert_encoded_like_arrow(arr, nulls_distinct, n_pieces)
    dictionary = pa.array([None, value, 7], pa.int64())
    column = pa.array([value, None, 7, value, 5, None], pa.int64())
    np.testing.assert_array_equal(_lookup(dictionary, column, 0), _index_in(dictionary, column, 0))


def test_many_distinct_values_and_few_matches():
    """100k distinct int64 values (the table at its largest, probe runs crossing its end)
    and rows of which half are missing, looked up on all cores."""
    rng = np.random.default_rng(4)
    dictionary = pa.array(rng.choice(1 << 40, 100_000, replace=False) - (1 << 39))
    rows = pa.array(
        np.where(
            rng.random(300_000) < 0.5,
            rng.choice(dictionary.to_numpy(), 300_000),
            rng.integers(-(1 << 39), 1 << 39, 300_000),
        )
    )
    found = _lookup(dictionary, rows, -1)
    np.testing.assert_array_equal(found, _index_in(dictionary, rows, -1))
    assert 0.4 < (found >= 0).mean() < 0.6


@pytest.mark.parametrize("n", [16, 17, 1024])
def test_a_missing_value_ends_at_a_free_slot(n):
    """The table stays at most half full, so the probe for a missing value ends: dictionaries
    of a power of two of values (the smallest table's size among them), all rows missing."""
    dictionary = pa.array(np.arange(n, dtype=np.int64) * 7919)
    slots, _ = _backend.fixed_lookup_table(*_encode._fixed_width_buffers(dictionary))
    assert len(slots) >= 2 * n
    rows = pa.array(np.arange(4 * n, dtype=np.int64) * 7919 + 1)
    np.testing.assert_array_equal(_lookup(dictionary, rows, -1), np.full(4 * n, -1))
    np.testing.assert_array_equal(_lookup(dictionary, dictionary, -1), np.arange(n))


def test_all_null_and_empty_columns_and_dictionaries():
    empty, nulls = pa.array([], pa.int32()), pa.array([None] * 4, pa.int32())
    values = pa.array([3, None, 7, 3], pa.int32())
    for dictionary in (empty, pa.array([None], pa.int32()), pa.array([7, 3], pa.int32())):
        for column in (empty, nulls, values):
            np.testing.assert_array_equal(
                _lookup(dictionary, column, 9), _index_in(dictionary, column, 9)
            )


@pytest.mark.parametrize("null_equal", [False, True])
@pytest.mark.parametrize("name", ["int8", "uint64", "float64", "timestamp"])
def test_groups_codes_equal_arrows(thresholds, name, null_equal):
    """``Groups`` encodes a fixed-width right column on all cores (at every size, here) and
    looks the left up in its own table: right codes, dictionary, null code and left codes
    must be those of Arrow's ``dictionary_encode`` and ``index_in``, for chunked, sliced and
    (for floats) non-canonical rows."""
    rng = np.random.default_rng(7)
    pool = {
        "int8": [-128, 127, 0, -1, None],
        "uint64": [0, (1 << 64) - 1, 1 << 63, 5, None],
        "float64": [0.0, math.nan, 1.5, -math.inf, None],
        "timestamp": [-(1 << 63) + 1, 0, 10**18, None],
    }[name]
    right = _column(list(rng.choice(np.array(pool, object), 310)), name)
    right = pa.chunked_array([right.slice(3, 150), right.slice(153)])  # chunked and sliced
    extra = {"int8": 9, "uint64": 6, "float64": 2.5, "timestamp": 3}[name]
    left_rows = list(rng.choice(np.array(pool + [extra], object), 500))
    if name == "float64":  # -0.0 and another NaN must find 0.0 and the right's NaN
        left_rows[3:7] = [
            -0.0,
            float(np.float64(np.uint64(0x7FF8000000000001).view(np.float64))),
            0.0,
            math.nan,
        ]
    left = _column(left_rows, name)
    # from row 3, looked up chunk by chunk: a sliced chunk, an empty one, the rest
    left = pa.chunked_array([left.slice(3, 200), left.slice(0, 0), left.slice(203)])

    def codes():
        groups = _encode.Groups([right], ["right_by"], null_equal=null_equal)
        return groups.lookup([left], ["left_by"]), groups

    thresholds(parallel_encode_rows=0)
    with walks.recorded() as decisions:
        found, groups = codes()
    # the right column encoded (its sample's values repeat), and the left looked up in its
    # table, by the kernels
    assert ("encodes_in_parallel", True) in decisions
    assert ("encodes_sample_in_parallel", True) in decisions
    assert ("looks_up_by_hash", True) in decisions
    thresholds(parallel_encode_rows=HUGE, hashed_lookup_min_rows=HUGE)  # Arrow's kernels
    want, arrows = codes()
    np.testing.assert_array_equal(found, want)
    np.testing.assert_array_equal(groups.right_codes, arrows.right_codes)
    _assert_same_values(groups.columns[0].dictionary, arrows.columns[0].dictionary)
    assert groups.columns[0].null_code == arrows.columns[0].null_code
    assert (found == -1).any() and (found >= 0).any()
    if name == "float64":
        assert (found[:4] >= 0).all() and found[0] == found[2]


@pytest.mark.parametrize("null_equal", [False, True])
def test_two_by_columns_find_the_right_sides_pairs(null_equal):
    """With two by-columns each left row's code is the group of its (a, b) pair on the
    right, -1 for a pair the right lacks (or a null, unless nulls are equal)."""
    rng = np.random.default_rng(11)
    a_values = np.array([1, 2, 3, None], object)
    b_values = np.array([10, 20, None], object)
    right_a, right_b = rng.choice(a_values, 400), rng.choice(b_values, 400)
    left_a, left_b = rng.choice(np.append(a_values, 4), 300), rng.choice(b_values, 300)
    groups = _encode.Groups(
        [
            pa.chunked_array([pa.array(list(right_a), pa.int64())]),
            pa.chunked_array([pa.array(list(right_b), pa.int16())]),
        ],
        ["right_by[0]", "right_by[1]"],
        null_equal=null_equal,
    )
    found = groups.lookup(
        [
            pa.chunked_array([pa.array(list(left_a), pa.int64())]),
            pa.chunked_array([pa.array(list(left_b), pa.int16())]),
        ],
        ["left_by[0]", "left_by[1]"],
    )
    group_of = {}
    for pair, code in zip(zip(right_a, right_b), groups.right_codes):
        if code >= 0:
            assert group_of.setdefault(pair, code) == code
    want = [group_of.get(pair, -1) for pair in zip(left_a, left_b)]
    if not null_equal:
        assert all(w == -1 for w, a, b in zip(want, left_a, left_b) if a is None or b is None)
    np.testing.assert_array_equal(found, want)
    assert (found == -1).any() and (found >= 0).any()


def test_mostly_distinct_values_take_arrows_encoding(thresholds):
    """IDs, nearly all distinct, would merge column-long dictionaries: Arrow's one-core
    hash is faster there, and a sample of the first rows sends them to it."""
    thresholds(parallel_encode_rows=0)
    ids = pa.chunked_array([pa.array(np.arange(1000) * 3)])
    symbols = pa.chunked_array([pa.array(np.arange(1000) % 200, pa.int32())])
    assert _encode._encode_hashed(ids, nulls_distinct=False) is None
    assert _encode._encode_hashed(symbols, nulls_distinct=False) is not None
    booleans = pa.chunked_array([pa.array([True] * 1000)])
    assert _encode._encode_hashed(booleans, nulls_distinct=False) is None


@pytest.mark.parametrize("null_equal", [False, True])
def test_large_by_column_pairs_are_encoded_as_arrow_would(thresholds, null_equal):
    """Above ``parallel_encode_rows`` the pairs of two by-columns are encoded on all cores:
    right codes, each step's dictionary and the left's codes must be those of Arrow's path."""
    rng = np.random.default_rng(12)
    n = 3 * walks.THRESHOLDS.parallel_encode_rows // 2
    symbols = np.array([f"S{i}" for i in range(50)] + [None], object)
    venues = np.array([1, 2, 3, 4, None], object)
    right = [
        pa.chunked_array([pa.array(list(rng.choice(symbols, n)))]),
        pa.chunked_array([pa.array(list(rng.choice(venues, n)), pa.int16())]),
    ]
    left = [
        pa.chunked_array([pa.array(list(rng.choice(np.append(symbols, "NEW"), n)))]),
        pa.chunked_array([pa.array(list(rng.choice(np.append(venues, 9), n)), pa.int16())]),
    ]

    def groups():
        g = _encode.Groups(right, ["right_by[0]", "right_by[1]"], null_equal=null_equal)
        return g, g.lookup(left, ["left_by[0]", "left_by[1]"])

    with walks.recorded() as decisions:
        kernels, found = groups()
    # the symbols, the venues and the pairs encoded on all cores (their samples' values
    # repeat), the left looked up there
    assert ("encodes_in_parallel", True) in decisions
    assert ("encodes_in_parallel", False) not in decisions
    assert ("encodes_sample_in_parallel", True) in decisions
    assert ("encodes_sample_in_parallel", False) not in decisions
    assert ("looks_up_by_hash", True) in decisions
    thresholds(parallel_encode_rows=HUGE, hashed_lookup_min_rows=HUGE)  # Arrow's encoding
    arrows, want = groups()
    np.testing.assert_array_equal(kernels.right_codes, arrows.right_codes)
    assert kernels.n_groups == arrows.n_groups
    assert all(a.equals(b) for a, b in zip(kernels._steps, arrows._steps))
    np.testing.assert_array_equal(found, want)
    assert (found == -1).any() and (found >= 0).any()


def test_the_table_is_built_once():
    """A prepared join hashes its dictionaries once, not at each probe: the point of the
    table, since Arrow's ``index_in`` rehashes its value set at every call."""
    right = [pa.chunked_array([pa.array([1, 2, 2, 3])]), pa.chunked_array([pa.array([5, 5, 6, 6])])]
    groups = _encode.Groups(right, ["a", "b"], null_equal=False)

    def tables():  # each column's dictionary's, and the pairs' step's, as groups keeps them
        return [column._table for column in groups.columns] + groups._step_tables

    kept = None
    for _ in range(3):
        codes = groups.lookup(
            [pa.chunked_array([pa.array([2, 3, 9])]), pa.chunked_array([pa.array([5, 6, 6])])],
            ["a", "b"],
        )
        np.testing.assert_array_equal(codes, [groups.right_codes[1], groups.right_codes[3], -1])
        if kept is None:
            kept = tables()
            assert all(table is not None for table in kept)  # built at the first probe
        assert all(a is b for a, b in zip(tables(), kept, strict=True))  # then used again


@pytest.mark.parametrize("null_equality", ["unequal", "equal"])
def test_a_large_join_on_integer_keys_equals_arrows_path(thresholds, null_equality):
    """Above ``parallel_encode_rows`` the right side is encoded on all cores, and the lookup
    runs there too: the map must be the one Arrow's path gives."""
    rng = np.random.default_rng(3)
    n = 3 * walks.THRESHOLDS.parallel_encode_rows // 2
    ids = np.array(list(rng.choice(1 << 62, 300, replace=False)) + [None], dtype=object)
    right_by = pa.array(list(rng.choice(ids, n)), pa.int64())
    left_by = pa.array(list(rng.choice(np.append(ids, 12345), n)), pa.int64())
    right_on, left_on = rng.integers(0, 10**6, n), rng.integers(0, 10**6, n)
    options = dict(null_equality=null_equality, strategy="nearest", device="cpu")
    with walks.recorded() as decisions:
        found = ag.asof_join(left_on, right_on, left_by, right_by, **options)
    assert ("encodes_in_parallel", True) in decisions  # the right column's encoding
    assert ("encodes_sample_in_parallel", True) in decisions  # its sample's values repeat
    # the left's lookup in its table, on all cores (the next decision is its launch's)
    at = decisions.index(("looks_up_by_hash", True))
    assert decisions[at + 1] == ("parallel", True)
    thresholds(parallel_encode_rows=HUGE, hashed_lookup_min_rows=HUGE)
    want = ag.asof_join(left_on, right_on, left_by, right_by, **options)
    np.testing.assert_array_equal(found, want)
    assert (found != ag.NO_MATCH).mean() > 0.9
