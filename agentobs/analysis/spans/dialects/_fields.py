"""Reading attribute columns of a span frame as Arrow arrays: text, numbers, values inside JSON text.

The span frame's columns are Arrow-backed; reading them here stays in Arrow (no Python object per value), so
classifying a million spans costs a few array operations per dialect.
"""
from __future__ import annotations

import io
import json
from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

# a number field's value that is present but is no number (a boolean, text that is not a number, a list): the
# readers return it so that ``normalize`` can count it as ``bad_value``; after that it is unknown (NaN)
UNUSABLE = -np.inf


def column(df: pd.DataFrame, name: str) -> pa.Array | None:
    """A span column as one Arrow array (text for lists: items joined by ","), or None when absent or empty."""
    if name not in df.columns:
        return None
    s = df[name]
    if not s.notna().any():
        return None
    arr = pa.array(s.array) if isinstance(s.dtype, (pd.ArrowDtype, pd.StringDtype)) else pa.array(s, from_pandas=True)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return arr


def text(df: pd.DataFrame, names: Iterable[str]) -> pa.Array:
    """The first of the columns present and non-null, as an Arrow string array (null when none)."""
    parts = []
    for name in names:
        arr = column(df, name)
        if arr is None:
            continue
        try:
            if pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type):
                arr = pc.binary_join(pc.cast(arr, pa.list_(pa.string())), ",")
            elif not pa.types.is_string(arr.type):
                arr = pc.cast(arr, pa.string())
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid):     # (a map or struct value: no text)
            continue
        parts.append(arr)
    if not parts:
        return pa.nulls(len(df), pa.string())
    return pc.coalesce(*parts) if len(parts) > 1 else parts[0]


def num(df: pd.DataFrame, names: Iterable[str]) -> np.ndarray:
    """The first of the columns present with a number, as float64 (NaN when none, ``UNUSABLE`` when the only
    values present are no numbers)."""
    out = np.full(len(df), np.nan)
    for name in names:
        arr = column(df, name)
        if arr is None:
            continue
        if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):     # (as the loader may give it)
            v = pd.to_numeric(pd.Series(arr.to_pandas()), errors="coerce").to_numpy(dtype=float, copy=True)
            v[np.isnan(v) & arr.is_valid().to_numpy(zero_copy_only=False)] = UNUSABLE
        elif pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type):
            v = pc.cast(arr, pa.float64(), safe=False).to_numpy(zero_copy_only=False)  # (> 2^53: the nearest)
        else:                                                  # booleans, lists, ...: present, but no number
            v = np.where(arr.is_valid().to_numpy(zero_copy_only=False), UNUSABLE, np.nan)
        out = prefer(out, v)
    return out


def prefer(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a`` where it holds a number; else ``b`` where ``b`` holds one or ``a`` holds nothing; else ``a``."""
    return np.where(np.isnan(a) | ((a == UNUSABLE) & ~np.isnan(b) & (b != UNUSABLE)), b, a)


def lower(arr: pa.Array) -> pa.Array:
    """Lower-cased text with surrounding quotes removed (MLflow writes '"AGENT"')."""
    return pc.utf8_lower(pc.utf8_trim(pc.utf8_trim_whitespace(arr), '"'))


def code_of(arr: pa.Array, mapping: dict[str, int], default: int) -> np.ndarray:
    """Each value's code from ``mapping`` (after ``lower``), ``default`` for other values, -1 for nulls."""
    keys = list(mapping)
    idx = pc.index_in(lower(arr), value_set=pa.array(keys, pa.string())).to_numpy(zero_copy_only=False)
    codes = np.array([mapping[k] for k in keys] + [default], dtype=np.int8)
    out = codes[np.where(np.isnan(idx), len(keys), np.nan_to_num(idx)).astype(np.int64)]
    out[arr.is_null().to_numpy(zero_copy_only=False)] = -1
    return out


def has(df: pd.DataFrame, *names: str) -> bool:
    return any(n in df.columns and df[n].notna().any() for n in names)


def json_numbers(values: pa.Array, paths: Mapping[str, Iterable[tuple[str, ...]]]) -> dict[str, np.ndarray]:
    """Numbers inside JSON object texts: for each output name, the first of its key paths that holds one.

    The texts are parsed together by pyarrow (one pass, no Python loop); texts pyarrow refuses are
    parsed one by one with ``json``. Missing values are NaN, values that are no number ``UNUSABLE``.
    """
    n = len(values)
    out = {k: np.full(n, np.nan) for k in paths}
    rows = np.nonzero(values.is_valid().to_numpy(zero_copy_only=False))[0]
    if len(rows) == 0:
        return out
    texts = pc.take(values, pa.array(rows)).to_pylist()
    objs = _parse_all(texts)
    for name, candidates in paths.items():
        got = np.full(len(rows), np.nan)
        for path in candidates:
            got = prefer(got, _extract(objs, path))
        out[name][rows] = got
    return out


def _parse_all(texts: list[str]) -> pa.Table | list[object]:
    joined = "\n".join(t.replace("\n", " ") for t in texts).encode()
    try:
        table = pj.read_json(io.BytesIO(joined), read_options=pj.ReadOptions(block_size=max(len(joined) + 1, 1 << 16)))
        if table.num_rows == len(texts):
            return table
    except (pa.ArrowException, ValueError):
        pass
    out: list[object] = []
    for t in texts:
        try:
            out.append(json.loads(t))
        except (ValueError, RecursionError):
            out.append(None)
    return out


def _extract(objs: pa.Table | list[object], path: tuple[str, ...]) -> np.ndarray:
    if isinstance(objs, pa.Table):
        if path[0] not in objs.column_names:
            return np.full(objs.num_rows, np.nan)
        arr = objs.column(path[0]).combine_chunks()
        for key in path[1:]:
            if not pa.types.is_struct(arr.type) or arr.type.get_field_index(key) < 0:
                return np.full(objs.num_rows, np.nan)
            arr = pc.struct_field(arr, key)
        if not (pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type)):
            return _numbers(arr.to_pylist())
        return pc.cast(arr, pa.float64(), safe=False).to_numpy(zero_copy_only=False)
    vals = []
    for o in objs:
        for key in path:
            o = o.get(key) if isinstance(o, dict) else None
        vals.append(o)
    return _numbers(vals)


def _numbers(values: list[object]) -> np.ndarray:
    """JSON values as float64: numbers and numeric text as such, null as NaN, anything else ``UNUSABLE``."""
    out = np.full(len(values), np.nan)
    for i, o in enumerate(values):
        if o is None:
            continue
        if isinstance(o, bool) or not isinstance(o, (int, float, str)):
            out[i] = UNUSABLE
            continue
        try:
            f = float(o)
        except (ValueError, OverflowError):
            f = UNUSABLE
        out[i] = UNUSABLE if np.isnan(f) else f
    return out
