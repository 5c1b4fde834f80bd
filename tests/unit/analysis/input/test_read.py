"""The reader's pieces: whole lines, numbered, every line over the limit reported and dropped, whatever the
sizes of the blocks, the lines and the limit (the reader reuses one buffer and carries partial lines)."""
from __future__ import annotations

import gzip
import io
import os
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from agentobs.analysis.input import read as _otlp_read
from agentobs.analysis.input.limits import InputLimits

LINE = st.binary(min_size=0, max_size=40).map(lambda b: bytes(c for c in b if c != 10))


def _pieces(data: bytes, chunk: int, cap: int, gz: bool, pooled: bool = False
            ) -> tuple[list[tuple[int, bytes]], list[tuple[int, int]]]:
    raw = gzip.compress(data) if gz else data
    stream = io.BufferedReader(gzip.GzipFile(fileobj=io.BytesIO(raw))) if gz else io.BufferedReader(io.BytesIO(raw))
    long: list[tuple[int, int]] = []
    kept: list[tuple[int, bytes]] = []
    buffers = _otlp_read.Buffers(_otlp_read.Buffers.pool_of(2) if pooled else None)
    for piece, first, n in _otlp_read._split(stream, InputLimits(chunk_bytes=chunk, max_line_bytes=cap),
                                             lambda no, length: long.append((no, length)), buffers):
        text = bytes(piece)                      # a view is valid only until the next piece (or given back)
        if isinstance(piece, memoryview):
            buffers.give_back(piece.obj)
        lines = text.split(b"\n")
        if text.endswith(b"\n"):
            lines.pop()
        assert len(lines) == n
        kept += [(first + i, line) for i, line in enumerate(lines) if line.strip()]
    return kept, long


@settings(max_examples=300, deadline=None)
@given(st.lists(LINE, max_size=30), st.integers(1, 90), st.integers(1, 50), st.booleans(), st.booleans(),
       st.booleans())
def test_pieces_hold_every_line_under_the_limit_once_in_order(lines, chunk, cap, final_newline, gz, pooled):
    data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    kept, long = _pieces(data, chunk, cap, gz, pooled)
    want_kept = [(i + 1, line) for i, line in enumerate(lines) if len(line) <= cap and line.strip()]
    want_long = [(i + 1, len(line)) for i, line in enumerate(lines) if len(line) > cap]
    assert kept == want_kept
    assert long == want_long


def test_the_reader_and_parser_threads_stop_when_the_caller_stops_early(tmp_path):
    import threading

    from agentobs.analysis.otlp import _ahead as _otlp_ahead
    from agentobs.analysis.otlp._spelling import Spelling

    p = tmp_path / "t.jsonl"
    p.write_bytes(b'{"resourceSpans": []}\n' * 5000)
    items = _otlp_ahead.ahead(p, InputLimits(chunk_bytes=1000), Spelling, str(p))
    first = next(items)
    assert first.lines > 0 and first.parsed is not None
    items.close()                                 # the caller stops without giving the buffer back
    assert not [t for t in threading.enumerate() if t.name.startswith(("agentobs-otlp-reader", "agentobs-otlp-parser"))]


def test_what_the_reader_meets_reaches_the_caller_in_file_order(tmp_path):
    from agentobs.analysis.otlp import _ahead as _otlp_ahead
    from agentobs.analysis.otlp._spelling import Spelling

    p = tmp_path / "t.jsonl.gz"
    good = b'{"resourceSpans": []}\n' * 200
    rest = b"".join(b'{"resourceSpans": [], "pad": "%s"}\n' % os.urandom(40).hex().encode() for _ in range(30_000))
    p.write_bytes(gzip.compress(good + b"x" * 300 + b"\n" + rest)[:-30])     # a long line, then a cut stream
    seen = []
    lim = InputLimits(chunk_bytes=1 << 16, max_line_bytes=200, max_gzip_ratio=1e12)     # the cut trailer is noise
    for item in _otlp_ahead.ahead(p, lim, Spelling, str(p)):
        seen += [("long", n) for n, _ in item.long_lines]
        seen += [("lines", item.first)] if item.lines else []
        seen += [("error", type(item.error).__name__)] if item.error else []
        item.done()
    assert ("long", 201) in seen and seen[-1] == ("error", "_Truncated")
    assert [x for x in seen if x[0] == "lines"] == sorted(x for x in seen if x[0] == "lines")
    assert seen.index(("long", 201)) < next(i for i, x in enumerate(seen) if x[0] == "lines" and x[1] > 201)


def _otlp_lines(n: int) -> bytes:
    return b"".join(
        b'{"resourceSpans":[{"resource":{"attributes":[]},"scopeSpans":[{"scope":{"name":"t"},"spans":[{"traceId":"'
        + f"{i:032x}".encode() + b'","spanId":"' + f"{i + 1:016x}".encode()
        + b'","name":"s","kind":1,"startTimeUnixNano":"1","endTimeUnixNano":"2"}]}]}]}\n' for i in range(n))


def test_a_corrupt_or_truncated_gzip_stream_costs_what_follows_never_a_traceback(tmp_path):
    from agentobs.analysis.formats import reader_of
    from agentobs.analysis.formats.transcripts import load_transcripts
    from agentobs.analysis.otlp.load import load_file

    data = gzip.compress(_otlp_lines(20_000), compresslevel=1)
    corrupt = bytearray(data)
    corrupt[len(data) // 2: len(data) // 2 + 64] = b"\xff" * 64       # a bad deflate block in the middle
    cases = {"corrupt": bytes(corrupt), "truncated": data[: len(data) // 2],
             "bad header": b"\x1f\x8b\x09" + data[3:]}
    for name, raw in cases.items():
        p = tmp_path / f"{name.replace(' ', '-')}.jsonl.gz"
        p.write_bytes(raw)
        ss = load_file(p)
        assert ss.quality.count("unreadable") == 1, name
        assert len(ss.spans) < 20_000, name
        assert reader_of(p).name == "otlp"                      # answers, never raises
        assert load_transcripts(p).quality.count("unreadable") == 1, name
    assert len(load_file(tmp_path / "truncated.jsonl.gz").spans) > 0     # what came before the cut is kept


def test_a_file_of_known_size_is_read_in_four_pieces_of_one_size_within_bounds(tmp_path, monkeypatch):
    """A file whose size is known is read in pieces of a quarter of it (at least the smallest block, at most
    ``chunk_bytes``): pieces of one size keep the parsers busy to the end, and a large file is not cut into more
    pieces than it needs, each with a parse's and a decoding's fixed costs. A gzip file's size is taken as eight
    times its size on disk. A stream of unknown size starts at the smallest block and doubles."""
    monkeypatch.setattr(_otlp_read, "_FIRST_BLOCK", 1 << 10)
    rng = random.Random(3)
    limits = InputLimits(chunk_bytes=1 << 13)

    def lines(n: int) -> bytes:                                 # 62 bytes each, deflated to about half (random hex)
        return b"".join(b'{"x": "%s"}\n' % rng.randbytes(25).hex().encode() for _ in range(n))

    def sizes(path):
        return [len(p) for p, _, _ in _otlp_read.chunks(path, limits, lambda *a: None)]

    for n_lines in (500, 50, 5000):
        text = lines(n_lines)
        for path, size in ((tmp_path / f"plain{n_lines}.jsonl", len(text)),
                           (tmp_path / f"packed{n_lines}.jsonl.gz", None)):
            path.write_bytes(gzip.compress(text) if size is None else text)
            block = min(1 << 13, max(1 << 10, -(-(size or 8 * path.stat().st_size) // 4)))
            got = sizes(path)
            assert sum(got) == len(text)
            assert all(abs(g - block) < 62 for g in got[:-1]) and got[-1] < block + 62, (path.name, block, got)
    assert len(sizes(tmp_path / "plain500.jsonl")) == 4                 # (31,000 bytes: a quarter is 7,750)
    stream = io.BufferedReader(io.BytesIO(lines(500)))                   # (no size)
    assert _otlp_read._blocks(stream, limits) == (1 << 10, 1 << 13)
    got = [len(p) for p, _, _ in _otlp_read._split(stream, limits, lambda *a: None,
                                                     blocks=_otlp_read._blocks(stream, limits))]
    assert got[:4] == sorted(got[:4]) and got[0] <= 1 << 10 < got[2], got
