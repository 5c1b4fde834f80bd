"""The explorer in a real headless Chromium: Debian's ``chromium`` (scripts/test.sh installs it), driven by
Playwright for Python; no browser is ever downloaded. The page the demo writes, opened from disk with every request
that leaves the machine blocked and counted (none is made), and the same explorer served by ``agentobs view``:

- it opens with no console error, its five charts drawn, with values on hover and zoom by dragging;
- a filter (a stop reason, an id prefix) narrows the runs table to exactly the runs it should, and the column
  chooser adds a column;
- a signature leads to its runs and to one run, and back; the run's waterfall shows every span with its
  duration, the signature's evidence spans highlighted, and a link to Jaeger when AGENTOBS_JAEGER_URL is set;
- a sub-agent's spans fold away under it;
- a page over its limits says what it left out;
- ``agentobs view`` does all of this with the runs and spans loaded from the server, the evidence found for any
  run, and stops on Ctrl-C.

Screenshots are kept in ``test-output/browser/`` (git-ignored).
"""
import os
import re
import shutil
import signal
import subprocess
import sys

import pytest
from click.testing import CliRunner
from locations import ROOT

from agentobs.analysis.report.engine import analyze
from agentobs.analysis.report.summary import Options
from agentobs.cli.main import cli

SHOTS = ROOT / "test-output" / "browser"
CHROMIUM = "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else shutil.which("chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run"]
JAEGER = "http://127.0.0.1:16686"
RUNS = 400
playwright = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is in the dev extra")
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(CHROMIUM is None, reason="scripts/test.sh installs Debian's chromium")]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """``agentobs demo`` with a population of RUNS runs: its report.html, its traces and their report."""
    out = tmp_path_factory.mktemp("demo")
    res = CliRunner().invoke(cli, ["demo", "--runs", str(RUNS), "--out-dir", str(out)],
                             env={"AGENTOBS_JAEGER_URL": JAEGER})
    assert res.exit_code == 0, res.output
    traces = out / "simulate-traces.jsonl"
    return out / "report.html", traces, analyze([str(traces)], Options(jaeger_url=JAEGER))


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    with playwright.sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("profile")), executable_path=CHROMIUM, headless=True, args=FLAGS,
            viewport={"width": 1400, "height": 1000})
        yield ctx
        ctx.close()


class Tab:
    """A page of the browser, with its console errors and the requests it tried to send off this machine."""

    def __init__(self, ctx, url):
        self.errors, self.outside = [], []
        self.page = ctx.new_page()
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.route("**/*", self._route)
        self.page.goto(url)
        self.page.wait_for_selector("body[data-ready]", state="attached", timeout=120_000)

    def _route(self, route):
        url = route.request.url
        if url.startswith(("file://", "http://127.0.0.1:", "blob:", "data:")):
            route.continue_()
        else:
            self.outside.append(url)
            route.abort()

    def go(self, hash_, view):
        self.page.evaluate("h => { location.hash = h; }", hash_)
        self.page.wait_for_selector(f'body[data-view="{view}"]', state="attached")

    def info(self):
        return self.page.inner_text("#runs-panel .dt-info")

    def shot(self, name):
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)

    def close(self):
        assert self.errors == [], self.errors
        assert self.outside == [], self.outside
        self.page.close()


def _column(tab, title):
    heads = tab.page.eval_on_selector_all("#runs-panel .dt-scroll-head th", "ths => ths.map(t => t.innerText.trim())")
    return heads.index(title)


def _cells(tab, title):
    i = _column(tab, title)
    return tab.page.eval_on_selector_all("#runs-table tbody tr",
                                         f"trs => trs.map(tr => tr.children[{i}] && tr.children[{i}].innerText)")


def _wait_info(tab, pattern):
    tab.page.wait_for_function("p => new RegExp(p).test(document.querySelector('#runs-panel .dt-info').innerText)",
                               arg=pattern, timeout=60_000)
    return tab.info()


# -- the page the demo writes ----------------------------------------------------------------------------------

def test_the_demo_page_opens_offline_with_its_charts(demo, browser):
    page_path, _, r = demo
    tab = Tab(browser, page_path.as_uri())
    p = tab.page
    assert p.get_attribute("body", "data-charts") == "5"
    assert p.eval_on_selector_all("#plots .plot", "ds => ds.filter(d => d.querySelector('.main-svg')).length") == 5
    assert "runs" in p.inner_text("#view-overview .summary") and p.is_visible("#signatures")
    # values on hover
    bar = p.locator("#plot-stop_reasons .bars .point path").last         # the top bar: the most common stop reason
    bar.evaluate("b => b.scrollIntoView({block: 'center'})")
    box = bar.bounding_box()
    p.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    p.wait_for_selector("#plot-stop_reasons .hoverlayer .hovertext", timeout=10_000)
    hover = p.eval_on_selector("#plot-stop_reasons .hoverlayer", "g => g.textContent")
    top = r.runs["stop_reason"].fillna("(not recorded)").value_counts()
    assert hover == f"{top.index[0]}: {top.iloc[0]} runs", hover
    # zoom: a drag across the histogram narrows its x axis
    before = p.evaluate("document.getElementById('plot-steps_histogram')._fullLayout.xaxis.range.slice()")
    drag = p.locator("#plot-steps_histogram .nsewdrag")
    drag.evaluate("d => d.scrollIntoView({block: 'center'})")
    box = drag.bounding_box()
    p.mouse.move(box["x"] + box["width"] * 0.2, box["y"] + box["height"] * 0.5)
    p.mouse.down()
    p.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.5, steps=8)
    p.mouse.up()
    p.wait_for_function("b => { const r = document.getElementById('plot-steps_histogram')._fullLayout.xaxis.range;"
                        " return r[1] - r[0] < (b[1] - b[0]) * 0.8; }", arg=before, timeout=10_000)
    tab.shot("overview")
    assert len(r.runs) == RUNS
    tab.close()


def test_a_filter_narrows_the_runs_table(demo, browser):
    page_path, _, r = demo
    tab = Tab(browser, page_path.as_uri() + "#runs")
    p = tab.page
    assert re.search(rf"of {RUNS:,}$", tab.info()), tab.info()
    stop = r.runs["stop_reason"].value_counts().index[1]            # not the most common one
    expected = int((r.runs["stop_reason"] == stop).sum())
    p.select_option('select[data-facet="stop_reason"]', label=f"{stop} ({expected})")
    got = _wait_info(tab, rf"of {expected} \(of {RUNS:,}\)")
    assert f"of {expected} (of {RUNS:,})" in got
    assert set(_cells(tab, "stop reason")) == {stop}
    assert f"stop_reason={stop}" in p.evaluate("location.hash")
    tab.shot("runs-filtered")
    p.click("#filters button")                                        # clear
    _wait_info(tab, rf"of {RUNS:,}$")
    prefix = str(r.runs["run_id"].iloc[42])[:-1]
    want = sorted(str(x) for x in r.runs["run_id"] if str(x).lower().startswith(prefix.lower()))
    p.fill('#filters input[name="q"]', prefix)
    _wait_info(tab, rf"of {len(want)} \(of")
    assert sorted(_cells(tab, "run")) == want[:25]
    # the column chooser
    assert "trace id" not in p.inner_text("#runs-panel .dt-scroll-head")
    p.click("#runs-panel .buttons-colvis")
    p.click(".dt-button-collection button:has-text('trace id')")
    p.keyboard.press("Escape")
    p.wait_for_function("() => document.querySelector('#runs-panel .dt-scroll-head').innerText.includes('trace id')")
    tab.close()


def test_a_signature_leads_to_a_run_with_its_evidence_and_back(demo, browser):
    page_path, _, r = demo
    tab = Tab(browser, page_path.as_uri())
    p = tab.page
    p.click("#view-overview a.signature-link:text-is('repeated_call')")
    p.wait_for_selector('body[data-view="signature"]', state="attached")
    sig = next(s for s in r.signatures if s.name == "repeated_call")
    assert p.inner_text("#signature-body h2") == "repeated_call"
    assert f"of {sig.runs} (of {RUNS:,})" in _wait_info(tab, rf"of {sig.runs} \(")
    p.click("#filters button")                                   # clear: the page keeps its signature
    p.wait_for_timeout(300)
    assert f"of {sig.runs} (of {RUNS:,})" in _wait_info(tab, rf"of {sig.runs} \(")
    example = r.examples["repeated_call"][0]
    p.click(f"#signature-body a.example-run:text-is('{example.run_id}')")
    p.wait_for_selector('body[data-run="loaded"]', state="attached")
    run = r.runs.set_index("run_id").loc[example.run_id]
    rows = p.locator("#run-body .waterfall .wf-row:not(.wf-head)")
    assert rows.count() == int(run["spans"])
    durations = [float(t.replace(",", "")) for t in p.eval_on_selector_all(
        "#run-body .wf-row:not(.wf-head) .wf-dur", "es => es.map(e => e.innerText)")]
    assert len(durations) == rows.count() and min(durations) >= 0
    assert durations[0] == pytest.approx(float(run["wall_s"]) * 1000, abs=1)      # the root spans the run
    marked = p.eval_on_selector_all("#run-body .wf-row.evidence .wf-label", "es => es.map(e => e.innerText)")
    named = [line.split(" ", 1)[1] for line in example.evidence if re.match(r"[0-9a-f]+/[0-9a-f]+ ", line)]
    assert marked and all(any(n.startswith(m) for n in named) for m in marked)
    assert p.locator("#run-body .wf-row.evidence .wf-star").count() == len(marked)
    jaeger = p.get_attribute("#run-body a.jaeger-link", "href")
    assert jaeger == f"{JAEGER}/trace/{run['trace_id']}"
    p.locator("#run-body .wf-row:not(.wf-head)").nth(1).click()                  # a span's attributes
    assert "span.id" in p.inner_text("#run-body .wf-attrs")
    tab.shot("run-evidence")
    p.click("#run-body a.back")
    p.wait_for_selector('body[data-view="signature"]', state="attached")
    assert p.inner_text("#signature-body h2") == "repeated_call"
    p.go_back()
    p.wait_for_selector('body[data-view="run"]', state="attached")
    tab.close()


def _nested_page(tmp_path, limits=None):
    from explorer_spans import _line, _nested_run

    from agentobs.analysis.explorer import html
    path = tmp_path / "nested.jsonl"
    path.write_text(_line(_nested_run()) + "\n")
    page = tmp_path / "nested.html"
    page.write_text(html.render(analyze([str(path)]), limits=limits))
    return page


def test_a_sub_agent_folds_away(browser, tmp_path):
    tab = Tab(browser, _nested_page(tmp_path).as_uri())
    tab.go("#runs", "runs")
    tab.page.click("#runs-table tbody tr")
    tab.page.wait_for_selector('body[data-run="loaded"]', state="attached")
    rows = tab.page.locator("#run-body .wf-row:not(.wf-head)")
    visible = lambda: tab.page.eval_on_selector_all(                       # noqa: E731
        "#run-body .wf-row:not(.wf-head)", "rs => rs.filter(r => !r.hidden).map(r => r.innerText.split('\\n')[0])")
    assert rows.count() == 6 and len(visible()) == 6
    researcher = rows.filter(has_text="invoke_agent researcher")
    researcher.locator(".wf-toggle").click()
    assert [v.strip("▾▸ ") for v in visible()] == ["invoke_agent planner", "chat gpt-4o", "invoke_agent researcher",
                                                   "execute_tool write"]
    tab.shot("sub-agent-folded")
    researcher.locator(".wf-toggle").click()
    assert len(visible()) == 6
    assert tab.page.locator("#run-body .wf-row.error").count() == 1
    tab.close()


def test_a_page_over_its_limits_says_what_it_left_out(browser, tmp_path):
    """Over its limits a page holds the spans of the runs its signatures give as examples only: a run that is no
    example (a plain one, next to the nested run, an example of tool_error_recovered) says where its spans are."""
    from explorer_spans import T0, _line, _nested_run, _span

    from agentobs.analysis.explorer import html
    from agentobs.analysis.explorer.model import PageLimits
    plain, root = "cd" * 16, f"{1:016x}"
    spans = [_span(plain, root, None, "invoke_agent planner", T0, T0 + 4 * 10**9,
                   {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"}),
             _span(plain, f"{2:016x}", root, "chat gpt-4o", T0 + 10**9, T0 + 2 * 10**9,
                   {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                    "gen_ai.provider.name": "openai", "gen_ai.usage.input_tokens": 100,
                    "gen_ai.usage.output_tokens": 20})]
    path = tmp_path / "two.jsonl"
    path.write_text(_line(_nested_run()) + "\n" + _line(spans) + "\n")
    report = analyze([str(path)])
    assert plain not in str([s.get("examples") for s in report.to_dict()["signatures"]])
    page = tmp_path / "two.html"
    page.write_text(html.render(report, limits=PageLimits(runs=0, spans=0)))
    tab = Tab(browser, page.as_uri() + "#run/" + plain)
    assert "agentobs view" in tab.page.inner_text("#left-out")
    tab.page.wait_for_selector('body[data-run="no-spans"]', state="attached")
    assert "does not hold this run's spans" in tab.page.inner_text("#run-body")
    tab.close()


def test_a_run_of_thousands_of_spans_is_drawn_a_slice_at_a_time(browser, tmp_path):
    from explorer_spans import T0, _line, _span

    from agentobs.analysis.explorer import html
    trace, root, n = "cd" * 16, f"{1:016x}", 4_500
    spans = [_span(trace, root, None, "invoke_agent big", T0, T0 + n * 10**6,
                   {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "big"})]
    spans += [_span(trace, f"{i + 2:016x}", root, "execute_tool t", T0 + i * 10**6, T0 + i * 10**6 + 5 * 10**5,
                    {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"}) for i in range(n)]
    path = tmp_path / "big.jsonl"
    path.write_text(_line(spans) + "\n")
    page = tmp_path / "big.html"
    page.write_text(html.render(analyze([str(path)])))
    tab = Tab(browser, page.as_uri() + "#run/" + trace)
    tab.page.wait_for_selector('body[data-run="loaded"]', state="attached")
    rows = tab.page.locator("#run-body .wf-row:not(.wf-head)")
    assert rows.count() == 2000 and "of 4,501 spans" in tab.page.inner_text("#run-body .wf-more")
    tab.page.click("#run-body .wf-more")
    tab.page.click("#run-body .wf-more")
    assert rows.count() == n + 1 and tab.page.locator("#run-body .wf-more").is_hidden()
    tab.close()


# -- agentobs view ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def served(demo):
    _, traces, _r = demo
    proc = subprocess.Popen([sys.executable, "-c", "from agentobs.cli.main import main; main()", "view", str(traces)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT), "AGENTOBS_JAEGER_URL": JAEGER})
    line = proc.stdout.readline()
    url = re.search(r"http://127\.0\.0\.1:\d+/", line)
    assert url, (line, proc.stderr.read() if proc.poll() is not None else "")
    yield url.group(0), proc
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def test_view_serves_the_explorer_with_runs_and_spans_on_demand(demo, served, browser):
    _, _, r = demo
    url, proc = served
    tab = Tab(browser, url)
    p = tab.page
    assert p.get_attribute("body", "data-mode") == "served" and p.get_attribute("body", "data-charts") == "5"
    tab.go("#runs", "runs")
    assert re.search(rf"of {RUNS:,}$", _wait_info(tab, rf"of {RUNS:,}$"))
    stop = r.runs["stop_reason"].value_counts().index[1]
    expected = int((r.runs["stop_reason"] == stop).sum())
    p.select_option('select[data-facet="stop_reason"]', label=f"{stop} ({expected})")
    _wait_info(tab, rf"of {expected} \(of {RUNS:,}\)")
    assert set(_cells(tab, "stop reason")) == {stop}
    tab.shot("view-runs-filtered")
    # a signature, then a run of it that is not one of its examples: the server finds its evidence
    tab.go("#signature/repeated_call", "signature")
    sig = next(s for s in r.signatures if s.name == "repeated_call")
    _wait_info(tab, rf"of {sig.runs} \(")
    examples = {e.run_id for e in r.examples["repeated_call"]}
    other = next(x for x in _cells(tab, "run") if x not in examples)
    p.click(f"#runs-table a.run-link:text-is('{other}')")
    p.wait_for_selector('body[data-run="loaded"]', state="attached")
    run = r.runs.set_index("run_id").loc[other]
    assert p.locator("#run-body .wf-row:not(.wf-head)").count() == int(run["spans"])
    assert p.locator("#run-body .wf-row.evidence").count() >= 2
    durations = p.eval_on_selector_all("#run-body .wf-row:not(.wf-head) .wf-dur", "es => es.map(e => e.innerText)")
    assert all(re.fullmatch(r"[\d,.]+", d) for d in durations)
    assert p.get_attribute("#run-body a.jaeger-link", "href") == f"{JAEGER}/trace/{run['trace_id']}"
    tab.shot("view-run-evidence")
    p.click("#run-body a.back")
    p.wait_for_selector('body[data-view="signature"]', state="attached")
    tab.close()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "Explorer stopped." in out and "Traceback" not in err, err
