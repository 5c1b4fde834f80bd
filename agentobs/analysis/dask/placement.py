"""Where each trace goes, decided on the client: the traces of one task together.

Everything about a run lives in its trace, except the segments of one task: a suspended run and its resume, a
crash and its recovery, in other traces, joined by a span link from the resumed root to the suspended one and by
``agentobs.task.id``. The traces joined by links or by a shared task id form a group (union-find over the scan
summaries); a group goes to the partition of the hash of its smallest trace id, every other trace to the
partition of its own hash (the bucket the scan already put it in). Only traces of groups whose members hash to
different buckets move: few, whatever the input's size.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .pieces import FRAMES, ORD, Piece, bucket_of, pack, unpack
from .scan import Scanned, Summary


@dataclass
class Placement:
    partitions: int
    moves: pd.DataFrame          # trace_id, home (its hash bucket), target (its group's partition); target != home

    def for_unit(self, s: Summary) -> pd.DataFrame:
        """The moves of traces that have rows in this input (by the hashes of its trace ids)."""
        if self.moves.empty or len(s.trace_hashes) == 0:
            return self.moves.iloc[:0]
        h = pd.util.hash_array(self.moves["trace_id"].to_numpy(dtype=object))
        return self.moves[np.isin(h, s.trace_hashes)]


def place(summaries: list[Summary], partitions: int) -> Placement:
    groups = trace_groups(pd.concat([s.tasks for s in summaries], ignore_index=True),
                          pd.concat([s.links for s in summaries], ignore_index=True))
    if groups.empty:
        return Placement(partitions, _no_moves())
    home = bucket_of(groups.index.to_numpy(dtype=object), partitions)
    target = bucket_of(groups.to_numpy(dtype=object), partitions)
    moved = home != target
    moves = pd.DataFrame({"trace_id": groups.index.to_numpy(dtype=object)[moved], "home": home[moved],
                          "target": target[moved]})
    return Placement(partitions, moves)


def trace_groups(tasks: pd.DataFrame, links: pd.DataFrame) -> pd.Series:
    """trace id -> group id (the smallest trace id of its group), for the traces of groups of two or more."""
    tasks = tasks.drop_duplicates()
    shared = tasks[tasks.groupby("task_id")["trace_id"].transform("nunique") > 1]
    first = shared.groupby("task_id")["trace_id"].transform("first")
    a = np.concatenate([shared["trace_id"].to_numpy(dtype=object), links["trace_id"].to_numpy(dtype=object)])
    b = np.concatenate([first.to_numpy(dtype=object), links["linked_trace_id"].to_numpy(dtype=object)])
    if len(a) == 0:
        return pd.Series(dtype=object)
    codes, names = pd.factorize(np.concatenate([a, b]))
    label = components(codes[:len(a)], codes[len(a):], len(names))
    names = pd.Series(np.asarray(names, dtype=object))
    group = names.groupby(label).transform("min")
    return pd.Series(group.to_numpy(dtype=object), index=pd.Index(names.to_numpy(dtype=object), name="trace_id"))


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


def _no_moves() -> pd.DataFrame:
    return pd.DataFrame({"trace_id": pd.Series(dtype=object), "home": pd.Series(dtype=np.int64),
                         "target": pd.Series(dtype=np.int64)})


def extract_moves(scanned: Scanned, moves: pd.DataFrame) -> dict[int, bytes]:
    """The rows of the input's moved traces, by the partition they go to (on the worker holding the input).
    Their home buckets are left as they are: the partition of each drops the rows that moved away."""
    out: dict[int, list[Piece]] = {}
    for home, grp in moves.groupby("home"):
        blob = scanned.buckets[int(home)]
        if blob is None:
            continue
        piece = unpack(blob)
        target_of = pd.Series(grp["target"].to_numpy(), index=grp["trace_id"].to_numpy(dtype=object))
        away = {}
        for name, df in piece.frames().items():
            target = df["trace_id"].astype(object).map(target_of)
            moving = target.notna().to_numpy()
            away[name] = (df[moving], target[moving].astype(np.int64).to_numpy())
        for t in np.unique(np.concatenate([a[1] for a in away.values()])):
            out.setdefault(int(t), []).append(Piece(**{n: df[tg == t] for n, (df, tg) in away.items()}))
    return {t: pack(Piece(**{name: pd.concat([getattr(p, name) for p in pieces]).sort_values(ORD, kind="stable")
                             for name in FRAMES})) for t, pieces in out.items()}


def bucket(scanned: Scanned, k: int) -> bytes | None:
    return scanned.buckets[k]


def moved_in(extracted: dict[int, bytes], k: int) -> bytes | None:
    return extracted.get(k)
