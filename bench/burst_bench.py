"""The burst export: 10,000 runs at full speed exported over OTLP/HTTP to a receiver on 127.0.0.1. Spans lost, and
what the export policy costs the run.

Each export happens in a child process of its own (the SDK, its exporter thread and the runs in one interpreter, as
in ``agentobs simulate``; a fresh process gives a clean peak resident size), through the kernel's documented
set-up: ``configure(otlp_endpoint=...)``, ``simulate(runs)``, ``shutdown()``. The receiver (``tests/otlp_counter.py``)
runs in this process, as a collector would in its own, and counts the distinct span ids it received. Two receivers:

- ``at once``: it answers every request at once;
- ``pausing``: it answers every 16th request 1 s late, as a collector does now and then on a loaded machine (a
  garbage collection, a full pipeline, no CPU to spare). The demo's 300 runs to a healthy collector lost 295 of
  5,031 spans that way; the test suite's 300 runs to a receiver pausing on every 4th request lost 321 under the old
  default.

Three export policies, their order rotating each repeat:

- ``bounded wait``: the default (a 2,048-span queue; a span that finds it full waits for room, at most
  ``AGENTOBS_EXPORT_WAIT_MS`` = 2 s, while the exporter keeps up);
- ``drop at once``: what agentobs did before and the SDK does (the same queue, ``AGENTOBS_EXPORT_WAIT_MS=0``);
- ``queue for the burst`` (pausing receiver only): the alternative, a queue that holds every span of the burst
  (``OTEL_BSP_MAX_QUEUE_SIZE`` = 20 x runs, no wait): nothing waits and nothing is dropped, at the cost of the
  memory the queued spans hold.

Also, in this process: what the gate costs a span when the queue has room (an agent's normal case), ``on_end``
through ``BoundedWaitSpanProcessor`` against the SDK's ``BatchSpanProcessor`` alone, interleaved.

Per export: spans lost (ended - received, checked against the SDK side's own count), the time the runs took and
the time to the last span handed to the receiver (runs + shutdown), how long the runs waited for room, and the
child's peak resident size (VmHWM). Ratios are per repeat, against ``drop at once`` on the same receiver.

    python -m bench.burst_bench [--quick]
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .common import REPO_ROOT, Figure, Plan, Target, module_main, ratio, summarize, time_interleaved, us

NAME = "burst"
TITLE = "Burst export: 10,000 runs at full speed over OTLP/HTTP to a receiver on 127.0.0.1"
FULL_RUNS, QUICK_RUNS = 10_000, 1_000
FULL_REPEATS, QUICK_REPEATS = 2, 2
WAIT, DROP, QUEUE = "bounded wait", "drop at once", "queue for the burst"
AT_ONCE, PAUSING = "at once", "pausing"
PAUSE_EVERY, PAUSE_S = 16, 1.0
CASES = ((AT_ONCE, WAIT), (AT_ONCE, DROP), (PAUSING, WAIT), (PAUSING, DROP), (PAUSING, QUEUE))
F_LOST = "receiver at once, bounded wait (default): spans lost"
F_LOST_PAUSING = "receiver pausing, bounded wait (default): spans lost"
TARGETS = [
    Target("burst: spans lost, 10,000 runs at full speed to a receiver on 127.0.0.1 (the default policy)", F_LOST,
           "<=", 0.0),
    Target("burst: spans lost, the same to a receiver that answers every 16th request 1 s late", F_LOST_PAUSING,
           "<=", 0.0),
]


def _env(policy: str, runs: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "AGENTOBS_"))}
    env["PYTHONPATH"] = REPO_ROOT + os.pathsep + env.get("PYTHONPATH", "")
    if policy == DROP:
        env["AGENTOBS_EXPORT_WAIT_MS"] = "0"
    elif policy == QUEUE:
        env["AGENTOBS_EXPORT_WAIT_MS"] = "0"
        env["OTEL_BSP_MAX_QUEUE_SIZE"] = str(20 * runs)
    return env


@dataclass
class Export:
    ended: int
    received: int
    exported: int
    dropped: int
    runs_s: float          # the runs, first to last
    total_s: float         # ... and the shutdown: every span handed to the receiver (or given up)
    waited_s: float
    longest_wait_ms: float
    peak_mib: float

    @property
    def lost(self) -> int:
        return self.ended - self.received


def export_once(receiver_kind: str, policy: str, runs: int, seed: int) -> Export:
    tests = str(Path(REPO_ROOT) / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    from otlp_counter import SpanCounter
    pause = {"pause_every": PAUSE_EVERY, "pause_s": PAUSE_S} if receiver_kind == PAUSING else {}
    with SpanCounter(**pause) as receiver:
        out = subprocess.run([sys.executable, "-m", "bench.burst_bench", "--child", receiver.endpoint, str(runs),
                              str(seed)], check=True, capture_output=True, text=True, cwd=REPO_ROOT,
                             env=_env(policy, runs), timeout=3600)
        received = receiver.spans
    r = json.loads(out.stdout.strip().splitlines()[-1])
    if r["exported"] != received:
        raise RuntimeError(f"{policy}: the SDK reports {r['exported']} spans exported, the receiver got {received}")
    return Export(ended=r["ended"], received=received, exported=r["exported"], dropped=r["dropped"],
                  runs_s=r["runs_s"], total_s=r["total_s"], waited_s=r["waited_ms"] / 1000,
                  longest_wait_ms=r["longest_wait_ms"], peak_mib=r["peak_kib"] / 1024)


def _child(endpoint: str, runs: int, seed: int) -> None:
    """One burst, printed as JSON: what the SDK side counted, the times, the peak resident size."""
    from agentobs.domain.population import simulate
    from agentobs.telemetry import configure
    tel = configure(otlp_endpoint=endpoint, otlp_protocol="http/protobuf", traces_out=None,
                    service_name="agentobs-bench-burst")
    t0 = time.perf_counter()
    simulate(runs, seed, observers=lambda: [tel.observer()])
    t1 = time.perf_counter()
    report = tel.shutdown()
    t2 = time.perf_counter()
    (e,) = report.exporters.values()
    print(json.dumps({"ended": report.ended, "exported": e["exported"], "dropped": e["dropped"],
                      "failed": e["failed"], "waited_ms": e["waited_ms"], "longest_wait_ms": e["longest_wait_ms"],
                      "runs_s": t1 - t0, "total_s": t2 - t0, "peak_kib": _high_water_kib()}))


def _high_water_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def gate_cost(quick: bool) -> list[Figure]:
    """ns per ``on_end`` with room in the queue: the SDK's processor alone, and behind the gate."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    from agentobs.telemetry import BoundedWaitSpanProcessor

    class Dropping(SpanExporter):
        def export(self, spans: object) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    span = TracerProvider().get_tracer("bench").start_span("chat gpt-4.1-mini")
    span.end()
    # a batch larger than what a repeat queues (flushed between repeats), a long delay: the exporter thread stays
    # asleep while a repeat is timed, in both
    size = {"max_queue_size": 4096, "max_export_batch_size": 2048, "schedule_delay_millis": 600_000}
    bsp = BatchSpanProcessor(Dropping(), **size)
    gated = BoundedWaitSpanProcessor(Dropping(), name="dropping", **size)
    plan = Plan(repeats=7, iterations=500, warmup=500) if quick else Plan(repeats=21, iterations=1000, warmup=1000)

    def flush() -> None:
        bsp.force_flush()
        gated.force_flush()
    t = time_interleaved({"sdk": lambda: bsp.on_end(span), "gated": lambda: gated.on_end(span)}, plan,
                         between=flush)
    bsp.shutdown()
    gated.shutdown()
    n = {"iterations": plan.iterations, "group": NAME}
    return [
        summarize("on_end with room in the queue: BatchSpanProcessor (the SDK)", us(t["sdk"]), "µs", **n),
        summarize("on_end with room in the queue: BoundedWaitSpanProcessor", us(t["gated"]), "µs", **n),
        summarize("the gate's cost per span, with room in the queue",
                  [a - b for a, b in zip(us(t["gated"]), us(t["sdk"]), strict=True)], "µs", **n,
                  notes="an agent's run: 14 spans"),
    ]


def run(quick: bool = False) -> list[Figure]:
    runs = QUICK_RUNS if quick else FULL_RUNS
    repeats = QUICK_REPEATS if quick else FULL_REPEATS
    out: dict[tuple[str, str], list[Export]] = {c: [] for c in CASES}
    export_once(AT_ONCE, WAIT, 20, 1)                  # warm-up: imports compiled, the port range touched
    for r in range(repeats):
        k = r % len(CASES)
        for case in CASES[k:] + CASES[:k]:
            out[case].append(export_once(*case, runs, 100 + r))
    g = NAME
    figs = []
    for kind in (AT_ONCE, PAUSING):
        w, d = out[(kind, WAIT)], out[(kind, DROP)]
        label = f"receiver {kind}"
        figs += [
            summarize(F_LOST if kind == AT_ONCE else F_LOST_PAUSING, [x.lost for x in w], "spans", group=g,
                      notes=f"{runs:,} runs, {w[0].ended:,} spans; the receiver counted every span the SDK exported"),
            summarize(f"{label}, drop at once (the old default): spans lost", [x.lost for x in d], "spans", group=g,
                      notes="the same 2,048-span queue, no wait: the SDK's policy"),
            ratio(f"{label}: runs + flush, bounded wait / drop at once", [x.total_s for x in w],
                  [x.total_s for x in d], group=g,
                  notes="what the policy costs the burst: first run to last span handed over"),
            ratio(f"{label}: runs alone, bounded wait / drop at once", [x.runs_s for x in w], [x.runs_s for x in d],
                  group=g, notes="the waits move export time from the final flush into the runs"),
            summarize(f"{label}, bounded wait: runs + flush", [x.total_s for x in w], "s", group=g),
            summarize(f"{label}, drop at once: runs + flush", [x.total_s for x in d], "s", group=g),
            summarize(f"{label}, bounded wait: time the runs waited for room", [x.waited_s for x in w], "s",
                      group=g),
            summarize(f"{label}, bounded wait: longest single wait", [x.longest_wait_ms for x in w], "ms", group=g,
                      notes="the bound is 2,000 ms"),
        ]
    w, d, q = out[(PAUSING, WAIT)], out[(PAUSING, DROP)], out[(PAUSING, QUEUE)]
    figs += [
        summarize("receiver pausing, queue for the burst: spans lost", [x.lost for x in q], "spans", group=g,
                  notes="OTEL_BSP_MAX_QUEUE_SIZE = 20 x runs, no wait"),
        ratio("receiver pausing: runs + flush, queue for the burst / drop at once", [x.total_s for x in q],
              [x.total_s for x in d], group=g),
        summarize("receiver pausing, bounded wait: peak resident size", [x.peak_mib for x in w], "MiB", group=g),
        summarize("receiver pausing, drop at once: peak resident size", [x.peak_mib for x in d], "MiB", group=g),
        summarize("receiver pausing, queue for the burst: peak resident size", [x.peak_mib for x in q], "MiB",
                  group=g),
        ratio("receiver pausing: peak resident size, queue for the burst / bounded wait", [x.peak_mib for x in q],
              [x.peak_mib for x in w], group=g, notes="what holding the backlog in memory instead costs"),
    ]
    return figs + gate_cost(quick)


def summary(figures: list[Figure]) -> str:
    f = {x.name: x for x in figures}
    lost, lost_p = f.get(F_LOST), f.get(F_LOST_PAUSING)
    old, old_p = (f.get(f"receiver {k}, drop at once (the old default): spans lost") for k in (AT_ONCE, PAUSING))
    cost, cost_p = (f.get(f"receiver {k}: runs + flush, bounded wait / drop at once") for k in (AT_ONCE, PAUSING))
    mem = f.get("receiver pausing: peak resident size, queue for the burst / bounded wait")
    if not (lost and lost_p and old and old_p and cost and cost_p and mem):
        return ""
    return (f"A burst at full speed: the default policy (a full queue holds the run back, at most 2 s, while the "
            f"exporter keeps up) lost {lost.median:,.0f} spans to a receiver that answers at once and "
            f"{lost_p.median:,.0f} to one that answers every 16th request 1 s late; dropping at once, the old "
            f"default, lost {old.median:,.0f} and {old_p.median:,.0f} (medians). The wait costs the burst "
            f"{cost.median:.2f} x and {cost_p.median:.2f} x the old default's time to the last span handed over; a "
            f"queue holding the backlog instead costs {mem.median:.2f} x the peak memory.")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        module_main(run)
