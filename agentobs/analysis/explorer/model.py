"""What the explorer shows of a report, and what one page holds.

``build(report)`` makes the ``Explorer``: the page's string table, the runs table, the charts, the signatures
with their example runs and evidence, and the waterfalls of the runs whose spans a page holds. A page written to
a file (``mode="file"``) holds every run's row and, when the population is within ``PageLimits`` (runs and
spans), every run's spans; beyond either limit, only the spans of the signatures' example runs, and it says what it
left out. The page ``agentobs view`` serves (``mode="served"``) holds neither: it asks the server for pages of the
runs table and for one run's spans at a time (``run_detail``), for a population of any size.

The limits come from ``bench/explorer_bench.py`` (page size and time to first render in Chromium at 1k, 10k
and 100k runs): docs/analysis.md gives the figures.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ...contract.redaction import Redactor
from ..assess.signatures import BY_NAME, evidence
from ..report.summary import Report, root_attribute
from ._charts import charts
from ._runs_table import RunsTable, encoded, runs_table, schema
from ._spans import Waterfall, waterfalls
from .text import Strings, safe

MODES = ("file", "served")
_EVIDENCE_SPAN = re.compile(r"([^/\s]+)/(\S+) ")        # signatures.evidence lines start "<trace id>/<span id> "


@dataclass(frozen=True, kw_only=True)
class PageLimits:
    """A page written to a file holds every run's spans up to ``runs`` runs and ``spans`` spans; past either, the
    spans of the signatures' example runs only (every run keeps its row)."""
    runs: int = 10_000
    spans: int = 200_000


@dataclass(kw_only=True)
class Explorer:
    report: Report
    mode: str
    strings: Strings
    table: RunsTable
    charts: dict[str, dict[str, Any]]
    signatures: list[dict[str, Any]]
    waterfalls: dict[str, Waterfall]          # the runs whose spans the page holds
    left_out: str | None                      # what a page written to a file left out, in words
    jaeger: str | None                        # the Jaeger UI base for links (an http(s) URL), or None
    _index: dict[str, Any] = field(default_factory=dict, repr=False)


def build(report: Report, *, mode: str = "file", limits: PageLimits | None = None,
          jaeger: str | None = None) -> Explorer:
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: one of {', '.join(MODES)}")
    limits = limits or PageLimits()
    strings = Strings()
    table = runs_table(report.runs, strings, _segments(report))
    held, left_out = _held(report, limits) if mode == "file" else (set(), None)
    spans = report.spans
    falls = waterfalls(spans[spans["run_id"].isin(held)], report.events, strings) if held else {}
    sigs = [_signature(report, name_row, strings, falls) for name_row in report.signatures]
    return Explorer(report=report, mode=mode, strings=strings, table=table, charts=charts(report, strings),
                    signatures=sigs, waterfalls=falls, left_out=left_out, jaeger=jaeger)


def _segments(report: Report) -> dict[str, pd.Series]:
    """The ``--segment`` values that are attributes of the runs' root spans (not runs columns), per run id."""
    out = {}
    for by in report.options.segments:
        if by not in report.runs.columns and by in report.spans.columns and "_run_root" in report.spans.columns:
            out[by] = root_attribute(report.spans, by)
    return out


def _held(report: Report, limits: PageLimits) -> tuple[set[str], str | None]:
    """The runs whose spans a page written to a file holds, and what it leaves out (None: nothing)."""
    spans = report.spans
    n_runs, n_spans = len(report.runs), int(spans["run_id"].notna().sum()) if len(spans) else 0
    sources = " ".join(shlex.quote(s) for s in report.sources)
    if n_runs <= limits.runs and n_spans <= limits.spans:
        kept = set(spans["run_id"].dropna().astype(str).unique()) if n_spans else set()
        if len(kept) >= n_runs:
            return kept, None
        return kept, (f"This page holds every run's row ({n_runs:,} runs) and the spans of the {len(kept):,} runs "
                      "whose spans the analysis kept (the Dask engine keeps those of the signatures' examples). "
                      f"`agentobs view {sources}` shows every run's spans.")
    examples = {e.run_id for exs in report.examples.values() for e in exs}
    kept_spans = int(spans["run_id"].isin(examples).sum()) if examples else 0
    return examples, (f"This page holds every run's row ({n_runs:,} runs) and the spans of the {len(examples):,} runs "
                      f"the signatures give as examples ({kept_spans:,} of {n_spans:,} spans): every span would pass "
                      f"the limits of one page ({limits.runs:,} runs, {limits.spans:,} spans). `agentobs view "
                      f"{sources}` shows every run's spans.")


def _signature(report: Report, s: Any, strings: Strings, falls: dict[str, Waterfall]) -> dict[str, Any]:
    sig = BY_NAME.get(s.name)
    examples = []
    for e in report.examples.get(s.name, []):
        fall = falls.get(e.run_id)
        examples.append({"run": strings.code(e.run_id), "evidence": [strings.code(line) for line in e.evidence],
                         "spans": _evidence_rows(e.evidence, fall) if fall is not None else None})
    return {"name": strings.code(s.name), "runs": s.runs, "share": s.share, "failed": s.failed,
            "primary": s.primary, "looks_like": strings.code(s.looks_like), "control": strings.code(s.control),
            "cause": strings.code(sig.cause if sig else ""), "reference": strings.code(s.reference),
            "examples": examples}


def _evidence_rows(lines: list[str], fall: Waterfall) -> list[int]:
    """The waterfall rows that ``signatures.evidence`` lines name, in order, once each."""
    rows: dict[int, None] = {}
    for line in lines:
        m = _EVIDENCE_SPAN.match(line)
        if m and (m.group(1), m.group(2)) in fall.position:
            rows[fall.position[(m.group(1), m.group(2))]] = None
    return list(rows)


def page_data(x: Explorer) -> dict[str, Any]:
    """The page's data island: everything the browser draws from (texts as codes into ``strings``)."""
    r = x.report
    runs_index = {str(run_id): i for i, run_id in enumerate(r.runs["run_id"].astype(str))}
    details = {}
    for run_id, fall in x.waterfalls.items():
        ev = {}
        for sig in r.runs["signatures"].iloc[runs_index[run_id]] if run_id in runs_index else ():
            ex = next((e for e in r.examples.get(sig, []) if e.run_id == run_id), None)
            if ex is not None:
                ev[str(x.strings.code(sig))] = {"lines": [x.strings.code(line) for line in ex.evidence],
                                                "spans": _evidence_rows(ex.evidence, fall)}
        details[str(runs_index.get(run_id, -1))] = fall.to_dict(ev)
    meta = {"mode": x.mode, "runs": len(r.runs), "spans": int(r.overview.get("spans", 0)),
            "detail_runs": len(x.waterfalls), "left_out": x.left_out, "jaeger": x.jaeger,
            "generated_at": r.generated_at, "target": r.options.target}
    table = encoded(x.table) if x.mode == "file" else {"n": x.table.n, "columns": []}
    return {"meta": meta, "schema": schema(x.table), "table": table, "charts": x.charts,
            "signatures": x.signatures, "details": details, "strings": x.strings.values}


# -- the served explorer: one run at a time ---------------------------------------------------------------

def run_detail(x: Explorer, run_id: str) -> dict[str, Any] | None:
    """One run's waterfall and the evidence of each of its signatures, with a string table of its own; None when
    no run has this id (its displayed id, as the runs table shows it)."""
    row = _row_of(x, run_id)
    if row is None:
        return None
    r = x.report
    real_id = str(r.runs["run_id"].iloc[row])
    rows = _span_rows(x).get(real_id)
    spans = r.spans.iloc[rows] if rows is not None else r.spans.iloc[:0]
    events = _events_of(x, spans)
    strings = Strings()
    fall = waterfalls(spans, events, strings, Redactor()).get(real_id)
    if fall is None:
        return {"row": row, "strings": strings.values, "spans": [], "evidence": {}, "t0_ms": None, "total_us": 0}
    ev = {}
    for sig in r.runs["signatures"].iloc[row]:
        if sig in BY_NAME:
            lines = evidence(spans, events, real_id, sig)
            ev[str(strings.code(sig))] = {"lines": [strings.code(line) for line in lines],
                                          "spans": _evidence_rows(lines, fall)}
    return {"row": row, "strings": strings.values, **fall.to_dict(ev)}


def _row_of(x: Explorer, run_id: str) -> int | None:
    if "rows" not in x._index:
        shown = x.table.columns["run_id"].data
        x._index["rows"] = {x.strings.values[c]: i for i, c in enumerate(shown.tolist()) if c >= 0}
    got = x._index["rows"].get(run_id)
    return int(got) if got is not None else None


def _span_rows(x: Explorer) -> dict[str, np.ndarray]:
    if "spans" not in x._index:
        spans = x.report.spans
        x._index["spans"] = {str(k): v for k, v in spans.groupby("run_id", observed=True).indices.items()} \
            if len(spans) else {}
    got: dict[str, np.ndarray] = x._index["spans"]
    return got


def _events_of(x: Explorer, spans: pd.DataFrame) -> pd.DataFrame:
    events = x.report.events
    if events.empty or spans.empty:
        return events.iloc[:0]
    if "events" not in x._index:
        x._index["events"] = events.groupby(events["trace_id"].astype(str)).indices
    by_trace: dict[str, np.ndarray] = x._index["events"]
    rows = [by_trace[t] for t in spans["trace_id"].astype(str).unique() if t in by_trace]
    return events.iloc[np.concatenate(rows)] if rows else events.iloc[:0]


def shown_sources(report: Report) -> list[str]:
    return [safe(s) for s in report.sources]
