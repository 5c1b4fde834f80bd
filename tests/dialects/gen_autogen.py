"""AutoGen AgentChat (AssistantAgent, RoundRobinGroupChat, AgentTool) with OpenAIChatCompletionClient pointed at the
scripted server, traced the way AutoGen's tracing guide sets it up.

AutoGen's own spans: autogen-core's ``invoke_agent {name}`` / ``create_agent {name}`` / ``execute_tool {name}``
(GenAI conventions, ``gen_ai.system`` "autogen") and, for teams, the agent runtime's messaging spans (``autogen
send|publish|process|create|ack ...``: the runtime takes the global tracer provider). Its model client emits no span:
the guide pairs AutoGen with OpenLLMetry's ``opentelemetry-instrumentation-openai`` (``openai.chat`` spans), and so
does this driver. As in the guide, each run is an application span (``run_agent`` / ``run_team``) inside which the
agents are created and run: AutoGen writes a ``create_agent`` span when an agent is constructed, and the runtime's
spans of a team join the run's trace only through the context current when the team starts.

Shapes: plain, http, two_runs, retries (the client's ``max_retries``), streaming (``model_client_stream=True`` with
``stream_options.include_usage``), parallel (tools run concurrently), tool_error_fatal (AssistantAgent's default
``max_tool_iterations=1``: the agent returns the tool results, the error included, without another model call),
turn_limit (a RoundRobinGroupChat of the assistant with ``max_turns=3``), multi_agent (a RoundRobinGroupChat of the
assistant and the translator ended by ``TextMentionTermination("TERMINATE")``) and a sub_agent run ``agent_tool``
(the translator wrapped in ``AgentTool``, AutoGen's agent-as-a-tool). The plain runs' agent has
``max_tool_iterations=10`` (the ``tools`` script needs three model calls); a failing tool's error goes back to the
model (the workbench turns the exception into an error result).
"""
from __future__ import annotations

import asyncio
import warnings
from typing import Any

import common
from common import PLAIN, SHAPE_OF, HttpApp, MemoryCapture, Recorder, Reply, Script, ScriptedServer, call, prompt

NAME = "autogen"
PACKAGES = ("autogen-agentchat", "autogen-core", "autogen-ext", "opentelemetry-instrumentation-openai",
            "opentelemetry-semantic-conventions-ai", "openai", "opentelemetry-sdk",
            "opentelemetry-instrumentation-wsgi")
EXTRAS = ("retries", "retries_exhausted", "streaming", "parallel", "tool_error_fatal", "turn_limit", "multi_agent")
ITERATIONS = 10
NOTES = (
    "spans: autogen-core's invoke_agent/create_agent/execute_tool (gen_ai.system autogen), the agent runtime's "
    "messaging spans for teams, and openai.chat from OpenLLMetry's OpenAI instrumentation (AutoGen's tracing guide "
    "pairs it: AutoGen's OpenAIChatCompletionClient emits no span)",
    "each run is an application span (run_agent / run_team, as in AutoGen's tracing guide) holding a create_agent "
    "span per agent constructed and the agent's invoke_agent span (single agent) or the runtime's spans (team)",
    f"the plain runs' AssistantAgent has max_tool_iterations={ITERATIONS} and reflect_on_tool_use=False; a failing "
    "tool's exception becomes an error result that goes back to the model (tool_error)",
    "tool_error_fatal: AssistantAgent's default max_tool_iterations=1: the agent answers with a "
    "ToolCallSummaryMessage holding the tool's error and makes no other model call; the run returns normally",
    "retries happen inside the OpenAI client (max_retries=2): one openai.chat span per logical call",
    "streaming: model_client_stream=True, stream_options={'include_usage': True} on the client",
    f"turn_limit: RoundRobinGroupChat([assistant], max_turns={common.TURN_LIMIT}): one model call and one tool per "
    "turn (max_tool_iterations=1); the team stops with 'Maximum number of turns 3 reached.' (returns normally)",
    "multi_agent: RoundRobinGroupChat([assistant, translator], TextMentionTermination('TERMINATE')): the assistant "
    "calls get_weather and answers, the translator answers with TERMINATE; each agent turn is an invoke_agent span "
    "under the runtime's process span; the translator is the run's sub-agent",
    "agent_tool (shape sub_agent): the assistant calls AgentTool(translator) (tool name 'translator'); the "
    "translator's invoke_agent span is under the execute_tool span",
)


def team_scripts() -> dict[str, list[Reply]]:
    return {
        "multi_agent": [Reply(tool_calls=[call("get_weather", city="Paris")], prompt_tokens=125, completion_tokens=18),
                        Reply(content="Sunny in Paris.", prompt_tokens=160, completion_tokens=6),
                        Reply(content="Il fait beau a Paris. TERMINATE", model="gpt-4o-2024-08-06", prompt_tokens=90,
                              completion_tokens=9)],
        "agent_tool": [Reply(tool_calls=[call("translator", task="[run:agent_tool] Translate 'good morning'")],
                             prompt_tokens=125, completion_tokens=20),
                       Reply(content="bonjour", model="gpt-4o-2024-08-06", prompt_tokens=40, completion_tokens=3),
                       Reply(content="In French: bonjour.", prompt_tokens=170, completion_tokens=8)],
    }


def main() -> None:
    common.quiet_environment()
    warnings.simplefilter("ignore")
    cap = MemoryCapture(f"dialect-{NAME}")
    from opentelemetry import trace
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor
    OpenAIInstrumentor().instrument(tracer_provider=cap.provider)

    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.conditions import TextMentionTermination
    from autogen_agentchat.teams import RoundRobinGroupChat
    from autogen_agentchat.tools import AgentTool
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    script = Script({**common.standard_script(), **common.shape_script(), **common.extra_script(*EXTRAS),
                     **team_scripts()})
    rec = Recorder(NAME, cap, script, packages=PACKAGES, notes=NOTES)
    tools = list(common.make_tools(rec).values())
    tracer = trace.get_tracer("autogen-fixture-app")
    system = "[agent:assistant] You answer with the tools."

    class LoggedAgentTool(AgentTool):
        """AgentTool that logs its execution (the tool log) and the sub-agent it starts."""

        async def run_stream(self, args: Any, cancellation_token: Any):
            rec.tool(self.name, {"task": args.task})
            rec.sub_agent(self.name, "agent_tool")
            async for event in super().run_stream(args, cancellation_token):
                yield event

    with ScriptedServer(script) as srv:
        def client(model: str = "gpt-4o-mini", **kw: Any) -> OpenAIChatCompletionClient:
            base = {"base_url": srv.base_url, "api_key": common.DUMMY_KEY, "max_retries": 0, "timeout": 30,
                    "temperature": 0}
            return OpenAIChatCompletionClient(model=model, **{**base, **kw})

        def assistant(key: str, **kw: Any) -> AssistantAgent:
            cl = {"retries": {"max_retries": common.RETRIES}, "retries_exhausted": {"max_retries": common.RETRIES},
                  "streaming": {"stream_options": {"include_usage": True}}}.get(key, {})
            args: dict[str, Any] = {"tools": tools, "system_message": system, "max_tool_iterations": ITERATIONS,
                                    "reflect_on_tool_use": False, "model_client_stream": key == "streaming", **kw}
            return AssistantAgent("assistant", model_client=client(**cl), **args)

        def translator() -> AssistantAgent:
            return AssistantAgent("translator", model_client=client("gpt-4o"),
                                  system_message="[agent:translator] You translate to French.",
                                  description="Translates to French.")

        async def run_team(key: str) -> None:
            with tracer.start_as_current_span("run_team"):
                if key == "turn_limit":
                    team = RoundRobinGroupChat([assistant(key, max_tool_iterations=1)], max_turns=common.TURN_LIMIT)
                else:
                    team = RoundRobinGroupChat([assistant(key), translator()],
                                               termination_condition=TextMentionTermination("TERMINATE"))
                seen: list[str] = []
                async for msg in team.run_stream(task=prompt(key)):
                    source = getattr(msg, "source", None)
                    if source and source != "user" and source not in seen:
                        seen.append(source)
                        if len(seen) > 1:   # the agents after the first one speak in the run
                            rec.sub_agent(source, "team")
                    if hasattr(msg, "stop_reason"):
                        rec.notes.append(f"{key}: the team's stop_reason: {msg.stop_reason!r}")

        async def run_agent(key: str) -> None:
            with tracer.start_as_current_span("run_agent"):
                if key == "tool_error_fatal":
                    agent = assistant(key, max_tool_iterations=1)
                elif key == "agent_tool":
                    agent = assistant(key, tools=[LoggedAgentTool(translator(), return_value_as_last_message=True)])
                else:
                    agent = assistant(key)
                if key == "streaming":
                    async for _ in agent.run_stream(task=prompt(key)):
                        pass
                else:
                    await agent.run(task=prompt(key))

        def run(key: str) -> None:
            asyncio.run(run_team(key) if key in ("turn_limit", "multi_agent") else run_agent(key))

        for key in PLAIN:
            with rec.run(key, "plain"):
                run(key)
        with HttpApp(rec, run, cap.provider) as app:
            app.get("/run", ["http"])
            app.get("/two", ["two-a", "two-b"])
        with rec.run("agent_tool", "sub_agent"):
            run("agent_tool")
        for key in EXTRAS:
            with rec.run(key, SHAPE_OF[key]):
                run(key)
    rec.write()


if __name__ == "__main__":
    main()
