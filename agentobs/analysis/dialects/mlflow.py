"""MLflow tracing exported over OTLP: ``mlflow.spanType`` AGENT / LLM / CHAT_MODEL / TOOL / CHAIN; token usage
as JSON in ``mlflow.chat.tokenUsage``. MLflow writes attribute values as JSON, so text values come quoted."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ._base import AGENT, CHAIN, CHAT, TOOL, Dialect, Fields
from ._fields import txt


def _unquote(spans: pd.DataFrame, out: Fields) -> None:
    for f in ("model", "provider", "error_type"):
        s = pd.Series(out[f], dtype="string").str.strip().str.strip('"')
        out[f] = s.astype(object).where(s.notna(), None).to_numpy(dtype=object)
    kind = pd.Series(txt(spans, "mlflow.spanType"), dtype="string").str.strip('"').str.upper()
    named = kind.isin(["AGENT", "TOOL"]).fillna(False).to_numpy(dtype=bool)
    names = txt(spans, "name")
    out["agent"] = np.where(named & (kind == "AGENT").fillna(False).to_numpy(bool), names, None)
    out["tool"] = np.where(named & (kind == "TOOL").fillna(False).to_numpy(bool), names, None)


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
