"""Strands Agents with its OpenAI model provider (``OpenAIModel``, the client at the scripted server), traced by
Strands' own OpenTelemetry spans (``StrandsTelemetry`` given our tracer provider).

Strands writes ``invoke_agent {name}`` (``gen_ai.usage.*`` totals of the invocation), one
``execute_event_loop_cycle`` per loop turn, ``chat`` per model call and ``execute_tool {name}``, at its default
semantic-convention version. ``OpenAIModel`` streams by default: the runs here set ``stream=False`` but in the
streaming run (``stream=True``; Strands asks for ``stream_options.include_usage``).

Shapes: plain, http, two_runs, retries (Strands' own ``ModelRetryStrategy``, told to retry a 5xx: by default it
retries throttling only; the OpenAI client's own retries are off in every run), streaming, parallel (concurrent tool
executor, Strands' default), tool_error_fatal (a failing tool's error goes back to the model by default; an
``AfterToolCallEvent`` hook calls ``agent.cancel(after_current_tools=True)`` when a tool failed), turn_limit
(``limits={"turns": 3}``, the invocation's own cap: returns with ``stop_reason="limit_turns"``) and multi_agent
(Strands' "agents as tools": a ``@tool`` that runs the translator agent), and a sub_agent run ``swarm``
(a ``Swarm`` of triage and billing: a handoff with the swarm's ``handoff_to_agent`` tool).
"""
from __future__ import annotations

import warnings
from typing import Any

import common
from common import PLAIN, SHAPE_OF, HttpApp, MemoryCapture, Recorder, Reply, Script, ScriptedServer, call, prompt

NAME = "strands"
PACKAGES = ("strands-agents", "openai", "opentelemetry-sdk", "opentelemetry-instrumentation-threading",
            "opentelemetry-instrumentation-wsgi")
EXTRAS = ("retries", "retries_exhausted", "streaming", "parallel", "tool_error_fatal", "turn_limit", "multi_agent")
NOTES = (
    "Strands' own spans: invoke_agent > execute_event_loop_cycle (one per loop turn) > chat / execute_tool; the "
    "invoke_agent span repeats the invocation's token totals (gen_ai.usage.*) that the chat spans carry one by one",
    "a failing tool's exception becomes an error tool result that goes back to the model (tool_error); "
    "tool_error_fatal: an AfterToolCallEvent hook calls agent.cancel(after_current_tools=True) after a failed tool, "
    "and the invocation returns with stop_reason 'cancelled' (no exception)",
    "retries: Strands' ModelRetryStrategy(max_attempts=3, initial_delay=0) with is_retryable extended to the OpenAI "
    "client's InternalServerError (Strands retries throttling only by default); the OpenAI client's own retries are "
    "off (max_retries=0) in every run",
    f"turn_limit: limits={{'turns': {common.TURN_LIMIT}}}: the agent returns with stop_reason 'limit_turns' before "
    "the model call that would start a fourth turn",
    "multi_agent: agents as tools: the ask_translator @tool invokes the translator Agent",
    "swarm (shape sub_agent): a Swarm of triage and billing; triage calls the swarm's handoff_to_agent tool (an "
    "execute_tool span; the truth's tool_calls counts the application's tools only, sub_agents.handoffs the handoff) "
    "and ends its turn with a message (its loop goes on after the handoff tool); billing then runs",
)


def swarm_script() -> dict[str, list[Reply]]:
    return {"swarm": [Reply(tool_calls=[call("handoff_to_agent", agent_name="billing",
                                             message="Billing question about order C-3.")],
                            prompt_tokens=130, completion_tokens=16),
                      Reply(content="Handing you over to billing.", prompt_tokens=160, completion_tokens=7),
                      Reply(tool_calls=[call("lookup_order", order_id="C-3")], prompt_tokens=180, completion_tokens=15),
                      Reply(content="Billing: order C-3 is delivered.", prompt_tokens=220, completion_tokens=10)]}


def main() -> None:
    common.quiet_environment()
    warnings.simplefilter("ignore")
    cap = MemoryCapture(f"dialect-{NAME}")
    import openai
    from strands import Agent, tool
    from strands.agent.agent import ModelRetryStrategy
    from strands.hooks import AfterToolCallEvent, BeforeInvocationEvent, HookProvider, HookRegistry
    from strands.models.openai import OpenAIModel
    from strands.multiagent import Swarm
    from strands.telemetry import StrandsTelemetry
    StrandsTelemetry(tracer_provider=cap.provider)

    script = Script({**common.standard_script(), **common.shape_script(), **common.extra_script(*EXTRAS),
                     **swarm_script()})
    rec = Recorder(NAME, cap, script, packages=PACKAGES, notes=NOTES)
    tools = [tool(f) for f in common.make_tools(rec).values()]
    system = "[agent:assistant] You answer with the tools."

    class RetryServerErrors(ModelRetryStrategy):
        """Strands' retry strategy, also retrying the HTTP 5xx answers the OpenAI client raises."""

        def is_retryable(self, exception: Exception) -> bool:
            return isinstance(exception, openai.InternalServerError) or super().is_retryable(exception)

    class StopAfterToolError(HookProvider):
        """Ends the agent loop after a tool failed (the other run of the tool_error shape)."""

        def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
            registry.add_callback(AfterToolCallEvent, self.after_tool)

        def after_tool(self, event: AfterToolCallEvent) -> None:
            result = event.result
            if isinstance(result, Exception) or (isinstance(result, dict) and result.get("status") == "error"):
                event.agent.cancel(after_current_tools=True)

    class LogStart(HookProvider):
        """Logs the agent's start as a sub-agent of the run."""

        def __init__(self, how: str):
            self.how = how

        def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
            registry.add_callback(BeforeInvocationEvent, lambda event: rec.sub_agent(event.agent.name, self.how))

    with ScriptedServer(script) as srv:
        def model(name: str = "gpt-4o-mini", stream: bool = False) -> OpenAIModel:
            client = {"api_key": common.DUMMY_KEY, "base_url": srv.base_url, "max_retries": 0, "timeout": 30}
            return OpenAIModel(client_args=client, model_id=name, params={"temperature": 0}, stream=stream)

        def agent(key: str, fns: list | None = None, **kw: Any) -> Agent:
            return Agent(name="assistant", model=model(stream=key == "streaming"), tools=fns or tools,
                         system_prompt=system, callback_handler=None, **kw)

        @tool
        def ask_translator(text: str) -> str:
            """Ask the translator agent."""
            rec.tool("ask_translator", {"text": text})
            rec.sub_agent("translator")
            translator = Agent(name="translator", model=model("gpt-4o"), callback_handler=None,
                               system_prompt="[agent:translator] You translate to French.")
            return str(translator(text))

        special = {
            "retries": {"retry_strategy": RetryServerErrors(max_attempts=common.RETRIES + 1, initial_delay=0,
                                                            max_delay=0)},
            "tool_error_fatal": {"hooks": [StopAfterToolError()]},
            "multi_agent": {"fns": [*tools, ask_translator]},
        }
        special["retries_exhausted"] = special["retries"]

        def run(key: str) -> None:
            a = agent(key, **special.get(key, {}))
            limits = {"turns": common.TURN_LIMIT} if key == "turn_limit" else None
            result = a(prompt(key), limits=limits)
            if result.stop_reason not in ("end_turn",):
                rec.notes.append(f"{key}: the agent returned with stop_reason {result.stop_reason!r}")

        for key in PLAIN:
            with rec.run(key, "plain"):
                run(key)
        with HttpApp(rec, run, cap.provider) as app:
            app.get("/run", ["http"])
            app.get("/two", ["two-a", "two-b"])
        def run_swarm(key: str) -> None:
            triage = Agent(name="triage", model=model(), callback_handler=None, description="Routes the customer.",
                           system_prompt="[agent:triage] You route the customer.")
            billing = Agent(name="billing", model=model(), tools=tools, callback_handler=None,
                            description="Handles billing.", system_prompt="[agent:billing] You handle billing.",
                            hooks=[LogStart("handoff")])
            result = Swarm([triage, billing], entry_point=triage, max_handoffs=4)(prompt(key, "My order C-3."))
            rec.notes.append(f"{key}: the swarm ended with status {result.status.value!r}")

        with rec.run("swarm", "sub_agent"):
            run_swarm("swarm")
        for key in EXTRAS:
            with rec.run(key, SHAPE_OF[key]):
                run(key)
    rec.write()


if __name__ == "__main__":
    main()
