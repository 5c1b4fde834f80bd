"""Values a span does not carry, read where its framework keeps them: a tool call's arguments in the model call that
asked for it, matched by tool call id within its own trace."""
from __future__ import annotations

import json

import numpy as np
from otlp_spans import agent, chat, span, tool, write

from agentobs.analysis.derive._kept_elsewhere import tool_arguments
from agentobs.analysis.load.sources import load_sources
from agentobs.analysis.spans.dialects import normalize

A, B = "a1" * 16, "b2" * 16


def _asked(city: str) -> dict:
    parts = [{"type": "tool_call", "id": "call_1", "name": "weather", "arguments": {"city": city}}]
    return {**chat("gpt-4o", 10, 5), "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}])}


def _trace(trace: str, city: str) -> list[dict]:
    return [span(trace, 1, None, "invoke_agent a", 0, 100, agent("a")),
            span(trace, 2, 1, "chat gpt-4o", 1, 10, _asked(city)),
            span(trace, 3, 1, "execute_tool weather", 11, 20, tool("weather", "call_1"))]


def test_a_tool_call_id_reused_by_another_trace_takes_the_arguments_of_its_own(tmp_path):
    """Test servers and some providers number tool calls per conversation (call_1, call_2, ...): the same id in
    two traces is two calls."""
    ss = load_sources([str(write(tmp_path / "t.jsonl", _trace(A, "Paris") + _trace(B, "Oslo")))])
    spans = ss.spans
    norm = normalize(spans)
    args = tool_arguments(spans, None, norm.kind, np.full(len(spans), None, dtype=object))
    tools = spans["name"].eq("execute_tool weather").to_numpy()
    got = dict(zip(spans["trace_id"][tools], args[tools], strict=True))
    assert {t: json.loads(a) for t, a in got.items()} == {A: {"city": "Paris"}, B: {"city": "Oslo"}}
