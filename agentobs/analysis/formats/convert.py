"""A trace format other than OTLP JSON loaded through the OTLP loader: its requests converted (``requests`` /
``lazy_requests`` / ``stream``), or what a compression holds (``pieces``) read as what it is.

A converted format is one module with ``NAME`` (what the report's "read" section says), ``matches(head)`` (from the
file's first bytes: the registry asks it) and ``requests(data, source, quality)`` (the OTLP requests, canonical
spelling, of the whole document; what it cannot convert is counted, never raised), or ``stream(document, source,
quality)`` (a value at a time). A compression (``collector_zstd``) has ``pieces(data, source, quality, limits)``
instead: what it gives back is read as what it is, OTLP JSON lines by the OTLP loader, or one of ``CONVERTED``.
"""
from __future__ import annotations

import itertools
import os
import zlib
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from ..input import remote
from ..input.limits import InputLimits
from ..input.read import Document, read_document
from ..otlp.load import PIECE_BYTES, load_pieces, load_requests
from ..spans.quality import DataQuality
from ..spans.spanset import SpanSet
from . import collector_proto, collector_zstd, console, jaeger_ui, zipkin

# the converted formats, in the order their first bytes are tested (a closed list)
CONVERTED: tuple[ModuleType, ...] = (jaeger_ui, console, zipkin, collector_zstd, collector_proto)


def converted_for(head: bytes) -> ModuleType | None:
    """The converted format whose first bytes ``head`` shows, if any (the registry's test for these formats, also
    what a compression's content is tested with)."""
    return next((f for f in CONVERTED if f.matches(head)), None)


def load(path: str | os.PathLike[str], fmt: ModuleType) -> SpanSet:
    """Loads one file in ``fmt`` (gzip or not, within the document limit). Never raises for bad content: what is
    wrong is counted in the data quality. A format with ``stream`` is read a value at a time and its requests
    loaded as they come, so the file is never held whole as Python objects."""
    src = remote.redacted_url(str(path)) if remote.is_url(path) else str(path)
    q = DataQuality(files=1)
    limits = InputLimits.resolve()
    if hasattr(fmt, "stream"):
        return _streamed(path, fmt, src, q, limits)
    try:
        data = read_document(path, limits)                   # over the document limit: an InputError, as said
    except (OSError, EOFError, zlib.error) as exc:          # (gzip.BadGzipFile is an OSError)
        q.add("unreadable", src, example=str(exc)[:200])
        return SpanSet(quality=q, sources=[src])
    names: dict[str, int] = {}
    if hasattr(fmt, "pieces"):                              # a compression: what is inside is read as what it is
        parts = fmt.pieces(data, src, q, limits)
        first = next(parts, b"")
        names[fmt.NAME] = 1
        inner = converted_for(first[:8192])
        if inner is None or inner is fmt:                   # OTLP JSON lines (the exporter's format: json), read as
            counter = _Lines()                              # they come out, never held whole
            out = load_pieces(counter.count(_pieces(itertools.chain([first], parts))), src, q)
            q.lines += counter.lines
            if not counter.lines:
                out = SpanSet(quality=q, sources=[src])
            out.quality, out.sources = q, [src]
            out.spellings = {src: {**names, **out.spellings.get(src, {})}}
            return out
        data = first + b"".join(parts)
        fmt = inner
    converted = 0

    def counted() -> Iterator[dict[str, Any]]:
        nonlocal converted
        for req in getattr(fmt, "lazy_requests", fmt.requests)(data, src, q):
            converted += 1
            yield req
    lines = 0 if fmt is collector_proto else data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    out = load_requests(counted(), src, q)
    q.lines += lines
    out.quality, out.sources = q, [src]
    out.spellings = {src: {**names, fmt.NAME: converted}} if converted else {}
    return out


def _pieces(parts: Iterator[bytes], size: int = PIECE_BYTES) -> Iterator[bytes]:
    """Parts of whole lines joined into pieces of about ``size`` bytes."""
    held: list[bytes] = []
    n = 0
    for part in parts:
        held.append(part)
        n += len(part)
        if n >= size:
            yield b"".join(held)
            held, n = [], 0
    if held:
        yield b"".join(held)


class _Lines:
    """Counts the lines of the pieces that pass (not blank ones)."""

    def __init__(self) -> None:
        self.lines = 0

    def count(self, pieces: Iterator[bytes]) -> Iterator[bytes]:
        for piece in pieces:
            if piece.strip():
                self.lines += piece.count(b"\n") + (0 if piece.endswith(b"\n") else 1)
                yield piece


def _streamed(path: str | os.PathLike[str], fmt: ModuleType, src: str, q: DataQuality,
              limits: InputLimits) -> SpanSet:
    opened: list[Document] = []

    def document() -> Document:
        doc = Document(path, limits)        # over the document limit: an InputError, as said
        opened.append(doc)
        return doc

    converted = 0

    def counted() -> Iterator[dict[str, Any]]:
        nonlocal converted
        for req in fmt.stream(document, src, q):
            converted += 1
            yield req
    try:
        out = load_requests(counted(), src, q)
    except (OSError, EOFError, zlib.error) as exc:          # (gzip.BadGzipFile is an OSError)
        q.add("unreadable", src, example=str(exc)[:200])
        return SpanSet(quality=q, sources=[src])
    last = opened[-1] if opened else None
    if last is not None:
        q.lines += last.lines
        if last.broken is not None:
            q.add("unreadable", src, example=f"the compressed stream ends early or is corrupt ({last.broken}); what "
                                             "came before was read")
    out.quality, out.sources = q, [src]
    out.spellings = {src: {fmt.NAME: converted}} if converted else {}
    return out
