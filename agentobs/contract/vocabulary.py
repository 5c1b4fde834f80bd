"""The closed vocabularies runs are described in: stop reasons, run statuses, tool results, reply kinds.

The kernel decides which word applies (its logic stays in ``agentobs.kernel``); telemetry records the words;
the analysis reads them back. Every way out of a run sets exactly one ``StopReason``.
"""
from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Literal


class StopReason(StrEnum):
    """How a run ended (``agentobs.stop_reason``)."""
    DONE = "done"
    MAX_STEPS = "max_steps"
    MAX_TOOL_CALLS = "max_tool_calls"
    MAX_TOKENS = "max_tokens"
    MAX_USD = "max_usd"
    DEADLINE = "deadline"
    REPEATED_CALL = "repeated_call"
    NO_PROGRESS = "no_progress"
    NEEDS_APPROVAL = "needs_approval"
    UNKNOWN_OUTCOME = "unknown_outcome"
    MODEL_ERROR = "model_error"
    CANCELLED = "cancelled"           # the caller cancelled the run (an asyncio task); it continues by recovery


class Category(StrEnum):
    """What kind of ending a stop reason is."""
    SUCCESS = "success"
    BUDGET = "budget"
    STUCK = "stuck"
    SUSPENDED = "suspended"
    UNSAFE = "unsafe"
    ERROR = "error"
    INTERRUPTED = "interrupted"


CATEGORY: Mapping[StopReason, Category] = {
    StopReason.DONE: Category.SUCCESS,
    StopReason.MAX_STEPS: Category.BUDGET,
    StopReason.MAX_TOOL_CALLS: Category.BUDGET,
    StopReason.MAX_TOKENS: Category.BUDGET,
    StopReason.MAX_USD: Category.BUDGET,
    StopReason.DEADLINE: Category.BUDGET,
    StopReason.REPEATED_CALL: Category.STUCK,
    StopReason.NO_PROGRESS: Category.STUCK,
    StopReason.NEEDS_APPROVAL: Category.SUSPENDED,
    StopReason.UNKNOWN_OUTCOME: Category.UNSAFE,
    StopReason.MODEL_ERROR: Category.ERROR,
    StopReason.CANCELLED: Category.INTERRUPTED,
}
assert set(CATEGORY) == set(StopReason), "every stop reason needs a category"


class RunStatus(StrEnum):
    """Where a task stands (``agentobs.status``). ``ABORTED``: an exception escaped the run (telemetry's word;
    no stop reason), or its caller cancelled it (stop reason ``cancelled``): the task itself is still where its
    last checkpoint left it, and ``recover`` continues it."""
    RUNNING = "running"
    SUSPENDED = "suspended"
    STOPPED = "stopped"
    ABORTED = "aborted"


# stop reasons that suspend the task (it can be resumed) rather than stop it
SUSPENDING: frozenset[StopReason] = frozenset(s for s, c in CATEGORY.items() if c is Category.SUSPENDED)


# stop reasons that interrupt the task: the run ended, the task did not (it continues from its last checkpoint)
INTERRUPTING: frozenset[StopReason] = frozenset(s for s, c in CATEGORY.items() if c is Category.INTERRUPTED)


def status_of(stop: StopReason) -> RunStatus:
    if stop in SUSPENDING:
        return RunStatus.SUSPENDED
    return RunStatus.ABORTED if stop in INTERRUPTING else RunStatus.STOPPED


# a resume later than this after the suspension is "after a long gap": the facts the held call was decided on may
# be stale (the stale_facts signature)
STALE_AFTER_S = 900.0

# -- model replies -----------------------------------------------------------------------------------

ReplyType = Literal["plan", "tool", "final"]
UsageSource = Literal["estimated", "reported"]         # token counts from the provider, or 4 characters a token
OUTCOMES = ("completed", "cannot_complete", "escalated")    # what a final answer says of the request

# -- tools -------------------------------------------------------------------------------------------

Effect = Literal["read", "write"]


class ToolStatus(StrEnum):
    """The ``status`` of a tool result."""
    OK = "ok"
    NEEDS_APPROVAL = "needs_approval"
    UNKNOWN = "unknown"              # a write whose outcome is lost
    ERROR = "error"                  # with a ``code``


# error codes that mean "this will not work if tried again" (a plan step that gets one has failed)
PERMANENT_CODES = frozenset({"not_found", "invalid_state"})


def result_status(result: Mapping[str, Any]) -> str:
    """A tool result folded into one word (``agentobs.tool.result_status``): its status, or for an error its
    code; anything malformed is ``error``."""
    status = result.get("status")
    if status == ToolStatus.ERROR:
        code = result.get("code")
        return code if isinstance(code, str) and code else ToolStatus.ERROR.value
    return status if isinstance(status, str) else ToolStatus.ERROR.value


def is_transient(result: Mapping[str, Any]) -> bool:
    """An error result that says trying again may work (``"transient": true``)."""
    return result.get("status") == ToolStatus.ERROR and result.get("transient") is True
