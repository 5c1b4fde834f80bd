"""What each way a run can end means for the caller, and what to do next.

Every exit of the loop sets exactly one ``StopReason`` (the closed list is in ``agentobs.contract``).
``ROUTES`` is the routing table from seed 000 ("The stop reasons are part of the interface"): an
application matches on the stop reason, never on the answer text.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..contract.vocabulary import CATEGORY, Category, RunStatus, StopReason, status_of


@dataclass(frozen=True, kw_only=True, slots=True)
class Route:
    category: Category
    meaning: str
    status: RunStatus            # stopped, suspended, or aborted (cancelled: recover continues it)
    next_action: str


_BUDGET_NEXT = "Report partial progress from the plan; hand off or ask the user. Do not raise the limit automatically."
_STUCK_NEXT = "Stop and escalate with the trace; do not raise the limit automatically."

_MEANING: dict[StopReason, tuple[str, str]] = {
    StopReason.DONE: ("A final answer passed the plan check", "Return the answer; verify effects against the backend"),
    StopReason.MAX_STEPS: ("The step budget ran out", _BUDGET_NEXT),
    StopReason.MAX_TOOL_CALLS: ("The tool-call budget ran out", _BUDGET_NEXT),
    StopReason.MAX_TOKENS: ("The next model call could exceed the token budget", _BUDGET_NEXT),
    StopReason.MAX_USD: ("The next model call could exceed the dollar budget", _BUDGET_NEXT),
    StopReason.DEADLINE: ("The active-time deadline ran out", _BUDGET_NEXT),
    StopReason.REPEATED_CALL: ("The same call was proposed more often than allowed", _STUCK_NEXT),
    StopReason.NO_PROGRESS: ("Consecutive steps changed nothing", _STUCK_NEXT),
    StopReason.NEEDS_APPROVAL: ("A call is held for a human decision",
                                "Request a decision; resume from the saved state"),
    StopReason.UNKNOWN_OUTCOME: ("A write may or may not have happened",
                                 "Reconcile with the backend before any retry; never retry under a new key"),
    StopReason.MODEL_ERROR: ("The model could not be reached after retries",
                             "Check the provider; resume from the last checkpoint when it is back"),
    StopReason.CANCELLED: ("The caller cancelled the run before it ended",
                           "Recover the task from its last checkpoint (kernel.recover or arecover) to continue it; "
                           "a write in flight is repeated under its key, never a new one"),
}

ROUTES: Mapping[StopReason, Route] = {
    stop: Route(category=CATEGORY[stop], meaning=meaning, status=status_of(stop), next_action=next_action)
    for stop, (meaning, next_action) in _MEANING.items()
}
assert set(ROUTES) == set(StopReason), "every stop reason needs a route"
