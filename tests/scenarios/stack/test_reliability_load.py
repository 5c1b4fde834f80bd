"""Load, nothing lost: a simulated population exported over OTLP/gRPC through the real collector into Jaeger.

N runs (2,000; 10,000 with AGENTOBS_FULL=1; AGENTOBS_LOAD_RUNS overrides) under a service.name of their own, run
as a server runs them: 8 at once in threads (AGENTOBS_LOAD_WORKERS overrides), every run reporting to ONE observer.
What was sent is known exactly: an exporter beside OTLP keeps the (trace id, span id) of every span the SDK
ended. Then, for every trace id the simulation recorded:

- Jaeger's API v3 (trace by trace) holds exactly the spans sent, no more, no fewer;
- the collector's file archive holds them too, each once;
- the collector's own counters agree: spans accepted by its OTLP receiver and spans its Jaeger exporter sent grew
  by the number of spans sent (nothing refused, nothing failed).

The test prints spans sent, found in Jaeger, found in the archive, accepted by the collector, and the sustained
rate: spans per second from the first span sent to the last span visible in Jaeger.

A simulated population has no model latency: it produces spans as fast as the CPU allows, faster than one
exporter thread can encode and send them on these machines (about 7,000 spans/s each way with the GIL shared).
The default queue of 2,048 spans then overflows and the ExportReport counts the overflow as lost; a real agent
spends seconds per run waiting on its model. So the test sizes OTEL_BSP_MAX_QUEUE_SIZE to hold the burst and
asserts that nothing at all is lost. Eight producing threads also leave the one exporting thread behind when the
runs end (the GIL is shared): the final flush gets the time to send that backlog (AGENTOBS_SHUTDOWN_TIMEOUT_MS,
5 s by default, is raised here), and still nothing may be lost.
"""
from __future__ import annotations

import os
import time

import pytest
from stackutil import SentIds, archive_spans, collector_counts, quiet_collector, wait_for, wait_jaeger_traces

from agentobs.domain.population import simulate
from agentobs.telemetry import configure

pytestmark = pytest.mark.stack


def load_runs() -> int:
    if os.environ.get("AGENTOBS_LOAD_RUNS"):
        return int(os.environ["AGENTOBS_LOAD_RUNS"])
    return 10_000 if os.environ.get("AGENTOBS_FULL", "") not in ("", "0") else 2_000


def load_workers() -> int:
    return int(os.environ.get("AGENTOBS_LOAD_WORKERS") or 8)


def _trace_id(obs) -> str | None:
    ctx = obs[0].trace_context()           # the run that just ended in this thread, of the one shared observer
    return ctx.split("-")[1] if ctx else None


def test_a_population_under_load_reaches_jaeger_and_the_archive_with_nothing_lost(stack, service_name, monkeypatch):
    runs = load_runs()
    queue = max(2048, 20 * runs)          # ~16 spans per run: the whole burst fits (see the module docstring)
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", str(queue))
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "200")
    monkeypatch.setenv("AGENTOBS_SHUTDOWN_TIMEOUT_MS", str(max(5_000, 60 * runs)))   # the backlog of the threads
    telemetry_url = stack.collector_telemetry
    if not telemetry_url:
        pytest.fail("AGENTOBS_COLLECTOR_TELEMETRY_URL is not set (scripts/stack.sh up exports it)", pytrace=False)
    before = quiet_collector(telemetry_url)

    sent = SentIds()
    tel = configure(otlp_endpoint=stack.otlp_grpc, otlp_protocol="grpc", service_name=service_name, traces_out=None,
                    extra_exporters=[("sent", sent)])
    shared = [tel.observer()]              # one observer for every run, as one process serves them
    workers = load_workers()
    t0 = time.monotonic()
    records = simulate(runs, seed=606, observers=lambda: shared, trace_id_of=_trace_id, workers=workers)
    produced = time.monotonic()
    report = tel.shutdown()
    flushed = time.monotonic()
    print(f"\nload: {runs:,} runs ({workers} at once, one observer), {report.ended:,} spans produced in "
          f"{produced - t0:.1f}s "
          f"({report.ended / (produced - t0):,.0f} spans/s while exporting), flushed after {flushed - t0:.1f}s "
          f"(queue {queue:,})")
    for line in report.lines():
        print(f"  {line}")

    # what was sent: every span the SDK ended, under the trace ids the simulation recorded
    otlp = next(e for name, e in report.exporters.items() if name.startswith("otlp"))
    assert report.exporters["sent"]["exported"] == sent.count == report.ended
    assert {k: otlp[k] for k in ("exported", "failed", "dropped", "lost")} == {
        "exported": report.ended, "failed": 0, "dropped": 0, "lost": 0}, otlp
    recorded = {tid for r in records for tid in r.trace_ids}
    assert len(records) == runs and len(recorded) >= runs
    assert len(recorded) == sum(len(r.trace_ids) for r in records), "two runs reported one trace id"
    assert recorded == set(sent.traces), "trace ids recorded by the simulation != trace ids of the spans sent"
    total = sent.count

    # Jaeger, trace by trace: exactly the spans sent. The time the last span became visible is taken on the
    # traces sent last (a full pass over every trace takes seconds of its own), then every trace is checked.
    tail = {tid: sent.traces[tid] for tid in list(sent.traces)[-50:]}
    _, tail_at, _ = wait_jaeger_traces(stack.jaeger, tail, timeout=120 + runs / 100, interval=0.05)
    held, seen_at, passes = wait_jaeger_traces(stack.jaeger, sent.traces, timeout=120 + runs / 100)
    found = sum(len(v) for v in held.values())
    missing = {tid: len(sent.traces[tid] - got) for tid, got in held.items() if got != sent.traces[tid]}
    assert tail_at is not None and seen_at is not None and not missing, (
        f"{len(missing)} of {len(sent.traces)} traces incomplete in Jaeger ({found:,} of {total:,} spans); "
        f"e.g. {list(missing.items())[:5]}")
    visible = tail_at if passes == 1 else seen_at      # the first full pass found nothing missing: the tail time holds
    rate = total / (visible - t0)

    # the collector's archive: every span, once
    def archived():
        got = archive_spans(stack.archive, service_name)
        return got if sum(len(v) for v in got.values()) >= total else None
    arch = wait_for(archived, f"the archive {stack.archive} to hold {total:,} spans of {service_name}", timeout=60)
    in_archive = sum(len(v) for v in arch.values())
    assert set(arch) == set(sent.traces)
    assert all(len(v) == len(set(v)) and set(v) == sent.traces[t] for t, v in arch.items()), "archive differs"

    # the collector's own counters
    after = wait_for(lambda: (lambda c: c if c["sent_jaeger"] - before["sent_jaeger"] >= total else None)(
        collector_counts(telemetry_url)), "the collector's Jaeger exporter counter to reach the spans sent", timeout=30)
    delta = {k: int(after[k] - before[k]) for k in after if k != "queue_jaeger"}
    print(f"  spans sent {total:,} | found in Jaeger {found:,} ({len(held):,} traces) | "
          f"in the archive {in_archive:,} | "
          f"accepted by the collector {delta['accepted']:,} | sent by it to Jaeger {delta['sent_jaeger']:,}")
    print(f"  sustained rate {rate:,.0f} spans/s (first span sent -> last span visible in Jaeger, "
          f"{visible - t0:.1f}s)")
    assert delta["accepted"] == total, delta
    assert delta["sent_jaeger"] == total, delta
    assert delta["sent_archive"] == total, delta
    assert delta["refused"] == delta["failed_jaeger"] == delta["enqueue_failed_jaeger"] == 0, delta
