"""The closed list of ways a run can end, and what each one means for the caller.

Every exit of the loop sets exactly one ``StopReason``. ``ROUTES`` is the routing table
from seed 000 ("The stop reasons are part of the interface"): an application matches on
the stop reason, never on the answer text.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class StopReason(str, Enum):
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

    def __str__(self) -> str:  # so f-strings print "done", not "StopReason.DONE"
        return self.value


class Category(str, Enum):
    SUCCESS = "success"
    BUDGET = "budget"
    STUCK = "stuck"
    SUSPENDED = "suspended"
    UNSAFE = "unsafe"
    ERROR = "error"


@dataclass(frozen=True)
class Route:
    category: Category
    meaning: str
    status: str  # "stopped" or "suspended"
    next_action: str


_BUDGET_NEXT = "Report partial progress from the plan; hand off or ask the user. Do not raise the limit automatically."
_STUCK_NEXT = "Stop and escalate with the trace; do not raise the limit automatically."

ROUTES: dict[StopReason, Route] = {
    StopReason.DONE: Route(Category.SUCCESS, "A final answer passed the plan check", "stopped",
                           "Return the answer; verify effects against the backend"),
    StopReason.MAX_STEPS: Route(Category.BUDGET, "The step budget ran out", "stopped", _BUDGET_NEXT),
    StopReason.MAX_TOOL_CALLS: Route(Category.BUDGET, "The tool-call budget ran out", "stopped", _BUDGET_NEXT),
    StopReason.MAX_TOKENS: Route(Category.BUDGET, "The next model call could exceed the token budget", "stopped",
                                 _BUDGET_NEXT),
    StopReason.MAX_USD: Route(Category.BUDGET, "The next model call could exceed the dollar budget", "stopped",
                              _BUDGET_NEXT),
    StopReason.DEADLINE: Route(Category.BUDGET, "The active-time deadline ran out", "stopped", _BUDGET_NEXT),
    StopReason.REPEATED_CALL: Route(Category.STUCK, "The same call was proposed more often than allowed", "stopped",
                                    _STUCK_NEXT),
    StopReason.NO_PROGRESS: Route(Category.STUCK, "Consecutive steps changed nothing", "stopped", _STUCK_NEXT),
    StopReason.NEEDS_APPROVAL: Route(Category.SUSPENDED, "A call is held for a human decision", "suspended",
                                     "Request a decision; resume from the saved state"),
    StopReason.UNKNOWN_OUTCOME: Route(Category.UNSAFE, "A write may or may not have happened", "stopped",
                                      "Reconcile with the backend before any retry; never retry under a new key"),
    StopReason.MODEL_ERROR: Route(Category.ERROR, "The model could not be reached after retries", "stopped",
                                  "Check the provider; resume from the last checkpoint when it is back"),
}

BUDGET_STOPS = frozenset(s for s, r in ROUTES.items() if r.category is Category.BUDGET)
SUSPENDING = frozenset(s for s, r in ROUTES.items() if r.status == "suspended")

assert set(ROUTES) == set(StopReason), "every stop reason needs a route"
