"""The caps table and ``caps --emit`` say the same: a limit the Budget enforces once a run reaches it is above what
the runs reached in both (max_stalls 1, not 0, for runs that never stalled), and a dollar cap recommended from
the runs' recorded costs is emitted even when their model has no list price (its reserve priced at the rates
those costs imply), where it was left out ("the runs' models have no price")."""
from __future__ import annotations

import pandas as pd
import pytest
from click.testing import CliRunner

from agentobs import Budget
from agentobs.analysis.assess.limits import recommend_all
from agentobs.analysis.emit.config import implied_price, reserve
from agentobs.analysis.emit.kinds import emit
from agentobs.cli.main import cli


def _runs(n: int = 50, *, stalls: int = 0, model: str = "house-model", exact: bool = True) -> pd.DataFrame:
    tin = [900 + 13 * i for i in range(n)]
    tout = [40 + (7 * i) % 30 for i in range(n)]
    cost = [(0.4 * a + 1.6 * b) / 1e6 * (1 if exact else 1 + (i % 3) / 10)
            for i, (a, b) in enumerate(zip(tin, tout, strict=True))]
    return pd.DataFrame({
        "success": pd.array([True] * n, dtype="boolean"), "model": model,
        "steps": pd.array([4 + i % 3 for i in range(n)], dtype="Int64"),
        "tool_calls": pd.array([3 + i % 2 for i in range(n)], dtype="Int64"),
        "input_tokens": pd.array(tin, dtype="Int64"), "output_tokens": pd.array(tout, dtype="Int64"),
        "tokens": pd.array([a + b for a, b in zip(tin, tout, strict=True)], dtype="Int64"),
        "cost_usd": pd.array(cost, dtype="Float64"), "active_s": pd.array([5.0 + i % 4 for i in range(n)]),
        "max_identical_calls": pd.array([1] * n, dtype="Int64"),
        "max_identical_since_progress": pd.array([1] * n, dtype="Int64"),
        "longest_stall": pd.array([stalls] * n, dtype="Int64")})


def _settings(text: str) -> dict[str, float]:
    ns: dict = {}
    exec(text, ns)
    b: Budget = ns["budget"]
    return {k: getattr(b, k) for k in ("max_steps", "max_tool_calls", "max_tokens", "max_usd", "deadline_s",
                                       "max_repeat", "max_stalls")}


@pytest.mark.parametrize("stalls", [0, 1, 4])
def test_the_table_and_the_budget_recommend_the_same_count_limits(stalls):
    runs = _runs(stalls=stalls)
    caps = {c.limit: c for c in recommend_all(runs)}
    emitted = _settings(emit(list(caps.values()), "budget", reserve=reserve(runs)).text)
    for limit in ("max_steps", "max_tool_calls", "max_stalls"):
        assert emitted[limit] == caps[limit].recommended, limit
    # a run stops once its stalls reach max_stalls: above the longest stall, and never 0 (Budget refuses it)
    assert caps["max_stalls"].recommended == max(stalls + 1, -(-stalls * 11 // 10))
    assert caps["max_tool_calls"].recommended > caps["max_tool_calls"].base


def test_a_dollar_cap_is_emitted_for_a_model_without_a_list_price():
    runs = _runs()
    caps = recommend_all(runs)
    usd = next(c for c in caps if c.limit == "max_usd")
    got = reserve(runs)
    assert usd.recommended is not None and got.usd == pytest.approx(1.6e-6 * 300)
    e = emit(caps, "budget", reserve=got)
    assert "cost_usd" not in e.missing and "max_usd left out" not in e.text
    assert _settings(e.text)["max_usd"] >= usd.recommended + got.usd
    assert "no list price for 'house-model'" in e.text and "Prices({'house-model': (0.4, 1.6)})" in e.text


def test_costs_that_no_single_price_explains_give_an_upper_bound_of_the_output_price():
    runs = _runs(exact=False)
    p = implied_price(runs)
    assert p is not None and not p.exact and p.input is None
    # a cost is at least the output tokens at the output price: the bound is never below the true 1.6 $/Mtok
    assert p.output >= 1.6 and p.output == pytest.approx(min(runs["cost_usd"] / runs["output_tokens"]) * 1e6)
    assert "at most" in emit(recommend_all(runs), "budget", reserve=reserve(runs)).text


def test_a_model_name_from_the_traces_stays_in_its_comment():
    runs = _runs(model="evil\nimport os; os.system('x')  #\u2028")
    text = emit(recommend_all(runs), "budget", reserve=reserve(runs)).text
    ns: dict = {}
    exec(text, ns)                      # still valid: the name is a repr() in a comment
    assert all(line.startswith(("#", "from ", "budget", "    ", ")")) or not line for line in text.splitlines())


def test_the_cli_table_and_emit_agree_on_the_demo_population(tmp_path):
    from agentobs.domain.population import simulate
    from agentobs.telemetry import configure
    path = tmp_path / "pop.jsonl"
    tel = configure(traces_out=path)
    simulate(120, seed=3, observers=lambda: [tel.observer()], start_ns=1_780_000_000 * 10**9)
    tel.shutdown()
    runner = CliRunner()
    caps = runner.invoke(cli, ["caps", str(path), "--format", "json"])
    assert caps.exit_code == 0, caps.output
    import json
    dims = json.loads(caps.stdout)["dimensions"]
    out = tmp_path / "budget.py"
    res = runner.invoke(cli, ["caps", str(path), "--emit", "budget", "--out", str(out)])
    assert res.exit_code == 0, res.output
    text = out.read_text()
    assert text.startswith("# Recommended caps")                # no blank line first
    got = _settings(text)
    assert got["max_usd"] is not None and dims["cost_usd"]["recommended"] is not None
    assert got["max_stalls"] == dims["longest_stall"]["recommended"]
    assert got["max_tool_calls"] == dims["tool_calls"]["recommended"]
