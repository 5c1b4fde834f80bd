"""The explorer's data, without a browser: a run's waterfall from hand-made spans (tree order, roles, offsets,
durations, tokens, cost, errors, redacted attributes, events, sub-agents), the page's limits and what it says it
left out, the served runs table's filters and orders against the runs DataFrame, the server's answers and its
refusals, ``agentobs view`` started and stopped with Ctrl-C, secrets of the corpus wherever a span carries them,
and the chart labels (distinct, whatever they share). tests/scenarios/explorer/test_html_browser.py drives the page in
Chromium."""
import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from explorer_spans import T0, TRACE, S, _line, _nested_run, _span
from locations import ROOT

from agentobs.analysis.explorer import html, server
from agentobs.analysis.explorer._runs_table import RunFilter, order, select
from agentobs.analysis.explorer.model import PageLimits, build, page_data, run_detail
from agentobs.analysis.explorer.text import LABEL_CHARS, Strings, dumps, labels
from agentobs.analysis.report.engine import analyze
from agentobs.analysis.report.summary import Options
from agentobs.cli.main import cli


@pytest.fixture(scope="module")
def nested(tmp_path_factory):
    path = tmp_path_factory.mktemp("nested") / "nested.jsonl"
    path.write_text(_line(_nested_run()) + "\n")
    return analyze([str(path)])


def test_a_run_with_a_sub_agent_as_a_waterfall(nested):
    x = build(nested, mode="file")
    (run_id,) = x.waterfalls
    fall = x.waterfalls[run_id]
    st = x.strings.values
    rows = fall.rows
    assert [st[r[2]] for r in rows] == ["invoke_agent planner", "chat gpt-4o", "invoke_agent researcher",
                                        "execute_tool search", "chat gpt-4o", "execute_tool write"]
    assert [r[0] for r in rows] == [0, 1, 1, 2, 2, 1]                      # depths: the sub-agent's calls under it
    assert [r[1] for r in rows] == [-1, 0, 0, 2, 2, 0]                     # parents, as positions
    assert [st[r[3]] for r in rows] == ["agent", "chat", "agent", "tool", "chat", "tool"]
    assert [r[4] for r in rows] == [0, 1_000_000, 3_000_000, 4_000_000, 5_000_000, 8_500_000]   # µs from the start
    assert [r[5] for r in rows] == [10_000_000, 1_000_000, 5_000_000, 1_000_000, 1_000_250, 500_000]
    assert (rows[1][8], rows[1][9]) == (1000, 200) and rows[1][10] > 0     # gpt-4o priced from its tokens
    assert rows[4][10] == 0.25                                              # a recorded cost is kept
    assert rows[3][6] == 2 and st[rows[3][7]] == "Timeout"                  # the error and its type
    attrs = {st[k]: st[v] for k, v in zip(rows[0][11][::2], rows[0][11][1::2], strict=True)}
    assert attrs["api_key"] == "[REDACTED]" and "bob@example.com" not in attrs["app.note"]
    assert attrs["gen_ai.agent.name"] == "planner" and attrs["service.name"] == "desk"
    (event,) = rows[3][12]
    assert st[event[0]] == "retry" and event[1] == 4_500_000 and [st[c] for c in event[2]] == ["attempt", "2"]


def test_the_served_run_detail_is_the_same_waterfall(nested):
    page = build(nested, mode="file")
    served = build(nested, mode="served")
    (run_id,) = page.waterfalls
    d = run_detail(served, run_id)
    local = d["strings"]
    assert [local[r[2]] for r in d["spans"]] == [page.strings.values[r[2]] for r in page.waterfalls[run_id].rows]
    assert [r[:2] + r[4:7] for r in d["spans"]] == [r[:2] + r[4:7] for r in page.waterfalls[run_id].rows]
    assert run_detail(served, "no such run") is None


@pytest.fixture(scope="module")
def population(tmp_path_factory):
    """300 simulated runs with every failure pattern, traced to a file."""
    from agentobs.domain.population import simulate
    from agentobs.telemetry import configure
    path = tmp_path_factory.mktemp("population") / "traces.jsonl"
    tel = configure(traces_out=path)
    simulate(300, seed=11, observers=lambda: [tel.observer()], start_ns=T0)
    tel.shutdown()
    return path, analyze([str(path)], Options(jaeger_url="http://127.0.0.1:16686"))


def test_a_page_over_its_limits_keeps_every_row_and_the_examples_spans(population):
    _, r = population
    full = build(r, mode="file")
    assert set(full.waterfalls) == set(r.runs["run_id"]) and full.left_out is None
    small = build(r, mode="file", limits=PageLimits(runs=100, spans=10**9))
    examples = {e.run_id for exs in r.examples.values() for e in exs}
    assert set(small.waterfalls) == examples and len(examples) < len(r.runs)
    data = page_data(small)
    assert data["table"]["n"] == len(r.runs) and len(data["details"]) == len(examples)
    spans = int(r.spans["run_id"].isin(examples).sum())
    assert f"({spans:,} of {int(r.spans['run_id'].notna().sum()):,} spans)" in small.left_out
    assert "agentobs view" in small.left_out
    assert build(r, mode="file", limits=PageLimits(runs=10**6, spans=100)).left_out is not None
    # every example's evidence names spans of its waterfall
    for s in data["signatures"]:
        for ex in s["examples"]:
            assert ex["spans"], (data["strings"][s["name"]], data["strings"][ex["run"]])


def _codes(x, column, text):
    options = next(f.options for f in x.table.facets if f.column == column)
    (code,) = [c for c, _ in options if x.strings.values[c] == text]
    return code


def test_the_served_filters_are_the_runs_dataframe_narrowed(population):
    _, r = population
    x = build(r, mode="served")
    runs = r.runs.reset_index(drop=True)
    ids = lambda rows: list(runs["run_id"].iloc[rows])                       # noqa: E731
    got = select(x.table, RunFilter(equals={"stop_reason": _codes(x, "stop_reason", "max_tokens")}))
    assert ids(got) == list(runs.loc[runs["stop_reason"] == "max_tokens", "run_id"]) and len(got)
    sig = select(x.table, RunFilter(equals={"signature": _codes(x, "signature", "repeated_call")}))
    assert ids(sig) == list(runs.loc[runs["signatures"].map(lambda s: "repeated_call" in s), "run_id"])
    both = select(x.table, RunFilter(equals={"signature": _codes(x, "signature", "repeated_call"),
                                             "label": _codes(x, "label", "failed")}))
    assert set(ids(both)) <= set(ids(sig))
    start_ms = runs["start"].astype("int64") / 1e6
    lo, hi = start_ms.quantile(0.25), start_ms.quantile(0.5)
    window = select(x.table, RunFilter(start_from_ms=lo, start_to_ms=hi))
    assert ids(window) == list(runs.loc[(start_ms >= lo) & (start_ms < hi), "run_id"]) and len(window)
    prefix = runs["run_id"].iloc[7][:-1].upper()
    found = select(x.table, RunFilter(id_prefix=prefix))
    assert ids(found) == list(runs.loc[runs["run_id"].str.lower().str.startswith(prefix.lower()), "run_id"])
    trace = runs["trace_id"].iloc[3][:10]
    assert runs["run_id"].iloc[3] in ids(select(x.table, RunFilter(id_prefix=trace)))
    assert len(select(x.table, RunFilter(equals={"stop_reason": 10**6}))) == 0
    everything = np.arange(len(runs))
    by_tokens = order(x.table, everything, "tokens", True)
    assert list(runs["tokens"].iloc[by_tokens].fillna(-1)) == sorted(runs["tokens"].fillna(-1), reverse=True)
    by_agent = order(x.table, everything, "stop_reason", False)
    assert list(runs["stop_reason"].iloc[by_agent].fillna("~")) == sorted(runs["stop_reason"].fillna("~"))


def _get(url, host=None):
    req = urllib.request.Request(url, headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(req, timeout=30) as res:
            return res.status, res.headers, res.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def test_the_server_answers_pages_of_runs_and_one_run(population):
    _, r = population
    x = build(r, mode="served", jaeger="http://127.0.0.1:16686")
    srv, thread = server.start(x, html.page(x))
    try:
        status, headers, body = _get(srv.url)
        assert status == 200 and headers["Content-Type"].startswith("text/html")
        data = json.loads(re.search(rb'id="explorer-data">(.*?)</script>', body, re.S).group(1))
        assert data["meta"]["mode"] == "served" and data["table"]["columns"] == []
        assert json.loads(re.search(rb'id="explorer-details">(.*?)</script>', body, re.S).group(1)) == {}
        code = _codes(x, "stop_reason", "max_tokens")
        status, _, body = _get(srv.url + f"api/runs?draw=3&start=0&length=5&order=tokens&dir=desc&f.stop_reason={code}")
        page = json.loads(body)
        expected = r.runs[r.runs["stop_reason"] == "max_tokens"]
        assert status == 200 and page["draw"] == 3 and page["total"] == len(r.runs)
        assert page["filtered"] == len(expected) and len(page["rows"]["run_id"]) == min(5, len(expected))
        assert set(page["rows"]["stop_reason"]) == {"max_tokens"}
        assert page["rows"]["tokens"] == sorted(page["rows"]["tokens"], reverse=True)
        run_id = r.examples["repeated_call"][0].run_id
        status, _, body = _get(srv.url + "api/run?id=" + urllib.request.quote(run_id))
        detail = json.loads(body)
        assert status == 200 and detail["cells"]["run_id"] == run_id and detail["spans"]
        (ev,) = [v for k, v in detail["evidence"].items() if detail["strings"][int(k)] == "repeated_call"]
        assert ev["spans"] and ev["lines"]
        assert _get(srv.url + "api/run?id=nothing")[0] == 404
        assert _get(srv.url + "api/runs?start=x")[0] == 400
        assert _get(srv.url + "etc/passwd")[0] == 404
        assert _get(srv.url, host="evil.example:80")[0] == 403         # a name that resolves here is not ours
        post = urllib.request.Request(srv.url + "api/runs", data=b"x", method="POST")
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(post, timeout=30)
        assert e.value.code == 405
    finally:
        server.stop(srv, thread)


def _view(args, **kw):
    return subprocess.Popen([sys.executable, "-c", "from agentobs.cli.main import main; main()", "view", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, **kw)


def test_view_serves_until_ctrl_c_and_refuses_a_busy_port(population):
    path, r = population
    proc = _view([str(path)])
    try:
        line = proc.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert url, (line, proc.stderr.read() if proc.poll() is not None else "")
        assert f"{len(r.runs):,} runs" in line and "Ctrl-C" in line
        assert _get(url.group(0))[0] == 200
        busy = _view([str(path), "--port", url.group(1)])
        out, err = busy.communicate(timeout=120)
        assert busy.returncode == 2 and f"port {url.group(1)}" in err and "Traceback" not in err
        assert len(err.strip().splitlines()) == 1
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert "Explorer stopped." in out and "Traceback" not in err + out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_secrets_anywhere_in_a_span_reach_neither_the_page_nor_the_server(tmp_path):
    """Every entry of the secrets corpus where a span can carry it (attribute, also under a sensitive key, array,
    map, span and event names, event attributes, status message, resource attribute): the page written to a file
    and the server's answers hold none of them; the corpus's controls are shown unchanged."""
    corpus = json.loads((ROOT / "tests" / "data" / "secrets_corpus.json").read_text())
    spans, resource, secrets = [], {}, []
    for i, e in enumerate(corpus["secrets"]):
        sid, where, key, value = f"{i + 1:016x}", e["where"], e.get("key") or "app.value", e["value"]
        attrs, name, events, error = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"}, "t", (), None
        if where in ("attribute", "array", "kvlist"):
            attrs[key] = value
        elif where == "span_name":
            name = value
        elif where == "event_name":
            events = [(value, T0 + S, {})]
        elif where == "event_attribute":
            events = [("note", T0 + S, {key: value})]
        elif where == "status_message":
            error = value
        elif where == "resource_attribute":
            resource[key] = value
        else:
            continue                 # scope names and links: not shown
        secrets += e["secret"]
        spans.append(_span(TRACE, sid, f"{999:016x}", name, T0 + S, T0 + 2 * S, attrs, events=events, error=error))
    controls = [c for c in corpus["controls"] if c["where"] == "attribute"]
    spans.append(_span(TRACE, f"{998:016x}", f"{999:016x}", "controls", T0, T0 + S,
                       {"gen_ai.operation.name": "execute_tool", **{c["key"]: c["value"] for c in controls}}))
    spans.append(_span(TRACE, f"{999:016x}", None, "invoke_agent a", T0, T0 + 3 * S,
                       {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}))
    path = tmp_path / "secrets.jsonl"
    path.write_text(_line(spans, resource) + "\n")
    out = tmp_path / "r.html"
    assert CliRunner().invoke(cli, ["report", str(path), "--format", "html", "--out", str(out)]).exit_code == 0
    page = out.read_text()
    data = json.loads(re.search(r'id="explorer-data">(.*?)</script>', page, re.S).group(1))
    shown = "\n".join(data["strings"])
    assert not [s for s in secrets if s in page or s in shown]
    assert "[REDACTED]" in shown
    for c in controls:                            # shown as written (numbers and booleans as JSON writes them)
        assert (c["value"] if isinstance(c["value"], str) else json.dumps(c["value"])) in shown, c
    r = analyze([str(path)])
    x = build(r, mode="served")
    detail = dumps(run_detail(x, str(r.runs["run_id"].iloc[0])))
    assert detail != "null" and not [s for s in secrets if s in json.loads(detail).__repr__()]


def test_chart_labels_are_distinct_and_short_however_many_share_a_prefix():
    prefix = "a stop reason that goes on and on " * 3
    got = labels([f"{prefix}{i}" for i in range(4000)] + ["x", "x", "x (2)"])
    assert len(set(got)) == len(got) == 4003
    assert max(map(len, got)) <= LABEL_CHARS + len(" (4000)")
    assert got[0] == prefix[: LABEL_CHARS - 1] + "…" and got[1] == got[0] + " (2)" and got[3999] == got[0] + " (4000)"
    assert got[-3:] == ["x", "x (2)", "x (2) (2)"]


def test_the_string_table_masks_text_once_and_numbers_never():
    st = Strings()
    a = st.code("mail bob@example.com")
    assert st.code("mail bob@example.com") == a and "bob@example.com" not in st.values[a]
    assert st.values[st.code("4111111111111111", mask=False)] == "4111111111111111"
    assert st.values[st.code("4111111111111111")] == "[REDACTED]"
    assert st.values[st.code("x\x1b[2Jy\u202e")] == "x [2Jy "
    assert len(st.values[st.code("L" * 10_000)]) == 2_000
    assert st.code(None) == st.code(float("nan")) == st.code(pd.NA) == -1
    assert "<" not in dumps({"a": "</script><script>alert(1)</script>&"})


def test_a_segment_attribute_of_the_root_spans_is_a_column_and_a_filter(tmp_path):
    lines = []
    for i, tenant in enumerate(["acme", "globex", "acme"]):
        trace, root = f"{i + 1:032x}", f"{i + 1:016x}"
        lines.append(_line([
            _span(trace, root, None, "invoke_agent a", T0 + i * S, T0 + i * S + S // 2,
                  {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a", "app.tenant": tenant}),
            _span(trace, f"{i + 1:08x}{1:08x}", root, "chat m", T0 + i * S, T0 + i * S + S // 4,
                  {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.usage.input_tokens": 10,
                   "gen_ai.usage.output_tokens": 1})]))
    path = tmp_path / "tenants.jsonl"
    path.write_text("\n".join(lines) + "\n")
    r = analyze([str(path)], Options(segments=("agent", "model", "app.tenant")))
    x = build(r, mode="served")
    assert "app.tenant" in x.table.columns
    rows = select(x.table, RunFilter(equals={"app.tenant": _codes(x, "app.tenant", "acme")}))
    assert len(rows) == 2 and {x.strings.values[c] for c in x.table.columns["app.tenant"].data[rows]} == {"acme"}
