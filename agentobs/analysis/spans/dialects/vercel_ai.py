"""The Vercel AI SDK's telemetry (``experimental_telemetry``): ``ai.operationId`` names what a span is, and no
``gen_ai.operation.name`` is written. ``ai.generateText`` / ``ai.streamText`` (and the object variants) run the
multi-step loop; each model request is an ``ai.*.doGenerate`` / ``doStream`` span carrying ``gen_ai.system``,
``gen_ai.request.model`` and ``gen_ai.usage.*``; tools run in ``ai.toolCall`` spans. The outer span repeats the
loop's total usage (``ai.usage.*``): a total, never added to the calls'.
"""
from __future__ import annotations

from ._table import AGENT, CHAT, RETRIEVAL, TOOL, Dialect

VERCEL_AI = Dialect(
    name="vercel_ai", marker="ai.operationId",
    roles={"ai.generatetext": AGENT, "ai.streamtext": AGENT, "ai.generateobject": AGENT, "ai.streamobject": AGENT,
           "ai.generatetext.dogenerate": CHAT, "ai.streamtext.dostream": CHAT, "ai.generateobject.dogenerate": CHAT,
           "ai.streamobject.dostream": CHAT, "ai.toolcall": TOOL, "ai.embed": RETRIEVAL, "ai.embedmany": RETRIEVAL,
           "ai.embed.doembed": RETRIEVAL, "ai.embedmany.doembed": RETRIEVAL},
    text={"agent": ("ai.telemetry.functionId",), "model": ("gen_ai.request.model", "ai.model.id"),
          "provider": ("gen_ai.system", "ai.model.provider"), "tool": ("ai.toolCall.name",),
          "args": ("ai.toolCall.args", "ai.toolCall.input"), "error_type": ("error.type", "exception.type"),
          "finish": ("gen_ai.response.finish_reasons", "ai.response.finishReason")},
    numbers={"input_tokens": ("gen_ai.usage.input_tokens", "ai.usage.promptTokens", "ai.usage.inputTokens"),
             "output_tokens": ("gen_ai.usage.output_tokens", "ai.usage.completionTokens", "ai.usage.outputTokens"),
             "cache_read_tokens": ("ai.usage.cachedInputTokens",),
             "reasoning_tokens": ("ai.usage.reasoningTokens",)},
    session=("ai.telemetry.metadata.sessionId",), offered=("ai.prompt.tools",),
    where="vercel/ai packages/ai/core/telemetry (the SDK's telemetry docs: ai.operationId, ai.usage.*)")
