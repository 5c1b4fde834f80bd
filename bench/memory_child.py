"""One read of one input in a fresh process, and how much its peak resident size grew (VmHWM).

    python -m bench.memory_child KIND PATH

prints one JSON line: ``growth_mib`` (VmHWM after the read less VmHWM before it, the modules imported and, for a
Jaeger kind, the answer already held by the server), ``spans`` (or labels) read, and ``error`` (a one-line error,
if the read ended in one). The Jaeger kinds are served by a small HTTP server in the same process on 127.0.0.1, as
Jaeger answers ``/api/v3/services`` and ``/api/v3/traces``; a labels kind is read by ``read_labels``; every other
kind by ``load_sources``, as ``agentobs report`` reads it. ``measure`` is the parent's side.

VmHWM, not getrusage's ru_maxrss: on Linux ru_maxrss carries the parent's peak across fork and exec, so a child of
a large benchmark or test process would report the parent's size.
"""
from __future__ import annotations

import gc
import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from .common import REPO_ROOT

JAEGER_ANSWERS = ("jaeger-answer", "jaeger-answer-late", "jaeger-answer-bad", "jaeger-answer-pretty")
WINDOW = "since=2000-01-01T00:00:00Z&until=2100-01-01T00:00:00Z"


def _hwm_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")


class _Jaeger:
    """Jaeger's API v3 on 127.0.0.1: one answer to every trace query, one services list."""

    def __init__(self, traces: bytes, services: bytes):
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                data = services if self.path.startswith("/api/v3/services") else traces
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, query: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}?{query}&page=1000000&{WINDOW}"


def _read(kind: str, path: Path) -> dict[str, Any]:
    from agentobs.analysis.assess.labels import read_labels
    from agentobs.analysis.jaeger.query import fetch, parse_url
    from agentobs.analysis.load.sources import load_sources
    from agentobs.errors import InputError

    server, url = None, ""
    if kind in JAEGER_ANSWERS:
        server = _Jaeger(path.read_bytes(), b'{"services":["bench"]}')
        url = server.url("service=bench")
    elif kind == "services":
        server = _Jaeger(b'{"result":{"resourceSpans":[]}}', path.read_bytes())
        url = server.url("")
    gc.collect()
    before = _hwm_kib()
    out: dict[str, Any] = {"error": ""}
    try:
        if kind.startswith("labels"):
            out["spans"] = len(read_labels(path)[0])
        elif server is not None:
            out["spans"] = len(fetch(parse_url(url)).spans)
        else:
            out["spans"] = len(load_sources([str(path)]).spans)
    except InputError as exc:
        out["error"], out["spans"] = str(exc), 0
    out["growth_mib"] = (_hwm_kib() - before) / 1024
    return out


def measure(kind: str, path: Path) -> dict[str, Any]:
    """Reads ``path`` as ``kind`` in a fresh interpreter; its result (``growth_mib``, ``spans``, ``error``)."""
    done = subprocess.run([sys.executable, "-m", "bench.memory_child", kind, str(path)], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"reading {path} as {kind} failed ({done.returncode}): {done.stderr[-2000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


if __name__ == "__main__":
    print(json.dumps(_read(sys.argv[1], Path(sys.argv[2]))))
