"""What a user names, resolved into one SpanSet: ``sources.load_sources(SOURCES)``.

    sources.py   files, folders, globs, object-store URLs, Jaeger URLs, standard input and pipes; each file sniffed
                 (OTLP JSON, another trace format, a transcript) and read by its reader; the span checks applied;
                 ``printable_source``: how a source is shown in messages and reports

Imports every reader (``otlp``, ``formats``, ``jaeger``), ``select`` and what they stand on.
"""
