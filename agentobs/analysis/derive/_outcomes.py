"""Outcomes and stop reasons from evidence, for runs whose stop reason nobody recorded.

Our kernel and guards record a run's stop reason on its agent span; a chat transcript carries its own label. For
every other run the outcome is read from what its spans show, never from its root span's status alone (roots stay
OK when a run raised: OpenInference's outer agent span, an HTTP request that answered 200). In this order, the
first that applies decides (``label_source`` / ``stop_reason_source`` say which):

1. ``framework_limit``: the error that ended the run is one of a framework's own limits (its exception type or
   message, an ERROR status on an orchestration span: ``MaxTurnsExceeded``, ``GraphRecursionError``, Pydantic AI's
   ``UsageLimitExceeded`` naming its limit, ...; collected per dialect in the dialect tables): failed, stopped at
   that limit (``max_steps``, ``max_tool_calls``, ``max_tokens``, ``max_usd``, ``deadline``).
2. ``last_call_error``: the run's last model or tool call failed (after its retries): failed, ``model_error`` or
   ``tool_error``.
3. ``exception``: an orchestration span of the run failed (ERROR status or an exception event) and no model call
   answered after it: failed, ``exception``; ``tool_error`` when the error names a tool failure, ``model_error``
   when it names the model provider's (a model client's error class, an HTTP 5xx or 429 status: the failed call
   itself left no span), ``deadline`` when it is a timeout.
4. ``unanswered_tool_request``: the run's last model call asked for tools (its finish reason) and the run ended
   without another model call (the tools it asked for never ran, or ran and their results were never read, and
   none was a final-answer tool): failed, ``max_steps`` (the framework's turn limit, which some frameworks reach
   without an error: the Vercel AI SDK's ``stopWhen``, smolagents).
5. ``forced_final_answer``: the run's last model call was offered no tools while the model call before it was, and
   tools ran between the two: the framework reached its turn limit and asked for an answer without tools (CrewAI's
   ``max_iter``, smolagents' ``max_steps``); or the model call before the last asked for tools and none ran before
   the last (a run whose other tool calls are recorded): the framework refused the call past its limit (Agno's
   ``tool_call_limit``): failed, ``max_steps``.
6. ``final_answer``: the last call is a model call that answered: success, ``done``.
7. ``root_status``: otherwise the status of the run's root span.

A run whose root span never arrived is only labelled by failure evidence (1-5): its figures may be cut short, so
no success is concluded from them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..spans.dialects import ANSWER, CALLS, CHAT, ORCHESTRATION, PROVIDER_FAILURES, REGISTRY, TOOL, TOOL_FAILURES

# a finish reason that asks for tools (OpenAI tool_calls / function_call, Anthropic tool_use, the Vercel AI SDK's
# tool-calls, Pydantic AI's tool_call, Gemini's function call)
_ASKS_FOR_TOOLS = re.compile(r"tool[_-]?call|tool_use|function[_-]?call", re.I)
_TIMEOUT = re.compile(r"timeout|timed out|deadline", re.I)
_TOOL_FAILED = re.compile("|".join(re.escape(t) for t in TOOL_FAILURES), re.I)
# the model provider's failure: a client's error class, or an HTTP 5xx / 429 status opening the message ("500 ..."
# after the error type: the OpenAI and Anthropic JavaScript SDKs) or after "status code" / "error code" / "HTTP"
_PROVIDER_FAILED = re.compile("|".join([*(re.escape(t) for t in PROVIDER_FAILURES),
                                        r"(?:^|: )(?:5\d\d|429)\b(?![.\d])",
                                        r"\b(?:status|error) code:? (?:5\d\d|429)\b", r"\bHTTP (?:5\d\d|429)\b"]),
                              re.I)
_LIMITS = tuple((lim.stop, re.compile("|".join(re.escape(t) for t in lim.texts), re.I))
                for d in REGISTRY for lim in d.limits)
SOURCES = ("framework_limit", "last_call_error", "exception", "unanswered_tool_request", "forced_final_answer",
           "final_answer", "root_status")


@dataclass
class Outcomes:
    """Per run: whether it failed (NA: unknown), what decided it (one of ``SOURCES``), the stop reason, and the
    span that shows it (-1: none) with what it said."""
    failed: pd.Series          # boolean
    source: np.ndarray         # object
    stop: np.ndarray           # object
    row: np.ndarray            # int64
    said: np.ndarray           # object: the error text or finish reason that decided
    last_error_row: np.ndarray       # int64: the run's last failed call or orchestration span (-1: none)
    last_error_said: np.ndarray      # object: what it says


@dataclass
class Evidence:
    """What the outcome is read from (arrays per span, unless named per run)."""
    run: np.ndarray            # run code per span (-1: none)
    n_runs: int
    kind: np.ndarray           # role per span
    call_row: np.ndarray       # the span that stands for a logical call
    error: np.ndarray          # per span (a call's: its last attempt's)
    start: np.ndarray          # int64 per span (a call's: its first attempt's)
    end: np.ndarray            # int64 per span (a call's: its last attempt's)
    finish: np.ndarray         # object per span: finish reason
    tool: np.ndarray           # object per span: tool name
    errors_said: np.ndarray    # object per span: what its error says (error type, exception, status message)
    root_error: np.ndarray     # per run: its root span's status is ERROR
    rootless: np.ndarray       # per run
    roots: np.ndarray          # per span: the root span of a run (its last segment's)
    offers_tools: np.ndarray | None = None     # per span: tools were offered to it (None: nothing records it)
    loop_finish: np.ndarray | None = None      # per span: the finish reason of a loop span (an aggregate)


def infer(e: Evidence) -> Outcomes:
    n = e.n_runs
    failed = np.full(n, -1, dtype=np.int8)           # -1 unknown, 0 no, 1 yes
    source = np.full(n, None, dtype=object)
    stop = np.full(n, None, dtype=object)
    row = np.full(n, -1, dtype=np.int64)
    said = np.full(n, None, dtype=object)

    def decide(runs: np.ndarray, how: str, stops: np.ndarray | str, *, rows: np.ndarray, text: np.ndarray | None,
               fail: bool) -> None:
        todo = runs[source[runs] == None]  # noqa: E711  (object array: elementwise)
        keep = np.isin(runs, todo)
        runs = runs[keep]
        failed[runs] = int(fail)
        source[runs] = how
        stop[runs] = stops if isinstance(stops, str) else np.asarray(stops, dtype=object)[keep]
        row[runs] = rows[keep]
        if text is not None:
            said[runs] = np.asarray(text, dtype=object)[keep]

    calls = _last_calls(e)
    orch_err = _orchestration_errors(e)
    # 1. a framework's own limit in the errors of its orchestration spans
    if len(orch_err):
        for limit, pattern in _LIMITS:
            hit = orch_err[orch_err["text"].str.contains(pattern, na=False)]
            hit = hit.drop_duplicates("run", keep="last")
            decide(hit["run"].to_numpy(), "framework_limit", limit, rows=hit["row"].to_numpy(),
                   text=hit["text"].to_numpy(), fail=True)
    # 2. the last call failed
    last = calls["last"]
    bad = last[last["error"]]
    decide(bad["run"].to_numpy(), "last_call_error", np.where(bad["kind"] == CHAT, "model_error", "tool_error"),
           rows=bad["row"].to_numpy(), text=bad["said"].to_numpy(), fail=True)
    # 3. an orchestration span failed after the last model call that answered
    if len(orch_err):
        answered = calls["answered_end"].reindex(orch_err["run"].to_numpy()).to_numpy(dtype=float)
        after = orch_err[~(answered > orch_err["end"].to_numpy(dtype=float))]
        after = after.drop_duplicates("run", keep="last")
        text = after["text"].to_numpy(dtype=object)
        timed = np.array([bool(_TIMEOUT.search(t)) if isinstance(t, str) else False for t in text], dtype=bool)
        tool = np.array([bool(_TOOL_FAILED.search(t)) if isinstance(t, str) else False for t in text], dtype=bool)
        provider = np.array([bool(_PROVIDER_FAILED.search(t)) if isinstance(t, str) else False for t in text],
                            dtype=bool) & ~tool
        # a framework's model loop that says its model call failed (its finish reason "error": Mastra's), or an
        # exception that says the model provider failed (its failed call left no span)
        model = _loop_said_error(e, after["row"].to_numpy())
        decide(after["run"].to_numpy(), "exception",
               np.where(model | provider, "model_error",
                        np.where(tool, "tool_error", np.where(timed, "deadline", "exception"))),
               rows=after["row"].to_numpy(), text=np.where(model, "finish reason error", text), fail=True)
    # 4. the last model call asked for tools, and no model call came after it
    asked = calls["unanswered"]
    decide(asked["run"].to_numpy(), "unanswered_tool_request", "max_steps", rows=asked["row"].to_numpy(),
           text=asked["finish"].to_numpy(), fail=True)
    # 5. the last model call was offered no tools, the one before it was, and tools ran between them
    forced = calls["forced"]
    decide(forced["run"].to_numpy(), "forced_final_answer", "max_steps", rows=forced["row"].to_numpy(), text=None,
           fail=True)
    # 6. the last call is a model call that answered (not for a run whose root never arrived)
    good = last[(last["kind"] == CHAT) & ~last["error"] & ~e.rootless[last["run"].to_numpy()]]
    decide(good["run"].to_numpy(), "final_answer", "done", rows=good["row"].to_numpy(),
           text=good["finish"].to_numpy(), fail=False)
    # 7. the root span's status
    rest = np.flatnonzero((source == None) & ~e.rootless)  # noqa: E711
    decide(rest, "root_status", np.where(e.root_error[rest], "exception", "done"), rows=np.full(len(rest), -1),
           text=None,
           fail=False)
    fail_rest = rest[e.root_error[rest]]
    failed[fail_rest] = 1
    out = pd.Series(pd.array(np.where(failed < 0, None, failed == 1), dtype="boolean"))
    err_row, err_said = _last_errors(e, calls["all"], orch_err)
    return Outcomes(out, source, stop, row, said, err_row, err_said)


def _last_errors(e: Evidence, calls: pd.DataFrame, orch_err: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per run: its last failed call or failed orchestration span (by end), and what it says."""
    failed_calls = calls.loc[calls["error"], ["run", "row", "end", "said"]]
    both = pd.concat([failed_calls, orch_err.rename(columns={"text": "said"})[["run", "row", "end", "said"]]],
                     ignore_index=True).sort_values(["run", "end", "row"], kind="stable").drop_duplicates(
        "run", keep="last")
    row = np.full(e.n_runs, -1, dtype=np.int64)
    said = np.full(e.n_runs, None, dtype=object)
    row[both["run"].to_numpy()] = both["row"].to_numpy()
    said[both["run"].to_numpy()] = both["said"].astype(object).to_numpy()
    return row, said


def _last_calls(e: Evidence) -> dict[str, pd.DataFrame | pd.Series]:
    """Per run: its last call (by end, then start), the end of its last model call that answered, and the runs
    whose last model call asked for tools with no model call after it."""
    sel = np.flatnonzero(e.call_row & np.isin(e.kind, CALLS) & (e.run >= 0))
    # (by start: a tool call a model call's span holds, as Mastra's steps and the Vercel AI SDK's streams hold
    # theirs, comes after it; sorted on the numbers before the frame is built)
    sel = sel[np.lexsort((sel, e.end[sel], e.start[sel], e.run[sel]))]
    c = pd.DataFrame({"run": e.run[sel], "row": sel, "kind": e.kind[sel], "error": e.error[sel].astype(bool),
                      "start": e.start[sel], "end": e.end[sel], "finish": e.finish[sel], "tool": e.tool[sel],
                      "said": e.errors_said[sel]})
    last = c.drop_duplicates("run", keep="last")
    chats = c[c["kind"] == CHAT]
    answered_end = chats[~chats["error"]].groupby("run")["end"].max()
    last_chat = chats.drop_duplicates("run", keep="last").set_index("run")
    # what the last model call asked for: its finish reason, else the finish reason of the loop that made it (a
    # framework's loop span, read as a model call holding the others: Mastra's)
    finish = last_chat["finish"].where(last_chat["finish"].notna(), _loop_finish(e).reindex(last_chat.index))
    asks = finish.map(lambda f: bool(_ASKS_FOR_TOOLS.search(f)) if isinstance(f, str) else False)
    asks = asks.astype(bool) & ~last_chat["error"].astype(bool)
    tools = c[c["kind"] == TOOL]
    answered = _answers_after(e, last_chat)
    pick = (asks & ~last_chat.index.isin(answered)).to_numpy(dtype=bool)
    unanswered = last_chat[pick].assign(finish=finish[pick].to_numpy(dtype=object)).reset_index()
    return {"last": last, "answered_end": answered_end, "unanswered": unanswered, "all": c,
            "forced": _forced(e, chats, tools)}


def _loop_said_error(e: Evidence, rows: np.ndarray) -> np.ndarray:
    if e.loop_finish is None or not len(rows):
        return np.zeros(len(rows), dtype=bool)
    said = e.loop_finish[rows]
    return np.array([isinstance(f, str) and f.strip("[]'\" ").lower() == "error" for f in said], dtype=bool)


def _loop_finish(e: Evidence) -> pd.Series:
    """Per run: the finish reason its loop span records (an aggregate of model calls, now orchestration)."""
    if e.loop_finish is None:
        return pd.Series(dtype=object)
    rows = np.flatnonzero(pd.notna(e.loop_finish) & (e.run >= 0))
    f = pd.DataFrame({"run": e.run[rows], "end": e.end[rows], "finish": e.loop_finish[rows]})
    return f.sort_values(["run", "end"], kind="stable").drop_duplicates("run", keep="last").set_index("run")["finish"]


def _answers_after(e: Evidence, last_chat: pd.DataFrame) -> list[int]:
    """Runs with a final-answer tool call (``answer`` role) after their last model call."""
    rows = np.flatnonzero((e.kind == ANSWER) & (e.run >= 0))
    if not len(rows) or last_chat.empty:
        return []
    a = pd.DataFrame({"run": e.run[rows], "start": e.start[rows]})
    a = a.merge(last_chat[["start"]].rename(columns={"start": "chat"}), left_on="run", right_index=True)
    return a.loc[a["start"] >= a["chat"], "run"].unique().tolist()


def _forced(e: Evidence, chats: pd.DataFrame, tools: pd.DataFrame) -> pd.DataFrame:
    """Runs whose last model call answered after the framework's turn limit (run, row of the last call): without the
    tools the call before it was offered, tools run between the two; or right after a call that asked for tools that
    never ran, in a run whose tool calls are recorded."""
    empty = pd.DataFrame({"run": pd.Series(dtype=np.int64), "row": pd.Series(dtype=np.int64)})
    if chats.empty or tools.empty:
        return empty
    two = chats.groupby("run").tail(2)
    last = two.drop_duplicates("run", keep="last").set_index("run")
    before = two[two.duplicated("run", keep="last")].set_index("run")
    both = last.merge(before, left_index=True, right_index=True, suffixes=("", "_before"), how="inner")
    both = both[~both["error"].to_numpy(dtype=bool) & ~both["error_before"].to_numpy(dtype=bool)]
    if both.empty:
        return empty
    # a tool call that started after the earlier model call started (the Vercel AI SDK streams them inside its
    # span) and before the last started (Node's span starts are whole milliseconds, their ends are not)
    t = tools[["run", "start"]].merge(both[["start_before", "start"]].reset_index(), on="run", suffixes=("", "_last"))
    between = set(t[(t["start"] >= t["start_before"]) & (t["start"] <= t["start_last"])]["run"].tolist())
    ran = both.index.isin(list(between))
    if e.offers_tools is not None:
        offered = e.offers_tools
        without = ~offered[both["row"].to_numpy()] & offered[both["row_before"].to_numpy()] & ran
    else:
        without = np.zeros(len(both), dtype=bool)
    asked = both["finish_before"].map(lambda f: bool(_ASKS_FOR_TOOLS.search(f)) if isinstance(f, str) else False)
    recorded = both.index.isin(tools["run"].unique())           # (a run whose tool calls leave spans)
    refused = asked.to_numpy(dtype=bool) & ~ran & recorded
    hit = both[without | refused]
    return pd.DataFrame({"run": hit.index.to_numpy(dtype=np.int64), "row": hit["row"].to_numpy(dtype=np.int64)})


def _orchestration_errors(e: Evidence) -> pd.DataFrame:
    """The failed orchestration spans of each run and its failed root span (ERROR status, or an exception event),
    by end: run, row, end and what the error says."""
    on_path = np.isin(e.kind, ORCHESTRATION) | e.roots
    sel = np.flatnonzero(on_path & (e.run >= 0) & (e.error | pd.notna(e.errors_said)))
    sel = sel[e.error[sel] | _exception_only(e, sel)]
    # a run's root encloses it: its failure comes after every call, whatever its recorded end says
    end = np.where(e.roots[sel], np.iinfo(np.int64).max, e.end[sel])
    frame = pd.DataFrame({"run": e.run[sel], "row": sel, "end": end,
                          "text": pd.array(e.errors_said[sel], dtype="string")})
    return frame.sort_values(["run", "end", "row"], kind="stable")


def _exception_only(e: Evidence, sel: np.ndarray) -> np.ndarray:
    """Spans without an ERROR status whose error text comes from an exception event (errors_said is set only by an
    error or an exception)."""
    return pd.notna(e.errors_said[sel])


def call_errors(kind: np.ndarray, call_row: np.ndarray, error: np.ndarray, *, run: np.ndarray, start: np.ndarray,
                n_runs: int) -> dict[str, np.ndarray]:
    """Per run: failed model calls, failed tool calls, and the failed tool calls after which the model was called
    again (the error fed back to it)."""
    calls = call_row & (run >= 0)
    model_err = calls & (kind == CHAT) & error
    tool_err = calls & (kind == TOOL) & error
    out = {"model_errors": np.bincount(run[model_err], minlength=n_runs),
           "tool_errors": np.bincount(run[tool_err], minlength=n_runs)}
    chats = calls & (kind == CHAT)
    last_chat = np.full(n_runs, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(last_chat, run[chats], start[chats])
    fed = tool_err & (start < last_chat[np.maximum(run, 0)])
    out["tool_errors_fed_back"] = np.bincount(run[fed], minlength=n_runs)
    return out


__all__ = ["SOURCES", "Evidence", "Outcomes", "call_errors", "infer"]
