"""Thrift's compact protocol, just enough to re-address a parquet footer.

A parquet file ends with its ``FileMetaData``, a Thrift struct in the compact protocol, whose
row groups name their pages by absolute file offsets. ``_stitch`` writes row groups that were
encoded apart (in memory, on all cores) one after another into one file, which moves their
pages: it decodes each part's footer into plain Python values, adds the shift to the offsets
and encodes one footer for the whole file. The codec is generic (no parquet schema here): a
struct is a ``dict`` of field id -> ``(type, value)``, so fields it does not know pass through
unchanged.

>>> fields = {1: (I32, 2), 3: (I64, -5), 4: (LIST, (STRUCT, [{1: (BINARY, b"x")}]))}
>>> decode_struct(encode_struct(fields), 0) == (fields, 11)
True
"""

from __future__ import annotations

# Compact-protocol type ids (a struct field's low nibble; a list's element type).
TRUE, FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(1, 13)
BOOL = TRUE  # a list's element type for booleans; a field's value says which


class ThriftError(ValueError):
    """The bytes are not a compact-protocol struct this codec reads."""


def _varint(buf, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise ThriftError("truncated varint")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _zigzag(value: int) -> int:
    return (value >> 1) ^ -(value & 1)


def _value(buf, pos: int, kind: int):
    if kind in (TRUE, FALSE):  # only in lists: one byte each
        return buf[pos] == TRUE, pos + 1
    if kind == BYTE:
        return int.from_bytes(buf[pos : pos + 1], "little", signed=True), pos + 1
    if kind in (I16, I32, I64):
        raw, pos = _varint(buf, pos)
        return _zigzag(raw), pos
    if kind == DOUBLE:
        return bytes(buf[pos : pos + 8]), pos + 8
    if kind == BINARY:
        size, pos = _varint(buf, pos)
        return bytes(buf[pos : pos + size]), pos + size
    if kind in (LIST, SET):
        header = buf[pos]
        size, element, pos = header >> 4, header & 0x0F, pos + 1
        if size == 15:
            size, pos = _varint(buf, pos)
        items = []
        for _ in range(size):
            item, pos = _value(buf, pos, element)
            items.append(item)
        return (element, items), pos
    if kind == STRUCT:
        return decode_struct(buf, pos)
    raise ThriftError(f"unsupported compact type {kind}")  # MAP: parquet has none


def decode_struct(buf, pos: int) -> tuple[dict, int]:
    """The struct starting at ``buf[pos]`` and the position after its stop byte."""
    fields: dict[int, tuple[int, object]] = {}
    last = 0
    while True:
        if pos >= len(buf):
            raise ThriftError("truncated struct")
        header = buf[pos]
        pos += 1
        if header == 0:
            return fields, pos
        kind, delta = header & 0x0F, header >> 4
        if delta:
            field = last + delta
        else:
            raw, pos = _varint(buf, pos)
            field = _zigzag(raw)
        if kind in (TRUE, FALSE):
            fields[field] = (TRUE, kind == TRUE)
        else:
            value, pos = _value(buf, pos, kind)
            fields[field] = (kind, value)
        last = field


def _put_varint(out: bytearray, value: int) -> None:
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _put_value(out: bytearray, kind: int, value) -> None:
    if kind in (TRUE, FALSE):  # a list element
        out.append(TRUE if value else FALSE)
    elif kind == BYTE:
        out += int(value).to_bytes(1, "little", signed=True)
    elif kind in (I16, I32, I64):
        _put_varint(out, (value << 1) ^ (value >> 63))
    elif kind == DOUBLE:
        out += value
    elif kind == BINARY:
        _put_varint(out, len(value))
        out += value
    elif kind in (LIST, SET):
        element, items = value
        if len(items) < 15:
            out.append(len(items) << 4 | element)
        else:
            out.append(0xF0 | element)
            _put_varint(out, len(items))
        for item in items:
            _put_value(out, element, item)
    elif kind == STRUCT:
        _put_struct(out, value)
    else:
        raise ThriftError(f"unsupported compact type {kind}")


def _put_struct(out: bytearray, fields: dict) -> None:
    last = 0
    for field in sorted(fields):
        kind, value = fields[field]
        if kind in (TRUE, FALSE):
            kind = TRUE if value else FALSE
        if 0 < field - last <= 15:
            out.append((field - last) << 4 | kind)
        else:
            out.append(kind)
            _put_varint(out, (field << 1) ^ (field >> 63))
        if kind not in (TRUE, FALSE):
            _put_value(out, kind, value)
        last = field
    out.append(0)


def encode_struct(fields: dict) -> bytes:
    """The compact-protocol bytes of a struct as ``decode_struct`` returns it."""
    out = bytearray()
    _put_struct(out, fields)
    return bytes(out)
