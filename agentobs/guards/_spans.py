"""How a guarded run is told on the framework's agent span, with the names our own runs use.

The guard writes the stop reason and the run's totals on the ``invoke_agent`` span (``agentobs.stop_reason``,
``agentobs.steps``, ``agentobs.tool_calls``, ``agentobs.tokens``, ``agentobs.cost_usd``, ``agentobs.elapsed_s``,
``agentobs.budget.<limit>``), a stop other than ``done`` also sets ERROR status with ``error.type`` = the
stop reason and an ``agentobs.guard.fired`` event: the analysis then reads the run exactly like one of ours.
Only a span that is an agent span is touched (by operation name or span name), never an unrelated parent.
Telemetry never breaks a run: every failure here is swallowed.
"""
from __future__ import annotations

import logging
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from .. import StopReason
from ..telemetry import semconv as sc
from ._accountant import Accountant

log = logging.getLogger("agentobs.guards")
_AGENT_SPAN_NAMES = ("invoke_agent", "agent run")     # GenAI conventions; Pydantic AI instrumentation v1-2


def is_agent_span(span: Any) -> bool:
    if span is None or not span.is_recording():
        return False
    attrs = getattr(span, "attributes", None) or {}
    if attrs.get(sc.OPERATION_NAME) == sc.OP_INVOKE_AGENT:
        return True
    name = getattr(span, "name", "") or ""
    return any(name == n or name.startswith(n + " ") for n in _AGENT_SPAN_NAMES)


def current_agent_span() -> Any:
    span = trace.get_current_span()
    return span if is_agent_span(span) else None


def mark(span: Any, acct: Accountant, stop: StopReason, *, error_type: str | None = None) -> None:
    """Writes the run's stop reason and totals on ``span`` (an agent span, or None: nothing to do)."""
    if span is None:
        return
    try:
        b = acct.budget
        attrs: dict[str, Any] = {
            sc.STOP_REASON: stop.value, sc.STATUS: "stopped", sc.STEPS: acct.steps, sc.TOOL_CALLS: acct.tool_calls,
            sc.TOKENS: acct.tokens, sc.COST_USD: float(acct.cost_usd), sc.ELAPSED_S: float(acct.elapsed),
            sc.UNPRICED_CALLS: acct.unpriced_calls, sc.MAX_STALLS: acct.max_stalls_seen,
        }
        for name, value in b.limits().items():
            if name in sc.BUDGET_LIMITS:
                attrs[sc.BUDGET_PREFIX + name] = float(value) if name in ("max_usd", "deadline_s") else int(value)
        span.set_attributes(attrs)
        if stop is not StopReason.DONE:
            if acct.stop is stop and acct.limit is not None:
                span.add_event(sc.EV_GUARD, {sc.GUARD_LIMIT: stop.value, sc.GUARD_LIMIT_VALUE: float(acct.limit),
                                             sc.GUARD_OBSERVED: float(acct.observed or 0.0)})
            span.set_attribute(sc.ERROR_TYPE, error_type or stop.value)
            span.set_status(Status(StatusCode.ERROR, stop.value))
    except Exception:
        log.debug("could not mark the agent span", exc_info=True)


def mark_aborted(span: Any, acct: Accountant, exc: BaseException) -> None:
    """An exception that is no stop reason ended the run (like the kernel's RunAborted)."""
    if span is None:
        return
    try:
        span.set_attributes({sc.STATUS: "aborted", sc.STEPS: acct.steps, sc.TOOL_CALLS: acct.tool_calls,
                             sc.TOKENS: acct.tokens, sc.COST_USD: float(acct.cost_usd),
                             sc.ELAPSED_S: float(acct.elapsed), sc.ERROR_TYPE: type(exc).__name__})
        span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
    except Exception:
        log.debug("could not mark the agent span", exc_info=True)
