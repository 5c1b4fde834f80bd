"""Typed task state. Only the kernel changes it, through the methods below.

The state is a value: ``to_json``/``from_json`` round-trip it exactly, with a schema
version, so a run can be suspended, checkpointed, copied to another process and resumed.
``signature()`` hashes what counts as progress: the facts and the plan-step statuses.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import CheckpointCorrupt
from .stops import SUSPENDING, StopReason

SCHEMA_VERSION = 1

PENDING, DONE, FAILED = "pending", "done", "failed"


@dataclass
class PlanStep:
    id: str
    tool: str
    depends_on: list[str] = field(default_factory=list)
    status: str = PENDING

    def view(self) -> dict[str, Any]:
        return {"id": self.id, "tool": self.tool, "depends_on": self.depends_on, "status": self.status}


@dataclass
class HeldCall:
    """A tool call waiting for a human decision."""
    name: str
    args: dict[str, Any]
    key: str
    plan_step: str | None
    digest: str


@dataclass
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
    status: str = "running"           # running | suspended | stopped
    stop: str | None = None
    outcome: str | None = None
    answer: str | None = None
    pending: HeldCall | None = None
    unknown_writes: list[str] = field(default_factory=list)    # call keys whose outcome is unknown
    audit: list[dict[str, Any]] = field(default_factory=list)  # every call and result, apart from the view
    links: list[str] = field(default_factory=list)             # trace contexts of earlier segments (traceparent)

    # -- progress ----------------------------------------------------------------------------

    def signature(self) -> str:
        """Hash of everything that counts as progress: facts and plan step statuses."""
        core = [self.facts, [(s.id, s.status) for s in self.plan]]
        return hashlib.sha256(json.dumps(core, sort_keys=True, default=str).encode()).hexdigest()[:12]

    def open_steps(self) -> list[str]:
        return [s.id for s in self.plan if s.status == PENDING]

    def plan_step(self, step_id: str | None) -> PlanStep | None:
        if step_id is None:
            return None
        return next((s for s in self.plan if s.id == step_id), None)

    # -- transitions used by the kernel ------------------------------------------------------

    def begin(self) -> None:
        self.status, self.stop = "running", None

    def finish(self, stop: StopReason, answer: str | None = None, outcome: str | None = None) -> None:
        self.stop = stop.value
        self.answer = answer
        self.outcome = outcome
        self.status = "suspended" if stop in SUSPENDING else "stopped"

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
        data = migrate(dict(data))
        data.pop("schema_version", None)
        try:
            plan = [PlanStep(**s) for s in data.pop("plan", [])]
            pending = data.pop("pending", None)
            return cls(**data, plan=plan, pending=HeldCall(**pending) if pending else None)
        except TypeError as exc:
            raise CheckpointCorrupt(f"state does not match schema {SCHEMA_VERSION}: {exc}") from None

    @classmethod
    def from_json(cls, text: str) -> TaskState:
        try:
            data = json.loads(text)
        except (ValueError, TypeError) as exc:
            raise CheckpointCorrupt(f"state is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise CheckpointCorrupt("state JSON must be an object")
        return cls.from_dict(data)


# Named migrations: version N -> N+1. Add one when the schema changes; never edit an old one.
MIGRATIONS: dict[int, Any] = {}


def migrate(data: dict[str, Any]) -> dict[str, Any]:
    version = data.get("schema_version", SCHEMA_VERSION)
    if not isinstance(version, int) or version > SCHEMA_VERSION or version < 1:
        raise CheckpointCorrupt(f"unsupported state schema_version {version!r} (this agentobs reads 1..{SCHEMA_VERSION})")
    while version < SCHEMA_VERSION:
        data = MIGRATIONS[version](data)
        version += 1
    data["schema_version"] = version
    return data
