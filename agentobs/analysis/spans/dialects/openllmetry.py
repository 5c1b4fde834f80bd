"""OpenLLMetry / Traceloop: ``traceloop.span.kind`` agent / workflow / task / tool on the decorated functions,
``llm.request.type`` on the model calls; tokens as ``gen_ai.usage.prompt_tokens`` / ``completion_tokens`` (0.4x
and before) or the current GenAI names, ``llm.usage.total_tokens``.
"""
from __future__ import annotations

from ._table import AGENT, CHAIN, CHAT, LOOP_LIMITS, TOOL, Dialect, Rule, When
from .genai import NUMBERS

OPENLLMETRY = Dialect(
    name="openllmetry", marker="traceloop.span.kind",
    roles={"agent": AGENT, "workflow": CHAIN, "task": CHAIN, "tool": TOOL},
    rules=(Rule(role=CHAT, when=(When(key="llm.request.type", equals=("chat", "completion")),)),),
    text={"agent": ("traceloop.entity.name",), "model": ("gen_ai.request.model", "gen_ai.response.model"),
          "provider": ("gen_ai.provider.name", "gen_ai.system"), "tool": ("traceloop.entity.name",),
          "args": ("traceloop.entity.input",), "error_type": ("error.type",),
          "finish": ("gen_ai.completion.0.finish_reason",)},
    numbers={**NUMBERS, "input_tokens": (*NUMBERS["input_tokens"], "llm.usage.prompt_tokens"),
             "output_tokens": (*NUMBERS["output_tokens"], "llm.usage.completion_tokens")},
    session=("traceloop.association.properties.session_id",), offered=("llm.request.functions.",),
    asks=("gen_ai.completion.0.tool_calls.0.name",),
    limits=LOOP_LIMITS,
    where="traceloop/openllmetry packages/opentelemetry-semantic-conventions-ai")
