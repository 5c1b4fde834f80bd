"""Zipkin API v2 JSON (``agentobs.analysis.formats.zipkin``) gives the analysis what the OTLP JSON of the same spans
gives. ``tests/data/zipkin/`` holds every seed scenario as written by the real OpenTelemetry Python
``ZipkinExporter`` (``opentelemetry-exporter-zipkin-json``, see VERSIONS.md there) and, from the same run, by our OTLP
JSON file exporter; ``generate.py`` there wrote them, and the last test runs it again when the exporter is
installed. Zipkin has no span links: the resumed task (three linked traces) is the one difference, checked as such.
"""
import gzip
import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from locations import TESTS

from agentobs.analysis.formats import reader_of
from agentobs.analysis.load.sources import load_sources
from agentobs.analysis.otlp.load import load_file
from agentobs.analysis.report.engine import analyze
from agentobs.cli.main import cli

DATA = TESTS / "data" / "zipkin"
SPANS, TRACES, OTLP = DATA / "spans.json", DATA / "traces.json.gz", DATA / "traces.jsonl.gz"
ZIPKIN = "Zipkin JSON (API v2)"
SPAN_COLUMNS = ["trace_id", "span_id", "parent_span_id", "name", "kind", "status_code", "status_message",
                "service_name"]
RUN_COLUMNS = ["run_id", "trace_id", "stop_reason", "status", "outcome", "steps", "model_calls", "tool_calls",
               "errors", "input_tokens", "output_tokens", "tokens", "signature", "signatures", "service", "agent",
               "model", "dialect"]


def _frame(df: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    return df[columns].sort_values(columns[:2]).reset_index(drop=True)


def _layout(tmp_path: Path, layout: str) -> Path:
    """The fixture's spans in one of the layouts Zipkin users hold."""
    spans = json.loads(SPANS.read_text())
    traces: dict[str, list] = {}
    for s in spans:
        traces.setdefault(s["traceId"], []).append(s)
    p = tmp_path / "zipkin.json"
    if layout == "array of spans":
        return SPANS
    if layout == "array of arrays, gzip":
        return TRACES
    if layout == "array of arrays, indented":
        p.write_text(json.dumps(list(traces.values()), indent=2))
    elif layout == "array of spans, gzip":
        p = tmp_path / "zipkin.json.gz"
        p.write_bytes(gzip.compress(SPANS.read_bytes()))
    elif layout == "JSON lines of spans":
        p.write_text("".join(json.dumps(s) + "\n" for s in spans))
    elif layout == "JSON lines of span arrays":
        p.write_text("".join(json.dumps(t) + "\n" for t in traces.values()))
    return p


LAYOUTS = ["array of spans", "array of spans, gzip", "array of arrays, gzip", "array of arrays, indented",
           "JSON lines of spans", "JSON lines of span arrays"]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_zipkin_json_gives_the_spans_attributes_and_events_of_the_otlp_file(tmp_path, layout):
    path = _layout(tmp_path, layout)
    assert reader_of(path).name == ZIPKIN
    got, want = load_sources([str(path)]), load_file(OTLP)
    assert not got.quality.issues, got.quality.to_dict()
    assert got.spellings == {str(path): {ZIPKIN: 1}}
    assert len(got.spans) == len(want.spans) == 206
    pd.testing.assert_frame_equal(_frame(got.spans, SPAN_COLUMNS), _frame(want.spans, SPAN_COLUMNS),
                                  check_dtype=False)
    times = ["trace_id", "span_id", "start_ns", "end_ns"]
    g, w = _frame(got.spans, times), _frame(want.spans, times)
    assert ((g["start_ns"] - w["start_ns"]).abs() <= 500).all()          # Zipkin: microseconds, rounded
    assert ((g["end_ns"] - w["end_ns"]).abs() <= 1000).all()             # start and duration rounded apart
    # every attribute, with the contract's types back (token counts, costs, booleans, finish reasons)
    attrs = sorted(c for c in want.spans.columns if "." in c)
    assert set(got.spans.columns) == set(want.spans.columns)
    g, w = _frame(got.spans, ["trace_id", "span_id", *attrs]), _frame(want.spans, ["trace_id", "span_id", *attrs])
    pd.testing.assert_frame_equal(g, w)
    # span events come back from the exporter's annotations, attributes typed
    ev = ["trace_id", "span_id", "name", *sorted(c for c in want.events.columns if "." in c)]
    assert len(got.events) == len(want.events) > 0
    key = ["trace_id", "span_id", "time_ns", "name"]
    g, w = got.events.sort_values(key).reset_index(drop=True), want.events.sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(g[ev], w[ev])
    assert ((g["time_ns"] - w["time_ns"]).abs() <= 500).all()
    assert len(got.links) == 0 < len(want.links)                          # Zipkin has no links


def _runs_by_id(report) -> pd.DataFrame:
    return report.runs.set_index("run_id").sort_index()


def test_the_report_on_zipkin_json_is_the_report_on_the_otlp_file_but_for_links():
    got, want = analyze([str(SPANS)]), analyze([str(OTLP)])
    assert got.overview["spans"] == want.overview["spans"] == 206
    g, w = _runs_by_id(got), _runs_by_id(want)
    # the resumed task: three traces joined by span links in OTLP; Zipkin keeps no links, so three runs
    resumed = w[w["resumes"] > 0]
    assert len(resumed) == 1 and resumed["resumes"].iloc[0] == 2
    segments = list(resumed["trace_ids"].iloc[0])
    assert len(segments) == 3
    apart = g[g["trace_id"].isin(segments)]
    assert len(apart) == 3 and (apart["resumes"] == 0).all()
    assert apart["input_tokens"].sum() == resumed["input_tokens"].iloc[0]
    assert apart["output_tokens"].sum() == resumed["output_tokens"].iloc[0]
    assert apart["model_calls"].sum() == resumed["model_calls"].iloc[0]
    # every other run: the same, field for field
    w = w.drop(resumed.index)
    g = g.drop(apart.index)
    assert list(g.index) == list(w.index) and len(w) == 17
    cols = [c for c in RUN_COLUMNS if c != "run_id"]
    pd.testing.assert_frame_equal(g[cols], w[cols])
    np.testing.assert_allclose(g["cost_usd"].to_numpy(float), w["cost_usd"].to_numpy(float), rtol=1e-9)
    assert (w["cost_usd"] > 0).all()
    assert ((g["start"] - w["start"]).abs() <= pd.Timedelta(microseconds=1)).all()
    for col in ("wall_s", "active_s"):
        np.testing.assert_allclose(g[col].to_numpy(float), w[col].to_numpy(float), atol=2e-6)


def test_agentobs_report_says_it_converted_the_zipkin_file():
    r = CliRunner().invoke(cli, ["report", str(SPANS)])
    assert r.exit_code == 0, r.output
    assert "converted from Zipkin JSON (API v2)" in r.output
    assert r.output.startswith(f"20 runs (206 spans) from {SPANS}")


def test_sniffing_tells_zipkin_json_from_otlp_jaeger_console_and_transcripts(tmp_path):
    """A Zipkin array is Zipkin; the JSON arrays and objects of the other readers keep their kind."""
    otlp_lines = gzip.decompress(OTLP.read_bytes()).decode().splitlines()
    cases = {
        "zipkin.json": (SPANS.read_text(), ZIPKIN),
        "requests.json": (json.dumps([json.loads(x) for x in otlp_lines]), "otlp"),
        "requests-indented.json": (json.dumps([json.loads(x) for x in otlp_lines], indent=2), "otlp"),
        "traces.jsonl": ("\n".join(otlp_lines) + "\n", "otlp"),
        "jaeger.json": ((DATA.parent / "jaeger_ui" / "download_results.json").read_text(),
                        "Jaeger JSON (UI download, API before v3)"),
        "runs.json": (json.dumps([{"id": "0123456789abcdef", "traceId": "0123456789abcdef0123456789abcdef",
                                   "messages": [{"role": "user", "content": "hi"}]}]), "transcripts"),
        "otlp-spans.json": (json.dumps([{"traceId": "0123456789abcdef0123456789abcdef",
                                         "spanId": "0123456789abcdef", "name": "chat"}]), "transcripts"),
    }
    for name, (text, kind) in cases.items():
        p = tmp_path / name
        p.write_text(text)
        assert reader_of(p).name == kind, name


def _damaged(tmp_path: Path, damage) -> tuple[Path, int]:
    spans = json.loads(SPANS.read_text())
    damage(spans)
    p = tmp_path / "damaged.json"
    p.write_text(json.dumps(spans, indent=1))
    return p, len(json.loads(SPANS.read_text()))


@pytest.mark.parametrize("what, kind", [
    ("not an object", "bad_span"), ("no trace id", "bad_span"), ("no timestamp", "bad_span"),
    ("trace id not hex", "bad_span"), ("cut short", "invalid_json")])
def test_a_damaged_zipkin_span_costs_only_itself(tmp_path, what, kind):
    def damage(spans):
        i = len(spans) // 2
        if what == "not an object":
            spans[i] = "oops"
        elif what == "no trace id":
            del spans[i]["traceId"]
        elif what == "no timestamp":
            del spans[i]["timestamp"]
        elif what == "trace id not hex":
            spans[i]["traceId"] = "not-a-trace-id"
    p, n = _damaged(tmp_path, damage)
    if what == "cut short":
        text = p.read_text()
        p.write_text(text[: text.index('"traceId"', len(text) * 3 // 4) + 5])     # in the middle of a span
    ss = load_sources([str(p)])
    issues = {i.kind: i.count for i in ss.quality.issues}
    assert issues.pop(kind) == 1, ss.quality.to_dict()
    assert set(issues) <= {"orphan_span", "missing_root", "unplaced_span"}    # what losing a span leaves
    if what == "cut short":
        assert n // 2 < len(ss.spans) < n
    else:
        assert len(ss.spans) == n - 1


def test_a_bad_annotation_or_kind_costs_a_value_and_keeps_its_span(tmp_path):
    def damage(spans):
        with_events = [s for s in spans if s.get("annotations")]
        with_events[0]["annotations"][0]["timestamp"] = "soon"
        spans[0]["kind"] = "SIDEWAYS"
    p, n = _damaged(tmp_path, damage)
    ss = load_sources([str(p)])
    assert {i.kind: i.count for i in ss.quality.issues} == {"bad_value": 2}
    assert len(ss.spans) == n and len(ss.events) == len(load_file(OTLP).events) - 1


def test_deeply_nested_tag_and_event_values_stay_text_and_raise_nothing(tmp_path):
    deep = [[[]]]
    for _ in range(900):
        deep = [deep]
    span = {"traceId": "463ac35c9f6413ad", "id": "0000000000000001", "name": "x", "timestamp": 1, "duration": 2,
            "tags": {"a": deep, "b": {"c": 1}},
            "annotations": [{"timestamp": 1, "value": json.dumps({"e": {"d": deep}})}]}
    p = tmp_path / "deep.json"
    p.write_text(json.dumps([span]))
    ss = load_sources([str(p)])
    assert not ss.quality.issues and len(ss.spans) == 1
    row = ss.spans.iloc[0]
    assert row["a"] == json.dumps(deep) and row["b"] == '{"c": 1}'
    assert ss.events["d"].tolist() == [json.dumps(deep)]


def test_a_broken_zipkin_file_is_an_error_that_says_what_it_is(tmp_path):
    p = tmp_path / "trace.json"
    p.write_text(SPANS.read_text()[:300])
    assert reader_of(p).name == ZIPKIN                   # its first keys say Zipkin
    r = CliRunner().invoke(cli, ["report", str(p)])
    assert r.exit_code == 2
    assert r.output.startswith(f"agentobs: error: no usable run in {p}: 1 x invalid_json")
    assert "Traceback" not in r.output


def test_zipkin_v1_json_is_counted_as_a_format_not_read(tmp_path):
    p = tmp_path / "v1.json"
    p.write_text(json.dumps([{"traceId": "463ac35c9f6413ad", "id": "a2fb4a1d1a96d312", "name": "get",
                              "timestamp": 1, "duration": 2, "annotations": [],
                              "binaryAnnotations": [{"key": "http.path", "value": "/"}]}]))
    assert reader_of(p).name == ZIPKIN
    ss = load_sources([str(p)])
    assert len(ss.spans) == 0
    issue = next(i for i in ss.quality.issues if i.kind == "unknown_format")
    assert issue.count == 1 and "Zipkin v1" in issue.examples[0]
    r = CliRunner().invoke(cli, ["report", str(p)])
    assert r.exit_code == 2 and "1 x unknown_format" in r.output and "Traceback" not in r.output


def test_spans_of_other_zipkin_tracers_keep_kind_status_endpoints_scope_and_shared_spans(tmp_path):
    """Hand-written as Brave and zipkin-go write them: 64-bit trace ids, no otel.* tags, an ``error`` tag, a
    ``shared`` server span holding its client's id, remote endpoints, plain annotations."""
    t = "463ac35c9f6413ad"
    spans = [
        {"traceId": t, "id": "0000000000000001", "kind": "SERVER", "name": "post /refund", "timestamp": 1_000_000,
         "duration": 900, "localEndpoint": {"serviceName": "frontend", "ipv4": "10.0.0.1", "port": 8080}},
        {"traceId": t, "parentId": "0000000000000001", "id": "0000000000000002", "kind": "CLIENT", "name": "post",
         "timestamp": 1_000_100, "duration": 500, "localEndpoint": {"serviceName": "frontend"},
         "remoteEndpoint": {"serviceName": "backend", "ipv4": "10.0.0.2", "port": 9000},
         "tags": {"error": "connection reset", "otel.library.name": "brave", "otel.library.version": "6.0",
                  "gen_ai.usage.input_tokens": "12", "http.status_code": "500"},
         "annotations": [{"timestamp": 1_000_150, "value": "ws"}]},
        {"traceId": t, "parentId": "0000000000000001", "id": "0000000000000002", "kind": "SERVER", "shared": True,
         "name": "post", "timestamp": 1_000_200, "duration": 300, "localEndpoint": {"serviceName": "backend"}},
        {"traceId": t, "parentId": "0000000000000002", "id": "0000000000000003", "name": "db",
         "timestamp": 1_000_250, "duration": 100, "localEndpoint": {"serviceName": "backend"}, "debug": True},
    ]
    p = tmp_path / "brave.json"
    p.write_text(json.dumps(spans))
    assert reader_of(p).name == ZIPKIN
    ss = load_sources([str(p)])
    assert not ss.quality.issues, ss.quality.to_dict()
    df = ss.spans.set_index("name")
    assert set(df["trace_id"]) == {"0" * 16 + t}
    client = ss.spans[(ss.spans["name"] == "post") & (ss.spans["kind"] == 3)].iloc[0]
    server = ss.spans[(ss.spans["name"] == "post") & (ss.spans["kind"] == 2)].iloc[0]
    assert client["span_id"] == "0000000000000002" and client["parent_span_id"] == "0000000000000001"
    assert (client["status_code"], client["status_message"]) == (2, "connection reset")
    assert client["peer.service"] == "backend" and client["network.peer.address"] == "10.0.0.2"
    assert client["network.peer.port"] == 9000
    assert client["gen_ai.usage.input_tokens"] == 12 and client["http.status_code"] == "500"   # typed by the contract
    assert "error" not in ss.spans.columns and "otel.library.name" not in ss.spans.columns
    # the shared server half: an id of its own under the client; the backend's span under the shared id follows it
    assert server["span_id"] != "0000000000000002" and server["parent_span_id"] == "0000000000000002"
    assert server["service_name"] == "backend"
    assert df.loc["db", "parent_span_id"] == server["span_id"] and df.loc["db", "kind"] == 1      # no kind: internal
    assert df.loc["post /refund", "network.local.port"] == 8080
    assert df.loc["post /refund", "start_ns"] == 1_000_000_000 and df.loc["post /refund", "end_ns"] == 1_000_900_000
    assert ss.events[["name", "time_ns"]].values.tolist() == [["ws", 1_000_150_000]]


def test_the_otel_exporter_tags_for_status_scope_and_resource_are_not_attributes():
    from agentobs.analysis.formats import zipkin

    req = zipkin.requests(SPANS.read_bytes(), "spans.json", _quality())[0]
    rs = req["resourceSpans"]
    assert len(rs) == 1
    keys = {a["key"] for a in rs[0]["resource"]["attributes"]}
    assert {"service.name", "service.instance.id", "telemetry.sdk.name", "telemetry.sdk.version"} <= keys
    assert [(s["scope"]["name"], s["scope"]["version"]) for s in rs[0]["scopeSpans"]] == [("agentobs", "0.1.0")]
    tags = {a["key"] for s in rs[0]["scopeSpans"][0]["spans"] for a in s["attributes"]}
    assert not tags & {"otel.status_code", "error", "otel.scope.name", "otel.library.name", "service.name",
                       "telemetry.sdk.name"}


def _quality():
    from agentobs.analysis.spans.quality import DataQuality
    return DataQuality(files=1)


def test_a_fresh_run_of_the_real_exporter_reads_as_the_committed_fixtures(tmp_path):
    """Regenerates the fixtures with the installed exporter (skipped without it) and checks the fresh Zipkin JSON
    against the fresh OTLP file and against the committed fixtures (ids and times differ; runs do not)."""
    pytest.importorskip("opentelemetry.exporter.zipkin.json")
    spec = importlib.util.spec_from_file_location("zipkin_generate", DATA / "generate.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    fresh = gen.generate(tmp_path)
    got, want = load_sources([str(fresh["spans.json"])]), load_file(fresh["traces.jsonl.gz"])
    assert not got.quality.issues
    pd.testing.assert_frame_equal(_frame(got.spans, SPAN_COLUMNS), _frame(want.spans, SPAN_COLUMNS),
                                  check_dtype=False)
    stable = ["stop_reason", "status", "steps", "model_calls", "tool_calls", "input_tokens", "output_tokens",
              "tokens", "signature"]
    for fresh_file, committed in ((fresh["spans.json"], SPANS), (fresh["traces.json.gz"], TRACES)):
        a, b = analyze([str(fresh_file)]).runs, analyze([str(committed)]).runs
        a, b = (r[stable].sort_values(stable, na_position="first").reset_index(drop=True) for r in (a, b))
        pd.testing.assert_frame_equal(a, b)


@pytest.mark.parametrize("annotations", [7, "soon", {"timestamp": 1}])
def test_annotations_that_are_not_a_list_cost_a_value_and_keep_their_span(tmp_path, annotations):
    """Annotations that are a number raised TypeError out of the report, a string was read as no annotations
    without a word (found by fuzzing)."""
    def damage(spans):
        with_events = [s for s in spans if s.get("annotations")]
        with_events[0]["annotations"] = annotations
    p, n = _damaged(tmp_path, damage)
    ss = load_sources([str(p)])
    assert {i.kind: i.count for i in ss.quality.issues} == {"bad_value": 1}
    assert len(ss.spans) == n
