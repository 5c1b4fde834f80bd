"""agentobs: bounded, observable and explainable agent runs on OpenTelemetry.

The public surface is re-exported here, imported on first use (PEP 562), so that ``import agentobs.analysis``
does not load the kernel and ``agentobs --help`` starts at once. ``agentobs.kernel``, ``agentobs.telemetry``,
``agentobs.analysis`` and ``agentobs.contract`` hold the parts; ``agentobs.testing`` the test doubles.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import (
    AgentobsError,
    ApprovalError,
    CheckpointConflict,
    CheckpointCorrupt,
    CheckpointError,
    CheckpointLeased,
    CheckpointNotFound,
    ConcurrentUseError,
    ConfigError,
    InputError,
    ReplayError,
    SimulatedCrash,
)

if TYPE_CHECKING:
    from .contract.events import Observer
    from .contract.pricing import Prices
    from .contract.vocabulary import StopReason
    from .kernel.approval import Decision
    from .kernel.budget import Budget
    from .kernel.checkpoint import Checkpoint, SQLiteCheckpointStore
    from .kernel.clock import RealClock, SimClock
    from .kernel.closing import closing_message
    from .kernel.events import EventLog
    from .kernel.faults import CrashAt
    from .kernel.loop import Kernel
    from .kernel.memory import MemoryStore
    from .kernel.models import FunctionModel, Model, ModelRequest, ModelResponse, ScriptedModel
    from .kernel.plan import validate_plan
    from .kernel.replay import Recorder, Replayer
    from .kernel.state import HeldCall, PlanStep, TaskState
    from .kernel.stops import ROUTES
    from .kernel.tools import FactPolicy, Toolbox, ToolInvocation, ToolResponse, ToolSpec

__version__ = "0.1.0"

__all__ = [
    "AgentobsError", "ApprovalError", "Budget", "Checkpoint", "CheckpointConflict", "CheckpointCorrupt",
    "CheckpointError", "CheckpointLeased", "CheckpointNotFound", "ConcurrentUseError", "ConfigError", "CrashAt",
    "Decision", "EventLog", "FactPolicy", "FunctionModel", "HeldCall", "InputError", "Kernel", "MemoryStore", "Model",
    "ModelRequest", "ModelResponse", "Observer", "PlanStep", "Prices", "ROUTES", "RealClock", "Recorder",
    "ReplayError", "Replayer", "SQLiteCheckpointStore", "ScriptedModel", "SimClock", "SimulatedCrash", "StopReason",
    "TaskState", "ToolInvocation", "ToolResponse", "ToolSpec", "Toolbox", "closing_message", "validate_plan",
]

# where each lazily imported public name lives
_LAZY: dict[str, str] = {
    "Observer": "agentobs.contract.events", "Prices": "agentobs.contract.pricing",
    "StopReason": "agentobs.contract.vocabulary", "Decision": "agentobs.kernel.approval",
    "Budget": "agentobs.kernel.budget", "Checkpoint": "agentobs.kernel.checkpoint",
    "SQLiteCheckpointStore": "agentobs.kernel.checkpoint", "RealClock": "agentobs.kernel.clock",
    "SimClock": "agentobs.kernel.clock", "closing_message": "agentobs.kernel.closing",
    "EventLog": "agentobs.kernel.events", "CrashAt": "agentobs.kernel.faults", "Kernel": "agentobs.kernel.loop",
    "MemoryStore": "agentobs.kernel.memory", "FunctionModel": "agentobs.kernel.models",
    "Model": "agentobs.kernel.models", "ModelRequest": "agentobs.kernel.models",
    "ModelResponse": "agentobs.kernel.models", "ScriptedModel": "agentobs.kernel.models",
    "validate_plan": "agentobs.kernel.plan", "Recorder": "agentobs.kernel.replay",
    "Replayer": "agentobs.kernel.replay", "HeldCall": "agentobs.kernel.state", "PlanStep": "agentobs.kernel.state",
    "TaskState": "agentobs.kernel.state", "ROUTES": "agentobs.kernel.stops", "FactPolicy": "agentobs.kernel.tools",
    "ToolInvocation": "agentobs.kernel.tools", "ToolResponse": "agentobs.kernel.tools",
    "ToolSpec": "agentobs.kernel.tools", "Toolbox": "agentobs.kernel.tools",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agentobs' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value              # the next lookup is a plain global
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
