"""Regenerate the Zipkin fixtures: ``python tests/data/zipkin/generate.py`` in an environment that has agentobs and
``opentelemetry-exporter-zipkin-json`` (a throwaway virtualenv is enough; the package is not a dependency).

Every seed scenario (SEED000, SEED004, an approval suspended and resumed twice) runs once through
``agentobs.telemetry``, whose tracer provider exports each span twice: to our OTLP JSON file (``traces.jsonl``)
and, with the real OpenTelemetry Python ``ZipkinExporter`` (JSON v2), to a small HTTP server on 127.0.0.1 that keeps
every body POSTed to ``/api/v2/spans``. The bodies are written as a Zipkin user holds them:

- ``spans.json``: one JSON array of all the spans (what ``POST /api/v2/spans`` receives, what the UI's "Download
  JSON" and ``GET /api/v2/trace/{id}`` give for one trace), each span as the exporter wrote it;
- ``traces.json.gz``: a JSON array of traces, each an array of its spans (the answer of ``GET /api/v2/traces``),
  gzip-compressed;

and the OTLP JSON file of the same spans as ``traces.jsonl.gz``. (gzip without a time in its header: the same
bytes for the same text.)

``VERSIONS.md`` says which packages wrote them. ``tests/unit/analysis/formats/test_zipkin.py`` calls ``generate`` too
(when the exporter is importable) and checks that a fresh run reads as the committed one does.
"""
from __future__ import annotations

import gzip
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGES = ("opentelemetry-exporter-zipkin-json", "opentelemetry-sdk", "opentelemetry-api")


class _Recorder(BaseHTTPRequestHandler):
    def do_POST(self) -> None:          # the name http.server calls
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/api/v2/spans":
            self.server.bodies.append(body)      # type: ignore[attr-defined]
            self.send_response(202)
        else:
            self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def generate(out: Path) -> dict[str, Path]:
    """Writes spans.json, traces.json.gz and traces.jsonl.gz into ``out``; returns their paths by name."""
    from opentelemetry.exporter.zipkin.json import ZipkinExporter

    from agentobs.domain.scenarios import SEED000, SEED004, approve_and_resume
    from agentobs.telemetry import configure

    out.mkdir(parents=True, exist_ok=True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    server.bodies = []                            # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        zipkin = ZipkinExporter(endpoint=f"http://127.0.0.1:{port}/api/v2/spans", timeout=10)
        otlp = out / "traces.jsonl"
        otlp.unlink(missing_ok=True)
        tel = configure(traces_out=otlp, extra_exporters=[("zipkin", zipkin)])
        for suite in (SEED000, SEED004):
            for run in suite.values():
                run([tel.observer()])
        approve_and_resume([tel.observer()], twice=True)
        tel.shutdown()
    finally:
        server.shutdown()
        server.server_close()
    spans = [s for body in server.bodies for s in json.loads(body)]          # type: ignore[attr-defined]
    traces: dict[str, list[dict]] = {}
    for s in spans:
        traces.setdefault(s["traceId"], []).append(s)
    paths = {name: out / name for name in ("spans.json", "traces.json.gz", "traces.jsonl.gz")}
    paths["spans.json"].write_text(json.dumps(spans) + "\n")
    paths["traces.json.gz"].write_bytes(gzip.compress((json.dumps(list(traces.values())) + "\n").encode(), mtime=0))
    paths["traces.jsonl.gz"].write_bytes(gzip.compress(otlp.read_bytes(), mtime=0))
    otlp.unlink()
    return paths


def versions() -> str:
    return ", ".join(f"{p} {version(p)}" for p in PACKAGES)


if __name__ == "__main__":
    written = generate(HERE)
    (HERE / "VERSIONS.md").write_text(
        "# Versions used for the Zipkin fixtures\n\n"
        f"Written by `generate.py` (Python {sys.version.split()[0]}): {versions()}.\n")
    print("\n".join(str(p) for p in written.values()))
