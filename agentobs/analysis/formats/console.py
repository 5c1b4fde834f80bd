"""What the OpenTelemetry Python SDK's ``ConsoleSpanExporter`` writes (redirected to a file, the usual first
exporter of a project with no backend yet): one JSON object per span, indented or not, one after another. Each
object: ``name``, ``context`` (``trace_id``, ``span_id`` as ``0x`` hex), ``kind`` (``SpanKind.CLIENT``),
``parent_id``, ``start_time`` and ``end_time`` (ISO 8601, UTC, microseconds), ``status`` (``status_code``,
``description``), ``attributes``, ``events``, ``links`` and ``resource`` as plain JSON values. The instrumentation
scope is not written, so none is kept. Text between the objects (other output of the program) costs one line each
(``invalid_json``), as in OTLP JSON lines.
"""
from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from typing import Any

from .._otlp_parse import values_as_lines
from ..quality import DataQuality
from ._build import KINDS, STATUS_CODES, attributes, hex_id, request

NAME = "OpenTelemetry Python ConsoleSpanExporter"

_HEAD = re.compile(rb'\s*\{\s*"name"\s*:\s*"(?:[^"\\]|\\.)*"\s*,\s*"context"\s*:\s*\{\s*"trace_id"\s*:')
_TIME = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:?\d\d)?$")


def matches(head: bytes) -> bool:
    return _HEAD.match(head) is not None


def requests(data: bytes, source: str, q: DataQuality) -> list[dict[str, Any]]:
    """One OTLP request for the whole file (spans grouped by resource)."""
    resources: dict[str, list[dict[str, Any]]] = {}
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for n, line in enumerate((values_as_lines(data, one_line_values=True) or b"").split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            span = json.loads(line)
        except (ValueError, RecursionError) as exc:
            q.add("invalid_json", source, example=f"line {n}: {str(exc)[:120]}")
            continue
        if not isinstance(span, dict) or not isinstance(span.get("context"), dict):
            q.add("not_otlp", source, example=f"line {n}: not a span of the ConsoleSpanExporter")
            continue
        res: dict[str, Any] = span["resource"] if isinstance(span.get("resource"), dict) else {}
        try:
            converted = _span(span)
            key = json.dumps(res.get("attributes"), sort_keys=True, default=str)
            resources.setdefault(key, attributes(res.get("attributes")))
        except RecursionError:                  # a value nested deeper than Python's recursion limit goes
            q.add("bad_span", source, example=f"line {n}: a span nested too deeply to convert")
            continue
        groups.setdefault((key, "", ""), []).append(converted)
    return [request(groups, resources)] if groups else []


def _span(span: dict[str, Any]) -> dict[str, Any]:
    ctx = span["context"]
    status: dict[str, Any] = span["status"] if isinstance(span.get("status"), dict) else {}
    out: dict[str, Any] = {
        "traceId": hex_id(ctx.get("trace_id"), 32), "spanId": hex_id(ctx.get("span_id"), 16),
        "name": str(span.get("name", "")),
        "kind": KINDS.get(str(span.get("kind", "")).removeprefix("SpanKind."), 0),
        "startTimeUnixNano": _ns(span.get("start_time")), "endTimeUnixNano": _ns(span.get("end_time")),
        "attributes": attributes(span.get("attributes")),
        "status": {"code": STATUS_CODES.get(str(status.get("status_code", "")), 0)},
    }
    if status.get("description"):
        out["status"]["message"] = str(status["description"])
    if span.get("parent_id"):
        out["parentSpanId"] = hex_id(span["parent_id"], 16)
    events = [{"timeUnixNano": _ns(e.get("timestamp")), "name": str(e.get("name", "")),
               "attributes": attributes(e.get("attributes"))}
              for e in span.get("events") or [] if isinstance(e, dict)]
    if events:
        out["events"] = events
    links = [{"traceId": hex_id(lk["context"].get("trace_id"), 32), "spanId": hex_id(lk["context"].get("span_id"), 16),
              "attributes": attributes(lk.get("attributes"))}
             for lk in span.get("links") or [] if isinstance(lk, dict) and isinstance(lk.get("context"), dict)]
    if links:
        out["links"] = links
    return out


def _ns(text: Any) -> str:
    """Nanoseconds since the epoch of an ISO 8601 time as the SDK writes it (UTC); "" when it is not one (the
    loader then counts the span as bad)."""
    m = _TIME.match(text) if isinstance(text, str) else None
    if m is None:
        return ""
    zone = m.group(3) or "Z"
    try:
        whole = datetime.fromisoformat(m.group(1) + ("+00:00" if zone == "Z" else zone))
    except ValueError:
        return ""
    seconds = int(whole.astimezone(timezone.utc).timestamp())
    return str(seconds * 1_000_000_000 + int((m.group(2) or "0").ljust(9, "0")))
