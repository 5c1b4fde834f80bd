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
from typing import Any

from ...errors import InputError
from ..input_limits import DOCUMENT_ENV, RATIO_ENV, InputLimits, human
from ..quality import DataQuality

NAME = "zstd (the collector's file exporter, compression: zstd)"

MAGIC = b"\x28\xb5\x2f\xfd"
_PIECE = 4096            # compressed bytes fed at a time: the output of one call stays bounded (a decompression bomb)


def matches(head: bytes) -> bool:
    """A zstd stream (the native layout), or a first record that is a 4-byte length and a zstd frame."""
    return head.startswith(MAGIC) or (head[4:8] == MAGIC and struct.unpack(">I", head[:4])[0] >= 8)


def decompress(data: bytes, source: str, q: DataQuality, limits: InputLimits) -> bytes:
    """The file as the exporter would have written it without compression: JSON lines, or protobuf records each
    after a 4-byte big-endian length. What cannot be decompressed is counted in ``q``."""
    import zstandard

    limit = min(limits.max_decompressed(len(data)), limits.max_document_bytes)
    budget = _Budget(source, limit, limits)
    dctx = zstandard.ZstdDecompressor()
    if data.startswith(MAGIC):
        text, why = _frames(dctx, data, budget)
        if why is not None:
            text = _whole_records(text)
            q.add("bad_line", source, example=f"the zstd stream {why}: the records before it are kept")
        return text
    parts: list[bytes] = []
    i = n = 0
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
        parts.append(part)
    if i < len(data):
        q.add("bad_line", source, example=f"record {n}: cut short ({len(data) - i} bytes left after the last whole "
                                          f"record)")
    if parts and parts[0].lstrip()[:1] == b"{":            # format: json, one JSON document a frame
        return b"".join(p.rstrip(b"\n") + b"\n" for p in parts)
    return b"".join(struct.pack(">I", len(p)) + p for p in parts)


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
