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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from .quality import DataQuality, Issue
from .schema import EVENT_BASE, LINK_BASE, SPAN_BASE, empty_events, empty_links, empty_spans

_SCALAR = pa.struct([("stringValue", pa.string()), ("intValue", pa.string()), ("doubleValue", pa.float64()),
                     ("boolValue", pa.bool_())])
_VALUE = pa.struct([("stringValue", pa.string()), ("intValue", pa.string()), ("doubleValue", pa.float64()),
                    ("boolValue", pa.bool_()), ("arrayValue", pa.struct([("values", pa.list_(_SCALAR))]))])
_ATTRS = pa.list_(pa.struct([("key", pa.string()), ("value", _VALUE)]))
_SPAN = pa.struct([
    ("traceId", pa.string()), ("spanId", pa.string()), ("parentSpanId", pa.string()), ("name", pa.string()),
    ("kind", pa.int64()), ("startTimeUnixNano", pa.string()), ("endTimeUnixNano", pa.string()),
    ("attributes", _ATTRS),
    ("events", pa.list_(pa.struct([("timeUnixNano", pa.string()), ("name", pa.string()), ("attributes", _ATTRS)]))),
    ("links", pa.list_(pa.struct([("traceId", pa.string()), ("spanId", pa.string()), ("attributes", _ATTRS)]))),
    ("status", pa.struct([("code", pa.int64()), ("message", pa.string())])),
])
_REQUEST = pa.schema([("resourceSpans", pa.list_(pa.struct([
    ("resource", pa.struct([("attributes", _ATTRS)])),
    ("scopeSpans", pa.list_(pa.struct([("scope", pa.struct([("name", pa.string())])),
                                       ("spans", pa.list_(_SPAN))]))),
])))])
_PARSE = pj.ParseOptions(explicit_schema=_REQUEST, unexpected_field_behavior="ignore")


@dataclass
class SpanSet:
    """Spans, their events and links, and what was wrong with the input."""
    spans: pd.DataFrame = field(default_factory=empty_spans)
    events: pd.DataFrame = field(default_factory=empty_events)
    links: pd.DataFrame = field(default_factory=empty_links)
    quality: DataQuality = field(default_factory=DataQuality)
    sources: list[str] = field(default_factory=list)

    @staticmethod
    def concat(parts: list[SpanSet]) -> SpanSet:
        parts = [p for p in parts if p is not None]
        out = SpanSet()
        if not parts:
            return out
        out.spans = _concat([p.spans for p in parts], empty_spans)
        out.events = _concat([p.events for p in parts], empty_events)
        out.links = _concat([p.links for p in parts], empty_links)
        for p in parts:
            out.quality.extend(p.quality)
            out.sources.extend(p.sources)
        return out


def _concat(frames: list[pd.DataFrame], empty: Callable[[], pd.DataFrame]) -> pd.DataFrame:
    frames = [f for f in frames if len(f)]
    if not frames:
        return empty()
    if len(frames) == 1:
        return frames[0]
    cols: dict[str, list[Any]] = {}
    for f in frames:
        for c in f.columns:
            cols.setdefault(c, []).append(f[c].dtype)
    fixed = []
    for f in frames:
        f = f.copy(deep=False)
        for c, dtypes in cols.items():
            if c in f.columns and len({str(d) for d in dtypes}) > 1:
                f[c] = _widen(f[c], dtypes)
        fixed.append(f)
    return pd.concat(fixed, ignore_index=True, sort=False)


def _widen(s: pd.Series, dtypes: list[Any]) -> pd.Series:
    kinds = {str(d) for d in dtypes}
    if kinds <= {"Int64", "Float64", "int64", "float64"}:
        return s.astype("Float64")
    return s.astype("string")


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
    sanitized = _sanitize_request(obj, source, q)
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
        req = _sanitize_request(obj, source, q)
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


_HEX = set("0123456789abcdefABCDEF")


def _hex_id(v: Any, n: int) -> str | None:
    if isinstance(v, str) and len(v) == n and set(v) <= _HEX:
        return v.lower()
    return None


def _nanos(v: Any) -> str | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, str) and v.isdigit():
        return v
    return None


def _sanitize_value(v: Any) -> dict[str, Any] | None:
    if not isinstance(v, dict):
        return None
    if "stringValue" in v:
        return {"stringValue": v["stringValue"] if isinstance(v["stringValue"], str) else json.dumps(v["stringValue"])}
    if "intValue" in v:
        iv = v["intValue"]
        if isinstance(iv, bool):
            return None
        if isinstance(iv, (int, float)) or (isinstance(iv, str) and iv.lstrip("-").isdigit()):
            return {"intValue": str(int(iv))}
        return {"stringValue": str(iv)}
    if "doubleValue" in v:
        dv = v["doubleValue"]
        try:
            return {"doubleValue": float(dv)} if not isinstance(dv, bool) else None
        except (TypeError, ValueError):
            return {"stringValue": str(dv)}
    if "boolValue" in v:
        return {"boolValue": bool(v["boolValue"])} if isinstance(v["boolValue"], bool) else None
    if "arrayValue" in v and isinstance(v["arrayValue"], dict):
        vals = [_sanitize_value(x) for x in v["arrayValue"].get("values") or []]
        return {"arrayValue": {"values": [x for x in vals if x and "arrayValue" not in x]}}
    return None


def _sanitize_attrs(attrs: Any) -> list[dict[str, Any]]:
    out = []
    for a in attrs if isinstance(attrs, list) else []:
        if isinstance(a, dict) and isinstance(a.get("key"), str):
            val = _sanitize_value(a.get("value"))
            if val is not None:
                out.append({"key": a["key"], "value": val})
    return out


def _sanitize_span(s: Any) -> dict[str, Any] | None:
    if not isinstance(s, dict):
        return None
    tid, sid = _hex_id(s.get("traceId"), 32), _hex_id(s.get("spanId"), 16)
    t0, t1 = _nanos(s.get("startTimeUnixNano")), _nanos(s.get("endTimeUnixNano"))
    if tid is None or sid is None or t0 is None or t1 is None:
        return None
    out: dict[str, Any] = {"traceId": tid, "spanId": sid, "startTimeUnixNano": t0, "endTimeUnixNano": t1,
                           "name": s.get("name") if isinstance(s.get("name"), str) else "",
                           "kind": s.get("kind") if isinstance(s.get("kind"), int) and not isinstance(s.get("kind"),
                                                                                                        bool) else 0,
                           "attributes": _sanitize_attrs(s.get("attributes"))}
    parent = _hex_id(s.get("parentSpanId"), 16)
    if parent:
        out["parentSpanId"] = parent
    events = []
    for e in s.get("events") or [] if isinstance(s.get("events"), list) else []:
        if isinstance(e, dict) and _nanos(e.get("timeUnixNano")) is not None:
            events.append({"timeUnixNano": _nanos(e.get("timeUnixNano")), "name": str(e.get("name", "")),
                           "attributes": _sanitize_attrs(e.get("attributes"))})
    out["events"] = events
    links = []
    for link in s.get("links") or [] if isinstance(s.get("links"), list) else []:
        if isinstance(link, dict) and _hex_id(link.get("traceId"), 32) and _hex_id(link.get("spanId"), 16):
            links.append({"traceId": link["traceId"].lower(), "spanId": link["spanId"].lower(),
                          "attributes": _sanitize_attrs(link.get("attributes"))})
    out["links"] = links
    st = s.get("status")
    if isinstance(st, dict):
        code = st.get("code")
        if isinstance(code, str):
            code = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}.get(code, 0)
        out["status"] = {"code": code if isinstance(code, int) and not isinstance(code, bool) else 0,
                         "message": st.get("message") if isinstance(st.get("message"), str) else None}
    return out


def _sanitize_request(obj: Any, source: str, q: DataQuality) -> dict[str, Any] | None:
    if not isinstance(obj, dict) or not isinstance(obj.get("resourceSpans"), list):
        return None
    out = []
    for rs in obj["resourceSpans"]:
        if not isinstance(rs, dict):
            continue
        res = rs.get("resource") if isinstance(rs.get("resource"), dict) else {}
        scopes = []
        for ss in rs.get("scopeSpans") or [] if isinstance(rs.get("scopeSpans"), list) else []:
            if not isinstance(ss, dict):
                continue
            spans = []
            for s in ss.get("spans") or [] if isinstance(ss.get("spans"), list) else []:
                clean = _sanitize_span(s)
                if clean is None:
                    q.add("bad_span", source, example=json.dumps(s)[:80])
                else:
                    spans.append(clean)
            scope = ss.get("scope") if isinstance(ss.get("scope"), dict) else {}
            scopes.append({"scope": {"name": str(scope.get("name", ""))}, "spans": spans})
        out.append({"resource": {"attributes": _sanitize_attrs(res.get("attributes"))}, "scopeSpans": scopes})
    return {"resourceSpans": out}


# -- vectorized decoding -----------------------------------------------------------------------------

@dataclass
class _Decoded:
    """One parsed block, flattened: spans (base columns + one per attribute key), events, links."""
    spans: pa.Table
    events: pa.Table | None
    links: pa.Table | None


def decode_table(table: pa.Table, source: str, q: DataQuality) -> SpanSet:
    part = decode_arrow(table, source, q)
    return frames([part] if part is not None else [], q)


def decode_arrow(table: pa.Table, source: str, q: DataQuality) -> _Decoded | None:
    rs = _flat_chunks(table.column("resourceSpans"))
    if rs is None:
        return None
    rs_flat = pc.list_flatten(rs)
    service = _resource_service(pc.struct_field(rs_flat, "resource"))
    ss = pc.struct_field(rs_flat, "scopeSpans")
    ss_parent = pc.list_parent_indices(ss)
    ss_flat = pc.list_flatten(ss)
    sp = pc.struct_field(ss_flat, "spans")
    sp_parent = pc.list_parent_indices(sp)
    spans = pc.list_flatten(sp)
    n = len(spans)
    if n == 0:
        return None
    span_res = pc.take(ss_parent, sp_parent)
    cols: dict[str, Any] = {}
    trace_id = pc.struct_field(spans, "traceId")
    span_id = pc.struct_field(spans, "spanId")
    cols["trace_id"] = trace_id
    cols["span_id"] = span_id
    parent = pc.struct_field(spans, "parentSpanId")
    cols["parent_span_id"] = pc.if_else(pc.equal(parent, ""), pa.scalar(None, pa.string()), parent)
    cols["name"] = pc.struct_field(spans, "name")
    cols["kind"] = pc.fill_null(pc.struct_field(spans, "kind"), 0).cast(pa.int8())
    cols["start_ns"] = _to_int(pc.struct_field(spans, "startTimeUnixNano"))
    cols["end_ns"] = _to_int(pc.struct_field(spans, "endTimeUnixNano"))
    status = pc.struct_field(spans, "status")
    cols["status_code"] = pc.fill_null(pc.struct_field(status, "code"), 0).cast(pa.int8())
    cols["status_message"] = pc.struct_field(status, "message")
    cols["service_name"] = pc.take(service, span_res)
    cols["source"] = pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([source]))
    for name, col in pivot_attributes(pc.struct_field(spans, "attributes"), n, source, q).items():
        cols[f"attr:{name}" if name in cols else name] = col
    events = _events_arrow(pc.struct_field(spans, "events"), trace_id, span_id, source, q)
    links = _links_arrow(pc.struct_field(spans, "links"), trace_id, span_id)
    return _Decoded(pa.table(cols), events, links)


def frames(parts: list[_Decoded], q: DataQuality) -> SpanSet:
    """Unifies the blocks' column types, concatenates them and converts to pandas once."""
    if not parts:
        return SpanSet(quality=q)
    spans = _unify([p.spans for p in parts])
    events = _unify([p.events for p in parts if p.events is not None])
    links = _unify([p.links for p in parts if p.links is not None])
    return SpanSet(spans=table_to_frame(spans) if spans is not None else empty_spans(),
                   events=table_to_frame(events) if events is not None else empty_events(),
                   links=table_to_frame(links) if links is not None else empty_links(), quality=q)


def _unify(tables: list[pa.Table]) -> pa.Table | None:
    if not tables:
        return None
    if len(tables) == 1:
        return tables[0]
    types: dict[str, set[pa.DataType]] = {}
    for t in tables:
        for f in t.schema:
            types.setdefault(f.name, set()).add(f.type)
    target: dict[str, pa.DataType] = {}
    for name, ts in types.items():
        if len(ts) == 1:
            continue
        if all(pa.types.is_integer(t) or pa.types.is_floating(t) for t in ts):
            target[name] = pa.float64()
        elif not any(pa.types.is_dictionary(t) for t in ts):
            target[name] = pa.string()
    fixed = []
    for t in tables:
        for name, typ in target.items():
            if name in t.column_names and t.schema.field(name).type != typ:
                col = t.column(name)
                if pa.types.is_list(col.type):
                    col = pa.chunked_array([pc.binary_join(c, ",") for c in col.chunks], pa.string())
                t = t.set_column(t.column_names.index(name), name, col.cast(typ))
        fixed.append(t)
    return pa.concat_tables(fixed, promote_options="default")


def _flat_chunks(col: pa.ChunkedArray) -> pa.Array | None:
    if col.num_chunks == 0:
        return None
    return col.combine_chunks() if col.num_chunks > 1 else col.chunk(0)


def _to_int(arr: pa.Array) -> pa.Array:
    try:
        return pc.cast(arr, pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.array(pd.to_numeric(arr.to_pandas(), errors="coerce").astype("Int64"), type=pa.int64())


def _resource_service(resource: pa.Array) -> pa.Array:
    attrs = pc.struct_field(resource, "attributes")
    n = len(resource)
    parent = pc.list_parent_indices(attrs).to_numpy()
    flat = pc.list_flatten(attrs)
    keys = pc.struct_field(flat, "key")
    mask = pc.equal(keys, "service.name").to_numpy(zero_copy_only=False)
    vals = pc.struct_field(pc.struct_field(flat, "value"), "stringValue")
    pos = np.full(n, -1, dtype=np.int64)
    idx = np.nonzero(mask)[0]
    pos[parent[idx]] = idx
    return pc.take(vals, pa.array(pos, mask=pos < 0))


_FIELDS = ("stringValue", "intValue", "doubleValue", "boolValue")
_KIND_OF = {"stringValue": "string", "intValue": "int", "doubleValue": "double", "boolValue": "bool",
            "arrayValue": "string[]"}


def pivot_attributes(attrs: pa.Array, n: int, source: str, q: DataQuality) -> dict[str, pa.Array]:
    """One Arrow column per attribute key, aligned with the n owners of ``attrs``.

    Each value field is extracted (and intValue parsed) once for all entries; per key, one scatter
    of entry indices and one ``take`` build the column. A key whose values come in several kinds,
    or in another kind than the contract says, goes through ``_typed`` and is counted as wrong_type.
    """
    from ..telemetry.semconv import ATTRIBUTE_TYPES

    parent = pc.list_parent_indices(attrs).to_numpy()
    flat = pc.list_flatten(attrs)
    if len(flat) == 0:
        return {}
    keys = pc.dictionary_encode(pc.struct_field(flat, "key"))
    names = keys.dictionary.to_pylist()
    codes = keys.indices.to_numpy(zero_copy_only=False)
    if len(names) < 32768:
        codes = codes.astype(np.int16)      # numpy sorts 16-bit keys with a radix sort
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(names) + 1))
    values = pc.struct_field(flat, "value")
    fields = {f: pc.struct_field(values, f) for f in _FIELDS}
    fields["arrayValue"] = pc.struct_field(pc.struct_field(values, "arrayValue"), "values")
    valid = {f: a.is_valid().to_numpy(zero_copy_only=False) for f, a in fields.items() if a.null_count < len(a)}
    converted: dict[str, pa.Array] = {}

    def field(f: str) -> pa.Array:
        if f not in converted:
            a = fields[f]
            converted[f] = _to_int(a) if f == "intValue" else _string_lists(a) if f == "arrayValue" else a
        return converted[f]

    out: dict[str, pa.Array] = {}
    for k, name in enumerate(names):
        sel = order[bounds[k]:bounds[k + 1]]
        if len(sel) == 0 or name is None:
            continue
        present = [f for f, m in valid.items() if m[sel].any()]
        expected = ATTRIBUTE_TYPES.get(name)
        kinds = {_KIND_OF[f] for f in present}
        pos = np.full(n, -1, dtype=np.int64)
        pos[parent[sel]] = sel
        idx = pa.array(pos, mask=pos < 0)
        if len(present) == 1 and (expected is None or kinds == {expected}):
            out[name] = pc.take(field(present[0]), idx)
        elif not present:
            out[name] = pa.nulls(n, pa.string())
        else:
            local = np.full(n, -1, dtype=np.int64)
            local[parent[sel]] = np.arange(len(sel))
            col = _typed(pc.take(values, pa.array(sel)), name, expected, source, q)
            out[name] = pc.take(col, pa.array(local, mask=local < 0))
    return out


def _typed(v: pa.Array, name: str, expected: str | None, source: str, q: DataQuality) -> pa.Array:
    fields = {f: pc.struct_field(v, f) for f in _FIELDS}
    present = {f for f, a in fields.items() if a.null_count < len(a)}
    arr = pc.struct_field(pc.struct_field(v, "arrayValue"), "values")
    if arr.null_count < len(arr):
        present.add("arrayValue")
    kinds = {_KIND_OF[f] for f in present}
    if expected and kinds and kinds != {expected} and not (expected == "double" and kinds <= {"int", "double"}):
        bad = len(v) - (fields[_field_of(expected)].is_valid().true_count if expected != "string[]" else
                        arr.is_valid().true_count)
        q.add("wrong_type", source, count=bad, example=f"{name}: expected {expected}, got {'/'.join(sorted(kinds))}")
    target = expected or (next(iter(kinds)) if len(kinds) == 1 else
                          "double" if kinds <= {"int", "double"} else "string")
    if target == "string[]":
        return _string_lists(arr)
    if target == "int":
        ints = _to_int(fields["intValue"])
        if "doubleValue" in present:
            ints = pc.coalesce(ints, pc.cast(pc.round(fields["doubleValue"]), pa.int64(), safe=False))
        if "stringValue" in present:
            ints = pc.coalesce(ints, _to_int(_numeric_strings(fields["stringValue"])))
        return ints
    if target == "double":
        d = pc.coalesce(fields["doubleValue"], pc.cast(_to_int(fields["intValue"]), pa.float64()))
        if "stringValue" in present:
            d = pc.coalesce(d, pc.cast(_to_int(_numeric_strings(fields["stringValue"])), pa.float64()))
        return d
    if target == "bool":
        b = fields["boolValue"]
        if "stringValue" in present:
            b = pc.coalesce(b, pc.equal(pc.utf8_lower(fields["stringValue"]), "true"))
        return b
    # string: everything as text
    s = fields["stringValue"]
    if "intValue" in present:
        s = pc.coalesce(s, fields["intValue"])
    if "doubleValue" in present:
        s = pc.coalesce(s, pc.cast(fields["doubleValue"], pa.string()))
    if "boolValue" in present:
        s = pc.coalesce(s, pc.cast(fields["boolValue"], pa.string()))
    return s


def _field_of(kind: str) -> str:
    return {"string": "stringValue", "int": "intValue", "double": "doubleValue", "bool": "boolValue"}[kind]


def _numeric_strings(s: pa.Array) -> pa.Array:
    ok = pc.match_substring_regex(s, r"^-?\d+$")
    return pc.if_else(ok, s, pa.scalar(None, pa.string()))


def _string_lists(arr: pa.Array) -> pa.Array:
    inner = pc.list_flatten(arr)
    text = pc.struct_field(inner, "stringValue")
    text = pc.coalesce(text, pc.struct_field(inner, "intValue"),
                       pc.cast(pc.struct_field(inner, "doubleValue"), pa.string()),
                       pc.cast(pc.struct_field(inner, "boolValue"), pa.string()))
    offsets = arr.offsets
    return pa.ListArray.from_arrays(offsets, text, mask=arr.is_null())


def table_to_frame(t: pa.Table) -> pd.DataFrame:
    def mapper(typ: pa.DataType) -> Any:
        if pa.types.is_integer(typ) and typ != pa.int8():
            return pd.Int64Dtype()
        if pa.types.is_floating(typ):
            return pd.Float64Dtype()
        if pa.types.is_boolean(typ):
            return pd.BooleanDtype()
        if pa.types.is_list(typ):
            return pd.ArrowDtype(typ)
        if pa.types.is_string(typ) or pa.types.is_large_string(typ):
            return pd.StringDtype("pyarrow")
        return None
    df = t.to_pandas(types_mapper=mapper, self_destruct=True, split_blocks=True)
    for c in ("kind", "status_code"):
        if c in df.columns:
            df[c] = df[c].astype("int8")
    for c in ("start_ns", "end_ns"):
        if c in df.columns:
            df[c] = df[c].astype("Int64")
    if "source" in df.columns:
        df["source"] = df["source"].astype("category")
    return df


def _events_arrow(events: pa.Array, trace_id: pa.Array, span_id: pa.Array, source: str,
                  q: DataQuality) -> pa.Table | None:
    parent = pc.list_parent_indices(events)
    flat = pc.list_flatten(events)
    if len(flat) == 0:
        return None
    cols = {"trace_id": pc.take(trace_id, parent), "span_id": pc.take(span_id, parent),
            "name": pc.struct_field(flat, "name"), "time_ns": _to_int(pc.struct_field(flat, "timeUnixNano"))}
    for name, col in pivot_attributes(pc.struct_field(flat, "attributes"), len(flat), source, q).items():
        cols[f"attr:{name}" if name in cols else name] = col
    return pa.table(cols)


def _links_arrow(links: pa.Array, trace_id: pa.Array, span_id: pa.Array) -> pa.Table | None:
    parent = pc.list_parent_indices(links)
    flat = pc.list_flatten(links)
    if len(flat) == 0:
        return None
    return pa.table({"trace_id": pc.take(trace_id, parent), "span_id": pc.take(span_id, parent),
                     "linked_trace_id": pc.struct_field(flat, "traceId"),
                     "linked_span_id": pc.struct_field(flat, "spanId")})


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


def iter_files(paths: Iterable[Path]) -> Iterable[Path]:
    for p in paths:
        if p.is_dir():
            yield from sorted(x for x in p.rglob("*") if x.is_file() and not x.name.startswith("."))
        else:
            yield p


# re-exported for tests
__all__ = ["SpanSet", "check", "decode_table", "load_bytes", "load_file", "load_request", "pivot_attributes",
           "SPAN_BASE", "EVENT_BASE", "LINK_BASE"]
