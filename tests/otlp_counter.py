"""An OTLP/HTTP receiver on 127.0.0.1 that answers every request at once and counts the spans it received.

``with SpanCounter() as r: r.endpoint`` (``http://127.0.0.1:PORT``); ``r.span_ids`` holds (trace id, span id) of
every span received (a span sent twice counts once); ``r.down = True`` answers 400 to trace exports (a
non-retryable failure: the exporter gives the batch up at once) until set back. ``SpanCounter(pause_every=N,
pause_s=S)`` answers every N-th trace export S seconds late, as a collector does now and then on a loaded machine
(a garbage collection, a full pipeline, no CPU to spare): the exporter waits, the runs go on. Metrics exports are
accepted and not counted. Used by the export tests and the burst benchmark (bench/burst_bench.py).
"""
from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


class SpanCounter:
    def __init__(self, *, pause_every: int = 0, pause_s: float = 0.0) -> None:
        self.pause_every, self.pause_s = pause_every, pause_s
        self.pauses = 0
        self.span_ids: set[tuple[bytes, bytes]] = set()
        self.requests = 0
        self.down = False
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status = 200
                if self.path.rstrip("/").endswith("/v1/traces"):
                    if outer.down:
                        status = 400
                    else:
                        req = ExportTraceServiceRequest()
                        req.ParseFromString(body)
                        ids = {(s.trace_id, s.span_id) for rs in req.resource_spans for ss in rs.scope_spans
                               for s in ss.spans}
                        with outer.lock:
                            outer.span_ids |= ids
                            outer.requests += 1
                            pause = outer.pause_every > 0 and outer.requests % outer.pause_every == 0
                            outer.pauses += pause
                        if pause:
                            time.sleep(outer.pause_s)
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="span-counter", daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @property
    def spans(self) -> int:
        with self.lock:
            return len(self.span_ids)

    def __enter__(self) -> SpanCounter:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
