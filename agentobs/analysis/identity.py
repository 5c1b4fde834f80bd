"""Which run each span belongs to: run identity for real application traces.

A run is an agent invocation with no agent above it in its trace. Everything under it belongs to it,
nested agents included (a sub-agent, a handoff, an agent used as a tool): they are counted in the run,
and listed as its sub-agents. Wrapper spans (an HTTP server span, a queue consumer, a job, a framework
chain with no agent semantics) are never runs, so two agents one after the other under one request are
two runs. Where a trace has no agent span:

    - ``chain``: each top-most framework chain that holds model calls is a run (a LangGraph graph, a
      Traceloop workflow, an MLflow chain), when the instrumentation marks no agent;
    - ``trace``: otherwise a trace with model calls is one run, rooted at the trace's root span (or, when
      the root never arrived, e.g. a crashed process, at its first span whose parent is missing).

Spans whose chain of parents ends at a missing parent join their trace's run when it has exactly one.
Model and tool calls that belong to no run are counted (``unplaced``). The segments of one task (a
suspended run and its resume, in other traces) are joined by their span links and the task id.

The run id is the task id (``agentobs.task.id``) when the run has one, else the trace id when the trace
holds one run, else ``<trace id>:<span id>`` of the run's root span.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..contract import semconv as sc
from .dialects import AGENT, CHAIN, CHAT, TOOL
from .graph import SpanKeys, chain_top, highest_marked, link_groups

ROOT_KINDS = np.array(["agent", "chain", "trace"], dtype=object)


@dataclass
class RunIdentity:
    run: np.ndarray            # run code of each span, -1 outside every run
    run_ids: np.ndarray        # the id of each run code (object array of str)
    segments: pd.DataFrame     # one row per segment: run, row (its root span), start, end, trace_id
    root_kind: np.ndarray      # per run: "agent", "chain" or "trace"
    main_agent: np.ndarray     # per run: row of its main agent span, -1 when none
    sub_agents: np.ndarray     # per run: number of other agent invocations in the run
    sub_agent_names: list[list[str]]
    unplaced: int              # model and tool calls in no run

    @property
    def n_runs(self) -> int:
        return len(self.run_ids)


_LAST = np.iinfo(np.int64).max          # (a time that is missing sorts last, as NaN did)


def identify(spans: pd.DataFrame, keys: SpanKeys, kind: np.ndarray, agent_name: np.ndarray,
             links: pd.DataFrame | None) -> RunIdentity:
    anchor, root_kind_of_anchor = _anchors(keys, kind)
    run, run_ids, seg = _runs_of(spans, keys, anchor, links)
    n_runs = len(run_ids)
    root_kind = np.full(n_runs, "trace", dtype=object)
    # the first segment's root decides how the run is rooted
    first = seg.drop_duplicates("run")
    root_kind[first["run"].to_numpy()] = ROOT_KINDS[root_kind_of_anchor[first["row"].to_numpy()]]
    main, subs, names = _agents(spans, keys, kind, agent_name, run, n_runs)
    unplaced = int(((run < 0) & np.isin(kind, [CHAT, TOOL])).sum())
    return RunIdentity(run, run_ids, seg, root_kind, main, subs, names, unplaced)


def _anchors(keys: SpanKeys, kind: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the root span of each span's run, -1 outside runs; per span, 0/1/2 = agent/chain/trace root)."""
    n = len(kind)
    parent, trace = keys.parent, keys.trace
    n_traces = int(trace.max()) + 1 if n else 0
    is_agent = kind == AGENT
    is_chat = kind == CHAT
    how = np.full(n, 2, dtype=np.int8)
    has_agent = np.bincount(trace[is_agent], minlength=n_traces) > 0
    anchor = highest_marked(parent, is_agent) if is_agent.any() else np.full(n, -1)
    how[is_agent] = 0
    # traces without agent spans: top-most chains holding model calls
    no_agent = ~has_agent[trace]
    chains = (kind == CHAIN) & no_agent
    chain_run = np.zeros(n, dtype=bool)
    if chains.any():
        top_chain = highest_marked(parent, chains)
        holders = top_chain[is_chat & no_agent & (top_chain >= 0)]
        chain_run[holders] = True
        if chain_run.any():
            under = highest_marked(parent, chain_run)
            anchor = np.where((anchor < 0) & (under >= 0), under, anchor)
            how[chain_run] = 1
    has_chain_run = np.bincount(trace[chain_run], minlength=n_traces) > 0
    top = chain_top(parent)
    # traces with model calls and neither: one run for the whole trace
    has_model = np.bincount(trace[is_chat], minlength=n_traces) > 0
    whole = has_model & ~has_agent & ~has_chain_run
    if whole.any():
        in_whole = whole[trace]
        rows = np.nonzero(in_whole)[0]
        t = trace[rows]
        true_roots = rows[keys.true_root[rows]]
        root_of = pd.Series(true_roots, index=trace[true_roots]).groupby(level=0).first()
        orphan_top = pd.Series(top[rows], index=t).groupby(level=0).min()
        per_trace = root_of.reindex(orphan_top.index).fillna(orphan_top).astype(np.int64)
        anchor[rows] = per_trace.reindex(t).to_numpy()
    # spans under a missing parent join their trace's run when it has exactly one
    loose = (anchor < 0) & ~keys.true_root[top]
    if loose.any():
        roots = np.unique(anchor[anchor >= 0])
        per_trace = np.bincount(trace[roots], minlength=n_traces)
        only = np.full(n_traces, -1, dtype=np.int64)
        single = roots[per_trace[trace[roots]] == 1]
        only[trace[single]] = single
        take = loose & (only[trace] >= 0)
        anchor[take] = only[trace[take]]
    return anchor, how


def _runs_of(spans: pd.DataFrame, keys: SpanKeys, anchor: np.ndarray, links: pd.DataFrame | None
             ) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
    """Run codes per span, run ids, and the segments (one per root span) sorted by run and start."""
    anchor_rows = np.unique(anchor[anchor >= 0])
    roots = spans.iloc[anchor_rows]
    tids = roots["trace_id"].astype(str).to_numpy()
    group = link_groups(tids, roots["span_id"].astype(str).to_numpy(), links)
    task = roots[sc.TASK_ID].astype("string") if sc.TASK_ID in roots.columns else \
        pd.Series(pd.NA, index=roots.index, dtype="string")
    tid_s = pd.Series(tids, index=roots.index)
    first_trace = tid_s.groupby(group).transform("first")
    per_trace = tid_s.groupby(tid_s).transform("size")
    fallback = first_trace.where(per_trace == 1, tid_s + ":" + roots["span_id"].astype(str))
    groups_per_task = pd.Series(group, index=roots.index).groupby(task.fillna("")).transform("nunique")
    run_of_root = task.where((groups_per_task == 1) & task.notna(), fallback.astype("string"))
    codes, run_ids = pd.factorize(run_of_root.astype(str), sort=True)
    code_of = np.full(len(spans), -1, dtype=np.int64)
    code_of[anchor_rows] = codes
    run = np.where(anchor >= 0, code_of[np.maximum(anchor, 0)], -1)
    seg = pd.DataFrame({"run": codes, "row": anchor_rows, "start": roots["start_ns"].astype("float64").to_numpy(),
                        "end": roots["end_ns"].astype("float64").to_numpy(), "trace_id": tids})
    seg = seg.sort_values(["run", "start"], kind="stable").reset_index(drop=True)
    return run, np.asarray(run_ids, dtype=object), seg


def _agents(spans: pd.DataFrame, keys: SpanKeys, kind: np.ndarray, agent_name: np.ndarray, run: np.ndarray,
            n_runs: int) -> tuple[np.ndarray, np.ndarray, list[list[str]]]:
    """Per run: the main agent (the highest named agent invocation, the earliest of equals; in a run with no named
    agent, the highest agent invocation), and the others. Each run is decided on its own spans alone."""
    main = np.full(n_runs, -1, dtype=np.int64)
    subs = np.zeros(n_runs, dtype=np.int64)
    names: list[list[str]] = [[] for _ in range(n_runs)]
    is_agent = (kind == AGENT) & (run >= 0)
    if not is_agent.any():
        return main, subs, names
    parent = keys.parent
    named = is_agent & pd.notna(agent_name)
    # (integers: float64 times of today step by 256 ns)
    start = spans["start_ns"].to_numpy(dtype=np.int64, na_value=_LAST)
    own = np.arange(len(kind))
    has_named = np.zeros(n_runs, dtype=bool)
    has_named[run[named]] = True
    cand = np.nonzero(named & (highest_marked(parent, named) == own))[0] if named.any() else own[:0]
    plain = is_agent & ~has_named[np.maximum(run, 0)]
    if plain.any():
        cand = np.concatenate([cand, np.nonzero(plain & (highest_marked(parent, is_agent) == own))[0]])
    order = pd.DataFrame({"run": run[cand], "start": start[cand], "row": cand}).sort_values(
        ["run", "start"], kind="stable").drop_duplicates("run")
    main[order["run"].to_numpy()] = order["row"].to_numpy()
    # agents above the main one (a framework's workflow span) are not invocations of their own
    above = np.zeros(len(kind), dtype=bool)
    cur = parent[main[main >= 0]]
    while len(cur) and (cur >= 0).any():
        cur = cur[cur >= 0]
        above[cur] = True
        cur = parent[cur]
    others = is_agent & ~above
    others[main[main >= 0]] = False
    rows = np.nonzero(others)[0]
    if len(rows):
        label = np.where(pd.notna(agent_name[rows]), agent_name[rows], spans["name"].astype(str).to_numpy()[rows])
        o = pd.DataFrame({"run": run[rows], "start": start[rows], "name": label}).sort_values(["run", "start"],
                                                                                              kind="stable")
        subs = np.bincount(o["run"].to_numpy(), minlength=n_runs)
        for r, g in o.groupby("run")["name"]:
            names[int(r)] = [str(x) for x in g]
    return main, subs, names
