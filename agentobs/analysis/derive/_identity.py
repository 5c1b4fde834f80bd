"""Which run each span belongs to: runs by the structure of the trace.

A run is an outermost orchestration span: an agent invocation, or a framework's chain, workflow, graph or crew
that holds a model call or an agent, with no orchestration above it (transport spans, an HTTP server span, a
queue consumer, a job, are never runs). Everything under it belongs to it; orchestration nested in it is part of
it, and the agent invocations in it besides its main agent are its sub-agents (a sub-agent, a handoff, an agent
used as a tool, the agents of a crew's tasks). Sibling orchestrations under one request are separate runs.

- ``trace``: model and tool calls with no orchestration above them form one run per trace, rooted at the trace's
  root span (or its first span whose parent is missing); ``session``: when those spans carry a conversation or
  session id, one run per id, across traces. Calls outside every run of a trace that has runs form one more run
  of the trace, unless such a call is a second root of the trace within the time of exactly one of its runs (its
  context was lost): then it is part of that run. In a trace with calls but no orchestration span where every call
  lies under a span of the application (no role) right under a transport span, each of those spans is a run
  (``chain`` by structure) and the transport spans are in none.
- A root that never arrived (a process that crashed or was still running, a lost span): the spans under a missing
  parent form a group. A group that lies within the time of exactly one run of its trace joins it (a lost span in
  the middle of a run). A group holding calls that no agent span present holds is one run, rooted at its first
  top span and flagged ``rootless`` (its agent span was lost): never split into its steps. Otherwise its own
  orchestration spans are runs as anywhere else (complete agents under a lost request span), and a group with
  none joins its trace's run when the trace has one.

The segments of one task (a suspended run and its resume, in other traces) are joined by their span links and
the task id. The run id is the task id (``agentobs.task.id``) or the session id when the run has one, else the
trace id when the trace holds one run, else ``<trace id>:<span id>`` of the run's root span.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
import pandas as pd

from ...contract import semconv as sc
from ..spans.dialects import AGENT, CALLS, CHAIN, CHAT, ORCHESTRATION, OTHER, TOOL, TRANSPORT
from ..spans.graph import SpanKeys, ancestors_of, chain_top, highest_marked, link_groups, nearest_marked

_Ids: TypeAlias = pd.api.extensions.ExtensionArray   # per span, a string id (missing: none)
ROOT_KINDS = np.array(["agent", "chain", "trace", "session"], dtype=object)
_AGENT, _CHAIN, _TRACE, _SESSION = range(4)


@dataclass
class RunIdentity:
    run: np.ndarray            # run code of each span, -1 outside every run
    run_ids: np.ndarray        # the id of each run code (object array of str)
    segments: pd.DataFrame     # one row per segment: run, row (its root span), start, end, trace_id
    root_kind: np.ndarray      # per run: "agent", "chain", "trace" or "session"
    main_agent: np.ndarray     # per run: row of its main agent span, -1 when none
    sub_agents: np.ndarray     # per run: number of other agent invocations in the run
    sub_agent_names: list[list[str]]
    unplaced: int              # model and tool calls in no run
    rootless: np.ndarray       # per run: its root span never arrived (rooted at the top span present)

    @property
    def n_runs(self) -> int:
        return len(self.run_ids)


_LAST = np.iinfo(np.int64).max          # (a time that is missing sorts last, as NaN did)


def identify(spans: pd.DataFrame, keys: SpanKeys, kind: np.ndarray, *, agent_name: np.ndarray,
             links: pd.DataFrame | None, session: _Ids | None = None,
             handoff: np.ndarray | None = None) -> RunIdentity:
    """``session``: per span, a conversation or session id (None where it carries none); ``handoff``: per span, the
    agent a handoff hands the run to (None elsewhere)."""
    anchor, how, lost = _anchors(spans, keys, kind, session)
    run, run_ids, seg = _runs_of(spans, keys, anchor, links=links, how=how, session=session)
    n_runs = len(run_ids)
    root_kind = np.full(n_runs, "trace", dtype=object)
    first = seg.drop_duplicates("run")
    first_rows = first["row"].to_numpy()
    root_kind[first["run"].to_numpy()] = ROOT_KINDS[how[first_rows]]
    rootless = np.zeros(n_runs, dtype=bool)
    rootless[first["run"].to_numpy()] = lost[first_rows]
    main, subs, names = _agents(spans, keys, kind, agent_name=agent_name, run=run, n_runs=n_runs, handoff=handoff)
    unplaced = int(((run < 0) & np.isin(kind, CALLS)).sum())
    return RunIdentity(run, run_ids, seg, root_kind, main, subs, names, unplaced, rootless)


def _anchors(spans: pd.DataFrame, keys: SpanKeys, kind: np.ndarray, session: _Ids | None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(per span: the root span of its run, -1 outside runs; per span: how a run rooted there is rooted, as an
    index into ROOT_KINDS; per span: a run rooted there lost its root span)."""
    n = len(kind)
    parent, trace = keys.parent, keys.trace
    own = np.arange(n)
    n_traces = int(trace.max()) + 1 if n else 0
    how = np.full(n, _TRACE, dtype=np.int8)
    lost = np.zeros(n, dtype=bool)
    orch = np.isin(kind, ORCHESTRATION)
    top = highest_marked(parent, orch) if orch.any() else np.full(n, -1)
    holds = np.zeros(n, dtype=bool)
    inside = ((kind == CHAT) | (kind == AGENT)) & (top >= 0)
    holds[top[inside]] = True
    root = orch & (top == own) & ((kind == AGENT) | holds)
    anchor = np.where((top >= 0) & root[np.maximum(top, 0)], top, -1)
    how[root] = np.where(kind[root] == AGENT, _AGENT, _CHAIN)
    if "kind" in spans.columns:
        anchor = _teams(spans, parent, kind, root=root, anchor=anchor, how=how)
    ctop = chain_top(parent)
    orphan = ~keys.true_root[ctop]
    if orphan.any():
        anchor = _orphan_groups(spans, keys, kind, anchor=anchor, root=root, ctop=ctop, orphan=orphan, lost=lost)
    calls = np.isin(kind, CALLS)
    has_run = np.bincount(trace[anchor >= 0], minlength=n_traces) > 0
    has_call = np.bincount(trace[calls], minlength=n_traces) > 0
    whole = has_call & ~has_run
    if whole.any():
        anchor = _whole_traces(keys, trace, whole, ctop=ctop, anchor=anchor, how=how, session=session)
        anchor = _requests(keys, kind, trace, whole, anchor=anchor, how=how, session=session)
    loose = calls & (anchor < 0)
    if loose.any():
        anchor = _loose_calls(keys, loose, anchor, spans)
    return anchor, how, lost


_PRODUCER, _CONSUMER, _SERVER = 4, 5, 2       # OTLP span kinds


def _teams(spans: pd.DataFrame, parent: np.ndarray, kind: np.ndarray, *, root: np.ndarray, anchor: np.ndarray,
           how: np.ndarray) -> np.ndarray:
    """Agents that talk through messages (a runtime's PRODUCER and CONSUMER spans between them and the span of the
    work that started them: AutoGen's teams) are one run, rooted at that span, when it is a span of the
    application (no role, not a request a server received)."""
    span_kind = spans["kind"].to_numpy(dtype=np.int8, na_value=0)
    msg = np.isin(span_kind, (_PRODUCER, _CONSUMER))
    roots = np.flatnonzero(root & (parent >= 0))
    roots = roots[msg[parent[roots]]] if msg.any() else roots[:0]
    if not len(roots):
        return anchor
    team = nearest_marked(parent, ~msg)[roots]
    ok = team >= 0
    ok[ok] = (kind[team[ok]] == OTHER) & (span_kind[team[ok]] != _SERVER)
    roots, team = roots[ok], team[ok]
    if not len(roots):
        return anchor
    lead = pd.Series(team, index=roots)
    joined = np.isin(anchor, roots)
    anchor[joined] = lead.reindex(anchor[joined]).to_numpy()
    anchor[team] = team
    root[roots] = False
    root[team] = True
    how[team] = _CHAIN
    return anchor


def _orphan_groups(spans: pd.DataFrame, keys: SpanKeys, kind: np.ndarray, *, anchor: np.ndarray, root: np.ndarray,
                   ctop: np.ndarray, orphan: np.ndarray, lost: np.ndarray) -> np.ndarray:
    """The spans under a missing parent, grouped by (trace, the missing parent's id): see the module docstring."""
    n = len(kind)
    trace = keys.trace
    missing = spans["parent_span_id"].astype(str).to_numpy()[ctop]
    rows = np.flatnonzero(orphan)
    group = np.full(n, -1, dtype=np.int64)
    group[rows] = pd.factorize(pd.Series(trace[rows]).astype(str).to_numpy() + ":" + missing[rows])[0]
    start = spans["start_ns"].to_numpy(dtype=np.int64, na_value=_LAST)
    end = spans["end_ns"].to_numpy(dtype=np.int64, na_value=0)
    g = pd.DataFrame({"group": group[rows], "row": rows, "trace": trace[rows], "start": start[rows],
                      "end": end[rows]})
    span = g.groupby("group").agg(trace=("trace", "first"), start=("start", "min"), end=("end", "max"))
    # a lost span in the middle of a run: the group lies within the time of exactly one run root of its trace
    roots = pd.DataFrame({"root": np.flatnonzero(root & ~orphan)})
    roots["trace"], roots["start"], roots["end"] = trace[roots["root"]], start[roots["root"]], end[roots["root"]]
    within = span.reset_index().merge(roots, on="trace", suffixes=("", "_r"))
    within = within[(within["start_r"] <= within["start"]) & (within["end"] <= within["end_r"])]
    sole = within.groupby("group")["root"].agg(["size", "first"])
    sole = sole[sole["size"] == 1]["first"]
    joined = sole.reindex(group[rows]).to_numpy()
    take = ~np.isnan(joined)
    anchor[rows[take]] = joined[take].astype(np.int64)
    # a group holding calls that no present agent holds: its agent span was lost; one run, never split
    under_agent = highest_marked(keys.parent, kind == AGENT) >= 0
    free = np.isin(kind, CALLS) & orphan & ~under_agent
    open_groups = np.setdiff1d(np.unique(group[free]), sole.index.to_numpy())
    if len(open_groups):
        tops = g[g["row"].isin(np.flatnonzero(ctop == np.arange(n))) & g["group"].isin(open_groups)]
        first = tops.sort_values(["group", "start", "row"], kind="stable").drop_duplicates("group")
        head = pd.Series(first["row"].to_numpy(), index=first["group"].to_numpy())
        sel = rows[np.isin(group[rows], open_groups)]
        anchor[sel] = head.reindex(group[sel]).to_numpy()
        lost[first["row"].to_numpy()] = True
    # what is left under a missing parent joins its trace's run when the trace has exactly one
    loose = rows[anchor[rows] < 0]
    if len(loose):
        runs = np.unique(anchor[anchor >= 0])
        n_traces = int(trace.max()) + 1
        count = np.bincount(trace[runs], minlength=n_traces)
        only = np.full(n_traces, -1, dtype=np.int64)
        single = runs[count[trace[runs]] == 1]
        only[trace[single]] = single
        anchor[loose] = only[trace[loose]]
    return anchor


def _loose_calls(keys: SpanKeys, loose: np.ndarray, anchor: np.ndarray, spans: pd.DataFrame) -> np.ndarray:
    """Calls outside every run of a trace that has runs (beside two agent runs, a model call no orchestration
    holds): one more run of the trace, rooted at the first of them, holding them and what runs under them. A call
    that is a second root of its trace (no parent: its context was lost) and lies within the time of exactly one
    run of the trace is part of that run instead."""
    top = highest_marked(keys.parent, loose)
    rows = np.flatnonzero((top >= 0) & (anchor < 0))
    start = spans["start_ns"].to_numpy(dtype=np.int64, na_value=_LAST)
    end = spans["end_ns"].to_numpy(dtype=np.int64, na_value=0)
    heads = np.unique(top[rows])
    second = heads[keys.true_root[heads] & (keys.parent[heads] < 0)]
    if len(second):
        runs = np.unique(anchor[anchor >= 0])
        h = pd.DataFrame({"head": second, "trace": keys.trace[second], "start": start[second], "end": end[second]})
        r = pd.DataFrame({"root": runs, "trace": keys.trace[runs], "start_r": start[runs], "end_r": end[runs]})
        within = h.merge(r, on="trace")
        within = within[(within["start_r"] <= within["start"]) & (within["end"] <= within["end_r"])]
        sole = within.groupby("head")["root"].agg(["size", "first"])
        sole = sole[sole["size"] == 1]["first"]
        joined = sole.reindex(top[rows]).to_numpy()
        take = ~np.isnan(joined)
        anchor[rows[take]] = joined[take].astype(np.int64)
        rows = rows[~take]
        if not len(rows):
            return anchor
    heads = np.unique(top[rows])
    first = pd.DataFrame({"trace": keys.trace[heads], "start": start[heads], "row": heads}).sort_values(
        ["trace", "start", "row"], kind="stable").drop_duplicates("trace")
    root = pd.Series(first["row"].to_numpy(), index=first["trace"].to_numpy())
    anchor[rows] = root.reindex(keys.trace[rows]).to_numpy()
    return anchor


def _whole_traces(keys: SpanKeys, trace: np.ndarray, whole: np.ndarray, *, ctop: np.ndarray, anchor: np.ndarray,
                  how: np.ndarray, session: _Ids | None) -> np.ndarray:
    """Traces with calls but no run: one run per trace rooted at its root span (at its first span whose parent is
    missing when the root never arrived), or per session id when its spans carry one."""
    in_whole = whole[trace]
    rows = np.nonzero(in_whole)[0]
    t = trace[rows]
    true_roots = rows[keys.true_root[rows]]
    root_of = pd.Series(true_roots, index=trace[true_roots]).groupby(level=0).first()
    orphan_top = pd.Series(ctop[rows], index=t).groupby(level=0).min()
    per_trace = root_of.reindex(orphan_top.index).fillna(orphan_top).astype(np.int64)
    anchor[rows] = per_trace.reindex(t).to_numpy()
    if session is not None:
        sid = pd.Series(session[rows], index=t).dropna()
        if len(sid):
            named = per_trace.reindex(sid.index.unique()).to_numpy()
            how[named] = _SESSION
    return anchor


def _requests(keys: SpanKeys, kind: np.ndarray, trace: np.ndarray, whole: np.ndarray, *, anchor: np.ndarray,
              how: np.ndarray, session: _Ids | None) -> np.ndarray:
    """In a trace with calls but no orchestration span, the application's own spans right under a transport span
    (an HTTP server span, a consumer) that hold all its calls are its runs, one each: the outermost span below the
    transport holding the calls plays the orchestration's part whatever names it (a span no dialect knows). The
    transport spans are then in no run. A trace where some call sits right under the transport, or whose spans
    carry a session id, keeps its one run per trace (or per session)."""
    parent = keys.parent
    has_parent = parent >= 0
    under_transport = has_parent & (kind[np.maximum(parent, 0)] == TRANSPORT)
    cut = np.where(under_transport, -1, parent)
    top = chain_top(cut)                     # each span's highest ancestor reached without crossing a transport span
    calls = np.flatnonzero(np.isin(kind, CALLS) & whole[trace])
    if not len(calls):
        return anchor
    tops = top[calls]
    app = (kind[tops] == OTHER) & under_transport[tops]
    n_traces = len(whole)
    bad = np.bincount(trace[calls[~app]], minlength=n_traces) > 0
    if session is not None:
        named = np.flatnonzero(pd.notna(session))
        bad[trace[named]] = True
    ok = ~bad[trace[calls]]
    heads = np.unique(tops[ok])
    if not len(heads):
        return anchor
    split = np.zeros(n_traces, dtype=bool)
    split[trace[heads]] = True
    rows = np.flatnonzero(split[trace])
    anchor[rows] = np.where(np.isin(top[rows], heads), top[rows], -1)
    how[heads] = _CHAIN
    return anchor


def _runs_of(spans: pd.DataFrame, keys: SpanKeys, anchor: np.ndarray, *, links: pd.DataFrame | None,
             how: np.ndarray, session: _Ids | None) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
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
    # the run at its trace's own root keeps the trace's id beside runs whose root was lost or never held (a stray
    # call under a missing parent does not rename the run it is not part of); the others are named by their root
    at_root = pd.Series(keys.true_root[anchor_rows], index=roots.index)
    sole_root = at_root & (at_root.groupby(tid_s).transform("sum") == 1)
    fallback = first_trace.where((per_trace == 1) | sole_root, tid_s + ":" + roots["span_id"].astype(str))
    groups_per_task = pd.Series(group, index=roots.index).groupby(task.fillna("")).transform("nunique")
    run_of_root = task.where((groups_per_task == 1) & task.notna(), fallback.astype("string"))
    by_session = how[anchor_rows] == _SESSION
    if by_session.any() and session is not None:
        # a session run's key: its trace's session id (the first its spans carry)
        rows = np.flatnonzero(pd.notna(session))
        first = pd.Series(session[rows], index=keys.trace[rows]).groupby(level=0).first()
        sid = first.reindex(keys.trace[anchor_rows[by_session]]).to_numpy(dtype=object)
        run_of_root[by_session] = pd.array(sid, dtype="string")
    codes, run_ids = pd.factorize(run_of_root.astype(str), sort=True)
    code_of = np.full(len(spans), -1, dtype=np.int64)
    code_of[anchor_rows] = codes
    run = np.where(anchor >= 0, code_of[np.maximum(anchor, 0)], -1)
    seg = pd.DataFrame({"run": codes, "row": anchor_rows, "start": roots["start_ns"].astype("float64").to_numpy(),
                        "end": roots["end_ns"].astype("float64").to_numpy(), "trace_id": tids})
    seg = seg.sort_values(["run", "start"], kind="stable").reset_index(drop=True)
    return run, np.asarray(run_ids, dtype=object), seg


def _agents(spans: pd.DataFrame, keys: SpanKeys, kind: np.ndarray, *, agent_name: np.ndarray, run: np.ndarray,
            n_runs: int, handoff: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, list[list[str]]]:
    """Per run: the main agent (the highest named agent invocation, the earliest of equals; in a run with no named
    agent, the highest agent invocation), and the others: its sub-agents, with the agents used as tools that no
    agent span marks (a framework's graph or chain holding model calls, run inside a tool call). Each run is decided
    on its own spans alone."""
    main = np.full(n_runs, -1, dtype=np.int64)
    subs = np.zeros(n_runs, dtype=np.int64)
    names: list[list[str]] = [[] for _ in range(n_runs)]
    parent = keys.parent
    agent_name = pd.array(agent_name, dtype="string").to_numpy(dtype=object, na_value=None)
    is_agent = (kind == AGENT) & (run >= 0)
    borne = _tool_borne(parent, kind) & (run >= 0)
    if not (is_agent | borne).any() and (handoff is None or not pd.notna(handoff).any()):
        return main, subs, names
    named = is_agent & pd.notna(agent_name)
    # (integers: float64 times of today step by 256 ns)
    start = spans["start_ns"].to_numpy(dtype=np.int64, na_value=_LAST)
    own = np.arange(len(kind))
    has_named = np.zeros(n_runs, dtype=bool)
    has_named[run[named]] = True
    cand = np.nonzero(named & (highest_marked(parent, named) == own))[0] if named.any() else own[:0]
    if not is_agent.any():
        cand = own[:0]
    plain = is_agent & ~has_named[np.maximum(run, 0)]
    if plain.any():
        cand = np.concatenate([cand, np.nonzero(plain & (highest_marked(parent, is_agent) == own))[0]])
    order = pd.DataFrame({"run": run[cand], "start": start[cand], "row": cand}).sort_values(
        ["run", "start"], kind="stable").drop_duplicates("run")
    main[order["run"].to_numpy()] = order["row"].to_numpy()
    # agents above the main one (a framework's workflow span) are not invocations of their own
    mains = np.zeros(len(kind), dtype=bool)
    mains[main[main >= 0]] = True
    above = ancestors_of(parent, mains)
    others = (is_agent & ~above) | borne
    others[main[main >= 0]] = False
    rows = np.nonzero(others)[0]
    span_names = spans["name"].astype(str).to_numpy()
    label = np.where(pd.notna(agent_name[rows]), agent_name[rows], span_names[rows]).astype(object)
    # the main agent invoked again beside itself (a team's turns) is no sub-agent of its own run; inside itself (an
    # agent running another of its kind as a tool) it is
    main_label = np.asarray(agent_name[np.maximum(main, 0)], dtype=object).copy()
    main_label[main < 0] = None
    inside_main = nearest_marked(parent, mains)[rows] >= 0
    again = (label == main_label[run[rows]]) & ~inside_main
    rows, label = rows[~again], label[~again]
    o = pd.DataFrame({"run": run[rows], "start": start[rows], "name": label})
    if handoff is not None:
        o = pd.concat([o, _handed_to(handoff, run, start, o, main_label)], ignore_index=True)
    o = o.sort_values(["run", "start"], kind="stable")
    if len(o):
        subs = np.bincount(o["run"].to_numpy(dtype=np.int64), minlength=n_runs)
        for r, g in o.groupby("run")["name"]:
            names[int(r)] = [str(x) for x in g]
    return main, subs, names


def _handed_to(handoff: np.ndarray, run: np.ndarray, start: np.ndarray, agents: pd.DataFrame,
               main_label: np.ndarray) -> pd.DataFrame:
    """The agents handoffs hand a run to that no agent span of the run names (the handoff is all the spans show of
    them: LlamaIndex's AgentWorkflow), each once, in order."""
    rows = np.flatnonzero(pd.notna(handoff) & (run >= 0))
    h = pd.DataFrame({"run": run[rows], "start": start[rows], "name": handoff[rows].astype(object)})
    known = set(zip(agents["run"].tolist(), agents["name"].tolist(), strict=True))
    keep = [(r, n) not in known and n != main_label[r] for r, n in zip(h["run"].tolist(), h["name"].tolist(),
                                                                        strict=True)]
    return h[keep].drop_duplicates(["run", "name"])


def _tool_borne(parent: np.ndarray, kind: np.ndarray) -> np.ndarray:
    """Agents used as tools that no agent span marks: the top-most chain inside a tool call (no orchestration between
    the two), or a span of the application (no role) right inside it, that holds a model call no agent span between
    them holds."""
    tool = kind == TOOL
    if not tool.any():
        return np.zeros(len(kind), dtype=bool)
    near = nearest_marked(parent, tool | np.isin(kind, ORCHESTRATION))
    cand = (kind == CHAIN) & (near >= 0) & (kind[np.maximum(near, 0)] == TOOL)
    cand |= (kind == OTHER) & (parent >= 0) & tool[np.maximum(parent, 0)]
    if not cand.any():
        return cand
    holder = nearest_marked(parent, cand | (kind == AGENT))
    chats = (kind == CHAT) & (holder >= 0)
    out = np.zeros(len(kind), dtype=bool)
    out[holder[chats]] = True
    return out & cand
