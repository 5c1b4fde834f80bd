"""MLflow tracing exported over OTLP: ``mlflow.spanType`` AGENT / LLM / CHAT_MODEL / TOOL / CHAIN; token usage
as JSON in ``mlflow.chat.tokenUsage``. MLflow writes attribute values as JSON, so text values come quoted."""
from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ._base import AGENT, CHAIN, CHAT, TOOL, Dialect, Fields
from ._fields import lower, text


def _unquote(spans: pd.DataFrame, out: Fields) -> None:
    for f in ("model", "provider", "error_type"):
        out[f] = pc.utf8_trim(pc.utf8_trim_whitespace(out[f]), '"')
    kind = lower(text(spans, ("mlflow.spanType",)))
    names = text(spans, ("name",))
    none = pa.scalar(None, pa.string())
    out["agent"] = pc.if_else(pc.fill_null(pc.equal(kind, "agent"), False), names, none)
    out["tool"] = pc.if_else(pc.fill_null(pc.equal(kind, "tool"), False), names, none)


MLFLOW = Dialect(
    name="mlflow", marker="mlflow.spanType",
    kinds={"agent": AGENT, "llm": CHAT, "chat_model": CHAT, "tool": TOOL, "chain": CHAIN},
    text={"model": ("mlflow.llm.model", "model"), "provider": ("mlflow.llm.provider",), "args": ("mlflow.spanInputs",),
          "error_type": ("error.type",)},
    numbers={},
    usage_json={"mlflow.chat.tokenUsage": {
        "input_tokens": (("input_tokens",),), "output_tokens": (("output_tokens",),),
        "cache_read_tokens": (("cache_read_input_tokens",),),
        "cache_creation_tokens": (("cache_creation_input_tokens",),)}},
    extra=_unquote, extra_columns=("mlflow.spanType",))
