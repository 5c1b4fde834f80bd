"""Scanning a piece's line breaks: how many there are, and whether a line is null (or not JSON at all).

Both walk the breaks with ``find`` (memchr) while they are few: the lines of OTLP JSON are usually whole requests
of many spans, kilobytes to megabytes long, and CPython's ``count`` and ``re`` look at every byte (on a 32 MiB piece
of such lines about 13 and 25 ms, against 2 for the walk). After ``_WALK`` breaks (short lines: the walk would cost
more) they leave the rest of the piece to ``count`` and ``re``. A piece is bytes, a bytearray, or a view of one of
those (the reader's pieces are views of its buffers), looked at in place.
"""
from __future__ import annotations

import re

import numpy as np

_WALK = 2048
_NULL_LINE = re.compile(rb"\n[ \t\r]*n")          # a line that starts with "n" after white space: null, or not JSON
_NULL_FIRST = re.compile(rb"[ \t\r\n]*n")          # the first line, after any amount of white space
_NULL_REST = re.compile(rb"[ \t\r]*n")
_SPACE = (0x20, 0x09, 0x0D)
_N = 0x6E

Piece = bytes | bytearray | memoryview


def _located(piece: Piece) -> tuple[bytes | bytearray, int, int] | None:
    """The bytes object a piece lies in and its bounds there; None for a view of something else."""
    if isinstance(piece, (bytes, bytearray)):
        return piece, 0, len(piece)
    obj = piece.obj
    if not isinstance(obj, (bytes, bytearray)) or piece.ndim != 1 or piece.itemsize != 1 or not piece.c_contiguous:
        return None
    if len(piece) == 0:
        return b"", 0, 0
    start = np.frombuffer(piece, np.uint8).ctypes.data - np.frombuffer(obj, np.uint8).ctypes.data
    return obj, start, start + len(piece)


def count_breaks(buf: bytes | bytearray, start: int = 0, end: int | None = None) -> int:
    """``buf.count(b"\\n", start, end)``."""
    end = len(buf) if end is None else end
    n = 0
    pos = buf.find(b"\n", start, end)
    while pos >= 0:
        n += 1
        if n == _WALK:
            return n + buf.count(b"\n", pos + 1, end)
        pos = buf.find(b"\n", pos + 1, end)
    return n


def has_null_line(piece: Piece) -> bool:
    """Whether a line of the piece starts (after spaces, tabs and carriage returns) with "n": null, or not JSON."""
    located = _located(piece)
    if located is None:
        return _NULL_FIRST.match(piece) is not None or _NULL_LINE.search(piece) is not None
    buf, start, end = located
    if _NULL_FIRST.match(buf, start, end):
        return True
    pos = buf.find(b"\n", start, end)
    for _ in range(_WALK):
        if pos < 0:
            return False
        if pos + 1 < end:
            c = buf[pos + 1]
            if c == _N or (c in _SPACE and _NULL_REST.match(buf, pos + 1, end)):
                return True
        pos = buf.find(b"\n", pos + 1, end)
    return pos >= 0 and _NULL_LINE.search(buf, pos, end) is not None
