"""The local OTLP JSON lines file: round trip, contract types, and what is (not) recorded."""
import json
import os
import re

import pandas as pd
import pytest
from click.testing import CliRunner
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentobs import FunctionModel
from agentobs.analysis.otlp.load import load_file
from agentobs.analysis.spans.checks import check
from agentobs.cli.main import cli
from agentobs.contract import semconv as sc
from agentobs.domain.scenarios import SEED000, SEED004, approve_and_resume, go
from agentobs.telemetry import configure

_DTYPE = {"string": "string", "int": "Int64", "double": "Float64", "bool": "boolean"}


def _all_scenarios(tel):
    for suite in (SEED000, SEED004):
        for run in suite.values():
            run([tel.observer()])
    approve_and_resume([tel.observer()], twice=True)


def test_file_reloads_into_exactly_the_emitted_spans(tmp_path):
    mem = InMemorySpanExporter()
    path = tmp_path / "traces.jsonl"
    tel = configure(traces_out=path, extra_exporters=[("memory", mem)])
    _all_scenarios(tel)
    report = tel.shutdown()
    assert all(e["lost"] == 0 for e in report.exporters.values())
    emitted = {(f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}"): s for s in mem.get_finished_spans()}
    loaded = load_file(path)
    df = loaded.spans.set_index(["trace_id", "span_id"])
    assert len(df) == len(emitted) and not loaded.quality.issues
    for key, s in emitted.items():
        row = df.loc[key]
        assert row["name"] == s.name and row["kind"] == s.kind.value + 1
        assert row["start_ns"] == s.start_time and row["end_ns"] == s.end_time
        parent = f"{s.parent.span_id:016x}" if s.parent else None
        assert (row["parent_span_id"] if pd.notna(row["parent_span_id"]) else None) == parent
        assert row["status_code"] == s.status.status_code.value
        for k, v in s.attributes.items():
            got = row[k]
            if isinstance(v, tuple):
                assert list(got) == list(v), k
            elif isinstance(v, float):
                assert got == pytest.approx(v), k
            else:
                assert got == v, k
        present = {k for k in df.columns if k not in ("parent_span_id", "status_message")
                   and not pd.api.types.is_list_like(row[k]) and pd.notna(row[k]) and "." in k}
        assert present == set(s.attributes) - {k for k, v in s.attributes.items() if isinstance(v, tuple)}
    ev = loaded.events
    assert len(ev) == sum(len(s.events) for s in emitted.values())
    links = loaded.links
    assert len(links) == sum(len(s.links) for s in emitted.values()) > 0


def test_demo_writes_contract_typed_otlp_json(tmp_path):
    path = tmp_path / "demo.jsonl"
    result = CliRunner().invoke(cli, ["demo", "--traces-out", str(path)])
    assert result.exit_code == 0, result.output
    assert str(path) in result.output
    assert os.stat(path).st_mode & 0o777 == 0o600
    line = json.loads(path.read_text().splitlines()[0])
    span = line["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert re.fullmatch(r"[0-9a-f]{32}", span["traceId"]) and isinstance(span["startTimeUnixNano"], str)
    assert isinstance(span["kind"], int)
    spans = check(load_file(path)).spans
    assert not [i for i in check(load_file(path)).quality.issues if i.kind == "wrong_type"]
    used = [k for k in spans.columns if k in sc.ATTRIBUTE_TYPES]
    assert len(used) > 40
    for k in used:
        want = sc.ATTRIBUTE_TYPES[k]
        if want == "string[]":
            assert str(spans[k].dtype).startswith("list<item: string>"), k
        else:
            assert str(spans[k].dtype) == _DTYPE[want], (k, spans[k].dtype)


CONTENT = ["refund the damaged item", "Refund issued and confirmation sent", "Returns are accepted",
           "ord_1001", "amount_cents", "order_status", "A person from our team"]
SECRETS = ["sk-live-4f9a8b7c6d5e4f3a2b1c0d9e", "ana.lopez@example.com", "4111 1111 1111 1111", "hunter2-pass"]


def _secret_model():
    """Passes secrets in tool arguments, then finishes."""
    def fn(view, i):
        if i == 1:
            return {"type": "tool", "name": "get_order",
                    "args": {"order_id": "ord_1001", "api_key": SECRETS[0], "note": f"mail {SECRETS[1]}",
                             "card": SECRETS[2], "password": SECRETS[3]}}
        return {"type": "final", "outcome": "completed", "text": f"done, card {SECRETS[2]} charged"}
    return FunctionModel(fn)


def _write(tmp_path, capture):
    path = tmp_path / f"{capture}.jsonl"
    tel = configure(traces_out=path, capture=capture)
    _all_scenarios(tel)
    go(_secret_model(), observers=[tel.observer()])
    tel.shutdown()
    return path.read_text()


def test_no_content_by_default(tmp_path, monkeypatch):
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    text = _write(tmp_path, None)
    for needle in CONTENT + SECRETS:
        assert needle not in text, needle
    for key in sc.CONTENT_KEYS:
        assert key not in text


@pytest.mark.parametrize("capture", ["SPAN_ONLY", "EVENT_ONLY", "SPAN_AND_EVENT"])
def test_capture_on_records_content_minus_secrets(tmp_path, capture):
    text = _write(tmp_path, capture)
    for needle in CONTENT:
        assert needle in text, needle
    for secret in SECRETS:
        assert secret not in text, secret
    assert "[REDACTED]" in text
    if capture == "EVENT_ONLY":
        assert sc.EVENT_INFERENCE_DETAILS in text and '"key":"gen_ai.tool.call.arguments","value"' in text


def test_invalid_capture_value_warns_and_means_no_content(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "yes please")
    text = _write(tmp_path, None)
    assert "not one of NO_CONTENT" in caplog.text
    assert "refund the damaged item" not in text


def test_environment_secrets_never_appear(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_SERVICE_API_KEY", "zz-top-secret-value-123")
    path = tmp_path / "env.jsonl"
    tel = configure(traces_out=path, capture="SPAN_AND_EVENT")
    go(FunctionModel(lambda v, i: {"type": "final", "outcome": "completed",
                                   "text": "key is zz-top-secret-value-123"}), observers=[tel.observer()])
    tel.shutdown()
    text = path.read_text()
    assert "zz-top-secret-value-123" not in text and "[REDACTED]" in text
