"""Follow a growing OTLP JSON lines file, as ``tail -F`` does, across rotation.

The source is a file, a folder or a glob. A file is followed by its name: when the name comes to mean another
file (the collector's file exporter renames ``traces.jsonl`` to ``traces-<time>.jsonl`` at its size limit and starts
a new ``traces.jsonl``; logrotate's ``create``), what the old file still holds is read to its end, then the new one
from its start. A file that shrinks was truncated in place (``copytruncate``): it is read again from its start. A
folder or a glob follows its newest regular file (by modification time; hidden and ``.tmp`` files left out), and
moves to a newer one the same way. Only whole lines are handed on; a line still being written waits for its end.

Each ``read`` hands on at most ``max_bytes`` (and the one line that crosses it), so a large file read from its
start is taken in bounded pieces. Only OTLP JSON lines can be followed: a compressed or binary file (the file
exporter with ``compression`` or ``format: proto``) is an InputError.
"""
from __future__ import annotations

import glob
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ...errors import InputError
from ..input.magic import describe

READ_BYTES = 4 << 20            # read per call at most (whole lines)


@dataclass
class _Open:
    path: str
    f: BinaryIO
    ino: tuple[int, int]        # (device, inode)
    checked: bool = False       # its first bytes were looked at


class Follower:
    """``read()`` -> the complete lines appended since the last call (bytes, possibly empty)."""

    def __init__(self, source: str, *, from_start: bool = False, max_bytes: int = READ_BYTES,
                 max_line: int = 64 << 20):
        self.source, self.max_bytes, self.max_line = source, max_bytes, max_line
        self.pattern = _pattern(source)
        self.current: _Open | None = None
        self.partial = bytearray()
        self.long_lines = 0          # lines longer than max_line, left out
        self.files = 0               # files followed so far
        first = self._newest()
        if first is None and self.pattern is None:
            raise InputError(f"{source}: no such file (watch follows a file that exists, a folder or a glob)")
        if first is not None:
            self._open(first, at_end=not from_start)

    # -- which file ----------------------------------------------------------------------------------------

    def _newest(self) -> str | None:
        if self.pattern is None:
            return self.source if _regular(self.source) else None
        best: tuple[float, str] | None = None
        for p in glob.glob(self.pattern, recursive=True):
            name = os.path.basename(p)
            if name.startswith(".") or name.endswith(".tmp"):
                continue
            try:
                st = os.stat(p)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and (best is None or (st.st_mtime, p) > best):
                best = (st.st_mtime, p)
        return best[1] if best else None

    def _open(self, path: str, *, at_end: bool) -> None:
        try:
            f = open(path, "rb")        # noqa: SIM115 - held open across calls: a renamed file is read to its end
        except OSError:
            return
        st = os.fstat(f.fileno())
        if at_end:
            f.seek(st.st_size)
        self.current = _Open(path=path, f=f, ino=(st.st_dev, st.st_ino), checked=at_end and st.st_size > 0)
        self.files += 1

    def _moved(self) -> str | None:
        """The file to follow next, when it is no longer the one open."""
        nxt = self._newest()
        if nxt is None:
            return None
        try:
            st = os.stat(nxt)
        except OSError:
            return None
        if self.current is not None and (st.st_dev, st.st_ino) == self.current.ino:
            return None
        return nxt

    # -- reading -------------------------------------------------------------------------------------------

    def read(self) -> bytes:
        out = bytearray()
        if self.current is None:
            nxt = self._newest()
            if nxt is not None:
                self._open(nxt, at_end=False)
        if self.current is None:
            return b""
        self._truncated()
        self._drain(out)
        nxt = self._moved()
        if nxt is not None and len(out) < self.max_bytes:
            self._drain(out)                  # what was written before the switch
            if self.partial:                  # the old file's last line never ended: handed on (and counted bad)
                out += self.partial + b"\n"
                self.partial.clear()
            self.current.f.close()
            self.current = None
            self._open(nxt, at_end=False)
            if self.current is not None:
                self._drain(out)
        return bytes(out)

    def _truncated(self) -> None:
        cur = self.current
        assert cur is not None
        try:
            size = os.fstat(cur.f.fileno()).st_size
        except OSError:
            return
        if size < cur.f.tell():               # copytruncate: read again from the start
            cur.f.seek(0)
            self.partial.clear()

    def _drain(self, out: bytearray) -> None:
        cur = self.current
        assert cur is not None
        while len(out) < self.max_bytes:
            at = cur.f.tell()
            block = cur.f.read(min(1 << 20, self.max_bytes - len(out) + 1))
            if not block:
                return
            if not cur.checked:
                _check_head(block, cur.path, whole_line=at == 0)
                cur.checked = True
            self.partial += block
            if b"\n" not in block and len(self.partial) > self.max_line:   # a line too long to hold: skipped
                self.long_lines += 1
                self._skip_line()
            end = self.partial.rfind(b"\n")
            if end >= 0:
                out += self.partial[:end + 1]
                del self.partial[:end + 1]

    def _skip_line(self) -> None:
        cur = self.current
        assert cur is not None
        self.partial.clear()
        while block := cur.f.read(1 << 20):
            end = block.find(b"\n")
            if end >= 0:
                self.partial += block[end + 1:]
                return

    def close(self) -> None:
        if self.current is not None:
            self.current.f.close()
            self.current = None


def _pattern(source: str) -> str | None:
    """The glob whose newest file is followed, or None for a single file."""
    if any(ch in source for ch in "*?["):
        return source
    if os.path.isdir(source):
        return os.path.join(source, "**", "*")
    return None


def _regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _check_head(block: bytes, path: str, *, whole_line: bool = False) -> None:
    """An InputError when the first bytes read are not OTLP JSON lines; ``whole_line``: they start the file, so the
    first line is whole, and it must hold ``resourceSpans`` (a JSON document written over many lines, a transcript
    or a Jaeger UI download starts otherwise: its spans would be counted unreadable, and nothing watched)."""
    head = block.lstrip()
    first = head.split(b"\n", 1)[0]
    judged = head[:1] == b"{" and whole_line and (len(first) < len(head) or len(first) >= 64)  # (not half written)
    if judged and b'"resourceSpans"' not in first and b'"resource_spans"' not in first:
        raise InputError(f"{Path(path).name}: its first line holds no resourceSpans (a JSON document over many "
                         "lines, a transcript, a Jaeger UI download?): watch follows OTLP JSON lines (the "
                         "collector's file exporter with format: json, or agentobs' own traces file); agentobs "
                         "report reads the others")
    if not head or head[:1] in (b"{", b"["):
        return
    what = "gzip-compressed" if block[:2] == b"\x1f\x8b" else describe(block) or "not JSON (compressed or protobuf?)"
    raise InputError(f"{Path(path).name}: {what}: watch follows OTLP JSON lines (the collector's file exporter with "
                     "format: json and no compression, or agentobs' own traces file)")
