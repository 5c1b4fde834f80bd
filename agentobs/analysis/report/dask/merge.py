"""On the client: the partitions' results merged into what the local engine has before it summarizes.

Runs rows are concatenated and sorted by run id (the local runs table's order). Data-quality notes: the inputs'
own notes in input order (as ``SpanSet.concat`` gathers them), then ``check``'s notes kind by kind in the order
it makes them, each kind's sources by count, larger first, ties in input order (``value_counts``' order), then
``derive_runs``' unusable token counts and costs, and its values beyond the 64-bit range in run id order, then the
unplaced calls. The derivation's counts are summed; its notes, which start with a count, are summed per wording.
"""
from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pandas as pd

from ...derive.roles import Classified
from ...derive.runs import NOT_ALWAYS_DERIVABLE, ROOTLESS_NOTE, Derivation, overflow_order
from ...spans.dialects import DIALECT_NAMES, NUMBER_FIELDS, UNUSABLE_KINDS
from ...spans.quality import DataQuality
from ..summary import SpanLookup
from .partition import PartResult, Schema
from .pieces import ORD
from .scan import Summary

# spans.checks.check's notes, in the order it makes them (bad_value: the parent cycles broken, then the negative counts,
# column by column)
CHECK_ORDER = ("bad_span", "duplicate_span", "parent_cycle", "bad_value", "negative_duration", "orphan_span",
               "missing_root")
# runs.derive_runs' notes, in the order it makes them (matched by their words after the count)
NOTE_ORDER = ("runs asked for tools", "runs record no tool-call arguments", "runs have answered model calls",
              "runs have model calls that could not be priced", ROOTLESS_NOTE, "runs have no ")
_COUNTED = re.compile(r"^(\d+) (.*)$", re.S)


def quality(summaries: list[Summary], parts: list[PartResult], schema: Schema) -> DataQuality:
    q = DataQuality()
    for s in summaries:
        q.extend(s.quality)
    rank: dict[str, int] = {}             # input order: the units' order, then the order of a batch's files
    for src in (src for s in sorted(summaries, key=lambda s: s.index) for src in s.sources):
        rank.setdefault(src, len(rank))

    def add_ranked(kind: str, counts: Counter[str], example: str | dict[str, str] | None = None) -> None:
        for src, n in sorted(counts.items(), key=lambda kv: (-kv[1], rank.get(kv[0], len(rank)), kv[0])):
            q.add(kind, src, n, example.get(src) if isinstance(example, dict) else example)

    for kind in CHECK_ORDER:
        if kind == "bad_value":
            cut = sorted(c for p in parts for c in p.cut)          # each source's example: its first span
            add_ranked(kind, Counter(src for _, src, _ in cut),
                       {src: e for _, src, e in reversed(cut)})
            for col in schema.frames["spans"].template.columns:
                counts = Counter[str]()
                for p in parts:
                    for c, src, n in p.negatives:
                        if c == col:
                            counts[src] += n
                if counts:
                    first = min(p.negative_examples[col] for p in parts if col in p.negative_examples)
                    add_ranked(kind, counts, first[1])
            continue
        counts = Counter[str]()
        for p in parts:
            for k, src, n in p.issues:
                if k == kind:
                    counts[src] += n
        add_ranked(kind, counts)
    _add_unusable(q, parts)
    for _run, _col, src, example in sorted((o for p in parts for o in p.derivation.overflow), key=overflow_order):
        q.add("bad_value", src, example=example)
    unplaced = Counter[str]()
    for p in parts:
        for src, n in p.unplaced:
            unplaced[src] += n
    add_ranked("unplaced_span", unplaced)
    return q


def _add_unusable(q: DataQuality, parts: list[PartResult]) -> None:
    """``derive_runs``' notes of unusable token counts and costs, as the local engine makes them: per field and what
    was wrong, then per source in the order of its first such span (the partitions give input order)."""
    merged: dict[tuple[str, str], dict[str, tuple[int, int, str]]] = {}
    for p in parts:
        for f, what, src, n, first, example in p.derivation.unusable:
            mine = merged.setdefault((f, what), {})
            count, at, said = mine.get(src, (0, first, example))
            mine[src] = (count + n, *min((at, said), (first, example)))
    for key in sorted(merged, key=lambda k: (NUMBER_FIELDS.index(k[0]), UNUSABLE_KINDS.index(k[1]))):
        for src, (n, _at, example) in sorted(merged[key].items(), key=lambda kv: kv[1][1]):
            q.add("bad_value", src, count=n, example=example)


def derivation(parts: list[PartResult]) -> Derivation:
    out = Derivation()
    missing: Counter[str] = Counter()
    dialects: Counter[str] = Counter()
    notes: dict[str, int] = {}
    for p in parts:
        missing.update(p.derivation.missing)
        dialects.update(p.derivation.dialects)
        out.unplaced += p.derivation.unplaced
        for note in p.derivation.notes:
            m = _COUNTED.match(note)
            if m:
                notes[m.group(2)] = notes.get(m.group(2), 0) + int(m.group(1))
            else:
                notes.setdefault(note, -1)
    out.missing = {c: missing[c] for c in NOT_ALWAYS_DERIVABLE if missing.get(c)}
    out.dialects = {str(d): dialects[str(d)] for d in DIALECT_NAMES if dialects.get(str(d))}
    roles: dict[str, Classified] = {}
    for p in parts:
        for src, c in p.derivation.roles.items():
            roles[src] = roles[src] + c if src in roles else c
    out.roles = dict(sorted(roles.items()))

    def rank(text: str) -> int:
        return next((i for i, prefix in enumerate(NOTE_ORDER) if text.startswith(prefix)), len(NOTE_ORDER))
    ordered = sorted(notes, key=rank)          # stable: unknown wordings after, in the order first seen
    out.notes = [text if notes[text] < 0 else f"{notes[text]} {text}" for text in ordered]
    return out


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
