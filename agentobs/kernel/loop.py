"""The kernel: configuration, and the entry points that run a task, synchronously or under asyncio.

A ``Kernel`` holds what every run shares (the model, the tools, the budget, the clock, prices, observers, the
checkpoint store, the approver, the memory) and nothing about any one run: each entry point makes a run of its own
(``agentobs.kernel.run``), so one kernel serves any number of concurrent runs, in threads or asyncio tasks. The
loop is written once; ``run``/``resume``/``recover`` drive it directly, ``arun``/``aresume``/``arecover``
drive it under asyncio, awaiting async models and tools and running sync ones in worker threads
(``agentobs.kernel.calls``).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..contract.events import Limits
from ..contract.pricing import Prices
from ..contract.retry import RetryPolicy
from ..errors import CheckpointNotFound, ConfigError
from . import events as ev
from .approval import Approver, Decision
from .budget import Budget
from .calls import AsyncCalls, SyncCalls, drive
from .checkpoint import Checkpoint, CheckpointStore
from .clock import SimClock
from .models import Model
from .run import TaskRun
from .state import TaskState
from .tools import FactPolicy, Toolbox


class Kernel:
    """Runs tasks under a budget. Configuration lives here; run state lives in TaskState and in each run.

    ``clock``: a ``RealClock`` for real models; by default simulated time, a clock of its own for every run
    (``SimClock(per_run=True)``). A ``SimClock`` given here serves one run at a time.
    """

    def __init__(self, model: Model | Any, tools: Toolbox | Any, *, budget: Budget | None = None, clock: Any = None,
                 facts: FactPolicy | None = None, prices: Prices | None = None, price_as: str | None = None,
                 observers: Iterable[ev.Observer] = (), checkpoints: CheckpointStore | None = None,
                 approver: Approver | None = None, memory: Any = None):
        self.model, self.tools = model, tools
        self.budget = budget or Budget()
        self.clock = clock or SimClock(per_run=True)
        self._for_run: Callable[[], Any] | None = getattr(self.clock, "for_run", None)
        self.facts = facts or FactPolicy()
        self.prices = prices if prices is not None else Prices()
        self.price_model: str = price_as or str(getattr(model, "name", "unknown"))
        self.price_provider = None if price_as else getattr(model, "provider", None)
        # tokens a model sends with every request besides the view (a provider adapter's system prompt and tool
        # schemas), so that the token and dollar checks see the whole next input
        self.overhead_tokens = int(getattr(model, "request_overhead_tokens", 0) or 0)
        self.checkpoints, self.approver, self.memory = checkpoints, approver, memory
        obs = ev.Observers(observers)
        self.observers = obs
        self.emitter: Callable[[ev.Event], None] | None = obs.notify if obs.observers else None
        # shared by every run: values derived from the configuration, built when first needed
        self._retry: RetryPolicy | None = None
        self._limits: Limits | None = None
        self._sync: SyncCalls | None = None
        self._async: AsyncCalls | None = None
        if self.budget.max_usd is not None and not self.prices.can_price(self.price_model, self.price_provider):
            raise ConfigError(f"max_usd is set but model {self.price_model!r} has no price: pass "
                              "prices=Prices({'<model>': (input_usd_per_mtok, output_usd_per_mtok)}) or price_as=")

    # -- public entry points ---------------------------------------------------------------------

    def run(self, state: TaskState) -> TaskState:
        """Runs a new task to a stop reason. Mutates and returns ``state``."""
        run = self._run_sync()
        return drive(run.guarded(run.start, state))

    def resume(self, snapshot: TaskState | Checkpoint | str, decision: Decision | None = None) -> TaskState:
        """Continues a suspended run from a saved state: applies the decision to the held call first.

        Given a ``Checkpoint`` or a task id, the task's lease is taken and the resume is claimed in the
        store before anything runs, so of two workers resuming one snapshot only one proceeds.
        """
        run = self._run_sync()
        return drive(run.guarded(run.resume, snapshot, decision))

    def recover(self, task_id: str) -> TaskState:
        """After a crash: continue a task from its last checkpoint without repeating a side effect."""
        run = self._run_sync()
        return drive(run.guarded(run.recover, task_id))

    def run_or_recover(self, state: TaskState) -> TaskState:
        """Runs a task, or recovers it when a checkpoint for its id already exists."""
        if self.checkpoints is not None:
            try:
                return self.recover(state.task_id)
            except CheckpointNotFound:
                pass
        return self.run(state)

    # -- the same, under asyncio -----------------------------------------------------------------

    async def arun(self, state: TaskState) -> TaskState:
        """``run`` under asyncio: awaits an async model and tools (``apropose``, ``ainvoke``), runs sync ones in a
        worker thread, and puts the time left before the deadline on every awaited call (real clock). Cancelling
        the task ends the run with ``cancelled``; ``arecover`` continues it from its last checkpoint."""
        run = self._run_async()
        return await run.guarded(run.start, state)

    async def aresume(self, snapshot: TaskState | Checkpoint | str, decision: Decision | None = None) -> TaskState:
        """``resume`` under asyncio."""
        run = self._run_async()
        return await run.guarded(run.resume, snapshot, decision)

    async def arecover(self, task_id: str) -> TaskState:
        """``recover`` under asyncio."""
        run = self._run_async()
        return await run.guarded(run.recover, task_id)

    async def arun_or_recover(self, state: TaskState) -> TaskState:
        """``run_or_recover`` under asyncio."""
        if self.checkpoints is not None:
            try:
                return await self.arecover(state.task_id)
            except CheckpointNotFound:
                pass
        return await self.arun(state)

    # -- what the runs share -----------------------------------------------------------------------

    def _run_sync(self) -> TaskRun:
        if self._sync is None:
            self._sync = SyncCalls(self.model, self.tools)
        return TaskRun(self, self._sync)

    def _run_async(self) -> TaskRun:
        if self._async is None:
            self._async = AsyncCalls(self.model, self.tools)
        return TaskRun(self, self._async)

    def clock_for_run(self) -> Any:
        """The clock of a new run: the kernel's own, or one per run (``SimClock(per_run=True)``)."""
        return self._for_run() if self._for_run is not None else self.clock

    def retry_policy(self) -> RetryPolicy:
        if self._retry is None:
            self._retry = self.budget.retry_policy()
        return self._retry

    def budget_limits(self) -> Limits:
        if self._limits is None:
            self._limits = self.budget.limits()
        return self._limits
