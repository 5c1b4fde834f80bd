"""Instrumenting a plain Python agent loop (no agentobs kernel) with agentobs's instrumentation API.

Run it:  .venv/bin/python examples/plain_loop.py traces.jsonl
It handles the seed's refund request with a hand-written loop and writes OTLP JSON lines that
`agentobs trace` and `agentobs report` read like the kernel's own traces.
"""
from __future__ import annotations

import json
import sys

from agentobs.telemetry import configure
from agentobs.telemetry.instrument import AgentInstrumentation

ORDERS = {"ord_1001": {"total_cents": 4200, "refunded_cents": 0, "order_status": "delivered"}}


def fake_llm(history: list[dict]) -> dict:
    """Stands in for a model: plan, read, refund, e-mail, answer."""
    n = sum(1 for m in history if m["role"] == "assistant")
    script = [{"type": "plan"},
              {"type": "tool", "name": "get_order", "args": {"order_id": "ord_1001"}},
              {"type": "tool", "name": "issue_refund", "args": {"order_id": "ord_1001", "amount_cents": 3000}},
              {"type": "tool", "name": "send_status_email", "args": {"order_id": "ord_1001"}},
              {"type": "final", "text": "Refund issued and confirmation sent."}]
    return script[n]


def run_tool(name: str, args: dict) -> dict:
    order = ORDERS[args["order_id"]]
    if name == "issue_refund":
        order["refunded_cents"] += args["amount_cents"]
        return {"status": "ok", "refunded_cents": order["refunded_cents"]}
    if name == "send_status_email":
        return {"status": "ok", "sent": True}
    return {"status": "ok", **order}


def main(path: str) -> None:
    telemetry = configure(traces_out=path, service_name="plain-loop-example")
    agent = AgentInstrumentation(telemetry)
    history = [{"role": "user", "content": "Refund 3,000 cents on ord_1001 and confirm by email."}]
    with agent.task("support-agent", task_id="plain-1", model="gpt-4.1-mini", provider="openai") as task:
        while True:
            with task.step() as step:
                with step.chat(max_tokens=300) as call:
                    reply = fake_llm(history)
                    prompt_tokens = len(json.dumps(history)) // 4
                    call.done(input_tokens=prompt_tokens, output_tokens=len(json.dumps(reply)) // 4,
                              reply_type="final" if reply["type"] == "final" else reply["type"],
                              finish_reason="tool_calls" if reply["type"] == "tool" else "stop")
                history.append({"role": "assistant", "content": json.dumps(reply)})
                if reply["type"] == "final":
                    task.done(stop="done", outcome="completed", answer=reply["text"])
                    break
                if reply["type"] == "tool":
                    effect = "read" if reply["name"] == "get_order" else "write"
                    with step.tool(reply["name"], reply["args"], effect=effect) as tool:
                        result = run_tool(reply["name"], reply["args"])
                        tool.done(result)
                    history.append({"role": "tool", "content": json.dumps(result)})
    report = telemetry.shutdown()
    print("\n".join(report.lines()))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "plain-loop-traces.jsonl")
