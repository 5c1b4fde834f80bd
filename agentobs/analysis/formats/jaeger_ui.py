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

import io
import re
from collections.abc import Callable, Generator, Iterator
from typing import Any, BinaryIO

from ..input.json_stream import Broken, Reader
from ..spans.quality import DataQuality
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
    """``stream`` of a document held in memory, as a list."""
    return list(stream(lambda: io.BytesIO(data), source, q))


def stream(document: Callable[[], BinaryIO], source: str, q: DataQuality) -> Iterator[dict[str, Any]]:
    """OTLP requests of the document ``document()`` opens, a trace (or ``BATCH`` spans of one) at a time, read a
    trace at a time (``_json_stream``): a download of many traces never holds more than one as Python objects. A
    single trace, whose processes Jaeger writes after its spans, is read twice: its processes, then its spans a
    batch at a time. Text that is not JSON costs one ``invalid_json``, the traces before it kept."""
    with document() as f:
        r = Reader(f)
        try:
            kind = r.kind()
            if kind == "[":
                for _ in r.elements():
                    yield from _trace_value(r.value(), source, q)
            elif kind == "{":
                single = yield from _members(r, source, q)
                if single:
                    yield from _single(document, source, q)
            else:
                q.add("unknown_format", source, example="a Jaeger answer without traces")
        except Broken as exc:
            q.add("invalid_json", source, example=str(exc)[:200])


def _members(r: Reader, source: str, q: DataQuality) -> Generator[dict[str, Any], None, bool]:
    """The traces of ``{"data": [...]}``; True when the object has no ``data``: it is a single trace."""
    found = False
    for key in r.members():
        if key != "data":
            continue
        found = True
        kind = r.kind()
        if kind == "[":
            for _ in r.elements():
                yield from _trace_value(r.value(), source, q)
        elif kind == "{":
            yield from _trace_value(r.value(), source, q)
        else:
            r.skip()
            q.add("unknown_format", source, example="a Jaeger answer without traces")
    return not found


def _single(document: Callable[[], BinaryIO], source: str, q: DataQuality) -> Iterator[dict[str, Any]]:
    """A single trace (``{"traceID", "spans", "processes"}``): its processes read first, its spans then."""
    processes: dict[str, Any] = {}
    has_spans = False
    with document() as f:
        r = Reader(f)
        for key in r.members():
            if key == "processes":
                value = r.value()
                processes = value if isinstance(value, dict) else {}
            elif key == "spans" and r.kind() == "[":
                has_spans = True
                for _ in r.elements():
                    r.skip()
    if not has_spans:
        q.add("bad_span", source, example="a trace without a list of spans")
        return
    with document() as f:
        r = Reader(f)
        for key in r.members():
            if key == "spans" and r.kind() == "[":
                yield from _convert(_spans(r), processes, source, q)


def _spans(r: Reader) -> Iterator[Any]:
    for _ in r.elements():
        yield r.value()


def _trace_value(trace: Any, source: str, q: DataQuality) -> Iterator[dict[str, Any]]:
    if not isinstance(trace, dict) or not isinstance(trace.get("spans"), list):
        q.add("bad_span", source, example="a trace without a list of spans")
        return
    yield from _convert(iter(trace["spans"]), trace["processes"] if isinstance(trace.get("processes"), dict) else {},
                        source, q)


BATCH = 2000                    # spans of one trace in one request


def _convert(spans: Iterator[Any], processes: dict[str, Any], source: str, q: DataQuality
             ) -> Iterator[dict[str, Any]]:
    """The spans of one trace as OTLP requests of at most ``BATCH`` spans."""
    resources: dict[str, list[dict[str, Any]]] = {}
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    held = 0
    for span in spans:
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
        held += 1
        if held >= BATCH:
            yield request(groups, resources)
            groups, held = {}, 0
    if groups:
        yield request(groups, resources)


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
