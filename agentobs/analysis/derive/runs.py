"""Spans in, one row per run out (``schema.COLUMNS``).

Spans are classified once by the dialect layer (``dialects``: what each span is, and its model, tokens,
tool, arguments, cost, error), grouped into runs by ``identity`` (agent invocations wherever they sit
in a trace, resumed segments joined), and the table is built from small functions, one per group of
columns (``schema.Column.group``), each returning its columns. Everything is array operations over
the span frame on integer run codes: no Python loop runs per run or per span.

Runs without agentobs attributes are analysed with what they have: steps are model calls, repeats come
from tool-call arguments when the dialect records them, and ``Derivation`` says which columns could not
be derived.
"""
from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ...contract import semconv as sc
from ...contract.digest import digest_arguments
from ...contract.vocabulary import STALE_AFTER_S
from ..spans.dialects import (
    AGENT,
    ANSWER,
    CHAIN,
    CHAT,
    DIALECT_NAMES,
    HANDOFF,
    HANDOFF_TOOL_PREFIXES,
    HANDOFF_TOOLS,
    KIND_NAMES,
    NUMBER_FIELDS,
    OTHER,
    STEP,
    TOOL,
    UNUSABLE_KINDS,
    Normalized,
    normalize,
)
from ..spans.graph import SpanKeys, nearest_marked, span_keys
from ..spans.quality import ROOTLESS_NOTE, Finding, Kind, Note, NoteKind, total
from ..spans.schema import COLUMNS, RUN_COLUMNS, empty_runs
from ..spans.spanset import SpanSet
from ._calls import Calls, call_fields, logical_calls
from ._identity import RunIdentity, identify
from ._kept_elsewhere import finish_reasons, tool_arguments
from ._named_tools import asked_tools
from ._outcomes import Evidence, Outcomes, call_errors, infer
from ._roles import Classified, classified

# columns that need agentobs attributes or what a dialect may not record; the report says for how many
# runs they are missing
NOT_ALWAYS_DERIVABLE = ("stop_reason", "outcome", "tool_calls", "input_tokens", "output_tokens", "tokens", "cost_usd",
                        "active_s", "max_identical_calls", "max_identical_since_progress", "longest_stall",
                        "open_plan_steps", "retries", "tools_exhausted", "approvals_denied", "final_refused",
                        "writes_ok", "adhoc_writes", "memory_notes")


@dataclass(frozen=True, kw_only=True)
class Overflow:
    """An integer value of a run beyond the 64-bit range (a sum of huge token counts), left null."""
    run_id: str
    column: str
    source: str                      # the source of the run's root
    example: str                     # what to say

    @property
    def order(self) -> tuple[str, int]:
        """The order of ``Derivation.overflow``: by run id, then column."""
        return self.run_id, _COLUMN_ORDER[self.column]

    def finding(self) -> Finding:
        return Finding.of(Kind.BAD_VALUE, self.source, example=self.example)


@dataclass(frozen=True, kw_only=True)
class Unusable:
    """Token counts or costs of one field that a dialect read in one source that are negative or no number, left
    unknown."""
    field: str                       # a ``dialects.NUMBER_FIELDS`` name
    what: str                        # what was wrong (a ``dialects.UNUSABLE_KINDS`` name)
    source: str
    count: int
    first: int                       # the first such span's row in the spans (the Dask engine: its input order)
    example: str                     # what to say

    @property
    def order(self) -> tuple[int, int]:
        """The order the local engine counts them in: by field, then what was wrong."""
        return NUMBER_FIELDS.index(self.field), UNUSABLE_KINDS.index(self.what)

    def finding(self) -> Finding:
        return Finding.of(Kind.BAD_VALUE, self.source, self.count, self.example)


@dataclass(kw_only=True)
class Derivation:
    """Which columns could not be derived, and for how many runs; what was read. Filled by ``derive_runs`` (and
    ``label_by_attribute``'s note); two add up (``+``: the Dask engine's partitions)."""
    missing: dict[str, int] = field(default_factory=dict)
    notes: list[Note] = field(default_factory=list)            # shown as sentences (``sentences``)
    dialects: dict[str, int] = field(default_factory=dict)    # spans given a role by each dialect, and by structure
    roles: dict[str, Classified] = field(default_factory=dict)  # per source: by a dialect, by structure, by nothing
    unplaced: int = 0                                          # model and tool calls in no run
    # integer values beyond the 64-bit range, in run id and column order; ``derive_runs`` counts each as
    # ``bad_value``
    overflow: list[Overflow] = field(default_factory=list)
    # token counts and costs the dialects read that are negative or no number, in field, then first-span order;
    # ``derive_runs`` counts each as ``bad_value``
    unusable: list[Unusable] = field(default_factory=list)

    def sentences(self) -> list[str]:
        """The notes in words, in the order they are shown."""
        return [str(n) for n in total(self.notes)]

    def __add__(self, other: Derivation) -> Derivation:
        """The derivation of both inputs: counts added (in the order ``derive_runs`` gives them), roles per source
        (by source), notes added up per kind, the overflows and unusable values of both."""
        missing = Counter(self.missing) + Counter(other.missing)
        dialects = Counter(self.dialects) + Counter(other.dialects)
        roles = dict(self.roles)
        for src, c in other.roles.items():
            roles[src] = roles[src] + c if src in roles else c
        return Derivation(missing={c: missing[c] for c in NOT_ALWAYS_DERIVABLE if missing.get(c)},
                          notes=total([*self.notes, *other.notes]),
                          dialects={str(d): dialects[str(d)] for d in DIALECT_NAMES if dialects.get(str(d))},
                          roles=dict(sorted(roles.items())), unplaced=self.unplaced + other.unplaced,
                          overflow=sorted([*self.overflow, *other.overflow], key=lambda o: o.order),
                          unusable=[*self.unusable, *other.unusable])


# -- reading the span frame -----------------------------------------------------------------------------

def _floats(df: pd.DataFrame, name: str) -> np.ndarray:
    """A numeric column as float64 with NaN for missing (absent columns: all NaN)."""
    if name not in df.columns:
        return np.full(len(df), np.nan)
    return pd.to_numeric(df[name], errors="coerce").astype("Float64").to_numpy(dtype=float, na_value=np.nan)


def _strings(df: pd.DataFrame, name: str) -> np.ndarray:
    """A string column as an object array with None for missing."""
    if name not in df.columns:
        return np.full(len(df), None, dtype=object)
    return df[name].astype(object).where(df[name].notna(), None).to_numpy(dtype=object)


def _flags(df: pd.DataFrame, name: str) -> np.ndarray:
    if name not in df.columns:
        return np.zeros(len(df), dtype=bool)
    return df[name].fillna(False).to_numpy(dtype=bool)


def _fill(primary: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(primary), fallback, primary)


class _Groups:
    """Per-run reductions over the run code of each span (spans outside every run are left out)."""

    def __init__(self, run: np.ndarray, n_runs: int):
        self.run, self.n = run, n_runs
        self.inside = run >= 0

    def _sel(self, mask: np.ndarray | None) -> np.ndarray:
        return self.inside if mask is None else self.inside & mask

    def count(self, mask: np.ndarray | None = None) -> np.ndarray:
        return np.bincount(self.run[self._sel(mask)], minlength=self.n)

    def sum(self, values: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """Sum of the non-NaN values; NaN for runs that have none."""
        sel = self._sel(mask) & ~np.isnan(values)
        total = np.bincount(self.run[sel], weights=values[sel], minlength=self.n)
        has = np.bincount(self.run[sel], minlength=self.n) > 0
        return np.where(has, total, np.nan)

    def minmax(self, values: np.ndarray, how: str) -> np.ndarray:
        sel = self.inside & ~np.isnan(values)
        out = np.full(self.n, np.inf if how == "min" else -np.inf)
        (np.minimum if how == "min" else np.maximum).at(out, self.run[sel], values[sel])
        return np.where(np.isfinite(out), out, np.nan)


@dataclass
class _Ctx:
    """What every column group reads."""
    spans: pd.DataFrame
    links: pd.DataFrame | None
    events: pd.DataFrame | None
    keys: SpanKeys
    norm: Normalized
    calls: Calls
    ident: RunIdentity
    g: _Groups
    last: pd.DataFrame           # the root span of each run's last segment
    start: np.ndarray            # span start / end (ns, float64: for arithmetic)
    end: np.ndarray
    start_ns: np.ndarray         # span start (ns, int64: for ordering; as float64, times of today step by 256 ns)
    stale_after_s: float
    fingerprint: np.ndarray = field(default_factory=lambda: np.array([], dtype=object))   # per tool span

    @property
    def n(self) -> int:
        return self.ident.n_runs

    def kind(self, k: int) -> np.ndarray:
        """Spans of role ``k``; for model and tool calls, the span that stands for each logical call."""
        if k in (CHAT, TOOL):
            return (self.norm.kind == k) & self.calls.row
        return self.norm.kind == k

    @functools.cached_property
    def call_costs(self) -> np.ndarray:
        """Each span's model call cost (``_call_costs``), priced once."""
        return _call_costs(self)

    @functools.cached_property
    def _loops(self) -> tuple[np.ndarray, np.ndarray]:
        """(loop spans whose model calls report no usage of their own but which report their total, those calls).

        A loop is a span that holds several model calls (a framework's loop read as a model call: orchestration
        now); the outermost loop of each agent counts (a loop inside another agent's, an agent used as a tool, is
        its own)."""
        n = len(self.spans)
        loops = self.calls.aggregate & self.g.inside & ~np.isnan(self.norm.fields["input_tokens"])
        if not loops.any():
            return np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        parent, kind = self.keys.parent, self.norm.kind
        above = nearest_marked(parent, loops | (kind == AGENT))
        loops &= ~((above >= 0) & loops[np.maximum(above, 0)])
        chat = (kind == CHAT) & self.calls.row
        owner = nearest_marked(parent, loops | (kind == AGENT))
        owner = np.where((owner >= 0) & loops[np.maximum(owner, 0)], owner, -1)
        owned = chat & (owner >= 0)
        reports = owned & ~np.isnan(self.norm.fields["input_tokens"])
        loud = np.zeros(n, dtype=bool)
        loud[owner[reports]] = True
        silent = loops & ~loud
        return silent, owned & silent[np.maximum(owner, 0)]

    @property
    def silent_loops(self) -> np.ndarray:
        return self._loops[0]

    @property
    def silent_calls(self) -> np.ndarray:
        return self._loops[1]

    @property
    def tools_unrecorded(self) -> np.ndarray:
        """Runs whose model asked for tools (a finish reason) but that hold no tool span: the dialect does not
        record tool calls there (a bare model client instrumented alone), so they cannot be counted."""
        finish = pd.Series(self.norm.fields["finish"], dtype="string").str.contains("tool|function", regex=True)
        asked = self.g.count(self.kind(CHAT) & finish.fillna(False).to_numpy(dtype=bool)) > 0
        answered = self.g.count(self.kind(TOOL) | np.isin(self.norm.kind, (HANDOFF, ANSWER)))
        return asked & (answered == 0) & np.isnan(_floats(self.last, sc.TOOL_CALLS))


# -- column groups ---------------------------------------------------------------------------------------

def _identity(c: _Ctx) -> dict[str, object]:
    seg, n = c.ident.segments, c.n
    trace_lists = _lists_per_run(seg.drop_duplicates(["run", "trace_id"]), "trace_id", n)
    f = c.norm.fields
    main = c.ident.main_agent
    root_rows = seg.drop_duplicates("run", keep="last")["row"].to_numpy()
    names = c.spans["name"].astype(object).to_numpy()
    agent = np.asarray(np.where(main >= 0, f["agent"][np.maximum(main, 0)], None))
    agent = np.asarray(np.where(pd.isna(agent) & (main >= 0), names[np.maximum(main, 0)], agent))
    root_agent = f["agent"][root_rows]
    agent = np.where(pd.isna(agent), root_agent, agent)
    chain_rooted = c.ident.root_kind == "chain"
    agent = np.where(pd.isna(agent) & chain_rooted, names[root_rows], agent)
    return {
        "run_id": pd.array(c.ident.run_ids, dtype="string"),
        "trace_id": c.last["trace_id"].astype("string").to_numpy(),
        "trace_ids": trace_lists,
        "root_span_id": pd.array(c.spans["span_id"].astype(object).to_numpy()[seg.drop_duplicates("run")["row"]
                                                                             .to_numpy()], dtype="string"),
        "task_id": pd.array(_strings(c.last, sc.TASK_ID), dtype="string"),
        "conversation_id": _conversation(c, root_rows),
        "service": pd.array(_strings(c.last, "service_name"), dtype="string"),
        "agent": pd.array(agent, dtype="string"),
        "model": _model(c, root_rows),
        "source_kind": _source_kind(c),
        "dialect": _dialects(c),
        "run_root": pd.array(c.ident.root_kind, dtype="string"),
        "sub_agents": c.ident.sub_agents,
        "sub_agent_names": c.ident.sub_agent_names,
        # from the integer times: as float64, a start within 512 ns of 2**63 ns rounds to 2**63, past datetime64[ns]
        "start": pd.to_datetime(pd.Series(c.start_ns[seg["row"].to_numpy()]).groupby(seg["run"].to_numpy()).min()
                                .reindex(range(n)).to_numpy(), unit="ns", utc=True),
    }


def _conversation(c: _Ctx, root_rows: np.ndarray) -> pd.Series:
    """The conversation or session id of each run's root span (of its last segment), a session run's own."""
    conv = pd.Series(_strings(c.last, sc.CONVERSATION_ID), dtype="string")
    if c.norm.session is not None:
        conv = conv.fillna(pd.Series(c.norm.session[root_rows], dtype="string", index=conv.index))
    session = c.ident.root_kind == "session"
    return pd.array(np.where(session, c.ident.run_ids, conv.to_numpy(dtype=object, na_value=None)), dtype="string")


def _model(c: _Ctx, root_rows: np.ndarray) -> pd.Series:
    model = pd.Series(_strings(c.last, sc.REQUEST_MODEL), dtype="string")
    model = model.fillna(pd.Series(c.norm.fields["model"][root_rows], dtype="string"))
    chat = c.kind(CHAT) & c.g.inside
    if chat.any():
        m = pd.DataFrame({"run": c.ident.run[chat], "model": c.norm.fields["model"][chat]}).dropna()
        if len(m):
            common = m.groupby(["run", "model"]).size().reset_index(name="n").sort_values(
                ["run", "n"], ascending=[True, False], kind="stable").drop_duplicates("run").set_index("run")["model"]
            model = model.fillna(pd.Series(common.reindex(range(c.n)).to_numpy(), dtype="string"))
    return model


def _source_kind(c: _Ctx) -> pd.Series:
    ours = (pd.notna(_strings(c.last, sc.STOP_REASON)) | (_strings(c.last, sc.STATUS) == "aborted"))
    transcript = pd.notna(_strings(c.last, "agentobs.transcript.format"))
    return pd.array(np.where(ours, "agentobs", np.where(transcript, "transcript", "genai")), dtype="string")


def _dialects(c: _Ctx) -> pd.Series:
    d = c.norm.dialect
    sel = c.g.inside & (d >= 0) & np.isin(c.norm.kind, [AGENT, CHAT, TOOL])
    if not sel.any():
        return pd.array([pd.NA] * c.n, dtype="string")
    # each run's dialects as a bit set, then one name per distinct set ("a+b" in registry order)
    bits = np.zeros(c.n, dtype=np.int64)
    np.bitwise_or.at(bits, c.ident.run[sel], np.left_shift(1, d[sel].astype(np.int64)))
    sets, which = np.unique(bits, return_inverse=True)
    names = np.array([pd.NA if not m else "+".join(DIALECT_NAMES[b] for b in range(len(DIALECT_NAMES)) if m >> b & 1)
                      for m in sets.tolist()], dtype=object)
    return pd.array(names[which], dtype="string")


def _lists_per_run(rows: pd.DataFrame, column: str, n: int) -> list[object]:
    """The values of ``column`` per run (0..n-1), in the rows' order; NaN for a run without rows."""
    run = rows["run"].to_numpy()
    order = np.argsort(run, kind="stable")
    values = rows[column].astype(object).to_numpy()[order]
    bounds = np.searchsorted(run[order], np.arange(n + 1))
    starts, ends = bounds[:-1].tolist(), bounds[1:].tolist()
    return [values[a:b].tolist() if b > a else np.nan for a, b in zip(starts, ends, strict=True)]


def _outcome(c: _Ctx) -> dict[str, object]:
    return {"stop_reason": pd.array(_strings(c.last, sc.STOP_REASON), dtype="string"),
            "status": pd.array(_strings(c.last, sc.STATUS), dtype="string"),
            "outcome": pd.array(_strings(c.last, sc.OUTCOME), dtype="string")}


def _counts(c: _Ctx) -> dict[str, object]:
    chat, tool = c.kind(CHAT), c.kind(TOOL)
    model_calls = c.g.count(chat)
    attempts = np.nan_to_num(_floats(c.spans, sc.TOOL_ATTEMPTS), nan=1.0)
    failed = c.norm.fields["error"] & (chat | tool)
    tool_calls = _fill(_floats(c.last, sc.TOOL_CALLS), np.nan_to_num(c.g.sum(attempts, tool), nan=0.0))
    tries = np.zeros(len(c.spans))
    tries[c.calls.rows] = c.calls.attempts
    failures = call_errors(c.norm.kind, c.calls.row, c.norm.fields["error"], run=c.ident.run, start=c.start_ns,
                           n_runs=c.n)
    return {**failures, "model_calls": model_calls,
            "attempts": np.nan_to_num(c.g.sum(tries, chat), nan=0.0),
            "steps": _fill(_floats(c.last, sc.STEPS), model_calls.astype(float)),
            "tool_calls": np.where(c.tools_unrecorded, np.nan, tool_calls),
            "errors": c.g.count(failed),
            "spans": c.g.count()}


def _usage(c: _Ctx) -> dict[str, object]:
    chat, f = c.kind(CHAT), c.norm.fields
    usage_gap, cost_gap = _usage_gaps(c)
    # the model calls of a loop span (a framework's loop read as a model call, holding several: Mastra's "chat"
    # span over its model steps) that report nothing of their own count as the loop's total
    counted, loops = chat & ~c.silent_calls, c.silent_loops

    def total(values: np.ndarray, gap: np.ndarray | None = None) -> np.ndarray:
        got = _plus(c.g.sum(values, counted), c.g.sum(values, loops))
        return got if gap is None else np.where(gap, np.nan, got)
    tin, tout = total(f["input_tokens"], usage_gap), total(f["output_tokens"], usage_gap)
    summed = np.where(np.isnan(tin), np.nan, _zero_nan(tin) + _zero_nan(tout))
    return {"input_tokens": tin, "output_tokens": tout,
            "tokens": _fill(_floats(c.last, sc.TOKENS), summed),
            "cache_read_tokens": total(f["cache_read_tokens"]),
            "cache_creation_tokens": total(f["cache_creation_tokens"]),
            "reasoning_tokens": total(f["reasoning_tokens"]),
            "cost_usd": _fill(_floats(c.last, sc.COST_USD), total(c.call_costs, cost_gap))}


def _plus(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a + b, where NaN is nothing unless both are."""
    return np.where(np.isnan(a) & np.isnan(b), np.nan, _zero_nan(a) + _zero_nan(b))


def _zero_nan(a: np.ndarray) -> np.ndarray:
    """NaN as 0, and an infinite sum kept infinite (``np.nan_to_num`` would make it the largest float)."""
    return np.where(np.isnan(a), 0.0, a)


def _usage_gaps(c: _Ctx) -> tuple[np.ndarray, np.ndarray]:
    """Per run: (a model call that was answered reported no usage, a model call that used tokens has no cost).

    A sum over the calls that did report would be a lower bound shown as the total (a third of the truth when two
    calls of three report nothing), so such a run's tokens, or its cost, are left unknown instead; a call that
    failed is not expected to report usage, and the calls of a loop that reports their total are counted by it. A
    total the run's root records (agentobs, transcripts) still counts."""
    chat, f = c.kind(CHAT) & ~c.silent_calls, c.norm.fields
    failed = f["error"]
    no_usage = chat & ~failed & np.isnan(f["input_tokens"])
    no_cost = chat & np.isnan(c.call_costs) & (~failed | ~np.isnan(f["input_tokens"]))
    loops = c.silent_loops
    no_cost |= loops & np.isnan(c.call_costs)
    return c.g.count(no_usage) > 0, c.g.count(no_cost) > 0


def _one_span_notes(c: _Ctx, der: Derivation, out: pd.DataFrame) -> None:
    """The note on runs that are a lone call in a trace of its own (counted per run, so that the notes of parts of
    an input add up to the whole's)."""
    spans = out["spans"].to_numpy(dtype=float, na_value=np.nan)
    calls = out["model_calls"].to_numpy(dtype=float, na_value=0) + out["tool_calls"].to_numpy(dtype=float, na_value=0)
    lone = (spans == 1) & (calls >= 1) & (out["run_root"].astype(str).to_numpy() == "trace")
    if lone.any():
        der.notes.append(Note(kind=NoteKind.ONE_SPAN_TRACES, runs=int(lone.sum())))


def _usage_notes(c: _Ctx, der: Derivation, out: pd.DataFrame) -> None:
    """The notes that say which totals were left unknown because some calls reported, or cost, nothing."""
    usage_gap, cost_gap = _usage_gaps(c)
    left_tokens = usage_gap & out["tokens"].isna().to_numpy()
    left_cost = cost_gap & out["cost_usd"].isna().to_numpy() & ~left_tokens
    if left_tokens.any():
        der.notes.append(Note(kind=NoteKind.NO_TOKEN_USAGE, runs=int(left_tokens.sum())))
    if left_cost.any():
        der.notes.append(Note(kind=NoteKind.NOT_PRICED, runs=int(left_cost.sum())))


def _call_costs(c: _Ctx) -> np.ndarray:
    """Each model call's cost: recorded by its dialect, else priced with genai-prices (``analysis.pricing``) at
    the time the call started. Input tokens include the cache tokens (GenAI conventions); missing output tokens
    count as 0."""
    f = c.norm.fields
    cost = f["cost"].copy()
    missing = (c.kind(CHAT) | c.silent_loops) & np.isnan(cost) & pd.notna(f["model"]) & ~np.isnan(f["input_tokens"])
    if missing.any():
        from .pricing import price_calls
        cost[missing] = price_calls(f["model"][missing], f["provider"][missing], f["input_tokens"][missing],
                                    output_tokens=np.nan_to_num(f["output_tokens"][missing]),
                                    cache_read_tokens=f["cache_read_tokens"][missing],
                                    cache_creation_tokens=f["cache_creation_tokens"][missing], at_ns=c.start[missing])
    return cost


def _timing(c: _Ctx) -> dict[str, object]:
    dur = np.clip(c.end - c.start, 0, None) / 1e9
    return {"active_s": _fill(_floats(c.last, sc.ELAPSED_S), c.g.sum(dur, c.kind(CHAT) | c.kind(TOOL))),
            "wall_s": (c.g.minmax(c.end, "max") - c.g.minmax(c.start, "min")) / 1e9}


def _fingerprints(c: _Ctx, tool: np.ndarray) -> np.ndarray:
    """(tool, arguments) fingerprints: agentobs' digest, else the contract's digest of the recorded arguments
    (parsed when JSON, so spacing and key order do not matter), once per distinct (tool, arguments) pair."""
    digest = _strings(c.spans, sc.TOOL_ARGS_DIGEST)[tool]
    args = c.norm.fields["args"][tool]
    need = pd.isna(digest) & pd.notna(args)
    if need.any():
        digest = digest.copy()
        names = c.norm.fields["tool"][tool][need]
        unnamed = pd.isna(names)
        if unnamed.any():                 # the span's name stands in for a missing tool name
            names[unnamed] = c.spans["name"].iloc[np.flatnonzero(tool)[need][unnamed]].astype(object).to_numpy()
        # factorized apart and paired by code: no fixed-width copy of every argument string (as wide as the
        # longest one), and each distinct pair is digested once
        name_codes, name_uniq = pd.factorize(_texts(names))
        arg_codes, arg_uniq = pd.factorize(_texts(args[need]))
        width = max(len(arg_uniq), 1)
        codes, pairs = pd.factorize(name_codes.astype(np.int64) * width + arg_codes)
        hashed = np.array([digest_arguments(name_uniq[p // width], arg_uniq[p % width]) for p in pairs.tolist()],
                          dtype=object)
        digest[need] = hashed[codes]
    return digest


def _texts(values: np.ndarray) -> np.ndarray:
    """Each value as text (``str()`` of what is not a string already), as an object array."""
    return np.array([v if type(v) is str else str(v) for v in values.tolist()], dtype=object)


def _repeats(c: _Ctx, der: Derivation) -> dict[str, object]:
    n = c.n
    tool = c.kind(TOOL) & c.g.inside
    run = c.ident.run
    cols = ("max_identical_calls", "max_consecutive_identical", "max_identical_since_progress")
    unrecorded = c.tools_unrecorded
    if unrecorded.any():
        der.notes.append(Note(kind=NoteKind.TOOLS_UNRECORDED, runs=int(unrecorded.sum())))
    if not tool.any():
        # no tool calls at all: every model call moved the conversation on (the same answer as for a run without
        # tool calls among runs with some: a run's figures never depend on the other runs read with it)
        none = (np.array([], dtype=run.dtype), np.array([], dtype=c.start_ns.dtype), np.array([], dtype=bool))
        return {**{k: np.where(unrecorded, np.nan, 0.0) for k in cols}, "longest_stall": _stalls(c, none)}
    t = pd.DataFrame({"run": run[tool], "start": c.start_ns[tool], "parent": c.keys.parent[tool],
                      "fp": c.fingerprint[tool]})
    known = t["fp"].notna().to_numpy()
    runs_with = np.zeros(n, dtype=bool)
    runs_with[t["run"].to_numpy()[known]] = True
    runs_without = np.zeros(n, dtype=bool)
    runs_without[t["run"].to_numpy()[~known]] = True
    runs_without &= ~runs_with
    if runs_without.any():
        der.notes.append(Note(kind=NoteKind.NO_TOOL_ARGUMENTS, runs=int(runs_without.sum())))
    t = t[known].sort_values(["run", "start"], kind="stable").reset_index(drop=True)
    t["fpc"] = pd.factorize(t["fp"])[0]
    out: dict[str, object] = {}
    counts = t.groupby(["run", "fpc"]).size()
    out["max_identical_calls"] = _per_run(counts.groupby(level=0).max(), n)
    fpc, r = t["fpc"].to_numpy(), t["run"].to_numpy()
    same = np.zeros(len(t), dtype=bool)
    same[1:] = (fpc[1:] == fpc[:-1]) & (r[1:] == r[:-1])
    block = np.cumsum(~same)
    consec = pd.Series(1, index=pd.MultiIndex.from_arrays([r, block])).groupby(level=[0, 1]).size()
    out["max_consecutive_identical"] = _per_run(consec.groupby(level=0).max(), n)
    # progress windows: agentobs step progress; otherwise "a call with arguments not seen before in the run"
    step = c.kind(STEP) & c.g.inside
    window = np.full(len(t), np.nan)
    if step.any() and sc.STEP_PROGRESS in c.spans:
        st = pd.DataFrame({"run": run[step], "row": np.nonzero(step)[0], "start": c.start_ns[step],
                           "progress": _flags(c.spans, sc.STEP_PROGRESS)[step].astype(np.int64)})
        st = st.sort_values(["run", "start"], kind="stable")
        # a tool span belongs to the window opened by the progress of the steps before its own
        st["window"] = st.groupby("run")["progress"].cumsum() - st["progress"]
        by_row = pd.Series(st["window"].to_numpy(), index=st["row"].to_numpy())
        window = by_row.reindex(t["parent"].to_numpy()).to_numpy(dtype=float)
    new_fp = ~pd.DataFrame({"r": r, "f": fpc}).duplicated().to_numpy()
    alt = pd.Series(new_fp.astype(np.int64)).groupby(r).cumsum().to_numpy()
    window = np.where(np.isnan(window), alt, window)
    since = pd.Series(1, index=pd.MultiIndex.from_arrays([r, window, fpc])).groupby(level=[0, 1, 2]).size()
    out["max_identical_since_progress"] = _per_run(since.groupby(level=0).max(), n)
    has_tools = c.g.count(tool) > 0
    for k in cols:
        vals = np.where(has_tools, np.asarray(out[k], dtype=float), 0.0)
        out[k] = np.where(runs_without | unrecorded, np.nan, vals)
    out["longest_stall"] = _stalls(c, (r, t["start"].to_numpy(), new_fp))
    return out


def _per_run(s: pd.Series, n: int) -> np.ndarray:
    return s.reindex(range(n)).to_numpy(dtype=float)


def _stalls(c: _Ctx, calls: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    n, run = c.n, c.ident.run
    step = c.kind(STEP) & c.g.inside
    ours = np.full(n, np.nan)
    if step.any() and sc.STEP_STALLS in c.spans:
        ours = pd.Series(_floats(c.spans, sc.STEP_STALLS)[step]).groupby(run[step]).max().reindex(range(n)).to_numpy()
    chat = c.kind(CHAT) & c.g.inside
    foreign = np.full(n, np.nan)
    if chat.any():
        # other traces: consecutive model calls whose tool calls all repeated earlier ones
        r, t_start, new = calls
        m = pd.DataFrame({"run": run[chat], "start": c.start_ns[chat]}).sort_values("start", kind="stable")
        tt = pd.DataFrame({"run": r, "start": t_start, "new": new}).sort_values("start", kind="stable")
        merged = pd.merge_asof(tt, m.rename(columns={"start": "chat_start"}), left_on="start",
                               right_on="chat_start", by="run", direction="backward")
        newer = merged.groupby(["run", "chat_start"])["new"].any()
        m = m.set_index(["run", "start"])
        # as the guards count (agentobs.guards): a model call that called no new tool made no progress (a retry of
        # a reply that failed validation, say), unless it is the run's last (the answer: no stall is checked after
        # it). Counted as progress here, max_stalls emitted from it stopped the runs it came from.
        progress = newer.reindex(m.index).fillna(False).to_numpy(dtype=bool)
        m = m.reset_index().assign(progress=progress).sort_values(["run", "start"], kind="stable")
        mr = m["run"].to_numpy()
        last = np.append(mr[1:] != mr[:-1], True)
        m.loc[last, "progress"] = True
        prog = m["progress"].to_numpy(dtype=bool)
        grp = pd.Series(prog.astype(np.int64)).groupby(mr).cumsum().to_numpy()
        stall = pd.Series((~prog).astype(np.int64)).groupby([mr, grp]).cumsum()
        foreign = stall.groupby(mr).max().reindex(range(n)).to_numpy(dtype=float)
    return np.where(np.isnan(ours), foreign, ours)


def _growth(c: _Ctx) -> dict[str, object]:
    tin = c.norm.fields["input_tokens"]
    mask = c.kind(CHAT) & c.g.inside & ~np.isnan(tin)
    if not mask.any():
        return {"input_growth_per_step": np.full(c.n, np.nan), "max_input_tokens": np.full(c.n, np.nan)}
    d = pd.DataFrame({"run": c.ident.run[mask], "start": c.start_ns[mask], "y": tin[mask]}).sort_values(
        ["run", "start"], kind="stable")
    d["x"] = d.groupby("run").cumcount().astype("float64")
    d["xy"], d["xx"] = d["x"] * d["y"], d["x"] * d["x"]
    s = d.groupby("run")[["x", "y", "xy", "xx"]].sum()
    k = d.groupby("run").size().astype("float64")
    denom = k * s["xx"] - s["x"] ** 2
    slope = (k * s["xy"] - s["x"] * s["y"]) / denom.where(denom != 0)
    return {"input_growth_per_step": slope.reindex(range(c.n)).to_numpy(dtype=float),
            "max_input_tokens": d.groupby("run")["y"].max().reindex(range(c.n)).to_numpy(dtype=float)}


def _errors(c: _Ctx) -> dict[str, object]:
    mask = c.norm.fields["error"] & (c.kind(CHAT) | c.kind(TOOL)) & c.g.inside
    out = pd.Series(pd.NA, index=range(c.n), dtype="string")
    if mask.any():
        rows = np.nonzero(mask)[0]
        e = pd.DataFrame({"run": c.ident.run[rows], "start": c.start_ns[rows], "row": rows}).sort_values(
            ["run", "start"], kind="stable").drop_duplicates("run")
        sub = c.spans.iloc[e["row"].to_numpy()]
        etype = pd.Series(c.norm.fields["error_type"][e["row"].to_numpy()], index=sub.index, dtype="string")
        etype = etype.fillna(pd.Series(_strings(sub, sc.TOOL_RESULT_STATUS), index=sub.index, dtype="string"))
        etype = etype.fillna(sub["status_message"].astype("string"))
        label = sub["name"].astype(str).to_numpy() + ": " + etype.fillna("error").astype(str).to_numpy()
        out.iloc[e["run"].to_numpy()] = label
    return {"first_error": out}


def _agentobs(c: _Ctx) -> dict[str, object]:
    """Columns only our own traces can fill (plan, retries, approvals, writes): null for the others."""
    n, tool, g = c.n, c.kind(TOOL), c.g
    kind = _source_kind(c).to_numpy(dtype=object)
    ours, other = kind == "agentobs", kind == "genai"
    status = _strings(c.spans, sc.TOOL_RESULT_STATUS)
    extra = np.zeros(len(c.spans))               # other traces: a call's attempts beyond its first
    extra[c.calls.rows] = c.calls.attempts - 1
    retried = np.nan_to_num(g.sum(extra, c.kind(CHAT) | tool), nan=0.0)
    out: dict[str, object] = {
        "open_plan_steps": _floats(c.last, sc.PLAN_OPEN_STEPS),
        "unknown_outcome_writes": _fill(_floats(c.last, sc.UNKNOWN_WRITES), g.count(tool & (status == "unknown"))),
        "tools_exhausted": np.where(ours, g.count(tool & (status == "tool_unavailable")), np.nan),
        "memory_notes": _floats(c.last, sc.MEMORY_NOTES),
    }
    names, runs = _event_runs(c)
    for col, name in (("retries", sc.EV_RETRY), ("approvals_denied", sc.EV_APPROVAL_DENIED),
                      ("final_refused", sc.EV_FINAL_REFUSED)):
        counts = np.bincount(runs[names == name], minlength=n) if len(names) else np.zeros(n)
        otherwise = retried if col == "retries" else np.full(n, np.nan)
        out[col] = np.where(ours, counts, otherwise)
    out["retries"] = np.where(ours | other, np.asarray(out["retries"], dtype=float), np.nan)
    write = tool & (_strings(c.spans, sc.TOOL_EFFECT) == "write")
    adhoc = write & pd.isna(_strings(c.spans, sc.TOOL_PLAN_STEP)) & ~_flags(c.spans, sc.TOOL_HELD)
    ok_writes = write & (status == "ok") & ~_flags(c.spans, sc.TOOL_REPLAYED)
    out["adhoc_writes"] = np.where(ours, g.count(adhoc), np.nan)
    out["writes_ok"] = np.where(ours, g.count(ok_writes), np.nan)
    return out


def _event_runs(c: _Ctx) -> tuple[np.ndarray, np.ndarray]:
    """(event names, run code of each event) of the events the runs table counts, matched to their span."""
    ev = c.events
    empty = (np.array([], dtype=object), np.array([], dtype=np.int64))
    if ev is None or ev.empty:
        return empty
    names = ev["name"].astype(object).to_numpy()
    wanted = np.isin(names, [sc.EV_RETRY, sc.EV_APPROVAL_DENIED, sc.EV_FINAL_REFUSED])
    if not wanted.any():
        return empty
    sel = ev.loc[wanted, ["trace_id", "span_id"]].astype(str)
    idx = pd.Index(c.spans["trace_id"].astype(str) + ":" + c.spans["span_id"].astype(str))
    pos = idx.get_indexer(sel["trace_id"] + ":" + sel["span_id"])
    run = np.where(pos >= 0, c.ident.run[np.maximum(pos, 0)], -1)
    ok = run >= 0
    return names[wanted][ok], run[ok]


def _segments(c: _Ctx) -> dict[str, object]:
    seg = c.ident.segments.copy()
    n = c.n
    seg["prev_end"] = seg.groupby("run")["end"].shift()
    seg["gap"] = (seg["start"] - seg["prev_end"]) / 1e9
    flag = np.zeros(n, dtype=bool)
    late = seg[seg["gap"] > c.stale_after_s]
    if len(late):
        tool = np.nonzero(c.kind(TOOL))[0]
        t = pd.DataFrame({"row": tool, "trace": c.spans["trace_id"].astype(str).to_numpy()[tool],
                          "start": c.start_ns[tool]})
        t = t[t["trace"].isin(set(late["trace_id"]))].sort_values("start", kind="stable").drop_duplicates("trace")
        rows = t["row"].to_numpy()
        effect = _strings(c.spans, sc.TOOL_EFFECT)[rows]
        first_writes = rows[effect == "write"]
        flag[c.ident.run[first_writes][c.ident.run[first_writes] >= 0]] = True
    return {"resumes": seg.groupby("run").size().reindex(range(n)).to_numpy() - 1,
            "resume_gap_s": seg.groupby("run")["gap"].max().reindex(range(n)).to_numpy(dtype=float),
            "write_first_after_resume": pd.array(flag, dtype="boolean")}


GROUPS: tuple[Callable[[_Ctx], dict[str, object]], ...] = (
    _identity, _outcome, _counts, _usage, _timing, _growth, _errors, _agentobs, _segments)


# -- the table -------------------------------------------------------------------------------------------

def derive_runs(ss: SpanSet, *, stale_after_s: float = STALE_AFTER_S) -> tuple[pd.DataFrame, pd.DataFrame, Derivation]:
    """Returns (runs, spans with ``run_id``, ``_kind``, ``_dialect`` and ``_run_root`` columns, what could not be
    derived)."""
    spans = ss.spans
    der = Derivation()
    if spans.empty:
        return empty_runs(), spans.assign(run_id=pd.Series(dtype="string"), _kind=pd.Series(dtype=object),
                                          _dialect=pd.Series(dtype=object), _run_root=pd.Series(dtype=bool)), der
    keys = ss.keys()                      # computed by the checks, for the same rows in the same order
    spans = spans.reset_index(drop=True)
    norm = normalize(spans)
    asked_tools(spans, keys.parent, norm)
    for name, read in (("args", tool_arguments), ("finish", finish_reasons)):
        have = pd.array(norm.fields[name]).to_numpy(dtype=object, na_value=None)
        found = read(spans, ss.events, norm.kind, have)
        if found is not have:
            norm.fields[name] = pd.array(found, dtype=pd.StringDtype("pyarrow"))
    der.unusable = _unusable(spans, norm.unusable)
    der.roles = classified(spans, norm)
    for u in der.unusable:
        ss.quality.record(u.finding())
    start_ns = spans["start_ns"].to_numpy(dtype=np.int64, na_value=np.iinfo(np.int64).max, copy=True)
    end_ns = spans["end_ns"].to_numpy(dtype=np.int64, na_value=np.iinfo(np.int64).min)
    calls = logical_calls(keys.parent, norm.kind, norm.fields["error"], start=start_ns, end=end_ns,
                          identity=_call_identity(norm, spans["name"].astype(object).to_numpy()),
                          span_kind=spans["kind"].to_numpy(dtype=np.int8, na_value=0) if "kind" in spans else
                          np.zeros(len(spans), np.int8), parent_key=keys.parent_key, reported=_reported(norm),
                          usage=(norm.fields["input_tokens"], norm.fields["output_tokens"]))
    if calls.prep is not None and calls.prep.any():
        norm.kind[calls.prep] = OTHER             # a preparation step of the model call after it
    norm.kind[calls.aggregate] = CHAIN            # a span of a call's role that holds several calls: a loop
    call_fields(calls, norm.fields)
    ident = identify(spans, keys, norm.kind, agent_name=norm.fields["agent"], links=ss.links, session=norm.session,
                     handoff=_handoff_targets(spans, norm))
    der.dialects, der.unplaced = norm.counts, ident.unplaced
    spans["run_id"] = pd.Categorical.from_codes(ident.run, categories=pd.Index(ident.run_ids, dtype="string"))
    spans["_kind"] = KIND_NAMES[norm.kind]
    spans["_dialect"] = DIALECT_NAMES[norm.dialect]
    spans["_call"] = _call_ids(spans, calls)
    spans["_call_row"] = calls.row
    spans["_failed"] = norm.fields["error"]            # (a call's span: whether the call failed, after its retries)
    is_root = np.zeros(len(spans), dtype=bool)
    is_root[ident.segments["row"].to_numpy()] = True
    spans["_run_root"] = is_root
    if ident.n_runs == 0:
        return empty_runs(), spans, der
    last_rows = ident.segments.drop_duplicates("run", keep="last")["row"].to_numpy()
    start = spans["start_ns"].astype("float64").to_numpy(copy=True)
    end = spans["end_ns"].astype("float64").to_numpy(copy=True)
    # a logical call's span spans its first attempt's start to its last attempt's end
    start[calls.rows], end[calls.rows] = calls.start, calls.end
    start_ns[calls.rows] = calls.start
    ctx = _Ctx(spans=spans, links=ss.links, events=ss.events, keys=keys, norm=norm, calls=calls, ident=ident,
               g=_Groups(ident.run, ident.n_runs), last=spans.iloc[last_rows].reset_index(drop=True),
               start=start, end=end, start_ns=start_ns, stale_after_s=stale_after_s)
    tool = ctx.kind(TOOL)
    ctx.fingerprint = np.full(len(spans), None, dtype=object)
    if tool.any():
        ctx.fingerprint[tool] = _fingerprints(ctx, tool)
    spans["_fingerprint"] = pd.array(ctx.fingerprint, dtype="string")
    spans["_input_tokens"] = pd.array(np.where(ctx.kind(CHAT), norm.fields["input_tokens"], np.nan), dtype="Float64")
    cols: dict[str, object] = {}
    for group in GROUPS:
        cols.update(group(ctx))
    cols.update(_repeats(ctx, der))
    out = pd.DataFrame(cols)
    _usage_notes(ctx, der, out)
    _one_span_notes(ctx, der, out)
    out["success"] = pd.array([pd.NA] * ident.n_runs, dtype="boolean")
    out["label_source"] = pd.array([pd.NA] * ident.n_runs, dtype="string")
    _default_labels(out, ctx, der)
    out["signature"] = pd.array([pd.NA] * ident.n_runs, dtype="string")
    out["signatures"] = [[] for _ in range(ident.n_runs)]
    der.overflow = _overflowing(out, ctx.last["source"].astype(str).to_numpy())
    for o in der.overflow:
        ss.quality.record(o.finding())
    der.missing = not_derived(out)
    return _typed(out), spans, der


def not_derived(runs: pd.DataFrame) -> dict[str, int]:
    """``Derivation.missing`` of a runs table: per column that a trace may not let derive, the runs without it."""
    out = {}
    for col in NOT_ALWAYS_DERIVABLE:
        miss = int(pd.isna(runs[col]).sum())
        if miss:
            out[col] = miss
    return out


def _call_ids(spans: pd.DataFrame, calls: Calls) -> pd.Series:
    """Each span's logical call as ``<trace id>:<span id>`` of the span that stands for it (null: no call); built
    in Arrow (a million spans: no Python string each)."""
    ids = [pc.cast(pa.array(spans[c].iloc[calls.rows].astype("string[pyarrow]").array), pa.large_string())
           for c in ("trace_id", "span_id")]
    per_call = pc.binary_join_element_wise(*ids, pa.scalar(":", pa.large_string()))
    joined = pc.take(per_call, pa.array(calls.call, mask=calls.call < 0))
    return pd.Series(pd.array(joined, dtype=pd.StringDtype("pyarrow")), index=spans.index)


_TARGET_KEYS = ("to_agent", "agent_name", "agent", "target", "target_agent")


def _handoff_targets(spans: pd.DataFrame, norm: Normalized) -> np.ndarray:
    """Per handoff span, the agent it hands the run to: in its arguments (``to_agent``, ``agent_name``, ...), else in
    its tool's name (``transfer_to_<agent>``) or its span's (``handoff to <agent>``)."""
    out = np.full(len(spans), None, dtype=object)
    rows = np.flatnonzero(norm.kind == HANDOFF)
    if not len(rows):
        return out
    args = pd.array(norm.fields["args"]).to_numpy(dtype=object, na_value=None)
    tool = pd.array(norm.fields["tool"]).to_numpy(dtype=object, na_value=None)
    names = spans["name"].astype(object).to_numpy()
    for r in rows.tolist():
        named = isinstance(tool[r], str) and tool[r].lower() in HANDOFF_TOOLS      # (transfer_to_agent names no agent)
        out[r] = _target_in(args[r]) or (None if named else _after(tool[r], HANDOFF_TOOL_PREFIXES)) \
            or _after(names[r], ("handoff to ",))
    return out


def _target_in(args: object) -> str | None:
    if not isinstance(args, str) or not args.lstrip().startswith("{"):
        return None
    try:
        obj = json.loads(args)
    except (ValueError, RecursionError):
        return None
    for level in (obj, *(v for v in obj.values() if isinstance(v, dict))) if isinstance(obj, dict) else ():
        found = next((level[k] for k in _TARGET_KEYS if isinstance(level.get(k), str) and level[k]), None)
        if found:
            return str(found)
    return None


def _after(text: object, prefixes: tuple[str, ...]) -> str | None:
    if not isinstance(text, str):
        return None
    return next((text[len(p):] for p in prefixes if text.lower().startswith(p) and len(text) > len(p)), None)


def _reported(norm: Normalized) -> np.ndarray:
    """Spans that record what a model call reports: token usage or a finish reason."""
    f = norm.fields
    return ~np.isnan(f["input_tokens"]) | ~np.isnan(f["output_tokens"]) | pd.notna(pd.array(f["finish"]))


def _call_identity(norm: Normalized, span_names: np.ndarray) -> np.ndarray:
    """What makes two attempts one call: a model call's model, a tool call's tool name and arguments (read on the
    calls' spans only)."""
    out = np.full(len(norm.kind), None, dtype=object)
    rows = np.flatnonzero((norm.kind == CHAT) | (norm.kind == TOOL))
    if not len(rows):
        return out
    f = norm.fields
    model, tool, args = (pd.array(f[k])[rows].to_numpy(dtype=object, na_value=None) for k in ("model", "tool", "args"))
    kind = norm.kind[rows]
    got: np.ndarray = np.asarray(np.where(kind == CHAT, model, None), dtype=object)
    tools = (kind == TOOL) & pd.notna(tool)
    got[tools] = tool[tools]
    unnamed = (kind == TOOL) & pd.isna(tool)                  # (a tool call without a name: by its span's name)
    got[unnamed] = np.asarray(span_names, dtype=object)[rows[unnamed]]
    sel = tools & pd.notna(args)
    got[sel] = [f"{t}\x00{a}" for t, a in zip(tool[sel].tolist(), args[sel].tolist(), strict=True)]
    out[rows] = got
    return out


def _unusable(spans: pd.DataFrame, unusable: dict[tuple[str, str], np.ndarray]) -> list[Unusable]:
    """``Derivation.unusable`` of the rows ``normalize`` found, per field and source, the first span named."""
    out = []
    for (f, what), rows in unusable.items():
        sources = spans["source"].to_numpy()[rows].astype(str)
        said = f"a negative {f}" if what == "negative" else f"{f} that is {what}"
        for src in dict.fromkeys(sources):
            mine = rows[sources == src]
            out.append(Unusable(field=f, what=what, source=str(src), count=len(mine), first=int(mine[0]),
                                example=f"span {spans['span_id'].iloc[int(mine[0])]}: {said} (left unknown)"))
    return out


_INT64_END = 2.0 ** 63
_COLUMN_ORDER = {name: k for k, name in enumerate(RUN_COLUMNS)}


def _overflowing(out: pd.DataFrame, source: np.ndarray) -> list[Overflow]:
    """Makes null the values of integer columns that a 64-bit integer cannot hold (they would wrap around: two
    calls of 2^62 input tokens sum to -2^63), and says which: (run id, column, source of the run's root, example)
    in run id and column order."""
    found: list[Overflow] = []
    ids = out["run_id"].astype(str).to_numpy()
    for name, t in RUN_COLUMNS.items():
        if t != "Int64" or name not in out.columns or out[name].dtype.kind != "f":
            continue
        v = out[name].to_numpy(dtype=float, na_value=np.nan)
        bad = ~np.isnan(v) & ~((v >= -_INT64_END) & (v < _INT64_END))
        if bad.any():
            found += [Overflow(run_id=ids[i], column=name, source=str(source[i]),
                               example=f"run {ids[i]}: {name} {v[i]:.6g} is beyond the 64-bit integer range (left "
                                       "null)") for i in np.flatnonzero(bad).tolist()]
            out[name] = np.where(bad, np.nan, v)
    return sorted(found, key=lambda o: o.order)


def _typed(out: pd.DataFrame) -> pd.DataFrame:
    out = out[[c.name for c in COLUMNS]]
    for name, t in RUN_COLUMNS.items():
        col = out[name]
        if t == "Int64":
            out[name] = pd.array(np.round(col.astype("float64")), dtype="Float64").astype("Int64") \
                if col.dtype.kind == "f" else col.astype("Int64")
        elif t not in ("object", "datetime64[ns, UTC]") and str(col.dtype) != t:
            out[name] = col.astype(t)
    return out


def _default_labels(out: pd.DataFrame, c: _Ctx, der: Derivation) -> None:
    """Our runs by their stop reason, transcripts by their own label, other runs from the evidence in their spans
    (``outcomes``: a framework limit, the last call's error, an exception, a tool request left unanswered, a final
    answer; the root span's status last). A run rooted at the top span of a trace whose root never arrived is
    labelled only by evidence of failure, else left unlabelled and counted in the notes (the process crashed or was
    still running, or the root was lost: its figures may be cut short). Fills ``stop_reason`` (inferred where none
    was recorded), ``stop_reason_source`` and ``last_error``."""
    last, rootless = c.last, c.ident.rootless
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
    transcript = pd.Series(_strings(last, "agentobs.label.success"), index=out.index, dtype="boolean")
    lab = lab.fillna(transcript)
    src = pd.Series(pd.NA, index=out.index, dtype="string")
    src[ours] = "stop_reason"
    src[transcript.notna().to_numpy() & ~ours] = "transcript"
    rest = (lab.isna().to_numpy() & ~ours & transcript.isna().to_numpy())
    o = infer(_evidence(c))
    lab[rest] = (~o.failed).array[rest]
    src[rest] = o.source[rest]
    cut_short = rest & rootless & lab.isna().to_numpy()
    if cut_short.any():
        der.notes.append(Note(kind=NoteKind.ROOTLESS, runs=int(cut_short.sum())))
    out["success"] = lab
    out["label_source"] = src
    _stop_reasons(out, c, o, ours=ours, transcript=transcript.notna().to_numpy() & ~ours, rest=rest)


# a transcript's termination reason (tau2's) as a stop reason
_TERMINATIONS = {"user_stop": "done", "agent_stop": "done", "max_steps": "max_steps", "too_many_errors": "tool_error",
                 "agent_error": "exception", "user_error": "exception"}


def _stop_reasons(out: pd.DataFrame, c: _Ctx, o: Outcomes, *, ours: np.ndarray, transcript: np.ndarray,
                  rest: np.ndarray) -> None:
    """``stop_reason``: recorded (our kernel, a guard), a transcript's termination, else inferred;
    ``stop_reason_source`` says which (``inferred:<evidence>``); ``last_error``: what ended a failed run."""
    stop = out["stop_reason"].to_numpy(dtype=object, na_value=None).copy()
    source = np.full(len(out), None, dtype=object)
    kernel = (c.g.count(c.kind(STEP)) > 0) | out["open_plan_steps"].notna().to_numpy()
    source[ours & pd.notna(stop)] = np.where(kernel, "kernel", "guard")[ours & pd.notna(stop)]
    term = pd.Series(_strings(c.last, "agentobs.transcript.termination")).map(_TERMINATIONS).to_numpy(dtype=object)
    said = transcript & pd.isna(stop) & pd.notna(term)
    stop[said], source[said] = term[said], "transcript"
    mine = rest & pd.notna(o.stop)
    stop[mine] = o.stop[mine]
    source[mine] = np.array([f"inferred:{s}" for s in o.source[mine]], dtype=object)
    out["stop_reason"] = pd.array(stop, dtype="string")
    out["stop_reason_source"] = pd.array(source, dtype="string")
    names = c.spans["name"].astype(object).to_numpy()
    failed = out["success"].eq(False).fillna(False).to_numpy(dtype=bool)
    # what ended a failed run: the evidence that decided it failed; for a run labelled otherwise (ours, a
    # transcript, a labels file), the last error in it, if any
    row = np.where(rest & (o.failed.fillna(False).to_numpy(dtype=bool)), o.row, -1)
    text = np.asarray(o.said, dtype=object).copy()
    text[row < 0] = None
    errs = o.last_error_row
    other = failed & (row < 0) & (errs >= 0)
    row[other], text[other] = errs[other], o.last_error_said[other]
    has = failed & (row >= 0)
    last_error = np.full(len(out), None, dtype=object)
    last_error[has] = [f"{names[r]}: {s}" if isinstance(s, str) and s else str(names[r])
                       for r, s in zip(row[has], text[has], strict=True)]
    out["last_error"] = pd.array(last_error, dtype="string")


def _evidence(c: _Ctx) -> Evidence:
    f = c.norm.fields
    root_rows = c.ident.segments.drop_duplicates("run", keep="last")["row"].to_numpy()
    status = c.spans["status_code"].to_numpy() if "status_code" in c.spans.columns else np.zeros(len(c.spans))
    return Evidence(run=c.ident.run, n_runs=c.n, kind=c.norm.kind, call_row=c.calls.row, error=f["error"],
                    start=c.start_ns, end=_ends(c), finish=pd.array(f["finish"]).to_numpy(dtype=object, na_value=None),
                    tool=pd.array(f["tool"]).to_numpy(dtype=object, na_value=None), errors_said=_errors_said(c),
                    root_error=status[root_rows] == 2, rootless=c.ident.rootless,
                    roots=np.isin(np.arange(len(c.spans)), root_rows), offers_tools=c.norm.offers_tools,
                    loop_finish=_loop_finish(c))


def _loop_finish(c: _Ctx) -> np.ndarray:
    """The finish reasons of the loop spans (None elsewhere)."""
    finish = pd.array(c.norm.fields["finish"]).to_numpy(dtype=object, na_value=None).copy()
    finish[~c.calls.aggregate] = None
    return finish


def _ends(c: _Ctx) -> np.ndarray:
    end = c.spans["end_ns"].to_numpy(dtype=np.int64, na_value=np.iinfo(np.int64).min, copy=True)
    end[c.calls.rows] = c.calls.end
    return end


def _errors_said(c: _Ctx) -> np.ndarray:
    """Per span, what its error says: its last exception event (``type: message``), else its error type and ERROR
    status message; None for a span with neither."""
    n = len(c.spans)
    out = np.full(n, None, dtype=object)
    f = c.norm.fields
    etype = pd.array(f["error_type"]).to_numpy(dtype=object, na_value=None)
    message = _strings(c.spans, "status_message")
    err = f["error"] | (c.spans["status_code"].to_numpy() == 2 if "status_code" in c.spans.columns else False)
    for i in np.flatnonzero(err & (pd.notna(etype) | pd.notna(message))).tolist():
        parts = [str(p) for p in (etype[i], message[i]) if p is not None and str(p)]
        out[i] = ": ".join(dict.fromkeys(parts))
    ev = c.events
    if ev is not None and not ev.empty and "exception.type" in ev.columns:
        exc = ev[ev["name"].astype(str) == "exception"]
        if len(exc):
            idx = pd.Index(c.spans["trace_id"].astype(str) + ":" + c.spans["span_id"].astype(str))
            pos = idx.get_indexer(exc["trace_id"].astype(str) + ":" + exc["span_id"].astype(str))
            typ = exc["exception.type"].astype(object).to_numpy()
            msg = exc["exception.message"].astype(object).to_numpy() if "exception.message" in exc.columns \
                else np.full(len(exc), None, dtype=object)
            for p, t, m in zip(pos.tolist(), typ.tolist(), msg.tolist(), strict=True):
                if p >= 0:
                    parts = [str(x) for x in (t, m) if x is not None and not (isinstance(x, float) and np.isnan(x))]
                    out[p] = ": ".join(parts) or out[p]
    return out


__all__ = ["NOT_ALWAYS_DERIVABLE", "ROOTLESS_NOTE", "STALE_AFTER_S", "Derivation", "Overflow", "Unusable",
           "derive_runs", "not_derived", "span_keys"]
