"""OTLP JSON lines: exactly what the collector's file exporter writes (format json, no compression).

One ``ExportTraceServiceRequest`` per line: ``{"resourceSpans":[{"resource":{...},"scopeSpans":
[{"scope":{...},"spans":[...]}]}]}`` with hex trace/span ids, int64 values as strings, kind and
status code as integers. ``OtlpJsonFileExporter`` writes our local traces in that format, so
one loader reads a laptop run, a collector archive and Jaeger's API v3 answers.
"""
from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind, StatusCode

from ..contract.files import open_append
from ..contract.otlp_values import attributes, text

log = logging.getLogger("agentobs.telemetry")

_KIND = {SpanKind.INTERNAL: 1, SpanKind.SERVER: 2, SpanKind.CLIENT: 3, SpanKind.PRODUCER: 4, SpanKind.CONSUMER: 5}
_STATUS = {StatusCode.UNSET: 0, StatusCode.OK: 1, StatusCode.ERROR: 2}


def _flags(parent: Any) -> int:
    """SpanFlags as the SDK's OTLP encoder sets them: has-is-remote, and is-remote for a remote parent."""
    return 0x300 if parent is not None and parent.is_remote else 0x100


def encode_span(s: ReadableSpan) -> dict[str, Any]:
    ctx = s.context
    out: dict[str, Any] = {"traceId": f"{ctx.trace_id:032x}", "spanId": f"{ctx.span_id:016x}"}
    if s.parent is not None:
        out["parentSpanId"] = f"{s.parent.span_id:016x}"
    out["flags"] = _flags(s.parent)
    out["name"] = text(s.name)
    out["kind"] = _KIND.get(s.kind, 1)
    out["startTimeUnixNano"] = str(s.start_time)
    out["endTimeUnixNano"] = str(s.end_time)
    if s.attributes:
        out["attributes"] = attributes(s.attributes)
    if s.events:
        out["events"] = [{"timeUnixNano": str(e.timestamp), "name": text(e.name),
                          **({"attributes": attributes(e.attributes)} if e.attributes else {})}
                         for e in s.events]
    if s.links:
        out["links"] = [{"traceId": f"{link.context.trace_id:032x}", "spanId": f"{link.context.span_id:016x}",
                         **({"attributes": attributes(link.attributes)} if link.attributes else {}),
                         "flags": _flags(link.context)}
                        for link in s.links]
    status: dict[str, Any] = {}
    if s.status.status_code is not StatusCode.UNSET:
        if s.status.description:
            status["message"] = text(s.status.description)
        status["code"] = _STATUS[s.status.status_code]
    out["status"] = status
    return out


def encode_request(spans: Iterable[ReadableSpan]) -> dict[str, Any]:
    """Groups spans by resource and instrumentation scope into one ExportTraceServiceRequest."""
    by_resource: dict[int, tuple[Any, dict[tuple[Any, ...], tuple[Any, list[Any]]]]] = {}
    for s in spans:
        res_entry = by_resource.setdefault(id(s.resource), (s.resource, {}))
        scope = s.instrumentation_scope
        key = (scope.name, scope.version, scope.schema_url) if scope else ("", None, None)
        res_entry[1].setdefault(key, (scope, []))[1].append(encode_span(s))
    out = []
    for resource, scopes in by_resource.values():
        rs: dict[str, Any] = {"resource": {"attributes": attributes(resource.attributes)} if resource else {},
                              "scopeSpans": []}
        for scope, encoded in scopes.values():
            ss: dict[str, Any] = {"scope": {}}
            if scope is not None:
                ss["scope"] = {"name": scope.name, **({"version": scope.version} if scope.version else {})}
            ss["spans"] = encoded
            if scope is not None and scope.schema_url:
                ss["schemaUrl"] = scope.schema_url
            rs["scopeSpans"].append(ss)
        if resource is not None and resource.schema_url:
            rs["schemaUrl"] = resource.schema_url
        out.append(rs)
    return {"resourceSpans": out}


def _ends_torn(path: Path) -> bool:
    """Whether the file's last line lacks its line break (a writer stopped mid-line: a full disk, a kill)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            if f.tell() == 0:
                return False
            f.seek(-1, os.SEEK_END)
            return f.read(1) != b"\n"
    except OSError:
        return False


class OtlpJsonFileExporter(SpanExporter):
    """Appends one OTLP JSON request per export call to a file (the collector file exporter's format).

    The file is this exporter's alone while it is open (``contract.files.open_append``: an exclusive lock, a
    second writer refused with ``FileInUse``); ``replace`` empties it first, else spans are appended. A batch
    counts as exported only when its line was written whole to the file still at ``path``: once the file is
    removed or replaced by another program, what is written goes nowhere and counts as failed."""

    def __init__(self, path: str | os.PathLike[str], *, replace: bool = False):
        self.path = Path(path)
        self._out = open_append(self.path, replace=replace)
        self._lock = threading.Lock()
        self.exported = 0
        self.failed = 0
        self._said_gone = False
        self._said_failed = 0
        # a line cut short before (by this process or another) is ended first, so it costs only itself
        self._torn = not replace and _ends_torn(self.path)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            line = (json.dumps(encode_request(spans), separators=(",", ":")) + "\n").encode()
            with self._lock:
                if self._torn:
                    line = b"\n" + line
                try:
                    self._out.write(line)     # one write per request, whole or cut back (a full disk)
                except OSError:
                    self._torn = self._torn or self._out.torn
                    raise
                self._torn = False
                gone = not self._out.still_named()
        except (OSError, ValueError, TypeError) as exc:
            self.failed += len(spans)
            self._said_failed += 1
            if self._said_failed == 1:      # one line, with the reason; the lost spans are counted and reported
                log.warning("could not write %d spans to %s (%s); spans that cannot be written are counted as "
                            "failed", len(spans), self.path, exc)
            log.debug("could not write %d spans to %s", len(spans), self.path, exc_info=True)
            return SpanExportResult.FAILURE
        if gone:
            self.failed += len(spans)
            if not self._said_gone:
                self._said_gone = True
                log.warning("traces file %s was removed or replaced by another program: the spans written since "
                            "are lost (counted as failed)", self.path)
            return SpanExportResult.FAILURE
        self.exported += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        with self._lock:
            self._out.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True
