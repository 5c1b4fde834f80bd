"""The span graph: integer keys for spans and traces, parents as row indices, and walks over it.

Everything is vectorized. Walks up the parent chains use pointer doubling (log n rounds of numpy
indexing), so a chain of any depth costs the same, and a chain that never ends (a parent cycle) is
found rather than followed forever.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc


@dataclass
class SpanKeys:
    trace: np.ndarray      # int64 code of the trace id
    key: np.ndarray        # int64 code of (trace id, span id)
    parent: np.ndarray     # row index of the parent span, -1 when absent or not in the input
    true_root: np.ndarray  # no parent span id at all (an orphan has one that is not in the input)
    parent_key: np.ndarray | None = None   # int64 code of (trace id, parent span id), -1 for a true root: siblings
                                           # share it even when their parent is not in the input


def _arrow(s: pd.Series) -> pa.Array:
    arr = pa.array(s.astype("string").array)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return arr.cast(pa.large_string())


def span_keys(spans: pd.DataFrame) -> SpanKeys:
    n = len(spans)
    tid, sid, pid = (_arrow(spans[c]) for c in ("trace_id", "span_id", "parent_span_id"))
    trace = pc.dictionary_encode(tid).indices.to_numpy(zero_copy_only=False).astype(np.int64)
    both = pc.dictionary_encode(pa.concat_arrays([sid, pid]))
    codes = both.indices.to_numpy(zero_copy_only=False)
    width = np.int64(len(both.dictionary) + 1)
    scode = codes[:n].astype(np.int64)
    pvalid = pid.is_valid().to_numpy(zero_copy_only=False)
    pcode = np.where(pvalid, np.nan_to_num(codes[n:].astype(float), nan=-1), -1).astype(np.int64)
    key = trace * width + scode
    pkey = np.where(pcode >= 0, trace * width + pcode, -1)
    index = pd.Index(key)
    if not index.is_unique:
        index = pd.Index(pd.Series(key).drop_duplicates(keep="first").to_numpy())
        rows = pd.Series(np.arange(n)).groupby(key).first().reindex(index).to_numpy()
        parent = np.where(pkey >= 0, index.get_indexer(pkey), -1)
        parent = np.where(parent >= 0, rows[np.maximum(parent, 0)], -1)
    else:
        parent = np.where(pkey >= 0, index.get_indexer(pkey), -1)
    return SpanKeys(trace, key, parent.astype(np.int64), ~pvalid, pkey.astype(np.int64))


def _rounds(n: int) -> int:
    return int(np.ceil(np.log2(max(n, 2)))) + 1


def in_cycle(parent: np.ndarray) -> np.ndarray:
    """Spans whose chain of parents never ends: in a cycle, or under one.

    After k rounds ``anc`` is each span's ancestor 2^k levels up (-1 past the root), so a span that
    still has one after 2^k > n levels is on an endless chain.
    """
    n = len(parent)
    anc = parent.copy()
    for _ in range(_rounds(n)):
        if not (anc >= 0).any():
            return np.zeros(n, dtype=bool)
        anc = np.where(anc >= 0, anc[np.maximum(anc, 0)], -1)
    return anc >= 0


def cycle_of(parent: np.ndarray) -> np.ndarray:
    """For every span on a parent cycle, the cycle's smallest row (its label); -1 for the others (those under a
    cycle included).

    The 2^k-th ancestors of the spans in or under cycles, 2^k > n levels up, are the spans on them (on a cycle,
    the 2^k-th ancestor is a permutation of it); the smallest row of each cycle is then found by pointer doubling
    around it, one round doubling the window.
    """
    n = len(parent)
    anc = parent.copy()
    for _ in range(_rounds(n)):
        if not (anc >= 0).any():
            return np.full(n, -1, dtype=np.int64)
        anc = np.where(anc >= 0, anc[np.maximum(anc, 0)], -1)
    on = np.zeros(n, dtype=bool)
    on[anc[anc >= 0]] = True
    label = np.where(on, np.arange(n), -1)
    up = np.where(on, parent, -1)                  # a span on a cycle has its parent on it
    for _ in range(_rounds(n)):
        label = np.where(on, np.minimum(label, label[np.maximum(up, 0)]), -1)
        up = np.where(on, up[np.maximum(up, 0)], -1)
    return label.astype(np.int64)


def chain_top(parent: np.ndarray) -> np.ndarray:
    """The last span up each chain of parents that is in the input (itself for a span without one)."""
    top = np.where(parent >= 0, parent, np.arange(len(parent)))
    for _ in range(_rounds(len(parent))):
        nxt = top[top]
        if (nxt == top).all():
            break
        top = nxt
    return top


def highest_marked(parent: np.ndarray, mark: np.ndarray) -> np.ndarray:
    """For every span, the marked span highest up its chain (itself included), or -1 when none is marked.

    Pointer doubling: ``hi[v]`` is the highest marked span among v and its 2^k - 1 nearest ancestors,
    ``anc[v]`` its 2^k-th ancestor; one round doubles the window.
    """
    n = len(parent)
    hi = np.where(mark, np.arange(n), -1)
    anc = parent.copy()
    for _ in range(_rounds(n)):
        live = anc >= 0
        if not live.any():
            break
        up = np.where(live, hi[np.maximum(anc, 0)], -1)
        hi = np.where(up >= 0, up, hi)
        anc = np.where(live, anc[np.maximum(anc, 0)], -1)
    return hi


def link_groups(trace_ids: np.ndarray, span_ids: np.ndarray, links: pd.DataFrame | None) -> np.ndarray:
    """Connected groups of the given spans (run anchors) joined by span links: a group id per span.

    A resumed segment links to the suspended one. Union-find over the links that join two of the
    given spans (few: one per resume).
    """
    n = len(trace_ids)
    parent = np.arange(n)
    if links is None or links.empty or n == 0:
        return parent
    pos = pd.Series(np.arange(n), index=pd.MultiIndex.from_arrays([trace_ids.astype(str), span_ids.astype(str)]))
    pos = pos[~pos.index.duplicated()]
    src = pos.reindex(pd.MultiIndex.from_arrays([links["trace_id"].astype(str), links["span_id"].astype(str)]))
    dst = pos.reindex(pd.MultiIndex.from_arrays([links["linked_trace_id"].astype(str),
                                                 links["linked_span_id"].astype(str)]))
    ok = src.notna().to_numpy() & dst.notna().to_numpy()

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    for a, b in zip(src.to_numpy()[ok].astype(int), dst.to_numpy()[ok].astype(int), strict=True):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return chain_top(np.where(parent == np.arange(n), -1, parent))


def nearest_marked(parent: np.ndarray, mark: np.ndarray) -> np.ndarray:
    """For every span, its nearest proper ancestor that is marked, or -1 when none is.

    Pointer jumping: ``up[v]`` never passes a marked span (it stops on one), so jumping from an unmarked ``up[v]``
    to ``up[up[v]]`` keeps ``v``'s nearest marked ancestor within reach; a chain of any depth resolves in log n
    rounds, and a parent cycle ends after them (its spans get -1)."""
    up = parent.copy()
    for _ in range(_rounds(len(parent))):
        pending = (up >= 0) & ~mark[np.maximum(up, 0)]
        if not pending.any():
            return up
        up = np.where(pending, up[np.maximum(up, 0)], up)
    return np.where((up >= 0) & mark[np.maximum(up, 0)], up, -1)


def depths(parent: np.ndarray) -> np.ndarray:
    """Each span's number of ancestors in the input (list ranking by pointer jumping; spans on or under a parent
    cycle get a bounded, meaningless depth)."""
    dist = (parent >= 0).astype(np.int64)
    anc = parent.copy()
    for _ in range(_rounds(len(parent))):
        live = anc >= 0
        if not live.any():
            break
        dist = dist + np.where(live, dist[np.maximum(anc, 0)], 0)
        anc = np.where(live, anc[np.maximum(anc, 0)], -1)
    return dist


def ancestors_of(parent: np.ndarray, mark: np.ndarray) -> np.ndarray:
    """Spans that are proper ancestors of a marked span. Doubling: after round k the set holds every ancestor
    within 2^k levels of a marked span (the set so far, lifted by 2^k levels), so a chain of any depth costs log n
    rounds of numpy indexing, not one per level."""
    n = len(parent)
    hit = np.zeros(n, dtype=bool)
    level = parent.copy()                     # each span's 2^k-th ancestor
    frontier = mark.copy()
    for _ in range(_rounds(n)):
        up = level[frontier]
        up = up[up >= 0]
        if not len(up) and not (level >= 0).any():
            break
        grown = np.zeros(n, dtype=bool)
        grown[up] = True
        hit |= grown
        frontier = frontier | grown
        level = np.where(level >= 0, level[np.maximum(level, 0)], -1)
    return hit
