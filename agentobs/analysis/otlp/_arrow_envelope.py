"""The envelope of OTLP: a parsed table's resourceSpans/scopeSpans/spans lists flattened into its spans, with the
resource (and its service.name) and the parsed row each span came from.
"""
from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dc_field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._arrow_values import _first_field, field_of
from ._spelling import Spelling


@dataclass(frozen=True, kw_only=True)
class ParsedTable:
    """A table ``pyarrow.json`` parsed with the schema of ``sp``; ``row_lines``: the line of the file each of its rows
    was read from; ``row_sources``: the source of each row (a batch of several small files, ``batch``)."""
    table: pa.Table
    sp: Spelling = dc_field(default_factory=Spelling)
    row_lines: np.ndarray | None = None
    row_sources: pa.DictionaryArray | None = None


class _Part:
    """One parsed table's spans, flattened out of its envelope (``_spans_of``)."""
    __slots__ = ("rs", "service", "sp", "span_res", "spans", "table")

    def __init__(self, table: ParsedTable, got: tuple[pa.Array, pa.Array, pa.Array, pa.Array]):
        self.table, self.sp = table, table.sp
        self.spans, self.span_res, self.service, self.rs = got

    def field(self, name: str) -> pa.Array:
        return field_of(self.spans, name)

    def rows(self) -> pa.Array:
        """The row of the parsed table each span came from."""
        return _rows(self.rs, self.span_res)


def _rows(rs: pa.Array, span_res: pa.Array) -> pa.Array:
    """The row of the parsed table each span came from (``rs``: the rows' resourceSpans lists)."""
    return pc.take(pc.list_parent_indices(rs), span_res)


def _spans_of(table: pa.Table, sp: Spelling) -> tuple[pa.Array, pa.Array, pa.Array, pa.Array] | None:
    """(spans, index of each span's resource, service.name per resource, the rows' resourceSpans lists), or None
    when there are no spans."""
    if sp.wrapped:
        col = table.column("result")
        rs = field_of(_one_chunk(col), sp.name_of("resourceSpans")) if col.num_chunks else None
    else:
        col = table.column(sp.name_of("resourceSpans"))
        rs = _one_chunk(col) if col.num_chunks else None
    if rs is None:
        return None
    rs_flat = pc.list_flatten(rs)
    service = _resource_service(field_of(rs_flat, "resource"))
    spans_parts, res_parts = [], []
    for field, _scope in (("scopeSpans", "scope"), ("instrumentationLibrarySpans", "instrumentationLibrary")):
        ss = field_of(rs_flat, sp.name_of(field))
        if ss.null_count == len(ss):
            continue
        ss_parent = pc.list_parent_indices(ss)
        sp_lists = field_of(pc.list_flatten(ss), "spans")
        spans_parts.append(pc.list_flatten(sp_lists))
        res_parts.append(pc.take(ss_parent, pc.list_parent_indices(sp_lists)))
    if not spans_parts or sum(len(p) for p in spans_parts) == 0:
        return None
    if len(spans_parts) == 1:
        return spans_parts[0], res_parts[0], service, rs
    return pa.concat_arrays(spans_parts), pa.concat_arrays(res_parts), service, rs


def _one_chunk(col: pa.ChunkedArray) -> pa.Array:
    return col.combine_chunks() if col.num_chunks > 1 else col.chunk(0)


def _resource_service(resource: pa.Array) -> pa.Array:
    attrs = field_of(resource, "attributes")
    n = len(resource)
    parent = pc.list_parent_indices(attrs).to_numpy()
    flat = pc.list_flatten(attrs)
    keys = field_of(flat, "key")
    mask = pc.fill_null(pc.equal(keys, "service.name"), False).to_numpy(zero_copy_only=False)
    value = field_of(flat, "value")
    vals = field_of(value, _first_field(value, ("stringValue", "string_value")))
    pos = np.full(n, -1, dtype=np.int64)
    idx = np.nonzero(mask)[0]
    pos[parent[idx]] = idx
    return pc.take(vals, pa.array(pos, mask=pos < 0))
