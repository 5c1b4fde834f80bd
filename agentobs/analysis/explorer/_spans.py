"""One run's spans as the explorer's waterfall.

``waterfalls(spans, events, strings)`` gives, per run of ``spans`` (a report's spans frame, or the rows of some of
its runs), its spans in tree order (parents before children, siblings by start), each as one row:

    [depth, parent (position in the run, -1), name, role, start offset µs, duration µs, status (0 unset, 1 ok,
     2 error), error, input tokens, output tokens, cost USD, attributes [key, value, ...], events]

where texts are codes into ``strings`` and an event is ``[name, offset µs, [key, value, ...]]``. The role is the
analysis's ``_kind`` (agent, step, chat, tool, chain, other); tokens and cost are read by the span dialects
(``dialects.normalize``), a model call without a recorded cost priced as the runs table prices it. Attributes
are every attribute the span carries, through the redaction rules as the report shows text (``text.safe``); a
value under a sensitive key (``password``, ``authorization``, ``AGENTOBS_REDACT_KEYS``, ...) is shown as the mask,
whole. Offsets count from the run's first span.
"""
from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ...contract.redaction import REDACTED, Redactor
from ..spans.dialects import CHAT, normalize
from ..spans.graph import span_keys
from .text import Strings

# span columns that are not attributes (shown in the row itself, or the analysis's own)
_NOT_ATTRIBUTES = {"trace_id", "parent_span_id", "name", "start_ns", "end_ns", "status_code", "source", "run_id"}
_RENAMED = {"service_name": "service.name", "status_message": "status.message", "kind": "span.kind",
            "span_id": "span.id"}
_SPAN_KINDS = {0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
_IDS = {"span_id"}                     # written by the loader (hex): not masked


@dataclass(kw_only=True)
class Waterfall:
    run_id: str
    trace_id: str
    t0_ns: int
    total_us: int
    rows: list[list[Any]]
    position: dict[tuple[str, str], int] = field(default_factory=dict)   # (trace id, span id) -> row

    def to_dict(self, evidence: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
        return {"t0_ms": self.t0_ns / 1e6, "total_us": self.total_us, "spans": self.rows, "evidence": evidence or {}}


def waterfalls(spans: pd.DataFrame, events: pd.DataFrame, strings: Strings,
               redactor: Redactor | None = None) -> dict[str, Waterfall]:
    """The waterfall of every run in ``spans`` (rows without a run are left out)."""
    s = spans[spans["run_id"].notna()].reset_index(drop=True) if len(spans) else spans
    if s.empty:
        return {}
    redactor = redactor or Redactor()
    run_codes, run_ids = pd.factorize(s["run_id"].astype(str))
    start = s["start_ns"].to_numpy(dtype=np.int64, na_value=0)
    end = s["end_ns"].to_numpy(dtype=np.int64, na_value=0)
    end = np.maximum(end, start)
    parent = span_keys(s).parent
    parent = np.where((parent >= 0) & (run_codes[np.maximum(parent, 0)] == run_codes), parent, -1)
    tokens_in, tokens_out, cost, error_text = _usage(s)
    error = strings.codes(error_text)
    kinds = strings.codes(s["_kind"].astype(object).to_numpy()) if "_kind" in s else np.full(len(s), -1, np.int32)
    names = strings.codes(s["name"].to_numpy(dtype=object, na_value=None))
    attrs = _attributes(s, strings, redactor)
    evs = _events(s, events, strings, redactor)
    trace_ids = s["trace_id"].astype(str).to_numpy()
    span_ids = s["span_id"].astype(str).to_numpy()
    status = s["status_code"].to_numpy(dtype=np.int64, na_value=0)
    out: dict[str, Waterfall] = {}
    for r, rows in _runs(run_codes, start, end, parent):
        t0 = int(start[rows].min())
        rows_and_depths = list(_tree(rows, parent, start, end))
        pos = {row: i for i, (row, _) in enumerate(rows_and_depths)}
        table = []
        for row, depth in rows_and_depths:
            p = int(parent[row])
            table.append([depth, pos.get(p, -1), int(names[row]), int(kinds[row]), (int(start[row]) - t0) // 1000,
                          (int(end[row]) - int(start[row])) // 1000, int(status[row]), int(error[row]),
                          _num(tokens_in[row]), _num(tokens_out[row]), _num(cost[row]), attrs[row],
                          [[e[0], (e[1] - t0) // 1000, e[2]] for e in evs.get(row, ())]])
        first = rows_and_depths[0][0]
        out[str(run_ids[r])] = Waterfall(
            run_id=str(run_ids[r]), trace_id=trace_ids[first], t0_ns=t0,
            total_us=(int(end[rows].max()) - t0) // 1000, rows=table,
            position={(trace_ids[row], span_ids[row]): i for row, i in pos.items()})
    return out


def _num(v: float) -> float | int | None:
    if np.isnan(v):
        return None
    return int(v) if float(v).is_integer() and abs(v) < 2**53 else float(v)


def _runs(run_codes: np.ndarray, start: np.ndarray, end: np.ndarray,
          parent: np.ndarray) -> Iterable[tuple[int, np.ndarray]]:
    order = np.argsort(run_codes, kind="stable")
    bounds = np.flatnonzero(np.diff(run_codes[order])) + 1
    for rows in np.split(order, bounds):
        if len(rows):
            yield int(run_codes[rows[0]]), rows


def _tree(rows: np.ndarray, parent: np.ndarray, start: np.ndarray, end: np.ndarray) -> Iterable[tuple[int, int]]:
    """(row, depth) of a run's spans in tree order: each span before its children, siblings by start (the longer
    first), spans on a parent cycle (no root above them) last, at depth 0."""
    by_start = rows[np.lexsort((-(end[rows] - start[rows]), start[rows]))]
    children: dict[int, list[int]] = defaultdict(list)
    roots: list[int] = []
    for row in by_start.tolist():
        p = int(parent[row])
        (roots if p < 0 else children[p]).append(row)
    seen: set[int] = set()
    stack = [(row, 0) for row in reversed(roots)]
    while stack:
        row, depth = stack.pop()
        if row in seen:
            continue
        seen.add(row)
        yield row, depth
        stack.extend((c, depth + 1) for c in reversed(children.get(row, ())))
    for row in by_start.tolist():
        if row not in seen:
            seen.add(row)
            yield row, 0


def _usage(s: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Input and output tokens, cost (recorded, else priced for model calls) and error type or message of each
    span."""
    norm = normalize(s)
    f = norm.fields
    cost = np.asarray(f["cost"], dtype=np.float64).copy()
    chat = norm.kind == CHAT
    tin = np.asarray(f["input_tokens"], dtype=np.float64)
    missing = chat & np.isnan(cost) & pd.notna(f["model"]) & ~np.isnan(tin)
    if missing.any():
        from ..derive.pricing import price_calls
        cost[missing] = price_calls(f["model"][missing], f["provider"][missing], tin[missing],
                                    output_tokens=np.nan_to_num(np.asarray(f["output_tokens"],
                                                                           dtype=np.float64)[missing]),
                                    cache_read_tokens=f["cache_read_tokens"][missing],
                                    cache_creation_tokens=f["cache_creation_tokens"][missing],
                                    at_ns=s["start_ns"].to_numpy(dtype=np.float64, na_value=np.nan)[missing])
    failed = s["status_code"].to_numpy(dtype=np.int64, na_value=0) == 2
    message = s["status_message"] if "status_message" in s else pd.Series(pd.NA, index=s.index)
    etype = pd.Series(f["error_type"], index=s.index, dtype=object)
    what = etype.where(etype.notna(), message.astype(object)).where(failed | etype.notna())
    what = what.where(what.notna() | ~failed, "error")
    return tin, np.asarray(f["output_tokens"], dtype=np.float64), cost, what.to_numpy(dtype=object)


def _attributes(s: pd.DataFrame, strings: Strings, redactor: Redactor) -> list[list[int]]:
    """Per row: [key code, value code, ...] of every attribute it carries, in column order."""
    rows_of, keys_of, values_of = [], [], []
    for col in s.columns:
        if col in _NOT_ATTRIBUTES or col.startswith("_"):
            continue
        key = _RENAMED.get(col, col)
        values = s[col]
        rows = np.flatnonzero(_present(values))
        if not len(rows):
            continue
        if redactor.sensitive_key(key):
            vcodes = np.full(len(rows), strings.text_code(REDACTED), dtype=np.int32)
        elif col == "kind":
            vcodes = strings.codes(values.iloc[rows].map(lambda k: _SPAN_KINDS.get(int(k), str(k))), mask=False)
        else:
            text, masked = _as_text(values.iloc[rows])
            vcodes = strings.codes(text, mask=masked and col not in _IDS)
        rows_of.append(rows)
        keys_of.append(np.full(len(rows), strings.code(key), dtype=np.int32))
        values_of.append(vcodes)
    if not rows_of:
        return [[] for _ in range(len(s))]
    rows = np.concatenate(rows_of)
    order = np.argsort(rows, kind="stable")                      # by row, columns in order within a row
    pairs = np.column_stack([np.concatenate(keys_of)[order], np.concatenate(values_of)[order]]).ravel()
    bounds = np.searchsorted(rows[order], np.arange(len(s) + 1)) * 2
    flat = pairs.tolist()
    return [flat[a:b] for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)]


def _present(values: pd.Series) -> np.ndarray:
    return values.notna().to_numpy(dtype=bool)


def _as_text(values: pd.Series) -> tuple[np.ndarray, bool]:
    """Present values as the page shows them, and whether they are text to mask: text as is; numbers as written
    and booleans in lower case (the redaction rules leave them alone, as telemetry does); lists as JSON."""
    types = pd.api.types
    if types.is_bool_dtype(values):
        return values.map({True: "true", False: "false"}).to_numpy(dtype=object), False
    if types.is_integer_dtype(values):
        return values.astype("Int64").astype(str).to_numpy(dtype=object), False
    if types.is_float_dtype(values):
        return np.array([_number(v) for v in values.to_numpy(dtype=np.float64)], dtype=object), False
    seen: dict[Any, str] = {}
    return np.array([v if isinstance(v, str) else _json(v, seen) for v in values.to_numpy(dtype=object)],
                    dtype=object), True


def _number(v: float) -> str:
    return str(int(v)) if v.is_integer() and abs(v) < 1e15 else repr(v)


def _json(v: Any, seen: dict[Any, str]) -> str:
    """A list as JSON (each distinct list written once: most repeat, finish reasons, say); anything else as text."""
    if isinstance(v, (list, tuple, np.ndarray)):
        items = tuple(x.item() if isinstance(x, np.generic) else x for x in v)
        try:
            got = seen.get(items)
        except TypeError:                      # an item that cannot be a key (a nested list)
            return json.dumps(items, default=str, ensure_ascii=False)
        if got is None:
            got = seen[items] = json.dumps(items, default=str, ensure_ascii=False)
        return got
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    return str(v)


def _events(s: pd.DataFrame, events: pd.DataFrame, strings: Strings,
            redactor: Redactor) -> dict[int, list[tuple[int, int, list[int]]]]:
    """Per span row: (name code, time ns, [key, value, ...]) of its events, in time order."""
    if events is None or events.empty:
        return {}
    keys = pd.DataFrame({"trace_id": s["trace_id"].astype(str), "span_id": s["span_id"].astype(str),
                         "_row": np.arange(len(s))})
    ev = events.assign(trace_id=events["trace_id"].astype(str), span_id=events["span_id"].astype(str)).merge(
        keys, on=["trace_id", "span_id"])
    if ev.empty:
        return {}
    ev = ev.sort_values(["_row", "time_ns"], kind="stable").reset_index(drop=True)
    names = strings.codes(ev["name"].to_numpy(dtype=object, na_value=None))
    attrs = _attributes(ev.drop(columns=[c for c in ("trace_id", "span_id", "name", "time_ns") if c in ev]),
                        strings, redactor)
    times = ev["time_ns"].to_numpy(dtype=np.int64, na_value=0)
    out: dict[int, list[tuple[int, int, list[int]]]] = defaultdict(list)
    for i, row in enumerate(ev["_row"].tolist()):
        out[row].append((int(names[i]), int(times[i]), attrs[i]))
    return out
