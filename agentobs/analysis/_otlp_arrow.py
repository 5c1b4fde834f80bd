"""The fast path of the OTLP loader: parsed Arrow tables in, flat span, event and link tables out.

The nested resourceSpans/scopeSpans/spans lists are flattened with Arrow compute, attributes are
scattered into one column per key (typed by the contract where it names the key), and the blocks of a
file are unified and converted to pandas once.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from .quality import DataQuality
from .schema import empty_events, empty_links, empty_spans
from .spanset import SpanSet

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
    # an entry without a key (malformed input) gets -1: sorted before every key, it joins no column
    codes = pc.fill_null(keys.indices, -1).to_numpy(zero_copy_only=False)
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
