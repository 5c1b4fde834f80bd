"""What both engines share: the ``Options`` of a report, the ``Report`` itself and the summary of a runs table
into one (``summarize_runs``: signatures, percentiles, caps, segments, examples).

The local engine (``local.analyze_spans``) and the Dask engine (``dask``) each make the runs table their way and
hand it here; ``engine.analyze`` chooses between them. A ``Report`` is dataclasses and DataFrames, usable from a
notebook; rendering it for the terminal, as JSON (``Report.to_dict``, schema in docs/report-schema.md) or as HTML
lives elsewhere. Deterministic: the same input gives the same report.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from os import PathLike
from typing import Any

import pandas as pd

from ...errors import InputError
from ..assess.labels import apply_labels, read_label_files
from ..assess.limits import DIMENSIONS, CapRecommendation, percentiles, recommend_all, segment_percentiles
from ..assess.signatures import CATALOG, SignatureRow, Unexplained, classify, evidence, summarize, unexplained
from ..derive.runs import Derivation
from ..load.sources import printable_source
from ..select.selection import Selection
from ..spans.quality import DataQuality
from ..spans.spanset import ReadStats

REPORT_SCHEMA_VERSION = 1
METRICS = ["steps", "tool_calls", "tokens", "cost_usd", "active_s"]
GROWTH_SERIES_RUNS = 12              # context-growth runs plotted in the HTML report


@dataclass(kw_only=True)
class Options:
    """Everything a report is made with, resolved once (the CLI builds it from its options)."""
    target: float = 0.01             # share of successful runs a recommended cap may cut off
    margin: float = 0.10             # added to the smallest cap within the target
    segments: tuple[str, ...] = ("agent", "model")
    # labels files (CSV or JSON: run_id, success); one path or several, each labelling the runs its ids match
    labels: tuple[str, ...] | str | None = ()
    success_attr: tuple[str, str] | None = None   # (key, value) on the root span
    jaeger_url: str | None = None    # for links to runs
    examples: int = 3
    seed: int = 0
    selection: Selection = field(default_factory=Selection)    # --since, --until, --service, ... (``select``)

    def __post_init__(self) -> None:
        from ...errors import ConfigError
        if self.labels is None:
            self.labels = ()
        elif isinstance(self.labels, (str, PathLike)):
            self.labels = (str(self.labels),)
        else:
            self.labels = tuple(str(p) for p in self.labels)
        if not 0 < self.target < 1:
            raise ConfigError(f"target must be a share between 0 and 1 (e.g. 0.01), got {self.target}")
        if not 0 <= self.margin <= 10:
            raise ConfigError(f"margin must be between 0 and 10 (0.1 = 10%), got {self.margin}")

    @property
    def labels_files(self) -> tuple[str, ...]:
        """The labels files, as a tuple (``labels`` is made one when the options are built)."""
        return self.labels if isinstance(self.labels, tuple) else ()


@dataclass(frozen=True, kw_only=True)
class Example:
    run_id: str
    trace_id: str
    link: str | None                 # to the trace in Jaeger (``Options.jaeger_url``)
    evidence: list[str]


@dataclass(frozen=True, kw_only=True)
class Report:
    """The report on an input, built whole by ``summarize_runs``; a variant is a ``dataclasses.replace`` of it."""
    generated_at: str
    sources: list[str]
    options: Options
    runs: pd.DataFrame
    spans: pd.DataFrame              # every span; with the Dask engine, the spans of the runs the report shows
    events: pd.DataFrame             # their span events
    overview: dict[str, Any]
    signatures: list[SignatureRow]
    examples: dict[str, list[Example]]
    percentiles: dict[str, dict[str, Any]]
    segments: dict[str, Any]
    caps: list[CapRecommendation]
    quality: DataQuality
    derivation: Derivation
    growth_series: dict[str, list[int]] = field(default_factory=dict)
    spellings: dict[str, dict[str, int]] = field(default_factory=dict)   # per source: OTLP JSON spellings read
    # the first failed runs (by run id) that match no signature, with what ended them
    unexplained: list[Unexplained] = field(default_factory=list)
    read: ReadStats | None = None    # with a selection: the traces read and kept while loading (``prune``)

    def link(self, trace_id: str | None) -> str | None:
        return _link(self.options.jaeger_url, trace_id)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": REPORT_SCHEMA_VERSION,
            "generated_at": self.generated_at,
            "sources": self.sources,
            "options": {"target": self.options.target, "margin": self.options.margin,
                        "segments": list(self.options.segments), "labels": _labels_shown(self.options.labels_files),
                        "success_attr": list(self.options.success_attr) if self.options.success_attr else None,
                        "percentile_method": "inverted_cdf",
                        "select": self.options.selection.to_dict() if self.options.selection else None},
            "overview": self.overview,
            "signatures": [{"name": s.name, "runs": s.runs, "share": round(s.share, 6), "failed": s.failed,
                            "successful": s.successful, "primary": s.primary, "role": s.role,
                            "failed_share": _round(s.failed_share), "successful_share": _round(s.successful_share),
                            "ratio": _round(s.ratio),
                            "ratio_ci": [_round(x) for x in s.ratio_ci] if s.ratio_ci else None,
                            "looks_like": s.looks_like, "control": s.control, "reference": s.reference,
                            "examples": [e.__dict__ for e in self.examples.get(s.name, [])]} for s in self.signatures],
            "unexplained": [{"run_id": u.run_id, "last_error": u.last_error} for u in self.unexplained],
            "percentiles": self.percentiles,
            "segments": self.segments,
            "caps": [c.to_dict() for c in self.caps],
            "read": {"dialects": self.derivation.dialects, "spellings": self.spellings,
                     "roles": {src: c.to_dict() for src, c in self.derivation.roles.items()},
                     "selection": self.read.to_dict() if self.read else None},
            "data_quality": self.quality.to_dict(),
            "not_derived": {"columns": self.derivation.missing, "notes": self.derivation.sentences()},
        }


@dataclass
class SpanLookup:
    """What the summary reads from spans besides the runs table: the spans and span events of the runs it shows (as
    examples, in the growth plot), in input order, and attributes of the runs' root spans (``--segment``).

    The local engine gives every span; the Dask engine the spans of the runs that can be shown, and the root-span
    attributes it was asked for, computed where the spans are (``attributes``)."""
    spans: pd.DataFrame
    events: pd.DataFrame
    attributes: dict[str, pd.Series] | None = None    # precomputed: name -> run_id -> value
    columns: Iterable[str] | None = None               # every span column of the input (default: spans.columns)

    def root_attribute(self, name: str) -> pd.Series | None:
        """run_id -> the last non-null value of ``name`` on the run's root spans; None when no span has it."""
        if self.attributes is not None and name in self.attributes:
            return self.attributes[name]
        if name not in (self.spans.columns if self.columns is None else set(self.columns)):
            return None
        return root_attribute(self.spans, name)


def root_attribute(spans: pd.DataFrame, name: str) -> pd.Series:
    return spans[spans["_run_root"]].groupby("run_id", observed=True)[name].last()


@dataclass(frozen=True, kw_only=True)
class Loaded:
    """What the loading gives the report besides the runs: the sources as shown, the attribute spellings read, the
    number of spans, and (with a selection) what the loading read and kept."""
    sources: list[str]
    spellings: dict[str, dict[str, int]]
    n_spans: int
    read: ReadStats | None = None


def summarize_runs(runs: pd.DataFrame, lookup: SpanLookup, q: DataQuality, der: Derivation, opt: Options, *,
                   loaded: Loaded) -> Report:
    """The report from the runs table (one row per run, sorted by run id): labels, signatures and their examples,
    percentiles, segments, caps. Shared by both engines."""
    if opt.labels_files:
        lf = read_label_files(opt.labels_files)
        for name, p in lf.problems:
            q.add("bad_label", name, example=p)
        for name, c in lf.conflicts:
            q.add("conflicting_label", name, example=c)
        # (with a selection, the ids of runs outside it match no run here: they are not counted as unmatched)
        runs = apply_labels(runs, lf.labels, lf.source, q, file_of=lf.file_of if len(lf.files) > 1 else None,
                            count_unmatched=not opt.selection)
    runs = classify(runs)
    sigs = summarize(runs, opt.examples)
    spans, events = lookup.spans, lookup.events
    wanted = sorted({r for s in sigs for r in s.examples})
    ex_spans = spans[spans["run_id"].isin(wanted)] if wanted else spans.iloc[:0]
    ex_events = events.merge(ex_spans[["trace_id", "span_id"]], on=["trace_id", "span_id"]) \
        if len(events) and len(ex_spans) else events.iloc[:0]
    trace_of = runs.set_index("run_id")["trace_id"]
    said = runs.set_index("run_id")["last_error"]
    examples = {s.name: [Example(run_id=r, trace_id=str(trace_of[r]), link=_link(opt.jaeger_url, str(trace_of[r])),
                                 evidence=evidence(ex_spans, ex_events, r, s.name,
                                                   None if pd.isna(said[r]) else str(said[r])))
                         for r in s.examples] for s in sigs}
    percentiles_of = {m: {"successful": percentiles(runs.loc[runs["success"] == True, m], seed=opt.seed)  # noqa
                          .to_dict(),
                          "failed": percentiles(runs.loc[runs["success"] == False, m], seed=opt.seed)  # noqa
                          .to_dict()} for m in METRICS}
    segments = _segments(runs, lookup, opt)
    caps = recommend_all(runs, target=opt.target, margin=opt.margin, seed=opt.seed)
    return Report(generated_at=datetime.now(UTC).isoformat(timespec="seconds"), sources=loaded.sources, options=opt,
                  runs=runs, spans=spans, events=events, overview=_overview(runs, loaded.n_spans), signatures=sigs,
                  examples=examples, percentiles=percentiles_of, segments=segments, caps=caps, quality=q,
                  derivation=der, growth_series=_growth_series(runs, spans),
                  spellings={printable_source(k): v for k, v in loaded.spellings.items()},
                  unexplained=unexplained(runs)[1], read=loaded.read)


def _segments(runs: pd.DataFrame, lookup: SpanLookup, opt: Options) -> dict[str, Any]:
    """The percentiles per segment of each ``--segment``: a runs column, or else an attribute of the runs' root
    spans."""
    out: dict[str, Any] = {}
    for by in opt.segments:
        if by in runs.columns:
            seg_runs = runs
        else:
            attr = lookup.root_attribute(by)
            if attr is None:            # a segment asked for that nothing carries: said, like --success-attr
                raise InputError(f"--segment {by}: no runs column and no attribute of a run's root span has this "
                                 f"name (the runs columns: docs/analysis.md)")
            seg_runs = runs.assign(**{by: runs["run_id"].map(attr)})
        out[by] = segment_percentiles(seg_runs, by, METRICS, seed=opt.seed)
    return out


def _link(base: str | None, trace_id: str | None) -> str | None:
    return f"{base.rstrip('/')}/trace/{trace_id}" if base and trace_id else None


def _labels_shown(files: tuple[str, ...]) -> str | list[str] | None:
    """``options.labels`` in the JSON report: the file, or the files when there are several."""
    return None if not files else files[0] if len(files) == 1 else list(files)


def _round(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else round(x, 6)


def count_unplaced(spans: pd.DataFrame, q: DataQuality) -> None:
    """Model and tool calls that belong to no run (e.g. a model call beside two agents in one request)."""
    if spans.empty or "_kind" not in spans.columns:
        return
    loose = spans["run_id"].isna() & spans["_kind"].isin(["chat", "tool"])
    for source, n in spans.loc[loose, "source"].astype(str).value_counts().items():
        q.add("unplaced_span", str(source), int(n))


def _overview(runs: pd.DataFrame, n_spans: int) -> dict[str, Any]:
    ok = int((runs["success"] == True).sum())  # noqa: E712
    bad = int((runs["success"] == False).sum())  # noqa: E712
    return {
        "runs": len(runs), "spans": int(n_spans), "successful": ok, "failed": bad,
        "unlabelled": int(runs["success"].isna().sum()),
        "success_rate": round(ok / (ok + bad), 6) if ok + bad else None,
        "by_stop_reason": {str(k): int(v) for k, v in runs["stop_reason"].fillna("(not recorded)").value_counts()
                           .sort_index().items()},
        "by_source_kind": {str(k): int(v) for k, v in runs["source_kind"].value_counts().sort_index().items()},
        "by_signature": {s.name: int((runs["signature"] == s.name).sum()) for s in CATALOG},
        "without_signature_failed": int(((runs["success"] == False) & runs["signature"].isna()).sum()),  # noqa
    }


def _growth_series(runs: pd.DataFrame, spans: pd.DataFrame, limit: int = GROWTH_SERIES_RUNS) -> dict[str, list[int]]:
    """Input tokens per model call for context-growth runs (for the HTML plot)."""
    ids = runs.loc[runs["signatures"].map(lambda xs: "context_growth" in xs), "run_id"].head(limit).tolist()
    if not ids or "_input_tokens" not in spans:
        return {}
    chats = spans[spans["run_id"].isin(ids) & (spans["_kind"] == "chat") & spans["_input_tokens"].notna()]
    chats = chats.sort_values("start_ns")
    return {str(r): [int(x) for x in g["_input_tokens"]] for r, g in chats.groupby("run_id", observed=True)}


__all__ = ["DIMENSIONS", "Example", "Options", "Report", "SpanLookup", "count_unplaced", "root_attribute",
           "summarize_runs"]
