"""Values a span's attributes do not carry, read from where an instrumentation keeps them instead.

- **Tool arguments**: in the model call that asked for the tool (AutoGen's ``execute_tool`` span carries only
  ``gen_ai.tool.call.id``; the arguments are in the model call's ``gen_ai.output.messages``, or in OpenLLMetry's and
  OpenInference's flattened tool-call attributes), or in an event of the tool span (Strands' ``gen_ai.tool.message``
  event, its ``content``). Repeated calls are counted from the arguments: they are read back by the tool call's id,
  or from the event.
- **Finish reasons**: in the model call's ``gen_ai.choice`` events (``finish_reason``: Strands).
"""
from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import pandas as pd

from ..spans.dialects import CHAT, TOOL

CALL_ID_KEYS = ("gen_ai.tool.call.id", "tool_call.id", "tool.call_id", "tool.call.id")
OUTPUT_MESSAGES = ("gen_ai.output.messages",)
# flattened tool calls of a model call's output: OpenLLMetry's gen_ai.completion.0.tool_calls.0.{id,arguments},
# OpenInference's llm.output_messages.0.message.tool_calls.0.tool_call.{id,function.arguments}
_FLAT = re.compile(r"^(?P<head>(?:gen_ai\.completion|llm\.output_messages)\.\d+\.(?:message\.)?tool_calls\.\d+\.)"
                   r"(?:tool_call\.)?(?P<field>id|arguments|function\.arguments)$")
TOOL_MESSAGE_EVENTS = ("gen_ai.tool.message",)


def tool_arguments(spans: pd.DataFrame, events: pd.DataFrame | None, kind: np.ndarray,
                   args: np.ndarray) -> np.ndarray:
    """``args`` (per span, None where unknown) with the arguments of the tool calls that lack them filled in, where
    an event of theirs or the model call that asked for them records them."""
    need = np.flatnonzero((kind == TOOL) & pd.isna(args))
    if not len(need):
        return args
    out = np.asarray(args, dtype=object).copy()
    _from_events(spans, events, need, out)
    need = need[pd.isna(out[need])]
    ids = _call_ids(spans, need)
    if not len(need) or not pd.notna(ids).any():
        return out
    by_id = _asked_for(spans, kind)
    traces = spans["trace_id"].astype(str).to_numpy()
    for r, cid in zip(need.tolist(), ids.tolist(), strict=True):
        if isinstance(cid, str) and (traces[r], cid) in by_id:
            out[r] = by_id[(traces[r], cid)]
    return out


CHOICE_EVENTS = ("gen_ai.choice",)


def finish_reasons(spans: pd.DataFrame, events: pd.DataFrame | None, kind: np.ndarray,
                   finish: np.ndarray) -> np.ndarray:
    """``finish`` (per span, None where unknown) with the model calls' finish reasons their choice events record."""
    need = np.flatnonzero((kind == CHAT) & pd.isna(finish))
    if not len(need) or events is None or events.empty or "finish_reason" not in events.columns:
        return finish
    ev = events[events["name"].astype(str).isin(CHOICE_EVENTS) & events["finish_reason"].notna()]
    if ev.empty:
        return finish
    out = np.asarray(finish, dtype=object).copy()
    key = pd.Index(spans["trace_id"].astype(str).to_numpy()[need] + ":" + spans["span_id"].astype(str).to_numpy()[need])
    pos = key.get_indexer(ev["trace_id"].astype(str) + ":" + ev["span_id"].astype(str))
    for p, reason in zip(pos.tolist(), ev["finish_reason"].astype(object).tolist(), strict=True):
        if p >= 0:
            out[need[p]] = str(reason)              # (the last choice's, when a call has several)
    return out


def _call_ids(spans: pd.DataFrame, rows: np.ndarray) -> np.ndarray:
    ids = np.full(len(rows), None, dtype=object)
    for key in CALL_ID_KEYS:
        if key in spans.columns:
            got = spans[key].iloc[rows].astype(object).to_numpy()
            ids = np.where(pd.isna(ids) & pd.notna(got), got, ids)
    return ids


def _from_events(spans: pd.DataFrame, events: pd.DataFrame | None, rows: np.ndarray, out: np.ndarray) -> None:
    if events is None or events.empty or "content" not in events.columns:
        return
    ev = events[events["name"].astype(str).isin(TOOL_MESSAGE_EVENTS) & events["content"].notna()]
    if ev.empty:
        return
    key = pd.Index(spans["trace_id"].astype(str).to_numpy()[rows] + ":" + spans["span_id"].astype(str).to_numpy()[rows])
    pos = key.get_indexer(ev["trace_id"].astype(str) + ":" + ev["span_id"].astype(str))
    for p, content in zip(pos.tolist(), ev["content"].astype(object).tolist(), strict=True):
        if p >= 0 and pd.isna(out[rows[p]]):
            out[rows[p]] = str(content)


def _asked_for(spans: pd.DataFrame, kind: np.ndarray) -> dict[tuple[str, str], str]:
    """(trace id, tool call id) -> its arguments (as JSON text with sorted keys), from the model calls' outputs
    (a call id is matched within its trace only: providers and test servers reuse ids across conversations)."""
    chats = kind == CHAT
    found: dict[tuple[str, str], str] = {}
    traces = spans["trace_id"].astype(str)
    for col in OUTPUT_MESSAGES:
        if col not in spans.columns:
            continue
        texts = spans[col].where(chats & spans[col].notna().to_numpy(dtype=bool)).dropna().astype(str)
        texts = texts[texts.str.contains("tool_call", regex=False)]
        for trace, text in zip(traces[texts.index].tolist(), texts.tolist(), strict=True):
            for cid, arguments in _tool_calls(text):
                found.setdefault((trace, cid), arguments)
    heads: dict[str, dict[str, str]] = {}
    for col in spans.columns:
        m = _FLAT.match(col)
        if m is not None:
            heads.setdefault(m["head"], {})["id" if m["field"] == "id" else "args"] = col
    for cols in heads.values():
        if len(cols) == 2:
            pair = spans.loc[chats, [cols["id"], cols["args"]]].dropna()
            for trace, cid, arguments in zip(traces[pair.index].tolist(), pair[cols["id"]].astype(str),
                                             pair[cols["args"]].astype(str), strict=True):
                found.setdefault((trace, cid), canonical(arguments))
    return found


def _tool_calls(text: str) -> list[tuple[str, str]]:
    """(id, arguments) of the tool_call parts of GenAI output messages (``gen_ai.output.messages``)."""
    return [(part["id"], canonical(part.get("arguments"))) for part in tool_call_parts(text)
            if isinstance(part.get("id"), str)]


def tool_call_parts(text: str) -> list[dict[str, Any]]:
    """The ``tool_call`` parts of GenAI output messages (``gen_ai.output.messages`` text), in order; [] for text that
    is not such messages."""
    try:
        messages = json.loads(text)
    except (ValueError, RecursionError):
        return []
    return [part for m in (messages if isinstance(messages, list) else []) if isinstance(m, dict)
            for part in (m.get("parts") or []) if isinstance(part, dict) and part.get("type") == "tool_call"]


def canonical(arguments: Any) -> str:
    """Arguments as JSON text with sorted keys (text that is JSON is parsed first), so the same call reads the
    same whichever attribute held it."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):
            return arguments
    try:
        return json.dumps(arguments, sort_keys=True)
    except (TypeError, ValueError):
        return str(arguments)
