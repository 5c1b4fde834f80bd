"""Fault injection: crash the 'process' at a boundary of the loop (for tests and demos)."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import SimulatedCrash
from . import events as ev

BOUNDARIES = {
    "before_model": ev.ModelCalled,
    "after_model": ev.ModelReturned,
    "before_tool": ev.ToolCalled,
    "after_tool": ev.ToolReturned,
    "before_checkpoint": ev.CheckpointSaving,
    "after_checkpoint": ev.CheckpointSaved,
}


@dataclass
class CrashAt:
    """Raises SimulatedCrash at the n-th event of a boundary kind (optionally only for one tool)."""
    boundary: str
    nth: int = 1
    tool: str | None = None
    fired: bool = False

    def __post_init__(self) -> None:
        if self.boundary not in BOUNDARIES:
            raise ValueError(f"unknown boundary {self.boundary!r}; choose one of {', '.join(BOUNDARIES)}")
        self._seen = 0

    def notify(self, event: ev.Event) -> None:
        if self.fired or not isinstance(event, BOUNDARIES[self.boundary]):
            return
        if self.tool is not None and getattr(event, "name", None) != self.tool:
            return
        self._seen += 1
        if self._seen == self.nth:
            self.fired = True
            raise SimulatedCrash(self.boundary)
