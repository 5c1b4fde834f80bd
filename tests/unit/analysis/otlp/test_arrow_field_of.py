"""``field_of`` (the loader's struct field access) gives what ``pyarrow.compute.struct_field`` gives: the field of
each struct, null where the struct itself is null, on sliced arrays and chunked ones too."""
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given
from hypothesis import strategies as st

from agentobs.analysis.otlp._arrow_values import field_of

_ROW = st.one_of(st.none(), st.fixed_dictionaries({"a": st.one_of(st.none(), st.integers(-5, 5)),
                                                  "b": st.one_of(st.none(), st.lists(st.text(max_size=3),
                                                                                     max_size=3))}))
_TYPE = pa.struct([("a", pa.int64()), ("b", pa.list_(pa.string()))])


@given(st.lists(_ROW, max_size=12), st.integers(0, 4), st.integers(0, 12))
def test_field_of_is_struct_field(rows, start, length):
    arr = pa.array(rows, type=_TYPE).slice(min(start, len(rows)), length)
    for name in ("a", "b"):
        got = field_of(arr, name)
        assert got.equals(pc.struct_field(arr, name))
        assert got.to_pylist() == [None if r is None else r[name] for r in arr.to_pylist()]
    chunked = pa.chunked_array([arr, arr], type=_TYPE)
    assert field_of(chunked, "a").equals(pc.struct_field(chunked, "a"))
