"""An in-memory support-desk backend with an effects ledger (the seeds' fake store, our design).

Tools: get_order, search_policy (reads); issue_refund, send_status_email, escalate_to_human
(writes). Every write is stored under its call key, so repeating a logical write returns
the stored result (``replayed: true``) instead of a second effect. A write that outlives
its timeout still happens, but the caller only learns that the outcome is unknown.
Refunds above ``AUTO_LIMIT`` cents need a human approval of exactly those arguments.

``SupportDesks`` is one toolbox with a desk per task, for many concurrent runs through one kernel.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..kernel.tools import FactPolicy, ToolInvocation, ToolResponse, ToolSpec, error

CATALOG = {
    "get_order": ToolSpec(name="get_order", effect="read",
                          description="Read an order: status, total and refunded cents"),
    "search_policy": ToolSpec(name="search_policy", effect="read", description="Search the store's policy texts"),
    "issue_refund": ToolSpec(name="issue_refund", effect="write", description="Refund cents on an order"),
    "send_status_email": ToolSpec(name="send_status_email", effect="write",
                                  description="E-mail the customer the order status"),
    "escalate_to_human": ToolSpec(name="escalate_to_human", effect="write",
                                  description="Hand the case to the support team"),
}
LATENCY = {"get_order": 0.4, "search_policy": 0.8, "issue_refund": 1.2, "send_status_email": 0.9,
           "escalate_to_human": 0.5}
REPLAY_LATENCY = 0.1
AUTO_LIMIT = 5000  # cents
POLICY_TEXT = "Returns are accepted within 30 days of delivery. " * 90

FACTS = FactPolicy(fields=frozenset({"order_status", "total_cents", "refunded_cents", "sent"}), scope_arg="order_id")


def default_orders() -> dict[str, dict[str, Any]]:
    return {"ord_1001": {"customer": "cu_ana", "total": 4200, "refunded": 0, "status": "delivered"},
            "ord_1004": {"customer": "cu_ana", "total": 15000, "refunded": 0, "status": "delivered"}}


class SupportDesk:
    """The backend. ``effects`` is the ledger of what really happened in the world. In memory: it never blocks, so
    the async kernel calls it in the event loop."""

    blocking = False

    def __init__(self, latency: dict[str, float] | None = None, *, flaky: dict[str, int] | None = None,
                 orders: dict[str, dict[str, Any]] | None = None):
        self.orders = orders if orders is not None else default_orders()
        self.latency = {**LATENCY, **(latency or {})}
        self.flaky = dict(flaky or {})       # tool -> how many more calls fail transiently
        self.effects: list[tuple[Any, ...]] = []
        self.done: dict[str, dict[str, dict[str, Any]]] = {}   # call key -> tool -> stored result
        self.calls = 0

    # -- Toolbox interface -------------------------------------------------------------------

    def spec(self, name: str) -> ToolSpec | None:
        return CATALOG.get(name)

    def invoke(self, call: ToolInvocation) -> ToolResponse:
        self.calls += 1
        name = call.name
        secs = self.latency[name]
        stored = self.done.get(call.key, {}).get(name)
        if stored is not None:                         # same key: replay the stored result
            return ToolResponse(result={**stored, "replayed": True}, latency_s=REPLAY_LATENCY)
        if self.flaky.get(name, 0) > 0:
            self.flaky[name] -= 1
            return ToolResponse(result=error("unavailable", transient=True, detail="503 backend timeout"),
                                latency_s=secs)
        res = self._run(call)
        if res["status"] == "ok" and CATALOG[name].effect == "write":
            self.done.setdefault(call.key, {})[name] = dict(res)      # results are flat
        if secs > call.timeout_s:
            lost = {"status": "unknown", "code": "timeout"} if CATALOG[name].effect == "write" else error("timeout")
            return ToolResponse(result=lost, latency_s=call.timeout_s)
        return ToolResponse(result=res, latency_s=secs)

    # -- the world -----------------------------------------------------------------------------

    def _run(self, call: ToolInvocation) -> dict[str, Any]:
        name, args = call.name, call.args
        if name == "search_policy":
            return {"status": "ok", "text": POLICY_TEXT}
        order_id = args.get("order_id")
        if not isinstance(order_id, str):
            return error("invalid_arguments", detail="order_id must be a string")
        if name == "escalate_to_human":
            self.effects.append(("escalation", order_id))
            return {"status": "ok", "queued_for": "support-team", "position": 1}
        rec = self.orders.get(order_id)
        if rec is None or rec["customer"] != call.user_id:
            return error("not_found")
        if name == "get_order":
            return {"status": "ok", "order_status": rec["status"], "total_cents": rec["total"],
                    "refunded_cents": rec["refunded"]}
        if name == "issue_refund":
            amt = args.get("amount_cents")
            if not isinstance(amt, int) or isinstance(amt, bool) or amt <= 0:
                return error("invalid_arguments", detail="amount_cents must be a positive integer")
            if amt > rec["total"] - rec["refunded"]:
                return error("invalid_state", detail="amount exceeds refundable")
            if amt > AUTO_LIMIT and not call.approved:
                return {"status": "needs_approval"}
            rec["refunded"] += amt
            self.effects.append(("refund", order_id, amt))
            return {"status": "ok", "refunded_cents": rec["refunded"]}
        # send_status_email
        self.effects.append(("email", order_id))
        return {"status": "ok", "sent": True}

    def refunds(self) -> list[tuple[Any, ...]]:
        return [e for e in self.effects if e[0] == "refund"]


class SupportDesks:
    """One toolbox, one ``SupportDesk`` per task (made by ``make`` on the task's first call): concurrent runs of
    one kernel each get a world of their own. A call goes to the desk of the task its key starts with (the kernel
    keys every call ``<task id>:<plan step>``; task ids here hold no ``:``)."""

    blocking = False

    def __init__(self, make: Callable[[], SupportDesk] = SupportDesk):
        self.make = make
        self.desks: dict[str, SupportDesk] = {}
        self._lock = threading.Lock()

    def spec(self, name: str) -> ToolSpec | None:
        return CATALOG.get(name)

    def invoke(self, call: ToolInvocation) -> ToolResponse:
        return self.desk(call.key.partition(":")[0]).invoke(call)

    def desk(self, task_id: str) -> SupportDesk:
        with self._lock:
            desk = self.desks.get(task_id)
            if desk is None:
                desk = self.desks[task_id] = self.make()
            return desk
