"""JSON documents read a value at a time, so that the memory a document costs is bounded by its largest value,
not by the document.

A document parsed whole with ``json`` holds every value of it as Python objects at once: 20 to 50 times its size
(a dict, a str and an int per field). ``Reader`` walks the outer structure of a document (an object's members, an
array's elements, values one after another) and parses what the caller asks for, one value at a time, with the
standard library's decoder (``json.JSONDecoder.raw_decode``: the same values as ``json.loads``, ``NaN`` and
``Infinity``, numbers of any size within Python's limits, the last of repeated keys). Only a window of the text is
held: it is read from the stream in blocks (``BLOCK``) as the walk goes, and grows only while one value is longer
than what it holds (a value's text, then its objects, is the most a document costs besides what the caller keeps).

Text that is not JSON, cut short, nested too deeply to parse, or not UTF-8 raises ``Broken`` with where it was met
(``line``); what was read before it stays read. ``Reader.values`` reads values one after another the way the
console exporter writes them (and JSON lines, and the elements of top-level arrays), going on after a broken value
at the next line that starts a value as the first one did.
"""
from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from typing import Any, Protocol

BLOCK = 1 << 20                  # bytes read from the stream at a time
_HEAD = 4096                     # characters kept of the line the window starts in (its indentation)
_SPACE = re.compile(r"[ \t\r\n]*")
_NOT_UTF8 = re.compile("[\udc80-\udcff]")   # a byte that is not UTF-8, kept by the decoder as a lone surrogate
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")   # only then may a value hold a lone one


class Readable(Protocol):
    def read(self, n: int = -1, /) -> bytes | None: ...


class _Held:
    """Bytes held in memory, read as a stream without a copy of them (``io.BytesIO`` copies a bytearray)."""

    def __init__(self, data: bytes | bytearray | memoryview):
        self._view = memoryview(data)
        self._at = 0

    def read(self, n: int = -1, /) -> bytes:
        end = len(self._view) if n < 0 else min(len(self._view), self._at + n)
        out = bytes(self._view[self._at:end])
        self._at = end
        return out


class Broken(Exception):
    """The text is not JSON (or not UTF-8) at ``line``; ``reason`` says how."""

    def __init__(self, reason: str, line: int):
        super().__init__(f"line {line}: {reason}")
        self.reason, self.line = reason, line


class Reader:
    """A pull reader of one JSON document (or of JSON values one after another) from a binary stream or bytes.

    Walk it with ``kind`` (what the next value opens), ``members`` (an object's keys, the reader left at each
    value), ``elements`` (an array's elements, the reader left at each), ``value`` (the next value, parsed) and
    ``skip``; ``at_end`` says whether only white space is left. A member or element the caller does not read is
    skipped (parsed and dropped) when the walk goes on."""

    def __init__(self, source: Readable | bytes | bytearray | memoryview, *, strict: bool = True,
                 block: int = BLOCK):
        self._stream: Readable = _Held(source) if isinstance(source, (bytes, bytearray, memoryview)) else source
        self._decoder = json.JSONDecoder(strict=strict)
        self._text_of = codecs.getincrementaldecoder("utf-8")("surrogateescape")
        self._block = block
        self._text = ""
        self._pos = 0
        self._eof = False
        self._line = 1                  # the line of ``_counted`` in ``_text``
        self._counted = 0
        self._line_head = ""            # the start of the line the window starts in (up to ``_HEAD`` characters)
        self._pending = False           # a member's or element's value the caller has not read yet
        self.bytes_read = 0
        self.surrogates = False         # whether a value read so far escaped a UTF-16 surrogate (``"\\ud800"``)

    # -- the text window -----------------------------------------------------------------------------------------

    def _fill(self, at_least: int = 1) -> bool:
        """Reads blocks until ``at_least`` characters are held past the position, or the end; False at the end."""
        if self._pos:
            self._advance_lines(self._pos)
            gone = self._text[:self._pos]
            nl = gone.rfind("\n")
            self._line_head = (gone[nl + 1:] if nl >= 0 else self._line_head + gone)[-_HEAD:]
            self._text, self._counted = self._text[self._pos:], self._counted - self._pos
            self._pos = 0
        grew = False
        while len(self._text) < at_least and not self._eof:
            raw = self._stream.read(max(self._block, at_least - len(self._text)))
            self.bytes_read += len(raw or b"")
            if not raw:
                self._eof = True
                self._text += self._text_of.decode(b"", final=True)
                break
            self._text += self._text_of.decode(raw)
            grew = True
        return grew

    def _advance_lines(self, to: int) -> None:
        if to > self._counted:
            self._line += self._text.count("\n", self._counted, to)
            self._counted = to

    @property
    def line(self) -> int:
        """The line of the reader's position (1-based)."""
        self._advance_lines(self._pos)
        return self._line

    def _space(self) -> str:
        """Skips white space; the next character, or "" at the end."""
        while True:
            self._pos = _SPACE.match(self._text, self._pos).end()  # type: ignore[union-attr]
            if self._pos < len(self._text):
                return self._text[self._pos]
            if not self._fill():
                return ""

    def _broken(self, reason: str) -> Broken:
        return Broken(reason, self.line)

    # -- the walk ------------------------------------------------------------------------------------------------

    def kind(self) -> str:
        """What the next value opens: ``{``, ``[``, another character (a scalar), or "" at the end."""
        return self._space()

    def at_end(self) -> bool:
        """Whether only white space is left (after the document)."""
        self._settle()
        return self._space() == ""

    def value(self) -> Any:
        """The next value, parsed."""
        self._pending = False
        if self._space() == "":
            raise self._broken("the text ends where a value was expected")
        while True:
            try:
                value, end = self._decoder.raw_decode(self._text, self._pos)
            except RecursionError:
                raise self._broken("nested too deeply to read") from None
            except ValueError as exc:          # not JSON, a value cut by the window's end, a number too long
                if self._eof or not _cut(exc, len(self._text)):
                    raise self._broken(_reason(exc)) from None
                self._fill(2 * (len(self._text) - self._pos) + self._block)
                continue
            if not self._eof and len(self._text) - end < 3 and isinstance(value, (int, float)) \
                    and not isinstance(value, bool):
                # a number may go on past the window ("0." and "0", "1e" and "1e5"): read on before taking it
                self._fill(len(self._text) - self._pos + self._block)
                continue
            if _NOT_UTF8.search(self._text, self._pos, end):
                raise self._broken("not UTF-8 text")
            if not self.surrogates and _ESCAPED_SURROGATE.search(self._text, self._pos, end):
                self.surrogates = True
            self._pos = end
            return value

    def skip(self) -> None:
        """Reads past the next value, an element or member at a time (parsing each: a large array or object is never
        held whole)."""
        kind = self.kind()
        if kind == "[":
            for _ in self.elements():
                pass
        elif kind == "{":
            for _ in self.members():
                pass
        else:
            self.value()

    def members(self) -> Iterator[str]:
        """The keys of the object that opens next; after each, the reader is at that key's value. A walk into a
        value (``members``, ``elements``) must go to its end before this one goes on."""
        self._pending = False
        if self._space() != "{":
            raise self._broken("an object was expected")
        self._pos += 1
        first = True
        while True:
            c = self._space()
            if c == "}":
                self._pos += 1
                return
            if not first:
                if c != ",":
                    raise self._broken("expected ',' or '}' after a member")
                self._pos += 1
                c = self._space()
            if c != '"':
                raise self._broken("expected a key (a string)")
            key = self.value()
            if self._space() != ":":
                raise self._broken("expected ':' after a key")
            self._pos += 1
            first = False
            self._pending = True
            yield key
            self._settle()

    def elements(self) -> Iterator[int]:
        """The positions of the elements of the array that opens next; at each, the reader is at that element (see
        ``members``)."""
        self._pending = False
        if self._space() != "[":
            raise self._broken("an array was expected")
        self._pos += 1
        n = 0
        while True:
            c = self._space()
            if c == "]":
                self._pos += 1
                return
            if n:
                if c != ",":
                    raise self._broken("expected ',' or ']' after an element")
                self._pos += 1
            self._pending = True
            yield n
            self._settle()
            n += 1

    def _settle(self) -> None:
        """Skips the value of the last member or element when the caller did not read it."""
        if self._pending:
            self._pending = False
            self.value()

    # -- values one after another, going on after a broken one ---------------------------------------------------

    def values(self) -> Iterator[tuple[int, Any]]:
        """(line, value) for each value of text written as values one after another (JSON lines, the console
        exporter's indented objects, ``jq`` output), the elements of a top-level array taken as values (its
        brackets and commas are punctuation; inside it, an array is an element). ``line`` is the line the value
        starts on, counting a value that starts on the line where the one before started as on a line of its own
        (the N-th element of an array written on one line is on line N). A value that is not JSON is yielded as a
        ``Broken`` (its line, and what is wrong) and reading goes on at the next line that
        starts a value as the first value did (at its indentation); when there is none, the rest is that value."""
        in_array, extra, last_line, resync = False, 0, 0, None
        while True:
            c = self._space()
            while (c == "[" and not in_array) or (c in ",]" and in_array and c != ""):
                in_array = c != "]"
                self._pos += 1
                c = self._space()
            if c == "":
                return
            line = self.line
            if line == last_line:               # a value starting on the line where the one before started
                extra += 1
            last_line = line
            if resync is None:
                before = self._line_head + self._text[:self._pos]
                indent = before[before.rfind("\n") + 1:]
                resync = re.compile("\n" + re.escape(indent if indent.isspace() else "") + "[{\\[]")
            try:
                value = self.value()
            except Broken as exc:
                yield line + extra, Broken(exc.reason, line + extra)
                self._resync(resync)
                continue
            yield line + extra, value

    def _resync(self, at: re.Pattern[str]) -> None:
        """Moves to the line break before the next line that starts a value as the first did, or to the end."""
        while True:
            found = at.search(self._text, self._pos + 1)
            if found is not None:
                self._pos = found.start()
                return
            keep = len(self._text) - self._pos
            if not self._fill(keep + self._block):
                self._pos = len(self._text)
                return


def _cut(exc: ValueError, held: int) -> bool:
    """Whether a parse error may come from the window's end cutting a value short (a string, a number or a literal
    running into it), rather than from text that is not JSON."""
    if not isinstance(exc, json.JSONDecodeError):      # (an integer of more than 4,300 digits, whatever follows)
        return False
    return exc.msg.startswith("Unterminated string") or exc.pos >= held - 16


def _reason(exc: ValueError) -> str:
    text = str(exc)
    return text.split(": line ")[0] if isinstance(exc, json.JSONDecodeError) else text[:120]
