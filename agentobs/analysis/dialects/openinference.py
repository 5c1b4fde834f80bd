"""OpenInference (Arize Phoenix and its instrumentations: OpenAI Agents SDK, LangChain/LangGraph, smolagents,
CrewAI, LlamaIndex): ``openinference.span.kind`` AGENT / CHAIN / LLM / TOOL, ``llm.token_count.*``.

Two shapes need care. LangGraph's nodes come as AGENT or CHAIN spans carrying ``langgraph_node`` in
their ``metadata``: a node is a step of the graph, not an agent invocation (the graph is). The OpenAI
Agents SDK's handoff is a TOOL span named ``handoff to <agent>`` that runs no tool.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ._base import AGENT, CHAIN, CHAT, OTHER, TOOL, Dialect
from ._fields import column, text


def _refine(spans: pd.DataFrame, kinds: np.ndarray) -> np.ndarray:
    out = kinds.copy()
    meta = column(spans, "metadata")
    if meta is not None and (pa.types.is_string(meta.type) or pa.types.is_large_string(meta.type)):
        # (metadata is a JSON object written as text; of another type it names no LangGraph node)
        node = pc.fill_null(pc.match_substring(pc.cast(meta, pa.string()), '"langgraph_node"'), False)
        out[node.to_numpy(zero_copy_only=False) & (out == AGENT)] = CHAIN
    names = text(spans, ("name",))
    handoff = pc.fill_null(pc.starts_with(names, "handoff to "), False).to_numpy(zero_copy_only=False)
    handoff &= text(spans, ("tool.name",)).is_null().to_numpy(zero_copy_only=False)
    out[handoff & (out == TOOL)] = OTHER
    return out


OPENINFERENCE = Dialect(
    name="openinference", marker="openinference.span.kind",
    kinds={"agent": AGENT, "chain": CHAIN, "llm": CHAT, "tool": TOOL},
    text={"agent": ("agent.name",), "model": ("llm.model_name",), "provider": ("llm.provider", "llm.system"),
          "tool": ("tool.name",), "args": ("input.value",), "error_type": ("exception.type", "error.type"),
          "finish": ("llm.finish_reason",)},
    numbers={"input_tokens": ("llm.token_count.prompt",), "output_tokens": ("llm.token_count.completion",),
             "cache_read_tokens": ("llm.token_count.prompt_details.cache_read",),
             "cache_creation_tokens": ("llm.token_count.prompt_details.cache_write",),
             "reasoning_tokens": ("llm.token_count.completion_details.reasoning",),
             "cost": ("llm.cost.total",)},
    refine=_refine, extra_columns=("metadata",))
