"""What the OpenTelemetry Python SDK's ``ConsoleSpanExporter`` writes (redirected to a file, the usual first
exporter of a project with no backend yet): one JSON object per span, indented or not, one after another. Each
object: ``name``, ``context`` (``trace_id``, ``span_id`` as ``0x`` hex), ``kind`` (``SpanKind.CLIENT``),
``parent_id``, ``start_time`` and ``end_time`` (ISO 8601, UTC, microseconds), ``status`` (``status_code``,
``description``), ``attributes``, ``events``, ``links`` and ``resource`` as plain JSON values. The instrumentation
scope is not written, so none is kept. Text between the objects (other output of the program, a span cut short)
costs one ``invalid_json`` per stretch, up to the next line that opens a span, named by its first line's number.
"""
from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any, BinaryIO

from ..input.json_stream import Broken, Reader
from ..spans.quality import DataQuality
from ._build import KINDS, STATUS_CODES, Fields, attributes, hex_id, request

NAME = "OpenTelemetry Python ConsoleSpanExporter"

# a span's first fields; its name may be any JSON scalar (the SDK writes a string: another value is counted later)
_HEAD = re.compile(rb'\s*\{\s*"name"\s*:\s*(?:"(?:[^"\\]|\\.)*"|[^",{}\[\]]*)\s*,'
                   rb'\s*"context"\s*:\s*\{\s*"trace_id"\s*:')
_OPENS_OBJECT = re.compile(rb'^[ \t]*\{', re.M)
_TIME = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:?\d\d)?$")


def matches(head: bytes) -> bool:
    """The first bytes are a span; or, after lines of other output of the program (a banner, a log line), the
    first line that opens an object is one."""
    if _HEAD.match(head) is not None:
        return True
    first = _OPENS_OBJECT.search(head)
    return first is not None and first.start() > 0 and _HEAD.match(head, first.start()) is not None


def requests(data: bytes, source: str, q: DataQuality) -> list[dict[str, Any]]:
    """``stream`` of a document held in memory, as a list."""
    return list(stream(lambda: io.BytesIO(data), source, q))


BATCH = 2000                    # spans in one request


def stream(document: Callable[[], BinaryIO], source: str, q: DataQuality) -> Iterator[dict[str, Any]]:
    """OTLP requests of ``BATCH`` spans (grouped by resource), the file read a span at a time
    (``Reader.values``)."""
    resources: dict[str, list[dict[str, Any]]] = {}
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    held = 0
    with document() as f:
        for n, span in Reader(f, strict=False).values():
            if isinstance(span, Broken):
                q.add("invalid_json", source, example=f"line {n}: {span.reason[:120]}")
                continue
            if not isinstance(span, dict) or not isinstance(span.get("context"), dict):
                q.add("not_otlp", source, example=f"line {n}: not a span of the ConsoleSpanExporter")
                continue
            res: dict[str, Any] = span["resource"] if isinstance(span.get("resource"), dict) else {}
            try:
                converted = _span(span, Fields(source, q, f"line {n}"))
                key = json.dumps(res.get("attributes"), sort_keys=True, default=str)
                resources.setdefault(key, attributes(res.get("attributes")))
            except RecursionError:                  # a value nested deeper than Python's recursion limit goes
                q.add("bad_span", source, example=f"line {n}: a span nested too deeply to convert")
                continue
            groups.setdefault((key, "", ""), []).append(converted)
            held += 1
            if held >= BATCH:
                yield request(groups, resources)
                groups, held = {}, 0
    if groups:
        yield request(groups, resources)


def _span(span: dict[str, Any], bad: Fields) -> dict[str, Any]:
    ctx = span["context"]
    status: dict[str, Any] = span["status"] if isinstance(span.get("status"), dict) else {}
    out: dict[str, Any] = {
        "traceId": hex_id(ctx.get("trace_id"), 32), "spanId": hex_id(ctx.get("span_id"), 16),
        "name": bad.text(span, "name"),
        "kind": bad.code(span, "kind", KINDS, "SpanKind."),
        "startTimeUnixNano": _ns(span.get("start_time")), "endTimeUnixNano": _ns(span.get("end_time")),
        "attributes": attributes(span.get("attributes")),
        "status": {"code": bad.code(status, "status_code", STATUS_CODES)},
    }
    description = bad.text(status, "description")
    if description:
        out["status"]["message"] = description
    parent = span.get("parent_id")
    if parent is not None and not isinstance(parent, str):
        bad.value("parent_id", parent, "no parent")
    elif parent:
        out["parentSpanId"] = hex_id(parent, 16)
    events = [{"timeUnixNano": _ns(e.get("timestamp")), "name": str(e.get("name", "")),
               "attributes": attributes(e.get("attributes"))}
              for e in bad.list(span, "events") if isinstance(e, dict)]
    if events:
        out["events"] = events
    links = [{"traceId": hex_id(lk["context"].get("trace_id"), 32), "spanId": hex_id(lk["context"].get("span_id"), 16),
              "attributes": attributes(lk.get("attributes"))}
             for lk in bad.list(span, "links") if isinstance(lk, dict) and isinstance(lk.get("context"), dict)]
    if links:
        out["links"] = links
    return out


def _ns(text: Any) -> str:
    """Nanoseconds since the epoch of an ISO 8601 time as the SDK writes it (UTC; digits past nanoseconds cut off);
    the value itself, as text, when it is not one (the loader then counts the span as bad, naming it)."""
    m = _TIME.match(text) if isinstance(text, str) else None
    if m is None:
        return "" if text is None else str(text)[:60]
    zone = m.group(3) or "Z"
    try:
        whole = datetime.fromisoformat(m.group(1) + ("+00:00" if zone == "Z" else zone))
        seconds = int(whole.astimezone(UTC).timestamp())
    except (ValueError, OverflowError):     # (a time near year 1 or 9999 moved past the calendar by its zone)
        return str(text)[:60]
    return str(seconds * 1_000_000_000 + int((m.group(2) or "0")[:9].ljust(9, "0")))
