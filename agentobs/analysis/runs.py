"""Spans in, one row per run out (``schema.RUN_COLUMNS``).

A run is a top-level ``invoke_agent`` span or, in a trace without one, the trace root; the
segments of one agentobs task (a suspended run and its resume) share ``agentobs.task.id``
and form one run. Runs without agentobs attributes are analysed with what they have:
steps are model calls, repeats come from ``gen_ai.tool.call.arguments`` when captured, and
``Derivation.missing`` says which columns could not be derived.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..telemetry import semconv as sc
from .otlp import SpanSet
from .schema import RUN_COLUMNS, empty_runs

STALE_AFTER_S = 900.0
CHAT_OPS = ("chat", "text_completion", "generate_content")


@dataclass
class Derivation:
    """Which columns could not be derived, and for how many runs."""
    missing: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _col(df: pd.DataFrame, name: str, dtype: str = "string") -> pd.Series:
    if name in df.columns:
        return df[name]
    return pd.Series(pd.array([pd.NA] * len(df), dtype=dtype), index=df.index)


def assign_runs(spans: pd.DataFrame) -> pd.Series:
    """For every span, the row index of its run anchor (-1: no anchor reachable)."""
    n = len(spans)
    if n == 0:
        return pd.Series(np.array([], dtype=np.int64))
    ids = spans["trace_id"].astype(str).to_numpy(dtype=object) + ":" + spans["span_id"].astype(str).to_numpy(dtype=object)
    parent_key = spans["trace_id"].astype(str).to_numpy(dtype=object) + ":" + \
        spans["parent_span_id"].fillna("").astype(str).to_numpy(dtype=object)
    index = pd.Index(ids)
    if not index.is_unique:
        index = pd.Index(pd.Series(ids).drop_duplicates(keep="first"))
    parent = np.asarray(pd.Index(index).get_indexer(parent_key), dtype=np.int64)
    if len(index) != n:
        parent = np.where(parent >= 0, parent, -1)
    op = _col(spans, sc.OPERATION_NAME).fillna("").astype(str).to_numpy()
    names = spans["name"].fillna("").astype(str).to_numpy()
    is_agent = (op == sc.OP_INVOKE_AGENT) | np.char.startswith(names.astype(str), "invoke_agent")
    # top-most invoke_agent ancestor (or self); without one, the top-most reachable ancestor
    top = np.arange(n)
    agent_top = np.where(is_agent, np.arange(n), -1)
    cur = parent.copy()
    for _ in range(64):
        live = cur >= 0
        if not live.any():
            break
        idx = np.nonzero(live)[0]
        top[idx] = cur[idx]
        agent_hit = idx[is_agent[cur[idx]]]
        agent_top[agent_hit] = cur[agent_hit]
        cur[idx] = parent[cur[idx]]
    anchor = np.where(agent_top >= 0, agent_top, top)
    # orphans whose top is not a root: attach to the trace's single anchor when there is one
    is_root = parent < 0
    rootless = ~is_root[anchor] & ~is_agent[anchor]
    if rootless.any():
        tids = spans["trace_id"].astype(str).to_numpy()
        anchors = pd.Series(anchor[~rootless], index=tids[~rootless])
        first = anchors.groupby(level=0).first()
        mapped = first.reindex(tids[rootless]).to_numpy()
        anchor[rootless] = np.where(pd.isna(mapped), anchor[rootless], np.nan_to_num(mapped, nan=-1)).astype(np.int64)
    return pd.Series(anchor, index=spans.index)


def derive_runs(ss: SpanSet, *, stale_after_s: float = STALE_AFTER_S) -> tuple[pd.DataFrame, pd.DataFrame, Derivation]:
    """Returns (runs, spans with a ``run_id`` column, what could not be derived)."""
    spans = ss.spans
    der = Derivation()
    if spans.empty:
        return empty_runs(), spans.assign(run_id=pd.Series(dtype="string")), der
    spans = spans.reset_index(drop=True)
    anchor = assign_runs(spans).to_numpy()
    anchors = spans.iloc[np.unique(anchor)]
    # segments of one task: a resumed segment's root links to the one it resumed (span links); then
    # run id = the task id when that id names one linked group only, else the first segment's trace
    group = _link_groups(anchors, ss.links)
    task = _col(anchors, sc.TASK_ID).astype("string")
    first_trace = anchors["trace_id"].astype(str).groupby(group).transform("first")
    per_trace = anchors.groupby("trace_id", observed=True)["span_id"].transform("size")
    fallback = first_trace.where(per_trace == 1, anchors["trace_id"].astype(str) + ":" + anchors["span_id"].astype(str))
    groups_per_task = pd.Series(group, index=anchors.index).groupby(task.fillna("")).transform("nunique")
    run_of_anchor = task.where((groups_per_task == 1) & task.notna(), fallback.astype("string"))
    seg = pd.DataFrame({"anchor": anchors.index, "run_id": run_of_anchor.to_numpy()})
    spans["run_id"] = pd.Series(pd.array(seg.set_index("anchor")["run_id"].reindex(anchor).to_numpy(),
                                         dtype="string"))
    spans["_anchor"] = anchor
    kind = _kinds(spans)
    spans["_kind"] = kind

    g_anchor = anchors.assign(run_id=run_of_anchor.to_numpy())
    g_anchor = g_anchor.sort_values(["run_id", "start_ns"], kind="stable")
    last = g_anchor.groupby("run_id", sort=True).tail(1).set_index("run_id")
    first = g_anchor.groupby("run_id", sort=True).head(1).set_index("run_id")
    run_index = last.index
    out = pd.DataFrame(index=run_index)
    out["run_id"] = pd.array(run_index, dtype="string")
    out["trace_id"] = last["trace_id"].astype("string")
    out["trace_ids"] = g_anchor.groupby("run_id", sort=True)["trace_id"].agg(lambda s: list(dict.fromkeys(s)))
    out["task_id"] = _col(last, sc.TASK_ID).astype("string")
    out["conversation_id"] = _col(last, sc.CONVERSATION_ID).astype("string")
    out["service"] = last["service_name"].astype("string")
    out["agent"] = _col(last, sc.AGENT_NAME).astype("string")
    chats = spans[kind == "chat"]
    tools = spans[kind == "tool"]
    model = _col(last, sc.REQUEST_MODEL).astype("string")
    if len(chats):
        common = chats.groupby("run_id")[sc.REQUEST_MODEL].agg(_mode) if sc.REQUEST_MODEL in chats else None
        if common is not None:
            model = model.fillna(common.reindex(run_index).astype("string"))
    out["model"] = model
    is_ours = _col(last, sc.STOP_REASON).notna()
    is_transcript = _col(last, "agentobs.transcript.format").notna()
    out["source_kind"] = pd.array(np.where(is_ours, "agentobs", np.where(is_transcript, "transcript", "genai")),
                                  dtype="string")
    out["start"] = pd.to_datetime(first["start_ns"].astype("float64"), unit="ns", utc=True)
    out["stop_reason"] = _col(last, sc.STOP_REASON).astype("string")
    out["status"] = _col(last, sc.STATUS).astype("string")
    out["outcome"] = _col(last, sc.OUTCOME).astype("string")

    n_chat = chats.groupby("run_id").size().reindex(run_index, fill_value=0)
    out["model_calls"] = n_chat.astype("Int64")
    steps_attr = _col(last, sc.STEPS, "Int64").astype("Int64")
    out["steps"] = steps_attr.fillna(out["model_calls"])
    attempts = _col(tools, sc.TOOL_ATTEMPTS, "Int64").fillna(1) if len(tools) else pd.Series(dtype="Int64")
    n_tool = attempts.groupby(tools["run_id"]).sum().reindex(run_index, fill_value=0) if len(tools) else \
        pd.Series(0, index=run_index)
    out["tool_calls"] = _col(last, sc.TOOL_CALLS, "Int64").astype("Int64").fillna(n_tool.astype("Int64"))
    tin = _col(chats, sc.USAGE_INPUT_TOKENS, "Int64")
    tout = _col(chats, sc.USAGE_OUTPUT_TOKENS, "Int64")
    has_usage = tin.notna().groupby(chats["run_id"]).any().reindex(run_index, fill_value=False)
    out["input_tokens"] = tin.groupby(chats["run_id"]).sum(min_count=1).reindex(run_index).astype("Int64")
    out["output_tokens"] = tout.groupby(chats["run_id"]).sum(min_count=1).reindex(run_index).astype("Int64")
    root_tokens = _col(last, sc.TOKENS, "Int64").astype("Int64")
    out["tokens"] = root_tokens.fillna((out["input_tokens"].fillna(0) + out["output_tokens"].fillna(0))
                                       .where(has_usage).astype("Int64"))
    out["cost_usd"] = _cost(last, chats, run_index)
    out["active_s"] = _active(last, chats, tools, run_index)
    start_min = spans.groupby("run_id")["start_ns"].min().reindex(run_index)
    end_max = spans.groupby("run_id")["end_ns"].max().reindex(run_index)
    out["wall_s"] = ((end_max - start_min).astype("Float64") / 1e9).astype("Float64")
    _repeats(out, spans, tools, kind, der)
    _growth(out, chats, run_index)
    out["first_error"] = _first_error(spans, kind, run_index)
    out["open_plan_steps"] = _col(last, sc.PLAN_OPEN_STEPS, "Int64").astype("Int64")
    unknown = (_col(tools, sc.TOOL_RESULT_STATUS) == "unknown").groupby(tools["run_id"]).sum() if len(tools) else None
    out["unknown_outcome_writes"] = _col(last, sc.UNKNOWN_WRITES, "Int64").astype("Int64").fillna(
        unknown.reindex(run_index).astype("Int64") if unknown is not None else pd.NA)
    ev = _events_by_run(ss.events, spans)
    for col, name in (("retries", sc.EV_RETRY), ("approvals_denied", sc.EV_APPROVAL_DENIED),
                      ("final_refused", sc.EV_FINAL_REFUSED)):
        counts = ev[ev["name"] == name].groupby("run_id").size() if len(ev) else pd.Series(dtype="int64")
        out[col] = counts.reindex(run_index, fill_value=0).astype("Int64").where(out["source_kind"] == "agentobs")
    exhausted = (_col(tools, sc.TOOL_RESULT_STATUS) == "tool_unavailable").groupby(tools["run_id"]).sum() \
        if len(tools) else pd.Series(dtype="int64")
    out["tools_exhausted"] = exhausted.reindex(run_index, fill_value=0).astype("Int64").where(
        out["source_kind"] == "agentobs")
    _segments(out, g_anchor, spans, kind, stale_after_s)
    out["memory_notes"] = _col(last, sc.MEMORY_NOTES, "Int64").astype("Int64")
    if len(tools):
        writes = _col(tools, sc.TOOL_EFFECT) == "write"
        adhoc = writes & _col(tools, sc.TOOL_PLAN_STEP).isna() & ~_col(tools, sc.TOOL_HELD, "boolean").fillna(False)
        out["adhoc_writes"] = adhoc.groupby(tools["run_id"]).sum().reindex(run_index, fill_value=0).astype(
            "Int64").where(out["source_kind"] == "agentobs")
        ok = writes & (_col(tools, sc.TOOL_RESULT_STATUS) == "ok") & ~_col(tools, sc.TOOL_REPLAYED, "boolean").fillna(
            False)
        out["writes_ok"] = ok.groupby(tools["run_id"]).sum().reindex(run_index, fill_value=0).astype(
            "Int64").where(out["source_kind"] == "agentobs")
    else:
        out["adhoc_writes"] = pd.array([pd.NA] * len(out), dtype="Int64")
        out["writes_ok"] = pd.array([pd.NA] * len(out), dtype="Int64")
    out["spans"] = spans.groupby("run_id").size().reindex(run_index, fill_value=0).astype("Int64")
    out["success"] = pd.array([pd.NA] * len(out), dtype="boolean")
    out["label_source"] = pd.array([pd.NA] * len(out), dtype="string")
    _default_labels(out, last)
    out["signature"] = pd.array([pd.NA] * len(out), dtype="string")
    out["signatures"] = [[] for _ in range(len(out))]
    for c in ("max_identical_since_progress", "longest_stall", "active_s", "cost_usd", "tokens"):
        miss = int(out[c].isna().sum())
        if miss:
            der.missing[c] = miss
    out = out.reset_index(drop=True)
    out = out[list(RUN_COLUMNS)]
    for c, t in RUN_COLUMNS.items():
        if t not in ("object", "datetime64[ns, UTC]") and str(out[c].dtype) != t:
            out[c] = out[c].astype(t)
    return out, spans.drop(columns=["_anchor"]), der


def _link_groups(anchors: pd.DataFrame, links: pd.DataFrame) -> np.ndarray:
    """Union-find over run anchors joined by span links (a resumed segment links to the suspended one)."""
    n = len(anchors)
    parent = np.arange(n)
    if links is None or links.empty:
        return parent
    pos = pd.Series(np.arange(n), index=pd.MultiIndex.from_arrays([anchors["trace_id"].astype(str),
                                                                    anchors["span_id"].astype(str)]))
    src = pos.reindex(pd.MultiIndex.from_arrays([links["trace_id"].astype(str), links["span_id"].astype(str)]))
    dst = pos.reindex(pd.MultiIndex.from_arrays([links["linked_trace_id"].astype(str),
                                                 links["linked_span_id"].astype(str)]))
    ok = src.notna().to_numpy() & dst.notna().to_numpy()

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    for a, b in zip(src.to_numpy()[ok].astype(int), dst.to_numpy()[ok].astype(int)):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return np.array([find(i) for i in range(n)])


def _mode(s: pd.Series) -> object:
    s = s.dropna()
    return s.value_counts().index[0] if len(s) else pd.NA


def _kinds(spans: pd.DataFrame) -> np.ndarray:
    op = _col(spans, sc.OPERATION_NAME).fillna("").astype(str).to_numpy()
    name = spans["name"].fillna("").astype(str).to_numpy().astype(str)
    out = np.full(len(spans), "other", dtype=object)
    out[np.isin(op, CHAT_OPS) | np.char.startswith(name, "chat ")] = "chat"
    out[(op == sc.OP_EXECUTE_TOOL) | np.char.startswith(name, "execute_tool")] = "tool"
    out[name == sc.STEP_SPAN] = "step"
    out[(op == sc.OP_INVOKE_AGENT) | np.char.startswith(name, "invoke_agent")] = "agent"
    return out


def _cost(last: pd.DataFrame, chats: pd.DataFrame, run_index: pd.Index) -> pd.Series:
    root = _col(last, sc.COST_USD, "Float64").astype("Float64")
    if len(chats):
        per_call = _col(chats, sc.CALL_COST_USD, "Float64").astype("Float64")
        missing = per_call.isna()
        if missing.any() and sc.REQUEST_MODEL in chats and sc.USAGE_INPUT_TOKENS in chats:
            per_call = per_call.copy()
            per_call[missing] = _price(chats.loc[missing])
        summed = per_call.groupby(chats["run_id"]).sum(min_count=1).reindex(run_index)
        root = root.fillna(summed.astype("Float64"))
    return root


def _price(chats: pd.DataFrame) -> pd.Series:
    from ..kernel.pricing import Prices
    prices = Prices()
    keys = chats[[sc.REQUEST_MODEL, sc.USAGE_INPUT_TOKENS]].copy()
    keys["out"] = _col(chats, sc.USAGE_OUTPUT_TOKENS, "Int64")
    vals = []
    for model, tin, tout in keys.itertuples(index=False):
        if pd.isna(model) or pd.isna(tin):
            vals.append(np.nan)
            continue
        c = prices.cost(str(model), None, int(tin), int(0 if pd.isna(tout) else tout))
        vals.append(np.nan if c is None else c)
    return pd.Series(vals, index=chats.index, dtype="Float64")


def _active(last: pd.DataFrame, chats: pd.DataFrame, tools: pd.DataFrame, run_index: pd.Index) -> pd.Series:
    root = _col(last, sc.ELAPSED_S, "Float64").astype("Float64")
    parts = [d for d in (chats, tools) if len(d)]
    if parts:
        both = pd.concat([d[["run_id", "start_ns", "end_ns"]] for d in parts])
        dur = ((both["end_ns"] - both["start_ns"]).clip(lower=0).astype("Float64") / 1e9)
        root = root.fillna(dur.groupby(both["run_id"]).sum().reindex(run_index).astype("Float64"))
    return root


def _fingerprints(tools: pd.DataFrame) -> pd.Series:
    digest = _col(tools, sc.TOOL_ARGS_DIGEST)
    args = _col(tools, sc.TOOL_CALL_ARGUMENTS)
    name = _col(tools, sc.TOOL_NAME).fillna(tools["name"].astype("string"))
    from_args = pd.Series([hashlib.sha256(f"{n}\x00{a}".encode()).hexdigest()[:10] if pd.notna(a) else pd.NA
                           for n, a in zip(name, args)], index=tools.index, dtype="string") \
        if args.notna().any() else pd.Series(pd.NA, index=tools.index, dtype="string")
    return digest.astype("string").fillna(from_args)


def _repeats(out: pd.DataFrame, spans: pd.DataFrame, tools: pd.DataFrame, kind: np.ndarray, der: Derivation) -> None:
    idx = out.index
    if len(tools) == 0:
        for c in ("max_identical_calls", "max_consecutive_identical", "max_identical_since_progress"):
            out[c] = pd.array([0] * len(out), dtype="Int64")
        out["longest_stall"] = _col(out, "_nothing", "Int64")
        _stalls(out, spans, kind)
        return
    t = tools[["run_id", "start_ns", "parent_span_id", "trace_id"]].copy()
    t["fp"] = _fingerprints(tools)
    known = t["fp"].notna()
    runs_without = set(t.loc[~known, "run_id"]) - set(t.loc[known, "run_id"])
    if runs_without:
        der.notes.append(f"{len(runs_without)} runs record neither agentobs.tool.args_digest nor captured "
                         "gen_ai.tool.call.arguments: repeated calls could not be counted for them")
    t = t[known].sort_values(["run_id", "start_ns"], kind="stable")
    counts = t.groupby(["run_id", "fp"]).size()
    out["max_identical_calls"] = counts.groupby(level=0).max().reindex(idx).astype("Int64")
    fp, rid = t["fp"].astype(object).to_numpy(), t["run_id"].astype(object).to_numpy()
    same_as_prev = np.zeros(len(t), dtype=bool)
    same_as_prev[1:] = (fp[1:] == fp[:-1]) & (rid[1:] == rid[:-1])
    block = pd.Series(np.cumsum(~same_as_prev), index=t.index)
    consec = t.groupby(["run_id", block]).size()
    out["max_consecutive_identical"] = consec.groupby(level=0).max().reindex(idx).astype("Int64")
    # progress windows: agentobs step progress; otherwise "a call with arguments not seen before in the run"
    steps = spans[kind == "step"]
    if len(steps) and sc.STEP_PROGRESS in steps:
        st = steps[["run_id", "trace_id", "span_id", "start_ns"]].copy()
        st["progress"] = steps[sc.STEP_PROGRESS].fillna(False).to_numpy(dtype=bool)
        st = st.sort_values(["run_id", "start_ns"], kind="stable")
        st["window"] = st.groupby("run_id")["progress"].cumsum()
        # a tool span belongs to the window opened by the progress of the previous steps
        st["window"] = st.groupby("run_id")["window"].shift(fill_value=0)
        win = t.merge(st[["trace_id", "span_id", "window"]], left_on=["trace_id", "parent_span_id"],
                      right_on=["trace_id", "span_id"], how="left")["window"].to_numpy()
        t["window"] = win
    else:
        t["window"] = np.nan
    new_fp = pd.Series(~t.duplicated(["run_id", "fp"]).to_numpy(dtype=bool), index=t.index)
    alt = new_fp.astype("int64").groupby(t["run_id"]).cumsum()
    t["window"] = t["window"].fillna(alt.astype(float))
    since = t.groupby(["run_id", "window", "fp"]).size()
    out["max_identical_since_progress"] = since.groupby(level=0).max().reindex(idx).astype("Int64")
    if runs_without:
        mask = out.index.isin(list(runs_without))
        for c in ("max_identical_calls", "max_consecutive_identical", "max_identical_since_progress"):
            out.loc[mask, c] = pd.NA
    for c in ("max_identical_calls", "max_consecutive_identical", "max_identical_since_progress"):
        no_tools = ~out.index.isin(tools["run_id"].unique())
        out.loc[no_tools, c] = 0
    _stalls(out, spans, kind, t)


def _stalls(out: pd.DataFrame, spans: pd.DataFrame, kind: np.ndarray, t: pd.DataFrame | None = None) -> None:
    steps = spans[kind == "step"]
    ours = pd.Series(dtype="Int64")
    if len(steps) and sc.STEP_STALLS in steps:
        ours = steps[sc.STEP_STALLS].groupby(steps["run_id"]).max()
    # foreign traces: consecutive model calls that brought no call with new arguments
    foreign = pd.Series(dtype="Int64")
    chats = spans[kind == "chat"]
    if t is not None and len(chats) and len(t):
        c = chats[["run_id", "start_ns"]].sort_values(["run_id", "start_ns"], kind="stable").copy()
        tt = t.assign(new=~t.duplicated(["run_id", "fp"]).to_numpy(dtype=bool))[["run_id", "start_ns", "new"]]
        tt = tt.assign(start_ns=tt["start_ns"].astype("int64")).sort_values("start_ns")
        c = c.assign(start_ns=c["start_ns"].astype("int64")).sort_values("start_ns")
        merged = pd.merge_asof(tt, c.rename(columns={"start_ns": "chat_ns"}), left_on="start_ns", right_on="chat_ns",
                               by="run_id", direction="backward")
        newer = merged.groupby(["run_id", "chat_ns"])["new"].any()
        c = c.set_index(["run_id", "start_ns"])
        c["progress"] = newer.reindex(c.index).fillna(False).astype(bool).to_numpy()
        c = c.reset_index().sort_values(["run_id", "start_ns"], kind="stable")
        prog = pd.Series(c["progress"].to_numpy(dtype=bool), index=c.index)
        grp = prog.astype("int64").groupby(c["run_id"]).cumsum()
        stall_len = (~prog).astype("int64").groupby([c["run_id"], grp]).cumsum()
        foreign = stall_len.groupby(c["run_id"]).max()
    longest = ours.astype("Int64").reindex(out.index)
    out["longest_stall"] = longest.fillna(foreign.astype("Int64").reindex(out.index)).astype("Int64")


def _growth(out: pd.DataFrame, chats: pd.DataFrame, idx: pd.Index) -> None:
    if len(chats) == 0 or sc.USAGE_INPUT_TOKENS not in chats:
        out["input_growth_per_step"] = pd.array([pd.NA] * len(out), dtype="Float64")
        out["max_input_tokens"] = pd.array([pd.NA] * len(out), dtype="Int64")
        return
    c = chats[["run_id", "start_ns"]].copy()
    c["y"] = chats[sc.USAGE_INPUT_TOKENS].astype("float64")
    c = c.dropna(subset=["y"]).sort_values(["run_id", "start_ns"], kind="stable")
    c["x"] = c.groupby("run_id").cumcount().astype("float64")
    c["xy"], c["xx"] = c["x"] * c["y"], c["x"] * c["x"]
    s = c.groupby("run_id")[["x", "y", "xy", "xx"]].sum()
    n = c.groupby("run_id").size().astype("float64")
    denom = n * s["xx"] - s["x"] ** 2
    slope = (n * s["xy"] - s["x"] * s["y"]) / denom.where(denom != 0)
    out["input_growth_per_step"] = slope.reindex(idx).astype("Float64")
    out["max_input_tokens"] = c.groupby("run_id")["y"].max().reindex(idx).astype("Int64")


def _first_error(spans: pd.DataFrame, kind: np.ndarray, idx: pd.Index) -> pd.Series:
    mask = (spans["status_code"] == 2) & np.isin(kind, ["chat", "tool"])
    err = spans[mask]
    if len(err) == 0:
        return pd.Series(pd.NA, index=idx, dtype="string")
    err = err.sort_values(["run_id", "start_ns"], kind="stable").groupby("run_id").head(1)
    etype = _col(err, sc.ERROR_TYPE).fillna(_col(err, sc.TOOL_RESULT_STATUS)).fillna(err["status_message"])
    label = err["name"].astype(str) + ": " + etype.fillna("error").astype(str)
    return pd.Series(label.to_numpy(), index=err["run_id"].to_numpy(), dtype="string").reindex(idx)


def _events_by_run(events: pd.DataFrame, spans: pd.DataFrame) -> pd.DataFrame:
    if events is None or events.empty:
        return pd.DataFrame({"name": pd.Series(dtype="string"), "run_id": pd.Series(dtype="string")})
    key = spans[["trace_id", "span_id", "run_id"]]
    return events[["trace_id", "span_id", "name"]].merge(key, on=["trace_id", "span_id"], how="inner")


def _segments(out: pd.DataFrame, g_anchor: pd.DataFrame, spans: pd.DataFrame, kind: np.ndarray,
              stale_after_s: float) -> None:
    seg = g_anchor[["run_id", "trace_id", "start_ns", "end_ns"]].copy()
    seg["prev_end"] = seg.groupby("run_id")["end_ns"].shift()
    seg["gap_s"] = (seg["start_ns"] - seg["prev_end"]).astype("Float64") / 1e9
    counts = seg.groupby("run_id").size()
    out["resumes"] = (counts - 1).reindex(out.index).astype("Int64")
    out["resume_gap_s"] = seg.groupby("run_id")["gap_s"].max().reindex(out.index).astype("Float64")
    late = seg[seg["gap_s"] > stale_after_s]
    flag = pd.Series(False, index=out.index, dtype="boolean")
    if len(late):
        tools = spans[(kind == "tool")]
        first_tool = tools.sort_values("start_ns", kind="stable").groupby("trace_id").head(1)
        first_tool = first_tool[first_tool["trace_id"].isin(late["trace_id"])]
        writes = first_tool[_col(first_tool, sc.TOOL_EFFECT) == "write"]
        flag[flag.index.isin(writes["run_id"].unique())] = True
    out["write_first_after_resume"] = flag


def _default_labels(out: pd.DataFrame, last: pd.DataFrame) -> None:
    ours = out["source_kind"] == "agentobs"
    done = (out["stop_reason"] == "done") & (out["outcome"].fillna("completed") == "completed")
    suspended = out["status"] == "suspended"
    lab = pd.Series(pd.NA, index=out.index, dtype="boolean")
    lab[ours] = done[ours]
    lab[ours & suspended.fillna(False)] = pd.NA
    transcript = _col(last, "agentobs.label.success", "boolean").astype("boolean")
    lab = lab.fillna(transcript)
    src = pd.Series(pd.NA, index=out.index, dtype="string")
    src[ours] = "stop_reason"
    src[transcript.notna() & ~ours] = "transcript"
    rest = lab.isna() & ~ours & transcript.isna()
    status_ok = (last["status_code"] != 2).reindex(out.index)
    lab[rest] = status_ok[rest]
    src[rest] = "span_status"
    out["success"] = lab
    out["label_source"] = src
