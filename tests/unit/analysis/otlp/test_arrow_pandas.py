"""The last step of a load, Arrow -> pandas, gives what pandas' own conversion gives."""
from __future__ import annotations

import math

import pandas as pd
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from agentobs.analysis.otlp import _arrow_pandas as ap

_VALUES = {
    "int64": st.integers(min_value=-2**63, max_value=2**63 - 1),
    "float64": st.floats(allow_nan=True, allow_infinity=True),
    "bool": st.booleans(),
}
_DTYPES = {"int64": pd.Int64Dtype(), "float64": pd.Float64Dtype(), "bool": pd.BooleanDtype()}


@st.composite
def chunked(draw: st.DrawFn) -> tuple[str, pa.ChunkedArray]:
    """A chunked column with nulls, empty chunks and chunks that are slices (non-zero offsets)."""
    kind = draw(st.sampled_from(sorted(_VALUES)))
    chunks = []
    for _ in range(draw(st.integers(0, 5))):
        vals = draw(st.lists(st.one_of(st.none(), _VALUES[kind]), max_size=40))
        arr = pa.array(vals, type=getattr(pa, kind if kind != "bool" else "bool_")())
        lo = draw(st.integers(0, len(arr)))
        hi = draw(st.integers(lo, len(arr)))
        chunks.append(arr.slice(lo, hi - lo))
    return kind, pa.chunked_array(chunks, type=getattr(pa, kind if kind != "bool" else "bool_")())


@settings(max_examples=300, deadline=None)
@given(chunked())
def test_masked_equals_pandas_conversion(case: tuple[str, pa.ChunkedArray]) -> None:
    kind, col = case
    ours = ap.masked(col)
    theirs = _DTYPES[kind].__from_arrow__(col)
    assert ours.dtype == theirs.dtype
    pd.testing.assert_extension_array_equal(ours, theirs)


def test_table_to_frame_equals_to_pandas_on_one_and_two_threads(monkeypatch) -> None:
    n = 5000
    t = pa.table({
        "trace_id": pa.array([f"{i:032x}" for i in range(n)]),
        "start_ns": pa.array(range(n), pa.int64()),
        "end_ns": pa.array([None if i % 7 == 0 else i + 5 for i in range(n)], pa.int64()),
        "kind": pa.array([i % 5 for i in range(n)], pa.int8()),
        "status_code": pa.array([i % 3 for i in range(n)], pa.int8()),
        "tokens": pa.array([None if i % 3 else i for i in range(n)], pa.int32()),
        "cost": pa.array([None if i % 4 else (math.nan if i % 8 == 0 else i / 3) for i in range(n)]),
        "flag": pa.array([None if i % 5 == 0 else bool(i % 2) for i in range(n)]),
        "tags": pa.array([["a", "b"] if i % 2 else None for i in range(n)]),
        "source": pa.array(["f.jsonl"] * n).dictionary_encode(),
    })

    def reference(t: pa.Table) -> pd.DataFrame:
        def mapper(typ: pa.DataType) -> object:
            if pa.types.is_integer(typ) and typ != pa.int8():
                return pd.Int64Dtype()
            if pa.types.is_floating(typ):
                return pd.Float64Dtype()
            if pa.types.is_boolean(typ):
                return pd.BooleanDtype()
            if pa.types.is_list(typ):
                return pd.ArrowDtype(typ)
            if pa.types.is_string(typ):
                return pd.StringDtype("pyarrow")
            return None
        df = t.to_pandas(types_mapper=mapper)
        df = df.astype({"kind": "int8", "status_code": "int8", "start_ns": "Int64", "end_ns": "Int64"})
        df["source"] = df["source"].astype("category")
        return df

    expected = reference(t)
    for threaded in (10**9, 1):
        monkeypatch.setattr(ap, "THREADED_ROWS", threaded)
        pd.testing.assert_frame_equal(ap.table_to_frame(t), expected)
