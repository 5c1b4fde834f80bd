"""Test doubles that ship with the library, for testing your own models, tools and limits without a provider.

    SimClock        simulated time: runs are deterministic and as fast as the code
                    (``SimClock(per_run=True)``: a simulated time of its own for every run of a shared kernel)
    ScriptedModel   replies from a list, in order
    FunctionModel   replies from a function of (view, call number)
    Recorder        wraps a model and keeps its responses; Replayer plays them back
    CrashAt         fault injection: the "process" dies at a boundary of the loop (counted per run)
    EventLog        an observer that keeps every event
    AwaitingModel   an async model (``apropose``): awaits some real time, then answers as the model it wraps
    AwaitingTools   an async toolbox (``ainvoke``): awaits some real time, then answers as the toolbox it wraps
    SleepingModel   a sync model that blocks (``time.sleep``) before answering: a provider SDK without async
    SleepingTools   a sync toolbox that blocks before answering

The awaiting and sleeping doubles add real latency, for concurrency tests and benchmarks; what they wrap keeps
its declared latencies, so under a simulated clock a run's figures do not depend on them. A ``SimClock``,
``ScriptedModel``, ``FunctionModel``, ``Recorder``, ``Replayer`` serve one run at a time
(``agentobs.errors.ConcurrentUseError`` at a second concurrent use). The seeds' support desk (a fake store
backend, stand-in policies, scenarios) is in ``agentobs.domain``.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from .kernel.clock import SimClock
from .kernel.events import EventLog
from .kernel.faults import BOUNDARIES, CrashAt
from .kernel.models import FunctionModel, ModelRequest, ModelResponse, ScriptedModel
from .kernel.replay import Recorder, Replayer
from .kernel.tools import ToolInvocation, ToolResponse, ToolSpec

__all__ = ["AwaitingModel", "AwaitingTools", "BOUNDARIES", "CrashAt", "EventLog", "FunctionModel", "Recorder",
           "Replayer", "ScriptedModel", "SimClock", "SleepingModel", "SleepingTools"]

Delay = float | Callable[[], float]


def _seconds(delay: Delay) -> float:
    return delay() if callable(delay) else delay


class AwaitingModel:
    """An async model: awaits ``delay_s`` (seconds, or a function giving them per call) with ``asyncio.sleep``,
    then answers as ``inner.propose`` would. ``inner`` is called in the event loop: a stand-in, not a client."""

    def __init__(self, inner: Any, delay_s: Delay = 0.0):
        self.inner, self.delay_s = inner, delay_s
        self.name, self.provider = inner.name, inner.provider

    async def apropose(self, request: ModelRequest) -> ModelResponse:
        await asyncio.sleep(_seconds(self.delay_s))
        resp: ModelResponse = self.inner.propose(request)
        return resp


class AwaitingTools:
    """An async toolbox: awaits ``delay_s`` with ``asyncio.sleep``, then answers as ``inner.invoke`` would."""

    def __init__(self, inner: Any, delay_s: Delay = 0.0):
        self.inner, self.delay_s = inner, delay_s

    def spec(self, name: str) -> ToolSpec | None:
        spec: ToolSpec | None = self.inner.spec(name)
        return spec

    async def ainvoke(self, call: ToolInvocation) -> ToolResponse:
        await asyncio.sleep(_seconds(self.delay_s))
        resp: ToolResponse = self.inner.invoke(call)
        return resp


class SleepingModel:
    """A sync model that blocks its thread for ``delay_s`` (``time.sleep``), then answers as ``inner`` would: a
    provider SDK without async. The async kernel runs it in a worker thread."""

    blocking = True

    def __init__(self, inner: Any, delay_s: Delay = 0.0):
        self.inner, self.delay_s = inner, delay_s
        self.name, self.provider = inner.name, inner.provider

    def propose(self, request: ModelRequest) -> ModelResponse:
        time.sleep(_seconds(self.delay_s))
        resp: ModelResponse = self.inner.propose(request)
        return resp


class SleepingTools:
    """A sync toolbox that blocks its thread for ``delay_s``, then answers as ``inner`` would."""

    blocking = True

    def __init__(self, inner: Any, delay_s: Delay = 0.0):
        self.inner, self.delay_s = inner, delay_s

    def spec(self, name: str) -> ToolSpec | None:
        spec: ToolSpec | None = self.inner.spec(name)
        return spec

    def invoke(self, call: ToolInvocation) -> ToolResponse:
        time.sleep(_seconds(self.delay_s))
        resp: ToolResponse = self.inner.invoke(call)
        return resp
