"""``agentobs report | caps | runs | trace``: parse, call the analysis, render.

The analysis (pandas, pyarrow) is imported when a command runs, not when its ``--help`` is shown.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..errors import InputError
from .common import DEFAULT_OUT
from .reading import (
    caps_options,
    link_base,
    report_options,
    resolve_options,
    run_analysis,
    say_selection,
    selection_options,
    source_options,
)
from .render import json_text, on_terminal, say, write_text
from .safe_text import clean, csv_cell

if TYPE_CHECKING:
    import pandas as pd

    from ..analysis.report.summary import Report
    from ..analysis.select.selection import Selection

# agentobs.analysis.emit.config.KINDS (a test keeps them equal)
EMIT_KINDS = ("budget", "pydantic-ai", "openai-agents", "prometheus-rules")

DEFAULT_HTML = DEFAULT_OUT / "report.html"


STDOUT = "-"             # --out -: standard output


def _to_stdout(out: Path | None) -> bool:
    return out is not None and str(out) == STDOUT


def _wrote(what: str, out: Path) -> None:
    """Says where the output went: on standard error when it went to standard output."""
    if _to_stdout(out):
        click.echo(f"agentobs: {clean(what)}: standard output", err=True)
    else:
        say(f"{what}: {out}")


def print_report(r: Report) -> None:
    from ..analysis.report.view import report_view
    from .terminal import print_view
    print_view(report_view(r))


def print_caps(r: Report) -> None:
    from ..analysis.report.view import report_view
    from .terminal import print_view
    print_view(report_view(r), sections=("caps",))


OUT_PATH = click.Path(dir_okay=False, path_type=Path, allow_dash=True)     # --out: a file, or - (standard output)


@click.command("report")
@report_options
@click.option("--format", "fmt", type=click.Choice(["table", "json", "html"]), default=None,
              help="table (default), json or html; with --out and no --format: html for a .html/.htm file, else "
                   "the table on the terminal and JSON in the file.")
@click.option("--out", type=OUT_PATH, default=None,
              help="Write the report here (html defaults to agentobs-out/report.html); - for standard output (JSON "
                   "unless --format html).")
def report_cmd(*, sources: tuple[str, ...], labels: tuple[Path, ...], success_attr: str | None, target: float,
               margin: float, segments: tuple[str, ...], jaeger_url: str | None, engine: str, scheduler: str | None,
               fmt: str | None, out: Path | None, selection: Selection) -> None:
    """Failure taxonomy, percentiles and recommended caps of the runs in SOURCES."""
    if fmt is None:         # a .html file gets the HTML report (JSON in it would be shown as a page, unescaped)
        fmt = "html" if out is not None and out.suffix.lower() in (".html", ".htm") else "table"
    if fmt == "html" and out is None:
        out = DEFAULT_HTML
    if fmt == "table" and _to_stdout(out):
        fmt = "json"        # (standard output holds the file's text alone)
    opt = resolve_options(labels, success_attr, target=target, margin=margin, segments=segments, jaeger=jaeger_url,
                   selection=selection)
    r = run_analysis(sources, opt, engine, scheduler, out=out)
    if fmt == "json":
        text = json_text(r.to_dict(), indent=1)
        if out:
            write_text(out, text + "\n")
            _wrote("Report (JSON)", out)
        else:
            click.echo(text)
        return
    if fmt == "html":
        from ..analysis.explorer import html as html_report
        out = out or DEFAULT_HTML
        write_text(out, html_report.render(r))
        _wrote("Report (HTML)", out)
        return
    say_selection(r)
    print_report(r)
    if out:
        write_text(out, json_text(r.to_dict(), indent=1) + "\n")
        _wrote("JSON report", out)


@click.command("caps")
@source_options
@caps_options
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--emit", "emit_as", type=click.Choice(list(EMIT_KINDS)), default=None,
              help="Print the caps as configuration to paste: an agentobs Budget, Pydantic AI UsageLimits, "
                   "OpenAI Agents max_turns with the agentobs guard, or Prometheus alerting rules.")
@click.option("--alert-window", default="1h", show_default=True, metavar="DURATION",
              help="With --emit prometheus-rules: the window each rule looks back over.")
@click.option("--alert-for", "alert_for", default="5m", show_default=True, metavar="DURATION",
              help="With --emit prometheus-rules: how long a rule's condition holds before it fires.")
@click.option("--out", type=OUT_PATH, default=None,
              help="Write the caps here: the --emit configuration, else JSON (the table stays on the terminal); - for "
                   "standard output.")
def caps_cmd(*, sources: tuple[str, ...], labels: tuple[Path, ...], success_attr: str | None, target: float,
             margin: float, engine: str, scheduler: str | None, fmt: str, emit_as: str | None, alert_window: str,
             alert_for: str, out: Path | None, selection: Selection) -> None:
    """Recommended budget caps from the successful runs in SOURCES, with the share each candidate cuts off."""
    ctx = click.get_current_context()
    given = [f"--{n.replace('_', '-')}" for n in ("alert_window", "alert_for")
             if ctx.get_parameter_source(n) is click.core.ParameterSource.COMMANDLINE]
    if given and emit_as != "prometheus-rules":
        raise InputError(f"{' and '.join(given)} shape{'' if len(given) > 1 else 's'} the alerting rules: add --emit "
                         "prometheus-rules")
    opt = resolve_options(labels, success_attr, target=target, margin=margin, segments=(), jaeger=None,
                          selection=selection)
    r = run_analysis(sources, opt, engine, scheduler, say_labels=True, out=out)
    if emit_as:
        from ..analysis.emit.config import reserve
        from ..analysis.emit.kinds import emit as emit_caps
        e = emit_caps(r.caps, emit_as, target=target, margin=margin, reserve=reserve(r.runs), runs=r.runs,
                      alert_window=alert_window, alert_for=alert_for)
        for w in dict.fromkeys(w for c in r.caps for w in c.warnings):     # what the table would show beside it
            click.echo(f"agentobs: warning: {clean(w)}", err=True)
        text = json_text({"target": target, "margin": margin, **e.to_dict()}, indent=1) + "\n" if fmt == "json" \
            else e.text
        if out:
            write_text(out, text)
            _wrote(f"Caps (--emit {emit_as})", out)
        else:
            click.echo(text, nl=False)
        return
    doc = json_text({"target": target, "margin": margin, "percentile_method": "inverted_cdf",
                     "dimensions": {c.dimension: c.to_dict() for c in r.caps}}, indent=1) + "\n"
    if fmt == "json" or _to_stdout(out):
        if out:
            write_text(out, doc)
            _wrote("Caps (JSON)", out)
        else:
            click.echo(doc, nl=False)
        return
    say_selection(r)
    print_caps(r)
    for c in r.caps:
        shares = list(c.cutoff.items())
        if shares:
            step = max(1, len(shares) // 12)
            say(f"{c.limit}: " + "  ".join(f"{k}→{100 * v:.1f}%" for k, v in shares[::step]))
    if out:
        write_text(out, doc)
        _wrote("Caps (JSON)", out)


@click.command("runs")
@source_options
@click.option("--out", type=OUT_PATH, default=None, help="Write the runs table here as CSV; - for standard output.")
@click.option("--format", "fmt", type=click.Choice(["table", "csv"]), default=None,
              help="Without --out: table or csv on standard output (default: a table on a terminal, CSV, every "
                   "column, when piped).")
@click.option("--columns", default=None, metavar="NAMES",
              help="The columns, comma-separated, or 'all' (the table's default: run_id, success, stop_reason, "
                   "signature, steps, tool_calls, tokens, cost_usd, active_s, agent, model; the CSV's: all).")
def runs_cmd(*, sources: tuple[str, ...], labels: tuple[Path, ...], success_attr: str | None, engine: str,
             scheduler: str | None, out: Path | None, fmt: str | None, columns: str | None,
             selection: Selection) -> None:
    """The runs table (one row per run, documented columns): on the terminal, or as CSV."""
    from ..analysis.report.view import RUNS_COLUMNS
    if out is not None and fmt == "table":
        raise InputError("--out writes CSV: leave out --format table (or --out, for the table on the terminal)")
    opt = resolve_options(labels, success_attr, target=0.01, margin=0.10, segments=(), jaeger=None,
                   selection=selection)
    r = run_analysis(sources, opt, engine, scheduler, say_labels=True, out=out)
    table = fmt == "table" or (out is None and fmt is None and on_terminal())
    every = list(r.runs.columns)
    if not table:
        df = r.runs[list(_columns(columns, tuple(every), every))].copy()
        for c in ("trace_ids", "signatures"):
            if c in df.columns:
                df[c] = df[c].map(lambda xs: ";".join(xs))
        text = csv_text(df)
        if out is None:
            click.echo(text, nl=False)
        else:
            write_text(out, text)
            _wrote(f"{len(df):,} run{'' if len(df) == 1 else 's'}", out)
        return
    from ..analysis.report.view import runs_view
    from .terminal import print_listing
    say_selection(r)
    print_listing(runs_view(r.runs, _columns(columns, RUNS_COLUMNS, every)))


def _columns(asked: str | None, default: tuple[str, ...], every: list[str]) -> tuple[str, ...]:
    """The columns ``--columns`` names (``all``: every one), each checked."""
    if asked is None:
        return default
    if asked.strip().lower() == "all":
        return tuple(every)
    names = tuple(n.strip() for n in asked.split(",") if n.strip())
    unknown = [n for n in names if n not in every]
    if unknown or not names:
        raise InputError(f"--columns {asked!r}: {'no column named ' + ', '.join(unknown) if unknown else 'no column'}"
                         f"; the runs table's columns: {', '.join(every)} (docs/analysis.md), or all")
    return names


_HEX_IDS = re.compile(r"[0-9a-f]*(?:[ ,;]+[0-9a-f]+)*")      # a hex id, or a list of them


def csv_text(df: pd.DataFrame) -> str:
    """The CSV of ``df``: RFC 4180 line ends (CRLF, so a value holding a CR or LF is quoted, not split), secrets in
    text masked and text a spreadsheet would run as a formula prefixed with ``'``; numbers untouched. Ids are
    masked too (a task or conversation id is whatever the agent's code put there), except hex ones (trace and span
    ids, which the loader writes: no secret, though a span id of 16 decimal digits reads as a card number; one per
    run, masking those would cost more than the rest of the file)."""
    import pandas as pd
    out = df.copy()
    types = pd.api.types
    for c in out.columns:
        col = out[c]
        if not (types.is_numeric_dtype(col) or types.is_bool_dtype(col) or types.is_datetime64_any_dtype(col)):
            ids = str(c).endswith(("_id", "_ids"))
            out[c] = col.astype(object).map(
                lambda v, ids=ids: csv_cell(v, mask=not (ids and isinstance(v, str) and _HEX_IDS.fullmatch(v))))
    out.columns = [csv_cell(str(c)) for c in out.columns]
    return out.to_csv(index=False, lineterminator="\r\n")


@click.command("trace")
@click.argument("trace_id")
@click.argument("sources", nargs=-1)
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="table: the span tree on the terminal; json: the tree as nested objects.")
@click.option("--roles", is_flag=True,
              help="Per span, its role and what it rests on (dialect, evidence, logical call, run) instead of the "
                   "figures.")
@selection_options
def trace_cmd(trace_id: str, sources: tuple[str, ...], fmt: str, roles: bool, selection: Selection) -> None:
    """One trace as a tree: per span its role, start and duration in ms, tokens, cost and error."""
    from ..analysis.explorer.trace_tree import find_trace, typed_prefix
    from ..analysis.load.sources import printable_source
    from ..analysis.otlp.ids import trace_id_of
    from ..analysis.report.view import trace_view
    if not sources:
        raise InputError("name the traces file, folder or Jaeger URL that holds the trace")
    if trace_id_of(trace_id) is None and typed_prefix(trace_id) is None:
        trace_id = _trace_of_run(trace_id, sources)
    found = find_trace(trace_id, sources)
    if len(found.matches) > 1:
        _list_matches(found)
        raise InputError(f"{trace_id!r} starts {len(found.matches):,} trace ids (listed on standard output): give "
                         "more of its digits")
    if not found.matches:
        lost = found.spanset.quality.losses()   # its spans may be among those dropped: say so, not just "not in"
        raise InputError(f"trace {trace_id} is not in {', '.join(printable_source(s) for s in sources)}"
                         + (f", or its spans were among those dropped ({lost}; agentobs report lists them)"
                            if lost else ""))
    wanted = found.matches[0]
    if selection:
        from ..analysis.select.prune import trace_selected
        if not trace_selected(found.spanset, wanted, selection):
            raise InputError(f"trace {wanted} holds no run that matches the selection ({selection.describe()})")
    tree = found.tree(wanted, evidence=roles or fmt == "json")     # (the evidence is shown only there)
    if fmt == "json":
        from .trace_json import trace_json
        for piece in trace_json(tree, wanted):
            click.echo(piece, nl=False)
        return
    from .terminal import print_trace
    print_trace(trace_view(tree, wanted, roles=roles))
    base = link_base(None)
    if base:
        say(f"Jaeger: {base}/trace/{wanted}")


def _trace_of_run(run: str, sources: tuple[str, ...]) -> str:
    """The trace of the run ``run`` names (a run, task or conversation id: the report's examples), said on standard
    error; a name of several runs lists them."""
    from ..analysis.explorer.trace_tree import traces_of_run
    from ..analysis.load.sources import printable_source
    runs = traces_of_run(run, sources)
    if not runs:
        raise InputError(f"{run!r} is neither a trace id (its 32 hex digits, the first of them, or the base64 that "
                         f"protobuf's JSON writes) nor a run, task or conversation id in "
                         f"{', '.join(printable_source(s) for s in sources)}")
    if len(runs) > 1:
        for r, ids in runs.items():
            click.echo(f"{clean(r)}  {' '.join(ids)}")
        raise InputError(f"{run!r} names {len(runs):,} runs (listed on standard output with their traces): give "
                         "one's run id or trace id")
    (r, ids), = runs.items()
    more = f" (and {', '.join(ids[1:])}, its later segments: agentobs trace ID shows each)" if len(ids) > 1 else ""
    click.echo(f"agentobs: run {clean(r)}: trace {ids[0]}{more}", err=True)
    return ids[0]


def _list_matches(found: Any) -> None:
    """The traces an ambiguous prefix starts, one line each: id, spans, first start, root span."""
    table = found.listing()
    for r in table.itertuples(index=False):
        start = "" if r.start is None or r.start != r.start else r.start.isoformat(timespec="seconds")
        click.echo(clean(f"{r.trace_id}  {r.spans:,} spans  {start}  {'' if r.root is None else r.root}".rstrip()))
    if len(found.matches) > len(table):
        click.echo(f"... and {len(found.matches) - len(table):,} more")
