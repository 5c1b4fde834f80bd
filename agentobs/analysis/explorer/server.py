"""``agentobs view``: the explorer served from 127.0.0.1, for a population of any size.

The page is the one ``agentobs report --format html`` writes, without rows or spans in it: the browser asks

    GET /api/runs?draw=&start=&length=&order=COLUMN&dir=asc|desc&f.COLUMN=CODE&from=MS&to=MS&q=PREFIX
        one page of the runs table, filtered and sorted here (``runs_table.select`` and ``order``, the filters the
        written page applies in the browser)
    GET /api/run?id=RUN_ID
        one run: its row, its waterfall and the evidence of each of its signatures (``model.run_detail``)

The server listens on 127.0.0.1 only and answers only requests addressed to it by that name or ``localhost`` (a
page elsewhere cannot reach it through a name of its own that resolves here), GET only. Standard library
``http.server``, one thread per request; the analysis is read-only once built.
"""
from __future__ import annotations

import http.server
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import numpy as np

from ...errors import InputError
from ._runs_table import RunFilter, order, page_rows, select
from .model import Explorer, run_detail
from .text import dumps

HOST = "127.0.0.1"
MOST_ROWS = 1_000                 # rows in one answer of /api/runs


@dataclass(frozen=True, kw_only=True)
class Answer:
    status: int
    body: bytes
    content_type: str = "application/json"


def runs_answer(x: Explorer, query: Mapping[str, str]) -> Answer:
    """One page of the runs table for DataTables' server-side protocol."""
    try:
        draw, start = int(query.get("draw", "0")), max(0, int(query.get("start", "0")))
        length = int(query.get("length", "25"))
        length = MOST_ROWS if length < 0 else min(length, MOST_ROWS)
        equals = {k[2:]: int(v) for k, v in query.items() if k.startswith("f.")}
        lo = float(query["from"]) if query.get("from") else None
        hi = float(query["to"]) if query.get("to") else None
    except ValueError:
        return _error(400, "draw, start, length, f.COLUMN, from and to are numbers")
    t = x.table
    rows = select(t, RunFilter(equals=equals, start_from_ms=lo, start_to_ms=hi, id_prefix=query.get("q", "")))
    rows = order(t, rows, query.get("order"), query.get("dir") == "desc")
    page = rows[start:start + length]
    return _json(200, {"draw": draw, "total": t.n, "filtered": len(rows), "rows": page_rows(t, page)})


def run_answer(x: Explorer, run_id: str) -> Answer:
    detail = run_detail(x, run_id)
    if detail is None:
        return _error(404, "no run has this id")
    cells = page_rows(x.table, np.array([detail["row"]]))
    detail["cells"] = {k: v[0] for k, v in cells.items()}
    return _json(200, detail)


def _json(status: int, body: Any) -> Answer:
    return Answer(status=status, body=dumps(body).encode("ascii"))


def _error(status: int, message: str) -> Answer:
    return _json(status, {"error": message})


class ExplorerServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, explorer: Explorer, page: str, port: int = 0):
        self.explorer = explorer
        self.page = page.encode("utf-8")
        try:
            super().__init__((HOST, port), _Handler)
        except OSError as exc:
            if port:
                raise InputError(f"port {port} on {HOST} is in use or not allowed ({exc.strerror}): give another "
                                 "--port, or leave it out for a free one") from None
            raise
        self.port = int(self.server_address[1])
        self.allowed_hosts = {f"{HOST}:{self.port}", f"localhost:{self.port}"}

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    def answer(self, path: str, query: Mapping[str, str]) -> Answer:
        if path in ("/", "/index.html"):
            return Answer(status=200, body=self.page, content_type="text/html; charset=utf-8")
        if path == "/api/runs":
            return runs_answer(self.explorer, query)
        if path == "/api/run":
            return run_answer(self.explorer, query.get("id", ""))
        return _error(404, "not found")


class _Handler(http.server.BaseHTTPRequestHandler):
    server: ExplorerServer
    server_version = "agentobs-explorer"
    sys_version = ""

    def do_GET(self) -> None:
        host = self.headers.get("Host", "")
        if host not in self.server.allowed_hosts:
            self._send(_error(403, "this server answers requests to 127.0.0.1 or localhost only"))
            return
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        try:
            answer = self.server.answer(parts.path, query)
        except Exception as exc:            # a bug: this request fails, the server goes on
            answer = _error(500, f"internal error: {type(exc).__name__}")
        self._send(answer)

    def _send(self, a: Answer) -> None:
        self.send_response(a.status)
        self.send_header("Content-Type", a.content_type)
        self.send_header("Content-Length", str(len(a.body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        self.end_headers()
        self.wfile.write(a.body)

    def do_POST(self) -> None:
        self._send(_error(405, "GET only"))

    do_PUT = do_DELETE = do_PATCH = do_POST

    def log_message(self, format: str, *args: Any) -> None:
        return None


def start(x: Explorer, page: str, port: int = 0) -> tuple[ExplorerServer, threading.Thread]:
    """The server, listening, served by a thread of its own (``stop`` ends both)."""
    srv = ExplorerServer(x, page, port)
    thread = threading.Thread(target=srv.serve_forever, name="agentobs-explorer", daemon=True)
    thread.start()
    return srv, thread


def stop(srv: ExplorerServer, thread: threading.Thread) -> None:
    srv.shutdown()
    srv.server_close()
    thread.join(timeout=10)
