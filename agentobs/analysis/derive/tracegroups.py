"""Traces that make runs together: the traces of one task (a suspended run and its resume, a crash and its
recovery: joined by ``agentobs.task.id`` and by span links) and of one conversation or session (calls no
orchestration holds form one run per session id, across traces). Everything else about a run lives in its own
trace, so a group of traces is the unit that can be set aside, or sent to a partition, without changing any run:
the Dask engine places a group in one partition (``dask.placement``), and a selection skips the groups that can
hold no run it selects (``prune``).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...contract import semconv as sc
from ..spans.dialects import SESSION_KEYS

SESSION_PREFIX = "\x00session:"          # (a task id never starts with NUL: no session key meets a task id)


def join_keys(spans: pd.DataFrame) -> pd.DataFrame:
    """``trace_id``, ``task_id``: the task ids on each trace's spans, and its conversation or session ids (prefixed
    with ``SESSION_PREFIX``), as the keys that join traces."""
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


def trace_links(links: pd.DataFrame) -> pd.DataFrame:
    """``trace_id``, ``linked_trace_id``: the other traces each trace's span links point to."""
    if links.empty:
        return pd.DataFrame({"trace_id": pd.Series(dtype=object), "linked_trace_id": pd.Series(dtype=object)})
    t = links[["trace_id", "linked_trace_id"]].dropna().astype(str)
    return t[t["trace_id"] != t["linked_trace_id"]].drop_duplicates().reset_index(drop=True)


def components(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """Connected components of the graph with edges a[i]-b[i] over nodes 0..n-1: the smallest node of each
    component, per node (min-label propagation with pointer jumping)."""
    label = np.arange(n)
    while True:
        new = label.copy()
        low = np.minimum(label[a], label[b])
        np.minimum.at(new, a, low)
        np.minimum.at(new, b, low)
        while True:
            jumped = new[new]
            if (jumped == new).all():
                break
            new = jumped
        if (new == label).all():
            return label
        label = new


def groups(spans: pd.DataFrame, links: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(per span: the code of its trace; per trace code: the code of its group). Trace codes number the distinct
    trace ids in the order they come; a group's code is the smallest trace code in it."""
    codes, traces = pd.factorize(spans["trace_id"].astype(object).to_numpy(), use_na_sentinel=False)
    n = len(traces)
    keys = join_keys(spans)
    pairs = trace_links(links)
    index = pd.Index(np.asarray(traces, dtype=object).astype(str))
    a_parts, b_parts = [], []
    if len(keys):
        key_codes, _ = pd.factorize(keys["task_id"].to_numpy(dtype=object))
        a_parts.append(index.get_indexer(keys["trace_id"].to_numpy(dtype=object)))
        b_parts.append(n + key_codes)               # a key is a node of its own, after the traces
    if len(pairs):
        a = index.get_indexer(pairs["trace_id"].to_numpy(dtype=object))
        b = index.get_indexer(pairs["linked_trace_id"].to_numpy(dtype=object))
        both = (a >= 0) & (b >= 0)                  # a link to a trace the input does not hold joins nothing
        a_parts.append(a[both])
        b_parts.append(b[both])
    if not a_parts:
        return codes, np.arange(n)
    a = np.concatenate(a_parts)
    b = np.concatenate(b_parts)
    keep = (a >= 0) & (b >= 0)
    label = components(a[keep], b[keep], int(max(n, b.max() + 1 if len(b) else n)))
    return codes, label[:n]


__all__ = ["SESSION_PREFIX", "components", "groups", "join_keys", "trace_links"]
