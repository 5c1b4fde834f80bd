"""The scan, on a worker: one input loaded as the local engine loads it, split into buckets, summarized.

The summary is what the client needs to place every trace: the task ids on each trace's spans and the traces its
span links point to (to join the segments of one task), the hashes of the trace ids present, the column types (to
give every partition the types of the whole input), the input's data quality, spellings and size.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...derive.tracegroups import join_keys, trace_links
from ...select.selection import Selection
from ...spans.quality import DataQuality
from ...spans.spanset import SpanSet
from .pieces import ORD, Piece, bucket_of, home_key, pack, split, with_order


@dataclass
class Summary:
    index: int
    sources: list[str]
    quality: DataQuality
    spellings: dict[str, dict[str, int]]
    templates: dict[str, pd.DataFrame | None]    # first row of spans/events/links (types), None when empty
    tasks: pd.DataFrame                          # trace_id, task_id: the task ids on each trace's spans
    links: pd.DataFrame                          # trace_id, linked_trace_id
    trace_hashes: np.ndarray                     # sorted uint64 hashes of the trace ids present
    spans: int = 0


@dataclass
class Scanned:
    summary: Summary
    buckets: list[bytes | None] = field(default_factory=list)


def load_unit(unit: tuple[str, ...], listed: set[str], selection: Selection | None = None) -> SpanSet:
    """One unit of the scan, loaded as ``sources.load_sources`` loads its sources: a Jaeger query (asking only for
    what ``selection`` can select), a file (a local path or a URL an fsspec filesystem reads), or a few consecutive
    small files (read in batches)."""
    from ...load.sources import load_units
    return SpanSet.concat(load_units(unit, listed, selection=selection))


def scan(unit: tuple[str, ...], index: int, n_buckets: int, listed: set[str] | None = None,
         selection: Selection | None = None) -> Scanned:
    ss = load_unit(unit, listed or set(), selection)
    spans = with_order(ss.spans, index)
    piece = Piece(spans, with_order(ss.events, index), with_order(ss.links, index))
    tasks = join_keys(spans)
    summary = Summary(index=index, sources=list(ss.sources), quality=ss.quality, spellings=ss.spellings,
                      templates={name: (df.drop(columns=ORD).iloc[:1] if len(df) else None)
                                 for name, df in piece.frames().items()},
                      tasks=tasks, links=trace_links(ss.links), trace_hashes=_hashes(spans), spans=len(spans))
    return Scanned(summary, [pack(p) if p is not None else None
                             for p in split(piece, n_buckets, _buckets(spans, tasks, n_buckets))])


def _buckets(spans: pd.DataFrame, tasks: pd.DataFrame, n: int) -> pd.Series:
    """Each trace id's bucket: by its smallest task id in this input, else by itself (``pieces.home_key``)."""
    traces = pd.unique(spans["trace_id"].astype(object).to_numpy()) if len(spans) else np.array([], dtype=object)
    task = tasks.groupby("trace_id")["task_id"].min().reindex(traces).to_numpy(dtype=object)
    return pd.Series(bucket_of(home_key(traces, task), n), index=traces)


def summary_of(s: Scanned) -> Summary:
    return s.summary


def _hashes(spans: pd.DataFrame) -> np.ndarray:
    if spans.empty:
        return np.zeros(0, dtype=np.uint64)
    ids = spans["trace_id"].dropna().astype(str).unique()
    return np.unique(pd.util.hash_array(np.asarray(ids, dtype=object)))
