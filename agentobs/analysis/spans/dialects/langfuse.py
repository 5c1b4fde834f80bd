"""Langfuse's OpenTelemetry-based SDK (v3+): ``langfuse.observation.type`` agent / generation / tool / chain / span,
usage and cost as JSON (``langfuse.observation.usage_details``, ``cost_details``), failures as level ERROR."""
from __future__ import annotations

from ._table import AGENT, CHAIN, CHAT, LOOP_LIMITS, RETRIEVAL, TOOL, Dialect, SpanName, When

LANGFUSE = Dialect(
    name="langfuse", marker="langfuse.observation.type",
    roles={"agent": AGENT, "generation": CHAT, "tool": TOOL, "chain": CHAIN, "retriever": RETRIEVAL,
           "embedding": RETRIEVAL},
    text={"agent": (SpanName(roles=(AGENT,)),), "tool": (SpanName(roles=(TOOL,)),),
          "model": ("langfuse.observation.model.name",), "args": ("langfuse.observation.input",)},
    usage_json={
        "langfuse.observation.usage_details": {
            "input_tokens": (("input",), ("prompt_tokens",), ("input_tokens",)),
            "output_tokens": (("output",), ("completion_tokens",), ("output_tokens",)),
            "cache_read_tokens": (("prompt_tokens_details", "cached_tokens"), ("input_cached_tokens",),
                                  ("cache_read_input_tokens",), ("input_cache_read",)),
            "cache_creation_tokens": (("cache_creation_input_tokens",), ("input_cache_creation",)),
            "reasoning_tokens": (("completion_tokens_details", "reasoning_tokens"), ("output_reasoning_tokens",),
                                 ("output_reasoning",))},
        "langfuse.observation.cost_details": {"cost": (("total",),)}},
    error=(When(key="langfuse.observation.level", equals=("error",)),),
    session=("langfuse.session.id", "session.id"),
    limits=LOOP_LIMITS,
    where="langfuse packages/shared/src/server/otel/ObservationTypeMapper.ts")
