"""Privacy through the stack: with DEFAULT settings (content capture off) nothing the agent said or did leaves as
data, and no secret of the exporting process's environment leaves at all.

One export under a service.name of its own: every seed scenario (SEED000, SEED004) and a simulated population,
over OTLP/gRPC through the real collector. The content of those runs is gathered from the kernel's own events
(goals, model replies and final texts, tool arguments and results, their keys and values) and, with a fixed list
(the goal "refund the damaged item", "Refund issued and confirmation sent", "Returns are accepted", "ord_1001",
"amount_cents", "order_status", every goal of the population...), searched as bytes in everything the stack
exposes about the service:

- the collector's file archive (the resourceSpans of our service);
- Jaeger's answers: API v3 (search, each trace, services, operations) and the legacy API (search, each trace,
  services, operations);
- Prometheus: every series of the service (span metrics by service_name, SDK metrics by exported_job,
  target_info) with all their label names and values, and the label values of every label name restricted to
  those series; the collector's prometheus exporter page, its lines of our service.

Secrets are put in the environment of the exporting process before ``configure``: an API key in
MY_SERVICE_API_KEY, a password in DATABASE_PASSWORD, and a header value in OTEL_EXPORTER_OTLP_HEADERS (which the
OTLP exporter sends as gRPC metadata to the collector). They must appear nowhere: not in the whole archive (every
service), not in any Jaeger answer, not in any Prometheus label value, not on the collector's metrics page.
"""
from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from stackutil import SentIds, get, prom_query, rfc3339, unique_service, wait_for

from agentobs.domain.population import simulate
from agentobs.domain.scenarios import SEED000, SEED004
from agentobs.kernel.events import EventLog, ModelCalled, ModelReturned, ToolCalled, ToolReturned
from agentobs.telemetry import configure
from agentobs.telemetry.content import Capture

pytestmark = pytest.mark.stack

MIN = 60 * 10**9
POPULATION = 150
FIXED = ["refund the damaged item", "Refund issued and confirmation sent", "Returns are accepted", "ord_1001",
         "amount_cents", "order_status"]
# strings of the runs that are also legitimate telemetry, not content: tool names (gen_ai.tool.name), result
# statuses and error codes (agentobs.tool.result.status, error.type), outcomes (agentobs.outcome), the agent
# name, and the reply protocol's own words (a plan step is agentobs.tool.plan_step)
NOT_CONTENT = {"get_order", "search_policy", "issue_refund", "send_status_email", "escalate_to_human",
               "needs_approval", "tool_unavailable", "approval_denied", "invalid_state", "invalid_arguments",
               "not_found", "unavailable", "support-agent", "completed", "cannot_complete", "escalated",
               "plan_step", "depends_on"}


@dataclass
class Export:
    service: str
    sent: SentIds
    needles: list[str]          # content: must not appear in our service's data
    secrets: list[str]          # must not appear anywhere
    t_min: int
    t_max: int


def _strings(x: Any, out: set[str]) -> None:
    """Every key and string value inside a JSON-like value."""
    if isinstance(x, str):
        out.add(x)
    elif isinstance(x, dict):
        for k, v in x.items():
            out.add(str(k))
            _strings(v, out)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _strings(v, out)


def _content(log: EventLog) -> set[str]:
    """The content of the runs: goals, model replies, tool arguments and results (keys and string values)."""
    out: set[str] = set()
    for e in log.events:
        if isinstance(e, ModelCalled):
            out.add(json.loads(e.view)["goal"])              # the goal, as the model is shown it
        elif isinstance(e, ModelReturned):
            _strings(e.reply, out)
        elif isinstance(e, ToolCalled):
            _strings(e.args, out)
        elif isinstance(e, ToolReturned):
            _strings(e.result, out)
    return out


def _needles(content: set[str]) -> list[str]:
    """Distinctive pieces of content: strings with a space, or keys/values with an underscore, 8+ characters;
    long texts by their first 40 characters."""
    picked = set()
    for s in content:
        s = s.strip()
        if s in NOT_CONTENT or len(s) < 8:
            continue
        if " " in s or "_" in s:
            picked.add(s[:40])
    return sorted(picked)


@pytest.fixture(scope="module")
def exported(stack) -> Export:
    service = unique_service("privacy")
    token = uuid.uuid4().hex[:12]
    secrets = [f"zz-top-secret-{token}", f"hunter2-{token}", f"zz-header-secret-{token}"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MY_SERVICE_API_KEY", secrets[0])
        mp.setenv("DATABASE_PASSWORD", secrets[1])
        mp.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"x-api-key={secrets[2]}")
        for k in ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "AGENTOBS_REDACT_KEYS",
                  "AGENTOBS_REDACT_PATTERNS", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"):
            mp.delenv(k, raising=False)
        sent = SentIds()
        tel = configure(otlp_endpoint=stack.otlp_grpc, otlp_protocol="grpc", service_name=service, traces_out=None,
                        extra_exporters=[("sent", sent)])
        assert tel.capture is Capture.NO_CONTENT                 # the default
        log = EventLog()
        epoch = time.time_ns() - 90 * MIN
        for i, run in enumerate({**SEED000, **SEED004}.values()):
            run([tel.observer(), log], epoch + i * MIN // 2)
        # the population's own schedule: an hour of runs that ended six hours ago (resumes up to 4 h later)
        records = simulate(POPULATION, seed=77, observers=lambda: [tel.observer(), log])
        report = tel.shutdown()
    assert all(e["lost"] == 0 for e in report.exporters.values()), report.exporters
    content = _content(log)
    for needle in FIXED:                          # the fixed needles really are content of these runs
        assert any(needle in c for c in content), needle
    goals = {f"refund the damaged item on order ord_{10000 + r.index}" for r in records}
    assert goals <= content
    needles = sorted(set(FIXED) | set(_needles(content)) | goals)
    return Export(service, sent, needles, secrets, time.time_ns() - 7 * 60 * MIN, time.time_ns() + 5 * MIN)


def _hits(text: str, needles: list[str]) -> list[str]:
    out = []
    for n in needles:
        i = text.find(n)
        if i >= 0:
            out.append(f"{n!r} in ...{text[max(0, i - 120):i + len(n) + 60]}...")
    return out


def _clean(source: str, text: str, exp: Export, everything: bool = False) -> None:
    """No content (in our service's text) and no secret. ``everything``: ``text`` also holds other services'
    data (only the secrets are looked for)."""
    hits = _hits(text, exp.secrets) + ([] if everything else _hits(text, exp.needles))
    assert not hits, f"{source}: {len(hits)} leaks, e.g.\n" + "\n".join(hits[:5])


def _text(url: str, params: Any = None) -> str:
    status, body = get(url, params, timeout=30)
    assert status in (200, 404), (url, status, body[:300])
    return body.decode("utf-8", "replace")


# -- the collector's archive -------------------------------------------------------------------------------------


def test_the_archive_holds_no_content_and_no_secret(stack, exported):
    exp = exported

    def ours():
        mine, count = [], 0
        for path in sorted(stack.archive.parent.glob(f"{stack.archive.stem}*{stack.archive.suffix}")):
            with open(path, "rb") as f:
                for line in f:
                    if exp.service.encode() not in line:
                        continue
                    for rs in json.loads(line).get("resourceSpans") or []:
                        if exp.service in json.dumps((rs.get("resource") or {}).get("attributes")):
                            mine.append(rs)
                            count += sum(len(ss.get("spans") or []) for ss in rs.get("scopeSpans") or [])
        return mine if count >= exp.sent.count else None
    mine = wait_for(ours, f"the archive to hold the {exp.sent.count} spans of {exp.service}", timeout=60)
    text = json.dumps(mine, ensure_ascii=False)
    assert "invoke_agent" in text and all(t in text for t in exp.sent.traces)     # we are looking at the right data
    _clean("archive (our service)", text, exp)
    for path in sorted(stack.archive.parent.glob(f"{stack.archive.stem}*{stack.archive.suffix}")):
        _clean(f"archive {path.name} (every service)", path.read_bytes().decode("utf-8", "replace"), exp,
               everything=True)
    print(f"\nprivacy: {exp.sent.count} spans, {len(exp.sent.traces)} traces, {len(exp.needles)} content needles, "
          f"{len(exp.secrets)} secrets; archive: {len(text):,} bytes of our service checked")


# -- Jaeger ------------------------------------------------------------------------------------------------------


def test_jaeger_answers_hold_no_content_and_no_secret(stack, exported):
    exp, base = exported, stack.jaeger
    window = {"query.service_name": exp.service, "query.start_time_min": rfc3339(exp.t_min),
              "query.start_time_max": rfc3339(exp.t_max), "query.num_traces": 2000}

    def v3_search_text():
        text = _text(f"{base}/api/v3/traces", window)
        return text if all(t in text.lower() for t in exp.sent.traces) else None
    answers = {"v3 search": wait_for(v3_search_text, "Jaeger to hold every trace", timeout=60)}
    answers["v3 services"] = _text(f"{base}/api/v3/services")
    answers["v3 operations"] = _text(f"{base}/api/v3/operations", {"service": exp.service})
    answers["legacy search"] = _text(f"{base}/api/traces", {"service": exp.service, "start": exp.t_min // 1000,
                                                            "end": exp.t_max // 1000, "limit": 2000})
    answers["legacy services"] = _text(f"{base}/api/services")
    answers["legacy operations"] = _text(f"{base}/api/services/{exp.service}/operations")
    assert exp.service in answers["v3 services"] and "invoke_agent" in answers["v3 operations"]
    assert sum(1 for t in exp.sent.traces if t.lstrip("0") in answers["legacy search"]) == len(exp.sent.traces)
    for name, text in answers.items():
        _clean(f"Jaeger {name}", text, exp, everything="services" in name)
    size = sum(map(len, answers.values()))
    for tid in exp.sent.traces:
        v3 = _text(f"{base}/api/v3/traces/{tid}")
        legacy = _text(f"{base}/api/traces/{tid}")
        assert tid in v3 and exp.service in legacy, tid
        _clean(f"Jaeger v3 trace {tid}", v3, exp)
        _clean(f"Jaeger legacy trace {tid}", legacy, exp)
        size += len(v3) + len(legacy)
    print(f"\nprivacy: Jaeger: {size:,} bytes of answers checked ({len(exp.sent.traces)} traces by id, twice)")


# -- Prometheus --------------------------------------------------------------------------------------------------


def test_prometheus_series_and_label_values_hold_no_content_and_no_secret(stack, exported):
    exp, prom = exported, stack.prometheus
    sel = [f'{{service_name="{exp.service}"}}', f'{{exported_job="{exp.service}"}}']
    wait_for(lambda: float((prom_query(prom, f'sum(traces_span_metrics_calls_total{sel[0]})') or
                            [{"value": [0, "0"]}])[0]["value"][1]) == exp.sent.count,
             "the span metrics of every span sent", timeout=60)
    wait_for(lambda: prom_query(prom, f'agentobs_runs_total{sel[1]}') and prom_query(prom, f'target_info{sel[1]}'),
             "the SDK metrics and target_info of the service", timeout=60)
    now = time.time()
    match = [("match[]", s) for s in sel] + [("start", f"{now - 3600:.0f}"), ("end", f"{now + 60:.0f}")]
    series_text = _text(f"{prom}/api/v1/series", match)
    series = json.loads(series_text)["data"]
    assert len(series) > 20 and {s["__name__"] for s in series} >= {"traces_span_metrics_calls_total",
                                                                      "agentobs_runs_total", "target_info"}
    _clean("Prometheus series of the service", series_text, exp)
    names = json.loads(_text(f"{prom}/api/v1/labels", match))["data"]
    assert {"service_name", "exported_job", "span_name", "gen_ai_tool_name"} <= set(names)
    checked = len(series_text)
    for name in names:
        mine = _text(f"{prom}/api/v1/label/{name}/values", match)
        _clean(f"Prometheus label {name} (our series)", mine, exp)
        everyone = _text(f"{prom}/api/v1/label/{name}/values")
        _clean(f"Prometheus label {name} (every series)", everyone, exp, everything=True)
        checked += len(mine) + len(everyone)
    page = _text(stack.collector_metrics)
    _clean("collector prometheus exporter (every line)", page, exp, everything=True)
    ours = "\n".join(ln for ln in page.splitlines() if exp.service in ln)
    assert ours
    _clean("collector prometheus exporter (our lines)", ours, exp)
    if stack.collector_telemetry:
        _clean("collector telemetry", _text(stack.collector_telemetry), exp, everything=True)
    print(f"\nprivacy: Prometheus: {len(series)} series, {len(names)} label names, {checked:,} bytes checked; "
          f"collector metrics page {len(page):,} bytes")


def test_the_needles_would_be_found(exported):
    """The search works: the content needles are real strings of the runs, found when present."""
    exp = exported
    assert len(exp.needles) >= len(FIXED) + POPULATION
    sample = json.dumps({"gen_ai.tool.call.arguments": '{"order_id": "ord_1001", "amount_cents": 3000}'})
    assert _hits(sample, exp.needles)
    assert re.search(r"zz-top-secret-[0-9a-f]{12}", exp.secrets[0])


# -- text the model wrote, where it chooses ids and names (issue 10, point 3) ------------------------------------


def test_model_chosen_ids_and_names_never_leave_with_default_settings(stack):
    """The model puts a unique marker in its plan step ids, a rejected plan (whose problems quote them), an unknown
    tool name, arguments and its final answer. None of these are secrets the collector would recognise: only the
    in-process stand-ins (step-<n>, problem codes) keep them out of the archive, Jaeger and Prometheus."""
    from agentobs import FunctionModel
    from agentobs.domain.scenarios import go
    from agentobs.kernel.clock import SimClock
    marker = f"zzmodel{uuid.uuid4().hex[:10]}"
    step_a, step_b = f"{marker}-a", f"{marker}-b"
    script = [
        {"type": "plan", "steps": [{"id": step_a, "tool": f"{marker}_tool"}]},
        {"type": "plan", "steps": [{"id": step_a, "tool": "get_order"},
                                   {"id": step_b, "tool": "send_status_email", "depends_on": [step_a]}]},
        {"type": "tool", "name": "get_order", "args": {"order_id": "ord_1001", "note": marker}, "plan_step": step_a},
        {"type": "tool", "name": f"{marker}_tool", "args": {}, "plan_step": step_b},
        {"type": "tool", "name": "send_status_email", "args": {"order_id": "ord_1001"}, "plan_step": step_b},
        {"type": "final", "outcome": "completed", "text": f"done {marker}"},
    ]
    service = unique_service("privacy-model-text")
    with pytest.MonkeyPatch.context() as mp:
        for k in ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "AGENTOBS_REDACT_KEYS",
                  "AGENTOBS_REDACT_PATTERNS"):
            mp.delenv(k, raising=False)
        sent = SentIds()
        tel = configure(otlp_endpoint=stack.otlp_grpc, otlp_protocol="grpc", service_name=service, traces_out=None,
                        extra_exporters=[("sent", sent)])
        state, _, _ = go(FunctionModel(lambda view, i: script[i - 1]), observers=[tel.observer()],
                         clock=SimClock(time.time_ns() - 5 * MIN))
        report = tel.shutdown()
    assert state.stop == "done" and all(e["lost"] == 0 for e in report.exporters.values())
    (trace_id,) = sent.traces

    def archived():
        lines = [ln for ln in stack.archive.read_text().splitlines() if trace_id in ln]
        n = sum(ln.count('"spanId"') for ln in lines)
        return lines if n >= sent.count else None
    text = "\n".join(wait_for(archived, "the run in the archive", timeout=60))
    assert "step-1" in text and "unknown_tool" in text                 # the stand-ins are there ...
    assert marker not in text                                            # ... and the model's text is not
    v3 = wait_for(lambda: (lambda t: t if trace_id in t else None)(_text(f"{stack.jaeger}/api/v3/traces/{trace_id}")),
                  "the run in Jaeger", timeout=60)
    assert marker not in v3 and marker not in _text(f"{stack.jaeger}/api/traces/{trace_id}")
    wait_for(lambda: prom_query(stack.prometheus, f'traces_span_metrics_calls_total{{service_name="{service}"}}'),
             "the run's span metrics", timeout=60)
    match = [("match[]", f'{{service_name="{service}"}}'), ("match[]", f'{{exported_job="{service}"}}')]
    assert marker not in _text(f"{stack.prometheus}/api/v1/series", match)
