"""The report as readers see it: sections of tables and lines, built once, rendered by the terminal and HTML.

``report_view(report)`` turns a ``Report`` into a ``ReportView`` (sections -> tables -> rows of ``Cell``s, plus
lines of text); the terminal renderer (``agentobs/cli/terminal.py``) and the HTML renderer (``html.py``, a
Jinja2 template) only lay it out. The JSON report is the data itself (``Report.to_dict``, schema in
docs/report-schema.md). Every text in a cell is plain data: renderers escape it for their medium.
``trace_view`` formats one trace's span tree (``trace_tree.trace_tree``) for ``agentobs trace``.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..formats import FORMAT_NAMES
from .summary import Report


@dataclass(frozen=True, kw_only=True)
class Cell:
    text: str
    link: str | None = None          # an http(s) URL the renderer may make a link of
    strong: bool = False
    parts: tuple[Cell, ...] = ()     # several linked items in one cell (HTML shows each; ``text`` joins them)


@dataclass(frozen=True, kw_only=True)
class Column:
    name: str
    align: str = "left"              # "left" | "right"
    terminal: bool = True            # shown on the terminal (long prose columns are HTML only)
    key: bool = False                # a key cell (a name, a count, a share, a recommended value): a narrow terminal
                                     # keeps it in the table and moves the other columns below (the first always is)


@dataclass(frozen=True, kw_only=True)
class Table:
    title: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Cell, ...], ...]
    terminal: bool = True            # shown on the terminal (the overview table repeats its summary line)


@dataclass(frozen=True, kw_only=True)
class Line:
    text: str
    level: str = "info"              # "info" | "warning"


@dataclass(frozen=True, kw_only=True)
class Section:
    key: str                         # stable id (HTML anchors, tests)
    title: str
    blocks: tuple[Table | Line, ...] = ()


@dataclass(frozen=True, kw_only=True)
class ReportView:
    summary: tuple[Line, ...]
    sections: tuple[Section, ...]
    generated_at: str
    sources: tuple[str, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)


def num(v: Any) -> str:
    """A figure as shown: '–' for none, 6 significant digits, thousands separated from 1 up; from a million up
    to 1e15 a whole number (``.6g`` wrote 1426909 as 1.42691e+06, beside the exact value in the JSON report)."""
    if v is None or (isinstance(v, float) and (np.isnan(v) or np.isinf(v))) or v is pd.NA:
        return "–"
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if abs(v) < 1:
            return f"{v:.6g}"
        return f"{v:,.6g}" if abs(v) < 1e6 else f"{v:,.0f}" if abs(v) < 1e15 else f"{v:.6g}"
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    return str(v)


def _cell(v: Any, **kw: Any) -> Cell:
    return Cell(text=v if isinstance(v, str) else num(v), **kw)


def _table(title: str, columns: list[tuple[str, str] | Column], rows: list[list[Any]], *,
           terminal: bool = True, key: tuple[str, ...] = ()) -> Table:
    """A table; ``key`` names its key columns (the first is one anyway)."""
    cols = tuple(c if isinstance(c, Column) else Column(name=c[0], align=c[1], key=c[0] in key) for c in columns)
    return Table(title=title, columns=cols, terminal=terminal,
                 rows=tuple(tuple(x if isinstance(x, Cell) else _cell(x) for x in r) for r in rows))


def report_view(r: Report) -> ReportView:
    ov = r.overview
    rate = "–" if ov["success_rate"] is None else f"{100 * ov['success_rate']:.1f}%"
    runs = f"{ov['runs']:,} run{'' if ov['runs'] == 1 else 's'}"
    summary = [Line(text=f"{runs} ({ov['spans']:,} spans) from {', '.join(r.sources)}: "
                         f"{ov['successful']:,} successful, {ov['failed']:,} failed, {ov['unlabelled']:,} unlabelled; "
                         f"success rate {rate}")]
    read = _read_line(r)
    if read:
        summary.append(read)
    sections = [
        Section(key="overview", title="Overview", blocks=(_table("Runs", [
            ("runs", "right"), ("spans", "right"), ("successful", "right"), ("failed", "right"),
            ("unlabelled", "right"), ("success rate", "right")],
            [[ov["runs"], ov["spans"], ov["successful"], ov["failed"], ov["unlabelled"], rate]], terminal=False),
            _table("Runs by stop reason", [("stop reason", "left"), ("runs", "right")],
                   [[str(k), v] for k, v in ov["by_stop_reason"].items()], key=("runs",)))),
        _signatures(r), _percentiles(r), *_segments(r), _caps(r), _quality(r)]
    return ReportView(summary=tuple(summary), sections=tuple(s for s in sections if s.blocks),
                      generated_at=r.generated_at, sources=tuple(r.sources),
                      notes=(f"Target cut-off share {100 * r.options.target:g}%, margin {100 * r.options.margin:g}%.",
                             "Percentiles are observed values (numpy inverted_cdf) with 95% intervals from the exact "
                             "bootstrap in the JSON report."))


def _read_line(r: Report) -> Line | None:
    """What was read: the span dialects recognized, the OTLP JSON spellings other than the canonical one, and the
    other formats converted to OTLP."""
    parts = [f"{n:,} spans in {d}" if d != "structure" else f"{n:,} by structure"
             for d, n in sorted(r.derivation.dialects.items(), key=lambda kv: -kv[1])]
    left = sum(c.unclassified for c in r.derivation.roles.values())
    if left:
        names = Counter[str]()
        for c in r.derivation.roles.values():
            names.update(dict(c.top()))
        top = ", ".join(f"{n} ({k:,})" for n, k in sorted(names.items(), key=lambda kv: (-kv[1], kv[0]))[:3])
        parts.append(f"{left:,} with no role (most often {top})")
    seen = {sp for per in r.spellings.values() for sp in per if sp != "canonical"}
    converted = sorted(seen & FORMAT_NAMES)
    spellings = sorted(seen - FORMAT_NAMES)
    if spellings:
        parts.append("OTLP JSON with " + "; ".join(spellings))
    if converted:
        parts.append("converted from " + "; ".join(converted))
    return Line(text="Read: " + ", ".join(parts)) if parts else None


def _signatures(r: Report) -> Section:
    rows = []
    for s in r.signatures:
        if not s.runs:
            continue
        ex = r.examples.get(s.name, [])
        ratio = "–" if s.ratio is None or s.ratio_ci is None else \
            f"{s.ratio:.3g} [{s.ratio_ci[0]:.3g}, {s.ratio_ci[1]:.3g}]"
        rows.append([s.name, s.role, s.runs, f"{100 * s.share:.1f}%", s.failed, _pct(s.failed_share),
                     _pct(s.successful_share), ratio, s.primary, s.looks_like, s.control,
                     Cell(text=", ".join(e.link or e.run_id for e in ex),
                          parts=tuple(Cell(text=e.run_id, link=e.link) for e in ex))])
    blocks: list[Table | Line] = [_table("Failure signatures", [
        ("signature", "left"), ("role", "left"), ("runs", "right"), ("share", "right"), ("failed", "right"),
        ("of failed", "right"), ("of successful", "right"), ("ratio [95% CI]", "right"), ("primary", "right"),
        Column(name="looks like", terminal=False), ("control", "left"), ("examples", "left")], rows,
        key=("role", "runs", "failed", "ratio [95% CI]"))]
    blocks.append(Line(text="role: cause when a signature is more common among failed runs than among successful "
                            "ones beyond chance (the ratio's 95% interval above 1); trait when it is about as common "
                            "in successful runs (it describes the population, not why runs fail)."))
    if r.overview["without_signature_failed"]:
        shown = "; ".join(f"{u.run_id}: {u.last_error or 'no error recorded'}" for u in r.unexplained[:3])
        blocks.append(Line(text=f"{r.overview['without_signature_failed']:,} failed runs match no signature "
                                f"(unexplained; what ended them: {shown})."))
    for name, exs in r.examples.items():
        for e in exs[:1]:
            if e.evidence:
                blocks.append(Line(text=f"evidence for {name} in {e.run_id}: " + " | ".join(e.evidence[:4])))
    return Section(key="signatures", title="Failure signatures", blocks=tuple(blocks))


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _percentiles(r: Report) -> Section:
    rows = []
    for m, d in r.percentiles.items():
        for group in ("successful", "failed"):
            g = d[group]
            ci = g["ci95"].get("p99") if g["ci95"] else None
            rows.append([m, group, g["n"], g["p50"], g["p90"], g["p95"], g["p99"], g["max"],
                         f"[{num(ci[0])}, {num(ci[1])}]" if ci else "–"])
    return Section(key="percentiles", title="Percentiles", blocks=(_table(
        "Percentiles (observed values, numpy inverted_cdf)",
        [("measure", "left"), ("runs", "left"), ("n", "right"), ("p50", "right"), ("p90", "right"),
         ("p95", "right"), ("p99", "right"), ("max", "right"), ("p99 95% CI", "left")], rows,
        key=("runs", "n", "p50", "p95", "p99")),))


def _segments(r: Report) -> list[Section]:
    out = []
    for by, values in r.segments.items():
        if len(values) < 2 and by in ("agent", "model"):
            continue                       # one agent, one model: the overall table says it all
        rows = []
        for value, metrics in values.items():
            ok, bad = metrics["steps"]["successful"], metrics["steps"]["failed"]
            tok = metrics["tokens"]["successful"]
            rows.append([value, ok["n"], bad["n"], ok["p50"], ok["p95"], ok["max"], tok["p95"]])
        out.append(Section(key=f"segment-{by}", title=f"Per {by}", blocks=(_table(f"Per {by}", [
            (by, "left"), ("successful", "right"), ("failed", "right"), ("steps p50", "right"),
            ("steps p95", "right"), ("steps max", "right"), ("tokens p95", "right")], rows,
            key=("successful", "failed", "steps p95", "tokens p95")),)))
    return out


def _caps(r: Report) -> Section:
    rows = []
    for c in r.caps:
        p = c.percentiles.values
        worst = ", ".join(f"{k} {num(v)}" for k, v in c.worst_case.items() if v is not None)
        rows.append([c.limit, c.successful_runs, p["p50"], p["p90"], p["p95"], p["p99"], p["max"], c.base,
                     Cell(text=num(c.recommended), strong=True), worst])
    blocks: list[Table | Line] = [_table(
        f"Recommended caps (smallest cap cutting off at most {100 * r.options.target:g}% of successful runs, "
        f"plus {100 * r.options.margin:g}%)",
        [("limit", "left"), ("successful", "right"), ("p50", "right"), Column(name="p90", align="right"),
         Column(name="p95", align="right", terminal=False), ("p99", "right"), ("max", "right"),
         ("within target", "right"), ("recommended", "right"), ("worst case of a runaway under it", "left")], rows,
        key=("successful", "recommended"))]
    blocks += [Line(text=w, level="warning") for w in dict.fromkeys(w for c in r.caps for w in c.warnings)]
    return Section(key="caps", title="Recommended caps", blocks=tuple(blocks))


def _quality(r: Report) -> Section:
    blocks: list[Table | Line] = []
    if r.quality.issues:
        blocks.append(_table("Data quality", [("issue", "left"), ("count", "right"), ("source", "left"),
                                              ("example", "left")],
                             [[i.kind.value, i.count, i.source, "; ".join(i.examples[:1])] for i in r.quality.issues],
                             key=("count",)))
    else:
        blocks.append(Line(text="No problems found in the input."))
    nd = r.derivation
    if nd.missing or nd.notes:
        blocks.append(Line(text="Not derived: " + "; ".join([*(f"{k} for {v:,} runs" for k, v in nd.missing.items()),
                                                             *nd.sentences()])))
    return Section(key="data-quality", title="Data quality", blocks=tuple(blocks))


# -- the runs table --------------------------------------------------------------------------------------

# the columns ``agentobs runs`` shows on a terminal by default, and those a narrow one keeps in its table
RUNS_COLUMNS = ("run_id", "success", "stop_reason", "signature", "steps", "tool_calls", "tokens", "cost_usd",
                "active_s", "agent", "model")
RUNS_KEY = ("run_id", "success", "steps", "tokens", "cost_usd")


@dataclass(frozen=True, kw_only=True)
class Listing:
    """A table of many rows as text, a column at a time: ``cells[column][row]`` (plain data: renderers clean and lay
    it out). Not ``Table``: the runs table may have hundreds of thousands of rows."""
    title: str
    columns: tuple[Column, ...]
    cells: list[list[str]]


def runs_view(runs: pd.DataFrame, columns: tuple[str, ...] = RUNS_COLUMNS) -> Listing:
    """The runs table's ``columns`` as text: numbers as the report writes them, ``yes``/``no`` for flags, lists
    joined by ``;``, ``–`` for a number not known, empty for a text."""
    cols, cells = [], []
    for name in columns:
        col = runs[name]
        numeric = pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col)
        cols.append(Column(name=name, align="right" if numeric else "left", key=name in RUNS_KEY))
        cells.append(_run_cells(col, numeric))
    return Listing(title=f"{len(runs):,} run{'s' if len(runs) != 1 else ''}", columns=tuple(cols), cells=cells)


def _run_cells(col: pd.Series, numeric: bool) -> list[str]:
    values = col.astype(object).where(col.notna(), None).tolist() if col.dtype != object else col.tolist()
    if numeric:
        shown = {v: num(v) for v in set(values) if v is not None}
        return [shown[v] if v is not None else "–" for v in values]
    flags = pd.api.types.is_bool_dtype(col)
    out = []
    for v in values:
        if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
            out.append("–" if flags else "")
        elif isinstance(v, bool | np.bool_):
            out.append("yes" if v else "no")
        elif isinstance(v, pd.Timestamp):
            out.append(v.isoformat(timespec="seconds"))
        elif isinstance(v, list | tuple | np.ndarray):
            out.append(";".join(str(x) for x in v))
        else:
            out.append(str(v))
    return out


# -- one trace -------------------------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class TraceView:
    """One trace's span tree as text (``trace_tree`` formatted), a column at a time: ``cells[column][row]``, rows in
    tree order, the first column a span's name; and what draws the tree: each row's ``parent`` row (-1: a root),
    ``depth`` and ``last`` (no later sibling). Plain data: renderers clean and lay it out. Not ``Table``: a trace
    may hold hundreds of thousands of spans."""
    title: str
    columns: tuple[Column, ...]
    cells: list[list[str]]
    parent: np.ndarray
    depth: np.ndarray
    last: np.ndarray


# the role columns ``--roles`` shows, when the spans carry them: (column of trace_tree, header)
_ROLE_HEADERS = (("_dialect", "dialect"), ("_role_evidence", "evidence"), ("_call", "call"), ("run_id", "run"))


def trace_view(tree: pd.DataFrame, trace_id: str, *, roles: bool = False) -> TraceView:
    """The rows ``agentobs trace`` shows of a ``trace_tree``: per span its name, role, start offset and duration
    (ms), tokens (input/output), cost, error and details; with ``roles``, its role and what it rests on (the
    dialect, the evidence, its logical call and run: the columns the spans carry) instead of the figures."""
    names = _span_names(tree)
    if roles:
        extra = [(c, h) for c, h in _ROLE_HEADERS if c in tree.columns]
        columns = [Column(name="span", key=True), Column(name="role", key=True),
                   *(Column(name=h, key=h != "evidence") for _, h in extra)]
        values = [names, _texts(tree["role"]), *(_texts(tree[c]) for c, _ in extra)]
    else:
        columns = [Column(name="span", key=True), Column(name="role", key=True),
                   Column(name="start ms", align="right", key=True),
                   Column(name="duration ms", align="right", key=True),
                   Column(name="tokens in/out", align="right", key=True), Column(name="cost $", align="right"),
                   Column(name="error"), Column(name="details")]
        values = [names, _texts(tree["role"]), _ms(tree["start_ms"]), _ms(tree["duration_ms"]), _tokens(tree),
                  _costs(tree["cost_usd"]), _texts(tree["error"]), _texts(tree["details"])]
    return TraceView(title=f"trace {trace_id}: {len(tree):,} span{'s' if len(tree) != 1 else ''}",
                     columns=tuple(columns), cells=values,
                     parent=tree["parent"].to_numpy(), depth=tree["depth"].to_numpy(), last=tree["last"].to_numpy())


def _texts(col: pd.Series) -> list[str]:
    return col.astype(object).where(col.notna(), "").astype(str).tolist()


def _span_names(tree: pd.DataFrame) -> list[str]:
    """Each span's name, saying when its parent is missing or a parent cycle was cut there."""
    names = _texts(tree["name"])
    for i in np.flatnonzero(tree["orphan"].to_numpy()).tolist():
        names[i] += " (parent not in the input)"
    for i in np.flatnonzero(tree["cycle"].to_numpy()).tolist():
        names[i] += " (a parent cycle cut here)"
    return names


def _ms(col: pd.Series) -> list[str]:
    """Milliseconds: 0.1 ms steps from 1 ms up (thousands separated), µs below."""
    return ["–" if v != v else "0" if v == 0 else f"{v:,.1f}" if abs(v) >= 1 else f"{v:.3f}"
            for v in col.astype(float).tolist()]


def _tokens(tree: pd.DataFrame) -> list[str]:
    """``input/output`` tokens, ``–`` for the one not recorded; empty when neither is."""
    a, b = _counts(tree["input_tokens"]), _counts(tree["output_tokens"])
    return ["" if x == "–" and y == "–" else f"{x}/{y}" for x, y in zip(a, b, strict=True)]


def _counts(col: pd.Series) -> list[str]:
    values = col.astype(float).tolist()
    shown = {v: "–" if v != v else f"{int(v):,}" for v in set(values)}
    return [shown[v] if v == v else "–" for v in values]


def _costs(col: pd.Series) -> list[str]:
    """Dollars: cents from $1 up, else 4 significant digits (never in exponent form); empty when unknown."""
    values = col.astype(float).tolist()
    shown = {v: _cost(v) for v in set(values) if v == v}
    return [shown[v] if v == v else "" for v in values]


def _cost(v: float) -> str:
    if abs(v) >= 1:
        return f"{v:,.2f}"
    if v == 0:
        return "0"
    return f"{v:.{3 - math.floor(math.log10(abs(v)))}f}"
