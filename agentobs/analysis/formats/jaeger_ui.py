"""Jaeger's own JSON: what the Jaeger UI's "Download Results" saves (``traces-<ms>.json``) and its "Trace JSON"
shows, the answers of the query API before v3 (``/api/traces``, ``/api/traces/{id}``): ``{"data": [trace, ...]}``,
a single trace ``{"traceID", "spans", "processes"}``, or a list of traces.

Converted as Jaeger converts OTLP to its model, backwards: ``span.kind``, ``otel.status_code`` and
``otel.status_description``, ``otel.scope.name`` and ``otel.scope.version`` tags become the span's kind, status and
scope; the first ``CHILD_OF`` reference in the trace is the parent, the other references are links; logs are span
events (named by their ``event`` field); a process is the resource (``serviceName`` is ``service.name``). Times are
microseconds. Values Jaeger keeps only as text (arrays, maps) stay text.
"""
from __future__ import annotations

import json
import re
from typing import Any

from ..quality import DataQuality
from ._build import KINDS, STATUS_CODES, Fields, hex_id, nanos, request

NAME = "Jaeger JSON (UI download, API before v3)"

_HEAD = re.compile(rb'\s*(?:\{\s*"data"\s*:\s*)?\[?\s*\{\s*"traceID"\s*:')
_TAGS_TAKEN = {"span.kind", "otel.status_code", "otel.status_description", "otel.scope.name", "otel.scope.version",
               "otel.library.name", "otel.library.version", "internal.span.format", "w3c.tracestate"}
_TYPES = {"string": "stringValue", "bool": "boolValue", "int64": "intValue", "float64": "doubleValue",
          "binary": "bytesValue"}


def matches(head: bytes) -> bool:
    return _HEAD.match(head) is not None


def requests(data: bytes, source: str, q: DataQuality) -> list[dict[str, Any]]:
    """One OTLP request per trace."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:           # UnicodeDecodeError is a ValueError
        q.add("invalid_json", source, example=str(exc)[:200])
        return []
    traces = doc.get("data") if isinstance(doc, dict) and "data" in doc else doc
    if isinstance(traces, dict):
        traces = [traces]
    if not isinstance(traces, list):
        q.add("unknown_format", source, example="a Jaeger answer without traces")
        return []
    out = []
    for trace in traces:
        if not isinstance(trace, dict) or not isinstance(trace.get("spans"), list):
            q.add("bad_span", source, example="a trace without a list of spans")
            continue
        out.append(_trace(trace, source, q))
    return out


def _trace(trace: dict[str, Any], source: str, q: DataQuality) -> dict[str, Any]:
    processes: dict[str, Any] = trace["processes"] if isinstance(trace.get("processes"), dict) else {}
    resources: dict[str, list[dict[str, Any]]] = {}
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for span in trace["spans"]:
        if not isinstance(span, dict):
            q.add("bad_span", source, example=f"not a Jaeger span ({type(span).__name__})")
            continue
        bad = Fields(source, q, f"span {str(span.get('spanID'))[:40]}")
        try:
            tag_list = bad.list(span, "tags")
            tags = _tags(tag_list)
            pid = str(span.get("processID", ""))
            if pid not in resources:
                proc: dict[str, Any] = processes[pid] if isinstance(processes.get(pid), dict) else {}
                attrs = [{"key": "service.name", "value": {"stringValue": str(proc.get("serviceName", ""))}}]
                resources[pid] = attrs + [a for a in _values(bad.list(proc, "tags", f"process {pid[:40]}"))
                                          if a["key"] != "service.name"]
            converted = _span(span, tag_list, tags, bad)
        except RecursionError:                  # a value nested deeper than Python's recursion limit goes
            q.add("bad_span", source, example=f"span {str(span.get('spanID'))[:40]}: nested too deeply to convert")
            continue
        scope = (str(tags.get("otel.scope.name", tags.get("otel.library.name", ""))),
                 str(tags.get("otel.scope.version", tags.get("otel.library.version", ""))))
        groups.setdefault((pid, *scope), []).append(converted)
    return request(groups, resources)


def _span(span: dict[str, Any], tag_list: list[Any], tags: dict[str, Any], bad: Fields) -> dict[str, Any]:
    trace_id = hex_id(span.get("traceID"), 32)
    refs = [r for r in bad.list(span, "references") if isinstance(r, dict)]
    parent = next((r for r in refs if r.get("refType") == "CHILD_OF" and hex_id(r.get("traceID"), 32) == trace_id),
                  None)
    start, duration = span.get("startTime"), span.get("duration")
    out: dict[str, Any] = {
        "traceId": trace_id, "spanId": hex_id(span.get("spanID"), 16), "name": str(span.get("operationName", "")),
        "kind": KINDS.get(str(tags.get("span.kind", "")).upper(), 0),
        "attributes": [a for a in _values(tag_list) if a["key"] not in _TAGS_TAKEN],
    }
    if parent is not None:
        out["parentSpanId"] = hex_id(parent.get("spanID"), 16)
    if isinstance(start, int) and isinstance(duration, int):
        out["startTimeUnixNano"] = nanos(start)
        out["endTimeUnixNano"] = nanos(start + duration)
    code = STATUS_CODES.get(str(tags.get("otel.status_code", "")).upper(), 0)
    if not code and tags.get("error") is True:
        code = STATUS_CODES["ERROR"]
    out["status"] = {"code": code}
    if tags.get("otel.status_description"):
        out["status"]["message"] = str(tags["otel.status_description"])
    links = [{"traceId": hex_id(r.get("traceID"), 32), "spanId": hex_id(r.get("spanID"), 16)}
             for r in refs if r is not parent]
    if links:
        out["links"] = links
    events = [_event(log, bad) for log in bad.list(span, "logs") if isinstance(log, dict)]
    if events:
        out["events"] = events
    return out


def _event(log: dict[str, Any], bad: Fields) -> dict[str, Any]:
    fields = _values(bad.list(log, "fields", f"a log of {bad.where}"))
    name = next((f["value"].get("stringValue") for f in fields if f["key"] == "event"), None)
    ts = log.get("timestamp")
    return {"timeUnixNano": nanos(ts) if isinstance(ts, int) else "0", "name": str(name or "log"),
            "attributes": [f for f in fields if f["key"] != "event"]}


def _tags(tags: list[Any]) -> dict[str, Any]:
    return {t["key"]: t.get("value") for t in tags if isinstance(t, dict) and isinstance(t.get("key"), str)}


def _values(tags: list[Any]) -> list[dict[str, Any]]:
    """OTLP attributes of Jaeger tags (``{"key", "type", "value"}``)."""
    out = []
    for t in tags:
        if not isinstance(t, dict) or not isinstance(t.get("key"), str):
            continue
        kind = _TYPES.get(str(t.get("type", "string")).lower(), "stringValue")
        v = t.get("value")
        out.append({"key": t["key"], "value": {kind: str(v) if kind == "intValue" else v}})
    return out
