"""Many Arrow tables, one: the decoded pieces of a load concatenated, a column of several types across them cast to
one.
"""
from __future__ import annotations

import pyarrow as pa

from ..spans.spanset import as_text

_ROWS_PER_CHUNK = 8192


def unify(tables: list[pa.Table]) -> pa.Table | None:
    """The tables concatenated, a column of several types cast to one (numbers to float64, else text; a list
    joined with commas)."""
    if not tables:
        return None
    if len(tables) == 1:
        return tables[0]
    types: dict[str, set[pa.DataType]] = {}
    for t in tables:
        for fld in t.schema:
            types.setdefault(fld.name, set()).add(fld.type)
    target: dict[str, pa.DataType] = {}
    for name, ts in types.items():
        if len(ts) == 1:
            continue
        if all(pa.types.is_integer(t) or pa.types.is_floating(t) for t in ts):
            target[name] = pa.float64()
        elif not any(pa.types.is_dictionary(t) for t in ts):
            target[name] = pa.large_string()
    fixed = []
    for t in tables:
        for name, typ in target.items():
            if name in t.column_names and t.schema.field(name).type != typ:
                col = t.column(name)
                t = t.set_column(t.column_names.index(name), name, _as_large_text(col) if
                                 pa.types.is_large_string(typ) else col.cast(typ))
        fixed.append(t)
    out = pa.concat_tables(fixed, promote_options="default")
    if len(fixed) > out.num_rows // _ROWS_PER_CHUNK + 1:
        out = out.combine_chunks()     # many small pieces (a file of mixed spellings): one layout, whatever the path
    return out


def _as_large_text(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """A column as large_string text: strings widened (their data shared), other kinds as ``as_text`` gives them."""
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        col = as_text(col)
    return col.cast(pa.large_string())
