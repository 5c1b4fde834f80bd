"""SpanSet: spans, their events and links, and what was wrong with the input (three DataFrames and a DataQuality)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa
from pandas.api.types import union_categoricals

from ._otlp_arrow import as_text
from .graph import SpanKeys, span_keys
from .quality import DataQuality
from .schema import empty_events, empty_links, empty_spans

if TYPE_CHECKING:
    from .prune import ReadStats


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
        out.spans = _concat([p.spans for p in parts], empty_spans)
        out.events = _concat([p.events for p in parts], empty_events)
        out.links = _concat([p.links for p in parts], empty_links)
        for p in parts:
            out.quality.extend(p.quality)
            out.sources.extend(p.sources)
            out.spellings.update(p.spellings)
        return out


def _concat(frames: list[pd.DataFrame], empty: Callable[[], pd.DataFrame]) -> pd.DataFrame:
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
                f[c] = _widen(f[c], mixed[c])
        fixed.append(f)
    out = pd.concat(fixed, ignore_index=True, sort=False)
    if all("source" in f.columns and isinstance(f["source"].dtype, pd.CategoricalDtype) for f in fixed):
        # each file's frame has its own categories, which concat would turn into object: the union keeps them
        out["source"] = union_categoricals([f["source"] for f in fixed])
    return out


def _widen(s: pd.Series, dtypes: list[Any]) -> pd.Series:
    """A column of several dtypes across frames, as one: numbers as Float64, anything else as text written as
    the loader writes it for one file (``_otlp_arrow.as_text``), so that a key's values read the same whether
    its spans came in one file or in several."""
    kinds = {str(d) for d in dtypes}
    if kinds <= {"Int64", "Float64", "int64", "float64"}:
        return s.astype("Float64")
    if isinstance(s.dtype, pd.CategoricalDtype) or s.dtype == object:
        return s.astype("string")
    text = as_text(pa.array(s.array, from_pandas=True))
    return pd.Series(pd.StringDtype("pyarrow").__from_arrow__(text), index=s.index, name=s.name)
