"""How a run reaches the outside world: the same loop, driven synchronously or by asyncio.

The loop (``agentobs.kernel.run``) is written once, as coroutines, and awaits every call that leaves the
process through one of these two objects:

``SyncCalls``   calls the model, the tools, the clock and the checkpoint store directly; nothing it does ever
                suspends, so ``Kernel.run`` drives the loop to its end with a single ``send`` and no event loop. (The
                loop calls its model and tools in place, without a coroutine: the sync kernel's hot path.)
``AsyncCalls``  awaits ``apropose``/``ainvoke`` (or an ``async def`` ``propose``/``invoke``), with the time left
                as a real timeout when the clock is real; runs a sync model or tool in a worker thread
                (``asyncio.to_thread``, which carries the run's context: its OpenTelemetry span and the current
                run) unless it says it never blocks (``blocking = False``); runs checkpoint store calls in a
                worker thread; awaits an async approver.

Observers and the memory store are always called in place: they must be quick.
"""
from __future__ import annotations

import contextlib
import inspect
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from ..errors import ConfigError
from .approval import Decision
from .models import ModelRequest, ModelResponse
from .state import HeldCall
from .tools import ToolInvocation, ToolResponse

T = TypeVar("T")


def drive(coro: Coroutine[Any, Any, T]) -> T:
    """Runs a coroutine that never suspends (the loop over ``SyncCalls``) to its result, without an event loop."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("the sync kernel was asked to wait for something: a bug in agentobs")  # pragma: no cover


_IS_ASYNC: dict[Any, bool] = {}      # function -> whether it is ``async def`` (kernels are built per request)


def _is_async(fn: Any) -> bool:
    key = getattr(fn, "__func__", fn)
    try:
        return _IS_ASYNC[key]
    except (KeyError, TypeError):
        answer = inspect.iscoroutinefunction(fn)
        with contextlib.suppress(TypeError):
            if len(_IS_ASYNC) < 4096:
                _IS_ASYNC[key] = answer
        return answer


def _sync(obj: Any, name: str) -> Callable[..., Any] | None:
    fn = getattr(obj, name, None)
    return None if fn is None or _is_async(fn) else fn


def _async(obj: Any, aname: str, name: str) -> Callable[..., Awaitable[Any]] | None:
    for attr in (aname, name):
        fn = getattr(obj, attr, None)
        if fn is not None and _is_async(fn):
            return fn
    return None


def _in_place_or_thread(obj: Any, fn: Callable[..., T]) -> Callable[..., Awaitable[T]]:
    if getattr(obj, "blocking", True) is False:
        async def in_place(*args: Any) -> T:
            return fn(*args)
        return in_place

    async def in_thread(*args: Any) -> T:
        import asyncio
        return await asyncio.to_thread(fn, *args)
    return in_thread


async def propose_async(model: Any, request: ModelRequest) -> ModelResponse:
    """One model call the way the async kernel makes it (for wrappers such as ``Recorder``)."""
    fn = _async(model, "apropose", "propose")
    if fn is not None:
        return await fn(request)
    return await _in_place_or_thread(model, model.propose)(request)


class SyncCalls:
    """The world, called directly (``Kernel.run``, ``resume``, ``recover``)."""

    def __init__(self, model: Any, tools: Any):
        propose, invoke = _sync(model, "propose"), _sync(tools, "invoke")
        if propose is None:
            raise ConfigError(f"model {getattr(model, 'name', model)!r} is async (async def apropose/propose): "
                              "run it with await kernel.arun(...), aresume or arecover")
        if invoke is None:
            raise ConfigError("the toolbox is async (async def ainvoke/invoke): run it with await kernel.arun(...), "
                              "aresume or arecover")
        self.propose: Callable[[ModelRequest], ModelResponse] = propose
        self.invoke: Callable[[ToolInvocation], ToolResponse] = invoke

    async def sleep(self, clock: Any, seconds: float) -> None:
        clock.sleep(seconds)

    async def store(self, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
        return fn(*args, **kw)

    async def store_through(self, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
        return fn(*args, **kw)

    async def claim(self, acquire: Callable[[str], T], release: Callable[[T], None], task_id: str) -> T:
        return acquire(task_id)

    async def approve(self, approver: Callable[[HeldCall], Any], call: HeldCall) -> Decision | None:
        decision = approver(call)
        if inspect.isawaitable(decision):
            if inspect.iscoroutine(decision):
                decision.close()
            raise ConfigError("the approver is async: run the kernel with await kernel.arun(...), aresume or arecover")
        return decision


class AsyncCalls:
    """The world, awaited (``Kernel.arun``, ``aresume``, ``arecover``). Imports asyncio (the sync kernel never
    loads it)."""

    def __init__(self, model: Any, tools: Any):
        import asyncio
        self._aio = asyncio
        self._propose = _async(model, "apropose", "propose") or _in_place_or_thread(model, model.propose)
        self._invoke = _async(tools, "ainvoke", "invoke") or _in_place_or_thread(tools, tools.invoke)

    async def model(self, request: ModelRequest, timeout: float | None) -> ModelResponse:
        if timeout is None:
            return await self._propose(request)
        async with self._aio.timeout(timeout):
            return await self._propose(request)

    async def tool(self, call: ToolInvocation, timeout: float | None) -> ToolResponse:
        if timeout is None:
            return await self._invoke(call)
        async with self._aio.timeout(timeout):
            return await self._invoke(call)

    async def sleep(self, clock: Any, seconds: float) -> None:
        asleep = getattr(clock, "asleep", None)
        if asleep is not None:
            await asleep(seconds)
        else:
            await self._aio.to_thread(clock.sleep, seconds)

    async def store(self, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
        return await self._aio.to_thread(fn, *args, **kw)

    async def store_through(self, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
        """``store``, but a cancellation that comes meanwhile waits for the worker thread's call to end before it
        goes on to the caller: the caller then knows whether the call happened (its own record of it) instead of
        leaving a thread to finish it unseen. The run's final checkpoint is saved this way."""
        call = self._aio.ensure_future(self._aio.to_thread(fn, *args, **kw))
        try:
            return await self._aio.shield(call)
        except self._aio.CancelledError:
            with contextlib.suppress(BaseException):     # its own failure: the cancellation is what goes on
                await call
            raise

    async def claim(self, acquire: Callable[[str], T], release: Callable[[T], None], task_id: str) -> T:
        """``acquire(task_id)`` in a worker thread, like ``store``; but when the caller is cancelled meanwhile, what
        the thread still acquires is released, never left held (a cancelled run left its task leased until the
        lease expired, with no checkpoint to recover: every retry was refused for a minute)."""
        import threading
        lock = threading.Lock()
        held: list[T] = []                  # what the thread acquired and handed over
        abandoned = False

        def work() -> T:
            got = acquire(task_id)
            with lock:
                if not abandoned:
                    held.append(got)
                    return got
            release(got)                    # the caller is gone: the thread gives it back
            return got

        try:
            return await self._aio.to_thread(work)
        except self._aio.CancelledError:
            with lock:
                abandoned = True
                given = held[:]
            for lease in given:             # handed over just as the cancellation came
                await self.store(release, lease)
            raise

    async def approve(self, approver: Callable[[HeldCall], Any], call: HeldCall) -> Decision | None:
        decision = approver(call)
        if inspect.isawaitable(decision):
            decision = await decision
        return decision
