"""Two populations of runs side by side (``agentobs diff``): what changed, and whether it is larger than chance.

Compared, for the runs of each side (two sources, or two windows of one):

- the number of runs (a count, not an estimate: no interval);
- the success rate, among the labelled runs;
- each signature's share of the runs (a run counts for every signature it matches), for the signatures seen on
  either side;
- p50, p90 and p99 of steps, tool calls, tokens, cost and active time, over the runs that have a value (all runs,
  successful and failed: what the population costs);
- each recommended cap (``limits``: the smallest value that cuts off at most the target share of successful runs,
  plus the margin), as ``agentobs caps`` computes it.

Each change (after - before) comes with its 95% bootstrap interval and a p-value, resampling runs within each side
(``_resample``), and ``significant`` after Holm's correction over every comparison made (the run count aside): the
chance that any change called significant is chance alone stays under ``alpha``, whatever the dependence between
the measures (p50, p90 and p99 of one metric, steps and tokens, shares that sum to one move together), which a
false-discovery-rate method such as Benjamini-Hochberg does not promise under arbitrary dependence. A change the
interval shows but Holm does not call significant is worth a look, not an alarm.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from ...errors import InputError
from ..assess.labels import apply_labels, read_label_files
from ..assess.limits import DIMENSIONS, METHOD, Dimension, cap_of, within_rank
from ..assess.signatures import CATALOG
from ..report.engine import analyze
from ..report.summary import METRICS, Options, Report
from ..select.selection import Selection
from ..spans.quality import DataQuality, Kind
from ._resample import RESAMPLES, holm, interval, order_draws, p_value, rank_of, rng_for, share_draws

DIFF_SCHEMA_VERSION = 1
ALPHA = 0.05
MIN_RUNS = 10      # a change is tested only when each side's value rests on at least this many runs,
MIN_TAIL = 3       # and a percentile's or a cap's has this many runs above it: a resample's order statistic is
#                    never above the largest value, so resampling a sample's maximum (the p99 of fewer than 100
#                    runs) or one next to it gives an interval that stops at it and calls chance a change
QUANTILES = {"p50": 0.50, "p90": 0.90, "p99": 0.99}
SECTIONS = ("runs", "signatures", "percentiles", "caps")


@dataclass(frozen=True, kw_only=True)
class Measure:
    """One compared measure: its value on each side, the change, its interval and whether it is significant."""
    key: str                       # unique: "success_rate", "signatures.repeated_call", "percentiles.steps.p50", ...
    section: str                   # one of SECTIONS
    label: str                     # as shown
    unit: str                      # "share", "runs", or the metric's unit
    before: float | None
    after: float | None
    n_before: int                  # the runs each side's value rests on
    n_after: int
    ci: tuple[float, float] | None = None
    p: float | None = None
    p_adjusted: float | None = None
    significant: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def change(self) -> float | None:
        return None if self.before is None or self.after is None else self.after - self.before

    @property
    def tested(self) -> bool:
        return self.p is not None

    def to_dict(self) -> dict[str, Any]:
        return {"before": self.before, "after": self.after, "change": self.change,
                "ci": list(self.ci) if self.ci else None, "significant": self.significant,
                "p": self.p, "p_adjusted": self.p_adjusted, "n": {"before": self.n_before, "after": self.n_after},
                "unit": self.unit, **self.extra}


@dataclass(frozen=True, kw_only=True)
class Side:
    """What one side read."""
    sources: list[str]
    selection: dict[str, Any] | None
    runs: int
    labelled: int
    spans: int
    quality: DataQuality

    def to_dict(self) -> dict[str, Any]:
        return {"sources": self.sources, "select": self.selection, "runs": self.runs, "labelled": self.labelled,
                "spans": self.spans, "data_quality": self.quality.to_dict()}


@dataclass(frozen=True, kw_only=True)
class Comparison:
    generated_at: str
    before: Side
    after: Side
    measures: list[Measure]
    seed: int
    alpha: float
    resamples: int
    target: float
    margin: float
    labels: dict[str, Any] | None = None

    @property
    def comparisons(self) -> int:
        return sum(m.tested for m in self.measures)

    def section(self, name: str) -> list[Measure]:
        return [m for m in self.measures if m.section == name]

    def to_dict(self) -> dict[str, Any]:
        by = {m.key: m for m in self.measures}
        out: dict[str, Any] = {
            "schema_version": DIFF_SCHEMA_VERSION, "generated_at": self.generated_at,
            "before": self.before.to_dict(), "after": self.after.to_dict(),
            "method": {"interval": "bootstrap percentile interval, 95%", "resampling": "runs within each side",
                       "resamples": self.resamples, "seed": self.seed,
                       "p_value": "two-sided bootstrap p-value of no change",
                       "correction": "holm", "alpha": self.alpha, "comparisons": self.comparisons,
                       "min_runs": MIN_RUNS, "min_tail": MIN_TAIL, "share_adjustment": "agresti-caffo",
                       "percentile_method": METHOD, "target": self.target, "margin": self.margin},
            "runs": by["runs"].to_dict(), "success_rate": by["success_rate"].to_dict(),
            "signatures": {m.key.split(".", 1)[1]: m.to_dict() for m in self.section("signatures")},
            "percentiles": {}, "caps": {}, "labels": self.labels}
        for m in self.section("percentiles"):
            _, metric, q = m.key.split(".")
            out["percentiles"].setdefault(metric, {})[q] = m.to_dict()
        for m in self.section("caps"):
            out["caps"][m.key.split(".", 1)[1]] = m.to_dict()
        return out


def diff(before: Sequence[str], after: Sequence[str], *, before_options: Options, after_options: Options,
         seed: int = 0, alpha: float = ALPHA, resamples: int = RESAMPLES) -> Comparison:
    """Both sides analysed (``analyze``) and compared (``compare``)."""
    b = analyze(before, before_options)
    a = analyze(after, after_options)
    return compare(b, a, seed=seed, alpha=alpha, resamples=resamples)


def compare(before: Report, after: Report, *, seed: int = 0, alpha: float = ALPHA,
            resamples: int = RESAMPLES) -> Comparison:
    """The two reports' runs compared (the labels, target and margin of ``before``'s options: both sides are made
    with the same)."""
    opt = before.options
    labels = _labels(before, after, opt) if opt.labels_files else None
    return Comparison(generated_at=datetime.now(UTC).isoformat(timespec="seconds"), before=_side(before),
                      after=_side(after), measures=measures(before.runs, after.runs, target=opt.target,
                                                            margin=opt.margin, seed=seed, alpha=alpha,
                                                            resamples=resamples),
                      seed=seed, alpha=alpha, resamples=resamples, target=opt.target, margin=opt.margin,
                      labels=labels)


def measures(before: pd.DataFrame, after: pd.DataFrame, *, target: float = 0.01, margin: float = 0.10, seed: int = 0,
             alpha: float = ALPHA, resamples: int = RESAMPLES) -> list[Measure]:
    """Every measure of two runs tables (``success``, ``signatures`` and the metric columns), with its interval,
    p-value and Holm-adjusted p-value."""
    out = [*_runs(before, after), *_success(before, after, seed, resamples),
           *_signatures(before, after, seed, resamples), *_percentiles(before, after, seed, resamples),
           *_caps(before, after, target, margin=margin, seed=seed, resamples=resamples)]
    tested = [i for i, m in enumerate(out) if m.p is not None]
    adjusted = holm([float(out[i].p or 0.0) for i in tested])
    for i, p_adj in zip(tested, adjusted, strict=True):
        out[i] = replace(out[i], p_adjusted=p_adj, significant=bool(p_adj <= alpha))
    return out


def _side(r: Report) -> Side:
    q = r.quality.replaced(lambda f: None if f.kind == Kind.UNMATCHED_LABEL else f)   # (said once, for both sides)
    return Side(sources=list(r.sources), selection=r.options.selection.to_dict() if r.options.selection else None,
                runs=len(r.runs), labelled=int(r.runs["success"].notna().sum()), spans=int(r.overview["spans"]),
                quality=q)


def _tested(key: str, section: str, label: str, *, unit: str, before: float | None, after: float | None,
            n: tuple[int, int], draws: tuple[np.ndarray | None, np.ndarray | None], **extra: Any) -> Measure:
    """The measure; tested when each side has draws and ``MIN_RUNS`` runs."""
    b, a = draws
    if b is None or a is None or min(n) < MIN_RUNS:
        return Measure(key=key, section=section, label=label, unit=unit, before=before, after=after, n_before=n[0],
                       n_after=n[1], extra=extra)
    d = a - b
    return Measure(key=key, section=section, label=label, unit=unit, before=before, after=after, n_before=n[0],
                   n_after=n[1], ci=interval(d), p=p_value(d), extra=extra)


def _runs(b: pd.DataFrame, a: pd.DataFrame) -> list[Measure]:
    return [Measure(key="runs", section="runs", label="runs", unit="runs", before=float(len(b)), after=float(len(a)),
                    n_before=len(b), n_after=len(a))]


def _success(b: pd.DataFrame, a: pd.DataFrame, seed: int, resamples: int) -> list[Measure]:
    counts = []
    for runs in (b, a):
        ok = int((runs["success"] == True).sum())  # noqa: E712
        counts.append((ok, ok + int((runs["success"] == False).sum())))  # noqa: E712
    values = [k / n if n else None for k, n in counts]
    draws = tuple(share_draws(k, n, rng_for(seed, "success_rate", side), resamples)
                  for side, (k, n) in enumerate(counts))
    return [_tested("success_rate", "runs", "success rate", unit="share", before=values[0], after=values[1],
                    n=(counts[0][1], counts[1][1]), draws=draws)]       # type: ignore[arg-type]


def _signature_counts(runs: pd.DataFrame) -> dict[str, int]:
    out: dict[str, int] = {}
    for names in runs["signatures"]:
        for name in names if isinstance(names, list) else ():
            out[name] = out.get(name, 0) + 1
    return out


def _signatures(b: pd.DataFrame, a: pd.DataFrame, seed: int, resamples: int) -> list[Measure]:
    cb, ca = _signature_counts(b), _signature_counts(a)
    out = []
    for s in CATALOG:
        if not (cb.get(s.name) or ca.get(s.name)):
            continue
        ks, ns = (cb.get(s.name, 0), ca.get(s.name, 0)), (len(b), len(a))
        values = [k / n if n else None for k, n in zip(ks, ns, strict=True)]
        key = f"signatures.{s.name}"
        draws = tuple(share_draws(k, n, rng_for(seed, key, side), resamples)
                      for side, (k, n) in enumerate(zip(ks, ns, strict=True)))
        out.append(_tested(key, "signatures", s.name, unit="share", before=values[0], after=values[1], n=ns,
                           draws=draws, runs={"before": ks[0], "after": ks[1]}))  # type: ignore[arg-type]
    return out


def _values(runs: pd.DataFrame, column: str, successful: bool = False) -> np.ndarray:
    rows = runs[runs["success"] == True] if successful else runs  # noqa: E712
    if column not in rows:
        return np.array([])
    x = pd.to_numeric(rows[column], errors="coerce").dropna().to_numpy(dtype=float)
    return np.sort(x[np.isfinite(x)])


def _percentiles(b: pd.DataFrame, a: pd.DataFrame, seed: int, resamples: int) -> list[Measure]:
    out = []
    units = {d.column: d.unit for d in DIMENSIONS}
    for metric in METRICS:
        xs = (_values(b, metric), _values(a, metric))
        for name, q in QUANTILES.items():
            key = f"percentiles.{metric}.{name}"
            points = [float(np.percentile(x, q * 100, method=METHOD)) if len(x) else None for x in xs]
            ranks = [rank_of(q, len(x)) if len(x) else 0 for x in xs]
            draws = tuple(order_draws(x, ranks[side], rng_for(seed, key, side), resamples)
                          if _tail_ok(x, ranks[side]) else None for side, x in enumerate(xs))
            out.append(_tested(key, "percentiles", f"{metric} {name}", unit=units.get(metric, ""), before=points[0],
                               after=points[1], n=(len(xs[0]), len(xs[1])), draws=draws))  # type: ignore[arg-type]
    return out


def _caps(b: pd.DataFrame, a: pd.DataFrame, target: float, *, margin: float, seed: int,
          resamples: int) -> list[Measure]:
    out = []
    for dim in DIMENSIONS:
        if dim.column not in b and dim.column not in a:
            continue
        xs = (_values(b, dim.column, successful=True), _values(a, dim.column, successful=True))
        key = f"caps.{dim.column}"
        cap = _cap_function(dim, margin)
        points = [float(cap(np.array([x[within_rank(len(x), target) - 1]]))[0]) if len(x) else None for x in xs]
        ranks = [within_rank(len(x), target) if len(x) else 0 for x in xs]
        draws = tuple(order_draws(x, ranks[side], rng_for(seed, key, side), resamples, cap)
                      if _tail_ok(x, ranks[side]) else None for side, x in enumerate(xs))
        out.append(_tested(key, "caps", dim.limit, unit=dim.unit, before=points[0], after=points[1],
                           n=(len(xs[0]), len(xs[1])), draws=draws, limit=dim.limit))  # type: ignore[arg-type]
    return out


def _tail_ok(x: np.ndarray, rank: int) -> bool:
    """Whether an order statistic of rank ``rank`` among the values ``x`` has ``MIN_TAIL`` values above it (else it
    is not resampled: not tested)."""
    return len(x) > 0 and len(x) - rank >= MIN_TAIL


def _cap_function(dim: Dimension, margin: float) -> Any:
    """The recommended cap of each drawn base value (computed once per distinct value)."""
    def cap(values: np.ndarray) -> np.ndarray:
        uniq, inverse = np.unique(values, return_inverse=True)
        return np.array([cap_of(float(v), dim, margin) for v in uniq], dtype=float)[inverse]
    return cap


def _labels(before: Report, after: Report, opt: Options) -> dict[str, Any]:
    """What the labels files labelled on each side, and the ids that match a run on neither."""
    lf = read_label_files(opt.labels_files)
    matched: list[set[str]] = [set(), set()]
    for side, r in enumerate((before, after)):
        if not r.runs.empty:
            apply_labels(r.runs, lf.labels, lf.source, DataQuality(), matched=matched[side],
                         count_unmatched=False)
    neither = sorted(set(lf.labels) - matched[0] - matched[1])
    return {"files": list(lf.files), "ids": len(lf.labels), "matched_before": len(matched[0]),
            "matched_after": len(matched[1]), "unmatched": len(neither), "unmatched_example": neither[0] if neither
            else None, "selection": bool(before.options.selection or after.options.selection)}




@dataclass(frozen=True, kw_only=True)
class SideOptions:
    """What one side's options ask for (``--before-since``, ``--before-model``...); what is not given comes from the
    options of both sides (``--since``, ``--model``...)."""
    since: str | None = None
    until: str | None = None
    services: Sequence[str] = ()
    agents: Sequence[str] = ()
    models: Sequence[str] = ()
    where: Sequence[str] = ()


def resolve_sides(common: SideOptions, before: SideOptions, after: SideOptions, *, one_source: bool = False,
                  now: datetime | None = None) -> tuple[Selection, Selection]:
    """Each side's selection: its own window (both of ``since`` and ``until`` from the side when it gives either)
    and its own services, agents, models and attributes where it gives them, else the common ones; relative times
    from one ``now``. With one source, the two sides must differ."""
    now = now or datetime.now(UTC)
    sides = []
    for prefix, own in (("before-", before), ("after-", after)):
        window = own if own.since is not None or own.until is not None else common
        sides.append(Selection.resolve(since=window.since, until=window.until,
                                       services=own.services or common.services, agents=own.agents or common.agents,
                                       models=own.models or common.models, where=own.where or common.where, now=now,
                                       prefix=prefix if window is own else ""))
    if one_source and sides[0] == sides[1]:
        raise InputError("one source: give each side what tells it apart (--before-since/--after-since, "
                         "--before-model/--after-model, ...), or name two sources: agentobs diff BEFORE AFTER")
    return sides[0], sides[1]


__all__ = ["ALPHA", "MIN_RUNS", "MIN_TAIL", "Comparison", "Measure", "Side", "SideOptions", "compare", "diff",
           "measures", "resolve_sides"]
