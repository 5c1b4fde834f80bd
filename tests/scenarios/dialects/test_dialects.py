"""The analysis reads the traces real instrumentations emit (issue 11): committed fixtures against their truth.

Each ``tests/dialects/fixtures/<name>.jsonl`` was written by a real framework and instrumentation driven against
a scripted model server (``tests/dialects/generate.py``); ``<name>.truth.json`` holds what the server served and
which tools ran, per run. Nothing here needs the frameworks installed.
"""
from __future__ import annotations

import functools
import json
import math

import pandas as pd
import pytest
from locations import TESTS

from agentobs.analysis import analyze

# Runs the analysis does not read right yet, one entry per (fixture, run key): each is an expected failure of
# test_analysis_finds_the_served_run (strict, so an entry that starts passing fails until it is removed here) and
# of that fixture's test_wrapper_spans_and_two_runs_in_one_trace when it is an http or two_runs run. Empty since
# issue 41 (runs by structure, one logical call per chain, attempts, dialects without an operation name).
PENDING_ISSUE_41: set[tuple[str, str]] = set()

FIXTURES = TESTS / "dialects" / "fixtures"
NAMES = sorted(p.name[:-len(".truth.json")] for p in FIXTURES.glob("*.truth.json"))
FIGURES = ("model_calls", "attempts", "tool_calls", "input_tokens", "output_tokens", "max_identical_calls",
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


SHAPE_OF = {"retries": "retries", "retries_exhausted": "retries", "streaming": "streaming", "parallel": "parallel",
            "tool_error_fed_back": "tool_error", "tool_error_fatal": "tool_error", "turn_limit": "turn_limit",
            "multi_agent": "multi_agent"}
STOP_REASONS = {"done", "model_error", "tool_error", "turn_limit", "exception"}


def _consistency(r: dict) -> list[str]:
    """What must hold between a run's truth fields (v2), and what each shape promises."""
    bad = []

    def need(cond: bool, what: str) -> None:
        if not cond:
            bad.append(f"{r['run_key']}: {what}")
    need(r["model_calls"] >= 1, "no model call")
    need(r["attempts"] >= r["model_calls"], "fewer attempts than logical calls")
    need(0 <= r["failed_attempts"] <= r["attempts"], "failed attempts")
    need(r["model_errors"] <= r["model_calls"] and r["model_errors"] <= r["failed_attempts"], "model errors")
    need(r["errors"] == r["model_errors"] + r["tool_errors"], "errors != model_errors + tool_errors")
    need(0 <= r["tool_errors_fed_back"] <= r["tool_errors"] <= r["tool_calls"], "tool errors fed back")
    need(r["stop_reason"] in STOP_REASONS, f"stop reason {r['stop_reason']}")
    need((r["outcome"] == "success") == (r["stop_reason"] == "done"), "outcome and stop reason disagree")
    need(r["outcome"] != "success" or not r["raised"], "a run that raised is a success")
    need(r["stop_reason"] != "model_error" or r["model_errors"] >= 1, "model_error without a failed call")
    need(r["stop_reason"] != "tool_error" or r["tool_errors"] > r["tool_errors_fed_back"], "tool_error, all fed back")
    need(r["stop_reason"] != "exception" or bool(r["raised"]), "exception without an exception")
    need(r["max_parallel_tool_calls"] >= (1 if r["tool_calls"] else 0), "tool calls but no reply asked for one")
    key, shape = r["run_key"], r["shape"]
    if key in SHAPE_OF:
        need(shape == SHAPE_OF[key], f"shape {shape}, expected {SHAPE_OF[key]}")
    if key == "retries":
        need(r["attempts"] == r["model_calls"] + 2 and r["failed_attempts"] == 2 and r["outcome"] == "success",
             "retries: one call with 3 attempts, then success")
    if key == "retries_exhausted":
        need(r["stop_reason"] == "model_error" and r["failed_attempts"] == 3 and r["model_errors"] == 1,
             "retries_exhausted: 3 failed attempts of one call")
    if key == "streaming":
        need(r["streamed"] and r["outcome"] == "success", "streaming: streamed, success")
    else:
        need(not r["streamed"], "streamed outside the streaming shape")
    if key == "parallel":
        need(r["max_parallel_tool_calls"] == 2 and r["tool_calls"] == 2, "parallel: two tool calls in one reply")
    if key == "tool_error_fed_back":
        need(r["tool_errors_fed_back"] == 1 and r["outcome"] == "success", "tool_error_fed_back")
    if key == "tool_error_fatal":
        need(r["stop_reason"] == "tool_error" and r["tool_errors_fed_back"] == 0, "tool_error_fatal")
    if key == "tool_error":   # the framework's default, either way
        need(r["tool_errors"] == 1 and (r["tool_errors_fed_back"] == 1) == (r["stop_reason"] == "done"), "tool_error")
    if key == "turn_limit":
        need(r["stop_reason"] == "turn_limit" and r["tool_errors"] == 0, "turn_limit")
    if key == "model_error":
        need(r["stop_reason"] == "model_error" and r["attempts"] == r["model_calls"], "model_error: no retries")
    if shape in ("multi_agent", "sub_agent"):
        need(r["sub_agents"]["count"] >= 1, f"{shape} without a sub-agent")
    if shape in ("plain", "http", "two_runs", "no_agent") and key not in ("tool_error", "model_error"):
        need(r["outcome"] == "success" and r["attempts"] == r["model_calls"], "a plain run that did not succeed")
    return bad


@pytest.mark.parametrize("name", NAMES)
def test_truth_names_spans_that_are_in_the_fixture(name):
    """The harness itself: every run of the truth has its trace and top span in the fixture, versions recorded,
    and the v2 fields agree with each other and with what the run's shape promises."""
    truth = _truth(name)
    assert truth["dialect"] == name
    assert truth.get("truth_version") == 2
    assert truth.get("python") or truth.get("node")
    assert truth["packages"] and all(v != "not installed" for v in truth["packages"].values())
    ids: dict[str, set[str]] = {}
    for line in (FIXTURES / f"{name}.jsonl").read_text().splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    ids.setdefault(s["traceId"], set()).add(s["spanId"])
    bad: list[str] = []
    keys: list[str] = []
    for t in truth["traces"]:
        assert t["trace_id"] in ids, f"trace {t['trace_id']} of the truth is not in {name}.jsonl"
        assert t["n_runs"] == len(t["runs"]) >= 1
        for r in t["runs"]:
            assert r["root_span_id"] in ids[t["trace_id"]]
            bad.extend(_consistency(r))
            keys.append(r["run_key"])
    assert len(keys) == len(set(keys)), "a run key twice"
    assert len(ids) == len(truth["traces"]), "a trace of the fixture is in no run of the truth (one trace per run)"
    assert not bad, f"{name}: " + "; ".join(bad)


# What a span cannot show, by fixture and run: the analysis must give exactly this instead of the truth's
# served figure, and null, never 0, where the dialect records nothing (the truth files' notes say why).
UNRECORDED_OLD = {"model_error": {"model_calls": 1, "errors": 0}, "retries_exhausted": {"model_calls": 1, "errors": 0},
                  "tool_error_fatal": {"tool_calls": None, "max_identical_calls": None,
                                       "max_consecutive_identical": None, "errors": 0}}
UNRECORDED: dict[tuple[str, str], dict[str, object]] = {
    # openai-v2 instruments the model client only: the tools a bare loop runs leave no span
    **{(name, "bare"): {"tool_calls": None, "max_identical_calls": None, "max_consecutive_identical": None}
       for name in ("openai_v2", "openai_v2_latest")},
    # traceloop-sdk 0.33 never ends (so never exports) the span of a decorated function that raises, nor the
    # failed chat span: the failed tool span and the failed model call are lost
    **{("traceloop_old", key): {"tool_calls": None, "max_identical_calls": None, "max_consecutive_identical": None,
                                "errors": 0} for key in ("tool_error", "tool_error_fatal")},
    **{("traceloop_old", key): {"model_calls": 1, "errors": 0} for key in ("model_error", "retries_exhausted")},
    # traceloop-sdk 0.33's OpenAI instrumentation records no usage on a streamed chat span (the usage chunk is
    # ignored), though the stream asked for it
    ("traceloop_old", "streaming"): {"input_tokens": None, "output_tokens": None},
    # the Google ADK records no tool arguments (content capture is off by default): repeats cannot be counted; and
    # its output tokens add the reasoning tokens to OpenAI's completion tokens, which already hold them
    **{("google_adk", key): {"max_identical_calls": None, "max_consecutive_identical": None}
       for key in ("tools", "repeat", "tool_error", "model_error", "http", "two-a", "sub-handoff",
                   "retries", "retries_exhausted", "streaming", "parallel", "tool_error_fed_back", "turn_limit",
                   "multi_agent")},
    **{("google_adk", key): {"max_identical_calls": None, "max_consecutive_identical": None, "output_tokens": 51}
       for key in ("tools", "streaming")},
    # @traceloop/node-server-sdk 0.27 never ends (so never exports) the span of a wrapped function that throws, nor a
    # failed chat span (as traceloop-sdk 0.33 in Python); it records a tool's input as empty arguments (every call
    # of one tool looks the same), and no usage on a streamed chat span
    **{("openllmetry_js", key): {"tool_calls": None, "max_identical_calls": None, "max_consecutive_identical": None,
                                 "errors": 0} for key in ("tool_error",)},
    ("openllmetry_js", "tool_error_fatal"): {"tool_calls": None, "max_identical_calls": None,
                                             "max_consecutive_identical": None, "errors": 0,
                                             "stop_reason": "max_steps"},
    **{("openllmetry_js", key): {"model_calls": 1, "errors": 0, "stop_reason": "max_steps"}
       for key in ("model_error", "retries_exhausted")},
    ("openllmetry_js", "streaming"): {"input_tokens": None, "output_tokens": None},
    ("openllmetry_js", "repeat"): {"max_identical_calls": 4, "max_consecutive_identical": 4},
    ("openllmetry_js", "turn_limit"): {"max_identical_calls": 3, "max_consecutive_identical": 3},
    # Haystack's Agent invokes its tools itself: no span per tool call (3.x: none at all; 2.x: one ToolInvoker span
    # per step), so tool calls, repeats and tool errors cannot be counted; the nested Agent span names no agent
    **{(name, key): {"tool_calls": None, "max_identical_calls": None, "max_consecutive_identical": None,
                     **({"errors": 0} if key in ("tool_error", "tool_error_fatal") else {}),
                     **({"sub_agent_names": ["Agent"]} if key == "multi_agent" else {})}
       for name in ("haystack", "haystack_v2")
       for key in ("tools", "repeat", "tool_error", "model_error", "http", "two-a", "retries", "retries_exhausted",
                   "streaming", "parallel", "tool_error_fatal", "turn_limit", "multi_agent")},
    # Logfire names a span by its message template: the agent run inside a tool (found by structure, no span names
    # it an agent) is "{agent} answering"
    ("logfire", "multi_agent"): {"sub_agent_names": ["{agent} answering"]},
    # Mastra marks no model step failed: only its loop's finish reason says "error"
    **{("mastra", key): {"errors": 0} for key in ("model_error", "retries_exhausted")},
    # DSPy's spans name no agent (the ReAct module's span stands for the one in the tool); its turn limit and
    # Semantic Kernel's end in an extract step or a last request without tools that no span tells apart from an
    # answer: what the spans show is a run that answered
    **{(name, "multi_agent"): {"sub_agent_names": ["ReAct.forward"]} for name in ("dspy", "dspy_litellm")},
    **{(name, "turn_limit"): {"outcome": "success", "stop_reason": "done"}
       for name in ("dspy", "dspy_litellm", "semantic_kernel")},
    # Genkit ends a run on a tool's exception; the fed-back shape catches it in the tool, whose span then shows a
    # success; a translator run inside a tool is a `generate` span that names no agent
    ("genkit", "tool_error_fed_back"): {"errors": 0},
    ("genkit", "multi_agent"): {"sub_agent_names": ["generate"]},
    # OpenInference's OpenAI instrumentation for JavaScript (4.2) ends a chat span only when the call succeeds (a
    # rejected call's span is never exported) and reads no usage from a stream: the run's own span says the model
    # provider failed it
    **{("openinference_openai_js", key): {"model_calls": 1, "errors": 0}
       for key in ("model_error", "retries_exhausted")},
    ("openinference_openai_js", "streaming"): {"input_tokens": None, "output_tokens": None},
    # OpenLLMetry's LangChain.js callback handler (0.27) names a tool by its class (DynamicStructuredTool) and keeps
    # its arguments without the tool's name: get_weather(Paris) and get_time(Paris) look the same; it nests no span
    # under another, so the translator agent's spans are siblings of the assistant's: no sub-agent to see
    **{("langchain_openllmetry_js", key): {"max_identical_calls": 2, "max_consecutive_identical": 2}
       for key in ("tools", "parallel")},
    ("langchain_openllmetry_js", "multi_agent"): {"sub_agents": 0, "sub_agent_names": []},
    # ... and with the failed call or tool span lost, what the spans show is the model's last request for tools,
    # never answered: the run failed at a turn limit, as far as they tell
    **{("traceloop_old", key): {**UNRECORDED_OLD.get(key, {}), "stop_reason": "max_steps"}
       for key in ("model_error", "retries_exhausted", "tool_error_fatal")},
}


# Frameworks whose HTTP client retries inside one model call (the OpenAI Python client's max_retries): the attempts
# leave no span, so a retried call shows one attempt. The Vercel AI SDK retries above its model call: one span per
# attempt, each counted.
HIDDEN_ATTEMPTS = {"langgraph", "openai_agents", "openai_v2", "openai_v2_latest", "pydantic_ai", "pydantic_ai_v2",
                   "traceloop", "traceloop_old", "mlflow", "langfuse", "crewai", "llamaindex", "smolagents",
                   "autogen", "google_adk", "dspy", "haystack", "haystack_v2", "semantic_kernel", "langgraph_js",
                   "openllmetry_js", "mastra", "logfire", "openinference_openai_js", "langchain_openllmetry_js"}


def _expected(name: str, run: dict, field: str) -> tuple[bool, int | None]:
    """(whether the field is checked, the value the analysis must give)."""
    known = UNRECORDED.get((name, run["run_key"]), {})
    if field in known:
        return True, known[field]
    if field == "attempts" and name in HIDDEN_ATTEMPTS:
        return True, known.get("model_calls", run["model_calls"])
    want = run.get(field)
    return want is not None, want


@functools.cache
def _report(name: str):  # an agentobs analysis Report
    return analyze([str(FIXTURES / f"{name}.jsonl")])


def _runs_of_all_fixtures() -> list:
    out = []
    for name in NAMES:
        for t in _truth(name)["traces"]:
            for r in t["runs"]:
                pending = (name, r["run_key"]) in PENDING_ISSUE_41
                marks = [pytest.mark.xfail(strict=True, reason="issue 41: the analysis does not read this shape "
                                                                "yet")] if pending else []
                out.append(pytest.param(name, r["run_key"], marks=marks, id=f"{name}:{r['run_key']}"))
    return out


def test_pending_names_runs_that_exist():
    """The PENDING_ISSUE_41 table names only runs of the fixtures (no stale entry hides a typo)."""
    known = {(n, r["run_key"]) for n in NAMES for t in _truth(n)["traces"] for r in t["runs"]}
    assert not PENDING_ISSUE_41 - known, sorted(PENDING_ISSUE_41 - known)


@pytest.mark.parametrize(("name", "run_key"), _runs_of_all_fixtures())
def test_analysis_finds_the_served_run(name, run_key):
    """Per run: the analysis finds it in its trace, with the truth's figures (model_calls are logical calls)."""
    truth = _truth(name)
    report = _report(name)
    runs = report.runs
    # signatures and caps ran on these runs without error
    assert isinstance(report.signatures, list) and isinstance(report.caps, list)
    assert report.derivation.dialects, "no span was classified"
    t = next(t for t in truth["traces"] if any(r["run_key"] == run_key for r in t["runs"]))
    mine = runs[runs["trace_id"] == t["trace_id"]].sort_values("start", kind="stable")
    keys = [r["run_key"] for r in t["runs"]]
    assert len(mine) == t["n_runs"], (f"trace {t['trace_id'][:8]} ({t['shape']}: {', '.join(keys)}): {len(mine)} "
                                      f"runs found, {t['n_runs']} expected")
    r = t["runs"][keys.index(run_key)]
    got = mine.iloc[keys.index(run_key)]
    problems: list[str] = []
    for f in (*FIGURES, "errors"):
        checked, want = _expected(name, r, f)
        have = _num(got[f])
        if checked and have != want:
            problems.append(f"{f} {have}, expected {want}")
    subs = r.get("sub_agents") or {}
    names = UNRECORDED.get((name, run_key), {}).get("sub_agent_names", subs.get("names"))
    count = UNRECORDED.get((name, run_key), {}).get("sub_agents", subs.get("count"))
    if "count" in subs and (_num(got["sub_agents"]) != count or list(got["sub_agent_names"]) != names):
        problems.append(f"sub-agents {got['sub_agents']} {list(got['sub_agent_names'])}, expected "
                        f"{subs['count']} {subs['names']}")
    assert not problems, f"{name} run {run_key}: " + "; ".join(problems)


def _wrapper_params() -> list:
    out = []
    for name in NAMES:
        keys = {(name, r["run_key"]) for t in _truth(name)["traces"] if t["shape"] in ("http", "two_runs")
                for r in t["runs"]}
        pending = sorted(k for _, k in keys & PENDING_ISSUE_41)
        marks = [pytest.mark.xfail(strict=True, reason=f"issue 41: {pending} pending")] if pending else []
        out.append(pytest.param(name, marks=marks, id=name))
    return out


@pytest.mark.parametrize("name", _wrapper_params())
def test_wrapper_spans_and_two_runs_in_one_trace(name):
    """The HTTP SERVER span around a run is never a run; two runs under one request are two runs."""
    truth = _truth(name)
    report = _report(name)
    spans, runs = report.spans, report.runs
    for t in truth["traces"]:
        if t["shape"] not in ("http", "two_runs"):
            continue
        server = spans[(spans["trace_id"] == t["trace_id"]) & (spans["kind"] == 2) & (spans["_kind"] == "transport")]
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
    assert any("asked for tools" in n for n in report.derivation.sentences())


# the truth's stop reasons in the closed stop reasons of the runs table (a framework's turn limit is max_steps)
TRUTH_STOP = {"done": "done", "turn_limit": "max_steps", "model_error": "model_error", "tool_error": "tool_error",
              "exception": "exception"}


@pytest.mark.parametrize(("name", "run_key"), _runs_of_all_fixtures())
def test_outcome_and_stop_reason_from_the_spans_alone(name, run_key):
    """Without a labels file: success from the evidence in the spans (never the root's status alone), and the stop
    reason the server's and tools' logs say ended the run (issue 42)."""
    truth = _truth(name)
    runs = _report(name).runs
    t = next(t for t in truth["traces"] if any(r["run_key"] == run_key for r in t["runs"]))
    keys = [r["run_key"] for r in t["runs"]]
    got = runs[runs["trace_id"] == t["trace_id"]].sort_values("start", kind="stable").iloc[keys.index(run_key)]
    r = t["runs"][keys.index(run_key)]
    shown = UNRECORDED.get((name, run_key), {})
    want_stop = shown.get("stop_reason", TRUTH_STOP[r["stop_reason"]])
    outcome = shown.get("outcome", r["outcome"])
    assert got["success"] is not pd.NA and bool(got["success"]) == (outcome == "success"), (
        f"{name} {run_key}: success {got['success']} ({got['label_source']}), truth {outcome}")
    assert got["stop_reason"] == want_stop, (f"{name} {run_key}: stop {got['stop_reason']} "
                                             f"({got['stop_reason_source']}), truth {r['stop_reason']}")
    assert str(got["stop_reason_source"]).startswith("inferred:")
    if outcome != "success":
        assert isinstance(got["last_error"], str) and got["last_error"]


# the signature that names what ended a failed run, by the truth's stop reason
CAUSE = {"model_error": "provider_error", "tool_error": "tool_error_fatal", "turn_limit": "turn_limit"}
FAILURE_SIGNATURES = {"provider_error", "tool_error_fatal", "tool_error_unrecovered", "turn_limit", "budget_limit"}


@pytest.mark.parametrize(("name", "run_key"), _runs_of_all_fixtures())
def test_the_signature_names_what_ended_the_run(name, run_key):
    """Without a labels file: a failed run carries the signature of its cause (from the server's and tools' logs);
    a run that ended normally carries no failure signature, and a tool error fed back to the model that the run
    recovered from is named as such."""
    truth = _truth(name)
    runs = _report(name).runs
    t = next(t for t in truth["traces"] if any(r["run_key"] == run_key for r in t["runs"]))
    keys = [r["run_key"] for r in t["runs"]]
    got = runs[runs["trace_id"] == t["trace_id"]].sort_values("start", kind="stable").iloc[keys.index(run_key)]
    r = t["runs"][keys.index(run_key)]
    sigs = set(got["signatures"])
    if UNRECORDED.get((name, run_key), {}).get("outcome", r["outcome"]) == "success":
        assert not sigs & FAILURE_SIGNATURES, (name, run_key, sigs)
        if r["tool_errors_fed_back"] and _expected(name, r, "errors")[1]:      # (unless the failed span was lost)
            assert "tool_error_recovered" in sigs, (name, run_key, sigs)
        return
    want_stop = UNRECORDED.get((name, run_key), {}).get("stop_reason")
    want = {"max_steps": "turn_limit"}.get(want_stop, CAUSE.get(r["stop_reason"]))
    assert want in sigs, (name, run_key, r["stop_reason"], sigs)
