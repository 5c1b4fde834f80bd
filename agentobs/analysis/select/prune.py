"""A selection (``select.Selection``) pushed into the loading, so that a narrow selection of a large input costs
little; the runs table is then filtered exactly (``select.select_runs``), so what is pushed down only ever sets
aside what the selection would drop anyway.

- **Jaeger** (``narrow``): the query starts at the selection's ``since`` (within the URL's window, or in place of
  the URL's default start when the URL names none) and, when the URL names no service, asks only for the selected
  services (names, not patterns). Jaeger returns a trace when one of its spans of that service starts in the
  window, which every selected run's root span does; the traces the answer links to and does not hold (the
  earlier segments of a resumed task) are then asked for by id (``jaeger.fetch_linked``), so a task resumed inside
  the window is read whole.
- **Files, folders, object stores, streams** (``prune``): every span is read, then the traces that can hold no
  selected run are set aside before they are checked and before the runs table, the signatures and the percentiles
  are computed (the checks look at one trace at a time: duplicates, parent cycles, orphans and missing roots are
  counted for the traces kept; what the reading met, a bad line or value, for the whole input). Traces are set
  aside by group (``tracegroups``: the traces of one task or one session make runs together; every other run lives
  in one trace), and a group is kept when one of its spans starts in the window (a run starts when its first span
  does), one carries a selected service and one carries each ``--where`` attribute. No piece or file is skipped
  unread: which traces fall in a window is known only once their spans are read (a rotation cuts a trace across two
  files, a task resumed days later spans many, and a file's dates say only when it was last written).
"""
from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import numpy as np
import pandas as pd

from ...errors import InputError
from ..derive.tracegroups import groups
from ..input.timespec import iso
from ..jaeger.query import JaegerSource
from ..spans.spanset import ReadStats, SpanSet
from .selection import Selection, carrying, in_window, matches, unmatched


def prune(ss: SpanSet, sel: Selection) -> SpanSet:
    """``ss`` without the traces whose group can hold no run ``sel`` selects (spans, events and links); the data
    quality is kept as read. Sets ``ss.read`` to what was read and kept. ``ss`` may be unchecked (a span without a
    usable trace id or start time is set aside with the traces outside the selection, uncounted)."""
    spans = ss.spans
    if not sel or spans.empty:
        ss.read = _stats(spans, spans)
        return ss
    code, group = groups(spans, ss.links)
    n_groups = int(group.max()) + 1 if len(group) else 0
    span_group = group[code]
    ok = np.ones(n_groups, dtype=bool)
    for hit in _conditions(spans, sel):
        has = np.zeros(n_groups, dtype=bool)
        has[span_group[hit]] = True
        ok &= has
    keep = ok[span_group]
    if keep.all():
        ss.read = _stats(spans, spans)
        return ss
    kept_traces = set(spans["trace_id"].astype(str).to_numpy()[keep].tolist())
    ss.read = _stats(spans, spans[keep])
    if not keep.any():
        ss.read = replace(ss.read, unmatched=unmatched(sel, spans))
    ss.spans = spans[keep].reset_index(drop=True)
    for name in ("events", "links"):
        frame = getattr(ss, name)
        if len(frame):
            setattr(ss, name, frame[frame["trace_id"].astype(str).isin(kept_traces).to_numpy()].reset_index(drop=True))
    return ss


def _conditions(spans: pd.DataFrame, sel: Selection) -> list[np.ndarray]:
    """Per condition a group must meet, the spans that meet it."""
    out = []
    if sel.since is not None or sel.until is not None:
        start = spans["start_ns"].to_numpy(dtype=np.int64, na_value=np.iinfo(np.int64).min)
        out.append(in_window(start, sel) & spans["start_ns"].notna().to_numpy())
    if sel.services:
        out.append(matches(spans["service_name"], sel.services) if "service_name" in spans.columns
                   else np.zeros(len(spans), dtype=bool))
    out += [carrying(spans, key, value) for key, value in sel.where]
    return out


def _stats(read: pd.DataFrame, kept: pd.DataFrame) -> ReadStats:
    start = read["start_ns"].dropna() if len(read) else pd.Series(dtype="Int64")
    first = _time(int(start.min())) if len(start) else None
    last = _time(int(start.max())) if len(start) else None
    return ReadStats(traces=int(read["trace_id"].nunique()) if len(read) else 0,
                     kept=int(kept["trace_id"].nunique()) if len(kept) else 0,
                     spans=len(read), kept_spans=len(kept), first_start=first, last_start=last)


def _time(ns: int) -> datetime:
    return datetime.fromtimestamp(ns // 10**9, UTC).replace(microsecond=(ns % 10**9) // 1000)


def narrow(src: JaegerSource, sel: Selection) -> JaegerSource:
    """The Jaeger query of ``src`` asking only for what ``sel`` can select: from its ``since`` (within the URL's
    window; in place of the URL's default start, 24 hours back, when the URL names none) to the URL's end, and its
    services when the URL names none (only plain names: a pattern needs every service's traces). ``until`` is not
    pushed into the query: a task suspended before it and resumed after it is read whole, as the URL's window holds
    it (its run is selected by its start). An InputError when nothing is left to ask."""
    start = max(src.start, sel.since) if sel.since and src.since_given else (sel.since or src.start)
    if start >= src.end or (sel.until is not None and sel.until <= start):
        raise InputError(f"the Jaeger URL's window ({iso(src.start)} to {iso(src.end)}) and the selection "
                         f"({sel.describe()}) do not overlap: widen one of them")
    services = src.services
    if sel.services and not any(set("*?[") & set(s) for s in sel.services):
        if services:
            services = tuple(s for s in services if s in sel.services)
            if not services:
                raise InputError(f"the Jaeger URL asks for the services {', '.join(src.services)}, and --service "
                                 f"selects none of them ({', '.join(sel.services)})")
        else:
            services = sel.services
    return replace(src, start=start, services=services)


def group_of(ss: SpanSet, trace_id: str) -> SpanSet:
    """The spans, events and links of the traces that make runs with ``trace_id`` (its group), checked already."""
    if ss.spans.empty:
        return ss
    code, group = groups(ss.spans, ss.links)
    ids = ss.spans["trace_id"].astype(str).to_numpy()
    mine = code[ids == trace_id]
    if not len(mine):
        return SpanSet(quality=ss.quality, sources=ss.sources)
    keep = group[code] == group[mine[0]]
    traces = set(ids[keep].tolist())
    out = SpanSet(spans=ss.spans[keep].reset_index(drop=True), quality=ss.quality, sources=ss.sources)
    for name in ("events", "links"):
        frame = getattr(ss, name)
        setattr(out, name, frame[frame["trace_id"].astype(str).isin(traces).to_numpy()].reset_index(drop=True)
                if len(frame) else frame)
    return out


def trace_selected(ss: SpanSet, trace_id: str, sel: Selection) -> bool:
    """Whether trace ``trace_id`` of ``ss`` holds a run ``sel`` selects (its runs derived with the traces of its
    group)."""
    from ..derive.runs import derive_runs
    from .selection import select_runs
    runs, spans, _ = derive_runs(group_of(ss, trace_id))
    mine = runs[runs["trace_ids"].map(lambda ts: isinstance(ts, list) and trace_id in ts)]
    return not select_runs(mine, spans, sel).empty


__all__ = ["group_of", "narrow", "prune", "trace_selected"]
