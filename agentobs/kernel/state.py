"""Typed task state. Only the kernel changes it, through the methods below.

The state is a value: ``to_json``/``from_json`` round-trip it exactly, with a schema
version, so a run can be suspended, checkpointed, copied to another process and resumed.
``signature()`` hashes what counts as progress: the facts and the plan-step statuses.
"""
from __future__ import annotations

import functools
import hashlib
import json
import math
import types
import typing
from collections.abc import Callable
from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any

from ..contract.digest import digest
from ..contract.events import RunTotals
from ..contract.jsontext import dumps
from ..contract.vocabulary import RunStatus, StopReason, status_of
from ..errors import CheckpointCorrupt

SCHEMA_VERSION = 2

PENDING, DONE, FAILED = "pending", "done", "failed"


@dataclass(kw_only=True)
class PlanStep:
    id: str
    tool: str
    depends_on: list[str] = field(default_factory=list)
    status: str = PENDING

    def view(self) -> dict[str, Any]:
        return {"id": self.id, "tool": self.tool, "depends_on": self.depends_on, "status": self.status}


@dataclass(frozen=True, kw_only=True)
class HeldCall:
    """A tool call waiting for a human decision."""
    name: str
    args: dict[str, Any]
    key: str
    plan_step: str | None
    digest: str


@dataclass(kw_only=True)
class TaskState:
    task_id: str
    user_id: str                      # set by the application, never by the model
    goal: str
    agent_name: str = "agent"
    conversation_id: str | None = None
    plan: list[PlanStep] = field(default_factory=list)
    plan_version: int = 0
    replan_requested: bool = False
    facts: dict[str, Any] = field(default_factory=dict)
    last_result: dict[str, Any] | None = None
    memory: list[str] = field(default_factory=list)   # notes read at start, shown as remembered context
    step: int = 0
    tool_calls: int = 0
    tokens: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    elapsed: float = 0.0
    seen: dict[str, int] = field(default_factory=dict)          # call fingerprint -> times proposed
    observations: list[str] = field(default_factory=list)      # fingerprints of distinct tool observations
    stalls: int = 0
    max_stalls_seen: int = 0
    status: str = "running"           # running | suspended | stopped | aborted (cancelled; never checkpointed)
    stop: str | None = None
    outcome: str | None = None
    answer: str | None = None
    pending: HeldCall | None = None
    unknown_writes: list[str] = field(default_factory=list)    # call keys whose outcome is unknown
    audit: list[dict[str, Any]] = field(default_factory=list)  # every call and result, apart from the view

    # -- progress ----------------------------------------------------------------------------

    def signature(self) -> str:
        """Hash of everything that counts as progress: facts and plan step statuses."""
        core = [self.facts, [(s.id, s.status) for s in self.plan]]
        return hashlib.sha256(dumps(core, sort_keys=True, default=str).encode()).hexdigest()[:12]

    def open_steps(self) -> list[str]:
        return [s.id for s in self.plan if s.status == PENDING]

    def plan_step(self, step_id: str | None) -> PlanStep | None:
        if step_id is None:
            return None
        return next((s for s in self.plan if s.id == step_id), None)

    def totals(self) -> RunTotals:
        """A snapshot of the task's totals, as events carry them."""
        return RunTotals(steps=self.step, tool_calls=self.tool_calls, tokens=self.tokens, cost_usd=self.cost_usd,
                         unpriced_calls=self.unpriced_calls, elapsed_s=self.elapsed, plan_steps=len(self.plan),
                         open_plan_steps=len(self.open_steps()), plan_version=self.plan_version,
                         unknown_writes=len(self.unknown_writes), max_stalls=self.max_stalls_seen,
                         memory_notes=len(self.memory))

    # -- transitions used by the kernel ------------------------------------------------------

    def begin(self) -> None:
        self.status, self.stop = RunStatus.RUNNING.value, None

    def finish(self, stop: StopReason, answer: str | None = None, outcome: str | None = None) -> None:
        self.stop = stop.value
        self.answer = answer
        self.outcome = outcome
        self.status = status_of(stop).value

    def set_plan(self, steps: list[PlanStep]) -> None:
        """Accepts a validated plan. A replan keeps the steps that already ran (done or failed)."""
        kept = [s for s in self.plan if s.status != PENDING]
        self.plan = kept + steps
        self.plan_version += 1
        self.replan_requested = False

    def charge_model(self, input_tokens: int, output_tokens: int, seconds: float, cost: float | None) -> None:
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.tokens += input_tokens + output_tokens
        self.elapsed = round(self.elapsed + seconds, 3)
        if cost is None:
            self.unpriced_calls += 1
        else:
            self.cost_usd = round(self.cost_usd + cost, 9)

    def charge_time(self, seconds: float) -> None:
        self.elapsed = round(self.elapsed + seconds, 3)

    def note_stall(self, progressed: bool) -> None:
        self.stalls = 0 if progressed else self.stalls + 1
        self.max_stalls_seen = max(self.max_stalls_seen, self.stalls)

    # -- serialization -----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["schema_version"] = SCHEMA_VERSION
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskState:
        """Builds a state from its dict form, checking every field's type; raises ``CheckpointCorrupt``."""
        if not isinstance(data, dict):
            raise CheckpointCorrupt(f"state must be a JSON object, not {_json_type(data)}")
        data = migrate(dict(data))
        data.pop("schema_version", None)
        problem = _problem(cls, data, "state") or _value_problem(data)
        if problem:
            raise CheckpointCorrupt(f"state does not match schema {SCHEMA_VERSION}: {problem}")
        plan = [PlanStep(**s) for s in data.pop("plan", [])]
        pending = data.pop("pending", None)
        state = cls(**data, plan=plan, pending=HeldCall(**pending) if pending is not None else None)
        try:
            state.to_json()
        except (RecursionError, ValueError):      # what could not be saved again is not loaded
            raise CheckpointCorrupt("state nests values too deeply to be saved again") from None
        return state

    @classmethod
    def from_json(cls, text: str) -> TaskState:
        try:
            data = json.loads(text)
        except (ValueError, TypeError, RecursionError) as exc:
            raise CheckpointCorrupt(f"state is not valid JSON: {exc}") from None
        return cls.from_dict(data)


# -- shape check of the JSON form: every field present when required, of its declared type ---------

_CLOSED = {(PlanStep, "status"): (PENDING, DONE, FAILED),
           (TaskState, "status"): (RunStatus.RUNNING.value, RunStatus.SUSPENDED.value, RunStatus.STOPPED.value,
                                   RunStatus.ABORTED.value),
           (TaskState, "stop"): (None, *(r.value for r in StopReason))}


def _json_type(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _problem(cls: type, data: Any, where: str) -> str | None:
    """What is wrong with ``data`` as the JSON form of dataclass ``cls`` (None: nothing)."""
    if not isinstance(data, dict):
        return f"{where} must be an object, not {_json_type(data)}"
    hints = _hints(cls)
    names = {f.name for f in fields(cls)}
    unknown = sorted(k for k in data if k not in names)
    if unknown:
        return f"{where} has unknown field {_short(unknown[0])}"
    for f in fields(cls):
        if f.name not in data:
            if f.default is MISSING and f.default_factory is MISSING:
                return f"{where} lacks field {f.name!r}"
            continue
        value = data[f.name]
        problem = _type_problem(value, hints[f.name], f"{where}.{f.name}")
        if problem is None and (cls, f.name) in _CLOSED and value not in _CLOSED[cls, f.name]:
            problem = f"{where}.{f.name} is {_short(value)}, not one of {', '.join(map(str, _CLOSED[cls, f.name]))}"
        if problem:
            return problem
    return None


def _type_problem(value: Any, tp: Any, where: str) -> str | None:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return None
    if origin in (typing.Union, types.UnionType):
        problems = [_type_problem(value, a, where) for a in args]
        return None if None in problems else next(p for p in problems if p)
    if tp is type(None):
        return None if value is None else f"{where} must be null, not {_json_type(value)}"
    if isinstance(tp, type) and hasattr(tp, "__dataclass_fields__"):
        return _problem(tp, value, where)
    if origin is list:
        if not isinstance(value, list):
            return f"{where} must be an array, not {_json_type(value)}"
        return next((p for i, v in enumerate(value) if (p := _type_problem(v, args[0], f"{where}[{i}]"))), None)
    if origin is dict:
        if not isinstance(value, dict):
            return f"{where} must be an object, not {_json_type(value)}"
        return next((p for k, v in value.items() if (p := _type_problem(v, args[1], f"{where}[{_short(k)}]"))), None)
    ok = (int, float) if tp is float else tp           # JSON does not tell 1 from 1.0
    if (isinstance(value, bool) and tp is not bool) or not isinstance(value, ok):
        expected = {str: "a string", int: "an integer", float: "a number", bool: "a boolean"}.get(tp, tp.__name__)
        return f"{where} must be {expected}, not {_json_type(value)}"
    return None


_COUNTS = ("plan_version", "step", "tool_calls", "tokens", "input_tokens", "output_tokens", "unpriced_calls", "stalls",
           "max_stalls_seen")
_AMOUNTS = ("cost_usd", "elapsed")


def _value_problem(data: dict[str, Any]) -> str | None:
    """What is wrong with the values of a well-typed state: a negative count, a cost or time that is negative or
    not finite (each would lift a budget), a held call whose digest is not its own (a decision for it would
    approve other arguments)."""
    for name in _COUNTS:
        if data.get(name, 0) < 0:
            return f"state.{name} is {data[name]}: a count cannot be negative"
    for name in _AMOUNTS:
        value = data.get(name, 0.0)
        if not (math.isfinite(value) and value >= 0):
            return f"state.{name} is {value!r}: it must be a finite number, not negative"
    bad = next((k for k, v in data.get("seen", {}).items() if v < 0), None)
    if bad is not None:
        return f"state.seen[{_short(bad)}] is negative"
    status, stop = data.get("status", RunStatus.RUNNING.value), data.get("stop")
    if (stop is None) != (status == RunStatus.RUNNING.value) or (
            stop is not None and status != status_of(StopReason(stop)).value):
        return f"state.status {_short(status)} does not go with state.stop {_short(stop)}"
    held = data.get("pending")
    if held is not None and digest(held["name"], held["args"]) != held["digest"]:
        return "state.pending.digest is not the digest of the held call's name and arguments"
    return None


# Named migrations: version N -> N+1. Add one when the schema changes; never edit an old one.


def _v1_drop_trace_links(data: dict[str, Any]) -> dict[str, Any]:
    """1 -> 2: the state no longer holds the trace context of earlier segments (``links``): linking a resumed
    run to the suspended one is telemetry's business (agentobs.telemetry.links), not the task's."""
    data.pop("links", None)
    return data


MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _v1_drop_trace_links}


def migrate(data: dict[str, Any]) -> dict[str, Any]:
    """Brings a state dict of an older schema to ``SCHEMA_VERSION`` through the named migrations."""
    version = data.get("schema_version", SCHEMA_VERSION)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise CheckpointCorrupt(f"state schema_version {_short(version)} is not a version (this agentobs reads "
                                f"1..{SCHEMA_VERSION})")
    if version > SCHEMA_VERSION:
        raise CheckpointCorrupt(f"state schema_version {version} was written by a newer agentobs (this one reads "
                                f"1..{SCHEMA_VERSION}): upgrade agentobs to load it")
    while version < SCHEMA_VERSION:
        if version not in MIGRATIONS:
            raise CheckpointCorrupt(f"no migration from state schema_version {version} to {version + 1}")
        data = MIGRATIONS[version](data)
        version += 1
    data["schema_version"] = version
    return data
