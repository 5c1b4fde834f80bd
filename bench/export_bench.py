"""Export throughput through the real collector into Jaeger, over OTLP/gRPC and OTLP/HTTP.

A simulated population (2,000 runs, ~32,000 spans; quick: 200 runs) is exported under a fresh service.name
through ``agentobs.telemetry.configure(otlp_endpoint=..., otlp_protocol=...)`` to the collector of
``scripts/stack.sh`` (redaction, archive, span metrics, Jaeger). Per export:

- sustained rate: spans / seconds from the first span sent (the population starts) to the last span visible in
  Jaeger (its API v3, trace by trace: the traces sent last are polled every 50 ms until complete, then every
  trace is checked complete: a repeat where any span is missing fails the benchmark);
- SDK-side rate: spans / seconds the process took to produce them while exporting (the runs themselves, the
  telemetry and the exporter's thread share one interpreter);
- for reference, the same population through the same telemetry with no exporter (``none``): the rate the
  process produces spans at when nothing is exported.

Protocols are interleaved (the order rotates each repeat); figures are medians over the repeats. The batch
processor's queue (OTEL_BSP_MAX_QUEUE_SIZE) is sized to hold the whole burst, so nothing is dropped: a simulated
population produces spans faster than one exporter thread sends them, which a real agent (seconds of model
latency per step) never does.

It uses the running stack when its variables are exported (``eval "$(scripts/stack.sh up)"``: JAEGER_URL,
AGENTOBS_COLLECTOR_OTLP_GRPC, AGENTOBS_COLLECTOR_OTLP_HTTP), else it starts a private instance of
``scripts/stack.sh`` on free ports in a temporary folder (built binaries from the cache) and stops it at the end.

    python -m bench.export_bench [--quick]
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .common import Figure, Target, module_main, ratio, stack_harness, summarize

NAME = "export"
TITLE = "Export throughput: a population over OTLP (gRPC, HTTP) through the collector into Jaeger"
FULL_RUNS, QUICK_RUNS = 2_000, 200
F_GRPC = "gRPC: sustained rate, first span sent -> last visible in Jaeger"
F_HTTP = "HTTP: sustained rate, first span sent -> last visible in Jaeger"
# informative: far below what these machines do (about 7,000 spans/s), far above what an agent fleet sends
TARGETS = [Target("export: gRPC sustained rate into Jaeger (spans/s)", F_GRPC, ">=", 2_000.0)]


# -- the stack -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Endpoints:
    grpc: str
    http: str
    jaeger: str
    private: bool


@contextmanager
def stack() -> Iterator[Endpoints]:
    """The running stack (from its exported variables), or a private instance for the duration."""
    e = os.environ
    if e.get("JAEGER_URL") and e.get("AGENTOBS_COLLECTOR_OTLP_GRPC") and e.get("AGENTOBS_COLLECTOR_OTLP_HTTP"):
        grpc = e["AGENTOBS_COLLECTOR_OTLP_GRPC"]
        yield Endpoints(grpc if "://" in grpc else f"http://{grpc}", e["AGENTOBS_COLLECTOR_OTLP_HTTP"],
                        e["JAEGER_URL"].rstrip("/"), private=False)
        return
    tmp = tempfile.mkdtemp(prefix="agentobs-export-bench-")
    print(f"export bench: no stack exported; starting a private one in {tmp}", file=sys.stderr, flush=True)
    try:
        with stack_harness().PrivateStack(Path(tmp) / "run") as ps:
            yield Endpoints(ps.otlp_grpc, ps.otlp_http, ps.jaeger, private=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _wait_complete(jaeger: str, want: dict[str, set[str]], timeout: float, interval: float) -> float:
    """Polls until every trace holds its spans; returns the monotonic time it was seen complete."""
    _, seen_at, _ = stack_harness().wait_jaeger_traces(jaeger, want, timeout=timeout, interval=interval)
    if seen_at is None:
        raise RuntimeError(f"traces still incomplete in Jaeger after {timeout:.0f}s")
    return seen_at


# -- one export ----------------------------------------------------------------------------------------------------


@dataclass
class Export:
    spans: int
    produced_s: float     # first span -> the last run finished
    flushed_s: float      # ... -> shutdown returned (everything handed to the collector)
    visible_s: float      # ... -> the last span visible in Jaeger


def export_once(ep: Endpoints, protocol: str | None, runs: int, seed: int) -> Export:
    from agentobs.domain.population import simulate
    from agentobs.telemetry import configure

    service = f"agentobs-bench-export-{protocol or 'none'}-{uuid.uuid4().hex[:8]}"
    sent = stack_harness().SentIds()
    old = os.environ.get("OTEL_BSP_MAX_QUEUE_SIZE")
    os.environ["OTEL_BSP_MAX_QUEUE_SIZE"] = str(max(2048, 20 * runs))        # the whole burst fits
    try:
        if protocol is None:       # the same telemetry (SDK spans and metrics), nothing exported
            from opentelemetry.sdk.metrics import MeterProvider
            from opentelemetry.sdk.metrics.export import InMemoryMetricReader
            tel = configure(service_name=service, traces_out=None, extra_exporters=[("sent", sent)],
                            meter_provider=MeterProvider(metric_readers=[InMemoryMetricReader()]))
        else:
            tel = configure(otlp_endpoint=ep.grpc if protocol == "grpc" else ep.http, service_name=service,
                            otlp_protocol="grpc" if protocol == "grpc" else "http/protobuf", traces_out=None,
                            extra_exporters=[("sent", sent)])
    finally:
        if old is None:
            os.environ.pop("OTEL_BSP_MAX_QUEUE_SIZE", None)
        else:
            os.environ["OTEL_BSP_MAX_QUEUE_SIZE"] = old
    t0 = time.monotonic()
    simulate(runs, seed, observers=lambda: [tel.observer()])
    produced = time.monotonic()
    report = tel.shutdown()
    flushed = time.monotonic()
    lost = {n: e["lost"] for n, e in report.exporters.items() if e["lost"]}
    if lost:
        raise RuntimeError(f"spans lost: {lost}")
    if protocol is None:
        return Export(report.ended, produced - t0, flushed - t0, float("nan"))
    tail = {t: sent.traces[t] for t in list(sent.traces)[-20:]}
    seen = _wait_complete(ep.jaeger, tail, timeout=120, interval=0.05)
    _wait_complete(ep.jaeger, sent.traces, timeout=120, interval=0.5)          # every trace, complete
    return Export(report.ended, produced - t0, flushed - t0, seen - t0)


# -- the benchmark -------------------------------------------------------------------------------------------------


def run(quick: bool = False) -> list[Figure]:
    runs = QUICK_RUNS if quick else FULL_RUNS
    repeats = 3 if quick else 5
    g = NAME
    out: dict[str | None, list[Export]] = {"grpc": [], "http": [], None: []}
    with stack() as ep:
        export_once(ep, "grpc", 50, 1)                # warm-up: imports, connections, Jaeger's first service
        names: list[str | None] = ["grpc", "http", None]
        for r in range(repeats):
            for proto in names[r % 3:] + names[:r % 3]:
                out[proto].append(export_once(ep, proto, runs, 1000 + r))
    spans = out["grpc"][0].spans
    where = "a private stack.sh instance" if ep.private else "the running stack"
    figs = []
    for proto, label in (("grpc", "gRPC"), ("http", "HTTP")):
        xs = out[proto]
        figs += [
            summarize(F_GRPC if proto == "grpc" else F_HTTP, [x.spans / x.visible_s for x in xs], "spans/s", group=g,
                      notes=f"{runs:,} runs, {spans:,} spans, {where}"),
            summarize(f"{label}: SDK-side rate while exporting", [x.spans / x.produced_s for x in xs], "spans/s",
                      group=g, notes="spans produced per second of the runs"),
            summarize(f"{label}: first span -> all handed to the collector", [x.flushed_s for x in xs], "s", group=g),
            summarize(f"{label}: first span -> last span visible in Jaeger", [x.visible_s for x in xs], "s", group=g),
        ]
    none = out[None]
    figs += [
        summarize("no exporter: SDK-side rate (same telemetry, nothing exported)",
                  [x.spans / x.produced_s for x in none], "spans/s", group=g),
        ratio("sustained rate gRPC / HTTP", [x.spans / x.visible_s for x in out["grpc"]],
              [x.spans / x.visible_s for x in out["http"]], group=g),
        ratio("SDK-side rate with gRPC export / without exporter", [x.spans / x.produced_s for x in out["grpc"]],
              [x.spans / x.produced_s for x in none], group=g,
              notes="what exporting costs the process producing the spans"),
    ]
    return figs


def summary(figures: list[Figure]) -> str:
    f = {x.name: x for x in figures}
    g, h = f.get(F_GRPC), f.get(F_HTTP)
    if not (g and h):
        return ""
    return (f"Through the real collector into Jaeger, a simulated population sustains {g.median:,.0f} spans/s over "
            f"gRPC and {h.median:,.0f} spans/s over HTTP from the first span sent to the last visible in Jaeger. "
            "The process producing the spans is the bottleneck: one Python exporter thread encodes and sends "
            "while the runs execute under the same interpreter lock.")


if __name__ == "__main__":
    module_main(run)
