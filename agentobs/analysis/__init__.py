"""Analysis of agent runs: DataFrame in, DataFrame or dataclass out.

    analyze(sources) -> Report          the whole pipeline (files, folders, globs, Jaeger URLs, transcripts)
    load_sources(sources) -> SpanSet    spans, events, links and data quality
    derive_runs(spanset) -> (runs, spans, derivation)
    classify(runs) -> runs with signatures
    recommend_all(runs) -> [CapRecommendation]

The names are imported on first use (PEP 562), as the top-level package's are: ``python -m
agentobs.analysis.spans.schema`` runs that module without having imported it first as a part of the package (which
made runpy warn), and importing one module of the analysis loads only what it needs.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .assess.limits import DIMENSIONS, CapRecommendation, percentiles, recommend, recommend_all
    from .assess.signatures import CATALOG, classify
    from .derive.runs import derive_runs
    from .load.sources import load_sources
    from .otlp.load import load_file
    from .report.engine import analyze
    from .report.local import analyze_spans
    from .report.summary import Options, Report
    from .spans.quality import DataQuality
    from .spans.spanset import SpanSet

__all__ = ["CATALOG", "CapRecommendation", "DIMENSIONS", "DataQuality", "Options", "Report", "SpanSet", "analyze",
           "analyze_spans", "classify", "derive_runs", "load_file", "load_sources", "percentiles", "recommend",
           "recommend_all"]

# where each public name lives
_LAZY: dict[str, str] = {
    "DIMENSIONS": "assess.limits", "CapRecommendation": "assess.limits", "percentiles": "assess.limits",
    "recommend": "assess.limits", "recommend_all": "assess.limits", "CATALOG": "assess.signatures",
    "classify": "assess.signatures", "derive_runs": "derive.runs", "load_sources": "load.sources",
    "load_file": "otlp.load", "analyze": "report.engine", "analyze_spans": "report.local", "Options": "report.summary",
    "Report": "report.summary", "DataQuality": "spans.quality", "SpanSet": "spans.spanset",
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
