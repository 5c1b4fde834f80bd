#!/usr/bin/env python3
"""Builds the agentobs Grafana dashboards (dashboards/json/*.json) from this file.

    .venv/bin/python dashboards/generate.py          # rewrite the JSON
    .venv/bin/python dashboards/generate.py --check  # exit 1 when the committed JSON differs

Plain Python and the standard library (no Grafana SDK needed); tests/scenarios/project/test_dashboards.py checks that
the committed JSON is exactly what this file produces, and tests/scenarios/stack/test_stack_dashboards.py runs every panel's query
against the real Prometheus (and the Jaeger panel's search against the real Jaeger) after a simulated population.

Metric names are those Prometheus holds after the collector's prometheus exporter (dots -> underscores, unit
and _total suffixes) and a scrape by prometheus/prometheus.yml: the SDK metrics of the telemetry contract carry
``exported_job`` = service.name of the sender; the spanmetrics connector's series carry ``service_name``.

Template variables: ``$service`` (one service.name), ``$agent`` (gen_ai.agent.name, multi, All = ``.*``),
``$stop_reason`` (for the Jaeger panel) and ``$jaeger_url`` (where the browser reaches Jaeger's UI, for the data
links). ``$__rate_interval`` and ``$__range``
are Grafana's.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "json"

# The metrics of the telemetry contract (agentobs/contract/semconv.py) as Prometheus names them after the
# collector's prometheus exporter (UnderscoreEscapingWithSuffixes: "s" -> _seconds, "{...}" units dropped,
# counters get _total; histograms add _bucket, _sum, _count). Observed on the real stack; the stack tests check
# every one of them exists for a test service.
PROMETHEUS_NAMES = {
    "gen_ai.client.token.usage": "gen_ai_client_token_usage",                    # histogram, {token}
    "gen_ai.client.operation.duration": "gen_ai_client_operation_duration_seconds",  # histogram, s
    "gen_ai.invoke_agent.duration": "gen_ai_invoke_agent_duration_seconds",      # histogram, s
    "gen_ai.invoke_agent.inference_calls": "gen_ai_invoke_agent_inference_calls",  # histogram, {inference_call}
    "gen_ai.invoke_agent.tool_calls": "gen_ai_invoke_agent_tool_calls",          # histogram, {tool_call}
    "gen_ai.execute_tool.duration": "gen_ai_execute_tool_duration_seconds",      # histogram, s
    "agentobs.runs": "agentobs_runs_total",                                      # counter, {run}
    "agentobs.run.tokens": "agentobs_run_tokens",                                # histogram, {token}
    "agentobs.run.cost_usd": "agentobs_run_cost_usd",                            # histogram, {USD}
    "agentobs.budget.utilisation": "agentobs_budget_utilisation",                # histogram, 1
}
HISTOGRAMS = {v for k, v in PROMETHEUS_NAMES.items() if k != "agentobs.runs"}
# the collector's span_metrics connector (namespace traces.span.metrics, histogram unit ms)
SPANMETRICS_NAMES = ("traces_span_metrics_calls_total", "traces_span_metrics_duration_milliseconds")

PROM = {"type": "prometheus", "uid": "agentobs-prometheus"}
JAEGER = {"type": "jaeger", "uid": "agentobs-jaeger"}
JAEGER_URL_DEFAULT = "http://127.0.0.1:16686"      # docker-compose.yml publishes Jaeger's UI here

SDK = 'exported_job="$service", gen_ai_agent_name=~"$agent"'      # SDK metrics (OTLP from the application)
SDK_SVC = 'exported_job="$service"'
SPANS = 'service_name="$service"'                                   # spanmetrics series
RI = "$__rate_interval"


def runs(extra: str = "") -> str:
    return f"agentobs_runs_total{{{SDK}{extra}}}"


def quantile(q: float, metric: str, sel: str, by: str = "") -> str:
    group = f"le, {by}" if by else "le"
    return f"histogram_quantile({q}, sum by ({group}) (rate({metric}_bucket{{{sel}}}[{RI}])))"


def p50_p95(metric: str, sel: str = "", by: str = "gen_ai_agent_name") -> list[dict[str, Any]]:
    """Two targets: the median and the p95 of a histogram (an SDK one by default) per ``by``."""
    return [target(quantile(q, metric, sel or SDK, by), f"p{int(q * 100)} {{{{{by}}}}}", ref)
            for q, ref in ((0.5, "A"), (0.95, "B"))]


def mean(metric: str, sel: str, by: str = "") -> str:
    g = f" by ({by})" if by else ""
    return f"sum{g} (rate({metric}_sum{{{sel}}}[{RI}])) / sum{g} (rate({metric}_count{{{sel}}}[{RI}]))"


def ratio_or_zero(part: str, whole: str, by: str) -> str:
    """part/whole per group, 0 (not "no data") where the part has no series: error rates of healthy groups."""
    p = f"sum by ({by}) (rate({part}[{RI}]))"
    w = f"sum by ({by}) (rate({whole}[{RI}]))"
    return f"({p} or {w} * 0) / {w}"


# -- Jaeger data links --------------------------------------------------------------------------------------
# The Jaeger UI's search page: service, tags as JSON, a custom window in microseconds (Grafana's ${__from} and
# ${__to} are milliseconds). Label values are percent-encoded (:percentencode) since they sit inside a URL.
# The same query string works on Jaeger's /api/traces (the stack test follows every link there).
def jaeger_search_link(title: str, tags: dict[str, str],
                       service: str = "${__field.labels.exported_job:percentencode}") -> dict:
    tag_json = "%7B" + "%2C".join(f"%22{k}%22%3A%22{v}%22" for k, v in tags.items()) + "%7D"
    url = (f"${{jaeger_url}}/search?service={service}&tags={tag_json}"
           "&lookback=custom&start=${__from}000&end=${__to}000&limit=100")
    return {"title": title, "url": url, "targetBlank": True}


STOP_REASON_LINK = jaeger_search_link("Runs with this stop reason in Jaeger",
                                      {"agentobs.stop_reason": "${__field.labels.agentobs_stop_reason:percentencode}"})
AGENT_LINK = jaeger_search_link("Runs of this agent in Jaeger",
                                {"gen_ai.agent.name": "${__field.labels.gen_ai_agent_name:percentencode}"},
                                service="${service:percentencode}")
# No "error=true" tag: Jaeger 2.13's memory storage compares it as a boolean while the search API passes the
# string "true", so it matches nothing (other storages accept it); contract attributes are searched instead.
TOOL_LINK = jaeger_search_link("Calls of this tool in Jaeger",
                               {"gen_ai.tool.name": "${__field.labels.gen_ai_tool_name:percentencode}"},
                               service="${service:percentencode}")
MODEL_LINK = jaeger_search_link("Calls to this model in Jaeger",
                                {"gen_ai.request.model": "${__field.labels.gen_ai_request_model:percentencode}",
                                 "gen_ai.operation.name": "chat"}, service="${service:percentencode}")


# -- panels -------------------------------------------------------------------------------------------------

class Layout:
    def __init__(self) -> None:
        self.y = 0
        self.x = 0
        self.row_h = 0
        self.next_id = 1

    def place(self, w: int, h: int) -> dict[str, int]:
        if self.x + w > 24:
            self.y += self.row_h
            self.x, self.row_h = 0, 0
        pos = {"x": self.x, "y": self.y, "w": w, "h": h}
        self.x += w
        self.row_h = max(self.row_h, h)
        return pos

    def row(self) -> dict[str, int]:
        if self.x:
            self.y += self.row_h
        pos = {"x": 0, "y": self.y, "w": 24, "h": 1}
        self.y += 1
        self.x, self.row_h = 0, 0
        return pos

    def id(self) -> int:
        i = self.next_id
        self.next_id += 1
        return i


def target(expr: str, legend: str, ref: str, *, instant: bool = False) -> dict[str, Any]:
    t: dict[str, Any] = {"datasource": PROM, "refId": ref, "expr": expr, "legendFormat": legend,
                         "editorMode": "code", "range": not instant, "instant": instant}
    return t


def panel(lay: Layout, kind: str, title: str, description: str, targets: list[dict[str, Any]], *,
          unit: str = "short", w: int = 12, h: int = 8, links: list[dict] | None = None,
          decimals: int | None = None, stack: bool = False, minmax: tuple[float, float] | None = None,
          options: dict | None = None) -> dict[str, Any]:
    defaults: dict[str, Any] = {"unit": unit}
    if decimals is not None:
        defaults["decimals"] = decimals
    if minmax is not None:
        defaults["min"], defaults["max"] = minmax
    if links:
        defaults["links"] = links
    if kind == "timeseries":
        defaults["custom"] = {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 20 if stack else 0,
                              "showPoints": "never", "spanNulls": True,
                              "stacking": {"mode": "normal" if stack else "none", "group": "A"}}
    p: dict[str, Any] = {
        "id": lay.id(), "type": kind, "title": title, "description": description, "datasource": PROM,
        "gridPos": lay.place(w, h), "targets": targets,
        "fieldConfig": {"defaults": defaults, "overrides": []},
    }
    if kind == "timeseries":
        p["options"] = {"legend": {"displayMode": "table", "placement": "right", "calcs": ["lastNotNull", "max"]},
                        "tooltip": {"mode": "multi", "sort": "desc"}}
    elif kind == "stat":
        p["options"] = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                        "colorMode": "value", "graphMode": "none", "textMode": "value_and_name"}
    elif kind == "bargauge":
        p["options"] = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                        "orientation": "horizontal", "displayMode": "gradient", "showUnfilled": True}
    if options:
        p.setdefault("options", {}).update(options)
    return p


def row(lay: Layout, title: str) -> dict[str, Any]:
    return {"id": lay.id(), "type": "row", "title": title, "collapsed": False, "gridPos": lay.row(), "panels": []}


def runs_dashboard() -> dict[str, Any]:
    lay = Layout()
    P: list[dict[str, Any]] = []

    P.append(row(lay, "Runs"))
    P.append(panel(
        lay, "stat", "Runs in range by agent",
        "Finished run segments (agentobs.runs) per agent over the dashboard's time range. A run suspended for "
        "approval and resumed counts twice: once needs_approval, once with its final stop reason.",
        [target(f"sum by (gen_ai_agent_name) (increase({runs()}[$__range]))", "{{gen_ai_agent_name}}", "A",
                instant=True)], w=6, decimals=0, links=[AGENT_LINK]))
    P.append(panel(
        lay, "timeseries", "Runs per minute by agent", "Rate of finished run segments (agentobs.runs).",
        [target(f"sum by (gen_ai_agent_name) (rate({runs()}[{RI}])) * 60", "{{gen_ai_agent_name}}", "A")],
        w=9, unit="short", links=[AGENT_LINK]))
    P.append(panel(
        lay, "timeseries", "Success rate by agent",
        "Share of finished runs that stopped with stop reason done, among runs that did not merely suspend "
        "for approval (needs_approval segments are left out: they resume as a new segment).",
        [target(ratio_or_zero(runs(', agentobs_stop_reason="done"'), runs(', agentobs_stop_reason!="needs_approval"'),
                              "gen_ai_agent_name"), "{{gen_ai_agent_name}}", "A")],
        w=9, unit="percentunit", minmax=(0, 1), links=[AGENT_LINK]))
    P.append(panel(
        lay, "timeseries", "Runs by stop reason",
        "Finished runs per minute, stacked by agentobs.stop_reason; a run aborted by an exception shows as the "
        "exception's type (error.type). Click a series for those runs in Jaeger.",
        [target(f"sum by (exported_job, agentobs_stop_reason, error_type) (rate({runs()}[{RI}])) * 60",
                "{{agentobs_stop_reason}}{{error_type}}", "A")], w=16, h=9, stack=True, links=[STOP_REASON_LINK]))
    P.append(panel(
        lay, "bargauge", "Stop reasons in range",
        "Finished runs per stop reason over the time range (aborted runs: the exception's type). Click a bar "
        "for those runs in Jaeger.",
        [target(f"sum by (exported_job, agentobs_stop_reason, error_type) (increase({runs()}[$__range]))",
                "{{agentobs_stop_reason}}{{error_type}}", "A", instant=True)], w=8, h=9, decimals=0,
        links=[STOP_REASON_LINK]))

    P.append(row(lay, "Steps, tokens and dollars per run"))
    m = "gen_ai_invoke_agent_inference_calls"
    P.append(panel(
        lay, "timeseries", "Steps per run (p50, p95)",
        "Model calls per run (gen_ai.invoke_agent.inference_calls): one step is one model call. Quantiles are "
        "interpolated inside the histogram buckets 1, 2, 4, 8, 16, 32, 64, 128.",
        p50_p95(m), w=8))
    m = "gen_ai_invoke_agent_tool_calls"
    P.append(panel(
        lay, "timeseries", "Tool calls per run (p50, p95)",
        "Tool invocations per run, retries included (gen_ai.invoke_agent.tool_calls).",
        p50_p95(m), w=8))
    m = "gen_ai_invoke_agent_duration_seconds"
    P.append(panel(
        lay, "timeseries", "Active time per run (p50, p95)",
        "Model plus tool time per run segment (gen_ai.invoke_agent.duration); waits for approval are not in it.",
        p50_p95(m), w=8, unit="s"))
    m = "agentobs_run_tokens"
    P.append(panel(
        lay, "timeseries", "Tokens per run (p50, p95, mean)", "Input plus output tokens per run (agentobs.run.tokens).",
        [target(quantile(0.5, m, SDK), "p50", "A"), target(quantile(0.95, m, SDK), "p95", "B"),
         target(mean(m, SDK), "mean", "C")], w=8))
    m = "agentobs_run_cost_usd"
    P.append(panel(
        lay, "timeseries", "Dollars per run (p50, p95, mean)",
        "Priced cost per run in USD (agentobs.run.cost_usd); unpriced model calls count as 0.",
        [target(quantile(0.5, m, SDK), "p50", "A"), target(quantile(0.95, m, SDK), "p95", "B"),
         target(mean(m, SDK), "mean", "C")], w=8, unit="currencyUSD", decimals=4))
    P.append(panel(
        lay, "timeseries", "Spend per hour by agent", "Dollars per hour at the current rate of runs.",
        [target(f"sum by (gen_ai_agent_name) (rate(agentobs_run_cost_usd_sum{{{SDK}}}[{RI}])) * 3600",
                "{{gen_ai_agent_name}}", "A")], w=8, unit="currencyUSD", decimals=4, links=[AGENT_LINK]))

    P.append(row(lay, "Models and tools (span metrics)"))
    calls = "traces_span_metrics_calls_total"
    chat = f'{SPANS}, gen_ai_operation_name="chat"'
    tool = f'{SPANS}, gen_ai_operation_name="execute_tool"'
    dur = "traces_span_metrics_duration_milliseconds"
    P.append(panel(
        lay, "timeseries", "Model call latency by model (p50, p95)",
        "Duration of chat spans, from the collector's span_metrics connector.",
        p50_p95(dur, chat, "gen_ai_request_model"),
        unit="ms", links=[MODEL_LINK]))
    P.append(panel(
        lay, "timeseries", "Model call error rate by model", "Share of chat spans with status ERROR.",
        [target(ratio_or_zero(f'{calls}{{{chat}, status_code="STATUS_CODE_ERROR"}}', f"{calls}{{{chat}}}",
                              "gen_ai_request_model"), "{{gen_ai_request_model}}", "A")],
        unit="percentunit", minmax=(0, 1), links=[MODEL_LINK]))
    P.append(panel(
        lay, "timeseries", "Tool latency by tool (p50, p95)", "Duration of execute_tool spans (retries included).",
        p50_p95(dur, tool, "gen_ai_tool_name"),
        unit="ms", links=[TOOL_LINK]))
    P.append(panel(
        lay, "timeseries", "Tool error rate by tool",
        "Share of execute_tool spans with status ERROR (not_found, invalid_state, tool_unavailable, unknown, ...).",
        [target(ratio_or_zero(f'{calls}{{{tool}, status_code="STATUS_CODE_ERROR"}}', f"{calls}{{{tool}}}",
                              "gen_ai_tool_name"), "{{gen_ai_tool_name}}", "A")],
        unit="percentunit", minmax=(0, 1), links=[TOOL_LINK]))
    P.append(panel(
        lay, "timeseries", "Tokens per second by model and type",
        "gen_ai.client.token.usage: input and output tokens of model calls.",
        [target(f"sum by (gen_ai_request_model, gen_ai_token_type) "
                f"(rate(gen_ai_client_token_usage_sum{{{SDK_SVC}}}[{RI}]))",
                "{{gen_ai_request_model}} {{gen_ai_token_type}}", "A")], w=24, h=7))

    P.append(row(lay, "Budgets"))
    m = "agentobs_budget_utilisation"
    P.append(panel(
        lay, "timeseries", "Budget utilisation per limit (p50, p95)",
        "Share of each budget limit a run consumed (agentobs.budget.utilisation, 1 = the cap was reached).",
        p50_p95(m, by="agentobs_budget_limit"),
        unit="percentunit", minmax=(0, 1)))
    P.append(panel(
        lay, "bargauge", "Runs ending above 95% of a limit",
        "Share of runs whose use of the limit was above 95% of it (bucket le=0.95 of agentobs.budget.utilisation).",
        [target(f"1 - sum by (agentobs_budget_limit) (rate({m}_bucket{{{SDK}, le=\"0.95\"}}[{RI}])) "
                f"/ sum by (agentobs_budget_limit) (rate({m}_count{{{SDK}}}[{RI}]))",
                "{{agentobs_budget_limit}}", "A", instant=True)], unit="percentunit", minmax=(0, 1)))

    P.append(row(lay, "Traces"))
    P.append({
        "id": lay.id(), "type": "table", "title": "Runs that stopped with $stop_reason (Jaeger)",
        "description": "The latest runs of the service whose root span has agentobs.stop_reason = $stop_reason, "
                       "searched in Jaeger; click a trace id to open the trace.",
        "datasource": JAEGER, "gridPos": lay.place(24, 9),
        "targets": [{"datasource": JAEGER, "refId": "A", "queryType": "search", "service": "$service",
                     "operation": "", "tags": "agentobs.stop_reason=$stop_reason", "limit": 20}],
        "fieldConfig": {"defaults": {}, "overrides": []}, "options": {"showHeader": True},
    })

    return {
        "uid": "agentobs-runs", "title": "agentobs: agent runs", "tags": ["agentobs", "genai", "opentelemetry"],
        "description": "Runs, stop reasons, steps, tokens, dollars, model and tool latency and budget use of agents "
                       "instrumented with agentobs (OpenTelemetry GenAI conventions).",
        "editable": True, "graphTooltip": 1, "schemaVersion": 39, "version": 1, "timezone": "browser",
        "time": {"from": "now-1h", "to": "now"}, "refresh": "30s", "fiscalYearStartMonth": 0, "liveNow": False,
        "links": [{"title": "Jaeger", "type": "link", "url": "${jaeger_url}/search?service=${service:percentencode}",
                   "targetBlank": True, "icon": "external link"}],
        "annotations": {"list": []},
        "templating": {"list": [
            {"name": "service", "label": "Service", "type": "query", "datasource": PROM,
             "query": {"query": "label_values(agentobs_runs_total, exported_job)", "refId": "service"},
             "definition": "label_values(agentobs_runs_total, exported_job)", "refresh": 2, "sort": 1,
             "multi": False, "includeAll": False, "current": {}},
            {"name": "agent", "label": "Agent", "type": "query", "datasource": PROM,
             "query": {"query": 'label_values(agentobs_runs_total{exported_job="$service"}, gen_ai_agent_name)',
                       "refId": "agent"},
             "definition": 'label_values(agentobs_runs_total{exported_job="$service"}, gen_ai_agent_name)',
             "refresh": 2, "sort": 1, "multi": True, "includeAll": True, "allValue": ".*",
             "current": {"text": "All", "value": "$__all"}},
            {"name": "stop_reason", "label": "Stop reason (Jaeger panel)", "type": "query", "datasource": PROM,
             "query": {"query": 'label_values(agentobs_runs_total{exported_job="$service"}, agentobs_stop_reason)',
                       "refId": "stop_reason"},
             "definition": 'label_values(agentobs_runs_total{exported_job="$service"}, agentobs_stop_reason)',
             "refresh": 2, "sort": 1, "multi": False, "includeAll": False, "current": {}},
            {"name": "jaeger_url", "label": "Jaeger UI", "type": "textbox", "query": JAEGER_URL_DEFAULT,
             "current": {"text": JAEGER_URL_DEFAULT, "value": JAEGER_URL_DEFAULT}},
        ]},
        "panels": P,
    }


DASHBOARDS = {"agentobs-runs.json": runs_dashboard}


def render() -> dict[str, str]:
    return {name: json.dumps(build(), indent=2, sort_keys=False) + "\n" for name, build in DASHBOARDS.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when dashboards/json differs from this file")
    args = ap.parse_args(argv)
    stale = []
    for name, text in render().items():
        path = OUT / name
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            OUT.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {path.relative_to(HERE.parent)}")
    if stale:
        print(f"out of date: {', '.join(stale)}; run python dashboards/generate.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
