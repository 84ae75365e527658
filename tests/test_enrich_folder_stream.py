"""``asofgpu enrich`` streaming sides laid out as partition folders of their by columns
(``symbol=A/part-0.parquet``, as pyarrow's ``write_dataset`` and polars' partitioned writes
lay a day out): the files are taken in the order of their folders' values and streamed
grouped. The oracle is ``asofgpu.join_asof`` on the whole day, the folder's value a column."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import asofgpu as ag
from asofgpu import marketdata
from enrich_cli import coarse_times, hidden, run

pytestmark = pytest.mark.usefixtures("left_columns")  # copied and encoded, both

STREAMED = "both sides are sorted by their by columns ('symbol'), then their key: streaming"


def _write_folders(table: pa.Table, root, names: dict[str, str], files: int = 1) -> None:
    """``table``'s rows of each symbol, in time order, into ``root/symbol=NAME/`` (``names``:
    the symbol's folder name), in ``files`` files of later and later times."""
    for symbol, name in names.items():
        rows = table.filter(pc.equal(table["symbol"], symbol)).sort_by("time")
        folder = root / f"symbol={name}"
        folder.mkdir(parents=True)
        rows = rows.drop_columns(["symbol"])
        cuts = np.linspace(0, rows.num_rows, files + 1).astype(int)
        for i in range(files):
            piece = rows.slice(cuts[i], cuts[i + 1] - cuts[i])
            pq.write_table(piece, folder / f"part-{i}.parquet", row_group_size=40)


def _expected(trades: pa.Table, quotes: pa.Table, **options) -> pa.Table:
    return ag.join_asof(trades, quotes, on="time", by="symbol", device="cpu", **options)


def _out_of(folder, names: dict[str, str], files: int = 1) -> dict[str, pa.Table]:
    """OUT's rows of each symbol: its files under ``symbol=NAME/`` in turn."""
    return {
        symbol: pa.concat_tables(
            pq.read_table(folder / f"symbol={name}" / f"part-{i}.parquet") for i in range(files)
        )
        for symbol, name in names.items()
    }


# Folder names whose paths sort apart from their values: "A-1/" before "A/" ('-' is below
# '/'), and "B%2FC" is the value "B/C" escaped (after "B" and "B-2" as a value).
NAMES = {"A": "A", "A-1": "A-1", "B": "B", "B-2": "B-2", "B/C": "B%2FC", "Z": "Z"}


@pytest.fixture
def day(tmp_path):
    """A day of six symbols (runs of equal times) laid out a folder a symbol on both sides."""
    quotes, trades = marketdata.day(n_quotes=1_500, n_trades=900, n_symbols=6, seed=4)
    symbols = sorted(set(quotes["symbol"].to_pylist()))
    rename = dict(zip(symbols, NAMES))

    def renamed(table):
        named = [rename[s] for s in table["symbol"].to_pylist()]
        return table.set_column(table.schema.get_field_index("symbol"), "symbol", pa.array(named))

    return renamed(trades), renamed(coarse_times(quotes))


@pytest.mark.parametrize("chunk_rows", [7, 100, 5_000])
@pytest.mark.parametrize("strategy", ["backward", "forward", "nearest"])
@pytest.mark.parametrize("files", [1, 3])
def test_folders_of_a_symbol_stream_grouped(day, tmp_path, capsys, chunk_rows, strategy, files):
    """Both sides a folder a symbol, in one file or several of later times each: streamed
    in the folders' order (not their paths'), every strategy, windows and chunks crossing
    files and folders; each OUT file holds its LEFT file's rows enriched."""
    trades, quotes = day
    _write_folders(trades, tmp_path / "l", NAMES, files)
    _write_folders(quotes, tmp_path / "r", NAMES, files)
    code, _, stderr = run(
        "enrich", tmp_path / "l", tmp_path / "r", "-o", tmp_path / "o", "--on", "time",
        "--by", "symbol", "--device", "cpu", "--right-mode", "stream", "--chunk-rows",
        chunk_rows, "--strategy", strategy, capsys=capsys,
    )  # fmt: skip
    assert code == 0, stderr
    assert "--right-mode stream: streaming RIGHT" in stderr
    assert "sorted by ('symbol', 'time')) in windows" in stderr
    assert "LEFT's keys put in that order" not in stderr  # (both streamed)
    expected = _expected(trades, quotes, strategy=strategy)
    for symbol, out in _out_of(tmp_path / "o", NAMES, files).items():
        rows = expected.filter(pc.equal(expected["symbol"], symbol)).drop_columns(["symbol"])
        assert out.equals(rows.sort_by("time")), symbol
    assert hidden(tmp_path) == []


def test_integer_folders_stream_in_their_numbers_order(tmp_path, capsys):
    """Folders of numbers are typed int64 and taken in their numbers' order: 7 before 10 and
    100, which their paths put after. RIGHT's ties at equal keys across two files of one
    folder keep their paths' order (the last of them is the match)."""
    for side, rows in (("l", {"t": [5, 9], "x": [0, 1]}), ("r", {"t": [1, 5], "v": [1.0, 2.0]})):
        for id_ in (10, 100, 7):
            folder = tmp_path / side / f"id={id_}"
            folder.mkdir(parents=True)
            table = pa.table(rows)
            if side == "r":
                table = table.set_column(1, "v", pc.add(table["v"], float(id_)))
            pq.write_table(table, folder / "part-0.parquet")
            if side == "r":  # a second file of the folder, tied at the first's last key
                tie = pa.table({"t": [5, 8], "v": [100.0 + id_, 200.0 + id_]})
                pq.write_table(tie, folder / "part-1.parquet")
    code, _, stderr = run(
        "enrich", tmp_path / "l", tmp_path / "r", "-o", tmp_path / "o", "--on", "t",
        "--by", "id", "--device", "cpu", "--right-mode", "stream", "--chunk-rows", 1,
        capsys=capsys,
    )  # fmt: skip
    assert code == 0, stderr
    assert "sorted by ('id', 't')) in windows" in stderr
    for id_ in (7, 10, 100):
        out = pq.read_table(tmp_path / "o" / f"id={id_}" / "part-0.parquet")
        assert out["v"].to_pylist() == [100.0 + id_, 200.0 + id_], id_


def test_a_left_of_folders_streams_beside_a_right_file_sorted_by_symbol(day, tmp_path, capsys):
    """LEFT a folder a symbol, RIGHT one file sorted by (symbol, time): both streamed
    grouped, the folders' values typed as RIGHT's column."""
    trades, quotes = day
    _write_folders(trades, tmp_path / "l", NAMES)
    pq.write_table(quotes.sort_by([("symbol", "ascending"), ("time", "ascending")]),
                   tmp_path / "r.parquet", row_group_size=64)  # fmt: skip
    code, _, stderr = run(
        "enrich", tmp_path / "l", tmp_path / "r.parquet", "-o", tmp_path / "o", "--on", "time",
        "--by", "symbol", "--device", "cpu", "--chunk-rows", 50, capsys=capsys,
    )  # fmt: skip
    assert code == 0, stderr
    assert STREAMED in stderr
    expected = _expected(trades, quotes)
    for symbol, out in _out_of(tmp_path / "o", NAMES).items():
        rows = expected.filter(pc.equal(expected["symbol"], symbol)).drop_columns(["symbol"])
        assert out.equals(rows.sort_by("time")), symbol


def test_a_right_of_folders_streams_while_a_shuffled_left_is_regrouped(day, tmp_path, capsys):
    """RIGHT a folder a symbol, LEFT one shuffled file: RIGHT streams, LEFT's keys are put
    in its order (``regroup``), whatever the strategy."""
    trades, quotes = day
    _write_folders(quotes, tmp_path / "r", NAMES)
    shuffled = trades.take(np.random.default_rng(3).permutation(trades.num_rows))
    pq.write_table(shuffled, tmp_path / "l.parquet", row_group_size=100)
    for strategy in ("backward", "forward", "nearest"):
        out = tmp_path / f"o-{strategy}.parquet"
        code, _, stderr = run(
            "enrich", tmp_path / "l.parquet", tmp_path / "r", "-o", out, "--on", "time",
            "--by", "symbol", "--device", "cpu", "--right-mode", "stream", "--chunk-rows", 64,
            "--strategy", strategy, capsys=capsys,
        )  # fmt: skip
        assert code == 0, stderr
        assert "sorted by ('symbol', 'time')) in windows" in stderr
        assert "LEFT's keys put in that order" in stderr
        assert pq.read_table(out).equals(_expected(shuffled, quotes, strategy=strategy))


def _two_days(tmp_path, times: dict[str, list[int]]):
    for day_, keys in times.items():
        for side in ("l", "r"):
            folder = tmp_path / side / f"date={day_}"
            folder.mkdir(parents=True)
            table = pa.table({"t": keys, "v": [1.0] * len(keys)})
            pq.write_table(table if side == "r" else table.select(["t"]), folder / "p.parquet")


def _stream_refused(tmp_path, capsys, by: str) -> str:
    """What ``--right-mode stream`` says, exiting 2, of l/ beside r/ on t by ``by``, after
    'RIGHT r/ is not sorted by '."""
    code, stdout, stderr = run(
        "enrich", tmp_path / "l", tmp_path / "r", "-o", tmp_path / "o", "--on", "t", "--by",
        by, "--device", "cpu", "--right-mode", "stream", "-q", capsys=capsys,
    )  # fmt: skip
    assert (code, stdout) == (2, "")
    start = f"asofgpu enrich: error: --right-mode stream: RIGHT {tmp_path / 'r'} is not sorted by "
    assert stderr.startswith(start), stderr
    return stderr[len(start) :]


SHOW = "as far as its row-group statistics and first row group show"


def test_folders_whose_keys_go_back_inside_one_are_not_streamed(tmp_path, capsys):
    """Each folder's two files with the later keys first by path: no order by (folder,
    key), said so; auto joins them in memory, rightly."""
    for side, g in itertools.product(("l", "r"), ("a", "b")):  # (keys overlap: no tape)
        folder = tmp_path / side / f"g={g}"
        folder.mkdir(parents=True)
        for name, t, v in (("p0", [5, 6], [1.0, 2.0]), ("p1", [1, 2], [3.0, 4.0])):
            table = pa.table({"t": t, "v": v})
            pq.write_table(
                table if side == "r" else table.select(["t"]), folder / f"{name}.parquet"
            )
    at = tmp_path / "r" / "g=a" / "p1.parquet"
    assert _stream_refused(tmp_path, capsys, "g") == (
        f"'t' nor by ('g', 't'), {SHOW}: 't' goes back within 'a' from 6 to 1 at {at}, "
        f"row group 0\n"
    )
    code, _, stderr = run(
        "enrich", tmp_path / "l", tmp_path / "r", "-o", tmp_path / "o2", "--on", "t", "--by",
        "g", "--device", "cpu", "-q", capsys=capsys,
    )  # fmt: skip
    assert (code, stderr) == (0, "")
    assert pq.read_table(tmp_path / "o2" / "g=a" / "p0.parquet")["v"].to_pylist() == [1.0, 2.0]


def test_keys_going_back_past_a_file_of_null_keys_are_seen_before_streaming(tmp_path, capsys):
    """A folder's files 50-70, then null keys only, then 10-30: its statistics show the keys
    going back across the nulls, so the stream is refused before it starts (it was found
    at row 0 of the third file, "though the bounds of its row groups are in order")."""
    for side, g in itertools.product(("l", "r"), ("a", "b")):
        folder = tmp_path / side / f"g={g}"
        folder.mkdir(parents=True)
        for i, t in enumerate(([50, 60, 70], [None, None], [10, 20, 30])):
            table = pa.table({"t": pa.array(t, pa.int64()), "v": [1.0] * len(t)})
            pq.write_table(table if side == "r" else table.select(["t"]), folder / f"p{i}.parquet")
    at = tmp_path / "r" / "g=a" / "p2.parquet"
    assert _stream_refused(tmp_path, capsys, "g") == (
        f"'t' nor by ('g', 't'), {SHOW}: 't' goes back within 'a' from 70 to 10 at {at}, "
        f"row group 0\n"
    )


def test_an_order_by_a_null_folder_is_not_looked_for(tmp_path, capsys):
    """A folder of nulls (``__HIVE_DEFAULT_PARTITION__``) has no place in an order: the
    stream says so."""
    _two_days(tmp_path, {"2026-01-01": [1, 2], "__HIVE_DEFAULT_PARTITION__": [1, 2]})
    assert _stream_refused(tmp_path, capsys, "date") == (
        f"'t', {SHOW}, and an order by ('date', 't') is not looked for: a folder "
        f"date=__HIVE_DEFAULT_PARTITION__ holds nulls, which sort where a writer puts them\n"
    )


@pytest.mark.parametrize(
    ("by", "named"),
    [
        ("venue,date", "'date' is a partition folder"),
        ("date,venue,symbol", "'symbol' is a partition folder"),  # (date, first, is not)
        ("venue,symbol,date", "'symbol', 'date' are partition folders"),
    ],
)
def test_an_order_with_a_folder_after_a_column_is_not_looked_for(tmp_path, capsys, by, named):
    """A folder after a by column of the files' own: their order would interleave the
    files, which a stream does not; said so, naming the folders that come after one."""
    for side in ("l", "r"):
        for day_, symbol in itertools.product(("2026-01-01", "2026-01-02"), ("A", "B")):
            folder = tmp_path / side / f"date={day_}" / f"symbol={symbol}"
            folder.mkdir(parents=True)
            table = pa.table({"venue": ["X", "Y"], "t": [1, 2], "v": [1.0, 2.0]})
            pq.write_table(
                table if side == "r" else table.drop_columns(["v"]), folder / "p.parquet"
            )
    order = (*by.split(","), "t")
    assert _stream_refused(tmp_path, capsys, by) == (
        f"'t', {SHOW}, and an order by {order!r} is not looked for: {named}, which a stream "
        f"takes only before the by columns of its files\n"
    )


def test_grouped_order_takes_folders_by_their_typed_values(tmp_path):
    """``grouped_order``: folders of numbers in their numbers' order, "007" and "7" one
    value (their paths' order kept), a float folder never (NaN has no place)."""
    from asofgpu.enrich._sources import Source
    from asofgpu.enrich._file_order import grouped_order

    for name, t in (("10", [0, 1]), ("007", [0, 1]), ("7", [2, 3]), ("9", [0, 1])):
        (tmp_path / "n" / f"k={name}").mkdir(parents=True)
        pq.write_table(pa.table({"t": t}), tmp_path / "n" / f"k={name}" / "p.parquet")
    source = Source.find(tmp_path / "n", "RIGHT")
    ordered = grouped_order(source, ["k"], "t")[0]
    assert [p.values["k"] for p in ordered.parts] == ["007", "7", "9", "10"]
    (tmp_path / "n" / "k=7" / "p.parquet").rename(tmp_path / "n" / "k=7" / "a.parquet")
    pq.write_table(pa.table({"t": [0, 1]}), tmp_path / "n" / "k=7" / "b.parquet")
    assert grouped_order(Source.find(tmp_path / "n", "RIGHT"), ["k"], "t")[0] is None  # 2 3 | 0 1
    for name in ("1.5", "2.5"):
        (tmp_path / "f" / f"k={name}").mkdir(parents=True)
        pq.write_table(pa.table({"t": [0, 1]}), tmp_path / "f" / f"k={name}" / "p.parquet")
    floats = Source.find(tmp_path / "f", "RIGHT")
    floats.retype("k", pa.float64())
    assert grouped_order(floats, ["k"], "t")[0] is None
