"""The OTLP JSON loader: ``load.load_file`` / ``load_bytes`` / ``load_request`` give a ``SpanSet``.

    load.py                     the entry points: sniff a file, read it ahead, decode each piece, one SpanSet
    batch.py                    a folder's many small files parsed and decoded in batches (also used by the Dask engine)
    ids.py                      trace and span ids in every spelling (hex, base64) to lower-case hex
    _ahead.py                   a reader thread and two parser threads ahead of the decoding
    _spelling.py                the OTLP JSON spellings (camel or snake case, enums as names or numbers, ...)
    _parse.py                   the fast path (pyarrow.json per piece) and the careful path per line
    _sanitize.py                the careful path: one line's values checked in Python
    _arrow.py                   the pivot of nested OTLP into flat Arrow tables: the span table decoded and checked
    _arrow_envelope.py          a parsed table's spans out of resourceSpans/scopeSpans (and their service.name)
    _arrow_events.py            the spans' events and links as tables of their own
    _arrow_attributes.py        the attribute pivot: one column per attribute key
    _arrow_attribute_values.py  an attribute's values as its column takes them (typed by the contract)
    _arrow_values.py            the values of every column checked and converted (integers, enums, text)
    _arrow_unify.py             the decoded pieces concatenated into one table per kind
    _arrow_pandas.py            the one conversion to pandas
    _arrow_memory.py            Arrow's memory pool while a file loads

The private modules are imported only here. Imports ``input`` and ``spans``.
"""
