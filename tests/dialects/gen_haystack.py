"""Haystack ``Agent`` with ``OpenAIChatGenerator`` (``api_base_url`` at the scripted server), traced by OpenInference
(openinference-instrumentation-haystack).

Haystack 3 has no OpenTelemetry tracer of its own any more (``haystack.tracing`` keeps the tracer interface and a
logging tracer; the OpenTelemetry and Datadog tracers of 2.x are gone): OpenInference's instrumentor, which wraps
``Pipeline.run`` and every component's ``run``, is the OpenTelemetry instrumentation. Haystack's own telemetry
(PostHog) is off: ``HAYSTACK_TELEMETRY_ENABLED=False``.

Shapes: plain, http, two_runs, retries (the generator's ``max_retries``: the OpenAI client retries inside one
call), streaming (a ``streaming_callback``; Haystack asks for the usage chunk), parallel, tool_error_fatal
(``raise_on_tool_invocation_failure=True``), turn_limit (``max_agent_steps=3``: the Agent returns normally with
``exit_reason`` ``max_agent_steps``) and multi_agent (the translator ``Agent`` as a ``ComponentTool``, Haystack's
agent-as-tool construct). By default a failing tool's error goes back to the model.

``haystack_v2`` (``python gen_haystack.py haystack_v2``, via ``gen_haystack_v2.py``): the last Haystack 2.x release
with the same instrumentation. Haystack 2.x still has its own OpenTelemetry tracer and turns it on by itself when
an OpenTelemetry SDK tracer provider is set before ``haystack`` is imported (``HAYSTACK_AUTO_TRACE_ENABLED``
unset), as in the order Phoenix's setup uses (tracer provider first): both tracers' spans are in that fixture,
OpenInference's and Haystack's own (``haystack.agent.run``, ``haystack.component.run`` with
``haystack.component.type``). Its Agent runs the chat generator and a ``ToolInvoker`` as components, so the tool
calls have spans; it has no Agent hooks, so its multi_agent translator runs inside a function tool.
"""
from __future__ import annotations

import os
import sys
import warnings

import common
from common import PLAIN, SHAPE_OF, HttpApp, MemoryCapture, Recorder, Reply, Script, ScriptedServer, call, prompt

PACKAGES = ("haystack-ai", "openinference-instrumentation-haystack", "openinference-semantic-conventions", "openai",
            "opentelemetry-sdk", "opentelemetry-instrumentation-wsgi")
EXTRAS = ("retries", "retries_exhausted", "streaming", "parallel", "tool_error_fatal", "turn_limit", "multi_agent")
NOTES = ("a failing tool's error goes back to the model by default (tool_error has a second model call); "
         "tool_error_fatal sets Agent(raise_on_tool_invocation_failure=True): the run raises",
         "retries happen inside the OpenAI client under OpenAIChatGenerator(max_retries=2): one generator span per "
         "logical call, the failed attempts are not in the spans",
         f"turn_limit: max_agent_steps={common.TURN_LIMIT} (a step is one model call and the tools it asked for); "
         "the Agent returns normally after the third step's tools, its state's exit_reason is 'max_agent_steps'",
         "multi_agent: the translator Agent wrapped in ComponentTool(name='ask_translator'); the model calls it with "
         "the agent's own input schema ({'messages': [ChatMessage]})",
         "Haystack 3 has no OpenTelemetry tracer of its own: the spans are OpenInference's (the Agent, "
         "ChatPromptBuilder and OpenAIChatGenerator components); its Agent invokes tools itself (no ToolInvoker "
         "component), so OpenInference records no tool span",
         "streaming: OpenAIChatGenerator with a streaming_callback does not ask for the usage chunk: no tokens "
         "served, none recorded")
NOTES_V2 = ("a failing tool's error goes back to the model by default (tool_error has a second model call); "
            "tool_error_fatal sets Agent(raise_on_tool_invocation_failure=True): the run raises",
            "retries happen inside the OpenAI client under OpenAIChatGenerator(max_retries=2): one generator span "
            "per logical call, the failed attempts are not in the spans",
            f"turn_limit: max_agent_steps={common.TURN_LIMIT}; the Agent returns normally after the third step",
            "multi_agent: the translator Agent runs inside the ask_translator function tool (Haystack 2.x has no "
            "Agent hooks to log a ComponentTool's call)",
            "two tracers: OpenInference's spans and Haystack 2.x's own OpenTelemetry tracer (auto-enabled: the "
            "tracer provider was set before haystack was imported), each with a span per agent run and per "
            "component run (haystack.agent.run, haystack.component.run): every model call and tool call has two "
            "or more spans from two instrumentations",
            "streaming: OpenAIChatGenerator with a streaming_callback does not ask for the usage chunk")


def translator_script() -> dict[str, list[Reply]]:
    """multi_agent with the ComponentTool's argument schema (same replies, same tokens as the shared script)."""
    text = "[run:multi_agent] Translate 'good morning'"
    return {"multi_agent": [
        Reply(tool_calls=[call("ask_translator", messages=[{"role": "user", "content": [{"text": text}]}])],
              prompt_tokens=125, completion_tokens=20),
        Reply(content="bonjour", model="gpt-4o-2024-08-06", prompt_tokens=40, completion_tokens=3),
        Reply(content="In French: bonjour.", prompt_tokens=170, completion_tokens=8)]}


def main(name: str) -> None:
    common.quiet_environment()
    os.environ["HAYSTACK_TELEMETRY_ENABLED"] = "False"
    warnings.simplefilter("ignore")
    cap = MemoryCapture(f"dialect-{name}")
    import haystack
    v3 = int(haystack.__version__.split(".")[0]) >= 3
    # the components are imported first: the instrumentor wraps the run of every component class registered by
    # then (others only when a Pipeline runs them)
    from haystack.components.agents import Agent, State
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.dataclasses import ChatMessage
    from haystack.tools import ComponentTool, create_tool_from_function
    from haystack.utils import Secret
    from openinference.instrumentation.haystack import HaystackInstrumentor
    HaystackInstrumentor().instrument(tracer_provider=cap.provider)
    cap.flush()
    cap.exporter.clear()   # Haystack 2.x's import leaves its own 'haystack.tracing.auto_enable' spans, in no run

    extras = [k for k in EXTRAS if k != "multi_agent"]
    multi = translator_script() if v3 else common.extra_script("multi_agent")
    script = Script({**common.standard_script(), **common.shape_script(), **common.extra_script(*extras), **multi})
    rec = Recorder(name, cap, script, packages=PACKAGES, notes=NOTES if v3 else NOTES_V2)
    tools = [create_tool_from_function(f) for f in common.make_tools(rec).values()]
    system = "[agent:assistant] You answer with the tools."

    with ScriptedServer(script) as srv:
        def generator(model: str = "gpt-4o-mini", **kw: object) -> OpenAIChatGenerator:
            base = {"max_retries": 0, "timeout": 30, "generation_kwargs": {"temperature": 0}}
            return OpenAIChatGenerator(api_key=Secret.from_token(common.DUMMY_KEY), model=model,
                                       api_base_url=srv.base_url, **{**base, **kw})

        def agent(**kw: object) -> Agent:
            base = {"chat_generator": generator(), "tools": tools, "system_prompt": system}
            a = Agent(**{**base, **kw})
            a.warm_up()
            return a
        assistant = agent()
        retrying = agent(chat_generator=generator(max_retries=common.RETRIES))
        if v3:
            from haystack.hooks import hook

            def translator_started(state: State) -> None:
                """The ComponentTool's execution (the tool log) and the sub-agent's start (its before_run hook)."""
                texts = [m.text for m in state.get("messages") or [] if m.is_from("user")]
                rec.tool("ask_translator", {"messages": texts})
                rec.sub_agent("translator")
            translator_started.__annotations__ = {"state": State, "return": None}   # the hook check reads the type
            translator = Agent(chat_generator=generator("gpt-4o"),
                               system_prompt="[agent:translator] You translate to French.",
                               hooks={"before_run": [hook(translator_started)]})
            ask_translator = ComponentTool(component=translator, name="ask_translator",
                                           description="Ask the translator agent.",
                                           outputs_to_string={"source": "last_message"})
        else:
            translator = agent(chat_generator=generator("gpt-4o"), tools=[],
                               system_prompt="[agent:translator] You translate to French.")

            def ask(text: str) -> str:
                """Ask the translator agent."""
                rec.tool("ask_translator", {"text": text})
                rec.sub_agent("translator")
                return translator.run(messages=[ChatMessage.from_user(text)])["messages"][-1].text or ""
            ask.__name__ = "ask_translator"
            ask_translator = create_tool_from_function(ask)
        agents = {"retries": retrying, "retries_exhausted": retrying,
                  "streaming": agent(streaming_callback=lambda chunk: None),
                  "tool_error_fatal": agent(raise_on_tool_invocation_failure=True),
                  "turn_limit": agent(max_agent_steps=common.TURN_LIMIT),
                  "multi_agent": agent(tools=[*tools, ask_translator])}

        def run(key: str) -> None:
            text = "Say good morning in French." if key == "multi_agent" else "Please help."
            agents.get(key, assistant).run(messages=[ChatMessage.from_user(prompt(key, text))])

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
    main(sys.argv[1] if len(sys.argv) > 1 else "haystack")
