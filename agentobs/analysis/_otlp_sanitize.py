"""The careful path of the OTLP loader: validate one parsed request, keep what is usable, count the rest.

Ids must be lowercase-able hex of the right length, timestamps integers (or digit strings); values of
the wrong kind are coerced when that is unambiguous and dropped otherwise. Bad spans are counted as
``bad_span`` in the data quality.
"""
from __future__ import annotations

import json
from typing import Any

from .quality import DataQuality

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


def sanitize_request(obj: Any, source: str, q: DataQuality) -> dict[str, Any] | None:
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
