"""The budget guard for Pydantic AI, through the real OpenAI SDK against a scripted server on 127.0.0.1 (issue 13).

For each limit: a run that would cross it stops before the crossing request with the right stop reason, and
the server saw no request past it; a run under every limit completes unchanged; the seed's scenarios keep
their stop reasons; the agent span carries the stop reason so the analysis reads the run like one of ours.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")
pytest.importorskip("openai")

from openai import AsyncOpenAI  # noqa: E402
from providers import ProviderServer, Reply, call, desk_tools, new_ids, normal, same_call, search_loop  # noqa: E402
from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.exceptions import UsageLimitExceeded  # noqa: E402
from pydantic_ai.models.instrumented import InstrumentationSettings  # noqa: E402
from pydantic_ai.models.openai import OpenAIChatModel  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402

from agentobs import Budget, Prices, StopReason  # noqa: E402
from agentobs.domain.support import SupportDesk  # noqa: E402
from agentobs.errors import BudgetExceeded, ConfigError  # noqa: E402
from agentobs.guards.pydantic_ai import BudgetGuard, BudgetStop  # noqa: E402

PROMPT = "The jacket on order ord_1001 arrived damaged. Please refund 3,000 cents and send me a confirmation."
ROOMY = dict(max_tokens=100_000, max_output_tokens=300)


@dataclass
class Outcome:
    stop: BudgetExceeded | None
    output: Any
    served: int
    tokens: int
    desk: SupportDesk
    log: list[dict[str, Any]]


def run(script: Any, budget: Budget | None, *, model: str = "gpt-4.1-mini", tracer: Any = None,
        prices: Prices | None = None, usage_limits: Any = None) -> Outcome:
    desk = SupportDesk()
    with ProviderServer(script) as srv:
        client = AsyncOpenAI(base_url=srv.openai_base_url, api_key="test", max_retries=0)
        m = OpenAIChatModel(model, provider=OpenAIProvider(openai_client=client))
        caps = [BudgetGuard(budget, prices=prices)] if budget is not None else []
        agent = Agent(m, name="support-agent", capabilities=caps, tools=desk_tools(desk))
        if tracer is not None:
            agent.instrument = InstrumentationSettings(tracer_provider=tracer)
        stop, output = None, None
        try:
            output = agent.run_sync(PROMPT, usage_limits=usage_limits).output
        except BudgetExceeded as exc:
            stop = exc
        return Outcome(stop, output, srv.count, srv.tokens(), desk, list(srv.log))


def test_a_run_under_every_limit_completes_unchanged():
    plain = run(normal(), None)
    guarded = run(normal(), Budget(max_steps=4, max_tool_calls=4, max_usd=0.05, **ROOMY))
    assert plain.stop is None and guarded.stop is None
    assert guarded.output == plain.output == "Refund issued and confirmation sent."
    assert guarded.served == plain.served == 4
    assert guarded.desk.effects == plain.desk.effects == [("refund", "ord_1001", 3000), ("email", "ord_1001")]
    # the output cap goes out with every request, as the reserve assumes
    assert all(r["body"]["max_completion_tokens"] == 300 or r["body"].get("max_tokens") == 300 for r in guarded.log)


@pytest.mark.parametrize("script, budget, stop, served", [
    (normal(), Budget(max_steps=3, **ROOMY), StopReason.MAX_STEPS, 3),
    (normal(), Budget(max_tool_calls=2, **ROOMY), StopReason.MAX_TOOL_CALLS, 2),
    (same_call, Budget(**ROOMY), StopReason.REPEATED_CALL, 3),
    (new_ids, Budget(**ROOMY), StopReason.NO_PROGRESS, 3),
], ids=["max_steps", "max_tool_calls", "repeated_call", "no_progress"])
def test_each_count_limit_stops_before_the_crossing_request(script, budget, stop, served):
    out = run(script, budget)
    assert isinstance(out.stop, BudgetStop) and isinstance(out.stop, UsageLimitExceeded)
    assert out.stop.stop is stop and out.stop.breach.stop is stop
    assert out.stop.breach.limit == {StopReason.MAX_STEPS: "max_steps", StopReason.MAX_TOOL_CALLS: "max_tool_calls",
                                     StopReason.REPEATED_CALL: "max_repeat", StopReason.NO_PROGRESS: "max_stalls"}[stop]
    assert out.served == served


def test_tool_calls_of_one_reply_that_would_pass_the_limit_stop_before_any_runs():
    script = lambda c: Reply(tool_calls=[call("get_order", order_id=f"ord_{i}") for i in (1001, 1004, 9999)]) \
        if c.n == 1 else Reply(text="ok")
    out = run(script, Budget(max_tool_calls=2, **ROOMY))
    assert out.stop.stop is StopReason.MAX_TOOL_CALLS and out.stop.observed == 3
    assert out.desk.calls == 0 and out.served == 1       # none runs: none is cancelled half-way
    ok = run(script, Budget(max_tool_calls=4, **ROOMY))   # three fit: all run, then the answer
    assert ok.stop is None and ok.desk.calls == 3


def test_token_cap_with_reserve_stops_before_the_request_that_could_cross_it():
    budget = Budget(max_tokens=4000, max_steps=20, max_tool_calls=20, max_stalls=10)   # seed 000 scenario D
    out = run(search_loop, budget)
    assert out.stop.stop is StopReason.MAX_TOKENS
    assert out.tokens <= budget.max_tokens                # what the provider billed stays under the cap
    assert out.stop.observed > budget.max_tokens           # spent + next input + a full reply would not
    unguarded_calls = run(search_loop, Budget(max_tokens=10**6, max_steps=20, max_tool_calls=20, max_stalls=10))
    assert unguarded_calls.served > out.served


def test_dollar_cap_prices_the_next_request_and_its_reserve_ahead():
    prices = Prices()
    full = run(normal(), Budget(max_usd=1.0, **ROOMY))
    per_call = [prices.cost("gpt-4.1-mini", "openai", *r["usage"]) for r in full.log]
    cap = round(sum(per_call[:2]) + per_call[2] / 2, 9)     # the third request would cross it
    out = run(normal(), Budget(max_usd=cap, **ROOMY))
    assert out.stop.stop is StopReason.MAX_USD
    assert out.served <= 2
    spent = sum(prices.cost("gpt-4.1-mini", "openai", *r["usage"]) for r in out.log)
    assert spent <= cap < out.stop.observed


def test_an_unpriced_model_under_a_dollar_budget_is_refused_before_any_request():
    with pytest.raises(ConfigError, match="no price"):
        run(normal(), Budget(max_usd=0.05, **ROOMY), model="my-local-model")
    out = run(normal(), Budget(max_usd=0.05, **ROOMY), model="my-local-model",
              prices=Prices({"my-local-model": (0.1, 0.2)}))
    assert out.stop is None and out.served == 4


def test_deadline_cuts_a_slow_request_off_at_the_time_left():
    # (1.5 s: time for the request to reach the server on a loaded machine; it flaked at 0.3 s under load)
    out = run(lambda c: Reply(text="late", delay_s=5.0), Budget(deadline_s=1.5, **ROOMY))
    assert out.stop.stop is StopReason.DEADLINE
    assert out.served == 1 and out.output is None


def test_seed_scenarios_keep_their_stop_reasons():
    """Seed 000's table, under Pydantic AI with the guard (A, B, C, D, E, F)."""
    table = {
        "A normal run": (normal(), Budget(**ROOMY), None),
        "B same call repeated": (same_call, Budget(**ROOMY), StopReason.REPEATED_CALL),
        "C new ids every step": (new_ids, Budget(**ROOMY), StopReason.NO_PROGRESS),
        "D large results": (search_loop, Budget(max_stalls=10, max_tool_calls=20, max_steps=20),
                            StopReason.MAX_TOKENS),
        "E slow model calls": (normal(delay_s=0.3), Budget(deadline_s=1.0, **ROOMY), StopReason.DEADLINE),
        "F step cap too low": (normal(), Budget(max_steps=3, **ROOMY), StopReason.MAX_STEPS),
    }
    got = {}
    for name, (script, budget, _) in table.items():
        out = run(script, budget)
        got[name] = out.stop.stop if out.stop else None
        if name == "E slow model calls":
            assert ("refund", "ord_1001", 3000) in out.desk.effects    # the work was done; the answer was not
    assert got == {name: want for name, (_, _, want) in table.items()}


def test_the_agent_span_carries_the_stop_reason_and_the_analysis_reads_it(memory_tracing, tmp_path):
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from agentobs.analysis.report.engine import analyze
    from agentobs.telemetry.otlp_json import OtlpJsonFileExporter

    provider, exporter = memory_tracing
    path = tmp_path / "runs.jsonl"
    provider.add_span_processor(SimpleSpanProcessor(OtlpJsonFileExporter(path)))
    run(same_call, Budget(**ROOMY), tracer=provider)
    run(normal(), Budget(**ROOMY), tracer=provider)
    provider.force_flush()
    agents = [s for s in exporter.get_finished_spans() if s.name.startswith("invoke_agent")]
    stopped, done = agents
    assert stopped.attributes["agentobs.stop_reason"] == "repeated_call"
    assert stopped.attributes["error.type"] == "repeated_call"
    assert stopped.status.status_code.name == "ERROR"
    (fired,) = [e for e in stopped.events if e.name == "agentobs.guard.fired"]
    assert dict(fired.attributes) == {"agentobs.guard.limit": "repeated_call", "agentobs.guard.limit_value": 2.0,
                                      "agentobs.guard.observed": 3.0}
    for span in (stopped, done):                # the budget in force, typed as the contract says; no dollar limit
        budget = {k: v for k, v in span.attributes.items() if k.startswith("agentobs.budget.")}
        assert budget == {"agentobs.budget.max_steps": 8, "agentobs.budget.max_tool_calls": 6,
                          "agentobs.budget.max_tokens": 100_000, "agentobs.budget.max_output_tokens": 300,
                          "agentobs.budget.deadline_s": 30.0, "agentobs.budget.max_repeat": 2,
                          "agentobs.budget.max_stalls": 3, "agentobs.budget.max_plan_steps": 6}
        assert {type(v) for k, v in budget.items()} == {int, float}
        assert isinstance(budget["agentobs.budget.deadline_s"], float)
    assert done.attributes["agentobs.stop_reason"] == "done" and done.status.status_code.name != "ERROR"
    assert done.attributes["agentobs.steps"] == 4 and done.attributes["agentobs.tool_calls"] == 3
    runs = analyze([str(path)]).runs.sort_values("start")
    assert list(runs["stop_reason"]) == ["repeated_call", "done"]
    assert list(runs["source_kind"]) == ["agentobs", "agentobs"]
    assert list(runs["success"]) == [False, True]
    assert list(runs["steps"]) == [3, 4]


def _reporting(**usage):
    """Seed D's search loop (large results, a new query each step), its usage reported as given."""
    from dataclasses import replace
    return lambda c: replace(search_loop(c), **usage)


def test_zero_input_or_an_unknown_reply_model_is_charged_as_an_honest_report():
    """A provider reporting 0 input tokens (pydantic-ai clamps negative counts to 0) was charged 0 for requests
    that sent whole search results, and a reply naming "weird-model" left every call unpriced: either way the run
    made more requests than under an honest report before the cap held. 0 input for a request with text is now
    estimated, and a reply's unknown model is priced as the model asked."""
    tokens = Budget(max_tokens=3000, max_output_tokens=300, max_stalls=30, max_tool_calls=30, max_steps=30)
    dollars = Budget(max_usd=0.002, max_tokens=10**6, max_output_tokens=300, max_stalls=30, max_tool_calls=30,
                     max_steps=30)
    for budget, dishonest, stop in ((tokens, dict(input_tokens=0), StopReason.MAX_TOKENS),
                                    (dollars, dict(model="weird-model"), StopReason.MAX_USD)):
        honest, got = run(search_loop, budget), run(_reporting(**dishonest), budget)
        assert honest.stop.stop is got.stop.stop is stop
        assert got.served == honest.served, (dishonest, got.served, honest.served)


def test_a_model_setting_of_none_is_the_guards_to_fill():
    """model_settings={"max_tokens": None} raised TypeError in the guard (None > 300)."""
    desk = SupportDesk()
    with ProviderServer(normal()) as srv:
        client = AsyncOpenAI(base_url=srv.openai_base_url, api_key="test", max_retries=0)
        m = OpenAIChatModel("gpt-4.1-mini", provider=OpenAIProvider(openai_client=client))
        agent = Agent(m, name="support-agent", capabilities=[BudgetGuard(Budget(**ROOMY))], tools=desk_tools(desk),
                      model_settings={"max_tokens": None, "request_timeout": None})
        assert agent.run_sync(PROMPT).output == "Refund issued and confirmation sent."
        assert all(r["body"].get("max_tokens") == 300 or r["body"].get("max_completion_tokens") == 300
                   for r in srv.log)
