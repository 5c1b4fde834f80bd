"""The declared DataFrame schemas of the analysis: column names and dtypes in one place.

Span frames have the base columns below plus one column per attribute key, named by the
key itself (``gen_ai.usage.input_tokens``), typed by the contract where it names the key
(int -> Int64, double -> Float64, bool -> boolean, string -> string, string[] -> list).
Empty input gives correctly typed empty frames.
"""
from __future__ import annotations

import pandas as pd

SPAN_BASE: dict[str, str] = {
    "trace_id": "string", "span_id": "string", "parent_span_id": "string", "name": "string", "kind": "int8",
    "start_ns": "Int64", "end_ns": "Int64", "status_code": "int8", "status_message": "string",
    "service_name": "string", "source": "category",
}
EVENT_BASE: dict[str, str] = {"trace_id": "string", "span_id": "string", "name": "string", "time_ns": "Int64"}
LINK_BASE: dict[str, str] = {"trace_id": "string", "span_id": "string", "linked_trace_id": "string",
                             "linked_span_id": "string"}

# derive_runs adds two columns to the spans frame: run_id (string) and _kind ("agent", "step", "chat",
# "tool" or "other").

# One row per run. Documented in docs/analysis.md; keep in step with analysis.runs.
RUN_COLUMNS: dict[str, str] = {
    "run_id": "string",             # task id, conversation id or root trace id (first one present)
    "trace_id": "string",           # trace of the last segment
    "trace_ids": "object",          # every segment's trace id (a resumed run has several)
    "task_id": "string",
    "conversation_id": "string",
    "service": "string",
    "agent": "string",
    "model": "string",
    "source_kind": "string",        # "agentobs" | "genai" | "transcript"
    "start": "datetime64[ns, UTC]",
    "stop_reason": "string",        # agentobs stop reason; null when not recorded
    "status": "string",             # stopped | suspended
    "outcome": "string",            # completed | cannot_complete | escalated | null
    "success": "boolean",           # the label used by the analysis
    "label_source": "string",       # stop_reason | attribute | labels_file | transcript
    "steps": "Int64",               # model calls
    "model_calls": "Int64",
    "tool_calls": "Int64",          # tool invocations, retries included when recorded
    "input_tokens": "Int64",
    "output_tokens": "Int64",
    "tokens": "Int64",
    "cost_usd": "Float64",
    "active_s": "Float64",          # model + tool time (agentobs: the kernel's active time)
    "wall_s": "Float64",            # first span start to last span end, over all segments
    "max_identical_calls": "Int64",         # most times one (tool, arguments) fingerprint ran, whole run
    "max_consecutive_identical": "Int64",   # longest run of back-to-back identical calls
    "max_identical_since_progress": "Int64",
    "longest_stall": "Int64",       # most consecutive steps without progress
    "input_growth_per_step": "Float64",     # least-squares slope of input tokens over model calls
    "max_input_tokens": "Int64",
    "first_error": "string",        # "<span name>: <error type>" of the first failed model/tool span
    "open_plan_steps": "Int64",
    "unknown_outcome_writes": "Int64",
    "retries": "Int64",
    "tools_exhausted": "Int64",     # tool calls that failed after all retries
    "approvals_denied": "Int64",
    "final_refused": "Int64",       # 'completed' answers refused for open plan steps
    "resumes": "Int64",
    "resume_gap_s": "Float64",      # longest wait between a suspended segment and its resume
    "write_first_after_resume": "boolean",
    "memory_notes": "Int64",
    "writes_ok": "Int64",           # writes that succeeded (agentobs traces; null when effects are unknown)
    "adhoc_writes": "Int64",        # writes outside the plan
    "spans": "Int64",
    "signature": "string",          # primary failure signature (see analysis.signatures), null when none
    "signatures": "object",         # every matching signature
}


def typed_empty(schema: dict[str, str]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in schema.items()})


def empty_spans() -> pd.DataFrame:
    return typed_empty(SPAN_BASE)


def empty_events() -> pd.DataFrame:
    return typed_empty(EVENT_BASE)


def empty_links() -> pd.DataFrame:
    return typed_empty(LINK_BASE)


def empty_runs() -> pd.DataFrame:
    return typed_empty(RUN_COLUMNS)
