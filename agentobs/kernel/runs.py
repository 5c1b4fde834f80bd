"""Which run is in progress here, and the guard of objects that serve one run at a time.

A ``Kernel`` keeps nothing about a run on itself: every ``run``, ``resume`` and ``recover`` (and their async
forms) makes its own run object, which holds the state, the checkpoint version and the lease, and makes it the
current run (a ``contextvars.ContextVar``) while the run's code executes. Threads have a context each, asyncio
tasks a copy each, and ``asyncio.to_thread`` carries the caller's into the worker thread, so a model or a tool
called by a run sees that run as current, whichever way it was called.

Some objects cannot serve two runs at once: a ``SimClock`` (one simulated time), a ``ScriptedModel`` or a
``FunctionModel`` (one script, one call count), a ``Recorder`` or a ``Replayer`` (one sequence of replies). Each
holds a ``OneRunAtATime``: the first run that uses it owns it until that run ends; another run using it in the
meantime gets ``ConcurrentUseError`` at that use, before anything the first run relies on is changed. Used by
one run after another, they behave as they always did.
"""
from __future__ import annotations

import threading
import weakref
from contextvars import ContextVar, Token
from typing import Protocol

from ..errors import ConcurrentUseError


class RunHandle(Protocol):
    """What the guard needs to know of a run: its task and whether it is still in progress."""
    task_id: str
    active: bool


_CURRENT: ContextVar[RunHandle | None] = ContextVar("agentobs_current_run", default=None)
_LOCK = threading.Lock()


def current_run() -> RunHandle | None:
    """The run in progress in this thread or task (None outside a kernel run)."""
    return _CURRENT.get()


def enter(run: RunHandle) -> Token[RunHandle | None]:
    """Makes ``run`` current; give the token back to ``leave`` in the same context when the run ends."""
    return _CURRENT.set(run)


def leave(token: Token[RunHandle | None]) -> None:
    _CURRENT.reset(token)


class OneRunAtATime:
    """The guard of an object that serves one run at a time (see the module's docstring)."""

    __slots__ = ("_owner", "hint", "what")

    def __init__(self, what: str, hint: str):
        self.what = what                   # "SimClock", "ScriptedModel 'scripted-model'"...
        self.hint = hint                   # what to do instead
        # the owning run, held weakly: a run holds its clock and model, which must not hold it back (no cycle)
        self._owner: weakref.ref[RunHandle] | None = None

    def claim(self) -> None:
        """Called at every use that changes the object: the current run owns it, or it raises."""
        run = _CURRENT.get()
        if run is None:
            return
        ref = self._owner
        if ref is not None and ref() is run:
            return
        with _LOCK:
            owner = self._owner() if self._owner is not None else None
            if owner is not None and owner is not run and owner.active:
                raise ConcurrentUseError(
                    f"{self.what} is used by the run of task {run.task_id!r} while the run of task {owner.task_id!r} "
                    f"is still using it: it serves one run at a time; {self.hint}")
            self._owner = weakref.ref(run)
