"""Plain values as OTLP JSON ``AnyValue`` objects (canonical spelling): what our OTLP JSON file exporter writes and
what the analysis builds when it converts another trace format to OTLP requests."""
from __future__ import annotations

import base64
from typing import Any


def any_value(v: Any) -> dict[str, Any]:
    """The AnyValue of ``v``: booleans, integers (as text, OTLP JSON's 64-bit spelling), floats, strings, bytes
    (base64), sequences (arrayValue) and maps (kvlistValue); anything else as its text."""
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, str):
        return {"stringValue": v}
    if isinstance(v, bytes):
        return {"bytesValue": base64.b64encode(v).decode()}
    if isinstance(v, (list, tuple)):
        return {"arrayValue": {"values": [any_value(x) for x in v]}}
    if isinstance(v, dict):
        return {"kvlistValue": {"values": attributes(v)}}
    return {"stringValue": str(v)}


def attributes(attrs: Any) -> list[dict[str, Any]]:
    """OTLP attributes (``{"key", "value"}`` objects) of a mapping."""
    return [{"key": k, "value": any_value(v)} for k, v in (attrs or {}).items()]
