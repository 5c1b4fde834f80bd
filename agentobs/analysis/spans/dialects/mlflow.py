"""MLflow tracing exported over OTLP: ``mlflow.spanType`` AGENT / LLM / CHAT_MODEL / TOOL / CHAIN; token usage
as JSON in ``mlflow.chat.tokenUsage``. MLflow writes attribute values as JSON, so text values come quoted."""
from __future__ import annotations

from ._table import AGENT, CHAIN, CHAT, LOOP_LIMITS, RETRIEVAL, TOOL, Dialect, SpanName

MLFLOW = Dialect(
    name="mlflow", marker="mlflow.spanType", quoted=True,
    roles={"agent": AGENT, "llm": CHAT, "chat_model": CHAT, "tool": TOOL, "chain": CHAIN, "retriever": RETRIEVAL,
           "embedding": RETRIEVAL, "reranker": RETRIEVAL},
    text={"agent": (SpanName(roles=(AGENT,)),), "tool": (SpanName(roles=(TOOL,)),),
          "model": ("mlflow.llm.model", "model"), "provider": ("mlflow.llm.provider",), "args": ("mlflow.spanInputs",),
          "error_type": ("error.type",)},
    usage_json={"mlflow.chat.tokenUsage": {
        "input_tokens": (("input_tokens",),), "output_tokens": (("output_tokens",),),
        "cache_read_tokens": (("cache_read_input_tokens",),),
        "cache_creation_tokens": (("cache_creation_input_tokens",),)}},
    session=("mlflow.trace.session",),
    limits=LOOP_LIMITS,
    where="MLflow docs, OpenTelemetry attribute mapping")
