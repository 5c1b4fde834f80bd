"""OpenTelemetry GenAI semantic conventions: the current names, the names before 1.37, Pydantic AI / Logfire.

``gen_ai.operation.name`` says what a span is. Older instrumentations write ``gen_ai.system`` for the
provider and ``gen_ai.usage.prompt_tokens`` / ``completion_tokens``; Pydantic AI adds
``gen_ai.usage.details.*`` and, in instrumentation versions 1-2, ``agent_name`` and ``tool_arguments``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ._base import AGENT, CHAIN, CHAT, OTHER, TOOL, Dialect, Fields
from ._fields import text

TEXT = {
    "agent": ("gen_ai.agent.name", "agent_name"),
    "model": ("gen_ai.request.model", "gen_ai.response.model", "model_name"),
    "provider": ("gen_ai.provider.name", "gen_ai.system"),
    "tool": ("gen_ai.tool.name",),
    "args": ("gen_ai.tool.call.arguments", "tool_arguments"),
    "error_type": ("error.type",),
    "finish": ("gen_ai.response.finish_reasons",),
}
NUMBERS = {
    "input_tokens": ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
    "output_tokens": ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
    "cache_read_tokens": ("gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens",
                          "gen_ai.usage.details.cache_read_tokens"),
    "cache_creation_tokens": ("gen_ai.usage.cache_creation.input_tokens", "gen_ai.usage.cache_creation_input_tokens",
                              "gen_ai.usage.details.cache_write_tokens"),
    "reasoning_tokens": ("gen_ai.usage.reasoning.output_tokens", "gen_ai.usage.reasoning_tokens",
                         "gen_ai.usage.details.reasoning_tokens"),
    "cost": ("agentobs.call.cost_usd", "operation.cost", "gen_ai.usage.cost"),
}


def _agent_from_name(spans: pd.DataFrame, out: Fields) -> None:
    """``invoke_agent {name}``: the agent's name when no attribute gives it."""
    names = text(spans, ("name",))
    parsed = pc.utf8_slice_codeunits(names, len("invoke_agent "))
    from_name = pc.if_else(pc.fill_null(pc.starts_with(names, "invoke_agent "), False), parsed,
                           pa.scalar(None, pa.string()))
    out["agent"] = pc.coalesce(out["agent"], from_name)


GENAI = Dialect(
    name="genai", marker="gen_ai.operation.name",
    kinds={"invoke_agent": AGENT, "invoke_workflow": CHAIN, "chat": CHAT, "text_completion": CHAT,
           "generate_content": CHAT, "execute_tool": TOOL, "create_agent": OTHER, "embeddings": OTHER},
    text=TEXT, numbers=NUMBERS, extra=_agent_from_name)


def _by_name(spans: pd.DataFrame) -> np.ndarray:
    name = text(spans, ("name",))

    def starts(prefix: str) -> np.ndarray:
        return pc.fill_null(pc.starts_with(name, prefix), False).to_numpy(zero_copy_only=False)

    def equals(value: str) -> np.ndarray:
        return pc.fill_null(pc.equal(name, value), False).to_numpy(zero_copy_only=False)
    out = np.full(len(spans), -1, dtype=np.int8)
    out[starts("chat ")] = CHAT
    out[starts("execute_tool") | equals("running tool")] = TOOL
    out[starts("invoke_agent") | equals("agent run")] = AGENT
    return out


# spans without any marker attribute, classified by their names (GenAI span names, Logfire's older ones)
NAMES = Dialect(name="names", marker=None, kinds={}, text=TEXT, numbers=NUMBERS, extra=_agent_from_name,
                claim_rows=_by_name)
