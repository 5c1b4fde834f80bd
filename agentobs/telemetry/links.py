"""Linking a resumed run to the segment it continues, and the W3C traceparent text of a span context.

A resumed run (after an approval, or a recovery) is a new trace whose ``invoke_agent`` span links to the
suspended (or cancelled) segment's. Which segment that was is telemetry's own state, not the task's:
``ResumeLinks`` keeps the last suspended segment of each task id, shared by every observer of one ``Telemetry``
(a resume in the same process finds it), bounded so that a long-lived process does not grow. A new task started
under an id (not a resume) clears it, so a task id used again never links to the task that had it before. A resume
in another process passes the traceparent explicitly (``Telemetry.observer(resumed_from=...)``), which it got from
``OTelObserver.trace_context()`` when the run suspended.

The traceparent text is written and read by the OpenTelemetry SDK's W3C propagator, here and nowhere else.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

_PROPAGATOR = TraceContextTextMapPropagator()
_HEADER = "traceparent"


def format_traceparent(ctx: SpanContext) -> str | None:
    """The W3C traceparent of ``ctx`` (``00-<trace id>-<span id>-<flags>``), or None for an invalid context."""
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier, context=trace.set_span_in_context(NonRecordingSpan(ctx)))
    return carrier.get(_HEADER)


def parse_traceparent(text: str) -> SpanContext | None:
    """The span context a W3C traceparent names (remote), or None when the text is not a valid traceparent."""
    ctx = trace.get_current_span(_PROPAGATOR.extract({_HEADER: text})).get_span_context()
    return ctx if ctx.is_valid else None


class ResumeLinks:
    """The span context of the last suspended segment of each task, for the next segment to link to."""

    def __init__(self, capacity: int = 10_000):
        self.capacity = capacity
        self._by_task: OrderedDict[str, SpanContext] = OrderedDict()
        self._lock = threading.Lock()

    def suspended(self, task_id: str, ctx: SpanContext) -> None:
        """A segment of ``task_id`` suspended: its resume links to ``ctx``."""
        with self._lock:
            self._by_task[task_id] = ctx
            self._by_task.move_to_end(task_id)
            while len(self._by_task) > self.capacity:
                self._by_task.popitem(last=False)

    def previous(self, task_id: str) -> SpanContext | None:
        """The last suspended segment of ``task_id`` this process saw, if any."""
        with self._lock:
            return self._by_task.get(task_id)

    def started(self, task_id: str) -> None:
        """A new task under ``task_id`` began (not a resume): an earlier task of that id is not continued."""
        with self._lock:
            self._by_task.pop(task_id, None)
