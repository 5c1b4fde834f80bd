"""``agentobs view SOURCES``: the run explorer served from 127.0.0.1 until Ctrl-C."""
from __future__ import annotations

import signal
from pathlib import Path
from typing import TYPE_CHECKING

import click

from .reading import (
    JAEGER_URL,
    SEGMENTS,
    caps_options,
    resolve_options,
    run_analysis,
    say_selection,
    selection_options,
    success_options,
)
from .render import say

if TYPE_CHECKING:
    from ..analysis.select.selection import Selection


@click.command("view")
@click.argument("sources", nargs=-1)
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Port on 127.0.0.1 (0: a free one).")
@selection_options
@success_options
@caps_options
@SEGMENTS
@JAEGER_URL
def view_cmd(*, sources: tuple[str, ...], port: int, labels: tuple[Path, ...], success_attr: str | None, target: float,
             margin: float, segments: tuple[str, ...], jaeger_url: str | None,
             selection: Selection) -> None:
    """The run explorer in the browser, served from 127.0.0.1 for runs in SOURCES (Ctrl-C stops it)."""
    from ..analysis.explorer import server
    from ..analysis.explorer.html import _href, page
    from ..analysis.explorer.model import build
    opt = resolve_options(labels, success_attr, target=target, margin=margin, segments=segments, jaeger=jaeger_url,
                   selection=selection)
    report = run_analysis(sources, opt, say_labels=True)
    say_selection(report)
    x = build(report, mode="served", jaeger=_href(report.options.jaeger_url))
    srv = server.ExplorerServer(x, page(x), port)
    say(f"Explorer: {srv.url} ({len(report.runs):,} runs, {int(report.overview['spans']):,} spans; Ctrl-C stops it)")
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)       # a second Ctrl-C while closing: closing already
    finally:
        srv.server_close()
    say("Explorer stopped.")
