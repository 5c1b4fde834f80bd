"""Test doubles that ship with the library, for testing your own models, tools and limits without a provider.

    SimClock        simulated time: runs are deterministic and as fast as the code
    ScriptedModel   replies from a list, in order
    FunctionModel   replies from a function of (view, call number)
    Recorder        wraps a model and keeps its responses; Replayer plays them back
    CrashAt         fault injection: the "process" dies at a boundary of the loop
    EventLog        an observer that keeps every event

The seeds' support desk (a fake store backend, stand-in policies, scenarios) is in ``agentobs.domain``.
"""
from .kernel.clock import SimClock
from .kernel.events import EventLog
from .kernel.faults import BOUNDARIES, CrashAt
from .kernel.models import FunctionModel, ScriptedModel
from .kernel.replay import Recorder, Replayer

__all__ = ["BOUNDARIES", "CrashAt", "EventLog", "FunctionModel", "Recorder", "Replayer", "ScriptedModel", "SimClock"]
