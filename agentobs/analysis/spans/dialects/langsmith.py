"""LangSmith's OpenTelemetry export: ``langsmith.span.kind`` chain / llm / tool, values in GenAI names."""
from __future__ import annotations

from ._table import CHAIN, CHAT, LOOP_LIMITS, RETRIEVAL, TOOL, Dialect
from .genai import NUMBERS, SESSION, TEXT

LANGSMITH = Dialect(name="langsmith", marker="langsmith.span.kind",
                    roles={"chain": CHAIN, "llm": CHAT, "tool": TOOL, "retriever": RETRIEVAL},
                    text=TEXT, numbers=NUMBERS, limits=LOOP_LIMITS, session=(*SESSION, "langsmith.metadata.session_id"),
                    where="langchain-ai/langsmith-sdk python/langsmith/_internal/otel/_otel_exporter.py")
