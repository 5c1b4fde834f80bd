"""Bad input: every kind is counted in the data-quality section and never stops the report (issue 5, point 5)."""
import copy
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentobs.analysis.report.engine import analyze
from agentobs.cli.main import cli
from agentobs.domain.scenarios import SEED000
from agentobs.telemetry import configure


def _good_lines(tmp_path):
    path = tmp_path / "src.jsonl"
    tel = configure(traces_out=path)
    for name in ("A normal run", "B same call repeated"):
        SEED000[name]([tel.observer()])
    tel.shutdown()
    return path.read_text().splitlines()


def _spans(line):
    """The spans of one trace (the first one with a root) in an OTLP JSON line."""
    spans = json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"]
    tid = next(s["traceId"] for s in spans if "parentSpanId" not in s)
    return [s for s in spans if s["traceId"] == tid]


def _with_spans(line, spans):
    obj = json.loads(line)
    obj["resourceSpans"][0]["scopeSpans"][0]["spans"] = spans
    return json.dumps(obj)


@pytest.fixture
def bad_folder(tmp_path):
    lines = _good_lines(tmp_path)
    base = lines[0]
    spans = _spans(base)
    d = tmp_path / "in"
    d.mkdir()
    (d / "good.jsonl").write_text("\n".join(lines) + "\n")
    (d / "truncated.jsonl").write_text(base[: len(base) // 2] + "\n" + base + "\n")
    (d / "invalid.jsonl").write_text("{not json at all\n" + base + "\n")
    wrong = [dict(s, traceId="ef" * 16) for s in copy.deepcopy(spans)]
    root = next(s for s in wrong if "parentSpanId" not in s)
    for a in root.get("attributes", []):
        if a["key"] == "gen_ai.usage.input_tokens":
            a["value"] = {"stringValue": "lots"}
        if a["key"] == "agentobs.steps":
            a["value"] = {"boolValue": True}
    next(s for s in wrong if "parentSpanId" in s)["startTimeUnixNano"] = True   # not a timestamp: dropped
    (d / "wrongtypes.jsonl").write_text(_with_spans(base, wrong) + "\n")
    root_id = next(s["spanId"] for s in spans if "parentSpanId" not in s)
    orphans = [dict(s, traceId="ab" * 16) for s in spans if s["spanId"] != root_id]
    (d / "orphans.jsonl").write_text(_with_spans(base, orphans) + "\n")
    (d / "duplicates.jsonl").write_text(base + "\n")   # the same spans as good.jsonl's first line
    neg = [dict(s, traceId="cd" * 16, startTimeUnixNano=s["endTimeUnixNano"], endTimeUnixNano=s["startTimeUnixNano"])
           for s in spans]
    (d / "negative.jsonl").write_text(_with_spans(base, neg) + "\n")
    (d / "empty.jsonl").write_text("")
    (d / "unknown.csv").write_text("run_id,steps\nr1,4\n")
    (d / "binary.bin").write_bytes(bytes(range(256)))
    return d


def test_every_kind_of_bad_input_is_counted_and_the_report_goes_on(bad_folder):
    report = analyze([str(bad_folder)])
    q = report.quality
    kinds = {i.kind for i in q.issues}
    for kind in ("invalid_json", "wrong_type", "bad_span", "orphan_span", "missing_root", "duplicate_span",
                 "negative_duration", "empty_file", "unknown_format"):
        assert kind in kinds, (kind, q.to_dict())
    assert q.count("invalid_json") == 2            # one truncated line, one line of garbage
    assert q.count("empty_file") == 1 and q.count("unknown_format") == 2
    assert q.count("bad_span") == 1 and q.count("wrong_type") == 2
    assert q.count("missing_root") == 1
    assert q.count("negative_duration") == len(_spans((bad_folder / "negative.jsonl").read_text()))
    # the good runs are still analysed, once each
    assert {"done", "repeated_call"} <= set(report.runs["stop_reason"].dropna())
    assert report.overview["runs"] >= 2


def test_cli_report_shows_the_data_quality_section(bad_folder, tmp_path):
    res = CliRunner().invoke(cli, ["report", str(bad_folder)])
    assert res.exit_code == 0, res.output
    assert "Data quality" in res.output and "invalid_json" in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(cli, ["report", str(bad_folder), "--format", "html", "--out", str(tmp_path / "r.html")])
    assert res.exit_code == 0 and "duplicate_span" in (tmp_path / "r.html").read_text()


def test_only_bad_input_is_an_error_naming_the_problem(tmp_path):
    (tmp_path / "empty.jsonl").write_text("")
    res = CliRunner().invoke(cli, ["report", str(tmp_path / "empty.jsonl"), "--format", "json"])
    assert res.exit_code == 2, res.output
    assert "no usable run" in res.output and "empty_file" in res.output
    # the library still returns the (empty) report with its data quality
    data = analyze([str(tmp_path / "empty.jsonl")]).to_dict()
    assert data["overview"]["runs"] == 0 and data["data_quality"]["issues"][0]["kind"] == "empty_file"


def test_gzip_input(tmp_path):
    import gzip
    lines = _good_lines(tmp_path)
    gz = tmp_path / "t.jsonl.gz"
    gz.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    assert len(analyze([str(gz)]).runs) == 2


def test_a_segment_nothing_carries_is_an_error_that_says_so(tmp_path):
    fixture = Path(__file__).parent / "dialects" / "fixtures" / "openai_v2.jsonl"
    r = CliRunner().invoke(cli, ["report", str(fixture), "--segment", "no.such.attribute"])
    assert r.exit_code == 2
    assert r.output.strip() == ("agentobs: error: --segment no.such.attribute: no runs column and no attribute of a "
                                "run's root span has this name (the runs columns: docs/analysis.md)")
    ok = CliRunner().invoke(cli, ["report", str(fixture), "--segment", "service"])
    assert ok.exit_code == 0, ok.output


def test_a_span_that_ends_a_few_nanoseconds_before_it_starts_is_counted(tmp_path):
    """Times of today are about 1.7e18 ns, where a float64 steps by 256 ns: a span that ends 50 ns before it starts
    is counted as negative_duration (the check compares the integers), and one that ends as it starts is not."""
    from agentobs.analysis.otlp.load import load_file
    from agentobs.analysis.spans.checks import check
    start = 1_700_000_000_000_000_100

    def span(sid, end, parent=None):
        s = {"traceId": "ab" * 16, "spanId": sid * 8, "name": f"s{sid}", "kind": 1,
             "startTimeUnixNano": str(start), "endTimeUnixNano": str(end)}
        return s if parent is None else dict(s, parentSpanId=parent * 8)

    spans = [span("01", start + 1000), span("02", start - 50, "01"), span("03", start, "01")]
    line = json.dumps({"resourceSpans": [{"resource": {"attributes": []},
                                          "scopeSpans": [{"scope": {"name": "s"}, "spans": spans}]}]})
    path = tmp_path / "t.jsonl"
    path.write_text(line + "\n")
    ss = check(load_file(path))
    assert len(ss.spans) == 3 and ss.quality.count("negative_duration") == 1
