"""CrewAI crews (its native OpenAI provider pointed at the scripted server), traced by OpenInference.

Instrumentation: ``CrewAIInstrumentor`` (crew, task/agent and tool spans; in its default wrapper mode it makes no
LLM span) paired with ``OpenAIInstrumentor`` for the model calls: since CrewAI 1.0 an ``openai/...`` or bare
OpenAI model goes through the OpenAI SDK (LiteLLM only for providers without a native one), and that pairing is what
the OpenInference/Arize CrewAI guide tells CrewAI 1.x users to install. CrewAI's own telemetry and its tracing
upload are off (``CREWAI_DISABLE_TELEMETRY``, ``CREWAI_DISABLE_TRACKING``, ``CREWAI_TRACING_ENABLED=false``;
``OTEL_SDK_DISABLED``, which CrewAI also honours, would switch off this capture's SDK too, so it is not set).

Every run is a ``Crew.kickoff`` (sequential process) of one agent and one task, as CrewAI is used. Shapes: plain,
http, two_runs, retries (the LLM's ``max_retries``, i.e. the OpenAI client's), streaming (``LLM(stream=True)``,
which asks for usage), parallel, tool_error_fatal (``tool_failure_policy="raise"``), turn_limit
(``Agent(max_iter=3)``) and multi_agent (a crew of two agents, two tasks: the assistant's answer goes to the
translator's task as context).
"""
from __future__ import annotations

import logging
import os
import warnings

import common
from common import PLAIN, SHAPE_OF, HttpApp, MemoryCapture, Recorder, Reply, Script, ScriptedServer, call, prompt

NAME = "crewai"
PACKAGES = ("crewai", "openinference-instrumentation-crewai", "openinference-instrumentation-openai",
            "openinference-semantic-conventions", "openai", "opentelemetry-sdk", "opentelemetry-instrumentation-wsgi")
EXTRAS = ("retries", "retries_exhausted", "streaming", "parallel", "tool_error_fatal", "turn_limit", "multi_agent")
NOTES = (
    "two instrumentations: CrewAIInstrumentor makes the CHAIN span of Crew.kickoff, an AGENT span per task "
    "(Task._execute_core, named '<role>._execute_core') and a TOOL span per tool run ('<tool>.run'); the LLM spans "
    "(with llm.token_count.*, cache read and reasoning included) come from OpenAIInstrumentor around the OpenAI SDK "
    "call CrewAI's native OpenAI provider makes; the AGENT span names its agent's role in graph.node.id (and the "
    "previous task's agent in graph.node.parent_id)",
    "a failing tool's error goes back to the model by default (tool_failure_policy 'warn': the tool span is an "
    "error, the run goes on); tool_error_fatal sets Agent(tool_failure_policy='raise'): the run raises "
    "ToolExecutionFailedError",
    "the agents are built with max_retry_limit=0: CrewAI's default (2) re-runs a task whose execution raised, which "
    "would re-run the model_error task from its first request",
    "retries happen inside the OpenAI client (LLM(max_retries=2)): one LLM span per logical call, the failed "
    "attempts are not in the spans",
    f"turn_limit: Agent(max_iter={common.TURN_LIMIT}); CrewAI does not raise at the limit: it makes one more model "
    "call, with no tools offered, asking for a final answer, and returns that answer (a fourth LLM span, with no "
    "llm.tools.*; the truth's stop_reason is turn_limit: the last request offered no tools after a tool-call "
    "answer)",
    "multi_agent: a crew of two agents with one task each (assistant, then translator with the first task as "
    "context); the truth counts the translator as the run's sub-agent (agents after the first, logged from "
    "CrewAI's AgentExecutionStartedEvent)",
)


def crew_scripts() -> dict[str, list[Reply]]:
    """multi_agent for a crew: the assistant's task (a tool call, its answer), then the translator's task."""
    return {"multi_agent": [
        Reply(tool_calls=[call("get_weather", city="Paris")], prompt_tokens=125, completion_tokens=16),
        Reply(content="It is sunny in Paris.", prompt_tokens=170, completion_tokens=8),
        Reply(content="Il fait beau à Paris.", model="gpt-4o-2024-08-06", prompt_tokens=140, completion_tokens=9),
    ]}


def quiet_crewai() -> None:
    os.environ.update({"CREWAI_DISABLE_TELEMETRY": "true", "CREWAI_DISABLE_TRACKING": "true",
                       "CREWAI_TRACING_ENABLED": "false"})
    logging.disable(logging.CRITICAL)   # CrewAI logs every scripted 500 and token estimate at WARNING/ERROR


def main() -> None:
    common.quiet_environment()
    quiet_crewai()
    warnings.simplefilter("ignore")
    cap = MemoryCapture(f"dialect-{NAME}")
    from openinference.instrumentation.crewai import CrewAIInstrumentor
    from openinference.instrumentation.openai import OpenAIInstrumentor
    CrewAIInstrumentor().instrument(tracer_provider=cap.provider)
    OpenAIInstrumentor().instrument(tracer_provider=cap.provider)

    from crewai import LLM, Agent, Crew, Process, Task
    from crewai.events import AgentExecutionStartedEvent, crewai_event_bus
    from crewai.tools import tool

    extras = common.extra_script(*(k for k in EXTRAS if k != "multi_agent"))
    script = Script({**common.standard_script(), **common.shape_script(), **extras, **crew_scripts()})
    rec = Recorder(NAME, cap, script, packages=PACKAGES, notes=NOTES)
    tools = [tool(f) for f in common.make_tools(rec).values()]
    started: dict[str, int] = {}

    @crewai_event_bus.on(AgentExecutionStartedEvent)
    def _agent_started(source: object, event: AgentExecutionStartedEvent) -> None:
        key = rec.current
        if key is not None:
            started[key] = started.get(key, 0) + 1
            if started[key] > 1:
                rec.sub_agent(event.agent.role)

    with ScriptedServer(script) as srv:
        def llm(**kw: object) -> LLM:
            base = {"model": "gpt-4o-mini", "base_url": srv.base_url, "api_key": common.DUMMY_KEY, "max_retries": 0,
                    "timeout": 30, "temperature": 0}
            return LLM(**{**base, **kw})

        def assistant(**kw: object) -> Agent:
            base = {"role": "assistant", "goal": "Answer the customer with the tools.",
                    "backstory": "[agent:assistant] You answer with the tools.", "tools": tools, "llm": llm(),
                    "max_retry_limit": 0, "verbose": False}
            return Agent(**{**base, **kw})
        agents = {
            "retries": assistant(llm=llm(max_retries=common.RETRIES)),
            "streaming": assistant(llm=llm(stream=True)),
            "tool_error_fatal": assistant(tool_failure_policy="raise"),
            "turn_limit": assistant(max_iter=common.TURN_LIMIT),
        }
        agents["retries_exhausted"] = agents["retries"]
        default = assistant()
        translator = Agent(role="translator", goal="Translate the answer to French.",
                           backstory="[agent:translator] You translate to French.", llm=llm(model="gpt-4o"),
                           max_retry_limit=0, verbose=False)

        def run(key: str) -> None:
            agent = agents.get(key, default)
            tasks = [Task(description=prompt(key), expected_output="The answer to the customer.", agent=agent)]
            members = [agent]
            if key == "multi_agent":
                tasks = [Task(description=prompt(key, "What is the weather in Paris?"),
                              expected_output="The weather in Paris.", agent=agent),
                         Task(description=prompt(key, "Translate the weather report to French."),
                              expected_output="The report in French.", agent=translator, context=[]),]
                tasks[1].context = [tasks[0]]
                members = [agent, translator]
            Crew(name="support", agents=members, tasks=tasks, process=Process.sequential, verbose=False).kickoff()

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
