"""asofgpu._pandas_arrow against pyarrow's own conversion of the same pandas columns: equal
values, types and nulls for every dtype, and no copy where nothing is missing."""

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from asofgpu import _pandas_arrow as pandas_arrow

N = 50


def _series() -> dict[str, pd.Series]:
    rng = np.random.default_rng(3)
    ints = rng.integers(-1_000, 1_000, N)
    floats = rng.normal(size=N)
    with_nan = floats.copy()
    with_nan[[0, 7]] = np.nan
    instants = np.datetime64("2024-03-31T12:00", "ns") + ints * np.timedelta64(1, "h")
    with_nat = instants.copy()
    with_nat[3] = np.datetime64("NaT")
    series = {
        f"{t}": pd.Series(ints.astype(t))
        for t in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
    }
    series |= {
        "float32": pd.Series(floats.astype(np.float32)),
        "float64": pd.Series(floats),
        "float64 NaN": pd.Series(with_nan),
        "float64 inf": pd.Series(np.where(ints > 0, np.inf, -np.inf)),
        "float16": pd.Series(floats.astype(np.float16)),
        "big-endian": pd.Series(floats.astype(">f8")),
        "bool": pd.Series(ints > 0),
        "timedelta": pd.Series(ints * np.timedelta64(1, "s")),
        "timedelta NaT": pd.Series(np.append(ints[:-1], 0) * np.timedelta64(1, "ms")).where(
            np.arange(N) != 5
        ),
        "object": pd.Series([str(i) for i in ints], dtype=object),
        "str": pd.Series([str(i) for i in ints], dtype="str"),
        "string[python]": pd.Series([str(i) for i in ints], dtype="string[python]"),
        "string[python] NA": pd.Series([str(i) for i in ints], dtype="string[python]").where(
            ints > 0
        ),
        "Int64": pd.Series(ints, dtype="Int64").where(ints > 0),
        "category": pd.Series(ints % 3).astype("category"),
        "arrow double": pd.Series(floats, dtype="double[pyarrow]"),
        "empty float": pd.Series([], dtype=np.float64),
        "empty zoned": pd.Series([], dtype="datetime64[ns, UTC]"),
    }
    for unit in ("s", "ms", "us", "ns"):
        series[f"datetime[{unit}]"] = pd.Series(instants.astype(f"datetime64[{unit}]"))
        series[f"datetime[{unit}] NaT"] = pd.Series(with_nat.astype(f"datetime64[{unit}]"))
    for tz in ("UTC", "Europe/Amsterdam", "America/New_York", "+05:30"):
        zoned = pd.Series(instants).dt.tz_localize("UTC").dt.tz_convert(tz)
        series[f"zoned {tz}"] = zoned
        series[f"zoned {tz} NaT"] = zoned.where(np.arange(N) != 9)
    return series


SERIES = _series()


@pytest.mark.parametrize("name", list(SERIES))
def test_a_column_converts_as_pyarrow_converts_it(name):
    series = SERIES[name]
    try:
        expected = pa.array(series, from_pandas=True)
    except pa.ArrowException as exc:  # byte-swapped values: pyarrow's own error
        with pytest.raises(type(exc), match=str(exc)):
            pandas_arrow.column(series)
        return
    got = pandas_arrow.column(series)
    assert got.type == expected.type
    assert got.equals(expected), name
    assert got.null_count == expected.null_count


@pytest.mark.parametrize(
    "name",
    [
        "int64",
        "uint8",
        "float32",
        "float64",
        "float64 inf",
        "timedelta",
        "datetime[ns]",
        "datetime[s]",
        "zoned UTC",
        "zoned Europe/Amsterdam",
    ],
)
def test_a_column_without_missing_values_is_not_copied(name):
    series = SERIES[name]
    # a zoned column's UTC instants, as its array holds them (the Series' tz_convert copies
    # them on pandas 2)
    values = series.array.tz_convert(None) if name.startswith("zoned") else series
    address = values.to_numpy(copy=False).ctypes.data
    assert pandas_arrow.column(series).buffers()[1].address == address


@pytest.mark.parametrize(
    "name",
    [
        "float64 NaN",
        "datetime[us] NaT",
        "zoned UTC NaT",
        "timedelta NaT",
        "bool",
        "float16",
        "big-endian",
        "Int64",
        "str",
        "object",
        "category",
        "arrow double",
    ],
)
def test_missing_values_and_other_types_are_left_to_pyarrow(name):
    assert pandas_arrow.as_it_lies(SERIES[name]) is None


def test_a_frame_converts_as_from_pandas_converts_it():
    frame = pd.DataFrame(
        {name: series for name, series in SERIES.items() if len(series) and name != "big-endian"}
    )
    frame.index = np.arange(100, 100 + N)  # the index is not a column
    expected = pa.Table.from_pandas(frame, preserve_index=False)
    got = pandas_arrow.table(frame)
    assert got.column_names == expected.column_names
    assert got.schema == expected.schema.remove_metadata()
    assert got.equals(expected)


@pytest.mark.parametrize("at", [0, N // 2 - 1, N // 2, N - 1])
def test_missing_values_are_found_in_any_stretch_of_a_large_column(monkeypatch, at):
    """Columns past ``PARALLEL_CHECK_ROWS`` rows are checked in stretches on all cores: a NaN
    or NaT anywhere, in the first stretch or the last, at a border or not, is found, and the
    frame still converts as ``from_pandas`` converts it."""
    monkeypatch.setattr(pandas_arrow, "PARALLEL_CHECK_ROWS", 4)
    kinds = ["float64", "float32", "datetime[ns]", "zoned UTC", "timedelta", "int64"]
    frame = pd.DataFrame({kind: SERIES[kind] for kind in kinds})
    assert pandas_arrow.table(frame).equals(pa.Table.from_pandas(frame, preserve_index=False))
    for kind in kinds[:-1]:
        broken = frame.copy()
        broken[kind] = broken[kind].where(np.arange(N) != at)  # NaN or NaT at row ``at``
        assert pandas_arrow.as_it_lies(broken[kind]) is None, kind
        got = pandas_arrow.table(broken)
        assert got.equals(pa.Table.from_pandas(broken, preserve_index=False)), kind
        assert got[kind].null_count == 1


def test_columns_of_one_pandas_block_are_read_in_place():
    block = np.arange(3 * N, dtype=np.float64).reshape(N, 3)  # rows: column views are strided
    frame = pd.DataFrame(block, columns=["a", "b", "c"])
    got = pandas_arrow.table(frame)
    assert got.equals(pa.Table.from_pandas(frame, preserve_index=False))
    assert got.column("b").to_pylist() == block[:, 1].tolist()


@pytest.mark.parametrize(
    "columns",
    [[0, 1], ["a", "a"], [("x", "y"), ("x", "z")]],
    ids=["numbers", "duplicates", "tuples"],
)
def test_names_pyarrow_has_rules_for_are_left_to_it(columns):
    frame = pd.DataFrame(
        np.ones((3, 2)),
        columns=pd.Index(columns, tupleize_cols=False)
        if columns[0] != ("x", "y")
        else pd.MultiIndex.from_tuples(columns),
    )
    try:
        expected = pa.Table.from_pandas(frame, preserve_index=False)
    except ValueError as exc:  # duplicate names
        with pytest.raises(ValueError, match=str(exc)[:30]):
            pandas_arrow.table(frame)
        return
    assert pandas_arrow.table(frame).equals(expected)


@pytest.mark.parametrize("name", list(SERIES))
def test_a_series_as_a_column_argument_reads_as_pandas_exports_it(name):
    """``_columns.to_arrow``, how every column argument (an ``AsofJoin``'s keys, a window
    join's payload) is read: pandas' own Arrow export's values, type and nulls, in place
    where nothing is missing."""
    from asofgpu._columns import to_arrow

    series = SERIES[name]
    try:
        expected = pa.chunked_array(series) if hasattr(series, "__arrow_c_stream__") else None
        expected = expected or pa.chunked_array([pa.array(series, from_pandas=True)])
    except pa.ArrowException:  # byte-swapped values: refused either way
        with pytest.raises(TypeError, match="x could not be read"):
            to_arrow(series, "x")
        return
    got = to_arrow(series, "x")
    assert got.type == expected.type
    assert got.equals(expected), name
    if pandas_arrow.as_it_lies(series) is not None and len(series) and "zoned" not in name:
        assert got.chunk(0).buffers()[1].address == series.to_numpy(copy=False).ctypes.data


@pytest.mark.parametrize("na_value", [pd.NA, np.nan])
@pytest.mark.parametrize("values", [[], [None], ["a", None, "é", "", "a"]])
def test_python_storage_strings_are_read_as_pandas_exports_them(na_value, values):
    """``string[python]`` columns (either missing value) are read from their objects: the
    type, values and nulls of pandas' own export, as a join's column reads them."""
    from asofgpu._columns import to_arrow

    try:
        dtype = pd.StringDtype("python", na_value=na_value)
    except TypeError:
        pytest.skip("pandas before 2.3 has one flavour of python-storage strings")
    series = pd.Series(values, dtype=dtype)
    want = pa.chunked_array(series)
    got = pandas_arrow.python_strings(series)
    assert got.type == want.type and got.to_pylist() == want.to_pylist()
    assert to_arrow(series, "left_by").equals(want)
    assert pandas_arrow.python_strings(series.astype(object)) is None


@pytest.mark.parametrize(
    "column",
    [
        pd.arrays.SparseArray([0, 1, 0]),  # refused by from_pandas' own check, before pa.array
        pd.Series(["a", 1.5], dtype=object),  # objects of two kinds
        pd.Series([1 + 2j, 3j]),  # a numpy type Arrow lacks
    ],
    ids=["sparse", "mixed objects", "complex"],
)
def test_a_column_arrow_cannot_read_fails_as_from_pandas_fails(column):
    frame = pd.DataFrame({"ok": [1.5, 2.5, 3.5][: len(column)], "v": column})
    with pytest.raises(Exception) as expected:
        pa.Table.from_pandas(frame, preserve_index=False)
    with pytest.raises(type(expected.value)) as got:
        pandas_arrow.table(frame)
    assert str(got.value) == str(expected.value)
    assert "column v" in str(got.value)
