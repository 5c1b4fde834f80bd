"""Logical calls: one model or tool call however many spans report it, with its attempts.

Instrumentations and frameworks nest spans of the same role: a framework's step, its LLM wrapper and the client
call each carry an LLM kind; an instrumentation's TOOL span wraps the framework's own ``execute_tool`` span. And
a call retried after a 5xx answer or a timeout may leave one span per attempt. Counted span by span, every model
call counts three times and a retried call as several failed ones. Here each is one logical call:

- **Nests.** Spans of one role (model call, or tool call) joined by their nearest ancestor of that role, with no
  orchestration (agent, chain, step), retrieval or call of the other role between them, form a nest. A chain of
  nested spans, each holding one (a wrapper and the call it wraps), is one *unit*; the unit's values are read
  from its deepest span that records them.
- **Twins.** A model-call span that starts while a sibling model-call span (the same parent) runs, of the same
  model (one id may be the other's dated version), both reporting the same input and output tokens, is the call
  that sibling reports (a framework's own span and a client instrumentation's span for the same call, when neither
  is made the active span, as OpenLLMetry's LangChain.js callback handler does): it is nested under it, and the two
  are one unit. Two spans of the very same start and end are not twins (calls laid out alike, not one in another).
- **Attempts.** Units next to each other among their parent's calls, of the same role, where the earlier failed
  and ended before the later started, with the same model (model calls) or the same tool and arguments (tool
  calls), are attempts of one call (a failed model call brings no new information: the call after it with
  nothing between is its retry). A model call whose span holds several HTTP or RPC client spans made that many
  attempts.
- **Wrappers above several units.** A span of the role above units that are all attempts of one call is that
  call's wrapper; above units of several calls it is an aggregate (a framework's loop that repeats the total
  usage of its calls, read by structure as a model call): it counts as orchestration, never as a call.

A call's tokens and cost are the sum over its attempts of each attempt's reported values (a failed attempt
reports none), so a total repeated on a wrapper or a run's root is never added. Its model, provider, finish
reason and error come from its last attempt; it failed when its last attempt failed; it starts with its first
attempt and ends with its last. The span that stands for it (``Calls.row``) is its outermost.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..spans.dialects import (
    AGENT,
    ANSWER,
    CALLS,
    CHAIN,
    CHAT,
    HANDOFF,
    NUMBER_FIELDS,
    OTHER,
    RETRIEVAL,
    STEP,
    TOOL,
    TRANSPORT,
    Fields,
)
from ..spans.graph import chain_top, depths, nearest_marked

_CLIENT = 3                                      # OTLP span kind CLIENT


@dataclass
class Calls:
    """Per span: the logical call it belongs to (-1: none), whether it stands for it, its attempt unit and depth
    among the call's nested spans; per call (indexed by call id): attempts, whether it failed, when it started and
    ended, its standing span and its last attempt's unit. ``aggregate`` marks the spans of a call role that hold
    several calls (they count as orchestration)."""
    call: np.ndarray          # int64 per span
    row: np.ndarray           # bool per span: the span that stands for its call
    aggregate: np.ndarray     # bool per span
    unit: np.ndarray          # int64 per span: its attempt's unit (-1: a wrapper above the attempts, or no call)
    depth: np.ndarray         # int64 per span: nesting depth among the spans of its role
    attempts: np.ndarray      # int64 per call
    failed: np.ndarray        # bool per call
    start: np.ndarray         # int64 per call
    end: np.ndarray           # int64 per call
    rows: np.ndarray          # int64 per call: its standing span
    last_unit: np.ndarray     # int64 per call
    prep: np.ndarray | None = None    # bool per span: a model-call span that is a preparation step (no call)

    @property
    def n(self) -> int:
        return len(self.rows)

    @property
    def nested(self) -> bool:
        """Whether some call has more than one span."""
        return int((self.call >= 0).sum()) > self.n


def logical_calls(parent: np.ndarray, kind: np.ndarray, error: np.ndarray, *, start: np.ndarray, end: np.ndarray,
                  identity: np.ndarray, span_kind: np.ndarray, parent_key: np.ndarray | None = None,
                  reported: np.ndarray | None = None, usage: tuple[np.ndarray, np.ndarray] | None = None) -> Calls:
    """``parent_key``: per span, a code of its parent's id (siblings share it even when the parent is not in the
    input; by default the parent's row); ``identity``: per span, what makes two attempts the same call (the model
    of a model call, the tool and its arguments of a tool call; None when unknown); ``span_kind``: the OTLP span
    kind (CLIENT transport spans under a model call are its attempts); ``reported``: per span, whether it records
    what a model call reports (usage or a finish reason): a model-call span that reports nothing and did not fail,
    followed among its parent's calls by a model call of the same model, is a preparation step of that call
    (LlamaIndex's ``_prepare_chat_with_tools``), not a call (``Calls.prep``); ``usage``: per span, the input and
    output tokens it reports (NaN: none), which tell twins apart (see the module docstring)."""
    n = len(kind)
    siblings = parent if parent_key is None else parent_key
    prep = _preparations(siblings, kind, error, start=start, end=end, identity=identity, reported=reported)
    if prep.any():
        kind = np.where(prep, OTHER, kind)
    cand = np.isin(kind, CALLS)
    nest = np.full(n, -1, dtype=np.int64)
    for role, other in ((CHAT, TOOL), (TOOL, CHAT)):
        mine = kind == role
        if not mine.any():
            continue
        barrier = np.isin(kind, (AGENT, CHAIN, STEP, RETRIEVAL, other))
        near = nearest_marked(parent, mine | barrier)
        joined = mine & (near >= 0) & (kind[np.maximum(near, 0)] == role)
        nest[joined] = near[joined]
    if usage is not None:
        outer, inner = _twins(siblings, kind, start=start, end=end, identity=identity, usage=usage)
        free = nest[inner] < 0
        nest[inner[free]] = outer[free]
    if not (nest >= 0).any() and not (error & cand).any():
        out = _simple(np.flatnonzero(cand), n, kind, parent=parent, error=error, start=start, end=end,
                      span_kind=span_kind)
    else:
        out = _nested(parent, siblings, kind, error=error, start=start, end=end, identity=identity,
                      span_kind=span_kind, cand=cand, nest=nest)
    out.prep = prep
    return out


def _preparations(siblings: np.ndarray, kind: np.ndarray, error: np.ndarray, *, start: np.ndarray, end: np.ndarray,
                  identity: np.ndarray, reported: np.ndarray | None) -> np.ndarray:
    """Model-call spans that report nothing, did not fail, and are followed among their parent's calls by a model
    call of the same model that started after they ended."""
    n = len(kind)
    out = np.zeros(n, dtype=bool)
    if reported is None:
        return out
    empty = (kind == CHAT) & ~reported & ~error
    if not empty.any():
        return out
    rows = np.flatnonzero(np.isin(kind, (*CALLS, HANDOFF, ANSWER)))
    order = rows[np.lexsort((start[rows], siblings[rows]))]
    a, b = order[:-1], order[1:]
    same = ((siblings[a] == siblings[b]) & (siblings[a] >= 0) & (kind[b] == CHAT) & (reported[b] | error[b])
            & (start[b] >= end[a]))
    ident_a, ident_b = identity[a], identity[b]
    known = pd.notna(ident_a) & pd.notna(ident_b)
    same &= np.where(known, ident_a == ident_b, True).astype(bool)
    out[a[same & empty[a]]] = True
    return out


def _twins(siblings: np.ndarray, kind: np.ndarray, *, start: np.ndarray, end: np.ndarray, identity: np.ndarray,
           usage: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(outer, inner) rows of sibling model-call spans where the inner starts while the outer runs, with the same
    model (or an unknown one; a model id may be the other's dated version) and the same input and output tokens,
    both reported; the pairs are neighbours in the order of (parent, start, longest first)."""
    rows = np.flatnonzero((kind == CHAT) & (siblings >= 0))
    empty = np.array([], dtype=np.int64)
    if len(rows) < 2:
        return empty, empty
    tin, tout = usage
    rows = rows[np.lexsort((rows, -end[rows], start[rows], siblings[rows]))]
    a, b = rows[:-1], rows[1:]
    # (two spans of the very same start and end are two calls laid out alike, not one wrapping the other)
    same = (siblings[a] == siblings[b]) & (start[a] <= start[b]) & (start[b] < end[a]) \
        & ((start[a] != start[b]) | (end[a] != end[b]))
    same &= (tin[a] == tin[b]) & (tout[a] == tout[b])       # (NaN never equals: both must report them)
    pairs = np.flatnonzero(same)
    for i, (x, y) in enumerate(zip(identity[a[pairs]].tolist(), identity[b[pairs]].tolist(), strict=True)):
        if isinstance(x, str) and isinstance(y, str) and not (x.startswith(y) or y.startswith(x)):
            same[pairs[i]] = False
    return a[same], b[same]


def _simple(rows: np.ndarray, n: int, kind: np.ndarray, *, parent: np.ndarray, error: np.ndarray, start: np.ndarray,
            end: np.ndarray, span_kind: np.ndarray) -> Calls:
    """Every call span is one call of one attempt."""
    call = np.full(n, -1, dtype=np.int64)
    call[rows] = np.arange(len(rows))
    row = np.zeros(n, dtype=bool)
    row[rows] = True
    unit = np.where(row, np.arange(n), -1)
    attempts = _transport_attempts(call, kind, parent, span_kind, len(rows))
    return Calls(call, row, np.zeros(n, dtype=bool), unit, np.zeros(n, dtype=np.int64), attempts,
                 error[rows].copy(), start[rows].copy(), end[rows].copy(), rows, rows.copy())


def _transport_attempts(call: np.ndarray, kind: np.ndarray, parent: np.ndarray, span_kind: np.ndarray,
                        n_calls: int) -> np.ndarray:
    """Per call: the client transport spans directly under its spans when it is a model call (at least 1)."""
    t = (kind == TRANSPORT) & (span_kind == _CLIENT) & (parent >= 0)
    above = parent[t]
    owner = call[above][(call[above] >= 0) & (kind[above] == CHAT)]
    return np.maximum(np.bincount(owner, minlength=n_calls)[:n_calls], 1).astype(np.int64)


def _nested(parent: np.ndarray, siblings: np.ndarray, kind: np.ndarray, *, error: np.ndarray, start: np.ndarray,
            end: np.ndarray, identity: np.ndarray, span_kind: np.ndarray, cand: np.ndarray, nest: np.ndarray) -> Calls:
    n = len(kind)
    idx = np.arange(n)
    has_parent = nest >= 0
    nchild = np.bincount(nest[has_parent], minlength=n)
    # a unit: a leaf and the spans above it that each hold one span of the role (the chain down ends at the leaf)
    only_child = np.full(n, -1, dtype=np.int64)
    single = has_parent & (nchild[np.maximum(nest, 0)] == 1)
    only_child[nest[single]] = idx[single]
    bottom = chain_top(only_child)                    # following the one child down to a leaf or a branch
    in_unit = cand & (nchild[bottom] == 0)
    unit = np.where(in_unit, bottom, -1)
    up = np.maximum(nest, 0)
    top_of_unit = in_unit & ~(has_parent & (unit[up] == unit))
    tops = np.flatnonzero(top_of_unit)
    mrows = np.flatnonzero(in_unit)
    mu = unit[mrows]
    order = np.argsort(mu, kind="stable")
    mrows, mu = mrows[order], mu[order]
    bounds = np.flatnonzero(np.r_[True, mu[1:] != mu[:-1]])
    units = mu[bounds]
    u = pd.DataFrame({"unit": units,
                      "start": np.minimum.reduceat(start[mrows], bounds),
                      "end": np.maximum.reduceat(end[mrows], bounds),
                      "failed": np.maximum.reduceat(error[mrows].astype(np.int8), bounds).astype(bool)})
    u["top"] = pd.Series(tops, index=unit[tops]).reindex(units).to_numpy()
    u["parent"] = siblings[u["top"].to_numpy()]
    u["role"] = kind[units]
    order = np.lexsort((u["top"].to_numpy(), u["start"].to_numpy(), u["parent"].to_numpy()))
    u = u.iloc[order].reset_index(drop=True)
    u["identity"] = identity[u["unit"].to_numpy()]
    u["group"] = _attempt_groups(u)
    span_group = np.full(n, -1, dtype=np.int64)
    span_group[in_unit] = pd.Series(u["group"].to_numpy(), index=u["unit"].to_numpy()).reindex(unit[in_unit]).to_numpy()
    aggregate = np.zeros(n, dtype=bool)
    upper = np.flatnonzero(cand & ~in_unit)
    depth = depths(nest)
    if len(upper):
        joined = _uppers(upper, nest, depth, u, n)
        span_group[upper] = joined
        aggregate[upper] = joined < 0
    return _per_call(span_group, unit, depth, u=u, kind=kind, parent=parent, span_kind=span_kind, aggregate=aggregate)


def _attempt_groups(u: pd.DataFrame) -> np.ndarray:
    """A group id per unit (units sorted by parent, then start): a unit joins the one before it when they are
    adjacent among their parent's calls, of one role, the earlier failed and ended first, and the two are the same
    call (same model, or same tool and arguments; unknown on either side counts as the same)."""
    parent, role = u["parent"].to_numpy(), u["role"].to_numpy()
    start, end, failed = u["start"].to_numpy(), u["end"].to_numpy(), u["failed"].to_numpy(dtype=bool)
    ident = u["identity"].to_numpy(dtype=object)
    k = len(u)
    same = np.zeros(k, dtype=bool)
    if k > 1:
        a, b = slice(None, -1), slice(1, None)
        known = pd.notna(ident[a]) & pd.notna(ident[b])
        # (a model call of an unknown model may be the same call; a tool call is only when it is the same tool)
        equal = np.where(known, ident[a] == ident[b], role[a] == CHAT).astype(bool)
        same[1:] = ((parent[a] == parent[b]) & (parent[b] >= 0) & (role[a] == role[b]) & failed[a]
                    & (end[a] <= start[b]) & equal)
    return np.cumsum(~same) - 1


def _uppers(upper: np.ndarray, nest: np.ndarray, depth: np.ndarray, u: pd.DataFrame, n: int) -> np.ndarray:
    """The group each upper span joins (-1: an aggregate), bottom-up over the nest: a span whose units below all
    belong to one group joins it."""
    lo = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    hi = np.full(n, -1, dtype=np.int64)
    above = nest[u["top"].to_numpy()]
    ok = above >= 0
    np.minimum.at(lo, above[ok], u["group"].to_numpy()[ok])
    np.maximum.at(hi, above[ok], u["group"].to_numpy()[ok])
    for r in upper[np.argsort(-depth[upper], kind="stable")].tolist():      # deepest first
        p = int(nest[r])
        if p >= 0:
            lo[p] = min(lo[p], lo[r])
            hi[p] = max(hi[p], hi[r])
    single = (hi[upper] >= 0) & (lo[upper] == hi[upper])
    return np.where(single, lo[upper], -1)


def _per_call(span_group: np.ndarray, unit: np.ndarray, depth: np.ndarray, *, u: pd.DataFrame, kind: np.ndarray,
              parent: np.ndarray, span_kind: np.ndarray, aggregate: np.ndarray) -> Calls:
    n = len(kind)
    member = span_group >= 0
    codes, groups = pd.factorize(span_group[member], sort=True)
    call = np.full(n, -1, dtype=np.int64)
    call[member] = codes
    g = u.drop(columns="identity").assign(call=pd.Index(groups).get_indexer(u["group"].to_numpy()))
    per = g.groupby("call").agg(units=("unit", "size"), start=("start", "min"), end=("end", "max"))
    last = g.sort_values(["call", "start", "top"], kind="stable").drop_duplicates("call", keep="last")
    last = last.set_index("call").reindex(per.index)
    # the standing span: the outermost member, the last attempt's top among equals
    m = np.flatnonzero(member)
    is_last = m == last["top"].to_numpy()[call[m]]
    pick = pd.DataFrame({"call": call[m], "row": m, "depth": depth[m], "last": is_last}).sort_values(
        ["call", "depth", "last"], ascending=[True, True, False], kind="stable").drop_duplicates("call")
    rows = pick["row"].to_numpy()
    row = np.zeros(n, dtype=bool)
    row[rows] = True
    attempts = np.maximum(per["units"].to_numpy(dtype=np.int64),
                          _transport_attempts(call, kind, parent, span_kind, len(per)))
    return Calls(call, row, aggregate, unit, depth, attempts, last["failed"].to_numpy(dtype=bool),
                 per["start"].to_numpy(dtype=np.int64), per["end"].to_numpy(dtype=np.int64), rows,
                 last["unit"].to_numpy(dtype=np.int64))


def call_fields(calls: Calls, values: Fields) -> None:
    """Writes each call's values on its standing span, in place. Tokens and cost: the sum over its attempts of
    each attempt's deepest span that reports the value (a wrapper's total only when no attempt reports one).
    Text: from the last attempt's deepest span that has a value, else from the call's deepest that has one. The
    error flag: whether its last attempt failed."""
    if not calls.nested:
        values["error"][calls.rows] = calls.failed
        return
    m = np.flatnonzero(calls.call >= 0)
    call, unit, depth = calls.call[m], calls.unit[m], calls.depth[m]
    in_last = unit == calls.last_unit[call]
    # deepest first, attempts' spans before wrappers
    order = np.lexsort((-depth, unit < 0, call))
    m, call, unit, in_last = m[order], call[order], unit[order], in_last[order]
    for f in NUMBER_FIELDS:
        v = values[f][m]
        has = ~np.isnan(v)
        if not has.any():
            continue
        inner = has & (unit >= 0)
        first_of_unit = inner & ~pd.Series(unit).where(inner).duplicated().to_numpy()
        total = np.bincount(call[first_of_unit], weights=v[first_of_unit], minlength=calls.n)
        counted = np.bincount(call[first_of_unit], minlength=calls.n) > 0
        outer = has & (unit < 0)
        wrapper = pd.Series(v[outer], index=call[outer]).groupby(level=0).first().reindex(np.arange(calls.n))
        values[f][calls.rows] = np.where(counted, total, wrapper.to_numpy(dtype=float))
    text_order = np.lexsort((~in_last, call))        # (stable: deepest first within each)
    multi = np.bincount(call, minlength=calls.n) > 1     # calls of one span keep their values as they are
    keep = multi[call[text_order]]
    members, owners = m[text_order][keep], call[text_order][keep]
    for f in ("model", "provider", "finish", "error_type", "tool", "args"):
        values[f] = _gathered(values[f], members, owners, calls.rows)
    values["error"][calls.rows] = calls.failed


def _gathered(values: Any, members: np.ndarray, owners: np.ndarray, rows: np.ndarray) -> Any:
    """A text field with each call's first value among its ``members`` (in their order) written on its standing
    span (``rows[owner]``); in Arrow, so the million spans' array is not copied as Python objects."""
    arr = values if isinstance(values, pa.Array) else pa.array(values)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    got = pc.take(arr, pa.array(members, type=pa.int64()))
    valid = got.is_valid().to_numpy(zero_copy_only=False)
    if not valid.any():
        return values
    firsts = pd.Series(np.flatnonzero(valid), index=owners[valid]).groupby(level=0).first()
    target = rows[firsts.index.to_numpy()]
    source = members[firsts.to_numpy()]
    same = target == source
    if same.all():
        return values
    target, source = target[~same], source[~same]
    index = np.arange(len(arr), dtype=np.int64)
    index[target] = source
    out = pc.take(arr, pa.array(index))
    return pd.array(out, dtype=pd.StringDtype("pyarrow"))
