"""A one-hour window of a large archive against the whole archive: ``agentobs report FILE --since ... --until ...``
against ``agentobs report FILE``.

The archive is ``bench.realistic``'s GenAI file of about 1,000,000 spans (760 MB of OTLP JSON lines, 36,491 runs
arriving over 24 hours, 13 models, runs inside request spans, conversations), the window its middle hour. Each
contender runs in a fresh process (``bench.select_child``), repeats interleaved; time is the process's wall time
from outside (start-up and imports included), memory its peak resident size (VmHWM). A third contender is the same
window without the push-down: every run built, the runs table filtered afterwards (what the window would cost
if the selection were only a filter).

Targets, and why. A file is read whole whatever the window (which traces fall in a window is known only once their
spans are read: no piece or file is skipped by a guess), so the read is the window's floor: in a fresh process it is
about a quarter of the whole report's wall time (the rest being the checks, the runs table, signatures, percentiles,
caps and the report of all 24 hours), and its peak (the spans read, as Arrow pieces then one frame) about half the
whole report's. What the window adds to the read is the grouping of traces and the report on a 24th of the runs.

- **time, window / whole <= 0.45**: the read (0.25 to 0.3 of the whole) plus the grouping and the window's report,
  with room for two shared cores' noise (measured 0.30, IQR 0.29 to 0.34);
- **peak memory, window / whole <= 0.65**: the read's peak (measured 0.50: 1.5 x the file against 3.1 x for the
  whole report);
- **window without the push-down / with it >= 2**: the push-down is what makes the window cheap (measured 3.3: the
  same window as a filter of the whole runs table costs what the whole report costs).

    python -m bench.select_bench [--quick]
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import REPO_ROOT, Figure, Target, module_main, ratio, summarize

NAME = "select"
TITLE = "Select: a one-hour window of a large archive against the whole archive"

TARGETS = [
    Target("select: one-hour window / whole archive, time", "window / whole: time", "<=", 0.45),
    Target("select: one-hour window / whole archive, peak memory", "window / whole: peak memory", "<=", 0.65),
    Target("select: the window filtered afterwards / pushed into the loading, time",
           "afterwards / window: time", ">=", 2.0),
]

REPEATS, QUICK_REPEATS = 3, 1
HOUR_NS = 3600 * 10**9


def _archive(quick: bool) -> tuple[Path, int]:
    from .analysis_data import realistic
    return realistic(100_000 if quick else 1_000_000, "genai")


def _middle_hour(path: Path) -> tuple[str, str]:
    """The hour in the middle of the archive (its first and last lines' span starts: the file is written in time
    order, as a collector writes what it receives)."""
    first = _starts(_first_line(path))
    last = _starts(_last_line(path))
    mid = (min(first) + max(last)) // 2
    return _iso(mid - HOUR_NS // 2), _iso(mid + HOUR_NS // 2)


def _first_line(path: Path) -> bytes:
    with open(path, "rb") as f:
        return f.readline()


def _last_line(path: Path) -> bytes:
    with open(path, "rb") as f:
        f.seek(max(0, path.stat().st_size - (64 << 20)))
        return f.read().rstrip(b"\n").rsplit(b"\n", 1)[-1]


def _starts(line: bytes) -> list[int]:
    return [int(s["startTimeUnixNano"]) for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"]
            for s in ss["spans"]]


def _iso(ns: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ns // 10**9)) + "Z"


def _child(what: str, path: Path, window: tuple[str, str] | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as d:
        result = os.path.join(d, "result.json")
        cmd = [sys.executable, "-m", "bench.select_child", what, result, str(path), *(window or ())]
        t0 = time.perf_counter()
        done = subprocess.run(cmd, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - t0
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd[2:])} failed ({done.returncode}): {done.stderr[-2000:]}")
        with open(result, encoding="utf-8") as f:
            out: dict[str, Any] = json.load(f)
    out["wall_s"] = wall
    return out


def run(quick: bool = False) -> list[Figure]:
    path, spans = _archive(quick)
    window = _middle_hour(path)
    contenders = {"whole": ("report", None), "window": ("report", window), "afterwards": ("afterwards", window)}
    got: dict[str, list[dict[str, Any]]] = {k: [] for k in contenders}
    for i in range(QUICK_REPEATS if quick else REPEATS):
        order = list(contenders)
        order = order[i % len(order):] + order[:i % len(order)]          # rotated, so no contender is always first
        for name in order:
            what, win = contenders[name]
            got[name].append(_child(what, path, win))
    runs = {k: {r["runs"] for r in v} for k, v in got.items()}
    if runs["window"] != runs["afterwards"] or len(runs["window"]) != 1:
        raise AssertionError(f"the window pushed down and filtered afterwards give other runs: {runs}")
    g = dict(group=NAME)
    size_mb = path.stat().st_size / 2**20
    wall = {k: [r["wall_s"] for r in v] for k, v in got.items()}
    hwm = {k: [r["hwm_mb"] for r in v] for k, v in got.items()}
    whole_runs, window_runs = next(iter(runs["whole"])), next(iter(runs["window"]))
    notes = f"{spans:,} spans, {size_mb:,.0f} MiB; window {window[0]} to {window[1]}"
    return [
        summarize("whole archive: report, wall time", wall["whole"], "s", notes=f"{whole_runs:,} runs; {notes}",
                  **g),
        summarize("one-hour window: report, wall time", wall["window"], "s", notes=f"{window_runs:,} runs", **g),
        summarize("one-hour window filtered afterwards: wall time", wall["afterwards"], "s",
                  notes="every run built, then the runs table filtered", **g),
        summarize("whole archive: peak memory", hwm["whole"], "MB",
                  notes=f"{max(hwm['whole']) / size_mb:.2f} x the file", **g),
        summarize("one-hour window: peak memory", hwm["window"], "MB",
                  notes=f"{max(hwm['window']) / size_mb:.2f} x the file", **g),
        summarize("one-hour window filtered afterwards: peak memory", hwm["afterwards"], "MB", **g),
        ratio("window / whole: time", wall["window"], wall["whole"], **g),
        ratio("window / whole: peak memory", hwm["window"], hwm["whole"], **g),
        ratio("afterwards / window: time", wall["afterwards"], wall["window"], **g),
        ratio("afterwards / window: peak memory", hwm["afterwards"], hwm["window"], **g),
    ]


if __name__ == "__main__":
    module_main(run)
