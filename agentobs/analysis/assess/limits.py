"""Percentiles of successful runs and the caps they recommend (seed 000, "Choosing limits").

Percentiles are observed values: numpy's ``inverted_cdf`` method (an order statistic), so a
p99 of steps is a step count some run really took. Confidence intervals come from the exact
bootstrap distribution of that order statistic (``_bootstrap``). A cap's cut-off share is exact: the share of
successful runs whose value is above the cap. The recommended cap is the smallest candidate whose cut-off share
is at most the target, plus a stated margin; a count is at least 1, and a limit the Budget enforces once a run
reaches it (``max_tool_calls``, ``max_stalls``) is above the smallest candidate (a run that took 0 stalls needs
``max_stalls`` 1: at 0 it would stop before it started, and the Budget refuses 0). ``agentobs caps --emit`` writes
these values as they are.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ._bootstrap import exact_ci

METHOD: Any = "inverted_cdf"     # numpy percentile method (typed Any: numpy's stubs list a Literal)
QUANTILES = {"p50": 0.50, "p90": 0.90, "p95": 0.95, "p99": 0.99}


@dataclass(frozen=True)
class Dimension:
    column: str          # runs-table column
    limit: str           # the Budget field it sets
    unit: str
    integer: bool
    what: str
    # the Budget stops a run once its count reaches the limit (not once it passes it): every successful run ends with
    # a model call after its last tool call, refused once tool_calls >= max_tool_calls; a run stops once its stalls
    # reach max_stalls. The cap must be above the value a run may reach.
    at_cap: bool = False


DIMENSIONS = [
    Dimension("steps", "max_steps", "steps", True, "model calls per run"),
    Dimension("tool_calls", "max_tool_calls", "calls", True, "tool calls per run", at_cap=True),
    Dimension("tokens", "max_tokens", "tokens", True, "input + output tokens per run"),
    Dimension("cost_usd", "max_usd", "USD", False, "dollars per run"),
    Dimension("active_s", "deadline_s", "s", False, "active seconds per run (model + tool time)"),
    Dimension("max_identical_calls", "max_repeat", "proposals", True,
              "most times one identical call ran in a run (the whole-run repeat window)"),
    Dimension("max_identical_since_progress", "max_repeat (window since_progress)", "proposals", True,
              "most identical calls between two progress steps"),
    Dimension("longest_stall", "max_stalls", "steps", True, "longest streak of steps without progress", at_cap=True),
]
BY_COLUMN = {d.column: d for d in DIMENSIONS}


CI_METHOD = "exact_bootstrap"


@dataclass(frozen=True, kw_only=True)
class Percentiles:
    n: int
    values: dict[str, float | None]                  # p50 p90 p95 p99 max
    ci: dict[str, tuple[float, float] | None]        # 95% bootstrap interval per percentile

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, **self.values, "ci95": {k: list(v) if v else None for k, v in self.ci.items()},
                "ci_method": CI_METHOD if self.n >= 2 else None}


def percentiles(values: pd.Series | np.ndarray, *, seed: int = 0) -> Percentiles:
    """Observed percentiles (order statistics) with their 95% intervals from the exact bootstrap distribution
    (``_bootstrap``: the limit of infinitely many resamples, deterministic; ``seed`` is kept for callers)."""
    x = pd.Series(values).dropna().to_numpy(dtype=float)
    n = len(x)
    if n == 0:
        return Percentiles(n=0, values={**{k: None for k in QUANTILES}, "max": None}, ci={k: None for k in QUANTILES})
    qs = np.array(list(QUANTILES.values()))
    point = np.percentile(x, qs * 100, method=METHOD)
    vals: dict[str, float | None] = {k: float(v) for k, v in zip(QUANTILES, point, strict=True)}
    vals["max"] = float(x.max())
    ci: dict[str, tuple[float, float] | None] = {k: None for k in QUANTILES}
    if n >= 2:
        lo, hi = exact_ci(np.sort(x), qs)
        ci = {k: (float(a), float(c)) for k, a, c in zip(QUANTILES, lo, hi, strict=True)}
    return Percentiles(n=n, values=vals, ci=ci)


@dataclass(frozen=True, kw_only=True)
class CapRecommendation:
    dimension: str
    limit: str
    unit: str
    what: str
    successful_runs: int
    percentiles: Percentiles
    failed: Percentiles
    cutoff: dict[str, float]           # candidate cap -> share of successful runs above it
    recommended: float | None
    base: float | None                 # smallest candidate within the target, before the margin
    target: float
    margin: float
    worst_case: dict[str, float | None] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        p = self.percentiles.values
        return {"dimension": self.dimension, "limit": self.limit, "unit": self.unit, "what": self.what,
                "successful_runs": self.successful_runs, "p50": p["p50"], "p90": p["p90"], "p95": p["p95"],
                "p99": p["p99"], "max": p["max"], "ci95": self.percentiles.to_dict()["ci95"],
                "failed_runs": self.failed.to_dict(), "recommended": self.recommended, "base": self.base,
                "target": self.target, "margin": self.margin, "cutoff": self.cutoff, "worst_case": self.worst_case,
                "warnings": self.warnings, "percentile_method": METHOD}


def cutoff_table(values: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Exact share of ``values`` strictly above each candidate cap."""
    xs = np.sort(values)
    above = len(xs) - np.searchsorted(xs, candidates, side="right")
    return above / max(len(xs), 1)


MAX_INTEGER_SPAN = 20_000     # integer columns over a wider range (tokens) get the sampled candidates


def candidates_for(values: np.ndarray, integer: bool) -> np.ndarray:
    """Candidate caps: every integer in range for counts (steps, calls); for wide ranges and real numbers,
    the distinct values or 201 evenly spaced percentiles (bounded in size whatever the data)."""
    lo = max(int(values.min()), 0) if len(values) else 0
    hi = int(values.max()) if len(values) else 0
    if integer and hi - lo <= MAX_INTEGER_SPAN:
        return np.arange(lo, hi + 1, dtype=float)
    distinct = np.unique(values)
    if len(distinct) <= 200:
        return distinct
    return np.unique(np.percentile(values, np.linspace(0, 100, 201), method=METHOD))


def recommend(runs: pd.DataFrame, dim: Dimension, *, target: float = 0.01, margin: float = 0.10,
              seed: int = 0, per_step: dict[str, float | None] | None = None) -> CapRecommendation:
    ok = runs[runs["success"] == True]  # noqa: E712
    bad = runs[runs["success"] == False]  # noqa: E712
    x = ok[dim.column].dropna().to_numpy(dtype=float) if dim.column in ok else np.array([])
    if not np.isfinite(x).all():           # a sum past the largest double (costs of 1e308): no cap rests on it
        rec_warning = f"{int((~np.isfinite(x)).sum())} successful runs have an infinite {dim.column}: left out"
        x = x[np.isfinite(x)]
    else:
        rec_warning = None
    p = percentiles(x, seed=seed)
    xf = bad[dim.column].dropna().to_numpy(dtype=float) if dim.column in bad else np.array([])
    pf = percentiles(xf[np.isfinite(xf)], seed=seed)
    warnings = [rec_warning] if rec_warning else []
    cutoff: dict[str, float] = {}
    recommended = base = None
    worst: dict[str, float | None] = {}
    if len(x) == 0:
        warnings.append(f"no successful run has {dim.column}: no cap can be recommended")
    else:
        cands = candidates_for(x, dim.integer)
        if dim.integer:                  # the exact smallest cap within the target is a value some run took
            cands = np.unique(np.append(cands, _smallest_within(x, target)))
        shares = cutoff_table(x, cands)
        cutoff = {_fmt(c, dim.integer): float(s) for c, s in zip(cands, shares, strict=True)}
        within = np.nonzero(shares <= target + 1e-12)[0]
        base = float(cands[within[0]]) if len(within) else float(x.max())
        if not math.isfinite(base * (1 + margin)):  # (a value near the largest double: a cost of 1e308 dollars)
            warnings.append(f"{dim.column} {base:.6g} is too large to add the margin to: the cap is that value")
        recommended = cap_of(base, dim, margin)
        warnings += _few_runs(len(x), target)
        if per_step:
            worst = _tidy(worst_case(dim, recommended, per_step))
    return CapRecommendation(dimension=dim.column, limit=dim.limit, unit=dim.unit, what=dim.what,
                             successful_runs=len(x), percentiles=p, failed=pf, cutoff=cutoff, recommended=recommended,
                             base=base, target=target, margin=margin, worst_case=worst, warnings=warnings)


def _few_runs(n: int, target: float) -> list[str]:
    """The warning that ``n`` successful runs are too few to resolve a cut-off share of ``target``, if they are."""
    need = 1 / target                             # (infinite for a target below 1e-308)
    if n < need:
        more = f"at least {math.ceil(need):,}" if need < 1e15 else "far more"
        share = f"{target:.1%}" if target >= 0.001 else f"{target:.3g}"
        return [f"only {n} successful runs: a cut-off share of {share} cannot be resolved "
                f"(one run is {1 / n:.1%}); collect {more}"]
    if n < 10 * need:
        return [f"{n} successful runs: the tail beyond p{100 * (1 - target):g} rests on fewer than "
                "10 runs; treat the cap as provisional"]
    return []


def _smallest_within(x: np.ndarray, target: float) -> float:
    """The smallest cap with at most ``target`` of the values above it: an order statistic."""
    xs = np.sort(x)
    return float(xs[within_rank(len(xs), target) - 1])


def within_rank(n: int, target: float) -> int:
    """The 1-based rank, among n sorted values, of the smallest value with at most ``target`` of them above it."""
    allowed = math.floor(target * n + 1e-12 * n)
    return max(n - allowed, 1)


def cap_of(base: float, dim: Dimension, margin: float) -> float:
    """The recommended cap for ``base`` (the smallest value within the target): plus the margin, rounded up (whole
    for counts, two significant digits otherwise); ``base`` itself when the margin would overflow."""
    with_margin = base * (1 + margin)
    if not math.isfinite(with_margin):
        with_margin = base
    if not dim.integer:
        return _round_up(with_margin)
    # a count limit of the Budget is at least 1, and above what a run may reach
    return max(float(math.ceil(with_margin)), base + 1 if dim.at_cap else base, 1.0)


def worst_case(dim: Dimension, cap: float, per_step: dict[str, float | None]) -> dict[str, float | None]:
    """What a runaway could cost before this cap stops it (seed: a cap of m steps bounds the cost at m*c)."""
    tok, usd, secs = per_step.get("tokens"), per_step.get("usd"), per_step.get("seconds")
    if dim.limit.startswith("max_steps") or dim.limit.startswith("max_stalls") or dim.limit.startswith("max_repeat"):
        steps = cap if dim.limit.startswith("max_steps") else cap + 1
        return {"steps": steps, "tokens": _mul(steps, tok), "usd": _mul(steps, usd), "seconds": _mul(steps, secs)}
    if dim.limit == "max_tool_calls":
        return {"tool_calls": cap, "tokens": _mul(cap, tok), "usd": _mul(cap, usd), "seconds": _mul(cap, secs)}
    if dim.limit == "max_tokens":
        rate = (usd / tok) if tok and usd is not None else None
        return {"tokens": cap, "usd": _mul(cap, rate)}
    if dim.limit == "max_usd":
        return {"usd": cap}
    if dim.limit == "deadline_s":
        return {"seconds": cap}
    return {}


def per_step_costs(runs: pd.DataFrame) -> dict[str, float | None]:
    """Cost of one step of a runaway: the p95 per-step tokens, dollars and seconds over all runs."""
    steps = runs["steps"].astype("Float64").where(runs["steps"] > 0)
    out: dict[str, float | None] = {}
    for key, col in (("tokens", "tokens"), ("usd", "cost_usd"), ("seconds", "active_s")):
        r = (runs[col].astype("Float64") / steps).dropna()
        out[key] = float(np.percentile(r.to_numpy(dtype=float), 95, method=METHOD)) if len(r) else None
    return out


def recommend_all(runs: pd.DataFrame, *, target: float = 0.01, margin: float = 0.10, seed: int = 0,
                  dimensions: list[Dimension] | None = None) -> list[CapRecommendation]:
    per = per_step_costs(runs) if len(runs) else {}
    return [recommend(runs, d, target=target, margin=margin, seed=seed, per_step=per)
            for d in (dimensions or DIMENSIONS) if d.column in runs]


SEGMENT_VALUES = 50           # segments beyond the 50 with most runs are pooled as "(other)"


def segment_percentiles(runs: pd.DataFrame, by: str, columns: list[str], *, seed: int = 0
                        ) -> dict[str, dict[str, dict[str, Any]]]:
    """Percentiles per segment value, successful and failed side by side.

    Bounded whatever the data: at most ``SEGMENT_VALUES`` values (the others pooled).
    """
    out: dict[str, dict[str, dict[str, Any]]] = {}
    if by not in runs:
        return out
    values = runs[by].astype("string")
    real = set(values.dropna().unique())
    values = values.fillna(_placeholder("(none)", real))
    counts = values.value_counts()
    if len(counts) > SEGMENT_VALUES:
        keep = set(counts.sort_values(ascending=False, kind="stable").index[:SEGMENT_VALUES])
        values = values.where(values.isin(keep), _placeholder("(other)", real))
    for value, grp in runs.groupby(values, sort=True):
        ok, bad = grp[grp["success"] == True], grp[grp["success"] == False]  # noqa: E712
        out[str(value)] = {c: {"successful": percentiles(ok[c], seed=seed).to_dict(),
                               "failed": percentiles(bad[c], seed=seed).to_dict()}
                           for c in columns if c in grp}
    return out


def _placeholder(name: str, real: set[str]) -> str:
    """The segment name for runs without a value or pooled: ``name``, in one more pair of parentheses for as long
    as some run has that text as its value (a real value spelt "(none)" is never merged with the runs that have
    none)."""
    while name in real:
        name = f"({name})"
    return name


def _fmt(c: float, integer: bool) -> str:
    return str(int(c)) if integer else f"{c:.6g}"


def _round_up(x: float) -> float:
    """Up to two significant digits; a value that would round past the largest double stays as it is."""
    if x <= 0:
        return 0.0
    mag = 10 ** math.floor(math.log10(x) - 1)
    up = round(math.ceil(x / mag) * mag, 12)            # (an int from 10 up: mag is then an int)
    return up if up <= sys.float_info.max else x


def _mul(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else float(a) * float(b)


def _tidy(d: dict[str, float | None]) -> dict[str, float | None]:
    """Whole tokens, steps and calls; dollars to 4 significant digits; seconds to 0.1 s."""
    out: dict[str, float | None] = {}
    for k, v in d.items():
        if v is None:
            out[k] = None
        elif k == "usd":
            out[k] = float(f"{v:.4g}")
        elif k == "seconds":
            out[k] = round(v, 1)
        else:
            out[k] = float(math.ceil(v))
    return out
