"""Pydantic AI with its own OpenTelemetry instrumentation, the OpenAI chat model pointed at the scripted server.

Two fixtures from this driver: ``pydantic_ai`` (the default instrumentation version: ``invoke_agent {name}``,
``chat {model}``, ``execute_tool {name}``) and ``pydantic_ai_v2`` (``InstrumentationSettings(version=2)``, the
oldest format this release still writes: ``agent run`` and ``running tool`` spans). A tool that raises ends the
run (Pydantic AI only hands ``ModelRetry`` back to the model). Shapes: plain, http, two_runs, retries (the
OpenAI client's ``max_retries``), streaming (``run_stream_sync``), parallel, tool_error_fed_back (the tool raises
``ModelRetry``), turn_limit (``UsageLimits(request_limit=3)``) and multi_agent (agent delegation: a tool awaits
the translator agent's run).
"""
from __future__ import annotations

import sys
import warnings

import common
from common import PLAIN, SHAPE_OF, HttpApp, MemoryCapture, Recorder, Script, ScriptedServer, prompt

PACKAGES = ("pydantic-ai-slim", "openai", "opentelemetry-sdk", "opentelemetry-instrumentation-wsgi")
EXTRAS = ("retries", "retries_exhausted", "streaming", "parallel", "tool_error_fed_back", "turn_limit", "multi_agent")


def main(name: str) -> None:
    common.quiet_environment()
    warnings.simplefilter("ignore")
    version = 2 if name.endswith("_v2") else None
    cap = MemoryCapture(f"dialect-{name}")
    from openai import AsyncOpenAI
    from pydantic_ai import Agent, ModelRetry
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.usage import UsageLimits

    script = Script({**common.standard_script(), **common.shape_script(), **common.extra_script(*EXTRAS)})
    settings = InstrumentationSettings(tracer_provider=cap.provider, **({"version": version} if version else {}))
    rec = Recorder(name, cap, script, packages=PACKAGES, notes=(
        f"InstrumentationSettings version {version or 'default (' + str(settings.version) + ')'}",
        "a tool that raises ends the run (no second model call in tool_error); tool_error_fed_back's tool raises "
        "ModelRetry, which Pydantic AI hands back to the model as a retry prompt",
        "retries happen inside the OpenAI client: one chat span per logical call, the failed attempts are not in "
        "the spans",
        f"turn_limit: UsageLimits(request_limit={common.TURN_LIMIT}) raises UsageLimitExceeded before the request "
        "that would pass the limit",
        "multi_agent: the translator agent's run is awaited inside the ask_translator tool (agent delegation)"))
    tools = common.make_tools(rec)

    def charge_card(amount: int) -> str:   # the tool_error_fed_back run's charge_card: the error as ModelRetry
        """Charge the customer's card (always fails in the fixtures)."""
        try:
            return tools["charge_card"](amount)
        except RuntimeError as e:
            raise ModelRetry(str(e)) from e

    with ScriptedServer(script) as srv:
        def model(name: str = "gpt-4o-mini", retries: int = 0) -> OpenAIChatModel:
            client = AsyncOpenAI(base_url=srv.base_url, api_key=common.DUMMY_KEY, max_retries=retries, timeout=30)
            return OpenAIChatModel(name, provider=OpenAIProvider(openai_client=client))

        def make_agent(m: OpenAIChatModel, fns: list, agent_name: str = "assistant",
                       instructions: str = "[agent:assistant] You answer with the tools.") -> Agent:
            a = Agent(m, name=agent_name, instructions=instructions, model_settings={"temperature": 0})
            a.instrument = settings
            for f in fns:
                a.tool_plain(f)
            return a
        plain = list(tools.values())
        agent = make_agent(model(), plain)
        translator = make_agent(model("gpt-4o"), [], "translator", "[agent:translator] You translate to French.")

        async def ask_translator(text: str) -> str:
            """Ask the translator agent."""
            rec.tool("ask_translator", {"text": text})
            rec.sub_agent("translator")
            return str((await translator.run(text)).output)

        retrying = make_agent(model(retries=common.RETRIES), plain)
        agents = {"retries": retrying, "retries_exhausted": retrying,
                  "tool_error_fed_back": make_agent(model(), [*plain[:3], charge_card]),
                  "multi_agent": make_agent(model(), [*plain, ask_translator])}

        def run(key: str) -> None:
            a = agents.get(key, agent)
            if key == "streaming":
                with_stream = a.run_stream_sync(prompt(key))
                with_stream.get_output()
            elif key == "turn_limit":
                a.run_sync(prompt(key), usage_limits=UsageLimits(request_limit=common.TURN_LIMIT))
            else:
                a.run_sync(prompt(key))

        for key in PLAIN:
            with rec.run(key, "plain"):
                run(key)
        with HttpApp(rec, run, cap.provider) as app:
            app.get("/run", ["http"])
            app.get("/two", ["two-a", "two-b"])
        for key in EXTRAS:
            with rec.run(key, SHAPE_OF[key]):
                run(key)
    rec.write()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "pydantic_ai")
