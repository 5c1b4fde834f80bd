"""Select on the real Jaeger (issue 46, point 1): a simulated population exported through the collector, read back
with a selection pushed into the Jaeger query (its start, its services; the segments the answer links to asked
for by id), gives exactly the runs of the whole URL's window read and filtered afterwards.

The population's clock starts six hours ago, so every span (resumed tasks come back hours later) lies in the past;
windows are bounded by span starts, so they cut through tasks suspended before them and resumed inside.
"""
from __future__ import annotations

import copy
import time
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stackutil import SentIds, rfc3339, unique_service, wait_jaeger_traces

from agentobs.analysis.load.sources import load_sources
from agentobs.analysis.report.engine import analyze
from agentobs.analysis.report.local import analyze_spans
from agentobs.analysis.report.summary import Options
from agentobs.analysis.select.selection import Selection
from agentobs.domain.population import simulate
from agentobs.telemetry import configure

pytestmark = pytest.mark.stack

MIN = 60 * 10**9


@pytest.fixture(scope="module")
def jaeger_url(stack) -> str:
    service = unique_service("select")
    sent = SentIds()
    tel = configure(otlp_endpoint=stack.otlp_grpc, otlp_protocol="grpc", service_name=service,
                    extra_exporters=[("sent", sent)])
    t0 = time.time_ns() - 360 * MIN
    simulate(240, seed=46, observers=lambda: [tel.observer()], start_ns=t0)
    report = tel.shutdown()
    for name, e in report.exporters.items():
        assert e["lost"] == 0, (name, e)
    got, seen, _ = wait_jaeger_traces(stack.jaeger, sent.traces, timeout=180)
    assert seen is not None, f"{sum(1 for t in sent.traces if got.get(t) != sent.traces[t])} traces incomplete"
    return (f"{stack.jaeger}?service={service}&since={rfc3339(t0 - 10 * MIN)}"
            f"&until={rfc3339(time.time_ns() + 10 * MIN)}")


@pytest.fixture(scope="module")
def full(jaeger_url):
    ss = load_sources([jaeger_url])
    report = analyze_spans(copy.copy(ss), Options(), [jaeger_url])
    assert len(report.runs) == 240 and (report.runs["resumes"] > 0).sum() >= 5
    return ss, report


def _same_runs(pushed: pd.DataFrame, afterwards: pd.DataFrame) -> None:
    """The same runs with the same values (sums over spans may be added in another order: Jaeger's answers come in
    other windows, so floats are equal to the last bits)."""
    a = pushed.sort_values("run_id", kind="stable").reset_index(drop=True)
    b = afterwards.sort_values("run_id", kind="stable").reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=1e-12)


def _at(ns: int) -> datetime:
    return datetime.fromtimestamp(ns // 10**9, UTC) + timedelta(microseconds=(ns % 10**9) // 1000)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(data=st.data())
def test_a_selection_pushed_into_the_jaeger_query_gives_the_runs_of_the_window_filtered(jaeger_url, full, data):
    ss, report = full
    starts = np.sort(report.spans["start_ns"].dropna().to_numpy(dtype=np.int64))
    since = _at(data.draw(st.sampled_from(starts.tolist())))
    until = data.draw(st.one_of(st.none(), st.sampled_from(starts.tolist()).map(_at)))
    task = data.draw(st.one_of(st.none(), st.sampled_from(sorted(report.runs["task_id"].dropna().astype(str)))))
    sel = Selection(since=since, until=until if until is not None and until > since else None,
                    where=(("agentobs.task.id", task),) if task else ())
    pushed = analyze([jaeger_url], Options(selection=sel))
    _same_runs(pushed.runs, analyze_spans(copy.copy(ss), Options(selection=sel), [jaeger_url]).runs)
    assert pushed.read is not None and pushed.read.traces <= len(set(ss.spans["trace_id"]))


def test_a_window_inside_resumed_tasks(jaeger_url, full):
    """Windows starting just after each of five resumed tasks' first segment: their later segments are in the
    window, their runs start before it, and none is taken for a run of its own."""
    ss, report = full
    spans = report.spans
    for _, run in report.runs[report.runs["resumes"] > 0].head(5).iterrows():
        last = spans[spans["trace_id"].astype(str) == run["trace_id"]]        # the last segment's trace
        sel = Selection(since=_at(int(last["start_ns"].min()) - 10**9))
        pushed = analyze([jaeger_url], Options(selection=sel))
        assert run["run_id"] not in set(pushed.runs["run_id"])
        assert pushed.read is not None and pushed.read.traces < len(set(ss.spans["trace_id"]))
        _same_runs(pushed.runs, analyze_spans(copy.copy(ss), Options(selection=sel), [jaeger_url]).runs)
