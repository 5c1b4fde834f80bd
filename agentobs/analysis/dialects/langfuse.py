"""Langfuse's OpenTelemetry-based SDK (v3+): ``langfuse.observation.type`` agent / generation / tool / chain / span,
usage and cost as JSON (``langfuse.observation.usage_details``, ``cost_details``), failures as level ERROR."""
from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ._base import AGENT, CHAIN, CHAT, TOOL, Dialect, Fields
from ._fields import json_numbers, lower, prefer, text

_TYPE = "langfuse.observation.type"


def _names_and_cost(spans: pd.DataFrame, out: Fields) -> None:
    kind = lower(text(spans, (_TYPE,)))
    names = text(spans, ("name",))
    none = pa.scalar(None, pa.string())
    out["agent"] = pc.if_else(pc.fill_null(pc.equal(kind, "agent"), False), names, none)
    out["tool"] = pc.if_else(pc.fill_null(pc.equal(kind, "tool"), False), names, none)
    cost = json_numbers(text(spans, ("langfuse.observation.cost_details",)), {"cost": (("total",),)})["cost"]
    out["cost"] = prefer(out["cost"], cost)
    level = pc.utf8_upper(text(spans, ("langfuse.observation.level",)))
    out["error_flag"] = pc.fill_null(pc.equal(level, "ERROR"), False).to_numpy(zero_copy_only=False)


LANGFUSE = Dialect(
    name="langfuse", marker=_TYPE,
    kinds={"agent": AGENT, "generation": CHAT, "tool": TOOL, "chain": CHAIN},
    text={"model": ("langfuse.observation.model.name",), "args": ("langfuse.observation.input",)},
    numbers={"cost": ()},
    usage_json={"langfuse.observation.usage_details": {
        "input_tokens": (("input",), ("prompt_tokens",), ("input_tokens",)),
        "output_tokens": (("output",), ("completion_tokens",), ("output_tokens",)),
        "cache_read_tokens": (("prompt_tokens_details", "cached_tokens"), ("input_cached_tokens",),
                              ("cache_read_input_tokens",), ("input_cache_read",)),
        "cache_creation_tokens": (("cache_creation_input_tokens",), ("input_cache_creation",)),
        "reasoning_tokens": (("completion_tokens_details", "reasoning_tokens"), ("output_reasoning_tokens",),
                             ("output_reasoning",))}},
    extra=_names_and_cost,
    extra_columns=(_TYPE, "langfuse.observation.cost_details", "langfuse.observation.level"))
