"""``agentobs report | caps | runs | trace``: parse, call the analysis, render.

The analysis (pandas, pyarrow) is imported when a command runs, not when its ``--help`` is shown.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..errors import InputError
from .common import DEFAULT_OUT, jaeger_url
from .outputs import refuse_overlap
from .render import errors, json_text, on_terminal, say, write_text
from .safe_text import clean, csv_cell, http_url

if TYPE_CHECKING:
    import pandas as pd

    from ..analysis.report.summary import Options, Report
    from ..analysis.select.selection import Selection

# agentobs.analysis.emit.config.KINDS (a test keeps them equal)
EMIT_KINDS = ("budget", "pydantic-ai", "openai-agents", "prometheus-rules")

LARGE_INPUT = 20 * 1024 * 1024
DEFAULT_HTML = DEFAULT_OUT / "report.html"


def _with_progress(sources: tuple[str, ...], fn: Callable[[Callable[[int], None] | None], Any],
                   passes: int = 1) -> Any:
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    from ..analysis.load.sources import total_bytes
    if not on_terminal(errors):                 # a bar goes to standard error, and only to a terminal
        return fn(None)
    size = total_bytes(sources) * passes
    if size < LARGE_INPUT:
        return fn(None)
    with Progress(TextColumn("loading"), BarColumn(), DownloadColumn(), TimeRemainingColumn(), console=errors,
                  transient=True) as bar:
        task = bar.add_task("load", total=size)
        return fn(lambda n: bar.advance(task, n))


def _options(labels: Path | tuple[Path, ...] | None, success_attr: str | None, *, target: float, margin: float,
             segments: tuple[str, ...], jaeger: str | None, selection: Selection | None = None) -> Options:
    from ..analysis.report.summary import Options
    from ..analysis.select.selection import Selection
    attr = None
    if success_attr is not None:
        if "=" not in success_attr or not success_attr.split("=", 1)[0].strip():
            raise InputError(f"--success-attr {success_attr!r}: use KEY=VALUE, e.g. eval.passed=true")
        k, v = success_attr.split("=", 1)
        attr = (k.strip(), v.strip())
    files = () if labels is None else (labels,) if isinstance(labels, Path) else labels
    return Options(target=target, margin=margin, segments=("agent", "model", *segments),
                   labels=tuple(str(p) for p in files), success_attr=attr, jaeger_url=_link_base(jaeger),
                   selection=selection or Selection())


def _link_base(explicit: str | None) -> str | None:
    """The Jaeger UI base for links: only an http or https URL; anything else makes no links."""
    given = explicit or jaeger_url()
    base = http_url(given)
    if given and base is None:
        click.echo("agentobs: warning: the Jaeger URL is not an http:// or https:// URL; no links to Jaeger",
                   err=True)
    return base


def _run(sources: tuple[str, ...], opt: Options, engine: str = "local", scheduler: str | None = None, *,
         say_labels: bool = False, out: Path | None = None) -> Report:
    from ..analysis.load.sources import expand, printable_source
    from ..analysis.report.engine import analyze
    if not sources:
        raise InputError("name at least one source: a traces file, a folder, a glob or a Jaeger URL")
    if scheduler and engine != "dask":
        raise InputError("--scheduler names a Dask scheduler: add --engine dask")
    paths = expand(sources)          # fail early, with one line, on a missing path
    if out is not None:
        labels = [("the labels file", p) for p in opt.labels_files]
        refuse_overlap("out", out, [*labels, *(("one of the inputs", p) for p in paths)])
    report = _with_progress(sources, lambda progress: analyze(sources, opt, progress, engine=engine,
                                                              scheduler=scheduler),
                            passes=2 if engine == "dask" else 1)     # dask: the scan, then the partitions
    if say_labels and opt.labels_files and not report.runs.empty:    # (report shows them in its data quality)
        from ..analysis.spans.quality import LABEL_KINDS
        said = report.quality.summary_of(LABEL_KINDS)
        if said:
            click.echo(f"agentobs: warning: labels: {clean(said)} (agentobs report lists each)", err=True)
    if report.runs.empty and opt.selection:
        read = f": {report.read.said()}" if report.read is not None else ""
        raise InputError(f"no run in {', '.join(printable_source(s) for s in sources)} matches the selection "
                         f"({opt.selection.describe()}){read}")
    if report.runs.empty:
        spans = int(report.overview.get("spans", 0))
        names: dict[str, int] = {}
        for c in report.derivation.roles.values():
            for n, k in c.top():
                names[n] = names.get(n, 0) + k
        common = ", ".join(f"{n!r} ({k:,})" for n, k in sorted(names.items(), key=lambda kv: -kv[1])[:3])
        why = report.quality.summary() if not spans else (
            f"{spans:,} span{'s' if spans > 1 else ''} read, and none looks like a model call (a model id with token "
            "usage), a tool call or an agent, in any dialect agentobs reads or by structure"
            + (f"; the most common span names: {common}" if common else "")
            + (f"; {report.quality.summary()}" if report.quality.issues else ""))
        raise InputError(f"no usable run in {', '.join(printable_source(s) for s in sources)}: {why}")
    return report


def selection_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--since``, ``--until``, ``--service``, ``--agent``, ``--model`` and ``--where``, handed to the command as one
    ``selection`` (``analysis.select.Selection``), resolved when the command runs."""
    @functools.wraps(fn)
    def wrapper(*args: Any, since: str | None, until: str | None, service: tuple[str, ...], agent: tuple[str, ...],
                model: tuple[str, ...], where: tuple[str, ...], **kwargs: Any) -> Any:
        from ..analysis.select.selection import Selection
        return fn(*args, selection=Selection.resolve(since=since, until=until, services=service, agents=agent,
                                                     models=model, where=where), **kwargs)
    for decorate in reversed(SELECTION_OPTIONS):
        wrapper = decorate(wrapper)
    return wrapper


SELECTION_OPTIONS = (
    click.option("--since", default=None, metavar="TIME",
                 help="Only runs that start at or after TIME: 2h, 7d, 30m back from now, or an ISO 8601 time "
                      "(2026-12-05T10:00Z)."),
    click.option("--until", default=None, metavar="TIME", help="Only runs that start before TIME (as --since)."),
    click.option("--service", multiple=True, metavar="NAME",
                 help="Only runs of this service.name (repeatable: any of them; * ? [] are wildcards)."),
    click.option("--agent", multiple=True, metavar="NAME", help="Only runs of this agent (as --service)."),
    click.option("--model", multiple=True, metavar="NAME", help="Only runs of this model (as --service)."),
    click.option("--where", multiple=True, metavar="KEY=VALUE",
                 help="Only runs whose root span or a model or tool call carries this attribute value (repeatable: "
                      "all of them)."),
)


def common(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The options of ``report`` and ``caps``: the sources' options and those of percentiles and caps."""
    fn = click.option("--target", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.01,
                      show_default=True, help="Largest share of successful runs a recommended cap may cut off.")(fn)
    fn = click.option("--margin", type=click.FloatRange(0, 10), default=0.10, show_default=True,
                      help="Margin added to the smallest cap within the target (0.1 = 10%).")(fn)
    fn = click.option("--segment", "segments", multiple=True, metavar="ATTR",
                      help="Also give percentiles per value of this run column or root-span attribute.")(fn)
    fn = click.option("--jaeger-url", default=None,
                      help="Jaeger UI base URL for links (default AGENTOBS_JAEGER_URL).")(fn)
    return reading(fn)


def reading(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The options every command that reads runs takes: the selection, labels, the engine, the sources."""
    fn = selection_options(fn)
    fn = click.option("--labels", type=click.Path(exists=True, dir_okay=False, path_type=Path), multiple=True,
                      help="CSV or JSON of run_id,success; ids match trace, conversation or task ids (repeatable: "
                           "each file labels the runs its ids match).")(fn)
    fn = click.option("--success-attr", default=None, metavar="KEY=VALUE",
                      help="A run succeeded when its root span has this attribute value.")(fn)
    fn = click.option("--engine", type=click.Choice(["local", "dask"]), default="local", show_default=True,
                      help="local: pandas in this process; dask: a Dask cluster (the same report), needs "
                           "agentobs[dask].")(fn)
    fn = click.option("--scheduler", default=None, metavar="ADDRESS",
                      help="With --engine dask: an existing scheduler (default DASK_SCHEDULER_ADDRESS, else a local "
                           "cluster sized to this machine).")(fn)
    return click.argument("sources", nargs=-1)(fn)


STDOUT = "-"             # --out -: standard output


def _to_stdout(out: Path | None) -> bool:
    return out is not None and str(out) == STDOUT


def _wrote(what: str, out: Path) -> None:
    """Says where the output went: on standard error when it went to standard output."""
    if _to_stdout(out):
        click.echo(f"agentobs: {clean(what)}: standard output", err=True)
    else:
        say(f"{what}: {out}")


def say_selection(r: Report) -> None:
    """One line naming the selection a report is on, and what the loading kept (the tables do not say it)."""
    sel = r.options.selection
    if not sel:
        return
    kept = f" ({r.read.kept:,} of {r.read.traces:,} traces read kept)" if r.read is not None else ""
    say(f"Selection: {sel.describe()}{kept}")


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
@common
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
    opt = _options(labels, success_attr, target=target, margin=margin, segments=segments, jaeger=jaeger_url,
                   selection=selection)
    r = _run(sources, opt, engine, scheduler, out=out)
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
@common
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
             margin: float, segments: tuple[str, ...], jaeger_url: str | None, engine: str, scheduler: str | None,
             fmt: str, emit_as: str | None, alert_window: str, alert_for: str, out: Path | None,
             selection: Selection) -> None:
    """Recommended budget caps from the successful runs in SOURCES, with the share each candidate cuts off."""
    opt = _options(labels, success_attr, target=target, margin=margin, segments=segments, jaeger=jaeger_url,
                   selection=selection)
    r = _run(sources, opt, engine, scheduler, say_labels=True, out=out)
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
@reading
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
    opt = _options(labels, success_attr, target=0.01, margin=0.10, segments=(), jaeger=None,
                   selection=selection)
    r = _run(sources, opt, engine, scheduler, say_labels=True, out=out)
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
            _wrote(f"{len(df)} runs", out)
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
        raise InputError(f"{trace_id!r} is not a trace id: give its 32 hex digits, the first of them (a unique "
                         "prefix), or the base64 that protobuf's JSON writes")
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
            raise InputError(f"trace {trace_id} holds no run that matches the selection ({selection.describe()})")
    tree = found.tree(wanted, evidence=roles or fmt == "json")     # (the evidence is shown only there)
    if fmt == "json":
        from .trace_json import trace_json
        for piece in trace_json(tree, wanted):
            click.echo(piece, nl=False)
        return
    from .terminal import print_trace
    print_trace(trace_view(tree, wanted, roles=roles))
    base = _link_base(None)
    if base:
        say(f"Jaeger: {base}/trace/{wanted}")


def _list_matches(found: Any) -> None:
    """The traces an ambiguous prefix starts, one line each: id, spans, first start, root span."""
    table = found.listing()
    for r in table.itertuples(index=False):
        start = "" if r.start is None or r.start != r.start else r.start.isoformat(timespec="seconds")
        click.echo(clean(f"{r.trace_id}  {r.spans:,} spans  {start}  {'' if r.root is None else r.root}".rstrip()))
    if len(found.matches) > len(table):
        click.echo(f"... and {len(found.matches) - len(table):,} more")
