"""Load OTLP JSON (our files, the collector's file-exporter archive, Jaeger API v3 answers) into DataFrames.

A file is read in bounded pieces of whole lines (``input.read``: gzip transparently, line and
decompression limits) by one thread and parsed by two others, ahead of the decoding (``_ahead``). Each piece
takes the fast path: ``pyarrow.json`` parses it against the schema of its spelling (``_spelling``:
every valid OTLP JSON spelling), the nested lists are flattened and the values checked with Arrow
compute (``_arrow``). Only lines the fast path cannot take go the careful path, one line at a time
(``_parse``, ``_sanitize``). Nothing here raises for bad content: one bad value costs that
value, one bad span that span, one bad line that line, and each is counted in the ``DataQuality``. The
limits raise ``InputError`` (a likely decompression bomb).
"""
from __future__ import annotations

import json
import os
import re
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa

from ...errors import InputError
from ..input import magic, remote
from ..input import read as reading
from ..input.limits import LINE_ENV, InputLimits, human
from ..spans import key_bound
from ..spans.quality import DataQuality
from ..spans.schema import empty_events, empty_links, empty_spans
from ..spans.spanset import SpanSet
from . import _ahead, _arrow_memory
from ._arrow import Decoded
from ._arrow_pandas import table_to_frame
from ._arrow_unify import unify
from ._parse import Layout, Parsed, layout, parse_documents, parse_piece
from ._spelling import Spelling

# -- entry points ----------------------------------------------------------------------------------


def load_file(path: str | os.PathLike[str], progress: Callable[[int], None] | None = None, *,
              limits: InputLimits | None = None) -> SpanSet:
    """Loads one OTLP JSON lines file (optionally .gz). Never raises for bad content.

    Memory is bounded by the piece size (``InputLimits.chunk_bytes``) plus the spans kept.
    """
    lim = limits or InputLimits.resolve()
    url = remote.is_url(path)                 # an object in an fsspec filesystem (s3://...): read as it is named
    p = path if url else Path(path)
    src = remote.redacted_url(str(path)) if url else str(p)
    q = DataQuality(files=1)
    try:
        head = reading.head(p)
    except (OSError, EOFError, zlib.error) as exc:
        q.add("unreadable", src, example=str(exc))
        return SpanSet(quality=q, sources=[src])
    if not _looks_like_json(head, src, q):
        return SpanSet(quality=q, sources=[src])
    spelling = Spelling.sniff(head)
    with _arrow_memory.load_pool():
        how = layout(head)
        if how is not Layout.LINES:
            whole = _load_documents(p, how, src, lim=lim, q=q, out=Parsed(spelling=spelling), progress=progress)
            if whole is not None:
                return whole
        return _load(p, src, lim, q=q, out=Parsed(spelling=spelling), progress=progress)


def _load_documents(p: str | os.PathLike[str], how: Layout, src: str, *, lim: InputLimits, q: DataQuality,
                    out: Parsed, progress: Callable[[int], None] | None) -> SpanSet | None:
    """A file of JSON written over several lines (pretty-printed) or of one JSON array, read whole; None when it is
    to be read line by line after all (it is JSON lines whose first lines are cut short, it could not be read, or it
    is over the document limit, which is then said)."""
    try:
        data, broken = reading.read_document_prefix(p, lim)
    except InputError as exc:
        q.add("unreadable", src, example=f"read line by line, not as one document: {exc}")
        return None
    except OSError:
        return None                         # the line by line reading says what it meets
    if broken is not None:
        _truncated(q, src, broken)
    whole = _documents(data, how, src, q, out)
    if whole is not None and progress:
        progress(len(data))
    return whole


def _documents(data: bytes, how: Layout, source: str, q: DataQuality, out: Parsed) -> SpanSet | None:
    """The spans of a document of JSON values (``how``), or None when it is JSON lines after all."""
    if not parse_documents(data, how, source, q, out):
        return None
    q.lines += _lines(data)
    return _finish(out, q, source, how)


def _load(p: str | os.PathLike[str], src: str, lim: InputLimits, *, q: DataQuality, out: Parsed,
          progress: Callable[[int], None] | None) -> SpanSet:
    def long_line(n: int, length: int) -> None:
        q.add("line_too_long", src, example=f"line {n}: {human(length)} over the {human(lim.max_line_bytes)} "
                                            f"limit; set {LINE_ENV} to raise it")
    try:
        for item in _ahead.ahead(p, lim, lambda: out.spelling, src):
            for n, length in item.long_lines:
                long_line(n, length)
            if item.error is not None:
                raise item.error
            q.lines += item.lines
            size = len(item.piece)
            parse_piece(item.piece, item.first, src, q=q, out=out, max_block=lim.max_line_bytes, parsed=item.parsed)
            item.done()
            if progress and size:
                progress(size)
    except reading._Truncated as exc:
        _truncated(q, src, exc)
    except OSError as exc:
        q.add("unreadable", src, example=str(exc))
    return _finish(out, q, src)


def _truncated(q: DataQuality, src: str, exc: Exception) -> None:
    q.add("unreadable", src, example=f"the compressed stream ends early or is corrupt ({exc}); what came before "
                                     "was read")


def load_bytes(data: bytes | bytearray, source: str, quality: DataQuality | None = None, *,
               limits: InputLimits | None = None) -> SpanSet:
    """Loads OTLP JSON lines held in memory (a document, or an answer of a server)."""
    lim = limits or InputLimits.resolve()
    q = quality or DataQuality(files=1)
    head = bytes(data[:65536])
    if not _looks_like_json(head, source, q):
        return SpanSet(quality=q, sources=[source])
    out = Parsed(spelling=Spelling.sniff(head))
    how = layout(head)
    whole = _documents(bytes(data), how, source, q, out) if how is not Layout.LINES else None
    if whole is not None:
        return whole
    start, line = 0, 1
    view = memoryview(data)
    while start < len(data):
        end = data.find(b"\n", start + lim.chunk_bytes)
        end = len(data) if end < 0 else end + 1
        piece = view[start:end]             # (a view: a copy of a piece of an answer of 100 MiB is 100 MiB more)
        breaks = data.count(b"\n", start, end)
        q.lines += breaks + (0 if data[end - 1:end] == b"\n" else 1)
        parse_piece(piece, line, source, q=q, out=out, max_block=lim.max_line_bytes)
        line += breaks
        start = end
    return _finish(out, q, source)


PIECE_BYTES = 2 << 20        # converted requests are parsed in pieces of about this many bytes of JSON lines


def load_pieces(pieces: Iterable[bytes], source: str, quality: DataQuality) -> SpanSet:
    """Loads pieces of whole OTLP JSON lines as they come (each parsed, then let go): what is held at once is one
    piece and the spans decoded so far. Lines are not counted (the caller knows what a line of its input is)."""
    out: Parsed | None = None
    line = 1
    for piece in pieces:
        if out is None:
            out = Parsed(spelling=Spelling.sniff(piece[:65536]))
        parse_piece(piece, line, source, q=quality, out=out, max_block=len(piece) + 1)
        line += piece.count(b"\n")
    return _finish(out or Parsed(), quality, source)


def request_lines(requests: Iterable[Mapping[str, Any]], source: str, quality: DataQuality,
                  piece_bytes: int = PIECE_BYTES) -> Iterator[bytes]:
    """OTLP requests (plain values, e.g. made by a converter) as pieces of JSON lines of about ``piece_bytes``; a
    request ``json`` cannot write (nested too deeply) is counted (``not_otlp``) and left out."""
    held: list[bytes] = []
    size = 0
    for req in requests:
        try:
            text = (json.dumps(req, separators=(",", ":")) + "\n").encode()
        except (TypeError, ValueError, RecursionError) as exc:
            quality.add("not_otlp", source, example=str(exc))
            continue
        held.append(text)
        size += len(text)
        if size >= piece_bytes:
            yield b"".join(held)
            held, size = [], 0
    if held:
        yield b"".join(held)


def load_requests(requests: Iterable[Mapping[str, Any]], source: str, quality: DataQuality) -> SpanSet:
    """Loads OTLP requests (plain values) as they come, in pieces (``request_lines``, ``load_pieces``): a converter
    that yields them one trace or one batch of spans at a time never holds the whole input as Python objects."""
    return load_pieces(request_lines(requests, source, quality), source, quality)


def load_request(obj: dict[str, Any], source: str, quality: DataQuality | None = None) -> SpanSet:
    """Decodes one parsed OTLP request (e.g. Jaeger API v3's ``result``): its bad spans cost only themselves."""
    q = quality if quality is not None else DataQuality()
    try:
        data = (json.dumps(obj, separators=(",", ":")) + "\n").encode()
    except (TypeError, ValueError, RecursionError) as exc:
        q.add("not_otlp", source, example=str(exc))
        return SpanSet(quality=q, sources=[source])
    lines = q.lines
    out = load_bytes(data, source, q)
    q.lines = lines
    return out


def _lines(data: bytes) -> int:
    """The number of lines of the text (a last line without a line break counts)."""
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


def _finish(out: Parsed, q: DataQuality, source: str, how: Layout = Layout.LINES) -> SpanSet:
    ss = frames(out.parts, q, source)
    ss.quality, ss.sources = q, [source]
    shown = f", {how.value}" if how.value else ""
    ss.spellings = {source: {sp.label() + shown: rows
                             for sp, rows in out.spellings.items()}}
    return ss


# -- many pieces, one SpanSet ---------------------------------------------------------------------

def frames(parts: list[Decoded], q: DataQuality, source: str = "") -> SpanSet:
    """Unifies the pieces' column types, concatenates them and converts to pandas once (the attribute columns
    within their bound over all pieces: ``spans.keys``)."""
    if not parts:
        return SpanSet(quality=q)
    spans = unify(_bounded([p.spans for p in parts], q, source))
    events = unify(_bounded([p.events.drop_columns(["_owner"]) for p in parts if p.events is not None], q, source))
    links = unify([p.links.drop_columns(["_owner"]) for p in parts if p.links is not None])
    return SpanSet(spans=table_to_frame(spans) if spans is not None else empty_spans(),
                   events=table_to_frame(events) if events is not None else empty_events(),
                   links=table_to_frame(links) if links is not None else empty_links(), quality=q)


def _bounded(tables: list[pa.Table], q: DataQuality, source: str) -> list[pa.Table]:
    if len(tables) < 2:
        return tables                   # (one piece: its pivot kept it within the bound)
    tables, dropped = key_bound.bounded_tables(tables)
    if dropped:
        q.add("too_many_keys", source, len(dropped), key_bound.example(dropped))
    return tables


def _looks_like_json(head: bytes, source: str, q: DataQuality) -> bool:
    """False (and the reason recorded) for an empty file or one that does not start like OTLP JSON."""
    stripped = head.lstrip()
    if not stripped:
        q.add("empty_file", source)
        return False
    if (stripped[:1] == b"{" or layout(stripped) is Layout.ARRAY) and not magic.utf16(head):
        return True
    what = magic.describe(head)
    if what is None and _LATER_OBJECT.search(head):     # JSON lines whose first line is damaged (tail -c, a
        return True                                     # comment, a stray value): that line costs only itself
    q.add("unknown_format", source, example=magic.example(head))
    return False


_LATER_OBJECT = re.compile(rb'\n[ \t\r]*\{\s*"')          # a later line that starts an object


__all__ = ["load_bytes", "load_file", "load_request"]
