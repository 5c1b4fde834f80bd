"""The careful path of the OTLP loader: one parsed line in, the canonical spelling of what is usable out.

Accepts every spelling the fast path does (see ``_spelling``) and more: a span whose values have
mixed spellings, doubles written as "NaN", numbers where text belongs. Ids must be hex or base64 of the
right length and timestamps positive 64-bit integers (0 is OTLP's "unset"), or the span is dropped (``bad_span``);
a parent id naming the span itself is dropped (``bad_value``, the span is a root); any other value
that cannot be used is dropped alone (``bad_value``), its span kept. Text is made valid UTF-8.
"""
from __future__ import annotations

import base64
import binascii
import json
import math
import re
from typing import Any

from ..input.json_text import encodable
from ..spans.quality import DataQuality
from ._spelling import SPAN_KINDS, STATUS_CODES

_HEX = frozenset("0123456789abcdefABCDEF")
INT64 = (-(1 << 63), (1 << 63) - 1)


def _get(d: dict[str, Any], camel: str, snake: str | None = None) -> Any:
    v = d.get(camel)
    if v is None and snake is not None:
        v = d.get(snake)
    return v


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


class _Bad:
    """Counts the values dropped from one request (one line)."""

    def __init__(self, source: str, q: DataQuality):
        self.source, self.q = source, q

    def value(self, what: str, v: Any) -> None:
        self.q.add("bad_value", self.source, example=f"{what}: {_short(v)} is not usable")


def _short(v: Any) -> str:
    try:
        text = json.dumps(v, default=str)
    except (ValueError, TypeError, RecursionError):
        text = type(v).__name__
    return text[:40]


def _text(v: Any) -> str:
    """A string that encodes as UTF-8 (lone surrogates from \\ud800-style escapes replaced)."""
    return encodable(v if isinstance(v, str) else str(v))


def hex_id(v: Any, nbytes: int) -> str | None:
    """Lower-case hex from hex (any case) or base64 (standard or URL-safe, padded or not); None if neither."""
    if not isinstance(v, str):
        return None
    if len(v) == 2 * nbytes and set(v) <= _HEX:
        out = v.lower()
    else:
        try:
            raw = base64.b64decode(v + "=" * (-len(v) % 4), altchars=b"-_" if ("-" in v or "_" in v) else None,
                                   validate=True)
        except (binascii.Error, ValueError):
            return None
        if len(raw) != nbytes:
            return None
        out = raw.hex()
    return None if out == "0" * (2 * nbytes) else out


def _int64(v: Any) -> int | None:
    """A 64-bit integer from an integer, an integral float or a string of digits; None otherwise."""
    if isinstance(v, bool):
        return None
    if isinstance(v, float):
        v = int(v) if v.is_integer() else None
    if isinstance(v, str):
        v = _int_text(v)
    return v if isinstance(v, int) and INT64[0] <= v <= INT64[1] else None


_DIGITS = re.compile(r"-?[0-9]{1,19}", re.ASCII)    # (as the fast path: more digits are out of range)


def _int_text(v: str) -> int | None:
    """The integer a string of ASCII digits (an optional minus sign first, white space around) writes, as the fast
    path reads it; None for anything else ("--5", "²", "٣")."""
    t = v.strip()
    return int(t) if _DIGITS.fullmatch(t) else None


def _nanos(v: Any) -> str | None:
    """A time in nanoseconds since the epoch; None when it is not one, or is 0 (OTLP: unset) or negative."""
    t = _int64(v)
    return str(t) if t is not None and t > 0 else None


def unset_time_example(span_id: str, start: int, end: int) -> str:
    """What is wrong with a span whose start or end time is 0 or negative (the fast and careful paths say it alike)."""
    what, v = ("startTimeUnixNano", start) if start <= 0 else ("endTimeUnixNano", end)
    return f"span {span_id}: {what} {v} is {'unset' if v == 0 else 'before 1970'} (the span has no usable time)"


def self_parent_example(span_id: str) -> str:
    return f"parentSpanId: {span_id} is the span's own id (the span is taken as a root)"


def _enum(v: Any, names: tuple[str, ...], what: str, bad: _Bad) -> int:
    if v is None:
        return 0
    if isinstance(v, str):
        key = v.strip().upper()
        if key in names:
            return names.index(key)
        number = _int_text(key)
        if number is not None:
            v = number
    if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < len(names):
        return v
    bad.value(what, v)
    return 0


def _scalar(v: Any, bad: _Bad, what: str) -> dict[str, Any] | None:
    if not isinstance(v, dict):
        return None
    s = _get(v, "stringValue", "string_value")
    if s is not None:
        return {"stringValue": _text(s) if isinstance(s, str) else json.dumps(s, default=str)}
    i = _get(v, "intValue", "int_value")
    if i is not None:
        if isinstance(i, bool):
            i = int(i)
        if isinstance(i, float) and i.is_integer():
            i = int(i)
        if isinstance(i, str):
            number = _int_text(i)
            i = i if number is None else number         # (the text itself is the bad value's example)
        if isinstance(i, int) and INT64[0] <= i <= INT64[1]:
            return {"intValue": str(i)}
        bad.value(what, i)
        return None
    d = _get(v, "doubleValue", "double_value")
    if d is not None:
        try:                                   # "NaN", "Infinity": valid protobuf JSON, but no usable number
            x = float(d) if not isinstance(d, bool) else None
        except (TypeError, ValueError, OverflowError):       # (an integer beyond a double's range)
            x = None
        if x is None or not math.isfinite(x):
            bad.value(what, d)
            return None
        return {"doubleValue": x}
    b = _get(v, "boolValue", "bool_value")
    if b is not None:
        if isinstance(b, bool):
            return {"boolValue": b}
        bad.value(what, b)
        return None
    raw = _get(v, "bytesValue", "bytes_value")
    if raw is not None:
        return {"bytesValue": _text(raw)}
    return None


def _value(v: Any, bad: _Bad, what: str) -> dict[str, Any] | None:
    if not isinstance(v, dict):
        return None
    arr = _get(v, "arrayValue", "array_value")
    if isinstance(arr, dict):
        items = _list(arr.get("values"))
        return {"arrayValue": {"values": [x for x in (_scalar(i, bad, what) for i in items) if x]}}
    kv = _get(v, "kvlistValue", "kvlist_value")
    if isinstance(kv, dict):
        entries = []
        for e in _list(kv.get("values")):
            if isinstance(e, dict) and isinstance(e.get("key"), str):
                sv = _scalar(e.get("value"), bad, what)
                if sv is not None:
                    entries.append({"key": _text(e["key"]), "value": sv})
        return {"kvlistValue": {"values": entries}}
    return _scalar(v, bad, what)


def _attrs(attrs: Any, bad: _Bad) -> list[dict[str, Any]]:
    out = []
    for a in attrs if isinstance(attrs, list) else []:
        if isinstance(a, dict) and isinstance(a.get("key"), str):
            val = _value(a.get("value"), bad, a["key"][:40])
            if val is not None:
                out.append({"key": _text(a["key"]), "value": val})
    return out


def _span(s: Any, bad: _Bad) -> dict[str, Any] | None:
    if not isinstance(s, dict):
        return None
    tid = hex_id(_get(s, "traceId", "trace_id"), 16)
    sid = hex_id(_get(s, "spanId", "span_id"), 8)
    t0 = _nanos(_get(s, "startTimeUnixNano", "start_time_unix_nano"))
    t1 = _nanos(_get(s, "endTimeUnixNano", "end_time_unix_nano"))
    raw_parent = _get(s, "parentSpanId", "parent_span_id")
    parent = hex_id(raw_parent, 8)
    parent_ok = parent is not None or raw_parent in (None, "") or (
        isinstance(raw_parent, str) and set(raw_parent) == {"0"})
    if tid is None or sid is None or t0 is None or t1 is None or not parent_ok:
        return None
    if parent is not None and parent == sid:
        bad.q.add("bad_value", bad.source, example=self_parent_example(sid))
        parent = None
    name = s.get("name")
    out: dict[str, Any] = {"traceId": tid, "spanId": sid, "startTimeUnixNano": t0, "endTimeUnixNano": t1,
                           "name": _text(name) if isinstance(name, str) else "",
                           "kind": _enum(s.get("kind"), SPAN_KINDS, "span kind", bad),
                           "attributes": _attrs(s.get("attributes"), bad)}
    if parent:
        out["parentSpanId"] = parent
    events = []
    for e in _list(s.get("events")):
        if not isinstance(e, dict):
            bad.value("span event", e)
            continue
        name = e.get("name")
        event: dict[str, Any] = {"name": "" if name is None else _text(name),
                                 "attributes": _attrs(e.get("attributes"), bad)}
        raw_t = _get(e, "timeUnixNano", "time_unix_nano")
        t = _int64(raw_t)
        if t is not None and t >= 0:
            event["timeUnixNano"] = str(t)
        elif raw_t is not None:         # kept without a time, as on the fast path (a missing time is not counted)
            bad.value("span event timeUnixNano", raw_t)
        events.append(event)
    out["events"] = events
    links = []
    for link in _list(s.get("links")):
        if not isinstance(link, dict):
            continue
        lt, ls = hex_id(_get(link, "traceId", "trace_id"), 16), hex_id(_get(link, "spanId", "span_id"), 8)
        if lt and ls:
            links.append({"traceId": lt, "spanId": ls})
        else:
            bad.value("span link", link)
    out["links"] = links
    st = s.get("status")
    if isinstance(st, dict):
        msg = st.get("message")
        out["status"] = {"code": _enum(st.get("code"), STATUS_CODES, "status code", bad),
                         "message": _text(msg) if isinstance(msg, str) else None}
    return out


def _why_dropped(s: Any) -> str:
    """The example of a dropped span: its time when that is 0 or negative, else its first fields."""
    if not isinstance(s, dict):
        return _short(s)
    tid, sid = hex_id(_get(s, "traceId", "trace_id"), 16), hex_id(_get(s, "spanId", "span_id"), 8)
    t0, t1 = (_int64(_get(s, k, k2)) for k, k2 in (("startTimeUnixNano", "start_time_unix_nano"),
                                                    ("endTimeUnixNano", "end_time_unix_nano")))
    if tid is not None and sid is not None and t0 is not None and t1 is not None and min(t0, t1) <= 0:
        return unset_time_example(sid, t0, t1)
    return json.dumps({k: s.get(k) for k in list(s)[:4]}, default=str)[:80]


def sanitize_request(obj: Any, source: str, q: DataQuality) -> dict[str, Any] | None:
    """The request in the canonical spelling with its usable spans; None when it is not OTLP at all."""
    if isinstance(obj, dict) and isinstance(obj.get("result"), dict):
        obj = obj["result"]                       # a saved Jaeger API v3 answer
    rs_list = _get(obj, "resourceSpans", "resource_spans") if isinstance(obj, dict) else None
    if not isinstance(rs_list, list):
        return None
    bad = _Bad(source, q)
    out = []
    for rs in rs_list:
        if not isinstance(rs, dict):
            continue
        res = _dict(rs.get("resource"))
        scopes = []
        groups = [_get(rs, "scopeSpans", "scope_spans"),
                  _get(rs, "instrumentationLibrarySpans", "instrumentation_library_spans")]
        for group in groups:
            for ss in group if isinstance(group, list) else []:
                if not isinstance(ss, dict):
                    continue
                spans = []
                for s in _list(ss.get("spans")):
                    clean = _span(s, bad)
                    if clean is None:
                        q.add("bad_span", source, example=_why_dropped(s))
                    else:
                        spans.append(clean)
                scope = _dict(ss.get("scope"))
                scopes.append({"scope": {"name": _text(scope.get("name", ""))}, "spans": spans})
        out.append({"resource": {"attributes": _attrs(res.get("attributes"), bad)}, "scopeSpans": scopes})
    return {"resourceSpans": out}
