"""Google ADK (``LlmAgent`` on a ``Runner`` with an in-memory session service) with a LiteLLM model
(``LiteLlm(model="openai/...")``, its ``api_base`` at the scripted server), traced by ADK's own spans.

ADK writes its spans with the global tracer provider (instrumentation scope ``gcp.vertex.agent``):
``invoke_workflow {root agent}`` (a run), ``invoke_agent {name}``, ``generate_content {model}`` (one per model
call, ``gen_ai.usage.*``) and ``execute_tool {name}``, at its default settings (message content not captured).
Nothing goes to Google: no Vertex AI or Gemini model, no GCP exporter (ADK's own OTLP/GCP set-up is not called),
dummy keys, and LiteLLM reads its bundled model-cost map (``LITELLM_LOCAL_MODEL_COST_MAP``).

Shapes: plain, http, two_runs, retries (``LiteLlm(max_retries=2)``: the OpenAI client's retries inside LiteLLM's
call; LiteLLM gives it 2 unless told, so the other runs set 0), streaming
(``RunConfig(streaming_mode=SSE)``: ADK asks LiteLLM for ``stream_options.include_usage``), parallel,
tool_error_fed_back (the agent's ``on_tool_error_callback`` returns the error as the tool's response; by default a
failing tool ends the run), turn_limit (``RunConfig(max_llm_calls=3)``), multi_agent (the translator wrapped in
``AgentTool``) and a sub_agent run ``sub-handoff`` (``triage`` transfers to its sub-agent ``billing`` with ADK's
``transfer_to_agent``).
"""
from __future__ import annotations

import asyncio
import os
import warnings
from typing import Any

import common
from common import PLAIN, SHAPE_OF, HttpApp, MemoryCapture, Recorder, Reply, Script, ScriptedServer, call, prompt

NAME = "google_adk"
PACKAGES = ("google-adk", "google-genai", "litellm", "openai", "opentelemetry-sdk",
            "opentelemetry-instrumentation-wsgi")
EXTRAS = ("retries", "retries_exhausted", "streaming", "parallel", "tool_error_fed_back", "turn_limit", "multi_agent")
NOTES = (
    "ADK's own spans at its defaults: invoke_workflow (the Runner's root node) > invoke_agent > generate_content / "
    "execute_tool; message content is not captured, so execute_tool carries the tool's name and call id, not its "
    "arguments",
    "generate_content's gen_ai.usage.output_tokens adds the reasoning tokens to the completion tokens "
    "(gen_ai.usage.reasoning.output_tokens is also set): the tools and streaming runs' last call shows 18 output "
    "tokens where the server served completion_tokens=12 of which reasoning_tokens=6",
    "a tool that raises ends the run (the Runner raises); tool_error_fed_back sets on_tool_error_callback, whose "
    "returned dict becomes the tool's response",
    "retries: LiteLlm(max_retries=2), passed by LiteLLM to the OpenAI client it calls (its default there is 2: "
    "the other runs set max_retries=0); the attempts are inside one generate_content span. LiteLLM's num_retries "
    "is not used: it retries the whole call again around the client's own retries",
    f"turn_limit: RunConfig(max_llm_calls={common.TURN_LIMIT}) raises LlmCallsLimitExceededError before the call "
    "that would pass the limit",
    "multi_agent: AgentTool(translator): the translator runs in its own Runner inside the execute_tool span",
    "sub-handoff: triage's sub_agents=[billing]; the model calls transfer_to_agent, a function tool with an "
    "execute_tool span; the truth's tool_calls counts the application's tools only (sub_agents.handoffs counts the "
    "transfer)",
)


def sub_scripts() -> dict[str, list[Reply]]:
    return {
        "sub-handoff": [Reply(tool_calls=[call("transfer_to_agent", agent_name="billing")], prompt_tokens=130,
                              completion_tokens=11),
                        Reply(tool_calls=[call("lookup_order", order_id="C-3")], prompt_tokens=180,
                              completion_tokens=15),
                        Reply(content="Billing: order C-3 is delivered.", prompt_tokens=220, completion_tokens=10)],
        # the translator's request is the tool's argument (it carries the run marker)
        "multi_agent": [Reply(tool_calls=[call("translator", request="[run:multi_agent] Translate 'good morning'")],
                              prompt_tokens=125, completion_tokens=20),
                        Reply(content="bonjour", model="gpt-4o-2024-08-06", prompt_tokens=40, completion_tokens=3),
                        Reply(content="In French: bonjour.", prompt_tokens=170, completion_tokens=8)],
    }


def main() -> None:
    common.quiet_environment()
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    for k in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_CLOUD_PROJECT", "GOOGLE_GENAI_USE_VERTEXAI"):
        os.environ.pop(k, None)
    warnings.simplefilter("ignore")
    cap = MemoryCapture(f"dialect-{NAME}")

    from google.adk.agents import LlmAgent
    from google.adk.agents.run_config import RunConfig, StreamingMode
    from google.adk.models.lite_llm import LiteLlm
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService
    from google.adk.tools.agent_tool import AgentTool
    from google.genai import types

    extras = [k for k in EXTRAS if k != "multi_agent"]
    script = Script({**common.standard_script(), **common.shape_script(), **common.extra_script(*extras),
                     **sub_scripts()})
    rec = Recorder(NAME, cap, script, packages=PACKAGES, notes=NOTES)
    tools = list(common.make_tools(rec).values())
    system = "[agent:assistant] You answer with the tools."

    class LoggedAgentTool(AgentTool):
        """ADK's AgentTool, logging its execution (the tool log) and the sub-agent it starts."""

        async def run_async(self, *, args: dict[str, Any], tool_context: Any) -> Any:
            rec.tool(self.name, dict(args))
            rec.sub_agent(self.agent.name, "agent_tool")
            return await super().run_async(args=args, tool_context=tool_context)

    def tool_error_back(tool: Any, args: dict, tool_context: Any, error: Exception) -> dict:
        return {"error": f"{type(error).__name__}: {error}"}

    def log_handoff(callback_context: Any) -> None:
        rec.sub_agent(callback_context.agent_name, "handoff")

    with ScriptedServer(script) as srv:
        def model(name: str = "gpt-4o-mini", **kw: Any) -> LiteLlm:
            args: dict[str, Any] = {"api_base": srv.base_url, "api_key": common.DUMMY_KEY, "timeout": 30,
                                    "max_retries": 0}
            return LiteLlm(model=f"openai/{name}", **{**args, **kw})

        def agent(fns: list, **kw: Any) -> LlmAgent:
            args: dict[str, Any] = {"name": "assistant", "model": model(), "instruction": system, **kw}
            return LlmAgent(tools=fns, **args)

        translator = LlmAgent(name="translator", model=model("gpt-4o"), description="Translates to French.",
                              instruction="[agent:translator] You translate to French.")
        billing = LlmAgent(name="billing", model=model(), description="Handles billing.", tools=tools,
                           instruction="[agent:billing] You handle billing.", before_agent_callback=log_handoff)
        roots = {
            "default": agent(tools),
            "retries": agent(tools, model=model(max_retries=common.RETRIES)),
            "tool_error_fed_back": agent(tools, on_tool_error_callback=tool_error_back),
            "multi_agent": agent([*tools, LoggedAgentTool(agent=translator)]),
            "sub-handoff": LlmAgent(name="triage", model=model(), instruction="[agent:triage] You route the customer.",
                                    description="Routes the customer.", sub_agents=[billing]),
        }
        roots["retries_exhausted"] = roots["retries"]
        runners = {k: Runner(app_name="fixtures", agent=a, session_service=InMemorySessionService(),
                             auto_create_session=True) for k, a in roots.items()}

        async def run_async(key: str) -> None:
            limit = common.TURN_LIMIT if key == "turn_limit" else 20
            config = RunConfig(max_llm_calls=limit,
                               streaming_mode=StreamingMode.SSE if key == "streaming" else StreamingMode.NONE)
            text = "My order C-3, billing question." if key == "sub-handoff" else "Please help."
            message = types.Content(role="user", parts=[types.Part(text=prompt(key, text))])
            async for _ in runners.get(key, runners["default"]).run_async(user_id="fixture", session_id=key,
                                                                            new_message=message, run_config=config):
                pass

        def run(key: str) -> None:
            asyncio.run(run_async(key))

        for key in PLAIN:
            with rec.run(key, "plain"):
                run(key)
        with HttpApp(rec, run, cap.provider) as app:
            app.get("/run", ["http"])
            app.get("/two", ["two-a", "two-b"])
        with rec.run("sub-handoff", "sub_agent"):
            run("sub-handoff")
        for key in EXTRAS:
            with rec.run(key, SHAPE_OF[key]):
                run(key)
    rec.write()


if __name__ == "__main__":
    main()
