"""``agentobs report | caps | runs | trace``: parse, call the analysis, render.

The analysis (pandas, pyarrow) is imported when a command runs, not when its ``--help`` is shown.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..errors import InputError
from .common import jaeger_url
from .render import console, json_text, say, table
from .safe_text import clean, csv_cell, http_url

if TYPE_CHECKING:
    import pandas as pd

    from ..analysis.report import Options, Report

LARGE_INPUT = 20 * 1024 * 1024


def write_atomic(path: Path, text: str) -> None:
    """Writes the whole file or nothing: a temporary file in the same folder, then a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def _with_progress(sources: tuple[str, ...], fn: Callable[[Callable[[int], None] | None], Any]) -> Any:
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    from ..analysis.sources import total_bytes
    size = total_bytes(sources)
    if size < LARGE_INPUT:
        return fn(None)
    with Progress(TextColumn("loading"), BarColumn(), DownloadColumn(), TimeRemainingColumn(), console=console,
                  transient=True) as bar:
        task = bar.add_task("load", total=size)
        return fn(lambda n: bar.advance(task, n))


def _options(labels: Path | None, success_attr: str | None, target: float, margin: float,
             segments: tuple[str, ...], jaeger: str | None) -> Options:
    from ..analysis.report import Options
    attr = None
    if success_attr:
        if "=" not in success_attr:
            raise InputError(f"--success-attr {success_attr!r}: use KEY=VALUE, e.g. eval.passed=true")
        k, v = success_attr.split("=", 1)
        attr = (k.strip(), v.strip())
    return Options(target=target, margin=margin, segments=("agent", "model", *segments),
                   labels=str(labels) if labels else None, success_attr=attr, jaeger_url=_link_base(jaeger))


def _link_base(explicit: str | None) -> str | None:
    """The Jaeger UI base for links: only an http or https URL; anything else makes no links."""
    given = explicit or jaeger_url()
    base = http_url(given)
    if given and base is None:
        click.echo("agentobs: warning: the Jaeger URL is not an http:// or https:// URL; no links to Jaeger",
                   err=True)
    return base


def _run(sources: tuple[str, ...], opt: Options) -> Report:
    from ..analysis.report import analyze
    from ..analysis.sources import expand
    if not sources:
        raise InputError("name at least one source: a traces file, a folder, a glob or a Jaeger URL")
    expand(sources)          # fail early, with one line, on a missing path
    return _with_progress(sources, lambda progress: analyze(sources, opt, progress))


def common(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option("--labels", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
                      help="CSV or JSON of run_id,success; ids match trace, conversation or task ids.")(fn)
    fn = click.option("--success-attr", default=None, metavar="KEY=VALUE",
                      help="A run succeeded when its root span has this attribute value.")(fn)
    fn = click.option("--target", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.01,
                      show_default=True, help="Largest share of successful runs a recommended cap may cut off.")(fn)
    fn = click.option("--margin", type=click.FloatRange(0, 10), default=0.10, show_default=True,
                      help="Margin added to the smallest cap within the target (0.1 = 10%).")(fn)
    fn = click.option("--segment", "segments", multiple=True, metavar="ATTR",
                      help="Also give percentiles per value of this run column or root-span attribute.")(fn)
    fn = click.option("--jaeger-url", default=None,
                      help="Jaeger UI base URL for links (default AGENTOBS_JAEGER_URL).")(fn)
    return click.argument("sources", nargs=-1)(fn)


def print_report(r: Report) -> None:
    ov = r.overview
    rate = "–" if ov["success_rate"] is None else f"{100 * ov['success_rate']:.1f}%"
    say((f"{ov['runs']} runs", "bold"), f" ({ov['spans']} spans) from {', '.join(map(clean, r.sources))}: "
        f"{ov['successful']} successful, {ov['failed']} failed, {ov['unlabelled']} unlabelled; "
        f"success rate {rate}")
    console.print(table("Runs by stop reason", [("stop reason", "left"), ("runs", "right")],
                        ov["by_stop_reason"].items()))
    rows = []
    for s in r.signatures:
        ex = r.examples.get(s.name, [])
        rows.append([s.name, s.runs, f"{100 * s.share:.1f}%", s.failed, s.primary, s.control,
                     ", ".join(e.link or e.run_id for e in ex)])
    console.print(table("Failure signatures", [("signature", "left"), ("runs", "right"), ("share", "right"),
                                               ("failed", "right"), ("primary", "right"), ("control", "left"),
                                               ("examples", "left")], rows))
    if ov["without_signature_failed"]:
        say(f"{ov['without_signature_failed']} failed runs match no signature (see their stop reasons).")
    for name, exs in r.examples.items():
        for e in exs[:1]:
            if e.evidence:
                say(f"  evidence for {clean(name)} in {clean(e.run_id)}: " + " | ".join(map(clean, e.evidence[:4])))
    print_percentiles(r)
    print_segments(r)
    print_caps(r)
    print_quality(r)


def print_percentiles(r: Report) -> None:
    rows = []
    for m, d in r.percentiles.items():
        for group in ("successful", "failed"):
            g = d[group]
            ci = g["ci95"].get("p99") if g["ci95"] else None
            rows.append([m, group, g["n"], _f(g["p50"]), _f(g["p90"]), _f(g["p95"]), _f(g["p99"]), _f(g["max"]),
                         f"[{_f(ci[0])}, {_f(ci[1])}]" if ci else "–"])
    console.print(table("Percentiles (observed values, numpy inverted_cdf)",
                        [("measure", "left"), ("runs", "left"), ("n", "right"), ("p50", "right"), ("p90", "right"),
                         ("p95", "right"), ("p99", "right"), ("max", "right"), ("p99 95% CI", "left")], rows))


def print_segments(r: Report) -> None:
    for by, values in r.segments.items():
        if len(values) < 2 and by in ("agent", "model"):
            continue                       # one agent, one model: the overall table says it all
        rows = []
        for value, metrics in values.items():
            ok, bad = metrics["steps"]["successful"], metrics["steps"]["failed"]
            tok = metrics["tokens"]["successful"]
            rows.append([value, ok["n"], bad["n"], _f(ok["p50"]), _f(ok["p95"]), _f(ok["max"]), _f(tok["p95"])])
        console.print(table(f"Per {by}", [(by, "left"), ("successful", "right"), ("failed", "right"),
                                          ("steps p50", "right"), ("steps p95", "right"), ("steps max", "right"),
                                          ("tokens p95", "right")], rows))


def print_caps(r: Report) -> None:
    rows = []
    for c in r.caps:
        p = c.percentiles.values
        worst = ", ".join(f"{k} {_f(v)}" for k, v in c.worst_case.items() if v is not None)
        rows.append([c.limit, c.successful_runs, _f(p["p50"]), _f(p["p99"]), _f(p["max"]), _f(c.base),
                     _f(c.recommended), worst])
    console.print(table(f"Recommended caps (smallest cap cutting off at most {100 * r.options.target:g}% of "
                        f"successful runs, plus {100 * r.options.margin:g}%)",
                        [("limit", "left"), ("successful", "right"), ("p50", "right"), ("p99", "right"),
                         ("max", "right"), ("within target", "right"), ("recommended", "right"),
                         ("worst case of a runaway under it", "left")], rows))
    for w in dict.fromkeys(w for c in r.caps for w in c.warnings):
        say(("warning:", "yellow"), " ", clean(w))


def print_quality(r: Report) -> None:
    if r.quality.issues:
        console.print(table("Data quality", [("issue", "left"), ("count", "right"), ("source", "left"),
                                             ("example", "left")],
                            [[i.kind, i.count, i.source, i.examples[0] if i.examples else ""]
                             for i in r.quality.issues]))
    nd = r.derivation
    if nd.missing or nd.notes:
        say("Not derived: " + "; ".join([*(f"{clean(k)} for {v} runs" for k, v in nd.missing.items()),
                                         *map(clean, nd.notes)]))


def _f(v: Any) -> str:
    import pandas as pd
    if v is None or (isinstance(v, float) and pd.isna(v)):
        return "–"
    if isinstance(v, float):
        return f"{v:.6g}" if abs(v) < 1 else f"{v:,.6g}"
    return str(v)


@click.command("report")
@common
@click.option("--format", "fmt", type=click.Choice(["table", "json", "html"]), default="table", show_default=True)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the report here (html defaults to agentobs-out/report.html).")
def report_cmd(sources: tuple[str, ...], labels: Path | None, success_attr: str | None, target: float,
               margin: float, segments: tuple[str, ...], jaeger_url: str | None, fmt: str, out: Path | None) -> None:
    """Failure taxonomy, percentiles and recommended caps of the runs in SOURCES."""
    from ..analysis import html as html_report
    r = _run(sources, _options(labels, success_attr, target, margin, segments, jaeger_url))
    if fmt == "json":
        text = json_text(r.to_dict(), indent=1)
        if out:
            write_atomic(out, text + "\n")
            say(f"Report (JSON): {out}")
        else:
            click.echo(text)
        return
    if fmt == "html":
        out = out or Path("agentobs-out/report.html")
        write_atomic(out, html_report.render(r))
        say(f"Report (HTML): {out}")
        return
    print_report(r)
    if out:
        write_atomic(out, json_text(r.to_dict(), indent=1) + "\n")
        say(f"JSON report: {out}")


@click.command("caps")
@common
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def caps_cmd(sources: tuple[str, ...], labels: Path | None, success_attr: str | None, target: float, margin: float,
             segments: tuple[str, ...], jaeger_url: str | None, fmt: str) -> None:
    """Recommended budget caps from the successful runs in SOURCES, with the share each candidate cuts off."""
    r = _run(sources, _options(labels, success_attr, target, margin, segments, jaeger_url))
    if fmt == "json":
        click.echo(json_text({"target": target, "margin": margin, "percentile_method": "inverted_cdf",
                              "dimensions": {c.dimension: c.to_dict() for c in r.caps}}, indent=1))
        return
    print_caps(r)
    for c in r.caps:
        shares = list(c.cutoff.items())
        if shares:
            step = max(1, len(shares) // 12)
            say(f"{c.limit}: " + "  ".join(f"{k}→{100 * v:.1f}%" for k, v in shares[::step]))


@click.command("runs")
@common
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True, help="CSV file to write.")
def runs_cmd(sources: tuple[str, ...], labels: Path | None, success_attr: str | None, target: float, margin: float,
             segments: tuple[str, ...], jaeger_url: str | None, out: Path) -> None:
    """The runs table (one row per run, documented columns) as CSV."""
    r = _run(sources, _options(labels, success_attr, target, margin, segments, jaeger_url))
    df = r.runs.copy()
    for c in ("trace_ids", "signatures"):
        df[c] = df[c].map(lambda xs: ";".join(xs))
    write_atomic(out, csv_text(df))
    say(f"{len(df)} runs: {out}")


def csv_text(df: pd.DataFrame) -> str:
    """The CSV of ``df``: RFC 4180 line ends (CRLF, so a value holding a CR or LF is quoted, not split), and text a
    spreadsheet would run as a formula prefixed with ``'``; numbers untouched."""
    import pandas as pd
    out = df.copy()
    types = pd.api.types
    for c in out.columns:
        col = out[c]
        if not (types.is_numeric_dtype(col) or types.is_bool_dtype(col) or types.is_datetime64_any_dtype(col)):
            out[c] = col.astype(object).map(csv_cell)
    out.columns = [csv_cell(str(c)) for c in out.columns]
    return out.to_csv(index=False, lineterminator="\r\n")


@click.command("trace")
@click.argument("trace_id")
@click.argument("sources", nargs=-1)
def trace_cmd(trace_id: str, sources: tuple[str, ...]) -> None:
    """The span tree of one trace, as in the seed's trace table."""
    from ..analysis.jaeger import shown
    from ..analysis.sources import load_sources
    if not sources:
        raise InputError("name the traces file, folder or Jaeger URL that holds the trace")
    ss = load_sources(sources)
    spans = ss.spans
    t = spans[spans["trace_id"] == trace_id.lower()] if len(spans) else spans
    if t.empty:
        raise InputError(f"trace {trace_id} is not in {', '.join(shown(s) for s in sources)}")
    console.print(table(f"trace {trace_id}", [("id", "right"), ("parent", "right"), ("span", "left"),
                                              ("t0", "right"), ("t1", "right"), ("status", "left"),
                                              ("details", "left")], trace_rows(t)))
    base = _link_base(None)
    if base:
        say(f"Jaeger: {base}/trace/{trace_id}")


def trace_rows(t: pd.DataFrame) -> list[list[Any]]:
    import pandas as pd

    from ..contract import semconv as sc
    parent_of = dict(zip(t["span_id"], t["parent_span_id"], strict=True))

    def depth(sid: str) -> int:
        d, seen = 0, set()
        while pd.notna(parent_of.get(sid)) and parent_of.get(sid) in parent_of and sid not in seen:
            seen.add(sid)
            sid, d = parent_of[sid], d + 1
        return d
    t = t.assign(_depth=[depth(s) for s in t["span_id"]])
    t = t.sort_values(["start_ns", "_depth", "end_ns"], ascending=[True, True, False], kind="stable")
    t = t.reset_index(drop=True)
    idx = {sid: i for i, sid in enumerate(t["span_id"])}
    t0 = int(t["start_ns"].min())
    rows = []
    for i, s in t.iterrows():
        parent = idx.get(s["parent_span_id"]) if pd.notna(s["parent_span_id"]) else None
        details = []
        for key, label in ((sc.USAGE_INPUT_TOKENS, "tin"), (sc.USAGE_OUTPUT_TOKENS, "tout"),
                           (sc.TOOL_RESULT_STATUS, "result"), (sc.STOP_REASON, "stop"), (sc.STEP_OUTCOME, "outcome")):
            if key in t.columns and pd.notna(s[key]):
                details.append(f"{label}={s[key]}")
        status = {0: "unset", 1: "ok", 2: "error"}.get(int(s["status_code"]), "?")
        if status == "error" and sc.ERROR_TYPE in t.columns and pd.notna(s[sc.ERROR_TYPE]):
            status = f"error: {s[sc.ERROR_TYPE]}"
        rows.append([i, "" if parent is None else parent, s["name"], f"{(s['start_ns'] - t0) / 1e9:.1f}",
                     f"{(s['end_ns'] - t0) / 1e9:.1f}", status, " ".join(details)])
    return rows
