"""LangGraph's prebuilt ReAct agent (ChatOpenAI pointed at the scripted server), traced by OpenInference.

Shapes: plain, http, two_runs, retries (ChatOpenAI ``max_retries``), streaming (``streaming=True,
stream_usage=True``), parallel, tool_error_fed_back (``ToolNode(handle_tool_errors=True)``), turn_limit (the
graph's ``recursion_limit``) and multi_agent (a translator ReAct agent invoked from a tool: LangGraph's "agent as
a tool" pattern). By default a failing tool ends the run (ToolNode does not catch a RuntimeError by default).
"""
from __future__ import annotations

import warnings

import common
from common import PLAIN, SHAPE_OF, HttpApp, MemoryCapture, Recorder, Script, ScriptedServer, prompt

NAME = "langgraph"
PACKAGES = ("langgraph", "langchain-core", "langchain-openai", "openinference-instrumentation-langchain",
            "openinference-semantic-conventions", "openai", "opentelemetry-sdk", "opentelemetry-instrumentation-wsgi")
EXTRAS = ("retries", "retries_exhausted", "streaming", "parallel", "tool_error_fed_back", "turn_limit", "multi_agent")
NOTES = ("a failing tool ends the run: ToolNode's default error handler only handles tool invocation errors, "
         "so charge_card's RuntimeError propagates (the tool_error run has one model call); "
         "tool_error_fed_back sets ToolNode(handle_tool_errors=True)",
         "retries happen inside the OpenAI client under ChatOpenAI: one LLM span per logical call, the failed "
         "attempts are not in the spans",
         f"turn_limit: recursion_limit={common.TURN_LIMIT} (graph supersteps: agent, tools, agent); the graph "
         "raises GraphRecursionError, recorded as an exception event on the outer CHAIN span",
         "multi_agent: the translator is a second create_react_agent invoked inside the ask_translator tool")


def main() -> None:
    common.quiet_environment()
    warnings.simplefilter("ignore")
    cap = MemoryCapture(f"dialect-{NAME}")
    from openinference.instrumentation.langchain import LangChainInstrumentor
    LangChainInstrumentor().instrument(tracer_provider=cap.provider)

    from langchain_core.tools import StructuredTool
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import ToolNode, create_react_agent

    script = Script({**common.standard_script(), **common.shape_script(), **common.extra_script(*EXTRAS)})
    rec = Recorder(NAME, cap, script, packages=PACKAGES, notes=NOTES)
    tools = [StructuredTool.from_function(f) for f in common.make_tools(rec).values()]
    system = "[agent:assistant] You answer with the tools."

    with ScriptedServer(script) as srv:
        def chat(**kw: object) -> ChatOpenAI:
            base = {"model": "gpt-4o-mini", "base_url": srv.base_url, "api_key": common.DUMMY_KEY, "max_retries": 0,
                    "timeout": 30, "temperature": 0}
            return ChatOpenAI(**{**base, **kw})
        llm = chat()
        agent = create_react_agent(llm, tools, prompt=system, name="assistant")
        translator = create_react_agent(chat(model="gpt-4o"), [], name="translator",
                                        prompt="[agent:translator] You translate to French.")

        def ask_translator(text: str) -> str:
            """Ask the translator agent."""
            rec.tool("ask_translator", {"text": text})
            rec.sub_agent("translator")
            out = translator.invoke({"messages": [("user", text)]})
            return str(out["messages"][-1].content)

        agents = {
            "retries": create_react_agent(chat(max_retries=common.RETRIES), tools, prompt=system, name="assistant"),
            "streaming": create_react_agent(chat(streaming=True, stream_usage=True), tools, prompt=system,
                                            name="assistant"),
            "tool_error_fed_back": create_react_agent(llm, ToolNode(tools, handle_tool_errors=True), prompt=system,
                                                      name="assistant"),
            "multi_agent": create_react_agent(llm, [*tools, StructuredTool.from_function(ask_translator)],
                                              prompt=system, name="assistant"),
        }
        agents["retries_exhausted"] = agents["retries"]

        def run(key: str) -> None:
            limit = common.TURN_LIMIT if key == "turn_limit" else 20
            agents.get(key, agent).invoke({"messages": [("user", prompt(key))]}, config={"recursion_limit": limit})

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
    main()
