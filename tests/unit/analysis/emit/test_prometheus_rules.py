"""``agentobs caps --emit prometheus-rules``: rules promtool accepts, over the metric names the stack really has,
with bucket boundaries written as the collector's exporter writes them, each cap's cut-off share in its
annotations, thresholds from the source's own runs, and agent names that can never become rule syntax.
(tests/scenarios/stack/test_watch_stack.py loads them into the real Prometheus.)"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_process import CLI
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from locations import ROOT

from agentobs.analysis.assess.limits import recommend_all
from agentobs.analysis.emit.prometheus_rules import HISTOGRAMS, SPAN_CALLS, _go_float, agent_regex, rules
from agentobs.contract import semconv as sc
from agentobs.errors import InputError

yaml = pytest.importorskip("yaml")


def _promtool() -> str:
    tool = shutil.which("promtool")
    if tool is None:
        if os.environ.get("AGENTOBS_REQUIRE_STACK", "") not in ("", "0"):
            pytest.fail("promtool is required (AGENTOBS_REQUIRE_STACK=1): scripts/stack.sh installs Debian's "
                        "prometheus", pytrace=False)
        pytest.skip("promtool is not installed (scripts/stack.sh up installs Debian's prometheus)")
    return tool


def check(text: str, tmp_path: Path) -> None:
    p = tmp_path / "rules.yml"
    p.write_text(text, encoding="utf-8")
    done = subprocess.run([_promtool(), "check", "rules", str(p)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def population(n: int = 400, *, agents: tuple[str, ...] = ("support-agent",), seed: int = 0) -> pd.DataFrame:
    """A runs table: mostly successful runs of 3 to 12 steps, a few failed ones stopped at a limit."""
    rng = np.random.default_rng(seed)
    steps = rng.integers(3, 13, n)
    ok = rng.random(n) > 0.1
    stop = np.where(ok, "done", rng.choice(["max_steps", "no_progress", "repeated_call"], n))
    return pd.DataFrame({
        "run_id": [f"r{i}" for i in range(n)], "agent": [agents[i % len(agents)] for i in range(n)],
        "success": pd.array(ok, dtype="boolean"), "stop_reason": pd.array(stop, dtype="string"),
        "steps": steps, "tool_calls": steps - 1, "tokens": steps * 400, "cost_usd": steps * 0.0004,
        "active_s": steps * 1.5, "max_identical_calls": rng.integers(1, 3, n),
        "max_identical_since_progress": rng.integers(1, 3, n), "longest_stall": rng.integers(0, 2, n),
        "model": "gpt-4.1-mini"})


def emitted(runs: pd.DataFrame, **kw):
    return rules(recommend_all(runs), runs, reserve=0.0005, **kw)


# -- promtool, structure, annotations ------------------------------------------------------------------------

def test_promtool_accepts_the_rules_and_each_carries_its_cap(tmp_path):
    runs = population()
    e = emitted(runs)
    check(e.text, tmp_path)
    doc = yaml.safe_load(e.text)
    (group,) = doc["groups"]
    by_limit: dict[str, list[dict]] = {}
    for r in group["rules"]:
        assert set(r) == {"alert", "expr", "for", "labels", "annotations"} and r["for"] == "5m"
        by_limit.setdefault(r["labels"]["agentobs_limit"], []).append(r)
    settings_ = {s.name: s for s in e.settings}
    assert set(by_limit) == set(settings_)
    for limit, rs in by_limit.items():
        s = settings_[limit]
        share = f"cuts off {100 * s.cutoff_share:.1f}% of {s.successful_runs} successful runs"
        assert all(share in r["annotations"]["description"] for r in rs), limit
        kinds = {r["alert"] for r in rs}
        if limit in HISTOGRAMS:
            assert kinds == {"AgentobsRunsPastCap", "AgentobsRunFarPastCap", "AgentobsRunsStoppedAtLimit"}
        else:                                   # repeats and stalls: no histogram carries them
            assert kinds == {"AgentobsRunsStoppedAtLimit"}


def test_the_past_cap_share_is_measured_at_the_bucket_at_or_above_the_cap(tmp_path):
    """max_steps = 13 (12 steps at most, +10%): measured at le="16" (CALLS_BUCKETS), and the source had no run above
    16, so the rule fires above 2% (the floor); the far rule is at 16 too (the largest value is 12)."""
    runs = population()
    e = emitted(runs)
    s = next(x for x in e.settings if x.name == "max_steps")
    assert s.value == 14 or s.value == 13
    doc = yaml.safe_load(e.text)["groups"][0]["rules"]
    past = next(r for r in doc if r["alert"] == "AgentobsRunsPastCap" and r["labels"]["agentobs_limit"] == "max_steps")
    assert 'gen_ai_invoke_agent_inference_calls_bucket{le="16", gen_ai_agent_name=~"support\\\\-agent"}' in past["expr"]
    assert ") > 0.02 and " in past["expr"] and ">= 10" in past["expr"]
    stopped = next(r for r in doc if r["alert"] == "AgentobsRunsStoppedAtLimit"
                   and r["labels"]["agentobs_limit"] == "max_steps")
    expected = float((runs["stop_reason"] == "max_steps").mean())
    assert f"> {round(expected + max(expected, 0.02), 6):g} and" in stopped["expr"]
    assert 'agentobs_stop_reason="max_steps"' in stopped["expr"] and SPAN_CALLS in stopped["expr"]


def test_tool_calls_and_stalls_count_runs_at_the_cap():
    """The kernel stops a run that reaches max_tool_calls: a run at the cap has crossed it, so the share is measured
    at the boundary at or above cap - 1."""
    runs = population()
    runs["tool_calls"] = 15                     # every run makes 15 tool calls: the cap is 16 (at least one above)
    e = emitted(runs)
    s = next(x for x in e.settings if x.name == "max_tool_calls")
    assert s.value == 17                        # 15 * 1.1 rounded up, at least 15 + 1
    doc = yaml.safe_load(e.text)["groups"][0]["rules"]
    past = next(r for r in doc if r["alert"] == "AgentobsRunsPastCap"
                and r["labels"]["agentobs_limit"] == "max_tool_calls")
    assert 'le="16"' in past["expr"]            # 17 - 1 = 16: a run at 17 is past 16


def test_the_metric_names_are_those_the_stack_has():
    spec = importlib.util.spec_from_file_location("dash_generate", ROOT / "dashboards" / "generate.py")
    assert spec and spec.loader
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    names = {m.name for m in HISTOGRAMS.values()}
    assert names <= gen.HISTOGRAMS and SPAN_CALLS in gen.SPANMETRICS_NAMES
    assert HISTOGRAMS["max_steps"].name == gen.PROMETHEUS_NAMES[sc.M_AGENT_INFERENCE_CALLS]
    assert HISTOGRAMS["max_tokens"].name == gen.PROMETHEUS_NAMES[sc.M_RUN_TOKENS]


@pytest.mark.parametrize("x, go", [
    (1, "1"), (16, "16"), (128, "128"), (262144, "262144"), (1048576, "1.048576e+06"), (67108864, "6.7108864e+07"),
    (0.0001, "0.0001"), (0.0003, "0.0003"), (1e-05, "1e-05"), (409.6, "409.6"), (0.1, "0.1"), (10.0, "10"),
    (100000, "100000"), (1e6, "1e+06")])
def test_bucket_boundaries_are_written_as_go_writes_them(x, go):
    """strconv.FormatFloat(x, 'g', -1, 64): the `le` label of the collector's prometheus exporter."""
    assert _go_float(x) == go


def test_bad_durations_are_one_line_errors():
    runs = population(50)
    with pytest.raises(InputError, match="--alert-window"):
        emitted(runs, window="0s")
    with pytest.raises(InputError, match="--alert-for"):
        emitted(runs, hold="soon")


def test_the_cli_writes_the_rules(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    traces = tmp_path / "t.jsonl"
    subprocess.run([*CLI, "simulate", "--runs", "200", "--traces-out", str(traces), "--manifest",
                    str(tmp_path / "m.json")], check=True, capture_output=True, env=env)
    done = subprocess.run([*CLI, "caps", str(traces), "--emit", "prometheus-rules", "--alert-window", "30m",
                           "--alert-for", "0s"], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    check(done.stdout, tmp_path)
    doc = yaml.safe_load(done.stdout)
    assert all("[30m]" in r["expr"] and r["for"] == "0s" for r in doc["groups"][0]["rules"])


def test_compose_and_the_stack_load_the_rules_folder():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    assert "./prometheus/rules:/etc/prometheus/rules:ro" in compose["services"]["prometheus"]["volumes"]
    prom = yaml.safe_load((ROOT / "prometheus" / "prometheus.compose.yml").read_text())
    assert prom["rule_files"] == ["/etc/prometheus/rules/*.yml"]


# -- agent names from traces never become syntax -------------------------------------------------------------

def _unquote_promql(s: str) -> str:
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\":
            out.append(s[i + 1])
            i += 2
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


names = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=24)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(names, min_size=1, max_size=3, unique=True))
@example(['a"b', "c\\d", "x\u2028y\x85z"])
@example(["é-🙂 agent", "{{ $labels.x }}", '"}) or vector(1) #'])
@example(["\x00\x1f\x7f", "\ufeff", "a|b.*"])
def test_any_agent_name_is_matched_exactly_and_accepted_by_promtool(tmp_path, agents):
    import re2
    rx = agent_regex(agents)
    for a in agents:
        assert re2.fullmatch(rx, a), (rx, a)
        assert not re2.fullmatch(rx, a + "x") and not re2.fullmatch(rx, "x" + a)
    runs = population(60, agents=tuple(agents))
    e = emitted(runs)
    check(e.text, tmp_path)
    expr = yaml.safe_load(e.text)["groups"][0]["rules"][0]["expr"]
    inside = expr.split('gen_ai_agent_name=~"', 1)[1]
    assert _unquote_promql(_string_body(inside)) == agent_regex(sorted(agents))


def _string_body(text: str) -> str:
    """The body of the PromQL string ``text`` starts inside of (up to its closing quote)."""
    i = 0
    while text[i] != '"':
        i += 2 if text[i] == "\\" else 1
    return text[:i]
