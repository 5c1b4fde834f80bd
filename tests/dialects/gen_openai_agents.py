"""OpenAI Agents SDK runs traced by OpenInference (openinference-instrumentation-openai-agents).

The SDK talks Chat Completions to the scripted server (``set_default_openai_api("chat_completions")``); its own
trace export to OpenAI is replaced by the OpenInference processor (the instrumentor's exclusive default), so
nothing leaves the machine. Shapes: plain, http, two_runs, two sub-agent runs: ``sub-handoff`` (a handoff
from ``triage`` to ``billing``) and ``sub-tool`` (``orchestrator`` calls the ``translator`` agent from a tool),
retries (the client's ``max_retries``), streaming (``Runner.run_streamed``), parallel, tool_error_fatal
(``function_tool(failure_error_function=None)``: the error is raised, not handed back) and turn_limit
(``max_turns=3``). The sub-agent runs are its multi-agent shapes (no separate multi_agent run).
"""
from __future__ import annotations

import asyncio

import common
from common import PLAIN, SHAPE_OF, HttpApp, MemoryCapture, Recorder, Reply, Script, ScriptedServer, call, prompt

NAME = "openai_agents"
PACKAGES = ("openai-agents", "openinference-instrumentation-openai-agents", "openinference-semantic-conventions",
            "openai", "opentelemetry-sdk", "opentelemetry-instrumentation-wsgi")

NOTES = ("OpenInference records llm.token_count.prompt/completion only: the served cached and reasoning tokens are "
         "not in the spans",
         "a handoff is a model tool call that runs no tool: OpenInference gives it a TOOL span ('handoff to "
         "billing'); the truth's tool_calls counts executed tools only (sub_agents.handoffs counts handoffs)",
         "sub-tool: the translator agent runs inside the ask_translator function tool (what Agent.as_tool does)",
         "a failing function tool's error goes back to the model by default (tool_error); tool_error_fatal sets "
         "failure_error_function=None, so the run raises",
         "retries happen inside the OpenAI client: one generation span per logical call, the failed attempts are "
         "not in the spans",
         "turn_limit: max_turns=3 raises MaxTurnsExceeded")
EXTRAS = ("retries", "retries_exhausted", "streaming", "parallel", "tool_error_fatal", "turn_limit")


def sub_scripts() -> dict[str, list[Reply]]:
    return {
        "sub-handoff": [Reply(tool_calls=[call("transfer_to_billing")], prompt_tokens=130, completion_tokens=11),
                        Reply(tool_calls=[call("lookup_order", order_id="C-3")], prompt_tokens=180,
                              completion_tokens=15),
                        Reply(content="Billing: order C-3 is delivered.", prompt_tokens=220, completion_tokens=10)],
        "sub-tool": [Reply(tool_calls=[call("ask_translator", text="[run:sub-tool] Translate 'good morning'")],
                           prompt_tokens=125, completion_tokens=20),
                     Reply(content="bonjour", model="gpt-4o-2024-08-06", prompt_tokens=40, completion_tokens=3),
                     Reply(content="In French: bonjour.", prompt_tokens=170, completion_tokens=8)],
    }


def main() -> None:
    common.quiet_environment()
    cap = MemoryCapture(f"dialect-{NAME}")
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
    OpenAIAgentsInstrumentor().instrument(tracer_provider=cap.provider)

    from agents import (
        Agent,
        AgentHooks,
        ModelSettings,
        OpenAIChatCompletionsModel,
        Runner,
        function_tool,
        handoff,
        set_default_openai_api,
        set_default_openai_client,
    )
    from openai import AsyncOpenAI

    script = Script({**common.standard_script(), **common.shape_script(), **sub_scripts(),
                     **common.extra_script(*EXTRAS)})
    rec = Recorder(NAME, cap, script, packages=PACKAGES, notes=NOTES)
    tools = [function_tool(f) for f in common.make_tools(rec).values()]

    class SubAgentLog(AgentHooks):
        def __init__(self, how: str):
            self.how = how

        async def on_start(self, context, agent) -> None:
            rec.sub_agent(agent.name, self.how)

    settings = ModelSettings(temperature=0)
    assistant = Agent(name="assistant", instructions="[agent:assistant] You answer with the tools.",
                      tools=tools, model="gpt-4o-mini", model_settings=settings)
    billing = Agent(name="billing", instructions="[agent:billing] You handle billing.", tools=tools,
                    model="gpt-4o-mini", model_settings=settings, hooks=SubAgentLog("handoff"))
    triage = Agent(name="triage", instructions="[agent:triage] You route the customer.",
                   handoffs=[handoff(billing, tool_name_override="transfer_to_billing")], model="gpt-4o-mini",
                   model_settings=settings)
    translator = Agent(name="translator", instructions="[agent:translator] You translate to French.",
                       model="gpt-4o", model_settings=settings, hooks=SubAgentLog("agent_tool"))

    @function_tool
    async def ask_translator(text: str) -> str:
        """Ask the translator agent."""
        rec.tool("ask_translator", {"text": text})
        result = await Runner.run(translator, text)
        return str(result.final_output)

    orchestrator = Agent(name="orchestrator", instructions="[agent:orchestrator] You delegate translations.",
                         tools=[ask_translator], model="gpt-4o-mini", model_settings=settings)

    with ScriptedServer(script) as srv:
        set_default_openai_client(AsyncOpenAI(base_url=srv.base_url, api_key=common.DUMMY_KEY, max_retries=0,
                                              timeout=30), use_for_tracing=False)
        set_default_openai_api("chat_completions")

        retry_model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=AsyncOpenAI(
            base_url=srv.base_url, api_key=common.DUMMY_KEY, max_retries=common.RETRIES, timeout=30))
        fatal_tools = [function_tool(f, failure_error_function=None) for f in common.make_tools(rec).values()]
        agents = {"retries": assistant.clone(model=retry_model), "tool_error_fatal": assistant.clone(tools=fatal_tools)}
        agents["retries_exhausted"] = agents["retries"]

        async def streamed(key: str) -> None:
            # a streamed chat completion carries usage only when asked: ModelSettings(include_usage=True)
            agent = assistant.clone(model_settings=ModelSettings(temperature=0, include_usage=True))
            result = Runner.run_streamed(agent, prompt(key), max_turns=8)
            async for _ in result.stream_events():
                pass

        def run(key: str) -> None:
            if key == "streaming":
                asyncio.run(streamed(key))
            else:
                Runner.run_sync(agents.get(key, assistant), prompt(key),
                                max_turns=common.TURN_LIMIT if key == "turn_limit" else 8)

        for key in PLAIN:
            with rec.run(key, "plain"):
                run(key)
        with HttpApp(rec, run, cap.provider) as app:
            app.get("/run", ["http"])
            app.get("/two", ["two-a", "two-b"])
        with rec.run("sub-handoff", "sub_agent"):
            Runner.run_sync(triage, prompt("sub-handoff", "My order C-3, billing question."), max_turns=8)
        with rec.run("sub-tool", "sub_agent"):
            Runner.run_sync(orchestrator, prompt("sub-tool", "Say good morning in French."), max_turns=8)
        for key in EXTRAS:
            with rec.run(key, SHAPE_OF[key]):
                run(key)
    rec.write()


if __name__ == "__main__":
    main()
