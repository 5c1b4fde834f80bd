"""What ``agentobs watch`` reads: a growing OTLP JSON lines file (a folder, a glob), or Jaeger polled.

Each source's ``poll()`` gives a ``Batch`` (possibly of no span) and never blocks for long. A Jaeger source asks
API v3 for the traces of its services whose spans started in a moving window (``lookback`` back from now: a run is
found while some span of it started in the window, and each answer holds every span of those traces that Jaeger
stores so far). A poll that fails after the first one is counted and the watch goes on (Jaeger restarting); the
first one failing is the user's to fix (a wrong URL).
"""
from __future__ import annotations

import dataclasses
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol

import pandas as pd

from ...errors import InputError
from ..input.limits import InputLimits
from ..jaeger.query import fetch, is_jaeger_url, parse_url
from ..load.sources import printable_source
from ..otlp.load import load_bytes
from ..spans.quality import DataQuality
from ..spans.spanset import SpanSet
from .follow import Follower
from .inflight import Batch


class Source(Protocol):
    name: str
    replace: bool               # each batch holds whole traces, replacing what is held of them
    interval_s: float           # the time between two polls, by default

    def poll(self) -> Batch: ...

    def close(self) -> None: ...


class FileSource:
    replace = False
    interval_s = 0.2

    def __init__(self, source: str, *, from_start: bool = False):
        self.name = source
        limits = InputLimits.resolve()
        self.follower = Follower(source, from_start=from_start, max_line=limits.max_line_bytes)

    def poll(self) -> Batch:
        data = self.follower.read()
        arrived = time.time()
        q = DataQuality()
        if self.follower.long_lines:
            q.add("line_too_long", self.name, self.follower.long_lines)
            self.follower.long_lines = 0
        if not data:
            return Batch(spans=SpanSet(quality=q), arrived=arrived)
        ss = load_bytes(data, self.name, q)
        return Batch(spans=ss, arrived=arrived)

    def close(self) -> None:
        self.follower.close()


class JaegerPoller:
    replace = True
    interval_s = 2.0

    def __init__(self, url: str, *, lookback_s: float = 900.0):
        self.name = printable_source(url)
        self.source = parse_url(url)
        self.lookback = timedelta(seconds=lookback_s)
        self.polls = 0
        self.failures = 0
        self.last_failure: str | None = None

    def poll(self) -> Batch:
        now = datetime.now(UTC)
        src = dataclasses.replace(self.source, start=now - self.lookback, end=now + timedelta(seconds=1))
        try:
            ss = fetch(src)
        except InputError as exc:
            if not self.polls:
                raise
            self.failures += 1
            self.last_failure = str(exc)
            return Batch(spans=SpanSet(), arrived=time.time(), replace=True)
        finally:
            self.polls += 1
        _named(ss, self.name)         # one name for every poll (the window in the label moves)
        return Batch(spans=ss, arrived=time.time(), replace=True)

    def close(self) -> None:
        pass


def _named(ss: SpanSet, name: str) -> None:
    if len(ss.spans) and "source" in ss.spans.columns:
        ss.spans["source"] = pd.Categorical([name] * len(ss.spans))
    ss.sources = [name]


def open_source(source: str, *, from_start: bool = False, lookback_s: float = 900.0) -> Source:
    if is_jaeger_url(source):
        return JaegerPoller(source, lookback_s=lookback_s)
    return FileSource(source, from_start=from_start)
