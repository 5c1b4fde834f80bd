"""smolagents ToolCallingAgent (OpenAIServerModel pointed at the scripted server), traced by OpenInference.

A ToolCallingAgent answers through its ``final_answer`` tool: smolagents sends ``tool_choice="required"``, so a
real model cannot answer in plain text, and every scripted final answer here is a ``final_answer`` tool call (the
truth treats it as the run's answer, not as a tool call: ``Recorder(answer_tools=...)``). Shapes: plain, http,
two_runs, retries (the OpenAI client's ``max_retries`` via ``client_kwargs``), streaming
(``stream_outputs=True``: ``generate_stream`` asks for usage), parallel (the agent runs the two calls in its thread
pool), tool_error_fatal (a step callback that raises on a failed tool: smolagents has no setting for it),
turn_limit (``max_steps=3``) and multi_agent (``managed_agents``: the translator agent, called by the manager's
model as a tool named after it). By default a failing tool's error goes back to the model.
"""
from __future__ import annotations

import contextvars
import warnings

import common
from common import PLAIN, SHAPE_OF, HttpApp, MemoryCapture, Recorder, Reply, Script, ScriptedServer, call, prompt

NAME = "smolagents"
PACKAGES = ("smolagents", "openinference-instrumentation-smolagents", "openinference-semantic-conventions", "openai",
            "opentelemetry-sdk", "opentelemetry-instrumentation-wsgi")
EXTRAS = ("retries", "retries_exhausted", "streaming", "parallel", "tool_error_fatal", "turn_limit", "multi_agent")
ANSWER = "final_answer"
NOTES = (
    "the model answers by calling smolagents' final_answer tool (tool_choice 'required'): OpenInference gives that "
    "call a TOOL span (FinalAnswerTool) like any tool; the truth's tool_calls counts the run's own tools only and "
    "takes a reply that calls final_answer alone as the final answer",
    "spans: an AGENT span per run ('ToolCallingAgent.run', or the agent's name), a CHAIN span per step ('Step N'), an "
    "LLM span per model call ('OpenAIModel.generate' / '.generate_stream') with llm.token_count.prompt/completion "
    "(smolagents keeps no cached or reasoning tokens; llm.model_name is the requested model id) and a TOOL span per "
    "tool ('SimpleTool', tool.name); the AGENT span also carries the agent's summed llm.token_count.* (a managed "
    "agent's calls are summed on its own AGENT span only); a forced final answer at the turn limit is an LLM span "
    "directly under the AGENT span, outside any Step span, with no llm.tools.*",
    "a failing tool's error goes back to the model by default (an error on the step, the run goes on); "
    "tool_error_fatal ends the run from a step callback that raises when a step's error is an "
    "AgentToolExecutionError (an application stop rule: smolagents has no setting for it)",
    "a model call that fails ends the run (AgentGenerationError); smolagents' own retry (ApiModel retry=True) is "
    "for rate limits only; retries here are the OpenAI client's (client_kwargs max_retries=2): one LLM span per "
    "logical call, the failed attempts are not in the spans",
    f"turn_limit: max_steps={common.TURN_LIMIT}; smolagents does not raise at the limit: after the last step it "
    "makes one more model call without tools for a final answer and returns it (the truth's stop_reason is "
    "turn_limit: the last request offered no tools after a tool-call answer); the run's result state is "
    "'max_steps_error'",
    "a run that raises (model_error, retries_exhausted, tool_error_fatal) has no AGENT span: the instrumentation "
    "(non-streaming run) neither ends nor detaches it when the run raises, so it is never exported and its Step "
    "spans point at a missing parent; left attached it would parent every later run of the thread, so the driver "
    "runs each run in its own contextvars context (as a server does per request)",
    "multi_agent: the translator is a managed agent (managed_agents=[translator]); the manager's model calls it as "
    "a tool named 'translator' but it is an agent run, not a tool execution (no TOOL span, an AGENT span "
    "'translator.run' inside the manager's step; the agent's name is only in the span name)",
)


def as_answer(replies: list[Reply]) -> list[Reply]:
    """A script with its text answers turned into final_answer tool calls (same usage, same model)."""
    out = []
    for r in replies:
        if r.status == 200 and r.content is not None and not r.tool_calls:
            r = Reply(tool_calls=[call(ANSWER, answer=r.content)], model=r.model, prompt_tokens=r.prompt_tokens,
                      completion_tokens=r.completion_tokens, cached_tokens=r.cached_tokens,
                      reasoning_tokens=r.reasoning_tokens)
        out.append(r)
    return out


def scripts() -> dict[str, list[Reply] | common.Forever]:
    extras = common.extra_script(*(k for k in EXTRAS if k != "multi_agent"))
    runs: dict[str, list[Reply] | common.Forever] = {
        k: v if isinstance(v, common.Forever) else as_answer(v)
        for k, v in {**common.standard_script(), **common.shape_script(), **extras}.items()}
    runs["multi_agent"] = as_answer([
        Reply(tool_calls=[call("translator", task="[run:multi_agent] Translate 'good morning'")],
              prompt_tokens=125, completion_tokens=20),
        Reply(content="bonjour", model="gpt-4o-2024-08-06", prompt_tokens=40, completion_tokens=3),
        Reply(content="In French: bonjour.", prompt_tokens=170, completion_tokens=8)])
    return runs


def documented(f: object, args: dict[str, str]) -> object:
    """smolagents' @tool reads each argument's description from a Google-style docstring."""
    lines = "\n".join(f"        {k}: {v}" for k, v in args.items())
    f.__doc__ = f"{f.__doc__}\n\n    Args:\n{lines}\n    "
    return f


def main() -> None:
    common.quiet_environment()
    warnings.simplefilter("ignore")
    cap = MemoryCapture(f"dialect-{NAME}")
    from openinference.instrumentation.smolagents import SmolagentsInstrumentor
    SmolagentsInstrumentor().instrument(tracer_provider=cap.provider)

    from smolagents import ActionStep, LogLevel, OpenAIServerModel, ToolCallingAgent, tool
    from smolagents.utils import AgentToolExecutionError

    script = Script(scripts())
    rec = Recorder(NAME, cap, script, packages=PACKAGES, notes=NOTES, answer_tools=(ANSWER,))
    described = {"city": "The city.", "order_id": "The order id.", "amount": "The amount to charge."}
    tools = []
    for f in common.make_tools(rec).values():
        names = [a for a in f.__code__.co_varnames[:f.__code__.co_argcount]]
        tools.append(tool(documented(f, {a: described[a] for a in names})))

    class Translator(ToolCallingAgent):
        def __call__(self, task: str, **kwargs: object) -> object:   # how a manager runs a managed agent
            rec.sub_agent(self.name)
            return super().__call__(task, **kwargs)

    def stop_on_tool_error(step: object, agent: object = None) -> None:
        if isinstance(step, ActionStep) and isinstance(step.error, AgentToolExecutionError):
            raise RuntimeError(f"stopped: a tool failed at step {step.step_number}")

    with ScriptedServer(script) as srv:
        def model(**kw: object) -> OpenAIServerModel:
            retries = kw.pop("max_retries", 0)
            base = {"model_id": "gpt-4o-mini", "api_base": srv.base_url, "api_key": common.DUMMY_KEY,
                    "client_kwargs": {"max_retries": retries, "timeout": 30}, "temperature": 0}
            return OpenAIServerModel(**{**base, **kw})

        def assistant(**kw: object) -> ToolCallingAgent:
            base = {"tools": tools, "model": model(), "name": "assistant", "max_steps": 8,
                    "instructions": "[agent:assistant] You answer with the tools.", "verbosity_level": LogLevel.OFF}
            return ToolCallingAgent(**{**base, **kw})
        translator = Translator(tools=[], model=model(model_id="gpt-4o"), name="translator",
                                description="Translates a text to French.", max_steps=4,
                                instructions="[agent:translator] You translate to French.",
                                verbosity_level=LogLevel.OFF)
        agents = {
            "retries": lambda: assistant(model=model(max_retries=common.RETRIES)),
            "streaming": lambda: assistant(stream_outputs=True),
            "tool_error_fatal": lambda: assistant(step_callbacks=[stop_on_tool_error]),
            "turn_limit": lambda: assistant(max_steps=common.TURN_LIMIT),
            "multi_agent": lambda: assistant(managed_agents=[translator]),
        }
        agents["retries_exhausted"] = agents["retries"]

        def run(key: str) -> None:
            # each run in its own context, as a server runs each request: the instrumentation leaves the AGENT
            # span of a run that raises attached (never ended), which would otherwise parent every later run
            contextvars.copy_context().run(agents.get(key, assistant)().run, prompt(key))

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
