"""agentobs: bounded, observable and explainable agent runs on OpenTelemetry.

The public surface is re-exported here; ``agentobs.kernel``, ``agentobs.telemetry`` and
``agentobs.analysis`` hold the parts.
"""
from .errors import (AgentobsError, ApprovalError, CheckpointConflict, CheckpointCorrupt, CheckpointError,
                     CheckpointLeased, CheckpointNotFound, ConfigError, InputError, ReplayError, SimulatedCrash)
from .kernel import (ROUTES, Budget, Checkpoint, CrashAt, Decision, EventLog, FactPolicy, FunctionModel, HeldCall,
                     Kernel, MemoryStore, ModelRequest, ModelResponse, PlanStep, Prices, RealClock, Recorder,
                     Replayer, ScriptedModel, SimClock, SQLiteCheckpointStore, StopReason, TaskState,
                     ToolInvocation, ToolResponse, ToolSpec, closing_message, validate_plan)

__version__ = "0.1.0"

__all__ = sorted([
    "AgentobsError", "ApprovalError", "Budget", "Checkpoint", "CheckpointConflict", "CheckpointCorrupt",
    "CheckpointError", "CheckpointLeased", "CheckpointNotFound", "ConfigError", "CrashAt", "Decision", "EventLog", "FactPolicy",
    "FunctionModel", "HeldCall", "InputError", "Kernel", "MemoryStore", "ModelRequest", "ModelResponse", "PlanStep",
    "Prices", "ROUTES", "RealClock", "Recorder", "ReplayError", "Replayer", "SQLiteCheckpointStore", "ScriptedModel",
    "SimClock", "SimulatedCrash", "StopReason", "TaskState", "ToolInvocation", "ToolResponse", "ToolSpec",
    "closing_message", "validate_plan",
])
