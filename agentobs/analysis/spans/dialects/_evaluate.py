"""A dialect table evaluated over a span frame: the role it gives each span, and the values it reads.

Everything stays in Arrow and numpy (no Python object per span): a condition is a few compute kernels over one
column, a field the coalesce of its sources.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ._fields import code_of, json_numbers, lower, num, prefer, text
from ._table import NAME, Dialect, SpanName, When

Fields = dict[str, Any]


def holds(spans: pd.DataFrame, when: When, lowered: dict[str, pa.Array] | None = None) -> np.ndarray:
    """Where the condition holds, per span (``lowered``: the lower-cased texts already read, by key)."""
    key = "name" if when.key == NAME else when.key
    values = text(spans, (key,))
    valid = values.is_valid().to_numpy(zero_copy_only=False)
    if not when.present:
        return ~valid
    if not (when.equals or when.prefix or when.contains):
        return valid
    if lowered is None:
        v = lower(values)
    elif key in lowered:
        v = lowered[key]
    else:
        v = lowered[key] = lower(values)
    out = np.zeros(len(spans), dtype=bool)
    for e in when.equals:
        out |= _bool(pc.equal(v, e.lower()))
    for p in when.prefix:
        out |= _bool(pc.starts_with(v, p.lower()))
    for c in when.contains:
        out |= _bool(pc.match_substring(v, c.lower()))
    return out & valid


def _bool(arr: pa.Array) -> np.ndarray:
    return pc.fill_null(arr, False).to_numpy(zero_copy_only=False)


UNNAMED = -2          # a claim: the dialect's marker is on the span, with a value that names no role


def claim(d: Dialect, spans: pd.DataFrame) -> np.ndarray | None:
    """The role this dialect gives each span: a role, ``UNNAMED`` where its marker's value names none (the span is
    the dialect's own, with no role counted here), -1 where it says nothing; None when it claims no span."""
    n = len(spans)
    if d.marker is not None and d.marker in spans.columns and spans[d.marker].notna().any():
        out = code_of(text(spans, (d.marker,)), dict(d.roles), UNNAMED)
    else:
        out = np.full(n, -1, dtype=np.int8)
        if not d.rules:
            return None
    lowered: dict[str, pa.Array] = {}
    for rule in d.rules:
        target = out == rule.of_role if rule.of_role is not None else out < 0
        if not target.any():
            continue
        sel = target.copy()
        for w in rule.when:
            sel &= holds(spans, w, lowered)
            if not sel.any():
                break
        out[sel] = rule.role
    return out if ((out >= 0) | (out == UNNAMED)).any() else None


def fields(d: Dialect, spans: pd.DataFrame, kind: np.ndarray) -> Fields:
    """The values this dialect keeps, read on ``spans`` (whose roles are ``kind``): text as Arrow string arrays,
    numbers as float64, ``error_flag`` as bool."""
    out: Fields = {}
    for f, sources in d.text.items():
        got = pa.nulls(len(spans), pa.string())
        for s in sources:
            got = pc.coalesce(got, _source(spans, s, kind))
        out[f] = pc.utf8_trim(pc.utf8_trim_whitespace(got), '"') if d.quoted else got
    for f, keys in d.numbers.items():
        out[f] = num(spans, keys)
    for key, paths in d.usage_json.items():
        for f, v in json_numbers(text(spans, (key,)), paths).items():
            out[f] = prefer(out[f], v) if f in out else v
    if d.error:
        flag = np.zeros(len(spans), dtype=bool)
        for w in d.error:
            flag |= holds(spans, w)
        out["error_flag"] = flag
    return out


def _source(spans: pd.DataFrame, s: str | SpanName, kind: np.ndarray) -> pa.Array:
    if isinstance(s, str):
        return text(spans, (s,))
    names = text(spans, ("name",))
    keep = np.ones(len(spans), dtype=bool) if not s.roles else np.isin(kind, s.roles)
    if s.after:
        keep &= _bool(pc.starts_with(names, s.after))
        names = pc.utf8_slice_codeunits(names, len(s.after))
    if s.strip:
        ended = np.zeros(len(spans), dtype=bool)
        for suffix in s.strip:
            ends = pc.fill_null(pc.ends_with(names, suffix), False)
            ended |= _bool(ends)
            names = pc.if_else(ends, pc.utf8_slice_codeunits(names, 0, -len(suffix)), names)
        keep &= ended
    return pc.if_else(pa.array(keep), names, pa.scalar(None, pa.string()))
