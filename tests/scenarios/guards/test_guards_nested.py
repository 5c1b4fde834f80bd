"""The budget guards over nested agents (issue 43): the run's whole spend, sub-agents included, stays within the
budget, checked before it is spent, in the OpenAI Agents SDK and in Pydantic AI, through the real frameworks and
the real OpenAI SDK against a scripted server on 127.0.0.1.

Before: an agent used as a tool (``Agent.as_tool``) made its own model calls outside the guard (``max_steps=3,
max_tokens=5000``: 12 requests, 15,720 tokens served), and a Pydantic AI delegate run from a tool with the parent's
usage ran until Pydantic AI's own default limit (50 requests). The analysis counts a nested agent's calls in the
run, and computes its caps on those totals: the guard now enforces them on the same totals.
"""
from __future__ import annotations

import logging
from typing import Any

import pytest

pytest.importorskip("agents")
pytest.importorskip("pydantic_ai")
pytest.importorskip("openai")

from agents import Agent as OAAgent
from agents import OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
from agents.tool_context import ToolContext
from providers import ProviderServer, delegation, desk_tools, handoff_then_search, outcome
from pydantic_ai import Agent as PAAgent
from pydantic_ai import RunContext
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from agentobs import Budget, StopReason
from agentobs.domain.support import SupportDesk
from agentobs.errors import BudgetExceeded
from agentobs.guards import openai_agents as oa
from agentobs.guards import pydantic_ai as pa

set_tracing_disabled(True)     # the SDK's own trace export goes to a hosted service: never in tests

MODEL = "gpt-4.1-mini"
LOOSE = dict(max_steps=40, max_tool_calls=40, max_stalls=40, max_repeat=40)   # every limit but the one under test


# -- the OpenAI Agents SDK ------------------------------------------------------------------------------------

def run_openai_agents(script: Any, budget: Budget | None, *, how: str = "as_tool", tracer: Any = None) -> Any:
    """A parent agent with a sub-agent that has the desk's tools: used as a tool (``as_tool``), run by a function
    tool through ``guard.run`` (``guard_run``) or through ``Runner.run`` with the tool's config and context
    (``tool_config``), or handed off to (``handoff``). ``budget=None``: no guard."""
    desk = SupportDesk()
    guard = oa.BudgetGuard(budget, tracer_provider=tracer) if budget is not None else None
    with ProviderServer(script) as srv:
        model = OpenAIChatCompletionsModel(MODEL, srv.async_openai())
        expert = OAAgent(name="expert", model=model, tools=[function_tool(f) for f in desk_tools(desk)])
        if how == "as_tool":
            tools = [expert.as_tool(tool_name="ask_expert", tool_description="Ask the policy expert.")]
            parent = OAAgent(name="support-agent", model=model, tools=tools)
        elif how == "handoff":
            parent = OAAgent(name="support-agent", model=model, handoffs=[expert])
        else:
            @function_tool
            async def ask_expert(ctx: ToolContext[Any], input: str) -> str:
                """Ask the policy expert."""
                if how == "guard_run":
                    return (await guard.run(expert, input)).final_output
                return (await Runner.run(expert, input, run_config=ctx.run_config, context=ctx)).final_output
            parent = OAAgent(name="support-agent", model=model, tools=[ask_expert])

        def run() -> Any:
            if guard is None:
                return Runner.run_sync(parent, "What is the refund policy?", max_turns=60).final_output
            return guard.run_sync(parent, "What is the refund policy?").final_output
        return outcome(srv, desk, run)


# -- Pydantic AI -------------------------------------------------------------------------------------------------

def run_pydantic_ai(script: Any, budget: Budget | None, *, how: str = "capability", tracer: Any = None) -> Any:
    """A parent agent whose tool runs a delegate agent with the parent's usage (Pydantic AI's documented
    delegation). The delegate carries the guard in its capabilities (``capability``), is given it for the run
    (``run_capability``), or has none (``unguarded``)."""
    from pydantic_ai.models.instrumented import InstrumentationSettings

    desk = SupportDesk()
    guard = pa.BudgetGuard(budget) if budget is not None else None
    with ProviderServer(script) as srv:
        model = OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=srv.async_openai()))
        own = [guard] if guard is not None and how == "capability" else []
        expert = PAAgent(model, name="expert", tools=desk_tools(desk), capabilities=own)
        parent = PAAgent(model, name="support-agent", capabilities=[guard] if guard is not None else [])
        if tracer is not None:
            parent.instrument = InstrumentationSettings(tracer_provider=tracer)

        @parent.tool
        async def ask_expert(ctx: RunContext[None], question: str) -> str:
            """Ask the policy expert."""
            extra = {"capabilities": [guard]} if guard is not None and how == "run_capability" else {}
            return (await expert.run(question, usage=ctx.usage, **extra)).output

        return outcome(srv, desk, lambda: parent.run_sync("What is the refund policy?").output)


RUNNERS = {"openai_agents": (run_openai_agents, "as_tool", "input"),       # (runner, how, the tool's argument)
           "pydantic_ai": (run_pydantic_ai, "capability", "question")}


def nested(framework: str, budget: Budget | None, **script: Any) -> Any:
    """The framework's parent agent running its sub-agent (``delegation(**script)``) under ``budget``."""
    run, how, arg = RUNNERS[framework]
    return run(delegation("ask_expert", arg=arg, **script), budget, how=how)


# -- the tests ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("framework", RUNNERS)
def test_a_nested_agent_under_every_limit_runs_unchanged(framework):
    plain, guarded = nested(framework, None), nested(framework, Budget(max_tokens=200_000, **LOOSE))
    assert plain.stop is None and guarded.stop is None
    assert guarded.output == plain.output == "The expert's answers are in."
    assert guarded.served == plain.served == 3 * 5 + 4           # three sub-runs of five requests, four of the parent
    assert guarded.desk.calls == plain.desk.calls == 12


@pytest.mark.parametrize("framework", RUNNERS)
def test_the_step_cap_counts_the_nested_agents_requests(framework):
    """The issue's case: max_steps=3, max_tokens=5000 served 12 requests and 15,720 tokens (OpenAI Agents), 50
    requests (Pydantic AI). Now three requests in all, then max_steps."""
    out = nested(framework, Budget(max_steps=3, max_tokens=5000))
    assert out.stop is not None and out.stop.stop is StopReason.MAX_STEPS
    assert out.served == 3 and out.tokens <= 5000
    assert out.desk.calls == 2                     # the parent's request, then two of the sub-agent's


@pytest.mark.parametrize("framework", RUNNERS)
def test_the_token_cap_holds_over_the_nested_agents_requests(framework):
    budget = Budget(max_tokens=5000, **LOOSE)
    out = nested(framework, budget)
    assert out.stop is not None and out.stop.stop is StopReason.MAX_TOKENS
    assert out.tokens <= budget.max_tokens < out.stop.observed          # checked before the crossing request
    assert 2 <= out.served < 3 * 5 + 4


@pytest.mark.parametrize("framework", RUNNERS)
def test_the_tool_call_cap_counts_the_nested_agents_tool_calls(framework):
    """The delegating call counts once, and each of the nested agent's calls counts (the analysis counts both)."""
    budget = Budget(max_tokens=200_000, **{**LOOSE, "max_tool_calls": 6})
    out = nested(framework, budget)
    assert out.stop is not None and out.stop.stop is StopReason.MAX_TOOL_CALLS
    delegating = 2                                      # the parent's two calls that ran a sub-agent
    assert out.desk.calls + delegating == budget.max_tool_calls


@pytest.mark.parametrize("framework", RUNNERS)
def test_a_nested_agent_repeating_a_call_stops_the_run(framework):
    out = nested(framework, Budget(max_tokens=200_000, **{**LOOSE, "max_repeat": 2}), same_query=True)
    assert out.stop is not None and out.stop.stop is StopReason.REPEATED_CALL
    assert out.desk.calls <= 3                         # (OpenAI Agents: the third runs before the guard sees it)


@pytest.mark.parametrize("framework", RUNNERS)
def test_nested_agents_side_by_side_cannot_together_pass_the_token_cap(framework):
    """Two sub-agents run concurrently (two delegating calls in one reply): each request is checked with what the
    other's unanswered request may still spend."""
    budget = Budget(max_tokens=5000, **LOOSE)
    out = nested(framework, budget, rounds=2, parallel=2)
    assert out.stop is not None and out.stop.stop is StopReason.MAX_TOKENS
    assert out.tokens <= budget.max_tokens


# -- per framework: the ways a nested agent runs -------------------------------------------------------------------

@pytest.mark.parametrize("how", ["guard_run", "tool_config"])
def test_openai_agents_a_tool_that_runs_an_agent_keeps_the_runs_budget(how):
    """A function tool that runs an agent itself: with guard.run (a guard inside a guarded run charges that run's
    account), or Runner.run with the tool's run config and context."""
    out = run_openai_agents(delegation("ask_expert"), Budget(max_steps=3, max_tokens=5000), how=how)
    assert out.stop is not None and out.stop.stop is StopReason.MAX_STEPS and out.served == 3
    assert out.desk.calls == 2


def test_openai_agents_a_handoff_is_counted_in_the_run_and_is_no_tool_call():
    script = handoff_then_search("expert")
    budget = Budget(max_tokens=200_000, **{**LOOSE, "max_steps": 4})
    out = run_openai_agents(script, budget, how="handoff")
    assert out.stop.stop is StopReason.MAX_STEPS and out.served == 4
    cap = Budget(max_tokens=200_000, **{**LOOSE, "max_tool_calls": 3})
    out = run_openai_agents(script, cap, how="handoff")
    assert out.stop.stop is StopReason.MAX_TOOL_CALLS and out.desk.calls == 3     # the handoff took none of them


@pytest.mark.parametrize("how", ["capability", "run_capability"])
def test_pydantic_ai_a_delegate_with_the_guard_is_checked_before_each_request(how):
    out = run_pydantic_ai(delegation("ask_expert", arg="question"), Budget(max_steps=3, max_tokens=5000), how=how)
    assert out.stop is not None and out.stop.stop is StopReason.MAX_STEPS and out.served == 3
    assert out.desk.calls == 2


def test_pydantic_ai_a_delegate_without_the_guard_is_charged_when_its_tool_returns(caplog):
    """Pydantic AI runs a delegate with its own capabilities only: without the guard its requests cannot be checked
    before they go out. What it spent (in the ctx.usage it shares) is charged when its tool returns, the run stops
    before the parent's next request, and a warning says how to check the delegate's requests too."""
    with caplog.at_level(logging.WARNING, logger="agentobs.guards"):
        out = run_pydantic_ai(delegation("ask_expert", arg="question"), Budget(max_steps=3, max_tokens=5000),
                              how="unguarded")
    assert out.stop is not None and out.stop.stop is StopReason.MAX_STEPS
    assert out.served == 1 + 5 and out.stop.observed == out.served     # the delegate's five requests, charged
    assert any("without the budget guard" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("framework", RUNNERS)
def test_the_agent_span_carries_the_whole_runs_totals(framework, memory_tracing):
    """The run's span says what the analysis will count: every request and tool call, nested ones included."""
    provider, exporter = memory_tracing
    run, how, arg = RUNNERS[framework]
    out = run(delegation("ask_expert", arg=arg), Budget(max_tokens=200_000, **LOOSE), how=how, tracer=provider)
    assert out.stop is None
    provider.force_flush()
    roots = [s for s in exporter.get_finished_spans() if (s.attributes or {}).get("agentobs.stop_reason")]
    (root,) = roots
    assert root.attributes["agentobs.steps"] == out.served == 19
    assert root.attributes["agentobs.tool_calls"] == out.desk.calls + 3
    assert root.attributes["agentobs.tokens"] == out.tokens


# -- the account both guards keep -------------------------------------------------------------------------------

def _account(**budget: Any) -> Any:
    from agentobs.guards._accountant import Accountant

    return Accountant(Budget(**budget), fail=lambda b, detail: BudgetExceeded(b.stop, b.limit_value, b.observed,
                                                                               detail))


NOT_COUNTS = ["12", 12.5, float("nan"), None, True, -3, 2**60, 10**5000, object(), [1], {"n": 1}]


@pytest.mark.parametrize("bad", NOT_COUNTS, ids=lambda v: type(v).__name__ + ("-big" if v == 10**5000 else ""))
def test_a_usage_field_that_is_no_count_is_unreported_never_an_exception(bad):
    """A guard given a non-numeric usage field raised TypeError. A part that is no count is not reported; an input
    or output that is none makes the report an estimate (the request's input estimate, the reply's text)."""
    from agentobs.contract.events import TokenUsage

    acct = _account(max_tokens=100_000)
    call = acct.before_model_request(input_chars=400, model=MODEL, provider="openai")
    acct.model_returned(call, TokenUsage(input_tokens=bad, output_tokens=7, source="reported",
                                         cache_read_input_tokens=bad, cache_creation_input_tokens=bad,
                                         reasoning_output_tokens=bad), model=MODEL, provider="openai",
                        estimated_output=9)
    assert (acct.input_tokens, acct.output_tokens) == (100, 9)
    call = acct.before_model_request(input_chars=400, model=MODEL, provider="openai")
    acct.model_returned(call, TokenUsage(input_tokens=50, output_tokens=7, source="reported",
                                         cache_read_input_tokens=bad, cache_creation_input_tokens=bad,
                                         reasoning_output_tokens=bad), model=MODEL, provider="openai")
    assert (acct.input_tokens, acct.output_tokens) == (100 + 50, 9 + 7)          # the parts alone are dropped
    assert acct.cache_read_tokens == acct.cache_creation_tokens == acct.reasoning_tokens == 0
    acct.own(object(), input_tokens=bad, output_tokens=bad)
    acct.reconcile(object(), requests=bad, input_tokens=bad, output_tokens=bad, tool_calls=bad)


@pytest.mark.parametrize("bad", NOT_COUNTS, ids=lambda v: type(v).__name__ + ("-big" if v == 10**5000 else ""))
def test_each_frameworks_usage_reader_takes_what_is_no_count_as_unreported(bad):
    from types import SimpleNamespace as NS

    assert oa._usage(NS(input_tokens=bad, output_tokens=3)) is None
    assert pa._usage(NS(input_tokens=bad, output_tokens=3)) is None
    got = oa._usage(NS(input_tokens=5, output_tokens=3, input_tokens_details=NS(cached_tokens=bad),
                       output_tokens_details=bad))
    assert (got.input_tokens, got.output_tokens, got.cache_read_input_tokens, got.reasoning_output_tokens) == \
        (5, 3, None, None)
    got = pa._usage(NS(input_tokens=5, output_tokens=3, cache_read_tokens=bad, cache_write_tokens=bad,
                       details={"reasoning_tokens": bad, "unknown": bad}))
    assert (got.cache_read_input_tokens, got.cache_creation_input_tokens, got.reasoning_output_tokens) == \
        (None, None, None)
    assert pa._usage(NS(input_tokens=5, output_tokens=3, details=bad)).reasoning_output_tokens is None
    assert oa._usage(None) is None and pa._usage(object()) is None


def test_pydantic_ai_a_model_reporting_non_numeric_usage_runs_under_the_guard():
    """Through the framework: a model whose usage holds text and unknown detail keys (TypeError in the guard)."""
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.usage import RequestUsage

    usage = RequestUsage(input_tokens=12, output_tokens=5, cache_read_tokens="many",
                         details={"reasoning_tokens": "some", "new_kind": 1.5})
    agent = PAAgent(FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart("hi")], usage=usage)),
                    capabilities=[pa.BudgetGuard(Budget(max_tokens=100_000))])
    assert agent.run_sync("x").output == "hi"


def test_reconcile_charges_what_a_framework_counted_out_of_sight_once():
    acct = _account(max_tokens=100_000, max_steps=10)
    usage = object()
    nested = acct.before_model_request(input_chars=800, model=MODEL, provider="openai", watched=False)
    acct.reconcile(usage, requests=1, input_tokens=300, output_tokens=40)      # the nested request, answered
    assert nested not in acct._open and acct.steps == 1 and acct.tokens == 340 and acct.unchecked_requests == 0
    acct.reconcile(usage, requests=1, input_tokens=300, output_tokens=40)      # nothing new: nothing charged
    assert acct.tokens == 340
    acct.reconcile(usage, requests=3, input_tokens=300, output_tokens=40, tool_calls=2)   # two never checked,
    assert acct.steps == 3 and acct.unchecked_requests == 2 and acct.tool_calls == 2   # reported no usage:
    assert acct.tokens == 340 + 2 * 300                                        # a full reply each
    watched = acct.before_model_request(input_chars=40, model=MODEL, provider="openai")
    acct.model_returned(watched, None, model=MODEL, provider="openai", estimated_output=5)
    acct.own(usage, input_tokens=10, output_tokens=5)                          # what the guard charged itself
    before = acct.tokens
    acct.reconcile(usage, requests=4, input_tokens=310, output_tokens=45)
    assert acct.tokens == before and acct.steps == 4


def test_requests_in_flight_hold_their_projection_and_a_breach_holds_for_the_rest_of_the_run():
    acct = _account(max_tokens=3000, max_output_tokens=300)
    acct.before_model_request(input_chars=4000, model=MODEL, provider="openai", conversation="a", watched=False)
    with pytest.raises(BudgetExceeded) as stop:        # 1000 + 300 held by the first; 1500 + 300 more: 3100
        acct.before_model_request(input_chars=6000, model=MODEL, provider="openai", conversation="b")
    assert stop.value.stop is StopReason.MAX_TOKENS and stop.value.observed == 1300 + 1500 + 300
    with pytest.raises(BudgetExceeded) as again:      # a framework swallowed the stop: every later check raises it
        acct.before_tool_call("get_order", {"order_id": "ord_1"})
    assert again.value.stop is StopReason.MAX_TOKENS and "checked before the model request" in str(again.value)
