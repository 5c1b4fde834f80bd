"""LangGraph's prebuilt ReAct agent (ChatOpenAI pointed at the scripted server), traced by OpenInference.

Shapes: plain, http, two_runs. A failing tool ends the run (ToolNode does not catch a RuntimeError by default).
"""
from __future__ import annotations

import warnings

import common
from common import PLAIN, HttpApp, MemoryCapture, Recorder, Script, ScriptedServer, prompt

NAME = "langgraph"
PACKAGES = ("langgraph", "langchain-core", "langchain-openai", "openinference-instrumentation-langchain",
            "openinference-semantic-conventions", "openai", "opentelemetry-sdk", "opentelemetry-instrumentation-wsgi")
NOTES = ("a failing tool ends the run: ToolNode's default error handler only handles tool invocation errors, "
         "so charge_card's RuntimeError propagates (the tool_error run has one model call)",)


def main() -> None:
    common.quiet_environment()
    warnings.simplefilter("ignore")
    cap = MemoryCapture(f"dialect-{NAME}")
    from openinference.instrumentation.langchain import LangChainInstrumentor
    LangChainInstrumentor().instrument(tracer_provider=cap.provider)

    from langchain_core.tools import StructuredTool
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent

    script = Script({**common.standard_script(), **common.shape_script()})
    rec = Recorder(NAME, cap, script, packages=PACKAGES, notes=NOTES)
    tools = [StructuredTool.from_function(f) for f in common.make_tools(rec).values()]

    with ScriptedServer(script) as srv:
        llm = ChatOpenAI(model="gpt-4o-mini", base_url=srv.base_url, api_key=common.DUMMY_KEY, max_retries=0,
                         timeout=30, temperature=0)
        agent = create_react_agent(llm, tools, prompt="[agent:assistant] You answer with the tools.",
                                   name="assistant")

        def run(key: str) -> None:
            agent.invoke({"messages": [("user", prompt(key))]}, config={"recursion_limit": 20})

        for key in PLAIN:
            with rec.run(key, "plain"):
                run(key)
        with HttpApp(rec, run, cap.provider) as app:
            app.get("/run", ["http"])
            app.get("/two", ["two-a", "two-b"])
    rec.write()


if __name__ == "__main__":
    main()
