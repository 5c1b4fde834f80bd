"""Runs in flight: spans held by trace, runs derived again as their spans arrive, caps checked, finished runs let go.

Spans are exported when they end, so a run in flight is seen without its root span: its steps, model and tool
calls, under a parent that has not arrived. Whenever spans of a trace arrive, the runs of that trace are derived
again from every span held for it, with the batch analysis's own rules (``check`` and ``derive_runs``: a group of
calls under a missing agent span is one run, flagged rootless), and each run's totals (steps, tool calls, tokens,
dollars, active and wall seconds, repeats, stalls) are checked against the caps. A run is known across derivations
by its trace and its *anchor*: its root span's id, or while that has not arrived, the id of the missing parent the
root will have. Each cap a run crosses is reported once.

When a run counts as finished, and its trace is let go (its spans dropped; memory holds only traces in flight):

- every run of the trace is finished: its root span arrived (an agent or chain span, which ends with the run, or the
  root of the trace); a trace that holds no run is let go when its root arrived (a trace of other work);
- or no span of the trace arrived for ``idle_s`` seconds (a process that crashed, a root span that was lost).

A batch that replaces what is held (Jaeger: each answer holds whole traces as stored so far) changes only the
traces whose span count changed; a trace let go is remembered (``done``, bounded) for ``done_s`` seconds, so a
poll that still sees it does not start it again.
"""
from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import pandas as pd

from ...errors import AgentobsError
from ..derive.runs import derive_runs
from ..load.sources import unexpected
from ..select.selection import Selection, select_runs
from ..spans.checks import check
from ..spans.quality import DataQuality
from ..spans.spanset import SpanSet
from .caps import Cap
from .events import Event, Stats
from .since import ARRIVAL, Job, crossing_times

DONE_MAX = 200_000                 # traces remembered as let go, at most (Jaeger's window)
OWN_ROOTS = ("agent", "chain")     # a run rooted at one of these ended when it arrived


@dataclass(frozen=True, kw_only=True)
class Batch:
    spans: SpanSet
    arrived: float                 # time.time() when the source handed it over
    replace: bool = False          # each trace in it is whole as the source now holds it (it replaces what is held)


class Watcher:
    """Holds the traces in flight and checks their runs against ``caps``; ``ingest`` a batch -> its events."""

    def __init__(self, caps: Sequence[Cap], *, idle_s: float = 600.0, done_s: float = 0.0,
                 clock: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time,
                 selection: Selection | None = None):
        self.caps = list(caps)
        self.selection = selection or Selection()      # only the runs it selects are checked
        self.idle_s, self.done_s, self.clock, self.wall = idle_s, done_s, clock, wall
        self.held = SpanSet()
        self.seen: dict[str, float] = {}                     # trace -> when a span of it last arrived
        self.reported: dict[str, dict[str, set[str]]] = {}   # trace -> anchor -> limits reported
        self.done: OrderedDict[str, float] = OrderedDict()   # trace -> when it was let go (replace mode)
        self.stats = Stats()
        self._batch = 0

    # -- batches ---------------------------------------------------------------------------------------------

    def ingest(self, batch: Batch) -> list[Event]:
        new = batch.spans
        self.stats.batches += 1
        self.stats.source_issues += sum(i.count for i in new.quality.issues)
        if new.spans.empty:
            return []
        self._batch += 1
        spans = new.spans.assign(**{ARRIVAL: self._batch})
        now = self.clock()
        if batch.replace:
            touched = self._replace(spans, new)
        else:
            self.held = SpanSet.concat([self.held, SpanSet(spans=spans, events=new.events, links=new.links)])
            touched = set(spans["trace_id"].astype(str).unique())
        self.stats.spans += len(spans) if not batch.replace else int(
            spans["trace_id"].astype(str).isin(touched).sum())
        for t in touched:
            self.seen[t] = now
        try:
            found = self._evaluate(touched, batch.arrived) if touched else []
        except AgentobsError:
            raise
        except Exception as exc:        # one batch never ends the watch: its traces are let go, and it is said
            self.stats.failed_traces += len(touched)
            self.stats.first_failure = self.stats.first_failure or unexpected(exc)
            self._let_go(sorted(touched))
            found = []
        self._count_held()              # what stays in flight
        return found

    def _replace(self, spans: pd.DataFrame, new: SpanSet) -> set[str]:
        """Traces of ``spans`` not let go and whose span count changed replace what is held of them."""
        ids = spans["trace_id"].astype(str)
        counts = ids.value_counts()
        held = self.held.spans["trace_id"].astype(str).value_counts() if len(self.held.spans) else counts.iloc[:0]
        changed = {t for t, n in counts.items() if t not in self.done and held.get(t, 0) != n}
        if not changed:
            return set()
        spans = spans.loc[ids.isin(changed).to_numpy()].copy()
        before = _of(self.held.spans, changed)      # a span held before keeps its arrival: only the others are new
        if len(before):
            arrival = pd.Series(before[ARRIVAL].to_numpy(), index=_span_key(before))
            arrival = arrival[~arrival.index.duplicated()]
            spans[ARRIVAL] = _span_key(spans).map(arrival).fillna(self._batch).astype(np.int64).to_numpy()
        self._drop(changed)
        part = SpanSet(spans=spans.reset_index(drop=True), events=_of(new.events, changed),
                       links=_of(new.links, changed))
        self.held = SpanSet.concat([self.held, part])
        return changed

    def expire(self) -> int:
        """Lets go of the traces nothing arrived for in ``idle_s`` seconds; how many."""
        now = self.clock()
        idle = [t for t, at in self.seen.items() if now - at > self.idle_s]
        if idle:
            self._let_go(idle)
            self.stats.traces_idle += len(idle)
        if self.done_s:
            while self.done and now - next(iter(self.done.values())) > self.done_s:
                self.done.popitem(last=False)
        return len(idle)

    # -- runs ----------------------------------------------------------------------------------------------------

    def _evaluate(self, touched: set[str], arrived: float) -> list[Event]:
        spans, events, links = _select(self.held, touched)
        runs, out = derive(spans.drop(columns=[ARRIVAL]), events, links)
        info = run_info(runs, out)
        chosen = self._chosen(runs, out)
        jobs: dict[str, list[Job]] = {}
        for i in range(len(runs)):
            if chosen is not None and not chosen[i]:
                continue
            trace, anchor = info["trace"][i], info["anchor"][i]
            done = self.reported.get(trace, {}).get(anchor, set())
            for cap in self.caps:
                v = _value(runs, cap.dimension, i)
                if v is not None and cap.crossed(v) and cap.limit not in done:
                    jobs.setdefault(trace, []).append(Job(anchor=anchor, cap=cap, run=i, value=v))
        found: list[Event] = []
        if jobs:
            times = crossing_times(spans, events, links, jobs=jobs, batch=self._batch, derive=derive, info=run_info)
            reported_at = self.wall()
            for trace, js in jobs.items():
                for j in js:
                    self.reported.setdefault(trace, {}).setdefault(j.anchor, set()).add(j.cap.limit)
                    found.append(_event(runs, j, trace, times.get((trace, j.anchor, j.cap.limit)),
                                        running=not bool(info["finished"][j.run]), arrived=arrived,
                                        reported_at=reported_at))
            self.stats.events += len(found)
            self.stats.delays.extend(e.delay_s for e in found)
        self._finish(touched, runs, out, info)
        return found

    def _chosen(self, runs: pd.DataFrame, out: pd.DataFrame) -> np.ndarray | None:
        """Which of ``runs`` the selection selects (None: every run), on what has arrived of each so far."""
        if not self.selection or runs.empty:
            return None
        picked = set(select_runs(runs, out, self.selection)["run_id"].astype(str))
        return runs["run_id"].astype(str).isin(picked).to_numpy()

    def _finish(self, touched: set[str], runs: pd.DataFrame, out: pd.DataFrame, info: dict[str, np.ndarray]) -> None:
        """Lets go of the touched traces whose runs all finished, and of those that hold no run and whose root
        arrived."""
        open_traces: set[str] = set()
        in_runs: set[str] = set()
        of_run: list[set[str]] = []
        for i, traces in enumerate(runs["trace_ids"].tolist() if len(runs) else []):
            ts = {str(t) for t in traces} if isinstance(traces, list) else {str(info["trace"][i])}
            of_run.append(ts)
            in_runs |= ts
            if not info["finished"][i]:
                open_traces |= ts
        rooted = set(out.loc[out["parent_span_id"].isna(), "trace_id"].astype(str)) if len(out) else set()
        finished = [t for t in touched if t not in open_traces and (t in in_runs or t in rooted)]
        gone = set(finished)
        self.stats.runs_finished += sum(1 for ts in of_run if ts <= gone)      # each run once, when it is let go
        if finished:
            self._let_go(finished)

    def _let_go(self, traces: Sequence[str]) -> None:
        self._drop(set(traces))
        now = self.clock()
        for t in traces:
            self.seen.pop(t, None)
            self.reported.pop(t, None)
            if self.done_s:
                self.done[t] = now
                self.done.move_to_end(t)
        while len(self.done) > DONE_MAX:
            self.done.popitem(last=False)

    def _drop(self, traces: set[str]) -> None:
        h = self.held
        if h.spans.empty or not traces:
            return
        self.held = SpanSet(spans=_without(h.spans, traces), events=_without(h.events, traces),
                            links=_without(h.links, traces))
        if len(self.held.spans) == 0:
            self.held = SpanSet()

    def _count_held(self) -> None:
        s = self.stats
        s.held_spans_max = max(s.held_spans_max, len(self.held.spans))
        s.held_traces_max = max(s.held_traces_max, len(self.seen))


# -- derivation ------------------------------------------------------------------------------------------------

def derive(spans: pd.DataFrame, events: pd.DataFrame, links: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(runs, spans with their runs) of these spans, by the batch analysis's checks and rules."""
    ss = check(SpanSet(spans=spans.reset_index(drop=True), events=events.reset_index(drop=True),
                       links=links.reset_index(drop=True), quality=DataQuality()))
    runs, out, _ = derive_runs(ss)
    return runs, out


def run_info(runs: pd.DataFrame, spans: pd.DataFrame) -> dict[str, np.ndarray]:
    """Per run (in the runs table's order): the trace of its root span, its anchor (the root span's id, or the
    id of the missing parent the root will have) and whether it finished (its own root span arrived)."""
    n = len(runs)
    trace = runs["trace_id"].astype(object).to_numpy() if n else np.array([], dtype=object)
    anchor = runs["root_span_id"].astype(object).to_numpy() if n else np.array([], dtype=object)
    finished = np.zeros(n, dtype=bool)
    if not n:
        return {"trace": trace, "anchor": anchor, "finished": finished}
    roots = spans.loc[spans["_run_root"], ["run_id", "trace_id", "span_id", "parent_span_id", "_kind"]].astype(
        {"run_id": "string", "span_id": "string"})
    r = runs[["run_id", "root_span_id"]].reset_index().astype({"run_id": "string", "root_span_id": "string"})
    m = r.merge(roots, left_on=["run_id", "root_span_id"], right_on=["run_id", "span_id"], how="left")
    m = m.drop_duplicates("index").set_index("index").reindex(range(n))
    own = (m["_kind"].isin(OWN_ROOTS) | m["parent_span_id"].isna()).to_numpy(dtype=bool)
    has = m["span_id"].notna().to_numpy(dtype=bool)
    trace = np.where(has, m["trace_id"].astype(object).to_numpy(), trace)
    anchor = np.where(has & ~own, m["parent_span_id"].astype(object).to_numpy(), anchor)
    return {"trace": trace.astype(object), "anchor": anchor.astype(object), "finished": own & has}


def _value(runs: pd.DataFrame, column: str, i: int) -> float | None:
    if column not in runs.columns:
        return None
    v = runs[column].iloc[i]
    if v is None or v is pd.NA:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _event(runs: pd.DataFrame, j: Job, trace: str, crossed_ns: int | None, *, running: bool, arrived: float,
           reported_at: float) -> Event:
    row = runs.iloc[j.run]
    start = row.get("start")
    # a run in flight is named by its trace (the id the batch analysis gives it, its task id, is on its root span,
    # which has not arrived); one that ended, as the batch analysis names it
    return Event(run_id=trace if running else str(row["run_id"]), trace_id=trace, anchor=j.anchor,
                 service=_text(row.get("service")),
                 agent=_text(row.get("agent")), cap=j.cap, value=j.value,
                 crossed_at=datetime.fromtimestamp(crossed_ns / 1e9, UTC) if crossed_ns is not None else None,
                 run_started=start.to_pydatetime(warn=False) if isinstance(start, pd.Timestamp) else None,
                 running=running, arrived_at=arrived, reported_at=reported_at)


def _text(v: object) -> str | None:
    return None if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) else str(v)


def _span_key(spans: pd.DataFrame) -> pd.Series:
    return spans["trace_id"].astype(str) + ":" + spans["span_id"].astype(str)


def _select(held: SpanSet, traces: set[str]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    return _of(held.spans, traces), _of(held.events, traces), _of(held.links, traces)


def _of(frame: pd.DataFrame, traces: set[str]) -> pd.DataFrame:
    if frame.empty:
        return frame
    return frame[frame["trace_id"].astype(str).isin(traces).to_numpy()].reset_index(drop=True)


def _without(frame: pd.DataFrame, traces: set[str]) -> pd.DataFrame:
    if frame.empty:
        return frame
    out = frame[~frame["trace_id"].astype(str).isin(traces).to_numpy()].reset_index(drop=True)
    # attribute columns only the let-go traces had go with them (a long stream of varied keys stays bounded)
    empty = [c for c in out.columns if c not in _BASE and not out[c].notna().any()]
    out = out.drop(columns=empty) if empty else out
    for c in out.columns:           # (a category only let-go spans had is dropped too)
        if isinstance(out[c].dtype, pd.CategoricalDtype):
            out[c] = out[c].cat.remove_unused_categories()
    return out


_BASE = frozenset({"trace_id", "span_id", "parent_span_id", "name", "kind", "start_ns", "end_ns", "status_code",
                   "status_message", "service_name", "source", ARRIVAL, "time_ns", "linked_trace_id",
                   "linked_span_id"})
