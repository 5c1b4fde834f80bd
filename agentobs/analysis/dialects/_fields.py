"""Reading attribute columns of a span frame, vectorized: numbers, text, values inside JSON text."""
from __future__ import annotations

import io
import json
from typing import Iterable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.json as pj


def num(df: pd.DataFrame, *names: str) -> np.ndarray:
    """The first of the columns present and non-null, as float64 (NaN when none)."""
    out = np.full(len(df), np.nan)
    for name in names:
        if name not in df.columns:
            continue
        v = pd.to_numeric(df[name], errors="coerce").astype("Float64").to_numpy(dtype=float, na_value=np.nan)
        out = np.where(np.isnan(out), v, out)
    return out


def txt(df: pd.DataFrame, *names: str) -> np.ndarray:
    """The first of the columns present and non-null, as an object array of str (None when none)."""
    out = np.full(len(df), None, dtype=object)
    for name in names:
        if name not in df.columns:
            continue
        col = df[name]
        if isinstance(col.dtype, pd.ArrowDtype) or col.dtype == object:
            col = col.map(_text, na_action="ignore")
        v = col.astype(object).where(col.notna(), None).to_numpy(dtype=object)
        out = np.where(pd.isna(out), v, out)
    return out


def _text(v: object) -> str:
    if isinstance(v, (list, tuple, np.ndarray)):
        return ",".join(str(x) for x in v)
    return str(v)


def lower(values: np.ndarray) -> np.ndarray:
    """Lower-cased text with surrounding quotes removed (MLflow writes '"AGENT"'); None stays None."""
    s = pd.Series(values, dtype="string").str.strip().str.strip('"').str.lower()
    return s.astype(object).where(s.notna(), None).to_numpy(dtype=object)


def has(df: pd.DataFrame, *names: str) -> bool:
    return any(n in df.columns and df[n].notna().any() for n in names)


def json_numbers(values: np.ndarray, paths: dict[str, Iterable[tuple[str, ...]]]) -> dict[str, np.ndarray]:
    """Numbers inside JSON object texts: for each output name, the first of its key paths that holds one.

    The texts are parsed together by pyarrow (one pass, no Python loop); texts pyarrow refuses are
    parsed one by one with ``json``. Missing or non-numeric values are NaN.
    """
    n = len(values)
    out = {k: np.full(n, np.nan) for k in paths}
    rows = np.nonzero(pd.notna(values))[0]
    if len(rows) == 0:
        return out
    texts = [str(values[i]) for i in rows]
    objs = _parse_all(texts)
    for name, candidates in paths.items():
        got = np.full(len(rows), np.nan)
        for path in candidates:
            got = np.where(np.isnan(got), _extract(objs, path), got)
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
            arr = arr.field(key)
        if not (pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type)):
            return pd.to_numeric(pd.Series(arr.to_pylist(), dtype=object), errors="coerce").to_numpy(dtype=float)
        return arr.cast(pa.float64()).to_numpy(zero_copy_only=False)
    vals = []
    for o in objs:
        for key in path:
            o = o.get(key) if isinstance(o, dict) else None
        vals.append(float(o) if isinstance(o, (int, float)) and not isinstance(o, bool) else np.nan)
    return np.array(vals, dtype=float)
