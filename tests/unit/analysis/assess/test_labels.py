"""Labels the way users keep them (issue 41): by run id, by trace id and root span id in two columns, by
conversation or session id; and the one-line warning when a key matches nothing."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from synthetic import Flavor, http_server, otlp_lines

from agentobs.analysis import analyze
from agentobs.analysis.report.summary import Options
from agentobs.cli.main import cli

GENAI = Flavor("genai")


@pytest.fixture
def two_runs_in_one_trace(tmp_path):
    a, b = GENAI.agent("a").add(GENAI.chat("m", (1, 1))), GENAI.agent("b").add(GENAI.chat("m", (2, 2)))
    solo = GENAI.agent("c", **{"gen_ai.conversation.id": "conv-7"}).add(GENAI.chat("m", (3, 3)))
    path = tmp_path / "t.jsonl"
    path.write_text(otlp_lines([http_server().add(a, b), solo]))
    runs = analyze([str(path)]).runs.sort_values("start").reset_index(drop=True)
    return path, runs


def _labelled(path, labels_path):
    return analyze([str(path)], Options(labels=str(labels_path))).runs.set_index("root_span_id")


def test_trace_id_and_root_span_id_in_two_columns_label_each_run_of_a_trace(tmp_path, two_runs_in_one_trace):
    path, runs = two_runs_in_one_trace
    rows = ["trace_id,root_span_id,success"] + [f"{r.trace_id.upper()},{r.root_span_id},{i % 2 == 0}"
                                                 for i, r in enumerate(runs.itertuples())]
    labels = tmp_path / "l.csv"
    labels.write_text("\n".join(rows) + "\n")
    got = _labelled(path, labels)
    for i, r in enumerate(runs.itertuples()):
        assert got.loc[r.root_span_id, "success"] == (i % 2 == 0)
        assert got.loc[r.root_span_id, "label_source"] == "labels_file"


def test_json_objects_with_trace_and_span_ids_and_conversation_ids(tmp_path, two_runs_in_one_trace):
    path, runs = two_runs_in_one_trace
    first = runs.iloc[0]
    labels = tmp_path / "l.json"
    labels.write_text(json.dumps([{"trace_id": first.trace_id, "span_id": first.root_span_id, "success": False},
                                  {"conversation_id": "conv-7", "success": True}]))
    got = _labelled(path, labels)
    assert not got.loc[first.root_span_id, "success"]
    assert got.loc[runs.iloc[2].root_span_id, "success"] and runs.iloc[2].conversation_id == "conv-7"
    assert got["success"].isna().sum() == 1


def test_a_session_id_column_labels_a_session_run(tmp_path):
    traces = []
    for conv in ("s-1", "s-2"):
        chat = GENAI.chat("m", (5, 1))
        chat.attrs["session.id"] = conv
        traces.append(http_server().add(chat))
    path = tmp_path / "t.jsonl"
    path.write_text(otlp_lines(traces))
    labels = tmp_path / "l.csv"
    labels.write_text("session_id,success\ns-1,true\ns-2,no\n")
    got = analyze([str(path)], Options(labels=str(labels))).runs.set_index("run_id")
    assert got.loc["s-1", "success"] and not got.loc["s-2", "success"]


def test_a_key_that_matches_nothing_is_one_warning_line(tmp_path, two_runs_in_one_trace):
    path, runs = two_runs_in_one_trace
    labels = tmp_path / "l.csv"
    labels.write_text(f"trace_id,root_span_id,success\n{runs.iloc[0].trace_id},{'0' * 15}1,true\n")
    res = CliRunner().invoke(cli, ["runs", str(path), "--labels", str(labels), "--out", str(tmp_path / "r.csv")])
    warnings = [line for line in res.stderr.splitlines() if "warning" in line]
    assert res.exit_code == 0, res.output
    assert len(warnings) == 1 and "matches no run" in warnings[0] and f"{runs.iloc[0].trace_id}:" in warnings[0]
