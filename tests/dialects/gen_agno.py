"""Agno agents (``OpenAIChat`` pointed at the scripted server) traced by OpenInference
(openinference-instrumentation-agno).

Agno's own telemetry is off (``AGNO_TELEMETRY=false`` and ``telemetry=False`` on every agent and team). Shapes:
plain, http, two_runs, retries (Agno's own model retries: ``OpenAIChat(retries=2, delay_between_retries=0)``, the
OpenAI client's ``max_retries=0``: each attempt is its own ``invoke``, so one LLM span per attempt),
streaming (``Agent.run(stream=True)``; Agno asks for the usage chunk), parallel, tool_error_fatal (the tool raises
``StopAgentRun``, the exception Agno stops a run on), turn_limit (``tool_call_limit=3``) and multi_agent (a
``Team`` whose leader delegates to a translator member with ``delegate_task_to_member``).

By default a tool that raises is handed back to the model; a model error does not raise out of ``Agent.run``
(the run output's status is ``error``). ``tool_call_limit`` does not end the loop: a tool call past the limit is
not executed, the model gets "Tool call limit reached ... not executed" as its result and is asked again, so the
turn_limit script answers in text after the refused call (a model that kept asking would be refused forever).
The truth calls that run's stop reason ``turn_limit``: a tool call the model asked for never ran (the tool log
has no execution for it) and no tool failed.
"""
from __future__ import annotations

import os
import warnings

import common
import limits
from common import PLAIN, SHAPE_OF, HttpApp, MemoryCapture, Recorder, Reply, Script, ScriptedServer, call, prompt

NAME = "agno"
PACKAGES = ("agno", "openinference-instrumentation-agno", "openinference-semantic-conventions", "openai",
            "opentelemetry-sdk", "opentelemetry-instrumentation-wsgi")
EXTRAS = ("retries", "retries_exhausted", "streaming", "parallel", "tool_error_fatal", "turn_limit", "multi_agent")
NOTES = ("a tool that raises is handed back to the model as the tool's result (tool_error has a second model "
         "call); tool_error_fatal's tool raises agno.exceptions.StopAgentRun, which ends the run",
         "a model error does not raise out of Agent.run: the run output's status is 'error' (raised is null); "
         "OpenInference marks the agent span with status 'run status: error'",
         "retries: Agno's own model retries (OpenAIChat(retries=2, delay_between_retries=0), the OpenAI client's "
         "max_retries=0): every attempt is its own OpenAIChat.invoke LLM span, siblings under the agent span",
         f"turn_limit: tool_call_limit={common.TURN_LIMIT}; the call past the limit is not executed, the model gets "
         "'Tool call limit reached' as its result and answers in text (Agno does not stop the loop: a model that "
         "kept asking would be refused forever); stop_reason turn_limit because a tool call asked for never ran",
         "multi_agent: a Team (coordinate mode) whose leader calls delegate_task_to_member (a tool call of the "
         "run, logged by a tool hook); the translator member's AGENT span runs inside the delegate TOOL span's "
         "time but is its sibling under the team's AGENT span (the tool is a generator)",
         "OpenInference records llm.token_count.prompt/completion and prompt_details.cache_read; the served "
         "reasoning tokens are not in the spans")


def team_script() -> dict[str, list[Reply]]:
    """multi_agent with Agno's delegation tool in place of ask_translator (same replies, same tokens)."""
    return {"multi_agent": [
        Reply(tool_calls=[call("delegate_task_to_member", member_id="translator",
                               task="[run:multi_agent] Translate 'good morning'")],
              prompt_tokens=125, completion_tokens=20),
        Reply(content="bonjour", model="gpt-4o-2024-08-06", prompt_tokens=40, completion_tokens=3),
        Reply(content="In French: bonjour.", prompt_tokens=170, completion_tokens=8)]}


def limit_script() -> dict[str, list[Reply]]:
    """turn_limit: the lookups of the shared script until one past the limit, then the model's text answer."""
    turns = [common._turn(i) for i in range(common.TURN_LIMIT + 1)]
    return {"turn_limit": [*turns, Reply(content="I could not finish within the tool call limit.",
                                         prompt_tokens=100 + 30 * len(turns), completion_tokens=10)]}


class LimitRecorder(Recorder):
    """The truth of a run whose tool call past ``tool_call_limit`` was refused: ``limits.apply(refused=True)``."""

    def truth(self) -> dict:
        return limits.apply(super().truth(), self.script.log, self.tools, refused=True)


def main() -> None:
    common.quiet_environment()
    os.environ["AGNO_TELEMETRY"] = "false"
    warnings.simplefilter("ignore")
    cap = MemoryCapture(f"dialect-{NAME}")
    from openinference.instrumentation.agno import AgnoInstrumentor
    AgnoInstrumentor().instrument(tracer_provider=cap.provider)

    from agno.agent import Agent
    from agno.exceptions import StopAgentRun
    from agno.models.openai import OpenAIChat
    from agno.team import Team

    extras = [k for k in EXTRAS if k not in ("turn_limit", "multi_agent")]
    script = Script({**common.standard_script(), **common.shape_script(), **common.extra_script(*extras),
                     **limit_script(), **team_script()})
    rec = LimitRecorder(NAME, cap, script, packages=PACKAGES, notes=NOTES)
    tools = common.make_tools(rec)

    def charge_card(amount: int) -> str:   # tool_error_fatal: the scripted failure as the exception Agno stops on
        """Charge the customer's card (always fails in the fixtures)."""
        try:
            return tools["charge_card"](amount)
        except RuntimeError as e:
            raise StopAgentRun(str(e)) from e

    def log_tool(function_name: str, function_call, arguments: dict):
        """The team leader's tools (delegate_task_to_member) are Agno's: logged by a tool hook."""
        rec.tool(function_name, dict(arguments))
        return function_call(**arguments)

    def member_started(agent) -> None:
        rec.sub_agent(agent.name)

    with ScriptedServer(script) as srv:
        def model(name: str = "gpt-4o-mini", **kw: object) -> OpenAIChat:
            return OpenAIChat(id=name, base_url=srv.base_url, api_key=common.DUMMY_KEY, max_retries=0, timeout=30,
                              temperature=0, **kw)

        def agent(fns: list, **kw: object) -> Agent:
            base = {"name": "assistant", "model": model(), "telemetry": False,
                    "instructions": "[agent:assistant] You answer with the tools."}
            return Agent(tools=fns, **{**base, **kw})
        plain = list(tools.values())
        assistant = agent(plain)
        retrying = agent(plain, model=model(retries=common.RETRIES, delay_between_retries=0))
        translator = Agent(name="translator", id="translator", model=model("gpt-4o"), telemetry=False,
                           instructions="[agent:translator] You translate to French.", pre_hooks=[member_started])
        team = Team(name="orchestrator", members=[translator], model=model(), telemetry=False,
                    instructions="[agent:orchestrator] You delegate translations.", tool_hooks=[log_tool])
        agents = {"retries": retrying, "retries_exhausted": retrying,
                  "tool_error_fatal": agent([*plain[:3], charge_card]),
                  "turn_limit": agent(plain, tool_call_limit=common.TURN_LIMIT),
                  "multi_agent": team}

        def run(key: str) -> None:
            a = agents.get(key, assistant)
            if key == "streaming":
                for _ in a.run(prompt(key), stream=True):
                    pass
            elif key == "multi_agent":
                a.run(prompt(key, "Say good morning in French."))
            else:
                a.run(prompt(key))

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
