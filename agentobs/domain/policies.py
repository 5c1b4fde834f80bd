"""Deterministic stand-in models for the support desk. They read only the rendered view."""
from __future__ import annotations

import json
from typing import Any

from ..kernel.models import FunctionModel, ModelRequest, ModelResponse

PLAN = [{"id": "s1", "tool": "get_order", "depends_on": []},
        {"id": "s2", "tool": "issue_refund", "depends_on": ["s1"]},
        {"id": "s3", "tool": "send_status_email", "depends_on": ["s2"]}]


class SupportPolicy:
    """Handles 'refund the damaged item and confirm by email' from the state it is shown.

    When a refund is denied, or a tool stays down after retries, it hands the case to a
    person (``escalate_to_human``) and ends with outcome ``escalated``. It keeps nothing between calls, so one
    instance serves any number of concurrent runs; it never blocks (the async kernel calls it in the event loop).
    """

    provider = "agentobs"
    blocking = False

    def __init__(self, order: str = "ord_1001", amount: int = 3000, latency: float = 1.5,
                 name: str = "support-policy"):
        self.order, self.amount, self.latency, self.name = order, amount, latency, name

    def propose(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(reply=self.next(json.loads(request.view)), latency_s=self.latency)

    def next(self, v: dict[str, Any]) -> dict[str, Any]:
        f, o, last = v["facts"], self.order, v.get("last_result") or {}
        code = last.get("code")
        if last.get("queued_for"):
            return {"type": "final", "outcome": "escalated", "text": "A person from our team will follow up."}
        if code == "approval_denied":
            return {"type": "tool", "name": "escalate_to_human", "args": {"order_id": o, "reason": "refund denied"}}
        if any(s["tool"] == "escalate_to_human" and s["status"] == "pending" for s in v["plan"]):
            return {"type": "tool", "name": "escalate_to_human", "plan_step": "s4",
                    "args": {"order_id": o, "reason": "a tool stayed unavailable"}}
        if code == "tool_unavailable" and last.get("replan"):
            return {"type": "plan", "steps": [{"id": "s4", "tool": "escalate_to_human", "depends_on": ["s1"]}]}
        if not v["plan"]:
            return {"type": "plan", "steps": PLAN}
        if f"{o}.total_cents" not in f:
            return {"type": "tool", "name": "get_order", "args": {"order_id": o}, "plan_step": "s1"}
        if not any(s["id"] == "s2" and s["status"] == "done" for s in v["plan"]):
            return {"type": "tool", "name": "issue_refund", "plan_step": "s2",
                    "args": {"order_id": o, "amount_cents": self.amount, "reason": "damaged"}}
        if f"{o}.sent" not in f:
            return {"type": "tool", "name": "send_status_email", "args": {"order_id": o}, "plan_step": "s3"}
        return {"type": "final", "outcome": "completed", "text": "Refund issued and confirmation sent."}


def same_call(latency: float = 1.5) -> FunctionModel:
    """Repeats one failing read (seed 000 scenario B)."""
    return FunctionModel(lambda v, i: {"type": "tool", "name": "get_order", "args": {"order_id": "ord_9999"}},
                         latency=latency, name="same-call")


def new_ids(latency: float = 1.5) -> FunctionModel:
    """Varies its arguments every step, learning nothing (seed 000 scenario C)."""
    return FunctionModel(lambda v, i: {"type": "tool", "name": "get_order", "args": {"order_id": f"ord_{9000 + i}"}},
                         latency=latency, name="new-ids")


def search_loop(latency: float = 1.5) -> FunctionModel:
    """Calls a tool with large results every step (seed 000 scenario D)."""
    return FunctionModel(lambda v, i: {"type": "tool", "name": "search_policy",
                                       "args": {"order_id": "x", "q": f"returns policy {i}"}},
                         latency=latency, name="search-loop")


STUCK_QUERIES = ["damaged jacket refund", "refund damaged item", "damaged refund jacket", "jacket damaged",
                 "refund for damage"]


def stuck_searcher(latency: float = 1.5) -> FunctionModel:
    """Keeps rephrasing a search that returns nothing new (seed 004 no_progress)."""
    return FunctionModel(lambda v, i: {"type": "tool", "name": "search_policy",
                                       "args": {"q": STUCK_QUERIES[i % len(STUCK_QUERIES)]}},
                         latency=latency, name="stuck-searcher")


def looper(latency: float = 1.5) -> FunctionModel:
    """Reads the same order again and again (seed 004 repeated_action)."""
    return FunctionModel(lambda v, i: {"type": "tool", "name": "get_order", "args": {"order_id": "ord_1001"}},
                         latency=latency, name="looper")


TOOLS_AND_BOGUS = ["get_order", "issue_refund", "send_status_email", "search_policy", "escalate_to_human",
                   "delete_order"]


def random_model(seed: int) -> FunctionModel:
    """Chooses replies at random: nonexistent tools, malformed plans and replies, repeats, random latencies.

    Used to check that the kernel's bounds hold for any sequence of replies.
    """
    import random

    rng = random.Random(seed)

    def fn(view: dict[str, Any], i: int) -> Any:
        r = rng.random()
        if r < 0.08:
            return {"type": "final", "outcome": rng.choice(["completed", "cannot_complete", "escalated"]),
                    "text": "done"}
        if r < 0.16:
            return {"type": "plan", "steps": [{"id": f"s{j}", "tool": rng.choice(TOOLS_AND_BOGUS),
                                               "depends_on": rng.choice([[], [f"s{j - 1}"], ["zz"]])}
                                              for j in range(1, rng.randint(1, 8))]}
        if r < 0.21:
            return rng.choice([None, "free text", {"type": "tool", "name": "get_order", "args": ["x"]},
                               {"type": "dance"}, {"type": "final", "outcome": "maybe"}, {"text": "x" * 3000}])
        tool = rng.choice(TOOLS_AND_BOGUS)
        args = {"order_id": rng.choice(["ord_1001", "ord_1004", "ord_9999"]),
                "amount_cents": rng.choice([100, 3000, 8000, 99999, -5])}
        return {"type": "tool", "name": tool, "args": args, "plan_step": rng.choice([None, "s1", "s2"])}

    return FunctionModel(fn, latency=rng.choice([0.5, 1.5, 4.0]), name=f"random-{seed}")
