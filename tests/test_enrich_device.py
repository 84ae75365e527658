"""``asofgpu enrich --device cuda`` with its parquet read and written by libcudf (``_device_io``).

``gpu`` tests run the command on the device and on the cpu over the same files and ask for
equal tables (pyarrow reads both, LEFT's row order), or, where the device path steps aside,
for the host pipeline's log line and the same result. The choice of path is a function of the
options, the sources' footers and the backend's name, tested here without a GPU; so is the
building of libcudf's reader and writer options, where pylibcudf is installed.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import time
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import unhashable_extension_type
from asofgpu._backend import cudasim_enabled
from asofgpu._staleness import Staleness
from asofgpu.enrich import Options
from asofgpu.enrich import _device_io as device_io
from asofgpu.enrich._checks import plan, tolerance_of
from asofgpu.enrich._device_io import (
    device_io_refusal,
    libcudf_refusal,
    libcudf_type,
    output_metadata,
    reader_options,
    wanted,
    writer_options,
)
from asofgpu.enrich._output import PARTIAL
from asofgpu.enrich._sources import Source
from enrich_cli import hidden, run

SYMBOLS = np.array(["A", "B", "C", "D", "E"])
KEYS = ["--on", "time", "--by", "symbol", "--right-mode", "memory"]


def _masked(rng, values, nulls: bool, type=None) -> pa.Array:
    """``values`` as Arrow, a tenth of them null when ``nulls``."""
    mask = rng.random(len(values)) < 0.1 if nulls else None
    return pa.array(values, type=type, mask=mask)


def quotes(n: int = 300, seed: int = 1, nulls: bool = False, tz: str | None = None) -> pa.Table:
    """RIGHT: few distinct times (ties, which RIGHT's row order decides), a string and an
    integer by-key, and a payload of every type the device path writes."""
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "time": _masked(rng, rng.integers(0, 60, n) * 10**9, nulls, pa.timestamp("ns", tz)),
            "symbol": _masked(rng, rng.choice(SYMBOLS, n), nulls),
            "code": _masked(rng, rng.integers(0, 5, n).astype(np.int32), nulls),
            "bid": _masked(rng, rng.random(n), nulls),
            "size": _masked(rng, rng.integers(1, 100, n).astype(np.uint16), nulls),
            "venue": _masked(rng, rng.choice(["X", "Y", "ZZ"], n), nulls),
            "firm": _masked(rng, rng.random(n) < 0.5, nulls),
            "day": _masked(rng, rng.integers(0, 30, n).astype(np.int32), nulls, pa.date32()),
            "stamp": _masked(rng, rng.integers(0, 10**12, n), nulls, pa.timestamp("us", tz)),
        }
    )


def trades(n: int = 200, seed: int = 2, nulls: bool = False, tz: str | None = None) -> pa.Table:
    """LEFT: its own ``bid`` (the attached one becomes ``bid_right``)."""
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "time": _masked(rng, rng.integers(0, 65, n) * 10**9, nulls, pa.timestamp("ns", tz)),
            "symbol": _masked(rng, rng.choice(SYMBOLS, n), nulls),
            "code": _masked(rng, rng.integers(0, 5, n).astype(np.int32), nulls),
            "qty": _masked(rng, rng.integers(1, 1000, n), nulls),
            "bid": _masked(rng, rng.random(n), nulls),
            "note": _masked(rng, rng.choice(["buy", "sell", ""], n), nulls),
        }
    )


def write(table: pa.Table, path: Path, row_group_size: int = 64) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, row_group_size=row_group_size)
    return path


# --------------------------------------------------------------------------- on a GPU


def enrich_both(tmp_path: Path, left: Path, right: Path, *flags, capsys) -> dict:
    """``asofgpu enrich`` of ``left`` and ``right`` with ``flags`` on the device and on the
    cpu: for each, (OUT, stdout, stderr)."""
    pytest.importorskip("pylibcudf")
    done = {}
    for device in ("cuda", "cpu"):
        out = tmp_path / (f"{device}.parquet" if left.is_file() else f"{device}_out")
        code, stdout, stderr = run(
            "enrich", left, right, "-o", out, *flags, "--device", device, capsys=capsys
        )
        assert code == 0, stderr
        done[device] = out, stdout, stderr
    assert hidden(tmp_path) == []
    return done


def assert_same_output(got: Path, want: Path) -> None:
    """The same files (a file, or a folder's files at the same paths), read as equal tables."""
    if want.is_file():
        assert pq.read_table(got).equals(pq.read_table(want))
        return
    names = sorted(p.relative_to(want) for p in want.rglob("*") if p.is_file())
    assert sorted(p.relative_to(got) for p in got.rglob("*") if p.is_file()) == names
    for name in names:
        if name.suffix == ".parquet":
            assert pq.read_table(got / name).equals(pq.read_table(want / name)), name


def assert_on_device(done: dict) -> None:
    """The device run read and wrote with libcudf, and its result is the cpu run's."""
    out, stdout, stderr = done["cuda"]
    assert "on the device with libcudf" in stderr
    assert "LEFT's     columns read and written again on the device by libcudf" in stdout
    assert "backend    cuda" in stdout
    assert_same_output(out, done["cpu"][0])


def assert_on_host(done: dict, why: str) -> None:
    """The device run stepped aside for ``why``, and its result is the cpu run's."""
    out, stdout, stderr = done["cuda"]
    assert f"parquet read and written on the host: {why}" in stderr
    assert "libcudf" not in stdout and "backend    cuda" in stdout
    assert_same_output(out, done["cpu"][0])


@pytest.mark.gpu
@pytest.mark.parametrize(
    "flags",
    [
        [],
        ["--strategy", "forward"],
        ["--strategy", "nearest"],
        ["--tolerance", "3s"],
        ["--tolerance", "2000000000", "--strategy", "nearest"],
        ["--no-exact-matches"],
        ["--strategy", "forward", "--no-exact-matches", "--tolerance", "5s"],
        ["--columns", "venue,bid,time", "--suffix", "_q"],
        ["--compression", "zstd"],
        ["--compression", "none"],
        ["--chunk-rows", "37"],
    ],
)
def test_one_left_file_equals_the_cpu_run(tmp_path, capsys, flags):
    left = write(trades(), tmp_path / "in" / "trades.parquet")
    right = write(quotes(), tmp_path / "in" / "quotes.parquet")
    assert_on_device(enrich_both(tmp_path, left, right, *KEYS, *flags, capsys=capsys))


@pytest.mark.gpu
@pytest.mark.parametrize("strategy", ["backward", "forward", "nearest"])
@pytest.mark.parametrize(
    "by", [["--by", "symbol"], ["--by", "code"], ["--by", "symbol,code"], []], ids=str
)
def test_nulls_in_keys_and_payload_and_each_kind_of_by_key(tmp_path, capsys, strategy, by):
    left = write(trades(nulls=True), tmp_path / "in" / "trades.parquet")
    right = write(quotes(nulls=True), tmp_path / "in" / "quotes.parquet")
    done = enrich_both(
        tmp_path,
        left,
        right,
        "--on",
        "time",
        *by,
        "--strategy",
        strategy,
        "--right-mode",
        "memory",
        capsys=capsys,
    )
    assert_on_device(done)
    assert pq.read_table(done["cuda"][0])["venue"].null_count > 0


@pytest.mark.gpu
def test_timestamps_in_utc(tmp_path, capsys):
    left = write(trades(tz="UTC"), tmp_path / "in" / "trades.parquet")
    right = write(quotes(tz="UTC"), tmp_path / "in" / "quotes.parquet")
    done = enrich_both(tmp_path, left, right, *KEYS, "--tolerance", "4s", capsys=capsys)
    assert_on_device(done)
    assert pq.read_table(done["cuda"][0]).schema.field("stamp").type == pa.timestamp("us", "UTC")


@pytest.mark.gpu
def test_a_folder_of_left_files_gives_a_folder_and_right_files_read_in_order(tmp_path, capsys):
    """Sub-folders (not partitions), a LEFT file without rows, and RIGHT in three files whose
    equal keys fall to their order."""
    left = tmp_path / "left"
    write(trades(seed=3), left / "2026" / "a.parquet")
    write(trades(seed=4), left / "2026" / "b.parquet", row_group_size=17)
    write(trades(seed=5).slice(0, 0), left / "empty.parquet")
    right = tmp_path / "right"
    for i in range(3):
        write(quotes(seed=10 + i), right / f"q{i}.parquet")
    done = enrich_both(tmp_path, left, right, *KEYS, "--strategy", "nearest", capsys=capsys)
    assert_on_device(done)
    assert (done["cuda"][0] / "empty.parquet").is_file()


@pytest.mark.gpu
def test_auto_takes_the_device_path_when_right_fits(tmp_path, capsys):
    left = write(trades(), tmp_path / "in" / "trades.parquet")
    right = write(quotes(), tmp_path / "in" / "quotes.parquet")
    pytest.importorskip("pylibcudf")
    out = tmp_path / "auto.parquet"
    code, stdout, stderr = run(
        "enrich", left, right, "-o", out, "--on", "time", "--by", "symbol", capsys=capsys
    )
    assert code == 0 and "on the device with libcudf" in stderr and "libcudf" in stdout
    cpu = tmp_path / "cpu.parquet"
    keys = ["--on", "time", "--by", "symbol", "--device", "cpu"]
    assert run("enrich", left, right, "-o", cpu, *keys, capsys=capsys)[0] == 0
    assert pq.read_table(out).equals(pq.read_table(cpu))


@pytest.mark.gpu
def test_hive_partitions_fall_back_to_the_host(tmp_path, capsys):
    left = write(trades(), tmp_path / "in" / "trades.parquet")
    right = tmp_path / "right"
    for i, day in enumerate(("2026-11-26", "2026-11-27")):
        write(quotes(seed=20 + i), right / f"date={day}" / "q.parquet")
    done = enrich_both(tmp_path, left, right, *KEYS, capsys=capsys)
    assert_on_host(done, "RIGHT's partition folders make columns ('date')")


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("flags", "why"),
    [
        (["--compression", "zstd:3"], "--compression zstd:3: libcudf's parquet writer takes no"),
        (["--tolerance-column", "qty"], "--tolerance-column 'qty'"),
        (["--by", "bid"], "by columns LEFT 'bid' (double)"),
    ],
)
def test_what_the_device_path_cannot_do_falls_back_to_the_host(tmp_path, capsys, flags, why):
    left = write(trades(), tmp_path / "in" / "trades.parquet")
    right = write(quotes(), tmp_path / "in" / "quotes.parquet")
    keys = ["--on", "time", "--right-mode", "memory"] + (
        [] if "--by" in flags else ["--by", "symbol"]
    )
    assert_on_host(enrich_both(tmp_path, left, right, *keys, *flags, capsys=capsys), why)


# --------------------------------------------------------------------------- no GPU needed


def refusal(
    tmp_path: Path,
    left: pa.Table | None = None,
    right: pa.Table | Path | None = None,
    backend: str = "cuda",
    **options,
) -> str | None:
    """``device_io_refusal`` of ``left`` and ``right`` (a table, or a source already written)
    joined on time by symbol with ``options``."""
    left_path = write(trades() if left is None else left, tmp_path / "l.parquet")
    right_path = (
        right
        if isinstance(right, Path)
        else write(quotes() if right is None else right, tmp_path / "r.parquet")
    )
    options = Options(
        left_path,
        right_path,
        tmp_path / "o.parquet",
        left_on="time",
        right_on="time",
        **{"left_by": ["symbol"], "right_by": ["symbol"], **options},
    )
    left_source, right_source = Source.find(left_path, "LEFT"), Source.find(right_path, "RIGHT")
    return device_io_refusal(
        options,
        plan(options, left_source, right_source),
        tolerance_of(options, left_source, right_source),
        left_source,
        right_source,
        backend,
    )


def test_the_device_path_takes_plain_runs(tmp_path):
    assert refusal(tmp_path) is None
    assert refusal(tmp_path, tolerance="2s", strategy="nearest", allow_exact_matches=False) is None
    assert refusal(tmp_path, left_by=["code"], right_by=["code"], compression="gzip") is None
    assert refusal(tmp_path, left_by=[], right_by=[], columns=["venue"], suffix="_q") is None
    assert refusal(tmp_path, trades(tz="UTC"), quotes(tz="UTC")) is None


def with_type(table: pa.Table, name: str, kind: pa.DataType) -> pa.Table:
    at = table.schema.get_field_index(name)
    return table.set_column(at, name, table[name].cast(kind))


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (dict(backend="cpu (auto: no usable GPU)"), "the join runs on cpu (auto: no usable GPU)"),
        (
            dict(tolerance_column="qty", left_by=["symbol"]),
            "--tolerance-column 'qty': the device takes one tolerance for every row",
        ),
        (dict(tolerance="1mo"), "--tolerance 1mo: calendar units are measured on the host"),
        (
            dict(compression="zstd", compression_level=3),
            "--compression zstd:3: libcudf's parquet writer takes no level",
        ),
        (dict(right=quotes().slice(0, 0)), "RIGHT has no rows"),
        (
            dict(left=with_type(trades(), "bid", pa.decimal128(12, 6))),
            "LEFT column 'bid' is decimal128(12, 6), which libcudf does not write back",
        ),
        (
            dict(right=with_type(quotes(), "venue", pa.large_string())),
            "RIGHT column 'venue' is large_string, which libcudf does not write back",
        ),
        (
            dict(right=with_type(quotes(), "venue", pa.dictionary(pa.int32(), pa.string()))),
            "RIGHT column 'venue' is dictionary<values=string, indices=int32, ordered=0>",
        ),
        (
            dict(right=quotes().append_column("age", pa.array(np.arange(300), pa.duration("ms")))),
            "RIGHT column 'age' is duration[ms]",
        ),
        (
            dict(right=with_type(quotes(), "stamp", pa.timestamp("us", "Europe/Paris"))),
            "RIGHT column 'stamp' is timestamp[us, tz=Europe/Paris]",
        ),
        (
            dict(right=with_type(quotes(), "stamp", pa.timestamp("us", "UTC"))),
            "OUT holds timestamps in UTC and without a time zone; libcudf writes one kind",
        ),
        (
            dict(left_by=["bid"], right_by=["bid"]),
            "by columns LEFT 'bid' (double) and RIGHT 'bid' (double): on the device both",
        ),
        (
            dict(left=with_type(trades(), "code", pa.int64()), left_by=["code"], right_by=["code"]),
            "by columns LEFT 'code' (int64) and RIGHT 'code' (int32)",
        ),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_what_the_device_path_refuses_and_why(tmp_path, change, why):
    got = refusal(tmp_path, **change)
    assert got is not None and got.startswith(why), got


def test_partition_folders_are_refused_and_unread_columns_do_not_count(tmp_path):
    right = tmp_path / "right"
    write(quotes(), right / "date=2026-11-27" / "q.parquet")
    assert refusal(tmp_path, right=right) == (
        "RIGHT's partition folders make columns ('date'); libcudf's do not"
    )
    # A column of a type the device path cannot write, left out by --columns, is never read.
    odd = with_type(quotes(), "venue", pa.large_string())
    assert refusal(tmp_path, right=odd, columns=["bid"]) is None


def test_right_files_of_other_schemas_are_read_on_the_host(tmp_path):
    """libcudf reads RIGHT's files in one call, as of one schema: files the host reads as
    one though their columns' order or forms differ are left to the host."""
    right = tmp_path / "right"
    write(quotes().slice(0, 150), right / "a.parquet")
    reordered = quotes().slice(150)
    write(reordered.select(reordered.column_names[::-1]), right / "b.parquet")
    assert refusal(tmp_path, right=right) == (
        "RIGHT's files order or type their columns otherwise (b.parquet beside a.parquet); "
        "libcudf reads files of one schema"
    )
    write(quotes().slice(150), right / "b.parquet")
    assert refusal(tmp_path, right=right) is None
    # A pandas categorical (int8 indices, read with int32 ones) is no other schema (not
    # attached here: libcudf writes no dictionary back)
    categorical = with_type(quotes(), "venue", pa.dictionary(pa.int8(), pa.string()))
    assert refusal(tmp_path, right=categorical, columns=["bid"]) is None


def test_wanted_only_where_the_join_may_run_on_the_gpu():
    def options(device: str) -> Options:
        return Options("l", "r", "o", left_on="t", right_on="t", device=device)

    assert not wanted(options("cpu")) and not wanted(options("python"))
    assert wanted(options("cuda"))  # then the log says why not, when it cannot
    assert wanted(options("auto")) == (find_spec("pylibcudf") is not None)


def test_libcudf_refusal_in_the_simulator_and_without_pylibcudf(monkeypatch):
    options = Options("l", "r", "o", left_on="t", right_on="t", device="cuda")
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    assert libcudf_refusal(options) == (
        "the kernels run in the CUDA simulator (NUMBA_ENABLE_CUDASIM), not on a GPU"
    )
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM")
    if find_spec("pylibcudf") is None:
        assert libcudf_refusal(options).startswith("pylibcudf does not import (")


@pytest.fixture
def plc(monkeypatch):
    """pylibcudf, where it is installed (it imports without a GPU), outside the simulator."""
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    return pytest.importorskip("pylibcudf")


def test_libcudf_refusal_asks_libcudf_for_the_codec(plc):
    def options(codec: str | None) -> Options:
        return Options("l", "r", "o", left_on="t", right_on="t", compression=codec)

    writes = plc.io.parquet.is_supported_write_parquet
    for codec, name in (("zstd", "ZSTD"), ("brotli", "BROTLI"), (None, "SNAPPY")):
        supported = writes(getattr(plc.io.types.CompressionType, name))
        assert (libcudf_refusal(options(codec)) is None) == supported, codec


def test_every_type_taken_is_a_libcudf_type(plc):
    taken = [
        pa.int8(),
        pa.uint64(),
        pa.float32(),
        pa.bool_(),
        pa.string(),
        pa.date32(),
        pa.timestamp("ms"),
        pa.timestamp("ns", "UTC"),
    ]
    for kind in taken:
        assert isinstance(getattr(plc.TypeId, libcudf_type(kind)), plc.TypeId), kind


def test_reader_and_writer_options_build_without_a_gpu(plc, tmp_path):
    """The builders' names and argument types, as this pylibcudf has them (a GPU is needed
    only to read and write)."""
    path = write(trades(), tmp_path / "l.parquet")
    assert isinstance(
        reader_options(plc, [str(path)], ["time", "symbol"]),
        plc.io.parquet.ParquetReaderOptions,
    )
    T = plc.TypeId
    columns = [
        plc.Column(plc.DataType(kind), 0, None, None, 0, 0, [], validate=False)
        for kind in (T.TIMESTAMP_NANOSECONDS, T.STRING, T.FLOAT64)
    ]
    table = plc.Table(columns)
    fields = [  # a LEFT column declared required stays so
        pa.field("time", pa.timestamp("ns"), nullable=False),
        pa.field("symbol", pa.string()),
        pa.field("bid_right", pa.float64()),
    ]
    metadata = output_metadata(plc, table, fields)
    assert [column.get_name() for column in metadata.column_metadata] == [f.name for f in fields]
    for codec in (None, "none", "snappy", "lz4", "zstd"):
        built = writer_options(plc, str(tmp_path / "o.parquet"), table, fields, codec, False, 100)
        assert isinstance(built, plc.io.parquet.ParquetWriterOptions)
    pandas = {"pandas": '{"index_columns": []}'}  # LEFT's pandas metadata, kept in OUT
    built = writer_options(
        plc, str(tmp_path / "o.parquet"), table, fields, None, False, 100, pandas
    )
    assert isinstance(built, plc.io.parquet.ParquetWriterOptions)


def test_importing_enrich_imports_no_cudf():
    code = (
        "import sys, asofgpu.enrich, asofgpu.enrich._device_io; "
        "print(sorted({'pylibcudf', 'cudf', 'cupy'} & set(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_simulator_says_why_the_host_reads(tmp_path, capsys):
    """Under NUMBA_ENABLE_CUDASIM (make test's simulator pass) --device cuda is the simulator:
    the log says so, and the host pipeline's result is the cpu run's."""
    if not cudasim_enabled():
        pytest.skip("the simulator pass runs this (NUMBA_ENABLE_CUDASIM=1)")
    left = write(trades(40), tmp_path / "in" / "trades.parquet")
    right = write(quotes(60), tmp_path / "in" / "quotes.parquet")
    outs = {}
    for device in ("cuda", "cpu"):
        outs[device] = tmp_path / f"{device}.parquet"
        code, _, stderr = run(
            "enrich", left, right, "-o", outs[device], *KEYS, "--device", device, capsys=capsys
        )
        assert code == 0, stderr
        if device == "cuda":
            assert "parquet read and written on the host: the kernels run in the CUDA" in stderr
    assert pq.read_table(outs["cuda"]).equals(pq.read_table(outs["cpu"]))


# --------------------------------------------------------------------------- commit and rollback
# ``on_device`` (tests/fakes.py) sends a run down the device path with a DeviceRun in the
# place of ``device_io.enrich``: neither a GPU nor libcudf's parquet is here.


class DeviceRun:
    """``device_io.enrich`` without a GPU: into each path ``target`` gives, a real parquet
    file (LEFT's rows and a column saying who wrote it); then, after the first file,
    ``fail``: "unsupported" (what libcudf cannot do, found on the way) or "disk full" (an
    OSError while writing, through ``_device_io``'s own translation)."""

    WHY = "libcudf reads RIGHT column 'bid' (double) as FLOAT32"

    def __init__(self, fail: str | None = None):
        self.fail = fail
        self.paths: list[str] = []  # the paths written, as given
        self.written: dict[str, bytes] = {}  # LEFT file's relative path -> the bytes written

    def __call__(
        self, options, the_plan, tolerance, left, right, target, out, rows, every, progress
    ):
        progress.log("reading and writing on the device with libcudf (a fake)")
        for part in left.parts:
            path = target.path_for(part.relative)
            self.paths.append(path)
            table = pq.read_table(part.path)
            pq.write_table(
                table.append_column("by", pa.array(["the fake device"] * part.rows)), path
            )
            with open(path, "rb") as written:
                self.written[part.relative] = written.read()
            if self.fail == "unsupported":
                raise device_io.Unsupported(self.WHY)
            if self.fail == "disk full":
                with device_io._writing(out), open(path, "ab") as more:
                    more.write(b"half a page")
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return device_io.Done(
            Staleness(pa.array([], pa.int64())),
            time.perf_counter(),
            rows=left.rows,
            largest=max(p.rows for p in left.parts),
        )


def sources(tmp_path: Path, layout: str) -> tuple[Path, Path]:
    """LEFT (one file, or a folder of two) and RIGHT, in ``tmp_path/in``; OUT goes beside."""
    right = write(quotes(60), tmp_path / "in" / "quotes.parquet")
    if layout == "file":
        return write(trades(40), tmp_path / "in" / "trades.parquet"), right
    left = tmp_path / "in" / "trades"
    write(trades(40, seed=3), left / "a.parquet")
    write(trades(30, seed=4), left / "sub" / "b.parquet")
    return left, right


def out_of(tmp_path: Path, left: Path, name: str) -> Path:
    return tmp_path / (f"{name}.parquet" if left.is_file() else name)


def assert_hidden_beside(path: str, out: Path) -> None:
    """``path`` is inside the hidden file or folder beside ``out`` that a run writes into."""
    hidden_out = Path(path)
    while hidden_out.parent != out.parent:
        hidden_out = hidden_out.parent
    name = hidden_out.name
    assert name.startswith(f".{out.name}.") and name.endswith(PARTIAL), path


@pytest.mark.parametrize("layout", ["file", "folder"])
def test_the_device_run_is_committed_as_written(tmp_path, capsys, on_device, layout):
    """What the (fake, no GPU) device run wrote into the hidden target is renamed onto OUT
    as it is, nothing hidden is left, and the summary says the device did the I/O."""
    left, right = sources(tmp_path, layout)
    out = out_of(tmp_path, left, "out")
    fake = DeviceRun()
    on_device(fake)
    code, stdout, stderr = run("enrich", left, right, "-o", out, *KEYS, capsys=capsys)
    assert code == 0, stderr
    for path in fake.paths:
        assert_hidden_beside(path, out)
        assert not os.path.exists(path)  # renamed
    assert hidden(tmp_path) == []
    if layout == "file":
        assert out.read_bytes() == fake.written["trades.parquet"]
    else:
        files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
        assert files == sorted(fake.written)
        for relative, written in fake.written.items():
            assert (out / relative).read_bytes() == written
    assert "LEFT's     columns read and written again on the device by libcudf" in stdout
    assert "right side read and prepared on the device" in stdout
    assert "parquet read and written on the host" not in stderr


@pytest.mark.parametrize("layout", ["file", "folder"])
def test_unsupported_on_the_device_starts_again_on_the_host(tmp_path, capsys, on_device, layout):
    """The (fake, no GPU) device run writes its first file, then finds what libcudf cannot do:
    its hidden output goes, the host pipeline runs from the start, and OUT is the cpu run's."""
    left, right = sources(tmp_path, layout)
    cpu = out_of(tmp_path, left, "cpu")
    code, _, stderr = run("enrich", left, right, "-o", cpu, *KEYS, "--device", "cpu", capsys=capsys)
    assert code == 0, stderr
    out = out_of(tmp_path, left, "out")
    fake = DeviceRun("unsupported")
    on_device(fake)
    code, stdout, stderr = run("enrich", left, right, "-o", out, *KEYS, capsys=capsys)
    assert code == 0, stderr
    assert len(fake.paths) == 1
    assert_hidden_beside(fake.paths[0], out)
    assert not os.path.exists(fake.paths[0])
    assert hidden(tmp_path) == []
    logged = f"parquet read and written on the host: {DeviceRun.WHY}; starting again"
    assert logged in stderr
    assert stderr.index(logged) < stderr.index(f"reading RIGHT {right}")  # then the host
    assert "libcudf" not in stdout
    assert_same_output(out, cpu)


@pytest.mark.parametrize(("layout", "before"), [("file", False), ("file", True), ("folder", True)])
def test_a_failed_write_on_the_device_leaves_nothing(tmp_path, capsys, on_device, layout, before):
    """An OSError while the (fake, no GPU) device run writes is OUT's failure, not a rollback:
    exit code 1, nothing hidden left, and OUT absent, or as it was before."""
    left, right = sources(tmp_path, layout)
    out = out_of(tmp_path, left, "out")
    if before:
        code, _, stderr = run(
            "enrich", left, right, "-o", out, *KEYS, "--device", "cpu", capsys=capsys
        )
        assert code == 0, stderr
    was = {p: p.read_bytes() for p in sorted([out, *out.rglob("*")]) if p.is_file()}
    fake = DeviceRun("disk full")
    on_device(fake)
    code, _, stderr = run("enrich", left, right, "-o", out, *KEYS, capsys=capsys)
    assert code == 1, stderr
    said = f"cannot write OUT {os.path.realpath(out)}: "
    assert said in stderr and f"{os.strerror(errno.ENOSPC)}; nothing was written" in stderr
    assert "parquet read and written on the host" not in stderr
    assert len(fake.paths) == 1 and not os.path.exists(fake.paths[0])
    assert hidden(tmp_path) == []
    assert out.exists() == before
    assert {p: p.read_bytes() for p in sorted([out, *out.rglob("*")]) if p.is_file()} == was


def test_an_extension_type_is_no_libcudf_type_even_one_without_a_hash():
    """A Python extension type may not hash (pyarrow's own examples define none): looked up
    among libcudf's types it raised TypeError before any refusal could name it."""

    unhashable = unhashable_extension_type(pa.int64(), "asofgpu.test.device_unhashable")
    assert libcudf_type(unhashable) is None
    assert libcudf_type(pa.int64()) == "INT64"
