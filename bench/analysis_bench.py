"""Loading and analysing OTLP JSON at scale: a file of at least 1,000,000 spans.

Side by side in one process, interleaved: our loader (``agentobs.analysis.load_file``), a
straightforward per-span ``json`` loop into pandas (rows as dicts, attributes flattened), and
``pyarrow.json.read_json`` parsing alone. Then the full report on the same file, peak memory
of a load in a fresh process, and how load time grows from 10,000 to 1,000,000 spans.

The data is a simulated population (``agentobs simulate``: real span shapes, every failure
pattern), generated once into ``$AGENTOBS_BENCH_DATA`` (default ``~/.cache/agentobs/bench``).

    python -m bench.analysis_bench [--quick]
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

from .common import REPO_ROOT, Figure, cache_dir, Plan, Target, module_main, ratio, summarize, time_interleaved

NAME = "analysis"
TITLE = "Analysis: loading and reporting on 1,000,000 spans of OTLP JSON"
FULL_RUNS = 62_000          # about 1,003,000 spans
QUICK_RUNS = 6_500          # about 105,000 spans
TARGETS = [
    Target("analysis: straightforward loop / ours", "straightforward loop / ours", ">=", 3.0),
    Target("analysis: ours / pyarrow parse alone", "ours / pyarrow parse alone", "<=", 1.5),
    Target("analysis: full report on the file", "full report (analyze + JSON)", "<=", 15.0),
    Target("analysis: peak memory / file size (load)", "peak memory / file size (load)", "<=", 2.5),
    Target("analysis: load time growth 10k -> 1M spans, / linear", "load growth 10k -> full, / linear", "<=", 1.2),
]


def data_dir() -> Path:
    return Path(cache_dir())


def dataset(runs: int) -> tuple[Path, int]:
    """The population file with ``runs`` runs (generated once) and its span count."""
    path = data_dir() / f"population-{runs}.jsonl"
    meta = path.with_suffix(".json")
    if not (path.exists() and meta.exists()):
        from agentobs.domain.population import simulate
        from agentobs.telemetry import configure
        tmp = path.with_suffix(".partial")
        tmp.unlink(missing_ok=True)
        tel = configure(traces_out=tmp)
        simulate(runs, seed=2026, observers=lambda: [tel.observer()], start_ns=1_780_000_000 * 10**9)
        report = tel.shutdown()
        spans = next(iter(report.exporters.values()))["exported"]
        tmp.rename(path)
        meta.write_text(json.dumps({"runs": runs, "spans": spans}))
    return path, json.loads(meta.read_text())["spans"]


def prefix(path: Path, spans_wanted: int) -> tuple[Path, int]:
    """The first lines of ``path`` holding about ``spans_wanted`` spans."""
    out = path.with_name(f"{path.stem}-first-{spans_wanted}.jsonl")
    meta = out.with_suffix(".json")
    if not (out.exists() and meta.exists()):
        n = 0
        with open(path, "rb") as src, open(out, "wb") as dst:
            for line in src:
                dst.write(line)
                n += line.count(b'"spanId"') - line.count(b'"links":[{"traceId"')
                if n >= spans_wanted:
                    break
        meta.write_text(json.dumps({"spans": n}))
    return out, json.loads(meta.read_text())["spans"]


# -- contenders ----------------------------------------------------------------------------------

def ours(path: Path) -> int:
    from agentobs.analysis.otlp import load_file
    return len(load_file(path).spans)


def straightforward(path: Path) -> int:
    """What one writes first: json.loads per line, a dict per span, then a DataFrame."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            req = json.loads(line)
            for rs in req.get("resourceSpans", []):
                service = next((a["value"].get("stringValue") for a in rs.get("resource", {}).get("attributes", [])
                                if a.get("key") == "service.name"), None)
                for ss in rs.get("scopeSpans", []):
                    for s in ss.get("spans", []):
                        row = {"trace_id": s.get("traceId"), "span_id": s.get("spanId"),
                               "parent_span_id": s.get("parentSpanId"), "name": s.get("name"), "kind": s.get("kind"),
                               "start_ns": int(s.get("startTimeUnixNano", 0)),
                               "end_ns": int(s.get("endTimeUnixNano", 0)),
                               "status_code": (s.get("status") or {}).get("code", 0), "service_name": service}
                        for a in s.get("attributes", []):
                            v = a.get("value", {})
                            if "intValue" in v:
                                row[a["key"]] = int(v["intValue"])
                            elif "arrayValue" in v:
                                row[a["key"]] = [x.get("stringValue") for x in v["arrayValue"].get("values", [])]
                            else:
                                row[a["key"]] = next(iter(v.values()), None)
                        rows.append(row)
    return len(pd.DataFrame(rows))


def parse_alone(path: Path) -> int:
    import pyarrow.json as pj
    return pj.read_json(path, read_options=pj.ReadOptions(block_size=1 << 24)).num_rows


def full_report(path: Path) -> int:
    from agentobs.analysis.report import analyze
    r = analyze([str(path)])
    json.dumps(r.to_dict(), default=str)
    return len(r.runs)


_HWM = ("import re;print(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1))")


def peak_memory_mb(path: Path) -> tuple[float, float]:
    """Peak resident memory (VmHWM) of a fresh process that only loads the file, and of one that only imports.

    VmHWM, not getrusage's ru_maxrss: on Linux ru_maxrss carries the parent's peak across fork and exec, so a
    child of a large benchmark process would report the parent's size.
    """
    code = f"import sys;from agentobs.analysis.otlp import load_file;load_file(sys.argv[1]);{_HWM}"
    base = f"import agentobs.analysis.otlp;{_HWM}"
    used = int(subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                              check=True, cwd=REPO_ROOT).stdout)
    idle = int(subprocess.run([sys.executable, "-c", base], capture_output=True, text=True, check=True,
                              cwd=REPO_ROOT).stdout)
    return used / 1024, idle / 1024


def run(quick: bool = False) -> list[Figure]:
    runs = QUICK_RUNS if quick else FULL_RUNS
    path, n_spans = dataset(runs)
    size_mb = path.stat().st_size / 2**20
    g = NAME
    repeats = 3 if quick else 5
    plan = Plan(repeats=repeats, iterations=1, warmup=1)
    t = time_interleaved({"ours": lambda: ours(path), "straightforward": lambda: straightforward(path),
                          "parse": lambda: parse_alone(path)}, plan)
    s = lambda xs: [x / 1e9 for x in xs]  # noqa: E731
    figs = [
        summarize(f"ours: load_file ({n_spans:,} spans, {size_mb:,.0f} MB)", s(t["ours"]), "s", iterations=1, group=g),
        summarize("straightforward json loop into pandas", s(t["straightforward"]), "s", iterations=1, group=g),
        summarize("pyarrow.json.read_json, parse alone", s(t["parse"]), "s", iterations=1, group=g),
        summarize("ours: spans per second", [n_spans / x for x in s(t["ours"])], "spans/s", group=g),
        ratio("straightforward loop / ours", t["straightforward"], t["ours"], group=g),
        ratio("ours / pyarrow parse alone", t["ours"], t["parse"], group=g),
    ]
    rep = time_interleaved({"report": lambda: full_report(path)}, Plan(repeats=2 if quick else 3, iterations=1,
                                                                       warmup=0))
    figs.append(summarize("full report (analyze + JSON)", s(rep["report"]), "s", iterations=1, group=g,
                          notes="load, checks, runs table, signatures, percentiles with bootstrap CIs, caps"))
    peaks = [peak_memory_mb(path) for _ in range(1 if quick else 3)]
    figs.append(summarize("peak memory of a load (fresh process)", [p for p, _ in peaks], "MB", group=g,
                          notes=f"interpreter and imports alone: {peaks[0][1]:.0f} MB"))
    figs.append(summarize("peak memory / file size (load)", [p / size_mb for p, _ in peaks], "x", group=g))
    small, n_small = prefix(path, 10_000)
    mid, n_mid = prefix(path, 100_000)
    grow = time_interleaved({"10k": lambda: ours(small), "100k": lambda: ours(mid)},
                            Plan(repeats=repeats, iterations=3, warmup=1))
    per_small = [x / n_small for x in grow["10k"]]
    per_mid = [x / n_mid for x in grow["100k"]]
    per_full = [x / n_spans for x in t["ours"]]
    figs += [
        summarize(f"load {n_small:,} spans", s(grow["10k"]), "s", iterations=3, group=g),
        summarize(f"load {n_mid:,} spans", s(grow["100k"]), "s", iterations=3, group=g),
        summarize("load per span at 10k", [x / 1e3 for x in per_small], "µs", group=g),
        summarize("load per span at full size", [x / 1e3 for x in per_full], "µs", group=g),
        ratio("load growth 10k -> full, / linear", per_full, per_small, group=g,
              notes="(time per span at full size) / (time per span at 10k): 1.0 is linear growth"),
        ratio("load growth 10k -> 100k, / linear", per_mid, per_small, group=g),
    ]
    return figs


def summary(figures: list[Figure]) -> str:
    return ("Loader fast path: pyarrow streams the file in 32 MB blocks against an explicit OTLP schema; each "
            "block is flattened and its attributes scattered into one column per key with Arrow compute; "
            "one conversion to pandas at the end.")


if __name__ == "__main__":
    module_main(run)
