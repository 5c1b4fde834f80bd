"""Load OTLP JSON (our files, the collector's file-exporter archive, Jaeger API v3 answers) into DataFrames.

Fast path: ``pyarrow.json`` parses a whole file against an explicit OTLP schema, the nested
lists are flattened with Arrow compute, and attributes are scattered into one column per
key, all vectorized. A file the fast path cannot parse (a truncated line, a wrong type)
goes through the careful path: line by line, bad lines and bad spans counted in
``DataQuality`` and dropped, the rest re-encoded and sent through the same pipeline.
"""
from __future__ import annotations

import gzip
import io
import json
import os
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.json as pj

from ._otlp_arrow import _PARSE, _Decoded, decode_arrow, decode_table, frames, pivot_attributes, table_to_frame
from ._otlp_sanitize import sanitize_request
from .quality import DataQuality, Issue
from .spanset import SpanSet

# -- entry points ----------------------------------------------------------------------------------

def load_file(path: str | os.PathLike[str], progress: Callable[[int], None] | None = None) -> SpanSet:
    """Loads one OTLP JSON lines file (optionally .gz). Never raises for bad content.

    The fast path streams the file into pyarrow (no copy of the whole file in Python); only a
    file the fast path refuses is read into memory for the careful, line-by-line path.
    """
    p = Path(path)
    src = str(p)
    q = DataQuality(files=1)
    try:
        size = p.stat().st_size
        gz, head = _head(p)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        q.add("unreadable", src, example=str(exc))
        return SpanSet(quality=q, sources=[src])
    if not _looks_like_json(head, src, q):
        return SpanSet(quality=q, sources=[src])
    out = _fast_stream(p, gz, size, src, q) if b"resourceSpans" in head else None
    if out is None:                       # the careful path: line by line
        try:
            data = _read_bytes(p)
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            q.add("unreadable", src, example=str(exc))
            return SpanSet(quality=q, sources=[src])
        q.lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
        careful = _careful_parse(data, src, q)
        out = _decode(careful, src, q) if careful is not None else None
    if progress:
        progress(size)
    out = out or SpanSet(quality=q)
    out.quality, out.sources = q, [src]
    return out


def _decode(table: pa.Table, source: str, q: DataQuality) -> SpanSet | None:
    """Vectorized decoding; None when the table holds something the fast path cannot take (e.g. bad UTF-8)."""
    try:
        return decode_table(table, source, q)
    except (UnicodeDecodeError, pa.ArrowException, ValueError, TypeError, OverflowError):
        return None


def _looks_like_json(head: bytes, source: str, q: DataQuality) -> bool:
    """False (and the reason recorded) for an empty file or one that does not start like OTLP JSON."""
    stripped = head.lstrip()
    if not stripped:
        q.add("empty_file", source)
        return False
    if stripped[:1] != b"{":
        q.add("unknown_format", source, example=stripped[:40].decode("utf-8", "replace"))
        return False
    return True


def _head(p: Path, n: int = 65536) -> tuple[bool, bytes]:
    with open(p, "rb") as f:
        magic = f.read(2)
        f.seek(0)
        if magic == b"\x1f\x8b":
            with gzip.open(f) as g:
                return True, g.read(n)
        return False, f.read(n)


def _fast_stream(p: Path, gz: bool, size: int, source: str, q: DataQuality) -> SpanSet | None:
    """Streams the file through pyarrow block by block, decoding each block as it comes (bounded memory).

    None when pyarrow refuses the file (a bad line, a type it cannot read): the careful path takes over,
    and whatever this attempt recorded in the data quality is rolled back first.
    """
    block = 1 << 25
    saved = [Issue(i.kind, i.count, i.source, list(i.examples)) for i in q.issues]
    while True:
        parts: list[_Decoded] = []
        rows = 0
        try:
            stream = pa.input_stream(str(p), compression="gzip" if gz else None)
            reader = pj.open_json(stream, read_options=pj.ReadOptions(block_size=block), parse_options=_PARSE)
            for batch in reader:
                rows += batch.num_rows
                part = decode_arrow(pa.Table.from_batches([batch]), source, q)
                if part is not None:
                    parts.append(part)
            out = frames(parts, q)
            q.lines += rows
            return out
        except pa.ArrowInvalid as exc:
            q.issues = [Issue(i.kind, i.count, i.source, list(i.examples)) for i in saved]
            if "straddl" in str(exc) and block < max(size, 1) * (8 if gz else 1) + 1:
                block *= 4
                continue
            return None
        except (OSError, UnicodeDecodeError, ValueError, TypeError, OverflowError, pa.ArrowException):
            q.issues = [Issue(i.kind, i.count, i.source, list(i.examples)) for i in saved]
            return None


def load_bytes(data: bytes, source: str, quality: DataQuality | None = None) -> SpanSet:
    q = quality or DataQuality(files=1)
    if not _looks_like_json(data, source, q):
        return SpanSet(quality=q, sources=[source])
    table = _fast_parse(data)
    out = _decode(table, source, q) if table is not None else None
    if out is None:
        careful = _careful_parse(data, source, q)
        out = _decode(careful, source, q) if careful is not None else None
    out = out or SpanSet(quality=q)
    out.quality, out.sources = q, [source]
    return out


def load_request(obj: dict[str, Any], source: str, quality: DataQuality | None = None) -> SpanSet:
    """Decodes one parsed OTLP request (e.g. Jaeger API v3's ``result``)."""
    q = quality or DataQuality()
    sanitized = sanitize_request(obj, source, q)
    if sanitized is None:
        q.add("not_otlp", source)
        return SpanSet(quality=q, sources=[source])
    table = _fast_parse((json.dumps(sanitized) + "\n").encode())
    out = (_decode(table, source, q) if table is not None else None) or SpanSet(quality=q)
    out.quality, out.sources = q, [source]
    return out


def _read_bytes(p: Path) -> bytes:
    with open(p, "rb") as f:
        head = f.read(2)
        f.seek(0)
        if head == b"\x1f\x8b":
            with gzip.open(f) as g:
                return g.read()
        return f.read()


def _fast_parse(data: bytes) -> pa.Table | None:
    block = 1 << 24
    while True:
        try:
            return pj.read_json(io.BytesIO(data), read_options=pj.ReadOptions(block_size=block), parse_options=_PARSE)
        except pa.ArrowInvalid as exc:
            if "straddl" in str(exc) and block < len(data) + 1:
                block = min(block * 4, len(data) + 1)
                continue
            return None


# -- the careful path ------------------------------------------------------------------------------

def _careful_parse(data: bytes, source: str, q: DataQuality) -> pa.Table | None:
    text_lines = data.split(b"\n")
    good: list[str] = []
    whole: Any = None
    if data.count(b"\n") > 0 and not _looks_like_lines(text_lines):
        try:
            whole = json.loads(data)       # one pretty-printed document
        except ValueError:
            whole = None
    if whole is not None:
        candidates = [(1, whole)]
    else:
        candidates = []
        for n, raw in enumerate(text_lines, 1):
            if not raw.strip():
                continue
            try:
                candidates.append((n, json.loads(raw)))
            except ValueError:
                q.add("invalid_json", source, example=f"line {n}: {raw[:60].decode('utf-8', 'replace')}")
    for n, obj in candidates:
        if isinstance(obj, dict) and "result" in obj and isinstance(obj["result"], dict):
            obj = obj["result"]            # a saved Jaeger API v3 answer
        req = sanitize_request(obj, source, q)
        if req is None:
            q.add("not_otlp", source, example=f"line {n}")
            continue
        good.append(json.dumps(req))
    if not good:
        return None
    return _fast_parse(("\n".join(good) + "\n").encode())


def _looks_like_lines(lines: list[bytes]) -> bool:
    first = next((ln for ln in lines if ln.strip()), b"")
    return first.lstrip().startswith(b"{") and first.rstrip().endswith(b"}")


# -- checks after loading ------------------------------------------------------------------------

def check(spanset: SpanSet) -> SpanSet:
    """Vectorized structural checks: duplicates dropped, negative durations, orphans and rootless traces counted."""
    from .runs import span_keys

    df, q = spanset.spans, spanset.quality
    if df.empty:
        return spanset
    bad = (df["trace_id"].isna() | df["span_id"].isna()).to_numpy()
    if bad.any():                         # the fast path lets a null id through; such a span is unusable
        for s_, n in df.loc[bad, "source"].astype(str).value_counts().items():
            q.add("bad_span", s_, int(n))
        df = spanset.spans = df.loc[~bad].reset_index(drop=True)
        if df.empty:
            return spanset
    src = df["source"].astype(str).to_numpy()

    def count(kind: str, mask: np.ndarray) -> None:
        if mask.any():
            for s_, n in pd.Series(src[mask]).value_counts().items():
                q.add(kind, str(s_), int(n))

    keys = span_keys(df)
    dup = pd.Series(keys.key).duplicated(keep="first").to_numpy()
    if dup.any():
        count("duplicate_span", dup)
        df = df.loc[~dup].reset_index(drop=True)
        src = src[~dup]
        keys = span_keys(df)
    start = df["start_ns"].astype("float64").to_numpy()
    end = df["end_ns"].astype("float64").to_numpy()
    count("negative_duration", end < start)
    count("orphan_span", ~keys.true_root & (keys.parent < 0))
    rooted = np.zeros(int(keys.trace.max()) + 1, dtype=bool)
    rooted[keys.trace[keys.true_root]] = True
    rootless = ~rooted[keys.trace]
    if rootless.any():
        per = pd.DataFrame({"s": src[rootless], "t": keys.trace[rootless]}).drop_duplicates()
        for s_, n in per["s"].value_counts().items():
            q.add("missing_root", str(s_), int(n))
    spanset.spans = df
    return spanset


__all__ = ["SpanSet", "check", "decode_table", "load_bytes", "load_file", "load_request", "pivot_attributes",
           "table_to_frame"]
