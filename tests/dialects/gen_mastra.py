"""Mastra agents (JavaScript: ``@mastra/core``) with Mastra's AI tracing exported over OpenTelemetry, run by Node.

``js/mastra/driver.mjs`` runs a Mastra ``Agent`` per run, its model Mastra's OpenAI-compatible config
(``{id: 'openai/<model>', url, apiKey}``) at the scripted server; ``@mastra/otel-exporter`` exports the AI tracing
spans to the receiver over OTLP/HTTP protobuf (Mastra's legacy OTel telemetry off); the Node SDK exports the
HTTP SERVER span (the tracer provider is not registered globally: Mastra 0.24's legacy telemetry would add its
own spans through it). Shapes: plain, http (the run joins the request's trace by ``tracingOptions``), two_runs,
retries (``modelSettings.maxRetries``), streaming (``agent.stream``), parallel, tool_error_fatal (an app
``stopWhen`` condition on a failed tool: Mastra feeds tool errors back by default), turn_limit (``maxSteps: 3``)
and multi_agent (a translator agent called from a tool).

Mastra 0.24.9 is the last release that runs on Node 20 (1.x needs Node 22.13); ``@mastra/otel-exporter`` 0.3.3 is
the release for it, with ``@opentelemetry/exporter-trace-otlp-proto`` 0.205 (its peer).
"""
from __future__ import annotations

import js_harness

NAME = "mastra"
EXTRAS = ("retries", "retries_exhausted", "streaming", "parallel", "tool_error_fatal", "turn_limit", "multi_agent")
NOTES = (
    "Mastra's AI tracing through @mastra/otel-exporter (scope @mastra/otel): per agent run an 'agent.<name>' span "
    "(gen_ai.operation.name agent.run, span kind SERVER), under it ONE 'chat <model>' span (operation chat, kind "
    "CLIENT) for the whole agent loop with the run's summed gen_ai.usage.*, and under that a 'step: N' span "
    "(operation model.step) per model request, with no model or usage of its own (the response id, model id, "
    "headers and body as attributes); tool.execute spans and 'chunk: ...' spans (model.chunk, kind CLIENT) "
    "under the steps",
    "model calls are the step spans, not the chat span: one chat span holds every request of the run",
    "a tool that throws is handed back to the model (as a tool-result holding the MastraError "
    "TOOL_EXECUTION_FAILED): tool_error has two model calls, the tool.execute span has status ERROR; "
    "tool_error_fatal ends the loop with the app's stopWhen condition on a failed tool: the run returns normally",
    "a failed model request (model_error, retries_exhausted) leaves no ERROR status anywhere: its step span is OK "
    "and holds a 'chunk: 'error'' span; the chat span's finish reason is 'error'; agent.generate throws and the "
    "agent span is never ended, so never exported: the chat span's parent is not in the fixture",
    "retries are the AI SDK's inside one step (modelSettings.maxRetries): the failed attempts are not in the spans",
    "turn_limit: maxSteps 3 ends the loop without an error after the third step, whose reply asked for a tool "
    "that Mastra still ran",
    "streaming: Mastra's OpenAI-compatible model does not ask the stream for usage (no stream_options), so no "
    "tokens were delivered; the chat span says gen_ai.usage.total_tokens 0",
    "multi_agent: the translator's agent span nests under the ask_translator tool.execute span (the tool passes "
    "its tracingContext to translator.generate)",
    "http: Mastra keeps its own trace ids; the run joins the request's trace through tracingOptions {traceId, "
    "parentSpanId} from the active OpenTelemetry span. The SERVER span is @opentelemetry/instrumentation-http's, "
    "named 'GET'",
)


def main() -> None:
    js_harness.run_standard(NAME, EXTRAS, notes=NOTES)


if __name__ == "__main__":
    main()
