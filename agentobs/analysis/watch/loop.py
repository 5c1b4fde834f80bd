"""The watch loop: poll the source, check the runs in flight, let finished and idle ones go, yield the events."""
from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from ...errors import InputError
from .caps import Cap, caps_of, read_caps, wall_cap
from .events import Event
from .inflight import Watcher
from .sources import Source

_DURATION = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*(ms|s|m|h|d)?")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}


def seconds(text: str, what: str) -> float:
    """``30s``, ``10m``, ``2h``, ``1d``, ``250ms`` or a plain number of seconds."""
    m = _DURATION.fullmatch(text.strip())
    if not m or not float(m[1]) > 0:
        raise InputError(f"{what} {text!r}: give a positive duration such as 30s, 10m or 2h")
    return float(m[1]) * _UNITS[m[2]]


@dataclass(frozen=True, kw_only=True)
class Settings:
    interval_s: float
    idle_s: float = 600.0
    once: bool = False              # read what the source holds now, then stop


def resolve_caps(caps_file: str | None, caps_from: Sequence[str], max_wall_s: float | None) -> list[Cap]:
    """The caps to watch: a caps file, or those ``agentobs caps CAPS_FROM --emit budget`` would write, and the
    wall-time cap."""
    if caps_file and caps_from:
        raise InputError("give --caps FILE or --caps-from SOURCE, not both")
    caps: list[Cap] = []
    if caps_file:
        caps = read_caps(caps_file)
    elif caps_from:
        caps = _computed(caps_from)
    if max_wall_s is not None:
        caps.append(wall_cap(max_wall_s))
    if not caps:
        raise InputError("nothing to watch for: give --caps FILE (agentobs caps SOURCE --emit budget > caps.py), "
                         "--caps-from SOURCE or --max-wall-s")
    return caps


def _computed(sources: Sequence[str]) -> list[Cap]:
    from ..emit.config import reserve_usd
    from ..load.sources import printable_source
    from ..report.engine import analyze
    report = analyze(list(sources))
    if report.runs.empty:
        named = ", ".join(printable_source(s) for s in sources)
        raise InputError(f"--caps-from {named}: no usable run to compute caps from")
    caps = caps_of(report.caps, reserve_usd(report.runs))
    if not caps:
        named = ", ".join(printable_source(s) for s in sources)
        raise InputError(f"--caps-from {named}: no cap could be recommended (no "
                         "successful run?)")
    return caps


def watch(source: Source, watcher: Watcher, settings: Settings,
          sleep: Callable[[float], None] = time.sleep) -> Iterator[Event]:
    """The events, as their runs cross their caps. Ends with ``once`` when the source has nothing more; otherwise
    when the caller stops iterating (Ctrl-C)."""
    while True:
        started = time.monotonic()
        batch = source.poll()
        yield from watcher.ingest(batch)
        watcher.expire()
        got = not batch.spans.spans.empty or bool(batch.spans.quality.issues)
        if settings.once and (source.replace or not got):
            return
        if got and not source.replace:
            continue                    # more may be waiting: read on before sleeping
        sleep(max(0.0, settings.interval_s - (time.monotonic() - started)))
