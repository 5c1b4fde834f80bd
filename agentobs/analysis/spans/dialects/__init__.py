"""Span dialects: every span's role decided once from the evidence on it, and its values read from whichever
dialect it speaks.

A role is orchestration (``agent``; ``chain``: a framework's chain, workflow, graph or crew), a model call
(``chat``), a tool call (``tool``), retrieval, transport (an HTTP or RPC span), our ``step``, or ``other``. With
it come the span's model, provider, tool name, tool arguments, token counts (input, output, cache read, cache
creation, reasoning), cost, error type and finish reason, where its dialect records them (``normalize``). The runs
table, signatures, percentiles and caps are computed from this normalized form only.

Each dialect is a table (``_table.Dialect``: data, no code). The evidence of every dialect is gathered for every
span, in this order:

    1. langfuse       ``langfuse.observation.type`` (an explicit observation type)
    2. openinference  ``openinference.span.kind``
    3. genai          ``gen_ai.operation.name`` (current and older GenAI names, Pydantic AI / Logfire)
    4. vercel_ai      ``ai.operationId`` (the Vercel AI SDK)
    5. genkit         ``genkit:metadata:subtype``, Genkit's ``generate`` util span (Firebase Genkit)
    6. openllmetry    ``traceloop.span.kind``, then ``llm.request.type``
    7. mlflow         ``mlflow.spanType``
    8. langsmith      ``langsmith.span.kind``
    9. agentobs       our ``agentobs.step`` span
    10. names          span names: ``invoke_agent ...``, ``chat ...``, ``execute_tool ...``, Logfire's
                      ``agent run`` / ``running tool``

Disagreements: a dialect that names a role beats one that only marks the span as its own (a marker value with no
role we count, such as OpenInference's ``UNKNOWN`` or a GenAI ``create_agent``); among dialects that name a role,
the first in the order decides. Where no dialect names a role, structure decides (``_structure``): a span carrying
a model id and token usage is a model call, one carrying a tool name and tool arguments a tool call, one carrying
HTTP or RPC attributes transport. Each value is read from the deciding dialect first and, where it records none,
from the others in the order above, then from keys shaped like the value (``_structure.generic``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from . import _structure
from ._evaluate import UNNAMED, Fields, claim, fields
from ._fields import UNUSABLE, prefer, text
from ._structure import NAMED_TOOL_RULE
from ._table import (
    AGENT,
    ANSWER,
    CALLS,
    CHAIN,
    CHAT,
    FINAL_ANSWER_TOOLS,
    HANDOFF,
    HANDOFF_TOOL_PREFIXES,
    HANDOFF_TOOLS,
    KIND_NAMES,
    NOT_HANDOFF_PREFIXES,
    NUMBER_FIELDS,
    ORCHESTRATION,
    OTHER,
    PROVIDER_FAILURES,
    RETRIEVAL,
    STEP,
    TEXT_FIELDS,
    TOOL,
    TOOL_FAILURES,
    TRANSPORT,
    Dialect,
)
from .agentobs_steps import AGENTOBS
from .genai import GENAI, NAMES
from .genkit import GENKIT
from .langfuse import LANGFUSE
from .langsmith import LANGSMITH
from .mlflow import MLFLOW
from .openinference import OPENINFERENCE
from .openllmetry import OPENLLMETRY
from .vercel_ai import VERCEL_AI

REGISTRY: tuple[Dialect, ...] = (LANGFUSE, OPENINFERENCE, GENAI, VERCEL_AI, GENKIT, OPENLLMETRY, MLFLOW, LANGSMITH,
                                 AGENTOBS, NAMES)
STRUCTURE = len(REGISTRY)                  # the evidence code of a role decided by structure
DIALECT_NAMES = np.array([d.name for d in REGISTRY] + ["structure", "none"], dtype=object)
# values only these roles need: the rest are not read (a million spans, few of them model calls)
_NEEDED_BY = {AGENT, CHAIN, CHAT, TOOL, HANDOFF}
# what may be wrong with a token count or cost read, in the order ``normalize`` looks (``Normalized.unusable``)
UNUSABLE_KINDS = ("not a number", "negative")
SESSION_KEYS = tuple(dict.fromkeys(k for d in REGISTRY for k in d.session))


@dataclass(kw_only=True)
class Normalized:
    """The role and normalized values of every span, aligned with the spans frame's rows."""
    kind: np.ndarray                 # int8 role: OTHER, AGENT, STEP, CHAT, TOOL, CHAIN, RETRIEVAL, TRANSPORT
    dialect: np.ndarray              # int8 index into DIALECT_NAMES (-1: nothing gave the span a role)
    fields: Fields                   # TEXT_FIELDS (object arrays), NUMBER_FIELDS (float64), "error" (bool)
    counts: dict[str, int] = field(default_factory=dict)   # spans given a role by each dialect, and by structure
    # per number field and what was wrong ("negative", "not a number"), the rows whose value a count or a cost
    # cannot be: left unknown
    unusable: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    rule: np.ndarray = field(default_factory=lambda: np.array([], dtype=np.int8))   # structure rule (-1: none)
    # per span: tools were offered to it (a model call), False where not or not recorded; None: no dialect records it
    offers_tools: np.ndarray | None = None
    session: Any = None              # per span, its conversation or session id (a string array; None: no span has one)

    @property
    def kind_names(self) -> np.ndarray:
        return KIND_NAMES[self.kind]

    @property
    def unclassified(self) -> np.ndarray:
        """Spans nothing gave a role."""
        return self.dialect < 0


def normalize(spans: pd.DataFrame) -> Normalized:
    n = len(spans)
    kind = np.full(n, -1, dtype=np.int8)
    dialect = np.full(n, -1, dtype=np.int8)
    present: list[int] = []
    unnamed = np.zeros(n, dtype=bool)        # only marked as a dialect's own, no role named yet
    for i, d in enumerate(REGISTRY):
        claimed = claim(d, spans)
        if claimed is None:
            continue
        present.append(i)
        # a role named (other included, when a table says so) beats a span only marked as a dialect's own; among
        # named roles, the first dialect decides
        take = (claimed >= 0) & ((kind < 0) | unnamed)
        kind[take], dialect[take], unnamed[take] = claimed[take], i, False
        mark = (claimed == UNNAMED) & (kind < 0)
        kind[mark], dialect[mark], unnamed[mark] = OTHER, i, True
    generic = _structure.generic(spans.columns, known=_keys_of(present, None, *TEXT_FIELDS, *NUMBER_FIELDS))
    open_ = (kind < 0) | unnamed
    candidates = open_ & _any_present(spans, _keys_of(present, generic, "model", "tool"))
    rows = np.flatnonzero(np.isin(kind, list(_NEEDED_BY)) | candidates)
    values = _fields(spans, rows, dialect[rows], kind=kind[rows], present=present, generic=generic, n=n)
    rule = np.full(n, -1, dtype=np.int8)
    status_error = spans["status_code"].to_numpy() == 2 if "status_code" in spans.columns else np.zeros(n, bool)
    if open_.any():
        has = {f: (pd.notna(values[f]) if f in TEXT_FIELDS else ~np.isnan(values[f]))
               for f in ("model", "input_tokens", "output_tokens", "tool", "args")}
        transport = open_ & _any_present(spans, _structure.TRANSPORT_KEYS)
        # a failed call reports no usage: its model id and its error make it an attempt of a model call
        role, which = _structure.roles(has["model"] & open_, has["input_tokens"] | has["output_tokens"] | status_error,
                                       has["tool"] & open_, has["args"], transport)
        take = role >= 0
        kind[take], rule[take], dialect[take] = role[take], which[take], STRUCTURE
    # a finish reason that says the call failed (the Vercel AI SDK's and Mastra's "error") is a failure
    finish_text = pa.array(values["finish"])
    said_error = pc.fill_null(pc.equal(pc.utf8_lower(finish_text), "error"), False).to_numpy(zero_copy_only=False)
    values["error"] = status_error | values.pop("error_flag") | said_error
    # a model call whose answer holds a tool call asked for tools, whatever finish reason it does not record
    asked = (kind == CHAT) & _any_present(spans, _ASKS) & pd.isna(values["finish"])
    if asked.any():
        finish = pd.array(values["finish"]).to_numpy(dtype=object, na_value=None)
        finish[asked] = "tool_calls"
        values["finish"] = pd.array(finish, dtype=pd.StringDtype("pyarrow"))
    # a tool call that delivers the run's final answer (smolagents' final_answer, Pydantic AI's final_result), one
    # that hands the run over to another agent
    tools = np.flatnonzero(kind == TOOL)
    if len(tools):
        tool_name = pd.Series(pd.array(values["tool"])[tools]).str.lower()
        kind[tools[tool_name.isin(FINAL_ANSWER_TOOLS).to_numpy(dtype=bool)]] = ANSWER
        handoff = (tool_name.isin(HANDOFF_TOOLS) | tool_name.str.startswith(HANDOFF_TOOL_PREFIXES)) \
            & ~tool_name.str.startswith(NOT_HANDOFF_PREFIXES).fillna(False)
        kind[tools[handoff.fillna(False).to_numpy(dtype=bool)]] = HANDOFF
    kind[kind < 0] = OTHER
    codes, code_counts = np.unique(dialect[dialect >= 0], return_counts=True)
    counts = {str(DIALECT_NAMES[i]): int(c) for i, c in zip(codes, code_counts, strict=True)}
    unusable = {}
    for f in NUMBER_FIELDS:      # tokens and dollars: a negative or non-numeric value (JSON is not typed) is no value
        v = values[f]
        for what in UNUSABLE_KINDS:
            found = np.flatnonzero(v == UNUSABLE if what == "not a number" else v < 0)
            if len(found):
                unusable[(f, what)] = found
                v[found] = np.nan
    session = pd.array(text(spans, SESSION_KEYS), dtype=pd.StringDtype("pyarrow")) \
        if any(k in spans.columns for k in SESSION_KEYS) else None
    return Normalized(kind=kind, dialect=dialect, fields=values, counts=counts, unusable=unusable, rule=rule,
                      session=session, offers_tools=_offers_tools(spans))


_OFFERED = tuple(dict.fromkeys(k for d in REGISTRY for k in d.offered))
_ASKS = tuple(dict.fromkeys(k for d in REGISTRY for k in d.asks))


def _offers_tools(spans: pd.DataFrame) -> np.ndarray | None:
    """Spans whose attributes list the tools offered to the model (None when no column of the input can say)."""
    cols = [c for c in spans.columns if any(c == k or c.startswith(k) for k in _OFFERED)]
    return _any_present(spans, tuple(cols)) if cols else None


def _keys_of(present: list[int], generic: Dialect | None, *names: str) -> tuple[str, ...]:
    keys: list[str] = []
    for d in (*(REGISTRY[i] for i in present), *((generic,) if generic is not None else ())):
        for f in names:
            keys += [s for s in d.text.get(f, ()) if isinstance(s, str)]
            keys += list(d.numbers.get(f, ()))
    return tuple(dict.fromkeys(keys))


def _any_present(spans: pd.DataFrame, keys: tuple[str, ...]) -> np.ndarray:
    out = np.zeros(len(spans), dtype=bool)
    for k in keys:
        if k in spans.columns:
            out |= spans[k].notna().to_numpy(dtype=bool)
    return out


def _fields(spans: pd.DataFrame, rows: np.ndarray, deciding: np.ndarray, *, kind: np.ndarray, present: list[int],
            generic: Dialect, n: int) -> Fields:
    """Each field from the deciding dialect of each row, then from the others in registry order, then from the
    keys shaped like it.

    Text comes out as pandas string arrays over all spans, numbers as float64 (NaN unknown), flags as bool."""
    tables = {i: REGISTRY[i] for i in present} | {STRUCTURE: generic}
    wanted = set().union(*(d.keys for d in tables.values()))
    sub = spans[[c for c in spans.columns if c in wanted]].iloc[rows]      # only what the dialects read
    per = {i: fields(d, sub, kind) for i, d in tables.items()}
    mine = {i: deciding == i for i in tables}
    order = list(tables)
    pos = np.full(n, -1, dtype=np.int64)
    pos[rows] = np.arange(len(rows))
    scatter = pa.array(pos, mask=pos < 0)
    out: Fields = {}
    for f in TEXT_FIELDS:
        got = pa.nulls(len(rows), pa.string())
        for i in order:                                   # the deciding dialect's value
            if f in per[i] and mine[i].any():
                got = pc.if_else(pa.array(mine[i]), per[i][f], got)
        for i in order:                                   # what it does not record, from the others
            if f in per[i] and got.null_count:
                got = pc.coalesce(got, per[i][f])
        out[f] = pd.array(pc.take(got, scatter), dtype=pd.StringDtype("pyarrow"))
    for f in (*NUMBER_FIELDS, "error_flag"):
        flag = f == "error_flag"
        got = np.zeros(len(rows), bool) if flag else np.full(len(rows), np.nan)
        for i in order:
            if f in per[i]:
                got = np.where(mine[i], per[i][f], got)
        if not flag:
            for i in order:
                if f in per[i]:
                    if not (np.isnan(got) | (got == UNUSABLE)).any():
                        break
                    got = prefer(got, per[i][f])
        full = np.zeros(n, bool) if flag else np.full(n, np.nan)
        full[rows] = got
        out[f] = full
    return out


def structure_rule(rule: int) -> str:
    """What structural rule ``rule`` (``Normalized.rule``) says, as ``evidence`` words it."""
    return f"structure: {_structure.RULES[rule][1]}"


def evidence(spans: pd.DataFrame, norm: Normalized) -> np.ndarray:
    """What gave each span its role, as short text (``agentobs trace --roles``): the structural rule, or the deciding
    dialect's rule (the last of its rules for that role that holds), else its marker's value. Each dialect's rules are
    evaluated once over the spans it decided, so the cost is linear in the spans."""
    out = np.full(len(spans), "no dialect, no structure", dtype=object)
    dialect, kind = np.asarray(norm.dialect), np.asarray(norm.kind)
    structural = np.nonzero(dialect == STRUCTURE)[0]
    out[structural] = [structure_rule(int(r)) for r in np.asarray(norm.rule)[structural]]
    for d in np.unique(dialect[(dialect >= 0) & (dialect != STRUCTURE)]):
        for role in np.unique(kind[dialect == d]):
            rows = np.nonzero((dialect == d) & (kind == role))[0]
            out[rows] = _dialect_evidence(REGISTRY[int(d)], spans.iloc[rows], int(role))
    return out


def _dialect_evidence(d: Dialect, some: pd.DataFrame, role: int) -> np.ndarray:
    """``evidence`` for spans ``some`` that dialect ``d`` gave ``role``."""
    from ._evaluate import holds
    out = np.full(len(some), d.name, dtype=object)
    pending = np.ones(len(some), dtype=bool)
    for rule in reversed(d.rules):
        if rule.role != role or not pending.any():
            continue
        hit = pending.copy()
        for w in rule.when:
            hit &= np.asarray(holds(some, w), dtype=bool)
        out[hit] = f"{d.name}: {rule.describe()}"
        pending &= ~hit
    if pending.any() and d.marker and d.marker in some.columns:
        rows = np.nonzero(pending)[0]
        values = text(some.iloc[rows], (d.marker,)).to_pylist()
        out[rows] = [d.name if v is None else f"{d.name}: {d.marker}={v}" for v in values]
    return out


__all__ = ["AGENT", "ANSWER", "CALLS", "CHAIN", "CHAT", "DIALECT_NAMES", "Fields", "HANDOFF", "HANDOFF_TOOLS",
           "HANDOFF_TOOL_PREFIXES", "KIND_NAMES", "NAMED_TOOL_RULE", "NUMBER_FIELDS", "Normalized", "ORCHESTRATION",
           "OTHER", "PROVIDER_FAILURES", "REGISTRY", "RETRIEVAL", "SESSION_KEYS", "STEP", "STRUCTURE", "TOOL",
           "TOOL_FAILURES", "TRANSPORT", "UNUSABLE_KINDS", "evidence", "normalize", "structure_rule"]
