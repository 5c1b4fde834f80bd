"""Langfuse's OpenTelemetry-based SDK (v3+): ``langfuse.observation.type`` agent / generation / tool / chain / span,
usage and cost as JSON (``langfuse.observation.usage_details``, ``cost_details``), failures as level ERROR."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ._base import AGENT, CHAIN, CHAT, TOOL, Dialect, Fields
from ._fields import json_numbers, lower, txt

_TYPE = "langfuse.observation.type"


def _names_and_cost(spans: pd.DataFrame, out: Fields) -> None:
    kind = lower(txt(spans, _TYPE))
    names = txt(spans, "name")
    out["agent"] = np.where(kind == "agent", names, None)
    out["tool"] = np.where(kind == "tool", names, None)
    if "langfuse.observation.cost_details" in spans.columns:
        cost = json_numbers(txt(spans, "langfuse.observation.cost_details"), {"cost": (("total",),)})["cost"]
        out["cost"] = np.where(np.isnan(out["cost"]), cost, out["cost"])
    level = pd.Series(txt(spans, "langfuse.observation.level"), dtype="string").str.upper()
    out["error_flag"] = (level == "ERROR").fillna(False).to_numpy(dtype=bool)


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
