"""Trace files and what reads them: the ``Reader`` protocol and its closed, ordered list (``registry``), where a
file's first bytes decide its reader, and the formats other than OTLP JSON, converted to OTLP requests and read by
the OTLP loader (``convert``).

    registry.py         Reader, READERS, reader_for(head), reader_of(path): the one place formats are sniffed
    convert.py          a converted format or a compression loaded through the OTLP loader
    jaeger_ui.py        Jaeger's own JSON (UI download, API before v3)
    console.py          the OpenTelemetry Python SDK's ConsoleSpanExporter output
    zipkin.py           Zipkin JSON (API v2)
    collector_zstd.py   the collector's file exporter, compression: zstd
    collector_proto.py  the collector's file exporter, format: proto
    transcripts.py      chat transcripts (tau2-bench results, OpenAI-style runs) as spans
    _build.py           OTLP JSON built from plain values: what the converters emit

Imports ``input``, ``spans`` and ``otlp``.
"""
from __future__ import annotations

from .convert import CONVERTED
from .registry import READERS, Reader, reader_for, reader_of

__all__ = ["FORMAT_NAMES", "READERS", "Reader", "reader_for", "reader_of"]

# the names of the converted formats, as the report's "read" section lists them apart from OTLP spellings
FORMAT_NAMES: frozenset[str] = frozenset(f.NAME for f in CONVERTED)
