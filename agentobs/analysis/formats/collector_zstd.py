"""What the OpenTelemetry Collector's ``file`` exporter writes with ``compression: zstd``: a compression, not a
format of its own. ``decompress`` gives back the bytes the exporter would have written without compression, and
those are read as what they are: OTLP JSON lines (``format: json``) or OTLP protobuf records (``format: proto``,
``collector_proto``).

Two layouts (contrib ``fileexporter``):

- by default, each message is compressed on its own into one zstd frame, and each frame is written after a 4-byte
  big-endian length (with ``format: json`` too, so the file is neither JSON lines nor a ``.zst`` that ``zstd -d``
  reads);
- with the ``exporter.file.nativeCompression`` feature gate (alpha, from v0.154.0), the whole file is one zstd
  stream (a frame per flush) of what the exporter writes uncompressed: JSON lines, or length-prefixed protobuf.

A frame that cannot be decompressed costs its record (``bad_line``); a file cut short keeps the whole records before
the cut and costs one. The decompressed size is held within the input limits (``max_decompressed`` of the
compressed size, and the document limit, since the result is read whole): over them is an InputError.
"""
from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

from ...errors import InputError
from ..input.limits import DOCUMENT_ENV, RATIO_ENV, InputLimits, human
from ..spans.quality import DataQuality

NAME = "zstd (the collector's file exporter, compression: zstd)"

MAGIC = b"\x28\xb5\x2f\xfd"
# a skippable frame (magic 0x184D2A50 to 0x184D2A5F, little-endian), which zstd's format allows anywhere in a
# stream: ``pzstd`` writes one before every frame (its own index), the seekable format one at the end. A stream
# that opens with one is the native layout; the decompressor passes over them
_SKIPPABLE = b"\x2a\x4d\x18"
_PIECE = 4096            # compressed bytes fed at a time: the output of one call stays bounded (a decompression bomb)


def matches(head: bytes) -> bool:
    """A zstd stream (the native layout), or a first record that is a 4-byte length and a zstd frame."""
    return _native_layout(head) or (head[4:8] == MAGIC and struct.unpack(">I", head[:4])[0] >= 8)


def _native_layout(head: bytes) -> bool:
    """A zstd stream: a zstd frame first, or a skippable frame (``pzstd``'s output)."""
    return head.startswith(MAGIC) or (len(head) >= 8 and head[0] & 0xF0 == 0x50 and head[1:4] == _SKIPPABLE)


def decompress(data: bytes, source: str, q: DataQuality, limits: InputLimits) -> bytes:
    """The file as the exporter would have written it without compression: JSON lines, or protobuf records each
    after a 4-byte big-endian length. What cannot be decompressed is counted in ``q``."""
    return b"".join(pieces(data, source, q, limits))


def pieces(data: bytes, source: str, q: DataQuality, limits: InputLimits) -> Iterator[bytes]:
    """``decompress``, a frame (or, in the native layout, an output of at most ``_OUT`` bytes) at a time: what the
    exporter wrote of JSON lines can be read as it comes, never held whole."""
    import zstandard

    limit = min(limits.max_decompressed(len(data)), limits.max_document_bytes)
    budget = _Budget(source, limit, limits)
    dctx = zstandard.ZstdDecompressor()
    if _native_layout(data[:8]):
        yield from _native(dctx, data, budget, source, q)
        return
    i = n = 0
    json_lines: bool | None = None
    while i + 4 <= len(data):
        (size,) = struct.unpack_from(">I", data, i)
        n += 1
        if i + 4 + size > len(data):
            break
        part, why = _frames(dctx, data[i + 4:i + 4 + size], budget)
        i += 4 + size
        if why is not None:
            q.add("bad_line", source, example=f"record {n}: the zstd frame {why}")
            continue
        if json_lines is None:
            json_lines = part.lstrip()[:1] == b"{"         # format: json, one JSON document a frame
        yield part.rstrip(b"\n") + b"\n" if json_lines else struct.pack(">I", len(part)) + part
    if i < len(data):
        q.add("bad_line", source, example=f"record {n}: cut short ({len(data) - i} bytes left after the last whole "
                                          f"record)")


_OUT = 1 << 20


def _native(dctx: Any, data: bytes, budget: _Budget, source: str, q: DataQuality) -> Iterator[bytes]:
    """One zstd stream (a frame per flush), its output in parts of whole JSON lines or protobuf records (what a cut
    or corrupt stream leaves of a line or record at its end is dropped, counted)."""
    import zstandard

    held = b""
    i = 0
    while i < len(data):
        obj = dctx.decompressobj()
        while not obj.eof:
            if i >= len(data):
                q.add("bad_line", source, example="the zstd stream is cut short: the records before it are kept")
                yield _whole_records(held)
                return
            piece = data[i:i + _PIECE]
            i += len(piece)
            try:
                part = obj.decompress(piece)
            except zstandard.ZstdError as exc:
                q.add("bad_line", source, example=f"the zstd stream is corrupt ({str(exc)[:120]}): the records "
                                                  "before it are kept")
                yield _whole_records(held)
                return
            budget.spend(len(part))
            held += part
            if len(held) >= _OUT:
                whole = _whole_records(held)
                held = held[len(whole):]
                yield whole
        i -= len(obj.unused_data)
    yield held


class _Budget:
    """The decompressed bytes left within the limits; spending beyond them is an InputError."""

    def __init__(self, source: str, limit: int, limits: InputLimits):
        self.source, self.left, self.limit, self.limits = source, limit, limit, limits

    def spend(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            which = DOCUMENT_ENV if self.limit == self.limits.max_document_bytes else RATIO_ENV
            raise InputError(f"{self.source}: a zstd file that expands beyond {human(self.limit)} (a likely "
                             f"decompression bomb, or a file larger than the document limit): set {which} to "
                             f"raise the limit")


def _frames(dctx: Any, data: bytes, budget: _Budget) -> tuple[bytes, str | None]:
    """The concatenated zstd frames of ``data`` decompressed, and why they end early (None when they do not)."""
    import zstandard

    out: list[bytes] = []
    i = 0
    while i < len(data):
        obj = dctx.decompressobj()
        while not obj.eof:
            if i >= len(data):
                return b"".join(out), "is cut short"
            piece = data[i:i + _PIECE]
            i += len(piece)
            try:
                part = obj.decompress(piece)
            except zstandard.ZstdError as exc:
                return b"".join(out), f"is corrupt ({str(exc)[:120]})"
            budget.spend(len(part))
            out.append(part)
        i -= len(obj.unused_data)
    return b"".join(out), None


def _whole_records(text: bytes) -> bytes:
    """``text`` (decompressed, cut or corrupt somewhere) up to its last whole JSON line or protobuf record."""
    if text.lstrip()[:1] == b"{":
        return text[:text.rfind(b"\n") + 1]
    i = 0
    while i + 4 <= len(text) and i + 4 + struct.unpack_from(">I", text, i)[0] <= len(text):
        i += 4 + struct.unpack_from(">I", text, i)[0]
    return text[:i]
