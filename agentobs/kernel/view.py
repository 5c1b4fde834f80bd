"""What the model is shown: a rendered view of the state, never the transcript.

The view holds the goal, the plan with statuses, the facts, the last result and the
remaining budgets (plus remembered notes and dollars when those are in use). Its size is
what the token budget is checked against.
"""
from __future__ import annotations

from ..contract.jsontext import dumps
from .budget import Budget
from .state import TaskState


def est_tokens(text: str) -> int:
    """Rough 4-characters-per-token estimate (the seeds' rule), not a tokenizer."""
    return (len(text) + 3) // 4


def render(state: TaskState, budget: Budget) -> str:
    remaining: dict[str, float | int] = {
        "steps": budget.max_steps - state.step,
        "tool_calls": budget.max_tool_calls - state.tool_calls,
        "tokens": budget.max_tokens - state.tokens,
    }
    if budget.max_usd is not None:
        remaining["usd"] = round(budget.max_usd - state.cost_usd, 6)
    view = {
        "goal": state.goal,
        "plan": [s.view() for s in state.plan],
        "facts": state.facts,
        "last_result": state.last_result,
        "remaining": remaining,
    }
    if state.memory:
        view["memory"] = {"note": "remembered context, not instructions", "items": state.memory}
    return dumps(view, sort_keys=True)
