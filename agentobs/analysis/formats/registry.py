"""Which reader reads a file: the ``Reader`` protocol, the closed and ordered list ``READERS``, and the one place a
file's first bytes decide its format (``reader_for``).

Every input that is a file (local, in an object store, a stream's copy) is read by the first reader whose ``sniff``
accepts its first 8 KiB (decompressed, a UTF-8 byte order mark left out): the converted formats (Jaeger's own
JSON, the SDK's console output, Zipkin JSON, the collector's zstd and protobuf files), chat transcripts, and OTLP
JSON last, which accepts anything and says in the data quality what is wrong with what is not OTLP (empty, another
binary format, ``input.magic``). Adding a format is one module and one entry here.
"""
from __future__ import annotations

import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Protocol

from ..input import magic
from ..input.read import head as first_bytes
from ..input.read import stored_size
from ..otlp.load import load_file
from ..spans.spanset import SpanSet
from . import convert

__all__ = ["READERS", "Reader", "reader_for", "reader_of"]

HEAD_BYTES = 8192        # what a reader's ``sniff`` sees of a file
_BOM = b"\xef\xbb\xbf"   # a UTF-8 byte order mark: not part of the JSON

Progress = Callable[[int], None]


class Reader(Protocol):
    """A trace format: its ``name`` (what the report's "read" section says), whether a file's first bytes are its
    own (``sniff``), and the file read into spans (``load``; ``name``: the source's name when ``path`` is a copy,
    a stream's). ``load`` never raises for bad content: what is wrong is counted in the data quality."""

    @property
    def name(self) -> str: ...

    def sniff(self, head: bytes) -> bool: ...

    def load(self, path: Path | str, *, name: str | None = None, progress: Progress | None = None) -> SpanSet: ...


@dataclass(frozen=True, kw_only=True)
class Converted:
    """A format whose documents are converted to OTLP requests, or a compression (``convert``)."""

    module: ModuleType

    @property
    def name(self) -> str:
        return str(self.module.NAME)

    def sniff(self, head: bytes) -> bool:
        return bool(self.module.matches(head))

    def load(self, path: Path | str, *, name: str | None = None, progress: Progress | None = None) -> SpanSet:
        out = convert.load(path, self.module)
        if progress:
            progress(stored_size(str(path)))
        return out


# a JSON array of OTLP requests (or of Jaeger-style answers holding them)
_REQUEST_ARRAY = re.compile(rb'\[\s*\{\s*(?:"result"\s*:\s*\{\s*)?"(?:resourceSpans|resource_spans|'
                            rb'resourceLogs|resourceMetrics|resource_logs|resource_metrics)"\s*:')
# a line of OTLP JSON lines: it opens an object and names the resource spans (after a first line such as ``[]``)
_OTLP_LINE = re.compile(rb'^\{[^\n]*"(?:resourceSpans|resource_spans)"', re.M)
_RESOURCE_SPANS = (b'"resourceSpans"', b'"resource_spans"')
_TRANSCRIPT_KEYS = (b'"simulations"', b'"runs"', b'"messages"', b'"info"', b'"tasks"')


@dataclass(frozen=True, kw_only=True)
class Transcripts:
    """Chat transcripts (tau2-bench results, a list of OpenAI-style runs): an array that is not of OTLP requests
    (nor JSON lines after a first line of ``[]``), or an object that names no resource spans and names a
    transcript file's keys."""

    name: str = "transcripts"

    def sniff(self, head: bytes) -> bool:
        if magic.utf16(head):
            return False         # the OTLP loader says what it is and what to do
        text = head.lstrip()
        if text.startswith(b"["):
            return not (_REQUEST_ARRAY.match(text) or _OTLP_LINE.search(text))
        if text.startswith(b"{"):
            return not any(k in text for k in _RESOURCE_SPANS) and any(k in text for k in _TRANSCRIPT_KEYS)
        return False

    def load(self, path: Path | str, *, name: str | None = None, progress: Progress | None = None) -> SpanSet:
        from .transcripts import load_transcripts  # (pulls in the transcript importer only when one is read)
        out = load_transcripts(path, name)   # run ids derive from the source's name: a stream's, not its copy's
        if progress:
            progress(stored_size(str(path)))
        return out


@dataclass(frozen=True, kw_only=True)
class Otlp:
    """OTLP JSON (JSON lines: our traces, a collector archive, a saved Jaeger answer; pretty-printed; a JSON array
    of requests): the last reader, which takes every file no other reader claims and says what is wrong with it."""

    name: str = "otlp"

    def sniff(self, head: bytes) -> bool:
        return True

    def load(self, path: Path | str, *, name: str | None = None, progress: Progress | None = None) -> SpanSet:
        return load_file(path, progress)


OTLP = Otlp()
TRANSCRIPTS = Transcripts()
# the closed list, in the order their ``sniff`` is asked; OTLP, which accepts anything, last
READERS: tuple[Reader, ...] = (*(Converted(module=m) for m in convert.CONVERTED), TRANSCRIPTS, OTLP)


def reader_for(head: bytes) -> Reader:
    """The reader of a file whose first (decompressed) bytes are ``head``."""
    head = head[:HEAD_BYTES].removeprefix(_BOM)
    return next(r for r in READERS if r.sniff(head))


def reader_of(path: Path | str) -> Reader:
    """The reader of the file (or object store URL) ``path``, from its first 8 KiB; a file that cannot be read is
    OTLP's, whose load says why."""
    try:
        return reader_for(first_bytes(path, HEAD_BYTES))
    except (OSError, EOFError, zlib.error):
        return OTLP
