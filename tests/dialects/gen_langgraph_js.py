"""LangGraph.js (JavaScript: ``@langchain/langgraph`` + ``@langchain/openai``) traced by OpenInference, run by Node.

``js/langgraph_js/driver.mjs`` runs ``createReactAgent`` per run with ChatOpenAI on Chat Completions at the
scripted server, traced by ``@arizeai/openinference-instrumentation-langchain`` (which patches
``@langchain/core/callbacks/manager``); the Node SDK exports to the receiver over OTLP/HTTP. Shapes: plain, http
(a real ``@opentelemetry/instrumentation-http`` SERVER span), two_runs, retries (ChatOpenAI ``maxRetries``),
streaming (``streaming: true`` and ``agent.stream``), parallel, tool_error_fatal (``ToolNode`` with
``handleToolErrors: false``: LangGraph.js feeds tool errors back by default), turn_limit (``recursionLimit: 3``)
and multi_agent (a translator ReAct agent invoked from a tool).
"""
from __future__ import annotations

import common
import js_harness
from common import Script

NAME = "langgraph_js"
EXTRAS = ("retries", "retries_exhausted", "streaming", "parallel", "tool_error_fatal", "turn_limit", "multi_agent")
NOTES = (
    "OpenInference's LangChain.js spans: openinference.span.kind CHAIN for the graph (named after the agent: "
    "'assistant') and each graph node ('agent', 'tools'), LLM for ChatOpenAI, TOOL per tool",
    "a tool that throws is handed back to the model: the JS ToolNode's handleToolErrors defaults to true (the "
    "Python one does not), so tool_error has two model calls; tool_error_fatal passes ToolNode(tools, "
    "{handleToolErrors: false}) and the graph raises",
    "retries are LangChain's own (ChatOpenAI maxRetries through its AsyncCaller, the OpenAI client has none): "
    "one LLM span per logical call, the failed attempts are not in the spans",
    f"turn_limit: recursionLimit {common.TURN_LIMIT} (graph supersteps: agent, tools, agent); the graph raises "
    "GraphRecursionError",
    "multi_agent: the translator is a second createReactAgent invoked inside the ask_translator tool",
    "LANGCHAIN_CALLBACKS_BACKGROUND=false, so that every span has ended when invoke returns",
    "the SERVER span of the http shapes is @opentelemetry/instrumentation-http's, named 'GET'",
)

# callbacks (and so the spans) awaited, not backgrounded: every span of a run has ended when invoke returns
ENV = {"LANGCHAIN_CALLBACKS_BACKGROUND": "false", "LANGSMITH_TRACING": "false", "LANGCHAIN_TRACING_V2": "false"}


def main() -> None:
    script = Script({**common.standard_script(), **common.shape_script(), **common.extra_script(*EXTRAS)})
    plan = js_harness.standard_plan(EXTRAS)
    js_harness.run_fixture(NAME, script, plan, notes=NOTES, env=ENV)


if __name__ == "__main__":
    main()
