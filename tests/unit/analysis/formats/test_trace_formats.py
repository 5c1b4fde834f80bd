"""Trace files in other formats than OTLP JSON (``agentobs.analysis.formats``) give the analysis the runs their OTLP
JSON gives: the OpenTelemetry Python SDK's ConsoleSpanExporter output (made here by the real exporter), and Jaeger's
own JSON (saved from a real Jaeger 2.13: ``tests/data/jaeger_ui/``; the stack test
``test_agentobs_report_reads_jaeger_json_saved_from_the_ui_as_the_runs_themselves`` checks it against the live
Jaeger)."""
import gzip
import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from locations import TESTS
from opentelemetry.sdk.trace.export import ConsoleSpanExporter

from agentobs.analysis.derive.runs import derive_runs
from agentobs.analysis.formats import reader_of
from agentobs.analysis.load.sources import load_sources
from agentobs.analysis.otlp.load import load_file
from agentobs.cli.main import cli
from agentobs.domain.scenarios import SEED000, SEED004, approve_and_resume
from agentobs.telemetry import configure

JAEGER = TESTS / "data" / "jaeger_ui"
CONSOLE = "OpenTelemetry Python ConsoleSpanExporter"
RUN_COLUMNS = ["trace_id", "stop_reason", "status", "steps", "model_calls", "tool_calls", "input_tokens",
               "output_tokens", "tokens", "cost_usd", "signature"]
SPAN_COLUMNS = ["trace_id", "span_id", "parent_span_id", "name", "kind", "status_code", "status_message",
                "service_name"]


def _scenarios(tmp_path: Path, formatter=None) -> tuple[Path, Path]:
    """Every seed scenario, its spans written at once by our OTLP JSON file exporter and the SDK's console
    exporter (``formatter``: the console exporter's, default its indented JSON)."""
    otlp, console = tmp_path / "traces.jsonl", tmp_path / "console.json"
    with open(console, "w") as out:
        exporter = ConsoleSpanExporter(out=out, **({"formatter": formatter} if formatter else {}))
        tel = configure(traces_out=otlp, extra_exporters=[("console", exporter)])
        for suite in (SEED000, SEED004):
            for run in suite.values():
                run([tel.observer()])
        approve_and_resume([tel.observer()], twice=True)
        tel.shutdown()
    return otlp, console


def _frame(df: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    return df[columns].sort_values(columns[:2]).reset_index(drop=True)


def _same_runs(got, want) -> None:
    g, w = derive_runs(got)[0], derive_runs(want)[0]
    assert len(g) == len(w) > 0
    pd.testing.assert_frame_equal(_frame(g, RUN_COLUMNS), _frame(w, RUN_COLUMNS), check_dtype=False)


@pytest.mark.parametrize("layout", ["indented (the default)", "one per line", "gzip"])
def test_console_exporter_output_gives_the_spans_and_runs_of_the_otlp_file(tmp_path, layout):
    otlp, console = _scenarios(tmp_path, (lambda s: s.to_json(indent=None) + "\n") if layout == "one per line"
                               else None)
    if layout == "gzip":
        packed = tmp_path / "console.json.gz"
        packed.write_bytes(gzip.compress(console.read_bytes()))
        console = packed
    assert reader_of(console).name == CONSOLE
    got, want = load_sources([str(console)]), load_file(otlp)
    assert not got.quality.issues, got.quality.to_dict()
    pd.testing.assert_frame_equal(_frame(got.spans, SPAN_COLUMNS), _frame(want.spans, SPAN_COLUMNS),
                                  check_dtype=False)
    g, w = _frame(got.spans, ["trace_id", "span_id", "start_ns", "end_ns"]), _frame(want.spans, ["trace_id", "span_id",
                                                                                            "start_ns", "end_ns"])
    for col in ("start_ns", "end_ns"):         # the console writes microseconds (rounded through a float)
        assert ((g[col] - w[col]).abs() <= 1000).all(), col
    attrs = sorted(c for c in want.spans.columns if "." in c and c != "service_name")
    assert set(attrs) <= set(got.spans.columns)
    pd.testing.assert_frame_equal(_frame(got.spans, ["trace_id", "span_id", *attrs]),
                                  _frame(want.spans, ["trace_id", "span_id", *attrs]), check_dtype=False)
    assert len(got.events) == len(want.events) > 0 and len(got.links) == len(want.links) > 0
    _same_runs(got, want)
    assert got.spellings == {str(console): {CONSOLE: 1}}


def test_other_output_between_console_spans_costs_only_its_lines(tmp_path):
    otlp, console = _scenarios(tmp_path)
    text = console.read_text()
    cut = text.index("\n}\n", len(text) // 2) + 3                          # after a span in the middle
    console.write_text(text[:cut] + "INFO: refund issued for [bold]ord_1001[/bold]\n" + text[cut:])
    got = load_sources([str(console)])
    assert got.quality.count("invalid_json") == 1
    assert len(got.spans) == len(load_file(otlp).spans)
    _same_runs(got, load_file(otlp))


def test_a_console_file_cut_short_keeps_the_spans_before_the_cut(tmp_path):
    otlp, console = _scenarios(tmp_path)
    text = console.read_text()
    console.write_text(text[: len(text) // 2])
    got = load_sources([str(console)])
    assert 0 < len(got.spans) < len(load_file(otlp).spans)
    assert got.quality.count("invalid_json") == 1


def test_jaeger_ui_download_and_trace_json_give_the_runs_jaeger_held():
    """Saved from a real Jaeger 2.13 that received one agent run (invoke_agent > chat, execute_tool, chat; 250 input
    and 50 output tokens) over OTLP: the UI's "Download Results" and its "Trace JSON" (``/api/traces/{id}``)."""
    for name in ("download_results.json", "trace_json.json"):
        p = JAEGER / name
        assert reader_of(p).name == "Jaeger JSON (UI download, API before v3)"
        ss = load_sources([str(p)])
        assert not ss.quality.issues, ss.quality.to_dict()
        runs = derive_runs(ss)[0]
        assert len(runs) == 1
        run = runs.iloc[0]
        assert (run["steps"], run["model_calls"], run["tool_calls"]) == (2, 2, 1)
        assert (run["input_tokens"], run["output_tokens"]) == (250, 50)
        assert run["service"] == "explb-agent"
        assert set(ss.spans["kind"]) == {1, 3}                 # INTERNAL agent and tool, CLIENT chats
        assert ss.spans["parent_span_id"].notna().sum() == 3


def test_jaeger_json_reads_a_single_trace_and_a_list_of_traces(tmp_path):
    doc = json.loads((JAEGER / "download_results.json").read_text())
    want = load_sources([str(JAEGER / "download_results.json")])
    for _shape, value in (("one trace", doc["data"][0]), ("a list", doc["data"])):
        p = tmp_path / "t.json"
        p.write_text(json.dumps(value))
        got = load_sources([str(p)])
        pd.testing.assert_frame_equal(_frame(got.spans, SPAN_COLUMNS), _frame(want.spans, SPAN_COLUMNS))


def test_jaeger_json_keeps_status_links_events_and_64_bit_ids(tmp_path):
    doc = json.loads((JAEGER / "download_results.json").read_text())
    trace = doc["data"][0]
    span = trace["spans"][0]
    span["tags"] += [{"key": "otel.status_code", "type": "string", "value": "ERROR"},
                     {"key": "otel.status_description", "type": "string", "value": "upstream timeout"}]
    span["references"].append({"refType": "FOLLOWS_FROM", "traceID": "abc", "spanID": "1f"})
    span["logs"] = [{"timestamp": span["startTime"] + 5, "fields": [
        {"key": "event", "type": "string", "value": "retry"}, {"key": "attempt", "type": "int64", "value": 2}]}]
    p = tmp_path / "t.json"
    p.write_text(json.dumps(doc))
    ss = load_sources([str(p)])
    row = ss.spans.set_index("span_id").loc[span["spanID"].rjust(16, "0")]
    assert (row["status_code"], row["status_message"]) == (2, "upstream timeout")
    assert ss.links[["linked_trace_id", "linked_span_id"]].values.tolist() == [["0" * 29 + "abc", "0" * 14 + "1f"]]
    ev = ss.events[ss.events["span_id"] == span["spanID"].rjust(16, "0")]
    assert ev["name"].tolist() == ["retry"] and ev["time_ns"].tolist() == [(span["startTime"] + 5) * 1000]


def test_agentobs_report_says_it_converted_the_file(tmp_path):
    r = CliRunner().invoke(cli, ["report", str(JAEGER / "download_results.json")])
    assert r.exit_code == 0, r.output
    assert "converted from Jaeger JSON (UI download, API before v3)" in r.output


def test_a_broken_jaeger_file_is_an_error_that_says_what_it_is(tmp_path):
    p = tmp_path / "traces-1.json"
    p.write_text((JAEGER / "download_results.json").read_text()[:300])
    r = CliRunner().invoke(cli, ["report", str(p)])
    assert r.exit_code == 2
    assert r.output.startswith(f"agentobs: error: no usable run in {p}: 1 x invalid_json")
    assert "Traceback" not in r.output


def _nested(depth: int) -> object:
    value: object = "x"
    for _ in range(depth):
        value = {"a": value}
    return value


def test_a_console_span_nested_too_deeply_costs_only_itself(tmp_path):
    """A value nested close to Python's recursion limit (the json module reads it) raised RecursionError from the
    conversion to OTLP: a traceback instead of a report."""
    otlp, console = _scenarios(tmp_path)
    first = json.loads(console.read_text().split("\n}\n", 1)[0] + "\n}")
    first["attributes"] = {"deep": _nested(900)}
    console.write_text(console.read_text() + json.dumps(first, indent=4) + "\n")
    r = CliRunner().invoke(cli, ["report", str(console)])
    assert r.exit_code == 0, r.output
    assert "Traceback" not in r.output
    got = load_sources([str(console)])
    assert got.quality.count("bad_span") == 1
    assert len(got.spans) == len(load_file(otlp).spans)


def test_jaeger_entries_that_are_not_spans_are_counted(tmp_path):
    doc = json.loads((JAEGER / "download_results.json").read_text())
    trace = doc["data"][0]
    n = len(trace["spans"])
    trace["spans"] += [None, "a span?"]
    p = tmp_path / "t.json"
    p.write_text(json.dumps(doc))
    ss = load_sources([str(p)])
    assert ss.quality.count("bad_span") == 2                 # silently left out before
    assert len(ss.spans) == n


@pytest.mark.parametrize("where, field, value", [("span", "tags", 1), ("span", "logs", 7), ("span", "references", "x"),
                                                 ("log", "fields", 7), ("process", "tags", {"k": "v"})])
def test_a_jaeger_list_field_that_is_not_a_list_is_counted_and_the_span_kept(tmp_path, where, field, value):
    """A span's tags, logs or references, a log's fields or a process's tags that are not a list raised TypeError out
    of the report (found by fuzzing); now each is read as empty and counted as bad_value, its span kept."""
    doc = json.loads((JAEGER / "download_results.json").read_text())
    trace = doc["data"][0]
    span = trace["spans"][0]
    if where == "span":
        span[field] = value
    elif where == "log":
        span["logs"] = [{"timestamp": span["startTime"] + 5, "fields": value}]
    else:
        trace["processes"][span["processID"]][field] = value
    p = tmp_path / "t.json"
    p.write_text(json.dumps(doc))
    want = load_sources([str(JAEGER / "download_results.json")])
    ss = load_sources([str(p)])
    assert len(ss.spans) == len(want.spans)
    assert ss.quality.count("bad_value") == 1
    r = CliRunner().invoke(cli, ["report", str(p)])
    assert r.exit_code == 0 and "Traceback" not in r.output, r.output


def test_other_output_before_the_first_console_span_costs_only_its_lines(tmp_path):
    """A banner before the first span (the program wrote to stdout before the exporter did) made the file unknown:
    read as OTLP JSON lines, every line of it was invalid and the report had no run (found by fuzzing)."""
    otlp, console = _scenarios(tmp_path)
    console.write_text("Starting agent server on port 8000 {pid: 12}\n" + console.read_text())
    assert reader_of(console).name == CONSOLE
    got = load_sources([str(console)])
    assert got.quality.count("invalid_json") == 1
    _same_runs(got, load_file(otlp))


def _console_spans(console: Path) -> list[dict]:
    return [json.loads("{" + part + "}") for part in console.read_text().strip()[1:-1].split("\n}\n{")]


@pytest.mark.parametrize("field, value, where", [
    ("events", 5, "span"), ("links", 5, "span"), ("name", 7, "span"), ("kind", {"a": 1}, "span"),
    ("parent_id", 5, "span"), ("status_code", ["x"], "status"), ("description", {"a": 1}, "status"),
    ("start_time", "0001-01-01T00:00:00+05:00", "span"), ("end_time", "9999-12-31T23:59:59-05:00", "span")])
def test_a_console_span_with_a_value_of_the_wrong_shape_costs_only_that_value_or_span(tmp_path, field, value, where):
    """A span's events or links that are not a list raised TypeError out of the report, a time moved past the
    calendar by its zone OverflowError; a kind, status or parent id of the wrong type was read as unspecified
    without a word (found by fuzzing). Each now costs a counted value (a time: its span)."""
    otlp, console = _scenarios(tmp_path)
    spans = _console_spans(console)
    target = next(s for s in spans if s.get("parent_id") and s.get("events"))
    (target["status"] if where == "status" else target)[field] = value
    console.write_text("".join(json.dumps(s, indent=4) + "\n" for s in spans))
    got, want = load_sources([str(console)]), load_file(otlp)
    assert got.quality.count("bad_value") == 1, got.quality.to_dict()
    assert len(got.spans) == len(want.spans) - (1 if field.endswith("_time") else 0)
    r = CliRunner().invoke(cli, ["report", str(console)])
    assert r.exit_code == 0 and "Traceback" not in r.output, r.output


def test_console_times_past_nanoseconds_are_cut_and_an_unusable_one_is_named(tmp_path):
    """A time with more than nine fraction digits dropped its span, and the example said '' instead of the time
    (found by fuzzing)."""
    otlp, console = _scenarios(tmp_path)
    spans = _console_spans(console)
    spans[0]["start_time"] = spans[0]["start_time"].rstrip("Z") + "123456Z"       # 12 fraction digits
    spans[1]["end_time"] = "yesterday"
    console.write_text("".join(json.dumps(s, indent=4) + "\n" for s in spans))
    got = load_sources([str(console)])
    assert len(got.spans) == len(load_file(otlp).spans) - 1
    assert got.quality.count("bad_value") == 1 and "'yesterday'" in str(got.quality.to_dict())
