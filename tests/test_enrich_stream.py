"""``asofgpu enrich`` streaming RIGHT in windows with a per-group carry, for tapes: both sides
sorted by their key. The oracle is ``asofgpu.join_asof`` on the whole files; small
``--chunk-rows`` make many windows, so carries cross many of them."""

from __future__ import annotations

import re


import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import asofgpu as ag
from asofgpu import marketdata
from enrich_cli import STREAM_OPTIONS, coarse_times, enrich_in, hidden, run

pytestmark = pytest.mark.usefixtures("left_columns")  # copied and encoded, both


@pytest.fixture
def tape(tmp_path):
    """A time-sorted day with runs of equal times, so windows split runs of equal keys."""
    quotes, trades = marketdata.day(n_quotes=3_000, n_trades=2_000, n_symbols=25, seed=6)
    quotes = coarse_times(quotes)
    pq.write_table(trades, tmp_path / "trades.parquet", row_group_size=300)
    pq.write_table(quotes, tmp_path / "quotes.parquet", row_group_size=256)
    return tmp_path / "trades.parquet", tmp_path / "quotes.parquet"


# LEFT's columns are copied (``left_columns``) where its row groups, of 300 rows, fit in a
# chunk; in smaller chunks they are encoded again whatever the fixture asks.
CHUNKS_COPIED = pytest.mark.parametrize(
    ("chunk_rows", "left_columns"),
    [(7, "encoded"), (170, "encoded"), (5_000, "copied"), (5_000, "encoded")],
    indirect=["left_columns"],
)


@CHUNKS_COPIED
@pytest.mark.parametrize(
    ("flags", "options"),
    [
        ([], {}),
        (["--no-exact-matches"], {"allow_exact_matches": False}),
        (["--tolerance", "20s"], {"tolerance": np.timedelta64(20, "s")}),
        (["--strategy", "forward"], {"strategy": "forward"}),
        (
            ["--strategy", "forward", "--no-exact-matches"],
            {"strategy": "forward", "allow_exact_matches": False},
        ),
        (["--strategy", "nearest"], {"strategy": "nearest"}),
        (
            ["--strategy", "nearest", "--tolerance", "20s", "--no-exact-matches"],
            {
                "strategy": "nearest",
                "tolerance": np.timedelta64(20, "s"),
                "allow_exact_matches": False,
            },
        ),
    ],
)
def test_streamed_equals_join_asof(
    tape, tmp_path, capsys, chunk_rows, left_columns, flags, options
):
    stderr = streamed_equals_join_asof(tape, tmp_path, capsys, chunk_rows, flags, options)
    assert "rows, sorted by 'time') in windows" in stderr
    assert ("its columns copied as they are" in stderr) == (left_columns == "copied")


def streamed_equals_join_asof(files, tmp_path, capsys, chunk_rows, flags, options) -> str:
    """Stream ``files`` (trades, quotes) by symbol and time; compare with join_asof. Returns
    the log."""
    trades, quotes = files
    out = tmp_path / "out.parquet"
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
        *flags,
        capsys=capsys,
    )
    assert code == 0, stderr
    assert "--right-mode stream: streaming RIGHT" in stderr
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
    return stderr


def test_null_keys_null_groups_and_groups_seen_only_early(tmp_path, capsys):
    """Null times on both sides (never a candidate, never matched), null by values, and a
    group quoted only in the first window but traded in the last."""
    right = pa.table(
        {
            "t": pa.array([1, 1, 2, None, 3, 4, 4, 5, 6, 7, 8, None, 9]),
            "g": pa.array(["early", "a", None, "a", "a", "b", "a", "b", "a", "b", "a", "b", "b"]),
            "v": np.arange(13, dtype=np.float64),
        }
    )
    left = pa.table(
        {
            "t": pa.array([None, 1, 2, 4, 4, 6, 8, 9, 9, 10]),
            "g": pa.array(["a", "early", "a", "b", None, "a", "early", "b", "a", "early"]),
        }
    )
    pq.write_table(right, tmp_path / "r.parquet", row_group_size=4)
    pq.write_table(left, tmp_path / "l.parquet", row_group_size=3)
    outs = every_way_streamed(left, right, tmp_path, capsys, (1, 2, 3, 100), ["--by", "g"], by="g")
    for nearest in outs[2::3]:
        assert nearest["v"].to_pylist()[-1] == 0.0  # "early", from window one


def every_way_streamed(
    left: pa.Table, right: pa.Table, tmp_path, capsys, chunk_sizes, flags, **by
) -> list[pa.Table]:
    """l.parquet and r.parquet in ``tmp_path`` (``left`` and ``right`` written) streamed on
    ``t`` with ``flags`` for every chunk size and strategy, each output checked against
    join_asof with ``by``. Returns the outputs."""
    outs = []
    for chunk_rows in chunk_sizes:
        for strategy in ("backward", "forward", "nearest"):
            out = tmp_path / f"o{chunk_rows}{strategy}.parquet"
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
                "-q",
                capsys=capsys,
            )
            assert code == 0, stderr
            expected = ag.join_asof(left, right, on="t", strategy=strategy, device="cpu", **by)
            outs.append(pq.read_table(out))
            assert outs[-1].equals(expected), (chunk_rows, strategy)
    return outs


def test_two_by_columns_and_left_folder(tmp_path, capsys):
    quotes, trades = marketdata.day(n_quotes=2_000, n_trades=1_500, n_symbols=10, seed=8)
    venue = pa.array(np.random.default_rng(1).choice(["X", "Y"], 2_000))
    quotes = quotes.append_column("venue", venue)
    trades = trades.append_column(
        "venue", pa.array(np.random.default_rng(2).choice(["X", "Y"], 1_500))
    )
    (tmp_path / "l").mkdir()
    for i, start in enumerate(range(0, 1_500, 500)):  # later files hold later trades
        pq.write_table(
            trades.slice(start, 500), tmp_path / "l" / f"part-{i}.parquet", row_group_size=128
        )
    pq.write_table(quotes, tmp_path / "q.parquet", row_group_size=128)
    out = tmp_path / "out"
    assert (
        run(
            "enrich",
            tmp_path / "l",
            tmp_path / "q.parquet",
            "-o",
            out,
            "--on",
            "time",
            "--by",
            "symbol,venue",
            "--device",
            "cpu",
            "--right-mode",
            "stream",
            "--chunk-rows",
            77,
            "-q",
            capsys=capsys,
        )[0]
        == 0
    )
    expected = ag.join_asof(trades, quotes, on="time", by=["symbol", "venue"], device="cpu")
    got = pa.concat_tables(pq.read_table(out / f"part-{i}.parquet") for i in range(3))
    assert got.equals(expected)


def test_a_tape_streams_by_itself(tape, tmp_path, capsys):
    """auto streams a tape even when it would fit in memory: less memory, less time."""
    trades, quotes = tape
    out = tmp_path / "o.parquet"
    code, stdout, stderr = run(
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
        capsys=capsys,
    )
    assert code == 0, stderr
    assert "both sides are sorted by their key: streaming RIGHT" in stderr
    assert "spilled" not in stdout
    assert pq.read_table(out).equals(
        ag.join_asof(
            pq.read_table(trades), pq.read_table(quotes), on="time", by="symbol", device="cpu"
        )
    )


@pytest.mark.parametrize("strategy", ["forward", "nearest"])
def test_a_forward_or_nearest_tape_is_held_in_memory_where_it_fits(tmp_path, capsys, strategy):
    """A forward or nearest stream reads RIGHT twice (its first pass finds each window's
    carry out): auto holds RIGHT in memory where it fits, and streams it where it does not
    (300K quotes, more than half of the 20 MiB that --memory-limit 420MiB leaves)."""
    quotes, trades = marketdata.day(n_quotes=300_000, n_trades=20_000, n_symbols=50, seed=4)
    pq.write_table(quotes, tmp_path / "r.parquet", row_group_size=50_000)
    pq.write_table(trades, tmp_path / "l.parquet", row_group_size=5_000)
    expected = ag.join_asof(trades, quotes, on="time", by="symbol", strategy=strategy)
    held = "into memory: it fits (about "
    streamed = "both sides are sorted by their key: streaming RIGHT"
    for limit, logged in ((None, held), ("420MiB", streamed)):
        flags = ["--strategy", strategy, *(["--memory-limit", limit] if limit else [])]
        code, _, stderr = enrich_in(tmp_path, *flags, capsys=capsys, on="time", by="symbol")
        assert code == 0, stderr
        assert logged in stderr
        assert (f"and a {strategy} stream would read RIGHT twice" in stderr) == (limit is None)
        assert pq.read_table(tmp_path / "o.parquet").equals(expected)


def test_a_tape_of_entities_each_its_own_group_is_held_in_memory_where_it_fits(tmp_path, capsys):
    """A tape whose rows are nearly all groups of their own carries about a row a group from
    window to window, each window encoding its carry again (1M string groups: 14-16 s
    streamed, 4.7-5.6 s in memory): auto holds it in memory where it fits, and streams it
    where it does not (more than half of the 20 MiB --memory-limit 420MiB leaves)."""
    rng = np.random.default_rng(8)
    n = 300_000
    entities = [f"e{i:07d}" for i in rng.permutation(n)]  # each update its entity's first
    right = pa.table({"t": np.arange(n) * 2, "g": entities, "v": np.arange(n) * 1.0})
    left = pa.table(
        {"t": np.arange(0, 2 * n, 7) + 1, "g": [entities[i // 2] for i in range(0, 2 * n, 7)]}
    )
    pq.write_table(right, tmp_path / "r.parquet", row_group_size=50_000)
    pq.write_table(left, tmp_path / "l.parquet", row_group_size=20_000)
    expected = ag.join_asof(left, right, on="t", by="g", device="cpu")
    held = "and RIGHT's rows are nearly all groups of their own"
    streamed = "both sides are sorted by their key: streaming RIGHT"
    for limit, logged in ((None, held), ("420MiB", streamed)):
        flags = ["--memory-limit", limit] if limit else []
        code, _, stderr = enrich_in(tmp_path, *flags, capsys=capsys)
        assert code == 0, stderr
        assert logged in stderr
        assert pq.read_table(tmp_path / "o.parquet").equals(expected)


def test_a_file_that_breaks_its_statistics_promise_exits_2(tmp_path, capsys):
    """Row-group statistics only bound each group: rows out of order inside one are found
    while streaming, and nothing is written."""
    right = pa.table({"t": [1, 3, 5, 6, 9, 7], "v": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
    pq.write_table(right, tmp_path / "r.parquet", row_group_size=3)  # [1, 3, 5], [6, 9, 7]
    pq.write_table(pa.table({"t": [2, 6]}), tmp_path / "l.parquet")
    out = tmp_path / "o.parquet"
    code, stdout, stderr = run(
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
        "-q",
        capsys=capsys,
    )
    assert code == 2 and stdout == ""
    assert stderr == (
        f"asofgpu enrich: error: RIGHT {tmp_path / 'r.parquet'} is not sorted by "
        f"'t' at row 5, though the bounds of its row groups are in order; write it sorted, "
        f"or pass --right-mode spill\n"
    )
    assert not out.exists() and hidden(tmp_path) == []


@pytest.mark.parametrize(
    ("left_keys", "right_keys", "options", "why"),
    [
        ([3, 1, 2], [0, 2], [], r"it fits \(about .+ prepared\), and LEFT is not sorted as RIGHT is"),
        (
            [1.0, 2.0], [0.5, 1.5], [],
            r"it fits \(about .+ prepared\), and streaming needs keys of one integer type .+ and "
            r"LEFT column 't' is double, RIGHT column 't' double",
        ),
        (
            [1, 2], [2, 0], [],
            r"it fits \(about .+ prepared\), and RIGHT .+ is not sorted by 't', as far as its "
            r"row-group statistics and first row group show",
        ),
        ([1, 2], [0, 2], ["--right-mode", "memory"], r"--right-mode memory"),
    ],
    ids=["left-unsorted", "float-keys", "right-unsorted", "asked"],
)  # fmt: skip
def test_the_log_says_why_right_is_held_in_memory(
    tmp_path, capsys, left_keys, right_keys, options, why
):
    """The README says the log tells which way RIGHT is held and why; the line for memory
    said neither, where the stream's and the spill's lines did."""
    pq.write_table(pa.table({"t": left_keys}), tmp_path / "l.parquet")
    pq.write_table(pa.table({"t": right_keys, "v": [1, 2]}), tmp_path / "r.parquet")
    code, _, stderr = run(
        "enrich", tmp_path / "l.parquet", tmp_path / "r.parquet", "-o", tmp_path / "o.parquet",
        "--on", "t", "--device", "cpu", *options, capsys=capsys,
    )  # fmt: skip
    assert code == 0, stderr
    line = rf"asofgpu enrich: reading RIGHT .*r\.parquet \(2 rows\) into memory: {why}"
    assert re.search(line, stderr), stderr


@pytest.mark.parametrize(
    ("case", "message"),
    [
        (
            "unsorted",
            "--right-mode stream: RIGHT {r} is not sorted by 't', as far as its row-group "
            "statistics and first row group show",
        ),
        (
            "one-group",
            "--right-mode stream: RIGHT {r} is not sorted by 't', as far as its row-group "
            "statistics and first row group show",
        ),
        (
            "zones",  # keys no mode can join: the checks' reason, not the stream's
            "LEFT column 't' (timestamp[ms, tz=UTC]) and RIGHT column 't' (timestamp[ms, "
            "tz=Europe/Paris]) cannot be compared",
        ),
        (
            "types",
            "--right-mode stream: streaming needs keys of one integer type (not uint64) or "
            "one temporal type and unit on both sides, and LEFT column 't' is int32, RIGHT "
            "column 't' int64; --right-mode memory or spill joins them",
        ),
        ("spill", "--spill-partitions: nothing spills when both sides stream"),
        *(
            (
                case,  # sorted, but nothing tells
                "--right-mode stream: whether RIGHT {r} is sorted by 't' cannot be told "
                "without reading it: its footers give no min/max statistics for 't' ({r}, row "
                f"group 0: {why}); --right-mode memory or spill joins it",
            )
            for case, why in (
                ("no-statistics", "written without statistics"),
                ("int96", "INT96 timestamps, as older Spark writes them, have none"),
            )
        ),
        (
            "no-statistics-by",
            "--right-mode stream: whether RIGHT {r} is sorted by 't' cannot be told without "
            "reading it: its footers give no min/max statistics for 't' ({r}, row group 0: "
            "written without statistics), nor do they show it sorted by ('g', 't'); "
            "--right-mode memory or spill joins it",
        ),
    ],
)
def test_streaming_that_cannot_be_done_exits_2(tmp_path, capsys, case, message):
    right = pa.table({"t": [1, 3, 5, 7], "v": [1.0, 2.0, 3.0, 4.0]})
    left = pa.table({"t": [2, 6]})
    flags = ["--right-mode", "stream"]
    if case == "unsorted":
        right = right.take([2, 3, 0, 1])  # row groups [5, 7] then [1, 3]
    elif case == "one-group":
        right = right.take([0, 2, 1, 3]).slice(0, 3)  # one row group: [1, 5, 3]
    elif case == "types":
        left = pa.table({"t": pa.array([2, 6], pa.int32())})
    elif case == "zones":
        left = pa.table({"t": pa.array([2, 6], pa.timestamp("ms", "UTC"))})
        right = right.set_column(0, "t", right["t"].cast(pa.timestamp("ms", "Europe/Paris")))
    elif case == "spill":
        flags += ["--spill-partitions", "2"]
    elif case == "no-statistics-by":
        right, left = right.append_column("g", [[1] * 4]), left.append_column("g", [[1] * 2])
        flags += ["--by", "g"]
    elif case == "int96":
        left, right = (t.set_column(0, "t", t["t"].cast(pa.timestamp("ns"))) for t in (left, right))
    pq.write_table(
        right,
        tmp_path / "r.parquet",
        row_group_size=10 if case == "one-group" else 2,
        write_statistics=not case.startswith("no-statistics"),
        use_deprecated_int96_timestamps=case == "int96",
    )
    pq.write_table(left, tmp_path / "l.parquet")
    code, _, stderr = run(
        "enrich",
        tmp_path / "l.parquet",
        tmp_path / "r.parquet",
        "-o",
        tmp_path / "o.parquet",
        "--on",
        "t",
        "--device",
        "cpu",
        *flags,
        capsys=capsys,
    )
    assert code == 2 and stderr.count("\n") == 1
    assert message.format(r=tmp_path / "r.parquet") in stderr


def test_a_broken_promise_in_a_folder_names_the_file_and_its_row(tmp_path, capsys):
    """Statistics bound each row group: a file of a folder whose rows are out of order inside
    one is named with the row in it, for RIGHT (refused) and LEFT (regrouped)."""
    (tmp_path / "r").mkdir()
    (tmp_path / "l").mkdir()
    pq.write_table(pa.table({"t": [1, 2, 3], "v": [1.0, 2.0, 3.0]}), tmp_path / "r" / "a.parquet")
    pq.write_table(pa.table({"t": [4, 6, 5], "v": [4.0, 5.0, 6.0]}), tmp_path / "r" / "b.parquet")
    pq.write_table(pa.table({"t": [0, 2, 4]}), tmp_path / "l" / "a.parquet")
    pq.write_table(pa.table({"t": [5, 7, 6]}), tmp_path / "l" / "b.parquet")
    pq.write_table(pa.table({"t": [1, 2, 3, 4, 5, 6]}), tmp_path / "l.parquet")
    for left in (tmp_path / "l.parquet", tmp_path / "l"):
        code, _, stderr = run(
            "enrich", left, tmp_path / "r", "-o", tmp_path / "o", "--on", "t", "--device",
            "cpu", "--right-mode", "stream", "-q", capsys=capsys,
        )  # fmt: skip
        assert code == 2
        assert stderr == (
            f"asofgpu enrich: error: RIGHT {tmp_path / 'r'} is not sorted by 't' at row 2 of "
            f"{tmp_path / 'r' / 'b.parquet'}, though the bounds of its row groups are in order; write it "
            f"sorted, or pass --right-mode spill\n"
        )
    (tmp_path / "r" / "b.parquet").unlink()
    code, _, stderr = run(
        "enrich", tmp_path / "l", tmp_path / "r", "-o", tmp_path / "o", "--on", "t", "--device",
        "cpu", "--right-mode", "stream", capsys=capsys,
    )  # fmt: skip
    assert code == 0, stderr
    assert (
        f"LEFT {tmp_path / 'l'} is not sorted by 't' at row 2 of {tmp_path / 'l' / 'b.parquet'}, "
        f"though the bounds of its row groups are in order: starting again" in stderr
    )
    assert "write it sorted" not in stderr


def test_what_a_window_hands_on_of_each_group():
    """The carry in: each group's last row by key, then row order; the carry out: all of a
    group's rows at its smallest key (which of them wins depends on the strategy). Null keys
    and null groups hand on nothing; NaN is the largest key; unsorted input is sorted first."""
    from asofgpu.enrich._stream import ends_of_groups

    table = pa.table(
        {
            "t": pa.array([5.0, 1.0, 1.0, float("nan"), 3.0, None, 1.0, 2.0, 2.0]),
            "g": pa.array(["a", "a", "a", "b", "b", "b", None, "c", "c"]).dictionary_encode(),
            "h": pa.array([1, 1, 1, 1, 1, 1, 1, 1, 2]),
            "row": pa.array(range(9)),
        }
    )
    rows = lambda t: t["row"].to_pylist()  # noqa: E731
    assert rows(ends_of_groups(table, "t", ["g"], last=True)) == [0, 3, 8]
    assert rows(ends_of_groups(table, "t", ["g"], last=False)) == [1, 2, 4, 7, 8]
    assert rows(ends_of_groups(table, "t", ["g", "h"], last=False)) == [1, 2, 4, 7, 8]
    assert rows(ends_of_groups(table, "t", ["g", "h"], last=True)) == [0, 3, 7, 8]
    assert rows(ends_of_groups(table, "t", [], last=True)) == [3]
    assert rows(ends_of_groups(table, "t", [], last=False)) == [1, 2, 6]
    sorted_table = table.take([1, 2, 6, 7, 8, 4, 0, 3])
    assert rows(ends_of_groups(sorted_table, "t", ["g"], last=False, in_key_order=True)) == [
        1,
        2,
        7,
        8,
        4,
    ]
    keyed = table.take([1, 2, 7, 8, 4, 0, 3])  # every row keyed and grouped, NaN last
    assert rows(ends_of_groups(keyed, "t", ["g"], last=False, in_key_order=True)) == [
        1,
        2,
        7,
        8,
        4,
    ]
    assert rows(ends_of_groups(keyed, "t", ["g"], last=True, in_key_order=True)) == [8, 0, 3]
    nan_first = table.take([3])  # a group whose smallest key is NaN hands on its NaN rows
    assert rows(ends_of_groups(nan_first, "t", ["g"], last=False, in_key_order=True)) == [3]


# Grouped: both sides sorted by their by columns, then their key (day files per symbol).


def _grouped(table: pa.Table, by: list[str]) -> pa.Table:
    return table.sort_by([(c, "ascending") for c in (*by, "time")])


@pytest.fixture
def grouped(tmp_path):
    """A day sorted by (symbol, time), with runs of equal times and symbols whose rows span
    row groups, so windows and LEFT chunks split groups and runs."""
    quotes, trades = marketdata.day(n_quotes=3_000, n_trades=2_000, n_symbols=25, seed=9)
    quotes = coarse_times(quotes)
    pq.write_table(_grouped(trades, ["symbol"]), tmp_path / "trades.parquet", row_group_size=300)
    pq.write_table(_grouped(quotes, ["symbol"]), tmp_path / "quotes.parquet", row_group_size=256)
    return tmp_path / "trades.parquet", tmp_path / "quotes.parquet"


@CHUNKS_COPIED
@pytest.mark.parametrize(("flags", "options"), STREAM_OPTIONS)
def test_grouped_streamed_equals_join_asof(
    grouped, tmp_path, capsys, chunk_rows, left_columns, flags, options
):
    stderr = streamed_equals_join_asof(grouped, tmp_path, capsys, chunk_rows, flags, options)
    assert "rows, sorted by ('symbol', 'time')) in windows" in stderr
    assert ("its columns copied as they are" in stderr) == (left_columns == "copied")


def test_grouped_by_two_columns_with_null_keys_and_groups_on_one_side(tmp_path, capsys):
    """Two by columns (text and integers), null times inside groups (where the
    writer sorted them: last), groups only LEFT or only RIGHT has, names that differ."""
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
            "venue": pa.array(["a", "a", "a", "b", "b", "c", "d", "e", "e"]),
            "num": pa.array([1, 1, 2, 1, 1, 5, 1, 0, 0], pa.int32()),
            "t": pa.array([0, 4, 9, 3, None, 8, 5, 2, 7]),
        }
    )
    pq.write_table(right, tmp_path / "r.parquet", row_group_size=3)
    pq.write_table(left, tmp_path / "l.parquet", row_group_size=2)
    every_way_streamed(
        left,
        right,
        tmp_path,
        capsys,
        (1, 2, 4, 100),
        ["--left-by", "venue,num", "--right-by", "v,n"],
        by_left=["venue", "num"],
        by_right=["v", "n"],
    )


def test_grouped_files_stream_by_themselves(tmp_path, capsys):
    """auto streams grouped files as it streams tapes, whether RIGHT fits or not: less
    memory, less time."""
    quotes, trades = marketdata.day(n_quotes=300_000, n_trades=20_000, n_symbols=50, seed=2)
    pq.write_table(_grouped(quotes, ["symbol"]), tmp_path / "q.parquet")
    pq.write_table(_grouped(trades, ["symbol"]), tmp_path / "t.parquet")
    expected = ag.join_asof(trades, quotes, on="time", by="symbol", device="cpu")
    expected = _grouped(expected, ["symbol"])  # OUT keeps LEFT's order
    logged = "both sides are sorted by their by columns ('symbol'), then their key: streaming"
    for limit in (None, "450MiB"):
        out = tmp_path / "o.parquet"
        code, stdout, stderr = run(
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


def test_a_grouped_file_out_of_order_inside_a_row_group_exits_2(tmp_path, capsys):
    right = pa.table(
        {
            "g": ["a", "a", "a", "b", "b", "b"],
            "t": [1, 3, 5, 0, 9, 7],
            "v": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        }
    )
    pq.write_table(right, tmp_path / "r.parquet", row_group_size=3)  # the first is in order
    pq.write_table(pa.table({"g": ["a", "b"], "t": [6, 2]}), tmp_path / "l.parquet")
    out = tmp_path / "o.parquet"
    code, stdout, stderr = run(
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
        "--right-mode",
        "stream",
        "-q",
        capsys=capsys,
    )
    assert code == 2 and stdout == ""
    assert stderr == (
        f"asofgpu enrich: error: RIGHT {tmp_path / 'r.parquet'} is not sorted by "
        f"('g', 't') at row 5, though the bounds of its row groups are in order; write it "
        f"sorted, or pass --right-mode spill\n"
    )
    assert not out.exists() and hidden(tmp_path) == []


@pytest.mark.parametrize(
    ("right", "left", "message"),
    [
        (
            {"g": ["b", "a"], "t": [2, 1]},
            {"g": ["a"], "t": [1]},
            "RIGHT {r} is not sorted by 't' nor by ('g', 't')",
        ),
        (
            {"g": ["a", None], "t": [2, 1]},
            {"g": ["a"], "t": [1]},  # where nulls sort: unknown
            "RIGHT {r} is not sorted by 't' nor by ('g', 't')",
        ),
        (
            {"g": [1.0, float("nan")], "t": [2, 1]},
            {"g": [1.0], "t": [1]},  # and NaN: likewise
            "RIGHT {r} is not sorted by 't' nor by ('g', 't')",
        ),
    ],
)
def test_sides_that_cannot_be_streamed_grouped_exit_2(tmp_path, capsys, right, left, message):
    pq.write_table(pa.table(right), tmp_path / "r.parquet")
    pq.write_table(pa.table(left), tmp_path / "l.parquet")
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
        "-q",
        capsys=capsys,
    )
    assert code == 2
    assert message.format(r=tmp_path / "r.parquet") in stderr


def test_grouped_order_compares_text_of_any_form_byte_wise():
    from asofgpu.enrich._stream import Keys, Order, split_by_key

    order = Order("LEFT", "l.parquet", "t", ["g"])
    batch = pa.table(
        {"g": pa.array(["B", "a", "a", "é"]).dictionary_encode(), "t": pa.array([9, 1, 2, 0])}
    )
    keys = order.keys(batch)
    order.check(keys)  # "B" < "a" < "é" as bytes
    start = (
        Order("RIGHT", "r", "t", ["g"])
        .keys(pa.table({"g": pa.array(["a"], pa.large_string()), "t": [2]}))
        .at(0)
    )
    assert split_by_key(keys, start) == 2
    assert split_by_key(Keys.concat(keys, keys).slice(4), start) == 2
    with pytest.raises(Exception, match=r"not sorted by \('g', 't'\) at row 5"):
        order.check(order.keys(pa.table({"g": ["é", "a"], "t": [0, 1]})))


@pytest.mark.parametrize(
    ("right", "group_rows", "key", "by", "bad_row", "order"),
    [
        # tape: row groups [1, 2, 3] [10, 11, 4] pass; 4 is read after LEFT's only row (5) was
        # joined (the windows read one ahead)
        ({"g": ["a"] * 6, "t": [1, 2, 3, 10, 11, 4]}, 3, 5, [], 5, "'t'"),
        # grouped: (a, -5) after (b, 0), in a row group whose statistics pass
        (
            {"g": ["a", "a", "a", "b", "a"], "t": [1, 2, 3, 0, -5]},
            3,
            0,
            ["--by", "g"],
            4,
            "('g', 't')",
        ),
    ],
)
def test_right_rows_past_lefts_last_are_checked_too(
    tmp_path, capsys, right, group_rows, key, by, bad_row, order
):
    """A backward stream reads RIGHT to its end, though no LEFT row needs the rest: a row out
    of order there may be the match of a row already joined (here it is)."""
    right = pa.table({**right, "x": [float(x) for x in range(len(right["t"]))]})
    pq.write_table(right, tmp_path / "r.parquet", row_group_size=group_rows)
    left = pa.table({"g": ["a"], "t": [key]})
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
        *by,
        "--device",
        "cpu",
        "--chunk-rows",
        1,
        "-q",
    ]
    code, _, stderr = run(*argv, "--right-mode", "stream", capsys=capsys)
    assert code == 2
    assert (
        f"is not sorted by {order} at row {bad_row}, though the bounds of its row groups" in stderr
    )
    assert not out.exists() and hidden(tmp_path) == []
    code, _, stderr = run(*argv, capsys=capsys)  # auto: starts again, and gets it right
    assert code == 0, stderr
    expected = ag.join_asof(left, right, on="t", by="g" if by else None, device="cpu")
    assert pq.read_table(out).equals(expected)
    assert expected["x"].to_pylist() == [float(bad_row)]  # the row out of order matches


def test_grouped_files_whose_statistics_pass_for_a_tape_stream_as_grouped(tmp_path, capsys):
    """Row groups (a, 0) (a, 1) | (a, 5) (b, 2): the key's statistics do not overlap and the
    first row group ascends, so the files pass for tapes too; the tape fails while streaming,
    and the run starts again as grouped."""
    right = pa.table({"g": ["a", "a", "a", "b"], "t": [0, 1, 5, 2], "x": [1.0, 2.0, 3.0, 4.0]})
    left = pa.table({"g": ["a"], "t": [3]})
    pq.write_table(right, tmp_path / "r.parquet", row_group_size=2)
    pq.write_table(left, tmp_path / "l.parquet")
    out = tmp_path / "o.parquet"
    code, _, stderr = run(
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
        "--right-mode",
        "stream",
        capsys=capsys,
    )
    assert code == 0, stderr
    assert (
        "is not sorted by 't' at row 3, though the bounds of its row groups are in order: starting again"
        in stderr
    )
    assert "write it sorted" not in stderr  # the run went on: no advice to the user
    assert "sorted by ('g', 't')) in windows" in stderr
    assert pq.read_table(out).equals(ag.join_asof(left, right, on="t", by="g", device="cpu"))


@pytest.mark.parametrize("by", [[], ["--by", "g"]])
def test_right_past_lefts_last_row_is_read_for_its_keys_only(tmp_path, capsys, by):
    """Past LEFT's last row RIGHT is read for its order check alone, its keys only: a payload
    column whose pages at the end of the file are unreadable does not stop the run."""
    n = 200
    right = pa.table({"g": ["a"] * n, "t": np.arange(n), "x": np.arange(n) * 1.5})
    path = tmp_path / "r.parquet"
    pq.write_table(right, path, row_group_size=10)
    meta = pq.ParquetFile(path).metadata
    chunk = meta.row_group(meta.num_row_groups - 1).column(2)  # x, in the last row group
    start = min(o for o in (chunk.dictionary_page_offset, chunk.data_page_offset) if o)
    with open(path, "r+b") as f:
        f.seek(start)
        f.write(b"\xff" * chunk.total_compressed_size)
    with pytest.raises(OSError):  # the pages are broken indeed
        pq.read_table(path, columns=["x"])
    left = pa.table({"g": ["a", "a"], "t": [3, 12]})
    pq.write_table(left, tmp_path / "l.parquet")
    out = tmp_path / "o.parquet"
    code, _, stderr = run(
        "enrich",
        tmp_path / "l.parquet",
        path,
        "-o",
        out,
        "--on",
        "t",
        *by,
        "--device",
        "cpu",
        "--right-mode",
        "stream",
        "--chunk-rows",
        10,
        capsys=capsys,
    )
    assert code == 0, stderr
    assert pq.read_table(out).column("x").to_pylist() == [4.5, 18.0]


def test_a_run_of_one_key_longer_than_two_batches_keeps_its_groups_ends():
    """A daily state table streamed: one day's rows all share one key. The window that holds
    them keeps what a join can pick, each group's first and last row, not the whole run."""
    from asofgpu.enrich._stream import Order, whole_key_windows

    n = 10_000
    groups = np.array(["a", "b", "c"])[np.arange(n) % 3]
    batches = [pa.record_batch({"t": [1, 2], "g": ["a", "b"], "i": [-2, -1]})]
    batches += [
        pa.record_batch(
            {"t": np.full(500, 3), "g": groups[i : i + 500], "i": np.arange(i, i + 500)}
        )
        for i in range(0, n, 500)
    ]
    batches += [pa.record_batch({"t": [4], "g": ["a"], "i": [n]})]
    rows = pa.concat_tables(whole_key_windows(batches, Order("RIGHT", "r", "t"), ["g"]))
    assert rows.num_rows < 3 + 2 * 500 + 6  # the ends, and at most the last batches whole
    kept = rows["i"].to_pylist()
    assert kept == sorted(kept) and kept[:2] == [-2, -1] and kept[-1] == n  # in row order
    for g in "abc":  # each group's first and last row of the run
        mine = np.flatnonzero(groups == g)
        assert mine[0] in kept and mine[-1] in kept


def test_a_run_of_one_key_is_collapsed_as_it_doubles_and_keeps_what_the_whole_keeps():
    """A state table's day of many entities, batch after batch at one key: collapsed to each
    group's first and last row when the run has doubled since its last collapse (once a batch
    took time growing with the square of the entities); what the stream hands on, and what a
    spilled key range read batch by batch keeps, is what collapsing the whole run once keeps,
    in row order."""
    from asofgpu._backend import walks
    from asofgpu.enrich._stream import Order, first_and_last, first_and_last_of, whole_key_windows

    rng = np.random.default_rng(8)
    n, batch = 40_000, 1_000
    entities = rng.integers(0, 30_000, n)  # most once, some again: their ends are kept
    run = pa.table({"t": np.full(n, 7), "g": entities, "i": np.arange(n)})
    whole = first_and_last(run, "t", ["g"])
    with walks.recorded() as decisions:
        got = pa.concat_tables(
            whole_key_windows(run.to_batches(max_chunksize=batch), Order("RIGHT", "r", "t"), ["g"])
        )
    collapses = [rows for name, rows in decisions if name == "collapses_run" and rows]
    assert 3 <= len(collapses) <= 6  # at 3,000 rows, then as the kept rows double: not 38
    got = first_and_last(got, "t", ["g"])  # the tail after the last collapse, as a join reads it
    assert got["i"].to_pylist() == whole["i"].to_pylist()
    of_batches = first_and_last_of(run.to_batches(max_chunksize=batch), "t", ["g"], run.schema)
    assert of_batches.equals(whole)


def _first_and_last_oracle(table: pa.Table, on: str, by: list[str]) -> list[int]:
    """Row numbers of each (by values, key)'s first and last row, rows with a null key or by
    value left out; NaN by values equal to each other, as the join's groups have them."""
    seen: dict = {}
    columns = [table.column(c).to_pylist() for c in (*by, on)]
    for row, values in enumerate(zip(*columns)):
        if any(v is None for v in values):
            continue
        group = tuple("nan" if isinstance(v, float) and v != v else v for v in values)
        first, _ = seen.get(group, (row, row))
        seen[group] = (first, row)
    return sorted({r for pair in seen.values() for r in pair})


@pytest.mark.parametrize("radix", [False, True])
@pytest.mark.parametrize(
    "kind",
    [
        "int64",
        "uint64",
        "uint8",
        "float64",
        "float32",
        "bool",
        "timestamp",
        "string",
        "interval",
        "two",
        "two numbers",
    ],
)
def test_first_and_last_keeps_each_group_and_keys_first_and_last_row(kind, radix):
    """What a join can pick of a run: each (by values, key)'s first and last row, in row
    order, rows with a null key or by value dropped. Numbers, booleans and instants are
    compared as their own values (no dictionary), text and intervals through group ids; the
    oracle groups tuples. On numpy's sort and on the radix sort, which the by columns' full
    64-bit range reaches (negative floats' bits, uint64 past 2**63, int64's ends)."""
    from asofgpu._backend import walks
    from asofgpu.enrich._stream import first_and_last

    rng = np.random.default_rng(len(kind))
    n = 3_000
    keys = pa.array(rng.integers(0, 4, n), mask=rng.random(n) < 0.05)
    raw = rng.integers(0, 40, n)
    mask = rng.random(n) < 0.05
    ends = np.array([-(2**63), 2**63 - 1, -1, 0] + list(range(36)), np.int64)
    by = {
        "int64": pa.array(ends[raw], mask=mask),
        "uint64": pa.array(ends[raw].view(np.uint64), mask=mask),
        "uint8": pa.array(raw.astype(np.uint8), mask=mask),
        "float64": pa.array(np.where(raw == 3, np.nan, (raw - 20) / 4), mask=mask),
        "float32": pa.array((raw / 4).astype(np.float32), mask=mask),
        "bool": pa.array(raw % 2 == 0, mask=mask),
        "timestamp": pa.array(raw * 1_000, pa.timestamp("ns"), mask=mask),
        "string": pa.array([f"s{v}" for v in raw], mask=mask),
        "interval": pa.array([pa.MonthDayNano([int(v), 0, 0]) for v in raw], mask=mask),
    }
    pairs = {"two": ("int64", "string"), "two numbers": ("uint8", "float64")}
    if kind in pairs:  # the second varies within each value of the first
        first, second = pairs[kind]
        columns = {"g": by[first], "h": by[second].take(pa.array(rng.permutation(n)))}
    else:
        columns = {"g": by[kind]}
    table = pa.table({"t": keys, **columns, "i": np.arange(n)})
    names = list(columns)
    with walks.overridden(radix_min_rows=1 if radix else 10**9):
        got = first_and_last(table, "t", names)
    assert got["i"].to_pylist() == _first_and_last_oracle(table, "t", names)
    apart = pa.concat_tables([table.slice(0, 1_000), table.slice(1_000).take(np.arange(n - 1_000))])
    with walks.overridden(radix_min_rows=1 if radix else 10**9):
        again = first_and_last(apart, "t", names)  # chunks apart
    assert again["i"].to_pylist() == got["i"].to_pylist()
    assert first_and_last(table.slice(0, 0), "t", names).num_rows == 0


def test_first_and_last_may_keep_minus_zero_and_zero_apart():
    """Float by values are compared as their bits: -0.0 and 0.0 apart, finer than the join's
    groups, which keeps every row the join could pick and a few more."""
    from asofgpu.enrich._stream import first_and_last

    table = pa.table({"t": [1, 1, 1, 1], "g": [0.0, -0.0, 0.0, -0.0], "i": [0, 1, 2, 3]})
    assert first_and_last(table, "t", ["g"])["i"].to_pylist() == [0, 1, 2, 3]


def test_a_run_of_two_batches_of_one_key_goes_on_as_a_window_whatever_its_collapse_takes():
    """A run of one key of two batches is a window as any other, never collapsed: collapsing
    it would take more than the carries' share here, and it streams all the same."""
    from asofgpu.enrich._stream import FIRST_AND_LAST_ROW_BYTES, Order, whole_key_windows

    rows = 1_000
    day = pa.table({"t": np.full(2 * rows, 7), "g": np.arange(2 * rows), "v": np.ones(2 * rows)})
    after = pa.table({"t": np.full(rows, 8), "g": np.arange(rows), "v": np.ones(rows)})
    share = day.nbytes + FIRST_AND_LAST_ROW_BYTES * 2 * rows - 1  # less than a collapse takes
    batches = day.to_batches(max_chunksize=rows) + after.to_batches()
    windows = whole_key_windows(batches, Order("RIGHT", "r", "t"), ["g"], share)
    assert [w.num_rows for w in windows] == [2 * rows, rows]


@pytest.mark.parametrize("strategy", ["backward", "forward", "nearest"])
def test_a_tape_with_one_key_of_many_rows_streams(tmp_path, capsys, strategy):
    rng = np.random.default_rng(3)
    n = 30_000
    days = np.sort(np.concatenate([np.full(n, 5), rng.integers(0, 10, 3_000)]))
    right = pa.table(
        {
            "day": days,
            "g": rng.choice(["a", "b", "c"], len(days)),
            "v": np.arange(len(days), dtype=float),
        }
    )
    left = pa.table(
        {"day": np.sort(rng.integers(-1, 12, 500)), "g": rng.choice(["a", "b", "c", "d"], 500)}
    )
    pq.write_table(right, tmp_path / "r.parquet", row_group_size=1_000)
    pq.write_table(left, tmp_path / "l.parquet")
    out = tmp_path / "o.parquet"
    code, _, stderr = run(
        "enrich",
        tmp_path / "l.parquet",
        tmp_path / "r.parquet",
        "-o",
        out,
        "--on",
        "day",
        "--by",
        "g",
        "--device",
        "cpu",
        "--right-mode",
        "stream",
        "--chunk-rows",
        1_000,
        "--strategy",
        strategy,
        capsys=capsys,
    )
    assert code == 0, stderr
    expected = ag.join_asof(left, right, on="day", by="g", strategy=strategy, device="cpu")
    assert pq.read_table(out).equals(expected)


ENTITIES = 300_000


def _entities_day(folder, grouped: bool = False, left_sorted: bool = True):
    """A tape of 300K entities of two rows each (RIGHT, "r.parquet") and 2K LEFT rows
    ("l.parquet"), both sorted by time, by (id, time) when ``grouped``, LEFT shuffled
    unless ``left_sorted``: (LEFT, RIGHT)."""
    rng = np.random.default_rng(7)
    n = 2 * ENTITIES
    right = pa.table(
        {
            "t": np.arange(n, dtype=np.int64),
            "g": rng.permutation(np.tile(np.arange(ENTITIES, dtype=np.int64), 2)),
            "v": rng.random(n),
        }
    )
    left = pa.table(
        {"t": np.sort(rng.integers(0, n, 2_000)), "g": rng.integers(0, ENTITIES, 2_000)}
    )
    if grouped:
        right, left = (t.sort_by([("g", "ascending"), ("t", "ascending")]) for t in (right, left))
    if not left_sorted:
        left = left.take(rng.permutation(left.num_rows))
    pq.write_table(right, folder / "r.parquet", row_group_size=100_000)
    pq.write_table(left, folder / "l.parquet")
    return left, right


@pytest.mark.parametrize("left_sorted", [True, False], ids=["streamed", "regrouped"])
@pytest.mark.parametrize("strategy", ["backward", "forward"])
def test_too_many_groups_to_stream_spill_under_auto_and_exit_2_under_stream(
    tmp_path, capsys, strategy, left_sorted
):
    """A tape of 300K entities: a window hands on a row of each group seen so far (backward)
    or of each group after it (forward), more than a quarter of the 20 MiB that
    --memory-limit 420MiB leaves, whether LEFT streams along or is regrouped. auto starts
    again without streaming (RIGHT spills); stream exits 2 and writes nothing."""
    left, right = _entities_day(tmp_path, left_sorted=left_sorted)
    says = "hands on a row or more of each of its groups from window to window: "
    stderr = _spills_under_auto_exits_2_under_stream(tmp_path, capsys, left, right, strategy, says)
    assert ("LEFT's keys put in that order" in stderr) == (not left_sorted)


def _spills_under_auto_exits_2_under_stream(tmp_path, capsys, left, right, strategy, says):
    """``asofgpu enrich`` of ``left`` and ``right`` (written in ``tmp_path``) under
    --memory-limit 420MiB, whose stream must stop saying ``says``: under auto it starts
    again and spills, with join_asof's answers; under --right-mode stream it exits 2 and
    writes nothing. The auto run's log."""
    flags = ["--strategy", strategy, "--memory-limit", "420MiB"]
    code, _, stderr = enrich_in(tmp_path, *flags, capsys=capsys)
    assert code == 0, stderr
    assert f"streaming RIGHT {says}" in stderr
    assert "more than the 5.0 MiB they may take" in stderr
    assert "starting again without streaming" in stderr
    assert "spilling both sides" in stderr
    expected = ag.join_asof(left, right, on="t", by="g", strategy=strategy, device="cpu")
    assert pq.read_table(tmp_path / "o.parquet").equals(expected)

    flags += ["--right-mode", "stream", "-q"]
    code, stdout, errors = enrich_in(tmp_path, *flags, capsys=capsys, out="stream.parquet")
    assert code == 2 and stdout == "" and errors.count("\n") == 1, errors
    assert errors.startswith(f"asofgpu enrich: error: --right-mode stream: streaming RIGHT {says}")
    assert errors.endswith(
        "more than the 5.0 MiB they may take (a quarter of what --memory-limit leaves); raise "
        "--memory-limit, or pass --right-mode auto to hold RIGHT in memory or spill it\n"
    )
    assert not (tmp_path / "stream.parquet").exists() and hidden(tmp_path) == []
    return stderr


def test_a_state_table_of_too_many_entities_at_one_key_spills_under_auto(tmp_path, capsys):
    """A daily state table: 300K entities with two rows each at RIGHT's last key. The window
    of that key keeps each group's first and last row, 600K rows, more than a quarter of the
    20 MiB that --memory-limit 420MiB leaves. That is found while the run is read, not after
    it is held: auto starts again without streaming (RIGHT spills), stream exits 2 and writes
    nothing (before, the run was held whole, as it was the last window and handed nothing on)."""
    rng = np.random.default_rng(11)
    ids = np.arange(ENTITIES, dtype=np.int64)
    right = pa.table(
        {
            "t": np.concatenate([np.arange(100, dtype=np.int64), np.full(2 * ENTITIES, 100)]),
            "g": np.concatenate([rng.integers(0, ENTITIES, 100), np.repeat(ids, 2)]),
            "v": rng.random(100 + 2 * ENTITIES),
        }
    )
    left = pa.table(
        {"t": np.sort(rng.integers(0, 110, 2_000)), "g": rng.integers(0, ENTITIES, 2_000)}
    )
    pq.write_table(right, tmp_path / "r.parquet", row_group_size=100_000)
    pq.write_table(left, tmp_path / "l.parquet")
    says = "holds the first and last row of each group at one key (a state table's day): "
    _spills_under_auto_exits_2_under_stream(tmp_path, capsys, left, right, "backward", says)


def test_carries_keep_what_the_left_rows_to_come_can_match():
    """Carry in (for LEFT rows at or after ``start``): nothing for a forward join, a
    tolerance's reach back from ``start``, in a grouped stream ``start``'s group. Carry out
    (for LEFT rows below ``start``, whole numbers): a tolerance's reach from the last of
    them, ``start - 1``; in a grouped stream ``start``'s group."""
    from asofgpu.enrich._stream import Order, Reach, Start, carry_in_for, carry_out_for

    tape, grouped = Order("RIGHT", "r", "t"), Order("RIGHT", "r", "t", ["g"])
    before = pa.table({"t": [0, 5, 9, 10], "g": ["a", "b", "b", "c"]})
    after = pa.table({"t": [15, 19, 20, 21], "g": ["c", "c", "d", "d"]})
    start = Start((), 15)
    assert carry_in_for(before, tape, start, Reach(True, 5))["t"].to_pylist() == [10]
    assert carry_in_for(before, tape, start, Reach(True, None)).equals(before)
    assert carry_in_for(before, tape, start, Reach(False, None)).num_rows == 0
    assert carry_out_for(after, tape, start, Reach(True, 5))["t"].to_pylist() == [15, 19]
    assert carry_out_for(after, tape, start, Reach(True, None)).equals(after)
    start = Start((pa.scalar("c", pa.large_string()),), 12)
    assert carry_in_for(before, grouped, start, Reach(True, None))["t"].to_pylist() == [10]
    assert carry_out_for(after, grouped, start, Reach(True, None))["t"].to_pylist() == [15, 19]


@pytest.mark.parametrize("layout", ["tape", "grouped"])
@pytest.mark.parametrize("strategy", ["backward", "forward", "nearest"])
@pytest.mark.parametrize("exact", [True, False])
def test_the_carries_are_trimmed_to_the_exact_reach(tmp_path, capsys, strategy, exact, layout):
    """Small whole-number keys with many repeats, a tolerance of 3 and windows of a few
    dozen rows: matches at exactly the tolerance across a window's edge are common, and so
    (grouped) are LEFT keys equal to a window's first, whose match without exact matches is
    the carry in of its group; a carry trimmed one step too far changes answers."""
    rng = np.random.default_rng(17)
    right = pa.table(
        {
            "t": np.sort(rng.integers(0, 2_000, 5_000)),
            "g": rng.integers(0, 30, 5_000),
            "v": np.arange(5_000, dtype=float),
        }
    )
    left = pa.table({"t": np.sort(rng.integers(-5, 2_005, 2_000)), "g": rng.integers(0, 31, 2_000)})
    if layout == "grouped":
        right, left = (t.sort_by([("g", "ascending"), ("t", "ascending")]) for t in (right, left))
    pq.write_table(right, tmp_path / "r.parquet", row_group_size=500)
    pq.write_table(left, tmp_path / "l.parquet", row_group_size=500)
    flags = ["--right-mode", "stream", "--chunk-rows", 40, "--tolerance", "3"]
    flags += ["--strategy", strategy, *([] if exact else ["--no-exact-matches"])]
    code, _, stderr = enrich_in(tmp_path, *flags, capsys=capsys)
    assert code == 0, stderr
    assert "in windows of up to 40 rows" in stderr and ("'g', 't'" in stderr) == (
        layout == "grouped"
    )
    expected = ag.join_asof(
        left,
        right,
        on="t",
        by="g",
        strategy=strategy,
        tolerance=3,
        allow_exact_matches=exact,
        device="cpu",
    )
    assert pq.read_table(tmp_path / "o.parquet").equals(expected)


@pytest.mark.parametrize("layout", ["grouped", "tape-with-tolerance"])
@pytest.mark.parametrize("strategy", ["backward", "forward", "nearest"])
def test_many_groups_stream_when_the_carries_need_only_a_few(tmp_path, capsys, strategy, layout):
    """The day of the test above (300K entities, 420MiB) streams when the carries need only
    the rows LEFT can still reach: sorted by (id, t), the current entity's; on a tape with a
    tolerance of 1,000 keys, the entities seen within it."""
    left, right = _entities_day(tmp_path, grouped=layout == "grouped")
    flags = ["--strategy", strategy, "--memory-limit", "420MiB", "--right-mode", "stream"]
    options = {}
    if layout != "grouped":
        flags, options = [*flags, "--tolerance", "1000"], {"tolerance": 1_000}
    code, _, stderr = enrich_in(tmp_path, *flags, capsys=capsys)
    assert code == 0, stderr
    expected = ag.join_asof(left, right, on="t", by="g", strategy=strategy, device="cpu", **options)
    assert pq.read_table(tmp_path / "o.parquet").equals(expected)


@pytest.mark.parametrize("mode", ["auto", "stream"])
@pytest.mark.parametrize(
    ("t", "sym"),
    [
        ([1, 2, 2, 2, 2, 2], [1, None, None, None, None, None]),  # the last key's rows
        ([1, 2, 2, 2, 2, 2, 3, 4], [1, None, None, None, None, None, 1, 2]),  # a middle key's
    ],
)
def test_a_long_run_of_one_key_whose_by_values_are_all_null(tmp_path, capsys, mode, t, sym):
    """A run longer than two row groups keeps each group's first and last row; rows with a
    null by value never match, so such a run keeps none: a window of no rows, not a crash."""
    right = pa.table({"t": t, "sym": sym, "val": np.arange(len(t))})
    left = pa.table({"t": [0, 2, 2, 3, 5], "sym": [1, 1, 2, 1, 2]})
    pq.write_table(right, tmp_path / "r.parquet", row_group_size=2)
    pq.write_table(left, tmp_path / "l.parquet")
    out = tmp_path / "o.parquet"
    code, _, stderr = enrich_in(tmp_path, "--right-mode", mode, by="sym", capsys=capsys)
    assert code == 0, stderr
    assert "streaming RIGHT" in stderr
    assert pq.read_table(out).equals(ag.join_asof(left, right, on="t", by="sym", device="cpu"))
    assert hidden(tmp_path) == []


def test_right_row_groups_are_windowed_together_up_to_the_window_rows():
    """A RIGHT read a row group at a time is streamed in windows of up to the window's rows,
    not one window a row group (400 windows of 10,000 rows, each prepared and joined on its
    own, took 2.5x polars' time); a batch narrowed to the keys narrows those held with it."""
    from asofgpu.enrich._stream import tables_of

    def batch(start, n, columns=("t", "v")):
        data = {"t": np.arange(start, start + n), "v": np.arange(start, start + n) * 0.5}
        return pa.record_batch({c: data[c] for c in columns})

    batches = [batch(0, 3), batch(3, 3), batch(6, 3), batch(9, 2, ("t",)), batch(11, 4, ("t",))]
    runs = list(tables_of(iter(batches), rows=7))
    assert [r.num_rows for r in runs] == [6, 5, 4]
    assert [r.column_names for r in runs] == [["t", "v"], ["t"], ["t"]]
    assert pa.concat_tables([r.select(["t"]) for r in runs])["t"].to_pylist() == list(range(15))
    assert [r.num_rows for r in tables_of(iter([batch(0, 9), batch(9, 1)]), rows=7)] == [9, 1]


def test_a_window_of_small_chunks_is_copied_into_one_and_one_of_large_chunks_is_not(
    monkeypatch,
):
    """A window put together of chunks averaging fewer than ``SMALL_CHUNK_ROWS`` rows (a
    file a symbol) is one chunk, copied on the reading thread, its dictionaries unified;
    one of larger chunks (row groups) keeps them, nothing copied."""
    from asofgpu.enrich import _stream

    monkeypatch.setattr(_stream, "SMALL_CHUNK_ROWS", 4)

    def batch(start, n, words):
        return pa.record_batch(
            {"t": np.arange(start, start + n), "s": pa.array(words).dictionary_encode()}
        )

    small = [batch(3 * i, 3, ["x", "y", f"w{i}"]) for i in range(4)]
    (window,) = _stream.tables_of(iter(small), rows=12)
    assert [window[c].num_chunks for c in ("t", "s")] == [1, 1]
    assert window["t"].to_pylist() == list(range(12))
    assert window["s"].to_pylist() == [w for i in range(4) for w in ("x", "y", f"w{i}")]
    large = [batch(5 * i, 5, ["x"] * 5) for i in range(2)]
    (window,) = _stream.tables_of(iter(large), rows=12)
    assert [window[c].num_chunks for c in ("t", "s")] == [2, 2]


class _Text(pa.ExtensionType):
    """An extension type whose storage is text (as JSON and WKT geometries are)."""

    def __init__(self):
        super().__init__(pa.string(), "asofgpu.test.text")

    def __arrow_ext_serialize__(self):
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type, serialized):
        return cls()


def test_a_window_of_small_chunks_keeps_its_nested_columns_in_their_chunks(monkeypatch):
    """Lists and structs of text, and extension types (text stored as such), are not copied
    into one chunk with the window's other columns: Arrow does not split their text's
    offsets past 2 GiB into chunks again, and a window of per-symbol files holding 2.4 GB of
    it failed to combine."""
    from asofgpu.enrich import _stream

    monkeypatch.setattr(_stream, "SMALL_CHUNK_ROWS", 4)

    def batch(start):
        words = pa.array([f"w{start + i}" for i in range(3)])
        quote = pa.StructArray.from_arrays([words], ["text"])
        return pa.record_batch(
            {
                "t": np.arange(start, start + 3),
                "notes": pa.ListArray.from_arrays(pa.array([0, 1, 2, 3], pa.int32()), words),
                "quote": quote,
                "tagged": pa.ExtensionArray.from_storage(_Text(), words),
                "word": words,
            }
        )

    (window,) = _stream.tables_of(iter([batch(3 * i) for i in range(4)]), rows=12)
    assert [window[c].num_chunks for c in window.column_names] == [1, 4, 4, 4, 1]
    assert window["t"].to_pylist() == list(range(12))
    assert window["notes"].to_pylist() == [[f"w{i}"] for i in range(12)]
    assert window.schema == batch(0).schema


@pytest.mark.parametrize("seed", range(4))
def test_group_ids_number_rows_alike_exactly_when_their_by_values_are(seed):
    """A carry's groups, over one to three by columns of text, integers and dictionaries in
    chunks, nulls among them: against the rows' tuples of Python values."""
    from asofgpu.enrich._stream import group_ids

    rng = np.random.default_rng(seed)
    n = 2_000

    def column(kind: int) -> pa.ChunkedArray:
        mask = rng.random(n) < 0.1
        if kind == 0:
            array = pa.array(rng.integers(0, 7, n), mask=mask)
        else:
            array = pa.array(rng.choice(["x", "y", "zz", ""], n), mask=mask)
            array = array.dictionary_encode() if kind == 2 else array
        cuts = [0, *sorted(rng.integers(0, n, 3)), n]
        return pa.chunked_array([array[a:b] for a, b in zip(cuts, cuts[1:])], array.type)

    for width in (1, 2, 3):
        table = pa.table({f"b{k}": column(int(rng.integers(0, 3))) for k in range(width)})
        ids = group_ids(table, table.column_names)
        rows = list(zip(*(table.column(name).to_pylist() for name in table.column_names)))
        for row, number in zip(rows, ids):
            assert (number == -1) == (None in row)
        numbered = {row: number for row, number in zip(rows, ids) if None not in row}
        assert sorted(numbered.values()) == sorted(set(numbered.values()))  # one per tuple
        assert all(numbered[row] == number for row, number in zip(rows, ids) if None not in row)


def test_group_ids_of_dictionaries_keep_their_nulls_whatever_their_index_type():
    """Unsigned indices (uint8: 255 for -1) and chunks of different dictionaries: a null by
    value is in no group, not in the group of the dictionary's 256th value."""
    from asofgpu.enrich._stream import group_ids

    values = pa.array([f"v{i}" for i in range(256)])
    indices = pa.array([255, None, 0, 255], pa.uint8())
    first = pa.DictionaryArray.from_arrays(indices, values)
    second = pa.DictionaryArray.from_arrays(pa.array([0, None], pa.uint8()), pa.array(["v255"]))
    table = pa.table({"s": pa.chunked_array([first, second]), "n": [1, 1, 1, 1, 1, 1]})
    for by in (["s"], ["s", "n"]):
        ids = group_ids(table, by).tolist()
        assert [i == -1 for i in ids] == [False, True, False, False, False, True]
        assert ids[0] == ids[3] == ids[4] != ids[2]  # v255 in both dictionaries: one group
        # one chunk: its uint8 indices as they are (two chunks widen in the unification)
        one = group_ids(table.slice(0, 4).combine_chunks(), by).tolist()
        assert one[1] == -1 and one[0] == one[3] != one[2] and one[0] != -1


def test_sorted_samples_of_unsigned_keys_stay_exact():
    """uint64 keys past 2**53 among int64 nothing: float64 made 2**63 + 1 and + 3 equal."""
    from asofgpu.enrich._stream import sorted_sample

    keys = pa.array([2**63 + 3, 2**63 + 1], pa.uint64())
    sample = sorted_sample([pa.record_batch({"t": keys})], "t", 1)
    assert sample.dtype == np.uint64 and sample.tolist() == [2**63 + 1, 2**63 + 3]
    assert sorted_sample([], "t", 1).tolist() == []


def test_a_right_of_many_small_files_is_handed_over_in_tables_of_a_chunk(
    tmp_path, capsys, monkeypatch
):
    """RIGHT's reader puts the files' batches together into tables of up to a chunk's rows
    before they cross to the join's thread: handed over a file at a time, 5,000 files of
    400 rows kept the join waiting on the queue 0.9 s of 2.1."""
    from asofgpu.enrich import _job

    quotes, trades = marketdata.day(n_quotes=1_000, n_trades=400, n_symbols=5, seed=3)
    folder = tmp_path / "quotes"
    folder.mkdir()
    for i in range(40):
        pq.write_table(quotes.slice(25 * i, 25), folder / f"part{i:02d}.parquet")
    pq.write_table(trades, tmp_path / "trades.parquet")
    handed: list[list[int]] = []
    depths: list[int] = []

    class Counted(_job.Prefetch):
        def __init__(self, iterator, depth=_job.Prefetch.DEPTH):
            depths.append(depth)
            super().__init__(iterator, depth)

        def __iter__(self):
            rows = []
            handed.append(rows)
            for item in super().__iter__():
                if isinstance(item, pa.Table):
                    rows.append(item.num_rows)
                yield item

    monkeypatch.setattr(_job, "Prefetch", Counted)
    out = tmp_path / "out.parquet"
    code, _, stderr = run(
        "enrich", tmp_path / "trades.parquet", folder, "-o", out, "--on", "time",
        "--by", "symbol", "--device", "cpu", "--right-mode", "stream", "--chunk-rows", 300,
        capsys=capsys,
    )  # fmt: skip
    assert code == 0, stderr
    expected = ag.join_asof(trades, quotes, on="time", by="symbol", device="cpu")
    assert pq.read_table(out).equals(expected)
    right = [rows for rows in handed if rows]
    assert right == [[300, 300, 300, 100]]
    # RIGHT's reader holds the next batch while it hands a table over: one table waits in
    # the queue, not two (two held 30-90 MB more of the bench's day); LEFT's, two chunks.
    assert depths == [1, 2]


def test_a_prefetch_runs_its_depth_ahead_and_one_more_waiting_to_be_put():
    """What a prefetch holds: ``depth`` items in its queue, and one more its thread waits
    to put."""
    import time

    from asofgpu.enrich._prefetch import Prefetch

    for depth in (1, 2):
        made = []

        def items():
            for i in range(10):
                made.append(i)
                yield i

        with Prefetch(items(), depth) as ahead:
            deadline = time.monotonic() + 10
            while len(made) < depth + 1 and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.2)  # (time to run further, were it to)
            assert len(made) == depth + 1
            assert list(ahead) == list(range(10))


def test_small_row_groups_are_read_by_one_reader_a_file_in_runs_up_to_a_chunk(monkeypatch):
    """A reader a row group, and a batch each, took 140 µs a row group (1.4 s over 10,000
    row groups of 100 rows): a file's small row groups now come a run at a time, read
    together up to a chunk's rows by a reader of their own and handed over as one batch,
    their columns narrowed from the run after."""
    import tempfile
    from pathlib import Path

    from asofgpu.enrich._sources import Source
    from asofgpu.enrich._spill import Narrowing, source_batches

    table = pa.table({"t": np.arange(1_000), "g": np.arange(1_000) % 7, "v": np.ones(1_000)})
    readers, runs = [], []
    real_init, real_read = pq.ParquetFile.__init__, pq.ParquetFile.read_row_groups

    def init(self, *args, **kwargs):
        readers.append(args[0])
        real_init(self, *args, **kwargs)

    def read_row_groups(self, groups, *args, **kwargs):
        runs.append(len(groups))
        return real_read(self, groups, *args, **kwargs)

    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        for i, part in enumerate(("a", "b")):
            pq.write_table(table.slice(500 * i, 500), folder / f"{part}.parquet", row_group_size=10)
        source = Source.find(folder, "RIGHT")
        monkeypatch.setattr(pq.ParquetFile, "__init__", init)
        monkeypatch.setattr(pq.ParquetFile, "read_row_groups", read_row_groups)
        batches = list(source_batches(source, ["t", "g", "v"], [], 100))
        assert len(readers) == 10 and runs == [10] * 10 and len(batches) == 10
        assert pa.Table.from_batches(batches).equals(table)

        narrowing = Narrowing(["t"])
        read = source_batches(source, ["t", "g", "v"], [], 100, narrowing=narrowing)
        first = next(read)
        narrowing.set()
        rest = list(read)
        assert first.num_columns == 3 and {b.num_columns for b in rest} == {1}
        assert pa.Table.from_batches(rest).column(0).equals(table["t"].slice(first.num_rows))


@pytest.mark.parametrize("mode", ["stream", "spill", "memory"])
def test_a_dictionary_nested_in_small_row_groups_is_read_in_runs(tmp_path, capsys, mode):
    """pyarrow reads a dictionary inside a list or struct of several row groups only a row
    group at a time ("Nested data conversions not implemented for chunked array outputs"):
    a run of small row groups holding one falls back to that (a review found the stream and
    the spill refusing such a RIGHT)."""
    n = 200
    tags = pa.array(
        [["a", "b"] if i % 2 else ["c"] for i in range(n)],
        pa.list_(pa.dictionary(pa.int32(), pa.string())),
    )
    right = pa.table({"t": np.arange(n) * 2, "g": np.arange(n) % 3, "tags": tags})
    left = pa.table({"t": np.arange(n) * 2 + 1, "g": np.arange(n) % 3})
    pq.write_table(right, tmp_path / "r.parquet", row_group_size=10)
    pq.write_table(left, tmp_path / "l.parquet")
    code, _, stderr = enrich_in(tmp_path, "--right-mode", mode, capsys=capsys)
    assert code == 0, stderr
    expected = ag.join_asof(left, right, on="t", by="g", device="cpu")
    got = pq.read_table(tmp_path / "o.parquet")
    assert got.column("tags").to_pylist() == expected.column("tags").to_pylist()
    assert got.column("t").equals(expected.column("t"))


def _numbered_files(folder, table: pa.Table, n_files: int):
    """``table`` cut into ``n_files`` files in its order, named as pyarrow's
    ``write_dataset`` names them: part-10 sorts before part-2."""
    folder.mkdir()
    step = -(-table.num_rows // n_files)
    for i in range(n_files):
        pq.write_table(table.slice(i * step, step), folder / f"part-{i}.parquet")
    return folder


def _files_of(keys_by_name: dict, folder, **write):
    """A RIGHT source of a file a name in ``keys_by_name``, each of those int64 keys ``t``."""
    from asofgpu.enrich._sources import Source

    folder.mkdir()
    for name, keys in keys_by_name.items():
        (folder / name).parent.mkdir(exist_ok=True)
        pq.write_table(pa.table({"t": pa.array(keys, pa.int64())}), folder / name, **write)
    return Source.find(folder, "RIGHT")


@pytest.mark.parametrize(
    ("files", "order"),
    [
        # part-10 sorts before part-2 by path; by key it comes last
        ({f"part-{i}.parquet": [10 * i, 10 * i + 5] for i in range(12)}, list(range(12))),
        # hive folders of hours: hour=10 sorts before hour=9
        ({f"hour={i}/data.parquet": [10 * i, 10 * i + 5] for i in range(12)}, list(range(12))),
        # a file that ends on the key the next begins with, first by path too
        ({"p1.parquet": [0, 10], "p2.parquet": [10, 20], "p10.parquet": [21, 30]}, [1, 2, 10]),
        # a file of no keys goes first
        (
            {
                "p1.parquet": [0, 10],
                "p2.parquet": [11, 20],
                "p10.parquet": [21, 30],
                "p3.parquet": [],
            },
            [3, 1, 2, 10],
        ),
    ],
)
def test_files_whose_paths_sort_out_of_key_order_are_taken_in_key_order(tmp_path, files, order):
    """``files_in_key_order``: files whose statistics show a tape once in key order."""
    from asofgpu.enrich._file_order import files_in_key_order, is_tape

    source = _files_of(files, tmp_path / "f")
    assert not is_tape(source, "t")
    ordered, tie = files_in_key_order(source, "t")
    assert tie == ""
    assert is_tape(ordered, "t")
    assert [int(re.sub(r"\D", "", p.relative)) for p in ordered.parts] == order
    assert ordered.rows == source.rows and ordered.schema == source.schema


@pytest.mark.parametrize(
    ("files", "tie"),
    [
        # in order already: zero-padded names (Spark's, polars')
        ({f"part-{i:05}.parquet": [10 * i, 10 * i + 5] for i in range(12)}, ""),
        # overlapping keys: no tape in any order
        ({"p1.parquet": [0, 10], "p2.parquet": [5, 20], "p10.parquet": [30, 40]}, ""),
        # by key p2 comes before p10 and ends on the key p10 begins with, whose rows come
        # first by path: taking p2 first would change which of the tied rows a join takes
        (
            {"p1.parquet": [0, 5], "p10.parquet": [20, 25], "p2.parquet": [10, 20]},
            "p2.parquet ends on the key p10.parquet begins with (20), and by path "
            "p10.parquet comes first",
        ),
    ],
)
def test_files_in_key_order_already_or_in_none_keep_their_paths_order(tmp_path, files, tie):
    from asofgpu.enrich._file_order import files_in_key_order

    source = _files_of(files, tmp_path / "f")
    ordered, blocked = files_in_key_order(source, "t")
    assert ordered is source and blocked == tie
    if tie:  # LEFT's rows are matched each on its own: its ties go either way
        ordered, blocked = files_in_key_order(source, "t", ties_by_path=False)
        assert [p.relative for p in ordered.parts] == ["p1.parquet", "p2.parquet", "p10.parquet"]
        assert blocked == ""


def test_files_spanning_one_another_are_told_by_their_ends_alone(tmp_path, monkeypatch):
    """Files whose keys overlap (a day partitioned by symbol: each file spans the day) are
    no tape in any order, which each file's first and last row group show: the walk of
    every row group's statistics (0.8 s for write_dataset's 300,000) is not made."""
    from asofgpu.enrich import _file_order

    files = {f"s{i}.parquet": list(range(0, 40, 4)) for i in range(3)}
    source = _files_of(files, tmp_path / "f", row_group_size=2)

    def walked(*args):
        raise AssertionError("every row group's statistics walked")

    monkeypatch.setattr(_file_order, "_key_span", walked)
    assert _file_order.files_in_key_order(source, "t") == (source, "")


def test_row_groups_of_no_keys_at_a_files_ends_are_passed_over_by_its_ends(tmp_path, monkeypatch):
    """The ends of a file are its first and last row groups that hold keys: row groups of
    nulls alone around them (no statistics) do not stop the overlap being told from them."""
    from asofgpu.enrich import _file_order
    from asofgpu.enrich._sources import Source

    folder = tmp_path / "f"
    folder.mkdir()
    for i in range(3):
        keys = [None, None, *range(0, 40, 4), None, None]
        t = pa.table({"t": pa.array(keys, pa.int64())})
        pq.write_table(t, folder / f"s{i}.parquet", row_group_size=2)

    def walked(*args):
        raise AssertionError("every row group's statistics walked")

    monkeypatch.setattr(_file_order, "_key_span", walked)
    source = Source.find(folder, "RIGHT")
    assert _file_order.files_in_key_order(source, "t") == (source, "")


def test_a_file_of_one_key_goes_before_one_that_begins_with_it(tmp_path):
    """Files by first key, then last: b (20 only) before c (20 to 30), whatever their
    paths' order, where ties may go either way (LEFT)."""
    from asofgpu.enrich._file_order import files_in_key_order

    files = {"a.parquet": [20, 25, 30], "b.parquet": [20, 20], "c.parquet": [0, 10, 20]}
    source = _files_of(files, tmp_path / "f")
    ordered, _ = files_in_key_order(source, "t", ties_by_path=False)
    assert [p.relative for p in ordered.parts] == ["c.parquet", "b.parquet", "a.parquet"]


def test_files_without_statistics_or_of_float_keys_keep_their_paths_order(tmp_path):
    from asofgpu.enrich._sources import Source
    from asofgpu.enrich._file_order import files_in_key_order

    files = {"p1.parquet": [0, 10], "p2.parquet": [11, 20], "p10.parquet": [21, 30]}
    unknown = _files_of(files, tmp_path / "a", write_statistics=False)
    assert files_in_key_order(unknown, "t")[0] is unknown
    (tmp_path / "b").mkdir()
    for name, keys in files.items():
        pq.write_table(pa.table({"t": pa.array(keys, pa.float64())}), tmp_path / "b" / name)
    floats = Source.find(tmp_path / "b", "RIGHT")
    assert files_in_key_order(floats, "t")[0] is floats


def test_a_tie_across_files_keeps_the_row_their_paths_order_gives(tmp_path, capsys):
    """p2 (by key before p10) ends on the key p10 begins with; by path p10's row of it
    comes first, so the last of the tied rows, a backward match's, is p2's."""
    folder = tmp_path / "r"
    folder.mkdir()
    for name, keys, values in (
        ("p1", [0, 5], [1, 2]),
        ("p10", [20, 25], [10, 11]),
        ("p2", [10, 20], [20, 21]),
    ):
        pq.write_table(pa.table({"t": keys, "v": values}), folder / f"{name}.parquet")
    pq.write_table(pa.table({"t": [20, 30]}), tmp_path / "l.parquet")
    for mode in ("auto", "memory"):
        out = tmp_path / f"{mode}.parquet"
        code, _, stderr = run(
            "enrich", tmp_path / "l.parquet", folder, "-o", out, "--on", "t", "--device", "cpu",
            "--right-mode", mode, "-q", capsys=capsys,
        )  # fmt: skip
        assert code == 0, stderr
        assert pq.read_table(out)["v"].to_pylist() == [21, 11], mode


def test_right_files_tied_against_their_paths_order_are_refused_by_a_stream_naming_them(
    tmp_path, capsys
):
    """A tie the paths' order would break keeps RIGHT's files by path, so no stream: the
    refusal names the two files and the key, and says what would stream."""
    folder = tmp_path / "r"
    folder.mkdir()
    for name, keys in (("p1", [0, 5]), ("p10", [20, 25]), ("p2", [10, 20])):
        pq.write_table(pa.table({"t": keys, "v": keys}), folder / f"{name}.parquet")
    pq.write_table(pa.table({"t": [20, 30]}), tmp_path / "l.parquet")
    code, _, stderr = run(
        "enrich", tmp_path / "l.parquet", folder, "-o", tmp_path / "o.parquet", "--on", "t",
        "--device", "cpu", "--right-mode", "stream", "-q", capsys=capsys,
    )  # fmt: skip
    assert code == 2
    assert stderr == (
        f"asofgpu enrich: error: --right-mode stream: RIGHT {folder} is not sorted by 't', as "
        f"far as its row-group statistics and first row group show; its files would be, taken "
        f"in their keys' order, but p2.parquet ends on the key p10.parquet begins with (20), "
        f"and by path p10.parquet comes first, and rows of equal keys are in the order of their "
        f"files' paths: name the files so that their paths sort as their keys do (part-09 "
        f"before part-10)\n"
    )


def test_files_of_one_group_out_of_key_order_by_path_are_not_taken_as_grouped(tmp_path, capsys):
    """One symbol in numbered files, part-10 before part-2 by path: the by column's
    statistics never go back, so the files were taken as sorted by (symbol, t), and the
    stream stopped at part-2, "though the bounds of its row groups are in order". A row group of
    one group alone must not begin below the last one's end in that group: the refusal
    now names the tie that keeps the files in their paths' order."""
    folder = tmp_path / "r"
    folder.mkdir()
    for name, keys in (("p1", [0, 5]), ("p10", [20, 25]), ("p2", [10, 20])):
        table = pa.table({"t": keys, "symbol": ["A", "A"], "v": keys})
        pq.write_table(table, folder / f"{name}.parquet")
    pq.write_table(pa.table({"t": [20, 30], "symbol": ["A", "A"]}), tmp_path / "l.parquet")
    code, _, stderr = run(
        "enrich", tmp_path / "l.parquet", folder, "-o", tmp_path / "o.parquet", "--on", "t",
        "--by", "symbol", "--device", "cpu", "--right-mode", "stream", "-q", capsys=capsys,
    )  # fmt: skip
    assert code == 2
    assert "but p2.parquet ends on the key p10.parquet begins with (20)" in stderr, stderr
    for mode in ("auto", "memory"):
        out = tmp_path / f"{mode}.parquet"
        code, _, stderr = run(
            "enrich", tmp_path / "l.parquet", folder, "-o", out, "--on", "t", "--by", "symbol",
            "--device", "cpu", "--right-mode", mode, "-q", capsys=capsys,
        )  # fmt: skip
        assert (code, stderr) == (0, "")
        assert pq.read_table(out)["v"].to_pylist() == [20, 25], mode


def test_a_group_in_row_groups_of_its_own_is_grouped_where_its_keys_go_on(tmp_path):
    """The check above refuses no layout in order: a group whose row groups follow each
    other, keys equal across their edge, and row groups of several groups, are grouped."""
    from asofgpu.enrich._sources import Source
    from asofgpu.enrich._file_order import grouped_order

    table = pa.table({"s": ["A"] * 4 + ["B"] * 4, "t": [1, 2, 2, 3, 0, 1, 5, 6]})
    path = tmp_path / "one.parquet"
    pq.write_table(table, path, row_group_size=2)  # A 1 2 | A 2 3 | B 0 1 | B 5 6
    assert grouped_order(Source.find(path, "RIGHT"), ["s"], "t")[0] is not None
    pq.write_table(table, path, row_group_size=3)  # A 1 2 2 | A 3 B 0 1 | B 5 6
    assert grouped_order(Source.find(path, "RIGHT"), ["s"], "t")[0] is not None
    pq.write_table(table.take([2, 3, 0, 1, 4, 5, 6, 7]), path, row_group_size=2)
    assert grouped_order(Source.find(path, "RIGHT"), ["s"], "t")[0] is None  # A 2 3 | A 1 2 | ...


def test_what_keeps_files_from_a_grouped_stream_is_said_and_where(tmp_path, capsys):
    """``grouped_order`` names the first fact that keeps a side from a grouped stream,
    and the file and row group where it lies; a RIGHT refused says it too."""
    from asofgpu.enrich._file_order import grouped_order
    from asofgpu.enrich._sources import Source

    def why(table, by=("s",), row_group_size=2, **options):
        path = tmp_path / "r.parquet"
        pq.write_table(table, path, row_group_size=row_group_size, **options)
        source, reason = grouped_order(Source.find(path, "RIGHT"), list(by), "t")
        assert (source is None) == bool(reason) or not by
        return reason.replace(str(path), "r")

    s, t = ["A", "A", "B", "B"], [1, 2, 3, 4]
    assert why(pa.table({"s": s, "t": t})) == ""
    assert why(pa.table({"s": s, "t": t}), by=()) == ""  # (no by columns: nothing to say)
    assert why(pa.table({"s": ["B", "B", "A", "A"], "t": t})) == (
        "'s' goes back from 'B' to 'A' at r, row group 1"
    )
    assert why(pa.table({"s": ["A", "A", None, "B"], "t": t})) == (
        "'s' holds nulls, which sort where a writer puts them (r, row group 1)"
    )
    assert why(pa.table({"s": s, "t": [1, 2, 3, 4]}), write_statistics=["t"]) == (
        "its footers do not say whether 's' holds nulls (r, row group 0)"
    )
    assert why(pa.table({"s": pa.nulls(4), "t": t})) == "'s' holds only nulls (r, row group 0)"
    long = ["x" * 5000] * 4  # (pyarrow writes no min/max of values so long)
    assert why(pa.table({"s": long, "t": t})) == (
        "its footers give no min/max for 's' (r, row group 0)"
    )
    # One group alone a row group: a later one below an earlier one, by its second column
    pairs = pa.table({"s": ["A"] * 4, "x": [2, 2, 1, 1], "t": [1, 2, 3, 4]})
    assert why(pairs, by=("s", "x")) == (
        "the by values go back from 'A', 2 to 'A', 1 at r, row group 1"
    )
    days = pa.array([2, 2, 1, 1], pa.int32()).cast(pa.date32())
    assert why(pa.table({"d": days, "t": t}), by=("d",)) == (
        "'d' goes back from 1970-01-03 to 1970-01-02 at r, row group 1"
    )
    assert why(pa.table({"s": s, "t": [2, 1, 3, 4]}), row_group_size=1) == (
        "'t' goes back within 'A' from 2 to 1 at r, row group 1"
    )
    assert why(pa.table({"s": s, "t": [2, 1, 3, 4]}), row_group_size=4) == (
        "its first row group is not in order (r, row group 0)"
    )
    assert why(pa.table({"s": [1.0, 1.0, 2.0, 2.0], "t": t})) == (
        "by column 's' holds floats, whose NaN sorts where a writer puts it and has no statistics"
    )
    assert why(pa.table({"s": s, "t": t}), by=("s", "u")) == "'u' is not a column of its files"
    assert why(pa.table({"s": s, "u": t}), by=("s",)) == "'t' is not a column of its files"
    # A RIGHT refused says why, after what its statistics do not show.
    pq.write_table(pa.table({"s": ["B", "B", "A", "A"], "t": [1, 2, 1, 2]}), tmp_path / "q.parquet",
                   row_group_size=2)  # fmt: skip
    pq.write_table(pa.table({"s": ["A"], "t": [5]}), tmp_path / "l.parquet")
    code, _, stderr = run(
        "enrich", tmp_path / "l.parquet", tmp_path / "q.parquet", "-o", tmp_path / "o.parquet",
        "--on", "t", "--by", "s", "--device", "cpu", "--right-mode", "stream", "-q",
        capsys=capsys,
    )  # fmt: skip
    assert code == 2
    assert stderr.endswith(
        "row-group statistics and first row group show: 's' goes back from 'B' to 'A' at "
        f"{tmp_path / 'q.parquet'}, row group 1\n"
    ), stderr


def test_left_files_tied_against_their_paths_order_still_stream_in_key_order(tmp_path, capsys):
    """LEFT's rows are matched each on its own: a tie between two of its files in the other
    order than their paths' keeps nothing from streaming them in key order."""
    folder = tmp_path / "l"
    folder.mkdir()
    for name, keys in (("p1", [0, 5]), ("p10", [20, 25]), ("p2", [10, 20])):
        pq.write_table(pa.table({"t": keys}), folder / f"{name}.parquet")
    right = pa.table({"t": list(range(0, 30, 2)), "v": list(range(15))})
    pq.write_table(right, tmp_path / "r.parquet")
    code, _, stderr = run(
        "enrich", folder, tmp_path / "r.parquet", "-o", tmp_path / "o", "--on", "t",
        "--device", "cpu", capsys=capsys,
    )  # fmt: skip
    assert code == 0, stderr
    assert "both sides are sorted by their key: streaming RIGHT" in stderr
    for name in ("p1", "p10", "p2"):
        got = pq.read_table(tmp_path / "o" / f"{name}.parquet")
        expected = ag.join_asof(
            pq.read_table(folder / f"{name}.parquet"), right, on="t", device="cpu"
        )
        assert got.equals(expected), name


def test_files_in_a_grouped_order_by_path_stream_grouped_not_in_key_order(tmp_path, capsys):
    """A file a symbol on both sides, RIGHT's two also a tape by key in the other order:
    the sides stream grouped in their paths' order, as both allow, not RIGHT in key order
    with LEFT held apart."""
    for side in ("l", "r"):
        (tmp_path / side).mkdir()
    n = 2_000
    for name, start in (("a", 100_000), ("b", 0)):  # a's times after b's
        times = list(range(start, start + n))
        right = pa.table({"sym": [name.upper()] * n, "t": times, "v": times})
        pq.write_table(right, tmp_path / "r" / f"{name}.parquet")
        left = pa.table({"sym": [name.upper()] * n, "t": list(range(0, 200_000, 100))})
        pq.write_table(left, tmp_path / "l" / f"{name}.parquet")
    code, _, stderr = run(
        "enrich", tmp_path / "l", tmp_path / "r", "-o", tmp_path / "o", "--on", "t", "--by",
        "sym", "--device", "cpu", capsys=capsys,
    )  # fmt: skip
    assert code == 0, stderr
    assert "both sides are sorted by their by columns ('sym'), then their key: streaming" in stderr
    for name in ("a", "b"):
        got = pq.read_table(tmp_path / "o" / f"{name}.parquet")
        expected = ag.join_asof(
            pq.read_table(tmp_path / "l" / f"{name}.parquet"),
            pq.read_table(tmp_path / "r" / f"{name}.parquet"),
            on="t",
            by="sym",
            device="cpu",
        )
        assert got.equals(expected), name


@pytest.mark.parametrize(("mode", "left_keys"), [("memory", [1, 11]), ("auto", [11, 1])])
def test_right_held_in_memory_keeps_its_paths_order_and_its_dictionaries_order(
    tmp_path, capsys, mode, left_keys
):
    """Files that a stream would take in key order are read in their paths' order where
    RIGHT is held in memory (as asked, or as auto holds it beside an unsorted LEFT): the
    same rows, and OUT's dictionary of a dictionary column in the order its values were
    first read."""
    folder = tmp_path / "r"
    folder.mkdir()
    for name, keys, note in (("a", [10, 11], "late"), ("b", [0, 1], "early")):
        notes = pa.array([note, note]).dictionary_encode()
        pq.write_table(pa.table({"t": keys, "note": notes}), folder / f"{name}.parquet")
    pq.write_table(pa.table({"t": left_keys}), tmp_path / "l.parquet")
    out = tmp_path / "o.parquet"
    code, _, stderr = run(
        "enrich", tmp_path / "l.parquet", folder, "-o", out, "--on", "t", "--device", "cpu",
        "--right-mode", mode, "-q", capsys=capsys,
    )  # fmt: skip
    assert code == 0, stderr
    note = pq.read_table(out)["note"]
    assert note.to_pylist() == ["early" if t < 10 else "late" for t in left_keys]
    assert note.chunk(0).dictionary.to_pylist() == ["late", "early"]


@pytest.mark.parametrize(
    ("mode", "strategy"), [("auto", "backward"), ("stream", "backward"), ("stream", "forward")]
)
def test_a_day_in_numbered_files_streams_and_joins_as_its_files_in_path_order(
    tmp_path, capsys, mode, strategy
):
    """A day written as pyarrow's ``write_dataset`` writes it (part-0 ... part-11, on both
    sides) streams, where its paths' order (part-10 before part-2) is no tape. Keys tie
    across files: the tied rows keep RIGHT's row order, its files' paths', and OUT equals
    the join of the files read in that order."""
    quotes, trades = marketdata.day(n_quotes=3_000, n_trades=2_000, n_symbols=25, seed=7)
    quotes = coarse_times(quotes)  # runs of equal times, some across files
    right = _numbered_files(tmp_path / "quotes", quotes, 12)
    left = _numbered_files(tmp_path / "trades", trades, 11)
    out = tmp_path / "out"
    flags = ["--strategy", strategy, "--right-mode", mode]
    code, _, stderr = run(
        "enrich", left, right, "-o", out, "--on", "time", "--by", "symbol", "--device", "cpu",
        *flags, capsys=capsys,
    )  # fmt: skip
    assert code == 0, stderr
    assert "streaming RIGHT" in stderr and "(12 files, 3,000 rows, sorted by 'time')" in stderr
    in_path_order = pa.concat_tables(pq.read_table(p) for p in sorted(right.iterdir()))
    for path in sorted(left.iterdir()):
        expected = ag.join_asof(
            pq.read_table(path),
            in_path_order,
            on="time",
            by="symbol",
            strategy=strategy,
            device="cpu",
        )
        assert pq.read_table(out / path.name).equals(expected), path.name
    assert hidden(tmp_path) == []


def test_left_files_in_key_order_that_break_their_promise_start_again_by_path(tmp_path, capsys):
    """LEFT's files are a tape by their keys' statistics, but one is out of order inside a
    later row group: the stream stops there, and the run starts again with LEFT as it comes
    (regrouped against RIGHT's stream), not in key order a second time."""
    folder = tmp_path / "l"
    folder.mkdir()
    pq.write_table(pa.table({"t": list(range(0, 10))}), folder / "l1.parquet")
    pq.write_table(pa.table({"t": list(range(10, 20))}), folder / "l2.parquet")
    broken = list(range(20, 30)) + [39, *range(31, 39), 30]  # row group 2: 39 first
    pq.write_table(pa.table({"t": broken}), folder / "l10.parquet", row_group_size=10)
    right = pa.table({"t": list(range(0, 45, 3)), "v": list(range(15))})
    pq.write_table(right, tmp_path / "r.parquet")
    code, _, stderr = run(
        "enrich", folder, tmp_path / "r.parquet", "-o", tmp_path / "o", "--on", "t",
        "--device", "cpu", "--right-mode", "stream", capsys=capsys,
    )  # fmt: skip
    assert code == 0, stderr
    assert "starting again" in stderr
    for name in ("l1", "l10", "l2"):
        got = pq.read_table(tmp_path / "o" / f"{name}.parquet")
        left = pq.read_table(folder / f"{name}.parquet")
        assert got.equals(ag.join_asof(left, right, on="t", device="cpu")), name
    assert hidden(tmp_path) == []


def test_files_in_an_order_a_stream_takes_are_not_looked_at_in_key_order(
    tmp_path, capsys, monkeypatch
):
    """RIGHT a file a symbol (grouped by path), LEFT unsorted: no side's files are walked
    for a key order, which only a side in no order by path needs (5,000 files' statistics
    took 0.13 s)."""
    from asofgpu.enrich import _job

    walked = []
    real = _job.files_in_key_order
    monkeypatch.setattr(
        _job, "files_in_key_order", lambda s, *a, **k: walked.append(s.side) or real(s, *a, **k)
    )
    (tmp_path / "r").mkdir()
    for name, start in (("a", 100), ("b", 0)):
        times = list(range(start, start + 50))
        table = pa.table({"g": [name] * 50, "t": times, "v": times})
        pq.write_table(table, tmp_path / "r" / f"{name}.parquet")
    pq.write_table(pa.table({"g": ["b", "a"], "t": [120, 10]}), tmp_path / "l.parquet")
    code, _, stderr = run(
        "enrich", tmp_path / "l.parquet", tmp_path / "r", "-o", tmp_path / "o.parquet",
        "--on", "t", "--by", "g", "--device", "cpu", "-q", capsys=capsys,
    )  # fmt: skip
    assert code == 0, stderr
    assert walked == ["LEFT"]  # LEFT is one file: walked, and left as it is
    assert pq.read_table(tmp_path / "o.parquet")["v"].to_pylist() == [49, None]


def test_files_whose_first_in_key_order_is_shuffled_inside_keep_their_paths_order(tmp_path):
    """Statistics say nothing of the order inside a row group: the first in key order is
    read, as ``is_tape`` reads the first, and a shuffled one keeps the files by path."""
    from asofgpu.enrich._file_order import files_in_key_order

    files = {"p1.parquet": [5, 0, 3, 9], "p2.parquet": [10, 20], "p10.parquet": [21, 30]}
    source = _files_of(files, tmp_path / "f")
    ordered, tie = files_in_key_order(source, "t")
    assert ordered is source and tie == ""
    files["p1.parquet"] = [0, 3, 5, 9]
    ordered, _ = files_in_key_order(_files_of(files, tmp_path / "g"), "t")
    assert [p.relative for p in ordered.parts] == ["p1.parquet", "p2.parquet", "p10.parquet"]
