"""Seed 004's guards, dollar ceiling, retries, replanning and crash recovery on our support desk."""
from agentobs import Budget, EventLog, Prices
from agentobs.domain import policies
from agentobs.domain.scenarios import SEED004, go
from agentobs.domain.support import SupportDesk
from agentobs.kernel import events as ev
from agentobs.kernel.view import est_tokens


def test_happy_path():
    r = SEED004["happy_path"]()
    assert (r.state.stop, r.state.outcome, r.state.step, len(r.desk.refunds())) == ("done", "completed", 5, 1)


def test_max_steps_bounds_the_worst_case():
    r = SEED004["max_steps"]()
    assert (r.state.stop, r.state.step, r.desk.effects) == ("max_steps", 2, [])


def test_stuck_search_stops_on_no_progress_after_three_stale_steps():
    log = EventLog()
    r = SEED004["no_progress"](observers=[log])
    st = r.state
    assert (st.stop, st.step, st.tool_calls) == ("no_progress", 4, 4)
    # the first search was new information; the next three observed the same thing
    assert [e.progress for e in log.of(ev.StepFinished)] == [True, False, False, False]
    assert len(st.observations) == 1


def test_looping_lookup_is_refused_before_it_runs():
    log = EventLog()
    r = SEED004["repeated_action"](observers=[log])
    st = r.state
    assert (st.stop, st.step, st.tool_calls, r.desk.calls) == ("repeated_call", 3, 2, 2)
    assert len(log.of(ev.ModelReturned)) == 3 and len(log.of(ev.ToolCalled)) == 2
    breach = log.of(ev.GuardFired)[-1].breach
    assert (breach.stop, breach.limit, breach.limit_value, breach.observed) == ("repeated_call", "max_repeat", 2, 3)


def test_dollar_ceiling_with_output_reserve_stops_before_the_crossing_call():
    log = EventLog()
    r = SEED004["budget_usd"](observers=[log])
    st = r.state
    assert st.stop == "max_usd" and st.cost_usd <= 0.004
    assert r.desk.effects == [("refund", "ord_1001", 3000)]          # refund done, e-mail never sent
    guard = log.of(ev.GuardFired)[-1].breach
    assert guard.stop == guard.limit == "max_usd" and guard.observed > guard.limit_value == 0.004
    # the projection: spent so far + next input + a 300-token output reserve at $1.50 / $9.00 per Mtok
    prices = Prices()
    next_in = est_tokens(__import__("agentobs").kernel.render(st, Budget(max_usd=0.004)))
    projected = st.cost_usd + prices.cost("gemini-3.5-flash", None, next_in, 300)
    assert abs(projected - guard.observed) < 1e-9
    # the whole run would have cost less than the ceiling: a reserve is conservative by design
    full, _, _ = go(policies.SupportPolicy(), price_as="gemini-3.5-flash")
    assert full.stop == "done" and full.cost_usd < 0.004


def test_approval_denied_escalates_without_refund():
    log = EventLog()
    r = SEED004["approval_denied"](observers=[log])
    assert (r.state.stop, r.state.outcome) == ("done", "escalated")
    assert r.desk.refunds() == [] and r.desk.effects == [("escalation", "ord_1004")]
    decided = log.of(ev.ApprovalDecided)
    assert len(decided) == 1 and decided[0].approved is False and decided[0].by == "human:maya"


def test_tool_down_three_attempts_with_backoff_then_replan_and_escalation():
    log = EventLog()
    r = SEED004["tool_down_replan"](observers=[log])
    st = r.state
    retries = log.of(ev.ToolRetry)
    assert [(e.name, e.attempt, e.backoff_s) for e in retries] == [("get_order", 1, 0.06), ("get_order", 2, 0.12)]
    returned = [e for e in log.of(ev.ToolReturned) if e.name == "get_order"]
    assert returned[0].attempts == 3 and returned[0].status == "tool_unavailable"
    assert st.plan_version == 2 and [s.id for s in st.plan] == ["s1", "s4"]
    assert [s.status for s in st.plan] == ["failed", "done"]
    assert (st.stop, st.outcome) == ("done", "escalated")
    assert r.desk.refunds() == [] and r.desk.effects == [("escalation", "ord_1001")]


def test_crash_after_refund_before_checkpoint_resumes_to_exactly_one_refund():
    r = SEED004["crash_resume"]()
    assert r.state.stop == "done"
    assert r.desk.refunds() == [("refund", "ord_1001", 3000)]
    assert r.desk.effects == [("refund", "ord_1001", 3000), ("email", "ord_1001")]
    replayed = [a for a in r.state.audit if a.get("tool") == "issue_refund"]
    assert replayed[-1]["result"].get("replayed") is True


def test_transient_failures_that_clear_are_retried_and_succeed():
    r_desk = SupportDesk(flaky={"get_order": 2})
    st, desk, _ = go(policies.SupportPolicy(), desk=r_desk)
    assert st.stop == "done" and st.tool_calls == 5 and len(desk.refunds()) == 1
