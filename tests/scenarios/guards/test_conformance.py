"""What every guarded framework must do (issue 13), run once per framework (the ``driver`` fixture, conftest.py).

Through the framework's real SDK and the real OpenAI client against a scripted server on 127.0.0.1. For each limit:
a run that would cross it stops before the crossing request with the right stop reason, and the server saw no request
past it; a run under every limit completes unchanged; the seed's scenarios keep their stop reasons; a provider's
dishonest usage report does not lift a cap; the agent span carries the stop reason so the analysis reads the run like
one of ours.
"""
from __future__ import annotations

from dataclasses import replace

import pytest
from guard_drivers import AGENT_NAME, MODEL, ROOMY
from providers import Call, Reply, call, new_ids, normal, same_call, search_loop

from agentobs import Budget, Prices, StopReason
from agentobs.errors import BudgetExceeded, ConfigError


def test_a_run_under_every_limit_completes_unchanged(driver):
    plain = driver.run(normal(), None)
    guarded = driver.run(normal(), Budget(max_steps=4, max_tool_calls=4, max_usd=0.05, **ROOMY))
    assert plain.stop is None and guarded.stop is None
    assert guarded.output == plain.output == "Refund issued and confirmation sent."
    assert guarded.served == plain.served == 4
    assert guarded.desk.effects == plain.desk.effects == [("refund", "ord_1001", 3000), ("email", "ord_1001")]
    # the output cap goes out with every request, as the reserve assumes
    assert all(r["body"].get("max_tokens") == 300 or r["body"].get("max_completion_tokens") == 300
               for r in guarded.log)


@pytest.mark.parametrize("script, budget, stop, served", [
    (normal(), Budget(max_steps=3, **ROOMY), StopReason.MAX_STEPS, 3),
    (normal(), Budget(max_tool_calls=2, **ROOMY), StopReason.MAX_TOOL_CALLS, 2),
    (same_call, Budget(**ROOMY), StopReason.REPEATED_CALL, 3),
    (new_ids, Budget(**ROOMY), StopReason.NO_PROGRESS, 3),
], ids=["max_steps", "max_tool_calls", "repeated_call", "no_progress"])
def test_each_count_limit_stops_before_the_crossing_request(driver, script, budget, stop, served):
    out = driver.run(script, budget)
    assert driver.is_native_stop(out.stop)         # the framework's own exception (and what it carries)
    assert out.stop.stop is stop and out.stop.breach.stop is stop
    assert out.stop.breach.limit == {StopReason.MAX_STEPS: "max_steps", StopReason.MAX_TOOL_CALLS: "max_tool_calls",
                                     StopReason.REPEATED_CALL: "max_repeat", StopReason.NO_PROGRESS: "max_stalls"}[stop]
    assert out.served == served


def _three_reads_then_ok(c: Call) -> Reply:
    if c.n == 1:
        return Reply(tool_calls=[call("get_order", order_id=f"ord_{i}") for i in (1001, 1004, 9999)])
    return Reply(text="ok")


def test_tool_calls_of_one_reply_that_would_pass_the_limit_stop_before_any_runs(driver):
    out = driver.run(_three_reads_then_ok, Budget(max_tool_calls=2, **ROOMY))
    assert out.stop.stop is StopReason.MAX_TOOL_CALLS and out.stop.observed == 3
    assert out.desk.calls == 0 and out.served == 1       # none runs: none is cancelled half-way
    ok = driver.run(_three_reads_then_ok, Budget(max_tool_calls=4, **ROOMY))   # three fit: all run, then the answer
    assert ok.stop is None and ok.desk.calls == 3


def test_token_cap_with_reserve_stops_before_the_request_that_could_cross_it(driver):
    budget = Budget(max_tokens=4000, max_steps=20, max_tool_calls=20, max_stalls=10)   # seed 000 scenario D
    out = driver.run(search_loop, budget)
    assert out.stop.stop is StopReason.MAX_TOKENS
    assert out.tokens <= budget.max_tokens                # what the provider billed stays under the cap
    assert out.stop.observed > budget.max_tokens           # spent + next input + a full reply would not
    unguarded_calls = driver.run(search_loop, Budget(max_tokens=10**6, max_steps=20, max_tool_calls=20, max_stalls=10))
    assert unguarded_calls.served > out.served


def test_dollar_cap_prices_the_next_request_and_its_reserve_ahead(driver):
    prices = Prices()
    full = driver.run(normal(), Budget(max_usd=1.0, **ROOMY))
    per_call = [prices.cost(MODEL, "openai", *r["usage"]) for r in full.log]
    cap = round(sum(per_call[:2]) + per_call[2] / 2, 9)     # the third request would cross it
    out = driver.run(normal(), Budget(max_usd=cap, **ROOMY))
    assert out.stop.stop is StopReason.MAX_USD
    assert out.served <= 2
    spent = sum(prices.cost(MODEL, "openai", *r["usage"]) for r in out.log)
    assert spent <= cap < out.stop.observed


def test_an_unpriced_model_under_a_dollar_budget_is_refused_before_any_request(driver):
    with pytest.raises(ConfigError, match="no price"):
        driver.run(normal(), Budget(max_usd=0.05, **ROOMY), model="my-local-model")
    out = driver.run(normal(), Budget(max_usd=0.05, **ROOMY), model="my-local-model",
                     prices=Prices({"my-local-model": (0.1, 0.2)}))
    assert out.stop is None and out.served == 4


def test_deadline_cuts_a_slow_request_off_at_the_time_left(driver):
    # (1.5 s: time for the request to reach the server on a loaded machine; it flaked at 0.3 s under load)
    out = driver.run(lambda c: Reply(text="late", delay_s=5.0), Budget(deadline_s=1.5, **ROOMY))
    assert out.stop.stop is StopReason.DEADLINE
    assert out.served == 1 and out.output is None


def test_seed_scenarios_keep_their_stop_reasons(driver):
    """Seed 000's table, under the framework with its guard (A, B, C, D, E, F)."""
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
        out = driver.run(script, budget)
        got[name] = out.stop.stop if out.stop else None
        if name == "E slow model calls":
            assert ("refund", "ord_1001", 3000) in out.desk.effects    # the work was done; the answer was not
    assert got == {name: want for name, (_, _, want) in table.items()}


def test_the_agent_span_carries_the_stop_reason_and_the_analysis_reads_it(driver, memory_tracing, tmp_path):
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from agentobs.analysis.report.engine import analyze
    from agentobs.telemetry.otlp_json import OtlpJsonFileExporter

    provider, exporter = memory_tracing
    path = tmp_path / "runs.jsonl"
    provider.add_span_processor(SimpleSpanProcessor(OtlpJsonFileExporter(path)))
    driver.run(same_call, Budget(**ROOMY), tracer=provider)
    driver.run(normal(), Budget(**ROOMY), tracer=provider)
    provider.force_flush()
    agents = [s for s in exporter.get_finished_spans() if s.name == f"invoke_agent {AGENT_NAME}"]
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


# -- a provider's usage report that is wrong must not lift a cap -----------------------------------------------------

def _reporting(**usage):
    """Seed D's search loop (large results, a new query each step), its usage reported as given."""
    return lambda c: replace(search_loop(c), **usage)


HONEST_TOKENS = Budget(max_tokens=3000, max_output_tokens=300, max_stalls=30, max_tool_calls=30, max_steps=30)
HONEST_DOLLARS = Budget(max_usd=0.002, max_tokens=10**6, max_output_tokens=300, max_stalls=30, max_tool_calls=30,
                        max_steps=30)


@pytest.mark.parametrize("budget, dishonest, stop", [
    (HONEST_TOKENS, dict(input_tokens=0), StopReason.MAX_TOKENS),
    (HONEST_DOLLARS, dict(model="weird-model"), StopReason.MAX_USD),
], ids=["zero_input", "unknown_reply_model"])
def test_zero_input_or_an_unknown_reply_model_is_charged_as_an_honest_report(driver, budget, dishonest, stop):
    """A provider reporting 0 input tokens (pydantic-ai clamps negative counts to 0) was charged 0 for requests
    that sent whole search results, and a reply naming "weird-model" left every call unpriced: either way the run
    made more requests than under an honest report before the cap held. 0 input for a request with text is now
    estimated, and a reply's unknown model is priced as the model asked."""
    honest, got = driver.run(search_loop, budget), driver.run(_reporting(**dishonest), budget)
    assert honest.stop.stop is got.stop.stop is stop
    assert got.served == honest.served, (dishonest, got.served, honest.served)


def test_a_negative_input_count_does_not_lift_the_token_cap(driver):
    """prompt_tokens=-100000 was charged as reported: the tokens spent went down, and the run went on to max_steps
    past the token cap. A count that is no count is replaced by the estimate."""
    out = driver.run(_reporting(input_tokens=-100_000), Budget(max_stalls=10, max_tool_calls=20, max_steps=20))
    assert out.stop is not None and out.stop.stop is StopReason.MAX_TOKENS, out.stop


def test_a_huge_reported_count_stops_with_a_message_not_an_overflow_error(driver):
    """prompt_tokens=10**400 raised OverflowError from the BudgetExceeded message."""
    out = driver.run(_reporting(input_tokens=10**400), Budget(max_tokens=3000, max_output_tokens=300))
    assert out.stop is not None and out.served <= 2
    assert "OverflowError" not in str(out.stop)
    assert "about 10^" in str(BudgetExceeded("max_tokens", 3000, 10**400))
