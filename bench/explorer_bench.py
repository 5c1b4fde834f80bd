"""The run explorer: the page ``agentobs report --format html`` writes, opened in Chromium, at 1k, 10k and 100k runs;
``agentobs view`` on the 100k runs; the chart labels of a report whose stop reasons share a long prefix.

Data: the simulated populations of ``bench.analysis_data.population`` (about 16 spans a run: 1k, 10k and 100k runs,
16k to 1.6M spans), and a file of 4,000 runs whose stop reasons are 4,000 distinct texts sharing their first 120
characters (they all shorten to the same 60-character chart label).

* **page size**: the page ``html.render`` writes for each population (MiB), with the time it takes in Python.
  Within the page's limits (10,000 runs, 200,000 spans) a page holds every run's spans; past them, every run's row
  and the spans of the signatures' example runs.
* **first render**: the page opened from disk in Debian's Chromium (headless, driven by Playwright, a fresh
  context each time), from navigation start to the page's own ready mark (``data-render-ms``: the libraries started,
  the five charts drawn, the runs table built), repeats interleaved across the three pages.
* **agentobs view on 100k runs**: the served page's first render, and the server's answers to a page of the runs
  table (filtered by a stop reason, sorted by tokens, 25 rows) and to one run's waterfall with its evidence, timed
  through HTTP on 127.0.0.1, interleaved.
* **chart labels** (issue 43: the label helper was cubic, 478 s against 1.3 s for JSON on such a file):
  ``labels`` on the 8,000 and 4,000 shared-prefix texts (linear: 2 x), and ``agentobs report --format html``
  against ``--format json`` on the 4,000-run file, both whole commands in this process, interleaved. The HTML
  report does more than the JSON one (every run's waterfall, the runs table, the libraries): the ratio is bounded,
  not 1.

Targets: labels 8,000 / 4,000 <= 3 (linear is 2, quadratic 4, cubic 8); HTML / JSON report on the 4,000
shared-prefix stop reasons <= 6; the page of 100k runs <= 64 MiB.

    python -m bench.explorer_bench [--quick]
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import urllib.request
from pathlib import Path

from .common import Figure, Plan, Target, cache_dir, module_main, ratio, summarize, time_interleaved

NAME = "explorer"
TITLE = "The run explorer: page size and first render in Chromium, agentobs view, chart labels"
SIZES = (1_000, 10_000, 100_000)
QUICK_SIZES = (1_000,)
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run"]
SHARED_PREFIX = ("the tool returned an error the agent could not recover from, so the run stopped here with the "
                 "reason numbered ")

TARGETS = [
    Target("explorer: chart labels, 8,000 / 4,000 shared-prefix stop reasons",
           "labels: 8,000 / 4,000 shared-prefix stop reasons", "<=", 3.0),
    Target("explorer: report html / json, 4,000 shared-prefix stop reasons",
           "report html / json: 4,000 shared-prefix stop reasons", "<=", 6.0),
    Target("explorer: page size, 100k runs", "page size: 100k runs", "<=", 64.0),
]

FULL = Plan(repeats=5, iterations=1, warmup=1)
QUICK = Plan(repeats=2, iterations=1, warmup=1)


def _k(n: int) -> str:
    return f"{n // 1000}k"


def chromium() -> str | None:
    return "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else shutil.which("chromium")


# -- pages -----------------------------------------------------------------------------------------------------

def _pages(sizes: tuple[int, ...], folder: Path) -> tuple[dict[int, Path], list[Figure]]:
    """Each population's page, written to ``folder``; its size and the time to make it (analysis excluded)."""
    from agentobs.analysis.explorer import html
    from agentobs.analysis.report.engine import analyze

    from .analysis_data import population

    pages, figures = {}, []
    for n in sizes:
        path, spans = population(n)
        report = analyze([str(path)])
        t0 = time.perf_counter()
        text = html.render(report)
        took = time.perf_counter() - t0
        page = folder / f"explorer-{n}.html"
        page.write_text(text, encoding="utf-8")
        held = "every run's spans" if '"left_out":null' in text else "every row, the examples' spans"
        figures.append(summarize(f"page size: {_k(n)} runs", [len(text.encode()) / 2**20], "MiB",
                                 notes=f"{n:,} runs, {spans:,} spans; the page holds {held}"))
        figures.append(summarize(f"page made in Python: {_k(n)} runs", [took], "s",
                                 notes="html.render on the analysed report (the analysis not counted)"))
        pages[n] = page
        del report, text
    return pages, figures


def _first_render(urls: dict[str, str], plan: Plan) -> dict[str, list[float]]:
    """ms from navigation start to the page's ready mark, per url, repeats interleaved (a fresh context each)."""
    from playwright.sync_api import sync_playwright

    out: dict[str, list[float]] = {k: [] for k in urls}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), headless=True, args=CHROMIUM_FLAGS)
        try:
            names = list(urls)
            for r in range(plan.warmup + plan.repeats):
                for name in names[r % len(names):] + names[:r % len(names)]:
                    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
                    page = ctx.new_page()
                    errors: list[str] = []
                    page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
                    page.goto(urls[name], timeout=600_000)
                    page.wait_for_selector("body[data-ready]", state="attached", timeout=600_000)
                    if errors:
                        raise RuntimeError(f"{name}: {errors[0]}")
                    if r >= plan.warmup:
                        out[name].append(float(page.get_attribute("body", "data-render-ms") or "nan"))
                    ctx.close()
        finally:
            browser.close()
    return out


def _served(n: int, plan: Plan) -> list[Figure]:
    """agentobs view on the population of ``n`` runs: first render, a page of the runs table, one run."""
    from agentobs.analysis.explorer import html, server
    from agentobs.analysis.explorer.model import build
    from agentobs.analysis.report.engine import analyze

    from .analysis_data import population

    path, _ = population(n)
    report = analyze([str(path)])
    x = build(report, mode="served")
    srv, thread = server.start(x, html.page(x))
    try:
        stop = report.runs["stop_reason"].value_counts().index[1]
        code = x.strings.code(stop)
        run_id = next(iter(report.examples.values()))[0].run_id
        runs_url = f"{srv.url}api/runs?draw=1&start=0&length=25&order=tokens&dir=desc&f.stop_reason={code}"
        run_url = f"{srv.url}api/run?id={urllib.request.quote(run_id)}"

        def get(url: str) -> bytes:
            with urllib.request.urlopen(url, timeout=600) as res:
                return res.read()

        assert json.loads(get(runs_url))["filtered"] > 0 and json.loads(get(run_url))["spans"]
        ns = time_interleaved({"runs": lambda: get(runs_url), "run": lambda: get(run_url)}, plan)
        render = _first_render({"served": srv.url}, plan)["served"]
    finally:
        server.stop(srv, thread)
    k = _k(n)
    return [summarize(f"view, first render in Chromium: {k} runs", render, "ms",
                      notes="the served page (no rows, no spans in it) to its ready mark"),
            summarize(f"view, /api/runs (a stop reason, by tokens, 25 rows): {k} runs", [v / 1e6 for v in ns["runs"]],
                      "ms", notes="filter and sort over every run, on 127.0.0.1"),
            summarize(f"view, /api/run (waterfall and evidence): {k} runs", [v / 1e6 for v in ns["run"]], "ms",
                      notes="one run's spans and its signatures' evidence, found on demand")]


# -- chart labels ----------------------------------------------------------------------------------------------

def _shared_prefix_file(n: int) -> Path:
    """``n`` runs (an agent invocation and a model call each) whose stop reasons share SHARED_PREFIX, made once."""
    path = Path(cache_dir()) / f"shared-prefix-stops-{n}.jsonl"
    if path.exists():
        return path
    t0 = 1_780_000_000 * 10**9
    spans = []
    for i in range(n):
        trace, root, start = f"{i + 1:032x}", f"{i + 1:016x}", t0 + i * 10**9

        def attrs(d: dict[str, object]) -> list[dict[str, object]]:
            return [{"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}}
                    for k, v in d.items()]
        spans.append({"traceId": trace, "spanId": root, "name": "invoke_agent desk", "kind": 1,
                      "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 5 * 10**8),
                      "attributes": attrs({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "desk",
                                           "agentobs.stop_reason": f"{SHARED_PREFIX}{i}", "agentobs.steps": 1 + i % 7,
                                           "agentobs.status": "stopped"}), "status": {"code": 1}})
        spans.append({"traceId": trace, "spanId": f"{i + 1:08x}{1:08x}", "parentSpanId": root, "name": "chat m",
                      "kind": 3, "startTimeUnixNano": str(start + 10**8), "endTimeUnixNano": str(start + 4 * 10**8),
                      "attributes": attrs({"gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
                                           "gen_ai.usage.input_tokens": 100 + i % 50,
                                           "gen_ai.usage.output_tokens": 20}), "status": {"code": 0}})
    tmp = path.with_name(f"{path.name}.{os.getpid()}.partial")
    tmp.write_text(json.dumps({"resourceSpans": [{"resource": {"attributes": []},
                                                  "scopeSpans": [{"scope": {"name": "bench"}, "spans": spans}]}]})
                   + "\n")
    os.replace(tmp, path)
    return path


def _labels(plan: Plan) -> list[Figure]:
    from click.testing import CliRunner

    from agentobs.analysis.explorer.text import labels
    from agentobs.cli.main import cli

    small = [f"{SHARED_PREFIX}{i}" for i in range(4000)]
    large = [f"{SHARED_PREFIX}{i}" for i in range(8000)]
    assert len(set(labels(small))) == 4000
    ns = time_interleaved({"4,000": lambda: labels(small), "8,000": lambda: labels(large)},
                          Plan(repeats=plan.repeats * 3, iterations=3, warmup=1))
    figures = [summarize("labels: 4,000 shared-prefix stop reasons", [v / 1e6 for v in ns["4,000"]], "ms"),
               summarize("labels: 8,000 shared-prefix stop reasons", [v / 1e6 for v in ns["8,000"]], "ms"),
               ratio("labels: 8,000 / 4,000 shared-prefix stop reasons", ns["8,000"], ns["4,000"],
                     notes="linear: 2")]
    source = _shared_prefix_file(4000)
    out = Path(tempfile.mkdtemp(prefix="explorer-bench-"))
    try:
        def report(fmt: str) -> None:
            res = CliRunner().invoke(cli, ["report", str(source), "--format", fmt, "--out", str(out / f"r.{fmt}")])
            if res.exit_code != 0:
                raise RuntimeError(res.output)
        cmds = time_interleaved({"html": lambda: report("html"), "json": lambda: report("json")}, plan)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    figures += [summarize("report --format html: 4,000 shared-prefix stop reasons", [v / 1e9 for v in cmds["html"]],
                          "s", notes="the whole command, in this process"),
                summarize("report --format json: 4,000 shared-prefix stop reasons", [v / 1e9 for v in cmds["json"]],
                          "s"),
                ratio("report html / json: 4,000 shared-prefix stop reasons", cmds["html"], cmds["json"],
                      notes="was 478 s / 1.3 s with the cubic label helper")]
    return figures


# -- the module ------------------------------------------------------------------------------------------------

def run(quick: bool) -> list[Figure]:
    plan = QUICK if quick else FULL
    figures = _labels(plan)
    if chromium() is None:
        raise RuntimeError("Debian's chromium is needed for the first-render figures (apt-get install chromium)")
    sizes = QUICK_SIZES if quick else SIZES
    folder = Path(tempfile.mkdtemp(prefix="explorer-pages-"))
    try:
        pages, made = _pages(sizes, folder)
        figures += made
        render = _first_render({_k(n): p.as_uri() for n, p in pages.items()}, plan)
        figures += [summarize(f"first render in Chromium: {k} runs", v, "ms",
                              notes="navigation start to the page's ready mark (charts drawn, runs table built)")
                    for k, v in render.items()]
        first = _k(sizes[0])
        figures += [ratio(f"first render: {k} / {first} runs", v, render[first],
                          notes="the same repeat (Plotly and DataTables start in every page: a fixed cost)")
                    for k, v in render.items() if k != first]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    figures += _served(sizes[-1], plan)
    return figures


if __name__ == "__main__":
    module_main(run)
