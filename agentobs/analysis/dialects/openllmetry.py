"""OpenLLMetry / Traceloop: ``traceloop.span.kind`` agent / workflow / task / tool on the decorated functions,
``llm.request.type`` on the model calls; tokens as ``gen_ai.usage.prompt_tokens`` / ``completion_tokens`` (0.4x
and before) or the current GenAI names, ``llm.usage.total_tokens``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ._base import AGENT, CHAIN, CHAT, OTHER, TOOL, Dialect
from ._fields import code_of, text
from .genai import NUMBERS

_KINDS = {"agent": AGENT, "workflow": CHAIN, "task": CHAIN, "tool": TOOL}


def _claim(spans: pd.DataFrame) -> np.ndarray | None:
    if "traceloop.span.kind" not in spans.columns and "llm.request.type" not in spans.columns:
        return None
    out = code_of(text(spans, ("traceloop.span.kind",)), _KINDS, OTHER)
    req = code_of(text(spans, ("llm.request.type",)), {"chat": CHAT, "completion": CHAT}, OTHER)
    llm = (req >= 0) & (out < 0)
    out[llm] = req[llm]
    return out


OPENLLMETRY = Dialect(
    name="openllmetry", marker=None, kinds={},
    text={"agent": ("traceloop.entity.name",), "model": ("gen_ai.request.model", "gen_ai.response.model"),
          "provider": ("gen_ai.provider.name", "gen_ai.system"), "tool": ("traceloop.entity.name",),
          "args": ("traceloop.entity.input",), "error_type": ("error.type",),
          "finish": ("gen_ai.completion.0.finish_reason",)},
    numbers={**NUMBERS, "input_tokens": (*NUMBERS["input_tokens"], "llm.usage.prompt_tokens"),
             "output_tokens": (*NUMBERS["output_tokens"], "llm.usage.completion_tokens")},
    claim_rows=_claim, extra_columns=("traceloop.span.kind", "llm.request.type"))
