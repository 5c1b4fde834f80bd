"""Reading an input file in bounded pieces: whole lines, gzip transparently, within the input limits.

``chunks`` yields about ``chunk_bytes`` of whole lines at a time, so memory stays bounded whatever
the file's size. A line longer than ``max_line_bytes`` is skipped (its bytes are read and dropped,
never held) and reported through ``on_long_line``. A gzip file that expands beyond
``max_decompressed`` raises ``InputError`` naming the limit and the variable that raises it.
A path is a local file or the URL of an object in an fsspec filesystem (``remote``: s3://, gs://,
file://, ...), read the same way. Gzip is inflated by ISA-L (``isal``, about 1.6 times zlib's speed; zlib
where it is not installed); a corrupt stream raises ``zlib.error`` either way.
"""
from __future__ import annotations

import gzip
import io
import os
import queue
import types
import zlib
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO, cast

from ...errors import InputError
from . import remote
from .limits import DOCUMENT_ENV, RATIO_ENV, InputLimits, human
from .lines import count_breaks

GZIP_MAGIC = b"\x1f\x8b"
BOM = b"\xef\xbb\xbf"          # a UTF-8 byte order mark (Windows tools write one): not part of the JSON

_gzip: types.ModuleType = gzip
_InflateError: type[BaseException] = zlib.error
try:
    from isal import igzip, isal_zlib
    _gzip, _InflateError = igzip, cast("type[BaseException]", isal_zlib.error)
except ImportError:                       # pragma: no cover - isal is a dependency; zlib still reads
    pass


def _open(path: str | os.PathLike[str]) -> BinaryIO:
    """A local file, or an object of an fsspec filesystem named by its URL."""
    if remote.is_url(path):
        return remote.open_binary(str(path))
    return open(path, "rb")


def _size(f: BinaryIO) -> int:
    size = getattr(f, "size", None)         # an fsspec file knows its size; a local one is asked
    return int(size) if isinstance(size, int) else os.fstat(f.fileno()).st_size


def stored_size(source: str) -> int:
    """The bytes ``source`` (a local path or an object store URL) takes where it is stored; 0 when that cannot be told
    (for progress bars)."""
    if remote.is_url(source):
        return remote.size(source)
    try:
        return os.stat(source).st_size
    except OSError:
        return 0


def head(path: str | os.PathLike[str], n: int = 65536) -> bytes:
    """The first ``n`` bytes of the (decompressed) file, without a UTF-8 byte order mark. A gzip stream that ends
    early or is corrupt gives what came before that, and raises only when that is nothing."""
    with open_stream(path, InputLimits()) as s:
        parts: list[bytes] = []
        got = 0
        while got < n:
            part = s.read(n - got)
            if not part:
                break
            parts.append(part)
            got += len(part)
        broken = broken_by(s)
        if broken is not None and not parts:
            raise broken
        return b"".join(parts)


_BROKEN = (EOFError, _InflateError, zlib.error, gzip.BadGzipFile)   # a gzip stream cut short or corrupt


class _Capped(io.RawIOBase):
    """A decompressed stream that refuses to expand beyond ``limit`` bytes. A stream that ends early or is corrupt
    ends there, keeping what came before; ``broken`` says why (``broken_by`` reads it).

    The fast inflater (ISA-L) gives nothing of a read that meets the break, and reads ahead of what it gives, so
    then the stream is read again with zlib's, one inflate at a time (``read1``, which loses nothing), from the
    first byte not yet given: all that came before the break is kept, at the cost of inflating the file's start
    twice, on this path only. So is a valid stream that ISA-L's reader refuses: a header name or comment longer than
    its 512 KiB input buffer (an OverflowError there), which zlib's reader reads, whatever its length."""

    def __init__(self, file: BinaryIO, limit: int, path: str, size: int, limits: InputLimits):
        self._file, self._limit, self._path, self._limits = file, limit, path, limits
        self.size_on_disk = size
        self._raw: Any = _gzip.GzipFile(fileobj=file)
        self._careful = False
        self.total = 0
        self.broken: Exception | None = None      # why the stream ended before its end, if it did

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray) -> int:  # type: ignore[override]
        while self.broken is None:
            try:
                if self._careful:
                    data = self._raw.read1(len(b))
                    n = len(data)
                    b[:n] = data
                else:
                    n = self._raw.readinto(b)
                break
            except _BROKEN as exc:
                if self._careful:
                    self._break(exc)
                else:
                    self._again()
            except Exception:
                # what ISA-L's reader refuses in a valid stream (a header name or comment longer than its 512 KiB
                # input buffer: OverflowError) is read by zlib's, which reads a header of any length
                if self._careful:
                    raise
                self._again()
        else:
            return 0        # the end, for the reader; ``broken`` says it came early
        self.total += n
        if self.total > self._limit:
            raise self.refused()
        return n

    def _again(self) -> None:
        """Reads the stream again with zlib's inflater, up to the first byte not yet given."""
        self._careful = True
        self._file.seek(0)
        self._raw = gzip.GzipFile(fileobj=self._file)
        left = self.total
        try:
            while left:
                part = self._raw.read1(min(left, 1 << 20))
                if not part:
                    break
                left -= len(part)
        except _BROKEN as exc:
            self._break(exc)

    def _break(self, exc: BaseException) -> None:
        self.broken = zlib.error(str(exc)) if isinstance(exc, _InflateError) else cast(Exception, exc)

    def refused(self) -> InputError:
        return InputError(
            f"{self._path}: decompresses to more than {human(self._limit)} ({self._limits.max_gzip_ratio:g} "
            f"times its {human(self.size_on_disk)} on disk): refused as a likely decompression bomb; if the file is "
            f"genuine, set {RATIO_ENV} to a larger ratio")


def open_stream(path: str | os.PathLike[str], limits: InputLimits) -> BinaryIO:
    """The file's bytes, decompressed when it is gzip, within the limits, without a UTF-8 byte order mark. A gzip
    stream that ends early or is corrupt ends there: ``broken_by`` then says why."""
    p = remote.redacted_url(str(path)) if remote.is_url(path) else str(path)
    f = _open(path)
    if f.read(2) != GZIP_MAGIC:
        f.seek(0)
        if f.read(len(BOM)) != BOM:
            f.seek(0)
        return f
    f.seek(0)
    size = _size(f)
    # the running count refuses a bomb while it is read; the size a gzip trailer declares is not trusted (a
    # truncated file's last four bytes are any four bytes, and a file of several members declares only the last)
    capped = _Capped(f, limits.max_decompressed(size), p, size, limits)
    stream = io.BufferedReader(capped, buffer_size=1 << 20)  # type: ignore[type-var]
    if stream.peek(len(BOM))[:len(BOM)] == BOM:
        stream.read(len(BOM))
    return stream


def broken_by(stream: BinaryIO) -> Exception | None:
    """Why a stream of ``open_stream`` ended early (a gzip stream cut short or corrupt), or None."""
    raw = getattr(stream, "raw", None)
    return raw.broken if isinstance(raw, _Capped) else None


# a buffer of this size or more is allocated a sixteenth larger than asked: the next block asks for as much again
# plus the start of a line carried over, and a buffer a little too small is allocated again (zeroed and paged in)
_SLACK_FROM = 1 << 20


class Buffers:
    """The buffers the reader fills in turn. Without a pool the reader keeps one of its own, and a piece is valid
    until the next one is asked for. With a pool the reader takes a buffer from it for every block, and the piece
    made from it stays valid until the consumer gives that buffer back (``give_back``): a reader in another thread
    can then fill the next buffer while the consumer still works on the last piece."""

    def __init__(self, pool: queue.Queue[bytearray] | None = None):
        self.pool = pool
        self._own = bytearray()

    @staticmethod
    def pool_of(n: int) -> queue.Queue[bytearray]:
        pool: queue.Queue[bytearray] = queue.Queue()
        for _ in range(n):
            pool.put(bytearray())
        return pool

    def take(self, need: int) -> bytearray:
        buf = self._own if self.pool is None else self.pool.get()
        if len(buf) < need:                 # grown by a new allocation: an old view may still be in use
            buf = bytearray(need + (need >> 4 if need >= _SLACK_FROM else 0))
        if self.pool is None:
            self._own = buf
        return buf

    def give_back(self, buf: object) -> None:
        if self.pool is not None and isinstance(buf, bytearray):
            self.pool.put(buf)


def chunks(path: str | os.PathLike[str], limits: InputLimits, on_long_line: Callable[[int, int], None],
           buffers: Buffers | None = None) -> Iterator[tuple[bytes | memoryview, int, int]]:
    """(a piece of whole lines, the number of its first line, its number of lines), ``chunk_bytes`` at most.

    A piece is usually a view of a buffer the reader fills again (see ``Buffers``; ``piece.obj`` is the buffer);
    copy what must outlive it. ``on_long_line(line_number, length)`` is called for every line over the limit
    (the line is dropped).
    """
    stream = open_stream(path, limits)
    try:
        yield from _split(stream, limits, on_long_line, buffers or Buffers(), _blocks(stream, limits))
        broken = broken_by(stream)
        if broken is not None:
            raise _Truncated(str(broken))
    finally:
        stream.close()


class _Truncated(Exception):
    """The gzip stream ended early or is corrupt (what was read before stays usable)."""


_FIRST_BLOCK = 1 << 20
_PIECES = 4                 # of a file of known size


def _blocks(stream: BinaryIO, limits: InputLimits) -> tuple[int, int]:
    """(the first block, the largest) for a stream. A stream of known size is read in blocks of a quarter of it (from
    1 MiB to ``chunk_bytes``), a gzip stream's size taken as eight times its size on disk (JSON deflates by about that
    much, or more): pieces of one size keep the two parser threads and the decoding busy to the end, where a ramp of
    doubling pieces left a thread idle while the largest was parsed, and each piece costs the fixed costs of a parse
    and of a decoding (a piece of lines in several spellings, once per spelling), which a ramp from 1 MiB paid for
    more pieces, for nothing (measured on the spellings benchmark's files). Otherwise blocks start at 1 MiB and
    double up to ``chunk_bytes``, so a small input never allocates a large buffer."""
    try:
        if isinstance(stream, io.BufferedReader) and isinstance(stream.raw, _Capped):
            size = 8 * stream.raw.size_on_disk
        else:
            size = _size(stream)
    except (OSError, AttributeError, ValueError, io.UnsupportedOperation):
        return min(limits.chunk_bytes, _FIRST_BLOCK), limits.chunk_bytes
    block = min(limits.chunk_bytes, max(_FIRST_BLOCK, -(-size // _PIECES)))
    return block, block


def _split(stream: BinaryIO, limits: InputLimits, on_long_line: Callable[[int, int], None],
           buffers: Buffers | None = None, blocks: tuple[int, int] | None = None
           ) -> Iterator[tuple[bytes | memoryview, int, int]]:
    """Reads block by block into reused buffers (no new allocation per block: a fresh 32 MiB object per read costs
    more in page faults than the read itself) and yields each block's whole lines as a view of its buffer; the
    partial line at the end of a block starts the next one. ``blocks``: the first block and the largest
    (``_blocks``); by default blocks start at 1 MiB and double up to ``chunk_bytes`` while the input lasts."""
    first, largest = blocks or (min(limits.chunk_bytes, _FIRST_BLOCK), limits.chunk_bytes)
    size, cap = min(limits.chunk_bytes, largest), limits.max_line_bytes
    bufs = buffers or Buffers()
    block = min(size, first)
    tail = b""              # the start of a line carried from the previous block
    line_no = 1
    skipping = 0            # > 0 while dropping the remainder of an over-long line: its length so far
    while True:
        have = len(tail)
        buf = bufs.take(have + block)
        view = memoryview(buf)
        view[:have] = tail
        n = stream.readinto(view[have:have + block])  # type: ignore[attr-defined]
        if not n:
            bufs.give_back(buf)
            break
        if n == block:
            block = min(size, 2 * block)
        end, begin = have + n, 0
        if skipping:
            nl = buf.find(b"\n", 0, end)
            if nl < 0:
                skipping += n
                bufs.give_back(buf)
                continue
            on_long_line(line_no, skipping + nl)
            line_no += 1
            begin, skipping = nl + 1, 0
        cut = buf.rfind(b"\n", begin, end)
        if cut < 0:                         # no line ends in the buffer: carry it all
            tail = bytes(view[begin:end])
            bufs.give_back(buf)
            if len(tail) > cap:
                skipping, tail = len(tail), b""
            continue
        tail = bytes(view[cut + 1:end])
        lines = count_breaks(buf, begin, cut + 1)
        piece: bytes | memoryview = view[begin:cut + 1]
        if cut + 1 - begin > cap:           # the piece could hold a line over the limit
            piece = _drop_long_lines(bytes(piece), cap, line_no, on_long_line)
            bufs.give_back(buf)
        yield piece, line_no, lines
        del piece, view
        line_no += lines
        if len(tail) > cap:
            skipping, tail = len(tail), b""
    if skipping:
        on_long_line(line_no, skipping)
    elif tail.strip():
        if len(tail) > cap:
            on_long_line(line_no, len(tail))
        else:
            yield tail, line_no, 1


def _drop_long_lines(piece: bytes, cap: int, line_no: int, on_long_line: Callable[[int, int], None]) -> bytes:
    """The piece without its lines over the cap (only looked for when the piece could hold one)."""
    if len(piece) <= cap:
        return piece
    out, start, n = [], 0, line_no
    while start < len(piece):
        end = piece.find(b"\n", start)
        end = len(piece) - 1 if end < 0 else end
        if end - start > cap:
            on_long_line(n, end - start)
            out.append(b"\n")          # keep the line count: an empty line in its place
        else:
            out.append(piece[start:end + 1])
        start, n = end + 1, n + 1
    return b"".join(out)


class Document(io.RawIOBase):
    """A document's (decompressed) bytes as a stream, read within ``max_document_bytes`` (over it: an InputError, up
    front for a file whose size shows it), its lines counted as they pass. A compressed stream that ends early or
    is corrupt ends there: ``broken`` then says why (what came before is read)."""

    def __init__(self, path: str | os.PathLike[str], limits: InputLimits):
        self._name = remote.redacted_url(str(path)) if remote.is_url(path) else str(path)
        self._limit = limits.max_document_bytes
        self._stream = open_stream(path, limits)
        if not isinstance(self._stream, io.BufferedReader):       # not compressed: its size is known
            try:
                size = _size(self._stream)
            except (OSError, AttributeError, ValueError, io.UnsupportedOperation):
                size = 0
            if size > self._limit:
                self._stream.close()
                raise self._over()
        self.size = 0
        self.breaks = 0
        self.last = b""

    def _over(self) -> InputError:
        return InputError(f"{self._name}: larger than {human(self._limit)}, the limit for a document of this kind; "
                          f"set {DOCUMENT_ENV} to raise it")

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n: int = self._stream.readinto(b)  # type: ignore[attr-defined]
        if n:
            self.size += n
            if self.size > self._limit:
                raise self._over()
            view = memoryview(b)[:n]
            self.breaks += bytes(view).count(b"\n")
            self.last = bytes(view[n - 1:n])
        return n

    @property
    def lines(self) -> int:
        """The lines read (a last line without a line break counts)."""
        return self.breaks + (1 if self.last not in (b"", b"\n") else 0)

    @property
    def broken(self) -> Exception | None:
        return broken_by(self._stream)

    def close(self) -> None:
        self._stream.close()
        super().close()


def read_document(path: str | os.PathLike[str], limits: InputLimits) -> bytes:
    """A whole JSON document (a transcript file), decompressed, within ``max_document_bytes``."""
    data, broken = read_document_prefix(path, limits)
    if broken is not None:
        raise broken
    return data


def read_document_prefix(path: str | os.PathLike[str], limits: InputLimits) -> tuple[bytes, Exception | None]:
    """A whole document as ``read_document`` reads it, and, when its compressed stream ends early or is corrupt, what
    came before that and the error (a document of several JSON values keeps the values before it)."""
    p = remote.redacted_url(str(path)) if remote.is_url(path) else str(path)
    blocks: list[bytes] = []
    size = 0
    with open_stream(path, limits) as s:
        while size <= limits.max_document_bytes:
            block = s.read(min(_FIRST_BLOCK, limits.max_document_bytes + 1 - size))
            if not block:
                break
            blocks.append(block)
            size += len(block)
        broken = broken_by(s)
    if size > limits.max_document_bytes:
        raise InputError(f"{p}: larger than {human(limits.max_document_bytes)}, the limit for a document read "
                         f"whole; set {DOCUMENT_ENV} to raise it")
    return b"".join(blocks), broken
