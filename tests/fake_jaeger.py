"""A fake Jaeger for the Jaeger client's tests: a real HTTP server on 127.0.0.1 that answers like Jaeger API v3
(``/api/v3/services``, ``/api/v3/traces`` by service and time window, ``/api/v3/traces/{id}``) and misbehaves on
demand, one behaviour per service (``FakeJaeger(modes=...)``). Used by unit/analysis/jaeger/test_query.py and
unit/analysis/input/test_remote_messages.py."""
from __future__ import annotations

import json
import threading
import urllib.parse
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

T0 = 1_767_225_600 * 10**9            # 2026-01-01T00:00:00Z
HOUR = 3600 * 10**9
WINDOW = "since=2026-01-01T00:00:00Z&until=2026-01-01T01:00:00Z"
TRICKLE_S = 0.5                       # the slow server sends one byte this often


# -- traces ----------------------------------------------------------------------------------------------------

def _trace(n: int, start_ns: int, service: str = "shop") -> dict[str, Any]:
    """One resourceSpans entry: a root ``invoke_agent`` span and one child, as our telemetry writes them."""
    tid, root = f"{n:032x}", f"{n:016x}"
    span = {"traceId": tid, "kind": 1, "status": {"code": 1}}
    return {"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]},
            "scopeSpans": [{"scope": {"name": "agentobs"}, "spans": [
                {**span, "spanId": root, "name": "invoke_agent support-agent",
                 "startTimeUnixNano": str(start_ns), "endTimeUnixNano": str(start_ns + 10**9),
                 "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}}]},
                {**span, "spanId": f"{n + 2**62:016x}", "parentSpanId": root, "name": "agentobs.step",
                 "startTimeUnixNano": str(start_ns + 1000), "endTimeUnixNano": str(start_ns + 5000)}]}]}


def _starts(rs: dict[str, Any]) -> list[int]:
    return [int(s["startTimeUnixNano"]) for ss in rs["scopeSpans"] for s in ss["spans"]]


def _trace_id(rs: dict[str, Any]) -> str:
    return rs["scopeSpans"][0]["spans"][0]["traceId"]


# -- the fake Jaeger -----------------------------------------------------------------------------------------

class FakeJaeger:
    """Jaeger API v3 on 127.0.0.1, with a behaviour per service (``modes``; default ``ok``)."""

    def __init__(self, traces: list[dict[str, Any]] | None = None, modes: dict[str, str] | None = None,
                 default: str = "ok"):
        self.traces = traces or []
        self.modes, self.default = modes or {}, default
        self.hits: list[str] = []                 # paths with their query, in order
        self.auth: list[str | None] = []
        self.sent: dict[str, int] = {}            # mode -> bytes of a slow or huge answer actually sent
        self.redirect_to = ""                     # for mode "redirect": an origin, e.g. http://127.0.0.1:PORT
        self.huge = 64 * 2**20
        self.services_answer: Any = None          # instead of the services' list
        self.fresh = 0                            # ids for mode "full"
        self.by_id: bool | str = True             # /api/v3/traces/{id} answered (False: the UI's page, as for
                                                  # an unknown route of Jaeger's; "trickle": a byte at a time)
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False
        self.server.fake = self                   # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def trace_requests(self) -> int:
        return sum("/api/v3/traces" in h for h in self.hits)

    def close(self) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()

    def search(self, service: str, t_min: int, t_max: int, num: int) -> list[dict[str, Any]]:
        """Like Jaeger: traces with a span of the service starting in [t_min, t_max], most recent first."""
        hits = [rs for rs in self.traces if _service(rs) == service and any(t_min <= t <= t_max for t in _starts(rs))]
        return sorted(hits, key=lambda rs: -min(_starts(rs)))[:num]


def _service(rs: dict[str, Any]) -> str:
    return next(a["value"]["stringValue"] for a in rs["resource"]["attributes"] if a["key"] == "service.name")


def _ns(text: str) -> int:
    t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return int(t.timestamp()) * 10**9 + t.microsecond * 1000


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    @property
    def fake(self) -> FakeJaeger:
        return self.server.fake  # type: ignore[attr-defined]

    def _json(self, status: int, obj: Any) -> None:
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _count(self, mode: str, n: int) -> None:
        with self.fake.lock:
            self.fake.sent[mode] = self.fake.sent.get(mode, 0) + n

    def do_GET(self) -> None:  # http.server's name
        f = self.fake
        f.hits.append(self.path)
        f.auth.append(self.headers.get("Authorization"))
        u = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(u.query))
        if u.path == "/api/v3/services":
            if f.services_answer is not None:
                return self._json(200, f.services_answer)
            return self._json(200, {"services": sorted({_service(rs) for rs in f.traces} | set(f.modes))})
        if u.path.startswith("/api/v3/traces/") and f.by_id == "trickle":
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            try:
                for _ in range(1000):
                    if f.stop.wait(TRICKLE_S):
                        return None
                    self.wfile.write(b" ")
                    self.wfile.flush()
            except OSError:
                pass
            return None
        if u.path.startswith("/api/v3/traces/") and f.by_id:
            tid = u.path.rsplit("/", 1)[1]
            found = [rs for rs in f.traces if _trace_id(rs) == tid]
            if not found:
                return self._json(404, {"error": {"httpCode": 404, "message": "No traces found"}})
            return self._json(200, {"result": {"resourceSpans": found}})
        if u.path.startswith("/api/v3/traces/"):
            body = b"<!doctype html><title>Jaeger UI</title>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            return self.wfile.write(body)
        if not u.path.endswith("/api/v3/traces"):
            return self._json(404, {"error": {"httpCode": 404, "message": "404 page not found"}})
        service = q["query.service_name"]
        mode = f.modes.get(service, f.default)
        if u.path.startswith("/moved/"):
            mode = "ok"
        t_min, t_max, num = _ns(q["query.start_time_min"]), _ns(q["query.start_time_max"]), int(q["query.num_traces"])
        if mode == "second_half_500" and t_min > T0:
            mode = "500"
        if mode in ("ok", "second_half_500"):
            found = f.search(service, t_min, t_max, num)
            if not found:
                return self._json(404, {"error": {"httpCode": 404, "message": "No traces found"}})
            return self._json(200, {"result": {"resourceSpans": found}})
        if mode == "404":
            return self._json(404, {"error": {"httpCode": 404, "message": "No traces found"}})
        if mode == "500":
            return self._json(500, {"error": {"httpCode": 500, "message": "storage is down"}})
        if mode == "bad_json":
            self.send_response(200)
            self.send_header("Content-Length", "12")
            self.end_headers()
            return self.wfile.write(b"{not json at")
        if mode == "wrong_shape":
            return self._json(200, {"data": []})
        if mode == "plain_404":                 # another server, or Jaeger under another base path
            body = b"404 page not found\n"
            self.send_response(404)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            return self.wfile.write(body)
        if mode == "library_spans":             # OTLP before 0.15: instrumentationLibrarySpans
            found = f.search(service, t_min, t_max, num)
            old = [{"resource": rs["resource"], "instrumentationLibrarySpans": [
                {"instrumentationLibrary": ss.get("scope", {}), "spans": ss["spans"]} for ss in rs["scopeSpans"]]}
                for rs in found]
            return self._json(200, {"result": {"resourceSpans": old}})
        if mode == "deep_json":                 # 200,000 nested arrays: json raised RecursionError (exit 3)
            body = b'{"result": {"resourceSpans": ' + b"[" * 200_000 + b"]" * 200_000 + b"}}"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            return self.wfile.write(body)
        if mode == "full":                 # always exactly num_traces traces never seen before
            f.fresh += num
            return self._json(200, {"result": {"resourceSpans": [
                _trace(f.fresh - i, (t_min + t_max) // 2, service) for i in range(num)]}})
        if mode == "redirect_loop":
            self.send_response(302)
            self.send_header("Location", self.path)
            self.send_header("Content-Length", "0")
            return self.end_headers()
        if mode == "redirect":
            self.send_response(302)
            self.send_header("Location", f"{f.redirect_to}/moved{self.path}")
            self.send_header("Content-Length", "0")
            return self.end_headers()
        if mode in ("huge", "huge_streamed"):
            self.send_response(200)
            if mode == "huge":
                self.send_header("Content-Length", str(f.huge))
            self.end_headers()
            chunk = b" " * 2**16
            try:
                for _ in range(f.huge // len(chunk)):
                    self.wfile.write(chunk)
                    self._count(mode, len(chunk))
            except OSError:
                pass                        # the client hung up: what we want
            return None
        if mode in ("trickle_body", "trickle_headers"):
            body = json.dumps({"result": {"resourceSpans": []}}).encode() + b" " * 200
            if mode == "trickle_body":
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.flush()
            else:
                self.wfile.write(b"HTTP/1.1 200 OK\r\n")
                body = b"X-Slow: " + b"a" * 200 + b"\r\n\r\n"
            try:
                for i in range(len(body)):
                    if f.stop.wait(TRICKLE_S):
                        return None
                    self.wfile.write(body[i:i + 1])
                    self.wfile.flush()
                    self._count(mode, 1)
            except OSError:
                pass
            return None
        raise AssertionError(mode)
