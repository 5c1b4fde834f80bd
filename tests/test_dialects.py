"""The analysis reads the traces real instrumentations emit (issue 11): committed fixtures against their truth.

Each ``tests/dialects/fixtures/<name>.jsonl`` was written by a real framework and instrumentation driven against
a scripted model server (``tests/dialects/generate.py``); ``<name>.truth.json`` holds what the server served and
which tools ran, per run. Nothing here needs the frameworks installed.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from agentobs.analysis import analyze

FIXTURES = Path(__file__).resolve().parent / "dialects" / "fixtures"
NAMES = sorted(p.name[:-len(".truth.json")] for p in FIXTURES.glob("*.truth.json"))
FIGURES = ("model_calls", "tool_calls", "input_tokens", "output_tokens", "max_identical_calls",
           "max_consecutive_identical")


def _truth(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.truth.json").read_text())


def _num(v: object) -> int | None:
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return None
    return int(v)


def test_there_are_fixtures():
    assert NAMES, f"no truth files in {FIXTURES}"
    for name in NAMES:
        assert (FIXTURES / f"{name}.jsonl").exists(), f"{name}.truth.json has no {name}.jsonl"


@pytest.mark.parametrize("name", NAMES)
def test_truth_names_spans_that_are_in_the_fixture(name):
    """The harness itself: every run of the truth has its trace and top span in the fixture, versions recorded."""
    truth = _truth(name)
    assert truth["dialect"] == name
    assert truth["packages"] and all(v != "not installed" for v in truth["packages"].values())
    ids: dict[str, set[str]] = {}
    for line in (FIXTURES / f"{name}.jsonl").read_text().splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    ids.setdefault(s["traceId"], set()).add(s["spanId"])
    for t in truth["traces"]:
        assert t["trace_id"] in ids, f"trace {t['trace_id']} of the truth is not in {name}.jsonl"
        assert t["n_runs"] == len(t["runs"]) >= 1
        for r in t["runs"]:
            assert r["root_span_id"] in ids[t["trace_id"]]
            assert r["model_calls"] >= 1


# What a span cannot show, by fixture and run: the analysis must give exactly this instead of the truth's
# served figure, and null, never 0, where the dialect records nothing (the truth files' notes say why).
UNRECORDED: dict[tuple[str, str], dict[str, int | None]] = {
    # openai-v2 instruments the model client only: the tools a bare loop runs leave no span
    **{(name, "bare"): {"tool_calls": None, "max_identical_calls": None, "max_consecutive_identical": None}
       for name in ("openai_v2", "openai_v2_latest")},
    # traceloop-sdk 0.33 never ends (so never exports) the span of a decorated function that raises, nor the
    # failed chat span: the failed tool span and the failed model call are lost
    ("traceloop_old", "tool_error"): {"tool_calls": None, "max_identical_calls": None,
                                      "max_consecutive_identical": None, "errors": 0},
    ("traceloop_old", "model_error"): {"model_calls": 1, "errors": 0},
}


def _expected(name: str, run: dict, field: str) -> tuple[bool, int | None]:
    """(whether the field is checked, the value the analysis must give)."""
    known = UNRECORDED.get((name, run["run_key"]), {})
    if field in known:
        return True, known[field]
    want = run.get(field)
    return want is not None, want


@pytest.mark.parametrize("name", NAMES)
def test_analysis_finds_the_served_runs(name):
    truth = _truth(name)
    report = analyze([str(FIXTURES / f"{name}.jsonl")])
    runs = report.runs
    # signatures and caps ran on these runs without error
    assert isinstance(report.signatures, list) and isinstance(report.caps, list)
    assert report.derivation.dialects, "no span was classified"
    problems: list[str] = []
    for t in truth["traces"]:
        mine = runs[runs["trace_id"] == t["trace_id"]].sort_values("start", kind="stable")
        keys = [r["run_key"] for r in t["runs"]]
        if len(mine) != t["n_runs"]:
            problems.append(f"trace {t['trace_id'][:8]} ({t['shape']}: {', '.join(keys)}): {len(mine)} runs found, "
                            f"{t['n_runs']} expected")
            continue
        for r, (_, got) in zip(t["runs"], mine.iterrows()):
            for f in (*FIGURES, "errors"):
                checked, want = _expected(name, r, f)
                have = _num(got[f])
                if checked and have != want:
                    problems.append(f"run {r['run_key']}: {f} {have}, expected {want}")
            subs = r.get("sub_agents") or {}
            if "count" in subs:
                if _num(got["sub_agents"]) != subs["count"] or list(got["sub_agent_names"]) != subs["names"]:
                    problems.append(f"run {r['run_key']}: sub-agents {got['sub_agents']} {got['sub_agent_names']}, "
                                    f"expected {subs['count']} {subs['names']}")
    assert not problems, f"{name}: {len(problems)} mismatches\n" + "\n".join(problems)


@pytest.mark.parametrize("name", NAMES)
def test_wrapper_spans_and_two_runs_in_one_trace(name):
    """The HTTP SERVER span around a run is never a run; two runs under one request are two runs."""
    truth = _truth(name)
    report = analyze([str(FIXTURES / f"{name}.jsonl")])
    spans, runs = report.spans, report.runs
    for t in truth["traces"]:
        if t["shape"] not in ("http", "two_runs"):
            continue
        server = spans[(spans["trace_id"] == t["trace_id"]) & (spans["kind"] == 2)]
        assert len(server) == 1 and server["run_id"].isna().all(), (t["shape"], "the SERVER span is in a run")
        mine = runs[runs["trace_id"] == t["trace_id"]]
        assert len(mine) == t["n_runs"] == (2 if t["shape"] == "two_runs" else 1)
        assert set(mine["run_root"]) <= {"agent", "chain"}
        # a trace holding two runs keys each by <trace id>:<span id>; one run keys by its trace id
        assert (mine["run_id"] == t["trace_id"]).all() == (t["n_runs"] == 1)


def test_the_sub_agent_shapes_count_in_the_run_that_contains_them():
    truth = _truth("openai_agents")
    runs = analyze([str(FIXTURES / "openai_agents.jsonl")]).runs
    subs = [r for t in truth["traces"] if t["shape"] == "sub_agent" for r in t["runs"]]
    assert len(subs) == 2
    for r in subs:
        got = runs[runs["trace_id"] == r["trace_id"]]
        assert len(got) == 1
        got = got.iloc[0]
        assert got["sub_agents"] == r["sub_agents"]["count"] == 1
        assert list(got["sub_agent_names"]) == r["sub_agents"]["names"]
        assert got["model_calls"] == r["model_calls"] and got["tool_calls"] == r["tool_calls"]


def test_unrecorded_values_are_null_and_said_so():
    report = analyze([str(FIXTURES / "openai_v2.jsonl")])
    bare = report.runs[report.runs["tool_calls"].isna()]
    assert len(bare) == 1 and bare["model_calls"].iloc[0] >= 2
    assert report.derivation.missing.get("tool_calls") == 1
    assert any("asked for tools" in n for n in report.derivation.notes)
