"""The budget guards' overhead: the same run with and without the guard, under each framework.

One run: the model reads an order, refunds, e-mails and answers (4 model calls, 3 tool calls), from an
in-process model (Pydantic AI's ``FunctionModel``, the Agents SDK's ``agents.testing.ScriptedModel``; no
HTTP), constructing the agent and running it as a caller would. Guarded and unguarded runs of one framework
are interleaved in one process; the ratio is the median of per-repeat ratios. "Per call" spreads the extra
time over the run's 7 checked calls (model requests and tool calls).

    python -m bench.guard_bench [--quick]
"""
from __future__ import annotations

import asyncio
import sys

from .common import QUICK, Figure, Plan, Target, ratio, summarize, time_interleaved, us

NAME = "guard"
TITLE = "Budget guards: a 7-call run with the guard vs without, per framework (in-process models)"
CALLS = 7
FULL = Plan(repeats=15, iterations=40, warmup=20)
TARGETS = [Target("pydantic-ai: guarded / plain per run", "pydantic-ai: guarded / plain (per run)", "<=", 1.5),
           Target("openai-agents: guarded / plain per run", "openai-agents: guarded / plain (per run)", "<=", 1.5)]

PLAN = [("get_order", {"order_id": "ord_1001"}),
        ("issue_refund", {"order_id": "ord_1001", "amount_cents": 3000}),
        ("send_status_email", {"order_id": "ord_1001"})]
ANSWER = "Refund issued and confirmation sent."


def get_order(order_id: str) -> dict:
    """Read an order."""
    return {"status": "ok", "order_status": "delivered", "total_cents": 4200}


def issue_refund(order_id: str, amount_cents: int) -> dict:
    """Refund cents on an order."""
    return {"status": "ok", "refunded_cents": amount_cents}


def send_status_email(order_id: str) -> dict:
    """E-mail the order status."""
    return {"status": "ok", "sent": True}


TOOLS = [get_order, issue_refund, send_status_email]


def _roomy():
    from agentobs import Budget
    return Budget(max_steps=10, max_tool_calls=10, max_tokens=100_000)


def pydantic_contenders():
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    from agentobs.guards.pydantic_ai import BudgetGuard

    def fn(messages, info):
        done = sum(1 for m in messages for p in getattr(m, "parts", ()) if isinstance(p, ToolReturnPart))
        if done < len(PLAN):
            return ModelResponse(parts=[ToolCallPart(*PLAN[done])])
        return ModelResponse(parts=[TextPart(ANSWER)])

    def plain():
        out = Agent(FunctionModel(fn), tools=TOOLS).run_sync("refund").output
        assert out == ANSWER

    def guarded():
        out = Agent(FunctionModel(fn), tools=TOOLS, capabilities=[BudgetGuard(_roomy())]).run_sync("refund").output
        assert out == ANSWER
    return plain, guarded


def agents_contenders():
    from agents import Agent, Runner, function_tool, set_tracing_disabled
    from agents.testing import ScriptedModel
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    from agentobs.guards.openai_agents import BudgetGuard

    set_tracing_disabled(True)
    tools = [function_tool(f) for f in TOOLS]
    import json

    def steps():
        out = [[ResponseFunctionToolCall(arguments=json.dumps(args), call_id=f"c{i}", name=name,
                                         type="function_call", id=f"fc{i}", status="completed")]
               for i, (name, args) in enumerate(PLAN)]
        out.append([ResponseOutputMessage(id="m", role="assistant", status="completed", type="message", content=[
            ResponseOutputText(text=ANSWER, type="output_text", annotations=[])])])
        return out

    guard = BudgetGuard(_roomy())

    def plain():
        agent = Agent(name="bench", model=ScriptedModel(steps()), tools=tools)
        assert asyncio.run(Runner.run(agent, "refund")).final_output == ANSWER

    def guarded():
        agent = Agent(name="bench", model=ScriptedModel(steps()), tools=tools)
        assert asyncio.run(guard.run(agent, "refund")).final_output == ANSWER
    return plain, guarded


def run(quick: bool = False) -> list[Figure]:
    plan = QUICK if quick else FULL
    figures: list[Figure] = []
    for label, make in (("pydantic-ai", pydantic_contenders), ("openai-agents", agents_contenders)):
        plain, guarded = make()
        plain(), guarded()                                   # both complete before timing
        t = time_interleaved({"plain": plain, "guarded": guarded}, plan)
        n = dict(iterations=plan.iterations, group=NAME)
        overhead = [(g - p) / CALLS for g, p in zip(us(t["guarded"]), us(t["plain"]), strict=True)]
        figures += [
            summarize(f"{label}: plain, per run", us(t["plain"]), "µs", **n),
            summarize(f"{label}: guarded, per run", us(t["guarded"]), "µs", **n),
            summarize(f"{label}: guard overhead per checked call", overhead, "µs", **n,
                      notes="(guarded - plain) / 7 calls"),
            ratio(f"{label}: guarded / plain (per run)", t["guarded"], t["plain"], notes="median of per-repeat ratios",
                  group=NAME),
        ]
    return figures


def summary(figures: list[Figure]) -> str:
    m = {f.name: f.median for f in figures}
    parts = []
    for label in ("pydantic-ai", "openai-agents"):
        k = f"{label}: guard overhead per checked call"
        if k in m:
            r = m[f"{label}: guarded / plain (per run)"]
            parts.append(f"{label}: {m[k]:.0f} µs per checked call ({r:.2f} ×)")
    return ("The guard adds " + "; ".join(parts) + ", against model calls that take hundreds of milliseconds.\n"
            if parts else "")


if __name__ == "__main__":
    for f in run(quick="--quick" in sys.argv):
        print(f"{f.name:60} {f.value():>12}  {f.spread()}")
