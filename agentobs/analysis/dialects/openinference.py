"""OpenInference (Arize Phoenix and its instrumentations: OpenAI Agents SDK, LangChain/LangGraph, smolagents,
CrewAI, LlamaIndex): ``openinference.span.kind`` AGENT / CHAIN / LLM / TOOL, ``llm.token_count.*``.

Two shapes need care. LangGraph's nodes come as AGENT or CHAIN spans carrying ``langgraph_node`` in
their ``metadata``: a node is a step of the graph, not an agent invocation (the graph is). The OpenAI
Agents SDK's handoff is a TOOL span named ``handoff to <agent>`` that runs no tool.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ._base import AGENT, CHAIN, CHAT, OTHER, TOOL, Dialect
from ._fields import txt


def _refine(spans: pd.DataFrame, kinds: np.ndarray) -> np.ndarray:
    out = kinds.copy()
    if "metadata" in spans.columns:
        node = pd.Series(txt(spans, "metadata"), dtype="string").str.contains('"langgraph_node"', regex=False)
        out[(node.fillna(False).to_numpy(dtype=bool)) & (out == AGENT)] = CHAIN
    handoff = (pd.Series(txt(spans, "name"), dtype="string").str.startswith("handoff to ").fillna(False).to_numpy(bool)
               & pd.isna(txt(spans, "tool.name")))
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
