"""``asofgpu enrich`` with RIGHT sorted (by its key, or by its by columns and then its key)
and LEFT in another order (a tape of trades beside quote files sorted by symbol, trade files
per symbol beside a quote tape, or no order at all): RIGHT is streamed, LEFT's keys are put in
its order (``_regroup``), in memory or spilled in ranges. Every output must equal
``join_asof`` on the whole data."""

from __future__ import annotations

import collections
import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import asofgpu as ag
from asofgpu import marketdata
from asofgpu.enrich._regroup import (
    ByRanges,
    Ranks,
    distinct,
    on_ranges,
    partitions_of,
    ranks,
    _summed,
    restore,
    stream_order,
    value_counts,
)
from enrich_cli import STREAM_OPTIONS, coarse_times, enrich_in, hidden, run


def _grouped(table: pa.Table, by: list[str]) -> pa.Table:
    return table.sort_by([(c, "ascending") for c in (*by, "time")])


@pytest.fixture(
    params=[
        ("grouped", "tape"),
        ("grouped", "shuffled"),
        ("tape", "grouped"),
        ("tape", "shuffled"),
    ],
    ids="-".join,
)
def day(request, tmp_path):
    """Quotes sorted by (symbol, time) or by time, with runs of equal times and symbols whose
    rows span row groups; trades sorted the other way, or in no order."""
    quotes, trades = marketdata.day(n_quotes=3_000, n_trades=2_000, n_symbols=25, seed=11)
    quotes = coarse_times(quotes)
    right, left = request.param
    if left == "shuffled":
        trades = trades.take(np.random.default_rng(4).permutation(trades.num_rows))
    elif left == "grouped":
        trades = _grouped(trades, ["symbol"])
    if right == "grouped":
        quotes = _grouped(quotes, ["symbol"])
    pq.write_table(trades, tmp_path / "trades.parquet", row_group_size=300)
    pq.write_table(quotes, tmp_path / "quotes.parquet", row_group_size=256)
    order = "('symbol', 'time')" if right == "grouped" else "'time'"
    return tmp_path / "trades.parquet", tmp_path / "quotes.parquet", order


# LEFT's columns are copied (``left_columns``) where its row groups, of 300 rows, fit in a
# chunk; in smaller chunks they are encoded again whatever the fixture asks.
@pytest.mark.parametrize(
    ("chunk_rows", "ranges", "left_columns"),
    [(7, 1, "encoded"), (170, 3, "encoded"), (5_000, 40, "copied"), (5_000, 40, "encoded")],
    indirect=["left_columns"],
)
@pytest.mark.parametrize(("flags", "options"), STREAM_OPTIONS)
def test_regrouped_equals_join_asof(
    day, tmp_path, capsys, chunk_rows, ranges, left_columns, flags, options
):
    trades, quotes, order = day
    out = tmp_path / "out.parquet"
    spill = ["--spill-partitions", ranges] if ranges > 1 else []
    code, _, stderr = run(
        "enrich",
        trades,
        quotes,
        "-o",
        out,
        "--on",
        "time",
        "--by",
        "symbol",
        "--device",
        "cpu",
        "--right-mode",
        "stream",
        "--chunk-rows",
        chunk_rows,
        *spill,
        *flags,
        capsys=capsys,
    )
    assert code == 0, stderr
    assert (
        f"3,000 rows, sorted by {order}) in windows of up to {chunk_rows:,} rows, LEFT's "
        f"keys put in that order"
    ) in stderr
    ranged = "'symbol'" if "symbol" in order else "'time'"
    assert (f"LEFT's keys spilled in {ranges} ranges of {ranged}" in stderr) == (ranges > 1)
    assert ("its columns copied as they are" in stderr) == (left_columns == "copied")
    expected = ag.join_asof(
        pq.read_table(trades),
        pq.read_table(quotes),
        on="time",
        by="symbol",
        device="cpu",
        **options,
    )
    assert pq.read_table(out).equals(expected)
    assert hidden(tmp_path) == []


def every_way_regrouped(left: pa.Table, right: pa.Table, tmp_path, capsys, flags, **by) -> None:
    """l.parquet and r.parquet (``left`` and ``right`` written) joined on ``t`` with RIGHT
    streamed and LEFT regrouped, in memory and in ranges, with every strategy and a few
    chunk sizes, each checked against join_asof with ``by``."""
    for chunk_rows, ranges in ((1, 1), (2, 3), (100, 1), (100, 5)):
        for strategy in ("backward", "forward", "nearest"):
            out = tmp_path / f"o{chunk_rows}{ranges}{strategy}.parquet"
            spill = ["--spill-partitions", ranges] if ranges > 1 else []
            code, _, stderr = run(
                "enrich",
                tmp_path / "l.parquet",
                tmp_path / "r.parquet",
                "-o",
                out,
                "--on",
                "t",
                *flags,
                "--device",
                "cpu",
                "--right-mode",
                "stream",
                "--chunk-rows",
                chunk_rows,
                "--strategy",
                strategy,
                *spill,
                capsys=capsys,
            )
            assert code == 0, stderr
            assert "LEFT's keys put in that order" in stderr
            expected = ag.join_asof(left, right, on="t", strategy=strategy, device="cpu", **by)
            assert pq.read_table(out).equals(expected), (chunk_rows, ranges, strategy)


def test_two_by_columns_with_null_keys_and_groups_on_both_sides(tmp_path, capsys):
    """Two by columns (text and integers) named differently on each side, null times in
    groups (RIGHT: where the writer sorted them, last), null by values in LEFT, groups only
    one side has, and LEFT rows of equal keys far apart."""
    right = pa.table(
        {
            "v": pa.array(["a", "a", "a", "a", "b", "b", "b", "c", "c", "e", "e"]),
            "n": pa.array([1, 1, 2, 2, 1, 1, 1, 5, 5, 0, 0], pa.int32()),
            "t": pa.array([1, 4, 2, None, 0, 3, 3, 1, 9, 2, 2]),
            "x": np.arange(11, dtype=np.float64),
        }
    )
    left = pa.table(
        {
            "venue": pa.array(["e", "a", None, "b", "a", "b", "c", "d", "e", "a"]),
            "num": pa.array([0, 1, 1, 1, 2, 1, 5, 1, 0, None], pa.int32()),
            "t": pa.array([7, 4, 3, None, 9, 3, 8, 5, 2, 1]),
        }
    )
    pq.write_table(right, tmp_path / "r.parquet", row_group_size=3)
    pq.write_table(left, tmp_path / "l.parquet", row_group_size=2)
    every_way_regrouped(
        left,
        right,
        tmp_path,
        capsys,
        ["--left-by", "venue,num", "--right-by", "v,n"],
        by_left=["venue", "num"],
        by_right=["v", "n"],
    )


def test_text_by_values_in_byte_order_and_a_left_folder(tmp_path, capsys):
    """RIGHT in byte order ("B" < "a" < "é"), as parquet's statistics and Arrow order text;
    LEFT a folder whose files' dictionaries differ."""
    right = pa.table(
        {"g": ["B", "B", "a", "a", "é"], "t": [1, 5, 2, 6, 3], "x": [1.0, 2.0, 3.0, 4.0, 5.0]}
    )
    left = pa.table({"g": ["é", "a", "B", "a", "B", "é"], "t": [4, 7, 6, 1, 2, 3]})
    pq.write_table(right, tmp_path / "r.parquet", row_group_size=2)
    (tmp_path / "l").mkdir()
    pq.write_table(left.slice(0, 3), tmp_path / "l" / "a.parquet")
    pq.write_table(left.slice(3), tmp_path / "l" / "b.parquet")
    for ranges in ([], ["--spill-partitions", "3"]):
        out = tmp_path / "out"
        code, _, stderr = run(
            "enrich",
            tmp_path / "l",
            tmp_path / "r.parquet",
            "-o",
            out,
            "--on",
            "t",
            "--by",
            "g",
            "--device",
            "cpu",
            "--right-mode",
            "stream",
            *ranges,
            "-q",
            capsys=capsys,
        )
        assert code == 0, stderr
        got = pa.concat_tables([pq.read_table(out / "a.parquet"), pq.read_table(out / "b.parquet")])
        assert got.equals(ag.join_asof(left, right, on="t", by="g", device="cpu"))
        assert got["x"].to_pylist() == [5.0, 4.0, 2.0, None, 1.0, 5.0]


@pytest.mark.parametrize("right", ["grouped", "tape"])
def test_auto_regroups_a_sorted_right_too_large_for_memory(tmp_path, capsys, right):
    """auto: RIGHT sorted (by (symbol, time), or by time beside trades sorted by symbol) and
    too large to hold is streamed, and LEFT's keys regrouped, where it used to be spilled
    whole; when it fits it is held in memory."""
    quotes, trades = marketdata.day(n_quotes=300_000, n_trades=20_000, n_symbols=50, seed=2)
    if right == "grouped":
        quotes, order = _grouped(quotes, ["symbol"]), "its by columns ('symbol'), then its key"
    else:
        trades, order = _grouped(trades, ["symbol"]), "its key"
    pq.write_table(quotes, tmp_path / "q.parquet")
    pq.write_table(trades, tmp_path / "t.parquet")
    expected = ag.join_asof(trades, quotes, on="time", by="symbol", device="cpu")
    for limit, logged in (
        (None, "into memory: it fits (about "),
        ("450MiB", f"RIGHT is sorted by {order}, and needs about"),
    ):
        out = tmp_path / "o.parquet"
        code, _, stderr = run(
            "enrich",
            tmp_path / "t.parquet",
            tmp_path / "q.parquet",
            "-o",
            out,
            "--on",
            "time",
            "--by",
            "symbol",
            "--device",
            "cpu",
            *(["--memory-limit", limit] if limit else []),
            capsys=capsys,
        )
        assert code == 0, stderr
        assert logged in stderr
        assert pq.read_table(out).equals(expected)
        assert hidden(tmp_path) == []


def test_null_keys_and_groups_beside_a_tape(tmp_path, capsys):
    """RIGHT a tape with null times and null groups; LEFT in no order, with both too."""
    right = pa.table(
        {
            "t": pa.array([1, 1, 2, None, 3, 4, 4, 5, 6, 7, 8, None, 9]),
            "g": pa.array(["early", "a", None, "a", "a", "b", "a", "b", "a", "b", "a", "b", "b"]),
            "v": np.arange(13, dtype=np.float64),
        }
    )
    left = pa.table(
        {
            "t": pa.array([9, 1, None, 4, 4, 6, 8, 2, 9, 10]),
            "g": pa.array(["a", "early", "a", "b", None, "a", "early", "a", "b", "early"]),
        }
    )
    pq.write_table(right, tmp_path / "r.parquet", row_group_size=4)
    pq.write_table(left, tmp_path / "l.parquet", row_group_size=3)
    every_way_regrouped(left, right, tmp_path, capsys, ["--by", "g"], by="g")


def test_a_left_that_breaks_its_tape_promise_is_regrouped(tmp_path, capsys):
    """LEFT's statistics pass for a tape but a row group is out of order: found while
    streaming, the run starts again with RIGHT still streamed and LEFT's keys regrouped."""
    right = pa.table({"t": [1, 2, 3, 4, 5, 6], "x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
    left = pa.table({"t": [1, 2, 4, 3, 5, 6]})  # [1, 2] [4, 3] [5, 6]: statistics pass
    pq.write_table(right, tmp_path / "r.parquet", row_group_size=2)
    pq.write_table(left, tmp_path / "l.parquet", row_group_size=2)
    out = tmp_path / "o.parquet"
    code, _, stderr = run(
        "enrich",
        tmp_path / "l.parquet",
        tmp_path / "r.parquet",
        "-o",
        out,
        "--on",
        "t",
        "--device",
        "cpu",
        "--right-mode",
        "stream",
        "--chunk-rows",
        2,
        capsys=capsys,
    )
    assert code == 0, stderr
    assert (
        f"LEFT {tmp_path / 'l.parquet'} is not sorted by 't' at row 3, though the bounds of "
        f"its row groups are in order: starting again"
    ) in stderr
    # The advice of a run that stops, not of one that goes on:
    assert "write it sorted" not in stderr
    assert "LEFT's keys put in that order" in stderr
    assert pq.read_table(out).equals(ag.join_asof(left, right, on="t", device="cpu"))


def test_a_grouped_right_out_of_order_is_found_while_regrouping(tmp_path, capsys):
    """RIGHT's statistics pass for grouped but a row group is not: --right-mode stream stops
    (nothing written); auto, which holds so small a RIGHT in memory, gets it right."""
    right = pa.table(
        {
            "g": ["a", "a", "a", "b", "b", "b"],
            "t": [1, 3, 5, 0, 9, 7],
            "v": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        }
    )
    pq.write_table(right, tmp_path / "r.parquet", row_group_size=3)  # the first is in order
    left = pa.table({"g": ["b", "a"], "t": [8, 2]})  # neither a tape nor grouped
    pq.write_table(left, tmp_path / "l.parquet")
    out = tmp_path / "o.parquet"
    argv = [
        "enrich",
        tmp_path / "l.parquet",
        tmp_path / "r.parquet",
        "-o",
        out,
        "--on",
        "t",
        "--by",
        "g",
        "--device",
        "cpu",
    ]
    code, stdout, stderr = run(*argv, "--right-mode", "stream", "-q", capsys=capsys)
    assert code == 2 and stdout == ""
    assert stderr == (
        f"asofgpu enrich: error: RIGHT {tmp_path / 'r.parquet'} is not sorted by "
        f"('g', 't') at row 5, though the bounds of its row groups are in order; write it "
        f"sorted, or pass --right-mode spill\n"
    )
    assert not out.exists() and hidden(tmp_path) == []
    code, _, stderr = run(*argv, capsys=capsys)
    assert code == 0, stderr
    assert "reading RIGHT" in stderr
    assert pq.read_table(out).equals(ag.join_asof(left, right, on="t", by="g", device="cpu"))


def test_spill_partitions_with_a_stream_that_spills_nothing_exits_2(tmp_path, capsys):
    pq.write_table(
        pa.table({"g": ["a", "b"], "t": [1, 2], "x": [1.0, 2.0]}), tmp_path / "r.parquet"
    )
    pq.write_table(pa.table({"g": ["a"], "t": [3]}), tmp_path / "l.parquet")
    code, _, stderr = run(
        "enrich",
        tmp_path / "l.parquet",
        tmp_path / "r.parquet",
        "-o",
        tmp_path / "o.parquet",
        "--on",
        "t",
        "--by",
        "g",
        "--device",
        "cpu",
        "--right-mode",
        "stream",
        "--spill-partitions",
        "2",
        capsys=capsys,
    )
    assert code == 2
    assert stderr == (
        "asofgpu enrich: error: --spill-partitions: nothing spills when both "
        "sides stream (it sets LEFT's ranges when only RIGHT is sorted)\n"
    )


# The pieces, against plain Python.


def test_value_counts_over_chunks_with_their_own_dictionaries_and_nulls():
    batches = [
        pa.record_batch({"s": pa.array(["b", None, "a", "b"]).dictionary_encode()}),
        pa.record_batch({"s": pa.array(["c", "b", None]).dictionary_encode()}),
        pa.record_batch({"s": pa.array([], pa.string()).dictionary_encode()}),
    ]
    values, counts = value_counts(batches, "s")
    assert values.type == pa.large_string()
    assert values.to_pylist() == ["a", "b", "c"] and counts.tolist() == [1, 3, 1]
    values, counts = value_counts([pa.record_batch({"n": pa.array([3, -1, 3, None])})], "n")
    assert values.to_pylist() == [-1, 3] and counts.tolist() == [1, 2]
    values, counts = value_counts([], "n")
    assert len(values) == 0 and len(counts) == 0
    views = pa.DictionaryArray.from_arrays(pa.array([1, 1, None]), pa.array(["x", "y", "z"]))
    batch = pa.record_batch({"v": views.cast(pa.dictionary(pa.int64(), pa.string_view()))})
    values, counts = value_counts([batch], "v")
    assert values.to_pylist() == ["y"] and counts.tolist() == [2]
    # Plain views with nulls: pyarrow's value_counts counted the nulls as "" (pyarrow 26)
    for kind, a, b in ((pa.string_view(), "a", "b"), (pa.binary_view(), b"a", b"b")):
        batch = pa.record_batch({"v": pa.array([b, None, a, b], kind)})
        values, counts = value_counts([batch], "v")
        assert values.to_pylist() == [a, b] and counts.tolist() == [1, 2]


def test_value_counts_of_batches_that_share_a_large_dictionary(monkeypatch):
    """A reader's batches each carry their row group's whole dictionary: only the values a
    batch uses are gathered (each batch's whole dictionary of a million ids, gathered and
    summed, took 500 MiB for 2M rows), and those gathered are summed as they grow."""
    from asofgpu.enrich import _regroup

    rng = np.random.default_rng(3)
    dictionary = pa.array([f"id{i:04d}" for i in range(2_000)])
    batches = [
        pa.record_batch(
            {
                "s": pa.DictionaryArray.from_arrays(
                    pa.array(rng.integers(0, 2_000, 50), pa.int32(), mask=rng.random(50) < 0.1),
                    dictionary,
                )
            }
        )
        for _ in range(40)
    ]
    summed = []
    monkeypatch.setattr(_regroup, "_SUMMED_VALUES", 200)
    monkeypatch.setattr(
        _regroup, "_summed", lambda v, c: summed.append(sum(map(len, v))) or _summed(v, c)
    )
    values, counts = value_counts(batches, "s")
    rows = [v for b in batches for v in b.column("s").to_pylist() if v is not None]
    want = sorted(collections.Counter(rows).items())
    assert list(zip(values.to_pylist(), counts.tolist())) == want
    assert len(summed) > 2 and max(summed) <= 200 + 2 * len(want) + 50


@pytest.mark.parametrize(
    "values",
    [
        pa.array(["B", "a", "id7", "é"], pa.large_string()),
        pa.array([-5, 0, 3, 2**40]),
        pa.array([b"\x00", b"x"], pa.large_binary()),
        pa.array([-1.5, 0.0, 2.0, float("inf")]),
        pa.array([-1.5, -0.0, 0.0, 2.0]),  # Arrow's order tells -0.0 from 0.0; the join does not
        pa.array([], pa.large_string()),
    ],
    ids=["text", "int", "binary", "float", "both zeros", "none"],
)
def test_ranks_hashed_once_equal_arrows_lookup(values, thresholds):
    """``Ranks`` (``values`` hashed once, the join's own lookup) gives ``ranks``' answers:
    plain, dictionary and chunked columns, nulls, values not among them."""
    thresholds(hashed_lookup_min_rows=0)
    rng = np.random.default_rng(len(values))
    pool = values.to_pylist() + [None] + (["zz"] if pa.types.is_large_string(values.type) else [])
    column = pa.array([pool[i] for i in rng.integers(0, len(pool), 40)], values.type)
    rank_of = Ranks(values)
    both_zeros = pa.types.is_floating(values.type) and values.to_pylist().count(0.0) == 2
    assert (rank_of._rank is None) == both_zeros  # (then Arrow's index_in, which tells them)
    for given in (
        column,
        column.dictionary_encode(),
        pa.chunked_array([column.slice(0, 15), column.slice(15)]),
        pa.chunked_array(
            [column.slice(0, 9).dictionary_encode(), column.slice(9).dictionary_encode()]
        ),
    ):
        assert rank_of(given).tolist() == ranks(given, values).tolist()


@pytest.mark.parametrize("parts", [1, 2, 3, 7])
def test_partitions_are_ascending_ranges_of_about_equal_rows(parts):
    counts = np.random.default_rng(parts).integers(0, 50, 200)
    part = partitions_of(counts, parts)
    assert (np.diff(part.astype(int)) >= 0).all() and part.max() < parts
    rows = np.bincount(part, weights=counts, minlength=parts)
    assert rows.max() <= counts.sum() / parts + counts.max()


def test_ranks_of_plain_dictionary_and_chunked_columns():
    values = pa.array(["B", "a", "é"], pa.large_string())
    plain = pa.array(["a", None, "é", "zz", "B"])
    assert ranks(plain, values).tolist() == [1, -1, 2, -1, 0]
    chunked = pa.chunked_array(
        [plain.dictionary_encode(), pa.array(["é", "B"]).dictionary_encode()]
    )
    assert ranks(chunked, values).tolist() == [1, -1, 2, -1, 0, 2, 0]
    assert distinct(chunked).to_pylist() == ["B", "a", "zz", "é"]


def test_stream_order_is_by_values_then_key_then_row():
    table = pa.table(
        {
            "s": pa.chunked_array(
                [
                    pa.array(["b", "a", None]).dictionary_encode(),
                    pa.array(["a", "b", "a", "a"]).dictionary_encode(),
                ]
            ),
            "n": pa.array([1, 2, 1, 1, 1, 1, 2]),
            "t": pa.array([5, 3, 1, 3, None, 2, 0]),
        }
    )
    keyed, others = stream_order(table, "t", ["s", "n"])
    rows = table.to_pylist()
    expected = sorted(
        (i for i, r in enumerate(rows) if None not in r.values()),
        key=lambda i: (rows[i]["s"], rows[i]["n"], rows[i]["t"], i),
    )
    assert keyed.tolist() == expected == [5, 3, 6, 1, 0]
    assert others.tolist() == [2, 4]


def test_restore_puts_rows_back():
    taken = pa.table({"x": [30, 10, 20]})
    assert restore(taken, np.array([2, 0, 1])).column("x").to_pylist() == [10, 20, 30]


def test_a_value_too_busy_for_one_range_is_cut_by_key():
    """Of one by column, a value with more rows than a range holds spans several ranges, cut
    at keys of a sample; ranges stay in (value, key) order (rows of a key equal to a cut may
    lie on either side of it)."""
    rng = np.random.default_rng(5)
    n = 20_000
    symbol = np.where(rng.random(n) < 0.6, "m", rng.choice(["a", "b", "z"], n))
    time = rng.integers(0, 500, n)  # many equal keys
    batches = pa.table({"s": symbol, "t": time}).to_batches(max_chunksize=3_000)
    part_of = ByRanges(iter(batches), "s", 6, "t", rows=n, sample=4_000)
    assert part_of.cut == 1
    part = np.concatenate([part_of(b) for b in batches]).astype(np.int64)
    order = np.lexsort((part, time, symbol))  # a range holds no row above the next one's
    assert (np.diff(part[order]) >= 0).all()
    busy = part[symbol == "m"]
    assert len(np.unique(busy)) >= 3
    assert np.bincount(busy).max() < 1.5 * n / 6
    for key in np.unique(time[symbol == "m"]):  # none is busier than a range
        assert len(np.unique(part[(symbol == "m") & (time == key)])) <= 2
    # Without the key, or of a column without a busy value, nothing is cut.
    assert ByRanges(iter(batches), "s", 6).cut == 0
    assert ByRanges(iter(batches), "s", 1, "t", rows=n).cut == 0


def _regrouped_in_ranges(tmp_path, capsys, trades, quotes, by, flags=(), **options) -> str:
    """``trades`` and ``quotes`` written in row groups of 500 and enriched with RIGHT
    streamed and LEFT's keys regrouped in 8 ranges, chunks of 200 (``flags`` and join_asof's
    ``options`` alike): the output must be join_asof's, nothing hidden left; the log."""
    pq.write_table(trades, tmp_path / "t.parquet", row_group_size=500)
    pq.write_table(quotes, tmp_path / "q.parquet", row_group_size=500)
    flags = [*flags, "--right-mode", "stream", "--spill-partitions", 8, "--chunk-rows", 200]
    files = {"on": "time", "by": ",".join(by), "left": "t.parquet", "right": "q.parquet"}
    code, _, stderr = enrich_in(tmp_path, *flags, capsys=capsys, **files)
    assert code == 0, stderr
    assert "LEFT's keys spilled in 8 ranges" in stderr
    expected = ag.join_asof(trades, quotes, on="time", by=by, device="cpu", **options)
    assert pq.read_table(tmp_path / "o.parquet").equals(expected)
    assert hidden(tmp_path) == []
    return stderr


@pytest.mark.parametrize(("flags", "options"), STREAM_OPTIONS)
def test_a_busy_symbol_of_a_shuffled_left_is_cut_into_ranges(tmp_path, capsys, flags, options):
    """Half of the trades in one symbol, in no order, beside quotes sorted by (symbol, time):
    that symbol's LEFT keys fill several ranges, cut by time, and the answers stay
    join_asof's."""
    quotes, trades = marketdata.day(n_quotes=4_000, n_trades=3_000, n_symbols=12, seed=3)
    rng = np.random.default_rng(9)
    busy = rng.random(trades.num_rows) < 0.5
    symbol = pa.chunked_array([pa.array(np.where(busy, "S0003", trades["symbol"].to_numpy()))])
    trades = trades.set_column(trades.schema.get_field_index("symbol"), "symbol", symbol)
    trades = trades.take(rng.permutation(trades.num_rows))
    quotes = _grouped(coarse_times(quotes), ["symbol"])
    stderr = _regrouped_in_ranges(tmp_path, capsys, trades, quotes, ["symbol"], flags, **options)
    assert re.search(r"; \d values? too busy for one range cut by 'time'", stderr)


def test_a_busy_value_of_the_first_of_two_by_columns_is_cut_by_the_second_and_the_key():
    """Of several by columns (``--by day,symbol``), a value of the first with more rows than a
    range holds spans several ranges, cut at (second value, key) tuples of a sample: ranges
    stay in (value, second value, key) order and about equal. Here both days are busy: 30%
    and 70% of the rows, 6 ranges."""
    rng = np.random.default_rng(6)
    n = 20_000
    day = np.where(rng.random(n) < 0.7, "d2", "d1")
    symbol = rng.choice(["a", "b", "c", "d", "e"], n)
    time = rng.integers(0, 300, n)
    null = rng.random(n) < 0.01  # never matches: any range
    table = pa.table({"d": day, "s": pa.array(symbol, mask=null), "t": time})
    batches = table.to_batches(max_chunksize=3_000)
    part_of = ByRanges(iter(batches), "d", 6, "t", rows=n, sample=4_000, rest=["s"])
    assert part_of.cut == 2
    part = np.concatenate([part_of(b) for b in batches]).astype(np.int64)
    order = np.lexsort((part, time, symbol, day))  # no row above the next range's
    order = order[~null[order]]
    assert (np.diff(part[order]) >= 0).all()
    assert len(np.unique(part[day == "d1"])) == 2 and len(np.unique(part[day == "d2"])) >= 4
    for d in ("d1", "d2"):  # a range holds at most a range's share of each day
        assert np.bincount(part[day == d]).max() < 1.4 * n / 6
    # Dictionary columns, as the first pass reads text, cut the same way.
    coded = pa.table({c: table[c].dictionary_encode() for c in ("d", "s")} | {"t": table["t"]})
    coded_batches = coded.to_batches(max_chunksize=3_000)
    by_codes = ByRanges(iter(coded_batches), "d", 6, "t", rows=n, sample=4_000, rest=["s"])
    assert np.array_equal(np.concatenate([by_codes(b) for b in coded_batches]), part)


@pytest.mark.parametrize("strategy", ["backward", "forward", "nearest"])
def test_a_busy_day_of_two_by_columns_of_a_shuffled_left_is_cut_into_ranges(
    tmp_path, capsys, strategy
):
    """``--by day,symbol`` with most trades on one day, in no order, beside quotes sorted by
    (day, symbol, time): that day's LEFT keys fill several ranges, cut by (symbol, time),
    not one range holding the whole day; the answers stay join_asof's."""
    quotes, trades = marketdata.day(n_quotes=4_000, n_trades=3_000, n_symbols=12, seed=4)
    rng = np.random.default_rng(10)
    quotes = quotes.append_column("day", pa.array(rng.choice(["d1", "d2"], quotes.num_rows)))
    trades = trades.append_column(
        "day", pa.array(np.where(rng.random(trades.num_rows) < 0.8, "d2", "d1"))
    )
    trades = trades.take(rng.permutation(trades.num_rows))
    quotes = _grouped(coarse_times(quotes), ["day", "symbol"])
    by, flags = ["day", "symbol"], ["--strategy", strategy]
    stderr = _regrouped_in_ranges(tmp_path, capsys, trades, quotes, by, flags, strategy=strategy)
    assert "LEFT's keys spilled in 8 ranges of 'day'" in stderr
    assert "2 values too busy for one range cut by ('symbol', 'time')" in stderr


def test_one_key_busier_than_several_ranges_is_spread_over_them():
    """Rows that share the whole of the stream's order, one key of a tape or one (by value,
    key) of a grouped RIGHT, may go to any range their key bounds: a key holding half of a
    shuffled LEFT fills several ranges about equally instead of one holding half of it."""
    rng = np.random.default_rng(8)
    n = 24_000
    time = np.where(rng.random(n) < 0.5, 250, rng.integers(0, 500, n))
    symbol = np.where(rng.random(n) < 0.7, "m", "a")
    table = pa.table({"s": symbol, "t": time})
    batches = table.to_batches(max_chunksize=3_000)
    # (part_of, the stream's order, the rows of the busy value, the busiest rows)
    tape = on_ranges(iter(batches), "t", 8, n, sample=6_000)
    grouped = ByRanges(iter(batches), "s", 8, "t", rows=n, sample=6_000)
    m = symbol == "m"
    for part_of, keys, rows, busiest in (
        (tape, (time,), np.ones(n, bool), time == 250),
        (grouped, (time, symbol), m, m & (time == 250)),
    ):
        part = np.concatenate([part_of(b) for b in batches]).astype(np.int64)
        order = np.lexsort((part, *keys))  # no row above the next range's
        assert (np.diff(part[order]) >= 0).all()
        assert len(np.unique(part[busiest])) >= 3
        # The ranges share the busy value's rows about equally (a range at the border of
        # two values holds the end of one and the start of the next).
        assert np.bincount(part[rows]).max() < 1.25 * n / 8


@pytest.mark.parametrize("strategy", ["backward", "forward", "nearest"])
@pytest.mark.parametrize("layout", ["tape", "grouped"])
def test_a_key_holding_half_of_a_shuffled_left_is_joined_across_ranges(
    tmp_path, capsys, layout, strategy
):
    """Half of the trades at one time (an auction print), in no order, beside quotes sorted by
    time or by (symbol, time): that key's LEFT rows are spread over several ranges, which
    the stream takes one after another at the same key; the answers stay join_asof's."""
    quotes, trades = marketdata.day(n_quotes=4_000, n_trades=3_000, n_symbols=3, seed=5)
    quotes = coarse_times(quotes)
    rng = np.random.default_rng(12)
    auction = quotes["time"].to_numpy()[2_000]
    times = np.where(rng.random(trades.num_rows) < 0.5, auction, trades["time"].to_numpy())
    time = pa.chunked_array([pa.array(times, trades.schema.field("time").type)])
    trades = trades.set_column(trades.schema.get_field_index("time"), "time", time)
    trades = trades.take(rng.permutation(trades.num_rows))
    if layout == "grouped":
        quotes = _grouped(quotes, ["symbol"])
    flags = ["--strategy", strategy]
    _regrouped_in_ranges(tmp_path, capsys, trades, quotes, ["symbol"], flags, strategy=strategy)
