"""Values that send a line to the careful path (``otlp._sanitize``) cost only themselves, as on the fast path: text
that only looks like an integer ("--5", superscript or other non-ASCII digits), a double beyond a double's range,
thousands of digits (past Python's limit on int()), an event without a name (found by fuzzing the loader: each of
these raised out of the load)."""
from __future__ import annotations

import json

import pandas as pd
import pytest
from locations import TESTS

from agentobs.analysis.load.sources import load_sources
from agentobs.analysis.otlp.load import load_file
from agentobs.analysis.report.engine import analyze

SPAN = {"traceId": "424e564a3293b4d02f67adf455360bbb", "spanId": "5953a0458922013c", "name": "invoke_agent a",
        "startTimeUnixNano": "1796053745167367420", "endTimeUnixNano": "1796053745196794426"}
# a value of another shape than the rest of the line's: the fast parser refuses the line, the careful path reads it
FORCE = {"key": "force", "value": "x"}


def _write(tmp_path, span: dict) -> str:
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}) + "\n")
    return str(p)


@pytest.mark.parametrize("value", [{"intValue": "--5"}, {"intValue": "²"}, {"intValue": "٣"}, {"intValue": "5-"},
                                   {"intValue": "7" * 5000}, {"intValue": "0" * 30 + "5"},
                                   {"doubleValue": 10 ** 400}, {"doubleValue": -(10 ** 400)}])
def test_a_value_that_is_no_number_costs_only_itself(tmp_path, value):
    ss = load_file(_write(tmp_path, {**SPAN, "attributes": [FORCE, {"key": "n", "value": value}]}))
    assert len(ss.spans) == 1
    assert ss.quality.count("careful_path") == 1 and ss.quality.count("bad_value") >= 1
    assert "n" not in ss.spans.columns or ss.spans["n"].isna().all()


@pytest.mark.parametrize("kind", ["²", "٣", "--1", "3" * 5000])
def test_a_span_kind_of_other_digits_is_unspecified_and_counted(tmp_path, kind):
    ss = load_file(_write(tmp_path, {**SPAN, "kind": kind, "attributes": [FORCE]}))
    assert len(ss.spans) == 1 and int(ss.spans["kind"].iloc[0]) == 0
    assert ss.quality.count("bad_value") == 1


@pytest.mark.parametrize("careful", [False, True])
def test_an_event_without_a_name_is_unnamed_and_the_report_is_made(tmp_path, careful):
    span = {**SPAN, "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
                                   *([FORCE] if careful else [])],
            "events": [{"timeUnixNano": "1796053745167367421"}, {"timeUnixNano": "1796053745167367422",
                                                                 "name": None}]}
    path = _write(tmp_path, span)
    ss = load_file(path)
    assert ss.events["name"].tolist() == ["", ""]
    assert ss.quality.count("careful_path") == (1 if careful else 0)
    assert len(analyze([path]).runs) == 1


def test_a_time_of_thousands_of_digits_costs_only_its_span(tmp_path):
    good = {**SPAN, "spanId": "5953a0458922013d", "attributes": [FORCE]}
    bad = {**SPAN, "startTimeUnixNano": "9" * 5000, "attributes": [FORCE]}
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [good, bad]}]}]}) + "\n")
    ss = load_file(str(p))
    assert ss.spans["span_id"].tolist() == ["5953a0458922013d"]


@pytest.mark.parametrize("text", [
    '{"runs":[{"messages":[{"role":"user","content":"hi"}],"cost":1' + "0" * 309 + '}]}',
])
def test_a_transcript_cost_beyond_a_double_is_no_number_and_the_report_is_made(tmp_path, text):
    p = tmp_path / "t.json"
    p.write_text(text)
    assert len(analyze([str(p)]).runs) == 1


@pytest.mark.parametrize("careful", [False, True])
@pytest.mark.parametrize("time, kept, counted", [(None, None, 0), ("0", 0, 0), ("-5", None, 1), ("abc", None, 1),
                                                 ("1.5", None, 1), ("9" * 20, None, 1), (1.5, None, 1)])
def test_an_event_with_no_usable_time_is_kept_without_one_on_both_paths(tmp_path, careful, time, kept, counted):
    """An event whose time is missing, before 1970 or no integer keeps its name with no time, on the fast path and
    on the careful path alike, and an unusable time is counted (the careful path used to drop such events
    without a word)."""
    event = {"name": "e"} if time is None else {"name": "e", "timeUnixNano": time}
    span = {**SPAN, "attributes": [FORCE] if careful else [],
            "events": [event, {"name": "ok", "timeUnixNano": "1796053745167367421"}]}
    ss = load_file(_write(tmp_path, span))
    times = ss.events["time_ns"].astype(object).where(ss.events["time_ns"].notna(), None)
    got = [(n, None if t is None or t != t else int(t)) for n, t in zip(ss.events["name"], times, strict=True)]
    assert got == [("e", kept), ("ok", 1796053745167367421)]
    assert ss.quality.count("bad_value") == counted
    assert len(ss.spans) == 1


def test_an_event_that_is_not_an_object_is_counted(tmp_path):
    ss = load_file(_write(tmp_path, {**SPAN, "attributes": [FORCE],
                                     "events": ["oops", {"name": "ok", "timeUnixNano": "1796053745167367421"}]}))
    assert ss.events["name"].tolist() == ["ok"]
    assert ss.quality.count("bad_value") == 1 and len(ss.spans) == 1


_RUN = '{"id": "%s", "model": "%s", "success": true, "messages": [{"role": "user", "content": "hi"}, ' \
       '{"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": ' \
       '{"name": "%s", "arguments": "{}"}}]}, {"role": "tool", "tool_call_id": "c1", "content": "ok"}, ' \
       '{"role": "assistant", "content": "%s"}]}'


@pytest.mark.parametrize("where", ["id", "model", "tool", "content"])
def test_a_lone_surrogate_in_a_transcript_is_replaced_and_counted(tmp_path, where):
    """A lone UTF-16 surrogate (half an emoji: "\\ud83d") in a run id, model or tool name made Arrow raise
    UnicodeEncodeError out of the report (found by fuzzing). Now the text is kept with '?' in its place and
    counted; a surrogate pair (a whole emoji) is text like any other. The replacement is U+FFFD, as for bytes that
    are no UTF-8 and in the OTLP JSON files agentobs writes (it was '?', which a name may hold)."""
    fields = {"id": "run-1", "model": "gpt-4o", "tool": "get_order", "content": "done"}
    fields[where] += "\\ud83d"
    p = tmp_path / "t.json"
    p.write_text("[" + _RUN % tuple(fields.values()) + ", " + _RUN.replace("run-1", "x") % (
        "run-2", "gpt-4o", "get_order", "fine \\ud83d\\ude00") + "]")
    ss = load_sources([str(p)])
    assert ss.quality.count("bad_value") == 1
    r = analyze([str(p)])
    assert len(r.runs) == 2
    if where in ("id", "model"):              # the text kept, the surrogate as U+FFFD
        assert fields[where].replace("\\ud83d", "\ufffd") in set(r.runs.astype(str).stack())


def test_a_labels_file_with_a_surrogate_or_nested_too_deeply_is_a_one_line_error(tmp_path):
    from click.testing import CliRunner

    from agentobs.cli.main import cli

    runs = tmp_path / "t.json"
    runs.write_text("[" + _RUN % ("run-1", "gpt-4o", "get_order", "done") + "]")
    for name, text in (("surrogate.json", '[{"run_id": "run-1\\ud800", "success": true}]'),
                       ("deep.json", "[" * 50_000 + "]" * 50_000)):
        labels = tmp_path / name
        labels.write_text(text)
        res = CliRunner().invoke(cli, ["report", str(runs), "--labels", str(labels)])
        assert res.exit_code == 2, res.output
        assert res.output.startswith(f"agentobs: error: labels file {labels}") and res.output.count("\n") == 1


FUZZ = TESTS / "data" / "fuzz"


@pytest.mark.parametrize("name", ["openinference_metadata_array.jsonl", "cost_sum_overflow.jsonl"])
def test_inputs_that_raised_out_of_the_analysis_give_a_report(name):
    """Found by fuzzing: an OpenInference ``metadata`` attribute that is an array (ArrowNotImplementedError), two
    model calls of 1e308 dollars each, whose run cost is infinite (OverflowError in the caps). Both made every
    analysis command end in an internal error."""
    from click.testing import CliRunner

    from agentobs.cli.main import cli

    for args in (["report", str(FUZZ / name)], ["caps", str(FUZZ / name)]):
        res = CliRunner().invoke(cli, args)
        assert res.exit_code == 0, res.output
    r = analyze([str(FUZZ / name)])
    assert len(r.runs) == 1
    if name.startswith("cost"):
        cap = next(c for c in r.caps if c.dimension == "cost_usd")
        assert cap.recommended is None and any("infinite cost_usd" in w for w in cap.warnings)


def test_out_to_an_html_file_writes_the_html_report_escaped(tmp_path):
    """``report F --out x.html`` wrote the JSON report into x.html: opened in a browser, an agent named
    <script>...</script> ran (found by fuzzing). Now a .html file gets the HTML report, escaped."""
    from click.testing import CliRunner

    from agentobs.cli.main import cli

    out = tmp_path / "x.html"
    res = CliRunner().invoke(cli, ["report", str(FUZZ / "script_agent_name.jsonl"), "--out", str(out)])
    assert res.exit_code == 0, res.output
    page = out.read_text()
    assert page.startswith("<!doctype html>") and "<script>alert(1)</script>" not in page


def test_a_dialect_token_count_written_as_text_is_read():
    """An OpenInference ``llm.token_count.prompt`` of "120" (text) was dropped without a word: the dialect readers
    took only Arrow's ``string`` type, and the loader gives ``large_string`` (found by fuzzing)."""
    r = analyze([str(FUZZ / "openinference_token_count_string.jsonl")])
    assert r.runs["input_tokens"].tolist() == [120]


@pytest.mark.parametrize("name", ["langfuse_usage_negative.jsonl", "mlflow_token_usage_negative.jsonl"])
def test_negative_counts_in_json_usage_are_unknown_and_counted(name):
    """Negative tokens and cost in Langfuse usage_details/cost_details or MLflow chat.tokenUsage (JSON inside an
    attribute, which nothing typed) went into the runs: negative caps, 'caps --emit' printing max_tokens=1, and
    'No problems found' (found by fuzzing). Now each is unknown and counted."""
    r = analyze([str(FUZZ / name)])
    assert r.quality.count("bad_value") >= 2
    for col in ("input_tokens", "output_tokens", "tokens", "cost_usd"):
        values = r.runs[col].dropna()
        assert (values >= 0).all(), (col, values.tolist())
    assert all(c.recommended is None or c.recommended >= 0 for c in r.caps)


def test_token_counts_and_costs_that_are_no_number_are_unknown_and_counted():
    """A boolean ``true`` in ``llm.token_count.completion`` read as 1 token, and text that is no number ("many")
    or JSON usage values of the wrong type (``{"input": true}``, ``{"total": [1.5]}``) were dropped without a word
    (found by fuzzing). Each is now unknown and counted as bad_value, with the span and the field named."""
    r = analyze([str(FUZZ / "openinference_token_counts_not_numbers.jsonl")])
    runs = r.runs.set_index("run_id")
    assert runs.loc["424e564a3293b4d02f67adf455360bbb", "input_tokens"] == 120
    assert pd.isna(runs.loc["424e564a3293b4d02f67adf455360bbb", "output_tokens"])
    assert pd.isna(runs.loc["5" * 32, "input_tokens"])
    (issue,) = r.quality.issues
    assert issue.kind == "bad_value" and issue.count == 2
    assert issue.examples == ["span 595c88b6df937e09: input_tokens that is not a number (left unknown)",
                              "span 595c88b6df937e0f: output_tokens that is not a number (left unknown)"]

    r = analyze([str(FUZZ / "langfuse_usage_not_numbers.jsonl")])
    (issue,) = r.quality.issues
    assert issue.count == 3 and [e.split(": ")[1] for e in issue.examples] == [
        "input_tokens that is not a number (left unknown)", "output_tokens that is not a number (left unknown)",
        "cost that is not a number (left unknown)"]
    run = r.runs.iloc[0]
    assert pd.isna(run["input_tokens"]) and pd.isna(run["output_tokens"]) and pd.isna(run["cost_usd"])


def test_a_runs_agent_does_not_depend_on_the_other_runs_read_with_it():
    """A run whose agent span carries no agent name took its name from the span, unless another run in the same
    input had a named agent: then it had no main agent at all (agent unknown, its segment '(none)'), and the Dask
    engine, whose partitions hold fewer runs, disagreed with the local one (found by fuzzing)."""
    alone = analyze([str(FUZZ / "openinference_token_counts_not_numbers.jsonl")]).runs.set_index("run_id")
    mixed = analyze([str(FUZZ / "mlflow_token_usage_negative.jsonl"),
                     str(FUZZ / "openinference_token_counts_not_numbers.jsonl")]).runs.set_index("run_id")
    for col in ("agent", "sub_agents"):
        assert mixed.loc["5" * 32, col] == alone.loc["5" * 32, col], col
    assert alone.loc["5" * 32, "agent"] == "agent"


def test_a_lone_surrogate_reads_as_the_replacement_character_agentobs_writes(tmp_path):
    """One rule for a lone surrogate, in and out: the careful path of the loader replaces it with U+FFFD, which is
    what the OTLP JSON writer (``contract.otlp_values.text``) puts in its place and what bytes that are no UTF-8
    become, so the same name reads the same from a foreign file and from ours."""
    from agentobs.analysis import load_file
    from agentobs.contract.otlp_values import text
    span = {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331", "name": "x\ud800y",
            "kind": 1, "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000001000000000"}
    line = {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": [span]}]}]}
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps(line) + "\n")               # the escape "\ud800", as a JavaScript writer leaves it
    ss = load_file(p)
    assert list(ss.spans["name"]) == [text("x\ud800y")] == ["x\ufffdy"]
