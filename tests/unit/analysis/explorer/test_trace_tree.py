"""``agentobs trace`` as a tree: tree lines, per span its role, start offset and duration in ms, tokens, cost and error;
a unique id prefix accepted, an ambiguous one listed (exit 2); ``--format json`` nested; ``--roles``; and linear in
its spans: a parent chain tens of thousands deep is walked without recursion (the old view took O(N x depth))."""
from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from otlp_spans import agent, chat, span, tool, write

from agentobs.analysis.explorer.trace_tree import matching_trace_ids, trace_tree
from agentobs.analysis.report.view import trace_view
from agentobs.cli.main import cli

A = "a1" * 16
B = "a1b2" + "0" * 28           # shares "a1" with A
C = "c3" * 16


def _run(trace: str, first: int = 1) -> list[dict]:
    """An agent with a model call, a tool call that failed and a sub-agent with a model call of its own."""
    return [span(trace, first, None, "invoke_agent planner", 0, 1000, agent("planner")),
            span(trace, first + 1, first, "chat gpt-4o", 10, 210.5, chat("gpt-4o", 1200, 80)),
            span(trace, first + 2, first, "execute_tool lookup", 220, 260, tool("lookup", "call_1"),
                 error="lookup: timed out"),
            span(trace, first + 3, first, "invoke_agent researcher", 300, 900, agent("researcher")),
            span(trace, first + 4, first + 3, "chat gpt-4o-mini", 310, 500, chat("gpt-4o-mini", 3_390_980, 7))]


@pytest.fixture()
def traces(tmp_path):
    return str(write(tmp_path / "t.jsonl", _run(A) + _run(B, 10) + _run(C, 20)))


def _ok(args, **kw):
    res = CliRunner().invoke(cli, args, **kw)
    assert res.exit_code == 0, res.output
    return res.output


def test_the_tree_shows_each_span_with_its_role_times_tokens_cost_and_error(traces):
    out = _ok(["trace", C, traces], env={"COLUMNS": "200"})
    lines = out.splitlines()
    assert lines[0] == f"trace {C}: 5 spans"
    row = {re.sub(r"^[│├└─ ]+", "", line).split("  ")[0]: line for line in lines[2:]}
    assert row["invoke_agent planner"].startswith("invoke_agent planner")
    chat_row = row["chat gpt-4o"].split()
    assert row["chat gpt-4o"].startswith("├─ chat gpt-4o") and chat_row[3:7] == ["chat", "10.0", "200.5", "1,200/80"]
    assert float(chat_row[7]) > 0                                          # priced: gpt-4o has a list price
    assert row["execute_tool lookup"].startswith("├─ execute_tool lookup") and "lookup: timed out" in out
    assert row["invoke_agent researcher"].startswith("└─ invoke_agent researcher")
    assert row["chat gpt-4o-mini"].startswith("   └─ chat gpt-4o-mini") and "3,390,980/7" in out


def test_a_unique_prefix_names_the_trace_and_an_ambiguous_one_lists_its_matches(traces):
    whole = _ok(["trace", C, traces])
    assert _ok(["trace", "c3c3", traces]) == whole and _ok(["trace", "C3C3C3", traces]) == whole
    res = CliRunner().invoke(cli, ["trace", "a1", traces])
    assert res.exit_code == 2
    listed = res.stdout.splitlines()
    assert [line.split()[0] for line in listed] == sorted([A, B])
    assert all("5 spans" in line and "invoke_agent planner" in line for line in listed)
    assert res.stderr.count("\n") == 1 and "'a1' starts 2 trace ids" in res.stderr
    missing = CliRunner().invoke(cli, ["trace", "ffff", traces])
    assert missing.exit_code == 2 and "trace ffff is not in" in missing.output


def test_a_prefix_of_a_64_bit_id_skips_its_padding(tmp_path):
    src = str(write(tmp_path / "z.jsonl", _run("0" * 16 + "a1b2c3d4e5f60718")))
    assert matching_trace_ids("a1b2c3", ["0" * 16 + "a1b2c3d4e5f60718", C]) == ["0" * 16 + "a1b2c3d4e5f60718"]
    assert "invoke_agent planner" in _ok(["trace", "a1b2c3", src])


def test_json_is_the_tree_as_nested_objects(traces):
    doc = json.loads(_ok(["trace", "c3", traces, "--format", "json"]))
    assert doc["trace_id"] == C and doc["spans"] == 5 and len(doc["roots"]) == 1
    root = doc["roots"][0]
    assert root["name"] == "invoke_agent planner" and root["role"] == "agent" and root["parent_span_id"] is None
    assert [c["name"] for c in root["children"]] == ["chat gpt-4o", "execute_tool lookup", "invoke_agent researcher"]
    model, failed, sub = root["children"]
    assert (model["start_ms"], model["duration_ms"], model["input_tokens"], model["output_tokens"]) == \
        (10.0, 200.5, 1200, 80) and model["cost_usd"] > 0
    assert failed["status"] == "error" and failed["error"] == "lookup: timed out" and failed["children"] == []
    assert sub["children"][0]["input_tokens"] == 3_390_980 and sub["children"][0]["run_id"] == C


def test_roles_show_what_each_role_rests_on(traces):
    out = _ok(["trace", C, traces, "--roles"], env={"COLUMNS": "200"})
    head = out.splitlines()[1].split()
    assert head == ["span", "role", "dialect", "evidence", "call", "run"]
    rows = out.splitlines()[2:]
    assert all(C in line and "genai: gen_ai.operation.name=" in line for line in rows)
    # a model or tool call is its own logical call (trace id:span id of the span counted for it); an agent is none
    assert [f"{C}:" in line for line in rows] == [False, True, True, False, True]
    # the columns the analysis gives a span, whichever it carries: the evidence and the logical call too
    tree = pd.DataFrame({"parent": [-1, 0], "depth": [0, 1], "last": [True, True], "orphan": False, "cycle": False,
                         "name": ["invoke_agent a", "chat m"], "role": ["agent", "chat"], "_dialect": "genai",
                         "_role_evidence": ["gen_ai.operation.name=invoke_agent", "gen_ai.operation.name=chat"],
                         "_call": [None, "call-7"], "run_id": "r1"})
    view = trace_view(tree, C, roles=True)
    assert [c.name for c in view.columns] == ["span", "role", "dialect", "evidence", "call", "run"]
    assert view.cells[3] == ["gen_ai.operation.name=invoke_agent", "gen_ai.operation.name=chat"]
    assert view.cells[4] == ["", "call-7"]


def test_a_parent_chain_tens_of_thousands_deep_is_walked_without_recursion(tmp_path):
    n = 30_000
    spans = [span(C, 1, None, "invoke_agent deep", 0, n, agent("deep"))]
    spans += [span(C, i + 1, i, "chat m" if i % 2 else "execute_tool t", i * 0.001, n - i * 0.001,
                   chat("m", 10, 1) if i % 2 else tool("t")) for i in range(1, n)]
    src = str(write(tmp_path / "chain.jsonl", spans, per_line=5000))
    lines = _ok(["trace", C, src], env={"COLUMNS": "100"}).splitlines()
    assert lines[0] == f"trace {C}: {n:,} spans"
    assert lines[-1].startswith(f"[{n - 1:,}] ") and "└─ chat m" in lines[-1]
    assert all(len(line) <= 100 for line in lines)
    text = _ok(["trace", C, src, "--format", "json"])
    assert text.count('"children": [') == n and text.rstrip().endswith("]}" * n + "]}")
    # the nesting, read back without recursion: each span one level below the one before
    depth, depths = 0, []
    for m in re.finditer(r'\{"span_id"|\]\}', text):
        if m.group() == "]}":
            depth -= 1
        else:
            depths.append(depth)
            depth += 1
    assert depths == list(range(n)) and depth == -1


def test_cycles_and_missing_parents_are_shown_not_lost():
    """(The loader's checks drop a parent cycle; the tree still walks one given to it, cut at its smallest row.)"""
    spans = pd.DataFrame({
        "trace_id": [C] * 5, "span_id": ["1", "2", "3", "4", "5"], "parent_span_id": ["3", "1", "2", "9", "4"],
        "name": ["a", "b", "c", "orphan", "child"], "start_ns": pd.array([1, 2, 3, 4, 5], dtype="Int64"),
        "end_ns": pd.array([9, 9, 9, 9, 9], dtype="Int64"), "status_code": np.zeros(5, dtype=np.int8),
        "status_message": pd.array([None] * 5, dtype="string")})
    tree = trace_tree(spans)
    assert sorted(tree["name"]) == ["a", "b", "c", "child", "orphan"]
    assert tree.loc[tree["cycle"], "name"].tolist() == ["a"] and tree.loc[tree["orphan"], "name"].tolist() == ["orphan"]
    names = trace_view(tree, C).cells[0]
    assert "a (a parent cycle cut here)" in names and "orphan (parent not in the input)" in names
    assert tree.set_index("name").loc[["a", "b", "c", "child"], "depth"].tolist() == [0, 1, 2, 1]
