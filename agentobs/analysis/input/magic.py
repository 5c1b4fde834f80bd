"""What a file that is not JSON is, from its first bytes, and what to do about it: the example of an
``unknown_format`` problem."""
from __future__ import annotations

# (first bytes, what it is and what to do), the first that matches. (zstd, which the collector's file exporter
# writes, and OTLP protobuf traces are read: formats.collector_zstd, formats.collector_proto.)
_KNOWN: tuple[tuple[bytes, str], ...] = (
    (b"BZh", "bzip2-compressed: only gzip and zstd are read; decompress it (bunzip2) or gzip it"),
    (b"\xfd7zXZ\x00", "xz-compressed: only gzip and zstd are read; decompress it (unxz) or gzip it"),
    (b"PK\x03\x04", "a zip archive: unzip it and name the files inside"),
    (b"PAR1", "a Parquet file (a DataFrame saved with to_parquet?): export the traces as OTLP JSON"),
    (b"\x1f\x8b", "gzip inside gzip (compressed twice): decompress it once (gunzip) and read the .gz left"),
    (b"\xff\xfe", "UTF-16 text: save it as UTF-8 (iconv -f UTF-16 -t UTF-8)"),
    (b"\xfe\xff", "UTF-16 text: save it as UTF-8 (iconv -f UTF-16 -t UTF-8)"),
)


_UTF16 = "UTF-16 text: save it as UTF-8 (iconv -f UTF-16 -t UTF-8)"


def describe(head: bytes) -> str | None:
    """What the file is and what to do, when its first bytes say it; None when they do not."""
    for magic, what in _KNOWN:
        if head.startswith(magic):
            return what
    if utf16(head):
        return _UTF16
    if _binary(head[:64]) and 0x0A in head[:6]:
        return ("binary protobuf that is not OTLP traces (metrics or logs? a file exporter of another pipeline?): "
                "only traces are read, as OTLP JSON or protobuf")
    return None


def example(head: bytes) -> str:
    """The ``unknown_format`` example of a file that is no format read: what ``describe`` says, else its first
    characters when it is text (what it starts with), else that it is binary (its bytes would say nothing)."""
    what = describe(head)
    if what is not None:
        return what
    if _binary(head[:64]):
        return "binary data, not text: not a trace file agentobs reads (OTLP JSON or protobuf, gzip or zstd)"
    return head.lstrip()[:40].decode("utf-8", "replace")


def utf16(head: bytes) -> bool:
    """Text in UTF-16 without a byte-order mark (as some Windows tools save it): in its first 64 bytes, every other
    byte is 0 and no other is (ASCII characters, little- or big-endian). UTF-8 text holds no 0 byte."""
    two = head[:64]
    two = two[:len(two) // 2 * 2]
    if len(two) < 8:
        return False
    low, high = two[0::2], two[1::2]
    return (high.count(0) == len(high) and low.count(0) == 0) or (low.count(0) == len(low) and high.count(0) == 0)


def _binary(head: bytes) -> bool:
    """Not text: control bytes other than white space, or not UTF-8."""
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:          # (not a character cut at the end)
            return True
        text = head[:exc.start].decode("utf-8")
    return any(c < " " and c not in "\t\r\n" for c in text)
