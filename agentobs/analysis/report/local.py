"""The local engine: the report on spans loaded in this process (``analyze_spans``)."""
from __future__ import annotations

from dataclasses import replace

from ..assess.labels import label_by_attribute
from ..derive.runs import derive_runs, not_derived
from ..load.sources import printable_source
from ..select.selection import select_runs, spans_of, unmatched
from ..spans.spanset import SpanSet
from .summary import Loaded, Options, Report, SpanLookup, count_unplaced, summarize_runs


def analyze_spans(ss: SpanSet, options: Options | None = None, sources: list[str] | None = None) -> Report:
    """The report on the spans of ``ss``; with a selection, on the runs it selects (``select.select_runs``), and the
    spans those runs hold."""
    opt = options or Options()
    runs, spans, der = derive_runs(ss)
    q = ss.quality
    count_unplaced(spans, q)
    if opt.selection:
        every = runs
        runs = select_runs(runs, spans, opt.selection)
        if runs.empty and not every.empty and ss.read is not None:
            ss.read = replace(ss.read, unmatched=unmatched(opt.selection, spans, every))
        spans = spans_of(spans, runs).reset_index(drop=True)
        der.missing = not_derived(runs)
    if opt.success_attr:
        runs = label_by_attribute(runs, spans, *opt.success_attr, notes=der.notes)
    loaded = Loaded(sources=[printable_source(s) for s in sources] if sources else ss.sources,
                    spellings=ss.spellings, n_spans=len(spans), read=ss.read)
    return summarize_runs(runs, SpanLookup(spans, ss.events), q, der, opt, loaded=loaded)


__all__ = ["analyze_spans"]
