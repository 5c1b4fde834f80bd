"""Pieces of a SpanSet as the cluster holds them: compressed, in buckets by a hash of the task or trace id.

A piece is the spans, span events and links of some traces of one input, each row with ``_ord``, its position in
the input (input index << 40 | row): concatenating pieces and sorting by ``_ord`` gives the rows in the order the
local engine reads them. Pieces are pickled and compressed (LZ4 through pyarrow), so the cluster holds several times
less than the same spans take as DataFrames while they wait for their partition.
"""
from __future__ import annotations

import pickle
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

ORD = "_ord"
ROW_BITS = 40
CODEC = "lz4"
FRAMES = ("spans", "events", "links")


@dataclass
class Piece:
    spans: pd.DataFrame
    events: pd.DataFrame
    links: pd.DataFrame

    def frames(self) -> dict[str, pd.DataFrame]:
        return {"spans": self.spans, "events": self.events, "links": self.links}

    def __len__(self) -> int:
        return len(self.spans) + len(self.events) + len(self.links)


def pack(piece: Piece) -> bytes:
    raw = pickle.dumps(piece, protocol=5)
    return len(raw).to_bytes(8, "little") + pa.compress(raw, codec=CODEC, asbytes=True)


def unpack(blob: bytes) -> Piece:
    size = int.from_bytes(blob[:8], "little")
    return pickle.loads(pa.decompress(blob[8:], decompressed_size=size, codec=CODEC, asbytes=True))


def bucket_of(trace_ids: pd.Series | np.ndarray, n: int) -> np.ndarray:
    """The bucket (0..n-1) of each trace id: a fixed hash, the same in every process."""
    ids = np.asarray(pd.Series(trace_ids).astype(object).to_numpy(), dtype=object)
    if len(ids) == 0:
        return np.zeros(0, dtype=np.int64)
    return (pd.util.hash_array(ids, categorize=True) % np.uint64(n)).astype(np.int64)


TASK_KEY = "task:"          # trace ids are hex: a task's key never equals one


def home_key(trace_ids: np.ndarray, task_ids: np.ndarray) -> np.ndarray:
    """What a trace is bucketed by: its (smallest) task id where it has one, else its trace id."""
    tasks = np.asarray(task_ids, dtype=object)
    has = ~pd.isna(tasks)
    out = np.asarray(trace_ids, dtype=object).copy()
    out[has] = [TASK_KEY + str(t) for t in tasks[has]]
    return out


def with_order(df: pd.DataFrame, index: int) -> pd.DataFrame:
    out = df.reset_index(drop=True)
    out[ORD] = (np.int64(index) << ROW_BITS) + np.arange(len(out), dtype=np.int64)
    return out


def split(piece: Piece, n: int, bucket: pd.Series) -> list[Piece | None]:
    """The piece's rows in ``n`` buckets (row order kept): ``bucket`` maps each trace id to its bucket."""
    parts: dict[str, list[pd.DataFrame | None]] = {}
    for name, df in piece.frames().items():
        if df.empty:
            parts[name] = [None] * n
            continue
        codes, uniq = pd.factorize(df["trace_id"].astype(object))
        b = bucket.reindex(uniq).to_numpy(dtype=np.int64)[codes]
        order = np.argsort(b, kind="stable")
        bounds = np.searchsorted(b[order], np.arange(n + 1))
        parts[name] = [df.iloc[order[bounds[k]:bounds[k + 1]]] if bounds[k + 1] > bounds[k] else None
                       for k in range(n)]
    out: list[Piece | None] = []
    for k in range(n):
        got = {name: parts[name][k] for name in FRAMES}
        if all(v is None for v in got.values()):
            out.append(None)
        else:
            out.append(Piece(**{name: (v if v is not None else piece.frames()[name].iloc[:0])
                                for name, v in got.items()}))
    return out
