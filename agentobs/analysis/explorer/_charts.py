"""The overview charts as Plotly figures (``{"data": [...], "layout": {...}}``), drawn in the browser by Plotly
(values on hover, zoom, pan): steps per run, the cut-off share against the max_steps cap, runs by stop reason,
runs by failure signature, input tokens per model call of context-growth runs.

Figures carry counts, not runs: a population of any size gives figures of bounded size (a bar per step up to
``MOST_BINS`` bars, at most ``MOST_BARS`` stop reasons with the rest summed). Texts from traces are
``text.labels`` (distinct, short, safe) written for Plotly (``text.plotly_text``); a bar or line that leads
somewhere (a stop reason to the runs it ended, a signature to its page, a run to its waterfall) carries the
string code of where it leads in ``customdata``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..report.summary import Report
from .text import Strings, labels, plotly_text

CHARTS = ("steps_histogram", "cutoff_curve", "stop_reasons", "signatures", "context_growth")
MOST_BINS = 120
MOST_BARS = 40
OK, BAD, CAP = "#3b7dd8", "#d8553b", "#222222"


def charts(report: Report, strings: Strings) -> dict[str, dict[str, Any]]:
    return {"steps_histogram": _steps(report), "cutoff_curve": _cutoff(report),
            "stop_reasons": _stop_reasons(report, strings), "signatures": _signatures(report, strings),
            "context_growth": _growth(report, strings)}


def _layout(title: str, x: str, y: str, **more: Any) -> dict[str, Any]:
    return {"title": {"text": title}, "xaxis": {"title": {"text": x}}, "yaxis": {"title": {"text": y}},
            "margin": {"l": 60, "r": 20, "t": 40, "b": 50}, "height": 340, "legend": {"orientation": "h", "y": -0.25},
            **more}


def _vline(x: float) -> dict[str, Any]:
    return {"type": "line", "x0": x, "x1": x, "yref": "paper", "y0": 0, "y1": 1,
            "line": {"color": CAP, "dash": "dash", "width": 1.5}}


def _note(x: float, text: str) -> dict[str, Any]:
    """A label at the top of a vertical line, to its left."""
    return {"x": x, "y": 1, "yref": "paper", "text": text, "showarrow": False, "xanchor": "right", "yanchor": "top",
            "bgcolor": "rgba(255,255,255,0.8)"}


def _steps(r: Report) -> dict[str, Any]:
    runs = r.runs
    groups = {"successful": runs.loc[runs["success"] == True, "steps"],  # noqa: E712
              "failed": runs.loc[runs["success"] == False, "steps"]}  # noqa: E712
    values = {k: v.dropna().to_numpy(dtype=np.int64) for k, v in groups.items()}
    hi = max([1, *(int(v.max()) for v in values.values() if len(v))])
    width = max(1, -(-hi // MOST_BINS))            # a bar per step up to MOST_BINS steps, then wider bins
    data = []
    for (name, v), color in zip(values.items(), (OK, BAD), strict=True):
        counts = np.bincount(np.clip(v, 0, None) // width, minlength=hi // width + 1) if len(v) else np.zeros(1)
        xs = np.arange(len(counts)) * width
        keep = counts > 0
        bar = {"type": "bar", "name": name, "x": xs[keep], "y": counts[keep], "marker": {"color": color},
               "opacity": 0.75, "hovertemplate": f"%{{x}} steps{' and up' if width > 1 else ''}: %{{y}} {name} runs"
                                                 "<extra></extra>"}
        if width > 1:                                   # a bin of ``width`` steps starts at its x
            bar.update(width=width * 0.95, offset=0)
        data.append(bar)
    cap = next((c for c in r.caps if c.dimension == "steps"), None)
    shapes, notes = [], []
    if cap and cap.recommended is not None:
        shapes.append(_vline(cap.recommended))
        notes.append(_note(cap.recommended, f"recommended max_steps {cap.recommended:g}"))
    return {"data": data, "layout": _layout("Steps per run", "steps (model calls) per run", "runs",
                                            barmode="overlay", shapes=shapes, annotations=notes)}


def _cutoff(r: Report) -> dict[str, Any]:
    cap = next((c for c in r.caps if c.dimension == "steps"), None)
    data: list[dict[str, Any]] = []
    shapes: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    if cap and cap.cutoff:
        xs = [float(k) for k in cap.cutoff]
        data.append({"type": "scatter", "mode": "lines", "line": {"shape": "hv", "color": OK}, "x": xs,
                     "y": [100 * v for v in cap.cutoff.values()], "name": "cut off",
                     "hovertemplate": "max_steps %{x}: %{y:.2f}% of successful runs cut off<extra></extra>"})
        shapes.append({"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": 100 * r.options.target,
                       "y1": 100 * r.options.target, "line": {"color": "grey", "dash": "dot"}})
        notes.append({"xref": "paper", "x": 1, "y": 100 * r.options.target, "showarrow": False, "xanchor": "right",
                      "yanchor": "bottom", "text": f"target {100 * r.options.target:g}%"})
        if cap.recommended is not None:
            shapes.append(_vline(cap.recommended))
            notes.append(_note(cap.recommended, f"recommended {cap.recommended:g}"))
    return {"data": data, "layout": _layout("Cut-off share versus cap", "max_steps cap",
                                            "% of successful runs cut off", shapes=shapes, annotations=notes)}


def _stop_reasons(r: Report, strings: Strings) -> dict[str, Any]:
    stops = sorted(r.overview["by_stop_reason"].items(), key=lambda kv: (-kv[1], kv[0]))
    shown, rest = stops[:MOST_BARS], stops[MOST_BARS:]
    names = [plotly_text(s) for s in labels(k for k, _ in shown)]
    counts = [v for _, v in shown]
    codes = [strings.code(k) for k, _ in shown]
    if rest:
        names.append(plotly_text(f"{len(rest):,} other stop reasons"))
        counts.append(sum(v for _, v in rest))
        codes.append(-1)
    return {"data": [{"type": "bar", "orientation": "h", "y": names[::-1], "x": counts[::-1],
                      "customdata": codes[::-1], "marker": {"color": "#6b8e23"},
                      "hovertemplate": "%{y}: %{x} runs<extra></extra>"}],
            "layout": _layout("Runs by stop reason (click: its runs)", "runs", "",
                              height=max(340, 60 + 22 * len(names)), yaxis={"automargin": True})}


def _signatures(r: Report, strings: Strings) -> dict[str, Any]:
    sigs = r.signatures
    names = [plotly_text(s) for s in labels(s.name for s in sigs)]
    codes = [strings.code(s.name) for s in sigs]
    common = {"type": "bar", "orientation": "h", "y": names[::-1], "customdata": codes[::-1]}
    return {"data": [{**common, "name": "all runs with it", "x": [s.runs for s in sigs][::-1],
                      "marker": {"color": BAD}, "hovertemplate": "%{y}: %{x} runs with it<extra></extra>"},
                     {**common, "name": "primary signature", "x": [s.primary for s in sigs][::-1],
                      "marker": {"color": "#8b1a1a"}, "hovertemplate": "%{y}: primary in %{x} runs<extra></extra>"}],
            "layout": _layout("Runs by failure signature (click: the signature)", "runs", "", barmode="overlay",
                              height=max(340, 60 + 24 * len(names)), yaxis={"automargin": True})}


def _growth(r: Report, strings: Strings) -> dict[str, Any]:
    data = []
    for run_id, series in r.growth_series.items():
        code = strings.code(run_id)
        data.append({"type": "scatter", "mode": "lines+markers", "name": plotly_text(labels([run_id])[0]),
                     "x": list(range(1, len(series) + 1)), "y": series, "customdata": [code] * len(series),
                     "hovertemplate": "call %{x}: %{y} input tokens<extra>%{fullData.name}</extra>"})
    layout = _layout("Input tokens per model call, context-growth runs (click: the run)", "model call",
                     "input tokens")
    if not data:
        layout["annotations"] = [{"text": "no context-growth runs", "showarrow": False, "xref": "paper",
                                  "yref": "paper", "x": 0.5, "y": 0.5}]
    return {"data": data, "layout": layout}
