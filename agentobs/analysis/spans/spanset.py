"""SpanSet: spans, their events and links, and what was wrong with the input (three DataFrames and a DataQuality)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pandas.api.types import union_categoricals

from ..input.timespec import iso
from . import key_bound
from .graph import SpanKeys, span_keys
from .quality import DataQuality
from .schema import empty_events, empty_links, empty_spans


def as_text(col: Any) -> Any:
    """A column (Array or ChunkedArray, given back as the same) as text, the way values of several kinds become
    one: a list joined with commas, anything else cast by Arrow (booleans as ``true``/``false``, a whole double
    without its ``.0``). ``_typed`` does this for one key's values in a piece, ``unify`` for the pieces of one file,
    ``spanset`` for the frames of several files, so all three give the same text."""
    if isinstance(col, pa.ChunkedArray):
        return pa.chunked_array([as_text(c) for c in col.chunks], pa.string())
    if pa.types.is_list(col.type) or pa.types.is_large_list(col.type):
        return pc.binary_join(col, ",")
    return col.cast(pa.string())


@dataclass(frozen=True, kw_only=True)
class ReadStats:
    """What was read, and what the selection kept before the runs table was built."""
    traces: int
    kept: int                        # traces of the groups that may hold a selected run
    spans: int
    kept_spans: int
    first_start: datetime | None     # the earliest and latest span start read
    last_start: datetime | None
    unmatched: tuple[str, ...] = ()  # when nothing is selected: per option nothing meets, what the input holds

    def to_dict(self) -> dict[str, object]:
        return {"traces": self.traces, "traces_kept": self.kept, "spans": self.spans, "spans_kept": self.kept_spans,
                "first_start": iso(self.first_start) if self.first_start else None,
                "last_start": iso(self.last_start) if self.last_start else None}

    def said(self) -> str:
        """``12,004 traces read, their spans from 2026-12-04T00:00:01Z to 2026-12-05T00:10:00Z``."""
        if not self.traces:
            return "no trace read"
        span = f", their spans starting from {iso(self.first_start)} to {iso(self.last_start)}" \
            if self.first_start and self.last_start else ""
        hints = "".join(f"; {h}" for h in self.unmatched)
        return f"{self.traces:,} trace{'s' if self.traces != 1 else ''} read{span}{hints}"


@dataclass
class SpanSet:
    """Spans, their events and links, and what was wrong with the input."""
    spans: pd.DataFrame = field(default_factory=empty_spans)
    events: pd.DataFrame = field(default_factory=empty_events)
    links: pd.DataFrame = field(default_factory=empty_links)
    quality: DataQuality = field(default_factory=DataQuality)
    sources: list[str] = field(default_factory=list)
    # per source: how many rows (requests) were read in each OTLP JSON spelling ("canonical", ...)
    spellings: dict[str, dict[str, int]] = field(default_factory=dict)
    read: ReadStats | None = None        # with a selection: what was read, and what was kept (``prune``)
    _keys: tuple[pd.DataFrame, SpanKeys] | None = field(default=None, init=False, repr=False, compare=False)

    def keys(self) -> SpanKeys:
        """The span graph's keys of ``spans`` (``graph.span_keys``), computed once per spans table: the checks and
        the runs table share them. A new ``spans`` table gets new keys; one changed in place must not be reused."""
        if self._keys is None or self._keys[0] is not self.spans:
            self._keys = (self.spans, span_keys(self.spans))
        return self._keys[1]

    def known_keys(self, keys: SpanKeys) -> None:
        """Keeps ``keys``, computed by the caller for the current ``spans`` table."""
        self._keys = (self.spans, keys)

    @staticmethod
    def concat(parts: list[SpanSet]) -> SpanSet:
        parts = [p for p in parts if p is not None]
        out = SpanSet()
        if not parts:
            return out
        spans, dropped = key_bound.bounded_frames([p.spans for p in parts])
        events, dropped_events = key_bound.bounded_frames([p.events for p in parts])
        out.spans = concat_frames(spans, empty_spans)
        out.events = concat_frames(events, empty_events)
        out.links = concat_frames([p.links for p in parts], empty_links)
        for p in parts:
            out.quality.extend(p.quality)
            out.sources.extend(p.sources)
            out.spellings.update(p.spellings)
        for gone in (dropped, dropped_events):
            if gone:        # (the columns of all the sources together: counted once, under the first)
                out.quality.add("too_many_keys", out.sources[0] if out.sources else "", len(gone),
                                key_bound.example(gone))
        return out


def concat_frames(frames: list[pd.DataFrame], empty: Callable[[], pd.DataFrame]) -> pd.DataFrame:
    frames = [f for f in frames if len(f)]
    if not frames:
        return empty()
    if len(frames) == 1:
        return frames[0]
    cols: dict[str, list[Any]] = {}
    for f in frames:
        for c in f.columns:
            cols.setdefault(c, []).append(f[c].dtype)
    # the columns whose dtype differs between frames, found once (per frame and column, it made many files
    # quadratic: a folder of 2,000 small files took 84 s)
    mixed = {c: dtypes for c, dtypes in cols.items() if len({str(d) for d in dtypes}) > 1}
    fixed = []
    for f in frames:
        widen = [c for c in f.columns if c in mixed]
        if widen:
            f = f.copy(deep=False)
            for c in widen:
                f[c] = widen_column(f[c], mixed[c])
        fixed.append(f)
    out = pd.concat(fixed, ignore_index=True, sort=False)
    if all("source" in f.columns and isinstance(f["source"].dtype, pd.CategoricalDtype) for f in fixed):
        # each file's frame has its own categories, which concat would turn into object: the union keeps them
        out["source"] = union_categoricals([f["source"] for f in fixed])
    return out


def widen_column(s: pd.Series, dtypes: list[Any]) -> pd.Series:
    """A column of several dtypes across frames, as one: numbers as Float64, anything else as text written as
    the loader writes it for one file (``as_text``), so that a key's values read the same whether
    its spans came in one file or in several."""
    kinds = {str(d) for d in dtypes}
    if kinds <= {"Int64", "Float64", "int64", "float64"}:
        return s.astype("Float64")
    if isinstance(s.dtype, pd.CategoricalDtype) or s.dtype == object:
        return s.astype("string")
    text = as_text(pa.array(s.array, from_pandas=True))
    return pd.Series(pd.StringDtype("pyarrow").__from_arrow__(text), index=s.index, name=s.name)
