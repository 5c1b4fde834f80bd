"""Jaeger's query API as a source: ``query.parse_url``, ``fetch``, ``fetch_trace``, ``fetch_linked``, ``redact``.

    query.py   Jaeger URLs (``http://host:16686?service=S&since=2h``), the queries, their answers as a SpanSet
    _http.py   the HTTP side: bounded GETs of JSON, one deadline for a whole query

Imports ``input``, ``spans`` and ``otlp``.
"""
