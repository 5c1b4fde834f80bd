"""The Vercel AI SDK (JavaScript: ``ai`` + ``@ai-sdk/openai``) and its own OpenTelemetry spans, run by Node.

``js/vercel_ai/driver.mjs`` runs a ``ToolLoopAgent`` per run against the scripted server (the OpenAI provider's
default, the Responses API), with ``experimental_telemetry: {isEnabled: true}``; the Node SDK exports to the
receiver over OTLP/HTTP. Shapes: plain, http (a real ``@opentelemetry/instrumentation-http`` SERVER span),
two_runs, retries (the SDK's own ``maxRetries``), streaming (``agent.stream``: streamText), parallel,
tool_error_fatal (an app stop condition on a failed tool: the SDK feeds tool errors back by default),
turn_limit (``stopWhen: stepCountIs(3)``) and multi_agent (a translator agent called from a tool).
"""
from __future__ import annotations

import js_harness

NAME = "vercel_ai"
EXTRAS = ("retries", "retries_exhausted", "streaming", "parallel", "tool_error_fatal", "turn_limit", "multi_agent")
NOTES = (
    "the spans carry ai.operationId, gen_ai.system, gen_ai.request.model and gen_ai.usage.* but no "
    "gen_ai.operation.name and no span-kind attribute: a run is ai.generateText (ai.streamText), each model "
    "request a nested ai.generateText.doGenerate (ai.streamText.doStream), each tool an ai.toolCall",
    "a tool that throws is handed back to the model as a tool-error part (tool_error has two model calls); "
    "tool_error_fatal stops the loop with the app's stop condition on a failed tool: the run returns normally",
    "retries are the SDK's own (maxRetries, honouring the server's retry-after-ms): each attempt is a "
    "doGenerate span of its own under the same ai.generateText, the failed ones with status ERROR",
    "turn_limit: stopWhen stepCountIs(3) ends the loop without an error after the third step, whose reply asked "
    "for a tool that the SDK still ran",
    "model_error and retries_exhausted: generateText throws (a RetryError after retries), the outer span ends "
    "with status ERROR",
    "tokens: each doGenerate/doStream span has gen_ai.usage.input_tokens/output_tokens and ai.usage.* (with cache "
    "read and reasoning details); the outer ai.generateText/ai.streamText repeats the run's totals as ai.usage.* "
    "only (no gen_ai.usage.*)",
    "streaming: an ai.toolCall span is a child of the ai.streamText.doStream span whose reply asked for it (with "
    "generateText it is a sibling of ai.generateText.doGenerate); doStream spans carry ai.stream.firstChunk and "
    "ai.stream.finish events",
    "multi_agent: the translator's ai.generateText nests under the ai.toolCall of ask_translator; "
    "ai.telemetry.functionId names the agent ('assistant', 'translator')",
    "the SERVER span of the http shapes is @opentelemetry/instrumentation-http's, named 'GET'",
)


def main() -> None:
    js_harness.run_standard(NAME, EXTRAS, notes=NOTES)


if __name__ == "__main__":
    main()
