"""The runs table of the explorer: the report's runs as columns of string codes and numbers, its facets (the
values a filter offers, with counts), and the filter and sort orders that the served explorer applies (the page
applies the same ones in the browser, ``templates/explorer.js``).

A text cell is the index of its safe text in the page's ``Strings``; filtering by a value is filtering by that
index, so two values shown alike (two secrets masked to the same mark) are one value here as on the page.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .text import Strings

# shown by default, in this order; the other columns of the runs table follow, hidden (the column chooser shows them)
VISIBLE = ("run_id", "start", "signature", "stop_reason", "label", "agent", "model", "steps", "tool_calls", "tokens",
           "cost_usd", "active_s", "errors")
FACETS = ("signature", "stop_reason", "label", "status", "agent", "model", "service")
ID_COLUMNS = ("run_id", "trace_id", "task_id", "conversation_id")     # searched by id prefix
UNMASKED = ("trace_id", "trace_ids")           # written by the loader (hex): not masked, as in the runs CSV
LABELS = {True: "successful", False: "failed"}
UNLABELLED = "unlabelled"
_DROPPED = ("success",)                                              # shown as ``label``


@dataclass(frozen=True, kw_only=True)
class RunColumn:
    name: str
    kind: str                 # "text" (int32 codes), "num" (float64, NaN: none), "bool" (int8, -1: none),
    data: Any                 # "time" (float64 ms since the epoch, UTC), "list" (object array of int32 code arrays)
    visible: bool = False
    integral: bool = False    # a "num" column of whole numbers (written without a fraction)


@dataclass(frozen=True, kw_only=True)
class Facet:
    column: str               # a text column, or "signature" (matched against the ``signatures`` lists)
    options: tuple[tuple[int, int], ...]     # (code, runs), most runs first


@dataclass(kw_only=True)
class RunsTable:
    strings: Strings
    columns: dict[str, RunColumn]
    facets: tuple[Facet, ...]
    n: int
    _rank: np.ndarray | None = field(default=None, repr=False)
    _flat: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False)

    def rank(self) -> np.ndarray:
        """Each string code's place in text order (for sorting text columns), computed once."""
        if self._rank is None or len(self._rank) != len(self.strings.values) + 1:
            order = np.argsort(np.array(self.strings.values, dtype=object), kind="stable")
            rank = np.empty(len(order) + 1, dtype=np.int64)
            rank[order] = np.arange(len(order))
            rank[-1] = len(order)                     # code -1 (none) sorts last
            self._rank = rank
        return self._rank

    def flat(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """A list column as (every code, the row it belongs to), computed once."""
        got = self._flat.get(name)
        if got is None:
            lists = self.columns[name].data
            sizes = np.fromiter((len(xs) for xs in lists), dtype=np.int64, count=len(lists))
            codes = np.concatenate([*lists, np.empty(0, np.int32)]).astype(np.int64)
            got = self._flat[name] = (codes, np.repeat(np.arange(len(lists)), sizes))
        return got

    def rows_with(self, name: str, hit: np.ndarray) -> np.ndarray:
        """Rows whose list column ``name`` holds a code for which ``hit`` (indexed by code, -1 last) is true."""
        codes, owner = self.flat(name)
        out = np.zeros(self.n, dtype=bool)
        out[owner[hit[codes]]] = True
        return out


@dataclass(frozen=True, kw_only=True)
class RunFilter:
    """What the runs table is narrowed to: facet values (codes), a start-time range and an id prefix."""
    equals: Mapping[str, int] = field(default_factory=dict)
    start_from_ms: float | None = None          # inclusive
    start_to_ms: float | None = None            # exclusive
    id_prefix: str = ""                          # of a run, trace, task or conversation id; any case


def runs_table(runs: pd.DataFrame, strings: Strings, extra: Mapping[str, pd.Series] | None = None) -> RunsTable:
    """The table of ``runs`` (a report's), with ``extra`` text columns (segments read from root spans)."""
    df = runs.drop(columns=[c for c in _DROPPED if c in runs.columns])
    df.insert(min(len(df.columns), 1), "label", _labels(runs))
    for name, values in (extra or {}).items():
        if name not in df.columns:
            df[name] = values.reindex(runs["run_id"]).to_numpy() if isinstance(values, pd.Series) else values
    order = [c for c in VISIBLE if c in df.columns] + [c for c in df.columns if c not in VISIBLE]
    columns = {c: _column(c, df[c], strings) for c in order}
    facets = tuple(f for f in (_facet(c, columns, strings) for c in (*FACETS, *(extra or {}))) if f is not None)
    return RunsTable(strings=strings, columns=columns, facets=facets, n=len(df))


def _labels(runs: pd.DataFrame) -> pd.Series:
    s = runs["success"] if "success" in runs.columns else pd.Series(pd.NA, index=runs.index, dtype="boolean")
    return s.astype(object).map(lambda v: LABELS.get(v, UNLABELLED) if v is not pd.NA else UNLABELLED)


def _column(name: str, s: pd.Series, strings: Strings) -> RunColumn:
    visible = name in VISIBLE
    types = pd.api.types
    if types.is_bool_dtype(s):
        data = s.astype("Int8").to_numpy(dtype=np.int8, na_value=-1)
        return RunColumn(name=name, kind="bool", data=data, visible=visible)
    if types.is_datetime64_any_dtype(s):
        return RunColumn(name=name, kind="time", data=_epoch_ms(s), visible=visible)
    if types.is_numeric_dtype(s):
        return RunColumn(name=name, kind="num", data=s.astype("Float64").to_numpy(dtype=np.float64, na_value=np.nan),
                         visible=visible, integral=types.is_integer_dtype(s))
    ids = name in UNMASKED
    if s.dtype == object and s.map(lambda v: isinstance(v, (list, tuple, np.ndarray))).any():
        items = [list(v) if isinstance(v, (list, tuple, np.ndarray)) else [] for v in s.to_numpy()]
        sizes = np.fromiter((len(v) for v in items), dtype=np.int64, count=len(items))
        flat = strings.codes([x for v in items for x in v], mask=not ids)
        lists = np.empty(len(items), dtype=object)
        lists[:] = np.split(flat, np.cumsum(sizes)[:-1]) if len(items) else []
        return RunColumn(name=name, kind="list", data=lists, visible=visible)
    return RunColumn(name=name, kind="text", data=strings.codes(s.to_numpy(dtype=object, na_value=None), mask=not ids),
                     visible=visible)


def _epoch_ms(s: pd.Series) -> np.ndarray:
    utc = pd.to_datetime(s, utc=True)
    v = utc.dt.tz_localize(None).to_numpy(dtype="datetime64[ns]")
    out = v.astype(np.int64).astype(np.float64) / 1e6
    out[np.isnat(v)] = np.nan
    return out


def _facet(name: str, columns: Mapping[str, RunColumn], strings: Strings) -> Facet | None:
    if name == "signature" and "signatures" in columns and columns["signatures"].kind == "list":
        flat = np.concatenate([*columns["signatures"].data, np.empty(0, np.int32)])
    elif name in columns and columns[name].kind == "text":
        flat = columns[name].data
    else:
        return None
    codes, counts = np.unique(flat[flat >= 0], return_counts=True)
    order = sorted(zip(codes.tolist(), counts.tolist(), strict=True), key=lambda cc: (-cc[1], strings.values[cc[0]]))
    return Facet(column=name, options=tuple(order))


# -- what the served explorer does with it ----------------------------------------------------------------

def select(t: RunsTable, f: RunFilter) -> np.ndarray:
    """The rows (in table order) that pass ``f``."""
    keep = np.ones(t.n, dtype=bool)
    for name, code in f.equals.items():
        if name == "signature" and "signatures" in t.columns:
            hit = np.zeros(len(t.strings.values) + 1, dtype=bool)
            if 0 <= code < len(t.strings.values):
                hit[code] = True
            keep &= t.rows_with("signatures", hit)
        elif name in t.columns and t.columns[name].kind == "text":
            keep &= t.columns[name].data == code
        else:
            keep[:] = False
    if (f.start_from_ms is not None or f.start_to_ms is not None) and "start" in t.columns:
        start = t.columns["start"].data
        with np.errstate(invalid="ignore"):
            if f.start_from_ms is not None:
                keep &= start >= f.start_from_ms
            if f.start_to_ms is not None:
                keep &= start < f.start_to_ms
    if f.id_prefix:
        keep &= _id_match(t, f.id_prefix)
    return np.flatnonzero(keep)


def _id_match(t: RunsTable, prefix: str) -> np.ndarray:
    texts = pd.Series(t.strings.values, dtype=object).str.lower()
    hit = np.append(texts.str.startswith(prefix.strip().lower()).to_numpy(dtype=bool), False)   # code -1: no match
    out = np.zeros(t.n, dtype=bool)
    for name in ID_COLUMNS:
        if name in t.columns:
            out |= hit[t.columns[name].data]
    if "trace_ids" in t.columns and t.columns["trace_ids"].kind == "list":
        out |= t.rows_with("trace_ids", hit)
    return out


def order(t: RunsTable, rows: np.ndarray, column: str | None, descending: bool) -> np.ndarray:
    """``rows`` sorted by ``column`` (missing values last, either way), ties in table order."""
    col = t.columns.get(column or "")
    if col is None or len(rows) == 0:
        return rows
    if col.kind == "text":
        key = t.rank()[col.data[rows]].astype(np.float64)
        missing = col.data[rows] < 0
    elif col.kind == "list":
        firsts = np.array([xs[0] if len(xs) else -1 for xs in col.data[rows]], dtype=np.int64)
        key, missing = t.rank()[firsts].astype(np.float64), firsts < 0
    else:
        key = col.data[rows].astype(np.float64)
        missing = np.isnan(key) if col.kind != "bool" else key < 0
    key = np.where(missing, 0.0, -key if descending else key)
    return rows[np.lexsort((np.arange(len(rows)), key, missing))]


def page_rows(t: RunsTable, rows: np.ndarray) -> dict[str, list[Any]]:
    """The cells of ``rows``, decoded (texts, numbers, lists of texts): one page of the served runs table."""
    values = t.strings.values
    out: dict[str, list[Any]] = {"_row": rows.tolist()}
    for name, col in t.columns.items():
        cells = col.data[rows]
        if col.kind == "text":
            out[name] = [values[c] if c >= 0 else None for c in cells.tolist()]
        elif col.kind == "list":
            out[name] = [[values[c] for c in xs.tolist()] for xs in cells]
        elif col.kind == "bool":
            out[name] = [None if v < 0 else bool(v) for v in cells.tolist()]
        else:
            out[name] = _numbers(col, cells)
    return out


def _numbers(col: RunColumn, cells: np.ndarray) -> list[float | int | None]:
    if col.integral:
        return [None if np.isnan(v) else int(v) for v in cells.tolist()]
    return [None if np.isnan(v) else v for v in cells.tolist()]


def encoded(t: RunsTable) -> dict[str, Any]:
    """The whole table for a page: per column its kind, visibility and cells (codes into the page's strings)."""
    cols = []
    for name, col in t.columns.items():
        if col.kind == "list":
            cells: Any = [xs.tolist() for xs in col.data]
        elif col.kind == "bool":
            cells = [None if v < 0 else v for v in col.data.tolist()]
        elif col.kind == "text":
            cells = col.data.tolist()
        else:
            cells = _numbers(col, col.data)
        cols.append({"name": name, "kind": col.kind, "visible": col.visible, "cells": cells})
    return {"n": t.n, "columns": cols}


def schema(t: RunsTable) -> dict[str, Any]:
    """The columns (without cells) and facets: what a page of the served explorer needs to build its table."""
    return {"n": t.n, "columns": [{"name": n, "kind": c.kind, "visible": c.visible} for n, c in t.columns.items()],
            "facets": [{"column": f.column, "options": [list(o) for o in f.options]} for f in t.facets]}
