"""LangChain.js agents (``langchain`` 1.x ``createAgent`` + ``@langchain/openai``) traced by OpenLLMetry for Node
(``@traceloop/node-server-sdk``: its LangChain and OpenAI instrumentations), run by Node.

``js/langchain_openllmetry_js/driver.mjs`` runs a ``createAgent`` per run against the scripted server. Traceloop
starts the Node SDK itself and exports to the receiver; the HTTP instrumentation of the http shapes traces through
its provider. Shapes: plain, http, two_runs, retries (ChatOpenAI's ``maxRetries``: LangChain's own retries),
parallel, tool_error_fatal (``toolErrorMiddleware`` whose handler lets the error propagate: createAgent
feeds tool errors back by default), turn_limit (``modelCallLimitMiddleware({runLimit: 3})``, which ends the run
without an error) and multi_agent (a translator agent invoked from a tool). No streaming shape: with both
instrumentations on, a streamed ChatOpenAI call inside the agent throws ``TypeError: text.match is not a function``
(the run fails; no fixture of a framework crash).
"""
from __future__ import annotations

import common
import js_harness
from common import Script

NAME = "langchain_openllmetry_js"
EXTRAS = ("retries", "retries_exhausted", "parallel", "tool_error_fatal", "turn_limit", "multi_agent")
NOTES = (
    "OpenLLMetry's spans: every LangChain run as a 'workflow <class>' span (traceloop.span.kind workflow: the "
    "agent's CompiledStateGraph, each RunnableSequence / RunnableLambda node), 'chat <model>' (gen_ai.*) and "
    "'execute_tool DynamicStructuredTool' (task, the tool's class as its name, its input as the arguments); the "
    "callback handler starts each span in the active context and never makes one active: all of them are "
    "siblings under the app's withWorkflow span, and each model call has two sibling spans (the LangChain "
    "handler's and the OpenAI instrumentation's, with the same usage)",
    "withWorkflow (0.27) never ends the span of a function that throws: the runs that raised lose their root",
    "retries: LangChain's AsyncCaller retries inside the handler's chat span; the OpenAI instrumentation never "
    "ends the span of a failed request: the failed attempts are not in the spans",
    "multi_agent: the translator's spans are siblings of the assistant's (no nesting): no span tells it apart",
    "createAgent feeds a tool's exception back to the model by default (tool_error); tool_error_fatal: "
    "toolErrorMiddleware whose onError returns nothing, so the error propagates and ends the run",
    "turn_limit: modelCallLimitMiddleware({runLimit: 3}) ends the run after the third model call (its default "
    "exit, 'end': no error, no fourth request)",
)
ENV = {"TRACELOOP_TELEMETRY": "false", "TRACELOOP_SYNC_ENABLED": "false", "OTEL_NODE_RESOURCE_DETECTORS": "none",
       "LANGCHAIN_CALLBACKS_BACKGROUND": "false", "LANGSMITH_TRACING": "false", "LANGCHAIN_TRACING_V2": "false"}


def main() -> None:
    script = Script({**common.standard_script(), **common.shape_script(), **common.extra_script(*EXTRAS)})
    plan = js_harness.standard_plan(EXTRAS)
    js_harness.run_fixture(NAME, script, plan, notes=NOTES, env=ENV)


if __name__ == "__main__":
    main()
