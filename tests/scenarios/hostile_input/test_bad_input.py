"""Bad input: every kind is counted in the data-quality section and never stops the report (issue 5, point 5)."""
import json

import pytest
from bad_inputs import _good_lines, _spans, write_bad_folder
from click.testing import CliRunner
from locations import TESTS

from agentobs.analysis.report.engine import analyze
from agentobs.cli.main import cli


@pytest.fixture
def bad_folder(tmp_path):
    return write_bad_folder(tmp_path)


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
    fixture = TESTS / "dialects" / "fixtures" / "openai_v2.jsonl"
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
