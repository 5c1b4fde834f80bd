"""Reading and parsing ahead: one thread reads (and decompresses) the pieces, two others parse them with pyarrow,
two pieces at once, while the caller decodes the piece before. The parse, which is most of a load, thus overlaps
both the reading (a copy out of the page cache, or an inflate) and the decoding. Each piece is parsed as one block
on its parser's thread: pyarrow's own threads would split it into blocks whose tables the caller had to put together
again (a copy of the whole piece), and two parses at once keep both cores as busy without that.

The reader fills buffers from a pool (``reading.Buffers``): the caller holds one piece, two wait in the hand-over
queue (being parsed, or parsed), and the reader fills the next when one comes back (``Ahead.done`` gives a piece's
buffer back). What the reader meets (lines over the limit, a corrupt gzip stream, a refused bomb) travels with the
pieces and is reported or raised by the caller, in file order. The threads touch nothing of the caller's: a parser
starts each piece with the spelling the last parse found (pyarrow's errors teach it), else the caller's
``spelling()``; a wrong guess only costs a second parse. A piece of lines in several spellings is parsed one
spelling at a time here, on its parser's thread, and its groups decoded at once (``parse_groups``; a group's lines are
put together in one of two spare buffers, used again from piece to piece), and the caller puts the rows in file
order.
"""
from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from ..input import read as reading
from ..input import remote
from ..input.limits import InputLimits
from ._parse import (
    Groups,
    Parse,
    ParseFailure,
    looks_mixed,
    needed_rare,
    parse,
    parse_groups,
    runs_by_spelling,
)
from ._spelling import Spelling

_SLOTS = 4
_PARSERS = 2
_WAIT_S = 0.1


@dataclass(kw_only=True, slots=True)
class Ahead:
    """One piece as the parser hands it over: its lines, what the parse made of it, and what the reader met."""
    piece: bytes | memoryview = b""
    first: int = 1
    lines: int = 0
    parsed: Parse | Groups | None = None
    long_lines: list[tuple[int, int]] = field(default_factory=list)   # (line number, length), dropped
    error: BaseException | None = None                                 # raised by the reader after this piece
    _buffers: reading.Buffers | None = None
    _parsing: Future[Parse | Groups | None] | None = None

    def done(self) -> None:
        """The caller is finished with the piece: its buffer goes back to the reader."""
        if self._buffers is not None and isinstance(self.piece, memoryview):
            self._buffers.give_back(self.piece.obj)
        self.piece = b""


def ahead(path: str | os.PathLike[str], limits: InputLimits, spelling: Callable[[], Spelling],
          source: str) -> Iterator[Ahead]:
    """The file's pieces, read by one thread and parsed by two others, ahead of the caller (``source``: the
    file's name in the data quality, for the pieces of several spellings decoded ahead too). Closing the iterator
    stops the threads. A small local file (one piece, at most 1 MiB on disk) is read in the caller's thread,
    unparsed (the caller parses it): with one piece there is nothing to overlap, and threads per file cost a few
    milliseconds, which a folder of thousands of small files pays thousands of times."""
    if _small(path, limits):
        yield from _inline(path, limits)
        return
    buffers = reading.Buffers(reading.Buffers.pool_of(_SLOTS))
    handed: queue.Queue[Ahead | None] = queue.Queue(maxsize=_PARSERS)     # read, being parsed, in file order
    stop = threading.Event()
    learnt = _Learnt()
    spare = reading.Buffers(reading.Buffers.pool_of(_PARSERS))      # a piece's lines of one spelling, together
    parsers = ThreadPoolExecutor(max_workers=_PARSERS, thread_name_prefix="agentobs-otlp-parser")

    def parse_one(item: Ahead) -> Parse | Groups | None:
        if stop.is_set():
            return None
        try:
            got, learnt.mixed = _parse(item, limits.max_line_bytes, learnt, spelling=spelling(), source=source,
                                       spare=spare)
        except Exception:               # not parsed ahead: the caller parses it, and meets the error itself
            return None
        if isinstance(got, tuple):
            learnt.spelling, learnt.rare = got[1], learnt.rare or needed_rare(item.piece, got)
        return got

    def put(item: Ahead | None) -> bool:
        while not stop.is_set():
            try:
                handed.put(item, timeout=_WAIT_S)
                return True
            except queue.Full:
                continue
        if item is not None:
            item.done()
        return False

    def read() -> None:
        longs: list[tuple[int, int]] = []
        try:
            for piece, first, lines in reading.chunks(path, limits, lambda n, length: longs.append((n, length)),
                                                         buffers):
                item = Ahead(piece=piece, first=first, lines=lines, long_lines=longs[:], _buffers=buffers)
                longs.clear()
                del piece
                if item.lines:
                    item._parsing = parsers.submit(parse_one, item)
                if not put(item):
                    return
            if longs:
                put(Ahead(long_lines=longs[:]))
        except BaseException as exc:        # raised again by the caller, in its own thread
            put(Ahead(long_lines=longs[:], error=exc))
        finally:
            put(None)

    reader = threading.Thread(target=read, name="agentobs-otlp-reader", daemon=True)
    reader.start()
    try:
        while True:
            item = handed.get()
            if item is None:
                return
            if item._parsing is not None:
                item.parsed = item._parsing.result()
                item._parsing = None
            yield item
    finally:
        stop.set()
        parsers.shutdown(wait=True, cancel_futures=True)    # no parse still reads a buffer given back below
        _drain(handed)
        for _ in range(_SLOTS):             # a reader waiting for a buffer gets one and then sees the stop
            buffers.give_back(bytearray())
        reader.join()
        _drain(handed)                      # what the reader put before it saw the stop


@dataclass(slots=True)
class _Learnt:
    """What the pieces parsed so far teach the next: the spelling the last one parsed with (else the caller's
    ``spelling()``), whether it held lines of several spellings, and whether it needed the rare value fields
    (``_parse.parse``). Two pieces are parsed at once, so a piece may start before the one before it taught
    anything; a wrong guess only costs a second parse."""
    spelling: Spelling | None = None
    mixed: bool = False
    rare: bool = False


def _parse(item: Ahead, max_block: int, learnt: _Learnt, *, spelling: Spelling, source: str,
           spare: reading.Buffers) -> tuple[Parse | Groups, bool]:
    """What the parser makes of a piece (``learnt``: what the pieces before taught; ``spelling``: the caller's guess
    when they taught none), and whether it held lines of several spellings. Such a piece is parsed one spelling at a
    time and decoded here, not by the caller, so that work overlaps the caller's on the piece before. Once a piece
    was, the next ones are
    cut by spelling first: a whole parse of lines in several spellings fails, often after it has cost as much as a
    parse that succeeds. Until a piece was parsed whole, a piece whose lines look mixed (``looks_mixed``) is cut
    first too: the first pieces of a file are parsed side by side, before any taught anything."""
    mixed = learnt.mixed or (learnt.spelling is None and looks_mixed(item.piece))
    runs = runs_by_spelling(item.piece, item.first) if mixed else None
    if runs is not None and len(runs) > 1:
        return parse_groups(runs, max_block, source, spare), True
    got = parse(item.piece, max_block, learnt.spelling or spelling, one_thread=_PARSERS > 1, rare=learnt.rare)
    if isinstance(got, ParseFailure):
        runs = runs if runs is not None else runs_by_spelling(item.piece, item.first)     # cut once per piece
        if len(runs) > 1:
            return parse_groups(runs, max_block, source, spare), True
    return got, False


_SMALL_BYTES = 1 << 20


def _small(path: str | os.PathLike[str], limits: InputLimits) -> bool:
    if remote.is_url(path):
        return False
    try:
        return os.stat(path).st_size <= min(_SMALL_BYTES, limits.chunk_bytes)
    except OSError:
        return False                        # the reader meets it, and says so


def _inline(path: str | os.PathLike[str], limits: InputLimits) -> Iterator[Ahead]:
    longs: list[tuple[int, int]] = []
    for piece, first, lines in reading.chunks(path, limits, lambda n, length: longs.append((n, length))):
        item = Ahead(piece=bytes(piece), first=first, lines=lines, long_lines=longs[:])
        longs.clear()
        yield item
    if longs:
        yield Ahead(long_lines=longs[:])


def _drain(q: queue.Queue[Ahead | None]) -> None:
    """Gives back what waits in the queue, so that a thread blocked on a buffer or on the queue can end."""
    while True:
        try:
            item = q.get_nowait()
        except queue.Empty:
            break
        if item is not None:
            item.done()
