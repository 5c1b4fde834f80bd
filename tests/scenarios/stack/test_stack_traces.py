"""The seed scenarios over OTLP/gRPC through the real collector: Jaeger (API v3 and legacy), the analysis with
Jaeger as its source, the collector's file archive, and Prometheus (span metrics and the SDK metrics).

One export per module (SEED000 and SEED004, every task), kept three ways at once: the SDK's in-memory copy (the
truth), our local OTLP JSON file, and OTLP/gRPC to the collector.
"""
from __future__ import annotations

import csv
import importlib.util
import json
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from stackutil import (
    ROOT,
    Span,
    arrays_as_json_text,
    by_labels,
    by_trace,
    from_memory,
    from_otlp,
    get_json,
    legacy_matches,
    legacy_search,
    legacy_tags,
    prom_query,
    shape,
    unique_service,
    v3_search,
    v3_trace,
    wait_for,
    without_jaeger_warnings,
)

from agentobs.analysis.load.sources import load_sources
from agentobs.analysis.otlp.load import load_file
from agentobs.contract import semconv as sc
from agentobs.domain.scenarios import SEED000, SEED004
from agentobs.telemetry import configure

pytestmark = pytest.mark.stack

_spec = importlib.util.spec_from_file_location("dashboards_generate", ROOT / "dashboards" / "generate.py")
dashboards = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dashboards)

MIN = 60 * 10**9


@dataclass
class Export:
    service: str
    spans: dict[str, Span]            # the SDK's in-memory copy: span id -> Span
    traces: dict[str, dict[str, Span]]
    roots: dict[str, Span]            # trace id -> root span of a run that reached a stop reason
    aborted: dict[str, Span]          # trace id -> root span of a segment ended by an exception (crash_resume)
    local: Path                       # our OTLP JSON lines file of the same spans
    t_min: int                        # a window around every span start, for the searches
    t_max: int
    stops: dict[str, str]             # scenario -> stop reason


@pytest.fixture(scope="module")
def seeds(stack, tmp_path_factory) -> Export:
    service = unique_service("seeds")
    local = tmp_path_factory.mktemp("seeds") / "traces.jsonl"
    memory = InMemorySpanExporter()
    tel = configure(otlp_endpoint=stack.otlp_grpc, otlp_protocol="grpc", service_name=service, traces_out=local,
                    extra_exporters=[("memory", memory)])
    # simulated clocks anchored 30 minutes ago, one task every 30 s: every span lies in the past
    epoch = time.time_ns() - 30 * MIN
    stops = {}
    for i, (name, run) in enumerate({**SEED000, **SEED004}.items()):
        stops[name] = run([tel.observer()], epoch + i * MIN // 2).state.stop
    report = tel.shutdown()
    for name, e in report.exporters.items():
        assert e["exported"] == report.ended and e["lost"] == 0, (name, e)
    spans = from_memory(memory.get_finished_spans())
    assert len(spans) == report.ended > 100
    traces = by_trace(spans)
    tops = [s for s in spans.values() if s.parent is None]
    roots = {s.trace_id: s for s in tops if sc.STOP_REASON in s.attributes}
    aborted = {s.trace_id: s for s in tops if s.attributes.get(sc.STATUS) == ("string", "aborted")}
    assert len(roots) + len(aborted) == len(tops) == len(traces)
    return Export(service, spans, traces, roots, aborted, local, epoch - MIN, time.time_ns() + MIN, stops)


def _diff(got: dict[str, Span], want: dict[str, Span]) -> str:
    missing, extra = set(want) - set(got), set(got) - set(want)
    lines = [f"missing spans: {sorted(missing)[:5]}", f"unexpected spans: {sorted(extra)[:5]}"]
    for sid in sorted(set(got) & set(want)):
        a, b = got[sid], want[sid]
        if a != b:
            for f in Span.__dataclass_fields__:
                if getattr(a, f) != getattr(b, f):
                    lines.append(f"{sid} {b.name}: {f} got {getattr(a, f)!r} want {getattr(b, f)!r}"[:600])
            break
    return "\n".join(lines)


# -- (a) Jaeger ----------------------------------------------------------------------------------------------

def test_seed_scenarios_cover_every_stop_reason(seeds):
    roots = [s.attributes[sc.STOP_REASON][1] for s in seeds.roots.values()]
    assert set(roots) == set(seeds.stops.values()) == {
        "done", "repeated_call", "no_progress", "max_tokens", "deadline", "max_steps", "needs_approval",
        "unknown_outcome", "max_usd"}
    # crash_resume's first segment ends with the simulated crash: a closed tree, ERROR, no stop reason
    assert [(r.attributes[sc.ERROR_TYPE], r.status[0]) for r in seeds.aborted.values()] == \
        [(("string", "SimulatedCrash"), 2)]


def test_jaeger_api_v3_search_returns_every_task_with_its_full_span_tree(stack, seeds):
    def fetch():
        got, resources = from_otlp(v3_search(stack.jaeger, seeds.service, seeds.t_min, seeds.t_max))
        return (got, resources) if len(got) >= len(seeds.spans) else None
    got, resources = wait_for(fetch, f"Jaeger API v3 to hold {len(seeds.spans)} spans of {seeds.service}")
    got = without_jaeger_warnings(got)
    want = arrays_as_json_text(seeds.spans)                   # Jaeger's Badger storage keeps arrays as JSON text
    assert got == want, _diff(got, want)                      # ids, parents, names, kinds, times, status, attributes
    assert {r["service.name"] for r in resources} == {("string", seeds.service)}
    for _tid, root in seeds.roots.items():
        assert got[root.span_id].attributes[sc.STOP_REASON] == root.attributes[sc.STOP_REASON]


def test_jaeger_api_v3_returns_each_trace_by_id(stack, seeds):
    wait_for(lambda: len(from_otlp(v3_search(stack.jaeger, seeds.service, seeds.t_min, seeds.t_max))[0])
             >= len(seeds.spans), "every span in Jaeger")
    for tid, sent in seeds.traces.items():
        got, resources = from_otlp(v3_trace(stack.jaeger, tid))
        got, want = without_jaeger_warnings(got), arrays_as_json_text(sent)
        assert shape(got) == shape(want), tid
        assert got == want, _diff(got, want)
        assert {r["service.name"] for r in resources} == {("string", seeds.service)}


LEGACY_EXTRA_TAGS = {"otel.scope.name", "otel.scope.version", "span.kind", "otel.status_code",
                     "otel.status_description", "error"}


def test_jaeger_legacy_api_returns_every_task_with_its_full_span_tree(stack, seeds):
    def fetch():
        data = legacy_search(stack.jaeger, seeds.service, seeds.t_min, seeds.t_max)
        return data if sum(len(t["spans"]) for t in data) >= len(seeds.spans) else None
    data = wait_for(fetch, "the legacy /api/traces to hold every span")
    got = {t["traceID"].rjust(32, "0"): t for t in data}
    assert set(got) == set(seeds.traces)
    for tid, trace in got.items():
        want = seeds.traces[tid]
        assert {p["serviceName"] for p in trace["processes"].values()} == {seeds.service}
        spans = {s["spanID"].rjust(16, "0"): s for s in trace["spans"]}
        assert set(spans) == set(want), tid
        for sid, s in spans.items():
            w = want[sid]
            parents = [r["spanID"].rjust(16, "0") for r in s["references"] if r["refType"] == "CHILD_OF"]
            follows = [(r["traceID"].rjust(32, "0"), r["spanID"].rjust(16, "0")) for r in s["references"]
                       if r["refType"] == "FOLLOWS_FROM"]
            assert (parents[0] if parents else None) == w.parent, (tid, sid, s["references"])
            assert follows == [(lt, ls) for lt, ls, _ in w.links]
            assert s["operationName"] == w.name
            assert s["startTime"] == w.start_ns // 1000
            assert abs(s["duration"] - (w.end_ns - w.start_ns) // 1000) <= 1
            tags = legacy_tags(s["tags"])
            for key, value in w.attributes.items():
                assert key in tags and legacy_matches(value, tags[key]), (w.name, key, value, tags.get(key))
            assert set(tags) - set(w.attributes) <= LEGACY_EXTRA_TAGS, set(tags) - set(w.attributes)
            assert (tags.get("error") == ("bool", True)) == (w.status[0] == 2), (w.name, w.status, tags.get("error"))
            logs = sorted((dict((f["key"], f["value"]) for f in log["fields"]).get("event"), log["timestamp"])
                          for log in s.get("logs") or [])
            assert logs == sorted((e[0], e[1] // 1000) for e in w.events)
    for tid, root in seeds.roots.items():
        root_span = next(s for s in got[tid]["spans"] if s["spanID"].rjust(16, "0") == root.span_id)
        root_tags = legacy_tags(root_span["tags"])
        assert root_tags[sc.STOP_REASON] == root.attributes[sc.STOP_REASON]


def _agentobs(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("agentobs")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "agentobs.cli.main"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def test_agentobs_trace_asks_jaeger_for_one_trace_by_its_id(stack, seeds, tmp_path):
    """The seeds' spans started 30 minutes ago: a window of the last minute holds none of them, so the trace is found
    only by the trace endpoint; its tree is the one read from our own file. An id Jaeger does not hold is an error."""
    wait_for(lambda: len(from_otlp(v3_search(stack.jaeger, seeds.service, seeds.t_min, seeds.t_max))[0])
             >= len(seeds.spans), "every span in Jaeger")
    for tid in sorted(seeds.roots)[:3]:
        from_jaeger = _agentobs("trace", tid.upper(), f"{stack.jaeger}?service={seeds.service}&since=1m", cwd=tmp_path)
        assert from_jaeger.returncode == 0, from_jaeger.stderr
        local = _agentobs("trace", tid, str(seeds.local), cwd=tmp_path)
        assert local.returncode == 0, local.stderr
        assert from_jaeger.stdout.splitlines()[1:] == local.stdout.splitlines()[1:]     # (the title names no source)
        assert len(from_jaeger.stdout.splitlines()) > 4
    missing = _agentobs("trace", "0" * 31 + "1", stack.jaeger, cwd=tmp_path)
    assert missing.returncode == 2 and "is not in" in missing.stderr, missing.stderr


def test_agentobs_report_reads_the_runs_from_jaeger(stack, seeds, tmp_path):
    wait_for(lambda: len(from_otlp(v3_search(stack.jaeger, seeds.service, seeds.t_min, seeds.t_max))[0])
             >= len(seeds.spans), "every span in Jaeger")
    url = f"{stack.jaeger}?service={seeds.service}&since=1h"
    from_jaeger = _agentobs("report", url, "--format", "json", cwd=tmp_path)
    assert from_jaeger.returncode == 0, from_jaeger.stderr
    local = _agentobs("report", str(seeds.local), "--format", "json", cwd=tmp_path)
    assert local.returncode == 0, local.stderr
    rj, rl = json.loads(from_jaeger.stdout), json.loads(local.stdout)
    assert rj["overview"] == rl["overview"]                 # the same runs, stop reasons, signatures
    assert [(s["name"], s["runs"]) for s in rj["signatures"]] == [(s["name"], s["runs"]) for s in rl["signatures"]]
    ended = Counter(r.attributes[sc.STOP_REASON][1] for r in seeds.roots.values())
    assert {k: v for k, v in rj["overview"]["by_stop_reason"].items() if k != "(not recorded)"} == dict(ended)

    # the runs table: every task's root trace is a run with its stop reason
    out = _agentobs("runs", url, "--out", str(tmp_path / "runs.csv"), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader((tmp_path / "runs.csv").read_text().splitlines()))
    by_trace_id = {r["trace_id"]: r for r in rows}
    for tid, root in seeds.roots.items():
        assert by_trace_id[tid]["stop_reason"] == root.attributes[sc.STOP_REASON][1], tid


def test_agentobs_report_reads_jaeger_json_saved_from_the_ui_as_the_runs_themselves(stack, seeds, tmp_path):
    """The Jaeger UI's "Download Results" (``{"data": [trace, ...]}`` of the search, API before v3) and its "Trace
    JSON" (``/api/traces/{id}``), saved to files, give the report the local OTLP file gives."""
    def fetch():
        data = legacy_search(stack.jaeger, seeds.service, seeds.t_min, seeds.t_max)
        return data if sum(len(t["spans"]) for t in data) >= len(seeds.spans) else None
    data = wait_for(fetch, "the legacy /api/traces to hold every span")
    download = tmp_path / "traces-1764566000000.json"
    download.write_text(json.dumps({"data": data, "total": 0, "limit": 0, "offset": 0, "errors": None}))
    one_by_one = tmp_path / "by-id"
    one_by_one.mkdir()
    for tid in seeds.traces:
        status, body = get_json(f"{stack.jaeger}/api/traces/{tid}")
        assert status == 200 and isinstance(body, dict), (tid, status)
        (one_by_one / f"{tid}.json").write_text(json.dumps(body, indent=2))
    local = _agentobs("report", str(seeds.local), "--format", "json", cwd=tmp_path)
    assert local.returncode == 0, local.stderr
    rl = json.loads(local.stdout)
    for source in (download, one_by_one):
        got = _agentobs("report", str(source), "--format", "json", cwd=tmp_path)
        assert got.returncode == 0, got.stderr
        rj = json.loads(got.stdout)
        assert rj["overview"] == rl["overview"], source
        assert [(s["name"], s["runs"]) for s in rj["signatures"]] == [(s["name"], s["runs"]) for s in rl["signatures"]]
        assert all(list(v) == ["Jaeger JSON (UI download, API before v3)"] for v in rj["read"]["spellings"].values())
        table = _agentobs("runs", str(source), "--out", str(tmp_path / "ui.csv"), cwd=tmp_path)
        mine = _agentobs("runs", str(seeds.local), "--out", str(tmp_path / "local.csv"), cwd=tmp_path)
        assert table.returncode == mine.returncode == 0, table.stderr + mine.stderr
        cols = ["trace_id", "stop_reason", "steps", "model_calls", "tool_calls", "input_tokens", "output_tokens",
                "status"]
        got_rows = pd.read_csv(tmp_path / "ui.csv", dtype=str).sort_values("trace_id").reset_index(drop=True)
        want_rows = pd.read_csv(tmp_path / "local.csv", dtype=str).sort_values("trace_id").reset_index(drop=True)
        pd.testing.assert_frame_equal(got_rows[cols], want_rows[cols])
        # the calls' costs are summed in the order Jaeger gives the spans: equal to the last bit or so
        pd.testing.assert_series_equal(got_rows["cost_usd"].astype(float), want_rows["cost_usd"].astype(float),
                                       rtol=1e-12)
    ui, ours = _frame(load_sources([str(download)]).spans), _frame(load_file(seeds.local).spans)
    assert ui["span_id"].tolist() == ours["span_id"].tolist()
    cols = ["trace_id", "span_id", "parent_span_id", "name", "kind", "status_code", "status_message", "service_name"]
    pd.testing.assert_frame_equal(ui[cols], ours[cols], check_dtype=False)
    assert (ui["start_ns"] == ours["start_ns"] // 1000 * 1000).all()        # Jaeger keeps microseconds


# -- (b) the collector's file archive -------------------------------------------------------------------------

BASE_COLUMNS = ["trace_id", "span_id", "parent_span_id", "name", "kind", "start_ns", "end_ns", "status_code",
                "status_message", "service_name"]


def _frame(df: pd.DataFrame) -> pd.DataFrame:
    df = df.drop(columns=["source"], errors="ignore").dropna(axis=1, how="all")
    return df.sort_values(["trace_id", "span_id"], kind="stable").reset_index(drop=True)


def _unmask(archive: pd.DataFrame, local: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Drops what the collector's redaction processor may add, and the cells it masked (listed per span)."""
    masked_col = "redaction.masked.keys"
    archive, local = archive.copy(), local.copy()
    if masked_col in archive:
        for i, keys in archive[masked_col].items():
            if isinstance(keys, str):
                for k in keys.split(","):
                    if k in archive:
                        archive.at[i, k] = local.at[i, k] = None
    redaction = [c for c in archive.columns if c.startswith("redaction.")]
    return archive.drop(columns=redaction), local


def test_collector_archive_reloads_into_the_same_spans_as_the_local_file(stack, seeds):
    ids = set(seeds.traces)

    def fetch():
        if not stack.archive.exists():
            return None
        ss = load_file(stack.archive)
        mine = ss.spans[ss.spans["trace_id"].isin(ids)]
        return ss if len(mine) >= len(seeds.spans) else None
    archive = wait_for(fetch, f"the collector archive {stack.archive} to hold {len(seeds.spans)} spans", timeout=30)
    local = load_file(seeds.local)
    assert len(local.spans) == len(seeds.spans) and not local.quality.issues, local.quality.to_dict()
    # the archive is shared by every test and kept across restarts: only our lines must be clean

    a = _frame(archive.spans[archive.spans["trace_id"].isin(ids)])
    b = _frame(local.spans)
    assert len(a) == len(b) == len(seeds.spans)
    assert a["span_id"].tolist() == b["span_id"].tolist()
    a, b = _unmask(a, b)
    assert set(a.columns) == set(b.columns), (set(a.columns) ^ set(b.columns))
    cols = BASE_COLUMNS + sorted(c for c in b.columns if c not in BASE_COLUMNS)
    pd.testing.assert_frame_equal(a[cols], b[cols], check_dtype=False)
    assert set(a["service_name"]) == {seeds.service}

    ev_a = archive.events[archive.events["trace_id"].isin(ids)].dropna(axis=1, how="all")
    ev_b = local.events.dropna(axis=1, how="all")
    key = ["trace_id", "span_id", "time_ns", "name"]
    ev_a = ev_a.sort_values(key, kind="stable").reset_index(drop=True)
    ev_b = ev_b.sort_values(key, kind="stable").reset_index(drop=True)
    assert len(ev_a) == len(ev_b) > 0
    pd.testing.assert_frame_equal(ev_a[sorted(ev_b.columns)], ev_b[sorted(ev_b.columns)], check_dtype=False)
    ln_a = archive.links[archive.links["trace_id"].isin(ids)]
    assert sorted(map(tuple, ln_a.astype(str).values.tolist())) == \
        sorted(map(tuple, local.links.astype(str).values.tolist()))


# -- (c) Prometheus ------------------------------------------------------------------------------------------

def test_prometheus_holds_span_metrics_by_operation_agent_tool_and_stop_reason(stack, seeds):
    sel = f'service_name="{seeds.service}"'
    names = Counter(s.name for s in seeds.spans.values())
    by_name = f"sum by (span_name) (traces_span_metrics_calls_total{{{sel}}})"
    want = {(k,): float(v) for k, v in names.items()}
    wait_for(lambda: by_labels(prom_query(stack.prometheus, by_name), "span_name") == want,
             "span metrics calls per span name to equal the spans sent")
    series = prom_query(stack.prometheus, f"traces_span_metrics_calls_total{{{sel}}}")
    labels = lambda k: {r["metric"][k] for r in series if k in r["metric"]}  # noqa: E731
    spans = seeds.spans.values()
    assert labels("gen_ai_operation_name") == {"invoke_agent", "chat", "execute_tool"}
    assert labels("gen_ai_agent_name") == {"support-agent"}
    assert labels("gen_ai_tool_name") == {s.attributes[sc.TOOL_NAME][1] for s in spans if sc.TOOL_NAME in s.attributes}
    assert labels("gen_ai_request_model") == {s.attributes[sc.REQUEST_MODEL][1] for s in spans
                                              if sc.REQUEST_MODEL in s.attributes}
    assert labels("error_type") == {s.attributes[sc.ERROR_TYPE][1] for s in spans if sc.ERROR_TYPE in s.attributes}
    stops = Counter(r.attributes[sc.STOP_REASON][1] for r in seeds.roots.values())
    got = by_labels(prom_query(stack.prometheus, f'sum by (agentobs_stop_reason) (traces_span_metrics_calls_total'
                                                 f'{{{sel}, gen_ai_operation_name="invoke_agent"}})'),
                    "agentobs_stop_reason")
    # an aborted segment's invoke_agent span has no stop reason: its series has no such label
    aborted = {("",): float(len(seeds.aborted))} if seeds.aborted else {}
    assert got == {(k,): float(v) for k, v in stops.items()} | aborted
    errors = prom_query(stack.prometheus,
                        f'sum(traces_span_metrics_calls_total{{{sel}, status_code="STATUS_CODE_ERROR"}})')
    assert float(errors[0]["value"][1]) == sum(1 for s in spans if s.status[0] == 2)
    # the latency histogram, in milliseconds, with the same series
    count = prom_query(stack.prometheus, f"sum(traces_span_metrics_duration_milliseconds_count{{{sel}}})")
    assert float(count[0]["value"][1]) == len(seeds.spans)


def test_prometheus_holds_every_sdk_metric_of_the_contract(stack, seeds):
    contract = {v for k, v in vars(sc).items() if k.startswith("M_")}
    assert set(dashboards.PROMETHEUS_NAMES) == contract        # every metric we emit has its Prometheus name
    job = f'exported_job="{seeds.service}"'
    P = dashboards.PROMETHEUS_NAMES
    roots = seeds.roots.values()
    stops = Counter(r.attributes[sc.STOP_REASON][1] for r in roots)
    # an aborted segment is counted with its exception's type instead of a stop reason
    aborted = Counter(r.attributes[sc.ERROR_TYPE][1] for r in seeds.aborted.values())
    want = {(k, ""): float(v) for k, v in stops.items()} | {("", k): float(v) for k, v in aborted.items()}
    wait_for(lambda: by_labels(prom_query(stack.prometheus, f"sum by (agentobs_stop_reason, error_type) "
                                                            f"({P['agentobs.runs']}{{{job}}})"),
                               "agentobs_stop_reason", "error_type") == want,
             "agentobs_runs_total by stop reason to equal the finished runs")
    for name, prom in P.items():
        suffix = "_count" if prom in dashboards.HISTOGRAMS else ""
        assert prom_query(stack.prometheus, f"{prom}{suffix}{{{job}}}"), f"{name}: no {prom}{suffix} series for {job}"

    def total(expr: str) -> float:
        r = prom_query(stack.prometheus, expr)
        return float(r[0]["value"][1]) if r else 0.0
    spans = list(seeds.spans.values())
    ended_traces = set(seeds.roots)
    chats = [s for s in spans if s.attributes.get(sc.OPERATION_NAME) == ("string", "chat")]
    returned = [s for s in chats if sc.USAGE_INPUT_TOKENS in s.attributes]
    assert total(f"sum({P['gen_ai.client.operation.duration']}_count{{{job}}})") == len(returned)
    assert total(f'sum({P["gen_ai.client.token.usage"]}_sum{{{job}, gen_ai_token_type="input"}})') == \
        sum(s.attributes[sc.USAGE_INPUT_TOKENS][1] for s in returned)
    assert total(f'sum({P["gen_ai.client.token.usage"]}_sum{{{job}, gen_ai_token_type="output"}})') == \
        sum(s.attributes[sc.USAGE_OUTPUT_TOKENS][1] for s in returned)
    assert total(f"sum({P['gen_ai.invoke_agent.inference_calls']}_count{{{job}}})") == len(roots)
    assert total(f"sum({P['gen_ai.invoke_agent.inference_calls']}_sum{{{job}}})") == \
        sum(1 for s in returned if s.trace_id in ended_traces)
    assert total(f"sum({P['gen_ai.invoke_agent.duration']}_count{{{job}}})") == len(roots) + len(seeds.aborted)
    # what each finished segment spent (its own model calls): a resumed task's segments add up, none counted twice
    finished = [s for s in returned if s.trace_id in ended_traces]
    assert total(f"sum({P['agentobs.run.tokens']}_sum{{{job}}})") == sum(
        s.attributes[sc.USAGE_INPUT_TOKENS][1] + s.attributes[sc.USAGE_OUTPUT_TOKENS][1] for s in finished)
    assert total(f"sum({P['agentobs.run.cost_usd']}_sum{{{job}}})") == pytest.approx(
        sum(s.attributes[sc.CALL_COST_USD][1] for s in finished if sc.CALL_COST_USD in s.attributes), rel=1e-9)
    tools = [s for s in spans if sc.TOOL_RESULT_STATUS in s.attributes]
    assert total(f"sum({P['gen_ai.execute_tool.duration']}_count{{{job}}})") == len(tools)
    limits = {r["metric"]["agentobs_budget_limit"] for r in
              prom_query(stack.prometheus, f"{P['agentobs.budget.utilisation']}_count{{{job}}}")}
    assert limits and limits <= {"max_steps", "max_tool_calls", "max_tokens", "deadline_s", "max_usd"}
    # the resource reaches Prometheus as target_info (service.name -> exported_job)
    assert prom_query(stack.prometheus, f"target_info{{{job}}}")
