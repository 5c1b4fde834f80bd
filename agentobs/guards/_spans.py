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
from opentelemetry.trace import Span, Status, StatusCode

from ..contract import semconv as sc
from ..contract.vocabulary import RunStatus, StopReason, status_of
from ._accountant import Accountant

log = logging.getLogger("agentobs.guards")
_AGENT_SPAN_NAMES = ("invoke_agent", "agent run")     # GenAI conventions; Pydantic AI instrumentation v1-2


def is_agent_span(span: Span | None) -> bool:
    if span is None or not span.is_recording():
        return False
    attrs = getattr(span, "attributes", None) or {}      # SDK spans only: the API's Span has no getter
    if attrs.get(sc.OPERATION_NAME) == sc.OP_INVOKE_AGENT:
        return True
    name = getattr(span, "name", "") or ""
    return any(name == n or name.startswith(n + " ") for n in _AGENT_SPAN_NAMES)


def current_agent_span() -> Span | None:
    span = trace.get_current_span()
    return span if is_agent_span(span) else None


def budget_attributes(acct: Accountant) -> dict[str, float | int]:
    """``agentobs.budget.<limit>`` for every limit in force, typed as the contract says."""
    limits, out = acct.budget.limits(), {}
    for name in sc.BUDGET_LIMITS:
        value = getattr(limits, name)
        if value is not None:
            key = sc.BUDGET_PREFIX + name
            out[key] = float(value) if sc.ATTRIBUTE_TYPES[key] == "double" else int(value)
    return out


def _totals(acct: Accountant) -> dict[str, Any]:
    return {sc.STEPS: acct.steps, sc.TOOL_CALLS: acct.tool_calls, sc.TOKENS: acct.tokens,
            sc.COST_USD: float(acct.cost_usd), sc.ELAPSED_S: float(acct.elapsed)}


def mark(span: Span | None, acct: Accountant, stop: StopReason) -> None:
    """Writes the run's stop reason and totals on ``span`` (an agent span, or None: nothing to do)."""
    if span is None:
        return
    try:
        span.set_attributes({sc.STOP_REASON: stop.value, sc.STATUS: status_of(stop).value, **_totals(acct),
                             sc.UNPRICED_CALLS: acct.unpriced_calls, sc.MAX_STALLS: acct.max_stalls_seen,
                             **budget_attributes(acct)})
        if stop is not StopReason.DONE:
            breach = acct.breach
            if breach is not None and breach.stop is stop:
                span.add_event(sc.EV_GUARD, {sc.GUARD_LIMIT: stop.value,
                                             sc.GUARD_LIMIT_VALUE: float(breach.limit_value),
                                             sc.GUARD_OBSERVED: float(breach.observed)})
            span.set_attribute(sc.ERROR_TYPE, stop.value)
            span.set_status(Status(StatusCode.ERROR, stop.value))
    except Exception:  # telemetry never breaks a run
        log.debug("could not mark the agent span", exc_info=True)


def mark_aborted(span: Span | None, acct: Accountant, exc: BaseException) -> None:
    """An exception that is no stop reason ended the run (like the kernel's RunAborted)."""
    if span is None:
        return
    try:
        span.set_attributes({sc.STATUS: RunStatus.ABORTED.value, **_totals(acct), sc.ERROR_TYPE: type(exc).__name__})
        span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
    except Exception:  # telemetry never breaks a run
        log.debug("could not mark the agent span", exc_info=True)
