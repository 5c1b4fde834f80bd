"""Every valid OTLP JSON spelling of the same spans: load and runs-table time against the canonical file.

The spans are the realistic mixed-dialect file of about 100,000 spans (``bench.realistic``, six dialects,
seed 2026). ``bench/spellings_data.py`` writes them once in each spelling: protobuf's own JSON writer
(``json_format.MessageToJson`` with its defaults: base64 ids and enum names; with snake_case field names; with
integer enums), rewrites of the canonical lines (upper-case hex ids, 64-bit integers as numbers, optional fields
present, saved Jaeger API v3 answers), a gzip copy, and one file mixing all of them line by line.

Before timing, each file is checked against the canonical one: the same runs table (``pandas.testing``,
dtypes included), the same data-quality counts by kind, and no line on the careful path (``careful_path`` 0 in
``SpanSet.quality``). Then, in this process, repeats interleaved (the order of the files rotates every repeat;
``gc`` off while a file is timed, a full collection between files): ``load_sources([file])`` (read, parse,
flatten, structural checks) and ``derive_runs`` on what it loaded. Ratios are per repeat, against the
canonical file of the same repeat. Target: at most 1.2 x the canonical file's time, each spelling, load and
runs table. Also the main thread's CPU time during the load (``time.thread_time``) of the canonical file and of
the file mixing every spelling line by line: the parse and the decoding of spelling groups run on other threads
(the load's wall time is theirs and the main thread's overlapped), and this figure moves less with the machine's
load than the wall time does.

    python -m bench.spellings_bench [--quick]
"""
from __future__ import annotations

import gc
import time
from pathlib import Path
from typing import Any

import pandas as pd

from .analysis_data import realistic
from .common import Figure, Target, module_main, ratio, summarize
from .spellings_data import MIXED, SPELLINGS, spelled_files

NAME = "spellings"
TITLE = "OTLP JSON spellings: load and runs table of the same spans in each valid spelling, against the canonical file"
SPANS = 100_000
LIMIT = 1.2
TARGETS = [Target(f"spellings: {name}: {what} / canonical", f"{name}: {what} / canonical", "<=", LIMIT)
           for name in SPELLINGS for what in ("load", "runs table")]


def _load(path: Path) -> Any:
    from agentobs.analysis.load.sources import load_sources
    return load_sources([str(path)])


def _runs(ss: Any) -> pd.DataFrame:
    from agentobs.analysis.derive.runs import derive_runs
    return derive_runs(ss)[0]


def _kinds(ss: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for i in ss.quality.issues:
        out[i.kind] = out.get(i.kind, 0) + i.count
    return out


def _check(files: dict[str, Path]) -> dict[str, str]:
    """Asserts every spelling gives the canonical runs table and data quality on the fast path; returns, per
    file, the spellings the loader reports having read."""
    base = _load(files["canonical"])
    want = _runs(base).sort_values("run_id").reset_index(drop=True)
    read: dict[str, str] = {}
    for name, path in files.items():
        ss = _load(path)
        careful = ss.quality.count("careful_path")
        assert careful == 0, f"{name}: {careful} lines on the careful path: {[i.to_dict() for i in ss.quality.issues]}"
        assert _kinds(ss) == _kinds(base), f"{name}: data quality {_kinds(ss)} != canonical {_kinds(base)}"
        assert len(ss.spans) == len(base.spans) and len(ss.events) == len(base.events) \
            and len(ss.links) == len(base.links), f"{name}: not the same spans, events and links"
        got = _runs(ss).sort_values("run_id").reset_index(drop=True)
        pd.testing.assert_frame_equal(got.drop(columns=["start"]), want.drop(columns=["start"]), check_dtype=True)
        assert (got["start"] == want["start"]).all(), f"{name}: run starts differ"
        read[name] = "; ".join(f"{k} ({v} lines)" for sp in ss.spellings.values() for k, v in sp.items())
    return read


def _time(files: dict[str, Path], repeats: int) -> dict[str, dict[str, list[float]]]:
    names = list(files)
    out = {n: {"load": [], "runs": [], "main": []} for n in names}
    for name in names:                                        # warm-up, untimed
        _runs(_load(files[name]))
    was = gc.isenabled()
    try:
        for r in range(repeats):
            for name in names[r % len(names):] + names[:r % len(names)]:
                gc.collect()
                gc.disable()
                t0, c0 = time.perf_counter(), time.thread_time()
                ss = _load(files[name])
                t1, c1 = time.perf_counter(), time.thread_time()
                _runs(ss)
                t2 = time.perf_counter()
                gc.enable()
                out[name]["load"].append(t1 - t0)
                out[name]["runs"].append(t2 - t1)
                out[name]["main"].append(c1 - c0)
                del ss
    finally:
        if was:
            gc.enable()
    return out


def run(quick: bool = False) -> list[Figure]:
    canonical, n_spans = realistic(SPANS, "all")
    files = spelled_files(canonical)
    read = _check(files)
    t = _time(files, 3 if quick else 9)
    g = NAME
    base = t["canonical"]
    figs = [summarize(f"canonical: load ({n_spans:,} spans, {canonical.stat().st_size / 2**20:.0f} MB)",
                      base["load"], "s", iterations=1, group=g, notes=f"read as: {read['canonical']}"),
            summarize("canonical: runs table", base["runs"], "s", iterations=1, group=g)]
    for name in SPELLINGS:
        x, size = t[name], files[name].stat().st_size / 2**20
        figs += [summarize(f"{name}: load", x["load"], "s", iterations=1, group=g,
                           notes=f"{size:.0f} MB; read as: {read[name]}"),
                 summarize(f"{name}: runs table", x["runs"], "s", iterations=1, group=g),
                 ratio(f"{name}: load / canonical", x["load"], base["load"], group=g),
                 ratio(f"{name}: runs table / canonical", x["runs"], base["runs"], group=g)]
    mixed = t[MIXED]
    figs += [summarize("canonical: load, main thread CPU time", base["main"], "s", iterations=1, group=g),
             summarize(f"{MIXED}: load, main thread CPU time", mixed["main"], "s", iterations=1, group=g),
             ratio(f"{MIXED}: load, main thread CPU time / canonical", mixed["main"], base["main"], group=g,
                   notes="time.thread_time() around load_sources; the parse and the spelling groups' decoding "
                         "run on other threads")]
    return figs


def summary(figures: list[Figure]) -> str:
    med = {f.name: f.median for f in figures}
    lines = ["Every file gives the canonical runs table (dtypes included) and data quality, with no line on the "
             "careful path (checked before timing).", "",
             "| spelling | load / canonical | runs table / canonical |", "| --- | ---: | ---: |"]
    for name in SPELLINGS:
        lo, ru = med.get(f"{name}: load / canonical"), med.get(f"{name}: runs table / canonical")
        if lo is not None and ru is not None:
            lines.append(f"| {name} | {lo:.2f} x | {ru:.2f} x |")
    return "\n".join(lines)


def profile_report(quick: bool, figures: list[Figure]) -> str:
    """cProfile of loading the spelling with the worst load ratio, beside the canonical file."""
    from .common import profile, profile_markdown
    canonical, _ = realistic(SPANS, "all")
    files = spelled_files(canonical)
    worst = max(SPELLINGS, key=lambda n: next((f.median for f in figures if f.name == f"{n}: load / canonical"), 0))
    parts = []
    for name in ("canonical", worst):
        rows, us = profile(lambda name=name: _load(files[name]), runs=1, warmup=1)
        parts.append(profile_markdown(f"load_sources on {name}", rows, us, us, top=20))
    return "\n".join(parts)


if __name__ == "__main__":
    module_main(run)
