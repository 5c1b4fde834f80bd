"""An attribute's values as its column takes them: each value field of the AnyValue struct converted (intValue
parsed, doubles finite, text checked as UTF-8, arrays as lists of text, kvlists as JSON text), and a key whose
values come in several kinds made one column (the contract's type where it names the key, else the widest;
``wrong_type`` counted).
"""
from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..spans.quality import DataQuality
from ..spans.spanset import as_text
from ._arrow_values import _finite, _first_field, _ints, _text, field_of
from ._spelling import Spelling

_FIELDS = ("stringValue", "intValue", "doubleValue", "boolValue", "bytesValue")
_KIND_OF = {"stringValue": "string", "intValue": "int", "doubleValue": "double", "boolValue": "bool",
            "bytesValue": "string", "arrayValue": "string[]", "kvlistValue": "string"}


def _convert_field(f: str, a: pa.Array, q: DataQuality, source: str) -> pa.Array:
    """A value field as its column takes it: intValue parsed, arrays and kvlists as text lists and JSON text, text
    checked as UTF-8, doubles finite."""
    return (_ints(a, q, source, "intValue") if f == "intValue" else
            _string_lists(a, q, source) if f == "arrayValue" else
            _kvlist_text(a) if f == "kvlistValue" else
            _text(a, q, source, "attribute value") if f in ("stringValue", "bytesValue") else
            _finite(a, q, source) if f == "doubleValue" else a)


def _canonical_values(values: pa.Array, sp: Spelling) -> pa.Array:
    """The AnyValue struct with lowerCamelCase field names (snake_case input renamed, buffers shared)."""
    if not sp.snake:
        return values
    names = [values.type.field(i).name for i in range(values.type.num_fields)]
    back = {sp.name_of(c): c for c in (*_FIELDS, "arrayValue", "kvlistValue")}
    children = [values.field(i) for i in range(len(names))]
    return pa.StructArray.from_arrays(children, names=[back.get(n, n) for n in names],
                                      mask=values.is_null() if values.null_count else None)


def _typed(fields: dict[str, pa.Array], name: str, expected: str | None, source: str, q: DataQuality) -> pa.Array:
    """One column from values of several kinds: the contract's type when it names one, else the widest."""
    if expected == "string[]" and "stringValue" in fields:
        fields = _arrays_from_json_text(fields)
    kinds = {_KIND_OF[f] for f in fields}
    n = len(next(iter(fields.values())))
    if expected and kinds != {expected} and not (expected == "double" and kinds <= {"int", "double"}):
        target_field = {"string": "stringValue", "int": "intValue", "double": "doubleValue", "bool": "boolValue",
                        "string[]": "arrayValue"}[expected]
        good = fields[target_field].is_valid().true_count if target_field in fields else 0
        q.add("wrong_type", source, count=n - good,
              example=f"{name}: expected {expected}, got {'/'.join(sorted(kinds))}")
    target = expected or (next(iter(kinds)) if len(kinds) == 1 else
                          "double" if kinds <= {"int", "double"} else "string")
    get = fields.get
    if target == "string[]":
        return get("arrayValue", pa.nulls(n, pa.list_(pa.string())))
    if target == "int":
        ints = get("intValue", pa.nulls(n, pa.int64()))
        if "doubleValue" in fields:
            d = fields["doubleValue"]
            whole = pc.and_(pc.is_finite(d), pc.less(pc.abs(d), 2.0 ** 63))
            ints = pc.coalesce(ints, pc.cast(pc.round(pc.if_else(whole, d, pa.scalar(None, pa.float64()))),
                                             pa.int64(), safe=False))
        if "stringValue" in fields:
            ints = pc.coalesce(ints, _ints(fields["stringValue"], None, source, name))
        return ints
    if target == "double":
        d = get("doubleValue", pa.nulls(n, pa.float64()))
        if "intValue" in fields:
            d = pc.coalesce(d, pc.cast(fields["intValue"], pa.float64(), safe=False))     # (> 2^53: the nearest)
        if "stringValue" in fields:
            d = pc.coalesce(d, pc.cast(_ints(fields["stringValue"], None, source, name), pa.float64(), safe=False))
        return d
    if target == "bool":
        b = get("boolValue", pa.nulls(n, pa.bool_()))
        if "stringValue" in fields:
            b = pc.coalesce(b, pc.equal(pc.utf8_lower(fields["stringValue"]), "true"))
        return b
    # string: everything as text
    parts = [as_text(fields[f]) for f in ("stringValue", "intValue", "doubleValue", "boolValue", "bytesValue",
                                          "kvlistValue", "arrayValue") if f in fields]
    return pc.coalesce(*parts) if len(parts) > 1 else parts[0]


def _arrays_from_json_text(fields: dict[str, pa.Array]) -> dict[str, pa.Array]:
    """A string array given as its JSON text (``["stop"]``) read as the array: Jaeger's storages of the v1 span
    model (Badger, Elasticsearch, OpenSearch, Cassandra) keep array attributes that way. Text that is no JSON array
    is the array's one value (Mastra writes ``gen_ai.response.finish_reasons`` as ``"tool-calls"``)."""
    arrays, rest = [], []
    for t in fields["stringValue"].to_pylist():
        v = None
        if t is not None and t[:1] == "[":
            try:
                v = json.loads(t)
            except (ValueError, RecursionError):
                v = None
            if not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
                v = None
        elif t is not None:
            v = [t]
        arrays.append(v)
        rest.append(t if v is None else None)
    parsed = pa.array(arrays, pa.list_(pa.string()))
    if parsed.null_count == len(parsed):
        return fields
    out = dict(fields)
    out["arrayValue"] = pc.coalesce(fields["arrayValue"], parsed) if "arrayValue" in fields else parsed
    if all(t is None for t in rest):
        del out["stringValue"]
    else:
        out["stringValue"] = pa.array(rest, pa.string())
    return out


def _string_lists(arr: pa.Array, q: DataQuality, source: str) -> pa.Array:
    inner = pc.list_flatten(arr)
    sf = _first_field(inner, ("stringValue", "string_value"))
    names = {inner.type.field(i).name for i in range(inner.type.num_fields)}

    def get(*cands: str) -> pa.Array:
        return field_of(inner, next(c for c in cands if c in names))
    text = pc.coalesce(_text(get(sf), q, source, "attribute value"),
                       pc.cast(_ints(get("intValue", "int_value"), q, source, "intValue"), pa.string()),
                       pc.cast(get("doubleValue", "double_value"), pa.string()),
                       pc.cast(get("boolValue", "bool_value"), pa.string()))
    return pa.ListArray.from_arrays(arr.offsets, text, mask=arr.is_null())


def _kvlist_text(arr: pa.Array) -> pa.Array:
    """A kvlistValue as a JSON object text (its scalar values; nested lists are not kept)."""
    out: list[str | None] = []
    for entries in arr.to_pylist():
        if entries is None:
            out.append(None)
            continue
        obj: dict[str, Any] = {}
        for e in entries:
            if not e or e.get("key") is None:
                continue
            v = e.get("value") or {}
            obj[e["key"]] = next((v[k] for k in v if v[k] is not None), None)
        out.append(json.dumps(obj, sort_keys=True, default=str))
    return pa.array(out, type=pa.string())
