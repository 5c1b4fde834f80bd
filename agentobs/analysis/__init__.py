"""Analysis of agent runs: DataFrame in, DataFrame or dataclass out.

    analyze(sources) -> Report          the whole pipeline (files, folders, globs, Jaeger URLs, transcripts)
    load_sources(sources) -> SpanSet    spans, events, links and data quality
    derive_runs(spanset) -> (runs, spans, derivation)
    classify(runs) -> runs with signatures
    recommend_all(runs) -> [CapRecommendation]
"""
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
