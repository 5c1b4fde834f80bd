"""The one exception tree of agentobs.

    AgentobsError                   base of everything we raise on purpose
    ├── ConfigError                 a setting, budget or price table makes no sense (ValueError)
    ├── ProposalError               internal: a model reply could not be understood (never escapes the loop)
    ├── ApprovalError               a decision does not match the held call, or none was given
    ├── CheckpointError             the checkpoint store refused an operation
    │   ├── CheckpointConflict      another worker saved this task first (stale version)
    │   ├── CheckpointCorrupt       a checkpoint database or stored state is damaged, malformed or too new
    │   ├── CheckpointLeased        another worker holds the task's lease, or took it over from this one
    │   └── CheckpointNotFound      no checkpoint for that task id
    ├── ReplayError                 a recorded run is unreadable or ran out of replies
    ├── ConcurrentUseError          an object that serves one run at a time (a SimClock, a ScriptedModel, a
    │                               Recorder...) was used by a second run while the first was running
    ├── InputError                  user input (a file, a source, an argument) is unusable
    └── BudgetExceeded              a guard stopped a framework's run (Pydantic AI, OpenAI Agents) before a
                                    call: carries the stop reason, the limit and the observed value

Domain outcomes (a budget ran out, a loop was stuck) are stop reasons, not exceptions, in our own kernel.
A framework that is not ours can only be stopped by an exception: there ``BudgetExceeded`` carries the same
closed stop reason (``agentobs.guards`` raises a subclass that is also the framework's own limit error).
``SimulatedCrash`` stands for the process dying: it derives from BaseException so no
``except Exception`` in the loop or in an observer can swallow it.
"""
from __future__ import annotations

from typing import Any


class AgentobsError(Exception):
    """Base class of every error agentobs raises on purpose."""


class ConfigError(AgentobsError, ValueError):
    """A configuration value (budget, setting, price) is invalid; the message says what to fix."""


class ProposalError(AgentobsError):
    """A model reply is malformed. The kernel turns it into an error result the model sees."""

    def __init__(self, code: str, detail: str):
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail


class ApprovalError(AgentobsError):
    """A resume was attempted without a decision, or with one for other arguments."""


class CheckpointError(AgentobsError):
    """The checkpoint store refused an operation."""


class CheckpointConflict(CheckpointError):
    """Another worker saved this task after the snapshot we hold was read."""


class CheckpointCorrupt(CheckpointError):
    """The checkpoint database or a stored state is damaged, malformed, or of a newer schema than this agentobs."""


class CheckpointLeased(CheckpointError):
    """Another worker holds the lease on the task (it is running it), or took the lease over from this worker."""


class CheckpointNotFound(CheckpointError):
    """No checkpoint exists for the task id."""


class ReplayError(AgentobsError):
    """A recorded run cannot be read, or the replay asked for more replies than were recorded."""


class ConcurrentUseError(AgentobsError):
    """An object that serves one run at a time was used by a second run while the first was still running.

    A ``Kernel`` and an observer serve any number of concurrent runs; a ``SimClock`` (one simulated time), a
    ``ScriptedModel`` or ``FunctionModel`` (one script, one call count), a ``Recorder`` or ``Replayer`` (one
    sequence of replies) and a ``CrashAt`` cannot: the second run that uses one raises this at that use, before
    it changes anything the first run relies on. The message names both tasks and says what to share instead."""


class InputError(AgentobsError):
    """A file, source or argument given by the user cannot be used."""


class BudgetExceeded(AgentobsError):
    """A guard stopped a run before the call that would cross a limit.

    ``stop`` is the closed stop reason (an ``agentobs.StopReason``), ``limit`` the limit in force and
    ``observed`` what the guard saw (for tokens and dollars: the spend so far plus the next call priced ahead).
    """

    def __init__(self, stop: Any, limit: float, observed: float, detail: str = ""):
        what = f"{stop}: limit {_number(limit)}, observed {_number(observed)}"
        super().__init__(f"{what} ({detail})" if detail else what)
        self.stop = stop
        self.limit = limit
        self.observed = observed


def _number(x: Any) -> str:
    """A limit or an observed value as a message shows it (an integer past a double's range as its magnitude)."""
    try:
        return f"{x:g}"
    except (OverflowError, TypeError, ValueError):
        # (an integer's magnitude from its bits: its text would raise past Python's int-to-text limit)
        return f"about 10^{int(abs(x).bit_length() * 0.30103)}" if isinstance(x, int) else repr(x)[:40]


class SimulatedCrash(BaseException):
    """Raised by fault injection to stand for the process dying at a boundary of the loop."""

    def __init__(self, boundary: str):
        super().__init__(f"simulated crash at {boundary}")
        self.boundary = boundary
