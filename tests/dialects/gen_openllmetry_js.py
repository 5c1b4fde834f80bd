"""OpenLLMetry for Node (``@traceloop/node-server-sdk``): a plain OpenAI-client tool loop, run by Node.

``js/openllmetry_js/driver.mjs`` runs ``js/openai_loop.mjs`` (the loop of ``openai_loop.py``, in JavaScript) per
run inside ``withWorkflow`` and ``withAgent``, each tool in ``withTool``; Traceloop's OpenAI instrumentation
traces the client. Traceloop starts the Node SDK itself and exports to the receiver (its ``baseUrl``); the HTTP
instrumentation of the http shapes traces through its provider. Shapes: plain, http, two_runs, retries (the
client's ``maxRetries``), streaming, parallel, tool_error_fatal (the loop re-raises), turn_limit (the loop's
``maxTurns: 3``) and multi_agent (a translator ``withAgent`` inside the ``ask_translator`` ``withTool``).

Every recent release of the SDK depends on ``@google-cloud/opentelemetry-cloud-trace-exporter`` ^3, whose newest
3.1 pulls ``gcp-metadata`` 9 (Node 22): package.json pins the exporter and its ``opentelemetry-resource-util`` to
3.0.0 (within the SDK's range, ``gcp-metadata`` 6), so that the whole tree runs on Node 20.
"""
from __future__ import annotations

import common
import js_harness
from common import PLAIN, SHAPE_OF, Script
from openai_loop import EXTRAS

NAME = "openllmetry_js"
NOTES = (
    "Traceloop's spans: 'support.workflow' (traceloop.span.kind workflow) over 'assistant.agent' (agent) over "
    "'openai.chat' spans (its OpenAI instrumentation, gen_ai.* attributes) and '<tool>.tool' spans (tool)",
    "a plain OpenAI-client loop: a failing tool's error text goes back to the model (tool_error); "
    "tool_error_fatal: the loop re-raises the tool's exception; turn_limit: the loop throws MaxTurnsExceeded "
    "after 3 model calls",
    "retries happen inside the OpenAI client's create(): one openai.chat span per logical call, the failed "
    "attempts are not in the spans",
    "withWorkflow/withAgent/withTool (0.27) end their span only when the wrapped function returns: the span of "
    "one that throws is never ended, so never exported, and the OpenAI instrumentation does not end a chat span "
    "whose request failed: tool_error and tool_error_fatal lose the charge_card span, model_error and "
    "retries_exhausted lose the failed chat span, and every run that raised loses its workflow and agent spans "
    "(its spans point at a parent that is not in the fixture). The truth still counts what was served and run.",
    "streaming: the OpenAI instrumentation ignores the stream's usage chunk; it estimates the tokens of a streamed "
    "reply with text (js-tiktoken: 33 in, 11 out for the answer) and records none for a reply with tool calls",
    "multi_agent: the translator's 'translator.agent' span nests under the 'ask_translator.tool' span",
    "the SERVER span of the http shapes is @opentelemetry/instrumentation-http's ('GET'), exported through "
    "Traceloop's span processor",
    "the Node SDK (0.27) reads no TRACELOOP_TELEMETRY (it has no telemetry of its own); it is set to false all "
    "the same; OTEL_NODE_RESOURCE_DETECTORS=none keeps host and process attributes out of the fixture",
)
ENV = {"TRACELOOP_TELEMETRY": "false", "TRACELOOP_SYNC_ENABLED": "false", "OTEL_NODE_RESOURCE_DETECTORS": "none"}


def main() -> None:
    script = Script({**common.standard_script(), **common.shape_script(), **common.extra_script(*EXTRAS)})
    plan = ([{"shape": "plain", "keys": [k]} for k in PLAIN]
            + [{"shape": "http", "keys": ["http"]}, {"shape": "two_runs", "keys": ["two-a", "two-b"]}]
            + [{"shape": SHAPE_OF[k], "keys": [k]} for k in EXTRAS])
    js_harness.run_fixture(NAME, script, plan, notes=NOTES, env=ENV)


if __name__ == "__main__":
    main()
