"""A large right by-column is encoded from a sample: its first rows are encoded on all cores,
the rest looked up in their dictionary run by run where its chunks lie, and the values the
sample lacks encoded after and appended (``_encode._encode_hashed``); where they are many
(``walks.most_appended``: a column sorted by its values), the lookup stops and the whole
column is hashed on all cores. The codes, dictionary and null code must be those of Arrow's
``dictionary_encode`` (order of first appearance), whichever rows hold the new values and
the nulls, for text, view and fixed-width columns, on either path."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from asofgpu import _encode
from asofgpu._backend import walks
from conftest import HUGE

SAMPLE = 40  # rows encoded before the rest is looked up, in these tests
# The thresholds that force each path: the missed values appended; or the lookup stopped at
# the first of them and the column hashed whole on all cores, or by Arrow (a view column is
# hashed whole either way).
PATHS = {
    "appended": {"appended_max_share": 1.0},
    "hashed whole": {"appended_max_share": 0.0, "rehash_max_distinct": 1.0},
    "Arrow after the stop": {"appended_max_share": 0.0, "rehash_max_distinct": 0.0},
}
TYPES = {
    "string": pa.string(),
    "large_string": pa.large_string(),
    "string_view": pa.string_view(),  # polars' strings: hashed as their views
    "int64": pa.int64(),
    "int16": pa.int16(),
    "float64": pa.float64(),
    "timestamp": pa.timestamp("ns"),
}


def _values(name: str, numbers: list) -> pa.Array:
    if "string" in name:
        return pa.array([None if v is None else f"S{v}" for v in numbers], TYPES[name])
    if name == "float64":  # NaN and -0.0 are values too: after canonical_by, one NaN, 0.0
        return pa.array(
            [
                None if v is None else (np.nan if v == 7 else -0.0 if v == 0 else v / 2)
                for v in numbers
            ],
            pa.float64(),
        )
    return pa.array(numbers, TYPES[name])


def _column(name: str, nulls_in_sample: bool, layout: str) -> pa.ChunkedArray:
    """600 rows: the sample draws from 5 values; later rows from 30, some first seen in the
    last chunk; nulls in the sample or only after it."""
    rng = np.random.default_rng(5)
    pool = [0, 1, 2, 3, 7] + ([None] if nulls_in_sample else [])
    numbers = [pool[i] for i in rng.integers(0, len(pool), SAMPLE)]
    numbers += [None if v == 30 else int(v) for v in rng.integers(0, 31, 400)]
    numbers += [int(v) for v in rng.integers(25, 40, 160)]  # 31..39: first seen here
    whole = _values(name, numbers)
    if layout == "one chunk":
        return pa.chunked_array([whole])
    # slices of one array (one run), an empty chunk, a chunk of its own, a sliced tail
    tail = _values(name, numbers[450:])
    return pa.chunked_array(
        [whole[:30], whole[30:200], whole[:0], whole[200:450], tail[:80], tail[80:]]
    )


def _lookups(monkeypatch) -> list:
    """What each ``_look_up_rest`` returns from now on: (None, the row) where it stopped."""
    returned = []
    look_up_rest = _encode._look_up_rest

    def spied(*args):
        returned.append(look_up_rest(*args))
        return returned[-1]

    monkeypatch.setattr(_encode, "_look_up_rest", spied)
    return returned


@pytest.mark.parametrize("piece_rows", [64, _encode.LOOKUP_PIECE_ROWS])
@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("layout", ["one chunk", "chunks"])
@pytest.mark.parametrize("nulls_in_sample", [False, True])
@pytest.mark.parametrize("null_equal", [False, True])
@pytest.mark.parametrize("name", list(TYPES))
def test_the_rest_looked_up_in_the_samples_dictionary_encodes_as_arrow(
    thresholds, monkeypatch, name, null_equal, nulls_in_sample, layout, path, piece_rows
):
    """(The rest looked up in pieces of ``piece_rows`` rows at most: 64 cuts runs.)"""
    column = _column(name, nulls_in_sample, layout)
    monkeypatch.setattr(_encode, "DISTINCT_SAMPLE_ROWS", SAMPLE)
    monkeypatch.setattr(_encode, "LOOKUP_PIECE_ROWS", piece_rows)
    thresholds(parallel_encode_rows=0, parallel_encode_distinct=0.25, **PATHS[path])
    lookups = _lookups(monkeypatch)
    with walks.recorded() as decisions:
        ours = _encode._Column(column, null_equal)
    assert ("encodes_sample_in_parallel", True) in decisions
    stopped = path != "appended"
    assert [rows is None for rows, _ in lookups] == [stopped]
    if stopped and name != "string_view":  # (views are hashed whole either way)
        assert ("rehashes", path == "hashed whole") in decisions
    thresholds(parallel_encode_rows=HUGE)  # Arrow's dictionary_encode
    arrows = _encode._Column(column, null_equal)
    np.testing.assert_array_equal(ours.codes, arrows.codes)
    assert ours.null_code == arrows.null_code
    assert ours.dictionary.type == arrows.dictionary.type
    same = ours.dictionary.to_pylist() == arrows.dictionary.to_pylist()
    if name == "float64":  # NaN != NaN in lists: compare the bits
        same = np.array_equal(
            _encode._fixed_width_buffers(ours.dictionary)[0],
            _encode._fixed_width_buffers(arrows.dictionary)[0],
        ) and np.array_equal(ours.dictionary.is_valid(), arrows.dictionary.is_valid())
    assert same
    assert len(ours.dictionary) > 6  # values the sample lacked were appended
    assert (ours.codes[SAMPLE:] >= 0).any()


@pytest.mark.parametrize("piece_rows", [64, _encode.LOOKUP_PIECE_ROWS])
@pytest.mark.parametrize("name", ["string", "string_view", "int64"])
def test_values_the_sample_lacks_only_in_the_second_half_are_appended(
    thresholds, monkeypatch, name, piece_rows
):
    """Missed rows past the first half of the rest do not stop the lookup, however many, even
    in a piece that began before it: the half left and those rows cost less than hashing the
    column again (the helper's 10M rows whose last 25,000 were new: 175 ms hashed again, 83
    ms appended)."""
    monkeypatch.setattr(_encode, "DISTINCT_SAMPLE_ROWS", SAMPLE)
    monkeypatch.setattr(_encode, "LOOKUP_PIECE_ROWS", piece_rows)
    thresholds(
        parallel_encode_rows=0,
        parallel_encode_distinct=0.25,
        parallel_views_rows=0,
        interpret_max_rows=0,
        appended_max_share=0.0,
    )
    rng = np.random.default_rng(3)
    numbers = [int(v) for v in rng.integers(0, 5, SAMPLE + 400)]  # the sample's values only
    numbers += [int(v) for v in rng.integers(5, 60, 160)]  # new, from row 440 of 600 on
    column = pa.chunked_array([_values(name, numbers)])
    lookups = _lookups(monkeypatch)
    ours = _encode._Column(column, False)
    assert len(lookups) == 1 and lookups[0][1] is None and len(lookups[0][0]) == 160
    thresholds(parallel_encode_rows=HUGE, parallel_views_rows=HUGE)
    arrows = _encode._Column(column, False)
    np.testing.assert_array_equal(ours.codes, arrows.codes)
    assert ours.dictionary.to_pylist() == arrows.dictionary.to_pylist()


def test_a_column_no_longer_than_its_sample_is_encoded_whole(thresholds, monkeypatch):
    monkeypatch.setattr(_encode, "DISTINCT_SAMPLE_ROWS", SAMPLE)
    thresholds(parallel_encode_rows=0, parallel_encode_distinct=1.0)
    column = pa.chunked_array([_values("string", [3, 1, None, 3, 2] * 8)])
    codes, dictionary = _encode._encode_hashed(column, nulls_distinct=True)
    assert codes.tolist() == [0, 1, -1, 0, 2] * 8
    assert dictionary.to_pylist() == ["S3", "S1", "S2"]


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("distinct_sample", [False, True])
@pytest.mark.parametrize("null_equal", [False, True])
def test_a_view_too_long_to_be_inline_after_the_sample_takes_the_large_string_path(
    thresholds, monkeypatch, null_equal, distinct_sample, path
):
    """Only the sample's views and those it lacks are checked for length: a long value later
    on is one the sample lacks, and sends the column to the large-string path (as does a
    long value anywhere in a column whose sample is mostly distinct, or lacks many rows'
    values, and is hashed whole)."""
    monkeypatch.setattr(_encode, "DISTINCT_SAMPLE_ROWS", SAMPLE)
    thresholds(
        parallel_encode_rows=0,
        parallel_views_rows=0,
        interpret_max_rows=0,
        parallel_encode_distinct=0.0 if distinct_sample else 1.0,
        **PATHS[path],
    )
    long = "a value too long for a view"  # twice: two views of one value, unequal words
    values = [f"S{i % 7}" for i in range(300)] + [long, "S1", None, long]
    view = pa.string_view()
    column = pa.chunked_array([pa.array(values[:150], view), pa.array(values[150:], view)])
    ours = _encode._Column(column, null_equal)
    assert ours._view_table is None  # not hashed as views
    thresholds(parallel_encode_rows=HUGE, parallel_views_rows=HUGE)
    arrows = _encode._Column(column, null_equal)
    np.testing.assert_array_equal(ours.codes, arrows.codes)
    assert ours.dictionary.equals(arrows.dictionary)
    # the same column without the long value is hashed as views, to the same codes
    short = pa.chunked_array([pa.array(values[:300] + ["S1", None], view)])
    thresholds(parallel_encode_rows=0, parallel_views_rows=0)
    assert _encode._Column(short, null_equal)._view_table is not None
