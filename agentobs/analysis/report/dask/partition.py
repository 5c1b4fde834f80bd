"""One partition, on a worker: complete task groups in, runs and everything the report needs from spans out.

The pieces arrive in input order and take the column types of the whole input (``Schema``: what
``SpanSet.concat`` gives when the local engine concatenates every input), so ``check`` and ``derive_runs`` see
the rows and values the local engine sees for these traces. Out come the runs rows, the derivation, the data
quality counted here (``Counted``: by kind, step and source, with the input position of the first span counted,
merged on the client in the local engine's order), the root-span
attributes asked for by ``--segment``, and the spans and events of the runs the report may show: the first runs
by run id of each signature and the first context-growth runs, a superset of those the report will pick.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from ...assess.labels import apply_labels, label_by_attribute
from ...assess.signatures import CATALOG, classify
from ...derive.runs import Derivation, derive_runs, not_derived
from ...select.prune import prune
from ...select.selection import Selection, select_runs, spans_of
from ...spans.checks import Flagged, check
from ...spans.quality import DataQuality, Kind
from ...spans.schema import empty_events, empty_links, empty_spans
from ...spans.spanset import SpanSet, concat_frames, widen_column
from ..summary import GROWTH_SERIES_RUNS, count_unplaced, root_attribute
from .pieces import ORD, Piece, unpack
from .scan import Summary

EMPTY = {"spans": empty_spans, "events": empty_events, "links": empty_links}


@dataclass
class FrameSchema:
    template: pd.DataFrame                       # zero rows: the columns, in order, and their types
    widen: dict[str, list[Any]]                  # columns whose type differs between inputs: the types seen


@dataclass
class Schema:
    frames: dict[str, FrameSchema]

    @staticmethod
    def of(summaries: list[Summary]) -> Schema:
        out = {}
        for name, empty in EMPTY.items():
            firsts = [t for s in summaries if (t := s.templates.get(name)) is not None]
            kinds: dict[str, list[Any]] = {}
            for t in firsts:
                for c in t.columns:
                    kinds.setdefault(c, []).append(t[c].dtype)
            widen = {c: d for c, d in kinds.items() if len({str(x) for x in d}) > 1}
            out[name] = FrameSchema(concat_frames(firsts, empty).iloc[:0], widen)
        return Schema(out)


@dataclass
class Request:
    """What every partition is asked for, besides its spans."""
    success_attr: tuple[str, str] | None
    labels: dict[str, bool] | None
    labels_source: str | None
    segments: tuple[str, ...]
    examples: int
    selection: Selection = field(default_factory=Selection)


@dataclass(frozen=True, kw_only=True)
class Counted:
    """What a partition counted of one kind in one source at one step of ``check`` (or of the unplaced calls):
    summed over the partitions, ordered as the local engine makes them (``merge``)."""
    kind: Kind
    step: int = 0            # bad_value of check: 0 for the parent cycles broken, 1 + the column's place for the
                             # negative counts of a column
    source: str
    count: int
    first: int = 0           # the input order of the first span counted
    example: str | None = None
    shared: bool = False     # the example is the step's first in the input, given to every source


@dataclass(kw_only=True)
class PartResult:
    runs: pd.DataFrame
    derivation: Derivation
    n_spans: int
    checked: list[Counted]                                   # check's findings
    unplaced: list[Counted]
    attributes: dict[str, pd.Series] = field(default_factory=dict)
    spans: pd.DataFrame = field(default_factory=pd.DataFrame)   # the spans of the runs that may be shown, with _ord
    events: pd.DataFrame = field(default_factory=pd.DataFrame)


def conform(frames: list[pd.DataFrame], fs: FrameSchema) -> pd.DataFrame:
    """The rows of ``frames`` (input order) with the whole input's columns and types, and ``_ord`` last."""
    fixed = []
    for df in frames:
        if df is None or df.empty:
            continue
        df = df.copy(deep=False)
        for c, dtypes in fs.widen.items():
            if c in df.columns:
                df[c] = widen_column(df[c], dtypes)
        fixed.append(df)
    if not fixed:
        return fs.template.assign(**{ORD: pd.Series(dtype=np.int64)})
    out = pd.concat(fixed, ignore_index=True, sort=False) if len(fixed) > 1 else fixed[0].reset_index(drop=True)
    cols = {}
    for c in fs.template.columns:
        want = fs.template[c].dtype
        if c not in out.columns:
            cols[c] = pd.Series(index=out.index, dtype=want)
        elif out[c].dtype != want:
            cols[c] = out[c].astype(want)
        else:
            cols[c] = out[c]
    cols[ORD] = out[ORD]
    return pd.DataFrame(cols, index=out.index)


def gather(inputs: list[tuple[bytes | None, bytes | None]], moved_away: dict[int, set[str]]) -> list[Piece]:
    """Per input, in input order: its bucket without the traces that moved to another partition, with the rows
    that moved here, in input order."""
    out = []
    for i, (own, incoming) in enumerate(inputs):
        pieces = []
        if own is not None:
            p = unpack(own)
            away = moved_away.get(i)
            if away:
                p = Piece(**{n: df[~df["trace_id"].astype(object).isin(away).to_numpy()]
                             for n, df in p.frames().items()})
            pieces.append(p)
        if incoming is not None:
            pieces.append(unpack(incoming))
        if len(pieces) == 2:
            pieces = [Piece(**{n: pd.concat([getattr(p, n) for p in pieces]).sort_values(ORD, kind="stable")
                               for n in EMPTY})]
        out += pieces
    return out


def run(inputs: list[tuple[bytes | None, bytes | None]], moved_away: dict[int, set[str]], schema: Schema,
        req: Request) -> PartResult:
    pieces = gather(inputs, moved_away)
    frames = {name: conform([getattr(p, name) for p in pieces], schema.frames[name]) for name in EMPTY}
    ss = SpanSet(spans=frames["spans"], events=frames["events"], links=frames["links"].drop(columns=ORD),
                 quality=DataQuality())
    if req.selection:                  # as the local engine sets them aside (a group lives in one partition)
        ss = prune(ss, req.selection)
    flagged = Flagged()
    check(ss, flagged)
    order = ss.spans[ORD].to_numpy()
    checked = _checked(ss, flagged, order)
    ev_order = ss.events[ORD].to_numpy() if ORD in ss.events.columns else np.zeros(0, dtype=np.int64)
    ss.spans = ss.spans.drop(columns=ORD)
    ss.events = ss.events.drop(columns=ORD, errors="ignore")
    runs, spans, der = derive_runs(ss)
    der.unusable = [replace(u, first=int(order[u.first])) for u in der.unusable]     # rows: input order
    loose = DataQuality()
    count_unplaced(spans, loose)
    kept_order = order                 # the input order of each row of ``spans``
    if req.selection:                  # every run lives in this partition with all its spans: selected here
        runs = select_runs(runs, spans, req.selection)
        spans = spans_of(spans, runs)
        kept_order = order[spans.index.to_numpy()]
        spans = spans.reset_index(drop=True)
        der.missing = not_derived(runs)
    if req.success_attr:
        runs = label_by_attribute(runs, spans, *req.success_attr, notes=der.notes)
    out = PartResult(runs=runs, derivation=der, n_spans=len(spans), checked=checked,
                     unplaced=[Counted(kind=f.kind, source=f.source, count=f.count) for f in loose.issues])
    for by in req.segments:
        if by not in runs.columns and by in spans.columns:
            attr = root_attribute(spans, by)
            out.attributes[by] = pd.Series(attr.to_numpy(), index=pd.Index(attr.index.astype(str), name="run_id"))
    shown = _may_be_shown(runs, req)
    keep = spans["run_id"].isin(shown).to_numpy() if len(spans) else np.zeros(0, dtype=bool)
    out.spans = spans[keep].assign(**{ORD: kept_order[keep]})
    events = ss.events.assign(**{ORD: ev_order})
    out.events = events.merge(out.spans[["trace_id", "span_id"]].drop_duplicates(), on=["trace_id", "span_id"]) \
        if len(events) and len(out.spans) else events.iloc[:0]
    return out


def _may_be_shown(runs: pd.DataFrame, req: Request) -> list[str]:
    """Run ids the report may show: per signature the first ``examples`` by run id, and the first context-growth
    runs. Labels and signatures are per run, so they are the same here as on the whole runs table, but for one:
    another framework's run has context growth when its largest input is beyond the 95th percentile of the
    successful runs of the whole input, a threshold this partition cannot know; so its runs that are among the
    first by run id above *some* threshold go too (``_first_above_any``)."""
    if runs.empty:
        return []
    lab = apply_labels(runs, req.labels, req.labels_source or "", DataQuality()) if req.labels else runs
    lab = classify(lab).sort_values("run_id", kind="stable")
    ids: set[str] = set()
    for s in CATALOG:
        hit = lab["signatures"].map(lambda xs, n=s.name: n in xs)
        ids.update(lab.loc[hit, "run_id"].head(req.examples).astype(str))
        if s.name == "context_growth":
            ids.update(lab.loc[hit, "run_id"].head(GROWTH_SERIES_RUNS).astype(str))
            foreign = lab[(lab["source_kind"] != "agentobs").to_numpy(dtype=bool)]
            ids.update(_first_above_any(foreign, "max_input_tokens", max(req.examples, GROWTH_SERIES_RUNS)))
    return sorted(ids)


def _first_above_any(runs: pd.DataFrame, column: str, k: int) -> list[str]:
    """The runs (sorted by run id) that are among the first ``k`` whose ``column`` exceeds some threshold,
    whichever it is: those with fewer than ``k`` earlier runs of a value at least theirs (about k log n of n)."""
    import heapq
    values = runs[column].to_numpy(dtype=float, na_value=np.nan)
    top: list[float] = []                      # the k largest values so far (a min-heap)
    out = []
    for run_id, v in zip(runs["run_id"].astype(str).tolist(), values.tolist(), strict=True):
        if v != v:                             # (NaN: no value, above no threshold)
            continue
        if len(top) < k or top[0] < v:
            out.append(run_id)
        if len(top) < k:
            heapq.heappush(top, v)
        elif top[0] < v:
            heapq.heapreplace(top, v)
    return out


def _checked(ss: SpanSet, flagged: Flagged, order: np.ndarray) -> list[Counted]:
    """What ``check`` counted here: per kind and source, and its ``bad_value`` findings per step (the parent
    cycles broken, each source's example its first span; the negative counts column by column, the example the
    column's first), each with the input order of its first span."""
    out = [Counted(kind=f.kind, source=f.source, count=f.count) for f in ss.quality.issues if f.kind != Kind.BAD_VALUE]
    cut: dict[str, list[tuple[int, str]]] = {}
    for c in flagged.cut:
        cut.setdefault(c.source, []).append((int(order[c.row]), c.example))
    for src, spans in cut.items():
        at, example = min(spans)
        out.append(Counted(kind=Kind.BAD_VALUE, source=src, count=len(spans), first=at, example=example))
    columns = list(ss.spans.columns)
    for neg in flagged.negatives:
        src = ss.spans["source"].astype(str).to_numpy()[neg.rows]
        for s_, n in pd.Series(src).value_counts().items():
            out.append(Counted(kind=Kind.BAD_VALUE, step=1 + columns.index(neg.column), source=str(s_), count=int(n),
                               first=int(order[neg.rows[0]]), example=neg.example, shared=True))
    return out
