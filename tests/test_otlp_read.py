"""The reader's pieces: whole lines, numbered, every line over the limit reported and dropped, whatever the
sizes of the blocks, the lines and the limit (the reader reuses one buffer and carries partial lines)."""
from __future__ import annotations

import gzip
import io

from hypothesis import given, settings
from hypothesis import strategies as st

from agentobs.analysis import _otlp_read
from agentobs.analysis.input_limits import InputLimits

LINE = st.binary(min_size=0, max_size=40).map(lambda b: bytes(c for c in b if c != 10))


def _pieces(data: bytes, chunk: int, cap: int, gz: bool) -> tuple[list[tuple[int, bytes]], list[tuple[int, int]]]:
    raw = gzip.compress(data) if gz else data
    stream = io.BufferedReader(gzip.GzipFile(fileobj=io.BytesIO(raw))) if gz else io.BufferedReader(io.BytesIO(raw))
    long: list[tuple[int, int]] = []
    kept: list[tuple[int, bytes]] = []
    for piece, first, n in _otlp_read._split(stream, InputLimits(chunk_bytes=chunk, max_line_bytes=cap),
                                             lambda no, length: long.append((no, length))):
        text = bytes(piece)                      # a view is valid only until the next piece
        lines = text.split(b"\n")
        if text.endswith(b"\n"):
            lines.pop()
        assert len(lines) == n
        kept += [(first + i, line) for i, line in enumerate(lines) if line.strip()]
    return kept, long


@settings(max_examples=300, deadline=None)
@given(st.lists(LINE, max_size=30), st.integers(1, 90), st.integers(1, 50), st.booleans(), st.booleans())
def test_pieces_hold_every_line_under_the_limit_once_in_order(lines, chunk, cap, final_newline, gz):
    data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    kept, long = _pieces(data, chunk, cap, gz)
    want_kept = [(i + 1, line) for i, line in enumerate(lines) if len(line) <= cap and line.strip()]
    want_long = [(i + 1, len(line)) for i, line in enumerate(lines) if len(line) > cap]
    assert kept == want_kept
    assert long == want_long
