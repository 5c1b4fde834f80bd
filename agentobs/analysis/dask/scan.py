"""The scan, on a worker: one input loaded as the local engine loads it, split into buckets, summarized.

The summary is what the client needs to place every trace: the task ids on each trace's spans and the traces its
span links point to (to join the segments of one task), the hashes of the trace ids present, the column types (to
give every partition the types of the whole input), the input's data quality, spellings and size.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...contract import semconv as sc
from ..dialects import SESSION_KEYS
from ..quality import DataQuality
from ..spanset import SpanSet
from .pieces import ORD, Piece, bucket_of, home_key, pack, split, with_order

SESSION_PREFIX = "\x00session:"          # (a task id never starts with NUL: no session key meets a task id)


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


def load_unit(unit: tuple[str, ...], listed: set[str]) -> SpanSet:
    """One unit of the scan, loaded as ``sources.load_sources`` loads its sources: a Jaeger query, a file (a local
    path or a URL an fsspec filesystem reads), or a few consecutive small files (read in batches)."""
    from ..sources import load_units
    return SpanSet.concat(load_units(unit, listed))


def scan(unit: tuple[str, ...], index: int, n_buckets: int, listed: set[str] | None = None) -> Scanned:
    ss = load_unit(unit, listed or set())
    spans = with_order(ss.spans, index)
    piece = Piece(spans, with_order(ss.events, index), with_order(ss.links, index))
    tasks = _tasks(spans)
    summary = Summary(index=index, sources=list(ss.sources), quality=ss.quality, spellings=ss.spellings,
                      templates={name: (df.drop(columns=ORD).iloc[:1] if len(df) else None)
                                 for name, df in piece.frames().items()},
                      tasks=tasks, links=_links(ss.links), trace_hashes=_hashes(spans), spans=len(spans))
    return Scanned(summary, [pack(p) if p is not None else None
                             for p in split(piece, n_buckets, _buckets(spans, tasks, n_buckets))])


def _buckets(spans: pd.DataFrame, tasks: pd.DataFrame, n: int) -> pd.Series:
    """Each trace id's bucket: by its smallest task id in this input, else by itself (``pieces.home_key``)."""
    traces = pd.unique(spans["trace_id"].astype(object).to_numpy()) if len(spans) else np.array([], dtype=object)
    task = tasks.groupby("trace_id")["task_id"].min().reindex(traces).to_numpy(dtype=object)
    return pd.Series(bucket_of(home_key(traces, task), n), index=traces)


def summary_of(s: Scanned) -> Summary:
    return s.summary


def _tasks(spans: pd.DataFrame) -> pd.DataFrame:
    """The task ids on each trace's spans, and its conversation or session ids (the traces of one session may form
    one run: ``identity``), as keys that join traces into one partition."""
    parts = [pd.DataFrame({"trace_id": pd.Series(dtype=object), "task_id": pd.Series(dtype=object)})]
    for key, prefix in ((sc.TASK_ID, ""), *((k, SESSION_PREFIX) for k in SESSION_KEYS)):
        if spans.empty or key not in spans.columns:
            continue
        t = spans.loc[spans[key].notna(), ["trace_id", key]]
        task = t[key]
        if pd.api.types.is_numeric_dtype(task.dtype):   # 1 and 1.0 name one task once the input's types are unified
            task = task.astype("Float64")
        parts.append(pd.DataFrame({"trace_id": t["trace_id"].astype(str).to_numpy(),
                                   "task_id": prefix + task.astype(str).to_numpy(dtype=object)}))
    return pd.concat(parts, ignore_index=True).drop_duplicates().reset_index(drop=True)


def _links(links: pd.DataFrame) -> pd.DataFrame:
    if links.empty:
        return pd.DataFrame({"trace_id": pd.Series(dtype=object), "linked_trace_id": pd.Series(dtype=object)})
    t = links[["trace_id", "linked_trace_id"]].dropna().astype(str)
    return t[t["trace_id"] != t["linked_trace_id"]].drop_duplicates().reset_index(drop=True)


def _hashes(spans: pd.DataFrame) -> np.ndarray:
    if spans.empty:
        return np.zeros(0, dtype=np.uint64)
    ids = spans["trace_id"].dropna().astype(str).unique()
    return np.unique(pd.util.hash_array(np.asarray(ids, dtype=object)))
