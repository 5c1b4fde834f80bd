"""docs/report-schema.md lists every field of the JSON report: a generated report has exactly those fields."""
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from locations import ROOT

from agentobs.analysis import analyze
from agentobs.analysis.report.summary import REPORT_SCHEMA_VERSION
from agentobs.cli.main import cli
from agentobs.domain.population import simulate
from agentobs.telemetry import configure

DOC = ROOT / "docs" / "report-schema.md"
ROW = re.compile(r"^\| `([^`]+)` \| ([^|]+) \| ([^|]+) \|", re.M)
TYPES = ("P", "CI")                  # object types the doc defines once


def documented() -> dict[str, tuple[str, str]]:
    """path -> (type, present) from the tables of the doc."""
    rows = {m.group(1): (m.group(2).strip(), m.group(3).strip()) for m in ROW.finditer(DOC.read_text())}
    assert len(rows) > 80
    return rows


def paths(report: dict, doc: dict[str, tuple[str, str]]) -> set[str]:
    """Every field path of ``report``, keys that come from the data replaced by the doc's placeholder."""
    out: set[str] = set()

    def walk(value: object, path: str) -> None:
        if path and not path.endswith("[]"):
            out.add(path)
        kind = doc.get(path, ("", ""))[0]
        if kind in TYPES:
            path = kind
        if isinstance(value, dict):
            placeholder = next((p for p in doc if p.startswith(f"{path}.{{") and "." not in p[len(path) + 1:]
                                and p.endswith("}")), None) if path else None
            for k, v in value.items():
                walk(v, placeholder or (f"{path}.{k}" if path else k))
        elif isinstance(value, list):
            for v in value:
                if isinstance(v, dict):
                    walk(v, f"{path}[]")
    walk(report, "")
    return out


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("schema") / "traces.jsonl"
    tel = configure(traces_out=path)
    simulate(150, seed=3, observers=lambda: [tel.observer()])
    tel.shutdown()
    with path.open("a") as f:
        f.write("this line is not OTLP JSON\n")          # so that data_quality has an issue
    return path


def test_the_report_has_exactly_the_documented_fields(traces):
    doc = documented()
    report = json.loads(json.dumps(analyze([str(traces)]).to_dict()))
    assert report["schema_version"] == REPORT_SCHEMA_VERSION == 1
    got = paths(report, doc)
    undocumented = got - set(doc)
    assert not undocumented, f"fields missing from docs/report-schema.md: {sorted(undocumented)}"
    missing = {p for p, (_, present) in doc.items() if present == "always"} - got
    assert not missing, f"documented as always present but not in a report: {sorted(missing)}"
    top = {p for p in doc if "." not in p and "[" not in p and not p.startswith(TYPES)}
    assert set(report) == top


def test_caps_json_holds_the_same_cap_objects(traces):
    doc = documented()
    result = CliRunner().invoke(cli, ["caps", str(traces), "--format", "json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert set(out) == {"target", "margin", "percentile_method", "dimensions"}
    cap_fields = {p.split(".")[1] for p in doc if p.startswith("caps[].")}
    for dim, cap in out["dimensions"].items():
        assert set(cap) == cap_fields and cap["dimension"] == dim


def test_figures_of_a_million_and_up_are_written_out_on_the_terminal_and_in_html():
    """``.6g`` showed a recommended token cap of 1426909 as 1.42691e+06 beside the JSON's exact value (found by
    fuzzing); from a million to 1e15 a figure is a whole number with separators."""
    from agentobs.analysis.report.view import num
    assert num(1426909.0) == "1,426,909" and num(-2.5e6) == "-2,500,000" and num(1234.567) == "1,234.57"
    assert num(0.000123456) == "0.000123456" and num(1.2e308) == "1.2e+308" and num(7) == "7"
