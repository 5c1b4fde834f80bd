"""Every transition of a run, as one keyword-only event type each, and the observer interface.

Events carry values, never the kernel's objects: numbers, names, ids, and small frozen snapshots (``Limits``,
``TokenUsage``, ``RunTotals``, ``Breach``) taken when the event is made, so an observer needs nothing but the
event and cannot change the run. Model replies, tool arguments and results are passed as the values the
kernel holds; an observer must not mutate them. ``at_ns`` is the clock's wall time (simulated or real).

The kernel emits these events; ``agentobs.telemetry.instrument`` emits the same ones for a loop that is not
ours; telemetry, recording, fault injection and tests consume them.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from .vocabulary import Effect, ReplyType, RunStatus, StopReason, UsageSource

_T = TypeVar("_T", bound=type)


def _fast_init(cls: _T) -> _T:
    """Gives a keyword-only, frozen, slotted dataclass a cheaper ``__init__``, with the same signature and defaults,
    and ``_make``, a function that takes the same arguments and returns the same instance as calling the class.

    The kernel makes dozens of events per run. The ``__init__`` that ``@dataclass(frozen=True)`` writes stores each
    field with ``object.__setattr__`` (to get past the class's own ``__setattr__``, which refuses); this one stores
    each field through its slot's descriptor, which also bypasses ``__setattr__``, at about half the cost. Nothing
    else changes: the instance is as frozen after ``__init__`` as before (assigning a field raises
    ``FrozenInstanceError``), and ``dataclasses.fields``, ``replace``, equality and pickling are the dataclass's own.
    ``_make`` does what calling the class does (``object.__new__``, then the same stores) without the class call's
    detour (it hands ``__init__`` its keywords as a dict); the kernel uses it through ``agentobs.kernel.events.maker``.
    """
    params: list[str] = []
    body: list[str] = []
    ns: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    for i, f in enumerate(dataclasses.fields(cls)):
        if not f.kw_only or not f.init or f.default_factory is not dataclasses.MISSING:
            raise TypeError(f"{cls.__name__}.{f.name}: _fast_init takes keyword-only fields with plain defaults")
        if f.default is dataclasses.MISSING:
            params.append(f.name)
        else:
            ns[f"_d{i}"] = f.default
            params.append(f"{f.name}=_d{i}")
        ns[f"_s{i}"] = vars(cls)[f.name].__set__          # the slot's member descriptor
        body.append(f"    _s{i}(self, {f.name})\n")
    signature, stores = ", ".join(params), "".join(body)
    src = (f"def __init__(self, *, {signature}):\n{stores}"
           f"def _make(*, {signature}):\n    self = _new(_cls)\n{stores}    return self\n")
    exec(src, ns)                                          # as dataclasses itself writes __init__
    init = ns["__init__"]
    init.__qualname__, init.__module__ = f"{cls.__qualname__}.__init__", cls.__module__
    init.__annotations__ = dict(vars(cls)["__init__"].__annotations__)
    setattr(cls, "__init__", init)  # noqa: B010  (mypy: no __init__ assignment on a type variable)
    make = ns["_make"]
    make.__qualname__, make.__module__ = f"{cls.__qualname__}._make", cls.__module__
    setattr(cls, "_make", staticmethod(make))  # noqa: B010
    return cls


# -- snapshots ----------------------------------------------------------------------------------------


@_fast_init
@dataclass(kw_only=True, frozen=True, slots=True)
class Limits:
    """The numeric limits of a run's budget (``agentobs.budget.<limit>``); ``max_usd`` None: no dollar limit."""
    max_steps: int
    max_tool_calls: int
    max_tokens: int
    max_output_tokens: int
    max_usd: float | None
    deadline_s: float
    max_repeat: int
    max_stalls: int
    max_plan_steps: int


@_fast_init
@dataclass(kw_only=True, frozen=True, slots=True)
class Breach:
    """A limit a run reached: the check that fired, what it allows, what was observed, and how the run stops.

    ``limit`` names the budget field (``max_steps``, ``max_tool_calls``, ``max_tokens``, ``max_usd``,
    ``deadline_s``, ``max_repeat``, ``max_stalls``, ``max_attempts``); for ``max_usd`` the observed value is
    the spent dollars plus the projected cost of the next call."""
    limit: str
    limit_value: float
    observed: float
    stop: StopReason


@_fast_init
@dataclass(kw_only=True, frozen=True, slots=True)
class TokenUsage:
    """The tokens of one model call. Cache and reasoning counts are parts of the input and output counts,
    present only when the provider reports them."""
    input_tokens: int
    output_tokens: int
    source: UsageSource
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    reasoning_output_tokens: int | None = None


@_fast_init
@dataclass(kw_only=True, frozen=True, slots=True)
class RunTotals:
    """The task's totals when a run segment ends (carried across resumes)."""
    steps: int
    tool_calls: int
    tokens: int
    cost_usd: float
    unpriced_calls: int
    elapsed_s: float              # active time: model and tool latency, never a wait for a person
    plan_steps: int
    open_plan_steps: int
    plan_version: int
    unknown_writes: int
    max_stalls: int               # the longest streak of steps without progress
    memory_notes: int


# -- events -------------------------------------------------------------------------------------------


@_fast_init
@dataclass(kw_only=True, frozen=True, slots=True)
class RunStarted:
    task_id: str
    agent_name: str
    conversation_id: str | None
    model: str
    provider: str
    resumed: bool                 # a suspended or crashed run continues
    step: int                     # steps taken before this segment
    elapsed_s: float              # active time before this segment
    limits: Limits | None
    plan_step_ids: tuple[str, ...]    # the plan in force, in order
    at_ns: int
    tokens: int = 0               # tokens spent before this segment
    cost_usd: float = 0.0         # dollars spent before this segment


@_fast_init
@dataclass(kw_only=True, frozen=True, slots=True)
class StepStarted:
    index: int
    at_ns: int


@_fast_init
@dataclass(kw_only=True, frozen=True, slots=True)
class ModelCalled:
    step: int
    model: str
    provider: str
    max_output_tokens: int
    timeout_s: float
    view: str                     # what the model is shown
    at_ns: int


@_fast_init
@dataclass(kw_only=True, frozen=True, slots=True)
class ModelReturned:
    step: int
    model: str
    provider: str
    response_model: str | None
    usage: TokenUsage
    reply_type: ReplyType | None      # None when the reply was unusable or the call failed
    finish_reason: str
    cost_usd: float | None            # None when the call could not be priced
    error: str | None                 # "timeout", "malformed_reply", an exception's class name...
    reply: Any
    at_ns: int


@_fast_init
@dataclass(kw_only=True, frozen=True, slots=True)
class PlanRejected:
    step: int
    problems: tuple[str, ...]
    at_ns: int


@_fast_init
@dataclass(kw_only=True, frozen=True, slots=True)
class PlanAccepted:
    step: int
    version: int
    steps: int
    plan_step_ids: tuple[str, ...]    # the plan in force after this one was accepted, in order
    at_ns: int


@_fast_init
@dataclass(kw_only=True, frozen=True, slots=True)
class FinalRefused:
    """A 'completed' final answer was refused because plan steps are still open."""
    step: int
    open_steps: tuple[str, ...]
    at_ns: int


@_fast_init
@dataclass(kw_only=True, frozen=True, slots=True)
class ToolCalled:
    step: int
    name: str
    args: Mapping[str, Any]
    key: str                      # stable per logical call: task id + plan step
    effect: Effect
    plan_step: str | None
    digest: str
    held: bool                    # held for approval, executed after the decision
    at_ns: int


@_fast_init
@dataclass(kw_only=True, frozen=True, slots=True)
class ToolRetry:
    step: int
    name: str
    attempt: int                  # the attempt that failed
    code: str
    backoff_s: float
    at_ns: int


@_fast_init
@dataclass(kw_only=True, frozen=True, slots=True)
class ToolReturned:
    step: int
    name: str
    key: str
    effect: Effect
    result: Mapping[str, Any]
    status: str                   # the result folded into one word (vocabulary.result_status)
    replayed: bool
    attempts: int
    at_ns: int


@_fast_init
@dataclass(kw_only=True, frozen=True, slots=True)
class GuardFired:
    breach: Breach
    at_ns: int


@_fast_init
@dataclass(kw_only=True, frozen=True, slots=True)
class ApprovalRequested:
    name: str
    digest: str
    key: str
    at_ns: int


@_fast_init
@dataclass(kw_only=True, frozen=True, slots=True)
class ApprovalDecided:
    name: str
    approved: bool
    by: str
    digest: str
    at_ns: int


@_fast_init
@dataclass(kw_only=True, frozen=True, slots=True)
class CheckpointSaving:
    version: int
    at_ns: int


@_fast_init
@dataclass(kw_only=True, frozen=True, slots=True)
class CheckpointSaved:
    version: int
    at_ns: int


@_fast_init
@dataclass(kw_only=True, frozen=True, slots=True)
class StepFinished:
    index: int
    progress: bool
    stalls: int
    outcome: str                  # "ok" or the stop reason that ended the run in this step
    at_ns: int


@_fast_init
@dataclass(kw_only=True, frozen=True, slots=True)
class RunFinished:
    task_id: str
    stop: StopReason
    status: RunStatus             # stopped or suspended
    outcome: str | None           # completed, cannot_complete, escalated (runs that ended done)
    totals: RunTotals
    at_ns: int


@_fast_init
@dataclass(kw_only=True, frozen=True, slots=True)
class RunAborted:
    """An exception escaped a begun run (a crash, an interrupt, a checkpoint conflict): no stop reason was
    reached; what survives is what the last checkpoint holds."""
    task_id: str
    error: str                    # the exception's class name
    totals: RunTotals             # as they were when the exception escaped
    at_ns: int


Event = (RunStarted | StepStarted | ModelCalled | ModelReturned | PlanRejected | PlanAccepted | FinalRefused
         | ToolCalled | ToolRetry | ToolReturned | GuardFired | ApprovalRequested | ApprovalDecided
         | CheckpointSaving | CheckpointSaved | StepFinished | RunFinished | RunAborted)


class Observer(Protocol):
    """Anything that listens to a run: it gets every event, in order. An exception it raises costs it that event
    and is logged; the run goes on (``SimulatedCrash``, which stands for the process dying, excepted)."""

    def notify(self, event: Event) -> None: ...
