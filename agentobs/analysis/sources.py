"""Resolve the SOURCES a user names (files, folders, globs, Jaeger URLs, object-store URLs) into one SpanSet.

A file is sniffed: OTLP JSON (JSON lines: our traces, a collector archive, a saved Jaeger answer; pretty-printed;
a JSON array of requests), another trace format (``formats``: Jaeger's own JSON, the OpenTelemetry SDK's console
output) or a chat-transcript file (tau2-bench results, a list of OpenAI-style runs). gzip is read
transparently. Nothing here raises for bad content: problems land in the data quality.
Files may also live in an object store or any fsspec filesystem (``s3://bucket/archive/``,
``gs://...``, ``file://...``, globs in them): ``remote`` names and opens them.
"""
from __future__ import annotations

import glob
import re
import zlib
from pathlib import Path
from typing import Callable, Iterable

from ..errors import InputError
from . import formats, remote
from ._otlp_read import head
from .jaeger import fetch, is_jaeger_url, parse_url
from .otlp import SpanSet, check, load_file
from .quality import DataQuality


def expand(sources: Iterable[str]) -> list[str]:
    """Files, folders (recursively), globs and URLs, in a stable order; a missing path is an InputError."""
    out: list[str] = []
    for s in sources:
        if is_jaeger_url(s):
            out.append(s)
            continue
        if remote.is_url(s):
            out.extend(remote.expand(s))
            continue
        if any(ch in s for ch in "*?[") and not Path(s).exists():    # a file may be named runs[1].jsonl
            hits = sorted(glob.glob(s, recursive=True))
            if not hits:
                raise InputError(f"{s}: the pattern matches no file")
            out.extend(str(p) for h in hits for p in _walk(Path(h)))
            continue
        p = Path(s)
        if not p.exists():
            raise InputError(f"{s}: no such file or folder")
        out.extend(str(x) for x in _walk(p))
    return out


def _walk(p: Path) -> list[Path]:
    if p.is_dir():
        return sorted(x for x in p.rglob("*") if x.is_file() and not x.name.startswith(".")
                      and not x.name.endswith((".tmp", "-manifest.json")))
    return [p]


# a JSON array whose first element is an OTLP request (or a saved Jaeger API v3 answer holding one)
_REQUEST_ARRAY = re.compile(rb'\[\s*\{\s*(?:"result"\s*:\s*\{\s*)?"(?:resourceSpans|resource_spans|'
                            rb'resourceLogs|resourceMetrics|resource_logs|resource_metrics)"\s*:')
# a line of OTLP JSON lines: it opens an object and names the resource spans (after a first line such as ``[]``)
_OTLP_LINE = re.compile(rb'^\{[^\n]*"(?:resourceSpans|resource_spans)"', re.M)
_BOM = b"\xef\xbb\xbf"          # a UTF-8 byte order mark: not part of the JSON


def sniff(path: Path | str) -> str:
    """'otlp', 'transcripts', the ``NAME`` of one of ``formats.FORMATS`` or 'unknown', from the first 8 KiB of the
    (decompressed) file, a UTF-8 byte order mark left out. A file that opens an array is a transcript file unless
    it is an array of OTLP requests or a line of the 8 KiB opens an object naming ``resourceSpans``."""
    try:
        raw = head(path, 8192)
    except (OSError, EOFError, zlib.error):
        return "unknown"
    raw = raw.removeprefix(_BOM)
    other = formats.sniff(raw)
    if other is not None:
        return str(other.NAME)
    text = raw.lstrip()
    if text.startswith(b"["):     # a JSON array of requests, or JSON lines after a first line of ``[]``
        return "otlp" if _REQUEST_ARRAY.match(text) or _OTLP_LINE.search(text) else "transcripts"
    if text.startswith(b"{"):
        if any(k in text for k in (b'"resourceSpans"', b'"resource_spans"')):
            return "otlp"
        if any(k in text for k in (b'"simulations"', b'"runs"', b'"messages"', b'"info"', b'"tasks"')):
            return "transcripts"
        return "otlp"
    return "otlp"            # let the OTLP loader describe what is wrong (empty, unknown format)


def load_sources(sources: Iterable[str], progress: Callable[[int], None] | None = None) -> SpanSet:
    parts: list[SpanSet] = []
    for s in expand(sources):
        if is_jaeger_url(s):
            parts.append(fetch(parse_url(s), progress))
            continue
        p = s if remote.is_url(s) else Path(s)
        kind = sniff(p)
        other = next((f for f in formats.FORMATS if kind == f.NAME), None)
        if kind == "transcripts" or other is not None:
            if other is not None:
                part = formats.load(p, other)
            else:
                from .transcripts import load_transcripts
                part = load_transcripts(p)
            if progress:
                progress(_size(s))
        else:
            part = load_file(p, progress)
        parts.append(part)
    out = SpanSet.concat(parts) if parts else SpanSet()
    if not parts:
        out.quality = DataQuality()
    return check(out)


def _size(source: str) -> int:
    if remote.is_url(source):
        return remote.size(source)
    try:
        return Path(source).stat().st_size
    except OSError:
        return 0


def total_bytes(sources: Iterable[str]) -> int:
    return sum(_size(s) for s in expand(sources) if not is_jaeger_url(s))
