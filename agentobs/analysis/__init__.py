"""Analysis of agent runs: DataFrame in, DataFrame or dataclass out.

    analyze(sources) -> Report          the whole pipeline (files, folders, globs, Jaeger URLs, transcripts)
    load_sources(sources) -> SpanSet    spans, events, links and data quality
    derive_runs(spanset) -> (runs, spans, derivation)
    classify(runs) -> runs with signatures
    recommend_all(runs) -> [CapRecommendation]

The names are imported on first use (PEP 562), as the top-level package's are: ``python -m
agentobs.analysis.schema`` runs that module without having imported it first as a part of the package (which
made runpy warn), and importing one module of the analysis loads only what it needs.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .limits import DIMENSIONS, CapRecommendation, percentiles, recommend, recommend_all
    from .otlp import SpanSet, load_file
    from .quality import DataQuality
    from .report import Options, Report, analyze, analyze_spans
    from .runs import derive_runs
    from .signatures import CATALOG, classify
    from .sources import load_sources

__all__ = ["CATALOG", "CapRecommendation", "DIMENSIONS", "DataQuality", "Options", "Report", "SpanSet", "analyze",
           "analyze_spans", "classify", "derive_runs", "load_file", "load_sources", "percentiles", "recommend",
           "recommend_all"]

# where each public name lives
_LAZY: dict[str, str] = {
    "DIMENSIONS": "limits", "CapRecommendation": "limits", "percentiles": "limits", "recommend": "limits",
    "recommend_all": "limits", "SpanSet": "otlp", "load_file": "otlp", "DataQuality": "quality", "Options": "report",
    "Report": "report", "analyze": "report", "analyze_spans": "report", "derive_runs": "runs", "CATALOG": "signatures",
    "classify": "signatures", "load_sources": "sources",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agentobs.analysis' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value              # the next lookup is a plain global
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
