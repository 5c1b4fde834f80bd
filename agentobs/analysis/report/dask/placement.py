"""Where each trace goes: the traces of one task in one partition.

Everything about a run lives in its trace, except the segments of one task: a suspended run and its resume, a
crash and its recovery, in other traces, joined by a span link from the resumed root to the suspended one and by
``agentobs.task.id``. The scan already buckets a trace by its task id when the input shows one on the trace's
spans (``pieces.home_key``), else by its trace id, so the segments of a task meet without moving. On the client,
the traces joined by a shared task id or a link form a group (connected components over the scan summaries); the
group's partition is the bucket of its smallest task id (of its smallest trace id when it has none). A trace's
rows move only from the inputs where the scan put them elsewhere: spans of a trace cut across files that do not
carry the task id, groups joined by a link alone. Few, whatever the input's size.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...derive.tracegroups import components
from .pieces import FRAMES, ORD, TASK_KEY, Piece, bucket_of, home_key, pack, unpack
from .scan import Scanned, Summary


@dataclass
class Placement:
    partitions: int
    moves: pd.DataFrame          # unit, trace_id, home (the bucket the scan used), target (its group's); target != home

    def for_unit(self, index: int) -> pd.DataFrame:
        return self.moves[self.moves["unit"] == index]

    def away(self, bucket: int) -> dict[int, set[str]]:
        """Per input: the traces whose rows in this bucket belong to another partition."""
        m = self.moves[self.moves["home"] == bucket]
        return {int(u): set(g["trace_id"]) for u, g in m.groupby("unit")}


def place(summaries: list[Summary], partitions: int) -> Placement:
    tasks = pd.concat([s.tasks.assign(unit=s.index) for s in summaries], ignore_index=True)
    links = pd.concat([s.links for s in summaries], ignore_index=True)
    target = group_targets(tasks, links)            # trace -> the key its group goes by
    if target.empty:
        return Placement(partitions, _no_moves())
    # where the scan put each member trace in each input holding it: by its smallest task id there, else by itself
    members = pd.DataFrame({"trace_id": target.index.to_numpy(dtype=object),
                            "hash": pd.util.hash_array(target.index.to_numpy(dtype=object))})
    present = pd.concat([pd.DataFrame({"unit": s.index, "hash": s.trace_hashes}) for s in summaries],
                        ignore_index=True).merge(members, on="hash")[["unit", "trace_id"]]
    local = tasks.groupby(["unit", "trace_id"], as_index=False)["task_id"].min()
    where = present.merge(local, on=["unit", "trace_id"], how="left")
    home = bucket_of(home_key(where["trace_id"].to_numpy(dtype=object), where["task_id"].to_numpy(dtype=object)),
                     partitions)
    goal = bucket_of(target.reindex(where["trace_id"]).to_numpy(dtype=object), partitions)
    moved = home != goal
    moves = pd.DataFrame({"unit": where["unit"].to_numpy(dtype=np.int64)[moved],
                          "trace_id": where["trace_id"].to_numpy(dtype=object)[moved],
                          "home": home[moved], "target": goal[moved]})
    return Placement(partitions, moves)


def group_targets(tasks: pd.DataFrame, links: pd.DataFrame) -> pd.Series:
    """trace id -> the key of its group (traces joined by a shared task id or a link), for every trace that has a
    task id or a link: ``home_key`` of the group's smallest task id, or of its smallest trace id."""
    tasks = tasks[["trace_id", "task_id"]].drop_duplicates()
    a = np.concatenate([tasks["trace_id"].to_numpy(dtype=object), links["trace_id"].to_numpy(dtype=object)])
    b = np.concatenate([home_key(tasks["trace_id"].to_numpy(dtype=object), tasks["task_id"].to_numpy(dtype=object)),
                        links["linked_trace_id"].to_numpy(dtype=object)])
    if len(a) == 0:
        return pd.Series(dtype=object)
    codes, names = pd.factorize(np.concatenate([a, b]))      # nodes: trace ids and task keys (disjoint spellings)
    label = components(codes[:len(a)], codes[len(a):], len(names))
    nodes = pd.DataFrame({"name": np.asarray(names, dtype=object), "group": label})
    is_task = nodes["name"].astype(str).str.startswith(TASK_KEY).to_numpy(dtype=bool)
    by_task = nodes[is_task].groupby("group")["name"].min()
    by_trace = nodes[~is_task].groupby("group")["name"].min()
    key = by_task.reindex(nodes["group"]).fillna(by_trace.reindex(nodes["group"]))
    traces = ~is_task
    return pd.Series(key.to_numpy(dtype=object)[traces], index=pd.Index(nodes["name"][traces], name="trace_id"))


def _no_moves() -> pd.DataFrame:
    return pd.DataFrame({"unit": pd.Series(dtype=np.int64), "trace_id": pd.Series(dtype=object),
                         "home": pd.Series(dtype=np.int64), "target": pd.Series(dtype=np.int64)})


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
