"""Plain values as OTLP JSON ``AnyValue`` objects (canonical spelling): what our OTLP JSON file exporter writes and
what the analysis builds when it converts another trace format to OTLP requests."""
from __future__ import annotations

import base64
import re
from typing import Any

_INT64 = 2**63
_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def any_value(v: Any) -> dict[str, Any]:
    """The AnyValue of ``v``: booleans, integers (as text, OTLP JSON's 64-bit spelling; beyond 64 bits as a double
    when one holds it, else as text), floats (NaN and infinities in proto3 JSON's spelling, "NaN", "Infinity": a
    strict JSON parser reads the line), strings (a lone surrogate, which UTF-8 cannot hold, as U+FFFD), bytes
    (base64), sequences (arrayValue) and maps (kvlistValue); anything else as its text."""
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        if -_INT64 <= v < _INT64:
            return {"intValue": str(v)}
        try:
            return {"doubleValue": float(v)}
        except OverflowError:
            return {"stringValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v if v == v and abs(v) != float("inf") else _NON_FINITE[repr(v)]}
    if isinstance(v, str):
        return {"stringValue": text(v)}
    if isinstance(v, bytes):
        return {"bytesValue": base64.b64encode(v).decode()}
    if isinstance(v, (list, tuple)):
        return {"arrayValue": {"values": [any_value(x) for x in v]}}
    if isinstance(v, dict):
        return {"kvlistValue": {"values": attributes(v)}}
    return {"stringValue": text(str(v))}


def attributes(attrs: Any) -> list[dict[str, Any]]:
    """OTLP attributes (``{"key", "value"}`` objects) of a mapping."""
    return [{"key": text(k), "value": any_value(v)} for k, v in (attrs or {}).items()]


def text(s: str) -> str:
    """``s`` as UTF-8 can hold it: a lone surrogate (which a JSON line would carry as an escape no strict parser
    takes) becomes U+FFFD. ASCII text, the common case, is returned as is."""
    if s.isascii():
        return s
    return _SURROGATE.sub("\ufffd", s)


_SURROGATE = re.compile("[\ud800-\udfff]")
