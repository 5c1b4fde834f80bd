"""Firebase Genkit's own spans (tracer ``genkit-tracer``): ``genkit:metadata:subtype`` names the action a span
runs (``flow``, ``model``, ``tool``, ``agent``, ``embedder`` / ``retriever`` / ``indexer`` / ``reranker``), and
``ai.generate``'s tool loop is a ``generate`` span of ``genkit:type`` ``util``, one per turn, each nested in the
one before. Inputs and outputs are JSON in ``genkit:input`` / ``genkit:output``: a tool's arguments, a model
action's answer with its ``usage`` (``inputTokens``, ``outputTokens``, ``cachedContentTokens``,
``thoughtsTokens``); ``genkit:state`` is ``error`` on a failed action. No ``gen_ai.*`` attribute is written.
"""
from __future__ import annotations

from ._table import AGENT, CHAIN, CHAT, LOOP_LIMITS, RETRIEVAL, TOOL, Dialect, Limit, Rule, SpanName, When

GENKIT = Dialect(
    name="genkit", marker="genkit:metadata:subtype",
    roles={"flow": CHAIN, "agent": AGENT, "model": CHAT, "background-model": CHAT, "tool": TOOL, "tool.v2": TOOL,
           "embedder": RETRIEVAL, "retriever": RETRIEVAL, "indexer": RETRIEVAL, "reranker": RETRIEVAL},
    rules=(Rule(role=CHAIN, when=(When(key="genkit:type", equals=("util",)),
                                  When(key="genkit:name", equals=("generate",)))),),
    text={"agent": (SpanName(roles=(AGENT,)),), "model": (SpanName(roles=(CHAT,)),),
          "tool": (SpanName(roles=(TOOL,)),), "args": ("genkit:input",)},
    usage_json={"genkit:output": {
        "input_tokens": (("usage", "inputTokens"),), "output_tokens": (("usage", "outputTokens"),),
        "cache_read_tokens": (("usage", "cachedContentTokens"),),
        "reasoning_tokens": (("usage", "thoughtsTokens"),)}},
    error=(When(key="genkit:state", equals=("error",)),),
    offered=(),
    limits=(*LOOP_LIMITS, Limit(stop="max_steps", texts=("Exceeded maximum tool call iterations",))),
    where="firebase/genkit js/core/src/tracing/instrumentation.ts (genkit:* span attributes), js/ai generate")
