"""The scan of a piece's line breaks (``_lines``) says what ``count`` and the null-line pattern say, on bytes, a
bytearray and views into them at any offset, whether the walk over the breaks finishes or hands the rest over."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentobs.analysis.input import lines as _lines

NULL_LINE = re.compile(rb"\n[ \t\r]*n")
NULL_FIRST = re.compile(rb"[ \t\r\n]*n")
# bytes drawn from the ones that matter: breaks, white space, "n" and a few others
TEXT = st.lists(st.sampled_from([b"\n", b" ", b"\t", b"\r", b"n", b"x", b"{", b"}"]), max_size=80).map(b"".join)


def _expected(text: bytes) -> bool:
    return bool(NULL_FIRST.match(text) or NULL_LINE.search(text))


@settings(max_examples=600, deadline=None)
@given(TEXT, st.integers(0, 12), st.integers(0, 12), st.integers(1, 6))
def test_scan_agrees_with_count_and_the_pattern(text: bytes, before: int, after: int, walk: int) -> None:
    old = _lines._WALK
    _lines._WALK = walk                     # small: the walk hands over to count and re mid-piece
    try:
        buf = bytearray(b"n\n" * before + text + b"\nn" * after)
        end = 2 * before + len(text)
        view = memoryview(buf)[2 * before:end]
        assert bytes(view) == text
        for piece in (text, bytearray(text), view, memoryview(text)):
            assert _lines.has_null_line(piece) is _expected(text), piece
        assert _lines.count_breaks(buf, 2 * before, end) == text.count(b"\n")
        assert _lines.count_breaks(text) == text.count(b"\n")
    finally:
        _lines._WALK = old


@pytest.mark.parametrize("text,null", [
    (b'{"a":1}\n{"b":2}\n', False),
    (b'{"a":1}\nnull\n', True),
    (b'{"a":1}\n \t\rnull\n', True),
    (b'  null\n{"a":1}\n', True),
    (b'\n\n null', True),
    (b'{"name":"n"}\n', False),
    (b"", False),
])
def test_null_lines_on_examples(text: bytes, null: bool) -> None:
    assert _lines.has_null_line(text) is null
    padded = bytearray(b"null\n" + text + b"\nnull")
    assert _lines.has_null_line(memoryview(padded)[5:5 + len(text)]) is null


def test_a_view_of_something_else_is_read_by_the_pattern() -> None:
    import array
    words = array.array("B", b'{"a":1}\nnull\n')
    assert _lines.has_null_line(memoryview(words)) is True
