"""The span model: what every reader produces and every later step reads.

    spanset.py      ``SpanSet``: spans, events, links (DataFrames), their ``DataQuality``, what a selection read
    schema.py       the declared frame schemas (``python -m agentobs.analysis.spans.schema`` prints the runs table's)
    quality.py      ``DataQuality``: what was wrong with the input, counted by kind and source
    attrs.py        span attributes named on the command line, compared in their own type
    graph.py        the span tree as integer keys: parents, roots, cycles
    checks.py       the span checks every source's spans go through once (``check``), the Dask partitions too
    dialects/       how each instrumentation spells a span's role and values, behind one registry

Imports only ``input`` (times as shown).
"""
