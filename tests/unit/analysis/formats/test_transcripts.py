"""Chat transcripts (tau2-bench results, OpenAI-style run lists) imported as span frames."""
import json
import re
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from locations import TAU2

from agentobs.analysis.formats.transcripts import (
    ATTRIBUTE_TYPES,
    SYNTHETIC_EPOCH_NS,
    detect_format,
    load_transcripts,
    transcripts_to_spans,
)
from agentobs.analysis.spans.checks import check
from agentobs.analysis.spans.schema import SPAN_BASE
from agentobs.analysis.spans.spanset import SpanSet
from agentobs.contract import semconv as sc

FILES = sorted(TAU2.glob("*.json"))
needs_tau2 = pytest.mark.skipif(len(FILES) != 8, reason="tau2 data not present")

# The README's table, as printed: (agent, success) -> runs, {measure: (p50, p90, p99, max)}.
README_TABLE = {
    ("gpt-4.1", True): (82, {"model_calls": ("13", "19", "25.9", "30"),
                             "tool_calls": ("7", "17", "25.8", "29"),
                             "tokens": ("82,559", "155,032", "226,826", "263,301")}),
    ("gpt-4.1", False): (58, {"model_calls": ("15", "20", "26", "30"),
                              "tool_calls": ("8", "18.3", "25.6", "29")}),
    ("ft", True): (111, {"model_calls": ("13", "20", "30.7", "32"),
                         "tool_calls": ("7", "14", "25.5", "27"),
                         "tokens": ("82,382", "162,390", "240,566", "266,761")}),
    ("ft", False): (29, {"model_calls": ("21", "85.4", "99.7", "100"),
                         "tool_calls": ("10", "74.6", "98.4", "99"),
                         "tokens": ("166,287", "1,043,366", "1,323,114", "1,381,556")}),
}
_MEASURE = {"assistant messages with usage": "model_calls", "agent tool calls": "tool_calls",
            "prompt + completion tokens": "tokens"}


def _op(df):
    return df[sc.OPERATION_NAME]


@pytest.fixture(scope="module")
def tau2():
    t0 = time.perf_counter()
    parts = [load_transcripts(f) for f in FILES]
    elapsed = time.perf_counter() - t0
    return SpanSet.concat(parts), elapsed


@pytest.fixture(scope="module")
def per_run(tau2):
    """One row per run, computed from the spans frame alone."""
    df = tau2[0].spans
    roots = df[df["parent_span_id"].isna()].set_index("trace_id")
    chats = df[_op(df) == "chat"]
    tools = df[_op(df) == "execute_tool"]
    out = pd.DataFrame({
        "file": roots["source"].astype(str).map(lambda s: Path(s).name),
        "success": roots["agentobs.label.success"],
        "model_calls": chats.groupby("trace_id").size(),
        "tool_calls": tools.groupby("trace_id").size(),
        "tokens": chats.groupby("trace_id")[sc.USAGE_INPUT_TOKENS].sum()
        + chats.groupby("trace_id")[sc.USAGE_OUTPUT_TOKENS].sum(),
        "root_tokens": roots[sc.USAGE_INPUT_TOKENS] + roots[sc.USAGE_OUTPUT_TOKENS],
    })
    out[["model_calls", "tool_calls"]] = out[["model_calls", "tool_calls"]].fillna(0).astype(int)
    out["agent"] = np.where(out["file"].str.startswith("gpt-4.1_"), "gpt-4.1",
                            np.where(out["file"].str.startswith("ft_"), "ft", "?"))
    return out


def _matches(value: float, printed: str) -> bool:
    """True when ``value`` rounds to ``printed`` at the precision it was printed with."""
    text = printed.replace(",", "")
    decimals = len(text.split(".")[1]) if "." in text else 0
    return round(float(value), decimals) == float(text)


# -- the tau2 runs ---------------------------------------------------------------------------------------

@needs_tau2
def test_tau2_imports_cleanly(tau2):
    spanset, _ = tau2
    df = spanset.spans
    assert not spanset.quality.issues and spanset.quality.files == 8
    roots = df[df["parent_span_id"].isna()]
    assert len(roots) == 280 and roots["trace_id"].is_unique
    assert int(roots["agentobs.label.success"].sum()) == 193
    assert (roots["agentobs.label.success"] == (roots["agentobs.label.reward"] == 1.0)).all()
    assert set(roots["agentobs.transcript.format"]) == {"tau2"}
    assert set(roots["agentobs.transcript.timing"]) == {"recorded"}
    assert (_op(df).value_counts().to_dict()) == {"chat": 4329, "execute_tool": 2964, "invoke_agent": 280}
    # structural checks of the OTLP loader find nothing either
    checked = check(SpanSet(spans=df.copy(), quality=type(spanset.quality)()))
    assert not checked.quality.issues


@needs_tau2
def test_readme_table_is_reproduced(per_run):
    assert (per_run["agent"] != "?").all()
    counts = per_run.groupby(["agent", "success"]).size().to_dict()
    assert counts == {k: v[0] for k, v in README_TABLE.items()}
    for (agent, success), (_, measures) in README_TABLE.items():
        group = per_run[(per_run["agent"] == agent) & (per_run["success"] == success)]
        for measure, printed in measures.items():
            x = group[measure].to_numpy(dtype=float)
            got = [*np.percentile(x, [50, 90, 99]), x.max()]
            for value, text in zip(got, printed, strict=True):
                assert _matches(value, text), (agent, success, measure, value, text)


@needs_tau2
def test_hard_coded_table_is_the_readme_table():
    readme = (TAU2 / "README.md").read_text()
    rows, agent = {}, None
    for line in readme.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 7 or cells[2] not in _MEASURE:
            continue
        if cells[0]:
            m = re.match(r"(GPT-4\.1|fine-tuned), reward ([01])", cells[0])
            agent = ("gpt-4.1" if m.group(1) == "GPT-4.1" else "ft", m.group(2) == "1")
            rows[agent] = (int(cells[1]), {})
        rows[agent][1][_MEASURE[cells[2]]] = tuple(cells[3:])
    assert rows == README_TABLE


@needs_tau2
def test_model_calls_exclude_the_greeting_and_user_tool_calls(per_run, tau2):
    df = tau2[0].spans
    roots = df[df["parent_span_id"].isna()].set_index(sc.CONVERSATION_ID)
    expected_calls, expected_tools, user_tools, greetings = {}, {}, 0, 0
    for f in FILES:
        for s in json.loads(f.read_bytes())["simulations"]:
            msgs = s["messages"]
            greetings += msgs[0]["role"] == "assistant" and msgs[0]["usage"] is None
            expected_calls[s["id"]] = sum(m["role"] == "assistant" and m["usage"] is not None for m in msgs)
            calls = [c for m in msgs for c in m.get("tool_calls") or []]
            expected_tools[s["id"]] = sum(c["requestor"] == "assistant" for c in calls)
            user_tools += sum(c["requestor"] == "user" for c in calls)
    assert greetings == 200 and user_tools == 902
    runs = per_run.set_index(roots.reset_index().set_index("trace_id").loc[per_run.index, sc.CONVERSATION_ID])
    assert runs["model_calls"].to_dict() == expected_calls
    assert runs["tool_calls"].to_dict() == expected_tools
    assert int(roots["agentobs.transcript.user_tool_calls"].sum()) == 902
    # the simulated user's calls (telecom: toggle_airplane_mode, run_speed_test, ...) never become agent spans
    # (the names alone would not do: without a user, the no-user agent calls the device tools itself)
    user_ids = {c["id"] for f in FILES for s in json.loads(f.read_bytes())["simulations"]
                for m in s["messages"] if m["role"] == "user" for c in m.get("tool_calls") or []}
    agent_ids = set(df.loc[_op(df) == "execute_tool", sc.TOOL_CALL_ID])
    assert len(user_ids) == 902 and len(agent_ids) == 2964 and not (user_ids & agent_ids)


@needs_tau2
def test_span_frame_contract(tau2):
    df = tau2[0].spans
    for col, dtype in SPAN_BASE.items():
        if col != "source":             # concat of per-file categories widens source to text
            assert str(df[col].dtype) == dtype, col
    single = load_transcripts(FILES[0]).spans
    assert isinstance(single["source"].dtype, pd.CategoricalDtype)
    assert list(single["source"].cat.categories) == [str(FILES[0])]
    want = {"string": "string", "int": "Int64", "double": "Float64", "bool": "boolean"}
    for key, kind in ATTRIBUTE_TYPES.items():
        if kind == "string[]":
            assert str(df[key].dtype).startswith("list<item: string>"), key
        else:
            assert str(df[key].dtype) == want[kind], key
    assert df["trace_id"].str.fullmatch(r"[0-9a-f]{32}").all()
    assert df["span_id"].str.fullmatch(r"[0-9a-f]{16}").all()
    roots = df[df["parent_span_id"].isna()]
    kids = df[df["parent_span_id"].notna()]
    root_of = roots.set_index("trace_id")
    assert (kids["parent_span_id"].to_numpy() == root_of.loc[kids["trace_id"], "span_id"].to_numpy()).all()
    assert (df["end_ns"] >= df["start_ns"]).all()
    assert (kids["start_ns"].to_numpy() >= root_of.loc[kids["trace_id"], "start_ns"].to_numpy()).all()
    assert (kids["end_ns"].to_numpy() <= root_of.loc[kids["trace_id"], "end_ns"].to_numpy()).all()
    names = df["name"].str.split(" ").str[0]
    assert (names == _op(df)).all()
    assert set(df.loc[names == "chat", "kind"]) == {3} and set(df.loc[names != "chat", "kind"]) == {1}
    chats = df[names == "chat"]
    assert chats[sc.USAGE_INPUT_TOKENS].notna().all() and set(chats[sc.USAGE_SOURCE]) == {"reported"}
    assert {r[0] for r in chats[sc.RESPONSE_FINISH_REASONS]} == {"stop", "tool_calls"}
    # root totals are the sums over the run's model calls
    sums = chats.groupby("trace_id")[[sc.USAGE_INPUT_TOKENS, sc.USAGE_OUTPUT_TOKENS]].sum()
    assert (root_of.loc[sums.index, [sc.USAGE_INPUT_TOKENS, sc.USAGE_OUTPUT_TOKENS]] == sums).all().all()
    # the model comes from info.agent_info.llm
    prefixes = roots["source"].astype(str).map(lambda s: Path(s).name[:3])
    models = dict(zip(prefixes, roots[sc.REQUEST_MODEL], strict=True))
    assert models == {"gpt": "gpt-4.1", "ft_": "ft:gpt-4.1-2025-04-14:sierra:tau2-full-sft:BzrYdMNm"}


@needs_tau2
def test_tool_errors_costs_and_terminations(tau2):
    df = tau2[0].spans
    tools = df[_op(df) == "execute_tool"]
    failed = tools[tools["status_code"] == 2]
    assert len(failed) == 49
    assert set(failed[sc.ERROR_TYPE]) == {"tool_error"} and set(failed["agentobs.tool.result_status"]) == {"error"}
    assert failed["status_message"].str.startswith("Error").all()
    assert set(tools.loc[tools["status_code"] == 0, "agentobs.tool.result_status"]) == {"ok"}
    # arguments are canonical JSON with sorted keys
    for text in tools[sc.TOOL_CALL_ARGUMENTS].head(200):
        assert text == json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    roots = df[df["parent_span_id"].isna()]
    bad = roots[roots["status_code"] == 2]
    assert sorted(bad[sc.ERROR_TYPE]) == ["max_steps"] * 5 + ["too_many_errors"]
    assert set(roots.loc[roots["status_code"] == 0, "agentobs.transcript.termination"]) == {"user_stop", "agent_stop"}
    # the five runaways: all fine-tuned telecom, 84-100 model calls; four (not five) exceed 1M tokens
    runaway = roots[roots[sc.ERROR_TYPE] == "max_steps"]
    tokens = sorted(runaway[sc.USAGE_INPUT_TOKENS] + runaway[sc.USAGE_OUTPUT_TOKENS])
    assert tokens == [878_582, 1_040_113, 1_056_376, 1_172_836, 1_381_556]
    assert set(runaway["agentobs.transcript.domain"]) == {"telecom"} and not runaway["agentobs.label.success"].any()
    # GPT-4.1 is priced; the fine-tuned model reports 0 USD for every call: unknown, not free
    is_ft = roots["source"].astype(str).str.contains("/ft_")
    assert (roots.loc[~is_ft, "agentobs.cost_usd"] > 0).all() and (roots.loc[~is_ft, sc.UNPRICED_CALLS] == 0).all()
    assert roots.loc[is_ft, "agentobs.cost_usd"].isna().all() and (roots.loc[is_ft, sc.UNPRICED_CALLS] > 0).all()


@needs_tau2
def test_ids_are_deterministic(tmp_path):
    a, b = load_transcripts(FILES[0]).spans, load_transcripts(FILES[0]).spans
    assert a[["trace_id", "span_id", "parent_span_id"]].equals(b[["trace_id", "span_id", "parent_span_id"]])
    copy = tmp_path / FILES[0].name
    copy.write_bytes(FILES[0].read_bytes())
    c = load_transcripts(copy).spans
    assert not set(c["trace_id"]) & set(a["trace_id"])     # the source is part of the id


# -- generic OpenAI-style runs -------------------------------------------------------------------------

def _openai_run(**extra):
    run = {"id": "run-1", "agent": "support", "model": "gpt-4o-mini", "label": True, "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Where is order 7?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_order", "arguments": '{"z": 1, "id": "7"}'}},
            {"id": "c2", "type": "function", "function": {"name": "get_user", "arguments": ""}}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"status": "shipped"}'},
        {"role": "tool", "tool_call_id": "c2", "content": '{"name": "Ann"}'},
        {"role": "assistant", "content": "It shipped."},
    ]}
    run.update(extra)
    return run


def test_generic_openai_runs_without_usage():
    out = transcripts_to_spans([_openai_run(), _openai_run(id="run-2", label=None, agent=None)], "mem.json")
    assert not out.quality.issues
    df = out.spans
    assert len(df) == 2 * (1 + 2 + 2)
    run = df[df["trace_id"] == df["trace_id"].iloc[0]]
    root = run.iloc[0]
    assert root["name"] == "invoke_agent support" and root[sc.AGENT_NAME] == "support"
    assert root[sc.CONVERSATION_ID] == "run-1" and root[sc.REQUEST_MODEL] == "gpt-4o-mini"
    assert root["agentobs.transcript.format"] == "openai" and root["agentobs.transcript.timing"] == "synthetic"
    assert bool(root["agentobs.label.success"]) and pd.isna(root["agentobs.label.reward"])
    assert pd.isna(root[sc.USAGE_INPUT_TOKENS]) and pd.isna(root[sc.USAGE_OUTPUT_TOKENS])   # unknown, not 0
    chats = run[_op(run) == "chat"]
    assert list(chats["name"]) == ["chat gpt-4o-mini"] * 2 and set(chats["kind"]) == {3}
    assert chats[sc.USAGE_INPUT_TOKENS].isna().all() and chats[sc.USAGE_SOURCE].isna().all()
    assert [list(r) for r in chats[sc.RESPONSE_FINISH_REASONS]] == [["tool_calls"], ["stop"]]
    tools = run[_op(run) == "execute_tool"]
    assert list(tools["name"]) == ["execute_tool get_order", "execute_tool get_user"]
    assert list(tools[sc.TOOL_CALL_ARGUMENTS]) == ['{"id":"7","z":1}', "{}"]
    assert list(tools[sc.TOOL_CALL_ID]) == ["c1", "c2"] and set(tools[sc.TOOL_TYPE]) == {"function"}
    assert set(tools["agentobs.tool.result_status"]) == {"ok"} and (tools["status_code"] == 0).all()
    # synthetic times: message i at epoch + (i + 1) s; chat from the previous message, tool up to its result
    s = 10**9
    assert (root["start_ns"], root["end_ns"]) == (SYNTHETIC_EPOCH_NS, SYNTHETIC_EPOCH_NS + 6 * s)
    assert list(zip(chats["start_ns"], chats["end_ns"], strict=True)) == \
        [(SYNTHETIC_EPOCH_NS + 2 * s, SYNTHETIC_EPOCH_NS + 3 * s),
         (SYNTHETIC_EPOCH_NS + 5 * s, SYNTHETIC_EPOCH_NS + 6 * s)]
    assert list(zip(tools["start_ns"], tools["end_ns"], strict=True)) == \
        [(SYNTHETIC_EPOCH_NS + 3 * s, SYNTHETIC_EPOCH_NS + 4 * s),
         (SYNTHETIC_EPOCH_NS + 4 * s, SYNTHETIC_EPOCH_NS + 5 * s)]
    other = df[df["trace_id"] != root["trace_id"]].iloc[0]
    assert other["name"] == "invoke_agent" and pd.isna(other[sc.AGENT_NAME])
    assert pd.isna(other["agentobs.label.success"])


def test_synthetic_times_start_at_the_runs_start_time_when_it_has_one():
    """Messages without times were put after 2000-01-01 even when the run says when it started: the report's time
    range and Jaeger then showed the year 2000. They now follow the run's start; its end_time is kept when later;
    an end_time without a start_time is not stretched back to 2000; an unusable start_time is named."""
    s = 10**9
    start = 1_735_725_600 * s                                        # 2025-01-01T10:00:00Z
    runs = [_openai_run(start_time="2025-01-01T10:00:00Z", end_time="2025-01-01T10:05:00Z"),
            _openai_run(id="run-2", end_time="2025-01-01T10:05:00Z"),
            _openai_run(id="run-3", start_time="yesterday")]
    out = transcripts_to_spans(runs, "mem.json")
    roots = out.spans[out.spans["parent_span_id"].isna()].set_index(sc.CONVERSATION_ID)
    assert set(roots["agentobs.transcript.timing"]) == {"synthetic"}
    assert (roots.loc["run-1", "start_ns"], roots.loc["run-1", "end_ns"]) == (start, start + 300 * s)
    first_chat = out.spans[(out.spans["trace_id"] == roots.loc["run-1", "trace_id"]) & (_op(out.spans) == "chat")]
    assert first_chat["start_ns"].iloc[0] == start + 2 * s
    assert (roots.loc["run-2", "start_ns"], roots.loc["run-2", "end_ns"]) == (SYNTHETIC_EPOCH_NS,
                                                                              SYNTHETIC_EPOCH_NS + 6 * s)
    assert roots.loc["run-3", "start_ns"] == SYNTHETIC_EPOCH_NS
    (issue,) = out.quality.issues
    assert issue.kind == "bad_run" and "unusable start_time" in issue.examples[0] and "yesterday" in issue.examples[0]


def test_generic_runs_with_usage_timestamps_and_defaults():
    msgs = [
        {"role": "user", "content": "hi", "timestamp": "2025-01-01T10:00:00Z"},
        {"role": "assistant", "content": "Hello!", "timestamp": "2025-01-01T10:00:01Z"},          # no usage: canned
        {"role": "user", "content": "order 7?", "timestamp": "2025-01-01T10:00:05Z"},
        {"role": "assistant", "tool_calls": [{"id": "a", "type": "function",
                                              "function": {"name": "get_order", "arguments": {"id": 7}}}],
         "usage": {"prompt_tokens": 100, "completion_tokens": 10}, "cost": 0.002,
         "timestamp": "2025-01-01T11:00:07+01:00"},                      # = 10:00:07Z
        {"role": "tool", "tool_call_id": "a", "content": "shipped", "timestamp": "2025-01-01T10:00:06Z"},  # goes back
        {"role": "assistant", "content": "Shipped.", "usage": {"prompt_tokens": 130, "completion_tokens": 5},
         "cost": 0.003, "timestamp": "2025-01-01T10:00:09Z"},
    ]
    doc = {"agent": "helper", "model": "m1", "runs": [{"id": 42, "success": False, "messages": msgs}]}
    assert detect_format(doc) == "openai"
    out = transcripts_to_spans(doc, "runs.json")
    assert not out.quality.issues
    df = out.spans
    root = df.iloc[0]
    t = pd.Timestamp("2025-01-01T10:00:00Z").value
    s = 10**9
    assert root["agentobs.transcript.timing"] == "recorded" and root[sc.CONVERSATION_ID] == "42"
    assert root[sc.AGENT_NAME] == "helper" and root[sc.REQUEST_MODEL] == "m1"
    assert root["agentobs.label.success"] == False  # noqa: E712 - pandas boolean
    assert (root[sc.USAGE_INPUT_TOKENS], root[sc.USAGE_OUTPUT_TOKENS]) == (230, 15)
    assert root["agentobs.cost_usd"] == pytest.approx(0.005) and root[sc.UNPRICED_CALLS] == 0
    chats = df[_op(df) == "chat"]
    assert len(chats) == 2                                  # the message without usage is not a model call
    assert list(chats["start_ns"]) == [t + 5 * s, t + 7 * s] and list(chats["end_ns"]) == [t + 7 * s, t + 9 * s]
    assert list(chats["agentobs.call.cost_usd"]) == [0.002, 0.003]
    tool = df[_op(df) == "execute_tool"].iloc[0]
    assert (tool["start_ns"], tool["end_ns"]) == (t + 7 * s, t + 7 * s)     # clamped: the result came "earlier"
    assert tool[sc.TOOL_CALL_ARGUMENTS] == '{"id":7}'
    assert (df["end_ns"] >= df["start_ns"]).all()
    assert (root["start_ns"], root["end_ns"]) == (t, t + 9 * s)


def test_user_requested_tool_calls_are_not_the_agents():
    doc = {"info": {"agent_info": {"implementation": "llm_agent", "llm": "gpt-4.1"}}, "simulations": [{
        "id": "sim-1", "task_id": "t1", "termination_reason": "user_stop", "agent_cost": 0.01,
        "reward_info": {"reward": 0.0}, "messages": [
            {"role": "assistant", "content": "Hi! How can I help you today?", "tool_calls": None, "usage": None},
            {"role": "user", "content": None, "usage": {"prompt_tokens": 50, "completion_tokens": 5},
             "tool_calls": [{"id": "u1", "name": "toggle_airplane_mode", "arguments": {}, "requestor": "user"}]},
            {"role": "tool", "id": "u1", "content": "ok", "requestor": "user", "error": False},
            {"role": "assistant", "content": None, "usage": {"prompt_tokens": 10, "completion_tokens": 2},
             "tool_calls": [{"id": "a1", "name": "get_line", "arguments": {"b": 2, "a": 1}, "requestor": "assistant"},
                            {"id": "a2", "name": "reboot", "arguments": {}, "requestor": "user"}]},
            {"role": "tool", "id": "a1", "content": "Error: Line not found", "requestor": "assistant", "error": True},
            {"role": "assistant", "content": "Sorry.", "usage": {"prompt_tokens": 20, "completion_tokens": 3}},
        ]}]}
    out = transcripts_to_spans(doc, "gpt-4.1_telecom_default_gpt-4.1_1trials.json")
    assert not out.quality.issues
    df = out.spans
    tools = df[_op(df) == "execute_tool"]
    assert list(tools[sc.TOOL_NAME]) == ["get_line"]
    assert tools.iloc[0][sc.TOOL_CALL_ARGUMENTS] == '{"a":1,"b":2}'
    assert tools.iloc[0]["status_code"] == 2 and tools.iloc[0]["status_message"] == "Error: Line not found"
    root = df.iloc[0]
    assert root["agentobs.transcript.user_tool_calls"] == 2
    assert (root[sc.USAGE_INPUT_TOKENS], root[sc.USAGE_OUTPUT_TOKENS]) == (30, 5)   # the user simulator's are not
    assert (_op(df) == "chat").sum() == 2                                            # the greeting is no model call
    assert root["agentobs.label.success"] == False and root["agentobs.label.reward"] == 0.0  # noqa: E712
    assert root["agentobs.transcript.domain"] == "telecom" and root["agentobs.transcript.task_id"] == "t1"
    assert root["agentobs.transcript.timing"] == "synthetic"


def test_model_from_file_name_when_info_lacks_it():
    doc = {"info": {}, "simulations": [{"id": "x", "messages": [
        {"role": "assistant", "content": "done", "usage": {"prompt_tokens": 1, "completion_tokens": 1}}]}]}
    name = "ft_gpt-4.1-2025-04-14_sierra_tau2-full-sft_BzrYdMNm_retail_default_gpt-4.1_1trials.json"
    df = transcripts_to_spans(doc, f"/data/{name}").spans
    assert df.iloc[0][sc.REQUEST_MODEL] == "ft:gpt-4.1-2025-04-14:sierra:tau2-full-sft:BzrYdMNm"
    assert df.iloc[1]["name"] == "chat ft:gpt-4.1-2025-04-14:sierra:tau2-full-sft:BzrYdMNm"
    assert df.iloc[0]["agentobs.transcript.domain"] == "retail"
    df = transcripts_to_spans(doc, "gpt-4.1_retail_defautl_gpt-4.1_1trials.json").spans
    assert df.iloc[0][sc.REQUEST_MODEL] == "gpt-4.1"


# -- bad input never raises ----------------------------------------------------------------------------

def _kinds(spanset):
    return {i.kind: i.count for i in spanset.quality.issues}


def test_bad_files_are_data_quality_issues(tmp_path):
    good = json.dumps([_openai_run()])
    (tmp_path / "truncated.json").write_text(good[: len(good) // 2])
    (tmp_path / "empty.json").write_text("  \n")
    (tmp_path / "shape.json").write_text(json.dumps({"hello": [1, 2, 3]}))
    (tmp_path / "numbers.json").write_text("[1, 2, 3]")
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe\x00garbage\x80")
    cases = {"truncated.json": "invalid_json", "empty.json": "empty_file", "shape.json": "unknown_format",
             "numbers.json": "unknown_format", "binary.json": "invalid_json", "missing.json": "unreadable"}
    for name, kind in cases.items():
        out = load_transcripts(tmp_path / name)
        assert _kinds(out) == {kind: 1}, name
        assert out.spans.empty and list(out.spans.columns) == list(SPAN_BASE), name
        assert out.sources == [str(tmp_path / name)] and out.quality.files == 1
    assert _kinds(load_transcripts(tmp_path)) == {"unreadable": 1}                 # a directory
    assert _kinds(transcripts_to_spans("just text", "x")) == {"unknown_format": 1}


def test_malformed_runs_are_reported_and_imported_as_far_as_possible():
    bad_msgs = _openai_run(id="bad-messages")
    bad_msgs["messages"] = [
        "not a message", {"role": "wizard", "content": "?"}, {"content": "no role"},
        {"role": "user", "content": "hi", "timestamp": "yesterday"},
        {"role": "assistant", "tool_calls": [
            {"id": "k1", "type": "function", "function": {"name": "lookup", "arguments": "{not json"}},
            {"id": "k2", "type": "function", "function": {"arguments": "{}"}},          # no name
            7]},
        {"role": "assistant", "tool_calls": "lookup()", "usage": {"prompt_tokens": "many"}},
        {"role": "tool", "tool_call_id": "k1", "content": "result"},
        {"role": "assistant", "content": "ok", "usage": {"prompt_tokens": 3, "completion_tokens": 4}},
    ]
    runs = [
        _openai_run(id="fine"),
        {"id": "no-messages"}, {"id": "empty", "messages": []}, {"id": "string", "messages": "hello"},
        "not a run", bad_msgs, _openai_run(id="fine"),                                  # a duplicate id
        {"id": "junk-only", "messages": [1, 2]}, _openai_run(id="label", label="yes"),
    ]
    out = transcripts_to_spans(runs, "runs.json")
    issues = [i for i in out.quality.issues if i.kind == "bad_run"]
    assert len(issues) == 1 and issues[0].count == 8 and len(issues[0].examples) == 3
    assert issues[0].examples[0] == "run no-messages: skipped: no messages"
    df = out.spans
    roots = df[df["parent_span_id"].isna()]
    assert sorted(roots[sc.CONVERSATION_ID]) == ["bad-messages", "fine", "fine", "label"]
    assert roots["trace_id"].is_unique
    run = df[df["trace_id"] == roots.loc[roots[sc.CONVERSATION_ID] == "bad-messages", "trace_id"].iloc[0]]
    tools = run[_op(run) == "execute_tool"]
    assert list(tools[sc.TOOL_NAME]) == ["lookup"] and list(tools[sc.TOOL_CALL_ARGUMENTS]) == ["{not json"]
    assert tools.iloc[0]["agentobs.tool.result_status"] == "ok"
    chats = run[_op(run) == "chat"]
    # usage is reported in this run, so the messages that carry it (even malformed) are the model calls
    assert len(chats) == 2 and pd.isna(chats.iloc[0][sc.USAGE_INPUT_TOKENS])
    assert chats.iloc[1][sc.USAGE_INPUT_TOKENS] == 3
    assert pd.isna(run.iloc[0][sc.USAGE_INPUT_TOKENS])                 # one call's tokens unknown: total unknown
    assert run.iloc[0]["agentobs.transcript.timing"] == "synthetic"
    label = roots[roots[sc.CONVERSATION_ID] == "label"].iloc[0]
    assert pd.isna(label["agentobs.label.success"])
    # the detailed problems of the malformed run, straight from a one-run import
    single = transcripts_to_spans([bad_msgs], "one.json").quality.issues[0]
    assert single.count == 1 and single.examples[0].startswith("run bad-messages: message 0 is a str")
    assert "(+" in single.examples[0]


def test_tau2_simulation_shapes_never_raise():
    doc = {"info": "not a dict", "simulations": [None, {"id": "a", "messages": None, "reward_info": "??"},
                                                 {"id": "b", "reward_info": {"reward": "1"}, "messages": [
                                                     {"role": "assistant", "usage": {}, "timestamp": 5}]}]}
    out = transcripts_to_spans(doc, "weird.json")
    assert _kinds(out) == {"bad_run": 3}
    roots = out.spans[out.spans["parent_span_id"].isna()]
    assert list(roots[sc.CONVERSATION_ID]) == ["b"] and pd.isna(roots.iloc[0]["agentobs.label.success"])


def test_out_of_range_tokens_and_times_are_bad_values_of_their_run_not_a_crash(tmp_path):
    """Token counts beyond 64 bits (2**63, 1e300), totals that overflow (two calls of 2**62) and dates the spans'
    nanoseconds cannot hold (0001-01-01 as a run's start_time) made the frame raise (TypeError, OverflowError)."""
    def run(run_id, usage, **extra):
        msgs = [{"role": "user", "content": "hi", "timestamp": "2024-01-01T00:00:00Z"},
                {"role": "assistant", "content": "ok", "usage": usage, "timestamp": "2024-01-01T00:00:01Z"},
                {"role": "assistant", "content": "ok", "usage": {"prompt_tokens": 2, "completion_tokens": 3},
                 "timestamp": "2024-01-01T00:00:02Z"}]
        return {"id": run_id, "messages": msgs, **extra}
    doc = {"runs": [
        run("big", {"prompt_tokens": 2**63, "completion_tokens": 1}),
        run("float", {"prompt_tokens": 1e300, "completion_tokens": 1}),
        run("sum", {"prompt_tokens": 2**63 - 2, "completion_tokens": 1}),         # + 2 overflows the total
        run("old", {"prompt_tokens": 1, "completion_tokens": 1}, start_time="0001-01-01T00:00:00"),
        run("late", {"prompt_tokens": 1, "completion_tokens": 1}, end_time="9999-12-31T23:59:59"),
        run("fine", {"prompt_tokens": 1, "completion_tokens": 1}),
    ]}
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(doc))
    out = load_transcripts(path)
    issue = next(i for i in out.quality.issues if i.kind == "bad_run")
    assert _kinds(out) == {"bad_run": 5} and len(issue.examples) == 3
    assert issue.examples[0] == ("run big: message 1: token count 9223372036854775808 is more than a 64-bit "
                                 "integer holds (tokens unknown)")
    assert "1e+300" in issue.examples[1]
    assert issue.examples[2].startswith("run sum: the run's input tokens add up to 9223372036854775808,")
    roots = out.spans[out.spans["parent_span_id"].isna()].set_index(sc.CONVERSATION_ID)
    assert list(roots.index) == ["big", "float", "sum", "old", "late", "fine"]     # every run kept
    assert roots[sc.USAGE_INPUT_TOKENS].isna().tolist() == [True, True, True, False, False, False]
    assert roots.loc["sum", sc.USAGE_OUTPUT_TOKENS] == 4                             # the other total is fine
    start = pd.Timestamp("2024-01-01T00:00:00Z").value
    assert roots.loc["old", "start_ns"] == start and roots.loc["late", "end_ns"] == start + 2 * 10**9
    detail = transcripts_to_spans({"runs": doc["runs"][3:4]}, "x").quality.issues[0].examples[0]
    assert detail == ('run old: unusable start_time "0001-01-01T00:00:00" '
                      "(out of range: spans hold 1677-09-21 to 2262-04-11)")
    # the same date in a message: the message's time is unusable, the run kept (it was skipped: OverflowError)
    old_msg = run("msg", {"prompt_tokens": 1, "completion_tokens": 1})
    old_msg["messages"][0]["timestamp"] = "0001-01-01T00:00:00"
    one = transcripts_to_spans([old_msg], "y")
    assert one.quality.issues[0].examples[0].startswith('run msg: message 0 has an unusable timestamp "0001-')
    assert len(one.spans) == 3 and one.spans["start_ns"].min() == start + 10**9
    # a tau2 trial number beyond 64 bits is ignored, with a note
    tau2 = {"simulations": [{"id": "s", "trial": 2**64, "messages": doc["runs"][5]["messages"]}]}
    t = transcripts_to_spans(tau2, "z")
    assert t.quality.issues[0].examples[0] == "run s: trial 18446744073709551616 is out of range (ignored)"
    assert pd.isna(t.spans["agentobs.transcript.trial"]).all()
