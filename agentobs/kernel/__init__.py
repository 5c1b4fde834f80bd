"""The bounded agent kernel: state, budgets, plans, guards, approval, checkpoints, replay, memory.

It imports no OpenTelemetry: it emits events (``agentobs.contract.events``) to the observers it is given.
One ``Kernel`` serves any number of concurrent runs (``run`` in threads, ``arun`` in asyncio tasks): what a run
needs is kept by the run (``agentobs.kernel.run``), never by the kernel.
"""
from ..contract.events import Observer
from ..contract.pricing import Prices
from ..contract.vocabulary import StopReason
from .approval import Approver, Decision
from .budget import Budget
from .checkpoint import Checkpoint, CheckpointStore, SQLiteCheckpointStore
from .clock import RealClock, SimClock
from .closing import closing_message
from .events import EventLog, Observers
from .faults import CrashAt
from .loop import Kernel
from .memory import MemoryStore
from .models import AsyncModel, FunctionModel, Model, ModelRequest, ModelResponse, ScriptedModel
from .plan import validate_plan
from .replay import Recorder, Replayer
from .state import HeldCall, PlanStep, TaskState
from .stops import ROUTES, Route
from .tools import AsyncToolbox, FactPolicy, Toolbox, ToolInvocation, ToolResponse, ToolSpec
from .view import est_tokens, render

__all__ = [
    "Approver", "AsyncModel", "AsyncToolbox", "Budget", "Checkpoint", "CheckpointStore", "CrashAt", "Decision",
    "EventLog", "FactPolicy", "FunctionModel", "HeldCall", "Kernel", "MemoryStore", "Model", "ModelRequest",
    "ModelResponse", "Observer", "Observers", "PlanStep", "Prices", "ROUTES", "RealClock", "Recorder", "Replayer",
    "Route", "SQLiteCheckpointStore", "ScriptedModel", "SimClock", "StopReason", "TaskState", "ToolInvocation",
    "ToolResponse", "ToolSpec", "Toolbox", "closing_message", "est_tokens", "render", "validate_plan",
]
