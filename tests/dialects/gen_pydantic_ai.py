"""Pydantic AI with its own OpenTelemetry instrumentation, the OpenAI chat model pointed at the scripted server.

Two fixtures from this driver: ``pydantic_ai`` (the default instrumentation version: ``invoke_agent {name}``,
``chat {model}``, ``execute_tool {name}``) and ``pydantic_ai_v2`` (``InstrumentationSettings(version=2)``, the
oldest format this release still writes: ``agent run`` and ``running tool`` spans). A tool that raises ends the
run (Pydantic AI only hands ``ModelRetry`` back to the model). Shapes: plain, http, two_runs.
"""
from __future__ import annotations

import sys
import warnings

import common
from common import PLAIN, HttpApp, MemoryCapture, Recorder, Script, ScriptedServer, prompt

PACKAGES = ("pydantic-ai-slim", "openai", "opentelemetry-sdk", "opentelemetry-instrumentation-wsgi")


def main(name: str) -> None:
    common.quiet_environment()
    warnings.simplefilter("ignore")
    version = 2 if name.endswith("_v2") else None
    cap = MemoryCapture(f"dialect-{name}")
    from openai import AsyncOpenAI
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    script = Script({**common.standard_script(), **common.shape_script()})
    settings = InstrumentationSettings(tracer_provider=cap.provider, **({"version": version} if version else {}))
    rec = Recorder(name, cap, script, packages=PACKAGES,
                   notes=(f"InstrumentationSettings version {version or 'default (' + str(settings.version) + ')'}",
                          "a tool that raises ends the run (no second model call in tool_error)"))

    with ScriptedServer(script) as srv:
        client = AsyncOpenAI(base_url=srv.base_url, api_key=common.DUMMY_KEY, max_retries=0, timeout=30)
        model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client))
        agent = Agent(model, name="assistant", instructions="[agent:assistant] You answer with the tools.",
                      model_settings={"temperature": 0})
        agent.instrument = settings
        for f in common.make_tools(rec).values():
            agent.tool_plain(f)

        def run(key: str) -> None:
            agent.run_sync(prompt(key))

        for key in PLAIN:
            with rec.run(key, "plain"):
                run(key)
        with HttpApp(rec, run, cap.provider) as app:
            app.get("/run", ["http"])
            app.get("/two", ["two-a", "two-b"])
    rec.write()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "pydantic_ai")
