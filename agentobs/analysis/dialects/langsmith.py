"""LangSmith's OpenTelemetry export: ``langsmith.span.kind`` chain / llm / tool, values in GenAI names."""
from __future__ import annotations

from ._base import CHAIN, CHAT, TOOL, Dialect
from .genai import NUMBERS, TEXT

LANGSMITH = Dialect(name="langsmith", marker="langsmith.span.kind",
                    kinds={"chain": CHAIN, "llm": CHAT, "tool": TOOL}, text=TEXT, numbers=NUMBERS)
