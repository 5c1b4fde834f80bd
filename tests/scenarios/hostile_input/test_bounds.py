"""The bounds property: whatever the model replies, no run exceeds a budget and no refund exceeds an order."""
import random

from agentobs import Budget, Decision
from agentobs.domain.policies import random_model
from agentobs.domain.scenarios import go
from agentobs.domain.support import SupportDesk

RUNS = 20_000


def test_no_run_exceeds_any_budget(capsys):
    budgets = [Budget(), Budget(max_usd=0.0012)]     # half the runs also carry a dollar ceiling
    worst = {"step": 0, "tool_calls": 0, "tokens": 0, "elapsed": 0.0}
    worst_usd = 0.0
    violations, stops = 0, {}
    for seed in range(RUNS):
        budget = budgets[seed % 2]
        rng = random.Random(-seed - 1)
        desk = SupportDesk({"issue_refund": rng.choice([1.2, 1.2, 40.0])},
                           flaky={"get_order": rng.choice([0, 0, 2, 5])})
        approver = rng.choice([None, lambda h: Decision.approve(h), lambda h: Decision.deny(h)])
        st, desk, _ = go(random_model(seed), budget, desk, approver=approver)
        stops[st.stop] = stops.get(st.stop, 0) + 1
        for k in worst:
            worst[k] = max(worst[k], getattr(st, k))
        if budget.max_usd is not None:
            worst_usd = max(worst_usd, st.cost_usd)
        ok = (st.stop is not None and st.step <= budget.max_steps and st.tool_calls <= budget.max_tool_calls
              and st.tokens <= budget.max_tokens and st.elapsed <= budget.deadline_s + 1e-9
              and (budget.max_usd is None or st.cost_usd <= budget.max_usd + 1e-12)
              and all(o["refunded"] <= o["total"] for o in desk.orders.values()))
        violations += not ok
    limits = {"step": budget.max_steps, "tool_calls": budget.max_tool_calls, "tokens": budget.max_tokens,
              "elapsed": budget.deadline_s, "cost_usd (runs with a ceiling)": budgets[1].max_usd}
    with capsys.disabled():
        print(f"\nbounds: {RUNS} random runs, {violations} broke a bound")
        print("  largest seen:", {**worst, "cost_usd (runs with a ceiling)": worst_usd})
        print("  limits      :", limits)
        print("  stops       :", dict(sorted(stops.items(), key=lambda kv: -kv[1])))
    assert violations == 0
    assert len(stops) >= 10         # the random models reach nearly every way out of the loop
