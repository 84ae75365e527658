"""The cpu dictionary encoding of by-keys in Arrow's view layout (kernels/views.py: polars'
strings, every value inline) against Arrow's ``dictionary_encode`` of the same values as large
strings: the same codes and dictionary, for nulls either way, sliced arrays, bytes past a
value's length that are not zero; then through ``Groups`` (chunk by chunk, merged) against its
large-string path, with lookups of views and of large strings, and through a whole join."""

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
from asofgpu.kernels import views

from conftest import HUGE

VIEW_TYPES = [pa.string_view(), pa.binary_view()]
# Short values of a small alphabet (with NUL and a two-byte character): many repeats, values
# that differ only in length, up to the 12 bytes a view holds.
values = st.one_of(
    st.none(),
    st.text(alphabet="ab\x00é", max_size=12).filter(lambda v: len(v.encode()) <= views.INLINE),
)


def _encode_kernel(arr: pa.Array, nulls_distinct: bool, n_pieces: int):
    keys, bitmap, bit0 = _encode._view_words(arr)
    codes = np.empty(len(arr), np.int32)
    firsts = _backend.jit.cpu_views().dictionary_encode(
        keys,
        np.empty(0, np.uint8),
        bitmap,
        np.int64(bit0),
        nulls_distinct,
        n_pieces,
        codes,
        np.empty(len(arr), np.int64),
    )
    return codes, firsts


def _as_large(arr):
    return arr.cast(pa.large_binary() if pa.types.is_binary_view(arr.type) else pa.large_string())


def _assert_like_arrow(arr, nulls_distinct, n_pieces):
    codes, firsts = _encode_kernel(arr, nulls_distinct, n_pieces)
    enc = pc.dictionary_encode(_as_large(arr), null_encoding="mask" if nulls_distinct else "encode")
    np.testing.assert_array_equal(codes, enc.indices.fill_null(-1).to_numpy())
    assert _as_large(arr).take(pa.array(firsts, pa.int64())).equals(enc.dictionary)


@settings(max_examples=150, deadline=None)
@given(
    rows=st.lists(values, max_size=60),
    binary=st.booleans(),
    nulls_distinct=st.booleans(),
    n_pieces=st.integers(1, 5),
    cut=st.integers(0, 5),
)
def test_codes_and_dictionary_equal_arrows(rows, binary, nulls_distinct, n_pieces, cut):
    arr = pa.array(
        [None if v is None else (v.encode() if binary else v) for v in rows], VIEW_TYPES[binary]
    )
    _assert_like_arrow(arr.slice(min(cut, len(arr))), nulls_distinct, n_pieces)


def test_bytes_past_a_values_length_are_not_read():
    """Writers should zero them; the kernel does not count on it."""
    arr = pa.array(
        ["", "a", "abcd", "abcde", "abcdefghijkl", "a", "abcd", None, ""], pa.string_view()
    )
    words = np.frombuffer(arr.buffers()[1], "<u8").copy().reshape(-1, 2)
    rng = np.random.default_rng(1)
    raw = words.view(np.uint8).reshape(-1, 16)
    for row, length in enumerate([0, 1, 4, 5, 12, 1, 4, 0, 0]):
        raw[row, 4 + length :] = rng.integers(1, 256, 12 - length)  # garbage after the value
    dirty = pa.Array.from_buffers(
        pa.string_view(), len(arr), [arr.buffers()[0], pa.py_buffer(words)]
    )
    for nulls_distinct in (False, True):
        codes, _ = _encode_kernel(dirty, nulls_distinct, 2)
        np.testing.assert_array_equal(codes, _encode_kernel(arr, nulls_distinct, 2)[0])


def _chunked(rows: list, chunks: int, type_=pa.string_view()) -> pa.ChunkedArray:
    return pa.chunked_array(
        [
            pa.array(list(part), type_)
            for part in np.array_split(np.array(rows, dtype=object), chunks)
        ]
    )


@pytest.mark.parametrize("layout", ["chunks", "slices and an empty chunk"])
@pytest.mark.parametrize("null_equal", [False, True])
def test_groups_of_views_agree_with_large_strings(thresholds, null_equal, layout):
    """Several chunks, their views hashed end to end: the codes, dictionary and lookups of
    the large-string path, whether the left side is views, large strings or has a value too
    long for a view."""
    thresholds(parallel_views_rows=8, interpret_max_rows=0)
    rng = np.random.default_rng(2)
    pool = np.array(["S%03d" % k for k in range(40)] + ["", "x" * 12, None], dtype=object)
    right = _chunked(list(rng.choice(pool, 500)), 4)
    if layout != "chunks":  # chunks that start inside their arrays' bitmaps, and none at all
        whole = pa.array(list(rng.choice(pool, 700)), pa.string_view())
        right = pa.chunked_array([whole.slice(3, 200), whole.slice(0, 0), whole.slice(211)])
    left = _chunked(list(rng.choice(np.append(pool, "ZZZ"), 300)), 3)
    assert all(_encode._hashed_views(c) and _encode._inline(c) for c in (right, left))
    views_groups = _encode.Groups([right], ["r"], null_equal)
    large_groups = _encode.Groups([right.cast(pa.large_string())], ["r"], null_equal)
    assert views_groups.columns[0]._view_table is not None  # the views path was taken
    np.testing.assert_array_equal(views_groups.right_codes, large_groups.right_codes)
    assert views_groups.columns[0].dictionary.equals(large_groups.columns[0].dictionary)
    want = large_groups.lookup([left.cast(pa.large_string())], ["l"])
    np.testing.assert_array_equal(views_groups.lookup([left], ["l"]), want)
    np.testing.assert_array_equal(views_groups.lookup([left.cast(pa.large_string())], ["l"]), want)
    long = _chunked(list(left.to_pylist()[:-1]) + ["a value too long for a view"], 2)
    assert not _encode._inline(long)
    np.testing.assert_array_equal(
        views_groups.lookup([long], ["l"]),
        large_groups.lookup([long.cast(pa.large_string())], ["l"]),
    )


@pytest.mark.parametrize("null_equal", [False, True])
def test_views_are_hashed_from_their_own_threshold_and_looked_up_at_any_size(
    thresholds, null_equal
):
    """From ``parallel_views_rows`` rows (below the text's ``parallel_encode_rows``) a view
    column is hashed where it lies, not cast; a left column of fewer rows is looked up in
    its views all the same. Codes and lookups as the large-string path's."""
    thresholds(parallel_views_rows=200, interpret_max_rows=0)
    rng = np.random.default_rng(4)
    pool = np.array(["S%03d" % k for k in range(30)] + [None], dtype=object)
    right = _chunked(list(rng.choice(pool, 200)), 2)
    left = _chunked(list(rng.choice(np.append(pool, "ZZZ"), 50)), 1)
    assert len(right) < walks.THRESHOLDS.parallel_encode_rows
    with walks.recorded() as decisions:
        groups = _encode.Groups([right], ["r"], null_equal)
        codes = groups.lookup([left], ["l"])
    assert ("hashes_views", True) in decisions
    words, _, table = groups.columns[0]._view_table
    assert table is not None  # the left views were looked up in a table of the right's
    large = _encode.Groups([right.cast(pa.large_string())], ["r"], null_equal)
    np.testing.assert_array_equal(groups.right_codes, large.right_codes)
    np.testing.assert_array_equal(codes, large.lookup([left.cast(pa.large_string())], ["l"]))


def test_views_below_their_threshold_or_before_compiling_are_cast(thresholds):
    """Fewer rows than ``parallel_views_rows``, or a small launch that would run as plain
    Python (``walks.compiles``): the column is cast to large strings, with the same codes."""
    rng = np.random.default_rng(5)
    right = _chunked(list(rng.choice(["a", "b", "c", None], 300)), 1)
    want = _encode.Groups([right.cast(pa.large_string())], ["r"], False).right_codes
    for changes in (
        {"parallel_views_rows": 301, "interpret_max_rows": 0},
        {"parallel_views_rows": 8, "interpret_max_rows": HUGE, "interpret_seconds": float(HUGE)},
    ):
        with walks.overridden(**changes), walks.recorded() as decisions:
            groups = _encode.Groups([right], ["r"], False)
        assert ("hashes_views", False) in decisions, changes
        assert groups.columns[0]._view_table is None
        np.testing.assert_array_equal(groups.right_codes, want)


def test_a_join_on_polars_strings_equals_the_join_on_arrow_strings():
    pl = pytest.importorskip("polars")
    rng = np.random.default_rng(3)
    n = 3 * walks.THRESHOLDS.parallel_encode_rows  # past the views' and the text's thresholds
    symbols = np.array(["S%04d" % k for k in range(300)])
    quotes = pl.DataFrame(
        {
            "t": np.sort(rng.integers(0, 10 * n, n)),
            "sym": rng.choice(symbols, n),
            "bid": rng.random(n),
        }
    )
    trades = pl.DataFrame({"t": np.sort(rng.integers(0, 10 * n, n)), "sym": rng.choice(symbols, n)})
    quotes, trades = (
        pl.concat([f.slice(0, n // 2), f.slice(n // 2)], rechunk=False) for f in (quotes, trades)
    )  # chunked, as read from files
    views_key = trades.to_arrow(compat_level=pl.CompatLevel.newest())["sym"]
    assert _encode._hashed_views(views_key) and _encode._inline(views_key)
    got = ag.asof_join(
        trades["t"].to_numpy(),
        quotes["t"].to_numpy(),
        views_key,
        quotes.to_arrow(compat_level=pl.CompatLevel.newest())["sym"],
        device="cpu",
    )
    want = ag.asof_join(
        trades["t"].to_numpy(),
        quotes["t"].to_numpy(),
        trades.to_arrow()["sym"],
        quotes.to_arrow()["sym"],
        device="cpu",
    )
    np.testing.assert_array_equal(got, want)
