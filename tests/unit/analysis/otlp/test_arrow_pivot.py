"""The attribute pivot (``otlp._arrow_attributes.pivot_attributes``) gives the same columns whether it takes the keys
of a value field together (pieces of few spans) or builds each key's column from its own entries (pieces of many)."""
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

import agentobs.analysis.otlp._arrow_attributes as arrow
from agentobs.analysis.spans.quality import DataQuality

_VALUE = st.one_of(st.builds(lambda s: {"stringValue": s}, st.sampled_from(["a", "b", "", "ü"])),
                   st.builds(lambda i: {"intValue": i}, st.sampled_from(["-5", "0", "7", "x", "99999999999999999999"])),
                   st.builds(lambda d: {"doubleValue": d}, st.sampled_from([-1.0, 0.0, 0.5, float("nan")])),
                   st.builds(lambda b: {"boolValue": b}, st.booleans()),
                   st.builds(lambda xs: {"arrayValue": {"values": [{"stringValue": x} for x in xs]}},
                             st.lists(st.sampled_from(["p", "", "q"]), max_size=3)))
_ENTRY = st.builds(lambda k, v: {"key": k, "value": v}, st.sampled_from(["k1", "k2", "k3", "gen_ai.usage.input_tokens",
                                                                         "k.0.content", "http.status_code",
                                                                         "gen_ai.response.finish_reasons"]), _VALUE)
_OWNERS = st.lists(st.lists(_ENTRY, max_size=6), min_size=1, max_size=20)


def _pivot(owners, batch_below):
    arrow._BATCH_BELOW = batch_below
    attrs = pa.array(owners, type=pa.list_(pa.struct([("key", pa.string()), ("value", pa.struct([
        ("stringValue", pa.string()), ("intValue", pa.string()), ("doubleValue", pa.float64()),
        ("boolValue", pa.bool_()), ("bytesValue", pa.string()),
        ("arrayValue", pa.struct([("values", pa.list_(pa.struct([
            ("stringValue", pa.string()), ("intValue", pa.string()), ("doubleValue", pa.float64()),
            ("boolValue", pa.bool_())])))])),
        ("kvlistValue", pa.struct([("values", pa.list_(pa.struct([
            ("key", pa.string()), ("value", pa.struct([("stringValue", pa.string())]))])))])),
    ]))])))
    q = DataQuality()
    mixed: set[str] = set()
    cols = arrow.pivot_attributes(attrs, len(owners), "f", q=q, mixed=mixed)
    return ({k: (str(v.type), v.null_count, v.to_pylist()) for k, v in cols.items()}, list(cols), sorted(mixed),
            [i.to_dict() for i in q.issues])


@settings(max_examples=200, deadline=None)
@given(_OWNERS)
def test_keys_taken_together_or_one_at_a_time_give_the_same_columns(owners):
    saved = arrow._BATCH_BELOW
    try:
        together = _pivot(owners, 1 << 30)
        one_by_one = _pivot(owners, 0)
    finally:
        arrow._BATCH_BELOW = saved
    assert together == one_by_one


def test_a_key_twice_on_one_span_keeps_its_last_value_either_way():
    owners = [[{"key": "k", "value": {"stringValue": "first"}}, {"key": "k", "value": {"stringValue": "last"}}], []]
    saved = arrow._BATCH_BELOW
    try:
        assert _pivot(owners, 1 << 30)[0] == _pivot(owners, 0)[0] == {"k": ("large_string", 1, ["last", None])}
    finally:
        arrow._BATCH_BELOW = saved
