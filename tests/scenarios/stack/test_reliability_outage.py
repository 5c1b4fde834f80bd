"""Faults in the backend while agents run: the collector absent, crashed, restarted; Jaeger gone behind a running
collector. On a PRIVATE stack instance (its own ports and run folder under pytest's tmp), so killing processes
never disturbs the shared stack.

Each collector case runs seeded population blocks (BLOCK runs each), paced at about RATE spans/s, while a timeline
thread breaks and repairs the collector:

(a) the collector is not started when the runs begin; it starts 3 s later;
(b) the collector is killed (SIGKILL, between two batches) in the middle of the runs and stays away for 15 s,
    longer than the SDK can hold: its queue (OTEL_BSP_MAX_QUEUE_SIZE) overflows and batches time out;
(c) the collector is restarted (SIGTERM, then started again at once) in the middle of the runs.

The runs happen in two worker processes that differ only in the exporter: ``failing`` exports over OTLP/gRPC to
the collector under test, ``quiet`` has the same telemetry (SDK spans and metrics, the same extra exporter)
without OTLP. They run the same seeded blocks, taking turns block by block, so machine noise hits both alike and
the failing exporter's background thread competes for the GIL of its own process only. Garbage collection is
held off within a block and run between blocks in both (as bench/common.py does), so a collection one process
triggers is not billed to a step. The reference results come from the same blocks run without telemetry.

Each case checks:

- every run ends exactly as the same seeded run without telemetry (stop reason, outcome, steps, tool calls,
  tokens, cost, elapsed time, signatures, and the writes it made: tool, arguments, result); no exception reaches
  the caller, no observer fails (no ERROR from the agentobs loggers);
- the loop never waits on export: no step (StepStarted -> StepFinished, perf_counter_ns, measured around every
  observer) from the moment the collector goes away until 5 s after the exporter delivers again takes
  MAX_STEP_S or more (the SDK's first retry of a failed batch sleeps about 1 s; a step is ~150 us). The p99
  of those steps beside the quiet process's is printed; its 1.2x target is a timing ratio, so it is measured
  side by side over several trials by ``bench/outage_bench.py`` (``make bench``), not asserted here;
- accounting: every span sent is delivered or counted lost (sent == delivered + lost), and Jaeger holds exactly
  the spans reported delivered (a subset of the spans sent, found trace by trace);
- spans buffered within the queue limit reach Jaeger once the collector is back: in (a) and (c) nothing is lost
  and every trace of the blocks run during the outage is complete in Jaeger; in (b) spans of the outage are in
  Jaeger too and the overflow and the timed-out batches are counted lost.

SDK settings: OTEL_EXPORTER_OTLP_TIMEOUT=10 (s; the SDK's default: a batch is retried after ~1, 3 and 7 s, then
given up), OTEL_BSP_SCHEDULE_DELAY=200 (ms), OTEL_BSP_MAX_QUEUE_SIZE=QUEUE.

Jaeger outage: Jaeger is stopped, runs are exported (the collector accepts them all), Jaeger starts again with
its storage and the collector's retry queue (collector/config.yaml: sending_queue, retry_on_failure)
delivers every span sent during the outage.
"""
from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from stackutil import (
    PrivateStack,
    SentIds,
    collector_counts,
    healthy,
    jaeger_trace_span_ids,
    quiet_collector,
    unique_service,
    wait_for,
    wait_jaeger_traces,
)

pytestmark = pytest.mark.stack

RATE = 1000              # spans/s the workload aims at
BLOCK = 10               # runs per block (~160 spans)
SPANS_PER_RUN = 16.2     # a population's average, for the pacing
QUEUE = 10_000           # OTEL_BSP_MAX_QUEUE_SIZE: (a) and (c) stay within it, (b) overflows it
EXPORT_TIMEOUT_S = 30    # OTEL_EXPORTER_OTLP_TIMEOUT: how long the exporter retries one batch (backoff 1, 2, 4, 8 s)
# With the SDK's default 10 s, the batch sent as the collector went away had its last retry at about 7 s; on a
# loaded machine the collector started in (a) could accept connections only later (82 spans lost in one CI run).
KILLED_EXPORT_TIMEOUT_S = 10   # (b) only: the SDK's default, so batches give up while the collector is away
MAX_STEP_S = 0.5         # a step that waited on an export retry would take >= ~0.8 s
AFTER_S = 5.0            # how long the runs go on after the exporter delivers again (the backlog flush included)
# the SDK's batch processor logs "Queue full, dropping Span." at WARNING here, for every span it drops, in the
# thread that ends the span (the agent's)
SDK_QUEUE_LOGGER = "opentelemetry.sdk._shared_internal"


@pytest.fixture(scope="module")
def private(stack, tmp_path_factory):
    """A second stack instance of our own (``stack`` only for the skip/require semantics of the stack tests)."""
    ps = PrivateStack(tmp_path_factory.mktemp("outage") / "run")
    try:
        ps.up()
        yield ps
    finally:
        ps.down()


@pytest.fixture
def sdk_env(monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", str(EXPORT_TIMEOUT_S))
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "200")
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", str(QUEUE))


# -- what a run did, and how long its steps took ----------------------------------------------------------------


class StepTimes:
    """Per-step wall time: ``head`` goes first in the observer list, ``tail`` last, so a step's time includes
    every observer's work on its events (span starts and ends, the batch processor's queue, metrics)."""

    def __init__(self) -> None:
        self.samples: list[tuple[int, int]] = []     # (started perf_counter_ns, duration ns)
        self._t0 = 0
        outer = self
        from agentobs.kernel.events import StepFinished, StepStarted

        class Head:
            def notify(self, e: Any) -> None:
                if type(e) is StepStarted:
                    outer._t0 = time.perf_counter_ns()

        class Tail:
            def notify(self, e: Any) -> None:
                if type(e) is StepFinished:
                    t = time.perf_counter_ns()
                    outer.samples.append((outer._t0, t - outer._t0))

        self.head, self.tail = Head(), Tail()


class Writes:
    """The writes each task made (tool, arguments, result), from the kernel's events."""

    def __init__(self) -> None:
        self.by_task: dict[str, list[list[str]]] = defaultdict(list)

    def observer(self) -> Any:
        from agentobs.kernel.events import RunStarted, ToolCalled, ToolReturned
        by_task, args = self.by_task, {}
        task = [""]

        class Rec:
            def notify(self, e: Any) -> None:
                t = type(e)
                if t is RunStarted:
                    task[0] = e.task_id
                elif t is ToolCalled:
                    args[e.key] = json.dumps(e.args, sort_keys=True, default=str)
                elif t is ToolReturned and e.effect == "write" and e.status == "ok":
                    by_task[task[0]].append([e.name, args.get(e.key, ""),
                                             json.dumps(e.result, sort_keys=True, default=str)])
        return Rec()


def outcome(r: Any, writes: Writes) -> list:
    """What a run did, as JSON-able values (compared across processes)."""
    return json.loads(json.dumps([r.task_id, r.pattern, r.stop, r.outcome, r.success, r.steps, r.tool_calls, r.tokens,
                                  r.cost_usd, r.elapsed_s, r.expected, r.resume_gap_s, writes.by_task[r.task_id]]))


def reference(seed: int) -> list[list]:
    """The block's runs without telemetry."""
    from agentobs.domain.population import simulate
    w = Writes()
    return [outcome(r, w) for r in simulate(BLOCK, seed, observers=lambda: [w.observer()])]


def p99(xs: list[int]) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(0.99 * (len(s) - 1)))]


# -- a worker process: runs blocks through one telemetry configuration ----------------------------------------------


def worker_main(config: dict[str, Any]) -> None:
    """``python this_file.py --worker '{"endpoint": ..., "service": ...}'``: JSON lines in on stdin, out on stdout."""
    import gc
    import logging
    import traceback

    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from agentobs.domain.population import simulate
    from agentobs.telemetry import OTelObserver, configure

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    errors: list[str] = []

    class Failures(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            errors.append(f"{record.name}: {record.getMessage()}")
    logging.getLogger("agentobs").addHandler(Failures(level=logging.ERROR))

    sent = SentIds()
    if config["endpoint"]:
        tel = configure(otlp_endpoint=config["endpoint"], otlp_protocol="grpc", service_name=config["service"],
                        traces_out=None, extra_exporters=[("sent", sent)])
    else:       # the same telemetry, nothing exported: SDK spans and metrics, the same extra exporter
        tel = configure(service_name=config["service"], traces_out=None, extra_exporters=[("sent", sent)],
                        meter_provider=MeterProvider(metric_readers=[InMemoryMetricReader()]))
    times = StepTimes()

    def trace_id(obs: list[Any]) -> str | None:
        ctx = next(o for o in obs if isinstance(o, OTelObserver)).trace_context()
        return ctx.split("-")[1] if ctx else None

    out = sys.stdout
    for line in sys.stdin:
        cmd = json.loads(line)
        try:
            if cmd["op"] == "block":
                w = Writes()
                times.samples.clear()
                gc.collect()
                gc.disable()
                start = time.monotonic()
                try:
                    recs = simulate(BLOCK, cmd["seed"], observers=lambda w=w: [times.head, tel.observer(), times.tail,
                                                                           w.observer()], trace_id_of=trace_id)
                finally:
                    end = time.monotonic()
                    gc.enable()
                reply: dict[str, Any] = {"steps": times.samples, "outcomes": [outcome(r, w) for r in recs],
                                         "trace_ids": [t for r in recs for t in r.trace_ids], "start": start,
                                         "end": end}
            elif cmd["op"] == "flush":
                tel.flush()
                reply = {"ok": True}
            elif cmd["op"] == "shutdown":
                t0 = time.monotonic()
                report = tel.shutdown()
                reply = {"ended": report.ended, "exporters": report.exporters, "shutdown_s": time.monotonic() - t0,
                         "sent": {t: sorted(ss) for t, ss in sent.traces.items()}, "errors": errors,
                         "queue_full_warning": logging.getLogger(SDK_QUEUE_LOGGER).isEnabledFor(logging.WARNING)}
            else:
                reply = {"error": f"unknown op {cmd['op']}"}
        except BaseException:  # an exception reaching the caller: reported, the test fails
            reply = {"error": traceback.format_exc()}
        out.write(json.dumps(reply) + "\n")
        out.flush()
        if cmd["op"] == "shutdown":
            break


class Worker:
    def __init__(self, endpoint: str | None, service: str, log: Path):
        env = dict(os.environ)
        for k in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "AGENTOBS_TRACES_OUT"):
            env.pop(k, None)
        self.log = log
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", json.dumps({"endpoint": endpoint, "service": service})],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(log, "w"), text=True, env=env,  # noqa: SIM115 - open while the worker runs
            cwd=str(Path(__file__).parent))

    def ask(self, **cmd: Any) -> dict[str, Any]:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, f"the worker exited (rc {self.proc.poll()}); its log:\n{self.log.read_text()[-3000:]}"
        reply = json.loads(line)
        assert "error" not in reply, f"an exception reached the caller:\n{reply['error']}"
        return reply

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


# -- the workload ------------------------------------------------------------------------------------------------


@dataclass
class Block:
    seed: int
    start: float
    end: float
    trace_ids: list[str]


@dataclass
class Workload:
    """Seeded blocks, paced, in the failing and the quiet worker by turns; checked against the reference."""
    failing: Worker
    quiet: Worker
    seed0: int
    blocks: list[Block] = field(default_factory=list)
    steps: dict[str, list[tuple[int, int]]] = field(default_factory=lambda: {"failing": [], "quiet": []})
    mismatches: list[str] = field(default_factory=list)
    pause: threading.Event = field(default_factory=threading.Event)   # set: hold between blocks, flushed
    paused: threading.Event = field(default_factory=threading.Event)  # set by the loop while it holds

    def block(self, k: int, measure: bool = True) -> None:
        seed = self.seed0 + k
        order = (("failing", self.failing), ("quiet", self.quiet))
        got = {name: w.ask(op="block", seed=seed) for name, w in (order if k % 2 == 0 else order[::-1])}
        want = reference(seed)
        for name, reply in got.items():
            if reply["outcomes"] != want:
                bad = next(i for i, (a, b) in enumerate(zip(reply["outcomes"], want, strict=True)) if a != b)
                self.mismatches.append(f"seed {seed} run {bad} ({name}): {reply['outcomes'][bad]} != {want[bad]}")
            if measure:
                self.steps[name] += [tuple(x) for x in reply["steps"]]
        f = got["failing"]
        self.blocks.append(Block(seed, f["start"], f["end"], f["trace_ids"]))

    def drive(self, until: Callable[[], bool]) -> None:
        """Blocks, paced at RATE spans/s, until ``until()`` (checked between blocks)."""
        interval = BLOCK * SPANS_PER_RUN / RATE
        t0 = time.monotonic()
        k = 0
        while not until():
            if self.pause.is_set():
                self.failing.ask(op="flush")
                self.paused.set()
                while self.pause.is_set():
                    time.sleep(0.01)
                self.paused.clear()
            self.block(len(self.blocks))
            k += 1
            delay = t0 + k * interval - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                t0 = time.monotonic() - k * interval       # behind: do not catch up in a burst

    def between(self, name: str, start: float, end: float) -> list[int]:
        """Durations of the steps that started within [start, end] (time.monotonic seconds; perf_counter and
        monotonic are both CLOCK_MONOTONIC on Linux, one clock for every process)."""
        lo, hi = int(start * 1e9), int(end * 1e9)
        return [d for t, d in self.steps[name] if lo <= t <= hi]


class Timeline(threading.Thread):
    """Runs the fault steps in the background while the workload runs; records when things happened."""

    def __init__(self, steps: Callable[[Timeline], None]):
        super().__init__(daemon=True)
        self.steps, self.at, self.error = steps, {}, None
        self.t0 = time.monotonic()

    def mark(self, what: str) -> None:
        self.at[what] = time.monotonic()

    def sleep_until(self, offset: float) -> None:
        time.sleep(max(0.0, self.t0 + offset - time.monotonic()))

    def run(self) -> None:
        try:
            self.steps(self)
        except BaseException as exc:  # reported by the test
            self.error = exc
        finally:
            self.mark("end")


def _wait_recovered(tl: Timeline, private: PrivateStack) -> None:
    """Marks "recovered" when the (new) collector has accepted spans again: the exporter delivers."""
    wait_for(lambda: collector_counts(private.collector_telemetry)["accepted"] > 0,
             "the collector to accept spans again", timeout=60, interval=0.02)
    tl.mark("recovered")


def _jaeger_holdings(base: str, sent: dict[str, set[str]], delivered: int, timeout: float = 90
                     ) -> dict[str, set[str]]:
    """What Jaeger holds of the traces sent, once it holds ``delivered`` spans and nothing more arrives."""
    def holdings() -> dict[str, set[str]]:
        return {tid: jaeger_trace_span_ids(base, tid) for tid in sent}

    def enough():
        h = holdings()
        return h if sum(len(v) for v in h.values()) >= delivered else None
    try:
        wait_for(enough, f"Jaeger to hold the {delivered:,} spans reported delivered", timeout=timeout, interval=1.0)
    except AssertionError:
        return holdings()                               # the assertions below say what is missing
    time.sleep(2.0)                                     # anything more would be spans reported lost
    return holdings()


@dataclass
class CaseResult:
    name: str
    exporters: dict[str, dict[str, int]]
    sent: int
    delivered: int
    lost: int
    in_jaeger: int
    outage_spans: int
    outage_in_jaeger: int
    p99_failing_us: float
    p99_quiet_us: float
    max_step_ms: float
    queue_full_warning: bool


def run_case(name: str, private: PrivateStack, fault: Callable[[Workload, Timeline], None], seed0: int,
              tmp: Path) -> CaseResult:
    """Runs the workload while ``fault(workload, timeline)`` breaks and repairs things (marking "down" and
    "recovered"), then checks and prints what happened."""
    service = unique_service(f"outage-{name}")
    tmp.mkdir(parents=True, exist_ok=True)
    failing = Worker(private.otlp_grpc, service, tmp / "failing.log")
    quiet = Worker(None, service + "-quiet", tmp / "quiet.log")
    try:
        wl = Workload(failing, quiet, seed0)
        wl.block(0, measure=False)                 # warm-up (imports, caches): not measured
        tl = Timeline(lambda t: fault(wl, t))
        tl.t0 = time.monotonic()
        tl.start()
        wl.drive(lambda: not tl.is_alive() and time.monotonic() >= tl.at["recovered"] + AFTER_S)
        tl.join()
        if tl.error:
            raise tl.error
        fin = failing.ask(op="shutdown")
        quiet.ask(op="shutdown")
    finally:
        failing.close()
        quiet.close()
    assert not wl.mismatches, ("runs differ from the same seeded runs without telemetry:\n"
                               + "\n".join(wl.mismatches[:5]))
    assert not fin["errors"], fin["errors"][:5]

    sent = {t: set(ss) for t, ss in fin["sent"].items()}
    sent_spans = {(t, s) for t, ss in sent.items() for s in ss}
    exporters, ended = fin["exporters"], fin["ended"]
    otlp = next(e for n, e in exporters.items() if n.startswith("otlp"))
    assert {k: exporters["sent"][k] for k in ("exported", "failed", "dropped", "lost")} == {
        "exported": ended, "failed": 0, "dropped": 0, "lost": 0}
    assert len(sent_spans) == ended
    assert {t for b in wl.blocks for t in b.trace_ids} == set(sent)
    assert ended == otlp["exported"] + otlp["lost"]                     # sent == delivered + lost

    held = _jaeger_holdings(private.jaeger, sent, otlp["exported"])
    in_jaeger = {(t, s) for t, ss in held.items() for s in ss}
    assert in_jaeger <= sent_spans, "Jaeger holds spans that were never sent"
    assert len(in_jaeger) == otlp["exported"], (
        f"Jaeger holds {len(in_jaeger):,} spans, the ExportReport says {otlp['exported']:,} were delivered")
    assert ended - len(in_jaeger) == otlp["lost"]

    down, back = tl.at["down"], tl.at["recovered"]
    during = [b for b in wl.blocks if b.start >= down and b.end <= back]
    outage_tids = [t for b in during for t in b.trace_ids]
    outage_spans = sum(len(sent[t]) for t in outage_tids)
    outage_found = sum(len(held[t]) for t in outage_tids)
    window = (down, back + AFTER_S)
    f_steps, q_steps = wl.between("failing", *window), wl.between("quiet", *window)
    assert len(f_steps) >= 1000 and len(q_steps) >= 1000, (len(f_steps), len(q_steps))
    res = CaseResult(name, exporters, ended, otlp["exported"], otlp["lost"], len(in_jaeger), outage_spans,
                     outage_found, p99(f_steps) / 1e3, p99(q_steps) / 1e3, max(f_steps) / 1e6,
                     fin["queue_full_warning"])
    runs = len(wl.blocks) * BLOCK
    print(f"\n({name}) {runs} runs in {wl.blocks[-1].end - tl.t0:.0f}s; collector away at {down - tl.t0:.1f}s, "
          f"the exporter delivers again at {back - tl.t0:.1f}s; shutdown took {fin['shutdown_s']:.1f}s")
    print(f"  spans sent {res.sent:,} | delivered {res.delivered:,} | lost {res.lost:,} (failed {otlp['failed']:,}, "
          f"dropped from the queue {otlp['dropped']:,}) | in Jaeger {res.in_jaeger:,}")
    print(f"  spans of the {len(during)} blocks run during the outage: {outage_spans:,}, in Jaeger {outage_found:,}")
    print(f"  step p99 from the outage to {AFTER_S:.0f}s after recovery: {res.p99_failing_us:,.0f} us with the failing "
          f"exporter vs {res.p99_quiet_us:,.0f} us without an exporter = {res.p99_failing_us / res.p99_quiet_us:.2f}x "
          f"({len(f_steps)} steps each; p50 {statistics.median(f_steps) / 1e3:,.0f} vs "
          f"{statistics.median(q_steps) / 1e3:,.0f} us); longest step {res.max_step_ms:,.1f} ms")
    for phase, (a, b) in (("outage", (down, back)), ("recovery", (back, back + AFTER_S))):
        f, q = wl.between("failing", a, b), wl.between("quiet", a, b)
        if f and q:
            print(f"    {phase:8} {a - tl.t0:5.1f}-{b - tl.t0:5.1f}s: "
                  f"p99 {p99(f) / 1e3:,.0f} vs {p99(q) / 1e3:,.0f} us, "
                  f"p50 {statistics.median(f) / 1e3:,.0f} vs {statistics.median(q) / 1e3:,.0f} us ({len(f)} steps)")
    assert outage_spans > 0 and outage_found > 0
    return res


def _never_waits(res: CaseResult) -> None:
    assert res.max_step_ms < MAX_STEP_S * 1e3, (
        f"({res.name}) a step took {res.max_step_ms:,.0f} ms while the collector was away: the loop waited on export")


def _nothing_lost(res: CaseResult) -> None:
    assert res.lost == 0, f"({res.name}) {res.lost} spans lost within the queue limit"
    assert res.outage_in_jaeger == res.outage_spans


# -- the collector cases ----------------------------------------------------------------------------------------


def fault_not_started(private: PrivateStack) -> Callable[[Workload, Timeline], None]:
    """(a): the collector is down when the runs begin and starts 3 s later."""
    def fault(wl: Workload, tl: Timeline) -> None:
        tl.at["down"] = tl.t0
        tl.sleep_until(3.0)
        private.up()
        tl.mark("up")
        _wait_recovered(tl, private)
    return fault


def fault_killed(private: PrivateStack) -> Callable[[Workload, Timeline], None]:
    """(b): SIGKILL between two batches, at least 15 s away and until the runs have ended more spans than the
    SDK's queue holds: longer than the SDK's queue and timeout hold."""
    def fault(wl: Workload, tl: Timeline) -> None:
        tl.sleep_until(2.0)
        # between two batches: the runs hold, the SDK and the collector pass on what they have, then SIGKILL
        wl.pause.set()
        wait_for(wl.paused.is_set, "the runs to hold", timeout=30, interval=0.01)
        wait_for(lambda: (lambda c: c["accepted"] == c["sent_jaeger"] and c["queue_jaeger"] == 0)(
            collector_counts(private.collector_telemetry)), "the collector to pass on what it accepted", timeout=10,
            interval=0.05)
        private.stop("collector", signal.SIGKILL)
        tl.mark("down")
        blocks_at_kill = len(wl.blocks)
        wl.pause.clear()
        tl.sleep_until(17.0)
        # a loaded machine runs the workload below its pace: stay down until the runs have ended more spans
        # than the SDK's queue holds, so the overflow happens whatever the machine's speed
        overflow = int(QUEUE * 1.3 / (BLOCK * SPANS_PER_RUN)) + 1
        wait_for(lambda: len(wl.blocks) - blocks_at_kill >= overflow, "the runs to overflow the SDK's queue",
                 timeout=300, interval=0.1)
        private.up()
        tl.mark("up")
        _wait_recovered(tl, private)
    return fault


def fault_restarted(private: PrivateStack) -> Callable[[Workload, Timeline], None]:
    """(c): SIGTERM (it passes on what it holds, then exits), started again at once."""
    def fault(wl: Workload, tl: Timeline) -> None:
        tl.sleep_until(2.0)
        tl.mark("down")
        private.stop("collector")
        private.up()
        tl.mark("up")
        _wait_recovered(tl, private)
    return fault


def test_a_collector_not_started_when_the_runs_begin(private, sdk_env, tmp_path):
    private.stop("collector")
    assert not healthy(private.collector_health)
    res = run_case("a: not started", private, fault_not_started(private), 1000, tmp_path)
    _nothing_lost(res)
    _never_waits(res)


def test_b_collector_killed_in_the_middle_of_the_runs(private, sdk_env, tmp_path, monkeypatch):
    # the SDK's default retry window, shorter than this outage: batches fail as well as overflow the queue
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", str(KILLED_EXPORT_TIMEOUT_S))
    res = run_case("b: killed", private, fault_killed(private), 2000, tmp_path)
    otlp = next(e for n, e in res.exporters.items() if n.startswith("otlp"))
    assert otlp["failed"] > 0 and otlp["dropped"] > 0, otlp     # both limits were reached, and counted
    _never_waits(res)


def test_c_collector_restarted_in_the_middle_of_the_runs(private, sdk_env, tmp_path):
    res = run_case("c: restarted", private, fault_restarted(private), 3000, tmp_path)
    _nothing_lost(res)
    _never_waits(res)


# -- Jaeger away behind a running collector ------------------------------------------------------------------------


def test_jaeger_outage_the_collector_retries_and_delivers_what_was_sent_meanwhile(private, sdk_env):
    from agentobs.domain.population import simulate
    from agentobs.telemetry import configure

    service = unique_service("outage-jaeger")
    assert healthy(private.jaeger_health) and healthy(private.collector_health)
    quiet_collector(private.collector_telemetry)
    private.stop("jaeger")
    assert not healthy(private.jaeger_health)
    before = collector_counts(private.collector_telemetry)
    sent = SentIds()
    tel = configure(otlp_endpoint=private.otlp_grpc, otlp_protocol="grpc", service_name=service, traces_out=None,
                    extra_exporters=[("sent", sent)])

    def trace_id(obs: list[Any]) -> str | None:
        ctx = obs[0].trace_context()
        return ctx.split("-")[1] if ctx else None
    records = simulate(300, seed=4000, observers=lambda: [tel.observer()], trace_id_of=trace_id)
    report = tel.shutdown()
    otlp = next(e for n, e in report.exporters.items() if n.startswith("otlp"))
    assert otlp["exported"] == report.ended == sent.count and otlp["lost"] == 0, otlp   # the collector took them all
    assert {t for r in records for t in r.trace_ids} == set(sent.traces)

    # the collector holds them and retries: nothing sent to Jaeger, nothing given up
    wait_for(lambda: (lambda c: c["accepted"] - before["accepted"] >= sent.count and c["queue_jaeger"] > 0)(
        collector_counts(private.collector_telemetry)), "the collector to queue the spans for Jaeger", timeout=15,
        interval=0.1)
    time.sleep(3.0)                                       # a few failed attempts
    during = collector_counts(private.collector_telemetry)
    assert during["sent_jaeger"] == before["sent_jaeger"] and during["failed_jaeger"] == before["failed_jaeger"], during
    t_start = time.monotonic()
    private.up()                                          # Jaeger again (its Badger storage kept)
    t_up = time.monotonic()
    held, seen_at, _ = wait_jaeger_traces(private.jaeger, sent.traces, timeout=90, interval=0.5)
    found = sum(len(v) for v in held.values())
    after = collector_counts(private.collector_telemetry)
    delta = {k: int(after[k] - before[k]) for k in after if k != "queue_jaeger"}
    print(f"\n(jaeger outage) spans sent {sent.count:,} while Jaeger was down | delivered to the collector "
          f"{otlp['exported']:,} | lost by the SDK {otlp['lost']} | queued in the collector "
          f"{int(during['queue_jaeger']):,} | in Jaeger after its restart {found:,}, all of them "
          f"{(seen_at - t_up) if seen_at else float('nan'):.1f}s after it was healthy ({t_up - t_start:.1f}s to start) "
          f"| collector: sent to Jaeger {delta['sent_jaeger']:,}, send failed {delta['failed_jaeger']}, "
          f"enqueue failed {delta['enqueue_failed_jaeger']}")
    assert seen_at is not None and all(held[t] == sent.traces[t] for t in sent.traces), (
        f"{found:,} of {sent.count:,} spans in Jaeger after its restart")
    assert delta["sent_jaeger"] == sent.count and delta["failed_jaeger"] == delta["enqueue_failed_jaeger"] == 0, delta
    assert after["queue_jaeger"] == 0


if __name__ == "__main__" and sys.argv[1:2] == ["--worker"]:
    worker_main(json.loads(sys.argv[2]))
