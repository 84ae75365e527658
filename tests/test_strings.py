"""The cpu dictionary encoding of string and binary by-keys (kernels/strings.py) against Arrow's
``dictionary_encode``: the same codes (order of first appearance) and the same dictionary, for
nulls either way, sliced arrays, values that differ only in length or in a NUL byte, long
values, and many distinct values (the tables grow); the lookup of a column's values in a
dictionary's table (on one thread and on all cores) against Arrow's ``index_in``; then
through ``Groups``, whose kernel and Arrow paths must agree, and through a whole join."""

from __future__ import annotations

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


def _buffers(arr: pa.Array):
    validity, offsets, data = arr.buffers()
    large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    offsets = np.frombuffer(offsets, np.int64 if large else np.int32)
    offsets = offsets[arr.offset : arr.offset + len(arr) + 1]
    data = np.frombuffer(data, np.uint8) if data is not None else np.empty(0, np.uint8)
    bitmap = np.frombuffer(validity, np.uint8) if arr.null_count else np.empty(0, np.uint8)
    return offsets, data, bitmap


def _encode_kernel(arr: pa.Array, nulls_distinct: bool, n_pieces: int):
    offsets, data, bitmap = _buffers(arr)
    codes = np.empty(len(arr), np.int32)
    firsts = _backend.jit.cpu_strings().dictionary_encode(
        offsets,
        data,
        bitmap,
        np.int64(arr.offset),
        nulls_distinct,
        n_pieces,
        codes,
        np.empty(len(arr), np.int64),
    )
    return codes, arr.take(pa.array(firsts))


def _expected(arr: pa.Array, nulls_distinct: bool):
    enc = pc.dictionary_encode(arr, null_encoding="mask" if nulls_distinct else "encode")
    return enc.indices.fill_null(-1).to_numpy().astype(np.int32), enc.dictionary


def _assert_like_arrow(arr, nulls_distinct, n_pieces):
    codes, dictionary = _encode_kernel(arr, nulls_distinct, n_pieces)
    want_codes, want_dictionary = _expected(arr, nulls_distinct)
    np.testing.assert_array_equal(codes, want_codes)
    assert dictionary.equals(want_dictionary), (dictionary, want_dictionary)


TEXT_TYPES = [pa.string(), pa.large_string(), pa.binary(), pa.large_binary()]
# A small alphabet with NUL and a multi-byte character: many repeats, prefixes of each other.
values = st.one_of(st.none(), st.text(alphabet="ab\x00é", max_size=12))


@settings(max_examples=150, deadline=None)
@given(
    rows=st.lists(values, max_size=60),
    type_at=st.integers(0, 3),
    nulls_distinct=st.booleans(),
    n_pieces=st.integers(1, 5),
    cut=st.integers(0, 5),
)
def test_codes_and_dictionary_equal_arrows(rows, type_at, nulls_distinct, n_pieces, cut):
    t = TEXT_TYPES[type_at]
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        rows = [None if v is None else v.encode() for v in rows]
    arr = pa.array(rows, t)
    _assert_like_arrow(arr, nulls_distinct, n_pieces)
    _assert_like_arrow(arr.slice(min(cut, len(arr))), nulls_distinct, n_pieces)  # an offset


@pytest.mark.parametrize("nulls_distinct", [False, True])
def test_many_distinct_values_of_every_length(nulls_distinct):
    """50k distinct values among 200k rows: every table grows many times; lengths 0 to 40
    cross the 7-byte (injective) and 8-byte (word) boundaries."""
    rng = np.random.default_rng(5)
    ids = rng.integers(0, 50_000, 200_000)
    widths = ids % 41
    rows = [None if i % 997 == 0 else (str(i) * 40)[:w] for i, w in zip(ids, widths)]
    arr = pa.array(rows, pa.large_string())
    for n_pieces in (1, 2, 7):
        _assert_like_arrow(arr, nulls_distinct, n_pieces)


def test_values_that_differ_only_in_length_or_a_nul_byte():
    rows = [
        "",
        "\x00",
        "\x00\x00",
        "a",
        "a\x00",
        "abcdefg",
        "abcdefg\x00",
        "abcdefgh",
        "abcdefgh\x00",
        "",
        "a\x00",
        "abcdefgh",
    ] * 3
    _assert_like_arrow(pa.array(rows), nulls_distinct=True, n_pieces=3)


def test_all_null_and_empty_columns():
    _assert_like_arrow(pa.array([None] * 5, pa.string()), nulls_distinct=False, n_pieces=2)
    _assert_like_arrow(pa.array([None] * 5, pa.string()), nulls_distinct=True, n_pieces=2)
    _assert_like_arrow(pa.array([], pa.string()), nulls_distinct=True, n_pieces=2)


@pytest.mark.parametrize("parallel", [False, True])
@settings(max_examples=150, deadline=None)
@given(
    dictionary=st.lists(values, max_size=40, unique=True),
    rows=st.lists(st.one_of(values, st.text(alphabet="abc", min_size=8, max_size=20)), max_size=60),
    types=st.tuples(st.integers(0, 3), st.integers(0, 3)),
    null_code=st.integers(-1, 5),
    cut=st.integers(0, 5),
)
def test_lookup_in_a_dictionary_equals_arrows_index_in(
    parallel, dictionary, rows, types, null_code, cut
):
    """Each row's position in a dictionary of distinct values, -1 where it has none and the
    given code for nulls; dictionary and column of either offset width, column sliced; on
    one thread and on all cores."""
    table_type, column_type = TEXT_TYPES[types[0] & 1], TEXT_TYPES[types[1] & 1]
    if types[0] >= 2:  # both binary
        table_type, column_type = TEXT_TYPES[2 + (types[0] & 1)], TEXT_TYPES[2 + (types[1] & 1)]
        dictionary = [None if v is None else v.encode() for v in dictionary]
        rows = [None if v is None else v.encode() for v in rows]
    dictionary = pa.array(dictionary, table_type)
    column = pa.array(rows, column_type)
    column = column.slice(min(cut, len(column)))
    offsets, data, bitmap = _buffers(dictionary)
    table = (offsets, data, _backend.text_lookup_table(offsets, data, bitmap, dictionary.offset))
    with walks.overridden(parallel_min_rows=0 if parallel else 1 << 62):
        found = _backend.lookup_text(table, *_buffers(column), column.offset, null_code)
    want = pc.index_in(column, value_set=dictionary.cast(column_type), skip_nulls=True)
    want = want.fill_null(-1).to_numpy().astype(np.int32)
    want[column.is_null().to_numpy(zero_copy_only=False)] = null_code
    np.testing.assert_array_equal(found, want)


def test_lookup_of_long_values_that_share_a_prefix():
    """Values past 8 bytes hash word by word and compare their bytes: values that differ only
    in their last byte, or only in length, are told apart."""
    words = [("x" * n) + tail for n in (7, 8, 9, 15, 16, 17, 40) for tail in ("", "a", "b")]
    dictionary = pa.array(words[::2], pa.large_string())
    offsets, data, bitmap = _buffers(dictionary)
    table = (offsets, data, _backend.text_lookup_table(offsets, data, bitmap, 0))
    column = pa.array(words * 3)
    found = _backend.lookup_text(table, *_buffers(column), 0, -1)
    want = pc.index_in(column, value_set=dictionary.cast(pa.string())).fill_null(-1)
    np.testing.assert_array_equal(found, want.to_numpy())


@pytest.mark.parametrize("null_equal", [False, True])
@pytest.mark.parametrize("layout", ["chunked", "sliced", "left in chunks"])
def test_groups_agree_with_the_arrow_path(thresholds, monkeypatch, null_equal, layout):
    """``Groups`` on text columns: the kernels (the parallel encoding at every size) and
    Arrow's ``dictionary_encode`` and ``index_in`` give the same right codes, dictionary,
    null code and left lookup, for chunked, sliced (an offset into the values and the
    validity bits) and view columns; a left column in chunks is looked up chunk by chunk."""
    rng = np.random.default_rng(9)
    symbols = np.array(["AAPL", "MSFT", "", "a\x00", "BRK.B-LONG-NAME", None], dtype=object)
    if layout == "chunked":
        right = pa.chunked_array(
            [pa.array(rng.choice(symbols, 300)), pa.array(rng.choice(symbols, 200))]
        )
        left = pa.array(rng.choice(np.append(symbols, "ZZZ"), 400), pa.string_view())
    else:
        right = pa.chunked_array([pa.array(rng.choice(symbols, 513)).slice(13)])
        left = pa.array(rng.choice(np.append(symbols, "ZZZ"), 411), pa.large_string())[11:]
    if layout == "left in chunks":  # a sliced chunk, an empty one, one at offset 0
        left = pa.chunked_array([left.slice(7, 150), left.slice(0, 0), left.slice(157)])
    results = []
    for arrow in (False, True):
        # Arrow's: neither encoded nor looked up by the kernels.
        thresholds(
            parallel_encode_rows=HUGE if arrow else 0, hashed_lookup_min_rows=HUGE if arrow else 0
        )
        groups = _encode.Groups([right], ["right_by"], null_equal=null_equal)
        column = groups.columns[0]
        results.append(
            (
                groups.right_codes,
                column.dictionary,
                column.null_code,
                groups.lookup([pa.chunked_array(left)], ["left_by"]),
            )
        )
    (codes, dictionary, null_code, found), (codes0, dictionary0, null_code0, found0) = results
    np.testing.assert_array_equal(codes, codes0)
    assert dictionary.equals(dictionary0)
    assert null_code == null_code0
    np.testing.assert_array_equal(found, found0)
    assert (found == -1).any() and (found >= 0).any()


def test_mostly_distinct_values_take_arrows_path(thresholds):
    """IDs, nearly all distinct, would merge column-long dictionaries: Arrow's
    one-core hash is faster there, and a sample of the first rows sends them to it."""
    thresholds(parallel_encode_rows=0)
    ids = pa.chunked_array([pa.array([f"ID{i}" for i in range(1000)])])
    tickers = pa.chunked_array([pa.array([f"T{i % 200}" for i in range(1000)])])
    assert _encode._encode_hashed(ids, nulls_distinct=False) is None
    assert _encode._encode_hashed(tickers, nulls_distinct=False) is not None


@pytest.mark.parametrize("null_equality", ["unequal", "equal"])
def test_a_large_join_on_text_keys_matches_the_dictionary_keys(null_equality):
    """Above the threshold the text path runs; the same keys as Arrow dictionaries take the
    categorical path: the maps must be equal."""
    rng = np.random.default_rng(3)
    n = 3 * walks.THRESHOLDS.parallel_encode_rows // 2
    names = np.array([f"SYM{i}" for i in range(300)] + [None], dtype=object)
    right_by = pa.array(rng.choice(names, n))
    left_by = pa.array(rng.choice(np.append(names, "NEW"), n))
    right_on, left_on = rng.integers(0, 10**6, n), rng.integers(0, 10**6, n)
    options = dict(null_equality=null_equality, strategy="nearest", device="cpu")
    text = ag.asof_join(left_on, right_on, left_by, right_by, **options)
    categorical = ag.asof_join(
        left_on, right_on, left_by.dictionary_encode(), right_by.dictionary_encode(), **options
    )
    np.testing.assert_array_equal(text, categorical)
    assert (text != ag.NO_MATCH).mean() > 0.9


@pytest.mark.parametrize("n_pieces", [1, 3])
def test_values_hash_alike_wherever_they_lie_in_the_data(n_pieces):
    """Values are read 8 bytes at a time, but those in the data's last 8 bytes a byte at a
    time: the same value must get the same code either way, and the lookup must find it."""
    values = ["abcde", "x", "abcdefg", "abcdefgh", "abcdefghi", ""] * 7 + ["abcde", "x"]
    dictionary = pa.array(["x", "abcde", "abcdefgh", "abcdefg", "abcdefghi", ""])
    offsets, data, bitmap = _buffers(dictionary)
    table = (offsets, data, _backend.text_lookup_table(offsets, data, bitmap, 0))
    for arr in (pa.array(values), pa.array(values).slice(5, 30)):
        _assert_like_arrow(arr, False, n_pieces)
        found = _backend.lookup_text(table, *_buffers(arr), arr.offset, -1)
        expected = pc.index_in(arr, value_set=dictionary).to_numpy()
        np.testing.assert_array_equal(found, expected)
