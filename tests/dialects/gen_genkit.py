"""Firebase Genkit (``genkit`` + ``@genkit-ai/compat-oai``'s OpenAI plugin) and its own OpenTelemetry spans, run by
Node.

``js/genkit/driver.mjs`` runs each run as a Genkit flow (``ai.defineFlow``) calling ``ai.generate`` with the
tools (Genkit's own tool loop), the OpenAI plugin pointed at the scripted server (Chat Completions). Genkit's own
OpenTelemetry start-up is turned off (``disableGenkitOTelInitialization``); its tracer is the global one, the Node
SDK of ``common.mjs`` exporting to the receiver. Shapes: plain, http, two_runs, retries (Genkit's ``retry`` model
middleware, ``maxRetries: 2``), streaming (``generateStream``), parallel, tool_error_fed_back (the tool catches its
exception and returns the message: Genkit ends the run on a tool's exception by default), turn_limit
(``maxTurns: 3``, raises) and multi_agent (a translator ``generate`` inside the ``ask_translator`` tool).
"""
from __future__ import annotations

import js_harness

NAME = "genkit"
EXTRAS = ("retries", "retries_exhausted", "streaming", "parallel", "tool_error_fed_back", "turn_limit", "multi_agent")
NOTES = (
    "Genkit's spans: the flow ('support', genkit:type action, genkit:metadata:subtype flow) over 'generate' "
    "(genkit:type util) over the model action ('openai/gpt-4o-mini', subtype model) and the tool actions "
    "(subtype tool); genkit:input / genkit:output hold JSON, genkit:state success or error",
    "a tool's exception ends the run (Genkit rethrows it: tool_error); tool_error_fed_back: the tool catches it and "
    "returns the message, so no span shows the failure",
    "retries: Genkit's retry middleware retries inside the model action: one model span per logical call, the "
    "failed attempts are not in the spans",
    "turn_limit: generate throws 'Exceeded maximum tool call iterations (3)' after the third reply asking for tools",
    "disableOTelRootSpanDetection() is called: by default Genkit starts a new trace at its outermost span, so a "
    "flow run inside an HTTP request would not be in the request's trace",
    "the OpenAI plugin records input and output tokens only (no cached or reasoning tokens)",
)


def main() -> None:
    js_harness.run_standard(NAME, EXTRAS, notes=NOTES)


if __name__ == "__main__":
    main()
