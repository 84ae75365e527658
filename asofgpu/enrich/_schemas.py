"""The columns of a side's files: the one schema they are read as where they differ in forms a
reader gives alike (``common_schema``, ``widest``), dictionaries' indices widened
(``wide_indices_of``), their parquet leaf columns (``leaf_map``: row groups' column chunks
are numbered by leaf), and text read as dictionary codes (``is_text``, ``read_as_codes``)."""

from __future__ import annotations

import functools

import pyarrow as pa

from .. import _arrow_numpy as arrow_numpy
from .._encode import family, wide_indices


def common_schema(a: pa.Schema, b: pa.Schema) -> pa.Schema | None:
    """The schema that reads files of schemas ``a`` and ``b`` alike: the same columns (in
    ``a``'s order; read by name), each of ``common_field``; None where they disagree.

    >>> common_schema(pa.schema([("s", pa.string())]), pa.schema([("s", pa.large_string())]))
    s: large_string
    >>> common_schema(pa.schema([("s", pa.string())]), pa.schema([("s", pa.int64())])) is None
    True
    >>> common_schema(pa.schema([("t", pa.int64()), ("x", pa.string())]),
    ...               pa.schema([("x", pa.string()), ("t", pa.int64())])).names
    ['t', 'x']
    """
    if sorted(a.names) != sorted(b.names) or len(set(a.names)) < len(a.names):
        return None
    fields = [common_field(x, b.field(x.name)) for x in a]  # by name: a's order
    return None if any(f is None for f in fields) else pa.schema(fields)


def common_field(a: pa.Field, b: pa.Field) -> pa.Field | None:
    """A field that holds the values of both: ``a`` where they are one; the other where one
    holds only nulls (of type null); else, where they differ only in forms a reader gives
    alike, their ``widest`` form (nullable where either is); None where their values differ
    in kind.

    >>> common_field(pa.field("x", pa.dictionary(pa.int32(), pa.string())),
    ...              pa.field("x", pa.string_view(), nullable=False))
    pyarrow.Field<x: large_string>
    >>> common_field(pa.field("x", pa.int32()), pa.field("x", pa.int64())) is None
    True
    >>> common_field(pa.field("x", pa.null()), pa.field("x", pa.int64(), nullable=False))
    pyarrow.Field<x: int64>

    Its metadata is the entries both fields hold alike, and its nested fields have none
    where the two differ there: polars keeps an Enum's categories in a field's metadata, and
    one file's would make polars read the other's values outside them as null.

    >>> common_field(pa.field("e", pa.string(), metadata={"a": "1", "b": "2"}),
    ...              pa.field("e", pa.string(), metadata={"a": "1", "b": "3"})).metadata
    {b'a': b'1'}
    """
    field = _common_values(a, b)
    if field is None:
        return None
    if not a.type.equals(b.type, check_metadata=True):  # nested fields' metadata differs
        field = field.with_type(
            arrow_numpy.rebuilt(field.type, lambda t: t, lambda f: f.remove_metadata())
        )
    agreed = {k: v for k, v in (a.metadata or {}).items() if (b.metadata or {}).get(k) == v}
    return field.with_metadata(agreed) if agreed else field.remove_metadata()


def _common_values(a: pa.Field, b: pa.Field) -> pa.Field | None:
    """``common_field``'s name, type and nullability, and ``a``'s metadata."""
    if a.equals(b):
        return a
    if a.type == b.type:
        return a.with_nullable(True)
    if pa.types.is_null(a.type) or pa.types.is_null(b.type):  # (pandas writes None's so)
        return pa.field(a.name, b.type if pa.types.is_null(a.type) else a.type)
    if widest(a.type) != widest(b.type):
        return None
    return pa.field(a.name, widest(a.type))


def widest(t: pa.DataType) -> pa.DataType:
    """``t``'s form that holds what its other widths and encodings hold: text and lists of
    64-bit offsets (views, too), dictionaries as their values, nested fields nullable (Spark
    writes arrays of required items, polars of nullable ones); nested ones too.

    >>> widest(pa.struct([("s", pa.string()), ("l", pa.list_(pa.binary_view()))]))
    StructType(struct<s: large_string, l: large_list<item: large_binary>>)
    >>> widest(pa.list_(pa.field("element", pa.int64(), nullable=False)))
    LargeListType(large_list<element: int64>)
    """
    return arrow_numpy.rebuilt(t, _widest_node, field=lambda f: f.with_nullable(True))


def _widest_node(t: pa.DataType) -> pa.DataType:
    """``widest`` of a type whose nested types are already widest."""
    if pa.types.is_dictionary(t):
        return t.value_type
    if family(t) in _READ_AS:  # (string, binary, their large forms and views)
        return pa.large_string() if family(t) == "string" else pa.large_binary()
    if any(
        test(t) for test in (pa.types.is_list, pa.types.is_list_view, pa.types.is_large_list_view)
    ):
        return pa.large_list(t.value_field)
    return t


def leaf_map(schema: pa.Schema) -> dict[str, range]:
    """The parquet (leaf) column numbers of each top-level column of a file: one for a plain
    column, several for a nested one. Row groups' column chunks are numbered by leaf, not by
    the Arrow field's position; and counted, not matched by their dotted paths, which cannot
    tell a column named ``a.b`` from the field ``b`` of a column ``a``.

    >>> import io, pyarrow as pa, pyarrow.parquet as pq
    >>> buffer = io.BytesIO()
    >>> pq.write_table(pa.table({"a": [{"b": 1, "c": 2}], "a.b": [3], "t": [4]}), buffer)
    >>> leaves = leaf_map(pq.read_schema(io.BytesIO(buffer.getvalue())))
    >>> list(leaves["a"]), list(leaves["a.b"]), list(leaves["t"])
    ([0, 1], [2], [3])
    """
    names, types = tuple(schema.names), tuple(schema.types)
    try:
        return _leaves(names, types)
    except TypeError:  # (a type that cannot be hashed: a Python extension type without one)
        return _leaves.__wrapped__(names, types)


@functools.lru_cache(maxsize=64)
def _leaves(names: tuple, types: tuple) -> dict[str, range]:
    """``leaf_map`` of a file's columns, shared by the files of a source, whose columns are
    mostly alike (300 columns took 325 us to count a file: 1.6 s over 5,000 files). Kept by
    names and types, not the schema: one with metadata cannot be hashed before pyarrow 20.
    (Read it, never change it.)"""
    leaves, start = {}, 0
    for name, kind in zip(names, types):
        count = _leaf_count(kind)
        leaves.setdefault(name, range(start, start + count))
        start += count
    return leaves


def _leaf_count(t: pa.DataType) -> int:
    """How many parquet leaf columns an Arrow type is stored as (an extension type: as its
    storage, a struct's being several)."""
    if isinstance(t, pa.BaseExtensionType):
        return _leaf_count(t.storage_type)
    if pa.types.is_struct(t):
        return sum(_leaf_count(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return _leaf_count(t.key_type) + _leaf_count(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _leaf_count(t.value_type)
    if hasattr(pa.types, "is_list_view") and (
        pa.types.is_list_view(t) or pa.types.is_large_list_view(t)
    ):
        return _leaf_count(t.value_type)
    return 1


def is_text(t: pa.DataType) -> bool:
    """String and binary columns, of any offset width or as views (``_encode.family``'s
    text): parquet stores them as dictionary pages when it can."""
    return not pa.types.is_dictionary(t) and family(t) in _READ_AS


def read_as_codes(t: pa.DataType) -> pa.DataType:
    """The type of a column of type ``t`` read as a dictionary (``read_dictionary``, or a
    partition column's codes): pyarrow's parquet reader gives text int32 indices into string
    or binary values, whatever width or view it was written as.

    >>> read_as_codes(pa.large_string()), read_as_codes(pa.int64())
    (DictionaryType(dictionary<values=string, indices=int32, ordered=0>), DictionaryType(dictionary<values=int64, indices=int32, ordered=0>))
    """
    if pa.types.is_dictionary(t):
        return t
    return pa.dictionary(pa.int32(), _READ_AS[family(t)] if is_text(t) else t)


_READ_AS = {"string": pa.string(), "binary": pa.binary()}  # text values as parquet reads them


def wide_indices_of(schema: pa.Schema) -> pa.Schema:
    """``schema`` with ``wide_indices`` at every depth (a struct's dictionary field too)."""
    return pa.schema([f.with_type(arrow_numpy.rebuilt(f.type, wide_indices)) for f in schema])
