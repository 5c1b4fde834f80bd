"""The value-at-a-time JSON reader (``agentobs.analysis.input.json_stream``): what it reads is what ``json`` reads, at
every window size, and a broken document is broken where ``json`` says."""
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentobs.analysis.input.json_stream import Broken, Reader
from agentobs.analysis.otlp._parse import values_as_lines

EXAMPLES = int(os.environ.get("AGENTOBS_PROPERTY_EXAMPLES", "2000"))
SETTINGS = settings(max_examples=max(50, EXAMPLES // 4), deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))

scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False),
                    st.text(max_size=12))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                      max_leaves=20)


def _walk(r: Reader):
    """The next value, read by walking objects and arrays member by member, element by element."""
    kind = r.kind()
    if kind == "{":
        return {key: _walk(r) for key in r.members()}
    if kind == "[":
        return [_walk(r) for _ in r.elements()]
    return r.value()


@SETTINGS
@given(doc=values, indent=st.sampled_from([None, 0, 2]), block=st.sampled_from([1, 2, 3, 7, 64, 1 << 20]))
def test_walking_a_document_gives_what_json_gives(doc, indent, block):
    text = json.dumps(doc, indent=indent).encode()
    r = Reader(text, block=block)
    assert _walk(r) == json.loads(text)
    assert r.at_end()


@SETTINGS
@given(doc=st.dictionaries(st.text(max_size=8), values, max_size=5), block=st.sampled_from([1, 5, 1 << 20]),
       read=st.sets(st.text(max_size=8)))
def test_members_left_unread_are_skipped(doc, block, read):
    r = Reader(json.dumps(doc).encode(), block=block)
    got = {key: r.value() for key in r.members() if key in read}
    assert got == {k: v for k, v in doc.items() if k in read}
    assert r.at_end()


@SETTINGS
@given(doc=values, cut=st.integers(0, 10_000), block=st.sampled_from([1, 4, 1 << 20]))
def test_a_document_cut_short_is_broken_never_misread(doc, cut, block):
    text = json.dumps(doc).encode()
    cut = cut % (len(text) + 1)
    try:
        want = json.loads(text[:cut])
    except ValueError:
        want = Broken
    r = Reader(text[:cut], block=block)
    try:
        got = r.value()
        if not r.at_end():
            got = Broken
    except Broken:
        got = Broken
    assert got == want or (got is Broken and want is Broken)


@SETTINGS
@given(items=st.lists(st.one_of(values.map(json.dumps), st.sampled_from(["{oops", "[1, 2", "}", "garbage"])),
                      max_size=6),
       indent=st.sampled_from([None, 4]), array=st.booleans(), block=st.sampled_from([1, 3, 1 << 20]))
def test_values_one_after_another_read_as_values_as_lines_reads_them(items, indent, array, block):
    """``Reader.values`` (the streaming reader of console and Zipkin files) and ``values_as_lines`` (the reader of a
    document held whole) give the same values on the same lines, and the same broken ones."""
    parts = [json.dumps(json.loads(x), indent=indent) if indent and _is_json(x) else x for x in items]
    text = ("[" + ",".join(parts) + "]" if array else "\n".join(parts)).encode()
    lines = values_as_lines(text, one_line_values=True) or b""
    want = []
    for n, line in enumerate(lines.split(b"\n"), start=1):
        if line.strip():
            want.append((n, json.loads(line) if _is_json(line) else Broken))
    got = [(n, Broken if isinstance(v, Broken) else v) for n, v in Reader(text, strict=False, block=block).values()]
    assert got == want


def _is_json(text) -> bool:
    try:
        json.loads(text, strict=False)
    except ValueError:
        return False
    return True


def test_what_json_reads_beyond_the_standard_is_read_the_same():
    text = b'[NaN, Infinity, -Infinity, 1e400, 123456789012345678901234567890, {"a": 1, "a": 2}, "\\ud800"]'
    got = [Reader(text, block=2).value()]
    want = [json.loads(text)]
    assert repr(got) == repr(want)


@pytest.mark.parametrize(("text", "line"), [(b'{"a": [1, 2,\n 3, x]}', 2), (b'[1, 2', 1), (b'\n\n{"a": 1 "b": 2}', 3),
                                            (b'["\xff\xfe"]', 1), (b"[" * 100_000 + b"]" * 100_000, 1)])
def test_broken_text_is_broken_where_it_is(text, line):
    with pytest.raises(Broken) as err:
        if text.startswith(b"[[[["):
            Reader(text, block=3).value()           # nested deeper than json's recursion limit
        else:
            _walk(Reader(text, block=3))
    assert err.value.line == line


def test_a_value_longer_than_the_window_is_read_whole_and_the_window_shrinks_again():
    big = {"s": "x" * 100_000, "n": list(range(5000))}
    text = json.dumps([big, 1, 2]).encode()
    r = Reader(text, block=1024)
    assert [r.value() for _ in r.elements()] == [big, 1, 2]
