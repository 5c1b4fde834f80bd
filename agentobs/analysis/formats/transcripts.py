"""Import chat transcripts (OpenAI-style message lists) as the span frames the OTLP loader produces.

Two input shapes are accepted:

* tau2-bench results, ``{"info": ..., "simulations": [...]}`` (format ``"tau2"``);
* a generic list of runs, ``[{"id", "messages", "label"|"success", "agent", "model"}, ...]`` or
  ``{"runs": [...]}`` (optionally with file-level ``agent``/``model``/``provider``/``service`` defaults),
  a single run ``{"messages": [...]}`` or a bare message list (format ``"openai"``).

Every run becomes one trace, shaped like Pydantic AI's (no step spans)::

    invoke_agent {agent}      INTERNAL  run totals, label, termination, cost, format, timing
    ├── chat {model}          CLIENT    one per model call (an assistant message that is one)
    ├── execute_tool {tool}   INTERNAL  one per tool call the *agent* made (user-side calls excluded)
    └── ...

Ids are sha256-derived from ``source`` and the run id, so re-importing the same file gives the same ids.

Decisions on ambiguous input (kept in one place here; the tests pin them):

* Model calls. tau2: assistant messages whose ``usage`` is not null (the canned greeting has null usage).
  Generic: the same rule when any assistant message of the run reports usage; when none does, every
  assistant message is a model call and its tokens are unknown (null, never 0). ``usage`` present but
  malformed still marks a model call, with null tokens and a data-quality note.
* Run token totals are the sum over the run's model calls; null as soon as one call's tokens are unknown.
  Token counts are 64-bit: a count above 2**63 - 1 (or not a whole number) is malformed usage, and a total
  that would exceed it is null, with a data-quality note either way.
  Tokens on ``user`` messages (tau2's user simulator) are not the agent's and are ignored.
* Tool calls are taken from assistant messages only, and never when ``requestor == "user"``; the number of
  user-side calls seen is kept on the root (``agentobs.transcript.user_tool_calls``).
* ``gen_ai.response.finish_reasons`` is the provider's reported finish reason when the transcript keeps it
  (tau2 ``raw_data.finish_reason``, a generic message's ``finish_reason``), else ``tool_calls``/``stop``
  from whether the message carries tool calls.
* A tool call's result is the first later ``tool`` message with the same call id (``id`` in tau2,
  ``tool_call_id`` in OpenAI). ``error: true`` on it sets the span status ERROR, ``error.type`` =
  ``tool_error``, the status message = the result's first line (at most 200 characters) and
  ``agentobs.tool.result_status`` = ``error`` (``ok`` for other results, null when there is no result).
* Times. ``recorded`` when any message has a usable ISO 8601 timestamp (naive timestamps are taken as
  UTC; a time the spans' 64-bit nanoseconds cannot hold, before 1677-09-21 or after 2262-04-11, is unusable;
  gaps are filled from the previous message, and times are clamped to be non-decreasing so no span ends before
  it starts); otherwise ``synthetic``: message ``i`` is at ``i + 1`` seconds after the run's ``start_time``, or
  after 2000-01-01T00:00:00Z when the run has none. A chat span runs from the previous message's time (the run
  start for the first) to its own; a tool span from the message before its result to the result (zero length at the
  call's message when there is no result); the root from ``min(start_time, first message)`` to
  ``max(end_time, last message)``.
* Cost. The run's cost (tau2 ``agent_cost``, a generic run's ``cost``, else the sum of its model calls'
  ``cost``) goes to ``agentobs.cost_usd``; each call's to ``agentobs.call.cost_usd``. A cost of exactly 0
  for a call that used tokens means the model was not priced (tau2's fine-tuned model: every call 0 USD),
  so it is null, counted in ``agentobs.unpriced_calls``, and a run total of 0 over such calls is null too.
* Root status is ERROR (``error.type`` = the reason) when the run ended abnormally: a termination reason
  other than ``user_stop``/``agent_stop``. A failed task (reward 0) is a label, not an error status.
* tau2's ``task_id`` names the benchmark task, which both agents and every trial share: it goes to
  ``agentobs.transcript.task_id``, not to ``agentobs.task.id`` (which identifies one run across resumes).

Nothing here raises on bad content: problems are counted in the ``SpanSet``'s ``DataQuality``
(``bad_run`` once per affected run, with an example; ``unreadable``, ``empty_file``, ``invalid_json``,
``unknown_format`` for the whole file).
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ...contract import semconv as sc
from ...contract.digest import digest as args_digest
from ..input import remote
from ..input.json_stream import Broken, Reader
from ..input.json_text import clean_strings
from ..input.limits import InputLimits
from ..input.read import Document
from ..spans.quality import DataQuality
from ..spans.schema import SPAN_BASE, empty_spans
from ..spans.spanset import SpanSet

FORMAT_TAU2, FORMAT_OPENAI = "tau2", "openai"

# -- attribute keys this importer adds (the conventions define none of them) ----------------------------
LABEL_SUCCESS = "agentobs.label.success"
LABEL_REWARD = "agentobs.label.reward"
TRANSCRIPT_FORMAT = "agentobs.transcript.format"          # "tau2" | "openai"
TRANSCRIPT_TIMING = "agentobs.transcript.timing"          # "recorded" | "synthetic"
TRANSCRIPT_TERMINATION = "agentobs.transcript.termination"
TRANSCRIPT_TASK_ID = "agentobs.transcript.task_id"        # the benchmark task (shared by agents and trials)
TRANSCRIPT_DOMAIN = "agentobs.transcript.domain"
TRANSCRIPT_TRIAL = "agentobs.transcript.trial"
TRANSCRIPT_USER_TOOL_CALLS = "agentobs.transcript.user_tool_calls"

TOOL_ERROR = "tool_error"
NORMAL_TERMINATIONS = frozenset({"user_stop", "agent_stop"})
SYNTHETIC_EPOCH_NS = 946_684_800 * 10**9                  # 2000-01-01T00:00:00Z
_NS = 10**9
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1        # what the Int64 columns (tokens, times) hold

# Every key emitted, with its contract type. Each is a column of the spans frame, even when all null,
# so a transcript import always has the same schema.
ATTRIBUTE_TYPES: dict[str, str] = {
    sc.OPERATION_NAME: "string", sc.AGENT_NAME: "string", sc.PROVIDER_NAME: "string",
    sc.REQUEST_MODEL: "string", sc.CONVERSATION_ID: "string",
    sc.USAGE_INPUT_TOKENS: "int", sc.USAGE_OUTPUT_TOKENS: "int",
    sc.RESPONSE_FINISH_REASONS: "string[]", sc.USAGE_SOURCE: "string", sc.CALL_COST_USD: "double",
    sc.TOOL_NAME: "string", sc.TOOL_CALL_ID: "string", sc.TOOL_TYPE: "string",
    sc.TOOL_CALL_ARGUMENTS: "string", sc.TOOL_ARGS_DIGEST: "string", sc.TOOL_RESULT_STATUS: "string",
    sc.ERROR_TYPE: "string", sc.COST_USD: "double", sc.UNPRICED_CALLS: "int",
    LABEL_SUCCESS: "bool", LABEL_REWARD: "double",
    TRANSCRIPT_FORMAT: "string", TRANSCRIPT_TIMING: "string", TRANSCRIPT_TERMINATION: "string",
    TRANSCRIPT_TASK_ID: "string", TRANSCRIPT_DOMAIN: "string", TRANSCRIPT_TRIAL: "int",
    TRANSCRIPT_USER_TOOL_CALLS: "int",
}
for _k, _t in ATTRIBUTE_TYPES.items():
    assert sc.ATTRIBUTE_TYPES.get(_k, _t) == _t, _k

_KIND_INTERNAL, _KIND_CLIENT = 1, 3
_STATUS_UNSET, _STATUS_ERROR = 0, 2
_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
_TAU2_DOMAINS = ("airline", "retail", "telecom", "mock")


# -- entry points ------------------------------------------------------------------------------------

def load_transcripts(path: str | os.PathLike[str], name: str | None = None) -> SpanSet:
    """Loads one transcript file (.json, optionally gzip-compressed), a run at a time: the file is read twice (its
    shape and the file-level fields, then its runs one by one, ``_json_stream``), so what is held is one run and the
    spans made so far, never the document as Python objects. ``name``: the source's name when ``path`` is a copy (a
    stream's). Never raises for bad content; a document broken part way (cut short) keeps the runs before the break
    and costs one ``invalid_json``."""
    url = remote.is_url(path)                 # an object in an fsspec filesystem (s3://...): read as it is named
    p = path if url else Path(path)
    src = name or (remote.redacted_url(str(path)) if url else str(p))
    q = DataQuality(files=1)
    limits = InputLimits.resolve()
    try:
        with Document(p, limits) as f:
            first = Reader(f)
            shape = _Shape.read(first)
            if shape.trailing is not None or shape.broken is not None:
                while f.read(1 << 20):          # to its end: a compressed stream's break is told before the text's
                    pass
            cut = f.broken
        if cut is not None:             # a compressed stream that ends early or is corrupt: the runs before are read
            q.add("unreadable", src, example=f"the compressed stream ends early or is corrupt ({cut})"[:120])
        if first.surrogates:
            _cleaned(shape.outline, src, q)
        if shape.empty:
            if cut is None:
                q.add("empty_file", src)
            return SpanSet(quality=q, sources=[src])
        fmt = detect_format(shape.outline)
        if fmt is None:
            if cut is None:
                q.add("invalid_json" if shape.broken is not None else "unknown_format", src,
                      example=str(shape.broken)[:120] if shape.broken is not None else shape.describe())
            return SpanSet(quality=q, sources=[src])
        with Document(p, limits) as f:
            out = _to_spans(_runs_of(Reader(f), shape, fmt, src, q), src, q, counted=cut is None)
        if shape.trailing is not None and cut is None:
            q.add("invalid_json", src, example=str(shape.trailing))
        return out
    except (OSError, EOFError, zlib.error) as exc:      # gzip.BadGzipFile is an OSError
        q.add("unreadable", src, example=str(exc)[:120])
        return SpanSet(quality=q, sources=[src])


def transcripts_to_spans(obj: Any, source: str, quality: DataQuality | None = None, *,
                         clean_text: bool = True) -> SpanSet:
    """Converts an already-parsed transcript document. Never raises for bad content. Text that UTF-8 cannot hold (a
    lone surrogate) is replaced in the document, in place, and counted; ``clean_text=False``: the caller knows
    there is none."""
    q = quality if quality is not None else DataQuality()
    if clean_text:
        _cleaned(obj, source, q)
    fmt = detect_format(obj)
    if fmt is None:
        q.add("unknown_format", source, example=_describe(obj))
        return SpanSet(quality=q, sources=[source])
    runs = _tau2_runs(obj, source) if fmt == FORMAT_TAU2 else _openai_runs(obj)
    return _to_spans(iter(runs), source, q)


def _cleaned(obj: Any, source: str, q: DataQuality) -> None:
    """Replaces, in place, each lone surrogate in the strings of ``obj``, counted."""
    changed = clean_strings(obj)
    if changed:
        q.add("bad_value", source, count=changed,
              example="text with a lone UTF-16 surrogate (an escape such as \\ud800 alone): replaced by '?'")


def _to_spans(runs: Iterator[_TranscriptRun | None], source: str, q: DataQuality, *, counted: bool = True) -> SpanSet:
    """The spans of the runs, a run at a time; a ``Broken`` document ends them (counted, unless ``counted`` is
    False: the break was counted as the compressed stream's)."""
    builder = _SpanBuilder(source)
    seen: dict[str, int] = defaultdict(int)
    n = -1
    while True:
        try:
            raw = next(runs)
        except StopIteration:
            break
        except Broken as exc:               # the document breaks here: the runs before it are kept
            if counted:
                q.add("invalid_json", source, example=str(exc)[:120])
            break
        n += 1
        problems: list[str] = []
        label = f"#{n}"
        try:
            run = raw if isinstance(raw, _TranscriptRun) else None
            if run is None:
                problems.append("skipped: not an object")
            else:
                label = run.run_id if run.run_id is not None else label
                seen[run.key] += 1
                if seen[run.key] > 1:
                    problems.append(f"duplicate run id (imported as copy {seen[run.key]})")
                    run.key = f"{run.key}\x00{seen[run.key]}"
                for row in _import_run(run, builder.source, problems):
                    builder.add(row)
        except Exception as exc:  # the contract is to never raise on content
            problems.append(f"skipped: {type(exc).__name__}: {exc}"[:160])
        if problems:
            more = f" (+{len(problems) - 3} more)" if len(problems) > 3 else ""
            q.add("bad_run", source, example=f"run {label}: {'; '.join(problems[:3])}{more}"[:300])
    return SpanSet(spans=builder.frame(), quality=q, sources=[source])


def detect_format(obj: Any) -> str | None:
    """``"tau2"``, ``"openai"`` or None for a parsed document."""
    if isinstance(obj, dict):
        if isinstance(obj.get("simulations"), list):
            return FORMAT_TAU2
        if isinstance(obj.get("runs"), list) or isinstance(obj.get("messages"), list):
            return FORMAT_OPENAI
        return None
    if isinstance(obj, list):
        if not obj:
            return FORMAT_OPENAI
        dicts = [x for x in obj if isinstance(x, dict)]
        if any("messages" in x for x in dicts) or (dicts and all("role" in x for x in dicts)):
            return FORMAT_OPENAI
    return None


# -- normalised runs ---------------------------------------------------------------------------------

@dataclass
class _TranscriptRun:
    fmt: str
    key: str                        # what the trace id is derived from
    run_id: str | None              # the application's id (gen_ai.conversation.id), never invented
    messages: Any
    agent: str | None = None
    model: str | None = None
    provider: str | None = None
    service: str | None = None
    success: bool | None = None
    reward: float | None = None
    termination: str | None = None
    cost: float | None = None
    start_time: Any = None
    end_time: Any = None
    task_id: str | None = None
    domain: str | None = None
    trial: int | None = None
    problems: list[str] = field(default_factory=list)


def _obj(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _tau2_runs(doc: dict[str, Any], source: str) -> list[_TranscriptRun | None]:
    defaults = _tau2_defaults(doc, source)
    return [_tau2_run(defaults, n, s) for n, s in enumerate(doc["simulations"])]


def _tau2_defaults(doc: dict[str, Any], source: str) -> dict[str, Any]:
    """What every simulation of a tau2 document shares, from its ``info`` (and the file's name)."""
    info = _obj(doc.get("info"))
    agent_info = _obj(info.get("agent_info"))
    env_info = _obj(info.get("environment_info"))
    domain = _str(env_info.get("domain_name"))
    model = _str(agent_info.get("llm")) or _model_from_file_name(source, domain)
    return {"agent": _str(agent_info.get("implementation")) or "tau2_agent", "model": model,
            "provider": _provider(None, model), "domain": domain or _domain_from_file_name(source)}


def _tau2_run(defaults: dict[str, Any], n: int, s: Any) -> _TranscriptRun | None:
    if not isinstance(s, dict):
        return None
    run_id = _id(s.get("id"))
    reward_info = s.get("reward_info")
    reward = _num(reward_info.get("reward")) if isinstance(reward_info, dict) else None
    trial = _int(s.get("trial"))
    problems = []
    if trial is None and _big_int(s.get("trial")):
        problems.append(f"trial {json.dumps(s.get('trial'), default=str)[:40]} is out of range (ignored)")
    return _TranscriptRun(
        fmt=FORMAT_TAU2, key=run_id if run_id is not None else f"#{n}", run_id=run_id,
        messages=s.get("messages"), agent=defaults["agent"], model=defaults["model"], provider=defaults["provider"],
        service="tau2-bench", success=None if reward is None else reward == 1.0, reward=reward,
        termination=_str(s.get("termination_reason")), cost=_num(s.get("agent_cost")),
        start_time=s.get("start_time"), end_time=s.get("end_time"), task_id=_id(s.get("task_id")),
        domain=defaults["domain"], trial=trial, problems=problems)


def _openai_runs(doc: Any) -> list[_TranscriptRun | None]:
    defaults: dict[str, Any] = {}
    if isinstance(doc, dict) and isinstance(doc.get("runs"), list):
        defaults, runs = doc, doc["runs"]
    elif isinstance(doc, dict):
        runs = [doc]                                    # a single run {"messages": [...]}
    elif _bare_messages(doc):
        runs = [{"messages": doc}]                      # a bare message list: one run
    else:
        runs = doc
    return [_openai_run(defaults, n, r) for n, r in enumerate(runs)]


def _bare_messages(doc: list[Any]) -> bool:
    return bool(doc) and all(isinstance(x, dict) and "role" in x and "messages" not in x for x in doc)


def _openai_run(defaults: dict[str, Any], n: int, r: Any) -> _TranscriptRun | None:
    if not isinstance(r, dict):
        return None
    run_id = _id(r.get("id"))
    label = r.get("label", r.get("success"))
    model = _str(r.get("model")) or _str(defaults.get("model"))
    provider = _str(r.get("provider")) or _str(defaults.get("provider"))
    problems = []
    if label is not None and not isinstance(label, bool):
        problems.append(f"label is not a boolean: {json.dumps(label, default=str)[:40]}")
        label = None
    cost = _num(r.get("cost"))
    return _TranscriptRun(
        fmt=FORMAT_OPENAI, key=run_id if run_id is not None else f"#{n}", run_id=run_id,
        messages=r.get("messages"), agent=_str(r.get("agent")) or _str(defaults.get("agent")), model=model,
        provider=_provider(provider, model), service=_str(r.get("service")) or _str(defaults.get("service")),
        success=label, termination=_str(r.get("termination_reason", r.get("termination"))), cost=cost,
        start_time=r.get("start_time"), end_time=r.get("end_time"), task_id=_id(r.get("task_id")),
        problems=problems)


# -- a document read a run at a time -----------------------------------------------------------------------------

_RUN_ARRAYS = ("simulations", "runs", "messages")
_DEFAULTS = ("info", "agent", "model", "provider", "service")     # file-level fields a run may take


@dataclass
class _Shape:
    """What a first reading of a document tells: its outline (the document with its arrays of runs or messages
    empty and the fields no run takes left out, for ``detect_format`` and ``_describe``), for a top-level list
    what its elements are, and where it broke, if it did."""
    empty: bool = False
    outline: Any = None
    broken: Broken | None = None
    trailing: Broken | None = None  # text after the document (it is read, then counted)
    elements: int = 0
    bare: bool = True               # every element a message (a dict with a role and no messages)
    runs: bool = False              # some element a run (a dict with messages)
    roles: bool = True              # every dict element with a role
    dicts: int = 0
    first: str = ""                 # the type of the first element

    def describe(self) -> str:
        if isinstance(self.outline, list):
            return f"list of {self.elements}" + (f" starting with a {self.first}" if self.elements else "")
        return _describe(self.outline)

    @classmethod
    def read(cls, r: Reader) -> _Shape:
        shape = cls()
        try:
            kind = r.kind()
            if kind == "":
                shape.empty = True
            elif kind == "{":
                shape.outline = {}
                for key in r.members():
                    shape.outline[key] = _outline_value(r, key)
            elif kind == "[":
                shape.outline = []
                for _ in r.elements():
                    shape.element(r.value())
            else:
                shape.outline = r.value()
            if not shape.empty and not r.at_end():
                shape.trailing = Broken("more text after the document", r.line)
        except Broken as exc:
            shape.broken = exc
        if isinstance(shape.outline, list) and shape.elements:
            # detect_format's view of the list: a stand-in element for what the elements are
            shape.outline = [{"messages": []} if shape.runs else {"role": None} if shape.dicts and shape.roles
                             else None]
        return shape

    def element(self, x: Any) -> None:
        if not self.elements:
            self.first = type(x).__name__
        self.elements += 1
        self.bare = self.bare and isinstance(x, dict) and "role" in x and "messages" not in x
        if isinstance(x, dict):
            self.dicts += 1
            self.runs = self.runs or "messages" in x
            self.roles = self.roles and "role" in x


def _outline_value(r: Reader, key: str) -> Any:
    """A member's value in the outline: an array of runs or messages (or any other array or object) as an empty one
    of its kind, read past an element or member at a time; a file-level field a run takes, whole."""
    kind = r.kind()
    if key in _DEFAULTS:
        return r.value()
    if kind in ("[", "{"):
        for _ in r.elements() if kind == "[" else r.members():
            r.skip()                    # (an element or member at a time)
        return [] if kind == "[" else {}
    return r.value()


def _runs_of(r: Reader, shape: _Shape, fmt: str, source: str, q: DataQuality) -> Iterator[_TranscriptRun | None]:
    """The runs of a document whose ``_Shape`` was read, a run at a time (each cleaned of lone surrogates when the
    reader met an escaped one). A ``Broken`` document raises where it breaks."""
    outline = shape.outline
    if isinstance(outline, dict) and fmt == FORMAT_TAU2:
        defaults = _tau2_defaults(outline, source)
        yield from _member_runs(r, "simulations", lambda n, x: _tau2_run(defaults, n, x), source, q)
    elif isinstance(outline, dict) and isinstance(outline.get("runs"), list):
        yield from _member_runs(r, "runs", lambda n, x: _openai_run(outline, n, x), source, q)
    elif isinstance(outline, dict) or (shape.bare and shape.elements):   # one run: the document, or its messages
        doc = r.value()
        if r.surrogates:
            _cleaned(doc, source, q)
        yield _openai_run({}, 0, doc if isinstance(doc, dict) else {"messages": doc})
    else:
        for n in r.elements():
            x = r.value()
            if r.surrogates:
                _cleaned(x, source, q)
            yield _openai_run({}, n, x)


def _member_runs(r: Reader, key: str, run: Callable[[int, Any], _TranscriptRun | None], source: str,
                 q: DataQuality) -> Iterator[_TranscriptRun | None]:
    for member in r.members():
        if member != key:
            r.skip()
            continue
        for n in r.elements():
            x = r.value()
            if r.surrogates:
                _cleaned(x, source, q)
            yield run(n, x)


# -- one run -----------------------------------------------------------------------------------------

@dataclass
class _Msg:
    pos: int                        # index in the original message list (span ids derive from it)
    role: str
    ts: int | None                  # unix ns, None when absent or unusable
    usage: tuple[int | None, int | None] | None = None     # None: no usage; (None, None): malformed
    cost: float | None = None
    finish: str | None = None
    model: str | None = None
    calls: list[tuple[str | None, str, str, str]] = field(default_factory=list)   # (id, name, args JSON, digest)
    result_id: str | None = None
    error: bool = False
    content: Any = None


@dataclass(frozen=True, kw_only=True)
class _Row:
    """One span of an imported transcript run."""
    trace_id: str
    span_id: str
    parent: str | None
    name: str
    kind: int
    start_ns: int
    end_ns: int
    service: str | None
    attrs: dict[str, Any]
    status: int = _STATUS_UNSET
    message: str | None = None


def _import_run(run: _TranscriptRun, source: str, problems: list[str]) -> list[_Row]:
    """The run's span rows, root first; [] when the run is skipped (the reason goes to ``problems``)."""
    problems.extend(run.problems)
    if not isinstance(run.messages, list) or not run.messages:
        problems.insert(0, "skipped: no messages" if run.messages in (None, []) else
                        f"skipped: messages is a {type(run.messages).__name__}, not a list")
        return []
    msgs: list[_Msg] = []
    user_calls = 0
    for pos, m in enumerate(run.messages):
        parsed = _message(pos, m, problems)
        if parsed is None:
            continue
        calls = m.get("tool_calls")
        if isinstance(calls, list):     # the simulated user's calls: on user messages, or requested by "user"
            user_calls += sum(1 for c in calls if parsed.role != "assistant" or
                              (isinstance(c, dict) and c.get("requestor") == "user"))
        msgs.append(parsed)
    if not msgs:
        problems.insert(0, "skipped: no usable messages")
        return []

    # which assistant messages are model calls
    assistants = [m for m in msgs if m.role == "assistant"]
    if run.fmt == FORMAT_TAU2 or any(m.usage is not None for m in assistants):
        model_calls = {m.pos for m in assistants if m.usage is not None}
    else:
        model_calls = {m.pos for m in assistants}

    # times
    start_ns, end_ns, times, timing = _times(run, msgs, problems)

    trace_id = _hash(f"{source}\x00{run.key}", 32)
    root_id = _hash(f"{trace_id}/root", 16)
    rows: list[_Row] = []

    # results by call id, in message order
    results: dict[str, list[int]] = defaultdict(list)
    for k, m in enumerate(msgs):
        if m.role in ("tool", "function") and m.result_id is not None:
            results[m.result_id].append(k)

    tin: list[int | None] = []
    tout: list[int | None] = []
    call_costs: list[float] = []
    unpriced = 0
    for k, m in enumerate(msgs):
        if m.role != "assistant":
            continue
        model = m.model or run.model
        if m.pos in model_calls:
            pt, ct = m.usage if m.usage is not None else (None, None)
            tin.append(pt)
            tout.append(ct)
            finish = m.finish or ("tool_calls" if m.calls else "stop")
            cost = m.cost
            if cost == 0.0 and (pt or 0) + (ct or 0) > 0:
                cost = None                 # tokens that cost nothing: the model was not priced (tau2's ft model)
            if cost is None:
                unpriced += 1
            else:
                call_costs.append(cost)
            attrs_chat = {
                sc.OPERATION_NAME: sc.OP_CHAT, sc.PROVIDER_NAME: _provider(run.provider, model),
                sc.REQUEST_MODEL: model, sc.USAGE_INPUT_TOKENS: pt, sc.USAGE_OUTPUT_TOKENS: ct,
                sc.RESPONSE_FINISH_REASONS: [finish],
                sc.USAGE_SOURCE: "reported" if pt is not None and ct is not None else None,
                sc.CALL_COST_USD: cost}
            rows.append(_Row(trace_id=trace_id, span_id=_hash(f"{trace_id}/m{m.pos}", 16), parent=root_id,
                             name=f"{sc.OP_CHAT} {model}" if model else sc.OP_CHAT, kind=_KIND_CLIENT,
                             start_ns=times[k - 1] if k else start_ns, end_ns=times[k], service=run.service,
                             attrs=attrs_chat))
        for j, (call_id, name, args_json, fingerprint) in enumerate(m.calls):
            attrs: dict[str, Any] = {
                sc.OPERATION_NAME: sc.OP_EXECUTE_TOOL, sc.TOOL_NAME: name, sc.TOOL_CALL_ID: call_id,
                sc.TOOL_TYPE: "function", sc.TOOL_CALL_ARGUMENTS: args_json,
                sc.TOOL_ARGS_DIGEST: fingerprint}
            t0 = t1 = times[k]
            status, message = _STATUS_UNSET, None
            hit = _take_result(results.get(call_id) if call_id is not None else None, k)
            if hit is not None:
                res = msgs[hit]
                t0, t1 = times[hit - 1], times[hit]
                attrs[sc.TOOL_RESULT_STATUS] = "error" if res.error else "ok"
                if res.error:
                    attrs[sc.ERROR_TYPE] = TOOL_ERROR
                    status, message = _STATUS_ERROR, _first_line(res.content) or TOOL_ERROR
            rows.append(_Row(trace_id=trace_id, span_id=_hash(f"{trace_id}/m{m.pos}/t{j}", 16), parent=root_id,
                             name=f"{sc.OP_EXECUTE_TOOL} {name}", kind=_KIND_INTERNAL, start_ns=t0, end_ns=t1,
                             service=run.service, attrs=attrs, status=status, message=message))

    total_in, total_out = _total(tin, "input", problems), _total(tout, "output", problems)
    run_cost = run.cost
    if run_cost is None and call_costs:
        try:
            run_cost = math.fsum(call_costs)
        except OverflowError:
            problems.append("the calls' costs add up to more than a float holds (run cost unknown)")
    elif run_cost == 0.0 and unpriced and total_in != 0:
        run_cost = None                     # an unpriced model reports 0 USD: unknown, not free
    abnormal = run.termination is not None and run.termination not in NORMAL_TERMINATIONS
    root_attrs = {
        sc.OPERATION_NAME: sc.OP_INVOKE_AGENT, sc.AGENT_NAME: run.agent, sc.PROVIDER_NAME: run.provider,
        sc.REQUEST_MODEL: run.model, sc.CONVERSATION_ID: run.run_id,
        sc.USAGE_INPUT_TOKENS: total_in, sc.USAGE_OUTPUT_TOKENS: total_out,
        sc.COST_USD: run_cost, sc.UNPRICED_CALLS: unpriced,
        LABEL_SUCCESS: run.success, LABEL_REWARD: run.reward, TRANSCRIPT_TERMINATION: run.termination,
        TRANSCRIPT_FORMAT: run.fmt, TRANSCRIPT_TIMING: timing, TRANSCRIPT_TASK_ID: run.task_id,
        TRANSCRIPT_DOMAIN: run.domain, TRANSCRIPT_TRIAL: run.trial, TRANSCRIPT_USER_TOOL_CALLS: user_calls,
        sc.ERROR_TYPE: run.termination if abnormal else None}
    root = _Row(trace_id=trace_id, span_id=root_id, parent=None,
                name=f"{sc.OP_INVOKE_AGENT} {run.agent}" if run.agent else sc.OP_INVOKE_AGENT, kind=_KIND_INTERNAL,
                start_ns=start_ns, end_ns=end_ns, service=run.service, attrs=root_attrs,
                status=_STATUS_ERROR if abnormal else _STATUS_UNSET, message=run.termination if abnormal else None)
    return [root, *rows]


def _message(pos: int, m: Any, problems: list[str]) -> _Msg | None:
    if not isinstance(m, dict):
        problems.append(f"message {pos} is a {type(m).__name__}, not an object (skipped)")
        return None
    role = m.get("role")
    if role not in _ROLES:
        problems.append(f"message {pos} has role {json.dumps(role, default=str)[:30]} (skipped)")
        return None
    ts = None
    raw_ts = m.get("timestamp")
    if raw_ts is not None:
        ts = _parse_time(raw_ts)
        if ts is None:
            problems.append(f"message {pos} has an unusable timestamp {_unusable_time(raw_ts)}")
    out = _Msg(pos=pos, role=role, ts=ts)
    if role == "assistant":
        out.usage = _usage(m.get("usage"), pos, problems)
        out.cost = _num(m.get("cost"))
        out.model = _str(m.get("model"))
        raw = m.get("raw_data")
        out.finish = _str(m.get("finish_reason")) or (_str(raw.get("finish_reason")) if isinstance(raw, dict) else None)
        calls = m.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            problems.append(f"message {pos}: tool_calls is a {type(calls).__name__}, not a list (ignored)")
            calls = None
        for j, c in enumerate(calls or []):
            call = _tool_call(c, pos, j, problems)
            if call is not None:
                out.calls.append(call)
    elif role in ("tool", "function"):
        out.result_id = _id(m.get("tool_call_id", m.get("id")))
        out.error = m.get("error") is True
        out.content = m.get("content")
    return out


def _tool_call(c: Any, pos: int, j: int, problems: list[str]) -> tuple[str | None, str, str, str] | None:
    if not isinstance(c, dict):
        problems.append(f"message {pos}: tool call {j} is not an object (skipped)")
        return None
    if c.get("requestor") == "user":
        return None                                     # the simulated user's call, not the agent's
    fn = c.get("function")
    if isinstance(fn, dict):                            # OpenAI shape
        name, args = fn.get("name"), fn.get("arguments")
    else:                                               # tau2 shape
        name, args = c.get("name"), c.get("arguments")
    if not isinstance(name, str) or not name:
        problems.append(f"message {pos}: tool call {j} has no name (skipped)")
        return None
    if args is None or (isinstance(args, str) and not args.strip()):
        args = {}
    elif isinstance(args, str):
        try:
            args = json.loads(args)
        except (ValueError, RecursionError):
            problems.append(f"message {pos}: tool call {j} ({name}) has unparsable arguments (kept as text)")
            return _id(c.get("id")), name, args, args_digest(name, args)
    try:
        text = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        fingerprint = args_digest(name, args)
    except (TypeError, ValueError):     # only for Python objects handed in directly (mixed-type keys)
        text = str(args)
        fingerprint = args_digest(name, text)
    return _id(c.get("id")), name, text, fingerprint


def _usage(u: Any, pos: int, problems: list[str]) -> tuple[int | None, int | None] | None:
    if u is None:
        return None
    if isinstance(u, dict):
        raw_pt = u.get("prompt_tokens", u.get("input_tokens"))
        raw_ct = u.get("completion_tokens", u.get("output_tokens"))
        pt, ct = _int(raw_pt), _int(raw_ct)
        if pt is not None and ct is not None and pt >= 0 and ct >= 0:
            return pt, ct
        big = [json.dumps(v) for v in (raw_pt, raw_ct) if _big_int(v)]
        if big:
            problems.append(f"message {pos}: token count {big[0][:30]} is more than a 64-bit integer holds "
                            "(tokens unknown)")
            return None, None
    problems.append(f"message {pos}: malformed usage {json.dumps(u, default=str)[:60]} (tokens unknown)")
    return None, None


def _take_result(candidates: list[int] | None, after: int) -> int | None:
    if not candidates:
        return None
    for i, k in enumerate(candidates):
        if k > after:
            return candidates.pop(i)
    return None


def _times(run: _TranscriptRun, msgs: list[_Msg], problems: list[str]) -> tuple[int, int, list[int], str]:
    st, et = _parse_time(run.start_time), _parse_time(run.end_time)
    for name, raw_t, parsed in (("start_time", run.start_time, st), ("end_time", run.end_time, et)):
        if raw_t is not None and parsed is None:
            problems.append(f"unusable {name} {_unusable_time(raw_t)}")
    raw = [m.ts for m in msgs]
    if all(t is None for t in raw):            # message i at i + 1 s after the run's start, else after 2000-01-01
        first = st if st is not None else SYNTHETIC_EPOCH_NS
        times = [first + (m.pos + 1) * _NS for m in msgs]
        start, timing = first, "synthetic"
    else:
        times = np.maximum.accumulate(pd.Series(raw, dtype="Int64").ffill().bfill().to_numpy(dtype=np.int64)).tolist()
        start, timing = times[0], "recorded"
    end = times[-1]
    if st is not None:
        start = min(start, st)
    if et is not None and (st is not None or timing == "recorded"):   # (not an end decades after 2000-01-01)
        end = max(end, et)
    return start, end, times, timing


# -- the frame ---------------------------------------------------------------------------------------

class _SpanBuilder:
    """Column lists for the spans frame; attributes stored sparsely as (row, value)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.base: dict[str, list[Any]] = {c: [] for c in ("trace_id", "span_id", "parent_span_id", "name", "kind",
                                                           "start_ns", "end_ns", "status_code", "status_message",
                                                           "service_name")}
        self.attrs: dict[str, list[tuple[int, Any]]] = {k: [] for k in ATTRIBUTE_TYPES}
        self.n = 0

    def add(self, r: _Row) -> None:
        row = self.n
        for c, v in (("trace_id", r.trace_id), ("span_id", r.span_id), ("parent_span_id", r.parent), ("name", r.name),
                     ("kind", r.kind), ("start_ns", r.start_ns), ("end_ns", r.end_ns), ("status_code", r.status),
                     ("status_message", r.message), ("service_name", r.service)):
            self.base[c].append(v)
        for k, v in r.attrs.items():
            if v is not None:
                self.attrs[k].append((row, v))
        self.n += 1

    def frame(self) -> pd.DataFrame:
        n = self.n
        if n == 0:
            return empty_spans()
        string = pd.StringDtype("pyarrow")
        cols: dict[str, Any] = {}
        for c, dtype in SPAN_BASE.items():
            if c == "source":
                cols[c] = pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), categories=[self.source])
            elif dtype == "string":
                cols[c] = pd.array(self.base[c], dtype=string)
            elif dtype == "int8":
                cols[c] = np.asarray(self.base[c], dtype=np.int8)
            else:
                cols[c] = pd.array(self.base[c], dtype=dtype)
        for k, kind in ATTRIBUTE_TYPES.items():
            values: list[Any] = [None] * n
            for r, v in self.attrs[k]:
                values[r] = v
            cols[k] = _typed_column(values, kind)
        return pd.DataFrame(cols)


def _typed_column(values: list[Any], kind: str) -> Any:
    if kind == "string":
        return pd.array(values, dtype=pd.StringDtype("pyarrow"))
    if kind == "int":
        return pd.array(values, dtype="Int64")
    if kind == "double":
        return pd.array(values, dtype="Float64")
    if kind == "bool":
        return pd.array(values, dtype="boolean")
    typ = pa.list_(pa.string())
    return pd.arrays.ArrowExtensionArray(pa.array(values, type=typ))


# -- small helpers -----------------------------------------------------------------------------------

def _hash(text: str, n: int) -> str:
    h = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:n]
    return h if h.strip("0") else "1".rjust(n, "0")     # an all-zero id is invalid in OTLP


def _parse_time(v: Any) -> int | None:
    if not isinstance(v, str) or not v:
        return None
    try:
        dt = datetime.fromisoformat(v.strip())
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)            # naive timestamps (tau2's) are taken as UTC
    delta = dt - datetime(1970, 1, 1, tzinfo=UTC)
    ns = (delta.days * 86_400 + delta.seconds) * _NS + delta.microseconds * 1000
    return ns if _INT64_MIN <= ns <= _INT64_MAX else None     # 0001-01-01 or 9999-12-31: not a span time


def _unusable_time(v: Any) -> str:
    """An unusable time as shown in a data-quality example, saying why when it is a valid date out of range."""
    shown = json.dumps(v, default=str)[:40]
    try:
        datetime.fromisoformat(v.strip())
    except (AttributeError, TypeError, ValueError):
        return shown
    return f"{shown} (out of range: spans hold 1677-09-21 to 2262-04-11)"


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


def _id(v: Any) -> str | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, str) and v:
        return v
    if isinstance(v, int):
        return str(v)
    return None


def _int(v: Any) -> int | None:
    """A whole number a 64-bit integer holds (``3`` or ``3.0``), else None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, int) and _INT64_MIN <= v <= _INT64_MAX:
        return v
    return None


def _big_int(v: Any) -> bool:
    """True for a whole number too large (either sign) for a 64-bit integer: ``2**63``, ``1e300``."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and not math.isfinite(v)):
        return False
    return not _INT64_MIN <= v <= _INT64_MAX


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:           # an integer beyond a double's range: no usable number
        return None
    return f if math.isfinite(f) else None


def _total(values: list[int | None], what: str, problems: list[str]) -> int | None:
    """The sum, or None when a value is unknown or the sum is more than a 64-bit integer holds (noted)."""
    if any(v is None for v in values):
        return None
    total = int(sum(values))    # type: ignore[arg-type]
    if not _INT64_MIN <= total <= _INT64_MAX:
        problems.append(f"the run's {what} tokens add up to {total}, more than a 64-bit integer holds (total unknown)")
        return None
    return total


def _first_line(content: Any) -> str | None:
    if content is None:
        return None
    text = content if isinstance(content, str) else json.dumps(content, default=str)
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line[:200] or None


def _provider(explicit: str | None, model: str | None) -> str | None:
    """The provider when it is given or evident from the model name (``openai/...``, ``gpt-*``, ``ft:gpt-*``)."""
    if explicit:
        return explicit
    if not model:
        return None
    if "/" in model:
        return model.split("/", 1)[0] or None
    if re.match(r"^(ft:)?(gpt-|o\d|chatgpt-)", model):
        return "openai"
    return None


def _domain_from_file_name(source: str) -> str | None:
    parts = Path(source).name.split("_")
    return next((d for d in _TAU2_DOMAINS if d in parts), None)


def _model_from_file_name(source: str, domain: str | None) -> str | None:
    """tau2 names results ``{agent llm}_{domain}_{user strategy}_{user llm}_{n}trials.json``; the copies
    here have ``:`` replaced by ``_`` (fine-tuned names ``ft:base:org:suffix:id``)."""
    stem = Path(source).name.split(".json")[0]
    domains = [domain] if domain else list(_TAU2_DOMAINS)
    for d in domains:
        m = re.match(rf"^(?P<llm>.+?)_{re.escape(d)}_", stem)
        if m:
            llm = m.group("llm")
            return llm.replace("_", ":") if llm.startswith("ft_") else llm
    return None


def _describe(obj: Any) -> str:
    if isinstance(obj, dict):
        return "object with keys " + ", ".join(sorted(map(str, obj))[:6])
    if isinstance(obj, list):
        return f"list of {len(obj)}" + (f" starting with a {type(obj[0]).__name__}" if obj else "")
    return type(obj).__name__
