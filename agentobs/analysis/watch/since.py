"""Since when a run is past a cap: the end of the span whose arrival took it there.

The crossing happened among the spans of the batch that showed it: the spans held before did not cross (or it
would have been reported then). Those new spans, in the order they ended (a span is exported when it ends), are
searched by bisection: the runs of the trace are derived again from the old spans and a prefix of the new ones,
with the same rules, until the shortest prefix that crosses is found. All traces are searched together, one
derivation per round, one probe per trace per round (the widest interval of its caps first; every cap of the trace
learns from each probe). The first probe leaves out only the last new span: a live stream's batch usually holds one
step of the run, whose last span is the one that crossed, and that one probe settles it. Rounds are bounded
(``MAX_ROUNDS``); a cap still unresolved then gets the end of the last span of its interval, an upper bound.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .caps import Cap

MAX_ROUNDS = 24
ARRIVAL = "_watch_arrival"      # the held spans' column: the number of the batch each arrived in (never derived)


@dataclass
class Job:
    anchor: str
    cap: Cap
    run: int                   # the run's row in the runs table of the full derivation
    value: float
    lo: int = 0                # prefix lengths of the new spans: lo did not cross, hi did
    hi: int = field(default=-1)


Derive = Callable[[pd.DataFrame, pd.DataFrame, pd.DataFrame], tuple[pd.DataFrame, pd.DataFrame]]
Info = Callable[[pd.DataFrame, pd.DataFrame], dict[str, np.ndarray]]


def crossing_times(spans: pd.DataFrame, events: pd.DataFrame, links: pd.DataFrame, *, jobs: dict[str, list[Job]],
                   batch: int, derive: Derive, info: Info) -> dict[tuple[str, str, str], int]:
    """(trace, anchor, limit) -> the end (ns) of the span whose arrival took the run past the cap."""
    tid = spans["trace_id"].astype(str).to_numpy()
    new = (spans[ARRIVAL] == batch).to_numpy()
    end = spans["end_ns"].to_numpy(dtype=np.int64, na_value=np.iinfo(np.int64).max)
    order: dict[str, np.ndarray] = {}            # trace -> rows of its new spans, in end order
    for trace, js in jobs.items():
        rows = np.flatnonzero((tid == trace) & new)
        rows = rows[np.argsort(end[rows], kind="stable")]
        order[trace] = rows
        for j in js:
            j.lo, j.hi = 0, len(rows)
    old = ~new
    for round_ in range(MAX_ROUNDS):
        probes = _probes(jobs, first=round_ == 0)
        if not probes:
            break
        keep = np.zeros(len(spans), dtype=bool)
        for trace, mid in probes.items():
            keep[(tid == trace) & old] = True
            keep[order[trace][:mid]] = True
        sub = spans.loc[keep].drop(columns=[ARRIVAL])
        names = set(probes)
        runs, out = derive(sub, _of(events, names), _of(links, names))
        values = _values(runs, out, info, {j.cap.dimension for js in jobs.values() for j in js})
        for trace, mid in probes.items():
            for j in jobs[trace]:
                if not j.lo < mid < j.hi:
                    continue
                v = values.get((trace, j.anchor, j.cap.dimension))
                if v is not None and j.cap.crossed(v):
                    j.hi = mid
                else:
                    j.lo = mid
    out_times: dict[tuple[str, str, str], int] = {}
    for trace, js in jobs.items():
        rows = order[trace]
        for j in js:
            if j.hi > 0 and len(rows):
                out_times[(trace, j.anchor, j.cap.limit)] = int(end[rows[j.hi - 1]])
    return out_times


def _probes(jobs: dict[str, list[Job]], *, first: bool) -> dict[str, int]:
    """One prefix length per trace: all new spans but the last at first, then the middle of its widest unresolved
    interval."""
    out = {}
    for trace, js in jobs.items():
        open_ = [j for j in js if j.hi - j.lo > 1]
        if open_:
            j = max(open_, key=lambda x: x.hi - x.lo)
            out[trace] = j.hi - 1 if first else (j.lo + j.hi) // 2
    return out


def _values(runs: pd.DataFrame, spans: pd.DataFrame, info: Info, columns: set[str]
            ) -> dict[tuple[str, str, str], float]:
    """(trace, anchor, column) -> the run's value, for every run of the derivation and each of ``columns``."""
    if runs.empty:
        return {}
    got = info(runs, spans)
    out: dict[tuple[str, str, str], float] = {}
    numeric = [c for c in runs.columns if c in columns]
    table = runs[numeric].astype("Float64").to_numpy(dtype=float, na_value=np.nan)
    for i in range(len(runs)):
        for k, c in enumerate(numeric):
            v = table[i, k]
            if not np.isnan(v):
                out[(str(got["trace"][i]), str(got["anchor"][i]), c)] = float(v)
    return out


def _of(frame: pd.DataFrame, traces: set[str]) -> pd.DataFrame:
    if frame.empty:
        return frame
    return frame[frame["trace_id"].astype(str).isin(traces).to_numpy()].reset_index(drop=True)
