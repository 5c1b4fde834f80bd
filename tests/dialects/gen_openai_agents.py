"""OpenAI Agents SDK runs traced by OpenInference (openinference-instrumentation-openai-agents).

The SDK talks Chat Completions to the scripted server (``set_default_openai_api("chat_completions")``); its own
trace export to OpenAI is replaced by the OpenInference processor (the instrumentor's exclusive default), so
nothing leaves the machine. Shapes: plain, http, two_runs, and two sub-agent runs: ``sub-handoff`` (a handoff
from ``triage`` to ``billing``) and ``sub-tool`` (``orchestrator`` calls the ``translator`` agent from a tool).
"""
from __future__ import annotations

import common
from common import PLAIN, HttpApp, MemoryCapture, Recorder, Reply, Script, ScriptedServer, call, prompt

NAME = "openai_agents"
PACKAGES = ("openai-agents", "openinference-instrumentation-openai-agents", "openinference-semantic-conventions",
            "openai", "opentelemetry-sdk", "opentelemetry-instrumentation-wsgi")

NOTES = ("OpenInference records llm.token_count.prompt/completion only: the served cached and reasoning tokens are "
         "not in the spans",
         "a handoff is a model tool call that runs no tool: OpenInference gives it a TOOL span ('handoff to "
         "billing'); the truth's tool_calls counts executed tools only (sub_agents.handoffs counts handoffs)",
         "sub-tool: the translator agent runs inside the ask_translator function tool (what Agent.as_tool does)")


def sub_scripts() -> dict[str, list[Reply]]:
    return {
        "sub-handoff": [Reply(tool_calls=[call("transfer_to_billing")], prompt_tokens=130, completion_tokens=11),
                        Reply(tool_calls=[call("lookup_order", order_id="C-3")], prompt_tokens=180, completion_tokens=15),
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

    from agents import (Agent, AgentHooks, ModelSettings, Runner, function_tool, handoff, set_default_openai_api,
                        set_default_openai_client)
    from openai import AsyncOpenAI

    script = Script({**common.standard_script(), **common.shape_script(), **sub_scripts()})
    rec = Recorder(NAME, cap, script, packages=PACKAGES, notes=NOTES)
    tools = [function_tool(f) for f in common.make_tools(rec).values()]

    class SubAgentLog(AgentHooks):
        def __init__(self, how: str):
            self.how = how

        async def on_start(self, context, agent) -> None:  # noqa: ANN001
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

        def run(key: str) -> None:
            Runner.run_sync(assistant, prompt(key), max_turns=8)

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
    rec.write()


if __name__ == "__main__":
    main()
