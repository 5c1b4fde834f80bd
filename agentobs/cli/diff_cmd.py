"""``agentobs diff BEFORE [AFTER]``: two sources, or two windows of one, side by side (``analysis.compare``)."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..errors import InputError
from .common import DEFAULT_OUT
from .reading import SELECTION_OPTIONS, caps_options, resolve_options, run_analysis, success_options
from .render import json_text, say, table, write_text

if TYPE_CHECKING:
    from ..analysis.compare.comparison import Comparison

DEFAULT_HTML = DEFAULT_OUT / "diff.html"


def _side_options(fn: click.decorators.FC) -> click.decorators.FC:
    """``--since`` ... ``--where`` for both sides, and each of them for one side (``--before-since``, ...)."""
    for side in ("after", "before"):
        fn = click.option(f"--{side}-where", multiple=True, metavar="KEY=VALUE",
                          help=f"The {side} side's attributes (as --where), instead of --where.")(fn)
        for what in ("model", "agent", "service"):
            fn = click.option(f"--{side}-{what}", multiple=True, metavar="NAME",
                              help=f"The {side} side's {what}s (as --{what}), instead of --{what}.")(fn)
        fn = click.option(f"--{side}-until", default=None, metavar="TIME",
                          help=f"The {side} side: runs that start before TIME (as --until).")(fn)
        fn = click.option(f"--{side}-since", default=None, metavar="TIME",
                          help=f"The {side} side: runs that start at or after TIME (as --since).")(fn)
    for decorate in reversed(SELECTION_OPTIONS):
        fn = decorate(fn)
    return fn


@click.command("diff")
@click.argument("before")
@click.argument("after", required=False)
@_side_options
@success_options
@caps_options
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap resampling.")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "html"]), default=None,
              help="table (default), json or html; with --out and no --format: html for a .html/.htm file, else "
                   "the table on the terminal and JSON in the file.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the comparison here (html defaults to agentobs-out/diff.html).")
def diff_cmd(before: str, after: str | None, labels: tuple[Path, ...], success_attr: str | None, target: float,
             margin: float, seed: int, fmt: str | None, out: Path | None, **selection: Any) -> None:
    """Two sources, or two windows of one, side by side: what changed, and whether it is larger than chance."""
    # (``selection``: --since ... --where, and the same for each side, --before-since ... --after-where)
    from ..analysis.compare.comparison import SideOptions, compare, resolve_sides
    if fmt is None:
        fmt = "html" if out is not None and out.suffix.lower() in (".html", ".htm") else "table"
    if fmt == "html" and out is None:
        out = DEFAULT_HTML
    sides = [SideOptions(since=selection[f"{p}since"], until=selection[f"{p}until"],
                         services=selection[f"{p}service"], agents=selection[f"{p}agent"],
                         models=selection[f"{p}model"], where=selection[f"{p}where"])
             for p in ("", "before_", "after_")]
    sel_before, sel_after = resolve_sides(*sides, one_source=after is None)
    from ..analysis.load.sources import expand
    expand([before, *([after] if after else [])])          # a missing path: one line, before any reading
    reports = []
    for name, source, sel in (("before", before, sel_before), ("after", after or before, sel_after)):
        opt = resolve_options(labels, success_attr, target=target, margin=margin, segments=(), jaeger=None,
                       selection=sel)
        try:
            reports.append(run_analysis((source,), opt, out=out))
        except InputError as exc:
            raise InputError(f"the {name} side: {exc}") from None
    c = compare(reports[0], reports[1], seed=seed)
    if fmt == "json":
        text = json_text(c.to_dict(), indent=1)
        if out:
            write_text(out, text + "\n")
            say(f"Comparison (JSON): {out}")
        else:
            click.echo(text)
        return
    if fmt == "html":
        from ..analysis.compare import diff_html
        assert out is not None
        write_text(out, diff_html.render(c))
        say(f"Comparison (HTML): {out}")
        return
    print_diff(c)
    if out:
        write_text(out, json_text(c.to_dict(), indent=1) + "\n")
        say(f"JSON comparison: {out}")


def print_diff(c: Comparison) -> None:
    from ..analysis.compare.diff_view import COLUMNS, diff_view
    view = diff_view(c)
    for line in view.head:
        say(line)
    for t in view.tables:
        table(t.title, COLUMNS, t.rows)
    for line in view.notes:
        say(line)
    for line in view.warnings:
        say(("warning:", "yellow"), " ", line)
