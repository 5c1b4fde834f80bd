"""Getting spans to the exporters: a batch processor whose full queue holds the run back for a bounded time, and
the counts of what was delivered, failed, dropped or is still queued.

The OpenTelemetry SDK's ``BatchSpanProcessor`` drops a span when its queue is full, at once: a burst of runs that
ends spans faster than one exporter thread sends them loses spans even to a collector that answers every request.
``BoundedWaitSpanProcessor`` puts a gate in front of it: a span that finds the queue full makes the thread that
ended it wait for room, at most ``wait_s``, and only while the exporter is healthy. A healthy exporter frees a
batch of room each time it starts sending one, so a burst runs at the exporter's pace and loses nothing. An
exporter that is down or slower than the bound does not hold the run back: after one wait that ran out (at once,
when the last export failed or the one in progress began more than ``wait_s`` ago), spans that find the queue
full are dropped without waiting until an export succeeds within the bound, or succeeds and the queue has drained to
half its size. A run waits at most ``wait_s`` per outage, and not at all once the exporter has reported a failure.

The gate admits a span only when the number of spans handed to the SDK's queue and not yet handed to the
exporter is below the queue's size, so the SDK's own queue never overflows: every drop is the gate's, counted.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

log = logging.getLogger("agentobs.telemetry")


class _Gate:
    """Room in one queue: ``admit`` before a span is queued, ``export_began`` when spans leave it for the exporter,
    ``export_ended`` with the outcome."""

    def __init__(self, capacity: int, wait_s: float):
        self.capacity, self.wait_s = capacity, wait_s
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)     # the fast path takes the plain lock (C), not the condition
        self._exporting = threading.local()        # set in the exporter's own thread while it exports
        self.pending = 0                           # queued, not yet handed to the exporter
        self.dropped = 0
        self.waits = 0                             # spans that waited for room
        self.waited_s = 0.0
        self.longest_wait_s = 0.0
        self._export_began: float | None = None    # monotonic start of the export in progress
        self._shedding = False                     # a wait ran out: drop at once until the exporter recovers
        self._last_ok = True                       # the last export that finished succeeded
        self._closed = False

    def admit(self) -> bool:
        """True: queue the span (room was counted for it). False: it is dropped (counted)."""
        with self._lock:
            if self._closed:
                return True                        # the processor is shut down: it refuses the span itself
            if self.pending < self.capacity:
                self.pending += 1
                return True
            if self.wait_s <= 0 or getattr(self._exporting, "active", False):
                return self._drop()
            if self._shedding or not self._last_ok:
                self._shedding = True               # the exporter is failing: waiting would only slow the run
                return self._drop()
            admitted = self._wait()
        if not admitted:                           # (logged outside the lock: a handler may end spans itself)
            log.warning("span export cannot keep up (no room in the queue within %.1f s): spans are dropped, and "
                        "counted, until the exporter keeps up again", self.wait_s)
        return admitted

    def _wait(self) -> bool:
        """Called holding the lock: waits for room until the bound after the export in progress began."""
        began = time.monotonic()
        deadline = (self._export_began if self._export_began is not None else began) + self.wait_s
        while self.pending >= self.capacity and not self._closed:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._shedding = True
                self._account(began)
                return self._drop()
            self._cond.wait(remaining)
        self._account(began)
        if not self._closed:
            self.pending += 1
        return True

    def _account(self, began: float) -> None:
        waited = time.monotonic() - began
        self.waits += 1
        self.waited_s += waited
        self.longest_wait_s = max(self.longest_wait_s, waited)

    def _drop(self) -> bool:
        self.dropped += 1
        return False

    def export_began(self, n: int) -> None:
        """``n`` spans left the queue for the exporter (in the thread that exports them)."""
        self._exporting.active = True
        with self._cond:
            self.pending = max(0, self.pending - n)
            self._export_began = time.monotonic()
            self._recovered()
            self._cond.notify_all()

    def export_ended(self, ok: bool) -> None:
        self._exporting.active = False
        with self._cond:
            quick = self._export_began is not None and time.monotonic() - self._export_began < self.wait_s
            self._export_began = None
            self._last_ok = ok
            self._recovered(quick=quick)

    def _recovered(self, *, quick: bool = False) -> None:
        """Waiting resumes once an export succeeds within the bound (the exporter is healthy again), or succeeds and
        the queue has drained to half (an exporter slower than the bound, once the burst is over)."""
        if self._shedding and self._last_ok and (quick or self.pending <= self.capacity // 2):
            self._shedding = False

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()


class CountingExporter(SpanExporter):
    """Wraps an exporter and counts spans delivered and spans that failed; never raises."""

    def __init__(self, inner: SpanExporter, name: str, gate: _Gate | None = None):
        self.inner, self.name = inner, name
        self.gate = gate
        self.exported = 0
        self.failed = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self.gate is not None:
            self.gate.export_began(len(spans))     # they have left the queue: room for as many
        result = SpanExportResult.FAILURE
        try:
            result = self.inner.export(spans)
        except Exception:
            log.warning("exporter %s raised; %d spans lost", self.name, len(spans), exc_info=True)
        finally:
            if self.gate is not None:
                self.gate.export_ended(result is SpanExportResult.SUCCESS)
        if result is SpanExportResult.SUCCESS:
            self.exported += len(spans)
        else:
            self.failed += len(spans)
        return result

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        try:
            self.inner.shutdown()
        except Exception:
            log.warning("exporter %s failed to shut down", self.name, exc_info=True)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        try:
            return self.inner.force_flush(timeout_millis)
        except Exception:
            return False


class BoundedWaitSpanProcessor(SpanProcessor):
    """The SDK's ``BatchSpanProcessor`` behind a gate: a span that finds the queue full waits for room up to
    ``wait_s`` in the thread that ended it (see the module's docstring), then is dropped and counted.
    ``wait_s=0`` is the SDK's own policy: drop at once. ``exporter`` is the processor's ``CountingExporter``."""

    def __init__(self, exporter: SpanExporter, *, name: str, max_queue_size: int = 2048, wait_s: float = 2.0,
                 max_export_batch_size: int = 512, schedule_delay_millis: float | None = None):
        self.gate = _Gate(max_queue_size, wait_s)
        self.exporter = CountingExporter(exporter, name, self.gate)
        # a batch of at most half the queue: the exporter is woken (a batch is ready) before the queue is full
        batch = max(1, min(max_export_batch_size, max_queue_size // 2))
        self._batch = BatchSpanProcessor(self.exporter, max_queue_size=max_queue_size, max_export_batch_size=batch,
                                         schedule_delay_millis=schedule_delay_millis)

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        if not (span.context and span.context.trace_flags.sampled):
            return                                   # the batch processor ignores it: no room to count
        if self.gate.admit():
            self._batch.on_end(span)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self._batch.force_flush(timeout_millis)

    def shutdown(self) -> None:
        self.gate.close()
        self._batch.shutdown()

    def counts(self, ended: int, *, final: bool) -> dict[str, int]:
        """What became of the ``ended`` spans: exported, failed to export, dropped (never reached the exporter),
        queued (in the queue or being sent; after shutdown, ``final``, what was not sent counts as dropped), lost
        (failed + dropped), and how long runs waited for room (``waited_ms``, ``longest_wait_ms``)."""
        e, g = self.exporter, self.gate
        unaccounted = max(0, ended - e.exported - e.failed)      # dropped, in the queue, or being sent
        dropped = unaccounted if final else min(g.dropped, unaccounted)
        queued = unaccounted - dropped
        return {"exported": e.exported, "failed": e.failed, "dropped": dropped, "queued": queued,
                "lost": e.failed + dropped, "waited_ms": round(g.waited_s * 1000),
                "longest_wait_ms": round(g.longest_wait_s * 1000)}


class EndCounter(SpanProcessor):
    """Counts the spans that ended (what every exporter should receive)."""

    def __init__(self) -> None:
        self.ended = 0

    def on_end(self, span: ReadableSpan) -> None:
        self.ended += 1


@dataclass(frozen=True, kw_only=True)
class ExportReport:
    """What happened to the spans of this process, per exporter: ``exported``, ``failed`` (the exporter gave up
    on them), ``dropped`` (they never reached the exporter: no room in the queue within the bounded wait, or still
    queued when shutdown's deadline passed), ``queued`` (still on their way; 0 after shutdown), ``lost`` (failed +
    dropped), ``waited_ms`` and ``longest_wait_ms`` (how long runs were held back waiting for room)."""
    ended: int
    exporters: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def lost(self) -> int:
        return max((e["lost"] for e in self.exporters.values()), default=0)

    @property
    def dropped(self) -> int:
        return max((e["dropped"] for e in self.exporters.values()), default=0)

    def lines(self) -> list[str]:
        """One line per exporter, drops and failures always stated (``0 dropped`` says nothing was lost)."""
        out = []
        for name, e in self.exporters.items():
            line = (f"{name}: {e['exported']} of {self.ended} spans exported, {e['lost']} lost ({e['dropped']} "
                    f"dropped, {e['failed']} failed to export)")
            if e.get("queued"):
                line += f", {e['queued']} queued"
            if e.get("waited_ms"):
                line += (f" (runs waited {e['waited_ms'] / 1000:.2f} s in all for room in the export queue, "
                         f"{e['longest_wait_ms'] / 1000:.2f} s at most)")
            out.append(line)
        return out
