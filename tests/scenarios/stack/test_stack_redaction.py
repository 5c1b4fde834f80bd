"""Secrets never leave the collector: its redaction rules, proven with an application that masks nothing.

The run captures content (SPAN_ONLY) with an in-process Redactor that masks nothing, so the secrets really are
sent (the SDK's in-memory copy holds them); Jaeger (API v3 and legacy), the collector's archive and Prometheus
must not, while service.name and the contract's keys arrive intact.
"""
from __future__ import annotations

import json
import time

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from stackutil import (
    arrays_as_json_text,
    from_memory,
    from_otlp,
    get,
    get_json,
    legacy_search,
    legacy_tags,
    prom_query,
    unique_service,
    v3_search,
    v3_trace,
    wait_for,
    without_jaeger_warnings,
)

from agentobs import FunctionModel
from agentobs.contract import semconv as sc
from agentobs.domain.scenarios import go
from agentobs.kernel.clock import SimClock
from agentobs.telemetry import configure
from agentobs.telemetry.content import Capture, Redactor
from agentobs.telemetry.observer import OTelObserver

pytestmark = pytest.mark.stack

API_KEY = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e"
EMAIL = "ana.lopez@example.com"
CARD = "4111 1111 1111 1111"
SECRETS = [API_KEY, EMAIL, CARD, "4111111111111111", "ana.lopez"]
MASK = "****"


def secret_model() -> FunctionModel:
    """Puts the secrets in a tool call's arguments (and its final answer), then finishes."""
    def fn(view, i):
        if i == 1:
            return {"type": "tool", "name": "get_order",
                    "args": {"order_id": "ord_1001", "api_key": API_KEY, "note": f"mail {EMAIL}", "card": CARD}}
        return {"type": "final", "outcome": "completed", "text": f"done, card {CARD} charged, receipt to {EMAIL}"}
    return FunctionModel(fn)


@pytest.fixture(scope="module")
def secret_run(stack):
    service = unique_service("secrets")
    memory = InMemorySpanExporter()
    tel = configure(otlp_endpoint=stack.otlp_grpc, otlp_protocol="grpc", service_name=service, traces_out=None,
                    capture="SPAN_ONLY", extra_exporters=[("memory", memory)])
    nothing = Redactor([], env={}, patterns=False)
    observer = OTelObserver(tel.tracer, capture=Capture.SPAN_ONLY, redactor=nothing, instruments=tel.instruments)
    epoch = time.time_ns() - 10 * 60 * 10**9
    state, _, _ = go(secret_model(), observers=[observer], clock=SimClock(epoch))
    assert state.stop == "done"
    report = tel.shutdown()
    assert all(e["lost"] == 0 for e in report.exporters.values()), report.exporters
    spans = from_memory(memory.get_finished_spans())
    (trace_id,) = {s.trace_id for s in spans.values()}
    # the application really sent them: the in-memory copy holds every secret in clear
    sent = json.dumps([s.attributes for s in spans.values()])
    for secret in (API_KEY, EMAIL, CARD):
        assert secret in sent, secret
    return service, trace_id, spans, epoch


def _masked_and_kept(got, want):
    """Every attribute that held a secret now holds **** instead; every other value is unchanged."""
    masked = 0
    for sid, w in want.items():
        g = got[sid]
        assert (g.name, g.parent, g.kind, g.start_ns, g.end_ns, g.status) == \
            (w.name, w.parent, w.kind, w.start_ns, w.end_ns, w.status)
        for key, value in w.attributes.items():
            assert key in g.attributes, (w.name, key)                      # no key is deleted
            text = json.dumps(value[1])
            if any(s in text for s in (API_KEY, EMAIL, CARD)):
                assert MASK in g.attributes[key][1], (w.name, key, g.attributes[key])
                masked += 1
            else:
                assert g.attributes[key] == value, (w.name, key)
        extra = set(g.attributes) - set(w.attributes)
        assert extra <= {"redaction.masked.keys", "redaction.masked.count"}, extra
        if any(MASK in json.dumps(v[1]) for v in g.attributes.values()):
            assert "redaction.masked.keys" in g.attributes, g.name              # summary: debug says what it masked
    return masked


def test_secrets_are_masked_in_jaeger_api_v3(stack, secret_run):
    service, trace_id, spans, epoch = secret_run
    rs = wait_for(lambda: (lambda r: r if len(from_otlp(r)[0]) >= len(spans) else None)(
                      v3_trace(stack.jaeger, trace_id)),
                  "the trace in Jaeger")
    text = json.dumps(rs)
    for secret in SECRETS:
        assert secret not in text, secret
    got, resources = from_otlp(rs)
    got = without_jaeger_warnings(got)
    assert {r["service.name"] for r in resources} == {("string", service)}
    assert _masked_and_kept(got, arrays_as_json_text(spans)) >= 3       # Badger keeps arrays as JSON text
    tool = next(s for s in got.values() if s.name == "execute_tool get_order")
    args = json.loads(tool.attributes[sc.TOOL_CALL_ARGUMENTS][1])     # masking inside a JSON string keeps it JSON
    assert args["api_key"] == MASK and args["card"] == MASK and args["note"] == f"mail {MASK}"
    assert args["order_id"] == "ord_1001"
    for key in (sc.OPERATION_NAME, sc.TOOL_NAME, sc.TOOL_CALL_ID, sc.TOOL_ARGS_DIGEST, sc.TOOL_RESULT_STATUS):
        assert key in tool.attributes
    root = next(s for s in got.values() if s.parent is None)
    assert root.attributes[sc.STOP_REASON] == ("string", "done")
    assert root.attributes[sc.AGENT_NAME] == ("string", "support-agent")
    # the search by service finds it too, masked the same way
    found = v3_search(stack.jaeger, service, epoch - 60 * 10**9, time.time_ns() + 60 * 10**9)
    assert found and not any(secret in json.dumps(found) for secret in SECRETS)


def test_secrets_are_masked_in_jaeger_legacy_api(stack, secret_run):
    service, trace_id, _spans, epoch = secret_run
    data = wait_for(lambda: legacy_search(stack.jaeger, service, epoch - 60 * 10**9, time.time_ns() + 60 * 10**9),
                    "the trace in the legacy API")
    text = json.dumps(data)
    for secret in SECRETS:
        assert secret not in text, secret
    status, body = get(f"{stack.jaeger}/api/traces/{trace_id}")
    assert status == 200 and not any(s.encode() in body for s in SECRETS)
    (trace,) = data
    assert {p["serviceName"] for p in trace["processes"].values()} == {service}
    root = next(s for s in trace["spans"] if not any(r["refType"] == "CHILD_OF" for r in s["references"]))
    assert legacy_tags(root["tags"])[sc.STOP_REASON] == ("string", "done")
    assert any(MASK in json.dumps(s["tags"]) for s in trace["spans"])


def test_secrets_are_masked_in_the_collector_archive(stack, secret_run):
    service, trace_id, spans, _ = secret_run

    def ours():
        if not stack.archive.exists():
            return None
        lines = [ln for ln in stack.archive.read_text().splitlines() if trace_id in ln]
        n = sum(len(ss.get("spans", [])) for ln in lines for rs in json.loads(ln)["resourceSpans"]
                for ss in rs.get("scopeSpans", []) if any(s["traceId"] == trace_id for s in ss.get("spans", [])))
        return lines if n >= len(spans) else None
    lines = wait_for(ours, "the trace in the collector archive")
    archive = stack.archive.read_text()              # the whole archive: no test ever leaks these values
    for secret in SECRETS:
        assert secret not in archive, secret
    got: dict = {}
    for ln in lines:
        part, resources = from_otlp(json.loads(ln)["resourceSpans"])
        got.update({k: v for k, v in part.items() if v.trace_id == trace_id})
        assert all(r["service.name"] == ("string", service) for r in resources)
    assert _masked_and_kept(got, spans) >= 3


def test_secrets_never_reach_prometheus(stack, secret_run):
    service, _, _spans, _ = secret_run
    sel = [f'{{exported_job="{service}"}}', f'{{service_name="{service}"}}']
    wait_for(lambda: prom_query(stack.prometheus, f'agentobs_runs_total{{exported_job="{service}"}}'),
             "the run's metrics in Prometheus")
    wait_for(lambda: prom_query(stack.prometheus, f'traces_span_metrics_calls_total{{service_name="{service}"}}'),
             "the run's span metrics in Prometheus")
    status, series = get_json(f"{stack.prometheus}/api/v1/series", [("match[]", m) for m in sel])
    assert status == 200 and series["data"], series
    text = json.dumps(series)
    for secret in SECRETS:
        assert secret not in text, secret
    # every label name and every value Prometheus holds, from every service
    status, names = get_json(f"{stack.prometheus}/api/v1/labels")
    assert status == 200
    for name in names["data"]:
        status, values = get_json(f"{stack.prometheus}/api/v1/label/{name}/values")
        assert status == 200
        for secret in SECRETS:
            assert not any(secret in v for v in values["data"]), (name, secret)
    # the collector's own exporter page too
    status, page = get(stack.env["AGENTOBS_COLLECTOR_PROMETHEUS_URL"])
    assert status == 200 and not any(s.encode() in page for s in SECRETS)
    # service.name survived into the series
    assert {s["exported_job"] for s in series["data"] if "exported_job" in s} == {service}
