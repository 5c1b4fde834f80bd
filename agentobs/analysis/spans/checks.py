"""The span checks: what every source's spans go through once loaded (OTLP files, the other trace formats, Jaeger
answers, transcripts; the Dask engine's partitions too), whichever reader made them.

Vectorized: duplicates dropped, parent cycles broken at an agent span or dropped, negative durations and negative
counts made unusable, orphans and rootless traces counted, each in the span set's ``DataQuality``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .dialects import AGENT, normalize
from .graph import cycle_of, in_cycle, span_keys
from .quality import DataQuality
from .spanset import SpanSet


@dataclass(frozen=True, kw_only=True)
class Cut:
    """A span ``check`` made a root to break a parent cycle (``bad_value``)."""
    row: int                         # in the spans ``check`` returns
    source: str
    example: str


@dataclass(frozen=True, kw_only=True)
class Negatives:
    """The spans whose value of one count column ``check`` dropped as negative (``bad_value``)."""
    column: str
    rows: np.ndarray                 # in the spans ``check`` returns
    example: str                     # the first such value (the example of every source)


@dataclass(kw_only=True)
class Flagged:
    """The ``bad_value`` findings ``check`` makes span by span, as rows of the spans it returns (so that the Dask
    engine can count them in the order of the whole input): parent cycles broken, then negative counts column by
    column, in the order it makes them."""
    cut: list[Cut] = field(default_factory=list)
    negatives: list[Negatives] = field(default_factory=list)


def check(spanset: SpanSet, flagged: Flagged | None = None) -> SpanSet:
    """Vectorized structural checks: duplicates dropped, parent cycles broken at an agent span or dropped, negative
    durations, orphans and rootless traces counted.

    A parent cycle through an agent span (a run's root whose parent id names a span under it) is broken there: the
    agent span that started first on the cycle loses its parent reference (``bad_value``) and becomes a root, so
    its run is kept. The spans of the other cycles, and those under them, are dropped (``parent_cycle``).
    ``flagged``, when given, is filled with the spans made a root so and the negative counts dropped."""
    df, q = spanset.spans, spanset.quality
    if df.empty:
        return spanset
    bad = (df["trace_id"].isna() | df["span_id"].isna() | df["start_ns"].isna() | df["end_ns"].isna()).to_numpy()
    if bad.any():                         # the fast path lets a null id through; such a span is unusable
        for s_, n in df.loc[bad, "source"].astype(str).value_counts().items():
            q.add("bad_span", s_, int(n))
        df = spanset.spans = df.loc[~bad].reset_index(drop=True)
        if df.empty:
            return spanset
    src = df["source"].astype(str).to_numpy()

    def count(kind: str, mask: np.ndarray) -> None:
        if mask.any():
            for s_, n in pd.Series(src[mask]).value_counts().items():
                q.add(kind, str(s_), int(n))

    keys = spanset.keys()                 # df is spanset.spans here
    dup = pd.Series(keys.key).duplicated(keep="first").to_numpy()
    if dup.any():
        count("duplicate_span", dup)
        df = df.loc[~dup].reset_index(drop=True)
        src = src[~dup]
        keys = span_keys(df)
        # the copies' events and links go with them (an event is its span, name and time)
        ev = spanset.events
        if len(ev):
            spanset.events = ev.drop_duplicates(["trace_id", "span_id", "name", "time_ns"]).reset_index(drop=True)
        if len(spanset.links):
            spanset.links = spanset.links.drop_duplicates().reset_index(drop=True)
    cyclic = in_cycle(keys.parent)
    broken, why = np.zeros(len(df), dtype=bool), np.full(len(df), None, dtype=object)
    if cyclic.any():
        broken, why = _break_cycles(df, keys.parent)
        if broken.any():
            df = df.copy()
            df.loc[broken, "parent_span_id"] = pd.NA
            keys = span_keys(df)
            cyclic = in_cycle(keys.parent)
    if cyclic.any():
        count("parent_cycle", cyclic)
        df = df.loc[~cyclic].reset_index(drop=True)
        src, broken, why = src[~cyclic], broken[~cyclic], why[~cyclic]
        keys = span_keys(df)
    if broken.any():
        for s_, n in pd.Series(src[broken]).value_counts().items():
            q.add("bad_value", str(s_), int(n), example=str(why[broken & (src == s_)][0]))
        if flagged is not None:
            flagged.cut += [Cut(row=int(i), source=str(src[i]), example=str(why[i])) for i in np.flatnonzero(broken)]
    if df.empty:                          # every span was on or under a parent cycle
        spanset.spans = df
        spanset.known_keys(keys)
        return spanset
    _counts_not_negative(df, src, q, flagged)
    # the integers compared (no null is left): as float64, times of today step by 256 ns, and a span ending a few
    # nanoseconds before it starts would compare equal
    count("negative_duration", (df["end_ns"] < df["start_ns"]).to_numpy(dtype=bool))
    count("orphan_span", ~keys.true_root & (keys.parent < 0))
    rooted = np.zeros(int(keys.trace.max()) + 1, dtype=bool)
    rooted[keys.trace[keys.true_root]] = True
    rootless = ~rooted[keys.trace]
    if rootless.any():
        per = pd.DataFrame({"s": src[rootless], "t": keys.trace[rootless]}).drop_duplicates()
        for s_, n in per["s"].value_counts().items():
            q.add("missing_root", str(s_), int(n))
    spanset.spans = df
    spanset.known_keys(keys)
    return spanset


def _break_cycles(df: pd.DataFrame, parent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mask of the spans whose parent reference breaks a cycle, and what to say of each): on each cycle, the agent
    span that started first (then the first in the input); a span that is its own parent is a root whatever it
    is. A cycle without an agent span is left as it is (its spans are dropped)."""
    n = len(df)
    broken, why = np.zeros(n, dtype=bool), np.full(n, None, dtype=object)
    label = cycle_of(parent)
    rows = np.flatnonzero(label >= 0)
    if not len(rows):
        return broken, why
    agent = normalize(df.iloc[rows].reset_index(drop=True)).kind == AGENT
    itself = parent[rows] == rows
    size = np.bincount(label[rows], minlength=n)
    on = pd.DataFrame({"cycle": label[rows], "start": df["start_ns"].astype("float64").to_numpy()[rows],
                       "row": rows})[agent | itself]
    pick = on.sort_values(["cycle", "start", "row"], kind="stable").drop_duplicates("cycle")["row"].to_numpy()
    broken[pick] = True
    sid = df["span_id"].astype(object).to_numpy()
    tid = df["trace_id"].astype(object).to_numpy()
    for i in pick.tolist():
        what = "its own id" if parent[i] == i else f"a span under it (a cycle of {int(size[label[i]])} spans)"
        why[i] = f"parentSpanId of span {sid[i]} (trace {tid[i]}) names {what}: dropped, the span taken as a root"
    return broken, why


# numeric attributes that count, cost or time something: a negative value is unusable (dropped, counted)
COUNTS = re.compile(r"(^|[._])(tokens?|token_count|usage|cost|cost_usd|steps|tool_calls|calls|attempts|elapsed"
                     r"|elapsed_s)($|[._])")


def _counts_not_negative(df: pd.DataFrame, src: np.ndarray, q: DataQuality, flagged: Flagged | None) -> None:
    for col in df.columns:
        if "." not in col or not COUNTS.search(col) or not pd.api.types.is_numeric_dtype(df[col].dtype):
            continue
        neg = (df[col] < 0).fillna(False).to_numpy(dtype=bool)
        if neg.any():
            example = f"{col}: {df[col][neg].iloc[0]} is negative"
            for s_, n in pd.Series(src[neg]).value_counts().items():
                q.add("bad_value", str(s_), int(n), example=example)
            if flagged is not None:
                flagged.negatives.append(Negatives(column=col, rows=np.flatnonzero(neg), example=example))
            df.loc[neg, col] = pd.NA


__all__ = ["COUNTS", "Cut", "Flagged", "Negatives", "check"]
