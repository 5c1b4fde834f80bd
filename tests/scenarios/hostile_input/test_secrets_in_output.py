"""Secrets in the traces we read never reach what agentobs shows: the terminal report, the JSON and HTML reports,
the runs CSV, the caps and a trace's tree. Every secret of tests/data/secrets_corpus.json (the corpus the in-process
redactor and the collector are tested on) that a value shows is put where a trace from another instrumentation may
carry it: a tool call's error type and status message, the agent's name, a tool's name and span name, the model's
name, the task and conversation ids."""
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from locations import ROOT

from agentobs.cli.main import cli

# the secrets a value shows (not those that are secrets only for the key they sit under, which the analysis never
# shows: it shows agents', tools' and models' names and errors, not arbitrary attributes)
CORPUS = [e for e in json.loads((ROOT / "tests" / "data" / "secrets_corpus.json").read_text())["secrets"]
          if e["family"] != "sensitive_key" and isinstance(e["value"], str)]
FIXTURE = ROOT / "tests" / "dialects" / "fixtures" / "openai_v2.jsonl"


def _attr(span: dict, key: str, value: str) -> None:
    span["attributes"] = [a for a in span.get("attributes", []) if a["key"] != key]
    span["attributes"].append({"key": key, "value": {"stringValue": value}})


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> tuple[Path, list[str], str]:
    """One copy of the fixture's first request per secret, under its own trace id, the secret in every place."""
    first = json.loads(FIXTURE.read_text().splitlines()[0])
    out, secrets = [], []
    for i, entry in enumerate(CORPUS):
        req = json.loads(json.dumps(first))
        value = entry["value"]
        secrets += entry["secret"]
        for rs in req["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for sp in ss["spans"]:
                    sp["traceId"] = f"{i + 1:08x}" + sp["traceId"][8:]
                    keys = {a["key"] for a in sp.get("attributes", [])}
                    if "gen_ai.agent.name" in keys:
                        _attr(sp, "gen_ai.agent.name", value)
                        _attr(sp, "gen_ai.conversation.id", value)      # ids are what the agent's code put there
                        _attr(sp, "agentobs.task.id", value)
                    if "gen_ai.request.model" in keys:
                        _attr(sp, "gen_ai.request.model", value)
                    if "gen_ai.tool.name" in keys:
                        _attr(sp, "gen_ai.tool.name", value)
                        _attr(sp, "error.type", value)
                        sp["name"] = f"execute_tool {value}"
                        sp["status"] = {"code": 2, "message": value}
        out.append(json.dumps(req))
    p = tmp_path_factory.mktemp("secrets") / "traces.jsonl"
    p.write_text("\n".join(out) + "\n")
    trace_id = json.loads(out[0])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    return p, secrets, trace_id


def _leaks(text: str, secrets: list[str]) -> list[str]:
    return [s for s in secrets if s in text]


def test_no_secret_reaches_any_output(traces, tmp_path):
    path, secrets, trace_id = traces
    runner = CliRunner()
    outputs = {}
    for name, args in {
        "terminal report": ["report", str(path), "--segment", "agent"],
        "json report": ["report", str(path), "--format", "json"],
        "caps": ["caps", str(path)],
        "caps json": ["caps", str(path), "--format", "json"],
        "trace": ["trace", trace_id, str(path)],
    }.items():
        r = runner.invoke(cli, args)
        assert r.exit_code == 0, (name, r.output)
        outputs[name] = r.output
    html = tmp_path / "r.html"
    assert runner.invoke(cli, ["report", str(path), "--format", "html", "--out", str(html)]).exit_code == 0
    outputs["html report"] = html.read_text()
    csv = tmp_path / "runs.csv"
    assert runner.invoke(cli, ["runs", str(path), "--out", str(csv)]).exit_code == 0
    outputs["runs csv"] = csv.read_text()
    assert "[REDACTED]" in outputs["runs csv"] and "[REDACTED]" in outputs["trace"]
    leaks = {name: _leaks(text, secrets) for name, text in outputs.items()}
    assert not any(leaks.values()), leaks


def test_the_html_libraries_are_embedded_whole(traces, tmp_path):
    """Masking is for text from the traces: Plotly and DataTables travel in the page as their packages ship them."""
    import re

    from agentobs.analysis.explorer import _assets as assets
    path, _, _ = traces
    html = tmp_path / "r.html"
    assert CliRunner().invoke(cli, ["report", str(path), "--format", "html", "--out", str(html)]).exit_code == 0
    text = html.read_text()
    libs = {m.group(1): json.loads(m.group(2)) for m in re.finditer(
        r'<script type="application/json" id="lib-(\w+)">(.*?)</script>', text, re.S)}
    assert libs == {"plotly": assets.plotly_js(), "datatables": assets.datatables()[0]}


def test_run_ids_whose_span_id_is_all_digits_are_shown_whole(tmp_path):
    """A span id is 16 hex digits, one in about 1,900 of them all decimal: such an id reads as a card number to the
    card rule. A trace holding two runs names them ``<trace id>:<span id>``; those ids reach the runs CSV, each
    renderer's value and a sentence around them whole, while a card number next to them is still masked."""
    from agentobs.analysis.explorer.html import _shown as _shown_in_html
    from agentobs.cli.render import jsonable
    from agentobs.cli.safe_text import clean
    from agentobs.contract.redaction import secrets_masked
    first = json.loads(FIXTURE.read_text().splitlines()[0])
    lines, roots = [], []
    for k in (1, 2):
        req = json.loads(json.dumps(first))
        spans = [sp for rs in req["resourceSpans"] for ss in rs["scopeSpans"] for sp in ss["spans"]]
        ids = {sp["spanId"]: f"{k}{i:015d}" for i, sp in enumerate(spans)}
        for sp in spans:
            sp["traceId"] = "ab" * 16
            sp["spanId"] = ids[sp["spanId"]]
            if sp.get("parentSpanId"):
                sp["parentSpanId"] = ids.get(sp["parentSpanId"], sp["parentSpanId"])
            if not sp.get("parentSpanId"):
                roots.append(f"{'ab' * 16}:{sp['spanId']}")
        lines.append(json.dumps(req))
    path = tmp_path / "two_runs.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert len(roots) == 2
    runner = CliRunner()
    csv = tmp_path / "runs.csv"
    assert runner.invoke(cli, ["runs", str(path), "--out", str(csv)]).exit_code == 0
    for run_id in roots:
        assert run_id in csv.read_text()
        # as the JSON report, the terminal and the HTML report write a value
        assert jsonable({"run_id": run_id}) == {"run_id": run_id} and clean(run_id) == run_id
        assert _shown_in_html(run_id) == run_id
    sentence = f"evidence in {roots[0]}: paid with 4111 1111 1111 1111"
    assert secrets_masked(sentence) == f"evidence in {roots[0]}: paid with [REDACTED]"
    assert secrets_masked(roots[0].split(":")[1]) == "[REDACTED]"      # a 16-digit value alone may be a card: masked
    # a run id inside a secret goes with the secret
    assert secrets_masked(json.dumps({"token": f"abc {roots[0]} def", "run": roots[1]})) == \
        json.dumps({"token": "[REDACTED]", "run": roots[1]}, ensure_ascii=False)
