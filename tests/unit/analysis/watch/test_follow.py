"""Following a growing file as ``tail -F`` does: every whole line once and in order, across a rename-and-replace
(the collector's file exporter rotating at its size limit), a truncation in place, a folder or a glob whose newest
file changes; a line still being written waits for its end; what is not JSON lines is refused in one line."""
from __future__ import annotations

import gzip
import os
import time
from pathlib import Path

import pytest

from agentobs.analysis.watch.follow import Follower
from agentobs.errors import InputError


def _lines(n: int, start: int = 0) -> list[bytes]:
    return [b'{"resourceSpans":[],"n":%d}\n' % i for i in range(start, start + n)]


def _append(path: Path, lines: list[bytes]) -> None:
    with path.open("ab") as f:
        f.write(b"".join(lines))


def _read_all(f: Follower) -> list[bytes]:
    out = b""
    while chunk := f.read():
        out += chunk
    return out.splitlines(keepends=True)


def test_a_file_is_followed_from_its_end_or_its_start(tmp_path):
    p = tmp_path / "t.jsonl"
    _append(p, _lines(3))
    tail = Follower(str(p))
    head = Follower(str(p), from_start=True)
    assert _read_all(tail) == []
    assert _read_all(head) == _lines(3)
    _append(p, _lines(2, 3))
    assert _read_all(tail) == _lines(2, 3) and _read_all(head) == _lines(2, 3)


def test_a_line_being_written_waits_for_its_end(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"")
    f = Follower(str(p))
    with p.open("ab") as w:
        w.write(b'{"resourceSpans":[],"n":')
        w.flush()
        assert f.read() == b""
        w.write(b'1}\n{"resourceSpans"')
        w.flush()
        assert f.read() == b'{"resourceSpans":[],"n":1}\n'
        w.write(b':[]}\n')
    assert f.read() == b'{"resourceSpans":[]}\n'


def test_rename_and_replace_reads_the_old_file_to_its_end_then_the_new_one(tmp_path):
    """The collector's rotation: traces.jsonl becomes traces-<time>.jsonl, a new traces.jsonl begins; lines the
    exporter wrote to the old one after our last read are not lost."""
    p = tmp_path / "traces.jsonl"
    _append(p, _lines(2))
    f = Follower(str(p), from_start=True)
    assert _read_all(f) == _lines(2)
    _append(p, _lines(2, 2))                       # written before the rename, not read yet
    p.rename(tmp_path / "traces-2026-01-01T00-00-00.000.jsonl")
    assert _read_all(f) == _lines(2, 2)            # the name is gone for now: the old file is still followed
    _append(p, _lines(3, 4))                       # the new file
    assert _read_all(f) == _lines(3, 4)
    _append(p, _lines(1, 7))
    assert _read_all(f) == _lines(1, 7)


def test_a_file_truncated_in_place_is_read_again_from_its_start(tmp_path):
    p = tmp_path / "t.jsonl"
    _append(p, _lines(4))
    f = Follower(str(p), from_start=True)
    assert len(_read_all(f)) == 4
    with p.open("wb"):
        pass                                       # copytruncate
    _append(p, _lines(1, 10))
    assert _read_all(f) == _lines(1, 10)


def test_a_folder_follows_its_newest_file(tmp_path):
    d = tmp_path / "archive"
    d.mkdir()
    old, new = d / "traces-1.jsonl", d / "traces.jsonl"
    _append(old, _lines(2))
    os.utime(old, (time.time() - 60, time.time() - 60))
    _append(new, _lines(2, 2))
    (d / ".hidden.jsonl").write_bytes(b"not json\n")
    f = Follower(str(d), from_start=True)
    assert _read_all(f) == _lines(2, 2)            # the newest only; older ones hold runs that ended
    _append(new, _lines(1, 4))
    assert _read_all(f) == _lines(1, 4)
    newer = d / "traces-next.jsonl"               # rotation into a new name in the folder
    _append(new, _lines(1, 5))
    _append(newer, _lines(2, 6))
    os.utime(newer, (time.time() + 5, time.time() + 5))
    assert _read_all(f) == [*_lines(1, 5), *_lines(2, 6)]


def test_a_glob_that_matches_nothing_yet_waits_for_a_file(tmp_path):
    f = Follower(str(tmp_path / "*.jsonl"))
    assert f.read() == b""
    _append(tmp_path / "a.jsonl", _lines(2))
    assert _read_all(f) == _lines(2)               # a file that appears is read from its start


def test_a_missing_file_or_a_compressed_one_is_refused(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        Follower(str(tmp_path / "nope.jsonl"))
    z = tmp_path / "t.jsonl.gz"
    z.write_bytes(gzip.compress(b"".join(_lines(3))))
    f = Follower(str(z), from_start=True)
    with pytest.raises(InputError, match="gzip-compressed: watch follows OTLP JSON lines"):
        f.read()


def test_reads_are_bounded_and_a_line_too_long_to_hold_is_skipped(tmp_path):
    p = tmp_path / "t.jsonl"
    _append(p, _lines(1000))
    f = Follower(str(p), from_start=True, max_bytes=4096)
    first = f.read()
    assert 4096 <= len(first) < 4096 + 64 and first.endswith(b"\n")
    assert b"".join([first, *iter(f.read, b"")]) == b"".join(_lines(1000))
    q = tmp_path / "long.jsonl"            # a line longer than a read and than max_line: never held whole
    # (OTLP-shaped, as watch requires)
    q.write_bytes(b'{"resourceSpans":[],"x":"' + b"a" * (3 << 20) + b'"}\n' + _lines(1)[0])
    g = Follower(str(q), from_start=True, max_line=1000)
    assert _read_all(g) == _lines(1) and g.long_lines == 1


def test_a_file_that_is_no_otlp_json_lines_is_refused_but_a_line_half_written_is_not(tmp_path):
    """A JSON document over many lines (a transcript, a Jaeger UI download) is refused at its first line; a first
    line still being written is not judged before it is whole (or long enough to hold the key)."""
    doc = tmp_path / "doc.json"
    doc.write_bytes(b'{\n  "data": []\n}\n')
    with pytest.raises(InputError, match="its first line holds no resourceSpans"):
        Follower(str(doc), from_start=True).read()
    half = tmp_path / "half.jsonl"
    half.write_bytes(b'{"resourceSp')
    f = Follower(str(half), from_start=True)
    assert f.read() == b""
    _append(half, [b'ans":[],"n":0}\n'])
    assert f.read() == b'{"resourceSpans":[],"n":0}\n'
