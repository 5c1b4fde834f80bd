"""Span dialects: every span classified once, and its values read from whichever dialect it speaks.

Each span becomes an agent invocation, a model call, a tool call, a step of ours, a framework chain
(a container such as a LangGraph graph or a Traceloop workflow) or other, with its model, provider,
tool name, tool arguments, token counts (input, output, cache read, cache creation, reasoning), cost,
error type and finish reason, when its dialect records them (``normalize``). The runs table,
signatures, percentiles and caps are computed from this normalized form only.

Classification order (the first dialect that classifies a span decides what it is):

    1. langfuse       ``langfuse.observation.type`` (an explicit observation type)
    2. openinference  ``openinference.span.kind``
    3. genai          ``gen_ai.operation.name`` (current and older GenAI names, Pydantic AI / Logfire)
    4. openllmetry    ``traceloop.span.kind``, then ``llm.request.type``
    5. mlflow         ``mlflow.spanType``
    6. langsmith      ``langsmith.span.kind``
    7. agentobs       our ``agentobs.step`` span
    8. names          span names: ``invoke_agent ...``, ``chat ...``, ``execute_tool ...``, Logfire's
                      ``agent run`` / ``running tool``

When two dialects disagree on a span, the first decides its kind; each value is read from that dialect
first and, where it records none, from the others in the same order (a Langfuse generation that also
carries ``gen_ai.usage.*`` keeps Langfuse's counts and gains what only the GenAI names hold).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ._base import AGENT, CHAIN, CHAT, KIND_NAMES, NUMBER_FIELDS, OTHER, STEP, TEXT_FIELDS, TOOL, Dialect, Fields
from ._fields import UNUSABLE, prefer
from .agentobs_steps import AGENTOBS
from .genai import GENAI, NAMES
from .langfuse import LANGFUSE
from .langsmith import LANGSMITH
from .mlflow import MLFLOW
from .openinference import OPENINFERENCE
from .openllmetry import OPENLLMETRY

REGISTRY: tuple[Dialect, ...] = (LANGFUSE, OPENINFERENCE, GENAI, OPENLLMETRY, MLFLOW, LANGSMITH, AGENTOBS, NAMES)
DIALECT_NAMES = np.array([d.name for d in REGISTRY] + ["none"], dtype=object)
# values only these kinds need: the rest are not read (a million spans, few of them model calls)
_NEEDED_BY = {AGENT, CHAIN, CHAT, TOOL}
# what may be wrong with a token count or cost read, in the order ``normalize`` looks (``Normalized.unusable``)
UNUSABLE_KINDS = ("not a number", "negative")


@dataclass
class Normalized:
    """The classification and normalized values of every span, aligned with the spans frame's rows."""
    kind: np.ndarray                 # int8: OTHER, AGENT, STEP, CHAT, TOOL, CHAIN
    dialect: np.ndarray              # int8 index into DIALECT_NAMES (-1: none classified the span)
    fields: Fields                   # TEXT_FIELDS (object arrays), NUMBER_FIELDS (float64), "error" (bool)
    counts: dict[str, int] = field(default_factory=dict)   # spans classified by each dialect
    # per number field and what was wrong ("negative", "not a number"), the rows whose value a count or a cost
    # cannot be: left unknown
    unusable: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)

    @property
    def kind_names(self) -> np.ndarray:
        return KIND_NAMES[self.kind]


def normalize(spans: pd.DataFrame) -> Normalized:
    n = len(spans)
    kind = np.full(n, -1, dtype=np.int8)
    dialect = np.full(n, -1, dtype=np.int8)
    present: list[int] = []
    for i, d in enumerate(REGISTRY):
        claimed = d.claim(spans)
        if claimed is None:
            continue
        present.append(i)
        take = (kind < 0) & (claimed >= 0)
        kind[take] = claimed[take]
        dialect[take] = i
    kind[kind < 0] = OTHER
    rows = np.nonzero(np.isin(kind, list(_NEEDED_BY)))[0]
    fields = _fields(spans, rows, dialect[rows], present, n)
    status_error = spans["status_code"].to_numpy() == 2 if "status_code" in spans.columns else np.zeros(n, bool)
    fields["error"] = status_error | fields.pop("error_flag")
    codes, code_counts = np.unique(dialect[dialect >= 0], return_counts=True)
    counts = {str(DIALECT_NAMES[i]): int(c) for i, c in zip(codes, code_counts, strict=True)}
    unusable = {}
    for f in NUMBER_FIELDS:      # tokens and dollars: a negative or non-numeric value (JSON is not typed) is no value
        values = fields[f]
        for what in UNUSABLE_KINDS:
            found = np.flatnonzero(values == UNUSABLE if what == "not a number" else values < 0)
            if len(found):
                unusable[(f, what)] = found
                values[found] = np.nan
    return Normalized(kind, dialect, fields, counts, unusable)


def _fields(spans: pd.DataFrame, rows: np.ndarray, deciding: np.ndarray, present: list[int], n: int) -> Fields:
    """Each field from the deciding dialect of each row, then from the others in registry order.

    Text comes out as pandas string arrays over all spans, numbers as float64 (NaN unknown), flags as bool."""
    wanted = set().union(*(REGISTRY[i].columns for i in present)) if present else {"name"}
    sub = spans[[c for c in spans.columns if c in wanted]].iloc[rows]      # only what the dialects read
    per = {i: REGISTRY[i].fields(sub) for i in present}
    mine = {i: deciding == i for i in present}
    pos = np.full(n, -1, dtype=np.int64)
    pos[rows] = np.arange(len(rows))
    scatter = pa.array(pos, mask=pos < 0)
    out: Fields = {}
    for f in TEXT_FIELDS:
        got = pa.nulls(len(rows), pa.string())
        for i in present:                                 # the deciding dialect's value
            if f in per[i]:
                got = pc.if_else(pa.array(mine[i]), per[i][f], got)
        for i in present:                                 # what it does not record, from the others
            if f in per[i] and got.null_count:
                got = pc.coalesce(got, per[i][f])
        out[f] = pd.array(pc.take(got, scatter), dtype=pd.StringDtype("pyarrow"))
    for f in (*NUMBER_FIELDS, "error_flag"):
        flag = f == "error_flag"
        got = np.zeros(len(rows), bool) if flag else np.full(len(rows), np.nan)
        for i in present:
            if f in per[i]:
                got = np.where(mine[i], per[i][f], got)
        if not flag:
            for i in present:
                if f in per[i]:
                    if not (np.isnan(got) | (got == UNUSABLE)).any():
                        break
                    got = prefer(got, per[i][f])
        full = np.zeros(n, bool) if flag else np.full(n, np.nan)
        full[rows] = got
        out[f] = full
    return out


__all__ = ["AGENT", "CHAIN", "CHAT", "DIALECT_NAMES", "KIND_NAMES", "NUMBER_FIELDS", "Normalized", "OTHER",
           "REGISTRY", "STEP", "TOOL", "UNUSABLE_KINDS", "normalize"]
