"""The engine choice: ``analyze`` gives the report on SOURCES from the local engine (``local``) or the Dask engine
(``dask``), the same report either way."""
from __future__ import annotations

from collections.abc import Callable, Iterable

from ...errors import ConfigError
from ..load.sources import load_sources
from .local import analyze_spans
from .summary import Options, Report


def analyze(sources: Iterable[str], options: Options | None = None,
            progress: Callable[[int], None] | None = None, *, engine: str = "local",
            scheduler: str | None = None) -> Report:
    """The report on SOURCES. ``engine="local"`` (the default) loads every span in this process;
    ``engine="dask"`` spreads the work over a Dask cluster (``scheduler``, else ``DASK_SCHEDULER_ADDRESS``, else a
    local cluster sized to the machine) and gives the same report (``agentobs.analysis.report.dask``)."""
    sources = list(sources)
    if engine == "dask":
        from .dask import analyze_dask

        return analyze_dask(sources, options, scheduler=scheduler, progress=progress)
    if engine != "local":
        raise ConfigError(f"engine {engine!r}: use 'local' or 'dask'")
    ss = load_sources(sources, progress, selection=(options or Options()).selection)
    return analyze_spans(ss, options, sources)


__all__ = ["analyze"]
