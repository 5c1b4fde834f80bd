"""OpenInference for JavaScript (``@arizeai/openinference-instrumentation-openai``): a plain OpenAI-client tool
loop, run by Node.

``js/openinference_openai_js/driver.mjs`` runs ``js/openai_loop.mjs`` per run inside openinference-core's
``traceAgent`` (an AGENT span), each tool in ``traceTool`` (a TOOL span); the OpenAI instrumentation traces the
client (LLM spans). The Node SDK of ``common.mjs`` exports to the receiver. Shapes: plain, http, two_runs, retries
(the client's ``maxRetries``), streaming, parallel, tool_error_fatal (the loop re-raises), turn_limit (the loop's
``maxTurns: 3``) and multi_agent (a translator ``traceAgent`` inside the ``ask_translator`` ``traceTool``).
"""
from __future__ import annotations

import js_harness
from openai_loop import EXTRAS

NAME = "openinference_openai_js"
NOTES = (
    "OpenInference's spans: 'assistant' (openinference.span.kind AGENT, traceAgent) over 'OpenAI Chat "
    "Completions' (LLM, the OpenAI instrumentation: llm.model_name, llm.token_count.*) and the tools' TOOL spans "
    "(traceTool, the arguments in input.value)",
    "a plain OpenAI-client loop: a failing tool's error text goes back to the model (tool_error); "
    "tool_error_fatal: the loop re-raises the tool's exception; turn_limit: the loop throws MaxTurnsExceeded "
    "after 3 model calls",
    "retries happen inside the OpenAI client's create(): one LLM span per logical call, the failed attempts are "
    "not in the spans",
    "the instrumentation (4.2.7) ends a chat span only when create() resolves: a call that rejects (HTTP 500 "
    "after the client's retries) leaves no span, so model_error and retries_exhausted lose their failed call; the "
    "AGENT span of the run records the exception ('500 scripted server error')",
    "streaming: the span is ended from the stream's chunks without their usage: no token counts on a streamed call",
    "multi_agent: the translator's AGENT span nests under the 'ask_translator' TOOL span",
)


def main() -> None:
    js_harness.run_standard(NAME, EXTRAS, notes=NOTES)


if __name__ == "__main__":
    main()
