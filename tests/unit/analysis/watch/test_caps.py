"""The caps ``agentobs watch`` reads: what ``agentobs caps`` writes, in each of its forms, gives the same caps; a file
that is not one is a one-line error that says what to give instead."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cli_process import CLI
from locations import ROOT

from agentobs.analysis.emit.config import reserve_usd
from agentobs.analysis.emit.kinds import emit
from agentobs.analysis.report.engine import analyze
from agentobs.analysis.watch import read_caps, resolve_caps
from agentobs.analysis.watch.caps import caps_of
from agentobs.errors import InputError


@pytest.fixture(scope="module")
def population(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("caps")
    out = d / "sim.jsonl"
    subprocess.run([*CLI, "simulate", "--runs", "300", "--seed", "3", "--traces-out", str(out), "--manifest",
                    str(d / "m.json")], check=True, capture_output=True, env=_env())
    return out


def _env() -> dict[str, str]:
    import os
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _caps_cli(source: Path, *args: str) -> str:
    done = subprocess.run([*CLI, "caps", str(source), *args], capture_output=True, text=True, env=_env())
    assert done.returncode == 0, done.stderr
    return done.stdout


def _key(caps):
    return sorted((c.limit, c.dimension, c.value, c.at_cap, round(c.cutoff_share or 0, 3), c.successful_runs)
                  for c in caps)


def test_the_budget_text_and_its_json_give_the_same_caps(population, tmp_path):
    text = tmp_path / "caps.py"
    text.write_text(_caps_cli(population, "--emit", "budget"))
    js = tmp_path / "caps.json"
    js.write_text(_caps_cli(population, "--emit", "budget", "--format", "json"))
    a, b = read_caps(text), read_caps(js)
    assert _key(a) == _key(b)
    by = {c.limit: c for c in a}
    assert by["max_steps"].dimension == "steps" and not by["max_steps"].at_cap
    assert by["max_tool_calls"].at_cap and by["max_stalls"].at_cap         # the kernel stops a run that reaches them
    assert by["max_repeat"].dimension == "max_identical_since_progress"    # repeat_window="since_progress"
    assert all(c.successful_runs and c.cutoff_share is not None for c in a)


def test_caps_from_a_source_are_those_the_budget_text_holds(population, tmp_path):
    text = tmp_path / "caps.py"
    text.write_text(_caps_cli(population, "--emit", "budget"))
    computed = resolve_caps(None, [str(population)], None)
    assert _key(computed) == _key(read_caps(text))


def test_the_caps_json_gives_each_recommended_cap(population, tmp_path):
    js = tmp_path / "dims.json"
    js.write_text(_caps_cli(population, "--format", "json"))
    caps = {c.dimension: c for c in read_caps(js)}
    dims = json.loads(js.read_text())["dimensions"]
    for dim, d in dims.items():
        if d["recommended"] is None:
            assert dim not in caps
            continue
        assert caps[dim].value == d["recommended"] and not caps[dim].at_cap
        below = [float(k) for k in d["cutoff"] if float(k) <= d["recommended"]]
        want = d["cutoff"][next(k for k in d["cutoff"] if float(k) == max(below))] if below else 1.0
        assert caps[dim].cutoff_share == want


def test_usage_limits_and_the_openai_agents_text_are_read(population, tmp_path):
    for kind, limit in (("pydantic-ai", "request_limit"), ("openai-agents", "max_steps")):
        p = tmp_path / f"{kind}.py"
        p.write_text(_caps_cli(population, "--emit", kind))
        caps = {c.limit: c for c in read_caps(p)}
        assert caps[limit].dimension == "steps", kind


def test_a_budget_written_by_hand_is_read_without_running_it(tmp_path):
    p = tmp_path / "caps.py"
    p.write_text("import os; os.system('touch pwned')\nfrom agentobs import Budget\n"
                 "budget = Budget(max_steps=12, max_usd=None, max_tool_calls=5, deadline_s=2.5)  # hand-made\n")
    caps = {c.limit: c for c in read_caps(p)}
    assert set(caps) == {"max_steps", "max_tool_calls", "deadline_s"}
    assert caps["deadline_s"].value == 2.5 and caps["max_steps"].cutoff_share is None
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("content, says", [
    ("", "no Budget(...)"),
    ("budget = Budget(max_steps=n)\n", "not a literal value"),
    ("budget = Budget(max_steps='many')\n", "is not a number"),
    ("budget = Budget(**limits)\n", "cannot be read without running"),
    ("a = Budget(max_steps=3)\nb = Budget(max_steps=4)\n", "keep the one to watch"),
    ("{\"x\": 1}", "not what agentobs caps writes"),
    ("{not json", "not valid JSON"),
    ("budget = Budget(max_output_tokens=300)\n", "sets no cap"),
    ("def (:\n", "neither JSON nor"),
    # a misspelt cap was left out without a word (and, alone, read as "no successful run measured any")
    ("budget = Budget(max_stepz=12, max_tokens=9000)\n", "Budget has no field 'max_stepz'"),
    ("limits = UsageLimits(reqest_limit=12)\n", "UsageLimits has no field 'reqest_limit'"),
    ("budget = Budget(max_steps=-3)\n", "max_steps=-3: a cap is not negative"),
])
def test_a_file_that_is_no_caps_file_is_one_line_that_says_so(tmp_path, content, says):
    p = tmp_path / "caps.py"
    p.write_text(content)
    with pytest.raises(InputError, match=says):
        read_caps(p)


def test_the_cli_refuses_bad_caps_in_one_line(tmp_path):
    p = tmp_path / "caps.py"
    p.write_bytes(b"\xff\xfe\x00garbage")
    f = tmp_path / "t.jsonl"
    f.write_text("")
    done = subprocess.run([*CLI, "watch", str(f), "--caps", str(p), "--once"], capture_output=True, text=True,
                          env=_env())
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "not UTF-8" in done.stderr and "Traceback" not in done.stderr
    done = subprocess.run([*CLI, "watch", str(f), "--once"], capture_output=True, text=True, env=_env())
    assert done.returncode == 2 and "nothing to watch for" in done.stderr


def test_every_other_field_of_budget_and_usage_limits_is_read_and_not_watched(tmp_path):
    """The fields of ``agentobs.Budget`` and ``pydantic_ai.UsageLimits`` that bound no run total are accepted (so a
    misspelt one is refused, not these)."""
    import dataclasses

    from agentobs import Budget
    from agentobs.analysis.watch.caps import BUDGET_FIELDS, BUDGET_SETTINGS, USAGE_LIMITS_FIELDS, USAGE_LIMITS_OTHERS
    assert {f.name for f in dataclasses.fields(Budget)} == set(BUDGET_FIELDS) | BUDGET_SETTINGS
    usage = pytest.importorskip("pydantic_ai.usage")
    assert {f.name for f in dataclasses.fields(usage.UsageLimits)} == set(USAGE_LIMITS_FIELDS) | USAGE_LIMITS_OTHERS
    p = tmp_path / "caps.py"
    p.write_text("budget = Budget(max_steps=9, max_output_tokens=300, output_reserve_tokens=200, progress='state', "
                 "max_plan_steps=6, max_replans=2, max_attempts=3, backoff_s=0.1, repeat_window='run')\n")
    assert [(c.limit, c.value) for c in read_caps(p)] == [("max_steps", 9.0)]


def test_caps_of_a_report_are_the_emitted_budget(population):
    r = analyze([str(population)])
    caps = caps_of(r.caps, reserve_usd(r.runs))
    settings = emit(r.caps, "budget", reserve=reserve_usd(r.runs)).settings
    assert [(c.limit, c.value) for c in caps] == [(s.name, s.value) for s in settings]
