"""LlamaIndex's FunctionAgent (its OpenAI LLM pointed at the scripted server), traced by OpenInference.

``openinference-instrumentation-llama-index`` turns LlamaIndex's own instrumentation events (its dispatcher's spans
around the workflow, its steps, the LLM and the tools) into OpenInference spans. Each run is ``FunctionAgent.run``
(an agent workflow); its events are read from ``handler.stream_events()``. Shapes: plain, http, two_runs, retries
(LlamaIndex's own retry of the LLM call, ``OpenAI(max_retries=3)``: attempts, i.e. 2 retries, with the OpenAI
client's own retries off), streaming (``FunctionAgent(streaming=True)``, asking the stream for usage),
parallel, tool_error_fatal (the application cancels the run when a ToolCallResult event is an error: LlamaIndex
has no setting for it), turn_limit (``run(max_iterations=3)``) and multi_agent (an ``AgentWorkflow`` whose
assistant hands off to the translator). By default a failing tool's error goes back to the model.
"""
from __future__ import annotations

import asyncio
import logging
import warnings

import common
from common import PLAIN, SHAPE_OF, HttpApp, MemoryCapture, Recorder, Reply, Script, ScriptedServer, call, prompt

NAME = "llamaindex"
PACKAGES = ("llama-index-core", "llama-index-llms-openai", "llama-index-workflows",
            "openinference-instrumentation-llama-index", "openinference-semantic-conventions", "openai",
            "opentelemetry-sdk", "opentelemetry-instrumentation-wsgi")
EXTRAS = ("retries", "retries_exhausted", "streaming", "parallel", "tool_error_fatal", "turn_limit", "multi_agent")
SYSTEM = "[agent:assistant] You answer with the tools."
NOTES = (
    "spans: the run's root is a CHAIN span ('FunctionAgent.run' / 'AgentWorkflow.run'; no span has the AGENT kind) "
    "with a CHAIN span per workflow step; each model call is two sibling LLM-kind spans under the run_agent_step "
    "span: 'OpenAI._prepare_chat_with_tools' (no messages, no tokens, no finish reason: it only builds the request) "
    "then 'OpenAI.achat' / 'OpenAI.astream_chat' with llm.token_count.* (cache read and reasoning included); a tool "
    "is a TOOL span 'FunctionTool.acall' under a call_tool CHAIN span; llm.model_name is the requested model id",
    "the agents run with streaming=False but in the streaming shape: FunctionAgent streams by default",
    "a failing tool's error goes back to the model by default (a ToolOutput with is_error); tool_error_fatal "
    "cancels the run from the application when the event stream shows a failed ToolCallResult (LlamaIndex has no "
    "setting for it) and raises",
    "LlamaIndex's OpenAI LLM retries twice over: its own tenacity retry (max_retries counts attempts) around the "
    "OpenAI client, whose max_retries is set from the same number; the retries shape keeps LlamaIndex's "
    "(max_retries=3: 3 attempts) and passes an OpenAI client with max_retries=0",
    f"turn_limit: run(max_iterations={common.TURN_LIMIT}) raises WorkflowRuntimeError when the third model answer "
    "asks for tools (early_stopping_method 'force', the default), before running them",
    "multi_agent: an AgentWorkflow (assistant, translator) where the assistant's model calls the workflow's "
    "handoff tool; the translator answers; the truth counts the handoff in sub_agents.handoffs, not as a tool call; "
    "the translator's steps are siblings of the assistant's in the one workflow span: no span marks the agent "
    "change but the handoff TOOL span (tool.name 'handoff') and the next call's model",
    "streaming asks the OpenAI stream for usage (additional_kwargs stream_options include_usage): LlamaIndex's "
    "OpenAI LLM does not by default",
)


def li_scripts() -> dict[str, list[Reply]]:
    return {"multi_agent": [
        Reply(tool_calls=[call("handoff", to_agent="translator", reason="The customer wants a translation.")],
              prompt_tokens=125, completion_tokens=20),
        Reply(content="bonjour", model="gpt-4o-2024-08-06", prompt_tokens=140, completion_tokens=3)]}


def main() -> None:
    common.quiet_environment()
    warnings.simplefilter("ignore")
    logging.getLogger("llama_index").setLevel(logging.ERROR)   # each scripted 500 is logged as a retry warning
    cap = MemoryCapture(f"dialect-{NAME}")
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
    LlamaIndexInstrumentor().instrument(tracer_provider=cap.provider)

    from llama_index.core.agent.workflow import AgentInput, AgentWorkflow, FunctionAgent, ToolCallResult
    from llama_index.core.tools import FunctionTool
    from llama_index.llms.openai import OpenAI
    from openai import AsyncOpenAI

    extras = common.extra_script(*(k for k in EXTRAS if k != "multi_agent"))
    script = Script({**common.standard_script(), **common.shape_script(), **extras, **li_scripts()})
    rec = Recorder(NAME, cap, script, packages=PACKAGES, notes=NOTES)
    tools = [FunctionTool.from_defaults(f) for f in common.make_tools(rec).values()]

    with ScriptedServer(script) as srv:
        def llm(**kw: object) -> OpenAI:
            base = {"model": "gpt-4o-mini", "api_base": srv.base_url, "api_key": common.DUMMY_KEY, "max_retries": 0,
                    "timeout": 30, "temperature": 0}
            return OpenAI(**{**base, **kw})

        def assistant(**kw: object) -> FunctionAgent:
            base = {"name": "assistant", "description": "Answers with the tools.", "tools": tools, "llm": llm(),
                    "system_prompt": SYSTEM, "streaming": False}
            return FunctionAgent(**{**base, **kw})
        retry_client = AsyncOpenAI(base_url=srv.base_url, api_key=common.DUMMY_KEY, max_retries=0, timeout=30)
        agents = {
            "retries": assistant(llm=llm(max_retries=common.RETRIES + 1, async_openai_client=retry_client)),
            "streaming": assistant(streaming=True, llm=llm(
                additional_kwargs={"stream_options": {"include_usage": True}})),
            "multi_agent": AgentWorkflow(agents=[
                assistant(can_handoff_to=["translator"]),
                FunctionAgent(name="translator", description="Translates a text to French.", tools=[],
                              llm=llm(model="gpt-4o"), streaming=False,
                              system_prompt="[agent:translator] You translate to French.")],
                root_agent="assistant"),
        }
        agents["retries_exhausted"] = agents["retries"]
        default = assistant()

        async def arun(key: str) -> None:
            limit = common.TURN_LIMIT if key == "turn_limit" else 20
            handler = agents.get(key, default).run(user_msg=prompt(key), max_iterations=limit)
            agent_names: list[str] = []
            async for ev in handler.stream_events():
                if isinstance(ev, AgentInput) and ev.current_agent_name not in agent_names:
                    agent_names.append(ev.current_agent_name)
                    if len(agent_names) > 1:
                        rec.sub_agent(ev.current_agent_name, "handoff")
                if key == "tool_error_fatal" and isinstance(ev, ToolCallResult) and ev.tool_output.is_error:
                    await handler.cancel_run()
                    raise RuntimeError(f"stopped: tool {ev.tool_name} failed")
            await handler

        def run(key: str) -> None:
            asyncio.run(arun(key))

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
