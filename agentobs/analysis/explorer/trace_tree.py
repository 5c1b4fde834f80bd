"""One trace as a tree: its spans depth first, each with its depth, role, start offset, duration, tokens, cost and
error (``agentobs trace``); and which trace a typed id or id prefix names.

Linear in the spans, whatever the tree's shape: children are grouped by one sort, the walk keeps its own stack
(no recursion: a parent chain 200,000 deep is walked like a flat trace), and every value is read by column, never
row by row. A parent cycle (hostile input) is cut at its smallest row, which is then shown as a root.

DataFrame in, DataFrame out: ``trace_tree(spans)`` takes one trace's spans (the spans frame of ``derive_runs``,
whose ``_kind``, ``_dialect``, ``run_id`` and other role columns it keeps when present) and returns one row per span
in the order shown. Nothing here formats or prints.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...contract import semconv as sc
from ..otlp.ids import trace_id_of
from ..spans.dialects import CHAT, KIND_NAMES, NAMED_TOOL_RULE, normalize, structure_rule
from ..spans.graph import SpanKeys, cycle_of, in_cycle, span_keys
from ..spans.spanset import SpanSet

# what a span's role rests on, when the spans frame carries it (``agentobs trace --roles``)
ROLE_COLUMNS = ("_kind", "_dialect", "_role_evidence", "_call", "run_id")
# attributes shown as a span's details: (key, label)
DETAILS = ((sc.STOP_REASON, "stop"), (sc.TOOL_RESULT_STATUS, "result"), (sc.STEP_OUTCOME, "outcome"))
_LAST = np.iinfo(np.int64).max          # a time that is missing sorts last


def trace_tree(spans: pd.DataFrame, keys: SpanKeys | None = None) -> pd.DataFrame:
    """One trace's spans as a tree, one row per span in the order shown (depth first; siblings by start, the longer
    first, then input order). Columns: ``parent`` (the row of its parent here, -1 for a root), ``depth``, ``last``
    (no later sibling), ``orphan`` (its parent is not in the input), ``cycle`` (a parent cycle was cut here),
    ``span_id``, ``parent_span_id``, ``name``, ``role``, ``start_ms`` (after the trace's first start),
    ``duration_ms``, ``input_tokens``, ``output_tokens``, ``cost_usd`` (recorded, else priced for a model call),
    ``status`` (``unset``, ``ok``, ``error``), ``error`` (its type or message), ``details`` (stop reason, tool
    result, step outcome), then whichever of ``ROLE_COLUMNS`` the spans carry. ``keys``: the span graph's keys of
    these rows, when already computed (``graph.span_keys``)."""
    t = spans.reset_index(drop=True)
    n = len(t)
    keys = keys if keys is not None and len(keys.parent) == n else span_keys(t)
    start = t["start_ns"].to_numpy(dtype=np.int64, na_value=_LAST)
    end = t["end_ns"].to_numpy(dtype=np.int64, na_value=_LAST)
    parent, cycle = _cut_cycles(keys.parent)
    order, depth, last = _depth_first(parent, start, end)
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(n)
    norm = normalize(t)
    f = norm.fields
    known = (start != _LAST) & (end != _LAST)
    t0 = start[start != _LAST].min() if (start != _LAST).any() else 0
    start_ms = np.where(start != _LAST, (start - t0) / 1e6, np.nan)
    duration_ms = np.where(known, (end - start) / 1e6, np.nan)
    status_code = t["status_code"].to_numpy() if "status_code" in t.columns else np.zeros(n, dtype=np.int8)
    out = pd.DataFrame({
        "parent": np.where(parent[order] >= 0, position[np.maximum(parent[order], 0)], -1),
        "depth": depth[order], "last": last[order],
        "orphan": ((keys.parent < 0) & ~keys.true_root & ~cycle)[order], "cycle": cycle[order],
        "span_id": t["span_id"].take(order).array, "parent_span_id": t["parent_span_id"].take(order).array,
        "name": t["name"].fillna("").take(order).array,
        "role": (t["_kind"].to_numpy(dtype=object) if "_kind" in t.columns else KIND_NAMES[norm.kind])[order],
        "start_ms": start_ms[order], "duration_ms": duration_ms[order],
        "input_tokens": f["input_tokens"][order], "output_tokens": f["output_tokens"][order],
        "cost_usd": _costs(norm.kind, f, start)[order],
        "status": np.array(["unset", "ok", "error"], dtype=object)[np.clip(status_code, 0, 2)][order],
        "error": _errors(t, f, status_code == 2)[order],
        "details": _details(t)[order],
    })
    for c in ROLE_COLUMNS[1:]:
        if c in t.columns:
            out[c] = t[c].to_numpy(dtype=object, na_value=None)[order]
    return out


def _cut_cycles(parent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The parents with every parent cycle cut at its smallest row (that row becomes a root), and where a cut was
    made. Pointer doubling (``graph``): n log n whatever the depth."""
    cut = np.zeros(len(parent), dtype=bool)
    if len(parent) == 0 or not in_cycle(parent).any():
        return parent, cut
    labels = cycle_of(parent)
    heads = np.unique(labels[labels >= 0])
    parent = parent.copy()
    parent[heads] = -1
    cut[heads] = True
    return parent, cut


def _depth_first(parent: np.ndarray, start: np.ndarray, end: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows in depth-first order, depth of each row, whether it is its parent's last child), for parents without
    cycles. One sort groups the children of each parent in the order shown; a walk with its own stack visits
    each row once; depths by pointer jumping (log n rounds of numpy indexing)."""
    n = len(parent)
    # siblings: by start, the longer first (it contains the others), then input order; roots (-1) come first
    grouped = np.lexsort((np.arange(n), -end, start, parent))
    by_parent = parent[grouped]
    lo = np.searchsorted(by_parent, np.arange(n), side="left")
    hi = np.searchsorted(by_parent, np.arange(n), side="right")
    last = np.zeros(n, dtype=bool)
    if n:
        ends = np.append(by_parent[1:] != by_parent[:-1], True)
        last[grouped[ends]] = True
    children, lo_l, hi_l = grouped.tolist(), lo.tolist(), hi.tolist()
    roots = int(np.searchsorted(by_parent, -1, side="right"))
    order: list[int] = []
    visit, stack = order.append, children[:roots][::-1]
    push, push_all, pop = stack.append, stack.extend, stack.pop
    while stack:
        v = pop()
        visit(v)
        a, b = lo_l[v], hi_l[v]
        if b - a == 1:
            push(children[a])
        elif a < b:
            push_all(reversed(children[a:b]))
    return np.asarray(order, dtype=np.int64), _depths(parent), last


def _depths(parent: np.ndarray) -> np.ndarray:
    """Each row's number of ancestors, by pointer jumping: after round k, ``up`` is each row's 2^k-th ancestor and
    ``depth`` counts the steps taken to it (parents without cycles)."""
    depth = (parent >= 0).astype(np.int64)
    up = parent.copy()
    while True:
        live = up >= 0
        if not live.any():
            return depth
        nxt = up[live]
        depth[live] += depth[nxt]
        up[live] = up[nxt]


def _costs(kind: np.ndarray, f: dict[str, np.ndarray], start: np.ndarray) -> np.ndarray:
    """Each span's cost: recorded, else (a model call with its model and tokens) priced with genai-prices at its
    start, as the runs table prices it."""
    cost = np.asarray(f["cost"], dtype=float).copy()
    missing = (kind == CHAT) & np.isnan(cost) & pd.notna(f["model"]) & ~np.isnan(f["input_tokens"])
    if missing.any():
        from ..derive.pricing import price_calls
        at = np.where(start[missing] != _LAST, start[missing], np.nan).astype(float)
        cost[missing] = price_calls(f["model"][missing], f["provider"][missing], f["input_tokens"][missing],
                                    output_tokens=np.nan_to_num(f["output_tokens"][missing]),
                                    cache_read_tokens=f["cache_read_tokens"][missing],
                                    cache_creation_tokens=f["cache_creation_tokens"][missing], at_ns=at)
    return cost


def _errors(t: pd.DataFrame, f: dict[str, np.ndarray], failed: np.ndarray) -> np.ndarray:
    """A failed span's error type, else its status message, else ``error``; empty for the others."""
    out = np.full(len(t), "", dtype=object)
    if not failed.any():
        return out
    kind = pd.Series(f["error_type"], dtype="string")
    if sc.ERROR_TYPE in t.columns:
        kind = kind.fillna(t[sc.ERROR_TYPE].astype("string"))
    if "status_message" in t.columns:
        kind = kind.fillna(t["status_message"].astype("string").replace("", pd.NA))
    out[failed] = kind.fillna("error").to_numpy(dtype=object)[failed]
    return out


def _details(t: pd.DataFrame) -> np.ndarray:
    """``stop=... result=... outcome=...`` from the attributes a span carries; empty when none."""
    text = pd.Series("", index=t.index, dtype="string")
    for key, label in DETAILS:
        if key in t.columns:
            piece = (label + "=" + t[key].astype("string")).fillna("")
            text = text + pd.Series(np.where((text != "") & (piece != ""), " ", ""), index=t.index) + piece
    return text.to_numpy(dtype=object)


# -- which trace ------------------------------------------------------------------------------------------

def typed_prefix(typed: str) -> str | None:
    """The hex digits of a typed id that may be a prefix (fewer than 32, ``0x`` and white space dropped), lower
    case; None when the text is no run of hex digits."""
    digits = typed.strip().lower().removeprefix("0x")
    return digits if 0 < len(digits) < 32 and all(c in "0123456789abcdef" for c in digits) else None


def matching_trace_ids(typed: str, trace_ids: Iterable[str]) -> list[str]:
    """The traces ``typed`` names among ``trace_ids`` (32 lower-case hex digits, as the loader writes them): the
    one it spells whole (``otlp.ids.trace_id_of``: any case, ``0x``, base64, a 64-bit id without its padding), else
    every id it starts (a 64-bit id's padding skipped), sorted."""
    ids = pd.Series(pd.unique(pd.Series(list(trace_ids), dtype="string").dropna()), dtype="string")
    whole = trace_id_of(typed)
    if whole is not None and bool((ids == whole).any()):
        return [whole]
    prefix = typed_prefix(typed)
    if prefix is None or ids.empty:
        return []
    padded = ids.str.startswith("0" * 16)
    short = ids.where(~padded, ids.str.slice(16))
    hit = ids.str.startswith(prefix) | (padded & short.str.startswith(prefix))
    return sorted(ids[hit.fillna(False)].tolist())


def explain(ss: SpanSet, *, evidence: bool = True) -> pd.DataFrame:
    """The spans of ``ss`` (one trace, say) with what decides their counts: ``_kind`` (the role), ``_role_evidence``
    (what gave it; only with ``evidence``, which ``agentobs trace --roles`` and ``--format json`` show), ``_call``
    (the logical call a span belongs to), ``_call_row`` (the span counted for it) and ``run_id`` (its run)."""
    from ..derive.runs import derive_runs
    _, spans, _ = derive_runs(ss)
    if not evidence:
        return spans
    if spans.empty:
        return spans.assign(_role_evidence=pd.Series(dtype="string"))
    from ..spans.dialects import evidence as evidence_of
    norm = normalize(spans)
    said = evidence_of(spans, norm)
    before = KIND_NAMES[norm.kind]
    loop = (spans["_kind"].to_numpy(dtype=object) == "chain") & np.isin(before, ["chat", "tool"])
    said[loop] = [f"{e}; holds several calls: a loop (orchestration), not a call" for e in said[loop]]
    # a tool call found by the model call that asked for it (derive._named_tools: it needs the span tree)
    asked = (spans["_kind"].to_numpy(dtype=object) == "tool") & (before == "other")
    said[asked] = structure_rule(NAMED_TOOL_RULE)
    return spans.assign(_role_evidence=pd.array(said, dtype="string"))


@dataclass(frozen=True, kw_only=True)
class Found:
    """What ``find_trace`` read, and the traces the typed id names there."""
    typed: str
    matches: list[str]
    spanset: SpanSet

    def tree(self, trace_id: str, *, evidence: bool = True) -> pd.DataFrame:
        """The ``trace_tree`` of one trace, from its spans with the columns ``derive_runs`` adds (``run_id``,
        ``_kind``, ``_dialect`` and the others it gives a span: ``ROLE_COLUMNS``; ``_role_evidence`` only with
        ``evidence``)."""
        spans, one = self._derived(trace_id, evidence=evidence)
        return trace_tree(spans, one.keys() if one._keys is not None else None)

    def spans(self, trace_id: str) -> pd.DataFrame:
        """The spans of one trace, with the columns ``derive_runs`` adds (``run_id``, ``_kind``, ``_dialect`` and
        the others it gives a span: ``ROLE_COLUMNS``)."""
        return self._derived(trace_id)[0]

    def _derived(self, trace_id: str, *, evidence: bool = True) -> tuple[pd.DataFrame, SpanSet]:
        ss = self.spanset
        mine = ss.spans["trace_id"] == trace_id
        one = SpanSet(spans=ss.spans[mine.fillna(False).to_numpy(dtype=bool)].reset_index(drop=True),
                      events=ss.events[ss.events["trace_id"] == trace_id] if len(ss.events) else ss.events,
                      links=ss.links, sources=ss.sources)
        # (its keys, for the same rows in the same order: derive_runs, in explain)
        return explain(one, evidence=evidence), one

    def listing(self, limit: int = 100) -> pd.DataFrame:
        """The first ``limit`` matches, one row each: ``trace_id``, ``spans``, ``start`` (its first span's, UTC) and
        ``root`` (its root span's name, else its first span's)."""
        spans = self.spanset.spans
        ids = self.matches[:limit]
        mine = spans[spans["trace_id"].isin(ids).fillna(False).to_numpy(dtype=bool)]
        first = mine.sort_values(["trace_id", "start_ns"], kind="stable")
        rooted = first[first["parent_span_id"].isna()]
        root = rooted.drop_duplicates("trace_id").set_index("trace_id")["name"]
        root = root.reindex(ids).fillna(first.drop_duplicates("trace_id").set_index("trace_id")["name"].reindex(ids))
        start = pd.to_datetime(first.groupby("trace_id")["start_ns"].min().reindex(ids).astype("float64"), unit="ns",
                               utc=True)
        return pd.DataFrame({"trace_id": ids, "spans": mine.groupby("trace_id").size().reindex(ids).to_numpy(),
                             "start": start.to_numpy(), "root": root.to_numpy()})


def find_trace(typed: str, sources: Iterable[str]) -> Found:
    """The sources loaded, and the traces ``typed`` names in them (``matching_trace_ids``). A Jaeger source is asked
    for the trace by its id; when the typed text names none there and may be a prefix, its window is searched."""
    from ..jaeger.query import is_jaeger_url
    from ..load.sources import load_sources
    sources = list(sources)
    whole = trace_id_of(typed)
    ss = load_sources(sources, trace_id=whole)
    matches = matching_trace_ids(typed, ss.spans["trace_id"])
    if not matches and whole is not None and typed_prefix(typed) is not None and any(map(is_jaeger_url, sources)):
        ss = load_sources(sources)
        matches = matching_trace_ids(typed, ss.spans["trace_id"])
    return Found(typed=typed, matches=matches, spanset=ss)


def traces_of_run(run: str, sources: Iterable[str]) -> dict[str, list[str]]:
    """The runs ``run`` names in the sources' runs table (its run id; else its task or conversation id, which may
    name several runs), each with its trace ids: what the report's examples and ``agentobs runs`` show of a run."""
    from ..derive.runs import derive_runs
    from ..load.sources import load_sources
    runs, _, _ = derive_runs(load_sources(list(sources)))
    if runs.empty:
        return {}
    for columns in (("run_id",), ("task_id", "conversation_id")):
        hit = np.zeros(len(runs), dtype=bool)
        for c in columns:
            if c in runs.columns:
                hit |= runs[c].astype("string").eq(run).fillna(False).to_numpy(dtype=bool)
        if hit.any():
            picked = runs[hit]
            return {str(r): [str(t) for t in ids] for r, ids in zip(picked["run_id"], picked["trace_ids"],
                                                                     strict=True)}
    return {}


__all__ = ["DETAILS", "ROLE_COLUMNS", "Found", "find_trace", "matching_trace_ids", "trace_tree", "traces_of_run",
           "typed_prefix"]
