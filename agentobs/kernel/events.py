"""Every transition of the loop, as one event type each, delivered to one observer point.

Telemetry, recording, fault injection and tests all plug in here; the loop knows nothing
about what listens. Events carry references to the objects involved (view, reply,
arguments, results) so an observer can decide what to record; they must not be mutated.
``at_ns`` is the clock's wall time (simulated or real).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Iterable, Protocol

log = logging.getLogger("agentobs.kernel")


@dataclass(frozen=True, slots=True)
class RunStarted:
    state: Any            # TaskState (read only)
    budget: Any           # Budget
    model: str
    provider: str
    resumed: bool
    at_ns: int


@dataclass(frozen=True, slots=True)
class StepStarted:
    index: int
    at_ns: int


@dataclass(frozen=True, slots=True)
class ModelCalled:
    step: int
    model: str
    provider: str
    max_output_tokens: int
    timeout_s: float
    view: str
    at_ns: int


@dataclass(frozen=True, slots=True)
class ModelReturned:
    step: int
    model: str
    provider: str
    response_model: str | None
    input_tokens: int
    output_tokens: int
    usage_source: str            # "estimated" | "reported"
    reply_type: str | None       # "plan" | "tool" | "final" | None when malformed or failed
    finish_reason: str
    cost_usd: float | None       # None when the model could not be priced
    error: str | None            # "timeout", "malformed_reply", an exception type...
    reply: Any
    at_ns: int


@dataclass(frozen=True, slots=True)
class PlanRejected:
    step: int
    problems: list[str]
    at_ns: int


@dataclass(frozen=True, slots=True)
class PlanAccepted:
    step: int
    version: int
    steps: int
    at_ns: int


@dataclass(frozen=True, slots=True)
class FinalRefused:
    """A 'completed' final answer was refused because plan steps are still open."""
    step: int
    open_steps: list[str]
    at_ns: int


@dataclass(frozen=True, slots=True)
class ToolCalled:
    step: int
    name: str
    args: dict[str, Any]
    key: str
    effect: str
    plan_step: str | None
    digest: str
    held: bool
    at_ns: int


@dataclass(frozen=True, slots=True)
class ToolRetry:
    step: int
    name: str
    attempt: int
    code: str
    backoff_s: float
    at_ns: int


@dataclass(frozen=True, slots=True)
class ToolReturned:
    step: int
    name: str
    key: str
    effect: str
    result: dict[str, Any]
    status: str
    replayed: bool
    attempts: int
    at_ns: int


@dataclass(frozen=True, slots=True)
class GuardFired:
    limit: str               # the stop reason it produces (max_steps, repeated_call, ...)
    limit_value: float
    observed: float
    at_ns: int


@dataclass(frozen=True, slots=True)
class ApprovalRequested:
    name: str
    digest: str
    key: str
    at_ns: int


@dataclass(frozen=True, slots=True)
class ApprovalDecided:
    name: str
    approved: bool
    by: str
    digest: str
    at_ns: int


@dataclass(frozen=True, slots=True)
class CheckpointSaving:
    version: int
    at_ns: int


@dataclass(frozen=True, slots=True)
class CheckpointSaved:
    version: int
    at_ns: int


@dataclass(frozen=True, slots=True)
class StepFinished:
    index: int
    progress: bool
    stalls: int
    outcome: str             # "ok" or the stop reason that ended the run in this step
    at_ns: int


@dataclass(frozen=True, slots=True)
class RunFinished:
    state: Any
    at_ns: int


@dataclass(frozen=True, slots=True)
class RunAborted:
    """An exception escaped a begun run (a crash, an interrupt, a checkpoint conflict): no stop reason was
    reached; what survives is what the last checkpoint holds."""
    state: Any            # TaskState as it was when the exception escaped (read only)
    error: str            # the exception's class name
    at_ns: int


Event = (RunStarted | StepStarted | ModelCalled | ModelReturned | PlanRejected | PlanAccepted | FinalRefused
         | ToolCalled
         | ToolRetry | ToolReturned | GuardFired | ApprovalRequested | ApprovalDecided | CheckpointSaving
         | CheckpointSaved | StepFinished | RunFinished | RunAborted)


class Observer(Protocol):
    def notify(self, event: Event) -> None: ...


class Observers:
    """Fans events out to several observers. An observer that raises loses its event, never the run."""

    def __init__(self, observers: Iterable[Observer]):
        self.observers = [o for o in observers if o is not None]
        self.failures = 0

    def notify(self, event: Event) -> None:
        for o in self.observers:
            try:
                o.notify(event)
            except Exception:  # noqa: BLE001 - an observer must never break a run
                self.failures += 1
                if self.failures == 1:
                    log.exception("observer %r failed; the run continues", o)


class EventLog:
    """Keeps every event in a list (handy in tests and notebooks)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def notify(self, event: Event) -> None:
        self.events.append(event)

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]
