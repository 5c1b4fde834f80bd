"""Fault injection: crash the 'process' at a boundary of the loop (for tests and demos).

A ``CrashAt`` counts the boundary's events per run: given to a kernel shared by concurrent runs, it crashes each
of them at its own n-th event.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

from ..errors import SimulatedCrash
from . import events as ev
from .runs import current_run

BOUNDARIES = {
    "before_model": ev.ModelCalled,
    "after_model": ev.ModelReturned,
    "before_tool": ev.ToolCalled,
    "after_tool": ev.ToolReturned,
    "before_checkpoint": ev.CheckpointSaving,
    "after_checkpoint": ev.CheckpointSaved,
}


@dataclass(kw_only=True)
class CrashAt:
    """Raises SimulatedCrash at the n-th event of a boundary kind (optionally only for one tool)."""
    boundary: str
    nth: int = 1
    tool: str | None = None
    fired: bool = False

    def __post_init__(self) -> None:
        if self.boundary not in BOUNDARIES:
            raise ValueError(f"unknown boundary {self.boundary!r}; choose one of {', '.join(BOUNDARIES)}")
        self._seen = 0                                                  # events outside a kernel run
        self._seen_by_run: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()

    def notify(self, event: ev.Event) -> None:
        if not isinstance(event, BOUNDARIES[self.boundary]):
            return
        if self.tool is not None and getattr(event, "name", None) != self.tool:
            return
        run = current_run()
        if run is None:
            self._seen = seen = self._seen + 1
        else:
            self._seen_by_run[run] = seen = self._seen_by_run.get(run, 0) + 1
        if seen == self.nth:
            self.fired = True
            raise SimulatedCrash(self.boundary)
