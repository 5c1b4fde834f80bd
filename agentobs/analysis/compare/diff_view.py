"""A comparison (``compare.Comparison``) as lines and tables of text: what the terminal and the HTML page show.

Every table has six columns (measure, before, after, change, 95% interval, significant) whose cells are at most
22, 8, 8, 8, 17 and 3 characters wide, so a table fits 80 columns: numbers have three significant digits (``12.3k``,
``4.76e-4``), shares are percentages and their changes percentage points.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .comparison import MIN_RUNS, MIN_TAIL, Comparison, Measure, Side

COLUMNS = [("measure", "left"), ("before", "right"), ("after", "right"), ("change", "right"),
           ("95% interval", "right"), ("sig.", "left")]
TITLES = {"runs": "Runs", "signatures": "Signatures (share of runs)",
          "percentiles": "Percentiles (all runs with a value)",
          "caps": "Recommended caps (from the successful runs)"}
_SHORT = {"max_repeat (window since_progress)": "max_repeat (progress)"}


@dataclass(frozen=True, kw_only=True)
class DiffTable:
    key: str
    title: str
    rows: list[list[str]]
    significant: list[bool | None]           # per row


@dataclass(frozen=True, kw_only=True)
class DiffView:
    head: list[str]
    tables: list[DiffTable]
    notes: list[str]
    warnings: list[str]


def diff_view(c: Comparison) -> DiffView:
    tables = []
    for key in ("runs", "signatures", "percentiles", "caps"):
        ms = c.section(key)
        if ms:
            tables.append(DiffTable(key=key, title=TITLES[key], rows=[row(m) for m in ms],
                                    significant=[m.significant for m in ms]))
    notes = [f"Change: after - before; 95% interval: bootstrap, {c.resamples:,} resamples of each side's runs (seed "
             f"{c.seed}); significant: Holm-adjusted p <= {c.alpha:g} over {c.comparisons} comparisons."]
    warnings = []
    untested = [m.label for m in c.measures if m.key != "runs" and m.change is not None and not m.tested]
    if untested:
        small = [f"the {name} side has {side.runs:,} run{'' if side.runs == 1 else 's'}"
                 for name, side in (("before", c.before), ("after", c.after)) if side.runs < MIN_RUNS]
        why = "; ".join(small) + ": " if small else ""
        warnings.append(f"{why}{len(untested)} change{'s' if len(untested) > 1 else ''} shown untested (no interval, "
                        f"no sig.): a change is tested where each side's value rests on at least {MIN_RUNS} runs, "
                        f"and a percentile's or cap's on at least {MIN_TAIL} runs above it (a p99 needs "
                        f"about {100 * MIN_TAIL} runs)")
    for name, side in (("before", c.before), ("after", c.after)):
        if side.quality.issues:
            warnings.append(f"{name}: data quality: {side.quality.summary()}")
    if c.labels is not None and c.labels["unmatched"] and not c.labels["selection"]:
        warnings.append(f"labels: {c.labels['unmatched']:,} ids match a run on neither side (e.g. "
                        f"{c.labels['unmatched_example']})")
    return DiffView(head=[side_line("Before", c.before), side_line("After", c.after)], tables=tables, notes=notes,
                    warnings=warnings)


def side_line(name: str, side: Side) -> str:
    window = ""
    sel = side.selection
    if sel:
        parts = [f"since {sel['since']}" if sel["since"] else "", f"until {sel['until']}" if sel["until"] else ""]
        parts += [f"{k} {', '.join(v)}" for k, v in (("service", sel["service"]), ("agent", sel["agent"]),
                                                       ("model", sel["model"]), ("where", sel["where"])) if v]
        window = " (" + ", ".join(p for p in parts if p) + ")"
    return (f"{name}: {', '.join(side.sources)}{window}: {side.runs:,} run{'' if side.runs == 1 else 's'}, "
            f"{side.labelled:,} labelled, "
            f"{side.spans:,} spans")


def row(m: Measure) -> list[str]:
    share = m.unit == "share"
    sig = "" if m.significant is None else "yes" if m.significant else "no"
    return [label(m), value(m.before, share), value(m.after, share), change(m.change, share),
            span(m.ci, share), sig]


def label(m: Measure) -> str:
    return _SHORT.get(m.label, m.label)       # (whole: the table's layout keeps its first column whole)


def value(x: float | None, share: bool = False) -> str:
    if x is None:
        return "-"
    return f"{100 * x:.1f}%" if share else num(x)


def change(x: float | None, share: bool = False) -> str:
    if x is None:
        return "-"
    if share:
        pp = round(100 * x, 1)
        return "0.0pp" if pp == 0 else f"{pp:+.1f}pp"
    text = num(x)
    return text if text.startswith("-") or x == 0 else "+" + text


def span(ci: tuple[float, float] | None, share: bool = False) -> str:
    if ci is None:
        return ""
    if share:
        return f"{_pp(ci[0])}..{_pp(ci[1])}pp"
    return f"{num(ci[0])}..{num(ci[1])}"


def _pp(x: float) -> str:
    pp = round(100 * x, 1)
    return "0.0" if pp == 0 else f"{pp:.1f}"


def num(x: float) -> str:
    """Three significant digits in at most 7 characters: ``1203``, ``12.3k``, ``4.5M``, ``0.476``, ``4.76e-4``."""
    if not math.isfinite(x):
        return "inf" if x > 0 else "-inf" if x < 0 else "nan"
    ax = abs(x)
    if ax == 0:
        return "0"
    if ax >= 1e9:
        return _scientific(x)
    if ax >= 1e6:
        return f"{x / 1e6:.3g}M"
    if ax >= 1e4:
        return f"{x / 1e3:.3g}k"
    if float(x).is_integer():
        return str(int(x))
    if ax >= 0.01:
        return f"{x:.3g}"
    return _scientific(x)


def _scientific(x: float) -> str:
    mantissa, exp = f"{x:.2e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exp)}"


__all__ = ["COLUMNS", "DiffTable", "DiffView", "diff_view", "num", "row"]
