"""The seeds' scenarios on our support desk: seed 000 A-H and seed 004's guards and recovery.

A ``Spec`` says how to build one run (model, budget, backend, pricing, approver); ``run``
executes it and returns the final state with the backend, whose ledger shows what really
happened. ``crash_and_recover`` kills the run at a boundary and recovers it from the last
checkpoint with a fresh kernel, as a restarted worker would. ``shared_kernel`` builds one kernel for many
concurrent runs of a spec: a simulated clock per run and a desk per task.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import SimulatedCrash
from ..kernel.approval import Approver, Decision
from ..kernel.budget import Budget
from ..kernel.checkpoint import CheckpointStore, SQLiteCheckpointStore
from ..kernel.clock import SimClock
from ..kernel.events import Observer
from ..kernel.faults import CrashAt
from ..kernel.loop import Kernel
from ..kernel.state import TaskState
from . import policies
from .support import FACTS, SupportDesk, SupportDesks

GOAL = "refund the damaged item on order ord_1001"
AGENT = "support-agent"
PRICE_AS = "gpt-4.1-mini"        # stand-in replies are priced as this real model


@dataclass(frozen=True)
class Spec:
    name: str
    model: Callable[[], Any] = policies.SupportPolicy
    budget: Budget = field(default_factory=Budget)
    desk: Callable[[], SupportDesk] = SupportDesk
    price_as: str = PRICE_AS
    approver: Approver | None = None


@dataclass
class Result:
    name: str
    state: TaskState
    desk: SupportDesk
    segments: list[TaskState] = field(default_factory=list)  # earlier states (suspended or crashed segments)

    def row(self) -> dict[str, Any]:
        st = self.state
        return {"scenario": self.name, "stop": st.stop, "status": st.status, "outcome": st.outcome, "steps": st.step,
                "tool_calls": st.tool_calls, "tokens": st.tokens, "cost_usd": round(st.cost_usd, 6),
                "elapsed_s": st.elapsed, "effects": [list(e) for e in self.desk.effects]}


def new_state(task_id: str = "t1", user: str = "cu_ana", goal: str = GOAL) -> TaskState:
    return TaskState(task_id=task_id, user_id=user, goal=goal, agent_name=AGENT)


def kernel_for(spec: Spec, desk: SupportDesk | SupportDesks, *, observers: Iterable[Observer] = (),
               clock: SimClock | None = None, checkpoints: CheckpointStore | None = None, **kw: Any) -> Kernel:
    return Kernel(spec.model(), desk, budget=spec.budget, clock=clock or SimClock(), facts=FACTS,
                  price_as=spec.price_as, observers=observers, checkpoints=checkpoints, approver=spec.approver, **kw)


def run(spec: Spec, observers: Iterable[Observer] = (), epoch_ns: int | None = None, *,
        checkpoints: CheckpointStore | None = None, task_id: str = "t1") -> Result:
    desk = spec.desk()
    st = kernel_for(spec, desk, observers=observers, clock=SimClock(epoch_ns), checkpoints=checkpoints
                    ).run(new_state(task_id))
    return Result(spec.name, st, desk)


def shared_kernel(spec: Spec, *, observers: Iterable[Observer] = (), epoch_ns: int | None = None,
                  checkpoints: CheckpointStore | None = None, model: Any = None) -> tuple[Kernel, SupportDesks]:
    """One kernel for any number of concurrent runs of ``spec`` (their task ids must differ): every run gets a
    simulated clock of its own at ``epoch_ns`` and a desk of its own (``SupportDesks``). The spec's model must
    keep nothing between calls (``SupportPolicy`` does; the ``FunctionModel`` stand-ins count their calls and
    raise ``ConcurrentUseError`` when shared); ``model`` replaces it (e.g. an async wrapper of it)."""
    desks = SupportDesks(spec.desk)
    return Kernel(model if model is not None else spec.model(), desks, budget=spec.budget,
                  clock=SimClock(epoch_ns, per_run=True), facts=FACTS, price_as=spec.price_as, observers=observers,
                  checkpoints=checkpoints, approver=spec.approver), desks


def go(model: Any, budget: Budget | None = None, desk: SupportDesk | None = None, *, task_id: str = "t1",
       observers: Iterable[Observer] = (), clock: SimClock | None = None, **kernel_kw: Any
       ) -> tuple[TaskState, SupportDesk, Kernel]:
    """Runs one task with a given model instance (a shortcut for tests and notebooks)."""
    desk = desk or SupportDesk()
    kernel = Kernel(model, desk, budget=budget or Budget(), clock=clock or SimClock(), facts=FACTS,
                    price_as=kernel_kw.pop("price_as", PRICE_AS), observers=observers, **kernel_kw)
    return kernel.run(new_state(task_id)), desk, kernel


def crash_and_recover(spec: Spec, boundary: str, nth: int = 1, *, tool: str | None = None,
                      observers: Iterable[Observer] = (), epoch_ns: int | None = None,
                      task_id: str = "t1") -> Result:
    """Crash at the nth ``boundary`` event, then recover from the last checkpoint with a fresh kernel."""
    desk = spec.desk()
    lease_clock = SimClock(epoch_ns)
    store = SQLiteCheckpointStore(":memory:", clock=lease_clock)
    crash = CrashAt(boundary=boundary, nth=nth, tool=tool)
    segments = []
    try:
        st = kernel_for(spec, desk, observers=[*observers, crash], clock=SimClock(epoch_ns),
                        checkpoints=store).run(new_state(task_id))
    except SimulatedCrash:
        lease_clock.sleep(store.lease_ttl + 1)       # the dead worker's lease runs out before the restart
        if store.exists(task_id):
            segments.append(store.load(task_id).state)
        st = kernel_for(spec, desk, observers=observers, clock=SimClock(epoch_ns),
                        checkpoints=store).run_or_recover(new_state(task_id))
    if not crash.fired:
        raise ValueError(f"{spec.name}: the run never reached {boundary} #{nth}")
    return Result(spec.name, st, desk, segments)


def _deny(held: Any) -> Decision:
    return Decision.deny(held, "human:maya")


def _approve(held: Any) -> Decision:
    return Decision.approve(held, "human:maya")


# -- seed 000 ---------------------------------------------------------------------------------

SEED000_SPECS = [
    Spec("A normal run"),
    Spec("B same call repeated", policies.same_call),
    Spec("C new ids every step", policies.new_ids),
    Spec("D large results", policies.search_loop, Budget(max_stalls=10, max_tool_calls=20, max_steps=20)),
    Spec("E slow model calls", lambda: policies.SupportPolicy(latency=6.0)),
    Spec("F step cap too low", budget=Budget(max_steps=3)),
    Spec("G refund needs approval", lambda: policies.SupportPolicy("ord_1004", 8000)),
    Spec("H write times out", desk=lambda: SupportDesk({"issue_refund": 40.0})),
]

# -- seed 004, on our support desk ---------------------------------------------------------------

SEED004_SPECS = [
    Spec("happy_path", budget=Budget(progress="state_or_observation")),
    Spec("max_steps", budget=Budget(max_steps=2)),
    Spec("no_progress", policies.stuck_searcher,
         Budget(progress="state_or_observation", max_tool_calls=20, max_tokens=20_000)),
    Spec("repeated_action", policies.looper),
    # priced as in seed 004: gemini-3.5-flash, $1.50 input / $9.00 output per million tokens
    Spec("budget_usd", budget=Budget(max_usd=0.004), price_as="gemini-3.5-flash"),
    Spec("approval_denied", lambda: policies.SupportPolicy("ord_1004", 8000), approver=_deny),
    Spec("tool_down_replan", desk=lambda: SupportDesk(flaky={"get_order": 10})),
    Spec("crash_resume"),
]
APPROVED = Spec("approval_granted", lambda: policies.SupportPolicy("ord_1004", 8000), approver=_approve)


def _runner(spec: Spec) -> Callable[..., Result]:
    """``runner(observers=(), epoch_ns=None, task_id="t1")``: the scenario, on a kernel and a desk of its own."""
    if spec.name == "crash_resume":
        return lambda observers=(), epoch_ns=None, task_id="t1": crash_and_recover(
            spec, "after_tool", tool="issue_refund", observers=observers, epoch_ns=epoch_ns, task_id=task_id)
    return lambda observers=(), epoch_ns=None, task_id="t1": run(spec, observers, epoch_ns, task_id=task_id)


SEED000: dict[str, Callable[..., Result]] = {s.name: _runner(s) for s in SEED000_SPECS}
SEED004: dict[str, Callable[..., Result]] = {s.name: _runner(s) for s in SEED004_SPECS}


def approve_and_resume(observers: Iterable[Observer] = (), epoch_ns: int | None = None, *,
                       approve: bool = True, twice: bool = False) -> Result:
    """Scenario G, then a reviewer's decision on exactly the held call, then resume from the saved JSON."""
    spec = SEED000_SPECS[6]
    first = run(spec, observers, epoch_ns)
    saved = first.state.to_json()
    results = []
    for _ in range(2 if twice else 1):
        st = TaskState.from_json(saved)
        decision = (Decision.approve if approve else Decision.deny)(st.pending, "human:maya")  # type: ignore[arg-type]
        results.append(kernel_for(spec, first.desk, observers=observers, clock=SimClock(epoch_ns)).resume(st, decision))
    return Result("G approved and resumed" if approve else "G denied and resumed", results[-1], first.desk,
                  [first.state, *results[:-1]])
