"""``agentobs watch``: runs in flight checked against their caps while they run.

    open_source(SOURCE) -> Source          a growing OTLP JSON lines file (folder, glob, rotation) or Jaeger polled
    resolve_caps(...) -> [Cap]              from a caps file, or computed from another source
    Watcher(caps)                           the runs in flight; ingest(batch) -> [Event]
    watch(source, watcher, settings)        the loop: the events as they happen
"""
from .caps import Cap, read_caps
from .events import Event, Stats
from .inflight import Batch, Watcher
from .loop import Settings, resolve_caps, seconds, watch
from .sources import FileSource, JaegerPoller, Source, open_source

__all__ = ["Batch", "Cap", "Event", "FileSource", "JaegerPoller", "Settings", "Source", "Stats", "Watcher",
           "open_source", "read_caps", "resolve_caps", "seconds", "watch"]
