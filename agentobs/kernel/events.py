"""The loop's one observer point: the events it emits (defined in ``agentobs.contract.events``) fanned out to
every observer, and a list that keeps them.

Telemetry, recording, fault injection and tests all plug in here; the loop knows nothing about what
listens. An observer that raises loses that event, never the run (``SimulatedCrash`` excepted: it stands
for the process dying).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import ParamSpec, TypeVar, cast

from ..contract.events import (
    ApprovalDecided,
    ApprovalRequested,
    CheckpointSaved,
    CheckpointSaving,
    Event,
    FinalRefused,
    GuardFired,
    ModelCalled,
    ModelReturned,
    Observer,
    PlanAccepted,
    PlanRejected,
    RunAborted,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
    ToolCalled,
    ToolRetry,
    ToolReturned,
)

__all__ = [
    "ApprovalDecided", "ApprovalRequested", "CheckpointSaved", "CheckpointSaving", "Event", "EventLog", "FinalRefused",
    "GuardFired", "ModelCalled", "ModelReturned", "Observer", "Observers", "PlanAccepted", "PlanRejected", "maker",
    "RunAborted", "RunFinished", "RunStarted", "StepFinished", "StepStarted", "ToolCalled", "ToolRetry",
    "ToolReturned",
]

log = logging.getLogger("agentobs.kernel")

E = TypeVar("E")
P = ParamSpec("P")


def maker(cls: Callable[P, E]) -> Callable[P, E]:
    """The function that makes an event (or snapshot) of type ``cls`` as calling ``cls`` does: the same keyword
    arguments (checked as the class's), the same frozen instance, a little cheaper (see
    ``agentobs.contract.events._fast_init``); the kernel makes dozens of events per run."""
    return cast(Callable[P, E], getattr(cls, "_make"))  # noqa: B009


class Observers:
    """Fans events out to several observers. An observer that raises loses its event, never the run."""

    def __init__(self, observers: Iterable[Observer | None]):
        self.observers: list[Observer] = [o for o in observers if o is not None]
        self.failures = 0

    def notify(self, event: Event) -> None:
        for o in self.observers:
            try:
                o.notify(event)
            except Exception:  # an observer must never break a run
                self.failures += 1
                if self.failures == 1:
                    log.exception("observer %r failed; the run continues", o)


class EventLog:
    """Keeps every event in a list (handy in tests and notebooks)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def notify(self, event: Event) -> None:
        self.events.append(event)

    def of(self, kind: type[E]) -> list[E]:
        return [e for e in self.events if isinstance(e, kind)]
