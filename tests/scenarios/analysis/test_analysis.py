"""Analysis (issue 5): signatures from simulate, the seed's cap table, Pydantic AI traces, labels, bad input."""
import json
import random

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from agentobs.analysis.assess.limits import BY_COLUMN, cutoff_table, percentiles, recommend
from agentobs.analysis.report.engine import analyze
from agentobs.analysis.report.summary import Options
from agentobs.cli.main import cli
from agentobs.domain.population import SIGNATURES, simulate, summary
from agentobs.errors import InputError
from agentobs.telemetry import configure


@pytest.fixture(scope="module")
def population(tmp_path_factory):
    """A simulated population exported to a traces file, with the simulation's own ground truth."""
    d = tmp_path_factory.mktemp("pop")
    path = d / "traces.jsonl"
    tel = configure(traces_out=path)
    records = simulate(1500, seed=11, observers=lambda: [tel.observer()])
    tel.shutdown()
    return path, records


def test_report_finds_every_injected_pattern_with_the_recorded_counts(population):
    path, records = population
    report = analyze([str(path)])
    truth = summary(records)["signatures"]
    found = {s.name: s.runs for s in report.signatures}
    assert found.pop("run_aborted") == 0     # no run of the population is aborted (see the crash test below)
    for name in ("provider_error", "tool_error_fatal", "tool_error_unrecovered", "tool_error_recovered", "turn_limit",
                 "budget_limit"):         # the taxonomy of other traces: never on the kernel's runs
        assert found.pop(name) == 0, name
    assert set(found) == set(SIGNATURES)
    assert found == truth
    assert all(v > 0 for v in truth.values())
    # and run by run, not only in total
    by_task = report.runs.set_index("task_id")["signatures"]
    for r in records:
        assert sorted(by_task[r.task_id]) == sorted(r.expected), (r.task_id, r.pattern)
    # the kernel's own counters reach the runs table through the traces
    runs = report.runs.set_index("task_id")
    for r in records[:300]:
        row = runs.loc[r.task_id]
        assert (row["steps"], row["tool_calls"], row["tokens"], row["stop_reason"]) == \
            (r.steps, r.tool_calls, r.tokens, r.stop)
        assert row["cost_usd"] == pytest.approx(r.cost_usd)


def _toy_runs():
    rng = random.Random(7)
    runs = []
    while len(runs) < 200:
        n = 2
        while rng.random() > 0.45:
            n += 1
        if n <= 20:
            runs.append(n)
    return runs


def test_seed_toy_distribution_cap_table():
    runs = _toy_runs()
    p = percentiles(runs)
    assert (p.values["p50"], p.values["p90"], p.values["p99"], p.values["max"]) == (2, 5, 8, 13)
    shares = cutoff_table(np.array(runs, float), np.array([4, 6, 8, 10, 12], float))
    assert [round(100 * s, 1) for s in shares] == [16.0, 3.5, 1.0, 0.5, 0.5]
    df = pd.DataFrame({"steps": pd.array(runs, dtype="Int64"), "success": pd.array([True] * 200, dtype="boolean")})
    rec = recommend(df, BY_COLUMN["steps"], target=0.01, margin=0.10)
    assert rec.base == 8 and rec.recommended == 9          # p99 = 8, plus a 10% margin
    assert {k: rec.cutoff[k] for k in ("4", "6", "8", "10", "12")} == {"4": 0.16, "6": 0.035, "8": 0.01,
                                                                        "10": 0.005, "12": 0.005}
    assert rec.warnings and "provisional" in rec.warnings[0]


def test_too_few_successful_runs_warns():
    df = pd.DataFrame({"steps": pd.array([3, 4, 5], dtype="Int64"), "success": pd.array([True] * 3, dtype="boolean")})
    rec = recommend(df, BY_COLUMN["steps"])
    assert "cannot be resolved" in rec.warnings[0]


def test_caps_json_carries_the_contract_fields(population):
    path, _ = population
    out = CliRunner().invoke(cli, ["caps", str(path), "--format", "json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    for dim in ("steps", "tool_calls", "tokens", "cost_usd", "active_s", "max_identical_calls", "longest_stall"):
        d = data["dimensions"][dim]
        for key in ("successful_runs", "p50", "p90", "p95", "p99", "max", "recommended", "cutoff"):
            assert key in d, (dim, key)
        assert all(0 <= v <= 1 for v in d["cutoff"].values())


def test_labels_file_overrides_and_reports_unmatched(population, tmp_path):
    path, records = population
    labels = tmp_path / "labels.csv"
    lines = ["run_id,success"] + [f"{r.task_id},{'false' if i % 2 else 'true'}" for i, r in enumerate(records[:100])]
    lines.append("no-such-run,true")
    labels.write_text("\n".join(lines) + "\n")
    report = analyze([str(path)], Options(labels=str(labels)))
    labelled = report.runs[report.runs["label_source"] == "labels_file"]
    assert len(labelled) == 100
    assert report.quality.count("unmatched_label") == 1
    assert report.quality.count("unlabelled_run") == len(records) - 100
    # JSON labels keyed by trace id work too
    j = tmp_path / "labels.json"
    j.write_text(json.dumps({records[0].trace_ids[0] if records[0].trace_ids else "x": False}))
    assert len(analyze([str(path)], Options(labels=str(j))).runs) == len(records)


def test_conflicting_labels_leave_the_run_unlabelled_and_hex_ids_match_in_any_case(tmp_path):
    """Two rows X,true and X,false gave whichever came last, silently; an upper-case trace id was unmatched."""
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]
    src = tmp_path / "runs.json"
    src.write_text(json.dumps([{"id": f"r{i}", "messages": msgs} for i in range(4)]))
    runs = analyze([str(src)]).runs.set_index("conversation_id")
    trace = runs["trace_id"].astype(str)
    labels = tmp_path / "labels.csv"
    labels.write_text("run_id,success\n"
                      "r0,true\nr0,false\n"                                       # a conflict: r0 unlabelled
                      f"{trace['r1'].upper()},true\n{trace['r1']},yes\n"           # the same label twice: fine
                      f"{trace['r2'].upper()}:{'A' * 16},false\n"                 # no such run (unmatched)
                      "R3,false\n")                                               # not a hex id: case kept
    report = analyze([str(src)], Options(labels=str(labels)))
    got = report.runs.set_index("conversation_id")["success"]
    assert pd.isna(got["r0"]) and got["r1"] == True and pd.isna(got["r2"]) and pd.isna(got["r3"])  # noqa: E712
    q = report.quality
    assert q.count("conflicting_label") == 1 and q.count("unmatched_label") == 2 and q.count("unlabelled_run") == 3
    issue = next(i for i in q.issues if i.kind == "conflicting_label")
    assert issue.examples == ["r0: labelled both true and false (left unlabelled)"]
    # a JSON object with the key twice is the same conflict (json.loads kept the last value)
    j = tmp_path / "labels.json"
    j.write_text('{"r0": true, "r0": false, "r1": true}')
    report = analyze([str(src)], Options(labels=str(j)))
    assert report.quality.count("conflicting_label") == 1 and pd.isna(report.runs.set_index("conversation_id")
                                                                       ["success"]["r0"])
    # only conflicts: nothing usable, said in one line naming the run
    j.write_text('[{"run_id": "r0", "success": true}, {"run_id": "r0", "success": false}]')
    with pytest.raises(InputError, match=r"no usable run_id,success pair [(]r0 is labelled both true and false[)]"):
        analyze([str(src)], Options(labels=str(j)))



def test_labels_csv_blank_rows_are_skipped_and_problem_lines_are_the_files_lines(tmp_path):
    """A spreadsheet's trailing blank rows were counted as bad rows; without a header every problem was named one
    line too far down; a row with no run id labelled a run called ''."""
    from agentobs.analysis.assess.labels import read_labels
    with_header = tmp_path / "a.csv"
    with_header.write_text("run_id,success\r\nr0,true\r\n\r\n ,false\r\nr1,maybe\r\n,\r\n  \r\n")
    labels, problems, conflicts = read_labels(with_header)
    assert labels == {"r0": True} and conflicts == []
    assert problems == ["line 4: no run_id", "line 5: success='maybe'"]
    no_header = tmp_path / "b.csv"
    no_header.write_text("r0,true\nr1\nr2,false\n\n\n")
    labels, problems, _ = read_labels(no_header)
    assert labels == {"r0": True, "r2": False} and problems == ["line 2: r1"]
    as_json = tmp_path / "c.json"
    as_json.write_text('[{"run_id": "", "success": true}, {"run_id": "r0", "success": true}]')
    labels, problems, _ = read_labels(as_json)
    assert labels == {"r0": True} and problems == ["'': True"]

def test_report_outputs(population, tmp_path):
    path, _ = population
    runner = CliRunner()
    res = runner.invoke(cli, ["report", str(path), "--format", "json", "--out", str(tmp_path / "r.json")])
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["schema_version"] == 1 and data["options"]["percentile_method"] == "inverted_cdf"
    any_trace = {"provider_error", "tool_error_fatal", "tool_error_unrecovered", "tool_error_recovered", "turn_limit",
                 "budget_limit"}
    assert {s["name"] for s in data["signatures"]} == set(SIGNATURES) | {"run_aborted"} | any_trace
    # the kernel's runs are read by the seeds' taxonomy only: no signature of other traces fires on them
    assert all(s["runs"] == 0 for s in data["signatures"] if s["name"] in any_trace)
    res = runner.invoke(cli, ["runs", str(path), "--out", str(tmp_path / "runs.csv")])
    assert res.exit_code == 0, res.output
    df = pd.read_csv(tmp_path / "runs.csv")
    assert len(df) == 1500 and "max_identical_since_progress" in df.columns
    res = runner.invoke(cli, ["report", str(path)])
    assert res.exit_code == 0 and "Failure signatures" in res.output and "Recommended caps" in res.output


def test_trace_command_prints_the_seed_trace_as_a_tree(tmp_path):
    from agentobs.analysis.explorer.trace_tree import find_trace, trace_tree
    from agentobs.analysis.report.view import trace_view
    from agentobs.domain.scenarios import SEED000
    path = tmp_path / "a.jsonl"
    tel = configure(traces_out=path)
    obs = tel.observer()
    SEED000["A normal run"]([obs])
    tel.shutdown()
    tid = obs.trace_context().split("-")[1]
    res = CliRunner().invoke(cli, ["trace", tid, str(path)])
    assert res.exit_code == 0, res.output
    found = find_trace(tid, [str(path)])
    view = trace_view(trace_tree(found.spans(tid)), tid)
    rows = list(zip(*view.cells, strict=True))
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [
        ("invoke_agent support-agent", "agent", "0", "10,000.0"), ("agentobs.step", "step", "0", "1,500.0"),
        ("chat support-policy", "chat", "0", "1,500.0"), ("agentobs.step", "step", "1,500.0", "1,900.0"),
        ("chat support-policy", "chat", "1,500.0", "1,500.0"), ("execute_tool get_order", "tool", "3,000.0", "400.0"),
        ("agentobs.step", "step", "3,400.0", "2,700.0"), ("chat support-policy", "chat", "3,400.0", "1,500.0"),
        ("execute_tool issue_refund", "tool", "4,900.0", "1,200.0"), ("agentobs.step", "step", "6,100.0", "2,400.0"),
        ("chat support-policy", "chat", "6,100.0", "1,500.0"),
        ("execute_tool send_status_email", "tool", "7,600.0", "900.0"), ("agentobs.step", "step", "8,500.0", "1,500.0"),
        ("chat support-policy", "chat", "8,500.0", "1,500.0")]
    assert rows[2][4] == "40/52" and rows[0][7] == "stop=done"
    assert view.depth.tolist() == [0, 1, 2, 1, 2, 2, 1, 2, 2, 1, 2, 2, 1, 2]
    # the tree's lines, and every name, role and figure of the table on the terminal
    lines = res.output.splitlines()
    assert lines[0] == f"trace {tid}: 14 spans"
    assert any(line.startswith("├─ agentobs.step") for line in lines)
    assert any(line.startswith("│  └─ execute_tool get_order") for line in lines)
    assert any(line.startswith("└─ agentobs.step") for line in lines)
    assert any(line.startswith("   └─ chat support-policy") for line in lines)


def test_user_errors_are_one_line(tmp_path):
    runner = CliRunner()
    for args in (["report", str(tmp_path / "missing.jsonl")], ["report"], ["caps", "nope/*.jsonl"],
                 ["report", str(tmp_path), "--success-attr", "novalue"], ["trace", "abc", str(tmp_path)]):
        res = runner.invoke(cli, args)
        assert res.exit_code == 2, (args, res.output)
        assert "Traceback" not in res.output and res.output.count("\n") == 1, res.output


def test_usage_errors_are_one_line_that_says_where_to_look(tmp_path):
    """click's usage errors took three lines (Usage, Try, Error); one now, naming the command's --help."""
    runner = CliRunner()
    for args, says in ((["report", str(tmp_path), "--out", str(tmp_path)], "Invalid value for '--out'"),
                       (["trace"], "Missing argument 'TRACE_ID'"), (["nope"], "No such command 'nope'"),
                       (["report", "--bogus"], "No such option '--bogus'")):
        res = runner.invoke(cli, args)
        assert res.exit_code == 2, (args, res.output)
        assert res.output.count("\n") == 1 and res.output.startswith(f"agentobs: error: {says}"), res.output
        assert res.output.rstrip().endswith("--help)"), res.output


def test_a_bug_is_one_line_too_and_its_traceback_is_there_on_request(tmp_path, monkeypatch):
    """An exception nobody expected (a bug) ends in one line that says it is one, exit status 3; with
    AGENTOBS_DEBUG=1 it propagates with its traceback."""
    import agentobs.analysis.report.engine as report

    def broken(*args, **kwargs):
        raise TypeError("'int' object is not iterable\nsecond line")

    monkeypatch.setattr(report, "analyze", broken)
    path = tmp_path / "t.jsonl"
    path.write_text("")
    res = CliRunner().invoke(cli, ["report", str(path)])
    assert res.exit_code == 3, res.output
    assert res.output.startswith("agentobs: internal error: TypeError: 'int' object is not iterable (a bug")
    assert res.output.count("\n") == 1 and "Traceback" not in res.output
    monkeypatch.setenv("AGENTOBS_DEBUG", "1")
    res = CliRunner().invoke(cli, ["report", str(path)])
    assert isinstance(res.exception, TypeError)


def test_an_aborted_segment_is_unlabelled_when_recovered_and_failed_when_not(tmp_path):
    """crash_resume: the crashed segment (aborted by SimulatedCrash) and its recovery; then a crash alone."""
    from agentobs.domain import policies
    from agentobs.domain.scenarios import SEED004, go
    from agentobs.errors import SimulatedCrash
    from agentobs.kernel.faults import CrashAt

    path = tmp_path / "traces.jsonl"
    tel = configure(traces_out=path)
    SEED004["crash_resume"]([tel.observer()], None)
    with pytest.raises(SimulatedCrash):
        go(policies.SupportPolicy(), task_id="t-lost", observers=[tel.observer(), CrashAt(boundary="before_tool")])
    tel.shutdown()
    runs = analyze([str(path)]).runs.set_index(["task_id", "status"])
    crashed, recovered, lost = runs.loc[("t1", "aborted")], runs.loc[("t1", "stopped")], runs.loc[("t-lost", "aborted")]
    assert crashed["source_kind"] == "agentobs" and pd.isna(crashed["success"])
    assert crashed["signature"] == "run_aborted" and pd.isna(crashed["stop_reason"])
    assert recovered["success"] == True and recovered["stop_reason"] == "done"  # noqa: E712
    assert lost["success"] == False and lost["signature"] == "run_aborted"  # noqa: E712


def test_a_cap_near_the_largest_double_is_that_value_not_an_overflow():
    """A run whose cost is close to the largest double (1.7e308 dollars, found by fuzzing) made the margin overflow
    to infinity and the report raise OverflowError; the cap is now the value itself, with a warning."""
    dim = BY_COLUMN["cost_usd"]
    runs = pd.DataFrame({"success": [True, True], "cost_usd": [1.7e308, 1.7e308]})
    rec = recommend(runs, dim, target=0.5)
    assert float(rec.recommended) == 1.7e308
    assert any("too large to add the margin" in w for w in rec.warnings)


def test_a_model_call_without_a_tool_call_is_a_stall_as_the_guards_count_it(tmp_path):
    """Foreign traces: a model call that called no tool (an output-validation retry, say) counted as progress, so a
    run of tool, retry, tool, answer had longest_stall 0 and `caps --emit budget` wrote max_stalls=1, under which
    the guards stop every such run at the retry (found by fuzzing: 200 of 200). The guards' rule is now the
    analysis' rule; the run's last call (its answer) is never a stall."""
    from agentobs.analysis.derive.runs import derive_runs
    from agentobs.analysis.otlp.load import load_file
    t0 = 1_767_225_600_000_000_000

    def span(sid, parent, name, t, attrs):
        return {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": sid, "parentSpanId": parent, "name": name,
                "kind": 1, "startTimeUnixNano": str(t0 + t * 10**9), "endTimeUnixNano": str(t0 + (t + 1) * 10**9),
                "attributes": [{"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else
                                {"stringValue": v}} for k, v in attrs.items()]}
    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 300,
            "gen_ai.usage.output_tokens": 30}
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}
    root = "b7ad6b7169203331"
    spans = [span(root, "", "invoke_agent a", 0, {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}),
             span("0000000000000001", root, "chat gpt-4o", 0, chat),
             span("0000000000000002", root, "execute_tool lookup", 1, {**tool, "gen_ai.tool.call.arguments": "1"}),
             span("0000000000000003", root, "chat gpt-4o", 2, chat),          # no tool: a retry
             span("0000000000000004", root, "chat gpt-4o", 3, chat),
             span("0000000000000005", root, "execute_tool lookup", 4, {**tool, "gen_ai.tool.call.arguments": "2"}),
             span("0000000000000006", root, "chat gpt-4o", 5, chat)]          # the answer
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps({"resourceSpans": [{"resource": {"attributes": []},
                                                "scopeSpans": [{"spans": spans}]}]}) + "\n")
    runs, _, _ = derive_runs(load_file(p))
    assert list(runs["longest_stall"]) == [1]
