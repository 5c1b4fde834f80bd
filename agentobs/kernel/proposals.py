"""Parse a model reply into one of three proposals, or a ProposalError the model will see."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ProposalError

OUTCOMES = ("completed", "cannot_complete", "escalated")


@dataclass(frozen=True, kw_only=True)
class PlanProposal:
    steps: Any                 # validated separately, so the model gets every problem at once


@dataclass(frozen=True, kw_only=True)
class ToolProposal:
    name: str
    args: dict[str, Any]
    plan_step: str | None


@dataclass(frozen=True, kw_only=True)
class FinalProposal:
    outcome: str
    text: str


Proposal = PlanProposal | ToolProposal | FinalProposal


def parse(reply: Any) -> Proposal:
    if not isinstance(reply, dict):
        raise ProposalError("malformed_reply", f"a reply must be a JSON object, got {type(reply).__name__}")
    kind = reply.get("type")
    if kind == "tool":
        name, args, step = reply.get("name"), reply.get("args", {}), reply.get("plan_step")
        if not isinstance(name, str) or not name:
            raise ProposalError("malformed_reply", "a tool reply needs 'name', a non-empty string")
        if not isinstance(args, dict):
            raise ProposalError("malformed_reply", f"'args' must be an object, got {type(args).__name__}")
        if step is not None and not isinstance(step, str):
            raise ProposalError("malformed_reply", "'plan_step' must be a step id or null")
        return ToolProposal(name=name, args=args, plan_step=step)
    if kind == "final":
        outcome, text = reply.get("outcome", "completed"), reply.get("text", "")
        if outcome not in OUTCOMES:
            raise ProposalError("malformed_reply", f"'outcome' must be one of {', '.join(OUTCOMES)}, got {outcome!r}")
        if not isinstance(text, str):
            raise ProposalError("malformed_reply", "'text' must be a string")
        return FinalProposal(outcome=outcome, text=text)
    if kind == "plan":
        return PlanProposal(steps=reply.get("steps"))
    if kind is None:
        raise ProposalError("malformed_reply", "missing 'type': use 'plan', 'tool' or 'final'")
    raise ProposalError("malformed_reply", f"unknown type {kind!r}: use 'plan', 'tool' or 'final'")
