"""What a file that is not JSON is, from its first bytes, and what to do about it: the example of an
``unknown_format`` problem."""
from __future__ import annotations

_ZSTD = b"\x28\xb5\x2f\xfd"
# (first bytes, what it is and what to do), the first that matches
_KNOWN: tuple[tuple[bytes, str], ...] = (
    (_ZSTD, "zstd-compressed (the collector's file exporter with compression: zstd?): only gzip is read; "
            "decompress it (zstd -d) or write it uncompressed, the exporter's default"),
    (b"BZh", "bzip2-compressed: only gzip is read; decompress it (bunzip2) or gzip it"),
    (b"\xfd7zXZ\x00", "xz-compressed: only gzip is read; decompress it (unxz) or gzip it"),
    (b"PK\x03\x04", "a zip archive: unzip it and name the files inside"),
    (b"PAR1", "a Parquet file (a DataFrame saved with to_parquet?): export the traces as OTLP JSON"),
    (b"\xff\xfe", "UTF-16 text: save it as UTF-8 (iconv -f UTF-16 -t UTF-8)"),
    (b"\xfe\xff", "UTF-16 text: save it as UTF-8 (iconv -f UTF-16 -t UTF-8)"),
)


def describe(head: bytes) -> str | None:
    """What the file is and what to do, when its first bytes say it; None when they do not."""
    for magic, what in _KNOWN:
        if head.startswith(magic) or (magic == _ZSTD and head[4:].startswith(magic)):   # (or length-prefixed)
            return what
    if _binary(head[:64]) and 0x0A in head[:6]:
        return ("binary protobuf (the collector's file exporter with format: proto?): only OTLP JSON is read; use "
                "the exporter's default format, json")
    return None


def _binary(head: bytes) -> bool:
    """Not text: control bytes other than white space, or not UTF-8."""
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:          # (not a character cut at the end)
            return True
        text = head[:exc.start].decode("utf-8")
    return any(c < " " and c not in "\t\r\n" for c in text)
