"""What every command that reads runs takes, resolved in one place: the sources and the selection, what decides
success (labels, a root-span attribute), the caps' target and margin, segments and Jaeger links, as click options
declared once (``source_options``, ``report_options``, ``success_options``, ``caps_options``), turned into one
analysis ``Options`` (``resolve_options``); and the analysis run on the sources with a progress bar and one clear
line when nothing usable is in them (``run_analysis``).

The analysis (pandas, pyarrow) is imported when a command runs, not when its ``--help`` is shown.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..errors import InputError
from .common import jaeger_url
from .outputs import refuse_overlap
from .render import errors, on_terminal, say
from .safe_text import clean, http_url

if TYPE_CHECKING:
    from ..analysis.report.summary import Options, Report
    from ..analysis.select.selection import Selection

LARGE_INPUT = 20 * 1024 * 1024


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


def resolve_options(labels: Path | tuple[Path, ...] | None, success_attr: str | None, *, target: float, margin: float,
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
                   labels=tuple(str(p) for p in files), success_attr=attr, jaeger_url=link_base(jaeger),
                   selection=selection or Selection())


def link_base(explicit: str | None) -> str | None:
    """The Jaeger UI base for links: only an http or https URL; anything else makes no links."""
    given = explicit or jaeger_url()
    base = http_url(given)
    if given and base is None:
        click.echo("agentobs: warning: the Jaeger URL is not an http:// or https:// URL; no links to Jaeger",
                   err=True)
    return base


def run_analysis(sources: tuple[str, ...], opt: Options, engine: str = "local", scheduler: str | None = None, *,
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
    return _apply(wrapper, *SELECTION_OPTIONS)


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


# the options of what a run's success is, and of the caps (``report``, ``caps``, ``runs``, ``view``, ``diff``)
LABELS = click.option("--labels", type=click.Path(exists=True, dir_okay=False, path_type=Path), multiple=True,
                      help="CSV or JSON of run_id,success; ids match trace, conversation or task ids (repeatable: "
                           "each file labels the runs its ids match).")
SUCCESS_ATTR = click.option("--success-attr", default=None, metavar="KEY=VALUE",
                            help="A run succeeded when its root span has this attribute value.")
TARGET = click.option("--target", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.01,
                      show_default=True, help="Largest share of successful runs a recommended cap may cut off.")
MARGIN = click.option("--margin", type=click.FloatRange(0, 10), default=0.10, show_default=True,
                      help="Margin added to the smallest cap within the target (0.1 = 10%).")
SEGMENTS = click.option("--segment", "segments", multiple=True, metavar="ATTR",
                        help="Also give percentiles per value of this run column or root-span attribute.")
JAEGER_URL = click.option("--jaeger-url", default=None, help="Jaeger UI base URL for links (default "
                                                             "AGENTOBS_JAEGER_URL).")


def _apply(fn: Callable[..., Any], *options: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with ``options``, listed in ``--help`` in the order given."""
    for decorate in reversed(options):
        fn = decorate(fn)
    return fn


def success_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--labels`` and ``--success-attr``: what decides a run's success where the spans do not."""
    return _apply(fn, LABELS, SUCCESS_ATTR)


def caps_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--target`` and ``--margin`` of the recommended caps."""
    return _apply(fn, TARGET, MARGIN)


def report_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The options of ``report`` and ``caps``: the sources' options and those of percentiles, caps and links."""
    return source_options(_apply(fn, TARGET, MARGIN, SEGMENTS, JAEGER_URL))


def source_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The options every command that reads runs takes: the selection, labels, the engine, the sources."""
    fn = _apply(fn, LABELS, SUCCESS_ATTR,
                click.option("--engine", type=click.Choice(["local", "dask"]), default="local", show_default=True,
                             help="local: pandas in this process; dask: a Dask cluster (the same report), needs "
                                  "agentobs[dask]."),
                click.option("--scheduler", default=None, metavar="ADDRESS",
                             help="With --engine dask: an existing scheduler (default DASK_SCHEDULER_ADDRESS, else a "
                                  "local cluster sized to this machine)."))
    return click.argument("sources", nargs=-1)(selection_options(fn))


def say_selection(r: Report) -> None:
    """One line naming the selection a report is on, and what the loading kept (the tables do not say it)."""
    sel = r.options.selection
    if not sel:
        return
    kept = f" ({r.read.kept:,} of {r.read.traces:,} traces read kept)" if r.read is not None else ""
    say(f"Selection: {sel.describe()}{kept}")


