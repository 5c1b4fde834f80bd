"""Loading and analysing OTLP JSON at scale: three files of about 1,000,000 spans, side by side.

* **uniform**: a simulated population (``agentobs simulate``: real span shapes, every failure pattern, but one
  stand-in model and a handful of token counts, so every per-call computation hits a cache);
* **realistic**: ``bench.realistic`` traces in the GenAI dialect (13 models of 8 providers, heavy-tailed token
  counts, varied tool arguments, errors, runs inside HTTP request spans and job spans);
* **mixed**: the same generator with six span dialects (GenAI current and older names, OpenInference,
  OpenLLMetry, Langfuse, MLflow), one per trace.

All three are generated once (seed 2026) into ``$AGENTOBS_BENCH_DATA`` (default ``~/.cache/agentobs/bench``).

Uniform and mixed, in this process with repeats interleaved: our loader (``agentobs.analysis.load_file``), a
straightforward per-span ``json`` loop into pandas (rows as dicts, attributes flattened), and
``pyarrow.json.read_json`` parsing alone. Uniform also: the full report in this process (``analyze`` + JSON),
peak memory of a load in a fresh process, and how load time grows from 10,000 to 1,000,000 spans.

In fresh processes (``bench/analysis_child.py``; wall time from outside, so start-up and exit count; peak
memory as VmHWM), repeats interleaved: ``agentobs report FILE --out report.json`` (the CLI: tables to
/dev/null, the JSON file written) against the straightforward loop that only loads the file; and the report's
phases (``bench/analysis_phases.py``: load, runs table, pricing, signatures, percentiles, caps, render), timed
by wrapping the library functions the report calls, in a process that starts cold as the CLI does. Growth of
the realistic report from 10,000 to 1,000,000 spans: the same phases in processes that first run one untimed
report on the 10k file (so one-time costs such as reading genai-prices' data are not billed to the small
file), time per span at each size.

Quick mode (``--quick``): about 100,000 spans per file, fewer repeats.

    python -m bench.analysis_bench [--quick]
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .analysis_child import run_child
from .analysis_contenders import full_report, ours, parse_alone, straightforward
from .analysis_data import population, prefix, realistic
from .analysis_phases import PHASES
from .common import Figure, Plan, Target, module_main, ratio, summarize, time_interleaved

NAME = "analysis"
TITLE = "Analysis: loading and reporting on 1,000,000 spans of OTLP JSON (uniform, realistic, mixed dialects)"
FULL_RUNS = 62_000          # about 1,003,000 spans
QUICK_RUNS = 6_500          # about 105,000 spans
FULL_SPANS = 1_000_000
QUICK_SPANS = 100_000
SMALL_SPANS = 10_000

TARGETS = [
    Target("analysis (uniform): straightforward loop / ours", "uniform: straightforward loop / ours", ">=", 3.0),
    Target("analysis (uniform): ours / pyarrow parse alone", "uniform: ours / pyarrow parse alone", "<=", 1.5),
    Target("analysis (uniform): full report on the file (s)", "uniform: full report (analyze + JSON)", "<=", 15.0),
    Target("analysis (uniform): peak memory / file size (load)", "uniform: peak memory / file size (load)", "<=", 2.5),
    Target("analysis (uniform): load time growth 10k -> 1M spans, / linear",
           "uniform: load growth 10k -> full, / linear", "<=", 1.2),
    Target("analysis (realistic): straightforward loop / agentobs report",
           "realistic: straightforward loop / agentobs report", ">=", 3.0),
    Target("analysis (realistic): peak memory of the report / file size",
           "realistic: peak memory of agentobs report / file size", "<=", 2.5),
    Target("analysis (realistic): pricing share of the report (%, < 5)", "realistic: pricing share of the report",
           "<=", 5.0),
    Target("analysis (realistic): report time growth 10k -> 1M spans, / linear",
           "realistic: report growth 10k -> full, / linear", "<=", 1.2),
    Target("analysis (mixed dialects): straightforward loop / ours", "mixed: straightforward loop / ours", ">=", 3.0),
    Target("analysis (mixed dialects): ours / pyarrow parse alone", "mixed: ours / pyarrow parse alone", "<=", 1.5),
]

REPORT_CLI = "agentobs report FILE --out report.json (fresh process)"
LOOP_CHILD = "straightforward loop (fresh process)"


def _s(xs: list[float]) -> list[float]:
    return [x / 1e9 for x in xs]


def _mb(path: Path) -> float:
    return path.stat().st_size / 2**20


def _interleave(contenders: dict[str, Callable[[], dict[str, Any]]], repeats: int) -> dict[str, list[dict[str, Any]]]:
    """Each contender (a measurement in a fresh process) ``repeats`` times, the order rotating every repeat."""
    names = list(contenders)
    out: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    for r in range(repeats):
        for name in names[r % len(names):] + names[:r % len(names)]:
            out[name].append(contenders[name]())
    return out


def _load_side_by_side(label: str, path: Path, n_spans: int, repeats: int) -> tuple[list[Figure], list[float]]:
    """Ours, the straightforward loop and pyarrow's parse alone on one file, in this process, interleaved."""
    g = NAME
    t = time_interleaved({"ours": lambda: ours(path), "straightforward": lambda: straightforward(path),
                          "parse": lambda: parse_alone(path)}, Plan(repeats=repeats, iterations=1, warmup=1))
    figs = [
        summarize(f"{label}: ours: load_file ({n_spans:,} spans, {_mb(path):,.0f} MB)", _s(t["ours"]), "s",
                  iterations=1, group=g),
        summarize(f"{label}: straightforward json loop into pandas", _s(t["straightforward"]), "s", iterations=1,
                  group=g),
        summarize(f"{label}: pyarrow.json.read_json, parse alone", _s(t["parse"]), "s", iterations=1, group=g),
        summarize(f"{label}: ours: spans per second", [n_spans / x for x in _s(t["ours"])], "spans/s", group=g),
        ratio(f"{label}: straightforward loop / ours", t["straightforward"], t["ours"], group=g),
        ratio(f"{label}: ours / pyarrow parse alone", t["ours"], t["parse"], group=g),
    ]
    return figs, t["ours"]


def _phase_figures(label: str, results: list[dict[str, Any]], how: str) -> list[Figure]:
    figs = [summarize(f"{label}: phase {p} ({how})", [r["phases"][p] for r in results], "s", group=NAME)
            for p in PHASES]
    careful = sorted({r["careful_path"] for r in results})
    figs.append(summarize(f"{label}: phases total ({how})", [r["total"] for r in results], "s", group=NAME,
                          notes=f"load to JSON file written, in the process; start-up and imports excluded; "
                                f"{results[0]['runs']:,} runs; lines on the careful path: {careful}"))
    return figs


def _report_figures(label: str, path: Path, res: dict[str, list[dict[str, Any]]]) -> list[Figure]:
    g, size = NAME, _mb(path)
    rep = res["report"]
    figs = [summarize(f"{label}: {REPORT_CLI}", [r["wall_s"] for r in rep], "s", group=g,
                      notes="wall time from outside: interpreter start, imports, load, analysis, tables to "
                            "/dev/null, JSON file, exit"),
            summarize(f"{label}: peak memory of agentobs report", [r["hwm_mb"] for r in rep], "MB", group=g,
                      notes=f"VmHWM of the report's process; file {size:,.0f} MB"),
            summarize(f"{label}: peak memory of agentobs report / file size", [r["hwm_mb"] / size for r in rep], "x",
                      group=g)]
    if "loop" in res:
        loop = res["loop"]
        figs += [summarize(f"{label}: {LOOP_CHILD}", [r["wall_s"] for r in loop], "s", group=g,
                           notes="json.loads per line, a dict per span, a DataFrame; wall time from outside"),
                 ratio(f"{label}: straightforward loop / agentobs report", [r["wall_s"] for r in loop],
                       [r["wall_s"] for r in rep], group=g, notes="per repeat, the two processes run one after the "
                                                                   "other; > 1: the whole report is faster")]
    cold = res["phases"]
    figs += _phase_figures(label, cold, "fresh process")
    figs.append(summarize(f"{label}: pricing share of the report", [100 * r["phases"]["pricing"] / r["total"]
                                                                     for r in cold], "%", group=g,
                          notes="pricing.price_calls / phases total, in a fresh process (genai-prices' data read "
                                "on first use included)"))
    return figs


def _uniform(quick: bool) -> list[Figure]:
    path, n_spans = population(QUICK_RUNS if quick else FULL_RUNS)
    g, repeats, label = NAME, 3 if quick else 5, "uniform"
    figs, t_ours = _load_side_by_side(label, path, n_spans, repeats)
    rep = time_interleaved({"report": lambda: full_report(path)}, Plan(repeats=2 if quick else 3, iterations=1,
                                                                       warmup=0))
    figs.append(summarize(f"{label}: full report (analyze + JSON)", _s(rep["report"]), "s", iterations=1, group=g,
                          notes="in this process: load, checks, runs table, signatures, percentiles with bootstrap "
                                "CIs, caps, the report's JSON"))
    loads = [run_child("load", path) for _ in range(1 if quick else 3)]
    idle = run_child("import", path)["hwm_mb"]
    figs.append(summarize(f"{label}: peak memory of a load (fresh process)", [x["hwm_mb"] for x in loads], "MB",
                          group=g, notes=f"interpreter and imports alone: {idle:.0f} MB"))
    figs.append(summarize(f"{label}: peak memory / file size (load)", [x["hwm_mb"] / _mb(path) for x in loads], "x",
                          group=g))
    small, n_small = prefix(path, SMALL_SPANS)
    mid, n_mid = prefix(path, 100_000)
    grow = time_interleaved({"10k": lambda: ours(small), "100k": lambda: ours(mid)},
                            Plan(repeats=repeats, iterations=3, warmup=1))
    per_small = [x / n_small for x in grow["10k"]]
    per_mid = [x / n_mid for x in grow["100k"]]
    per_full = [x / n_spans for x in t_ours]
    figs += [
        summarize(f"{label}: load {n_small:,} spans", _s(grow["10k"]), "s", iterations=3, group=g),
        summarize(f"{label}: load {n_mid:,} spans", _s(grow["100k"]), "s", iterations=3, group=g),
        summarize(f"{label}: load per span at 10k", [x / 1e3 for x in per_small], "µs", group=g),
        summarize(f"{label}: load per span at full size", [x / 1e3 for x in per_full], "µs", group=g),
        ratio(f"{label}: load growth 10k -> full, / linear", per_full, per_small, group=g,
              notes="(time per span at full size) / (time per span at 10k): 1.0 is linear growth"),
        ratio(f"{label}: load growth 10k -> 100k, / linear", per_mid, per_small, group=g),
    ]
    res = _interleave({"report": lambda: run_child("report", path), "phases": lambda: run_child("phases", path)},
                      2 if quick else 3)
    return figs + _report_figures(label, path, res)


def _realistic(quick: bool) -> list[Figure]:
    g, label = NAME, "realistic"
    path, n_spans = realistic(QUICK_SPANS if quick else FULL_SPANS, "genai")
    small, n_small = realistic(SMALL_SPANS, "genai")
    sizes = {"10k": (small, n_small)}
    if not quick:
        sizes["100k"] = realistic(QUICK_SPANS, "genai")
    sizes["full"] = (path, n_spans)
    contenders: dict[str, Callable[[], dict[str, Any]]] = {
        "report": lambda: run_child("report", path), "loop": lambda: run_child("loop", path),
        "phases": lambda: run_child("phases", path)}
    for key, (p, _) in sizes.items():
        contenders[f"warm {key}"] = lambda p=p: run_child("phases", p, warm=small)
    res = _interleave(contenders, 2 if quick else 3)
    figs = _report_figures(f"{label}", path, res)
    figs[0].notes += f"; {n_spans:,} spans, {_mb(path):,.0f} MB, GenAI dialect"
    figs += _phase_figures(label, res["warm full"], "after a warm-up report")
    per = {key: [r["total"] / n * 1e6 for r in res[f"warm {key}"]] for key, (_, n) in sizes.items()}
    for key, (_, n) in sizes.items():
        figs.append(summarize(f"{label}: report per span at {n:,} spans (after a warm-up report)", per[key], "µs",
                              group=g, notes="phases total / spans"))
    figs.append(ratio(f"{label}: report growth 10k -> full, / linear", per["full"], per["10k"], group=g,
                      notes="(time per span at full size) / (time per span at 10k), each after a warm-up report: "
                            "1.0 is linear growth"))
    if "100k" in per:
        figs.append(ratio(f"{label}: report growth 10k -> 100k, / linear", per["100k"], per["10k"], group=g))
    return figs


def _mixed(quick: bool) -> list[Figure]:
    label = "mixed"
    path, n_spans = realistic(QUICK_SPANS if quick else FULL_SPANS, "all")
    figs, _ = _load_side_by_side(label, path, n_spans, 3 if quick else 5)
    res = _interleave({"report": lambda: run_child("report", path), "phases": lambda: run_child("phases", path)},
                      2 if quick else 3)
    return figs + _report_figures(label, path, res)


def run(quick: bool = False) -> list[Figure]:
    return _uniform(quick) + _realistic(quick) + _mixed(quick)


# -- the markdown beside the figures -----------------------------------------------------------------------------

def _median(figures: list[Figure], name: str) -> float | None:
    return next((f.median for f in figures if f.name == name), None)


def summary(figures: list[Figure]) -> str:
    cols = [("uniform", "fresh process"), ("realistic", "fresh process"), ("realistic", "after a warm-up report"),
            ("mixed", "fresh process")]
    have = [(lab, how) for lab, how in cols if _median(figures, f"{lab}: phases total ({how})")]
    lines = ["Loader fast path: a reader thread reads the file in pieces of whole lines (up to 32 MiB, into reused "
             "buffers) and parses each with pyarrow against an explicit schema of the OTLP JSON spelling it meets, "
             "one piece ahead, while the caller flattens the piece before and scatters its attributes into one "
             "column per key with Arrow compute; one conversion to pandas at the end. Dialects are read once per "
             "span by the runs table.",
             ""]
    if not have:
        return "\n".join(lines)
    lines += ["#### Where the report's time goes (median seconds per phase, share of the phases total)", "",
              "| phase | " + " | ".join(f"{lab} ({how})" for lab, how in have) + " |",
              "| --- |" + " ---: |" * len(have)]
    for p in (*PHASES, "total"):
        cells = []
        for lab, how in have:
            name = f"{lab}: phases total ({how})" if p == "total" else f"{lab}: phase {p} ({how})"
            v, tot = _median(figures, name), _median(figures, f"{lab}: phases total ({how})")
            share = "" if p == "total" or not tot or v is None else f" ({v / tot:.0%})"
            cells.append("—" if v is None else f"{v:.2f} s{share}")
        lines.append(f"| {p} | " + " | ".join(cells) + " |")
    lines += ["", "Shares are of medians, so a column's shares need not add up to 100 %. \"fresh process\": as "
              "`agentobs report` runs (one-time costs such as genai-prices' data included); \"after a warm-up "
              "report\": the same process ran one report on the 10k file first (the growth figures use these)."]
    rows = []
    for lab in ("uniform", "realistic", "mixed"):
        cli = _median(figures, f"{lab}: {REPORT_CLI}")
        if cli is None:
            continue
        loop = _median(figures, f"{lab}: {LOOP_CHILD}")
        peak = _median(figures, f"{lab}: peak memory of agentobs report / file size")
        rows.append(f"| {lab} | {cli:.1f} s | " + (f"{loop:.1f} s" if loop else "—") + f" | {peak:.2f} x |")
    if rows:
        lines += ["", "| file | agentobs report (fresh process) | straightforward loop (fresh process) | "
                  "peak memory / file |", "| --- | ---: | ---: | ---: |", *rows]
    return "\n".join(lines)


def profile_report(quick: bool, figures: list[Figure]) -> str:
    """cProfile of one report on the realistic 100k file (a fresh process), top functions by self time."""
    path, _ = realistic(QUICK_SPANS, "genai")
    res = run_child("profile", path)
    return res["markdown"]


if __name__ == "__main__":
    module_main(run)
