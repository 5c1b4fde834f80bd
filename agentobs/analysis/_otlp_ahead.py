"""Reading and parsing one piece ahead: a thread reads (and decompresses) the next piece and parses it with
pyarrow while the caller decodes the piece before, so the parse, which is most of a load, overlaps the rest.

The reader fills buffers from a pool of three (``_otlp_read.Buffers``): the caller holds one piece, one waits
in the hand-over queue, the reader fills the third; ``Ahead.done`` gives a piece's buffer back. What the reader
meets (lines over the limit, a corrupt gzip stream, a refused bomb) travels with the pieces and is reported or
raised by the caller, in file order. The reader touches nothing of the caller's: the spelling it parses with is
read from ``spelling()``, and a wrong guess only costs the caller a second parse.
"""
from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from . import _otlp_read
from ._otlp_parse import Parse, parse
from ._otlp_spelling import Spelling
from .input_limits import InputLimits

_SLOTS = 3
_WAIT_S = 0.1


@dataclass(kw_only=True, slots=True)
class Ahead:
    """One piece as the reader hands it over: its lines, what the parse made of it, and what the reader met."""
    piece: bytes | memoryview = b""
    first: int = 1
    lines: int = 0
    parsed: Parse | None = None
    long_lines: list[tuple[int, int]] = field(default_factory=list)   # (line number, length), dropped
    error: BaseException | None = None                                 # raised by the reader after this piece
    _buffers: _otlp_read.Buffers | None = None

    def done(self) -> None:
        """The caller is finished with the piece: its buffer goes back to the reader."""
        if self._buffers is not None and isinstance(self.piece, memoryview):
            self._buffers.give_back(self.piece.obj)
        self.piece = b""


def ahead(path: str | os.PathLike[str], limits: InputLimits, spelling: Callable[[], Spelling]) -> Iterator[Ahead]:
    """The file's pieces, each parsed by a reader thread one piece ahead. Closing the iterator stops the reader."""
    buffers = _otlp_read.Buffers(_otlp_read.Buffers.pool_of(_SLOTS))
    handed: queue.Queue[Ahead | None] = queue.Queue(maxsize=1)
    stop = threading.Event()

    def hand(item: Ahead | None) -> bool:
        while not stop.is_set():
            try:
                handed.put(item, timeout=_WAIT_S)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        longs: list[tuple[int, int]] = []
        try:
            for piece, first, lines in _otlp_read.chunks(path, limits, lambda n, length: longs.append((n, length)),
                                                         buffers):
                item = Ahead(piece=piece, first=first, lines=lines, long_lines=longs[:], _buffers=buffers,
                             parsed=parse(piece, limits.max_line_bytes, spelling()))
                longs.clear()
                del piece
                if not hand(item):
                    return
            if longs:
                hand(Ahead(long_lines=longs[:]))
        except BaseException as exc:        # raised again by the caller, in its own thread
            hand(Ahead(long_lines=longs[:], error=exc))
        finally:
            hand(None)

    reader = threading.Thread(target=read, name="agentobs-otlp-reader", daemon=True)
    reader.start()
    try:
        while True:
            item = handed.get()
            if item is None:
                return
            yield item
    finally:
        stop.set()
        _drain(handed, buffers)
        reader.join()


def _drain(handed: queue.Queue[Ahead | None], buffers: _otlp_read.Buffers) -> None:
    """Gives back what waits in the queue, so that a reader blocked on a buffer or on the queue can end."""
    while True:
        try:
            item = handed.get_nowait()
        except queue.Empty:
            break
        if item is not None:
            item.done()
    for _ in range(_SLOTS):                 # a reader waiting for a buffer gets one and then sees the stop
        buffers.give_back(bytearray())
