"""Text checks of the Arrow decode (``otlp._arrow_values._text``): the ASCII shortcut on the data buffer gives what the
per-value UTF-8 validation gives, on whole arrays and slices, with nulls, non-ASCII text and invalid bytes."""
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

import agentobs.analysis.otlp._arrow_values as arrow
from agentobs.analysis.spans.quality import DataQuality

_VALUES = st.lists(st.one_of(st.none(), st.sampled_from([b"", b"gen_ai.usage", b"caf\xc3\xa9", b"\xff\xfe", b"a\xc3",
                                                        b"\xa9b", b"plain text"])), max_size=12)


def _slow(arr):
    """What ``_text`` gave before the shortcut: every value validated."""
    try:
        arr.validate(full=True)
        return arr.to_pylist(), 0
    except pa.ArrowInvalid:
        fixed = [None if v is None else v.decode("utf-8", "replace") for v in arr.cast(pa.binary()).to_pylist()]
        return fixed, sum(1 for v, f in zip(arr.cast(pa.binary()).to_pylist(), fixed, strict=True)
                          if v is not None and f.encode() != v)


@settings(max_examples=300, deadline=None)
@given(_VALUES, st.integers(0, 4), st.integers(0, 4), st.booleans())
def test_the_ascii_shortcut_gives_what_validating_every_value_gives(values, head, tail, large):
    arr = pa.array(values, pa.binary()).cast(pa.large_string() if large else pa.string(), safe=False)
    arr = arr.slice(min(head, len(arr)), max(0, len(arr) - head - tail))
    q = DataQuality()
    out = arrow._text(arr, q, "f", "attribute value")
    want, bad = _slow(arr)
    assert out.to_pylist() == want
    assert sum(i.count for i in q.issues) == bad


def test_a_slice_that_leaves_the_non_ascii_bytes_out_is_ascii():
    arr = pa.array([b"caf\xc3\xa9", b"abc", b"\xff"], pa.binary()).cast(pa.string(), safe=False)
    assert arrow._ascii(arr.slice(1, 1))
    assert not arrow._ascii(arr.slice(0, 2))
    assert not arrow._ascii(arr.slice(2, 1))
