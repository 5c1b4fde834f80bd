"""A small OTLP/HTTP trace receiver on 127.0.0.1, for frameworks that only export over OTLP (MLflow, Langfuse, the
Node SDK).

It accepts ``POST .../v1/traces`` (any prefix, e.g. Langfuse's ``/api/public/otel/v1/traces``) with a protobuf
``ExportTraceServiceRequest`` (gzip or not, by length or chunked) or its JSON form, and keeps every span as
(resource, scope, span) in OTLP JSON: camelCase keys, trace and span ids in hex, int64 values as strings, enums as
integers, which is what the collector's file exporter writes.
"""
from __future__ import annotations

import base64
import gzip
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _hex(b64: str) -> str:
    return base64.b64decode(b64).hex()


def _fix_ids(span: dict) -> dict:
    for k in ("traceId", "spanId", "parentSpanId"):
        if span.get(k):
            span[k] = _hex(span[k])
        elif k in span:
            del span[k]
    for link in span.get("links", []):
        for k in ("traceId", "spanId"):
            if link.get(k):
                link[k] = _hex(link[k])
    span.setdefault("status", {})
    return span


def decode(body: bytes, content_type: str) -> list[tuple[dict, dict, dict]]:
    if body[:2] == b"\x1f\x8b":
        body = gzip.decompress(body)
    if "json" in content_type:
        req = json.loads(body)      # OTLP/JSON already has hex ids
        return [(rs.get("resource", {}), ss.get("scope", {}), s)
                for rs in req.get("resourceSpans", []) for ss in rs.get("scopeSpans", []) for s in ss.get("spans", [])]
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    msg = ExportTraceServiceRequest()
    msg.ParseFromString(body)
    req = MessageToDict(msg, use_integers_for_enums=True)
    return [(rs.get("resource", {}), ss.get("scope", {}), _fix_ids(s))
            for rs in req.get("resourceSpans", []) for ss in rs.get("scopeSpans", []) for s in ss.get("spans", [])]


def read_body(handler: BaseHTTPRequestHandler) -> bytes:
    """The request body, by Content-Length or in chunks (the Node exporters send ``Transfer-Encoding: chunked``)."""
    if "chunked" not in (handler.headers.get("Transfer-Encoding") or "").lower():
        return handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
    parts = []
    while True:
        size = int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16)
        if size == 0:
            while handler.rfile.readline() not in (b"\r\n", b"\n", b""):   # trailers, then the blank line
                pass
            return b"".join(parts)
        parts.append(handler.rfile.read(size))
        handler.rfile.readline()


class OtlpReceiver:
    """``with OtlpReceiver() as r: r.endpoint`` (``http://127.0.0.1:PORT``); ``r.records()`` in arrival order.

    Also a capture for ``common.Recorder``: ``flush`` calls the framework's flush function given to ``use_flush``.
    """

    def __init__(self) -> None:
        self._records: list[tuple[dict, dict, dict]] = []
        self.lock = threading.Lock()
        self.requests = 0
        self._flush: Callable[[], Any] = lambda: None
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = read_body(self)
                ok = self.path.split("?")[0].rstrip("/").endswith("/v1/traces")
                if ok:
                    recs = decode(body, self.headers.get("Content-Type", ""))
                    with outer.lock:
                        outer._records.extend(recs)
                        outer.requests += 1
                self.send_response(200 if ok else 404)
                ctype = self.headers.get("Content-Type", "application/x-protobuf")
                self.send_header("Content-Type", "application/json" if "json" in ctype else "application/x-protobuf")
                self.send_header("Content-Length", "0" if "json" not in ctype else "2")
                self.end_headers()
                if "json" in ctype:
                    self.wfile.write(b"{}")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def use_flush(self, fn: Callable[[], Any]) -> None:
        self._flush = fn

    def flush(self) -> None:
        self._flush()

    def records(self) -> list[tuple[dict, dict, dict]]:
        """Every span once (an exporter that sends a span twice is not a second span)."""
        with self.lock:
            seen: set[tuple[str, str]] = set()
            out = []
            for r in self._records:
                k = (r[2].get("traceId", ""), r[2].get("spanId", ""))
                if k not in seen:
                    seen.add(k)
                    out.append(r)
            return out

    def __enter__(self) -> OtlpReceiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
