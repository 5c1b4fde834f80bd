"""Reading Jaeger: a query answered over HTTP against the same answer saved as a file.

A Jaeger API v3 answer (``{"result": {"resourceSpans": [...]}}``) of ``bench.realistic`` traces (GenAI dialect, seed
2026), served by a small HTTP server on 127.0.0.1 that answers ``/api/v3/traces`` as Jaeger does, with a page large
enough that the window is not split. Contenders, in this process, repeats interleaved: ``jaeger.fetch`` of the URL
(the request, the transfer, the loader's fast path on the answer's bytes, the traces kept by id) and
``load_sources`` of the same bytes saved as a file. Peak memory: each read once in a child process of its own, the
growth of its peak resident size over the interpreter with the modules imported.

Targets: the answer over HTTP within 1.5 x the time of the file, and within 1.5 x its peak memory (each answer is
read like a saved one, straight from its bytes; parsing it into Python objects first took eight times the time and
two and a half times the memory).

    python -m bench.jaeger_bench [--quick]
"""
from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from .common import Figure, Plan, Target, cache_dir, module_main, ratio, summarize, time_interleaved

NAME = "jaeger"
TITLE = "Reading Jaeger: an API v3 answer over HTTP (127.0.0.1) vs the same answer saved as a file"
SPANS = 40_000
SINCE = "2000-01-01T00:00:00Z"
UNTIL = "2100-01-01T00:00:00Z"

F_TIME = "answer over HTTP / the same answer from a file"
F_PEAK = "peak memory: answer over HTTP / the same answer from a file"
TARGETS = [
    Target("jaeger: an answer over HTTP / the same answer from a file", F_TIME, "<=", 1.5),
    Target("jaeger: peak memory, an answer over HTTP / from a file", F_PEAK, "<=", 1.5),
]

FULL = Plan(repeats=9, iterations=1, warmup=1)
QUICK = Plan(repeats=3, iterations=1, warmup=1)


def answer_file() -> Path:
    """The answer, made once: the first requests of the realistic file holding at least ``SPANS`` spans."""
    from .analysis_data import realistic

    path = Path(cache_dir()) / f"jaeger-answer-{SPANS}.json"
    if not path.exists():
        source, _ = realistic(100_000, "genai")
        resource_spans, spans = [], 0
        with open(source, encoding="utf-8") as f:
            for line in f:
                for rs in json.loads(line).get("resourceSpans", []):
                    resource_spans.append(rs)
                    spans += sum(len(ss.get("spans", [])) for ss in rs.get("scopeSpans", []))
                if spans >= SPANS:
                    break
        tmp = path.with_name(path.name + ".partial")
        tmp.write_text(json.dumps({"result": {"resourceSpans": resource_spans}}, separators=(",", ":")))
        tmp.replace(path)
    return path


class _Jaeger:
    """Jaeger API v3 on 127.0.0.1 answering every query with one answer (and one service)."""

    def __init__(self, body: bytes):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                data = (json.dumps({"services": ["bench"]}).encode() if self.path.startswith("/api/v3/services")
                        else outer.body)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.body = body
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return (f"http://127.0.0.1:{self.server.server_address[1]}?service=bench&page=1000000"
                f"&since={SINCE}&until={UNTIL}")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _peak(kind: str, path: Path) -> float:
    """MiB the peak resident size of a child process grows by reading the answer once (``kind``: jaeger or file)."""
    out = subprocess.run([sys.executable, "-m", "bench.jaeger_bench", "--peak", kind, str(path)], check=True,
                         capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent)
    return float(out.stdout.split()[-1])


def _high_water_kib() -> int:
    """This process's peak resident size (``VmHWM``: unlike ``ru_maxrss``, not inherited from the parent)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")


def _peak_child(kind: str, path: Path) -> None:
    from agentobs.analysis.jaeger.query import fetch, parse_url
    from agentobs.analysis.load.sources import load_sources
    server = _Jaeger(path.read_bytes()) if kind == "jaeger" else None
    before = _high_water_kib()
    ss = fetch(parse_url(server.url)) if server is not None else load_sources([str(path)])
    print(len(ss.spans), (_high_water_kib() - before) / 1024)


def run(quick: bool = False) -> list[Figure]:
    from agentobs.analysis.jaeger.query import fetch, parse_url
    from agentobs.analysis.load.sources import load_sources

    plan = QUICK if quick else FULL
    path = answer_file()
    server = _Jaeger(path.read_bytes())
    try:
        got, want = fetch(parse_url(server.url)), load_sources([str(path)])
        if len(got.spans) != len(want.spans) or set(got.spans["trace_id"]) != set(want.spans["trace_id"]):
            raise AssertionError("the answer over HTTP gives other spans than the file")
        t = time_interleaved({"jaeger": lambda: fetch(parse_url(server.url)),
                              "file": lambda: load_sources([str(path)])}, plan)
    finally:
        server.close()
    peaks = {k: [_peak(k, path) for _ in range(plan.repeats if not quick else 1)] for k in ("jaeger", "file")}
    s = {k: [x / 1e9 for x in v] for k, v in t.items()}
    g = dict(group=NAME)
    size = f"{path.stat().st_size / 2**20:.0f} MiB, {len(want.spans):,} spans"
    return [
        summarize("an answer over HTTP: fetch", s["jaeger"], "s", iterations=1, notes=size, **g),
        summarize("the same answer from a file: load", s["file"], "s", iterations=1, **g),
        ratio(F_TIME, t["jaeger"], t["file"], **g),
        summarize("peak memory growth, answer over HTTP", peaks["jaeger"], "MiB", iterations=1, **g),
        summarize("peak memory growth, the same answer from a file", peaks["file"], "MiB", iterations=1, **g),
        ratio(F_PEAK, peaks["jaeger"], peaks["file"], **g),
    ]


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--peak":
        _peak_child(sys.argv[2], Path(sys.argv[3]))
    else:
        module_main(run)
