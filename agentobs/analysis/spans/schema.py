"""The declared DataFrame schemas of the analysis: column names and dtypes in one place.

Span frames have the base columns below plus one column per attribute key, named by the
key itself (``gen_ai.usage.input_tokens``), typed by the contract where it names the key
(int -> Int64, double -> Float64, bool -> boolean, string -> string, string[] -> list).
Empty input gives correctly typed empty frames.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import pandas as pd

SPAN_BASE: dict[str, str] = {
    "trace_id": "string", "span_id": "string", "parent_span_id": "string", "name": "string", "kind": "int8",
    "start_ns": "Int64", "end_ns": "Int64", "status_code": "int8", "status_message": "string",
    "service_name": "string", "source": "category",
}
EVENT_BASE: dict[str, str] = {"trace_id": "string", "span_id": "string", "name": "string", "time_ns": "Int64"}
LINK_BASE: dict[str, str] = {"trace_id": "string", "span_id": "string", "linked_trace_id": "string",
                             "linked_span_id": "string"}

# derive_runs adds to the spans frame: run_id (category), _kind (the role: "agent", "step", "chat", "tool",
# "chain", "retrieval", "transport" or "other"), _dialect (what gave the span its role: a dialect, "structure" or
# "none"), _call (the logical call a span belongs to: "<trace id>:<span id>" of the span that stands for it) and
# _call_row (the span that stands for its call).


@dataclass(frozen=True)
class Column:
    """One column of the runs table: its name, dtype, the group it is computed with, and its meaning."""
    name: str
    dtype: str
    group: str
    meaning: str


# One row per run. The columns table of docs/analysis.md is generated from this list
# (``python -m agentobs.analysis.spans.schema``) and a test keeps the two equal.
COLUMNS: tuple[Column, ...] = (
    Column("run_id", "string", "identity", "task id; else the trace id when the trace holds one run; else "
           "`<trace id>:<span id>` of the run's root span"),
    Column("trace_id", "string", "identity", "trace of the last segment"),
    Column("trace_ids", "object", "identity", "every segment's trace id (a resumed run has several)"),
    Column("root_span_id", "string", "identity", "span id of the run's root span (its first segment's): with "
           "`trace_id`, what a labels file may key the run by"),
    Column("task_id", "string", "identity", "`agentobs.task.id`"),
    Column("conversation_id", "string", "identity", "the conversation or session id of the run's root span "
           "(`gen_ai.conversation.id`, OpenInference `session.id`, Langfuse's, ...; a `session` run's own id)"),
    Column("service", "string", "identity", "`service.name`"),
    Column("agent", "string", "identity", "the run's main agent (its highest named agent invocation), else the "
           "name of its root"),
    Column("model", "string", "identity", "the run's request model, else its most frequent model call's"),
    Column("source_kind", "string", "identity", "`agentobs` (our traces), `genai` (other instrumentations), "
           "`transcript`"),
    Column("dialect", "string", "identity", "what gave the run's calls and agents their roles: the dialect(s) "
           "(`langfuse`, `openinference`, `genai`, `vercel_ai`, `genkit`, `openllmetry`, `mlflow`, `langsmith`, "
           "`names`) and `structure`; several joined by `+`"),
    Column("run_root", "string", "identity", "what the run is rooted at: `agent` (an agent invocation), `chain` "
           "(a framework's chain, workflow, graph or crew holding model calls or agents), `trace` (the root of a "
           "trace whose calls no orchestration holds, or the top span present when the run's root never arrived), "
           "`session` (such calls joined by their conversation or session id)"),
    Column("sub_agents", "Int64", "identity", "agent invocations in the run besides its main agent (sub-agents, "
           "handoffs, agents used as tools)"),
    Column("sub_agent_names", "object", "identity", "their names, in order"),
    Column("start", "datetime64[ns, UTC]", "identity", "start of the first segment"),
    Column("stop_reason", "string", "outcome", "how the run ended, in the closed stop reasons: recorded by our kernel "
           "or a guard, a transcript's termination, else inferred from the spans (`done`, `max_steps`, "
           "`max_tool_calls`, `max_tokens`, `max_usd`, `deadline`, `model_error`, `tool_error`, `exception`, ...)"),
    Column("stop_reason_source", "string", "outcome", "recorded by our `kernel` or a `guard`, a `transcript`'s, or "
           "`inferred:<evidence>` "
           "(`framework_limit`, `last_call_error`, `exception`, `unanswered_tool_request`, `final_answer`, "
           "`root_status`)"),
    Column("status", "string", "outcome", "`stopped`, `suspended` or `aborted`"),
    Column("outcome", "string", "outcome", "`completed`, `cannot_complete`, `escalated`"),
    Column("success", "boolean", "outcome", "the label used (null: unknown, e.g. a suspended run)"),
    Column("label_source", "string", "outcome", "what decided `success`: `labels_file`, `attribute`, `stop_reason` "
           "(ours), `transcript`, or the evidence in the spans (`framework_limit`, `last_call_error`, `exception`, "
           "`unanswered_tool_request`, `final_answer`, `root_status`)"),
    Column("last_error", "string", "outcome", "what ended a failed run: `<span name>: <what its error says>` (the "
           "limit, the failed call, the exception)"),
    Column("steps", "Int64", "counts", "steps (agentobs) or model calls"),
    Column("model_calls", "Int64", "counts", "logical model calls, sub-agents' included (nested spans of one "
           "call and its retried attempts count once)"),
    Column("attempts", "Int64", "counts", "requests made for the model calls (each attempt of a retried call)"),
    Column("tool_calls", "Int64", "counts", "tool invocations, retries included when recorded (not a handoff to "
           "another agent, nor a final-answer tool: smolagents' final_answer, DSPy's finish)"),
    Column("errors", "Int64", "counts", "model and tool calls that failed (a call that succeeded on a retry did "
           "not)"),
    Column("model_errors", "Int64", "counts", "model calls that failed after their retries"),
    Column("tool_errors", "Int64", "counts", "tool calls that failed"),
    Column("tool_errors_fed_back", "Int64", "counts", "failed tool calls after which the model was called again "
           "(the error fed back to it)"),
    Column("input_tokens", "Int64", "usage", "input tokens of the model calls (null when an answered call "
           "reported no usage: not a sum of the calls that did)"),
    Column("output_tokens", "Int64", "usage", "output tokens of the model calls"),
    Column("tokens", "Int64", "usage", "input + output tokens"),
    Column("cache_read_tokens", "Int64", "usage", "input tokens read from a prompt cache (null when not recorded)"),
    Column("cache_creation_tokens", "Int64", "usage", "input tokens written to a prompt cache (null when not "
           "recorded)"),
    Column("reasoning_tokens", "Int64", "usage", "output tokens spent reasoning (null when not recorded)"),
    Column("cost_usd", "Float64", "usage", "dollars: recorded, or priced with genai-prices from model, provider "
           "and tokens (null when a call could not be priced)"),
    Column("active_s", "Float64", "timing", "active seconds (agentobs: the kernel's; else the sum of model and tool "
           "span durations)"),
    Column("wall_s", "Float64", "timing", "first span start to last span end over all segments"),
    Column("max_identical_calls", "Int64", "repeats", "most times one (tool, arguments) fingerprint ran in the run"),
    Column("max_consecutive_identical", "Int64", "repeats", "longest run of back-to-back identical calls"),
    Column("max_identical_since_progress", "Int64", "repeats", "most identical calls between two progress steps"),
    Column("longest_stall", "Int64", "repeats", "most consecutive steps without progress (other traces: model calls "
           "that called no new tool, the run's last call excepted, as the guards count them)"),
    Column("input_growth_per_step", "Float64", "growth", "least-squares slope of input tokens over model calls"),
    Column("max_input_tokens", "Int64", "growth", "largest input of one model call"),
    Column("first_error", "string", "errors", "`<span name>: <error type>` of the first failed model or tool span"),
    Column("open_plan_steps", "Int64", "agentobs", "plan steps still pending at the end"),
    Column("unknown_outcome_writes", "Int64", "agentobs", "writes whose outcome is unknown"),
    Column("retries", "Int64", "agentobs", "tool retries (agentobs); other traces: attempts of model and tool "
           "calls beyond the first"),
    Column("tools_exhausted", "Int64", "agentobs", "tool calls that failed after every retry (agentobs)"),
    Column("approvals_denied", "Int64", "agentobs", "denied approvals (agentobs)"),
    Column("final_refused", "Int64", "agentobs", "`completed` answers refused for open plan steps (agentobs)"),
    Column("resumes", "Int64", "segments", "segments after the first"),
    Column("resume_gap_s", "Float64", "segments", "longest wait between a segment's end and the next one's start"),
    Column("write_first_after_resume", "boolean", "segments", "a resume after more than 15 minutes ran a write "
           "before any read"),
    Column("memory_notes", "Int64", "agentobs", "remembered notes in the view"),
    Column("writes_ok", "Int64", "agentobs", "writes that succeeded (agentobs)"),
    Column("adhoc_writes", "Int64", "agentobs", "writes outside the plan (agentobs)"),
    Column("spans", "Int64", "counts", "spans of the run"),
    Column("signature", "string", "signatures", "the primary failure signature (null: none)"),
    Column("signatures", "object", "signatures", "every matching signature"),
)
RUN_COLUMNS: dict[str, str] = {c.name: c.dtype for c in COLUMNS}


def markdown_table() -> str:
    """The columns table of docs/analysis.md."""
    shown = {"object": "list", "datetime64[ns, UTC]": "datetime (UTC)"}
    lines = ["| column | dtype | meaning |", "| --- | --- | --- |"]
    lines += [f"| `{c.name}` | {shown.get(c.dtype, c.dtype)} | {c.meaning} |" for c in COLUMNS]
    return "\n".join(lines)


def typed_empty(schema: dict[str, str]) -> pd.DataFrame:
    """An empty frame with ``schema``'s columns and dtypes (a copy of one built once per schema: building it costs
    about a millisecond, paid for every file of a folder of many small files)."""
    return _empty(tuple(schema.items())).copy()


@functools.lru_cache(maxsize=32)
def _empty(schema: tuple[tuple[str, str], ...]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in schema})


def empty_spans() -> pd.DataFrame:
    return typed_empty(SPAN_BASE)


def empty_events() -> pd.DataFrame:
    return typed_empty(EVENT_BASE)


def empty_links() -> pd.DataFrame:
    return typed_empty(LINK_BASE)


def empty_runs() -> pd.DataFrame:
    return typed_empty(RUN_COLUMNS)


if __name__ == "__main__":
    print(markdown_table())
