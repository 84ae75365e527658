"""Property tests of ``asofgpu enrich`` streaming files sorted by (by..., on) ("grouped").

Hypothesis draws small LEFT and RIGHT tables sorted by their by columns and then their key
(one or two by columns of text and/or int32, keys int64 or timestamp[ns] with many equal
values and nulls, groups on one side only), writes them as one file or several, in tiny row
groups, with and without dictionary pages, text as string or dictionary columns, and checks
that ``--right-mode stream`` (and ``auto``) with tiny ``--chunk-rows`` writes what
``asofgpu.join_asof`` returns, for every strategy, with and without exact matches and a
tolerance. A RIGHT out of order inside a row group after the first (where the statistics
cannot show it) must exit 2, naming the first row out of order, even past LEFT's last row,
and ``auto`` must then get join_asof's answer without streaming. The ``@example`` cases are
bugs these tests found in cdf7d78 (fixed in 500d6a1).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace
from pathlib import Path
from tempfile import TemporaryDirectory

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

import asofgpu as ag
from asofgpu._backend import walks
from enrich_cli import run

TEXT = ["", "B", "a", "ab", "é"]  # byte-wise: "" < "B" < "a" < "ab" < "é"
INTS = [-3, 0, 1, 2, 7]
KEY_TYPES = {"int64": pa.int64(), "ns": pa.timestamp("ns")}

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@dataclass
class Side:
    """A side's rows, sorted by (by..., t), and how they are written."""

    table: pa.Table
    by: list[str]
    group_rows: int  # row_group_size
    dictionary: bool  # dictionary pages (pq.write_table's default)
    categorical: bool  # text by columns of an Arrow dictionary type
    cuts: list[int]  # where one file ends and the next begins (none: a single file)

    def write(self, path: Path) -> Path:
        table = self.table
        for name in self.by if self.categorical else ():
            if pa.types.is_string(table.schema.field(name).type):
                i = table.schema.get_field_index(name)
                table = table.set_column(i, name, table.column(i).dictionary_encode())
        if not self.cuts:
            path = path.with_suffix(".parquet")
            pq.write_table(
                table, path, row_group_size=self.group_rows, use_dictionary=self.dictionary
            )
            return path
        path.mkdir()
        ends = [0, *self.cuts, table.num_rows]
        for i, (start, stop) in enumerate(zip(ends, ends[1:])):
            pq.write_table(
                table.slice(start, stop - start),
                path / f"part-{i}.parquet",
                row_group_size=self.group_rows,
                use_dictionary=self.dictionary,
            )
        return path


def _read(path: Path) -> pa.Table:
    """A file, or a folder's files in the order of their names."""
    if path.is_file():
        return pq.read_table(path)
    return pa.concat_tables([pq.read_table(p) for p in sorted(path.rglob("*.parquet"))])


@dataclass
class Case:
    left: Side
    right: Side
    key: str  # a name in KEY_TYPES
    chunk_rows: int
    copied: bool  # LEFT's columns copied into OUT as they are, or read and encoded again


def _sorted(table: pa.Table, by: list[str]) -> pa.Table:
    """Sorted by (by..., t) as pyarrow sorts: nulls of t last within their group."""
    return table.sort_by([(c, "ascending") for c in (*by, "t")])


@st.composite
def cases(draw, right_rows: int = 0, right_group_rows: int = 1) -> Case:
    """Both sides; RIGHT of at least ``right_rows`` rows, in row groups of at least
    ``right_group_rows``."""
    kinds = draw(st.lists(st.sampled_from(["text", "int"]), min_size=1, max_size=2))
    # A few values of each by column, so that groups repeat and some are on one side only.
    pools = [
        draw(
            st.lists(
                st.sampled_from(TEXT if k == "text" else INTS), min_size=1, max_size=3, unique=True
            )
        )
        for k in kinds
    ]
    key = draw(st.sampled_from(sorted(KEY_TYPES)))
    keys = st.integers(-1, 6).map(lambda k: None if k < 0 else k)  # many equal, some null
    renamed = draw(st.booleans())

    def side(names: list[str], payload: str, least: int, most: int, group_rows: int) -> Side:
        rows = draw(
            st.lists(
                st.tuples(*[st.sampled_from(p) for p in pools], keys), min_size=least, max_size=most
            )
        )
        columns = {
            name: pa.array([r[i] for r in rows], pa.string() if kind == "text" else pa.int32())
            for i, (name, kind) in enumerate(zip(names, kinds))
        }
        columns["t"] = pa.array([r[-1] for r in rows], pa.int64()).cast(KEY_TYPES[key])
        columns[payload] = pa.array(
            range(len(rows)), pa.float64() if payload == "x" else pa.int64()
        )
        cuts = draw(st.lists(st.integers(0, len(rows)), max_size=2))
        return Side(
            _sorted(pa.table(columns), names),
            names,
            draw(st.integers(group_rows, 5)),
            draw(st.booleans()),
            draw(st.booleans()),
            sorted(cuts),
        )

    by = [f"g{i}" for i in range(len(kinds))]
    return Case(
        side([f"l{i}" for i in range(len(kinds))] if renamed else by, "id", 0, 20, 1),
        side(by, "x", right_rows, 24, right_group_rows),
        key,
        draw(st.integers(1, 10)),
        draw(st.booleans()),
    )


@st.composite
def options(draw) -> tuple[list[str], dict]:
    """(CLI flags, the join_asof arguments they mean)."""
    strategy = draw(st.sampled_from(["backward", "forward", "nearest"]))
    exact = draw(st.booleans())
    tolerance = draw(st.one_of(st.none(), st.integers(0, 3)))
    flags = ["--strategy", strategy] + ([] if exact else ["--no-exact-matches"])
    if tolerance is not None:
        flags += ["--tolerance", str(tolerance)]  # a number: in the key's own unit
    return flags, {"strategy": strategy, "allow_exact_matches": exact, "tolerance": tolerance}


@contextlib.contextmanager
def _files(case: Case):
    """(folder, LEFT, RIGHT): the case written, and LEFT's columns reaching OUT the way the
    case says (what the ``left_columns`` fixture does, which hypothesis cannot use)."""
    copy_min_group_rows = 1 if case.copied else 1 << 62
    with (
        TemporaryDirectory(prefix="grouped-") as name,
        walks.overridden(copy_min_group_rows=copy_min_group_rows, copy_min_group_bytes=1 << 62),
    ):
        folder = Path(name)
        yield folder, case.left.write(folder / "l"), case.right.write(folder / "r")


def _enrich(
    case: Case, left: Path, right: Path, out: Path, mode: str, flags: list[str], capsys
) -> tuple[int, str, str]:
    return run(
        "enrich",
        left,
        right,
        "-o",
        out,
        "--on",
        "t",
        "--left-by",
        ",".join(case.left.by),
        "--right-by",
        ",".join(case.right.by),
        "--device",
        "cpu",
        "--right-mode",
        mode,
        "--chunk-rows",
        case.chunk_rows,
        "-q",
        *flags,
        capsys=capsys,
    )


def _where(path: Path, row: int) -> str:
    """Row ``row`` of a file, or of a folder's files in turn, as enrich's messages name it."""
    if path.is_file():
        return f"row {row:,}"
    for file in sorted(path.glob("*.parquet")):
        rows = pq.read_metadata(file).num_rows
        if row < rows:
            return f"row {row:,} of {file}"
        row -= rows
    raise AssertionError("past the files")


def _decoded(table: pa.Table) -> pa.Table:
    return pa.table(
        [c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c for c in table.columns],
        names=table.column_names,
    )


def _same_as_join_asof(case: Case, left: Path, right: Path, out: Path, join: dict) -> None:
    """OUT is join_asof's answer; dictionary columns compared by their values (a file's
    dictionaries are its writer's choice)."""
    expected = ag.join_asof(
        _read(left),
        _read(right),
        on="t",
        by_left=case.left.by,
        by_right=case.right.by,
        device="cpu",
        **join,
    )
    got = _read(out)
    assert got.schema == expected.schema
    assert _decoded(got).equals(_decoded(expected))


def _check(case: Case, flags: list[str], join: dict, mode: str, capsys) -> None:
    with _files(case) as (folder, left, right):
        out = folder / ("o.parquet" if left.is_file() else "o")
        code, _, stderr = _enrich(case, left, right, out, mode, flags, capsys)
        assert code == 0, stderr
        _same_as_join_asof(case, left, right, out, join)


def _side(by: list[str], group_rows: int, payload: str, **columns) -> Side:
    """A side of an explicit example: by columns of text, keys int64, its payload added
    (RIGHT's "x", LEFT's "id")."""
    table = pa.table(
        {
            **{name: pa.array(columns[name], pa.string()) for name in by},
            "t": pa.array(columns["t"], pa.int64()),
        }
    )
    table = table.append_column(
        payload, pa.array(range(table.num_rows), pa.float64() if payload == "x" else pa.int64())
    )
    return Side(table, by, group_rows, dictionary=True, categorical=False, cuts=[])


BACKWARD = (
    ["--strategy", "backward"],
    {"strategy": "backward", "allow_exact_matches": True, "tolerance": None},
)


@SETTINGS
@given(case=cases(), chosen=options())
# Found at cdf7d78: row groups ("", 0) ("", 0) | ("", 1) ("B", 0) pass for a tape (the key's
# ranges 0..0, 0..1), which stopped the stream at row 3 instead of streaming it as grouped.
@example(
    case=Case(
        _side(["l0"], 1, "id", l0=[], t=[]),
        _side(["g0"], 2, "x", g0=["", "", "", "B"], t=[0, 0, 1, 0]),
        "int64",
        chunk_rows=1,
        copied=False,
    ),
    chosen=BACKWARD,
)
def test_grouped_stream_equals_join_asof(case, chosen, capsys):
    _check(case, *chosen, "stream", capsys)


@settings(SETTINGS, max_examples=25)
@given(case=cases(), chosen=options())
def test_grouped_auto_equals_join_asof(case, chosen, capsys):
    _check(case, *chosen, "auto", capsys)


# Out of order: a row of a row group after the first moved just below the keyed row above it
# (its by values and its key less one, or its second by value less). The first by column's
# statistics and the first row group stay in order, so only the stream can tell.


def _stream_key(row: dict, by: list[str], on: bool = True) -> tuple:
    """A row's place in (by..., t) order: text byte-wise, as Arrow orders it."""
    return tuple(v.encode() if isinstance(v, str) else v for v in (row[c] for c in by)) + (
        (row["t"],) if on else ()
    )


def _statistics_show_it(rows: list[dict], by: list[str], ends: list[int], group_rows: int):
    """Whether two row groups in a row (as ``RightSide.write`` cuts them), each of one group
    alone, show that group's keys going back (the second's lowest below the first's
    highest), or the second's group before the first's (``grouped_order``, which then
    refuses the layout before any stream)."""
    alone = high = None
    for begin, end in zip(ends, ends[1:]):
        for start in range(begin, end, group_rows):
            group = rows[start : min(start + group_rows, end)]
            keys = [r["t"] for r in group if r["t"] is not None]
            values = {_stream_key(r, by, on=False) for r in group}
            one = values.pop() if len(values) == 1 else None
            if not keys:  # (null keys of the group alone before: it goes on)
                alone = alone if one is not None and one == alone else None
                continue
            if one is not None and one == alone and min(keys) < high:
                return True
            if one is not None and alone is not None and one < alone:
                return True
            alone, high = one, max(keys)
    return False


def _first_descent(rows: list[dict], by: list[str]) -> int | None:
    """The first row, counting every row, whose (by..., t) is below the keyed row above it."""
    last = None
    for i, row in enumerate(rows):
        if row["t"] is None:
            continue
        key = _stream_key(row, by)
        if last is not None and key < last:
            return i
        last = key
    return None


@settings(SETTINGS, max_examples=40)
@given(
    case=cases(right_rows=7, right_group_rows=2),
    chosen=options(),
    spot=st.tuples(st.integers(0, 9), st.integers(0, 4), st.booleans(), st.integers(0, 6)),
)
# Found at cdf7d78: past LEFT's last row, a backward stream did not read RIGHT, nor check it.
@example(
    case=Case(
        _side(["l0"], 1, "id", l0=[], t=[]),
        _side(["g0"], 5, "x", g0=[""] * 11, t=[0] * 7 + [1, 2, None, None]),
        "int64",
        chunk_rows=1,
        copied=False,
    ),
    chosen=BACKWARD,
    spot=(0, 4, True, 0),
)
def test_a_grouped_right_out_of_order_in_a_later_row_group_exits_2(case, chosen, spot, capsys):
    """``spot``: which row group after the first (which grouped_order reads), which row of it,
    whether it goes below by the key or by the second by column, and then at which key."""
    right = case.right
    ends = [0, *right.cuts, right.table.num_rows]
    starts = [
        start for begin, end in zip(ends, ends[1:]) for start in range(begin, end, right.group_rows)
    ][1:]
    assume(starts)
    start = starts[spot[0] % len(starts)]
    stop = min([start + right.group_rows, *(e for e in ends if e > start)])
    moved = start + spot[1] % (stop - start)
    t = right.table.schema.get_field_index("t")
    as_ints = right.table.set_column(t, "t", right.table.column(t).cast(pa.int64()))
    rows = as_ints.to_pylist()
    above = [i for i in range(moved) if rows[i]["t"] is not None]
    assume(above)
    q, first = above[-1], right.by[0]
    # The first by column's statistics stay in order when the rows from the keyed row above
    # to the row group share its value.
    assume(all(rows[i][first] == rows[q][first] for i in range(q, start)))
    row = {**rows[q], "x": rows[moved]["x"]}
    if spot[2] or len(right.by) == 1:
        row["t"] -= 1
    else:  # below by the second by column, at any key
        second = rows[q][right.by[1]]
        assume(second != "")
        row[right.by[1]] = second[:-1] if isinstance(second, str) else second - 1
        row["t"] = spot[3]
    rows[moved] = row
    table = pa.Table.from_pylist(rows, schema=as_ints.schema)
    case = replace(
        case,
        right=replace(
            right, table=table.set_column(t, "t", table.column(t).cast(KEY_TYPES[case.key]))
        ),
    )
    with _files(case) as (folder, left, right_path):
        out = folder / ("o.parquet" if left.is_file() else "o")
        code, stdout, stderr = _enrich(case, left, right_path, out, "stream", chosen[0], capsys)
        if code == 0 and _first_descent(rows, []) is None:  # a tape: sorted by t alone
            _same_as_join_asof(case, left, right_path, out, chosen[1])
            return
        assert (code, stdout) == (2, ""), stderr
        if _statistics_show_it(rows, right.by, ends, right.group_rows):
            # Two row groups of one group alone, the second beginning below the first's
            # end: the statistics show it, and no stream starts.
            assert "as far as its row-group statistics and first row group show" in stderr
            assert "--right-mode stream: RIGHT" in stderr
        # A side whose statistics pass for a tape too is streamed as one first, then as
        # grouped, which fails last.
        else:
            assert stderr == (
                f"asofgpu enrich: error: RIGHT {right_path} is not sorted by "
                f"{(*right.by, 't')!r} at {_where(right_path, _first_descent(rows, right.by))}, "
                f"though the bounds of its row groups are in order; write it sorted, or pass "
                f"--right-mode spill\n"
            )
        assert not out.exists()
        # auto starts again without streaming.
        code, _, stderr = _enrich(case, left, right_path, out, "auto", chosen[0], capsys)
        assert code == 0, stderr
        _same_as_join_asof(case, left, right_path, out, chosen[1])
