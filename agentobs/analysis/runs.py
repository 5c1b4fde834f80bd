"""Spans in, one row per run out (``schema.RUN_COLUMNS``).

A run is a top-level ``invoke_agent`` span or, in a trace without one, the trace root. The
segments of one agentobs task (a suspended run and its resume) are joined by their span link
and share ``agentobs.task.id``. Runs without agentobs attributes are analysed with what they
have: steps are model calls, repeats come from ``gen_ai.tool.call.arguments`` when captured,
and ``Derivation`` says which columns could not be derived.

Everything is computed on integer codes (span keys, run codes) with numpy and pandas group-bys:
a million spans take seconds, not minutes.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..contract import semconv as sc
from .otlp import SpanSet
from .schema import RUN_COLUMNS, empty_runs

STALE_AFTER_S = 900.0
CHAT_OPS = ("chat", "text_completion", "generate_content")
K_OTHER, K_AGENT, K_STEP, K_CHAT, K_TOOL = 0, 1, 2, 3, 4
# columns that need agentobs attributes or captured content; the report says for how many runs they are missing
NOT_ALWAYS_DERIVABLE = ("stop_reason", "outcome", "tokens", "cost_usd", "active_s", "max_identical_calls",
                        "max_identical_since_progress", "longest_stall", "open_plan_steps", "retries",
                        "tools_exhausted", "approvals_denied", "final_refused", "writes_ok", "adhoc_writes",
                        "memory_notes")
KIND_NAMES = np.array(["other", "agent", "step", "chat", "tool"], dtype=object)


@dataclass
class Derivation:
    """Which columns could not be derived, and for how many runs."""
    missing: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _col(df: pd.DataFrame, name: str, dtype: str = "string") -> pd.Series:
    if name in df.columns:
        return df[name]
    return pd.Series(pd.array([pd.NA] * len(df), dtype=dtype), index=df.index)


def _f(df: pd.DataFrame, name: str) -> np.ndarray:
    """A numeric column as float64 with NaN for missing (absent columns: all NaN)."""
    if name not in df.columns:
        return np.full(len(df), np.nan)
    return pd.to_numeric(df[name], errors="coerce").astype("Float64").to_numpy(dtype=float, na_value=np.nan)


def _s(df: pd.DataFrame, name: str) -> np.ndarray:
    """A string column as an object array with None for missing."""
    if name not in df.columns:
        return np.full(len(df), None, dtype=object)
    return df[name].astype(object).where(df[name].notna(), None).to_numpy(dtype=object)


def _b(df: pd.DataFrame, name: str) -> np.ndarray:
    if name not in df.columns:
        return np.zeros(len(df), dtype=bool)
    return df[name].fillna(False).to_numpy(dtype=bool)


# -- identities ------------------------------------------------------------------------------------

@dataclass
class SpanKeys:
    trace: np.ndarray      # int64 code of the trace id
    key: np.ndarray        # int64 code of (trace id, span id)
    parent: np.ndarray     # row index of the parent span, -1 when absent or not in the input
    true_root: np.ndarray  # no parent span id at all (an orphan has one that is not in the input)


def _arrow(s: pd.Series) -> pa.Array:
    arr = pa.array(s.astype("string").array)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return arr.cast(pa.large_string())


def span_keys(spans: pd.DataFrame) -> SpanKeys:
    n = len(spans)
    tid, sid, pid = (_arrow(spans[c]) for c in ("trace_id", "span_id", "parent_span_id"))
    trace = pc.dictionary_encode(tid).indices.to_numpy(zero_copy_only=False).astype(np.int64)
    both = pc.dictionary_encode(pa.concat_arrays([sid, pid]))
    codes = both.indices.to_numpy(zero_copy_only=False)
    width = np.int64(len(both.dictionary) + 1)
    scode = codes[:n].astype(np.int64)
    pvalid = pid.is_valid().to_numpy(zero_copy_only=False)
    pcode = np.where(pvalid, np.nan_to_num(codes[n:].astype(float), nan=-1), -1).astype(np.int64)
    key = trace * width + scode
    pkey = np.where(pcode >= 0, trace * width + pcode, -1)
    index = pd.Index(key)
    if not index.is_unique:
        index = pd.Index(pd.Series(key).drop_duplicates(keep="first").to_numpy())
        rows = pd.Series(np.arange(n)).groupby(key).first().reindex(index).to_numpy()
        parent = np.where(pkey >= 0, index.get_indexer(pkey), -1)
        parent = np.where(parent >= 0, rows[np.maximum(parent, 0)], -1)
    else:
        parent = np.where(pkey >= 0, index.get_indexer(pkey), -1)
    return SpanKeys(trace, key, parent.astype(np.int64), ~pvalid)


def span_kinds(spans: pd.DataFrame) -> np.ndarray:
    op = _s(spans, sc.OPERATION_NAME)
    name = spans["name"].fillna("").astype(str).to_numpy().astype(str)
    out = np.full(len(spans), K_OTHER, dtype=np.int8)
    out[np.isin(op, CHAT_OPS) | np.char.startswith(name, "chat ")] = K_CHAT
    out[(op == sc.OP_EXECUTE_TOOL) | np.char.startswith(name, "execute_tool")] = K_TOOL
    out[name == sc.STEP_SPAN] = K_STEP
    out[(op == sc.OP_INVOKE_AGENT) | np.char.startswith(name, "invoke_agent")] = K_AGENT
    return out


def anchors_of(parent: np.ndarray, is_agent: np.ndarray, trace: np.ndarray, true_root: np.ndarray) -> np.ndarray:
    """For every span, the row of its run anchor: the top-most invoke_agent ancestor, else the top ancestor.

    Spans whose chain ends at an orphan (a parent that is not in the input) and meets no invoke_agent
    are attached to their trace's anchor when the trace has a real one.
    """
    n = len(parent)
    top = np.arange(n)
    agent_top = np.where(is_agent, np.arange(n), -1)
    cur = parent.copy()
    for _ in range(64):
        live = np.nonzero(cur >= 0)[0]
        if len(live) == 0:
            break
        top[live] = cur[live]
        hit = live[is_agent[cur[live]]]
        agent_top[hit] = cur[hit]
        cur[live] = parent[cur[live]]
    anchor = np.where(agent_top >= 0, agent_top, top)
    good = true_root[anchor] | is_agent[anchor]
    if not good.all():
        bad = ~good
        # a trace with a real anchor takes its orphans; a trace without one (its root never arrived,
        # e.g. a crashed segment) becomes one run, anchored at its earliest-listed orphan top
        first = pd.Series(anchor[good], index=trace[good]).groupby(level=0).first()
        own = pd.Series(anchor[bad], index=trace[bad]).groupby(level=0).min()
        mapped = first.reindex(trace[bad]).to_numpy(dtype=float)
        fallback = own.reindex(trace[bad]).to_numpy(dtype=float)
        anchor[bad] = np.where(np.isnan(mapped), fallback, mapped).astype(np.int64)
    return anchor


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


# -- the runs table ----------------------------------------------------------------------------------

class _Groups:
    """Per-run reductions over an integer run code per row."""

    def __init__(self, run: np.ndarray, n_runs: int):
        self.run, self.n = run, n_runs

    def count(self, mask: np.ndarray | None = None) -> np.ndarray:
        r = self.run if mask is None else self.run[mask]
        return np.bincount(r, minlength=self.n)

    def sum(self, values: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """Sum of the non-NaN values; NaN for runs that have none."""
        r, v = (self.run, values) if mask is None else (self.run[mask], values[mask])
        ok = ~np.isnan(v)
        total = np.bincount(r[ok], weights=v[ok], minlength=self.n)
        has = np.bincount(r[ok], minlength=self.n) > 0
        return np.where(has, total, np.nan)

    def reduce(self, values: np.ndarray, how: str, mask: np.ndarray | None = None) -> np.ndarray:
        r, v = (self.run, values) if mask is None else (self.run[mask], values[mask])
        s = pd.Series(v).groupby(r).agg(how)
        return s.reindex(range(self.n)).to_numpy(dtype=float)


def derive_runs(ss: SpanSet, *, stale_after_s: float = STALE_AFTER_S) -> tuple[pd.DataFrame, pd.DataFrame, Derivation]:
    """Returns (runs, spans with ``run_id`` and ``_kind`` columns, what could not be derived)."""
    spans = ss.spans
    der = Derivation()
    if spans.empty:
        return empty_runs(), spans.assign(run_id=pd.Series(dtype="string"), _kind=pd.Series(dtype=object)), der
    spans = spans.reset_index(drop=True)
    keys = span_keys(spans)
    kind = span_kinds(spans)
    anchor = anchors_of(keys.parent, kind == K_AGENT, keys.trace, keys.true_root)
    anchor_rows = np.unique(anchor)
    anchors = spans.iloc[anchor_rows]
    group = _link_groups(anchors, ss.links)
    task = _col(anchors, sc.TASK_ID).astype("string")
    tids = anchors["trace_id"].astype(str)
    first_trace = tids.groupby(group).transform("first")
    per_trace = tids.groupby(tids).transform("size")
    fallback = first_trace.where(per_trace == 1, tids + ":" + anchors["span_id"].astype(str))
    groups_per_task = pd.Series(group, index=anchors.index).groupby(task.fillna("")).transform("nunique")
    run_of_anchor = task.where((groups_per_task == 1) & task.notna(), fallback.astype("string"))
    codes, run_ids = pd.factorize(run_of_anchor.astype(str), sort=True)
    n_runs = len(run_ids)
    anchor_code = np.full(len(spans), -1, dtype=np.int64)
    anchor_code[anchor_rows] = codes
    run = anchor_code[anchor]
    spans["run_id"] = pd.Categorical.from_codes(run, categories=pd.Index(run_ids, dtype="string"))
    spans["_kind"] = KIND_NAMES[kind]
    g = _Groups(run, n_runs)

    # segments, first and last per run
    seg = pd.DataFrame({"run": codes, "row": anchor_rows, "start": anchors["start_ns"].astype("float64").to_numpy(),
                        "end": anchors["end_ns"].astype("float64").to_numpy(),
                        "trace_id": anchors["trace_id"].astype(str).to_numpy()})
    seg = seg.sort_values(["run", "start"], kind="stable")
    last = spans.iloc[seg.groupby("run")["row"].last().to_numpy()].reset_index(drop=True)
    first_start = seg.groupby("run")["start"].first().to_numpy()
    uniq = seg.drop_duplicates(["run", "trace_id"])
    trace_lists = [[t] for t in uniq.drop_duplicates("run").set_index("run")["trace_id"].reindex(range(n_runs))]
    multi = uniq[uniq.duplicated("run", keep=False)]
    for r, ts in multi.groupby("run")["trace_id"]:         # only resumed runs have several segments
        trace_lists[int(r)] = list(ts)

    out = pd.DataFrame({"run_id": pd.array(run_ids, dtype="string")})
    out["trace_id"] = last["trace_id"].astype("string")
    out["trace_ids"] = trace_lists
    out["task_id"] = _col(last, sc.TASK_ID).astype("string")
    out["conversation_id"] = _col(last, sc.CONVERSATION_ID).astype("string")
    out["service"] = last["service_name"].astype("string")
    out["agent"] = _col(last, sc.AGENT_NAME).astype("string")
    chat = kind == K_CHAT
    tool = kind == K_TOOL
    model = _col(last, sc.REQUEST_MODEL).astype("string")
    if chat.any() and sc.REQUEST_MODEL in spans:
        m = pd.DataFrame({"run": run[chat], "model": _s(spans, sc.REQUEST_MODEL)[chat]}).dropna()
        if len(m):
            common = m.groupby(["run", "model"]).size().reset_index(name="n").sort_values(
                ["run", "n"], ascending=[True, False], kind="stable").drop_duplicates("run").set_index("run")["model"]
            model = model.fillna(pd.Series(common.reindex(range(n_runs)).to_numpy(), dtype="string"))
    out["model"] = model
    # ours: a stop reason, or an agentobs status without one (a run aborted by an exception)
    is_ours = (_col(last, sc.STOP_REASON).notna() | (_col(last, sc.STATUS) == "aborted").fillna(False)).to_numpy()
    is_transcript = _col(last, "agentobs.transcript.format").notna().to_numpy()
    out["source_kind"] = pd.array(np.where(is_ours, "agentobs", np.where(is_transcript, "transcript", "genai")),
                                  dtype="string")
    out["start"] = pd.to_datetime(first_start, unit="ns", utc=True)
    out["stop_reason"] = _col(last, sc.STOP_REASON).astype("string")
    out["status"] = _col(last, sc.STATUS).astype("string")
    out["outcome"] = _col(last, sc.OUTCOME).astype("string")

    out["model_calls"] = g.count(chat)
    out["steps"] = _fill(_f(last, sc.STEPS), out["model_calls"].to_numpy(float))
    attempts = np.nan_to_num(_f(spans, sc.TOOL_ATTEMPTS), nan=1.0)
    out["tool_calls"] = _fill(_f(last, sc.TOOL_CALLS), np.nan_to_num(g.sum(attempts, tool), nan=0.0))
    tin, tout = _f(spans, sc.USAGE_INPUT_TOKENS), _f(spans, sc.USAGE_OUTPUT_TOKENS)
    out["input_tokens"] = g.sum(tin, chat)
    out["output_tokens"] = g.sum(tout, chat)
    summed = np.where(np.isnan(out["input_tokens"]), np.nan,
                      np.nan_to_num(out["input_tokens"].to_numpy(float)) + np.nan_to_num(out["output_tokens"]))
    out["tokens"] = _fill(_f(last, sc.TOKENS), summed)
    out["cost_usd"] = _fill(_f(last, sc.COST_USD), _call_costs(spans, g, chat))
    dur = np.clip((spans["end_ns"].astype("float64") - spans["start_ns"].astype("float64")).to_numpy(), 0, None) / 1e9
    out["active_s"] = _fill(_f(last, sc.ELAPSED_S), g.sum(dur, chat | tool))
    start = spans["start_ns"].astype("float64").to_numpy()
    end = spans["end_ns"].astype("float64").to_numpy()
    out["wall_s"] = (g.reduce(end, "max") - g.reduce(start, "min")) / 1e9
    _repeats(out, spans, run, kind, keys, g, der)
    _growth(out, tin, start, run, chat, n_runs)
    out["first_error"] = _first_error(spans, run, kind, start, n_runs)
    out["open_plan_steps"] = _f(last, sc.PLAN_OPEN_STEPS)
    status = _s(spans, sc.TOOL_RESULT_STATUS)
    out["unknown_outcome_writes"] = _fill(_f(last, sc.UNKNOWN_WRITES), g.count(tool & (status == "unknown")))
    ours = out["source_kind"].to_numpy() == "agentobs"
    ev = _event_runs(ss.events, spans, keys, run)
    for col, name in (("retries", sc.EV_RETRY), ("approvals_denied", sc.EV_APPROVAL_DENIED),
                      ("final_refused", sc.EV_FINAL_REFUSED)):
        counts = np.bincount(ev[1][ev[0] == name], minlength=n_runs) if len(ev[0]) else np.zeros(n_runs)
        out[col] = np.where(ours, counts, np.nan)
    out["tools_exhausted"] = np.where(ours, g.count(tool & (status == "tool_unavailable")), np.nan)
    _segments(out, seg, spans, run, kind, stale_after_s, n_runs)
    out["memory_notes"] = _f(last, sc.MEMORY_NOTES)
    write = tool & (_s(spans, sc.TOOL_EFFECT) == "write")
    adhoc = write & (_s(spans, sc.TOOL_PLAN_STEP) == None) & ~_b(spans, sc.TOOL_HELD)  # noqa: E711
    ok_writes = write & (status == "ok") & ~_b(spans, sc.TOOL_REPLAYED)
    out["adhoc_writes"] = np.where(ours, g.count(adhoc), np.nan)
    out["writes_ok"] = np.where(ours, g.count(ok_writes), np.nan)
    out["spans"] = g.count()
    out["success"] = pd.array([pd.NA] * n_runs, dtype="boolean")
    out["label_source"] = pd.array([pd.NA] * n_runs, dtype="string")
    _default_labels(out, last)
    out["signature"] = pd.array([pd.NA] * n_runs, dtype="string")
    out["signatures"] = [[] for _ in range(n_runs)]
    for c in NOT_ALWAYS_DERIVABLE:
        miss = int(pd.isna(out[c]).sum())
        if miss:
            der.missing[c] = miss
    out = out[list(RUN_COLUMNS)]
    for c, t in RUN_COLUMNS.items():
        if t == "Int64":
            out[c] = pd.array(np.round(out[c].astype("float64")), dtype="Float64").astype("Int64") \
                if out[c].dtype.kind == "f" else out[c].astype("Int64")
        elif t not in ("object", "datetime64[ns, UTC]") and str(out[c].dtype) != t:
            out[c] = out[c].astype(t)
    return out, spans, der


def _fill(primary: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(primary), fallback, primary)


def _call_costs(spans: pd.DataFrame, g: _Groups, chat: np.ndarray) -> np.ndarray:
    per_call = _f(spans, sc.CALL_COST_USD)
    missing = chat & np.isnan(per_call)
    if missing.any() and sc.REQUEST_MODEL in spans and sc.USAGE_INPUT_TOKENS in spans:
        per_call = per_call.copy()
        per_call[missing] = _price(spans.loc[missing])
    return g.sum(per_call, chat)


def _price(chats: pd.DataFrame) -> np.ndarray:
    """Prices model calls that carry no cost (other instrumentations) with genai-prices, by model and tokens."""
    from ..contract.pricing import Prices
    prices = Prices()
    model = _s(chats, sc.REQUEST_MODEL)
    tin, tout = _f(chats, sc.USAGE_INPUT_TOKENS), _f(chats, sc.USAGE_OUTPUT_TOKENS)
    frame = pd.DataFrame({"m": model, "i": tin, "o": np.nan_to_num(tout)})
    ok = frame["m"].notna() & frame["i"].notna()
    out = np.full(len(chats), np.nan)
    for (m, i, o), idx in frame[ok].groupby(["m", "i", "o"]).groups.items():   # one price per distinct call
        c = prices.cost(str(m), None, int(i), int(o))
        if c is not None:
            out[frame.index.get_indexer(idx)] = c
    return out


def _fingerprints(spans: pd.DataFrame, tool: np.ndarray) -> np.ndarray:
    digest = _s(spans, sc.TOOL_ARGS_DIGEST)[tool]
    if sc.TOOL_CALL_ARGUMENTS in spans:
        args = _s(spans, sc.TOOL_CALL_ARGUMENTS)[tool]
        names = _s(spans, sc.TOOL_NAME)[tool]
        need = np.array([d is None and a is not None for d, a in zip(digest, args)], dtype=bool)
        if need.any():
            digest = digest.copy()
            digest[need] = [hashlib.sha256(f"{n}\x00{a}".encode()).hexdigest()[:10]
                            for n, a in zip(names[need], args[need])]
    return digest


def _repeats(out: pd.DataFrame, spans: pd.DataFrame, run: np.ndarray, kind: np.ndarray, keys: SpanKeys,
             g: _Groups, der: Derivation) -> None:
    n_runs = g.n
    tool = kind == K_TOOL
    zeros = np.zeros(n_runs)
    if not tool.any():
        for c in ("max_identical_calls", "max_consecutive_identical", "max_identical_since_progress"):
            out[c] = zeros
        out["longest_stall"] = _stall_series(spans, run, kind, None, n_runs)
        return
    fp_all = _fingerprints(spans, tool)
    t = pd.DataFrame({"run": run[tool], "start": spans["start_ns"].astype("float64").to_numpy()[tool],
                      "parent": keys.parent[tool], "fp": fp_all})
    known = t["fp"].notna().to_numpy()
    runs_with = np.zeros(n_runs, dtype=bool)
    runs_with[t["run"].to_numpy()[known]] = True
    runs_without = np.zeros(n_runs, dtype=bool)
    runs_without[t["run"].to_numpy()[~known]] = True
    runs_without &= ~runs_with
    if runs_without.any():
        der.notes.append(f"{int(runs_without.sum())} runs record neither agentobs.tool.args_digest nor captured "
                         "gen_ai.tool.call.arguments: repeated calls could not be counted for them")
    t = t[known].sort_values(["run", "start"], kind="stable").reset_index(drop=True)
    t["fpc"] = pd.factorize(t["fp"])[0]
    counts = t.groupby(["run", "fpc"]).size()
    out["max_identical_calls"] = _per_run(counts.groupby(level=0).max(), n_runs)
    fpc, r = t["fpc"].to_numpy(), t["run"].to_numpy()
    same = np.zeros(len(t), dtype=bool)
    same[1:] = (fpc[1:] == fpc[:-1]) & (r[1:] == r[:-1])
    block = np.cumsum(~same)
    consec = pd.Series(1, index=pd.MultiIndex.from_arrays([r, block])).groupby(level=[0, 1]).size()
    out["max_consecutive_identical"] = _per_run(consec.groupby(level=0).max(), n_runs)
    # progress windows: agentobs step progress; otherwise "a call with arguments not seen before in the run"
    step = kind == K_STEP
    window = np.full(len(t), np.nan)
    if step.any() and sc.STEP_PROGRESS in spans:
        st = pd.DataFrame({"run": run[step], "row": np.nonzero(step)[0],
                           "start": spans["start_ns"].astype("float64").to_numpy()[step],
                           "progress": _b(spans, sc.STEP_PROGRESS)[step].astype(np.int64)})
        st = st.sort_values(["run", "start"], kind="stable")
        # a tool span belongs to the window opened by the progress of the steps before its own
        st["window"] = st.groupby("run")["progress"].cumsum() - st["progress"]
        by_row = pd.Series(st["window"].to_numpy(), index=st["row"].to_numpy())
        window = by_row.reindex(t["parent"].to_numpy()).to_numpy(dtype=float)
    new_fp = ~pd.DataFrame({"r": r, "f": fpc}).duplicated().to_numpy()
    alt = pd.Series(new_fp.astype(np.int64)).groupby(r).cumsum().to_numpy()
    window = np.where(np.isnan(window), alt, window)
    since = pd.Series(1, index=pd.MultiIndex.from_arrays([r, window, fpc])).groupby(level=[0, 1, 2]).size()
    out["max_identical_since_progress"] = _per_run(since.groupby(level=0).max(), n_runs)
    has_tools = g.count(tool) > 0
    for c in ("max_identical_calls", "max_consecutive_identical", "max_identical_since_progress"):
        vals = out[c].to_numpy(dtype=float)
        vals = np.where(has_tools, vals, 0.0)
        out[c] = np.where(runs_without, np.nan, vals)
    out["longest_stall"] = _stall_series(spans, run, kind, (r, t["start"].to_numpy(), new_fp), n_runs)


def _per_run(s: pd.Series, n_runs: int) -> np.ndarray:
    return s.reindex(range(n_runs)).to_numpy(dtype=float)


def _stall_series(spans: pd.DataFrame, run: np.ndarray, kind: np.ndarray, calls: tuple | None,
                  n_runs: int) -> np.ndarray:
    step = kind == K_STEP
    ours = np.full(n_runs, np.nan)
    if step.any() and sc.STEP_STALLS in spans:
        ours = pd.Series(_f(spans, sc.STEP_STALLS)[step]).groupby(run[step]).max().reindex(range(n_runs)).to_numpy()
    chat = kind == K_CHAT
    foreign = np.full(n_runs, np.nan)
    if calls is not None and chat.any():
        # other traces: consecutive model calls whose tool calls all repeated earlier ones
        r, t_start, new = calls
        c = pd.DataFrame({"run": run[chat], "start": spans["start_ns"].astype("float64").to_numpy()[chat]})
        c = c.sort_values("start", kind="stable")
        tt = pd.DataFrame({"run": r, "start": t_start, "new": new}).sort_values("start", kind="stable")
        merged = pd.merge_asof(tt, c.rename(columns={"start": "chat_start"}), left_on="start",
                               right_on="chat_start", by="run", direction="backward")
        newer = merged.groupby(["run", "chat_start"])["new"].any()
        c = c.set_index(["run", "start"])
        # a model call that called no tool spoke to the user: the conversation moved on
        progress = newer.reindex(c.index).fillna(True).to_numpy(dtype=bool)
        c = c.reset_index().assign(progress=progress).sort_values(["run", "start"], kind="stable")
        prog = c["progress"].to_numpy(dtype=bool)
        cr = c["run"].to_numpy()
        grp = pd.Series(prog.astype(np.int64)).groupby(cr).cumsum().to_numpy()
        stall = pd.Series((~prog).astype(np.int64)).groupby([cr, grp]).cumsum()
        foreign = stall.groupby(cr).max().reindex(range(n_runs)).to_numpy(dtype=float)
    return np.where(np.isnan(ours), foreign, ours)


def _growth(out: pd.DataFrame, tin: np.ndarray, start: np.ndarray, run: np.ndarray, chat: np.ndarray,
            n_runs: int) -> None:
    mask = chat & ~np.isnan(tin)
    if not mask.any():
        out["input_growth_per_step"] = np.nan
        out["max_input_tokens"] = np.nan
        return
    c = pd.DataFrame({"run": run[mask], "start": start[mask], "y": tin[mask]}).sort_values(["run", "start"],
                                                                                            kind="stable")
    c["x"] = c.groupby("run").cumcount().astype("float64")
    c["xy"], c["xx"] = c["x"] * c["y"], c["x"] * c["x"]
    s = c.groupby("run")[["x", "y", "xy", "xx"]].sum()
    n = c.groupby("run").size().astype("float64")
    denom = n * s["xx"] - s["x"] ** 2
    slope = (n * s["xy"] - s["x"] * s["y"]) / denom.where(denom != 0)
    out["input_growth_per_step"] = slope.reindex(range(n_runs)).to_numpy(dtype=float)
    out["max_input_tokens"] = c.groupby("run")["y"].max().reindex(range(n_runs)).to_numpy(dtype=float)


def _first_error(spans: pd.DataFrame, run: np.ndarray, kind: np.ndarray, start: np.ndarray,
                 n_runs: int) -> pd.Series:
    mask = (spans["status_code"].to_numpy() == 2) & ((kind == K_CHAT) | (kind == K_TOOL))
    out = pd.Series(pd.NA, index=range(n_runs), dtype="string")
    if not mask.any():
        return out
    rows = np.nonzero(mask)[0]
    e = pd.DataFrame({"run": run[rows], "start": start[rows], "row": rows}).sort_values(["run", "start"],
                                                                                       kind="stable")
    e = e.drop_duplicates("run")
    sub = spans.iloc[e["row"].to_numpy()]
    etype = _col(sub, sc.ERROR_TYPE).fillna(_col(sub, sc.TOOL_RESULT_STATUS)).fillna(sub["status_message"])
    label = sub["name"].astype(str).to_numpy() + ": " + etype.fillna("error").astype(str).to_numpy()
    out.iloc[e["run"].to_numpy()] = label
    return out


def _event_runs(events: pd.DataFrame, spans: pd.DataFrame, keys: SpanKeys, run: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """(event names, run code of each event), events matched to their span."""
    if events is None or events.empty:
        return np.array([], dtype=object), np.array([], dtype=np.int64)
    names = events["name"].astype(object).to_numpy()
    interesting = np.isin(names, [sc.EV_RETRY, sc.EV_APPROVAL_DENIED, sc.EV_FINAL_REFUSED])
    if not interesting.any():
        return np.array([], dtype=object), np.array([], dtype=np.int64)
    ev = events.loc[interesting, ["trace_id", "span_id"]].astype(str)
    idx = pd.Index(spans["trace_id"].astype(str) + ":" + spans["span_id"].astype(str)) \
        if len(ev) > 0 else pd.Index([])
    pos = idx.get_indexer(ev["trace_id"] + ":" + ev["span_id"])
    ok = pos >= 0
    return names[interesting][ok], run[pos[ok]]


def _segments(out: pd.DataFrame, seg: pd.DataFrame, spans: pd.DataFrame, run: np.ndarray, kind: np.ndarray,
              stale_after_s: float, n_runs: int) -> None:
    seg = seg.copy()
    seg["prev_end"] = seg.groupby("run")["end"].shift()
    seg["gap"] = (seg["start"] - seg["prev_end"]) / 1e9
    out["resumes"] = seg.groupby("run").size().reindex(range(n_runs)).to_numpy() - 1
    out["resume_gap_s"] = seg.groupby("run")["gap"].max().reindex(range(n_runs)).to_numpy(dtype=float)
    flag = np.zeros(n_runs, dtype=bool)
    late = seg[seg["gap"] > stale_after_s]
    if len(late):
        tool = np.nonzero(kind == K_TOOL)[0]
        tr = spans["trace_id"].astype(str).to_numpy()[tool]
        t = pd.DataFrame({"row": tool, "trace": tr, "start": spans["start_ns"].astype("float64").to_numpy()[tool]})
        t = t[t["trace"].isin(set(late["trace_id"]))].sort_values("start", kind="stable").drop_duplicates("trace")
        effect = _s(spans, sc.TOOL_EFFECT)[t["row"].to_numpy()]
        flag[run[t["row"].to_numpy()[effect == "write"]]] = True
    out["write_first_after_resume"] = pd.array(flag, dtype="boolean")


def _default_labels(out: pd.DataFrame, last: pd.DataFrame) -> None:
    ours = (out["source_kind"] == "agentobs").to_numpy()
    done = ((out["stop_reason"] == "done") & (out["outcome"].fillna("completed") == "completed")).fillna(False)
    suspended = (out["status"] == "suspended").fillna(False).to_numpy(dtype=bool)
    # an aborted segment whose task has a later segment in the input was recovered: like a suspended
    # segment, it is part of a task that went on, not an outcome; an aborted run never recovered failed
    aborted = (out["status"] == "aborted").fillna(False).to_numpy(dtype=bool)
    later = out.groupby("task_id", dropna=True)["start"].transform("max")
    recovered = aborted & (later > out["start"]).fillna(False).to_numpy(dtype=bool)
    lab = pd.Series(pd.NA, index=out.index, dtype="boolean")
    lab[ours] = done.to_numpy(dtype=bool)[ours]
    lab[ours & (suspended | recovered)] = pd.NA
    transcript = _col(last, "agentobs.label.success", "boolean").astype("boolean")
    transcript.index = out.index
    lab = lab.fillna(transcript)
    src = pd.Series(pd.NA, index=out.index, dtype="string")
    src[ours] = "stop_reason"
    src[transcript.notna().to_numpy() & ~ours] = "transcript"
    rest = (lab.isna().to_numpy() & ~ours & transcript.isna().to_numpy())
    status_ok = pd.Series(last["status_code"].to_numpy() != 2, index=out.index)
    lab[rest] = status_ok[rest]
    src[rest] = "span_status"
    out["success"] = lab
    out["label_source"] = src
