"""The OTLP JSON loader: ``load.load_file`` / ``load_bytes`` / ``load_request`` give a ``SpanSet``.

    load.py           the entry points: sniff a file, read it ahead, decode each piece, one SpanSet
    batch.py          a folder's many small files parsed and decoded in batches (also used by the Dask engine)
    ids.py            trace and span ids in every spelling (hex, base64) to lower-case hex
    _ahead.py         a reader thread and two parser threads ahead of the decoding
    _spelling.py      the OTLP JSON spellings (camel or snake case, enums as names or numbers, ...)
    _parse.py         the fast path (pyarrow.json per piece) and the careful path per line
    _sanitize.py      the careful path: one line's values checked in Python
    _arrow.py         the pivot of nested OTLP into flat Arrow tables
    _arrow_pandas.py  the one conversion to pandas
    _arrow_memory.py  Arrow's memory pool while a file loads

The private modules are imported only here. Imports ``input`` and ``spans``.
"""
