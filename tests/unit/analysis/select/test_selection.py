"""Select (issue 46, point 1): ``--since``, ``--until``, ``--service``, ``--agent``, ``--model`` and ``--where`` on
every kind of source.

- The property: for files, folders and an object store (moto's S3 server on 127.0.0.1, tests/objectstore.py),
  the report with the selection pushed into the loading (traces set aside by group before the runs table is built)
  has exactly the runs of the full runs table filtered afterwards. The input is built to catch what a push-down can
  get wrong: a simulated population cut across rotated files (a trace cut across two), tasks resumed in other
  traces (a window starting between a task's segments), runs of a session spread over traces, two runs under one
  request, a run whose root never arrived, and the real fixtures of twenty frameworks.
- The selection itself, against an independent reading of the runs table (plain Python over its rows).
- Jaeger: the query asks for the selection's window and services only (a fake Jaeger on 127.0.0.1 records what it
  is asked; the real Jaeger of the stack: tests/scenarios/stack/test_select_jaeger.py).
- The command line: every analysis command takes the options; bad values are one-line errors.
"""
from __future__ import annotations

import itertools
import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from locations import TESTS
from objectstore import s3_server  # noqa: F401 - the session fixture
from synthetic import Flavor, Node, http_server, otlp_lines

from agentobs.analysis.input.timespec import parse_time
from agentobs.analysis.jaeger.query import parse_url
from agentobs.analysis.load.sources import load_sources
from agentobs.analysis.report.engine import analyze
from agentobs.analysis.report.local import analyze_spans
from agentobs.analysis.report.summary import Options
from agentobs.analysis.select.prune import narrow
from agentobs.analysis.select.selection import Selection, matches, select_runs
from agentobs.cli.main import cli
from agentobs.domain.population import simulate
from agentobs.errors import InputError
from agentobs.telemetry import configure

FIXTURES = TESTS / "dialects" / "fixtures"
T0 = 1_780_000_000 * 10**9                          # the simulated population's start (2026-05-28T20:26:40Z)
FILES = ["traces-2026-05-28T20-40-00.000.jsonl", "traces-2026-05-28T21-00-00.000.jsonl.gz", "traces.jsonl"]


# -- the input -------------------------------------------------------------------------------------------------------

def _synthetic(t0: int) -> str:
    """Sessions spread over traces, two runs under one request, a run whose root never arrived."""
    g = Flavor("genai")
    traces = []
    for conv in ("conv-a", "conv-b", "conv-c"):
        for turn in range(3):
            chat = g.chat("gpt-4o-mini", (100 + turn, 20))
            chat.attrs["gen_ai.conversation.id"] = conv
            traces.append(Node("handle message", {"app.tenant": "acme" if conv != "conv-c" else "globex"}).add(chat))
    traces.append(http_server().add(g.agent("billing").add(g.chat("gpt-4o", (300, 40))),
                                    g.agent("refunds").add(g.chat("gpt-4o", (200, 30)),
                                                           g.tool("lookup", {"id": 7}))))
    lost = g.agent("planner")
    lost.dropped = True
    traces.append(Node("root").add(lost.add(g.chat("claude-sonnet-4", (50, 5)), g.chat("claude-sonnet-4", (60, 5)))))
    return otlp_lines(traces, service="synthetic-app", t0=t0)


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    """A folder as a collector's rotated archive holds it, with other instrumentations' files beside it."""
    work = tmp_path_factory.mktemp("select")
    whole = work / "all.jsonl"
    tel = configure(traces_out=whole, service_name="support")
    simulate(160, seed=46, observers=lambda: [tel.observer()], start_ns=T0)
    tel.shutdown()
    lines = whole.read_bytes().splitlines(keepends=True)
    folder = work / "archive"
    folder.mkdir()
    import gzip
    cuts = [0, len(lines) // 3, 2 * len(lines) // 3, len(lines)]
    for name, (a, b) in zip(FILES, itertools.pairwise(cuts), strict=True):
        part = b"".join(lines[a:b])
        (folder / name).write_bytes(gzip.compress(part) if name.endswith(".gz") else part)
    (folder / "synthetic.jsonl").write_text(_synthetic(T0 + 20 * 60 * 10**9))
    for f in sorted(FIXTURES.glob("*.jsonl"))[::3]:
        shutil.copy(f, folder / f"fixture-{f.name}")
    return folder


@pytest.fixture(scope="module")
def full(archive):
    """The whole input: its spans loaded once (nothing set aside) and its report."""
    ss = load_sources([str(archive)])
    return ss, analyze_spans(ss, Options(), [str(archive)])


def test_the_input_holds_what_a_push_down_can_get_wrong(full):
    _, report = full
    runs, spans = report.runs, report.spans
    assert (runs["resumes"] > 0).sum() >= 3                                   # tasks resumed in other traces
    assert (runs["run_root"] == "session").sum() == 3                          # sessions over three traces each
    assert runs["trace_ids"].map(len).max() >= 2
    assert runs["run_id"].str.contains(":").any()                              # two runs in one request
    cut = spans.groupby("trace_id")["source"].nunique()
    assert (cut > 1).any()                                                     # a trace cut across two files
    assert runs["service"].nunique() >= 8


def _selections(report) -> st.SearchStrategy[Selection]:
    """Windows bounded by span starts (they cut through traces, tasks and sessions), values that occur, patterns."""
    starts = np.sort(report.spans["start_ns"].dropna().to_numpy(dtype=np.int64))
    runs = report.runs

    def at(ns: int) -> datetime:
        return datetime.fromtimestamp(ns // 10**9, UTC) + timedelta(microseconds=(ns % 10**9) // 1000)

    bound = st.sampled_from(starts.tolist()).map(at)
    values = {c: sorted(set(runs[c].dropna().astype(str))) for c in ("service", "agent", "model")}
    spans = report.spans
    where_pairs = []
    for key in ("agentobs.task.id", "gen_ai.request.model", "app.tenant", "gen_ai.conversation.id", "service.name",
                "gen_ai.usage.input_tokens"):
        column = "service_name" if key == "service.name" else key
        if column in spans.columns:
            for v in spans[column].dropna().astype(str).drop_duplicates().head(4).tolist():
                where_pairs.append((key, v.removesuffix(".0")))
    def window(w: tuple[datetime | None, datetime | None]) -> tuple[datetime | None, datetime | None]:
        lo, hi = w
        if lo is not None and hi is not None:
            lo, hi = min(lo, hi), max(lo, hi)
            hi = hi if hi > lo else None
        return lo, hi

    return st.builds(
        lambda w, service, agent, model, where: Selection(
            since=w[0], until=w[1], services=tuple(service), agents=tuple(agent), models=tuple(model),
            where=tuple(where)),
        st.tuples(st.one_of(st.none(), bound), st.one_of(st.none(), bound)).map(window),
        st.lists(st.sampled_from(values["service"] + ["dialect-*", "support"]), max_size=2),
        st.lists(st.sampled_from(values["agent"] + ["*agent*"]), max_size=1),
        st.lists(st.sampled_from(values["model"] + ["gpt-4o*"]), max_size=1),
        st.lists(st.sampled_from(where_pairs), max_size=1))


def _same_runs(pushed: pd.DataFrame, afterwards: pd.DataFrame) -> None:
    a = pushed.sort_values("run_id", kind="stable").reset_index(drop=True)
    b = afterwards.sort_values("run_id", kind="stable").reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b, check_exact=True)


def _afterwards(full, sel: Selection):
    """The full runs table filtered afterwards: every run built from every span, then selected."""
    ss, _ = full
    import copy
    return analyze_spans(copy.copy(ss), Options(selection=sel), None).runs


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(data=st.data())
def test_a_selection_pushed_into_the_loading_gives_the_runs_of_the_full_table_filtered(archive, full, data):
    sel = data.draw(_selections(full[1]))
    pushed = analyze([str(archive)], Options(selection=sel))
    _same_runs(pushed.runs, _afterwards(full, sel))
    if sel.since or sel.where or sel.services:
        assert pushed.read is not None and pushed.read.kept <= pushed.read.traces


def test_a_window_between_a_tasks_segments_keeps_the_task_whole(archive, full):
    """A resumed task starts before the window and resumes inside it: its run starts before the window, so it is not
    selected, and its later segment is never taken for a run of its own."""
    _, report = full
    runs = report.runs
    resumed = runs[runs["resumes"] > 0].iloc[0]
    seg = report.spans[report.spans["run_id"].astype(str) == resumed["run_id"]]
    second = seg[seg["trace_id"].astype(str) == resumed["trace_id"]]["start_ns"].min()
    since = datetime.fromtimestamp(int(second) // 10**9, UTC)
    sel = Selection(since=since - timedelta(seconds=1))
    pushed = analyze([str(archive)], Options(selection=sel)).runs
    assert resumed["run_id"] not in set(pushed["run_id"])
    assert not pushed["trace_ids"].map(lambda ts: resumed["trace_id"] in ts).any()
    _same_runs(pushed, _afterwards(full, sel))


def test_a_session_starting_before_the_window_is_not_selected_by_its_later_turns(archive, full):
    _, report = full
    session = report.runs[report.runs["run_root"] == "session"].iloc[0]
    sel = Selection(since=session["start"].to_pydatetime() + timedelta(seconds=5))
    pushed = analyze([str(archive)], Options(selection=sel)).runs
    assert session["run_id"] not in set(pushed["run_id"])
    _same_runs(pushed, _afterwards(full, sel))


def test_the_selection_against_a_plain_reading_of_the_runs_table(full):
    """An independent computation: each run's row read in plain Python against the options' meaning."""
    _, report = full
    runs, spans = report.runs, report.spans
    starts = sorted(runs["start"])
    since, until = starts[len(starts) // 4].to_pydatetime(), starts[3 * len(starts) // 4].to_pydatetime()
    sel = Selection(since=since, until=until, services=("support", "dialect-l*"), where=(("app.tenant", "ACME "),))
    lo, hi = pd.Timestamp(since), pd.Timestamp(until)
    got = set(select_runs(runs, spans, Selection(since=since, until=until, services=("support", "dialect-l*"))
                          )["run_id"])
    def service_ok(service: object) -> bool:
        return isinstance(service, str) and (service == "support" or service.startswith("dialect-l"))
    want = {r.run_id for r in runs.itertuples() if lo <= r.start < hi and service_ok(r.service)}
    assert got == want and 0 < len(want) < len(runs)
    # --where: the root span or a call of the run carries the attribute (text: case and spaces aside)
    tenant = {str(r) for r in spans.loc[spans["app.tenant"].astype(str) == "acme", "run_id"].dropna()}
    assert set(select_runs(runs, spans, Selection(where=(("app.tenant", "ACME "),)))["run_id"]) == tenant == \
        {r for r in runs["run_id"] if str(r).startswith("conv-a") or str(r).startswith("conv-b")}
    assert set(select_runs(runs, spans, sel)["run_id"]) <= got


def test_where_compares_in_the_attributes_type(full):
    _, report = full
    runs, spans = report.runs, report.spans
    calls = spans[(spans["_kind"] == "chat") & spans["run_id"].notna()]
    value = int(calls["gen_ai.usage.input_tokens"].dropna().iloc[0])
    for given_as in (str(value), f"{value}.0", f" {value} "):
        got = select_runs(runs, spans, Selection(where=(("gen_ai.usage.input_tokens", given_as),)))
        assert len(got) >= 1
    assert select_runs(runs, spans, Selection(where=(("gen_ai.usage.input_tokens", "many"),))).empty


def test_patterns_match_whole_values_case_sensitively():
    values = pd.Series(["gpt-4o", "gpt-4o-mini", "GPT-4o", None, "claude"], dtype="string")
    assert matches(values, ("gpt-4o",)).tolist() == [True, False, False, False, False]
    assert matches(values, ("gpt-4o*",)).tolist() == [True, True, False, False, False]
    assert matches(values, ("gpt-4o", "c?aude")).tolist() == [True, False, False, False, True]
    assert matches(values, ("[gG]*",)).tolist() == [True, True, True, False, False]


# -- the object store ---------------------------------------------------------------------------------------------

def test_an_object_store_gives_the_runs_of_the_full_table_filtered(archive, full, s3_server, monkeypatch):  # noqa: F811
    fsspec = pytest.importorskip("fsspec")
    pytest.importorskip("s3fs")
    for k in [k for k in __import__("os").environ if k.startswith("AWS_")]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
    for k, v in s3_server.env.items():
        monkeypatch.setenv(k, v)
    fs = fsspec.filesystem("s3", skip_instance_cache=True, **s3_server.storage_options)
    for f in sorted(archive.iterdir()):
        fs.pipe(f"{s3_server.bucket}/select/{f.name}", f.read_bytes())
    url = f"s3://{s3_server.bucket}/select/"
    report = full[1]
    starts = sorted(report.runs["start"])
    task = str(report.runs.loc[report.runs["resumes"] > 0, "task_id"].iloc[0])
    for sel in (Selection(since=starts[40].to_pydatetime(), until=starts[120].to_pydatetime()),
                Selection(services=("dialect-*",), models=("gpt-4o*",)),
                Selection(where=(("agentobs.task.id", task),)),
                Selection(since=starts[100].to_pydatetime(), where=(("app.tenant", "globex"),))):
        pushed = analyze([url], Options(selection=sel))
        assert pushed.read is not None and pushed.read.kept < pushed.read.traces
        _same_runs(pushed.runs, _afterwards(full, sel))


# -- Jaeger: the query asks only for the selection ----------------------------------------------------------------

def test_the_jaeger_query_starts_at_the_selections_since_within_the_urls_window():
    now = datetime(2026, 1, 2, tzinfo=UTC)
    default = parse_url("http://h:1/?service=shop", now=now)                 # 24 hours back by default
    week = Selection(since=now - timedelta(days=7), until=now - timedelta(days=6))
    got = narrow(default, week)
    assert (got.start, got.end) == (week.since, now)          # the default start replaced; until is not pushed
    given_ = parse_url("http://h:1/?service=shop&since=2h", now=now)
    got = narrow(given_, Selection(since=now - timedelta(hours=5), until=now - timedelta(hours=1)))
    assert (got.start, got.end) == (now - timedelta(hours=2), now)          # within the URL's
    got = narrow(given_, Selection(since=now - timedelta(hours=1)))
    assert got.start == now - timedelta(hours=1)
    with pytest.raises(InputError, match="do not overlap"):
        narrow(given_, Selection(until=now - timedelta(hours=3)))
    assert narrow(parse_url("http://h:1/", now=now), Selection(services=("a", "b"))).services == ("a", "b")
    assert narrow(parse_url("http://h:1/", now=now), Selection(services=("a*",))).services == ()   # a pattern: all
    assert narrow(parse_url("http://h:1/?service=a,c", now=now), Selection(services=("a", "b"))).services == ("a",)
    with pytest.raises(InputError, match="selects none of them"):
        narrow(parse_url("http://h:1/?service=c", now=now), Selection(services=("a",)))


def _resumed(jt, n: int, start_ns: int, task: str, link_to: int | None = None) -> dict:
    """A trace of ``fake_jaeger._trace`` whose root carries a task id and, for a resume, a link to the root of
    the suspended segment's trace."""
    rs = jt._trace(n, start_ns)
    root = rs["scopeSpans"][0]["spans"][0]
    root["attributes"].append({"key": "agentobs.task.id", "value": {"stringValue": task}})
    if link_to is not None:
        root["links"] = [{"traceId": f"{link_to:032x}", "spanId": f"{link_to:016x}"}]
    return rs


def test_a_jaeger_query_asks_for_the_selection_alone_and_the_segments_its_traces_link_to(tmp_path):
    import fake_jaeger as jt
    traces = [jt._trace(n, jt.T0 + n * jt.HOUR // 4, service="shop" if n % 2 else "billing") for n in range(1, 17)]
    # a task suspended at 00:10 and resumed at 01:35: its run starts before the window
    traces += [_resumed(jt, 101, jt.T0 + jt.HOUR // 6, "task-7"),
               _resumed(jt, 102, jt.T0 + jt.HOUR + 35 * 60 * 10**9, "task-7", link_to=101)]
    fake = jt.FakeJaeger(traces)
    try:
        url = f"{fake.url}?since=2026-01-01T00:00:00Z&until=2026-01-01T06:00:00Z"
        sel = ["--since", "2026-01-01T01:00:00Z", "--until", "2026-01-01T02:00:00Z", "--service", "shop"]
        done = CliRunner().invoke(cli, ["runs", url, *sel, "--out", str(tmp_path / "r.csv")])
        assert done.exit_code == 0, done.output
        asked = [h for h in fake.hits if h.startswith("/api/v3/")]
        assert not any(h.startswith("/api/v3/services") for h in asked)      # the service named: no listing
        searches = [h for h in asked if h.startswith("/api/v3/traces?")]
        assert searches and all("query.service_name=shop" in h and "start_time_min=2026-01-01T01%3A00%3A00" in h
                                and "start_time_max=2026-01-01T06%3A00%3A00" in h for h in searches), searches
        assert [h for h in asked if h.startswith("/api/v3/traces/")] == [f"/api/v3/traces/{101:032x}"]
        rows = pd.read_csv(tmp_path / "r.csv", dtype=str)
        want = {f"{n:032x}" for n in range(1, 17) if n % 2 and jt.HOUR <= n * jt.HOUR // 4 < 2 * jt.HOUR}
        assert set(rows["run_id"]) == want and len(want) == 2                # task-7 started before the window
        full = analyze_spans(load_sources([url]), Options(selection=Selection.resolve(
            since="2026-01-01T01:00:00Z", until="2026-01-01T02:00:00Z", services=["shop"])), None).runs
        assert set(full["run_id"]) == want
    finally:
        fake.close()


# -- the command line ---------------------------------------------------------------------------------------------

def _cli(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_every_analysis_command_takes_the_selection(archive, full, tmp_path):
    report = full[1]
    starts = sorted(report.runs["start"])
    since, until = starts[50].to_pydatetime().isoformat(), starts[90].to_pydatetime().isoformat()
    sel = Selection.resolve(since=since, until=until)
    want = set(select_runs(report.runs, report.spans, sel)["run_id"])
    done = _cli("report", str(archive), "--since", since, "--until", until, "--format", "json")
    assert done.exit_code == 0, done.output
    out = json.loads(done.stdout)
    assert out["overview"]["runs"] == len(want)
    assert out["options"]["select"]["since"].startswith(since[:19]) and out["read"]["selection"]["traces_kept"] > 0
    done = _cli("runs", str(archive), "--since", since, "--until", until, "--out", str(tmp_path / "runs.csv"))
    assert done.exit_code == 0, done.output
    assert set(pd.read_csv(tmp_path / "runs.csv", dtype=str)["run_id"]) == want
    done = _cli("report", str(archive), "--since", since, "--until", until)
    assert done.exit_code == 0 and f"Selection: --since {since[:19]}" in done.stdout
    assert "traces read kept)" in done.stdout.splitlines()[0]
    done = _cli("caps", str(archive), "--since", since, "--until", until, "--format", "json")
    assert done.exit_code == 0, done.output
    inside = report.runs[report.runs["run_id"].isin(want) & (report.runs["success"] == True)]  # noqa: E712
    assert json.loads(done.stdout)["dimensions"]["steps"]["successful_runs"] == inside["steps"].notna().sum()


def test_the_trace_command_says_when_its_trace_holds_no_selected_run(archive, full):
    report = full[1]
    run = report.runs[report.runs["service"] == "support"].iloc[0]
    tid = str(run["trace_id"])
    assert _cli("trace", tid, str(archive), "--service", "support").exit_code == 0
    done = _cli("trace", tid, str(archive), "--service", "nobody")
    assert done.exit_code == 2 and done.stderr.count("\n") == 1
    assert "holds no run that matches the selection (--service nobody)" in done.stderr
    after = (run["start"] + pd.Timedelta(hours=1)).isoformat()
    assert _cli("trace", tid, str(archive), "--since", after).exit_code == 2


@pytest.mark.parametrize("args, says", [
    (["--since", "yesterday"], "--since 'yesterday': use a duration like 30m, 2h or 7d, or an ISO 8601 time"),
    (["--until", "99999999999d"], "--until '99999999999d' is out of range"),
    (["--since", "1h", "--until", "2h"], "must be before --until"),
    (["--where", "tenant"], "--where 'tenant': use KEY=VALUE"),
    (["--where", "=x"], "the attribute name is empty"),
    (["--where", "name=x"], "--where name: not a span attribute"),
    (["--service", " "], "--service: an empty value"),
    (["--service", "nobody"], "matches the selection (--service nobody): "),
])
def test_a_bad_or_empty_selection_is_one_line(archive, args, says):
    for command in ("report", "caps"):
        done = _cli(command, str(archive), *args)
        assert done.exit_code == 2 and done.stderr.count("\n") == 1, done.output
        assert says in done.stderr, done.stderr


def test_an_empty_selection_says_what_the_input_holds(archive):
    done = _cli("report", str(archive), "--since", "2030-01-01")
    assert done.exit_code == 2
    assert "traces read, their spans starting from 2026-" in done.stderr


def test_times_are_read_as_durations_or_iso_8601_in_utc():
    now = datetime(2026, 12, 5, 12, tzinfo=UTC)
    assert parse_time("30m", now) == datetime(2026, 12, 5, 11, 30, tzinfo=UTC)
    assert parse_time("7d", now) == datetime(2026, 11, 28, 12, tzinfo=UTC)
    assert parse_time("1.5h", now) == datetime(2026, 12, 5, 10, 30, tzinfo=UTC)
    assert parse_time("2026-12-05", now) == datetime(2026, 12, 5, tzinfo=UTC)
    assert parse_time("2026-12-05T10:00", now) == datetime(2026, 12, 5, 10, tzinfo=UTC)
    assert parse_time("2026-12-05T10:00Z", now) == datetime(2026, 12, 5, 10, tzinfo=UTC)
    assert parse_time("2026-12-05T11:00:00+01:00", now) == datetime(2026, 12, 5, 10, tzinfo=UTC)
    sel = Selection.resolve(since="2h", until="1h", now=now)
    assert (sel.since, sel.until) == (now - timedelta(hours=2), now - timedelta(hours=1))
