"""The message a user sees when a run ends, built from the state in code, with no model call.

It never runs past a deadline and never invents progress: what it says was done comes
from plan statuses and the audit record of successful writes.
"""
from __future__ import annotations

from ..contract.vocabulary import Category, StopReason
from .state import DONE, FAILED, PENDING, TaskState
from .stops import ROUTES


def _done_writes(state: TaskState) -> list[str]:
    seen, out = set(), []
    for a in state.audit:
        if a.get("effect") == "write" and a.get("status") == "ok" and a.get("key") not in seen:
            seen.add(a.get("key"))
            out.append(a["tool"])
    return out


def _plan_summary(state: TaskState) -> str:
    if not state.plan:
        writes = _done_writes(state)
        return f"Completed actions: {', '.join(writes)}." if writes else "No action was completed."
    groups: dict[str, list[str]] = {DONE: [], FAILED: [], PENDING: []}
    for s in state.plan:
        groups.setdefault(s.status, []).append(f"{s.tool} ({s.id})")
    parts = []
    if groups[DONE]:
        parts.append("Done: " + ", ".join(groups[DONE]) + ".")
    if groups[FAILED]:
        parts.append("Failed: " + ", ".join(groups[FAILED]) + ".")
    if groups[PENDING]:
        parts.append("Not done: " + ", ".join(groups[PENDING]) + ".")
    return " ".join(parts)


def closing_message(state: TaskState) -> str:
    if state.stop is None:
        return "The run has not ended."
    stop = StopReason(state.stop)
    route = ROUTES[stop]
    match route.category:
        case Category.SUCCESS:
            if state.outcome == "completed":
                return state.answer or "The request was completed."
            return (state.answer or "The request could not be completed.") + " " + _plan_summary(state)
        case Category.BUDGET:
            return f"I stopped before finishing: {route.meaning.lower()}. {_plan_summary(state)}"
        case Category.STUCK:
            return (f"I stopped because I was not making progress ({route.meaning.lower()}). "
                    f"{_plan_summary(state)} A person will look at this request.")
        case Category.SUSPENDED:
            held = state.pending.name if state.pending else "an action"
            return (f"Your request is waiting for a review: {held} needs approval and has not been performed. "
                    f"{_plan_summary(state)}")
        case Category.UNSAFE:
            return ("I could not confirm whether the last action went through. It will be checked with the "
                    f"backend before anything is retried; please do not resubmit. {_plan_summary(state)}")
        case Category.ERROR:
            return f"The assistant could not be reached, so I stopped. {_plan_summary(state)}"
        case Category.INTERRUPTED:
            return (f"Your request was interrupted before it finished. {_plan_summary(state)} "
                    "It will be picked up from where it stopped; please do not resubmit.")
    raise AssertionError(f"unhandled stop category {route.category}")  # pragma: no cover
