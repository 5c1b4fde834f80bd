"""OTLP protobuf trace files: what the OpenTelemetry Collector's ``file`` exporter writes with ``format: proto``
(each record a 4-byte big-endian length, then a ``TracesData``), records with a varint length before each
(protobuf's ``writeDelimitedTo``), or one bare ``ExportTraceServiceRequest`` (``encode_spans(...)
.SerializeToString()``; the same bytes as a ``TracesData``).

Told from the first bytes by walking the protobuf wire format down to the first span, field numbers and wire types
checked against the OTLP messages (no text, nor metrics or logs, walk that far). Decoded with the official
``opentelemetry-proto`` classes, imported when a file is read (so that importing the analysis stays light and loads
no SDK), and turned into OTLP JSON by protobuf's JSON mapping (base64 ids, which the loader reads). A record that
cannot be decoded costs itself (``bad_line``, a record being the line of a binary file); a record cut short at the
end costs itself and keeps the records before it.
"""
from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

from ..spans.quality import DataQuality

NAME = "OTLP protobuf (the collector's file exporter, format: proto)"

# wire types
_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5
# the messages on the way to the first span: field number -> (wire type, the message it holds, if walked)
_Schema = dict[int, tuple[int, "_Schema | None"]]
_SPAN: _Schema = {1: (_LEN, None), 2: (_LEN, None), 3: (_LEN, None), 4: (_LEN, None), 5: (_LEN, None),
                  6: (_VARINT, None), 7: (_I64, None), 8: (_I64, None), 9: (_LEN, None), 10: (_VARINT, None),
                  11: (_LEN, None), 12: (_VARINT, None), 13: (_LEN, None), 14: (_VARINT, None), 15: (_LEN, None),
                  16: (_I32, None)}
_SCOPE: _Schema = {1: (_LEN, None), 2: (_LEN, None), 3: (_LEN, None), 4: (_VARINT, None)}
_RESOURCE: _Schema = {1: (_LEN, None), 2: (_VARINT, None), 3: (_LEN, None)}
_SCOPE_SPANS: _Schema = {1: (_LEN, _SCOPE), 2: (_LEN, _SPAN), 3: (_LEN, None)}
_RESOURCE_SPANS: _Schema = {1: (_LEN, _RESOURCE), 2: (_LEN, _SCOPE_SPANS), 3: (_LEN, None)}
_TRACES: _Schema = {1: (_LEN, _RESOURCE_SPANS)}
_OPEN = (_SPAN,)                  # messages that may hold fields newer than these (any wire type of protobuf's)
_MAX_RECORD = 1 << 31


class _Bad(Exception):
    """The bytes are not the message the schema says."""


class _Cut(Exception):
    """The bytes end (the end of the head) before the message does."""


def matches(head: bytes) -> bool:
    """One of the first two records, in one of the framings, walks as OTLP traces to a span or to its end."""
    return any(_plausible(rec, whole) for rec, whole in _first_records(head))


def requests(data: bytes, source: str, q: DataQuality) -> list[dict[str, Any]]:
    """One OTLP request per record; ``q.lines`` counts the records."""
    return list(lazy_requests(data, source, q))


def lazy_requests(data: bytes, source: str, q: DataQuality) -> Iterator[dict[str, Any]]:
    """``requests``, a record at a time: what is held is the file's bytes and one record's request."""
    from google.protobuf.json_format import MessageToDict
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

    records = split(memoryview(data), source, q)         # views of the file's bytes, not copies
    q.lines += len(records)
    for n, rec in enumerate(records, start=1):
        try:
            msg = TracesData.FromString(rec)
        except (DecodeError, RecursionError) as exc:
            q.add("bad_line", source, example=f"record {n}: not OTLP protobuf traces ({str(exc)[:120]})")
            continue
        if msg.resource_spans:
            yield MessageToDict(msg)


def split(data: bytes | memoryview, source: str, q: DataQuality) -> list[bytes | memoryview]:
    """The records of the file, in the first framing that reads it: 4-byte big-endian lengths (the file exporter),
    varint lengths, or one bare message. A last record cut short costs one ``bad_line``; so does the rest of the
    file after a length that cannot be right (the records after it cannot be found)."""
    for frame in (_be32, _varint_framed):
        records, rest = frame(data)
        if records and (not rest or _plausible(records[0], True)):      # (the first record may be the corrupt one)
            if rest:
                q.add("bad_line", source, example=f"record {len(records) + 1}: cut short or corrupt "
                                                  f"({len(rest)} bytes left after the last whole record)")
            return records
    return [data] if data else []


def _be32(data: bytes | memoryview) -> tuple[list[bytes | memoryview], bytes | memoryview]:
    out, i = [], 0
    while i + 4 <= len(data):
        (n,) = struct.unpack_from(">I", data, i)
        if n >= _MAX_RECORD or i + 4 + n > len(data):
            break
        out.append(data[i + 4:i + 4 + n])
        i += 4 + n
    return out, data[i:]


def _varint_framed(data: bytes | memoryview) -> tuple[list[bytes | memoryview], bytes | memoryview]:
    out, i = [], 0
    while i < len(data):
        try:
            n, j = _varint(data, i)
        except (_Bad, _Cut):
            break
        if n >= _MAX_RECORD or j + n > len(data):
            break
        out.append(data[j:j + n])
        i = j + n
    return out, data[i:]


def _first_records(head: bytes) -> list[tuple[bytes, bool]]:
    """The first two records of ``head`` in each framing (the first may be the corrupt one), and whether each is
    whole (not cut by the end of ``head``)."""
    out = []
    i = 0
    for _ in range(2):
        if len(head) < i + 5:
            break
        (n,) = struct.unpack_from(">I", head, i)
        if not 0 < n < _MAX_RECORD:
            break
        out.append((head[i + 4:i + 4 + n], i + 4 + n <= len(head)))
        i += 4 + n
    i = 0
    for _ in range(2):
        try:
            n, j = _varint(head, i)
        except (_Bad, _Cut):
            break
        if n == 0:
            break
        out.append((head[j:j + n], j + n <= len(head)))
        i = j + n
    out.append((head, False))
    return out


def _plausible(record: bytes | memoryview, whole: bool) -> bool:
    """``record`` (cut by the end of the head unless ``whole``) opens with a resource spans and walks as OTLP
    traces as far as it goes: to its end, or to a span before the cut."""
    if record[:1] != b"\x0a":
        return False
    spans: list[int] = []
    try:
        _walk(record, 0, len(record) if whole else None, _TRACES, spans)
    except _Cut:
        return bool(spans)
    except _Bad:
        return False
    return True


def _walk(buf: bytes | memoryview, i: int, end: int | None, schema: _Schema, spans: list[int]) -> None:
    """Checks the fields of one message, ``buf[i:end]`` (``end`` None: up to where ``buf`` ends, cut), against
    ``schema``; ``spans`` gets the offset of each span reached. Raises _Bad for what is not that message and _Cut
    when ``buf`` ends before it does."""
    if schema is _SPAN:
        spans.append(i)
    stop = len(buf) if end is None else end
    while i < stop:
        tag, i = _varint(buf, i)
        field, wire = tag >> 3, tag & 7
        known = schema.get(field)
        if field == 0 or wire not in (_VARINT, _I64, _LEN, _I32) or (known is None and schema not in _OPEN) \
                or (known is not None and known[0] != wire):
            raise _Bad(f"field {field}, wire type {wire}")
        if wire == _VARINT:
            _, i = _varint(buf, i)
        elif wire in (_I64, _I32):
            i += 8 if wire == _I64 else 4
        else:
            n, i = _varint(buf, i)
            if end is not None and i + n > end:
                raise _Bad("a field longer than its message")
            if known is not None and known[1] is not None:
                _walk(buf, i, i + n, known[1], spans)
            i += n
        if end is not None and i > end:
            raise _Bad("a field longer than its message")
    if i > len(buf):
        raise _Cut


def _varint(buf: bytes | memoryview, i: int) -> tuple[int, int]:
    """The varint at ``buf[i]`` and the index after it."""
    out = shift = 0
    while i < len(buf) and shift < 64:
        b = buf[i]
        out |= (b & 0x7F) << shift
        i += 1
        if b < 0x80:
            return out, i
        shift += 7
    if i >= len(buf) and shift < 64:
        raise _Cut
    raise _Bad("a varint too long")
