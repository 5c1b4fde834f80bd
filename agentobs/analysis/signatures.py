"""Failure signatures: deterministic rules over the runs table (seed 000's taxonomy and seed 004's).

Each signature is a named rule with what it looks like in a trace, its typical cause, the control that
applies, the reference it comes from, and the evidence that shows it in one run's spans (next to its rule).
A run can match several; its primary signature is the first match in ``CATALOG`` order (most specific
first). Rules use only runs-table columns, so they work on our traces, on other GenAI instrumentations (where
the columns exist) and on transcripts.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..contract import semconv as sc

BUDGET_STEP_STOPS = ("max_steps", "max_tool_calls", "deadline")
BUDGET_SPEND_STOPS = ("max_tokens", "max_usd")
GROWTH_TOKENS_PER_STEP = 500.0       # foreign traces: input grows by this much per model call...
GROWTH_MIN_CALLS = 4                 # ...over at least this many calls
FOREIGN_REPEAT = 3                   # foreign traces: this many back-to-back identical calls


# the span columns the evidence functions below read
EVIDENCE_COLUMNS = ("trace_id", "span_id", "parent_span_id", "name", "start_ns", "run_id", "_run_root", "_kind",
                    "_input_tokens", "_fingerprint", sc.STOP_REASON, sc.TOOL_RESULT_STATUS, sc.RESUMED, sc.TOOL_HELD,
                    sc.TOOL_EFFECT, sc.TOOL_PLAN_STEP)


class Evidence:
    """One run's spans and span events, with helpers that turn them into short report lines."""

    def __init__(self, spans: pd.DataFrame, events: pd.DataFrame | None, run_id: str):
        # only the columns evidence reads: a spans table of many dialects has hundreds, each copied per run
        self.spans = spans.loc[spans["run_id"] == run_id, [c for c in EVIDENCE_COLUMNS if c in spans.columns]]
        s = self.spans
        self.events = events.merge(s[["trace_id", "span_id", "name"]].rename(columns={"name": "span_name"}),
                                   on=["trace_id", "span_id"]) if events is not None and len(events) and len(s) \
            else None
        self.root = s[s["_run_root"]] if "_run_root" in s else s[s["parent_span_id"].isna()]
        self.tools = s[s["_kind"] == "tool"]
        self.lines: list[str] = []

    def span(self, row: pd.Series, extra: str = "") -> None:
        self.lines.append(f"{row['trace_id']}/{row['span_id']} {row['name']}{extra}")

    def spans_where(self, frame: pd.DataFrame, mask: pd.Series, extra: str) -> None:
        for _, r in frame[mask.fillna(False).astype(bool)].iterrows():
            self.span(r, extra)

    def events_named(self, name: str) -> None:
        if self.events is not None:
            for _, e in self.events[self.events["name"] == name].iterrows():
                self.lines.append(f"{e['trace_id']}/{e['span_id']} {e['span_name']} event {name}")

    def column(self, frame: pd.DataFrame, key: str) -> pd.Series:
        return frame[key] if key in frame else pd.Series(pd.NA, index=frame.index, dtype="object")


def _no_evidence(_: Evidence) -> None:
    return None


@dataclass(frozen=True)
class Signature:
    name: str
    reference: str                  # where the taxonomy comes from (a seed of the spec, or agentobs)
    looks_like: str
    cause: str
    control: str
    rule: Callable[[pd.DataFrame], pd.Series]
    evidence: Callable[[Evidence], None] = field(default=_no_evidence)


def _b(s: pd.Series) -> pd.Series:
    return s.fillna(False).astype(bool)


def _stop(df: pd.DataFrame, *names: str) -> pd.Series:
    return _b(df["stop_reason"].isin(names))


def _work_done(df: pd.DataFrame) -> pd.Series:
    """A write that succeeded (agentobs traces); without effect information, any tool call."""
    return _b(df["writes_ok"] > 0).where(df["writes_ok"].notna(), _b(df["tool_calls"] > 0))


def _foreign(df: pd.DataFrame) -> pd.Series:
    return df["source_kind"] != "agentobs"


# -- evidence, one function per signature ----------------------------------------------------------------

def _ev_unknown_outcome(e: Evidence) -> None:
    e.spans_where(e.tools, e.column(e.tools, sc.TOOL_RESULT_STATUS) == "unknown", " result_status=unknown")


def _ev_repeated_call(e: Evidence) -> None:
    fp = e.column(e.tools, "_fingerprint")
    top = fp.value_counts()
    if len(top):
        e.spans_where(e.tools, fp == top.index[0], f" fingerprint={str(top.index[0])[:40]}")
    e.events_named(sc.EV_GUARD)


def _ev_guard(e: Evidence) -> None:
    e.events_named(sc.EV_GUARD)


def _ev_context_growth(e: Evidence) -> None:
    e.events_named(sc.EV_GUARD)
    if "_input_tokens" in e.spans:
        chats = e.spans[(e.spans["_kind"] == "chat") & e.spans["_input_tokens"].notna()].sort_values("start_ns")
        if len(chats):
            e.lines.append("input tokens per model call: " + ", ".join(str(int(x)) for x in chats["_input_tokens"]))


def _ev_tool_outage(e: Evidence) -> None:
    e.events_named(sc.EV_RETRY)
    e.spans_where(e.tools, e.column(e.tools, sc.TOOL_RESULT_STATUS) == "tool_unavailable",
                  " result_status=tool_unavailable")


def _ev_approval_denied(e: Evidence) -> None:
    e.events_named(sc.EV_APPROVAL_DENIED)


def _ev_premature_completion(e: Evidence) -> None:
    e.events_named(sc.EV_FINAL_REFUSED)


def _ev_stale_facts(e: Evidence) -> None:
    e.spans_where(e.root, e.column(e.root, sc.RESUMED) == True, " resumed")  # noqa: E712
    e.spans_where(e.tools, e.column(e.tools, sc.TOOL_HELD) == True, " held write executed first")  # noqa: E712


def _ev_memory_poisoning(e: Evidence) -> None:
    e.spans_where(e.tools, (e.column(e.tools, sc.TOOL_EFFECT) == "write") & e.column(e.tools, sc.TOOL_PLAN_STEP).isna(),
                  " write outside the plan")


CATALOG: list[Signature] = [
    Signature("unknown_outcome", "seed 000", "A write timed out or its response was lost",
              "Lost response from a backend", "Stop; reconcile with the backend; retry only under the same key",
              lambda d: _stop(d, "unknown_outcome") | _b(d["unknown_outcome_writes"] > 0), _ev_unknown_outcome),
    Signature("run_aborted", "agentobs", "An exception ended the run before any stop reason (error.type on the "
              "invoke_agent span, agentobs.status = aborted)", "A crash, an interrupt or a checkpoint conflict",
              "Recover from the last checkpoint (Kernel.recover); fix what error.type names",
              lambda d: _b(d["status"] == "aborted")),
    Signature("memory_poisoning", "seed 000", "Remembered notes were in the view and the run wrote outside its plan",
              "An untrusted or wrong note was stored and acted on",
              "Memory write policy: trusted sources only, scope, expiry; review the note",
              lambda d: _b((d["memory_notes"] > 0) & (d["adhoc_writes"] > 0)), _ev_memory_poisoning),
    Signature("stale_facts", "seed 000", "A resume after a long gap ran a write before any read",
              "Facts saved before the gap no longer match the world", "Re-read before a write after a resume",
              lambda d: _b(d["write_first_after_resume"]), _ev_stale_facts),
    Signature("approval_denied", "seed 004", "A reviewer denied a held call",
              "The action was not acceptable as proposed", "Route to a person with the trace; do not retry the call",
              lambda d: _b(d["approvals_denied"] > 0), _ev_approval_denied),
    Signature("tool_outage", "seed 004", "A tool kept failing after every retry",
              "A backend outage", "Retries with backoff, then replan or escalate; alert on the tool's error rate",
              lambda d: _b(d["tools_exhausted"] > 0), _ev_tool_outage),
    Signature("repeated_call", "seed 000", "One call fingerprint proposed again and again",
              "A missing fact or an ignored error", "max_repeat; copy the needed fields into facts",
              lambda d: (_stop(d, "repeated_call")
                         | (_foreign(d) & _b(d["max_consecutive_identical"] >= FOREIGN_REPEAT))),
              _ev_repeated_call),
    Signature("no_progress", "seed 000", "Consecutive steps changed nothing; the state signature stayed flat",
              "Varied arguments with no effect", "max_stalls; escalate",
              lambda d: _stop(d, "no_progress"), _ev_guard),
    Signature("context_growth", "seed 000", "The model's input kept growing or jumped and stayed high",
              "Full-history replay, large tool results", "A state view; result handles; a token budget",
              lambda d: _stop(d, "max_tokens") | (_foreign(d) & _b(
                  (d["input_growth_per_step"] >= GROWTH_TOKENS_PER_STEP) & (d["model_calls"] >= GROWTH_MIN_CALLS))),
              _ev_context_growth),
    Signature("budget_exhausted", "seed 004", "A token or dollar ceiling stopped a run with work half done",
              "Output reserve or ceiling sized below what the task needs",
              "Size the reserve from p95 reply length; hand off rather than leave the task half done",
              lambda d: _stop(d, *BUDGET_SPEND_STOPS) & _work_done(d), _ev_guard),
    Signature("partial_completion", "seed 000", "A step, tool-call or time budget stopped a run with some work done",
              "A cap too low, slow tools", "Report from plan status; resume or hand off; revisit the cap",
              lambda d: _stop(d, *BUDGET_STEP_STOPS) & _work_done(d), _ev_guard),
    Signature("premature_completion", "seed 000", "A 'completed' answer came while plan steps were open",
              "The model declared done early", "The completion check against the plan",
              lambda d: _b(d["final_refused"] > 0), _ev_premature_completion),
]
BY_NAME = {s.name: s for s in CATALOG}


def classify(runs: pd.DataFrame) -> pd.DataFrame:
    """Adds ``signatures`` (every match) and ``signature`` (the primary one) to a copy of ``runs``."""
    out = runs.copy()
    if out.empty:
        return out
    hits = pd.DataFrame({s.name: s.rule(out).to_numpy(dtype=bool) for s in CATALOG}, index=out.index)
    names = np.array([s.name for s in CATALOG], dtype=object)
    matrix = hits.to_numpy()
    out["signatures"] = [list(names[row]) for row in matrix]
    first = np.where(matrix.any(axis=1), matrix.argmax(axis=1), -1)
    out["signature"] = pd.array([names[i] if i >= 0 else pd.NA for i in first], dtype="string")
    return out


@dataclass
class SignatureRow:
    name: str
    runs: int
    share: float            # of all runs
    failed: int             # of them, runs that did not succeed
    primary: int
    looks_like: str
    control: str
    reference: str
    examples: list[str]


def summarize(runs: pd.DataFrame, examples: int = 3) -> list[SignatureRow]:
    rows = []
    total = max(len(runs), 1)
    for s in CATALOG:
        mask = runs["signatures"].map(lambda xs, n=s.name: n in xs) if len(runs) else pd.Series(dtype=bool)
        hit = runs[mask] if len(runs) else runs
        failed = int((hit["success"] == False).sum()) if len(hit) else 0  # noqa: E712
        rows.append(SignatureRow(s.name, len(hit), len(hit) / total, failed,
                                 int((runs["signature"] == s.name).sum()) if len(runs) else 0,
                                 s.looks_like, s.control, s.reference,
                                 hit.sort_values("run_id")["run_id"].head(examples).tolist()))
    return rows


def evidence(spans: pd.DataFrame, events: pd.DataFrame, run_id: str, signature: str) -> list[str]:
    """The spans (and span events) that show a signature in one run, as short lines for a report: the run's stop
    reason, then what the signature's own evidence function finds."""
    e = Evidence(spans, events, run_id)
    if e.spans.empty:
        return []
    if sc.STOP_REASON in e.root:
        stop = e.root[e.root[sc.STOP_REASON].notna()]
        if len(stop):
            e.span(stop.iloc[-1], f" stop_reason={stop.iloc[-1][sc.STOP_REASON]}")
    BY_NAME[signature].evidence(e)
    return e.lines
