"""Arrow table -> pandas DataFrame, the last step of a load.

The numbers are copied once, straight into the final arrays (pandas' own conversion of a nullable column combines
the chunks, copies the values again and builds the mask twice). On this step the cost is the first touch of fresh
memory, not the copy, so less is allocated, and large tables convert on two threads. String data, lists and
dictionaries stay in Arrow's buffers (pandas' strings need 64-bit offsets: only those are copied).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

THREADED_ROWS = 100_000        # below this, converting on one thread costs less than starting two

_MASKED: dict[pa.DataType, tuple[type[np.generic], Any]] = {
    pa.int64(): (np.int64, pd.arrays.IntegerArray),
    pa.float64(): (np.float64, pd.arrays.FloatingArray),
    pa.bool_(): (np.bool_, pd.arrays.BooleanArray),
}


def table_to_frame(t: pa.Table) -> pd.DataFrame:
    """The DataFrame of ``t``: integers as Int64 (int8 kept), floats as Float64, booleans as boolean, strings as
    pyarrow-backed strings, lists as Arrow lists; ``kind``/``status_code`` int8, ``start_ns``/``end_ns`` Int64,
    ``source`` categorical."""
    names, cols = t.column_names, t.columns
    if len(cols) > 1 and t.num_rows >= THREADED_ROWS:
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="agentobs-to-pandas") as pool:
            arrays = list(pool.map(column, cols))
    else:
        arrays = [column(c) for c in cols]
    df = pd.DataFrame(dict(zip(names, arrays, strict=True)), copy=False)
    for c, dtype in (("kind", "int8"), ("status_code", "int8"), ("start_ns", "Int64"), ("end_ns", "Int64")):
        if c in df.columns and df[c].dtype != dtype:          # (a cast to the same type would copy the column)
            df[c] = df[c].astype(dtype)
    if "source" in df.columns:
        df["source"] = df["source"].astype("category")
    return df


def column(col: pa.ChunkedArray) -> Any:
    """One column as a pandas array (or a numpy/categorical one for the types pandas maps itself)."""
    typ = col.type
    if typ in _MASKED:
        return masked(col)
    if pa.types.is_integer(typ) and typ != pa.int8():
        return pd.Int64Dtype().__from_arrow__(col)
    if pa.types.is_floating(typ):
        return pd.Float64Dtype().__from_arrow__(col)
    if pa.types.is_list(typ):
        return pd.ArrowDtype(typ).__from_arrow__(col)
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return pd.StringDtype("pyarrow").__from_arrow__(col)
    return col.to_pandas()


def masked(col: pa.ChunkedArray) -> Any:
    """An int64, float64 or bool column as pandas' nullable array: values and mask written once, chunk by chunk,
    into their final arrays. Equal to ``dtype.__from_arrow__(col)``."""
    np_type, cls = _MASKED[col.type]
    n = len(col)
    values = np.empty(n, dtype=np_type)
    missing = np.empty(n, dtype=bool)
    at = 0
    for chunk in col.chunks:
        m = len(chunk)
        if m == 0:
            continue
        validity, data = chunk.buffers()[:2]
        if np_type is np.bool_:
            values[at:at + m] = _bits(data, chunk.offset, m)
        else:
            values[at:at + m] = np.frombuffer(data, dtype=np_type, count=m,
                                              offset=chunk.offset * values.itemsize)
        if chunk.null_count == 0 or validity is None:
            missing[at:at + m] = False
        else:
            np.logical_not(_bits(validity, chunk.offset, m), out=missing[at:at + m])
        at += m
    if np_type is np.float64 and not pd.get_option("future.distinguish_nan_and_na"):
        missing |= np.isnan(values)          # as pandas does: NaN is missing unless told to tell them apart
    return cls(values, missing, copy=False)


def _bits(buf: pa.Buffer, offset: int, m: int) -> np.ndarray:
    """Bits offset .. offset+m of an Arrow bitmap, as booleans."""
    return np.unpackbits(np.frombuffer(buf, dtype=np.uint8), count=offset + m, bitorder="little")[offset:].view(bool)
