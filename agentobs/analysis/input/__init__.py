"""Reading bytes: what every reader of the analysis stands on. No span, no DataFrame here.

    read.py         bounded reading of a file or stream (gzip, zstd, decompression and document limits, pieces of
                    whole lines in reused buffers)
    remote.py       object stores through fsspec (s3://, gs://, az://, http(s)://), and URLs as they may be printed
    limits.py       the input limits (line, document, decompression ratio), resolved once from the environment
    lines.py        a piece's line breaks: how many, and whether a line is null
    magic.py        what a file that is not JSON is, from its first bytes (gzip, zstd, UTF-16, ...)
    json_stream.py  JSON documents read a value at a time: memory bounded by the largest value
    json_text.py    text of parsed JSON that UTF-8 can hold (lone surrogates)
    timespec.py     times as the command line and Jaeger URLs take them (``2h``, ``2026-12-05T10:00Z``)

Imports nothing else of the analysis.
"""
