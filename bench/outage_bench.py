"""The agent's per-step latency while the collector is away, beside the same steps with no exporter.

Issue 6 promises that a collector outage costs spans, never the agent's time: the kernel's per-step p99 stays
within 1.2x of the no-exporter figure. A ratio of two tails on a noisy two-core machine belongs here, measured
side by side over several trials, rather than in a test that a busy neighbour can fail; the integration test
(``tests/scenarios/stack/test_reliability_outage.py``) asserts what does not depend on timing (same results, nothing
lost, no step waiting on export) and runs the harness this benchmark reuses.

Each trial starts the harness's two worker processes, ``failing`` (OTLP/gRPC to a private collector) and
``quiet`` (the same telemetry without OTLP), which run the same seeded population blocks by turns, paced at
about 1,000 spans/s, while a timeline thread breaks and repairs the collector:

- (a) not started when the runs begin, started 3 s later;
- (b) killed (SIGKILL) and away for 15 s, longer than the SDK's queue holds (full run only);
- (c) restarted (SIGTERM, started again at once).

Per trial: the p99 of the steps from the moment the collector goes away until 5 s after the exporter delivers
again, failing / quiet. The figure is the median of the per-trial ratios. Always on a private instance of
``scripts/stack.sh`` (free ports, a temporary folder): the collector is killed.

    python -m bench.outage_bench [--quick]
"""
from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .common import Figure, Target, module_main, ratio, stack_harness, summarize

NAME = "outage"
TITLE = "Collector outage: the agent's per-step latency p99, failing exporter vs no exporter"
F_A = "(a) not started: step p99 failing / quiet"
F_B = "(b) killed: step p99 failing / quiet"
F_C = "(c) restarted: step p99 failing / quiet"
TARGETS = [Target("outage: step p99, collector restarted / no exporter", F_C, "<=", 1.2),
           Target("outage: step p99, collector not started / no exporter", F_A, "<=", 1.2)]


@contextmanager
def _sdk_env(harness) -> Iterator[None]:
    want = {"OTEL_EXPORTER_OTLP_TIMEOUT": str(harness.EXPORT_TIMEOUT_S), "OTEL_BSP_SCHEDULE_DELAY": "200",
            "OTEL_BSP_MAX_QUEUE_SIZE": str(harness.QUEUE)}
    old = {k: os.environ.get(k) for k in want}
    os.environ.update(want)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run(quick: bool = False) -> list[Figure]:
    stackutil = stack_harness()          # also puts tests/scenarios/stack on sys.path, where the outage harness lives
    import test_reliability_outage as harness

    trials = 1 if quick else 3
    cases = [("a", "a: not started", harness.fault_not_started, 1000),
             ("c", "c: restarted", harness.fault_restarted, 3000)]
    if not quick:
        cases.append(("b", "b: killed", harness.fault_killed, 2000))
    tmp = Path(tempfile.mkdtemp(prefix="agentobs-outage-bench-"))
    results: dict[str, list] = {k: [] for k, *_ in cases}
    try:
        with _sdk_env(harness), stackutil.PrivateStack(tmp / "run") as private:
            for t in range(trials):
                for key, label, fault, seed in cases:
                    if key == "a":
                        private.stop("collector")
                    out = tmp / f"{key}{t}"
                    results[key].append(harness.run_case(label, private, fault(private), seed + 100 * t, out))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    figs = []
    for key, name in (("a", F_A), ("c", F_C), ("b", F_B)):
        rs = results.get(key)
        if not rs:
            continue
        figs += [
            ratio(name, [r.p99_failing_us for r in rs], [r.p99_quiet_us for r in rs], group=NAME,
                  notes=f"{len(rs)} trial(s); spans lost {sum(r.lost for r in rs):,} of {sum(r.sent for r in rs):,}"),
            summarize(f"({key}) step p99 with the failing exporter", [r.p99_failing_us for r in rs], "µs",
                      group=NAME),
            summarize(f"({key}) step p99 without an exporter", [r.p99_quiet_us for r in rs], "µs", group=NAME),
            summarize(f"({key}) longest step with the failing exporter", [r.max_step_ms for r in rs], "ms",
                      group=NAME),
        ]
    return figs


def summary(figures: list[Figure]) -> str:
    f = {x.name: x for x in figures}
    parts = [f"{name.split(':')[0]} {f[name].median:.2f}x (trials {f[name].min:.2f}–{f[name].max:.2f})"
             for name in (F_A, F_C, F_B) if name in f]
    if not parts:
        return ""
    return ("Per-step p99 of the agent while the collector is away and for 5 s after it delivers again, against "
            "the same seeded steps in a process without an exporter: " + "; ".join(parts) + ". The exporter's "
            "thread shares the interpreter lock with the agent; the steps' median is unchanged (see the test's "
            "printout).")


if __name__ == "__main__":
    module_main(run)
