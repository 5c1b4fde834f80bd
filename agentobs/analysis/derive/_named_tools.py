"""Tool calls no dialect marks, found by the model call that asked for them.

An application that traces its tools by hand (``@openlit.trace``, ``@logfire.instrument``, a span it names itself)
writes spans that carry no role attribute: no dialect and no structural rule of a single span makes them tool
calls. The model call before them does say which tools it asked for (the ``tool_call`` parts of its GenAI output
messages, ``gen_ai.output.messages``). A span no dialect gives a role is a tool call when the last model call that
ended before it started, under the same parent, asked for a tool of its name: the span's name is the tool's name,
or ends with it after a space, a dot, a colon or a slash (``get_weather``, ``tool get_weather``,
``tools.get_weather``). It takes that tool's name and the arguments the model gave it; several calls of one tool in
one reply are matched in the order the spans started. Its error status is the tool's error, as for any tool span.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..spans.dialects import CHAT, NAMED_TOOL_RULE, STRUCTURE, TOOL, Normalized
from ._kept_elsewhere import OUTPUT_MESSAGES, canonical, tool_call_parts

_SEPARATORS = (" ", ".", ":", "/")


def asked_tools(spans: pd.DataFrame, parent: np.ndarray, norm: Normalized) -> int:
    """Gives the tool role to the unclassified spans the model call before them asked for (``norm`` is updated in
    place: role, dialect, rule, tool name and arguments); returns how many."""
    cols = [c for c in OUTPUT_MESSAGES if c in spans.columns]
    loose = norm.dialect < 0
    if not cols or not loose.any():
        return 0
    asking = _asking(spans, cols, norm.kind)
    if not asking.any():
        return 0
    cand = np.flatnonzero(loose & np.isin(parent, parent[asking]) & (parent >= 0))
    if not len(cand):
        return 0
    chats = np.flatnonzero((norm.kind == CHAT) & np.isin(parent, parent[cand]))
    end = spans["end_ns"].to_numpy(dtype=np.int64, na_value=np.iinfo(np.int64).max)
    start = spans["start_ns"].to_numpy(dtype=np.int64, na_value=np.iinfo(np.int64).min)
    before = pd.merge_asof(pd.DataFrame({"t": start[cand], "parent": parent[cand], "row": cand}).sort_values("t"),
                           pd.DataFrame({"t": end[chats], "parent": parent[chats], "chat": chats}).sort_values("t"),
                           on="t", by="parent", direction="backward", allow_exact_matches=True)
    before = before.dropna(subset=["chat"])
    before = before[asking[before["chat"].to_numpy(dtype=np.int64)]]
    asks = _asked(spans, cols, np.unique(before["chat"].to_numpy(dtype=np.int64)))   # parsed only where needed
    names = spans["name"].astype(object).to_numpy()
    found: list[tuple[int, int, str]] = []                     # (row, chat, tool)
    for row, chat in zip(before["row"].tolist(), before["chat"].astype(np.int64).tolist(), strict=True):
        tool = _named(str(names[row]), asks.get(chat, {}))
        if tool is not None:
            found.append((row, chat, tool))
    if not found:
        return 0
    got = pd.DataFrame(found, columns=["row", "chat", "tool"])
    got["start"] = start[got["row"].to_numpy()]
    got = got.sort_values(["chat", "start", "row"], kind="stable")
    nth = got.groupby(["chat", "tool"]).cumcount().to_numpy()
    args = [_nth(asks[c][t], i) for c, t, i in zip(got["chat"].tolist(), got["tool"].tolist(), nth.tolist(),
                                                   strict=True)]
    rows = got["row"].to_numpy()
    norm.kind[rows] = TOOL
    norm.dialect[rows] = STRUCTURE
    norm.rule[rows] = NAMED_TOOL_RULE
    for field, values in (("tool", got["tool"].tolist()), ("args", args)):
        have = pd.array(norm.fields[field]).to_numpy(dtype=object, na_value=None)
        have[rows] = values
        norm.fields[field] = pd.array(have, dtype=pd.StringDtype("pyarrow"))
    norm.counts["structure"] = norm.counts.get("structure", 0) + len(rows)
    return len(rows)


def _asking(spans: pd.DataFrame, cols: list[str], kind: np.ndarray) -> np.ndarray:
    """Model calls whose output messages hold a tool call (a text test: nothing parsed yet)."""
    out = np.zeros(len(kind), dtype=bool)
    chats = np.flatnonzero(kind == CHAT)
    for col in cols:
        text = spans[col].iloc[chats].astype("string")
        out[chats] |= text.str.contains("tool_call", regex=False).fillna(False).to_numpy(dtype=bool)
    return out


def _asked(spans: pd.DataFrame, cols: list[str], rows: np.ndarray) -> dict[int, dict[str, list[str | None]]]:
    """Per model call of ``rows``: tool name -> the arguments of each call of it that its output asked for, in
    order."""
    out: dict[int, dict[str, list[str | None]]] = {}
    for col in cols:
        texts = spans[col].iloc[rows].astype(object).tolist()
        for row, text in zip(rows.tolist(), texts, strict=True):
            calls = _calls(text) if isinstance(text, str) else {}
            if calls and row not in out:
                out[row] = calls
    return out


def _calls(text: str) -> dict[str, list[str | None]]:
    out: dict[str, list[str | None]] = {}
    for part in tool_call_parts(text):
        if isinstance(part.get("name"), str):
            args = part.get("arguments")
            out.setdefault(part["name"], []).append(None if args is None else canonical(args))
    return out


def _named(name: str, asked: dict[str, list[str | None]]) -> str | None:
    """The asked tool the span's name names (the longest, when several fit)."""
    fits = [t for t in asked if t and (name == t or any(name.endswith(s + t) for s in _SEPARATORS))]
    return max(fits, key=len) if fits else None


def _nth(args: list[str | None], i: int) -> str | None:
    return args[i] if i < len(args) else None
