"""Failure signatures: deterministic rules over the runs table (seed 000's taxonomy and seed 004's).

Each signature is a named rule with what it looks like in a trace, its typical cause, the control that
applies, the reference it comes from, and the evidence that shows it in one run's spans (next to its rule).
A run can match several; its primary signature is the first match in ``CATALOG`` order (most specific
first). Rules use only runs-table columns, so they work on our traces, on other GenAI instrumentations (where
the columns exist) and on transcripts.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...contract import semconv as sc

BUDGET_STEP_STOPS = ("max_steps", "max_tool_calls", "deadline")
BUDGET_COUNT_STOPS = ("max_steps", "max_tool_calls")
BUDGET_SPEND_STOPS = ("max_tokens", "max_usd")
FOREIGN_REPEAT = 3                   # foreign traces: this many identical calls back to back, or since progress
FOREIGN_STALLS = 3                   # foreign traces: this many model calls in a row that called no new tool
GROWTH_MIN_SUCCESSFUL = 20           # successful runs needed to measure a run's input against theirs


# the span columns the evidence functions below read
EVIDENCE_COLUMNS = ("trace_id", "span_id", "parent_span_id", "name", "start_ns", "run_id", "_run_root", "_kind",
                    "_input_tokens", "_fingerprint", "_call_row", "_failed", sc.STOP_REASON, sc.TOOL_RESULT_STATUS,
                    sc.RESUMED, sc.TOOL_HELD,
                    sc.TOOL_EFFECT, sc.TOOL_PLAN_STEP)


class Evidence:
    """One run's spans and span events, with helpers that turn them into short report lines."""

    def __init__(self, spans: pd.DataFrame, events: pd.DataFrame | None, run_id: str, last_error: str | None = None):
        self.said = last_error
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

    def last_error(self) -> None:
        """What ended the run (the runs table's ``last_error``)."""
        if self.said:
            self.lines.append(f"ended by {self.said}")

    def column(self, frame: pd.DataFrame, key: str) -> pd.Series:
        return frame[key] if key in frame else pd.Series(pd.NA, index=frame.index, dtype="object")


def _no_evidence(_: Evidence) -> None:
    return None


@dataclass(frozen=True, kw_only=True)
class Signature:
    """A named rule over the runs table (``rule`` reads the whole table, so a rule can measure a run against the
    successful runs of its population), what it looks like, its typical cause, the control that applies, where the
    taxonomy comes from, and the evidence that shows it in one run's spans."""
    name: str
    reference: str                  # where the taxonomy comes from (a seed of the spec, or agentobs)
    looks_like: str
    cause: str
    control: str
    rule: Callable[[pd.DataFrame], pd.Series]
    evidence: Callable[[Evidence], None] = field(default=_no_evidence)


def _bool(s: pd.Series) -> pd.Series:
    return s.fillna(False).astype(bool)


def _stop(df: pd.DataFrame, *names: str) -> pd.Series:
    return _bool(df["stop_reason"].isin(names))


def _work_done(df: pd.DataFrame) -> pd.Series:
    """A write that succeeded (agentobs traces); without effect information, any tool call."""
    return _bool(df["writes_ok"] > 0).where(df["writes_ok"].notna(), _bool(df["tool_calls"] > 0))


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


KERNEL = "kernel"            # stop_reason_source of a run our kernel recorded (the seeds' taxonomy applies)


def _inferred(df: pd.DataFrame) -> pd.Series:
    """Runs our kernel did not record: other instrumentations', transcripts', and guarded frameworks' runs."""
    return df["stop_reason_source"].fillna("") != KERNEL


def _failed(df: pd.DataFrame) -> pd.Series:
    return _bool(df["success"] == False)  # noqa: E712


def _above_successful_p95(df: pd.DataFrame, column: str) -> pd.Series:
    """Runs whose value is beyond the 95th percentile of the successful runs of the same population (observed
    value, ``inverted_cdf``); never, with fewer than ``GROWTH_MIN_SUCCESSFUL`` successful runs that have one."""
    ok = df.loc[_bool(df["success"] == True), column].dropna()  # noqa: E712
    if len(ok) < GROWTH_MIN_SUCCESSFUL:
        return pd.Series(False, index=df.index)
    p95 = float(np.percentile(ok.to_numpy(dtype=float), 95, method="inverted_cdf"))
    return _bool(df[column] > p95)


# -- evidence of the signatures read on any trace ------------------------------------------------------------

def _ev_failed_calls(kind: str) -> Callable[[Evidence], None]:
    def show(e: Evidence) -> None:
        calls = e.spans[(e.spans["_kind"] == kind) & e.column(e.spans, "_call_row").fillna(False).astype(bool)]
        e.spans_where(calls, e.column(calls, "_failed").fillna(False).astype(bool), " failed")
    return show


def _ev_last_error(e: Evidence) -> None:
    e.last_error()


CATALOG: list[Signature] = [
    Signature(name="unknown_outcome", reference="seed 000", looks_like="A write timed out or its response was lost",
              cause="Lost response from a backend",
              control="Stop; reconcile with the backend; retry only under the same key",
              rule=lambda d: _stop(d, "unknown_outcome") | _bool(d["unknown_outcome_writes"] > 0),
              evidence=_ev_unknown_outcome),
    Signature(name="run_aborted", reference="agentobs",
              looks_like="An exception ended the run before any stop reason (error.type on the invoke_agent span, "
                         "agentobs.status = aborted)",
              cause="A crash, an interrupt or a checkpoint conflict",
              control="Recover from the last checkpoint (Kernel.recover); fix what error.type names",
              rule=lambda d: _bool(d["status"] == "aborted")),
    Signature(name="memory_poisoning", reference="seed 000",
              looks_like="Remembered notes were in the view and the run wrote outside its plan",
              cause="An untrusted or wrong note was stored and acted on",
              control="Memory write policy: trusted sources only, scope, expiry; review the note",
              rule=lambda d: _bool((d["memory_notes"] > 0) & (d["adhoc_writes"] > 0)), evidence=_ev_memory_poisoning),
    Signature(name="stale_facts", reference="seed 000",
              looks_like="A resume after a long gap ran a write before any read",
              cause="Facts saved before the gap no longer match the world",
              control="Re-read before a write after a resume",
              rule=lambda d: _bool(d["write_first_after_resume"]), evidence=_ev_stale_facts),
    Signature(name="approval_denied", reference="seed 004", looks_like="A reviewer denied a held call",
              cause="The action was not acceptable as proposed",
              control="Route to a person with the trace; do not retry the call",
              rule=lambda d: _bool(d["approvals_denied"] > 0), evidence=_ev_approval_denied),
    Signature(name="tool_outage", reference="seed 004", looks_like="A tool kept failing after every retry",
              cause="A backend outage", control="Retries with backoff, then replan or escalate; alert on the tool's "
                                                "error rate",
              rule=lambda d: _bool(d["tools_exhausted"] > 0), evidence=_ev_tool_outage),
    Signature(name="provider_error", reference="agentobs (GenAI conventions: error.type on the model call)",
              looks_like="The model provider failed the run's last model call on every attempt (HTTP 5xx, 429, a "
                         "timeout), and the run ended there",
              cause="A provider outage, rate limits or timeouts outlasting the client's retries",
              control="Retries with backoff and jitter; a fallback model or provider; alert on the provider's error "
                      "rate",
              rule=lambda d: _inferred(d) & _stop(d, "model_error"), evidence=_ev_failed_calls("chat")),
    Signature(name="tool_error_fatal", reference="agentobs",
              looks_like="A tool call failed and its exception ended the run",
              cause="A tool raised and the framework does not hand tool errors back to the model",
              control="Return tool errors to the model as results (the framework's error handler); fix the tool",
              rule=lambda d: _inferred(d) & _stop(d, "tool_error"), evidence=_ev_failed_calls("tool")),
    Signature(name="tool_error_unrecovered", reference="agentobs",
              looks_like="A tool call failed, the model saw the error, and the run failed anyway",
              cause="The model could not work around the failing tool",
              control="Better tool error messages; a fallback tool; escalate after a tool error",
              rule=lambda d: _inferred(d) & _failed(d) & _bool(d["tool_errors_fed_back"] > 0) & ~_stop(d, "tool_error"),
              evidence=_ev_failed_calls("tool")),
    Signature(name="tool_error_recovered", reference="agentobs",
              looks_like="A tool call failed, the model saw the error and the run went on to succeed",
              cause="Transient or expected tool errors the model works around",
              control="Usually none: watch its share; a rising share is an early warning of a tool outage",
              rule=lambda d: _inferred(d) & _bool(d["success"] == True) & _bool(d["tool_errors_fed_back"] > 0),  # noqa
              evidence=_ev_failed_calls("tool")),
    Signature(name="repeated_call", reference="seed 000", looks_like="One call fingerprint proposed again and again",
              cause="A missing fact or an ignored error", control="max_repeat; copy the needed fields into facts",
              rule=lambda d: (_stop(d, "repeated_call")
                              | (_foreign(d) & (_bool(d["max_consecutive_identical"] >= FOREIGN_REPEAT)
                                                | _bool(d["max_identical_since_progress"] >= FOREIGN_REPEAT)))),
              evidence=_ev_repeated_call),
    Signature(name="no_progress", reference="seed 000",
              looks_like="Consecutive steps changed nothing; the state signature stayed flat (other traces: model "
                         "calls in a row that called no new tool)",
              cause="Varied arguments with no effect", control="max_stalls; escalate",
              rule=lambda d: _stop(d, "no_progress") | (_foreign(d) & _bool(d["longest_stall"] >= FOREIGN_STALLS)),
              evidence=_ev_guard),
    Signature(name="context_growth", reference="seed 000",
              looks_like="The model's input kept growing or jumped and stayed high (other traces: a model call's "
                         "input beyond the 95th percentile of the successful runs')",
              cause="Full-history replay, large tool results", control="A state view; result handles; a token budget",
              rule=lambda d: _stop(d, "max_tokens") & ~_inferred(d)
              | (_foreign(d) & _above_successful_p95(d, "max_input_tokens")),
              evidence=_ev_context_growth),
    Signature(name="turn_limit", reference="agentobs (the frameworks' turn, step and recursion limits)",
              looks_like="The framework's turn, step or tool-call limit stopped the run (its limit error, or the "
                         "model still asking for tools when the run ended)",
              cause="A task longer than the limit allows, or a loop the limit cut off",
              control="Look at the run's last steps: a loop (see repeated_call) or real work; size the limit from "
                      "the successful runs (agentobs caps)",
              rule=lambda d: _inferred(d) & _stop(d, *BUDGET_COUNT_STOPS), evidence=_ev_last_error),
    Signature(name="budget_limit", reference="agentobs",
              looks_like="A token, cost or time limit stopped the run",
              cause="A budget sized below what the task needs, or a runaway run",
              control="Size the budget from the successful runs (agentobs caps); hand off rather than stop mid-task",
              rule=lambda d: _inferred(d) & _stop(d, *BUDGET_SPEND_STOPS, "deadline"), evidence=_ev_last_error),
    Signature(name="budget_exhausted", reference="seed 004",
              looks_like="A token or dollar ceiling stopped a run with work half done",
              cause="Output reserve or ceiling sized below what the task needs",
              control="Size the reserve from p95 reply length; hand off rather than leave the task half done",
              rule=lambda d: ~_inferred(d) & _stop(d, *BUDGET_SPEND_STOPS) & _work_done(d), evidence=_ev_guard),
    Signature(name="partial_completion", reference="seed 000",
              looks_like="A step, tool-call or time budget stopped a run with some work done",
              cause="A cap too low, slow tools", control="Report from plan status; resume or hand off; revisit the cap",
              rule=lambda d: ~_inferred(d) & _stop(d, *BUDGET_STEP_STOPS) & _work_done(d), evidence=_ev_guard),
    Signature(name="premature_completion", reference="seed 000",
              looks_like="A 'completed' answer came while plan steps were open",
              cause="The model declared done early", control="The completion check against the plan",
              rule=lambda d: _bool(d["final_refused"] > 0), evidence=_ev_premature_completion),
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


@dataclass(frozen=True, kw_only=True)
class SignatureRow:
    """One signature over a population: how many runs show it, and how precisely it marks failure. ``ratio`` is
    its share among the failed runs over its share among the successful ones, with a 95% interval (``ratio_ci``);
    ``role`` is ``cause`` when the interval lies above 1 (the signature is more common in failed runs than chance
    allows), ``trait`` when it does not (about as common in successful runs: it describes how this population
    works, not why it fails), ``unmeasured`` without both failed and successful runs, and ``absent`` when no run
    shows it."""
    name: str
    runs: int
    share: float            # of all runs
    failed: int             # of them, runs that did not succeed
    successful: int         # of them, runs that succeeded
    primary: int
    looks_like: str
    control: str
    reference: str
    examples: list[str]
    failed_share: float | None = None        # of the failed runs
    successful_share: float | None = None    # of the successful runs
    ratio: float | None = None
    ratio_ci: tuple[float, float] | None = None
    role: str = "absent"


ROLES = ("cause", "trait", "unmeasured", "absent")
_Z95 = 1.959963984540054


def precision(hit_failed: int, n_failed: int, hit_ok: int, n_ok: int) -> tuple[float, tuple[float, float]] | None:
    """The ratio of a signature's share among failed runs to its share among successful runs, and its 95% interval
    (Katz's log method; half a run added to each cell of the 2x2 table when one is empty, Haldane's correction);
    None without failed or successful runs."""
    if n_failed == 0 or n_ok == 0:
        return None
    a, b, c, d = float(hit_failed), float(n_failed - hit_failed), float(hit_ok), float(n_ok - hit_ok)
    if 0 in (a, b, c, d):
        a, b, c, d = a + 0.5, b + 0.5, c + 0.5, d + 0.5
    ratio = (a / (a + b)) / (c / (c + d))
    se = math.sqrt(1 / a - 1 / (a + b) + 1 / c - 1 / (c + d))
    return ratio, (ratio * math.exp(-_Z95 * se), ratio * math.exp(_Z95 * se))


def summarize(runs: pd.DataFrame, examples: int = 3) -> list[SignatureRow]:
    rows = []
    total = max(len(runs), 1)
    failed_runs = _bool(runs["success"] == False) if len(runs) else pd.Series(dtype=bool)  # noqa: E712
    ok_runs = _bool(runs["success"] == True) if len(runs) else pd.Series(dtype=bool)  # noqa: E712
    n_failed, n_ok = int(failed_runs.sum()), int(ok_runs.sum())
    for s in CATALOG:
        mask = runs["signatures"].map(lambda xs, n=s.name: n in xs).astype(bool) if len(runs) else \
            pd.Series(dtype=bool)
        hit = runs[mask] if len(runs) else runs
        failed = int((mask & failed_runs).sum()) if len(runs) else 0
        ok = int((mask & ok_runs).sum()) if len(runs) else 0
        measured = precision(failed, n_failed, ok, n_ok) if len(hit) else None
        role = "absent" if not len(hit) else "unmeasured" if measured is None else \
            "cause" if measured[1][0] > 1 else "trait"
        rows.append(SignatureRow(
            name=s.name, runs=len(hit), share=len(hit) / total, failed=failed, successful=ok,
            primary=int((runs["signature"] == s.name).sum()) if len(runs) else 0, looks_like=s.looks_like,
            control=s.control, reference=s.reference,
            examples=hit.sort_values("run_id")["run_id"].head(examples).tolist(),
            failed_share=failed / n_failed if n_failed else None, successful_share=ok / n_ok if n_ok else None,
            ratio=measured[0] if measured else None, ratio_ci=measured[1] if measured else None, role=role))
    return rows


@dataclass(frozen=True, kw_only=True)
class Unexplained:
    """A failed run that matches no signature, and what ended it when its spans say (``last_error``)."""
    run_id: str
    last_error: str | None


def unexplained(runs: pd.DataFrame, limit: int = 20) -> tuple[int, list[Unexplained]]:
    """Failed runs that match no signature: how many, and the first (by run id) with what ended them."""
    if runs.empty:
        return 0, []
    bad = runs[_bool(runs["success"] == False) & runs["signature"].isna()].sort_values("run_id")  # noqa: E712
    said = [Unexplained(run_id=str(r), last_error=None if pd.isna(e) else str(e))
            for r, e in zip(bad["run_id"].head(limit), bad["last_error"].head(limit), strict=True)]
    return len(bad), said


def evidence(spans: pd.DataFrame, events: pd.DataFrame, run_id: str, signature: str,
             last_error: str | None = None) -> list[str]:
    """The spans (and span events) that show a signature in one run, as short lines for a report: the run's stop
    reason, then what the signature's own evidence function finds."""
    e = Evidence(spans, events, run_id, last_error)
    if e.spans.empty:
        return []
    if sc.STOP_REASON in e.root:
        stop = e.root[e.root[sc.STOP_REASON].notna()]
        if len(stop):
            e.span(stop.iloc[-1], f" stop_reason={stop.iloc[-1][sc.STOP_REASON]}")
    BY_NAME[signature].evidence(e)
    return e.lines
