"""On the client: the partitions' results merged into what the local engine has before it summarizes.

Runs rows are concatenated and sorted by run id (the local runs table's order). Data quality: the inputs' own
findings added up in input order (as ``SpanSet.concat`` gathers them), then ``check``'s findings summed over the
partitions, kind by kind in ``Kind``'s order (the order ``check`` makes them; ``bad_value`` step by step: the parent
cycles broken, then the negative counts column by column), each kind's sources by count, larger first, ties in
input order (``value_counts``' order), then ``derive_runs``' unusable token counts and costs, and its values beyond
the 64-bit range in run id order, then the unplaced calls. The derivations add up (``Derivation.__add__``).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from ...derive.runs import Derivation, Unusable
from ...spans.quality import DataQuality, Kind
from ..summary import SpanLookup
from .partition import Counted, PartResult, Schema
from .pieces import ORD
from .scan import Summary


def quality(summaries: list[Summary], parts: list[PartResult]) -> DataQuality:
    q = sum((s.quality for s in summaries), DataQuality())
    rank: dict[str, int] = {}             # input order: the units' order, then the order of a batch's files
    for src in (src for s in sorted(summaries, key=lambda s: s.index) for src in s.sources):
        rank.setdefault(src, len(rank))
    q += _ranked([c for p in parts for c in p.checked], rank)
    for u in _unusable(parts):
        q.record(u.finding())
    for o in sorted((o for p in parts for o in p.derivation.overflow), key=lambda o: o.order):
        q.record(o.finding())
    q += _ranked([c for p in parts for c in p.unplaced], rank)
    return q


def _ranked(counted: list[Counted], rank: dict[str, int]) -> DataQuality:
    """The counts summed per kind, step and source, in the order the local engine makes them: by kind, step, then
    source by count (larger first, ties in input order); each source's example its first span's, or the step's first
    when shared."""
    total: dict[tuple[Kind, int, str], Counted] = {}
    first: dict[tuple[Kind, int], tuple[int, str]] = {}
    for c in counted:
        mine = total.get((c.kind, c.step, c.source))
        if mine is not None:
            earlier = (mine.first, mine.example or "") <= (c.first, c.example or "")
            c = replace(mine if earlier else c, count=mine.count + c.count)
        total[(c.kind, c.step, c.source)] = c
        if c.shared and c.example is not None:
            first[(c.kind, c.step)] = min(first.get((c.kind, c.step), (c.first, c.example)), (c.first, c.example))
    q = DataQuality()
    for c in sorted(total.values(), key=lambda c: (c.kind.position, c.step, -c.count, rank.get(c.source, len(rank)),
                                                  c.source)):
        q.add(c.kind, c.source, c.count, first[(c.kind, c.step)][1] if c.shared else c.example)
    return q


def _unusable(parts: list[PartResult]) -> list[Unusable]:
    """``derive_runs``' unusable token counts and costs summed over the partitions, in the order the local engine
    counts them: per field and what was wrong, then per source in the order of its first such span (the partitions
    give input order)."""
    total: dict[tuple[str, str, str], Unusable] = {}
    for u in (u for p in parts for u in p.derivation.unusable):
        key = (u.field, u.what, u.source)
        mine = total.get(key)
        if mine is not None:
            u = replace(mine if (mine.first, mine.example) <= (u.first, u.example) else u, count=mine.count + u.count)
        total[key] = u
    return sorted(total.values(), key=lambda u: (u.order, u.first))


def derivation(parts: list[PartResult]) -> Derivation:
    return sum((p.derivation for p in parts), Derivation())


def runs(parts: list[PartResult]) -> pd.DataFrame:
    frames = [p.runs for p in parts if len(p.runs)]
    if not frames:
        return parts[0].runs if parts else pd.DataFrame()
    out = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    return out.sort_values("run_id", kind="stable").reset_index(drop=True)


def lookup(parts: list[PartResult], schema: Schema) -> SpanLookup:
    spans = _in_input_order([p.spans for p in parts])
    events = _in_input_order([p.events for p in parts])
    attributes: dict[str, pd.Series] = {}
    for name in {k for p in parts for k in p.attributes}:
        got = [p.attributes[name] for p in parts if name in p.attributes and len(p.attributes[name])]
        attributes[name] = pd.concat(got) if got else next(p.attributes[name] for p in parts if name in p.attributes)
    return SpanLookup(spans, events, attributes, columns=list(schema.frames["spans"].template.columns))


def _in_input_order(frames: list[pd.DataFrame]) -> pd.DataFrame:
    got = [f for f in frames if len(f)]
    if not got:
        return frames[0].drop(columns=ORD, errors="ignore") if frames else pd.DataFrame()
    out = pd.concat(got, ignore_index=True) if len(got) > 1 else got[0]
    order = np.argsort(out[ORD].to_numpy(), kind="stable")
    return out.iloc[order].drop(columns=ORD).reset_index(drop=True)
