"""The Grafana dashboards against the real stack: after a simulated population exported over OTLP, every panel's
query (template variables filled in as Grafana would) returns data from the real Prometheus, the Jaeger panel's
search and every data link find runs in the real Jaeger, and Jaeger's Monitor tab (SPM) reads the same
Prometheus."""
from __future__ import annotations

import json
import math
import re
import time
import urllib.parse
from typing import Any

import pytest
from stackutil import ROOT, get, get_json, legacy_tags, prom_query, prom_range, unique_service, wait_for

from agentobs.contract import semconv as sc
from agentobs.domain.population import simulate
from agentobs.kernel.events import RunFinished
from agentobs.telemetry import configure

pytestmark = pytest.mark.stack

DASHBOARDS = sorted((ROOT / "dashboards" / "json").glob("*.json"))
MIN_NS = 60 * 10**9
RATE_INTERVAL = "1m"      # what $__rate_interval stands for in these queries
RANGE = "15m"             # $__range: the whole export lies inside it


class Finished:
    """An observer that counts finished run segments (what agentobs.runs counts)."""

    def __init__(self) -> None:
        self.n = 0

    def notify(self, e: Any) -> None:
        if isinstance(e, RunFinished):
            self.n += 1


def _total(prometheus: str, expr: str) -> float:
    r = prom_query(prometheus, expr)
    return float(r[0]["value"][1]) if r else 0.0


@pytest.fixture(scope="module")
def population(stack):
    """300 simulated runs in three batches, each batch in Prometheus before the next one starts, so that every
    rate() over the last minute has increments to see."""
    service = unique_service("population")
    tel = configure(otlp_endpoint=stack.otlp_grpc, otlp_protocol="grpc", service_name=service, traces_out=None)
    finished = Finished()
    start = time.time_ns() - 190 * MIN_NS
    runs_total = f'sum(agentobs_runs_total{{exported_job="{service}"}})'
    for batch, seed in enumerate((101, 102, 103)):
        simulate(100, seed, observers=lambda: [tel.observer(), finished], start_ns=start + batch * 60 * MIN_NS)
        tel.flush()
        wait_for(lambda: _total(stack.prometheus, runs_total) == finished.n,
                 f"batch {batch + 1}: agentobs_runs_total to reach {finished.n}")
        wait_for(lambda: _total(stack.prometheus, f'sum(traces_span_metrics_calls_total{{service_name="{service}", '
                                                  f'gen_ai_operation_name="invoke_agent"}})') == finished.n,
                 f"batch {batch + 1}: span metrics of {finished.n} runs")
    report = tel.shutdown()
    assert all(e["lost"] == 0 for e in report.exporters.values()), report.exporters
    # "now" for the instant queries: every batch is in Prometheus, and rate(...[1m]) still sees their increments
    # however long the tests in between take
    return {"service": service, "runs": finished.n, "t_min": start - MIN_NS, "t_max": time.time_ns() + 60 * MIN_NS,
            "at": time.time()}


# -- the dashboards' queries, as Grafana would send them -----------------------------------------------------

_VAR = re.compile(r"\$\{([^}:]+)(?::([^}]*))?\}|\$(\w+)")


def render(text: str, values: dict[str, str]) -> str:
    """Grafana's interpolation of $name, ${name} and ${name:percentencode} (the formats used here)."""
    def sub(m: re.Match) -> str:
        name, fmt = m.group(1) or m.group(3), m.group(2)
        assert name in values, f"unknown variable ${name} in {text!r}"
        assert fmt in (None, "percentencode"), f"format {fmt} of ${name}"
        return urllib.parse.quote(values[name], safe="") if fmt == "percentencode" else values[name]
    return _VAR.sub(sub, text)


def panels() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in DASHBOARDS:
        dash = json.loads(path.read_text())
        for p in dash["panels"]:
            if p["type"] != "row":
                out.append((f"{path.stem}: {p['title']}", p))
    return out


def values_for(service: str, **extra: str) -> dict[str, str]:
    return {"service": service, "agent": ".*", "__rate_interval": RATE_INTERVAL, "__range": RANGE,
            "__interval": "5s", **extra}


def _finite(result: list[dict[str, Any]]) -> bool:
    for r in result:
        for _, v in r.get("values") or [r["value"]]:
            if math.isfinite(float(v)):
                return True
    return False


def _prom_targets(panel: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for t in panel["targets"] if t.get("datasource", panel["datasource"])["type"] == "prometheus"]


PROM_PANELS = [(t, p) for t, p in panels() if _prom_targets(p)]


@pytest.mark.parametrize("title, panel", PROM_PANELS, ids=[t for t, _ in PROM_PANELS])
def test_every_panel_query_returns_data_from_prometheus(stack, population, title, panel):
    values = values_for(population["service"])
    for t in _prom_targets(panel):
        expr = render(t["expr"], values)
        at = population["at"]
        if t.get("instant"):
            got = wait_for(lambda expr=expr, at=at: (lambda r: r if _finite(r) else None)(
                prom_query(stack.prometheus, expr, at)),
                           f"{title} [{t['refId']}]: {expr}", timeout=20)
        else:
            got = wait_for(lambda expr=expr, at=at: (lambda r: r if _finite(r) else None)(
                prom_range(stack.prometheus, expr, at - 300, at + 5, 5)), f"{title} [{t['refId']}]: {expr}",
                timeout=20)
        assert got


def test_every_template_variable_has_values(stack, population):
    service = population["service"]
    for path in DASHBOARDS:
        for var in json.loads(path.read_text())["templating"]["list"]:
            if var["type"] != "query":
                continue
            q = render(var["query"]["query"], {"service": service})
            m = re.fullmatch(r"label_values\((?:(.+),\s*)?(\w+)\)", q)
            assert m, q
            match, label = m.groups()
            params = [("match[]", match)] if match else []
            status, body = get_json(f"{stack.prometheus}/api/v1/label/{label}/values", params)
            assert status == 200 and body["data"], (var["name"], q, body)
            if var["name"] == "service":
                assert service in body["data"]


def _jaeger_panels() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [(p, t) for _, p in panels() for t in p["targets"]
            if t.get("datasource", p["datasource"])["type"] == "jaeger"]


def test_the_jaeger_panel_finds_runs_in_jaeger(stack, population):
    service = population["service"]
    _status, body = get_json(f"{stack.prometheus}/api/v1/label/agentobs_stop_reason/values",
                            [("match[]", f'agentobs_runs_total{{exported_job="{service}"}}')])
    reasons = sorted(body["data"])
    assert _jaeger_panels()
    for panel, t in _jaeger_panels():
        for reason in (reasons[0], "max_usd"):           # Grafana's default (first value) and a failure
            assert reason in reasons
            tags = dict(kv.split("=", 1) for kv in render(t["tags"], {"stop_reason": reason}).split())
            window = {"limit": t["limit"], "start": population["t_min"] // 1000, "end": population["t_max"] // 1000}
            query = {"service": render(t["service"], {"service": service}), "tags": json.dumps(tags), **window}
            data = wait_for(lambda query=query: (lambda d: d or None)(
                get_json(f"{stack.jaeger}/api/traces", query)[1]["data"]),
                f"{panel['title']}: Jaeger search {tags}")
            assert 0 < len(data) <= t["limit"]
            for trace in data:
                roots = [s for s in trace["spans"] if not any(r["refType"] == "CHILD_OF" for r in s["references"])]
                assert [legacy_tags(r["tags"])[sc.STOP_REASON] for r in roots] == [("string", reason)]


def _links() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    out = []
    for _, p in panels():
        for link in p["fieldConfig"]["defaults"].get("links", []):
            out.append((p, link))
    return out


def _follow(stack, population, url: str) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """A Jaeger UI search URL -> the same search on Jaeger's /api/traces."""
    u = urllib.parse.urlsplit(url)
    assert f"{u.scheme}://{u.netloc}" == stack.jaeger and u.path == "/search", url
    q = dict(urllib.parse.parse_qsl(u.query))
    assert q.pop("lookback") == "custom"
    tags = json.loads(q["tags"])
    status, body = get_json(f"{stack.jaeger}/api/traces", q)
    assert status == 200, (url, body)
    return tags, body["data"]


def test_every_data_link_opens_the_runs_in_jaeger(stack, population):
    service = population["service"]
    assert _links()
    checked = 0
    for panel, link in _links():
        labels = set(re.findall(r"__field\.labels\.(\w+)", link["url"]))
        # a series of the panel's own query gives the values of the clicked field's labels
        expr = render(_prom_targets(panel)[0]["expr"], values_for(service))
        series = [r["metric"] for r in prom_query(stack.prometheus, expr, population["at"])
                  if labels <= set(r["metric"])]
        assert series, f"{panel['title']}: no series with the labels {labels} the link needs"
        for metric in series[:3]:
            values = {"jaeger_url": stack.jaeger, "service": service, "__from": str(population["t_min"] // 10**6),
                      "__to": str(population["t_max"] // 10**6),
                      **{f"__field.labels.{k}": metric[k] for k in labels}}
            tags, data = _follow(stack, population, render(link["url"], values))
            assert data, f"{panel['title']} -> {link['title']}: no traces for {tags}"
            for trace in data:
                spans = [legacy_tags(s["tags"]) for s in trace["spans"]]
                assert any(all(sp.get(k, (None, None))[1] == v for k, v in tags.items()) for sp in spans), tags
            checked += 1
    assert checked >= len(_links())


def test_the_dashboard_link_opens_the_service_in_jaeger(stack, population):
    for path in DASHBOARDS:
        for link in json.loads(path.read_text())["links"]:
            url = render(link["url"], {"jaeger_url": stack.jaeger, "service": population["service"]})
            u = urllib.parse.urlsplit(url)
            q = dict(urllib.parse.parse_qsl(u.query))
            status, body = get_json(f"{stack.jaeger}/api/traces", {
                **q, "start": population["t_min"] // 1000, "end": population["t_max"] // 1000, "limit": 5})
            assert status == 200 and len(body["data"]) == 5


def test_jaegers_monitor_tab_reads_the_span_metrics_from_prometheus(stack, population):
    service = population["service"]
    common = {"service": service, "endTs": int(population["at"] * 1000) + 5000, "lookback": 15 * 60 * 1000,
              "step": 60 * 1000, "ratePer": 10 * 60 * 1000}
    status, calls = get_json(f"{stack.jaeger}/api/metrics/calls", {**common, "spanKind": "internal",
                                                                    "groupByOperation": "true"})
    assert status == 200, calls
    ops = {next(lb["value"] for lb in m["labels"] if lb["name"] == "operation"):
           [float(p["gaugeValue"]["doubleValue"]) for p in m["metricPoints"]] for m in calls["metrics"]}
    assert "invoke_agent support-agent" in ops and "agentobs.step" in ops
    assert max(ops["invoke_agent support-agent"]) > 0, ops
    status, lat = get_json(f"{stack.jaeger}/api/metrics/latencies", {**common, "spanKind": "client", "quantile": 0.95})
    assert status == 200 and lat["metrics"], lat
    points = [p["gaugeValue"]["doubleValue"] for m in lat["metrics"] for p in m["metricPoints"]]
    assert any(isinstance(v, (int, float)) and v > 0 for v in points), points
    status, errs = get_json(f"{stack.jaeger}/api/metrics/errors", {**common, "spanKind": "internal"})
    assert status == 200 and errs["metrics"], errs
    # the UI settings (jaeger/ui-config.json) are served: the Monitor tab is on
    status, page = get(f"{stack.jaeger}/")
    m = re.search(rb"JAEGER_CONFIG = (\{.*?\});", page)
    assert status == 200 and m, page[:300]
    assert json.loads(m.group(1)) == json.loads((ROOT / "jaeger" / "ui-config.json").read_text())
