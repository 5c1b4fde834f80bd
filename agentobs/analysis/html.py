"""The HTML report: one self-contained page, plots drawn with matplotlib and embedded as PNG.

Text from traces is data: every value is HTML-escaped, a link is made only to an http(s) URL, and plot
labels are drawn as plain text (no mathtext, no control characters, shortened).
"""
from __future__ import annotations

import base64
import html
import io
import re
import warnings
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from .report import Report

PLOTS = ("steps_histogram", "cutoff_curve", "stop_reasons", "signatures", "context_growth")
LABEL_CHARS = 60                 # a plot label from the data is cut here (a huge label makes a huge image)
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _label(v: Any) -> str:
    """A value from the traces as a plot label: one line, no control characters, at most LABEL_CHARS."""
    s = _UNPRINTABLE.sub(" ", str(v))
    return s if len(s) <= LABEL_CHARS else s[: LABEL_CHARS - 1] + "…"


def _esc(v: Any) -> str:
    """``v`` as HTML text: escaped, control characters (invisible, or a parse error in HTML) made spaces."""
    return html.escape(_UNPRINTABLE.sub(" ", str(v)))


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
    hi = int(max([*ok.tolist(), *bad.tolist(), 1]))
    bins = np.arange(0.5, hi + 1.5, 1)
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
        for rid, ys in report.growth_series.items():
            ax.plot(range(1, len(ys) + 1), ys, marker="o", markersize=3, label=_legend(rid))
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


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _num(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:,.6g}"
    return _esc(f"{v:,}" if isinstance(v, int) else str(v))


def render(report: Report) -> str:
    e = _esc
    ov = report.overview
    imgs = plots(report)
    sig_rows = []
    for s in report.signatures:
        links = []
        for ex in report.examples.get(s.name, []):
            label = e(ex.run_id)
            href = _href(ex.link)
            links.append(f'<a href="{e(href)}">{label}</a>' if href else label)
        sig_rows.append([e(s.name), s.runs, f"{100 * s.share:.1f}%", s.failed, s.primary, e(s.looks_like),
                         e(s.control), ", ".join(links)])
    cap_rows = []
    for c in report.caps:
        p = c.percentiles.values
        cap_rows.append([e(c.limit), c.successful_runs, _num(p["p50"]), _num(p["p90"]), _num(p["p95"]),
                         _num(p["p99"]), _num(p["max"]), f"<b>{_num(c.recommended)}</b>",
                         e("; ".join(f"{k}={_num(v)}" for k, v in c.worst_case.items() if v is not None)),
                         e(" ".join(c.warnings))])
    pct_rows = []
    for m, d in report.percentiles.items():
        for group in ("successful", "failed"):
            g = d[group]
            pct_rows.append([e(m), group, g["n"], _num(g["p50"]), _num(g["p90"]), _num(g["p95"]), _num(g["p99"]),
                             _num(g["max"])])
    q_rows = [[e(i.kind), i.count, e(i.source), e("; ".join(i.examples))] for i in report.quality.issues]
    nd = report.derivation
    figures = "".join(f'<figure><img id="plot-{k}" class="plot" alt="{k}" src="data:image/png;base64,{v}">'
                      f"<figcaption>{e(k.replace('_', ' '))}</figcaption></figure>" for k, v in imgs.items())
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>agentobs report</title>
<style>
body{{font-family:system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}}
table{{border-collapse:collapse;margin:1em 0;font-size:14px}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left}}
th{{background:#f3f3f3}}figure{{display:inline-block;margin:0 1em 1em 0}}img.plot{{max-width:560px}}
.note{{color:#555;font-size:13px}}
</style></head><body>
<h1>agentobs report</h1>
<p class="note">Generated {e(report.generated_at)} from {e(", ".join(report.sources))}. Percentiles are observed values
(numpy <code>inverted_cdf</code>) with 95% bootstrap intervals in the JSON report. Target cut-off share
{100 * report.options.target:g}%, margin {100 * report.options.margin:g}%.</p>
<h2>Overview</h2>
{_table(["runs", "spans", "successful", "failed", "unlabelled", "success rate"],
        [[ov["runs"], ov["spans"], ov["successful"], ov["failed"], ov["unlabelled"],
          "–" if ov["success_rate"] is None else f"{100 * ov['success_rate']:.1f}%"]])}
<h2>Plots</h2>
<div id="plots">{figures}</div>
<h2>Failure signatures</h2>
{_table(["signature", "runs", "share", "failed", "primary", "looks like", "control", "examples"], sig_rows)}
<h2>Recommended caps</h2>
{_table(["limit", "successful runs", "p50", "p90", "p95", "p99", "max", "recommended", "worst case under it",
         "warnings"], cap_rows)}
<h2>Percentiles, successful and failed runs</h2>
{_table(["measure", "runs", "n", "p50", "p90", "p95", "p99", "max"], pct_rows)}
<h2>Data quality</h2>
{_table(["issue", "count", "source", "examples"], q_rows) if q_rows else "<p>No problems found in the input.</p>"}
<h2>Not derived</h2>
<p class="note">{e("; ".join([*(f"{k}: {v} runs" for k, v in nd.missing.items()), *nd.notes]) or "Everything was derived.")}</p>
<script>
window.addEventListener("load", function () {{
  var imgs = document.querySelectorAll("img.plot"), ok = 0;
  imgs.forEach(function (i) {{ if (i.complete && i.naturalWidth > 0) ok++; }});
  document.body.setAttribute("data-plots", imgs.length);
  document.body.setAttribute("data-plots-rendered", ok);
}});
</script>
</body></html>
"""
