"""``agentobs watch``: parse, run the watch loop, print each event as it happens. Ctrl-C (or SIGTERM) stops it."""
from __future__ import annotations

import signal
import sys
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import click

from ..errors import InputError
from .reading import selection_options
from .render import json_text
from .safe_text import clean

if TYPE_CHECKING:
    from ..analysis.select.selection import Selection


class _Stop(Exception):
    """SIGTERM: stop as Ctrl-C does."""


def _on_term(signum: int, frame: FrameType | None) -> None:
    raise _Stop


@click.command("watch")
@click.argument("source")
@click.option("--caps", "caps_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="The caps: a file written by `agentobs caps ... --emit budget` (or its --format json, or "
                   "`agentobs caps --format json`).")
@click.option("--caps-from", "caps_from", multiple=True, metavar="SOURCE",
              help="Compute the caps from these traces instead, as `agentobs caps SOURCE --emit budget` would "
                   "(repeatable).")
@click.option("--max-wall-s", type=float, default=None, metavar="SECONDS",
              help="Also report runs whose first span start to last span end passes this many seconds.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="table: a line per event; json: a JSON object per line (and a summary object at the end).")
@click.option("--fail-fast", is_flag=True, help="Exit with status 1 at the first event.")
@click.option("--idle", default="10m", show_default=True, metavar="DURATION",
              help="A run none of whose spans arrived for this long counts as finished (its process died, or its "
                   "root span was lost) and is let go.")
@click.option("--from", "start", type=click.Choice(["end", "start"]), default=None,
              help="A file: follow what is appended from now on (end), or read what it holds first (start).  "
                   "[default: end; start with --once]")
@click.option("--lookback", default="15m", show_default=True, metavar="DURATION",
              help="Jaeger: find the traces with a span started this far back (longer than the longest wait "
                   "between two spans of a run).")
@click.option("--interval", default=None, metavar="DURATION",
              help="Time between two polls (default: 0.2s for a file, 2s for Jaeger).")
@click.option("--once", is_flag=True, help="Read what the source holds now, report, and exit (no following).")
@selection_options
def watch_cmd(*, source: str, caps_file: Path | None, caps_from: tuple[str, ...], max_wall_s: float | None,
              fmt: str, fail_fast: bool, idle: str, start: str | None, lookback: str, interval: str | None,
              once: bool, selection: Selection) -> None:
    """Report each run that crosses a cap while it runs, from a growing traces file or Jaeger (Ctrl-C stops)."""
    from ..analysis.watch import Settings, Watcher, open_source, resolve_caps, seconds, watch
    caps = resolve_caps(str(caps_file) if caps_file else None, caps_from, max_wall_s)
    if once and start == "end":
        raise InputError("--once --from end reads nothing: --once reads what the source holds now (--from start)")
    src = open_source(source, from_start=start == "start" or (start is None and once),
                      lookback_s=seconds(lookback, "--lookback"))
    settings = Settings(interval_s=seconds(interval, "--interval") if interval else src.interval_s,
                        idle_s=seconds(idle, "--idle"), once=once)
    watcher = Watcher(caps, idle_s=settings.idle_s, done_s=seconds(lookback, "--lookback") + 60 if src.replace
                      else 0.0, selection=selection)
    click.echo(f"agentobs: watching {clean(src.name)} for runs past " + ", ".join(c.describe() for c in caps)
               + (f"; only runs selected by {selection.describe()}" if selection else "")
               + (" (Ctrl-C stops)" if not once else ""), err=True)
    previous = signal.signal(signal.SIGTERM, _on_term)
    failed = False
    try:
        for event in watch(src, watcher, settings):
            click.echo(json_text(event.to_dict()) if fmt == "json" else clean(event.line(), None))
            sys.stdout.flush()
            if fail_fast:
                failed = True
                break
    except (KeyboardInterrupt, _Stop):
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        src.close()
    stats = watcher.stats
    if fmt == "json":
        click.echo(json_text(stats.to_dict()))
    click.echo(f"agentobs: {clean(stats.line(), None)}", err=True)
    if failed:
        sys.exit(1)
