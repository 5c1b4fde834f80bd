"""The HTML report: one self-contained page, plots drawn with matplotlib and embedded as PNG.

Text from traces is data: every value is HTML-escaped, a link is made only to an http(s) URL, and plot
labels are drawn as plain text (no mathtext, no control characters, shortened).
"""
from __future__ import annotations

import base64
import io
import re
import warnings
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from ..contract.redaction import shown
from .report import Report

_MOST_BINS = 120
PLOTS = ("steps_histogram", "cutoff_curve", "stop_reasons", "signatures", "context_growth")
LABEL_CHARS = 60                 # a plot label from the data is cut here (a huge label makes a huge image)
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _label(v: Any) -> str:
    """A value from the traces as a plot label: one line, no control characters, secrets masked, at most
    LABEL_CHARS."""
    s = _UNPRINTABLE.sub(" ", shown(str(v)))
    return s if len(s) <= LABEL_CHARS else s[: LABEL_CHARS - 1] + "…"


def _href(url: str | None) -> str | None:
    """``url`` when it is an http or https URL with a host (what a link may point to); else None."""
    if not url:
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    ok = parts.scheme.lower() in ("http", "https") and parts.netloc and url.isprintable() and " " not in url
    return url if ok else None


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def plots(report: Report) -> dict[str, str]:
    import matplotlib
    matplotlib.use("Agg")
    # labels are text, never mathtext ($...$); a glyph the font lacks is not worth a warning
    with matplotlib.rc_context({"text.parse_math": False, "text.usetex": False}), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph .* missing from font", category=UserWarning)
        return _plots(report)


def _plots(report: Report) -> dict[str, str]:
    import matplotlib.pyplot as plt

    runs = report.runs
    out: dict[str, str] = {}
    cap = next((c for c in report.caps if c.dimension == "steps"), None)
    ok = runs.loc[runs["success"] == True, "steps"].dropna().astype(int)  # noqa: E712
    bad = runs.loc[runs["success"] == False, "steps"].dropna().astype(int)  # noqa: E712

    fig, ax = plt.subplots(figsize=(7, 3.4))
    hi = max([1, *(int(s.max()) for s in (ok, bad) if len(s))])
    width = max(1, -(-hi // _MOST_BINS))      # a bin per step up to _MOST_BINS steps (one run of 1e12 steps made
    bins = np.arange(0.5, hi + width + 0.5, width).tolist()     # 1e12 bins: MemoryError, or minutes at 1e5)
    ax.hist([ok, bad], bins=bins, label=["successful", "failed"], color=["#3b7dd8", "#d8553b"], stacked=False)
    if cap and cap.recommended is not None:
        ax.axvline(cap.recommended, color="black", linestyle="--",
                   label=f"recommended max_steps = {cap.recommended:g}")
    ax.set_xlabel("steps (model calls) per run")
    ax.set_ylabel("runs")
    ax.legend()
    ax.set_title("Steps per run")
    out["steps_histogram"] = _png(fig)

    fig, ax = plt.subplots(figsize=(7, 3.4))
    if cap and cap.cutoff:
        xs = [float(k) for k in cap.cutoff]
        ys = [100 * v for v in cap.cutoff.values()]
        ax.step(xs, ys, where="post", color="#3b7dd8")
        ax.axhline(100 * report.options.target, color="grey", linestyle=":",
                   label=f"target {100 * report.options.target:g}%")
        if cap.recommended is not None:
            ax.axvline(cap.recommended, color="black", linestyle="--", label=f"recommended {cap.recommended:g}")
        ax.legend()
    ax.set_xlabel("max_steps cap")
    ax.set_ylabel("% of successful runs cut off")
    ax.set_title("Cut-off share versus cap")
    out["cutoff_curve"] = _png(fig)

    fig, ax = plt.subplots(figsize=(7, 3.4))
    stops = report.overview["by_stop_reason"]
    ax.barh(_labels(stops), list(stops.values()), color="#6b8e23")
    ax.set_xlabel("runs")
    ax.set_title("Runs by stop reason")
    out["stop_reasons"] = _png(fig)

    fig, ax = plt.subplots(figsize=(7, 3.4))
    names = _labels([s.name for s in report.signatures])
    ax.barh(names, [s.runs for s in report.signatures], color="#d8553b", label="all runs with it")
    ax.barh(names, [s.primary for s in report.signatures], color="#8b1a1a", label="primary signature")
    ax.set_xlabel("runs")
    ax.legend()
    ax.set_title("Runs by failure signature")
    out["signatures"] = _png(fig)

    fig, ax = plt.subplots(figsize=(7, 3.4))
    if report.growth_series:
        for rid, series in report.growth_series.items():
            ax.plot(range(1, len(series) + 1), series, marker="o", markersize=3, label=_legend(rid))
        if len(report.growth_series) <= 6:
            ax.legend(fontsize=7)
    else:
        ax.text(0.5, 0.5, "no context-growth runs", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("model call")
    ax.set_ylabel("input tokens")
    ax.set_title("Input tokens per step, context-growth runs")
    out["context_growth"] = _png(fig)
    return out


def _legend(v: Any) -> str:
    s = _label(v)
    return " " + s if s.startswith("_") else s      # matplotlib hides labels that start with "_"


def _labels(values: Any) -> list[str]:
    """Category labels for a bar chart: each shown as text and distinct (a shortened label keeps its own bar)."""
    out: list[str] = []
    for v in values:
        s = _label(v)
        while s in out:
            s += " "
        out.append(s)
    return out


def _shown(v: Any) -> Any:
    """Every value the template writes, as agentobs shows text: secrets masked (not our plots' data URLs)."""
    if isinstance(v, str) and not v.startswith("data:image/") and not hasattr(v, "__html__"):
        return shown(v)
    return v


def _environment() -> Any:
    import jinja2
    env = jinja2.Environment(loader=jinja2.PackageLoader("agentobs.analysis", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             finalize=_shown)
    env.filters["text"] = lambda v: _UNPRINTABLE.sub(" ", str(v))          # autoescape does the escaping
    env.filters["href"] = _href
    return env


def render(report: Report) -> str:
    """The whole page: the report's view (the same sections as the terminal) and the plots."""
    from .view import report_view
    return _environment().get_template("report.html.j2").render(view=report_view(report), plots=plots(report))
