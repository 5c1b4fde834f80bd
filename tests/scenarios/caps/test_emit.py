"""Caps as configuration (issue 13, point 3): collect guarded Pydantic AI runs through the scripted provider,
emit the caps with the real CLI, execute the emitted text, and run a runaway agent under it: it stops where
the caps say, and the provider saw no request past them."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

pytest.importorskip("pydantic_ai")
pytest.importorskip("agents")

from agents import Agent as AgentsAgent
from agents import OpenAIChatCompletionsModel, function_tool, set_tracing_disabled
from click.testing import CliRunner
from openai import AsyncOpenAI
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from providers import Call, ProviderServer, Reply, call, desk_tools
from pydantic_ai import Agent
from pydantic_ai.exceptions import UsageLimitExceeded
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from agentobs import Budget, FunctionModel, Kernel, StopReason
from agentobs.analysis.emit.kinds import emit
from agentobs.cli.main import cli
from agentobs.contract import CATEGORY, Category
from agentobs.domain.scenarios import new_state
from agentobs.domain.support import SupportDesk
from agentobs.errors import BudgetExceeded, InputError
from agentobs.guards.pydantic_ai import BudgetGuard
from agentobs.telemetry.otlp_json import OtlpJsonFileExporter

set_tracing_disabled(True)
BUDGET_STOPS = {stop for stop, category in CATEGORY.items() if category is Category.BUDGET}
PROMPT = "Refund 3,000 cents on ord_1001 and confirm by e-mail."


def note(text: str) -> dict:
    """Write a note."""
    return {"status": "ok", "saved": text}


def with_extra_reads(extra: int):
    def script(c: Call) -> Reply:
        done = len(c.tool_results())
        plan = [call("get_order", order_id="ord_1001")] + [call("note", text=f"read {i}") for i in range(extra)] + [
            call("issue_refund", order_id="ord_1001", amount_cents=3000, reason="damaged"),
            call("send_status_email", order_id="ord_1001")]
        return Reply(tool_calls=[plan[done]]) if done < len(plan) else Reply(text="Refund issued.")
    return script


def runaway(c: Call) -> Reply:
    """Never finishes: a new note every step (each result is new, so it makes progress and never repeats)."""
    return Reply(tool_calls=[call("note", text=f"note {c.n}")])


def pydantic_agent(srv: ProviderServer, **kw) -> Agent:
    client = AsyncOpenAI(base_url=srv.openai_base_url, api_key="test", max_retries=0)
    return Agent(OpenAIChatModel("gpt-4.1-mini", provider=OpenAIProvider(openai_client=client)), name="support-agent",
                 tools=[*desk_tools(SupportDesk()), note], **kw)


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """Twenty guarded Pydantic AI runs of 4 to 7 steps, instrumented, in an OTLP JSON file."""
    path = tmp_path_factory.mktemp("emit") / "runs.jsonl"
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(OtlpJsonFileExporter(path)))
    for i in range(20):
        with ProviderServer(with_extra_reads(i % 4)) as srv:
            agent = pydantic_agent(srv, capabilities=[BudgetGuard(Budget(max_tokens=100_000, max_steps=20,
                                                                                max_tool_calls=20))])
            agent.instrument = InstrumentationSettings(tracer_provider=tp)
            assert agent.run_sync(PROMPT).output == "Refund issued."
    tp.shutdown()
    return path


def emitted(path, kind: str) -> tuple[str, dict]:
    res = CliRunner().invoke(cli, ["caps", str(path), "--emit", kind, "--target", "0.05"])
    assert res.exit_code == 0, res.output
    ns: dict = {}
    exec(compile(res.stdout, f"<emitted {kind}>", "exec"), ns)        # the text is valid, ready-to-paste Python
    return res.stdout, ns


def test_emitted_usage_limits_are_built_by_pydantic_ai_and_stop_a_runaway_where_they_say(traces):
    text, ns = emitted(traces, "pydantic-ai")
    limits = ns["usage_limits"]
    assert type(limits).__name__ == "UsageLimits"
    assert limits.request_limit == 8 and limits.tool_calls_limit == 7       # p95 of 4..7 steps, plus 10%
    assert limits.total_tokens_limit is not None
    for line in text.splitlines():
        if "_limit=" in line:
            assert "# cuts off 0.0% of 20 successful runs" in line
    with ProviderServer(runaway) as srv, pytest.raises(UsageLimitExceeded):
        pydantic_agent(srv).run_sync(PROMPT, usage_limits=limits)
    assert 1 <= srv.count <= limits.request_limit


def test_emitted_budget_drives_the_guard_and_the_kernel(traces):
    _, ns = emitted(traces, "budget")
    budget = ns["budget"]
    assert isinstance(budget, Budget) and budget.repeat_window == "since_progress"
    assert (budget.max_steps, budget.max_tool_calls) == (8, 7)   # above the 6 tool calls of the longest runs
    with ProviderServer(runaway) as srv, pytest.raises(BudgetExceeded) as stop:
        pydantic_agent(srv, capabilities=[BudgetGuard(budget)]).run_sync(PROMPT)
    s = stop.value
    assert s.stop in BUDGET_STOPS
    assert srv.count <= budget.max_steps
    if s.stop is StopReason.MAX_STEPS:
        assert srv.count == budget.max_steps
    if s.stop is StopReason.MAX_TOKENS:
        assert srv.tokens() <= budget.max_tokens < s.observed
    # the same Budget in our own kernel: a model that never finishes stops at the step cap
    roomy_but_steps = replace(budget, max_tool_calls=100, max_tokens=10**6, max_repeat=100, max_stalls=100,
                              deadline_s=10**4)
    k = Kernel(FunctionModel(lambda v, i: {"type": "tool", "name": "get_order", "args": {"order_id": "ord_1001"}}),
               SupportDesk(), price_as="gpt-4.1-mini", budget=roomy_but_steps)
    st = k.run(new_state())
    assert st.stop == "max_steps" and st.step == budget.max_steps


def test_the_emitted_budget_lets_every_recorded_successful_run_finish_under_the_guard(traces):
    """The guard checks before each model call that the tokens spent, the next input and a whole reply fit under
    max_tokens, and prices that reply ahead for max_usd: caps at the runs' totals plus 10% stopped every successful
    run before its last call, while their comments said "cuts off 0.0%" (found by fuzzing: 100 of 100 real Pydantic
    AI runs). The emitted caps now hold that reserve, and the same runs finish under them."""
    text, ns = emitted(traces, "budget")
    budget = ns["budget"]
    assert budget.max_usd is not None and "prices ahead" in text and "keeps in reserve" in text
    roomy_clock = replace(budget, deadline_s=10**4)          # (active time of local runs: not what is tested here)
    for i in range(20):
        with ProviderServer(with_extra_reads(i % 4)) as srv:
            out = pydantic_agent(srv, capabilities=[BudgetGuard(roomy_clock)]).run_sync(PROMPT)
            assert out.output == "Refund issued."


def test_emitted_agents_config_runs_under_the_guard(traces):
    _text, ns = emitted(traces, "openai-agents")
    assert ns["max_turns"] == 8
    guard = ns["guard"]
    with ProviderServer(runaway) as srv:
        client = AsyncOpenAI(base_url=srv.openai_base_url, api_key="test", max_retries=0)
        agent = AgentsAgent(name="support-agent", model=OpenAIChatCompletionsModel("gpt-4.1-mini", client),
                            tools=[function_tool(f) for f in (*desk_tools(SupportDesk()), note)])
        with pytest.raises(BudgetExceeded) as stop:
            guard.run_sync(agent, PROMPT)
    assert stop.value.stop in BUDGET_STOPS
    assert 1 <= srv.count <= guard.budget.max_steps


def test_json_format_and_bad_kind(traces):
    res = CliRunner().invoke(cli, ["caps", str(traces), "--emit", "budget", "--format", "json"])
    assert res.exit_code == 0
    data = json.loads(res.stdout)
    assert data["emit"] == "budget" and data["target"] == 0.01
    names = [s["name"] for s in data["settings"]]
    assert names[:3] == ["max_steps", "max_tool_calls", "max_tokens"]
    assert all(0 <= s["cutoff_share"] <= 1 and s["successful_runs"] == 20 for s in data["settings"])
    assert "budget = Budget(" in data["text"]
    with pytest.raises(InputError):
        emit([], "langgraph")
    res = CliRunner().invoke(cli, ["caps", str(traces), "--emit", "langgraph"])
    assert res.exit_code == 2 and "langgraph" in res.output


def test_nothing_to_recommend_emits_valid_text_that_says_so():
    e = emit([], "budget")
    ns: dict = {}
    exec(e.text, ns)
    assert ns["budget"] == Budget() and "not set" in e.text


def test_a_tiny_token_cap_still_makes_a_budget_and_the_warnings_are_said(traces):
    """Successful runs that recorded (almost) no tokens gave max_tokens=1 and max_output_tokens=1: a Budget that
    raises ConfigError when pasted. The token cap now holds a whole reply on top of the runs' tokens; and `--emit`
    says the caps' warnings on stderr, as the table does (20 successful runs: too few for a 1% cut-off)."""
    from agentobs.analysis.report.engine import analyze
    caps = [replace(c, recommended=1.0, base=1.0, cutoff={"1": 0.0}) if c.dimension == "tokens" else c
            for c in analyze([str(traces)]).caps]
    for kind in ("budget", "openai-agents"):
        e = emit(caps, kind)
        ns: dict = {}
        exec(e.text, ns)                                  # the configuration it prints can be made
        assert "max_tokens=301," in e.text and "tokens" not in e.missing   # a reply's reserve on top of the 1
    res = CliRunner().invoke(cli, ["caps", str(traces), "--emit", "budget"])
    assert res.exit_code == 0 and "budget = Budget(" in res.stdout
    assert "agentobs: warning: only 20 successful runs" in res.stderr and "agentobs: warning" not in res.stdout
