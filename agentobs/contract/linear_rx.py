"""Regular expressions in linear time, for the redaction rules: RE2 (the ``google-re2`` bindings), the engine the
collector's Go ``regexp`` was ported from. RE2 compiles a rule to an automaton and reads the text once, whatever
the text holds: no backtracking, so no text makes a rule slow (Python's ``re`` took minutes over a crafted
megabyte). Both engines take the same syntax and mean the same by it (leftmost-first matches, ``\\b`` over ASCII
word characters, ``(?i)`` with Unicode's simple case folding, ``$`` at the very end of the text).

Text is matched as UTF-8 bytes: ``to_bytes`` encodes once (a lone surrogate, which UTF-8 cannot hold, becomes
U+FFFD, as everywhere in agentobs), the rules run over the bytes, ``to_text`` decodes once.
"""
from __future__ import annotations

import re

import re2

from ..errors import ConfigError


def _options(capture: bool) -> re2.Options:
    o = re2.Options()
    o.log_errors = False             # a rule RE2 refuses is raised below, not printed
    # max_mem: RE2's default (8 MiB for a rule and its automaton's cache). Every crafted text of the tests runs
    # within it, and all the rules together grew the process by 14 MB over them
    o.never_capture = not capture    # where nothing but the match is wanted, the automaton alone finds it
    return o


_OPTIONS = {capture: _options(capture) for capture in (False, True)}

_SURROGATE = re.compile("[\ud800-\udfff]")


def to_bytes(text: str) -> tuple[bytes, bool]:
    """``text`` as UTF-8, and whether it had to change (a lone surrogate became U+FFFD)."""
    try:
        return text.encode("utf-8"), False
    except UnicodeEncodeError:       # a lone surrogate (half of an emoji from a \\ud83d escape)
        return _SURROGATE.sub("\ufffd", text).encode("utf-8"), True


def to_text(data: bytes) -> str:
    return data.decode("utf-8")


def escape(name: str) -> str:
    """``name`` as a literal in a rule: ASCII letters and digits as they are, ASCII punctuation after a backslash,
    anything else as ``\\x{...}`` (RE2 and Go both read it)."""
    return "".join(c if c.isascii() and c.isalnum() else ("\\" + c if c.isascii() and c.isprintable() and c != " "
                                                          else f"\\x{{{ord(c):x}}}") for c in name)


class Rule:
    """One compiled rule: ``search`` says whether it matches anywhere, ``sub`` replaces every match (leftmost-first,
    not overlapping, as Go's ``ReplaceAllString``) by ``mask``; with ``keep``, group 1 (which must open the rule)
    stays in front of the mask, as ``${1}mask`` in Go. Each costs time proportional to the text, plus a constant
    per match."""

    __slots__ = ("_rx", "keep", "pattern")

    def __init__(self, pattern: str, *, keep: bool = False):
        try:
            self._rx = re2.compile(pattern, _OPTIONS[keep])
        except re2.error as e:
            raise ConfigError(f"redaction rule {pattern!r}: {e}") from None
        if keep and self._rx.groups < 1:
            raise ConfigError(f"redaction rule {pattern!r} keeps group 1 but has no group")
        self.pattern = pattern
        self.keep = keep

    def search(self, data: bytes) -> bool:
        return self._rx.search(data) is not None

    def sub(self, data: bytes, mask: bytes) -> bytes:
        pieces: list[bytes] = []
        pos = 0
        for m in self._rx.finditer(data):
            start, end = m.span()
            pieces.append(data[pos:m.end(1)] if self.keep else data[pos:start])
            pieces.append(mask)
            pos = end
        if not pieces:
            return data
        pieces.append(data[pos:])
        return b"".join(pieces)
