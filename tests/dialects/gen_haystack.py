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
"""
from __future__ import annotations

import os
import warnings

import common
from common import PLAIN, SHAPE_OF, HttpApp, MemoryCapture, Recorder, Reply, Script, ScriptedServer, call, prompt

NAME = "haystack"
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
         "Haystack 3 has no OpenTelemetry tracer of its own: the spans are OpenInference's (Agent, ToolInvoker, "
         "OpenAIChatGenerator components)")


def translator_script() -> dict[str, list[Reply]]:
    """multi_agent with the ComponentTool's argument schema (same replies, same tokens as the shared script)."""
    text = "[run:multi_agent] Translate 'good morning'"
    return {"multi_agent": [
        Reply(tool_calls=[call("ask_translator", messages=[{"role": "user", "content": [{"text": text}]}])],
              prompt_tokens=125, completion_tokens=20),
        Reply(content="bonjour", model="gpt-4o-2024-08-06", prompt_tokens=40, completion_tokens=3),
        Reply(content="In French: bonjour.", prompt_tokens=170, completion_tokens=8)]}


def main() -> None:
    common.quiet_environment()
    os.environ["HAYSTACK_TELEMETRY_ENABLED"] = "False"
    warnings.simplefilter("ignore")
    cap = MemoryCapture(f"dialect-{NAME}")
    # the components are imported first: the instrumentor wraps the run of every component class registered by
    # then (others only when a Pipeline runs them)
    from haystack.components.agents import Agent, State
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.dataclasses import ChatMessage
    from haystack.hooks import hook
    from haystack.tools import ComponentTool, create_tool_from_function
    from haystack.utils import Secret
    from openinference.instrumentation.haystack import HaystackInstrumentor
    HaystackInstrumentor().instrument(tracer_provider=cap.provider)

    extras = [k for k in EXTRAS if k != "multi_agent"]
    script = Script({**common.standard_script(), **common.shape_script(), **common.extra_script(*extras),
                     **translator_script()})
    rec = Recorder(NAME, cap, script, packages=PACKAGES, notes=NOTES)
    tools = [create_tool_from_function(f) for f in common.make_tools(rec).values()]
    system = "[agent:assistant] You answer with the tools."

    def translator_started(state: State) -> None:
        """The ComponentTool's execution (the tool log) and the sub-agent's start, from its before_run hook."""
        texts = [m.text for m in state.get("messages") or [] if m.is_from("user")]
        rec.tool("ask_translator", {"messages": texts})
        rec.sub_agent("translator")
    translator_started.__annotations__ = {"state": State, "return": None}   # the hook check reads the real type
    started_hook = hook(translator_started)

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
        translator = Agent(chat_generator=generator("gpt-4o"),
                           system_prompt="[agent:translator] You translate to French.",
                           hooks={"before_run": [started_hook]})
        ask_translator = ComponentTool(component=translator, name="ask_translator",
                                       description="Ask the translator agent.",
                                       outputs_to_string={"source": "last_message"})
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
    main()
