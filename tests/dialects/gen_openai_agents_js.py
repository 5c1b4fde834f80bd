"""The OpenAI Agents SDK for JavaScript (``@openai/agents``) traced by OpenInference, run by Node.

``js/openai_agents_js/driver.mjs`` runs an ``Agent`` per run on the SDK's default Responses API, its OpenAI client
at the scripted server; ``@arizeai/openinference-instrumentation-openai-agents`` is registered as the SDK's only
trace processor (its default exporter to OpenAI is replaced), and the Node SDK exports to the receiver over
OTLP/HTTP. Shapes: plain, http (a real ``@opentelemetry/instrumentation-http`` SERVER span), two_runs, a handoff
(``sub-handoff``: triage hands off to billing, shape sub_agent), retries (the SDK's runner-managed
``modelSettings.retry``), streaming (``run(..., {stream: true})``), parallel, tool_error_fatal (``errorFunction:
null``: the SDK feeds tool errors back by default), turn_limit (``maxTurns: 3``) and multi_agent (the translator
agent as a tool: ``Agent.asTool``).
"""
from __future__ import annotations

import common
import js_harness
from common import PLAIN, SHAPE_OF, Script
from gen_openai_agents import sub_scripts

NAME = "openai_agents_js"
EXTRAS = ("retries", "retries_exhausted", "streaming", "parallel", "tool_error_fatal", "turn_limit", "multi_agent")
NOTES = (
    "OpenInference's processor for the SDK's trace events: a root span per SDK trace (AGENT, named after the trace: "
    "'Agent workflow') over the SDK's own task span of the same name (CHAIN), an AGENT span per agent, a CHAIN "
    "span per turn ('turn'), an LLM span per Responses API call ('response'), a TOOL span per function tool and "
    "per handoff ('handoff to billing', tool.name handoff_to_billing)",
    "a run that raises (model_error, retries_exhausted, tool_error_fatal, turn_limit) never ends the SDK trace: its "
    "root AGENT span is never exported, and the 'Agent workflow' CHAIN span points at a parent that is not in the "
    "fixture",
    "retries are the SDK's runner-managed ones (modelSettings.retry with retryPolicies.httpStatus; the OpenAI "
    "client's own are off): each attempt is a 'response' LLM span of its own under the same turn, the failed ones "
    "with status ERROR and no model or tokens",
    "a tool that throws is handed back to the model (the tool's default errorFunction), so tool_error has two "
    "model calls; tool_error_fatal sets errorFunction: null and the run raises",
    "a handoff is a model tool call that runs no tool: OpenInference gives it a TOOL span; the truth's tool_calls "
    "counts executed tools only (sub_agents.handoffs counts handoffs)",
    "multi_agent: Agent.asTool runs the translator as a nested agent run inside the ask_translator function tool: "
    "its 'Agent workflow' task span (no root span of its own) nests under the ask_translator TOOL span",
    "turn_limit: maxTurns 3 raises MaxTurnsExceededError",
    "the SERVER span of the http shapes is @opentelemetry/instrumentation-http's, named 'GET'",
)


def main() -> None:
    script = Script({**common.standard_script(), **common.shape_script(),
                     "sub-handoff": sub_scripts()["sub-handoff"], **common.extra_script(*EXTRAS)})
    plan = ([{"shape": "plain", "keys": [k]} for k in PLAIN]
            + [{"shape": "http", "keys": ["http"]}, {"shape": "two_runs", "keys": ["two-a", "two-b"]},
               {"shape": "sub_agent", "keys": ["sub-handoff"]}]
            + [{"shape": SHAPE_OF[k], "keys": [k]} for k in EXTRAS])
    # the SDK's tracing stays on (the OpenInference processor receives its events); its exporter to OpenAI is gone
    js_harness.run_fixture(NAME, script, plan, notes=NOTES, env={"OPENAI_AGENTS_DISABLE_TRACING": "0"})


if __name__ == "__main__":
    main()
