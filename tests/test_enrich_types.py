"""``asofgpu enrich`` on column types and layouts that its three modes read differently:
nested columns, 32-bit dates and times, required (non-nullable) fields, a file whose row
groups do not overlap yet are unsorted inside, a damaged file. The oracle is
``asofgpu.join_asof`` on the whole files."""

from __future__ import annotations

import datetime

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import asofgpu as ag
from enrich_cli import enrich_in, hidden, needs_parquet_views, run

pytestmark = pytest.mark.usefixtures("left_columns")  # copied and encoded, both

MODES = ["memory", "stream", "spill"]


def _enrich(tmp_path, capsys, left, right, *flags, mode="auto", right_group=5, **options):
    pq.write_table(left, tmp_path / "l.parquet", row_group_size=3)  # a chunk: copied
    pq.write_table(right, tmp_path / "r.parquet", row_group_size=right_group)
    out = tmp_path / f"o-{mode}.parquet"
    code, _, stderr = run(
        "enrich",
        tmp_path / "l.parquet",
        tmp_path / "r.parquet",
        "-o",
        out,
        "--device",
        "cpu",
        "--chunk-rows",
        3,
        "--right-mode",
        mode,
        *flags,
        capsys=capsys,
    )
    assert code == 0, stderr
    expected = ag.join_asof(
        pq.read_table(tmp_path / "l.parquet"),
        pq.read_table(tmp_path / "r.parquet"),
        device="cpu",
        **options,
    )
    assert pq.read_table(out).equals(expected), mode
    assert hidden(tmp_path) == []
    return stderr


def _enrich_in(tmp_path, capsys, mode, left, right, right_group, *flags, **write_options):
    """OUT of a run in ``mode`` (one of ``MODES``, or "regroup": LEFT shuffled, RIGHT
    streamed) on ``--on t --by sym`` and ``flags``, in small chunks, and ``join_asof`` of the
    files read whole with the same options (``--strategy``: ``strategy``)."""
    if mode == "regroup":
        left = left.take(np.random.default_rng(0).permutation(left.num_rows))
    pq.write_table(left, tmp_path / "l.parquet", row_group_size=7, **write_options)
    pq.write_table(right, tmp_path / "r.parquet", row_group_size=right_group, **write_options)
    out = tmp_path / "o.parquet"
    how = "stream" if mode == "regroup" else mode
    code, _, stderr = enrich_in(
        tmp_path, "--chunk-rows", 16, "--right-mode", how, *flags, capsys=capsys, by="sym"
    )
    assert code == 0, stderr
    assert hidden(tmp_path) == []
    strategy = flags[flags.index("--strategy") + 1] if "--strategy" in flags else "backward"
    expected = ag.join_asof(
        pq.read_table(tmp_path / "l.parquet"),
        pq.read_table(tmp_path / "r.parquet"),
        on="t",
        by="sym",
        strategy=strategy,
        device="cpu",
    )
    return pq.read_table(out), expected


@pytest.mark.parametrize("mode", MODES)
def test_nested_columns_pass_through_and_attach(tmp_path, capsys, mode):
    left = pa.table(
        {
            "t": np.arange(0, 20, 2),
            "g": list("abababaabb"),
            "tags": [[i, i + 1] if i % 3 else None for i in range(10)],
        }
    )
    right = pa.table(
        {
            "t": np.arange(1, 21, 2),
            "g": list("aabbabbaab"),
            "quote": [{"bid": float(i), "ask": i + 0.5} for i in range(10)],
        }
    )
    _enrich(tmp_path, capsys, left, right, "--on", "t", "--by", "g", mode=mode, on="t", by="g")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", [pa.date32(), pa.time32("s"), pa.date64()])
def test_32_bit_dates_and_times_as_keys_and_groups(tmp_path, capsys, mode, kind):
    def values(start, n):
        if pa.types.is_time(kind):
            return pa.array(range(start, start + 2 * n, 2), pa.int32()).cast(kind)
        days = [
            datetime.date(2026, 1, 1) + datetime.timedelta(days=d)
            for d in range(start, start + 2 * n, 2)
        ]
        return pa.array(days, kind)

    left = pa.table({"t": values(0, 10), "g": values(0, 10).take([0, 1, 0, 1, 0, 1, 0, 1, 0, 1])})
    right = pa.table(
        {
            "t": values(1, 10),
            "g": values(0, 10).take([1, 0, 0, 1, 1, 0, 1, 0, 0, 1]),
            "v": np.arange(10.0),
        }
    )
    _enrich(tmp_path, capsys, left, right, "--on", "t", "--by", "g", mode=mode, on="t", by="g")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shuffled", [False, True])  # the stream then regroups LEFT
def test_required_fields(tmp_path, capsys, mode, shuffled):
    schema = pa.schema(
        [pa.field("t", pa.int64(), nullable=False), pa.field("g", pa.string(), nullable=False)]
    )
    left = pa.table({"t": [0, 2, 4, 6, 8], "g": list("ABABA")}, schema=schema)
    if shuffled:
        left = left.take([3, 0, 4, 1, 2])
    right = pa.table(
        {"t": pa.array([1, 3, 5, 7]), "g": list("ABAB"), "v": pa.array([1, 2, 3, 4])},
        schema=schema.append(pa.field("v", pa.int64(), nullable=False)),
    )
    _enrich(tmp_path, capsys, left, right, "--on", "t", "--by", "g", mode=mode, on="t", by="g")


def _enrich_files(tmp_path, out, mode: str, capsys) -> None:
    """``asofgpu enrich`` of ``tmp_path``'s l.parquet and r.parquet into ``out`` on t by g on
    the cpu, RIGHT held as ``mode`` says; checked to succeed."""
    code, _, stderr = run(
        "enrich", tmp_path / "l.parquet", tmp_path / "r.parquet", "-o", out, "--on", "t",
        "--by", "g", "--device", "cpu", "--right-mode", mode, capsys=capsys,
    )  # fmt: skip
    assert code == 0, stderr


@pytest.mark.parametrize("mode", MODES)
def test_structs_of_required_fields_attach_null_where_nothing_matches(tmp_path, capsys, mode):
    """Spark and pyarrow schemas declare struct fields not-null; the struct attached to a
    row without a match is null, its fields with it, so OUT declares them nullable (a
    parquet writer refuses nulls under a not-null field), at any depth."""
    required = pa.field("a", pa.int64(), nullable=False)
    inner = pa.struct([required, pa.field("b", pa.struct([required]), nullable=False)])
    right = pa.table(
        {
            "t": [1, 3, 5],
            "g": ["x", "y", "x"],
            "st": pa.array([{"a": i, "b": {"a": -i}} for i in range(3)], inner),
            "items": pa.array([[{"a": i, "b": {"a": i}}] for i in range(3)], pa.list_(inner)),
        }
    )
    left = pa.table({"t": [0, 1, 2, 4, 6], "g": ["x", "x", "y", "y", "z"]})  # 0, 2, 6: none
    pq.write_table(left, tmp_path / "l.parquet")
    pq.write_table(right, tmp_path / "r.parquet")
    out = tmp_path / "o.parquet"
    _enrich_files(tmp_path, out, mode, capsys)
    got = pq.read_table(out)
    relaxed = pa.struct([pa.field("a", pa.int64()), pa.field("b", pa.struct([("a", pa.int64())]))])
    assert got.schema.field("st").type == relaxed
    assert got.schema.field("items").type == pa.list_(relaxed)
    expected = ag.join_asof(left, right, on="t", by="g", device="cpu")
    assert got.to_pylist() == expected.to_pylist()
    assert got["st"].to_pylist() == [
        None,
        {"a": 0, "b": {"a": 0}},
        None,
        {"a": 1, "b": {"a": -1}},
        None,
    ]
    assert hidden(tmp_path) == []


@pytest.mark.parametrize("mode", MODES)
def test_out_keeps_the_pandas_metadata_of_its_left_file(tmp_path, capsys, mode):
    """pandas reads OUT as it wrote LEFT (its index, nullable integers), with the attached
    columns beside; a LEFT file without pandas metadata gives an OUT file without it."""
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(
        {
            "t": pd.to_datetime(np.arange(0, 20, 2), unit="s"),
            "g": list("abababaabb"),
            "n": pd.array([1, None, 3, 4, None, 6, 7, 8, 9, 10], dtype="Int64"),
        }
    ).set_index("t")
    frame.to_parquet(tmp_path / "l.parquet", row_group_size=3)
    written = pq.read_schema(tmp_path / "l.parquet")  # (the key's unit is pandas' choice)
    right = pa.table(
        {"t": pa.array(np.arange(1, 21, 2) * 10**9, pa.timestamp("ns")), "g": list("aabbabbaab"),
         "v": np.arange(10.0)}
    )  # fmt: skip
    right = right.set_column(0, "t", right["t"].cast(written.field("t").type))
    pq.write_table(right, tmp_path / "r.parquet")
    out = tmp_path / f"o-{mode}.parquet"
    _enrich_files(tmp_path, out, mode, capsys)
    got = pd.read_parquet(out)
    assert got.index.equals(frame.index) and got.index.name == "t"
    assert got["n"].dtype == "Int64" and got["n"].equals(frame["n"])
    joined = ag.join_asof(
        pq.read_table(tmp_path / "l.parquet"), right, on="t", by="g", device="cpu"
    )
    assert pq.read_table(out).equals(joined)  # the values, as before
    assert got.equals(joined.replace_schema_metadata(written.metadata).to_pandas())
    pq.write_table(
        pq.read_table(tmp_path / "l.parquet").replace_schema_metadata(None), tmp_path / "l.parquet"
    )
    _enrich_files(tmp_path, out, mode, capsys)
    assert b"pandas" not in (pq.read_metadata(out).metadata or {})


@pytest.mark.parametrize("mode", MODES)
def test_out_keeps_the_footer_metadata_of_its_left_file(tmp_path, capsys, mode):
    """A writer's and a user's entries come along (Spark's calendar flags tell Spark how
    LEFT's dates were written); LEFT's Arrow schema is OUT's own; the schemas of LEFT's
    columns other readers read a file by (Spark's, parquet-avro's, Hugging Face's), which
    would have them read OUT without ``v``, are dropped, and so is an entry not UTF-8."""
    spark_schema = '{"type":"struct","fields":[]}'
    entries = {
        b"source": b"feed A",
        b"org.apache.spark.version": b"3.5.1",
        b"org.apache.spark.legacyDateTime": b"",
        b"org.apache.spark.sql.parquet.row.metadata": spark_schema.encode(),
        b"parquet.avro.schema": b'{"type": "record", "name": "r", "fields": []}',
        b"huggingface": b'{"info": {"features": {}}}',
        b"raw": b"\xff\xfe",
    }
    left = pa.table({"t": [0, 1, 2, 4, 6], "g": list("xxyyz")}).replace_schema_metadata(entries)
    pq.write_table(left, tmp_path / "l.parquet", row_group_size=2)
    pq.write_table(
        pa.table({"t": [1, 3], "g": ["x", "y"], "v": [1.0, 2.0]}), tmp_path / "r.parquet"
    )
    out = tmp_path / "o.parquet"
    _enrich_files(tmp_path, out, mode, capsys)
    got = pq.read_metadata(out).metadata
    assert {k: got.get(k) for k in entries} == {
        b"source": b"feed A",
        b"org.apache.spark.version": b"3.5.1",
        b"org.apache.spark.legacyDateTime": b"",
        b"org.apache.spark.sql.parquet.row.metadata": None,
        b"parquet.avro.schema": None,
        b"huggingface": None,
        b"raw": None,
    }
    assert got[b"asofgpu"] == b"enrich"
    assert pq.read_table(out).drop(["v"]).equals(left.replace_schema_metadata(None))
    assert pq.read_schema(out).names == ["t", "g", "v"]


@pytest.mark.parametrize("mode", MODES)
def test_out_keeps_the_fields_of_left_and_right_as_declared(tmp_path, capsys, mode):
    """LEFT's required columns stay required and both sides' field metadata comes along (a
    user's units, a parquet field id of LEFT's): OUT declared every LEFT column nullable and
    kept no field's metadata. An attached column is nullable, without RIGHT's field id
    (LEFT's may be the same number)."""
    left = pa.table(
        {"t": [0, 1, 2, 4, 6], "g": list("xxyyz")},
        schema=pa.schema(
            [
                pa.field("t", pa.int64(), nullable=False, metadata={"unit": "s"}),
                pa.field("g", pa.string(), metadata={"PARQUET:field_id": "7"}),
            ]
        ),
    )
    pq.write_table(left, tmp_path / "l.parquet", row_group_size=2)
    v = pa.field(
        "v", pa.float64(), nullable=False, metadata={"unit": "USD", "PARQUET:field_id": "7"}
    )
    right = pa.table(
        {"t": [1, 3], "g": ["x", "y"], "v": [1.0, 2.0]},
        schema=pa.schema([("t", pa.int64()), ("g", pa.string()), v]),
    )
    pq.write_table(right, tmp_path / "r.parquet")
    out = tmp_path / "o.parquet"
    _enrich_files(tmp_path, out, mode, capsys)
    got = pq.read_schema(out)
    assert got.field("t").equals(left.schema.field("t"), check_metadata=True)
    assert got.field("g").metadata == {b"PARQUET:field_id": b"7"}
    assert got.field("v").nullable and got.field("v").metadata == {b"unit": b"USD"}
    assert pq.read_table(out)["v"].to_pylist() == [None, 1.0, None, 2.0, None]


def test_polars_reads_out_with_the_enums_of_left_and_right(tmp_path, capsys):
    """polars keeps an Enum's categories in its field's metadata: OUT's came back as
    Categorical."""
    pl = pytest.importorskip("polars")
    kind = pl.Enum(["x", "y", "z"])
    left = pl.DataFrame({"t": [0, 1, 2, 4, 6], "g": pl.Series(list("xxyyz"), dtype=kind)})
    left.write_parquet(tmp_path / "l.parquet")
    right = pl.DataFrame(
        {
            "t": [1, 3],
            "g": pl.Series(["x", "y"], dtype=kind),
            "e": pl.Series(["z", "x"], dtype=kind),
        }
    )
    right.write_parquet(tmp_path / "r.parquet")
    out = tmp_path / "o.parquet"
    _enrich_files(tmp_path, out, "memory", capsys)
    got = pl.read_parquet(out)
    assert got.schema["g"] == kind and got.schema["e"] == kind
    assert got["e"].to_list() == [None, "z", None, "x", None]


@pytest.mark.parametrize("mode", MODES)
def test_fields_whose_metadata_differs_between_files_keep_what_they_share(tmp_path, capsys, mode):
    """Files of one side whose Enums differ, as columns or nested in structs: OUT declared
    the first file's categories for all, and polars read the others' values outside them as
    null. Entries the files do not share are dropped (polars then reads a Categorical,
    every value kept)."""
    pl = pytest.importorskip("polars")
    for side, frames in {
        "l": [
            pl.DataFrame({"t": [0, 2], "g": ["x", "x"], "n": ["a", "a"]}),
            pl.DataFrame({"t": [4, 6], "g": ["x", "x"], "n": ["a", "b"]}),
        ],
        "r": [
            pl.DataFrame({"t": [1], "g": ["x"], "e": ["p"]}),
            pl.DataFrame({"t": [3, 5], "g": ["x", "x"], "e": ["p", "q"]}),
        ],
    }.items():
        for k, frame in enumerate(frames):
            last = frame.columns[-1]
            kind = pl.Enum(sorted(set(frame[last].to_list())))
            (tmp_path / side).mkdir(exist_ok=True)
            frame = frame.with_columns(pl.col(last).cast(kind))
            frame = frame.with_columns(pl.struct(pl.col(last)).alias(f"s{last}"))
            frame.write_parquet(tmp_path / side / f"{k}.parquet")
    code, _, stderr = run(
        "enrich", tmp_path / "l", tmp_path / "r", "-o", tmp_path / "o", "--on", "t", "--by",
        "g", "--device", "cpu", "--right-mode", mode, capsys=capsys,
    )  # fmt: skip
    assert code == 0, stderr
    got = pl.read_parquet(tmp_path / "o" / "1.parquet")
    assert got["n"].cast(pl.String).to_list() == ["a", "b"]
    assert got["e"].cast(pl.String).to_list() == ["p", "q"]
    assert got["sn"].struct.field("n").cast(pl.String).to_list() == ["a", "b"]
    assert got["se"].struct.field("e").cast(pl.String).to_list() == ["p", "q"]


@pytest.mark.parametrize(
    "labels", [[0, 1, 2], [("a", "t"), ("a", "g"), ("b", "n")]], ids=["ints", "multiindex"]
)
def test_out_of_a_pandas_frame_whose_labels_are_not_strings_has_no_pandas_metadata(
    tmp_path, capsys, labels
):
    """pandas would read the attached columns' names as labels of the frame's kind (ints, a
    MultiIndex's tuples) and fail: such an OUT is written without LEFT's pandas metadata."""
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"t": np.arange(5), "g": list("ababa"), "n": np.arange(5.0)})
    frame.columns = pd.MultiIndex.from_tuples(labels) if isinstance(labels[0], tuple) else labels
    frame.to_parquet(tmp_path / "l.parquet")
    names = pq.read_schema(tmp_path / "l.parquet").names  # as pyarrow writes the labels
    right = pa.table({"t": np.arange(5), "v": np.arange(5.0)})
    pq.write_table(right, tmp_path / "r.parquet")
    out = tmp_path / "o.parquet"
    code, _, stderr = run(
        "enrich", tmp_path / "l.parquet", tmp_path / "r.parquet", "-o", out, "--left-on",
        names[0], "--right-on", "t", "--device", "cpu", capsys=capsys,
    )  # fmt: skip
    assert code == 0, stderr
    assert b"pandas" not in (pq.read_metadata(out).metadata or {})
    assert pd.read_parquet(out)["v"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


@pytest.mark.parametrize(
    "labels", [["t", "g", "n"], [0, 1, 2], [("a", "t"), ("a", "g"), ("b", "n")]],
    ids=["strings", "ints", "multiindex"],
)  # fmt: skip
def test_out_of_a_frame_written_without_its_index_keeps_the_pandas_metadata(
    tmp_path, capsys, labels
):
    """``to_parquet(index=False)`` names no label type (its column_indexes are empty) and
    pandas reads such labels as strings: OUT kept no pandas metadata, and a nullable Int64
    column came back float64."""
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"t": np.arange(5), "g": list("ababa")})
    frame["n"] = pd.array([1, None, 3, 4, 5], dtype="Int64")
    frame.columns = pd.MultiIndex.from_tuples(labels) if isinstance(labels[0], tuple) else labels
    frame.to_parquet(tmp_path / "l.parquet", index=False)
    names = pq.read_schema(tmp_path / "l.parquet").names  # as pyarrow writes the labels
    pq.write_table(pa.table({"t": np.arange(5), "v": np.arange(5.0)}), tmp_path / "r.parquet")
    out = tmp_path / "o.parquet"
    code, _, stderr = run(
        "enrich", tmp_path / "l.parquet", tmp_path / "r.parquet", "-o", out, "--left-on",
        names[0], "--right-on", "t", "--columns", "v", "--device", "cpu", capsys=capsys,
    )  # fmt: skip
    assert code == 0, stderr
    assert b"pandas" in pq.read_metadata(out).metadata
    got = pd.read_parquet(out)
    assert list(got.columns) == [*names, "v"]
    assert got[names[2]].dtype == "Int64" and got["v"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_unsorted_inside_non_overlapping_row_groups_starts_again_without_streaming(
    tmp_path, capsys
):
    """Row groups [0..9] and [10..19] do not overlap and the first is sorted, so auto
    streams; the second is shuffled, which streaming finds: the run starts again."""
    right = pa.table(
        {
            "t": np.concatenate(
                [np.arange(10), np.random.default_rng(1).permutation(np.arange(10, 20))]
            ),
            "v": np.arange(20.0),
        }
    )
    left = pa.table({"t": np.arange(0, 20, 3)})
    pq.write_table(right, tmp_path / "r.parquet", row_group_size=10)
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
        "--device",
        "cpu",
        "--chunk-rows",
        4,
        capsys=capsys,
    )
    assert code == 0, stderr
    assert "both sides are sorted by their key: streaming RIGHT" in stderr
    assert "is not sorted by 't' at row 1" in stderr and "starting again without streaming" in (
        stderr
    )
    assert pq.read_table(out).equals(ag.join_asof(left, right, on="t", device="cpu"))
    assert hidden(tmp_path) == []


def test_a_struct_before_the_key_does_not_fool_the_tape_check(tmp_path, capsys):
    """Row groups' column statistics are numbered by parquet leaf: a struct's two leaves
    come before the key's. The struct's second field rises; the key does not."""
    n = 12
    left = pa.table(
        {
            "s": [{"a": 0, "b": i} for i in range(n)],
            "t": np.concatenate([np.arange(6), np.arange(6)[::-1]]),
        }
    )
    right = pa.table({"t": np.arange(n), "v": np.arange(float(n))})
    stderr = _enrich(tmp_path, capsys, left, right, "--on", "t", on="t")
    assert "streaming RIGHT" not in stderr


def _damage(path) -> None:
    """Zero the parquet file's first pages (its footer intact): it opens, and fails to read."""
    raw = bytearray(path.read_bytes())
    raw[8:600] = bytes(592)
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("mode", ["auto", "stream"])
def test_a_damaged_file_is_one_line(tmp_path, capsys, mode):
    right = pa.table({"t": np.arange(1000), "v": np.arange(1000.0)})
    pq.write_table(right, tmp_path / "r.parquet")
    pq.write_table(pa.table({"t": np.arange(0, 1000, 7)}), tmp_path / "l.parquet")
    _damage(tmp_path / "r.parquet")
    code, stdout, stderr = run(
        "enrich",
        tmp_path / "l.parquet",
        tmp_path / "r.parquet",
        "-o",
        tmp_path / "o.parquet",
        "--on",
        "t",
        "--device",
        "cpu",
        "--right-mode",
        mode,
        capsys=capsys,
    )
    assert code == 2 and stdout == "" and stderr.count("\n") == 1
    assert stderr.startswith(
        f"asofgpu enrich: error: cannot read RIGHT file {tmp_path / 'r.parquet'}: "
    )
    assert hidden(tmp_path) == []


def test_of_several_damaged_right_files_read_at_once_the_first_is_named(
    tmp_path, capsys, monkeypatch
):
    """RIGHT's files are read two at a time (``Source.read``): the error names the first
    damaged file in RIGHT's order, whichever reader met one first (here part5's, which
    fails before part2's reader is let go)."""
    import threading

    from asofgpu.enrich import _sources

    part5_failed = threading.Event()
    parquet_file = _sources.pq.ParquetFile

    def opened(path, *args, **kwargs):
        reading = "read_dictionary" in kwargs  # (not the footers' reads, earlier)
        if reading and str(path).endswith("part2.parquet"):
            assert part5_failed.wait(10)
        try:
            return parquet_file(path, *args, **kwargs)
        finally:
            if str(path).endswith("part5.parquet"):
                part5_failed.set()

    monkeypatch.setattr(_sources.pq, "ParquetFile", opened)
    folder = tmp_path / "right"
    folder.mkdir()
    for i in range(6):
        right = pa.table({"t": np.arange(i * 1000, (i + 1) * 1000), "v": np.arange(1000.0)})
        pq.write_table(right, folder / f"part{i}.parquet")
        if i in (2, 5):
            _damage(folder / f"part{i}.parquet")
    pq.write_table(pa.table({"t": np.arange(0, 6000, 7)}), tmp_path / "l.parquet")
    code, stdout, stderr = run(
        "enrich",
        tmp_path / "l.parquet",
        folder,
        "-o",
        tmp_path / "o.parquet",
        "--on",
        "t",
        "--device",
        "cpu",
        "--right-mode",
        "memory",
        capsys=capsys,
    )
    assert code == 2 and stdout == "" and stderr.count("error") == 1
    assert stderr.splitlines()[-1].startswith(
        f"asofgpu enrich: error: cannot read RIGHT file {folder / 'part2.parquet'}: "
    )
    assert hidden(tmp_path) == []


TEXT = {"string": pa.string(), "large_string": pa.large_string(), "string_view": pa.string_view()}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("strategy", ["backward", "nearest"])
@pytest.mark.parametrize(
    ("left_text", "right_text"),
    [
        ("large_string", "large_string"),
        ("string", "large_string"),
        pytest.param("string_view", "string", marks=needs_parquet_views),
    ],
)
def test_text_by_columns_of_every_width_and_views(
    tmp_path, capsys, mode, strategy, left_text, right_text
):
    """The README's by-key text types on every way of holding RIGHT: read as dictionaries,
    parquet gives them string values whatever they were written as (the spill's and the
    stream's schemas said large_string and view, and their writes and concats failed)."""
    syms = ["A", "B", None, "C"]
    left = pa.table(
        {
            "t": np.arange(0, 40, 4),
            "sym": pa.array([syms[i % 4] for i in range(10)], TEXT[left_text]),
        }
    )
    right = pa.table(
        {
            "t": np.arange(1, 41, 2),
            "sym": pa.array([syms[(i * 3) % 4] for i in range(20)], TEXT[right_text]),
            "bid": np.arange(20.0),
        }
    )
    _enrich(
        tmp_path,
        capsys,
        left,
        right,
        "--on",
        "t",
        "--by",
        "sym",
        "--strategy",
        strategy,
        mode=mode,
        on="t",
        by="sym",
        strategy=strategy,
    )


@needs_parquet_views
@pytest.mark.parametrize("mode", MODES)
def test_view_columns_keep_their_types_on_every_way_of_holding_right(tmp_path, capsys, mode):
    """String and binary views (what polars' frames hold), plain and inside lists (pyarrow
    cannot write them inside structs), as payload on both sides and as a by-key of files
    grouped by it (the grouped stream reads its runs' heads): pyarrow has no take, filter or
    sort for views, and the stream and the spill crashed taking rows; OUT holds the files'
    own types."""
    views = pa.string_view()

    def side(keys, syms, start):
        n = len(keys)
        return pa.table(
            {
                "sym": pa.array(syms, views),
                "t": keys,
                f"note{start}": pa.array([f"n{start + i}" for i in range(n)], views),
                f"raw{start}": pa.array([bytes([i]) for i in range(n)], pa.binary_view()),
                f"deep{start}": pa.array([[f"x{i}"] * (i % 3) for i in range(n)], pa.list_(views)),
            }
        )

    # Grouped by sym, then t: the stream takes the grouped path.
    left = side(np.tile(np.arange(0, 20, 4), 2), ["A"] * 5 + ["B"] * 5, 0)
    right = side(np.tile(np.arange(1, 21, 2), 2), ["A"] * 10 + ["B"] * 10, 100)
    _enrich(tmp_path, capsys, left, right, "--on", "t", "--by", "sym", mode=mode, on="t", by="sym")


@pytest.mark.parametrize("mode", [*MODES, "regroup"])
@pytest.mark.parametrize(
    "kind",
    [
        pa.string(),
        pa.large_string(),
        pytest.param(pa.string_view(), marks=needs_parquet_views),
        pa.binary(),
    ],
)
def test_attached_text_kept_as_a_dictionary_is_written_as_text(tmp_path, capsys, mode, kind):
    """RIGHT's text of few long values, which parquet keeps dictionary-encoded, is read,
    gathered and written as codes where RIGHT is held or streamed beside a sorted LEFT: OUT's
    column is of RIGHT's type, stored as dictionary pages, and its min and max are those of
    the values written, not of every value RIGHT's dictionaries hold. Spilled, and streamed
    beside an unsorted LEFT ("regroup"), the results are merged back in LEFT's order, and
    each piece's dictionaries would be unified at every merge: read as strings there."""
    values = [("z" if i == 3 else chr(ord("b") + i)) * 300 for i in range(4)]
    n = 400  # in row groups of 100: a dictionary of 3 values of 300 bytes, 5 bytes a row
    right = pa.table(
        {
            "t": np.arange(0, 2 * n, 2),
            "sym": np.array(["A", "B"])[np.arange(n) % 2],
            "note": pa.array([values[(i * 7) % 3] for i in range(n)], kind),
            "last": pa.array(["a" * 300] * (n - 1) + [values[3]], kind),
        }
    )
    # C matches nothing: a null in every chunk, with which Arrow's writer takes the min and
    # max of the whole dictionary, and the "z"s of RIGHT's last row group are matched by no
    # LEFT row.
    keys = np.arange(-8, 780, 4)
    left = pa.table({"t": keys, "sym": np.array(list("ABC"))[np.arange(len(keys)) % 3]})
    if mode == "regroup":
        left = left.take(np.random.default_rng(0).permutation(len(keys)))
    flags = ("--on", "t", "--by", "sym")
    how = "stream" if mode == "regroup" else mode
    log = _enrich(
        tmp_path, capsys, left, right, *flags, mode=how, right_group=100, on="t", by="sym"
    )
    assert ("LEFT's keys put in that order" in log) == (mode == "regroup"), log
    as_codes = "attached text kept as dictionary codes: note, last" in log
    assert as_codes == (mode in ("memory", "stream")), log
    mode = how
    out = pq.read_table(tmp_path / f"o-{mode}.parquet")
    assert out.schema.field("note").type == kind and out.schema.field("last").type == kind
    meta = pq.read_metadata(tmp_path / f"o-{mode}.parquet")
    for g in range(meta.num_row_groups):
        rows = out.slice(sum(meta.row_group(k).num_rows for k in range(g)))
        rows = rows.slice(0, meta.row_group(g).num_rows)
        for name in ("note", "last"):
            chunk = meta.row_group(g).column(out.schema.get_field_index(name))
            assert chunk.has_dictionary_page
            written = [v for v in rows.column(name).to_pylist() if v is not None]
            if written:
                assert (chunk.statistics.min, chunk.statistics.max) == (min(written), max(written))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("index", [pa.int8(), pa.int16(), pa.uint32()])
def test_dictionary_by_columns_of_any_index_width(tmp_path, capsys, mode, index):
    """pandas writes a Categorical with int8 indices, polars with uint32: the group count
    of RIGHT's sample took every dictionary's indices as int32, and every mode failed."""
    syms = ["A", "B", None, "C"]

    def coded(values):
        return pa.array(values).dictionary_encode().cast(pa.dictionary(index, pa.string()))

    left = pa.table({"t": np.arange(0, 40, 4), "sym": coded([syms[i % 4] for i in range(10)])})
    right = pa.table(
        {
            "t": np.arange(1, 41, 2),
            "sym": coded([syms[(i * 3) % 4] for i in range(20)]),
            "bid": np.arange(20.0),
        }
    )
    _enrich(tmp_path, capsys, left, right, "--on", "t", "--by", "sym", mode=mode, on="t", by="sym")


@pytest.mark.parametrize("mode", [*MODES, "regroup"])
@pytest.mark.parametrize("index, values", [(pa.int8(), 100), (pa.int16(), 10_000)])
def test_attached_dictionaries_of_more_values_in_all_than_their_index_holds(
    tmp_path, capsys, mode, index, values
):
    """pandas writes a categorical of fewer than 128 values with int8 codes, each file (or a
    writer each row group) its own dictionary: together they held more values than int8
    indices hold, and every mode ended in Arrow's "requires a larger index type" (exit 1).
    OUT's column is a dictionary of int32 indices (the files' narrower ones, widened)."""
    groups, n = 4, 50  # row groups of 50 rows, each with a dictionary of its own
    note = pa.chunked_array(
        [
            pa.DictionaryArray.from_arrays(
                pa.array([(i * 7) % values if i % 9 else None for i in range(n)], index),
                pa.array([f"g{g}-{k}" for k in range(values)]),
            )
            for g in range(groups)
        ]
    )
    right = pa.table(
        {
            "t": np.arange(0, 2 * groups * n, 2),
            "sym": np.array(["A", "B"])[np.arange(groups * n) % 2],
            "note": note,
        }
    )
    keys = np.arange(-3, 2 * groups * n + 10, 3)
    left = pa.table({"t": keys, "sym": np.array(list("ABC"))[np.arange(len(keys)) % 3]})
    got, expected = _enrich_in(tmp_path, capsys, mode, left, right, n)
    assert got.schema.field("note").type == pa.dictionary(pa.int32(), pa.string())
    assert got["note"].cast(pa.string()).equals(expected["note"].cast(pa.string()))
    assert got["note"].null_count < len(keys) // 2  # (most rows matched)


@pytest.mark.parametrize("mode", [*MODES, "auto"])
def test_dictionaries_nested_in_structs_and_lists_of_several_row_groups(tmp_path, capsys, mode):
    """pyarrow reads a dictionary inside a struct or list of a file of several row groups
    only a row group at a time: held in memory (the mode ``auto`` takes for an unsorted
    RIGHT), RIGHT was refused ("Nested data conversions not implemented")."""
    n = 40
    inner = pa.dictionary(pa.int32(), pa.string())
    right = pa.table(
        {
            # not sorted but where it streams: auto holds it in memory
            "t": np.arange(n) * 2 if mode == "stream" else np.arange(n)[::-1] * 2,
            "sym": np.array(["A", "B"])[np.arange(n) % 2],
            "st": pa.array(
                [{"a": i, "s": ["x", "y", None][i % 3]} for i in range(n)],
                pa.struct([("a", pa.int32()), ("s", inner)]),
            ),
            "tags": pa.array([["p", "q"][: i % 3] for i in range(n)], pa.list_(inner)),
        }
    )
    keys = np.arange(-3, 2 * n, 3)
    left = pa.table({"t": keys, "sym": np.array(list("ABC"))[np.arange(len(keys)) % 3]})
    _enrich(
        tmp_path,
        capsys,
        left,
        right,
        "--on",
        "t",
        "--by",
        "sym",
        mode=mode,
        right_group=10,
        on="t",
        by="sym",
    )


@pytest.mark.parametrize("mode", [*MODES, "regroup"])
@pytest.mark.parametrize("nesting", ["struct", "list"])
def test_nested_int8_dictionaries_of_more_values_in_all_than_int8_holds(
    tmp_path, capsys, mode, nesting
):
    """A struct or list whose dictionary of int8 indices is each row group's own, more than
    127 values together: the gather's take ended every mode in Arrow's "requires a larger
    index type" (the join of the files read whole too). Widened at any depth, as at the
    top."""
    groups, n = 3, 20

    def values(g):  # row group g's own 60 values
        codes = pa.array([(i * 7) % 60 for i in range(n)], pa.int8())
        return pa.DictionaryArray.from_arrays(codes, [f"g{g}-{k}" for k in range(60)])

    if nesting == "struct":
        pieces = [
            pa.StructArray.from_arrays([pa.array(np.arange(n)), values(g)], names=["a", "s"])
            for g in range(groups)
        ]
    else:
        offsets = pa.array(np.arange(n + 1, dtype=np.int32))
        pieces = [pa.ListArray.from_arrays(offsets, values(g)) for g in range(groups)]
    right = pa.table(
        {
            "t": np.arange(groups * n) * 2,
            "sym": np.array(["A", "B"])[np.arange(groups * n) % 2],
            "nested": pa.chunked_array(pieces),
        }
    )
    keys = np.arange(-3, 2 * groups * n, 3)
    left = pa.table({"t": keys, "sym": np.array(list("ABC"))[np.arange(len(keys)) % 3]})
    got, expected = _enrich_in(tmp_path, capsys, mode, left, right, n)
    inner = got.schema.field("nested").type
    inner = inner.field("s").type if nesting == "struct" else inner.value_type
    assert inner == pa.dictionary(pa.int32(), pa.string())
    assert got["nested"].to_pylist() == expected["nested"].to_pylist()


@pytest.mark.parametrize("mode", [*MODES, "regroup"])
@pytest.mark.parametrize("strategy", ["backward", "nearest"])
def test_uuid_and_json_columns_of_a_file_without_an_arrow_schema(tmp_path, capsys, mode, strategy):
    """DuckDB stores UUID and JSON columns as parquet's logical types, with no Arrow schema:
    pyarrow reads them as extension types, which the footer's own mapping names by their
    storage types. enrich planned the storage types: OUT lost the extension type (LEFT's
    too), and spilled, regrouped or streamed with carries the run ended in a traceback
    (tables of two schemas)."""
    n = 60
    right = pa.table(
        {
            "t": np.arange(0, 2 * n, 2),
            "sym": np.array(["A", "B"])[np.arange(n) % 2],
            "id": pa.array([None if i % 5 == 0 else bytes([i]) * 16 for i in range(n)], pa.uuid()),
            "doc": pa.array([f'{{"x": {i}}}' for i in range(n)], pa.json_()),
        }
    )
    keys = np.arange(-3, 2 * n + 6, 3)
    left = pa.table(
        {
            "t": keys,
            "sym": np.array(list("ABC"))[np.arange(len(keys)) % 3],
            "event": pa.array([bytes([i]) * 16 for i in range(len(keys))], pa.uuid()),
        }
    )
    got, expected = _enrich_in(
        tmp_path, capsys, mode, left, right, 10, "--strategy", strategy, store_schema=False
    )
    meta = pq.read_metadata(tmp_path / "r.parquet")
    assert meta.schema.to_arrow_schema().field("id").type == pa.binary(16)  # the footer's
    # The reader's types (pyarrow 26: the extension types; 19, the floor: the storage ones),
    # LEFT's too, copied or encoded
    read = pq.read_schema(tmp_path / "r.parquet")
    assert got.schema.field("id").type == read.field("id").type
    assert got.schema.field("doc").type == read.field("doc").type
    assert (
        got.schema.field("event").type == pq.read_schema(tmp_path / "l.parquet").field("event").type
    )
    assert got.equals(expected)


@pytest.mark.parametrize("mode", [*MODES, "auto"])
def test_an_extension_by_column_is_refused_as_the_join_refuses_it(tmp_path, capsys, mode):
    """RIGHT's group count ran Arrow's dictionary_encode on its sample of a uuid by-column,
    which has no kernel for it: a traceback before the checks on zero rows spoke."""
    ids = pa.array([bytes([i % 3]) * 16 for i in range(6)], pa.uuid())
    pq.write_table(pa.table({"t": np.arange(6), "id": ids}), tmp_path / "l.parquet")
    pq.write_table(
        pa.table({"t": np.arange(6), "id": ids, "v": np.arange(6.0)}), tmp_path / "r.parquet"
    )
    code, stdout, stderr = run(
        "enrich",
        tmp_path / "l.parquet",
        tmp_path / "r.parquet",
        "-o",
        tmp_path / "o.parquet",
        "--on",
        "t",
        "--by",
        "id",
        "--device",
        "cpu",
        "--right-mode",
        mode,
        capsys=capsys,
    )
    assert code == 2 and stdout == "" and stderr.count("\n") == 1, stderr
    assert "must be a flat column" in stderr and "extension<arrow.uuid>" in stderr
    assert hidden(tmp_path) == []


@pytest.mark.parametrize("mode", MODES)
def test_an_empty_left_file(tmp_path, capsys, mode):
    """Zero rows in: zero rows out, with the columns (the spill's results once asserted)."""
    left = pa.table({"t": pa.array([], pa.int64()), "sym": pa.array([], pa.string())})
    right = pa.table({"t": [1, 2], "sym": ["A", "B"], "bid": [1.0, 2.0]})
    _enrich(tmp_path, capsys, left, right, "--on", "t", "--by", "sym", mode=mode, on="t", by="sym")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "kind", [pa.decimal128(10, 2), pa.decimal256(40, 0), pa.binary(3)], ids=str
)
def test_by_columns_of_decimals_and_fixed_size_binary(tmp_path, capsys, mode, kind):
    """Spilled, such a by-column is hashed to its partition by its bits (``_spill._bits``)."""
    import decimal

    names = [b"abc", b"xyz", b"abd"]

    def by(n):
        picks = [(i * 7) % 3 for i in range(n)]
        if pa.types.is_fixed_size_binary(kind):
            return pa.array([names[p] for p in picks], kind)
        return pa.array([decimal.Decimal(p * 100 + 1) for p in picks], kind)

    left = pa.table({"t": np.arange(0, 20, 2), "g": by(10)})
    right = pa.table({"t": np.arange(1, 31, 2), "g": by(15), "v": np.arange(15.0)})
    _enrich(tmp_path, capsys, left, right, "--on", "t", "--by", "g", mode=mode, on="t", by="g")


@pytest.mark.parametrize("mode", MODES)
def test_columns_named_with_dots(tmp_path, capsys, mode):
    """Row groups' statistics are found by counting leaves, not by dotted paths: ``a`` (a
    struct of ``b``, two leaves) before ``t.ime`` and ``a.b``."""
    left = pa.table(
        {
            "a": [{"b": i, "c": -i} for i in range(10)],
            "t.ime": np.arange(0, 20, 2),
            "a.b": list("abababaabb"),
        }
    )
    right = pa.table(
        {"t.ime": np.arange(1, 21, 2), "a.b": list("aabbabbaab"), "v.w": np.arange(10.0)}
    )
    _enrich(
        tmp_path,
        capsys,
        left,
        right,
        "--on",
        "t.ime",
        "--by",
        "a.b",
        mode=mode,
        on="t.ime",
        by="a.b",
    )


@pytest.mark.parametrize("side", ["LEFT", "RIGHT"])
def test_a_file_with_two_columns_of_one_name_exits_2(tmp_path, capsys, side):
    twice = pa.Table.from_arrays(
        [pa.array([1, 5]), pa.array([1, 2]), pa.array([3, 4])], names=["t", "v", "v"]
    )
    other = pa.table({"t": [0, 4]})
    left, right = (twice, other) if side == "LEFT" else (other, twice)
    pq.write_table(left, tmp_path / "l.parquet")
    pq.write_table(right, tmp_path / "r.parquet")
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
        capsys=capsys,
    )
    path = tmp_path / ("l.parquet" if side == "LEFT" else "r.parquet")
    assert code == 2
    assert stderr == (
        f"asofgpu enrich: error: {side} {path} has more than one column named 'v'; rename "
        f"them so that each name is one column\n"
    )
    assert hidden(tmp_path) == []
